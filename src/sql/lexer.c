/*
 * sql/lexer.c - splits SQL text into tokens for the parser (parse*.c),
 * tracking line and column (1-based, columns in bytes) so every message
 * can point at its place.
 */
#include "lexer.h"

#include <ctype.h>

#include "../base/mem.h"
#include "../base/vec.h"

typedef struct Lexer {
    const char *p, *start;
    int line;
    const char *line_start;
    Arena *a;
    Token *v;
    int n, cap;
} Lexer;

static void push(Lexer *lx, TokKind k, const char *s, size_t n, int line, int col)
{
    Token *t = VEC_PUSH_ARENA(lx->a, lx->v, lx->n, lx->cap);
    t->k = k;
    t->s = s;
    t->n = n;
    t->line = line;
    t->col = col;
}

static void advance(Lexer *lx)
{
    if (*lx->p == '\n') {
        lx->line++;
        lx->line_start = lx->p + 1;
    }
    lx->p++;
}

int lex(const char *text, Arena *a, Token **toks, int *ntoks, Err *err)
{
    Lexer lx = {text, text, 1, text, a, NULL, 0, 0};
    static const char *ops2[] = {"<=", ">=", "<>", "!=", "||", "::", "=="};
    for (;;) {
        while (*lx.p && isspace((unsigned char)*lx.p))
            advance(&lx);
        const char *p = lx.p;
        int line = lx.line, col = (int)(p - lx.line_start) + 1;
        if (!*p) {
            push(&lx, T_EOF, "", 0, line, col);
            break;
        }
        if (p[0] == '-' && p[1] == '-') {
            while (*lx.p && *lx.p != '\n')
                advance(&lx);
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            advance(&lx);
            advance(&lx);
            while (*lx.p && !(lx.p[0] == '*' && lx.p[1] == '/'))
                advance(&lx);
            if (!*lx.p)
                return err_setpos(err, SL_EPARSE, line, col, "unterminated /* comment");
            advance(&lx);
            advance(&lx);
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            while (isalnum((unsigned char)*lx.p) || *lx.p == '_' || *lx.p == '$')
                advance(&lx);
            size_t n = (size_t)(lx.p - p);
            push(&lx, T_IDENT, arena_strndup(a, p, n), n, line, col);
            continue;
        }
        if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            bool isnum = false;
            while (isdigit((unsigned char)*lx.p))
                advance(&lx);
            if (*lx.p == '.') {
                isnum = true;
                advance(&lx);
                while (isdigit((unsigned char)*lx.p))
                    advance(&lx);
            }
            if ((*lx.p == 'e' || *lx.p == 'E') &&
                (isdigit((unsigned char)lx.p[1]) ||
                 ((lx.p[1] == '+' || lx.p[1] == '-') && isdigit((unsigned char)lx.p[2])))) {
                isnum = true;
                advance(&lx);
                if (*lx.p == '+' || *lx.p == '-')
                    advance(&lx);
                while (isdigit((unsigned char)*lx.p))
                    advance(&lx);
            }
            if (isalpha((unsigned char)*lx.p) || *lx.p == '_')
                return err_setpos(err, SL_EPARSE, line, col, "malformed number \"%.*s\"",
                                  (int)(lx.p - p + 1), p);
            size_t n = (size_t)(lx.p - p);
            push(&lx, isnum ? T_NUM : T_INT, arena_strndup(a, p, n), n, line, col);
            continue;
        }
        if (*p == '\'' || *p == '"') {
            char q = *p;
            size_t cap = 0, n = 0;
            char *s = NULL;
            VEC_RESERVE(s, cap, 64);
            advance(&lx);
            for (;;) {
                if (!*lx.p) {
                    sl_free(s);
                    return err_setpos(err, SL_EPARSE, line, col, "unterminated %s starting here",
                                      q == '\'' ? "string literal" : "quoted identifier");
                }
                if (*lx.p == q) {
                    if (lx.p[1] == q) {
                        advance(&lx);
                    } else {
                        advance(&lx);
                        break;
                    }
                }
                *VEC_PUSH(s, n, cap) = *lx.p;
                advance(&lx);
            }
            push(&lx, q == '\'' ? T_STR : T_QIDENT, arena_strndup(a, s, n), n, line, col);
            sl_free(s);
            continue;
        }
        if (*p == '$') { /* $$ or $tag$: a dollar quote around a function body
                            (parse_ddl.c), one T_OP token each */
            const char *q = p + 1;
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            if (*q != '$' || isdigit((unsigned char)p[1]))
                return err_setpos(err, SL_EPARSE, line, col, "unexpected character '$'");
            size_t dn = (size_t)(q + 1 - p);
            for (size_t i = 0; i < dn; i++)
                advance(&lx);
            push(&lx, T_OP, arena_strndup(a, p, dn), dn, line, col);
            continue;
        }
        size_t n = 1;
        for (size_t i = 0; i < ARRAY_LEN(ops2); i++)
            if (p[0] == ops2[i][0] && p[1] == ops2[i][1])
                n = 2;
        if (p[0] == '!' && p[1] == '~') /* regex match operators: !~ !~* ~* ~ */
            n = p[2] == '*' ? 3 : 2;
        else if (p[0] == '~' && p[1] == '*')
            n = 2;
        else if (p[0] == '-' && p[1] == '>') /* JSON operators -> and ->> */
            n = p[2] == '>' ? 3 : 2;
        else if (p[0] == '#' && p[1] == '>') /* JSON path operators #> and #>> */
            n = p[2] == '>' ? 3 : 2;
        else if ((p[0] == '@' && p[1] == '>') || (p[0] == '<' && p[1] == '@'))
            n = 2; /* JSON containment @> and <@ */
        /* '?': JSON key exists (no parameter placeholder: pg-wire's are $n) */
        if (n == 1 && !strchr("(),.;*+-/%<>=[]~:?", *p))
            return err_setpos(err, SL_EPARSE, line, col, "unexpected character '%c'", *p);
        for (size_t i = 0; i < n; i++)
            advance(&lx);
        push(&lx, T_OP, arena_strndup(a, p, n), n, line, col);
    }
    *toks = lx.v;
    *ntoks = lx.n;
    return 0;
}

/*
 * sql/parse.c - the parser's toolkit (parse_int.h), shared by the grammar
 * files parse_expr.c, parse_query.c and parse_ddl.c: the token cursor,
 * keywords (matched case-insensitively: the lexer does not tell them from
 * names), error messages that name the line, the column and what was
 * expected (constructs we recognise but do not support yet are reported
 * as such, SL_EUNSUPPORTED, instead of as syntax errors), and the bounds
 * of ast.h: the parser counts its own nesting (every parse_expr,
 * parse_query and FROM item, every unary minus and NOT: sql__enter)
 * against SQL_MAX_NESTING, and every expression node's height against
 * SQL_MAX_HEIGHT (sql__check_height), so that no later pass recurses
 * deeper than that.
 */
#include <stdio.h>

#include "../base/err.h"
#include "../base/vec.h"
#include "parse_int.h"

/* Words that cannot be used as implicit aliases or bare column names. */
static const char *reserved[] = {
    "select", "from", "where", "group", "having", "order", "limit", "offset", "union",
    "except", "intersect", "join", "inner", "left", "right", "full", "cross", "natural",
    "on", "using", "as", "and", "or", "not", "is", "in", "between", "like", "ilike", "case",
    "when", "then", "else", "end", "null", "true", "false", "outer", "by", "distinct", "all",
    "create", "table", "view", "with", "asc", "desc", "escape", "window", "qualify",
};

bool sql__is_reserved(const Token *t)
{
    if (t->k != T_IDENT)
        return false;
    for (size_t i = 0; i < ARRAY_LEN(reserved); i++)
        if (strcasecmp(t->s, reserved[i]) == 0)
            return true;
    return false;
}

static const char *tok_desc(const Token *t, char *buf, size_t n)
{
    if (t->k == T_EOF)
        snprintf(buf, n, "end of input");
    else if (t->k == T_STR)
        snprintf(buf, n, "string '%.40s'", t->s);
    else
        snprintf(buf, n, "\"%.40s\"", t->s);
    return buf;
}

int sql__fail(Parser *p, const char *expected)
{
    char b[80];
    Token *t = cur(p);
    return err_setpos(p->err, SL_EPARSE, t->line, t->col, "expected %s, found %s", expected,
                      tok_desc(t, b, sizeof(b)));
}

int sql__unsupported(Parser *p, const Token *t, const char *what)
{
    return err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col, "%s is not supported yet", what);
}

int sql__expect_kw(Parser *p, const char *kw)
{
    char b[64];
    if (accept_kw(p, kw))
        return 0;
    snprintf(b, sizeof(b), "%s", kw);
    for (char *c = b; *c; c++)
        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    return sql__fail(p, b);
}

int sql__expect_op(Parser *p, const char *op)
{
    char b[16];
    if (accept_op(p, op))
        return 0;
    snprintf(b, sizeof(b), "\"%s\"", op);
    return sql__fail(p, b);
}

char *sql__ident(Parser *p, const char *what)
{
    Token *t = cur(p);
    if (t->k == T_QIDENT) {
        p->i++;
        return arena_strndup(p->a, t->s, t->n);
    }
    if (t->k != T_IDENT || sql__is_reserved(t)) {
        sql__fail(p, what);
        return NULL;
    }
    p->i++;
    char *s = arena_strndup(p->a, t->s, t->n);
    for (char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c + 32);
    return s;
}

int sql__enter(Parser *p)
{
    if (p->depth >= SQL_MAX_NESTING) {
        Token *t = cur(p);
        return err_setpos(p->err, SL_EPARSE, t->line, t->col,
                          "expression nested too deeply (limit %d)", SQL_MAX_NESTING);
    }
    p->depth++;
    return 0;
}

/* Height of the tree at x (1 for a leaf), memoized in x->height. Children
   built by parse_expr and binary() already carry theirs, so the recursion
   only walks the few levels built in between (unary operators, function
   calls: bounded by SQL_MAX_NESTING). */
static int height(Ast *x)
{
    if (!x)
        return 0;
    if (x->height)
        return x->height;
    int h = height(x->a);
    int hb = height(x->b), hc = height(x->c);
    h = hb > h ? hb : h;
    h = hc > h ? hc : h;
    for (int i = 0; i < x->args.n; i++) {
        int ha = height(x->args.v[i]);
        h = ha > h ? ha : h;
    }
    x->height = h + 1;
    return x->height;
}

Ast *sql__check_height(Parser *p, const Token *t, Ast *x)
{
    if (x && height(x) > SQL_MAX_HEIGHT) {
        err_setpos(p->err, SL_EPARSE, t->line, t->col,
                   "expression nested too deeply (limit %d)", SQL_MAX_HEIGHT);
        return NULL;
    }
    return x;
}

Ast *sql__new_ast(Parser *p, AstKind k, const Token *at)
{
    Ast *n = arena_zalloc(p->a, sizeof(*n));
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

void sql__list_push(Parser *p, AstList *l, Ast *x)
{
    *VEC_PUSH_ARENA(p->a, l->v, l->n, l->cap) = x;
}

int sql__parse_names(Parser *p, char ***out, int *n)
{
    int cap = *n; /* full: the first name grows it */
    do {
        char *c = sql__ident(p, "a column name");
        if (!c)
            return p->err->code;
        *VEC_PUSH_ARENA(p->a, *out, *n, cap) = c;
    } while (accept_op(p, ","));
    return sql__expect_op(p, ")");
}

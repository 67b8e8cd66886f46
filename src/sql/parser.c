/*
 * sql/parser.c - recursive-descent parser: tokens from lexer.c to the AST of
 * ast.h. Errors name the line, the column and what was expected; constructs
 * we recognise but do not support yet are reported as such (SL_EUNSUPPORTED)
 * instead of as syntax errors.
 *
 * Expression precedence, loosest first: OR, AND, NOT, comparison / IS /
 * BETWEEN / IN / LIKE, ||, + -, * / %, unary + -, primary.
 *
 * Bounds (ast.h): the parser counts its own nesting (every parse_expr,
 * parse_query and FROM item, every unary minus and NOT) against
 * SQL_MAX_NESTING, and every expression node's height against
 * SQL_MAX_HEIGHT, so that no later pass recurses deeper than that, and
 * the relations of each FROM clause (tables, subqueries, joined items)
 * against SQL_MAX_FROM, which keeps planning a join tree in its bounds.
 * Arrays grow by doubling (grow, list_push). Binary
 * chains are parsed iteratively; a chain of ANDs (or ORs) becomes a
 * balanced tree, which is the same conjunction (AND and OR are associative
 * in SQL's three-valued logic, and the binder flattens them to one n-ary
 * node in the written order) at logarithmic height.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/err.h"
#include "../base/mem.h"
#include "../expr/text.h"
#include "ast.h"
#include "lexer.h"

typedef struct Parser {
    Token *t;
    int n, i;
    Arena *a;
    Err *err;
    int depth; /* nesting now (SQL_MAX_NESTING) */
    int nfrom; /* relations in the FROM clause being parsed (SQL_MAX_FROM) */
} Parser;

/* Words that cannot be used as implicit aliases or bare column names. */
static const char *reserved[] = {
    "select", "from", "where", "group", "having", "order", "limit", "offset", "union",
    "except", "intersect", "join", "inner", "left", "right", "full", "cross", "natural",
    "on", "using", "as", "and", "or", "not", "is", "in", "between", "like", "ilike", "case",
    "when", "then", "else", "end", "null", "true", "false", "outer", "by", "distinct", "all",
    "create", "table", "view", "with", "asc", "desc", "escape", "window", "qualify",
};

static Token *cur(Parser *p) { return &p->t[p->i]; }

static bool is_kw(const Token *t, const char *kw)
{
    return t->k == T_IDENT && strcasecmp(t->s, kw) == 0;
}

static bool is_reserved(const Token *t)
{
    if (t->k != T_IDENT)
        return false;
    for (size_t i = 0; i < ARRAY_LEN(reserved); i++)
        if (strcasecmp(t->s, reserved[i]) == 0)
            return true;
    return false;
}

static bool is_op(const Token *t, const char *op) { return t->k == T_OP && strcmp(t->s, op) == 0; }

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

static int fail(Parser *p, const char *expected)
{
    char b[80];
    Token *t = cur(p);
    return err_setpos(p->err, SL_EPARSE, t->line, t->col, "expected %s, found %s", expected,
                      tok_desc(t, b, sizeof(b)));
}

static int unsupported(Parser *p, const Token *t, const char *what)
{
    return err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col, "%s is not supported yet", what);
}

static bool accept_kw(Parser *p, const char *kw)
{
    if (is_kw(cur(p), kw)) {
        p->i++;
        return true;
    }
    return false;
}

static bool accept_op(Parser *p, const char *op)
{
    if (is_op(cur(p), op)) {
        p->i++;
        return true;
    }
    return false;
}

static int expect_kw(Parser *p, const char *kw)
{
    char b[64];
    if (accept_kw(p, kw))
        return 0;
    snprintf(b, sizeof(b), "%s", kw);
    for (char *c = b; *c; c++)
        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    return fail(p, b);
}

static int expect_op(Parser *p, const char *op)
{
    char b[16];
    if (accept_op(p, op))
        return 0;
    snprintf(b, sizeof(b), "\"%s\"", op);
    return fail(p, b);
}

/* Identifier: bare ones fold to lower case, quoted ones keep their case. */
static char *ident(Parser *p, const char *what)
{
    Token *t = cur(p);
    if (t->k == T_QIDENT) {
        p->i++;
        return arena_strndup(p->a, t->s, t->n);
    }
    if (t->k != T_IDENT || is_reserved(t)) {
        fail(p, what);
        return NULL;
    }
    p->i++;
    char *s = arena_strndup(p->a, t->s, t->n);
    for (char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c + 32);
    return s;
}

/* Enter one level of nesting at the current token: 0, or SL_EPARSE past
   SQL_MAX_NESTING. Every successful enter() is paired with a leave(). */
static int enter(Parser *p)
{
    if (p->depth >= SQL_MAX_NESTING) {
        Token *t = cur(p);
        return err_setpos(p->err, SL_EPARSE, t->line, t->col,
                          "expression nested too deeply (limit %d)", SQL_MAX_NESTING);
    }
    p->depth++;
    return 0;
}

static void leave(Parser *p) { p->depth--; }

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

/* x, or NULL with an error at token t when x is higher than SQL_MAX_HEIGHT. */
static Ast *check_height(Parser *p, const Token *t, Ast *x)
{
    if (x && height(x) > SQL_MAX_HEIGHT) {
        err_setpos(p->err, SL_EPARSE, t->line, t->col,
                   "expression nested too deeply (limit %d)", SQL_MAX_HEIGHT);
        return NULL;
    }
    return x;
}

static Ast *node(Parser *p, AstKind k, const Token *at)
{
    Ast *n = arena_zalloc(p->a, sizeof(*n));
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static void list_push(Parser *p, AstList *l, Ast *x)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)cap);
        if (l->n)
            memcpy(v, l->v, sizeof(Ast *) * (size_t)l->n);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* Make room for element n of an arena array of elements of size sz that
   holds n (always grown through here); returns the (new) base. Capacity
   doubles, so n appends cost O(n), not O(n^2). */
static void *grow(Parser *p, void *base, int n, size_t sz)
{
    if (n && (n < 4 || (n & (n - 1)))) /* room left: capacity is 4, 8, 16, ... */
        return base;
    void *v = arena_alloc(p->a, sz * (size_t)(n ? 2 * n : 4));
    if (n)
        memcpy(v, base, sz * (size_t)n);
    return v;
}

static Ast *parse_expr(Parser *p);
static Select *parse_query(Parser *p);

/* ---- types ---- */

static int parse_int_arg(Parser *p, int *out)
{
    Token *t = cur(p);
    if (t->k != T_INT)
        return fail(p, "an integer");
    long v = strtol(t->s, NULL, 10);
    if (v < 0 || v > 1000000000)
        return err_setpos(p->err, SL_EPARSE, t->line, t->col, "number %s out of range", t->s);
    *out = (int)v;
    p->i++;
    return 0;
}

static int parse_type(Parser *p, SqlType *out)
{
    Token *t = cur(p);
    SqlType ty = type_make(TK_NULL, true);
    if (t->k != T_IDENT)
        return fail(p, "a type name");
    const char *s = t->s;
    p->i++;
    if (!strcasecmp(s, "boolean") || !strcasecmp(s, "bool"))
        ty.kind = TK_BOOL;
    else if (!strcasecmp(s, "tinyint"))
        ty.kind = TK_TINYINT;
    else if (!strcasecmp(s, "smallint"))
        ty.kind = TK_SMALLINT;
    else if (!strcasecmp(s, "int") || !strcasecmp(s, "integer"))
        ty.kind = TK_INT;
    else if (!strcasecmp(s, "bigint"))
        ty.kind = TK_BIGINT;
    else if (!strcasecmp(s, "real"))
        ty.kind = TK_REAL;
    else if (!strcasecmp(s, "float") || !strcasecmp(s, "double")) {
        ty.kind = TK_DOUBLE;
        if (!strcasecmp(s, "double"))
            accept_kw(p, "precision");
    } else if (!strcasecmp(s, "decimal") || !strcasecmp(s, "numeric") || !strcasecmp(s, "dec")) {
        int prec = DECIMAL_MAX_PREC, scale = 0;
        ty.kind = TK_DECIMAL;
        if (accept_op(p, "(")) {
            Token *pt = cur(p);
            if (parse_int_arg(p, &prec))
                return p->err->code;
            if (accept_op(p, ",") && parse_int_arg(p, &scale))
                return p->err->code;
            if (expect_op(p, ")"))
                return p->err->code;
            if (prec < 1 || prec > DECIMAL_MAX_PREC) {
                if (prec > DECIMAL_MAX_PREC)
                    return err_setpos(p->err, SL_EUNSUPPORTED, pt->line, pt->col,
                                      "DECIMAL precision %d is not supported yet (at most %d)",
                                      prec, DECIMAL_MAX_PREC);
                return err_setpos(p->err, SL_EPARSE, pt->line, pt->col,
                                  "DECIMAL precision must be at least 1");
            }
            if (scale > prec)
                return err_setpos(p->err, SL_EPARSE, pt->line, pt->col,
                                  "DECIMAL scale %d exceeds precision %d", scale, prec);
        }
        ty.prec = (uint8_t)prec;
        ty.scale = (uint8_t)scale;
    } else if (!strcasecmp(s, "varchar") || !strcasecmp(s, "char") ||
               !strcasecmp(s, "character") || !strcasecmp(s, "text") ||
               !strcasecmp(s, "string")) {
        bool is_char = !strcasecmp(s, "char") || !strcasecmp(s, "character");
        if (is_char && accept_kw(p, "varying"))
            is_char = false;
        ty.kind = is_char ? TK_CHAR : TK_VARCHAR;
        ty.len = is_char ? 1 : VARCHAR_UNBOUNDED;
        if ((!strcasecmp(s, "varchar") || !strcasecmp(s, "char") ||
             !strcasecmp(s, "character")) && accept_op(p, "(")) {
            int len;
            if (parse_int_arg(p, &len) || expect_op(p, ")"))
                return p->err->code;
            if (len < 1)
                return err_setpos(p->err, SL_EPARSE, t->line, t->col,
                                  "length of %s must be at least 1", s);
            ty.len = len;
        }
    } else if (!strcasecmp(s, "date"))
        ty.kind = TK_DATE;
    else if (!strcasecmp(s, "time"))
        ty.kind = TK_TIME;
    else if (!strcasecmp(s, "timestamp")) {
        ty.kind = TK_TIMESTAMP;
        if (accept_kw(p, "with")) {
            p->i--;
            return unsupported(p, t, "TIMESTAMP WITH TIME ZONE");
        }
        if (accept_kw(p, "without") && (expect_kw(p, "time") || expect_kw(p, "zone")))
            return p->err->code;
    } else {
        static const char *later[] = {"interval", "array", "map", "variant", "binary",
                                      "varbinary", "uuid", "row", "geometry", "bytea",
                                      "blob", "json"};
        for (size_t i = 0; i < ARRAY_LEN(later); i++)
            if (!strcasecmp(s, later[i])) {
                char b[64];
                snprintf(b, sizeof(b), "type %s", s);
                for (char *c = b + 5; *c; c++)
                    *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
                return unsupported(p, t, b);
            }
        p->i--;
        return fail(p, "a type name");
    }
    if (accept_kw(p, "array")) {
        p->i--;
        return unsupported(p, cur(p), "type ARRAY");
    }
    *out = ty;
    return 0;
}

/* ---- expressions ---- */

static Ast *parse_primary(Parser *p);

/* One frame bound of OVER (... ROWS|RANGE ...): kind and n into *kind, *n. */
static int parse_frame_bound(Parser *p, int *kind, Ast **n)
{
    if (accept_kw(p, "unbounded")) {
        if (accept_kw(p, "preceding"))
            *kind = 0;
        else if (accept_kw(p, "following"))
            *kind = 4;
        else
            return fail(p, "PRECEDING or FOLLOWING");
        return 0;
    }
    if (accept_kw(p, "current")) {
        *kind = 2;
        return expect_kw(p, "row");
    }
    if (!(*n = parse_primary(p)))
        return p->err->code;
    if (accept_kw(p, "preceding"))
        *kind = 1;
    else if (accept_kw(p, "following"))
        *kind = 3;
    else
        return fail(p, "PRECEDING or FOLLOWING");
    return 0;
}

/* OVER (PARTITION BY ... ORDER BY ... [ROWS|RANGE frame]) after function f. */
static int parse_over(Parser *p, Ast *f)
{
    Token *t = cur(p);
    p->i++; /* OVER */
    if (cur(p)->k == T_IDENT && !is_op(cur(p), "("))
        return unsupported(p, cur(p), "named windows (OVER name)");
    if (expect_op(p, "("))
        return p->err->code;
    WinDef *w = arena_zalloc(p->a, sizeof(*w));
    w->line = t->line;
    w->col = t->col;
    w->end = 2;
    if (cur(p)->k == T_IDENT && !is_kw(cur(p), "partition") && !is_kw(cur(p), "order") &&
        !is_kw(cur(p), "rows") && !is_kw(cur(p), "range"))
        return unsupported(p, cur(p), "named windows (OVER (name ...))");
    if (accept_kw(p, "partition")) {
        if (expect_kw(p, "by"))
            return p->err->code;
        do {
            Ast *e = parse_expr(p);
            if (!e)
                return p->err->code;
            list_push(p, &w->part, e);
        } while (accept_op(p, ","));
    }
    if (accept_kw(p, "order")) {
        if (expect_kw(p, "by"))
            return p->err->code;
        do {
            Ast *e = parse_expr(p);
            if (!e)
                return p->err->code;
            w->order = grow(p, w->order, w->norder, sizeof(OrderItem));
            OrderItem *o = &w->order[w->norder++];
            memset(o, 0, sizeof(*o));
            o->e = e;
            if (accept_kw(p, "desc"))
                o->desc = true;
            else
                accept_kw(p, "asc");
            if (accept_kw(p, "nulls")) {
                if (accept_kw(p, "first"))
                    o->nulls = 1;
                else if (accept_kw(p, "last"))
                    o->nulls = 2;
                else
                    return fail(p, "FIRST or LAST");
            }
        } while (accept_op(p, ","));
    }
    if (is_kw(cur(p), "rows") || is_kw(cur(p), "range") || is_kw(cur(p), "groups")) {
        if (is_kw(cur(p), "groups"))
            return unsupported(p, cur(p), "GROUPS frames");
        w->frame = is_kw(cur(p), "rows") ? 1 : 2;
        w->frame_line = cur(p)->line;
        w->frame_col = cur(p)->col;
        p->i++;
        if (accept_kw(p, "between")) {
            if (parse_frame_bound(p, &w->start, &w->start_n) || expect_kw(p, "and") ||
                parse_frame_bound(p, &w->end, &w->end_n))
                return p->err->code;
        } else if (parse_frame_bound(p, &w->start, &w->start_n)) {
            return p->err->code;
        }
        if (is_kw(cur(p), "exclude"))
            return unsupported(p, cur(p), "frame EXCLUDE");
    }
    if (expect_op(p, ")"))
        return p->err->code;
    f->over = w;
    return 0;
}

static Ast *parse_concat(Parser *p);

/* Special argument syntax of POSITION(a IN b) and
   TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) after the "(": TRIM becomes
   trim(s, chars, side) with side 0/1/2 (an A_INT). Returns 1 when handled
   (the ")" is left to the caller), 0 for ordinary arguments, -1 on error. */
static int special_args(Parser *p, Ast *f)
{
    if (!strcmp(f->name, "position")) {
        int save = p->i;
        Ast *a = parse_concat(p), *b;
        if (!a)
            return -1;
        if (!accept_kw(p, "in")) {
            p->i = save;
            return 0;
        }
        if (!(b = parse_concat(p)))
            return -1;
        if (is_kw(cur(p), "from")) {
            unsupported(p, cur(p), "POSITION(... FROM start)");
            return -1;
        }
        list_push(p, &f->args, a);
        list_push(p, &f->args, b);
        return 1;
    }
    if (strcmp(f->name, "trim"))
        return 0;
    Token *at = cur(p);
    int side = accept_kw(p, "both") ? 0 : accept_kw(p, "leading") ? 1
               : accept_kw(p, "trailing") ? 2 : -1;
    Ast *chars = NULL, *s;
    if (!accept_kw(p, "from")) {
        if (!(chars = parse_concat(p)))
            return -1;
        if (!accept_kw(p, "from")) {
            if (side >= 0) {
                fail(p, "FROM");
                return -1;
            }
            list_push(p, &f->args, chars); /* TRIM(s) or TRIM(s, chars) */
            while (accept_op(p, ",")) {
                Ast *x = parse_expr(p);
                if (!x)
                    return -1;
                list_push(p, &f->args, x);
            }
            return 1;
        }
    }
    if (!(s = parse_concat(p)))
        return -1;
    Ast *sd = node(p, A_INT, at);
    sd->str = (char *)(side == 1 ? "1" : side == 2 ? "2" : "0");
    sd->slen = 1;
    list_push(p, &f->args, s);
    if (!chars) {
        chars = node(p, A_STR, at);
        chars->str = (char *)" ";
        chars->slen = 1;
    }
    list_push(p, &f->args, chars);
    list_push(p, &f->args, sd);
    f->ival = 1; /* TRIM(... FROM ...) form */
    return 1;
}

/* INTERVAL 'text' unit [TO unit] or INTERVAL n unit, after INTERVAL: an
   A_TYPED node with the text in str and ival = from | (to + 1) << 8. */
static Ast *parse_interval(Parser *p, Token *t)
{
    Ast *n = node(p, A_TYPED, t);
    Token *v = cur(p);
    if (v->k != T_STR && v->k != T_INT) {
        fail(p, "a quoted interval value after INTERVAL");
        return NULL;
    }
    n->str = (char *)v->s;
    n->slen = v->n;
    p->i++;
    Token *u = cur(p);
    int from = u->k == T_IDENT ? time_unit_parse(u->s) : -1, to = -1;
    if (from < 0 || from == TU_QUARTER || from == TU_WEEK || from > TU_SECOND) {
        fail(p, "an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE or SECOND)");
        return NULL;
    }
    p->i++;
    if (accept_kw(p, "to")) {
        Token *u2 = cur(p);
        to = u2->k == T_IDENT ? time_unit_parse(u2->s) : -1;
        if (to <= from || to == TU_WEEK || to > TU_SECOND || (from <= TU_MONTH) != (to <= TU_MONTH)) {
            fail(p, "a finer interval unit after TO (YEAR TO MONTH, DAY/HOUR/MINUTE TO SECOND...)");
            return NULL;
        }
        p->i++;
    }
    n->type = type_make(from <= TU_MONTH ? TK_INTERVAL_YM : TK_INTERVAL_DT, false);
    n->ival = from | (to + 1) << 8;
    return n;
}

static Ast *parse_primary(Parser *p)
{
    Token *t = cur(p);
    Ast *n;
    if (t->k == T_INT || t->k == T_NUM) {
        n = node(p, t->k == T_INT ? A_INT : A_NUM, t);
        n->str = (char *)t->s;
        n->slen = t->n;
        p->i++;
        return n;
    }
    if (t->k == T_STR) {
        n = node(p, A_STR, t);
        n->str = (char *)t->s;
        n->slen = t->n;
        p->i++;
        return n;
    }
    if (accept_op(p, "(")) {
        if (is_kw(cur(p), "select") || is_kw(cur(p), "with")) {
            n = node(p, A_SUBQUERY, t);
            n->sub = parse_query(p);
            if (!n->sub || expect_op(p, ")"))
                return NULL;
            return n;
        }
        n = parse_expr(p);
        if (!n)
            return NULL;
        if (is_op(cur(p), ",")) {
            unsupported(p, cur(p), "a row value (a, b, ...)");
            return NULL;
        }
        if (expect_op(p, ")"))
            return NULL;
        return n;
    }
    if (t->k == T_OP && strcmp(t->s, "*") == 0) {
        p->i++;
        return node(p, A_STAR, t);
    }
    if (t->k == T_QIDENT || t->k == T_IDENT) {
        if (t->k == T_IDENT) {
            if (accept_kw(p, "null"))
                return node(p, A_NULL, t);
            if (is_kw(t, "true") || is_kw(t, "false")) {
                p->i++;
                n = node(p, A_BOOL, t);
                n->ival = is_kw(t, "true");
                return n;
            }
            if (is_kw(t, "case")) {
                p->i++;
                n = node(p, A_CASE, t);
                if (!is_kw(cur(p), "when") && !(n->a = parse_expr(p)))
                    return NULL;
                if (!is_kw(cur(p), "when")) {
                    fail(p, "WHEN");
                    return NULL;
                }
                while (accept_kw(p, "when")) {
                    Ast *w = parse_expr(p), *th;
                    if (!w || expect_kw(p, "then") || !(th = parse_expr(p)))
                        return NULL;
                    list_push(p, &n->args, w);
                    list_push(p, &n->args, th);
                }
                if (accept_kw(p, "else") && !(n->b = parse_expr(p)))
                    return NULL;
                if (expect_kw(p, "end"))
                    return NULL;
                return n;
            }
            if (is_kw(t, "cast") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = node(p, A_CAST, t);
                if (!(n->a = parse_expr(p)) || expect_kw(p, "as") || parse_type(p, &n->type) ||
                    expect_op(p, ")"))
                    return NULL;
                return n;
            }
            if ((is_kw(t, "date") || is_kw(t, "time") || is_kw(t, "timestamp")) &&
                p->t[p->i + 1].k == T_STR) {
                n = node(p, A_TYPED, t);
                n->type = type_make(is_kw(t, "date") ? TK_DATE
                                    : is_kw(t, "time") ? TK_TIME : TK_TIMESTAMP, false);
                p->i++;
                n->str = (char *)cur(p)->s;
                n->slen = cur(p)->n;
                p->i++;
                return n;
            }
            if (is_kw(t, "interval")) {
                p->i++;
                return parse_interval(p, t);
            }
            static const char *const clock_fns[] = {"current_date", "current_time",
                "current_timestamp", "localtime", "localtimestamp", "now"};
            for (size_t i = 0; i < ARRAY_LEN(clock_fns); i++)
                if (is_kw(t, clock_fns[i]) && (i < 5 || is_op(&p->t[p->i + 1], "("))) {
                    err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                               "%s is not allowed: a view must be deterministic, and its value "
                               "would change with the clock, without any change to the input "
                               "(use a timestamp column of the input instead)",
                               (const char *const[]){"CURRENT_DATE", "CURRENT_TIME",
                                   "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP",
                                   "NOW()"}[i]);
                    return NULL;
                }
            if (is_kw(t, "extract") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = node(p, A_EXTRACT, t);
                if (!(n->name = ident(p, "a date/time field")) || expect_kw(p, "from") ||
                    !(n->a = parse_expr(p)) || expect_op(p, ")"))
                    return NULL;
                return n;
            }
            if (is_kw(t, "exists") && is_op(&p->t[p->i + 1], "(")) {
                p->i += 2;
                n = node(p, A_EXISTS, t);
                if (!is_kw(cur(p), "select") && !is_kw(cur(p), "with")) {
                    fail(p, "SELECT after EXISTS (");
                    return NULL;
                }
                if (!(n->sub = parse_query(p)) || expect_op(p, ")"))
                    return NULL;
                return n;
            }
        }
        /* function call? */
        if (t->k == T_IDENT && is_op(&p->t[p->i + 1], "(") &&
            (!is_reserved(t) || is_kw(t, "left") || is_kw(t, "right"))) {
            n = node(p, A_FUNC, t);
            n->name = arena_strndup(p->a, t->s, t->n);
            for (char *c = n->name; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c + 32);
            p->i += 2;
            int sp = special_args(p, n);
            if (sp < 0)
                return NULL;
            if (sp > 0)
                return expect_op(p, ")") ? NULL : n;
            if (accept_op(p, "*")) {
                n->star = true;
            } else if (!is_op(cur(p), ")")) {
                if (accept_kw(p, "distinct"))
                    n->distinct = true;
                else
                    accept_kw(p, "all");
                do {
                    Ast *x;
                    if (!(x = parse_expr(p)))
                        return NULL;
                    list_push(p, &n->args, x);
                    /* SUBSTRING(s FROM a FOR b), POSITION(a IN b), TRIM(...) */
                    if (!strcmp(n->name, "substring") || !strcmp(n->name, "substr")) {
                        if (accept_kw(p, "from")) {
                            if (!(x = parse_expr(p)))
                                return NULL;
                            list_push(p, &n->args, x);
                            if (accept_kw(p, "for")) {
                                if (!(x = parse_expr(p)))
                                    return NULL;
                                list_push(p, &n->args, x);
                            }
                        }
                    }
                } while (accept_op(p, ","));
            }
            if (expect_op(p, ")"))
                return NULL;
            if (is_kw(cur(p), "over") && parse_over(p, n))
                return NULL;
            if (is_kw(cur(p), "filter")) {
                unsupported(p, cur(p), "aggregate FILTER clauses");
                return NULL;
            }
            return n;
        }
        n = node(p, A_COL, t);
        if (!(n->name = ident(p, "an expression")))
            return NULL;
        if (is_op(cur(p), ".")) {
            p->i++;
            if (accept_op(p, "*")) {
                n->k = A_STAR;
                n->qual = n->name;
                n->name = NULL;
                return n;
            }
            n->qual = n->name;
            if (!(n->name = ident(p, "a column name")))
                return NULL;
            if (is_op(cur(p), ".")) {
                unsupported(p, cur(p), "schema-qualified names");
                return NULL;
            }
        }
        return n;
    }
    fail(p, "an expression");
    return NULL;
}

static Ast *parse_unary(Parser *p)
{
    Token *t = cur(p);
    if (is_op(t, "-") || is_op(t, "+")) {
        if (enter(p))
            return NULL;
        p->i++;
        Ast *x = parse_unary(p);
        leave(p);
        if (!x)
            return NULL;
        if (is_op(t, "+"))
            return x;
        /* fold -literal so that -9223372036854775808 is representable */
        if ((x->k == A_INT || x->k == A_NUM) && x->str[0] == '-') { /* - -5 */
            x->str++;
            x->slen--;
            x->line = t->line;
            x->col = t->col;
            return x;
        }
        if (x->k == A_INT || x->k == A_NUM) {
            char *s = arena_alloc(p->a, x->slen + 2);
            s[0] = '-';
            memcpy(s + 1, x->str, x->slen + 1);
            x->str = s;
            x->slen++;
            x->line = t->line;
            x->col = t->col;
            return x;
        }
        Ast *n = node(p, A_UN, t);
        n->op = OP_NEG;
        n->a = x;
        return n;
    }
    Ast *x = parse_primary(p);
    if (x && is_op(cur(p), "::")) {
        unsupported(p, cur(p), "the :: cast operator (use CAST(x AS type))");
        return NULL;
    }
    if (x && is_op(cur(p), "[")) {
        unsupported(p, cur(p), "array indexing");
        return NULL;
    }
    return x;
}

static Ast *binary(Parser *p, Token *t, int op, Ast *l, Ast *r)
{
    if (!l || !r)
        return NULL;
    Ast *n = node(p, A_BIN, t);
    n->op = op;
    n->a = l;
    n->b = r;
    n->line = l->line;
    n->col = l->col;
    return check_height(p, t, n);
}

static Ast *parse_mul(Parser *p)
{
    Ast *l = parse_unary(p);
    for (;;) {
        Token *t = cur(p);
        int op = is_op(t, "*") ? OP_MUL : is_op(t, "/") ? OP_DIV : is_op(t, "%") ? OP_MOD : -1;
        if (!l || op < 0)
            return l;
        p->i++;
        l = binary(p, t, op, l, parse_unary(p));
    }
}

static Ast *parse_add(Parser *p)
{
    Ast *l = parse_mul(p);
    for (;;) {
        Token *t = cur(p);
        int op = is_op(t, "+") ? OP_ADD : is_op(t, "-") ? OP_SUB : -1;
        if (!l || op < 0)
            return l;
        p->i++;
        l = binary(p, t, op, l, parse_mul(p));
    }
}

static Ast *parse_concat(Parser *p)
{
    Ast *l = parse_add(p);
    while (l && is_op(cur(p), "||")) {
        Token *t = cur(p);
        p->i++;
        l = binary(p, t, OP_CONCAT, l, parse_add(p));
    }
    return l;
}

static Ast *parse_cmp(Parser *p)
{
    Ast *l = parse_concat(p);
    for (;;) {
        Token *t = cur(p);
        int op = -1;
        if (!l)
            return NULL;
        if (is_op(t, "=") || is_op(t, "=="))
            op = OP_EQ;
        else if (is_op(t, "<>") || is_op(t, "!="))
            op = OP_NE;
        else if (is_op(t, "<"))
            op = OP_LT;
        else if (is_op(t, "<="))
            op = OP_LE;
        else if (is_op(t, ">"))
            op = OP_GT;
        else if (is_op(t, ">="))
            op = OP_GE;
        if (op >= 0) {
            p->i++;
            if (is_kw(cur(p), "any") || is_kw(cur(p), "all") || is_kw(cur(p), "some")) {
                unsupported(p, cur(p), "quantified comparisons (ANY/ALL/SOME)");
                return NULL;
            }
            l = binary(p, t, op, l, parse_concat(p));
            continue;
        }
        if (is_kw(t, "is")) {
            p->i++;
            bool neg = accept_kw(p, "not");
            Ast *n;
            if (accept_kw(p, "null")) {
                n = node(p, A_ISNULL, t);
            } else if (is_kw(cur(p), "true") || is_kw(cur(p), "false")) {
                n = node(p, A_ISBOOL, t);
                n->ival = is_kw(cur(p), "true");
                p->i++;
            } else if (is_kw(cur(p), "distinct")) {
                unsupported(p, cur(p), "IS [NOT] DISTINCT FROM");
                return NULL;
            } else {
                fail(p, "NULL, TRUE or FALSE after IS");
                return NULL;
            }
            n->negated = neg;
            n->a = l;
            l = n;
            continue;
        }
        bool neg = false;
        int save = p->i;
        if (is_kw(t, "not") && (is_kw(&p->t[p->i + 1], "between") || is_kw(&p->t[p->i + 1], "in") ||
                                is_kw(&p->t[p->i + 1], "like") || is_kw(&p->t[p->i + 1], "ilike"))) {
            neg = true;
            p->i++;
        }
        Token *k = cur(p);
        if (accept_kw(p, "between")) {
            Ast *n = node(p, A_BETWEEN, t);
            accept_kw(p, "symmetric") ? (void)unsupported(p, k, "BETWEEN SYMMETRIC") : (void)0;
            if (p->err->code)
                return NULL;
            accept_kw(p, "asymmetric");
            n->a = l;
            if (!(n->b = parse_concat(p)) || expect_kw(p, "and") || !(n->c = parse_concat(p)))
                return NULL;
            n->negated = neg;
            l = n;
            continue;
        }
        if (accept_kw(p, "in")) {
            Ast *n = node(p, A_IN, t);
            n->a = l;
            n->negated = neg;
            if (expect_op(p, "("))
                return NULL;
            if (is_kw(cur(p), "select") || is_kw(cur(p), "with")) {
                if (!(n->sub = parse_query(p)) || expect_op(p, ")"))
                    return NULL;
                l = n;
                continue;
            }
            do {
                Ast *x = parse_expr(p);
                if (!x)
                    return NULL;
                list_push(p, &n->args, x);
            } while (accept_op(p, ","));
            if (expect_op(p, ")"))
                return NULL;
            l = n;
            continue;
        }
        if (is_kw(k, "like") || is_kw(k, "ilike")) {
            p->i++;
            Ast *n = node(p, A_LIKE, t);
            n->ival = is_kw(k, "ilike"); /* case-insensitive */
            n->a = l;
            n->negated = neg;
            if (!(n->b = parse_concat(p)))
                return NULL;
            if (accept_kw(p, "escape") && !(n->c = parse_concat(p)))
                return NULL;
            l = n;
            continue;
        }
        p->i = save;
        return l;
    }
}

static Ast *parse_not(Parser *p)
{
    Token *t = cur(p);
    if (is_kw(t, "not")) {
        if (enter(p))
            return NULL;
        p->i++;
        Ast *x = parse_not(p);
        leave(p);
        if (!x)
            return NULL;
        Ast *n = node(p, A_UN, t);
        n->op = OP_NOT;
        n->a = x;
        return n;
    }
    return parse_cmp(p);
}

/* Operands v[0..n) joined by op (AND or OR) as a balanced tree; ops[i] is
   the operator token before v[i]. */
static Ast *balanced(Parser *p, int op, Ast **v, Token **ops, int n)
{
    if (n == 1)
        return v[0];
    int m = n / 2;
    Ast *l = balanced(p, op, v, ops, m), *r = balanced(p, op, v + m, ops + m, n - m);
    return binary(p, ops[m], op, l, r);
}

/* operand (kw operand)*: a chain of ANDs or ORs, as a balanced tree. */
static Ast *parse_chain(Parser *p, const char *kw, int op, Ast *(*operand)(Parser *))
{
    Ast *x = operand(p);
    if (!x || !is_kw(cur(p), kw))
        return x;
    int n = 0, cap = 8;
    Ast **v = sl_malloc(sizeof(Ast *) * (size_t)cap);
    Token **ops = sl_malloc(sizeof(Token *) * (size_t)cap);
    v[n] = x;
    ops[n++] = NULL;
    while (x && is_kw(cur(p), kw)) {
        if (n == cap) {
            cap *= 2;
            v = sl_realloc(v, sizeof(Ast *) * (size_t)cap);
            ops = sl_realloc(ops, sizeof(Token *) * (size_t)cap);
        }
        ops[n] = cur(p);
        p->i++;
        x = operand(p);
        v[n++] = x;
    }
    Ast *out = x ? balanced(p, op, v, ops, n) : NULL;
    sl_free(v);
    sl_free(ops);
    return out;
}

static Ast *parse_and(Parser *p) { return parse_chain(p, "and", OP_AND, parse_not); }

static Ast *parse_expr(Parser *p)
{
    Token *t = cur(p);
    if (enter(p))
        return NULL;
    Ast *x = check_height(p, t, parse_chain(p, "or", OP_OR, parse_and));
    leave(p);
    return x;
}

/* ---- queries ---- */

static char *opt_alias(Parser *p)
{
    if (accept_kw(p, "as"))
        return ident(p, "an alias");
    Token *t = cur(p);
    if (t->k == T_QIDENT || (t->k == T_IDENT && !is_reserved(t)))
        return ident(p, "an alias");
    return NULL;
}

/* After a FROM item's alias: an optional column alias list (c1, c2, ...). */
static int parse_col_aliases(Parser *p, FromItem *f)
{
    if (!accept_op(p, "("))
        return 0;
    do {
        char *c = ident(p, "a column name");
        if (!c)
            return p->err->code;
        f->col_aliases = grow(p, f->col_aliases, f->ncol_aliases, sizeof(char *));
        f->col_aliases[f->ncol_aliases++] = c;
    } while (accept_op(p, ","));
    return expect_op(p, ")");
}

static FromItem *parse_from_item(Parser *p);

/* TABLE(TUMBLE(TABLE t, DESCRIPTOR(col), size[, offset])) or
   TABLE(HOP(TABLE t, DESCRIPTOR(col), slide, size[, offset])), at TABLE. */
static int parse_tvf(Parser *p, FromItem *f)
{
    p->i += 2;
    Token *fn = cur(p);
    if (!is_kw(fn, "tumble") && !is_kw(fn, "hop")) {
        if (fn->k == T_IDENT && is_op(&p->t[p->i + 1], "(")) {
            return err_setpos(p->err, SL_EUNSUPPORTED, fn->line, fn->col,
                              "table function %.40s is not supported yet (only TUMBLE and HOP)",
                              fn->s);
        }
        return fail(p, "TUMBLE or HOP after TABLE (");
    }
    f->k = F_TVF;
    f->name = (char *)(is_kw(fn, "tumble") ? "tumble" : "hop");
    p->i++;
    if (expect_op(p, "("))
        return p->err->code;
    accept_kw(p, "table");
    FromItem *in = arena_zalloc(p->a, sizeof(*in));
    in->k = F_TABLE;
    in->line = cur(p)->line;
    in->col = cur(p)->col;
    if (!(in->name = ident(p, "a table or view name")) || expect_op(p, ","))
        return p->err->code;
    f->tvf_input = in;
    if (!accept_kw(p, "descriptor"))
        return fail(p, "DESCRIPTOR(column)");
    if (expect_op(p, "("))
        return p->err->code;
    f->tvf_col_line = cur(p)->line;
    f->tvf_col_col = cur(p)->col;
    if (!(f->tvf_col = ident(p, "a column name")) || expect_op(p, ")"))
        return p->err->code;
    while (accept_op(p, ",")) {
        Ast *x = parse_expr(p);
        if (!x)
            return p->err->code;
        list_push(p, &f->tvf_args, x);
    }
    if (expect_op(p, ")") || expect_op(p, ")"))
        return p->err->code;
    return 0;
}

static FromItem *parse_from_primary(Parser *p)
{
    Token *t = cur(p);
    const Token *u = &p->t[p->i + (t->k != T_EOF)];
    bool group = is_op(t, "(") && !is_kw(u, "select") && !is_kw(u, "with") &&
                 !is_kw(u, "values"); /* ( join ): its items count */
    if (!group && ++p->nfrom > SQL_MAX_FROM) {
        err_setpos(p->err, SL_EPARSE, t->line, t->col,
                   "too many relations in one FROM clause (limit %d)", SQL_MAX_FROM);
        return NULL;
    }
    FromItem *f = arena_zalloc(p->a, sizeof(*f));
    f->line = t->line;
    f->col = t->col;
    if (accept_op(p, "(")) {
        if (is_kw(cur(p), "select") || is_kw(cur(p), "with") || is_kw(cur(p), "values")) {
            f->k = F_SUBQUERY;
            if (!(f->sub = parse_query(p)) || expect_op(p, ")"))
                return NULL;
        } else {
            /* a parenthesised join (or table): the item itself */
            FromItem *in = parse_from_item(p);
            if (!in || expect_op(p, ")"))
                return NULL;
            if (in->k == F_SUBQUERY || (in->k == F_TABLE && !in->alias)) {
                if (!in->alias) {
                    in->alias = opt_alias(p);
                    if (p->err->code || (in->alias && parse_col_aliases(p, in)))
                        return NULL;
                }
                return in;
            }
            if (in->k == F_JOIN && (is_kw(cur(p), "as") || cur(p)->k == T_QIDENT ||
                                    (cur(p)->k == T_IDENT && !is_reserved(cur(p))))) {
                in->alias = opt_alias(p); /* (a JOIN b) AS j: a unit named j */
                if (p->err->code || parse_col_aliases(p, in))
                    return NULL;
            }
            return in;
        }
    } else if (is_kw(t, "table") && is_op(&p->t[p->i + 1], "(")) {
        if (parse_tvf(p, f))
            return NULL;
    } else {
        if (is_kw(t, "lateral") || is_kw(t, "unnest")) {
            unsupported(p, t, "LATERAL / UNNEST");
            return NULL;
        }
        f->k = F_TABLE;
        if (!(f->name = ident(p, "a table or view name")))
            return NULL;
        if (is_op(cur(p), ".")) {
            unsupported(p, cur(p), "schema-qualified names");
            return NULL;
        }
        if (is_op(cur(p), "(")) {
            unsupported(p, cur(p), "table functions");
            return NULL;
        }
    }
    f->alias = opt_alias(p);
    if (p->err->code || (f->alias && parse_col_aliases(p, f)))
        return NULL;
    return f;
}

static FromItem *parse_from_item_in(Parser *p);

static FromItem *parse_from_item(Parser *p)
{
    if (enter(p))
        return NULL;
    FromItem *f = parse_from_item_in(p);
    leave(p);
    return f;
}

static FromItem *parse_from_item_in(Parser *p)
{
    FromItem *l = parse_from_primary(p);
    for (;;) {
        if (!l)
            return NULL;
        Token *t = cur(p);
        bool natural = accept_kw(p, "natural");
        JoinKind jk;
        if (accept_kw(p, "join"))
            jk = J_INNER;
        else if (accept_kw(p, "inner")) {
            if (expect_kw(p, "join"))
                return NULL;
            jk = J_INNER;
        } else if (!natural && accept_kw(p, "cross")) {
            if (expect_kw(p, "join"))
                return NULL;
            jk = J_CROSS;
        } else if (is_kw(cur(p), "left") || is_kw(cur(p), "right") || is_kw(cur(p), "full")) {
            jk = is_kw(cur(p), "left") ? J_LEFT : is_kw(cur(p), "right") ? J_RIGHT : J_FULL;
            p->i++;
            accept_kw(p, "outer");
            if (expect_kw(p, "join"))
                return NULL;
        } else {
            if (natural) {
                fail(p, "JOIN");
                return NULL;
            }
            return l;
        }
        FromItem *j = arena_zalloc(p->a, sizeof(*j));
        j->k = F_JOIN;
        j->line = t->line;
        j->col = t->col;
        j->jk = jk;
        j->natural = natural;
        j->l = l;
        if (!(j->r = parse_from_primary(p)))
            return NULL;
        if (jk != J_CROSS && !natural) {
            if (accept_kw(p, "on")) {
                if (!(j->on = parse_expr(p)))
                    return NULL;
            } else if (accept_kw(p, "using")) {
                if (expect_op(p, "("))
                    return NULL;
                do {
                    char *c = ident(p, "a column name");
                    if (!c)
                        return NULL;
                    j->using_cols = grow(p, j->using_cols, j->nusing, sizeof(char *));
                    j->using_cols[j->nusing++] = c;
                } while (accept_op(p, ","));
                if (expect_op(p, ")"))
                    return NULL;
            } else {
                fail(p, "ON or USING");
                return NULL;
            }
        }
        l = j;
    }
}

/* SELECT * FROM (q): q as one operand of a set operation (so that a
   parenthesised set operation, ORDER BY, LIMIT or WITH stays its own). */
static Select *wrap_query(Parser *p, Select *q, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    s->items = arena_zalloc(p->a, sizeof(SelectItem));
    s->nitems = 1;
    s->items[0].e = node(p, A_STAR, t);
    s->items[0].line = t->line;
    s->items[0].col = t->col;
    FromItem *f = arena_zalloc(p->a, sizeof(*f));
    f->k = F_SUBQUERY;
    f->line = t->line;
    f->col = t->col;
    f->sub = q;
    s->from = grow(p, NULL, 0, sizeof(FromItem *));
    s->from[0] = f;
    s->nfrom = 1;
    return s;
}

/* Is s `SELECT * FROM (q)` as wrap_query() makes it? */
static bool is_wrapper(const Select *s)
{
    return s->nitems == 1 && s->items[0].e->k == A_STAR && !s->items[0].e->qual &&
           s->nfrom == 1 && s->from[0]->k == F_SUBQUERY && !s->from[0]->alias &&
           !s->from[0]->ncol_aliases && !s->where && !s->group.n && !s->having &&
           !s->distinct && !s->nvalues && !s->nctes;
}

/* VALUES (e, ...), (e, ...): rows of expressions (after the keyword). */
static Select *parse_values(Parser *p, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    do {
        AstList row = {0};
        if (expect_op(p, "("))
            return NULL;
        do {
            Ast *x = parse_expr(p);
            if (!x)
                return NULL;
            list_push(p, &row, x);
        } while (accept_op(p, ","));
        if (expect_op(p, ")"))
            return NULL;
        s->values = grow(p, s->values, s->nvalues, sizeof(AstList));
        s->values[s->nvalues++] = row;
    } while (accept_op(p, ","));
    return s;
}

static Select *parse_select_body(Parser *p, const Token *t);

static Select *parse_select_core(Parser *p)
{
    Token *t = cur(p);
    if (accept_op(p, "(")) {
        Select *s = parse_query(p);
        if (!s || expect_op(p, ")"))
            return NULL;
        if (s->next || s->norder || s->limit || s->offset || s->nctes)
            return wrap_query(p, s, t);
        return s;
    }
    if (accept_kw(p, "values"))
        return parse_values(p, t);
    if (expect_kw(p, "select"))
        return NULL;
    int outer_nfrom = p->nfrom; /* this FROM counts its own relations */
    p->nfrom = 0;
    Select *s = parse_select_body(p, t);
    p->nfrom = outer_nfrom;
    return s;
}

static Select *parse_select_body(Parser *p, const Token *t)
{
    Select *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    if (accept_kw(p, "distinct")) {
        s->distinct = true;
        if (is_kw(cur(p), "on")) {
            unsupported(p, cur(p), "DISTINCT ON");
            return NULL;
        }
    } else
        accept_kw(p, "all");
    do {
        Token *it = cur(p);
        Ast *e = parse_expr(p);
        if (!e)
            return NULL;
        s->items = grow(p, s->items, s->nitems, sizeof(SelectItem));
        SelectItem *si = &s->items[s->nitems++];
        si->e = e;
        si->line = it->line;
        si->col = it->col;
        si->alias = e->k == A_STAR ? NULL : opt_alias(p);
        if (p->err->code)
            return NULL;
    } while (accept_op(p, ","));
    if (accept_kw(p, "from")) {
        do {
            FromItem *f = parse_from_item(p);
            if (!f)
                return NULL;
            s->from = grow(p, s->from, s->nfrom, sizeof(FromItem *));
            s->from[s->nfrom++] = f;
        } while (accept_op(p, ","));
    }
    if (accept_kw(p, "where") && !(s->where = parse_expr(p)))
        return NULL;
    if (is_kw(cur(p), "group")) {
        p->i++;
        if (expect_kw(p, "by"))
            return NULL;
        if (is_kw(cur(p), "rollup") || is_kw(cur(p), "cube") || is_kw(cur(p), "grouping")) {
            unsupported(p, cur(p), "ROLLUP / CUBE / GROUPING SETS");
            return NULL;
        }
        do {
            Ast *e = parse_expr(p);
            if (!e)
                return NULL;
            list_push(p, &s->group, e);
        } while (accept_op(p, ","));
    }
    if (accept_kw(p, "having") && !(s->having = parse_expr(p)))
        return NULL;
    if (is_kw(cur(p), "window") || is_kw(cur(p), "qualify")) {
        unsupported(p, cur(p), "WINDOW / QUALIFY");
        return NULL;
    }
    return s;
}

/* A set operation keyword (only INTERSECT when intersect_only) with its
   optional ALL / DISTINCT; false (nothing consumed) when there is none. */
static bool accept_setop(Parser *p, bool intersect_only, SetOp *op)
{
    if (!intersect_only && accept_kw(p, "union"))
        *op = accept_kw(p, "all") ? SET_UNION_ALL : (accept_kw(p, "distinct"), SET_UNION);
    else if (!intersect_only && accept_kw(p, "except"))
        *op = accept_kw(p, "all") ? SET_EXCEPT_ALL : (accept_kw(p, "distinct"), SET_EXCEPT);
    else if (accept_kw(p, "intersect"))
        *op = accept_kw(p, "all") ? SET_INTERSECT_ALL : (accept_kw(p, "distinct"), SET_INTERSECT);
    else
        return false;
    return true;
}

/* core { INTERSECT core }: INTERSECT binds tighter than UNION and EXCEPT.
   Returns the chain (its operands never have chains of their own). */
static Select *parse_intersect_term(Parser *p)
{
    Select *first = parse_select_core(p), *last = first;
    while (last) {
        Token *t = cur(p);
        SetOp op;
        if (!accept_setop(p, true, &op))
            break;
        last->setop = op;
        last->setop_line = t->line;
        last->setop_col = t->col;
        if (!(last->next = parse_select_core(p)))
            return NULL;
        last = last->next;
    }
    return first;
}

/* WITH name [(c, ...)] AS (query), ... (after the keyword). */
static int parse_with(Parser *p, const Token *w, Cte **out, int *nout)
{
    if (is_kw(cur(p), "recursive"))
        return unsupported(p, w, "WITH RECURSIVE");
    do {
        Token *nt = cur(p);
        Cte c = {0};
        c.line = nt->line;
        c.col = nt->col;
        if (!(c.name = ident(p, "a name for a WITH query")))
            return p->err->code;
        if (accept_op(p, "(")) {
            do {
                char *a = ident(p, "a column name");
                if (!a)
                    return p->err->code;
                c.col_aliases = grow(p, c.col_aliases, c.ncol_aliases, sizeof(char *));
                c.col_aliases[c.ncol_aliases++] = a;
            } while (accept_op(p, ","));
            if (expect_op(p, ")"))
                return p->err->code;
        }
        if (expect_kw(p, "as") || expect_op(p, "("))
            return p->err->code;
        if (!(c.q = parse_query(p)) || expect_op(p, ")"))
            return p->err->code;
        *out = grow(p, *out, *nout, sizeof(Cte));
        (*out)[(*nout)++] = c;
    } while (accept_op(p, ","));
    return 0;
}

static Select *parse_query_in(Parser *p);

static Select *parse_query(Parser *p)
{
    if (enter(p))
        return NULL;
    Select *q = parse_query_in(p);
    leave(p);
    return q;
}

static Select *parse_query_in(Parser *p)
{
    Cte *ctes = NULL;
    int nctes = 0;
    Token *w = cur(p);
    if (accept_kw(p, "with") && parse_with(p, w, &ctes, &nctes))
        return NULL;
    Select *first = parse_intersect_term(p), *last = first;
    while (last) {
        SetOp op;
        Token *t = cur(p);
        while (last->next)
            last = last->next;
        if (!accept_setop(p, false, &op))
            break;
        Token *rt = cur(p);
        Select *rhs = parse_intersect_term(p);
        if (!rhs)
            return NULL;
        if (rhs->next) /* a UNION b INTERSECT c = a UNION (b INTERSECT c) */
            rhs = wrap_query(p, rhs, rt);
        last->setop = op;
        last->setop_line = t->line;
        last->setop_col = t->col;
        last->next = rhs;
    }
    if (!first)
        return NULL;
    first->ctes = ctes;
    first->nctes = nctes;
    if (is_kw(cur(p), "order")) {
        first->order_line = cur(p)->line;
        first->order_col = cur(p)->col;
        p->i++;
        if (expect_kw(p, "by"))
            return NULL;
        do {
            Ast *e = parse_expr(p);
            if (!e)
                return NULL;
            first->order = grow(p, first->order, first->norder, sizeof(OrderItem));
            OrderItem *o = &first->order[first->norder++];
            o->e = e;
            o->desc = false;
            o->nulls = 0;
            if (accept_kw(p, "desc"))
                o->desc = true;
            else
                accept_kw(p, "asc");
            if (accept_kw(p, "nulls")) {
                if (accept_kw(p, "first"))
                    o->nulls = 1;
                else if (accept_kw(p, "last"))
                    o->nulls = 2;
                else {
                    fail(p, "FIRST or LAST");
                    return NULL;
                }
            }
        } while (accept_op(p, ","));
    }
    if (is_kw(cur(p), "limit") || is_kw(cur(p), "offset")) {
        first->limit_line = cur(p)->line;
        first->limit_col = cur(p)->col;
    }
    if (accept_kw(p, "limit") && !(first->limit = parse_expr(p)))
        return NULL;
    if (accept_kw(p, "offset") && !(first->offset = parse_expr(p)))
        return NULL;
    /* (q) on its own: q itself, so that its ORDER BY / LIMIT stay the query's */
    if (!first->next && !first->norder && !first->limit && !first->offset && !nctes &&
        is_wrapper(first))
        return first->from[0]->sub;
    return first;
}

/* ---- statements ---- */

static int parse_props(Parser *p, Property **out, int *nout)
{
    if (expect_op(p, "("))
        return p->err->code;
    do {
        Token *k = cur(p), *v;
        if (k->k != T_STR)
            return fail(p, "a property name in single quotes");
        p->i++;
        if (expect_op(p, "="))
            return p->err->code;
        v = cur(p);
        if (v->k != T_STR)
            return fail(p, "a property value in single quotes");
        p->i++;
        *out = grow(p, *out, *nout, sizeof(Property));
        Property *pr = &(*out)[(*nout)++];
        pr->key = (char *)k->s;
        pr->value = (char *)v->s;
        pr->line = k->line;
        pr->col = k->col;
        pr->vline = v->line;
        pr->vcol = v->col + 1;
    } while (accept_op(p, ","));
    return expect_op(p, ")");
}

static int parse_create_table(Parser *p, Stmt *s)
{
    Token *nt = cur(p);
    s->k = S_CREATE_TABLE;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = ident(p, "a table name")) || expect_op(p, "("))
        return p->err->code;
    do {
        Token *t = cur(p);
        if (is_kw(t, "primary")) {
            p->i++;
            if (expect_kw(p, "key") || expect_op(p, "("))
                return p->err->code;
            if (s->npk)
                return err_setpos(p->err, SL_ESEMANTIC, t->line, t->col,
                                  "table %s has more than one PRIMARY KEY", s->name);
            do {
                char *c = ident(p, "a column name");
                if (!c)
                    return p->err->code;
                s->pk = grow(p, s->pk, s->npk, sizeof(char *));
                s->pk[s->npk++] = c;
            } while (accept_op(p, ","));
            if (expect_op(p, ")"))
                return p->err->code;
            continue;
        }
        if (is_kw(t, "foreign") || is_kw(t, "constraint") || is_kw(t, "unique") ||
            is_kw(t, "check"))
            return unsupported(p, t, "table constraints other than PRIMARY KEY");
        s->cols = grow(p, s->cols, s->ncols, sizeof(ColumnDef));
        ColumnDef *c = &s->cols[s->ncols++];
        c->line = t->line;
        c->col = t->col;
        if (!(c->name = ident(p, "a column name or PRIMARY KEY")) || parse_type(p, &c->type))
            return p->err->code;
        c->type.nullable = 1;
        for (;;) {
            Token *ct = cur(p);
            if (accept_kw(p, "not")) {
                if (expect_kw(p, "null"))
                    return p->err->code;
                c->type.nullable = 0;
            } else if (accept_kw(p, "null")) {
                c->type.nullable = 1;
            } else if (accept_kw(p, "primary")) {
                if (expect_kw(p, "key"))
                    return p->err->code;
                if (s->npk)
                    return err_setpos(p->err, SL_ESEMANTIC, ct->line, ct->col,
                                      "table %s has more than one PRIMARY KEY", s->name);
                s->pk = grow(p, s->pk, 0, sizeof(char *));
                s->pk[s->npk++] = c->name;
                c->primary_key = true;
            } else if (is_kw(ct, "default") || is_kw(ct, "lateness") ||
                       is_kw(ct, "foreign") || is_kw(ct, "references") ||
                       is_kw(ct, "unique") || is_kw(ct, "check") || is_kw(ct, "watermark")) {
                char b[64];
                snprintf(b, sizeof(b), "column constraint %s", ct->s);
                return unsupported(p, ct, b);
            } else
                break;
        }
    } while (accept_op(p, ","));
    if (expect_op(p, ")"))
        return p->err->code;
    if (accept_kw(p, "with"))
        return parse_props(p, &s->props, &s->nprops);
    return 0;
}

static int parse_create_view(Parser *p, Stmt *s)
{
    Token *nt = cur(p);
    s->k = S_CREATE_VIEW;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = ident(p, "a view name")))
        return p->err->code;
    if (accept_op(p, "(")) {
        do {
            char *c = ident(p, "a column name");
            if (!c)
                return p->err->code;
            s->col_aliases = grow(p, s->col_aliases, s->ncol_aliases, sizeof(char *));
            s->col_aliases[s->ncol_aliases++] = c;
        } while (accept_op(p, ","));
        if (expect_op(p, ")"))
            return p->err->code;
    }
    if (accept_kw(p, "with") && parse_props(p, &s->props, &s->nprops))
        return p->err->code;
    if (expect_kw(p, "as"))
        return p->err->code;
    s->query = parse_query(p);
    return s->query ? 0 : p->err->code;
}

static int parse_stmt(Parser *p, Stmt **out)
{
    Token *t = cur(p);
    Stmt *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    *out = s;
    if (!accept_kw(p, "create")) {
        if (is_kw(t, "insert") || is_kw(t, "declare") || is_kw(t, "set") ||
            is_kw(t, "select") || is_kw(t, "drop") || is_kw(t, "lateness")) {
            char b[64];
            snprintf(b, sizeof(b), "statement %s", t->s);
            return unsupported(p, t, b);
        }
        return fail(p, "CREATE TABLE or CREATE VIEW");
    }
    if (accept_kw(p, "table"))
        return parse_create_table(p, s);
    if (accept_kw(p, "materialized")) {
        s->materialized = true;
        if (expect_kw(p, "view"))
            return p->err->code;
        return parse_create_view(p, s);
    }
    if (accept_kw(p, "local")) {
        if (expect_kw(p, "view"))
            return p->err->code;
        return parse_create_view(p, s);
    }
    if (accept_kw(p, "view"))
        return parse_create_view(p, s);
    if (is_kw(cur(p), "function") || is_kw(cur(p), "aggregate") || is_kw(cur(p), "type") ||
        is_kw(cur(p), "index") || is_kw(cur(p), "linear")) {
        char b[64];
        snprintf(b, sizeof(b), "CREATE %s", cur(p)->s);
        return unsupported(p, cur(p), b);
    }
    return fail(p, "TABLE, VIEW or MATERIALIZED VIEW after CREATE");
}

int sql_parse(const char *text, Arena *a, Program **out, Err *err)
{
    Err local;
    Parser p = {NULL, 0, 0, a, err ? err : &local, 0, 0};
    err_clear(&local);
    if (lex(text, a, &p.t, &p.n, p.err))
        return p.err->code;
    Program *prog = arena_zalloc(a, sizeof(*prog));
    while (cur(&p)->k != T_EOF) {
        if (accept_op(&p, ";"))
            continue;
        Stmt *s;
        if (parse_stmt(&p, &s))
            return p.err->code;
        prog->stmts = grow(&p, prog->stmts, prog->n, sizeof(Stmt *));
        prog->stmts[prog->n++] = s;
        if (cur(&p)->k != T_EOF && expect_op(&p, ";"))
            return p.err->code;
    }
    *out = prog;
    return 0;
}

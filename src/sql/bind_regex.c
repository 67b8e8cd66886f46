/*
 * sql/bind_regex.c - binding the regular-expression functions and
 * SPLIT_PART (sql__bind_func hands them here once their arguments are
 * bound). The parser already turned the operators into calls: ~ ~* !~ !~*,
 * RLIKE and REGEXP into regexp_like (NOT-wrapped when negated), SIMILAR TO
 * into regexp_like(s, similar_to_escape(pattern [, escape])).
 * Out: E_FUNC nodes with the argument lists fn_regex.c expects (the
 * optional arguments of PostgreSQL's forms filled with their defaults).
 * A constant pattern (and constant flags) is compiled here once, so a bad
 * one is an error at the pattern's line and column; a pattern computed
 * per row is checked per row (a run-time error: the record is rejected).
 * The functions that return arrays or sets (regexp_match, regexp_matches,
 * regexp_split_to_array, regexp_split_to_table) are refused by name.
 */
#include <string.h>

#include "../base/buf.h"
#include "sql_int.h"

typedef struct RxDef {
    const char *name;
    int fn;
    int minargs, maxargs;
} RxDef;

static const RxDef rx_fns[] = {
    {"regexp_extract", FN_REGEXP_EXTRACT, 3, 3}, {"regexp_like", FN_REGEXP_LIKE, 2, 3},
    {"rlike", FN_REGEXP_LIKE, 2, 2},             {"regexp_replace", FN_REGEXP_REPLACE, 3, 6},
    {"regexp_count", FN_REGEXP_COUNT, 2, 4},     {"regexp_substr", FN_REGEXP_SUBSTR, 2, 6},
    {"regexp_instr", FN_REGEXP_INSTR, 2, 7},     {"similar_to_escape", FN_SIMILAR_ESCAPE, 1, 2},
    {"split_part", FN_SPLIT_PART, 3, 3},
};

static const char *const rx_later[] = {
    "regexp_match", "regexp_matches", "regexp_split_to_array", "regexp_split_to_table",
};

bool sql__is_regex_fn(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(rx_fns); i++)
        if (!strcmp(rx_fns[i].name, name))
            return true;
    for (size_t i = 0; i < ARRAY_LEN(rx_later); i++)
        if (!strcmp(rx_later[i], name))
            return true;
    return false;
}

static Expr *str_arg(P *p, Expr *e) { return sql__cast_to(p, e, type_make(TK_VARCHAR, false)); }
static Expr *int_arg(P *p, Expr *e) { return sql__cast_to(p, e, type_make(TK_BIGINT, false)); }
static Expr *int_const(P *p, int64_t v) { return expr_const_i64(p->a, type_make(TK_BIGINT, false), v); }
static Expr *str_const(P *p, const char *s)
{
    return expr_const_str(p->a, type_make(TK_VARCHAR, false), s, strlen(s));
}

static bool is_str_const(const Expr *e)
{
    return e->k == E_CONST && !e->cnull && type_is_string((TypeKind)e->t.kind);
}

/* Compiles constant pattern a[pi] with constant flags a[fi] (fi < 0:
   none) of function fn; false with the error at the pattern's position. */
static bool check_const(P *p, Ast *x, Expr **a, int pi, int fi, int fn)
{
    if (!is_str_const(a[pi]) || (fi >= 0 && !is_str_const(a[fi])))
        return true;
    Err e = {0};
    int off = -1;
    const Str f = fi >= 0 ? a[fi]->cs : (Str){NULL, 0};
    if (!expr_regex_check(a[pi]->cs.p, a[pi]->cs.n, f.p, f.n, fn, &e, &off))
        return true;
    Ast *at = off >= 0 && x->args.n > 1 ? x->args.v[1] : x; /* the pattern, or the call */
    perr(p, SL_ESEMANTIC, at->line, at->col, "%s", e.msg);
    return false;
}

Expr *sql__bind_regex(P *p, Ast *x, Expr **args, int n)
{
    for (size_t i = 0; i < ARRAY_LEN(rx_later); i++)
        if (!strcmp(rx_later[i], x->name)) {
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "%s is not supported yet: it returns an array or a set of rows, and Sluice "
                 "has no arrays yet (regexp_substr and regexp_extract return one match)",
                 x->name);
            return NULL;
        }
    const RxDef *d = NULL;
    for (size_t i = 0; i < ARRAY_LEN(rx_fns) && !d; i++)
        if (!strcmp(rx_fns[i].name, x->name))
            d = &rx_fns[i];
    if (!d || n < d->minargs || n > d->maxargs) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
        return NULL;
    }
    bool nul = false;
    for (int j = 0; j < n; j++)
        nul = nul || args[j]->t.nullable || args[j]->t.kind == TK_NULL;
    Expr *a[7];
    int na = 0, pi = 1, fi = -1;
    SqlType t = type_make(TK_VARCHAR, nul);
    /* the first optional argument of REGEXP_REPLACE / REGEXP_LIKE: flags
       when a string, else start */
    bool s4 = n >= 4 && type_is_string((TypeKind)args[3]->t.kind);
    switch (d->fn) {
    case FN_REGEXP_EXTRACT:
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = int_arg(p, args[2]);
        t.nullable = 1;
        break;
    case FN_REGEXP_LIKE:
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = n > 2 ? str_arg(p, args[2]) : str_const(p, "");
        fi = 2;
        t = type_make(TK_BOOL, nul);
        break;
    case FN_REGEXP_REPLACE: /* (s, p, r [, flags]) or (s, p, r, start [, N [, flags]]) */
        if (s4 && n > 4) {
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "regexp_replace(s, pattern, replacement, flags) takes no more arguments");
            return NULL;
        }
        for (int j = 0; j < 3; j++)
            a[na++] = str_arg(p, args[j]);
        a[na++] = n > 3 && !s4 ? int_arg(p, args[3]) : int_const(p, 1);
        a[na++] = n > 4 ? int_arg(p, args[4]) : int_const(p, -1);
        a[na++] = s4 ? str_arg(p, args[3]) : n > 5 ? str_arg(p, args[5]) : str_const(p, "");
        fi = 5;
        break;
    case FN_REGEXP_COUNT:
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = n > 2 ? int_arg(p, args[2]) : int_const(p, 1);
        a[na++] = n > 3 ? str_arg(p, args[3]) : str_const(p, "");
        fi = 3;
        t = type_make(TK_INT, nul);
        break;
    case FN_REGEXP_SUBSTR:
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = n > 2 ? int_arg(p, args[2]) : int_const(p, 1);
        a[na++] = n > 3 ? int_arg(p, args[3]) : int_const(p, 1);
        a[na++] = n > 4 ? str_arg(p, args[4]) : str_const(p, "");
        a[na++] = n > 5 ? int_arg(p, args[5]) : int_const(p, 0);
        fi = 4;
        t.nullable = 1;
        break;
    case FN_REGEXP_INSTR:
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = n > 2 ? int_arg(p, args[2]) : int_const(p, 1);
        a[na++] = n > 3 ? int_arg(p, args[3]) : int_const(p, 1);
        a[na++] = n > 4 ? int_arg(p, args[4]) : int_const(p, 0);
        a[na++] = n > 5 ? str_arg(p, args[5]) : str_const(p, "");
        a[na++] = n > 6 ? int_arg(p, args[6]) : int_const(p, 0);
        fi = 5;
        t = type_make(TK_INT, nul);
        break;
    case FN_SIMILAR_ESCAPE:
        a[na++] = str_arg(p, args[0]);
        a[na++] = n > 1 ? str_arg(p, args[1]) : str_const(p, "\\");
        pi = -1;
        if (is_str_const(a[1]) && a[1]->cs.n > 1) {
            Ast *at = n > 1 ? x->args.v[1] : x;
            perr(p, SL_ESEMANTIC, at->line, at->col,
                 "invalid escape string '%.*s': it must be empty or one single-byte character",
                 (int)a[1]->cs.n, a[1]->cs.p);
            return NULL;
        }
        if (is_str_const(a[0]) && is_str_const(a[1])) {
            /* a constant pattern becomes a constant regex here */
            Buf b = BUF_INIT;
            expr_similar_to_regex(a[0]->cs.p, a[0]->cs.n, a[1]->cs.n ? (uint8_t)a[1]->cs.p[0] : -1,
                                  &b);
            Expr *c = expr_const_str(p->a, type_make(TK_VARCHAR, false), (const char *)b.p, b.n);
            buf_free(&b);
            return c;
        }
        break;
    default: /* FN_SPLIT_PART */
        a[na++] = str_arg(p, args[0]);
        a[na++] = str_arg(p, args[1]);
        a[na++] = int_arg(p, args[2]);
        pi = -1;
        break;
    }
    if (pi >= 0 && !check_const(p, x, a, pi, fi, d->fn))
        return NULL;
    Expr *e = sql__mk(p, E_FUNC, t, na);
    e->fn = d->fn;
    for (int j = 0; j < na; j++)
        e->a[j] = a[j];
    return e;
}

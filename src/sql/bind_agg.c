/*
 * sql/bind_agg.c - binding the aggregates kept as value multisets
 * (STRING_AGG, BIT_AND/OR/XOR, PERCENTILE_CONT/DISC, MODE, the statistical
 * ones VAR_*, STDDEV_*, COVAR_*, CORR, ARG_MIN/ARG_MAX, ARRAY_AGG and the
 * JSON aggregates JSON[B]_AGG, JSON[B]_OBJECT_AGG; computed by
 * circuit/agg_state.c), the aliases MEDIAN, ANY_VALUE and COUNT_IF, and
 * GROUPING(...) (a constant per grouping set,
 * plan_gsets.c). bind_fn.c's sql__bind_agg_call hands them here; like the
 * other aggregates they are collected on the AggCtx of the GROUP BY being
 * planned, each call its own output column.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/vec.h"
#include "sql_int.h"

bool sql__set_agg_name(const char *n)
{
    return !strcmp(n, "string_agg") || !strcmp(n, "listagg") || !strcmp(n, "group_concat") ||
           !strcmp(n, "bit_and") || !strcmp(n, "bit_or") ||
           !strcmp(n, "bit_xor") || !strcmp(n, "percentile_cont") ||
           !strcmp(n, "percentile_disc") || !strcmp(n, "mode") || !strcmp(n, "grouping") ||
           !strcmp(n, "array_agg") || sql__json_agg_name(n) ||
           sql__stat_agg_name(n);
}

/* The aggregates bind_stat_agg binds, with their argument counts. */
static const struct {
    const char *name;
    int kind, nargs;
} stat_aggs[] = {
    {"stddev", AGG_STDDEV_SAMP, 1}, {"stddev_samp", AGG_STDDEV_SAMP, 1},
    {"stddev_pop", AGG_STDDEV_POP, 1}, {"variance", AGG_VAR_SAMP, 1},
    {"var_samp", AGG_VAR_SAMP, 1},  {"var_pop", AGG_VAR_POP, 1},
    {"covar_pop", AGG_COVAR_POP, 2}, {"covar_samp", AGG_COVAR_SAMP, 2},
    {"corr", AGG_CORR, 2},          {"arg_min", AGG_ARG_MIN, 2},
    {"arg_max", AGG_ARG_MAX, 2},    {"median", AGG_PCT_CONT, 1},
    {"any_value", AGG_MIN, 1},      {"count_if", AGG_COUNT, 1},
};

int sql__stat_agg_name(const char *n)
{
    for (size_t i = 0; i < sizeof(stat_aggs) / sizeof(stat_aggs[0]); i++)
        if (!strcmp(n, stat_aggs[i].name))
            return stat_aggs[i].nargs;
    return 0;
}

/* x over the FROM scope, with no aggregate inside. */
static Expr *bind_inner_arg(P *p, BindCtx *bc, Ast *x, const char *what)
{
    AggCtx none = {0};
    BindCtx inner = {bc->s, &none, what};
    return sql__bind(p, &inner, x);
}

/* The value of the first argument of a FILTERed call (the THEN of the
   CASE parse_expr.c made), else a itself. */
static Ast *unfiltered(Ast *a)
{
    return a->k == A_CASE && a->ival == 1 && a->args.n == 2 ? a->args.v[1] : a;
}

static Expr *add_call(P *p, AggCtx *ag, Ast *x, const AggSpec *sp, Expr *arg, Expr **ord)
{
    AggCall *c = VEC_PUSH_ARENA(p->a, ag->calls, ag->ncalls, ag->cap);
    memset(c, 0, sizeof(*c));
    c->ast = x;
    c->spec = *sp;
    c->arg = arg;
    c->ord = ord;
    return expr_col(p->a, ag->ngroup + ag->ncalls - 1, sp->out_t);
}

/* GROUPING(k, ...): each argument one of the GROUP BY expressions. */
static Expr *bind_grouping(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    AggSpec sp = {0};
    if (x->star || x->distinct || x->args.n == 0 || x->args.n > 31 || x->norder) {
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "GROUPING takes 1 to 31 GROUP BY expressions as its arguments");
        return NULL;
    }
    int *gk = arena_alloc(p->a, sizeof(int) * (size_t)x->args.n);
    for (int i = 0; i < x->args.n; i++) {
        Ast *a = x->args.v[i];
        Expr *e = bind_inner_arg(p, bc, a, "GROUPING");
        if (!e)
            return NULL;
        gk[i] = -1;
        for (int k = 0; k < ag->ngroup && gk[i] < 0; k++)
            if (sql__expr_equal(ag->group[k], e))
                gk[i] = k;
        if (gk[i] < 0) {
            perr(p, SL_ESEMANTIC, a->line, a->col,
                 "arguments to GROUPING must be GROUP BY expressions of its query");
            return NULL;
        }
    }
    sp.kind = AGG_COUNT_STAR; /* no aggregate: plan_gsets.c makes it a constant */
    sp.out_t = type_make(TK_INT, false);
    Expr *r = add_call(p, ag, x, &sp, NULL, NULL);
    AggCall *c = &ag->calls[ag->ncalls - 1];
    c->grouping = true;
    c->gk = gk;
    c->ngk = x->args.n;
    return r;
}

/* The constant fraction of PERCENTILE_CONT/DISC; false with p->err. */
static bool fraction(P *p, Ast *x, double *out)
{
    Ast *a = x->args.n == 1 ? x->args.v[0] : NULL;
    if (!a || (a->k != A_INT && a->k != A_NUM)) {
        if (a && a->k != A_NULL)
            perr(p, SL_EUNSUPPORTED, a->line, a->col,
                 "%s with a fraction other than a numeric constant is not supported yet",
                 x->name);
        else
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes one fraction between 0 and 1",
                 x->name);
        return false;
    }
    *out = strtod(a->str, NULL);
    if (!(*out >= 0 && *out <= 1)) {
        perr(p, SL_ESEMANTIC, a->line, a->col, "percentile value %s is not between 0 and 1",
             a->str);
        return false;
    }
    return true;
}

/* The numeric argument i of x bound, as DOUBLE when dbl; NULL with p->err. */
static Expr *numeric_arg(P *p, BindCtx *bc, Ast *x, int i, bool dbl)
{
    Ast *ax = x->args.v[i];
    Expr *v = bind_inner_arg(p, bc, ax, "an aggregate argument");
    if (!v)
        return NULL;
    if (v->t.kind == TK_NULL)
        return sql__cast_to(p, v, type_make(TK_DOUBLE, true));
    if (!type_is_numeric(v->t.kind)) {
        perr(p, SL_ESEMANTIC, ax->line, ax->col, "%s needs a numeric argument, not %s", x->name,
             tname(v->t));
        return NULL;
    }
    if (dbl && v->t.kind != TK_DOUBLE)
        v = sql__cast_to(p, v, type_make(TK_DOUBLE, v->t.nullable));
    return v;
}

/* STDDEV/VARIANCE and their _SAMP/_POP forms, COVAR_POP/SAMP and CORR
   (PostgreSQL's; DOUBLE results), ARG_MIN/ARG_MAX(x, key) (DuckDB's:
   rows whose x or key is NULL skipped; of the rows with the smallest
   (largest) key, the smallest x), MEDIAN(x) = PERCENTILE_CONT(0.5) WITHIN
   GROUP (ORDER BY x), ANY_VALUE(x) = MIN(x) (a deterministic choice: the
   same multiset gives the same value whatever the steps or workers) and
   COUNT_IF(c) = COUNT(CASE WHEN c THEN 1 END). */
static Expr *bind_stat_agg(P *p, BindCtx *bc, Ast *x)
{
    const char *n = x->name;
    int nargs = sql__stat_agg_name(n);
    AggSpec sp = {0};
    for (size_t i = 0; i < sizeof(stat_aggs) / sizeof(stat_aggs[0]); i++)
        if (!strcmp(n, stat_aggs[i].name))
            sp.kind = (AggKind)stat_aggs[i].kind;
    if (x->within) {
        perr(p, SL_ESEMANTIC, x->order_line, x->order_col,
             "%s is not an ordered-set aggregate (WITHIN GROUP)", n);
        return NULL;
    }
    if (x->star) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s(*) is not valid; only COUNT(*)", n);
        return NULL;
    }
    if (x->args.n != nargs) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes exactly %s", n,
             nargs == 2 ? "two arguments" : "one argument");
        return NULL;
    }
    if (x->distinct && sp.kind == AGG_PCT_CONT) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "MEDIAN(DISTINCT ...) is not supported yet");
        return NULL;
    }
    for (int i = 0; i < x->norder; i++) /* order-insensitive: checked, then ignored */
        if (!bind_inner_arg(p, bc, x->order[i].e, "ORDER BY in an aggregate"))
            return NULL;
    Expr *v, **ord = NULL;
    bool two = nargs == 2, stat = sp.kind >= AGG_VAR_SAMP && sp.kind <= AGG_CORR;
    if (sp.kind == AGG_COUNT) { /* COUNT_IF(c) */
        if (!(v = bind_inner_arg(p, bc, x->args.v[0], "an aggregate argument")) ||
            !(v = sql__bool_agg_arg(p, x, v)))
            return NULL;
        Expr *cs = sql__mk(p, E_CASE, type_make(TK_INT, true), 2);
        cs->a[0] = v;
        cs->a[1] = expr_const_i64(p->a, type_make(TK_INT, false), 1);
        v = cs;
        sp.out_t = type_make(TK_BIGINT, false);
    } else if (sp.kind == AGG_MIN || sp.kind == AGG_ARG_MIN || sp.kind == AGG_ARG_MAX) {
        if (!(v = bind_inner_arg(p, bc, x->args.v[0], "an aggregate argument")))
            return NULL;
        if (v->t.kind == TK_NULL)
            v = sql__cast_to(p, v, type_make(TK_INT, true));
        sp.out_t = v->t;
        sp.out_t.nullable = 1;
    } else {
        if (!(v = numeric_arg(p, bc, x, 0, two)))
            return NULL;
        sp.out_t = type_make(TK_DOUBLE, true);
        sp.frac = 0.5; /* MEDIAN */
    }
    if (two) {
        Expr *k = sp.kind == AGG_ARG_MIN || sp.kind == AGG_ARG_MAX
                      ? bind_inner_arg(p, bc, x->args.v[1], "an aggregate argument")
                      : numeric_arg(p, bc, x, 1, true);
        if (!k)
            return NULL;
        if (k->t.kind == TK_NULL)
            k = sql__cast_to(p, k, type_make(TK_INT, true));
        ord = arena_alloc(p->a, sizeof(Expr *));
        ord[0] = k;
        sp.nord = 1;
        sp.ord_desc = arena_alloc(p->a, sizeof(bool));
        sp.ord_nulls_first = arena_alloc(p->a, sizeof(bool));
        sp.ord_desc[0] = sp.kind == AGG_ARG_MAX;
        sp.ord_nulls_first[0] = false;
    }
    sp.in_t = v->t;
    /* DISTINCT: the statistics and COUNT_IF over the set of values (of
       (y, x) pairs); the same value without it for the others */
    sp.distinct = x->distinct && (stat || sp.kind == AGG_COUNT);
    return add_call(p, bc->agg, x, &sp, v, ord);
}

Expr *sql__bind_set_agg(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    const char *n = x->name;
    if (!strcmp(n, "grouping"))
        return bind_grouping(p, bc, x);
    if (sql__stat_agg_name(n))
        return bind_stat_agg(p, bc, x);
    /* LISTAGG (SQL:2016, Oracle, Db2) and GROUP_CONCAT (MySQL, SQLite) are
       STRING_AGG with another default separator ('' and ','), any value
       cast to text, and LISTAGG's order written WITHIN GROUP */
    bool listagg = !strcmp(n, "listagg"), alias = listagg || !strcmp(n, "group_concat");
    bool str = !strcmp(n, "string_agg") || alias, arr = !strcmp(n, "array_agg");
    int json = sql__json_agg_name(n); /* 1: JSON[B]_AGG, 2: JSON[B]_OBJECT_AGG */
    bool ordset = !strcmp(n, "percentile_cont") || !strcmp(n, "percentile_disc") ||
                  !strcmp(n, "mode");
    AggSpec sp = {0};
    if (ordset != (x->within && !listagg)) {
        if (ordset)
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs WITHIN GROUP (ORDER BY ...)", n);
        else
            perr(p, SL_ESEMANTIC, x->order_line, x->order_col,
                 "%s is not an ordered-set aggregate (WITHIN GROUP)", n);
        return NULL;
    }
    if (x->star) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s(*) is not valid; only COUNT(*)", n);
        return NULL;
    }
    if (ordset) {
        if (x->distinct) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "DISTINCT in ordered-set aggregate %s", n);
            return NULL;
        }
        if (x->norder != 1) {
            perr(p, SL_ESEMANTIC, x->order_line, x->order_col,
                 "%s takes one ORDER BY expression in WITHIN GROUP", n);
            return NULL;
        }
        bool mode = !strcmp(n, "mode");
        if (mode && x->args.n) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "MODE() takes no arguments");
            return NULL;
        }
        if (!mode && !fraction(p, x, &sp.frac))
            return NULL;
        Expr *v = bind_inner_arg(p, bc, x->order[0].e, "an aggregate argument");
        if (!v)
            return NULL;
        bool cont = !strcmp(n, "percentile_cont");
        if (v->t.kind == TK_NULL)
            v = sql__cast_to(p, v, type_make(cont ? TK_DOUBLE : TK_INT, true));
        if (cont && !type_is_numeric(v->t.kind)) {
            perr(p, SL_ESEMANTIC, x->order[0].e->line, x->order[0].e->col,
                 "PERCENTILE_CONT needs a numeric ORDER BY expression, not %s", tname(v->t));
            return NULL;
        }
        sp.kind = cont ? AGG_PCT_CONT : mode ? AGG_MODE : AGG_PCT_DISC;
        sp.in_t = v->t;
        sp.out_t = cont ? type_make(TK_DOUBLE, true) : v->t;
        sp.out_t.nullable = 1;
        Expr **ord = NULL;
        if (x->order[0].desc) { /* NULLs are skipped: only the direction counts */
            sp.nord = 1;
            sp.ord_desc = arena_alloc(p->a, sizeof(bool));
            sp.ord_nulls_first = arena_alloc(p->a, sizeof(bool));
            sp.ord_desc[0] = true;
            sp.ord_nulls_first[0] = false;
            ord = arena_alloc(p->a, sizeof(Expr *));
            ord[0] = v;
        }
        return add_call(p, ag, x, &sp, v, ord);
    }
    if (alias ? x->args.n < 1 || x->args.n > 2 : x->args.n != 1 + (str || json == 2)) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes %s", n,
             alias      ? "a value and an optional separator"
             : str      ? "exactly two arguments (a value and a separator)"
             : json > 1 ? "exactly two arguments (a key and a value)"
                        : "exactly one argument");
        return NULL;
    }
    Expr *v = bind_inner_arg(p, bc, x->args.v[0], "an aggregate argument");
    if (!v)
        return NULL;
    if (json) {
        if (json == 2) { /* the entries: one-member objects {k: v} */
            Expr *val = bind_inner_arg(p, bc, x->args.v[1], "an aggregate argument");
            if (!val)
                return NULL;
            v = sql__json_member(p, v, val);
        } else {
            v = sql__cast_to(p, v, type_make(TK_VARIANT, true));
        }
        sp.kind = json == 2 ? AGG_JSON_OBJECT_AGG : AGG_JSON_AGG;
        sp.out_t = type_make(TK_VARIANT, true);
        sp.distinct = x->distinct && json == 1;
    } else if (arr) {
        if (v->t.kind == TK_NULL || v->t.kind == TK_CHAR)
            v = sql__cast_to(p, v, type_make(TK_VARCHAR, true));
        sp.kind = AGG_ARRAY_AGG;
        sp.out_t = type_array(v->t, true);
        sp.distinct = x->distinct;
    } else if (str) {
        Ast *s = x->args.n > 1 ? x->args.v[1] : NULL;
        if (v->t.kind == TK_NULL || v->t.kind == TK_CHAR || (alias && !type_is_string(v->t.kind)))
            v = sql__cast_to(p, v, type_make(TK_VARCHAR, true));
        if (!type_is_string(v->t.kind)) {
            perr(p, SL_ESEMANTIC, x->args.v[0]->line, x->args.v[0]->col,
                 "STRING_AGG needs a string value, not %s", tname(v->t));
            return NULL;
        }
        if (s && s->k != A_STR && s->k != A_NULL) {
            perr(p, SL_EUNSUPPORTED, s->line, s->col,
                 "%s with a separator other than a string constant is not supported yet", n);
            return NULL;
        }
        sp.kind = AGG_STRING_AGG;
        sp.sep = s && s->k == A_STR ? s->str : !s && !listagg && alias ? "," : "";
        sp.seplen = (uint32_t)(s && s->k == A_STR ? s->slen : strlen(sp.sep));
        sp.out_t = type_make(TK_VARCHAR, true);
        sp.distinct = x->distinct;
    } else {
        if (v->t.kind == TK_NULL)
            v = sql__cast_to(p, v, type_make(TK_INT, true));
        if (!type_is_integer(v->t.kind)) {
            perr(p, SL_ESEMANTIC, x->args.v[0]->line, x->args.v[0]->col,
                 "%s needs an integer argument, not %s", n, tname(v->t));
            return NULL;
        }
        sp.kind = !strcmp(n, "bit_and") ? AGG_BIT_AND : !strcmp(n, "bit_or") ? AGG_BIT_OR
                                                                             : AGG_BIT_XOR;
        sp.out_t = v->t;
        sp.out_t.nullable = 1;
        sp.distinct = x->distinct && sp.kind == AGG_BIT_XOR;
    }
    sp.in_t = v->t;
    /* ORDER BY inside the call: STRING_AGG's order; the others ignore it
       (their value does not depend on the order) once it binds */
    Expr **ord = NULL;
    if (x->norder) {
        ord = arena_alloc(p->a, sizeof(Expr *) * (size_t)x->norder);
        Expr *val = x->distinct ? bind_inner_arg(p, bc, unfiltered(x->args.v[0]),
                                                 "an aggregate argument")
                                : NULL;
        for (int i = 0; i < x->norder; i++) {
            const OrderItem *o = &x->order[i];
            if (!(ord[i] = bind_inner_arg(p, bc, o->e, "ORDER BY in an aggregate")))
                return NULL;
            if (x->distinct && !(val && sql__expr_equal(val, ord[i]))) {
                perr(p, SL_ESEMANTIC, o->e->line, o->e->col,
                     "in an aggregate with DISTINCT, ORDER BY expressions must appear in its "
                     "argument list");
                return NULL;
            }
        }
        if (str || arr || json) {
            sp.nord = x->norder;
            sp.ord_desc = arena_alloc(p->a, sizeof(bool) * (size_t)x->norder);
            sp.ord_nulls_first = arena_alloc(p->a, sizeof(bool) * (size_t)x->norder);
            for (int i = 0; i < x->norder; i++) {
                const OrderItem *o = &x->order[i];
                sp.ord_desc[i] = o->desc;
                sp.ord_nulls_first[i] = o->nulls ? o->nulls == 1 : !o->desc;
            }
        } else {
            ord = NULL;
        }
    }
    return add_call(p, ag, x, &sp, v, ord);
}

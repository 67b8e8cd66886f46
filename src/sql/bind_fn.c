/*
 * sql/bind_fn.c - binding function calls (bind.c hands every A_FUNC
 * here): aggregate calls, collected on the AggCtx of the GROUP BY being
 * planned (plan.c turns them into an OPK_AGG node) with identical calls
 * shared; window functions go to plan_window.c; scalar functions are
 * looked up by name in fns[] (arity, then argument casts and the result
 * type per family), with COALESCE/NULLIF and the date functions
 * (DATE_TRUNC, TIMESTAMP_TRUNC, TIMESTAMPDIFF) handled apart. Their
 * evaluation lives in expr/fn_*.c (HACKING.md, "Add a function").
 */
#include <string.h>

#include "../base/vec.h"
#include "../expr/text.h"
#include "../expr/tz.h"
#include "sql_int.h"

bool sql__is_agg_name(const char *n)
{
    return !strcmp(n, "count") || !strcmp(n, "sum") || !strcmp(n, "avg") || !strcmp(n, "min") ||
           !strcmp(n, "max") || sql__bool_agg(n) || sql__set_agg_name(n);
}

/* BOOL_AND and EVERY are MIN over BOOLEAN (FALSE < TRUE), BOOL_OR is MAX:
   1 for bool_and/every, 2 for bool_or, 0 for other names. */
int sql__bool_agg(const char *n)
{
    return !strcmp(n, "bool_and") || !strcmp(n, "every") ? 1 : !strcmp(n, "bool_or") ? 2 : 0;
}

/* The BOOLEAN argument a of bool aggregate x, or NULL with p->err. */
Expr *sql__bool_agg_arg(P *p, Ast *x, Expr *a)
{
    if (a->t.kind == TK_NULL)
        return sql__cast_to(p, a, type_make(TK_BOOL, true));
    if (a->t.kind != TK_BOOL) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a BOOLEAN argument, not %s", x->name,
             tname(a->t));
        return NULL;
    }
    return a;
}

/* Aggregates of other engines not implemented yet: named as such in the
   error wherever they appear (not "must appear in GROUP BY" about their
   argument, nor "function ... is not supported"). */
static const char *const agg_later[] = {
    NULL, /* none now (json_agg and json_object_agg came: bind_agg.c) */
};

bool sql__agg_later(P *p, Ast *x)
{
    static const char *const *later = agg_later;
    if (x->k != A_FUNC || x->over)
        return false;
    for (size_t i = 0; later[i]; i++)
        if (!strcmp(x->name, later[i])) {
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "aggregate function %s is not supported yet", x->name);
            return true;
        }
    return false;
}

Expr *sql__bind_agg_call(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    if (!ag || !ag->allowed) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "aggregate function %s is not allowed in %s",
             x->name, bc->clause);
        return NULL;
    }
    if (sql__set_agg_name(x->name)) /* bind_agg.c */
        return sql__bind_set_agg(p, bc, x);
    if (x->within) {
        perr(p, SL_ESEMANTIC, x->order_line, x->order_col,
             "%s is not an ordered-set aggregate (WITHIN GROUP)", x->name);
        return NULL;
    }
    for (int i = 0; i < x->norder; i++) { /* order-insensitive: checked, then ignored */
        AggCtx none = {0};
        BindCtx inner = {bc->s, &none, "ORDER BY in an aggregate"};
        if (!sql__bind(p, &inner, x->order[i].e))
            return NULL;
    }
    AggSpec sp = {0};
    Expr *arg = NULL;
    if (x->star) {
        if (strcmp(x->name, "count")) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s(*) is not valid; only COUNT(*)", x->name);
            return NULL;
        }
        sp.kind = AGG_COUNT_STAR;
        sp.out_t = type_make(TK_BIGINT, false);
    } else {
        if (x->args.n != 1) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s takes exactly one argument", x->name);
            return NULL;
        }
        BindCtx inner = {bc->s, NULL, "an aggregate argument"};
        AggCtx none = {0};
        inner.agg = &none; /* nested aggregates are not allowed */
        arg = sql__bind(p, &inner, x->args.v[0]);
        if (!arg)
            return NULL;
        SqlType at = arg->t;
        if (sql__bool_agg(x->name) && !(arg = sql__bool_agg_arg(p, x, arg)))
            return NULL;
        at = arg->t;
        if (at.kind == TK_NULL)
            arg = sql__cast_to(p, arg, at = type_make(TK_INT, true));
        sp.in_t = arg->t;
        if (sql__bool_agg(x->name)) {
            sp.kind = sql__bool_agg(x->name) == 1 ? AGG_MIN : AGG_MAX;
            sp.out_t = type_make(TK_BOOL, true);
        } else if (!strcmp(x->name, "count")) {
            sp.kind = AGG_COUNT;
            sp.out_t = type_make(TK_BIGINT, false);
        } else if (!strcmp(x->name, "min") || !strcmp(x->name, "max")) {
            sp.kind = !strcmp(x->name, "min") ? AGG_MIN : AGG_MAX;
            sp.out_t = arg->t;
            sp.out_t.nullable = 1;
        } else {
            if (!type_is_numeric(at.kind) && !type_is_interval(at.kind)) {
                perr(p, SL_ESEMANTIC, x->line, x->col,
                     "%s needs a numeric or interval argument, not %s", x->name, tname(at));
                return NULL;
            }
            sp.kind = !strcmp(x->name, "sum") ? AGG_SUM : AGG_AVG;
            if (type_is_interval(at.kind)) /* its microseconds or months summed */
                sp.out_t = at;
            else if (type_is_integer(at.kind))
                sp.out_t = type_make(sp.kind == AGG_SUM ? TK_BIGINT : TK_DOUBLE, true);
            else if (at.kind == TK_DECIMAL) {
                sp.out_t = at;
                sp.out_t.prec = DECIMAL_MAX_PREC;
            } else
                sp.out_t = type_make(TK_DOUBLE, true);
            sp.out_t.nullable = 1;
        }
        /* MIN/MAX(DISTINCT x) = MIN/MAX(x) */
        sp.distinct = x->distinct && sp.kind != AGG_MIN && sp.kind != AGG_MAX;
    }
    /* reuse an identical call */
    for (int i = 0; i < ag->ncalls; i++) {
        AggCall *c = &ag->calls[i];
        if (!c->grouping && c->spec.kind == sp.kind && c->spec.distinct == sp.distinct && ((!c->arg && !arg) || (c->arg && arg && sql__expr_equal(c->arg, arg))))
            return expr_col(p->a, ag->ngroup + i, c->spec.out_t);
    }
    AggCall *c = VEC_PUSH_ARENA(p->a, ag->calls, ag->ncalls, ag->cap);
    memset(c, 0, sizeof(*c));
    c->ast = x;
    c->spec = sp;
    c->arg = arg;
    return expr_col(p->a, ag->ngroup + ag->ncalls - 1, sp.out_t);
}

typedef struct FnDef {
    const char *name;
    int fn;
    int minargs, maxargs;
} FnDef;

static const FnDef fns[] = {
    {"abs", FN_ABS, 1, 1},        {"lower", FN_LOWER, 1, 1},      {"upper", FN_UPPER, 1, 1},
    {"char_length", FN_CHAR_LENGTH, 1, 1}, {"character_length", FN_CHAR_LENGTH, 1, 1},
    {"length", FN_CHAR_LENGTH, 1, 1}, {"substring", FN_SUBSTRING, 2, 3},
    {"substr", FN_SUBSTRING, 2, 3}, {"trim", FN_TRIM, 1, 3},      {"ltrim", FN_LTRIM, 1, 2},
    {"rtrim", FN_RTRIM, 1, 2},     {"replace", FN_REPLACE, 3, 3}, {"floor", FN_FLOOR, 1, 1},
    {"ceil", FN_CEIL, 1, 1},       {"ceiling", FN_CEIL, 1, 1},    {"round", FN_ROUND, 1, 2},
    {"mod", FN_MOD, 2, 2},         {"power", FN_POWER, 2, 2},     {"sqrt", FN_SQRT, 1, 1},
    {"ln", FN_LN, 1, 1},           {"exp", FN_EXP, 1, 1},         {"sign", FN_SIGN, 1, 1},
    {"position", FN_POSITION, 2, 2}, {"left", FN_LEFT, 2, 2},     {"right", FN_RIGHT, 2, 2},
    {"concat", FN_CONCAT, 1, 8},   {"initcap", FN_INITCAP, 1, 1}, {"btrim", FN_TRIM, 1, 2},
    {"split_index", FN_SPLIT_INDEX, 3, 3},
};

/* The unit argument of DATE_TRUNC / TIMESTAMPDIFF: a bare word (DAY) or a
   string literal ('day'); -1 when x is neither. */
static int unit_arg(Ast *x)
{
    if (x->k == A_COL && !x->qual)
        return time_unit_parse(x->name);
    if (x->k == A_STR)
        return time_unit_parse(x->str);
    return -1;
}

/* DATE_TRUNC(unit, x) (PostgreSQL order) or DATE_TRUNC(x, unit) (Calcite
   order), TIMESTAMP_TRUNC(x, unit), TIMESTAMPDIFF(unit, a, b). */
static Expr *bind_time_fn(P *p, BindCtx *bc, Ast *x)
{
    bool diff = !strcmp(x->name, "timestampdiff");
    int n = x->args.n;
    if (n != (diff ? 3 : 2)) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
        return NULL;
    }
    int ui = unit_arg(x->args.v[0]) >= 0 || diff ? 0 : 1;
    int unit = unit_arg(x->args.v[ui]);
    if (unit < 0) {
        perr(p, SL_ESEMANTIC, x->args.v[ui]->line, x->args.v[ui]->col,
             "%s needs a unit (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, "
             "MILLISECOND or MICROSECOND)", x->name);
        return NULL;
    }
    Expr *u = expr_const_i64(p->a, type_make(TK_BIGINT, false), unit);
    Expr *v[2];
    bool nul = false;
    for (int i = 0; i < n - 1; i++) {
        Ast *ax = x->args.v[diff ? i + 1 : 1 - ui];
        if (!(v[i] = sql__bind(p, bc, ax)))
            return NULL;
        TypeKind k = (TypeKind)v[i]->t.kind;
        if (k == TK_NULL)
            v[i] = sql__cast_to(p, v[i], type_make(k = diff ? TK_TIMESTAMP : TK_DATE, true));
        else if (type_is_string(k))
            v[i] = sql__cast_to(p, v[i], type_make(k = TK_TIMESTAMP, false));
        if (k == TK_TIMESTAMPTZ && diff) /* on the wall-clock time of its zone */
            v[i] = sql__cast_to(p, v[i], type_make(k = TK_TIMESTAMP, v[i]->t.nullable));
        if (k == TK_TIMESTAMPTZ) /* DATE_TRUNC: in the session zone (fn_time.c) */
            k = TK_TIMESTAMP;
        if (k != TK_DATE && k != TK_TIMESTAMP) {
            perr(p, SL_ESEMANTIC, ax->line, ax->col, "%s needs a DATE or TIMESTAMP, not %s",
                 x->name, tname(v[i]->t));
            return NULL;
        }
        if (diff)
            v[i] = sql__cast_to(p, v[i], type_make(TK_TIMESTAMP, false));
        nul = nul || v[i]->t.nullable;
    }
    Expr *e;
    if (diff) {
        e = sql__mk(p, E_FUNC, type_make(TK_BIGINT, nul), 3);
        e->a[0] = u;
        e->a[1] = v[0];
        e->a[2] = v[1];
        e->fn = FN_TIMESTAMPDIFF;
    } else {
        if (v[0]->t.kind == TK_DATE && unit > TU_DAY) /* finer than a day: no-op on a DATE */
            return v[0];
        SqlType rt = v[0]->t;
        rt.nullable = nul;
        e = sql__mk(p, E_FUNC, rt, 2);
        e->a[0] = v[0];
        e->a[1] = u;
        e->fn = FN_DATE_TRUNC;
    }
    return e;
}

/* timezone(zone, x), i.e. x AT TIME ZONE zone: a TIMESTAMPTZ gives the
   TIMESTAMP of its wall-clock time in zone, a TIMESTAMP (or DATE) the
   TIMESTAMPTZ of its wall-clock time read in zone; a string x is taken as a
   TIMESTAMPTZ (PostgreSQL). A constant zone is looked up here. */
static Expr *bind_timezone(P *p, BindCtx *bc, Ast *x)
{
    if (x->args.n != 2) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to timezone");
        return NULL;
    }
    Ast *za = x->args.v[0], *va = x->args.v[1];
    Expr *z = sql__bind(p, bc, za), *v = z ? sql__bind(p, bc, va) : NULL;
    if (!v)
        return NULL;
    TypeKind k = (TypeKind)v->t.kind;
    if (k == TK_NULL || type_is_string(k))
        v = sql__cast_to(p, v, type_tstz(p->tz, v->t.nullable)), k = TK_TIMESTAMPTZ;
    else if (k == TK_DATE)
        v = sql__cast_to(p, v, type_make(TK_TIMESTAMP, v->t.nullable)), k = TK_TIMESTAMP;
    if (k != TK_TIMESTAMP && k != TK_TIMESTAMPTZ) {
        perr(p, SL_ESEMANTIC, va->line, va->col,
             "AT TIME ZONE needs a TIMESTAMP or TIMESTAMP WITH TIME ZONE, not %s", tname(v->t));
        return NULL;
    }
    if (z->t.kind == TK_NULL)
        z = sql__cast_to(p, z, type_make(TK_VARCHAR, true));
    if (!type_is_string((TypeKind)z->t.kind)) {
        perr(p, SL_ESEMANTIC, za->line, za->col, "a time zone is a string ('Europe/Paris'), not %s",
             tname(z->t));
        return NULL;
    }
    if (z->k == E_CONST && !z->cnull) {
        Err e;
        err_init(&e);
        int id = tz_find(z->cs.p, z->cs.n, &e);
        if (id < 0) {
            perr(p, SL_ESEMANTIC, za->line, za->col, "%s", e.msg);
            return NULL;
        }
        z = expr_const_i64(p->a, type_make(TK_BIGINT, false), id);
    }
    bool nul = v->t.nullable || z->t.nullable;
    SqlType rt = k == TK_TIMESTAMPTZ ? type_make(TK_TIMESTAMP, nul) : type_tstz(p->tz, nul);
    Expr *e = sql__mk(p, E_FUNC, rt, 2);
    e->a[0] = v;
    e->a[1] = z;
    e->fn = k == TK_TIMESTAMPTZ ? FN_AT_TZ_LOCAL : FN_AT_TZ_INSTANT;
    return e;
}

bool sql__is_builtin_fn(const char *name)
{
    static const char *other[] = {
        "date_trunc", "timestamp_trunc", "timestampdiff", "coalesce", "nullif",
        "row_number", "rank", "dense_rank", "lag", "lead", "first_value", "last_value",
        "nth_value", "ntile", "percent_rank", "cume_dist", "extract", "cast", "overlay",
        "tumble", "hop", "session", "now", "current_date", "current_time",
        "current_timestamp", "localtime", "localtimestamp", "timezone", "date_part",
    };
    for (size_t i = 0; i < ARRAY_LEN(fns); i++)
        if (!strcmp(fns[i].name, name))
            return true;
    for (size_t i = 0; i < ARRAY_LEN(other); i++)
        if (!strcmp(other[i], name))
            return true;
    for (size_t i = 0; agg_later[i]; i++)
        if (!strcmp(agg_later[i], name))
            return true;
    return sql__is_agg_name(name) || sql__is_regex_fn(name) || sql__is_array_fn(name) ||
           sql__is_nested_fn(name) || sql__is_variant_fn(name);
}

Expr *sql__bind_func(P *p, BindCtx *bc, Ast *x)
{
    int n = x->args.n;
    Expr *args[8];
    int u = sql__udf_find(p, x->name);
    if (u >= 0) /* a SQL function (bind_udf.c) */
        return sql__bind_udf_call(p, bc, x, u);
    if (!strcmp(x->name, "now")) { /* plan_temporal.c takes the ones it can */
        perr(p, SL_EUNSUPPORTED, x->line, x->col,
             "NOW() / CURRENT_TIMESTAMP is supported only in a view's temporal filter: a "
             "conjunct of WHERE comparing a TIMESTAMP or TIMESTAMPTZ expression of the FROM "
             "rows with NOW() [+ or - a constant interval] by <, <=, > or >= (or BETWEEN)");
        return NULL;
    }
    if (x->over) /* plan_window.c */
        return sql__bind_window(p, bc, x);
    if (sql__is_agg_name(x->name))
        return sql__bind_agg_call(p, bc, x);
    if (sql__agg_later(p, x))
        return NULL;
    if (x->norder || x->within) {
        perr(p, SL_ESEMANTIC, x->order_line, x->order_col, "%s is not an aggregate function",
             x->name);
        return NULL;
    }
    if (x->star || x->distinct) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s is not an aggregate function", x->name);
        return NULL;
    }
    if (sql__is_array_fn(x->name))
        return sql__bind_array_fn(p, bc, x);
    if (sql__is_nested_fn(x->name))
        return sql__bind_nested_fn(p, bc, x);
    if (sql__is_variant_fn(x->name))
        return sql__bind_variant_fn(p, bc, x);
    if (n > 8) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "too many arguments to %s", x->name);
        return NULL;
    }
    if (!strcmp(x->name, "date_trunc") || !strcmp(x->name, "timestamp_trunc") ||
        !strcmp(x->name, "timestampdiff"))
        return bind_time_fn(p, bc, x);
    if (!strcmp(x->name, "timezone"))
        return bind_timezone(p, bc, x);
    /* COALESCE never evaluates what follows its first non-NULL literal, so
       an argument there that is not valid where it stands (e.g. a column
       outside GROUP BY, as SQLite allows) is dropped instead of rejected */
    int lit = -1;
    for (int i = 0; i < n; i++) {
        if (lit >= 0 && !strcmp(x->name, "coalesce")) {
            Err saved = *p->err;
            if (!(args[i] = sql__bind(p, bc, x->args.v[i]))) {
                *p->err = saved;
                n = i;
                break;
            }
            continue;
        }
        if (!(args[i] = sql__bind(p, bc, x->args.v[i])))
            return NULL;
        AstKind k = x->args.v[i]->k;
        if (lit < 0 && (k == A_INT || k == A_NUM || k == A_STR || k == A_BOOL || k == A_TYPED))
            lit = i;
    }
    if (!strcmp(x->name, "coalesce") || !strcmp(x->name, "nullif")) {
        bool co = !strcmp(x->name, "coalesce");
        if ((co && n < 1) || (!co && n != 2)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
            return NULL;
        }
        SqlType t = args[0]->t;
        for (int i = 1; i < n; i++)
            if (!sql__common_type(t, args[i]->t, &t)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s arguments have incompatible types",
                     x->name);
                return NULL;
            }
        if (t.kind == TK_NULL)
            t = type_make(TK_INT, true);
        bool nul = true;
        if (co)
            for (int i = 0; i < n; i++)
                nul = nul && args[i]->t.nullable;
        t.nullable = co ? nul : true;
        Expr *e = sql__mk(p, co ? E_COALESCE : E_NULLIF, t, n);
        for (int i = 0; i < n; i++)
            e->a[i] = sql__cast_to(p, args[i], t);
        return e;
    }
    if (sql__is_regex_fn(x->name)) /* bind_regex.c */
        return sql__bind_regex(p, x, args, n);
    for (size_t i = 0; i < ARRAY_LEN(fns); i++) {
        const FnDef *f = &fns[i];
        if (strcmp(f->name, x->name))
            continue;
        if (n < f->minargs || n > f->maxargs) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
            return NULL;
        }
        bool nul = false;
        for (int j = 0; j < n; j++) {
            if (args[j]->t.kind == TK_NULL)
                args[j] = sql__cast_to(p, args[j], type_make(TK_INT, true));
            nul = nul || args[j]->t.nullable;
        }
        SqlType t;
        SqlType a0 = args[0]->t;
        if ((f->fn == FN_TRIM || f->fn == FN_LTRIM || f->fn == FN_RTRIM) && n >= 2) {
            /* TRIM(s, chars), TRIM(side chars FROM s) = trim(s, chars, side) */
            Expr *e = sql__mk(p, E_FUNC, type_make(TK_VARCHAR, nul), 3);
            e->fn = FN_TRIM_CHARS;
            e->a[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, false));
            e->a[1] = sql__cast_to(p, args[1], type_make(TK_VARCHAR, false));
            e->a[2] = n == 3 ? sql__cast_to(p, args[2], type_make(TK_BIGINT, false))
                             : expr_const_i64(p->a, type_make(TK_BIGINT, false),
                                              f->fn == FN_LTRIM ? 1 : f->fn == FN_RTRIM ? 2 : 0);
            if (n == 3 && (!x->ival || f->fn != FN_TRIM)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
                return NULL;
            }
            return e;
        }
        switch (f->fn) {
        case FN_POSITION:
            t = type_make(TK_INT, nul);
            args[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, false));
            args[1] = sql__cast_to(p, args[1], type_make(TK_VARCHAR, false));
            break;
        case FN_LEFT: case FN_RIGHT: case FN_CONCAT: case FN_INITCAP:
            t = type_make(TK_VARCHAR, nul);
            for (int j = 0; j < n; j++)
                args[j] = sql__cast_to(p, args[j], (f->fn == FN_LEFT || f->fn == FN_RIGHT) && j == 1
                                                       ? type_make(TK_INT, false)
                                                       : type_make(TK_VARCHAR, false));
            break;
        case FN_LOWER: case FN_UPPER: case FN_TRIM: case FN_LTRIM: case FN_RTRIM:
        case FN_SUBSTRING: case FN_REPLACE:
            t = type_make(TK_VARCHAR, nul);
            args[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, false));
            for (int j = 1; j < n; j++)
                args[j] = sql__cast_to(p, args[j], f->fn == FN_SUBSTRING ? type_make(TK_INT, false)
                                                                    : type_make(TK_VARCHAR, false));
            break;
        case FN_SPLIT_INDEX: /* NULL also when the part does not exist */
            t = type_make(TK_VARCHAR, true);
            args[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, false));
            args[1] = sql__cast_to(p, args[1], type_make(TK_VARCHAR, false));
            args[2] = sql__cast_to(p, args[2], type_make(TK_INT, false));
            break;
        case FN_CHAR_LENGTH:
            t = type_make(TK_INT, nul);
            args[0] = sql__cast_to(p, args[0], type_make(TK_VARCHAR, false));
            break;
        case FN_ABS: case FN_FLOOR: case FN_CEIL: case FN_SIGN: case FN_ROUND:
            if (!type_is_numeric(a0.kind)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a numeric argument, not %s",
                     x->name, tname(a0));
                return NULL;
            }
            t = a0;
            t.nullable = nul;
            if (n == 2)
                args[1] = sql__cast_to(p, args[1], type_make(TK_INT, false));
            break;
        case FN_MOD: {
            Ast fake = *x;
            return sql__arith(p, &fake, OP_MOD, args[0], args[1]);
        }
        default: /* POWER, SQRT, LN, EXP: DOUBLE */
            t = type_make(TK_DOUBLE, true);
            for (int j = 0; j < n; j++) {
                if (!type_is_numeric(args[j]->t.kind)) {
                    perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs numeric arguments", x->name);
                    return NULL;
                }
                args[j] = sql__cast_to(p, args[j], type_make(TK_DOUBLE, false));
            }
            break;
        }
        Expr *e = sql__mk(p, E_FUNC, t, n);
        e->fn = f->fn;
        for (int j = 0; j < n; j++)
            e->a[j] = args[j];
        return e;
    }
    if (!sql__udf_not_yet(p, x))
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "function %s is not supported yet", x->name);
    return NULL;
}

/*
 * sql/plan.c - binder and planner: resolves names and types in the AST of
 * parser.c and lowers each statement into circuit nodes (circuit.h).
 *
 * Tables become OPK_SOURCE nodes. A view's query becomes, block by block:
 *   FROM items joined left-deep in the order written (single-item WHERE/ON
 *   conjuncts pushed below the joins as filters, equality conjuncts between
 *   the joined prefix and the next item used as join keys, the rest
 *   filtered after the last join) -> GROUP BY/aggregates (a MAP computing
 *   group keys and aggregate arguments, then OPK_AGG) -> HAVING and the
 *   select list (one MAP) -> DISTINCT -> set operations (OPK_UNION, +
 *   OPK_DISTINCT for UNION).
 * Expressions are bound with implicit numeric widening: operands of an
 * arithmetic or comparison operator are cast to a common type here, so the
 * evaluator sees same-typed operands (expr.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "../expr/text.h"
#include "ast.h"

typedef struct SCol {
    const char *qual; /* relation name or alias (may be NULL) */
    const char *name;
    SqlType t;
} SCol;

typedef struct Scope {
    SCol *c;
    int n;
} Scope;

typedef struct PRel { /* a planned relation: node + its columns' names */
    int node;
    Scope s;
} PRel;

typedef struct AggCall {
    Ast *ast;
    AggSpec spec;
    Expr *arg; /* over the FROM scope; NULL for COUNT(*) */
} AggCall;

typedef struct AggCtx {
    Expr **group; /* bound over the FROM scope */
    int ngroup;
    AggCall *calls;
    int ncalls, cap;
    bool allowed; /* aggregates may appear here */
} AggCtx;

typedef struct P {
    Arena *a;
    Circuit *c;
    Err *err;
    int cap_nodes, cap_rels;
    int owner; /* relation being planned (its index once added) */
} P;

static int perr(P *p, int code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int perr(P *p, int code, int line, int col, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_setpos(p->err, code, line, col, "%s", msg);
}

static const char *tname(SqlType t)
{
    static __thread char b[4][48];
    static __thread int i;
    i = (i + 1) % 4;
    return type_name(t, b[i], sizeof(b[i]));
}

/* ---- nodes ---- */

static CNode *add_node(P *p, OpKind k, int nin, int ncol)
{
    Circuit *c = p->c;
    if (c->nnodes == p->cap_nodes) {
        p->cap_nodes = p->cap_nodes ? p->cap_nodes * 2 : 32;
        CNode **v = arena_alloc(p->a, sizeof(CNode *) * (size_t)p->cap_nodes);
        if (c->nnodes)
            memcpy(v, c->nodes, sizeof(CNode *) * (size_t)c->nnodes);
        c->nodes = v;
    }
    CNode *n = arena_zalloc(p->a, sizeof(*n));
    n->id = c->nnodes;
    n->k = k;
    n->nin = nin;
    n->in = arena_zalloc(p->a, sizeof(int) * (size_t)(nin ? nin : 1));
    n->ncol = ncol;
    n->types = arena_zalloc(p->a, sizeof(SqlType) * (size_t)(ncol ? ncol : 1));
    n->rel = -1;
    n->owner = p->owner;
    c->nodes[c->nnodes++] = n;
    return n;
}

static Scope scope_new(P *p, int n)
{
    Scope s = {arena_zalloc(p->a, sizeof(SCol) * (size_t)(n ? n : 1)), n};
    return s;
}

/* ---- types ---- */

static int int_rank(TypeKind k)
{
    switch (k) {
    case TK_TINYINT: return 1;
    case TK_SMALLINT: return 2;
    case TK_INT: return 3;
    case TK_BIGINT: return 4;
    default: return 0;
    }
}

static int int_digits(TypeKind k)
{
    switch (k) {
    case TK_TINYINT: return 3;
    case TK_SMALLINT: return 5;
    case TK_INT: return 10;
    default: return 18;
    }
}

static SqlType decimal_of(SqlType t)
{
    if (t.kind == TK_DECIMAL)
        return t;
    SqlType d = type_make(TK_DECIMAL, t.nullable);
    d.prec = (uint8_t)int_digits(t.kind);
    d.scale = 0;
    return d;
}

/* Common type for comparison/union/CASE; false when none. */
static bool common_type(SqlType a, SqlType b, SqlType *out)
{
    SqlType r;
    bool nul = a.nullable || b.nullable;
    if (a.kind == TK_NULL) {
        r = b;
    } else if (b.kind == TK_NULL) {
        r = a;
    } else if (a.kind == b.kind) {
        r = a;
        if (a.kind == TK_DECIMAL) {
            int s = SL_MAX(a.scale, b.scale);
            int ip = SL_MAX(a.prec - a.scale, b.prec - b.scale);
            r.scale = (uint8_t)s;
            r.prec = (uint8_t)SL_MIN(DECIMAL_MAX_PREC, ip + s);
        } else if (type_is_string(a.kind)) {
            r.len = (a.len == b.len) ? a.len : VARCHAR_UNBOUNDED;
            if (a.len != b.len)
                r.kind = TK_VARCHAR;
        }
    } else if (type_is_integer(a.kind) && type_is_integer(b.kind)) {
        r = int_rank(a.kind) >= int_rank(b.kind) ? a : b;
    } else if (type_is_numeric(a.kind) && type_is_numeric(b.kind)) {
        if (a.kind == TK_DOUBLE || b.kind == TK_DOUBLE || a.kind == TK_REAL || b.kind == TK_REAL)
            r = type_make(TK_DOUBLE, nul);
        else
            return common_type(decimal_of(a), decimal_of(b), out);
    } else if (type_is_string(a.kind) && type_is_string(b.kind)) {
        r = type_make(TK_VARCHAR, nul);
    } else if ((a.kind == TK_DATE && b.kind == TK_TIMESTAMP) ||
               (a.kind == TK_TIMESTAMP && b.kind == TK_DATE)) {
        r = type_make(TK_TIMESTAMP, nul);
    } else if (type_is_string(a.kind) && b.kind != TK_BOOL) {
        r = b; /* string literal compared with a number or date: parse it */
    } else if (type_is_string(b.kind) && a.kind != TK_BOOL) {
        r = a;
    } else {
        return false;
    }
    r.nullable = nul;
    *out = r;
    return true;
}

static bool same_repr(SqlType a, SqlType b)
{
    if (a.kind != b.kind)
        return false;
    if (a.kind == TK_DECIMAL)
        return a.scale == b.scale && a.prec == b.prec;
    if (a.kind == TK_CHAR)
        return a.len == b.len;
    if (a.kind == TK_VARCHAR)
        return a.len == b.len;
    return true;
}

/* e converted to t (t.nullable is taken from e). */
static Expr *cast_to(P *p, Expr *e, SqlType t)
{
    t.nullable = e->t.nullable;
    if (same_repr(e->t, t))
        return e;
    if (e->k == E_CONST && e->cnull) {
        e->t = t;
        e->t.nullable = 1;
        return e;
    }
    Expr *c = expr_new(p->a, E_CAST, t, 1);
    c->a[0] = e;
    return c;
}

/* ---- expressions ---- */

typedef struct BindCtx {
    Scope *s;
    AggCtx *agg; /* non-NULL: binding above an aggregation */
    const char *clause; /* "WHERE", "GROUP BY", ... for messages */
} BindCtx;

static Expr *bind(P *p, BindCtx *bc, Ast *x);

static int resolve_col(P *p, Scope *s, Ast *x, int *out)
{
    int found = -1;
    for (int i = 0; i < s->n; i++) {
        if (strcasecmp(s->c[i].name, x->name) != 0)
            continue;
        if (x->qual && (!s->c[i].qual || strcasecmp(s->c[i].qual, x->qual) != 0))
            continue;
        if (found >= 0)
            return perr(p, SL_ESEMANTIC, x->line, x->col,
                        "column reference \"%s\" is ambiguous", x->name);
        found = i;
    }
    if (found < 0) {
        if (x->qual) {
            bool qual_known = false;
            for (int i = 0; i < s->n; i++)
                if (s->c[i].qual && !strcasecmp(s->c[i].qual, x->qual))
                    qual_known = true;
            if (!qual_known)
                return perr(p, SL_ESEMANTIC, x->line, x->col,
                            "unknown table or alias \"%s\" in column reference %s.%s", x->qual,
                            x->qual, x->name);
            return perr(p, SL_ESEMANTIC, x->line, x->col, "column \"%s\" not found in \"%s\"",
                        x->name, x->qual);
        }
        return perr(p, SL_ESEMANTIC, x->line, x->col, "column \"%s\" not found", x->name);
    }
    *out = found;
    return 0;
}

static Expr *bool_operand(P *p, Expr *e, Ast *at, const char *what)
{
    if (!e)
        return NULL;
    if (e->t.kind == TK_NULL)
        return cast_to(p, e, type_make(TK_BOOL, true));
    if (e->t.kind != TK_BOOL) {
        perr(p, SL_ESEMANTIC, at->line, at->col, "%s needs a BOOLEAN operand, not %s", what,
             tname(e->t));
        return NULL;
    }
    return e;
}

static Expr *mk(P *p, ExprKind k, SqlType t, int na)
{
    return expr_new(p->a, k, t, na);
}

static Expr *literal(P *p, Ast *x)
{
    switch (x->k) {
    case A_NULL: return expr_const_null(p->a, type_make(TK_NULL, true));
    case A_BOOL: return expr_const_i64(p->a, type_make(TK_BOOL, false), x->ival);
    case A_STR: {
        if (memchr(x->str, 0, x->slen)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "string literal contains a NUL byte");
            return NULL;
        }
        SqlType t = type_make(TK_VARCHAR, false);
        return expr_const_str(p->a, t, x->str, x->slen);
    }
    case A_INT: {
        errno = 0;
        long long v = strtoll(x->str, NULL, 10);
        if (errno == ERANGE) {
            /* too big for BIGINT: a DECIMAL or DOUBLE literal */
            x->k = A_NUM;
            return literal(p, x);
        }
        SqlType t = type_make(v >= INT32_MIN && v <= INT32_MAX ? TK_INT : TK_BIGINT, false);
        return expr_const_i64(p->a, t, v);
    }
    case A_NUM: {
        const char *s = x->str;
        bool expo = strpbrk(s, "eE") != NULL;
        int digits = 0, scale = 0;
        bool frac = false;
        for (const char *c = s; *c && !expo; c++) {
            if (*c == '.') {
                frac = true;
            } else if (isdigit((unsigned char)*c)) {
                if (digits || *c != '0' || frac)
                    digits++;
                if (frac)
                    scale++;
            }
        }
        if (!expo && digits <= DECIMAL_MAX_PREC && scale <= DECIMAL_MAX_PREC) {
            SqlType t = type_make(TK_DECIMAL, false);
            t.prec = (uint8_t)SL_MAX(SL_MAX(digits, scale), 1);
            t.scale = (uint8_t)scale;
            int64_t v;
            Err e = {0};
            if (text_parse(t, s, strlen(s), p->a, &v, NULL, NULL, &e) == 0)
                return expr_const_i64(p->a, t, v);
        }
        return expr_const_f64(p->a, type_make(TK_DOUBLE, false), strtod(s, NULL));
    }
    case A_TYPED: {
        int64_t v;
        Err e = {0};
        if (text_parse(x->type, x->str, x->slen, p->a, &v, NULL, NULL, &e)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s", e.msg);
            return NULL;
        }
        return expr_const_i64(p->a, x->type, v);
    }
    default: return NULL;
    }
}

static Expr *arith(P *p, Ast *x, int op, Expr *l, Expr *r)
{
    SqlType lt = l->t, rt = r->t, t;
    bool nul = lt.nullable || rt.nullable;
    if (lt.kind == TK_NULL && rt.kind == TK_NULL)
        lt = rt = type_make(TK_INT, true);
    else if (lt.kind == TK_NULL)
        lt = rt;
    else if (rt.kind == TK_NULL)
        rt = lt;
    if (op == OP_CONCAT) {
        SqlType vs = type_make(TK_VARCHAR, nul);
        Expr *e = mk(p, E_CONCAT, vs, 2);
        e->a[0] = cast_to(p, l, vs);
        e->a[1] = cast_to(p, r, vs);
        return e;
    }
    if (!type_is_numeric(lt.kind) || !type_is_numeric(rt.kind)) {
        static const char *ops[] = {"+", "-", "*", "/", "%"};
        if (type_is_temporal(lt.kind) || type_is_temporal(rt.kind))
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "date/time arithmetic (%s %s %s) is not supported yet", tname(lt), ops[op],
                 tname(rt));
        else
            perr(p, SL_ESEMANTIC, x->line, x->col, "operator %s is not defined for %s and %s",
                 ops[op], tname(lt), tname(rt));
        return NULL;
    }
    ExprKind k = op == OP_ADD ? E_ADD : op == OP_SUB ? E_SUB : op == OP_MUL ? E_MUL
               : op == OP_DIV ? E_DIV : E_MOD;
    if (!common_type(lt, rt, &t))
        return NULL;
    t.nullable = nul;
    if (t.kind == TK_DECIMAL) {
        SqlType dl = decimal_of(lt), dr = decimal_of(rt);
        if (k == E_MUL || k == E_DIV) {
            Expr *e = mk(p, k, t, 2);
            e->a[0] = cast_to(p, l, dl);
            e->a[1] = cast_to(p, r, dr);
            if (k == E_MUL) {
                e->t.scale = (uint8_t)SL_MIN(dl.scale + dr.scale, DECIMAL_MAX_PREC);
                e->t.prec = DECIMAL_MAX_PREC;
            } else {
                e->t.scale = (uint8_t)SL_MAX(SL_MAX(dl.scale, dr.scale), 6);
                e->t.prec = DECIMAL_MAX_PREC;
            }
            if (k == E_DIV)
                e->t.nullable = 1;
            return e;
        }
        if (k == E_ADD || k == E_SUB)
            t.prec = (uint8_t)SL_MIN(DECIMAL_MAX_PREC, t.prec + 1);
    }
    Expr *e = mk(p, k, t, 2);
    e->a[0] = cast_to(p, l, t);
    e->a[1] = cast_to(p, r, t);
    if (k == E_DIV || k == E_MOD)
        e->t.nullable = 1; /* division by zero gives NULL */
    return e;
}

static Expr *compare(P *p, Ast *at, ExprKind k, Expr *l, Expr *r)
{
    SqlType t;
    if (!common_type(l->t, r->t, &t)) {
        perr(p, SL_ESEMANTIC, at->line, at->col, "cannot compare %s with %s", tname(l->t),
             tname(r->t));
        return NULL;
    }
    if (t.kind == TK_NULL)
        t = type_make(TK_INT, true);
    Expr *e = mk(p, k, type_make(TK_BOOL, l->t.nullable || r->t.nullable), 2);
    e->a[0] = cast_to(p, l, t);
    e->a[1] = cast_to(p, r, t);
    return e;
}

static Expr *nary_bool(P *p, ExprKind k, Expr *l, Expr *r)
{
    int n = (l->k == k ? l->na : 1) + (r->k == k ? r->na : 1), i = 0;
    Expr *e = mk(p, k, type_make(TK_BOOL, l->t.nullable || r->t.nullable), n);
    for (int j = 0; j < (l->k == k ? l->na : 1); j++)
        e->a[i++] = l->k == k ? l->a[j] : l;
    for (int j = 0; j < (r->k == k ? r->na : 1); j++)
        e->a[i++] = r->k == k ? r->a[j] : r;
    return e;
}

static bool is_agg_name(const char *n)
{
    return !strcmp(n, "count") || !strcmp(n, "sum") || !strcmp(n, "avg") || !strcmp(n, "min") ||
           !strcmp(n, "max");
}

static bool expr_equal(const Expr *a, const Expr *b)
{
    if (a->k != b->k || a->na != b->na || a->t.kind != b->t.kind || a->t.scale != b->t.scale)
        return false;
    switch (a->k) {
    case E_COL:
        return a->col == b->col;
    case E_CONST:
        if (a->cnull || b->cnull)
            return a->cnull == b->cnull;
        if (type_phys(a->t.kind) == PHYS_STR)
            return a->cs.n == b->cs.n && !memcmp(a->cs.p, b->cs.p, a->cs.n);
        if (type_phys(a->t.kind) == PHYS_F64)
            return a->cf == b->cf;
        return a->ci == b->ci;
    case E_FUNC:
        if (a->fn != b->fn)
            return false;
        break;
    default:
        break;
    }
    for (int i = 0; i < a->na; i++)
        if (!expr_equal(a->a[i], b->a[i]))
            return false;
    return true;
}

static Expr *bind_agg_call(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    if (!ag || !ag->allowed) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "aggregate function %s is not allowed in %s",
             x->name, bc->clause);
        return NULL;
    }
    if (x->distinct) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "%s(DISTINCT ...) is not supported yet",
             x->name);
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
        arg = bind(p, &inner, x->args.v[0]);
        if (!arg)
            return NULL;
        SqlType at = arg->t;
        if (at.kind == TK_NULL)
            arg = cast_to(p, arg, at = type_make(TK_INT, true));
        sp.in_t = arg->t;
        if (!strcmp(x->name, "count")) {
            sp.kind = AGG_COUNT;
            sp.out_t = type_make(TK_BIGINT, false);
        } else if (!strcmp(x->name, "min") || !strcmp(x->name, "max")) {
            sp.kind = !strcmp(x->name, "min") ? AGG_MIN : AGG_MAX;
            sp.out_t = arg->t;
            sp.out_t.nullable = 1;
        } else {
            if (!type_is_numeric(at.kind)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs a numeric argument, not %s",
                     x->name, tname(at));
                return NULL;
            }
            sp.kind = !strcmp(x->name, "sum") ? AGG_SUM : AGG_AVG;
            if (type_is_integer(at.kind))
                sp.out_t = type_make(sp.kind == AGG_SUM ? TK_BIGINT : TK_DOUBLE, true);
            else if (at.kind == TK_DECIMAL) {
                sp.out_t = at;
                sp.out_t.prec = DECIMAL_MAX_PREC;
            } else
                sp.out_t = type_make(TK_DOUBLE, true);
            sp.out_t.nullable = 1;
        }
    }
    /* reuse an identical call */
    for (int i = 0; i < ag->ncalls; i++) {
        AggCall *c = &ag->calls[i];
        if (c->spec.kind == sp.kind && ((!c->arg && !arg) || (c->arg && arg && expr_equal(c->arg, arg))))
            return expr_col(p->a, ag->ngroup + i, c->spec.out_t);
    }
    if (ag->ncalls == ag->cap) {
        ag->cap = ag->cap ? ag->cap * 2 : 8;
        AggCall *v = arena_alloc(p->a, sizeof(AggCall) * (size_t)ag->cap);
        if (ag->ncalls)
            memcpy(v, ag->calls, sizeof(AggCall) * (size_t)ag->ncalls);
        ag->calls = v;
    }
    AggCall *c = &ag->calls[ag->ncalls++];
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
    {"substr", FN_SUBSTRING, 2, 3}, {"trim", FN_TRIM, 1, 1},      {"ltrim", FN_LTRIM, 1, 1},
    {"rtrim", FN_RTRIM, 1, 1},     {"replace", FN_REPLACE, 3, 3}, {"floor", FN_FLOOR, 1, 1},
    {"ceil", FN_CEIL, 1, 1},       {"ceiling", FN_CEIL, 1, 1},    {"round", FN_ROUND, 1, 2},
    {"mod", FN_MOD, 2, 2},         {"power", FN_POWER, 2, 2},     {"sqrt", FN_SQRT, 1, 1},
    {"ln", FN_LN, 1, 1},           {"exp", FN_EXP, 1, 1},         {"sign", FN_SIGN, 1, 1},
};

static Expr *bind_func(P *p, BindCtx *bc, Ast *x)
{
    int n = x->args.n;
    Expr *args[8];
    if (is_agg_name(x->name))
        return bind_agg_call(p, bc, x);
    if (x->star || x->distinct) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "%s is not an aggregate function", x->name);
        return NULL;
    }
    if (n > 8) {
        perr(p, SL_ESEMANTIC, x->line, x->col, "too many arguments to %s", x->name);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!(args[i] = bind(p, bc, x->args.v[i])))
            return NULL;
    if (!strcmp(x->name, "coalesce") || !strcmp(x->name, "nullif")) {
        bool co = !strcmp(x->name, "coalesce");
        if ((co && n < 1) || (!co && n != 2)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "wrong number of arguments to %s", x->name);
            return NULL;
        }
        SqlType t = args[0]->t;
        for (int i = 1; i < n; i++)
            if (!common_type(t, args[i]->t, &t)) {
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
        Expr *e = mk(p, co ? E_COALESCE : E_NULLIF, t, n);
        for (int i = 0; i < n; i++)
            e->a[i] = cast_to(p, args[i], t);
        return e;
    }
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
                args[j] = cast_to(p, args[j], type_make(TK_INT, true));
            nul = nul || args[j]->t.nullable;
        }
        SqlType t;
        SqlType a0 = args[0]->t;
        switch (f->fn) {
        case FN_LOWER: case FN_UPPER: case FN_TRIM: case FN_LTRIM: case FN_RTRIM:
        case FN_SUBSTRING: case FN_REPLACE:
            t = type_make(TK_VARCHAR, nul);
            args[0] = cast_to(p, args[0], type_make(TK_VARCHAR, false));
            for (int j = 1; j < n; j++)
                args[j] = cast_to(p, args[j], f->fn == FN_SUBSTRING ? type_make(TK_INT, false)
                                                                    : type_make(TK_VARCHAR, false));
            break;
        case FN_CHAR_LENGTH:
            t = type_make(TK_INT, nul);
            args[0] = cast_to(p, args[0], type_make(TK_VARCHAR, false));
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
                args[1] = cast_to(p, args[1], type_make(TK_INT, false));
            break;
        case FN_MOD: {
            Ast fake = *x;
            return arith(p, &fake, OP_MOD, args[0], args[1]);
        }
        default: /* POWER, SQRT, LN, EXP: DOUBLE */
            t = type_make(TK_DOUBLE, true);
            for (int j = 0; j < n; j++) {
                if (!type_is_numeric(args[j]->t.kind)) {
                    perr(p, SL_ESEMANTIC, x->line, x->col, "%s needs numeric arguments", x->name);
                    return NULL;
                }
                args[j] = cast_to(p, args[j], type_make(TK_DOUBLE, false));
            }
            break;
        }
        Expr *e = mk(p, E_FUNC, t, n);
        e->fn = f->fn;
        for (int j = 0; j < n; j++)
            e->a[j] = args[j];
        return e;
    }
    perr(p, SL_EUNSUPPORTED, x->line, x->col, "function %s is not supported yet", x->name);
    return NULL;
}

static Expr *bind_case(P *p, BindCtx *bc, Ast *x)
{
    int nw = x->args.n / 2;
    int na = nw * 2 + (x->b ? 1 : 0);
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)na);
    Expr *operand = NULL;
    if (x->a && !(operand = bind(p, bc, x->a)))
        return NULL;
    SqlType t = type_make(TK_NULL, true);
    for (int i = 0; i < nw; i++) {
        Ast *wa = x->args.v[2 * i];
        Expr *w = bind(p, bc, wa);
        if (!w)
            return NULL;
        if (operand && !(w = compare(p, wa, E_EQ, operand, w)))
            return NULL;
        if (!(w = bool_operand(p, w, wa, "WHEN")))
            return NULL;
        v[2 * i] = w;
        if (!(v[2 * i + 1] = bind(p, bc, x->args.v[2 * i + 1])))
            return NULL;
    }
    if (x->b && !(v[na - 1] = bind(p, bc, x->b)))
        return NULL;
    bool nul = !x->b;
    for (int i = 0; i < na; i++) {
        if (i < nw * 2 && i % 2 == 0)
            continue;
        if (!common_type(t, v[i]->t, &t)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "CASE branches have incompatible types %s and %s",
                 tname(t), tname(v[i]->t));
            return NULL;
        }
        nul = nul || v[i]->t.nullable;
    }
    if (t.kind == TK_NULL)
        t = type_make(TK_INT, true);
    t.nullable = nul;
    Expr *e = mk(p, E_CASE, t, na);
    for (int i = 0; i < na; i++)
        e->a[i] = (i < nw * 2 && i % 2 == 0) ? v[i] : cast_to(p, v[i], t);
    return e;
}

static Expr *bind_inner(P *p, BindCtx *bc, Ast *x)
{
    Expr *l, *r;
    switch (x->k) {
    case A_COL: {
        int i = 0;
        if (resolve_col(p, bc->s, x, &i))
            return NULL;
        return expr_col(p->a, i, bc->s->c[i].t);
    }
    case A_STAR:
        perr(p, SL_ESEMANTIC, x->line, x->col, "* is not allowed here");
        return NULL;
    case A_INT: case A_NUM: case A_STR: case A_NULL: case A_BOOL: case A_TYPED:
        return literal(p, x);
    case A_BIN:
        if (!(l = bind(p, bc, x->a)) || !(r = bind(p, bc, x->b)))
            return NULL;
        switch (x->op) {
        case OP_AND: case OP_OR:
            if (!(l = bool_operand(p, l, x->a, x->op == OP_AND ? "AND" : "OR")) ||
                !(r = bool_operand(p, r, x->b, x->op == OP_AND ? "AND" : "OR")))
                return NULL;
            return nary_bool(p, x->op == OP_AND ? E_AND : E_OR, l, r);
        case OP_EQ: return compare(p, x, E_EQ, l, r);
        case OP_NE: return compare(p, x, E_NE, l, r);
        case OP_LT: return compare(p, x, E_LT, l, r);
        case OP_LE: return compare(p, x, E_LE, l, r);
        case OP_GT: return compare(p, x, E_GT, l, r);
        case OP_GE: return compare(p, x, E_GE, l, r);
        default: return arith(p, x, x->op, l, r);
        }
    case A_UN:
        if (!(l = bind(p, bc, x->a)))
            return NULL;
        if (x->op == OP_NOT) {
            if (!(l = bool_operand(p, l, x->a, "NOT")))
                return NULL;
            Expr *e = mk(p, E_NOT, l->t, 1);
            e->a[0] = l;
            return e;
        }
        if (l->t.kind == TK_NULL)
            l = cast_to(p, l, type_make(TK_INT, true));
        if (!type_is_numeric(l->t.kind)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "unary - needs a numeric operand, not %s",
                 tname(l->t));
            return NULL;
        } else {
            Expr *e = mk(p, E_NEG, l->t, 1);
            e->a[0] = l;
            return e;
        }
    case A_FUNC:
        return bind_func(p, bc, x);
    case A_CASE:
        return bind_case(p, bc, x);
    case A_CAST: {
        if (!(l = bind(p, bc, x->a)))
            return NULL;
        SqlType t = x->type;
        t.nullable = l->t.nullable;
        Expr *e = mk(p, E_CAST, t, 1);
        if (l->k == E_CONST && l->cnull) {
            l->t = t;
            l->t.nullable = 1;
            return l;
        }
        e->a[0] = l;
        return same_repr(l->t, t) ? l : e;
    }
    case A_BETWEEN: {
        Expr *v = bind(p, bc, x->a), *lo, *hi;
        if (!v || !(lo = bind(p, bc, x->b)) || !(hi = bind(p, bc, x->c)))
            return NULL;
        Expr *a = compare(p, x, E_GE, v, lo), *b = a ? compare(p, x, E_LE, v, hi) : NULL;
        if (!b)
            return NULL;
        Expr *e = nary_bool(p, E_AND, a, b);
        if (x->negated) {
            Expr *n = mk(p, E_NOT, e->t, 1);
            n->a[0] = e;
            e = n;
        }
        return e;
    }
    case A_IN: {
        int n = x->args.n;
        Expr *v = bind(p, bc, x->a);
        if (!v)
            return NULL;
        Expr **items = arena_alloc(p->a, sizeof(Expr *) * (size_t)n);
        SqlType t = v->t;
        bool nul = v->t.nullable;
        for (int i = 0; i < n; i++) {
            if (!(items[i] = bind(p, bc, x->args.v[i])))
                return NULL;
            if (!common_type(t, items[i]->t, &t)) {
                perr(p, SL_ESEMANTIC, x->args.v[i]->line, x->args.v[i]->col,
                     "cannot compare %s with %s in IN list", tname(v->t), tname(items[i]->t));
                return NULL;
            }
            nul = nul || items[i]->t.nullable;
        }
        if (t.kind == TK_NULL)
            t = type_make(TK_INT, true);
        Expr *e = mk(p, E_IN, type_make(TK_BOOL, nul), n + 1);
        e->a[0] = cast_to(p, v, t);
        for (int i = 0; i < n; i++)
            e->a[i + 1] = cast_to(p, items[i], t);
        if (x->negated) {
            Expr *ne = mk(p, E_NOT, e->t, 1);
            ne->a[0] = e;
            e = ne;
        }
        return e;
    }
    case A_ISNULL: {
        if (!(l = bind(p, bc, x->a)))
            return NULL;
        Expr *e = mk(p, x->negated ? E_ISNOTNULL : E_ISNULL, type_make(TK_BOOL, false), 1);
        e->a[0] = l;
        return e;
    }
    case A_ISBOOL: {
        if (!(l = bind(p, bc, x->a)) || !(l = bool_operand(p, l, x->a, "IS TRUE/FALSE")))
            return NULL;
        /* IS NOT TRUE = NOT (IS TRUE), never NULL */
        Expr *e = mk(p, x->ival ? E_ISTRUE : E_ISFALSE, type_make(TK_BOOL, false), 1);
        e->a[0] = l;
        if (x->negated) {
            Expr *n = mk(p, E_NOT, e->t, 1);
            n->a[0] = e;
            e = n;
        }
        return e;
    }
    case A_LIKE: {
        Expr *esc = NULL;
        if (!(l = bind(p, bc, x->a)) || !(r = bind(p, bc, x->b)))
            return NULL;
        if (x->c && !(esc = bind(p, bc, x->c)))
            return NULL;
        SqlType vs = type_make(TK_VARCHAR, false);
        Expr *e = mk(p, E_LIKE, type_make(TK_BOOL, l->t.nullable || r->t.nullable ||
                                                       (esc && esc->t.nullable)), esc ? 3 : 2);
        e->a[0] = cast_to(p, l, vs);
        e->a[1] = cast_to(p, r, vs);
        if (esc)
            e->a[2] = cast_to(p, esc, vs);
        if (x->negated) {
            Expr *n = mk(p, E_NOT, e->t, 1);
            n->a[0] = e;
            e = n;
        }
        return e;
    }
    case A_EXTRACT: {
        static const struct { const char *n; int fn; } fields[] = {
            {"year", FN_EXTRACT_YEAR},     {"month", FN_EXTRACT_MONTH},
            {"day", FN_EXTRACT_DAY},       {"hour", FN_EXTRACT_HOUR},
            {"minute", FN_EXTRACT_MINUTE}, {"second", FN_EXTRACT_SECOND},
            {"dow", FN_EXTRACT_DOW},       {"doy", FN_EXTRACT_DOY},
            {"epoch", FN_EXTRACT_EPOCH},
        };
        if (!(l = bind(p, bc, x->a)))
            return NULL;
        if (!type_is_temporal(l->t.kind)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "EXTRACT needs a DATE, TIME or TIMESTAMP, not %s",
                 tname(l->t));
            return NULL;
        }
        for (size_t i = 0; i < ARRAY_LEN(fields); i++)
            if (!strcasecmp(fields[i].n, x->name)) {
                Expr *e = mk(p, E_FUNC, type_make(TK_BIGINT, l->t.nullable), 1);
                e->fn = fields[i].fn;
                e->a[0] = l;
                return e;
            }
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "EXTRACT field %s is not supported yet", x->name);
        return NULL;
    }
    case A_SUBQUERY:
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "subqueries in expressions are not supported yet");
        return NULL;
    }
    perr(p, SL_EUNSUPPORTED, x->line, x->col, "expression not supported yet");
    return NULL;
}

/* Bind x. Above an aggregation, a subtree equal to a GROUP BY expression
   becomes a reference to the group column; bare columns elsewhere are an
   error; aggregate calls become references to their output column. */
static Expr *bind(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    if (!ag || !ag->allowed)
        return bind_inner(p, bc, x);
    if (x->k == A_FUNC && is_agg_name(x->name))
        return bind_agg_call(p, bc, x);
    /* try as a group expression */
    if (x->k != A_INT && x->k != A_NUM && x->k != A_STR && x->k != A_NULL && x->k != A_BOOL &&
        x->k != A_TYPED) {
        Err save = *p->err, tmp = {0};
        Err *orig = p->err;
        AggCtx none = {0};
        BindCtx plain = {bc->s, &none, bc->clause};
        p->err = &tmp;
        Expr *e = bind_inner(p, &plain, x);
        p->err = orig;
        *p->err = save;
        if (e) {
            for (int i = 0; i < ag->ngroup; i++)
                if (expr_equal(e, ag->group[i]))
                    return expr_col(p->a, i, ag->group[i]->t);
        }
        if (x->k == A_COL) {
            if (!e) /* unknown column: report that */
                return bind_inner(p, &plain, x);
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "column \"%s\" must appear in GROUP BY or be used in an aggregate function",
                 x->name);
            return NULL;
        }
    }
    /* not a group expression as a whole: bind its children in agg mode */
    BindCtx up = {bc->s, ag, bc->clause};
    return bind_inner(p, &up, x);
}

/* ---- relations ---- */

static int find_rel(P *p, const char *name)
{
    return circuit_find_rel(p->c, name);
}

static int plan_query(P *p, Select *q, PRel *out);

static Expr *shift_cols(P *p, Expr *e, int delta)
{
    Expr *c = arena_alloc(p->a, sizeof(*c));
    *c = *e;
    if (e->k == E_COL)
        c->col += delta;
    if (e->na) {
        c->a = arena_alloc(p->a, sizeof(Expr *) * (size_t)e->na);
        for (int i = 0; i < e->na; i++)
            c->a[i] = shift_cols(p, e->a[i], delta);
    }
    return c;
}

/* Bitmask-free column range check: does e only reference [lo, hi)? */
static bool refs_within(const Expr *e, int lo, int hi)
{
    if (e->k == E_COL && (e->col < lo || e->col >= hi))
        return false;
    for (int i = 0; i < e->na; i++)
        if (!refs_within(e->a[i], lo, hi))
            return false;
    return true;
}

static bool refs_any(const Expr *e)
{
    if (e->k == E_COL)
        return true;
    for (int i = 0; i < e->na; i++)
        if (refs_any(e->a[i]))
            return true;
    return false;
}

static int map_node(P *p, int in, Expr *filter, Expr **proj, int nproj)
{
    CNode *n = add_node(p, OPK_MAP, 1, nproj);
    n->in[0] = in;
    n->filter = filter;
    n->proj = proj;
    for (int i = 0; i < nproj; i++)
        n->types[i] = proj[i]->t;
    return n->id;
}

static Expr **identity_proj(P *p, const CNode *src, int extra)
{
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)(src->ncol + extra + 1));
    for (int i = 0; i < src->ncol; i++)
        v[i] = expr_col(p->a, i, src->types[i]);
    return v;
}

static Expr *and_all(P *p, Expr **v, int n)
{
    if (n == 0)
        return NULL;
    Expr *e = v[0];
    for (int i = 1; i < n; i++)
        e = nary_bool(p, E_AND, e, v[i]);
    return e;
}

typedef struct Item {
    PRel r;
    int off; /* first column in the combined scope */
} Item;

static int plan_from_leaf(P *p, FromItem *f, PRel *out)
{
    if (f->k == F_SUBQUERY) {
        if (plan_query(p, f->sub, out))
            return p->err->code;
        for (int i = 0; i < out->s.n; i++)
            out->s.c[i].qual = f->alias;
        return 0;
    }
    int r = find_rel(p, f->name);
    if (r < 0)
        return perr(p, SL_ESEMANTIC, f->line, f->col, "table or view \"%s\" does not exist",
                    f->name);
    Relation *rel = &p->c->rels[r];
    out->node = rel->node;
    out->s = scope_new(p, rel->ncol);
    for (int i = 0; i < rel->ncol; i++) {
        out->s.c[i].qual = f->alias ? f->alias : rel->name;
        out->s.c[i].name = rel->colnames[i];
        out->s.c[i].t = rel->types[i];
    }
    return 0;
}

/* Flatten the FROM clause into leaves; ON conditions go to *conds. */
static int collect_from(P *p, FromItem *f, FromItem ***leaves, int *nleaves, Ast ***conds,
                        int *nconds)
{
    if (f->k != F_JOIN) {
        FromItem **v = arena_alloc(p->a, sizeof(FromItem *) * (size_t)(*nleaves + 1));
        if (*nleaves)
            memcpy(v, *leaves, sizeof(FromItem *) * (size_t)*nleaves);
        v[(*nleaves)++] = f;
        *leaves = v;
        return 0;
    }
    if (f->jk == J_LEFT || f->jk == J_RIGHT || f->jk == J_FULL)
        return perr(p, SL_EUNSUPPORTED, f->line, f->col,
                    "%s OUTER JOIN is not supported yet",
                    f->jk == J_LEFT ? "LEFT" : f->jk == J_RIGHT ? "RIGHT" : "FULL");
    if (f->natural || f->nusing)
        return perr(p, SL_EUNSUPPORTED, f->line, f->col, "%s is not supported yet",
                    f->natural ? "NATURAL JOIN" : "JOIN ... USING");
    if (collect_from(p, f->l, leaves, nleaves, conds, nconds) ||
        collect_from(p, f->r, leaves, nleaves, conds, nconds))
        return p->err->code;
    if (f->on) {
        Ast **v = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*nconds + 1));
        if (*nconds)
            memcpy(v, *conds, sizeof(Ast *) * (size_t)*nconds);
        v[(*nconds)++] = f->on;
        *conds = v;
    }
    return 0;
}

static void split_and(P *p, Ast *x, Ast ***v, int *n)
{
    if (x->k == A_BIN && x->op == OP_AND) {
        split_and(p, x->a, v, n);
        split_and(p, x->b, v, n);
        return;
    }
    Ast **nv = arena_alloc(p->a, sizeof(Ast *) * (size_t)(*n + 1));
    if (*n)
        memcpy(nv, *v, sizeof(Ast *) * (size_t)*n);
    nv[(*n)++] = x;
    *v = nv;
}

/* Make key expressions into plain NOT NULL columns of type kt: appends
   computed columns (and filters NULL keys) with a MAP when needed. */
static int join_side(P *p, int node, Expr **keys, int nkeys, const SqlType *kt, int **cols_out)
{
    CNode *src = p->c->nodes[node];
    int *cols = arena_alloc(p->a, sizeof(int) * (size_t)nkeys);
    bool need = false;
    for (int i = 0; i < nkeys; i++) {
        if (keys[i]->k == E_COL && !keys[i]->t.nullable && same_repr(keys[i]->t, kt[i]))
            cols[i] = keys[i]->col;
        else
            need = true;
    }
    if (need) {
        Expr **proj = identity_proj(p, src, nkeys);
        Expr **nn = arena_alloc(p->a, sizeof(Expr *) * (size_t)nkeys);
        int nnn = 0, np = src->ncol;
        for (int i = 0; i < nkeys; i++) {
            if (keys[i]->t.nullable) {
                Expr *t = mk(p, E_ISNOTNULL, type_make(TK_BOOL, false), 1);
                t->a[0] = keys[i];
                nn[nnn++] = t;
            }
            SqlType t = kt[i];
            t.nullable = 0;
            Expr *k = cast_to(p, keys[i], t);
            if (k == keys[i]) { /* same repr, only nullability differs */
                k = arena_alloc(p->a, sizeof(*k));
                *k = *keys[i];
            }
            k->t.nullable = 0;
            proj[np] = k;
            cols[i] = np++;
        }
        node = map_node(p, node, and_all(p, nn, nnn), proj, np);
    }
    *cols_out = cols;
    return node;
}

/* Plan the FROM clause and WHERE; *residual is the conjunction of the
   conditions left to filter after the joins (NULL when none). */
static int plan_from(P *p, Select *q, PRel *out, Expr **residual)
{
    FromItem **leaves = NULL;
    Ast **conds = NULL, **conj = NULL;
    int nleaves = 0, nconds = 0, nconj = 0;
    for (int i = 0; i < q->nfrom; i++)
        if (collect_from(p, q->from[i], &leaves, &nleaves, &conds, &nconds))
            return p->err->code;
    if (q->where)
        split_and(p, q->where, &conj, &nconj);
    for (int i = 0; i < nconds; i++)
        split_and(p, conds[i], &conj, &nconj);

    Item *items = arena_zalloc(p->a, sizeof(Item) * (size_t)nleaves);
    int total = 0;
    for (int i = 0; i < nleaves; i++) {
        if (plan_from_leaf(p, leaves[i], &items[i].r))
            return p->err->code;
        items[i].off = total;
        total += items[i].r.s.n;
    }
    /* combined scope in FROM order */
    Scope all = scope_new(p, total);
    for (int i = 0; i < nleaves; i++)
        memcpy(all.c + items[i].off, items[i].r.s.c, sizeof(SCol) * (size_t)items[i].r.s.n);

    /* bind every conjunct over the combined scope */
    Expr **ce = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    bool *used = arena_zalloc(p->a, (size_t)(nconj + 1));
    for (int i = 0; i < nconj; i++) {
        AggCtx none = {0};
        BindCtx bc = {&all, &none, "WHERE or ON"};
        if (!(ce[i] = bind(p, &bc, conj[i])) ||
            !(ce[i] = bool_operand(p, ce[i], conj[i], "WHERE/ON")))
            return p->err->code;
    }
    /* push single-item conjuncts below the joins */
    for (int k = 0; k < nleaves; k++) {
        Item *it = &items[k];
        int lo = it->off, hi = it->off + it->r.s.n;
        Expr **f = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        int nf = 0;
        for (int i = 0; i < nconj; i++)
            if (!used[i] && refs_any(ce[i]) && refs_within(ce[i], lo, hi)) {
                f[nf++] = shift_cols(p, ce[i], -lo);
                used[i] = true;
            }
        if (nf) {
            CNode *src = p->c->nodes[it->r.node];
            it->r.node = map_node(p, it->r.node, and_all(p, f, nf),
                                  identity_proj(p, src, 0), src->ncol);
        }
    }
    /* left-deep joins in FROM order */
    int cur = items[0].r.node;
    int curcols = items[0].r.s.n;
    for (int k = 1; k < nleaves; k++) {
        Item *it = &items[k];
        int lo = it->off, hi = it->off + it->r.s.n;
        Expr **lk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        Expr **rk = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
        SqlType *kt = arena_alloc(p->a, sizeof(SqlType) * (size_t)(nconj + 1));
        int nk = 0;
        for (int i = 0; i < nconj; i++) {
            Expr *e = ce[i];
            if (used[i] || e->k != E_EQ)
                continue;
            Expr *a = e->a[0], *b = e->a[1];
            if (!refs_any(a) || !refs_any(b))
                continue;
            if (refs_within(a, 0, lo) && refs_within(b, lo, hi)) {
                /* a is left, b is right */
            } else if (refs_within(b, 0, lo) && refs_within(a, lo, hi)) {
                Expr *t = a;
                a = b;
                b = t;
            } else
                continue;
            lk[nk] = a;
            rk[nk] = shift_cols(p, b, -lo);
            kt[nk] = a->t; /* compare() already cast both to one type */
            nk++;
            used[i] = true;
        }
        int *lcols, *rcols;
        int lnode = join_side(p, cur, lk, nk, kt, &lcols);
        int rnode = join_side(p, it->r.node, rk, nk, kt, &rcols);
        CNode *ln = p->c->nodes[lnode], *rn = p->c->nodes[rnode];
        CNode *j = add_node(p, OPK_JOIN, 2, ln->ncol + rn->ncol);
        j->in[0] = lnode;
        j->in[1] = rnode;
        j->nkeys = nk;
        j->lkeys = lcols;
        j->rkeys = rcols;
        memcpy(j->types, ln->types, sizeof(SqlType) * (size_t)ln->ncol);
        memcpy(j->types + ln->ncol, rn->types, sizeof(SqlType) * (size_t)rn->ncol);
        cur = j->id;
        if (ln->ncol != curcols || rn->ncol != it->r.s.n) {
            /* drop computed key columns */
            Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)(curcols + it->r.s.n));
            for (int i = 0; i < curcols; i++)
                proj[i] = expr_col(p->a, i, ln->types[i]);
            for (int i = 0; i < it->r.s.n; i++)
                proj[curcols + i] = expr_col(p->a, ln->ncol + i, rn->types[i]);
            cur = map_node(p, cur, NULL, proj, curcols + it->r.s.n);
        }
        curcols += it->r.s.n;
    }
    int nres = 0;
    Expr **rese = arena_alloc(p->a, sizeof(Expr *) * (size_t)(nconj + 1));
    for (int i = 0; i < nconj; i++)
        if (!used[i])
            rese[nres++] = ce[i];
    out->node = cur;
    out->s = all;
    *residual = and_all(p, rese, nres);
    return 0;
}

static const char *item_name(P *p, SelectItem *si, int i)
{
    if (si->alias)
        return si->alias;
    if (si->e->k == A_COL)
        return si->e->name;
    char *b = arena_alloc(p->a, 24);
    snprintf(b, 24, "EXPR$%d", i);
    return b;
}

static bool has_agg(Ast *x)
{
    if (!x)
        return false;
    if (x->k == A_FUNC && is_agg_name(x->name))
        return true;
    if (has_agg(x->a) || has_agg(x->b) || has_agg(x->c))
        return true;
    for (int i = 0; i < x->args.n; i++)
        if (has_agg(x->args.v[i]))
            return true;
    return false;
}

static int plan_core(P *p, Select *q, PRel *out)
{
    PRel from;
    Expr *resid = NULL;
    if (q->nfrom == 0)
        return perr(p, SL_EUNSUPPORTED, q->line, q->col, "SELECT without FROM is not supported yet");
    if (plan_from(p, q, &from, &resid))
        return p->err->code;

    /* expand the select list */
    int n = 0;
    for (int i = 0; i < q->nitems; i++) {
        Ast *e = q->items[i].e;
        if (e->k == A_STAR) {
            int m = 0;
            for (int j = 0; j < from.s.n; j++)
                if (!e->qual || (from.s.c[j].qual && !strcasecmp(from.s.c[j].qual, e->qual)))
                    m++;
            if (e->qual && m == 0)
                return perr(p, SL_ESEMANTIC, e->line, e->col, "unknown table or alias \"%s\"",
                            e->qual);
            n += m;
        } else
            n++;
    }
    Ast **exprs = arena_alloc(p->a, sizeof(Ast *) * (size_t)n);
    const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)n);
    int *starcol = arena_alloc(p->a, sizeof(int) * (size_t)n);
    n = 0;
    for (int i = 0; i < q->nitems; i++) {
        Ast *e = q->items[i].e;
        if (e->k == A_STAR) {
            for (int j = 0; j < from.s.n; j++)
                if (!e->qual || (from.s.c[j].qual && !strcasecmp(from.s.c[j].qual, e->qual))) {
                    exprs[n] = NULL;
                    starcol[n] = j;
                    names[n++] = from.s.c[j].name;
                }
        } else {
            exprs[n] = e;
            starcol[n] = -1;
            names[n] = item_name(p, &q->items[i], n);
            n++;
        }
    }

    bool agg = q->group.n > 0 || has_agg(q->having);
    for (int i = 0; i < n && !agg; i++)
        agg = has_agg(exprs[i]);

    int node = from.node;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)n);
    Expr *filter = resid;
    if (!agg) {
        for (int i = 0; i < n; i++) {
            if (!exprs[i]) {
                proj[i] = expr_col(p->a, starcol[i], from.s.c[starcol[i]].t);
                continue;
            }
            AggCtx none = {0};
            BindCtx bc = {&from.s, &none, "the select list"};
            if (!(proj[i] = bind(p, &bc, exprs[i])))
                return p->err->code;
            if (proj[i]->t.kind == TK_NULL)
                proj[i] = cast_to(p, proj[i], type_make(TK_INT, true));
        }
        if (q->having)
            return perr(p, SL_ESEMANTIC, q->having->line, q->having->col,
                        "HAVING needs GROUP BY or an aggregate");
    } else {
        /* group keys */
        AggCtx ag = {0};
        ag.ngroup = q->group.n;
        ag.group = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ag.ngroup + 1));
        for (int i = 0; i < ag.ngroup; i++) {
            AggCtx none = {0};
            BindCtx bc = {&from.s, &none, "GROUP BY"};
            Ast *g = q->group.v[i];
            /* GROUP BY 1: ordinal of a select item */
            if (g->k == A_INT) {
                long k = strtol(g->str, NULL, 10);
                if (k < 1 || k > n || !exprs[k - 1])
                    return perr(p, SL_ESEMANTIC, g->line, g->col,
                                "GROUP BY position %ld is not in the select list", k);
                g = exprs[k - 1];
            }
            if (!(ag.group[i] = bind(p, &bc, g)))
                return p->err->code;
            if (ag.group[i]->t.kind == TK_NULL)
                ag.group[i] = cast_to(p, ag.group[i], type_make(TK_INT, true));
        }
        ag.allowed = true;
        /* the post-aggregation scope: group columns, then aggregates */
        for (int i = 0; i < n; i++) {
            BindCtx bc = {&from.s, &ag, "the select list"};
            if (!exprs[i]) {
                Ast fake = {0};
                fake.k = A_COL;
                fake.name = (char *)from.s.c[starcol[i]].name;
                fake.qual = (char *)from.s.c[starcol[i]].qual;
                fake.line = q->line;
                fake.col = q->col;
                if (!(proj[i] = bind(p, &bc, &fake)))
                    return p->err->code;
            } else if (!(proj[i] = bind(p, &bc, exprs[i])))
                return p->err->code;
            if (proj[i]->t.kind == TK_NULL)
                proj[i] = cast_to(p, proj[i], type_make(TK_INT, true));
        }
        Expr *having = NULL;
        if (q->having) {
            BindCtx bc = {&from.s, &ag, "HAVING"};
            if (!(having = bind(p, &bc, q->having)) ||
                !(having = bool_operand(p, having, q->having, "HAVING")))
                return p->err->code;
        }
        /* MAP: [group keys..., aggregate arguments...] */
        int nargs = 0;
        for (int i = 0; i < ag.ncalls; i++)
            nargs += ag.calls[i].arg ? 1 : 0;
        Expr **pre = arena_alloc(p->a, sizeof(Expr *) * (size_t)(ag.ngroup + nargs + 1));
        for (int i = 0; i < ag.ngroup; i++)
            pre[i] = ag.group[i];
        int np = ag.ngroup;
        CNode *an;
        AggSpec *specs = arena_alloc(p->a, sizeof(AggSpec) * (size_t)(ag.ncalls + 1));
        bool linear = true;
        for (int i = 0; i < ag.ncalls; i++) {
            specs[i] = ag.calls[i].spec;
            if (ag.calls[i].arg) {
                specs[i].col = np;
                pre[np++] = ag.calls[i].arg;
            }
            if (specs[i].kind == AGG_MIN || specs[i].kind == AGG_MAX)
                linear = false;
        }
        node = map_node(p, node, filter, pre, np);
        filter = NULL;
        an = add_node(p, OPK_AGG, 1, ag.ngroup + ag.ncalls);
        an->in[0] = node;
        an->ngroup = ag.ngroup;
        an->aggs = specs;
        an->naggs = ag.ncalls;
        an->linear = linear;
        an->global = ag.ngroup == 0;
        for (int i = 0; i < ag.ngroup; i++)
            an->types[i] = ag.group[i]->t;
        for (int i = 0; i < ag.ncalls; i++)
            an->types[ag.ngroup + i] = specs[i].out_t;
        node = an->id;
        filter = having;
    }
    /* identity projection with no filter needs no node */
    bool ident = !filter && n == p->c->nodes[node]->ncol;
    for (int i = 0; i < n && ident; i++)
        ident = proj[i]->k == E_COL && proj[i]->col == i &&
                same_repr(proj[i]->t, p->c->nodes[node]->types[i]);
    if (!ident)
        node = map_node(p, node, filter, proj, n);
    if (q->distinct) {
        CNode *d = add_node(p, OPK_DISTINCT, 1, n);
        d->in[0] = node;
        memcpy(d->types, p->c->nodes[node]->types, sizeof(SqlType) * (size_t)n);
        node = d->id;
    }
    out->node = node;
    out->s = scope_new(p, n);
    for (int i = 0; i < n; i++) {
        out->s.c[i].name = names[i];
        out->s.c[i].t = p->c->nodes[node]->types[i];
    }
    return 0;
}

/* Cast the columns of r to types t (when they differ). */
static int conform(P *p, PRel *r, const SqlType *t)
{
    CNode *src = p->c->nodes[r->node];
    bool need = false;
    for (int i = 0; i < src->ncol; i++)
        if (!same_repr(src->types[i], t[i]) || src->types[i].nullable != t[i].nullable)
            need = true;
    if (!need)
        return r->node;
    Expr **proj = arena_alloc(p->a, sizeof(Expr *) * (size_t)src->ncol);
    for (int i = 0; i < src->ncol; i++) {
        proj[i] = cast_to(p, expr_col(p->a, i, src->types[i]), t[i]);
        if (proj[i]->k == E_COL) {
            Expr *c = expr_col(p->a, i, t[i]);
            proj[i] = c;
        }
        proj[i]->t.nullable = t[i].nullable;
    }
    return map_node(p, r->node, NULL, proj, src->ncol);
}

static int plan_query(P *p, Select *q, PRel *out)
{
    if (q->limit || q->offset) {
        return perr(p, SL_EUNSUPPORTED, q->limit_line, q->limit_col,
                    "LIMIT/OFFSET in a view is not supported yet");
    }
    /* ORDER BY without LIMIT does not change a view's contents (a view is a
       set); it is accepted and ignored, as Feldera does. */
    if (plan_core(p, q, out))
        return p->err->code;
    for (Select *s = q; s->next; s = s->next) {
        PRel r;
        SetOp op = s->setop;
        if (op == SET_EXCEPT || op == SET_INTERSECT)
            return perr(p, SL_EUNSUPPORTED, s->setop_line, s->setop_col,
                        "%s is not supported yet", op == SET_EXCEPT ? "EXCEPT" : "INTERSECT");
        if (plan_core(p, s->next, &r))
            return p->err->code;
        if (r.s.n != out->s.n)
            return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                        "each UNION query must have the same number of columns (%d vs %d)",
                        out->s.n, r.s.n);
        SqlType *t = arena_alloc(p->a, sizeof(SqlType) * (size_t)r.s.n);
        for (int i = 0; i < r.s.n; i++) {
            if (!common_type(out->s.c[i].t, r.s.c[i].t, &t[i]))
                return perr(p, SL_ESEMANTIC, s->next->line, s->next->col,
                            "UNION column %d has incompatible types %s and %s", i + 1,
                            tname(out->s.c[i].t), tname(r.s.c[i].t));
            if (t[i].kind == TK_NULL)
                t[i] = type_make(TK_INT, true);
        }
        int a = conform(p, out, t), b = conform(p, &r, t);
        CNode *u = add_node(p, OPK_UNION, 2, r.s.n);
        u->in[0] = a;
        u->in[1] = b;
        memcpy(u->types, t, sizeof(SqlType) * (size_t)r.s.n);
        int node = u->id;
        if (op == SET_UNION) {
            CNode *d = add_node(p, OPK_DISTINCT, 1, r.s.n);
            d->in[0] = node;
            memcpy(d->types, t, sizeof(SqlType) * (size_t)r.s.n);
            node = d->id;
        }
        out->node = node;
        for (int i = 0; i < r.s.n; i++)
            out->s.c[i].t = t[i];
    }
    return 0;
}

/* ---- statements ---- */

static Relation *add_rel(P *p, const char *name, int line, int col)
{
    Circuit *c = p->c;
    if (circuit_find_rel(c, name) >= 0) {
        perr(p, SL_ESEMANTIC, line, col, "a table or view named \"%s\" already exists", name);
        return NULL;
    }
    if (c->nrels == p->cap_rels) {
        p->cap_rels = p->cap_rels ? p->cap_rels * 2 : 16;
        Relation *v = arena_alloc(p->a, sizeof(Relation) * (size_t)p->cap_rels);
        if (c->nrels)
            memcpy(v, c->rels, sizeof(Relation) * (size_t)c->nrels);
        c->rels = v;
    }
    Relation *r = &c->rels[c->nrels++];
    memset(r, 0, sizeof(*r));
    r->name = (char *)name;
    r->line = line;
    r->col = col;
    r->sink = -1;
    return r;
}

/* Position in the SQL text of byte `off` inside a property value. */
static void value_pos(const Property *pr, size_t off, int *line, int *col)
{
    *line = pr->vline;
    *col = pr->vcol;
    for (size_t i = 0; i < off && pr->value[i]; i++) {
        if (pr->value[i] == '\n') {
            (*line)++;
            *col = 1;
        } else
            (*col)++;
    }
}

static int apply_props(P *p, Stmt *s, Relation *r)
{
    for (int i = 0; i < s->nprops; i++) {
        Property *pr = &s->props[i];
        if (!strcasecmp(pr->key, "connectors")) {
            cJSON *j = cJSON_ParseWithOpts(pr->value, NULL, 1);
            if (!j) {
                const char *e = cJSON_GetErrorPtr();
                size_t off = e && e >= pr->value ? (size_t)(e - pr->value) : 0;
                int line, col;
                value_pos(pr, off, &line, &col);
                return perr(p, SL_ECONFIG, line, col,
                            "invalid JSON in 'connectors' of %s near \"%.20s\"", r->name,
                            pr->value + off);
            }
            if (!cJSON_IsArray(j)) {
                cJSON_Delete(j);
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'connectors' of %s must be a JSON array", r->name);
            }
            if (r->connectors)
                cJSON_Delete(r->connectors);
            r->connectors = j;
            r->conn_line = pr->vline;
            r->conn_col = pr->vcol;
        } else if (!strcasecmp(pr->key, "materialized")) {
            if (strcasecmp(pr->value, "true") && strcasecmp(pr->value, "false"))
                return perr(p, SL_ECONFIG, pr->vline, pr->vcol,
                            "'materialized' must be 'true' or 'false', not '%s'", pr->value);
            r->materialized = r->materialized || !strcasecmp(pr->value, "true");
        } else if (!strcasecmp(pr->key, "append_only")) {
            /* a promise about the input; accepted, no optimisation uses it yet */
        } else {
            return perr(p, SL_ECONFIG, pr->line, pr->col,
                        "unknown property '%s' on %s (known: connectors, materialized, "
                        "append_only)", pr->key, r->name);
        }
    }
    return 0;
}

static void add_sink(P *p, Relation *r, int rel_index)
{
    CNode *src = p->c->nodes[r->node];
    CNode *s = add_node(p, OPK_SINK, 1, src->ncol);
    s->in[0] = r->node;
    s->rel = rel_index;
    s->label = r->name;
    memcpy(s->types, src->types, sizeof(SqlType) * (size_t)src->ncol);
    r->sink = s->id;
}

static int plan_table(P *p, Stmt *s)
{
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    r->is_table = true;
    r->ncol = s->ncols;
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)s->ncols);
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)s->ncols);
    for (int i = 0; i < s->ncols; i++) {
        for (int j = 0; j < i; j++)
            if (!strcasecmp(s->cols[i].name, s->cols[j].name))
                return perr(p, SL_ESEMANTIC, s->cols[i].line, s->cols[i].col,
                            "column \"%s\" specified more than once", s->cols[i].name);
        r->colnames[i] = s->cols[i].name;
        r->types[i] = s->cols[i].type;
    }
    if (s->npk) {
        r->pk = arena_alloc(p->a, sizeof(int) * (size_t)s->npk);
        r->npk = s->npk;
        for (int k = 0; k < s->npk; k++) {
            int found = -1;
            for (int i = 0; i < s->ncols; i++)
                if (!strcasecmp(s->cols[i].name, s->pk[k]))
                    found = i;
            if (found < 0)
                return perr(p, SL_ESEMANTIC, s->line, s->col,
                            "PRIMARY KEY column \"%s\" is not a column of %s", s->pk[k], s->name);
            r->pk[k] = found;
            r->types[found].nullable = 0; /* key columns are NOT NULL */
        }
    }
    if (apply_props(p, s, r))
        return p->err->code;
    CNode *n = add_node(p, OPK_SOURCE, 0, r->ncol);
    n->rel = (int)(r - p->c->rels);
    n->label = r->name;
    memcpy(n->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
    r->node = n->id;
    if (r->npk) {
        CNode *u = add_node(p, OPK_UPSERT, 1, r->ncol);
        u->in[0] = n->id;
        u->rel = n->rel;
        u->pk = r->pk;
        u->npk = r->npk;
        u->label = r->name;
        memcpy(u->types, r->types, sizeof(SqlType) * (size_t)r->ncol);
        r->node = u->id;
    }
    if (r->materialized)
        add_sink(p, r, n->rel);
    return 0;
}

static int plan_view(P *p, Stmt *s)
{
    PRel q;
    if (plan_query(p, s->query, &q))
        return p->err->code;
    Relation *r = add_rel(p, s->name, s->name_line, s->name_col);
    if (!r)
        return p->err->code;
    int idx = (int)(r - p->c->rels);
    r->materialized = s->materialized;
    r->ncol = q.s.n;
    r->node = q.node;
    if (s->ncol_aliases && s->ncol_aliases != q.s.n)
        return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                    "view %s names %d columns but its query has %d", s->name, s->ncol_aliases,
                    q.s.n);
    r->colnames = arena_alloc(p->a, sizeof(char *) * (size_t)(q.s.n + 1));
    r->types = arena_alloc(p->a, sizeof(SqlType) * (size_t)(q.s.n + 1));
    for (int i = 0; i < q.s.n; i++) {
        r->colnames[i] = s->ncol_aliases ? s->col_aliases[i] : (char *)q.s.c[i].name;
        r->types[i] = q.s.c[i].t;
        for (int j = 0; j < i; j++)
            if (!strcasecmp(r->colnames[i], r->colnames[j]))
                return perr(p, SL_ESEMANTIC, s->name_line, s->name_col,
                            "view %s has two columns named \"%s\"; give one an alias", s->name,
                            r->colnames[i]);
    }
    if (apply_props(p, s, r))
        return p->err->code;
    /* every view gets a sink: it counts the view's changes (stats), feeds
       its output connectors and, when materialized, keeps its contents */
    add_sink(p, r, idx);
    return 0;
}

int circuit_find_rel(const Circuit *c, const char *name)
{
    for (int i = 0; i < c->nrels; i++)
        if (!strcasecmp(c->rels[i].name, name))
            return i;
    return -1;
}

int circuit_compile(const char *sql, Circuit **out, Err *err)
{
    Err local = {0};
    Program *prog;
    Circuit *c = sl_calloc(1, sizeof(*c));
    c->arena = arena_new(64 * 1024);
    P p = {c->arena, c, err ? err : &local, 0, 0, 0};
    if (sql_parse(sql, c->arena, &prog, p.err))
        goto out_fail;
    if (prog->n == 0) {
        err_setpos(p.err, SL_ESEMANTIC, 1, 1, "the program is empty: no CREATE TABLE or VIEW");
        goto out_fail;
    }
    for (int i = 0; i < prog->n; i++) {
        Stmt *s = prog->stmts[i];
        p.owner = c->nrels; /* the relation this statement adds */
        if ((s->k == S_CREATE_TABLE ? plan_table(&p, s) : plan_view(&p, s)))
            goto out_fail;
    }
    *out = c;
    return 0;
out_fail:
    circuit_free(c);
    return p.err->code;
}

void circuit_free(Circuit *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nrels; i++)
        if (c->rels[i].connectors)
            cJSON_Delete(c->rels[i].connectors);
    arena_free(c->arena);
    sl_free(c);
}

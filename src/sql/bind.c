/*
 * sql/bind.c - the binder: resolves names in expressions against a scope,
 * types them with implicit numeric widening (operands of an arithmetic or
 * comparison operator are cast to a common type here, so the evaluator sees
 * same-typed operands, expr.h). Function calls, and the aggregate calls
 * collected when binding above a GROUP BY, are bound by bind_fn.c. Called
 * by every planner file (plan*.c) through sql__bind.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "../expr/text.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "sql_int.h"

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
    default: return 19;
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
bool sql__common_type(SqlType a, SqlType b, SqlType *out)
{
    SqlType r;
    bool nul = a.nullable || b.nullable;
    if (a.kind == TK_NULL) {
        r = b;
    } else if (b.kind == TK_NULL) {
        r = a;
    } else if (a.kind == TK_VARIANT || b.kind == TK_VARIANT) {
        r = type_make(TK_VARIANT, nul); /* the other side CAST to VARIANT */
    } else if (a.kind == TK_ARRAY || b.kind == TK_ARRAY) {
        SqlType e;
        if (a.kind == TK_ARRAY && b.kind == TK_ARRAY) {
            /* no string-to-number reading between element types */
            if (type_is_string(a.elem) != type_is_string(b.elem) &&
                a.elem != TK_NULL && b.elem != TK_NULL)
                return false;
            if (!sql__common_type(type_elem(a), type_elem(b), &e))
                return false;
            r = type_array(e, nul);
        } else if (type_is_string(a.kind) || type_is_string(b.kind)) {
            r = a.kind == TK_ARRAY ? a : b; /* '{1,2}' read as the array */
        } else {
            return false;
        }
    } else if (a.kind == b.kind && (a.kind == TK_ROW || a.kind == TK_MAP)) {
        if (!sql__nested_common(a, b, &r)) /* bind_nested.c */
            return false;
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
            return sql__common_type(decimal_of(a), decimal_of(b), out);
    } else if (type_is_string(a.kind) && type_is_string(b.kind)) {
        r = type_make(TK_VARCHAR, nul);
    } else if ((a.kind == TK_DATE && b.kind == TK_TIMESTAMP) ||
               (a.kind == TK_TIMESTAMP && b.kind == TK_DATE)) {
        r = type_make(TK_TIMESTAMP, nul);
    } else if ((a.kind == TK_TIMESTAMPTZ && (b.kind == TK_TIMESTAMP || b.kind == TK_DATE)) ||
               (b.kind == TK_TIMESTAMPTZ && (a.kind == TK_TIMESTAMP || a.kind == TK_DATE))) {
        r = a.kind == TK_TIMESTAMPTZ ? a : b; /* the local side read in the session zone */
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

bool sql__same_repr(SqlType a, SqlType b)
{
    if (a.kind != b.kind)
        return false;
    if (a.kind == TK_DECIMAL)
        return a.scale == b.scale && a.prec == b.prec;
    if (a.kind == TK_CHAR)
        return a.len == b.len;
    if (a.kind == TK_VARCHAR)
        return a.len == b.len;
    if (a.kind == TK_ARRAY)
        return a.elem == b.elem && a.prec == b.prec && a.scale == b.scale && a.len == b.len;
    if (a.kind == TK_ROW || a.kind == TK_MAP)
        return a.len == b.len;
    return true;
}

/* e converted to t (t.nullable is taken from e). */
Expr *sql__cast_to(P *p, Expr *e, SqlType t)
{
    t.nullable = e->t.nullable || (e->t.kind == TK_VARIANT && t.kind != TK_VARIANT);
    if (sql__same_repr(e->t, t))
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



static int resolve_col(P *p, Scope *s, Ast *x, int *out)
{
    int found = -1;
    if (x->subcol > 0 && x->subcol <= s->n) { /* planner-made direct reference */
        *out = x->subcol - 1;
        return 0;
    }
    /* the subquery's own columns first, then its outer query's */
    for (int pass = 0; pass < 2 && found < 0; pass++)
    for (int i = 0; i < s->n; i++) {
        if (s->c[i].hidden || s->c[i].outer != (pass == 1) ||
            strcasecmp(s->c[i].name, x->name) != 0)
            continue;
        if (x->qual && (!s->c[i].qual || strcasecmp(s->c[i].qual, x->qual) != 0))
            continue;
        if (!x->qual && s->c[i].qual_only) /* USING column: the merged one */
            continue;
        if (found >= 0)
            return perr(p, SL_ESEMANTIC, x->line, x->col,
                        "column reference \"%s\" is ambiguous", x->name);
        found = i;
    }
    if (found < 0) {
        p->unresolved++;
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

Expr *sql__bool_operand(P *p, Expr *e, Ast *at, const char *what)
{
    if (!e)
        return NULL;
    if (e->t.kind == TK_NULL)
        return sql__cast_to(p, e, type_make(TK_BOOL, true));
    if (e->t.kind != TK_BOOL) {
        perr(p, SL_ESEMANTIC, at->line, at->col, "%s needs a BOOLEAN operand, not %s", what,
             tname(e->t));
        return NULL;
    }
    return e;
}

Expr *sql__mk(P *p, ExprKind k, SqlType t, int na)
{
    return expr_new(p->a, k, t, na);
}

Expr *sql__mk_fn(P *p, int fn, SqlType t, int n, Expr **args)
{
    Expr *e = sql__mk(p, E_FUNC, t, n);
    e->fn = fn;
    for (int j = 0; j < n; j++)
        e->a[j] = args[j];
    return e;
}

/* NOT e when neg, else e. */
static Expr *negate_if(P *p, Expr *e, bool neg)
{
    if (!neg)
        return e;
    Expr *n = sql__mk(p, E_NOT, e->t, 1);
    n->a[0] = e;
    return n;
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
            i128 v;
            Err e = {0};
            if (text_parse_dec(t, s, strlen(s), &v, &e) == 0)
                return expr_const_dec(p->a, t, v);
        }
        return expr_const_f64(p->a, type_make(TK_DOUBLE, false), strtod(s, NULL));
    }
    case A_TYPED: {
        int64_t v;
        Err e = {0};
        if (type_is_interval((TypeKind)x->type.kind)) {
            bool ym;
            int from = (int)(x->ival & 0xff), to = (int)(x->ival >> 8) - 1;
            if (interval_parse(x->str, x->slen, from, to, &v, &ym, &e)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s", e.msg);
                return NULL;
            }
            return expr_const_i64(p->a, x->type, v);
        }
        if (type_is_wide(x->type)) {
            i128 w;
            if (text_parse_dec(x->type, x->str, x->slen, &w, &e)) {
                perr(p, SL_ESEMANTIC, x->line, x->col, "%s", e.msg);
                return NULL;
            }
            return expr_const_dec(p->a, x->type, w);
        }
        if (text_parse(x->type, x->str, x->slen, p->a, &v, NULL, NULL, &e)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "%s", e.msg);
            return NULL;
        }
        return expr_const_i64(p->a, x->type, v);
    }
    default: return NULL;
    }
}

static Expr *mk2(P *p, ExprKind k, TypeKind tk, bool nul, Expr *a, Expr *b)
{
    Expr *e = sql__mk(p, k, type_make(tk, nul), 2);
    e->a[0] = a;
    e->a[1] = b;
    return e;
}

/* l + r, or l - r when sub (as l + -r), computed by function fn with a
   result of kind t. */
static Expr *add_by_fn(P *p, int fn, TypeKind t, bool nul, Expr *l, Expr *r, bool sub)
{
    if (sub) {
        Expr *ng = sql__mk(p, E_NEG, r->t, 1);
        ng->a[0] = r;
        r = ng;
    }
    Expr *e = mk2(p, E_FUNC, t, nul, l, r);
    e->fn = fn;
    return e;
}

/* Date/time arithmetic (docs/sql.md, "Dates, times and intervals"):
   DATE/TIMESTAMP +- INTERVAL, TIMESTAMP - TIMESTAMP, INTERVAL +- INTERVAL,
   INTERVAL * / integer. DATE + a constant whole-day interval stays a DATE
   (Calcite); DATE + any other day-time interval is a TIMESTAMP. */
static Expr *time_arith(P *p, Ast *x, int op, Expr *l, Expr *r);

/* The days of interval r when x (the A_BIN of `tstz +- interval`) has as
   its interval operand a literal written with a DAY field (INTERVAL '1'
   DAY, INTERVAL '1 02:00:00' DAY TO SECOND): PostgreSQL keeps such days
   apart from the time and adds them as calendar days. *days gets the
   whole days (truncated toward zero, as PostgreSQL splits '1.5 days'). */
static bool literal_days(const Ast *x, const Expr *r, int64_t *days)
{
    if (!x || x->k != A_BIN || r->k != E_CONST || r->cnull)
        return false;
    const Ast *iv = NULL;
    for (int i = 0; i < 2; i++) {
        const Ast *o = i ? x->a : x->b;
        if (o && o->k == A_TYPED && o->type.kind == TK_INTERVAL_DT)
            iv = o;
    }
    if (!iv || (iv->ival & 0xff) != TU_DAY)
        return false;
    *days = r->ci / INT64_C(86400000000);
    return *days != 0;
}

/* Arithmetic with a TIMESTAMPTZ operand: +- INTERVAL DAY TO SECOND moves
   the instant (an interval is a fixed length, so '24' HOUR is 24 hours
   even across a DST change), except that the days of a constant written
   with a DAY field are calendar days in the session zone (PostgreSQL:
   the wall-clock time moves by whole days, then the rest of the interval
   moves the instant); +- INTERVAL YEAR TO MONTH moves the wall-clock time
   of the session zone by calendar months; TIMESTAMPTZ - TIMESTAMPTZ (or a
   TIMESTAMP/DATE read in the session zone) is the elapsed INTERVAL. NULL
   when no rule applies (p->err untouched). */
static Expr *tstz_arith(P *p, Ast *x, int op, Expr *l, Expr *r)
{
    TypeKind a = (TypeKind)l->t.kind, b = (TypeKind)r->t.kind;
    bool nul = l->t.nullable || r->t.nullable, add = op == OP_ADD, sub = op == OP_SUB;
    if (add && type_is_interval(a) && b == TK_TIMESTAMPTZ)
        return tstz_arith(p, x, op, r, l);
    int64_t days;
    if ((add || sub) && a == TK_TIMESTAMPTZ && b == TK_INTERVAL_DT && literal_days(x, r, &days)) {
        SqlType tz = l->t, dt = type_make(TK_INTERVAL_DT, false);
        tz.nullable = nul;
        Expr *loc = sql__cast_to(p, l, type_make(TK_TIMESTAMP, l->t.nullable));
        Expr *d = expr_const_i64(p->a, dt, days * INT64_C(86400000000));
        Expr *e = sql__cast_to(p, mk2(p, add ? E_ADD : E_SUB, TK_TIMESTAMP, nul, loc, d), tz);
        int64_t rest = r->ci - days * INT64_C(86400000000);
        if (rest) {
            e = mk2(p, add ? E_ADD : E_SUB, TK_TIMESTAMPTZ, nul, e, expr_const_i64(p->a, dt, rest));
            e->t.len = tz.len;
        }
        return e;
    }
    if ((add || sub) && a == TK_TIMESTAMPTZ && b == TK_INTERVAL_DT) {
        Expr *e = mk2(p, add ? E_ADD : E_SUB, TK_TIMESTAMPTZ, nul, l, r);
        e->t.len = l->t.len;
        return e;
    }
    if ((add || sub) && a == TK_TIMESTAMPTZ && b == TK_INTERVAL_YM) {
        SqlType tz = l->t;
        Expr *loc = sql__cast_to(p, l, type_make(TK_TIMESTAMP, l->t.nullable));
        Expr *e = time_arith(p, x, op, loc, r);
        tz.nullable = nul;
        return e ? sql__cast_to(p, e, tz) : NULL;
    }
    if (sub && (a == TK_TIMESTAMPTZ || b == TK_TIMESTAMPTZ) &&
        (type_is_ts(a) || a == TK_DATE) && (type_is_ts(b) || b == TK_DATE)) {
        SqlType tz = a == TK_TIMESTAMPTZ ? l->t : r->t;
        tz.nullable = false;
        return mk2(p, E_SUB, TK_INTERVAL_DT, nul, sql__cast_to(p, l, tz), sql__cast_to(p, r, tz));
    }
    return NULL;
}

static Expr *time_arith(P *p, Ast *x, int op, Expr *l, Expr *r)
{
    static const char *ops[] = {"+", "-", "*", "/", "%"};
    TypeKind a = (TypeKind)l->t.kind, b = (TypeKind)r->t.kind;
    bool nul = l->t.nullable || r->t.nullable;
    if (a == TK_TIMESTAMPTZ || b == TK_TIMESTAMPTZ) {
        Expr *e = tstz_arith(p, x, op, l, r);
        if (e || p->err->code)
            return e;
    }
    /* a NULL operand takes the type that makes the expression valid */
    if (a == TK_NULL)
        l = sql__cast_to(p, l, type_make(a = type_is_interval(b) ? b : TK_INTERVAL_DT, true));
    if (b == TK_NULL)
        r = sql__cast_to(p, r, type_make(b = type_is_interval(a) && op != OP_MUL && op != OP_DIV
                                                ? a : (op == OP_MUL || op == OP_DIV) ? TK_BIGINT
                                                : op == OP_SUB && a != TK_DATE ? a
                                                : TK_INTERVAL_DT, true));
    bool add = op == OP_ADD, sub = op == OP_SUB;
    if (add && type_is_interval(a) && (b == TK_DATE || b == TK_TIMESTAMP))
        return time_arith(p, x, op, r, l); /* INTERVAL + date: commute */
    if ((add || sub) && (a == TK_DATE || a == TK_TIMESTAMP) && b == TK_INTERVAL_DT) {
        if (a == TK_DATE && r->k == E_CONST && !r->cnull && r->ci % INT64_C(86400000000) == 0) {
            Expr *days = expr_const_i64(p->a, type_make(TK_BIGINT, false), r->ci / INT64_C(86400000000));
            return mk2(p, add ? E_ADD : E_SUB, TK_DATE, nul, l, days);
        }
        if (a == TK_DATE)
            l = sql__cast_to(p, l, type_make(TK_TIMESTAMP, l->t.nullable));
        return mk2(p, add ? E_ADD : E_SUB, TK_TIMESTAMP, nul, l, r);
    }
    if ((add || sub) && (a == TK_DATE || a == TK_TIMESTAMP) && b == TK_INTERVAL_YM)
        return add_by_fn(p, FN_ADD_MONTHS, a, nul, l, r, sub);
    if (sub && (a == TK_DATE || a == TK_TIMESTAMP) && (b == TK_DATE || b == TK_TIMESTAMP)) {
        if (a == TK_DATE && b == TK_DATE) {
            perr(p, SL_EUNSUPPORTED, x->line, x->col,
                 "DATE - DATE is not supported (its type differs between SQL dialects): use "
                 "TIMESTAMPDIFF(DAY, a, b) for whole days, or CAST the dates to TIMESTAMP for "
                 "an INTERVAL");
            return NULL;
        }
        SqlType ts = type_make(TK_TIMESTAMP, false);
        return mk2(p, E_SUB, TK_INTERVAL_DT, nul, sql__cast_to(p, l, ts), sql__cast_to(p, r, ts));
    }
    if ((add || sub) && type_is_interval(a) && a == b)
        return mk2(p, add ? E_ADD : E_SUB, a, nul, l, r);
    if (add && b == TK_TIME && a == TK_INTERVAL_DT)
        return time_arith(p, x, op, r, l);
    if ((add || sub) && a == TK_TIME && b == TK_INTERVAL_DT) /* wraps around midnight */
        return add_by_fn(p, FN_TIME_ADD, TK_TIME, nul, l, r, sub);
    if (sub && a == TK_TIME && b == TK_TIME)
        return mk2(p, E_SUB, TK_INTERVAL_DT, nul, l, r);
    if (op == OP_MUL && type_is_integer(a) && type_is_interval(b))
        return time_arith(p, x, op, r, l);
    if ((op == OP_MUL || op == OP_DIV) && type_is_interval(a) && type_is_integer(b)) {
        Expr *e = mk2(p, op == OP_MUL ? E_MUL : E_DIV, a, nul || op == OP_DIV, l,
                      sql__cast_to(p, r, type_make(TK_BIGINT, false)));
        return e;
    }
    perr(p, SL_ESEMANTIC, x->line, x->col, "operator %s is not defined for %s and %s", ops[op],
         tname(l->t), tname(r->t));
    return NULL;
}

/* An integer literal (possibly negated): its value in *v. */
static bool int_literal(const Expr *e, int64_t *v)
{
    bool neg = false;
    if (e->k == E_NEG) {
        neg = true;
        e = e->a[0];
    }
    if (e->k != E_CONST || e->cnull || e->t.kind < TK_TINYINT || e->t.kind > TK_BIGINT)
        return false;
    if (neg && e->ci == INT64_MIN)
        return false;
    *v = neg ? -e->ci : e->ci;
    return true;
}

/* Literal typing: + - * of two integer literals whose exact result does
   not fit their common type (INT for 100000 * 100000) is the BIGINT
   constant, as MySQL and SQLite compute it, instead of an INT that
   overflows at run time. NULL (the operation as written) otherwise. */
static bool ast_int_literal(const Ast *a)
{
    while (a && a->k == A_UN && (a->op == OP_NEG || a->op == OP_PLUS))
        a = a->a;
    return a && a->k == A_INT;
}

static Expr *widen_literals(P *p, const Ast *x, int op, const Expr *l, const Expr *r)
{
    int64_t a, b, v;
    /* literals as written: CAST(2147483647 AS INT) + 1 is an INT that
       overflows, as in PostgreSQL, though the binder folds the cast */
    if ((op != OP_ADD && op != OP_SUB && op != OP_MUL) || !ast_int_literal(x->a) ||
        !ast_int_literal(x->b) || !int_literal(l, &a) || !int_literal(r, &b))
        return NULL;
    bool ovf = op == OP_ADD ? __builtin_add_overflow(a, b, &v)
             : op == OP_SUB ? __builtin_sub_overflow(a, b, &v)
                            : __builtin_mul_overflow(a, b, &v);
    if (ovf) /* past BIGINT too: the run-time overflow error */
        return NULL;
    if (l->t.kind == TK_BIGINT || r->t.kind == TK_BIGINT || (v >= INT32_MIN && v <= INT32_MAX))
        return NULL;
    return expr_const_i64(p->a, type_make(TK_BIGINT, false), v);
}

Expr *sql__arith(P *p, Ast *x, int op, Expr *l, Expr *r)
{
    SqlType lt = l->t, rt = r->t, t;
    if (op != OP_CONCAT && (type_is_temporal(lt.kind) || type_is_temporal(rt.kind) ||
                            type_is_interval(lt.kind) || type_is_interval(rt.kind)))
        return time_arith(p, x, op, l, r);
    bool nul = lt.nullable || rt.nullable;
    if (op == OP_CONCAT && (lt.kind == TK_VARIANT || rt.kind == TK_VARIANT))
        return sql__bind_variant_concat(p, x, l, r);
    if (lt.kind == TK_NULL && rt.kind == TK_NULL)
        lt = rt = type_make(TK_INT, true);
    else if (lt.kind == TK_NULL)
        lt = rt;
    else if (rt.kind == TK_NULL)
        rt = lt;
    if (op == OP_CONCAT && (lt.kind == TK_ARRAY || rt.kind == TK_ARRAY))
        return sql__bind_array_concat(p, x, l, r);
    if (op == OP_CONCAT) {
        SqlType vs = type_make(TK_VARCHAR, nul);
        Expr *e = sql__mk(p, E_CONCAT, vs, 2);
        e->a[0] = sql__cast_to(p, l, vs);
        e->a[1] = sql__cast_to(p, r, vs);
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
    Expr *wide = widen_literals(p, x, op, l, r);
    if (wide)
        return wide;
    ExprKind k = op == OP_ADD ? E_ADD : op == OP_SUB ? E_SUB : op == OP_MUL ? E_MUL
               : op == OP_DIV ? E_DIV : E_MOD;
    if (!sql__common_type(lt, rt, &t))
        return NULL;
    t.nullable = nul;
    if (t.kind == TK_DECIMAL) {
        SqlType dl = decimal_of(lt), dr = decimal_of(rt);
        if (k == E_MUL || k == E_DIV) {
            Expr *e = sql__mk(p, k, t, 2);
            e->a[0] = sql__cast_to(p, l, dl);
            e->a[1] = sql__cast_to(p, r, dr);
            /* result types (docs/sql.md): * gives DECIMAL(p1+p2, s1+s2); /
               gives scale max(s1, s2, 6) and the integer digits p1-s1+s2;
               past 38 digits the integer digits are kept and the scale
               is cut, to no less than min(s, 6) (SQL Server's rule, which
               Calcite and so Feldera follow) */
            int ps, ss;
            if (k == E_MUL) {
                ss = dl.scale + dr.scale;
                ps = dl.prec + dr.prec;
            } else {
                ss = SL_MAX(SL_MAX(dl.scale, dr.scale), 6);
                ps = (dl.prec - dl.scale) + dr.scale + ss;
            }
            if (ps > DECIMAL_MAX_PREC) {
                int id = ps - ss;
                ss = SL_MIN(ss, SL_MAX(SL_MIN(ss, 6), DECIMAL_MAX_PREC - id));
                ps = DECIMAL_MAX_PREC;
            }
            e->t.scale = (uint8_t)ss;
            e->t.prec = (uint8_t)SL_MAX(ps, 1);
            if (k == E_DIV)
                e->t.nullable = 1;
            return e;
        }
        if (k == E_ADD || k == E_SUB)
            t.prec = (uint8_t)SL_MIN(DECIMAL_MAX_PREC, t.prec + 1);
    }
    Expr *e = sql__mk(p, k, t, 2);
    e->a[0] = sql__cast_to(p, l, t);
    e->a[1] = sql__cast_to(p, r, t);
    if (k == E_DIV || k == E_MOD)
        e->t.nullable = 1; /* division by zero gives NULL */
    return e;
}

/* The type an integer constant compared with a DECIMAL counts as: DECIMAL
   with the digits of its value (so that `price > 9990000000` stays on the
   64-bit path instead of widening price to the 19 digits of any BIGINT). */
static SqlType cmp_type(const Expr *e, const Expr *other)
{
    if (e->k != E_CONST || e->cnull || !type_is_integer((TypeKind)e->t.kind) ||
        other->t.kind != TK_DECIMAL)
        return e->t;
    SqlType d = type_make(TK_DECIMAL, e->t.nullable);
    int digits = 1;
    for (int64_t v = e->ci; v >= 10 || v <= -10; v /= 10)
        digits++;
    d.prec = (uint8_t)digits;
    return d;
}

Expr *sql__compare(P *p, Ast *at, ExprKind k, Expr *l, Expr *r)
{
    SqlType t;
    if (!sql__common_type(cmp_type(l, r), cmp_type(r, l), &t)) {
        perr(p, SL_ESEMANTIC, at->line, at->col, "cannot compare %s with %s", tname(l->t),
             tname(r->t));
        return NULL;
    }
    if (t.kind == TK_NULL)
        t = type_make(TK_INT, true);
    SqlType bt = type_make(TK_BOOL, l->t.nullable || r->t.nullable);
    if (t.kind == TK_DECIMAL && (type_is_integer(l->t.kind) || l->t.kind == TK_DECIMAL) &&
        (type_is_integer(r->t.kind) || r->t.kind == TK_DECIMAL)) {
        SqlType dl = decimal_of(cmp_type(l, r)), dr = decimal_of(cmp_type(r, l));
        int s = SL_MAX(dl.scale, dr.scale), ip = SL_MAX(dl.prec - dl.scale, dr.prec - dr.scale);
        if (ip + s > DECIMAL_MAX_PREC) {
            /* no DECIMAL holds both (DECIMAL(38,10) against DECIMAL(30,20)):
               compare the values as they are (exactly, expr/eval_dec.c),
               and = as NOT <>, which the planner does not take for a join
               key (join keys are of one type) */
            Expr *e = sql__mk(p, k == E_EQ ? E_NE : k, bt, 2);
            e->a[0] = l;
            e->a[1] = r;
            if (k != E_EQ)
                return e;
            Expr *n = sql__mk(p, E_NOT, bt, 1);
            n->a[0] = e;
            return n;
        }
    }
    Expr *e = sql__mk(p, k, bt, 2);
    e->a[0] = sql__cast_to(p, l, t);
    e->a[1] = sql__cast_to(p, r, t);
    return e;
}

Expr *sql__nary_bool(P *p, ExprKind k, Expr *l, Expr *r)
{
    int n = (l->k == k ? l->na : 1) + (r->k == k ? r->na : 1), i = 0;
    Expr *e = sql__mk(p, k, type_make(TK_BOOL, l->t.nullable || r->t.nullable), n);
    for (int j = 0; j < (l->k == k ? l->na : 1); j++)
        e->a[i++] = l->k == k ? l->a[j] : l;
    for (int j = 0; j < (r->k == k ? r->na : 1); j++)
        e->a[i++] = r->k == k ? r->a[j] : r;
    return e;
}

/* One n-ary node of kind k (E_AND or E_OR) over v[0..n), operands of
   that kind flattened into it. */
static Expr *nary_flat(P *p, ExprKind k, Expr *const *v, int n)
{
    int total = 0;
    bool nullable = false;
    for (int i = 0; i < n; i++) {
        total += v[i]->k == k ? v[i]->na : 1;
        nullable = nullable || v[i]->t.nullable;
    }
    Expr *e = sql__mk(p, k, type_make(TK_BOOL, nullable), total);
    int j = 0;
    for (int i = 0; i < n; i++)
        if (v[i]->k == k)
            for (int m = 0; m < v[i]->na; m++)
                e->a[j++] = v[i]->a[m];
        else
            e->a[j++] = v[i];
    return e;
}

Expr *sql__and_all(P *p, Expr *const *v, int n)
{
    if (n <= 1)
        return n ? v[0] : NULL;
    return nary_flat(p, E_AND, v, n);
}

bool sql__expr_equal(const Expr *a, const Expr *b)
{
    if (a->k != b->k || a->na != b->na || a->t.kind != b->t.kind || a->t.scale != b->t.scale ||
        a->t.len != b->t.len)
        return false;
    switch (a->k) {
    case E_COL:
        return a->col == b->col;
    case E_CONST:
        if (a->cnull || b->cnull)
            return a->cnull == b->cnull;
        if (type_phys(a->t) == PHYS_STR)
            return a->cs.n == b->cs.n && !memcmp(a->cs.p, b->cs.p, a->cs.n);
        if (type_phys(a->t) == PHYS_F64)
            return a->cf == b->cf;
        if (type_phys(a->t) != type_phys(b->t))
            return false;
        if (type_phys(a->t) == PHYS_I128)
            return a->cx == b->cx;
        return a->ci == b->ci;
    case E_FUNC:
        if (a->fn != b->fn)
            return false;
        break;
    default:
        break;
    }
    for (int i = 0; i < a->na; i++)
        if (!sql__expr_equal(a->a[i], b->a[i]))
            return false;
    return true;
}

static Expr *bind_case(P *p, BindCtx *bc, Ast *x)
{
    int nw = x->args.n / 2;
    int na = nw * 2 + (x->b ? 1 : 0);
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)na);
    Expr *operand = NULL;
    if (x->a && !(operand = sql__bind(p, bc, x->a)))
        return NULL;
    SqlType t = type_make(TK_NULL, true);
    for (int i = 0; i < nw; i++) {
        Ast *wa = x->args.v[2 * i];
        Expr *w = sql__bind(p, bc, wa);
        if (!w)
            return NULL;
        if (operand && !(w = sql__compare(p, wa, E_EQ, operand, w)))
            return NULL;
        if (!(w = sql__bool_operand(p, w, wa, "WHEN")))
            return NULL;
        v[2 * i] = w;
        if (!(v[2 * i + 1] = sql__bind(p, bc, x->args.v[2 * i + 1])))
            return NULL;
    }
    if (x->b && !(v[na - 1] = sql__bind(p, bc, x->b)))
        return NULL;
    bool nul = !x->b;
    for (int i = 0; i < na; i++) {
        if (i < nw * 2 && i % 2 == 0)
            continue;
        if (!sql__common_type(t, v[i]->t, &t)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "CASE branches have incompatible types %s and %s",
                 tname(t), tname(v[i]->t));
            return NULL;
        }
        nul = nul || v[i]->t.nullable;
    }
    if (t.kind == TK_NULL)
        t = type_make(TK_INT, true);
    t.nullable = nul;
    Expr *e = sql__mk(p, E_CASE, t, na);
    for (int i = 0; i < na; i++)
        e->a[i] = (i < nw * 2 && i % 2 == 0) ? v[i] : sql__cast_to(p, v[i], t);
    return e;
}

/* A subquery expression: the planner (plan_subq.c) has put its value in a
   hidden column of the scope. */
static Expr *bind_subquery(P *p, BindCtx *bc, Ast *x)
{
    const char *what = x->k == A_EXISTS ? "EXISTS" : x->k == A_IN ? "IN (subquery)" : "a subquery";
    if (!x->subcol || x->subcol > bc->s->n || !bc->s->c[x->subcol - 1].hidden) {
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "%s in %s is not supported yet", what,
             bc->clause);
        return NULL;
    }
    Expr *e = expr_col(p->a, x->subcol - 1, bc->s->c[x->subcol - 1].t);
    return negate_if(p, e, x->k == A_IN && x->negated);
}

/* x is an AND (or OR): its operands, the maximal subtrees not themselves
   of x's operator, in written order, into v (grown in the plan arena). */
static int chain_operands(P *p, Ast *x, Ast ***v)
{
    int n = 0, cap = 0, top = 0, scap = 0;
    Ast **out = NULL, **stack = NULL;
    *VEC_PUSH(stack, top, scap) = x;
    while (top) {
        Ast *y = stack[--top];
        if (y->k == A_BIN && y->op == x->op) {
            VEC_RESERVE(stack, scap, top + 2);
            stack[top++] = y->b; /* popped after y->a */
            stack[top++] = y->a;
            continue;
        }
        *VEC_PUSH_ARENA(p->a, out, n, cap) = y;
    }
    sl_free(stack);
    *v = out;
    return n;
}

/* x AND ... AND y (or OR): one n-ary node over every operand, nested
   nodes of the same kind (BETWEEN's AND) flattened into it, in linear time
   whatever the shape of the tree. */
static Expr *bind_chain(P *p, BindCtx *bc, Ast *x)
{
    ExprKind k = x->op == OP_AND ? E_AND : E_OR;
    const char *what = x->op == OP_AND ? "AND" : "OR";
    Ast **ops;
    int n = chain_operands(p, x, &ops);
    Expr **v = arena_alloc(p->a, sizeof(Expr *) * (size_t)n);
    for (int i = 0; i < n; i++)
        if (!(v[i] = sql__bind(p, bc, ops[i])) ||
            !(v[i] = sql__bool_operand(p, v[i], ops[i], what)))
            return NULL;
    return nary_flat(p, k, v, n);
}

/* x op y. A chain such as a + b + ... recurses here once per operator (up
   to SQL_MAX_HEIGHT levels): sql__bind comes straight here, so that the
   recursion's frames are these two small ones, not bind_inner's. */
static bool is_row_ctor(const Ast *x)
{
    return x->k == A_FUNC && !strcmp(x->name, "row") && !x->over && !x->star && x->args.n > 0;
}

static Ast *row_bin(P *p, const Ast *at, int op, Ast *a, Ast *b)
{
    Ast *n = arena_zalloc(p->a, sizeof(*n));
    n->k = A_BIN;
    n->op = op;
    n->line = at->line;
    n->col = at->col;
    n->a = a;
    n->b = b;
    return n;
}

/* A comparison of two row constructors of as many fields ((a, b) < (c, d),
   ROW(...)), as PostgreSQL compares them: field by field, = as all equal,
   <> as any unequal, < <= > >= decided by the first pair that is not equal
   (NULL when that pair holds a NULL): a1 < b1 OR (a1 = b1 AND (...)). */
static Ast *row_compare(P *p, Ast *x)
{
    int n = x->a->args.n;
    Ast **a = x->a->args.v, **b = x->b->args.v;
    Ast *e = NULL;
    if (x->op == OP_EQ || x->op == OP_NE) {
        for (int i = 0; i < n; i++) {
            Ast *c = row_bin(p, x, x->op, a[i], b[i]);
            e = e ? row_bin(p, x, x->op == OP_EQ ? OP_AND : OP_OR, e, c) : c;
        }
        return e;
    }
    int strict = x->op == OP_LE ? OP_LT : x->op == OP_GE ? OP_GT : x->op;
    e = row_bin(p, x, x->op, a[n - 1], b[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        e = row_bin(p, x, OP_OR, row_bin(p, x, strict, a[i], b[i]),
                    row_bin(p, x, OP_AND, row_bin(p, x, OP_EQ, a[i], b[i]), e));
    return e;
}

static __attribute__((noinline)) Expr *bind_binary(P *p, BindCtx *bc, Ast *x)
{
    Expr *l, *r;
    if (x->op == OP_AND || x->op == OP_OR)
        return bind_chain(p, bc, x);
    if (x->op >= OP_EQ && x->op <= OP_GE && is_row_ctor(x->a) && is_row_ctor(x->b)) {
        if (x->a->args.n != x->b->args.n) {
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "row comparison of %d fields with %d fields", x->a->args.n, x->b->args.n);
            return NULL;
        }
        return sql__bind(p, bc, row_compare(p, x));
    }
    if (!(l = sql__bind(p, bc, x->a)) || !(r = sql__bind(p, bc, x->b)))
        return NULL;
    switch (x->op) {
    case OP_EQ: return sql__compare(p, x, E_EQ, l, r);
    case OP_NE: return sql__compare(p, x, E_NE, l, r);
    case OP_LT: return sql__compare(p, x, E_LT, l, r);
    case OP_LE: return sql__compare(p, x, E_LE, l, r);
    case OP_GT: return sql__compare(p, x, E_GT, l, r);
    case OP_GE: return sql__compare(p, x, E_GE, l, r);
    default: return sql__arith(p, x, x->op, l, r);
    }
}

static __attribute__((noinline)) Expr *bind_inner(P *p, BindCtx *bc, Ast *x)
{
    Expr *l, *r;
    switch (x->k) {
    case A_COL: {
        int i = 0;
        Expr *fe;
        if (x->qual && sql__bind_col_field(p, bc, x, &fe)) /* rowcol.field */
            return fe;
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
        return bind_binary(p, bc, x);
    case A_UN:
        if (!(l = sql__bind(p, bc, x->a)))
            return NULL;
        if (x->op == OP_NOT) {
            if (!(l = sql__bool_operand(p, l, x->a, "NOT")))
                return NULL;
            return negate_if(p, l, true);
        }
        if (l->t.kind == TK_NULL)
            l = sql__cast_to(p, l, type_make(TK_INT, true));
        if (!type_is_numeric(l->t.kind) && !type_is_interval(l->t.kind)) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "unary - needs a numeric operand, not %s",
                 tname(l->t));
            return NULL;
        } else {
            Expr *e = sql__mk(p, E_NEG, l->t, 1);
            e->a[0] = l;
            return e;
        }
    case A_FUNC:
        return sql__bind_func(p, bc, x);
    case A_CASE:
        return bind_case(p, bc, x);
    case A_CAST: {
        if (!(l = sql__bind(p, bc, x->a)))
            return NULL;
        SqlType t = x->type;
        /* a VARIANT that holds no such value gives NULL */
        t.nullable = l->t.nullable || (l->t.kind == TK_VARIANT && t.kind != TK_VARIANT);
        if (!expr_cast_exists(l->t.kind, t.kind) ||
            (l->t.kind == TK_ARRAY && t.kind == TK_ARRAY &&
             !expr_cast_exists(l->t.elem, t.elem))) { /* it would refuse every record */
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "cannot cast %s to %s: there is no conversion between these types",
                 tname(l->t), tname(t));
            return NULL;
        }
        Expr *e = sql__mk(p, E_CAST, t, 1);
        if (l->k == E_CONST && l->cnull) {
            l->t = t;
            l->t.nullable = 1;
            return l;
        }
        e->a[0] = l;
        return sql__same_repr(l->t, t) ? l : e;
    }
    case A_BETWEEN: {
        Expr *v = sql__bind(p, bc, x->a), *lo, *hi;
        if (!v || !(lo = sql__bind(p, bc, x->b)) || !(hi = sql__bind(p, bc, x->c)))
            return NULL;
        Expr *a = sql__compare(p, x, E_GE, v, lo), *b = a ? sql__compare(p, x, E_LE, v, hi) : NULL;
        if (!b)
            return NULL;
        Expr *e = sql__nary_bool(p, E_AND, a, b);
        return negate_if(p, e, x->negated);
    }
    case A_IN: {
        if (x->sub)
            return bind_subquery(p, bc, x);
        int n = x->args.n;
        bool rows = is_row_ctor(x->a) && n > 0;
        for (int i = 0; i < n && rows; i++)
            rows = is_row_ctor(x->args.v[i]);
        if (rows) { /* (a, b) IN ((1, 2), ...): row comparisons ORed */
            Ast *e = NULL;
            for (int i = 0; i < n; i++) {
                Ast *c = row_bin(p, x, OP_EQ, x->a, x->args.v[i]);
                e = e ? row_bin(p, x, OP_OR, e, c) : c;
            }
            if (x->negated) {
                Ast *u = arena_zalloc(p->a, sizeof(*u));
                u->k = A_UN;
                u->op = OP_NOT;
                u->line = x->line;
                u->col = x->col;
                u->a = e;
                e = u;
            }
            return sql__bind(p, bc, e);
        }
        Expr *v = sql__bind(p, bc, x->a);
        if (!v)
            return NULL;
        Expr **items = arena_alloc(p->a, sizeof(Expr *) * (size_t)n);
        SqlType t = v->t;
        bool nul = v->t.nullable;
        for (int i = 0; i < n; i++) {
            if (!(items[i] = sql__bind(p, bc, x->args.v[i])))
                return NULL;
            if (!sql__common_type(t, items[i]->t, &t)) {
                perr(p, SL_ESEMANTIC, x->args.v[i]->line, x->args.v[i]->col,
                     "cannot compare %s with %s in IN list", tname(v->t), tname(items[i]->t));
                return NULL;
            }
            nul = nul || items[i]->t.nullable;
        }
        if (t.kind == TK_NULL)
            t = type_make(TK_INT, true);
        Expr *e = sql__mk(p, E_IN, type_make(TK_BOOL, nul), n + 1);
        e->a[0] = sql__cast_to(p, v, t);
        for (int i = 0; i < n; i++)
            e->a[i + 1] = sql__cast_to(p, items[i], t);
        return negate_if(p, e, x->negated);
    }
    case A_ISNULL: {
        if (!(l = sql__bind(p, bc, x->a)))
            return NULL;
        if (l->t.kind == TK_ROW)
            return sql__row_null_test(p, l, x->negated);
        Expr *e = sql__mk(p, x->negated ? E_ISNOTNULL : E_ISNULL, type_make(TK_BOOL, false), 1);
        e->a[0] = l;
        return e;
    }
    case A_DISTINCT: {
        /* a IS NOT DISTINCT FROM b = COALESCE(a = b, a IS NULL AND b IS NULL):
           never NULL; plan.c joins on it as a null-safe key (sql__nd_eq) */
        if (!(l = sql__bind(p, bc, x->a)) || !(r = sql__bind(p, bc, x->b)) ||
            !(l = sql__compare(p, x, E_EQ, l, r)))
            return NULL;
        if (l->t.nullable) {
            Expr *both = sql__mk(p, E_AND, type_make(TK_BOOL, false), 2);
            for (int i = 0; i < 2; i++) {
                both->a[i] = sql__mk(p, E_ISNULL, type_make(TK_BOOL, false), 1);
                both->a[i]->a[0] = l->a[i];
            }
            Expr *e = sql__mk(p, E_COALESCE, type_make(TK_BOOL, false), 2);
            e->a[0] = l;
            e->a[1] = both;
            l = e;
        }
        return negate_if(p, l, !x->negated);
    }
    case A_ISBOOL: {
        if (!(l = sql__bind(p, bc, x->a)) || !(l = sql__bool_operand(p, l, x->a, "IS TRUE/FALSE")))
            return NULL;
        /* IS NOT TRUE = NOT (IS TRUE), never NULL */
        Expr *e = sql__mk(p, x->ival ? E_ISTRUE : E_ISFALSE, type_make(TK_BOOL, false), 1);
        e->a[0] = l;
        return negate_if(p, e, x->negated);
    }
    case A_LIKE: {
        Expr *esc = NULL;
        if (!(l = sql__bind(p, bc, x->a)) || !(r = sql__bind(p, bc, x->b)))
            return NULL;
        if (x->c && !(esc = sql__bind(p, bc, x->c)))
            return NULL;
        SqlType vs = type_make(TK_VARCHAR, false);
        Expr *e = sql__mk(p, E_LIKE, type_make(TK_BOOL, l->t.nullable || r->t.nullable ||
                                                       (esc && esc->t.nullable)), esc ? 3 : 2);
        e->a[0] = sql__cast_to(p, l, vs);
        e->a[1] = sql__cast_to(p, r, vs);
        if (esc)
            e->a[2] = sql__cast_to(p, esc, vs);
        for (int i = 0; x->ival && i < e->na; i++) { /* ILIKE: LOWER(s) LIKE LOWER(pattern) */
            Expr *lo = sql__mk(p, E_FUNC, e->a[i]->t, 1);
            lo->fn = FN_LOWER;
            lo->a[0] = e->a[i];
            e->a[i] = lo;
        }
        return negate_if(p, e, x->negated);
    }
    case A_EXTRACT: {
        static const struct { const char *n; int fn; } fields[] = {
            {"year", FN_EXTRACT_YEAR},     {"month", FN_EXTRACT_MONTH},
            {"day", FN_EXTRACT_DAY},       {"hour", FN_EXTRACT_HOUR},
            {"minute", FN_EXTRACT_MINUTE}, {"second", FN_EXTRACT_SECOND},
            {"dow", FN_EXTRACT_DOW},       {"doy", FN_EXTRACT_DOY},
            {"epoch", FN_EXTRACT_EPOCH},   {"week", FN_EXTRACT_WEEK},
            {"quarter", FN_EXTRACT_QUARTER}, {"millisecond", FN_EXTRACT_MILLISECOND},
            {"microsecond", FN_EXTRACT_MICROSECOND},
        };
        if (!(l = sql__bind(p, bc, x->a)))
            return NULL;
        if (!type_is_temporal(l->t.kind) && !type_is_interval(l->t.kind)) {
            perr(p, SL_ESEMANTIC, x->line, x->col,
                 "EXTRACT needs a DATE, TIME, TIMESTAMP or INTERVAL, not %s", tname(l->t));
            return NULL;
        }
        if (type_is_interval(l->t.kind) &&
            (!strcasecmp(x->name, "dow") || !strcasecmp(x->name, "doy") ||
             !strcasecmp(x->name, "week"))) {
            perr(p, SL_ESEMANTIC, x->line, x->col, "EXTRACT field %s is not defined for %s",
                 x->name, tname(l->t));
            return NULL;
        }
        static const char *const tzf[] = {"timezone", "timezone_hour", "timezone_minute"};
        for (int i = 0; i < 3; i++)
            if (!strcasecmp(x->name, tzf[i])) {
                if (l->t.kind != TK_TIMESTAMPTZ) {
                    perr(p, SL_ESEMANTIC, x->line, x->col,
                         "EXTRACT field %s needs a TIMESTAMP WITH TIME ZONE, not %s", x->name,
                         tname(l->t));
                    return NULL;
                }
                Expr *e = sql__mk(p, E_FUNC, type_make(TK_BIGINT, l->t.nullable), 2);
                e->fn = FN_TZ_OFFSET;
                e->a[0] = l;
                e->a[1] = expr_const_i64(p->a, type_make(TK_BIGINT, false), i);
                return e;
            }
        /* TIMESTAMPTZ: fields of its wall-clock time in the session zone;
           EPOCH counts seconds of the instant itself */
        if (l->t.kind == TK_TIMESTAMPTZ && strcasecmp(x->name, "epoch"))
            l = sql__cast_to(p, l, type_make(TK_TIMESTAMP, l->t.nullable));
        for (size_t i = 0; i < ARRAY_LEN(fields); i++)
            if (!strcasecmp(fields[i].n, x->name)) {
                Expr *e = sql__mk(p, E_FUNC, type_make(TK_BIGINT, l->t.nullable), 1);
                e->fn = fields[i].fn;
                e->a[0] = l;
                return e;
            }
        perr(p, SL_EUNSUPPORTED, x->line, x->col, "EXTRACT field %s is not supported yet", x->name);
        return NULL;
    }
    case A_SUBQUERY:
    case A_EXISTS:
        return bind_subquery(p, bc, x);
    }
    perr(p, SL_EUNSUPPORTED, x->line, x->col, "expression not supported yet");
    return NULL;
}

/* Above an aggregation: x bound as a reference to the GROUP BY expression
   it equals (*out set, returns 0), or *out NULL when it is none (returns
   0), or -1 with p->err set (a bare column not grouped). Kept out of
   sql__bind's frame (two Errs) so that the binder's recursion stays small. */
static __attribute__((noinline)) int group_ref(P *p, BindCtx *bc, Ast *x, Expr **out)
{
    AggCtx *ag = bc->agg;
    Err save = *p->err, tmp = {0};
    Err *orig = p->err;
    AggCtx none = {0};
    BindCtx plain = {bc->s, &none, bc->clause};
    *out = NULL;
    p->err = &tmp;
    Expr *e = bind_inner(p, &plain, x);
    p->err = orig;
    *p->err = save;
    bool top = ag->top;
    ag->top = false;
    if (e) {
        for (int i = 0; i < ag->ngroup; i++)
            if (sql__expr_equal(e, ag->group[i])) {
                /* grouping sets: a constant key inside an expression stays
                   the constant, as PostgreSQL folds it (plan_gsets.c) */
                if (ag->gtypes && !top && !sql__refs_any(ag->group[i]))
                    break;
                *out = expr_col(p->a, i, ag->gtypes ? ag->gtypes[i] : ag->group[i]->t);
                return 0;
            }
    }
    if (x->k == A_COL) {
        if (!e) /* unknown column: report that */
            return (*out = bind_inner(p, &plain, x)) ? 0 : -1;
        perr(p, SL_ESEMANTIC, x->line, x->col,
             "column \"%s\" must appear in GROUP BY or be used in an aggregate function",
             x->name);
        return -1;
    }
    return 0;
}

/* Bind x. Above an aggregation, a subtree equal to a GROUP BY expression
   becomes a reference to the group column; bare columns elsewhere are an
   error; aggregate calls become references to their output column. */
Expr *sql__bind(P *p, BindCtx *bc, Ast *x)
{
    AggCtx *ag = bc->agg;
    if (!ag || !ag->allowed)
        return x->k == A_BIN ? bind_binary(p, bc, x) : bind_inner(p, bc, x);
    bool top = ag->top; /* only the outermost call binds a whole item */
    ag->top = false;
    if (x->k == A_FUNC && x->over) /* plan_window.c */
        return sql__bind_window(p, bc, x);
    if (x->k == A_FUNC && sql__is_agg_name(x->name))
        return sql__bind_agg_call(p, bc, x);
    if (sql__agg_later(p, x))
        return NULL;
    /* try as a group expression */
    if (x->k != A_INT && x->k != A_NUM && x->k != A_STR && x->k != A_NULL && x->k != A_BOOL &&
        x->k != A_TYPED) {
        Expr *e;
        ag->top = top;
        if (group_ref(p, bc, x, &e))
            return NULL;
        if (e)
            return e;
    }
    /* not a group expression as a whole: bind its children in agg mode */
    return x->k == A_BIN ? bind_binary(p, bc, x) : bind_inner(p, bc, x);
}

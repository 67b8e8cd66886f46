/*
 * expr/fn_num.c - numeric functions (ABS, FLOOR, CEIL, ROUND, SIGN, POWER,
 * SQRT, LN, EXP) over vectors.
 * In: operands evaluated into dense Vecs by expr_eval (expr.c), the output
 * Vec allocated with the node's type and the row mask m (expr_int.h).
 * Out: values of the node's type. Each function computes in its operand's
 * own domain, widened (integers as BIGINT, DECIMAL(p,s) as DECIMAL(38,s) in
 * 128 bits,
 * floats as DOUBLE), then converts to the result type with the CAST kernel,
 * which checks the range: ROUND(9.99, 1) fits DECIMAL(18,2) but not
 * DECIMAL(3,2), and the error names the value. Floating point follows IEEE
 * (SQRT(-1) is NaN, LN(0) is -Infinity), no errors.
 */
#include <math.h>

#include "expr_int.h"

/* A scratch vector of the wide type for a's domain. */
static void wide_vec(EvalCtx *cx, const Vec *a, int64_t n, Vec *w)
{
    SqlType t = a->t;
    t.nullable = 0;
    if (type_phys(t) == PHYS_F64) {
        t = type_make(TK_DOUBLE, false);
    } else if (t.kind == TK_DECIMAL) {
        t.prec = DECIMAL_MAX_PREC;
    } else {
        t = type_make(TK_BIGINT, false);
    }
    expr__vec(cx, t, n, w);
}

/* The same for 128-bit x (a DECIMAL), 0 <= k. */
static bool round_units128(i128 x, int k, i128 *out)
{
    if (k <= 0) {
        *out = x;
        return true;
    }
    if (k > 38) {
        *out = 0;
        return true;
    }
    i128 u = pow10_i128(k), q = x / u, r = x % u;
    i128 ar = r < 0 ? -r : r;
    q += ar >= u - ar ? (r < 0 ? -1 : 1) : 0;
    return !__builtin_mul_overflow(q, u, out);
}

/* Round x (scaled integer) to a multiple of 10^k, half away from zero. */
static bool round_units(int64_t x, int k, int64_t *out)
{
    if (k <= 0) {
        *out = x;
        return true;
    }
    if (k > 18) {
        *out = 0;
        return true;
    }
    int64_t u = pow10_i64(k), q = x / u, r = x % u;
    uint64_t ar = r < 0 ? (uint64_t)0 - (uint64_t)r : (uint64_t)r;
    q += ar >= (uint64_t)u - ar ? (r < 0 ? -1 : 1) : 0;
    return !__builtin_mul_overflow(q, u, out);
}

static int overflow_in(EvalCtx *cx, const char *fn, SqlType t)
{
    return expr__overflow(cx, fn, t);
}

static int fn_abs(const Vec *a, int64_t n, Vec *w, const uint8_t *m, EvalCtx *cx)
{
    if (w->f) {
        const double *x = expr__as_f64(cx, a, n);
        for (int64_t k = 0; k < n; k++)
            w->f[k] = fabs(x[k]);
        return 0;
    }
    if (w->x) { /* |DECIMAL| < 10^38: no overflow */
        const i128 *y = expr__as_i128(cx, a, n);
        for (int64_t k = 0; k < n; k++)
            w->x[k] = y[k] < 0 ? -y[k] : y[k];
        return 0;
    }
    const int64_t *x = a->i;
    bool bad = false;
    for (int64_t k = 0; k < n; k++) {
        bool o = x[k] == INT64_MIN;
        w->i[k] = x[k] < 0 && !o ? -x[k] : x[k];
        bad |= o & !m[k];
    }
    return bad ? overflow_in(cx, "ABS", a->t) : 0;
}

static int fn_floor_ceil(const Vec *a, int64_t n, Vec *w, const uint8_t *m, EvalCtx *cx,
                         bool ceil_)
{
    if (w->f) {
        const double *x = expr__as_f64(cx, a, n);
        if (ceil_)
            for (int64_t k = 0; k < n; k++)
                w->f[k] = ceil(x[k]);
        else
            for (int64_t k = 0; k < n; k++)
                w->f[k] = floor(x[k]);
        return 0;
    }
    if (w->x) {
        const i128 *y = expr__as_i128(cx, a, n);
        int s = a->t.scale;
        i128 u = pow10_i128(s);
        bool bad = false;
        for (int64_t k = 0; k < n; k++) {
            i128 q = y[k] / u;
            if (q * u != y[k] && (y[k] < 0) != ceil_)
                q += ceil_ ? 1 : -1;
            bad |= __builtin_mul_overflow(q, u, &w->x[k]) & !m[k];
        }
        return bad ? overflow_in(cx, ceil_ ? "CEIL" : "FLOOR", w->t) : 0;
    }
    const int64_t *x = a->i;
    int s = a->t.kind == TK_DECIMAL ? a->t.scale : 0;
    if (s == 0) {
        w->i = (int64_t *)x;
        return 0;
    }
    int64_t u = pow10_i64(s);
    bool bad = false;
    for (int64_t k = 0; k < n; k++) {
        int64_t q = expr__floor_div(x[k], u);
        q += ceil_ && q * u != x[k];
        bad |= __builtin_mul_overflow(q, u, &w->i[k]) & !m[k];
    }
    return bad ? overflow_in(cx, ceil_ ? "CEIL" : "FLOOR", w->t) : 0;
}

static int fn_round(const Vec *args, int na, int64_t n, Vec *w, const uint8_t *m, EvalCtx *cx)
{
    const Vec *a = &args[0];
    const int64_t *dg = na > 1 ? args[1].i : NULL;
    if (w->f) {
        const double *x = expr__as_f64(cx, a, n);
        for (int64_t k = 0; k < n; k++) {
            int64_t d = dg ? dg[k] : 0;
            double r;
            if (d == 0)
                r = round(x[k]);
            else if (d > 308 || d < -308)
                r = d > 0 ? x[k] : 0.0 * x[k];
            else if (d > 0) {
                double p = pow(10.0, (double)d);
                r = round(x[k] * p) / p;
                if (!isfinite(r))
                    r = x[k];
            } else {
                double p = pow(10.0, (double)-d);
                r = round(x[k] / p) * p;
            }
            w->f[k] = r;
        }
        if (a->t.kind == TK_REAL)
            for (int64_t k = 0; k < n; k++)
                w->f[k] = (double)(float)w->f[k];
        return 0;
    }
    int s = a->t.kind == TK_DECIMAL ? a->t.scale : 0;
    bool bad = false;
    if (w->x) {
        const i128 *y = expr__as_i128(cx, a, n);
        for (int64_t k = 0; k < n; k++) {
            int64_t d = dg ? dg[k] : 0;
            int64_t kk = (int64_t)s - d;
            int kd = kk < 0 ? 0 : kk > 39 ? 39 : (int)kk;
            bad |= !round_units128(y[k], kd, &w->x[k]) & !m[k];
        }
        return bad ? overflow_in(cx, "ROUND", w->t) : 0;
    }
    const int64_t *x = a->i;
    for (int64_t k = 0; k < n; k++) {
        int64_t d = dg ? dg[k] : 0;
        int64_t kk = (int64_t)s - d;
        int kd = kk < 0 ? 0 : kk > 19 ? 19 : (int)kk;
        bad |= !round_units(x[k], kd, &w->i[k]) & !m[k];
    }
    return bad ? overflow_in(cx, "ROUND", w->t) : 0;
}

static int fn_sign(const Vec *a, int64_t n, Vec *w, EvalCtx *cx)
{
    if (w->f) {
        const double *x = expr__as_f64(cx, a, n);
        for (int64_t k = 0; k < n; k++)
            w->f[k] = isnan(x[k]) ? x[k] : (double)((x[k] > 0) - (x[k] < 0));
        return 0;
    }
    if (w->x) {
        const i128 *y = expr__as_i128(cx, a, n);
        for (int64_t k = 0; k < n; k++)
            w->x[k] = (y[k] > 0) - (y[k] < 0);
        return 0;
    }
    const int64_t *x = a->i;
    for (int64_t k = 0; k < n; k++)
        w->i[k] = (x[k] > 0) - (x[k] < 0);
    return 0;
}

/* w converted to out's type; a result out of out's range (same scale) is an
 * overflow of the function itself, e.g. "integer overflow in ABS for INT". */
static int finish(int fn, const Vec *w, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    static const char *const names[] = {[FN_ABS] = "ABS", [FN_FLOOR] = "FLOOR",
                                        [FN_CEIL] = "CEIL", [FN_ROUND] = "ROUND",
                                        [FN_SIGN] = "SIGN"};
    TypeKind to = (TypeKind)out->t.kind;
    if (w->i && out->i && (type_is_integer(to) || to == TK_DECIMAL) &&
        (to == TK_DECIMAL ? out->t.scale : 0) == (w->t.kind == TK_DECIMAL ? w->t.scale : 0) &&
        fn < (int)ARRAY_LEN(names) && names[fn]) {
        int64_t lo, hi;
        expr__range(out->t, &lo, &hi);
        bool bad = false;
        for (int64_t k = 0; k < n; k++)
            bad |= ((w->i[k] < lo) | (w->i[k] > hi)) & !m[k];
        if (bad)
            return expr__overflow(cx, names[fn], out->t);
    }
    if (w->x && to == TK_DECIMAL && out->t.scale == w->t.scale && fn < (int)ARRAY_LEN(names) &&
        names[fn]) {
        i128 hi = pow10_i128(out->t.prec) - 1;
        bool bad = false;
        for (int64_t k = 0; k < n; k++)
            bad |= ((w->x[k] < -hi) | (w->x[k] > hi)) & !m[k];
        if (bad)
            return expr__overflow(cx, names[fn], out->t);
    }
    return expr__cast(w, n, cx, out, (uint8_t *)m);
}

int expr__fn_num(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    if (e->na < 1)
        return err_set(cx->err, SL_ERUNTIME, "function %d needs an operand", e->fn);
    const Vec *a = &args[0];
    if (type_phys(a->t) == PHYS_STR)
        return err_set(cx->err, SL_ERUNTIME, "numeric function %d applied to a string", e->fn);
    Vec w;
    int rc = 0;
    switch (e->fn) {
    case FN_ABS:
        wide_vec(cx, a, n, &w);
        rc = fn_abs(a, n, &w, m, cx);
        break;
    case FN_FLOOR:
    case FN_CEIL:
        wide_vec(cx, a, n, &w);
        rc = fn_floor_ceil(a, n, &w, m, cx, e->fn == FN_CEIL);
        break;
    case FN_ROUND:
        wide_vec(cx, a, n, &w);
        rc = fn_round(args, e->na, n, &w, m, cx);
        break;
    case FN_SIGN:
        /* the sign as a number of a's domain with scale 0 */
        wide_vec(cx, a, n, &w);
        w.t.scale = 0;
        rc = fn_sign(a, n, &w, cx);
        break;
    case FN_POWER:
    case FN_SQRT:
    case FN_LN:
    case FN_EXP: {
        expr__vec(cx, type_make(TK_DOUBLE, false), n, &w);
        const double *x = expr__as_f64(cx, a, n);
        double *z = w.f;
        if (e->fn == FN_POWER) {
            if (e->na < 2)
                return err_set(cx->err, SL_ERUNTIME, "POWER needs two operands");
            const double *y = expr__as_f64(cx, &args[1], n);
            for (int64_t k = 0; k < n; k++)
                z[k] = pow(x[k], y[k]);
        } else if (e->fn == FN_SQRT) {
            for (int64_t k = 0; k < n; k++)
                z[k] = sqrt(x[k]);
        } else if (e->fn == FN_LN) {
            for (int64_t k = 0; k < n; k++)
                z[k] = log(x[k]);
        } else {
            for (int64_t k = 0; k < n; k++)
                z[k] = exp(x[k]);
        }
        break;
    }
    default: return err_set(cx->err, SL_ERUNTIME, "unknown function %d", e->fn);
    }
    if (rc)
        return rc;
    return finish(e->fn, &w, n, cx, out, m);
}

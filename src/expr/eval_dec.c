/*
 * expr/eval_dec.c - the 128-bit DECIMAL path of the evaluator: arithmetic,
 * negation, comparison and casts when an operand or the result is a wide
 * DECIMAL (precision 19..38, PHYS_I128). DECIMAL(p <= 18) keeps the 64-bit
 * kernels of expr.c and eval_cast.c; this file is reached from their
 * dispatch only when a wide type is involved.
 * In: operands evaluated into dense vectors (int64 or __int128 values,
 * scaled by 10^scale of their type), the output vector allocated with the
 * node's type. Out: values scaled by 10^out->t.scale; |value| < 10^p.
 *
 * Exactness: every operation is exact or rounds as documented; a result
 * that does not fit DECIMAL(p,s) is SL_ERUNTIME ("decimal overflow in *"),
 * never a wrap. + and - are exact (operands share the result's scale); *
 * rounds half away from zero when the binder reduced the result scale
 * below s1 + s2 (the product is formed in 256 bits, so no digit is lost
 * before rounding); / truncates toward zero at the result scale (as the
 * 64-bit path does), forming x * 10^k / y in 256 bits; % is exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "expr_int.h"

typedef unsigned __int128 u128;

/* ------------------------------------------------------ 256-bit helpers */

typedef struct U256 {
    uint64_t w[4]; /* least significant limb first */
} U256;

static U256 u256_mul(u128 a, u128 b)
{
    uint64_t x[2] = {(uint64_t)a, (uint64_t)(a >> 64)};
    uint64_t y[2] = {(uint64_t)b, (uint64_t)(b >> 64)};
    U256 r = {{0, 0, 0, 0}};
    for (int i = 0; i < 2; i++) {
        u128 carry = 0;
        for (int j = 0; j < 2; j++) {
            u128 t = (u128)x[i] * y[j] + r.w[i + j] + carry;
            r.w[i + j] = (uint64_t)t;
            carry = t >> 64;
        }
        r.w[i + 2] = (uint64_t)carry;
    }
    return r;
}

static bool u256_fits128(const U256 *a) { return !a->w[2] && !a->w[3]; }
static u128 u256_lo(const U256 *a) { return ((u128)a->w[1] << 64) | a->w[0]; }

/* q = a / d, returns a % d (d != 0): bitwise long division. */
static u128 u256_divmod(const U256 *a, u128 d, U256 *q)
{
    if (u256_fits128(a)) {
        u128 x = u256_lo(a);
        *q = (U256){{(uint64_t)(x / d), (uint64_t)((x / d) >> 64), 0, 0}};
        return x % d;
    }
    U256 r = {{0, 0, 0, 0}};
    u128 rem = 0;
    for (int bit = 255; bit >= 0; bit--) {
        bool top = rem >> 127;
        rem = (rem << 1) | ((a->w[bit / 64] >> (bit % 64)) & 1);
        if (top || rem >= d) {
            rem -= d;
            r.w[bit / 64] |= 1ull << (bit % 64);
        }
    }
    *q = r;
    return rem;
}

/* |v| of a 128-bit value as unsigned. */
static inline u128 uabs(i128 v) { return v < 0 ? (u128)0 - (u128)v : (u128)v; }

/* a / 10^k (k >= 0) rounded half away from zero (a is a magnitude). */
static U256 u256_div_pow10_round(U256 a, int k)
{
    if (k <= 0)
        return a;
    U256 q;
    /* floor(a / 10^(k-1)) in steps of at most 10^38, then the last digit */
    int left = k - 1;
    while (left > 0) {
        int step = left > 38 ? 38 : left;
        u256_divmod(&a, (u128)pow10_i128(step), &q);
        a = q;
        left -= step;
    }
    u128 digit = u256_divmod(&a, 10, &q);
    if (digit >= 5) { /* q + 1 */
        for (int i = 0; i < 4 && ++q.w[i] == 0; i++)
            ;
    }
    return q;
}

/* --------------------------------------------------------- conversions */

i128 *expr__as_i128(EvalCtx *cx, const Vec *v, int64_t n)
{
    if (v->x)
        return v->x;
    i128 *z = arena_alloc(cx->arena, sizeof(i128) * (size_t)(n > 0 ? n : 1));
    for (int64_t k = 0; k < n; k++)
        z[k] = v->i ? v->i[k] : 0;
    return z;
}

/* Scale of a numeric operand: DECIMAL's, 0 for integers. */
static int scale_of(const Vec *v) { return v->t.kind == TK_DECIMAL ? v->t.scale : 0; }

/* Largest magnitude of out's type: 10^p - 1 for DECIMAL, else its range. */
static void range128(SqlType t, i128 *lo, i128 *hi)
{
    if (t.kind == TK_DECIMAL) {
        *hi = pow10_i128(t.prec ? t.prec : DECIMAL_MAX_PREC) - 1;
        *lo = -*hi;
        return;
    }
    int64_t l, h;
    expr__range(t, &l, &h);
    *lo = l;
    *hi = h;
}

/* Store r into row k of out (wide or 64-bit). */
static inline void put(Vec *out, int64_t k, i128 r)
{
    if (out->x)
        out->x[k] = r;
    else
        out->i[k] = (int64_t)r;
}

/* x (scaled by 10^from) rescaled to 10^to, rounding half away from zero
   when digits drop; false on overflow of 128 bits. */
static bool rescale(i128 x, int from, int to, i128 *out)
{
    if (to >= from) {
        int d = to - from;
        if (d > 38)
            return x == 0 ? (*out = 0, true) : false;
        return !__builtin_mul_overflow(x, pow10_i128(d), out);
    }
    int d = from - to;
    if (d > 38) {
        *out = 0;
        return true;
    }
    i128 p = pow10_i128(d), q = x / p, r = x % p;
    u128 ar = uabs(r);
    if (ar >= (u128)p - ar)
        q += r < 0 ? -1 : 1;
    *out = q;
    return true;
}

/* ----------------------------------------------------------- arithmetic */

/* One product x * y (scales s0 + s1) at scale s, rounded; false on
   overflow past 128 bits. */
static bool mul_one(i128 x, i128 y, int sh, i128 *out)
{
    i128 p;
    if (!__builtin_mul_overflow(x, y, &p)) {
        if (sh >= 0)
            return rescale(p, sh, 0, out);
        return rescale(p, 0, -sh, out);
    }
    if (sh <= 0)
        return false;
    bool neg = (x < 0) != (y < 0);
    U256 m = u256_mul(uabs(x), uabs(y));
    U256 q = u256_div_pow10_round(m, sh);
    if (!u256_fits128(&q) || (u256_lo(&q) >> 127))
        return false;
    i128 r = (i128)u256_lo(&q);
    *out = neg ? -r : r;
    return true;
}

/* floor(|x| * 10^sh / |y|) with the sign, truncated toward zero; false on
   overflow. y != 0, sh >= 0. */
static bool div_one(i128 x, i128 y, int sh, i128 *out)
{
    bool neg = (x < 0) != (y < 0);
    u128 ax = uabs(x), ay = uabs(y);
    U256 num, q;
    int a = sh > 38 ? 38 : sh, b = sh - a;
    num = u256_mul(ax, (u128)pow10_i128(a));
    u128 rem = u256_divmod(&num, ay, &q);
    if (b > 0) { /* q * 10^b + rem * 10^b / y */
        if (!u256_fits128(&q) || u256_lo(&q) >= (u128)pow10_i128(38))
            return false;
        u128 qa = u256_lo(&q);
        U256 hi = u256_mul(qa, (u128)pow10_i128(b));
        U256 r2 = u256_mul(rem, (u128)pow10_i128(b)), q2;
        u256_divmod(&r2, ay, &q2);
        if (!u256_fits128(&hi) || !u256_fits128(&q2))
            return false;
        u128 s = u256_lo(&hi) + u256_lo(&q2);
        if (s < u256_lo(&hi))
            return false;
        q = (U256){{(uint64_t)s, (uint64_t)(s >> 64), 0, 0}};
    }
    if (!u256_fits128(&q) || (u256_lo(&q) >> 127))
        return false;
    i128 r = (i128)u256_lo(&q);
    *out = neg ? -r : r;
    return true;
}

int expr__dec_arith(int op, const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, Vec *out,
                    uint8_t *m)
{
    const i128 *x = expr__as_i128(cx, a, n), *y = expr__as_i128(cx, b, n);
    int s0 = scale_of(a), s1 = scale_of(b), s = out->t.scale;
    i128 lo, hi;
    range128(out->t, &lo, &hi);
    bool bad = false;
    int64_t nz = 0;
    switch (op) {
    case E_ADD:
    case E_SUB: {
        /* the binder casts both operands to the result type */
        int fa = s - s0, fb = s - s1;
        if (fa == 0 && fb == 0) { /* the usual case: one loop, no rescaling */
            for (int64_t k = 0; k < n; k++) {
                i128 r;
                bool o = op == E_ADD ? __builtin_add_overflow(x[k], y[k], &r)
                                     : __builtin_sub_overflow(x[k], y[k], &r);
                o |= (r < lo) | (r > hi);
                put(out, k, r);
                bad |= o & !m[k];
            }
            break;
        }
        for (int64_t k = 0; k < n; k++) {
            i128 u, v, r = 0;
            bool o = !rescale(x[k], s0, s0 + fa, &u) | !rescale(y[k], s1, s1 + fb, &v);
            o |= op == E_ADD ? __builtin_add_overflow(u, v, &r) : __builtin_sub_overflow(u, v, &r);
            o |= (r < lo) | (r > hi);
            put(out, k, r);
            bad |= o & !m[k];
        }
        break;
    }
    case E_MUL: {
        int sh = s0 + s1 - s;
        if (sh == 0) { /* exact scale: a product that passes 128 bits overflows */
            for (int64_t k = 0; k < n; k++) {
                i128 r;
                bool o = __builtin_mul_overflow(x[k], y[k], &r);
                o |= (r < lo) | (r > hi);
                put(out, k, o ? 0 : r);
                bad |= o & !m[k];
            }
            break;
        }
        for (int64_t k = 0; k < n; k++) {
            i128 r = 0;
            bool o = m[k] ? false : !mul_one(x[k], y[k], sh, &r);
            o |= (r < lo) | (r > hi);
            put(out, k, r);
            bad |= o & !m[k];
        }
        break;
    }
    case E_DIV: {
        int sh = s - s0 + s1; /* x * 10^sh / y */
        for (int64_t k = 0; k < n; k++) {
            bool zero = y[k] == 0, live = !m[k];
            i128 r = 0;
            bool o = false;
            if (live && !zero) {
                if (sh >= 0)
                    o = !div_one(x[k], y[k], sh, &r);
                else if (-sh <= 38) /* floor(floor(|x| / 10^-sh) / |y|) */
                    o = !div_one(x[k] / pow10_i128(-sh), y[k], 0, &r);
            }
            o |= (r < lo) | (r > hi);
            put(out, k, r);
            bad |= o & live & !zero;
            nz += zero & live;
            m[k] |= zero;
        }
        break;
    }
    case E_MOD: {
        int fa = s - s0, fb = s - s1;
        for (int64_t k = 0; k < n; k++) {
            i128 u = 0, v = 1, r = 0;
            bool o = !rescale(x[k], s0, s0 + fa, &u) | !rescale(y[k], s1, s1 + fb, &v);
            bool zero = v == 0, live = !m[k];
            r = (zero || v == -1) ? 0 : u % v;
            put(out, k, r);
            bad |= o & live;
            nz += zero & live;
            m[k] |= zero;
        }
        break;
    }
    default: sl_panic("expr__dec_arith: operator %d", op);
    }
    if (bad)
        return expr__overflow(cx, expr__op_text((ExprKind)op), out->t);
    cx->ndivzero += nz;
    return expr__check_nulls(cx, out, "division by zero", nz);
}

int expr__dec_neg(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    const i128 *x = expr__as_i128(cx, a, n);
    i128 lo, hi;
    range128(out->t, &lo, &hi);
    bool bad = false;
    for (int64_t k = 0; k < n; k++) {
        i128 r = -x[k]; /* |x| < 10^38 < 2^127: no wrap */
        put(out, k, r);
        bad |= ((r < lo) | (r > hi)) & !m[k];
    }
    return bad ? expr__overflow(cx, "unary -", out->t) : 0;
}

/* ----------------------------------------------------------- comparison */

void expr__dec_compare(const Vec *a, const Vec *b, int64_t n, EvalCtx *cx, int *c,
                       const uint8_t *m)
{
    const i128 *x = expr__as_i128(cx, a, n), *y = expr__as_i128(cx, b, n);
    int s0 = scale_of(a), s1 = scale_of(b), s = s0 > s1 ? s0 : s1;
    if (s0 == s1) {
        for (int64_t k = 0; k < n; k++)
            c[k] = m[k] ? 0 : (x[k] > y[k]) - (x[k] < y[k]);
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        if (m[k]) {
            c[k] = 0;
            continue;
        }
        i128 u, v;
        bool ou = !rescale(x[k], s0, s, &u), ov = !rescale(y[k], s1, s, &v);
        if (ou | ov) { /* one side has more than 38 digits at the common scale */
            int sx = (x[k] > 0) - (x[k] < 0), sy = (y[k] > 0) - (y[k] < 0);
            if (sx != sy)
                c[k] = (sx > sy) - (sx < sy);
            else /* same sign: the overflowing one has the larger magnitude */
                c[k] = ou ? sx : -sy;
            continue;
        }
        c[k] = (u > v) - (u < v);
    }
}

/* ---------------------------------------------------------------- casts */

int expr__dec_cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    TypeKind from = (TypeKind)a->t.kind, to = (TypeKind)out->t.kind;
    char tn[48];
    if (a->f) { /* REAL/DOUBLE -> wide DECIMAL, through the shortest text */
        Err e = {0};
        for (int64_t k = 0; k < n; k++) {
            i128 r = 0;
            if (!m[k]) {
                double d = a->f[k];
                if (!isfinite(d))
                    return err_set(cx->err, SL_ERUNTIME, "cannot cast %g to %s", d,
                                   type_name(out->t, tn, sizeof(tn)));
                char tmp[64];
                int len = 0;
                bool real = from == TK_REAL;
                for (int p = real ? 6 : 15; p <= (real ? 9 : 17); p++) {
                    len = snprintf(tmp, sizeof(tmp), "%.*g", p, d);
                    if (real ? strtof(tmp, NULL) == (float)d : strtod(tmp, NULL) == d)
                        break;
                }
                if (text_parse_dec(out->t, tmp, (size_t)len, &r, &e))
                    return err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
            }
            put(out, k, r);
        }
        return 0;
    }
    const i128 *x = expr__as_i128(cx, a, n);
    int sf = scale_of(a);
    if (out->f) { /* wide DECIMAL -> REAL/DOUBLE: correctly rounded via text */
        Buf b = BUF_INIT;
        for (int64_t k = 0; k < n; k++) {
            b.n = 0;
            text_format_dec(m[k] ? 0 : x[k], sf, &b);
            double d = strtod(buf_cstr(&b), NULL);
            out->f[k] = to == TK_REAL ? (double)(float)d : d;
        }
        buf_free(&b);
        return 0;
    }
    if (to == TK_BOOL) {
        for (int64_t k = 0; k < n; k++)
            out->i[k] = x[k] != 0;
        return 0;
    }
    int st = to == TK_DECIMAL ? out->t.scale : 0;
    bool round = to == TK_DECIMAL; /* to an integer type: truncate */
    i128 lo, hi;
    range128(out->t, &lo, &hi);
    if (a->i && out->x && st >= sf && st - sf <= 19) { /* 64-bit into 128: never overflows 128 */
        i128 f = pow10_i128(st - sf);
        bool bad = false;
        for (int64_t k = 0; k < n; k++) {
            i128 r = (i128)a->i[k] * f;
            out->x[k] = r;
            bad |= ((r < lo) | (r > hi)) & !m[k];
        }
        if (!bad)
            return 0;
    }
    for (int64_t k = 0; k < n; k++) {
        i128 r = 0;
        bool o = false;
        if (!m[k]) {
            if (!round && st < sf)
                r = x[k] / pow10_i128(sf - st);
            else
                o = !rescale(x[k], sf, st, &r);
            o |= (r < lo) | (r > hi);
        }
        if (o) {
            Buf b = BUF_INIT;
            text_format_dec(x[k], sf, &b);
            err_set(cx->err, SL_ERUNTIME, "%s overflow in CAST to %s: value %s out of range",
                    to == TK_DECIMAL ? "decimal" : "integer", type_name(out->t, tn, sizeof(tn)),
                    buf_cstr(&b));
            buf_free(&b);
            return SL_ERUNTIME;
        }
        put(out, k, r);
    }
    return 0;
}

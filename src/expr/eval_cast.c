/*
 * expr/eval_cast.c - CAST between any two scalar types, a vector at a time.
 * In: the operand evaluated into a dense Vec and the output Vec allocated
 * with the target type (from expr_eval in expr.c, and from the numeric
 * functions in fn_num.c, which compute in a wide type and convert).
 * Out: converted values; out-of-range values and unparsable strings are
 * SL_ERUNTIME naming the value and target type.
 *
 * Rules (expr.h): strings parse with text_parse and format with text_format
 * (CHAR(n) pads with spaces, VARCHAR(n) truncates, CHAR to VARCHAR drops the
 * padding as PostgreSQL does); integers and DECIMAL convert exactly with
 * range checks (DECIMAL rounds half away from zero when the scale shrinks,
 * DECIMAL to an integer type truncates, like float to integer); floats to
 * DECIMAL round half away from zero on the value's shortest decimal text
 * (so 0.285 becomes 0.29, as people expect); DATE <-> TIMESTAMP at midnight
 * and by date part, TIMESTAMP -> TIME by time of day; BOOLEAN <-> numbers as
 * 0/1 (non-zero is TRUE).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "array.h"
#include "expr_int.h"
#include "tz.h"

static bool is_numlike(TypeKind k) { return k == TK_BOOL || type_is_numeric(k); }

static int cannot_cast(EvalCtx *cx, SqlType from, SqlType to)
{
    char a[48], b[48];
    return err_set(cx->err, SL_ERUNTIME, "cannot cast %s to %s", type_name(from, a, sizeof(a)),
                   type_name(to, b, sizeof(b)));
}

/* The first non-NULL row of a for which bad[] is set, in an error message. */
static int range_error(EvalCtx *cx, const Vec *a, const uint8_t *bad, const uint8_t *m,
                       int64_t n, SqlType to)
{
    char tn[48];
    Buf b = BUF_INIT;
    for (int64_t k = 0; k < n; k++) {
        if (bad[k] && !m[k]) {
            Vec v = *a;
            v.nul = NULL;
            text_format_vec(&v, k, &b);
            break;
        }
    }
    err_set(cx->err, SL_ERUNTIME, "%s overflow in CAST to %s: value %s out of range",
            to.kind == TK_DECIMAL ? "decimal" : "integer", type_name(to, tn, sizeof(tn)),
            buf_cstr(&b));
    buf_free(&b);
    return SL_ERUNTIME;
}

static int any_bad(const uint8_t *bad, const uint8_t *m, int64_t n)
{
    uint8_t r = 0;
    for (int64_t k = 0; k < n; k++)
        r |= bad[k] & !m[k];
    return r;
}

/* ------------------------------------------------------------ numerics */

/* Integers, BOOLEAN and DECIMAL to each other (all int64). */
static int int_to_int(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    TypeKind to = (TypeKind)out->t.kind;
    const int64_t *x = a->i;
    int64_t *z = out->i;
    if (to == TK_BOOL) {
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] != 0;
        return 0;
    }
    int sf = a->t.kind == TK_DECIMAL ? a->t.scale : 0;
    int st = to == TK_DECIMAL ? out->t.scale : 0;
    int64_t flo, fhi, lo, hi;
    expr__range(a->t, &flo, &fhi);
    expr__range(out->t, &lo, &hi);
    if (sf == st && lo <= flo && fhi <= hi) {
        out->i = (int64_t *)x; /* widening: share the operand's values */
        return 0;
    }
    uint8_t *bad = arena_alloc(cx->arena, (size_t)n);
    if (st >= sf) {
        int64_t f = pow10_i64(st - sf);
        for (int64_t k = 0; k < n; k++) {
            int64_t r;
            bool o = __builtin_mul_overflow(x[k], f, &r);
            z[k] = r;
            bad[k] = o | (r < lo) | (r > hi);
        }
    } else {
        int ds = sf - st;
        int64_t d = ds > 18 ? 0 : pow10_i64(ds);
        bool round = to == TK_DECIMAL;
        for (int64_t k = 0; k < n; k++) {
            int64_t q = d ? x[k] / d : 0, r = d ? x[k] % d : x[k];
            if (round) {
                uint64_t ar = r < 0 ? (uint64_t)0 - (uint64_t)r : (uint64_t)r;
                q += (d && ar >= (uint64_t)d - ar) ? (r < 0 ? -1 : 1) : 0;
            }
            z[k] = q;
            bad[k] = (q < lo) | (q > hi);
        }
    }
    return any_bad(bad, m, n) ? range_error(cx, a, bad, m, n, out->t) : 0;
}

static int int_to_float(const Vec *a, int64_t n, EvalCtx *cx, Vec *out)
{
    const int64_t *x = a->i;
    double *z = out->f;
    if (a->t.kind == TK_DECIMAL && a->t.scale > 0) {
        double d = (double)pow10_i64(a->t.scale);
        for (int64_t k = 0; k < n; k++)
            z[k] = (double)x[k] / d;
    } else {
        for (int64_t k = 0; k < n; k++)
            z[k] = (double)x[k];
    }
    if (out->t.kind == TK_REAL)
        for (int64_t k = 0; k < n; k++)
            z[k] = (double)(float)z[k];
    return 0;
}

/* One float to DECIMAL(p,s): exact when x * 10^s is a small integer, else
 * through the shortest text of x (rounded half away from zero). */
static bool float_to_decimal(double x, SqlType to, bool real, int64_t *out)
{
    if (!isfinite(x))
        return false;
    double y = x * (double)pow10_i64(to.scale);
    if (fabs(y) < 4503599627370496.0 && y == trunc(y)) {
        *out = (int64_t)y;
        int64_t lo, hi;
        expr__range(to, &lo, &hi);
        return *out >= lo && *out <= hi;
    }
    char tmp[64];
    int len = 0;
    /* shortest round-trip text, as text_format would print it */
    for (int p = real ? 6 : 15; p <= (real ? 9 : 17); p++) {
        len = snprintf(tmp, sizeof(tmp), "%.*g", p, x);
        if (real ? strtof(tmp, NULL) == (float)x : strtod(tmp, NULL) == x)
            break;
    }
    return text_parse(to, tmp, (size_t)len, NULL, out, NULL, NULL, NULL) == 0;
}

static int float_to_int(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    TypeKind to = (TypeKind)out->t.kind;
    const double *x = a->f;
    int64_t *z = out->i;
    if (to == TK_BOOL) {
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] != 0;
        return 0;
    }
    uint8_t *bad = arena_alloc(cx->arena, (size_t)n);
    if (to == TK_DECIMAL) {
        bool real = a->t.kind == TK_REAL;
        for (int64_t k = 0; k < n; k++) {
            z[k] = 0;
            bad[k] = !m[k] && !float_to_decimal(x[k], out->t, real, &z[k]);
        }
    } else {
        int64_t lo, hi;
        expr__range(out->t, &lo, &hi);
        double dlo = (double)lo, dhi = (double)hi + 1.0; /* both powers of two: exact */
        for (int64_t k = 0; k < n; k++) {
            double t = trunc(x[k]);
            bool ok = t >= dlo && t < dhi;
            z[k] = ok ? (int64_t)t : 0;
            bad[k] = !ok;
        }
    }
    return any_bad(bad, m, n) ? range_error(cx, a, bad, m, n, out->t) : 0;
}

static int float_to_float(const Vec *a, int64_t n, Vec *out)
{
    if (out->t.kind == TK_DOUBLE || a->t.kind == TK_REAL) {
        out->f = a->f;
        return 0;
    }
    for (int64_t k = 0; k < n; k++)
        out->f[k] = (double)(float)a->f[k];
    return 0;
}

/* ------------------------------------------------------------- temporal */

/* Between TIMESTAMPTZ (an instant) and the local TIMESTAMP, DATE, TIME of
 * the TIMESTAMPTZ side's session zone. */
static int tstz_cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    TypeKind from = (TypeKind)a->t.kind, to = (TypeKind)out->t.kind;
    const int64_t *x = a->i;
    int64_t *z = out->i;
    if (to == TK_TIMESTAMPTZ && (from == TK_TIMESTAMP || from == TK_DATE)) {
        int zone = out->t.len;
        for (int64_t k = 0; k < n; k++) {
            int64_t l = m[k] ? 0 : x[k];
            if (from == TK_DATE && __builtin_mul_overflow(l, US_PER_DAY, &l))
                return err_set(cx->err, SL_ERUNTIME, "date out of range in CAST to TIMESTAMP WITH TIME ZONE");
            z[k] = tz_local_to_utc_us(zone, l);
        }
        return 0;
    }
    if (from == TK_TIMESTAMPTZ && (to == TK_TIMESTAMP || to == TK_DATE || to == TK_TIME)) {
        int zone = a->t.len;
        for (int64_t k = 0; k < n; k++) {
            int64_t l = tz_utc_to_local_us(zone, m[k] ? 0 : x[k]);
            int64_t d = expr__floor_div(l, US_PER_DAY);
            z[k] = to == TK_TIMESTAMP ? l : to == TK_DATE ? d : l - d * US_PER_DAY;
        }
        return 0;
    }
    return cannot_cast(cx, a->t, out->t);
}

static int time_to_time(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    TypeKind from = (TypeKind)a->t.kind, to = (TypeKind)out->t.kind;
    const int64_t *x = a->i;
    int64_t *z = out->i;
    if (from == to) {
        out->i = (int64_t *)x;
        return 0;
    }
    if (from == TK_TIMESTAMPTZ || to == TK_TIMESTAMPTZ)
        return tstz_cast(a, n, cx, out, m);
    if (from == TK_DATE && to == TK_TIMESTAMP) {
        bool bad = false;
        for (int64_t k = 0; k < n; k++) {
            bool o = __builtin_mul_overflow(x[k], US_PER_DAY, &z[k]);
            bad |= o & !m[k];
        }
        if (bad)
            return err_set(cx->err, SL_ERUNTIME, "date out of range in CAST to TIMESTAMP");
        return 0;
    }
    if (from == TK_TIMESTAMP && to == TK_DATE) {
        for (int64_t k = 0; k < n; k++)
            z[k] = expr__floor_div(x[k], US_PER_DAY);
        return 0;
    }
    if (from == TK_TIMESTAMP && to == TK_TIME) {
        for (int64_t k = 0; k < n; k++)
            z[k] = x[k] - expr__floor_div(x[k], US_PER_DAY) * US_PER_DAY;
        return 0;
    }
    return cannot_cast(cx, a->t, out->t);
}

/* -------------------------------------------------------------- strings */

static const Str empty_str = {"", 0};

/* Length rules of the target string type applied to s (CHAR source padding
 * already dropped when the target is VARCHAR); pads into the arena. */
static Str fit_string(Str s, SqlType to, Arena *a)
{
    if (to.len < 0)
        return s;
    size_t chars = expr__utf8_len(s.p, s.n);
    if (chars > (size_t)to.len) {
        s.n = (uint32_t)expr__utf8_offset(s.p, s.n, (size_t)to.len);
        chars = (size_t)to.len;
    }
    if (to.kind == TK_CHAR && chars < (size_t)to.len) {
        size_t pad = (size_t)to.len - chars;
        char *p = arena_alloc(a, s.n + pad);
        if (s.n)
            memcpy(p, s.p, s.n);
        memset(p + s.n, ' ', pad);
        s.p = p;
        s.n = (uint32_t)(s.n + pad);
    }
    return s;
}

static int str_to_str(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    bool strip = a->t.kind == TK_CHAR && out->t.kind == TK_VARCHAR;
    if (!strip && out->t.len < 0) {
        out->s = a->s;
        return 0;
    }
    for (int64_t k = 0; k < n; k++) {
        if (m[k]) {
            out->s[k] = empty_str;
            continue;
        }
        Str s = a->s[k];
        if (strip)
            while (s.n > 0 && s.p[s.n - 1] == ' ')
                s.n--;
        out->s[k] = fit_string(s, out->t, cx->arena);
    }
    return 0;
}

static int any_to_str(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    Buf b = BUF_INIT;
    uint32_t *off = arena_alloc(cx->arena, sizeof(uint32_t) * (size_t)(n + 1));
    Vec v = *a;
    v.nul = NULL;
    for (int64_t k = 0; k < n; k++) {
        off[k] = (uint32_t)b.n;
        if (!m[k])
            text_format_vec(&v, k, &b);
        if (b.n > UINT32_MAX - 1) { /* (offsets are 32 bits: the text of long arrays) */
            buf_free(&b);
            return err_set(cx->err, SL_ERUNTIME,
                           "CAST to a string: more than 4 GiB of text in one batch of rows");
        }
    }
    off[n] = (uint32_t)b.n;
    char *p = arena_alloc(cx->arena, b.n ? b.n : 1);
    if (b.n)
        memcpy(p, b.p, b.n);
    buf_free(&b);
    for (int64_t k = 0; k < n; k++) {
        Str s = {p + off[k], off[k + 1] - off[k]};
        out->s[k] = m[k] ? empty_str : fit_string(s, out->t, cx->arena);
    }
    return 0;
}

/* ARRAY to ARRAY of another element type: each element through its text
   form (so INT[] to BIGINT[] or VARCHAR[], as the element casts do). */
static int arr_to_arr(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    if (arr_same_elem(a->t, out->t)) {
        for (int64_t k = 0; k < n; k++)
            out->s[k] = m[k] ? empty_str : a->s[k];
        return 0;
    }
    SqlType from = type_elem(a->t), to = type_elem(out->t);
    if (!expr_cast_exists((TypeKind)from.kind, (TypeKind)to.kind))
        return cannot_cast(cx, a->t, out->t);
    Buf b = BUF_INIT, t = BUF_INIT;
    Err e = {0};
    int rc = 0;
    for (int64_t k = 0; k < n && !rc; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        ArrIt it;
        ArrElem el;
        buf_reset(&b);
        arr_it(&it, a->t, a->s[k]);
        while (!rc && arr_next(&it, &el)) {
            if (!el.null) {
                buf_reset(&t);
                if (type_is_wide(from))
                    text_format_dec(el.x, from.scale, &t);
                else
                    text_format(from, el.i, el.f, el.s, &t);
                ArrElem o = {0};
                if (type_is_wide(to))
                    rc = text_parse_dec(to, (const char *)t.p, t.n, &o.x, &e);
                else
                    rc = text_parse(to, (const char *)t.p, t.n, cx->arena, &o.i, &o.f, &o.s, &e);
                if (rc)
                    rc = err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
                el = o;
            }
            arr_put(&b, type_phys(to), &el);
        }
        arr_it_done(&it);
        if (!rc && b.n > UINT32_MAX - 1)
            rc = err_set(cx->err, SL_ERUNTIME, "array CAST result too long (%zu bytes)", b.n);
        if (!rc && b.n) {
            char *d = arena_alloc(cx->arena, b.n);
            memcpy(d, b.p, b.n);
            out->s[k] = (Str){d, (uint32_t)b.n};
        }
    }
    buf_free(&b);
    buf_free(&t);
    return rc;
}

/* ROW to ROW or MAP to MAP of another shape: through the text form (the
   same fields in order, each converted as its text reads). */
static int nested_to_nested(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    Buf b = BUF_INIT;
    Err e = {0};
    int rc = 0;
    for (int64_t k = 0; k < n && !rc; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        buf_reset(&b);
        text_format(a->t, 0, 0, a->s[k], &b);
        if (text_parse(out->t, b.p ? (const char *)b.p : "", b.n, cx->arena, NULL, NULL,
                       &out->s[k], &e))
            rc = err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
    }
    buf_free(&b);
    return rc;
}

static int str_to_any(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    Err e = {0};
    Phys ph = type_phys(out->t);
    if (ph == PHYS_STR) { /* an ARRAY from its text form */
        for (int64_t k = 0; k < n; k++) {
            Str s = a->s[k];
            out->s[k] = empty_str;
            if (!m[k] && text_parse(out->t, s.p ? s.p : "", s.n, cx->arena, NULL, NULL,
                                    &out->s[k], &e))
                return err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
        }
        return 0;
    }
    if (ph == PHYS_I128) {
        for (int64_t k = 0; k < n; k++) {
            Str s = a->s[k];
            out->x[k] = 0;
            if (!m[k] && text_parse_dec(out->t, s.p ? s.p : "", s.n, &out->x[k], &e))
                return err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
        }
        return 0;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t i = 0;
        double f = 0;
        if (!m[k]) {
            Str s = a->s[k];
            if (text_parse(out->t, s.p ? s.p : "", s.n, cx->arena, &i, &f, NULL, &e))
                return err_set(cx->err, SL_ERUNTIME, "%s", e.msg);
        }
        if (ph == PHYS_I64)
            out->i[k] = i;
        else
            out->f[k] = f;
    }
    return 0;
}

/* ------------------------------------------------------------- dispatch */

bool expr_cast_exists(TypeKind from, TypeKind to)
{
    if (from == TK_NULL || to == TK_NULL || from == to || type_is_string(from) ||
        type_is_string(to) || from == TK_VARIANT || to == TK_VARIANT)
        return true;
    if (is_numlike(from) && is_numlike(to))
        return true;
    if (!type_is_temporal(from) || !type_is_temporal(to))
        return false;
    /* time_to_time and tstz_cast: TIME converts to nothing else, and only
       TIMESTAMP and TIMESTAMPTZ convert to TIME */
    if (from == TK_TIME)
        return false;
    return to != TK_TIME || from == TK_TIMESTAMP || from == TK_TIMESTAMPTZ;
}

int expr__cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    TypeKind from = (TypeKind)a->t.kind, to = (TypeKind)out->t.kind;
    if (from == TK_NULL || to == TK_NULL) {
        memset(m, 1, (size_t)n);
        if (out->i)
            memset(out->i, 0, sizeof(int64_t) * (size_t)n);
        if (out->f)
            memset(out->f, 0, sizeof(double) * (size_t)n);
        if (out->x)
            memset(out->x, 0, sizeof(i128) * (size_t)n);
        if (out->s)
            for (int64_t k = 0; k < n; k++)
                out->s[k] = empty_str;
        return expr__check_nulls(cx, out, "CAST of NULL", n);
    }
    if (from == TK_VARIANT || to == TK_VARIANT) /* fn_variant.c */
        return expr__variant_cast(a, n, cx, out, m);
    if (type_is_string(to))
        return type_is_string(from) ? str_to_str(a, n, cx, out, m) : any_to_str(a, n, cx, out, m);
    if (type_is_string(from))
        return str_to_any(a, n, cx, out, m);
    if (from == TK_ARRAY && to == TK_ARRAY)
        return arr_to_arr(a, n, cx, out, m);
    if (from == to && (from == TK_ROW || from == TK_MAP))
        return nested_to_nested(a, n, cx, out, m);
    if (is_numlike(from) && is_numlike(to)) {
        if (a->x || out->x)
            return expr__dec_cast(a, n, cx, out, m);
        bool fi = a->i != NULL, ti = out->i != NULL;
        if (fi && ti)
            return int_to_int(a, n, cx, out, m);
        if (fi)
            return int_to_float(a, n, cx, out);
        if (ti)
            return float_to_int(a, n, cx, out, m);
        return float_to_float(a, n, out);
    }
    if (type_is_temporal(from) && type_is_temporal(to))
        return time_to_time(a, n, cx, out, m);
    return cannot_cast(cx, a->t, out->t);
}

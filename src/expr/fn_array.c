/*
 * expr/fn_array.c - the ARRAY functions (FN_ARRAY .. FN_ARRAY_POSITION and FN_ARRAY_SLICE,
 * expr.h). Unlike the other kernels these see their operands' NULLs
 * themselves: an array holds NULL elements, and || and = ANY have their
 * own rules for NULL operands (PostgreSQL's).
 */
#include <math.h>
#include <string.h>

#include "array.h"
#include "expr_int.h"

static inline bool nul_at(const Vec *v, int64_t k) { return v->nul && v->nul[k]; }

/* b's bytes as the value *out (in the evaluation's arena); an error when
   they are more than a value can hold (a Str's length is 32 bits: an
   array doubled by a recursion, ARRAY_TO_STRING with a long separator). */
static int keep(EvalCtx *cx, const Buf *b, Str *out, const char *what)
{
    *out = (Str){"", 0};
    if (b->n > UINT32_MAX - 1)
        return err_set(cx->err, SL_ERUNTIME, "%s result too long (%zu bytes)", what, b->n);
    if (!b->n)
        return 0;
    char *d = arena_alloc(cx->arena, b->n);
    memcpy(d, b->p, b->n);
    *out = (Str){d, (uint32_t)b->n};
    return 0;
}

static int cmp_f64(double a, double b)
{
    if (isnan(a) || isnan(b)) /* NaN equals NaN and sorts above all */
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

/* Element e (not NULL) against row k of v (not NULL), same type. */
static int cmp_elem(const ArrElem *e, const Vec *v, int64_t k)
{
    if (v->i)
        return (e->i > v->i[k]) - (e->i < v->i[k]);
    if (v->x)
        return (e->x > v->x[k]) - (e->x < v->x[k]);
    if (v->f)
        return cmp_f64(e->f, v->f[k]);
    return expr__strcmp(e->s, v->s[k]);
}

/* c = cmp(x, element) satisfies op (0 = 1 <> 2 < 3 <= 4 > 5 >=). */
static bool holds(int op, int c)
{
    switch (op) {
    case 0: return c == 0;
    case 1: return c != 0;
    case 2: return c < 0;
    case 3: return c <= 0;
    case 4: return c > 0;
    default: return c >= 0;
    }
}

static void elem_text(SqlType et, const ArrElem *e, Buf *out)
{
    if (et.kind == TK_BOOL)
        buf_putc(out, e->i ? 't' : 'f');
    else if (type_is_wide(et))
        text_format_dec(e->x, et.scale, out);
    else
        text_format(et, e->i, e->f, e->s, out);
}

int expr__fn_array(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                   uint8_t *m)
{
    Buf b = BUF_INIT;
    ArrIt it;
    ArrElem el;
    int rc = 0;
    switch (e->fn) {
    case FN_ARRAY:
        for (int64_t k = 0; k < n && !rc; k++) {
            buf_reset(&b);
            for (int j = 0; j < na; j++)
                arr_put_vec(&b, &a[j], k);
            rc = keep(cx, &b, &out->s[k], "ARRAY[...]");
        }
        break;
    case FN_ARRAY_GET:
        for (int64_t k = 0; k < n; k++) {
            vec_zero(out, k);
            m[k] = 1;
            if (nul_at(&a[0], k) || nul_at(&a[1], k) || a[1].i[k] < 1)
                continue;
            int64_t want = a[1].i[k], at = 0;
            arr_it(&it, a[0].t, a[0].s[k]);
            while (arr_next(&it, &el))
                if (++at == want) {
                    arr_get_vec(out, k, &el, cx->arena);
                    m[k] = el.null;
                    break;
                }
            arr_it_done(&it);
        }
        break;
    case FN_CARDINALITY:
    case FN_ARRAY_LENGTH:
        for (int64_t k = 0; k < n; k++) {
            out->i[k] = 0;
            if (nul_at(&a[0], k) || (na > 1 && nul_at(&a[1], k))) {
                m[k] = 1;
                continue;
            }
            out->i[k] = arr_len(a[0].t, a[0].s[k]);
            if (e->fn == FN_ARRAY_LENGTH && (out->i[k] == 0 || a[1].i[k] != 1)) {
                m[k] = 1;
                out->i[k] = 0;
            }
        }
        break;
    case FN_ARRAY_SLICE: {
        Phys ph = type_phys(type_elem(a[0].t));
        for (int64_t k = 0; k < n && !rc; k++) {
            out->s[k] = (Str){"", 0};
            if (nul_at(&a[0], k) || nul_at(&a[1], k) || nul_at(&a[2], k)) {
                m[k] = 1;
                continue;
            }
            int64_t lo = a[1].i[k], hi = a[2].i[k], at = 0;
            buf_reset(&b);
            arr_it(&it, a[0].t, a[0].s[k]);
            while (at < hi && arr_next(&it, &el))
                if (++at >= lo)
                    arr_put(&b, ph, &el);
            arr_it_done(&it);
            rc = keep(cx, &b, &out->s[k], "array slice");
        }
        break;
    }
    case FN_ARRAY_CAT:
        for (int64_t k = 0; k < n && !rc; k++) {
            bool n0 = nul_at(&a[0], k), n1 = nul_at(&a[1], k);
            out->s[k] = (Str){"", 0};
            if (n0 && n1) {
                m[k] = 1;
                continue;
            }
            buf_reset(&b);
            if (!n0)
                buf_append(&b, a[0].s[k].p, a[0].s[k].n);
            if (!n1)
                buf_append(&b, a[1].s[k].p, a[1].s[k].n);
            rc = keep(cx, &b, &out->s[k], "array concatenation");
        }
        break;
    case FN_ARRAY_TO_STRING: {
        SqlType et = type_elem(a[0].t);
        for (int64_t k = 0; k < n && !rc; k++) {
            out->s[k] = (Str){"", 0};
            if (nul_at(&a[0], k) || nul_at(&a[1], k)) {
                m[k] = 1;
                continue;
            }
            bool has_null_text = na > 2 && !nul_at(&a[2], k), first = true;
            buf_reset(&b);
            arr_it(&it, a[0].t, a[0].s[k]);
            while (arr_next(&it, &el)) {
                if (el.null && !has_null_text)
                    continue;
                if (!first)
                    buf_append(&b, a[1].s[k].p, a[1].s[k].n);
                first = false;
                if (el.null)
                    buf_append(&b, a[2].s[k].p, a[2].s[k].n);
                else
                    elem_text(et, &el, &b);
            }
            arr_it_done(&it);
            rc = keep(cx, &b, &out->s[k], "ARRAY_TO_STRING");
        }
        break;
    }
    case FN_ARRAY_ANY:
        for (int64_t k = 0; k < n; k++) {
            int q = (int)a[2].i[k], op = q / 2;
            bool all = q % 2, xnull = nul_at(&a[0], k), unknown = false, decided = false;
            out->i[k] = all;
            if (nul_at(&a[1], k)) {
                m[k] = 1;
                continue;
            }
            arr_it(&it, a[1].t, a[1].s[k]);
            while (!decided && arr_next(&it, &el)) {
                if (xnull || el.null) {
                    unknown = true;
                    continue;
                }
                bool h = holds(op, -cmp_elem(&el, &a[0], k));
                if (h != all) { /* ANY: one true decides; ALL: one false */
                    out->i[k] = !all;
                    decided = true;
                }
            }
            arr_it_done(&it);
            if (!decided && unknown)
                m[k] = 1;
        }
        break;
    case FN_ARRAY_POSITION:
        for (int64_t k = 0; k < n; k++) {
            out->i[k] = 0;
            m[k] = 1;
            if (nul_at(&a[0], k))
                continue;
            bool xnull = nul_at(&a[1], k);
            int64_t at = 0;
            arr_it(&it, a[0].t, a[0].s[k]);
            while (arr_next(&it, &el)) {
                at++;
                if (el.null ? xnull : (!xnull && cmp_elem(&el, &a[1], k) == 0)) {
                    out->i[k] = at;
                    m[k] = 0;
                    break;
                }
            }
            arr_it_done(&it);
        }
        break;
    default:
        rc = err_set(cx->err, SL_ERUNTIME, "not an array function: %d", e->fn);
        break;
    }
    buf_free(&b);
    if (!rc && !out->nul) {
        for (int64_t k = 0; k < n; k++)
            if (m[k])
                return expr__check_nulls(cx, out, expr__fn_name(e->fn), 1);
    }
    return rc;
}

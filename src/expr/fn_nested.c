/*
 * expr/fn_nested.c - the ROW and MAP functions (FN_ROW .. FN_MAP_VALUES,
 * expr.h) over nested.h's encoding. As the ARRAY functions, they see their
 * operands' NULLs themselves: a ROW holds NULL fields, a MAP NULL values.
 */
#include <string.h>

#include "array.h"
#include "expr_int.h"
#include "nested.h"

static inline bool nul_at(const Vec *v, int64_t k) { return v->nul && v->nul[k]; }

static Str keep(EvalCtx *cx, const Buf *b)
{
    if (!b->n)
        return (Str){"", 0};
    char *d = arena_alloc(cx->arena, b->n);
    memcpy(d, b->p, b->n);
    return (Str){d, (uint32_t)b->n};
}

/* The value bytes of key (encoded as an element) in MAP v of shape s:
   [*vp, *ve) and true when found. */
static bool map_find(const NestType *s, Str v, const uint8_t *key, size_t keyn,
                     const uint8_t **vp, const uint8_t **ve)
{
    Phys kp = type_phys(s->t[0]), vph = type_phys(s->t[1]);
    const uint8_t *p = (const uint8_t *)v.p, *end = p + v.n;
    while (p < end) {
        const uint8_t *k1 = nest_elem_end(p, end, kp);
        const uint8_t *v1 = nest_elem_end(k1, end, vph);
        if ((size_t)(k1 - p) == keyn && !memcmp(p, key, keyn)) {
            *vp = k1;
            *ve = v1;
            return true;
        }
        p = v1;
    }
    return false;
}

/* out[k] := the element at [p, q) of class ph (NULL: m[k] = 1). */
static void take_elem(Vec *out, int64_t k, const uint8_t *p, const uint8_t *q, Phys ph,
                      EvalCtx *cx, uint8_t *m)
{
    ArrIt it;
    ArrElem el;
    it.p = p;
    it.end = q;
    it.ph = ph;
    it.tmp = (Buf)BUF_INIT;
    if (arr_next(&it, &el)) {
        arr_get_vec(out, k, &el, cx->arena);
        m[k] = el.null;
    }
    arr_it_done(&it);
}

int expr__fn_nested(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                    uint8_t *m)
{
    Buf b = BUF_INIT, kb = BUF_INIT;
    Str *ents;
    int rc = 0;
    const NestType *s = nest_get(e->fn == FN_ROW || e->fn == FN_MAP ? out->t : a[0].t);
    if (!s) {
        rc = err_set(cx->err, SL_ERUNTIME, "%s over an unknown type", expr__fn_name(e->fn));
        goto done;
    }
    switch (e->fn) {
    case FN_ROW:
        for (int64_t k = 0; k < n; k++) {
            buf_reset(&b);
            for (int j = 0; j < na; j++)
                arr_put_vec(&b, &a[j], k);
            out->s[k] = keep(cx, &b);
        }
        break;
    case FN_ROW_GET: {
        int64_t want = a[1].i[0];
        for (int64_t k = 0; k < n; k++) {
            vec_zero(out, k);
            m[k] = 1;
            if (nul_at(&a[0], k) || want < 0 || want >= s->n)
                continue;
            const uint8_t *p = (const uint8_t *)a[0].s[k].p, *end = p + a[0].s[k].n;
            for (int j = 0; j < want; j++)
                p = nest_elem_end(p, end, type_phys(s->t[j]));
            take_elem(out, k, p, nest_elem_end(p, end, type_phys(s->t[want])),
                      type_phys(s->t[want]), cx, m);
        }
        break;
    }
    case FN_MAP: {
        ents = arena_alloc(cx->arena, sizeof(Str) * (size_t)(na ? na : 1));
        size_t *offs = arena_alloc(cx->arena, sizeof(size_t) * (size_t)(na + 1));
        for (int64_t k = 0; k < n && !rc; k++) {
            buf_reset(&b);
            for (int j = 0; j < na; j++) {
                if (j % 2 == 0 && nul_at(&a[j], k)) {
                    rc = err_set(cx->err, SL_ERUNTIME, "a MAP key cannot be NULL");
                    break;
                }
                offs[j] = b.n;
                arr_put_vec(&b, &a[j], k);
            }
            offs[na] = b.n;
            if (rc)
                break;
            for (int j = 0; j < na; j++)
                ents[j] = (Str){(const char *)b.p + offs[j], (uint32_t)(offs[j + 1] - offs[j])};
            buf_reset(&kb);
            nest_map_build(ents, na / 2, &kb);
            out->s[k] = keep(cx, &kb);
        }
        break;
    }
    case FN_MAP_GET:
    case FN_MAP_CONTAINS_KEY:
        for (int64_t k = 0; k < n; k++) {
            vec_zero(out, k);
            m[k] = 1;
            if (nul_at(&a[0], k) || nul_at(&a[1], k))
                continue;
            buf_reset(&kb);
            arr_put_vec(&kb, &a[1], k);
            const uint8_t *vp, *ve;
            bool found = map_find(s, a[0].s[k], kb.p, kb.n, &vp, &ve);
            if (e->fn == FN_MAP_CONTAINS_KEY) {
                out->i[k] = found;
                m[k] = 0;
            } else if (found) {
                take_elem(out, k, vp, ve, type_phys(s->t[1]), cx, m);
            }
        }
        break;
    case FN_MAP_CARDINALITY:
    case FN_MAP_KEYS:
    case FN_MAP_VALUES: {
        Phys kp = type_phys(s->t[0]), vph = type_phys(s->t[1]);
        for (int64_t k = 0; k < n; k++) {
            if (e->fn == FN_MAP_CARDINALITY)
                out->i[k] = 0;
            else
                out->s[k] = (Str){"", 0};
            if (nul_at(&a[0], k)) {
                m[k] = 1;
                continue;
            }
            const uint8_t *p = (const uint8_t *)a[0].s[k].p, *end = p + a[0].s[k].n;
            int64_t cnt = 0;
            buf_reset(&b);
            while (p < end) {
                const uint8_t *k1 = nest_elem_end(p, end, kp);
                const uint8_t *v1 = nest_elem_end(k1, end, vph);
                if (e->fn == FN_MAP_KEYS)
                    buf_append(&b, p, (size_t)(k1 - p));
                else if (e->fn == FN_MAP_VALUES)
                    buf_append(&b, k1, (size_t)(v1 - k1));
                cnt++;
                p = v1;
            }
            if (e->fn == FN_MAP_CARDINALITY)
                out->i[k] = cnt;
            else
                out->s[k] = keep(cx, &b);
        }
        break;
    }
    default:
        rc = err_set(cx->err, SL_ERUNTIME, "unknown ROW/MAP function %d", e->fn);
    }
done:
    buf_free(&b);
    buf_free(&kb);
    return rc;
}

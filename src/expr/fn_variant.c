/*
 * expr/fn_variant.c - the VARIANT functions (FN_PARSE_JSON ..
 * FN_VARIANT_IS, expr.h) and CASTs to and from VARIANT. Operand NULLs are
 * merged into m before these run (a NULL argument gives NULL); a member or
 * element that is missing, malformed JSON text and a value that does not
 * convert add a NULL.
 */
#include <string.h>

#include "expr_int.h"
#include "variant.h"

static Str keep(EvalCtx *cx, const Buf *b)
{
    if (!b->n)
        return (Str){"", 0};
    char *d = arena_alloc(cx->arena, b->n);
    memcpy(d, b->p, b->n);
    return (Str){d, (uint32_t)b->n};
}

/* Member or element a1[k] of a0[k] per mode (FN_VARIANT_GET). */
static bool get(const Vec *a0, const Vec *a1, int64_t mode, int64_t k, Str *out)
{
    Str v = a0->s[k];
    if (a1->s) {
        Str key = a1->s[k];
        if (mode == 2 && var_kind(v) == VK_ARRAY) {
            /* a path step on an array: an integer, 0-based */
            int64_t i = 0;
            size_t j = 0;
            bool neg = key.n > 0 && key.p[0] == '-';
            j = neg;
            if (j == key.n || key.n - j > 18)
                return false;
            for (; j < key.n; j++) {
                if (key.p[j] < '0' || key.p[j] > '9')
                    return false;
                i = i * 10 + (key.p[j] - '0');
            }
            return var_get_index(v, neg ? -i : i, out);
        }
        return var_get_key(v, key.p, key.n, out);
    }
    int64_t i = a1->i[k];
    if (mode == 1) { /* 1-based subscript */
        if (i < 1)
            return false;
        i--;
    }
    return var_get_index(v, i, out);
}

int expr__fn_variant(const Expr *e, const Vec *a, int na, int64_t n, EvalCtx *cx, Vec *out,
                     uint8_t *m)
{
    Buf b = BUF_INIT;
    int64_t added = 0;
    (void)na;
    switch (e->fn) {
    case FN_PARSE_JSON:
        for (int64_t k = 0; k < n; k++) {
            out->s[k] = (Str){"", 0};
            if (m[k])
                continue;
            buf_reset(&b);
            if (var_parse_json(a[0].s[k].p, a[0].s[k].n, &b)) {
                m[k] = 1; /* malformed JSON is NULL (Feldera's PARSE_JSON) */
                added++;
                continue;
            }
            out->s[k] = keep(cx, &b);
        }
        break;
    case FN_TO_JSON:
        for (int64_t k = 0; k < n; k++) {
            out->s[k] = (Str){"", 0};
            if (m[k])
                continue;
            buf_reset(&b);
            var_to_json(a[0].s[k], &b);
            out->s[k] = keep(cx, &b);
        }
        break;
    case FN_VARIANT_NULL: {
        static const char jnull[1] = {VAR_NULL};
        for (int64_t k = 0; k < n; k++)
            out->s[k] = (Str){jnull, 1};
        break;
    }
    case FN_VARIANT_GET: {
        int64_t mode = a[2].i[0];
        for (int64_t k = 0; k < n; k++) {
            out->s[k] = (Str){"", 0};
            if (m[k])
                continue;
            if (!get(&a[0], &a[1], mode, k, &out->s[k])) {
                m[k] = 1;
                added++;
            }
        }
        break;
    }
    case FN_VARIANT_TEXT:
        for (int64_t k = 0; k < n; k++) {
            Str v = a[0].s[k];
            out->s[k] = (Str){"", 0};
            if (m[k])
                continue;
            VarKind vk = var_kind(v);
            if (vk == VK_NULL || vk == VK_BAD) {
                m[k] = 1;
                added++;
            } else if (vk == VK_STRING) {
                var_get_string(v, cx->arena, &out->s[k]);
            } else {
                buf_reset(&b);
                var_to_json(v, &b);
                out->s[k] = keep(cx, &b);
            }
        }
        break;
    case FN_VARIANT_TYPEOF:
        for (int64_t k = 0; k < n; k++) {
            const char *s = m[k] ? "" : var_kind_name(var_kind(a[0].s[k]));
            out->s[k] = (Str){s, (uint32_t)strlen(s)};
        }
        break;
    case FN_VARIANT_IS: {
        int64_t want = a[1].i[0];
        for (int64_t k = 0; k < n; k++)
            out->i[k] = !m[k] && var_kind(a[0].s[k]) == (VarKind)want;
        break;
    }
    default:
        buf_free(&b);
        return err_set(cx->err, SL_ERUNTIME, "%s is not a VARIANT function",
                       expr__fn_name(e->fn));
    }
    buf_free(&b);
    return added ? expr__check_nulls(cx, out, expr__fn_name(e->fn), added) : 0;
}

int expr__variant_cast(const Vec *a, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    int64_t added = 0;
    if (out->t.kind == TK_VARIANT) {
        Buf b = BUF_INIT;
        for (int64_t k = 0; k < n; k++) {
            out->s[k] = (Str){"", 0};
            if (m[k])
                continue;
            buf_reset(&b);
            var_from_vec(a, k, &b);
            out->s[k] = keep(cx, &b);
        }
        buf_free(&b);
        return 0;
    }
    for (int64_t k = 0; k < n; k++) {
        vec_zero(out, k);
        if (m[k])
            continue;
        if (!var_to_vec(a->s[k], out, k, cx->arena)) {
            vec_zero(out, k);
            m[k] = 1;
            added++;
        }
    }
    return added ? expr__check_nulls(cx, out, "CAST of a VARIANT", added) : 0;
}

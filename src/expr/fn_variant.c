/*
 * expr/fn_variant.c - the VARIANT functions (FN_PARSE_JSON ..
 * FN_JSON_SET, expr.h) and CASTs to and from VARIANT. Operand NULLs are
 * merged into m before these run (a NULL argument gives NULL); a member or
 * element that is missing, malformed JSON text and a value that does not
 * convert add a NULL.
 */
#include <string.h>

#include "array.h"
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

/* The steps of path array pa (VARCHAR ARRAY) into *steps (strings copied
   into a); false when one is NULL. */
static bool path_steps(SqlType pt, Str pa, Arena *a, Str **steps, int *n)
{
    int64_t len = arr_len(pt, pa);
    ArrIt it;
    ArrElem el;
    bool ok = true;
    *steps = arena_alloc(a, sizeof(Str) * (size_t)(len ? len : 1));
    *n = 0;
    arr_it(&it, pt, pa);
    while (*n < len && arr_next(&it, &el)) {
        if (el.null) {
            ok = false;
            break;
        }
        char *d = arena_alloc(a, el.s.n ? el.s.n : 1);
        if (el.s.n)
            memcpy(d, el.s.p, el.s.n);
        (*steps)[(*n)++] = (Str){d, el.s.n};
    }
    arr_it_done(&it);
    return ok;
}

/* v #> steps[0..n): false when a step is missing. */
static bool walk(Str v, const Str *steps, int n, Str *out)
{
    for (int j = 0; j < n; j++) {
        int64_t i;
        if (var_kind(v) == VK_ARRAY) {
            if (!var_step_index(steps[j], &i) || !var_get_index(v, i, &v))
                return false;
        } else if (!var_get_key(v, steps[j].p, steps[j].n, &v)) {
            return false;
        }
    }
    *out = v;
    return true;
}

/* The VARIANT builders and operators (FN_JSON_ARRAY .. FN_JSON_SET) over
   rows whose arguments are not NULL; row k's result into out, false for
   NULL. */
static bool build(const Expr *e, const Vec *a, int na, int64_t k, EvalCtx *cx, Vec *out,
                  Buf *b)
{
    buf_reset(b);
    switch (e->fn) {
    case FN_JSON_ARRAY:
        buf_putc(b, VAR_ARR);
        for (int j = 0; j < na; j++)
            buf_append(b, a[j].s[k].p, a[j].s[k].n);
        buf_putc(b, VAR_END);
        break;
    case FN_JSON_OBJECT: {
        Buf body = BUF_INIT;
        for (int j = 0; j + 1 < na; j += 2)
            var_put_member(&body, a[j].s[k].p, a[j].s[k].n, a[j + 1].s[k]);
        var_put_object(b, body.p, body.n);
        buf_free(&body);
        break;
    }
    case FN_JSON_CONCAT: var_concat(a[0].s[k], a[1].s[k], b); break;
    case FN_JSON_CONTAINS: out->i[k] = var_contains(a[0].s[k], a[1].s[k]); return true;
    case FN_JSON_EXISTS:
        out->i[k] = var_exists(a[0].s[k], a[1].s[k].p, a[1].s[k].n);
        return true;
    case FN_JSON_ARRAY_LENGTH: {
        int64_t len = var_array_length(a[0].s[k]);
        out->i[k] = len;
        return len >= 0 && len <= INT32_MAX;
    }
    case FN_JSON_PATH:
    case FN_JSON_SET: {
        Str *steps, v;
        int ns;
        if (!path_steps(a[1].t, a[1].s[k], cx->arena, &steps, &ns))
            return false;
        if (e->fn == FN_JSON_PATH) {
            if (!walk(a[0].s[k], steps, ns, &v))
                return false;
            out->s[k] = v;
            return true;
        }
        if (!var_set_path(a[0].s[k], steps, ns, a[2].s[k], a[3].i[k] != 0, b))
            return false;
        break;
    }
    default: return false;
    }
    if (b->n > UINT32_MAX)
        return false;
    out->s[k] = keep(cx, b);
    return true;
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
    case FN_JSON_ARRAY:
    case FN_JSON_OBJECT:
    case FN_JSON_CONCAT:
    case FN_JSON_CONTAINS:
    case FN_JSON_EXISTS:
    case FN_JSON_ARRAY_LENGTH:
    case FN_JSON_PATH:
    case FN_JSON_SET:
        for (int64_t k = 0; k < n; k++) {
            vec_zero(out, k);
            if (m[k])
                continue;
            if (!build(e, a, na, k, cx, out, &b)) {
                vec_zero(out, k);
                m[k] = 1;
                added++;
            }
        }
        break;
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

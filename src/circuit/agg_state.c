/*
 * circuit/agg_state.c - the value multisets of the non-linear aggregates
 * and the aggregates computed from them (op_agg.c owns the traces).
 *
 * State: per aggregate, a trace keyed by the group key whose values are
 * the group's entries with their weights. An insertion adds weight +1, a
 * deletion -1, so the trace always holds the group's current multiset,
 * whatever the step boundaries or the number of workers (each group lives
 * on one worker). After a step the touched groups' aggregates are computed
 * again from their multisets (agg_state_value): the cost is linear in the
 * group's distinct entries, like MIN/MAX, and nothing is kept per group
 * beyond the entries themselves.
 *
 * Entry layout (agg_state_encode):
 *   no ORDER BY:   the value's key encoding (zset/key.h), so memcmp order
 *                  is the value's SQL order;
 *   ORDER BY o...: for each o its key encoding, the NULL marker moved to
 *                  0x02 when NULL must sort after the values, and every
 *                  byte flipped for DESC (encodings are prefix-free, so a
 *                  flipped one sorts in reverse); then the value's
 *                  encoding; then the length of the order part as 4
 *                  native-order bytes. memcmp order is the ORDER BY, ties
 *                  broken by the value (PostgreSQL leaves ties unordered).
 * NULL values are never entries (every aggregate here skips them) but
 * for ARRAY_AGG and JSON_AGG, which keep them as NULL (JSON null) elements.
 *
 * Results (PostgreSQL's definitions):
 *   MIN/MAX         the first / last entry;
 *   STRING_AGG      the values in entry order, each as often as its weight
 *                   (once with DISTINCT), joined by the separator;
 *   BIT_AND/OR/XOR  over the values (XOR: a value counts when its weight
 *                   is odd, or once with DISTINCT);
 *   PERCENTILE_CONT the value at position f * (N - 1) of the N ordered
 *                   values (as DOUBLE), interpolated linearly between the
 *                   two neighbours;
 *   PERCENTILE_DISC the value at position ceil(f * N) (1-based, at least 1);
 *   MODE            the most frequent value, the first in order on a tie;
 *   VAR_SAMP/POP, STDDEV_SAMP/POP (DOUBLE) and COVAR_POP/SAMP, CORR (two
 *                   DOUBLE arguments y, x; the entry is the 8 bytes of y
 *                   then those of x, rows where either is NULL skipped):
 *                   see stats() below;
 *   ARRAY_AGG       the values in entry order, each as often as its weight
 *                   (once with DISTINCT), as an ARRAY (expr/array.h);
 *   JSON_AGG        the values (VARIANTs) in entry order, each as often as
 *                   its weight (once with DISTINCT), as a VARIANT array, a
 *                   NULL value as JSON null;
 *   JSON_OBJECT_AGG the members of the entries (one-member objects {k: v})
 *                   as one object, of a repeated key the member of the
 *                   last entry (so the greatest value without ORDER BY);
 *   ARG_MIN/ARG_MAX the value of the first entry: ordered by the key (ASC,
 *                   DESC for ARG_MAX), ties broken by the smallest value;
 *                   rows whose value or key is NULL are skipped.
 */
#include "agg_state.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/mem.h"
#include "../expr/array.h"
#include "../expr/variant.h"
#include "../expr/xsum.h"
#include "../zset/key.h"

bool agg_state_needed(const AggSpec *a)
{
    return a->kind == AGG_MIN || a->kind == AGG_MAX || a->distinct || a->kind >= AGG_STRING_AGG;
}

/* The statistical aggregates of two arguments. */
static bool two_doubles(const AggSpec *a)
{
    return a->kind == AGG_COVAR_POP || a->kind == AGG_COVAR_SAMP || a->kind == AGG_CORR;
}

bool agg_state_encode(const AggSpec *a, const Chunk *rows, int64_t r, Buf *out)
{
    if (vec_is_null(&rows->col[a->col], r) && a->kind != AGG_ARRAY_AGG &&
        a->kind != AGG_JSON_AGG)
        return false;
    if (two_doubles(a) || a->kind == AGG_ARG_MIN || a->kind == AGG_ARG_MAX) {
        if (vec_is_null(&rows->col[a->ord[0]], r))
            return false;
    }
    if (two_doubles(a)) {
        buf_append(out, &rows->col[a->col].f[r], sizeof(double));
        buf_append(out, &rows->col[a->ord[0]].f[r], sizeof(double));
        return true;
    }
    if (!a->nord) {
        key_encode(rows, &a->col, 1, r, out);
        return true;
    }
    size_t start = out->n;
    for (int k = 0; k < a->nord; k++) {
        size_t s0 = out->n;
        bool desc = a->ord_desc[k];
        key_encode(rows, &a->ord[k], 1, r, out);
        /* NULL after the values before flipping when DESC == NULLS FIRST */
        if (rows->col[a->ord[k]].t.nullable && out->p[s0] == 0 && desc == a->ord_nulls_first[k])
            out->p[s0] = 2;
        if (desc)
            for (size_t i = s0; i < out->n; i++)
                out->p[i] = (uint8_t)~out->p[i];
    }
    uint32_t ol = (uint32_t)(out->n - start);
    key_encode(rows, &a->col, 1, r, out);
    buf_append(out, &ol, sizeof(ol));
    return true;
}

static int valw_cmp(const void *a, const void *b)
{
    const ValW *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->v, y->v, m);
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

void agg_state_values(const Trace *t, TraceCursor *cur, const uint8_t *k, size_t kn, ValWs *out)
{
    ValWs c = {0};
    if (cur)
        trace_cursor_for_key(cur, k, kn, op_valw_add, &c);
    else
        trace_for_key(t, k, kn, op_valw_add, &c);
    if (c.n)
        qsort(c.v, (size_t)c.n, sizeof(ValW), valw_cmp);
    int64_t m = 0;
    for (int64_t i = 0; i < c.n;) {
        int64_t j = i, w = 0;
        while (j < c.n && valw_cmp(&c.v[i], &c.v[j]) == 0)
            w += c.v[j++].w;
        if (w > 0)
            c.v[m++] = (ValW){c.v[i].v, c.v[i].n, w};
        i = j;
    }
    c.n = m;
    *out = c;
}

/* The smallest (last: largest) distinct entry of the group with key k in
   t whose weights sum to a positive total, into *out; false when there is
   none. MIN, MAX and ARG_MIN/MAX read only that one: instead of sorting
   the group's entries (agg_state_values), the extreme one is picked in a
   pass, and only when its weights cancel (a deleted extreme) are its
   copies dropped and the next one picked; past a few such rounds the
   rest is sorted after all. */
static bool extreme_entry(const Trace *t, TraceCursor *cur, const uint8_t *k, size_t kn,
                          bool last, ValW *out)
{
    ValWs c = {0};
    if (cur)
        trace_cursor_for_key(cur, k, kn, op_valw_add, &c);
    else
        trace_for_key(t, k, kn, op_valw_add, &c);
    bool found = false;
    for (int round = 0; c.n && round < 8 && !found; round++) {
        int64_t best = 0;
        for (int64_t i = 1; i < c.n; i++) {
            int d = valw_cmp(&c.v[i], &c.v[best]);
            if (last ? d > 0 : d < 0)
                best = i;
        }
        ValW e = c.v[best];
        int64_t w = 0, m = 0;
        for (int64_t i = 0; i < c.n; i++) {
            if (valw_cmp(&c.v[i], &e) == 0)
                w += c.v[i].w;
            else
                c.v[m++] = c.v[i];
        }
        c.n = m;
        if (w > 0) {
            *out = (ValW){e.v, e.n, w};
            found = true;
        }
    }
    if (!found && c.n) { /* many deleted extremes: sort the rest */
        qsort(c.v, (size_t)c.n, sizeof(ValW), valw_cmp);
        for (int64_t i = last ? c.n - 1 : 0; i >= 0 && i < c.n && !found;) {
            int64_t j = i, w = 0;
            while (j >= 0 && j < c.n && valw_cmp(&c.v[i], &c.v[j]) == 0) {
                w += c.v[j].w;
                j += last ? -1 : 1;
            }
            if (w > 0) {
                *out = (ValW){c.v[i].v, c.v[i].n, w};
                found = true;
            }
            i = j;
        }
    }
    sl_free(c.v);
    return found;
}

/* The value's encoding inside entry e. */
static const uint8_t *entry_value(const AggSpec *a, const ValW *e)
{
    if (!a->nord)
        return e->v;
    uint32_t ol;
    memcpy(&ol, e->v + e->n - sizeof(ol), sizeof(ol));
    return e->v + ol;
}

/* Row 0 of one, a one-column chunk of a's argument type, as a DOUBLE. */
static double as_double(const AggSpec *a, const Chunk *one)
{
    const Vec *v = &one->col[0];
    if (v->f)
        return v->f[0];
    double x = v->x ? (double)v->x[0] : (double)v->i[0];
    if (a->in_t.kind == TK_DECIMAL && a->in_t.scale)
        x /= (double)pow10_i64(a->in_t.scale);
    return x;
}

/* The entry at 0-based position pos of the values counted with their
   weights (pos < their total weight). */
static const ValW *entry_at(const ValWs *c, int64_t pos)
{
    for (int64_t i = 0; i < c->n; i++) {
        if (pos < c->v[i].w)
            return &c->v[i];
        pos -= c->v[i].w;
    }
    return &c->v[c->n - 1];
}

static int array_agg(const AggSpec *a, const ValWs *c, Vec *v, Arena *strs, int node, Err *err)
{
    SqlType in_t = a->in_t;
    Chunk *one = chunk_new(strs, 1, &in_t, 1);
    Buf b = BUF_INIT;
    for (int64_t i = 0; i < c->n; i++) {
        key_decode(entry_value(a, &c->v[i]), &in_t, 1, one, 0, 0);
        for (int64_t w = a->distinct ? 1 : c->v[i].w; w > 0; w--)
            arr_put_vec(&b, &one->col[0], 0);
        if (b.n > UINT32_MAX) {
            buf_free(&b);
            return err_set(err, SL_ERUNTIME,
                           "ARRAY_AGG result longer than %u bytes (aggregate in node %d)",
                           UINT32_MAX, node);
        }
    }
    char *s = arena_alloc(strs, b.n ? b.n : 1);
    if (b.n)
        memcpy(s, b.p, b.n);
    v->s[0] = (Str){s, (uint32_t)b.n};
    buf_free(&b);
    return 0;
}

/* JSON_AGG and JSON_OBJECT_AGG: see the head of this file. */
static int json_agg(const AggSpec *a, const ValWs *c, Vec *v, Arena *strs, int node, Err *err)
{
    SqlType in_t = a->in_t;
    Chunk *one = chunk_new(strs, 1, &in_t, 1);
    Buf b = BUF_INIT, body = BUF_INIT;
    bool obj = a->kind == AGG_JSON_OBJECT_AGG;
    int rc = 0;
    static const char jnull[1] = {VAR_NULL};
    if (!obj)
        buf_putc(&b, VAR_ARR);
    for (int64_t i = 0; i < c->n; i++) {
        key_decode(entry_value(a, &c->v[i]), &in_t, 1, one, 0, 0);
        Str x = one->col[0].s[0];
        if (vec_is_null(&one->col[0], 0))
            x = (Str){jnull, 1};
        if (obj) { /* {k: v}: its member */
            if (x.n >= 2)
                buf_append(&body, x.p + 1, x.n - 2);
        } else {
            for (int64_t w = a->distinct ? 1 : c->v[i].w; w > 0; w--)
                buf_append(&b, x.p, x.n);
        }
        if (b.n > UINT32_MAX - 1 || body.n > UINT32_MAX - 2) {
            rc = err_set(err, SL_ERUNTIME,
                         "%s result longer than %u bytes (aggregate in node %d)",
                         obj ? "JSON_OBJECT_AGG" : "JSON_AGG", UINT32_MAX, node);
            goto out_free;
        }
    }
    if (obj)
        var_put_object(&b, body.p, body.n);
    else
        buf_putc(&b, VAR_END);
    char *s = arena_alloc(strs, b.n);
    memcpy(s, b.p, b.n);
    v->s[0] = (Str){s, (uint32_t)b.n};
out_free:
    buf_free(&b);
    buf_free(&body);
    return rc;
}

static int string_agg(const AggSpec *a, const ValWs *c, Vec *v, Arena *strs, int node, Err *err)
{
    size_t skip = a->in_t.nullable ? 1 : 0, total = 0;
    int64_t parts = 0;
    for (int64_t i = 0; i < c->n; i++) {
        int64_t w = a->distinct ? 1 : c->v[i].w;
        size_t len = strlen((const char *)entry_value(a, &c->v[i]) + skip);
        total += (size_t)w * len;
        parts += w;
        if (total > UINT32_MAX)
            goto out_too_long;
    }
    total += (size_t)(parts - 1) * a->seplen;
    if (total > UINT32_MAX)
        goto out_too_long;
    char *s = arena_alloc(strs, total + 1), *d = s;
    bool first = true; /* (an empty first value still takes a separator) */
    for (int64_t i = 0; i < c->n; i++) {
        const char *x = (const char *)entry_value(a, &c->v[i]) + skip;
        size_t len = strlen(x);
        for (int64_t w = a->distinct ? 1 : c->v[i].w; w > 0; w--, first = false) {
            if (!first) {
                memcpy(d, a->sep, a->seplen);
                d += a->seplen;
            }
            memcpy(d, x, len);
            d += len;
        }
    }
    assert((size_t)(d - s) == total);
    v->s[0] = (Str){s, (uint32_t)total};
    return 0;
out_too_long:
    return err_set(err, SL_ERUNTIME,
                   "STRING_AGG result longer than %u bytes (aggregate in node %d)", UINT32_MAX,
                   node);
}

/* VAR_*, STDDEV_*, COVAR_*, CORR of the entries c (n rows counted with
   their weights, n >= 1) into row 0 of v, NULL where PostgreSQL gives
   NULL (the sample forms of one row; CORR when either argument is
   constant).

   Why from the multiset: the state is the group's exact multiset of
   values (the trace; an insertion then a deletion leaves exactly the state
   of never having inserted the row), and the result is computed from it
   again after each step, never kept as running sums of x and x^2 that
   retractions would make drift (and that cancel catastrophically: x^2
   sums minus n * mean^2). The computation is the two-pass one: the mean
   from the exact sum of the values (xsum.c) rounded once, then the exact
   sum of the rounded squared (or cross) deviations, rounded once. Exact
   sums make it independent of the entries' order, so the result is a
   function of the multiset alone: the same whatever the step boundaries
   or the number of workers. Integer and DECIMAL inputs are read as
   DOUBLE (exact below 2^53); PostgreSQL computes those in NUMERIC, so
   results may differ from its in the last bits. The cost is linear in
   the group's distinct values, like MIN/MAX. */
static void stats(const AggSpec *a, const ValWs *c, int64_t n, Chunk *one, Vec *v)
{
    bool two = two_doubles(a);
    double *xs = sl_malloc(sizeof(double) * (size_t)c->n * 2), *ys = xs + c->n;
    for (int64_t i = 0; i < c->n; i++) {
        if (two) {
            memcpy(&ys[i], c->v[i].v, sizeof(double));
            memcpy(&xs[i], c->v[i].v + sizeof(double), sizeof(double));
        } else {
            SqlType in_t = a->in_t;
            key_decode(c->v[i].v, &in_t, 1, one, 0, 0);
            xs[i] = ys[i] = as_double(a, one);
        }
    }
    XSum sx = {0}, sy = {0}, sxx = {0}, syy = {0}, sxy = {0};
    if (a->distinct) /* over the set of values */
        n = c->n;
    for (int64_t i = 0; i < c->n; i++) {
        xsum_add(&sx, xs[i], a->distinct ? 1 : c->v[i].w);
        xsum_add(&sy, ys[i], a->distinct ? 1 : c->v[i].w);
    }
    double mx = xsum_value(&sx) / (double)n, my = xsum_value(&sy) / (double)n;
    for (int64_t i = 0; i < c->n; i++) {
        double dx = xs[i] - mx, dy = ys[i] - my;
        int64_t w = a->distinct ? 1 : c->v[i].w;
        xsum_add(&sxx, dx * dx, w);
        xsum_add(&syy, dy * dy, w);
        xsum_add(&sxy, dx * dy, w);
    }
    sl_free(xs);
    double qxx = xsum_value(&sxx), qyy = xsum_value(&syy), qxy = xsum_value(&sxy), r = 0;
    bool samp = a->kind == AGG_VAR_SAMP || a->kind == AGG_STDDEV_SAMP ||
                a->kind == AGG_COVAR_SAMP;
    if (samp && n < 2) {
        vec_set_null(v, 0);
        return;
    }
    double d = samp ? (double)(n - 1) : (double)n;
    switch (a->kind) {
    case AGG_VAR_SAMP:
    case AGG_VAR_POP:
        r = qxx / d;
        break;
    case AGG_STDDEV_SAMP:
    case AGG_STDDEV_POP:
        r = sqrt(qxx / d);
        break;
    case AGG_CORR:
        if (qxx == 0 || qyy == 0) {
            vec_set_null(v, 0);
            return;
        }
        r = qxy / (sqrt(qxx) * sqrt(qyy));
        r = r > 1 ? 1 : r < -1 ? -1 : r;
        break;
    default: /* COVAR_POP/SAMP */
        r = qxy / d;
    }
    v->f[0] = r;
}

int agg_state_value(const AggSpec *a, const Trace *t, TraceCursor *cur, const uint8_t *k,
                    size_t kn, Chunk *dst, int col, Arena *strs, int node, Err *err)
{
    ValWs c = {0};
    Vec *v = &dst->col[col];
    SqlType in_t = a->in_t;
    int rc = 0;
    if (a->kind == AGG_MIN || a->kind == AGG_MAX || a->kind == AGG_ARG_MIN ||
        a->kind == AGG_ARG_MAX) { /* one entry: the first (MAX: the last) */
        ValW e;
        if (!extreme_entry(t, cur, k, kn, a->kind == AGG_MAX, &e)) {
            vec_set_null(v, 0);
            return 0;
        }
        if (v->nul)
            v->nul[0] = 0;
        key_decode(a->kind == AGG_MIN || a->kind == AGG_MAX ? e.v : entry_value(a, &e), &in_t,
                   1, dst, col, 0);
        return 0;
    }
    agg_state_values(t, cur, k, kn, &c);
    if (v->nul)
        v->nul[0] = 0;
    if (!c.n) {
        vec_set_null(v, 0);
        goto out_free;
    }
    int64_t total = 0;
    for (int64_t i = 0; i < c.n; i++)
        total += c.v[i].w;
    switch (a->kind) {
    case AGG_MIN:
        key_decode(c.v[0].v, &in_t, 1, dst, col, 0);
        break;
    case AGG_MAX:
        key_decode(c.v[c.n - 1].v, &in_t, 1, dst, col, 0);
        break;
    case AGG_STRING_AGG:
        rc = string_agg(a, &c, v, strs, node, err);
        break;
    case AGG_ARRAY_AGG:
        rc = array_agg(a, &c, v, strs, node, err);
        break;
    case AGG_JSON_AGG:
    case AGG_JSON_OBJECT_AGG:
        rc = json_agg(a, &c, v, strs, node, err);
        break;
    case AGG_BIT_AND:
    case AGG_BIT_OR:
    case AGG_BIT_XOR: {
        Chunk *one = chunk_new(strs, 1, &in_t, 1);
        int64_t x = a->kind == AGG_BIT_AND ? -1 : 0;
        for (int64_t i = 0; i < c.n; i++) {
            key_decode(entry_value(a, &c.v[i]), &in_t, 1, one, 0, 0);
            int64_t y = one->col[0].i[0];
            if (a->kind == AGG_BIT_AND)
                x &= y;
            else if (a->kind == AGG_BIT_OR)
                x |= y;
            else if (a->distinct || (c.v[i].w & 1))
                x ^= y;
        }
        v->i[0] = x;
        break;
    }
    case AGG_PCT_CONT: {
        Chunk *one = chunk_new(strs, 1, &in_t, 1);
        double pos = a->frac * (double)(total - 1), lo = floor(pos), hi = ceil(pos);
        key_decode(entry_value(a, entry_at(&c, (int64_t)lo)), &in_t, 1, one, 0, 0);
        double x = as_double(a, one);
        if (hi != lo) {
            key_decode(entry_value(a, entry_at(&c, (int64_t)hi)), &in_t, 1, one, 0, 0);
            x += (as_double(a, one) - x) * (pos - lo);
        }
        v->f[0] = x;
        break;
    }
    case AGG_PCT_DISC: {
        int64_t row = (int64_t)ceil(a->frac * (double)total);
        row = row < 1 ? 1 : row > total ? total : row;
        key_decode(entry_value(a, entry_at(&c, row - 1)), &in_t, 1, dst, col, 0);
        break;
    }
    case AGG_MODE: {
        int64_t best = 0;
        for (int64_t i = 1; i < c.n; i++)
            if (c.v[i].w > c.v[best].w)
                best = i;
        key_decode(entry_value(a, &c.v[best]), &in_t, 1, dst, col, 0);
        break;
    }
    case AGG_VAR_SAMP:
    case AGG_VAR_POP:
    case AGG_STDDEV_SAMP:
    case AGG_STDDEV_POP:
    case AGG_COVAR_POP:
    case AGG_COVAR_SAMP:
    case AGG_CORR:
        stats(a, &c, total, chunk_new(strs, 1, &in_t, 1), v);
        break;
    case AGG_ARG_MIN: /* ARG_MAX's key is DESC: its first entry too */
    case AGG_ARG_MAX:
        key_decode(entry_value(a, &c.v[0]), &in_t, 1, dst, col, 0);
        break;
    default:
        rc = err_set(err, SL_ERUNTIME, "aggregate node %d: no multiset aggregate of kind %d",
                     node, (int)a->kind);
    }
out_free:
    sl_free(c.v);
    return rc;
}

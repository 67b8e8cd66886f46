/*
 * zset/batch.c - building, merging and searching consolidated batches.
 * In: encoded tuples from operators (BatchBuilder) and pairs of batches
 * from trace merges. Out: immutable sorted batches, shared by refcount.
 *
 * A batch is one allocation: the Batch header, then off[n+1], w[n],
 * klen[n] and the tuple bytes, so a batch costs one malloc and one free.
 *
 * bb_finish sorts an index of (8-byte big-endian prefix, tuple) entries
 * with an MSD radix sort. The prefix caches the tuple bytes of the current
 * 8-byte chunk, padded with zeros past the tuple's end; a range whose
 * entries agree on the whole chunk reloads the next chunk. Tuples that end
 * before the next chunk are prefixes of all others in the range (their
 * bytes agree up to the padding), so they go first, ordered by length.
 * Ranges of a few entries finish with an insertion sort; an explicit stack
 * of ranges replaces recursion.
 */
#include "batch.h"

#include "../base/buf.h"
#include "../base/mem.h"

struct BatchBuilder {
    Buf data;       /* tuple bytes, end to end */
    size_t *off;    /* start of tuple i in data; cap+1 entries */
    uint32_t *klen; /* key length of tuple i */
    int64_t *w;
    int64_t n, cap;
};

/* ---- batch memory ---- */

static size_t batch_block_size(int64_t n, size_t nbytes)
{
    size_t un = (size_t)n;
    return sizeof(Batch) + (un + 1) * sizeof(size_t) + un * sizeof(int64_t) +
           un * sizeof(uint32_t) + nbytes;
}

/* Point b's arrays into its block for n tuples. */
static void batch_layout(Batch *b, int64_t n)
{
    b->n = n;
    b->off = (size_t *)(b + 1);
    b->w = (int64_t *)(b->off + n + 1);
    b->klen = (uint32_t *)(b->w + n);
    b->data = (uint8_t *)(b->klen + n);
}

/* A batch with room for n tuples of nbytes bytes in all (refs 1). */
static Batch *batch_alloc(int64_t n, size_t nbytes)
{
    Batch *b = sl_malloc(batch_block_size(n, nbytes));
    b->refs = 1;
    batch_layout(b, n);
    b->off[0] = 0;
    return b;
}

/* Cut a batch allocated for more tuples or bytes down to its first n
   tuples: move the arrays down in address order, then shrink the block. */
static Batch *batch_shrink(Batch *b, int64_t n)
{
    Batch old = *b;
    size_t nbytes = b->off[n];
    batch_layout(b, n);
    memmove(b->w, old.w, (size_t)n * sizeof(int64_t));
    memmove(b->klen, old.klen, (size_t)n * sizeof(uint32_t));
    memmove(b->data, old.data, nbytes);
    b = sl_realloc(b, batch_block_size(n, nbytes));
    batch_layout(b, n);
    return b;
}

Batch *batch_empty(void) { return batch_alloc(0, 0); }

void batch_ref(Batch *b) { b->refs++; }

void batch_unref(Batch *b)
{
    if (b && --b->refs == 0)
        sl_free(b);
}

size_t batch_bytes(const Batch *b) { return batch_block_size(b->n, b->off[b->n]); }

/* ---- comparison ---- */

/* memcmp order, a proper prefix first. */
static inline int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    size_t m = la < lb ? la : lb;
    int d = m ? memcmp(a, b, m) : 0;
    if (d)
        return d;
    return (la > lb) - (la < lb);
}

int batch_key_cmp(const Batch *b, int64_t i, const uint8_t *k, size_t kn)
{
    return bytes_cmp(batch_key(b, i), b->klen[i], k, kn);
}

int64_t batch_seek(const Batch *b, const uint8_t *k, size_t kn)
{
    int64_t lo = 0, hi = b->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (batch_key_cmp(b, mid, k, kn) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline int64_t add_weights(int64_t a, int64_t b)
{
    int64_t s;
    if (unlikely(__builtin_add_overflow(a, b, &s)))
        sl_panic("z-set weight overflow: %lld + %lld", (long long)a, (long long)b);
    return s;
}

/* ---- builder ---- */

BatchBuilder *bb_new(void)
{
    BatchBuilder *bb = sl_malloc(sizeof(*bb));
    memset(bb, 0, sizeof(*bb));
    bb->cap = 64;
    bb->off = sl_malloc((size_t)(bb->cap + 1) * sizeof(size_t));
    bb->klen = sl_malloc((size_t)bb->cap * sizeof(uint32_t));
    bb->w = sl_malloc((size_t)bb->cap * sizeof(int64_t));
    return bb;
}

static void bb_free(BatchBuilder *bb)
{
    buf_free(&bb->data);
    sl_free(bb->off);
    sl_free(bb->klen);
    sl_free(bb->w);
    sl_free(bb);
}

void bb_add(BatchBuilder *bb, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn, int64_t w)
{
    if (w == 0)
        return;
    if (unlikely(bb->n == bb->cap)) {
        bb->cap *= 2;
        bb->off = sl_realloc(bb->off, (size_t)(bb->cap + 1) * sizeof(size_t));
        bb->klen = sl_realloc(bb->klen, (size_t)bb->cap * sizeof(uint32_t));
        bb->w = sl_realloc(bb->w, (size_t)bb->cap * sizeof(int64_t));
    }
    bb->off[bb->n] = bb->data.n;
    bb->klen[bb->n] = (uint32_t)kn;
    bb->w[bb->n] = w;
    bb->n++;
    buf_append(&bb->data, k, kn);
    buf_append(&bb->data, v, vn);
}

int64_t bb_count(const BatchBuilder *bb) { return bb->n; }

/* ---- radix sort of builder tuples ---- */

/* An index entry: the cached chunk of tuple idx (its weight once sorted). */
typedef struct SortEnt {
    union {
        uint64_t pfx;
        int64_t w;
    };
    size_t idx;
} SortEnt;

/* A range of entries still to sort: they agree on all bytes before depth
   (zero-padded), and pfx caches bytes [cend-8, cend). */
typedef struct SortRange {
    size_t start, n, depth, cend;
} SortRange;

typedef struct SortCtx {
    const uint8_t *data;
    const size_t *off; /* n+1 offsets */
    SortEnt *tmp;      /* scatter space, as long as the entry array */
    SortRange *stack;
    size_t nstack, capstack;
} SortCtx;

#define INSERTION_MAX 24

static inline size_t tup_len(const SortCtx *x, size_t idx) { return x->off[idx + 1] - x->off[idx]; }

/* Bytes [pos, pos+8) of a tuple of len bytes, big-endian, zero-padded. */
static inline uint64_t load_chunk(const uint8_t *p, size_t len, size_t pos)
{
    uint64_t v = 0;
    if (len >= pos + 8)
        memcpy(&v, p + pos, 8);
    else if (len > pos)
        memcpy(&v, p + pos, len - pos);
    return __builtin_bswap64(v);
}

/* Order of two entries whose tuples agree (zero-padded) before cend - 8. */
static inline int ent_cmp(const SortCtx *x, const SortEnt *a, const SortEnt *b, size_t cend)
{
    if (a->pfx != b->pfx)
        return a->pfx < b->pfx ? -1 : 1;
    size_t la = tup_len(x, a->idx), lb = tup_len(x, b->idx);
    if (la <= cend || lb <= cend)
        return (la > lb) - (la < lb);
    return bytes_cmp(x->data + x->off[a->idx] + cend, la - cend, x->data + x->off[b->idx] + cend,
                     lb - cend);
}

static void insertion_sort(const SortCtx *x, SortEnt *a, size_t n, size_t cend)
{
    for (size_t i = 1; i < n; i++) {
        SortEnt e = a[i];
        size_t j = i;
        while (j > 0 && ent_cmp(x, &e, &a[j - 1], cend) < 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = e;
    }
}

static void push_range(SortCtx *x, size_t start, size_t n, size_t depth, size_t cend)
{
    if (x->nstack == x->capstack) {
        x->capstack = x->capstack ? x->capstack * 2 : 1024;
        x->stack = sl_realloc(x->stack, x->capstack * sizeof(SortRange));
    }
    x->stack[x->nstack++] = (SortRange){start, n, depth, cend};
}

/*
 * Entries a[0..n) agree on all bytes before cend and their cached chunk is
 * used up: move the tuples that end by cend to the front, ordered by length
 * (lengths lie in [cend-8, cend]), and load the next chunk of the others.
 * Returns the number of tuples moved to the front.
 */
static size_t split_ended(SortCtx *x, SortEnt *a, size_t n, size_t cend)
{
    size_t cnt[10] = {0};
    size_t nend = 0, base = cend - 8;
    for (size_t i = 0; i < n; i++)
        if (tup_len(x, a[i].idx) <= cend)
            cnt[tup_len(x, a[i].idx) - base + 1]++, nend++;
    if (nend > 0) {
        SortEnt *t = x->tmp;
        size_t rest = nend;
        for (int l = 1; l < 10; l++)
            cnt[l] += cnt[l - 1];
        for (size_t i = 0; i < n; i++) {
            size_t len = tup_len(x, a[i].idx);
            t[len <= cend ? cnt[len - base]++ : rest++] = a[i];
        }
        memcpy(a, t, n * sizeof(SortEnt));
    }
    for (size_t i = nend; i < n; i++)
        a[i].pfx = load_chunk(x->data + x->off[a[i].idx], tup_len(x, a[i].idx), cend);
    return nend;
}

static void sort_range(SortCtx *x, SortEnt *ents, SortRange r)
{
    for (;;) {
        SortEnt *a = ents + r.start;
        if (r.n <= INSERTION_MAX) {
            insertion_sort(x, a, r.n, r.cend);
            return;
        }
        if (r.depth == r.cend) {
            size_t nend = split_ended(x, a, r.n, r.cend);
            r.start += nend;
            r.n -= nend;
            r.cend += 8;
            continue;
        }
        uint64_t diff = 0, first = a[0].pfx;
        for (size_t i = 1; i < r.n; i++)
            diff |= a[i].pfx ^ first;
        if (diff == 0) {
            r.depth = r.cend - 1;
            continue;
        }
        r.depth = r.cend - 8 + (size_t)__builtin_clzll(diff) / 8;
        int shift = 56 - 8 * (int)(r.depth - (r.cend - 8));

        size_t cnt[256] = {0}, pos[256];
        for (size_t i = 0; i < r.n; i++)
            cnt[(a[i].pfx >> shift) & 0xff]++;
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            pos[b] = sum;
            sum += cnt[b];
        }
        SortEnt *t = x->tmp;
        for (size_t i = 0; i < r.n; i++)
            t[pos[(a[i].pfx >> shift) & 0xff]++] = a[i];
        memcpy(a, t, r.n * sizeof(SortEnt));
        for (int b = 0; b < 256; b++)
            if (cnt[b] > 1)
                push_range(x, r.start + pos[b] - cnt[b], cnt[b], r.depth + 1, r.cend);
        return;
    }
}

static void sort_tuples(SortCtx *x, SortEnt *ents, size_t n)
{
    push_range(x, 0, n, 0, 8);
    while (x->nstack > 0) {
        SortRange r = x->stack[--x->nstack];
        sort_range(x, ents, r);
    }
}

Batch *bb_finish(BatchBuilder *bb)
{
    size_t n = (size_t)bb->n;
    buf_reserve(&bb->data, 1); /* data non-NULL even when every tuple is empty */
    const uint8_t *data = bb->data.p;
    bb->off[n] = bb->data.n;
    SortEnt *ents = sl_malloc((n ? n : 1) * sizeof(SortEnt));
    SortCtx x = {data, bb->off, sl_malloc((n ? n : 1) * sizeof(SortEnt)), NULL, 0, 0};
    for (size_t i = 0; i < n; i++)
        ents[i] = (SortEnt){{load_chunk(data + bb->off[i], tup_len(&x, i), 0)}, i};
    sort_tuples(&x, ents, n);
    sl_free(x.tmp);
    sl_free(x.stack);

    /* Consolidate in place: ents[0..m) become the surviving (weight, idx). */
    size_t m = 0, nbytes = 0;
    for (size_t i = 0; i < n;) {
        size_t idx = ents[i].idx, len = tup_len(&x, idx);
        const uint8_t *p = data + bb->off[idx];
        int64_t w = bb->w[idx];
        size_t j = i + 1;
        for (; j < n; j++) {
            size_t jdx = ents[j].idx;
            if (tup_len(&x, jdx) != len || memcmp(data + bb->off[jdx], p, len) != 0)
                break;
            w = add_weights(w, bb->w[jdx]);
        }
        if (w != 0) {
            ents[m].w = w;
            ents[m].idx = idx;
            m++;
            nbytes += len;
        }
        i = j;
    }

    Batch *b = batch_alloc((int64_t)m, nbytes);
    size_t pos = 0;
    for (size_t i = 0; i < m; i++) {
        size_t idx = ents[i].idx, len = tup_len(&x, idx);
        memcpy(b->data + pos, data + bb->off[idx], len);
        pos += len;
        b->off[i + 1] = pos;
        b->klen[i] = bb->klen[idx];
        b->w[i] = ents[i].w;
    }
    sl_free(ents);
    bb_free(bb);
    return b;
}

/* ---- merge ---- */

/* Append tuple i of s to out at position m (weight w). */
static inline void emit(Batch *out, int64_t m, const Batch *s, int64_t i, int64_t w)
{
    size_t len = s->off[i + 1] - s->off[i];
    memcpy(out->data + out->off[m], s->data + s->off[i], len);
    out->off[m + 1] = out->off[m] + len;
    out->klen[m] = s->klen[i];
    out->w[m] = w;
}

/* Append tuples [i, s->n) of s to out at position m, unchanged. */
static void emit_rest(Batch *out, int64_t m, const Batch *s, int64_t i)
{
    int64_t k = s->n - i;
    size_t base = out->off[m], from = s->off[i];
    memcpy(out->data + base, s->data + from, s->off[s->n] - from);
    for (int64_t t = 1; t <= k; t++)
        out->off[m + t] = base + (s->off[i + t] - from);
    memcpy(out->klen + m, s->klen + i, (size_t)k * sizeof(uint32_t));
    memcpy(out->w + m, s->w + i, (size_t)k * sizeof(int64_t));
}

Batch *batch_merge(const Batch *a, const Batch *b)
{
    int64_t bound = a->n + b->n;
    size_t bytes = a->off[a->n] + b->off[b->n];
    Batch *out = batch_alloc(bound, bytes);
    int64_t i = 0, j = 0, m = 0;
    while (i < a->n && j < b->n) {
        int c = bytes_cmp(a->data + a->off[i], a->off[i + 1] - a->off[i], b->data + b->off[j],
                          b->off[j + 1] - b->off[j]);
        if (c < 0) {
            emit(out, m++, a, i, a->w[i]);
            i++;
        } else if (c > 0) {
            emit(out, m++, b, j, b->w[j]);
            j++;
        } else {
            int64_t w = add_weights(a->w[i], b->w[j]);
            if (w != 0)
                emit(out, m++, a, i, w);
            i++;
            j++;
        }
    }
    if (i < a->n) {
        emit_rest(out, m, a, i);
        m += a->n - i;
    } else if (j < b->n) {
        emit_rest(out, m, b, j);
        m += b->n - j;
    }
    if (m < bound)
        out = batch_shrink(out, m);
    return out;
}

/*
 * zset/batch.c - building, merging and searching consolidated batches.
 * In: encoded tuples from operators (BatchBuilder) and pairs of batches
 * from trace merges. Out: immutable sorted batches, shared by refcount.
 *
 * A batch is one allocation: the Batch header, then off[n+1], w[n],
 * klen[n] and the tuple bytes, so a batch costs one malloc and one free.
 * A uniform batch (all tuples of one length and one key length: every
 * row of integer columns, say) has no off[] and klen[]: the header, w[n]
 * and the bytes. The builder notes whether its records are uniform; a
 * merge of uniform batches of one shape is uniform; slices and
 * concatenations keep the layout.
 * A builder appends records (an xrec.h header {klen, vlen, weight}, the
 * tuple bytes padded to 8) to one buffer. batch_from_xrecs builds a
 * batch from xrec.h streams (an exchange's inboxes) without that copy:
 * the sort's index points at the records where they lie.
 *
 * The builder notes the order of the records as they come (one
 * comparison with the record before, until there are more than RUNS_MAX
 * ascending runs). bb_finish copies records appended in order straight out
 * (summing equal neighbours), merges 2..RUNS_MAX runs with a heap (spilled
 * runs merged, exchange inboxes of senders that wrote in order, batches
 * re-owned on a restore), and otherwise
 * sorts an index of (8-byte big-endian chunk, record) entries
 * with an MSD radix sort. The chunk caches the tuple bytes [cend-8, cend),
 * zero-padded past the tuple's end; a range whose entries agree on the
 * whole chunk reloads the next one. Entries also cache the second chunk,
 * bytes [8, 16) (or the length of a tuple of at most 8 bytes), so the
 * first reload reads no record: a key of up to 8 bytes shared by a few
 * rows (a join side's step) would otherwise cost a cache miss a row. Tuples that end before the next chunk
 * are prefixes of all others in the range (their bytes agree up to the
 * padding), so they go first, ordered by length, and cache their length.
 * Equal tuples thus always end with equal cached chunks, which lets the
 * consolidating pass skip most tuple reads. Each scatter goes from the
 * entry array to a second one or back (no copy back), ranges of a few
 * entries finish with an insertion sort, and an explicit stack of ranges
 * replaces recursion.
 */
#include "batch.h"

#include "../base/buf.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "xrec.h"

/* A builder record: an xrec.h record header ([u32 klen][u32 vlen][i64
   weight]), then the tuple bytes padded to 8. The sort reads a record
   through the rec_* accessors below and knows it by its address, so it
   sorts an exchange's inbox records where they lie as well (the same
   header, unpadded, unaligned: batch_from_xrecs). */
#define REC_HDR 16

/* Sorted runs bb_finish merges instead of sorting (more: radix sort). */
#define RUNS_MAX 16

struct BatchBuilder {
    Buf data;     /* records, end to end */
    int64_t n;    /* records */
    size_t bytes; /* tuple bytes in all records */
    /* Order as appended: the records form nruns ascending runs (a tuple
       equal to the one before continues a run) starting at run[]; past
       RUNS_MAX runs the builder stops looking (nruns = RUNS_MAX + 1). */
    size_t last;  /* the last record's position */
    int nruns;
    bool dup;     /* some record equals the one before it */
    bool uni;     /* every record so far has length ulen and key length uklen */
    bool big;     /* data.p is a large block (base/mem.h), else sl_malloc's */
    uint32_t ulen, uklen;
    size_t run[RUNS_MAX];
};

/* ---- batch memory ---- */

static size_t batch_block_size(int64_t n, size_t nbytes, bool uni)
{
    size_t un = (size_t)n;
    if (uni)
        return sizeof(Batch) + un * sizeof(int64_t) + nbytes;
    return sizeof(Batch) + (un + 1) * sizeof(size_t) + un * sizeof(int64_t) +
           un * sizeof(uint32_t) + nbytes;
}

/* Point b's arrays into its block for n tuples (uni: the uniform layout,
   tlen and fklen already set). */
static void batch_layout(Batch *b, int64_t n, bool uni)
{
    b->n = n;
    if (uni) {
        b->off = NULL;
        b->klen = NULL;
        b->w = (int64_t *)(b + 1);
        b->data = (uint8_t *)(b->w + n);
        return;
    }
    b->off = (size_t *)(b + 1);
    b->w = (int64_t *)(b->off + n + 1);
    b->klen = (uint32_t *)(b->w + n);
    b->data = (uint8_t *)(b->klen + n);
}

/* A block of sz bytes for a batch (refs 1): a large one from the pool of
   base/mem.h (a trace's merges write into the pages of the runs merged
   away a step before, not into fresh pages the kernel must clear). */
static Batch *batch_block(size_t sz)
{
    bool big = sz >= MEM_BIG_MIN;
    Batch *b = big ? mem_big_alloc(sz) : sl_malloc(sz);
    b->big = big;
    b->refs = 1;
    return b;
}

/* A batch with room for n tuples of nbytes bytes in all (refs 1). */
static Batch *batch_alloc(int64_t n, size_t nbytes)
{
    Batch *b = batch_block(batch_block_size(n, nbytes, false));
    b->tlen = b->fklen = 0;
    batch_layout(b, n, false);
    b->off[0] = 0;
    return b;
}

/* A uniform batch with room for n tuples of tlen bytes, keys of fklen. */
static Batch *batch_alloc_uni(int64_t n, uint32_t tlen, uint32_t fklen)
{
    Batch *b = batch_block(batch_block_size(n, (size_t)n * tlen, true));
    b->tlen = tlen;
    b->fklen = fklen;
    batch_layout(b, n, true);
    return b;
}

/* Cut a batch allocated for more tuples or bytes down to its first n
   tuples: move the arrays down in address order, then shrink the block. */
static Batch *batch_shrink(Batch *b, int64_t n)
{
    Batch old = *b;
    bool uni = !b->off;
    size_t nbytes = batch_off(b, n);
    batch_layout(b, n, uni);
    memmove(b->w, old.w, (size_t)n * sizeof(int64_t));
    if (!uni)
        memmove(b->klen, old.klen, (size_t)n * sizeof(uint32_t));
    memmove(b->data, old.data, nbytes);
    size_t sz = batch_block_size(n, nbytes, uni);
    b = b->big ? mem_big_realloc(b, sz) : sl_realloc(b, sz);
    batch_layout(b, n, uni);
    return b;
}

Batch *batch_empty(void) { return batch_alloc(0, 0); }

void batch_ref(Batch *b)
{
    if (NEVER(b->refs <= 0))
        return; /* a freed batch: taking a reference cannot save it */
    b->refs++;
}

void batch_unref(Batch *b)
{
    if (!b || NEVER(b->refs <= 0))
        return; /* one unref too many: leak rather than free twice */
    if (--b->refs == 0) {
        if (b->big)
            mem_big_free(b);
        else
            sl_free(b);
    }
}

size_t batch_bytes(const Batch *b)
{
    return batch_block_size(b->n, batch_off(b, b->n), !b->off);
}

/* ---- comparison ---- */

/* memcmp order, a proper prefix first, 8 bytes at a time, then 4, then
   byte by byte (tuples are short: a call to memcmp costs more than the
   bytes). */
static inline int bytes_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    size_t m = la < lb ? la : lb, i = 0;
    for (; i + 8 <= m; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    if (i + 4 <= m) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x != y)
            return __builtin_bswap32(x) < __builtin_bswap32(y) ? -1 : 1;
        i += 4;
    }
    for (; i < m; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return (la > lb) - (la < lb);
}

/* a[0..n) == b[0..n), the same way. */
static inline bool bytes_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return false;
    }
    for (; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

int batch_key_cmp(const Batch *b, int64_t i, const uint8_t *k, size_t kn)
{
    return bytes_cmp(batch_key(b, i), batch_klen(b, i), k, kn);
}

int64_t batch_seek(const Batch *b, const uint8_t *k, size_t kn)
{
    return batch_seek_range(b, 0, b->n, k, kn);
}

int64_t batch_seek_range(const Batch *b, int64_t lo, int64_t hi, const uint8_t *k, size_t kn)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (batch_key_cmp(b, mid, k, kn) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* memcpy, with short tuples copied by inline moves instead of a call. */
static inline void copy_tuple(uint8_t *dst, const uint8_t *src, size_t len)
{
    if (len >= 8 && len <= 16) {
        memcpy(dst, src, 8);
        memcpy(dst + len - 8, src + len - 8, 8);
    } else if (len > 16 && len <= 32) {
        memcpy(dst, src, 16);
        memcpy(dst + len - 16, src + len - 16, 16);
    } else if (len >= 4 && len < 8) {
        memcpy(dst, src, 4);
        memcpy(dst + len - 4, src + len - 4, 4);
    } else if (len > 0 && len < 4) {
        dst[0] = src[0];
        dst[len / 2] = src[len / 2];
        dst[len - 1] = src[len - 1];
    } else if (len)
        memcpy(dst, src, len);
}

static inline int64_t add_weights(int64_t a, int64_t b)
{
    int64_t s;
    if (unlikely(__builtin_add_overflow(a, b, &s)))
        sl_panic("z-set weight overflow: %lld + %lld", (long long)a, (long long)b);
    return s;
}

/* ---- builder ---- */

static inline size_t rec_size(size_t len) { return REC_HDR + ((len + 7) & ~(size_t)7); }

static inline uint32_t rec_klen(const uint8_t *r)
{
    uint32_t k;
    memcpy(&k, r, 4);
    return k;
}

/* The tuple's length (key and value). */
static inline size_t rec_len(const uint8_t *r)
{
    uint32_t k, v;
    memcpy(&k, r, 4);
    memcpy(&v, r + 4, 4);
    return (size_t)k + v;
}

static inline int64_t rec_w(const uint8_t *r)
{
    int64_t w;
    memcpy(&w, r + 8, 8);
    return w;
}

static inline const uint8_t *rec_bytes(const uint8_t *r) { return r + REC_HDR; }

BatchBuilder *bb_new(void)
{
    BatchBuilder *bb = sl_malloc(sizeof(*bb));
    bb->data = (Buf)BUF_INIT;
    bb->n = 0;
    bb->bytes = 0;
    bb->last = 0;
    bb->nruns = 0;
    bb->dup = false;
    bb->uni = true;
    bb->big = false;
    bb->ulen = bb->uklen = 0;
    return bb;
}

/* A block of sz bytes for a step's scratch (sort indexes): large ones
   from base/mem.h's pool, whose pages the last step's wrote already. */
static void *scratch_alloc(size_t sz) { return sz >= MEM_BIG_MIN ? mem_big_alloc(sz) : sl_malloc(sz); }
static void scratch_free(void *p, size_t sz)
{
    if (sz >= MEM_BIG_MIN)
        mem_big_free(p);
    else
        sl_free(p);
}

/* Grow the records' buffer to hold need bytes: doubling, and once it
   reaches MEM_BIG_MIN a large block (grown in place by mremap, its pages
   those of an earlier step's builder). */
static __attribute__((noinline)) void bb_grow(BatchBuilder *bb, size_t need)
{
    size_t cap = bb->data.cap ? 2 * bb->data.cap : 256;
    if (cap < need)
        cap = need;
    if (cap < MEM_BIG_MIN) {
        bb->data.p = sl_realloc(bb->data.p, cap);
    } else if (bb->big) {
        bb->data.p = mem_big_realloc(bb->data.p, cap);
    } else {
        uint8_t *p = mem_big_alloc(cap);
        if (bb->data.n)
            memcpy(p, bb->data.p, bb->data.n);
        sl_free(bb->data.p);
        bb->data.p = p;
        bb->big = true;
    }
    bb->data.cap = cap;
}

static inline void bb_reserve(BatchBuilder *bb, size_t extra)
{
    if (bb->data.n + extra > bb->data.cap)
        bb_grow(bb, bb->data.n + extra);
}

/* Track the order of the record just written at pos (see BatchBuilder):
   one comparison with the record before while there are few runs. */
static inline void note_order(BatchBuilder *bb, const uint8_t *data, size_t pos)
{
    const uint8_t *r = data + pos;
    uint32_t len = (uint32_t)rec_len(r), klen = rec_klen(r);
    if (bb->n == 0) {
        bb->ulen = len;
        bb->uklen = klen;
    } else if (len != bb->ulen || klen != bb->uklen)
        bb->uni = false;
    if (bb->nruns > RUNS_MAX)
        return;
    if (bb->nruns == 0) {
        bb->run[bb->nruns++] = pos;
    } else {
        const uint8_t *p = data + bb->last;
        int c = bytes_cmp(rec_bytes(p), rec_len(p), rec_bytes(r), len);
        if (c > 0) {
            if (bb->nruns < RUNS_MAX)
                bb->run[bb->nruns] = pos;
            bb->nruns++;
        } else if (c == 0)
            bb->dup = true;
    }
    bb->last = pos;
}

/* Write a record's header at p. */
static inline void rec_head(uint8_t *p, uint32_t kn, uint32_t vn, int64_t w)
{
    memcpy(p, &kn, 4);
    memcpy(p + 4, &vn, 4);
    memcpy(p + 8, &w, 8);
}

void bb_add(BatchBuilder *bb, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn, int64_t w)
{
    if (w == 0)
        return;
    if (unlikely(kn + vn > UINT32_MAX))
        sl_panic("tuple of %zu bytes exceeds the 4 GiB limit", kn + vn);
    size_t sz = rec_size(kn + vn);
    bb_reserve(bb, sz);
    uint8_t *p = bb->data.p + bb->data.n;
    rec_head(p, (uint32_t)kn, (uint32_t)vn, w);
    if (kn)
        copy_tuple(p + REC_HDR, k, kn);
    if (vn)
        copy_tuple(p + REC_HDR + kn, v, vn);
    note_order(bb, bb->data.p, bb->data.n);
    bb->data.n += sz;
    bb->n++;
    bb->bytes += kn + vn;
}

void bb_add_xrecs(BatchBuilder *bb, const Buf *in)
{
    if (!in->n)
        return;
    /* a record of 16 + len bytes becomes one of at most 16 + len + 7 */
    bb_reserve(bb, in->n + in->n / 2);
    uint8_t *out = bb->data.p + bb->data.n;
    size_t pos = 0;
    XRec x;
    while (xrec_next(in, &pos, &x)) {
        if (x.w == 0)
            continue;
        size_t len = (size_t)x.kn + x.vn;
        if (unlikely(len > UINT32_MAX))
            sl_panic("tuple of %zu bytes exceeds the 4 GiB limit", len);
        rec_head(out, x.kn, x.vn, x.w);
        copy_tuple(out + REC_HDR, x.k, len); /* the value follows the key */
        note_order(bb, bb->data.p, (size_t)(out - bb->data.p));
        out += rec_size(len);
        bb->n++;
        bb->bytes += len;
    }
    bb->data.n = (size_t)(out - bb->data.p);
}

int64_t bb_count(const BatchBuilder *bb) { return bb->n; }

/* ---- radix sort of records ---- */

/* An index entry: the cached chunk of the record whose address is
   ref >> 2; pfx2 the tuple's bytes [8, 16) when it is longer than 8
   bytes, else (ref & 2 set: SHORT) its length. Bit 0 of ref marks ended
   entries in split_ended. */
typedef struct SortEnt {
    uint64_t pfx, pfx2;
    uint64_t ref;
} SortEnt;

#define SHORT ((uint64_t)2)

static inline const uint8_t *ent_rec(const SortEnt *e) { return (const uint8_t *)(uintptr_t)(e->ref >> 2); }

/* A range of entries still to sort: they agree on all bytes before depth
   (zero-padded), and pfx caches bytes [cend-8, cend). The range lies in the
   entry array, or at the same place in the scatter array when in_tmp. */
typedef struct SortRange {
    size_t start, n, depth, cend;
    bool in_tmp;
} SortRange;

typedef struct SortCtx {
    SortEnt *ents;       /* the result */
    SortEnt *tmp;        /* scatter space, as long as ents */
    SortRange *stack;
    size_t nstack, capstack;
} SortCtx;

#define INSERTION_MAX 24

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

/* Bytes [pos, pos+8) of a tuple of len bytes at p, as load_chunk, when
   the 8 bytes at p + pos can be read (lie before end): one fixed-size
   load, the bytes past the tuple masked off (little-endian). A tuple of
   9 to 15 bytes (a narrow join row) took load_chunk's variable-length
   memcpy for its second chunk. */
static inline uint64_t load_chunk_within(const uint8_t *p, size_t len, size_t pos,
                                         const uint8_t *end)
{
    if (len <= pos)
        return 0;
    if (unlikely(p + pos + 8 > end))
        return load_chunk(p, len, pos);
    uint64_t v;
    memcpy(&v, p + pos, 8);
    if (len - pos < 8)
        v &= ((uint64_t)1 << (8 * (len - pos))) - 1;
    return __builtin_bswap64(v);
}

/* Bytes [pos, pos+8) of the tuple of a builder's record (pos a multiple
   of 8): its bytes are padded to a multiple of 8 (rec_size), so they can
   be read. Not for records an exchange sent (xrec.h: unpadded, the last
   one ends its buffer), which the sort's entries (ent_make, split_ended)
   also index: those load with load_chunk. */
static inline uint64_t load_rec_chunk(const uint8_t *r, size_t len, size_t pos)
{
    return load_chunk_within(rec_bytes(r), len, pos, rec_bytes(r) + ((len + 7) & ~(size_t)7));
}

/* The entry of the record at r (a tuple of len bytes). */
static inline SortEnt ent_make(const uint8_t *r, size_t len)
{
    return (SortEnt){load_chunk(rec_bytes(r), len, 0), len > 8 ? load_chunk(rec_bytes(r), len, 8) : len,
                     (uint64_t)(uintptr_t)r << 2 | (len > 8 ? 0 : SHORT)};
}

/* Order of two entries whose tuples agree (zero-padded) before cend - 8. */
static inline int ent_cmp(const SortEnt *a, const SortEnt *b, size_t cend)
{
    if (a->pfx != b->pfx)
        return a->pfx < b->pfx ? -1 : 1;
    if (cend == 8) { /* pfx2 decides unless both tuples go on past 16 bytes */
        bool sa = a->ref & SHORT, sb = b->ref & SHORT;
        if (sa || sb) /* a tuple of up to 8 bytes is a prefix of the other */
            return sa && sb ? (a->pfx2 > b->pfx2) - (a->pfx2 < b->pfx2) : sa ? -1 : 1;
        if (a->pfx2 != b->pfx2)
            return a->pfx2 < b->pfx2 ? -1 : 1;
    }
    const uint8_t *ra = ent_rec(a), *rb = ent_rec(b);
    size_t la = rec_len(ra), lb = rec_len(rb);
    if (la <= cend || lb <= cend)
        return (la > lb) - (la < lb);
    return bytes_cmp(rec_bytes(ra) + cend, la - cend, rec_bytes(rb) + cend, lb - cend);
}

static void insertion_sort(SortEnt *a, size_t n, size_t cend)
{
    for (size_t i = 1; i < n; i++) {
        SortEnt e = a[i];
        size_t j = i;
        while (j > 0 && ent_cmp(&e, &a[j - 1], cend) < 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = e;
    }
}

static inline __attribute__((always_inline)) void push_range(SortCtx *x, SortRange r)
{
    *VEC_PUSH(x->stack, x->nstack, x->capstack) = r;
}

/* Entries ahead of the current one whose records are prefetched. */
#define PREFETCH_AHEAD 16

/*
 * Entries src[0..n) agree on all bytes before cend and their cached chunk
 * is used up: load the next chunk, except for tuples that end by cend,
 * which are final and go first, ordered by length (lengths lie in
 * [cend-8, cend]); their pfx becomes that length. The result is in dst when
 * some tuples ended, else in src. Returns the number of ended tuples.
 */
static size_t split_ended(SortEnt *src, SortEnt *dst, size_t n, size_t cend)
{
    size_t cnt[10] = {0};
    size_t ended = 0, base = cend - 8;
    if (cend == 8) { /* the second chunk is cached: no record is read */
        for (size_t i = 0; i < n; i++) {
            if (src[i].ref & SHORT) {
                src[i].pfx = src[i].pfx2; /* the length */
                src[i].ref |= 1;
                cnt[src[i].pfx + 1]++;
                ended++;
            } else
                src[i].pfx = src[i].pfx2;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (i + PREFETCH_AHEAD < n)
                __builtin_prefetch(ent_rec(&src[i + PREFETCH_AHEAD]));
            const uint8_t *r = ent_rec(&src[i]);
            size_t len = rec_len(r);
            if (len <= cend) {
                src[i].pfx = len;
                src[i].ref |= 1; /* ended mark */
                cnt[len - base + 1]++;
                ended++;
            } else
                src[i].pfx = load_chunk(rec_bytes(r), len, cend);
        }
    }
    if (ended == 0)
        return 0;
    for (int l = 1; l < 10; l++)
        cnt[l] += cnt[l - 1];
    size_t rest = ended;
    for (size_t i = 0; i < n; i++) {
        SortEnt e = src[i];
        if (e.ref & 1) {
            e.ref &= ~(uint64_t)1;
            dst[cnt[e.pfx - base]++] = e;
        } else
            dst[rest++] = e;
    }
    return ended;
}

static void sort_range(SortCtx *x, SortRange r)
{
    for (;;) {
        SortEnt *src = (r.in_tmp ? x->tmp : x->ents) + r.start;
        SortEnt *dst = (r.in_tmp ? x->ents : x->tmp) + r.start;
        if (r.n <= INSERTION_MAX) {
            /* entries agreeing on the whole chunk would compare their
               records one miss after another: load their next chunks in
               one pass instead (rows of one key, say) */
            uint64_t diff = 0;
            for (size_t i = 1; i < r.n; i++)
                diff |= src[i].pfx ^ src[0].pfx;
            if (diff == 0 && r.n > 1) {
                r.depth = r.cend;
                goto next_chunk;
            }
            insertion_sort(src, r.n, r.cend);
            if (r.in_tmp)
                memcpy(dst, src, r.n * sizeof(SortEnt));
            return;
        }
        if (r.depth == r.cend) {
        next_chunk:;
            size_t nend = split_ended(src, dst, r.n, r.cend);
            if (nend > 0) {
                if (!r.in_tmp)
                    memcpy(src, dst, nend * sizeof(SortEnt)); /* ended ones are final */
                r.in_tmp = !r.in_tmp;
            }
            r.start += nend;
            r.n -= nend;
            r.cend += 8;
            continue;
        }
        /* Histogram of the byte at depth; when that byte is the same
           everywhere, skip to the first byte that differs somewhere. */
        int shift = 56 - 8 * (int)(r.depth - (r.cend - 8));
        size_t cnt[256] = {0}, pos[256];
        uint64_t diff = 0, first = src[0].pfx;
        for (size_t i = 0; i < r.n; i++) {
            cnt[(src[i].pfx >> shift) & 0xff]++;
            diff |= src[i].pfx ^ first;
        }
        if (cnt[(first >> shift) & 0xff] == r.n) {
            r.depth = diff ? r.cend - 8 + (size_t)__builtin_clzll(diff) / 8 : r.cend;
            continue;
        }
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            pos[b] = sum;
            sum += cnt[b];
        }
        for (size_t i = 0; i < r.n; i++)
            dst[pos[(src[i].pfx >> shift) & 0xff]++] = src[i];
        for (int b = 0; b < 256; b++) {
            size_t at = pos[b] - cnt[b];
            if (cnt[b] > 1)
                push_range(x, (SortRange){r.start + at, cnt[b], r.depth + 1, r.cend, !r.in_tmp});
            else if (cnt[b] == 1 && !r.in_tmp)
                src[at] = dst[at]; /* a single entry is final: back to ents */
        }
        return;
    }
}

/* Tuple r (a record) as tuple m of b, weight w. */
static inline void put_rec(Batch *b, int64_t m, const uint8_t *r, int64_t w)
{
    if (!b->off) {
        copy_tuple(b->data + (size_t)m * b->tlen, rec_bytes(r), b->tlen);
        b->w[m] = w;
        return;
    }
    size_t at = b->off[m], len = rec_len(r);
    copy_tuple(b->data + at, rec_bytes(r), len);
    b->off[m + 1] = at + len;
    b->klen[m] = rec_klen(r);
    b->w[m] = w;
}

static inline bool rec_eq(const uint8_t *a, const uint8_t *b)
{
    size_t len = rec_len(a);
    return len == rec_len(b) && bytes_eq(rec_bytes(a), rec_bytes(b), len);
}

/* What the records of a batch to build are: n of them (non-zero
   weights), bytes tuple bytes in all; uni: all of length ulen with keys
   of uklen. */
typedef struct Shape {
    int64_t n;
    size_t bytes;
    bool uni;
    uint32_t ulen, uklen;
} Shape;

static inline Shape bb_shape(const BatchBuilder *bb)
{
    return (Shape){bb->n, bb->bytes, bb->uni, bb->ulen, bb->uklen};
}

/* The batch to fill: room for the records, uniform when they are. */
static Batch *shape_alloc(Shape s)
{
    if (s.uni && s.n > 0)
        return batch_alloc_uni(s.n, s.ulen, s.uklen);
    return batch_alloc(s.n, s.bytes);
}

/* The records of ents[0..s.n) (made by ent_make) sorted by a radix sort,
   then consolidated into a new batch; frees ents (an esz-byte block). */
static Batch *sort_build(SortEnt *ents, size_t esz, Shape s)
{
    size_t n = (size_t)s.n, tsz = (n ? n : 1) * sizeof(SortEnt);
    SortCtx x = {ents, scratch_alloc(tsz), NULL, 0, 0};
    push_range(&x, (SortRange){0, n, 0, 8, false});
    while (x.nstack > 0)
        sort_range(&x, x.stack[--x.nstack]);
    scratch_free(x.tmp, tsz);
    sl_free(x.stack);

    /*
     * Consolidate while copying out. Equal tuples went through the same
     * ranges, so they have equal cached chunks: a differing pfx proves a
     * differing tuple without reading it.
     */
    Batch *b = shape_alloc(s);
    int64_t m = 0;
    for (size_t i = 0; i < n;) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(ent_rec(&ents[i + PREFETCH_AHEAD]));
        const uint8_t *r = ent_rec(&ents[i]);
        int64_t w = rec_w(r);
        size_t j = i + 1;
        for (; j < n && ents[j].pfx == ents[i].pfx; j++) {
            const uint8_t *q = ent_rec(&ents[j]);
            if (!rec_eq(q, r))
                break;
            w = add_weights(w, rec_w(q));
        }
        if (w != 0)
            put_rec(b, m++, r, w);
        i = j;
    }
    scratch_free(ents, esz);
    if ((size_t)m < n)
        b = batch_shrink(b, m);
    return b;
}

/* bb_finish of records in no known order: radix sort, then consolidate. */
static Batch *finish_unsorted(BatchBuilder *bb)
{
    size_t n = (size_t)bb->n;
    const uint8_t *data = bb->data.p;
    size_t esz = (n ? n : 1) * sizeof(SortEnt);
    SortEnt *ents = scratch_alloc(esz);
    for (size_t i = 0, pos = 0; i < n; i++) {
        size_t len = rec_len(data + pos);
        ents[i] = ent_make(data + pos, len);
        pos += rec_size(len);
    }
    return sort_build(ents, esz, bb_shape(bb));
}

/* bb_finish of records appended in order (one run): copy them out,
   summing neighbours only when some are equal. */
static Batch *finish_sorted(BatchBuilder *bb)
{
    const uint8_t *data = bb->data.p, *end = data ? data + bb->data.n : data; /* (none yet) */
    Batch *b = shape_alloc(bb_shape(bb));
    int64_t m = 0;
    if (!bb->dup) {
        for (const uint8_t *p = data; p < end; p += rec_size(rec_len(p)))
            put_rec(b, m++, p, rec_w(p));
        return b;
    }
    for (const uint8_t *p = data; p < end;) {
        const uint8_t *r = p;
        int64_t w = rec_w(r);
        for (p += rec_size(rec_len(r)); p < end && rec_eq(p, r); p += rec_size(rec_len(p)))
            w = add_weights(w, rec_w(p));
        if (w != 0)
            put_rec(b, m++, r, w);
    }
    if (m < bb->n)
        b = batch_shrink(b, m);
    return b;
}

/* A sorted run being merged: its next record at pos (< end) and that
   record's first chunk. */
typedef struct RunCur {
    size_t pos, end;
    uint64_t pfx;
} RunCur;

static inline int run_cmp(const uint8_t *data, const RunCur *a, const RunCur *b)
{
    if (a->pfx != b->pfx)
        return a->pfx < b->pfx ? -1 : 1;
    const uint8_t *ra = data + a->pos, *rb = data + b->pos;
    size_t la = rec_len(ra), lb = rec_len(rb);
    if (la <= 8 || lb <= 8)
        return (la > lb) - (la < lb);
    return bytes_cmp(rec_bytes(ra) + 8, la - 8, rec_bytes(rb) + 8, lb - 8);
}

static inline void run_load(const uint8_t *data, RunCur *c)
{
    const uint8_t *r = data + c->pos;
    c->pfx = load_rec_chunk(r, rec_len(r), 0);
}

/* Sift h[i] down the min-heap h[0..k) of runs. */
static void heap_down(const uint8_t *data, const RunCur *c, int *h, int k, int i)
{
    int top = h[i];
    for (;;) {
        int l = 2 * i + 1;
        if (l >= k)
            break;
        if (l + 1 < k && run_cmp(data, &c[h[l + 1]], &c[h[l]]) < 0)
            l++;
        if (run_cmp(data, &c[h[l]], &c[top]) >= 0)
            break;
        h[i] = h[l];
        i = l;
    }
    h[i] = top;
}

/* bb_finish of records appended as 2..RUNS_MAX ascending runs: a k-way
   merge (a heap of the runs' next records), consolidating as it goes. */
static Batch *finish_runs(BatchBuilder *bb)
{
    const uint8_t *data = bb->data.p;
    int k = bb->nruns, h[RUNS_MAX];
    RunCur c[RUNS_MAX];
    for (int i = 0; i < k; i++) {
        c[i] = (RunCur){bb->run[i], i + 1 < k ? bb->run[i + 1] : bb->data.n, 0};
        run_load(data, &c[i]);
        h[i] = i;
    }
    for (int i = k / 2 - 1; i >= 0; i--)
        heap_down(data, c, h, k, i);
    Batch *b = shape_alloc(bb_shape(bb));
    int64_t m = 0, w = 0;
    const uint8_t *cur = NULL;
    uint64_t curpfx = 0;
    while (k > 0) {
        RunCur *t = &c[h[0]];
        const uint8_t *r = data + t->pos;
        if (cur && t->pfx == curpfx && rec_eq(r, cur))
            w = add_weights(w, rec_w(r));
        else {
            if (cur && w != 0)
                put_rec(b, m++, cur, w);
            cur = r;
            curpfx = t->pfx;
            w = rec_w(r);
        }
        t->pos += rec_size(rec_len(r));
        if (t->pos < t->end)
            run_load(data, t);
        else
            h[0] = h[--k];
        if (k > 1)
            heap_down(data, c, h, k, 0);
    }
    if (cur && w != 0)
        put_rec(b, m++, cur, w);
    if (m < bb->n)
        b = batch_shrink(b, m);
    return b;
}

Batch *bb_finish(BatchBuilder *bb)
{
    Batch *b = bb->nruns <= 1          ? finish_sorted(bb)
               : bb->nruns <= RUNS_MAX ? finish_runs(bb)
                                       : finish_unsorted(bb);
    if (bb->big)
        mem_big_free(bb->data.p);
    else
        sl_free(bb->data.p);
    sl_free(bb);
    return b;
}

/*
 * The records of in[0..nin) as one batch, without a builder's copy of
 * them: a first pass looks for order (as note_order would, until there
 * are more than RUNS_MAX runs); input in a few sorted runs goes through a
 * builder (its merge of runs beats a sort). Otherwise one pass indexes
 * the records where they lie (by address) and notes their shape, the
 * index is sorted, and the records are copied into the batch once.
 */
Batch *batch_from_xrecs(const Buf *const *in, int nin)
{
    int runs = 0;
    size_t total = 0;
    const uint8_t *prev = NULL;
    for (int i = 0; i < nin; i++) {
        total += in[i]->n;
        const uint8_t *p = in[i]->p, *end = p ? p + in[i]->n : p;
        for (; p < end && runs <= RUNS_MAX; p += REC_HDR + rec_len(p)) {
            if (rec_w(p) == 0)
                continue;
            if (!prev || bytes_cmp(rec_bytes(prev), rec_len(prev), rec_bytes(p), rec_len(p)) > 0)
                runs++;
            prev = p;
        }
    }
    if (runs <= RUNS_MAX) {
        BatchBuilder *bb = bb_new();
        for (int i = 0; i < nin; i++)
            bb_add_xrecs(bb, in[i]);
        return bb_finish(bb);
    }
    /* a record takes at least REC_HDR bytes: room for every one (the
       pages of the unused rest are never touched) */
    size_t esz = total / REC_HDR * sizeof(SortEnt);
    SortEnt *ents = scratch_alloc(esz);
    Shape s = {0, 0, true, 0, 0};
    for (int i = 0; i < nin; i++) {
        const uint8_t *p = in[i]->p, *end = p ? p + in[i]->n : p;
        while (p < end) {
            size_t len = rec_len(p);
            if (rec_w(p) != 0) {
                if (unlikely(len > UINT32_MAX))
                    sl_panic("tuple of %zu bytes exceeds the 4 GiB limit", len);
                uint32_t kn = rec_klen(p);
                if (s.n == 0) {
                    s.ulen = (uint32_t)len;
                    s.uklen = kn;
                } else if (len != s.ulen || kn != s.uklen)
                    s.uni = false;
                s.bytes += len;
                ents[s.n++] = ent_make(p, len);
            }
            p += REC_HDR + len;
        }
    }
    return sort_build(ents, esz, s);
}

/* ---- merge ---- */

/* Append tuple i of s to out at position m (weight w). A uniform out
   has inputs of its shape only (merge_alloc). */
static inline __attribute__((always_inline)) void emit(Batch *out, int64_t m, const Batch *s, int64_t i,
                                                      int64_t w)
{
    if (!out->off) {
        copy_tuple(out->data + (size_t)m * out->tlen, s->data + (size_t)i * out->tlen, out->tlen);
        out->w[m] = w;
        return;
    }
    size_t len = batch_tlen(s, i);
    copy_tuple(out->data + out->off[m], batch_key(s, i), len);
    out->off[m + 1] = out->off[m] + len;
    out->klen[m] = (uint32_t)batch_klen(s, i);
    out->w[m] = w;
}

/* Append tuples [i, s->n) of s to out at position m, unchanged. */
static void emit_rest(Batch *out, int64_t m, const Batch *s, int64_t i)
{
    int64_t k = s->n - i;
    size_t base = batch_off(out, m), from = batch_off(s, i);
    memcpy(out->data + base, s->data + from, batch_off(s, s->n) - from);
    if (out->off) {
        for (int64_t t = 1; t <= k; t++)
            out->off[m + t] = base + (batch_off(s, i + t) - from);
        if (s->klen)
            memcpy(out->klen + m, s->klen + i, (size_t)k * sizeof(uint32_t));
        else
            for (int64_t t = 0; t < k; t++)
                out->klen[m + t] = s->fklen;
    }
    memcpy(out->w + m, s->w + i, (size_t)k * sizeof(int64_t));
}

/* The output of a merge of in[0..k): uniform when every input that has
   tuples is uniform with one shape. */
static Batch *merge_alloc(const Batch *const *in, int k)
{
    int64_t bound = 0;
    size_t bytes = 0;
    const Batch *shape = NULL;
    bool uni = true;
    for (int j = 0; j < k; j++) {
        bound += in[j]->n;
        bytes += batch_off(in[j], in[j]->n);
        if (in[j]->n == 0)
            continue;
        if (in[j]->off)
            uni = false;
        else if (!shape)
            shape = in[j];
        else if (in[j]->tlen != shape->tlen || in[j]->fklen != shape->fklen)
            uni = false;
    }
    if (uni && shape)
        return batch_alloc_uni(bound, shape->tlen, shape->fklen);
    return batch_alloc(bound, bytes);
}

Batch *batch_merge(const Batch *a, const Batch *b)
{
    int64_t bound = a->n + b->n;
    Batch *out = merge_alloc((const Batch *const[]){a, b}, 2);
    int64_t i = 0, j = 0, m = 0;
    while (i < a->n && j < b->n) {
        int c = bytes_cmp(batch_key(a, i), batch_tlen(a, i), batch_key(b, j), batch_tlen(b, j));
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

/* A batch being merged by batch_merge_many: its next tuple i (< b->n),
   that tuple's length and its first two chunks (bytes [0, 8) and [8, 16),
   zero-padded): a join side's tuples agree on their first 8 bytes (the
   key and the row's first bytes) with their neighbours in other runs,
   and the second chunk mostly decides without reading the tuples. */
typedef struct MergeCur {
    const Batch *b;
    int64_t i;
    uint64_t pfx, pfx2;
    size_t len;
} MergeCur;

static inline void mcur_load(MergeCur *c)
{
    const uint8_t *p = batch_key(c->b, c->i);
    size_t len = batch_tlen(c->b, c->i);
    c->len = len;
    const uint8_t *end = c->b->data + batch_off(c->b, c->b->n);
    c->pfx = load_chunk_within(p, len, 0, end);
    c->pfx2 = load_chunk_within(p, len, 8, end);
}

/* Tuples that agree on their zero-padded first 16 bytes: a shorter one
   that ends within them is a prefix of the other. */
static inline int mcur_cmp(const MergeCur *a, const MergeCur *b)
{
    if (a->pfx != b->pfx)
        return a->pfx < b->pfx ? -1 : 1;
    if (a->pfx2 != b->pfx2)
        return a->pfx2 < b->pfx2 ? -1 : 1;
    size_t la = a->len, lb = b->len;
    if (la <= 16 || lb <= 16)
        return (la > lb) - (la < lb);
    return bytes_cmp(batch_key(a->b, a->i) + 16, la - 16, batch_key(b->b, b->i) + 16, lb - 16);
}

/* Sift h[i] down the min-heap h[0..k) of cursors. */
static inline __attribute__((always_inline)) void mheap_down(const MergeCur *c, int *h, int k, int i)
{
    int top = h[i];
    for (;;) {
        int l = 2 * i + 1;
        if (l >= k)
            break;
        if (l + 1 < k && mcur_cmp(&c[h[l + 1]], &c[h[l]]) < 0)
            l++;
        if (mcur_cmp(&c[h[l]], &c[top]) >= 0)
            break;
        h[i] = h[l];
        i = l;
    }
    h[i] = top;
}

/* Runs batch_merge_many merges without a heap. */
#define MERGE_SMALL 4

/* A merge of 3..MERGE_SMALL runs into out (allocated for all their
   tuples): the cursors kept in order in o[0..no) (insertion sort), so the
   cursor that just moved on costs one comparison while it stays first
   (the common case: a trace merges its newest runs with one that is
   larger), where the heap's sift costs two; and a tuple from the same run
   as the one whose weights are being summed is greater than it (a batch's
   tuples are distinct), so only a change of run compares with it. */
static int64_t merge_small(Batch *const *in, int k, Batch *out)
{
    MergeCur c[MERGE_SMALL];
    int o[MERGE_SMALL], no = 0;
    for (int j = 0; j < k; j++) {
        c[j] = (MergeCur){in[j], 0, 0, 0, 0};
        if (in[j]->n == 0)
            continue;
        mcur_load(&c[j]);
        int p = no++;
        while (p > 0 && mcur_cmp(&c[o[p - 1]], &c[j]) > 0) {
            o[p] = o[p - 1];
            p--;
        }
        o[p] = j;
    }
    int64_t m = 0, w = 0;
    int curj = -1;     /* the run of the tuple whose weights are being summed */
    MergeCur cur = {NULL, 0, 0, 0, 0};
    while (no > 0) {
        int j = o[0];
        MergeCur *t = &c[j];
        if (curj >= 0 && j != curj && mcur_cmp(t, &cur) == 0)
            w = add_weights(w, t->b->w[t->i]);
        else {
            if (curj >= 0 && w != 0)
                emit(out, m++, cur.b, cur.i, w);
            cur = *t;
            curj = j;
            w = t->b->w[t->i];
        }
        if (++t->i < t->b->n) {
            mcur_load(t);
            int p = 1;
            while (p < no && mcur_cmp(&c[o[p]], t) < 0) {
                o[p - 1] = o[p];
                p++;
            }
            o[p - 1] = j;
        } else {
            for (int p = 1; p < no; p++)
                o[p - 1] = o[p];
            no--;
        }
    }
    if (curj >= 0 && w != 0)
        emit(out, m++, cur.b, cur.i, w);
    return m;
}

Batch *batch_merge_many(Batch *const *in, int k)
{
    if (k == 1) {
        batch_ref(in[0]);
        return in[0];
    }
    if (k == 2)
        return batch_merge(in[0], in[1]);
    if (k <= MERGE_SMALL) {
        int64_t bound = 0;
        for (int j = 0; j < k; j++)
            bound += in[j]->n;
        Batch *out = merge_alloc((const Batch *const *)in, k);
        int64_t m = merge_small(in, k, out);
        if (m < bound)
            out = batch_shrink(out, m);
        return out;
    }
    int64_t bound = 0;
    MergeCur *c = sl_malloc(sizeof(MergeCur) * (size_t)k);
    int *h = sl_malloc(sizeof(int) * (size_t)k), nh = 0;
    for (int j = 0; j < k; j++) {
        bound += in[j]->n;
        c[j] = (MergeCur){in[j], 0, 0, 0, 0};
        if (in[j]->n > 0) {
            mcur_load(&c[j]);
            h[nh++] = j;
        }
    }
    for (int i = nh / 2 - 1; i >= 0; i--)
        mheap_down(c, h, nh, i);
    Batch *out = merge_alloc((const Batch *const *)in, k);
    int64_t m = 0, w = 0;
    MergeCur cur = {NULL, 0, 0, 0, 0}; /* the tuple whose weights are being summed */
    while (nh > 0) {
        MergeCur *t = &c[h[0]];
        if (cur.b && mcur_cmp(t, &cur) == 0)
            w = add_weights(w, t->b->w[t->i]);
        else {
            if (cur.b && w != 0)
                emit(out, m++, cur.b, cur.i, w);
            cur = *t;
            w = t->b->w[t->i];
        }
        if (++t->i < t->b->n)
            mcur_load(t);
        else
            h[0] = h[--nh];
        if (nh > 1)
            mheap_down(c, h, nh, 0);
    }
    if (cur.b && w != 0)
        emit(out, m++, cur.b, cur.i, w);
    sl_free(c);
    sl_free(h);
    if (m < bound)
        out = batch_shrink(out, m);
    return out;
}

/* ---- slices (spilled blocks, zset/spill.c) ---- */

Batch *batch_slice(const Batch *b, int64_t lo, int64_t hi)
{
    int64_t n = hi - lo;
    size_t base = batch_off(b, lo), nbytes = batch_off(b, hi) - base;
    Batch *s = b->off || n == 0 ? batch_alloc(n, nbytes) : batch_alloc_uni(n, b->tlen, b->fklen);
    if (s->off) {
        for (int64_t i = 0; i < n; i++)
            s->off[i + 1] = batch_off(b, lo + i + 1) - base;
        for (int64_t i = 0; i < n; i++)
            s->klen[i] = (uint32_t)batch_klen(b, lo + i);
    }
    memcpy(s->w, b->w + lo, (size_t)n * sizeof(int64_t));
    memcpy(s->data, b->data + base, nbytes);
    s->n = n;
    return s;
}

Batch *batch_concat(Batch *const *parts, int np)
{
    int64_t n = 0;
    size_t nbytes = 0;
    for (int k = 0; k < np; k++) {
        n += parts[k]->n;
        nbytes += batch_off(parts[k], parts[k]->n);
    }
    Batch *c = merge_alloc((const Batch *const *)parts, np);
    int64_t at = 0;
    for (int k = 0; k < np; k++) {
        emit_rest(c, at, parts[k], 0);
        at += parts[k]->n;
    }
    c->n = n;
    return c;
}

/* ---- layouts ---- */

Batch *batch_compact(Batch *b)
{
    if (!b->off || b->n == 0)
        return b;
    size_t len = b->off[1];
    uint32_t kl = b->klen[0];
    if (len > UINT32_MAX)
        return b;
    for (int64_t i = 1; i < b->n; i++)
        if (b->off[i + 1] - b->off[i] != len || b->klen[i] != kl)
            return b;
    Batch *u = batch_alloc_uni(b->n, (uint32_t)len, kl);
    emit_rest(u, 0, b, 0);
    batch_unref(b);
    return u;
}

void batch_tables(const Batch *b, const size_t **off1, const uint32_t **klen, void **scratch)
{
    *scratch = NULL;
    if (b->off) {
        *off1 = b->off + 1;
        *klen = b->klen;
        return;
    }
    size_t n = (size_t)b->n;
    size_t *o = sl_malloc(n * sizeof(size_t) + n * sizeof(uint32_t) + 1);
    uint32_t *k = (uint32_t *)(o + n);
    for (size_t i = 0; i < n; i++) {
        o[i] = (i + 1) * b->tlen;
        k[i] = b->fklen;
    }
    *off1 = o;
    *klen = k;
    *scratch = o;
}

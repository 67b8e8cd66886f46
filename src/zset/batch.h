/*
 * zset/batch.h - immutable, consolidated Z-set batches of encoded tuples.
 *
 * A tuple is (key, val, weight): key and val are key.h encodings laid end to
 * end (key first), so tuples sort by key, then val, with one memcmp over the
 * concatenation. A batch holds each distinct (key, val) once, sorted, with a
 * non-zero weight. A plain Z-set uses an empty val (the row is the key);
 * an indexed Z-set (join side: join key -> rest of row) splits the two.
 *
 * Batches are reference-counted: the last unref frees. They are built by a
 * BatchBuilder (unsorted input: sort + consolidate) or by merging two
 * batches (consolidating merge).
 */
#ifndef SL_ZSET_BATCH_H
#define SL_ZSET_BATCH_H

#include "../base/base.h"

typedef struct Batch {
    int refs;
    /* Uniform batch (off == NULL, klen == NULL): every tuple is tlen bytes
       with a key of fklen bytes, tuple i at data[i * tlen]. A batch of
       fixed-width tuples (integer columns, say) then costs its bytes and a
       weight a tuple, not 12 bytes more of tables. */
    uint32_t tlen, fklen;
    bool big;       /* the block is mem_big_alloc's (base/mem.h), else sl_malloc's */
    int64_t n;      /* tuples */
    size_t *off;    /* n+1 offsets into data: tuple i is data[off[i]..off[i+1]) */
    uint32_t *klen; /* key length of tuple i (val = the rest) */
    uint8_t *data;
    int64_t *w;     /* weights, never 0 */
} Batch;

/* Where tuple i starts in b->data (i == n: the end of the data). */
static inline size_t batch_off(const Batch *b, int64_t i)
{
    return b->off ? b->off[i] : (size_t)i * b->tlen;
}
/* Tuple i's length (key and value). */
static inline size_t batch_tlen(const Batch *b, int64_t i)
{
    return b->off ? b->off[i + 1] - b->off[i] : b->tlen;
}
static inline const uint8_t *batch_key(const Batch *b, int64_t i) { return b->data + batch_off(b, i); }
static inline size_t batch_klen(const Batch *b, int64_t i) { return b->klen ? b->klen[i] : b->fklen; }
static inline const uint8_t *batch_val(const Batch *b, int64_t i)
{
    return batch_key(b, i) + batch_klen(b, i);
}
static inline size_t batch_vlen(const Batch *b, int64_t i)
{
    return batch_tlen(b, i) - batch_klen(b, i);
}

typedef struct BatchBuilder BatchBuilder;

BatchBuilder *bb_new(void);
/* Add one tuple (copied). Zero weights are allowed and vanish. */
void bb_add(BatchBuilder *bb, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn, int64_t w);
/* Add every record of the zset/xrec.h stream in (key and value copied),
   as bb_add of each would. */
struct Buf;
void bb_add_xrecs(BatchBuilder *bb, const struct Buf *in);
/* The batch bb_add_xrecs of in[0..nin) and bb_finish build, without
   copying the records into a builder first: records in no known order
   are sorted where they lie (an exchange's inboxes), so the buffers must
   stay unchanged until it returns. */
Batch *batch_from_xrecs(const struct Buf *const *in, int nin);
int64_t bb_count(const BatchBuilder *bb);
/* Sort, sum the weights of equal tuples, drop zeros; frees bb. Never NULL
   (an empty batch has n == 0). */
Batch *bb_finish(BatchBuilder *bb);

/* Consolidating merge of two batches (neither is changed). */
Batch *batch_merge(const Batch *a, const Batch *b);
/* Consolidating merge of in[0..k) (k >= 1) in one pass; with k == 1 a
   new reference to in[0]. */
Batch *batch_merge_many(Batch *const *in, int k);
Batch *batch_empty(void);
void batch_ref(Batch *b);
void batch_unref(Batch *b);
/* Tuples [lo, hi) of b as a batch of their own (a spilled block). */
Batch *batch_slice(const Batch *b, int64_t lo, int64_t hi);
/* The tuples of parts[0..np) end to end: the parts must be consecutive
   slices of one sorted batch (a spilled run read back). */
Batch *batch_concat(Batch *const *parts, int np);
/* b, in the uniform layout when all its tuples have one length and one
   key length (takes b's reference; returns b itself otherwise): for
   batches built elsewhere (read from a file). */
Batch *batch_compact(Batch *b);
/* The offset table off[1..n] and key lengths of b: b's own, or for a
   uniform batch tables built into *scratch (sl_free it; NULL when the
   tables are b's own). For the file format, which stores the tables. */
void batch_tables(const Batch *b, const size_t **off1, const uint32_t **klen, void **scratch);
/* Bytes held by b (for memory statistics). */
size_t batch_bytes(const Batch *b);

/* Index of the first tuple whose key is >= k (n when none). */
int64_t batch_seek(const Batch *b, const uint8_t *k, size_t kn);
/* The same within [lo, hi): the first index there whose key is >= k, hi
   when none (the keys below lo must be < k, those from hi on >= k). */
int64_t batch_seek_range(const Batch *b, int64_t lo, int64_t hi, const uint8_t *k, size_t kn);
/* Compare tuple i's key with k: <0, 0, >0. */
int batch_key_cmp(const Batch *b, int64_t i, const uint8_t *k, size_t kn);

#endif

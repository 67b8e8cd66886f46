/*
 * zset/xrec.h - weighted tuples as a flat stream of records in a Buf: what
 * stateful operators send each other (circuit/shard.h, moved by
 * runtime/exchange.h), a sink's changes in a step, a view's contents read
 * between steps (rt_sink_contents) and what checkpoints and one-shot
 * queries read from them.
 *
 * A record is [u32 klen][u32 vlen][i64 weight][key][val], native byte
 * order, no padding: the key and value are key.h encodings (or any bytes
 * the writer and the reader agree on). The stream is only ever read by
 * the process that wrote it, or by one built from the same source (hosts
 * of a scale-out pipeline), so no version or byte order travels with it.
 */
#ifndef SL_ZSET_XREC_H
#define SL_ZSET_XREC_H

#include "../base/buf.h"

/* Append the record (k, v, w) to b. */
static inline void xrec_put(Buf *b, const uint8_t *k, uint32_t kn, const uint8_t *v, uint32_t vn,
                            int64_t w)
{
    uint8_t hdr[16];
    memcpy(hdr, &kn, 4);
    memcpy(hdr + 4, &vn, 4);
    memcpy(hdr + 8, &w, 8);
    buf_reserve(b, 16 + (size_t)kn + vn);
    memcpy(b->p + b->n, hdr, 16);
    if (kn)
        memcpy(b->p + b->n + 16, k, kn);
    if (vn)
        memcpy(b->p + b->n + 16 + kn, v, vn);
    b->n += 16 + (size_t)kn + vn;
}

/* Append a record (k, value, w) whose value the caller then appends to b
   itself (encoding in place, no copy); returns where the record starts,
   for xrec_close once the value is in. */
static inline size_t xrec_open(Buf *b, const uint8_t *k, uint32_t kn, int64_t w)
{
    size_t at = b->n;
    uint32_t vn = 0;
    buf_reserve(b, 16 + (size_t)kn);
    memcpy(b->p + at, &kn, 4);
    memcpy(b->p + at + 4, &vn, 4);
    memcpy(b->p + at + 8, &w, 8);
    if (kn)
        memcpy(b->p + at + 16, k, kn);
    b->n += 16 + (size_t)kn;
    return at;
}

/* Set the value length of the record xrec_open started at `at`: every
   byte appended since. */
static inline void xrec_close(Buf *b, size_t at)
{
    uint32_t kn;
    memcpy(&kn, b->p + at, 4);
    uint32_t vn = (uint32_t)(b->n - at - 16 - kn);
    memcpy(b->p + at + 4, &vn, 4);
}

/* One record read back: k and v point into the Buf. */
typedef struct XRec {
    const uint8_t *k, *v;
    uint32_t kn, vn;
    int64_t w;
} XRec;

/* Read the record at *pos of b into r and move *pos past it; false at the
   end. */
static inline bool xrec_next(const Buf *b, size_t *pos, XRec *r)
{
    if (*pos >= b->n)
        return false;
    const uint8_t *p = b->p + *pos;
    memcpy(&r->kn, p, 4);
    memcpy(&r->vn, p + 4, 4);
    memcpy(&r->w, p + 8, 8);
    r->k = p + 16;
    r->v = p + 16 + r->kn;
    *pos += 16 + (size_t)r->kn + r->vn;
    return true;
}

#endif

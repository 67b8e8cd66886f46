/*
 * base/wire.h - fixed-width little helpers for binary records in Bufs: the
 * step journal and ingress log (pipeline/journal.c) and the messages
 * between scale-out hosts (pipeline/dist.c). Host byte order: records are
 * read back by the same build on the same kind of machine.
 *
 * Readers never trust what they read: a short read sets bad, and a count
 * that sizes an allocation or a loop is read with rd_count32/rd_count64,
 * which refuse one the rest of the record cannot hold (fuzz/ finds every
 * decoder that forgets).
 */
#ifndef SL_BASE_WIRE_H
#define SL_BASE_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"

static inline void put32(Buf *b, int32_t v) { buf_append(b, &v, 4); }
static inline void put64(Buf *b, int64_t v) { buf_append(b, &v, 8); }

/* A reader over [p, end); a short read sets bad and yields zeros/NULL. */
typedef struct Rd {
    const uint8_t *p, *end;
    bool bad;
} Rd;

static inline const uint8_t *rd_bytes(Rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static inline int64_t rd64(Rd *r)
{
    int64_t v = 0;
    const uint8_t *p = rd_bytes(r, 8);
    if (p)
        memcpy(&v, p, 8);
    return v;
}

static inline int32_t rd32(Rd *r)
{
    int32_t v = 0;
    const uint8_t *p = rd_bytes(r, 4);
    if (p)
        memcpy(&v, p, 4);
    return v;
}

/* A count of items that each take at least min_item bytes of what
   follows (min_item 0: only non-negative). A negative count, or one the
   rest of the record cannot hold, sets bad and yields 0, so that the
   caller can size an allocation or a loop by it. */
static inline int64_t rd_count64(Rd *r, size_t min_item)
{
    int64_t n = rd64(r);
    size_t left = (size_t)(r->end - r->p);
    if (r->bad || n < 0 || (min_item && (uint64_t)n > left / min_item)) {
        r->bad = true;
        return 0;
    }
    return n;
}

static inline int32_t rd_count32(Rd *r, size_t min_item)
{
    int32_t n = rd32(r);
    size_t left = (size_t)(r->end - r->p);
    if (r->bad || n < 0 || (min_item && (uint64_t)n > left / min_item)) {
        r->bad = true;
        return 0;
    }
    return n;
}

#endif

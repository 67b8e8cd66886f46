/*
 * zset/hmap.h - hash table from byte-string keys (copied in) to a fixed-size
 * payload, for per-group accumulators, distinct counts and materialized
 * view contents. Payload pointers stay valid until the entry is deleted
 * or the map freed (entries are never moved).
 */
#ifndef SL_ZSET_HMAP_H
#define SL_ZSET_HMAP_H

#include "../base/base.h"

typedef struct HMap HMap;

HMap *hmap_new(size_t payload_size);
void hmap_free(HMap *m);
int64_t hmap_count(const HMap *m);
size_t hmap_bytes(const HMap *m);

/* Make room for n entries in all, so that inserting them rebuilds nothing
   (restoring a checkpoint). */
void hmap_reserve(HMap *m, int64_t n);
/* Start loading the slot where hash's probe begins (a bulk insert that
   knows its next keys: the table's misses overlap instead of queueing). */
void hmap_prefetch(const HMap *m, uint64_t hash);
/* Payload for key k, created zero-filled when absent (*created set then). */
void *hmap_upsert(HMap *m, const uint8_t *k, size_t kn, uint64_t hash, bool *created);
/* Payload for key k or NULL. */
void *hmap_find(const HMap *m, const uint8_t *k, size_t kn, uint64_t hash);
/* Remove key k if present. */
void hmap_delete(HMap *m, const uint8_t *k, size_t kn, uint64_t hash);

/* Iteration: start with *it = 0; returns false at the end. Deleting the
   entry just returned is allowed; inserting during iteration is not. */
bool hmap_next(const HMap *m, size_t *it, const uint8_t **k, size_t *kn, void **payload);

#endif

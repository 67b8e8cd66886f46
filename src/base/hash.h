/*
 * base/hash.h - the one hash used for keys: exchange routing and hash tables.
 */
#ifndef SL_BASE_HASH_H
#define SL_BASE_HASH_H

#include <xxhash.h>

#include "base.h"

static inline uint64_t sl_hash(const void *p, size_t n) { return XXH3_64bits(p, n); }

#endif

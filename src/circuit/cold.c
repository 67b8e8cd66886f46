/*
 * circuit/cold.c - an operator's cold trace (cold.h): the budget's
 * registration, moving a map's entries into it, and its memory figures.
 */
#include "cold.h"

#include <string.h>

#include "../base/hash.h"

Trace *cold_new(void *o, const SpillOwner *so, bool *owner)
{
    Trace *t = trace_new();
    *owner = trace_tracked(t);
    if (*owner)
        spill_register(o, so);
    return t;
}

void cold_evict(Trace *cold, HMap **map, size_t plsz, Batch **saved, ColdPut put, void *ctx)
{
    if (saved && *saved) {
        batch_unref(*saved);
        *saved = NULL;
    }
    if (!hmap_count(*map))
        return;
    HMap *keep = hmap_new(plsz);
    BatchBuilder *bb = bb_new();
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (hmap_next(*map, &it, &k, &kn, &pl))
        if (!put(ctx, bb, k, kn, pl)) {
            bool created;
            memcpy(hmap_upsert(keep, k, kn, sl_hash(k, kn), &created), pl, plsz);
        }
    hmap_free(*map);
    *map = keep;
    trace_insert_take(cold, bb_finish(bb));
    trace_step_end(cold); /* between steps: nothing to roll back */
}

int cold_compact(void *o, int *merged, Err *err)
{
    (void)o, (void)err;
    *merged = 0; /* the cold trace merges its own runs */
    return 0;
}

void cold_mem(const Trace *t, OpMem *m)
{
    TraceMem tm = {0};
    trace_mem(t, &tm);
    m->bytes += tm.bytes;
    m->trace_bytes += tm.trace_bytes;
    m->disk_bytes += tm.disk_bytes;
    m->cache_hits += tm.cache_hits;
    m->cache_misses += tm.cache_misses;
}

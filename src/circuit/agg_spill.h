/*
 * circuit/agg_spill.h - an aggregate's cold groups (agg_spill.c): the
 * groups op_agg.c moved out of its hash map when the memory budget
 * (zset/spill.h) asked, kept in a trace that spills to files like any
 * other, and read back one by one, in key order, by the steps that touch
 * them. A cold group is one tuple: key = the group key encoding, val = the
 * aggregate's Part bytes (partsz: counts and accumulators), a byte 1 and
 * the encoding of the row last emitted (or a byte 0 when none), weight 1:
 * the layout of the checkpoint's groups batch, so a checkpoint saves cold
 * groups as they are and a restore can put them straight back.
 */
#ifndef SL_CIRCUIT_AGG_SPILL_H
#define SL_CIRCUIT_AGG_SPILL_H

#include "../base/buf.h"
#include "../zset/batch.h"
#include "../zset/trace.h"
#include "op.h"

typedef struct AggCold AggCold;

/* What the aggregate gives the budget: the bytes of its groups in memory,
   and moving them out (between steps: agg_cold_encode each into a run,
   then agg_cold_put). */
typedef struct AggColdHooks {
    size_t (*hot_bytes)(const void *agg);
    void (*evict)(void *agg, AggCold *c);
} AggColdHooks;

/* Cold groups of an aggregate whose Part has partsz bytes; registered
   with the budget when the runtime tracks traces (else nothing spills). */
AggCold *agg_cold_new(size_t partsz, void *agg, const AggColdHooks *h);
void agg_cold_free(AggCold *c);
/* Cold groups (committed: those read back this step still count). */
int64_t agg_cold_count(const AggCold *c);

/* A group as a cold tuple's value (appended to v). */
void agg_cold_encode(Buf *v, const void *part, size_t partsz, const uint8_t *out, uint32_t outlen);
/* Is v a well-formed cold tuple's value? */
bool agg_cold_valid(const uint8_t *v, size_t vn, size_t partsz);
/* n groups moved out of the map, as one run (a new reference, taken). */
void agg_cold_put(AggCold *c, Batch *run, int64_t n);

/* Restore: the groups of a checkpoint (batch m, the cold layout) go
   straight into the cold trace, spillable, when they do not fit in memory
   (the budget is on and m is larger than an eighth of its limit), and
   spill to files at once; *taken says whether they did (then m is
   referenced). Checks m as a load does
   (errors name node). */
int agg_cold_restore(AggCold *c, Batch *m, int node, bool *taken, Err *err);

/* Read back, with keys in ascending order through one cursor (each block
   read at most once per step): the value of key k's cold group, valid
   until the step ends; it leaves cold when the step ends (undo: it stays).
   False when k has no cold group. */
TraceCursor *agg_cold_cursor(AggCold *c);
bool agg_cold_take(AggCold *c, TraceCursor *cur, const uint8_t *k, size_t kn, const uint8_t **v,
                   size_t *vn);

void agg_cold_step_end(AggCold *c);
void agg_cold_undo(AggCold *c);

/* Every cold tuple into bb (the read-back retractions cancelling there). */
void agg_cold_add_all(const AggCold *c, BatchBuilder *bb);
/* fn on the last output row of every cold group; what it hands out stays
   valid until the step ends. */
void agg_cold_rows(AggCold *c, void (*fn)(void *arg, const uint8_t *row, size_t n), void *arg);
/* Forget the groups whose key column col (of types) is below bound. */
int64_t agg_cold_forget(AggCold *c, const SqlType *types, int col, int64_t bound);
/* Figures of the cold trace, added to m; hot: bytes of the groups in the
   map (they spill when registered). */
void agg_cold_mem(const AggCold *c, size_t hot, OpMem *m);

#endif

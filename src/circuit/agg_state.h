/*
 * circuit/agg_state.h - the value multisets of the aggregates that are not
 * linear (agg_state.c): MIN, MAX, the DISTINCT forms, STRING_AGG, BIT_AND/
 * OR/XOR, PERCENTILE_CONT/DISC, MODE, VAR/STDDEV_SAMP/POP, COVAR_POP/SAMP,
 * CORR and ARG_MIN/MAX. op_agg.c keeps one trace per such
 * aggregate, keyed by the group key, whose values are the entries
 * agg_state_encode() makes of the group's rows (weights summed by the
 * trace: deletions cancel insertions); after a step it asks
 * agg_state_value() for the new value of every touched group.
 */
#ifndef SL_CIRCUIT_AGG_STATE_H
#define SL_CIRCUIT_AGG_STATE_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/err.h"
#include "../expr/chunk.h"
#include "../zset/trace.h"
#include "circuit.h"
#include "op.h"

/* Does aggregate a need its group's value multiset (not a linear one)? */
bool agg_state_needed(const AggSpec *a);

/* The multiset entry of row r of rows (input columns of the aggregate
   node) for aggregate a, appended to out; false (out unchanged) when the
   row adds none: its value is NULL. The entry sorts in the aggregate's
   order (its ORDER BY, then the value) under memcmp. */
bool agg_state_encode(const AggSpec *a, const Chunk *rows, int64_t r, Buf *out);

/* The distinct entries of the group with key k in t (sorted, weights
   summed, only those with a positive weight) into *out (sl_malloc'd
   array the caller frees; entries point into t's batches). cur: NULL, or
   a cursor of t (keys probed in ascending order: each spilled block is
   read once). */
void agg_state_values(const Trace *t, TraceCursor *cur, const uint8_t *k, size_t kn, ValWs *out);

/* The value of multiset aggregate a (not COUNT/SUM/AVG) for the group with
   key k into row 0 of column c of dst (NULL when the multiset is empty).
   A string result is built in strs (valid until the caller resets it).
   0, or SL_ERUNTIME with err set (node names the aggregate node). */
int agg_state_value(const AggSpec *a, const Trace *t, TraceCursor *cur, const uint8_t *k,
                    size_t kn, Chunk *dst, int c, Arena *strs, int node, Err *err);

#endif

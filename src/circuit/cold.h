/*
 * circuit/cold.h - an operator's cold trace (cold.c): where the memory
 * budget (zset/spill.h) moves the entries of an operator's in-memory map
 * between steps. The trace spills to files like any other and merges its
 * own runs. Shared by the sink (op_sink.c), PRIMARY KEY tables
 * (op_upsert.c) and 'emit_final' (watermark.c), and but for cold_evict by
 * an aggregate's cold groups (agg_spill.c); what a cold tuple holds, and
 * how a step reads it back, is each operator's own.
 */
#ifndef SL_CIRCUIT_COLD_H
#define SL_CIRCUIT_COLD_H

#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/spill.h"
#include "../zset/trace.h"
#include "op.h"

/* A new cold trace for the budget's owner o; registers o (hooks so) when
   the trace is tracked (the runtime's traces), and says so in *owner. */
Trace *cold_new(void *o, const SpillOwner *so, bool *owner);

/* What cold_evict asks of each map entry (key k, payload pl): add its
   tuples, if any, to bb and return true to take it out of the map, or
   return false to keep it (the payload is copied into the new map). */
typedef bool (*ColdPut)(void *ctx, BatchBuilder *bb, const uint8_t *k, size_t kn, void *pl);

/* A SpillOwner's evict, between steps: drops the checkpoint copy *saved
   (when saved is not NULL), then moves the entries of *map that put takes
   into cold as one sorted run; *map becomes a map (payloads of plsz bytes)
   of the entries put kept. Nothing to roll back: the run is committed. */
void cold_evict(Trace *cold, HMap **map, size_t plsz, Batch **saved, ColdPut put, void *ctx);

/* The SpillOwner's compact of an owner whose memory is a cold trace: the
   trace merges its own runs, so there is nothing to merge here. */
int cold_compact(void *o, int *merged, Err *err);

/* Adds a trace's memory to an operator's figures: bytes, trace bytes (it
   can spill), bytes on disk, block cache hits and misses (not its rows). */
void cold_mem(const Trace *t, OpMem *m);

#endif

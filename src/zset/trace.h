/*
 * zset/trace.h - the integral of a stream of batches, kept as a spine of
 * batches of geometrically growing size (an LSM): inserting a batch merges
 * it with the newest batches while they are no more than twice its size,
 * so a trace of N tuples holds O(log N) batches and each tuple is merged
 * O(log N) times.
 * The runs an insert merges with (the newest ones, each at most twice
 * the size of what merges below it) are merged in one k-way pass, so a
 * tuple is written once per insert that reaches it and no intermediate
 * result is held beside the final one (a join backfill's peak memory).
 *
 * Batches replaced by a merge are not freed at once: decoded chunks of the
 * current step may still point into them. They are released by
 * trace_step_end(), which owners call once the step is over.
 */
#ifndef SL_ZSET_TRACE_H
#define SL_ZSET_TRACE_H

#include "../base/err.h"
#include "batch.h"

typedef struct Trace Trace;

Trace *trace_new(void);
void trace_free(Trace *t);
/* Add batch b to the integral; takes ownership of the caller's reference. */
void trace_insert_take(Trace *t, Batch *b);
/*
 * Deferred merges (the pipeline's traces: those trace_tracked): while on,
 * a tracked trace's insert pushes its batch as a run without merging (up
 * to a few per step), and trace_tidy_all, called between steps by the
 * thread that runs them once no step is under way, does the merges the
 * spine's rule asks for in every such trace, on up to `threads` threads
 * (the step's workers are idle then). Moves the merging of big runs out
 * of the step, after its views changed.
 */
void trace_defer(bool on);
void trace_tidy_all(int threads);
/* Release batches retired by merges since the last call (the step
   stands: trace_rollback can no longer undo its inserts). */
void trace_step_end(Trace *t);
/* Undo every insert since the last trace_step_end: the spine is again what
   it was (a failed step's rollback). Call before trace_step_end. */
void trace_rollback(Trace *t);

/* Checkpoints: the spine's batches, oldest (largest) first (borrowed:
   batch_ref what you keep; a spilled run is read back whole and kept until
   trace_step_end), and appending a saved batch back at the new
   end without merging, so a restored trace has the saved spine. */
int trace_nbatches(const Trace *t);
Batch *trace_batch(const Trace *t, int i);
void trace_restore_take(Trace *t, Batch *b);

/* Tuples in all batches (not consolidated across batches). */
int64_t trace_count(const Trace *t);
/* Bytes in memory: resident batches, retired ones, spilled runs' indexes. */
size_t trace_bytes(const Trace *t);

/* Memory figures (added to *m): tuples, bytes in memory, bytes of spilled
   runs on disk, blocks read back from the cache / from files. */
typedef struct TraceMem {
    int64_t rows;
    size_t bytes, disk_bytes;
    int64_t cache_hits, cache_misses;
    size_t trace_bytes; /* of bytes, those of traces (their runs can spill) */
} TraceMem;
void trace_mem(const Trace *t, TraceMem *m);

/*
 * The memory budget (spill.h). Traces made by this thread while on are
 * registered for spill_enforce (the pipeline's runtime turns it on; a
 * one-shot /query's traces stay out). Between steps: the bytes of runs in
 * memory, the largest one, and moving that one to files.
 */
void trace_track_new(bool on);
/* Was t registered for spill_enforce (made while tracking was on)? */
bool trace_tracked(const Trace *t);
size_t trace_resident_bytes(const Trace *t);
size_t trace_largest_resident(const Trace *t);
int trace_spill_largest(Trace *t, Err *err);
/* Merge spilled runs of one size tier (within a factor 4) once there
   are four of them, streaming from files to files; *merged gets the
   number of runs merged away. */
int trace_compact(Trace *t, int *merged, Err *err);

/*
 * Call cb for every tuple whose key equals k, batch by batch (a (key, val)
 * may appear in several batches; weights then add up). The val pointer is
 * valid until trace_step_end.
 */
typedef void (*TraceFn)(void *ctx, const uint8_t *val, size_t vn, int64_t w);
void trace_for_key(const Trace *t, const uint8_t *k, size_t kn, TraceFn cb, void *ctx);

/*
 * A forward cursor for probing many keys in ascending order (joins and
 * distinct walk their sorted deltas): each batch keeps a position that only
 * moves forward, found by galloping, so probing k sorted keys costs about
 * O(k log(gap)) instead of O(k log n) per batch. The trace must not change
 * while the cursor is in use.
 */
typedef struct TraceCursor TraceCursor;
TraceCursor *trace_cursor_new(const Trace *t);
void trace_cursor_free(TraceCursor *c);
/* Like trace_for_key; k must not be smaller than the previous call's k. */
void trace_cursor_for_key(TraceCursor *c, const uint8_t *k, size_t kn, TraceFn cb, void *ctx);

/*
 * Every (key, val) of the integral whose weights do not cancel, in tuple
 * order, with its summed weight, streaming: a resident run is walked in
 * place and a spilled one block by block (one block of each run pinned at
 * a time), so the integral is never in memory whole. The pointers are
 * valid during the call only; the trace must not change meanwhile.
 */
typedef void (*TraceScanFn)(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                            int64_t w);
void trace_scan(const Trace *t, TraceScanFn cb, void *ctx);

/* One consolidated batch with the whole integral (merges all batches into
   one, which becomes the trace's only batch); a new reference for the caller. */
Batch *trace_consolidate(Trace *t);

#endif

/*
 * zset/spill.h - the memory budget of trace state: spilled runs (a spine
 * batch cut into blocks that live in files), the bounded cache that reads
 * blocks back, and the enforcement that chooses what to spill.
 *
 * zset/ knows no files: whoever owns a directory (storage/spill.c) plugs
 * in a SpillIO that writes a run's blocks end to end into one file and
 * reads a block back by its offset. Without
 * one, nothing spills. Every trace registers itself here; between steps
 * (no trace in use on any thread) the controller calls spill_enforce, which
 * spills the largest resident runs (the oldest: a spine's oldest batch is
 * its largest) of all traces until the resident state fits the budget.
 * A reader of a spilled run (trace.c) loads only the blocks whose key
 * range holds the probed key, through the cache, and copies what it hands
 * out, so a block is pinned only while a probe reads it.
 */
#ifndef SL_ZSET_SPILL_H
#define SL_ZSET_SPILL_H

#include "../base/err.h"
#include "batch.h"

#define SPILL_NAME_MAX 64

typedef struct SpillIO {
    void *ctx;
    /* Start the file of a new run: its name to name, a writer to *w. */
    int (*create)(void *ctx, char name[SPILL_NAME_MAX], void **w, Err *err);
    /* Append block b to the file: where it starts to *off, its size on
       disk to *disk. */
    int (*append)(void *ctx, void *w, const Batch *b, uint64_t *off, size_t *disk, Err *err);
    /* Done writing (w goes; the file stays until drop). */
    void (*close)(void *ctx, void *w);
    /* Read the block at off (disk bytes) of the named file back (refs 1). */
    int (*get)(void *ctx, const char *name, uint64_t off, size_t disk, Batch **out, Err *err);
    /* The file is no longer needed (its run is gone). */
    void (*drop)(void *ctx, const char *name);
} SpillIO;

typedef struct SpillConf {
    size_t limit;       /* bytes of state to keep to (0: no budget) */
    size_t cache_bytes; /* blocks read back, unpinned, kept up to this */
    size_t block_bytes; /* data bytes per block */
    size_t min_run;     /* runs below this size stay in memory */
    bool merge;         /* merge spilled runs (spill_compact) */
} SpillConf;

/* Install io (copied; NULL: spill nothing) and the budget. Between steps. */
void spill_configure(const SpillIO *io, const SpillConf *conf);
void spill_conf(SpillConf *out);

/* A run that lives in a file: blocks of consecutive tuples of one batch,
   end to end. */
typedef struct SpillBlock {
    uint64_t id;        /* cache key */
    uint64_t off;       /* where it starts in the run's file */
    int64_t n;          /* tuples */
    uint8_t *first;     /* key of its first tuple */
    uint32_t firstn;
    size_t disk;        /* its bytes in the file */
} SpillBlock;

typedef struct Spilled {
    char name[SPILL_NAME_MAX]; /* its file ("" while it has no block) */
    int refs;
    int64_t n;          /* tuples */
    size_t bytes;       /* batch_bytes of the run when resident */
    size_t disk;        /* file bytes (all blocks) */
    int nblocks;
    SpillBlock *blk;
} Spilled;

/* Write b as blocks (b is not changed; the caller drops it). */
int spill_write(const Batch *b, Spilled **out, Err *err);
/* Merge nin (2..SPILL_MERGE_MAX) spilled runs into a new one (in[] are
   not changed; the caller drops them), streaming: one block of each and
   one output block in memory at a time. Tuples whose weights cancel are
   gone. Counts nin - 1 merges (SpillStats.runs_merged). */
#define SPILL_MERGE_MAX 8
int spill_merge(Spilled *const *in, int nin, Spilled **out, Err *err);
/* The same with the batch b in memory as one more run (nin + 1 at most
   SPILL_MERGE_MAX): b spills straight into the merge, never written (and
   read back) on its own. Counts a run spilled and nin merges. */
int spill_merge_batch(const Batch *b, Spilled *const *in, int nin, Spilled **out, Err *err);
void spilled_ref(Spilled *s);
void spilled_unref(Spilled *s);
/* Bytes the run's index holds in memory. */
size_t spilled_index_bytes(const Spilled *s);
/* Index of the first block that may hold key k (blocks before it hold only
   smaller keys), starting the search at block from. */
int spilled_seek(const Spilled *s, int from, const uint8_t *k, size_t kn);
/* Block i, read through the cache and pinned: release with spill_unpin.
   *hit tells whether it was cached. Panics naming the file when it cannot
   be read (the state is lost to this process), unless a handler is set. */
const Batch *spill_pin(const Spilled *s, int i, bool *hit);
void spill_unpin(const Spilled *s, int i);
/* The whole run as one batch (a merge, a checkpoint); a new reference. */
Batch *spilled_load(const Spilled *s);
/* What a block that cannot be read back does instead of a panic (a
   checkpoint's forked child: it reports the message and exits, failing
   that checkpoint alone). fn must not return; NULL: panic. */
void spill_on_read_error(void (*fn)(const char *msg));

/* What can spill registers so that enforcement sees it (trace.c: each
   trace): the bytes of its runs in memory, the size of the largest, and
   moving that one to files. An owner may instead move state into a trace
   of its own, which spills it in turn (circuit/op_agg.c: an aggregate's
   groups become a run of its trace of cold groups): enforcement counts
   every owner again after each move. */
typedef struct SpillOwner {
    size_t (*resident)(const void *o);
    size_t (*largest)(const void *o);
    int (*spill_largest)(void *o, Err *err);
    /* merge spilled runs as the spine's rule says (*merged: how many merges) */
    int (*compact)(void *o, int *merged, Err *err);
} SpillOwner;
void spill_register(void *o, const SpillOwner *ops);
void spill_unregister(void *o);

/* Between steps: spill resident runs, largest first, until the resident
   trace bytes plus other_bytes (state that cannot spill) plus the cache
   fit the limit, or nothing is left to spill. 0, or an error from the IO
   (err set); *spilled (may be NULL) gets the bytes moved out. */
int spill_enforce(size_t other_bytes, size_t *spilled, Err *err);
/* The same with the runs in memory counted times over (other_bytes
   already holds what the next step's merges may need: 1). */
int spill_enforce_times(size_t other_bytes, int times, size_t *spilled, Err *err);
/* Between steps: bytes of every registered trace's runs in memory. */
size_t spill_resident(void);

/* Between steps, after spill_enforce: merge each trace's spilled runs
   (trace_compact) so that a trace keeps O(log(size / budget)) of them.
   Off when conf.merge is false. *merged (may be NULL): merges done. */
int spill_compact(int *merged, Err *err);

typedef struct SpillStats {
    size_t cache_bytes;      /* blocks held by the cache */
    size_t disk_bytes;       /* files of every spilled run */
    int64_t hits, misses;    /* block reads served by the cache / from files */
    int64_t runs_spilled;    /* runs written so far by spilling */
    int64_t runs_live;       /* spilled runs that exist now (every trace's) */
    int64_t runs_merged;     /* spilled runs merged away so far (k runs into one: k - 1) */
} SpillStats;
void spill_stats(SpillStats *out);

#endif

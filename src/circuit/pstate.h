/*
 * circuit/pstate.h - partitioned ordered state: the state and the step of
 * the operators that see their input as partitions of ordered rows, top-k
 * (op_topk.c), window functions (op_window.c) and the ASOF join
 * (op_asof.c). They differ only in what a touched partition emits.
 *
 * The state is the operator's input integral grouped by partition key,
 * each partition an ordered tree (otree.h) of `sort key || row` nodes
 * with their weights before the step and now. A step:
 *  - push(): rows are routed by the hash of their partition key (all to
 *    worker 0 without PARTITION BY) as records (partition key, sort key ||
 *    row) (shard.h), so a partition lives on one worker;
 *  - finish(): the records routed to this worker, consolidated, are added
 *    to their partitions' trees (weights "now"); every changed row and
 *    touched partition is listed; each touched partition goes to the
 *    operator's emit() with its changed rows, which appends the output
 *    changes (-old +new) computed from both versions of the same tree;
 *  - step_end(): weights "now" become "before", rows with no weight leave
 *    their trees, empty partitions their map.
 * A row with negative multiplicity (more deletions than insertions) is a
 * runtime error of the step; step_end drops its weight.
 *
 * Checkpoints: the state is the partitions' rows, saved as one batch of
 * (partition key, row encoding, multiplicity) (otree_save), kept while no
 * step changes it; load() inserts them as finish() does, without output;
 * load_split() keeps the partitions the new worker owns. Partitions that
 * spilled (pstate_spillable) are saved in the same layout (from the cold
 * trace, which holds them all then), and a restored operator has them all
 * in memory.
 *
 * An operator using it keeps a PState as the first member of its state
 * (op->st points at both), calls pstate_init() (which installs push,
 * finish, step_end, save, load and load_split), sets emit (and fresh when
 * its nodes carry decoded values) and frees with pstate_free().
 */
#ifndef SL_CIRCUIT_PSTATE_H
#define SL_CIRCUIT_PSTATE_H

#include "op.h"
#include "otree.h"

typedef struct HMap HMap;
typedef struct Trace Trace;
typedef struct BatchBuilder BatchBuilder;

typedef struct PPart {
    uint8_t *key; /* partition key encoding (owned) */
    uint32_t klen;
    int64_t stamp; /* last step in which the partition changed */
    size_t bytes;  /* of its key and nodes */
    int64_t rows;  /* its nodes (the same) */
    OTree t;
} PPart;

/* A row changed in the step, and its partition. */
typedef struct PChanged {
    PPart *part;
    ONode *n;
} PChanged;

typedef struct PState {
    const char *what;     /* the operator in messages: "top-k", "window" */
    HMap *parts;          /* partition key -> PPart */
    OLayout lay;          /* node layout (pstate_init: no values, no sums) */
    const SqlType *in_types; /* the input's columns */
    int nin;
    SqlType *ord_types;   /* types of the order columns */
    PChanged *chg;        /* rows changed this step */
    int64_t nchg, capchg;
    PPart **touched;      /* partitions changed this step */
    int64_t ntouched, captouched;
    Buf tmp;              /* scratch of sort keys */
    Batch *saved;         /* the state as of the last save() or load(), while unchanged */
    /* The output changes of touched partition part, whose changed rows are
       chg[0..nc), appended to co; 0 or SL_ERUNTIME (env->ev->err set). */
    int (*emit)(Op *op, OpEnv *env, PPart *part, const PChanged *chg, int64_t nc,
                ChunkOut *co);
    /* Set the values of node n, new in a tree and without weight yet
       (NULL: nodes carry none). */
    void (*fresh)(Op *op, ONode *n);
    /* Spilling (pstate_spillable; pstate.c, "Spilling"): */
    Trace *cold;          /* every partition once through: (partition key,
                             sort key || row, multiplicity), or NULL when
                             nothing spills */
    bool owner;           /* registered with zset/spill.h */
    bool through;         /* partitions spilled: cold holds all of them, the
                             map those read back since, and each step's
                             changes go to both */
    int64_t ncold_rows;   /* distinct rows in cold (once through) */
    int64_t nhot_rows;    /* distinct rows in the map (spillable only) */
    int64_t last_step;    /* the latest step (env->step), -1 before the first */
    size_t heap;          /* bytes of partition keys and tree nodes in the map */
} PState;

/* Set up ps (op's state begins with it) for node op->node and install its
   step and checkpoint functions in op. */
void pstate_init(Op *op, PState *ps, const char *what);
/* Let the partitions spill (top-k, window): when the budget first asks,
   every partition goes into a trace that spills to files like any trace
   run and keeps them all (each step's changes follow); the map keeps
   those a step read back until the budget drops them. After pstate_init
   and olayout_init. An operator that drops rows of its own between steps
   (ASOF below the watermark) does it with pstate_forget, and walks only
   the partitions in the map: cold ones keep such rows until a step reads
   them back. */
void pstate_spillable(PState *ps);
/* Between steps, drop node n from partition part (its weights, the
   figures); once partitions spilled, the row's retraction goes to
   *cold_bb (created on first use) so the cold trace forgets it too. */
void pstate_forget(PState *ps, PPart *part, ONode *n, BatchBuilder **cold_bb);
/* After a round of pstate_forget: delete the partitions empty[0..nempty)
   (left with no rows) and add cold_bb's retractions to the cold trace. */
void pstate_forget_end(PState *ps, BatchBuilder *cold_bb, PPart **empty, int64_t nempty);
/* Partitions read back from cold so far, by every operator of the process
   (tests and figures). */
int64_t pstate_partitions_read_back(void);
/* Rows written to cold traces so far (the partitions' rows when they
   first spill, then each step's changes), and the rows the spillable
   operators took in (records of the steps' inputs, rows loaded from
   checkpoints): the writes stay within twice what came in, whatever the
   steps read back (tests and figures). */
int64_t pstate_cold_writes(void);
int64_t pstate_rows_in(void);
/* Free every partition and what ps owns (not ps itself). */
void pstate_free(PState *ps);

#endif

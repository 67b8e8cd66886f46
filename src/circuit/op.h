/*
 * circuit/op.h - the shape every operator instance shares (PostgreSQL's
 * Init/Exec/End, DBSP's operator traits). One instance per (node, worker);
 * instances are single-threaded. Stateful operators meet the other
 * workers' instances only through their Shard (shard.h): they route
 * records to the worker that owns their key and are handed the records
 * routed to theirs; the runtime moves them in between.
 *
 * Linear operators have eval(): it reads the input chunks (outputs of the
 * input nodes this step) and sets op->out. Stateful operators and sinks are
 * streamed instead: begin() at the step's start, push() once per morsel of
 * input (a bounded chunk: the worker feeds a large step through the linear
 * operators a morsel at a time, so memory does not grow with the step),
 * flush() after the last push(), then (once the runtime has moved the
 * routed records) finish(), which reads the records routed to its worker,
 * updates the state and sets op->out. push() must copy whatever it keeps:
 * a morsel's memory is reused for the next one. Chunks set as op->out live
 * in the worker's step arena. After all operators ran, step_end() lets
 * stateful operators release what the step's chunks pointed into.
 */
#ifndef SL_CIRCUIT_OP_H
#define SL_CIRCUIT_OP_H

#include "../base/vec.h"
#include "../zset/batch.h"
#include "circuit.h"
#include "shard.h"

typedef struct OpEnv {
    int worker, nworkers;
    int64_t step;      /* 0 for the first step */
    Arena *arena;      /* step arena (reset when a step starts) */
    EvalCtx *ev;       /* ev->arena == arena; runtime errors go to ev->err */
    /* per node, per column: this step's watermarks (watermark.h), valid in
       finish(); NULL when the circuit has no LATENESS */
    const int64_t *const *wm;
    /* a DRed over-deletion probe of a fixed point (op_fixpoint.c), undone
       right after: DISTINCT emits -1 for every row whose change is
       negative, whatever its weight (the rows with a derivation that uses
       a deleted row); other operators work as always */
    bool probe;
} OpEnv;

/* Values with their weights, as trace_for_key and trace_cursor_for_key
   hand them over for one key: op_valw_add (ctx = the ValWs) appends one. */
typedef struct ValW {
    const uint8_t *v;
    size_t n;
    int64_t w;
} ValW;
typedef struct ValWs {
    ValW *v;
    int64_t n, cap;
} ValWs;
static inline void op_valw_add(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    ValWs *l = ctx;
    *VEC_PUSH(l->v, l->n, l->cap) = (ValW){val, vn, w};
}

/* A growable list of batch references (checkpoints). */
typedef struct BatchList {
    Batch **b;
    int n, cap;
} BatchList;
/* Append b to l (takes the caller's reference). */
void batchlist_add(BatchList *l, Batch *b);
/* Drop every reference and the array. */
void batchlist_free(BatchList *l);

/* An operator's memory figures (the trace's shape: rows kept, bytes in
   memory, bytes spilled to files, spilled blocks read from the cache and
   from files). */
#include "../zset/trace.h"
typedef TraceMem OpMem;

typedef struct Op Op;
struct Op {
    const CNode *node;
    const Circuit *circuit;
    Chunk *out;        /* output of the current step */
    void *st;          /* operator state */
    Shard *sh;         /* its outboxes and inboxes (owned by the runtime), or NULL */
    int (*eval)(Op *op, OpEnv *env, Chunk **in);
    void (*begin)(Op *op, OpEnv *env);
    int (*push)(Op *op, OpEnv *env, int input, Chunk *c);
    /* The end of the routing phase (NULL: nothing to do): send what push()
       kept back (the aggregate's local partials). */
    void (*flush)(Op *op, OpEnv *env);
    /* A second exchange round (NULL: one round). The runtime moves
       channels [0, nch_first) of the operator's Shard, calls reroute(),
       which reads those inboxes and writes outboxes of the channels from
       nch_first on (the join sends a hot key's rows on from the key's
       owner to every worker), moves those, then calls finish(). Every
       worker's instance runs it, with or without anything to send. */
    void (*reroute)(Op *op, OpEnv *env);
    int nch_first;
    int (*finish)(Op *op, OpEnv *env);
    /* Rollback of a step that failed before any finish() (a runtime error
       in a linear operator over the step's input): withdraw what push() of
       the same chunk changed beyond the step. NULL when push() keeps
       nothing that the next begin() does not reset (only sinks, which
       integrate as they go, need it). */
    void (*unpush)(Op *op, OpEnv *env, int input, Chunk *c);
    /* Rollback of a step that failed after finish(): restore the state as
       it was before the step's begin(); called before step_end(). NULL when
       the operator cannot (a failing step that gave it input then stops
       the pipeline). Stateless operators need none. */
    void (*undo)(Op *op);
    void (*step_end)(Op *op);
    void (*free)(Op *op);
    /* Checkpoints (NULL for stateless operators). save() appends the
       instance's state as batches to *out: new references, which may be
       references to batches the operator keeps (they are immutable, so the
       checkpoint writer can compress them while later steps run). It runs
       on the controller thread between steps and must not change the
       state. load() rebuilds the state of a fresh instance (one that has
       run no step) from what save() of the same node and worker of the
       same program produced; it takes no references it does not count.
       Returns 0, or SL_EIO with err set when the batches do not have the
       shape save() gives (a corrupt or foreign checkpoint). */
    int (*save)(Op *op, BatchList *out);
    int (*load)(Op *op, Batch *const *b, int n, Err *err);
    /* A checkpoint taken with another worker count: rebuild this fresh
       instance, worker w of W, from what save() gave on each of the nold
       old workers (lists[k] of counts[k] batches), keeping the state this
       instance owns (the keys op_route sends to w). */
    int (*load_split)(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                      int nold, Err *err);
    /* Memory: add the state's figures to *m (NULL for stateless
       operators). Between steps; may walk the whole state, so callers
       bound how often they ask. */
    void (*mem)(Op *op, OpMem *m);
};

/* How many shard channels node n needs (0 = it exchanges nothing). */
int op_shard_channels(const CNode *n);
/* New instance of node n for one worker; sh (NULL when n needs no
   channels) stays the caller's and must outlive the instance. */
Op *op_new(const Circuit *c, const CNode *n, Shard *sh);
void op_free(Op *op);

/* The memory figures of op (zeros for a stateless operator). */
void op_mem(Op *op, OpMem *m);

/* Checkpoint helpers: append references to t's spine batches to out, and
   restore n saved spine batches into t (taking references of its own). */
typedef struct Trace Trace;
void op_save_trace(const Trace *t, BatchList *out);
void op_load_trace(Trace *t, Batch *const *b, int n);

/* For load_split: the consolidated sum of batches b[0..n) restricted to
   the tuples worker w of W owns (op_route of the key; with global, all of
   them on worker 0 and none elsewhere). A new reference. */
Batch *op_owned_sum(Batch *const *b, int n, int w, int W, bool global);
/* A header batch of one tuple per name (key) with weight counts[i] (zero
   counts vanish), as save() functions write them. */
Batch *op_header(const char *const *names, const int64_t *counts, int n);

/* An empty chunk with n's output types. */
Chunk *op_empty(Arena *a, const CNode *n);

/* Growable output chunk in a step arena. */
typedef struct ChunkOut {
    Chunk *c;
    Arena *a;
    int ncol;
    const SqlType *types;
} ChunkOut;
void cout_init(ChunkOut *o, Arena *a, int ncol, const SqlType *types, int64_t cap);
/* Index of a new row (room made as needed); caller fills it. */
int64_t cout_row(ChunkOut *o);
/* Index of the first of n new rows (room made as needed); caller fills them. */
int64_t cout_rows(ChunkOut *o, int64_t n);

/* Per-family constructors (op_*.c). */
int op_linear_init(Op *op);
int op_agg_init(Op *op);
int op_join_init(Op *op);
int op_distinct_init(Op *op);
int op_temporal_init(Op *op); /* op_temporal.c */
int op_sink_init(Op *op);
int op_upsert_init(Op *op);
int op_topk_init(Op *op);
int op_window_init(Op *op);
int op_asof_init(Op *op);
int op_final_init(Op *op); /* watermark.c */
int op_fixpoint_init(Op *op);

/* Sink access for the controller (op_sink.c). */
typedef struct HMap HMap;
/* Does the sink keep its contents (rel_keeps)? */
bool op_sink_keeps(Op *op);
/* Its contents, between steps: fn(arg, row encoding, n, integral weight)
   for every row whose weight is not 0, each once (the pointers are valid
   during the call only). Contents the budget spilled are read back
   streaming, a block at a time (op_sink.c, "Spilling"). */
typedef void (*OpRowFn)(void *arg, const uint8_t *row, size_t n, int64_t w);
void op_sink_rows(Op *op, OpRowFn fn, void *arg);
/* This step's changes as xrec records (key = row encoding, w), or NULL
   when the relation has no output connectors. */
Buf *op_sink_changes(Op *op);
/* Rows (sum of |weights|) that reached the sink so far. */
int64_t op_sink_count(Op *op);
/* Integral of weights (net rows) so far. */
int64_t op_sink_net(Op *op);
/* Collect changes (op_sink_changes) from the next step on even without
   output connectors: on/off calls are counted (HTTP egress subscribers). */
void op_sink_watch(Op *op, bool on);
/* Bytes held by the sink's state (materialized contents). */
size_t op_sink_bytes(Op *op);

/* Aggregate access for bootstrapping (pipeline/boot.c), between steps:
   fn(arg, row, n) for each group's current output row (its encoding; the
   integral of the node's output stream on this worker). op_agg.c. */
void op_agg_rows(Op *op, void (*fn)(void *arg, const uint8_t *row, size_t n), void *arg);

/* Upsert access for the controller between steps (op_upsert.c). */
/* The current row (row encoding, *n bytes; valid until the next step) of
   the key encoded in k[0..kn), or NULL. Only the instance of the worker
   that owns the key (op_route) holds it. */
const uint8_t *op_upsert_row(Op *op, const uint8_t *k, size_t kn, uint32_t *n);
/* Bytes of the key index (row encodings not counted). */
size_t op_upsert_bytes(Op *op);

#endif

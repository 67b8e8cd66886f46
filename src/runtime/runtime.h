/*
 * runtime/runtime.h - W workers, each owning a replica of the circuit's
 * operators and a shard of every stateful operator's state, stepping
 * together.
 *
 * The controller hands each worker its share of every table's input for
 * the next step (rt_set_input), then rt_step runs the step on all workers
 * and returns when every worker has finished it. The calling thread acts
 * as worker 0; workers 1..W-1 are threads. Workers meet only at exchanges
 * (inside stateful operators) and at the step's start and end.
 */
#ifndef SL_RUNTIME_RUNTIME_H
#define SL_RUNTIME_RUNTIME_H

#include "../circuit/op.h"
#include "exchange.h" /* xchg_first: the workers of each host */

/* Appends rows [start, start+count) of plan `plan` of generator src to out
   (room for count rows), strings from a; must be thread-safe. The datagen
   connector's is datagen_fill. */
typedef void (*PieceFill)(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                          Arena *a);

/* A piece of a table's input for one worker and one step: ready rows, or
   a range of generated rows the worker produces itself. */
typedef struct Piece {
    struct Piece *next;
    Chunk *chunk;       /* rows (the worker reads them), or NULL */
    PieceFill fill;     /* else: rows [start, start+count) of plan `plan` */
    const void *src;    /* ... of this generator */
    int plan;
    int64_t start, count;
    bool negate;        /* generated rows are deletions (weight -1) */
} Piece;

/* Append the pieces of list (may be NULL) to the list (*head, *tail). */
static inline void piece_list_append(Piece **head, Piece **tail, Piece *list)
{
    if (!list)
        return;
    if (*tail)
        (*tail)->next = list;
    else
        *head = list;
    while (list->next)
        list = list->next;
    *tail = list;
}

typedef struct Runtime Runtime;

Runtime *rt_new(const Circuit *c, int nworkers);
/* Scale-out: W workers in all spread evenly over `hosts` processes (see
   exchange.h); this one, `host`, runs its share. Exchanges move rows
   between hosts (cluster/net.h); every host must step together. */
Runtime *rt_new_part(const Circuit *c, int W, int host, int hosts);
void rt_free(Runtime *rt);
/* Workers of this process. The functions below that take a worker w
   (rt_set_input, rt_op, rt_save, rt_load...) index these local workers:
   local worker w is global worker rt_first_worker(rt) + w. */
int rt_workers(const Runtime *rt);
int rt_total_workers(const Runtime *rt);
int rt_first_worker(const Runtime *rt);
/* Append this process's workers' materialized contents of sink node
   `sink` as xrec records (key = row encoding, weight; a row may come more
   than once, weights add up). Between steps. */
void rt_sink_contents(Runtime *rt, int sink, Buf *out);
/* Bytes held by this process's workers' step and morsel arenas (between
   steps: memory/stats). */
size_t rt_arena_bytes(const Runtime *rt);
/* Bytes this process sent to other hosts' workers through exchanges. */
int64_t rt_remote_bytes(const Runtime *rt);
/* Seconds spent in exchanges between hosts (xchg_remote_ns). */
double rt_remote_secs(const Runtime *rt);
/* Pieces for relation rel on worker w in the next step (the list and its
   chunks must stay valid until rt_step returns). */
void rt_set_input(Runtime *rt, int w, int rel, Piece *list);
/* Run one step; 0, or SL_ERUNTIME with the first worker error in err. */
int rt_step(Runtime *rt, Err *err);
/* Did the last rt_step fail in a linear operator over the step's input and
   undo itself? Then every operator's state is exactly as before that step
   and the step count did not advance: the step may run again (with other
   input). One host only, or a step bounded on every host (worker.c). */
bool rt_rolled_back(const Runtime *rt);
/* Bound each worker's allocations in a step to per_worker bytes (0: no
   bound; base/budget.h, polled by the input loop and joins every few
   thousand rows, and after each operator): a worker past it fails the
   step, which is undone like any runtime error (only use with
   rt_can_undo_step; with several hosts, on all of them). rt_step_memory_node: the node where the last step passed
   it (-2: reading its input), or -1. */
void rt_set_step_memory(Runtime *rt, int64_t per_worker);
int rt_step_memory_node(const Runtime *rt);
/* The sum of the workers' peak allocations in the last step (bytes
   allocated minus freed on each, at its highest; 0 without a bound). */
int64_t rt_step_memory_peak(const Runtime *rt);
/* Bytes the busiest local worker took from its step arena in the last
   step (its operators' outputs: what a step holds beside the state). */
size_t rt_step_arena_used(const Runtime *rt);
/* Bytes of records the busiest local worker received through the
   exchanges of the last step, all stateful operators together: the
   operators' input buffers, held until the step ends and copied once
   more when an operator sorts them into a batch (circuit/shard.h). */
size_t rt_step_exchanged(const Runtime *rt);
/* Between steps: evaluate the linear operators that read relation rel's
   input directly (filters, projections, unions before any stateful
   operator) over `rows`, pushing nothing anywhere. 0 when every row passes;
   SL_ERUNTIME with the first error otherwise. For finding the rows that
   made a rolled-back step fail. */
int rt_probe(Runtime *rt, int rel, Chunk *rows, Err *err);
/* Can every stateful operator undo a step (so rt_step_dry is safe)? One
   host only. */
bool rt_can_undo(const Runtime *rt);
/* Can a step past its memory allowance be undone: every stateful operator
   can undo, on any number of hosts (with several, a bounded step's hosts
   agree whether to undo it: every host must bound it). */
bool rt_can_undo_step(const Runtime *rt);
/* Run the step set by rt_set_input and undo it whatever happens: 0 when it
   would succeed, SL_ERUNTIME with the error otherwise. Needs rt_can_undo.
   For finding the input records that make a step fail when no single
   record fails on its own (an aggregate's overflow). */
int rt_step_dry(Runtime *rt, Err *err);
/* Testing undo(): while on, every rt_step first runs the step, fails it
   at the end and undoes it (when every operator that took input can),
   then runs it for real; results must be as without. */
void rt_set_trial(Runtime *rt, bool on);
/* Bootstrapping (pipeline/boot.c, docs/bootstrapping.md): in the next
   rt_step node n outputs feed[lw * nnodes + n] on local worker lw when
   feed and that are not NULL (a stored stream's integral: the first
   bootstrap step), else runs over its inputs when run[n] (a source: its
   table's input of the step, rows read again for the new part; is_new[n]
   in the first bootstrap step: as in its first step), else outputs
   nothing. The arrays and chunks must outlive the step; the step after it
   is an ordinary one unless rt_set_boot is called again. Scale-out: every
   host is given the same run and is_new (pipeline/backend.h's boot), each
   its own workers' feed. */
void rt_set_boot(Runtime *rt, const bool *run, const bool *is_new, Chunk *const *feed);
int64_t rt_steps(const Runtime *rt);
/* Relation rel's watermark (circuit/watermark.h; WM_NONE = INT64_MIN when
   it has none or has seen no row) and in *late the rows dropped as late
   so far (on host 0: of every host). Between steps. */
int64_t rt_watermark(const Runtime *rt, int rel, int64_t *late);
Op *rt_op(Runtime *rt, int w, int node);
/* Checkpoints. rt_save appends the state of node's instance on worker w
   to *out (nothing for a stateless operator); call between steps.
   rt_load rebuilds it in a runtime that has run no step, from what rt_save
   gave for the same node and worker of the same program. */
int rt_save(Runtime *rt, int w, int node, BatchList *out);
int rt_load(Runtime *rt, int w, int node, Batch *const *b, int n, Err *err);
/* Did node receive input (so its state may have changed) on any of this
   host's workers since the runtime was made or rt_clear_changed: rows
   pushed into it there, or sent to it there through its exchange (from
   any worker of any host)? Checkpoints save only such nodes again. */
bool rt_node_changed(const Runtime *rt, int node);
void rt_clear_changed(Runtime *rt);
/* rt_load for a checkpoint taken with nold workers (this runtime has
   another count): lists[k] (counts[k] batches) is what rt_save gave for
   the node on old worker k; worker w keeps what it owns. */
int rt_load_split(Runtime *rt, int w, int node, Batch *const *const *lists, const int *counts,
                  int nold, Err *err);
/* Does node keep state (has save/load)? */
bool rt_stateful(Runtime *rt, int node);
/* Continue the step count of a restored runtime (before its first step). */
void rt_set_steps(Runtime *rt, int64_t steps);
/* Rows divided by zero so far (all workers): in all, or by node. */
int64_t rt_divzero(const Runtime *rt);
int64_t rt_divzero_node(const Runtime *rt, int node);

#endif

/*
 * circuit/watermark.h - watermarks (LATENESS) and what they let operators
 * do: drop late rows at ingest, forget state that can no longer change,
 * emit a window's result once ('emit_final').
 *
 * Operators that forget: aggregates (groups below a key's watermark,
 * op_agg.c forget_closed), DISTINCT and joins (wm_trace_forget from their
 * step_end), ASOF joins (op_asof.c, rows below the timestamp's watermark
 * that can no longer change their output), OPK_FINAL (releases what it
 * held).
 *
 * A table with LATENESS L on column c has a watermark: the largest c seen
 * so far minus L, never decreasing. The runtime (worker.c) drops a row of
 * a step whose c is below the watermark as it stood when the step began
 * (late: counted, never silent), and after the step's input has been read
 * on every worker computes the new one (a global max across workers and
 * hosts) before the stateful operators finish: they read every node's
 * column watermarks (wm_propagate) from OpEnv.wm. A node's column
 * watermark W promises that every change the node will output from the
 * next step on has a value >= W in that column (or NULL there).
 */
#ifndef SL_CIRCUIT_WATERMARK_H
#define SL_CIRCUIT_WATERMARK_H

#include "op.h"

#define WM_NONE INT64_MIN /* no watermark */

/* Does some table of c have a LATENESS column? */
bool wm_any(const Circuit *c);

/* Per node, per output column: an array of c->nnodes arrays (sl_malloc;
   free with wm_cols_free), all WM_NONE. */
int64_t **wm_cols_new(const Circuit *c);
void wm_cols_free(const Circuit *c, int64_t **cols);

/* Fill cols[node][col] from the tables' watermarks relwm[rel] (WM_NONE for
   a relation without one) through the nodes in order: identity and
   column + constant projections, TUMBLE/HOP window bounds, filters,
   unions (the least of the inputs), aggregates' group columns, joins (a
   key column with a watermark on both sides: the lesser), DISTINCT,
   negation, emit_final. Others: none. */
void wm_propagate(const Circuit *c, const int64_t *relwm, int64_t *const *cols);

/* The watermark of column col of node's output in this step (WM_NONE
   when none, or when the circuit has no LATENESS). */
static inline int64_t op_wm(const OpEnv *env, int node, int col)
{
    return env->wm ? env->wm[node][col] : WM_NONE;
}

/*
 * The rows of m (a morsel of table r's input) that are not late: column
 * r->wm_col below wm (NULLs are never late). Returns m itself when none is
 * late, else a new chunk in a without them. Raises *seen to the largest
 * value of the rows kept; adds the rows dropped to *late.
 */
Chunk *wm_drop_late(const Relation *r, int64_t wm, Chunk *m, Arena *a, int64_t *seen,
                    int64_t *late);

/* The new watermark of a table from the old one and the largest value its
   rows had in the step (WM_NONE: none). */
int64_t wm_advance(const Relation *r, int64_t old, int64_t seen);

/*
 * The source node of a table with LATENESS keeps the watermark and its
 * late-row count as its checkpointed state (so a restart continues with
 * both). op_linear_init then wm_source_attach; every worker's instance
 * holds the same watermark, the late counts are per instance.
 */
void wm_source_attach(Op *op);
int64_t wm_source_get(const Op *op);
int64_t wm_source_late(const Op *op);
/* After a step: the new watermark, and late rows to add. */
void wm_source_commit(Op *op, int64_t wm, int64_t late);

/* OPK_FINAL's constructor (op.h's family list). Its held rows spill
   (watermark.c, "OPK_FINAL"). */
int op_final_init(Op *op);
/* Held rows read back from emit_final's cold trace so far, by every
   operator of the process (tests and figures). */
int64_t wm_final_rows_read_back(void);

/* For an aggregate: the group column (< ngroup) with a watermark in this
   step and that watermark (groups with a smaller key there can never
   change again, so they may be forgotten); -1 when none. */
int wm_agg_bound(const Op *op, const OpEnv *env, int64_t *bound);

/* Forget the tuples of trace t whose key has, in its column col (of key
   column types types[0..col]), a value below bound (an integer kind): they
   can no longer meet a change. Between steps (after trace_step_end);
   consolidates t. Returns the tuples forgotten. */
int64_t wm_trace_forget(Trace *t, const SqlType *types, int col, int64_t bound);
/* The first j < ncols such that column cols[j] (cols NULL: j) of node's
   output has a watermark in this step and types[j] is an integer kind;
   *bound gets it. -1 when none. */
int wm_first_col(const OpEnv *env, int node, const int *cols, int ncols, const SqlType *types,
                 int64_t *bound);

#endif

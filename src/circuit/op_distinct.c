/*
 * circuit/op_distinct.c - DISTINCT (non-linear).
 *
 * Delta rule: keep the integral weight of every row; for each row changed
 * in a step, emit +1 when its weight goes from <= 0 to > 0 and -1 when it
 * goes from > 0 to <= 0. Rows are exchanged by the hash of their encoding,
 * so each worker owns a disjoint set of rows. The integral is a trace: the
 * step's changes are sorted and consolidated into a batch, their old
 * weights are read with a forward cursor (a merge, not a hash probe per
 * row: sequential memory access however large the state), and the batch
 * then joins the trace.
 *
 * Watermarks (watermark.h): at step end, the rows whose column has a value
 * below that column's watermark are forgotten (no later change can reach
 * them), so DISTINCT over an endless time-ordered stream keeps what is
 * above the watermark only.
 *
 * Checkpoint: batch 0 is a header (key "rows", weight = how many spine
 * batches follow; absent when none), then the trace's own spine batches,
 * oldest first (references, no copy).
 */
#include "op.h"

#include "../base/mem.h"
#include "../zset/batch.h"
#include "../zset/key.h"
#include "../zset/trace.h"
#include "watermark.h"

typedef struct DistinctSt {
    Trace *rows; /* integral: key = row encoding, empty value */
    /* watermarks: column gc_col's in this step (-1: none), and the bound
       the rows below which are gone (watermark.h) */
    int gc_col;
    int64_t gc_bound, gc_done;
} DistinctSt;

/* A row's record: key = the row's encoding, no value. */
static void enc_distinct(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    key_encode_row(c, r, k);
}

static int push_distinct(Op *op, OpEnv *env, int input, Chunk *c)
{
    shard_rows(op->sh, 0, c, false, enc_distinct, op);
    return 0;
}

static void add_weight(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    (void)val;
    (void)vn;
    *(int64_t *)ctx += w;
}

static int finish_distinct(Op *op, OpEnv *env)
{
    DistinctSt *s = op->st;
    const CNode *n = op->node;
    Batch *delta = shard_batch(op->sh, 0);
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, delta->n);
    TraceCursor *cur = trace_cursor_new(s->rows);
    for (int64_t i = 0; i < delta->n; i++) {
        int64_t old = 0;
        trace_cursor_for_key(cur, batch_key(delta, i), batch_klen(delta, i), add_weight, &old);
        bool was = old > 0, now = old + delta->w[i] > 0;
        if (env->probe) /* DRed (op.h): every row that lost a derivation */
            was = delta->w[i] < 0, now = false;
        if (was != now) {
            int64_t r = cout_row(&co);
            /* the delta batch lives in the trace until step_end */
            key_decode(batch_key(delta, i), n->types, n->ncol, co.c, 0, r);
            co.c->w[r] = now ? 1 : -1;
        }
    }
    trace_cursor_free(cur);
    trace_insert_take(s->rows, delta);
    op->out = co.c;
    s->gc_col = wm_first_col(env, n->in[0], NULL, n->ncol, n->types, &s->gc_bound);
    return 0;
}

static void step_end_distinct(Op *op)
{
    DistinctSt *s = op->st;
    trace_step_end(s->rows);
    /* a row below its column's watermark can never change again */
    if (s->gc_col >= 0 && s->gc_bound != s->gc_done) {
        wm_trace_forget(s->rows, op->node->types, s->gc_col, s->gc_bound);
        s->gc_done = s->gc_bound;
    }
}

/* Rollback: the integral as before the step (trace.h). */
static void undo_distinct(Op *op)
{
    DistinctSt *s = op->st;
    s->gc_col = -1; /* the step's watermark is not committed */
    trace_rollback(s->rows);
}

static void mem_distinct(Op *op, OpMem *m) { trace_mem(((DistinctSt *)op->st)->rows, m); }

static void free_distinct(Op *op)
{
    DistinctSt *s = op->st;
    trace_free(s->rows);
    sl_free(s);
}

static int save_distinct(Op *op, BatchList *out)
{
    DistinctSt *s = op->st;
    int nb = trace_nbatches(s->rows);
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"rows", 4, NULL, 0, nb);
    batchlist_add(out, bb_finish(bb));
    op_save_trace(s->rows, out);
    return 0;
}

/* Spine batch count from the header h, or -1 when it is not one. */
static int64_t header_count(const Batch *h)
{
    if (h->n == 0)
        return 0;
    if (h->n != 1 || batch_klen(h, 0) != 4 || memcmp(batch_key(h, 0), "rows", 4) ||
        batch_vlen(h, 0) != 0 || h->w[0] < 0)
        return -1;
    return h->w[0];
}

static int load_distinct(Op *op, Batch *const *b, int n, Err *err)
{
    DistinctSt *s = op->st;
    int64_t nb = n >= 1 ? header_count(b[0]) : -1;
    if (nb < 0)
        return err_set(err, SL_EIO, "distinct state (node %d) has no valid header", op->node->id);
    if (nb != n - 1)
        return err_set(err, SL_EIO,
                       "distinct state (node %d) has %d spine batches, its header counts %lld",
                       op->node->id, n - 1, (long long)nb);
    op_load_trace(s->rows, b + 1, n - 1);
    return 0;
}

/* Another worker count: every old worker's spine, the rows this one owns. */
static int load_split_distinct(Op *op, int w, int W, Batch *const *const *lists,
                               const int *counts, int nold, Err *err)
{
    int total = 0;
    for (int k = 0; k < nold; k++) {
        if (counts[k] < 1 || header_count(lists[k][0]) != counts[k] - 1)
            return err_set(err, SL_EIO, "distinct state (node %d) has no valid header",
                           op->node->id);
        total += counts[k] - 1;
    }
    Batch **all = sl_calloc((size_t)total + 1, sizeof(Batch *));
    int m = 0;
    for (int k = 0; k < nold; k++)
        for (int i = 1; i < counts[k]; i++)
            all[m++] = lists[k][i];
    Batch *b[2] = {op_header((const char *[]){"rows"}, (int64_t[]){1}, 1),
                   op_owned_sum(all, m, w, W, false)};
    sl_free(all);
    int rc = load_distinct(op, b, 2, err);
    batch_unref(b[0]);
    batch_unref(b[1]);
    return rc;
}

int op_distinct_init(Op *op)
{
    DistinctSt *s = sl_calloc(1, sizeof(*s));
    s->rows = trace_new();
    s->gc_col = -1;
    s->gc_done = INT64_MIN;
    op->st = s;
    op->push = push_distinct;
    op->finish = finish_distinct;
    op->step_end = step_end_distinct;
    op->undo = undo_distinct;
    op->free = free_distinct;
    op->mem = mem_distinct;
    op->save = save_distinct;
    op->load = load_distinct;
    op->load_split = load_split_distinct;
    return 0;
}

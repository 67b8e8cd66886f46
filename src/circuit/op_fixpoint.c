/*
 * circuit/op_fixpoint.c - a recursive relation (WITH RECURSIVE, DECLARE
 * RECURSIVE VIEW): the least fixed point R = Q(R, X) of its definition Q
 * over the relation itself (R) and the relations it reads (X), maintained
 * across steps (non-linear).
 *
 * The definition is a circuit of its own (CNode.sub, planned by
 * sql/plan_rec.c): its first nodes are ports, node 0 the recursive
 * relation's changes, node j + 1 the changes of this node's input j; node
 * CNode.sub_outs[0] is Q's output. Every other node of it is incremental
 * like any node of the program, so feeding it a change of R gives the
 * change of Q(R, X): semi-naive evaluation for free (DBSP's nested
 * circuit, with the nested clock run by this operator).
 *
 * Mutually recursive views (CNode.nrec = K > 1) are K relations R_i =
 * Q_i(R_0..R_{K-1}, X) in one inner circuit: ports 0..K-1 their changes,
 * K + j input j, sub_outs[i] Q_i. Everything below holds per relation (a
 * trace R_i and pend_i = Q_i(R) - R_i each; an iteration feeds every dR_i
 * = pend_i at once and ends when all are empty); the output is every
 * relation's changes, tagged (column 0 = i, then R_0's columns, R_1's, ...;
 * circuit.h), and each view is a map of it.
 *
 * Per step, on worker 0 (every input row is routed there: the operator is
 * "global"; the other workers emit nothing):
 *   1. the step's input changes dX enter their ports together with dR1:
 *      nothing when every change is an insert and Q is monotone (only
 *      MAP, UNION, JOIN, DISTINCT, CONST: then the old fixed point lies
 *      below the new one, and iterating from it reaches the least one);
 *      with a deletion and Q monotone, -OD (DRed, below); otherwise -R, so
 *      that the iteration starts again from the empty relation over the
 *      integrated inputs (recomputation: a whole fixed point);
 *   2. with pend = Q(R) - R (the inner output's integral minus R), each
 *      further iteration feeds dR = pend until pend is empty: R is then
 *      Q(R). The step's output is the sum of the dR fed.
 * Whatever R1 = R - dR1 is, as long as it lies below the new least fixed
 * point the iteration of 2. reaches it (Q^k(empty) <= Q^k(R1) <= lfp).
 *
 * DRed (delete and re-derive, Gupta, Mumick and Subrahmanian 1993): OD is
 * every row of R with a derivation (from the old R and X) that uses a
 * deleted input row or a row of OD; R - OD then lies below the new fixed
 * point. OD is found by probe steps of the inner circuit (OpEnv.probe):
 * the deleted rows of X, then each round's new rows of OD, enter as
 * negative changes; every operator works as usual except DISTINCT, which
 * passes every row whose change is negative (it lost a derivation) instead
 * of those whose weight reaches 0; the output's negative rows that are in
 * R and not yet in OD are the next round's. Every inner operator then
 * undoes the probe (op.h undo: trace_rollback), so the state stays that
 * of the old R and X. Only deletions enter a probe, and all of them are
 * rows of the operators' state, so no positive term can hide a negative
 * one. A probe costs what its rows touch; an inner operator with state
 * but no undo (none of the monotone kinds) falls back to recomputation, as
 * does SLUICE_FIXPOINT_NO_DRED=1 (bench/recursive_bench.py's baseline).
 *
 * UNION in Q makes the iteration a set one (a DISTINCT node in Q), UNION
 * ALL a bag one, which need not end (a cycle): after FIX_MAX_ITER
 * iterations in one step, or when the memory budget of the step says so,
 * or when a row's multiplicity passes FIX_MAX_WEIGHT, the step fails with a
 * message naming the relation. It is then undone like any failing step
 * (undo(): the step's changes fed once more, negated), so the pipeline
 * rejects the input rows that make it fail (pipeline/reject.c) and goes
 * on. An inner step that fails is withdrawn by its operators' own undo();
 * when one of them has none (top-k, window in the definition's part over
 * the inputs) this operator has none either for that step, which then
 * stops the pipeline. A CONST in Q emits in the first inner step only (the
 * inner clock), so its rows stay in Q's integral across steps.
 *
 * R is a trace (the integral of the changes fed), pend a consolidated
 * batch: each iteration sorts its changes once, no per-row hash probes.
 *
 * Checkpoint: a header (key "isteps": inner steps run + 1; "rbatches":
 * R's spine batches + 1, "rb%d" those of R_i, i > 0; per inner node with
 * state, "node%06d": its batch count + 1), then per relation its spine and
 * its pend, and the inner nodes' own batches in node order. All of it
 * lives on worker 0.
 */
#include <stdio.h>
#include <stdlib.h>

#include "op.h"

#include "../base/budget.h"
#include "../base/mem.h"
#include "../zset/trace.h"
#include "../zset/key.h"

/* Iterations of one step after which the recursion is taken not to end. */
#define FIX_MAX_ITER 10000

/* A multiplicity past this is taken for a recursion that does not end
   (long before BIGINT overflows in a join's product of weights). */
#define FIX_MAX_WEIGHT ((int64_t)1 << 53)

typedef struct FixSt {
    /* the inner circuit, on worker 0 only (ops NULL elsewhere) */
    const Circuit *sub;
    int nrec;        /* recursive relations R_i (ports 0..nrec-1) */
    int nports;      /* nrec + inputs */
    const int *sub_outs; /* Q_i's output node, per relation */
    Op **ops;        /* per inner node; NULL for ports */
    Shard **sh;
    Chunk **out;     /* per inner node, this inner step's output */
    bool *pushed;
    Arena *arena;    /* inner step arena (reset per inner step) */
    EvalCtx ev;
    int64_t isteps;  /* inner steps run */
    bool monotone;   /* Q has only monotone nodes */
    bool dred;       /* monotone, and every inner operator with state can undo */
    Trace **r;       /* R_i (key = row encoding), per relation */
    Batch **pend;    /* Q_i(R) - R_i, consolidated, per relation */
    BatchList *acc;  /* the changes of R_i fed in this step, per relation */
    Batch **dx;      /* this step's input changes, per input (until step_end) */
    bool x_fed;      /* dx went into the inner circuit */
    bool cant_undo;  /* an inner step failed in an operator that cannot undo */
} FixSt;

/* b with its weights negated (a new reference). */
static Batch *negated(const Batch *b)
{
    BatchBuilder *bb = bb_new();
    for (int64_t i = 0; i < b->n; i++)
        bb_add(bb, batch_key(b, i), batch_klen(b, i), NULL, 0, -b->w[i]);
    return bb_finish(bb);
}

/* The sum of batches b[0..n) (negated when neg), consolidated. */
static Batch *sum_of(Batch *const *b, int n, bool neg)
{
    BatchBuilder *bb = bb_new();
    for (int k = 0; k < n; k++)
        for (int64_t i = 0; i < b[k]->n; i++)
            bb_add(bb, batch_key(b[k], i), batch_klen(b[k], i), NULL, 0,
                   neg ? -b[k]->w[i] : b[k]->w[i]);
    return bb_finish(bb);
}

/* pend' = pend - d + o (d NULL: none; d == pend: o alone). */
static Batch *next_pend(const Batch *pend, const Batch *d, const Chunk *o)
{
    BatchBuilder *bb = bb_new();
    if (d != pend) {
        for (int64_t i = 0; i < pend->n; i++)
            bb_add(bb, batch_key(pend, i), batch_klen(pend, i), NULL, 0, pend->w[i]);
        for (int64_t i = 0; d && i < d->n; i++)
            bb_add(bb, batch_key(d, i), batch_klen(d, i), NULL, 0, -d->w[i]);
    }
    Buf kb = BUF_INIT;
    for (int64_t r = 0; r < o->n; r++) {
        buf_reset(&kb);
        key_encode_row(o, r, &kb);
        bb_add(bb, kb.p, kb.n, NULL, 0, o->w[r]);
    }
    buf_free(&kb);
    return bb_finish(bb);
}

/* ---- the inner circuit ---- */

static void inner_new(Op *op, FixSt *s)
{
    const Circuit *sub = op->node->sub;
    s->sub = sub;
    s->nports = op->node->nin + s->nrec;
    s->ops = sl_calloc((size_t)sub->nnodes, sizeof(Op *));
    s->sh = sl_calloc((size_t)sub->nnodes, sizeof(Shard *));
    s->out = sl_calloc((size_t)sub->nnodes, sizeof(Chunk *));
    s->pushed = sl_calloc((size_t)sub->nnodes, sizeof(bool));
    s->arena = arena_new(1 << 16);
    s->ev.arena = s->arena;
    for (int i = s->nports; i < sub->nnodes; i++) {
        const CNode *n = sub->nodes[i];
        int nch = op_shard_channels(n);
        if (nch) { /* one worker: a channel's outbox is its inbox */
            s->sh[i] = shard_new(1, 0, nch);
            for (int ch = 0; ch < nch; ch++) {
                Buf *b = sl_calloc(1, sizeof(Buf));
                s->sh[i]->out[ch] = s->sh[i]->in[ch] = b;
            }
        }
        s->ops[i] = op_new(sub, n, s->sh[i]);
    }
}

static void inner_free(FixSt *s)
{
    if (!s->ops)
        return;
    for (int i = 0; i < s->sub->nnodes; i++) {
        op_free(s->ops[i]);
        if (s->sh[i]) {
            for (int ch = 0; ch < s->sh[i]->nch; ch++) {
                buf_free(s->sh[i]->out[ch]);
                sl_free(s->sh[i]->out[ch]);
            }
            shard_free(s->sh[i]);
        }
    }
    sl_free(s->ops);
    sl_free(s->sh);
    sl_free(s->out);
    sl_free(s->pushed);
    arena_free(s->arena);
}

/* The rows of batch b (weights negated when neg) for port p. */
static Chunk *batch_chunk(FixSt *s, int p, const Batch *b, bool neg)
{
    const CNode *pn = s->sub->nodes[p];
    Chunk *c = chunk_new(s->arena, pn->ncol, pn->types, b ? b->n : 0);
    for (int64_t i = 0; b && i < b->n; i++) {
        key_decode(batch_key(b, i), pn->types, pn->ncol, c, 0, i);
        c->w[i] = neg ? -b->w[i] : b->w[i];
    }
    c->n = b ? b->n : 0;
    return c;
}

/* One inner step over the port chunks s->out[0..nports) (in s->arena):
   0 with s->out[sub_outs[i]] the changes of Q_i, or the error (the inner
   operators that took input are undone; s->cant_undo when one of them
   cannot). */
static int inner_step(FixSt *s, Err *err, bool probe)
{
    const Circuit *sub = s->sub;
    OpEnv env = {0, 1, s->isteps, s->arena, &s->ev, NULL, probe};
    s->ev.err = err;
    int rc = 0;
    for (int i = s->nports; i < sub->nnodes; i++) {
        s->pushed[i] = false;
        if (s->sh[i])
            shard_reset(s->sh[i]);
        if (s->ops[i]->begin)
            s->ops[i]->begin(s->ops[i], &env);
    }
    for (int i = s->nports; i < sub->nnodes && !rc; i++) {
        Op *op = s->ops[i];
        const CNode *n = sub->nodes[i];
        op->out = NULL;
        if (!op->push) {
            Chunk *few[8], **ins = few;
            if (n->nin > 8)
                ins = arena_alloc(s->arena, sizeof(Chunk *) * (size_t)n->nin);
            for (int j = 0; j < n->nin; j++)
                ins[j] = s->out[n->in[j]];
            rc = op->eval(op, &env, ins);
        } else {
            for (int j = 0; j < n->nin && !rc; j++) {
                Chunk *c = s->out[n->in[j]];
                if (c->n) {
                    s->pushed[i] = true;
                    rc = op->push(op, &env, j, c);
                }
            }
            if (!rc && op->flush)
                op->flush(op, &env);
            if (!rc && op->reroute)
                op->reroute(op, &env);
            if (!rc)
                rc = op->finish(op, &env);
        }
        if (!rc && !op->out)
            rc = err_set(err, SL_ERUNTIME, "operator %d of a recursive definition failed", n->id);
        if (rc && !err->code)
            err_set(err, SL_ERUNTIME, "operator %d of a recursive definition failed", n->id);
        if (rc)
            rc = err->code ? err->code : SL_ERUNTIME;
        s->out[i] = op->out ? op->out : op_empty(s->arena, n);
    }
    if (rc || probe) { /* a probe leaves no trace (s->dred: every one can undo) */
        for (int i = sub->nnodes; i-- > s->nports;)
            if (s->pushed[i]) {
                if (s->ops[i]->undo)
                    s->ops[i]->undo(s->ops[i]);
                else if (s->ops[i]->save)
                    s->cant_undo = true;
            }
    }
    for (int i = s->nports; i < sub->nnodes; i++)
        if (s->ops[i]->step_end)
            s->ops[i]->step_end(s->ops[i]);
    if (!rc && !probe)
        s->isteps++;
    return rc;
}

/* ---- the operator ---- */

static void enc_row(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    key_encode_row(c, r, k);
}

static int push_fix(Op *op, OpEnv *env, int input, Chunk *c)
{
    shard_rows(op->sh, input, c, true, enc_row, op);
    return 0;
}

static void begin_fix(Op *op, OpEnv *env)
{
    FixSt *s = op->st;
    for (int i = 0; i < s->nrec; i++)
        batchlist_free(&s->acc[i]);
    s->x_fed = s->cant_undo = false;
}

static int too_many(Op *op, Err *err, const char *what)
{
    return err_set(err, SL_ERUNTIME,
                   "recursive relation %s: %s in one step (a recursion under UNION ALL that "
                   "does not end?)",
                   op->node->label ? op->node->label : "", what);
}

/* Iterate to the fixed point (header): first[i] the changes fed to R_i in
   the first iteration (first NULL: pend, as in every later one). */
static int iterate(Op *op, OpEnv *env, Batch *const *first)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    Err *err = env->ev->err;
    int K = s->nrec;
    Batch **d = sl_calloc((size_t)K, sizeof(Batch *));
    int rc = 0;
    for (int64_t it = 0;; it++) {
        if (it >= FIX_MAX_ITER) {
            char b[64];
            snprintf(b, sizeof(b), "no fixed point after %d iterations", FIX_MAX_ITER);
            rc = too_many(op, err, b);
            break;
        }
        if (budget_stop()) {
            rc = budget_error(err);
            break;
        }
        arena_reset(s->arena);
        for (int i = 0; i < K; i++) {
            if (it == 0 && first) {
                d[i] = first[i];
                batch_ref(d[i]);
            } else {
                d[i] = s->pend[i];
                batch_ref(d[i]);
            }
            s->out[i] = batch_chunk(s, i, d[i], false);
        }
        for (int j = 0; j < n->nin; j++)
            s->out[K + j] = batch_chunk(s, K + j, it == 0 ? s->dx[j] : NULL, false);
        int64_t dz = s->ev.ndivzero;
        rc = inner_step(s, err, false);
        env->ev->ndivzero += s->ev.ndivzero - dz;
        if (rc) {
            for (int i = 0; i < K; i++)
                batch_unref(d[i]);
            if (s->cant_undo)
                op->undo = NULL;
            break;
        }
        if (it == 0)
            s->x_fed = true;
        bool more = false, heavy = false;
        for (int i = 0; i < K; i++) {
            Batch *np = next_pend(s->pend[i], d[i], s->out[s->sub_outs[i]]);
            batch_unref(s->pend[i]);
            s->pend[i] = np;
            batch_ref(d[i]);
            trace_insert_take(s->r[i], d[i]);
            trace_step_end(s->r[i]);
            batchlist_add(&s->acc[i], d[i]); /* takes the first reference */
            for (int64_t r = 0; r < np->n; r++)
                heavy = heavy || np->w[r] > FIX_MAX_WEIGHT || np->w[r] < -FIX_MAX_WEIGHT;
            more = more || np->n;
        }
        if (heavy) {
            rc = too_many(op, err, "a row's multiplicity passes 2^53");
            break;
        }
        if (!more)
            break;
    }
    sl_free(d);
    return rc;
}

static void add_weight(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    (void)val;
    (void)vn;
    *(int64_t *)ctx += w;
}

/* DRed's first phase (header): od[i] = -(the rows of R_i with a
   derivation that uses a deleted input row or an over-deleted row),
   with their weights in R_i. */
static int over_delete(Op *op, OpEnv *env, Batch **od)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    Err *err = env->ev->err;
    int K = s->nrec, rc = 0;
    Trace **odt = sl_calloc((size_t)K, sizeof(Trace *));
    Batch **dk = sl_calloc((size_t)K, sizeof(Batch *));
    Batch **xdel = sl_calloc((size_t)n->nin + 1, sizeof(Batch *));
    for (int i = 0; i < K; i++)
        odt[i] = trace_new();
    for (int j = 0; j < n->nin; j++) { /* the deleted input rows */
        BatchBuilder *bb = bb_new();
        for (int64_t r = 0; r < s->dx[j]->n; r++)
            if (s->dx[j]->w[r] < 0)
                bb_add(bb, batch_key(s->dx[j], r), batch_klen(s->dx[j], r), NULL, 0,
                       s->dx[j]->w[r]);
        xdel[j] = bb_finish(bb);
    }
    Buf kb = BUF_INIT;
    for (int64_t it = 0;; it++) {
        if (it >= FIX_MAX_ITER) {
            char b[80];
            snprintf(b, sizeof(b), "no over-deletion fixed point after %d iterations",
                     FIX_MAX_ITER);
            rc = too_many(op, err, b);
            break;
        }
        if (budget_stop()) {
            rc = budget_error(err);
            break;
        }
        arena_reset(s->arena);
        for (int i = 0; i < K; i++)
            s->out[i] = batch_chunk(s, i, it ? dk[i] : NULL, false);
        for (int j = 0; j < n->nin; j++)
            s->out[K + j] = batch_chunk(s, K + j, it ? NULL : xdel[j], false);
        int64_t dz = s->ev.ndivzero;
        rc = inner_step(s, err, true);
        env->ev->ndivzero += s->ev.ndivzero - dz;
        if (rc)
            break;
        bool more = false;
        for (int i = 0; i < K; i++) { /* the rows of R_i newly found */
            const Chunk *o = s->out[s->sub_outs[i]];
            BatchBuilder *bb = bb_new();
            for (int64_t r = 0; r < o->n; r++)
                if (o->w[r] < 0) {
                    buf_reset(&kb);
                    key_encode_row(o, r, &kb);
                    bb_add(bb, kb.p, kb.n, NULL, 0, -1);
                }
            Batch *cand = bb_finish(bb);
            TraceCursor *cr = trace_cursor_new(s->r[i]), *co = trace_cursor_new(odt[i]);
            BatchBuilder *nb = bb_new();
            for (int64_t k = 0; k < cand->n; k++) {
                int64_t rw = 0, ow = 0;
                trace_cursor_for_key(cr, batch_key(cand, k), batch_klen(cand, k), add_weight, &rw);
                trace_cursor_for_key(co, batch_key(cand, k), batch_klen(cand, k), add_weight, &ow);
                if (rw > 0 && !ow)
                    bb_add(nb, batch_key(cand, k), batch_klen(cand, k), NULL, 0, -rw);
            }
            trace_cursor_free(cr);
            trace_cursor_free(co);
            batch_unref(cand);
            if (dk[i])
                batch_unref(dk[i]);
            dk[i] = bb_finish(nb);
            if (dk[i]->n) {
                more = true;
                batch_ref(dk[i]);
                trace_insert_take(odt[i], dk[i]);
                trace_step_end(odt[i]);
            }
        }
        if (!more)
            break;
    }
    buf_free(&kb);
    for (int i = 0; i < K; i++) {
        od[i] = rc ? NULL : trace_consolidate(odt[i]);
        trace_free(odt[i]);
        if (dk[i])
            batch_unref(dk[i]);
    }
    for (int j = 0; j < n->nin; j++)
        batch_unref(xdel[j]);
    sl_free(xdel);
    sl_free(dk);
    sl_free(odt);
    return rc;
}

/* The step's output: the changes fed to R (nrec 1), or to every R_i
   tagged (circuit.h). */
static Chunk *output(Op *op, OpEnv *env)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    int K = s->nrec;
    Batch **acc = sl_calloc((size_t)K, sizeof(Batch *));
    int64_t rows = 0;
    for (int i = 0; i < K; i++) {
        acc[i] = sum_of(s->acc[i].b, s->acc[i].n, false);
        rows += acc[i]->n;
    }
    Chunk *c = chunk_new(env->arena, n->ncol, n->types, rows);
    int64_t r = 0;
    for (int i = 0, off = K > 1; i < K; i++) {
        const CNode *pn = s->sub->nodes[i];
        Batch *a = acc[i];
        uint8_t *copy = arena_alloc(env->arena, batch_off(a, a->n) + 1);
        memcpy(copy, a->data, batch_off(a, a->n));
        for (int64_t k = 0; k < a->n; k++, r++) {
            key_decode(copy + batch_off(a, k), pn->types, pn->ncol, c, off, r);
            c->w[r] = a->w[k];
            if (K == 1)
                continue;
            c->col[0].i[r] = i;
            for (int j = 1; j < n->ncol; j++) {
                if (j >= off && j < off + pn->ncol)
                    continue;
                if (c->col[j].nul)
                    vec_set_null(&c->col[j], r);
                else
                    vec_zero(&c->col[j], r);
            }
        }
        off += pn->ncol;
        batch_unref(a);
    }
    c->n = rows;
    sl_free(acc);
    return c;
}

static int finish_fix(Op *op, OpEnv *env)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    op->out = op_empty(env->arena, n);
    if (!s->ops) /* not worker 0: everything went there */
        return 0;
    bool any = s->isteps == 0, neg = false;
    for (int i = 0; i < s->nrec; i++)
        any = any || s->pend[i]->n > 0;
    for (int j = 0; j < n->nin; j++) {
        s->dx[j] = shard_batch(op->sh, j);
        any = any || s->dx[j]->n;
        for (int64_t i = 0; i < s->dx[j]->n && !neg; i++)
            neg = s->dx[j]->w[i] < 0;
    }
    if (!any)
        return 0;
    Batch **first = NULL;
    int rc = 0;
    if (!s->monotone || neg) {
        first = sl_calloc((size_t)s->nrec, sizeof(Batch *));
        if (s->monotone && s->dred && s->isteps > 0 && !getenv("SLUICE_FIXPOINT_NO_DRED"))
            rc = over_delete(op, env, first);
        else
            for (int i = 0; i < s->nrec; i++) { /* from the empty relation */
                Batch *all = trace_consolidate(s->r[i]);
                first[i] = negated(all);
                batch_unref(all);
            }
    }
    if (!rc)
        rc = iterate(op, env, first);
    for (int i = 0; first && i < s->nrec; i++)
        if (first[i])
            batch_unref(first[i]);
    sl_free(first);
    if (rc)
        return rc;
    op->out = output(op, env);
    return 0;
}

/* Rollback: the step's changes (its input and the R_i it fed) once more,
   negated, bring every inner operator back; then R_i and pend. */
static void undo_fix(Op *op)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    int K = s->nrec;
    bool fed = false;
    for (int i = 0; s->ops && i < K; i++)
        fed = fed || s->acc[i].n;
    if (!s->ops || (!s->x_fed && !fed))
        return;
    Err e = {0};
    arena_reset(s->arena);
    Batch **d = sl_calloc((size_t)K, sizeof(Batch *));
    for (int i = 0; i < K; i++) {
        d[i] = sum_of(s->acc[i].b, s->acc[i].n, true);
        s->out[i] = batch_chunk(s, i, d[i], false);
    }
    for (int j = 0; j < n->nin; j++)
        s->out[K + j] = batch_chunk(s, K + j, s->x_fed ? s->dx[j] : NULL, true);
    if (inner_step(s, &e, false)) { /* the same rows went through before */
        for (int i = 0; i < K; i++)
            batch_unref(d[i]);
        sl_free(d);
        return;
    }
    for (int i = 0; i < K; i++) {
        Batch *np = next_pend(s->pend[i], d[i], s->out[s->sub_outs[i]]);
        batch_unref(s->pend[i]);
        s->pend[i] = np;
        trace_insert_take(s->r[i], d[i]);
        trace_step_end(s->r[i]);
        batchlist_free(&s->acc[i]);
    }
    sl_free(d);
    s->x_fed = false;
}

static void step_end_fix(Op *op)
{
    FixSt *s = op->st;
    for (int j = 0; j < op->node->nin; j++) {
        if (s->dx[j])
            batch_unref(s->dx[j]);
        s->dx[j] = NULL;
    }
    for (int i = 0; i < s->nrec; i++)
        batchlist_free(&s->acc[i]);
    op->undo = undo_fix;
}

static void mem_fix(Op *op, OpMem *m)
{
    FixSt *s = op->st;
    for (int i = 0; i < s->nrec; i++) {
        trace_mem(s->r[i], m);
        m->bytes += batch_bytes(s->pend[i]);
    }
    for (int i = 0; s->ops && i < s->sub->nnodes; i++)
        if (s->ops[i])
            op_mem(s->ops[i], m);
}

static void free_fix(Op *op)
{
    FixSt *s = op->st;
    inner_free(s);
    for (int j = 0; j < op->node->nin; j++)
        if (s->dx[j])
            batch_unref(s->dx[j]);
    sl_free(s->dx);
    for (int i = 0; i < s->nrec; i++) {
        trace_free(s->r[i]);
        batch_unref(s->pend[i]);
        batchlist_free(&s->acc[i]);
    }
    sl_free(s->r);
    sl_free(s->pend);
    sl_free(s->acc);
    sl_free(s);
}

/* ---- checkpoints ---- */

static int save_fix(Op *op, BatchList *out)
{
    FixSt *s = op->st;
    if (!s->ops) {
        batchlist_add(out, op_header((const char *[]){"isteps"}, (int64_t[]){1}, 1));
        return 0;
    }
    int nn = s->sub->nnodes, K = s->nrec;
    const char **names = sl_calloc((size_t)(nn + K) + 2, sizeof(char *));
    char *nb = sl_calloc((size_t)(nn + K) + 1, 16);
    int64_t *counts = sl_calloc((size_t)(nn + K) + 2, sizeof(int64_t));
    BatchList *inner = sl_calloc((size_t)nn, sizeof(BatchList));
    int nh = 0;
    names[nh] = "isteps";
    counts[nh++] = s->isteps + 1;
    for (int i = 0; i < K; i++) {
        char *x = nb + 16 * (nn + i);
        if (i)
            snprintf(x, 16, "rb%d", i);
        else
            snprintf(x, 16, "rbatches");
        names[nh] = x;
        counts[nh++] = trace_nbatches(s->r[i]) + 1;
    }
    int rc = 0;
    for (int i = s->nports; i < nn && !rc; i++)
        if (s->ops[i]->save) {
            rc = s->ops[i]->save(s->ops[i], &inner[i]);
            snprintf(nb + 16 * i, 16, "node%06d", i);
            names[nh] = nb + 16 * i;
            counts[nh++] = inner[i].n + 1;
        }
    if (!rc) {
        batchlist_add(out, op_header(names, counts, nh));
        for (int i = 0; i < K; i++) {
            op_save_trace(s->r[i], out);
            batch_ref(s->pend[i]);
            batchlist_add(out, s->pend[i]);
        }
        for (int i = 0; i < nn; i++)
            for (int k = 0; k < inner[i].n; k++) {
                batch_ref(inner[i].b[k]);
                batchlist_add(out, inner[i].b[k]);
            }
    }
    for (int i = 0; i < nn; i++)
        batchlist_free(&inner[i]);
    sl_free(inner);
    sl_free(counts);
    sl_free(nb);
    sl_free(names);
    return rc;
}

/* The weight of key name in header h, or -1. */
static int64_t header_get(const Batch *h, const char *name)
{
    size_t n = strlen(name);
    for (int64_t i = 0; i < h->n; i++)
        if (batch_klen(h, i) == n && !memcmp(batch_key(h, i), name, n))
            return h->w[i];
    return -1;
}

static int load_fix(Op *op, Batch *const *b, int n, Err *err)
{
    FixSt *s = op->st;
    int id = op->node->id;
    if (n < 1 || header_get(b[0], "isteps") < 1)
        return err_set(err, SL_EIO, "recursive state (node %d) has no valid header", id);
    if (!s->ops)
        return 0; /* not worker 0: nothing */
    s->isteps = header_get(b[0], "isteps") - 1;
    int at = 1;
    for (int i = 0; i < s->nrec; i++) {
        char name[16];
        if (i)
            snprintf(name, sizeof(name), "rb%d", i);
        else
            snprintf(name, sizeof(name), "rbatches");
        int64_t nr = header_get(b[0], name) - 1;
        if (nr < 0 || at + nr + 1 > n)
            return err_set(err, SL_EIO, "recursive state (node %d) lacks relation %d", id, i);
        op_load_trace(s->r[i], b + at, (int)nr);
        batch_unref(s->pend[i]);
        s->pend[i] = b[at + nr];
        batch_ref(s->pend[i]);
        at += (int)nr + 1;
    }
    for (int i = s->nports; i < s->sub->nnodes; i++) {
        if (!s->ops[i]->save)
            continue;
        char name[16];
        snprintf(name, sizeof(name), "node%06d", i);
        int64_t cnt = header_get(b[0], name) - 1;
        if (cnt < 0 || at + cnt > n)
            return err_set(err, SL_EIO, "recursive state (node %d) lacks inner node %d", id, i);
        int rc = s->ops[i]->load(s->ops[i], b + at, (int)cnt, err);
        if (rc)
            return rc;
        at += (int)cnt;
    }
    if (at != n)
        return err_set(err, SL_EIO, "recursive state (node %d) has %d batches too many", id,
                       n - at);
    return 0;
}

/* Another worker count: all of it lives on worker 0, old and new. */
static int load_split_fix(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                          int nold, Err *err)
{
    if (nold < 1)
        return err_set(err, SL_EIO, "recursive state (node %d): no worker saved it",
                       op->node->id);
    return load_fix(op, lists[0], counts[0], err);
}

int op_fixpoint_init(Op *op)
{
    const CNode *n = op->node;
    FixSt *s = sl_calloc(1, sizeof(*s));
    s->dx = sl_calloc((size_t)n->nin + 1, sizeof(Batch *));
    s->nrec = n->nrec;
    s->sub_outs = n->sub_outs;
    s->r = sl_calloc((size_t)s->nrec, sizeof(Trace *));
    s->pend = sl_calloc((size_t)s->nrec, sizeof(Batch *));
    s->acc = sl_calloc((size_t)s->nrec, sizeof(BatchList));
    for (int i = 0; i < s->nrec; i++) {
        s->r[i] = trace_new();
        s->pend[i] = batch_empty();
    }
    s->monotone = true;
    for (int i = n->nin + s->nrec; i < n->sub->nnodes; i++) {
        OpKind k = n->sub->nodes[i]->k;
        s->monotone = s->monotone && (k == OPK_MAP || k == OPK_UNION || k == OPK_JOIN ||
                                      k == OPK_DISTINCT || k == OPK_CONST);
    }
    if (op->sh && op->sh->me == 0)
        inner_new(op, s);
    s->dred = s->monotone;
    for (int i = s->nports; s->ops && i < n->sub->nnodes; i++)
        s->dred = s->dred && (!s->ops[i]->save || s->ops[i]->undo);
    op->st = s;
    op->push = push_fix;
    op->begin = begin_fix;
    op->finish = finish_fix;
    op->undo = undo_fix;
    op->step_end = step_end_fix;
    op->free = free_fix;
    op->mem = mem_fix;
    op->save = save_fix;
    op->load = load_fix;
    op->load_split = load_split_fix;
    return 0;
}

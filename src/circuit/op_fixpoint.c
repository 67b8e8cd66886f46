/*
 * circuit/op_fixpoint.c - a recursive relation (WITH RECURSIVE, DECLARE
 * RECURSIVE VIEW): the least fixed point R = Q(R, X) of its definition Q
 * over the relation itself (R) and the relations it reads (X), maintained
 * across steps (non-linear).
 *
 * The definition is a circuit of its own (CNode.sub, planned by
 * sql/plan_rec.c): its first nodes are ports, node 0 the recursive
 * relation's changes, node j + 1 the changes of this node's input j; node
 * CNode.sub_out is Q's output. Every other node of it is incremental like
 * any node of the program, so feeding it a change of R gives the change
 * of Q(R, X): semi-naive evaluation for free (DBSP's nested circuit, with
 * the nested clock run by this operator).
 *
 * Per step, on worker 0 (every input row is routed there: the operator is
 * "global"; the other workers emit nothing):
 *   1. the step's input changes dX enter their ports together with dR1:
 *      nothing when every change is an insert and Q is monotone (only
 *      MAP, UNION, JOIN, DISTINCT, CONST: then the old fixed point lies
 *      below the new one, and iterating from it reaches the least one);
 *      otherwise -R, so that the iteration starts again from the empty
 *      relation over the integrated inputs (recomputation; deletions cost a
 *      whole fixed point);
 *   2. with pend = Q(R) - R (the inner output's integral minus R), each
 *      further iteration feeds dR = pend until pend is empty: R is then
 *      Q(R). The step's output is the sum of the dR fed.
 * UNION in Q makes the iteration a set one (a DISTINCT node in Q), UNION
 * ALL a bag one, which need not end (a cycle): after FIX_MAX_ITER
 * iterations in one step, or when the memory budget of the step says so,
 * or when a row's multiplicity passes BIGINT, the step fails with a
 * message naming the relation. It is then undone like any failing step
 * (undo(): the step's changes fed once more, negated), so the pipeline
 * rejects the input rows that make it fail (pipeline/reject.c) and goes
 * on.
 *
 * Checkpoint: a header (key "isteps": inner steps run + 1; per inner node
 * with state, key "node%06d": its batch count + 1), then R, pend, and the
 * inner nodes' own batches in node order. All of it lives on worker 0.
 */
#include <stdio.h>

#include "op.h"

#include "../base/budget.h"
#include "../base/mem.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

/* Iterations of one step after which the recursion is taken not to end. */
#define FIX_MAX_ITER 10000

/* A change to R, its row encoding copied into the inner arena. */
typedef struct Delta {
    const uint8_t *k;
    size_t kn;
    int64_t w;
} Delta;

typedef struct FixSt {
    /* the inner circuit, on worker 0 only (ops NULL elsewhere) */
    const Circuit *sub;
    int nports;
    int sub_out;     /* Q's output node */
    Op **ops;        /* per inner node; NULL for ports */
    Shard **sh;
    Chunk **out;     /* per inner node, this inner step's output */
    bool *pushed;
    Arena *arena;    /* inner step arena (reset per inner step) */
    EvalCtx ev;
    int64_t isteps;  /* inner steps run */
    bool monotone;   /* Q has only monotone nodes */
    HMap *r;         /* R: row encoding -> weight */
    HMap *pend;      /* Q(R) - R */
    HMap *acc;       /* this step's change of R */
    Batch **dx;      /* this step's input changes, per input (until step_end) */
    bool x_fed;      /* dx went into the inner circuit */
    bool cant_undo;  /* an inner step failed in an operator that cannot undo */
    int64_t iters;   /* iterations of the last step (statistics) */
} FixSt;

static int64_t *wslot(HMap *m, const uint8_t *k, size_t kn)
{
    bool created;
    return hmap_upsert(m, k, kn, sl_hash(k, kn), &created);
}

/* m[k] += w, the entry gone at 0; false when the weight overflows. */
static bool wadd(HMap *m, const uint8_t *k, size_t kn, int64_t w)
{
    int64_t *p = wslot(m, k, kn);
    if (__builtin_add_overflow(*p, w, p))
        return false;
    if (*p == 0)
        hmap_delete(m, k, kn, sl_hash(k, kn));
    return true;
}

static void clear_map(HMap *m)
{
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(m, &it, &k, &kn, &pl))
        hmap_delete(m, k, kn, sl_hash(k, kn));
}

/* ---- the inner circuit ---- */

static void inner_new(Op *op, FixSt *s)
{
    const Circuit *sub = op->node->sub;
    s->sub = sub;
    s->nports = op->node->nin + 1;
    s->sub_out = op->node->sub_out;
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

/* A chunk of the changes d[0..n) with the types of port p. */
static Chunk *delta_chunk(FixSt *s, int p, const Delta *d, int64_t n)
{
    const CNode *pn = s->sub->nodes[p];
    Chunk *c = chunk_new(s->arena, pn->ncol, pn->types, n);
    for (int64_t i = 0; i < n; i++) {
        key_decode(d[i].k, pn->types, pn->ncol, c, 0, i);
        c->w[i] = d[i].w;
    }
    c->n = n;
    return c;
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
   0 with *o the output's changes, or the error (the inner operators that
   took input are undone; s->cant_undo when one of them cannot). */
static int inner_step(FixSt *s, Err *err, Chunk **o)
{
    const Circuit *sub = s->sub;
    OpEnv env = {0, 1, s->isteps, s->arena, &s->ev, NULL};
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
    if (rc) {
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
    if (!rc) {
        s->isteps++;
        *o = s->out[s->sub_out];
    }
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
    clear_map(s->acc);
    s->x_fed = s->cant_undo = false;
}

/* The entries of m (weights negated when neg) as changes in arena a. */
static Delta *map_deltas(Arena *a, HMap *m, bool neg, int64_t *n)
{
    Delta *d = arena_alloc(a, sizeof(Delta) * (size_t)(hmap_count(m) + 1));
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    int64_t i = 0;
    while (hmap_next(m, &it, &k, &kn, &pl)) {
        uint8_t *copy = arena_alloc(a, kn + 1);
        memcpy(copy, k, kn);
        d[i++] = (Delta){copy, kn, neg ? -*(int64_t *)pl : *(int64_t *)pl};
    }
    *n = i;
    return d;
}

/* pend += the rows of o; false when a weight overflows. */
static bool fold(FixSt *s, const Chunk *o)
{
    Buf kb = BUF_INIT;
    bool ok = true;
    for (int64_t r = 0; r < o->n && ok; r++) {
        buf_reset(&kb);
        key_encode_row(o, r, &kb);
        ok = wadd(s->pend, kb.p, kb.n, o->w[r]);
    }
    buf_free(&kb);
    return ok;
}

static int overflow(Op *op, Err *err)
{
    FixSt *s = op->st;
    s->cant_undo = true;
    op->undo = NULL; /* R and pend are half updated */
    return err_set(err, SL_ERUNTIME,
                   "recursive relation %s: a row's multiplicity passes BIGINT (a recursion "
                   "under UNION ALL that does not end?)",
                   op->node->label ? op->node->label : "");
}

/* Iterate to the fixed point (header). */
static int iterate(Op *op, OpEnv *env, bool reset)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    Err *err = env->ev->err;
    int64_t it = 0;
    for (;; it++) {
        if (it >= FIX_MAX_ITER)
            return err_set(err, SL_ERUNTIME,
                           "recursive relation %s: no fixed point after %d iterations in one "
                           "step (a recursion under UNION ALL that does not end?)",
                           n->label ? n->label : "", FIX_MAX_ITER);
        if (budget_stop())
            return budget_error(err);
        arena_reset(s->arena);
        int64_t nd;
        Delta *d = it == 0 && reset ? map_deltas(s->arena, s->r, true, &nd)
                                    : map_deltas(s->arena, s->pend, false, &nd);
        s->out[0] = delta_chunk(s, 0, d, nd);
        for (int j = 0; j < n->nin; j++)
            s->out[j + 1] = batch_chunk(s, j + 1, it == 0 ? s->dx[j] : NULL, false);
        Chunk *o;
        int64_t dz = s->ev.ndivzero;
        int rc = inner_step(s, err, &o);
        env->ev->ndivzero += s->ev.ndivzero - dz;
        if (rc) {
            if (s->cant_undo)
                op->undo = NULL;
            return rc;
        }
        if (it == 0)
            s->x_fed = true;
        for (int64_t i = 0; i < nd; i++)
            if (!wadd(s->r, d[i].k, d[i].kn, d[i].w) || !wadd(s->acc, d[i].k, d[i].kn, d[i].w) ||
                !wadd(s->pend, d[i].k, d[i].kn, -d[i].w))
                return overflow(op, err);
        if (!fold(s, o))
            return overflow(op, err);
        if (!hmap_count(s->pend))
            break;
    }
    s->iters = it + 1;
    return 0;
}

static int finish_fix(Op *op, OpEnv *env)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    op->out = op_empty(env->arena, n);
    if (!s->ops) /* not worker 0: everything went there */
        return 0;
    bool any = s->isteps == 0 || hmap_count(s->pend) > 0, neg = false;
    for (int j = 0; j < n->nin; j++) {
        s->dx[j] = shard_batch(op->sh, j);
        any = any || s->dx[j]->n;
        for (int64_t i = 0; i < s->dx[j]->n && !neg; i++)
            neg = s->dx[j]->w[i] < 0;
    }
    if (!any)
        return 0;
    int rc = iterate(op, env, neg || !s->monotone);
    if (rc)
        return rc;
    int64_t nd;
    Delta *d = map_deltas(env->arena, s->acc, false, &nd);
    Chunk *c = chunk_new(env->arena, n->ncol, n->types, nd);
    for (int64_t i = 0; i < nd; i++) {
        key_decode(d[i].k, n->types, n->ncol, c, 0, i);
        c->w[i] = d[i].w;
    }
    c->n = nd;
    op->out = c;
    return 0;
}

/* Rollback: the step's changes (its input and the R it fed) once more,
   negated, bring every inner operator back; then R and pend. */
static void undo_fix(Op *op)
{
    FixSt *s = op->st;
    const CNode *n = op->node;
    if (!s->ops || (!s->x_fed && !hmap_count(s->acc)))
        return;
    Err e = {0};
    arena_reset(s->arena);
    int64_t nd;
    Delta *d = map_deltas(s->arena, s->acc, true, &nd);
    s->out[0] = delta_chunk(s, 0, d, nd);
    for (int j = 0; j < n->nin; j++)
        s->out[j + 1] = batch_chunk(s, j + 1, s->x_fed ? s->dx[j] : NULL, true);
    Chunk *o;
    if (inner_step(s, &e, &o)) /* the same rows went through before */
        return;
    for (int64_t i = 0; i < nd; i++) { /* d is -acc */
        wadd(s->r, d[i].k, d[i].kn, d[i].w);
        wadd(s->pend, d[i].k, d[i].kn, -d[i].w);
    }
    fold(s, o);
    clear_map(s->acc);
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
    op->undo = undo_fix;
}

static void mem_fix(Op *op, OpMem *m)
{
    FixSt *s = op->st;
    m->rows += hmap_count(s->r);
    m->bytes += hmap_bytes(s->r) + hmap_bytes(s->pend);
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
    hmap_free(s->r);
    hmap_free(s->pend);
    hmap_free(s->acc);
    sl_free(s);
}

/* ---- checkpoints ---- */

static Batch *map_batch(HMap *m)
{
    BatchBuilder *bb = bb_new();
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(m, &it, &k, &kn, &pl))
        bb_add(bb, k, kn, NULL, 0, *(int64_t *)pl);
    return bb_finish(bb);
}

static int save_fix(Op *op, BatchList *out)
{
    FixSt *s = op->st;
    if (!s->ops) {
        batchlist_add(out, op_header((const char *[]){"isteps"}, (int64_t[]){1}, 1));
        return 0;
    }
    int nn = s->sub->nnodes;
    const char **names = sl_calloc((size_t)nn + 1, sizeof(char *));
    char *nb = sl_calloc((size_t)nn + 1, 16);
    int64_t *counts = sl_calloc((size_t)nn + 1, sizeof(int64_t));
    BatchList *inner = sl_calloc((size_t)nn, sizeof(BatchList));
    int nh = 0;
    names[nh] = "isteps";
    counts[nh++] = s->isteps + 1;
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
        batchlist_add(out, map_batch(s->r));
        batchlist_add(out, map_batch(s->pend));
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

static void map_load(HMap *m, const Batch *b)
{
    for (int64_t i = 0; i < b->n; i++)
        *wslot(m, batch_key(b, i), batch_klen(b, i)) = b->w[i];
}

static int load_fix(Op *op, Batch *const *b, int n, Err *err)
{
    FixSt *s = op->st;
    int id = op->node->id;
    if (n < 1 || b[0]->n < 1 || batch_klen(b[0], 0) != 6 || memcmp(batch_key(b[0], 0), "isteps", 6))
        return err_set(err, SL_EIO, "recursive state (node %d) has no valid header", id);
    if (!s->ops)
        return 0; /* not worker 0: nothing */
    if (n < 3)
        return err_set(err, SL_EIO, "recursive state (node %d) lacks R", id);
    s->isteps = b[0]->w[0] - 1;
    map_load(s->r, b[1]);
    map_load(s->pend, b[2]);
    int at = 3;
    int64_t h = 1;
    for (int i = s->nports; i < s->sub->nnodes; i++) {
        if (!s->ops[i]->save)
            continue;
        char name[16];
        snprintf(name, sizeof(name), "node%06d", i);
        if (h >= b[0]->n || batch_klen(b[0], h) != strlen(name) ||
            memcmp(batch_key(b[0], h), name, strlen(name)))
            return err_set(err, SL_EIO, "recursive state (node %d) lacks inner node %d", id, i);
        int64_t cnt = b[0]->w[h++] - 1;
        if (cnt < 0 || at + cnt > n)
            return err_set(err, SL_EIO, "recursive state (node %d) is truncated", id);
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
    s->r = hmap_new(sizeof(int64_t));
    s->pend = hmap_new(sizeof(int64_t));
    s->acc = hmap_new(sizeof(int64_t));
    s->monotone = true;
    for (int i = n->nin + 1; i < n->sub->nnodes; i++) {
        OpKind k = n->sub->nodes[i]->k;
        s->monotone = s->monotone && (k == OPK_MAP || k == OPK_UNION || k == OPK_JOIN ||
                                      k == OPK_DISTINCT || k == OPK_CONST);
    }
    if (op->sh && op->sh->me == 0)
        inner_new(op, s);
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

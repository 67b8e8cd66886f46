/*
 * runtime/worker.c - worker threads and the step protocol.
 *
 * Step protocol: the controller fills each worker's input pieces, then
 * rt_step releases workers 1..W-1 through the start barrier, runs worker 0
 * itself, and waits at the done barrier. A worker's step has two phases:
 *  1. morsels: its share of each table's input is cut into morsels of at
 *     most MORSEL_ROWS rows (datagen rows are generated here, by the
 *     worker, so generation scales with workers); each morsel runs through
 *     the "streamable" operators (sources, and linear operators over them)
 *     and is pushed into the streamed operators that consume them
 *     (aggregates fold it into local partials, joins and distinct encode it
 *     for the exchange, sinks integrate it). Memory is bounded by the
 *     morsel, not by the step.
 *  2. the rest: every other operator runs once in node order; streamed
 *     operators finish, linear ones evaluate their inputs. Before a
 *     stateful operator's finish(), this file runs its exchange: the
 *     records its push() and flush() routed to other workers (through the
 *     operator's Shard, circuit/shard.h, whose boxes point at the node's
 *     Exchange) move to them, and finish() reads those addressed to its
 *     worker (update state, emit the step's changes). Operators never
 *     touch the Exchange. An operator with reroute() (op.h) exchanges in
 *     two rounds: its first channels move, reroute() reads them and
 *     writes the others, those move, then finish().
 * Exchanges use a second barrier shared by the W workers; every worker
 * finishes every streamed operator, so they reach each exchange in the same
 * order.
 *
 * Rollback (one host): a runtime error in phase 1 (overflow, bad cast in a
 * filter or projection over the input) changes no state beyond the step
 * but the sinks' contents, which integrate morsel by morsel. The workers
 * agree at a barrier whether any of them failed; if so each one runs the
 * morsels it fed again through the same pure linear operators and hands
 * the sinks' inputs to unpush() (op.h), which takes them out again, skips
 * phase 2 and leaves the step count alone: the state is exactly as before
 * the step, and rt_rolled_back() says so. An error in phase 2 is undone
 * the same way when every stateful operator that received input in the
 * step can undo() (upserts, joins, aggregates and DISTINCT can; top-k,
 * windows and emit_final cannot yet): sinks unpush their phase-2
 * inputs, the others undo, then phase 1 is withdrawn as above. The
 * controller can then find the failing rows with rt_probe() (linear
 * operators only, nothing pushed) and run the step again without them. A
 * step without an error pays a flag test per phase, and with several
 * workers two barrier waits. With several hosts, only a step bounded by
 * rt_set_step_memory (on every host) rolls back: after each phase the
 * hosts agree on the flags (hosts_agree: one small net exchange per
 * phase), so a host past its allowance undoes the step everywhere.
 *
 * Watermarks (LATENESS, circuit/watermark.h): feed() drops a morsel's late
 * rows against the watermarks as the step began and notes the largest
 * values kept; after phase 1, wm_sync() (two barrier waits, and with
 * several hosts one small net exchange) gives every worker the tables' new
 * watermarks and every node's column watermarks, which phase 2's
 * operators read (OpEnv.wm). A step that succeeds commits them into the
 * tables' source nodes (wm_commit), whose checkpointed state they are.
 */
#include "runtime.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../circuit/watermark.h"
#include "../zset/hmap.h"
#include "../zset/xrec.h"

/* Stack of a worker thread (worker 0 is the caller's thread). */
#define WORKER_STACK ((size_t)16 << 20)

/* Rows per morsel: a chunk of this many rows stays in the CPU caches. */
#define MORSEL_ROWS 65536

typedef struct Worker {
    struct Runtime *rt;
    int id;
    pthread_t thread;
    Arena *arena;   /* step arena */
    Arena *morsel;  /* morsel arena, reset for every morsel */
    int64_t mem_peak; /* bytes this worker held at most in its last step
                         (measured with rt_set_step_memory only) */
    bool mem_said;    /* this step's error is already the allowance's
                         (passed_allowance; cleared as each step begins) */
    Op **ops;
    Shard **shards; /* per node: its instance's view of rt->x[node], or NULL */
    Piece **input;  /* per relation */
    Err err;
    EvalCtx ev;
    int64_t *divzero; /* per node: rows divided by zero */
    int64_t *divzero0;  /* ... as the step started (rollback) */
    int64_t ndivzero0;
    bool *pushed;     /* per node: received input this step (pushed, or
                         through its exchange: note_received) */
    bool undo;        /* run_morsel withdraws what it pushed (rollback) */
    int64_t *seen;    /* per relation: largest LATENESS column value kept this step */
    int64_t *late;    /* per relation: rows dropped as late this step */
} Worker;

struct Runtime {
    const Circuit *c;
    int W;                  /* workers in all (every host) */
    int nl, first;          /* this host's: workers [first, first + nl) */
    int host, hosts;
    Worker *w;              /* the nl local workers */
    Exchange **x;           /* per node, or NULL */
    pthread_barrier_t start, done, xbar;
    bool *sv;               /* per node: carries morsel data (a source, or linear
                               with an input that does) */
    bool *pv;               /* per node: carries post-phase data (a streamed
                               operator, or linear with an input that does) */
    bool *probe_all;        /* per node: true (rt_probe reads every input) */
    bool quit;
    int64_t steps;
    atomic_bool mfail;      /* a worker failed in phase 1 (or 2) of this step */
    atomic_bool stuck;      /* ... and an operator that cannot undo had input */
    bool trial, inject;     /* rt_set_trial: fail the next run of the step */
    bool rolled_back;       /* the last step failed and was undone */
    int64_t step_mem;       /* rt_set_step_memory: bytes per worker, 0: none */
    atomic_int mem_node;    /* the node whose worker passed it (-2: the input), -1 */
    bool *changed;          /* per node: received input since rt_clear_changed */
    /* rt_set_boot (bootstrapping, pipeline/boot.c): the next step runs
       only the nodes with boot_run, feed[lw * nnodes + n] is node n's
       output on local worker lw (its integral), boot_new the new nodes */
    const bool *boot_run, *boot_new;
    Chunk *const *boot_feed;
    /* watermarks (circuit/watermark.h), when some table has LATENESS: per
       relation its source node (-1: none), the watermark as the step
       began and after its input (every worker of every host), the step's
       late rows; per node and column, the watermarks from wm_new */
    bool has_wm;
    int *wm_src;
    int64_t *wm_old, *wm_new, *wm_late;
    int64_t **wm_cols;
};

/* Input j of node n in a phase: the input's output when it carries data in
   that phase (flag), else an empty chunk. Linear operators distribute over
   sums, so each phase can run them on its part of the data alone. */
static Chunk *phase_input(Worker *w, Arena *a, const CNode *n, int j, const bool *flag)
{
    int in = n->in[j];
    return flag[in] ? w->ops[in]->out : op_empty(a, w->rt->c->nodes[in]);
}

/* Run linear operator op on its inputs of one phase. */
static void eval_linear(Worker *w, OpEnv *env, Op *op, const bool *flag)
{
    const CNode *n = op->node;
    /* a sum (UNION ALL, VALUES) may have any number of inputs */
    Chunk *few[8], **ins = few;
    if (n->nin > 8)
        ins = arena_alloc(env->arena, sizeof(Chunk *) * (size_t)n->nin);
    for (int j = 0; j < n->nin; j++)
        ins[j] = phase_input(w, env->arena, n, j, flag);
    op->out = NULL;
    int64_t dz = w->ev.ndivzero;
    if (op->eval(op, env, ins) || !op->out) {
        if (!w->err.code)
            err_set(&w->err, SL_ERUNTIME, "operator %d failed", n->id);
        op->out = op_empty(env->arena, n);
    }
    w->divzero[n->id] += w->ev.ndivzero - dz;
}

/* Push what op's inputs carry in this phase into the streamed operator op. */
static void push_inputs(Worker *w, OpEnv *env, Op *op, const bool *flag)
{
    const CNode *n = op->node;
    for (int j = 0; j < n->nin; j++) {
        if (!flag[n->in[j]])
            continue;
        Chunk *in = w->ops[n->in[j]]->out;
        if (!in->n)
            continue;
        w->pushed[n->id] = true;
        if (op->push(op, env, j, in) && !w->err.code)
            err_set(&w->err, SL_ERUNTIME, "operator %d failed", n->id);
    }
}

/* After op i's exchange: rows other workers sent this one change its
   state as pushed ones do. With several hosts a host's workers may get
   all of an operator's input from another host's (a file read there):
   unmarked, the next checkpoint would keep that operator's files of the
   one before on this host. */
static void note_received(Worker *w, int i)
{
    const Shard *sh = w->shards[i];
    if (!sh || w->pushed[i])
        return;
    for (int k = 0; k < sh->nch * sh->W; k++)
        if (sh->in[k]->n) {
            w->pushed[i] = true;
            return;
        }
}

/* Rollback: withdraw from op what this phase's inputs pushed into it. */
static void unpush_inputs(Worker *w, OpEnv *env, Op *op, const bool *flag)
{
    const CNode *n = op->node;
    for (int j = 0; j < n->nin; j++) {
        Chunk *in = w->ops[n->in[j]]->out;
        if (flag[n->in[j]] && in->n)
            op->unpush(op, env, j, in);
    }
}

/* The current morsel through the linear operators that carry morsel data,
   then into the streamed operators that consume them (w->undo: out of the
   ones whose push outlives the step again). */
static void run_morsel(Worker *w, OpEnv *env)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    for (int i = 0; i < c->nnodes; i++)
        if (rt->sv[i] && c->nodes[i]->k != OPK_SOURCE)
            eval_linear(w, env, w->ops[i], rt->sv);
    for (int i = 0; i < c->nnodes; i++) {
        Op *op = w->ops[i];
        if (!w->undo && op->push)
            push_inputs(w, env, op, rt->sv);
        else if (w->undo && op->unpush)
            unpush_inputs(w, env, op, rt->sv);
    }
}

/* Feed morsel m of the table read by source node `src`: every other source
   is empty for this morsel (linear operators distribute over sums). */
static void feed(Worker *w, OpEnv *env, int src, Chunk *m)
{
    Runtime *rt = w->rt;
    const Circuit *c = w->rt->c;
    int rel = c->nodes[src]->rel;
    if (rt->has_wm && rt->wm_src[rel] >= 0) { /* late rows go before any operator */
        int64_t late = 0;
        m = wm_drop_late(&c->rels[rel], rt->wm_old[rel], m, w->morsel, &w->seen[rel], &late);
        if (!w->undo)
            w->late[rel] += late;
    }
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->k == OPK_SOURCE)
            w->ops[i]->out = i == src ? m : op_empty(env->arena, c->nodes[i]);
    run_morsel(w, env);
}

/* Rows [off, off+cnt) of piece p (of source node n) in the morsel arena. */
static Chunk *morsel_of(Worker *w, const CNode *n, const Piece *p, int64_t off, int64_t cnt)
{
    if (p->chunk)
        return chunk_slice(w->morsel, p->chunk, off, cnt);
    Chunk *m = chunk_new(w->morsel, n->ncol, n->types, cnt);
    p->fill(p->src, p->plan, p->start + off, cnt, m, w->morsel);
    if (p->negate)
        for (int64_t r = 0; r < m->n; r++)
            m->w[r] = -m->w[r];
    return m;
}

/* Phase 1: the step's input, a morsel at a time, through the linear
   operators into the streamed ones (memory stays bounded for any step
   size). Stops after the first morsel that fails, or (limit >= 0) after
   `limit` morsels; returns the morsels fed. */
static int64_t run_morsels(Worker *w, OpEnv *menv, int64_t limit)
{
    const Circuit *c = w->rt->c;
    int64_t fed = 0;
    w->ev.arena = w->morsel;
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        if (n->k != OPK_SOURCE)
            continue;
        for (Piece *p = w->input[n->rel]; p; p = p->next) {
            int64_t total = p->chunk ? p->chunk->n : p->count;
            for (int64_t off = 0; off < total; off += MORSEL_ROWS) {
                if (limit >= 0 && fed == limit)
                    goto out_done;
                int64_t cnt = total - off < MORSEL_ROWS ? total - off : MORSEL_ROWS;
                arena_reset(w->morsel);
                feed(w, menv, i, morsel_of(w, n, p, off, cnt));
                fed++;
                if (limit < 0 && w->err.code)
                    goto out_done;
                /* a /query past its bounds, or the step past its memory
                   allowance; never while undoing: every morsel fed must be
                   withdrawn again (stopping there after the first one left
                   the rest of a failed step in the sinks, and its retry
                   added them a second time) */
                if (!w->undo && unlikely(budget_stop())) {
                    if (!w->err.code)
                        budget_error(&w->err);
                    goto out_done;
                }
            }
        }
    }
out_done:
    w->ev.arena = w->arena;
    return fed;
}

/* With several hosts and a bounded step (rt_set_step_memory on every
   host): the hosts agree on the flags, each the largest of every host's,
   with one small net exchange by local worker 0 between barriers, so
   every host undoes the step or none does. */
static void hosts_agree(Worker *w, bool with_stuck)
{
    Runtime *rt = w->rt;
    if (w->id == rt->first) {
        int64_t v[2] = {atomic_load(&rt->mfail), atomic_load(&rt->stuck)};
        xchg_hosts_reduce(v, with_stuck ? 2 : 1, 0, rt->host, rt->hosts);
        if (v[0])
            atomic_store(&rt->mfail, true);
        if (with_stuck && v[1])
            atomic_store(&rt->stuck, true);
    }
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->xbar);
}

/* Did any worker fail in phase 1? Then the step is undone. With several
   hosts only in a bounded step (hosts_agree); in any other, the other
   hosts' workers wait at exchanges, so the step goes on (and fails as
   before). */
static bool phase1_failed(Worker *w)
{
    Runtime *rt = w->rt;
    if (rt->hosts > 1 && rt->step_mem <= 0)
        return false;
    if (w->err.code)
        atomic_store(&rt->mfail, true);
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->xbar);
    if (rt->hosts > 1)
        hosts_agree(w, false);
    return atomic_load(&rt->mfail);
}

/* Did phase 2 fail on any worker, with every operator that took input
   able to undo it? (Several hosts only as in phase1_failed.) */
static bool phase2_failed(Worker *w)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    if (rt->hosts > 1 && rt->step_mem <= 0)
        return false;
    if (w->err.code)
        atomic_store(&rt->mfail, true);
    for (int i = 0; i < c->nnodes; i++) {
        Op *op = w->ops[i];
        if (w->pushed[i] && op->save && !op->undo && !op->unpush)
            atomic_store(&rt->stuck, true);
    }
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->xbar);
    if (rt->hosts > 1)
        hosts_agree(w, true);
    if (rt->inject && !atomic_load(&rt->stuck))
        return true; /* every worker reads the same flags */
    return atomic_load(&rt->mfail) && !atomic_load(&rt->stuck);
}

/* Withdraw phase 1 (the first `fed` morsels) from the sinks, put the
   counters back and end the step without a trace of it. */
static void undo_phase1(Worker *w, OpEnv *menv, int64_t fed)
{
    const Circuit *c = w->rt->c;
    Err keep = w->err;
    w->undo = true;
    run_morsels(w, menv, fed);
    w->undo = false;
    w->err = keep;
    memcpy(w->divzero, w->divzero0, sizeof(int64_t) * (size_t)c->nnodes);
    w->ev.ndivzero = w->ndivzero0;
    for (int i = 0; i < c->nnodes; i++) {
        w->ops[i]->out = op_empty(w->arena, c->nodes[i]);
        if (w->ops[i]->step_end)
            w->ops[i]->step_end(w->ops[i]);
    }
}

/* A table's input of a bootstrap step (rows read again for the new part)
   as one chunk in the step arena. */
static Chunk *boot_source(Worker *w, const CNode *n)
{
    int64_t total = 0;
    for (Piece *p = w->input[n->rel]; p; p = p->next)
        total += p->chunk ? p->chunk->n : p->count;
    Piece *only = w->input[n->rel];
    if (only && !only->next && only->chunk)
        return only->chunk;
    Chunk *c = chunk_new(w->arena, n->ncol, n->types, total ? total : 1);
    for (Piece *p = w->input[n->rel]; p; p = p->next) {
        if (p->chunk) {
            for (int64_t r = 0; r < p->chunk->n; r++)
                chunk_append_row(c, p->chunk, r);
            continue;
        }
        int64_t from = c->n; /* generated rows: straight into c */
        p->fill(p->src, p->plan, p->start, p->count, c, w->arena);
        for (int64_t r = from; r < c->n && p->negate; r++)
            c->w[r] = -c->w[r];
    }
    return c;
}

/* A bootstrap step (rt_set_boot): fed nodes output their integral, the
   nodes in boot_run run over their inputs' outputs (a source: the step's
   input of its table; new nodes in the first bootstrap step as in their
   first step: a global aggregate or a VALUES emits its row), every other
   node outputs nothing. Streamed nodes outside boot_run still finish
   (with no input, as in any step they get none), so every worker reaches
   every exchange in the same order. */
static void boot_step(Worker *w, OpEnv *env)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    OpEnv fresh = *env;
    if (rt->boot_feed) /* the first bootstrap step */
        fresh.step = 0;
    for (int i = 0; i < c->nnodes; i++) {
        Op *op = w->ops[i];
        const CNode *n = op->node;
        Chunk *fed = rt->boot_feed ? rt->boot_feed[(size_t)(w->id - rt->first) *
                                                   (size_t)c->nnodes + (size_t)i]
                                   : NULL;
        OpEnv *e = rt->boot_new[i] ? &fresh : env;
        bool run = rt->boot_run[i] && n->k != OPK_SOURCE;
        if (fed) {
            op->out = fed;
            continue;
        }
        if (n->k == OPK_SOURCE && rt->boot_run[i]) {
            op->out = boot_source(w, n);
            continue;
        }
        if (!op->push) {
            if (run)
                eval_linear(w, e, op, rt->probe_all);
            else
                op->out = op_empty(w->arena, n);
            continue;
        }
        if (run)
            push_inputs(w, e, op, rt->probe_all);
        if (op->flush)
            op->flush(op, e);
        if (rt->x[i]) {
            xchg_wait(rt->x[i], w->id);
            note_received(w, i);
        }
        op->out = NULL;
        if ((op->finish(op, e) || !op->out) && !w->err.code)
            err_set(&w->err, SL_ERUNTIME, "operator %d failed", n->id);
        if (!op->out || !run)
            op->out = op_empty(w->arena, n);
    }
    for (int i = 0; i < c->nnodes; i++)
        if (w->ops[i]->step_end)
            w->ops[i]->step_end(w->ops[i]);
}

/* After phase 1: every worker has read its input, so the tables' new
   watermarks are known (the largest values kept on every worker of every
   host); local worker 0 computes them and every node's column watermarks
   while the others wait, before any stateful operator finishes. */
static void wm_sync(Worker *w)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    int R = c->nrels;
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->xbar);
    if (w->id == rt->first) {
        int64_t *v = sl_malloc(sizeof(int64_t) * (size_t)(2 * R + 1));
        for (int r = 0; r < R; r++) {
            v[r] = WM_NONE;
            v[R + r] = 0;
            for (int k = 0; k < rt->nl; k++) {
                v[r] = rt->w[k].seen[r] > v[r] ? rt->w[k].seen[r] : v[r];
                v[R + r] += rt->w[k].late[r];
            }
        }
        xchg_hosts_reduce(v, R, R, rt->host, rt->hosts);
        for (int r = 0; r < R; r++) {
            rt->wm_new[r] = rt->wm_src[r] >= 0 ? wm_advance(&c->rels[r], rt->wm_old[r], v[r])
                                               : WM_NONE;
            rt->wm_late[r] = v[R + r];
        }
        sl_free(v);
        wm_propagate(c, rt->wm_new, rt->wm_cols);
    }
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->xbar);
}

/* This worker passed its step allowance (rt_set_step_memory) in node n
   (-2: reading the input): the step fails with a message naming it, and
   is undone as after any runtime error. */
static void passed_allowance(Worker *w, int n)
{
    Runtime *rt = w->rt;
    int none = -1;
    atomic_compare_exchange_strong(&rt->mem_node, &none, n);
    if (w->mem_said) /* said at an earlier node */
        return;
    w->mem_said = true;
    err_clear(&w->err); /* (the operator's own message names a /query's budget) */
    if (n >= 0)
        err_set(&w->err, SL_ERUNTIME,
                "step %lld needs more memory than the limit leaves (%lld bytes per worker) in "
                "operator node %d",
                (long long)rt->steps + 1, (long long)rt->step_mem, n);
    else
        err_set(&w->err, SL_ERUNTIME,
                "step %lld needs more memory than the limit leaves (%lld bytes per worker) for "
                "its input",
                (long long)rt->steps + 1, (long long)rt->step_mem);
}

static bool past_allowance(void)
{
    return unlikely(budget__cur != NULL) && budget_stop() && budget__cur->stop == BUDGET_MEMORY;
}

static void run_step_body(Worker *w);

static void run_step(Worker *w)
{
    Runtime *rt = w->rt;
    Budget b = {.limit = rt->step_mem};
    w->mem_said = false;
    if (rt->step_mem > 0)
        budget_begin(&b);
    run_step_body(w);
    if (rt->step_mem > 0)
        budget_end();
    w->mem_peak = b.peak;
}

static void run_step_body(Worker *w)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    if (rt->step_mem > 0) {
        /* a bounded step (a memory limit under pressure): the arena keeps
           twice what the last step took, not what its largest did (the
           first step under a limit can take many times more; the spares
           stayed resident, uncounted, for the rest of the run) */
        size_t last = arena_used(w->arena);
        arena_reset_keep(w->arena, 2 * last + (1u << 20));
    } else {
        arena_reset(w->arena);
    }
    OpEnv env = {w->id, rt->W, rt->steps, w->arena, &w->ev,
                 rt->has_wm ? (const int64_t *const *)rt->wm_cols : NULL, false};
    for (int r = 0; rt->has_wm && r < c->nrels; r++) {
        w->seen[r] = WM_NONE;
        w->late[r] = 0;
    }
    memcpy(w->divzero0, w->divzero, sizeof(int64_t) * (size_t)c->nnodes);
    w->ndivzero0 = w->ev.ndivzero;
    for (int i = 0; i < c->nnodes; i++) {
        if (w->shards[i])
            shard_reset(w->shards[i]);
        if (w->ops[i]->begin)
            w->ops[i]->begin(w->ops[i], &env);
    }
    if (rt->boot_run) {
        boot_step(w, &env);
        return;
    }

    OpEnv menv = env;
    menv.arena = w->morsel;
    mem_set_doing("running step %lld (its input, through the filters and projections)",
                  rt->steps + 1, 0);
    int64_t fed = run_morsels(w, &menv, -1);
    if (rt->step_mem > 0 && past_allowance())
        passed_allowance(w, -2);
    if (phase1_failed(w)) {
        undo_phase1(w, &menv, fed);
        return;
    }
    if (rt->has_wm)
        wm_sync(w);

    /* the rest of the circuit, once, in node order */
    for (int i = 0; i < c->nnodes; i++) {
        Op *op = w->ops[i];
        const CNode *n = op->node;
        if (!op->push) {
            if (rt->pv[i])
                eval_linear(w, &env, op, rt->pv);
            else
                op->out = op_empty(w->arena, n); /* its data went by in morsels */
            continue;
        }
        mem_set_doing("running step %lld in operator node %lld (see sluice check)",
                      rt->steps + 1, i);
        push_inputs(w, &env, op, rt->pv);
        if (op->flush)
            op->flush(op, &env);
        /* exchange and finish even after an error: the other workers wait
           at the exchange */
        if (rt->x[i] && op->reroute) {
            xchg_wait_range(rt->x[i], w->id, 0, op->nch_first);
            op->reroute(op, &env);
            xchg_wait_range(rt->x[i], w->id, op->nch_first, op->sh->nch);
        } else if (rt->x[i]) {
            xchg_wait(rt->x[i], w->id);
        }
        if (rt->x[i])
            note_received(w, i);
        op->out = NULL;
        if ((op->finish(op, &env) || !op->out) && !w->err.code)
            err_set(&w->err, SL_ERUNTIME, "operator %d failed", n->id);
        if (rt->step_mem > 0 && past_allowance())
            passed_allowance(w, i);
        if (!op->out)
            op->out = op_empty(w->arena, n);
    }
    mem_set_doing("ending step %lld", rt->steps + 1, 0);
    if (phase2_failed(w)) {
        /* latest first: sinks give back their phase-2 input, operators
           that can undo do, then phase 1 is withdrawn */
        for (int i = c->nnodes; i-- > 0;) {
            Op *op = w->ops[i];
            if (op->unpush)
                unpush_inputs(w, &env, op, rt->pv);
            else if (op->undo)
                op->undo(op);
        }
        undo_phase1(w, &menv, fed);
        return;
    }
    for (int i = 0; i < c->nnodes; i++)
        if (w->ops[i]->step_end)
            w->ops[i]->step_end(w->ops[i]);
}

/* Worker me's view of exchange x (nch channels, W workers): its boxes are
   the exchange's buffers from it and to it. */
static Shard *shard_of(Exchange *x, int W, int me, int nch)
{
    Shard *sh = shard_new(W, me, nch);
    for (int ch = 0; ch < nch; ch++)
        for (int k = 0; k < W; k++) {
            sh->out[ch * W + k] = xchg_buf(x, me, k, ch);
            sh->in[ch * W + k] = xchg_buf(x, k, me, ch);
        }
    return sh;
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Runtime *rt = w->rt;
    for (;;) {
        pthread_barrier_wait(&rt->start);
        if (rt->quit)
            break;
        run_step(w);
        pthread_barrier_wait(&rt->done);
    }
    return NULL;
}

Runtime *rt_new(const Circuit *c, int nworkers) { return rt_new_part(c, nworkers, 0, 1); }

Runtime *rt_new_part(const Circuit *c, int W, int host, int hosts)
{
    Runtime *rt = sl_calloc(1, sizeof(*rt));
    rt->c = c;
    rt->W = W;
    rt->host = host;
    rt->hosts = hosts;
    rt->first = xchg_first(W, hosts, host);
    int nworkers = rt->nl = xchg_first(W, hosts, host + 1) - rt->first;
    if (nworkers > 1) {
        pthread_barrier_init(&rt->start, NULL, (unsigned)nworkers);
        pthread_barrier_init(&rt->done, NULL, (unsigned)nworkers);
        pthread_barrier_init(&rt->xbar, NULL, (unsigned)nworkers);
    }
    rt->x = sl_calloc((size_t)c->nnodes, sizeof(Exchange *));
    rt->sv = sl_calloc((size_t)c->nnodes, sizeof(bool));
    rt->pv = sl_calloc((size_t)c->nnodes, sizeof(bool));
    rt->probe_all = sl_calloc((size_t)c->nnodes, sizeof(bool));
    memset(rt->probe_all, 1, sizeof(bool) * (size_t)c->nnodes);
    rt->changed = sl_calloc((size_t)c->nnodes, sizeof(bool));
    memset(rt->changed, 1, sizeof(bool) * (size_t)c->nnodes); /* nothing saved yet */
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        bool linear = n->k == OPK_MAP || n->k == OPK_UNION || n->k == OPK_NEGATE ||
                      n->k == OPK_UNNEST;
        rt->sv[i] = n->k == OPK_SOURCE;
        rt->pv[i] = !linear && n->k != OPK_SOURCE;
        for (int j = 0; j < n->nin && linear; j++) {
            rt->sv[i] = rt->sv[i] || rt->sv[n->in[j]];
            rt->pv[i] = rt->pv[i] || rt->pv[n->in[j]];
        }
    }
    for (int i = 0; i < c->nnodes; i++) {
        int ch = op_shard_channels(c->nodes[i]);
        if (ch)
            rt->x[i] = xchg_new(W, host, hosts, ch, nworkers > 1 ? &rt->xbar : NULL);
    }
    rt->w = sl_calloc((size_t)nworkers, sizeof(Worker));
    for (int k = 0; k < nworkers; k++) {
        Worker *w = &rt->w[k];
        w->rt = rt;
        w->id = rt->first + k;
        w->arena = arena_new(1 << 20);
        w->morsel = arena_new(1 << 20);
        w->ev.arena = w->arena;
        w->ev.err = &w->err;
        w->ops = sl_calloc((size_t)c->nnodes, sizeof(Op *));
        w->divzero = sl_calloc((size_t)c->nnodes, sizeof(int64_t));
        w->divzero0 = sl_calloc((size_t)c->nnodes, sizeof(int64_t));
        w->pushed = sl_calloc((size_t)c->nnodes, sizeof(bool));
        w->shards = sl_calloc((size_t)c->nnodes, sizeof(Shard *));
        for (int i = 0; i < c->nnodes; i++) {
            if (rt->x[i])
                w->shards[i] = shard_of(rt->x[i], W, w->id, op_shard_channels(c->nodes[i]));
            w->ops[i] = op_new(c, c->nodes[i], w->shards[i]);
        }
        w->input = sl_calloc((size_t)(c->nrels + 1), sizeof(Piece *));
        w->seen = sl_calloc((size_t)(c->nrels + 1), sizeof(int64_t));
        w->late = sl_calloc((size_t)(c->nrels + 1), sizeof(int64_t));
    }
    rt->has_wm = wm_any(c);
    if (rt->has_wm) {
        rt->wm_src = sl_malloc(sizeof(int) * (size_t)(c->nrels + 1));
        rt->wm_old = sl_calloc((size_t)(c->nrels + 1), sizeof(int64_t));
        rt->wm_new = sl_calloc((size_t)(c->nrels + 1), sizeof(int64_t));
        rt->wm_late = sl_calloc((size_t)(c->nrels + 1), sizeof(int64_t));
        for (int r = 0; r < c->nrels; r++) {
            rt->wm_src[r] = -1;
            rt->wm_old[r] = rt->wm_new[r] = WM_NONE;
        }
        for (int i = 0; i < c->nnodes; i++) {
            const CNode *n = c->nodes[i];
            if (n->k == OPK_SOURCE && c->rels[n->rel].is_table && c->rels[n->rel].wm_col >= 0)
                rt->wm_src[n->rel] = i;
        }
        rt->wm_cols = wm_cols_new(c);
    }
    /* an explicit stack: the default follows ulimit -s (2 MiB when it is
       unlimited), and evaluating an expression as deep as the compiler
       allows needs more under the sanitizers; untouched pages cost nothing */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK);
    for (int k = 1; k < nworkers; k++)
        if (pthread_create(&rt->w[k].thread, &attr, worker_main, &rt->w[k]))
            sl_panic("cannot start worker thread %d of %d", k, nworkers);
    pthread_attr_destroy(&attr);
    return rt;
}

void rt_free(Runtime *rt)
{
    if (!rt)
        return;
    if (rt->nl > 1) {
        rt->quit = true;
        pthread_barrier_wait(&rt->start);
        for (int k = 1; k < rt->nl; k++)
            pthread_join(rt->w[k].thread, NULL);
        pthread_barrier_destroy(&rt->start);
        pthread_barrier_destroy(&rt->done);
        pthread_barrier_destroy(&rt->xbar);
    }
    for (int k = 0; k < rt->nl; k++) {
        Worker *w = &rt->w[k];
        for (int i = 0; i < rt->c->nnodes; i++) {
            op_free(w->ops[i]);
            shard_free(w->shards[i]);
        }
        sl_free(w->ops);
        sl_free(w->shards);
        sl_free(w->divzero);
        sl_free(w->divzero0);
        sl_free(w->pushed);
        sl_free(w->input);
        sl_free(w->seen);
        sl_free(w->late);
        arena_free(w->arena);
        arena_free(w->morsel);
    }
    for (int i = 0; i < rt->c->nnodes; i++)
        xchg_free(rt->x[i]);
    sl_free(rt->x);
    sl_free(rt->sv);
    sl_free(rt->pv);
    sl_free(rt->probe_all);
    sl_free(rt->changed);
    sl_free(rt->wm_src);
    sl_free(rt->wm_old);
    sl_free(rt->wm_new);
    sl_free(rt->wm_late);
    wm_cols_free(rt->c, rt->wm_cols);
    sl_free(rt->w);
    sl_free(rt);
}

int rt_workers(const Runtime *rt) { return rt->nl; }
int rt_total_workers(const Runtime *rt) { return rt->W; }
int rt_first_worker(const Runtime *rt) { return rt->first; }

static void put_row(void *arg, const uint8_t *row, size_t n, int64_t w)
{
    xrec_put(arg, row, (uint32_t)n, NULL, 0, w);
}

void rt_sink_contents(Runtime *rt, int sink, Buf *out)
{
    for (int w = 0; w < rt->nl; w++)
        op_sink_rows(rt->w[w].ops[sink], put_row, out);
}

double rt_remote_secs(const Runtime *rt)
{
    int64_t n = 0;
    for (int i = 0; i < rt->c->nnodes; i++)
        if (rt->x[i])
            n += xchg_remote_ns(rt->x[i]);
    return (double)n * 1e-9;
}

size_t rt_arena_bytes(const Runtime *rt)
{
    size_t n = 0;
    for (int k = 0; k < rt->nl; k++)
        n += arena_held(rt->w[k].arena) + arena_held(rt->w[k].morsel);
    return n;
}

int64_t rt_remote_bytes(const Runtime *rt)
{
    int64_t n = 0;
    for (int i = 0; i < rt->c->nnodes; i++)
        if (rt->x[i])
            n += xchg_remote_bytes(rt->x[i]);
    return n;
}

void rt_set_input(Runtime *rt, int w, int rel, Piece *list) { rt->w[w].input[rel] = list; }

/* Every worker runs the step once (its input stays set). */
static void step_once(Runtime *rt)
{
    for (int r = 0; rt->has_wm && r < rt->c->nrels; r++) /* a restore may have set them */
        rt->wm_old[r] = rt->wm_src[r] >= 0 ? wm_source_get(rt->w[0].ops[rt->wm_src[r]]) : WM_NONE;
    atomic_store(&rt->mem_node, -1);
    atomic_store(&rt->mfail, false);
    atomic_store(&rt->stuck, false);
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->start);
    run_step(&rt->w[0]);
    if (rt->nl > 1)
        pthread_barrier_wait(&rt->done);
    rt->rolled_back = (atomic_load(&rt->mfail) || rt->inject) && !atomic_load(&rt->stuck);
}

/* A step succeeded: every source instance takes the new watermark; the
   step's late rows (of every host) count on global worker 0. When a
   watermark moved, the operators with a watermark on an input may have
   forgotten state without any input this step: the next checkpoint saves
   them too (else a restart would bring the forgotten state back). */
static void wm_commit(Runtime *rt)
{
    const Circuit *c = rt->c;
    bool moved = false;
    for (int r = 0; r < c->nrels; r++) {
        int src = rt->wm_src[r];
        if (src < 0)
            continue;
        moved |= rt->wm_new[r] != rt->wm_old[r];
        if (rt->wm_new[r] != rt->wm_old[r] || rt->wm_late[r])
            rt->changed[src] = true; /* the next checkpoint saves it */
        for (int k = 0; k < rt->nl; k++)
            wm_source_commit(rt->w[k].ops[src], rt->wm_new[r],
                             rt->w[k].id == 0 ? rt->wm_late[r] : 0);
    }
    for (int n = 0; moved && n < c->nnodes; n++)
        for (int j = 0; j < c->nodes[n]->nin && !rt->changed[n]; j++) {
            int i = c->nodes[n]->in[j];
            for (int col = 0; col < c->nodes[i]->ncol; col++)
                if (rt->wm_cols[i][col] != WM_NONE) {
                    rt->changed[n] = true;
                    break;
                }
        }
}

int rt_step(Runtime *rt, Err *err)
{
    if (rt->trial) { /* testing undo(): run, undo, run for real */
        rt->inject = true;
        step_once(rt);
        rt->inject = false;
        if (rt->rolled_back) {
            for (int k = 0; k < rt->nl; k++)
                for (int n = 0; n < rt->c->nnodes; n++)
                    rt->w[k].pushed[n] = false;
            step_once(rt);
        }
    } else {
        step_once(rt);
    }
    mem_big_tick(); /* pooled large blocks no step took go back (base/mem.h) */
    if (!rt->rolled_back) {
        rt->steps++;
        if (rt->has_wm && !rt->boot_run)
            wm_commit(rt);
    }
    rt->boot_run = rt->boot_new = NULL;
    rt->boot_feed = NULL;
    int rc = 0;
    for (int k = 0; k < rt->nl; k++) {
        Worker *w = &rt->w[k];
        for (int n = 0; n < rt->c->nnodes; n++) {
            rt->changed[n] |= w->pushed[n] || rt->steps == 1; /* step 0 creates state */
            w->pushed[n] = false;
        }
        if (w->err.code && !rc) {
            rc = SL_ERUNTIME;
            err_set(err, SL_ERUNTIME, "%s", w->err.msg);
        }
        err_clear(&w->err);
        for (int r = 0; r < rt->c->nrels; r++)
            w->input[r] = NULL;
    }
    return rc;
}

void rt_set_trial(Runtime *rt, bool on) { rt->trial = on; }

void rt_set_boot(Runtime *rt, const bool *run, const bool *is_new, Chunk *const *feed)
{
    rt->boot_run = run;
    rt->boot_new = is_new;
    rt->boot_feed = feed;
}

bool rt_can_undo(const Runtime *rt) { return rt->hosts == 1 && rt_can_undo_step(rt); }

bool rt_can_undo_step(const Runtime *rt)
{
    const Worker *w = &rt->w[0];
    for (int i = 0; i < rt->c->nnodes; i++)
        if (w->ops[i]->save && !w->ops[i]->undo && !w->ops[i]->unpush)
            return false;
    return true;
}

int rt_step_dry(Runtime *rt, Err *err)
{
    assert(rt_can_undo(rt));
    rt->inject = true;
    step_once(rt);
    rt->inject = false;
    int rc = 0;
    for (int k = 0; k < rt->nl; k++) {
        Worker *w = &rt->w[k];
        memset(w->pushed, 0, sizeof(bool) * (size_t)rt->c->nnodes);
        if (w->err.code && !rc)
            rc = err_set(err, SL_ERUNTIME, "%s", w->err.msg);
        err_clear(&w->err);
        for (int r = 0; r < rt->c->nrels; r++)
            w->input[r] = NULL;
    }
    return rc;
}

bool rt_rolled_back(const Runtime *rt) { return rt->rolled_back; }

void rt_set_step_memory(Runtime *rt, int64_t per_worker) { rt->step_mem = per_worker; }

int rt_step_memory_node(const Runtime *rt) { return atomic_load(&rt->mem_node); }

int64_t rt_step_memory_peak(const Runtime *rt)
{
    int64_t n = 0;
    for (int k = 0; k < rt->nl; k++)
        n += rt->w[k].mem_peak;
    return n;
}

size_t rt_step_arena_used(const Runtime *rt)
{
    size_t n = 0;
    for (int k = 0; k < rt->nl; k++) {
        size_t u = arena_used(rt->w[k].arena);
        n = u > n ? u : n;
    }
    return n;
}

size_t rt_step_exchanged(const Runtime *rt)
{
    size_t n = 0;
    for (int k = 0; k < rt->nl; k++) {
        size_t u = 0;
        for (int i = 0; i < rt->c->nnodes; i++)
            if (rt->x[i])
                u += xchg_bytes_to(rt->x[i], rt->first + k);
        n = u > n ? u : n;
    }
    return n;
}

int rt_probe(Runtime *rt, int rel, Chunk *rows, Err *err)
{
    Worker *w = &rt->w[0];
    const Circuit *c = rt->c;
    OpEnv env = {w->id, rt->W, rt->steps, w->morsel, &w->ev, NULL, false};
    int64_t dz = w->ev.ndivzero;
    memcpy(w->divzero0, w->divzero, sizeof(int64_t) * (size_t)c->nnodes);
    err_clear(&w->err);
    arena_reset(w->morsel);
    w->ev.arena = w->morsel;
    /* in node order (topological): rel's rows leave its source, and pass
       a PRIMARY KEY upsert unchanged (its output is the rows it takes);
       linear operators evaluate; everything else contributes nothing */
    for (int i = 0; i < c->nnodes && !w->err.code; i++) {
        const CNode *n = c->nodes[i];
        Op *op = w->ops[i];
        bool linear = n->k == OPK_MAP || n->k == OPK_UNION || n->k == OPK_NEGATE ||
                      n->k == OPK_UNNEST;
        if (n->k == OPK_SOURCE && n->rel == rel)
            op->out = rows;
        else if (n->k == OPK_UPSERT && c->nodes[n->in[0]]->k == OPK_SOURCE &&
                 c->nodes[n->in[0]]->rel == rel)
            op->out = rows;
        else if (linear)
            eval_linear(w, &env, op, rt->probe_all);
        else
            op->out = op_empty(w->morsel, n);
    }
    w->ev.arena = w->arena;
    w->ev.ndivzero = dz;
    memcpy(w->divzero, w->divzero0, sizeof(int64_t) * (size_t)c->nnodes);
    int rc = 0;
    if (w->err.code)
        rc = err_set(err, SL_ERUNTIME, "%s", w->err.msg);
    err_clear(&w->err);
    for (int i = 0; i < c->nnodes; i++) /* nothing may point into the probe */
        w->ops[i]->out = NULL;
    return rc;
}

int64_t rt_steps(const Runtime *rt) { return rt->steps; }

int64_t rt_watermark(const Runtime *rt, int rel, int64_t *late)
{
    *late = 0;
    if (!rt->has_wm || rt->wm_src[rel] < 0)
        return WM_NONE;
    for (int k = 0; k < rt->nl; k++)
        *late += wm_source_late(rt->w[k].ops[rt->wm_src[rel]]);
    return wm_source_get(rt->w[0].ops[rt->wm_src[rel]]);
}
Op *rt_op(Runtime *rt, int w, int node) { return rt->w[w].ops[node]; }

int rt_save(Runtime *rt, int w, int node, BatchList *out)
{
    Op *op = rt->w[w].ops[node];
    return op->save ? op->save(op, out) : 0;
}

int rt_load(Runtime *rt, int w, int node, Batch *const *b, int n, Err *err)
{
    Op *op = rt->w[w].ops[node];
    if (!op->load) {
        if (n == 0)
            return 0;
        return err_set(err, SL_EIO, "checkpoint has state for node %d, which keeps none", node);
    }
    return op->load(op, b, n, err);
}

int rt_load_split(Runtime *rt, int w, int node, Batch *const *const *lists, const int *counts,
                  int nold, Err *err)
{
    Op *op = rt->w[w].ops[node];
    int total = 0;
    for (int k = 0; k < nold; k++)
        total += counts[k];
    if (!op->load_split) {
        if (total == 0)
            return 0;
        return err_set(err, SL_EIO, "checkpoint has state for node %d, which keeps none", node);
    }
    return op->load_split(op, rt->first + w, rt->W, lists, counts, nold, err);
}

bool rt_node_changed(const Runtime *rt, int node) { return rt->changed[node]; }

void rt_clear_changed(Runtime *rt)
{
    memset(rt->changed, 0, sizeof(bool) * (size_t)rt->c->nnodes);
}

bool rt_stateful(Runtime *rt, int node) { return rt->w[0].ops[node]->save != NULL; }

void rt_set_steps(Runtime *rt, int64_t steps) { rt->steps = steps; }

int64_t rt_divzero_node(const Runtime *rt, int node)
{
    int64_t n = 0;
    for (int k = 0; k < rt->nl; k++)
        n += rt->w[k].divzero[node];
    return n;
}

int64_t rt_divzero(const Runtime *rt)
{
    int64_t n = 0;
    for (int k = 0; k < rt->nl; k++)
        n += rt->w[k].ev.ndivzero;
    return n;
}

/*
 * runtime/worker.c - worker threads and the step protocol.
 *
 * Step protocol: the controller fills each worker's input pieces, then
 * rt_step releases workers 1..W-1 through the start barrier, runs worker 0
 * itself, and waits at the done barrier. Each worker resets its step arena,
 * materializes its input chunks (generating datagen rows itself, so
 * generation scales with workers), evaluates every operator in node order
 * and finally lets stateful operators release step memory. Exchanges use a
 * second barrier shared by the W workers; every worker evaluates every
 * operator, so they reach each exchange in the same order.
 */
#include "runtime.h"

#include <pthread.h>

#include "../base/mem.h"

typedef struct Worker {
    struct Runtime *rt;
    int id;
    pthread_t thread;
    Arena *arena;
    Op **ops;
    Piece **input;  /* per relation */
    Chunk **chunks; /* per relation, built each step */
    Err err;
    EvalCtx ev;
} Worker;

struct Runtime {
    const Circuit *c;
    int W;
    Worker *w;
    Exchange **x;           /* per node, or NULL */
    pthread_barrier_t start, done, xbar;
    bool quit;
    int64_t steps;
};

static Chunk *build_input(Worker *w, int rel)
{
    const Relation *r = &w->rt->c->rels[rel];
    const CNode *src = w->rt->c->nodes[r->node];
    Piece *p = w->input[rel];
    int64_t total = 0;
    if (!p)
        return NULL;
    if (!p->next && p->chunk)
        return p->chunk;
    for (Piece *q = p; q; q = q->next)
        total += q->chunk ? q->chunk->n : q->count;
    Chunk *c = chunk_new(w->arena, src->ncol, src->types, total);
    for (Piece *q = p; q; q = q->next) {
        if (!q->chunk) {
            int64_t from = c->n;
            datagen_fill(q->gen, q->plan, q->start, q->count, c, w->arena);
            if (q->negate)
                for (int64_t i = from; i < c->n; i++)
                    c->w[i] = -c->w[i];
            continue;
        }
        Chunk *s = q->chunk;
        size_t k = (size_t)c->n, m = (size_t)s->n;
        for (int j = 0; j < c->ncol; j++) {
            Vec *d = &c->col[j], *v = &s->col[j];
            if (d->i)
                memcpy(d->i + k, v->i, m * sizeof(int64_t));
            else if (d->f)
                memcpy(d->f + k, v->f, m * sizeof(double));
            else
                memcpy(d->s + k, v->s, m * sizeof(Str));
            if (d->nul)
                v->nul ? memcpy(d->nul + k, v->nul, m) : memset(d->nul + k, 0, m);
        }
        memcpy(c->w + k, s->w, m * sizeof(int64_t));
        c->n += s->n;
    }
    return c;
}

static void run_step(Worker *w)
{
    Runtime *rt = w->rt;
    const Circuit *c = rt->c;
    Chunk *ins[8];
    arena_reset(w->arena);
    for (int r = 0; r < c->nrels; r++)
        w->chunks[r] = c->rels[r].is_table ? build_input(w, r) : NULL;
    OpEnv env = {w->id, rt->W, rt->steps, w->arena, &w->ev, w->chunks};
    for (int i = 0; i < c->nnodes; i++) {
        Op *op = w->ops[i];
        const CNode *n = op->node;
        for (int j = 0; j < n->nin && j < 8; j++)
            ins[j] = w->ops[n->in[j]]->out;
        op->out = NULL;
        if (op->eval(op, &env, ins) || !op->out) {
            if (!w->err.code)
                err_set(&w->err, SL_ERUNTIME, "operator %d failed", n->id);
            op->out = op_empty(w->arena, n);
        }
    }
    for (int i = 0; i < c->nnodes; i++)
        if (w->ops[i]->step_end)
            w->ops[i]->step_end(w->ops[i]);
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

Runtime *rt_new(const Circuit *c, int nworkers)
{
    Runtime *rt = sl_calloc(1, sizeof(*rt));
    rt->c = c;
    rt->W = nworkers;
    if (nworkers > 1) {
        pthread_barrier_init(&rt->start, NULL, (unsigned)nworkers);
        pthread_barrier_init(&rt->done, NULL, (unsigned)nworkers);
        pthread_barrier_init(&rt->xbar, NULL, (unsigned)nworkers);
    }
    rt->x = sl_calloc((size_t)c->nnodes, sizeof(Exchange *));
    for (int i = 0; i < c->nnodes; i++) {
        int ch = op_exchange_channels(c->nodes[i]);
        if (ch)
            rt->x[i] = xchg_new(nworkers, ch, nworkers > 1 ? &rt->xbar : NULL);
    }
    rt->w = sl_calloc((size_t)nworkers, sizeof(Worker));
    for (int k = 0; k < nworkers; k++) {
        Worker *w = &rt->w[k];
        w->rt = rt;
        w->id = k;
        w->arena = arena_new(1 << 20);
        w->ev.arena = w->arena;
        w->ev.err = &w->err;
        w->ops = sl_calloc((size_t)c->nnodes, sizeof(Op *));
        for (int i = 0; i < c->nnodes; i++)
            w->ops[i] = op_new(c, c->nodes[i], rt->x[i]);
        w->input = sl_calloc((size_t)(c->nrels + 1), sizeof(Piece *));
        w->chunks = sl_calloc((size_t)(c->nrels + 1), sizeof(Chunk *));
    }
    for (int k = 1; k < nworkers; k++)
        pthread_create(&rt->w[k].thread, NULL, worker_main, &rt->w[k]);
    return rt;
}

void rt_free(Runtime *rt)
{
    if (!rt)
        return;
    if (rt->W > 1) {
        rt->quit = true;
        pthread_barrier_wait(&rt->start);
        for (int k = 1; k < rt->W; k++)
            pthread_join(rt->w[k].thread, NULL);
        pthread_barrier_destroy(&rt->start);
        pthread_barrier_destroy(&rt->done);
        pthread_barrier_destroy(&rt->xbar);
    }
    for (int k = 0; k < rt->W; k++) {
        Worker *w = &rt->w[k];
        for (int i = 0; i < rt->c->nnodes; i++)
            op_free(w->ops[i]);
        sl_free(w->ops);
        sl_free(w->input);
        sl_free(w->chunks);
        arena_free(w->arena);
    }
    for (int i = 0; i < rt->c->nnodes; i++)
        xchg_free(rt->x[i]);
    sl_free(rt->x);
    sl_free(rt->w);
    sl_free(rt);
}

int rt_workers(const Runtime *rt) { return rt->W; }

void rt_set_input(Runtime *rt, int w, int rel, Piece *list) { rt->w[w].input[rel] = list; }

int rt_step(Runtime *rt, Err *err)
{
    if (rt->W > 1)
        pthread_barrier_wait(&rt->start);
    run_step(&rt->w[0]);
    if (rt->W > 1)
        pthread_barrier_wait(&rt->done);
    rt->steps++;
    int rc = 0;
    for (int k = 0; k < rt->W; k++) {
        Worker *w = &rt->w[k];
        for (int r = 0; r < rt->c->nrels; r++)
            w->input[r] = NULL;
        if (w->err.code && !rc) {
            rc = SL_ERUNTIME;
            err_set(err, SL_ERUNTIME, "%s", w->err.msg);
        }
    }
    return rc;
}

int64_t rt_steps(const Runtime *rt) { return rt->steps; }
Op *rt_op(Runtime *rt, int w, int node) { return rt->w[w].ops[node]; }

int64_t rt_divzero(const Runtime *rt)
{
    int64_t n = 0;
    for (int k = 0; k < rt->W; k++)
        n += rt->w[k].ev.ndivzero;
    return n;
}

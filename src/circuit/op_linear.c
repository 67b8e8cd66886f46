/*
 * circuit/op_linear.c - stateless operators. Linear, so each is applied to
 * the changes directly: source (this worker's share of a table's input),
 * map (filter then project, over a selection vector: survivors are not
 * copied before projection), union (concatenation) and negate.
 */
#include "op.h"

/* Sources are fed by the worker a morsel at a time (runtime/worker.c);
   evaluated on their own they have nothing to give. */
static int eval_source(Op *op, OpEnv *env, Chunk **in)
{
    op->out = op_empty(env->arena, op->node);
    return 0;
}

/* The constant row: on worker 0 in the first step, with weight 1. */
static int eval_const(Op *op, OpEnv *env, Chunk **in)
{
    Chunk *c = chunk_new(env->arena, 0, NULL, 1);
    if (env->step == 0 && env->worker == 0) {
        c->w[0] = 1;
        c->n = 1;
    }
    op->out = c;
    return 0;
}

static int eval_map(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    Chunk *src = in[0];
    int32_t *sel = NULL;
    int64_t m = src->n;
    if (n->filter && src->n) {
        sel = arena_alloc(env->arena, sizeof(int32_t) * (size_t)src->n);
        if (expr_filter(n->filter, src, NULL, src->n, env->ev, sel, &m))
            return SL_ERUNTIME;
    }
    Chunk *out = arena_alloc(env->arena, sizeof(*out));
    out->ncol = n->ncol;
    out->n = out->cap = m;
    out->col = arena_alloc(env->arena, sizeof(Vec) * (size_t)(n->ncol ? n->ncol : 1));
    for (int j = 0; j < n->ncol; j++) {
        if (m == 0) {
            vec_init(&out->col[j], env->arena, n->types[j], 0);
            continue;
        }
        if (expr_eval(n->proj[j], src, sel, m, env->ev, &out->col[j]))
            return SL_ERUNTIME;
        out->col[j].t = n->types[j];
        if (n->types[j].nullable && !out->col[j].nul)
            out->col[j].nul = arena_zalloc(env->arena, (size_t)m);
        else if (!n->types[j].nullable)
            out->col[j].nul = NULL;
    }
    if (sel) {
        out->w = arena_alloc(env->arena, sizeof(int64_t) * (size_t)(m ? m : 1));
        for (int64_t i = 0; i < m; i++)
            out->w[i] = src->w[sel[i]];
    } else {
        out->w = src->w;
    }
    op->out = out;
    return 0;
}

static int eval_union(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    int64_t total = 0;
    for (int i = 0; i < n->nin; i++)
        total += in[i]->n;
    Chunk *out = chunk_new(env->arena, n->ncol, n->types, total);
    for (int i = 0; i < n->nin; i++) {
        Chunk *s = in[i];
        size_t k = (size_t)out->n, m = (size_t)s->n;
        for (int j = 0; j < n->ncol; j++) {
            Vec *d = &out->col[j], *v = &s->col[j];
            if (d->i)
                memcpy(d->i + k, v->i, m * sizeof(int64_t));
            else if (d->f)
                memcpy(d->f + k, v->f, m * sizeof(double));
            else if (d->x)
                memcpy(d->x + k, v->x, m * sizeof(i128));
            else
                memcpy(d->s + k, v->s, m * sizeof(Str));
            if (d->nul) {
                if (v->nul)
                    memcpy(d->nul + k, v->nul, m);
                else
                    memset(d->nul + k, 0, m);
            }
        }
        memcpy(out->w + k, s->w, m * sizeof(int64_t));
        out->n += s->n;
    }
    op->out = out;
    return 0;
}

static int eval_negate(Op *op, OpEnv *env, Chunk **in)
{
    Chunk *s = in[0];
    Chunk *out = arena_alloc(env->arena, sizeof(*out));
    *out = *s;
    out->w = arena_alloc(env->arena, sizeof(int64_t) * (size_t)(s->n ? s->n : 1));
    for (int64_t i = 0; i < s->n; i++)
        out->w[i] = -s->w[i];
    op->out = out;
    return 0;
}

int op_linear_init(Op *op)
{
    switch (op->node->k) {
    case OPK_SOURCE: op->eval = eval_source; break;
    case OPK_CONST: op->eval = eval_const; break;
    case OPK_MAP: op->eval = eval_map; break;
    case OPK_UNION: op->eval = eval_union; break;
    default: op->eval = eval_negate; break;
    }
    return 0;
}

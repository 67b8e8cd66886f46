/*
 * circuit/op.c - operator instances: construction by node kind, and the
 * small helpers every operator uses (empty chunks, growable output chunks).
 */
#include "op.h"

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/trace.h"
#include "watermark.h"

int op_shard_channels(const CNode *n)
{
    switch (n->k) {
    case OPK_AGG:
    case OPK_DISTINCT:
        return 1;
    case OPK_JOIN:
        return 4; /* each side, then each side's hot-key rows (op_join.c) */
    case OPK_UPSERT:
        return 1;
    case OPK_TOPK:
    case OPK_WINDOW:
    case OPK_ASOF:
        return 1;
    case OPK_FIXPOINT:
        return n->nin + 1; /* one per input (and one more: a shard even without) */
    default:
        return 0;
    }
}

Op *op_new(const Circuit *c, const CNode *n, Shard *sh)
{
    Op *op = sl_calloc(1, sizeof(*op));
    op->node = n;
    op->circuit = c;
    op->sh = sh;
    switch (n->k) {
    case OPK_SOURCE:
        op_linear_init(op);
        if (c->rels[n->rel].is_table && c->rels[n->rel].wm_col >= 0)
            wm_source_attach(op); /* the watermark is its state */
        break;
    case OPK_CONST:
    case OPK_MAP:
    case OPK_UNION:
    case OPK_NEGATE:
    case OPK_UNNEST:
        op_linear_init(op);
        break;
    case OPK_AGG:
        op_agg_init(op);
        break;
    case OPK_JOIN:
        op_join_init(op);
        break;
    case OPK_DISTINCT:
        op_distinct_init(op);
        break;
    case OPK_SINK:
        op_sink_init(op);
        break;
    case OPK_UPSERT:
        op_upsert_init(op);
        break;
    case OPK_TOPK:
        op_topk_init(op);
        break;
    case OPK_WINDOW:
        op_window_init(op);
        break;
    case OPK_FINAL:
        op_final_init(op);
        break;
    case OPK_ASOF:
        op_asof_init(op);
        break;
    case OPK_TEMPORAL:
        op_temporal_init(op);
        break;
    case OPK_FIXPOINT:
        op_fixpoint_init(op);
        break;
    }
    return op;
}

void op_free(Op *op)
{
    if (!op)
        return;
    if (op->free)
        op->free(op);
    sl_free(op);
}

void batchlist_add(BatchList *l, Batch *b)
{
    *VEC_PUSH(l->b, l->n, l->cap) = b;
}

void batchlist_free(BatchList *l)
{
    for (int i = 0; i < l->n; i++)
        batch_unref(l->b[i]);
    sl_free(l->b);
    *l = (BatchList){0};
}

void op_save_trace(const Trace *t, BatchList *out)
{
    for (int i = 0; i < trace_nbatches(t); i++) {
        Batch *b = trace_batch(t, i);
        batch_ref(b);
        batchlist_add(out, b);
    }
}

void op_load_trace(Trace *t, Batch *const *b, int n)
{
    for (int i = 0; i < n; i++) {
        batch_ref(b[i]);
        trace_restore_take(t, b[i]);
    }
}

Batch *op_owned_sum(Batch *const *b, int n, int w, int W, bool global)
{
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < n; i++)
        for (int64_t t = 0; t < b[i]->n; t++) {
            const uint8_t *k = batch_key(b[i], t);
            size_t kn = batch_klen(b[i], t);
            if (global ? w != 0 : op_route(k, kn, W) != w)
                continue;
            bb_add(bb, k, kn, batch_val(b[i], t), batch_vlen(b[i], t), b[i]->w[t]);
        }
    return bb_finish(bb);
}

Batch *op_header(const char *const *names, const int64_t *counts, int n)
{
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < n; i++)
        bb_add(bb, (const uint8_t *)names[i], strlen(names[i]), NULL, 0, counts[i]);
    return bb_finish(bb);
}

Chunk *op_empty(Arena *a, const CNode *n)
{
    return chunk_new(a, n->ncol, n->types, 0);
}

void cout_init(ChunkOut *o, Arena *a, int ncol, const SqlType *types, int64_t cap)
{
    o->a = a;
    o->ncol = ncol;
    o->types = types;
    o->c = chunk_new(a, ncol, types, cap > 16 ? cap : 16);
}

int64_t cout_row(ChunkOut *o) { return cout_rows(o, 1); }

int64_t cout_rows(ChunkOut *o, int64_t rows)
{
    Chunk *c = o->c;
    if (c->n + rows > c->cap) {
        int64_t cap = c->cap * 2;
        while (cap < c->n + rows)
            cap *= 2;
        Chunk *d = chunk_new(o->a, o->ncol, o->types, cap);
        for (int j = 0; j < c->ncol; j++) {
            Vec *s = &c->col[j], *t = &d->col[j];
            size_t n = (size_t)c->n;
            if (s->i)
                memcpy(t->i, s->i, n * sizeof(int64_t));
            if (s->f)
                memcpy(t->f, s->f, n * sizeof(double));
            if (s->s)
                memcpy(t->s, s->s, n * sizeof(Str));
            if (s->x)
                memcpy(t->x, s->x, n * sizeof(i128));
            if (s->nul)
                memcpy(t->nul, s->nul, n);
        }
        memcpy(d->w, c->w, (size_t)c->n * sizeof(int64_t));
        d->n = c->n;
        o->c = c = d;
    }
    int64_t first = c->n;
    c->n += rows;
    return first;
}

void op_mem(Op *op, OpMem *m)
{
    memset(m, 0, sizeof(*m));
    if (op->mem)
        op->mem(op, m);
}

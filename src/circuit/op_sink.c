/*
 * circuit/op_sink.c - the end of a relation's stream: counts its changes,
 * keeps its contents when materialized (row encoding -> integral weight),
 * and collects each step's changes for output connectors. The controller
 * reads these between steps (op.h).
 */
#include "op.h"

#include "../base/mem.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

typedef struct SinkSt {
    HMap *mat;      /* materialized contents, or NULL */
    Buf changes;    /* this step's changes as xrec records */
    bool outputs;   /* collect changes: output connectors or watchers */
    bool conns;     /* the relation has output connectors */
    int watchers;   /* op_sink_watch() on minus off */
    int64_t count, net;
    Buf kb;
} SinkSt;

static void begin_sink(Op *op, OpEnv *env)
{
    SinkSt *s = op->st;
    (void)env;
    buf_reset(&s->changes);
}

static int push_sink(Op *op, OpEnv *env, int input, Chunk *c)
{
    SinkSt *s = op->st;
    (void)env;
    (void)input;
    for (int64_t r = 0; r < c->n; r++) {
        int64_t w = c->w[r];
        s->count += w < 0 ? -w : w;
        s->net += w;
        if (!s->mat && !s->outputs)
            continue;
        buf_reset(&s->kb);
        key_encode_row(c, r, &s->kb);
        if (s->mat) {
            bool created;
            uint64_t h = sl_hash(s->kb.p, s->kb.n);
            int64_t *e = hmap_upsert(s->mat, s->kb.p, s->kb.n, h, &created);
            *e += w;
            if (*e == 0)
                hmap_delete(s->mat, s->kb.p, s->kb.n, h);
        }
        if (s->outputs)
            xrec_put(&s->changes, s->kb.p, (uint32_t)s->kb.n, NULL, 0, w);
    }
    return 0;
}

static int finish_sink(Op *op, OpEnv *env)
{
    op->out = op_empty(env->arena, op->node); /* nothing reads past a sink */
    return 0;
}

static void free_sink(Op *op)
{
    SinkSt *s = op->st;
    if (s->mat)
        hmap_free(s->mat);
    buf_free(&s->changes);
    buf_free(&s->kb);
    sl_free(s);
}

int op_sink_init(Op *op)
{
    SinkSt *s = sl_calloc(1, sizeof(*s));
    const Relation *r = &op->circuit->rels[op->node->rel];
    if (r->materialized)
        s->mat = hmap_new(sizeof(int64_t));
    s->conns = !r->is_table && r->connectors && cJSON_GetArraySize(r->connectors) > 0;
    s->outputs = s->conns;
    op->st = s;
    op->eval = op_eval_streamed;
    op->begin = begin_sink;
    op->push = push_sink;
    op->finish = finish_sink;
    op->free = free_sink;
    return 0;
}

HMap *op_sink_contents(Op *op) { return ((SinkSt *)op->st)->mat; }
Buf *op_sink_changes(Op *op)
{
    SinkSt *s = op->st;
    return s->outputs ? &s->changes : NULL;
}
int64_t op_sink_count(Op *op) { return ((SinkSt *)op->st)->count; }
int64_t op_sink_net(Op *op) { return ((SinkSt *)op->st)->net; }

void op_sink_watch(Op *op, bool on)
{
    SinkSt *s = op->st;
    s->watchers += on ? 1 : -1;
    s->outputs = s->conns || s->watchers > 0;
}

size_t op_sink_bytes(Op *op)
{
    SinkSt *s = op->st;
    return (s->mat ? hmap_bytes(s->mat) : 0) + s->changes.cap;
}

/*
 * circuit/op_sink.c - the end of a relation's stream: counts its changes,
 * keeps its contents when materialized or a table's input is retained
 * (rel_keeps: row encoding -> integral weight),
 * and collects each step's changes for output connectors. The controller
 * reads these between steps (op.h).
 *
 * Spilling (zset/spill.h, registered when the runtime tracks traces):
 * between steps the budget may move the map's entries into the cold
 * trace, as one sorted run of (row, no value, weight), which spills to
 * files like any trace run. The contents are then the map plus cold (the
 * map holds the changes since, with any sign), and a step never reads
 * cold: it only adds to the map. Readers (op_sink_rows) walk cold in row
 * order, streaming, beside the map's entries sorted, and get every row
 * with its summed weight; the cold trace's merges cancel what a later
 * eviction retracts. A restored sink starts with its contents in cold.
 */
#include "op.h"
#include "cold.h"

#include "../base/mem.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "../zset/trace.h"
#include "../zset/xrec.h"

typedef struct SinkSt {
    HMap *mat;      /* materialized contents, or NULL */
    Buf changes;    /* this step's changes as xrec records */
    bool outputs;   /* collect changes: output connectors or watchers */
    bool conns;     /* the relation has output connectors */
    int watchers;   /* op_sink_watch() on minus off */
    int64_t count, net;
    Buf kb;
    Batch *saved;   /* the contents as of the last save(), while unchanged */
    Trace *cold;    /* contents moved out by the budget (with mat), or NULL */
    bool owner;     /* registered with zset/spill.h */
} SinkSt;

static bool has_cold(const SinkSt *s) { return s->cold && trace_nbatches(s->cold) > 0; }

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
            if (s->saved) {
                batch_unref(s->saved);
                s->saved = NULL;
            }
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

/* The inverse of push_sink for the same chunk: the counters go back and
   each row's weight is taken out of the contents again (an entry whose
   weight returns to zero is deleted, as it was absent before). */
static void unpush_sink(Op *op, OpEnv *env, int input, Chunk *c)
{
    SinkSt *s = op->st;
    (void)env;
    (void)input;
    for (int64_t r = 0; r < c->n; r++) {
        int64_t w = c->w[r];
        s->count -= w < 0 ? -w : w;
        s->net -= w;
        if (!s->mat)
            continue;
        buf_reset(&s->kb);
        key_encode_row(c, r, &s->kb);
        bool created;
        uint64_t h = sl_hash(s->kb.p, s->kb.n);
        int64_t *e = hmap_upsert(s->mat, s->kb.p, s->kb.n, h, &created);
        *e -= w;
        if (*e == 0)
            hmap_delete(s->mat, s->kb.p, s->kb.n, h);
    }
    if (s->outputs)
        buf_reset(&s->changes);
}

static int finish_sink(Op *op, OpEnv *env)
{
    op->out = op_empty(env->arena, op->node); /* nothing reads past a sink */
    return 0;
}

/* The map: what spilling can move out. */
static size_t hot_bytes(const SinkSt *s)
{
    size_t saved = s->saved ? batch_bytes(s->saved) : 0;
    if (!s->mat || !hmap_count(s->mat)) /* (an empty map's table: nothing to move out) */
        return saved;
    return hmap_bytes(s->mat) + saved;
}

/* Materialized contents (the map and cold), this step's changes, the
   checkpoint copy. */
static void mem_sink(Op *op, OpMem *m)
{
    SinkSt *s = op->st;
    size_t hot = hot_bytes(s);
    m->rows += s->mat ? hmap_count(s->mat) : 0;
    m->bytes += (s->mat ? hmap_bytes(s->mat) : 0) + (s->saved ? batch_bytes(s->saved) : 0) +
                s->changes.cap + s->kb.cap;
    if (s->owner) /* the contents spill (into cold) */
        m->trace_bytes += hot;
    if (s->cold) {
        m->rows += trace_count(s->cold); /* (a row changed since its spill counts twice) */
        cold_mem(s->cold, m);
    }
}

/* Spilling (see the top): the map's entries go to cold, all of them. */
static size_t own_resident(const void *o) { return hot_bytes(o); }
static size_t own_largest(const void *o) { return hot_bytes(o); }

static bool put_all(void *ctx, BatchBuilder *bb, const uint8_t *k, size_t kn, void *pl)
{
    (void)ctx;
    bb_add(bb, k, kn, NULL, 0, *(int64_t *)pl);
    return true;
}

static int own_evict(void *o, Err *err)
{
    (void)err;
    SinkSt *s = o;
    cold_evict(s->cold, &s->mat, sizeof(int64_t), &s->saved, put_all, NULL);
    return 0;
}

static const SpillOwner sink_owner = {own_resident, own_largest, own_evict, cold_compact};

/* The map's entries as one sorted batch (weights 0 are never in it). */
static Batch *hot_batch(const SinkSt *s)
{
    BatchBuilder *bb = bb_new();
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->mat, &it, &k, &kn, &pl))
        bb_add(bb, k, kn, NULL, 0, *(int64_t *)pl);
    return bb_finish(bb);
}

/* op_sink_rows over cold: cold's rows in order, the map's sorted entries
   merged in. */
typedef struct RowsWalk {
    const Batch *hot;
    int64_t i;
    OpRowFn fn;
    void *arg;
} RowsWalk;

static int row_cmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static void walk_cold(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                      int64_t w)
{
    RowsWalk *x = ctx;
    (void)v, (void)vn;
    const Batch *h = x->hot;
    int c = -1;
    for (; x->i < h->n && (c = row_cmp(batch_key(h, x->i), batch_klen(h, x->i), k, kn)) < 0; x->i++)
        x->fn(x->arg, batch_key(h, x->i), batch_klen(h, x->i), h->w[x->i]);
    if (x->i < h->n && c == 0)
        w += h->w[x->i++];
    if (w != 0)
        x->fn(x->arg, k, kn, w);
}

void op_sink_rows(Op *op, OpRowFn fn, void *arg)
{
    SinkSt *s = op->st;
    if (!s->mat)
        return;
    if (!has_cold(s)) {
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(s->mat, &it, &k, &kn, &pl))
            fn(arg, k, kn, *(int64_t *)pl);
        return;
    }
    RowsWalk x = {hot_batch(s), 0, fn, arg};
    trace_scan(s->cold, walk_cold, &x);
    for (; x.i < x.hot->n; x.i++)
        fn(arg, batch_key(x.hot, x.i), batch_klen(x.hot, x.i), x.hot->w[x.i]);
    batch_unref((Batch *)x.hot);
}

static void free_sink(Op *op)
{
    SinkSt *s = op->st;
    if (s->mat)
        hmap_free(s->mat);
    if (s->owner)
        spill_unregister(s);
    if (s->cold)
        trace_free(s->cold);
    buf_free(&s->changes);
    buf_free(&s->kb);
    if (s->saved)
        batch_unref(s->saved);
    sl_free(s);
}

static void add_row(void *arg, const uint8_t *row, size_t n, int64_t w)
{
    bb_add(arg, row, n, NULL, 0, w);
}

/* State: batch 0 holds the counters ("count", "net" as keys, the values as
   weights; zeros vanish), batch 1 the materialized contents (row encoding,
   weight), built from the hash map once and kept while unchanged. */
static int save_sink(Op *op, BatchList *out)
{
    SinkSt *s = op->st;
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"count", 5, NULL, 0, s->count);
    bb_add(bb, (const uint8_t *)"net", 3, NULL, 0, s->net);
    batchlist_add(out, bb_finish(bb));
    if (!s->mat)
        return 0;
    if (has_cold(s)) { /* not kept: it would hold the cold contents in memory */
        if (!hmap_count(s->mat) && trace_nbatches(s->cold) == 1) {
            Batch *b = trace_batch(s->cold, 0); /* (a restored sink, or all evicted) */
            batch_ref(b);
            batchlist_add(out, b);
            return 0;
        }
        bb = bb_new();
        op_sink_rows(op, add_row, bb);
        batchlist_add(out, bb_finish(bb));
        return 0;
    }
    if (!s->saved)
        s->saved = hot_batch(s);
    batch_ref(s->saved);
    batchlist_add(out, s->saved);
    return 0;
}

static int load_sink(Op *op, Batch *const *b, int n, Err *err)
{
    SinkSt *s = op->st;
    if (n != (s->mat ? 2 : 1))
        return err_set(err, SL_EIO, "sink state has %d batches, expected %d", n, s->mat ? 2 : 1);
    for (int64_t i = 0; i < b[0]->n; i++) {
        size_t kn = batch_klen(b[0], i);
        if (kn == 5 && !memcmp(batch_key(b[0], i), "count", 5))
            s->count = b[0]->w[i];
        else if (kn == 3 && !memcmp(batch_key(b[0], i), "net", 3))
            s->net = b[0]->w[i];
        else
            return err_set(err, SL_EIO, "sink state has an unknown counter");
    }
    if (!s->mat)
        return 0;
    const Batch *m = b[1];
    if (s->owner && m->n > 0) { /* the contents start cold: the budget spills them */
        batch_ref(b[1]);
        trace_restore_take(s->cold, b[1]);
        return 0;
    }
    hmap_reserve(s->mat, m->n);
    enum { AHEAD = 16 };
    uint64_t hs[AHEAD];
    for (int64_t i = 0; i < m->n && i < AHEAD; i++) {
        hs[i] = sl_hash(batch_key(m, i), batch_klen(m, i));
        hmap_prefetch(s->mat, hs[i]);
    }
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i);
        size_t kn = batch_klen(m, i);
        uint64_t h = hs[i % AHEAD];
        if (i + AHEAD < m->n) { /* the slots of later keys are on their way */
            hs[i % AHEAD] = sl_hash(batch_key(m, i + AHEAD), batch_klen(m, i + AHEAD));
            hmap_prefetch(s->mat, hs[i % AHEAD]);
        }
        bool created;
        int64_t *e = hmap_upsert(s->mat, k, kn, h, &created);
        *e = m->w[i];
    }
    batch_ref(b[1]);
    s->saved = b[1];
    return 0;
}

/* Another worker count: the counters on worker 0, the contents spread by
   row (any split of a sink's contents is fine: readers sum the workers). */
static int load_split_sink(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                           int nold, Err *err)
{
    SinkSt *s = op->st;
    int want = s->mat ? 2 : 1;
    Batch **ctr = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    Batch **con = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    int rc = 0;
    for (int k = 0; k < nold; k++) {
        if (counts[k] != want) {
            rc = err_set(err, SL_EIO, "sink state has %d batches, expected %d", counts[k], want);
            break;
        }
        ctr[k] = lists[k][0];
        con[k] = s->mat ? lists[k][1] : NULL;
    }
    if (!rc) {
        Batch *b[2] = {op_owned_sum(ctr, nold, w, W, true),
                       s->mat ? op_owned_sum(con, nold, w, W, false) : NULL};
        rc = load_sink(op, b, want, err);
        batch_unref(b[0]);
        if (b[1])
            batch_unref(b[1]);
    }
    sl_free(ctr);
    sl_free(con);
    return rc;
}

int op_sink_init(Op *op)
{
    SinkSt *s = sl_calloc(1, sizeof(*s));
    const Relation *r = &op->circuit->rels[op->node->rel];
    if (rel_keeps(r)) {
        s->mat = hmap_new(sizeof(int64_t));
        s->cold = cold_new(s, &sink_owner, &s->owner);
    }
    s->conns = !r->is_table && r->connectors && cJSON_GetArraySize(r->connectors) > 0;
    s->outputs = s->conns;
    op->st = s;
    op->begin = begin_sink;
    op->push = push_sink;
    op->unpush = unpush_sink;
    op->finish = finish_sink;
    op->free = free_sink;
    op->save = save_sink;
    op->load = load_sink;
    op->load_split = load_split_sink;
    op->mem = mem_sink;
    return 0;
}

bool op_sink_keeps(Op *op) { return ((SinkSt *)op->st)->mat != NULL; }
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
    return (s->mat ? hmap_bytes(s->mat) : 0) + s->changes.cap + (s->cold ? trace_bytes(s->cold) : 0);
}

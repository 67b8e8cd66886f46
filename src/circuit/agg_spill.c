/*
 * circuit/agg_spill.c - an aggregate's cold groups: how GROUP BY state
 * larger than the memory budget spills (docs/memory.md, "What spills").
 *
 * How data reaches it: op_agg.c keeps the groups a step touches in a hash
 * map. It registers here, and between steps the budget (zset/spill.h)
 * may ask this owner to spill: the aggregate's evict hook moves the groups
 * out of its map (the ones the latest step did not touch first) and hands
 * them over as one sorted run (agg_cold_put), which becomes a run of the
 * cold trace and spills to files like any trace run, merged with the
 * trace's earlier runs. A step that touches groups it does not have in its
 * map looks them up here in key order (agg_cold_take, one cursor, so each
 * spilled block is read at most once per step); a group read back is
 * retracted from the trace (weight -1) when the step ends, and stays when
 * the step is undone. Checkpoints save the cold tuples among the groups
 * (agg_cold_add_all: the same layout), a restore whose groups do not fit
 * puts the checkpoint's batch of groups straight in and spills it
 * (agg_cold_restore), the bootstrap of a view over the
 * aggregate walks their output rows (agg_cold_rows), and watermarks forget
 * closed groups here too (agg_cold_forget).
 *
 * The output never changes: a cold group keeps its last output row with
 * it, and its accumulators add to what the step folded.
 */
#include "agg_spill.h"

#include <stdlib.h>
#include <string.h>

#include "../base/mem.h"
#include "../zset/spill.h"
#include "cold.h"
#include "watermark.h"

struct AggCold {
    Trace *t;              /* the cold groups, weight 1 (retractions -1) */
    size_t partsz;
    int64_t n;             /* groups in t (committed) */
    BatchBuilder *back;    /* this step's groups read back (weight -1), or NULL */
    int64_t nback;
    Batch *rows;           /* agg_cold_rows' groups, kept until the step ends */
    ValWs w;               /* agg_cold_take's tuples of one key (reused) */
    void *agg;
    AggColdHooks h;
    bool owner;            /* registered with zset/spill.h */
};

static size_t own_resident(const void *o)
{
    const AggCold *c = o;
    return c->h.hot_bytes(c->agg);
}

static int own_evict(void *o, Err *err)
{
    (void)err;
    AggCold *c = o;
    c->h.evict(c->agg, c);
    return 0;
}

static const SpillOwner cold_owner = {own_resident, own_resident, own_evict, cold_compact};

AggCold *agg_cold_new(size_t partsz, void *agg, const AggColdHooks *h)
{
    AggCold *c = sl_calloc(1, sizeof(*c));
    c->partsz = partsz;
    c->agg = agg;
    c->h = *h;
    c->t = cold_new(c, &cold_owner, &c->owner);
    return c;
}

void agg_cold_free(AggCold *c)
{
    if (!c)
        return;
    agg_cold_step_end(c);
    if (c->owner)
        spill_unregister(c);
    trace_free(c->t);
    sl_free(c->w.v);
    sl_free(c);
}

int64_t agg_cold_count(const AggCold *c) { return c->n; }

void agg_cold_encode(Buf *v, const void *part, size_t partsz, const uint8_t *out, uint32_t outlen)
{
    buf_append(v, part, partsz);
    buf_putc(v, out ? 1 : 0);
    if (out)
        buf_append(v, out, outlen);
}

bool agg_cold_valid(const uint8_t *v, size_t vn, size_t partsz)
{
    return vn >= partsz + 1 && v[partsz] <= 1 && (v[partsz] || vn == partsz + 1) &&
           vn - partsz - 1 <= UINT32_MAX;
}

void agg_cold_put(AggCold *c, Batch *run, int64_t n)
{
    trace_insert_take(c->t, run);
    trace_step_end(c->t); /* between steps: nothing to roll back */
    c->n += n;
}

int agg_cold_restore(AggCold *c, Batch *m, int node, bool *taken, Err *err)
{
    SpillConf conf;
    spill_conf(&conf);
    *taken = false;
    if (!c->owner || !conf.limit || batch_bytes(m) <= conf.limit / 8 || c->n)
        return 0;
    for (int64_t i = 0; i < m->n; i++) {
        size_t kn = batch_klen(m, i);
        if (m->w[i] != 1 || !agg_cold_valid(batch_val(m, i), batch_vlen(m, i), c->partsz))
            return err_set(err, SL_EIO, "aggregate state (node %d) has a malformed group", node);
        /* (a batch is sorted: a key twice is two neighbours) */
        if (i && kn == batch_klen(m, i - 1) && !memcmp(batch_key(m, i), batch_key(m, i - 1), kn))
            return err_set(err, SL_EIO, "aggregate state (node %d) has a group twice", node);
    }
    batch_ref(m);
    trace_restore_take(c->t, m);
    c->n = m->n;
    *taken = true;
    /* to files at once, so that the restored state fits before the first
       step (when writing fails, the run stays in memory: the budget tries
       again after the step, and reports a failure) */
    Err e = {0};
    trace_spill_largest(c->t, &e);
    return 0;
}

TraceCursor *agg_cold_cursor(AggCold *c) { return c->n ? trace_cursor_new(c->t) : NULL; }

bool agg_cold_take(AggCold *c, TraceCursor *cur, const uint8_t *k, size_t kn, const uint8_t **vp,
                   size_t *vnp)
{
    if (!cur)
        return false;
    ValWs w = c->w;
    w.n = 0;
    trace_cursor_for_key(cur, k, kn, op_valw_add, &w);
    c->w = w;
    /* net weights: a tuple read back earlier cancels with its retraction */
    const uint8_t *v = NULL;
    size_t vn = 0;
    int64_t net = 0;
    for (int64_t a = 0; a < w.n; a++) {
        int64_t x = 0;
        for (int64_t b = 0; b < w.n; b++)
            if (w.v[b].n == w.v[a].n && !memcmp(w.v[b].v, w.v[a].v, w.v[a].n))
                x += w.v[b].w;
        if (x > 0) {
            if (v && (vn != w.v[a].n || memcmp(v, w.v[a].v, vn)))
                net = 2; /* two live tuples: broken */
            v = w.v[a].v;
            vn = w.v[a].n;
            net = net ? net : x;
        }
    }
    if (!v)
        return false;
    if (!ALWAYS(net == 1 && agg_cold_valid(v, vn, c->partsz)))
        sl_panic("aggregate: a spilled group is malformed");
    if (!c->back)
        c->back = bb_new();
    bb_add(c->back, k, kn, v, vn, -1);
    c->nback++;
    *vp = v;
    *vnp = vn;
    return true;
}

void agg_cold_step_end(AggCold *c)
{
    if (c->back) { /* the groups read back leave the cold trace */
        trace_insert_take(c->t, bb_finish(c->back));
        c->back = NULL;
        c->n -= c->nback;
        c->nback = 0;
    }
    trace_step_end(c->t);
    if (c->rows) {
        batch_unref(c->rows);
        c->rows = NULL;
    }
}

void agg_cold_undo(AggCold *c)
{
    if (c->back) { /* the groups read back stay cold */
        batch_unref(bb_finish(c->back));
        c->back = NULL;
        c->nback = 0;
    }
}

void agg_cold_add_all(const AggCold *c, BatchBuilder *bb)
{
    for (int i = 0; c->n && i < trace_nbatches(c->t); i++) {
        const Batch *b = trace_batch(c->t, i);
        for (int64_t t = 0; t < b->n; t++)
            bb_add(bb, batch_key(b, t), batch_klen(b, t), batch_val(b, t), batch_vlen(b, t),
                   b->w[t]);
    }
}

void agg_cold_rows(AggCold *c, void (*fn)(void *arg, const uint8_t *row, size_t n), void *arg)
{
    if (!c->n)
        return;
    BatchBuilder *bb = bb_new();
    agg_cold_add_all(c, bb);
    Batch *b = bb_finish(bb);
    for (int64_t t = 0; t < b->n; t++) {
        const uint8_t *v = batch_val(b, t);
        size_t vn = batch_vlen(b, t);
        if (b->w[t] > 0 && vn > c->partsz && v[c->partsz])
            fn(arg, v + c->partsz + 1, vn - c->partsz - 1);
    }
    if (c->rows) /* (rows handed out point into it until the step ends) */
        batch_unref(c->rows);
    c->rows = b;
}

int64_t agg_cold_forget(AggCold *c, const SqlType *types, int col, int64_t bound)
{
    if (!c->n)
        return 0;
    /* (reads the cold groups back whole: docs/memory.md) */
    int64_t n = wm_trace_forget(c->t, types, col, bound);
    c->n -= n;
    return n;
}

void agg_cold_mem(const AggCold *c, size_t hot, OpMem *m)
{
    m->rows += c->n;
    if (c->owner) /* the groups spill (into the cold trace) */
        m->trace_bytes += hot;
    cold_mem(c->t, m);
}

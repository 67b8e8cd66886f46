/*
 * circuit/op_upsert.c - PRIMARY KEY semantics for a table's input
 * (Feldera's): an insertion replaces the row with the same key (emitting
 * -old +new), a deletion removes the row with the key whatever its other
 * values (and is ignored when the key is absent). The table's current rows
 * are kept by key, sharded across workers by the key's hash.
 *
 * Changes are applied in input order: each worker receives its inputs in
 * source order and reads the records routed to it in worker order, which
 * is the order the controller split the step's rows in.
 *
 * Rollback (undo): every change of the step is logged as (key, the row
 * before) and every encoding allocated in the step is listed; undo()
 * restores the rows in reverse order, frees what the step allocated and
 * forgets the retired encodings instead of freeing them. step_end() (the
 * step stands) frees the retired ones and clears the logs.
 *
 * Checkpoint: one batch of (key encoding, row encoding, weight 1), one
 * tuple per current row, built from the key index and kept while no row
 * changes, so checkpoints of an unchanged table share it.
 *
 * Spilling (zset/spill.h, registered when the runtime tracks traces),
 * as an aggregate's groups (op_agg.c): between steps the budget may move
 * the rows out of the map into the cold trace, as one sorted run of the
 * checkpoint's layout (key, row, 1), which spills to files like any trace
 * run. Rows the latest step did not touch go first; when every row was
 * touched, all go. A key is then in the map or in cold, never both. Before
 * a step applies its records, the keys it touches that are not in the map
 * are read back from cold in key order with one cursor (each spilled block
 * read at most once per step) into the map; the step's end retracts them
 * from cold (weight -1), and undo drops them from the map again. A
 * restored table starts with its rows in cold (the checkpoint's batch as
 * the trace's one run: in memory until the budget spills it).
 */
#include "op.h"
#include "cold.h"

#include <stdlib.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "../zset/trace.h"

typedef struct Row {
    uint8_t *enc;     /* current row's encoding (owned), or NULL */
    uint32_t n;
    uint32_t touched; /* the step that last touched it (low 32 bits) */
} Row;

typedef struct UpsertSt {
    HMap *rows;        /* key encoding -> Row */
    uint8_t **garbage; /* replaced encodings, freed at step end */
    int64_t ngarbage, capg;
    uint8_t **made;    /* encodings allocated this step (freed by undo) */
    int64_t nmade, capm;
    Buf undo;          /* this step's changes: u32 kn, key, old enc pointer, u32 old n */
    Batch *saved;      /* the rows as of the last save(), while unchanged */
    /* spilling: rows moved out of the map, (key, row, 1) in a trace that
       spills like any other; a row read back is retracted (weight -1)
       when its step ends */
    Trace *cold;
    int64_t ncold;          /* rows in cold (committed) */
    BatchBuilder *unspill;  /* this step's rows read back, weight -1, or NULL */
    int64_t nunspill;
    Buf ukeys;              /* their keys (u32 kn, key): undo drops them */
    uint32_t step;          /* steps that stood (eviction: the untouched first) */
    bool owner;             /* registered with zset/spill.h */
    uint8_t **looked;       /* op_upsert_row's copies of cold rows, freed at step end */
    int64_t nlooked, caplooked;
    size_t heap_per_row;    /* bytes of a row's encoding, estimated (0: not yet) */
} UpsertSt;

static void retire(UpsertSt *s, uint8_t *p) { *VEC_PUSH(s->garbage, s->ngarbage, s->capg) = p; }

static void made(UpsertSt *s, uint8_t *p) { *VEC_PUSH(s->made, s->nmade, s->capm) = p; }

/* Log the row of key k as it is before a change. */
static void log_row(UpsertSt *s, const uint8_t *k, uint32_t kn, const Row *row)
{
    buf_append(&s->undo, &kn, sizeof(kn));
    buf_append(&s->undo, k, kn);
    buf_append(&s->undo, &row->enc, sizeof(row->enc));
    buf_append(&s->undo, &row->n, sizeof(row->n));
}

static void emit(const CNode *n, ChunkOut *co, const uint8_t *enc, int64_t w)
{
    int64_t r = cout_row(co);
    key_decode(enc, n->types, n->ncol, co->c, 0, r);
    co->c->w[r] = w;
}

/* A row's record: key = its primary key, value = the row's encoding. */
static void enc_upsert(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    const CNode *n = ((Op *)ctx)->node;
    key_encode(c, n->pk, n->npk, r, k);
    key_encode_row(c, r, v);
}

static int push_upsert(Op *op, OpEnv *env, int input, Chunk *c)
{
    shard_rows(op->sh, 0, c, false, enc_upsert, op);
    return 0;
}

typedef struct KeyRef {
    const uint8_t *k;
    uint32_t kn;
} KeyRef;

static int keyref_cmp(const void *a, const void *b)
{
    const KeyRef *x = a, *y = b;
    size_t m = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, m);
    return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}

/* The one live row of a key among a probe's (row, weight) pairs (a row read
   back earlier cancels with its retraction), or NULL. */
static const ValW *live_row(const ValWs *c)
{
    const ValW *live = NULL;
    for (int64_t a = 0; a < c->n; a++) {
        int64_t w = 0;
        for (int64_t b = 0; b < c->n; b++)
            if (c->v[b].n == c->v[a].n && !memcmp(c->v[b].v, c->v[a].v, c->v[a].n))
                w += c->v[b].w;
        if (w == 0 || (live && live->n == c->v[a].n && !memcmp(live->v, c->v[a].v, live->n)))
            continue;
        if (w != 1 || live || c->v[a].n == 0)
            sl_panic("upsert: a spilled row is malformed");
        live = &c->v[a];
    }
    return live;
}

/* Before the step's records apply: the keys they touch that are in cold
   come back into the map, in key order with one cursor over cold. */
static void unspill(Op *op, UpsertSt *s)
{
    if (!s->ncold)
        return;
    KeyRef *ks = NULL;
    int64_t nk = 0, capk = 0;
    ShardPos p = SHARD_POS_INIT;
    XRec r;
    while (shard_next(op->sh, 0, &p, &r))
        if (r.w != 0 && !hmap_find(s->rows, r.k, r.kn, sl_hash(r.k, r.kn)))
            *VEC_PUSH(ks, nk, capk) = (KeyRef){r.k, r.kn};
    if (!nk)
        return;
    qsort(ks, (size_t)nk, sizeof(KeyRef), keyref_cmp);
    TraceCursor *cur = trace_cursor_new(s->cold);
    ValWs c = {0};
    for (int64_t i = 0; i < nk; i++) {
        if (i > 0 && keyref_cmp(&ks[i - 1], &ks[i]) == 0)
            continue;
        c.n = 0;
        trace_cursor_for_key(cur, ks[i].k, ks[i].kn, op_valw_add, &c);
        const ValW *v = live_row(&c);
        if (!v)
            continue;
        bool created;
        Row *row = hmap_upsert(s->rows, ks[i].k, ks[i].kn, sl_hash(ks[i].k, ks[i].kn), &created);
        row->enc = sl_malloc(v->n);
        memcpy(row->enc, v->v, v->n);
        row->n = (uint32_t)v->n;
        row->touched = s->step;
        made(s, row->enc); /* (undo frees it) */
        if (!s->unspill)
            s->unspill = bb_new();
        bb_add(s->unspill, ks[i].k, ks[i].kn, v->v, v->n, -1);
        s->nunspill++;
        buf_append(&s->ukeys, &ks[i].kn, sizeof(ks[i].kn));
        buf_append(&s->ukeys, ks[i].k, ks[i].kn);
    }
    sl_free(c.v);
    trace_cursor_free(cur);
    sl_free(ks);
}

static int finish_upsert(Op *op, OpEnv *env)
{
    UpsertSt *s = op->st;
    const CNode *n = op->node;
    unspill(op, s);
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 64);
    ShardPos p = SHARD_POS_INIT;
    XRec r;
    while (shard_next(op->sh, 0, &p, &r)) {
        uint64_t h = sl_hash(r.k, r.kn);
        /* an insertion of weight k > 1 is k upserts of one row: after
           the first, each replaces the row with itself (-row +row), so
           one is the same change */
        if (r.w == 0)
            continue;
        do {
            bool created;
            Row *row = hmap_upsert(s->rows, r.k, r.kn, h, &created);
            log_row(s, r.k, r.kn, row);
            row->touched = s->step;
            if (row->enc) {
                emit(n, &co, row->enc, -1);
                retire(s, row->enc);
                row->enc = NULL;
            }
            if (r.w > 0) {
                row->enc = sl_malloc(r.vn);
                made(s, row->enc);
                memcpy(row->enc, r.v, r.vn);
                row->n = r.vn;
                emit(n, &co, row->enc, 1);
            } else {
                hmap_delete(s->rows, r.k, r.kn, h);
                break;
            }
        } while (0);
    }
    if (co.c->n > 0 && s->saved) { /* rows changed */
        batch_unref(s->saved);
        s->saved = NULL;
    }
    op->out = co.c;
    return 0;
}

static void free_looked(UpsertSt *s)
{
    for (int64_t i = 0; i < s->nlooked; i++)
        sl_free(s->looked[i]);
    s->nlooked = 0;
}

static void step_end_upsert(Op *op)
{
    UpsertSt *s = op->st;
    for (int64_t i = 0; i < s->ngarbage; i++)
        sl_free(s->garbage[i]);
    s->ngarbage = 0;
    s->nmade = 0;
    buf_reset(&s->undo);
    if (s->unspill) { /* the rows read back leave the cold trace */
        trace_insert_take(s->cold, bb_finish(s->unspill));
        s->unspill = NULL;
        s->ncold -= s->nunspill;
        s->nunspill = 0;
    }
    buf_reset(&s->ukeys);
    if (s->cold)
        trace_step_end(s->cold);
    free_looked(s);
    s->step++;
}

/* Records of the undo log, in order. */
typedef struct UndoRec {
    const uint8_t *k;
    uint32_t kn, n;
    uint8_t *enc;
} UndoRec;

static void undo_upsert(Op *op)
{
    UpsertSt *s = op->st;
    size_t nrec = 0, pos = 0;
    while (pos < s->undo.n) { /* count, to walk them backwards */
        uint32_t kn;
        memcpy(&kn, s->undo.p + pos, sizeof(kn));
        pos += sizeof(kn) + kn + sizeof(uint8_t *) + sizeof(uint32_t);
        nrec++;
    }
    UndoRec *recs = sl_malloc(sizeof(UndoRec) * (nrec ? nrec : 1));
    pos = 0;
    for (size_t i = 0; i < nrec; i++) {
        UndoRec *u = &recs[i];
        memcpy(&u->kn, s->undo.p + pos, sizeof(u->kn));
        pos += sizeof(u->kn);
        u->k = s->undo.p + pos;
        pos += u->kn;
        memcpy(&u->enc, s->undo.p + pos, sizeof(u->enc));
        pos += sizeof(u->enc);
        memcpy(&u->n, s->undo.p + pos, sizeof(u->n));
        pos += sizeof(u->n);
    }
    for (size_t i = nrec; i-- > 0;) {
        const UndoRec *u = &recs[i];
        uint64_t h = sl_hash(u->k, u->kn);
        bool created;
        Row *row = hmap_upsert(s->rows, u->k, u->kn, h, &created);
        row->enc = u->enc;
        row->n = u->n;
        if (!u->enc)
            hmap_delete(s->rows, u->k, u->kn, h);
    }
    sl_free(recs);
    /* the rows read back stay cold (their encodings were made this step) */
    for (size_t p = 0; p < s->ukeys.n;) {
        uint32_t kn;
        memcpy(&kn, s->ukeys.p + p, sizeof(kn));
        p += sizeof(kn);
        hmap_delete(s->rows, s->ukeys.p + p, kn, sl_hash(s->ukeys.p + p, kn));
        p += kn;
    }
    buf_reset(&s->ukeys);
    if (s->unspill) {
        batch_unref(bb_finish(s->unspill));
        s->unspill = NULL;
        s->nunspill = 0;
    }
    for (int64_t i = 0; i < s->nmade; i++)
        sl_free(s->made[i]);
    s->nmade = 0;
    s->ngarbage = 0; /* the rows own them again */
    buf_reset(&s->undo);
    if (nrec && s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
}

/* The rows in the map: the key index, each row's encoding, the checkpoint
   copy (what spilling can move out). */
static size_t heap_bytes(const UpsertSt *s)
{
    size_t it = 0, heap = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->rows, &it, &k, &kn, &pl))
        heap += ((const Row *)pl)->enc ? ((const Row *)pl)->n : 0;
    return heap;
}

/* The budget asks after every step: the row encodings are estimated from
   the bytes per row of the last walk (mem_upsert, eviction), as an
   aggregate's groups are, instead of walking every row each time. */
static size_t hot_bytes(UpsertSt *s)
{
    int64_t n = hmap_count(s->rows);
    if (!n) /* (an empty map's table: nothing to move out) */
        return s->saved ? batch_bytes(s->saved) : 0;
    if (!s->heap_per_row)
        s->heap_per_row = heap_bytes(s) / (size_t)n + 1;
    return hmap_bytes(s->rows) + (size_t)n * s->heap_per_row +
           (s->saved ? batch_bytes(s->saved) : 0);
}

/* The map's rows and the cold trace's. */
static void mem_upsert(Op *op, OpMem *m)
{
    UpsertSt *s = op->st;
    if (hmap_count(s->rows))
        s->heap_per_row = heap_bytes(s) / (size_t)hmap_count(s->rows) + 1;
    size_t hot = hot_bytes(s);
    m->rows += hmap_count(s->rows) + s->ncold;
    m->bytes += hot + (hmap_count(s->rows) ? 0 : hmap_bytes(s->rows));
    if (s->owner) /* the rows spill (into cold) */
        m->trace_bytes += hot;
    if (s->cold)
        cold_mem(s->cold, m);
}

/*
 * Spilling (see the top): the budget asks for the map's bytes and moves
 * its rows into cold.
 */
static size_t own_resident(const void *o) { return hot_bytes((UpsertSt *)o); }
static size_t own_largest(const void *o) { return hot_bytes((UpsertSt *)o); }

/* The eviction's choice (own_evict): the rows the latest step did not
   touch, or all of them. */
typedef struct Evict {
    UpsertSt *s;
    uint32_t last;
    bool all;
} Evict;

static bool put_row(void *ctx, BatchBuilder *bb, const uint8_t *k, size_t kn, void *pl)
{
    Evict *e = ctx;
    Row *row = pl;
    if (!e->all && row->touched == e->last)
        return false;
    if (row->enc) {
        bb_add(bb, k, kn, row->enc, row->n, 1);
        e->s->ncold++;
    }
    sl_free(row->enc);
    return true;
}

static int own_evict(void *o, Err *err)
{
    (void)err;
    UpsertSt *s = o;
    /* the untouched first; all when the latest step touched every one */
    Evict e = {s, s->step - 1, true};
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (e.all && hmap_next(s->rows, &it, &k, &kn, &pl))
        e.all = ((const Row *)pl)->touched == e.last;
    cold_evict(s->cold, &s->rows, sizeof(Row), &s->saved, put_row, &e);
    return 0;
}

static const SpillOwner upsert_owner = {own_resident, own_largest, own_evict, cold_compact};

static void free_upsert(Op *op)
{
    UpsertSt *s = op->st;
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    step_end_upsert(op);
    while (hmap_next(s->rows, &it, &k, &kn, &pl))
        sl_free(((Row *)pl)->enc);
    hmap_free(s->rows);
    if (s->owner)
        spill_unregister(s);
    trace_free(s->cold);
    buf_free(&s->ukeys);
    sl_free(s->looked);
    sl_free(s->garbage);
    sl_free(s->made);
    buf_free(&s->undo);
    if (s->saved)
        batch_unref(s->saved);
    sl_free(s);
}

static void add_cold(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                     int64_t w)
{
    bb_add(ctx, k, kn, v, vn, w);
}

static int save_upsert(Op *op, BatchList *out)
{
    UpsertSt *s = op->st;
    if (!s->saved && s->ncold && !hmap_count(s->rows) && trace_nbatches(s->cold) == 1 &&
        trace_count(s->cold) == s->ncold) {
        /* every row in cold's one run (a restored table, or all evicted) */
        Batch *b = trace_batch(s->cold, 0);
        batch_ref(b);
        batchlist_add(out, b);
        return 0;
    }
    if (!s->saved || s->ncold) {
        BatchBuilder *bb = bb_new();
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(s->rows, &it, &k, &kn, &pl)) {
            const Row *row = pl;
            if (row->enc)
                bb_add(bb, k, kn, row->enc, row->n, 1);
        }
        if (s->ncold) { /* not kept: it would hold the cold rows in memory */
            trace_scan(s->cold, add_cold, bb);
            batchlist_add(out, bb_finish(bb));
            return 0;
        }
        s->saved = bb_finish(bb);
    }
    batch_ref(s->saved);
    batchlist_add(out, s->saved);
    return 0;
}

static int load_upsert(Op *op, Batch *const *b, int n, Err *err)
{
    UpsertSt *s = op->st;
    int id = op->node->id;
    if (n != 1)
        return err_set(err, SL_EIO, "upsert state (node %d) has %d batches, expected 1", id, n);
    const Batch *m = b[0];
    for (int64_t i = 0; i < m->n; i++) {
        size_t vn = batch_vlen(m, i);
        if (m->w[i] != 1 || vn == 0 || vn > UINT32_MAX)
            return err_set(err, SL_EIO, "upsert state (node %d) has a malformed row", id);
        if (i > 0 && batch_klen(m, i) == batch_klen(m, i - 1) &&
            !memcmp(batch_key(m, i), batch_key(m, i - 1), batch_klen(m, i)))
            return err_set(err, SL_EIO, "upsert state (node %d) has a key twice", id);
    }
    if (s->owner && m->n > 0) { /* the rows start cold: the budget spills them */
        batch_ref(b[0]);
        trace_restore_take(s->cold, b[0]);
        s->ncold = m->n;
        return 0;
    }
    hmap_reserve(s->rows, m->n);
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i);
        size_t kn = batch_klen(m, i), vn = batch_vlen(m, i);
        bool created;
        Row *row = hmap_upsert(s->rows, k, kn, sl_hash(k, kn), &created);
        if (!created)
            return err_set(err, SL_EIO, "upsert state (node %d) has a key twice", id);
        row->enc = sl_malloc(vn);
        memcpy(row->enc, batch_val(m, i), vn);
        row->n = (uint32_t)vn;
    }
    batch_ref(b[0]);
    s->saved = b[0];
    return 0;
}

/* Another worker count: the rows whose keys this worker owns. */
static int load_split_upsert(Op *op, int w, int W, Batch *const *const *lists,
                             const int *counts, int nold, Err *err)
{
    Batch **all = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    for (int k = 0; k < nold; k++) {
        if (counts[k] != 1) {
            sl_free(all);
            return err_set(err, SL_EIO, "upsert state (node %d) has %d batches, expected 1",
                           op->node->id, counts[k]);
        }
        all[k] = lists[k][0];
    }
    Batch *b = op_owned_sum(all, nold, w, W, false);
    sl_free(all);
    int rc = load_upsert(op, &b, 1, err);
    batch_unref(b);
    return rc;
}

int op_upsert_init(Op *op)
{
    UpsertSt *s = sl_calloc(1, sizeof(*s));
    s->rows = hmap_new(sizeof(Row));
    s->cold = cold_new(s, &upsert_owner, &s->owner);
    op->st = s;
    op->push = push_upsert;
    op->finish = finish_upsert;
    op->step_end = step_end_upsert;
    op->undo = undo_upsert;
    op->free = free_upsert;
    op->save = save_upsert;
    op->load = load_upsert;
    op->load_split = load_split_upsert;
    op->mem = mem_upsert;
    return 0;
}

const uint8_t *op_upsert_row(Op *op, const uint8_t *k, size_t kn, uint32_t *n)
{
    UpsertSt *s = op->st;
    Row *row = hmap_find(s->rows, k, kn, sl_hash(k, kn));
    if (row) {
        *n = row->n;
        return row->enc; /* (NULL: deleted) */
    }
    if (!s->ncold)
        return NULL;
    ValWs c = {0}; /* (one probe of cold: its blocks holding the key) */
    trace_for_key(s->cold, k, kn, op_valw_add, &c);
    const ValW *v = live_row(&c);
    uint8_t *copy = NULL;
    if (v) {
        copy = sl_malloc(v->n);
        memcpy(copy, v->v, v->n);
        *n = (uint32_t)v->n;
        *VEC_PUSH(s->looked, s->nlooked, s->caplooked) = copy;
    }
    sl_free(c.v);
    return copy;
}

size_t op_upsert_bytes(Op *op)
{
    UpsertSt *s = op->st;
    return hmap_bytes(s->rows);
}

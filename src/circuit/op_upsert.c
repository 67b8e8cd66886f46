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
 */
#include "op.h"

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

typedef struct Row {
    uint8_t *enc; /* current row's encoding (owned), or NULL */
    uint32_t n;
} Row;

typedef struct UpsertSt {
    HMap *rows;        /* key encoding -> Row */
    uint8_t **garbage; /* replaced encodings, freed at step end */
    int64_t ngarbage, capg;
    uint8_t **made;    /* encodings allocated this step (freed by undo) */
    int64_t nmade, capm;
    Buf undo;          /* this step's changes: u32 kn, key, old enc pointer, u32 old n */
    Batch *saved;      /* the rows as of the last save(), while unchanged */
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

static int finish_upsert(Op *op, OpEnv *env)
{
    UpsertSt *s = op->st;
    const CNode *n = op->node;
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

static void step_end_upsert(Op *op)
{
    UpsertSt *s = op->st;
    for (int64_t i = 0; i < s->ngarbage; i++)
        sl_free(s->garbage[i]);
    s->ngarbage = 0;
    s->nmade = 0;
    buf_reset(&s->undo);
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

/* The key index, each current row's encoding, the checkpoint copy. */
static void mem_upsert(Op *op, OpMem *m)
{
    UpsertSt *s = op->st;
    size_t it = 0, heap = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->rows, &it, &k, &kn, &pl))
        heap += ((const Row *)pl)->enc ? ((const Row *)pl)->n : 0;
    m->rows += hmap_count(s->rows);
    m->bytes += hmap_bytes(s->rows) + heap + (s->saved ? batch_bytes(s->saved) : 0);
}

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
    sl_free(s->garbage);
    sl_free(s->made);
    buf_free(&s->undo);
    if (s->saved)
        batch_unref(s->saved);
    sl_free(s);
}

static int save_upsert(Op *op, BatchList *out)
{
    UpsertSt *s = op->st;
    if (!s->saved) {
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
    hmap_reserve(s->rows, m->n);
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i);
        size_t kn = batch_klen(m, i), vn = batch_vlen(m, i);
        bool created;
        if (m->w[i] != 1 || vn == 0 || vn > UINT32_MAX)
            return err_set(err, SL_EIO, "upsert state (node %d) has a malformed row", id);
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
    if (!row || !row->enc)
        return NULL;
    *n = row->n;
    return row->enc;
}

size_t op_upsert_bytes(Op *op)
{
    UpsertSt *s = op->st;
    return hmap_bytes(s->rows);
}

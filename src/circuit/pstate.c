/*
 * circuit/pstate.c - partitioned ordered state (pstate.h): routing rows by
 * partition, applying a step's changes to the partitions' trees, ending
 * the step, checkpoints. What a touched partition emits is the operator's
 * (op_topk.c, op_window.c).
 */
#include "pstate.h"

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

/* A row's record: key = its partition key, value = sort key || row. */
static void enc_row(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    Op *op = ctx;
    PState *ps = op->st;
    const CNode *n = op->node;
    key_encode(c, n->part, n->npart, r, k);
    otree_sortkey(c, r, n->ord, n->ord_desc, n->ord_nulls_first, n->nord, v, &ps->tmp);
    key_encode_row(c, r, v);
}

static int push_pstate(Op *op, OpEnv *env, int input, Chunk *c)
{
    shard_rows(op->sh, 0, c, op->node->npart == 0, enc_row, op);
    return 0;
}

/* The partition of key k, created empty when absent. */
static PPart *part_of(PState *ps, const uint8_t *k, size_t kn)
{
    bool created;
    PPart *part = hmap_upsert(ps->parts, k, kn, sl_hash(k, kn), &created);
    if (created) {
        part->key = sl_malloc(kn ? kn : 1);
        memcpy(part->key, k, kn);
        part->klen = (uint32_t)kn;
        part->stamp = -1;
    }
    return part;
}

/* The node of encoding enc (sort key || row) in part, created (with its
   values) when absent (*fresh set then). */
static ONode *node_of(Op *op, PPart *part, const uint8_t *enc, size_t len, size_t sklen,
                      bool *fresh)
{
    PState *ps = op->st;
    ONode *nd = otree_upsert(&ps->lay, &part->t, enc, len, sklen, fresh);
    if (*fresh && ps->fresh)
        ps->fresh(op, nd);
    return nd;
}

static int finish_pstate(Op *op, OpEnv *env)
{
    PState *ps = op->st;
    const CNode *n = op->node;
    int rc = 0;
    Batch *delta = shard_batch(op->sh, 0);
    if (delta->n && ps->saved) {
        batch_unref(ps->saved);
        ps->saved = NULL;
    }
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 16);
    for (int64_t i = 0; i < delta->n && !rc;) {
        const uint8_t *k = batch_key(delta, i);
        size_t kn = batch_klen(delta, i);
        PPart *part = part_of(ps, k, kn);
        if (part->stamp != env->step) {
            part->stamp = env->step;
            *VEC_PUSH(ps->touched, ps->ntouched, ps->captouched) = part;
        }
        int64_t first = ps->nchg;
        for (; i < delta->n && batch_klen(delta, i) == kn && !batch_key_cmp(delta, i, k, kn); i++) {
            const uint8_t *v = batch_val(delta, i);
            size_t vn = batch_vlen(delta, i);
            bool fresh;
            size_t sk = otree_sortkey_len(v, ps->ord_types, n->ord_desc, n->nord);
            ONode *nd = node_of(op, part, v, vn, sk, &fresh);
            otree_add(&ps->lay, nd, 1, delta->w[i]);
            if (!nd->changed) {
                nd->changed = true;
                *VEC_PUSH(ps->chg, ps->nchg, ps->capchg) = (PChanged){part, nd};
            }
            if (nd->w[1] < 0)
                rc = err_set(env->ev->err, SL_ERUNTIME,
                             "%s node %d: a row has negative multiplicity %lld (more "
                             "deletions than insertions)", ps->what, n->id, (long long)nd->w[1]);
        }
        if (!rc)
            rc = ps->emit(op, env, part, ps->chg + first, ps->nchg - first, &co);
    }
    batch_unref(delta);
    op->out = co.c;
    return rc;
}

/* The step is over: deleted rows leave the trees, weights become "before". */
static void step_end_pstate(Op *op)
{
    PState *ps = op->st;
    for (int64_t i = 0; i < ps->nchg; i++) {
        ONode *nd = ps->chg[i].n;
        nd->changed = false;
        if (nd->w[1] < 0) /* after an error: drop the row's weight */
            otree_add(&ps->lay, nd, 1, -nd->w[1]);
        otree_add(&ps->lay, nd, 0, nd->w[1] - nd->w[0]);
        if (nd->w[1] == 0) {
            otree_remove(&ps->lay, &ps->chg[i].part->t, nd);
            sl_free(nd);
        }
    }
    ps->nchg = 0;
    for (int64_t i = 0; i < ps->ntouched; i++) {
        PPart *p = ps->touched[i];
        if (!p->t.root) {
            uint8_t *k = p->key;
            uint32_t kl = p->klen;
            hmap_delete(ps->parts, k, kl, sl_hash(k, kl)); /* frees p */
            sl_free(k);
        }
    }
    ps->ntouched = 0;
}

void pstate_free(PState *ps)
{
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(ps->parts, &it, &k, &kn, &pl)) {
        PPart *p = pl;
        otree_free(&p->t);
        sl_free(p->key);
    }
    hmap_free(ps->parts);
    sl_free(ps->ord_types);
    sl_free(ps->chg);
    sl_free(ps->touched);
    buf_free(&ps->tmp);
    if (ps->saved)
        batch_unref(ps->saved);
}

/* State: one batch of every partition's rows (otree_save), built once and
   kept while unchanged. Between steps both weight versions are equal. */
/* Partitions: the map, each partition's key and tree nodes; the
   checkpoint copy. Rows count distinct rows (nodes). */
static void mem_pstate(Op *op, OpMem *m)
{
    PState *ps = op->st;
    size_t it = 0, heap = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(ps->parts, &it, &k, &kn, &pl)) {
        const PPart *p = pl;
        heap += p->klen;
        for (const ONode *n = otree_first(&p->t); n; n = otree_next(n)) {
            heap += ps->lay.off_enc + (n->len ? n->len : 1);
            m->rows++;
        }
    }
    m->bytes += hmap_bytes(ps->parts) + heap + (ps->saved ? batch_bytes(ps->saved) : 0);
}

static int save_pstate(Op *op, BatchList *out)
{
    PState *ps = op->st;
    if (!ps->saved) {
        BatchBuilder *bb = bb_new();
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(ps->parts, &it, &k, &kn, &pl))
            otree_save(&((PPart *)pl)->t, k, kn, bb);
        ps->saved = bb_finish(bb);
    }
    batch_ref(ps->saved);
    batchlist_add(out, ps->saved);
    return 0;
}

static int load_pstate(Op *op, Batch *const *b, int n, Err *err)
{
    PState *ps = op->st;
    int id = op->node->id, rc = 0;
    if (n != 1)
        return err_set(err, SL_EIO, "%s node %d: state has %d batches, expected 1", ps->what, id,
                       n);
    const Batch *m = b[0];
    ORow r;
    orow_init(&r, ps->in_types, ps->nin);
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i);
        size_t kn = batch_klen(m, i);
        if (m->w[i] <= 0 || !orow_read(&r, op->node, k, kn, batch_val(m, i), batch_vlen(m, i))) {
            rc = err_set(err, SL_EIO, "%s node %d: saved tuple %lld is not a row of the "
                         "node's input with its partition key", ps->what, id, (long long)i);
            break;
        }
        bool fresh;
        ONode *nd = node_of(op, part_of(ps, k, kn), r.enc.p, r.enc.n, r.sklen, &fresh);
        if (!fresh) {
            rc = err_set(err, SL_EIO, "%s node %d: a row is saved twice", ps->what, id);
            break;
        }
        otree_add(&ps->lay, nd, 0, m->w[i]);
        otree_add(&ps->lay, nd, 1, m->w[i]);
    }
    orow_free(&r);
    if (rc)
        return rc;
    batch_ref(b[0]);
    ps->saved = b[0];
    return 0;
}

/* Another worker count: the rows of the partitions this worker owns (all
   of them on worker 0 without PARTITION BY). */
static int load_split_pstate(Op *op, int w, int W, Batch *const *const *lists,
                             const int *counts, int nold, Err *err)
{
    PState *ps = op->st;
    Batch **all = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    for (int k = 0; k < nold; k++) {
        if (counts[k] != 1) {
            sl_free(all);
            return err_set(err, SL_EIO, "%s node %d: state has %d batches, expected 1",
                           ps->what, op->node->id, counts[k]);
        }
        all[k] = lists[k][0];
    }
    Batch *b = op_owned_sum(all, nold, w, W, op->node->npart == 0);
    sl_free(all);
    int rc = load_pstate(op, &b, 1, err);
    batch_unref(b);
    return rc;
}

void pstate_init(Op *op, PState *ps, const char *what)
{
    const CNode *n = op->node;
    const CNode *src = op->circuit->nodes[n->in[0]];
    ps->what = what;
    ps->parts = hmap_new(sizeof(PPart));
    olayout_init(&ps->lay, 0, 0, NULL);
    ps->in_types = src->types;
    ps->nin = src->ncol;
    ps->ord_types = sl_malloc(sizeof(SqlType) * (size_t)(n->nord + 1));
    for (int j = 0; j < n->nord; j++)
        ps->ord_types[j] = src->types[n->ord[j]];
    op->push = push_pstate;
    op->finish = finish_pstate;
    op->step_end = step_end_pstate;
    op->save = save_pstate;
    op->load = load_pstate;
    op->load_split = load_split_pstate;
    op->mem = mem_pstate;
}

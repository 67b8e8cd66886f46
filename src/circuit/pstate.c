/*
 * circuit/pstate.c - partitioned ordered state (pstate.h): routing rows by
 * partition, applying a step's changes to the partitions' trees, ending
 * the step, checkpoints. What a touched partition emits is the operator's
 * (op_topk.c, op_window.c); spilling cold partitions (below, "Spilling").
 */
#include "pstate.h"

#include <stdlib.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "../zset/trace.h"

/* Bytes of node n in memory (its allocation, as mem_pstate counts it). */
static size_t node_bytes(const PState *ps, const ONode *n)
{
    return ps->lay.off_enc + (n->len ? n->len : 1);
}

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
        part->bytes = kn;
        part->rows = 0;
        ps->heap += kn;
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
    if (*fresh) {
        size_t nb = node_bytes(ps, nd);
        ps->heap += nb;
        ps->nhot_rows++;
        part->bytes += nb;
        part->rows++;
    }
    if (*fresh && ps->fresh)
        ps->fresh(op, nd);
    return nd;
}

/* pstate_partitions_read_back, pstate_cold_writes, pstate_rows_in
   (atomic) */
static int64_t read_back, cold_writes, rows_in;

int64_t pstate_partitions_read_back(void)
{
    return __atomic_load_n(&read_back, __ATOMIC_RELAXED);
}

int64_t pstate_cold_writes(void) { return __atomic_load_n(&cold_writes, __ATOMIC_RELAXED); }

int64_t pstate_rows_in(void) { return __atomic_load_n(&rows_in, __ATOMIC_RELAXED); }

static int valw_cmp(const void *a, const void *b)
{
    const ValW *x = a, *y = b;
    return otree_cmp(x->v, x->n, y->v, y->n);
}

/* Partition k[0..kn), absent from the map, from the cold trace when it is
   there (cur: one cursor per step, keys ascending): its rows come back
   into a new partition of the map with their multiplicity in both
   versions; they stay in cold too (the step's changes follow them there
   when it ends). */
static bool unspill_part(Op *op, TraceCursor *cur, ValWs *c, const uint8_t *k, size_t kn)
{
    PState *ps = op->st;
    const CNode *n = op->node;
    c->n = 0;
    trace_cursor_for_key(cur, k, kn, op_valw_add, c);
    if (!c->n)
        return false;
    /* net weights: a row read back earlier cancels with its retraction */
    qsort(c->v, (size_t)c->n, sizeof(ValW), valw_cmp);
    PPart *part = NULL;
    for (int64_t i = 0, j; i < c->n; i = j) {
        int64_t w = 0;
        for (j = i; j < c->n && !valw_cmp(&c->v[j], &c->v[i]); j++)
            w += c->v[j].w;
        if (!ALWAYS(w >= 0))
            sl_panic("%s node %d: a spilled row has negative multiplicity", ps->what, n->id);
        if (!w)
            continue;
        const uint8_t *v = c->v[i].v;
        size_t vn = c->v[i].n;
        if (!part)
            part = part_of(ps, k, kn);
        bool fresh;
        size_t sk = otree_sortkey_len(v, ps->ord_types, n->ord_desc, n->nord);
        ONode *nd = node_of(op, part, v, vn, sk, &fresh);
        if (!ALWAYS(fresh))
            sl_panic("%s node %d: a spilled row is there twice", ps->what, n->id);
        otree_add(&ps->lay, nd, 0, w);
        otree_add(&ps->lay, nd, 1, w);
    }
    return part != NULL;
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
    ps->last_step = env->step;
    TraceCursor *cur = NULL; /* over cold: the delta's keys ascend */
    ValWs cv = {0};
    int64_t nread = 0;
    for (int64_t i = 0; i < delta->n && !rc;) {
        const uint8_t *k = batch_key(delta, i);
        size_t kn = batch_klen(delta, i);
        if (ps->through && !hmap_find(ps->parts, k, kn, sl_hash(k, kn))) {
            if (!cur)
                cur = trace_cursor_new(ps->cold);
            nread += unspill_part(op, cur, &cv, k, kn);
        }
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
    if (cur) {
        trace_cursor_free(cur);
        __atomic_add_fetch(&read_back, nread, __ATOMIC_RELAXED);
    }
    if (ps->cold)
        __atomic_add_fetch(&rows_in, delta->n, __ATOMIC_RELAXED);
    sl_free(cv.v);
    batch_unref(delta);
    op->out = co.c;
    return rc;
}

/* The step is over: deleted rows leave the trees, weights become "before";
   once partitions spill, the step's changes go to the cold trace too. */
static void step_end_pstate(Op *op)
{
    PState *ps = op->st;
    BatchBuilder *bb = ps->through && ps->nchg ? bb_new() : NULL;
    for (int64_t i = 0; i < ps->nchg; i++) {
        ONode *nd = ps->chg[i].n;
        nd->changed = false;
        if (nd->w[1] < 0) /* after an error: drop the row's weight */
            otree_add(&ps->lay, nd, 1, -nd->w[1]);
        if (bb && nd->w[1] != nd->w[0]) {
            const PPart *p = ps->chg[i].part;
            bb_add(bb, p->key, p->klen, nd->enc, nd->len, nd->w[1] - nd->w[0]);
            ps->ncold_rows += (nd->w[1] != 0) - (nd->w[0] != 0);
        }
        otree_add(&ps->lay, nd, 0, nd->w[1] - nd->w[0]);
        if (nd->w[1] == 0) {
            PPart *p = ps->chg[i].part;
            size_t nb = node_bytes(ps, nd);
            otree_remove(&ps->lay, &p->t, nd);
            ps->heap -= nb;
            ps->nhot_rows--;
            p->bytes -= nb;
            p->rows--;
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
            ps->heap -= kl;
        }
    }
    ps->ntouched = 0;
    if (bb) {
        Batch *b = bb_finish(bb);
        __atomic_add_fetch(&cold_writes, b->n, __ATOMIC_RELAXED);
        trace_insert_take(ps->cold, b);
    }
    if (ps->cold)
        trace_step_end(ps->cold);
}

void pstate_forget(PState *ps, PPart *part, ONode *n, BatchBuilder **cold_bb)
{
    if (ps->through && n->w[0]) { /* cold holds the row: retract it there too */
        if (!*cold_bb)
            *cold_bb = bb_new();
        bb_add(*cold_bb, part->key, part->klen, n->enc, n->len, -n->w[0]);
        ps->ncold_rows--;
    }
    otree_add(&ps->lay, n, 0, -n->w[0]); /* weights to 0 first (subtree counts, sums) */
    otree_add(&ps->lay, n, 1, -n->w[1]);
    size_t nb = node_bytes(ps, n);
    otree_remove(&ps->lay, &part->t, n);
    ps->heap -= nb;
    ps->nhot_rows--;
    part->bytes -= nb;
    part->rows--;
    sl_free(n);
}

void pstate_forget_end(PState *ps, BatchBuilder *cold_bb, PPart **empty, int64_t nempty)
{
    for (int64_t i = 0; i < nempty; i++) {
        uint8_t *k = empty[i]->key;
        uint32_t kl = empty[i]->klen;
        hmap_delete(ps->parts, k, kl, sl_hash(k, kl)); /* frees the partition */
        sl_free(k);
        ps->heap -= kl;
    }
    if (cold_bb) {
        Batch *b = bb_finish(cold_bb);
        __atomic_add_fetch(&cold_writes, b->n, __ATOMIC_RELAXED);
        trace_insert_take(ps->cold, b);
        trace_step_end(ps->cold); /* between steps: nothing to roll back */
    }
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
    if (ps->owner)
        spill_unregister(ps);
    if (ps->cold)
        trace_free(ps->cold);
    sl_free(ps->ord_types);
    sl_free(ps->chg);
    sl_free(ps->touched);
    buf_free(&ps->tmp);
    if (ps->saved)
        batch_unref(ps->saved);
}

/* Partitions: the map, each partition's key and tree nodes; the
   checkpoint copy; the cold trace. Rows count distinct rows (nodes). The
   partitions in the map can spill when the operator is spillable. */
static void mem_pstate(Op *op, OpMem *m)
{
    PState *ps = op->st;
    size_t heap = ps->heap;
    if (ps->cold) { /* counted as they change (pstate_spillable) */
        m->rows += ps->through ? ps->ncold_rows : ps->nhot_rows;
    } else { /* walked (ASOF forgets nodes of its own) */
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        heap = 0;
        while (hmap_next(ps->parts, &it, &k, &kn, &pl)) {
            const PPart *p = pl;
            heap += p->klen;
            for (const ONode *n = otree_first(&p->t); n; n = otree_next(n)) {
                heap += node_bytes(ps, n);
                m->rows++;
            }
        }
    }
    size_t hot = hmap_bytes(ps->parts) + heap + (ps->saved ? batch_bytes(ps->saved) : 0);
    m->bytes += hot;
    if (ps->owner) /* the partitions spill (into cold) */
        m->trace_bytes += hot;
    if (ps->cold) {
        TraceMem t = {0};
        trace_mem(ps->cold, &t);
        m->bytes += t.bytes;
        m->trace_bytes += t.trace_bytes;
        m->disk_bytes += t.disk_bytes;
        m->cache_hits += t.cache_hits;
        m->cache_misses += t.cache_misses;
    }
}

/* State: one batch of every partition's rows (otree_save), built once and
   kept while unchanged (and nothing spilled: the copy would hold the cold
   partitions in memory). Between steps both weight versions are equal.
   Once partitions spill, the cold trace holds every partition (those in
   the map too): the batch is its tuples without the sort key, the
   changes of later steps cancelling or adding up, in the same layout. */
static int save_pstate(Op *op, BatchList *out)
{
    PState *ps = op->st;
    const CNode *n = op->node;
    if (!ps->saved) {
        BatchBuilder *bb = bb_new();
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (!ps->through && hmap_next(ps->parts, &it, &k, &kn, &pl))
            otree_save(&((PPart *)pl)->t, k, kn, bb);
        for (int i = 0; ps->through && i < trace_nbatches(ps->cold); i++) {
            const Batch *b = trace_batch(ps->cold, i);
            for (int64_t t = 0; t < b->n; t++) {
                const uint8_t *v = batch_val(b, t);
                size_t sk = otree_sortkey_len(v, ps->ord_types, n->ord_desc, n->nord);
                bb_add(bb, batch_key(b, t), batch_klen(b, t), v + sk, batch_vlen(b, t) - sk,
                       b->w[t]);
            }
        }
        Batch *b = bb_finish(bb);
        if (ps->through) {
            batchlist_add(out, b);
            return 0;
        }
        ps->saved = b;
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
    if (ps->cold)
        __atomic_add_fetch(&rows_in, m->n, __ATOMIC_RELAXED);
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

/*
 * Spilling (zset/spill.h, registered when the runtime tracks traces; top-k
 * and window): the first time the budget moves partitions out, every
 * partition's rows go into the cold trace, as one sorted run of (partition
 * key, sort key || row, multiplicity), which spills to files like any
 * trace run. From then on cold holds every partition (write-through): the
 * map is a cache of the partitions read back, and each step's end inserts
 * the step's changes into cold as well (step_end: the changed rows' weight
 * differences, a few tuples where a partition has many rows). So a
 * partition leaves the map without a write (own_evict frees its tree):
 * those the latest step did not touch go first; when it touched every one,
 * all go. A step reads back only the partitions it touches that are not
 * in the map (finish -> unspill_part), in key order with one cursor over
 * the cold trace (so each spilled block is read at most once per step);
 * nothing is retracted or written again for them (before, a read-back
 * partition was retracted from cold and written whole again at its next
 * eviction: three writes of every row read). The output never changes: a
 * partition read back is the tree it was.
 */
static size_t hot_bytes(const PState *ps)
{
    size_t saved = ps->saved ? batch_bytes(ps->saved) : 0;
    return hmap_count(ps->parts) ? hmap_bytes(ps->parts) + ps->heap + saved : saved;
}

static size_t own_resident(const void *o) { return hot_bytes(o); }
static size_t own_largest(const void *o) { return hot_bytes(o); }

static int own_evict(void *o, Err *err)
{
    (void)err;
    PState *ps = o;
    if (ps->saved) {
        batch_unref(ps->saved);
        ps->saved = NULL;
    }
    if (!hmap_count(ps->parts))
        return 0;
    /* the untouched first; all when the latest step touched every one */
    bool all = true;
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (all && hmap_next(ps->parts, &it, &k, &kn, &pl))
        all = ((const PPart *)pl)->stamp == ps->last_step;
    if (!ps->through) { /* the first time: every partition goes to cold */
        BatchBuilder *bb = bb_new();
        it = 0;
        while (hmap_next(ps->parts, &it, &k, &kn, &pl)) {
            const PPart *p = pl;
            for (const ONode *x = otree_first(&p->t); x; x = otree_next(x))
                bb_add(bb, p->key, p->klen, x->enc, x->len, x->w[0]);
        }
        Batch *b = bb_finish(bb);
        __atomic_add_fetch(&cold_writes, b->n, __ATOMIC_RELAXED);
        trace_insert_take(ps->cold, b);
        trace_step_end(ps->cold); /* between steps: nothing to roll back */
        ps->through = true;
        ps->ncold_rows = ps->nhot_rows;
    }
    /* cold has them all: the partitions leave the map without a write */
    HMap *keep = hmap_new(sizeof(PPart));
    it = 0;
    while (hmap_next(ps->parts, &it, &k, &kn, &pl)) {
        PPart *p = pl;
        if (!all && p->stamp == ps->last_step) {
            bool created;
            PPart *q = hmap_upsert(keep, p->key, p->klen, sl_hash(p->key, p->klen), &created);
            *q = *p; /* key and tree move along */
            continue;
        }
        ps->heap -= p->bytes;
        ps->nhot_rows -= p->rows;
        otree_free(&p->t);
        sl_free(p->key);
    }
    hmap_free(ps->parts);
    ps->parts = keep;
    return 0;
}

static int own_compact(void *o, int *merged, Err *err)
{
    (void)o, (void)err;
    *merged = 0; /* the cold trace merges its own runs */
    return 0;
}

static const SpillOwner pstate_owner = {own_resident, own_largest, own_evict, own_compact};

void pstate_spillable(PState *ps)
{
    ps->cold = trace_new();
    ps->owner = trace_tracked(ps->cold);
    if (ps->owner)
        spill_register(ps, &pstate_owner);
}

void pstate_init(Op *op, PState *ps, const char *what)
{
    const CNode *n = op->node;
    const CNode *src = op->circuit->nodes[n->in[0]];
    ps->what = what;
    ps->last_step = -1;
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

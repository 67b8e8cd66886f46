/*
 * circuit/op_topk.c - top-k per partition: ORDER BY ... LIMIT/OFFSET of a
 * view, and ROW_NUMBER()/RANK()/DENSE_RANK() OVER (PARTITION BY ... ORDER
 * BY ...) filtered by rank <= k (non-linear).
 *
 * Delta rule: for every partition touched in a step, the output changes by
 * -(rows kept before) +(rows kept now), equal rows cancelling. Rows are
 * exchanged by the hash of their partition key (all to worker 0 when there
 * is no PARTITION BY), so a partition lives on one worker, in an ordered
 * tree of its rows (otree.h) that answers for both the state before the
 * step and after it. The kept rows of a version are its ranks (offset,
 * offset+limit]: for positions (no rank column, ROW_NUMBER) the walk starts
 * at row `offset` (found in O(log n)) and stops after `limit` rows; for
 * RANK it starts there too; DENSE_RANK walks from the first row.
 *
 * A partition whose changes all sort after the last kept row (before and
 * after the step) is skipped after an O(log n) check: with a small limit,
 * most changes cost O(log n) and never touch the kept prefix. Otherwise a
 * touched partition costs O(log n + offset + limit) for positions and RANK
 * (plus peers of the boundary), O(offset + limit + peers) for DENSE_RANK.
 *
 * Ties: rows equal on every order key are ordered by their full encoding,
 * so which of them are kept (and their ROW_NUMBER) does not depend on
 * arrival order, step boundaries or the worker count.
 *
 * Checkpoints: the state is the partitions' rows, saved as one batch of
 * (partition key, row encoding, multiplicity) (otree.h), kept while no step
 * changes it; load() inserts them as finish() does, without output.
 */
#include "op.h"

#include "../base/mem.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "otree.h"

typedef struct TPart {
    uint8_t *key; /* partition key encoding (owned) */
    uint32_t klen;
    int64_t stamp; /* last step in which the partition changed */
    OTree t;
} TPart;

typedef struct Changed {
    TPart *part;
    ONode *n;
} Changed;

typedef struct Kept { /* one kept row (one copy) of a version */
    ONode *n;
    int64_t rank; /* rank value, or (RANK_NONE) the copy index */
} Kept;

typedef struct TopkSt {
    HMap *parts;
    OLayout lay;
    const SqlType *in_types;
    int nin;
    SqlType *ord_types; /* types of the order columns */
    Changed *chg;
    int64_t nchg, capchg;
    TPart **touched;
    int64_t ntouched, captouched;
    Kept *kept[2];
    int64_t nkept[2], capkept[2];
    Buf kb, vb, tmp;
    Batch *saved; /* the state as of the last save() or load(), while unchanged */
} TopkSt;

/* A row's record: key = its partition key, value = sort key || row. */
static void enc_topk(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    Op *op = ctx;
    TopkSt *s = op->st;
    const CNode *n = op->node;
    key_encode(c, n->part, n->npart, r, k);
    otree_sortkey(c, r, n->ord, n->ord_desc, n->ord_nulls_first, n->nord, v, &s->tmp);
    key_encode_row(c, r, v);
}

static int push_topk(Op *op, OpEnv *env, int input, Chunk *c)
{
    shard_rows(op->sh, 0, c, op->node->npart == 0, enc_topk, op);
    return 0;
}

static void add_kept(TopkSt *s, int v, ONode *n, int64_t rank)
{
    if (s->nkept[v] == s->capkept[v]) {
        s->capkept[v] = s->capkept[v] ? s->capkept[v] * 2 : 64;
        s->kept[v] = sl_realloc(s->kept[v], sizeof(Kept) * (size_t)s->capkept[v]);
    }
    s->kept[v][s->nkept[v]++] = (Kept){n, rank};
}

/* The next row (copy) of version v after (*n, *copy); false at the end. */
static bool next_row(int v, ONode **n, int64_t *copy)
{
    if (++*copy < (*n)->w[v])
        return true;
    *copy = 0;
    do
        *n = otree_next(*n);
    while (*n && (*n)->w[v] == 0);
    return *n != NULL;
}

/* The rows version v keeps, into s->kept[v]. */
static void collect(const CNode *nd, TopkSt *s, OTree *t, int v, int64_t bound)
{
    s->nkept[v] = 0;
    int64_t off = nd->offset > 0 ? nd->offset : 0, copy = 0, pos;
    ONode *x;
    if (nd->rank == RANK_DENSE) {
        int64_t dense = 0;
        ONode *prev = NULL;
        x = otree_first(t);
        while (x && x->w[v] == 0)
            x = otree_next(x);
        for (; x; prev = x, next_row(v, &x, &copy) || (x = NULL)) {
            if (copy == 0 && (!prev || !onode_peers(prev, x)))
                dense++;
            if (dense > bound)
                break;
            if (dense > off)
                add_kept(s, v, x, dense);
        }
        return;
    }
    x = otree_select(t, v, off, &copy);
    if (!x)
        return;
    pos = off;
    if (nd->rank == RANK_RANK) {
        ONode *first = otree_lower(t, x->enc, x->sklen);
        int64_t rank = otree_before(first, v) + 1;
        ONode *prev = x;
        for (; x; prev = x, pos++, next_row(v, &x, &copy) || (x = NULL)) {
            if (!onode_peers(prev, x))
                rank = pos + 1;
            if (rank > bound)
                break;
            if (rank > off)
                add_kept(s, v, x, rank);
        }
        return;
    }
    for (; x && pos < bound; pos++, next_row(v, &x, &copy) || (x = NULL))
        add_kept(s, v, x, nd->rank == RANK_NONE ? copy : pos + 1);
}

/* Can the changes chg[0..nc) of partition t alter its kept rows? */
static bool affects(const CNode *nd, OTree *t, const Changed *chg, int64_t nc, int64_t bound)
{
    if (nd->limit < 0 || nd->rank == RANK_DENSE)
        return true;
    ONode *last[2];
    for (int v = 0; v < 2; v++) {
        if (otree_count(t, v) < bound)
            return true;
        last[v] = otree_select(t, v, bound - 1, NULL);
    }
    for (int64_t i = 0; i < nc; i++) {
        const ONode *c = chg[i].n;
        for (int v = 0; v < 2; v++) {
            int cmp = nd->rank == RANK_RANK
                          ? otree_cmp(c->enc, c->sklen, last[v]->enc, last[v]->sklen)
                          : otree_cmp(c->enc, c->len, last[v]->enc, last[v]->len);
            if (cmp <= 0)
                return true;
        }
    }
    return false;
}

static void emit_row(TopkSt *s, const CNode *nd, ChunkOut *co, const Kept *k, int64_t w)
{
    int64_t r = cout_row(co);
    key_decode(k->n->enc + k->n->sklen, s->in_types, s->nin, co->c, 0, r);
    if (nd->rank != RANK_NONE)
        co->c->col[s->nin].i[r] = k->rank;
    co->c->w[r] = w;
}

static int kept_cmp(const Kept *a, const Kept *b)
{
    if (a->n != b->n)
        return otree_cmp(a->n->enc, a->n->len, b->n->enc, b->n->len);
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The output changes of one touched partition. */
static void emit_part(const CNode *nd, TopkSt *s, TPart *part, const Changed *chg, int64_t nc,
                      ChunkOut *co)
{
    int64_t off = nd->offset > 0 ? nd->offset : 0, bound;
    if (nd->limit == 0)
        return;
    if (nd->limit < 0 || __builtin_add_overflow(off, nd->limit, &bound))
        bound = INT64_MAX;
    if (!affects(nd, &part->t, chg, nc, bound))
        return;
    collect(nd, s, &part->t, 0, bound);
    collect(nd, s, &part->t, 1, bound);
    int64_t i = 0, j = 0;
    const Kept *a = s->kept[0], *b = s->kept[1];
    while (i < s->nkept[0] || j < s->nkept[1]) {
        int c = i == s->nkept[0] ? 1 : j == s->nkept[1] ? -1 : kept_cmp(&a[i], &b[j]);
        if (c == 0) {
            i++;
            j++;
        } else if (c < 0) {
            emit_row(s, nd, co, &a[i++], -1);
        } else {
            emit_row(s, nd, co, &b[j++], 1);
        }
    }
}

/* The partition of key k, created empty when absent. */
static TPart *part_of(TopkSt *s, const uint8_t *k, size_t kn)
{
    bool created;
    TPart *part = hmap_upsert(s->parts, k, kn, sl_hash(k, kn), &created);
    if (created) {
        part->key = sl_malloc(kn ? kn : 1);
        memcpy(part->key, k, kn);
        part->klen = (uint32_t)kn;
        part->stamp = -1;
    }
    return part;
}

static int finish_topk(Op *op, OpEnv *env)
{
    TopkSt *s = op->st;
    const CNode *n = op->node;
    int rc = 0;
    Batch *delta = shard_batch(op->sh, 0);
    if (delta->n && s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 16);
    for (int64_t i = 0; i < delta->n && !rc;) {
        const uint8_t *k = batch_key(delta, i);
        size_t kn = batch_klen(delta, i);
        TPart *part = part_of(s, k, kn);
        if (part->stamp != env->step) {
            part->stamp = env->step;
            if (s->ntouched == s->captouched) {
                s->captouched = s->captouched ? s->captouched * 2 : 64;
                s->touched = sl_realloc(s->touched, sizeof(TPart *) * (size_t)s->captouched);
            }
            s->touched[s->ntouched++] = part;
        }
        int64_t first = s->nchg;
        for (; i < delta->n && batch_klen(delta, i) == kn && !batch_key_cmp(delta, i, k, kn); i++) {
            const uint8_t *v = batch_val(delta, i);
            size_t vn = batch_vlen(delta, i);
            bool fresh;
            size_t sk = otree_sortkey_len(v, s->ord_types, n->ord_desc, n->nord);
            ONode *nd = otree_upsert(&s->lay, &part->t, v, vn, sk, &fresh);
            otree_add(&s->lay, nd, 1, delta->w[i]);
            if (!nd->changed) {
                nd->changed = true;
                if (s->nchg == s->capchg) {
                    s->capchg = s->capchg ? s->capchg * 2 : 64;
                    s->chg = sl_realloc(s->chg, sizeof(Changed) * (size_t)s->capchg);
                }
                s->chg[s->nchg++] = (Changed){part, nd};
            }
            if (nd->w[1] < 0)
                rc = err_set(env->ev->err, SL_ERUNTIME,
                             "top-k node %d: a row has negative multiplicity %lld (more "
                             "deletions than insertions)", n->id, (long long)nd->w[1]);
        }
        if (!rc)
            emit_part(n, s, part, s->chg + first, s->nchg - first, &co);
    }
    batch_unref(delta);
    op->out = co.c;
    return rc;
}

/* The step is over: deleted rows leave the trees, weights become "before". */
static void step_end_topk(Op *op)
{
    TopkSt *s = op->st;
    for (int64_t i = 0; i < s->nchg; i++) {
        ONode *nd = s->chg[i].n;
        nd->changed = false;
        if (nd->w[1] < 0) /* after an error: drop the row's weight */
            otree_add(&s->lay, nd, 1, -nd->w[1]);
        otree_add(&s->lay, nd, 0, nd->w[1] - nd->w[0]);
        if (nd->w[1] == 0) {
            otree_remove(&s->lay, &s->chg[i].part->t, nd);
            sl_free(nd);
        }
    }
    s->nchg = 0;
    for (int64_t i = 0; i < s->ntouched; i++) {
        TPart *p = s->touched[i];
        if (!p->t.root) {
            uint8_t *k = p->key;
            uint32_t kl = p->klen;
            hmap_delete(s->parts, k, kl, sl_hash(k, kl)); /* frees p */
            sl_free(k);
        }
    }
    s->ntouched = 0;
}

static void free_topk(Op *op)
{
    TopkSt *s = op->st;
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->parts, &it, &k, &kn, &pl)) {
        TPart *p = pl;
        otree_free(&p->t);
        sl_free(p->key);
    }
    hmap_free(s->parts);
    sl_free(s->ord_types);
    sl_free(s->chg);
    sl_free(s->touched);
    for (int v = 0; v < 2; v++)
        sl_free(s->kept[v]);
    buf_free(&s->kb);
    buf_free(&s->vb);
    buf_free(&s->tmp);
    if (s->saved)
        batch_unref(s->saved);
    sl_free(s);
}

/* State: one batch of every partition's rows (otree_save), built once and
   kept while unchanged. Between steps both weight versions are equal. */
static int save_topk(Op *op, BatchList *out)
{
    TopkSt *s = op->st;
    if (!s->saved) {
        BatchBuilder *bb = bb_new();
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(s->parts, &it, &k, &kn, &pl))
            otree_save(&((TPart *)pl)->t, k, kn, bb);
        s->saved = bb_finish(bb);
    }
    batch_ref(s->saved);
    batchlist_add(out, s->saved);
    return 0;
}

static int load_topk(Op *op, Batch *const *b, int n, Err *err)
{
    TopkSt *s = op->st;
    int id = op->node->id, rc = 0;
    if (n != 1)
        return err_set(err, SL_EIO, "top-k node %d: state has %d batches, expected 1", id, n);
    const Batch *m = b[0];
    ORow r;
    orow_init(&r, s->in_types, s->nin);
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i);
        size_t kn = batch_klen(m, i);
        if (m->w[i] <= 0 || !orow_read(&r, op->node, k, kn, batch_val(m, i), batch_vlen(m, i))) {
            rc = err_set(err, SL_EIO, "top-k node %d: saved tuple %lld is not a row of the "
                         "node's input with its partition key", id, (long long)i);
            break;
        }
        bool fresh;
        ONode *nd = otree_upsert(&s->lay, &part_of(s, k, kn)->t, r.enc.p, r.enc.n, r.sklen, &fresh);
        if (!fresh) {
            rc = err_set(err, SL_EIO, "top-k node %d: a row is saved twice", id);
            break;
        }
        otree_add(&s->lay, nd, 0, m->w[i]);
        otree_add(&s->lay, nd, 1, m->w[i]);
    }
    orow_free(&r);
    if (rc)
        return rc;
    batch_ref(b[0]);
    s->saved = b[0];
    return 0;
}

/* Another worker count: the rows of the partitions this worker owns (all
   of them on worker 0 without PARTITION BY). */
static int load_split_topk(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                         int nold, Err *err)
{
    Batch **all = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    for (int k = 0; k < nold; k++) {
        if (counts[k] != 1) {
            sl_free(all);
            return err_set(err, SL_EIO, "top-k node %d: state has %d batches, expected 1",
                           op->node->id, counts[k]);
        }
        all[k] = lists[k][0];
    }
    Batch *b = op_owned_sum(all, nold, w, W, op->node->npart == 0);
    sl_free(all);
    int rc = load_topk(op, &b, 1, err);
    batch_unref(b);
    return rc;
}

int op_topk_init(Op *op)
{
    const CNode *n = op->node;
    const CNode *src = op->circuit->nodes[n->in[0]];
    TopkSt *s = sl_calloc(1, sizeof(*s));
    s->parts = hmap_new(sizeof(TPart));
    olayout_init(&s->lay, 0, 0, NULL);
    s->in_types = src->types;
    s->nin = src->ncol;
    s->ord_types = sl_malloc(sizeof(SqlType) * (size_t)(n->nord + 1));
    for (int j = 0; j < n->nord; j++)
        s->ord_types[j] = src->types[n->ord[j]];
    op->st = s;
    op->push = push_topk;
    op->finish = finish_topk;
    op->step_end = step_end_topk;
    op->free = free_topk;
    op->save = save_topk;
    op->load = load_topk;
    op->load_split = load_split_topk;
    return 0;
}

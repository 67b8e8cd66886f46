/*
 * circuit/op_topk.c - top-k per partition: ORDER BY ... LIMIT/OFFSET of a
 * view, and ROW_NUMBER()/RANK()/DENSE_RANK() OVER (PARTITION BY ... ORDER
 * BY ...) filtered by rank <= k (non-linear).
 *
 * Delta rule: for every partition touched in a step, the output changes by
 * -(rows kept before) +(rows kept now), equal rows cancelling. The state,
 * its routing by partition key, its step and its checkpoints are the
 * partitioned ordered state of pstate.h: each partition is an ordered tree
 * of its rows (otree.h) that answers for both the state before the step
 * and after it; this file computes what a touched partition emits. The
 * kept rows of a version are its ranks (offset, offset+limit]: for
 * positions (no rank column, ROW_NUMBER) the walk starts at row `offset`
 * (found in O(log n)) and stops after `limit` rows; for RANK it starts
 * there too; DENSE_RANK walks from the first row. FETCH ... WITH TIES
 * (RANK_TIES) keeps the rows from position `offset` on whose RANK is at
 * most offset + limit: the first `limit` rows and every row tying with the
 * last of them (a change tying with it is no longer skipped).
 *
 * A partition whose changes all sort after the last kept row (before and
 * after the step) is skipped after an O(log n) check: with a small limit,
 * most changes cost O(log n) and never touch the kept prefix. Otherwise a
 * touched partition costs O(log n + offset + limit) for positions and RANK
 * (plus peers of the boundary), O(offset + limit + peers) for DENSE_RANK.
 *
 * Partitions spill under the memory budget (pstate.h, "Spilling"): a step
 * reads back those it touches.
 *
 * Ties: rows equal on every order key are ordered by their full encoding,
 * so which of them are kept (and their ROW_NUMBER) does not depend on
 * arrival order, step boundaries or the worker count.
 */
#include "pstate.h"

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/key.h"

typedef struct Kept { /* one kept row (one copy) of a version */
    ONode *n;
    int64_t rank; /* rank value, or (RANK_NONE) the copy index */
} Kept;

typedef struct TopkSt {
    PState ps; /* must be first (pstate.h) */
    Kept *kept[2];
    int64_t nkept[2], capkept[2];
} TopkSt;

static void add_kept(TopkSt *s, int v, ONode *n, int64_t rank)
{
    *VEC_PUSH(s->kept[v], s->nkept[v], s->capkept[v]) = (Kept){n, rank};
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
    if (nd->rank == RANK_RANK || nd->rank == RANK_TIES) {
        ONode *first = otree_lower(t, x->enc, x->sklen);
        int64_t rank = otree_before(first, v) + 1;
        ONode *prev = x;
        for (; x; prev = x, pos++, next_row(v, &x, &copy) || (x = NULL)) {
            if (!onode_peers(prev, x))
                rank = pos + 1;
            if (rank > bound)
                break;
            if (nd->rank == RANK_TIES) /* every row from position offset on */
                add_kept(s, v, x, copy);
            else if (rank > off)
                add_kept(s, v, x, rank);
        }
        return;
    }
    for (; x && pos < bound; pos++, next_row(v, &x, &copy) || (x = NULL))
        add_kept(s, v, x, nd->rank == RANK_NONE ? copy : pos + 1);
}

/* Can the changes chg[0..nc) of partition t alter its kept rows? */
static bool affects(const CNode *nd, OTree *t, const PChanged *chg, int64_t nc, int64_t bound)
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
            int cmp = nd->rank == RANK_RANK || nd->rank == RANK_TIES
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
    key_decode(k->n->enc + k->n->sklen, s->ps.in_types, s->ps.nin, co->c, 0, r);
    if (nd->rank != RANK_NONE && nd->rank != RANK_TIES)
        co->c->col[s->ps.nin].i[r] = k->rank;
    co->c->w[r] = w;
}

static int kept_cmp(const Kept *a, const Kept *b)
{
    if (a->n != b->n)
        return otree_cmp(a->n->enc, a->n->len, b->n->enc, b->n->len);
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The output changes of one touched partition (PState.emit). */
static int emit_part(Op *op, OpEnv *env, PPart *part, const PChanged *chg, int64_t nc,
                     ChunkOut *co)
{
    const CNode *nd = op->node;
    TopkSt *s = op->st;
    int64_t off = nd->offset > 0 ? nd->offset : 0, bound;
    if (nd->limit == 0)
        return 0;
    if (nd->limit < 0 || __builtin_add_overflow(off, nd->limit, &bound))
        bound = INT64_MAX;
    if (!affects(nd, &part->t, chg, nc, bound))
        return 0;
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
    return 0;
}

static void free_topk(Op *op)
{
    TopkSt *s = op->st;
    pstate_free(&s->ps);
    for (int v = 0; v < 2; v++)
        sl_free(s->kept[v]);
    sl_free(s);
}

int op_topk_init(Op *op)
{
    TopkSt *s = sl_calloc(1, sizeof(*s));
    op->st = s;
    pstate_init(op, &s->ps, "top-k");
    s->ps.emit = emit_part;
    pstate_spillable(&s->ps);
    op->free = free_topk;
    return 0;
}

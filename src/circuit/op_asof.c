/*
 * circuit/op_asof.c - ASOF join (non-linear): for each left row, the right
 * row with the same key whose timestamp is the closest one satisfying the
 * match condition (l.ts >= r.ts, >, <=, <); LEFT ASOF keeps a left row
 * without match with NULL right columns.
 *
 * The planner (sql/plan_asof.c) feeds one input, the union of both sides
 * as rows (keys, ts, side, left columns, right columns), so the state is
 * the partitioned ordered state of pstate.h: one partition per key, an
 * ordered tree of its left and right rows by (ts, side, row) answering for
 * the state before the step and after it. The side is ordered so that a
 * right row tying with a left row on ts comes before it in the direction
 * of the search when the condition admits equality (>=, <=) and after it
 * when it does not (>, <). A left row's match in version v is then the
 * nearest right row of weight > 0 in v before it (>=, >; "backward") or
 * after it (<=, <; "forward"), and a left row with a NULL ts has none.
 *
 * Delta rule: a left row whose weight or match changed emits -(w0 copies
 * of it with its old match) +(w1 copies with its new match). The tree's
 * nodes carry one sum slot that counts right rows per subtree and version,
 * so the nearest right row present in a version, on either side of any
 * row, is found in O(log n). A changed left row looks up its two matches
 * and emits its own pair. A changed right row can only change the matches
 * of the left rows between it and the next right row present in both
 * versions (in the search direction): emit() sweeps them from it, carrying
 * the current match of each version along. A step therefore costs, per
 * changed row, O(log n) plus, for a right row inserted or deleted, the
 * left rows its sweep visits, which are those whose match it was or
 * becomes (the output it causes); a right row whose weight changes
 * between two positive values costs O(log n). State: every row of both
 * sides once (key, ts and side repeated in its sort key and row).
 *
 * Ties between right rows of one key with equal timestamps: the tree
 * orders them by their whole row (key.h order: columns left to right, NULL
 * lowest, strings by bytes), so the match is the greatest such row for >=
 * and >, the smallest for <= and <. Which row matches therefore does not
 * depend on arrival order, step boundaries or the worker count. A left row
 * of multiplicity k gives k output rows; a right row's multiplicity does
 * not multiply them.
 */
#include "pstate.h"

#include <stdlib.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "watermark.h"

typedef struct AsofSt {
    PState ps; /* must be first (pstate.h) */
    ONode **sw; /* changed rows of a partition, in search order */
    int64_t capsw;
    /* pstate's own step functions (wrapped for the watermark's forgetting) */
    int (*base_finish)(Op *op, OpEnv *env);
    void (*base_step_end)(Op *op);
    bool gc;          /* the timestamp has a watermark this step: gc_bound */
    int64_t gc_bound, gc_done; /* and the bound of the last forgetting */
} AsofSt;

/* Is n a right row? The side is the last byte of the sort key: BOOLEAN,
   one byte with the sign bit flipped (key.h: TRUE is 0x81), inverted when
   the side is ordered DESC. */
static bool is_right(const CNode *nd, const ONode *n)
{
    uint8_t b = n->enc[n->sklen - 1];
    return b == (nd->ord_desc[1] ? (uint8_t)~0x81 : 0x81);
}

/* Does left row n have a NULL timestamp (it matches nothing)? NULLs sort
   first (marker byte 0x00). */
static bool null_ts(const ONode *n)
{
    return n->enc[0] == 0x00;
}

/* Node values (PState.fresh): value 0 is non-NULL exactly for right rows,
   so the tree's sum slot over it counts, per subtree and version, the
   right rows (with multiplicity). */
static void set_side(Op *op, ONode *n)
{
    AsofSt *s = op->st;
    OVal *v = onode_vals(&s->ps.lay, n);
    v->null = !is_right(op->node, n);
    v->i = 1;
}

static bool right_node(const OLayout *lay, const ONode *n, int v)
{
    return !onode_vals(lay, n)[0].null && n->w[v] > 0;
}

/* Does subtree t hold a right row of weight > 0 in version v? */
static bool has_right(const OLayout *lay, const ONode *t, int v)
{
    return t && onode_sums(lay, t)[0].n[v] > 0;
}

/* The last (leftward: the rightmost) or first right row of weight > 0 in
   version v of subtree t, which has one. */
static const ONode *extreme(const OLayout *lay, const ONode *t, int v, bool leftward)
{
    for (;;) {
        const ONode *near = leftward ? t->r : t->l, *far = leftward ? t->l : t->r;
        if (has_right(lay, near, v))
            t = near;
        else if (right_node(lay, t, v))
            return t;
        else
            t = far;
    }
}

/* The right row of weight > 0 in version v nearest to x (exclusive)
   towards the start of the tree (leftward) or its end, or NULL: one
   descent and one climb, O(log n). */
static const ONode *nearest(const OLayout *lay, const ONode *x, int v, bool leftward)
{
    const ONode *sub = leftward ? x->l : x->r;
    if (has_right(lay, sub, v))
        return extreme(lay, sub, v, leftward);
    for (const ONode *c = x, *p = x->p; p; c = p, p = p->p) {
        if ((leftward ? p->l : p->r) == c)
            continue; /* p is on the other side of x */
        if (right_node(lay, p, v))
            return p;
        const ONode *o = leftward ? p->l : p->r;
        if (has_right(lay, o, v))
            return extreme(lay, o, v, leftward);
    }
    return NULL;
}

/* The next row in the direction of the sweep (away from the matches). */
static ONode *step_fwd(const CNode *nd, const ONode *n)
{
    return nd->asof_back ? otree_next(n) : otree_prev(n);
}

/* Append w copies (weight w) of left row x joined with right row m (NULL:
   no match: nothing for an inner join, NULL right columns for LEFT). */
static void emit_pair(AsofSt *s, const CNode *nd, ChunkOut *co, const ONode *x, const ONode *m,
                      int64_t w)
{
    if (w == 0 || (!m && !nd->asof_outer))
        return;
    const SqlType *t = s->ps.in_types;
    int lo = nd->npart + 2, nl = nd->asof_nl, nr = nd->ncol - nl;
    int64_t r = cout_row(co);
    const uint8_t *p = key_skip(x->enc + x->sklen, t, lo);
    key_decode(p, t + lo, nl, co->c, 0, r);
    if (m) {
        p = key_skip(m->enc + m->sklen, t, lo + nl);
        key_decode(p, t + lo + nl, nr, co->c, nl, r);
    } else {
        for (int j = 0; j < nr; j++)
            vec_set_null(&co->c->col[nl + j], r);
    }
    co->c->w[r] = w;
}

/* Left row x, whose matches are m0 (before the step) and m1 (now). */
static void emit_left(AsofSt *s, const CNode *nd, ChunkOut *co, const ONode *x, const ONode *m0,
                      const ONode *m1)
{
    if (null_ts(x))
        m0 = m1 = NULL;
    int64_t w0 = x->w[0], w1 = x->w[1];
    if (m0 == m1) {
        emit_pair(s, nd, co, x, m0, w1 - w0);
        return;
    }
    emit_pair(s, nd, co, x, m0, -w0);
    emit_pair(s, nd, co, x, m1, w1);
}

static int sweep_cmp(const void *a, const void *b)
{
    const ONode *x = *(ONode *const *)a, *y = *(ONode *const *)b;
    return otree_cmp(x->enc, x->len, y->enc, y->len);
}

/* The output changes of one touched partition (PState.emit). */
static int emit_part(Op *op, OpEnv *env, PPart *part, const PChanged *chg, int64_t nc,
                     ChunkOut *co)
{
    (void)env;
    (void)part;
    const CNode *nd = op->node;
    AsofSt *s = op->st;
    if (nc > s->capsw) {
        s->capsw = nc;
        s->sw = sl_realloc(s->sw, sizeof(ONode *) * (size_t)nc);
    }
    for (int64_t i = 0; i < nc; i++)
        s->sw[i] = chg[i].n;
    qsort(s->sw, (size_t)nc, sizeof(ONode *), sweep_cmp);
    if (!nd->asof_back) /* sweep from the end */
        for (int64_t i = 0, j = nc - 1; i < j; i++, j--) {
            ONode *t = s->sw[i];
            s->sw[i] = s->sw[j];
            s->sw[j] = t;
        }
    const ONode *stop = NULL; /* the last sweep ended at this row (NULL: not yet) */
    bool done = false;        /* the last sweep reached the end */
    const OLayout *lay = &s->ps.lay;
    for (int64_t i = 0; i < nc && !done; i++) {
        ONode *c = s->sw[i];
        if (stop) { /* inside the last sweep? */
            int cmp = otree_cmp(c->enc, c->len, stop->enc, stop->len);
            if (nd->asof_back ? cmp <= 0 : cmp >= 0)
                continue;
        }
        /* the matches before c, in each version */
        const ONode *m[2] = {nearest(lay, c, 0, nd->asof_back), nearest(lay, c, 1, nd->asof_back)};
        if (!is_right(nd, c)) { /* a left row: its own pair only */
            emit_left(s, nd, co, c, m[0], m[1]);
            continue;
        }
        /* a right row: sweep from it up to a right row present in both
           versions; the left rows on the way are those whose match may
           have changed */
        const ONode *x = c;
        for (; x; x = step_fwd(nd, x)) {
            if (!is_right(nd, x)) {
                emit_left(s, nd, co, x, m[0], m[1]);
                continue;
            }
            for (int v = 0; v < 2; v++)
                if (x->w[v] > 0)
                    m[v] = x;
            if (x->w[0] > 0 && x->w[1] > 0)
                break;
        }
        stop = x;
        done = !x;
    }
    return 0;
}

/* ---- forgetting below the watermark ----
 *
 * With LATENESS on both sides' timestamps, the input's timestamp column
 * has a watermark W (the lesser of the two, through the union): no change
 * with a timestamp below W will come. Of the rows below W (NULL
 * timestamps never go), per key, with R the last right row below W:
 *   backward (>=, >): a left row can no longer change nor change match
 *     (a new right row would have a timestamp >= W > its own): it goes;
 *     a right row goes unless it is R, the match of every later left row
 *     that has no right row between R and itself;
 *   forward (<=, <): a left row before R has its match below W, which no
 *     new right row can beat: it goes; the left rows after R keep
 *     waiting; every right row goes (no left row kept or to come can
 *     match it).
 * Their output stays in the view (forgetting emits nothing). The state of
 * an in-order stream stays O(keys + rows within the lateness). Between
 * steps, when W has moved: O(keys + rows forgotten + log n) per key.
 *
 * Spilling: the partitions spill as top-k and window partitions do
 * (pstate_spillable, pstate.c "Spilling"): between steps the budget moves
 * cold partitions into the state's cold trace, and a step reads back the
 * partitions its input touches, so the emit above always sees whole trees.
 * The forgetting walks only the partitions in memory (pstate_forget: the
 * rows it drops leave the cold trace too, which holds every partition
 * once they spilled): a cold partition keeps its rows below W until a
 * step reads it back, and the first forgetting after that drops them.
 * Forgetting never changes the output (the rows it drops can no longer
 * change a match), so the output is the same as in memory; only the cold
 * trace holds those rows a while longer.
 */

static int finish_asof(Op *op, OpEnv *env)
{
    AsofSt *s = op->st;
    const CNode *nd = op->node;
    int rc = s->base_finish(op, env);
    SqlType t = s->ps.in_types[nd->npart];
    int ts = nd->npart;
    s->gc = wm_first_col(env, nd->in[0], &ts, 1, &t, &s->gc_bound) >= 0 &&
            (s->gc_done == WM_NONE || s->gc_bound > s->gc_done);
    return rc;
}

/* Forget the rows below key[0..kn) (the sort key prefix of the bound) of
   partition part's tree; true when something went. */
static bool forget_part(AsofSt *s, const CNode *nd, PPart *part, const uint8_t *key, size_t kn,
                        BatchBuilder **cold_bb)
{
    OTree *t = &part->t;
    static const uint8_t present = 0x01; /* the first row with a timestamp */
    ONode *first = otree_lower(t, &present, 1), *last_r = NULL;
    for (ONode *x = first; x && memcmp(x->enc, key, kn) < 0; x = otree_next(x))
        if (is_right(nd, x))
            last_r = x;
    bool any = false;
    bool before_r = last_r != NULL; /* forward: still before R */
    for (ONode *x = first, *nx; x && memcmp(x->enc, key, kn) < 0; x = nx) {
        nx = otree_next(x);
        bool go;
        if (is_right(nd, x))
            go = nd->asof_back ? x != last_r : true;
        else
            go = nd->asof_back || before_r;
        if (x == last_r)
            before_r = false;
        if (go) {
            pstate_forget(&s->ps, part, x, cold_bb);
            any = true;
        }
    }
    return any;
}

static void step_end_asof(Op *op)
{
    AsofSt *s = op->st;
    const CNode *nd = op->node;
    s->base_step_end(op);
    if (!s->gc)
        return;
    s->gc = false;
    s->gc_done = s->gc_bound;
    /* the bound as a sort key prefix: the timestamp column, ascending */
    Arena *a = arena_new(256);
    SqlType tt = s->ps.in_types[nd->npart];
    tt.nullable = false;
    Chunk *c = chunk_new(a, 1, &tt, 1);
    c->col[0].i[0] = s->gc_bound;
    c->n = 1;
    Buf key = {0};
    otree_sortkey(c, 0, (int[]){0}, (bool[]){false}, (bool[]){true}, 1, &key, &s->ps.tmp);
    arena_free(a);
    PPart **empty = NULL;
    int64_t nempty = 0, capempty = 0;
    bool any = false;
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    BatchBuilder *cold_bb = NULL;
    while (hmap_next(s->ps.parts, &it, &k, &kn, &pl)) {
        PPart *part = pl;
        any |= forget_part(s, nd, part, key.p, key.n, &cold_bb);
        if (!part->t.root)
            *VEC_PUSH(empty, nempty, capempty) = part;
    }
    pstate_forget_end(&s->ps, cold_bb, empty, nempty);
    sl_free(empty);
    buf_free(&key);
    if (any && s->ps.saved) { /* the checkpoint copy is out of date */
        batch_unref(s->ps.saved);
        s->ps.saved = NULL;
    }
}

static void free_asof(Op *op)
{
    AsofSt *s = op->st;
    pstate_free(&s->ps);
    sl_free(s->sw);
    sl_free(s);
}

int op_asof_init(Op *op)
{
    AsofSt *s = sl_calloc(1, sizeof(*s));
    op->st = s;
    pstate_init(op, &s->ps, "asof join");
    static const int sum_of[1] = {0};
    olayout_init(&s->ps.lay, 1, 1, sum_of); /* the right rows per subtree */
    s->ps.emit = emit_part;
    s->ps.fresh = set_side;
    pstate_spillable(&s->ps); /* cold partitions spill (below, "Spilling") */
    s->base_finish = op->finish;
    s->base_step_end = op->step_end;
    op->finish = finish_asof;
    op->step_end = step_end_asof;
    s->gc_done = WM_NONE;
    op->free = free_asof;
    return 0;
}

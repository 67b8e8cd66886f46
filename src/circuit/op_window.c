/*
 * circuit/op_window.c - window functions over partitions (non-linear):
 * ROW_NUMBER, RANK, DENSE_RANK, LAG, LEAD, NTILE, PERCENT_RANK, CUME_DIST,
 * and COUNT/SUM/AVG/MIN/MAX/FIRST_VALUE/LAST_VALUE/NTH_VALUE over ROWS,
 * RANGE or GROUPS frames (with EXCLUDE; COUNT/SUM/AVG also DISTINCT;
 * FIRST/LAST/NTH_VALUE, LAG and LEAD also IGNORE NULLS). Output: the input
 * columns, then one column per function (CNode.wfn).
 *
 * Delta rule: for every partition touched in a step, each row whose output
 * can have changed is emitted as -(old output) +(new output), unchanged
 * outputs cancelling. The state, its routing by partition key, its step
 * and its checkpoints are the partitioned ordered state of pstate.h: a
 * partition lives on one worker in an ordered tree (otree.h) that answers
 * for the state before the step (version 0) and after it (version 1), so
 * both outputs come from one tree; this file computes what a touched
 * partition emits. Its nodes carry the decoded values the functions read
 * (set_vals) and prefix sums of the integer ones.
 *
 * Which rows can change: for every changed row e and function f, an
 * interval of the partition (in row order) that contains e and every row
 * whose f-value depends on e, computed in O(log n) from e's position in
 * each version:
 *   ROW_NUMBER, RANK, DENSE_RANK:       e .. end (the ranks after e shift)
 *   NTILE, PERCENT_RANK, CUME_DIST:     the same (CUME_DIST: from e's first
 *                                       peer), but the whole partition when
 *                                       its row count changed (they divide
 *                                       by it)
 *   LAG(k) / LEAD(k):                   e .. k rows after / k rows before .. e
 *   ... IGNORE NULLS:                   e .. the k-th non-NULL row after /
 *                                       from the k-th non-NULL row before
 *   ROWS a PRECEDING .. b FOLLOWING:    b rows before e .. a rows after e
 *   RANGE frames:                       rows whose value range reaches e's
 *                                       value (peers for CURRENT ROW; month
 *                                       offsets widened by 3 days)
 *   GROUPS a PRECEDING .. b FOLLOWING:  b groups before e's .. a groups
 *                                       after (counted in each version)
 *   EXCLUDE:                            also e's peers
 *   (FIRST/LAST/NTH_VALUE as the aggregates: their frame's rows)
 *   UNBOUNDED bounds extend the interval to the partition's end or start.
 * The intervals of a partition are merged, then each is walked once in row
 * order, computing every function for both versions with sliding state:
 * frames keep an accumulator that adds the rows entering the frame and
 * removes those leaving it (exact: 128-bit integer sums, XSum for floats,
 * a monotonic deque for MIN/MAX; DISTINCT: a hash table of the values'
 * copies, a value counted while it has one), LAG/LEAD and
 * FIRST/LAST/NTH_VALUE keep a cursor on the target row (which only moves
 * forward along an interval: frame start and end never decrease). GROUPS
 * bounds are cursors on a group's first row that move one group when the
 * current row enters the next group. With EXCLUDE the frame is two pieces,
 * before and after the excluded rows, each sliding forward (EXCLUDE TIES
 * adds the current row for its own value); FIRST/LAST/NTH_VALUE over them,
 * and IGNORE NULLS with NTH_VALUE, LAG and LEAD, select their row in O(log
 * n) by position or by non-NULL count (a sum slot of the argument counts
 * its non-NULL rows per subtree).
 *
 * Cost per step and touched partition, with d changed rows, n rows and m
 * rows in the merged intervals: O(d log n) to apply the changes and find
 * the intervals, plus O(m) to walk them, plus the first frame of each
 * interval: O(log n) for COUNT and integer/DECIMAL SUM/AVG (prefix sums
 * kept in the tree), a scan of that frame for DOUBLE SUM/AVG and MIN/MAX
 * (so O(position) for UNBOUNDED PRECEDING frames), O(log n) for
 * FIRST/LAST/NTH_VALUE (IGNORE NULLS: a scan of the frame from its start
 * to the first non-NULL value, to its end for LAST_VALUE), O(k log n) for
 * a GROUPS bound k groups away, a scan of that frame for DISTINCT, and
 * O(position) for DENSE_RANK. Rank functions and frames reaching UNBOUNDED FOLLOWING
 * or PRECEDING change every row after (before) a change: there m is the
 * size of the output change itself; so do NTILE, PERCENT_RANK and
 * CUME_DIST for the whole partition when its row count changes.
 *
 * Checkpoints (pstate.h) hold the partitions' rows: the evaluators (FEval)
 * hold nothing between steps. Partitions spill (pstate.h, "Spilling"): a
 * partition read back gets its node values again (set_vals).
 */
#include "pstate.h"

#include <math.h>
#include <stdlib.h>

#include "../base/hash.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "../expr/xsum.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

#define US_PER_DAY INT64_C(86400000000)

typedef struct PCur { /* a row of one version: node, copy, position */
    ONode *n;
    int64_t copy, pos;
} PCur;

typedef struct DQ {
    int64_t pos;
    const OVal *v;
} DQ;

/* Rows [lo.pos, hi.pos) of a frame, in the accumulator. A frame is one
   piece, or with EXCLUDE two: the rows before and after the excluded ones
   (each piece's ends never decrease along an interval either). */
typedef struct Piece {
    PCur lo, hi;
    DQ *dq;              /* MIN/MAX: monotonic deque dq[dqh..dqt) */
    int64_t dqh, dqt, dqcap;
} Piece;

/* A GROUPS frame bound: c is the first row of the peer group d groups
   after (d < 0: before) the current row's, clamped to the partition (row 0
   with d above the bound's offset, the end with d below it). */
typedef struct GCur {
    PCur c;
    int64_t d;
} GCur;

typedef struct FEval { /* one function, one version, within one interval */
    bool init;
    int64_t N;           /* rows of the version */
    const ONode *prev;   /* previous row (ranks; peers for GROUPS and EXCLUDE) */
    int64_t rank;
    bool tset;           /* LAG/LEAD target cursor t is positioned */
    PCur t;
    PCur ps, pe;         /* RANGE probes: frame start, one past frame end */
    GCur gs, ge;         /* GROUPS bounds: frame start, one past frame end */
    int64_t g1, g2;      /* EXCLUDE: the current row's peers are rows [g1, g2) */
    const OVal *lastv;   /* LAST_VALUE IGNORE NULLS: the last non-NULL value */
    int64_t lastpos;     /* before t, and its position (-1: none) */
    Piece pc[2];         /* the frame's pieces */
    __int128 isum;       /* sums over all pieces */
    int64_t nn, rows;
    XSum *xs;            /* floating SUM/AVG */
    HMap *dist;          /* DISTINCT: value -> copies in the frame */
} FEval;

typedef struct Ival {
    ONode *lo, *hi;
} Ival;

typedef struct WinSt {
    PState ps;           /* must be first (pstate.h) */
    int nfn;
    int nval;
    int *val_col;        /* per value slot: the input column decoded into nodes */
    int *sum_of;         /* per sum slot: its value slot */
    int *fn_arg, *fn_def, *fn_key, *fn_sum; /* per function: value/sum slot or -1 */
    int *fn_cnt;         /* per function: sum slot counting the argument's non-NULL
                            rows (IGNORE NULLS by counting), or -1 */
    FEval *ev;           /* [function * 2 + version] */
    Ival *iv;
    int64_t niv, capiv;
    OVal *vals;          /* outputs of one node's copies, both versions */
    int64_t capvals;
    Arena *scratch_arena;
    Chunk *scratch;      /* one input row, for decoding values into nodes */
    Chunk *kscratch;     /* one order key value, for RANGE bound keys */
    Buf tmp, key[2];     /* scratch of RANGE bound keys */
} WinSt;

/* ---- cursors --------------------------------------------------------------- */

static void pc_at(PCur *c, const OTree *t, int v, int64_t pos)
{
    c->pos = pos;
    c->copy = 0;
    c->n = otree_select(t, v, pos, &c->copy);
}

/* The first row of version v at or after node x (x NULL: the end, n rows). */
static void pc_node(PCur *c, ONode *x, int v, int64_t n)
{
    c->copy = 0;
    if (!x) {
        c->n = NULL;
        c->pos = n;
        return;
    }
    c->pos = otree_before(x, v);
    while (x && x->w[v] == 0)
        x = otree_next(x);
    c->n = x;
}

static void pc_next(PCur *c, int v)
{
    c->pos++;
    if (!c->n)
        return;
    if (++c->copy < c->n->w[v])
        return;
    c->copy = 0;
    do
        c->n = otree_next(c->n);
    while (c->n && c->n->w[v] == 0);
}

/* ---- values ---------------------------------------------------------------- */

static int oval_cmp(const OVal *a, const OVal *b, Phys ph)
{
    switch (ph) {
    case PHYS_I64: return (a->i > b->i) - (a->i < b->i);
    case PHYS_F64: return (a->f > b->f) - (a->f < b->f);
    default: return otree_cmp((const uint8_t *)a->s.p, a->s.n, (const uint8_t *)b->s.p, b->s.n);
    }
}

static bool oval_eq(const OVal *a, const OVal *b, Phys ph)
{
    if (a->null || b->null)
        return a->null == b->null;
    return oval_cmp(a, b, ph) == 0;
}

static void set_val(Vec *v, int64_t r, const OVal *x)
{
    if (x->null) {
        vec_set_null(v, r);
        return;
    }
    if (v->nul)
        v->nul[r] = 0;
    if (v->i)
        v->i[r] = x->i;
    else if (v->f)
        v->f[r] = x->f;
    else
        v->s[r] = x->s;
}

static const OVal *node_val(const WinSt *s, const ONode *x, int slot)
{
    return &onode_vals(&s->ps.lay, x)[slot];
}

/* ---- frame accumulators ------------------------------------------------- */

static bool uses_prefix(const WinSt *s, const WinFunc *f, int fi)
{
    return f->kind == WIN_COUNT_STAR || s->fn_sum[fi] >= 0;
}

static void acc_reset(FEval *e)
{
    e->isum = 0;
    e->nn = e->rows = 0;
    if (e->xs)
        memset(e->xs, 0, sizeof(XSum));
    for (int k = 0; k < 2; k++)
        e->pc[k].dqh = e->pc[k].dqt = 0;
    if (e->dist) {
        hmap_free(e->dist);
        e->dist = NULL;
    }
}

/* Copies of value x in the frame of DISTINCT e change by sign: the new
   count (0 once the last copy leaves). */
static int64_t dist_count(FEval *e, const OVal *x, Phys ph, int sign)
{
    const uint8_t *k;
    size_t kn;
    double d;
    if (ph == PHYS_I64) {
        k = (const uint8_t *)&x->i;
        kn = sizeof(x->i);
    } else if (ph == PHYS_F64) {
        d = x->f == 0 ? 0.0 : x->f; /* -0.0 = 0.0 */
        k = (const uint8_t *)&d;
        kn = sizeof(d);
    } else {
        k = (const uint8_t *)x->s.p;
        kn = x->s.n;
    }
    uint64_t h = sl_hash(k, kn);
    if (!e->dist)
        e->dist = hmap_new(sizeof(int64_t));
    bool created;
    int64_t *c = hmap_upsert(e->dist, k, kn, h, &created);
    int64_t n = *c += sign;
    if (!n)
        hmap_delete(e->dist, k, kn, h);
    return n;
}

/* Row c enters (sign 1) or leaves (-1) piece pc of the frame. */
static void acc_row(const WinSt *s, const WinFunc *f, int fi, FEval *e, Piece *pc,
                    const PCur *c, int sign)
{
    if (f->kind == WIN_COUNT_STAR) {
        e->rows += sign;
        return;
    }
    const OVal *x = node_val(s, c->n, s->fn_arg[fi]);
    if (f->kind == WIN_MIN || f->kind == WIN_MAX) {
        if (sign < 0) {
            if (pc->dqh < pc->dqt && pc->dq[pc->dqh].pos == c->pos)
                pc->dqh++;
            return;
        }
        if (x->null)
            return;
        Phys ph = type_phys(f->in_t);
        while (pc->dqt > pc->dqh) {
            int cmp = oval_cmp(pc->dq[pc->dqt - 1].v, x, ph);
            if (f->kind == WIN_MIN ? cmp < 0 : cmp > 0)
                break;
            pc->dqt--;
        }
        if (pc->dqh > 0 && pc->dqt == pc->dqcap) { /* slide down */
            memmove(pc->dq, pc->dq + pc->dqh, sizeof(DQ) * (size_t)(pc->dqt - pc->dqh));
            pc->dqt -= pc->dqh;
            pc->dqh = 0;
        }
        *VEC_PUSH(pc->dq, pc->dqt, pc->dqcap) = (DQ){c->pos, x};
        return;
    }
    if (x->null)
        return;
    if (f->distinct) { /* only a value's first copy in, its last copy out counts */
        int64_t n = dist_count(e, x, type_phys(f->in_t), sign);
        if (n != (sign > 0 ? 1 : 0))
            return;
    }
    e->nn += sign;
    if (f->kind == WIN_COUNT)
        return;
    if (e->xs)
        xsum_add(e->xs, x->f, sign);
    else
        e->isum += sign > 0 ? (__int128)x->i : -(__int128)x->i;
}

static int64_t clamp_pos(__int128 x, int64_t n)
{
    return x < 0 ? 0 : x > n ? n : (int64_t)x;
}

/* A DATE (days) or TIMESTAMP (microseconds) key moved by `months`
   calendar months (the day clamped to the month's end, as PostgreSQL
   does), then by `days`; saturating. */
static int64_t shift_key(TypeKind k, int64_t x, int64_t months, int64_t days)
{
    bool date = k == TK_DATE;
    int64_t d = date ? x : (x >= 0 ? x / US_PER_DAY : -((-(x + 1)) / US_PER_DAY) - 1), r;
    if (!date_shift_months(d, months, &r))
        return months > 0 ? INT64_MAX : INT64_MIN;
    r += days;
    if (date)
        return r;
    __int128 y = (__int128)r * US_PER_DAY + (x - d * US_PER_DAY);
    return y > INT64_MAX ? INT64_MAX : y < INT64_MIN ? INT64_MIN : (int64_t)y;
}

/* Bound key of a RANGE frame for current row x: its sort key, or the sort
   key of its value moved n (nf; n months with `months`) earlier (sign -1)
   or later (+1) in the window order. With `widen` (the rows a change
   reaches), a move by months goes 3 days further: r - n months <= e
   implies r <= e + n months + 3 days (month ends differ by at most 3). */
static void range_key(WinSt *s, const CNode *nd, const WinFunc *f, int fi, const ONode *x,
                      FrameBound b, int64_t n, double nf, bool months, bool widen, Buf *out)
{
    buf_reset(out);
    const OVal *val = s->fn_key[fi] >= 0 ? node_val(s, x, s->fn_key[fi]) : NULL;
    if (b == FB_CURRENT_ROW || !val || val->null) {
        buf_append(out, x->enc, x->sklen);
        return;
    }
    int sign = b == FB_PRECEDING ? -1 : 1;
    if (nd->ord_desc[0])
        sign = -sign;
    Vec *v = &s->kscratch->col[0];
    if (v->nul)
        v->nul[0] = 0;
    if (v->f) {
        v->f[0] = val->f + sign * nf;
    } else {
        int64_t lo = INT64_MIN, hi = INT64_MAX, r;
        TypeKind k = (TypeKind)v->t.kind;
        if (type_is_integer(k))
            type_int_range(k, &lo, &hi);
        else if (k == TK_DATE)
            lo = INT32_MIN, hi = INT32_MAX;
        if (months)
            r = shift_key(k, val->i, sign > 0 ? n : -n, widen ? sign * 3 : 0);
        else if (__builtin_add_overflow(val->i, sign > 0 ? n : -n, &r))
            r = sign > 0 ? INT64_MAX : INT64_MIN;
        v->i[0] = r < lo ? lo : r > hi ? hi : r;
    }
    static const int zero = 0;
    otree_sortkey(s->kscratch, 0, &zero, nd->ord_desc, nd->ord_nulls_first, 1, out, &s->tmp);
}

/* Frame [*S, *E) of the row at q (node x) in version v. */
/* Position of node x in version v (NULL: the end, n). */
static int64_t pos_of(ONode *x, int v, int64_t n)
{
    return x ? otree_before(x, v) : n;
}

/* g: past the rows of its peer group (to the next group's first row). */
static void gc_skip(GCur *g, const OTree *t, int v, int64_t N)
{
    pc_node(&g->c, otree_beyond(t, g->c.n->enc, g->c.n->sklen), v, N);
}

/* g: the first row of the group k groups from the current row x's. */
static void gc_init(GCur *g, const OTree *t, int v, int64_t N, const ONode *x, int64_t k)
{
    pc_node(&g->c, otree_lower(t, x->enc, x->sklen), v, N);
    g->d = 0;
    while (g->d > k && g->c.pos > 0) {
        ONode *p = g->c.n ? otree_prev(g->c.n) : otree_last(t);
        while (!p->w[v])
            p = otree_prev(p);
        pc_node(&g->c, otree_lower(t, p->enc, p->sklen), v, N);
        g->d--;
    }
    while (g->d < k && g->c.n) {
        gc_skip(g, t, v, N);
        g->d++;
    }
}

/* The current row moved into the next group: g follows, one group on. */
static void gc_next(GCur *g, const OTree *t, int v, int64_t N, int64_t k)
{
    g->d--;
    while (g->d < k && g->c.n) {
        gc_skip(g, t, v, N);
        g->d++;
    }
}

/* The group offset of a GROUPS bound: of the first row of the frame's first
   group (start) or of the group after its last (end). */
static int64_t group_off(FrameBound b, int64_t n, bool end)
{
    if (n > INT64_MAX / 4)
        n = INT64_MAX / 4;
    return (b == FB_PRECEDING ? -n : b == FB_FOLLOWING ? n : 0) + end;
}

/* Frame [*S, *E) of the row at q (node x) in version v; ng: x is the first
   row fed of its peer group. */
static void frame_of(WinSt *s, const CNode *nd, const WinFunc *f, int fi, FEval *e,
                     const OTree *t, int v, const ONode *x, int64_t q, bool ng, int64_t *S,
                     int64_t *E)
{
    int64_t N = e->N;
    if (f->groups) {
        int64_t ks = group_off(f->start, f->start_n, false), ke = group_off(f->end, f->end_n, true);
        if (f->start == FB_UNBOUNDED_PRECEDING)
            *S = 0;
        else {
            if (!e->init)
                gc_init(&e->gs, t, v, N, x, ks);
            else if (ng)
                gc_next(&e->gs, t, v, N, ks);
            *S = e->gs.c.pos;
        }
        if (f->end == FB_UNBOUNDED_FOLLOWING)
            *E = N;
        else {
            if (!e->init)
                gc_init(&e->ge, t, v, N, x, ke);
            else if (ng)
                gc_next(&e->ge, t, v, N, ke);
            *E = e->ge.c.pos;
        }
    } else if (f->rows) {
        __int128 a, b;
        switch (f->start) {
        case FB_UNBOUNDED_PRECEDING: a = 0; break;
        case FB_PRECEDING: a = (__int128)q - f->start_n; break;
        case FB_FOLLOWING: a = (__int128)q + f->start_n; break;
        default: a = q; break;
        }
        switch (f->end) {
        case FB_UNBOUNDED_FOLLOWING: b = N; break;
        case FB_PRECEDING: b = (__int128)q - f->end_n + 1; break;
        case FB_FOLLOWING: b = (__int128)q + f->end_n + 1; break;
        default: b = (__int128)q + 1; break;
        }
        *S = clamp_pos(a, N);
        *E = clamp_pos(b, N);
    } else {
        if (f->start == FB_UNBOUNDED_PRECEDING) {
            *S = 0;
        } else {
            range_key(s, nd, f, fi, x, f->start, f->start_n, f->start_f, f->start_months, false,
                      &s->key[0]);
            const uint8_t *k = s->key[0].p;
            size_t kn = s->key[0].n;
            if (!e->init) {
                pc_node(&e->ps, otree_lower(t, k, kn), v, N);
            } else {
                while (e->ps.n && otree_cmp(e->ps.n->enc, e->ps.n->sklen, k, kn) < 0)
                    pc_next(&e->ps, v);
            }
            *S = e->ps.pos;
        }
        if (f->end == FB_UNBOUNDED_FOLLOWING) {
            *E = N;
        } else {
            range_key(s, nd, f, fi, x, f->end, f->end_n, f->end_f, f->end_months, false,
                      &s->key[1]);
            const uint8_t *k = s->key[1].p;
            size_t kn = s->key[1].n;
            if (!e->init) {
                pc_node(&e->pe, otree_beyond(t, k, kn), v, N);
            } else {
                /* past every row whose encoding starts with a prefix <= k */
                while (e->pe.n && onode_cmp_key(e->pe.n, k, kn) <= 0)
                    pc_next(&e->pe, v);
            }
            *E = e->pe.pos;
        }
    }
    if (*E < *S)
        *E = *S;
}

/* Move piece k of the accumulator to rows [S, E) (S and E never
   decrease). */
static void acc_move(WinSt *s, const WinFunc *f, int fi, FEval *e, int k, const OTree *t, int v,
                     int64_t S, int64_t E)
{
    Piece *pc = &e->pc[k];
    if (!f->exclude && S >= pc->hi.pos && S - pc->hi.pos > 64) { /* a jump: start over at S */
        acc_reset(e);
        pc_at(&pc->lo, t, v, S);
        pc->hi = pc->lo;
    }
    while (pc->hi.pos < E) {
        acc_row(s, f, fi, e, pc, &pc->hi, 1);
        pc_next(&pc->hi, v);
    }
    while (pc->lo.pos < S) {
        acc_row(s, f, fi, e, pc, &pc->lo, -1);
        pc_next(&pc->lo, v);
    }
}

/* Set up piece k of the accumulator on its first rows [S, E). */
static void acc_init(WinSt *s, const WinFunc *f, int fi, FEval *e, int k, const OTree *t, int v,
                     int64_t S, int64_t E)
{
    Piece *pc = &e->pc[k];
    pc->dqh = pc->dqt = 0;
    pc_at(&pc->lo, t, v, S);
    if (uses_prefix(s, f, fi)) {
        pc_at(&pc->hi, t, v, E);
        if (f->kind == WIN_COUNT_STAR) {
            e->rows += E - S;
            return;
        }
        __int128 s1, s0;
        int64_t n1, n0;
        otree_prefix_sum(&s->ps.lay, t, v, s->fn_sum[fi], E, &s1, &n1);
        otree_prefix_sum(&s->ps.lay, t, v, s->fn_sum[fi], S, &s0, &n0);
        e->isum += s1 - s0;
        e->nn += n1 - n0;
        return;
    }
    pc->hi = pc->lo;
    acc_move(s, f, fi, e, k, t, v, S, E);
}

/* The frame of the row at q (node x) with EXCLUDE: the current row's peers
   [e->g1, e->g2) (kept up to date here), and the pieces of [S, E) before
   and after the excluded rows [X1, X2) into p[0..3]: piece 0, then piece 1
   (all four ends never decrease along an interval). True when the current
   row itself is in the frame again (EXCLUDE TIES). */
static bool frame_pieces(const WinFunc *f, FEval *e, const OTree *t, int v, const ONode *x,
                         int64_t q, bool ng, int64_t S, int64_t E, int64_t p[4])
{
    if (!f->exclude) {
        p[0] = S, p[1] = E, p[2] = p[3] = E;
        return false;
    }
    if (ng) {
        e->g1 = e->init ? q : pos_of(otree_lower(t, x->enc, x->sklen), v, e->N);
        e->g2 = pos_of(otree_beyond(t, x->enc, x->sklen), v, e->N);
    }
    int64_t X1 = f->exclude == FX_CURRENT_ROW ? q : e->g1;
    int64_t X2 = f->exclude == FX_CURRENT_ROW ? q + 1 : e->g2;
    p[0] = S;
    p[1] = E < X1 ? E : X1;
    if (p[1] < S)
        p[1] = S;
    p[2] = X2 > S ? X2 : S;
    p[3] = E > p[2] ? E : p[2];
    return f->exclude == FX_TIES && q >= S && q < E;
}

static int int_result(OpEnv *env, const CNode *nd, const WinFunc *f, __int128 x, OVal *out,
                      const char *what)
{
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (f->out_t.kind == TK_DECIMAL) {
        lo = -(pow10_i64(18) - 1);
        hi = pow10_i64(18) - 1;
    }
    if (x < lo || x > hi) {
        char tb[48];
        return err_set(env->ev->err, SL_ERUNTIME, "%s overflowed %s (window node %d)", what,
                       type_name(f->out_t, tb, sizeof(tb)), nd->id);
    }
    out->i = (int64_t)x;
    return 0;
}

/* The result over the accumulator; MIN/MAX also over cur (EXCLUDE TIES:
   the current row, or NULL). */
static int acc_result(OpEnv *env, const CNode *nd, const WinFunc *f, const FEval *e,
                      const OVal *cur, OVal *out)
{
    switch (f->kind) {
    case WIN_COUNT_STAR:
        out->i = e->rows;
        return 0;
    case WIN_COUNT:
        out->i = e->nn;
        return 0;
    case WIN_MIN:
    case WIN_MAX: {
        const OVal *best = cur && !cur->null ? cur : NULL;
        Phys ph = type_phys(f->in_t);
        for (int k = 0; k < 2; k++) {
            const Piece *pc = &e->pc[k];
            if (pc->dqh == pc->dqt)
                continue;
            const OVal *y = pc->dq[pc->dqh].v;
            int cmp = best ? oval_cmp(y, best, ph) : 0;
            if (!best || (f->kind == WIN_MIN ? cmp < 0 : cmp > 0))
                best = y;
        }
        if (!best)
            out->null = true;
        else
            *out = *best;
        return 0;
    }
    case WIN_SUM:
        if (!e->nn)
            out->null = true;
        else if (e->xs)
            out->f = xsum_value(e->xs);
        else
            return int_result(env, nd, f, e->isum, out, "SUM");
        return 0;
    case WIN_AVG:
        if (!e->nn) {
            out->null = true;
        } else if (e->xs) {
            out->f = xsum_value(e->xs) / (double)e->nn;
        } else if (f->in_t.kind == TK_DECIMAL) {
            __int128 q = e->isum / e->nn, r = e->isum % e->nn;
            __int128 ar = r < 0 ? -r : r, ac = e->nn < 0 ? -(__int128)e->nn : e->nn;
            if (2 * ar >= ac)
                q += ((e->isum < 0) != (e->nn < 0)) ? -1 : 1;
            return int_result(env, nd, f, q, out, "AVG");
        } else {
            out->f = (double)e->isum / (double)e->nn;
        }
        return 0;
    default:
        return 0;
    }
}

/* ---- evaluation ----------------------------------------------------------- */

/* Non-NULL rows of function fi's argument among the first pos rows of
   version v (its counting sum slot). */
static int64_t nn_before(const WinSt *s, int fi, const OTree *t, int v, int64_t pos)
{
    __int128 sum;
    int64_t nn;
    otree_prefix_sum(&s->ps.lay, t, v, s->fn_cnt[fi], pos, &sum, &nn);
    return nn;
}

/* FIRST_VALUE/LAST_VALUE/NTH_VALUE over the rows [p[0], p[1]), the current
   row q when cur, and [p[2], p[3]) (in that order); IGNORE NULLS counts
   the non-NULL values only. O(log n): positions, or non-NULL counts from
   the tree's sums. */
static void nth_of_pieces(const WinSt *s, const WinFunc *f, int fi, const OTree *t, int v,
                          int64_t q, const int64_t p[4], bool cur, OVal *out)
{
    int64_t a[3] = {p[0], cur ? q : 0, p[2]}, b[3] = {p[1], cur ? q + 1 : 0, p[3]};
    int64_t na[3] = {0, 0, 0}, c[3], tot = 0;
    for (int k = 0; k < 3; k++) {
        if (f->ignore_nulls) {
            na[k] = nn_before(s, fi, t, v, a[k]);
            c[k] = nn_before(s, fi, t, v, b[k]) - na[k];
        } else {
            c[k] = b[k] - a[k];
        }
        tot += c[k];
    }
    int64_t j = f->kind == WIN_FIRST_VALUE ? 1 : f->kind == WIN_LAST_VALUE ? tot : f->offset;
    out->null = true;
    if (j < 1 || j > tot)
        return;
    for (int k = 0; k < 3; k++) {
        if (j > c[k]) {
            j -= c[k];
            continue;
        }
        const ONode *y = f->ignore_nulls
                             ? otree_select_nn(&s->ps.lay, t, v, s->fn_cnt[fi], na[k] + j - 1)
                             : otree_select(t, v, a[k] + j - 1, NULL);
        *out = *node_val(s, y, s->fn_arg[fi]);
        return;
    }
}

/* Function fi's value at row q (node x) of version v: rows of a version are
   fed to its evaluator in order, starting anywhere. */
static int eval_row(OpEnv *env, WinSt *s, const CNode *nd, int fi, int v, const OTree *t,
                    ONode *x, int64_t q, OVal *out)
{
    const WinFunc *f = &nd->wfn[fi];
    FEval *e = &s->ev[fi * 2 + v];
    memset(out, 0, sizeof(*out));
    bool first = !e->init;
    if (first)
        e->N = otree_count(t, v);
    switch (f->kind) {
    case WIN_ROW_NUMBER:
        out->i = q + 1;
        break;
    case WIN_RANK:
    case WIN_PERCENT_RANK:
        if (first)
            e->rank = otree_before(otree_lower(t, x->enc, x->sklen), v) + 1;
        else if (!onode_peers(e->prev, x))
            e->rank = q + 1;
        e->prev = x;
        if (f->kind == WIN_RANK)
            out->i = e->rank;
        else
            out->f = e->N > 1 ? (double)(e->rank - 1) / (double)(e->N - 1) : 0.0;
        break;
    case WIN_NTILE: {
        /* N rows in `offset` buckets: the first N % offset hold one more */
        int64_t N = e->N, b = f->offset, per = N / b, big = N % b;
        if (!per)
            out->i = q + 1;
        else if (q < big * (per + 1))
            out->i = q / (per + 1) + 1;
        else
            out->i = big + (q - big * (per + 1)) / per + 1;
        break;
    }
    case WIN_CUME_DIST: { /* frame: RANGE UNBOUNDED PRECEDING .. CURRENT ROW */
        int64_t S, E;
        frame_of(s, nd, f, fi, e, t, v, x, q, false, &S, &E);
        out->f = (double)E / (double)e->N;
        break;
    }
    case WIN_FIRST_VALUE:
    case WIN_LAST_VALUE:
    case WIN_NTH_VALUE: {
        int64_t S, E, tp;
        bool ng = first || !onode_peers(e->prev, x);
        frame_of(s, nd, f, fi, e, t, v, x, q, ng, &S, &E);
        e->prev = x;
        if (f->exclude || (f->ignore_nulls && f->kind == WIN_NTH_VALUE)) {
            int64_t p[4];
            bool cur = frame_pieces(f, e, t, v, x, q, ng, S, E, p);
            nth_of_pieces(s, f, fi, t, v, q, p, cur, out);
            break;
        }
        if (f->ignore_nulls && f->kind == WIN_FIRST_VALUE) {
            /* t: the first non-NULL row at or after S (or E) */
            if (!e->tset || S - e->t.pos > 64) {
                if (!e->tset || e->t.pos < S)
                    pc_at(&e->t, t, v, S);
                e->tset = true;
            }
            while (e->t.pos < S)
                pc_next(&e->t, v);
            while (e->t.pos < E && node_val(s, e->t.n, s->fn_arg[fi])->null)
                pc_next(&e->t, v);
            if (e->t.pos < E)
                *out = *node_val(s, e->t.n, s->fn_arg[fi]);
            else
                out->null = true;
            break;
        }
        if (f->ignore_nulls) { /* LAST_VALUE: t scans to E, noting the last non-NULL */
            if (!e->tset || S - e->t.pos > 64) {
                if (!e->tset || e->t.pos < S) {
                    pc_at(&e->t, t, v, S);
                    e->lastpos = -1;
                }
                e->tset = true;
            }
            for (; e->t.pos < E; pc_next(&e->t, v)) {
                const OVal *y = node_val(s, e->t.n, s->fn_arg[fi]);
                if (!y->null) {
                    e->lastv = y;
                    e->lastpos = e->t.pos;
                }
            }
            if (e->lastpos >= S)
                *out = *e->lastv;
            else
                out->null = true;
            break;
        }
        tp = f->kind == WIN_FIRST_VALUE  ? S
             : f->kind == WIN_LAST_VALUE ? E - 1
             : f->offset - 1 > E - S     ? E
                                         : S + f->offset - 1;
        if (tp < S || tp >= E) {
            out->null = true;
            break;
        }
        /* tp never decreases along an interval */
        if (!e->tset || tp - e->t.pos > 64) {
            pc_at(&e->t, t, v, tp);
            e->tset = true;
        }
        while (e->t.pos < tp)
            pc_next(&e->t, v);
        *out = *node_val(s, e->t.n, s->fn_arg[fi]);
        break;
    }
    case WIN_DENSE_RANK:
        if (first) {
            const ONode *prev = NULL;
            e->rank = 1;
            for (ONode *y = otree_first(t); y && otree_cmp(y->enc, y->sklen, x->enc, x->sklen) < 0;
                 y = otree_next(y)) {
                if (!y->w[v])
                    continue;
                if (!prev || !onode_peers(prev, y))
                    e->rank++;
                prev = y;
            }
        } else if (!onode_peers(e->prev, x)) {
            e->rank++;
        }
        e->prev = x;
        out->i = e->rank;
        break;
    case WIN_LAG:
    case WIN_LEAD: {
        if (f->ignore_nulls && f->offset > 0) { /* the offset-th non-NULL value before/after */
            if (first)
                e->rank = nn_before(s, fi, t, v, e->N);
            int64_t c = nn_before(s, fi, t, v, f->kind == WIN_LAG ? q : q + 1);
            __int128 j = f->kind == WIN_LAG ? (__int128)c - f->offset : (__int128)c + f->offset - 1;
            if (j < 0 || j >= e->rank) {
                if (s->fn_def[fi] >= 0)
                    *out = *node_val(s, x, s->fn_def[fi]);
                else
                    out->null = true;
            } else {
                *out = *node_val(s, otree_select_nn(&s->ps.lay, t, v, s->fn_cnt[fi], (int64_t)j),
                                 s->fn_arg[fi]);
            }
            break;
        }
        int64_t tp = f->kind == WIN_LAG ? q - f->offset : q + f->offset;
        if (tp < 0 || tp >= e->N) {
            if (s->fn_def[fi] >= 0)
                *out = *node_val(s, x, s->fn_def[fi]);
            else
                out->null = true;
            break;
        }
        if (!e->tset) {
            pc_at(&e->t, t, v, tp);
            e->tset = true;
        }
        while (e->t.pos < tp)
            pc_next(&e->t, v);
        *out = *node_val(s, e->t.n, s->fn_arg[fi]);
        break;
    }
    default: {
        int64_t S, E, p[4];
        bool ng = first || !onode_peers(e->prev, x);
        frame_of(s, nd, f, fi, e, t, v, x, q, ng, &S, &E);
        bool cur = frame_pieces(f, e, t, v, x, q, ng, S, E, p);
        e->prev = x;
        e->init = true;
        if (first)
            acc_reset(e);
        for (int k = 0; k < 1 + (f->exclude != FX_NO_OTHERS); k++) {
            if (first)
                acc_init(s, f, fi, e, k, t, v, p[2 * k], p[2 * k + 1]);
            else
                acc_move(s, f, fi, e, k, t, v, p[2 * k], p[2 * k + 1]);
        }
        if (!cur)
            return acc_result(env, nd, f, e, NULL, out);
        /* EXCLUDE TIES: the current row joins the frame for its own value */
        if (f->kind == WIN_MIN || f->kind == WIN_MAX)
            return acc_result(env, nd, f, e, node_val(s, x, s->fn_arg[fi]), out);
        PCur c = {x, 0, q};
        acc_row(s, f, fi, e, &e->pc[0], &c, 1);
        int rc = acc_result(env, nd, f, e, NULL, out);
        acc_row(s, f, fi, e, &e->pc[0], &c, -1);
        return rc;
    }
    }
    e->init = true;
    return 0;
}

static void emit_copy(WinSt *s, const CNode *nd, ChunkOut *co, const ONode *x, const OVal *vals,
                      int64_t w)
{
    int64_t r = cout_row(co);
    key_decode(x->enc + x->sklen, s->ps.in_types, s->ps.nin, co->c, 0, r);
    for (int f = 0; f < s->nfn; f++)
        set_val(&co->c->col[s->ps.nin + f], r, &vals[f]);
    co->c->w[r] = w;
}

/* Walk rows lo..hi (inclusive) of partition t, emitting changed outputs. */
static int eval_interval(OpEnv *env, WinSt *s, const CNode *nd, const OTree *t, ONode *lo,
                         ONode *hi, ChunkOut *co)
{
    int nf = s->nfn;
    int64_t q[2];
    for (int i = 0; i < 2 * nf; i++) {
        FEval *e = &s->ev[i];
        e->init = e->tset = false;
        e->prev = NULL;
    }
    for (int v = 0; v < 2; v++)
        q[v] = otree_before(lo, v);
    for (ONode *x = lo;; x = otree_next(x)) {
        int64_t n0 = x->w[0], n1 = x->w[1], need = (n0 + n1) * nf;
        VEC_RESERVE(s->vals, s->capvals, need);
        OVal *ov = s->vals, *nv = s->vals + n0 * nf;
        for (int64_t c = 0; c < n0; c++, q[0]++)
            for (int f = 0; f < nf; f++)
                if (eval_row(env, s, nd, f, 0, t, x, q[0], &ov[c * nf + f]))
                    return SL_ERUNTIME;
        for (int64_t c = 0; c < n1; c++, q[1]++)
            for (int f = 0; f < nf; f++)
                if (eval_row(env, s, nd, f, 1, t, x, q[1], &nv[c * nf + f]))
                    return SL_ERUNTIME;
        bool same = n0 == n1;
        for (int64_t i = 0; i < n0 * nf && same; i++)
            same = oval_eq(&ov[i], &nv[i], type_phys(nd->wfn[i % nf].out_t));
        if (!same) {
            for (int64_t c = 0; c < n0; c++)
                emit_copy(s, nd, co, x, &ov[c * nf], -1);
            for (int64_t c = 0; c < n1; c++)
                emit_copy(s, nd, co, x, &nv[c * nf], 1);
        }
        if (x == hi)
            break;
    }
    return 0;
}

/* ---- which rows a change reaches ----------------------------------------------- */

static void add_ival(WinSt *s, ONode *lo, ONode *hi)
{
    *VEC_PUSH(s->iv, s->niv, s->capiv) = (Ival){lo, hi};
}

static int node_cmp(const ONode *a, const ONode *b)
{
    return a == b ? 0 : otree_cmp(a->enc, a->len, b->enc, b->len);
}

static ONode *node_min(ONode *a, ONode *b) { return node_cmp(a, b) <= 0 ? a : b; }
static ONode *node_max(ONode *a, ONode *b) { return node_cmp(a, b) >= 0 ? a : b; }

/* The node holding row pos of version v, clamped into the version's rows
   (NULL when it has none). */
static ONode *node_at(const OTree *t, int v, int64_t pos)
{
    int64_t n = otree_count(t, v);
    if (!n)
        return NULL;
    return otree_select(t, v, pos < 0 ? 0 : pos >= n ? n - 1 : pos, NULL);
}

/* Last node whose sort key starts with a prefix <= k. */
static ONode *last_upto(const OTree *t, const uint8_t *k, size_t kn)
{
    ONode *b = otree_beyond(t, k, kn);
    return b ? otree_prev(b) : otree_last(t);
}

/* The first node of the group k groups (of version v) before the group
   starting at node y (NULL: the end); the first node when there are fewer. */
static ONode *group_back(const OTree *t, int v, ONode *y, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        ONode *p = y ? otree_prev(y) : otree_last(t);
        while (p && !p->w[v])
            p = otree_prev(p);
        if (!p)
            return otree_first(t);
        y = otree_lower(t, p->enc, p->sklen);
    }
    return y;
}

/* The last node of the group k groups (of version v) after the group
   ending at node y; the last node when there are fewer. */
static ONode *group_fwd(const OTree *t, int v, ONode *y, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        ONode *n = otree_next(y);
        while (n && !n->w[v])
            n = otree_next(n);
        if (!n)
            return otree_last(t);
        y = last_upto(t, n->enc, n->sklen);
    }
    return y;
}

/* The interval of rows whose function-fi value may depend on changed row e. */
static void reach(WinSt *s, const CNode *nd, int fi, const OTree *t, ONode *e)
{
    const WinFunc *f = &nd->wfn[fi];
    ONode *lo = e, *hi = e, *first = otree_first(t), *last = otree_last(t);
    switch (f->kind) {
    case WIN_NTILE:
    case WIN_PERCENT_RANK:
    case WIN_CUME_DIST:
        if (otree_count(t, 0) != otree_count(t, 1)) { /* they divide by the count */
            lo = first;
            hi = last;
            break;
        }
        if (f->kind == WIN_CUME_DIST) { /* e's earlier peers count e */
            ONode *y = otree_lower(t, e->enc, e->sklen);
            if (y)
                lo = node_min(lo, y);
        }
        hi = last;
        break;
    case WIN_ROW_NUMBER:
    case WIN_RANK:
    case WIN_DENSE_RANK:
        hi = last;
        break;
    case WIN_LAG:
    case WIN_LEAD:
        if (f->ignore_nulls) {
            /* LAG: rows up to the offset-th non-NULL row after e (later rows
               have offset non-NULL rows between); LEAD: mirrored; offset 0:
               the current row */
            for (int v = 0; v < 2 && f->offset > 0; v++) {
                int64_t pf = otree_before(e, v), n = otree_count(t, v);
                if (!n)
                    continue;
                int64_t tot = nn_before(s, fi, t, v, n);
                if (f->kind == WIN_LAG) {
                    __int128 j = (__int128)nn_before(s, fi, t, v, pf + e->w[v]) + f->offset - 1;
                    hi = node_max(hi, j >= tot ? last
                                               : otree_select_nn(&s->ps.lay, t, v, s->fn_cnt[fi],
                                                                 (int64_t)j));
                } else {
                    __int128 j = (__int128)nn_before(s, fi, t, v, pf) - f->offset;
                    lo = node_min(lo, j < 0 ? first
                                            : otree_select_nn(&s->ps.lay, t, v, s->fn_cnt[fi],
                                                              (int64_t)j));
                }
            }
            break;
        }
        for (int v = 0; v < 2; v++) {
            int64_t pf = otree_before(e, v), pl = pf + e->w[v] - 1, n = otree_count(t, v);
            if (f->kind == WIN_LAG) {
                __int128 p = (__int128)pl + f->offset;
                ONode *y = p >= n ? last : node_at(t, v, (int64_t)p);
                if (y)
                    hi = node_max(hi, y);
            } else {
                __int128 p = (__int128)pf - f->offset;
                ONode *y = p < 0 ? first : node_at(t, v, (int64_t)p);
                if (y)
                    lo = node_min(lo, y);
            }
        }
        break;
    default:
        if (f->exclude) { /* e's peers: their excluded rows change */
            ONode *y = otree_lower(t, e->enc, e->sklen);
            if (y)
                lo = node_min(lo, y);
            hi = node_max(hi, last_upto(t, e->enc, e->sklen));
        }
        if (f->groups) {
            /* rows whose frame's groups reach e's key (or the gap it leaves):
               from the group ke groups before the first group at or after e,
               to the group -ks groups after the last group at or before e */
            int64_t ks = group_off(f->start, f->start_n, false);
            int64_t ke = group_off(f->end, f->end_n, false);
            ONode *g0 = otree_lower(t, e->enc, e->sklen), *g1 = last_upto(t, e->enc, e->sklen);
            lo = node_min(lo, g0);
            hi = node_max(hi, g1);
            for (int v = 0; v < 2; v++) {
                if (f->end == FB_UNBOUNDED_FOLLOWING)
                    lo = first;
                else if (ke > 0)
                    lo = node_min(lo, group_back(t, v, g0, ke));
                if (f->start == FB_UNBOUNDED_PRECEDING)
                    hi = last;
                else if (ks < 0)
                    hi = node_max(hi, group_fwd(t, v, g1, -ks));
            }
            break;
        }
        if (f->rows) {
            /* rows at q reach e when q - A <= e's last row and q + B >= e's first */
            bool ainf = f->start == FB_UNBOUNDED_PRECEDING, binf = f->end == FB_UNBOUNDED_FOLLOWING;
            __int128 A = f->start == FB_PRECEDING ? f->start_n
                         : f->start == FB_FOLLOWING ? -(__int128)f->start_n : 0;
            __int128 B = f->end == FB_FOLLOWING ? f->end_n
                         : f->end == FB_PRECEDING ? -(__int128)f->end_n : 0;
            for (int v = 0; v < 2; v++) {
                int64_t pf = otree_before(e, v), pl = pf + e->w[v] - 1, n = otree_count(t, v);
                __int128 a = binf ? 0 : pf - B, b = ainf ? (__int128)n - 1 : pl + A;
                if (!n || a > b || a > n - 1 || b < 0)
                    continue;
                lo = node_min(lo, node_at(t, v, (int64_t)(a < 0 ? 0 : a)));
                hi = node_max(hi, node_at(t, v, (int64_t)(b > n - 1 ? n - 1 : b)));
            }
            break;
        }
        /* RANGE: rows whose frame start is <= e reach up to `hi`, rows whose
           frame end is >= e start at `lo` (by value; conservative when the
           bound moves away from e or e's key is NULL) */
        {
            const OVal *val = s->fn_key[fi] >= 0 ? node_val(s, e, s->fn_key[fi]) : NULL;
            bool null_off = val && val->null;
            if (f->start == FB_UNBOUNDED_PRECEDING || (null_off && f->start != FB_CURRENT_ROW)) {
                hi = last;
            } else if (f->start == FB_PRECEDING) {
                range_key(s, nd, f, fi, e, FB_FOLLOWING, f->start_n, f->start_f,
                          f->start_months, true, &s->key[0]);
                hi = node_max(hi, last_upto(t, s->key[0].p, s->key[0].n));
            } else {
                hi = node_max(hi, last_upto(t, e->enc, e->sklen));
            }
            if (f->end == FB_UNBOUNDED_FOLLOWING || (null_off && f->end != FB_CURRENT_ROW)) {
                lo = first;
            } else if (f->end == FB_FOLLOWING) {
                range_key(s, nd, f, fi, e, FB_PRECEDING, f->end_n, f->end_f, f->end_months,
                          true, &s->key[0]);
                ONode *y = otree_lower(t, s->key[0].p, s->key[0].n);
                if (y)
                    lo = node_min(lo, y);
            } else {
                ONode *y = otree_lower(t, e->enc, e->sklen);
                if (y)
                    lo = node_min(lo, y);
            }
        }
        break;
    }
    add_ival(s, lo, hi);
}

static int ival_cmp(const void *a, const void *b)
{
    const Ival *x = a, *y = b;
    return node_cmp(x->lo, y->lo);
}

/* The output changes of one touched partition (PState.emit). */
static int emit_part(Op *op, OpEnv *env, PPart *part, const PChanged *chg, int64_t nc,
                     ChunkOut *co)
{
    WinSt *s = op->st;
    const CNode *nd = op->node;
    OTree *t = &part->t;
    int64_t n = otree_count(t, 0) > otree_count(t, 1) ? otree_count(t, 0) : otree_count(t, 1);
    s->niv = 0;
    if (!t->root)
        return 0;
    if (nc * s->nfn > n / 4 + 8) {
        add_ival(s, otree_first(t), otree_last(t));
    } else {
        for (int64_t i = 0; i < nc; i++)
            for (int f = 0; f < s->nfn; f++)
                reach(s, nd, f, t, chg[i].n);
        qsort(s->iv, (size_t)s->niv, sizeof(Ival), ival_cmp);
    }
    int64_t m = 0;
    for (int64_t i = 0; i < s->niv; i++) {
        Ival *c = &s->iv[i];
        if (m && (node_cmp(c->lo, s->iv[m - 1].hi) <= 0 || otree_next(s->iv[m - 1].hi) == c->lo)) {
            s->iv[m - 1].hi = node_max(s->iv[m - 1].hi, c->hi);
            continue;
        }
        s->iv[m++] = *c;
    }
    for (int64_t i = 0; i < m; i++)
        if (eval_interval(env, s, nd, t, s->iv[i].lo, s->iv[i].hi, co))
            return SL_ERUNTIME;
    return 0;
}

/* ---- the operator ---------------------------------------------------------- */

/* A new node's values, decoded from its own bytes before it has weight
   (PState.fresh). */
static void set_vals(Op *op, ONode *x)
{
    WinSt *s = op->st;
    if (!s->nval)
        return;
    key_decode(x->enc + x->sklen, s->ps.in_types, s->ps.nin, s->scratch, 0, 0);
    OVal *val = onode_vals(&s->ps.lay, x);
    for (int j = 0; j < s->nval; j++) {
        const Vec *c = &s->scratch->col[s->val_col[j]];
        val[j].null = vec_is_null(c, 0);
        if (c->i)
            val[j].i = c->i[0];
        else if (c->f)
            val[j].f = c->f[0];
        else
            val[j].s = c->s[0];
    }
}

static void free_window(Op *op)
{
    WinSt *s = op->st;
    pstate_free(&s->ps);
    for (int i = 0; i < 2 * s->nfn; i++) {
        sl_free(s->ev[i].xs);
        sl_free(s->ev[i].pc[0].dq);
        sl_free(s->ev[i].pc[1].dq);
        if (s->ev[i].dist)
            hmap_free(s->ev[i].dist);
    }
    sl_free(s->ev);
    sl_free(s->val_col);
    sl_free(s->sum_of);
    sl_free(s->fn_arg);
    sl_free(s->fn_def);
    sl_free(s->fn_key);
    sl_free(s->fn_sum);
    sl_free(s->fn_cnt);
    sl_free(s->iv);
    sl_free(s->vals);
    arena_free(s->scratch_arena);
    buf_free(&s->tmp);
    buf_free(&s->key[0]);
    buf_free(&s->key[1]);
    sl_free(s);
}

/* Value slot of input column col (added when new). */
static int val_slot(WinSt *s, int col)
{
    for (int j = 0; j < s->nval; j++)
        if (s->val_col[j] == col)
            return j;
    s->val_col[s->nval] = col;
    return s->nval++;
}

int op_window_init(Op *op)
{
    const CNode *n = op->node;
    WinSt *s = sl_calloc(1, sizeof(*s));
    int nf = n->nwfn;
    op->st = s;
    pstate_init(op, &s->ps, "window");
    s->ps.emit = emit_part;
    s->ps.fresh = set_vals;
    s->nfn = nf;
    s->val_col = sl_malloc(sizeof(int) * (size_t)(3 * nf + 1));
    s->sum_of = sl_malloc(sizeof(int) * (size_t)(2 * nf + 1));
    s->fn_arg = sl_malloc(sizeof(int) * (size_t)(nf + 1));
    s->fn_def = sl_malloc(sizeof(int) * (size_t)(nf + 1));
    s->fn_key = sl_malloc(sizeof(int) * (size_t)(nf + 1));
    s->fn_sum = sl_malloc(sizeof(int) * (size_t)(nf + 1));
    s->fn_cnt = sl_malloc(sizeof(int) * (size_t)(nf + 1));
    s->ev = sl_calloc((size_t)(2 * nf + 1), sizeof(FEval));
    int nsum = 0;
    for (int i = 0; i < nf; i++) {
        const WinFunc *f = &n->wfn[i];
        s->fn_arg[i] = f->col >= 0 ? val_slot(s, f->col) : -1;
        s->fn_def[i] = f->def_col >= 0 ? val_slot(s, f->def_col) : -1;
        bool offs = !f->rows && win_framed(f->kind) &&
                    (f->start == FB_PRECEDING || f->start == FB_FOLLOWING ||
                     f->end == FB_PRECEDING || f->end == FB_FOLLOWING);
        s->fn_key[i] = offs && n->nord == 1 ? val_slot(s, n->ord[0]) : -1;
        s->fn_sum[i] = s->fn_cnt[i] = -1;
        bool fl = f->col >= 0 && type_phys(f->in_t) == PHYS_F64;
        /* a sum slot of the argument: prefix sums (first frames) and
           non-NULL counts (IGNORE NULLS by counting; a slot sums the
           integer representation, 0 for other values) */
        bool sums = !f->distinct && (f->kind == WIN_COUNT ||
                                     ((f->kind == WIN_SUM || f->kind == WIN_AVG) && !fl));
        if (sums || f->ignore_nulls) {
            int j = 0;
            while (j < nsum && s->sum_of[j] != s->fn_arg[i])
                j++;
            if (j == nsum)
                s->sum_of[nsum++] = s->fn_arg[i];
            if (sums)
                s->fn_sum[i] = j;
            if (f->ignore_nulls)
                s->fn_cnt[i] = j;
        }
        if ((f->kind == WIN_SUM || f->kind == WIN_AVG) && fl)
            for (int v = 0; v < 2; v++)
                s->ev[i * 2 + v].xs = sl_calloc(1, sizeof(XSum));
    }
    olayout_init(&s->ps.lay, s->nval, nsum, s->sum_of);
    s->scratch_arena = arena_new(4096);
    s->scratch = chunk_new(s->scratch_arena, s->ps.nin, s->ps.in_types, 1);
    s->scratch->n = 1;
    SqlType kt = n->nord ? s->ps.ord_types[0] : type_make(TK_INT, false);
    s->kscratch = chunk_new(s->scratch_arena, 1, &kt, 1);
    s->kscratch->n = 1;
    pstate_spillable(&s->ps);
    op->free = free_window;
    return 0;
}

/*
 * circuit/op_temporal.c - the temporal filter: `col >= NOW() + off` or
 * `col <= NOW() + off` in a view (sql/plan_temporal.c compiles them).
 *
 * The clock T is the watermark of the program's clock table `now`
 * (LATENESS 0 on its one column: the largest time pushed so far, the same
 * on every worker and host, checkpointed by its source node). A row with
 * column value v passes at T when T is known and
 *   lower bound (`v >= T + off`): T <= v - off   (passes until T leaves it)
 *   upper bound (`v <= T + off`): T >= v - off   (passes once T reaches it)
 * so as T only grows, a row enters at most once and leaves at most once.
 *
 * Delta rule: with T0 the clock of the previous step and T1 this step's,
 * output = rows of this step's input passing at T1 (with their weights)
 *        + rows held from earlier steps whose status changed from T0 to T1
 *          (+w entering, -w leaving).
 * For a fixed clock the filter is linear, so no exchange: every worker
 * holds what its own input brought (a row's insertion and deletion may be
 * held on different workers; their changes cancel in the view).
 *
 * State: only rows whose status can still change. `pend`: rows that will
 * enter (upper bound: v - off > T; any row before the clock has a value),
 * ordered by the clock value at which they enter. `act`: rows passing that
 * will leave (lower bound), ordered by the last clock value at which they
 * pass. A row that has left, or that passes an upper bound, is not held:
 * nothing about it can change any more. A step visits only the rows whose
 * bound the clock passed (a walk from the front of each tree), never the
 * whole state.
 *
 * Checkpoint: two batches: (1) one tuple, key "clock", value T; (2) the
 * held rows, key = the row's encoding, weight = its multiplicity (which
 * tree a row is in follows from its value and T).
 */
#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/key.h"
#include "op.h"
#include "otree.h"
#include "watermark.h"

#define T_INF INT64_MAX

/* One input row of the step (in the step arena). */
typedef struct TRow {
    const uint8_t *enc;
    size_t len;
    int64_t w, v;
    bool null;
} TRow;

typedef struct TempSt {
    OLayout lay;  /* one value: the row's column value */
    OTree pend, act;
    int64_t clock; /* T of the last step (WM_NONE: none yet) */
    TRow *in;
    int64_t nin, capin;
    ONode **gone; /* unlinked this step, freed at step end */
    int64_t ngone, capg;
    Buf kb;
} TempSt;

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? T_INF : INT64_MIN + 1;
    return r;
}

/* The clock interval [*a, *b] in which value v passes. */
static void bounds(const CNode *n, int64_t v, int64_t *a, int64_t *b)
{
    int64_t e = sat_sub(v, n->toff);
    if (n->tupper) {
        *a = e;
        *b = T_INF;
    } else {
        *a = INT64_MIN;
        *b = e;
    }
}

static bool passes(int64_t t, int64_t a, int64_t b) { return t != WM_NONE && a <= t && t <= b; }

static void put_be64(uint8_t *p, int64_t x)
{
    uint64_t u = (uint64_t)x ^ (1ull << 63);
    for (int i = 7; i >= 0; i--, u >>= 8)
        p[i] = (uint8_t)u;
}

static int64_t get_be64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | p[i];
    return (int64_t)(u ^ (1ull << 63));
}

/* Add w to the row (encoding enc, value v) in tree t under key k. */
static void hold(TempSt *s, OTree *t, int64_t k, const uint8_t *enc, size_t len, int64_t v,
                 int64_t w)
{
    buf_reset(&s->kb);
    buf_reserve(&s->kb, len + 8);
    put_be64(s->kb.p, k);
    memcpy(s->kb.p + 8, enc, len);
    s->kb.n = len + 8;
    bool created;
    ONode *x = otree_upsert(&s->lay, t, s->kb.p, s->kb.n, 8, &created);
    onode_vals(&s->lay, x)[0].i = v;
    otree_add(&s->lay, x, 0, w);
    otree_add(&s->lay, x, 1, w);
    if (!x->w[1]) {
        otree_remove(&s->lay, t, x);
        *VEC_PUSH(s->gone, s->ngone, s->capg) = x;
    }
}

/* Unlink x from t (freed at step end); returns its weight. */
static int64_t take(TempSt *s, OTree *t, ONode *x)
{
    int64_t w = x->w[1];
    otree_add(&s->lay, x, 0, -x->w[0]);
    otree_add(&s->lay, x, 1, -w);
    otree_remove(&s->lay, t, x);
    *VEC_PUSH(s->gone, s->ngone, s->capg) = x;
    return w;
}

static void emit(ChunkOut *co, const CNode *n, const uint8_t *enc, int64_t w)
{
    int64_t r = cout_row(co);
    key_decode(enc, n->types, n->ncol, co->c, 0, r);
    co->c->w[r] = w;
}

static void begin_temporal(Op *op, OpEnv *env)
{
    (void)env;
    ((TempSt *)op->st)->nin = 0;
}

static int push_temporal(Op *op, OpEnv *env, int input, Chunk *c)
{
    (void)input;
    TempSt *s = op->st;
    const Vec *v = &c->col[op->node->tcol];
    for (int64_t r = 0; r < c->n; r++) {
        if (!c->w[r])
            continue;
        buf_reset(&s->kb);
        key_encode_row(c, r, &s->kb);
        uint8_t *copy = arena_alloc(env->arena, s->kb.n ? s->kb.n : 1);
        memcpy(copy, s->kb.p, s->kb.n);
        bool null = vec_is_null(v, r);
        *VEC_PUSH(s->in, s->nin, s->capin) =
            (TRow){copy, s->kb.n, c->w[r], null ? 0 : v->i[r], null};
    }
    return 0;
}

/* Place a row of value v and weight w at clock t: emitted when it passes,
   held when its status can still change. */
static void place(TempSt *s, const CNode *n, ChunkOut *co, int64_t t, const uint8_t *enc,
                  size_t len, int64_t v, int64_t w)
{
    int64_t a, b;
    bounds(n, v, &a, &b);
    if (passes(t, a, b)) {
        if (co)
            emit(co, n, enc, w);
        if (b != T_INF)
            hold(s, &s->act, b, enc, len, v, w);
    } else if (t == WM_NONE || t < a) {
        hold(s, &s->pend, a, enc, len, v, w);
    } /* else it has left for good */
}

static int finish_temporal(Op *op, OpEnv *env)
{
    const CNode *n = op->node;
    TempSt *s = op->st;
    int64_t t = op_wm(env, n->tclock, 0);
    if (t == WM_NONE || (s->clock != WM_NONE && t < s->clock))
        t = s->clock;
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 16);
    if (t != WM_NONE && t != s->clock) {
        /* entering: rows whose start the clock reached (they may have left
           again in the same move) */
        ONode *x;
        while ((x = otree_first(&s->pend)) && get_be64(x->enc) <= t) {
            int64_t v = onode_vals(&s->lay, x)[0].i;
            int64_t w = take(s, &s->pend, x);
            place(s, n, &co, t, x->enc + 8, x->len - 8, v, w);
        }
        /* leaving: rows whose end the clock passed */
        while ((x = otree_first(&s->act)) && get_be64(x->enc) < t) {
            int64_t w = take(s, &s->act, x);
            emit(&co, n, x->enc + 8, -w);
        }
    }
    for (int64_t i = 0; i < s->nin; i++) {
        const TRow *r = &s->in[i];
        if (!r->null) /* NULL never passes */
            place(s, n, &co, t, r->enc, r->len, r->v, r->w);
    }
    s->nin = 0;
    s->clock = t;
    op->out = co.c;
    return 0;
}

static void step_end_temporal(Op *op)
{
    TempSt *s = op->st;
    for (int64_t i = 0; i < s->ngone; i++)
        sl_free(s->gone[i]);
    s->ngone = 0;
    s->nin = 0;
}

static void save_tree(const OTree *t, BatchBuilder *bb)
{
    for (ONode *x = otree_first(t); x; x = otree_next(x))
        bb_add(bb, x->enc + 8, x->len - 8, NULL, 0, x->w[1]);
}

static int save_temporal(Op *op, BatchList *out)
{
    TempSt *s = op->st;
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"clock", 5, (const uint8_t *)&s->clock, sizeof(s->clock), 1);
    batchlist_add(out, bb_finish(bb));
    bb = bb_new();
    save_tree(&s->pend, bb);
    save_tree(&s->act, bb);
    batchlist_add(out, bb_finish(bb));
    return 0;
}

static int read_clock(const Op *op, const Batch *b, int64_t *t, Err *err)
{
    if (b->n != 1 || batch_klen(b, 0) != 5 || memcmp(batch_key(b, 0), "clock", 5) ||
        batch_vlen(b, 0) != sizeof(int64_t))
        return err_set(err, SL_EIO, "temporal filter state (node %d) has no clock",
                       op->node->id);
    memcpy(t, batch_val(b, 0), sizeof(*t));
    return 0;
}

/* Hold the saved rows of b at the instance's clock (bytes checked first:
   checkpoints are not trusted). */
static int load_rows(Op *op, const Batch *b, Err *err)
{
    TempSt *s = op->st;
    const CNode *n = op->node;
    ORow r;
    orow_init(&r, n->types, n->ncol);
    int rc = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const uint8_t *k = batch_key(b, i);
        size_t kn = batch_klen(b, i);
        if (!orow_read(&r, n, NULL, 0, k, kn)) {
            rc = err_set(err, SL_EIO, "temporal filter state (node %d) has a malformed row",
                         n->id);
            break;
        }
        const Vec *v = &r.row->col[n->tcol];
        if (!vec_is_null(v, 0))
            place(s, n, NULL, s->clock, k, kn, v->i[0], b->w[i]);
    }
    orow_free(&r);
    return rc;
}

static int load_temporal(Op *op, Batch *const *b, int n, Err *err)
{
    TempSt *s = op->st;
    if (n != 2)
        return err_set(err, SL_EIO, "temporal filter state (node %d) has %d batches, not 2",
                       op->node->id, n);
    if (read_clock(op, b[0], &s->clock, err))
        return SL_EIO;
    int rc = load_rows(op, b[1], err);
    step_end_temporal(op);
    return rc;
}

static int load_split_temporal(Op *op, int w, int W, Batch *const *const *lists,
                               const int *counts, int nold, Err *err)
{
    TempSt *s = op->st;
    for (int k = 0; k < nold; k++) {
        int64_t t;
        if (counts[k] != 2)
            return err_set(err, SL_EIO, "temporal filter state (node %d) has %d batches, not 2",
                           op->node->id, counts[k]);
        if (read_clock(op, lists[k][0], &t, err))
            return SL_EIO;
        if (t != WM_NONE && (s->clock == WM_NONE || t > s->clock))
            s->clock = t;
    }
    for (int k = 0; k < nold; k++) {
        Batch *mine = op_owned_sum(lists[k] + 1, 1, w, W, false);
        int rc = load_rows(op, mine, err);
        batch_unref(mine);
        if (rc)
            return rc;
    }
    step_end_temporal(op);
    return 0;
}

static void mem_tree(const OTree *t, OpMem *m)
{
    for (ONode *x = otree_first(t); x; x = otree_next(x)) {
        m->rows++;
        m->bytes += (int64_t)(sizeof(ONode) + x->len + 16);
    }
}

static void mem_temporal(Op *op, OpMem *m)
{
    TempSt *s = op->st;
    mem_tree(&s->pend, m);
    mem_tree(&s->act, m);
}

static void free_temporal(Op *op)
{
    TempSt *s = op->st;
    step_end_temporal(op);
    otree_free(&s->pend);
    otree_free(&s->act);
    sl_free(s->in);
    sl_free(s->gone);
    buf_free(&s->kb);
    sl_free(s);
}

int op_temporal_init(Op *op)
{
    TempSt *s = sl_calloc(1, sizeof(*s));
    olayout_init(&s->lay, 1, 0, NULL);
    s->clock = WM_NONE;
    op->st = s;
    op->begin = begin_temporal;
    op->push = push_temporal;
    op->finish = finish_temporal;
    op->step_end = step_end_temporal;
    op->save = save_temporal;
    op->load = load_temporal;
    op->load_split = load_split_temporal;
    op->mem = mem_temporal;
    op->free = free_temporal;
    return 0;
}

/*
 * circuit/watermark.c - watermarks (LATENESS): propagation through the
 * circuit, late rows at ingest, the watermark as checkpointed state of a
 * table's source node, and OPK_FINAL ('emit_final').
 *
 * Propagation (wm_propagate) is evaluated on values, once per step, in node
 * order: a node's column watermark is a monotone function of its inputs'
 * (x + constant, the TUMBLE start floor((x - offset) / size) * size +
 * offset, HOP starts are TUMBLE starts minus constants). It is a lower
 * bound on the column of every change the node outputs from the next step
 * on, because each input row a later step brings is at or above its
 * table's watermark (late rows are dropped before any operator sees them).
 *
 * OPK_FINAL: delta rule: hold the integral of the input's changes per row
 * (encoding -> weight); each step, emit the held rows whose column
 * final_col is below the watermark (they can no longer change: the input
 * will not touch them again) with their net weight, and forget them. A
 * windowed aggregate's partial results for a window thus cancel in the
 * hold, and the window's row leaves once, when the window has closed. Rows
 * whose column is NULL are not held. No exchange: every worker holds what
 * its own input brought, and a row's changes are released together.
 *
 * Checkpoints. A source: one tuple, key "wm", value = watermark and late
 * rows (2 x int64), weight 1. OPK_FINAL: the held rows, key = the row's
 * encoding, value = the column's value (int64) and a NULL byte, weight =
 * the held weight.
 */
#include "watermark.h"

#include <stdlib.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/spill.h"
#include "../zset/trace.h"
#include "cold.h"
#include "../expr/tz.h"

#define TZ_SLACK INT64_C(3 * 3600 * 1000000) /* E_CAST through a time zone */

bool wm_any(const Circuit *c)
{
    for (int i = 0; i < c->nrels; i++)
        if (c->rels[i].is_table && c->rels[i].wm_col >= 0)
            return true;
    return false;
}

int64_t **wm_cols_new(const Circuit *c)
{
    int64_t **cols = sl_calloc((size_t)c->nnodes + 1, sizeof(int64_t *));
    for (int i = 0; i < c->nnodes; i++) {
        int nc = c->nodes[i]->ncol;
        cols[i] = sl_malloc(sizeof(int64_t) * (size_t)(nc + 1));
        for (int j = 0; j < nc; j++)
            cols[i][j] = WM_NONE;
    }
    return cols;
}

void wm_cols_free(const Circuit *c, int64_t **cols)
{
    if (!cols)
        return;
    for (int i = 0; i < c->nnodes; i++)
        sl_free(cols[i]);
    sl_free(cols);
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : WM_NONE;
    return r;
}

static int64_t floor_to(int64_t x, int64_t size, int64_t off)
{
    __int128 d = (__int128)x - off, q = d / size;
    if (d % size < 0)
        q--;
    __int128 r = q * size + off;
    return r < INT64_MIN + 1 ? WM_NONE : r > INT64_MAX ? INT64_MAX : (int64_t)r;
}

static bool is_int_const(const Expr *e)
{
    return e->k == E_CONST && !e->cnull && type_phys(e->t) == PHYS_I64;
}

/* The watermark of expression e over an input with column watermarks in[]. */
static int64_t expr_wm(const Expr *e, const int64_t *in)
{
    int64_t x;
    switch (e->k) {
    case E_COL:
        return in[e->col];
    case E_ADD:
    case E_SUB:
        /* x + c, x - c, c + x over integers, timestamps and intervals */
        if (type_phys(e->t) != PHYS_I64 || e->t.kind == TK_DECIMAL)
            return WM_NONE;
        if (is_int_const(e->a[1]) && (x = expr_wm(e->a[0], in)) != WM_NONE)
            return sat_add(x, e->k == E_ADD ? e->a[1]->ci
                                            : e->a[1]->ci == INT64_MIN ? INT64_MAX
                                                                       : -e->a[1]->ci);
        if (e->k == E_ADD && is_int_const(e->a[0]) && (x = expr_wm(e->a[1], in)) != WM_NONE)
            return sat_add(x, e->a[0]->ci);
        return WM_NONE;
    case E_CAST:
        /* between TIMESTAMPTZ and the wall-clock TIMESTAMP of its zone: not
           monotone (a fall-back repeats an hour), so the bound is the
           converted watermark less TZ_SLACK, assuming no zone moves its
           offset by more than that at once (no DST rule does) */
        if ((x = expr_wm(e->a[0], in)) == WM_NONE || x >= TZ_US_LIMIT || x <= -TZ_US_LIMIT)
            return WM_NONE;
        if (e->a[0]->t.kind == TK_TIMESTAMPTZ && e->t.kind == TK_TIMESTAMP)
            return sat_add(tz_utc_to_local_us(e->a[0]->t.len, x), -TZ_SLACK);
        if (e->a[0]->t.kind == TK_TIMESTAMP && e->t.kind == TK_TIMESTAMPTZ)
            return sat_add(tz_local_to_utc_us(e->t.len, x), -TZ_SLACK);
        return WM_NONE;
    case E_FUNC:
        if (e->fn == FN_TUMBLE_START && e->na == 3 && is_int_const(e->a[1]) &&
            is_int_const(e->a[2]) && e->a[1]->ci > 0 && (x = expr_wm(e->a[0], in)) != WM_NONE)
            return floor_to(x, e->a[1]->ci, e->a[2]->ci);
        return WM_NONE;
    default:
        return WM_NONE;
    }
}

/* Are columns i and j of n's output the same value in every row (i == j,
   or projections, through a chain of maps, of one column to both: the
   planner copies a key column next to the original, and join narrowing
   puts a map of its own between that copy and the join)? */
static bool same_column(const Circuit *c, const CNode *n, int i, int j)
{
    for (;;) {
        if (i == j)
            return true;
        if (n->k != OPK_MAP || n->proj[i]->k != E_COL || n->proj[j]->k != E_COL)
            return false;
        i = n->proj[i]->col;
        j = n->proj[j]->col;
        n = c->nodes[n->in[0]];
    }
}

void wm_propagate(const Circuit *c, const int64_t *relwm, int64_t *const *cols)
{
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        int64_t *o = cols[i];
        for (int j = 0; j < n->ncol; j++)
            o[j] = WM_NONE;
        const int64_t *in0 = n->nin ? cols[n->in[0]] : NULL;
        switch (n->k) {
        case OPK_SOURCE: {
            const Relation *r = &c->rels[n->rel];
            if (r->wm_col >= 0)
                o[r->wm_col] = relwm[n->rel];
            break;
        }
        case OPK_MAP: /* a filter only removes rows: the bounds stay */
            for (int j = 0; j < n->ncol; j++)
                o[j] = expr_wm(n->proj[j], in0);
            break;
        case OPK_UNION:
            for (int j = 0; j < n->ncol; j++) {
                int64_t m = INT64_MAX;
                for (int k = 0; k < n->nin; k++)
                    m = cols[n->in[k]][j] < m ? cols[n->in[k]][j] : m;
                o[j] = n->nin ? m : WM_NONE;
            }
            break;
        case OPK_NEGATE:
        case OPK_DISTINCT: /* a changed row is a row of the input's change */
        case OPK_SINK:
        case OPK_FINAL:
        case OPK_TEMPORAL: /* a filter */
            for (int j = 0; j < n->ncol; j++)
                o[j] = in0[j];
            break;
        case OPK_UNNEST: /* the input's columns unchanged; the new ones unbounded */
            for (int j = 0; j < c->nodes[n->in[0]]->ncol; j++)
                o[j] = in0[j];
            break;
        case OPK_AGG: /* a changed group is a group some input change touched */
            for (int j = 0; j < n->ngroup; j++)
                o[j] = in0[j];
            break;
        case OPK_JOIN: {
            /* l.k = r.k: a new output row has a new row on one side, so its
               key is at or above the lesser of the two watermarks */
            const int64_t *l = cols[n->in[0]], *r = cols[n->in[1]];
            int nl = c->nodes[n->in[0]]->ncol;
            for (int k = 0; k < n->nkeys; k++) {
                int64_t a = l[n->lkeys[k]], b = r[n->rkeys[k]];
                if (a == WM_NONE || b == WM_NONE)
                    continue;
                int64_t m = a < b ? a : b;
                /* the keys, and the columns that are copies of them (the
                   planner projects a key column next to the original) */
                for (int j = 0; j < nl; j++)
                    if (same_column(c, c->nodes[n->in[0]], j, n->lkeys[k]))
                        o[j] = m;
                for (int j = 0; j < c->nodes[n->in[1]]->ncol; j++)
                    if (same_column(c, c->nodes[n->in[1]], j, n->rkeys[k]))
                        o[nl + j] = m;
            }
            break;
        }
        default: /* upsert, top-k, window functions, constants: none */
            break;
        }
    }
}

Chunk *wm_drop_late(const Relation *r, int64_t wm, Chunk *m, Arena *a, int64_t *seen,
                    int64_t *late)
{
    const Vec *v = &m->col[r->wm_col];
    int64_t mx = *seen, nlate = 0;
    for (int64_t i = 0; i < m->n; i++) {
        if (vec_is_null(v, i))
            continue;
        if (v->i[i] < wm)
            nlate++;
        else if (v->i[i] > mx)
            mx = v->i[i];
    }
    *seen = mx;
    if (!nlate)
        return m;
    *late += nlate;
    Chunk *k = chunk_new(a, m->ncol, r->types, m->n - nlate);
    for (int64_t i = 0; i < m->n; i++)
        if (vec_is_null(v, i) || v->i[i] >= wm)
            chunk_append_row(k, m, i);
    return k;
}

int64_t wm_advance(const Relation *r, int64_t old, int64_t seen)
{
    if (seen == WM_NONE)
        return old;
    int64_t w = sat_add(seen, r->lateness == INT64_MIN ? INT64_MAX : -r->lateness);
    return w > old ? w : old;
}

/* ---- the source's state: the watermark and the late rows ---- */

typedef struct SourceWm {
    int64_t wm, late;
} SourceWm;

int64_t wm_source_get(const Op *op) { return ((const SourceWm *)op->st)->wm; }
int64_t wm_source_late(const Op *op) { return ((const SourceWm *)op->st)->late; }

void wm_source_commit(Op *op, int64_t wm, int64_t late)
{
    SourceWm *s = op->st;
    s->wm = wm > s->wm ? wm : s->wm;
    s->late += late;
}

static Batch *source_batch(int64_t wm, int64_t late)
{
    int64_t v[2] = {wm, late};
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"wm", 2, (const uint8_t *)v, sizeof(v), 1);
    return bb_finish(bb);
}

static int save_source(Op *op, BatchList *out)
{
    SourceWm *s = op->st;
    batchlist_add(out, source_batch(s->wm, s->late));
    return 0;
}

static int read_source(const Op *op, Batch *const *b, int n, int64_t *v, Err *err)
{
    if (n != 1 || b[0]->n != 1 || batch_klen(b[0], 0) != 2 ||
        memcmp(batch_key(b[0], 0), "wm", 2) || batch_vlen(b[0], 0) != 2 * sizeof(int64_t))
        return err_set(err, SL_EIO, "watermark state (node %d) is not one watermark",
                       op->node->id);
    memcpy(v, batch_val(b[0], 0), 2 * sizeof(int64_t));
    return 0;
}

static int load_source(Op *op, Batch *const *b, int n, Err *err)
{
    SourceWm *s = op->st;
    int64_t v[2];
    if (read_source(op, b, n, v, err))
        return SL_EIO;
    s->wm = v[0];
    s->late = v[1];
    return 0;
}

/* Another worker count: the watermark (the same on every old worker), the
   late rows of all of them on worker 0. */
static int load_split_source(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                             int nold, Err *err)
{
    (void)W;
    SourceWm *s = op->st;
    for (int k = 0; k < nold; k++) {
        int64_t v[2];
        if (read_source(op, lists[k], counts[k], v, err))
            return SL_EIO;
        s->wm = v[0] > s->wm ? v[0] : s->wm;
        if (w == 0)
            s->late += v[1];
    }
    return 0;
}

static void free_source(Op *op) { sl_free(op->st); }

static void undo_source(Op *op) { (void)op; } /* committed only after a step succeeds */

void wm_source_attach(Op *op)
{
    SourceWm *s = sl_malloc(sizeof(*s));
    s->wm = WM_NONE;
    s->late = 0;
    op->st = s;
    op->save = save_source;
    op->load = load_source;
    op->load_split = load_split_source;
    op->free = free_source;
    op->undo = undo_source;
}

/* ---- OPK_FINAL ----
 *
 * Spilling (zset/spill.h, registered when the runtime tracks traces):
 * between steps the budget may move every held row out of the map into
 * the cold trace, as one sorted run of (column value as 8 sortable bytes,
 * row encoding, held weight), which spills to files like any trace run.
 * The map then holds only what later steps bring (any sign: a change of a
 * row that is also cold adds to its cold weight). The cold trace is
 * ordered by the column's value, so the rows a watermark releases are a
 * prefix of it: the distinct values in cold are kept in memory, sorted
 * (cv: one int64 per value, a window start for a windowed aggregate), and
 * a step whose watermark passes some of them reads just their rows back,
 * in order, with one cursor (each spilled block read at most once), adds
 * the map's weight of the same row and emits the net weight; its end
 * retracts them from cold (they cancel in the next merge) and drops those
 * values. The output is the same as in memory. A checkpoint saves the map
 * and the cold trace (streamed, trace_scan) as one batch of held rows, the
 * format of earlier versions; a restored operator holds them in its map
 * until the budget spills them.
 */

typedef struct Held {
    int64_t w;  /* 0 while released from the map and cold in one step */
    int64_t v;  /* final_col's value */
} Held;

static int64_t final_read_back; /* wm_final_rows_read_back (atomic) */

int64_t wm_final_rows_read_back(void)
{
    return __atomic_load_n(&final_read_back, __ATOMIC_RELAXED);
}

typedef struct FinalSt {
    HMap *rows;
    Buf kb;
    Batch *saved;  /* the held rows as of the last save(), while unchanged */
    /* released this step, deleted at step end (their keys back the
       output's strings) */
    struct Gone {
        const uint8_t *k;
        size_t n;
    } *gone;
    int64_t ngone, capg;
    /* spilling (above) */
    Trace *cold;        /* (value, row, weight), or NULL when nothing spills */
    bool owner;         /* registered with zset/spill.h */
    int64_t *cv;        /* distinct values in cold, ascending */
    int64_t ncv, capcv;
    int64_t ncv_gone;   /* of them, released this step (a prefix) */
    int64_t ncold_rows; /* tuples in cold (committed) */
    int64_t ngone_cold; /* of them, released this step */
    BatchBuilder *unspill; /* this step's retractions from cold, or NULL */
    ValWs vw;
} FinalSt;

/* v as 8 bytes whose order (memcmp) is v's. */
static void cold_key(int64_t v, uint8_t out[8])
{
    uint64_t u = (uint64_t)v ^ (UINT64_C(1) << 63);
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(u >> (56 - 8 * i));
}

static int64_t cold_val(const uint8_t *k)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | k[i];
    return (int64_t)(u ^ (UINT64_C(1) << 63));
}

static void hold(FinalSt *s, const uint8_t *k, size_t kn, int64_t v, int64_t w)
{
    bool created;
    uint64_t h = sl_hash(k, kn);
    Held *e = hmap_upsert(s->rows, k, kn, h, &created);
    e->v = v;
    e->w += w;
    if (!e->w)
        hmap_delete(s->rows, k, kn, h);
}

static int push_final(Op *op, OpEnv *env, int input, Chunk *c)
{
    (void)env;
    (void)input;
    FinalSt *s = op->st;
    const Vec *v = &c->col[op->node->final_col];
    if (!c->n)
        return 0;
    if (s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
    for (int64_t r = 0; r < c->n; r++) {
        if (!c->w[r])
            continue;
        buf_reset(&s->kb);
        key_encode_row(c, r, &s->kb);
        /* a NULL column is in no window: passed on at once (value
           WM_NONE is below every watermark) */
        hold(s, s->kb.p, s->kb.n, vec_is_null(v, r) ? WM_NONE : v->i[r], c->w[r]);
    }
    return 0;
}

/* Is a held row of value v released under watermark wm? */
static bool released(int64_t v, int64_t wm)
{
    return v == WM_NONE || (wm != WM_NONE && v < wm);
}

static int valw_cmp(const void *a, const void *b)
{
    const ValW *x = a, *y = b;
    int c = memcmp(x->v, y->v, x->n < y->n ? x->n : y->n);
    return c ? c : x->n < y->n ? -1 : x->n > y->n;
}

/* Release the cold rows of the values below wm (a prefix of cv) into co,
   with the map's weight of the same rows (those entries are marked
   released: weight 0, and listed in gone). */
static void release_cold(Op *op, OpEnv *env, int64_t wm, ChunkOut *co)
{
    const CNode *n = op->node;
    FinalSt *s = op->st;
    TraceCursor *cur = NULL;
    int64_t i = 0, tuples = 0, rows = 0;
    for (; i < s->ncv && released(s->cv[i], wm); i++) {
        if (!cur)
            cur = trace_cursor_new(s->cold);
        uint8_t key[8];
        cold_key(s->cv[i], key);
        s->vw.n = 0;
        trace_cursor_for_key(cur, key, 8, op_valw_add, &s->vw);
        tuples += s->vw.n;
        qsort(s->vw.v, (size_t)s->vw.n, sizeof(ValW), valw_cmp);
        for (int64_t a = 0, b; a < s->vw.n; a = b) {
            int64_t wc = 0;
            for (b = a; b < s->vw.n && !valw_cmp(&s->vw.v[b], &s->vw.v[a]); b++)
                wc += s->vw.v[b].w;
            if (!wc)
                continue;
            size_t rn = s->vw.v[a].n;
            uint8_t *row = arena_alloc(env->arena, rn ? rn : 1);
            memcpy(row, s->vw.v[a].v, rn);
            if (!s->unspill)
                s->unspill = bb_new();
            bb_add(s->unspill, key, 8, row, rn, -wc);
            int64_t w = wc;
            uint64_t h = sl_hash(row, rn);
            Held *e = hmap_find(s->rows, row, rn, h);
            if (e && e->w) { /* its later changes, in the map */
                w += e->w;
                e->w = 0;
                /* the copy lives in the step arena until the step's end */
                *VEC_PUSH(s->gone, s->ngone, s->capg) = (struct Gone){row, rn};
            }
            rows++;
            if (!w)
                continue;
            int64_t r = cout_row(co);
            key_decode(row, n->types, n->ncol, co->c, 0, r);
            co->c->w[r] = w;
        }
    }
    if (cur)
        trace_cursor_free(cur);
    s->ncv_gone = i;
    s->ngone_cold = tuples;
    if (rows)
        __atomic_add_fetch(&final_read_back, rows, __ATOMIC_RELAXED);
}

static int finish_final(Op *op, OpEnv *env)
{
    const CNode *n = op->node;
    FinalSt *s = op->st;
    int64_t wm = op_wm(env, n->in[0], n->final_col);
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 16);
    if (s->ncv && released(s->cv[0], wm))
        release_cold(op, env, wm, &co);
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (hmap_next(s->rows, &it, &k, &kn, &pl)) {
        Held *e = pl;
        if (!e->w || !released(e->v, wm)) /* taken with its cold rows, or held */
            continue;
        int64_t r = cout_row(&co);
        key_decode(k, n->types, n->ncol, co.c, 0, r);
        co.c->w[r] = e->w;
        *VEC_PUSH(s->gone, s->ngone, s->capg) = (struct Gone){k, kn};
    }
    if ((s->ngone || s->ncv_gone) && s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
    op->out = co.c;
    return 0;
}

static void step_end_final(Op *op)
{
    FinalSt *s = op->st;
    for (int64_t i = 0; i < s->ngone; i++)
        hmap_delete(s->rows, s->gone[i].k, s->gone[i].n, sl_hash(s->gone[i].k, s->gone[i].n));
    s->ngone = 0;
    if (s->unspill) { /* the rows read back leave the cold trace */
        trace_insert_take(s->cold, bb_finish(s->unspill));
        s->unspill = NULL;
    }
    if (s->ncv_gone) {
        memmove(s->cv, s->cv + s->ncv_gone, sizeof(int64_t) * (size_t)(s->ncv - s->ncv_gone));
        s->ncv -= s->ncv_gone;
        s->ncold_rows -= s->ngone_cold;
        if (!s->ncv) /* nothing held cold: its retractions are all that is left */
            s->ncold_rows = 0;
        s->ncv_gone = s->ngone_cold = 0;
    }
    if (s->cold)
        trace_step_end(s->cold);
}

static void add_cold(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                     int64_t w)
{
    (void)kn;
    int64_t x = cold_val(k);
    bb_add(ctx, v, vn, (const uint8_t *)&x, sizeof(x), w);
}

static Batch *held_batch(const FinalSt *s)
{
    BatchBuilder *bb = bb_new();
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (hmap_next(s->rows, &it, &k, &kn, &pl)) {
        const Held *e = pl;
        bb_add(bb, k, kn, (const uint8_t *)&e->v, sizeof(e->v), e->w);
    }
    if (s->ncv) /* the cold rows: their weights and the map's add up */
        trace_scan(s->cold, add_cold, bb);
    return bb_finish(bb);
}

/* The held rows as one batch; kept while unchanged (and nothing is cold:
   the copy would hold the cold rows in memory). */
static int save_final(Op *op, BatchList *out)
{
    FinalSt *s = op->st;
    if (s->ncv) {
        batchlist_add(out, held_batch(s));
        return 0;
    }
    if (!s->saved)
        s->saved = held_batch(s);
    batch_ref(s->saved);
    batchlist_add(out, s->saved);
    return 0;
}

static int load_held(Op *op, const Batch *b, Err *err)
{
    FinalSt *s = op->st;
    for (int64_t t = 0; t < b->n; t++) {
        if (batch_vlen(b, t) != sizeof(int64_t))
            return err_set(err, SL_EIO, "emit_final state (node %d) has a malformed row",
                           op->node->id);
        int64_t v;
        memcpy(&v, batch_val(b, t), sizeof(v));
        hold(s, batch_key(b, t), batch_klen(b, t), v, b->w[t]);
    }
    return 0;
}

static int load_final(Op *op, Batch *const *b, int n, Err *err)
{
    if (n != 1)
        return err_set(err, SL_EIO, "emit_final state (node %d) has %d batches, not 1",
                       op->node->id, n);
    return load_held(op, b[0], err);
}

static int load_split_final(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                            int nold, Err *err)
{
    for (int k = 0; k < nold; k++) {
        if (counts[k] != 1)
            return err_set(err, SL_EIO, "emit_final state (node %d) has %d batches, not 1",
                           op->node->id, counts[k]);
        Batch *mine = op_owned_sum(lists[k], 1, w, W, false);
        int rc = load_held(op, mine, err);
        batch_unref(mine);
        if (rc)
            return rc;
    }
    return 0;
}

/* The map's bytes (and the checkpoint copy): what can spill. */
static size_t hot_bytes(const FinalSt *s)
{
    size_t saved = s->saved ? batch_bytes(s->saved) : 0;
    return hmap_count(s->rows) ? hmap_bytes(s->rows) + saved : saved;
}

/* The map (and the checkpoint copy), which can spill when registered; the
   cold trace; the cold values' list, which cannot spill. Rows: the map's
   entries and the cold trace's tuples. */
static void mem_final(Op *op, OpMem *m)
{
    FinalSt *s = op->st;
    size_t hot = hmap_bytes(s->rows) + (s->saved ? batch_bytes(s->saved) : 0);
    m->rows += hmap_count(s->rows) + s->ncold_rows;
    m->bytes += hot + sizeof(int64_t) * (size_t)s->capcv;
    if (s->owner)
        m->trace_bytes += hot;
    if (s->cold)
        cold_mem(s->cold, m);
}

static size_t own_resident(const void *o) { return hot_bytes(o); }
static size_t own_largest(const void *o) { return hot_bytes(o); }

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Between steps: every held row of the map moves into cold. */
static bool put_held(void *ctx, BatchBuilder *bb, const uint8_t *k, size_t kn, void *pl)
{
    FinalSt *s = ctx;
    const Held *e = pl;
    uint8_t key[8];
    cold_key(e->v, key);
    bb_add(bb, key, 8, k, kn, e->w);
    *VEC_PUSH(s->cv, s->ncv, s->capcv) = e->v;
    s->ncold_rows++;
    return true;
}

static int own_evict(void *o, Err *err)
{
    (void)err;
    FinalSt *s = o;
    int64_t ncv = s->ncv;
    cold_evict(s->cold, &s->rows, sizeof(Held), &s->saved, put_held, s);
    if (s->ncv == ncv)
        return 0;
    qsort(s->cv, (size_t)s->ncv, sizeof(int64_t), cmp_i64);
    int64_t u = 0;
    for (int64_t i = 0; i < s->ncv; i++)
        if (!u || s->cv[u - 1] != s->cv[i])
            s->cv[u++] = s->cv[i];
    s->ncv = u;
    return 0;
}

static const SpillOwner final_owner = {own_resident, own_largest, own_evict, cold_compact};

static void free_final(Op *op)
{
    FinalSt *s = op->st;
    hmap_free(s->rows);
    buf_free(&s->kb);
    if (s->saved)
        batch_unref(s->saved);
    if (s->unspill)
        batch_unref(bb_finish(s->unspill));
    if (s->owner)
        spill_unregister(s);
    if (s->cold)
        trace_free(s->cold);
    sl_free(s->cv);
    sl_free(s->vw.v);
    sl_free(s->gone);
    sl_free(s);
}

int op_final_init(Op *op)
{
    FinalSt *s = sl_calloc(1, sizeof(*s));
    s->rows = hmap_new(sizeof(Held));
    s->cold = cold_new(s, &final_owner, &s->owner);
    op->st = s;
    op->push = push_final;
    op->finish = finish_final;
    op->step_end = step_end_final;
    op->save = save_final;
    op->load = load_final;
    op->load_split = load_split_final;
    op->mem = mem_final;
    op->free = free_final;
    return 0;
}

int wm_agg_bound(const Op *op, const OpEnv *env, int64_t *bound)
{
    const CNode *n = op->node;
    if (!env->wm || n->global)
        return -1;
    for (int j = 0; j < n->ngroup; j++) {
        int64_t w = op_wm(env, n->in[0], j);
        if (w != WM_NONE && type_phys(n->types[j]) == PHYS_I64) {
            *bound = w;
            return j;
        }
    }
    return -1;
}

int64_t wm_trace_forget(Trace *t, const SqlType *types, int col, int64_t bound)
{
    if (trace_count(t) == 0)
        return 0;
    Batch *b = trace_consolidate(t);
    Arena *a = arena_new(1024);
    Chunk *row = chunk_new(a, col + 1, types, 1);
    bool need[col + 1];
    for (int j = 0; j <= col; j++)
        need[j] = j == col;
    BatchBuilder *bb = bb_new();
    int64_t n = 0;
    for (int64_t i = 0; i < b->n; i++) {
        key_decode_some(batch_key(b, i), types, col + 1, need, row, 0, 0);
        const Vec *v = &row->col[col];
        if (vec_is_null(v, 0) || v->i[0] >= bound)
            continue;
        bb_add(bb, batch_key(b, i), batch_klen(b, i), batch_val(b, i), batch_vlen(b, i), -b->w[i]);
        n++;
    }
    Batch *neg = bb_finish(bb);
    if (n) { /* the tuples and their negations cancel in one consolidation */
        trace_insert_take(t, neg);
        batch_unref(trace_consolidate(t));
    } else {
        batch_unref(neg);
    }
    trace_step_end(t); /* the forgetting is no step's to roll back */
    batch_unref(b);
    arena_free(a);
    return n;
}

int wm_first_col(const OpEnv *env, int node, const int *cols, int ncols, const SqlType *types,
                 int64_t *bound)
{
    for (int j = 0; env->wm && j < ncols; j++) {
        int c = cols ? cols[j] : j;
        int64_t w = op_wm(env, node, c);
        if (w != WM_NONE && type_phys(types[j]) == PHYS_I64) {
            *bound = w;
            return j;
        }
    }
    return -1;
}

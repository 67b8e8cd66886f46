/*
 * circuit/op_agg.c - GROUP BY aggregation (non-linear as a whole).
 *
 * Delta rule: for every group touched in a step, the output changes by
 * -(old row) +(new row), and by nothing when both are equal. Linear
 * aggregates (COUNT, SUM, AVG) keep per-group accumulators (count, 128-bit
 * integer sum or double sum, non-NULL count) and never revisit history;
 * MIN and MAX keep the group's multiset of values in a trace keyed by the
 * group and read it for touched groups.
 *
 * Combine before exchange: when every aggregate is linear, each worker
 * first folds its input into local partial accumulators per group, and
 * only the partials (a few per group, not one per row) cross to the group's
 * owner worker. Otherwise rows are exchanged and folded by the owner.
 *
 * A global aggregate (no GROUP BY) has one group with an empty key, owned
 * by worker 0, present from the first step on: COUNT(*) is 0 and SUM is
 * NULL over an empty input, and stay so as the input empties again.
 */
#include "op.h"

#include <stdio.h>
#include <stdlib.h>

#include "../base/mem.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../zset/trace.h"

typedef struct Acc {
    __int128 isum; /* integer/decimal sums */
    double fsum;   /* floating sums */
    int64_t cnt;   /* rows (COUNT(*)) or non-NULL values */
} Acc;

typedef struct Part { /* partial accumulators for one group */
    int64_t count;    /* sum of weights of the group's rows */
    int64_t pad;
    Acc acc[];
} Part;

typedef struct Group {
    uint8_t *key;     /* group key encoding (owned) */
    uint8_t *out;     /* encoding of the row last emitted (owned), or NULL */
    uint32_t klen, outlen;
    int64_t touched;  /* last step in which the group changed, -1 never */
    Part p;           /* must be last: flexible accumulators */
} Group;

typedef struct AggSt {
    HMap *groups;
    int ngroup, naggs, nin;
    const SqlType *in_types;
    int *gcols;
    Trace **minmax;      /* per aggregate: value multiset (MIN/MAX), else NULL */
    Group **touched;
    int64_t ntouched, cap;
    uint8_t **garbage;   /* old output encodings, freed at step end */
    int64_t ngarbage, capg;
    size_t partsz;
    Buf kb, vb;
    Arena *scratch_arena;
    Chunk *scratch;      /* one row of output values for encoding */
} AggSt;

static void touch(AggSt *s, Group *g, int64_t step)
{
    if (g->touched == step)
        return;
    g->touched = step;
    if (s->ntouched == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->touched = sl_realloc(s->touched, sizeof(Group *) * (size_t)s->cap);
    }
    s->touched[s->ntouched++] = g;
}

static void add_garbage(AggSt *s, uint8_t *p)
{
    if (!p)
        return;
    if (s->ngarbage == s->capg) {
        s->capg = s->capg ? s->capg * 2 : 64;
        s->garbage = sl_realloc(s->garbage, sizeof(uint8_t *) * (size_t)s->capg);
    }
    s->garbage[s->ngarbage++] = p;
}

/* Fold the rows of c (columns: group keys, then aggregate arguments) into
   partial accumulators in `local`. */
static void fold_chunk(Op *op, AggSt *s, const Chunk *c, HMap *local)
{
    const CNode *n = op->node;
    for (int64_t r = 0; r < c->n; r++) {
        int64_t w = c->w[r];
        bool created;
        buf_reset(&s->kb);
        key_encode(c, s->gcols, s->ngroup, r, &s->kb);
        Part *p = hmap_upsert(local, s->kb.p, s->kb.n, sl_hash(s->kb.p, s->kb.n), &created);
        p->count += w;
        for (int j = 0; j < n->naggs; j++) {
            const AggSpec *a = &n->aggs[j];
            Acc *acc = &p->acc[j];
            if (a->kind == AGG_COUNT_STAR) {
                acc->cnt += w;
                continue;
            }
            const Vec *v = &c->col[a->col];
            if (vec_is_null(v, r))
                continue;
            acc->cnt += w;
            if (a->kind == AGG_SUM || a->kind == AGG_AVG) {
                if (v->f)
                    acc->fsum += v->f[r] * (double)w;
                else
                    acc->isum += (__int128)v->i[r] * w;
            }
        }
    }
}

static void merge_part(AggSt *s, const uint8_t *k, size_t kn, const Part *p, int64_t step)
{
    bool created;
    Group *g = hmap_upsert(s->groups, k, kn, sl_hash(k, kn), &created);
    if (created) {
        g->key = sl_malloc(kn ? kn : 1);
        memcpy(g->key, k, kn);
        g->klen = (uint32_t)kn;
        g->touched = -1;
    }
    g->p.count += p->count;
    for (int j = 0; j < s->naggs; j++) {
        g->p.acc[j].isum += p->acc[j].isum;
        g->p.acc[j].fsum += p->acc[j].fsum;
        g->p.acc[j].cnt += p->acc[j].cnt;
    }
    touch(s, g, step);
}

typedef struct ValW {
    const uint8_t *v;
    size_t n;
    int64_t w;
} ValW;

typedef struct Collect {
    ValW *v;
    int64_t n, cap;
} Collect;

static void collect_cb(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    Collect *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = sl_realloc(c->v, sizeof(ValW) * (size_t)c->cap);
    }
    c->v[c->n++] = (ValW){val, vn, w};
}

static int valw_cmp(const void *a, const void *b)
{
    const ValW *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->v, y->v, m);
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* The smallest (want_max false) or largest value of the group's multiset
   with a positive total weight, or NULL. */
static const uint8_t *minmax_value(Trace *t, const Group *g, bool want_max)
{
    Collect c = {0};
    const uint8_t *best = NULL;
    trace_for_key(t, g->key, g->klen, collect_cb, &c);
    if (c.n) {
        qsort(c.v, (size_t)c.n, sizeof(ValW), valw_cmp);
        for (int64_t i = 0; i < c.n;) {
            int64_t j = i, w = 0;
            while (j < c.n && valw_cmp(&c.v[i], &c.v[j]) == 0)
                w += c.v[j++].w;
            if (w > 0) {
                best = c.v[i].v;
                if (!want_max)
                    break;
            }
            i = j;
        }
    }
    sl_free(c.v);
    return best;
}

static int set_int(OpEnv *env, Vec *v, __int128 x, const CNode *n, const char *what)
{
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (v->t.kind == TK_DECIMAL) {
        lo = -(pow10_i64(18) - 1);
        hi = pow10_i64(18) - 1;
    }
    if (x < lo || x > hi) {
        char tb[48];
        return err_set(env->ev->err, SL_ERUNTIME, "%s overflowed %s (aggregate in node %d)", what,
                       type_name(v->t, tb, sizeof(tb)), n->id);
    }
    v->i[0] = (int64_t)x;
    return 0;
}

/* Compute the group's current output row into s->scratch row 0. */
static int compute_row(Op *op, OpEnv *env, AggSt *s, Group *g)
{
    const CNode *n = op->node;
    Chunk *sc = s->scratch;
    key_decode(g->key, n->types, s->ngroup, sc, 0, 0);
    for (int j = 0; j < n->naggs; j++) {
        const AggSpec *a = &n->aggs[j];
        const Acc *acc = &g->p.acc[j];
        Vec *v = &sc->col[s->ngroup + j];
        if (v->nul)
            v->nul[0] = 0;
        switch (a->kind) {
        case AGG_COUNT_STAR:
        case AGG_COUNT:
            v->i[0] = acc->cnt;
            break;
        case AGG_SUM:
            if (acc->cnt == 0) {
                v->nul[0] = 1;
                if (v->i)
                    v->i[0] = 0;
                else
                    v->f[0] = 0;
            } else if (v->f)
                v->f[0] = acc->fsum;
            else if (set_int(env, v, acc->isum, n, "SUM"))
                return SL_ERUNTIME;
            break;
        case AGG_AVG:
            if (acc->cnt == 0) {
                v->nul[0] = 1;
                if (v->i)
                    v->i[0] = 0;
                else
                    v->f[0] = 0;
            } else if (a->in_t.kind == TK_DECIMAL) {
                __int128 q = acc->isum / acc->cnt, r = acc->isum % acc->cnt;
                __int128 ar = r < 0 ? -r : r, ac = acc->cnt < 0 ? -(__int128)acc->cnt : acc->cnt;
                if (2 * ar >= ac)
                    q += ((acc->isum < 0) != (acc->cnt < 0)) ? -1 : 1;
                if (set_int(env, v, q, n, "AVG"))
                    return SL_ERUNTIME;
            } else if (type_is_integer(a->in_t.kind)) {
                v->f[0] = (double)acc->isum / (double)acc->cnt;
            } else {
                v->f[0] = acc->fsum / (double)acc->cnt;
            }
            break;
        case AGG_MIN:
        case AGG_MAX: {
            const uint8_t *val = minmax_value(s->minmax[j], g, a->kind == AGG_MAX);
            if (!val) {
                v->nul[0] = 1;
                if (v->i)
                    v->i[0] = 0;
                else if (v->f)
                    v->f[0] = 0;
                else
                    v->s[0] = (Str){"", 0};
            } else {
                SqlType t = a->in_t;
                key_decode(val, &t, 1, sc, s->ngroup + j, 0);
            }
            break;
        }
        }
    }
    return 0;
}

static int emit(Op *op, OpEnv *env, AggSt *s, ChunkOut *co)
{
    const CNode *n = op->node;
    for (int64_t t = 0; t < s->ntouched; t++) {
        Group *g = s->touched[t];
        bool exists = g->p.count != 0 || n->global;
        if (g->p.count < 0)
            return err_set(env->ev->err, SL_ERUNTIME,
                           "aggregate node %d: a group has negative multiplicity %lld (more "
                           "deletions than insertions of its rows)", n->id,
                           (long long)g->p.count);
        buf_reset(&s->vb);
        if (exists) {
            if (compute_row(op, env, s, g))
                return SL_ERUNTIME;
            key_encode_row(s->scratch, 0, &s->vb);
        }
        if (exists && g->out && g->outlen == s->vb.n && !memcmp(g->out, s->vb.p, s->vb.n))
            continue;
        if (g->out) {
            int64_t r = cout_row(co);
            key_decode(g->out, n->types, n->ncol, co->c, 0, r);
            co->c->w[r] = -1;
            add_garbage(s, g->out);
            g->out = NULL;
        }
        if (exists) {
            g->out = sl_malloc(s->vb.n ? s->vb.n : 1);
            memcpy(g->out, s->vb.p, s->vb.n);
            g->outlen = (uint32_t)s->vb.n;
            int64_t r = cout_row(co);
            key_decode(g->out, n->types, n->ncol, co->c, 0, r);
            co->c->w[r] = 1;
        } else {
            uint8_t *k = g->key;
            uint32_t kl = g->klen;
            hmap_delete(s->groups, k, kl, sl_hash(k, kl)); /* frees g */
            sl_free(k);
        }
    }
    return 0;
}

static int eval_agg(Op *op, OpEnv *env, Chunk **in)
{
    const CNode *n = op->node;
    AggSt *s = op->st;
    Chunk *c = in[0];
    int W = env->nworkers, me = env->worker;
    Exchange *x = op->x;

    /* phase 1: this worker's input, routed to each group's owner */
    for (int d = 0; d < W; d++)
        buf_reset(xchg_buf(x, me, d, 0));
    if (n->linear) {
        HMap *local = hmap_new(s->partsz);
        fold_chunk(op, s, c, local);
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(local, &it, &k, &kn, &pl)) {
            int d = s->ngroup ? op_route(k, kn, W) : 0;
            xrec_put(xchg_buf(x, me, d, 0), k, (uint32_t)kn, pl, (uint32_t)s->partsz, 1);
        }
        hmap_free(local);
    } else {
        int *acols = arena_alloc(env->arena, sizeof(int) * (size_t)(s->nin - s->ngroup + 1));
        for (int j = s->ngroup; j < s->nin; j++)
            acols[j - s->ngroup] = j;
        for (int64_t r = 0; r < c->n; r++) {
            buf_reset(&s->kb);
            buf_reset(&s->vb);
            key_encode(c, s->gcols, s->ngroup, r, &s->kb);
            key_encode(c, acols, s->nin - s->ngroup, r, &s->vb);
            int d = s->ngroup ? op_route(s->kb.p, s->kb.n, W) : 0;
            xrec_put(xchg_buf(x, me, d, 0), s->kb.p, (uint32_t)s->kb.n, s->vb.p,
                     (uint32_t)s->vb.n, c->w[r]);
        }
    }
    xchg_wait(x);

    /* phase 2: fold what this worker owns into the groups */
    s->ntouched = 0;
    if (n->global && env->step == 0 && me == 0) {
        Part *zero = arena_zalloc(env->arena, s->partsz);
        merge_part(s, (const uint8_t *)"", 0, zero, env->step);
    }
    if (n->linear) {
        for (int f = 0; f < W; f++) {
            const Buf *b = xchg_buf(x, f, me, 0);
            size_t pos = 0;
            XRec r;
            while (xrec_next(b, &pos, &r)) {
                Part *p = arena_alloc(env->arena, s->partsz);
                memcpy(p, r.v, s->partsz); /* align */
                merge_part(s, r.k, r.kn, p, env->step);
            }
        }
    } else {
        int64_t nrec = 0;
        for (int f = 0; f < W; f++) {
            const Buf *b = xchg_buf(x, f, me, 0);
            size_t pos = 0;
            XRec r;
            while (xrec_next(b, &pos, &r))
                nrec++;
        }
        Chunk *rows = chunk_new(env->arena, s->nin, s->in_types, nrec);
        for (int f = 0; f < W; f++) {
            const Buf *b = xchg_buf(x, f, me, 0);
            size_t pos = 0;
            XRec r;
            while (xrec_next(b, &pos, &r)) {
                int64_t i = rows->n++;
                key_decode(r.k, s->in_types, s->ngroup, rows, 0, i);
                key_decode(r.v, s->in_types + s->ngroup, s->nin - s->ngroup, rows, s->ngroup, i);
                rows->w[i] = r.w;
            }
        }
        HMap *local = hmap_new(s->partsz);
        fold_chunk(op, s, rows, local);
        size_t it = 0;
        const uint8_t *k;
        size_t kn;
        void *pl;
        while (hmap_next(local, &it, &k, &kn, &pl))
            merge_part(s, k, kn, pl, env->step);
        hmap_free(local);
        /* value multisets for MIN/MAX */
        for (int j = 0; j < n->naggs; j++) {
            if (!s->minmax[j])
                continue;
            int col = n->aggs[j].col;
            BatchBuilder *bb = bb_new();
            for (int64_t i = 0; i < rows->n; i++) {
                if (vec_is_null(&rows->col[col], i))
                    continue;
                buf_reset(&s->kb);
                buf_reset(&s->vb);
                key_encode(rows, s->gcols, s->ngroup, i, &s->kb);
                key_encode(rows, &col, 1, i, &s->vb);
                bb_add(bb, s->kb.p, s->kb.n, s->vb.p, s->vb.n, rows->w[i]);
            }
            trace_insert_take(s->minmax[j], bb_finish(bb));
        }
    }
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 2 * s->ntouched);
    int rc = emit(op, env, s, &co);
    op->out = co.c;
    return rc;
}

static void step_end_agg(Op *op)
{
    AggSt *s = op->st;
    for (int64_t i = 0; i < s->ngarbage; i++)
        sl_free(s->garbage[i]);
    s->ngarbage = 0;
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            trace_step_end(s->minmax[j]);
}

static void free_agg(Op *op)
{
    AggSt *s = op->st;
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    step_end_agg(op);
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        Group *g = pl;
        sl_free(g->key);
        sl_free(g->out);
    }
    hmap_free(s->groups);
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            trace_free(s->minmax[j]);
    sl_free(s->minmax);
    sl_free(s->gcols);
    sl_free(s->touched);
    sl_free(s->garbage);
    buf_free(&s->kb);
    buf_free(&s->vb);
    arena_free(s->scratch_arena);
    sl_free(s);
}

int op_agg_init(Op *op)
{
    const CNode *n = op->node;
    const CNode *src = op->circuit->nodes[n->in[0]];
    AggSt *s = sl_calloc(1, sizeof(*s));
    s->ngroup = n->ngroup;
    s->naggs = n->naggs;
    s->nin = src->ncol;
    s->in_types = src->types;
    s->partsz = sizeof(Part) + sizeof(Acc) * (size_t)n->naggs;
    s->groups = hmap_new(sizeof(Group) + sizeof(Acc) * (size_t)n->naggs);
    s->gcols = sl_malloc(sizeof(int) * (size_t)(n->ngroup + 1));
    for (int i = 0; i < n->ngroup; i++)
        s->gcols[i] = i;
    s->minmax = sl_calloc((size_t)(n->naggs + 1), sizeof(Trace *));
    for (int j = 0; j < n->naggs; j++)
        if (n->aggs[j].kind == AGG_MIN || n->aggs[j].kind == AGG_MAX)
            s->minmax[j] = trace_new();
    s->scratch_arena = arena_new(4096);
    s->scratch = chunk_new(s->scratch_arena, n->ncol, n->types, 1);
    s->scratch->n = 1;
    op->st = s;
    op->eval = eval_agg;
    op->step_end = step_end_agg;
    op->free = free_agg;
    return 0;
}

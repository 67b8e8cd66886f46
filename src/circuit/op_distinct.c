/*
 * circuit/op_distinct.c - DISTINCT (non-linear).
 *
 * Delta rule: keep the integral weight of every row; for each row touched
 * in a step, emit +1 when its weight goes from <= 0 to > 0 and -1 when it
 * goes from > 0 to <= 0. Rows are exchanged by the hash of their encoding,
 * so each worker owns a disjoint set of rows.
 */
#include "op.h"

#include "../base/mem.h"
#include "../zset/hmap.h"
#include "../zset/key.h"

typedef struct DEnt {
    int64_t w;       /* integral weight */
    int64_t old;     /* weight before the current step */
    int64_t touched; /* last step that changed it */
} DEnt;

typedef struct Touch {
    DEnt *e;
    const uint8_t *k;
    uint32_t kn;
} Touch;

typedef struct DistinctSt {
    HMap *rows;
    Touch *t;
    int64_t nt, cap;
    Buf kb;
} DistinctSt;

static void begin_distinct(Op *op, OpEnv *env)
{
    for (int d = 0; d < env->nworkers; d++)
        buf_reset(xchg_buf(op->x, env->worker, d, 0));
}

static int push_distinct(Op *op, OpEnv *env, int input, Chunk *c)
{
    DistinctSt *s = op->st;
    int W = env->nworkers, me = env->worker;
    (void)input;
    for (int64_t r = 0; r < c->n; r++) {
        buf_reset(&s->kb);
        key_encode_row(c, r, &s->kb);
        int d = op_route(s->kb.p, s->kb.n, W);
        xrec_put(xchg_buf(op->x, me, d, 0), s->kb.p, (uint32_t)s->kb.n, NULL, 0, c->w[r]);
    }
    return 0;
}

static int finish_distinct(Op *op, OpEnv *env)
{
    DistinctSt *s = op->st;
    const CNode *n = op->node;
    Exchange *x = op->x;
    int W = env->nworkers, me = env->worker;
    xchg_wait(x);
    s->nt = 0;
    for (int f = 0; f < W; f++) {
        const Buf *b = xchg_buf(x, f, me, 0);
        size_t pos = 0;
        XRec r;
        while (xrec_next(b, &pos, &r)) {
            bool created;
            uint64_t h = sl_hash(r.k, r.kn);
            DEnt *e = hmap_upsert(s->rows, r.k, r.kn, h, &created);
            if (created || e->touched != env->step) {
                if (created)
                    e->w = 0;
                e->old = e->w;
                e->touched = env->step;
                if (s->nt == s->cap) {
                    s->cap = s->cap ? s->cap * 2 : 64;
                    s->t = sl_realloc(s->t, sizeof(Touch) * (size_t)s->cap);
                }
                s->t[s->nt++] = (Touch){e, r.k, r.kn};
            }
            e->w += r.w;
        }
    }
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, s->nt);
    for (int64_t i = 0; i < s->nt; i++) {
        Touch *t = &s->t[i];
        bool was = t->e->old > 0, now = t->e->w > 0;
        if (was != now) {
            int64_t r = cout_row(&co);
            key_decode(t->k, n->types, n->ncol, co.c, 0, r);
            co.c->w[r] = now ? 1 : -1;
        }
        if (t->e->w == 0)
            hmap_delete(s->rows, t->k, t->kn, sl_hash(t->k, t->kn));
    }
    op->out = co.c;
    return 0;
}

static void free_distinct(Op *op)
{
    DistinctSt *s = op->st;
    hmap_free(s->rows);
    sl_free(s->t);
    buf_free(&s->kb);
    sl_free(s);
}

int op_distinct_init(Op *op)
{
    DistinctSt *s = sl_calloc(1, sizeof(*s));
    s->rows = hmap_new(sizeof(DEnt));
    op->st = s;
    op->eval = op_eval_streamed;
    op->begin = begin_distinct;
    op->push = push_distinct;
    op->finish = finish_distinct;
    op->free = free_distinct;
    return 0;
}

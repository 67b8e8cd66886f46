/*
 * circuit/op_join.c - equi-join (bilinear).
 *
 * Delta rule, with A_t the integral of side A after step t:
 *   d(A join B) = dA join B_{t-1}  +  dA join dB  +  A_{t-1} join dB.
 * Each side keeps a trace of its integral, indexed by the join key
 * (tuple = key encoding || row encoding). Rows are exchanged so that each
 * worker owns the keys that hash to it on both sides. Output columns are
 * the left row's, then the right row's. Keys compare by their encoding, so
 * a NULL key matches a NULL key: for SQL equality the planner filters NULL
 * keys first (they never match); sql/plan_join.c joins whole rows on
 * nullable keys on purpose, for null-safe row equality.
 *
 * Cost: push() encodes each row's key, then the row straight into the
 * outbox of the key's owner (no staging copy). Output rows decode only the
 * columns a consumer reads (output_needs: when every consumer is a map,
 * the columns its filter and projections name); the others stay unset.
 *
 * Skew (hot keys): with W > 1 workers a join exchanges in two rounds
 * (op.h reroute). Round 1 routes every row to the owner of its key, as
 * above. Each owner then samples the keys of what it received; a key with
 * at least SLUICE_SKEW_MIN_ROWS rows (default HOT_MIN_ROWS) in the step
 * that makes up a quarter or more of one side's rows there becomes hot,
 * for good (up to HOT_MAX per worker). The owner sends a hot key's rows on
 * in round 2: those of its "split" side (the side that had more of them)
 * round-robin to all workers (the owner, which pays for the pass over what
 * it received, keeps half a share), those of the other ("broadcast") side to
 * every worker, and when the key turns hot, the broadcast side's rows its
 * trace already holds as well (each other worker's copy starts there). So
 * every worker holds a part of the split side's rows of a hot key and a
 * whole copy of the other side's rows; the sum over workers of
 * dA_w join B + A_w join dB is the join of the key's rows, and the delta
 * rule above holds unchanged on each worker (a worker that is not the
 * owner had no rows of the key before it turned hot). Round 1's rows of a
 * hot key never enter the owner's delta; everything else does. Which
 * worker holds which part changes no result: any partition of the split
 * side is correct. The hot set is the owner's alone (no agreement between
 * workers is needed, so it holds across hosts too), is saved with the
 * state and undone with it.
 *
 * Watermarks (watermark.h): at step end, a side's rows whose key column
 * is below the other side's watermark on that key are forgotten (no later
 * row of the other side can match them), so a join on the time column of
 * two streams with LATENESS keeps what is above the watermarks only.
 *
 * Checkpoint: batch 0 is a header (key "left" or "right", weight = how
 * many spine batches of that side follow; a missing side has none; key
 * "hot", value = split side byte + key, weight 1: a hot key this worker
 * owns), then the left trace's spine batches, oldest first, then the
 * right's. The spine batches are the trace's own (references, no copy),
 * so a checkpoint of a large join costs a few pointers. Loaded with
 * another worker count, each key's rows go back to its owner (the split
 * side's parts added up, the broadcast side's copy taken from the old
 * owner only) and no key is hot until the steps find it again.
 */
#include "op.h"

#include "../base/budget.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/batch.h"
#include "../zset/key.h"
#include "../zset/trace.h"
#include "watermark.h"

#include <stdlib.h>

#define HOT_MIN_ROWS 8192 /* rows of a key in a step before it can turn hot */
#define HOT_MAX 64        /* hot keys per instance */
#define HOT_SAMPLES 4096 /* records an owner samples per inbox */

/* The step's output rows, as their left and right encodings and weights
   in blocks of PAIRS_BLOCK in the step's arena: all are collected first,
   so that the output chunk is allocated once at its size (no chunk grown
   by doubling and copied in the arena), then decoded a block at a time, a
   column at a time. */
#define PAIRS_BLOCK 1024
typedef struct PairBlock {
    const uint8_t *l[PAIRS_BLOCK], *r[PAIRS_BLOCK];
    int64_t w[PAIRS_BLOCK];
} PairBlock;

typedef struct Pairs {
    Arena *a;
    PairBlock **b; /* kept from step to step (the blocks are the arena's) */
    int64_t nb, cap;
    int64_t n;     /* pairs */
} Pairs;

/* A hot key this worker owns (see the header). */
typedef struct HotKey {
    uint8_t *k;
    uint32_t kn;
    uint64_t pfx; /* key_pfx of k */
    int split;    /* the side whose rows are spread; the other is copied */
    bool fresh;  /* turned hot in this step: seed the other workers */
} HotKey;

typedef struct JoinSt {
    Trace *t[2];
    int ncol[2];
    const SqlType *types[2];
    const int *keys[2];
    int nkeys;
    bool *need[2]; /* per side column: a consumer reads it (output_needs) */
    KeyPlan plan[2]; /* per side: how emit() decodes its needed columns */
    /* push_fixed's scratch: keys, then per row its record's place */
    uint8_t *kbuf;
    size_t kcap;
    uint8_t **at;
    int64_t atcap;
    int *to;
    int64_t tocap;
    /* skew (W > 1) */
    HotKey *hot;
    int nhot, hotcap, nhot0; /* nhot0: as the step started (undo) */
    int64_t min_rows;
    uint64_t rr;             /* round-robin of split rows */
    /* watermarks (join_forget): per side, the key position whose other
       side has a watermark in this step (-1: none), that watermark, and
       the bound already applied */
    int gc_k[2];
    int64_t gc_bound[2], gc_done[2];
    SqlType *ktypes[2];      /* per side: the key columns' types */
    Pairs pp;                /* the step's output rows */
} JoinSt;

static void pairs_free(Pairs *pp)
{
    sl_free(pp->b);
    *pp = (Pairs){0};
}

static inline void emit(Pairs *pp, const uint8_t *l, const uint8_t *r, int64_t w)
{
    int64_t k = pp->n % PAIRS_BLOCK;
    if (unlikely(k == 0)) {
        VEC_RESERVE(pp->b, pp->cap, pp->nb + 1);
        pp->b[pp->nb++] = arena_alloc(pp->a, sizeof(PairBlock));
    }
    PairBlock *b = pp->b[pp->nb - 1];
    b->l[k] = l;
    b->r[k] = r;
    b->w[k] = w;
    pp->n++;
}

/* The output chunk of pp's rows, in the step's arena. */
static Chunk *decode_pairs(JoinSt *s, const CNode *n, Arena *a, const Pairs *pp)
{
    ChunkOut co;
    cout_init(&co, a, n->ncol, n->types, pp->n);
    int64_t r0 = cout_rows(&co, pp->n);
    for (int64_t i = 0; i < pp->nb; i++) {
        const PairBlock *b = pp->b[i];
        int64_t at = r0 + i * PAIRS_BLOCK, m = pp->n - i * PAIRS_BLOCK;
        m = m < PAIRS_BLOCK ? m : PAIRS_BLOCK;
        key_decode_many(&s->plan[0], b->l, m, co.c, 0, at);
        key_decode_many(&s->plan[1], b->r, m, co.c, s->ncol[0], at);
        memcpy(co.c->w + at, b->w, (size_t)m * sizeof(int64_t));
    }
    return co.c;
}

/* For each run of equal keys in delta d (side `side`), join with the
   matches of the other side found in trace t (and in delta `dother` when
   non-NULL). Returns false, or true when the thread's budget (a /query's,
   base/budget.h) stopped it part way. */
static bool join_delta(Pairs *pp, const Batch *d, int side, Trace *t, const Batch *dother,
                       ValWs *ms)
{
    bool stopped = false;
    unsigned emitted = 0;
    TraceCursor *cur = trace_cursor_new(t); /* d's keys ascend */
    for (int64_t i = 0; i < d->n;) {
        const uint8_t *k = batch_key(d, i);
        size_t kn = batch_klen(d, i);
        int64_t j = i + 1;
        while (j < d->n && batch_klen(d, j) == kn && !memcmp(batch_key(d, j), k, kn))
            j++;
        ms->n = 0;
        trace_cursor_for_key(cur, k, kn, op_valw_add, ms);
        if (dother) {
            for (int64_t o = batch_seek(dother, k, kn);
                 o < dother->n && batch_key_cmp(dother, o, k, kn) == 0; o++)
                op_valw_add(ms, batch_val(dother, o), batch_vlen(dother, o), dother->w[o]);
        }
        for (int64_t a = i; a < j && !stopped; a++)
            for (int64_t b = 0; b < ms->n; b++) {
                if (unlikely(++emitted % 4096 == 0) && budget_stop()) {
                    stopped = true;
                    break;
                }
                const uint8_t *mine = batch_val(d, a), *other = ms->v[b].v;
                int64_t w = d->w[a] * ms->v[b].w;
                if (side == 0)
                    emit(pp, mine, other, w);
                else
                    emit(pp, other, mine, w);
            }
        i = j;
        if (stopped)
            break;
    }
    trace_cursor_free(cur);
    return stopped;
}

/* push() of a chunk whose rows and keys encode to one width in every row
   (key_fixed_width: integers, and columns NULL in every row, such as
   those the planner set to NULL because nobody reads them): every
   record has the same size, so the keys are encoded column by column,
   routed, each row's record placed in its owner's outbox, and the rows
   encoded column by column straight into their places. */
static void push_fixed(JoinSt *s, Shard *sh, int side, const Chunk *c, int kw, int rw)
{
    int64_t n = c->n;
    int W = sh->W;
    size_t rec = 16 + (size_t)kw + (size_t)rw;
    VEC_RESERVE(s->kbuf, s->kcap, (size_t)n * (size_t)kw + 1);
    VEC_RESERVE(s->at, s->atcap, n);
    VEC_RESERVE(s->to, s->tocap, n);
    for (int64_t r = 0; r < n; r++)
        s->at[r] = s->kbuf + (size_t)r * (size_t)kw;
    key_encode_fixed(c, s->keys[side], s->nkeys, n, s->at, 0);
    int64_t cnt[64] = {0};
    int64_t *count = W <= 64 ? cnt : sl_calloc((size_t)W, sizeof(int64_t));
    for (int64_t r = 0; r < n; r++) {
        s->to[r] = op_route(s->kbuf + (size_t)r * (size_t)kw, (size_t)kw, W);
        count[s->to[r]]++;
    }
    for (int d = 0; d < W; d++) {
        Buf *o = sh->out[side * W + d];
        buf_reserve(o, (size_t)count[d] * rec);
        count[d] = (int64_t)o->n; /* now: where d's next record goes */
    }
    uint32_t kn = (uint32_t)kw, vn = (uint32_t)rw;
    for (int64_t r = 0; r < n; r++) {
        Buf *o = sh->out[side * W + s->to[r]];
        uint8_t *p = o->p + count[s->to[r]];
        count[s->to[r]] += (int64_t)rec;
        memcpy(p, &kn, 4);
        memcpy(p + 4, &vn, 4);
        memcpy(p + 8, &c->w[r], 8);
        memcpy(p + 16, s->kbuf + (size_t)r * (size_t)kw, (size_t)kw);
        s->at[r] = p + 16 + kw;
    }
    for (int d = 0; d < W; d++)
        sh->out[side * W + d]->n = (size_t)count[d];
    key_encode_fixed(c, NULL, c->ncol, n, s->at, 0);
    if (count != cnt)
        sl_free(count);
}

/* A row of side `side` goes to the owner of its join key as the record
   (join key, the row's encoding): the key is encoded first (it decides
   the owner), the row straight into the owner's outbox. */
static int push_join(Op *op, OpEnv *env, int side, Chunk *c)
{
    JoinSt *s = op->st;
    Shard *sh = op->sh;
    int kw = key_fixed_width(c, s->keys[side], s->nkeys), rw = key_fixed_width(c, NULL, c->ncol);
    if (kw >= 0 && rw >= 0) {
        push_fixed(s, sh, side, c, kw, rw);
        return 0;
    }
    for (int64_t r = 0; r < c->n; r++) {
        buf_reset(&sh->kb);
        key_encode(c, s->keys[side], s->nkeys, r, &sh->kb);
        Buf *o = sh->out[side * sh->W + op_route(sh->kb.p, sh->kb.n, sh->W)];
        size_t at = xrec_open(o, sh->kb.p, (uint32_t)sh->kb.n, c->w[r]);
        key_encode_row(c, r, o);
        xrec_close(o, at);
    }
    return 0;
}

/* ---- skew: hot keys (see the header) ------------------------------------- */

/* The first 8 bytes of a key (fewer zero-padded): equal keys of up to 8
   bytes have equal prefixes and lengths, and only they. */
static inline uint64_t key_pfx(const uint8_t *k, uint32_t kn)
{
    uint64_t p = 0;
    if (kn >= 8)
        memcpy(&p, k, 8);
    else if (kn == 4)
        memcpy(&p, k, 4);
    else
        for (uint32_t i = 0; i < kn; i++)
            p |= (uint64_t)k[i] << (8 * i);
    return p;
}

/* Index of k in the hot set, or -1 (an owner asks this of every record it
   receives once it has hot keys: no call for keys of up to 8 bytes). */
static inline int hot_find(const JoinSt *s, const uint8_t *k, uint32_t kn)
{
    uint64_t p = key_pfx(k, kn);
    for (int i = 0; i < s->nhot; i++)
        if (s->hot[i].pfx == p && s->hot[i].kn == kn &&
            (kn <= 8 || !memcmp(s->hot[i].k + 8, k + 8, kn - 8)))
            return i;
    return -1;
}

static void hot_add(JoinSt *s, const uint8_t *k, uint32_t kn, int split, bool fresh)
{
    HotKey *h = VEC_PUSH(s->hot, s->nhot, s->hotcap);
    h->k = sl_malloc(kn ? kn : 1);
    if (kn)
        memcpy(h->k, k, kn);
    h->kn = kn;
    h->pfx = key_pfx(k, kn);
    h->split = split;
    h->fresh = fresh;
}

static void hot_truncate(JoinSt *s, int n)
{
    while (s->nhot > n)
        sl_free(s->hot[--s->nhot].k);
}

/* A sampled key count: an open-addressing table of keys (pointing into
   the inboxes) and how many of the sampled records carry each; the
   sample is the first records of each inbox, `scale` the inboxes' bytes
   over the sampled bytes. */
typedef struct KeyCount {
    uint64_t h;
    const uint8_t *k;
    uint32_t kn;
    int64_t n;
} KeyCount;
typedef struct KeySample {
    KeyCount *tab;
    size_t mask, used;
    double scale;
    int64_t records; /* estimated records in all */
} KeySample;

/* Count the keys of the first HOT_SAMPLES records of each inbox of
   channel ch (new keys stop being added once the table is half full: a
   key that makes up a quarter of the records is in it long before). */
static void sample_keys(const Shard *sh, int ch, KeySample *ks)
{
    size_t slots = 16, bytes = 0, sampled = 0, most = 0;
    for (int from = 0; from < sh->W; from++)
        most += sh->in[ch * sh->W + from]->n / 17 + 1; /* a record: 16 bytes and a key */
    while (slots < 2 * most && slots < 2 * HOT_SAMPLES)
        slots *= 2;
    ks->tab = sl_calloc(slots, sizeof(KeyCount));
    ks->mask = slots - 1;
    ks->used = 0;
    int64_t n = 0;
    for (int from = 0; from < sh->W; from++) {
        const Buf *b = sh->in[ch * sh->W + from];
        bytes += b->n;
        size_t pos = 0;
        XRec r;
        for (int64_t i = 0; i < HOT_SAMPLES && xrec_next(b, &pos, &r); i++, n++) {
            uint64_t h = sl_hash(r.k, r.kn);
            for (size_t j = h & ks->mask;; j = (j + 1) & ks->mask) {
                KeyCount *e = &ks->tab[j];
                if (!e->n) {
                    if (2 * ks->used < slots) {
                        *e = (KeyCount){h, r.k, r.kn, 1};
                        ks->used++;
                    }
                    break;
                }
                if (e->h == h && e->kn == r.kn && !memcmp(e->k, r.k, r.kn)) {
                    e->n++;
                    break;
                }
            }
        }
        sampled += pos;
    }
    ks->scale = sampled ? (double)bytes / (double)sampled : 1.0;
    ks->records = (int64_t)((double)n * ks->scale);
}

/* The estimated rows of key k in sample ks (0 when not sampled). */
static int64_t sample_est(const KeySample *ks, const uint8_t *k, uint32_t kn)
{
    if (!ks->tab)
        return 0;
    uint64_t h = sl_hash(k, kn);
    for (size_t i = h & ks->mask; ks->tab[i].n; i = (i + 1) & ks->mask)
        if (ks->tab[i].h == h && ks->tab[i].kn == kn && !memcmp(ks->tab[i].k, k, kn))
            return (int64_t)((double)ks->tab[i].n * ks->scale);
    return 0;
}

/* Find the keys that turn hot in this step's round-1 rows. */
static void detect_hot(JoinSt *s, const Shard *sh)
{
    KeySample ks[2] = {{0}, {0}};
    for (int side = 0; side < 2; side++) {
        size_t bytes = 0;
        for (int from = 0; from < sh->W; from++)
            bytes += sh->in[side * sh->W + from]->n;
        if (bytes >= (size_t)s->min_rows * 16)
            sample_keys(sh, side, &ks[side]);
    }
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; ks[side].tab && i <= ks[side].mask && s->nhot < HOT_MAX; i++) {
            const KeyCount *e = &ks[side].tab[i];
            int64_t est = (int64_t)((double)e->n * ks[side].scale);
            if (!e->n || est < s->min_rows || est * 4 < ks[side].records)
                continue;
            int64_t other = sample_est(&ks[1 - side], e->k, e->kn);
            if (other > est || (other == est && side == 1) || hot_find(s, e->k, e->kn) >= 0)
                continue; /* the other side splits it, or it is hot already */
            hot_add(s, e->k, e->kn, side, true);
        }
    sl_free(ks[0].tab);
    sl_free(ks[1].tab);
}

typedef struct SeedCtx {
    Shard *sh;
    int ch;
    const HotKey *h;
} SeedCtx;

/* A broadcast-side row of a key turning hot, from the owner's trace, to
   every other worker. */
static void seed_row(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    SeedCtx *x = ctx;
    for (int to = 0; to < x->sh->W; to++)
        if (to != x->sh->me)
            shard_put(x->sh, x->ch, to, x->h->k, x->h->kn, val, vn, w);
}

/* Send the hot rows of inbox b (side `side`) on in round 2 and take them
   out of b, in place (b is this worker's to read in this step): a split
   side's rows round-robin over the workers (this worker's share, half of
   another's, stays),
   a broadcast side's to every other worker (and one stays). */
static void divert(JoinSt *s, Shard *sh, int side, Buf *b)
{
    int W = sh->W;
    size_t pos = 0, at = 0, keep = 0, run = 0; /* run: start of the kept records not yet moved */
    XRec r;
    while (at = pos, xrec_next(b, &pos, &r)) {
        int h = hot_find(s, r.k, r.kn);
        if (h < 0)
            continue;
        if (s->hot[h].split == side) {
            /* 2W - 1 slots: two per other worker, one here (the owner
               pays for this pass) */
            int slot = (int)(s->rr++ % (uint64_t)(2 * W - 1)), to = slot / 2;
            if (slot == 2 * W - 2)
                continue; /* its part here */
            to += to >= sh->me;
            buf_append(sh->out[(2 + side) * W + to], b->p + at, pos - at); /* the record */
        } else {
            for (int o = 0; o < W; o++)
                if (o != sh->me)
                    buf_append(sh->out[(2 + side) * W + o], b->p + at, pos - at);
            continue; /* and a copy here */
        }
        if (at > run) { /* move the kept records before this one down */
            if (keep != run)
                memmove(b->p + keep, b->p + run, at - run);
            keep += at - run;
        }
        run = pos;
    }
    if (b->n > run) {
        if (keep != run)
            memmove(b->p + keep, b->p + run, b->n - run);
        keep += b->n - run;
    }
    b->n = keep;
}

/* Round 2 (op.h reroute): an owner finds the keys turning hot, sends the
   hot keys' rows on (channels 2 and 3) and keeps the rest for its delta. */
static void reroute_join(Op *op, OpEnv *env)
{
    JoinSt *s = op->st;
    Shard *sh = op->sh;
    int W = sh->W;
    if (s->nhot < HOT_MAX)
        detect_hot(s, sh);
    if (!s->nhot)
        return;
    for (int side = 0; side < 2; side++)
        for (int from = 0; from < W; from++)
            divert(s, sh, side, sh->in[side * W + from]);
    for (int i = 0; i < s->nhot; i++) {
        HotKey *h = &s->hot[i];
        if (!h->fresh)
            continue;
        h->fresh = false;
        int b = 1 - h->split;
        SeedCtx x = {sh, 2 + b, h};
        trace_for_key(s->t[b], h->k, h->kn, seed_row, &x);
    }
}

/* This worker's delta of one side: its round-1 rows (an owner's without
   its hot keys' rows) and the hot rows sent to it in round 2. */
static Batch *side_delta(const Shard *sh, int side)
{
    int chs[2] = {side, 2 + side};
    return shard_batch_of(sh, chs, sh->nch > 2 ? 2 : 1);
}

static int finish_join(Op *op, OpEnv *env)
{
    JoinSt *s = op->st;
    Batch *delta[2] = {side_delta(op->sh, 0), side_delta(op->sh, 1)};
    ValWs ms = {0};
    Pairs *pp = &s->pp;
    pp->a = env->arena;
    pp->n = pp->nb = 0;
    bool stopped = join_delta(pp, delta[0], 0, s->t[1], delta[1], &ms) ||
                   join_delta(pp, delta[1], 1, s->t[0], NULL, &ms);
    sl_free(ms.v);
    op->out = decode_pairs(s, op->node, env->arena, pp); /* before the deltas go */
    trace_insert_take(s->t[0], delta[0]);
    trace_insert_take(s->t[1], delta[1]);
    /* a side's rows with key k below the other side's watermark there can
       meet no later row of that side */
    const CNode *n = op->node;
    for (int side = 0; side < 2; side++)
        s->gc_k[side] = wm_first_col(env, n->in[1 - side], s->keys[1 - side], s->nkeys,
                                     s->ktypes[side], &s->gc_bound[side]);
    return stopped ? budget_error(env->ev->err) : 0;
}

/* Watermarks (watermark.h): forget what join_forget's bounds allow. */
static void join_forget(JoinSt *s)
{
    for (int side = 0; side < 2; side++)
        if (s->gc_k[side] >= 0 && s->gc_bound[side] != s->gc_done[side]) {
            wm_trace_forget(s->t[side], s->ktypes[side], s->gc_k[side], s->gc_bound[side]);
            s->gc_done[side] = s->gc_bound[side];
        }
}

/* Rollback: both integrals as before the step (trace.h). */
static void undo_join(Op *op)
{
    JoinSt *s = op->st;
    trace_rollback(s->t[0]);
    trace_rollback(s->t[1]);
    hot_truncate(s, s->nhot0);
    s->gc_k[0] = s->gc_k[1] = -1; /* the step's watermarks are not committed */
}

static void step_end_join(Op *op)
{
    JoinSt *s = op->st;
    trace_step_end(s->t[0]);
    trace_step_end(s->t[1]);
    s->nhot0 = s->nhot;
    join_forget(s);
}

static void mem_join(Op *op, OpMem *m)
{
    JoinSt *s = op->st;
    trace_mem(s->t[0], m);
    trace_mem(s->t[1], m);
}

static void free_join(Op *op)
{
    JoinSt *s = op->st;
    trace_free(s->t[0]);
    trace_free(s->t[1]);
    sl_free(s->kbuf);
    sl_free(s->at);
    sl_free(s->to);
    key_plan_free(&s->plan[0]);
    key_plan_free(&s->plan[1]);
    sl_free(s->need[0]);
    sl_free(s->ktypes[0]);
    sl_free(s->ktypes[1]);
    pairs_free(&s->pp);
    hot_truncate(s, 0);
    sl_free(s->hot);
    sl_free(s);
}

static const char *const side_name[2] = {"left", "right"};

static int save_join(Op *op, BatchList *out)
{
    JoinSt *s = op->st;
    BatchBuilder *bb = bb_new();
    for (int side = 0; side < 2; side++)
        bb_add(bb, (const uint8_t *)side_name[side], strlen(side_name[side]), NULL, 0,
               trace_nbatches(s->t[side]));
    Buf v = {0};
    for (int i = 0; i < s->nhot; i++) {
        buf_reset(&v);
        uint8_t split = (uint8_t)s->hot[i].split;
        buf_append(&v, &split, 1);
        buf_append(&v, s->hot[i].k, s->hot[i].kn);
        bb_add(bb, (const uint8_t *)"hot", 3, v.p, v.n, 1);
    }
    buf_free(&v);
    batchlist_add(out, bb_finish(bb));
    for (int side = 0; side < 2; side++)
        op_save_trace(s->t[side], out);
    return 0;
}

/* Spine batch counts per side from the header h, and its hot keys into
   s (when not NULL); false when it is not a join header. */
static bool read_header(const Batch *h, int64_t nb[2], JoinSt *s)
{
    nb[0] = nb[1] = 0;
    for (int64_t i = 0; i < h->n; i++) {
        if (batch_klen(h, i) == 3 && !memcmp(batch_key(h, i), "hot", 3)) {
            const uint8_t *v = batch_val(h, i);
            if (batch_vlen(h, i) < 1 || v[0] > 1 || h->w[i] != 1)
                return false;
            if (s)
                hot_add(s, v + 1, (uint32_t)batch_vlen(h, i) - 1, v[0], false);
            continue;
        }
        int side = 0;
        while (side < 2 && (batch_klen(h, i) != strlen(side_name[side]) ||
                            memcmp(batch_key(h, i), side_name[side], batch_klen(h, i))))
            side++;
        if (side == 2 || batch_vlen(h, i) != 0 || h->w[i] < 0)
            return false;
        nb[side] = h->w[i];
    }
    return true;
}

static int load_join(Op *op, Batch *const *b, int n, Err *err)
{
    JoinSt *s = op->st;
    int64_t nb[2];
    hot_truncate(s, 0);
    if (n < 1 || !read_header(b[0], nb, s))
        return err_set(err, SL_EIO, "join state (node %d) has no valid header", op->node->id);
    s->nhot0 = s->nhot;
    if (nb[0] > n || nb[1] > n || 1 + nb[0] + nb[1] != n)
        return err_set(err, SL_EIO,
                       "join state (node %d) has %d spine batches, its header counts %lld + %lld",
                       op->node->id, n - 1, (long long)nb[0], (long long)nb[1]);
    op_load_trace(s->t[0], b + 1, (int)nb[0]);
    op_load_trace(s->t[1], b + 1 + nb[0], (int)nb[1]);
    return 0;
}

/* The consolidated sum of side `side`'s batches b[0..n) (b[i] from old
   worker from[i]) restricted to the keys worker w of W owns; a key that
   was hot (in hs, its old owner in own[]) counts its broadcast side's
   rows from its old owner only (the others held copies). */
static Batch *owned_side(Batch *const *b, const int *from, int n, int w, int W, int side,
                         const JoinSt *hs, const int *own)
{
    if (!hs->nhot)
        return op_owned_sum(b, n, w, W, false);
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < n; i++)
        for (int64_t t = 0; t < b[i]->n; t++) {
            const uint8_t *k = batch_key(b[i], t);
            size_t kn = batch_klen(b[i], t);
            if (op_route(k, kn, W) != w)
                continue;
            int h = hot_find(hs, k, (uint32_t)kn);
            if (h >= 0 && hs->hot[h].split != side && own[h] != from[i])
                continue;
            bb_add(bb, k, kn, batch_val(b[i], t), batch_vlen(b[i], t), b[i]->w[t]);
        }
    return bb_finish(bb);
}

/* Another worker count: each side's spines of every old worker, the keys
   this worker owns (hot keys gathered back to their owner). */
static int load_split_join(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                           int nold, Err *err)
{
    int total = 0;
    for (int k = 0; k < nold; k++)
        total += counts[k];
    Batch **side[2];
    int *from[2];
    int ns[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
        side[j] = sl_calloc((size_t)total + 1, sizeof(Batch *));
        from[j] = sl_calloc((size_t)total + 1, sizeof(int));
    }
    JoinSt hs = {0}; /* the old workers' hot keys */
    int *own = NULL;
    int64_t owncap = 0;
    int rc = 0;
    for (int k = 0; k < nold && !rc; k++) {
        int64_t nb[2];
        int h0 = hs.nhot;
        if (counts[k] < 1 || !read_header(lists[k][0], nb, &hs) ||
            1 + nb[0] + nb[1] != counts[k]) {
            rc = err_set(err, SL_EIO, "join state (node %d) has no valid header", op->node->id);
            break;
        }
        VEC_RESERVE(own, owncap, hs.nhot + 1);
        for (int i = h0; i < hs.nhot; i++)
            own[i] = k;
        for (int64_t i = 0; i < nb[0]; i++) {
            from[0][ns[0]] = k;
            side[0][ns[0]++] = lists[k][1 + i];
        }
        for (int64_t i = 0; i < nb[1]; i++) {
            from[1][ns[1]] = k;
            side[1][ns[1]++] = lists[k][1 + nb[0] + i];
        }
    }
    if (!rc) {
        Batch *b[3] = {op_header(side_name, (int64_t[]){1, 1}, 2),
                       owned_side(side[0], from[0], ns[0], w, W, 0, &hs, own),
                       owned_side(side[1], from[1], ns[1], w, W, 1, &hs, own)};
        rc = load_join(op, b, 3, err);
        for (int i = 0; i < 3; i++)
            batch_unref(b[i]);
    }
    hot_truncate(&hs, 0);
    sl_free(hs.hot);
    sl_free(own);
    for (int j = 0; j < 2; j++) {
        sl_free(side[j]);
        sl_free(from[j]);
    }
    return rc;
}

/* Mark in need[0..ncol) the columns e reads. */
static void mark_cols(const Expr *e, bool *need, int ncol)
{
    if (!e)
        return;
    if (e->k == E_COL && e->col >= 0 && e->col < ncol)
        need[e->col] = true;
    for (int i = 0; i < e->na; i++)
        mark_cols(e->a[i], need, ncol);
}

/* The output columns of n that its consumers read, in need[0..n->ncol):
   all of them unless every consumer is a map, whose filter and
   projections name the columns they read (a projection after a join
   usually keeps few of them; the others are never decoded). */
static void output_needs(const Circuit *c, const CNode *n, bool *need)
{
    bool all = false;
    for (int i = n->id + 1; i < c->nnodes && !all; i++) {
        const CNode *m = c->nodes[i];
        for (int j = 0; j < m->nin && !all; j++) {
            if (m->in[j] != n->id)
                continue;
            if (m->k != OPK_MAP) {
                all = true;
                break;
            }
            mark_cols(m->filter, need, n->ncol);
            for (int p = 0; p < m->ncol; p++)
                mark_cols(m->proj[p], need, n->ncol);
        }
    }
    for (int j = 0; j < n->ncol && all; j++)
        need[j] = true;
}

int op_join_init(Op *op)
{
    const CNode *n = op->node;
    JoinSt *s = sl_calloc(1, sizeof(*s));
    s->need[0] = sl_calloc((size_t)n->ncol + 1, sizeof(bool));
    output_needs(op->circuit, n, s->need[0]);
    for (int side = 0; side < 2; side++) {
        const CNode *src = op->circuit->nodes[n->in[side]];
        s->t[side] = trace_new();
        s->ncol[side] = src->ncol;
        s->types[side] = src->types;
    }
    s->need[1] = s->need[0] + s->ncol[0];
    for (int side = 0; side < 2; side++)
        key_plan_init(&s->plan[side], s->types[side], s->ncol[side], s->need[side]);
    s->keys[0] = n->lkeys;
    s->keys[1] = n->rkeys;
    s->nkeys = n->nkeys;
    for (int side = 0; side < 2; side++) {
        s->gc_k[side] = -1;
        s->gc_done[side] = INT64_MIN;
        s->ktypes[side] = sl_calloc((size_t)n->nkeys + 1, sizeof(SqlType));
        for (int k = 0; k < n->nkeys; k++)
            s->ktypes[side][k] = s->types[side][s->keys[side][k]];
    }
    const char *e = getenv("SLUICE_SKEW_MIN_ROWS");
    s->min_rows = e && atoll(e) > 0 ? atoll(e) : HOT_MIN_ROWS;
    op->st = s;
    if (op->sh && op->sh->W > 1) {
        op->reroute = reroute_join;
        op->nch_first = 2;
    }
    op->push = push_join;
    op->finish = finish_join;
    op->step_end = step_end_join;
    op->undo = undo_join;
    op->free = free_join;
    op->mem = mem_join;
    op->save = save_join;
    op->load = load_join;
    op->load_split = load_split_join;
    return 0;
}

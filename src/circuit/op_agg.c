/*
 * circuit/op_agg.c - GROUP BY aggregation (non-linear as a whole).
 *
 * Delta rule: for every group touched in a step, the output changes by
 * -(old row) +(new row), and by nothing when both are equal. Linear
 * aggregates (COUNT, SUM, AVG) keep per-group accumulators (count, 128-bit
 * integer sum - 192-bit over a DECIMAL wider than 18 digits, so that a
 * total past 10^38 is an error and never a wrap - or an exact double sum,
 * non-NULL count) and never revisit history;
 * MIN, MAX, the DISTINCT forms, STRING_AGG, BIT_*, PERCENTILE_* and MODE
 * keep the group's multiset of values in a trace keyed by the group and
 * read it for touched groups (agg_state.c).
 *
 * Combine before exchange: when every aggregate is linear, each worker
 * first folds its input into local partial accumulators per group (push),
 * and only the partials (a few per group, not one per row) cross to the
 * group's owner worker (flush, shard.h). Otherwise rows are routed to the
 * owner and folded there.
 *
 * A global aggregate (no GROUP BY) has one group with an empty key, owned
 * by worker 0, present from the first step on: COUNT(*) is 0 and SUM is
 * NULL over an empty input, and stay so as the input empties again.
 *
 * Rollback (undo): the first time a step touches a group, a pointer to it
 * and its bytes are logged (without string columns also its output row's
 * bytes, which emit() rewrites in place; with them the old encoding waits
 * in the garbage list until step end anyway); a created group is logged
 * by pointer. Emptied groups are deleted at step end, not by emit(), so
 * every logged pointer stays valid for the step. undo() copies the logged
 * bytes back, deletes the groups the step created and rolls the MIN/MAX
 * value traces back. Cost without an error: one copy of each touched
 * group's bytes per step.
 *
 * Checkpoint: batch 0 is a header (key "minmax<j>", weight = how many
 * spine batches of aggregate j's value multiset follow; absent when none),
 * batch 1 holds the groups, then each multiset's own spine batches
 * (references, no copy), in aggregate order. A group is one tuple: key =
 * the group key encoding, val = its Part (partsz bytes: counts and
 * accumulators, no pointers), a byte 1 and the encoding of the row last
 * emitted (or a byte 0 when none), weight 1. The groups batch is kept
 * while no group changes, so checkpoints of an idle aggregate share it
 * (and nothing is spilled). Spilled (cold) groups (agg_spill.c) are saved
 * among the groups, in the same layout; a restored aggregate has them all in its map,
 * or, when they do not fit in memory, all among its cold groups.
 * The global aggregate's group is among the groups, so a restored
 * instance does not create it again (the step counter continues).
 */
#include "op.h"

#include <stdio.h>
#include <stdlib.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../expr/xsum.h"
#include "../zset/trace.h"
#include "agg_spill.h"
#include "cold.h"
#include "agg_state.h"
#include "watermark.h"

typedef struct Acc {
    __int128 isum; /* integer/decimal sums; over a wide DECIMAL (AggSt.wsum)
                      the low 128 bits of a 192-bit sum */
    int64_t cnt;   /* rows (COUNT(*)) or non-NULL values */
    int64_t hi;    /* wide DECIMAL sums: the high 64 bits (sign-extended) */
} Acc;

/* a += x * w in 192 bits (a wide DECIMAL sum: |x| < 10^38, so x * w may
   pass 2^127 but never 2^191). */
static inline void acc_add_wide(Acc *a, __int128 x, int64_t w)
{
    __int128 p;
    unsigned __int128 lo;
    int64_t hi;
    if (!__builtin_mul_overflow(x, (__int128)w, &p)) {
        lo = (unsigned __int128)p;
        hi = p < 0 ? -1 : 0;
    } else { /* |x| * |w| as 192 bits, then the sign */
        unsigned __int128 ux = x < 0 ? -(unsigned __int128)x : (unsigned __int128)x;
        uint64_t uw = w < 0 ? -(uint64_t)w : (uint64_t)w;
        unsigned __int128 l = (unsigned __int128)(uint64_t)ux * uw;
        unsigned __int128 h = (unsigned __int128)(uint64_t)(ux >> 64) * uw + (l >> 64);
        lo = (h << 64) | (uint64_t)l;
        hi = (int64_t)(uint64_t)(h >> 64);
        if ((x < 0) != (w < 0)) { /* two's complement over 192 bits */
            lo = ~lo + 1;
            hi = (int64_t)~(uint64_t)hi + (lo == 0);
        }
    }
    unsigned __int128 s = (unsigned __int128)a->isum + lo;
    a->hi += hi + (s < lo);
    a->isum = (__int128)s;
}

/* The 192-bit sum of a as 128 bits; false when it does not fit. */
static inline bool acc_wide_value(const Acc *a, __int128 *out)
{
    if (a->hi != (a->isum < 0 ? -1 : 0))
        return false;
    *out = a->isum;
    return true;
}

/* SUM/AVG over REAL/DOUBLE: an exact sum, so that the result does not
   depend on step boundaries or worker count, and deletions cancel exactly. */
typedef struct FAcc {
    int64_t cnt;
    int64_t pad;
    XSum sum;
} FAcc;

typedef struct Part { /* partial accumulators for one group */
    int64_t count;    /* sum of weights of the group's rows */
    int64_t pad;
    _Alignas(16) uint8_t acc[]; /* per aggregate: Acc or FAcc at AggSt.off[j] */
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
    size_t *off;         /* per aggregate: offset of its accumulator in Part.acc */
    bool *fsum;          /* per aggregate: FAcc (floating SUM/AVG) */
    bool *wsum;          /* per aggregate: SUM/AVG over a wide DECIMAL (Acc.hi) */
    Buf kb, vb;
    Arena *scratch_arena;
    Chunk *scratch;      /* one row of output values for encoding */
    Chunk **one;         /* per DISTINCT aggregate: one decoded value */
    Arena *one_arena;
    Arena *str_arena;    /* multiset aggregates' strings, reset per group */
    struct Local *local; /* reused local-combine tables */
    int *acols;          /* argument columns (ngroup .. nin-1) */
    bool has_str;        /* the output has string columns */
    Buf undo;            /* groups as first touched this step: Group *, its bytes,
                            without strings its output's bytes (outlen) */
    Group **created;     /* groups created this step */
    int64_t ncreated, capc;
    Group **dead;        /* groups emptied this step, deleted at step end */
    int64_t ndead, capd;
    Batch *saved;        /* the groups as of the last save(), while unchanged */
    /* spilling (the memory budget): groups moved out of the map into the
       cold groups (agg_spill.c), read back by the steps that touch them */
    AggCold *cold;
    int64_t created_seen; /* created[0, this) were looked up in cold already */
    struct Unspilled { Group *g; uint8_t *out; } *uouts; /* groups read back
                            this step with their output as read (undo) */
    int64_t nuouts, capu;
    int64_t last_step;   /* the latest step that ran (eviction: untouched first) */
    size_t heap_per_group; /* bytes of key and output per group, estimated */
    TraceCursor **cur;   /* per aggregate, while emit() walks groups in key order */
    /* watermarks (forget_closed): group column gc_col had watermark
       gc_bound in this step (-1: none); groups below gc_done are gone */
    int gc_col;
    int64_t gc_bound, gc_done;
    Chunk *gc_row;
} AggSt;

static void touch(AggSt *s, Group *g, int64_t step)
{
    if (g->touched == step)
        return;
    g->touched = step;
    *VEC_PUSH(s->touched, s->ntouched, s->cap) = g;
}

static void add_garbage(AggSt *s, uint8_t *p)
{
    if (p)
        *VEC_PUSH(s->garbage, s->ngarbage, s->capg) = p;
}

/*
 * Local combine: rows of one chunk folded into partial accumulators per
 * group, column at a time. First every row gets its group's slot (an
 * integer-keyed table when the group key is one NOT NULL integer-like
 * column - no encoding, no memcmp; the encoded key in a hash map otherwise),
 * then each aggregate runs one tight loop over the rows.
 */
typedef struct Local {
    int64_t *slot;       /* per row */
    int64_t cap;
    Buf keys;            /* group key encodings of the slots, end to end */
    size_t *koff;        /* per slot + 1: offsets into keys */
    int64_t *ikey;       /* per slot: the integer key (integer paths) */
    uint8_t *parts;      /* per slot: Part of partsz bytes */
    int64_t nslots;
    int64_t capk, capi;  /* of koff and ikey */
    size_t capp;         /* bytes of parts */
    int64_t *hk;         /* integer key table: keys */
    int64_t *hv;         /* ... slot + 1, 0 = empty */
    size_t hcap;
    HMap *gen;           /* encoded key -> slot (generic keys) */
    int64_t *dense;      /* dense integer keys: key - dbase -> slot + 1 */
    int64_t dbase;
    bool dactive;        /* dense is in use this step */
} Local;

#define DENSE_MAX 65536

static Part *local_part(AggSt *s, Local *l, int64_t slot)
{
    return (Part *)(l->parts + (size_t)slot * s->partsz);
}

/* A new slot for the group of row r of c: zeroed accumulators; its key
   encoded now (the chunk may be gone when the slots are sent). */
static int64_t local_new_slot(AggSt *s, Local *l, const Chunk *c, int64_t r, int64_t ikey)
{
    VEC_RESERVE(l->koff, l->capk, l->nslots + 2);
    VEC_RESERVE(l->ikey, l->capi, l->nslots + 1);
    VEC_RESERVE(l->parts, l->capp, (size_t)(l->nslots + 1) * s->partsz);
    memset(l->parts + (size_t)l->nslots * s->partsz, 0, s->partsz);
    if (l->nslots == 0) {
        buf_reset(&l->keys);
        l->koff[0] = 0;
    }
    key_encode(c, s->gcols, s->ngroup, r, &l->keys);
    l->koff[l->nslots + 1] = l->keys.n;
    l->ikey[l->nslots] = ikey;
    return l->nslots++;
}

static const uint8_t *local_key(const Local *l, int64_t slot, size_t *kn)
{
    *kn = l->koff[slot + 1] - l->koff[slot];
    /* no group columns (COUNT(*) over everything, a grouping set ()):
       every key is empty and keys.p may be NULL */
    return *kn ? l->keys.p + l->koff[slot] : (const uint8_t *)"";
}

static void local_reset(Local *l)
{
    if (l->dactive)
        for (int64_t i = 0; i < l->nslots; i++)
            if (l->ikey[i] >= l->dbase && l->ikey[i] - l->dbase < DENSE_MAX)
                l->dense[l->ikey[i] - l->dbase] = 0;
    l->dactive = false;
    l->nslots = 0;
    if (l->hv)
        memset(l->hv, 0, sizeof(int64_t) * l->hcap);
    if (l->gen) {
        hmap_free(l->gen);
        l->gen = NULL;
    }
}

static void local_free(Local *l)
{
    sl_free(l->slot);
    buf_free(&l->keys);
    sl_free(l->koff);
    sl_free(l->ikey);
    sl_free(l->parts);
    sl_free(l->hk);
    sl_free(l->hv);
    sl_free(l->dense);
    if (l->gen)
        hmap_free(l->gen);
}

static void int_table_grow(Local *l)
{
    size_t ncap = l->hcap ? l->hcap * 2 : 1024;
    int64_t *nk = sl_malloc(sizeof(int64_t) * ncap), *nv = sl_calloc(ncap, sizeof(int64_t));
    for (size_t i = 0; i < l->hcap; i++) {
        if (!l->hv[i])
            continue;
        size_t h = (size_t)(((uint64_t)l->hk[i] * 0x9E3779B97F4A7C15ull) >> 20) & (ncap - 1);
        while (nv[h])
            h = (h + 1) & (ncap - 1);
        nk[h] = l->hk[i];
        nv[h] = l->hv[i];
    }
    sl_free(l->hk);
    sl_free(l->hv);
    l->hk = nk;
    l->hv = nv;
    l->hcap = ncap;
}

/* Slot of every row of c in l (slots persist across the step's morsels; a
   group may get two slots, which is harmless: partials add up). */
static void assign_slots(AggSt *s, Local *l, const Chunk *c)
{
    int64_t n = c->n;
    VEC_RESERVE(l->slot, l->cap, n);
    if (s->ngroup == 0) {
        if (n && l->nslots == 0)
            local_new_slot(s, l, c, 0, 0);
        if (n)
            memset(l->slot, 0, sizeof(int64_t) * (size_t)n);
        return;
    }
    const Vec *g = &c->col[0];
    if (s->ngroup == 1 && g->i && !g->nul && n) {
        const int64_t *v = g->i;
        int64_t lo = v[0], hi = v[0];
        for (int64_t r = 1; r < n; r++) {
            lo = v[r] < lo ? v[r] : lo;
            hi = v[r] > hi ? v[r] : hi;
        }
        if (!l->dactive && l->nslots == 0 && (uint64_t)hi - (uint64_t)lo < DENSE_MAX) {
            if (!l->dense)
                l->dense = sl_calloc(DENSE_MAX, sizeof(int64_t));
            l->dactive = true;
            l->dbase = lo;
        }
        if (l->dactive && lo >= l->dbase && (uint64_t)hi - (uint64_t)l->dbase < DENSE_MAX) {
            /* dense keys (ids, small enums, dates): index an array */
            int64_t *d = l->dense, base = l->dbase;
            for (int64_t r = 0; r < n; r++) {
                int64_t *e = &d[v[r] - base];
                if (!*e)
                    *e = local_new_slot(s, l, c, r, v[r]) + 1;
                l->slot[r] = *e - 1;
            }
            return;
        }
        int64_t last_key = 0, last_slot = -1;
        for (int64_t r = 0; r < n; r++) {
            int64_t k = v[r];
            if (k == last_key && last_slot >= 0) {
                l->slot[r] = last_slot;
                continue;
            }
            if ((size_t)(l->nslots + 1) * 2 > l->hcap)
                int_table_grow(l);
            size_t mask = l->hcap - 1;
            size_t h = (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
            while (l->hv[h] && l->hk[h] != k)
                h = (h + 1) & mask;
            if (!l->hv[h]) {
                l->hk[h] = k;
                l->hv[h] = local_new_slot(s, l, c, r, k) + 1;
            }
            last_key = k;
            last_slot = l->slot[r] = l->hv[h] - 1;
        }
        return;
    }
    if (!l->gen)
        l->gen = hmap_new(sizeof(int64_t));
    for (int64_t r = 0; r < n; r++) {
        bool created;
        buf_reset(&s->kb);
        key_encode(c, s->gcols, s->ngroup, r, &s->kb);
        int64_t *e = hmap_upsert(l->gen, s->kb.p, s->kb.n, sl_hash(s->kb.p, s->kb.n), &created);
        if (created)
            *e = local_new_slot(s, l, c, r, 0);
        l->slot[r] = *e;
    }
}

/* Fold the rows of c (columns: group keys, then aggregate arguments) into
   the partial accumulators of l (after local_reset). */
static void fold_chunk(Op *op, AggSt *s, const Chunk *c, Local *l)
{
    const CNode *n = op->node;
    const int64_t *w = c->w, *sl;
    int64_t rows = c->n;
    bool unit = true;
    assign_slots(s, l, c);
    sl = l->slot;
    for (int64_t r = 0; r < rows && unit; r++)
        unit = w[r] == 1;
    for (int64_t r = 0; r < rows; r++)
        local_part(s, l, sl[r])->count += w[r];
    for (int j = 0; j < n->naggs; j++) {
        const AggSpec *a = &n->aggs[j];
        size_t off = offsetof(Part, acc) + s->off[j];
        uint8_t *base = l->parts;
        size_t psz = s->partsz;
#define ACC(r) ((Acc *)(base + (size_t)sl[r] * psz + off))
        if (a->kind == AGG_COUNT_STAR) {
            for (int64_t r = 0; r < rows; r++)
                ACC(r)->cnt += w[r];
            continue;
        }
        const Vec *v = &c->col[a->col];
        const uint8_t *nul = v->nul;
        bool sum = a->kind == AGG_SUM || a->kind == AGG_AVG;
        if (!sum) { /* COUNT(x); MIN/MAX only need the non-NULL count */
            for (int64_t r = 0; r < rows; r++)
                if (!nul || !nul[r])
                    ACC(r)->cnt += w[r];
        } else if (v->f) {
            const double *x = v->f;
            for (int64_t r = 0; r < rows; r++)
                if (!nul || !nul[r]) {
                    FAcc *acc = (FAcc *)(base + (size_t)sl[r] * psz + off);
                    acc->cnt += w[r];
                    xsum_add(&acc->sum, x[r], w[r]);
                }
        } else if (v->x) {
            const __int128 *x = v->x;
            for (int64_t r = 0; r < rows; r++)
                if (!nul || !nul[r]) {
                    Acc *acc = ACC(r);
                    acc->cnt += w[r];
                    acc_add_wide(acc, x[r], w[r]);
                }
        } else if (!nul && unit) {
            const int64_t *x = v->i;
            for (int64_t r = 0; r < rows; r++) {
                Acc *acc = ACC(r);
                acc->cnt++;
                acc->isum += x[r];
            }
        } else {
            const int64_t *x = v->i;
            for (int64_t r = 0; r < rows; r++)
                if (!nul || !nul[r]) {
                    Acc *acc = ACC(r);
                    acc->cnt += w[r];
                    acc->isum += (__int128)x[r] * w[r];
                }
        }
#undef ACC
    }
}

/* Bytes of a Group with its accumulators (the map's payload). */
static size_t group_size(const AggSt *s) { return sizeof(Group) + s->partsz - sizeof(Part); }

/* Log group g before the step first changes it (undo). */
static void log_group(AggSt *s, Group *g)
{
    size_t gsz = group_size(s), on = !s->has_str && g->out ? g->outlen : 0;
    buf_reserve(&s->undo, sizeof(g) + gsz + on);
    uint8_t *d = s->undo.p + s->undo.n;
    memcpy(d, &g, sizeof(g));
    memcpy(d + sizeof(g), g, gsz);
    if (on)
        memcpy(d + sizeof(g) + gsz, g->out, on);
    s->undo.n += sizeof(g) + gsz + on;
}

static void add_part(const AggSt *s, Part *gp, const Part *p);

static void merge_part(AggSt *s, const uint8_t *k, size_t kn, const Part *p, int64_t step)
{
    bool created;
    Group *g = hmap_upsert(s->groups, k, kn, sl_hash(k, kn), &created);
    if (created) {
        g->key = sl_malloc(kn ? kn : 1);
        if (kn) /* (a global group's key may be NULL) */
            memcpy(g->key, k, kn);
        g->klen = (uint32_t)kn;
        g->touched = -1;
        *VEC_PUSH(s->created, s->ncreated, s->capc) = g;
    } else if (g->touched != step) {
        log_group(s, g);
    }
    add_part(s, &g->p, p);
    touch(s, g, step);
}

/* Accumulators add up (a group's partials, a group read back). */
static void add_part(const AggSt *s, Part *gp, const Part *p)
{
    gp->count += p->count;
    for (int j = 0; j < s->naggs; j++) {
        if (s->fsum[j]) {
            FAcc *a = (FAcc *)(gp->acc + s->off[j]);
            const FAcc *b = (const FAcc *)(p->acc + s->off[j]);
            a->cnt += b->cnt;
            xsum_merge(&a->sum, &b->sum);
        } else {
            Acc *a = (Acc *)(gp->acc + s->off[j]);
            const Acc *b = (const Acc *)(p->acc + s->off[j]);
            if (s->wsum[j]) {
                unsigned __int128 x = (unsigned __int128)a->isum + (unsigned __int128)b->isum;
                a->hi += b->hi + (x < (unsigned __int128)b->isum);
                a->isum = (__int128)x;
            } else {
                a->isum += b->isum;
            }
            a->cnt += b->cnt;
        }
    }
}

static int group_key_cmp(const void *a, const void *b)
{
    const Group *x = *(Group *const *)a, *y = *(Group *const *)b;
    size_t m = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, m);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* After the fold: groups the step created may be cold ones (spilling,
   below). Read them back in key order with one cursor (each block of the
   cold trace read at most once per step): their accumulators add to what
   the step folded, their last output comes back; their cold tuples are
   retracted when the step ends (undo just drops them from the map). */
static void unspill(AggSt *s)
{
    int64_t from = s->created_seen, n = s->ncreated - from;
    s->created_seen = s->ncreated; /* (finish may run more than once in a step) */
    if (!agg_cold_count(s->cold) || n <= 0)
        return;
    Group **gs = sl_malloc(sizeof(Group *) * (size_t)n);
    memcpy(gs, s->created + from, sizeof(Group *) * (size_t)n);
    qsort(gs, (size_t)n, sizeof(Group *), group_key_cmp);
    TraceCursor *cur = agg_cold_cursor(s->cold);
    Part *p = sl_malloc(s->partsz); /* (aligned) */
    for (int64_t i = 0; i < n; i++) {
        Group *g = gs[i];
        const uint8_t *v;
        size_t vn;
        if (!agg_cold_take(s->cold, cur, g->key, g->klen, &v, &vn))
            continue;
        memcpy(p, v, s->partsz);
        add_part(s, &g->p, p);
        if (v[s->partsz]) {
            g->outlen = (uint32_t)(vn - s->partsz - 1);
            g->out = sl_malloc(g->outlen ? g->outlen : 1);
            memcpy(g->out, v + s->partsz + 1, g->outlen);
            *VEC_PUSH(s->uouts, s->nuouts, s->capu) = (struct Unspilled){g, g->out};
        }
    }
    sl_free(p);
    trace_cursor_free(cur);
    sl_free(gs);
}

/* COUNT/SUM/AVG(DISTINCT x) of the group: over the values of its multiset
   with a positive total weight. Sets *cnt, and *isum (a 192-bit sum, as
   acc_add_wide) or *fsum (per type). */
static void distinct_fold(Trace *t, TraceCursor *cur, const Group *g, SqlType in_t, Chunk *one, int64_t *cnt,
                          Acc *isum, XSum *fsum)
{
    ValWs c;
    *cnt = 0;
    memset(isum, 0, sizeof(*isum));
    memset(fsum, 0, sizeof(*fsum));
    agg_state_values(t, cur, g->key, g->klen, &c);
    for (int64_t i = 0; i < c.n; i++) {
        (*cnt)++;
        key_decode(c.v[i].v, &in_t, 1, one, 0, 0);
        if (one->col[0].f)
            xsum_add(fsum, one->col[0].f[0], 1);
        else if (one->col[0].i)
            acc_add_wide(isum, one->col[0].i[0], 1);
        else if (one->col[0].x)
            acc_add_wide(isum, one->col[0].x[0], 1);
    }
    sl_free(c.v);
}

static int set_int(OpEnv *env, Vec *v, __int128 x, const CNode *n, const char *what)
{
    __int128 lo = INT64_MIN, hi = INT64_MAX;
    if (v->t.kind == TK_DECIMAL) {
        hi = pow10_i128(v->t.prec) - 1;
        lo = -hi;
    }
    if (x < lo || x > hi) {
        char tb[48];
        return err_set(env->ev->err, SL_ERUNTIME, "%s overflowed %s (aggregate in node %d)", what,
                       type_name(v->t, tb, sizeof(tb)), n->id);
    }
    if (v->x)
        v->x[0] = x;
    else
        v->i[0] = (int64_t)x;
    return 0;
}

/* The sum of acc (a 192-bit one when wide) into row 0 of v, or the average
   over cnt rounded half away from zero (DECIMAL); errors past 38 digits
   (past 64 bits for the other types). */
static int set_sum(OpEnv *env, Vec *v, const Acc *acc, bool wide, int64_t cnt, bool avg,
                   const CNode *n)
{
    __int128 x = acc->isum;
    if (wide && !acc_wide_value(acc, &x)) {
        char tb[48];
        return err_set(env->ev->err, SL_ERUNTIME, "%s overflowed %s (aggregate in node %d)",
                       avg ? "AVG" : "SUM", type_name(v->t, tb, sizeof(tb)), n->id);
    }
    if (avg) {
        __int128 q = x / cnt, r = x % cnt;
        __int128 ar = r < 0 ? -r : r, ac = cnt < 0 ? -(__int128)cnt : cnt;
        if (2 * ar >= ac)
            q += ((x < 0) != (cnt < 0)) ? -1 : 1;
        x = q;
    }
    return set_int(env, v, x, n, avg ? "AVG" : "SUM");
}

/* x / cnt (cnt > 0) rounded half to even: AVG of INTERVAL DAY TO SECOND in
   microseconds, as PostgreSQL's rint. */
static __int128 div_half_even(__int128 x, int64_t cnt)
{
    __int128 q = x / cnt, r = x % cnt;
    __int128 ar = r < 0 ? -r : r;
    if (2 * ar > cnt || (2 * ar == cnt && (q & 1)))
        q += x < 0 ? -1 : 1;
    return q;
}

/* Compute the group's current output row into s->scratch row 0. */
static int compute_row(Op *op, OpEnv *env, AggSt *s, Group *g)
{
    const CNode *n = op->node;
    Chunk *sc = s->scratch;
    arena_reset(s->str_arena);
    key_decode(g->key, n->types, s->ngroup, sc, 0, 0);
    for (int j = 0; j < n->naggs; j++) {
        const AggSpec *a = &n->aggs[j];
        const Acc *acc = (const Acc *)(g->p.acc + s->off[j]);
        const FAcc *facc = (const FAcc *)acc;
        int64_t cnt = s->fsum[j] ? facc->cnt : acc->cnt;
        Vec *v = &sc->col[s->ngroup + j];
        if (v->nul)
            v->nul[0] = 0;
        if (a->kind >= AGG_MIN) { /* the multiset aggregates: agg_state.c */
            if (agg_state_value(a, s->minmax[j], s->cur ? s->cur[j] : NULL, g->key, g->klen, sc, s->ngroup + j,
                                s->str_arena, n->id, env->ev->err))
                return SL_ERUNTIME;
            continue;
        }
        if (a->distinct) {
            int64_t dc;
            Acc is;
            XSum fs;
            if (!s->one[j])
                s->one[j] = chunk_new(s->one_arena, 1, &a->in_t, 1);
            distinct_fold(s->minmax[j], s->cur ? s->cur[j] : NULL, g, a->in_t, s->one[j], &dc, &is, &fs);
            bool f = type_phys(a->in_t) == PHYS_F64;
            if (a->kind == AGG_COUNT)
                v->i[0] = dc;
            else if (dc == 0)
                vec_set_null(v, 0);
            else if (a->kind == AGG_SUM) {
                if (v->f)
                    v->f[0] = f ? xsum_value(&fs) : (double)is.isum;
                else if (set_sum(env, v, &is, true, 1, false, n))
                    return SL_ERUNTIME;
            } else if (a->in_t.kind == TK_INTERVAL_YM) { /* whole months, truncated */
                if (set_int(env, v, is.isum / dc, n, "AVG"))
                    return SL_ERUNTIME;
            } else if (a->in_t.kind == TK_INTERVAL_DT) {
                if (set_int(env, v, div_half_even(is.isum, dc), n, "AVG"))
                    return SL_ERUNTIME;
            } else if (a->in_t.kind == TK_DECIMAL) { /* round half away from zero */
                if (set_sum(env, v, &is, true, dc, true, n))
                    return SL_ERUNTIME;
            } else
                v->f[0] = (f ? xsum_value(&fs) : (double)is.isum) / (double)dc;
            continue;
        }
        switch (a->kind) {
        case AGG_COUNT_STAR:
        case AGG_COUNT:
            v->i[0] = acc->cnt;
            break;
        case AGG_SUM:
            if (cnt == 0)
                vec_set_null(v, 0);
            else if (v->f)
                v->f[0] = xsum_value(&facc->sum);
            else if (set_sum(env, v, acc, s->wsum[j], 1, false, n))
                return SL_ERUNTIME;
            break;
        case AGG_AVG:
            if (cnt == 0) {
                vec_set_null(v, 0);
            } else if (a->in_t.kind == TK_INTERVAL_YM) { /* whole months, truncated */
                if (set_int(env, v, acc->isum / acc->cnt, n, "AVG"))
                    return SL_ERUNTIME;
            } else if (a->in_t.kind == TK_INTERVAL_DT) {
                if (set_int(env, v, div_half_even(acc->isum, acc->cnt), n, "AVG"))
                    return SL_ERUNTIME;
            } else if (a->in_t.kind == TK_DECIMAL) {
                if (set_sum(env, v, acc, s->wsum[j], acc->cnt, true, n))
                    return SL_ERUNTIME;
            } else if (type_is_integer(a->in_t.kind)) {
                v->f[0] = (double)acc->isum / (double)acc->cnt;
            } else {
                v->f[0] = xsum_value(&facc->sum) / (double)facc->cnt;
            }
            break;
        default:
            break;
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
        if (exists && g->out && g->outlen == s->vb.n && (!s->vb.n || !memcmp(g->out, s->vb.p, s->vb.n)))
            continue;
        if (g->out) {
            int64_t r = cout_row(co);
            key_decode(g->out, n->types, n->ncol, co->c, 0, r);
            co->c->w[r] = -1;
            /* decoded strings point into the old encoding until the step
               ends; without strings the values were copied */
            if (s->has_str || !exists) {
                if (s->has_str)
                    add_garbage(s, g->out);
                else
                    sl_free(g->out);
                g->out = NULL;
            }
        }
        if (exists) {
            g->out = sl_realloc(g->out, s->vb.n ? s->vb.n : 1);
            if (s->vb.n) /* a global aggregate may have no columns */
                memcpy(g->out, s->vb.p, s->vb.n);
            g->outlen = (uint32_t)s->vb.n;
            int64_t r = cout_row(co);
            key_decode(g->out, n->types, n->ncol, co->c, 0, r);
            co->c->w[r] = 1;
        } else {
            *VEC_PUSH(s->dead, s->ndead, s->capd) = g; /* deleted at step end */
        }
    }
    return 0;
}

static void begin_agg(Op *op, OpEnv *env)
{
    AggSt *s = op->st;
    local_reset(s->local);
}

/* A row's record: key = its group key, value = the aggregates' arguments. */
static void enc_agg(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v)
{
    const AggSt *s = ((Op *)ctx)->st;
    key_encode(c, s->gcols, s->ngroup, r, k);
    key_encode(c, s->acols, s->nin - s->ngroup, r, v);
}

/* Routing, per morsel: linear aggregates fold into local partials; others
   route each row to its group's owner. */
static int push_agg(Op *op, OpEnv *env, int input, Chunk *c)
{
    AggSt *s = op->st;
    if (op->node->linear)
        fold_chunk(op, s, c, s->local);
    else
        shard_rows(op->sh, 0, c, s->ngroup == 0, enc_agg, op);
    return 0;
}

/* The end of routing: the local partials go to their groups' owners. */
static void flush_agg(Op *op, OpEnv *env)
{
    AggSt *s = op->st;
    Local *l = s->local;
    if (!op->node->linear)
        return;
    for (int64_t i = 0; i < l->nslots; i++) {
        size_t kn;
        const uint8_t *k = local_key(l, i, &kn);
        shard_put(op->sh, 0, shard_owner(op->sh, k, kn, s->ngroup == 0), k, kn,
                  (const uint8_t *)local_part(s, l, i), s->partsz, 1);
    }
}

/* Every this many groups folded, finish asks whether the thread's budget
   stopped it (a bounded step's allowance or a /query's bounds,
   base/budget.h): a step that creates groups by the million stops part
   way instead of first allocating them all. Stopping is safe: undo()
   restores every group touched so far (logged before its first change)
   and deletes those created; no MIN/MAX multiset was changed yet. */
#define AGG_CHECK_EVERY 4096

static int finish_agg(Op *op, OpEnv *env)
{
    const CNode *n = op->node;
    AggSt *s = op->st;
    int me = env->worker;
    ShardPos p = SHARD_POS_INIT;
    XRec r;
    unsigned folded = 0;
    /* fold what this worker owns into the groups */
    s->ntouched = 0;
    s->last_step = env->step;
    if (n->global && env->step == 0 && me == 0) {
        Part *zero = arena_zalloc(env->arena, s->partsz);
        merge_part(s, (const uint8_t *)"", 0, zero, env->step);
    }
    if (n->linear) {
        while (shard_next(op->sh, 0, &p, &r)) {
            if (unlikely(++folded % AGG_CHECK_EVERY == 0) && budget_stop())
                return budget_error(env->ev->err);
            Part *part = arena_alloc(env->arena, s->partsz);
            memcpy(part, r.v, s->partsz); /* align */
            merge_part(s, r.k, r.kn, part, env->step);
        }
    } else {
        int64_t nrec = 0;
        while (shard_next(op->sh, 0, &p, &r))
            nrec++;
        Chunk *rows = chunk_new(env->arena, s->nin, s->in_types, nrec);
        p = (ShardPos)SHARD_POS_INIT;
        while (shard_next(op->sh, 0, &p, &r)) {
            int64_t i = rows->n++;
            key_decode(r.k, s->in_types, s->ngroup, rows, 0, i);
            key_decode(r.v, s->in_types + s->ngroup, s->nin - s->ngroup, rows, s->ngroup, i);
            rows->w[i] = r.w;
        }
        Local *l = s->local;
        local_reset(l);
        fold_chunk(op, s, rows, l);
        for (int64_t i = 0; i < l->nslots; i++) {
            if (unlikely(++folded % AGG_CHECK_EVERY == 0) && budget_stop())
                return budget_error(env->ev->err);
            size_t kn;
            const uint8_t *k = local_key(l, i, &kn);
            merge_part(s, k, kn, local_part(s, l, i), env->step);
        }
        /* value multisets (agg_state.c) */
        for (int j = 0; j < n->naggs; j++) {
            if (!s->minmax[j])
                continue;
            BatchBuilder *bb = bb_new();
            for (int64_t i = 0; i < rows->n; i++) {
                buf_reset(&s->vb);
                if (!agg_state_encode(&n->aggs[j], rows, i, &s->vb))
                    continue;
                buf_reset(&s->kb);
                key_encode(rows, s->gcols, s->ngroup, i, &s->kb);
                bb_add(bb, s->kb.p, s->kb.n, s->vb.p, s->vb.n, rows->w[i]);
            }
            trace_insert_take(s->minmax[j], bb_finish(bb));
        }
    }
    unspill(s);
    /* with the value multisets (partly) on disk, their probes in key order
       read each spilled block once instead of once per group */
    bool spilled = false;
    for (int j = 0; j < n->naggs && !spilled; j++)
        if (s->minmax[j]) {
            TraceMem t = {0};
            trace_mem(s->minmax[j], &t);
            spilled = t.disk_bytes > 0;
        }
    if (spilled) {
        if (s->ntouched > 1)
            qsort(s->touched, (size_t)s->ntouched, sizeof(Group *), group_key_cmp);
        s->cur = sl_calloc((size_t)n->naggs + 1, sizeof(TraceCursor *));
        for (int j = 0; j < n->naggs; j++)
            if (s->minmax[j])
                s->cur[j] = trace_cursor_new(s->minmax[j]);
    }
    if (s->ntouched && s->saved) { /* groups changed */
        batch_unref(s->saved);
        s->saved = NULL;
    }
    ChunkOut co;
    cout_init(&co, env->arena, n->ncol, n->types, 2 * s->ntouched);
    int rc = emit(op, env, s, &co);
    if (s->cur) {
        for (int j = 0; j < n->naggs; j++)
            trace_cursor_free(s->cur[j]);
        sl_free(s->cur);
        s->cur = NULL;
    }
    op->out = co.c;
    s->gc_col = wm_agg_bound(op, env, &s->gc_bound);
    return rc;
}

/* Delete group g (emptied) from the map; frees its key. */
static void delete_group(AggSt *s, Group *g)
{
    uint8_t *k = g->key;
    uint32_t kl = g->klen;
    hmap_delete(s->groups, k, kl, sl_hash(k, kl)); /* frees g */
    sl_free(k);
}

/*
 * Watermarks (circuit/watermark.h): a group whose key column gc_col is
 * below that column's watermark can never change again (every later input
 * row is at or above it), so it is forgotten: its output row stays in
 * the output's integral, its state goes. A TUMBLE aggregate over an
 * endless stream thus keeps the open windows only. MIN/MAX and DISTINCT
 * aggregates' value multisets (keyed by the group) lose the same groups.
 */
static void forget_closed(AggSt *s)
{
    for (int j = 0; j < s->naggs; j++) /* value multisets: keyed by the group */
        if (s->minmax[j])
            wm_trace_forget(s->minmax[j], s->in_types, s->gc_col, s->gc_bound);
    if (!s->gc_row)
        s->gc_row = chunk_new(s->scratch_arena, s->ngroup, s->in_types, 1);
    bool need[s->ngroup];
    for (int j = 0; j < s->ngroup; j++)
        need[j] = j == s->gc_col;
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    bool gone = false;
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        Group *g = pl;
        key_decode_some(g->key, s->in_types, s->gc_col + 1, need, s->gc_row, 0, 0);
        const Vec *v = &s->gc_row->col[s->gc_col];
        if (vec_is_null(v, 0) || v->i[0] >= s->gc_bound)
            continue;
        sl_free(g->out);
        delete_group(s, g);
        gone = true;
    }
    if (agg_cold_forget(s->cold, s->in_types, s->gc_col, s->gc_bound))
        gone = true;
    s->gc_done = s->gc_bound;
    if (gone && s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
}

static void step_end_agg(Op *op)
{
    AggSt *s = op->st;
    for (int64_t i = 0; i < s->ngarbage; i++)
        sl_free(s->garbage[i]);
    s->ngarbage = 0;
    for (int64_t i = 0; i < s->ndead; i++)
        delete_group(s, s->dead[i]);
    s->ndead = 0;
    s->ncreated = s->created_seen = 0;
    s->nuouts = 0;
    buf_reset(&s->undo);
    agg_cold_step_end(s->cold);
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            trace_step_end(s->minmax[j]);
    if (s->gc_col >= 0 && s->gc_bound != s->gc_done)
        forget_closed(s);
}

/* Rollback of the step: every group as it was, none it created. */
static void undo_agg(Op *op)
{
    AggSt *s = op->st;
    size_t gsz = group_size(s);
    for (size_t pos = 0; pos < s->undo.n;) {
        Group *g;
        memcpy(&g, s->undo.p + pos, sizeof(g));
        const uint8_t *snap = s->undo.p + pos + sizeof(g);
        uint8_t *cur = g->out; /* what emit() left, owned by the group */
        memcpy(g, snap, gsz);
        pos += sizeof(g) + gsz;
        if (s->has_str) {
            /* the old encoding waited in the garbage; a new one goes */
            if (cur && cur != g->out)
                sl_free(cur);
        } else if (g->out) { /* rewritten in place (or freed): the bytes again */
            g->out = sl_realloc(cur, g->outlen ? g->outlen : 1);
            memcpy(g->out, s->undo.p + pos, g->outlen);
            pos += g->outlen;
        } else {
            sl_free(cur);
        }
    }
    /* a group read back whose output emit() replaced: with strings the
       output read back waits in the garbage, which the groups own again,
       but the group goes */
    for (int64_t i = 0; s->has_str && i < s->nuouts; i++)
        if (s->uouts[i].g->out != s->uouts[i].out)
            sl_free(s->uouts[i].out);
    s->nuouts = 0;
    for (int64_t i = 0; i < s->ncreated; i++) {
        Group *g = s->created[i];
        sl_free(g->out);
        delete_group(s, g);
    }
    s->ncreated = s->created_seen = 0;
    agg_cold_undo(s->cold);
    s->ngarbage = 0; /* the groups own them again */
    s->ndead = 0;
    s->ntouched = 0;
    s->gc_col = -1; /* the step's watermark is not committed */
    buf_reset(&s->undo);
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            trace_rollback(s->minmax[j]);
    if (s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
}

/* Groups: the map, each group's key and last output; MIN/MAX value sets;
   the checkpoint copy kept while unchanged. */
static void mem_agg(Op *op, OpMem *m)
{
    AggSt *s = op->st;
    size_t it = 0, heap = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        const Group *g = pl;
        heap += g->klen + (g->out ? g->outlen : 0);
    }
    int64_t ng = hmap_count(s->groups);
    if (ng)
        s->heap_per_group = heap / (size_t)ng;
    size_t hot = hmap_bytes(s->groups) + heap + (s->saved ? batch_bytes(s->saved) : 0);
    m->rows += ng;
    m->bytes += hot;
    agg_cold_mem(s->cold, hot, m);
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            cold_mem(s->minmax[j], m); /* its trace bytes spill: not the groups */
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
    agg_cold_free(s->cold);
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            trace_free(s->minmax[j]);
    sl_free(s->minmax);
    sl_free(s->off);
    sl_free(s->fsum);
    sl_free(s->wsum);
    sl_free(s->gcols);
    sl_free(s->touched);
    sl_free(s->garbage);
    sl_free(s->created);
    sl_free(s->uouts);
    sl_free(s->dead);
    buf_free(&s->undo);
    buf_free(&s->kb);
    buf_free(&s->vb);
    arena_free(s->scratch_arena);
    arena_free(s->one_arena);
    arena_free(s->str_arena);
    sl_free(s->one);
    local_free(s->local);
    sl_free(s->acols);
    sl_free(s->local);
    if (s->saved)
        batch_unref(s->saved);
    sl_free(s);
}

/* Header key of aggregate j's value multiset. */
static size_t minmax_name(int j, char *buf, size_t cap)
{
    return (size_t)snprintf(buf, cap, "minmax%d", j);
}

static Batch *groups_batch(const AggSt *s)
{
    BatchBuilder *bb = bb_new();
    Buf v = {0};
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        const Group *g = pl;
        buf_reset(&v);
        agg_cold_encode(&v, &g->p, s->partsz, g->out, g->outlen);
        bb_add(bb, g->key, g->klen, v.p, v.n, 1);
    }
    buf_free(&v);
    agg_cold_add_all(s->cold, bb); /* their read-back retractions cancelling */
    return bb_finish(bb);
}

/*
 * Spilling (agg_spill.c): between steps the budget may move the groups
 * out of the map into the cold groups, as one sorted run (groups_batch's
 * layout). Groups the latest step did not touch go first; when every
 * group was touched, all go. A step reads back only the groups it touches
 * (merge_part -> unspill). The output never changes: an evicted group
 * keeps its last output row with it.
 */
static size_t hot_bytes(const void *o)
{
    const AggSt *s = o;
    int64_t ng = hmap_count(s->groups);
    if (!ng)
        return s->saved ? batch_bytes(s->saved) : 0;
    return hmap_bytes(s->groups) + (size_t)ng * s->heap_per_group +
           (s->saved ? batch_bytes(s->saved) : 0);
}

static void evict(void *o, AggCold *c)
{
    AggSt *s = o;
    if (s->saved) {
        batch_unref(s->saved);
        s->saved = NULL;
    }
    int64_t ng = hmap_count(s->groups);
    if (!ng)
        return;
    /* the untouched first; all when the latest step touched every one */
    bool all = true;
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (all && hmap_next(s->groups, &it, &k, &kn, &pl))
        all = ((const Group *)pl)->touched == s->last_step;
    HMap *keep = hmap_new(group_size(s));
    BatchBuilder *bb = bb_new();
    Buf v = {0};
    size_t heap = 0;
    int64_t moved = 0;
    it = 0;
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        Group *g = pl;
        heap += g->klen + (g->out ? g->outlen : 0);
        if (!all && g->touched == s->last_step) {
            bool created;
            Group *n = hmap_upsert(keep, g->key, g->klen, sl_hash(g->key, g->klen), &created);
            memcpy(n, g, group_size(s)); /* key and output move along */
            continue;
        }
        buf_reset(&v);
        agg_cold_encode(&v, &g->p, s->partsz, g->out, g->outlen);
        bb_add(bb, g->key, g->klen, v.p, v.n, 1);
        sl_free(g->key);
        sl_free(g->out);
        moved++;
    }
    buf_free(&v);
    s->heap_per_group = heap / (size_t)ng;
    hmap_free(s->groups);
    s->groups = keep;
    agg_cold_put(c, bb_finish(bb), moved);
}

static const AggColdHooks agg_hooks = {hot_bytes, evict};

static int save_agg(Op *op, BatchList *out)
{
    AggSt *s = op->st;
    BatchBuilder *bb = bb_new();
    char name[32];
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            bb_add(bb, (const uint8_t *)name, minmax_name(j, name, sizeof(name)), NULL, 0,
                   trace_nbatches(s->minmax[j]));
    batchlist_add(out, bb_finish(bb));
    if (agg_cold_count(s->cold)) { /* not kept: it would hold the cold groups in memory */
        batchlist_add(out, groups_batch(s));
    } else {
        if (!s->saved)
            s->saved = groups_batch(s);
        batch_ref(s->saved);
        batchlist_add(out, s->saved);
    }
    for (int j = 0; j < s->naggs; j++)
        if (s->minmax[j])
            op_save_trace(s->minmax[j], out);
    return 0;
}

/* Spine batch counts per aggregate (nb, naggs entries) from the header h;
   false when it is not this aggregate's header. */
static bool read_header(const AggSt *s, const Batch *h, int64_t *nb)
{
    char name[32];
    for (int64_t i = 0; i < h->n; i++) {
        int j = 0;
        for (; j < s->naggs; j++) {
            size_t len = minmax_name(j, name, sizeof(name));
            if (s->minmax[j] && batch_klen(h, i) == len && !memcmp(batch_key(h, i), name, len))
                break;
        }
        if (j == s->naggs || batch_vlen(h, i) != 0 || h->w[i] < 0)
            return false;
        nb[j] = h->w[i];
    }
    return true;
}

/* Rebuild the groups from batch m (groups_batch's layout). */
static int load_groups(Op *op, AggSt *s, const Batch *m, Err *err)
{
    hmap_reserve(s->groups, m->n);
    for (int64_t i = 0; i < m->n; i++) {
        const uint8_t *k = batch_key(m, i), *v = batch_val(m, i);
        size_t kn = batch_klen(m, i), vn = batch_vlen(m, i);
        if (m->w[i] != 1 || !agg_cold_valid(v, vn, s->partsz))
            return err_set(err, SL_EIO, "aggregate state (node %d) has a malformed group",
                           op->node->id);
        bool created;
        Group *g = hmap_upsert(s->groups, k, kn, sl_hash(k, kn), &created);
        if (!created)
            return err_set(err, SL_EIO, "aggregate state (node %d) has a group twice",
                           op->node->id);
        g->key = sl_malloc(kn ? kn : 1);
        memcpy(g->key, k, kn);
        g->klen = (uint32_t)kn;
        g->touched = -1;
        memcpy(&g->p, v, s->partsz);
        if (v[s->partsz]) {
            g->outlen = (uint32_t)(vn - s->partsz - 1);
            g->out = sl_malloc(g->outlen ? g->outlen : 1);
            memcpy(g->out, v + s->partsz + 1, g->outlen);
        }
    }
    return 0;
}

static int load_agg(Op *op, Batch *const *b, int n, Err *err)
{
    AggSt *s = op->st;
    int64_t *nb = sl_calloc((size_t)s->naggs + 1, sizeof(int64_t)), spines = 0;
    int rc = 0;
    if (n < 2 || !read_header(s, b[0], nb)) {
        rc = err_set(err, SL_EIO, "aggregate state (node %d) has no valid header", op->node->id);
        goto out_free_counts;
    }
    for (int j = 0; j < s->naggs; j++) /* terms at most n: no overflow */
        spines += nb[j] > n ? n : nb[j];
    if (spines != n - 2) {
        rc = err_set(err, SL_EIO,
                     "aggregate state (node %d) has %d spine batches, its header counts %lld",
                     op->node->id, n - 2, (long long)spines);
        goto out_free_counts;
    }
    bool cold; /* groups that do not fit go straight to the cold ones */
    rc = agg_cold_restore(s->cold, b[1], op->node->id, &cold, err);
    if (!rc && !cold) {
        rc = load_groups(op, s, b[1], err);
        if (!rc) {
            batch_ref(b[1]);
            s->saved = b[1];
        }
    }
    if (rc)
        goto out_free_counts;
    int i = 2;
    for (int j = 0; j < s->naggs; j++) {
        if (nb[j])
            op_load_trace(s->minmax[j], b + i, (int)nb[j]);
        i += (int)nb[j];
        /* groups that did not fit: their value multisets to files too
           (a failed write leaves a run in memory, for the budget to try
           again after the step) */
        for (int r = 0; cold && s->minmax[j] && r < trace_nbatches(s->minmax[j]); r++) {
            Err e = {0};
            if (!trace_largest_resident(s->minmax[j]) || trace_spill_largest(s->minmax[j], &e))
                break;
        }
    }
out_free_counts:
    sl_free(nb);
    return rc;
}

/* Another worker count: the groups (and MIN/MAX multisets) this worker
   owns, from every old worker's state (the global group on worker 0). */
static int load_split_agg(Op *op, int w, int W, Batch *const *const *lists, const int *counts,
                          int nold, Err *err)
{
    AggSt *s = op->st;
    int total = 0, rc = 0;
    for (int k = 0; k < nold; k++)
        total += counts[k];
    Batch **groups = sl_calloc((size_t)nold + 1, sizeof(Batch *));
    Batch ***spine = sl_calloc((size_t)s->naggs + 1, sizeof(Batch **));
    int *ns = sl_calloc((size_t)s->naggs + 1, sizeof(int));
    int64_t *nb = sl_calloc((size_t)s->naggs + 1, sizeof(int64_t));
    for (int j = 0; j < s->naggs; j++)
        spine[j] = sl_calloc((size_t)total + 1, sizeof(Batch *));
    for (int k = 0; k < nold && !rc; k++) {
        memset(nb, 0, sizeof(int64_t) * (size_t)s->naggs);
        int64_t sum = 0;
        if (counts[k] < 2 || !read_header(s, lists[k][0], nb)) {
            rc = err_set(err, SL_EIO, "aggregate state (node %d) has no valid header",
                         op->node->id);
            break;
        }
        for (int j = 0; j < s->naggs; j++)
            sum += nb[j] > counts[k] ? counts[k] : nb[j];
        if (sum != counts[k] - 2) {
            rc = err_set(err, SL_EIO, "aggregate state (node %d) does not match its header",
                         op->node->id);
            break;
        }
        groups[k] = lists[k][1];
        int i = 2;
        for (int j = 0; j < s->naggs; j++)
            for (int64_t q = 0; q < nb[j]; q++)
                spine[j][ns[j]++] = lists[k][i++];
    }
    if (!rc) {
        bool global = s->ngroup == 0;
        int nl = 2 + s->naggs;
        Batch **b = sl_calloc((size_t)nl, sizeof(Batch *));
        char (*names)[32] = sl_calloc((size_t)s->naggs + 1, 32);
        const char **np = sl_calloc((size_t)s->naggs + 1, sizeof(char *));
        int64_t *one = sl_calloc((size_t)s->naggs + 1, sizeof(int64_t));
        int nh = 0, n = 2;
        for (int j = 0; j < s->naggs; j++)
            if (s->minmax[j]) {
                minmax_name(j, names[nh], 32);
                np[nh] = names[nh];
                one[nh++] = 1;
                b[n++] = op_owned_sum(spine[j], ns[j], w, W, global);
            }
        b[0] = op_header(np, one, nh);
        b[1] = op_owned_sum(groups, nold, w, W, global);
        rc = load_agg(op, b, n, err);
        for (int i = 0; i < n; i++)
            batch_unref(b[i]);
        sl_free(b);
        sl_free(names);
        sl_free(np);
        sl_free(one);
    }
    for (int j = 0; j < s->naggs; j++)
        sl_free(spine[j]);
    sl_free(spine);
    sl_free(ns);
    sl_free(nb);
    sl_free(groups);
    return rc;
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
    s->off = sl_calloc((size_t)(n->naggs + 1), sizeof(size_t));
    s->fsum = sl_calloc((size_t)(n->naggs + 1), sizeof(bool));
    s->wsum = sl_calloc((size_t)(n->naggs + 1), sizeof(bool));
    size_t accsz = 0;
    for (int j = 0; j < n->naggs; j++) {
        const AggSpec *a = &n->aggs[j];
        s->fsum[j] = (a->kind == AGG_SUM || a->kind == AGG_AVG) && type_phys(a->in_t) == PHYS_F64;
        s->wsum[j] = type_is_wide(a->in_t);
        s->off[j] = accsz;
        accsz += s->fsum[j] ? sizeof(FAcc) : sizeof(Acc);
    }
    s->partsz = sizeof(Part) + accsz;
    s->groups = hmap_new(sizeof(Group) + accsz);
    s->gcols = sl_malloc(sizeof(int) * (size_t)(n->ngroup + 1));
    for (int i = 0; i < n->ngroup; i++)
        s->gcols[i] = i;
    s->minmax = sl_calloc((size_t)(n->naggs + 1), sizeof(Trace *));
    for (int j = 0; j < n->naggs; j++)
        if (agg_state_needed(&n->aggs[j]))
            s->minmax[j] = trace_new();
    s->cold = agg_cold_new(s->partsz, s, &agg_hooks);
    s->last_step = -1;
    s->gc_col = -1;
    s->gc_done = WM_NONE;
    s->scratch_arena = arena_new(4096);
    s->one_arena = arena_new(1024);
    s->str_arena = arena_new(1024);
    s->one = sl_calloc((size_t)(n->naggs + 1), sizeof(Chunk *));
    s->scratch = chunk_new(s->scratch_arena, n->ncol, n->types, 1);
    s->scratch->n = 1;
    s->local = sl_calloc(1, sizeof(Local));
    for (int j = 0; j < n->ncol; j++)
        s->has_str = s->has_str || type_phys(n->types[j]) == PHYS_STR;
    s->acols = sl_malloc(sizeof(int) * (size_t)(s->nin - s->ngroup + 1));
    for (int j = s->ngroup; j < s->nin; j++)
        s->acols[j - s->ngroup] = j;
    op->st = s;
    op->begin = begin_agg;
    op->push = push_agg;
    op->flush = flush_agg;
    op->finish = finish_agg;
    op->step_end = step_end_agg;
    op->undo = undo_agg;
    op->free = free_agg;
    op->save = save_agg;
    op->load = load_agg;
    op->load_split = load_split_agg;
    op->mem = mem_agg;
    return 0;
}

void op_agg_rows(Op *op, void (*fn)(void *arg, const uint8_t *row, size_t n), void *arg)
{
    AggSt *s = op->st;
    size_t it = 0;
    const uint8_t *k;
    size_t kn;
    void *pl;
    while (hmap_next(s->groups, &it, &k, &kn, &pl)) {
        const Group *g = pl;
        if (g->out)
            fn(arg, g->out, g->outlen);
    }
    agg_cold_rows(s->cold, fn, arg);
}

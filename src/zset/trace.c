/*
 * zset/trace.c - the integral of a stream of batches, kept as an LSM spine.
 * In: consolidated batches from operators (ownership taken). Out: per-key
 * lookups for joins and aggregates, and one consolidated batch on demand.
 *
 * Invariant: spine[0..n) runs oldest to newest and every run in memory
 * holds more than twice the tuples of the next newer one, so n = O(log N)
 * without spilling (spilled runs: below). A batch
 * that was visible to readers (in the spine, or handed in by the caller)
 * and is merged away goes to the retired list until trace_step_end; merge
 * results that never left this file are freed at once.
 *
 * A run is a batch in memory or, once the memory budget moved it out
 * (spill.h, between steps), a Spilled run: blocks in files, an index of
 * their first keys in memory. A probe of a spilled run reads only the
 * blocks whose key range holds the key, through the shared cache, and
 * copies the values it hands out into the trace's scratch arena (valid
 * until trace_step_end, as a resident batch's are), so no block stays
 * pinned beyond the probe (a cursor keeps its current block pinned until
 * it moves on). An insert's merges stop at a spilled run (reading it back
 * would need it whole in memory): the invariant holds among the runs in
 * memory above the newest spilled one. Between steps, trace_compact
 * merges spilled runs of one size tier, four or more at once, with a
 * streaming merge (spill_merge: block by block, file to file; a run in
 * memory that would complete a tier when it spills goes straight into
 * that merge instead, spill_merge_batch), so a trace
 * of N tuples under a budget B keeps O(log(N / B)) spilled runs plus
 * O(log B) in memory, each tuple is rewritten O(log4(N / B)) times, and
 * tuples that cancel leave the disk.
 *
 * Deferred merges (trace_defer): a pipeline's traces (made while tracking
 * is on) take a step's insert as a run of its own, merging nothing, and
 * the merges the rule asks for wait for trace_tidy_all, which the
 * pipeline calls once the step is over (its views changed, its pushes
 * answered): a small step's latency no longer pays for merging the big
 * runs its insert would reach. An insert finds the spine tidy again
 * unless several inserts came in one step (a fixpoint's iterations):
 * after DEFER_MAX of them an insert merges as the rule says, so the spine
 * stays O(log N) runs even if trace_tidy_all is late.
 *
 * Rollback: the first insert after trace_step_end keeps references to the
 * spine as it was (O(log N) references: runs are immutable), so
 * trace_rollback can put it back; trace_step_end drops them.
 */
#include "trace.h"

#include <pthread.h>

#include "../base/arena.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "spill.h"

typedef struct Run {
    Batch *b;     /* in memory, or NULL */
    Spilled *s;   /* in files, or NULL */
    int64_t n;    /* tuples */
} Run;

struct Trace {
    Run *spine;   /* oldest (largest) first */
    int n, cap;
    Batch **retired;
    int nretired, capretired;
    Run *sp;      /* the spine before the step's first insert (own references) */
    int nsp, capsp;
    bool has_sp;  /* sp is set: an insert happened since trace_step_end */
    bool tracked; /* registered with spill.c */
    Arena *scratch; /* values copied out of spilled blocks this step */
    int64_t hits, misses;
    int ndeferred;  /* inserts pushed unmerged since the last tidy */
    bool untidy;    /* on the untidy list */
};

static __thread bool track_new;

/* Deferred merges: on or off for the process, and the traces with
   deferred merges (any worker inserts; the controller tidies). */
#define DEFER_MAX 4
static _Atomic bool defer_on;
static pthread_mutex_t untidy_mu = PTHREAD_MUTEX_INITIALIZER;
static Trace **untidy;
static int nuntidy, capuntidy;

void trace_defer(bool on) { defer_on = on; }

static void untidy_drop(Trace *t)
{
    pthread_mutex_lock(&untidy_mu);
    for (int i = 0; i < nuntidy; i++)
        if (untidy[i] == t) {
            untidy[i] = untidy[--nuntidy];
            break;
        }
    t->untidy = false;
    pthread_mutex_unlock(&untidy_mu);
}

void trace_track_new(bool on) { track_new = on; }

bool trace_tracked(const Trace *t) { return t->tracked; }

static size_t own_resident(const void *o) { return trace_resident_bytes(o); }
static size_t own_largest(const void *o) { return trace_largest_resident(o); }
static int own_spill(void *o, Err *err) { return trace_spill_largest(o, err); }
static int own_compact(void *o, int *merged, Err *err) { return trace_compact(o, merged, err); }
static const SpillOwner owner_ops = {own_resident, own_largest, own_spill, own_compact};

Trace *trace_new(void)
{
    Trace *t = sl_malloc(sizeof(*t));
    memset(t, 0, sizeof(*t));
    if (track_new) {
        t->tracked = true;
        spill_register(t, &owner_ops);
    }
    return t;
}

static void run_ref(Run r)
{
    if (r.b)
        batch_ref(r.b);
    else
        spilled_ref(r.s);
}

static void run_unref(Run r)
{
    if (r.b)
        batch_unref(r.b);
    else
        spilled_unref(r.s);
}

void trace_free(Trace *t)
{
    if (!t)
        return;
    if (t->tracked)
        spill_unregister(t);
    if (t->untidy)
        untidy_drop(t);
    for (int i = 0; i < t->n; i++)
        run_unref(t->spine[i]);
    trace_step_end(t);
    arena_free(t->scratch);
    sl_free(t->spine);
    sl_free(t->retired);
    sl_free(t->sp);
    sl_free(t);
}

static void retire(Trace *t, Batch *b)
{
    *VEC_PUSH(t->retired, t->nretired, t->capretired) = b;
}

static void retire_run(Trace *t, Run r)
{
    if (r.b)
        retire(t, r.b);
    else
        spilled_unref(r.s); /* readers hold copies, not pointers into it */
}

static void push(Trace *t, Batch *b)
{
    *VEC_PUSH(t->spine, t->n, t->cap) = (Run){b, NULL, b->n};
}

/* Drop the savepoint's references. */
static void drop_savepoint(Trace *t)
{
    for (int i = 0; i < t->nsp; i++)
        run_unref(t->sp[i]);
    t->nsp = 0;
    t->has_sp = false;
}

/* Run r's tuples in memory: its batch, or a fresh copy read back
   (*fresh set then). */
static Batch *run_batch(Run r, bool *fresh)
{
    *fresh = r.b == NULL;
    return r.b ? r.b : spilled_load(r.s);
}

void trace_insert_take(Trace *t, Batch *b)
{
    if (b->n == 0) {
        batch_unref(b); /* no bytes a reader could point into */
        return;
    }
    if (!t->has_sp) {
        VEC_RESERVE(t->sp, t->capsp, t->n);
        for (int i = 0; i < t->n; i++) {
            run_ref(t->spine[i]);
            t->sp[i] = t->spine[i];
        }
        t->nsp = t->n;
        t->has_sp = true;
    }
    if (t->tracked && defer_on && t->ndeferred < DEFER_MAX) {
        t->ndeferred++; /* merged by trace_tidy_all, after the step */
        if (!t->untidy) {
            pthread_mutex_lock(&untidy_mu);
            *VEC_PUSH(untidy, nuntidy, capuntidy) = t;
            t->untidy = true;
            pthread_mutex_unlock(&untidy_mu);
        }
        push(t, b);
        return;
    }
    /* runs in memory merge; a spilled run is never read back to merge
       (that would need it all in memory at once): newer runs pile up on
       it until they are spilled in turn. The newest runs that are no more
       than twice the size of what merges with them (b and the runs newer
       than each) merge in one pass: pairwise merges would write the
       tuples of the newer ones again at each level, and hold each
       intermediate result beside the next merge's output. */
    int k = t->n;
    int64_t sum = b->n;
    while (k > 0 && t->spine[k - 1].b && t->spine[k - 1].n <= 2 * sum)
        sum += t->spine[--k].n;
    if (k == t->n) {
        push(t, b);
        return;
    }
    int nin = t->n - k + 1;
    Batch **in = sl_malloc(sizeof(Batch *) * (size_t)nin);
    for (int i = k; i < t->n; i++)
        in[i - k] = t->spine[i].b; /* oldest first: equal tuples keep the oldest's bytes */
    in[nin - 1] = b;
    Batch *m = batch_merge_many(in, nin);
    sl_free(in);
    while (t->n > k)
        retire_run(t, t->spine[--t->n]);
    retire(t, b); /* the caller's: its bytes may be pointed into */
    if (m->n == 0)
        batch_unref(m);
    else
        push(t, m);
}

/* The first of the newest runs the spine's rule merges now (all in
   memory, the newest and those newer than each no more than twice its
   size), their tuples to *work; t->n - 1 when none would merge. */
static int tidy_from(const Trace *t, int64_t *work)
{
    int k = t->n - 1;
    *work = 0;
    if (k < 1 || !t->spine[k].b || t->has_sp || t->nretired)
        return k; /* (has_sp, nretired: a step is under way) */
    int64_t sum = t->spine[k].n;
    while (k > 0 && t->spine[k - 1].b && t->spine[k - 1].n <= 2 * sum)
        sum += t->spine[--k].n;
    if (k < t->n - 1)
        *work = sum;
    return k;
}

/* The merges deferred inserts skipped, between steps: the runs
   tidy_from names merge in one pass (as an insert of the newest run
   would), until the rule holds. No reader points into the runs merged
   away (the step is over): they are released at once. */
static void tidy(Trace *t)
{
    t->ndeferred = 0;
    for (;;) {
        int64_t work;
        int k = tidy_from(t, &work);
        if (work == 0)
            return;
        int nin = t->n - k;
        Batch **in = sl_malloc(sizeof(Batch *) * (size_t)nin);
        for (int i = k; i < t->n; i++)
            in[i - k] = t->spine[i].b; /* oldest first */
        Batch *m = batch_merge_many(in, nin);
        sl_free(in);
        while (t->n > k)
            run_unref(t->spine[--t->n]);
        if (m->n == 0)
            batch_unref(m);
        else
            push(t, m);
    }
}

typedef struct TidyJob {
    Trace **list;
    int n;
    _Atomic int next;
} TidyJob;

static void *tidy_thread(void *arg)
{
    TidyJob *j = arg;
    for (int i; (i = j->next++) < j->n;)
        tidy(j->list[i]);
    return NULL;
}

/* Merges of fewer tuples than this in all run on the calling thread. */
#define TIDY_PARALLEL_MIN (1 << 18)

void trace_tidy_all(int threads)
{
    pthread_mutex_lock(&untidy_mu);
    Trace **list = untidy;
    int n = nuntidy;
    untidy = NULL;
    nuntidy = capuntidy = 0;
    for (int i = 0; i < n; i++)
        list[i]->untidy = false;
    pthread_mutex_unlock(&untidy_mu);
    /* the traces with merges to do, most work first, shared by up to
       `threads` threads (the step's workers are idle) */
    int m = 0;
    int64_t total = 0, *work = sl_malloc(sizeof(int64_t) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        Trace *t = list[i];
        int64_t w;
        tidy_from(t, &w);
        t->ndeferred = 0;
        if (w > 0) {
            int at = m++;
            for (; at > 0 && work[at - 1] < w; at--) {
                work[at] = work[at - 1];
                list[at] = list[at - 1];
            }
            work[at] = w;
            list[at] = t;
            total += w;
        }
    }
    sl_free(work);
    if (threads > m)
        threads = m;
    pthread_t th[64];
    int started = 0;
    TidyJob job = {list, m, 0};
    if (total >= TIDY_PARALLEL_MIN)
        for (; started < threads - 1 && started < 64; started++)
            if (pthread_create(&th[started], NULL, tidy_thread, &job))
                break;
    tidy_thread(&job);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    sl_free(list);
}

void trace_step_end(Trace *t)
{
    for (int i = 0; i < t->nretired; i++)
        batch_unref(t->retired[i]);
    t->nretired = 0;
    drop_savepoint(t);
    if (t->scratch)
        arena_reset(t->scratch);
}

void trace_rollback(Trace *t)
{
    if (!t->has_sp)
        return;
    for (int i = 0; i < t->n; i++)
        run_unref(t->spine[i]);
    t->n = 0;
    for (int i = 0; i < t->nsp; i++) /* the savepoint's references move to the spine */
        *VEC_PUSH(t->spine, t->n, t->cap) = t->sp[i];
    t->nsp = 0;
    t->has_sp = false;
}

int64_t trace_count(const Trace *t)
{
    int64_t n = 0;
    for (int i = 0; i < t->n; i++)
        n += t->spine[i].n;
    return n;
}

size_t trace_bytes(const Trace *t)
{
    size_t n = sizeof(*t) + (size_t)t->cap * sizeof(Run) +
               (size_t)t->capretired * sizeof(Batch *);
    for (int i = 0; i < t->n; i++)
        n += t->spine[i].b ? batch_bytes(t->spine[i].b) : spilled_index_bytes(t->spine[i].s);
    for (int i = 0; i < t->nretired; i++)
        n += batch_bytes(t->retired[i]);
    return n;
}

void trace_mem(const Trace *t, TraceMem *m)
{
    m->rows += trace_count(t);
    m->bytes += trace_bytes(t);
    /* only runs in memory can spill: a spilled run's index, the spine and
       retired runs stay */
    m->trace_bytes += trace_resident_bytes(t);
    for (int i = 0; i < t->n; i++)
        if (t->spine[i].s)
            m->disk_bytes += t->spine[i].s->disk;
    m->cache_hits += t->hits;
    m->cache_misses += t->misses;
}

size_t trace_resident_bytes(const Trace *t)
{
    size_t n = 0;
    for (int i = 0; i < t->n; i++)
        if (t->spine[i].b)
            n += batch_bytes(t->spine[i].b);
    return n;
}

/* Index of the largest run in memory, or -1. */
static int largest_resident(const Trace *t)
{
    int best = -1;
    size_t bsz = 0;
    for (int i = 0; i < t->n; i++)
        if (t->spine[i].b && batch_bytes(t->spine[i].b) > bsz) {
            best = i;
            bsz = batch_bytes(t->spine[i].b);
        }
    return best;
}

size_t trace_largest_resident(const Trace *t)
{
    int i = largest_resident(t);
    return i < 0 ? 0 : batch_bytes(t->spine[i].b);
}

/* The size tier of a run of that many bytes: runs of one tier are within
   a factor 4. */
static int tier_of(size_t bytes)
{
    int t = 0;
    for (size_t b = bytes >> 16; b; b >>= 2)
        t++;
    return t;
}

static int tier(const Spilled *s) { return tier_of(s->bytes); }

enum { COMPACT_FANIN = 4 }; /* trace_compact */

/* Replace the runs at[0..nin) (ascending) by m, in the oldest's place (a
   trace is a sum: where a run sits does not change it). */
static void replace_runs(Trace *t, const int *at, int nin, Spilled *m)
{
    int w = 0;
    for (int i = 0, k = 0; i < t->n; i++) {
        if (k < nin && i == at[k]) {
            if (t->spine[i].s)
                spilled_unref(t->spine[i].s);
            else
                batch_unref(t->spine[i].b); /* a checkpoint writer may still hold it */
            if (k++ == 0 && m->n > 0)
                t->spine[w++] = (Run){NULL, m, m->n};
            continue;
        }
        t->spine[w++] = t->spine[i];
    }
    t->n = w;
    if (m->n == 0) /* every tuple cancelled */
        spilled_unref(m);
}

int trace_spill_largest(Trace *t, Err *err)
{
    int i = largest_resident(t);
    if (i < 0)
        return 0;
    /* when the run would complete a tier of spilled runs (trace_compact
       would merge it with them right away), it goes straight into that
       merge: never written, and read back, on its own */
    SpillConf conf;
    spill_conf(&conf);
    int tt = tier_of(batch_bytes(t->spine[i].b)), at[SPILL_MERGE_MAX], nin = 0;
    Spilled *in[SPILL_MERGE_MAX];
    for (int j = 0; conf.merge && j < t->n && nin < SPILL_MERGE_MAX - 1; j++)
        if (t->spine[j].s && tier(t->spine[j].s) == tt) {
            at[nin] = j;
            in[nin++] = t->spine[j].s;
        }
    Spilled *s;
    if (nin >= COMPACT_FANIN - 1) {
        int rc = spill_merge_batch(t->spine[i].b, in, nin, &s, err);
        if (rc)
            return rc;
        int k = nin++; /* i among the runs replaced, in spine order */
        while (k > 0 && at[k - 1] > i) {
            at[k] = at[k - 1];
            k--;
        }
        at[k] = i;
        replace_runs(t, at, nin, s);
        return 0;
    }
    int rc = spill_write(t->spine[i].b, &s, err);
    if (rc)
        return rc;
    batch_unref(t->spine[i].b); /* a checkpoint writer may still hold it */
    t->spine[i].b = NULL;
    t->spine[i].s = s;
    return 0;
}

int trace_compact(Trace *t, int *merged, Err *err)
{
    *merged = 0;
    /* size-tiered: when COMPACT_FANIN spilled runs share a tier, merge them
       (and any others of it, up to SPILL_MERGE_MAX) into one, which lands
       at least a tier higher: a tuple is rewritten O(log4(N / B)) times and
       a trace keeps fewer than COMPACT_FANIN runs per tier */
    for (bool again = true; again;) {
        again = false;
        int count[64] = {0};
        for (int i = 0; i < t->n; i++)
            if (t->spine[i].s)
                count[tier(t->spine[i].s)]++;
        int tt = -1;
        for (int k = 0; k < 64 && tt < 0; k++)
            if (count[k] >= COMPACT_FANIN)
                tt = k;
        if (tt < 0)
            break;
        Spilled *in[SPILL_MERGE_MAX];
        int at[SPILL_MERGE_MAX], nin = 0;
        for (int i = 0; i < t->n && nin < SPILL_MERGE_MAX; i++)
            if (t->spine[i].s && tier(t->spine[i].s) == tt) {
                at[nin] = i;
                in[nin++] = t->spine[i].s;
            }
        Spilled *m;
        int rc = spill_merge(in, nin, &m, err);
        if (rc)
            return rc;
        *merged += nin - 1;
        replace_runs(t, at, nin, m); /* the others leave the spine */
        again = true;
    }
    return 0;
}

/* ---- reading spilled runs ---- */

/* Hand the matches of key k in block bk (pinned) from index j on to cb,
   copying the values; returns the index after the last match. */
static int64_t block_emit(Trace *t, const Batch *bk, int64_t j, const uint8_t *k, size_t kn,
                          TraceFn cb, void *ctx)
{
    for (; j < bk->n && batch_key_cmp(bk, j, k, kn) == 0; j++) {
        size_t vn = batch_vlen(bk, j);
        if (!t->scratch)
            t->scratch = arena_new(64 * 1024);
        uint8_t *v = arena_alloc(t->scratch, vn ? vn : 1);
        memcpy(v, batch_val(bk, j), vn);
        cb(ctx, v, vn, bk->w[j]);
    }
    return j;
}

static const Batch *pin(Trace *t, const Spilled *s, int i)
{
    bool hit;
    const Batch *b = spill_pin(s, i, &hit);
    if (hit)
        t->hits++;
    else
        t->misses++;
    return b;
}

/* Is the first key of block i of s equal to k? */
static bool starts_with_key(const Spilled *s, int i, const uint8_t *k, size_t kn)
{
    return i < s->nblocks && s->blk[i].firstn == kn && !memcmp(s->blk[i].first, k, kn);
}

/* Matches of k in spilled run s, from block i on (spilled_seek's answer). */
static void spilled_for_key(Trace *t, const Spilled *s, int i, const uint8_t *k, size_t kn,
                            TraceFn cb, void *ctx)
{
    for (; i < s->nblocks; i++) {
        const Batch *bk = pin(t, s, i);
        int64_t j = block_emit(t, bk, batch_seek(bk, k, kn), k, kn, cb, ctx);
        bool more = j == bk->n;
        spill_unpin(s, i);
        if (!more || !starts_with_key(s, i + 1, k, kn))
            break;
    }
}

void trace_for_key(const Trace *tc, const uint8_t *k, size_t kn, TraceFn cb, void *ctx)
{
    Trace *t = (Trace *)tc; /* the scratch arena and the counters change */
    for (int i = 0; i < t->n; i++) {
        const Batch *b = t->spine[i].b;
        if (!b) {
            const Spilled *s = t->spine[i].s;
            spilled_for_key(t, s, spilled_seek(s, 0, k, kn), k, kn, cb, ctx);
            continue;
        }
        for (int64_t j = batch_seek(b, k, kn); j < b->n && batch_key_cmp(b, j, k, kn) == 0; j++)
            cb(ctx, batch_val(b, j), batch_vlen(b, j), b->w[j]);
    }
}

struct TraceCursor {
    Trace *t;
    int64_t *pos; /* per run: no tuple before it has a key >= the last probe
                     (a spilled run: no block before it) */
    int *pinned;  /* per spilled run: the block kept pinned, or -1 */
    const Batch **blk; /* ... and that block */
    int nruns;
};

TraceCursor *trace_cursor_new(const Trace *t)
{
    TraceCursor *c = sl_malloc(sizeof(*c));
    c->t = (Trace *)t;
    c->nruns = t->n;
    c->pos = sl_calloc((size_t)(t->n ? t->n : 1), sizeof(int64_t));
    c->pinned = sl_malloc(sizeof(int) * (size_t)(t->n ? t->n : 1));
    c->blk = sl_calloc((size_t)(t->n ? t->n : 1), sizeof(Batch *));
    for (int i = 0; i < t->n; i++)
        c->pinned[i] = -1;
    return c;
}

void trace_cursor_free(TraceCursor *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nruns; i++)
        if (c->pinned[i] >= 0)
            spill_unpin(c->t->spine[i].s, c->pinned[i]);
    sl_free(c->pos);
    sl_free(c->pinned);
    sl_free(c->blk);
    sl_free(c);
}

/* First index >= from whose key is >= k: gallop, then binary search. */
static int64_t gallop(const Batch *b, int64_t from, const uint8_t *k, size_t kn)
{
    if (from >= b->n || batch_key_cmp(b, from, k, kn) >= 0)
        return from;
    int64_t lo = from, step = 1; /* key(lo) < k */
    while (lo + step < b->n && batch_key_cmp(b, lo + step, k, kn) < 0) {
        lo += step;
        step *= 2;
    }
    int64_t hi = lo + step < b->n ? lo + step : b->n; /* key(hi) >= k or hi == n */
    return batch_seek_range(b, lo + 1, hi, k, kn);
}

/* The cursor's probe of spilled run r: the block it keeps pinned serves
   consecutive keys that fall in it. */
static void cursor_spilled(TraceCursor *c, int r, const uint8_t *k, size_t kn, TraceFn cb,
                           void *ctx)
{
    Trace *t = c->t;
    const Spilled *s = t->spine[r].s;
    int i = spilled_seek(s, (int)c->pos[r], k, kn);
    c->pos[r] = i;
    for (; i < s->nblocks; i++) {
        if (c->pinned[r] != i) {
            if (c->pinned[r] >= 0)
                spill_unpin(s, c->pinned[r]);
            c->blk[r] = pin(t, s, i);
            c->pinned[r] = i;
        }
        const Batch *bk = c->blk[r];
        int64_t j = block_emit(t, bk, batch_seek(bk, k, kn), k, kn, cb, ctx);
        if (j < bk->n || !starts_with_key(s, i + 1, k, kn))
            break;
    }
}

void trace_cursor_for_key(TraceCursor *c, const uint8_t *k, size_t kn, TraceFn cb, void *ctx)
{
    const Trace *t = c->t;
    for (int i = 0; i < t->n; i++) {
        const Batch *b = t->spine[i].b;
        if (!b) {
            cursor_spilled(c, i, k, kn, cb, ctx);
            continue;
        }
        int64_t j = c->pos[i] = gallop(b, c->pos[i], k, kn);
        for (; j < b->n && batch_key_cmp(b, j, k, kn) == 0; j++)
            cb(ctx, batch_val(b, j), batch_vlen(b, j), b->w[j]);
    }
}

Batch *trace_consolidate(Trace *t)
{
    if (t->n == 0)
        return batch_empty();
    bool loaded;
    Batch *acc = run_batch(t->spine[t->n - 1], &loaded);
    bool fresh = loaded;
    for (int i = t->n - 2; i >= 0; i--) {
        bool li;
        Batch *bi = run_batch(t->spine[i], &li);
        Batch *m = batch_merge(bi, acc);
        if (li)
            batch_unref(bi);
        if (fresh)
            batch_unref(acc);
        acc = m;
        fresh = true;
    }
    if (fresh) {
        for (int i = 0; i < t->n; i++)
            retire_run(t, t->spine[i]);
        t->n = 0;
        if (acc->n == 0)
            return acc;
        push(t, acc);
    }
    batch_ref(acc);
    return acc;
}

int trace_nbatches(const Trace *t) { return t->n; }

Batch *trace_batch(const Trace *tc, int i)
{
    Trace *t = (Trace *)tc;
    if (t->spine[i].b)
        return t->spine[i].b;
    Batch *b = spilled_load(t->spine[i].s); /* kept until trace_step_end */
    retire(t, b);
    return b;
}

void trace_restore_take(Trace *t, Batch *b)
{
    if (b->n == 0) {
        batch_unref(b);
        return;
    }
    push(t, b);
}

/* ---- scanning the whole integral ---- */

/* A run's place in a scan: the tuple it is at, in a resident batch or in
   the one block of a spilled run it keeps pinned. */
typedef struct ScanPos {
    const Batch *b; /* NULL: the run is done */
    int64_t j;
    int blk;        /* spilled: the pinned block, else -1 */
} ScanPos;

static int tuple_cmp(const Batch *a, int64_t i, const Batch *b, int64_t j)
{
    size_t la = batch_tlen(a, i), lb = batch_tlen(b, j), m = la < lb ? la : lb;
    int c = memcmp(batch_key(a, i), batch_key(b, j), m);
    return c ? c : (la > lb) - (la < lb);
}

/* Move run r's position to its next tuple (the next block of a spilled
   run when its block is done). */
static void scan_next(Trace *t, ScanPos *p, int r)
{
    const Spilled *s = t->spine[r].s;
    if (++p->j < p->b->n)
        return;
    if (!s) {
        p->b = NULL;
        return;
    }
    spill_unpin(s, p->blk);
    p->b = NULL;
    while (++p->blk < s->nblocks) {
        p->b = pin(t, s, p->blk);
        p->j = 0;
        if (p->b->n > 0)
            return;
        spill_unpin(s, p->blk);
        p->b = NULL;
    }
}

void trace_scan(const Trace *tc, TraceScanFn cb, void *ctx)
{
    Trace *t = (Trace *)tc; /* the counters change */
    ScanPos *p = sl_calloc((size_t)(t->n ? t->n : 1), sizeof(ScanPos));
    for (int r = 0; r < t->n; r++) {
        p[r].blk = -1;
        if (t->spine[r].b) {
            p[r].b = t->spine[r].b->n ? t->spine[r].b : NULL;
        } else if (t->spine[r].s->nblocks > 0) {
            p[r].blk = 0;
            p[r].b = pin(t, t->spine[r].s, 0);
            p[r].j = -1;
            scan_next(t, &p[r], r); /* (to its first tuple, past empty blocks) */
        }
    }
    for (;;) {
        int m = -1;
        for (int r = 0; r < t->n; r++)
            if (p[r].b && (m < 0 || tuple_cmp(p[r].b, p[r].j, p[m].b, p[m].j) < 0))
                m = r;
        if (m < 0)
            break;
        int64_t w = 0;
        const Batch *mb = p[m].b;
        int64_t mj = p[m].j;
        for (int r = 0; r < t->n; r++) /* (m itself last: its tuple is the one handed out) */
            if (r != m && p[r].b && tuple_cmp(p[r].b, p[r].j, mb, mj) == 0) {
                w += p[r].b->w[p[r].j];
                scan_next(t, &p[r], r);
            }
        w += mb->w[mj];
        if (w != 0)
            cb(ctx, batch_key(mb, mj), batch_klen(mb, mj), batch_val(mb, mj), batch_vlen(mb, mj),
               w);
        scan_next(t, &p[m], m);
    }
    sl_free(p);
}

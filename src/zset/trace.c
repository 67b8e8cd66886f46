/*
 * zset/trace.c - the integral of a stream of batches, kept as an LSM spine.
 * In: consolidated batches from operators (ownership taken). Out: per-key
 * lookups for joins and aggregates, and one consolidated batch on demand.
 *
 * Invariant: spine[0..n) runs oldest to newest and every batch holds more
 * than twice the tuples of the next newer one, so n = O(log N). A batch
 * that was visible to readers (in the spine, or handed in by the caller)
 * and is merged away goes to the retired list until trace_step_end; merge
 * results that never left this file are freed at once.
 *
 * Rollback: the first insert after trace_step_end keeps references to the
 * spine as it was (O(log N) references: the batches are immutable), so
 * trace_rollback can put it back; trace_step_end drops them.
 */
#include "trace.h"

#include "../base/mem.h"
#include "../base/vec.h"

struct Trace {
    Batch **spine; /* oldest (largest) first */
    int n, cap;
    Batch **retired;
    int nretired, capretired;
    Batch **sp;    /* the spine before the step's first insert (own references) */
    int nsp, capsp;
    bool has_sp;   /* sp is set: an insert happened since trace_step_end */
};

Trace *trace_new(void)
{
    Trace *t = sl_malloc(sizeof(*t));
    memset(t, 0, sizeof(*t));
    return t;
}

void trace_free(Trace *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        batch_unref(t->spine[i]);
    trace_step_end(t);
    sl_free(t->spine);
    sl_free(t->retired);
    sl_free(t->sp);
    sl_free(t);
}

static void retire(Trace *t, Batch *b)
{
    *VEC_PUSH(t->retired, t->nretired, t->capretired) = b;
}

static void push(Trace *t, Batch *b)
{
    *VEC_PUSH(t->spine, t->n, t->cap) = b;
}

/* Drop the caller-visible batch cur, or free it when fresh (made here). */
static void discard(Trace *t, Batch *cur, bool fresh)
{
    if (fresh)
        batch_unref(cur);
    else
        retire(t, cur);
}

/* Drop the savepoint's references. */
static void drop_savepoint(Trace *t)
{
    for (int i = 0; i < t->nsp; i++)
        batch_unref(t->sp[i]);
    t->nsp = 0;
    t->has_sp = false;
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
            batch_ref(t->spine[i]);
            t->sp[i] = t->spine[i];
        }
        t->nsp = t->n;
        t->has_sp = true;
    }
    Batch *cur = b;
    bool fresh = false;
    while (t->n > 0 && t->spine[t->n - 1]->n <= 2 * cur->n) {
        Batch *top = t->spine[--t->n];
        Batch *m = batch_merge(top, cur);
        retire(t, top);
        discard(t, cur, fresh);
        cur = m;
        fresh = true;
    }
    if (cur->n == 0)
        discard(t, cur, fresh);
    else
        push(t, cur);
}

void trace_step_end(Trace *t)
{
    for (int i = 0; i < t->nretired; i++)
        batch_unref(t->retired[i]);
    t->nretired = 0;
    drop_savepoint(t);
}

void trace_rollback(Trace *t)
{
    if (!t->has_sp)
        return;
    for (int i = 0; i < t->n; i++)
        batch_unref(t->spine[i]);
    t->n = 0;
    for (int i = 0; i < t->nsp; i++)
        push(t, t->sp[i]); /* the savepoint's references move to the spine */
    t->nsp = 0;
    t->has_sp = false;
}

int64_t trace_count(const Trace *t)
{
    int64_t n = 0;
    for (int i = 0; i < t->n; i++)
        n += t->spine[i]->n;
    return n;
}

size_t trace_bytes(const Trace *t)
{
    size_t n = sizeof(*t) + (size_t)(t->cap + t->capretired) * sizeof(Batch *);
    for (int i = 0; i < t->n; i++)
        n += batch_bytes(t->spine[i]);
    for (int i = 0; i < t->nretired; i++)
        n += batch_bytes(t->retired[i]);
    return n;
}

void trace_for_key(const Trace *t, const uint8_t *k, size_t kn, TraceFn cb, void *ctx)
{
    for (int i = 0; i < t->n; i++) {
        const Batch *b = t->spine[i];
        for (int64_t j = batch_seek(b, k, kn); j < b->n && batch_key_cmp(b, j, k, kn) == 0; j++)
            cb(ctx, batch_val(b, j), batch_vlen(b, j), b->w[j]);
    }
}

struct TraceCursor {
    const Trace *t;
    int64_t *pos; /* per batch: no tuple before it has a key >= the last probe */
};

TraceCursor *trace_cursor_new(const Trace *t)
{
    TraceCursor *c = sl_malloc(sizeof(*c));
    c->t = t;
    c->pos = sl_calloc((size_t)(t->n ? t->n : 1), sizeof(int64_t));
    return c;
}

void trace_cursor_free(TraceCursor *c)
{
    if (!c)
        return;
    sl_free(c->pos);
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

void trace_cursor_for_key(TraceCursor *c, const uint8_t *k, size_t kn, TraceFn cb, void *ctx)
{
    const Trace *t = c->t;
    for (int i = 0; i < t->n; i++) {
        const Batch *b = t->spine[i];
        int64_t j = c->pos[i] = gallop(b, c->pos[i], k, kn);
        for (; j < b->n && batch_key_cmp(b, j, k, kn) == 0; j++)
            cb(ctx, batch_val(b, j), batch_vlen(b, j), b->w[j]);
    }
}

Batch *trace_consolidate(Trace *t)
{
    if (t->n == 0)
        return batch_empty();
    Batch *acc = t->spine[t->n - 1];
    bool fresh = false;
    for (int i = t->n - 2; i >= 0; i--) {
        Batch *m = batch_merge(t->spine[i], acc);
        if (fresh)
            batch_unref(acc);
        acc = m;
        fresh = true;
    }
    if (fresh) {
        for (int i = 0; i < t->n; i++)
            retire(t, t->spine[i]);
        t->n = 0;
        if (acc->n == 0)
            return acc;
        push(t, acc);
    }
    batch_ref(acc);
    return acc;
}

int trace_nbatches(const Trace *t) { return t->n; }
Batch *trace_batch(const Trace *t, int i) { return t->spine[i]; }

void trace_restore_take(Trace *t, Batch *b)
{
    if (b->n == 0) {
        batch_unref(b);
        return;
    }
    push(t, b);
}

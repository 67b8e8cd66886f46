/*
 * tests/zset/test_trace.c - a trace fed random batches holds their integral:
 * per-key lookups and trace_consolidate agree with a reference Z-set built
 * by sorting every inserted tuple and summing equal ones; the spine stays
 * logarithmic; merged-away batches stay readable until trace_step_end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/vec.h"
#include "zset/trace.h"

#define ZT_SEED 0x7F4A7C159E3779B9ull
#define ZT_TUP_BYTES 16
#include "zset_test.h"

/* ---- reference model ---- */

typedef struct TupVec {
    Tup *t;
    size_t n, cap;
} TupVec;

static void tv_push(TupVec *v, Tup t) { *VEC_PUSH(v->t, v->n, v->cap) = t; }

/* Key: 1-3 letters of {a,b,c,d} then NUL; val: 0-2 letters of {x,y} then NUL. */
static Tup random_tup(void)
{
    Tup t;
    size_t kn = 1 + rnd() % 3, vn = rnd() % 3;
    for (size_t i = 0; i < kn; i++)
        t.p[i] = (uint8_t)('a' + rnd() % 4);
    t.p[kn] = 0;
    for (size_t i = 0; i < vn; i++)
        t.p[kn + 1 + i] = (uint8_t)('x' + rnd() % 2);
    t.p[kn + 1 + vn] = 0;
    t.klen = (uint32_t)kn + 1;
    t.n = kn + vn + 2;
    t.w = (int64_t)(rnd() % 5) - 2;
    return t;
}

static Batch *batch_of(const Tup *t, size_t n)
{
    BatchBuilder *bb = bb_new();
    for (size_t i = 0; i < n; i++)
        bb_add(bb, t[i].p, t[i].klen, t[i].p + t[i].klen, t[i].n - t[i].klen, t[i].w);
    return bb_finish(bb);
}

static void assert_batch_equals(const Batch *b, const TupVec *v)
{
    assert_int_equal(b->n, (int64_t)v->n);
    for (size_t i = 0; i < v->n; i++) {
        const Tup *t = &v->t[i];
        assert_int_equal(batch_tlen(b, i), t->n);
        assert_memory_equal(batch_key(b, i), t->p, t->n);
        assert_int_equal(batch_klen(b, i), t->klen);
        assert_int_equal(b->w[i], t->w);
    }
}

/* trace_for_key callback: collects (val, weight) as tuples. */
static void collect(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    Tup t = {.n = vn, .klen = 0, .w = w};
    assert_true(vn <= sizeof(t.p));
    memcpy(t.p, val, vn);
    tv_push(ctx, t);
}

static void count_calls(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    (*(int64_t *)ctx)++;
}

/* Assert that trace_for_key(k) sums to the reference's tuples with key k. */
static void assert_key_matches(const Trace *tr, const TupVec *ref, const uint8_t *k, size_t kn)
{
    TupVec got = {0}, want = {0};
    trace_for_key(tr, k, kn, collect, &got);
    got.n = ref_consolidate(got.t, got.n);
    for (size_t i = 0; i < ref->n; i++)
        if (ref->t[i].klen == kn && memcmp(ref->t[i].p, k, kn) == 0) {
            Tup t = {.n = ref->t[i].n - kn, .w = ref->t[i].w};
            memcpy(t.p, ref->t[i].p + kn, t.n);
            tv_push(&want, t);
        }
    assert_int_equal(got.n, want.n);
    for (size_t i = 0; i < got.n; i++) {
        assert_int_equal(tup_cmp(&got.t[i], &want.t[i]), 0);
        assert_int_equal(got.t[i].w, want.t[i].w);
    }
    sl_free(got.t);
    sl_free(want.t);
}

/* ---- tests ---- */

static void test_trace_for_key_sums_equal_the_reference_integral(void **state)
{
    Trace *tr = trace_new();
    TupVec all = {0};
    for (int step = 0; step < 300; step++) {
        size_t n = rnd() % 4 == 0 ? rnd() % 2000 : rnd() % 50;
        Tup *t = malloc((n ? n : 1) * sizeof(Tup));
        for (size_t i = 0; i < n; i++) {
            t[i] = random_tup();
            tv_push(&all, t[i]);
        }
        trace_insert_take(tr, batch_of(t, n));
        free(t);
        if (step % 3 == 0)
            trace_step_end(tr);
        if (step % 50 == 49) {
            TupVec ref = {0};
            for (size_t i = 0; i < all.n; i++)
                tv_push(&ref, all.t[i]);
            ref.n = ref_consolidate(ref.t, ref.n);
            for (int probe = 0; probe < 40; probe++) {
                Tup q = random_tup();
                assert_key_matches(tr, &ref, q.p, q.klen);
            }
            sl_free(ref.t);
        }
    }
    trace_free(tr);
    sl_free(all.t);
}

static void test_trace_consolidate_equals_the_reference(void **state)
{
    Trace *tr = trace_new();
    TupVec all = {0};
    for (int round = 0; round < 3; round++) {
        for (int step = 0; step < 100; step++) {
            size_t n = rnd() % 300;
            Tup *t = malloc((n ? n : 1) * sizeof(Tup));
            for (size_t i = 0; i < n; i++) {
                t[i] = random_tup();
                tv_push(&all, t[i]);
            }
            trace_insert_take(tr, batch_of(t, n));
            free(t);
        }
        Batch *c = trace_consolidate(tr);
        TupVec ref = {0};
        for (size_t i = 0; i < all.n; i++)
            tv_push(&ref, all.t[i]);
        ref.n = ref_consolidate(ref.t, ref.n);
        assert_batch_equals(c, &ref);
        assert_int_equal(trace_count(tr), c->n);
        /* the trace's only batch is the consolidated one */
        Batch *again = trace_consolidate(tr);
        assert_ptr_equal(again, c);
        batch_unref(again);
        batch_unref(c);
        trace_step_end(tr);
        sl_free(ref.t);
    }
    trace_free(tr);
    sl_free(all.t);
}

static void test_trace_keeps_a_logarithmic_number_of_batches(void **state)
{
    /* Every batch holds the marker tuple ("m", "") with weight 1, so each
       spine batch holds it once and trace_for_key("m") counts the spine. */
    static const uint8_t marker[] = {'m', 0, 0};
    Trace *tr = trace_new();
    int64_t inserted = 0;
    for (int step = 0; step < 2000; step++) {
        size_t n = 1 + (step % 7 == 0 ? rnd() % 300 : rnd() % 5);
        BatchBuilder *bb = bb_new();
        bb_add(bb, marker, 2, marker + 2, 1, 1);
        for (size_t i = 1; i < n; i++) {
            uint64_t v = rnd();
            bb_add(bb, (const uint8_t *)"k", 1, (const uint8_t *)&v, 8, 1);
        }
        trace_insert_take(tr, bb_finish(bb));
        inserted++;
        trace_step_end(tr);

        int64_t spine = 0;
        trace_for_key(tr, marker, 2, count_calls, &spine);
        int64_t total = trace_count(tr), log2n = 0;
        while ((INT64_C(1) << (log2n + 1)) <= total)
            log2n++;
        if (spine > log2n + 1)
            fail_msg("step %d: %lld batches for %lld tuples", step, (long long)spine,
                     (long long)total);
    }
    TupVec got = {0};
    trace_for_key(tr, marker, 2, collect, &got);
    int64_t sum = 0;
    for (size_t i = 0; i < got.n; i++)
        sum += got.t[i].w;
    assert_int_equal(sum, inserted);
    sl_free(got.t);
    trace_free(tr);
}

static void test_trace_of_a_batch_and_its_negation_is_empty(void **state)
{
    enum { N = 500 };
    Tup t[N];
    for (int i = 0; i < N; i++)
        t[i] = random_tup();
    Trace *tr = trace_new();
    trace_insert_take(tr, batch_of(t, N));
    for (int i = 0; i < N; i++)
        t[i].w = -t[i].w;
    trace_insert_take(tr, batch_of(t, N));
    assert_int_equal(trace_count(tr), 0);
    trace_insert_take(tr, batch_empty());
    assert_int_equal(trace_count(tr), 0);
    Batch *c = trace_consolidate(tr);
    assert_int_equal(c->n, 0);
    batch_unref(c);
    trace_free(tr);
}

/* trace_for_key callback: remembers the last val pointer. */
static void keep_val(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    *(const uint8_t **)ctx = val;
}

/* A batch of plain tuples "s\0" for each string s (weight 1). */
static Batch *batch_of_keys(const char *const *keys, size_t n)
{
    BatchBuilder *bb = bb_new();
    for (size_t i = 0; i < n; i++)
        bb_add(bb, (const uint8_t *)keys[i], strlen(keys[i]) + 1, NULL, 0, 1);
    return bb_finish(bb);
}

static void test_trace_val_pointers_stay_valid_until_step_end(void **state)
{
    static const uint8_t k[] = {'k', 0};
    Trace *tr = trace_new();
    BatchBuilder *bb = bb_new();
    bb_add(bb, k, 2, (const uint8_t *)"val", 4, 1);
    bb_add(bb, k, 2, (const uint8_t *)"v2", 3, 1);
    bb_add(bb, (const uint8_t *)"a", 2, NULL, 0, 1);
    trace_insert_take(tr, bb_finish(bb)); /* spine: [3] */
    const uint8_t *val = NULL;
    trace_for_key(tr, k, 2, keep_val, &val);
    assert_int_equal(memcmp(val, "val", 4), 0);

    trace_insert_take(tr, batch_of_keys((const char *[]){"z"}, 1)); /* [3, 1] */
    Batch *c = batch_of_keys((const char *[]){"y", "x"}, 2);
    const uint8_t *cval = batch_key(c, 0);
    trace_insert_take(tr, c); /* [6]: both old batches and c merged away */
    /* memcmp, not cmocka's uninstrumented compare: ASan flags freed memory */
    assert_int_equal(memcmp(val, "val", 4), 0);
    assert_int_equal(memcmp(cval, "x", 2), 0);

    trace_for_key(tr, k, 2, keep_val, &val);
    trace_insert_take(tr, batch_of_keys((const char *[]){"w"}, 1)); /* [6, 1] */
    Batch *all = trace_consolidate(tr);                            /* [7] */
    assert_int_equal(all->n, 7);
    assert_int_equal(memcmp(val, "val", 4), 0);
    assert_true(trace_bytes(tr) > batch_bytes(all));
    trace_step_end(tr);
    assert_true(trace_bytes(tr) >= batch_bytes(all));
    batch_unref(all);

    /* retired batches still pending are freed by trace_free */
    trace_insert_take(tr, batch_of_keys((const char *[]){"a", "b", "c", "d"}, 4));
    trace_free(tr);
}

/* The spine after each insert of equal batches (no tuple cancels) is the
   one pairwise merges give: the newest run merges with the one before
   while that one holds at most twice its tuples, again and again. The
   trace merges those runs in one pass; the shape must not change (a
   checkpoint saves the spine). */
static void test_trace_spine_is_that_of_pairwise_merges(void **state)
{
    enum { B = 100 };
    Trace *tr = trace_new();
    int64_t ref[64];
    int nref = 0;
    uint64_t id = 0;
    for (int step = 0; step < 40; step++) {
        int64_t n = B * (1 + step % 3);
        BatchBuilder *bb = bb_new();
        for (int64_t i = 0; i < n; i++, id++) {
            uint8_t v[8];
            for (int j = 0; j < 8; j++)
                v[j] = (uint8_t)(id >> (56 - 8 * j));
            bb_add(bb, (const uint8_t *)"k", 1, v, 8, 1);
        }
        trace_insert_take(tr, bb_finish(bb));
        trace_step_end(tr);
        int64_t cur = n;
        while (nref > 0 && ref[nref - 1] <= 2 * cur)
            cur += ref[--nref];
        ref[nref++] = cur;
        assert_int_equal(trace_nbatches(tr), nref);
        for (int i = 0; i < nref; i++)
            assert_int_equal(trace_batch(tr, i)->n, ref[i]);
    }
    Batch *all = trace_consolidate(tr);
    assert_int_equal(all->n, (int64_t)id);
    for (int64_t i = 1; i < all->n; i++)
        assert_true(memcmp(batch_val(all, i - 1), batch_val(all, i), 8) < 0);
    batch_unref(all);
    trace_free(tr);
}

/* With tuples cancelling, every run still holds more than twice the
   tuples of the next newer one, and the integral is right. */
static void test_trace_runs_grow_geometrically_under_cancellation(void **state)
{
    Trace *tr = trace_new();
    TupVec all = {0};
    for (int step = 0; step < 300; step++) {
        size_t n = 1 + rnd() % (step % 5 == 0 ? 200 : 20);
        Tup *t = calloc(n, sizeof(Tup));
        for (size_t i = 0; i < n; i++) {
            if (all.n && rnd() % 3 == 0) { /* take back an earlier tuple */
                t[i] = all.t[rnd() % all.n];
                t[i].w = -t[i].w;
            } else
                t[i] = random_tup();
            tv_push(&all, t[i]);
        }
        trace_insert_take(tr, batch_of(t, n));
        trace_step_end(tr);
        free(t);
        for (int i = 0; i + 1 < trace_nbatches(tr); i++)
            assert_true(trace_batch(tr, i)->n > 2 * trace_batch(tr, i + 1)->n);
    }
    Batch *got = trace_consolidate(tr);
    size_t n = ref_consolidate(all.t, all.n);
    all.n = n;
    assert_batch_equals(got, &all);
    batch_unref(got);
    sl_free(all.t);
    trace_free(tr);
}

/* Deferred merges (trace_defer): a tracked trace's insert leaves the
   runs there were untouched (merging none of them), however big; lookups
   see the integral meanwhile; trace_tidy_all then leaves the spine an
   untracked trace fed the same batches has (the rule: every run more than
   twice the next newer), with the same integral as the reference. Several
   inserts in one step merge as the rule says past a few, so the spine
   stays logarithmic without a tidy. */
static void test_trace_deferred_merges_wait_for_tidy(void **state)
{
    Trace *plain = trace_new();
    trace_track_new(true);
    trace_defer(true);
    Trace *tr = trace_new();
    trace_track_new(false);
    assert_true(trace_tracked(tr) && !trace_tracked(plain));
    TupVec all = {0};
    for (int step = 0; step < 200; step++) {
        int inserts = step >= 150 && step % 10 == 9 ? 12 : 1; /* (then shapes part) */
        for (int k = 0; k < inserts; k++) {
            size_t n = 1 + rnd() % (step % 5 == 0 ? 400 : 30);
            Tup *t = calloc(n, sizeof(Tup));
            for (size_t i = 0; i < n; i++) {
                if (all.n && rnd() % 3 == 0) {
                    t[i] = all.t[rnd() % all.n];
                    t[i].w = -t[i].w;
                } else
                    t[i] = random_tup();
                tv_push(&all, t[i]);
            }
            int before = trace_nbatches(tr);
            Batch *old[64];
            for (int i = 0; i < before && i < 64; i++)
                old[i] = trace_batch(tr, i);
            trace_insert_take(plain, batch_of(t, n));
            Batch *b = batch_of(t, n);
            int64_t bn = b->n; /* (0 when its tuples cancel) */
            trace_insert_take(tr, b);
            free(t);
            if (k < 4) { /* (DEFER_MAX) one more run, the others as they were */
                assert_int_equal(trace_nbatches(tr), before + (bn > 0));
                for (int i = 0; i < before && i < 64; i++)
                    assert_ptr_equal(trace_batch(tr, i), old[i]);
            }
        }
        /* the spine is at most a few runs past the rule before the tidy */
        int64_t total = trace_count(tr), log2n = 0;
        while ((INT64_C(1) << (log2n + 1)) <= total)
            log2n++;
        assert_true(trace_nbatches(tr) <= log2n + 2 + 4 + 1);
        if (step % 20 == 0) {
            TupVec ref = {0};
            for (size_t i = 0; i < all.n; i++)
                tv_push(&ref, all.t[i]);
            ref.n = ref_consolidate(ref.t, ref.n);
            for (int probe = 0; probe < 20; probe++) {
                Tup q = random_tup();
                assert_key_matches(tr, &ref, q.p, q.klen);
            }
            sl_free(ref.t);
        }
        trace_step_end(plain);
        trace_step_end(tr);
        trace_tidy_all(step % 2 ? 2 : 1);
        for (int i = 0; i + 1 < trace_nbatches(tr); i++)
            assert_true(trace_batch(tr, i)->n > 2 * trace_batch(tr, i + 1)->n);
        if (step < 150) { /* as an insert's own merges would leave it */
            assert_int_equal(trace_nbatches(tr), trace_nbatches(plain));
            for (int i = 0; i < trace_nbatches(tr); i++)
                assert_int_equal(trace_batch(tr, i)->n, trace_batch(plain, i)->n);
        }
    }
    Batch *got = trace_consolidate(tr);
    all.n = ref_consolidate(all.t, all.n);
    assert_batch_equals(got, &all);
    batch_unref(got);
    sl_free(all.t);
    trace_free(plain);
    /* a rolled back step's inserts leave the tidy nothing to merge */
    trace_insert_take(tr, batch_of_keys((const char *[]){"a"}, 1));
    trace_rollback(tr);
    trace_step_end(tr);
    trace_tidy_all(1);
    assert_int_equal(trace_nbatches(tr), 1);
    /* freeing a trace with merges pending takes it off the list */
    trace_insert_take(tr, batch_of_keys((const char *[]){"b"}, 1));
    trace_step_end(tr);
    trace_free(tr);
    trace_tidy_all(1);
    trace_defer(false);
}

/* trace_tidy_all shares big merges among threads: every trace's spine
   and integral come out as merged on one thread. */
static void test_trace_tidy_on_threads(void **state)
{
    enum { T = 4, BIG = 90000 };
    trace_track_new(true);
    trace_defer(true);
    Trace *tr[T];
    for (int j = 0; j < T; j++)
        tr[j] = trace_new();
    trace_track_new(false);
    uint64_t id = 0;
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < T; j++) {
            int64_t n = round == 2 ? BIG : BIG / 2;
            BatchBuilder *bb = bb_new();
            for (int64_t i = 0; i < n; i++, id++) {
                uint8_t v[8];
                for (int b = 0; b < 8; b++)
                    v[b] = (uint8_t)(id >> (56 - 8 * b));
                bb_add(bb, (const uint8_t *)"k", 1, v, 8, 1);
            }
            trace_insert_take(tr[j], bb_finish(bb));
            trace_step_end(tr[j]);
        }
        trace_tidy_all(3);
        for (int j = 0; j < T; j++)
            assert_int_equal(trace_nbatches(tr[j]), 1); /* 45K; 45K + 45K; 90K + 90K */
    }
    int64_t sum = 0;
    for (int j = 0; j < T; j++) {
        Batch *all = trace_consolidate(tr[j]);
        assert_int_equal(all->n, BIG * 2);
        for (int64_t i = 1; i < all->n; i++)
            assert_true(memcmp(batch_val(all, i - 1), batch_val(all, i), 8) < 0);
        sum += all->n;
        batch_unref(all);
        trace_free(tr[j]);
    }
    assert_int_equal(sum, (int64_t)id);
    trace_defer(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_for_key_sums_equal_the_reference_integral),
        cmocka_unit_test(test_trace_consolidate_equals_the_reference),
        cmocka_unit_test(test_trace_keeps_a_logarithmic_number_of_batches),
        cmocka_unit_test(test_trace_of_a_batch_and_its_negation_is_empty),
        cmocka_unit_test(test_trace_spine_is_that_of_pairwise_merges),
        cmocka_unit_test(test_trace_runs_grow_geometrically_under_cancellation),
        cmocka_unit_test(test_trace_val_pointers_stay_valid_until_step_end),
        cmocka_unit_test(test_trace_deferred_merges_wait_for_tidy),
        cmocka_unit_test(test_trace_tidy_on_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/zset/test_spill_cache.c - the policy of the cache of spilled blocks
 * (zset/spill.c, "the cache"): what a least-recently-used list got wrong,
 * measured in hits.
 *
 *  - a loop: one lookup walks R spilled runs (one block each) of a trace,
 *    more blocks than the cache holds (C), and the next lookups walk the
 *    same ones in the same order. LRU evicts every block just before its
 *    next use: no hits at all. The cache must keep a fixed set of about C
 *    of them, so each lookup after the first two hits at least C - 1.
 *  - a scan: a small working set read again and again, then one pass over
 *    many blocks read once; the working set must still be cached after it
 *    (LRU: the scan flushed it).
 *  - and in both, the unpinned blocks never exceed the cache's bound, and
 *    the answers are the trace's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "storage/storage.h"
#include "zset/spill.h"
#include "zset/trace.h"

#define VAL_BYTES 120

/* A batch of one tuple: key "k", a value of VAL_BYTES bytes made from i. */
static Batch *one(int i)
{
    uint8_t v[VAL_BYTES];
    memset(v, 'a' + i % 26, sizeof(v));
    snprintf((char *)v, sizeof(v), "%06d", i);
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"k", 1, v, sizeof(v), 1);
    return bb_finish(bb);
}

static void count(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    (void)val;
    assert_int_equal(vn, VAL_BYTES);
    assert_int_equal(w, 1);
    ++*(int *)ctx;
}

/* A trace of n spilled runs of one block each (from, from+1, ...). */
static Trace *spilled_runs(int from, int n)
{
    trace_track_new(true);
    Trace *t = trace_new();
    trace_track_new(false);
    for (int i = 0; i < n; i++) {
        trace_insert_take(t, one(from + i));
        trace_step_end(t);
        Err err = {0};
        assert_int_equal(spill_enforce(0, NULL, &err), 0);
    }
    assert_int_equal(trace_nbatches(t), n);
    assert_int_equal(trace_resident_bytes(t), 0);
    return t;
}

/* Look k up in t once; returns the cache hits it had. */
static int64_t lookup(const Trace *t, int want, size_t bound)
{
    SpillStats a, b;
    spill_stats(&a);
    int got = 0;
    trace_for_key(t, (const uint8_t *)"k", 1, count, &got);
    spill_stats(&b);
    assert_int_equal(got, want);
    assert_true(b.cache_bytes <= bound);
    return b.hits - a.hits;
}

static char dir[64];

/* Set up a spill directory with a cache of c blocks of one()'s size. */
static size_t setup(int c)
{
    Batch *b = one(0);
    size_t blk = batch_bytes(b);
    batch_unref(b);
    snprintf(dir, sizeof(dir), "/tmp/sluice-test-cache-XXXXXX");
    assert_non_null(mkdtemp(dir));
    SpillConf conf = {.limit = 1,
                      .cache_bytes = (size_t)c * blk + blk / 2,
                      .block_bytes = 64,
                      .min_run = 0,
                      .merge = false};
    spill_store_setup(dir, 0, 1, &conf);
    return conf.cache_bytes;
}

static void teardown(void)
{
    spill_store_close();
    assert_int_equal(rmdir(dir), 0);
}

static void test_a_loop_over_more_blocks_than_the_cache_holds_still_hits(void **state)
{
    (void)state;
    const int C = 6, R = 16, PASSES = 12;
    size_t bound = setup(C);
    Trace *t = spilled_runs(0, R);
    int64_t hits = 0, late = 0, h[12], least = R;
    for (int p = 0; p < PASSES; p++) {
        h[p] = lookup(t, R, bound);
        hits += h[p];
        if (p >= 2) {
            late += h[p];
            least = h[p] < least ? h[p] : least;
        }
    }
    printf("loop of %d blocks, cache of %d: %lld hits in %d lookups (%lld of %d reads after "
           "the first two)\n",
           R, C, (long long)hits, PASSES, (long long)late, R * (PASSES - 2));
    trace_free(t);
    teardown();
    assert_true(least >= C - 1); /* LRU: 0 */
}

static void test_a_scan_does_not_flush_the_working_set(void **state)
{
    (void)state;
    const int C = 6, W = 3, S = 40;
    size_t bound = setup(C);
    Trace *ws = spilled_runs(0, W), *scan = spilled_runs(100, S);
    for (int p = 0; p < 4; p++)
        lookup(ws, W, bound);
    lookup(scan, S, bound); /* read once, never again */
    int64_t h = lookup(ws, W, bound);
    printf("working set of %d blocks after a scan of %d, cache of %d: %lld hits of %d\n", W, S,
           C, (long long)h, W);
    trace_free(ws);
    trace_free(scan);
    teardown();
    assert_int_equal(h, W); /* LRU: 0 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_loop_over_more_blocks_than_the_cache_holds_still_hits),
        cmocka_unit_test(test_a_scan_does_not_flush_the_working_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

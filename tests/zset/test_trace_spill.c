/*
 * tests/zset/test_trace_spill.c - a trace under a tiny memory budget (every
 * run spilled after every step, blocks of a few tuples so that runs of
 * equal keys cross block boundaries) answers exactly as the same trace
 * kept in memory: point lookups, cursors, checkpoint batches, rollback of
 * a step and the consolidated integral; the spill files are gone once the
 * traces are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "storage/storage.h"
#include "zset/spill.h"
#include "zset/trace.h"

#define ZT_SEED 0x2545F4914F6CDD1Dull
#define ZT_TUP_BYTES 16
#include "zset_test.h"

static Batch *random_batch(int n)
{
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < n; i++) {
        uint8_t k[4], v[3];
        size_t kn = 1 + rnd() % 3, vn = rnd() % 3;
        for (size_t j = 0; j < kn; j++)
            k[j] = (uint8_t)('a' + rnd() % 4);
        k[kn] = 0;
        for (size_t j = 0; j < vn; j++)
            v[j] = (uint8_t)('x' + rnd() % 2);
        v[vn] = 0;
        bb_add(bb, k, kn + 1, v, vn + 1, (int64_t)(rnd() % 5) - 2);
    }
    return bb_finish(bb);
}

/* Every key the generator makes, ascending. */
static int all_keys(uint8_t keys[][4], size_t *lens)
{
    int n = 0;
    for (int a = 0; a < 4; a++) {
        keys[n][0] = (uint8_t)('a' + a), keys[n][1] = 0, lens[n++] = 2;
        for (int b = 0; b < 4; b++) {
            keys[n][0] = (uint8_t)('a' + a), keys[n][1] = (uint8_t)('a' + b), keys[n][2] = 0;
            lens[n++] = 3;
            for (int c = 0; c < 4; c++) {
                keys[n][0] = (uint8_t)('a' + a), keys[n][1] = (uint8_t)('a' + b);
                keys[n][2] = (uint8_t)('a' + c), keys[n][3] = 0;
                lens[n++] = 4;
            }
        }
    }
    /* ascending: "a\0" < "aa\0" < "aaa\0" < "aab\0" ... as generated */
    return n;
}

typedef struct Acc {
    BatchBuilder *bb;
    const uint8_t *k;
    size_t kn;
} Acc;

static void acc_add(void *ctx, const uint8_t *val, size_t vn, int64_t w)
{
    Acc *a = ctx;
    bb_add(a->bb, a->k, a->kn, val, vn, w);
}

static void assert_same_batch(const Batch *x, const Batch *y)
{
    assert_int_equal(x->n, y->n);
    assert_int_equal(batch_off(x, x->n), batch_off(y, y->n));
    assert_memory_equal(x->data, y->data, batch_off(x, x->n));
    for (int64_t i = 0; i < x->n; i++) {
        assert_int_equal(x->w[i], y->w[i]);
        assert_int_equal(batch_klen(x, i), batch_klen(y, i));
    }
}

/* Every key looked up in t (point lookups, or one cursor), consolidated. */
static Batch *lookups(const Trace *t, bool cursor)
{
    static uint8_t keys[100][4];
    static size_t lens[100];
    int nk = all_keys(keys, lens);
    Acc a = {bb_new(), NULL, 0};
    TraceCursor *c = cursor ? trace_cursor_new(t) : NULL;
    for (int i = 0; i < nk; i++) {
        a.k = keys[i];
        a.kn = lens[i];
        if (c)
            trace_cursor_for_key(c, keys[i], lens[i], acc_add, &a);
        else
            trace_for_key(t, keys[i], lens[i], acc_add, &a);
    }
    trace_cursor_free(c);
    return bb_finish(a.bb);
}

/* The merge of every checkpoint batch of t. */
static Batch *saved(const Trace *t)
{
    Batch *acc = batch_empty();
    for (int i = 0; i < trace_nbatches(t); i++) {
        Batch *m = batch_merge(acc, trace_batch(t, i));
        batch_unref(acc);
        acc = m;
    }
    return acc;
}

typedef struct Scan {
    BatchBuilder *bb;
    uint8_t prev[256]; /* the previous tuple (key then value) */
    size_t prevn;
    bool any;
} Scan;

static void scan_add(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn,
                     int64_t w)
{
    Scan *x = ctx;
    uint8_t t[256];
    assert_true(kn + vn <= sizeof(t) && w != 0);
    memcpy(t, k, kn);
    memcpy(t + kn, v, vn);
    if (x->any) { /* strictly ascending: in tuple order, each once */
        size_t m = x->prevn < kn + vn ? x->prevn : kn + vn;
        int c = memcmp(x->prev, t, m);
        assert_true(c < 0 || (c == 0 && x->prevn < kn + vn));
    }
    memcpy(x->prev, t, kn + vn);
    x->prevn = kn + vn;
    x->any = true;
    bb_add(x->bb, k, kn, v, vn, w);
}

/* trace_scan's tuples. */
static Batch *scanned(const Trace *t)
{
    Scan x = {.bb = bb_new()};
    trace_scan(t, scan_add, &x);
    return bb_finish(x.bb);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += !strncmp(e->d_name, "run-", 4);
    closedir(d);
    return n;
}

/* merge: spilled runs are merged between steps (spill_compact). */
static void spilled_trace_answers_as_in_memory(bool merge)
{
    char dir[] = "/tmp/sluice-test-spill-XXXXXX";
    assert_non_null(mkdtemp(dir));
    SpillConf conf = {
        .limit = 1, .cache_bytes = 256, .block_bytes = 40, .min_run = 0, .merge = merge};
    int maxruns = 0;
    spill_store_setup(dir, 0, 1, &conf);
    trace_track_new(true);
    Trace *sp = trace_new();
    trace_track_new(false);
    Trace *mem = trace_new();
    for (int step = 0; step < 80; step++) {
        Batch *b = random_batch(1 + (int)(rnd() % 60));
        batch_ref(b);
        trace_insert_take(sp, b);
        trace_insert_take(mem, b);
        if (step % 2 == 0) { /* read during the step, before it ends */
            Batch *x = lookups(sp, step % 4 == 0), *y = lookups(mem, step % 4 == 0);
            assert_same_batch(x, y);
            batch_unref(x);
            batch_unref(y);
        }
        if (step % 5 == 4) {
            trace_rollback(sp);
            trace_rollback(mem);
        }
        trace_step_end(sp);
        trace_step_end(mem);
        Err err = {0};
        size_t moved;
        assert_int_equal(spill_enforce(0, &moved, &err), 0);
        assert_int_equal(trace_resident_bytes(sp), 0);
        int merged;
        assert_int_equal(spill_compact(&merged, &err), 0);
        assert_true(merge || merged == 0);
        if (trace_nbatches(sp) > maxruns)
            maxruns = trace_nbatches(sp);
        { /* one file per spilled run */
            SpillStats ls;
            spill_stats(&ls);
            assert_int_equal(count_files(spill_store_where()), ls.runs_live);
        }
        if (merge) { /* the spine's rule: sizes at least halve run to run */
            assert_true(trace_nbatches(sp) <= 12);
            SpillStats ss;
            spill_stats(&ss);
            assert_int_equal(ss.runs_live, trace_nbatches(sp));
        }
        for (int cur = 0; cur < 2; cur++) {
            Batch *x = lookups(sp, cur), *y = lookups(mem, cur);
            assert_same_batch(x, y);
            batch_unref(x);
            batch_unref(y);
        }
        if (step % 10 == 9) {
            Batch *x = saved(sp), *y = saved(mem);
            assert_same_batch(x, y);
            batch_unref(x);
            batch_unref(y);
        }
        if (step % 3 == 0) { /* the streaming scan, runs spilled or merged */
            Batch *x = scanned(sp), *y = saved(mem);
            assert_same_batch(x, y);
            batch_unref(x);
            batch_unref(y);
        }
        trace_step_end(sp);
        trace_step_end(mem);
    }
    if (!merge)
        assert_true(maxruns > 30); /* about one run per step */
    SpillStats st;
    spill_stats(&st);
    assert_true(merge ? st.runs_merged > 40 : st.runs_merged == 0);
    TraceMem m = {0};
    trace_mem(sp, &m);
    assert_true(m.disk_bytes > 0);
    assert_true(m.cache_misses > 0);
    assert_true(count_files(spill_store_where()) > 0);
    Batch *x = trace_consolidate(sp), *y = trace_consolidate(mem);
    assert_same_batch(x, y);
    batch_unref(x);
    batch_unref(y);
    trace_free(sp);
    trace_free(mem);
    SpillStats ss;
    spill_stats(&ss);
    assert_int_equal(ss.disk_bytes, 0);
    char sdir[4200];
    snprintf(sdir, sizeof(sdir), "%s", spill_store_where());
    assert_int_equal(count_files(sdir), 0);
    spill_store_close();
    assert_int_equal(rmdir(dir), 0); /* the spill directory went with it */
}

static void test_spilled_trace_answers_as_in_memory(void **state)
{
    (void)state;
    spilled_trace_answers_as_in_memory(false);
}

static void test_merged_spilled_runs_answer_as_in_memory(void **state)
{
    (void)state;
    spilled_trace_answers_as_in_memory(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spilled_trace_answers_as_in_memory),
        cmocka_unit_test(test_merged_spilled_runs_answer_as_in_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

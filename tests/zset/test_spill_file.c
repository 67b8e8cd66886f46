/*
 * tests/zset/test_spill_file.c - a spilled run is one file (zset/spill.c,
 * storage/spill.c): its blocks lie end to end in it, each read back by its
 * offset, checksum verified.
 *
 *  - a run of many blocks (uniform tuples and tuples of varying length)
 *    makes exactly one file; every block read back (through the cache and
 *    straight from the file, by a merge) is the slice of the batch it was
 *    cut from; a merge of such runs makes one file more, and dropping the
 *    runs removes their files;
 *  - reads across the cache: a cache holding the whole run serves a second
 *    pass over it from memory, one holding two blocks serves it from the
 *    file again, and the answers are the same;
 *  - a batch in memory merged straight into spilled runs (a run that
 *    would complete a tier: trace.c) is their sum, in one new file;
 *  - a damaged byte in the middle of one block (the others intact): reading
 *    that block fails with a message naming the file, the offset and the
 *    checksum mismatch; the blocks before it still read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/mem.h"
#include "storage/storage.h"
#include "zset/spill.h"

/* A sorted batch of n tuples: key i (big-endian, so in order), value of
   vn bytes (vn < 0: a length that varies with i). */
static Batch *make(int n, int vn)
{
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < n; i++) {
        uint8_t k[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
        uint8_t v[64];
        int len = vn >= 0 ? vn : 1 + i % 37;
        for (int j = 0; j < len; j++)
            v[j] = (uint8_t)(i * 7 + j);
        bb_add(bb, k, sizeof(k), v, (size_t)len, 1 + i % 3);
    }
    return bb_finish(bb);
}

static void assert_same(const Batch *x, const Batch *y)
{
    assert_int_equal(x->n, y->n);
    for (int64_t i = 0; i < x->n; i++) {
        assert_int_equal(batch_tlen(x, i), batch_tlen(y, i));
        assert_int_equal(batch_klen(x, i), batch_klen(y, i));
        assert_memory_equal(batch_key(x, i), batch_key(y, i), batch_tlen(x, i));
        assert_int_equal(x->w[i], y->w[i]);
    }
}

static int count_runs(const char *dir)
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

static char dir[64];

static void setup(size_t block, size_t cache)
{
    snprintf(dir, sizeof(dir), "/tmp/sluice-test-spillfile-XXXXXX");
    assert_non_null(mkdtemp(dir));
    SpillConf conf = {
        .limit = 1, .cache_bytes = cache, .block_bytes = block, .min_run = 0, .merge = true};
    spill_store_setup(dir, 0, 1, &conf);
}

static void teardown(void)
{
    spill_store_close();
    assert_int_equal(rmdir(dir), 0);
}

/* Block i of s, pinned and compared with the slice of b it holds. */
static void check_block(const Spilled *s, int i, const Batch *b, int64_t from, bool *hit)
{
    const Batch *bk = spill_pin(s, i, hit);
    assert_int_equal(bk->n, s->blk[i].n);
    Batch *want = batch_slice(b, from, from + bk->n);
    assert_same(bk, want);
    batch_unref(want);
    spill_unpin(s, i);
}

static void run_of_many_blocks(int vn)
{
    setup(1024, 1024);
    Batch *b = make(5000, vn);
    Err err = {0};
    Spilled *s;
    assert_int_equal(spill_write(b, &s, &err), 0);
    assert_true(s->nblocks > 50);
    assert_int_equal(s->n, b->n);
    assert_int_equal(count_runs(spill_store_where()), 1);
    /* blocks end to end: each starts where the one before ended */
    for (int i = 1; i < s->nblocks; i++)
        assert_int_equal(s->blk[i].off, s->blk[i - 1].off + s->blk[i - 1].disk);
    int64_t from = 0;
    for (int i = s->nblocks - 1; i >= 0; i--) /* backwards: offsets, not a cursor */
        from += s->blk[i].n;
    assert_int_equal(from, b->n);
    from = b->n;
    for (int i = s->nblocks - 1; i >= 0; i--) {
        from -= s->blk[i].n;
        bool hit;
        check_block(s, i, b, from, &hit);
    }
    Batch *all = spilled_load(s);
    assert_same(all, b);
    batch_unref(all);
    /* a merge of two such runs: one file more; its inputs' files go with them */
    Spilled *s2, *m;
    assert_int_equal(spill_write(b, &s2, &err), 0);
    assert_int_equal(count_runs(spill_store_where()), 2);
    Spilled *in[2] = {s, s2};
    assert_int_equal(spill_merge(in, 2, &m, &err), 0);
    assert_int_equal(count_runs(spill_store_where()), 3);
    spilled_unref(s);
    spilled_unref(s2);
    assert_int_equal(count_runs(spill_store_where()), 1);
    Batch *twice = batch_merge(b, b), *got = spilled_load(m);
    assert_same(got, twice);
    batch_unref(got);
    batch_unref(twice);
    spilled_unref(m);
    assert_int_equal(count_runs(spill_store_where()), 0);
    batch_unref(b);
    teardown();
}

static void test_a_run_of_many_blocks_is_one_file(void **state)
{
    (void)state;
    run_of_many_blocks(12); /* uniform tuples */
    run_of_many_blocks(-1); /* lengths that vary */
}

static void test_reads_across_the_cache(void **state)
{
    (void)state;
    for (int big = 0; big < 2; big++) {
        setup(2048, big ? 1u << 20 : 4096);
        Batch *b = make(4000, -1);
        Err err = {0};
        Spilled *s;
        assert_int_equal(spill_write(b, &s, &err), 0);
        assert_true(s->nblocks > 10);
        SpillStats a, z;
        spill_stats(&a);
        int hits = 0;
        for (int pass = 0; pass < 2; pass++) {
            int64_t from = 0;
            for (int i = 0; i < s->nblocks; i++) {
                bool hit;
                check_block(s, i, b, from, &hit);
                hits += hit && pass == 1;
                from += s->blk[i].n;
            }
        }
        spill_stats(&z);
        assert_int_equal(z.hits + z.misses - a.hits - a.misses, 2 * s->nblocks);
        if (big) /* the second pass from memory */
            assert_int_equal(hits, s->nblocks);
        else /* a cache of two blocks: the file again, a hit at most for the last ones */
            assert_true(hits <= 2);
        assert_true(z.cache_bytes <= (big ? 1u << 20 : 4096));
        spilled_unref(s);
        batch_unref(b);
        teardown();
    }
}

/* A batch in memory merged straight with spilled runs: one new file, the
   sum of all, counted as a run spilled and two merges. */
static void test_a_batch_merges_straight_into_spilled_runs(void **state)
{
    (void)state;
    setup(1024, 1024);
    Batch *a = make(3000, 12), *b = make(2000, 12), *c = make(4000, -1);
    Err err = {0};
    Spilled *sa, *sb, *m;
    assert_int_equal(spill_write(a, &sa, &err), 0);
    assert_int_equal(spill_write(b, &sb, &err), 0);
    SpillStats s0, s1;
    spill_stats(&s0);
    Spilled *in[2] = {sa, sb};
    assert_int_equal(spill_merge_batch(c, in, 2, &m, &err), 0);
    spill_stats(&s1);
    assert_int_equal(s1.runs_spilled, s0.runs_spilled + 1);
    assert_int_equal(s1.runs_merged, s0.runs_merged + 2);
    assert_int_equal(count_runs(spill_store_where()), 3);
    spilled_unref(sa);
    spilled_unref(sb);
    assert_int_equal(count_runs(spill_store_where()), 1);
    Batch *ab = batch_merge(a, b), *want = batch_merge(ab, c), *got = spilled_load(m);
    assert_same(got, want);
    batch_unref(ab);
    batch_unref(want);
    batch_unref(got);
    spilled_unref(m);
    batch_unref(a);
    batch_unref(b);
    batch_unref(c);
    teardown();
}

static jmp_buf on_error;
static char error_msg[512];

static void read_error(const char *msg)
{
    snprintf(error_msg, sizeof(error_msg), "%s", msg);
    longjmp(on_error, 1);
}

static void test_a_damaged_block_fails_naming_the_file_and_offset(void **state)
{
    (void)state;
    setup(1024, 1024);
    Batch *b = make(3000, 12);
    Err err = {0};
    Spilled *s;
    assert_int_equal(spill_write(b, &s, &err), 0);
    int bad = s->nblocks / 2;
    assert_true(bad > 2);
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", spill_store_where(), s->name);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t at = (off_t)(s->blk[bad].off + s->blk[bad].disk / 2);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
    spill_on_read_error(read_error);
    int64_t from = 0;
    for (int i = 0; i < bad; i++) { /* the blocks before it are intact */
        bool hit;
        check_block(s, i, b, from, &hit);
        from += s->blk[i].n;
    }
    volatile bool failed = false;
    if (setjmp(on_error) == 0) {
        bool hit;
        spill_pin(s, bad, &hit);
    } else {
        failed = true;
    }
    spill_on_read_error(NULL);
    assert_true(failed);
    char want[128];
    snprintf(want, sizeof(want), "spilled trace block %s@%llu cannot be read back", s->name,
             (unsigned long long)s->blk[bad].off);
    assert_non_null(strstr(error_msg, want));
    snprintf(want, sizeof(want), "%s at offset %llu is corrupt: checksum mismatch", s->name,
             (unsigned long long)s->blk[bad].off);
    assert_non_null(strstr(error_msg, want));
    spilled_unref(s);
    batch_unref(b);
    teardown();
}

static void test_block_codecs_round_trip(void **state)
{
    (void)state;
    for (int vn = -1; vn <= 12; vn += 13) {
        Batch *b = make(5000, vn);
        for (int lz4 = 0; lz4 < 2; lz4++) {
            StoreCodec c = {.level = -3, .lz4 = lz4};
            Err err = {0};
            uint8_t *f;
            size_t fn;
            assert_int_equal(store_encode_batch(b, &c, &f, &fn, &err), 0);
            uint32_t flags;
            memcpy(&flags, f + 12, 4);
            assert_int_equal(!!(flags & STORE_FLAG_LZ4), lz4);
            assert_true(fn < batch_bytes(b)); /* it compresses */
            Batch *back;
            assert_int_equal(store_decode_batch("blk", f, fn, &c, &back, &err), 0);
            assert_same(b, back);
            batch_unref(back);
            if (lz4) { /* cut the payload short, the checksum recomputed */
                size_t cut = fn - 8 - 16;
                uint64_t h = XXH64(f, cut, 0);
                memcpy(f + cut, &h, 8);
                assert_int_not_equal(store_decode_batch("blk", f, cut + 8, &c, &back, &err), 0);
                assert_non_null(strstr(err.msg, "blk is corrupt"));
            }
            sl_free(f);
            store_codec_free(&c);
        }
        batch_unref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_run_of_many_blocks_is_one_file),
        cmocka_unit_test(test_reads_across_the_cache),
        cmocka_unit_test(test_a_batch_merges_straight_into_spilled_runs),
        cmocka_unit_test(test_a_damaged_block_fails_naming_the_file_and_offset),
        cmocka_unit_test(test_block_codecs_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

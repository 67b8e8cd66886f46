/*
 * tests/base/test_mem_big.c - large blocks (base/mem.h): a freed block's
 * pages are taken again (cut, or grown with its bytes kept), a block
 * larger than any pooled piece is spliced from several (only the rest is
 * fresh pages), a spliced block's pieces go back to the pool one by one,
 * pooled pieces age out after four ticks, trim empties the pool, and with
 * the pool off (AddressSanitizer's default) the blocks are malloc's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/mem.h"

#define MB ((size_t)1 << 20)

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (uint8_t)(seed + i / 4096);
}

static bool same(const uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != (uint8_t)(seed + i / 4096))
            return false;
    return true;
}

static void test_freed_pages_are_taken_again(void **state)
{
    (void)state;
    mem_big_use_pool(true);
    mem_big_trim();
    uint8_t *a = mem_big_alloc(3 * MB);
    fill(a, 3 * MB, 1);
    mem_big_free(a);
    assert_true(mem_big_pooled() >= 3 * MB);
    /* a smaller block is the same mapping's head; its tail stays pooled */
    uint8_t *b = mem_big_alloc(2 * MB);
    assert_ptr_equal(b, a);
    assert_true(mem_big_pooled() > 0 && mem_big_pooled() < 2 * MB);
    fill(b, 2 * MB, 7);
    mem_big_free(b);
    /* a larger one grows the largest pooled mapping */
    uint8_t *c = mem_big_alloc(8 * MB);
    fill(c, 8 * MB, 9);
    assert_true(same(c, 8 * MB, 9));
    mem_big_free(c);
    mem_big_trim();
    assert_int_equal(mem_big_pooled(), 0);
    mem_big_use_pool(false);
}

static void test_realloc_keeps_the_bytes(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        mem_big_use_pool(on);
        uint8_t *p = mem_big_alloc(2 * MB);
        fill(p, 2 * MB, 3);
        p = mem_big_realloc(p, 6 * MB);
        assert_true(same(p, 2 * MB, 3));
        fill(p, 6 * MB, 4);
        p = mem_big_realloc(p, MB + 123);
        assert_true(same(p, MB + 123, 4));
        if (on)
            assert_true(mem_big_pooled() >= 4 * MB); /* the cut tail */
        mem_big_free(p);
        mem_big_trim();
        assert_int_equal(mem_big_pooled(), 0);
    }
    mem_big_use_pool(false);
}

static void test_pooled_blocks_age_out(void **state)
{
    (void)state;
    mem_big_use_pool(true);
    mem_big_trim();
    mem_big_free(mem_big_alloc(MB));
    size_t pooled = mem_big_pooled();
    assert_true(pooled >= MB);
    for (int t = 0; t < 3; t++) {
        mem_big_tick();
        assert_int_equal(mem_big_pooled(), pooled);
    }
    mem_big_tick();
    assert_int_equal(mem_big_pooled(), 0);
    /* a full pool gives its oldest mapping back */
    uint8_t *p[80];
    for (int i = 0; i < 80; i++)
        p[i] = mem_big_alloc(MB);
    for (int i = 0; i < 80; i++)
        mem_big_free(p[i]);
    assert_true(mem_big_pooled() <= 64 * (MB + 4096));
    mem_big_trim();
    assert_int_equal(mem_big_pooled(), 0);
    mem_big_use_pool(false);
}

/* Pieces of 3, 5 and 2 MB pooled: an 11 MB block is spliced from all
   three (largest first) and 1 MB of fresh pages, and writes through to
   every piece; freed, its four pieces are pooled. */
static void test_splice_takes_every_pooled_piece(void **state)
{
    (void)state;
    mem_big_use_pool(true);
    mem_big_trim();
    uint8_t *a = mem_big_alloc(3 * MB), *b = mem_big_alloc(5 * MB), *c = mem_big_alloc(2 * MB);
    fill(a, 3 * MB, 1);
    fill(b, 5 * MB, 2);
    fill(c, 2 * MB, 3);
    mem_big_free(a);
    mem_big_free(b);
    mem_big_free(c);
    size_t pooled = mem_big_pooled(), fresh = mem_big_fresh();
    assert_true(pooled >= 10 * MB);
    uint8_t *d = mem_big_alloc(11 * MB);
    assert_int_equal(mem_big_pieces(d), 4);
    assert_int_equal(mem_big_pooled(), 0);
    /* only what the pool lacked is fresh */
    assert_true(mem_big_fresh() - fresh <= 11 * MB + 4096 - pooled);
    /* the largest piece (b's pages) comes first, its bytes kept */
    assert_true(same(d, 5 * MB - 4096, 2));
    fill(d, 11 * MB, 5);
    assert_true(same(d, 11 * MB, 5));
    /* cut inside the third piece: the pieces past the cut are pooled */
    d = mem_big_realloc(d, 9 * MB);
    assert_int_equal(mem_big_pieces(d), 3);
    assert_true(same(d, 9 * MB, 5));
    assert_true(mem_big_pooled() >= 2 * MB);
    /* grown past its pieces: copied, the bytes kept */
    d = mem_big_realloc(d, 14 * MB);
    assert_true(same(d, 9 * MB, 5));
    fill(d, 14 * MB, 6);
    assert_true(same(d, 14 * MB, 6));
    mem_big_free(d);
    assert_true(mem_big_pooled() >= 14 * MB);
    /* the pooled pieces are taken again, each a mapping of its own */
    uint8_t *e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = mem_big_alloc(MB);
        fill(e[i], MB, (uint8_t)(10 + i));
    }
    for (int i = 0; i < 4; i++) {
        assert_true(same(e[i], MB, (uint8_t)(10 + i)));
        mem_big_free(e[i]);
    }
    mem_big_trim();
    assert_int_equal(mem_big_pooled(), 0);
    mem_big_use_pool(false);
}

/* Many blocks of varied sizes allocated, cut, grown and freed in a
   shuffled order against the pool: every block keeps its bytes (a piece
   moved or pooled twice would show in another block's bytes). */
static void test_pool_random(void **state)
{
    (void)state;
    mem_big_use_pool(true);
    mem_big_trim();
    enum { N = 12 };
    uint8_t *blk[N] = {0};
    size_t len[N] = {0};
    uint64_t r = 42;
    for (int round = 0; round < 400; round++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((r >> 33) % N);
        size_t n = MB + (size_t)((r >> 13) % (6 * MB));
        uint8_t seed = (uint8_t)(r >> 50);
        if (!blk[i]) {
            blk[i] = mem_big_alloc(n);
            len[i] = n;
        } else if ((r >> 40) % 3 == 0) {
            assert_true(same(blk[i], len[i], (uint8_t)(i * 16)));
            mem_big_free(blk[i]);
            blk[i] = NULL;
            continue;
        } else {
            assert_true(same(blk[i], len[i], (uint8_t)(i * 16)));
            blk[i] = mem_big_realloc(blk[i], n);
            assert_true(same(blk[i], len[i] < n ? len[i] : n, (uint8_t)(i * 16)));
            len[i] = n;
        }
        (void)seed;
        fill(blk[i], len[i], (uint8_t)(i * 16));
        if (round % 50 == 49)
            mem_big_tick();
    }
    for (int i = 0; i < N; i++)
        if (blk[i]) {
            assert_true(same(blk[i], len[i], (uint8_t)(i * 16)));
            mem_big_free(blk[i]);
        }
    mem_big_trim();
    assert_int_equal(mem_big_pooled(), 0);
    mem_big_use_pool(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_pages_are_taken_again),
        cmocka_unit_test(test_realloc_keeps_the_bytes),
        cmocka_unit_test(test_pooled_blocks_age_out),
        cmocka_unit_test(test_splice_takes_every_pooled_piece),
        cmocka_unit_test(test_pool_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

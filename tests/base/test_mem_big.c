/*
 * tests/base/test_mem_big.c - large blocks (base/mem.h): a freed block's
 * pages are taken again (cut, or grown with its bytes kept), pooled blocks
 * age out after four ticks, trim empties the pool, and with the pool off
 * (AddressSanitizer's default) the blocks are malloc's.
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
    uint8_t *p[20];
    for (int i = 0; i < 20; i++)
        p[i] = mem_big_alloc(MB);
    for (int i = 0; i < 20; i++)
        mem_big_free(p[i]);
    assert_true(mem_big_pooled() <= 16 * (MB + 4096));
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

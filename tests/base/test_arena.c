/*
 * tests/base/test_arena.c - the bump allocator: alignment, large requests,
 * and reuse of its blocks after a reset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"

static void test_arena_allocations_are_aligned_and_disjoint(void **state)
{
    (void)state;
    Arena *a = arena_new(1024);
    uint8_t *prev = NULL;
    for (int i = 1; i < 2000; i += 7) {
        uint8_t *p = arena_alloc(a, (size_t)i);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 0xab, (size_t)i); /* ASan catches overlap/overflow */
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    arena_free(a);
}

static void test_arena_reset_reuses_blocks_of_the_largest_step(void **state)
{
    (void)state;
    Arena *a = arena_new(4096);
    uint8_t *big = arena_alloc(a, 1 << 20);
    memset(big, 1, 1 << 20);
    arena_reset(a);
    assert_int_equal(arena_used(a), 0);
    uint8_t *again = arena_alloc(a, 1 << 20);
    /* the 1 MiB block is reused rather than allocated anew */
    assert_ptr_equal(again, big);
    for (int round = 0; round < 50; round++) {
        arena_reset(a);
        for (int i = 0; i < 100; i++)
            memset(arena_alloc(a, 10000), round, 10000);
        char *s = arena_strndup(a, "hello", 5);
        assert_string_equal(s, "hello");
    }
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_allocations_are_aligned_and_disjoint),
        cmocka_unit_test(test_arena_reset_reuses_blocks_of_the_largest_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

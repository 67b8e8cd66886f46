/*
 * tests/base/test_arena.c - the bump allocator: alignment, large requests,
 * reuse of its blocks after a reset, and arenas lent to other threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
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

/* Blocks lent by arena_borrow come back with arena_adopt: what the
   borrower wrote lives until the parent's reset, and the blocks circulate
   (round after round the same memory, no growth). */
static void test_arena_borrow_adopt_keeps_data_and_recycles_blocks(void **state)
{
    (void)state;
    Arena *a = arena_new(4096);
    uint8_t *bigs[8];
    int nbig = 0;
    for (int round = 0; round < 20; round++) {
        arena_reset(a);
        Arena *kid[3];
        for (int k = 0; k < 3; k++)
            kid[k] = arena_borrow(a, 64 << 10);
        char *s[3];
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 8; i++)
                memset(arena_alloc(kid[k], 7000), k, 7000);
            s[k] = arena_strndup(kid[k], "kid", 3);
        }
        uint8_t *mine = arena_alloc(a, 100);
        memset(mine, 9, 100);
        for (int k = 0; k < 3; k++)
            arena_adopt(a, kid[k]);
        assert_true(arena_used(a) >= 3 * 8 * 7000);
        for (int k = 0; k < 3; k++)
            assert_string_equal(s[k], "kid");
        uint8_t *big = arena_alloc(a, 1 << 20);
        memset(big, round, 1 << 20);
        /* the blocks circulate: a bounded set of big blocks (a borrower may take one) */
        bool seen = false;
        for (int i = 0; i < nbig; i++)
            seen |= bigs[i] == big;
        if (!seen) {
            assert_true(nbig < 8);
            bigs[nbig++] = big;
        }
    }
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_allocations_are_aligned_and_disjoint),
        cmocka_unit_test(test_arena_reset_reuses_blocks_of_the_largest_step),
        cmocka_unit_test(test_arena_borrow_adopt_keeps_data_and_recycles_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

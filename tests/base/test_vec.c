/*
 * tests/base/test_vec.c - the growable-array macros: pushes keep every
 * element, capacities double, arena arrays copy what they held, and every
 * integer type works as count and capacity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/vec.h"

static void test_vec_push_keeps_every_element_in_order(void **state)
{
    (void)state;
    int64_t *v = NULL;
    int n = 0, cap = 0;
    for (int64_t i = 0; i < 100000; i++)
        *VEC_PUSH(v, n, cap) = i * 3;
    assert_int_equal(n, 100000);
    assert_true(cap >= n);
    for (int i = 0; i < n; i++)
        assert_int_equal(v[i], (int64_t)i * 3);
    sl_free(v);
}

static void test_vec_capacity_doubles_from_a_first_size(void **state)
{
    (void)state;
    char *v = NULL;
    size_t n = 0, cap = 0;
    *VEC_PUSH(v, n, cap) = 'a';
    assert_int_equal(cap, 256); /* small elements: 256 bytes first */
    VEC_RESERVE(v, cap, 257);
    assert_int_equal(cap, 512);
    VEC_RESERVE(v, cap, 10);    /* never shrinks */
    assert_int_equal(cap, 512);
    VEC_RESERVE(v, cap, 5000);
    assert_int_equal(cap, 8192);
    assert_int_equal(v[0], 'a');
    sl_free(v);

    struct Big { char x[100]; } *b = NULL;
    int64_t nb = 0, capb = 0;
    VEC_PUSH(b, nb, capb)->x[0] = 1;
    assert_int_equal(capb, 16);
    sl_free(b);
}

static void test_vec_arena_arrays_copy_what_they_held(void **state)
{
    (void)state;
    Arena *a = arena_new(4096);
    const char **v = NULL;
    int n = 0, cap = 0;
    static const char *words[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 1000; i++)
        *VEC_PUSH_ARENA(a, v, n, cap) = words[i % 3];
    assert_int_equal(n, 1000);
    for (int i = 0; i < n; i++)
        assert_string_equal(v[i], words[i % 3]);
    arena_free(a);
}

static void test_vec_next_cap_stops_at_the_capacity_type_limit(void **state)
{
    (void)state;
    assert_int_equal(vec_next_cap(0, 1, 16, 100), 16);
    assert_int_equal(vec_next_cap(64, 65, 16, 100), 100);
    assert_int_equal(vec_next_cap(0, 3, 0, 100), 4);
    int8_t c8 = 0;
    assert_int_equal(VEC_TYPE_MAX_(c8), 127);
    uint16_t c16 = 0;
    assert_int_equal(VEC_TYPE_MAX_(c16), 65535);
    int c32 = 0;
    assert_int_equal(VEC_TYPE_MAX_(c32), INT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vec_push_keeps_every_element_in_order),
        cmocka_unit_test(test_vec_capacity_doubles_from_a_first_size),
        cmocka_unit_test(test_vec_arena_arrays_copy_what_they_held),
        cmocka_unit_test(test_vec_next_cap_stops_at_the_capacity_type_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

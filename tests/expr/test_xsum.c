/*
 * tests/expr/test_xsum.c - exact double sums: the result is the correctly
 * rounded exact sum, whatever the order and however the additions are
 * split and merged, and deletions cancel exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "expr/xsum.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double random_double(void)
{
    /* wide range of magnitudes and signs */
    double m = (double)(next() >> 11) / 9007199254740992.0;
    int e = (int)(next() % 200) - 100;
    return ((next() & 1) ? -1 : 1) * ldexp(m, e);
}

static void test_xsum_is_exact_where_double_addition_is_not(void **state)
{
    (void)state;
    XSum s;
    memset(&s, 0, sizeof(s));
    xsum_add(&s, 1e308, 1);
    xsum_add(&s, 1.0, 1);
    xsum_add(&s, -1e308, 1);
    assert_true(xsum_value(&s) == 1.0);
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 10; i++)
        xsum_add(&s, 0.1, 1);
    /* the exact sum of ten copies of the double nearest 0.1, rounded once */
    assert_true(xsum_value(&s) == 1.0000000000000000555 || xsum_value(&s) == 1.0);
    xsum_add(&s, 0.1, -10);
    assert_true(xsum_value(&s) == 0.0);
}

static void test_xsum_result_is_independent_of_order_and_merging(void **state)
{
    (void)state;
    enum { N = 5000 };
    static double v[N];
    static int64_t w[N];
    for (int i = 0; i < N; i++) {
        v[i] = random_double();
        w[i] = (int64_t)(next() % 7) - 3;
    }
    XSum a;
    memset(&a, 0, sizeof(a));
    for (int i = 0; i < N; i++)
        xsum_add(&a, v[i], w[i]);
    double ref = xsum_value(&a);
    for (int round = 0; round < 5; round++) {
        /* shuffle, split into parts summed separately, then merge */
        for (int i = N - 1; i > 0; i--) {
            int j = (int)(next() % (uint64_t)(i + 1));
            double tv = v[i];
            int64_t tw = w[i];
            v[i] = v[j], w[i] = w[j];
            v[j] = tv, w[j] = tw;
        }
        XSum parts[4], total;
        memset(parts, 0, sizeof(parts));
        memset(&total, 0, sizeof(total));
        for (int i = 0; i < N; i++)
            xsum_add(&parts[next() % 4], v[i], w[i]);
        for (int k = 0; k < 4; k++)
            xsum_merge(&total, &parts[k]);
        assert_true(xsum_value(&total) == ref);
    }
    /* deleting everything leaves exactly zero */
    for (int i = 0; i < N; i++)
        xsum_add(&a, v[i], -w[i]);
    assert_true(xsum_value(&a) == 0.0);
}

static void test_xsum_counts_nan_and_infinities_and_retracts_them(void **state)
{
    (void)state;
    XSum s;
    memset(&s, 0, sizeof(s));
    xsum_add(&s, 2.5, 1);
    xsum_add(&s, INFINITY, 1);
    assert_true(isinf(xsum_value(&s)) && xsum_value(&s) > 0);
    xsum_add(&s, -INFINITY, 1);
    assert_true(isnan(xsum_value(&s)));
    xsum_add(&s, INFINITY, -1);
    xsum_add(&s, -INFINITY, -1);
    assert_true(xsum_value(&s) == 2.5);
    xsum_add(&s, NAN, 2);
    assert_true(isnan(xsum_value(&s)));
    xsum_add(&s, NAN, -2);
    assert_true(xsum_value(&s) == 2.5);
}

static void test_xsum_survives_many_additions_and_huge_weights(void **state)
{
    (void)state;
    XSum s;
    memset(&s, 0, sizeof(s));
    xsum_add(&s, 1.5, INT64_C(1) << 40);
    xsum_add(&s, -0.75, INT64_C(1) << 41);
    assert_true(xsum_value(&s) == 0.0);
    for (int i = 0; i < 3000000; i++)
        xsum_add(&s, 1.0, 1);
    assert_true(xsum_value(&s) == 3000000.0);
    xsum_add(&s, 4.9e-324, 3); /* subnormals */
    xsum_add(&s, -3000000.0, 1);
    assert_true(xsum_value(&s) == 3 * 4.9e-324);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xsum_is_exact_where_double_addition_is_not),
        cmocka_unit_test(test_xsum_result_is_independent_of_order_and_merging),
        cmocka_unit_test(test_xsum_counts_nan_and_infinities_and_retracts_them),
        cmocka_unit_test(test_xsum_survives_many_additions_and_huge_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/base/test_wire.c - the binary record readers of base/wire.h: short
 * reads mark the reader bad and yield zeros; counts that the rest of the
 * record cannot hold (or negative ones) are refused before anyone sizes an
 * allocation by them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/wire.h"

static void test_values_read_back_in_order_and_a_short_read_marks_bad(void **state)
{
    (void)state;
    Buf b = BUF_INIT;
    put32(&b, -7);
    put64(&b, INT64_MAX);
    Rd r = {b.p, b.p + b.n, false};
    assert_int_equal(rd32(&r), -7);
    assert_true(rd64(&r) == INT64_MAX);
    assert_false(r.bad);
    assert_int_equal(rd32(&r), 0);
    assert_true(r.bad);
    buf_free(&b);
}

static void test_a_count_the_record_can_hold_is_accepted(void **state)
{
    (void)state;
    Buf b = BUF_INIT;
    put64(&b, 2);
    put64(&b, 10);
    put64(&b, 20);
    put32(&b, 3);
    Rd r = {b.p, b.p + b.n - 4, false};
    assert_int_equal(rd_count64(&r, 8), 2);
    assert_false(r.bad);
    Rd z = {b.p + 24, b.p + b.n, false};
    assert_int_equal(rd_count32(&z, 0), 3); /* min_item 0: any non-negative count */
    assert_false(z.bad);
    buf_free(&b);
}

static void test_a_count_larger_than_the_rest_or_negative_is_refused(void **state)
{
    (void)state;
    Buf b = BUF_INIT;
    put64(&b, 3); /* three 8-byte items, but only two follow */
    put64(&b, 10);
    put64(&b, 20);
    Rd r = {b.p, b.p + b.n, false};
    assert_int_equal(rd_count64(&r, 8), 0);
    assert_true(r.bad);
    buf_reset(&b);
    put32(&b, -1);
    Rd n = {b.p, b.p + b.n, false};
    assert_int_equal(rd_count32(&n, 0), 0);
    assert_true(n.bad);
    buf_reset(&b);
    put64(&b, INT64_MAX); /* no multiplication overflow */
    put64(&b, 0);
    Rd h = {b.p, b.p + b.n, false};
    assert_int_equal(rd_count64(&h, 16), 0);
    assert_true(h.bad);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_read_back_in_order_and_a_short_read_marks_bad),
        cmocka_unit_test(test_a_count_the_record_can_hold_is_accepted),
        cmocka_unit_test(test_a_count_larger_than_the_rest_or_negative_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

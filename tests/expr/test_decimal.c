/*
 * tests/expr/test_decimal.c - exact DECIMAL: text in and out at any
 * precision up to 38 (rounding half away from zero, integer-digit
 * overflow an error), and the 128-bit kernels of expr/eval_dec.c (+ - * /
 * % at the edges of 10^38, rescaling products formed in 256 bits, casts,
 * comparisons across widths and scales). Expected values were computed
 * with Python's decimal module (ROUND_HALF_UP for input and products,
 * truncation toward zero for division, as docs/sql.md says).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "expr_test.h"

static SqlType D(int p, int s)
{
    SqlType t = type_make(TK_DECIMAL, false);
    t.prec = (uint8_t)p;
    t.scale = (uint8_t)s;
    return t;
}

/* A DECIMAL(p,s) constant from its text (the test fails if it does not
   parse). */
static Expr *dc(int p, int s, const char *text)
{
    i128 v;
    Err e = {0};
    assert_int_equal(text_parse_dec(D(p, s), text, strlen(text), &v, &e), 0);
    return expr_const_dec(A, D(p, s), v);
}

static Expr *bin(ExprKind k, SqlType t, Expr *a, Expr *b)
{
    Expr *e = expr_new(A, k, t, 2);
    e->a[0] = a;
    e->a[1] = b;
    return e;
}

static Expr *cast_to(SqlType t, Expr *a)
{
    Expr *e = expr_new(A, E_CAST, t, 1);
    e->a[0] = a;
    return e;
}

/* Evaluate e over one row; returns its text ("NULL", or "ERROR: msg"). */
static const char *eval_text(Expr *e)
{
    static char out[1100];
    Chunk *c = chunk_new(A, 0, NULL, 1);
    c->n = 1;
    Vec v;
    err_clear(&err);
    if (expr_eval(e, c, NULL, 1, &cx, &v)) {
        snprintf(out, sizeof(out), "ERROR: %s", err.msg);
        return out;
    }
    Buf b = BUF_INIT;
    if (!text_format_vec(&v, 0, &b))
        buf_puts(&b, "NULL");
    snprintf(out, sizeof(out), "%s", buf_cstr(&b));
    buf_free(&b);
    return out;
}

/* text parsed as DECIMAL(p,s) and printed back ("ERROR: ..." on failure). */
static const char *round_trip(int p, int s, const char *text)
{
    static char out[1100];
    i128 v;
    Err e = {0};
    if (text_parse_dec(D(p, s), text, strlen(text), &v, &e)) {
        snprintf(out, sizeof(out), "ERROR: %s", e.msg);
        return out;
    }
    Buf b = BUF_INIT;
    text_format_dec(v, s, &b);
    snprintf(out, sizeof(out), "%s", buf_cstr(&b));
    buf_free(&b);
    return out;
}

#define NINES38 "99999999999999999999999999999999999999"

static void test_decimal_input_rounds_extra_fraction_digits_half_away_from_zero(void **state)
{
    assert_string_equal(round_trip(38, 18, "0.05"), "0.050000000000000000");
    assert_string_equal(round_trip(5, 2, "1.005"), "1.01");
    assert_string_equal(round_trip(5, 2, "-1.005"), "-1.01");
    assert_string_equal(round_trip(5, 2, "2.344"), "2.34");
    assert_string_equal(round_trip(38, 0, "0.5"), "1");
    assert_string_equal(round_trip(38, 0, "-0.5"), "-1");
    assert_string_equal(round_trip(38, 0, "0.49999999999999999999999999999"), "0");
    assert_string_equal(round_trip(20, 1, "12.345e1"), "123.5");
    assert_string_equal(round_trip(38, 38, "0.000000000000000000000000000000000000015"),
                        "0.00000000000000000000000000000000000002");
}

static void test_decimal_input_past_the_integer_digits_is_an_error(void **state)
{
    assert_string_equal(round_trip(38, 0, NINES38), NINES38);
    assert_string_equal(round_trip(38, 0, "-" NINES38), "-" NINES38);
    assert_true(!strncmp(round_trip(38, 0, "100000000000000000000000000000000000000"), "ERROR",
                         5));
    /* rounding up to 10^38 overflows too */
    assert_true(!strncmp(round_trip(38, 0, NINES38 ".5"), "ERROR", 5));
    assert_true(!strncmp(round_trip(38, 18, "123456789012345678901"), "ERROR", 5));
    assert_string_equal(round_trip(38, 18, "12345678901234567890.123456789012345678"),
                        "12345678901234567890.123456789012345678");
    assert_true(!strncmp(round_trip(20, 2, "x1"), "ERROR", 5));
}

static void test_decimal_add_and_sub_are_exact_and_overflow_at_ten_to_the_38(void **state)
{
    SqlType t = D(38, 0);
    assert_string_equal(eval_text(bin(E_ADD, t, dc(38, 0, "99999999999999999999999999999999999998"),
                                      dc(38, 0, "1"))),
                        NINES38);
    assert_non_null(strstr(eval_text(bin(E_ADD, t, dc(38, 0, NINES38), dc(38, 0, "1"))),
                           "decimal overflow in + for DECIMAL(38,0)"));
    assert_non_null(strstr(eval_text(bin(E_SUB, t, dc(38, 0, "-" NINES38), dc(38, 0, "1"))),
                           "decimal overflow"));
    SqlType u = D(38, 18);
    assert_string_equal(eval_text(bin(E_ADD, u, dc(38, 18, "0.05"), dc(38, 18, "0.10"))),
                        "0.150000000000000000");
    /* a narrow operand into a wide result */
    assert_string_equal(eval_text(bin(E_SUB, D(20, 2), dc(5, 2, "1.25"), dc(20, 2, "0.50"))),
                        "0.75");
    Expr *neg = expr_new(A, E_NEG, t, 1);
    neg->a[0] = dc(38, 0, NINES38);
    assert_string_equal(eval_text(neg), "-" NINES38);
}

static void test_decimal_products_round_when_the_scale_is_cut(void **state)
{
    /* DECIMAL(38,20) * DECIMAL(38,20): the binder gives DECIMAL(38,6); the
       exact product has 40 fraction digits and passes 2^127 unscaled */
    Expr *e = bin(E_MUL, D(38, 6), dc(38, 20, "123456789012345678.12345678901234567890"),
                  dc(38, 20, "2.00000000000000000000"));
    assert_string_equal(eval_text(e), "246913578024691356.246914");
    e = bin(E_MUL, D(38, 6), dc(38, 20, "-123456789012345678.12345678901234567890"),
            dc(38, 20, "2.00000000000000000000"));
    assert_string_equal(eval_text(e), "-246913578024691356.246914");
    /* exact scale: 0.05 * 12345678.91 */
    e = bin(E_MUL, D(38, 20), dc(38, 18, "0.05"), dc(10, 2, "12345678.91"));
    assert_string_equal(eval_text(e), "617283.94550000000000000000");
    /* 10^19 * 10^19 = 10^38 does not fit DECIMAL(38,0) */
    e = bin(E_MUL, D(38, 0), dc(20, 0, "10000000000000000000"), dc(20, 0, "10000000000000000000"));
    assert_non_null(strstr(eval_text(e), "decimal overflow in *"));
    e = bin(E_MUL, D(38, 0), dc(20, 0, "9999999999999999999"), dc(20, 0, "10000000000000000000"));
    assert_string_equal(eval_text(e), "99999999999999999990000000000000000000");
}

static void test_decimal_division_truncates_at_the_result_scale(void **state)
{
    SqlType t = D(38, 6);
    t.nullable = 1;
    assert_string_equal(eval_text(bin(E_DIV, t, dc(38, 0, "1"), dc(38, 0, "3"))), "0.333333");
    assert_string_equal(eval_text(bin(E_DIV, t, dc(38, 0, "-2"), dc(38, 0, "3"))), "-0.666666");
    /* x * 10^44 / y: the power is applied in two parts */
    assert_string_equal(eval_text(bin(E_DIV, t, dc(38, 0, "3"), dc(38, 38, "0.5"))), "6.000000");
    assert_string_equal(eval_text(bin(E_DIV, t, dc(38, 0, "1"), dc(38, 30, "0.000000000000000000000000000001"))),
                        "1000000000000000000000000000000.000000");
    assert_non_null(strstr(eval_text(bin(E_DIV, t, dc(38, 0, "1"),
                                         dc(38, 35, "0.00000000000000000000000000000000001"))),
                           "decimal overflow in /"));
    int64_t before = cx.ndivzero;
    assert_string_equal(eval_text(bin(E_DIV, t, dc(38, 0, "1"), dc(38, 0, "0"))), "NULL");
    assert_int_equal(cx.ndivzero, before + 1);
    SqlType m = D(38, 2);
    m.nullable = 1;
    assert_string_equal(eval_text(bin(E_MOD, m, dc(38, 2, "-7.50"), dc(38, 2, "2.00"))), "-1.50");
}

static void test_decimal_casts_between_widths_round_or_truncate_as_documented(void **state)
{
    assert_string_equal(eval_text(cast_to(type_make(TK_BIGINT, false), dc(38, 1, "-12.9"))), "-12");
    assert_string_equal(eval_text(cast_to(D(5, 1), dc(38, 2, "-12.95"))), "-13.0");
    assert_non_null(strstr(eval_text(cast_to(D(18, 0), dc(38, 0, "1000000000000000000"))),
                           "out of range"));
    assert_string_equal(eval_text(cast_to(D(38, 2), expr_const_f64(A, type_make(TK_DOUBLE, false), 0.285))),
                        "0.29");
    assert_string_equal(eval_text(cast_to(type_make(TK_DOUBLE, false), dc(38, 18, "0.05"))), "0.05");
    assert_string_equal(eval_text(cast_to(D(38, 4), expr_const_i64(A, type_make(TK_BIGINT, false),
                                                                   INT64_MIN))),
                        "-9223372036854775808.0000");
    Expr *e18 = expr_const_i64(A, type_make(TK_BIGINT, false), INT64_C(1000000000000000000));
    assert_non_null(strstr(eval_text(cast_to(D(20, 3), e18)),
                           "value 1000000000000000000 out of range"));
    assert_string_equal(eval_text(cast_to(D(21, 2), e18)), "1000000000000000000.00");
    assert_string_equal(eval_text(cast_to(type_make(TK_VARCHAR, false), dc(38, 3, "-0.001"))),
                        "-0.001");
    Expr *s = expr_const_str(A, type_make(TK_VARCHAR, false), " 1.5 ", 5);
    assert_string_equal(eval_text(cast_to(D(30, 0), s)), "2");
}

static void test_decimal_comparisons_are_exact_across_widths_and_scales(void **state)
{
    SqlType b = type_make(TK_BOOL, false);
    assert_string_equal(eval_text(bin(E_EQ, b, dc(20, 2, "1.10"), dc(5, 1, "1.1"))), "true");
    assert_string_equal(eval_text(bin(E_LT, b, dc(38, 0, "-" NINES38), dc(5, 1, "-9999.9"))),
                        "true");
    /* at scale 37, 10^2 has 40 digits: still ordered right */
    assert_string_equal(eval_text(bin(E_GT, b, dc(38, 0, "100"), dc(38, 37, "9.9"))), "true");
    assert_string_equal(eval_text(bin(E_LT, b, dc(38, 0, "-100"), dc(38, 37, "-9.9"))), "true");
    assert_string_equal(eval_text(bin(E_NE, b, dc(38, 18, "0.050000000000000001"), dc(5, 2, "0.05"))),
                        "true");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_decimal_input_rounds_extra_fraction_digits_half_away_from_zero, reset),
        cmocka_unit_test_setup(test_decimal_input_past_the_integer_digits_is_an_error, reset),
        cmocka_unit_test_setup(test_decimal_add_and_sub_are_exact_and_overflow_at_ten_to_the_38, reset),
        cmocka_unit_test_setup(test_decimal_products_round_when_the_scale_is_cut, reset),
        cmocka_unit_test_setup(test_decimal_division_truncates_at_the_result_scale, reset),
        cmocka_unit_test_setup(test_decimal_casts_between_widths_round_or_truncate_as_documented, reset),
        cmocka_unit_test_setup(test_decimal_comparisons_are_exact_across_widths_and_scales, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * tests/expr/test_text.c - values to and from text (expr/text.h).
 * Each test parses literal text with text_parse, checks the stored value or
 * the error message, and formats values with text_format, checking the
 * canonical text and that parsing it gives the value back.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/buf.h"
#include "expr/text.h"

static Arena *arena;

static int setup(void **state)
{
    arena = arena_new(1 << 16);
    return 0;
}

static int teardown(void **state)
{
    arena_free(arena);
    return 0;
}

static SqlType ty(TypeKind k) { return type_make(k, false); }

static SqlType dec(int p, int s)
{
    SqlType t = type_make(TK_DECIMAL, false);
    t.prec = (uint8_t)p;
    t.scale = (uint8_t)s;
    return t;
}

static SqlType str_type(TypeKind k, int len)
{
    SqlType t = type_make(k, false);
    t.len = len;
    return t;
}

static Err err;
static int64_t iv;
static double fv;
static Str sv;

/* text_parse of a C string into iv / fv / sv; the error goes to err. */
static int parse(SqlType t, const char *s)
{
    err_clear(&err);
    iv = 0;
    fv = 0;
    sv = (Str){NULL, 0};
    return text_parse(t, s, strlen(s), arena, &iv, &fv, &sv, &err);
}

static void expect_i64(SqlType t, const char *s, int64_t want)
{
    if (parse(t, s) != 0)
        fail_msg("parse \"%s\": %s", s, err.msg);
    if (iv != want)
        fail_msg("parse \"%s\": got %lld, want %lld", s, (long long)iv, (long long)want);
}

static void expect_error(SqlType t, const char *s, const char *msg)
{
    int rc = parse(t, s);
    if (rc != SL_EDATA)
        fail_msg("parse \"%s\": rc %d, want SL_EDATA", s, rc);
    if (msg && strcmp(err.msg, msg) != 0)
        fail_msg("parse \"%s\": message \"%s\", want \"%s\"", s, err.msg, msg);
}

static char fmt_out[256];

static const char *fmt(SqlType t, int64_t i, double f, const char *s)
{
    Buf b = BUF_INIT;
    Str str = {s ? s : "", s ? (uint32_t)strlen(s) : 0};
    text_format(t, i, f, str, &b);
    snprintf(fmt_out, sizeof(fmt_out), "%s", buf_cstr(&b));
    buf_free(&b);
    return fmt_out;
}

/* Format i as t, compare with want, parse it back and compare values. */
static void round_trip_i64(SqlType t, int64_t i, const char *want)
{
    const char *got = fmt(t, i, 0, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("format %lld: \"%s\", want \"%s\"", (long long)i, got, want);
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", got);
    expect_i64(t, copy, i);
}

static void round_trip_f64(SqlType t, double f, const char *want)
{
    const char *got = fmt(t, 0, f, NULL);
    if (want && strcmp(got, want) != 0)
        fail_msg("format %.17g: \"%s\", want \"%s\"", f, got, want);
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", got);
    if (parse(t, copy) != 0)
        fail_msg("parse \"%s\": %s", copy, err.msg);
    if (!(fv == f || (isnan(fv) && isnan(f))) || signbit(fv) != signbit(f))
        fail_msg("\"%s\" read back as %.17g, want %.17g", copy, fv, f);
}

/* ----------------------------------------------------------------- tests */

static void test_integers_parse_with_sign_and_spaces(void **state)
{
    expect_i64(ty(TK_INT), "42", 42);
    expect_i64(ty(TK_INT), "-42", -42);
    expect_i64(ty(TK_INT), "+7", 7);
    expect_i64(ty(TK_INT), "  12 \t", 12);
    expect_i64(ty(TK_INT), "0007", 7);
    expect_i64(ty(TK_TINYINT), "-128", -128);
    expect_i64(ty(TK_TINYINT), "127", 127);
    expect_i64(ty(TK_SMALLINT), "-32768", -32768);
    expect_i64(ty(TK_INT), "2147483647", INT32_MAX);
    expect_i64(ty(TK_INT), "-2147483648", INT32_MIN);
    expect_i64(ty(TK_BIGINT), "9223372036854775807", INT64_MAX);
    expect_i64(ty(TK_BIGINT), "-9223372036854775808", INT64_MIN);
}

static void test_integers_out_of_range_name_value_and_type(void **state)
{
    expect_error(ty(TK_TINYINT), "300", "value 300 out of range for TINYINT");
    expect_error(ty(TK_TINYINT), "-129", "value -129 out of range for TINYINT");
    expect_error(ty(TK_SMALLINT), "32768", "value 32768 out of range for SMALLINT");
    expect_error(ty(TK_INT), "2147483648", "value 2147483648 out of range for INT");
    expect_error(ty(TK_BIGINT), "9223372036854775808",
                 "value 9223372036854775808 out of range for BIGINT");
    expect_error(ty(TK_BIGINT), "-9223372036854775809", NULL);
    expect_error(ty(TK_BIGINT), "99999999999999999999999999", NULL);
}

static void test_malformed_integers_are_invalid(void **state)
{
    expect_error(ty(TK_INT), "12x", "invalid INT value \"12x\"");
    expect_error(ty(TK_INT), "1.5", "invalid INT value \"1.5\"");
    expect_error(ty(TK_INT), "", "invalid INT value \"\"");
    expect_error(ty(TK_INT), "-", "invalid INT value \"-\"");
    expect_error(ty(TK_INT), "1 2", NULL);
    expect_error(ty(TK_BIGINT), "1e3", "invalid BIGINT value \"1e3\"");
}

static void test_booleans_accept_the_usual_words_in_any_case(void **state)
{
    const char *yes[] = {"true", "TRUE", "t", "T", "yes", "Yes", "1", " true "};
    const char *no[] = {"false", "False", "f", "F", "no", "NO", "0"};
    for (size_t j = 0; j < ARRAY_LEN(yes); j++)
        expect_i64(ty(TK_BOOL), yes[j], 1);
    for (size_t j = 0; j < ARRAY_LEN(no); j++)
        expect_i64(ty(TK_BOOL), no[j], 0);
    expect_error(ty(TK_BOOL), "maybe", "invalid BOOLEAN value \"maybe\"");
    expect_error(ty(TK_BOOL), "2", NULL);
    assert_string_equal(fmt(ty(TK_BOOL), 1, 0, NULL), "true");
    assert_string_equal(fmt(ty(TK_BOOL), 0, 0, NULL), "false");
}

static void test_decimals_parse_and_round_half_away_from_zero(void **state)
{
    expect_i64(dec(10, 2), "12.5", 1250);
    expect_i64(dec(10, 2), "-0.07", -7);
    expect_i64(dec(10, 2), "12", 1200);
    expect_i64(dec(10, 2), ".5", 50);
    expect_i64(dec(10, 2), "5.", 500);
    expect_i64(dec(10, 2), "1.005", 101);
    expect_i64(dec(10, 2), "1.004999", 100);
    expect_i64(dec(10, 2), "-1.005", -101);
    expect_i64(dec(10, 2), "0.004", 0);
    expect_i64(dec(10, 2), "-0.005", -1);
    expect_i64(dec(10, 2), "1.25e2", 12500);
    expect_i64(dec(10, 2), "125E-2", 125);
    expect_i64(dec(10, 0), "2.5", 3);
    expect_i64(dec(18, 0), "999999999999999999", 999999999999999999LL);
    expect_i64(dec(5, 2), "000123.45", 12345);
    expect_i64(dec(10, 2), "0.000000000000000000000000000000001", 0);
}

static void test_decimals_reject_too_many_integer_digits(void **state)
{
    expect_error(dec(5, 2), "1234.5", "value 1234.5 out of range for DECIMAL(5,2)");
    expect_error(dec(5, 2), "999.995", "value 999.995 out of range for DECIMAL(5,2)");
    expect_i64(dec(5, 2), "999.994", 99999);
    expect_error(dec(18, 0), "1000000000000000000", NULL);
    expect_error(dec(10, 2), "1.2.3", "invalid DECIMAL(10,2) value \"1.2.3\"");
    expect_error(dec(10, 2), "abc", NULL);
    expect_error(dec(10, 2), ".", NULL);
    expect_error(dec(10, 2), "1e", NULL);
}

static void test_decimals_format_with_exactly_scale_digits(void **state)
{
    round_trip_i64(dec(10, 2), 1250, "12.50");
    round_trip_i64(dec(10, 2), -7, "-0.07");
    round_trip_i64(dec(10, 2), 0, "0.00");
    round_trip_i64(dec(10, 0), -42, "-42");
    round_trip_i64(dec(18, 4), 999999999999999999LL, "99999999999999.9999");
    round_trip_i64(dec(18, 18), -999999999999999999LL, "-0.999999999999999999");
}

static void test_doubles_format_shortest_and_round_trip(void **state)
{
    SqlType d = ty(TK_DOUBLE);
    round_trip_f64(d, 0.1, "0.1");
    round_trip_f64(d, 1.0 / 3.0, "0.3333333333333333");
    round_trip_f64(d, 1e20, "1e+20");
    round_trip_f64(d, 1.5, "1.5");
    round_trip_f64(d, -2.0, "-2");
    round_trip_f64(d, 0.1 + 0.2, "0.30000000000000004");
    round_trip_f64(d, 5e-324, NULL);
    round_trip_f64(d, 1.7976931348623157e308, NULL);
    round_trip_f64(d, -0.0, "-0");
    round_trip_f64(d, INFINITY, "Infinity");
    round_trip_f64(d, -INFINITY, "-Infinity");
    round_trip_f64(d, NAN, "NaN");
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int j = 0; j < 2000; j++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof(v));
        if (isfinite(v))
            round_trip_f64(d, v, NULL);
    }
}

static void test_doubles_parse_and_reject_garbage(void **state)
{
    assert_int_equal(parse(ty(TK_DOUBLE), " 2.5e3 "), 0);
    assert_true(fv == 2500);
    assert_int_equal(parse(ty(TK_DOUBLE), "-Infinity"), 0);
    assert_true(isinf(fv) && fv < 0);
    assert_int_equal(parse(ty(TK_DOUBLE), "nan"), 0);
    assert_true(isnan(fv));
    expect_error(ty(TK_DOUBLE), "1.5x", "invalid DOUBLE value \"1.5x\"");
    expect_error(ty(TK_DOUBLE), "", NULL);
    expect_error(ty(TK_DOUBLE), "0x10", NULL);
    expect_error(ty(TK_DOUBLE), "1e999", "value 1e999 out of range for DOUBLE");
}

static void test_reals_are_rounded_to_float_and_print_short(void **state)
{
    SqlType r = ty(TK_REAL);
    assert_int_equal(parse(r, "0.1"), 0);
    assert_true(fv == (double)0.1f);
    round_trip_f64(r, (double)0.1f, "0.1");
    round_trip_f64(r, (double)(1.0f / 3.0f), "0.33333334");
    round_trip_f64(r, (double)16777216.0f, "16777216");
    round_trip_f64(r, (double)3.4e38f, "3.4e+38");
    expect_error(r, "1e39", "value 1e39 out of range for REAL");
}

static void test_dates_parse_validate_and_format(void **state)
{
    SqlType d = ty(TK_DATE);
    round_trip_i64(d, 0, "1970-01-01");
    round_trip_i64(d, -1, "1969-12-31");
    round_trip_i64(d, date_from_ymd(2024, 2, 29), "2024-02-29");
    round_trip_i64(d, date_from_ymd(1, 1, 1), "0001-01-01");
    round_trip_i64(d, date_from_ymd(9999, 12, 31), "9999-12-31");
    expect_i64(d, "2000-3-1", date_from_ymd(2000, 3, 1));
    expect_error(d, "2023-02-29", "invalid DATE value \"2023-02-29\"");
    expect_error(d, "1900-02-29", NULL);
    expect_i64(d, "2000-02-29", date_from_ymd(2000, 2, 29));
    expect_error(d, "2024-13-01", NULL);
    expect_error(d, "2024-04-31", NULL);
    expect_error(d, "0000-01-01", NULL);
    expect_error(d, "2024-01-01x", NULL);
    expect_error(d, "20240101", NULL);
}

static void test_calendar_helpers_agree_over_many_years(void **state)
{
    assert_int_equal(date_from_ymd(1970, 1, 1), 0);
    assert_int_equal(date_from_ymd(2000, 1, 1), 10957);
    assert_int_equal(date_from_ymd(1, 1, 1), -719162);
    int64_t prev = date_from_ymd(1, 1, 1) - 1;
    for (int64_t days = prev + 1; days <= date_from_ymd(9999, 12, 31); days += 17) {
        int y, m, d;
        date_to_ymd(days, &y, &m, &d);
        assert_int_equal(date_from_ymd(y, m, d), days);
        assert_true(m >= 1 && m <= 12 && d >= 1 && d <= 31);
    }
}

static void test_times_print_fraction_only_when_nonzero(void **state)
{
    SqlType t = ty(TK_TIME);
    round_trip_i64(t, 0, "00:00:00");
    round_trip_i64(t, (3 * 3600 + 4 * 60 + 5) * 1000000LL, "03:04:05");
    round_trip_i64(t, (3 * 3600 + 4 * 60 + 5) * 1000000LL + 500000, "03:04:05.5");
    round_trip_i64(t, 86399999999LL, "23:59:59.999999");
    round_trip_i64(t, 1, "00:00:00.000001");
    expect_i64(t, "12:30", (12 * 3600 + 30 * 60) * 1000000LL);
    expect_i64(t, "12:30:01.1234567", (12 * 3600 + 30 * 60 + 1) * 1000000LL + 123457);
    expect_error(t, "24:00:00", "invalid TIME value \"24:00:00\"");
    expect_error(t, "12:60", NULL);
    expect_error(t, "12", NULL);
    expect_error(t, "12:00:00.", NULL);
}

static void test_timestamps_parse_with_space_or_t_and_bare_dates(void **state)
{
    SqlType t = ty(TK_TIMESTAMP);
    int64_t day = date_from_ymd(2024, 1, 2) * 86400000000LL;
    int64_t v = day + (3 * 3600 + 4 * 60 + 5) * 1000000LL + 500000;
    round_trip_i64(t, v, "2024-01-02 03:04:05.5");
    round_trip_i64(t, day, "2024-01-02 00:00:00");
    round_trip_i64(t, -1, "1969-12-31 23:59:59.999999");
    expect_i64(t, "2024-01-02T03:04:05.5", v);
    expect_i64(t, "2024-01-02", day);
    expect_i64(t, "2024-01-02 03:04", day + (3 * 3600 + 4 * 60) * 1000000LL);
    expect_i64(t, "2024-01-02T03:04:05.5Z", v);
    expect_error(t, "2024-01-02 25:00:00", "invalid TIMESTAMP value \"2024-01-02 25:00:00\"");
    expect_error(t, "2024-01-02 03:04:05 x", NULL);
}

static void test_strings_copy_pad_and_check_length(void **state)
{
    char src[] = "abc";
    assert_int_equal(parse(str_type(TK_VARCHAR, VARCHAR_UNBOUNDED), src), 0);
    assert_int_equal(sv.n, 3);
    assert_memory_equal(sv.p, "abc", 3);
    assert_ptr_not_equal(sv.p, src);
    assert_int_equal(parse(str_type(TK_VARCHAR, 3), " ab"), 0);
    assert_int_equal(sv.n, 3); /* spaces kept for strings */
    assert_int_equal(parse(str_type(TK_CHAR, 5), "ab"), 0);
    assert_int_equal(sv.n, 5);
    assert_memory_equal(sv.p, "ab   ", 5);
    expect_error(str_type(TK_VARCHAR, 3), "abcd", "value too long for VARCHAR(3)");
    expect_error(str_type(TK_CHAR, 2), "abc", "value too long for CHAR(2)");
    assert_int_equal(parse(str_type(TK_VARCHAR, 3), "abc  "), 0); /* trailing spaces cut */
    assert_int_equal(sv.n, 3);
    /* lengths count characters, not bytes */
    assert_int_equal(parse(str_type(TK_VARCHAR, 3), "h\xC3\xA9!"), 0);
    assert_int_equal(sv.n, 4);
    assert_int_equal(parse(str_type(TK_CHAR, 3), "\xC3\xA9"), 0);
    assert_int_equal(sv.n, 4);
    err_clear(&err);
    assert_int_equal(text_parse(str_type(TK_VARCHAR, -1), "a\0b", 3, arena, &iv, &fv, &sv, &err),
                     SL_EDATA);
    assert_string_equal(err.msg, "invalid NUL byte in VARCHAR value");
    assert_int_equal(parse(str_type(TK_VARCHAR, -1), ""), 0);
    assert_int_equal(sv.n, 0);
    assert_string_equal(fmt(str_type(TK_VARCHAR, -1), 0, 0, "x y"), "x y");
}

static void test_integers_format_as_plain_digits(void **state)
{
    round_trip_i64(ty(TK_BIGINT), INT64_MIN, "-9223372036854775808");
    round_trip_i64(ty(TK_BIGINT), INT64_MAX, "9223372036854775807");
    round_trip_i64(ty(TK_INT), -5, "-5");
    round_trip_i64(ty(TK_TINYINT), 0, "0");
}

static void test_format_vec_skips_nulls(void **state)
{
    SqlType t = type_make(TK_INT, true);
    Vec v;
    vec_init(&v, arena, t, 2);
    v.i[0] = 7;
    v.i[1] = 8;
    v.nul[1] = 1;
    Buf b = BUF_INIT;
    assert_true(text_format_vec(&v, 0, &b));
    assert_false(text_format_vec(&v, 1, &b));
    assert_string_equal(buf_cstr(&b), "7");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers_parse_with_sign_and_spaces),
        cmocka_unit_test(test_integers_out_of_range_name_value_and_type),
        cmocka_unit_test(test_malformed_integers_are_invalid),
        cmocka_unit_test(test_booleans_accept_the_usual_words_in_any_case),
        cmocka_unit_test(test_decimals_parse_and_round_half_away_from_zero),
        cmocka_unit_test(test_decimals_reject_too_many_integer_digits),
        cmocka_unit_test(test_decimals_format_with_exactly_scale_digits),
        cmocka_unit_test(test_doubles_format_shortest_and_round_trip),
        cmocka_unit_test(test_doubles_parse_and_reject_garbage),
        cmocka_unit_test(test_reals_are_rounded_to_float_and_print_short),
        cmocka_unit_test(test_dates_parse_validate_and_format),
        cmocka_unit_test(test_calendar_helpers_agree_over_many_years),
        cmocka_unit_test(test_times_print_fraction_only_when_nonzero),
        cmocka_unit_test(test_timestamps_parse_with_space_or_t_and_bare_dates),
        cmocka_unit_test(test_strings_copy_pad_and_check_length),
        cmocka_unit_test(test_integers_format_as_plain_digits),
        cmocka_unit_test(test_format_vec_skips_nulls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

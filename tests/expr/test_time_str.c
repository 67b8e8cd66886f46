/*
 * tests/expr/test_time_str.c - the date/time and string functions added for
 * issue 3 (expr/fn_time.c, expr/fn_str.c) and interval text (expr/text.c):
 * LEFT, RIGHT, CONCAT, INITCAP, TRIM with a character set, EXTRACT WEEK /
 * QUARTER / MILLISECOND / MICROSECOND, DATE_TRUNC, TIMESTAMPDIFF, calendar
 * months (ADD_MONTHS), day-to-second interval arithmetic on timestamps, and
 * interval literals and canonical text. Expressions are built the way the
 * binder builds them (sql/bind.c), with NULLs, negative values (before 1970)
 * and calendar boundaries (month ends, leap years).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "expr_test.h"

#define DAY_US INT64_C(86400000000)
#define H_US INT64_C(3600000000)

#define VC T(TK_VARCHAR)

static Expr *ci(TypeKind k, int64_t v) { return expr_const_i64(A, type_make(k, false), v); }
static Expr *cs(const char *s) { return expr_const_str(A, type_make(TK_VARCHAR, false), s, strlen(s)); }

#define FN(f, t, ...) mk(E_FUNC, f, t, __VA_ARGS__)

/* One column of n values; NV / NULL pointer = NULL. */
static Chunk *ints(SqlType t, int64_t n, const int64_t *v)
{
    Chunk *c = chunk_new(A, 1, &t, n);
    c->n = n;
    for (int64_t r = 0; r < n; r++) {
        c->w[r] = 1;
        c->col[0].i[r] = v[r] == NV ? INT64_MAX : v[r];
        c->col[0].nul[r] = v[r] == NV;
    }
    return c;
}

static Chunk *strs(int64_t n, const char *const *v)
{
    SqlType t = VC;
    Chunk *c = chunk_new(A, 1, &t, n);
    c->n = n;
    for (int64_t r = 0; r < n; r++) {
        c->w[r] = 1;
        c->col[0].s[r] = v[r] ? (Str){v[r], (uint32_t)strlen(v[r])} : (Str){"junk", 4};
        c->col[0].nul[r] = !v[r];
    }
    return c;
}

/* Values as canonical text (NULL as "NULL"), compared with want. */
static void want_text(const Vec *v, int64_t n, const char *const *want)
{
    for (int64_t k = 0; k < n; k++) {
        Buf b = {0};
        if (!text_format_vec(v, k, &b))
            buf_puts(&b, "NULL");
        buf_putc(&b, 0);
        if (strcmp((char *)b.p, want[k]))
            fail_msg("row %lld: got %s, want %s", (long long)k, (char *)b.p, want[k]);
        buf_free(&b);
    }
}

#define CHECK_TEXT(e, c, ...) CHECK_VALUES(const char *, want_text, e, c, __VA_ARGS__)

static int64_t D(int y, int m, int d) { return date_from_ymd(y, m, d); }
static int64_t TS(int y, int mo, int d, int h, int mi, int s)
{
    return D(y, mo, d) * DAY_US + ((int64_t)h * 3600 + mi * 60 + s) * 1000000;
}

/* ================================================================ strings */

static void test_left_and_right_count_characters_and_clamp(void **state)
{
    const char *s[] = {"h\xC3\xA9llo", "ab", "", NULL};
    Chunk *c = strs(4, s);
    SqlType it = T(TK_INT);
    CHECK_STRS(FN(FN_LEFT, VC, 2, col(0, VC), ci(TK_INT, 2)), c, "h\xC3\xA9", "ab", "", NULL);
    CHECK_STRS(FN(FN_RIGHT, VC, 2, col(0, VC), ci(TK_INT, 3)), c, "llo", "ab", "", NULL);
    CHECK_STRS(FN(FN_RIGHT, VC, 2, col(0, VC), ci(TK_INT, 4)), c, "\xC3\xA9llo", "ab", "", NULL);
    CHECK_STRS(FN(FN_LEFT, VC, 2, col(0, VC), ci(TK_INT, 0)), c, "", "", "", NULL);
    CHECK_STRS(FN(FN_LEFT, VC, 2, col(0, VC), ci(TK_INT, -3)), c, "", "", "", NULL);
    CHECK_STRS(FN(FN_RIGHT, VC, 2, col(0, VC), ci(TK_INT, -1)), c, "", "", "", NULL);
    CHECK_STRS(FN(FN_LEFT, VC, 2, col(0, VC), ci(TK_INT, INT32_MAX)), c, "h\xC3\xA9llo", "ab",
               "", NULL);
    CHECK_STRS(FN(FN_LEFT, VC, 2, col(0, VC), expr_const_null(A, it)), c, NULL, NULL, NULL, NULL);
}

static void test_concat_is_null_when_any_operand_is(void **state)
{
    const char *s[] = {"a", "", NULL};
    Chunk *c = strs(3, s);
    CHECK_STRS(FN(FN_CONCAT, VC, 3, cs("<"), col(0, VC), cs(">")), c, "<a>", "<>", NULL);
    CHECK_STRS(FN(FN_CONCAT, VC, 1, col(0, VC)), c, "a", "", NULL);
    CHECK_STRS(FN(FN_CONCAT, VC, 4, col(0, VC), col(0, VC), cs(""), col(0, VC)), c, "aaa", "",
               NULL);
}

static void test_initcap_starts_each_word_upper(void **state)
{
    const char *s[] = {"hello wORLD", "o'neil-smith 2nd", "", "  x", "\xC3\xA9t\xC3\xA9 ab", NULL};
    Chunk *c = strs(6, s);
    CHECK_STRS(FN(FN_INITCAP, VC, 1, col(0, VC)), c, "Hello World", "O'Neil-Smith 2nd", "", "  X",
               "\xC3\xA9t\xC3\xA9 Ab", NULL);
}

static void test_trim_removes_characters_of_a_set_from_the_chosen_side(void **state)
{
    const char *s[] = {"xyaxbyx", "xxx", "", "\xC3\xA9" "a\xC3\xA9", NULL};
    Chunk *c = strs(5, s);
    CHECK_STRS(FN(FN_TRIM_CHARS, VC, 3, col(0, VC), cs("xy"), ci(TK_BIGINT, 0)), c, "axb", "", "",
               "\xC3\xA9" "a\xC3\xA9", NULL);
    CHECK_STRS(FN(FN_TRIM_CHARS, VC, 3, col(0, VC), cs("xy"), ci(TK_BIGINT, 1)), c, "axbyx", "",
               "", "\xC3\xA9" "a\xC3\xA9", NULL);
    CHECK_STRS(FN(FN_TRIM_CHARS, VC, 3, col(0, VC), cs("x"), ci(TK_BIGINT, 2)), c, "xyaxby", "",
               "", "\xC3\xA9" "a\xC3\xA9", NULL);
    /* a multi-byte character is one member of the set, not its bytes */
    CHECK_STRS(FN(FN_TRIM_CHARS, VC, 3, col(0, VC), cs("\xC3\xA9"), ci(TK_BIGINT, 0)), c,
               "xyaxbyx", "xxx", "", "a", NULL);
    CHECK_STRS(FN(FN_TRIM_CHARS, VC, 3, col(0, VC), cs(""), ci(TK_BIGINT, 0)), c, "xyaxbyx",
               "xxx", "", "\xC3\xA9" "a\xC3\xA9", NULL);
}

/* ============================================================ date / time */

static void test_extract_week_quarter_and_subsecond_fields(void **state)
{
    SqlType bt = T(TK_BIGINT), dt = T(TK_DATE), tt = T(TK_TIMESTAMP);
    /* ISO weeks: 2021-01-03 (Sun) is week 53 of 2020; 2024-12-30 (Mon) is
       week 1 of 2025; 2020-12-31 week 53; 1969-12-29 (Mon) week 1 of 1970 */
    const int64_t d[] = {D(2021, 1, 3), D(2024, 12, 30), D(2020, 12, 31), D(1969, 12, 29),
                         D(2024, 1, 1), D(2024, 4, 1), NV};
    Chunk *c = ints(dt, 7, d);
    CHECK_INTS(FN(FN_EXTRACT_WEEK, bt, 1, col(0, dt)), c, 53, 1, 53, 1, 1, 14, NV);
    CHECK_INTS(FN(FN_EXTRACT_QUARTER, bt, 1, col(0, dt)), c, 1, 4, 4, 4, 1, 2, NV);
    const int64_t ts[] = {TS(2024, 1, 2, 3, 4, 5) + 678901, -1, NV};
    Chunk *t = ints(tt, 3, ts);
    CHECK_INTS(FN(FN_EXTRACT_MILLISECOND, bt, 1, col(0, tt)), t, 5678, 59999, NV);
    CHECK_INTS(FN(FN_EXTRACT_MICROSECOND, bt, 1, col(0, tt)), t, 5678901, 59999999, NV);
}

static void test_date_trunc_on_dates_and_timestamps(void **state)
{
    SqlType dt = T(TK_DATE), tt = T(TK_TIMESTAMP);
    const int64_t d[] = {D(2024, 2, 29), D(1969, 12, 31), D(2000, 1, 1), NV};
    Chunk *c = ints(dt, 4, d);
    CHECK_TEXT(FN(FN_DATE_TRUNC, dt, 2, col(0, dt), ci(TK_BIGINT, TU_YEAR)), c, "2024-01-01",
               "1969-01-01", "2000-01-01", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, dt, 2, col(0, dt), ci(TK_BIGINT, TU_QUARTER)), c, "2024-01-01",
               "1969-10-01", "2000-01-01", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, dt, 2, col(0, dt), ci(TK_BIGINT, TU_MONTH)), c, "2024-02-01",
               "1969-12-01", "2000-01-01", "NULL");
    /* weeks start on Monday: 2024-02-26, 1969-12-29, 1999-12-27 */
    CHECK_TEXT(FN(FN_DATE_TRUNC, dt, 2, col(0, dt), ci(TK_BIGINT, TU_WEEK)), c, "2024-02-26",
               "1969-12-29", "1999-12-27", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, dt, 2, col(0, dt), ci(TK_BIGINT, TU_DAY)), c, "2024-02-29",
               "1969-12-31", "2000-01-01", "NULL");
    const int64_t ts[] = {TS(2024, 2, 29, 23, 59, 59) + 999999, -1, TS(1900, 3, 1, 0, 0, 0), NV};
    Chunk *t = ints(tt, 4, ts);
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_YEAR)), t,
               "2024-01-01 00:00:00", "1969-01-01 00:00:00", "1900-01-01 00:00:00", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_MONTH)), t,
               "2024-02-01 00:00:00", "1969-12-01 00:00:00", "1900-03-01 00:00:00", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_DAY)), t,
               "2024-02-29 00:00:00", "1969-12-31 00:00:00", "1900-03-01 00:00:00", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_HOUR)), t,
               "2024-02-29 23:00:00", "1969-12-31 23:00:00", "1900-03-01 00:00:00", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_MINUTE)), t,
               "2024-02-29 23:59:00", "1969-12-31 23:59:00", "1900-03-01 00:00:00", "NULL");
    CHECK_TEXT(FN(FN_DATE_TRUNC, tt, 2, col(0, tt), ci(TK_BIGINT, TU_SECOND)), t,
               "2024-02-29 23:59:59", "1969-12-31 23:59:59", "1900-03-01 00:00:00", "NULL");
}

static void test_add_months_clamps_to_the_end_of_the_month(void **state)
{
    SqlType dt = T(TK_DATE), tt = T(TK_TIMESTAMP), ym = T(TK_INTERVAL_YM);
    const int64_t d[] = {D(2024, 1, 31), D(2023, 1, 31), D(2024, 2, 29), D(1970, 1, 15), NV};
    Chunk *c = ints(dt, 5, d);
    CHECK_TEXT(FN(FN_ADD_MONTHS, dt, 2, col(0, dt), ci(TK_INTERVAL_YM, 1)), c, "2024-02-29",
               "2023-02-28", "2024-03-29", "1970-02-15", "NULL");
    CHECK_TEXT(FN(FN_ADD_MONTHS, dt, 2, col(0, dt), ci(TK_INTERVAL_YM, 12)), c, "2025-01-31",
               "2024-01-31", "2025-02-28", "1971-01-15", "NULL");
    CHECK_TEXT(FN(FN_ADD_MONTHS, dt, 2, col(0, dt), ci(TK_INTERVAL_YM, -13)), c, "2022-12-31",
               "2021-12-31", "2023-01-29", "1968-12-15", "NULL");
    CHECK_TEXT(FN(FN_ADD_MONTHS, dt, 2, col(0, dt), expr_const_null(A, ym)), c, "NULL", "NULL",
               "NULL", "NULL", "NULL");
    const int64_t ts[] = {TS(2024, 3, 31, 12, 30, 0), -1};
    Chunk *t = ints(tt, 2, ts);
    CHECK_TEXT(FN(FN_ADD_MONTHS, tt, 2, col(0, tt), ci(TK_INTERVAL_YM, -1)), t,
               "2024-02-29 12:30:00", "1969-11-30 23:59:59.999999");
    Vec v;
    const int64_t big[] = {D(2024, 1, 1)};
    assert_int_equal(expr_eval(FN(FN_ADD_MONTHS, dt, 2, col(0, dt),
                                  ci(TK_INTERVAL_YM, INT64_MAX / 2)),
                               ints(dt, 1, big), NULL, 1, &cx, &v), SL_ERUNTIME);
}

static void test_timestamp_plus_and_minus_day_time_intervals(void **state)
{
    SqlType tt = T(TK_TIMESTAMP), it = T(TK_INTERVAL_DT);
    const int64_t ts[] = {TS(2024, 2, 28, 23, 0, 0), TS(1970, 1, 1, 0, 0, 0), NV};
    Chunk *c = ints(tt, 3, ts);
    CHECK_TEXT(mk(E_ADD, 0, tt, 2, col(0, tt), ci(TK_INTERVAL_DT, 2 * H_US)), c,
               "2024-02-29 01:00:00", "1970-01-01 02:00:00", "NULL");
    CHECK_TEXT(mk(E_SUB, 0, tt, 2, col(0, tt), ci(TK_INTERVAL_DT, DAY_US + 1)), c,
               "2024-02-27 22:59:59.999999", "1969-12-30 23:59:59.999999", "NULL");
    /* timestamp - timestamp is an interval; its text is [-]D HH:MM:SS */
    CHECK_TEXT(mk(E_SUB, 0, it, 2, col(0, tt), ci(TK_TIMESTAMP, TS(2024, 1, 1, 0, 0, 0))), c,
               "58 23:00:00", "-19723 00:00:00", "NULL");
    Vec v;
    const int64_t m[] = {INT64_MAX - 5};
    assert_int_equal(expr_eval(mk(E_ADD, 0, tt, 2, col(0, tt), ci(TK_INTERVAL_DT, 10)),
                               ints(tt, 1, m), NULL, 1, &cx, &v), SL_ERUNTIME);
    assert_string_equal(err.msg, "integer overflow in + for TIMESTAMP");
}

static void test_time_plus_interval_wraps_around_midnight(void **state)
{
    SqlType tm = T(TK_TIME);
    const int64_t t[] = {23 * H_US, 0, H_US / 2, NV};
    Chunk *c = ints(tm, 4, t);
    CHECK_TEXT(FN(FN_TIME_ADD, tm, 2, col(0, tm), ci(TK_INTERVAL_DT, 2 * H_US)), c, "01:00:00",
               "02:00:00", "02:30:00", "NULL");
    CHECK_TEXT(FN(FN_TIME_ADD, tm, 2, col(0, tm), ci(TK_INTERVAL_DT, -H_US)), c, "22:00:00",
               "23:00:00", "23:30:00", "NULL");
    CHECK_TEXT(FN(FN_TIME_ADD, tm, 2, col(0, tm), ci(TK_INTERVAL_DT, -3 * DAY_US - 1)), c,
               "22:59:59.999999", "23:59:59.999999", "00:29:59.999999", "NULL");
    CHECK_TEXT(FN(FN_TIME_ADD, tm, 2, col(0, tm), ci(TK_INTERVAL_DT, INT64_MIN + 1)), c,
               "18:59:05.224193", "19:59:05.224193", "20:29:05.224193", "NULL");
}

static void test_timestampdiff_counts_whole_units_toward_zero(void **state)
{
    SqlType tt = T(TK_TIMESTAMP), bt = T(TK_BIGINT);
    int64_t a = TS(2024, 1, 31, 12, 0, 0);
    const int64_t b[] = {TS(2024, 2, 29, 12, 0, 0), TS(2024, 3, 31, 12, 0, 0),
                         TS(2024, 3, 31, 11, 59, 59), TS(2023, 1, 31, 12, 0, 0),
                         TS(2023, 1, 31, 12, 0, 1), NV};
    Chunk *c = ints(tt, 6, b);
    Expr *ea = ci(TK_TIMESTAMP, a);
    CHECK_INTS(FN(FN_TIMESTAMPDIFF, bt, 3, ci(TK_BIGINT, TU_MONTH), ea, col(0, tt)), c, 0, 2, 1,
               -12, -11, NV);
    CHECK_INTS(FN(FN_TIMESTAMPDIFF, bt, 3, ci(TK_BIGINT, TU_YEAR), ea, col(0, tt)), c, 0, 0, 0,
               -1, 0, NV);
    CHECK_INTS(FN(FN_TIMESTAMPDIFF, bt, 3, ci(TK_BIGINT, TU_DAY), ea, col(0, tt)), c, 29, 60, 59,
               -365, -364, NV);
    CHECK_INTS(FN(FN_TIMESTAMPDIFF, bt, 3, ci(TK_BIGINT, TU_HOUR), ea, col(0, tt)), c, 29 * 24,
               60 * 24, 60 * 24 - 1, -365 * 24, -365 * 24 + 1, NV);
    CHECK_INTS(FN(FN_TIMESTAMPDIFF, bt, 3, ci(TK_BIGINT, TU_QUARTER), ea, col(0, tt)), c, 0, 0,
               0, -4, -3, NV);
}

/* ============================================================= intervals */

static void test_interval_literals_of_every_form(void **state)
{
    int64_t v;
    bool ym;
    Err e = {0};
    assert_int_equal(interval_parse("1", 1, TU_DAY, -1, &v, &ym, &e), 0);
    assert_true(v == DAY_US && !ym);
    assert_int_equal(interval_parse(" -2 ", 4, TU_HOUR, -1, &v, &ym, &e), 0);
    assert_true(v == -2 * H_US);
    assert_int_equal(interval_parse("90", 2, TU_MINUTE, -1, &v, &ym, &e), 0);
    assert_true(v == 90 * 60000000LL);
    assert_int_equal(interval_parse("1.5", 3, TU_SECOND, -1, &v, &ym, &e), 0);
    assert_true(v == 1500000);
    assert_int_equal(interval_parse("1-2", 3, TU_YEAR, TU_MONTH, &v, &ym, &e), 0);
    assert_true(v == 14 && ym);
    assert_int_equal(interval_parse("-1-11", 5, TU_YEAR, TU_MONTH, &v, &ym, &e), 0);
    assert_true(v == -23);
    assert_int_equal(interval_parse("3", 1, TU_MONTH, -1, &v, &ym, &e), 0);
    assert_true(v == 3 && ym);
    assert_int_equal(interval_parse("1 02:03:04.000005", 17, TU_DAY, TU_SECOND, &v, &ym, &e), 0);
    assert_true(v == DAY_US + 2 * H_US + 3 * 60000000LL + 4000005);
    assert_int_equal(interval_parse("2 03", 4, TU_DAY, TU_HOUR, &v, &ym, &e), 0);
    assert_true(v == 2 * DAY_US + 3 * H_US);
    assert_int_equal(interval_parse("10:30", 5, TU_HOUR, TU_MINUTE, &v, &ym, &e), 0);
    assert_true(v == 10 * H_US + 30 * 60000000LL);
    assert_int_equal(interval_parse("5:07", 4, TU_MINUTE, TU_SECOND, &v, &ym, &e), 0);
    assert_true(v == 307000000);
    /* bad forms: field out of range, wrong separator, fraction not on SECOND */
    const char *bad[] = {"1:60", "x", "", "1-", "1.5"};
    int from[] = {TU_HOUR, TU_DAY, TU_DAY, TU_YEAR, TU_MINUTE};
    int to[] = {TU_MINUTE, -1, -1, TU_MONTH, -1};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        err_clear(&e);
        assert_int_equal(interval_parse(bad[i], strlen(bad[i]), from[i], to[i], &v, &ym, &e),
                         SL_EDATA);
    }
    err_clear(&e);
    interval_parse("1-12", 4, TU_YEAR, TU_MONTH, &v, &ym, &e);
    assert_string_equal(e.msg, "invalid INTERVAL '1-12' YEAR TO MONTH");
    assert_int_equal(time_unit_parse("Days"), TU_DAY);
    assert_int_equal(time_unit_parse("quarter"), TU_QUARTER);
    assert_int_equal(time_unit_parse("eon"), -1);
}

static void test_interval_text_round_trips(void **state)
{
    static const struct {
        TypeKind k;
        int64_t v;
        const char *text;
    } cases[] = {
        {TK_INTERVAL_DT, 0, "0 00:00:00"},
        {TK_INTERVAL_DT, DAY_US + 2 * H_US + 500000, "1 02:00:00.5"},
        {TK_INTERVAL_DT, -10000000, "-0 00:00:10"},
        {TK_INTERVAL_DT, -(3 * DAY_US + 1), "-3 00:00:00.000001"},
        {TK_INTERVAL_YM, 14, "1-2"},
        {TK_INTERVAL_YM, -1, "-0-1"},
        {TK_INTERVAL_YM, 0, "0-0"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        SqlType t = type_make(cases[i].k, false);
        Buf b = {0};
        text_format(t, cases[i].v, 0, (Str){"", 0}, &b);
        buf_putc(&b, 0);
        assert_string_equal((char *)b.p, cases[i].text);
        int64_t back = 0;
        Err e = {0};
        if (text_parse(t, (char *)b.p, strlen((char *)b.p), A, &back, NULL, NULL, &e))
            fail_msg("%s: %s", cases[i].text, e.msg);
        assert_true(back == cases[i].v);
        buf_free(&b);
    }
    char tn[48];
    assert_string_equal(type_name(type_make(TK_INTERVAL_DT, 0), tn, sizeof(tn)),
                        "INTERVAL DAY TO SECOND");
    assert_string_equal(type_name(type_make(TK_INTERVAL_YM, 0), tn, sizeof(tn)),
                        "INTERVAL YEAR TO MONTH");
}

static void test_print_shows_intervals_and_new_functions(void **state)
{
    Buf b = BUF_INIT;
    SqlType tt = T(TK_TIMESTAMP);
    expr_print(mk(E_ADD, 0, tt, 2, col(0, tt), ci(TK_INTERVAL_DT, 90 * 60000000LL)), &b);
    assert_string_equal(buf_cstr(&b), "(#0 + INTERVAL '0 01:30:00' DAY TO SECOND)");
    buf_reset(&b);
    expr_print(FN(FN_ADD_MONTHS, tt, 2, col(0, tt), ci(TK_INTERVAL_YM, -14)), &b);
    assert_string_equal(buf_cstr(&b), "ADD_MONTHS(#0, INTERVAL '-1-2' YEAR TO MONTH)");
    buf_reset(&b);
    expr_print(FN(FN_EXTRACT_WEEK, T(TK_BIGINT), 1, col(0, tt)), &b);
    assert_string_equal(buf_cstr(&b), "EXTRACT(WEEK FROM #0)");
    buf_reset(&b);
    expr_print(FN(FN_LEFT, VC, 2, col(0, VC), ci(TK_INT, 2)), &b);
    assert_string_equal(buf_cstr(&b), "LEFT(#0, 2)");
    buf_free(&b);
}

#define T_(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T_(test_left_and_right_count_characters_and_clamp),
        T_(test_concat_is_null_when_any_operand_is),
        T_(test_initcap_starts_each_word_upper),
        T_(test_trim_removes_characters_of_a_set_from_the_chosen_side),
        T_(test_extract_week_quarter_and_subsecond_fields),
        T_(test_date_trunc_on_dates_and_timestamps),
        T_(test_add_months_clamps_to_the_end_of_the_month),
        T_(test_timestamp_plus_and_minus_day_time_intervals),
        T_(test_time_plus_interval_wraps_around_midnight),
        T_(test_timestampdiff_counts_whole_units_toward_zero),
        T_(test_interval_literals_of_every_form),
        T_(test_interval_text_round_trips),
        T_(test_print_shows_intervals_and_new_functions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

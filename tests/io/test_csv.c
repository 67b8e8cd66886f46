/*
 * tests/io/test_csv.c - CSV records: splitting a byte stream into records,
 * parsing them into chunk rows (quotes, NULL vs empty, every error path,
 * all-or-nothing rows) and formatting rows and headers back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "format_test.h"

static size_t rlen(const char *s, bool eof) { return fmt_csv_record_len(s, strlen(s), eof); }

/* Table (id INT NOT NULL, name VARCHAR, amount INT NOT NULL, ok BOOLEAN). */
static const char *names4[] = {"id", "name", "amount", "ok"};
static SqlType types4[4];
static RowSchema schema4 = {4, names4, types4};

static int setup4(void **state)
{
    types4[0] = ty(TK_INT, false);
    types4[1] = ty(TK_VARCHAR, true);
    types4[2] = ty(TK_INT, false);
    types4[3] = ty(TK_BOOL, true);
    return 0;
}

static int parse(const RowSchema *s, const char *rec, Chunk *c, Arena *a, Err *err)
{
    err_clear(err);
    return fmt_csv_parse(s, rec, strlen(rec), c, a, err);
}

static void test_csv_record_len_splits_lines_and_honours_quotes(void **state)
{
    assert_int_equal(rlen("1,2\n3,4\n", false), 4);
    assert_int_equal(rlen("1,2\r\n3,4\n", false), 5);
    assert_int_equal(rlen("1,2", false), 0);
    assert_int_equal(rlen("1,2", true), 3);
    assert_int_equal(rlen("", true), 0);
    assert_int_equal(rlen("", false), 0);
    assert_int_equal(rlen("1,\"a\nb\",3\nnext\n", false), 10);
    assert_int_equal(rlen("1,\"a\nb", false), 0);         /* quote still open */
    assert_int_equal(rlen("1,\"a\nb", true), 6);          /* the rest at eof */
    assert_int_equal(rlen("1,\"a\"\"\n\"\n", false), 9);  /* "" inside quotes */
    assert_int_equal(rlen("1,\"ab\"", false), 0);         /* next byte may be '"' */
    assert_int_equal(rlen("1,\"ab\"", true), 6);
    assert_int_equal(rlen("a\"b,\"c\n", false), 0);       /* mid-field quote is data: "c\n open */
    assert_int_equal(rlen("\"\"\n", false), 3);
    assert_int_equal(rlen("\n\n", false), 1);
}

static void test_csv_parse_reads_every_type(void **state)
{
    const char *names[] = {"b", "i", "big", "d", "x", "r", "s", "day", "t", "ts", "c"};
    SqlType types[] = {ty(TK_BOOL, false),   ty(TK_TINYINT, false), ty(TK_BIGINT, false),
                       dec(10, 2, false),    ty(TK_DOUBLE, false),  ty(TK_REAL, false),
                       ty(TK_VARCHAR, false), ty(TK_DATE, false),   ty(TK_TIME, false),
                       ty(TK_TIMESTAMP, false), ty(TK_CHAR, false)};
    types[10].len = 3;
    RowSchema s = {11, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 11, types, 4);
    Err err = {0};
    assert_int_equal(parse(&s, "true,-128,9223372036854775807,12.5,0.1,1.5,hello,2024-02-29,"
                               "13:14:15.5,2024-02-29 13:14:15,ab\r\n",
                           c, a, &err),
                     0);
    assert_int_equal(c->n, 1);
    assert_int_equal(c->w[0], 1);
    assert_int_equal(c->col[0].i[0], 1);
    assert_int_equal(c->col[1].i[0], -128);
    assert_true(c->col[2].i[0] == INT64_MAX);
    assert_int_equal(c->col[3].i[0], 1250);
    assert_true(c->col[4].f[0] == 0.1);
    assert_true(c->col[5].f[0] == 1.5);
    expect_str(c->col[6].s[0], "hello");
    assert_int_equal(c->col[7].i[0], date_from_ymd(2024, 2, 29));
    assert_int_equal(c->col[8].i[0], ((13 * 60 + 14) * 60 + 15) * 1000000LL + 500000);
    assert_int_equal(c->col[9].i[0], date_from_ymd(2024, 2, 29) * 86400000000LL +
                                         ((13 * 60 + 14) * 60 + 15) * 1000000LL);
    expect_str(c->col[10].s[0], "ab ");
    arena_free(a);
}

static void test_csv_parse_accepts_boolean_spellings(void **state)
{
    const char *names[] = {"b"};
    SqlType types[] = {ty(TK_BOOL, false)};
    RowSchema s = {1, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 1, types, 16);
    Err err = {0};
    const char *yes[] = {"t", "T", "1", "true", "TRUE", "True"};
    const char *no[] = {"f", "F", "0", "false", "FALSE", " false "};
    for (size_t k = 0; k < ARRAY_LEN(yes); k++) {
        assert_int_equal(parse(&s, yes[k], c, a, &err), 0);
        assert_int_equal(c->col[0].i[c->n - 1], 1);
        assert_int_equal(parse(&s, no[k], c, a, &err), 0);
        assert_int_equal(c->col[0].i[c->n - 1], 0);
    }
    assert_int_equal(parse(&s, "maybe", c, a, &err), SL_EDATA);
    assert_non_null(strstr(err.msg, "column \"b\": invalid BOOLEAN value \"maybe\""));
    arena_free(a);
}

static void test_csv_parse_handles_quotes_and_newlines_in_fields(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 4, types4, 8);
    Err err = {0};
    const char *rec = "\"7\",\"say \"\"hi\"\", then, go\nline two\",\"-3\",\"t\"\n";
    assert_int_equal(rlen(rec, false), strlen(rec));
    assert_int_equal(parse(&schema4, rec, c, a, &err), 0);
    assert_int_equal(c->col[0].i[0], 7);
    expect_str(c->col[1].s[0], "say \"hi\", then, go\nline two");
    assert_int_equal(c->col[2].i[0], -3);
    assert_int_equal(c->col[3].i[0], 1);
    /* a lone quoted quote, and CR LF inside quotes kept */
    assert_int_equal(parse(&schema4, "1,\"\"\"\",2,f", c, a, &err), 0);
    expect_str(c->col[1].s[1], "\"");
    assert_int_equal(parse(&schema4, "1,\"a\r\nb\",2,f\r\n", c, a, &err), 0);
    expect_str(c->col[1].s[2], "a\r\nb");
    /* a quote inside an unquoted field is data */
    assert_int_equal(parse(&schema4, "1,ab\"c,2,", c, a, &err), 0);
    expect_str(c->col[1].s[3], "ab\"c");
    arena_free(a);
}

static void test_csv_empty_unquoted_is_null_and_quoted_empty_is_empty_string(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 4, types4, 4);
    Err err = {0};
    assert_int_equal(parse(&schema4, "1,,2,\n", c, a, &err), 0);
    assert_int_equal(c->col[1].nul[0], 1);
    assert_int_equal(c->col[3].nul[0], 1);
    assert_int_equal(parse(&schema4, "1,\"\",2,\"t\"\n", c, a, &err), 0);
    assert_int_equal(c->col[1].nul[1], 0);
    expect_str(c->col[1].s[1], "");
    assert_non_null(c->col[1].s[1].p);
    assert_int_equal(c->col[3].nul[1], 0);
    arena_free(a);
}

static void test_csv_errors_name_the_column_and_leave_the_chunk_unchanged(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 4, types4, 4);
    Err err = {0};
    assert_int_equal(parse(&schema4, "1,a,2,t", c, a, &err), 0);
    static const struct {
        const char *rec;
        const char *msg;
    } cases[] = {
        {"1,a,2\n", "expected 4 fields, found 3"},
        {"1,a,2,t,extra\n", "expected 4 fields, found 5"},
        {"\n", "expected 4 fields, found 1"},
        {"1,a,x,t\n", "column \"amount\": invalid INT value \"x\""},
        {"1,a,99999999999,t\n", "column \"amount\": value 99999999999 out of range for INT"},
        {"1,a,,t\n", "column \"amount\" is NOT NULL"},
        {",a,2,t\n", "column \"id\" is NOT NULL"},
        {"1,a,\"\",t\n", "column \"amount\": invalid INT value \"\""},
        {"1,\"abc,2,t\n", "column \"name\": unterminated quoted field"},
        {"1,\"ab\"c,2,t\n", "column \"name\": text after the closing quote of a quoted field"},
        {"1,a,2,t,\"x\n", "field 5: unterminated quoted field"},
        {"1,a,2,maybe\n", "column \"ok\": invalid BOOLEAN value \"maybe\""},
    };
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        int rc = parse(&schema4, cases[k].rec, c, a, &err);
        if (rc != SL_EDATA || strcmp(err.msg, cases[k].msg) != 0)
            fail_msg("record %s: rc %d, message \"%s\", want \"%s\"", cases[k].rec, rc, err.msg,
                     cases[k].msg);
        assert_int_equal(c->n, 1);
    }
    /* the row before the failures is intact, and the next good row lands after it */
    assert_int_equal(c->col[0].i[0], 1);
    expect_str(c->col[1].s[0], "a");
    assert_int_equal(parse(&schema4, "5,b,6,f", c, a, &err), 0);
    assert_int_equal(c->n, 2);
    assert_int_equal(c->col[0].i[1], 5);
    arena_free(a);
}

static void test_csv_rows_round_trip_through_format_and_parse(void **state)
{
    const char *names[] = {"id", "s", "d", "x", "day", "ts", "b"};
    SqlType types[] = {ty(TK_BIGINT, false), ty(TK_VARCHAR, true),    dec(12, 3, true),
                       ty(TK_DOUBLE, true),  ty(TK_DATE, true),       ty(TK_TIMESTAMP, true),
                       ty(TK_BOOL, true)};
    RowSchema s = {7, names, types};
    const char *strs[] = {"plain", "", "with,comma", "with \"quotes\"", "multi\nline",
                          "cr\rhere", "crlf\r\n", "\"", ",", " spaced "};
    int n = (int)ARRAY_LEN(strs) + 1;
    Arena *a = arena_new(0);
    Chunk *src = chunk_new(a, 7, types, n);
    for (int r = 0; r < n; r++) {
        bool null_row = r == n - 1;
        src->col[0].i[r] = r == 0 ? INT64_MIN : r * 1000003LL;
        for (int j = 1; j < 7; j++)
            src->col[j].nul[r] = null_row;
        src->col[1].s[r] = null_row ? (Str){"", 0} : (Str){strs[r], (uint32_t)strlen(strs[r])};
        src->col[2].i[r] = -r * 1234567;
        src->col[3].f[r] = r * 0.1 - 0.35;
        src->col[4].i[r] = r * 1000 - 3000;
        src->col[5].i[r] = r * 86400123456789LL;
        src->col[6].i[r] = r % 2;
        src->w[r] = 1;
    }
    src->n = n;
    Buf text = BUF_INIT;
    fmt_csv_header(&s, &text);
    buf_putc(&text, '\n');
    size_t header = text.n;
    for (int r = 0; r < n; r++) {
        fmt_csv_row(src, r, &text);
        buf_puts(&text, r % 2 ? "\r\n" : "\n");
    }
    assert_memory_equal(text.p, "id,s,d,x,day,ts,b\n", header);
    Chunk *dst = chunk_new(a, 7, types, n);
    Err err = {0};
    size_t pos = header;
    while (pos < text.n) {
        size_t len = fmt_csv_record_len((const char *)text.p + pos, text.n - pos, true);
        assert_true(len > 0);
        if (fmt_csv_parse(&s, (const char *)text.p + pos, len, dst, a, &err))
            fail_msg("%s in record %.*s", err.msg, (int)len, (const char *)text.p + pos);
        pos += len;
    }
    assert_int_equal(dst->n, n);
    for (int r = 0; r < n; r++) {
        assert_int_equal(dst->col[0].i[r], src->col[0].i[r]);
        for (int j = 1; j < 7; j++)
            assert_int_equal(dst->col[j].nul[r], src->col[j].nul[r]);
        if (r == n - 1)
            continue;
        expect_str(dst->col[1].s[r], strs[r]);
        assert_int_equal(dst->col[2].i[r], src->col[2].i[r]);
        assert_true(dst->col[3].f[r] == src->col[3].f[r]);
        assert_int_equal(dst->col[4].i[r], src->col[4].i[r]);
        assert_int_equal(dst->col[5].i[r], src->col[5].i[r]);
        assert_int_equal(dst->col[6].i[r], src->col[6].i[r]);
    }
    buf_free(&text);
    arena_free(a);
}

static void test_csv_row_quotes_only_when_needed(void **state)
{
    SqlType types[] = {ty(TK_VARCHAR, true), ty(TK_VARCHAR, true), ty(TK_VARCHAR, true),
                       ty(TK_INT, true), ty(TK_VARCHAR, true)};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types, 1);
    c->col[0].s[0] = (Str){"x y", 3};
    c->col[1].s[0] = (Str){"", 0};
    c->col[2].s[0] = (Str){"q\"q", 3};
    c->col[3].i[0] = -42;
    c->col[4].nul[0] = 1;
    c->n = 1;
    Buf b = BUF_INIT;
    fmt_csv_row(c, 0, &b);
    assert_string_equal(buf_cstr(&b), "x y,\"\",\"q\"\"q\",-42,");
    buf_reset(&b);
    const char *hn[] = {"plain", "has,comma", "", "q\"uote"};
    RowSchema hs = {4, hn, types};
    fmt_csv_header(&hs, &b);
    assert_string_equal(buf_cstr(&b), "plain,\"has,comma\",\"\",\"q\"\"uote\"");
    buf_free(&b);
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_record_len_splits_lines_and_honours_quotes),
        cmocka_unit_test(test_csv_parse_reads_every_type),
        cmocka_unit_test(test_csv_parse_accepts_boolean_spellings),
        cmocka_unit_test(test_csv_parse_handles_quotes_and_newlines_in_fields),
        cmocka_unit_test(test_csv_empty_unquoted_is_null_and_quoted_empty_is_empty_string),
        cmocka_unit_test(test_csv_errors_name_the_column_and_leave_the_chunk_unchanged),
        cmocka_unit_test(test_csv_rows_round_trip_through_format_and_parse),
        cmocka_unit_test(test_csv_row_quotes_only_when_needed),
    };
    return cmocka_run_group_tests(tests, setup4, NULL);
}

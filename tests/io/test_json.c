/*
 * tests/io/test_json.c - JSON-lines records: insert/delete/plain rows,
 * string escapes, exact numbers, case-insensitive names, every error path
 * (with the chunk left unchanged) and formatting rows back.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "format_test.h"

static int parse(const RowSchema *s, const char *rec, Chunk *c, Arena *a, Err *err)
{
    err_clear(err);
    return fmt_json_parse(s, rec, strlen(rec), c, a, err);
}

/* Table (id BIGINT NOT NULL, name VARCHAR, amount DECIMAL(18,2), x DOUBLE, ok BOOLEAN). */
static const char *names5[] = {"id", "Name", "amount", "x", "ok"};
static SqlType types5[5];
static RowSchema schema5 = {5, names5, types5};

static int setup5(void **state)
{
    types5[0] = ty(TK_BIGINT, false);
    types5[1] = ty(TK_VARCHAR, true);
    types5[2] = dec(18, 2, true);
    types5[3] = ty(TK_DOUBLE, true);
    types5[4] = ty(TK_BOOL, true);
    return 0;
}

static void test_json_insert_delete_and_plain_rows_get_their_weights(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types5, 8);
    Err err = {0};
    assert_int_equal(parse(&schema5, "{\"insert\": {\"id\": 1, \"name\": \"a\"}}\n", c, a, &err), 0);
    assert_int_equal(parse(&schema5, "{\"delete\":{\"id\":2}}", c, a, &err), 0);
    assert_int_equal(parse(&schema5, " { \"id\" : 3 , \"ok\" : true } \r\n", c, a, &err), 0);
    assert_int_equal(parse(&schema5, "{\"id\": 4, \"ok\": false, \"name\": null}", c, a, &err), 0);
    assert_int_equal(c->n, 4);
    int64_t w[] = {1, -1, 1, 1};
    for (int r = 0; r < 4; r++) {
        assert_int_equal(c->w[r], w[r]);
        assert_int_equal(c->col[0].i[r], r + 1);
        assert_int_equal(c->col[2].nul[r], 1); /* missing members are NULL */
        assert_int_equal(c->col[3].nul[r], 1);
    }
    expect_str(c->col[1].s[0], "a");
    assert_int_equal(c->col[1].nul[1], 1);
    assert_int_equal(c->col[1].nul[3], 1);
    assert_int_equal(c->col[4].nul[2], 0);
    assert_int_equal(c->col[4].i[2], 1);
    assert_int_equal(c->col[4].i[3], 0);
    arena_free(a);
}

static void test_json_strings_decode_every_escape(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types5, 8);
    Err err = {0};
    assert_int_equal(
        parse(&schema5, "{\"id\":1,\"name\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t end\"}", c, a, &err),
        0);
    expect_str(c->col[1].s[0], "q\" b\\ s/ \b\f\n\r\t end");
    assert_int_equal(parse(&schema5, "{\"id\":1,\"name\":\"caf\\u00e9 \\u20AC \\ud83d\\ude00\"}", c,
                           a, &err),
                     0);
    expect_str(c->col[1].s[1], "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_int_equal(parse(&schema5, "{\"id\":1,\"name\":\"raw \xc3\xa9 utf8\"}", c, a, &err), 0);
    expect_str(c->col[1].s[2], "raw \xc3\xa9 utf8");
    assert_int_equal(parse(&schema5, "{\"id\":1,\"name\":\"\"}", c, a, &err), 0);
    expect_str(c->col[1].s[3], "");
    assert_int_equal(c->col[1].nul[3], 0);
    /* escaped member names, and strings for non-string columns */
    assert_int_equal(
        parse(&schema5, "{\"\\u0069d\":\"42\",\"amount\":\"1.5\",\"x\":\"-2.5\",\"ok\":\"t\"}", c,
              a, &err),
        0);
    assert_int_equal(c->col[0].i[4], 42);
    assert_int_equal(c->col[2].i[4], 150);
    assert_true(c->col[3].f[4] == -2.5);
    assert_int_equal(c->col[4].i[4], 1);
    arena_free(a);
}

static void test_json_numbers_are_exact(void **state)
{
    const char *names[] = {"big", "d", "x", "r", "tiny", "d0"};
    SqlType types[] = {ty(TK_BIGINT, false), dec(18, 2, false), ty(TK_DOUBLE, false),
                       ty(TK_REAL, false),   ty(TK_TINYINT, false), dec(18, 0, false)};
    RowSchema s = {6, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 6, types, 8);
    Err err = {0};
    assert_int_equal(parse(&s,
                           "{\"big\": 9223372036854775807, \"d\": 9999999999999999.99, "
                           "\"x\": 0.1, \"r\": 0.1, \"tiny\": -128, \"d0\": 999999999999999999}",
                           c, a, &err),
                     0);
    assert_true(c->col[0].i[0] == INT64_MAX);
    assert_true(c->col[1].i[0] == 999999999999999999LL);
    assert_true(c->col[2].f[0] == 0.1);
    assert_true(c->col[3].f[0] == (double)0.1f);
    assert_int_equal(c->col[4].i[0], -128);
    assert_true(c->col[5].i[0] == 999999999999999999LL);
    assert_int_equal(parse(&s,
                           "{\"big\": -9223372036854775808, \"d\": 1.005, \"x\": 1e300, "
                           "\"r\": -0, \"tiny\": 127, \"d0\": 1e3}",
                           c, a, &err),
                     0);
    assert_true(c->col[0].i[1] == INT64_MIN);
    assert_int_equal(c->col[1].i[1], 101); /* rounded half away from zero, not via double */
    assert_true(c->col[2].f[1] == 1e300);
    assert_int_equal(c->col[5].i[1], 1000);
    assert_int_equal(parse(&s,
                           "{\"big\": 0, \"d\": -0.125, \"x\": -1.5E-3, \"r\": 3.25e2, "
                           "\"tiny\": 0, \"d0\": 2.5}",
                           c, a, &err),
                     0);
    assert_int_equal(c->col[1].i[2], -13);
    assert_true(c->col[2].f[2] == -1.5e-3);
    assert_true(c->col[3].f[2] == 325);
    assert_int_equal(c->col[5].i[2], 3);
    arena_free(a);
}

static void test_json_member_names_match_case_insensitively_in_any_order(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types5, 2);
    Err err = {0};
    assert_int_equal(parse(&schema5, "{\"OK\": true, \"NAME\": \"n\", \"Id\": 5, \"X\": 2, "
                                     "\"AMOUNT\": 3}",
                           c, a, &err),
                     0);
    assert_int_equal(c->col[0].i[0], 5);
    expect_str(c->col[1].s[0], "n");
    assert_int_equal(c->col[2].i[0], 300);
    assert_true(c->col[3].f[0] == 2);
    assert_int_equal(c->col[4].i[0], 1);
    arena_free(a);
}

static void test_json_errors_say_why_and_leave_the_chunk_unchanged(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types5, 4);
    Err err = {0};
    assert_int_equal(parse(&schema5, "{\"id\": 1, \"name\": \"kept\"}", c, a, &err), 0);
    static const struct {
        const char *rec;
        const char *msg;
    } cases[] = {
        {"{\"id\": 1, \"nme\": \"x\"}", "unknown member \"nme\""},
        {"{\"id\": 1, \"id\": 2}", "duplicate member \"id\""},
        {"{\"name\": \"x\"}", "column \"id\" is NOT NULL"},
        {"{\"id\": null}", "column \"id\" is NOT NULL"},
        {"{\"id\": 1} x", "unexpected text after the JSON object"},
        {"{\"id\": 1}}", "unexpected text after the JSON object"},
        {"{\"id\": 1", "expected ',' or '}' after member \"id\""},
        {"{\"id\": 1,}", "expected a member name"},
        {"{\"id\" 1}", "expected ':' after member \"id\""},
        {"{\"id\": }", "column \"id\": invalid JSON value"},
        {"{\"id\":", "unexpected end of record"},
        {"", "expected a JSON object"},
        {"[1, 2]", "expected a JSON object"},
        {"{\"id\": 9223372036854775808}",
         "column \"id\": value 9223372036854775808 out of range for BIGINT"},
        {"{\"id\": 1.5}", "column \"id\": invalid BIGINT value \"1.5\""},
        {"{\"id\": \"abc\"}", "column \"id\": invalid BIGINT value \"abc\""},
        {"{\"id\": true}", "column \"id\": invalid BIGINT value true"},
        {"{\"id\": 01}", "expected ',' or '}' after member \"id\""},
        {"{\"id\": -}", "column \"id\": invalid JSON number"},
        {"{\"id\": 1.}", "column \"id\": invalid JSON number"},
        {"{\"id\": 1e}", "column \"id\": invalid JSON number"},
        {"{\"id\": nul}", "column \"id\": invalid JSON value"},
        {"{\"id\": 1, \"ok\": tru}", "column \"ok\": invalid JSON value"},
        {"{\"id\": 1, \"name\": {\"a\": 1}}", "column \"Name\": nested objects and arrays are not supported"},
        {"{\"id\": 1, \"name\": [1]}", "column \"Name\": nested objects and arrays are not supported"},
        {"{\"id\": 1, \"name\": \"abc}", "column \"Name\": unterminated string"},
        {"{\"id\": 1, \"name\": \"a\tb\"}", "column \"Name\": control character in string"},
        {"{\"id\": 1, \"name\": \"a\\u0000b\"}", "column \"Name\": \\u0000 is not allowed in a value"},
        {"{\"id\": 1, \"name\": \"\\ud83d\"}", "column \"Name\": unpaired surrogate in \\u escape"},
        {"{\"id\": 1, \"name\": \"\\ude00\"}", "column \"Name\": unpaired surrogate in \\u escape"},
        {"{\"id\": 1, \"name\": \"\\ud83d\\u0041\"}", "column \"Name\": unpaired surrogate in \\u escape"},
        {"{\"id\": 1, \"name\": \"\\u12g4\"}", "column \"Name\": invalid \\u escape"},
        {"{\"id\": 1, \"name\": \"\\x\"}", "column \"Name\": invalid escape in string"},
        {"{\"id\": 1, \"name\": \"ab\\\"}", "column \"Name\": unterminated string"},
        {"{\"id\": 1, \"amount\": 1e20}", "column \"amount\": value 1e20 out of range for DECIMAL(18,2)"},
        {"{\"id\": 1, \"x\": 1e400}", "column \"x\": value 1e400 out of range for DOUBLE"},
        {"{\"id\": 1, \"ok\": 2}", "column \"ok\": invalid BOOLEAN value \"2\""},
        {"{\"insert\": {\"id\": 1}, \"delete\": {\"id\": 1}}", "unexpected member after \"insert\""},
        {"{\"delete\": {\"id\": 1} x", "expected '}' to close the record"},
        {"{\"insert\": {\"id\": 1, \"bad\": 2}}", "unknown member \"bad\""},
        {"{\"insert\": 5}", "unknown member \"insert\""},
        {"{\"update\": {\"id\": 1}}", "unknown member \"update\""},
        {"{\"n\\u0061me\\\": 1}", "member name: unterminated string"},
        {"{\"\\q\": 1}", "member name: invalid escape in string"},
    };
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        int rc = parse(&schema5, cases[k].rec, c, a, &err);
        if (rc != SL_EDATA || strcmp(err.msg, cases[k].msg) != 0)
            fail_msg("record %s: rc %d, message \"%s\", want \"%s\"", cases[k].rec, rc, err.msg,
                     cases[k].msg);
        assert_int_equal(c->n, 1);
    }
    assert_int_equal(c->col[0].i[0], 1);
    expect_str(c->col[1].s[0], "kept");
    assert_int_equal(parse(&schema5, "{\"id\": 2}", c, a, &err), 0);
    assert_int_equal(c->n, 2);
    arena_free(a);
}

static void test_json_row_formats_and_parses_back(void **state)
{
    const char *names[] = {"id", "s", "d", "x", "day", "t", "ts", "b", "n"};
    SqlType types[] = {ty(TK_BIGINT, false), ty(TK_VARCHAR, false), dec(10, 2, false),
                       ty(TK_DOUBLE, false), ty(TK_DATE, false),    ty(TK_TIME, false),
                       ty(TK_TIMESTAMP, false), ty(TK_BOOL, false), ty(TK_INT, true)};
    RowSchema s = {9, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 9, types, 4);
    c->col[0].i[0] = INT64_MIN;
    const char *str = "a \"q\" \\ /\n\t\x01 \xc3\xa9";
    c->col[1].s[0] = (Str){str, (uint32_t)strlen(str)};
    c->col[2].i[0] = -1250;
    c->col[3].f[0] = 0.1;
    c->col[4].i[0] = date_from_ymd(2024, 2, 29);
    c->col[5].i[0] = 3723000000LL + 5;
    c->col[6].i[0] = date_from_ymd(1969, 12, 31) * 86400000000LL + 1;
    c->col[7].i[0] = 1;
    c->col[8].nul[0] = 1;
    c->w[0] = 1;
    c->n = 1;
    Buf b = BUF_INIT;
    fmt_json_row(&s, c, 0, &b);
    assert_string_equal(buf_cstr(&b),
                        "{\"id\":-9223372036854775808,\"s\":\"a \\\"q\\\" \\\\ /\\n\\t\\u0001 "
                        "\xc3\xa9\",\"d\":-12.50,\"x\":0.1,\"day\":\"2024-02-29\","
                        "\"t\":\"01:02:03.000005\",\"ts\":\"1969-12-31 00:00:00.000001\","
                        "\"b\":true,\"n\":null}");
    Chunk *back = chunk_new(a, 9, types, 1);
    Err err = {0};
    if (fmt_json_parse(&s, (const char *)b.p, b.n, back, a, &err))
        fail_msg("%s", err.msg);
    for (int j = 0; j < 9; j++) {
        const Vec *u = &c->col[j], *v = &back->col[j];
        assert_int_equal(vec_is_null(u, 0), vec_is_null(v, 0));
        if (vec_is_null(u, 0))
            continue;
        if (u->i)
            assert_true(u->i[0] == v->i[0]);
        else if (u->f)
            assert_true(u->f[0] == v->f[0]);
        else
            expect_str(v->s[0], str);
    }
    /* non-finite doubles are written as strings, which read back */
    const char *dn[] = {"x"};
    SqlType dt[] = {ty(TK_DOUBLE, false)};
    RowSchema ds = {1, dn, dt};
    Chunk *d = chunk_new(a, 1, dt, 3);
    d->col[0].f[0] = NAN;
    d->col[0].f[1] = INFINITY;
    d->col[0].f[2] = -INFINITY;
    d->n = 3;
    Chunk *dback = chunk_new(a, 1, dt, 3);
    for (int r = 0; r < 3; r++) {
        buf_reset(&b);
        fmt_json_row(&ds, d, r, &b);
        assert_int_equal(b.p[5], '"');
        if (fmt_json_parse(&ds, (const char *)b.p, b.n, dback, a, &err))
            fail_msg("%s: %s", buf_cstr(&b), err.msg);
    }
    assert_true(isnan(dback->col[0].f[0]));
    assert_true(dback->col[0].f[1] == INFINITY && dback->col[0].f[2] == -INFINITY);
    buf_free(&b);
    arena_free(a);
}

static void test_json_handles_many_columns(void **state)
{
    enum { N = 100 };
    const char *names[N];
    SqlType types[N];
    char namebuf[N][16];
    Buf rec = BUF_INIT;
    buf_putc(&rec, '{');
    for (int j = 0; j < N; j++) {
        snprintf(namebuf[j], sizeof(namebuf[j]), "c%d", j);
        names[j] = namebuf[j];
        types[j] = ty(TK_INT, true);
        if (j % 3 == 0)
            continue;
        buf_printf(&rec, "%s\"c%d\":%d", rec.n > 1 ? "," : "", j, j * 7);
    }
    buf_putc(&rec, '}');
    RowSchema s = {N, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, N, types, 1);
    Err err = {0};
    assert_int_equal(fmt_json_parse(&s, (const char *)rec.p, rec.n, c, a, &err), 0);
    for (int j = 0; j < N; j++) {
        assert_int_equal(c->col[j].nul[0], j % 3 == 0);
        if (j % 3)
            assert_int_equal(c->col[j].i[0], j * 7);
    }
    buf_free(&rec);
    arena_free(a);
}

static int dbz(const char *rec, Chunk *c, Arena *a, int *rows, Err *err)
{
    err_clear(err);
    return fmt_json_parse_debezium(&schema5, rec, strlen(rec), c, a, rows, err);
}

static void test_json_debezium_envelopes_give_inserts_and_deletes(void **state)
{
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 5, types5, 16);
    Err err = {0};
    int rows;
    /* bare envelope, members in any order, nested members skipped */
    assert_int_equal(dbz("{\"before\": null, \"after\": {\"id\": 1, \"name\": \"a\"}, "
                         "\"source\": {\"x\": [1, {\"y\": \"}\"}], \"z\": true}, \"op\": \"c\", "
                         "\"ts_ms\": 17}", c, a, &rows, &err), 0);
    assert_int_equal(rows, 1);
    /* with the schema/payload wrapper; u gives -before +after */
    assert_int_equal(dbz("{\"schema\": {\"type\": \"struct\", \"fields\": []}, \"payload\": "
                         "{\"op\": \"u\", \"before\": {\"id\": 1, \"name\": \"a\"}, "
                         "\"after\": {\"id\": 1, \"name\": \"b\"}}}", c, a, &rows, &err), 0);
    assert_int_equal(rows, 2);
    assert_int_equal(dbz("{\"op\": \"d\", \"before\": {\"id\": 1, \"name\": \"b\"}, "
                         "\"after\": null}", c, a, &rows, &err), 0);
    assert_int_equal(dbz("{\"op\": \"r\", \"after\": {\"id\": 7}}", c, a, &rows, &err), 0);
    assert_int_equal(c->n, 5);
    int64_t w[] = {1, -1, 1, -1, 1};
    const char *nm[] = {"a", "a", "b", "b", NULL};
    for (int r = 0; r < 5; r++) {
        assert_int_equal(c->w[r], w[r]);
        if (nm[r])
            expect_str(c->col[1].s[r], nm[r]);
    }
    assert_int_equal(c->col[0].i[4], 7);
    /* errors leave the chunk unchanged and say why */
    assert_int_not_equal(dbz("{\"op\": \"t\"}", c, a, &rows, &err), 0);
    assert_non_null(strstr(err.msg, "not c, r, u or d"));
    assert_int_not_equal(dbz("{\"op\": \"u\", \"after\": {\"id\": 2}}", c, a, &rows, &err), 0);
    assert_non_null(strstr(err.msg, "before"));
    assert_int_not_equal(dbz("{\"op\": \"u\", \"before\": {\"id\": 2}, \"after\": {\"id\": "
                             "\"x\"}}", c, a, &rows, &err), 0);
    assert_int_not_equal(dbz("{\"after\": {\"id\": 2}}", c, a, &rows, &err), 0);
    assert_non_null(strstr(err.msg, "no \"op\""));
    assert_int_not_equal(dbz("{\"op\": \"c\", \"after\": {\"id\": 2}} x", c, a, &rows, &err), 0);
    assert_int_not_equal(dbz("{\"op\": \"c\", \"after\": {\"id\": 2}, \"q\": [1, 2}", c, a, &rows,
                             &err), 0);
    assert_int_equal(c->n, 5);
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_insert_delete_and_plain_rows_get_their_weights),
        cmocka_unit_test(test_json_strings_decode_every_escape),
        cmocka_unit_test(test_json_numbers_are_exact),
        cmocka_unit_test(test_json_member_names_match_case_insensitively_in_any_order),
        cmocka_unit_test(test_json_errors_say_why_and_leave_the_chunk_unchanged),
        cmocka_unit_test(test_json_row_formats_and_parses_back),
        cmocka_unit_test(test_json_handles_many_columns),
        cmocka_unit_test(test_json_debezium_envelopes_give_inserts_and_deletes),
    };
    return cmocka_run_group_tests(tests, setup5, NULL);
}

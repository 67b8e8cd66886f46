/*
 * tests/expr/test_variant.c - the VARIANT encoding (expr/variant.h): equal
 * JSON values give equal bytes whatever their spelling, the bytes hold no
 * NUL, comparing encodings orders numbers by value, printing then parsing
 * gives the same bytes, access by key and index, and malformed text is
 * refused (never a crash, also for every prefix of valid text); values
 * built by json_build_object, ||, jsonb_set have the bytes of their parsed
 * text (canonical), and jsonb's containment and existence rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr/variant.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Encoding of JSON text s into b (reset first); fails the test when s is
   refused. */
static void enc(const char *s, Buf *b)
{
    buf_reset(b);
    const char *why = var_parse_json(s, strlen(s), b);
    if (why)
        fail_msg("%s: %s", s, why);
    assert_null(memchr(b->p, 0, b->n));
}

static int cmp_enc(const Buf *a, const Buf *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void test_equal_values_have_equal_bytes(void **state)
{
    (void)state;
    static const char *const same[][2] = {
        {"1", "1.0"}, {"1", "10e-1"}, {"100", "1e2"}, {"-0.5", "-5E-1"}, {"0", "-0.000"},
        {"0", "0e99"}, {"{\"a\":1,\"b\":2}", " { \"b\" : 2.00 , \"a\" : 1 } "},
        {"{\"a\":1,\"a\":2}", "{\"a\":2}"}, {"\"\\u00e9\"", "\"\xc3\xa9\""},
        {"[1,[2,{}]]", "[ 1 , [ 2.0 , { } ] ]"}, {"\"a\\/b\"", "\"a/b\""},
        {"12345678901234567890123", "1.2345678901234567890123e22"},
    };
    Buf a = BUF_INIT, b = BUF_INIT;
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        enc(same[i][0], &a);
        enc(same[i][1], &b);
        if (cmp_enc(&a, &b) != 0)
            fail_msg("%s and %s differ", same[i][0], same[i][1]);
    }
    static const char *const differ[][2] = {
        {"1", "\"1\""}, {"[1,2]", "[2,1]"}, {"{}", "[]"}, {"null", "false"}, {"\"\"", "null"},
        {"{\"a\":1}", "{\"a\":1,\"b\":null}"}, {"{\"\":1}", "{}"}, {"0.1", "0.10000000000000001"},
    };
    for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
        enc(differ[i][0], &a);
        enc(differ[i][1], &b);
        if (cmp_enc(&a, &b) == 0)
            fail_msg("%s and %s are equal", differ[i][0], differ[i][1]);
    }
    buf_free(&a);
    buf_free(&b);
}

/* A random decimal text: sign, up to 7 integer and 6 fraction digits, an
   optional exponent. */
static void random_number(char *s, size_t size)
{
    int ni = (int)(next() % 8), nf = (int)(next() % 7);
    size_t k = 0;
    if (next() & 1)
        s[k++] = '-';
    s[k++] = (char)('0' + (ni ? 1 + next() % 9 : 0));
    for (int j = 1; j < ni; j++)
        s[k++] = (char)('0' + next() % 10);
    if (nf) {
        s[k++] = '.';
        for (int j = 0; j < nf; j++)
            s[k++] = (char)('0' + (next() % 3 ? next() % 10 : 0));
    }
    s[k] = 0;
    if (next() % 3 == 0)
        snprintf(s + k, size - k, "e%d", (int)(next() % 41) - 20);
}

static void test_bytes_order_numbers_by_value(void **state)
{
    (void)state;
    Buf a = BUF_INIT, b = BUF_INIT, t = BUF_INIT;
    char x[64], y[64];
    for (int i = 0; i < 20000; i++) {
        random_number(x, sizeof(x));
        random_number(y, sizeof(y));
        if (next() % 8 == 0)
            strcpy(y, x);
        long double vx = strtold(x, NULL), vy = strtold(y, NULL);
        enc(x, &a);
        enc(y, &b);
        int want = (vx > vy) - (vx < vy), got = cmp_enc(&a, &b);
        got = (got > 0) - (got < 0);
        if (want != got)
            fail_msg("%s vs %s: bytes say %d, values %d", x, y, got, want);
        /* printing reads back to the same bytes */
        buf_reset(&t);
        var_to_json((Str){(const char *)a.p, (uint32_t)a.n}, &t);
        enc(buf_cstr(&t), &b);
        assert_int_equal(cmp_enc(&a, &b), 0);
    }
    buf_free(&a);
    buf_free(&b);
    buf_free(&t);
}

static void test_print_is_compact_sorted_json(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{\"b\": [1, 2.50, {\"x\": null}], \"a\": \"hi\\n\\u0001\"}",
         "{\"a\":\"hi\\n\\u0001\",\"b\":[1,2.5,{\"x\":null}]}"},
        {"1e20", "100000000000000000000"}, {"1e21", "1e+21"}, {"0.000001", "0.000001"},
        {"0.0000001", "1e-7"}, {"-1.50e-7", "-1.5e-7"}, {"[true,false,null]", "[true,false,null]"},
        {"{\"ab\":1,\"b\":2,\"a\":3}", "{\"a\":3,\"ab\":1,\"b\":2}"}, {"\"\\\"\\\\\"", "\"\\\"\\\\\""},
    };
    Buf a = BUF_INIT, t = BUF_INIT;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enc(cases[i][0], &a);
        buf_reset(&t);
        var_to_json((Str){(const char *)a.p, (uint32_t)a.n}, &t);
        assert_string_equal(buf_cstr(&t), cases[i][1]);
    }
    buf_free(&a);
    buf_free(&t);
}

static void test_members_and_elements(void **state)
{
    (void)state;
    Buf a = BUF_INIT, t = BUF_INIT;
    enc("{\"k\": [10, {\"\\u0001x\": \"v\"}], \"\": 0, \"kk\": 1}", &a);
    Str v = {(const char *)a.p, (uint32_t)a.n}, m, e;
    assert_true(var_get_key(v, "k", 1, &m));
    assert_int_equal(var_kind(m), VK_ARRAY);
    assert_true(var_get_index(m, 1, &e));
    assert_true(var_get_key(e, "\x01x", 2, &e));
    buf_reset(&t);
    var_to_json(e, &t);
    assert_string_equal(buf_cstr(&t), "\"v\"");
    assert_true(var_get_index(m, -2, &e));
    assert_true(var_get_key(v, "", 0, &e));
    assert_false(var_get_key(v, "K", 1, &e));
    assert_false(var_get_index(m, 2, &e));
    assert_false(var_get_index(m, -3, &e));
    assert_false(var_get_index(v, 0, &e));
    buf_free(&a);
    buf_free(&t);
}

static void test_malformed_text_is_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", " ", "nul", "tru", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\":1,}",
        "01", "1.", ".5", "-", "1e", "+1", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u0000\"",
        "\"\\ud800\"", "\"\\udc00x\"", "\"a\nb\"", "\"\xff\"", "\"\xc0\x80\"", "1 2", "NaN",
        "Infinity", "1e999999", "[[[[",
    };
    Buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(&b);
        if (!var_parse_json(bad[i], strlen(bad[i]), &b))
            fail_msg("accepted %s", bad[i]);
    }
    /* nesting is bounded */
    char deep[2 * VAR_MAX_DEPTH + 8];
    memset(deep, '[', VAR_MAX_DEPTH + 1);
    memset(deep + VAR_MAX_DEPTH + 1, ']', VAR_MAX_DEPTH + 1);
    buf_reset(&b);
    assert_non_null(var_parse_json(deep, 2 * VAR_MAX_DEPTH + 2, &b));
    buf_reset(&b);
    assert_null(var_parse_json(deep + 1, 2 * VAR_MAX_DEPTH, &b));
    /* every proper prefix of a valid text is refused */
    const char *ok = "{\"a\": [1, -2.5e3, \"x\\u00e9\\n\"], \"b\": {\"c\": null, \"d\": true}}";
    for (size_t n = 0; n < strlen(ok); n++) {
        buf_reset(&b);
        if (!var_parse_json(ok, n, &b))
            fail_msg("accepted the prefix %.*s", (int)n, ok);
    }
    buf_free(&b);
}

static Str str_of(const Buf *b) { return (Str){(const char *)b->p, (uint32_t)b->n}; }

/* Built encoding got equals the parse of JSON text want, byte for byte. */
static void same_as(const Buf *got, const char *want)
{
    Buf w = BUF_INIT, t = BUF_INIT;
    enc(want, &w);
    if (cmp_enc(got, &w) != 0) {
        var_to_json(str_of(got), &t);
        buf_putc(&t, 0);
        fail_msg("built %s, want %s", (const char *)t.p, want);
    }
    buf_free(&w);
    buf_free(&t);
}

static void test_built_values_are_canonical(void **state)
{
    (void)state;
    Buf one = BUF_INIT, two = BUF_INIT, body = BUF_INIT, out = BUF_INIT;
    /* json_build_object: members out of order, a duplicate (last wins) */
    enc("1.50", &one);
    enc("[true]", &two);
    var_put_member(&body, "b", 1, str_of(&one));
    var_put_member(&body, "a\x01", 2, str_of(&two));
    var_put_member(&body, "b", 1, str_of(&two));
    var_put_member(&body, "", 0, str_of(&one));
    var_put_object(&out, body.p, body.n);
    same_as(&out, "{\"b\": [true], \"a\\u0001\": [true], \"\": 1.5}");
    buf_reset(&out);
    var_put_object(&out, NULL, 0);
    same_as(&out, "{}");
    /* || by jsonb's rules */
    static const char *const cat[][3] = {
        {"{\"a\":1,\"b\":2}", "{\"a\":3,\"c\":4}", "{\"a\":3,\"b\":2,\"c\":4}"},
        {"[1]", "[2,[3]]", "[1,2,[3]]"},
        {"[1]", "2", "[1,2]"},
        {"1", "[2]", "[1,2]"},
        {"{\"a\":1}", "[2]", "[{\"a\":1},2]"},
        {"{\"a\":1}", "\"x\"", "[{\"a\":1},\"x\"]"},
        {"null", "null", "[null,null]"},
        {"{}", "{}", "{}"},
    };
    for (size_t i = 0; i < sizeof(cat) / sizeof(cat[0]); i++) {
        enc(cat[i][0], &one);
        enc(cat[i][1], &two);
        buf_reset(&out);
        var_concat(str_of(&one), str_of(&two), &out);
        same_as(&out, cat[i][2]);
    }
    /* jsonb_set */
    static const char *const set[][4] = { /* doc, path (a,b), new, result */
        {"{\"a\":[1,2]}", "a0", "9", "{\"a\":[9,2]}"},
        {"{\"a\":[1,2]}", "b", "9", "{\"a\":[1,2],\"b\":9}"},
        {"{\"a\":[1,2]}", "a5", "9", "{\"a\":[1,2,9]}"},
        {"{\"a\":[1,2]}", "a-", "9", "{\"a\":[9,1,2]}"},
        {"{\"a\":{\"z\":1}}", "ay", "{\"q\":1}", "{\"a\":{\"y\":{\"q\":1},\"z\":1}}"},
        {"{\"a\":1}", "bc", "9", "{\"a\":1}"},
    };
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
        const char *ps = set[i][1];
        Str path[2];
        int np = 0;
        path[np++] = (Str){ps, 1};
        if (ps[1] == '-')
            path[np++] = (Str){"-9", 2};
        else if (ps[1])
            path[np++] = (Str){ps + 1, 1};
        enc(set[i][0], &one);
        enc(set[i][2], &two);
        buf_reset(&out);
        assert_true(var_set_path(str_of(&one), path, np, str_of(&two), true, &out));
        same_as(&out, set[i][3]);
    }
    enc("3", &one);
    buf_reset(&out);
    assert_false(var_set_path(str_of(&one), (Str[]){{"a", 1}}, 1, str_of(&one), true, &out));
    buf_free(&one);
    buf_free(&two);
    buf_free(&body);
    buf_free(&out);
}

static void test_containment_and_existence(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        bool r;
    } c[] = {
        {"{\"a\":[1,2,{\"b\":3}],\"c\":1}", "{\"a\":[{\"b\":3},1]}", true},
        {"{\"a\":[1]}", "{\"a\":1}", false},
        {"[1,2]", "1", true},
        {"1", "[1]", false},
        {"[1,[2]]", "[2]", false},
        {"[[1,2]]", "[[1]]", true},
        {"[1,1,2]", "[2,2,1]", true},
        {"1.0", "1", true},
        {"{}", "[]", false},
        {"\"a\"", "\"a\"", true},
        {"[]", "[]", true},
        {"{\"a\":null}", "{\"a\":null}", true},
    };
    Buf a = BUF_INIT, b = BUF_INIT;
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        enc(c[i].a, &a);
        enc(c[i].b, &b);
        if (var_contains(str_of(&a), str_of(&b)) != c[i].r)
            fail_msg("%s @> %s is not %d", c[i].a, c[i].b, c[i].r);
    }
    enc("{\"a\":1,\"bb\":2}", &a);
    assert_true(var_exists(str_of(&a), "bb", 2));
    assert_false(var_exists(str_of(&a), "b", 1));
    enc("[\"a\",1,[\"b\"]]", &a);
    assert_true(var_exists(str_of(&a), "a", 1));
    assert_false(var_exists(str_of(&a), "b", 1));
    assert_false(var_exists(str_of(&a), "1", 1));
    assert_int_equal(var_array_length(str_of(&a)), 3);
    enc("\"a\"", &a);
    assert_true(var_exists(str_of(&a), "a", 1));
    assert_int_equal(var_array_length(str_of(&a)), -1);
    buf_free(&a);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_values_have_equal_bytes),
        cmocka_unit_test(test_bytes_order_numbers_by_value),
        cmocka_unit_test(test_print_is_compact_sorted_json),
        cmocka_unit_test(test_members_and_elements),
        cmocka_unit_test(test_malformed_text_is_refused),
        cmocka_unit_test(test_built_values_are_canonical),
        cmocka_unit_test(test_containment_and_existence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

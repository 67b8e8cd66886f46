/*
 * tests/io/test_utf8.c - the UTF-8 check every CSV and JSON record passes
 * (io/utf8.h): every valid form is accepted, every invalid one (stray
 * continuation bytes, truncated sequences, overlong forms, surrogates,
 * code points above U+10FFFF, bytes never used) is found at the right
 * offset, in and past the eight-byte ASCII fast path; and the CSV and JSON
 * parsers refuse such records whole with the reason while the records
 * around them go on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "base/arena.h"
#include "io/format.h"
#include "io/utf8.h"

static size_t vp(const char *s) { return utf8_valid_prefix(s, strlen(s)); }

static void test_utf8_accepts_ascii_and_every_sequence_length(void **state)
{
    assert_int_equal(vp(""), 0);
    assert_int_equal(vp("plain ascii text, longer than eight bytes"), 41);
    assert_int_equal(vp("caf\xc3\xa9"), 5);                 /* U+00E9 */
    assert_int_equal(vp("\xe2\x82\xac euro"), 8);            /* U+20AC */
    assert_int_equal(vp("\xf0\x9f\x98\x80"), 4);             /* U+1F600 */
    assert_int_equal(vp("\xf4\x8f\xbf\xbf"), 4);             /* U+10FFFF */
    assert_int_equal(vp("\xed\x9f\xbf"), 3);                 /* U+D7FF */
    assert_int_equal(vp("\xee\x80\x80"), 3);                 /* U+E000 */
    assert_int_equal(vp("\xc2\x80"), 2);                     /* U+0080 */
}

static void test_utf8_finds_each_kind_of_bad_byte_at_its_offset(void **state)
{
    assert_int_equal(vp("abc\x80"), 3);                      /* stray continuation */
    assert_int_equal(vp("abc\xc3"), 3);                      /* truncated */
    assert_int_equal(vp("abc\xe2\x82"), 3);                  /* truncated */
    assert_int_equal(vp("\xc3("), 0);                        /* bad continuation */
    assert_int_equal(vp("\xc0\xaf"), 0);                     /* overlong '/' */
    assert_int_equal(vp("\xc1\xbf"), 0);                     /* overlong */
    assert_int_equal(vp("\xe0\x80\xaf"), 0);                 /* overlong */
    assert_int_equal(vp("\xf0\x80\x80\xaf"), 0);             /* overlong */
    assert_int_equal(vp("\xed\xa0\x80"), 0);                 /* surrogate U+D800 */
    assert_int_equal(vp("\xed\xbf\xbf"), 0);                 /* surrogate U+DFFF */
    assert_int_equal(vp("\xf4\x90\x80\x80"), 0);             /* U+110000 */
    assert_int_equal(vp("\xf5\x80\x80\x80"), 0);
    assert_int_equal(vp("\xff"), 0);
    assert_int_equal(vp("\xfe"), 0);
    /* past the fast path, and right at its eight-byte boundaries */
    assert_int_equal(vp("0123456789abcdef\xff"), 16);
    assert_int_equal(vp("01234567\xc3\xa9" "89abcdef\x80"), 18);
    assert_int_equal(vp("0123456\xc3\xa9" "0123456789\xe2\x82"), 19);
}

static void test_utf8_bad_record_is_a_parse_error_and_the_others_go_on(void **state)
{
    const char *names[] = {"id", "s"};
    SqlType types[2] = {type_make(TK_INT, false), type_make(TK_VARCHAR, true)};
    RowSchema sc = {2, names, types};
    Arena *a = arena_new(0);
    Chunk *c = chunk_new(a, 2, types, 8);
    Err err = {0};
    assert_int_equal(fmt_csv_parse(&sc, "1,caf\xc3\xa9\n", 8, c, a, &err), 0);
    err_clear(&err);
    assert_int_not_equal(fmt_csv_parse(&sc, "2,ab\xff\n", 6, c, a, &err), 0);
    assert_non_null(strstr(err.msg, "invalid UTF-8 at byte 5"));
    err_clear(&err);
    assert_int_not_equal(fmt_csv_parse(&sc, "3,\"\xed\xa0\x80\"", 7, c, a, &err), 0);
    assert_non_null(strstr(err.msg, "invalid UTF-8"));
    err_clear(&err);
    const char *good = "{\"id\": 4, \"s\": \"\xe2\x82\xac\"}";
    assert_int_equal(fmt_json_parse(&sc, good, strlen(good), c, a, &err), 0);
    const char *bad = "{\"id\": 5, \"s\": \"x\xc0\xaf\"}";
    err_clear(&err);
    assert_int_not_equal(fmt_json_parse(&sc, bad, strlen(bad), c, a, &err), 0);
    assert_non_null(strstr(err.msg, "invalid UTF-8 at byte 18"));
    const char *badname = "{\"id\": 6, \"\xfe\": 1}";
    err_clear(&err);
    assert_int_not_equal(fmt_json_parse(&sc, badname, strlen(badname), c, a, &err), 0);
    /* only the good records are rows, and their strings are intact */
    assert_int_equal(c->n, 2);
    assert_int_equal(c->col[0].i[0], 1);
    assert_int_equal(c->col[0].i[1], 4);
    assert_int_equal(c->col[1].s[0].n, 5);
    assert_memory_equal(c->col[1].s[1].p, "\xe2\x82\xac", 3);
    arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_accepts_ascii_and_every_sequence_length),
        cmocka_unit_test(test_utf8_finds_each_kind_of_bad_byte_at_its_offset),
        cmocka_unit_test(test_utf8_bad_record_is_a_parse_error_and_the_others_go_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/pgwire/test_binfmt.c - binary results (src/pgwire/binfmt.c): text
 * DataRows re-encoded with Bind's result format codes, checked against the
 * bytes PostgreSQL's numeric_send, int8send, date_send and timestamp_send
 * give for the same values (written out by hand from PostgreSQL 15), and
 * the refusals: a type without a binary form (named), a bad format code, a
 * format count that fits no column count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pgwire/pg_int.h"

/* The single field of the single row of a one-column result of type oid
   holding text v, encoded in binary; its length into *n (-1 NULL). */
static int field(uint32_t oid, const char *v, unsigned char *out, int *n, PgErr *e)
{
    PgRes r;
    memset(&r, 0, sizeof(r));
    pgres_cols(&r, 1);
    pgres_col(&r, 0, "c", oid);
    const char *vals[1] = {v};
    pgres_row(&r, vals);
    int16_t bin = 1;
    int rc = pgres_set_formats(&r, 1, &bin, e);
    if (!rc) {
        assert_non_null(r.fmts);
        assert_int_equal(r.fmts[0], 1);
        const unsigned char *p = r.rows.p;
        assert_int_equal(p[0], 'D');
        assert_int_equal(p[5] << 8 | p[6], 1);
        *n = (int)((uint32_t)p[7] << 24 | (uint32_t)p[8] << 16 | (uint32_t)p[9] << 8 | p[10]);
        if (*n > 0)
            memcpy(out, p + 11, (size_t)*n);
    }
    pgres_free(&r);
    return rc;
}

static void expect(uint32_t oid, const char *v, const unsigned char *want, int wn)
{
    unsigned char got[256];
    int n = 0;
    PgErr e;
    memset(&e, 0, sizeof(e));
    assert_int_equal(field(oid, v, got, &n, &e), 0);
    assert_int_equal(n, wn);
    assert_memory_equal(got, want, (size_t)wn);
}

static void test_numeric(void **state)
{
    (void)state;
    /* ndigits, weight, sign, dscale, base-10000 digits */
    expect(1700, "12.5000", (const unsigned char[]){0, 2, 0, 0, 0, 0, 0, 4, 0, 12, 0x13, 0x88},
           12);
    expect(1700, "-0.0700", (const unsigned char[]){0, 1, 0xff, 0xff, 0x40, 0, 0, 4, 0x02, 0xbc},
           10);
    expect(1700, "10000", (const unsigned char[]){0, 1, 0, 1, 0, 0, 0, 0, 0, 1}, 10);
    expect(1700, "0.0001", (const unsigned char[]){0, 1, 0xff, 0xff, 0, 0, 0, 4, 0, 1}, 10);
    expect(1700, "0.0000", (const unsigned char[]){0, 0, 0, 0, 0, 0, 0, 4}, 8);
    expect(1700, "-0", (const unsigned char[]){0, 0, 0, 0, 0, 0, 0, 0}, 8);
    /* 1 2345 6789 . 1234 5678 9 */
    expect(1700, "123456789.123456789",
           (const unsigned char[]){0, 6, 0, 2, 0, 0, 0, 9, 0, 1, 0x09, 0x29, 0x1a, 0x85, 0x04,
                                   0xd2, 0x16, 0x2e, 0x23, 0x28}, 20);
    /* DECIMAL(38,18) and DECIMAL(38,0) values: 1234 5678 9012 3456 7890 .
       1234 5678 9012 3456 78(00); -10^-18 is 100 * 10000^-5; 38 nines */
    expect(1700, "12345678901234567890.123456789012345678",
           (const unsigned char[]){0x00, 0x0a, 0x00, 0x04, 0x00, 0x00, 0x00, 0x12, 0x04, 0xd2, 0x16, 0x2e, 0x23, 0x34, 0x0d, 0x80, 0x1e, 0xd2, 0x04, 0xd2, 0x16, 0x2e, 0x23, 0x34, 0x0d, 0x80, 0x1e, 0x78}, 28);
    expect(1700, "-0.000000000000000001", (const unsigned char[]){0x00, 0x01, 0xff, 0xfb, 0x40, 0x00, 0x00, 0x12, 0x00, 0x64}, 10);
    expect(1700, "-99999999999999999999999999999999999999",
           (const unsigned char[]){0x00, 0x0a, 0x00, 0x09, 0x40, 0x00, 0x00, 0x00, 0x00, 0x63, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f, 0x27, 0x0f}, 28);
}

static void test_fixed(void **state)
{
    (void)state;
    expect(20, "-9223372036854775808", (const unsigned char[]){0x80, 0, 0, 0, 0, 0, 0, 0}, 8);
    expect(21, "-2", (const unsigned char[]){0xff, 0xfe}, 2);
    expect(16, "t", (const unsigned char[]){1}, 1);
    expect(1082, "1999-12-31", (const unsigned char[]){0xff, 0xff, 0xff, 0xff}, 4);
    expect(1082, "2000-01-02", (const unsigned char[]){0, 0, 0, 1}, 4);
    /* 2000-01-01 00:00:01.5 is 1,500,000 microseconds */
    expect(1114, "2000-01-01 00:00:01.5", (const unsigned char[]){0, 0, 0, 0, 0, 0x16, 0xe3, 0x60},
           8);
    expect(701, "1", (const unsigned char[]){0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 8);
    expect(700, "0.5", (const unsigned char[]){0x3f, 0, 0, 0}, 4);
    expect(25, "héllo", (const unsigned char *)"h\xc3\xa9llo", 6);
}

static void test_refusals(void **state)
{
    (void)state;
    unsigned char got[64];
    int n;
    PgErr e;
    assert_int_equal(field(1186, "1 02:00:00", got, &n, &e), -1);
    assert_string_equal(e.code, "0A000");
    assert_non_null(strstr(e.msg, "interval"));
    PgRes r;
    memset(&r, 0, sizeof(r));
    pgres_cols(&r, 2);
    pgres_col(&r, 0, "a", 23);
    pgres_col(&r, 1, "b", 1186);
    const char *vals[2] = {"7", NULL};
    pgres_row(&r, vals);
    int16_t f2[2] = {1, 0}; /* the interval in text: fine */
    assert_int_equal(pgres_set_formats(&r, 2, f2, &e), 0);
    int16_t f3[3] = {1, 1, 1};
    assert_int_equal(pgres_set_formats(&r, 3, f3, &e), -1);
    assert_string_equal(e.code, "08P01");
    int16_t bad = 2;
    assert_int_equal(pgres_set_formats(&r, 1, &bad, &e), -1);
    assert_string_equal(e.code, "22023");
    pgres_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numeric),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

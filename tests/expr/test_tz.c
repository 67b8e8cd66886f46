/*
 * tests/expr/test_tz.c - the TZif reader (expr/tz.c) against transitions
 * of the system tz database (tzdata): America/New_York's 2024 DST changes,
 * Europe/Paris, Australia/Lord_Howe's half-hour DST, far-future instants
 * that only the POSIX footer rule covers (2090), local times in a gap and
 * in an overlap (PostgreSQL's choice), unknown names and damaged files.
 * Expected values were taken from Python's zoneinfo over the same files.
 * Also TIMESTAMPTZ text in and out (expr/text.c) and concurrent lookups.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>

#include "../../src/base/buf.h"
#include "../../src/expr/text.h"
#include "../../src/expr/tz.h"

static int zone(const char *name)
{
    Err e;
    err_init(&e);
    int id = tz_find(name, strlen(name), &e);
    if (id < 0)
        fail_msg("%s: %s", name, e.msg);
    return id;
}

static void test_new_york_changes_offset_at_the_2024_transitions(void **state)
{
    int ny = zone("America/New_York");
    assert_true(ny > 0);
    assert_int_equal(tz_offset(ny, 1710053999), -18000);
    assert_int_equal(tz_offset(ny, 1710054000), -14400);
    assert_int_equal(tz_offset(ny, 1730613599), -14400);
    assert_int_equal(tz_offset(ny, 1730613600), -18000);
    assert_int_equal(zone("America/New_York"), ny); /* cached */
    assert_string_equal(tz_name(ny), "America/New_York");
}

static void test_paris_and_lord_howe_half_hour_dst(void **state)
{
    int pa = zone("Europe/Paris"), lh = zone("Australia/Lord_Howe");
    assert_int_equal(tz_offset(pa, 1711846799), 3600);
    assert_int_equal(tz_offset(pa, 1711846800), 7200);
    assert_int_equal(tz_offset(lh, 1712415599), 39600);
    assert_int_equal(tz_offset(lh, 1712415600), 37800);
    assert_int_equal(tz_offset(lh, 1728142199), 37800);
    assert_int_equal(tz_offset(lh, 1728142200), 39600);
}

static void test_far_future_follows_the_posix_footer_rule(void **state)
{
    int ny = zone("America/New_York"), lh = zone("Australia/Lord_Howe");
    assert_int_equal(tz_offset(ny, 3792985199), -18000); /* 2090-03-12 01:59:59 EST */
    assert_int_equal(tz_offset(ny, 3792985200), -14400);
    assert_int_equal(tz_offset(lh, 3794741999), 39600); /* 2090-04-02 */
    assert_int_equal(tz_offset(lh, 3794742000), 37800);
}

static void test_local_times_in_gaps_and_overlaps_resolve_as_postgresql(void **state)
{
    int ny = zone("America/New_York");
    /* 2024-03-10 02:30 does not exist: the offset before (EST) -> 07:30Z */
    assert_int_equal(tz_local_to_utc(ny, 1710037800), 1710037800 + 18000);
    /* 2024-11-03 01:30 happens twice: the later one (EST) -> 06:30Z */
    assert_int_equal(tz_local_to_utc(ny, 1730597400), 1730597400 + 18000);
    /* ordinary times */
    assert_int_equal(tz_local_to_utc(ny, 1710072000), 1710072000 + 14400);
    assert_int_equal(tz_local_to_utc_us(ny, INT64_C(1710072000000001)),
                     INT64_C(1710086400000001));
    assert_int_equal(tz_utc_to_local_us(ny, INT64_C(1710086400000001)),
                     INT64_C(1710072000000001));
}

static void test_utc_names_and_unknown_zones(void **state)
{
    Err e;
    err_init(&e);
    assert_int_equal(tz_find("utc", 3, &e), TZ_UTC);
    assert_int_equal(tz_find("Etc/UTC", 7, &e), TZ_UTC);
    assert_int_equal(tz_offset(TZ_UTC, 1710054000), 0);
    assert_int_equal(tz_find("Mars/Base", 9, &e), -1);
    assert_non_null(strstr(e.msg, "unknown time zone \"Mars/Base\""));
    err_init(&e);
    assert_int_equal(tz_find("../../etc/passwd", 16, &e), -1);
    err_init(&e);
    assert_int_equal(tz_find("Mars/Base", 9, &e), -1); /* remembered */
    assert_int_equal(e.code, SL_EDATA);
    err_init(&e);
    assert_int_equal(tz_find("America", 7, &e), -1); /* a directory */
    assert_non_null(strstr(e.msg, "unknown time zone"));
    int pa = tz_find("asia/KATHMANDU", 14, &e); /* not loaded yet */
    assert_true(pa > 0);
    assert_string_equal(tz_name(pa), "Asia/Kathmandu");
    assert_int_equal(tz_find("Asia/Kathmandu", 14, &e), pa);
}

static void test_damaged_files_are_refused_not_read_past_their_end(void **state)
{
    FILE *f = fopen("/usr/share/zoneinfo/America/New_York", "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    Err e;
    err_init(&e);
    int id = tz_load_image("copy", buf, n, &e);
    assert_true(id > 0);
    assert_int_equal(tz_offset(id, 1710054000), -14400);
    const int64_t at[] = {-4000000000LL, 0, 1710054000, 1730597400, 3792985200LL, 1LL << 40};
    int32_t off[6];
    int64_t utc[6];
    /* every prefix: refused, or (cut inside the footer) still usable */
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, buf, cut);
        err_init(&e);
        if (tz_check_image(c, cut, at, 6, off, utc, &e) < 0)
            assert_non_null(strstr(e.msg, "not a valid TZif file"));
        free(c);
    }
    /* random bytes changed: never a crash, a read out of bounds or an
       overflow (ASan/UBSan), whatever the answer */
    srand(7);
    uint8_t *m = malloc(n);
    for (int round = 0; round < 3000; round++) {
        memcpy(m, buf, n);
        for (int k = 0; k < 1 + round % 4; k++)
            m[(size_t)rand() % n] = (uint8_t)rand();
        err_init(&e);
        (void)tz_check_image(m, n, at, 6, off, utc, &e);
    }
    free(m);
    err_init(&e);
    assert_int_equal(tz_check_image((const uint8_t *)"TZif2", 5, at, 0, off, utc, &e), -1);
}

static int64_t parse_tstz(int zone, const char *s)
{
    int64_t v = 0;
    Err e;
    err_init(&e);
    if (text_parse(type_tstz(zone, false), s, strlen(s), NULL, &v, NULL, NULL, &e))
        fail_msg("%s: %s", s, e.msg);
    return v;
}

static void check_format(int zone, int64_t us, const char *want)
{
    Buf b = BUF_INIT;
    text_format(type_tstz(zone, false), us, 0, (Str){NULL, 0}, &b);
    assert_string_equal(buf_cstr(&b), want);
    buf_free(&b);
}

#define S INT64_C(1000000)

static void test_text_reads_offsets_names_and_local_time_of_the_session_zone(void **state)
{
    int ny = zone("America/New_York"), lh = zone("Australia/Lord_Howe");
    int64_t t = INT64_C(1710064800) * S; /* 2024-03-10 10:00:00Z */
    assert_int_equal(parse_tstz(ny, "2024-03-10 12:00:00+02"), t);
    assert_int_equal(parse_tstz(ny, "2024-03-10T10:00:00Z"), t);
    assert_int_equal(parse_tstz(ny, "2024-03-10 04:30:00-05:30"), t);
    assert_int_equal(parse_tstz(ny, "2024-03-10 15:45:00+0545"), t);
    assert_int_equal(parse_tstz(ny, "2024-03-10 06:00:00"), t); /* EDT, the session zone */
    assert_int_equal(parse_tstz(TZ_UTC, "2024-03-10 06:00:00 America/New_York"), t);
    assert_int_equal(parse_tstz(ny, "2024-03-10 21:00:00 Australia/Lord_Howe"), t);
    assert_int_equal(parse_tstz(ny, " 2024-03-10 10:00:00.25 UTC "), t + S / 4);
    assert_int_equal(parse_tstz(ny, "2024-03-10"), t - 5 * 3600 * S); /* local midnight, EST */
    check_format(ny, t, "2024-03-10 06:00:00-04");
    check_format(ny, t + 1, "2024-03-10 06:00:00.000001-04");
    check_format(lh, INT64_C(1712415600) * S, "2024-04-07 01:30:00+10:30");
    check_format(zone("Asia/Kathmandu"), t, "2024-03-10 15:45:00+05:45");
    check_format(TZ_UTC, t, "2024-03-10 10:00:00+00");
    const char *bad[] = {"2024-03-10 10:00:00 Mars/Base", "2024-03-10 10:00:00+", "x",
                         "2024-03-10 10:00:00+2", "2024-03-10 10:00:00+02:0x", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v;
        Err e;
        err_init(&e);
        assert_int_equal(text_parse(type_tstz(ny, false), bad[i], strlen(bad[i]), NULL, &v, NULL,
                                    NULL, &e), SL_EDATA);
        assert_non_null(strstr(e.msg, "TIMESTAMP WITH TIME ZONE"));
    }
}

static const char *const many[] = {"Europe/Berlin", "Asia/Tokyo", "America/Chicago",
                                   "Pacific/Chatham", "Africa/Cairo", "America/Sao_Paulo",
                                   "Asia/Kolkata", "Europe/London"};
static int ids[8][8];

static void *lookup_all(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int k = 0; k < 8; k++) {
        const char *n = many[(k + t) % 8];
        Err e;
        err_init(&e);
        ids[t][(k + t) % 8] = tz_find(n, strlen(n), &e);
        (void)tz_offset(ids[t][(k + t) % 8], 1710054000);
    }
    return NULL;
}

static void test_threads_looking_up_the_same_zones_share_one_copy(void **state)
{
    pthread_t th[8];
    for (int t = 0; t < 8; t++)
        assert_int_equal(pthread_create(&th[t], NULL, lookup_all, (void *)(intptr_t)t), 0);
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    for (int k = 0; k < 8; k++) {
        assert_true(ids[0][k] > 0);
        for (int t = 1; t < 8; t++)
            assert_int_equal(ids[t][k], ids[0][k]);
        assert_string_equal(tz_name(ids[0][k]), many[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_york_changes_offset_at_the_2024_transitions),
        cmocka_unit_test(test_paris_and_lord_howe_half_hour_dst),
        cmocka_unit_test(test_far_future_follows_the_posix_footer_rule),
        cmocka_unit_test(test_local_times_in_gaps_and_overlaps_resolve_as_postgresql),
        cmocka_unit_test(test_utc_names_and_unknown_zones),
        cmocka_unit_test(test_damaged_files_are_refused_not_read_past_their_end),
        cmocka_unit_test(test_text_reads_offsets_names_and_local_time_of_the_session_zone),
        cmocka_unit_test(test_threads_looking_up_the_same_zones_share_one_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

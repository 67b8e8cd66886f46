/*
 * tests/expr/test_tz.c - the TZif reader (expr/tz.c) against transitions
 * of the system tz database (tzdata): America/New_York's 2024 DST changes,
 * Europe/Paris, Australia/Lord_Howe's half-hour DST, far-future instants
 * that only the POSIX footer rule covers (2090), local times in a gap and
 * in an overlap (PostgreSQL's choice), unknown names and damaged files.
 * Expected values were taken from Python's zoneinfo over the same files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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
    for (size_t cut = 0; cut < n; cut += 7) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, buf, cut);
        err_init(&e);
        int r = tz_load_image("cut", c, cut, &e);
        free(c);
        if (r < 0)
            assert_non_null(strstr(e.msg, "not a valid TZif file"));
        else /* cut inside the footer: still a usable zone */
            (void)tz_offset(r, 1710054000);
        if (cut > n - 80)
            break;
    }
    err_init(&e);
    assert_int_equal(tz_load_image("junk", (const uint8_t *)"TZif2", 5, &e), -1);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

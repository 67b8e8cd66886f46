/*
 * tests/storage/test_faults.c - the store under a failing disk and damaged
 * files: a failed log append leaves no part of a record behind (or the log
 * refuses appends until it can cut it off), a damaged record in the middle
 * of a log is corruption while one at the end is a torn tail, deleting LOCK
 * does not free the lock, kept checkpoints never share a file (twin names),
 * a damaged file is not copied, and every file is created 0600.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "store_test.h"

static int setup_dir(void **state)
{
    st_make_dir("faults");
    unsetenv("SLUICE_FAULT");
    store_fault_reload();
    return 0;
}

static int teardown_dir(void **state)
{
    unsetenv("SLUICE_FAULT");
    store_fault_reload();
    st_remove_dir();
    return 0;
}

/* Records seen by a scan, concatenated as "<first byte>" characters. */
typedef struct Seen {
    char s[64];
    int n;
} Seen;

static int on_rec(void *ctx, const uint8_t *p, size_t n)
{
    Seen *x = ctx;
    if (x->n < 63)
        x->s[x->n++] = n ? (char)p[0] : '?';
    return 0;
}

static void append(Log *l, const char *rec, int want_rc)
{
    char buf[100];
    memset(buf, rec[0], sizeof(buf)); /* records of 100 bytes: 116 in the file */
    Err e = {0};
    int rc = log_append(l, buf, sizeof(buf), "test", NULL, &e);
    if (rc != want_rc)
        fail_msg("log_append %s: %d (%s)", rec, rc, e.msg);
}

static int scan(Store *st, const char *name, Seen *x, uint64_t *torn, Err *e)
{
    memset(x, 0, sizeof(*x));
    return log_scan(st, name, on_rec, x, torn, e);
}

/* ---- tests ---- */

static void test_a_failed_append_is_cut_back_and_later_records_are_read(void **state)
{
    setenv("SLUICE_FAULT", "test-write-enospc:2", 1);
    store_fault_reload();
    Store *st = open_store();
    Log *l;
    assert_int_equal(log_create(st, "t.log", &l, NULL), 0);
    append(l, "a", 0);
    append(l, "b", SL_EIO); /* half of it reached the file, then ENOSPC */
    append(l, "c", 0);
    assert_int_equal(log_sync(l, UINT64_MAX, NULL), 0);
    log_close(l);
    assert_int_equal(file_size("t.log"), 2 * 116);
    Seen x;
    uint64_t torn;
    Err e = {0};
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), 0);
    assert_string_equal(x.s, "ac");
    assert_true(torn == UINT64_MAX);
    store_close(st);
}

static void test_a_failed_cut_refuses_appends_and_syncs_until_a_cut_works(void **state)
{
    setenv("SLUICE_FAULT", "test-write-eio:2,log-truncate-eio:1", 1);
    store_fault_reload();
    Store *st = open_store();
    Log *l;
    Err e = {0};
    assert_int_equal(log_create(st, "t.log", &l, NULL), 0);
    append(l, "a", 0);
    assert_int_equal(log_append(l, "bbbb", 4, "test", NULL, &e), SL_EIO);
    assert_non_null(strstr(e.msg, "cutting it back"));
    err_clear(&e);
    assert_int_equal(log_sync(l, UINT64_MAX, &e), SL_EIO); /* never "durable" with a torn end */
    append(l, "c", 0); /* the cut works now: c follows a directly */
    err_clear(&e);
    assert_int_equal(log_sync(l, UINT64_MAX, &e), 0);
    log_close(l);
    Seen x;
    uint64_t torn;
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), 0);
    assert_string_equal(x.s, "ac");
    assert_true(torn == UINT64_MAX);
    store_close(st);
}

static void test_a_damaged_record_in_the_middle_is_corruption_naming_file_and_offset(void **state)
{
    Store *st = open_store();
    Log *l;
    assert_int_equal(log_create(st, "t.log", &l, NULL), 0);
    append(l, "a", 0);
    append(l, "b", 0);
    append(l, "c", 0);
    log_close(l);
    flip_byte("t.log", 116 + 40); /* inside b's payload */
    Seen x;
    uint64_t torn;
    Err e = {0};
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), SL_EIO);
    assert_non_null(strstr(e.msg, "t.log is corrupt"));
    assert_non_null(strstr(e.msg, "offset 116"));
    assert_non_null(strstr(e.msg, "checksum"));
    /* a damaged length (the record seems to run past the end) too */
    flip_byte("t.log", 116 + 40);
    flip_byte("t.log", 116 + 6);
    err_clear(&e);
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), SL_EIO);
    assert_non_null(strstr(e.msg, "offset 116"));
    store_close(st);
}

static void test_a_damaged_last_record_is_a_torn_tail_and_can_be_cut(void **state)
{
    Store *st = open_store();
    Log *l;
    assert_int_equal(log_create(st, "t.log", &l, NULL), 0);
    append(l, "a", 0);
    append(l, "b", 0);
    log_close(l);
    int fd = open(path_of("t.log"), O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, "\x31\x4a\x4c\x53\x64\0\0\0half", 12), 12);
    close(fd);
    Seen x;
    uint64_t torn;
    Err e = {0};
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), 0);
    assert_string_equal(x.s, "ab");
    assert_int_equal(torn, 2 * 116);
    assert_int_equal(log_cut_tail(st, "t.log", torn, &e), 0);
    assert_int_equal(file_size("t.log"), 2 * 116);
    assert_int_equal(scan(st, "t.log", &x, &torn, &e), 0);
    assert_true(torn == UINT64_MAX);
    store_close(st);
}

static void test_deleting_the_lock_file_does_not_free_the_lock(void **state)
{
    Store *st = open_store(), *st2 = NULL;
    assert_int_equal(unlink(path_of("LOCK")), 0);
    pid_t c = fork();
    if (c == 0) {
        Err e = {0};
        Store *s3;
        int rc = store_open(tmpdir, &s3, &e);
        _exit(rc == SL_EIO && strstr(e.msg, "in use by another pipeline") ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    Err e = {0};
    assert_int_equal(store_open(tmpdir, &st2, &e), SL_EIO);
    store_close(st);
    assert_int_equal(store_open(tmpdir, &st2, &e), 0);
    store_close(st2);
}

static Batch *small_batch(int seed)
{
    BatchBuilder *bb = bb_new();
    for (int i = 0; i < 100; i++) {
        char k[16];
        int n = snprintf(k, sizeof(k), "k%06d", i * 7 + seed);
        bb_add(bb, (const uint8_t *)k, (size_t)n, (const uint8_t *)k, (size_t)n, 1);
    }
    return bb_finish(bb);
}

static void test_a_batch_of_the_previous_checkpoint_is_kept_under_its_twin_name(void **state)
{
    Store *st = open_store();
    Batch *b = small_batch(1);
    char n1[STORE_NAME_MAX], n2[STORE_NAME_MAX], n3[STORE_NAME_MAX], twin[STORE_NAME_MAX];
    Err e = {0};
    assert_int_equal(store_put_batch(st, b, n1, &e), 0);
    const char *prev[] = {n1};
    store_set_avoid(st, prev, 1);
    assert_int_equal(store_put_batch(st, b, n2, &e), 0);
    store_batch_twin(n1, twin);
    assert_string_equal(n2, twin);
    assert_true(store_is_batch_name(n2));
    Batch *back;
    assert_int_equal(store_get_batch(st, n2, &back, &e), 0);
    assert_int_equal(back->n, b->n);
    batch_unref(back);
    /* the next checkpoint avoids the twin and takes the first name again */
    const char *prev2[] = {n2};
    store_set_avoid(st, prev2, 1);
    assert_int_equal(store_reuse_batch(st, n2, n3, &e), 0);
    assert_string_equal(n3, n1);
    /* a damaged file is never copied: the caller saves the state again */
    assert_int_equal(unlink(path_of(n1)), 0);
    flip_byte(n2, file_size(n2) / 2);
    err_clear(&e);
    assert_int_equal(store_reuse_batch(st, n2, n3, &e), SL_EIO);
    assert_non_null(strstr(e.msg, "corrupt"));
    assert_non_null(strstr(e.msg, n2));
    /* ... and a damaged existing twin is written again by a put */
    store_set_avoid(st, prev, 1);
    err_clear(&e);
    assert_int_equal(store_put_batch(st, b, n3, &e), 0);
    assert_string_equal(n3, n2);
    assert_int_equal(store_get_batch(st, n3, &back, &e), 0);
    batch_unref(back);
    batch_unref(b);
    store_close(st);
}

static void test_every_file_is_created_private(void **state)
{
    Store *st = open_store();
    Batch *b = small_batch(2);
    char n[STORE_NAME_MAX], json[128];
    assert_int_equal(store_put_batch(st, b, n, NULL), 0);
    snprintf(json, sizeof(json), "{\"files\": [\"%s\"]}", n);
    assert_int_equal(store_write_manifest(st, 1, json, NULL), 0);
    Log *l;
    assert_int_equal(log_create(st, "ingress-1.log", &l, NULL), 0);
    log_close(l);
    const char *names[] = {n, "manifest-1.json", "ingress-1.log", "LOCK"};
    for (int i = 0; i < 4; i++) {
        struct stat sb;
        assert_int_equal(stat(path_of(names[i]), &sb), 0);
        if ((sb.st_mode & 0777) != 0600)
            fail_msg("%s has mode %o", names[i], sb.st_mode & 0777);
    }
    struct stat sb;
    assert_int_equal(stat(tmpdir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    batch_unref(b);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_failed_append_is_cut_back_and_later_records_are_read,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(
            test_a_failed_cut_refuses_appends_and_syncs_until_a_cut_works, setup_dir,
            teardown_dir),
        cmocka_unit_test_setup_teardown(
            test_a_damaged_record_in_the_middle_is_corruption_naming_file_and_offset, setup_dir,
            teardown_dir),
        cmocka_unit_test_setup_teardown(test_a_damaged_last_record_is_a_torn_tail_and_can_be_cut,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_deleting_the_lock_file_does_not_free_the_lock,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(
            test_a_batch_of_the_previous_checkpoint_is_kept_under_its_twin_name, setup_dir,
            teardown_dir),
        cmocka_unit_test_setup_teardown(test_every_file_is_created_private, setup_dir,
                                        teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

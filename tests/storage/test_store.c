/*
 * tests/storage/test_store.c - the Store: batch files round-trip bit for
 * bit and are shared when unchanged, damage is detected, manifests fall
 * back to the previous one, pruning keeps exactly what is referenced, the
 * lock keeps a second opener out, and a crash at any injection point leaves
 * no half-written file visible.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "store_test.h"

/* ---- helpers ---- */

static int setup_dir(void **state)
{
    st_make_dir("store");
    return 0;
}

static int teardown_dir(void **state)
{
    st_remove_dir();
    return 0;
}

/* A batch of n tuples: key = sign-flipped big-endian int, val = a string
   of varying length derived from the int; weights vary in sign. */
static Batch *make_batch(int64_t n, int seed)
{
    BatchBuilder *bb = bb_new();
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (i * 7919 + seed) % 100003 - 50000;
        uint8_t k[8];
        uint64_t u = (uint64_t)v ^ (1ull << 63);
        for (int j = 0; j < 8; j++)
            k[j] = (uint8_t)(u >> (56 - 8 * j));
        char s[64];
        int sn = snprintf(s, sizeof(s), "name-%lld-%.*s", (long long)v, (int)(i % 23),
                          "abcdefghijklmnopqrstuvwxyz");
        bb_add(bb, k, 8, (const uint8_t *)s, (size_t)sn + 1, i % 3 == 0 ? -2 : 1);
    }
    return bb_finish(bb);
}

static void assert_batches_equal(const Batch *a, const Batch *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->off == NULL, b->off == NULL);
    for (int64_t i = 0; i <= a->n; i++)
        assert_int_equal(batch_off(a, i), batch_off(b, i));
    for (int64_t i = 0; i < a->n; i++)
        assert_int_equal(batch_klen(a, i), batch_klen(b, i));
    if (a->n) {
        assert_memory_equal(a->w, b->w, (size_t)a->n * sizeof(int64_t));
        assert_memory_equal(a->data, b->data, batch_off(a, a->n));
    }
    assert_int_equal(batch_bytes(a), batch_bytes(b));
}

/* A batch of n fixed-width tuples (4-byte key, 8-byte value): uniform
   (zset/batch.h), no offset or key length tables in memory. */
static Batch *make_uniform_batch(int64_t n, int seed)
{
    BatchBuilder *bb = bb_new();
    for (int64_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)((i * 7919 + seed) % 1009);
        uint64_t v = (uint64_t)(i * 31 + seed);
        bb_add(bb, (const uint8_t *)&k, 4, (const uint8_t *)&v, 8, i % 5 == 0 ? -1 : 3);
    }
    return bb_finish(bb);
}

/* The same tuples in the layout with tables (as a batch of varying
   lengths has, and as files written before uniform batches held). */
static Batch *with_tables(const Batch *u)
{
    size_t n = (size_t)u->n, nbytes = batch_off(u, u->n);
    Batch *b = sl_malloc(sizeof(Batch) + (n + 1) * sizeof(size_t) + n * sizeof(int64_t) +
                         n * sizeof(uint32_t) + nbytes);
    b->refs = 1;
    b->tlen = b->fklen = 0;
    b->big = false;
    b->n = u->n;
    b->off = (size_t *)(b + 1);
    b->w = (int64_t *)(b->off + n + 1);
    b->klen = (uint32_t *)(b->w + n);
    b->data = (uint8_t *)(b->klen + n);
    for (size_t i = 0; i <= n; i++)
        b->off[i] = batch_off(u, (int64_t)i);
    for (size_t i = 0; i < n; i++)
        b->klen[i] = (uint32_t)batch_klen(u, (int64_t)i);
    memcpy(b->w, u->w, n * sizeof(int64_t));
    memcpy(b->data, u->data, nbytes);
    return b;
}

static void put(Store *st, const Batch *b, char name[STORE_NAME_MAX])
{
    Err e = {0};
    if (store_put_batch(st, b, name, &e) != 0)
        fail_msg("store_put_batch: %s", e.msg);
}

static void write_manifest(Store *st, uint64_t step, const char *json)
{
    Err e = {0};
    if (store_write_manifest(st, step, json, &e) != 0)
        fail_msg("store_write_manifest: %s", e.msg);
}

/* Count directory entries starting with prefix. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

/* ---- tests ---- */

/* A uniform batch is written as the same file (same name, same bytes) as
   the same tuples with tables, so files from before uniform batches load,
   and it reads back uniform. */
static void test_uniform_batch_has_the_file_of_its_tabled_twin(void **state)
{
    Store *st = open_store();
    Batch *u = make_uniform_batch(3000, 5);
    assert_null(u->off);
    Batch *g = with_tables(u);
    char nu[STORE_NAME_MAX], ng[STORE_NAME_MAX];
    put(st, g, ng);
    put(st, u, nu);
    assert_string_equal(nu, ng);
    Batch *r;
    Err e = {0};
    if (store_get_batch(st, nu, &r, &e) != 0)
        fail_msg("store_get_batch: %s", e.msg);
    assert_null(r->off);
    assert_batches_equal(r, u);
    batch_unref(r);
    batch_unref(g);
    batch_unref(u);
    store_close(st);
}

static void test_batch_round_trips_bit_for_bit(void **state)
{
    Store *st = open_store();
    int64_t sizes[] = {0, 1, 7, 5000};
    for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
        Batch *b = make_batch(sizes[i], (int)i);
        char name[STORE_NAME_MAX];
        put(st, b, name);
        Batch *r;
        Err e = {0};
        if (store_get_batch(st, name, &r, &e) != 0)
            fail_msg("store_get_batch: %s", e.msg);
        assert_batches_equal(b, r);
        assert_int_equal(r->refs, 1);
        batch_unref(r);
        batch_unref(b);
    }
    store_close(st);
}

static void test_unchanged_batch_gets_same_name_and_is_not_rewritten(void **state)
{
    Store *st = open_store();
    Batch *a = make_batch(1000, 1), *a2 = make_batch(1000, 1), *c = make_batch(1000, 2);
    char na[STORE_NAME_MAX], na2[STORE_NAME_MAX], nc[STORE_NAME_MAX];
    put(st, a, na);
    struct stat s1, s2;
    assert_int_equal(stat(path_of(na), &s1), 0);
    put(st, a2, na2); /* equal contents, different Batch */
    put(st, c, nc);
    assert_string_equal(na, na2);
    assert_string_not_equal(na, nc);
    assert_int_equal(stat(path_of(na), &s2), 0);
    assert_int_equal(s1.st_ino, s2.st_ino);
    assert_int_equal(s1.st_mtim.tv_nsec, s2.st_mtim.tv_nsec);
    StoreStats ss;
    store_stats(st, &ss);
    assert_int_equal(ss.batches_written, 2);
    assert_int_equal(ss.batches_reused, 1);
    assert_int_equal(count_files("batch-"), 2);
    batch_unref(a);
    batch_unref(a2);
    batch_unref(c);
    store_close(st);
}

static void expect_corrupt(Store *st, const char *name, const char *what)
{
    Batch *r = (Batch *)1;
    Err e = {0};
    assert_int_equal(store_get_batch(st, name, &r, &e), SL_EIO);
    assert_null(r);
    assert_non_null(strstr(e.msg, name));
    if (!strstr(e.msg, what))
        fail_msg("message '%s' does not say '%s'", e.msg, what);
}

static void test_flipped_byte_and_truncation_are_detected(void **state)
{
    Store *st = open_store();
    Batch *b = make_batch(3000, 5);
    char name[STORE_NAME_MAX];
    put(st, b, name);
    off_t size = file_size(name);

    flip_byte(name, size / 2); /* payload */
    expect_corrupt(st, name, "checksum mismatch");
    flip_byte(name, size / 2);
    flip_byte(name, 20); /* header: tuple count */
    expect_corrupt(st, name, "checksum mismatch");
    flip_byte(name, 20);
    flip_byte(name, 0); /* magic */
    expect_corrupt(st, name, "bad magic");
    flip_byte(name, 0);
    flip_byte(name, 8); /* version */
    expect_corrupt(st, name, "format version");
    flip_byte(name, 8);

    assert_int_equal(truncate(path_of(name), size - 100), 0);
    expect_corrupt(st, name, "checksum mismatch");
    assert_int_equal(truncate(path_of(name), 10), 0);
    expect_corrupt(st, name, "truncated");

    Batch *r;
    Err e = {0};
    assert_int_equal(store_get_batch(st, "../etc/passwd", &r, &e), SL_EIO);
    batch_unref(b);
    store_close(st);
}

static void test_latest_manifest_falls_back_when_newest_is_corrupt(void **state)
{
    Store *st = open_store();
    Batch *b = make_batch(100, 3);
    char name[STORE_NAME_MAX], json[256];
    put(st, b, name);
    snprintf(json, sizeof(json), "{\"step\": 10, \"files\": [\"%s\"]}", name);
    write_manifest(st, 10, json);
    write_manifest(st, 20, "{\"step\": 20, \"files\": []}");

    uint64_t step;
    char *got, *skipped;
    Err e = {0};
    assert_int_equal(store_latest_manifest(st, &step, &got, &skipped, &e), 0);
    assert_int_equal(step, 20);
    assert_string_equal(got, "{\"step\": 20, \"files\": []}");
    assert_null(skipped);
    sl_free(got);

    flip_byte("manifest-20.json", 3);
    assert_int_equal(store_latest_manifest(st, &step, &got, &skipped, &e), 0);
    assert_int_equal(step, 10);
    assert_string_equal(got, json);
    assert_non_null(strstr(skipped, "manifest-20.json"));
    assert_non_null(strstr(skipped, "checksum mismatch"));
    sl_free(got);
    sl_free(skipped);

    /* A manifest whose batch file vanished does not verify either. */
    assert_int_equal(unlink(path_of(name)), 0);
    assert_int_equal(store_latest_manifest(st, &step, &got, &skipped, &e), SL_EIO);
    assert_null(got);
    assert_non_null(strstr(e.msg, "missing"));
    sl_free(skipped);

    /* Writing a manifest that names a missing file is refused. */
    err_clear(&e);
    assert_int_equal(store_write_manifest(st, 30, json, &e), SL_EDATA);
    batch_unref(b);
    store_close(st);
}

static void test_empty_store_has_no_manifest(void **state)
{
    Store *st = open_store();
    uint64_t step = 9;
    char *got = (char *)1;
    Err e = {0};
    assert_int_equal(store_latest_manifest(st, &step, &got, NULL, &e), 0);
    assert_null(got);
    assert_int_equal(step, 0);
    store_close(st);
}

static void test_prune_keeps_referenced_files_and_deletes_the_rest(void **state)
{
    Store *st = open_store();
    Batch *b[5];
    char n[5][STORE_NAME_MAX], json[512];
    for (int i = 0; i < 5; i++) {
        b[i] = make_batch(50 + i, i);
        put(st, b[i], n[i]);
    }
    /* step 1: {0,1}; step 2: {1,2}; step 3: {2,3}; 4 is in flight. */
    for (int s = 1; s <= 3; s++) {
        snprintf(json, sizeof(json), "{\"files\": [\"%s\", \"%s\"]}", n[s - 1], n[s]);
        write_manifest(st, (uint64_t)s, json);
    }
    const char *refs[] = {n[4]};
    Err e = {0};
    if (store_prune(st, 2, refs, 1, &e) != 0)
        fail_msg("store_prune: %s", e.msg);
    assert_int_equal(count_files("manifest-"), 2);
    assert_true(access(path_of("manifest-1.json"), F_OK) != 0);
    assert_true(access(path_of(n[0]), F_OK) != 0);
    for (int i = 1; i < 5; i++)
        assert_int_equal(access(path_of(n[i]), F_OK), 0);

    /* Without the in-flight ref and keeping 1: only step 3's files stay. */
    assert_int_equal(store_prune(st, 1, NULL, 0, &e), 0);
    assert_int_equal(count_files("manifest-"), 1);
    assert_int_equal(count_files("batch-"), 2);
    assert_int_equal(access(path_of(n[2]), F_OK), 0);
    assert_int_equal(access(path_of(n[3]), F_OK), 0);
    for (int i = 0; i < 5; i++)
        batch_unref(b[i]);
    store_close(st);
}

static void test_lock_keeps_a_second_opener_out(void **state)
{
    Store *st = open_store(), *st2 = (Store *)1;
    Err e = {0};
    assert_int_equal(store_open(tmpdir, &st2, &e), SL_EIO);
    assert_null(st2);
    assert_non_null(strstr(e.msg, "in use by another pipeline"));
    char pid[32];
    snprintf(pid, sizeof(pid), "pid %d", (int)getpid());
    assert_non_null(strstr(e.msg, pid));

    /* Another process is kept out too. */
    pid_t c = fork();
    if (c == 0) {
        Store *s3;
        _exit(store_open(tmpdir, &s3, NULL) == SL_EIO ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

    store_close(st);
    err_clear(&e);
    assert_int_equal(store_open(tmpdir, &st2, &e), 0);
    store_close(st2);
}

/* In a child: open the store and write checkpoint 2 (a new batch and its
   manifest) with SLUICE_CRASH_AT=point; returns the exit status. */
static int crash_child(const char *point)
{
    pid_t c = fork();
    if (c == 0) {
        setenv("SLUICE_CRASH_AT", point, 1);
        Store *st;
        if (store_open(tmpdir, &st, NULL) != 0)
            _exit(2);
        Batch *b = make_batch(20000, 42);
        char name[STORE_NAME_MAX], json[256];
        if (store_put_batch(st, b, name, NULL) != 0)
            _exit(3);
        snprintf(json, sizeof(json), "{\"step\": 2, \"files\": [\"%s\"]}", name);
        if (store_write_manifest(st, 2, json, NULL) != 0)
            _exit(4);
        _exit(0);
    }
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

static void test_crash_points_leave_no_half_written_file_visible(void **state)
{
    const char *points[] = {"batch-write", "batch-rename", "manifest-write", "manifest-rename"};
    for (size_t i = 0; i < ARRAY_LEN(points); i++) {
        /* Checkpoint 1 exists before the crash. */
        Store *st = open_store();
        Batch *b = make_batch(500, 1);
        char name[STORE_NAME_MAX], json[256];
        put(st, b, name);
        snprintf(json, sizeof(json), "{\"step\": 1, \"files\": [\"%s\"]}", name);
        write_manifest(st, 1, json);
        batch_unref(b);
        store_close(st);

        assert_int_equal(crash_child(points[i]), 137);
        bool batch_visible = i >= 2; /* the crash came after the batch's rename */
        assert_int_equal(count_files("batch-"), batch_visible ? 2 : 1);
        assert_int_equal(count_files("manifest-"), 1);
        assert_int_equal(count_files("tmp-"), 1);

        /* Reopen: the temp file goes, checkpoint 1 loads, visible batches
           verify. */
        st = open_store();
        assert_int_equal(count_files("tmp-"), 0);
        uint64_t step;
        char *got, *skipped;
        Err e = {0};
        assert_int_equal(store_latest_manifest(st, &step, &got, &skipped, &e), 0);
        assert_int_equal(step, 1);
        assert_string_equal(got, json);
        assert_null(skipped);
        sl_free(got);
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strncmp(de->d_name, "batch-", 6) != 0)
                continue;
            Batch *r;
            if (store_get_batch(st, de->d_name, &r, &e) != 0)
                fail_msg("after crash at %s: %s", points[i], e.msg);
            batch_unref(r);
        }
        closedir(d);
        assert_int_equal(store_prune(st, 2, NULL, 0, &e), 0);
        store_close(st);
        teardown_dir(NULL);
        setup_dir(NULL);
    }
    /* Without a crash point the child finishes checkpoint 2. */
    assert_int_equal(crash_child(""), 0);
    Store *st = open_store();
    uint64_t step;
    char *got;
    Err e = {0};
    assert_int_equal(store_latest_manifest(st, &step, &got, NULL, &e), 0);
    assert_int_equal(step, 2);
    sl_free(got);
    store_close(st);
}

static void test_file_under_another_batch_name_is_detected(void **state)
{
    Store *st = open_store();
    Batch *a = make_batch(300, 1), *b = make_batch(300, 2);
    char na[STORE_NAME_MAX], nb[STORE_NAME_MAX], cmd[1200];
    put(st, a, na);
    put(st, b, nb);
    snprintf(cmd, sizeof(cmd), "cp '%s/%s' '%s/%s'", tmpdir, na, tmpdir, nb);
    assert_int_equal(system(cmd), 0);
    expect_corrupt(st, nb, "do not match the file's name");
    batch_unref(a);
    batch_unref(b);
    store_close(st);
}

static void test_crash_point_can_fire_on_the_nth_visit(void **state)
{
    pid_t c = fork();
    if (c == 0) {
        setenv("SLUICE_CRASH_AT", "batch-rename:2", 1);
        Store *st;
        if (store_open(tmpdir, &st, NULL) != 0)
            _exit(2);
        for (int i = 0; i < 3; i++) {
            Batch *b = make_batch(100, i);
            char name[STORE_NAME_MAX];
            if (store_put_batch(st, b, name, NULL) != 0)
                _exit(3);
        }
        _exit(0);
    }
    int ws;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 137);
    assert_int_equal(count_files("batch-"), 1);
    assert_int_equal(count_files("tmp-"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uniform_batch_has_the_file_of_its_tabled_twin,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_batch_round_trips_bit_for_bit, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_unchanged_batch_gets_same_name_and_is_not_rewritten,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_flipped_byte_and_truncation_are_detected, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_file_under_another_batch_name_is_detected,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_crash_point_can_fire_on_the_nth_visit, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_latest_manifest_falls_back_when_newest_is_corrupt,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_empty_store_has_no_manifest, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_prune_keeps_referenced_files_and_deletes_the_rest,
                                        setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_lock_keeps_a_second_opener_out, setup_dir,
                                        teardown_dir),
        cmocka_unit_test_setup_teardown(test_crash_points_leave_no_half_written_file_visible,
                                        setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

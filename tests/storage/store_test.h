/*
 * tests/storage/store_test.h - what the store's unit tests share: a
 * scratch directory per test (its "st" subdirectory is the store, which
 * store_open creates), opening a store there, and reaching into its files
 * (path, size, one flipped byte) to damage them. Header-only: included by
 * test_store.c and test_faults.c after cmocka.h.
 */
#ifndef SL_TESTS_STORAGE_STORE_TEST_H
#define SL_TESTS_STORAGE_STORE_TEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/storage.h"

static char tmpdir[256];

/* A fresh /tmp/sluice-<what>-XXXXXX; tmpdir names its "st" inside. */
static void st_make_dir(const char *what)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sluice-%s-XXXXXX", what);
    assert_non_null(mkdtemp(tmpdir));
    strcat(tmpdir, "/st"); /* store_open creates it */
}

/* Remove what st_make_dir made, store and all. */
static void st_remove_dir(void)
{
    char cmd[300];
    tmpdir[strlen(tmpdir) - 3] = 0;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static Store *open_store(void)
{
    Store *st;
    Err e = {0};
    if (store_open(tmpdir, &st, &e) != 0)
        fail_msg("store_open: %s", e.msg);
    return st;
}

/* The path of file name in the store (valid until the next call). */
static char *path_of(const char *name)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
    return p;
}

static off_t file_size(const char *name)
{
    struct stat sb;
    assert_int_equal(stat(path_of(name), &sb), 0);
    return sb.st_size;
}

/* Damage file name: one bit of the byte at offset `at` flipped. */
static void flip_byte(const char *name, off_t at)
{
    int fd = open(path_of(name), O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x40;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

#endif

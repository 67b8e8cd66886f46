/*
 * storage/store_int.h - what store.c (directory, lock, manifests) and
 * batchfile.c (the batch file format) share.
 */
#ifndef SL_STORAGE_STORE_INT_H
#define SL_STORAGE_STORE_INT_H

#include <stdatomic.h>

#include "storage.h"

struct Store {
    char *dir;                  /* path as given */
    int dirfd;                  /* the directory, for *at() calls */
    int lockfd;                 /* LOCK, flock'd exclusively */
    atomic_uint_fast64_t tmp_seq;  /* makes temp names unique per process */
    atomic_uint_fast64_t batches_written, batches_reused, bytes_written;
};

/* Write all n bytes to fd; 0 or -errno. */
int store_write_all(int fd, const void *p, size_t n);
/* Create a fresh temp file in the store; its name goes to tmp (64 bytes).
   Returns the fd or SL_EIO. */
int store_tmp_open(Store *st, const char *final, char tmp[96], Err *err);
/* fsync fd, close it, rename tmp to final, fsync the directory. On failure
   the temp file is removed. */
int store_publish(Store *st, int fd, const char *tmp, const char *final, Err *err);
/* Abandon a temp file (close + unlink). */
void store_tmp_discard(Store *st, int fd, const char *tmp);
/* Read a whole file of the store into a new buffer (sl_free). */
int store_read_file(Store *st, const char *name, uint8_t **out, size_t *n, Err *err);
/* Is name a well-formed batch file name ("batch-" 32 hex ".slb")? */
bool store_is_batch_name(const char *name);
bool store_file_exists(Store *st, const char *name);

#endif

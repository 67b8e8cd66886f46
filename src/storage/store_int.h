/*
 * storage/store_int.h - what store.c (directory, lock, manifests) and
 * batchfile.c (the batch file format) share.
 */
#ifndef SL_STORAGE_STORE_INT_H
#define SL_STORAGE_STORE_INT_H

#include <stdatomic.h>

#include "../base/buf.h"
#include "../objstore/s3.h"
#include "storage.h"

/* Every file the store creates is private to the pipeline's user. */
#define STORE_FILE_MODE 0600
#define STORE_DIR_MODE 0700

struct Store {
    char *dir;                  /* path as given (the local cache of a remote store) */
    char *url;                  /* s3://... for a remote store, else NULL */
    S3 *remote;                 /* mirror every durable file there, or NULL */
    bool own_dir;               /* dir is a temporary cache: removed at close */
    int dirfd;                  /* the directory, for *at() calls */
    int lockfd;                 /* the directory again, flock'd exclusively */
    atomic_uint_fast64_t tmp_seq;  /* makes temp names unique per process */
    atomic_uint_fast64_t batches_written, batches_reused, bytes_written;
    char **avoid;               /* sorted: the previous checkpoint's files (store_set_avoid) */
    size_t navoid;
    bool nosync;                /* scratch files (spill): no fsync (store_set_scratch) */
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
/* Is name one of the files store_set_avoid named? */
bool store_avoided(const Store *st, const char *name);
bool store_file_exists(Store *st, const char *name);

/* Delete a file locally and, for a remote store, remotely (a log segment:
   all its uploaded parts). */
int store_unlink(Store *st, const char *name, Err *err);
/* ... only its remote object(s) (nothing for a local store). */
int store_unlink_remote(Store *st, const char *name, Err *err);

#endif

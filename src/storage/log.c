/*
 * storage/log.c - append-only record logs in the storage directory (the
 * step journal and the HTTP ingress log, pipeline/ckpt.c). Writers append
 * whole records with one write() under a mutex and sync with group commit:
 * a caller that finds its bytes already covered by another caller's
 * fdatasync returns at once. Readers verify each record's checksum and
 * stop at a torn tail. Format in storage.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "../base/mem.h"
#include "store_int.h"

#define LOG_MAGIC 0x534c4a31u /* "SLJ1" */
#define LOG_HDR 16

struct Log {
    Store *st;
    char *name;
    int fd;
    pthread_mutex_t mu;   /* appends */
    pthread_mutex_t smu;  /* syncs */
    uint64_t end;         /* bytes appended (under mu) */
    uint64_t synced;      /* bytes durable (under smu) */
    Buf unsent;           /* remote store: bytes appended, not yet uploaded (mu) */
    uint64_t unsent_off;  /* ... their offset in the file (mu) */
    atomic_int refs;
};

int log_create(Store *st, const char *name, Log **out, Err *err)
{
    *out = NULL;
    int fd = openat(st->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, SL_EIO, "storage %s: cannot create %s: %s", st->dir, name,
                       strerror(errno));
    if (fsync(st->dirfd) != 0) {
        close(fd);
        return err_set(err, SL_EIO, "storage %s: fsync of the directory: %s", st->dir,
                       strerror(errno));
    }
    Log *l = sl_calloc(1, sizeof(*l));
    l->st = st;
    l->name = sl_strdup(name);
    l->fd = fd;
    atomic_init(&l->refs, 1);
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->smu, NULL);
    *out = l;
    return 0;
}

int log_append(Log *l, const void *p, size_t n, const char *crash, uint64_t *end, Err *err)
{
    if (n > UINT32_MAX)
        return err_set(err, SL_EIO, "storage %s/%s: record of %zu bytes is too large",
                       l->st->dir, l->name, n);
    uint8_t *rec = sl_malloc(LOG_HDR + n);
    uint32_t magic = LOG_MAGIC, len = (uint32_t)n;
    uint64_t h = XXH64(p, n, 0);
    memcpy(rec, &magic, 4);
    memcpy(rec + 4, &len, 4);
    memcpy(rec + 8, &h, 8);
    memcpy(rec + LOG_HDR, p, n);
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    if (crash) {
        char point[64];
        snprintf(point, sizeof(point), "%s-write", crash);
        if (store_crash_due(point)) {
            /* tear the record: half of it reaches the file, then the crash */
            (void)store_write_all(l->fd, rec, (LOG_HDR + n) / 2);
            _exit(137);
        }
    }
    int e = store_write_all(l->fd, rec, LOG_HDR + n);
    if (e)
        rc = err_set(err, SL_EIO, "storage %s/%s: write: %s", l->st->dir, l->name, strerror(-e));
    else {
        if (l->st->remote)
            buf_append(&l->unsent, rec, LOG_HDR + n);
        l->end += LOG_HDR + n;
    }
    if (end)
        *end = l->end;
    pthread_mutex_unlock(&l->mu);
    sl_free(rec);
    return rc;
}

int log_sync(Log *l, uint64_t upto, Err *err)
{
    pthread_mutex_lock(&l->smu);
    int rc = 0;
    if (upto == UINT64_MAX || l->synced < upto) {
        pthread_mutex_lock(&l->mu);
        uint64_t end = l->end, off = l->unsent_off;
        Buf part = l->unsent;
        l->unsent = (Buf)BUF_INIT;
        l->unsent_off = end;
        pthread_mutex_unlock(&l->mu);
        if (fdatasync(l->fd) != 0)
            rc = err_set(err, SL_EIO, "storage %s/%s: fdatasync: %s", l->st->dir, l->name,
                         strerror(errno));
        if (!rc && l->st->remote && part.n) {
            /* S3 cannot append: each sync uploads the new bytes as one part,
               NAME.<offset>; a restart concatenates the parts */
            char pn[160];
            snprintf(pn, sizeof(pn), "%s.%020llu", l->name, (unsigned long long)off);
            rc = s3_put(l->st->remote, pn, part.p, part.n, err);
        }
        buf_free(&part);
        if (!rc)
            l->synced = end;
    }
    pthread_mutex_unlock(&l->smu);
    return rc;
}

const char *log_name(const Log *l) { return l->name; }

void log_ref(Log *l)
{
    if (l)
        atomic_fetch_add(&l->refs, 1);
}

void log_close(Log *l) { log_release(l); }

void log_release(Log *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    close(l->fd);
    buf_free(&l->unsent);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->smu);
    sl_free(l->name);
    sl_free(l);
}

int log_scan(Store *st, const char *name, LogFn cb, void *ctx, bool *torn, Err *err)
{
    uint8_t *f;
    size_t n;
    *torn = false;
    if (store_read_file(st, name, &f, &n, err))
        return err->code;
    size_t pos = 0;
    int rc = 0;
    while (pos < n) {
        uint32_t magic, len;
        uint64_t h;
        if (n - pos < LOG_HDR) {
            *torn = true;
            break;
        }
        memcpy(&magic, f + pos, 4);
        memcpy(&len, f + pos + 4, 4);
        memcpy(&h, f + pos + 8, 8);
        if (magic != LOG_MAGIC || n - pos - LOG_HDR < len ||
            XXH64(f + pos + LOG_HDR, len, 0) != h) {
            *torn = true;
            break;
        }
        rc = cb(ctx, f + pos + LOG_HDR, len);
        if (rc)
            break;
        pos += LOG_HDR + len;
    }
    sl_free(f);
    return rc;
}

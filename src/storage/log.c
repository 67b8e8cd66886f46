/*
 * storage/log.c - append-only record logs in the storage directory (the
 * step journal and the HTTP ingress log, pipeline/ckpt.c). Writers append
 * whole records with one write() under a mutex and sync with group commit:
 * a caller that finds its bytes already covered by another caller's
 * fdatasync returns at once. Readers verify each record's checksum and
 * stop at a torn tail. Format in storage.h.
 *
 * A failed append (ENOSPC, EIO, a short write) must not leave part of a
 * record behind: the file is cut back to the end of the last whole record
 * (every append writes at l->end with pwrite, so nothing depends on the
 * descriptor's offset). When even that fails, the log is marked failed:
 * every later append first retries the cut and is refused while it fails,
 * so nothing is ever written behind a hole, and a sync of a failed log
 * fails too (nobody is told that a log with a torn middle is durable).
 *
 * Reading tells a torn tail from corruption. A record that does not verify
 * is a torn tail only when it is the last thing in the file: no whole,
 * verifying record starts anywhere after it (the writer appends one record
 * per write and never appends behind a failure). Anything else is
 * corruption, reported with the file, the offset and what failed, and the
 * caller refuses to start rather than drop the acknowledged records after
 * it.
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
    char failed[200];     /* why the file holds part of a record past end, "" (mu) */
    atomic_int refs;
};

int log_create(Store *st, const char *name, Log **out, Err *err)
{
    *out = NULL;
    int fd = openat(st->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, STORE_FILE_MODE);
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

/* pwrite all n bytes at off; 0 or -errno. The fault hook (store_fault_due)
   makes it write half and fail, as a full disk does. */
static int pwrite_all(Log *l, const uint8_t *p, size_t n, uint64_t off, const char *what)
{
    int fe = store_fault_due(what);
    size_t lim = fe ? n / 2 : n;
    while (lim) {
        ssize_t k = pwrite(l->fd, p, lim, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += k;
        off += (uint64_t)k;
        lim -= (size_t)k;
        n -= (size_t)k;
    }
    return fe ? -fe : 0;
}

/* Cut the file back to l->end (under mu); 0, or -errno with l->failed set. */
static int cut_back(Log *l, const char *why)
{
    int fe = store_fault_due("log-truncate");
    if (!fe && ftruncate(l->fd, (off_t)l->end) == 0) {
        l->failed[0] = 0;
        return 0;
    }
    int e = fe ? fe : errno;
    snprintf(l->failed, sizeof(l->failed), "%.120s, and cutting it back to %llu bytes failed: %s",
             why, (unsigned long long)l->end, strerror(e));
    return -e;
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
    if (l->failed[0] && cut_back(l, "an earlier write failed") != 0) {
        /* still part of a record past the end: appending would leave a hole */
        rc = err_set(err, SL_EIO, "storage %s/%s: %s; refusing to append after it", l->st->dir,
                     l->name, l->failed);
        goto out_unlock;
    }
    if (crash) {
        char point[64];
        snprintf(point, sizeof(point), "%s-write", crash);
        if (store_crash_due(point)) {
            /* tear the record: half of it reaches the file, then the crash */
            (void)pwrite_all(l, rec, (LOG_HDR + n) / 2, l->end, "");
            _exit(137);
        }
    }
    char what[64];
    snprintf(what, sizeof(what), "%s-write", crash ? crash : "log");
    int e = pwrite_all(l, rec, LOG_HDR + n, l->end, what);
    if (e) {
        char why[160];
        snprintf(why, sizeof(why), "%s writing a %zu-byte record at offset %llu", strerror(-e),
                 LOG_HDR + n, (unsigned long long)l->end);
        if (cut_back(l, why) == 0)
            rc = err_set(err, SL_EIO, "storage %s/%s: %s (cut back to the last whole record)",
                         l->st->dir, l->name, why);
        else
            rc = err_set(err, SL_EIO, "storage %s/%s: %s", l->st->dir, l->name, l->failed);
    } else {
        if (l->st->remote)
            buf_append(&l->unsent, rec, LOG_HDR + n);
        l->end += LOG_HDR + n;
    }
out_unlock:
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
        char failed[sizeof(l->failed)];
        memcpy(failed, l->failed, sizeof(failed));
        pthread_mutex_unlock(&l->mu);
        int fe = store_fault_due("log-sync");
        if (failed[0])
            rc = err_set(err, SL_EIO, "storage %s/%s: %s", l->st->dir, l->name, failed);
        else if (fe || fdatasync(l->fd) != 0)
            rc = err_set(err, SL_EIO, "storage %s/%s: fdatasync: %s", l->st->dir, l->name,
                         strerror(fe ? fe : errno));
        if (!rc && l->st->remote && part.n) {
            /* S3 cannot append: each sync uploads the new bytes as one part,
               NAME.<offset>; a restart concatenates the parts */
            char pn[160];
            snprintf(pn, sizeof(pn), "%s.%020llu", l->name, (unsigned long long)off);
            rc = s3_put(l->st->remote, pn, part.p, part.n, err);
        }
        if (rc && part.n) { /* the bytes are uploaded by the next sync that works */
            pthread_mutex_lock(&l->mu);
            buf_append(&part, l->unsent.p, l->unsent.n);
            buf_free(&l->unsent);
            l->unsent = part;
            l->unsent_off = off;
            part = (Buf)BUF_INIT;
            pthread_mutex_unlock(&l->mu);
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

/* Does a whole record that verifies start at f[pos..n)? */
static bool record_at(const uint8_t *f, size_t n, size_t pos, const char **why)
{
    uint32_t magic, len;
    uint64_t h;
    if (n - pos < LOG_HDR) {
        *why = "incomplete record header";
        return false;
    }
    memcpy(&magic, f + pos, 4);
    memcpy(&len, f + pos + 4, 4);
    memcpy(&h, f + pos + 8, 8);
    if (magic != LOG_MAGIC) {
        *why = "bad record magic";
        return false;
    }
    if (n - pos - LOG_HDR < len) {
        *why = "record length runs past the end of the file";
        return false;
    }
    if (XXH64(f + pos + LOG_HDR, len, 0) != h) {
        *why = "record checksum mismatch";
        return false;
    }
    return true;
}

/* The first offset after pos where a verifying record starts, or n. */
static size_t next_record(const uint8_t *f, size_t n, size_t pos)
{
    static const uint32_t magic = LOG_MAGIC;
    for (size_t q = pos + 1; q + LOG_HDR <= n; q++) {
        const uint8_t *m = memmem(f + q, n - q, &magic, 4);
        if (!m)
            break;
        q = (size_t)(m - f);
        const char *why;
        if (record_at(f, n, q, &why))
            return q;
    }
    return n;
}

int log_scan(Store *st, const char *name, LogFn cb, void *ctx, uint64_t *torn_at, Err *err)
{
    uint8_t *f;
    size_t n;
    *torn_at = UINT64_MAX;
    if (store_read_file(st, name, &f, &n, err))
        return err->code;
    size_t pos = 0;
    int rc = 0;
    while (pos < n) {
        const char *why;
        if (!record_at(f, n, pos, &why)) {
            size_t next = next_record(f, n, pos);
            if (next == n) {
                *torn_at = pos; /* nothing whole follows: the tail the writer died in */
                break;
            }
            rc = err_set(err, SL_EIO,
                         "storage file %s/%s is corrupt: the record at offset %zu does not verify "
                         "(%s), and a valid record follows at offset %zu (of %zu bytes); "
                         "refusing to skip the records after it (see docs/fault-tolerance.md, "
                         "\"Corruption\")",
                         st->dir, name, pos, why, next, n);
            break;
        }
        uint32_t len;
        memcpy(&len, f + pos + 4, 4);
        rc = cb(ctx, f + pos + LOG_HDR, len);
        if (rc)
            break;
        pos += LOG_HDR + len;
    }
    sl_free(f);
    return rc;
}

int log_cut_tail(Store *st, const char *name, uint64_t at, Err *err)
{
    int fd = openat(st->dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, SL_EIO, "storage %s: cannot open %s: %s", st->dir, name,
                       strerror(errno));
    int rc = 0;
    if (ftruncate(fd, (off_t)at) != 0 || fsync(fd) != 0)
        rc = err_set(err, SL_EIO, "storage %s/%s: cannot cut the torn tail at offset %llu: %s",
                     st->dir, name, (unsigned long long)at, strerror(errno));
    close(fd);
    if (rc || !st->remote)
        return rc;
    /* a remote log: its parts are replaced by the whole, cut file */
    uint8_t *data;
    size_t n;
    if (store_read_file(st, name, &data, &n, err))
        return err->code;
    rc = store_unlink_remote(st, name, err);
    if (!rc && n) {
        char pn[160];
        snprintf(pn, sizeof(pn), "%s.%020llu", name, 0ull);
        rc = s3_put(st->remote, pn, data, n, err);
    }
    sl_free(data);
    return rc;
}

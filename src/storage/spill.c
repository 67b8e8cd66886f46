/*
 * storage/spill.c - where spilled runs live (zset/spill.h's SpillIO): one
 * file per run, run-<n>.slr, its blocks end to end, each block the bytes
 * of a batch file (batchfile.c, store_encode_batch: LZ4, checksummed,
 * flagged as a block with no content hash), in a directory of their own.
 * In: the blocks that spill_enforce and merges cut, appended in order.
 * Out: one block read back by its offset and size (pread), checksum
 * verified. One file per block cost a file creation each (about a sixth
 * of a spilling join's time went to ext4 making inodes).
 *
 * The directory is <storage>/spill when the pipeline has storage (its own
 * Store and lock: checkpoint pruning never sees these files), and
 * <storage>/spill/host-<n> for host n > 0 of a scale-out pipeline (hosts
 * may share one storage directory), else a fresh scratch directory under
 * $TMPDIR (or /tmp) removed at close. Spilled runs are a cache of
 * in-memory state, never named by a checkpoint, so host 0 (or a single
 * process) removes the directories of hosts that do not take part in
 * this run (an earlier run with more hosts, killed) when it starts. It is
 * made on the first spill, so a pipeline that never spills never touches
 * the disk, and emptied of an earlier run's files (and of the one file
 * per block, batch-*.slb, of earlier versions) when opened. Each run file
 * has an entry (S.names) that says when it can be removed.
 *
 * A checkpoint's forked child reads the spilled runs of its frozen copy of
 * the state from these files while the parent steps on, merging spilled
 * runs and so dropping files. spill_store_hold, taken before the fork,
 * keeps every file that existed then: a file dropped while a hold older
 * than the file is open stays (its name's count at 0) until the child has
 * exited (spill_store_release). Files made after the fork are removed as
 * usual: the child never reads them. A read opens the file each time (no
 * descriptor is kept), so a file that vanished fails that read alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/hash.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../zset/hmap.h"
#include "../zset/spill.h"
#include "store_int.h"

/* A file name's entry (S.names). */
typedef struct Name {
    int64_t count;   /* 1 while its run lives; 0: kept for a hold only */
    uint64_t born;   /* S.epoch when the file was made */
    size_t disk;     /* its size */
} Name;

#define MAX_HOLDS 8
#define MAX_CODECS 8
#define SPILL_ZSTD_LEVEL (-3)

static struct {
    pthread_mutex_t mu;
    char *dir;       /* chosen directory, or NULL: scratch */
    char *scratch;   /* the scratch directory made, to remove */
    Store *st;       /* open once something spilled */
    HMap *names;     /* file name -> Name */
    bool open_failed;
    uint64_t epoch;  /* bumped by every hold */
    struct {
        uint64_t epoch; /* files born before it are kept */
        int owner;      /* the child's pid (0: not yet known) */
    } holds[MAX_HOLDS];
    int nholds;
    int64_t held_files; /* names kept for holds alone, and their bytes */
    size_t held_bytes;
    uint64_t seq;    /* run files made (their names) */
    StoreCodec *codecs[MAX_CODECS]; /* zstd contexts free for reads */
    int ncodecs;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .epoch = 1};

/* Remove every spill file in st: run files, and the block files of
   earlier versions (one file per block, "batch-"). */
static void remove_spill_files(Store *st)
{
    static const char *const prefix[] = {"run-", "batch-"};
    for (int p = 0; p < 2; p++) {
        char **names;
        int n;
        Err e = {0};
        if (!store_list(st, prefix[p], &names, &n, &e)) {
            for (int i = 0; i < n; i++)
                store_remove(st, names[i], &e);
            store_list_free(names, n);
        }
    }
}

/* Open the store on first use (S.mu held). */
static int ensure_open(Err *err)
{
    if (S.st)
        return 0;
    const char *dir = S.dir;
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        char tmpl[4096];
        snprintf(tmpl, sizeof(tmpl), "%s/sluice-spill-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(tmpl))
            return err_set(err, SL_EIO, "cannot make a scratch directory for spilled state (%s): %s",
                           tmpl, strerror(errno));
        S.scratch = sl_strdup(tmpl);
        dir = S.scratch;
    }
    int rc = store_open(dir, &S.st, err);
    if (rc)
        return rc;
    store_set_scratch(S.st); /* a restart never reads them: no fsync */
    remove_spill_files(S.st); /* an earlier run's */
    S.names = hmap_new(sizeof(Name));
    return 0;
}

/* Does an open hold need a file made at born (S.mu held)? */
static bool held(uint64_t born)
{
    for (int i = 0; i < S.nholds; i++)
        if (born < S.holds[i].epoch)
            return true;
    return false;
}

/* A run file being written (SpillIO.create .. close). */
typedef struct Writer {
    int fd;
    uint64_t off;      /* bytes written so far */
    char name[SPILL_NAME_MAX];
    StoreCodec codec;
} Writer;

static int io_create(void *ctx, char name[SPILL_NAME_MAX], void **out, Err *err)
{
    (void)ctx;
    *out = NULL;
    pthread_mutex_lock(&S.mu);
    int rc = ensure_open(err), fd = -1;
    while (!rc) {
        snprintf(name, SPILL_NAME_MAX, "run-%016llx.slr", (unsigned long long)++S.seq);
        fd = openat(S.st->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, STORE_FILE_MODE);
        if (fd >= 0)
            break;
        if (errno != EEXIST)
            rc = err_set(err, SL_EIO, "spill directory %s: cannot create %s: %s",
                         store_dir(S.st), name, strerror(errno));
    }
    if (!rc) {
        size_t kn = strlen(name);
        bool created;
        Name *e = hmap_upsert(S.names, (const uint8_t *)name, kn, sl_hash(name, kn), &created);
        *e = (Name){.count = 1, .born = S.epoch, .disk = 0};
    }
    pthread_mutex_unlock(&S.mu);
    if (rc)
        return rc;
    Writer *w = sl_calloc(1, sizeof(*w));
    w->fd = fd;
    /* LZ4: spilled top-k and window partitions spent 30% of their CPU
       time decompressing zstd (fast level -3) blocks, every step reading
       back nearly every block; LZ4 decompresses several times faster
       (docs/memory.md, Figures). SLUICE_SPILL_CODEC=zstd goes back to
       zstd (at level SLUICE_SPILL_ZSTD: -3 by default, a spilling join
       spent 30% of its CPU time compressing at level 1). */
    const char *lv = getenv("SLUICE_SPILL_ZSTD");
    w->codec.level = lv && atoi(lv) ? atoi(lv) : SPILL_ZSTD_LEVEL;
    const char *cd = getenv("SLUICE_SPILL_CODEC");
    w->codec.lz4 = !cd || strcmp(cd, "zstd") != 0;
    memcpy(w->name, name, SPILL_NAME_MAX);
    *out = w;
    return 0;
}

static int io_append(void *ctx, void *wp, const Batch *b, uint64_t *off, size_t *disk, Err *err)
{
    (void)ctx;
    Writer *w = wp;
    uint8_t *f;
    size_t n;
    int rc = store_encode_batch(b, &w->codec, &f, &n, err);
    if (rc)
        return rc;
    int e = store_write_all(w->fd, f, n);
    sl_free(f);
    if (e)
        return err_set(err, SL_EIO, "spill file %s: write: %s", w->name, strerror(-e));
    *off = w->off;
    *disk = n;
    w->off += n;
    return 0;
}

static void io_close(void *ctx, void *wp)
{
    (void)ctx;
    Writer *w = wp;
    close(w->fd);
    store_codec_free(&w->codec);
    pthread_mutex_lock(&S.mu);
    size_t kn = strlen(w->name);
    Name *e = S.names ? hmap_find(S.names, (const uint8_t *)w->name, kn, sl_hash(w->name, kn))
                      : NULL;
    if (e)
        e->disk = w->off;
    pthread_mutex_unlock(&S.mu);
    sl_free(w);
}

/* A codec for a read (S.codecs: the ones free), and back. */
static StoreCodec *codec_take(void)
{
    pthread_mutex_lock(&S.mu);
    StoreCodec *c = S.ncodecs ? S.codecs[--S.ncodecs] : NULL;
    pthread_mutex_unlock(&S.mu);
    return c ? c : sl_calloc(1, sizeof(StoreCodec));
}

static void codec_give(StoreCodec *c)
{
    pthread_mutex_lock(&S.mu);
    if (S.ncodecs < MAX_CODECS) {
        S.codecs[S.ncodecs++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&S.mu);
    if (c) {
        store_codec_free(c);
        sl_free(c);
    }
}

static int io_get(void *ctx, const char *name, uint64_t off, size_t disk, Batch **out, Err *err)
{
    (void)ctx;
    *out = NULL;
    pthread_mutex_lock(&S.mu);
    Store *st = S.st;
    pthread_mutex_unlock(&S.mu);
    if (!st)
        return err_set(err, SL_EIO, "no spill directory is open");
    char where[4400];
    snprintf(where, sizeof(where), "%s/%s at offset %llu", store_dir(st), name,
             (unsigned long long)off);
    /* opened per read: the file may go (a merge) while a checkpoint's
       child still reads its copy of the state, which a hold keeps */
    int fd = openat(st->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, SL_EIO, "storage file %s: %s", where, strerror(errno));
    uint8_t *f = sl_malloc(disk ? disk : 1);
    size_t got = 0;
    int rc = 0;
    while (got < disk) {
        ssize_t k = pread(fd, f + got, disk - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rc = k < 0 ? err_set(err, SL_EIO, "storage file %s: %s", where, strerror(errno))
                       : err_set(err, SL_EIO, "storage file %s is corrupt: truncated (%zu of "
                                 "%zu bytes)", where, got, disk);
            break;
        }
        got += (size_t)k;
    }
    close(fd);
    if (!rc) {
        StoreCodec *c = codec_take();
        rc = store_decode_batch(where, f, disk, c, out, err);
        codec_give(c);
    }
    sl_free(f);
    return rc;
}

static void io_drop(void *ctx, const char *name)
{
    (void)ctx;
    pthread_mutex_lock(&S.mu);
    size_t kn = strlen(name);
    Name *e = S.names ? hmap_find(S.names, (const uint8_t *)name, kn, sl_hash(name, kn)) : NULL;
    if (e && ALWAYS(e->count > 0) && --e->count == 0) {
        if (held(e->born)) { /* a checkpoint's child may still read it */
            S.held_files++;
            S.held_bytes += e->disk;
        } else {
            hmap_delete(S.names, (const uint8_t *)name, kn, sl_hash(name, kn));
            Err err = {0};
            store_remove(S.st, name, &err);
        }
    }
    pthread_mutex_unlock(&S.mu);
}

uint64_t spill_store_hold(void)
{
    pthread_mutex_lock(&S.mu);
    uint64_t h = 0;
    /* one hold per checkpoint child alive, and a checkpoint waits for the
       previous one's child: more than MAX_HOLDS at once is a bug (without
       a hold the child might read a file the parent removed) */
    if (ALWAYS(S.nholds < MAX_HOLDS)) {
        h = ++S.epoch;
        S.holds[S.nholds].epoch = h;
        S.holds[S.nholds++].owner = 0;
    }
    pthread_mutex_unlock(&S.mu);
    return h;
}

void spill_store_hold_owner(uint64_t hold, int pid)
{
    pthread_mutex_lock(&S.mu);
    for (int i = 0; i < S.nholds; i++)
        if (S.holds[i].epoch == hold)
            S.holds[i].owner = pid;
    pthread_mutex_unlock(&S.mu);
}

/* Close hold i and remove the files no open hold needs (S.mu held). */
static void release_at(int i)
{
    S.holds[i] = S.holds[--S.nholds];
    if (!S.held_files || !S.names)
        return;
    char **gone = NULL;
    int ngone = 0, cap = 0;
    size_t it = 0, kn;
    const uint8_t *k;
    void *pl;
    while (hmap_next(S.names, &it, &k, &kn, &pl)) {
        const Name *e = pl;
        if (e->count == 0 && !held(e->born)) {
            char *n = sl_malloc(kn + 1);
            memcpy(n, k, kn);
            n[kn] = 0;
            *VEC_PUSH(gone, ngone, cap) = n;
            S.held_files--;
            S.held_bytes -= e->disk;
        }
    }
    for (int j = 0; j < ngone; j++) {
        size_t n = strlen(gone[j]);
        hmap_delete(S.names, (const uint8_t *)gone[j], n, sl_hash(gone[j], n));
        Err err = {0};
        store_remove(S.st, gone[j], &err);
        sl_free(gone[j]);
    }
    sl_free(gone);
}

void spill_store_release(uint64_t hold)
{
    pthread_mutex_lock(&S.mu);
    for (int i = 0; i < S.nholds; i++)
        if (S.holds[i].epoch == hold) {
            release_at(i);
            break;
        }
    pthread_mutex_unlock(&S.mu);
}

void spill_store_release_owner(int pid)
{
    pthread_mutex_lock(&S.mu);
    for (int i = 0; i < S.nholds; i++)
        if (S.holds[i].owner == pid && pid > 0) {
            release_at(i);
            break;
        }
    pthread_mutex_unlock(&S.mu);
}

void spill_store_held(int64_t *files, size_t *bytes)
{
    pthread_mutex_lock(&S.mu);
    *files = S.held_files;
    *bytes = S.held_bytes;
    pthread_mutex_unlock(&S.mu);
}

/* Remove an earlier run's spilled files from dir, and dir itself when
   nothing else is in it: spill files are never read again. Only under the
   directory's lock (store_open): a live pipeline's files stay. */
static void clean_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return;
    Store *st;
    Err e = {0};
    if (store_open(dir, &st, &e))
        return;
    remove_spill_files(st);
    store_close(st);
    char path[4300];
    snprintf(path, sizeof(path), "%s/LOCK", dir);
    unlink(path);
    rmdir(dir);
}

/* Clean <spill>/host-<n> for every n >= hosts: hosts that do not take part
   in this run (an earlier run with more hosts, killed). */
static void sweep_hosts(const char *spill, int hosts)
{
    DIR *d = opendir(spill);
    if (!d)
        return;
    char (*subs)[4200] = NULL;
    int nsub = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int n = -1, len = 0;
        if (sscanf(de->d_name, "host-%d%n", &n, &len) != 1 || de->d_name[len] || n < hosts)
            continue;
        if (nsub == cap)
            subs = sl_realloc(subs, sizeof(*subs) * (size_t)(cap = cap ? 2 * cap : 4));
        snprintf(subs[nsub++], sizeof(*subs), "%s/%s", spill, de->d_name);
    }
    closedir(d);
    for (int i = 0; i < nsub; i++)
        clean_dir(subs[i]);
    sl_free(subs);
}

void spill_store_setup(const char *storage_dir, int host, int hosts, const SpillConf *conf)
{
    pthread_mutex_lock(&S.mu);
    sl_free(S.dir);
    S.dir = NULL;
    if (storage_dir) {
        size_t n = strlen(storage_dir) + 32;
        S.dir = sl_malloc(n);
        if (host > 0)
            snprintf(S.dir, n, "%s/spill/host-%d", storage_dir, host);
        else
            snprintf(S.dir, n, "%s/spill", storage_dir);
        if (host == 0)
            sweep_hosts(S.dir, hosts > 1 ? hosts : 1);
        clean_dir(S.dir); /* this host's own, of a killed run */
    }
    pthread_mutex_unlock(&S.mu);
    SpillIO io = {NULL, io_create, io_append, io_close, io_get, io_drop};
    spill_configure(conf->limit ? &io : NULL, conf);
}

const char *spill_store_where(void)
{
    pthread_mutex_lock(&S.mu);
    const char *w = S.st ? store_dir(S.st) : NULL;
    pthread_mutex_unlock(&S.mu);
    return w;
}

void spill_store_close(void)
{
    SpillConf conf;
    spill_conf(&conf);
    spill_configure(NULL, &conf);
    pthread_mutex_lock(&S.mu);
    char where[4200] = "";
    if (S.st) {
        snprintf(where, sizeof(where), "%s", store_dir(S.st));
        remove_spill_files(S.st);
        store_close(S.st);
        S.st = NULL;
    }
    if (where[0]) { /* the directory is ours (scratch, <storage>/spill[/host-<n>]);
                       <storage>/spill stays while another host's is in it */
        char path[4300];
        snprintf(path, sizeof(path), "%s/LOCK", where);
        unlink(path);
        rmdir(where);
    }
    sl_free(S.scratch);
    S.scratch = NULL;
    hmap_free(S.names);
    S.names = NULL;
    while (S.ncodecs > 0) {
        StoreCodec *c = S.codecs[--S.ncodecs];
        store_codec_free(c);
        sl_free(c);
    }
    S.nholds = 0; /* (the files are gone: a child still reading fails alone) */
    S.held_files = 0;
    S.held_bytes = 0;
    sl_free(S.dir);
    S.dir = NULL;
    pthread_mutex_unlock(&S.mu);
}

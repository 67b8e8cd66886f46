/*
 * storage/spill.c - where spilled trace blocks live (zset/spill.h's
 * SpillIO): batch files in the format of checkpoints (batchfile.c), in a
 * directory of their own. In: blocks that spill_enforce cut from spine
 * batches. Out: the same blocks read back, checksum verified.
 *
 * The directory is <storage>/spill when the pipeline has storage (its own
 * Store and lock: checkpoint pruning never sees these files), and
 * <storage>/spill/host-<n> for host n > 0 of a scale-out pipeline (hosts
 * may share one storage directory), else a fresh scratch directory under
 * $TMPDIR (or /tmp) removed at close. Spilled blocks are a cache of
 * in-memory state, never named by a checkpoint, so host 0 (or a single
 * process) removes the directories of hosts that do not take part in
 * this run (an earlier run with more hosts, killed) when it starts. It is
 * made on the first spill, so a pipeline that never spills never touches
 * the disk, and emptied of an earlier run's files when opened. Files are
 * named by content, so equal blocks share one file: a count per name says
 * when the last block using it is gone and the file can be removed.
 *
 * A checkpoint's forked child reads the spilled runs of its frozen copy of
 * the state from these files while the parent steps on, merging spilled
 * runs and so dropping files. spill_store_hold, taken before the fork,
 * keeps every file that existed then: a file dropped while a hold older
 * than the file is open stays (its name's count at 0) until the child has
 * exited (spill_store_release), unless a new block brings it back to use
 * first. Files made after the fork are removed as usual: the child never
 * reads them.
 */
#include <dirent.h>
#include <errno.h>
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
#include "storage.h"

/* A file name's entry (S.names). */
typedef struct Name {
    int64_t count;   /* blocks using it; 0: kept for a hold only */
    uint64_t born;   /* S.epoch when the file was made */
    size_t disk;     /* its size */
} Name;

#define MAX_HOLDS 8

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
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .epoch = 1};

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
    char **names;
    int n;
    if (!store_list(S.st, "batch-", &names, &n, err)) { /* an earlier run's blocks */
        for (int i = 0; i < n; i++)
            store_remove(S.st, names[i], err);
        store_list_free(names, n);
    }
    err_clear(err);
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

static int io_put(void *ctx, const Batch *b, char name[SPILL_NAME_MAX], size_t *disk, Err *err)
{
    (void)ctx;
    pthread_mutex_lock(&S.mu);
    int rc = ensure_open(err);
    if (!rc)
        rc = store_put_batch(S.st, b, name, err);
    if (!rc) {
        size_t kn = strlen(name);
        bool created;
        Name *e = hmap_upsert(S.names, (const uint8_t *)name, kn, sl_hash(name, kn), &created);
        if (created) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/%s", store_dir(S.st), name);
            struct stat sb;
            e->born = S.epoch;
            e->disk = stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
        } else if (e->count == 0) { /* kept for a hold, in use again */
            S.held_files--;
            S.held_bytes -= e->disk;
        }
        e->count++;
        *disk = e->disk;
    }
    pthread_mutex_unlock(&S.mu);
    return rc;
}

static int io_get(void *ctx, const char *name, Batch **out, Err *err)
{
    (void)ctx;
    pthread_mutex_lock(&S.mu);
    Store *st = S.st;
    pthread_mutex_unlock(&S.mu);
    if (!st)
        return err_set(err, SL_EIO, "no spill directory is open");
    return store_get_batch(st, name, out, err); /* thread-safe (storage.h) */
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
    char **names;
    int n;
    if (!store_list(st, "batch-", &names, &n, &e)) {
        for (int i = 0; i < n; i++)
            store_remove(st, names[i], &e);
        store_list_free(names, n);
    }
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
    SpillIO io = {NULL, io_put, io_get, io_drop};
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
        char **names;
        int n;
        Err e = {0};
        if (!store_list(S.st, "batch-", &names, &n, &e)) {
            for (int i = 0; i < n; i++)
                store_remove(S.st, names[i], &e);
            store_list_free(names, n);
        }
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
    S.nholds = 0; /* (the files are gone: a child still reading fails alone) */
    S.held_files = 0;
    S.held_bytes = 0;
    sl_free(S.dir);
    S.dir = NULL;
    pthread_mutex_unlock(&S.mu);
}

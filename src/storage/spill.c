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
#include "../zset/hmap.h"
#include "../zset/spill.h"
#include "storage.h"

static struct {
    pthread_mutex_t mu;
    char *dir;       /* chosen directory, or NULL: scratch */
    char *scratch;   /* the scratch directory made, to remove */
    Store *st;       /* open once something spilled */
    HMap *names;     /* file name -> blocks using it (int64) */
    bool open_failed;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

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
    S.names = hmap_new(sizeof(int64_t));
    return 0;
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
        int64_t *cnt = hmap_upsert(S.names, (const uint8_t *)name, kn, sl_hash(name, kn), &created);
        ++*cnt;
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", store_dir(S.st), name);
        struct stat sb;
        *disk = stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
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
    int64_t *cnt = S.names ? hmap_find(S.names, (const uint8_t *)name, kn, sl_hash(name, kn)) : NULL;
    if (cnt && --*cnt == 0) {
        hmap_delete(S.names, (const uint8_t *)name, kn, sl_hash(name, kn));
        Err e = {0};
        store_remove(S.st, name, &e);
    }
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
    sl_free(S.dir);
    S.dir = NULL;
    pthread_mutex_unlock(&S.mu);
}

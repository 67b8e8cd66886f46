/*
 * storage/store.c - the storage directory: its lock, atomic publication of
 * files (temp + fsync + rename + directory fsync), manifests, pruning, the
 * twin names that keep two checkpoints from sharing a file, and the crash
 * and I/O fault injection hooks. The batch file format is in batchfile.c.
 *
 * The lock is an exclusive flock on a descriptor of the directory itself,
 * held as long as the Store is open; LOCK only tells a second opener the
 * holder's pid. Deleting or replacing LOCK therefore frees nothing. Every
 * file is created 0600 and every directory 0700.
 *
 * A manifest file is the caller's JSON text, a newline, then one line
 *   #sluice-manifest v1 xxh64=<16 hex>
 * whose hash covers every byte before that line. A manifest verifies when
 * the line is present and matches, the JSON parses to an object, and every
 * name in its "files" array is a batch file present in the directory.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../base/buf.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "store_int.h"

#define TMP_PREFIX "tmp-"
#define MANIFEST_TAIL "#sluice-manifest v1 xxh64="

/* ---- fault injection ---- */

static atomic_int crash_hits;

bool store_crash_due(const char *point)
{
    const char *at = getenv("SLUICE_CRASH_AT");
    if (!at || !*at)
        return false;
    size_t pn = strlen(point);
    if (strncmp(at, point, pn) != 0 || (at[pn] != 0 && at[pn] != ':'))
        return false;
    int nth = at[pn] == ':' ? atoi(at + pn + 1) : 1;
    return atomic_fetch_add(&crash_hits, 1) + 1 >= nth;
}

/*
 * SLUICE_FAULT=<point>-<error>:<n>[+<k>][,...]: the n-th arrival at <point>
 * (and the k-1 after it; k defaults to 1) fails with <error> (enospc, eio,
 * edquot) instead of doing its I/O. A point is "ingress-write",
 * "journal-write", "log-write" (other logs), "batch-write",
 * "manifest-write", "log-truncate", "log-sync", or "write" for every
 * write of the store. Each rule counts its own arrivals.
 */
#define FAULT_RULES 8
static struct {
    char point[32];
    int err;
    int from, count;
    atomic_int hits;
} fault_rule[FAULT_RULES];
static int fault_nrules;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static void fault_parse(void)
{
    const char *spec = getenv("SLUICE_FAULT");
    static const struct {
        const char *name;
        int err;
    } errs[] = {{"enospc", ENOSPC}, {"eio", EIO}, {"edquot", EDQUOT}};
    while (spec && *spec && fault_nrules < FAULT_RULES) {
        size_t len = strcspn(spec, ",");
        char rule[96];
        snprintf(rule, sizeof(rule), "%.*s", (int)(len < 95 ? len : 95), spec);
        spec += len + (spec[len] == ',');
        char *colon = strchr(rule, ':');
        if (colon)
            *colon = 0;
        char *dash = strrchr(rule, '-');
        if (!dash)
            continue;
        *dash = 0;
        int e = 0;
        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
            if (!strcmp(dash + 1, errs[i].name))
                e = errs[i].err;
        if (!e || strlen(rule) >= sizeof(fault_rule[0].point))
            continue;
        int from = colon ? atoi(colon + 1) : 1, count = 1;
        const char *plus = colon ? strchr(colon + 1, '+') : NULL;
        if (plus)
            count = atoi(plus + 1);
        strcpy(fault_rule[fault_nrules].point, rule);
        fault_rule[fault_nrules].err = e;
        fault_rule[fault_nrules].from = from > 0 ? from : 1;
        fault_rule[fault_nrules].count = count > 0 ? count : 1;
        fault_nrules++;
    }
}

void store_fault_reload(void)
{
    pthread_once(&fault_once, fault_parse);
    memset(fault_rule, 0, sizeof(fault_rule));
    fault_nrules = 0;
    fault_parse();
}

int store_fault_due(const char *point)
{
    pthread_once(&fault_once, fault_parse);
    size_t pn = strlen(point);
    bool is_write = pn >= 6 && !strcmp(point + pn - 6, "-write");
    for (int i = 0; i < fault_nrules; i++) {
        bool any_write = is_write && !strcmp(fault_rule[i].point, "write");
        if (strcmp(fault_rule[i].point, point) && !any_write)
            continue;
        int hit = atomic_fetch_add(&fault_rule[i].hits, 1) + 1;
        if (hit >= fault_rule[i].from && hit < fault_rule[i].from + fault_rule[i].count)
            return fault_rule[i].err;
    }
    return 0;
}

void store_crash_point(const char *point)
{
    if (store_crash_due(point))
        _exit(137);
}

/* Points counted by the caller ("after-step:N" is step N, "after-checkpoint:N"
   the N-th checkpoint): see sl_crash_count_due. */
bool store_crash_from_count_due(const char *point, int64_t n)
{
    return sl_crash_count_due(point, n, true);
}

void store_crash_at_count(const char *point, int64_t n)
{
    if (sl_crash_count_due(point, n, false))
        _exit(137);
}

/* ---- file helpers ---- */

int store_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n) {
        ssize_t k = write(fd, q, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        q += k;
        n -= (size_t)k;
    }
    return 0;
}

int store_tmp_open(Store *st, const char *final, char tmp[96], Err *err)
{
    unsigned long long seq = atomic_fetch_add(&st->tmp_seq, 1);
    snprintf(tmp, 96, TMP_PREFIX "%d-%llu-%s", (int)getpid(), seq, final);
    int fd = openat(st->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, STORE_FILE_MODE);
    if (fd < 0)
        return err_set(err, SL_EIO, "storage %s: cannot create %s: %s", st->dir, tmp,
                       strerror(errno));
    return fd;
}

void store_tmp_discard(Store *st, int fd, const char *tmp)
{
    close(fd);
    unlinkat(st->dirfd, tmp, 0);
}

static int sync_dir(Store *st, Err *err)
{
    if (fsync(st->dirfd) != 0)
        return err_set(err, SL_EIO, "storage %s: fsync of the directory: %s", st->dir,
                       strerror(errno));
    return 0;
}

void store_set_scratch(Store *st) { st->nosync = true; }

int store_publish(Store *st, int fd, const char *tmp, const char *final, Err *err)
{
    if (!st->nosync && fsync(fd) != 0) {
        int e = errno;
        store_tmp_discard(st, fd, tmp);
        return err_set(err, SL_EIO, "storage %s/%s: fsync: %s", st->dir, tmp, strerror(e));
    }
    if (close(fd) != 0) {
        int e = errno;
        unlinkat(st->dirfd, tmp, 0);
        return err_set(err, SL_EIO, "storage %s/%s: close: %s", st->dir, tmp, strerror(e));
    }
    if (renameat(st->dirfd, tmp, st->dirfd, final) != 0) {
        int e = errno;
        unlinkat(st->dirfd, tmp, 0);
        return err_set(err, SL_EIO, "storage %s: rename %s -> %s: %s", st->dir, tmp, final,
                       strerror(e));
    }
    if (!st->nosync && sync_dir(st, err))
        return err->code;
    if (!st->remote)
        return 0;
    /* a remote store: the file counts as written once the object is */
    uint8_t *data;
    size_t n;
    if (store_read_file(st, final, &data, &n, err))
        return err->code;
    int rc = s3_put(st->remote, final, data, n, err);
    sl_free(data);
    return rc;
}

int store_read_file(Store *st, const char *name, uint8_t **out, size_t *n, Err *err)
{
    *out = NULL;
    *n = 0;
    int fd = openat(st->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, SL_EIO, "storage file %s/%s: %s", st->dir, name, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, SL_EIO, "storage file %s/%s: %s", st->dir, name, strerror(e));
    }
    size_t size = (size_t)sb.st_size, got = 0;
    uint8_t *p = sl_malloc(size + 1);
    while (got < size) {
        ssize_t k = read(fd, p + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : 0;
            close(fd);
            sl_free(p);
            return err_set(err, SL_EIO, "storage file %s/%s: read: %s", st->dir, name,
                           e ? strerror(e) : "file shrank while reading");
        }
        got += (size_t)k;
    }
    close(fd);
    p[size] = 0;
    *out = p;
    *n = size;
    return 0;
}

bool store_is_batch_name(const char *name)
{
    if (strncmp(name, "batch-", 6) != 0)
        return false;
    size_t n = strlen(name);
    if (n != 6 + 32 + 4 && n != 6 + 32 + 2 + 4)
        return false;
    for (int i = 6; i < 38; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return strcmp(name + 38, n == 42 ? ".slb" : "-1.slb") == 0;
}

void store_batch_twin(const char *name, char twin[STORE_NAME_MAX])
{
    if (strlen(name) == 42)
        snprintf(twin, STORE_NAME_MAX, "%.38s-1.slb", name);
    else
        snprintf(twin, STORE_NAME_MAX, "%.38s.slb", name);
}

static int cmp_cstrp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

void store_set_avoid(Store *st, const char *const *names, size_t n)
{
    for (size_t i = 0; i < st->navoid; i++)
        sl_free(st->avoid[i]);
    sl_free(st->avoid);
    st->avoid = sl_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        st->avoid[i] = sl_strdup(names[i]);
    st->navoid = n;
    if (n)
        qsort(st->avoid, n, sizeof(char *), cmp_cstrp);
}

bool store_avoided(const Store *st, const char *name)
{
    return st->navoid &&
           bsearch(&name, st->avoid, st->navoid, sizeof(char *), cmp_cstrp) != NULL;
}

bool store_file_exists(Store *st, const char *name)
{
    struct stat sb;
    return fstatat(st->dirfd, name, &sb, 0) == 0;
}

/* "manifest-<digits>.json" -> step; false for anything else. */
static bool manifest_step(const char *name, uint64_t *step)
{
    if (strncmp(name, "manifest-", 9) != 0)
        return false;
    const char *p = name + 9, *q = p;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q == p || q - p > 20 || strcmp(q, ".json") != 0)
        return false;
    *step = strtoull(p, NULL, 10);
    return true;
}

/* ---- open / close ---- */

static int mkdir_p(const char *dir, Err *err)
{
    char *path = sl_strdup(dir);
    int rc = 0;
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != 0)
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(path, STORE_DIR_MODE) != 0 && errno != EEXIST) {
            rc = err_set(err, SL_EIO, "storage: cannot create directory %s: %s", path,
                         strerror(errno));
            break;
        }
        *p = c;
        if (c == 0)
            break;
    }
    sl_free(path);
    return rc;
}

/* A directory stream of its own (a dup of dirfd would share its offset). */
static DIR *open_listing(Store *st)
{
    int fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d)
        close(fd);
    return d;
}

/* Remove temp files left behind by a process that died mid-write. */
static void remove_stale_tmps(Store *st)
{
    DIR *d = open_listing(st);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
            unlinkat(st->dirfd, e->d_name, 0);
    closedir(d);
}

/*
 * The lock: an exclusive flock on a descriptor of the directory itself
 * (not on a file in it), so deleting or replacing LOCK cannot let a
 * second pipeline in; the kernel drops it when the holder dies. LOCK only
 * names the holder's pid for the message a second opener gets.
 */
static int lock_dir(const char *dir, int dfd, int *lockfd, Err *err)
{
    int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lfd < 0)
        return err_set(err, SL_EIO, "storage: cannot open directory %s: %s", dir,
                       strerror(errno));
    /* A pipeline killed with kill -9 may leave its checkpoint child (which
       shares the lock) alive for a moment: it dies with its parent
       (PR_SET_PDEATHSIG), so when the pid in LOCK is gone, wait for it,
       up to 10 s. A live holder is refused at once. */
    int tries = 0, e = 0;
    char holder[32] = "";
    while (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
        e = errno;
        holder[0] = 0;
        int pfd = openat(dfd, "LOCK", O_RDONLY | O_CLOEXEC);
        if (pfd >= 0) {
            ssize_t k = read(pfd, holder, sizeof(holder) - 1);
            holder[k > 0 ? k : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            close(pfd);
        }
        long hp = atol(holder);
        if (e != EWOULDBLOCK || hp <= 0 || kill((pid_t)hp, 0) == 0 || errno != ESRCH ||
            ++tries > 1000)
            break;
        usleep(10000);
        e = 0;
    }
    if (e) {
        close(lfd);
        if (e == EWOULDBLOCK)
            return err_set(err, SL_EIO,
                           "storage directory %s is in use by another pipeline (pid %s); "
                           "two pipelines cannot share one storage directory",
                           dir, *holder ? holder : "unknown");
        return err_set(err, SL_EIO, "storage: cannot lock directory %s: %s", dir, strerror(e));
    }
    /* the holder's pid, for messages only: a fresh file, renamed into place */
    char pid[32];
    int pn = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    char tmp[64];
    snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-LOCK", (int)getpid());
    int pfd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, STORE_FILE_MODE);
    if (pfd >= 0) {
        bool ok = store_write_all(pfd, pid, (size_t)pn) == 0;
        close(pfd);
        if (!ok || renameat(dfd, tmp, dfd, "LOCK") != 0)
            unlinkat(dfd, tmp, 0);
    }
    *lockfd = lfd;
    return 0;
}

int store_open(const char *dir, Store **out, Err *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return err_set(err, SL_ECONFIG, "storage: empty directory name");
    int rc = mkdir_p(dir, err);
    if (rc)
        return rc;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return err_set(err, SL_EIO, "storage: cannot open directory %s: %s", dir,
                       strerror(errno));
    int lfd = -1;
    if ((rc = lock_dir(dir, dfd, &lfd, err)) != 0) {
        close(dfd);
        return rc;
    }
    Store *st = sl_calloc(1, sizeof(*st));
    st->dir = sl_strdup(dir);
    st->dirfd = dfd;
    st->lockfd = lfd;
    remove_stale_tmps(st);
    *out = st;
    return 0;
}

static int open_s3(const char *where, bool pull, Store **out, Err *err);

int store_open_member(const char *where, Store **out, Err *err)
{
    *out = NULL;
    if (where && !strncmp(where, "s3://", 5))
        return open_s3(where, false, out, err); /* files it reads: store_fetch */
    if (!where || !*where)
        return err_set(err, SL_ECONFIG, "storage: empty directory name");
    int rc = mkdir_p(where, err);
    if (rc)
        return rc;
    int dfd = open(where, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return err_set(err, SL_EIO, "storage: cannot open directory %s: %s", where,
                       strerror(errno));
    Store *st = sl_calloc(1, sizeof(*st));
    st->dir = sl_strdup(where);
    st->dirfd = dfd;
    st->lockfd = -1;
    *out = st;
    return 0;
}

void store_forget_lock(Store *st)
{
    if (st->lockfd >= 0)
        close(st->lockfd);
    st->lockfd = -1;
}

void store_close(Store *st)
{
    if (!st)
        return;
    if (st->own_dir) { /* the cache of a remote store: everything is in the bucket */
        char **v;
        int n;
        Err e = {0};
        if (store_list(st, "", &v, &n, &e) == 0) {
            for (int i = 0; i < n; i++)
                unlinkat(st->dirfd, v[i], 0);
            store_list_free(v, n);
        }
        rmdir(st->dir);
    }
    store_set_avoid(st, NULL, 0);
    sl_free(st->avoid);
    s3_free(st->remote);
    sl_free(st->url);
    if (st->lockfd >= 0)
        close(st->lockfd); /* releases the flock */
    close(st->dirfd);
    sl_free(st->dir);
    sl_free(st);
}

const char *store_dir(const Store *st) { return st->dir; }

void store_stats(const Store *st, StoreStats *out)
{
    out->batches_written = st->batches_written;
    out->batches_reused = st->batches_reused;
    out->bytes_written = st->bytes_written;
}

/* ---- manifests ---- */

/* Check that j is an object whose "files" (if any) are present batch
   files; on failure a reason goes to why. */
static bool manifest_files_ok(Store *st, const cJSON *j, char *why, size_t whyn)
{
    if (!cJSON_IsObject(j)) {
        snprintf(why, whyn, "not a JSON object");
        return false;
    }
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
    if (!files)
        return true;
    if (!cJSON_IsArray(files)) {
        snprintf(why, whyn, "\"files\" is not an array");
        return false;
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        if (!cJSON_IsString(f) || !store_is_batch_name(f->valuestring)) {
            snprintf(why, whyn, "\"files\" holds something that is not a batch file name");
            return false;
        }
        if (!store_file_exists(st, f->valuestring)) {
            snprintf(why, whyn, "names %s, which is missing", f->valuestring);
            return false;
        }
    }
    return true;
}

int store_write_manifest(Store *st, uint64_t step, const char *json, Err *err)
{
    cJSON *j = cJSON_Parse(json);
    if (!j)
        return err_set(err, SL_EDATA, "storage: manifest for step %" PRIu64 " is not valid JSON",
                       step);
    char why[160];
    bool ok = manifest_files_ok(st, j, why, sizeof(why));
    cJSON_Delete(j);
    if (!ok)
        return err_set(err, SL_EDATA, "storage: manifest for step %" PRIu64 ": %s", step, why);

    Buf b = BUF_INIT;
    buf_puts(&b, json);
    buf_putc(&b, '\n');
    uint64_t h = XXH64(b.p, b.n, 0);
    buf_printf(&b, MANIFEST_TAIL "%016llx\n", (unsigned long long)h);

    char final[64], tmp[96];
    snprintf(final, sizeof(final), "manifest-%" PRIu64 ".json", step);
    int fd = store_tmp_open(st, final, tmp, err);
    if (fd < 0) {
        buf_free(&b);
        return fd;
    }
    size_t half = b.n / 2;
    int e = store_write_all(fd, b.p, half), fe;
    if (e == 0 && (fe = store_fault_due("manifest-write")) != 0)
        e = -fe;
    if (e == 0) {
        store_crash_point("manifest-write");
        e = store_write_all(fd, b.p + half, b.n - half);
    }
    st->bytes_written += b.n;
    buf_free(&b);
    if (e) {
        store_tmp_discard(st, fd, tmp);
        return err_set(err, SL_EIO, "storage %s/%s: write: %s", st->dir, tmp, strerror(-e));
    }
    store_crash_point("manifest-rename");
    return store_publish(st, fd, tmp, final, err);
}

/* Read and verify one manifest; on success *json is its JSON text (without
   the checksum line) and *parsed (if non-NULL) the parsed object. On
   failure returns false with the reason in why. */
static bool manifest_load(Store *st, const char *name, char **json, cJSON **parsed, char *why,
                          size_t whyn)
{
    uint8_t *f;
    size_t n;
    Err e = {0};
    *json = NULL;
    if (parsed)
        *parsed = NULL;
    if (store_read_file(st, name, &f, &n, &e) != 0) {
        snprintf(why, whyn, "%s", e.msg);
        return false;
    }
    char *s = (char *)f;
    /* The last line is the checksum line; the text before it ends in \n. */
    size_t tl = strlen(MANIFEST_TAIL) + 16 + 1;
    if (n < tl + 1 || s[n - 1] != '\n' || s[n - tl - 1] != '\n' ||
        memcmp(s + n - tl, MANIFEST_TAIL, strlen(MANIFEST_TAIL)) != 0) {
        snprintf(why, whyn, "no checksum line (truncated?)");
        sl_free(f);
        return false;
    }
    char hex[17];
    memcpy(hex, s + n - 17, 16);
    hex[16] = 0;
    uint64_t stored = strtoull(hex, NULL, 16), computed = XXH64(s, n - tl, 0);
    if (stored != computed) {
        snprintf(why, whyn, "checksum mismatch (stored %016llx, computed %016llx)",
                 (unsigned long long)stored, (unsigned long long)computed);
        sl_free(f);
        return false;
    }
    s[n - tl - 1] = 0;
    cJSON *j = cJSON_Parse(s);
    if (!j) {
        snprintf(why, whyn, "checksum matches but the JSON does not parse");
        sl_free(f);
        return false;
    }
    if (!manifest_files_ok(st, j, why, whyn)) {
        cJSON_Delete(j);
        sl_free(f);
        return false;
    }
    if (parsed)
        *parsed = j;
    else
        cJSON_Delete(j);
    *json = s;
    return true;
}

typedef struct MEnt {
    uint64_t step;
    char name[64];
} MEnt;

static int ment_desc(const void *x, const void *y)
{
    const MEnt *a = x, *b = y;
    return (a->step < b->step) - (a->step > b->step);
}

/* All manifest files, newest first (sl_free the result). */
static MEnt *list_manifests(Store *st, size_t *count, Err *err)
{
    *count = 0;
    DIR *d = open_listing(st);
    if (!d) {
        err_set(err, SL_EIO, "storage %s: cannot list: %s", st->dir, strerror(errno));
        return NULL;
    }
    size_t n = 0, cap = 0;
    MEnt *m = NULL;
    VEC_RESERVE(m, cap, 8); /* never NULL, even for no manifest */
    struct dirent *e;
    uint64_t step;
    while ((e = readdir(d)) != NULL) {
        if (!manifest_step(e->d_name, &step))
            continue;
        VEC_RESERVE(m, cap, n + 1);
        m[n].step = step;
        snprintf(m[n].name, sizeof(m[n].name), "%.63s", e->d_name); /* <= 34 chars */
        n++;
    }
    closedir(d);
    qsort(m, n, sizeof(*m), ment_desc);
    *count = n;
    return m;
}

int store_latest_manifest(Store *st, uint64_t *step, char **json, char **skipped, Err *err)
{
    return store_manifest_before(st, UINT64_MAX, step, json, skipped, err);
}

int store_manifest_before(Store *st, uint64_t below, uint64_t *step, char **json,
                          char **skipped, Err *err)
{
    *step = 0;
    *json = NULL;
    if (skipped)
        *skipped = NULL;
    size_t n;
    MEnt *m = list_manifests(st, &n, err);
    if (!m)
        return SL_EIO;
    Buf notes = BUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char why[1100];
        if (m[i].step >= below)
            continue;
        if (manifest_load(st, m[i].name, json, NULL, why, sizeof(why))) {
            *step = m[i].step;
            break;
        }
        buf_printf(&notes, "skipped %s/%s: %s\n", st->dir, m[i].name, why);
    }
    if (notes.n && !*json)
        rc = err_set(err, SL_EIO, "storage %s: no manifest verifies:\n%s", st->dir,
                     buf_cstr(&notes));
    if (skipped && notes.n)
        *skipped = sl_strdup(buf_cstr(&notes));
    buf_free(&notes);
    sl_free(m);
    return rc;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int store_prune(Store *st, int keep, const char *const *refs, size_t nrefs, Err *err)
{
    size_t n;
    MEnt *m = list_manifests(st, &n, err);
    if (!m)
        return SL_EIO;
    /* Referenced names: refs, then the files of the kept manifests. */
    size_t nk = 0, cap = 0;
    char **keepn = NULL;
    VEC_RESERVE(keepn, cap, nrefs + 16);
    for (size_t i = 0; i < nrefs; i++)
        keepn[nk++] = sl_strdup(refs[i]);
    int kept = 0, rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *json, why[1100];
        cJSON *j;
        if (kept < keep && manifest_load(st, m[i].name, &json, &j, why, sizeof(why))) {
            kept++;
            const cJSON *f;
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(j, "files"))
            {
                *VEC_PUSH(keepn, nk, cap) = sl_strdup(f->valuestring);
            }
            cJSON_Delete(j);
            sl_free(json);
            continue;
        }
        if ((rc = store_unlink(st, m[i].name, err)) != 0)
            goto out;
    }
    qsort(keepn, nk, sizeof(char *), cmp_str);
    DIR *d = open_listing(st);
    if (!d) {
        rc = err_set(err, SL_EIO, "storage %s: cannot list: %s", st->dir, strerror(errno));
        goto out;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!store_is_batch_name(e->d_name))
            continue;
        const char *key = e->d_name;
        if (bsearch(&key, keepn, nk, sizeof(char *), cmp_str))
            continue;
        if ((rc = store_unlink(st, e->d_name, err)) != 0)
            break;
    }
    closedir(d);
    if (rc == 0)
        rc = sync_dir(st, err);
out:
    for (size_t i = 0; i < nk; i++)
        sl_free(keepn[i]);
    sl_free(keepn);
    sl_free(m);
    return rc;
}

/* ---- other files: listing, removal ---- */

int store_list(Store *st, const char *prefix, char ***names, int *count, Err *err)
{
    *names = NULL;
    *count = 0;
    DIR *d = open_listing(st);
    if (!d)
        return err_set(err, SL_EIO, "storage %s: cannot list: %s", st->dir, strerror(errno));
    size_t pn = strlen(prefix);
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, pn) != 0 || e->d_name[0] == '.')
            continue;
        *VEC_PUSH(v, n, cap) = sl_strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(v, (size_t)n, sizeof(char *), cmp_str);
    *names = v;
    *count = n;
    return 0;
}

void store_list_free(char **names, int count)
{
    for (int i = 0; i < count; i++)
        sl_free(names[i]);
    sl_free(names);
}

int store_remove(Store *st, const char *name, Err *err) { return store_unlink(st, name, err); }

int store_unlink(Store *st, const char *name, Err *err)
{
    if (unlinkat(st->dirfd, name, 0) != 0 && errno != ENOENT)
        return err_set(err, SL_EIO, "storage %s: cannot delete %s: %s", st->dir, name,
                       strerror(errno));
    return store_unlink_remote(st, name, err);
}

int store_unlink_remote(Store *st, const char *name, Err *err)
{
    if (!st->remote)
        return 0;
    size_t nl = strlen(name);
    if (nl < 4 || strcmp(name + nl - 4, ".log"))
        return s3_delete(st->remote, name, err);
    char **v;
    int n, rc = s3_list(st->remote, &v, &n, err);
    for (int i = 0; i < n && !rc; i++)
        if (!strncmp(v[i], name, nl) && v[i][nl] == '.')
            rc = s3_delete(st->remote, v[i], err);
    for (int i = 0; i < n; i++)
        sl_free(v[i]);
    sl_free(v);
    return rc;
}

/* ---- remote stores ---- */

static int cmp_cstr(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Write data as the local file name (fsync'd, atomically). */
static int put_local(Store *st, const char *name, const void *data, size_t n, Err *err)
{
    char tmp[96];
    int fd = openat(st->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, STORE_FILE_MODE);
    (void)tmp;
    if (fd < 0)
        return err_set(err, SL_EIO, "storage %s: cannot create %s: %s", st->dir, name,
                       strerror(errno));
    int e = store_write_all(fd, data, n);
    if (!e && fsync(fd) != 0)
        e = -errno;
    close(fd);
    if (e)
        return err_set(err, SL_EIO, "storage %s/%s: %s", st->dir, name, strerror(-e));
    return 0;
}

int store_fetch(Store *st, const char *name, Err *err)
{
    if (store_file_exists(st, name))
        return 0;
    if (!st->remote)
        return err_set(err, SL_EIO, "storage %s: %s is missing", st->dir, name);
    Buf obj = BUF_INIT;
    int rc = s3_get(st->remote, name, &obj, err);
    if (!rc)
        rc = put_local(st, name, obj.p, obj.n, err);
    buf_free(&obj);
    return rc;
}

/* Fill the (empty) local cache from the bucket: files as they are, log
   segments from their parts (NAME.log.<offset>) in offset order. */
static int pull_remote(Store *st, Err *err)
{
    char **v;
    int n;
    if (s3_list(st->remote, &v, &n, err))
        return err->code;
    if (n) /* parts: zero-padded offsets sort */
        qsort(v, (size_t)n, sizeof(char *), cmp_cstr);
    int rc = 0;
    Buf obj = BUF_INIT, seg = BUF_INIT;
    char segname[256] = "";
    for (int i = 0; i < n && !rc; i++) {
        const char *dot = strstr(v[i], ".log.");
        if (!strcmp(v[i], "LOCK") || !strncmp(v[i], TMP_PREFIX, strlen(TMP_PREFIX)))
            continue;
        if ((rc = s3_get(st->remote, v[i], &obj, err)) != 0)
            break;
        if (!dot) {
            rc = put_local(st, v[i], obj.p, obj.n, err);
            continue;
        }
        size_t sn = (size_t)(dot - v[i]) + 4;
        if (sn >= sizeof(segname))
            continue;
        if (strncmp(segname, v[i], sn) || segname[sn]) {
            if (segname[0])
                rc = put_local(st, segname, seg.p, seg.n, err);
            buf_reset(&seg);
            snprintf(segname, sizeof(segname), "%.*s", (int)sn, v[i]);
        }
        unsigned long long off = strtoull(dot + 5, NULL, 10);
        if (off == seg.n && obj.n) /* parts are contiguous; anything else is a leftover */
            buf_append(&seg, obj.p, obj.n);
    }
    if (!rc && segname[0])
        rc = put_local(st, segname, seg.p, seg.n, err);
    if (!rc)
        rc = sync_dir(st, err);
    buf_free(&obj);
    buf_free(&seg);
    for (int i = 0; i < n; i++)
        sl_free(v[i]);
    sl_free(v);
    return rc;
}

/* Remove the local caches of remote stores whose process died (their
   LOCK is free); live pipelines hold theirs. */
static void remove_dead_caches(const char *tmpd)
{
    DIR *d = opendir(tmpd);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "sluice-s3-cache-", 16))
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", tmpd, e->d_name);
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            continue;
        int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) == 0) {
            DIR *c = fdopendir(dup(dfd));
            struct dirent *f;
            while (c && (f = readdir(c)) != NULL)
                if (f->d_name[0] != '.')
                    unlinkat(dfd, f->d_name, 0);
            if (c)
                closedir(c);
            rmdir(path);
        }
        if (lfd >= 0)
            close(lfd);
        close(dfd);
    }
    closedir(d);
}

/* pull: fill the cache from the bucket (else files come on demand,
   store_fetch). */
static int open_s3(const char *where, bool pull, Store **out, Err *err)
{
    *out = NULL;
    S3 *s3;
    if (s3_open(where, &s3, err))
        return err->code;
    if (s3_ensure_bucket(s3, err)) {
        s3_free(s3);
        return err->code;
    }
    const char *tmpd = getenv("TMPDIR");
    if (!tmpd || !*tmpd)
        tmpd = "/tmp";
    remove_dead_caches(tmpd);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/sluice-s3-cache-XXXXXX", tmpd);
    if (!mkdtemp(dir)) {
        s3_free(s3);
        return err_set(err, SL_EIO, "storage %s: cannot create a local cache directory: %s",
                       where, strerror(errno));
    }
    Store *st;
    if (store_open(dir, &st, err)) {
        s3_free(s3);
        rmdir(dir);
        return err->code;
    }
    st->remote = s3;
    st->url = sl_strdup(where);
    st->own_dir = true;
    if (pull && pull_remote(st, err)) {
        store_close(st);
        return err->code;
    }
    *out = st;
    return 0;
}

int store_open_url(const char *where, Store **out, Err *err)
{
    *out = NULL;
    if (strncmp(where, "s3://", 5))
        return store_open(where, out, err);
    return open_s3(where, true, out, err);
}

const char *store_where(const Store *st) { return st->url ? st->url : st->dir; }

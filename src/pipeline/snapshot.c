/*
 * pipeline/snapshot.c - one host's share of a checkpoint: the forked child
 * that saves its workers' operator state (op.h save()) into the storage
 * and reports the files it wrote, reading that report back, and loading a
 * manifest's "state" into a runtime (re-sharded when the worker count
 * changed). The coordinator's checkpoints (ckpt.c) and every follower of
 * a scale-out pipeline (follow.c) save and restore their share this way.
 *
 * The child holds a frozen copy-on-write image of every operator's state
 * (fork(), as Redis does for BGSAVE); batch files are content-named, so a
 * file that exists is not written again, and nodes that received no input
 * since the last checkpoint keep its files under their twin names (two
 * kept checkpoints share no file: storage.h).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/forkgate.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "../cluster/net.h"
#include "../zset/spill.h"
#include "snapshot.h"

int64_t ckpt_jint(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && v->valuedouble >= -9e15 && v->valuedouble <= 9e15
               ? (int64_t)v->valuedouble
               : 0;
}

/* cJSON prints numbers with 15 significant digits (and accepts the
   rounding), so only integers below 10^15 survive as JSON numbers. */
#define JINT_EXACT INT64_C(999999999999999)

cJSON *ckpt_jint_new(int64_t x)
{
    if (x >= -JINT_EXACT && x <= JINT_EXACT)
        return cJSON_CreateNumber((double)x);
    char t[24];
    snprintf(t, sizeof(t), "%" PRId64, x);
    return cJSON_CreateString(t);
}

bool ckpt_jint_get(const cJSON *v, int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble; /* NaN fails both bounds */
        if (!(d >= -(double)JINT_EXACT && d <= (double)JINT_EXACT) || d != (double)(int64_t)d)
            return false;
        *out = (int64_t)d;
        return true;
    }
    if (!cJSON_IsString(v) || !*v->valuestring)
        return false;
    const char *s = v->valuestring;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return false;
    *out = x;
    return true;
}

/* Tell the store which files the checkpoint that stays kept beside this
   one uses (the newest manifest of a step before `step`: one of the same
   step is replaced by this one), so that this one takes their twins: two
   kept checkpoints share no file. A store that holds no manifest at all
   (an S3 follower's cache) avoids the files of prev (a "state" array). */
void ckpt_avoid_previous(Store *st, const cJSON *prev, int64_t step)
{
    size_t n = 0, cap = 0;
    const char **v = NULL;
    const cJSON *e, *f;
    cJSON *m = NULL;
    uint64_t mstep;
    char *json = NULL, **names;
    int nm = 0;
    Err err = {0};
    if (store_manifest_before(st, (uint64_t)step, &mstep, &json, NULL, &err) == 0 && json)
        m = cJSON_Parse(json);
    sl_free(json);
    if (store_list(st, "manifest-", &names, &nm, &err) == 0)
        store_list_free(names, nm);
    const cJSON *list = m ? cJSON_GetObjectItemCaseSensitive(m, "state") : nm ? NULL : prev;
    cJSON_ArrayForEach(e, list)
    {
        cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "files"))
        {
            if (!cJSON_IsString(f))
                continue;
            *VEC_PUSH(v, n, cap) = f->valuestring;
        }
    }
    store_set_avoid(st, v, n);
    sl_free(v);
    cJSON_Delete(m);
}

/* ---------------------------------------------------------------- the child */

static void child_write(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            _exit(1);
        s += k;
        n -= (size_t)k;
    }
}

#ifdef SL_DEBUG
/* SLUICE_CKPT_HOLD=<dir> (tests, debug builds only): a child started
   while <dir>/hold (or, on host N only, <dir>/hold-hostN) exists writes
   <dir>/held-<pid> and waits, before it reads any state, until that file
   is gone, so that a test can have the parent step (spill, merge spilled
   runs) while a checkpoint is under way, without racing it, or have one
   host's share hang. */
static void child_hold(void)
{
    const char *dir = getenv("SLUICE_CKPT_HOLD");
    char hold[4096], held[4200];
    if (!dir || !*dir)
        return;
    snprintf(hold, sizeof(hold), "%s/hold", dir);
    if (access(hold, F_OK) != 0) {
        snprintf(hold, sizeof(hold), "%s/hold-host%d", dir, net_host());
        if (access(hold, F_OK) != 0)
            return;
    }
    snprintf(held, sizeof(held), "%s/held-%d", dir, (int)getpid());
    int fd = open(held, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
        close(fd);
    while (access(hold, F_OK) == 0)
        usleep(5000);
}
#endif

/* The child's report pipe, for spill_on_read_error: a spilled block it
   cannot read back fails the checkpoint with a message, not a panic. */
static int child_fd = -1;

static __attribute__((noreturn)) void child_spill_failed(const char *msg)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "ERR %s\n", msg);
    child_write(child_fd, line, n > 0 && (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
    _exit(1);
}

/*
 * The forked child: it has a frozen copy of the whole state (copy-on-write
 * pages) while the parent keeps stepping. It saves every operator instance,
 * writes the batch files (store_put_batch skips files that exist: their
 * names are their contents' hash) and reports one line per file,
 * "<worker> <node> <name>", then "OK <written> <reused> <bytes>", or
 * "ERR <message>". It never returns and runs no exit handlers.
 */
static __attribute__((noreturn)) void child_main(Store *st, Runtime *rt, int nnodes,
                                                 const bool *dirty, const char *prev_state, int fd)
{
    Buf out = BUF_INIT, mine = BUF_INIT;
    Err err = {0};
    StoreStats s0, s1;
    child_fd = fd;
    spill_on_read_error(child_spill_failed);
#ifdef SL_DEBUG
    child_hold();
#endif
    cJSON *prev = prev_state ? cJSON_Parse(prev_state) : NULL;
    store_stats(st, &s0);
    int first = rt_first_worker(rt);
    for (int lw = 0; lw < rt_workers(rt); lw++)
        for (int n = 0; n < nnodes; n++) {
            int w = first + lw; /* manifests name global workers */
            /* nodes that received no input since the last checkpoint keep
               its files (under their twin names: kept checkpoints share no
               file); one whose file turns out damaged is saved again */
            if (!dirty[n] && prev) {
                const cJSON *e, *f;
                bool found = false, ok = true;
                buf_reset(&mine);
                cJSON_ArrayForEach(e, prev)
                {
                    if (ckpt_jint(e, "node") != n || ckpt_jint(e, "worker") != w)
                        continue;
                    found = true;
                    cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "files"))
                    {
                        char name[STORE_NAME_MAX];
                        Err re = {0};
                        if (ok && (!cJSON_IsString(f) ||
                                   store_reuse_batch(st, f->valuestring, name, &re))) {
                            ok = false;
                            fprintf(stderr, "sluice: checkpoint: %s; saving that state again\n",
                                    re.code ? re.msg : "a malformed file list");
                        }
                        if (ok)
                            buf_printf(&mine, "%d %d %s\n", w, n, name);
                    }
                }
                if (found && ok) {
                    buf_append(&out, mine.p, mine.n);
                    continue;
                }
            }
            BatchList l = {0};
            int rc = rt_save(rt, lw, n, &l);
            for (int i = 0; i < l.n && !rc; i++) {
                char name[STORE_NAME_MAX];
                rc = store_put_batch(st, l.b[i], name, &err);
                if (!rc)
                    buf_printf(&out, "%d %d %s\n", w, n, name);
            }
            if (rc) {
                buf_reset(&out);
                buf_printf(&out, "ERR %s\n", err.code ? err.msg : "saving an operator failed");
                child_write(fd, (const char *)out.p, out.n);
                _exit(1);
            }
            /* the state stays: the child exits without freeing anything */
            (void)l;
        }
    store_stats(st, &s1);
    buf_printf(&out, "OK %llu %llu %llu\n",
               (unsigned long long)(s1.batches_written - s0.batches_written),
               (unsigned long long)(s1.batches_reused - s0.batches_reused),
               (unsigned long long)(s1.bytes_written - s0.bytes_written));
    child_write(fd, (const char *)out.p, out.n);
    _exit(0);
}

int ckpt_fork(Store *st, Runtime *rt, int nnodes, const bool *dirty, const char *prev_state,
              pid_t *pid_out, int *fd_out, Err *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return err_set(err, SL_EIO, "checkpoint: pipe: %s", strerror(errno));
    /* the files to avoid are found here, not in the child: a child of a
       threaded process should allocate as little as it can */
    cJSON *prev = prev_state ? cJSON_Parse(prev_state) : NULL;
    ckpt_avoid_previous(st, prev, rt_steps(rt)); /* the checkpoint's step */
    cJSON_Delete(prev);
    /* the spill files of the frozen state stay until the child has exited
       (the parent's merges drop them meanwhile) */
    uint64_t hold = spill_store_hold();
    fflush(NULL);
    pid_t pid = sl_fork(); /* once no other thread is inside the allocator */
    if (pid < 0) {
        spill_store_release(hold);
        close(fds[0]);
        close(fds[1]);
        return err_set(err, SL_EIO, "checkpoint: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        /* dies with the pipeline (a killed pipeline leaves no writer
           behind), and lets go of the storage lock with it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(1);
        store_forget_lock(st);
        child_main(st, rt, nnodes, dirty, prev_state, fds[1]);
    }
    spill_store_hold_owner(hold, pid);
    close(fds[1]);
    *pid_out = pid;
    *fd_out = fds[0];
    return 0;
}

double ckpt_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void ckpt_reap(int fd, pid_t pid, double timeout, Buf *text)
{
    ckpt_reap_until(fd, pid, timeout > 0 ? ckpt_clock() + timeout : 0, timeout, text);
}

void ckpt_reap_until(int fd, pid_t pid, double end, double timeout, Buf *text)
{
    char chunk[65536];
    bool killed = false;
    for (;;) {
        if (end && !killed) { /* wait for output, or the deadline */
            double left = end - ckpt_clock();
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            int r = left > 0 ? poll(&pf, 1, left > 3600 ? 3600000 : (int)(left * 1000) + 1) : 0;
            if (r < 0 && errno == EINTR)
                continue;
            if (r == 0 && ckpt_clock() >= end) {
                /* the child hangs (a stuck disk or object store): give up on
                   it; whatever it wrote stays unreferenced, as after a crash */
                kill(pid, SIGKILL);
                killed = true;
                fprintf(stderr, "sluice: checkpoint: the checkpoint process (pid %d) ran longer "
                        "than %g s (checkpoint_timeout_secs); killed\n", (int)pid, timeout);
                continue;
            }
            if (r == 0)
                continue;
        }
        ssize_t k = read(fd, chunk, sizeof(chunk));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        buf_append(text, chunk, (size_t)k);
    }
    close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    spill_store_release_owner(pid);
    if (killed) { /* (ahead of anything it wrote: the first ERR is the reason) */
        Buf why = BUF_INIT;
        buf_printf(&why, "ERR ran longer than the checkpoint timeout of %g s "
                   "(checkpoint_timeout_secs) and was killed\n", timeout);
        buf_append(&why, text->p, text->n);
        buf_reset(text);
        buf_append(text, why.p, why.n);
        buf_free(&why);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 137 && getenv("SLUICE_CRASH_AT"))
        _exit(137); /* an injected crash inside the checkpoint: the pipeline dies there */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        buf_puts(text, "\nDIED\n"); /* whatever it said, it did not finish */
}

int ckpt_parse_report(const char *text, cJSON *state, int64_t *written, int64_t *reused,
                      int64_t *bytes, Err *err)
{
    const char *ok = strstr(text, "OK ");
    if (strstr(text, "\nDIED\n") || !ok) {
        const char *e = strstr(text, "ERR ");
        return err_set(err, SL_EIO, "the checkpoint process %s%.*s", e ? "failed: " : "died",
                       e ? (int)strcspn(e + 4, "\n") : 0, e ? e + 4 : "");
    }
    unsigned long long wr = 0, ru = 0, by = 0;
    sscanf(ok + 3, "%llu %llu %llu", &wr, &ru, &by);
    *written += (int64_t)wr;
    *reused += (int64_t)ru;
    *bytes += (int64_t)by;
    cJSON *cur = NULL;
    int cw = -1, cn = -1;
    for (const char *line = text; line < ok;) {
        const char *nl = strchr(line, '\n');
        int w, n;
        char name[STORE_NAME_MAX + 8];
        if (sscanf(line, "%d %d %70s", &w, &n, name) == 3) {
            if (!cur || w != cw || n != cn) {
                cur = cJSON_CreateObject();
                cJSON_AddNumberToObject(cur, "node", n);
                cJSON_AddNumberToObject(cur, "worker", w);
                cJSON_AddArrayToObject(cur, "files");
                cJSON_AddItemToArray(state, cur);
                cw = w;
                cn = n;
            }
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(cur, "files"),
                                 cJSON_CreateString(name));
        }
        line = nl ? nl + 1 : ok;
    }
    return 0;
}

/* The batches of one "state" entry's files (*n of them; caller unrefs). */
static int load_files(Store *st, const cJSON *e, Batch ***out, int *n, Err *err)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(e, "files");
    *n = cJSON_GetArraySize(files);
    Batch **bs = sl_calloc((size_t)*n + 1, sizeof(Batch *));
    int k = 0, rc = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        if (!cJSON_IsString(f) || (rc = store_fetch(st, f->valuestring, err)) ||
            (rc = store_get_batch(st, f->valuestring, &bs[k], err)))
            break;
        k++;
    }
    if (!rc && k != *n)
        rc = err_set(err, SL_EIO, "a state entry lists a file that is not a name");
    if (rc) {
        for (int i = 0; i < k; i++)
            batch_unref(bs[i]);
        sl_free(bs);
        return SL_EIO;
    }
    *out = bs;
    return 0;
}

int ckpt_load_state(Store *st, Runtime *rt, int nn, const cJSON *state, int W0, Err *err)
{
    int rc = 0, W = rt_total_workers(rt), first = rt_first_worker(rt), nl = rt_workers(rt);
    /* per (old worker, node): the saved batches */
    Batch ***lists = sl_calloc((size_t)W0 * (size_t)nn, sizeof(Batch **));
    int *counts = sl_calloc((size_t)W0 * (size_t)nn, sizeof(int));
    const cJSON *e;
    cJSON_ArrayForEach(e, state)
    {
        int node = (int)ckpt_jint(e, "node"), w = (int)ckpt_jint(e, "worker");
        if (node < 0 || node >= nn || w < 0 || w >= W0 || !rt_stateful(rt, node) ||
            lists[w * nn + node]) {
            rc = err_set(err, SL_EIO, "state of node %d, worker %d does not fit the program",
                         node, w);
            break;
        }
        if (W0 == W && (w < first || w >= first + nl))
            continue; /* another host's worker */
        if ((rc = load_files(st, e, &lists[w * nn + node], &counts[w * nn + node], err)))
            break;
    }
    Batch **col = sl_calloc((size_t)W0 + 1, sizeof(Batch *));
    Batch *const **klist = sl_calloc((size_t)W0 + 1, sizeof(Batch **));
    int *kcount = sl_calloc((size_t)W0 + 1, sizeof(int));
    for (int node = 0; node < nn && !rc; node++) {
        if (W0 == W) {
            for (int w = first; w < first + nl && !rc; w++)
                if (lists[w * nn + node])
                    rc = rt_load(rt, w - first, node, lists[w * nn + node],
                                 counts[w * nn + node], err);
            continue;
        }
        bool any = false;
        for (int k = 0; k < W0; k++) {
            klist[k] = lists[k * nn + node] ? lists[k * nn + node] : col;
            kcount[k] = counts[k * nn + node];
            any |= lists[k * nn + node] != NULL;
        }
        for (int w = 0; w < nl && !rc && any; w++)
            rc = rt_load_split(rt, w, node, klist, kcount, W0, err);
    }
    sl_free(col);
    sl_free(klist);
    sl_free(kcount);
    for (int i = 0; i < W0 * nn; i++) {
        for (int j = 0; j < counts[i] && lists[i]; j++)
            batch_unref(lists[i][j]);
        sl_free(lists[i]);
    }
    sl_free(lists);
    sl_free(counts);
    return rc ? SL_EIO : 0;
}

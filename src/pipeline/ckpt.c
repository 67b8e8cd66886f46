/*
 * pipeline/ckpt.c - checkpoints. At a step boundary the controller records
 * the connectors' positions and the output files' offsets, starts new
 * journal and ingress segments and fork()s (as Redis does for BGSAVE): the
 * child holds a frozen copy-on-write image of every operator's state,
 * saves each instance (op.h save()) and writes the batch files —
 * content-named, so a file that exists is not written again — then reports
 * their names through a pipe and exits. The pipeline waits only for the
 * fork and keeps stepping. A writer thread reads the report, writes the
 * manifest atomically (a checkpoint exists once its manifest does) and
 * prunes what no kept checkpoint needs (the newest two are kept). Nodes
 * that received no input since the last checkpoint (rt_node_changed) keep
 * its files; when no step ran at all, its state is reused without a fork.
 * The controller collects the finished job at a later step boundary. The
 * child and the loading of a saved state are snapshot.c's (every host of
 * a scale-out pipeline saves its share that way); the other hosts' shares
 * are begun and reported through the step backend (backend.h).
 *
 * The two kept checkpoints share no file: before the child forks, the
 * store is told the files of the checkpoint that stays kept beside the new
 * one (avoid_previous), and the new one takes the twin name of each of
 * them (storage.h), copying a reused file (checksum verified; a damaged
 * one is saved again from memory) once, and then reusing that copy.
 *
 * At start-up ft_open restores the newest checkpoint that loads (every
 * manifest field checked; a malformed manifest or a corrupt file sends it
 * to the one before, saying so), refuses storage written by another
 * program, refuses to start when checkpoints exist but none loads (unless
 * the logs reach back to the beginning), and has journal.c read the
 * journal and ingress log after it. Layout of the files: ft_int.h; user view:
 * docs/fault-tolerance.md.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/mem.h"
#include "../expr/tz.h"
#include "../cluster/net.h"
#include "../io/deliver.h"
#include "boot.h"
#include "ft_int.h"
#include "progstore.h"

static const char *mode_name(int m)
{
    return m == FT_EXACTLY_ONCE ? "exactly_once" : m == FT_AT_LEAST_ONCE ? "at_least_once" : "none";
}

/* ---------------------------------------------------------------- jobs */

static void job_free(CkJob *j)
{
    if (!j)
        return;
    for (int h = 0; h < j->hosts && j->remote; h++)
        sl_free(j->remote[h]);
    sl_free(j->remote);
    if (j->fd >= 0)
        close(j->fd);
    sl_free(j->meta);
    sl_free(j->reuse);
    sl_free(j->state);
    sl_free(j->pos);
    sl_free(j);
}



/* ---------------------------------------------------------------- the writer */

static int cmp_strp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}



/* Read the local child's report, and wait for every other host's, into a
   "state" array (j->state, JSON text). */
static int collect_child(Ft *ft, CkJob *j, Err *err)
{
    Buf in = BUF_INIT;
    ckpt_reap(j->fd, j->pid, ft->timeout, &in);
    j->fd = -1;
    j->pid = 0;
    cJSON *state = cJSON_CreateArray();
    int rc = ckpt_parse_report(buf_cstr(&in), state, &j->written, &j->reused, &j->bytes, err);
    buf_free(&in);
    /* phase one on the other hosts (if any): each reports its share */
    pthread_mutex_lock(&ft->mu);
    while (j->remote_pending > 0 && !ft->quit)
        pthread_cond_wait(&ft->cv, &ft->mu);
    pthread_mutex_unlock(&ft->mu);
    for (int h = 1; h < j->hosts && !rc; h++) {
        Err he = {0};
        cJSON *theirs = cJSON_CreateArray(), *e;
        const cJSON *f;
        if (!j->remote[h])
            rc = err_set(err, SL_EIO, "host %d sent no checkpoint report", h);
        else if (ckpt_parse_report(j->remote[h], theirs, &j->written, &j->reused, &j->bytes,
                                   &he))
            rc = err_set(err, SL_EIO, "host %d (%s): %s", h, net_host_name(h), he.msg);
        /* that host wrote into the shared storage; an S3 store's cache
           must hold its files before the manifest may name them */
        while (!rc && (e = cJSON_DetachItemFromArray(theirs, 0))) {
            cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "files"))
            {
                if (!rc)
                    rc = store_fetch(ft->st, f->valuestring, err);
            }
            cJSON_AddItemToArray(state, e);
        }
        cJSON_Delete(theirs);
    }
    if (!rc) {
        char *st = cJSON_PrintUnformatted(state);
        j->state = sl_strdup(st);
        cJSON_free(st);
    }
    cJSON_Delete(state);
    return rc;
}

/* The state of the last checkpoint again (j->reuse) into j->state, each
   file under its twin name (copied when missing): kept checkpoints share
   no file. A damaged file fails the checkpoint (the next saves it all). */
static int reuse_state(Store *st, CkJob *j, Err *err)
{
    cJSON *state = cJSON_Parse(j->reuse);
    ckpt_avoid_previous(st, NULL, j->step);
    StoreStats s0, s1;
    store_stats(st, &s0);
    int rc = 0;
    cJSON *e, *f;
    cJSON_ArrayForEach(e, state)
    {
        cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "files"))
        {
            char name[STORE_NAME_MAX];
            if (rc || !cJSON_IsString(f))
                continue;
            if (!(rc = store_reuse_batch(st, f->valuestring, name, err)) &&
                !cJSON_SetValuestring(f, name))
                rc = err_set(err, SL_EIO, "checkpoint: out of memory renaming %s", name);
        }
    }
    store_stats(st, &s1);
    j->reused += (int64_t)(s1.batches_reused - s0.batches_reused);
    j->bytes += (int64_t)(s1.bytes_written - s0.bytes_written);
    if (!rc) {
        char *text = cJSON_PrintUnformatted(state);
        j->state = sl_strdup(text ? text : "[]");
        cJSON_free(text);
    }
    cJSON_Delete(state);
    return rc;
}

/* SLUICE_CRASH_AT=after-checkpoint:N (storage.h): the N-th manifest this
   process published. Called on the writer thread only. */
static void crash_after_checkpoint(void)
{
    static int64_t published;
    store_crash_at_count("after-checkpoint", ++published);
}

/* Finish job j on the writer thread: the state (from the child, or the
   previous checkpoint's when nothing changed), then the manifest. */
static void write_job(Ft *ft, CkJob *j)
{
    double t0 = pipe_now();
    Err err = {0};
    int rc = 0;
    if (j->reuse) {
        /* no step ran: the same state, under the files' twin names */
        rc = reuse_state(ft->st, j, &err);
    } else {
        rc = collect_child(ft, j, &err);
    }
    if (!rc) {
        cJSON *m = cJSON_Parse(j->meta), *state = cJSON_Parse(j->state);
        cJSON_AddItemToObject(m, "state", state);
        int total = 0;
        const cJSON *e, *f;
        cJSON_ArrayForEach(e, state) total += cJSON_GetArraySize(cJSON_GetObjectItem(e, "files"));
        const char **all = sl_calloc((size_t)total + 1, sizeof(char *));
        int k = 0;
        cJSON_ArrayForEach(e, state)
        {
            cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "files")) all[k++] = f->valuestring;
        }
        if (k)
            qsort(all, (size_t)k, sizeof(char *), cmp_strp);
        cJSON *files = cJSON_AddArrayToObject(m, "files");
        for (int i = 0; i < k; i++)
            if (i == 0 || strcmp(all[i], all[i - 1])) {
                cJSON_AddItemToArray(files, cJSON_CreateString(all[i]));
                j->files++;
            }
        if (j->written + j->reused == 0)
            j->reused = j->files; /* nothing changed: every file is the last checkpoint's */
        sl_free(all);
        char *text = cJSON_PrintUnformatted(m);
        cJSON_Delete(m);
        rc = store_write_manifest(ft->st, (uint64_t)j->step, text, &err);
        cJSON_free(text);
        if (!rc)
            crash_after_checkpoint();
        if (!rc)
            rc = store_prune(ft->st, 2, NULL, 0, &err);
    }
    j->rc = rc;
    if (rc)
        snprintf(j->err, sizeof(j->err), "%.890s", err.msg);
    j->secs = pipe_now() - t0 + j->pause_secs;
}

static void *writer_main(void *arg)
{
    Ft *ft = arg;
    pthread_mutex_lock(&ft->mu);
    for (;;) {
        while (!ft->quit && (!ft->job || ft->job_done))
            pthread_cond_wait(&ft->cv, &ft->mu);
        if (ft->quit)
            break;
        CkJob *j = ft->job;
        pthread_mutex_unlock(&ft->mu);
        write_job(ft, j);
        pthread_mutex_lock(&ft->mu);
        ft->job_done = true;
        pthread_cond_broadcast(&ft->cv);
        pthread_mutex_unlock(&ft->mu); /* lock order: the queue's before ft->mu */
        pthread_mutex_lock(ft->qmu);
        pthread_cond_signal(ft->wake);
        pthread_mutex_unlock(ft->qmu);
        pthread_mutex_lock(&ft->mu);
    }
    pthread_mutex_unlock(&ft->mu);
    return NULL;
}

/* ---------------------------------------------------------------- taking one */

/* The shape of a compiled circuit: every node's kind, inputs and output
   column types (a TIMESTAMPTZ's session zone by name). A checkpoint's state is per node, in the layout the
   planner chose; the program's fingerprint hashes only its text, and
   another build of sluice may compile the same text into a different
   circuit (a planner that narrows a join's rows): such state must be
   refused, not read into the wrong layout. */
uint64_t ckpt_circuit_shape(const Circuit *c)
{
    XXH64_state_t *h = XXH64_createState();
    XXH64_reset(h, 0);
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *nd = c->nodes[i];
        int32_t head[3] = {(int32_t)nd->k, nd->nin, nd->ncol};
        XXH64_update(h, head, sizeof(head));
        if (nd->nin)
            XXH64_update(h, nd->in, sizeof(int) * (size_t)nd->nin);
        for (int j = 0; j < nd->ncol; j++) {
            SqlType t = nd->types[j];
            if (t.kind == TK_TIMESTAMPTZ || t.elem == TK_TIMESTAMPTZ) {
                /* a zone id is local to the process (tz.h): hash its name */
                const char *z = tz_name(t.len);
                XXH64_update(h, z, strlen(z) + 1);
                t.len = 0;
            }
            XXH64_update(h, &t, sizeof(t));
        }
    }
    uint64_t r = XXH64_digest(h);
    XXH64_freeState(h);
    return r;
}

static char *job_meta(Ft *ft, FtCounts n)
{
    cJSON *m = cJSON_CreateObject();
    char fp[32];
    snprintf(fp, sizeof(fp), "%016" PRIx64, ft->fingerprint);
    cJSON_AddNumberToObject(m, "format", 1);
    cJSON_AddStringToObject(m, "fingerprint", fp);
    if (ft->program) /* for `sluice diff` and bootstrapping (docs/bootstrapping.md) */
        cJSON_AddStringToObject(m, "program", ft->program);
    if (ft->booting) { /* the first checkpoint after a bootstrap: for the record */
        cJSON *b = cJSON_AddObjectToObject(m, "bootstrap");
        cJSON_AddStringToObject(b, "from", ft->boot_from);
        cJSON_AddNumberToObject(b, "from_step", (double)ft->boot_from_step);
    }
    cJSON_AddNumberToObject(m, "workers", ft->be->workers);
    cJSON_AddNumberToObject(m, "hosts", ft->be->hosts);
    cJSON_AddNumberToObject(m, "nodes", ft->c->nnodes);
    char shape[32];
    snprintf(shape, sizeof(shape), "%016" PRIx64, ckpt_circuit_shape(ft->c));
    cJSON_AddStringToObject(m, "circuit", shape);
    cJSON_AddNumberToObject(m, "step", (double)rt_steps(ft->be->rt));
    cJSON_AddNumberToObject(m, "rows", (double)n.rows);
    cJSON_AddNumberToObject(m, "txn_id", (double)n.txn_id);
    cJSON_AddNumberToObject(m, "ingress_seq", (double)ft->ing_consumed);
    cJSON *ins = cJSON_AddArrayToObject(m, "inputs");
    for (int j = 0; j < ft->cs->nin; j++) {
        InPos pos;
        input_pos(ft->cs->in[j], &pos);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", input_name(ft->cs->in[j]));
        cJSON *v = cJSON_AddArrayToObject(e, "pos");
        cJSON_AddItemToArray(v, ckpt_jint_new(pos.v[0]));
        cJSON_AddItemToArray(v, ckpt_jint_new(pos.v[1]));
        for (int i = 0; i < pos.nx; i++) /* kafka_input: per-partition offsets */
            cJSON_AddItemToArray(v, ckpt_jint_new(pos.x[i]));
        cJSON_AddNumberToObject(e, "rows", (double)pos.rows);
        cJSON_AddNumberToObject(e, "errors", (double)pos.errors);
        cJSON_AddNumberToObject(e, "bytes", (double)pos.bytes);
        cJSON_AddItemToArray(ins, e);
    }
    cJSON *outs = cJSON_AddArrayToObject(m, "outputs");
    for (int j = 0; j < ft->cs->nout; j++) {
        OutputConn *oc = ft->cs->out[j];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", output_name(oc));
        cJSON_AddNumberToObject(e, "offset", (double)output_offset(oc));
        cJSON_AddNumberToObject(e, "records", (double)output_records(oc));
        cJSON_AddNumberToObject(e, "bytes", (double)output_bytes(oc));
        DeliverCounts dc; /* io/deliver_figs.c: counters across restarts */
        if (deliver_counts(oc, &dc)) {
            cJSON *dj = cJSON_AddObjectToObject(e, "delivery");
            const int64_t v[6] = {dc.changes, dc.sent, dc.acked, dc.retried, dc.dead, dc.counted};
            for (int k = 0; k < 6; k++)
                cJSON_AddItemToObject(dj, deliver_count_names[k], ckpt_jint_new(v[k]));
        }
        cJSON_AddItemToArray(outs, e);
    }
    char *s = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    char *r = sl_strdup(s);
    cJSON_free(s);
    return r;
}

/* Every input's position now (sl_free it). */
static InPos *positions_now(Ft *ft)
{
    InPos *p = sl_calloc((size_t)ft->cs->nin + 1, sizeof(InPos));
    for (int j = 0; j < ft->cs->nin; j++)
        input_pos(ft->cs->in[j], &p[j]);
    return p;
}

/* Take the state (fork a child that writes it from its frozen copy, or
   reuse the last checkpoint's when no step ran since) and hand the job to
   the writer. The pipeline waits only for the fork. */
static int start_job(Ft *ft, int64_t seq, FtCounts n, Err *err)
{
    double t0 = pipe_now();
    for (int j = 0; j < ft->cs->nout; j++)
        if (output_sync(ft->cs->out[j], err))
            return err->code;
    CkJob *j = sl_calloc(1, sizeof(*j));
    j->fd = -1;
    j->seq = seq;
    j->started = t0;
    j->step = rt_steps(ft->be->rt);
    j->meta = job_meta(ft, n);
    j->ingress_seq = ft->ing_consumed;
    j->pos = positions_now(ft);
    if (ft_rotate(ft, j->step, err)) {
        job_free(j);
        return err->code;
    }
    if (!ft->dirty && ft->last_state) {
        j->reuse = sl_strdup(ft->last_state);
    } else {
        /* which nodes' state must be saved again (the rest keep their files) */
        int nn = ft->c->nnodes;
        bool full = ft->full_next || !ft->last_state;
        bool *dirty = sl_calloc((size_t)nn + 1, sizeof(bool));
        for (int k = 0; k < nn; k++)
            dirty[k] = full || rt_node_changed(ft->be->rt, k);
        /* phase one everywhere: every host saves its share, the others'
           reports come in through ft_remote_report */
        j->hosts = ft->be->hosts;
        j->remote = sl_calloc((size_t)j->hosts, sizeof(char *));
        pthread_mutex_lock(&ft->mu);
        j->remote_pending = j->hosts - 1;
        ft->job_remote = j;
        pthread_mutex_unlock(&ft->mu);
        ft->be->ops->ckpt_begin(ft->be, j->step, full, ft_remote_report, ft);
        int rc = ckpt_fork(ft->st, ft->be->rt, nn, dirty, ft->last_state, &j->pid, &j->fd, err);
        sl_free(dirty);
        if (rc) {
            ft_remote_abandon(ft, j);
            job_free(j);
            return rc;
        }
        rt_clear_changed(ft->be->rt);
        ft->full_next = false;
    }
    ft->last_time = pipe_now();
    j->pause_secs = ft->last_time - t0;
    ft->last_step = j->step;
    ft->dirty = false;
    pthread_mutex_lock(&ft->mu);
    ft->job = j;
    ft->job_done = false;
    pthread_cond_broadcast(&ft->cv);
    pthread_mutex_unlock(&ft->mu);
    return 0;
}

/* Tell the inputs what the oldest checkpoint kept holds (input_release). */
static void release_inputs(Ft *ft)
{
    const InPos *old = ft->kept_pos[0] ? ft->kept_pos[0] : ft->kept_pos[1];
    InPos *zero = old ? NULL : sl_calloc((size_t)ft->cs->nin + 1, sizeof(InPos));
    ft->be->ops->release(ft->be, old ? old : zero); /* on the hosts that read them */
    sl_free(zero);
}

/* The writer finished: publish, remember the state for unchanged
   checkpoints, prune logs. */
static void collect_job(Ft *ft)
{
    CkJob *j = ft->job;
    ft->job = NULL;
    pthread_mutex_lock(&ft->mu);
    bool remote = ft->job_remote == j;
    if (remote)
        ft->job_remote = NULL;
    if (j->rc) {
        snprintf(ft->failure, sizeof(ft->failure), "checkpoint at step %lld failed: %.900s",
                 (long long)j->step, j->err);
        if (j->seq)
            ft->req_failed = j->seq;
    } else {
        ft->failure[0] = 0;
        ft->done_step = j->step;
        ft->done_secs = j->secs;
        ft->done_pause = j->pause_secs;
        ft->done_files = j->files;
        ft->done_written = j->written;
        ft->done_reused = j->reused;
        ft->done_bytes = j->bytes;
        if (j->seq > ft->req_done)
            ft->req_done = j->seq;
    }
    pthread_mutex_unlock(&ft->mu);
    if (remote)
        ft->be->ops->ckpt_abandon(ft->be);
    if (j->rc) {
        fprintf(stderr, "sluice: %s\n", ft->failure);
        ft->dirty = true; /* the next one must write the whole state */
        ft->full_next = true;
        job_free(j);
        return;
    }
    sl_free(ft->last_state);
    ft->last_state = j->state;
    j->state = NULL;
    ft->last_secs = j->secs;
    if (ft->kept_steps[1] != j->step) {
        ft->kept_steps[0] = ft->kept_steps[1];
        ft->kept_seqs[0] = ft->kept_seqs[1];
        ft->kept_steps[1] = j->step;
        ft->kept_seqs[1] = j->ingress_seq;
        sl_free(ft->kept_pos[0]);
        ft->kept_pos[0] = ft->kept_pos[1];
        ft->kept_pos[1] = j->pos;
        j->pos = NULL;
        release_inputs(ft);
    }
    job_free(j);
    ft_prune_logs(ft, ft->kept_steps[0], ft->kept_seqs[0]);
}

static bool job_finished(Ft *ft)
{
    pthread_mutex_lock(&ft->mu);
    bool d = ft->job && ft->job_done;
    pthread_mutex_unlock(&ft->mu);
    return d;
}

static void job_wait(Ft *ft)
{
    pthread_mutex_lock(&ft->mu);
    while (ft->job && !ft->job_done) {
        if (ft->job->remote_pending > 0 && ft->be->ops->gone(ft->be)) {
            ft->job->remote_pending = 0; /* they left: the checkpoint fails */
            pthread_cond_broadcast(&ft->cv);
            continue;
        }
        if (ft->job->remote_pending > 0) {
            /* the other hosts' reports come with their replies: ask */
            pthread_mutex_unlock(&ft->mu);
            ft->be->ops->poll(ft->be);
            usleep(2000);
            pthread_mutex_lock(&ft->mu);
            continue;
        }
        pthread_cond_wait(&ft->cv, &ft->mu);
    }
    pthread_mutex_unlock(&ft->mu);
}

void ft_remote_report(void *arg, int host, int64_t step, const char *text, size_t n)
{
    Ft *ft = arg;
    pthread_mutex_lock(&ft->mu);
    CkJob *j = ft->job_remote;
    if (j && j->step == step && host > 0 && host < j->hosts && !j->remote[host]) {
        j->remote[host] = sl_malloc(n + 1);
        memcpy(j->remote[host], text, n);
        j->remote[host][n] = 0;
        j->remote_pending--;
        pthread_cond_broadcast(&ft->cv);
    }
    pthread_mutex_unlock(&ft->mu);
}

void ft_remote_abandon(Ft *ft, CkJob *j)
{
    pthread_mutex_lock(&ft->mu);
    if (ft->job_remote == j)
        ft->job_remote = NULL;
    pthread_mutex_unlock(&ft->mu);
    ft->be->ops->ckpt_abandon(ft->be);
}

bool ft_wants(Ft *ft)
{
    if (!ft)
        return false;
    pthread_mutex_lock(&ft->mu);
    bool w = ft->requested || (ft->job && ft->job_done);
    pthread_mutex_unlock(&ft->mu);
    return w;
}

/* SLUICE_CHECKPOINT_EVERY_STEPS=K (tests): a checkpoint every K steps,
   waited for, so which checkpoints exist depends on step counts alone. */
static bool forced_due(Ft *ft)
{
    static int every = -1; /* the controller thread's alone */
    if (every < 0)
        every = getenv("SLUICE_CHECKPOINT_EVERY_STEPS") ?
                    atoi(getenv("SLUICE_CHECKPOINT_EVERY_STEPS")) : 0;
    int64_t last = ft->last_step > 0 ? ft->last_step : 0;
    return every > 0 && rt_steps(ft->be->rt) - last >= every;
}

int ft_tick(Ft *ft, bool busy, FtCounts n, bool final, Err *err)
{
    if (!ft)
        return 0;
    bool forced = forced_due(ft);
    if (final || forced)
        job_wait(ft);
    if (ft->job && job_finished(ft))
        collect_job(ft);
    if (ft->job || busy)
        return 0;
    pthread_mutex_lock(&ft->mu);
    bool req = ft->requested;
    int64_t seq = ft->req_seq;
    pthread_mutex_unlock(&ft->mu);
    bool periodic = ft->mode != FT_NONE && ft->interval > 0 && ft->dirty &&
                    pipe_now() - ft->last_time >= ft->interval;
    bool at_stop = final && (ft->dirty || ft->last_step != rt_steps(ft->be->rt));
    if (!req && !periodic && !at_stop && !forced)
        return 0;
    pthread_mutex_lock(&ft->mu);
    ft->requested = false;
    pthread_mutex_unlock(&ft->mu);
    if (start_job(ft, req ? seq : 0, n, err)) {
        if (final)
            return err->code;
        /* e.g. a full disk: the checkpoint fails, the pipeline goes on
           (what is acknowledged is in the logs) and tries again later */
        pthread_mutex_lock(&ft->mu);
        snprintf(ft->failure, sizeof(ft->failure), "checkpoint at step %lld failed: %.900s",
                 (long long)rt_steps(ft->be->rt), err->msg);
        if (req)
            ft->req_failed = seq;
        pthread_mutex_unlock(&ft->mu);
        fprintf(stderr, "sluice: %s\n", ft->failure);
        ft->last_time = pipe_now();
        *err = (Err){0};
        return 0;
    }
    if (final || forced) {
        job_wait(ft);
        collect_job(ft);
        if (final && ft->done_step == rt_steps(ft->be->rt) && !ft->failure[0])
            fprintf(stderr, "sluice: checkpoint at step %lld written to %s (%.3f s)\n",
                    (long long)ft->done_step, store_where(ft->st), ft->last_secs);
    }
    return 0;
}

bool ft_booting(Ft *ft) { return ft && ft->booting; }

void ft_bootstrap_begin(Ft *ft) { ft->replaying = true; }

int ft_bootstrap_end(Ft *ft, FtCounts n, Err *err)
{
    ft->replaying = false;
    job_wait(ft);
    if (ft->job)
        collect_job(ft);
    if (start_job(ft, 0, n, err))
        return err->code;
    job_wait(ft);
    int rc = ft->job->rc;
    if (rc)
        err_set(err, SL_EIO, "bootstrapping: the first checkpoint of the new program failed: %s",
                ft->job->err);
    collect_job(ft);
    if (!rc)
        ft->booting = false;
    return rc;
}

int ft_request(Ft *ft, int64_t *seq)
{
    *seq = 0;
    if (!ft)
        return PIPE_CONFLICT;
    pthread_mutex_lock(&ft->mu);
    if (!ft->requested)
        ft->req_seq++;
    ft->requested = true;
    *seq = ft->req_seq;
    pthread_mutex_unlock(&ft->mu);
    pthread_mutex_lock(ft->qmu);
    pthread_cond_signal(ft->wake);
    pthread_mutex_unlock(ft->qmu);
    return 0;
}

void ft_status(Ft *ft, CkptStatus *out)
{
    memset(out, 0, sizeof(*out));
    out->last_step = -1;
    if (!ft) {
        out->mode = "none";
        return;
    }
    out->enabled = true;
    out->mode = mode_name(ft->mode);
    pthread_mutex_lock(&ft->mu);
    out->requested = ft->req_seq;
    out->completed = ft->req_done;
    out->failed = ft->req_failed;
    out->last_step = ft->done_step;
    out->last_secs = ft->done_secs;
    out->last_pause_secs = ft->done_pause;
    out->last_files = ft->done_files;
    out->last_written = ft->done_written;
    out->last_reused = ft->done_reused;
    out->last_bytes = ft->done_bytes;
    out->in_progress = ft->job && !ft->job_done;
    if (out->in_progress) {
        out->job_step = ft->job->step;
        out->job_secs = pipe_now() - ft->job->started;
        out->job_pid = (int)ft->job->pid;
    }
    snprintf(out->failure, sizeof(out->failure), "%s", ft->failure);
    snprintf(out->storage_error, sizeof(out->storage_error), "%s", ft->storage_error);
    pthread_mutex_unlock(&ft->mu);
}

/* ---------------------------------------------------------------- restore */

/* Load the state of manifest m (written with W0 workers) into ft->be->rt.
   SL_EIO (err says why) when a file is corrupt or does not fit the
   program: the caller falls back. With another worker count every node's
   state is re-sharded (op.h load_split). */

/* Does manifest m (manifest_check passed) fit the program's connectors? */
static int positions_fit(Ft *ft, const cJSON *m, Err *err)
{
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(m, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(m, "outputs");
    if (cJSON_GetArraySize(ins) != ft->cs->nin || cJSON_GetArraySize(outs) != ft->cs->nout)
        return err_set(err, SL_EIO, "the checkpoint has %d inputs and %d outputs, the program "
                       "%d and %d", cJSON_GetArraySize(ins), cJSON_GetArraySize(outs),
                       ft->cs->nin, ft->cs->nout);
    return 0;
}

/* Positions and counters of manifest m. */
static int load_positions(Ft *ft, const cJSON *m, FtCounts *n, Err *err)
{
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(m, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(m, "outputs");
    if (positions_fit(ft, m, err))
        return err->code;
    for (int j = 0; j < ft->cs->nin; j++) {
        const cJSON *e = cJSON_GetArrayItem(ins, j);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "pos");
        InPos *pos = sl_calloc(1, sizeof(*pos));
        ckpt_jint_get(cJSON_GetArrayItem(v, 0), &pos->v[0]); /* manifest_check: all read */
        ckpt_jint_get(cJSON_GetArrayItem(v, 1), &pos->v[1]);
        pos->rows = ckpt_jint(e, "rows");
        pos->errors = ckpt_jint(e, "errors");
        pos->bytes = ckpt_jint(e, "bytes");
        pos->nx = cJSON_GetArraySize(v) - 2; /* manifest_check: 0..INPOS_MAX */
        for (int i = 0; i < pos->nx; i++)
            ckpt_jint_get(cJSON_GetArrayItem(v, 2 + i), &pos->x[i]);
        int rc = input_seek(ft->cs->in[j], pos, err);
        sl_free(pos);
        if (rc)
            return rc;
    }
    for (int j = 0; j < ft->cs->nout; j++) {
        const cJSON *e = cJSON_GetArrayItem(outs, j);
        output_set_counts(ft->cs->out[j], ckpt_jint(e, "records"), ckpt_jint(e, "bytes"));
        const cJSON *dj = cJSON_GetObjectItemCaseSensitive(e, "delivery");
        int64_t v[6] = {0, 0, 0, 0, 0, 0};
        for (int k = 0; k < 6 && cJSON_IsObject(dj); k++)
            ckpt_jint_get(cJSON_GetObjectItemCaseSensitive(dj, deliver_count_names[k]), &v[k]);
        if (cJSON_IsObject(dj))
            deliver_restore_counts(ft->cs->out[j], ckpt_jint(m, "step"),
                                   &(DeliverCounts){v[0], v[1], v[2], v[3], v[4], v[5]});
    }
    n->rows = ckpt_jint(m, "rows");
    n->txn_id = ckpt_jint(m, "txn_id");
    return 0;
}

/* Output offsets to truncate to: the last journal record's (before its
   step, which runs again), else the checkpoint's, else 0. */
static int truncate_outputs(Ft *ft, const cJSON *m, Err *err)
{
    const cJSON *outs = m ? cJSON_GetObjectItemCaseSensitive(m, "outputs") : NULL;
    for (int j = 0; j < ft->cs->nout; j++) {
        int64_t off = 0;
        int last = ft->nrecs - 1;
        while (last >= 0 && ft->recs[last].step < 0) /* skip records */
            last--;
        if (ft->booting)
            off = boot_out_offset(ft->boot, ft->cs, m, j);
        else if (last >= 0)
            off = ft->recs[last].out_off[j];
        else if (outs)
            off = ckpt_jint(cJSON_GetArrayItem(outs, j), "offset");
        if (off < 0)
            off = 0;
        if (ft->be->ops->out_truncate(ft->be, j, off, err)) /* on its host */
            return err->code;
    }
    return 0;
}

/* An integer member within [lo, hi]; false (why names it) otherwise. */
static bool int_field(const cJSON *o, const char *k, int64_t lo, int64_t hi, bool required,
                      const char *where, char *why, size_t whyn)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v && !required)
        return true;
    if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi || v->valuedouble != (double)(int64_t)v->valuedouble) {
        snprintf(why, whyn, "field \"%s\"%s%s is %s (an integer in [%lld, %lld] expected)", k,
                 where ? " of " : "", where ? where : "",
                 !v ? "missing" : "out of range or not an integer", (long long)lo,
                 (long long)hi);
        return false;
    }
    return true;
}

/* Check every field of manifest m that a restart uses (types, ranges,
   counts); false with why naming the field. The checksum only says the
   file is as written: a manifest is still data from disk. */
static bool manifest_check(const cJSON *m, char *why, size_t whyn)
{
    const int64_t big = (int64_t)1 << 53;
    char where[64];
    if (!cJSON_IsObject(m)) {
        snprintf(why, whyn, "not a JSON object");
        return false;
    }
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "fingerprint"))) {
        snprintf(why, whyn, "field \"fingerprint\" is missing or not a string");
        return false;
    }
    if (!int_field(m, "workers", 1, 4096, true, NULL, why, whyn) ||
        !int_field(m, "hosts", 1, 4096, false, NULL, why, whyn) ||
        !int_field(m, "nodes", 0, 1 << 20, true, NULL, why, whyn) ||
        !int_field(m, "step", 0, big, false, NULL, why, whyn) ||
        !int_field(m, "rows", 0, big, false, NULL, why, whyn) ||
        !int_field(m, "txn_id", 0, big, false, NULL, why, whyn) ||
        !int_field(m, "ingress_seq", 0, big, false, NULL, why, whyn))
        return false;
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(m, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(m, "outputs");
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(m, "state");
    if (!cJSON_IsArray(ins) || !cJSON_IsArray(outs) || !cJSON_IsArray(state)) {
        snprintf(why, whyn, "field \"%s\" is missing or not an array",
                 !cJSON_IsArray(ins) ? "inputs" : !cJSON_IsArray(outs) ? "outputs" : "state");
        return false;
    }
    int i = 0;
    const cJSON *e, *v;
    cJSON_ArrayForEach(e, ins)
    {
        snprintf(where, sizeof(where), "inputs[%d]", i++);
        const cJSON *pos = cJSON_GetObjectItemCaseSensitive(e, "pos");
        if (!cJSON_IsObject(e) || !cJSON_IsArray(pos) || cJSON_GetArraySize(pos) < 2 ||
            cJSON_GetArraySize(pos) > 2 + INPOS_MAX) {
            snprintf(why, whyn, "%s is not an object with a \"pos\" of 2 to %d integers", where,
                     2 + INPOS_MAX);
            return false;
        }
        cJSON_ArrayForEach(v, pos)
        {
            int64_t x;
            if (ckpt_jint_get(v, &x))
                continue;
            snprintf(why, whyn, "%s.pos holds something that is not a 64-bit integer", where);
            return false;
        }
        if (!int_field(e, "rows", 0, big, false, where, why, whyn) ||
            !int_field(e, "errors", 0, big, false, where, why, whyn) ||
            !int_field(e, "bytes", 0, big, false, where, why, whyn))
            return false;
    }
    i = 0;
    cJSON_ArrayForEach(e, outs)
    {
        snprintf(where, sizeof(where), "outputs[%d]", i++);
        if (!cJSON_IsObject(e) || !int_field(e, "offset", 0, big, true, where, why, whyn) ||
            !int_field(e, "records", 0, big, false, where, why, whyn) ||
            !int_field(e, "bytes", 0, big, false, where, why, whyn)) {
            if (!cJSON_IsObject(e))
                snprintf(why, whyn, "%s is not an object", where);
            return false;
        }
    }
    i = 0;
    cJSON_ArrayForEach(e, state)
    {
        snprintf(where, sizeof(where), "state[%d]", i++);
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(e, "files");
        if (!cJSON_IsObject(e) || !cJSON_IsArray(files)) {
            snprintf(why, whyn, "%s is not an object with a \"files\" array", where);
            return false;
        }
        if (!int_field(e, "node", 0, 1 << 20, true, where, why, whyn) ||
            !int_field(e, "worker", 0, 4095, true, where, why, whyn))
            return false;
        cJSON_ArrayForEach(v, files)
        {
            if (cJSON_IsString(v) && store_is_batch_name(v->valuestring))
                continue;
            snprintf(why, whyn, "%s.files holds something that is not a batch file name", where);
            return false;
        }
    }
    return true;
}

/* Refuse a checkpoint whose circuit (compiled by the build that wrote it)
   differs from c, this build's circuit of the same program: its per-node
   state has another layout. Checkpoints of builds before 2026-12-05 carry
   no "circuit" and are taken as they are. */
static int check_shape(const Circuit *c, const cJSON *m, int64_t step, const char *dir, Err *err)
{
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(m, "circuit");
    if (!cJSON_IsString(cs))
        return 0;
    char mine[32];
    snprintf(mine, sizeof(mine), "%016" PRIx64, ckpt_circuit_shape(c));
    if (!strcmp(cs->valuestring, mine))
        return 0;
    return err_set(err, SL_ECONFIG,
                   "storage %s: its checkpoint (step %lld) was written by a sluice build that "
                   "compiles this program into a different circuit (shape %s; this build's is "
                   "%s), so its state cannot be read here: run the build that wrote it, or start "
                   "this one with a new storage directory",
                   dir, (long long)step, cs->valuestring, mine);
}

/* Refuse storage written by another program or worker count. */
static int check_identity(Ft *ft, const cJSON *m, int64_t step, Err *err)
{
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "fingerprint");
    char mine[32];
    snprintf(mine, sizeof(mine), "%016" PRIx64, ft->fingerprint);
    const char *dir = store_where(ft->st);
    char theirs[32];
    snprintf(theirs, sizeof(theirs), "%016" PRIx64, ft->boot ? ft->boot->old_fp : 0);
    ft->booting = ft->boot && cJSON_IsString(fp) && strcmp(fp->valuestring, mine) &&
                  !strcmp(fp->valuestring, theirs);
    if (ft->booting) { /* the program being replaced (boot.h) */
        snprintf(ft->boot_from, sizeof(ft->boot_from), "%s", theirs);
        ft->boot_from_step = step;
        if (ckpt_jint(m, "nodes") != ft->boot->old->nnodes)
            return err_set(err, SL_ECONFIG, "storage %s: the checkpoint's circuit has %lld "
                           "nodes, its program's %d", dir, (long long)ckpt_jint(m, "nodes"),
                           ft->boot->old->nnodes);
        return check_shape(ft->boot->old, m, step, dir, err);
    }
    if (!cJSON_IsString(fp) || strcmp(fp->valuestring, mine))
        return err_set(err, SL_ECONFIG,
                       "storage %s holds a checkpoint (step %lld) of a different program "
                       "(fingerprint %s; this program's is %s): start with the program that "
                       "wrote it, or use a new storage directory (`sluice diff --storage %s "
                       "PROGRAM.sql` shows what changed)",
                       dir, (long long)step, cJSON_IsString(fp) ? fp->valuestring : "missing",
                       mine, dir);
    if (ckpt_jint(m, "workers") < 1 || ckpt_jint(m, "workers") > 4096)
        return err_set(err, SL_EIO, "storage %s: the checkpoint of step %lld names %lld workers",
                       dir, (long long)step, (long long)ckpt_jint(m, "workers"));
    if (ckpt_jint(m, "nodes") != ft->c->nnodes)
        return err_set(err, SL_ECONFIG, "storage %s: the checkpoint's circuit has %lld nodes, "
                       "this program's %d", dir, (long long)ckpt_jint(m, "nodes"), ft->c->nnodes);
    return check_shape(ft->c, m, step, dir, err);
}

/* Do the logs hold everything since the beginning (the first ingress
   segment starts at sequence number 1, and in exactly_once the first
   journal segment at step 0), so that starting from scratch and replaying
   them loses nothing? */
static bool logs_from_start(Ft *ft)
{
    if (ft->mode == FT_NONE)
        return false;
    const char *prefix[2] = {"ingress-", "journal-"};
    long long first[2] = {1, 0};
    for (int k = 0; k < (ft->mode == FT_EXACTLY_ONCE ? 2 : 1); k++) {
        char **names;
        int n;
        Err e = {0};
        if (store_list(ft->st, prefix[k], &names, &n, &e))
            return false;
        bool ok = n > 0 && strtoll(names[0] + strlen(prefix[k]), NULL, 10) <= first[k];
        store_list_free(names, n);
        if (!ok)
            return false;
    }
    return true;
}

/* Without the writer no checkpoint would ever complete (each would stay
   in progress): the pipeline does not start. */
static int writer_start(Ft *ft, Err *err)
{
    int e = pthread_create(&ft->thr, NULL, writer_main, ft);
    if (e)
        return err_set(err, SL_EIO, "cannot start the checkpoint writer thread: %s", strerror(e));
    ft->thr_started = true;
    return 0;
}

Ft *ft_new(const Circuit *c, Connectors *cs, Backend *be, const PipelineOpts *o,
           pthread_mutex_t *qmu, pthread_cond_t *wake)
{
    Ft *ft = sl_calloc(1, sizeof(*ft));
    ft->c = c;
    ft->cs = cs;
    ft->be = be;
    ft->qmu = qmu;
    ft->wake = wake;
    ft->dir = o->storage;
    ft->fingerprint = o->fingerprint;
    ft->program = o->program;
    ft->boot = o->boot;
    ft->mode = o->fault_tolerance;
    ft->interval = o->checkpoint_interval;
    ft->timeout = o->checkpoint_timeout;
    ft->last_step = -1;
    ft->done_step = -1;
    ft->kept_steps[0] = ft->kept_steps[1] = -1;
    pthread_mutex_init(&ft->mu, NULL);
    pthread_cond_init(&ft->cv, NULL);
    return ft;
}

int ft_open(Ft *ft, FtCounts *n, Err *err)
{
    const char *dir = ft->dir;
    if (store_open_url(dir, &ft->st, err))
        return err->code;
    uint64_t below = UINT64_MAX, step = 0;
    cJSON *m = NULL;
    bool remote_loaded = false;
    char *failures = NULL; /* why each checkpoint tried could not be loaded */
    int rc0;
    for (;;) {
        char *json = NULL, *skipped = NULL;
        int rc = store_manifest_before(ft->st, below, &step, &json, &skipped, err);
        if (skipped) {
            fprintf(stderr, "sluice: storage: %s", skipped);
            sl_free(skipped);
        }
        if (rc) {
            sl_free(failures);
            return rc;
        }
        if (!json)
            break;
        m = cJSON_Parse(json);
        sl_free(json);
        char why[400];
        Err le = {0};
        int rrc = 0;
        if (!manifest_check(m, why, sizeof(why))) {
            rrc = err_set(&le, SL_EIO, "storage file %s/manifest-%llu.json is malformed: %s",
                          dir, (unsigned long long)step, why);
        } else if (check_identity(ft, m, (int64_t)step, err)) {
            cJSON_Delete(m);
            sl_free(failures);
            return err->code;
        }
        int w0 = (int)ckpt_jint(m, "workers");
        /* bootstrapping: each kept operator's state goes to the new node
           computing the same stream (boot.h) */
        cJSON *mstate = cJSON_GetObjectItemCaseSensitive(m, "state");
        cJSON *bstate = !rrc && ft->booting ? boot_state(ft->boot, mstate) : NULL;
        if (bstate)
            mstate = bstate;
        if (!rrc)
            rrc = ckpt_load_state(ft->st, ft->be->rt, ft->c->nnodes, mstate, w0, &le);
        if (!rrc && !ft->booting)
            rrc = positions_fit(ft, m, &le);
        if (!rrc) { /* every other host (if any) loads its share */
            char *stext = cJSON_PrintUnformatted(mstate);
            rrc = ft->be->ops->restore(ft->be, (int64_t)step, stext ? stext : "[]", w0, &le);
            cJSON_free(stext);
            remote_loaded = true;
        }
        cJSON_Delete(bstate);
        if (!rrc) {
            int h0 = ckpt_jint(m, "hosts") > 0 ? (int)ckpt_jint(m, "hosts") : 1;
            if (w0 != ft->be->workers)
                fprintf(stderr, "sluice: storage: the checkpoint at step %llu was written by %d "
                                "worker%s; its state is re-sharded for %d\n",
                        (unsigned long long)step, w0, w0 == 1 ? "" : "s", ft->be->workers);
            else if (h0 != ft->be->hosts)
                fprintf(stderr, "sluice: storage: the checkpoint at step %llu was written by %d "
                                "host%s; its %d workers' state is spread over %d now\n",
                        (unsigned long long)step, h0, h0 == 1 ? "" : "s", w0, ft->be->hosts);
            break;
        }
        fprintf(stderr, "sluice: storage: the checkpoint at step %llu is unusable (%s); "
                        "falling back to the previous one\n",
                (unsigned long long)step, le.msg);
        char *more = sl_malloc((failures ? strlen(failures) : 0) + strlen(le.msg) + 64);
        sprintf(more, "%s\n  step %llu: %s", failures ? failures : "", (unsigned long long)step,
                le.msg);
        sl_free(failures);
        failures = more;
        cJSON_Delete(m);
        m = NULL;
        ft->be->ops->reset(ft->be); /* state may be half loaded: fresh instances */
        below = step;
    }
    if (!m && failures && logs_from_start(ft)) {
        fprintf(stderr, "sluice: storage %s: no checkpoint can be loaded, but the logs reach "
                        "back to the beginning: starting from there and replaying them (nothing "
                        "is lost)\n",
                dir);
    } else if (!m && failures) {
        /* checkpoints exist but none loads: starting from scratch would
           drop what they hold (and what was acknowledged since) */
        rc0 = err_set(err, SL_EIO,
                      "storage %s holds checkpoints, but none of them can be loaded, so the "
                      "pipeline does not start (starting from scratch would lose their state "
                      "and acknowledged input):%s\nrepair or restore the files named, or start "
                      "with a new storage directory",
                      dir, failures);
        sl_free(failures);
        return rc0;
    }
    sl_free(failures);
    if (!m && remote_loaded) { /* the other hosts start afresh too */
        Err le = {0};
        if (ft->be->ops->restore(ft->be, 0, "[]", ft->be->workers, &le))
            return err_set(err, le.code, "%s", le.msg);
    }
    int64_t cstep = m ? (int64_t)step : 0, cseq = m ? ckpt_jint(m, "ingress_seq") : 0;
    int rc = 0;
    if (m) {
        /* the state is that of its files: the next checkpoint keeps the
           files of nodes that receive no input meanwhile */
        if (ckpt_jint(m, "workers") == ft->be->workers && !ft->booting) {
            /* re-sharded or bootstrapped state has no files yet */
            char *st = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(m, "state"));
            ft->last_state = sl_strdup(st ? st : "[]");
            cJSON_free(st);
            rt_clear_changed(ft->be->rt);
        }
        rt_set_steps(ft->be->rt, cstep);
        if (ft->booting) /* (queues: in memory with an S3 storage) */
            rc = boot_check_queues(ft->boot, strncmp(dir, "s3://", 5) ? dir : NULL, err);
        if (!rc)
            rc = ft->booting ? boot_positions(ft->boot, ft->cs, m, err)
                             : load_positions(ft, m, n, err);
        n->rows = ckpt_jint(m, "rows");
        n->txn_id = ckpt_jint(m, "txn_id");
    }

    if (!rc)
        rc = ft_read_logs(ft, cstep, cseq, err);
    if (!rc && !m && below != UINT64_MAX && ft->nrecs == 0 && cstep == 0)
        fprintf(stderr, "sluice: storage: no usable checkpoint; starting from the beginning\n");
    if (!rc && ft->booting && (ft->boot_unsettled || ft->nrecs || ft->nirecs)) {
        ft->boot->unsettled = true; /* the caller has the old program settle it */
        rc = err_set(err, SL_EIO, "storage %s: bootstrapping needs a checkpoint with no journaled "
                     "step or logged input after it (the old program settles it first)", dir);
    }
    if (!rc)
        rc = truncate_outputs(ft, m, err);
    ft->ing_consumed = cseq;
    ft->kept_steps[0] = ft->kept_steps[1] = m ? cstep : -1;
    ft->kept_seqs[0] = ft->kept_seqs[1] = cseq;
    if (m) /* the restored positions (the checkpoint and its fallback: none older) */
        ft->kept_pos[1] = positions_now(ft);
    release_inputs(ft);
    ft->last_step = m ? cstep : -1;
    ft->last_time = pipe_now();
    if (m)
        fprintf(stderr, "sluice: storage %s: resuming from the checkpoint at step %lld "
                        "(%d journaled step%s to replay, %d logged HTTP input%s)\n",
                dir, (long long)cstep, ft->nrecs, ft->nrecs == 1 ? "" : "s", ft->nirecs,
                ft->nirecs == 1 ? "" : "s");
    else if (ft->nrecs || ft->nirecs)
        fprintf(stderr, "sluice: storage %s: no checkpoint yet; replaying %d journaled step%s "
                        "and %d logged HTTP input%s\n",
                dir, ft->nrecs, ft->nrecs == 1 ? "" : "s", ft->nirecs,
                ft->nirecs == 1 ? "" : "s");
    cJSON_Delete(m);
    if (!rc) { /* files of checkpoints that never completed, or pruned ones */
        Err pe = {0};
        if (store_prune(ft->st, 2, NULL, 0, &pe))
            fprintf(stderr, "sluice: storage: %s\n", pe.msg);
    }
    if (!rc) { /* the new segment follows the journaled steps replay will run */
        int64_t after = cstep;
        for (int i = 0; i < ft->nrecs; i++)
            if (ft->recs[i].step > after)
                after = ft->recs[i].step;
        rc = ft_rotate(ft, after, err);
    }
    if (!rc)
        rc = writer_start(ft, err);
    return rc;
}

void ft_close(Ft *ft)
{
    if (!ft)
        return;
    if (ft->thr_started) {
        job_wait(ft);
        pthread_mutex_lock(&ft->mu);
        ft->quit = true;
        pthread_cond_broadcast(&ft->cv);
        pthread_mutex_unlock(&ft->mu);
        pthread_join(ft->thr, NULL);
    }
    if (ft->job)
        job_free(ft->job);
    sl_free(ft->last_state);
    sl_free(ft->kept_pos[0]);
    sl_free(ft->kept_pos[1]);
    ft_logs_free(ft);
    store_close(ft->st);
    pthread_mutex_destroy(&ft->mu);
    pthread_cond_destroy(&ft->cv);
    sl_free(ft);
}

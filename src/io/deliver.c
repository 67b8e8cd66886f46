/*
 * io/deliver.c - delivery of each step's changes to the output connectors,
 * losing none.
 *
 * In: the controller's deliver_step after every step (pipeline/step.c),
 * one consolidated batch per output. Out: output_write + output_flush of
 * the transport, now or later, in step order.
 *
 * Failures come in three classes, which the transport's write path
 * decides (OutputConn.fail and .dead):
 *   transient  the destination is away (connection lost or refused, server
 *              shutting down or out of resources, serialization failure):
 *              retried in place ("retry": {"attempts", "backoff_ms",
 *              "max_backoff_ms"}), then the step's changes are queued;
 *   per record a row the destination refuses (PostgreSQL data and
 *              integrity errors, SQLSTATE classes 22 and 23): the transport
 *              writes the step row by row, the refused rows go to the dead
 *              letters and the rest commits ("on_record_error": "stop"
 *              makes it fatal instead);
 *   fatal      anything else (misconfiguration, a table without the key):
 *              the pipeline stops with the message, as before.
 *
 * The queue. Once an output has a queue every later step queues behind it
 * (a table or topic never sees a step before an earlier one), and a drain
 * thread per output writes the head (one try at a time, OutputConn.draining,
 * with a pause doubling from 0.1 s up to 5 s between them) while the
 * pipeline goes on stepping. The step
 * thread writes directly only when the queue is empty, so the connector is
 * only ever used by one thread at a time. A queued step holds its own copy
 * of the changes (batches' reference counts are not atomic).
 *
 * Durability and exactly once. With storage each queued step is appended
 * to DIR/delivery/out<j>.queue (length, XXH64, step, arrival, tuples) and
 * synced before deliver_step returns, hence before the next step's journal
 * record; the file is emptied whenever the queue is. At a restart the
 * destination says what it committed last (postgres_output: its progress
 * record; kafka_output: the topic's last step), the steps after it are
 * queued again in order, and journal replay, which re-delivers only its
 * last step, skips that step when the file already queued it
 * (exactly_once: a replayed step has the same changes; at_least_once
 * re-cuts its steps, so nothing is skipped and key upserts converge).
 * Without storage the queue is in memory: a stop with changes queued says
 * how many were not delivered.
 *
 * Dead letters: DIR/dead_letter/out<j>.jsonl (memory without storage),
 * one JSON line per refused record {"step", "time", "output", "error",
 * "record"}, synced before the step commits; a step tried again first cuts
 * the lines it wrote before, and a restart cuts lines of steps past what
 * the destination committed, so each refused record is there once.
 *
 * Backpressure: an output whose queue holds more than "max_queued_records"
 * or "max_queued_bytes" makes deliver_backpressure true; the controller
 * then reads no input until it drains.
 *
 * Scale-out: every host runs a Delivery over the outputs it writes
 * (pipeline/follow.c on the others), with its queue and dead-letter files
 * in the shared storage under the same names (out<j> is the program's
 * j-th output whichever host writes it, so a restart with other --hosts
 * finds them). On the coordinator the other hosts' outputs are proxies
 * (DOut.remote): their owners' figures arrive with every reply
 * (deliver_report_put there, deliver_report_take here), so backpressure,
 * a drain thread's fatal error, the wait at the end and /stats see them
 * as their own; dead letters kept in memory travel as they change, those
 * in files are read from the file.
 *
 * The figures (/stats, the reports between hosts, the dead letters
 * listed, the counters a checkpoint keeps) are deliver_figs.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "../base/mem.h"
#include "../base/wire.h"
#include "deliver_int.h"

#define DRAIN_MAX_WAIT 5.0

/* Checkpoints fork() the process (pipeline/snapshot.c); a drain thread
   caught inside libpq or the allocator at that moment could leave a lock
   held in the child for ever. The fork waits at this gate, which a drain
   thread holds only while it writes (one try, no sleeping). */
static pthread_mutex_t fork_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void gate_lock(void) { pthread_mutex_lock(&fork_gate); }
static void gate_unlock(void) { pthread_mutex_unlock(&fork_gate); }
static void gate_init(void) { pthread_atfork(gate_lock, gate_unlock, gate_unlock); }

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- config */

int deliver_config(OutputConn *oc, const cJSON *cfg, const char *where, Err *err)
{
    DeliverCfg *c = &oc->dcfg;
    c->attempts = 4;
    c->backoff_ms = 50;
    c->max_backoff_ms = 1000;
    c->max_queued_records = 1000000;
    c->max_queued_bytes = (int64_t)256 << 20;
    c->stop_on_record_error = false;
    if (!cfg)
        return 0;
    if (!cJSON_IsObject(cfg))
        return err_set(err, SL_ECONFIG, "%s: \"delivery\" must be an object", where);
    for (const cJSON *it = cfg->child; it; it = it->next) {
        const char *k = it->string;
        if (!strcmp(k, "retry")) {
            if (!cJSON_IsObject(it))
                return err_set(err, SL_ECONFIG, "%s: \"delivery\": \"retry\" must be an object "
                               "{\"attempts\", \"backoff_ms\", \"max_backoff_ms\"}", where);
            for (const cJSON *r = it->child; r; r = r->next) {
                int *dst = !strcmp(r->string, "attempts")         ? &c->attempts
                         : !strcmp(r->string, "backoff_ms")     ? &c->backoff_ms
                         : !strcmp(r->string, "max_backoff_ms") ? &c->max_backoff_ms
                                                                  : NULL;
                if (!dst)
                    return err_set(err, SL_ECONFIG, "%s: unknown key \"%s\" in \"delivery\": "
                                   "\"retry\" (known: attempts, backoff_ms, max_backoff_ms)",
                                   where, r->string);
                if (!cJSON_IsNumber(r) || r->valuedouble < (dst == &c->attempts ? 1 : 0) ||
                    r->valuedouble > 3600000 || r->valuedouble != floor(r->valuedouble))
                    return err_set(err, SL_ECONFIG, "%s: \"delivery\": \"retry\": \"%s\" must be "
                                   "an integer %s", where, r->string,
                                   dst == &c->attempts ? "from 1" : "of milliseconds");
                *dst = (int)r->valuedouble;
            }
        } else if (!strcmp(k, "max_queued_records") || !strcmp(k, "max_queued_bytes")) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 9e15)
                return err_set(err, SL_ECONFIG, "%s: \"delivery\": \"%s\" must be a positive "
                               "number", where, k);
            *(k[11] == 'r' ? &c->max_queued_records : &c->max_queued_bytes) =
                (int64_t)it->valuedouble;
        } else if (!strcmp(k, "on_record_error")) {
            if (!cJSON_IsString(it) || (strcmp(it->valuestring, "dead_letter") &&
                                        strcmp(it->valuestring, "stop")))
                return err_set(err, SL_ECONFIG, "%s: \"delivery\": \"on_record_error\" must be "
                               "\"dead_letter\" or \"stop\"", where);
            c->stop_on_record_error = !strcmp(it->valuestring, "stop");
        } else {
            return err_set(err, SL_ECONFIG, "%s: unknown key \"%s\" in \"delivery\" (known: "
                           "retry, max_queued_records, max_queued_bytes, on_record_error)",
                           where, k);
        }
    }
    if (c->max_backoff_ms < c->backoff_ms)
        c->max_backoff_ms = c->backoff_ms;
    return 0;
}

/* ---------------------------------------------------------------- helpers */

int64_t deliver__recs(const Batch *b)
{
    int64_t n = 0;
    for (int64_t i = 0; i < b->n; i++)
        n += b->w[i] < 0 ? -b->w[i] : b->w[i];
    return n;
}

static Batch *batch_copy(const Batch *b)
{
    BatchBuilder *bb = bb_new();
    for (int64_t i = 0; i < b->n; i++)
        bb_add(bb, batch_key(b, i), batch_klen(b, i), batch_val(b, i), batch_vlen(b, i), b->w[i]);
    return bb_finish(bb);
}

/* The last step the destination committed (-1: it cannot say). */
int64_t deliver__committed(OutputConn *oc)
{
    return oc->ops->committed ? oc->ops->committed(oc) : -1;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int open_in(const char *dir, const char *sub, const char *name, Err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    if (mkdir(path, 0700) && errno != EEXIST)
        return err_set(err, SL_EIO, "cannot create %s: %s", path, strerror(errno));
    snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(err, SL_EIO, "cannot open %s: %s", path, strerror(errno));
    return fd;
}

/* ---------------------------------------------------------------- the durable queue */

/* Record: u32 payload length, u64 XXH64(payload), payload = i64 step,
   f64 arrival, i64 tuples, then per tuple u32 klen, u32 vlen, i64 w, key,
   val. */
static int queue_append(DOut *o, const QEnt *e, Err *err)
{
    if (o->qfd < 0)
        return 0;
    Buf b = BUF_INIT;
    uint32_t hdr[3] = {0, 0, 0};
    buf_append(&b, hdr, sizeof(hdr));
    buf_append(&b, &e->step, 8);
    buf_append(&b, &e->src_wall, 8);
    buf_append(&b, &e->b->n, 8);
    for (int64_t i = 0; i < e->b->n; i++) {
        uint32_t kl = (uint32_t)batch_klen(e->b, i), vl = (uint32_t)batch_vlen(e->b, i);
        buf_append(&b, &kl, 4);
        buf_append(&b, &vl, 4);
        buf_append(&b, &e->b->w[i], 8);
        buf_append(&b, batch_key(e->b, i), kl + vl);
    }
    uint32_t len = (uint32_t)(b.n - sizeof(hdr));
    uint64_t h = XXH64(b.p + sizeof(hdr), len, 0);
    memcpy(b.p, &len, 4);
    memcpy(b.p + 4, &h, 8);
    struct stat st;
    off_t end = fstat(o->qfd, &st) ? -1 : st.st_size;
    int rc = 0;
    if (end < 0 || write_all(o->qfd, b.p, b.n) || fdatasync(o->qfd)) {
        rc = err_set(err, SL_EIO, "%s: cannot queue step %lld in the storage directory: %s",
                     o->oc->name, (long long)e->step, strerror(errno));
        if (end >= 0 && ftruncate(o->qfd, end)) {
            /* the torn record is cut at the next load */
        }
    }
    buf_free(&b);
    return rc;
}

static void push_ent(DOut *o, QEnt *e)
{
    if (o->tail)
        o->tail->next = e;
    else
        o->head = e;
    o->tail = e;
    o->qrecs += e->recs;
    o->qbytes += e->bytes;
    o->qsteps++;
    o->qlast = e->step;
}

static void free_ent(QEnt *e)
{
    batch_unref(e->b);
    sl_free(e);
}

/* Queue again what the file holds past the destination's last step. */
static int queue_load(DOut *o, Err *err)
{
    struct stat st;
    if (fstat(o->qfd, &st))
        return err_set(err, SL_EIO, "%s: cannot read its delivery queue: %s", o->oc->name,
                       strerror(errno));
    size_t n = (size_t)st.st_size;
    if (n == 0)
        return 0;
    uint8_t *p = sl_malloc(n);
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(o->qfd, p + got, n - got, (off_t)got);
        if (r <= 0) {
            sl_free(p);
            return err_set(err, SL_EIO, "%s: cannot read its delivery queue: %s", o->oc->name,
                           r < 0 ? strerror(errno) : "short read");
        }
        got += (size_t)r;
    }
    int64_t done = deliver__committed(o->oc);
    size_t pos = 0;
    int64_t steps = 0, recs = 0;
    while (pos + 12 <= n) {
        uint32_t len;
        uint64_t h;
        memcpy(&len, p + pos, 4);
        memcpy(&h, p + pos + 4, 8);
        if (len < 24 || pos + 12 + len > n || XXH64(p + pos + 12, len, 0) != h)
            break; /* a torn tail: the crash came mid-append, before the step went on */
        const uint8_t *q = p + pos + 12, *qe = q + len;
        QEnt *e = sl_calloc(1, sizeof(*e));
        int64_t nt;
        memcpy(&e->step, q, 8);
        memcpy(&e->src_wall, q + 8, 8);
        memcpy(&nt, q + 16, 8);
        q += 24;
        BatchBuilder *bb = bb_new();
        for (int64_t i = 0; i < nt && q + 16 <= qe; i++) {
            uint32_t kl, vl;
            int64_t w;
            memcpy(&kl, q, 4);
            memcpy(&vl, q + 4, 4);
            memcpy(&w, q + 8, 8);
            q += 16;
            if ((size_t)(qe - q) < (size_t)kl + vl)
                break;
            bb_add(bb, q, kl, q + kl, vl, w);
            q += kl + vl;
        }
        e->b = bb_finish(bb);
        e->recs = deliver__recs(e->b);
        e->bytes = batch_bytes(e->b);
        pos += 12 + len;
        if (e->step <= done || (o->head && e->step <= o->qlast)) {
            free_ent(e);
            continue;
        }
        push_ent(o, e);
        o->changes += e->recs;
        steps++;
        recs += e->recs;
    }
    sl_free(p);
    if (pos < n && ftruncate(o->qfd, (off_t)pos))
        return err_set(err, SL_EIO, "%s: cannot cut the torn tail of its delivery queue: %s",
                       o->oc->name, strerror(errno));
    if (steps)
        fprintf(stderr, "sluice: %s: %lld queued step%s (%lld changes) after step %lld still to "
                        "deliver; draining them first\n", o->oc->name, (long long)steps,
                steps == 1 ? "" : "s", (long long)recs, (long long)done);
    else if (ftruncate(o->qfd, 0))
        return err_set(err, SL_EIO, "%s: cannot empty its delivery queue: %s", o->oc->name,
                       strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------- dead letters */

void deliver__json_str(Buf *b, const char *s)
{
    buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, '"');
}

/* OutputConn.dead: one refused record (rec: a JSON object). */
static void on_dead(void *arg, int64_t step, const char *rec, const char *why)
{
    DOut *o = arg;
    Delivery *d = o->d;
    pthread_mutex_lock(&d->mu);
    if (step != o->dl_step) { /* the first of this step's attempt */
        o->dl_step = step;
        o->dl_start = o->dlfd >= 0 ? lseek(o->dlfd, 0, SEEK_END) : 0;
        o->dlmem_start = o->dlmem.n;
    }
    Buf b = BUF_INIT;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    buf_printf(&b, "{\"step\":%lld,\"time\":\"%s\",\"output\":", (long long)step, ts);
    deliver__json_str(&b, o->oc->name);
    buf_puts(&b, ",\"error\":");
    deliver__json_str(&b, why);
    buf_printf(&b, ",\"record\":%s}\n", rec);
    if (o->dlfd >= 0) {
        if (write_all(o->dlfd, b.p, b.n) || fdatasync(o->dlfd))
            fprintf(stderr, "sluice: %s: cannot write a dead letter: %s\n", o->oc->name,
                    strerror(errno));
    } else if (o->dlmem.n + b.n <= DEAD_MEM_MAX) {
        buf_append(&o->dlmem, b.p, b.n);
    }
    o->cur_dead++;
    pthread_mutex_unlock(&d->mu);
    fprintf(stderr, "sluice: %s: step %lld: a record refused (%s) went to the dead letters\n",
            o->oc->name, (long long)step, why);
    buf_free(&b);
}

/* Starting an attempt at step: cut the dead letters an earlier attempt at
   the same step wrote (under mu). */
static void dead_begin(DOut *o, int64_t step)
{
    o->cur_dead = 0;
    if (o->dl_step != step)
        return;
    if (o->dlfd >= 0) {
        if (ftruncate(o->dlfd, o->dl_start)) {
            /* leaves a duplicate line; the count stays right */
        }
    } else {
        o->dlmem.n = o->dlmem_start;
        if (o->dl_low > o->dlmem.n)
            o->dl_low = o->dlmem.n;
    }
}

/* At start: keep the lines of steps the destination committed. */
static int dead_load(DOut *o, Err *err)
{
    struct stat st;
    if (fstat(o->dlfd, &st) || st.st_size == 0)
        return 0;
    size_t n = (size_t)st.st_size;
    char *p = sl_malloc(n + 1);
    ssize_t r = pread(o->dlfd, p, n, 0);
    if (r != (ssize_t)n) {
        sl_free(p);
        return err_set(err, SL_EIO, "%s: cannot read its dead letters", o->oc->name);
    }
    p[n] = 0;
    int64_t done = deliver__committed(o->oc);
    size_t keep = 0;
    for (char *l = p; *l;) {
        char *nl = strchr(l, '\n');
        if (!nl)
            break;
        long long s = strncmp(l, "{\"step\":", 8) ? -1 : strtoll(l + 8, NULL, 10);
        if (s < 0 || (done >= 0 && s > done))
            break;
        keep = (size_t)(nl + 1 - p);
        l = nl + 1;
    }
    sl_free(p);
    if (keep < n && ftruncate(o->dlfd, (off_t)keep))
        return err_set(err, SL_EIO, "%s: cannot cut its dead letters: %s", o->oc->name,
                       strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------- writing */

static void lag_add(DOut *o, double src_wall, int64_t recs)
{
    if (src_wall <= 0 || recs <= 0)
        return;
    double lag = wall_now() - src_wall;
    o->lag[o->lagpos] = (float)(lag > 0 ? lag : 0);
    o->lagw[o->lagpos] = recs;
    o->lagpos = (o->lagpos + 1) % LAG_SAMPLES;
    if (o->nlag < LAG_SAMPLES)
        o->nlag++;
}

/* One write of step's changes: 0, or the error (oc->fail says its class). */
static int write_once(DOut *o, int64_t step, const Batch *b, Err *err)
{
    OutputConn *oc = o->oc;
    oc->fail = OUT_FAIL_FATAL;
    if (output_write(oc, step, b, err) || output_flush(oc, err))
        return err->code ? err->code : SL_EIO;
    return 0;
}

/* After a write of step's recs records that worked (under mu). */
static void written(DOut *o, int64_t step, int64_t recs, double src_wall)
{
    if (step > o->counted)
        o->counted = step;
    o->dead += o->cur_dead;
    o->acked += recs - o->cur_dead;
    o->cur_dead = 0;
    lag_add(o, src_wall, recs);
}

static int enqueue(DOut *o, int64_t step, const Batch *b, double src_wall, Err *err)
{
    QEnt *e = sl_calloc(1, sizeof(*e));
    e->step = step;
    e->b = batch_copy(b);
    e->recs = deliver__recs(b);
    e->bytes = batch_bytes(b);
    e->src_wall = src_wall;
    /* appended and pushed under mu: the drain thread empties the file when
       it empties the queue, never between the two */
    pthread_mutex_lock(&o->d->mu);
    if (queue_append(o, e, err)) {
        pthread_mutex_unlock(&o->d->mu);
        free_ent(e);
        return err->code;
    }
    push_ent(o, e);
    o->inflight = 0; /* (a direct write that failed: now queued) */
    pthread_cond_broadcast(&o->d->cv);
    pthread_mutex_unlock(&o->d->mu);
    return 0;
}

static void timed_wait(Delivery *d, double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double s = (double)ts.tv_nsec * 1e-9 + secs;
    ts.tv_sec += (time_t)s;
    ts.tv_nsec = (long)((s - floor(s)) * 1e9);
    pthread_cond_timedwait(&d->cv, &d->mu, &ts);
}

/* The drain thread of one output: writes the queue's head until it works,
   pausing between tries. */
static void *drain_main(void *arg)
{
    DOut *o = arg;
    Delivery *d = o->d;
    double pause = 0;
    pthread_mutex_lock(&d->mu);
    while (!d->quit) {
        if (!o->head || o->fatal) {
            pthread_cond_wait(&d->cv, &d->mu);
            continue;
        }
        if (pause > 0) {
            timed_wait(d, pause);
            if (d->quit)
                break;
        }
        QEnt *e = o->head;
        dead_begin(o, e->step);
        o->sent += e->recs;
        pthread_mutex_unlock(&d->mu);
        Err err = {0};
        gate_lock();
        o->oc->draining = true;
        int rc = write_once(o, e->step, e->b, &err);
        o->oc->draining = false;
        pthread_mutex_lock(&d->mu); /* (the gate still held: its prints, frees) */
        if (!rc) {
            written(o, e->step, e->recs, e->src_wall);
            o->head = e->next;
            if (!o->head)
                o->tail = NULL;
            o->qrecs -= e->recs;
            o->qbytes -= e->bytes;
            o->qsteps--;
            if (!o->head) {
                if (o->qfd >= 0 && ftruncate(o->qfd, 0)) {
                    /* the next load drops its steps: the destination has them */
                }
                if (o->failing)
                    fprintf(stderr, "sluice: %s: delivering again; the queue is drained "
                                    "(through step %lld)\n", o->oc->name, (long long)e->step);
                o->failing = false;
            }
            free_ent(e);
            pause = 0;
            pthread_cond_broadcast(&d->cv);
        } else if (o->oc->fail == OUT_FAIL_TRANSIENT) {
            o->retried += e->recs;
            o->failing = true;
            snprintf(o->error, sizeof(o->error), "%.250s", err.msg);
            pause = pause > 0 ? fmin(pause * 2, DRAIN_MAX_WAIT) : 0.1;
        } else {
            o->fatal = true;
            o->fatal_err = err;
            fprintf(stderr, "sluice: %s: delivering queued step %lld failed: %s\n", o->oc->name,
                    (long long)e->step, err.msg);
            pthread_cond_broadcast(&d->cv);
        }
        gate_unlock();
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ---------------------------------------------------------------- API */

Delivery *deliver_open(Connectors *cs, const DeliverOpts *opt, Err *err)
{
    pthread_once(&fork_once, gate_init);
    Delivery *d = sl_calloc(1, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->n = cs->nout;
    d->o = sl_calloc((size_t)d->n + 1, sizeof(DOut));
    d->exact = opt->exact_steps;
    d->durable = opt->dir != NULL;
    d->stop = opt->stop;
    d->stop_arg = opt->stop_arg;
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        o->d = d;
        o->oc = cs->out[j];
        o->idx = j;
        o->qfd = o->dlfd = -1;
        o->qlast = -1;
        o->dl_step = -1;
        o->remote = output_remote(o->oc);
        o->oc->deliv = o;
        if (!o->remote) {
            o->oc->dead = on_dead;
            o->oc->dead_arg = o;
        }
    }
    for (int j = 0; j < d->n && opt->dir; j++) {
        DOut *o = &d->o[j];
        if (!o->oc->ops->committed)
            continue; /* file_output never queues (its errors are fatal) */
        char name[64];
        if (o->remote) { /* the owner's dead letters, read here for GET /dead_letter (the
                            storage is shared: docs/scale-out.md) */
            snprintf(name, sizeof(name), "out%d.jsonl", j);
            if ((o->dlfd = open_in(opt->dir, "dead_letter", name, err)) < 0)
                goto fail;
            continue;
        }
        snprintf(name, sizeof(name), "out%d.queue", j);
        if ((o->qfd = open_in(opt->dir, "delivery", name, err)) < 0 || queue_load(o, err))
            goto fail;
        snprintf(name, sizeof(name), "out%d.jsonl", j);
        if ((o->dlfd = open_in(opt->dir, "dead_letter", name, err)) < 0 || dead_load(o, err))
            goto fail;
    }
    for (int j = 0; j < d->n; j++) /* the counters a checkpoint restored */
        if (!d->o[j].remote)
            deliver__restore(&d->o[j]);
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        if (!o->oc->ops->committed || o->remote)
            continue; /* (a scale-out proxy's host drains it) */
        if (pthread_create(&o->th, NULL, drain_main, o)) {
            err_set(err, SL_EIO, "%s: cannot start its delivery thread", o->oc->name);
            goto fail;
        }
        o->th_started = true;
    }
    return d;
fail:
    if (!err->code)
        err_set(err, SL_EIO, "cannot open the delivery queues");
    deliver_close(d);
    return NULL;
}

void deliver_close(Delivery *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->quit = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        if (o->th_started)
            pthread_join(o->th, NULL);
        while (o->head) {
            QEnt *e = o->head;
            o->head = e->next;
            free_ent(e);
        }
        if (o->qfd >= 0)
            close(o->qfd);
        if (o->dlfd >= 0)
            close(o->dlfd);
        buf_free(&o->dlmem);
        if (!o->remote)
            o->oc->dead = NULL;
        o->oc->deliv = NULL;
    }
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    sl_free(d->o);
    sl_free(d);
}

int deliver_step(Delivery *d, int64_t step, const Batch *const *changes, double src_wall,
                 Err *err)
{
    for (int j = 0; j < d->n; j++) {
        DOut *o = &d->o[j];
        const Batch *b = changes[j];
        if (!b)
            continue;
        int64_t recs = deliver__recs(b);
        pthread_mutex_lock(&d->mu);
        if (o->fatal) {
            *err = o->fatal_err;
            pthread_mutex_unlock(&d->mu);
            return err->code ? err->code : SL_EIO;
        }
        bool queued = o->head != NULL;
        /* replayed and queued already (perhaps drained since: the drain
           thread starts before the replay) */
        if (d->exact && step <= o->qlast) {
            pthread_mutex_unlock(&d->mu);
            continue;
        }
        o->changes += recs;
        if (!queued) {
            dead_begin(o, step);
            o->sent += recs;
            o->inflight = recs;
        }
        pthread_mutex_unlock(&d->mu);
        if (queued) {
            if (b->n && enqueue(o, step, b, src_wall, err))
                return err->code;
            continue;
        }
        Err e = {0};
        /* after a restart, a step the destination has already (it skips
           it): its dead letters are those its first write left */
        bool again = o->oc->ops->committed && step <= deliver__committed(o->oc);
        int rc = write_once(o, step, b, &e);
        pthread_mutex_lock(&d->mu);
        o->inflight = 0;
        if (!rc) {
            if (again)
                o->cur_dead = deliver__dead_between(o, step - 1, step);
            written(o, step, recs, src_wall);
            pthread_mutex_unlock(&d->mu);
            continue;
        }
        bool transient = o->oc->fail == OUT_FAIL_TRANSIENT && o->oc->ops->committed;
        if (transient) {
            o->retried += recs;
            o->failing = true;
            o->cur_dead = 0;
            o->inflight = recs; /* until queued */
            snprintf(o->error, sizeof(o->error), "%.250s", e.msg);
        }
        pthread_mutex_unlock(&d->mu);
        if (!transient) {
            *err = e;
            return e.code;
        }
        fprintf(stderr, "sluice: %s: step %lld not delivered (%s); queued%s, retrying in the "
                        "background while the pipeline goes on\n", o->oc->name,
                (long long)step, e.msg, d->durable ? " in the storage directory" :
                " in memory (not in a local storage directory: lost if the process ends)");
        int rc2 = enqueue(o, step, b, src_wall, err);
        pthread_mutex_lock(&d->mu);
        o->inflight = 0;
        pthread_mutex_unlock(&d->mu);
        if (rc2)
            return err->code;
    }
    return 0;
}

int deliver_check(Delivery *d, Err *err)
{
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    for (int j = 0; j < d->n && !rc; j++)
        if (d->o[j].fatal) {
            *err = d->o[j].fatal_err;
            rc = err->code ? err->code : SL_EIO;
        }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

bool deliver_backpressure(Delivery *d, char *name, size_t n)
{
    bool bp = false;
    pthread_mutex_lock(&d->mu);
    for (int j = 0; j < d->n && !bp; j++) {
        DOut *o = &d->o[j];
        const DeliverCfg *c = &o->oc->dcfg;
        if (o->remote ? o->rs.backpressure
                      : o->qrecs > c->max_queued_records ||
                            (int64_t)o->qbytes > c->max_queued_bytes) {
            bp = true;
            if (name)
                snprintf(name, n, "%s", o->oc->name);
        }
    }
    pthread_mutex_unlock(&d->mu);
    return bp;
}

int64_t deliver_pending(Delivery *d)
{
    int64_t n = 0;
    pthread_mutex_lock(&d->mu);
    for (int j = 0; j < d->n; j++)
        n += d->o[j].remote ? d->o[j].rs.pending : d->o[j].qrecs;
    pthread_mutex_unlock(&d->mu);
    return n;
}

int deliver_finish(Delivery *d, bool (*giveup)(void *arg), void *arg, Err *err)
{
    bool said = false;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        int64_t left = 0, steps = 0;
        DOut *first = NULL;
        for (int j = 0; j < d->n; j++) {
            DOut *o = &d->o[j];
            if (o->fatal) {
                *err = o->fatal_err;
                pthread_mutex_unlock(&d->mu);
                return err->code ? err->code : SL_EIO;
            }
            int64_t recs = o->remote ? o->rs.pending : o->qrecs;
            int64_t qs = o->remote ? o->rs.queued_steps : o->qsteps;
            left += recs;
            steps += qs;
            if ((o->remote ? recs > 0 || qs > 0 : o->head != NULL) && !first)
                first = o;
        }
        if (!first)
            break;
        const char *why = first->remote ? first->rs.error : first->error;
        char name[sizeof(first->oc->name) + sizeof(first->host) + 8];
        snprintf(name, sizeof(name), "%s%s%s%s", first->remote ? "host " : "", first->host,
                 first->remote ? ": " : "", first->oc->name);
        char error[sizeof(first->error)];
        snprintf(error, sizeof(error), "%s", why[0] ? why : "still failing");
        /* giveup may ask the other hosts how their queues are (scale-out:
           their replies land in deliver_report_take, which takes mu) */
        pthread_mutex_unlock(&d->mu);
        bool give = giveup && giveup(arg);
        pthread_mutex_lock(&d->mu);
        if (give) {
            Err e = {0};
            err_set(&e, SL_EIO, "%s: stopped while waiting for the destination (%s): %lld "
                    "change%s of %lld step%s not delivered%s", name, error, (long long)left,
                    left == 1 ? "" : "s", (long long)steps, steps == 1 ? "" : "s",
                    d->durable ? "; they stay queued in the storage directory and a restart "
                                 "delivers them"
                               : " (no local storage: they are lost)");
            pthread_mutex_unlock(&d->mu);
            if (d->durable) { /* nothing is lost: not an error */
                fprintf(stderr, "sluice: %s\n", e.msg);
                return 0;
            }
            *err = e;
            return e.code;
        }
        if (!said)
            fprintf(stderr, "sluice: waiting for %lld queued change%s to be delivered "
                            "(a stop gives up the wait)\n", (long long)left,
                    left == 1 ? "" : "s");
        said = true;
        timed_wait(d, 0.05);
    }
    pthread_mutex_unlock(&d->mu);
    return 0;
}

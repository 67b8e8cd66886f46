/*
 * pipeline/step.c - one step of the controller, and what it shows. Input
 * is gathered into the pending input (resolve.c): every input connector's
 * next rows, read through the step backend (backend.h), and the HTTP
 * queue's batches (inbox.c); with storage the journal records it
 * (journal.c) before the step runs on the backend; a step that a runtime
 * error rolled back runs again without the input records that fail
 * (reject.c); then each view's consolidated changes go to its output
 * connectors (a quiet step, replayed with its outputs already written,
 * only counts them: output_account) and to the after-step hook (HTTP
 * egress), statistics are published (stats.c) and progress is reported.
 * The controller loop (pipeline.c) and the replay of journaled steps
 * (replay.c) call it.
 *
 * Also the views' changes and contents as the server and --dump read
 * them, and the stop flag that SIGINT/SIGTERM set.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../storage/storage.h"
#include "boot.h"
#include "journal.h"
#include "pipeline_int.h"

#define EVENT_SAMPLES 64

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

void pipe_catch_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL); /* a scale-out launcher's stop */
}

bool pipe_signalled(void) { return stop_signal != 0; }

const char *pipe_human(double v, char *b, size_t n)
{
    if (v >= 1e9)
        snprintf(b, n, "%.2fG", v / 1e9);
    else if (v >= 1e6)
        snprintf(b, n, "%.2fM", v / 1e6);
    else if (v >= 1e3)
        snprintf(b, n, "%.1fK", v / 1e3);
    else
        snprintf(b, n, "%.0f", v);
    return b;
}

static int64_t wall_usecs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const Circuit *pipeline_circuit(const Pipeline *p) { return p->c; }
int pipeline_workers(const Pipeline *p) { return p->W; }
int64_t pipeline_step(const Pipeline *p) { return rt_steps(p->be->rt); }


/* The journal's stop predicate (arg: the pipeline). */
static bool stop_requested(void *arg) { return pipeline_stop_requested(arg); }

bool pipeline_stop_requested(Pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    bool s = p->stop_req || stop_signal;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* ---------------------------------------------------------------- progress */

static void progress(Pipeline *p, bool final)
{
    double t = pipe_now(), el = t - p->t0;
    char b1[32], b2[32];
    if (p->o.progress == 0)
        return;
    if (!final && t - p->last_report < (p->tty ? 1.0 : 5.0))
        return;
    p->last_report = t;
    Buf line = BUF_INIT;
    for (int i = 0; i < p->c->nrels; i++) {
        const Relation *r = &p->c->rels[i];
        if (!r->is_table)
            continue;
        int64_t n = 0;
        bool any = false;
        for (int j = 0; j < p->cs.nin; j++)
            if (input_rel(p->cs.in[j]) == i && !input_is_http(p->cs.in[j])) {
                n += input_rows(p->cs.in[j]);
                any = true;
            }
        pthread_mutex_lock(&p->mu);
        int64_t h = p->fig.slots[p->cs.nin + i].records;
        pthread_mutex_unlock(&p->mu);
        n += h;
        if (any || h)
            buf_printf(&line, "%s: %s rows | ", r->name, pipe_human((double)n, b1, sizeof(b1)));
    }
    buf_printf(&line, "%s rows/s | step %lld | mem %.0f MB | %.1f s",
               pipe_human(el > 0 ? (double)(p->rows - p->rows0) / el : 0, b2, sizeof(b2)),
               (long long)rt_steps(p->be->rt), (double)mem_rss_bytes() / 1048576.0, el);
    if (p->tty)
        fprintf(stderr, "\r\033[K%s", buf_cstr(&line));
    else
        fprintf(stderr, "sluice: progress: %s\n", buf_cstr(&line));
    fflush(stderr);
    buf_free(&line);
}

/* ---------------------------------------------------------------- changes */

const Batch *pipeline_changes(Pipeline *p, int rel)
{
    if (p->chg_done[rel])
        return p->chg[rel];
    p->chg_done[rel] = true;
    const Relation *r = &p->c->rels[rel];
    if (r->sink < 0 || !op_sink_changes(rt_op(p->be->rt, 0, r->sink)))
        return NULL;
    BatchBuilder *bb = bb_new();
    p->be->ops->changes(p->be, rel, bb); /* every host's */
    p->chg[rel] = bb_finish(bb);
    return p->chg[rel];
}

static void release_changes(Pipeline *p)
{
    for (int i = 0; i < p->c->nrels; i++) {
        if (p->chg[i])
            batch_unref(p->chg[i]);
        p->chg[i] = NULL;
        p->chg_done[i] = false;
    }
}

void pipeline_track_changes(Pipeline *p, int rel, bool on)
{
    const Relation *r = &p->c->rels[rel];
    if (r->sink < 0)
        return;
    p->watch[rel] += on ? 1 : -1;
    p->be->ops->watch(p->be, rel, on);
}

bool pipeline_contents_raw(Pipeline *p, int rel, Buf *out)
{
    const Relation *r = &p->c->rels[rel];
    if (!r->materialized || r->sink < 0)
        return false;
    p->be->ops->contents(p->be, rel, out);
    return true;
}

/* When pd's input arrived, on average over its rows (wall-clock seconds):
   the origin of the outputs' end-to-end lag. */
static double src_wall_of(const Pending *pd)
{
    double now = pipe_now(), wall = (double)wall_usecs() * 1e-6, sum = 0;
    int64_t rows = 0;
    for (const Unit *u = pd->units; u; u = u->next) {
        sum += (now - u->arrival) * (double)u->rows;
        rows += u->rows;
    }
    return rows ? wall - sum / (double)rows : wall;
}

/* Deliver this step's changes to every output connector (io/deliver.c:
   retries, the queue, dead letters). */
static int deliver(Pipeline *p, Err *err)
{
    const Batch **chg = sl_calloc((size_t)p->cs.nout + 1, sizeof(*chg));
    for (int j = 0; j < p->cs.nout; j++) /* scale-out: a remote output's host wrote it */
        if (!output_remote(p->cs.out[j])) {
            const Batch *snap = boot_snapshot(p->o.boot, j); /* bootstrapping (boot.h) */
            chg[j] = snap ? snap : pipeline_changes(p, output_rel(p->cs.out[j]));
        }
    int rc = deliver_step(p->dl, rt_steps(p->be->rt), chg, p->be->src_wall, err);
    sl_free(chg);
    return rc;
}

/* A replayed step whose outputs are already written (replay.c): count
   its changes into every local output's counters as the write would have
   (output_account), so that records and bytes come out as an
   uninterrupted run's, and as delivered (deliver_account). A remote
   output's host counts its own (follow.c). */
static void account(Pipeline *p)
{
    const Batch **chg = sl_calloc((size_t)p->cs.nout + 1, sizeof(*chg));
    for (int j = 0; j < p->cs.nout; j++) {
        OutputConn *oc = p->cs.out[j];
        if (!output_remote(oc)) {
            chg[j] = pipeline_changes(p, output_rel(oc));
            output_account(oc, rt_steps(p->be->rt), chg[j]);
        }
    }
    deliver_account(p->dl, rt_steps(p->be->rt), chg);
    sl_free(chg);
}

/* ---------------------------------------------------------------- input */

static void add_unit(Pipeline *p, Pending *pd, int slot, double arrival, int rel, Piece *list,
                     int64_t rows)
{
    Unit *u = arena_zalloc(pd->a, sizeof(*u));
    u->slot = slot;
    u->rel = rel;
    u->arrival = arrival;
    u->rows = rows;
    int ec = p->fig.slots[slot].event_col; /* constant after start-up */
    if (ec >= 0 && rows > 0 && !(list && !list->chunk && !list->fill)) { /* (not read here) */
        u->nsamp = sample_events(p, rel, list, rows, ec, pd->a, &u->ev, EVENT_SAMPLES);
        u->samp_w = u->nsamp ? (double)rows / u->nsamp : 0;
    } else if (ec == EVENT_SOURCE && rows > 0 && slot < p->cs.nin) {
        u->ev = arena_alloc(pd->a, EVENT_SAMPLES * sizeof(int64_t));
        u->nsamp = input_source_times(p->cs.in[slot], u->ev, EVENT_SAMPLES);
        u->samp_w = u->nsamp ? (double)rows / u->nsamp : 0;
    }
    if (pd->units_tail)
        pd->units_tail->next = u;
    else
        pd->units = u;
    pd->units_tail = u;
    pd->slot_rows[slot] += rows;
}

/*
 * Read the connectors (when read_conns) and take HTTP batches (up to
 * http_max rows, all when < 0, none when 0) into pd. Returns the rows
 * gathered, or -1 on an I/O error.
 */
int64_t pipe_gather(Pipeline *p, Pending *pd, bool read_conns, int64_t http_max, Err *err)
{
    mem_set_doing("reading the input of step %lld", rt_steps(p->be->rt) + 1, 0);
    int64_t produced = 0;
    if (read_conns) {
        int active = 0;
        for (int j = 0; j < p->cs.nin; j++)
            active += !input_done(p->cs.in[j]);
        for (int j = 0; j < p->cs.nin; j++) {
            InputConn *ic = p->cs.in[j];
            if (input_done(ic))
                continue;
            int64_t share = p->step_rows / (active ? active : 1);
            Piece *list = NULL;
            uint64_t hash = 0;
            int64_t n = pipe_input_next(p, j, share > 0 ? share : 1, pd->a, &list, &hash, err);
            if (n < 0)
                return -1;
            if (n == 0)
                continue;
            pipe_add_input(p, pd, j, list, n, hash);
            produced += n;
        }
    }
    if (http_max == 0)
        return produced;
    InBatch *b = inbox_take(p, http_max);
    while (b) {
        InBatch *next = b->next;
        b->next = NULL;
        produced += pipe_add_batch(p, pd, b);
        b = next;
    }
    return produced;
}

int64_t pipe_input_next(Pipeline *p, int conn, int64_t max, Arena *a, Piece **list,
                        uint64_t *hash, Err *err)
{
    /* the rows' hash only when the journal checks it */
    return p->be->ops->read(p->be, conn, max, a, list, p->ft ? hash : NULL, err);
}

void pipe_add_input(Pipeline *p, Pending *pd, int conn, Piece *list, int64_t rows,
                    uint64_t hash)
{
    InputConn *ic = p->cs.in[conn];
    add_unit(p, pd, conn, pipe_now(), input_rel(ic), list, rows);
    pend_append(p, pd, input_rel(ic), list, rows);
    pd->conn_rows[conn] += rows;
    pd->conn_hash[conn] += hash; /* a sum: ft_hash_pieces */
}

int64_t pipe_add_batch(Pipeline *p, Pending *pd, InBatch *b)
{
    resolve_batch(p, pd, b);
    int64_t rows = inbatch_count(b);
    add_unit(p, pd, p->cs.nin + b->rel, b->arrival, b->rel, b->head, rows);
    pend_append(p, pd, b->rel, b->head, rows);
    if (pd->batches_tail)
        pd->batches_tail->next = b;
    else
        pd->batches = b;
    pd->batches_tail = b;
    if (b->token > pd->max_token)
        pd->max_token = b->token;
    if (b->seq > pd->max_seq)
        pd->max_seq = b->seq;
    return rows;
}

void pipe_tokens_done(Pipeline *p, int64_t tok)
{
    pthread_mutex_lock(&p->mu);
    if (tok > p->q.done_token)
        p->q.done_token = tok;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
}

/* One step over pd; pd is reset afterwards. With storage, the journal
   holds the step's inputs before it runs (before its outputs can leave). */
int pipe_run_step(Pipeline *p, Pending *pd, Err *err) { return pipe_run_step_ex(p, pd, false, err); }

int pipe_run_step_ex(Pipeline *p, Pending *pd, bool stall_ok, Err *err)
{
    p->step_t0 = pipe_now(); /* the step's timing (stats_publish_step) */
    p->step_cpu0 = pipe_cpu();
    mem_set_doing("journaling and splitting the input of step %lld", rt_steps(p->be->rt) + 1, 0);
    if (p->ft && ft_journal_step(p->ft, pd, stop_requested, p, err))
        return err->code;
    pend_set_input(p, pd);
    p->be->src_wall = src_wall_of(pd); /* (other hosts deliver their outputs in the step) */
    pmem_before_step(p, pd->rows);
    int rc = p->be->ops->step(p->be, p->quiet_outputs, err);
    /* a worker passed what the memory limit leaves for the step: undone;
       again once after spilling all that can spill, else the input waits
       and the inputs pause (memory.c; only in the controller's loop) */
    while (rc && p->be->ops->rolled_back(p->be) && pmem_step_failed(p, stall_ok)) {
        err_clear(err);
        pend_set_input(p, pd);
        rc = p->be->ops->step(p->be, p->quiet_outputs, err);
    }
    if (rc && pmem_step_stuck(p)) {
        err_clear(err);
        return 0; /* pd stays pending: the loop waits (pmem_hold) */
    }
    /* a runtime error over the input: the step undid itself; run it again
       without the rows that fail (reject.c) */
    while (rc && p->be->ops->rolled_back(p->be) && p->o.on_error == ONERR_REJECT &&
           rt_step_memory_node(p->be->rt) == -1) { /* (no record is at fault for memory) */
        if (reject_isolate(p, pd) == 0 && reject_by_steps(p, pd, err) == 0) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            err_clear(err); /* the first error wins: this one replaces it */
            err_set(err, SL_ERUNTIME, "%.300s (no single input record fails alone: not rejected)",
                    msg);
            break;
        }
        err_clear(err);
        pend_set_input(p, pd);
        rc = p->be->ops->step(p->be, p->quiet_outputs, err);
    }
    if (rc)
        return err->code;
    double t_end = pipe_now();
    p->step_view_cpu = pipe_cpu() - p->step_cpu0;
    p->rows += pd->rows;
    ft_step_done(p->ft, pd);
    mem_set_doing("delivering the outputs of step %lld", rt_steps(p->be->rt), 0);
    if (p->quiet_outputs)
        account(p);
    else
        rc = deliver(p, err);
    if (!rc && p->hooks.after_step)
        p->hooks.after_step(p->hooks.arg, p, rt_steps(p->be->rt));
    for (int i = 0; !rc && i < p->nmore_hooks; i++)
        p->more_hooks[i].after_step(p->more_hooks[i].arg, p, rt_steps(p->be->rt));
    if (!rc)
        store_crash_at_count("after-step", rt_steps(p->be->rt)); /* tests: storage.h */
    release_changes(p);
    if (rc)
        return rc;
    /* the step's figures at once, before a push it consumed returns */
    stats_publish_step(p, pd, t_end, wall_usecs());
    int64_t tok = pd->max_token;
    pend_reset(p, pd);
    /* the traces' merges the step deferred, now that its views changed
       (zset/trace.h) */
    mem_set_doing("merging the traces after step %lld", rt_steps(p->be->rt), 0);
    trace_tidy_all(rt_workers(p->be->rt));
    /* A push that waited (wait=true) returns once the step's merges and
       memory work are done too: /stats then shows the state as merged and
       spilled after the step, not as it was before (a client that waited
       sees the step whole; the step's own time to its views' change is
       in /stats last_step). */
    if (pmem_bounded(p)) {
        pmem_after_step(p, err);
        stats_publish(p); /* the state's size after spilling */
    }
    pipe_tokens_done(p, tok);
    progress(p, false);
    return 0;
}

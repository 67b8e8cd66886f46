/*
 * pipeline/pipeline.c - the controller. Each iteration: run what other
 * threads asked for between steps (pipeline_call, transaction commands),
 * then gather input - every input connector's next rows (at most
 * step_rows in all) and the HTTP queue's batches - into the pending input
 * (resolve.c), run one step over it on the step backend (step.c, which
 * also delivers each view's consolidated changes to its output connectors
 * and to the after-step hook, publishes statistics, reports progress).
 *
 * States: running; paused (connectors are not read, the HTTP queue only
 * fills, no step runs); stopping (SIGINT/SIGTERM or PC_STOP: no new HTTP
 * input, the queue is drained in final steps, outputs flushed); stopped.
 *
 * Transactions (txn.c): while one is open, gathered input accumulates in
 * the pending input and no step runs; its commit is one step. A connector
 * with "transaction": "backfill" opens one at start-up that commits
 * itself once every such connector has reached its end.
 *
 * With until_done the loop ends after the step in which the last input
 * connector ended (HTTP ingress does not end; an open API transaction
 * keeps the pipeline up); otherwise it idles until stopped.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../sql/sql.h"
#include "../storage/storage.h"
#include "../zset/key.h"
#include "boot.h"
#include "pipeline_int.h"

/* ---------------------------------------------------------------- life cycle */

/* The table rejected records go to: PIPELINE_ERRORS_TABLE when it has the
   columns of PIPELINE_ERRORS_DDL, else -1. */
static int errors_table(const Circuit *c)
{
    static const TypeKind want[] = {TK_BIGINT, TK_VARCHAR, TK_VARCHAR, TK_VARCHAR};
    int rel = circuit_find_rel(c, PIPELINE_ERRORS_TABLE);
    if (rel < 0 || !c->rels[rel].is_table || c->rels[rel].ncol != 4 || c->rels[rel].npk)
        return -1;
    for (int j = 0; j < 4; j++) {
        SqlType t = c->rels[rel].types[j];
        if (t.kind != want[j] || (j > 0 && t.len != VARCHAR_UNBOUNDED))
            return -1;
    }
    return rel;
}

/* New destinations of kept materialized views (BootPlan.out_snap) get the
   view's contents (every host's) in the first bootstrap step: snap[j] for
   the backend (another host writes it), b->snapb[j] for deliver (here). */
static Buf *boot_snapshots(Pipeline *p, BootPlan *b)
{
    Buf *snap = sl_calloc((size_t)p->cs.nout + 1, sizeof(Buf));
    if (!b->nsnap || b->nout != p->cs.nout)
        return snap;
    b->snapb = sl_calloc((size_t)b->nout + 1, sizeof(Batch *));
    for (int j = 0; j < b->nout; j++) {
        if (!b->out_snap[j])
            continue;
        p->be->ops->contents(p->be, output_rel(p->cs.out[j]), &snap[j]);
        if (output_remote(p->cs.out[j]))
            continue;
        BatchBuilder *bb = bb_new();
        size_t pos = 0;
        XRec x;
        while (xrec_next(&snap[j], &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
        b->snapb[j] = bb_finish(bb);
    }
    return snap;
}

static void boot_snapshots_done(Pipeline *p, BootPlan *b, Buf *snap)
{
    for (int j = 0; snap && j < p->cs.nout; j++)
        buf_free(&snap[j]);
    sl_free(snap);
    for (int j = 0; b->snapb && j < b->nout; j++)
        if (b->snapb[j])
            batch_unref(b->snapb[j]);
    sl_free(b->snapb);
    b->snapb = NULL;
}

/* Bootstrapping (boot.h): ft_open restored the old program's checkpoint
   into the kept nodes (on every host). Bootstrap steps run only the new
   part of the circuit, on every host (the backend's boot): the first is
   fed the stored streams it reads, and each reads the next rows of the
   tables read again for it (their live connectors gone back to their
   start, on their own hosts, or a second instance of them here), from the
   beginning up to where the checkpoint left the live ones; new views'
   outputs, and new destinations of kept materialized views, get their
   contents. Then the new program's first checkpoint, before any live
   input. */
static int bootstrap(Pipeline *p, Err *err)
{
    BootPlan *b = p->o.boot;
    double t0 = pipe_now();
    Connectors bcs;
    int rc = boot_backfill_open(b, &p->cs, &bcs, err);
    int64_t reread = 0, steps = 0, rows0 = p->rows;
    Buf *snap = boot_snapshots(p, b);
    ft_bootstrap_begin(p->ft);
    /* tables read again through their live connectors, each on its host:
       back to the start, up to the checkpoint's rows, then back there */
    bool *again = sl_calloc((size_t)p->cs.nin + 1, sizeof(bool));
    for (int j = 0; j < p->cs.nin && !rc; j++) {
        InputConn *ic = p->cs.in[j];
        again[j] = b->rewind[input_rel(ic)] && b->target && b->target[j] > 0;
        if (again[j] && !(rc = input_rewind(ic, err))) {
            input_set_replay(ic, true); /* no rate limit */
            if (!strcmp(input_transport(ic), "kafka_input")) /* each partition up to its */
                input_replay_to(ic, &b->tpos[j]);             /* offset in the checkpoint */
        }
    }
    for (bool first = true; !rc; first = false) {
        int64_t got = 0;
        bool more = false;
        for (int j = 0; j < p->cs.nin && !rc; j++) {
            InputConn *ic = p->cs.in[j];
            int64_t left = again[j] ? b->target[j] - input_rows(ic) : 0;
            if (left <= 0 || input_done(ic) || got >= p->step_rows)
                continue;
            Piece *list = NULL;
            int64_t want = left < p->step_rows - got ? left : p->step_rows - got;
            int64_t n = pipe_input_next(p, j, want, p->pend.a, &list, NULL, err);
            if (n < 0) {
                rc = err->code;
                break;
            }
            pend_append(p, &p->pend, input_rel(ic), list, n);
            got += n;
            more |= n > 0;
        }
        for (int j = 0; j < bcs.nin && !rc; j++) {
            InputConn *ic = bcs.in[j];
            int64_t left = boot_backfill_target(b, &p->cs, ic) - input_rows(ic);
            if (left <= 0 || input_done(ic) || got >= p->step_rows)
                continue;
            Piece *list = NULL;
            int64_t want = left < p->step_rows - got ? left : p->step_rows - got;
            int64_t n = input_next(ic, want, p->pend.a, 1, &list, err);
            if (n < 0) {
                rc = err->code;
                break;
            }
            pend_append(p, &p->pend, input_rel(ic), list, n);
            got += n;
            more |= n > 0;
        }
        if (rc || (!first && !more))
            break;
        reread += got;
        steps++;
        rc = p->be->ops->boot(p->be, b, first, first ? snap : NULL, err);
        if (!rc)
            rc = pipe_run_step(p, &p->pend, err);
        boot_snapshots_done(p, b, first ? snap : NULL);
        snap = NULL;
    }
    if (snap)
        boot_snapshots_done(p, b, snap);
    for (int j = 0; j < p->cs.nin && !rc; j++)
        if (again[j]) { /* where the checkpoint left it (its host seeks at its next read) */
            InputConn *ic = p->cs.in[j];
            if (p->o.hosts > 1)
                fprintf(stderr, "sluice: bootstrapping: %s read again on host %d (%lld rows)\n",
                        input_name(ic), input_owner(ic), (long long)input_rows(ic));
            input_set_replay(p->cs.in[j], false);
            rc = input_seek(p->cs.in[j], &b->tpos[j], err);
        }
    sl_free(again);
    connectors_close(&bcs);
    p->rows = rows0; /* rows read again are not new input */
    double t1 = pipe_now();
    FtCounts n = {p->rows, p->tx.id};
    if (!rc)
        rc = ft_bootstrap_end(p->ft, n, err);
    if (!rc)
        fprintf(stderr, "sluice: bootstrapping: %d new node%s computed from stored state%s in "
                        "%lld step%s (%.3f s; %lld rows read again), checkpoint of the new "
                        "program written (%.3f s)\n",
                b->nnew, b->nnew == 1 ? "" : "s", reread ? " and tables read again" : "",
                (long long)steps, steps == 1 ? "" : "s", t1 - t0, (long long)reread,
                pipe_now() - t1);
    return rc;
}

/* A sink waiting for its server (io's output_set_stop) gives up on a stop. */
static bool stop_hook(void *arg) { return pipeline_stop_requested(arg); }

Pipeline *pipeline_new(const Circuit *c, const PipelineOpts *o, Err *err)
{
    Pipeline *p = sl_calloc(1, sizeof(*p));
    p->c = c;
    p->o = *o;
    p->W = o->workers > 0 ? o->workers : 1;
    p->err_rel = errors_table(c);
    pipe_clock_init(p);
    pmem_start(p, o);
    p->be = backend_open(c, o, &p->cs, err); /* opens the connectors too */
    if (!p->be) {
        pmem_free(p);
        sl_free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->room, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int j = 0; j < p->cs.nout; j++)
        output_set_stop(p->cs.out[j], stop_hook, p);
    p->q.limit = o->queue_records > 0 ? o->queue_records : 1000000;
    p->step_rows = o->step_rows > 0 ? o->step_rows : (int64_t)p->W * 1048576;
    pmem_start_steps(p);
    p->state = o->start_paused ? PS_PAUSED : PS_RUNNING;
    p->watch = sl_calloc((size_t)c->nrels + 1, sizeof(int));
    p->chg = sl_calloc((size_t)c->nrels + 1, sizeof(Batch *));
    p->chg_done = sl_calloc((size_t)c->nrels + 1, sizeof(bool));
    p->scratch = arena_new(1 << 16);
    p->tty = o->progress == 1 ? isatty(2) : (o->progress < 0 && isatty(2));
    p->t0 = p->last_report = pipe_now();
    stats_init(p);
    pend_init(p, &p->pend);
    int rc = 0;
    if (o->storage) {
        p->ft = ft_new(c, &p->cs, p->be, o, &p->mu, &p->wake);
        FtCounts n = {0, 0};
        rc = ft_open(p->ft, &n, err); /* may restore a checkpoint into p->be->rt */
        p->rows = n.rows;
        p->tx.id = n.txn_id;
        if (!rc)
            rc = ft_requeue(p, err);
    } else {
        for (int j = 0; j < p->cs.nout && !rc; j++)
            rc = p->be->ops->out_truncate(p->be, j, 0, err); /* on its host */
    }
    if (!rc) { /* after the outputs are positioned: what is still queued */
        bool s3 = o->storage && !strncmp(o->storage, "s3://", 5);
        DeliverOpts dopt = {o->storage && !s3 ? o->storage : NULL,
                            o->storage && o->fault_tolerance == FT_EXACTLY_ONCE, stop_hook, p};
        p->dl = deliver_open(&p->cs, &dopt, err);
        rc = p->dl ? 0 : err->code;
    }
    if (!rc && ft_booting(p->ft) && o->boot_await) {
        p->boot = BOOT_AWAITING; /* pipeline_run waits for pipeline_approve */
        p->state = PS_PAUSED;
    } else if (!rc && ft_booting(p->ft)) {
        rc = bootstrap(p, err);
        p->boot = BOOT_DONE;
    }
    if (rc) {
        if (o->boot && o->boot->unsettled) /* the old program settles, then again */
            p->be->ops->detach(p->be);
        pipeline_free(p);
        return NULL;
    }
    stats_publish(p);
    return p;
}

void pipeline_free(Pipeline *p)
{
    if (!p)
        return;
    inbox_clear(p);
    p->be->ops->stop(p->be);
    deliver_close(p->dl);
    ft_close(p->ft);
    pend_free(p, &p->pend);
    for (int i = 0; i < p->c->nrels; i++)
        if (p->chg[i])
            batch_unref(p->chg[i]);
    p->be->ops->free(p->be);
    pmem_free(p); /* after the traces: their spilled files go first */
    connectors_close(&p->cs);
    stats_free(p);
    sl_free(p->watch);
    sl_free(p->chg);
    sl_free(p->chg_done);
    buf_free(&p->kb);
    buf_free(&p->vb);
    arena_free(p->scratch);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->done);
    sl_free(p);
}

void pipeline_set_hooks(Pipeline *p, const PipelineHooks *h) { p->hooks = *h; }

void pipeline_add_hooks(Pipeline *p, const PipelineHooks *h)
{
    if (p->nmore_hooks == (int)(sizeof(p->more_hooks) / sizeof(p->more_hooks[0])))
        sl_panic("pipeline_add_hooks: more than %d hooks", p->nmore_hooks);
    p->more_hooks[p->nmore_hooks++] = *h;
}

int pipeline_checkpoint(Pipeline *p, int64_t *seq) { return ft_request(p->ft, seq); }

void pipeline_checkpoint_status(Pipeline *p, CkptStatus *out) { ft_status(p->ft, out); }

/* A checkpoint waits while a transaction is open or input is pending. */
static bool ft_busy(Pipeline *p) { return p->tx.state != TX_NONE || p->pend.rows > 0; }

/* What a checkpoint's manifest records of the controller. */
static FtCounts ft_counts(Pipeline *p) { return (FtCounts){p->rows, p->tx.id}; }






/* Run pending calls and commands (between steps). */
static void service(Pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->calls) {
            Call *cl = p->calls;
            p->calls = cl->next;
            pthread_mutex_unlock(&p->mu);
            cl->fn(p, cl->arg);
            pthread_mutex_lock(&p->mu);
            cl->done = true;
            pthread_cond_broadcast(&p->done);
            continue;
        }
        if (p->cmds) {
            Cmd *cmd = p->cmds;
            p->cmds = cmd->next;
            pthread_mutex_unlock(&p->mu);
            txn_command(p, cmd);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        break;
    }
    pthread_mutex_unlock(&p->mu);
}

int pipeline_call(Pipeline *p, void (*fn)(Pipeline *p, void *arg), void *arg)
{
    Call cl = {NULL, fn, arg, 0, false};
    pthread_mutex_lock(&p->mu);
    if (p->state == PS_STOPPED) {
        pthread_mutex_unlock(&p->mu);
        return PIPE_STOPPING;
    }
    Call **t = &p->calls;
    while (*t)
        t = &(*t)->next;
    *t = &cl;
    pthread_cond_signal(&p->wake);
    while (!cl.done)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return cl.rc;
}

int pipeline_command(Pipeline *p, PipeCmd cmd, bool wait, PipeCmdResult *res)
{
    memset(res, 0, sizeof(*res));
    pthread_mutex_lock(&p->mu);
    if (p->state == PS_STOPPED || ((p->stop_req || pipe_signalled()) && cmd != PC_STOP)) {
        res->step = p->fig.steps;
        pthread_mutex_unlock(&p->mu);
        return PIPE_STOPPING;
    }
    if (cmd == PC_START || cmd == PC_PAUSE) {
        if (p->state == PS_RUNNING || p->state == PS_PAUSED)
            p->state = cmd == PC_START ? PS_RUNNING : PS_PAUSED;
        res->step = p->fig.steps;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    if (cmd == PC_STOP) {
        p->stop_req = true;
        pthread_cond_signal(&p->wake);
        pthread_cond_broadcast(&p->room);
        while (wait && p->state != PS_STOPPED)
            pthread_cond_wait(&p->done, &p->mu);
        res->step = p->fig.steps;
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    /* transaction commands run on the controller; a commit that does not
       wait is left to it (detached: the controller frees it) */
    Cmd *c = sl_calloc(1, sizeof(*c));
    c->cmd = cmd;
    Cmd **t = &p->cmds;
    while (*t)
        t = &(*t)->next;
    *t = c;
    pthread_cond_signal(&p->wake);
    while (!(c->done || (!wait && c->accepted)))
        pthread_cond_wait(&p->done, &p->mu);
    *res = c->res;
    int rc = c->rc;
    if (c->done)
        sl_free(c);
    else
        c->detached = true; /* the controller frees it */
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Wait up to secs for work (a push, a command, a call, a state change). */
static void wait_wake(Pipeline *p, double secs)
{
    pthread_mutex_lock(&p->mu);
    bool work = p->calls || p->cmds || p->stop_req || pipe_signalled() ||
                (p->q.head && p->state == PS_RUNNING) || ft_wants(p->ft);
    if (!work) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double s = (double)ts.tv_nsec * 1e-9 + secs;
        ts.tv_sec += (time_t)s;
        ts.tv_nsec = (long)((s - floor(s)) * 1e9);
        pthread_cond_timedwait(&p->wake, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
}


static bool backfill_done(Pipeline *p)
{
    for (int j = 0; j < p->cs.nin; j++)
        if (input_backfill(p->cs.in[j]) && !input_done(p->cs.in[j]))
            return false;
    return true;
}

static bool inputs_done(Pipeline *p)
{
    for (int j = 0; j < p->cs.nin; j++)
        if (!input_done(p->cs.in[j]))
            return false;
    return true;
}

static bool has_connectors(Pipeline *p)
{
    for (int j = 0; j < p->cs.nin; j++)
        if (!input_is_http(p->cs.in[j]))
            return true;
    return false;
}

/* Seconds until a rate-limited connector is due (at most 50 ms). */
static double input_due(Pipeline *p)
{
    double wait = 0.05;
    for (int j = 0; j < p->cs.nin; j++)
        if (!input_done(p->cs.in[j]))
            wait = fmin(wait, input_wait(p->cs.in[j]));
    return fmax(wait, 0.0005);
}

static bool giveup_now(void *arg)
{
    (void)arg;
    return true;
}

static bool giveup_signalled(void *arg)
{
    Pipeline *p = arg;
    p->be->ops->tick(p->be); /* scale-out: other hosts' queues report in their replies */
    return pipe_signalled();
}

/* An output's queue past its bound pauses the inputs (HTTP ingress
   answers 503 meanwhile: pipeline_backpressure). True while it does. */
static bool backpressure(Pipeline *p)
{
    char name[192];
    bool bp = deliver_backpressure(p->dl, name, sizeof(name));
    if (bp != p->bp_said)
        fprintf(stderr, bp ? "sluice: backpressure: %s holds more queued changes than its "
                             "bound; inputs are paused until it drains\n"
                           : "sluice: backpressure over%s; inputs resume\n",
                bp ? name : "");
    p->bp_said = bp;
    return bp;
}

bool pipeline_backpressure(Pipeline *p, char *name, size_t n)
{
    /* (p is NULL in the ingress parser's fuzz harness) */
    return p && p->dl && deliver_backpressure(p->dl, name, n);
}

/* Stopping: settle the transaction, drain the HTTP queue in final steps. */
static int final_drain(Pipeline *p, bool requested, Err *err)
{
    pthread_mutex_lock(&p->mu);
    p->state = PS_STOPPING;
    p->stop_req = true;
    pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
    if (requested) {
        if (p->tty && p->o.progress)
            fputc('\n', stderr);
        fprintf(stderr, "sluice: stop requested; finishing at step %lld\n",
                (long long)rt_steps(p->be->rt));
    }
    service(p);
    if (p->tx.state != TX_NONE) {
        if (p->tx.backfill || p->tx.commit_cmd) {
            if (txn_commit(p, err))
                return err->code;
        } else {
            pipe_gather(p, &p->pend, false, -1, err);
            fprintf(stderr,
                    "sluice: transaction %lld was still open at the stop: its %lld record%s "
                    "discarded (not committed)\n",
                    (long long)p->tx.id, (long long)p->pend.rows,
                    p->pend.rows == 1 ? " was" : "s were");
            int64_t tok = p->pend.max_token;
            if (ft_journal_discard(p->ft, &p->pend, err))
                return err->code;
            pend_reset(p, &p->pend);
            p->be->ops->drop(p->be);
            p->tx.state = TX_NONE;
            pipe_tokens_done(p, tok);
        }
    }
    if (pmem_step_stuck(p)) { /* a step that cannot fit the memory limit */
        fprintf(stderr, "sluice: memory: the step that does not fit the memory limit is not run "
                        "(%lld input records)%s\n",
                (long long)p->pend.rows,
                p->ft ? "; its input is in the journal: a restart with a larger "
                        "--memory-limit runs it"
                      : "");
        /* (pend stays: no checkpoint goes past a journaled step not run) */
    }
    for (;;) {
        if (pmem_step_stuck(p))
            break;
        int64_t got = pipe_gather(p, &p->pend, false, p->step_rows, err);
        if (got < 0)
            return err->code;
        if (got == 0)
            break;
        if (pipe_run_step(p, &p->pend, err))
            return err->code;
    }
    /* the outputs' queues: waited for at the end of the input, given up at
       once on a stop (io/deliver.c says what is left, and where) */
    if (deliver_finish(p->dl, requested ? giveup_now : giveup_signalled, p, err))
        return err->code;
    if (ft_tick(p->ft, ft_busy(p), ft_counts(p), true, err))
        return err->code;
    stats_publish(p);
    return 0;
}

cJSON *pipeline_boot_diff(Pipeline *p)
{
    if (!p->o.boot)
        return NULL;
    cJSON *j = progdiff_json(p->o.boot->d, PIPELINE_ERRORS_TABLE);
    pthread_mutex_lock(&p->mu);
    int b = p->boot;
    pthread_mutex_unlock(&p->mu);
    static const char *names[] = {"none", "awaiting_approval", "approved", "rejected", "done"};
    cJSON_AddStringToObject(j, "bootstrap", names[b]);
    return j;
}

int pipeline_approve(Pipeline *p, bool yes)
{
    pthread_mutex_lock(&p->mu);
    int rc = p->boot == BOOT_AWAITING && !p->stop_req ? 0 : PIPE_CONFLICT;
    if (!rc) {
        p->boot = yes ? BOOT_APPROVED : BOOT_REJECTED;
        if (!yes)
            p->stop_req = true;
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* --bootstrap await_approval: nothing runs until pipeline_approve; then
   the bootstrap step. 1 when the pipeline stopped meanwhile (rejected, or
   a stop): the storage keeps the old program's checkpoint. */
static int await_approval(Pipeline *p, Err *err)
{
    fprintf(stderr, "sluice: bootstrapping: awaiting approval (GET /diff shows the change, POST "
                    "/approve runs it, POST /reject stops)\n");
    for (;;) {
        service(p);
        p->be->ops->tick(p->be); /* (other hosts wait meanwhile) */
        pthread_mutex_lock(&p->mu);
        int b = p->boot;
        bool stop = p->stop_req || pipe_signalled();
        pthread_mutex_unlock(&p->mu);
        if (stop) {
            fprintf(stderr, "sluice: bootstrapping %s: stopping; the storage keeps the old "
                            "program's checkpoint\n",
                    b == BOOT_REJECTED ? "rejected" : "not approved");
            return 1;
        }
        if (b == BOOT_APPROVED)
            break;
        stats_publish(p);
        wait_wake(p, 0.05);
    }
    int rc = bootstrap(p, err);
    pthread_mutex_lock(&p->mu);
    p->boot = BOOT_DONE;
    if (p->state == PS_PAUSED && !p->o.start_paused)
        p->state = PS_RUNNING;
    pthread_mutex_unlock(&p->mu);
    return rc ? -1 : 0;
}

int pipeline_settle(Pipeline *p, Err *err)
{
    int rc = ft_replay(p, err);
    if (!rc)
        rc = final_drain(p, false, err);
    return rc;
}

static int run_loop(Pipeline *p, Err *err)
{
    bool announced = false;
    for (int j = 0; j < p->cs.nin; j++)
        if (input_backfill(p->cs.in[j]) && p->tx.state == TX_NONE) {
            txn_open(p, true);
            fprintf(stderr, "sluice: backfill: transaction %lld holds the input until every "
                            "backfill connector has ended\n",
                    (long long)p->tx.id);
        }
    for (;;) {
        service(p);
        p->be->ops->tick(p->be);
        if (pipe_signalled() || pipeline_stop_requested(p))
            return final_drain(p, true, err);
        if (ft_tick(p->ft, ft_busy(p), ft_counts(p), false, err))
            return err->code;
        if (deliver_check(p->dl, err)) /* a queued step met a fatal error */
            return err->code;
        if (p->tx.commit_cmd) {
            if (txn_commit(p, err))
                return err->code;
            continue;
        }
        if (pipe_state(p) == PS_PAUSED || backpressure(p) || pmem_hold(p)) {
            stats_publish(p);
            wait_wake(p, 0.05);
            continue;
        }
        pipe_clock_tick(p);
        bool in_txn = p->tx.state != TX_NONE;
        int64_t got = pipe_gather(p, &p->pend, true, in_txn ? -1 : p->step_rows, err);
        if (got < 0)
            return err->code;
        bool all_done = inputs_done(p);
        if (in_txn) {
            if (p->tx.backfill && backfill_done(p)) {
                if (txn_commit(p, err))
                    return err->code;
                if (all_done && p->o.until_done)
                    return final_drain(p, false, err);
                continue;
            }
            stats_publish(p);
            if (got == 0)
                wait_wake(p, input_due(p));
            continue;
        }
        if (got == 0 && rt_steps(p->be->rt) > 0) {
            /* nothing pending: what inputs allocated while finding no rows
               (polls, empty pieces) goes, or an idle pipeline would grow */
            if (!p->pend.units && !p->pend.batches)
                arena_reset(p->pend.a);
            stats_publish(p);
            if (all_done) {
                if (p->o.until_done)
                    return final_drain(p, false, err);
                if (!announced && has_connectors(p)) {
                    if (p->tty && p->o.progress)
                        fputc('\n', stderr);
                    fprintf(stderr, "sluice: all inputs have ended; the pipeline is idle "
                                    "(Ctrl-C, SIGTERM or POST /stop stops it)\n");
                    announced = true;
                }
                wait_wake(p, 0.05);
                continue;
            }
            wait_wake(p, input_due(p));
            continue;
        }
        if (pipe_run_step_ex(p, &p->pend, true, err))
            return err->code;
        if (all_done && p->o.until_done && !pmem_step_stuck(p))
            return final_drain(p, false, err);
    }
}

int pipeline_run(Pipeline *p, Err *err)
{
    const Circuit *c = p->c;
    pipe_catch_signals();
    p->t0 = p->last_report = pipe_now();
    p->rows0 = p->rows; /* restored from a checkpoint: rates count this run */
    int rc = 0, aw = p->boot == BOOT_AWAITING ? await_approval(p, err) : 0;
    if (aw < 0)
        rc = err->code;
    if (!rc && !aw)
        rc = ft_replay(p, err);
    if (!rc && !aw)
        rc = run_loop(p, err);
    double el = pipe_now() - p->t0;
    if (p->tty && p->o.progress)
        fputc('\n', stderr);
    if (!rc) {
        char b1[32], b2[32];
        int64_t bad = 0;
        for (int j = 0; j < p->cs.nin; j++)
            bad += input_errors(p->cs.in[j]);
        fprintf(stderr,
                "sluice: done: %s rows in %.2f s (%s rows/s), %lld steps, %d worker%s, peak "
                "memory %.1f MB\n",
                pipe_human((double)p->rows, b1, sizeof(b1)), el,
                pipe_human(el > 0 ? (double)(p->rows - p->rows0) / el : 0, b2, sizeof(b2)),
                (long long)rt_steps(p->be->rt), p->W, p->W == 1 ? "" : "s",
                (double)mem_peak_rss_bytes() / 1048576.0);
        p->be->ops->summary(p->be, p->rows - p->rows0, stderr);
        if (bad)
            fprintf(stderr, "sluice: %lld bad input record%s skipped (see messages above)\n",
                    (long long)bad, bad == 1 ? "" : "s");
        pthread_mutex_lock(&p->mu);
        int64_t hbad = 0;
        for (int i = 0; i < c->nrels; i++)
            hbad += p->fig.slots[p->cs.nin + i].errors;
        pthread_mutex_unlock(&p->mu);
        if (hbad)
            fprintf(stderr, "sluice: %lld bad HTTP input record%s rejected\n", (long long)hbad,
                    hbad == 1 ? "" : "s");
        for (int i = 0; i < c->nrels; i++) { /* LATENESS: never silent */
            int64_t late = 0;
            if (c->rels[i].is_table && c->rels[i].wm_col >= 0 &&
                (rt_watermark(p->be->rt, i, &late), late))
                fprintf(stderr, "sluice: table %s: %lld late row%s dropped (below its watermark)\n",
                        c->rels[i].name, (long long)late, late == 1 ? "" : "s");
        }
        for (int i = 0; i < c->nrels; i++) {
            int64_t dz = 0;
            for (int j = 0; j < c->nnodes; j++)
                if (c->nodes[j]->owner == i)
                    dz += p->be->ops->divzero(p->be, j);
            if (dz)
                fprintf(stderr, "sluice: %s %s: %lld division%s by zero gave NULL\n",
                        c->rels[i].is_table ? "table" : "view", c->rels[i].name, (long long)dz,
                        dz == 1 ? "" : "s");
        }
        if (p->o.dump_dir && !aw)
            rc = pipeline_dump(p, p->o.dump_dir, err);
    }
    p->be->ops->stop(p->be); /* the other hosts leave */
    /* stopped: fail whatever still waits for the controller */
    pthread_mutex_lock(&p->mu);
    p->state = PS_STOPPED;
    p->fig.steps = rt_steps(p->be->rt);
    for (Call *cl = p->calls; cl;) {
        Call *n = cl->next;
        cl->rc = PIPE_STOPPING;
        cl->done = true;
        cl = n;
    }
    p->calls = NULL;
    for (Cmd *cmd = p->cmds; cmd;) {
        Cmd *n = cmd->next;
        bool detached = cmd->detached;
        snprintf(cmd->res.msg, sizeof(cmd->res.msg), "the pipeline has stopped");
        pipe_cmd_finish(p, cmd, PIPE_STOPPING);
        if (detached)
            sl_free(cmd);
        cmd = n;
    }
    p->cmds = NULL;
    if (p->tx.commit_cmd) {
        bool detached = p->tx.commit_cmd->detached;
        pipe_cmd_finish(p, p->tx.commit_cmd, PIPE_STOPPING);
        if (detached)
            sl_free(p->tx.commit_cmd);
        p->tx.commit_cmd = NULL;
    }
    pthread_cond_broadcast(&p->done);
    pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/*
 * pipeline/pipeline.c - the controller. Each iteration: run what other
 * threads asked for between steps (pipeline_call, transaction commands),
 * then gather input - every input connector's next rows (at most
 * step_rows in all) and the HTTP queue's batches - into the pending input
 * (resolve.c), run one step over it, deliver each view's consolidated
 * changes to its output connectors and to the after-step hook (HTTP
 * egress), publish statistics, report progress.
 *
 * States: running; paused (connectors are not read, the HTTP queue only
 * fills, no step runs); stopping (SIGINT/SIGTERM or PC_STOP: no new HTTP
 * input, the queue is drained in final steps, outputs flushed); stopped.
 *
 * Transactions: while one is open, gathered input accumulates in the
 * pending input and no step runs, so views emit nothing; the commit is one
 * step over all of it (every view computed once, one change each); an
 * abort discards it, so the state is exactly as before (no operator saw
 * any of it). Input already queued when a transaction starts joins it. A
 * connector with "transaction": "backfill" opens one at start-up that
 * commits itself once every such connector has reached its end.
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
#include "pipeline_int.h"

#define EVENT_SAMPLES 64

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    (void)sig;
    stop_signal = 1;
}

static const char *human(double v, char *b, size_t n)
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

Pipeline *pipeline_new(const Circuit *c, const PipelineOpts *o, Err *err)
{
    Pipeline *p = sl_calloc(1, sizeof(*p));
    p->c = c;
    p->o = *o;
    p->W = o->workers > 0 ? o->workers : 1;
    p->H = o->hosts > 1 ? o->hosts : 1;
    p->err_rel = errors_table(c);
    if (p->H > p->W) {
        err_set(err, SL_ECONFIG, "%d hosts need at least %d workers in all (--workers)", p->H,
                p->H);
        sl_free(p);
        return NULL;
    }
    if (connectors_open_part(c, true, 0, p->H, &p->cs, err)) {
        sl_free(p);
        return NULL;
    }
    if (p->H > 1 && p->cs.nout)
        fprintf(stderr, "sluice: scale-out: output connectors write on host 0 (the coordinator), "
                        "which gathers their views' changes from every host; writing them on "
                        "other hosts is not built yet\n");
    p->rt = p->H > 1 ? rt_new_part(c, p->W, 0, p->H) : rt_new(c, p->W);
    p->nl = rt_workers(p->rt);
    if (p->H > 1)
        dist_open(p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->room, NULL);
    pthread_cond_init(&p->done, NULL);
    p->qlimit = o->queue_records > 0 ? o->queue_records : 1000000;
    p->step_rows = o->step_rows > 0 ? o->step_rows : (int64_t)p->W * 1048576;
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
        rc = ft_open(p, err); /* may restore a checkpoint into p->rt */
    } else {
        for (int j = 0; j < p->cs.nout && !rc; j++)
            rc = output_truncate(p->cs.out[j], 0, err);
    }
    if (rc) {
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
    dist_close(p);
    ft_close(p);
    pend_free(p, &p->pend);
    for (int i = 0; i < p->c->nrels; i++)
        if (p->chg[i])
            batch_unref(p->chg[i]);
    rt_free(p->rt);
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

const Circuit *pipeline_circuit(const Pipeline *p) { return p->c; }
int pipeline_workers(const Pipeline *p) { return p->W; }
int64_t pipeline_step(const Pipeline *p) { return rt_steps(p->rt); }

void pipeline_set_hooks(Pipeline *p, const PipelineHooks *h) { p->hooks = *h; }

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
        int64_t h = p->slots[p->cs.nin + i].records;
        pthread_mutex_unlock(&p->mu);
        n += h;
        if (any || h)
            buf_printf(&line, "%s: %s rows | ", r->name, human((double)n, b1, sizeof(b1)));
    }
    buf_printf(&line, "%s rows/s | step %lld | mem %.0f MB | %.1f s",
               human(el > 0 ? (double)(p->rows - p->rows0) / el : 0, b2, sizeof(b2)),
               (long long)rt_steps(p->rt), (double)mem_rss_bytes() / 1048576.0, el);
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
    if (r->sink < 0 || !op_sink_changes(rt_op(p->rt, 0, r->sink)))
        return NULL;
    BatchBuilder *bb = bb_new();
    for (int w = 0; w <= p->nl; w++) {
        Buf *ch = w < p->nl ? op_sink_changes(rt_op(p->rt, w, r->sink))
                            : p->H > 1 ? &p->rchg[rel] : NULL; /* other hosts' */
        size_t pos = 0;
        XRec x;
        while (ch && xrec_next(ch, &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
    }
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
    for (int w = 0; w < p->nl; w++)
        op_sink_watch(rt_op(p->rt, w, r->sink), on);
    if (p->H > 1)
        dist_watch(p, rel, on);
}

bool pipeline_contents_raw(Pipeline *p, int rel, Buf *out)
{
    const Relation *r = &p->c->rels[rel];
    if (!r->materialized || r->sink < 0)
        return false;
    rt_sink_contents(p->rt, r->sink, out);
    if (p->H > 1)
        dist_contents(p, rel, out);
    return true;
}

/* Deliver this step's changes to every output connector. */
static int deliver(Pipeline *p, Err *err)
{
    for (int j = 0; j < p->cs.nout; j++) {
        OutputConn *oc = p->cs.out[j];
        const Batch *b = pipeline_changes(p, output_rel(oc));
        if (!b)
            continue;
        if (output_write(oc, rt_steps(p->rt), b, err) || output_flush(oc, err))
            return err->code;
    }
    return 0;
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
    int ec = p->slots[slot].event_col; /* constant after start-up */
    if (ec >= 0 && rows > 0 && !(list && !list->chunk && !list->fill)) { /* (not read here) */
        u->nsamp = sample_events(p, rel, list, rows, ec, pd->a, &u->ev, EVENT_SAMPLES);
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
static int64_t gather(Pipeline *p, Pending *pd, bool read_conns, int64_t http_max, Err *err)
{
    mem_set_doing("reading the input of step %lld", rt_steps(p->rt) + 1, 0);
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
            int64_t n = pipe_input_next(p, j, share > 0 ? share : 1, pd->a, &list, err);
            if (n < 0)
                return -1;
            if (n == 0)
                continue;
            pipe_add_input(p, pd, j, list, n);
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

int64_t pipe_input_next(Pipeline *p, int conn, int64_t max, Arena *a, Piece **list, Err *err)
{
    InputConn *ic = p->cs.in[conn];
    if (input_remote(ic)) /* read on its own host (scale-out) */
        return dist_read(p, conn, max, a, list, err);
    return input_next(ic, max, a, 1, list, err);
}

void pipe_add_input(Pipeline *p, Pending *pd, int conn, Piece *list, int64_t rows)
{
    InputConn *ic = p->cs.in[conn];
    add_unit(p, pd, conn, pipe_now(), input_rel(ic), list, rows);
    pend_append(p, pd, input_rel(ic), list, rows);
    pd->conn_rows[conn] += rows;
    if (p->ft && input_remote(ic))
        pd->conn_hash[conn] += p->read_hash; /* its host hashed the rows */
    else if (p->ft)
        pd->conn_hash[conn] = ft_hash_pieces(list, pd->conn_hash[conn]);
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

static void tokens_done(Pipeline *p, int64_t tok)
{
    pthread_mutex_lock(&p->mu);
    if (tok > p->done_token)
        p->done_token = tok;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
}

/* One step over pd; pd is reset afterwards. With storage, the journal
   holds the step's inputs before it runs (before its outputs can leave). */
int pipe_run_step(Pipeline *p, Pending *pd, Err *err)
{
    mem_set_doing("journaling and splitting the input of step %lld", rt_steps(p->rt) + 1, 0);
    if (p->ft && ft_journal_step(p, pd, err))
        return err->code;
    pend_set_input(p, pd);
    int rc = p->H > 1 ? dist_step(p, err) : rt_step(p->rt, err);
    /* a runtime error over the input: the step undid itself; run it again
       without the rows that fail (reject.c) */
    while (rc && p->H == 1 && rt_rolled_back(p->rt) && p->o.on_error == ONERR_REJECT) {
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
        rc = rt_step(p->rt, err);
    }
    if (rc)
        return err->code;
    double t_end = pipe_now();
    p->rows += pd->rows;
    ft_step_done(p, pd);
    mem_set_doing("delivering the outputs of step %lld", rt_steps(p->rt), 0);
    rc = p->quiet_outputs ? 0 : deliver(p, err);
    if (!rc && p->hooks.after_step)
        p->hooks.after_step(p->hooks.arg, p, rt_steps(p->rt));
    if (!rc)
        store_crash_at_count("after-step", rt_steps(p->rt)); /* tests: storage.h */
    release_changes(p);
    if (rc)
        return rc;
    stats_units_done(p, pd->units, t_end, wall_usecs());
    int64_t tok = pd->max_token;
    pend_reset(p, pd);
    tokens_done(p, tok);
    stats_publish(p);
    progress(p, false);
    return 0;
}

/* ---------------------------------------------------------------- commands */

static PState get_state(Pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    PState s = p->state;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* Finish cmd (under mu). */
static void cmd_finish(Pipeline *p, Cmd *cmd, int rc)
{
    cmd->rc = rc;
    cmd->done = cmd->accepted = true;
    cmd->res.step = rt_steps(p->rt);
    pthread_cond_broadcast(&p->done);
}

static void txn_open(Pipeline *p, bool backfill)
{
    p->txn = TX_OPEN;
    p->txn_id++;
    p->txn_backfill = backfill;
    p->txn_t0 = pipe_now();
}

/* Refuse cmd with a message (fmt may use %lld once, for a). */
__attribute__((format(printf, 2, 0)))
static int conflict(Cmd *cmd, const char *fmt, long long a)
{
    snprintf(cmd->res.msg, sizeof(cmd->res.msg), fmt, a);
    return PIPE_CONFLICT;
}

/* A transaction command, on the controller. Returns with the command
   finished, or accepted (a commit, which the loop runs next). */
static void handle_cmd(Pipeline *p, Cmd *cmd)
{
    int rc = 0;
    bool paused = get_state(p) == PS_PAUSED;
    switch (cmd->cmd) {
    case PC_TXN_START:
        if (p->txn != TX_NONE && p->txn_backfill)
            rc = conflict(cmd,
                          "the backfill transaction %lld is in progress; it commits itself when "
                          "its connectors reach the end of their input",
                          (long long)p->txn_id);
        else if (p->txn != TX_NONE)
            rc = conflict(cmd, "transaction %lld is already open; commit or abort it first",
                          (long long)p->txn_id);
        else {
            txn_open(p, false);
            cmd->res.txn_id = p->txn_id;
            pthread_mutex_lock(&p->mu);
            cmd->res.records = p->pend.rows + p->qrows; /* queued input joins it */
            pthread_mutex_unlock(&p->mu);
        }
        break;
    case PC_TXN_COMMIT:
    case PC_TXN_ABORT:
        if (p->txn == TX_NONE)
            rc = conflict(cmd, "no transaction is open; POST /start_transaction first", 0);
        else if (p->txn_backfill)
            rc = conflict(cmd,
                          "transaction %lld is the backfill transaction; it commits itself when "
                          "its connectors reach the end of their input",
                          (long long)p->txn_id);
        else if (p->commit_cmd)
            rc = conflict(cmd, "transaction %lld is already committing", (long long)p->txn_id);
        else if (cmd->cmd == PC_TXN_COMMIT && paused)
            rc = conflict(cmd,
                          "the pipeline is paused; POST /start first (transaction %lld stays "
                          "open)",
                          (long long)p->txn_id);
        else if (cmd->cmd == PC_TXN_COMMIT) {
            cmd->res.txn_id = p->txn_id;
            p->commit_cmd = cmd;
            pthread_mutex_lock(&p->mu);
            cmd->accepted = true;
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mu);
            return;
        } else {
            /* abort: take what is queued too, then forget all of it */
            Err e = {0};
            gather(p, &p->pend, false, -1, &e);
            cmd->res.txn_id = p->txn_id;
            cmd->res.records = p->pend.rows;
            int64_t tok = p->pend.max_token;
            if (ft_journal_discard(p, &p->pend, &e))
                fprintf(stderr, "sluice: %s\n", e.msg);
            pend_reset(p, &p->pend);
            dist_drop(p);
            p->txn = TX_NONE;
            tokens_done(p, tok);
            fprintf(stderr, "sluice: transaction %lld aborted: %lld record%s discarded\n",
                    (long long)cmd->res.txn_id, (long long)cmd->res.records,
                    cmd->res.records == 1 ? "" : "s");
        }
        break;
    default:
        break;
    }
    stats_publish(p);
    pthread_mutex_lock(&p->mu);
    cmd_finish(p, cmd, rc);
    pthread_mutex_unlock(&p->mu);
}

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
            handle_cmd(p, cmd);
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
    if (p->state == PS_STOPPED || ((p->stop_req || stop_signal) && cmd != PC_STOP)) {
        res->step = p->steps_pub;
        pthread_mutex_unlock(&p->mu);
        return PIPE_STOPPING;
    }
    if (cmd == PC_START || cmd == PC_PAUSE) {
        if (p->state == PS_RUNNING || p->state == PS_PAUSED)
            p->state = cmd == PC_START ? PS_RUNNING : PS_PAUSED;
        res->step = p->steps_pub;
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
        res->step = p->steps_pub;
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
    bool work = p->calls || p->cmds || p->stop_req || stop_signal ||
                (p->qhead && p->state == PS_RUNNING) || ft_wants(p);
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

/* ---------------------------------------------------------------- transactions */

/* Run the open transaction's commit: everything queued joins it, then one
   step. */
static int do_commit(Pipeline *p, Err *err)
{
    p->txn = TX_COMMITTING;
    pthread_mutex_lock(&p->mu);
    p->commit_t0 = pipe_now();
    pthread_mutex_unlock(&p->mu);
    if (gather(p, &p->pend, false, -1, err) < 0)
        return err->code;
    int64_t id = p->txn_id, recs = p->pend.rows;
    bool backfill = p->txn_backfill;
    double t0 = pipe_now();
    stats_publish(p);
    if (p->tty && p->o.progress)
        fputc('\n', stderr);
    fprintf(stderr, "sluice: %stransaction %lld: committing %lld record%s in one step\n",
            backfill ? "backfill " : "", (long long)id, (long long)recs, recs == 1 ? "" : "s");
    int64_t rej0 = p->rejected_total; /* only the controller changes it */
    int rc = pipe_run_step(p, &p->pend, err);
    int64_t rejected = p->rejected_total - rej0;
    p->txn = TX_NONE;
    p->txn_backfill = false;
    Cmd *cmd = p->commit_cmd;
    p->commit_cmd = NULL;
    if (!rc)
        fprintf(stderr, "sluice: transaction %lld committed at step %lld in %.3f s\n",
                (long long)id, (long long)rt_steps(p->rt), pipe_now() - t0);
    stats_publish(p);
    pthread_mutex_lock(&p->mu);
    p->last_commit_id = id;
    p->last_commit_records = recs;
    p->last_commit_step = rt_steps(p->rt);
    if (cmd) {
        cmd->res.txn_id = id;
        cmd->res.records = recs - rejected;
        cmd->res.rejected = rejected;
        if (rc)
            snprintf(cmd->res.msg, sizeof(cmd->res.msg), "%.200s", err->msg);
        else if (rejected)
            snprintf(cmd->res.msg, sizeof(cmd->res.msg), "%.200s", p->last_reject);
        bool detached = cmd->detached;
        cmd_finish(p, cmd, rc ? PIPE_CONFLICT : 0);
        if (detached)
            sl_free(cmd);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
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
                (long long)rt_steps(p->rt));
    }
    service(p);
    if (p->txn != TX_NONE) {
        if (p->txn_backfill || p->commit_cmd) {
            if (do_commit(p, err))
                return err->code;
        } else {
            gather(p, &p->pend, false, -1, err);
            fprintf(stderr,
                    "sluice: transaction %lld was still open at the stop: its %lld record%s "
                    "discarded (not committed)\n",
                    (long long)p->txn_id, (long long)p->pend.rows,
                    p->pend.rows == 1 ? " was" : "s were");
            int64_t tok = p->pend.max_token;
            if (ft_journal_discard(p, &p->pend, err))
                return err->code;
            pend_reset(p, &p->pend);
            dist_drop(p);
            p->txn = TX_NONE;
            tokens_done(p, tok);
        }
    }
    for (;;) {
        int64_t got = gather(p, &p->pend, false, p->step_rows, err);
        if (got < 0)
            return err->code;
        if (got == 0)
            break;
        if (pipe_run_step(p, &p->pend, err))
            return err->code;
    }
    if (ft_tick(p, true, err))
        return err->code;
    stats_publish(p);
    return 0;
}

static int run_loop(Pipeline *p, Err *err)
{
    bool announced = false;
    for (int j = 0; j < p->cs.nin; j++)
        if (input_backfill(p->cs.in[j]) && p->txn == TX_NONE) {
            txn_open(p, true);
            fprintf(stderr, "sluice: backfill: transaction %lld holds the input until every "
                            "backfill connector has ended\n",
                    (long long)p->txn_id);
        }
    for (;;) {
        service(p);
        dist_tick(p);
        if (stop_signal || pipeline_stop_requested(p))
            return final_drain(p, true, err);
        if (ft_tick(p, false, err))
            return err->code;
        if (p->commit_cmd) {
            if (do_commit(p, err))
                return err->code;
            continue;
        }
        if (get_state(p) == PS_PAUSED) {
            stats_publish(p);
            wait_wake(p, 0.05);
            continue;
        }
        bool in_txn = p->txn != TX_NONE;
        int64_t got = gather(p, &p->pend, true, in_txn ? -1 : p->step_rows, err);
        if (got < 0)
            return err->code;
        bool all_done = inputs_done(p);
        if (in_txn) {
            if (p->txn_backfill && backfill_done(p)) {
                if (do_commit(p, err))
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
        if (got == 0 && rt_steps(p->rt) > 0) {
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
        if (pipe_run_step(p, &p->pend, err))
            return err->code;
        if (all_done && p->o.until_done)
            return final_drain(p, false, err);
    }
}

int pipeline_run(Pipeline *p, Err *err)
{
    const Circuit *c = p->c;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL); /* a scale-out launcher's stop */
    p->t0 = p->last_report = pipe_now();
    p->rows0 = p->rows; /* restored from a checkpoint: rates count this run */
    int rc = ft_replay(p, err);
    if (!rc)
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
                human((double)p->rows, b1, sizeof(b1)), el,
                human(el > 0 ? (double)(p->rows - p->rows0) / el : 0, b2, sizeof(b2)),
                (long long)rt_steps(p->rt), p->W, p->W == 1 ? "" : "s",
                (double)mem_peak_rss_bytes() / 1048576.0);
        if (p->H > 1) {
            int64_t xb = rt_remote_bytes(p->rt);
            double peak = (double)mem_peak_rss_bytes(), xs = rt_remote_secs(p->rt);
            for (int h = 1; h < p->H; h++) {
                xb += p->hf[h].xbytes;
                peak += (double)p->hf[h].peak;
                xs += (double)p->hf[h].xusecs * 1e-6;
            }
            int64_t steps = rt_steps(p->rt) > 0 ? rt_steps(p->rt) : 1;
            fprintf(stderr,
                    "sluice: %d hosts: %.1f MB exchanged between hosts (%.1f bytes per row), "
                    "%.3f s per host in exchanges between hosts (%.3f ms per step), peak "
                    "memory %.1f MB in all\n",
                    p->H, (double)xb / 1048576.0,
                    p->rows > p->rows0 ? (double)xb / (double)(p->rows - p->rows0) : 0.0,
                    xs / p->H, xs / p->H / (double)steps * 1e3, peak / 1048576.0);
        }
        if (bad)
            fprintf(stderr, "sluice: %lld bad input record%s skipped (see messages above)\n",
                    (long long)bad, bad == 1 ? "" : "s");
        pthread_mutex_lock(&p->mu);
        int64_t hbad = 0;
        for (int i = 0; i < c->nrels; i++)
            hbad += p->slots[p->cs.nin + i].errors;
        pthread_mutex_unlock(&p->mu);
        if (hbad)
            fprintf(stderr, "sluice: %lld bad HTTP input record%s rejected\n", (long long)hbad,
                    hbad == 1 ? "" : "s");
        for (int i = 0; i < c->nrels; i++) {
            int64_t dz = 0;
            for (int j = 0; j < c->nnodes; j++)
                if (c->nodes[j]->owner == i) {
                    dz += rt_divzero_node(p->rt, j);
                    for (int h = 1; h < p->H; h++)
                        dz += p->hf[h].divzero[j];
                }
            if (dz)
                fprintf(stderr, "sluice: %s %s: %lld division%s by zero gave NULL\n",
                        c->rels[i].is_table ? "table" : "view", c->rels[i].name, (long long)dz,
                        dz == 1 ? "" : "s");
        }
        if (p->o.dump_dir)
            rc = pipeline_dump(p, p->o.dump_dir, err);
    }
    dist_stop(p); /* the followers leave */
    /* stopped: fail whatever still waits for the controller */
    pthread_mutex_lock(&p->mu);
    p->state = PS_STOPPED;
    p->steps_pub = rt_steps(p->rt);
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
        cmd_finish(p, cmd, PIPE_STOPPING);
        if (detached)
            sl_free(cmd);
        cmd = n;
    }
    p->cmds = NULL;
    if (p->commit_cmd) {
        bool detached = p->commit_cmd->detached;
        cmd_finish(p, p->commit_cmd, PIPE_STOPPING);
        if (detached)
            sl_free(p->commit_cmd);
        p->commit_cmd = NULL;
    }
    pthread_cond_broadcast(&p->done);
    pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/*
 * pipeline/dist.c - scale-out: one pipeline over H processes (the ranks of
 * an MPI job, cluster/net.h), W workers in all spread evenly over them.
 *
 * Rank 0 is the coordinator: it runs the whole controller of pipeline.c
 * (connectors, HTTP API, step boundaries, transactions, journal, outputs)
 * over a runtime holding its own share of the workers. Every other rank is
 * a follower running dist_follow: a loop that receives one command at a
 * time from the coordinator and answers it. All hosts therefore step in
 * lockstep: a step is one STEP command to every host (a host with no
 * input still steps), during which the operators' exchanges move rows
 * between hosts, then one reply from every host.
 *
 * What travels (each a net_exchange):
 *  - STEP: the input pieces of the follower's workers (pend_set_input
 *    splits the step's input over all W workers): generated rows travel as
 *    ranges (connector, plan, first row, count), so every host generates
 *    its own share; parsed rows travel encoded. Also the changes of the
 *    egress subscriptions (op_sink_watch) since the last command.
 *    Reply: the host's error, if any; its figures (memory, CPU, state,
 *    bytes exchanged, per relation changes and rows, divisions by zero);
 *    and the step's changes of every view whose changes are collected
 *    (output connectors, egress), which the coordinator merges with its
 *    own (pipeline_changes).
 *  - CONTENTS rel: every host's materialized contents of rel (/query,
 *    snapshots, --dump).
 *  - READ conn: file inputs belong to hosts round-robin (io's
 *    connectors_open_part); the owner reads and parses up to N rows and
 *    keeps them, and replies with their count, its new position and their
 *    hash (the coordinator journals them); the coordinator's pending input
 *    holds a placeholder piece, which pend_set_input gives to the owner's
 *    workers and STEP names as (connector, first row, count). A STEP
 *    consumes everything kept; DROP (an aborted transaction) discards it.
 *  - LOOKUP node: the current row of one key of a PRIMARY KEY table on
 *    the host that owns it (partial updates through HTTP, resolve.c).
 *  - PING: figures only; sent when the coordinator has been idle for a
 *    second, so that followers (and the step watchdog) see it alive.
 *  - CKPT step: phase one of a checkpoint (ckpt.c): the follower forks a
 *    child that saves its workers' state into the shared storage, and
 *    goes on; the child's report (file names per worker and node) rides
 *    on the follower's next reply after it finished. The coordinator
 *    writes the manifest (phase two) once every host reported success.
 *  - RESTORE step: rebuild the follower's workers from a manifest's state.
 *  - STOP: the last figures; the follower leaves.
 * Every reply carries, after the figures, a finished checkpoint report
 * when there is one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/wire.h"
#include "../cluster/net.h"
#include "../zset/key.h"
#include "ft_int.h"
#include "pipeline_int.h"

enum { DC_STEP = 1, DC_CONTENTS, DC_PING, DC_STOP, DC_LOOKUP, DC_CKPT, DC_RESTORE, DC_READ,
       DC_DROP };

/* ---------------------------------------------------------------- figures */

static int64_t cpu_msecs(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
           (int64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
}

/* This host's figures: fixed part, then per relation (changes, net rows),
   then per node the divisions by zero. */
static void put_figures(const Circuit *c, Runtime *rt, Buf *b)
{
    int nl = rt_workers(rt);
    int64_t state = 0;
    for (int w = 0; w < nl; w++)
        for (int n = 0; n < c->nnodes; n++) {
            if (c->nodes[n]->k == OPK_SINK)
                state += (int64_t)op_sink_bytes(rt_op(rt, w, n));
            else if (c->nodes[n]->k == OPK_UPSERT)
                state += (int64_t)op_upsert_bytes(rt_op(rt, w, n));
        }
    put64(b, (int64_t)mem_rss_bytes());
    put64(b, (int64_t)mem_peak_rss_bytes());
    put64(b, state);
    put64(b, cpu_msecs());
    put64(b, rt_remote_bytes(rt));
    put64(b, rt_steps(rt));
    put64(b, (int64_t)(rt_remote_secs(rt) * 1e6));
    for (int i = 0; i < c->nrels; i++) {
        int64_t ch = 0, rows = 0;
        int s = c->rels[i].sink;
        for (int w = 0; w < nl && s >= 0; w++) {
            ch += op_sink_count(rt_op(rt, w, s));
            rows += op_sink_net(rt_op(rt, w, s));
        }
        put64(b, ch);
        put64(b, rows);
    }
    for (int n = 0; n < c->nnodes; n++)
        put64(b, rt_divzero_node(rt, n));
}

static void read_figures(const Circuit *c, Rd *r, HostFig *f)
{
    f->rss = rd64(r);
    f->peak = rd64(r);
    f->state_bytes = rd64(r);
    f->cpu_ms = rd64(r);
    f->xbytes = rd64(r);
    f->steps = rd64(r);
    f->xusecs = rd64(r);
    for (int i = 0; i < c->nrels; i++) {
        f->rel_changes[i] = rd64(r);
        f->rel_rows[i] = rd64(r);
    }
    for (int n = 0; n < c->nnodes; n++)
        f->divzero[n] = rd64(r);
    f->valid = !r->bad;
}

/* ---------------------------------------------------------------- coordinator */

void dist_open(Pipeline *p)
{
    int H = p->H;
    const Circuit *c = p->c;
    p->rin = sl_calloc((size_t)p->W * (size_t)(c->nrels + 1), sizeof(Piece *));
    p->rchg = sl_calloc((size_t)c->nrels + 1, sizeof(Buf));
    p->hf = sl_calloc((size_t)H, sizeof(HostFig));
    for (int h = 0; h < H; h++) {
        p->hf[h].rel_changes = sl_calloc((size_t)c->nrels + 1, sizeof(int64_t));
        p->hf[h].rel_rows = sl_calloc((size_t)c->nrels + 1, sizeof(int64_t));
        p->hf[h].divzero = sl_calloc((size_t)c->nnodes + 1, sizeof(int64_t));
    }
    p->dsend = sl_calloc((size_t)H, sizeof(Buf));
    p->drecv = sl_calloc((size_t)H, sizeof(Buf));
    p->last_net = pipe_now();
}

/* Start a command of kind to every follower (header + watch changes). */
static void cmd_begin(Pipeline *p, int kind, int32_t arg)
{
    for (int h = 1; h < p->H; h++) {
        Buf *b = &p->dsend[h];
        buf_reset(b);
        put32(b, kind);
        put32(b, arg);
        put64(b, rt_steps(p->rt));
        put32(b, (int32_t)(p->dwatch.n / 8));
        buf_append(b, p->dwatch.p, p->dwatch.n);
    }
    buf_reset(&p->dwatch);
}

static void send_cmd(Pipeline *p)
{
    buf_reset(&p->dsend[0]);
    net_exchange(p->dsend, p->drecv);
    p->last_net = pipe_now();
}

/* Gather every follower's reply into p->drecv[h]. */
static void gather_replies(Pipeline *p)
{
    for (int h = 0; h < p->H; h++)
        buf_reset(&p->dsend[h]);
    net_exchange(p->dsend, p->drecv);
    p->last_net = pipe_now();
}

/* Parse the common head of host h's reply: status and figures. */
static int reply_head(Pipeline *p, int h, Rd *r, Err *err)
{
    int rc = rd32(r);
    int32_t mlen = rd32(r);
    const uint8_t *msg = mlen > 0 ? rd_bytes(r, (size_t)mlen) : NULL;
    if (rc && !r->bad)
        err_set(err, rc, "host %d (%s): %.*s", h, net_host_name(h), (int)mlen,
                msg ? (const char *)msg : "");
    Rd rest = *r;
    read_figures(p->c, &rest, &p->hf[h]);
    if (!rest.bad && rd32(&rest)) { /* a checkpoint report */
        int64_t step = rd64(&rest);
        int32_t len = rd32(&rest);
        const uint8_t *text = len >= 0 ? rd_bytes(&rest, (size_t)len) : NULL;
        if (text)
            ft_remote_report(p, h, step, (const char *)text, (size_t)len);
    }
    if (rc && !r->bad)
        return rc; /* (a follower that could not start sends no figures) */
    *r = rest;
    if (r->bad)
        return err_set(err, SL_ERUNTIME, "host %d (%s): malformed reply", h, net_host_name(h));
    return 0;
}

static void put_pieces(Pipeline *p, Buf *b, int lw, int rel, Piece *list)
{
    Buf row = BUF_INIT;
    for (Piece *pc = list; pc; pc = pc->next) {
        put32(b, lw);
        put32(b, rel);
        if (!pc->chunk && !pc->fill) { /* rows that host read itself */
            put32(b, 2);
            put32(b, pc->plan);
            put64(b, pc->start);
            put64(b, pc->count);
            continue;
        }
        if (!pc->chunk) {
            int conn = -1;
            for (int j = 0; j < p->cs.nin && conn < 0; j++)
                if (input_gen(p->cs.in[j]) == pc->src)
                    conn = j;
            if (conn < 0)
                sl_panic("dist: a generated piece of no connector");
            put32(b, 1);
            put32(b, conn);
            put32(b, pc->plan);
            put32(b, pc->negate);
            put64(b, pc->start);
            put64(b, pc->count);
            continue;
        }
        put32(b, 0);
        const Chunk *c = pc->chunk;
        put64(b, c->n);
        for (int64_t i = 0; i < c->n; i++) {
            buf_reset(&row);
            key_encode_row(c, i, &row);
            put64(b, c->w[i]);
            put32(b, (int32_t)row.n);
            buf_append(b, row.p, row.n);
        }
    }
    buf_free(&row);
}

int dist_step(Pipeline *p, Err *err)
{
    const Circuit *c = p->c;
    int H = p->H, W = p->W;
    cmd_begin(p, DC_STEP, p->quiet_outputs);
    for (int h = 1; h < H; h++) {
        Buf *b = &p->dsend[h];
        int lo = xchg_first(W, H, h), hi = xchg_first(W, H, h + 1);
        for (int w = lo; w < hi; w++)
            for (int rel = 0; rel < c->nrels; rel++) {
                Piece **slot = &p->rin[(size_t)w * (size_t)c->nrels + (size_t)rel];
                put_pieces(p, b, w - lo, rel, *slot);
                *slot = NULL;
            }
    }
    char what[96];
    snprintf(what, sizeof(what), "in step %lld", (long long)rt_steps(p->rt) + 1);
    net_set_activity(what);
    send_cmd(p);
    int rc = rt_step(p->rt, err);
    gather_replies(p);
    net_set_activity("between steps");
    for (int i = 0; i < c->nrels; i++)
        buf_reset(&p->rchg[i]);
    for (int h = 1; h < H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e)) {
            if (!rc)
                rc = err_set(err, e.code, "%s", e.msg);
            continue;
        }
        int32_t n = rd32(&r);
        for (int k = 0; k < n && !r.bad; k++) {
            int32_t rel = rd32(&r);
            int64_t len = rd64(&r);
            const uint8_t *d = len >= 0 ? rd_bytes(&r, (size_t)len) : NULL;
            if (r.bad || rel < 0 || rel >= c->nrels)
                break;
            buf_append(&p->rchg[rel], d, (size_t)len);
        }
        if (r.bad && !rc)
            rc = err_set(err, SL_ERUNTIME, "host %d (%s): malformed step reply", h,
                         net_host_name(h));
    }
    return rc;
}

void dist_contents(Pipeline *p, int rel, Buf *out)
{
    cmd_begin(p, DC_CONTENTS, rel);
    send_cmd(p);
    gather_replies(p);
    for (int h = 1; h < p->H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e)) {
            fprintf(stderr, "sluice: %s\n", e.msg);
            continue;
        }
        int64_t len = rd64(&r);
        const uint8_t *d = len > 0 ? rd_bytes(&r, (size_t)len) : NULL;
        if (d)
            buf_append(out, d, (size_t)len);
    }
}

const uint8_t *dist_lookup(Pipeline *p, int w, int node, const uint8_t *k, size_t kn, Arena *a)
{
    int H = p->H, host = 0;
    while (host + 1 < H && xchg_first(p->W, H, host + 1) <= w)
        host++;
    cmd_begin(p, DC_LOOKUP, node);
    Buf *b = &p->dsend[host];
    put32(b, w - xchg_first(p->W, H, host));
    put32(b, (int32_t)kn);
    buf_append(b, k, kn);
    send_cmd(p);
    gather_replies(p);
    const uint8_t *row = NULL;
    for (int h = 1; h < H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e)) {
            fprintf(stderr, "sluice: %s\n", e.msg);
            continue;
        }
        int32_t len = rd32(&r);
        const uint8_t *d = len > 0 ? rd_bytes(&r, (size_t)len) : NULL;
        if (h == host && d) {
            uint8_t *copy = arena_alloc(a, (size_t)len);
            memcpy(copy, d, (size_t)len);
            row = copy;
        }
    }
    return row;
}

static void figures_only(Pipeline *p, int kind);

static void put_pos(Buf *b, const InPos *pos)
{
    put64(b, pos->v[0]);
    put64(b, pos->v[1]);
    put64(b, pos->rows);
    put64(b, pos->errors);
    put64(b, pos->bytes);
}

static void rd_pos(Rd *r, InPos *pos)
{
    pos->v[0] = rd64(r);
    pos->v[1] = rd64(r);
    pos->rows = rd64(r);
    pos->errors = rd64(r);
    pos->bytes = rd64(r);
}

int64_t dist_read(Pipeline *p, int conn, int64_t max, Arena *a, Piece **list, Err *err)
{
    InputConn *ic = p->cs.in[conn];
    int owner = input_owner(ic);
    InPos seek;
    bool seeking = input_take_seek(ic, &seek);
    cmd_begin(p, DC_READ, conn);
    Buf *b = &p->dsend[owner];
    put64(b, max);
    put32(b, seeking);
    if (seeking)
        put_pos(b, &seek);
    send_cmd(p);
    gather_replies(p);
    int64_t n = -1;
    p->read_hash = 0;
    for (int h = 1; h < p->H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e)) {
            if (h == owner && !err->code)
                err_set(err, e.code ? e.code : SL_EIO, "%s", e.msg);
            continue;
        }
        if (h != owner)
            continue;
        int64_t got = rd64(&r);
        InPos pos;
        rd_pos(&r, &pos);
        bool done = rd32(&r) != 0;
        uint64_t hash = (uint64_t)rd64(&r);
        if (r.bad || got < 0) {
            err_set(err, SL_ERUNTIME, "host %d (%s): malformed read reply", h, net_host_name(h));
            continue;
        }
        int64_t first = input_rows(ic);
        input_remote_update(ic, &pos, done);
        p->read_hash = hash;
        n = got;
        *list = NULL;
        if (got > 0) {
            Piece *pc = arena_zalloc(a, sizeof(*pc));
            pc->plan = conn;
            pc->start = first;
            pc->count = got;
            *list = pc;
        }
    }
    if (n < 0 && !err->code)
        err_set(err, SL_ERUNTIME, "input %s: its host %d sent no rows", input_name(ic), owner);
    return n;
}

void dist_drop(Pipeline *p)
{
    if (p->H < 2 || p->dstopped)
        return;
    figures_only(p, DC_DROP);
}

void dist_watch(Pipeline *p, int rel, bool on)
{
    put32(&p->dwatch, rel);
    put32(&p->dwatch, on);
}

static void figures_only(Pipeline *p, int kind)
{
    cmd_begin(p, kind, 0);
    send_cmd(p);
    gather_replies(p);
    for (int h = 1; h < p->H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e))
            fprintf(stderr, "sluice: %s\n", e.msg);
    }
}

void dist_tick(Pipeline *p)
{
    if (p->H < 2 || p->dstopped)
        return;
    /* once a second; often while a checkpoint waits for reports */
    double every = ft_remote_waiting(p) ? 0.01 : 1.0;
    if (pipe_now() - p->last_net >= every)
        figures_only(p, DC_PING);
}

void dist_poll(Pipeline *p)
{
    if (p->H > 1 && !p->dstopped)
        figures_only(p, DC_PING);
}

void dist_ckpt(Pipeline *p, int64_t step, bool full)
{
    cmd_begin(p, DC_CKPT, full);
    for (int h = 1; h < p->H; h++)
        put64(&p->dsend[h], step);
    send_cmd(p);
    gather_replies(p);
    for (int h = 1; h < p->H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e))
            fprintf(stderr, "sluice: %s\n", e.msg);
    }
}

int dist_restore(Pipeline *p, int64_t step, const char *state, int W0, Err *err)
{
    cmd_begin(p, DC_RESTORE, W0);
    for (int h = 1; h < p->H; h++) {
        put64(&p->dsend[h], step);
        buf_append(&p->dsend[h], state, strlen(state));
    }
    send_cmd(p);
    gather_replies(p);
    int rc = 0;
    for (int h = 1; h < p->H; h++) {
        Rd r = {p->drecv[h].p, p->drecv[h].p + p->drecv[h].n, false};
        Err e = {0};
        if (reply_head(p, h, &r, &e) && !rc)
            rc = err_set(err, SL_EIO, "%s", e.msg);
    }
    return rc;
}

/* Followers told to leave (once per process). */
static bool dismissed;

void pipeline_dismiss_followers(void)
{
    if (dismissed || !net_active() || net_host() != 0)
        return;
    int H = net_hosts();
    Buf *send = sl_calloc((size_t)H, sizeof(Buf)), *recv = sl_calloc((size_t)H, sizeof(Buf));
    for (int h = 1; h < H; h++) {
        put32(&send[h], DC_STOP);
        put32(&send[h], 0);
        put64(&send[h], 0);
        put32(&send[h], 0);
    }
    net_exchange(send, recv);
    for (int h = 0; h < H; h++)
        buf_reset(&send[h]);
    net_exchange(send, recv);
    for (int h = 0; h < H; h++) {
        buf_free(&send[h]);
        buf_free(&recv[h]);
    }
    sl_free(send);
    sl_free(recv);
    dismissed = true;
}

void pipeline_follow_failed(const char *why)
{
    int H = net_hosts();
    Buf *send = sl_calloc((size_t)H, sizeof(Buf)), *recv = sl_calloc((size_t)H, sizeof(Buf));
    net_exchange(send, recv); /* the first command, whatever it is */
    put32(&send[0], SL_ECONFIG);
    put32(&send[0], (int32_t)strlen(why));
    buf_append(&send[0], why, strlen(why));
    net_exchange(send, recv);
    for (int h = 0; h < H; h++) {
        buf_free(&send[h]);
        buf_free(&recv[h]);
    }
    sl_free(send);
    sl_free(recv);
}

void dist_close(Pipeline *p)
{
    if (!p->hf)
        return;
    dist_stop(p);
    for (int h = 0; h < p->H; h++) {
        sl_free(p->hf[h].rel_changes);
        sl_free(p->hf[h].rel_rows);
        sl_free(p->hf[h].divzero);
        buf_free(&p->dsend[h]);
        buf_free(&p->drecv[h]);
    }
    for (int i = 0; i < p->c->nrels; i++)
        buf_free(&p->rchg[i]);
    buf_free(&p->dwatch);
    sl_free(p->hf);
    sl_free(p->dsend);
    sl_free(p->drecv);
    sl_free(p->rchg);
    sl_free(p->rin);
    p->hf = NULL;
}

void dist_stop(Pipeline *p)
{
    if (p->hf && !p->dstopped && !dismissed) {
        figures_only(p, DC_STOP);
        p->dstopped = dismissed = true;
    }
}

/* ---------------------------------------------------------------- follower */

/* Rows a follower read for one of its file inputs, kept until a step
   takes them. */
typedef struct Kept {
    Arena *a;
    Piece *head, *tail;
    int64_t base, n;      /* row number of the first, rows kept */
} Kept;

/* A follower's share of fault tolerance. */
typedef struct Fol {
    const PipelineOpts *o;
    Store *st;
    pid_t pid;            /* the checkpoint child, or 0 */
    int fd;
    int64_t step;         /* its checkpoint's step */
    Buf report;
    bool done;            /* report complete, not sent yet */
    char *prev_state;     /* this host's files of the last checkpoint (JSON) */
} Fol;

static int fol_store(Fol *f, Err *err)
{
    if (f->st)
        return 0;
    if (!f->o->storage)
        return err_set(err, SL_ECONFIG, "no storage configured on this host");
    return store_open_member(f->o->storage, &f->st, err);
}

/* SLUICE_CRASH_AT=after-checkpoint:N (storage.h): a follower's N-th share
   of a checkpoint is written. */
static void crash_after_share(void)
{
    static int64_t shares;
    store_crash_at_count("after-checkpoint", ++shares);
}

/* Read what the child reported so far; done once it exited. */
static void fol_poll(Fol *f)
{
    if (!f->pid || f->done)
        return;
    char chunk[65536];
    for (;;) {
        ssize_t k = read(f->fd, chunk, sizeof(chunk));
        if (k > 0) {
            buf_append(&f->report, chunk, (size_t)k);
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN)
            return;
        break; /* EOF */
    }
    close(f->fd);
    int status = 0;
    while (waitpid(f->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 137 && getenv("SLUICE_CRASH_AT"))
        _exit(137);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        buf_puts(&f->report, "\nDIED\n");
    else
        crash_after_share();
    f->pid = 0;
    f->done = true;
}

/* Append the finished report (if any) to a reply. */
static void fol_report(Fol *f, Buf *b)
{
    fol_poll(f);
    if (!f->done) {
        put32(b, 0);
        return;
    }
    put32(b, 1);
    put64(b, f->step);
    put32(b, (int32_t)f->report.n);
    buf_append(b, f->report.p, f->report.n);
    /* its files are what unchanged nodes keep next time */
    cJSON *state = cJSON_CreateArray();
    int64_t a = 0, bb = 0, c = 0;
    Err e = {0};
    sl_free(f->prev_state);
    f->prev_state = NULL;
    if (!ckpt_parse_report(buf_cstr(&f->report), state, &a, &bb, &c, &e)) {
        char *t = cJSON_PrintUnformatted(state);
        f->prev_state = sl_strdup(t);
        cJSON_free(t);
    }
    cJSON_Delete(state);
    buf_reset(&f->report);
    f->done = false;
}

static void fol_ckpt(Fol *f, const Circuit *c, Runtime *rt, int64_t step, bool full)
{
    if (f->pid) { /* cannot happen: the coordinator runs one at a time */
        Buf junk = BUF_INIT;
        ckpt_reap(f->fd, f->pid, &junk);
        buf_free(&junk);
        f->pid = 0;
    }
    buf_reset(&f->report);
    f->step = step;
    f->done = false;
    Err e = {0};
    int nn = c->nnodes;
    bool *dirty = sl_calloc((size_t)nn + 1, sizeof(bool));
    for (int n = 0; n < nn; n++)
        dirty[n] = full || !f->prev_state || rt_node_changed(rt, n);
    int rc = fol_store(f, &e);
    if (!rc)
        rc = ckpt_fork(f->st, rt, nn, dirty, full ? NULL : f->prev_state, &f->pid, &f->fd, &e);
    sl_free(dirty);
    if (rc) {
        buf_printf(&f->report, "ERR %s\n", e.msg);
        f->done = true;
        return;
    }
    fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) | O_NONBLOCK);
    rt_clear_changed(rt);
}

static int fol_restore(Fol *f, const Circuit *c, Runtime *rt, const uint8_t *text, size_t n,
                       int W0, Err *err)
{
    char *s = sl_malloc(n + 1);
    memcpy(s, text, n);
    s[n] = 0;
    cJSON *state = cJSON_Parse(s);
    int rc = 0;
    if (!state)
        rc = err_set(err, SL_EIO, "the checkpoint state does not parse");
    else if (cJSON_GetArraySize(state) > 0 && !(rc = fol_store(f, err)))
        rc = ckpt_load_state(f->st, rt, c->nnodes, state, W0, err);
    cJSON_Delete(state);
    sl_free(f->prev_state);
    /* re-sharded state (another worker count) has no files of its own yet */
    f->prev_state = rc || W0 != rt_total_workers(rt) ? NULL : s;
    if (!f->prev_state)
        sl_free(s);
    rt_clear_changed(rt);
    return rc;
}

/* Decode a STEP command's pieces into per (local worker, relation) lists. */
/* Pieces for rows [start, start + count) of what k keeps, from arena a. */
static Piece *kept_slice(Kept *k, int64_t start, int64_t count, Arena *a)
{
    Piece *head = NULL, *tail = NULL;
    int64_t at = k->base;
    for (Piece *pc = k->head; pc && count > 0; pc = pc->next) {
        int64_t n = pc->chunk->n;
        if (start < at + n) {
            int64_t off = start - at, take = SL_MIN(n - off, count);
            Piece *q = arena_zalloc(a, sizeof(*q));
            q->chunk = chunk_slice(a, pc->chunk, off, take);
            if (tail)
                tail->next = q;
            else
                head = q;
            tail = q;
            start += take;
            count -= take;
        }
        at += n;
    }
    return count > 0 ? NULL : head;
}

static void kept_drop(Kept *k, int n)
{
    for (int j = 0; j < n; j++) {
        if (k[j].a)
            arena_reset(k[j].a);
        k[j].head = k[j].tail = NULL;
        k[j].n = 0;
    }
}

static int take_pieces(const Circuit *c, Runtime *rt, Connectors *cs, Kept *kept, Rd *r,
                       Arena *a, Err *err)
{
    int nl = rt_workers(rt);
    Piece **tails = arena_zalloc(a, sizeof(Piece *) * (size_t)nl * (size_t)(c->nrels + 1));
    while (r->p < r->end && !r->bad) {
        int lw = rd32(r), rel = rd32(r), kind = rd32(r);
        if (r->bad || lw < 0 || lw >= nl || rel < 0 || rel >= c->nrels)
            return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
        Piece *pc = arena_zalloc(a, sizeof(*pc));
        const Relation *rr = &c->rels[rel];
        if (kind == 2) {
            int conn = rd32(r);
            int64_t start = rd64(r), count = rd64(r);
            Piece *l = !r->bad && conn >= 0 && conn < cs->nin && count > 0 && start >= 0 &&
                               start <= INT64_MAX - count
                           ? kept_slice(&kept[conn], start, count, a)
                           : NULL;
            if (!l)
                return err_set(err, SL_ERUNTIME,
                               "step input names %lld rows from row %lld of input %d, which this "
                               "host does not hold",
                               (long long)count, (long long)start, conn);
            Piece **t = &tails[(size_t)lw * (size_t)c->nrels + (size_t)rel];
            for (Piece *q = l; q;) {
                Piece *nx = q->next;
                q->next = NULL;
                if (*t)
                    (*t)->next = q;
                else
                    rt_set_input(rt, lw, rel, q);
                *t = q;
                q = nx;
            }
            continue;
        }
        if (kind == 1) {
            int conn = rd32(r);
            pc->plan = rd32(r);
            pc->negate = rd32(r) != 0;
            pc->start = rd64(r);
            pc->count = rd64(r);
            if (r->bad || conn < 0 || conn >= cs->nin || !input_gen(cs->in[conn]))
                return err_set(err, SL_ERUNTIME, "step input names no generator");
            input_gen_piece(cs->in[conn], pc);
        } else {
            int64_t n = rd_count64(r, 12); /* a row: 8 bytes of weight, 4 of length, ... */
            if (r->bad)
                return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
            Chunk *ch = chunk_new(a, rr->ncol, rr->types, n ? n : 1);
            size_t pad = 9 * (size_t)rr->ncol + 1;
            for (int64_t i = 0; i < n && !r->bad; i++) {
                ch->w[i] = rd64(r);
                int32_t len = rd32(r);
                const uint8_t *row = len >= 0 ? rd_bytes(r, (size_t)len) : NULL;
                if (!row) {
                    r->bad = true;
                    break;
                }
                /* checked against its length on a zero-padded copy, so that
                   a damaged row cannot make the decoder read past it; the
                   decoded strings point into the copy (in a) */
                uint8_t *copy = arena_alloc(a, (size_t)len + pad);
                memcpy(copy, row, (size_t)len);
                memset(copy + len, 0, pad);
                if (key_skip(copy, rr->types, rr->ncol) != copy + len) {
                    r->bad = true;
                    break;
                }
                key_decode(copy, rr->types, rr->ncol, ch, 0, i);
            }
            if (r->bad)
                return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
            ch->n = n;
            pc->chunk = ch;
        }
        if (r->bad)
            return err_set(err, SL_ERUNTIME, "malformed step input from the coordinator");
        Piece **t = &tails[(size_t)lw * (size_t)c->nrels + (size_t)rel];
        if (*t)
            (*t)->next = pc;
        else
            rt_set_input(rt, lw, rel, pc);
        *t = pc;
    }
    return 0;
}

static void put_changes(const Circuit *c, Runtime *rt, Buf *b)
{
    size_t at = b->n;
    int32_t n = 0;
    put32(b, 0);
    for (int i = 0; i < c->nrels; i++) {
        int s = c->rels[i].sink;
        if (s < 0 || !op_sink_changes(rt_op(rt, 0, s)))
            continue;
        int64_t len = 0;
        for (int w = 0; w < rt_workers(rt); w++) {
            Buf *ch = op_sink_changes(rt_op(rt, w, s));
            len += ch ? (int64_t)ch->n : 0;
        }
        put32(b, i);
        put64(b, len);
        for (int w = 0; w < rt_workers(rt); w++) {
            Buf *ch = op_sink_changes(rt_op(rt, w, s));
            if (ch && ch->n)
                buf_append(b, ch->p, ch->n);
        }
        n++;
    }
    memcpy(b->p + at, &n, 4);
}

static void put_contents(const Circuit *c, Runtime *rt, int rel, Buf *b)
{
    size_t at = b->n;
    put64(b, 0);
    const Relation *r = &c->rels[rel];
    if (rel >= 0 && rel < c->nrels && r->materialized && r->sink >= 0)
        rt_sink_contents(rt, r->sink, b);
    int64_t len = (int64_t)(b->n - at - 8);
    memcpy(b->p + at, &len, 8);
}

int pipeline_follow(const Circuit *c, const PipelineOpts *o, Err *err) { return dist_follow(c, o, err); }

int dist_follow(const Circuit *c, const PipelineOpts *o, Err *err)
{
    int H = net_hosts(), me = net_host();
    Connectors cs;
    /* generators, and the file inputs this host reads */
    if (connectors_open_part(c, true, me, H, &cs, err))
        return err->code;
    Kept *kept = sl_calloc((size_t)cs.nin + 1, sizeof(Kept));
    Runtime *rt = rt_new_part(c, o->workers, me, H);
    Fol fol = {.o = o, .fd = -1};
    Buf *send = sl_calloc((size_t)H, sizeof(Buf));
    Buf *recv = sl_calloc((size_t)H, sizeof(Buf));
    Arena *a = arena_new(1 << 16);
    int rc = 0;
    for (bool stop = false; !stop;) {
        for (int h = 0; h < H; h++)
            buf_reset(&send[h]);
        net_set_activity("waiting for the coordinator's next command");
        net_exchange(send, recv);
        const uint8_t *msg = recv[0].p ? recv[0].p : (const uint8_t *)""; /* empty: no NULL+0 */
        Rd r = {msg, msg + recv[0].n, false};
        int kind = rd32(&r), arg = rd32(&r);
        int64_t step = rd64(&r);
        int nw = rd32(&r);
        for (int k = 0; k < nw && !r.bad; k++) {
            int rel = rd32(&r), on = rd32(&r);
            if (rel >= 0 && rel < c->nrels && c->rels[rel].sink >= 0)
                for (int w = 0; w < rt_workers(rt); w++)
                    op_sink_watch(rt_op(rt, w, c->rels[rel].sink), on != 0);
        }
        Err e = {0};
        int src = 0;
        if (r.bad) {
            src = err_set(&e, SL_ERUNTIME, "malformed command from the coordinator");
            kind = DC_STOP;
        }
        arena_reset(a);
        if (kind == DC_STEP) {
            char what[96];
            snprintf(what, sizeof(what), "in step %lld", (long long)step + 1);
            net_set_activity(what);
            if (rt_steps(rt) != step)
                rt_set_steps(rt, step);
            src = take_pieces(c, rt, &cs, kept, &r, a, &e);
            int src2 = rt_step(rt, src ? &(Err){0} : &e);
            if (!src)
                src = src2;
            if (!src)
                store_crash_at_count("after-step", rt_steps(rt)); /* tests: storage.h */
            kept_drop(kept, cs.nin); /* a step takes everything read */
        } else if (kind == DC_DROP) {
            kept_drop(kept, cs.nin);
        } else if (kind == DC_CKPT) {
            int64_t ck = rd64(&r);
            fol_ckpt(&fol, c, rt, ck, arg != 0);
        } else if (kind == DC_RESTORE) {
            int64_t at = rd64(&r);
            rt_free(rt); /* fresh instances, then the saved state */
            rt = rt_new_part(c, o->workers, me, H);
            src = fol_restore(&fol, c, rt, r.p, (size_t)(r.end - r.p), arg, &e);
            rt_set_steps(rt, at);
        }
        Buf *b = &send[0];
        buf_reset(b);
        put32(b, src);
        put32(b, (int32_t)strlen(e.msg));
        buf_append(b, e.msg, strlen(e.msg));
        put_figures(c, rt, b);
        fol_report(&fol, b);
        if (kind == DC_STEP)
            put_changes(c, rt, b);
        else if (kind == DC_CONTENTS)
            put_contents(c, rt, arg, b);
        else if (kind == DC_READ && arg >= 0 && arg < cs.nin && !input_remote(cs.in[arg])) {
            InputConn *ic = cs.in[arg];
            Kept *k = &kept[arg];
            int64_t max = rd64(&r);
            Err re = {0};
            int rrc = 0;
            if (rd32(&r)) {
                InPos pos;
                rd_pos(&r, &pos);
                rrc = input_seek(ic, &pos, &re);
            }
            if (!k->a)
                k->a = arena_new(1 << 20);
            if (!k->head)
                k->base = input_rows(ic);
            Piece *list = NULL;
            int64_t n = rrc ? -1 : input_next(ic, max, k->a, 1, &list, &re);
            if (n < 0) { /* the reply says why instead */
                buf_reset(b);
                put32(b, re.code ? re.code : SL_EIO);
                put32(b, (int32_t)strlen(re.msg));
                buf_append(b, re.msg, strlen(re.msg));
            } else {
                for (Piece *pc = list; pc; pc = pc->next)
                    if (!pc->chunk)
                        sl_panic("a file input gave a piece without rows");
                piece_list_append(&k->head, &k->tail, list);
                k->n += n;
                InPos pos;
                input_pos(ic, &pos);
                put64(b, n);
                put_pos(b, &pos);
                put32(b, input_done(ic));
                put64(b, (int64_t)ft_hash_pieces(list, 0));
            }
        } else if (kind == DC_LOOKUP) {
            int lw = rd32(&r), kn = rd32(&r);
            const uint8_t *k = kn >= 0 ? rd_bytes(&r, (size_t)kn) : NULL;
            uint32_t n = 0;
            const uint8_t *row = NULL;
            if (!r.bad && k && lw >= 0 && lw < rt_workers(rt) && arg >= 0 && arg < c->nnodes &&
                c->nodes[arg]->k == OPK_UPSERT)
                row = op_upsert_row(rt_op(rt, lw, arg), k, (size_t)kn, &n);
            put32(b, row ? (int32_t)n : 0);
            if (row)
                buf_append(b, row, n);
        } else if (kind == DC_STOP)
            stop = true;
        net_exchange(send, recv);
    }
    for (int h = 0; h < H; h++) {
        buf_free(&send[h]);
        buf_free(&recv[h]);
    }
    sl_free(send);
    sl_free(recv);
    arena_free(a);
    if (fol.pid) {
        Buf junk = BUF_INIT;
        ckpt_reap(fol.fd, fol.pid, &junk);
        buf_free(&junk);
    }
    buf_free(&fol.report);
    sl_free(fol.prev_state);
    for (int j = 0; j < cs.nin; j++)
        if (kept[j].a)
            arena_free(kept[j].a);
    sl_free(kept);
    store_close(fol.st);
    rt_free(rt);
    connectors_close(&cs);
    return rc;
}

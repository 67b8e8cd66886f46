/*
 * pipeline/dist.c - scale-out: one pipeline over H processes (the ranks of
 * an MPI job, cluster/net.h), W workers in all spread evenly over them.
 *
 * Rank 0 is the coordinator: it runs the whole controller of pipeline.c
 * (connectors, HTTP API, step boundaries, transactions, journal, outputs:
 * those written elsewhere through proxies)
 * over the distributed step backend (backend.h) implemented here, whose
 * runtime holds rank 0's own share of the workers. Every other rank is a
 * follower running pipeline_follow (follow.c): a loop that receives one
 * command at a time from the coordinator and answers it. All hosts therefore step in
 * lockstep: a step is one STEP command to every host (a host with no
 * input still steps), during which the operators' exchanges move rows
 * between hosts, then one reply from every host.
 *
 * What travels (each a net_exchange):
 *  - STEP: when the step's input arrived (wall clock: its outputs' lag),
 *    the step's memory allowance (limit, floor, retry; memory.c: each host
 *    bounds its workers by its own resident memory, and the hosts of a
 *    bounded step agree whether to undo it, runtime/worker.c),
 *    the relations whose changes the coordinator wants (its own
 *    outputs' views, egress subscriptions), then the input pieces of the
 *    follower's workers (pend_set_input splits the step's input over all
 *    W workers): generated rows travel as ranges (connector, plan, first
 *    row, count), so every host generates its own share; parsed rows
 *    travel encoded. (Every command also carries the egress watch changes,
 *    op_sink_watch, since the last one.)
 *    Reply: the host's error, if any; its figures (memory, CPU, state,
 *    bytes exchanged, per relation changes and rows, divisions by zero,
 *    its memory per stateful node, its spill cache, whether a spill
 *    failed there, and where its step passed its allowance: /stats
 *    memory.hosts[], memory.c's judge, pmem_step_failed);
 *    and the step's changes of the wanted views, which the coordinator
 *    merges with its own (pipeline_changes).
 *    Output connectors belong to hosts round-robin (io's
 *    connectors_open_part: the k-th on host k % H, a proxy elsewhere).
 *    When one lives on a host other than the coordinator, the reply
 *    exchange also carries, from every host (coordinator included) to
 *    each such host, the sender's step status and its changes of the
 *    views that host writes (put_owner_part); the host merges them with
 *    its own and delivers them through its own Delivery (io/deliver.c:
 *    retries, a durable queue drained by a thread, dead letters; unless
 *    the step is quiet or failed anywhere), and a third exchange brings
 *    the coordinator its error, if any, each of its outputs' offset and
 *    counters (out_reports), which the proxies keep for the journal,
 *    checkpoints and /stats, and their delivery figures.
 *  - CONTENTS rel: every host's materialized contents of rel (/query,
 *    snapshots, --dump).
 *  - READ conn: file, kafka and postgres_cdc inputs (and s3_input parts)
 *    belong to hosts round-robin (io's connectors_open_part); the owner
 *    goes back to its start (bootstrapping reads it again: input_rewind),
 *    seeks (at a restart, and after reading it again), reads (while replaying: up to the journaled position) and
 *    parses up to N rows and keeps them, and replies with their count, its
 *    new position and their hash (the coordinator journals them), when it
 *    may produce again and the rows' source times (kafka_input, for
 *    /stats); the coordinator's pending input
 *    holds a placeholder piece, which pend_set_input gives to the owner's
 *    workers and STEP names as (connector, first row, count). A STEP
 *    consumes everything kept; DROP (an aborted transaction) discards it.
 *  - LOOKUP node: the current row of one key of a PRIMARY KEY table on
 *    the host that owns it (partial updates through HTTP, resolve.c).
 *  - PING: figures only; sent when the coordinator has been idle for a
 *    second, so that followers (and the step watchdog) see it alive.
 *  - CKPT step: phase one of a checkpoint (ckpt.c): the follower forks a
 *    child that saves its workers' state into the shared storage, and
 *    goes on (having synced the outputs it writes, whose offsets the
 *    manifest records); the child's report (file names per worker and node) rides
 *    on the follower's next reply after it finished. The coordinator
 *    writes the manifest (phase two) once every host reported success.
 *  - RESTORE step: rebuild the follower's workers from a manifest's state.
 *  - OUTSET j: output connector j, which the follower writes, goes on from
 *    an offset with the given counters and the delivery counters a
 *    checkpoint restored, if any (output_truncate at a start or a
 *    restart); the reply says the offset it resumes at. Once every
 *    output it writes is positioned the follower opens its Delivery,
 *    which queues again what its storage still holds for them.
 *  - RELEASE: per input the host reads, the position of the oldest
 *    checkpoint kept: its source may drop what precedes it
 *    (input_release: postgres_cdc_input confirms its slot up to there).
 *  - BOOT first: the next STEP is a bootstrap step (pipeline/boot.h) of
 *    the plan that follows (per node: runs, new, fed from which stored
 *    stream), which every host runs over its own share of the stored
 *    state (first: the stored streams' integrals are fed); then per
 *    output the host writes that is a new destination of a kept
 *    materialized view, the view's contents (every host's, gathered by
 *    CONTENTS), which replace that step's changes for it (a snapshot).
 *  - STOP: the last figures (the follower's deliver_finish gives up at
 *    once: the coordinator waited for every host's queues already); the
 *    follower leaves.
 * Every reply's figures end with the host's delivery figures
 * (deliver_report_put: per output it writes sent, acknowledged, retried,
 * dead-lettered, pending, lag, a drain thread's fatal error, dead letters
 * kept in memory), which the coordinator's Delivery keeps in its proxies
 * (backpressure, /stats, GET /dead_letter, the wait at the end), then a
 * finished checkpoint report when there is one.
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
#include "../io/deliver.h"
#include "../zset/key.h"
#include "backend.h"
#include "boot.h"
#include "dist_wire.h"
#include "journal.h"
#include "stats.h"


/* ---------------------------------------------------------------- coordinator */

/* A host's figures as of its last reply. */
typedef struct HostFig {
    bool valid;
    int64_t rss, peak, state_bytes, cpu_ms, xbytes, steps;
    int64_t xusecs;                  /* time in exchanges between hosts */
    int64_t *rel_changes, *rel_rows; /* per relation */
    int64_t *divzero;                /* per node */
    int64_t arena;                   /* its workers' step arenas */
    int64_t mem_node;                /* where its last step passed its allowance, -1 */
    int64_t cache;                   /* its cache of spilled blocks */
    int64_t spill_failed;            /* a spill failed there (its state stays in memory) */
    int64_t spill[7];                /* its spill counters (put_figures) */
    NodeMem *nodes;                  /* its stateful nodes (node order) */
    int nnodes;
} HostFig;

/* The distributed backend (backend.h): the coordinator's side. */
typedef struct Dist {
    Backend be;               /* be.rt: this host's workers, 0..nl-1 */
    const Circuit *c;
    Connectors *cs;
    int nl;                   /* workers of this host */
    Piece **rin;              /* [global worker][relation]: other hosts' step input */
    Buf *rchg;                /* per relation: this step's changes from other hosts */
    HostFig *hf;              /* per host */
    Buf *dsend, *drecv;       /* per host: message buffers */
    Buf dwatch;               /* egress watch changes for the next command */
    int *watchers;            /* per relation: egress watches on minus off */
    bool spread;              /* outputs_spread: some output is written elsewhere */
    double last_net;
    bool stopped;
    BackendReportFn report;   /* checkpoint reports go there (ckpt_begin) */
    void *report_arg;
    int64_t report_step;
    int reports_pending;
} Dist;

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
    f->arena = rd64(r);
    f->mem_node = rd64(r);
    f->cache = rd64(r);
    f->spill_failed = rd64(r);
    for (int i = 0; i < 7; i++)
        f->spill[i] = rd64(r);
    int32_t nn = rd32(r);
    if (nn < 0 || nn > c->nnodes)
        r->bad = true;
    f->nnodes = 0;
    for (int i = 0; i < nn && !r->bad; i++) {
        NodeMem *d = &f->nodes[f->nnodes];
        d->node = rd32(r);
        d->rows = rd64(r);
        d->bytes = (size_t)rd64(r);
        d->disk_bytes = (size_t)rd64(r);
        d->cache_hits = rd64(r);
        d->cache_misses = rd64(r);
        d->trace_bytes = (size_t)rd64(r);
        if (r->bad || d->node < 0 || d->node >= c->nnodes ||
            !(d->kind = backend_mem_kind(c->nodes[d->node]->k))) {
            r->bad = true;
            break;
        }
        d->rel = c->nodes[d->node]->owner;
        f->nnodes++;
    }
    f->valid = !r->bad;
}

/* Start a command of kind to every follower (header + watch changes). */
static void cmd_begin(Dist *d, int kind, int32_t arg)
{
    for (int h = 1; h < d->be.hosts; h++) {
        Buf *b = &d->dsend[h];
        buf_reset(b);
        put32(b, kind);
        put32(b, arg);
        put64(b, rt_steps(d->be.rt));
        put32(b, (int32_t)(d->dwatch.n / 8));
        buf_append(b, d->dwatch.p, d->dwatch.n);
    }
    buf_reset(&d->dwatch);
}

static void send_cmd(Dist *d)
{
    buf_reset(&d->dsend[0]);
    net_exchange(d->dsend, d->drecv);
    d->last_net = pipe_now();
}

/* Gather every follower's reply into d->drecv[h]. */
static void gather_replies(Dist *d)
{
    for (int h = 0; h < d->be.hosts; h++)
        buf_reset(&d->dsend[h]);
    net_exchange(d->dsend, d->drecv);
    d->last_net = pipe_now();
}

/* Host h's delivery figures (deliver_report_put there) into the proxies
   of its outputs. */
static void take_delivery(Dist *d, int h, Rd *r)
{
    int32_t len = rd32(r);
    const uint8_t *p = len > 0 ? rd_bytes(r, (size_t)len) : NULL;
    if (len < 0 || (len > 0 && !p)) {
        r->bad = true;
        return;
    }
    char host[96];
    snprintf(host, sizeof(host), "%d (%s)", h, net_host_name(h));
    if (p && deliver_report_take(d->cs, host, p, (size_t)len))
        r->bad = true;
}

/* Parse the common head of host h's reply: status and figures. */
static int reply_head(Dist *d, int h, Rd *r, Err *err)
{
    int rc = rd32(r);
    int32_t mlen = rd32(r);
    const uint8_t *msg = mlen > 0 ? rd_bytes(r, (size_t)mlen) : NULL;
    if (rc && !r->bad)
        err_set(err, rc, "host %d (%s): %.*s", h, net_host_name(h), (int)mlen,
                msg ? (const char *)msg : "");
    Rd rest = *r;
    read_figures(d->c, &rest, &d->hf[h]);
    if (!rest.bad)
        take_delivery(d, h, &rest);
    if (!rest.bad && rd32(&rest)) { /* a checkpoint report */
        int64_t step = rd64(&rest);
        int32_t len = rd32(&rest);
        const uint8_t *text = len >= 0 ? rd_bytes(&rest, (size_t)len) : NULL;
        if (text && d->report) {
            if (step == d->report_step && d->reports_pending > 0)
                d->reports_pending--;
            d->report(d->report_arg, h, step, (const char *)text, (size_t)len);
        }
    }
    if (rc && !r->bad)
        return rc; /* (a follower that could not start sends no figures) */
    *r = rest;
    if (r->bad)
        return err_set(err, SL_ERUNTIME, "host %d (%s): malformed reply", h, net_host_name(h));
    return 0;
}

/* A reader of host h's reply. */
static Rd reply_of(Dist *d, int h)
{
    return (Rd){d->drecv[h].p, d->drecv[h].p + d->drecv[h].n, false};
}

/* Host h's reply, read past its head into *r; false, the host's error
   printed, when it reports one. */
static bool reply_ok(Dist *d, int h, Rd *r)
{
    *r = reply_of(d, h);
    Err e = {0};
    if (!reply_head(d, h, r, &e))
        return true;
    fprintf(stderr, "sluice: %s\n", e.msg);
    return false;
}

static void put_pieces(Dist *d, Buf *b, int lw, int rel, Piece *list)
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
            for (int j = 0; j < d->cs->nin && conn < 0; j++)
                if (input_gen(d->cs->in[j]) == pc->src)
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

/* The third exchange of a step when outputs are spread: each host of
   output connectors wrote them (or not: a quiet step, or one that failed
   somewhere) and reports its error, if any, and each one's offset and
   counters, which its proxy here takes. Returns rc or the first error. */
static int out_reports(Dist *d, int rc, Err *err)
{
    for (int h = 0; h < d->be.hosts; h++)
        buf_reset(&d->dsend[h]);
    net_set_activity("waiting for the output connectors' hosts");
    net_exchange(d->dsend, d->drecv);
    d->last_net = pipe_now();
    for (int h = 1; h < d->be.hosts; h++) {
        if (!host_writes_any(d->cs, h))
            continue;
        Rd r = reply_of(d, h);
        int wrc = rd32(&r);
        int32_t mlen = rd32(&r);
        const uint8_t *msg = mlen > 0 ? rd_bytes(&r, (size_t)mlen) : NULL;
        int32_t n = rd32(&r);
        for (int k = 0; k < n && !r.bad; k++) {
            int32_t j = rd32(&r);
            int64_t off = rd64(&r), records = rd64(&r), bytes = rd64(&r);
            if (r.bad || j < 0 || j >= d->cs->nout || output_owner(d->cs->out[j]) != h)
                r.bad = true;
            else
                output_remote_update(d->cs->out[j], off, records, bytes);
        }
        if (!r.bad)
            take_delivery(d, h, &r);
        if (r.bad) {
            if (!rc)
                rc = err_set(err, SL_ERUNTIME, "host %d (%s): malformed output report", h,
                             net_host_name(h));
        } else if (wrc && !rc) {
            rc = err_set(err, wrc, "host %d (%s): %.*s", h, net_host_name(h), (int)mlen,
                         msg ? (const char *)msg : "");
        }
    }
    return rc;
}

/* rt_step over every host: ships d->rin, steps, gathers changes + figures
   (and, with outputs on other hosts, sends those hosts every host's
   changes of their views and takes their reports: out_reports). */
static int d_step(Backend *be, bool quiet, Err *err)
{
    Dist *d = (Dist *)be;
    const Circuit *c = d->c;
    int H = be->hosts;
    cmd_begin(d, DC_STEP, quiet);
    for (int h = 1; h < H; h++) {
        Buf *b = &d->dsend[h];
        int64_t wbits; /* when the step's input arrived: its outputs' lag */
        memcpy(&wbits, &be->src_wall, 8);
        put64(b, wbits);
        put64(b, be->step_limit); /* the step's memory allowance (0: none) */
        put64(b, be->step_floor);
        put64(b, be->step_retry);
        /* the relations whose changes the coordinator wants */
        size_t at = b->n;
        int32_t nw = 0;
        put32(b, 0);
        for (int rel = 0; rel < c->nrels; rel++)
            if (d->watchers[rel] > 0 || host_writes(d->cs, 0, rel)) {
                put32(b, rel);
                nw++;
            }
        memcpy(b->p + at, &nw, 4);
        int lo = be_first_worker(be, h), hi = be_first_worker(be, h + 1);
        for (int w = lo; w < hi; w++)
            for (int rel = 0; rel < c->nrels; rel++) {
                Piece **slot = &d->rin[(size_t)w * (size_t)c->nrels + (size_t)rel];
                put_pieces(d, b, w - lo, rel, *slot);
                *slot = NULL;
            }
    }
    char what[96];
    snprintf(what, sizeof(what), "in step %lld", (long long)rt_steps(be->rt) + 1);
    net_set_activity(what);
    send_cmd(d);
    int rc = rt_step(be->rt, err);
    /* the replies; meanwhile the hosts of outputs get every host's changes */
    for (int h = 0; h < H; h++) {
        buf_reset(&d->dsend[h]);
        if (h > 0 && d->spread && host_writes_any(d->cs, h))
            put_owner_part(c, be->rt, d->cs, h, /* (undone here: failed somewhere) */
                           rc || !rt_rolled_back(be->rt) ? rc : SL_ERUNTIME, &d->dsend[h]);
    }
    net_exchange(d->dsend, d->drecv);
    d->last_net = pipe_now();
    for (int i = 0; i < c->nrels; i++)
        buf_reset(&d->rchg[i]);
    for (int h = 1; h < H; h++) {
        Rd r = reply_of(d, h);
        Err e = {0};
        if (reply_head(d, h, &r, &e)) {
            if (!rc)
                rc = err_set(err, e.code, "%s", e.msg);
            continue;
        }
        int32_t n = rd32(&r);
        for (int k = 0; k < n && !r.bad; k++) {
            int32_t rel = rd32(&r);
            int64_t len = rd64(&r);
            const uint8_t *data = len >= 0 ? rd_bytes(&r, (size_t)len) : NULL;
            if (r.bad || rel < 0 || rel >= c->nrels)
                break;
            buf_append(&d->rchg[rel], data, (size_t)len);
        }
        if (r.bad && !rc)
            rc = err_set(err, SL_ERUNTIME, "host %d (%s): malformed step reply", h,
                         net_host_name(h));
    }
    if (d->spread)
        rc = out_reports(d, rc, err);
    net_set_activity("between steps");
    return rc;
}

static int d_mem_node(Backend *be, int *host, char *name, size_t n);

/* A step over many hosts undoes itself only when it was bounded and a
   host passed its allowance (every host agreed: worker.c's hosts_agree);
   reject.c, which finds the rows at fault, needs one host. */
static bool d_rolled_back(Backend *be)
{
    char name[64];
    int h;
    return rt_rolled_back(be->rt) && d_mem_node(be, &h, name, sizeof(name)) != -1;
}

static void d_set_input(Backend *be, int w, int rel, Piece *list)
{
    Dist *d = (Dist *)be;
    if (w < d->nl)
        rt_set_input(be->rt, w, rel, list);
    else /* another host's worker: d_step ships it */
        d->rin[(size_t)w * (size_t)d->c->nrels + (size_t)rel] = list;
}

static void d_changes(Backend *be, int rel, BatchBuilder *bb)
{
    Dist *d = (Dist *)be;
    backend_local_changes(be->rt, d->c->rels[rel].sink, bb);
    size_t pos = 0;
    XRec x;
    while (xrec_next(&d->rchg[rel], &pos, &x)) /* other hosts' */
        bb_add(bb, x.k, x.kn, NULL, 0, x.w);
}

static void d_watch(Backend *be, int rel, bool on)
{
    Dist *d = (Dist *)be;
    d->watchers[rel] += on ? 1 : -1;
    backend_local_watch(be->rt, d->c->rels[rel].sink, on);
    put32(&d->dwatch, rel);
    put32(&d->dwatch, on);
}

/* Output connector j resumes at offset on its host: here, or the host
   whose proxy it is here (which reports the offset it then has: a sink
   that finds later steps already written resumes past them). */
static int d_out_truncate(Backend *be, int j, int64_t offset, Err *err)
{
    Dist *d = (Dist *)be;
    OutputConn *oc = d->cs->out[j];
    if (!output_remote(oc))
        return output_truncate(oc, offset, err);
    int owner = output_owner(oc);
    int64_t records = output_records(oc), bytes = output_bytes(oc);
    cmd_begin(d, DC_OUTSET, j);
    put64(&d->dsend[owner], offset);
    put64(&d->dsend[owner], records);
    put64(&d->dsend[owner], bytes);
    int64_t at; /* the delivery counters a checkpoint restored */
    DeliverCounts dc;
    bool saved = deliver_saved_counts(oc, &at, &dc);
    put32(&d->dsend[owner], saved);
    if (saved) {
        put64(&d->dsend[owner], at);
        const int64_t v[6] = {dc.changes, dc.sent, dc.acked, dc.retried, dc.dead, dc.counted};
        for (int k = 0; k < 6; k++)
            put64(&d->dsend[owner], v[k]);
    }
    send_cmd(d);
    gather_replies(d);
    int rc = 0;
    for (int h = 1; h < be->hosts; h++) {
        Rd r = reply_of(d, h);
        Err e = {0};
        if (reply_head(d, h, &r, &e)) {
            if (h == owner && !rc)
                rc = err_set(err, e.code ? e.code : SL_EIO, "%s", e.msg);
            else if (h != owner)
                fprintf(stderr, "sluice: %s\n", e.msg);
            continue;
        }
        if (h != owner)
            continue;
        int64_t now = rd64(&r);
        if (r.bad)
            rc = err_set(err, SL_ERUNTIME, "host %d (%s): malformed reply", h, net_host_name(h));
        else
            output_remote_update(oc, now, records, bytes);
    }
    return rc;
}

/* Append every host's materialized contents of rel (xrec records). */
static void d_contents(Backend *be, int rel, Buf *out)
{
    Dist *d = (Dist *)be;
    rt_sink_contents(be->rt, d->c->rels[rel].sink, out);
    cmd_begin(d, DC_CONTENTS, rel);
    send_cmd(d);
    gather_replies(d);
    for (int h = 1; h < be->hosts; h++) {
        Rd r;
        if (!reply_ok(d, h, &r))
            continue;
        int64_t len = rd64(&r);
        const uint8_t *data = len > 0 ? rd_bytes(&r, (size_t)len) : NULL;
        if (data)
            buf_append(out, data, (size_t)len);
    }
}

/* The current row of PRIMARY KEY table node's key on the worker that
   owns it: this host's, or another's (copied into a). */
static const uint8_t *d_lookup(Backend *be, int node, const uint8_t *k, size_t kn, Arena *a)
{
    Dist *d = (Dist *)be;
    int H = be->hosts, w = op_route(k, kn, be->workers), host = 0;
    uint32_t n = 0;
    if (w < d->nl)
        return op_upsert_row(rt_op(be->rt, w, node), k, kn, &n);
    while (host + 1 < H && be_first_worker(be, host + 1) <= w)
        host++;
    cmd_begin(d, DC_LOOKUP, node);
    Buf *b = &d->dsend[host];
    put32(b, w - be_first_worker(be, host));
    put32(b, (int32_t)kn);
    buf_append(b, k, kn);
    send_cmd(d);
    gather_replies(d);
    const uint8_t *row = NULL;
    for (int h = 1; h < H; h++) {
        Rd r;
        if (!reply_ok(d, h, &r))
            continue;
        int32_t len = rd32(&r);
        const uint8_t *data = len > 0 ? rd_bytes(&r, (size_t)len) : NULL;
        if (h == host && data) {
            uint8_t *copy = arena_alloc(a, (size_t)len);
            memcpy(copy, data, (size_t)len);
            row = copy;
        }
    }
    return row;
}

/* Scale-out file inputs: host input_owner() reads up to max rows of
   connector conn and keeps them; *list gets one placeholder piece (chunk
   and fill NULL, plan = conn, start = first row number, count) that
   pend_set_input gives to that host's workers. Updates the proxy's
   position; *hash gets the rows' hash (computed there). Other inputs are
   read here. -1 on an I/O error. */
static int64_t d_read(Backend *be, int conn, int64_t max, Arena *a, Piece **list,
                      uint64_t *hash, Err *err)
{
    Dist *d = (Dist *)be;
    InputConn *ic = d->cs->in[conn];
    if (!input_remote(ic)) {
        int64_t got = input_next(ic, max, a, 1, list, err);
        if (hash && got > 0)
            *hash = ft_hash_pieces(*list, 0);
        return got;
    }
    int owner = input_owner(ic);
    InPos seek;
    bool rewind = input_take_rewind(ic), seeking = input_take_seek(ic, &seek);
    cmd_begin(d, DC_READ, conn);
    Buf *b = &d->dsend[owner];
    put64(b, max);
    put32(b, rewind); /* back to its start first (bootstrapping: input_rewind) */
    put32(b, seeking);
    if (seeking)
        put_pos(b, &seek);
    InPos to;
    bool target = input_replay_target(ic, &to); /* a replay reads up to it */
    put32(b, target);
    if (target)
        put_pos(b, &to);
    send_cmd(d);
    gather_replies(d);
    int64_t n = -1;
    for (int h = 1; h < be->hosts; h++) {
        Rd r = reply_of(d, h);
        Err e = {0};
        if (reply_head(d, h, &r, &e)) {
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
        uint64_t rows_hash = (uint64_t)rd64(&r);
        double wait;
        int64_t wbits = rd64(&r), times[INPUT_TIMES_MAX];
        memcpy(&wait, &wbits, 8);
        int32_t nts = rd32(&r);
        if (nts < 0 || nts > INPUT_TIMES_MAX)
            r.bad = true;
        for (int i = 0; i < nts && !r.bad; i++)
            times[i] = rd64(&r);
        if (r.bad || got < 0 || !(wait >= 0 && wait < 3600)) {
            err_set(err, SL_ERUNTIME, "host %d (%s): malformed read reply", h, net_host_name(h));
            continue;
        }
        int64_t first = input_rows(ic);
        input_remote_update(ic, &pos, done, wait, times, nts);
        if (hash)
            *hash = rows_hash;
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

/* Send the command begun, gather the replies and read their heads (the
   figures, deliveries and reports they carry); a host's error is printed. */
static void send_logged(Dist *d)
{
    send_cmd(d);
    gather_replies(d);
    for (int h = 1; h < d->be.hosts; h++) {
        Rd r;
        reply_ok(d, h, &r);
    }
}

/* A command whose replies carry the figures alone. */
static void figures_only(Dist *d, int kind)
{
    cmd_begin(d, kind, 0);
    send_logged(d);
}

/* Input sources may drop what precedes pos[j]: here, or on the host that
   reads input j (one RELEASE command: each host its inputs' positions). */
static void d_release(Backend *be, const InPos *pos)
{
    Dist *d = (Dist *)be;
    bool any = false;
    for (int j = 0; j < d->cs->nin; j++) {
        if (input_remote(d->cs->in[j]))
            any = true;
        else
            input_release(d->cs->in[j], &pos[j]);
    }
    if (!any || d->stopped)
        return;
    cmd_begin(d, DC_RELEASE, 0);
    for (int h = 1; h < be->hosts; h++) {
        Buf *b = &d->dsend[h];
        size_t at = b->n;
        int32_t n = 0;
        put32(b, 0);
        for (int j = 0; j < d->cs->nin; j++)
            if (input_remote(d->cs->in[j]) && input_owner(d->cs->in[j]) == h) {
                put32(b, j);
                put_pos(b, &pos[j]);
                n++;
            }
        memcpy(b->p + at, &n, 4);
    }
    send_logged(d);
}

/* Input read and not stepped was thrown away: the hosts drop what they
   keep. */
static void d_drop(Backend *be)
{
    Dist *d = (Dist *)be;
    if (!d->stopped)
        figures_only(d, DC_DROP);
}

/* Keep the followers (and their watchdogs) company when idle: once a
   second; often while a checkpoint waits for reports. */
static void d_tick(Backend *be)
{
    Dist *d = (Dist *)be;
    if (d->stopped)
        return;
    double every = d->reports_pending > 0 ? 0.01 : 1.0;
    if (pipe_now() - d->last_net >= every)
        figures_only(d, DC_PING);
}

static void d_poll(Backend *be)
{
    Dist *d = (Dist *)be;
    if (!d->stopped)
        figures_only(d, DC_PING);
}

/* Checkpoints, phase one on the other hosts: each forks a child that
   saves its share (all of it when full) into the storage and sends its
   report with a later reply. */
static void d_ckpt_begin(Backend *be, int64_t step, bool full, BackendReportFn fn, void *arg)
{
    Dist *d = (Dist *)be;
    d->report = fn;
    d->report_arg = arg;
    d->report_step = step;
    d->reports_pending = be->hosts - 1;
    cmd_begin(d, DC_CKPT, full);
    for (int h = 1; h < be->hosts; h++)
        put64(&d->dsend[h], step);
    send_logged(d);
}

static void d_ckpt_abandon(Backend *be)
{
    Dist *d = (Dist *)be;
    d->report = NULL;
    d->report_arg = NULL;
    d->reports_pending = 0;
}

/* Every other host rebuilds its workers from a manifest's "state" (JSON
   text; "[]": fresh) at step; SL_EIO with err naming the host when one
   cannot. */
static int d_restore(Backend *be, int64_t step, const char *state, int W0, Err *err)
{
    Dist *d = (Dist *)be;
    cmd_begin(d, DC_RESTORE, W0);
    for (int h = 1; h < be->hosts; h++) {
        put64(&d->dsend[h], step);
        buf_append(&d->dsend[h], state, strlen(state));
    }
    send_cmd(d);
    gather_replies(d);
    int rc = 0;
    for (int h = 1; h < be->hosts; h++) {
        Rd r = reply_of(d, h);
        Err e = {0};
        if (reply_head(d, h, &r, &e) && !rc)
            rc = err_set(err, SL_EIO, "%s", e.msg);
    }
    return rc;
}

/* The next step is a bootstrap step of plan b here and on every other
   host (BOOT), with the snapshots of the new destinations each writes. */
static int d_boot(Backend *be, BootPlan *b, bool first, const Buf *snap, Err *err)
{
    Dist *d = (Dist *)be;
    rt_set_boot(be->rt, b->run, b->is_new, first ? boot_feed(b, be->rt) : NULL);
    cmd_begin(d, DC_BOOT, first);
    for (int h = 1; h < be->hosts; h++) {
        Buf *m = &d->dsend[h];
        boot_plan_put(b, m);
        size_t at = m->n;
        int32_t n = 0;
        put32(m, 0);
        for (int j = 0; snap && j < d->cs->nout; j++)
            if (output_owner(d->cs->out[j]) == h && snap[j].n) {
                put32(m, j);
                put64(m, (int64_t)snap[j].n);
                buf_append(m, snap[j].p, snap[j].n);
                n++;
            }
        memcpy(m->p + at, &n, 4);
    }
    send_cmd(d);
    gather_replies(d);
    int rc = 0;
    for (int h = 1; h < be->hosts; h++) {
        Rd r = reply_of(d, h);
        Err e = {0};
        if (reply_head(d, h, &r, &e) && !rc)
            rc = err_set(err, e.code ? e.code : SL_ERUNTIME, "%s", e.msg);
    }
    return rc;
}

/* The followers wait for the next pipeline's commands (no STOP). */
static void d_detach(Backend *be) { ((Dist *)be)->stopped = true; }

static void d_reset(Backend *be)
{
    Dist *d = (Dist *)be;
    rt_free(be->rt);
    be->rt = rt_new_part(d->c, be->workers, 0, be->hosts);
}

static bool d_gone(Backend *be) { return ((Dist *)be)->stopped; }

static size_t d_state_bytes(Backend *be)
{
    Dist *d = (Dist *)be;
    size_t bytes = backend_local_state_bytes(d->c, be->rt);
    for (int h = 1; h < be->hosts; h++)
        bytes += (size_t)d->hf[h].state_bytes;
    return bytes;
}

static void d_rel_figures(Backend *be, int rel, int64_t *changes, int64_t *rows)
{
    Dist *d = (Dist *)be;
    backend_local_rel_figures(d->c, be->rt, rel, changes, rows);
    for (int h = 1; h < be->hosts; h++) {
        *changes += d->hf[h].rel_changes[rel];
        *rows += d->hf[h].rel_rows[rel];
    }
}

static int64_t d_divzero(Backend *be, int node)
{
    Dist *d = (Dist *)be;
    int64_t dz = rt_divzero_node(be->rt, node);
    for (int h = 1; h < be->hosts; h++)
        dz += d->hf[h].divzero[node];
    return dz;
}

static int d_host_stats(Backend *be, HostStats *out)
{
    Dist *d = (Dist *)be;
    int H = be->hosts;
    for (int h = 0; h < H && out; h++) {
        HostStats *s = &out[h];
        snprintf(s->name, sizeof(s->name), "%s", net_host_name(h));
        s->workers = be_first_worker(be, h + 1) - be_first_worker(be, h);
        if (h == 0) {
            s->steps = rt_steps(be->rt);
            s->rss_bytes = mem_rss_bytes();
            s->state_bytes = backend_local_state_bytes(d->c, be->rt);
            s->exchanged_bytes = rt_remote_bytes(be->rt);
            s->exchange_secs = rt_remote_secs(be->rt);
            s->cpu_msecs = -1; /* pipeline_stats measures it */
        } else {
            s->steps = d->hf[h].steps;
            s->rss_bytes = (size_t)d->hf[h].rss;
            s->state_bytes = (size_t)d->hf[h].state_bytes;
            s->exchanged_bytes = d->hf[h].xbytes;
            s->exchange_secs = (double)d->hf[h].xusecs * 1e-6;
            s->cpu_msecs = d->hf[h].cpu_ms;
        }
    }
    return H;
}

static int d_host_mem(Backend *be, int h, NodeMem *out, HostMem *hm)
{
    Dist *d = (Dist *)be;
    if (h < 1 || h >= be->hosts || !d->hf[h].valid)
        return -1;
    const HostFig *f = &d->hf[h];
    memcpy(out, f->nodes, sizeof(NodeMem) * (size_t)f->nnodes);
    hm->arena_bytes = (size_t)f->arena;
    hm->cache_bytes = f->cache > 0 ? (size_t)f->cache : 0;
    hm->spill_failed = f->spill_failed != 0;
    hm->cache_hits = f->spill[0];
    hm->cache_misses = f->spill[1];
    hm->spilled_runs = f->spill[2];
    hm->runs_on_disk = f->spill[3];
    hm->runs_merged = f->spill[4];
    hm->held_files = f->spill[5];
    hm->held_bytes = f->spill[6] > 0 ? (size_t)f->spill[6] : 0;
    return f->nnodes;
}

static int d_mem_node(Backend *be, int *host, char *name, size_t n)
{
    Dist *d = (Dist *)be;
    int node = rt_step_memory_node(be->rt);
    *host = 0;
    for (int h = 1; h < be->hosts && node == -1; h++)
        if (d->hf[h].valid && d->hf[h].mem_node != -1) {
            node = (int)d->hf[h].mem_node;
            *host = h;
        }
    snprintf(name, n, "%s", net_host_name(*host));
    return node;
}

static void d_summary(Backend *be, int64_t rows, FILE *f)
{
    Dist *d = (Dist *)be;
    int H = be->hosts;
    int64_t xb = rt_remote_bytes(be->rt);
    double peak = (double)mem_peak_rss_bytes(), xs = rt_remote_secs(be->rt);
    for (int h = 1; h < H; h++) {
        xb += d->hf[h].xbytes;
        peak += (double)d->hf[h].peak;
        xs += (double)d->hf[h].xusecs * 1e-6;
    }
    int64_t steps = rt_steps(be->rt) > 0 ? rt_steps(be->rt) : 1;
    fprintf(f,
            "sluice: %d hosts: %.1f MB exchanged between hosts (%.1f bytes per row), "
            "%.3f s per host in exchanges between hosts (%.3f ms per step), peak "
            "memory %.1f MB in all\n",
            H, (double)xb / 1048576.0, rows > 0 ? (double)xb / (double)rows : 0.0, xs / H,
            xs / H / (double)steps * 1e3, peak / 1048576.0);
}

/* Followers told to leave (once per process). */
static bool dismissed;

/* Tell the followers to leave (last figures). */
static void d_stop(Backend *be)
{
    Dist *d = (Dist *)be;
    if (!d->stopped && !dismissed) {
        figures_only(d, DC_STOP);
        d->stopped = dismissed = true;
    }
}

static void d_free(Backend *be)
{
    Dist *d = (Dist *)be;
    d_stop(be);
    for (int h = 0; h < be->hosts; h++) {
        sl_free(d->hf[h].rel_changes);
        sl_free(d->hf[h].rel_rows);
        sl_free(d->hf[h].divzero);
        sl_free(d->hf[h].nodes);
    }
    host_bufs_free(d->dsend, be->hosts);
    host_bufs_free(d->drecv, be->hosts);
    for (int i = 0; i < d->c->nrels; i++)
        buf_free(&d->rchg[i]);
    buf_free(&d->dwatch);
    sl_free(d->watchers);
    sl_free(d->hf);
    sl_free(d->rchg);
    sl_free(d->rin);
    rt_free(be->rt);
    sl_free(d);
}

static const BackendOps dist_ops = {
    .step = d_step,
    .rolled_back = d_rolled_back,
    .set_input = d_set_input,
    .read = d_read,
    .release = d_release,
    .drop = d_drop,
    .changes = d_changes,
    .watch = d_watch,
    .out_truncate = d_out_truncate,
    .contents = d_contents,
    .lookup = d_lookup,
    .ckpt_begin = d_ckpt_begin,
    .ckpt_abandon = d_ckpt_abandon,
    .poll = d_poll,
    .restore = d_restore,
    .reset = d_reset,
    .boot = d_boot,
    .detach = d_detach,
    .tick = d_tick,
    .gone = d_gone,
    .stop = d_stop,
    .state_bytes = d_state_bytes,
    .rel_figures = d_rel_figures,
    .divzero = d_divzero,
    .host_stats = d_host_stats,
    .host_mem = d_host_mem,
    .mem_node = d_mem_node,
    .summary = d_summary,
    .free = d_free,
};

Backend *backend_dist_new(const Circuit *c, Connectors *cs, int W, int H)
{
    Dist *d = sl_calloc(1, sizeof(*d));
    d->be.ops = &dist_ops;
    d->be.rt = rt_new_part(c, W, 0, H);
    d->be.workers = W;
    d->be.hosts = H;
    d->c = c;
    d->cs = cs;
    d->nl = rt_workers(d->be.rt);
    d->rin = sl_calloc((size_t)W * (size_t)(c->nrels + 1), sizeof(Piece *));
    d->rchg = sl_calloc((size_t)c->nrels + 1, sizeof(Buf));
    d->watchers = sl_calloc((size_t)c->nrels + 1, sizeof(int));
    d->spread = outputs_spread(cs);
    d->hf = sl_calloc((size_t)H, sizeof(HostFig));
    for (int h = 0; h < H; h++) {
        d->hf[h].rel_changes = sl_calloc((size_t)c->nrels + 1, sizeof(int64_t));
        d->hf[h].rel_rows = sl_calloc((size_t)c->nrels + 1, sizeof(int64_t));
        d->hf[h].divzero = sl_calloc((size_t)c->nnodes + 1, sizeof(int64_t));
        d->hf[h].nodes = sl_calloc((size_t)c->nnodes + 1, sizeof(NodeMem));
        d->hf[h].mem_node = -1;
    }
    d->dsend = host_bufs_new(H);
    d->drecv = host_bufs_new(H);
    d->last_net = pipe_now();
    return &d->be;
}


void pipeline_dismiss_followers(void)
{
    if (dismissed || !net_active() || net_host() != 0)
        return;
    int H = net_hosts();
    Buf *send = host_bufs_new(H), *recv = host_bufs_new(H);
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
    host_bufs_free(send, H);
    host_bufs_free(recv, H);
    dismissed = true;
}

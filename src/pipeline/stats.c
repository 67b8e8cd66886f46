/*
 * pipeline/stats.c - the figures /stats and /metrics show: per input
 * (connector or a table's HTTP ingress) records, bytes, parse errors,
 * rejected and applied records (read = applied + rejected + buffered),
 * buffered records, end of input, the connector's position, its source's
 * high watermark and the lag between (input_progress, asked before each
 * publication), processing latency (arrival -> end of
 * the step that processed it) and event-time lag (wall clock when the
 * step's outputs were delivered - the record's event time) as weighted
 * log histograms; per output records and bytes, and the delivery figures
 * (sent, acknowledged, retried, dead-lettered, pending, end-to-end lag)
 * that io/deliver.c keeps under its own lock, read by pipeline_stats; per
 * relation changes, net rows and divisions by zero; process figures.
 *
 * The controller publishes into the shared block (Figures, stats.h)
 * under the mutex between steps (stats_publish); a completed step's
 * figures (records processed, latency and lag, the step count, the
 * relations' and outputs' figures, what is still pending) go in one
 * publication (stats_publish_step), before the pushes it consumed are
 * acknowledged, so a reader never sees some of them ahead of the others;
 * pipeline_stats copies the block for any thread, turning histograms into
 * percentiles. State, relation and per host figures are every host's: the
 * step backend (backend.h) sums them.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "../base/mem.h"
#include "pipeline_int.h"

double pipe_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double pipe_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Bucket of v microseconds: exact below 8, then 8 per power of two. */
static int bucket_of(double usecs)
{
    uint64_t v = usecs <= 0 ? 0 : usecs >= 1e15 ? (uint64_t)1e15 : (uint64_t)usecs;
    if (v < 8)
        return (int)v;
    int e = 63 - __builtin_clzll(v); /* >= 3 */
    int idx = (e - 2) * 8 + (int)((v >> (e - 3)) & 7);
    return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

/* Middle of bucket idx, microseconds. */
static double bucket_mid(int idx)
{
    if (idx < 8)
        return idx;
    int e = idx / 8 + 2, sub = idx % 8;
    double lo = (double)((uint64_t)(8 + sub) << (e - 3));
    return lo + (double)((uint64_t)1 << (e - 3)) / 2;
}

void hist_add(Hist *h, double usecs, int64_t weight)
{
    if (weight <= 0)
        return;
    h->b[bucket_of(usecs)] += weight;
    h->n += weight;
}

void hist_summary(const Hist *h, LatStats *out)
{
    static const double q[3] = {0.50, 0.95, 0.99};
    double *dst[3] = {&out->p50, &out->p95, &out->p99};
    out->n = h->n;
    for (int k = 0; k < 3; k++) {
        *dst[k] = 0;
        if (!h->n)
            continue;
        int64_t target = (int64_t)(q[k] * (double)h->n + 0.999999), cum = 0;
        if (target < 1)
            target = 1;
        for (int i = 0; i < HIST_BUCKETS; i++) {
            cum += h->b[i];
            if (cum >= target) {
                *dst[k] = bucket_mid(i) / 1000.0;
                break;
            }
        }
    }
}

void stats_init(Pipeline *p)
{
    const Circuit *c = p->c;
    p->fig.nslots = p->cs.nin + c->nrels;
    p->fig.slots = sl_calloc((size_t)p->fig.nslots, sizeof(Slot));
    for (int j = 0; j < p->cs.nin; j++) {
        InputConn *ic = p->cs.in[j];
        Slot *s = &p->fig.slots[j];
        snprintf(s->name, sizeof(s->name), "%s", input_name(ic));
        s->transport = input_transport(ic);
        s->rel = input_rel(ic);
        s->conn = j;
        s->event_col = input_event_col(ic);
        if (s->event_col < 0 && input_has_source_times(ic))
            s->event_col = EVENT_SOURCE; /* Kafka message timestamps */
        s->backfill = input_backfill(ic);
    }
    for (int i = 0; i < c->nrels; i++) {
        Slot *s = &p->fig.slots[p->cs.nin + i];
        snprintf(s->name, sizeof(s->name), "http");
        s->transport = "http";
        s->rel = i;
        s->conn = -1;
        s->event_col = -1;
        /* an http_input declaration names the endpoint and its event time */
        for (int j = 0; j < p->cs.nin; j++)
            if (input_is_http(p->cs.in[j]) && input_rel(p->cs.in[j]) == i) {
                snprintf(s->name, sizeof(s->name), "%s", input_name(p->cs.in[j]));
                s->event_col = input_event_col(p->cs.in[j]);
            }
    }
    p->fig.rels = sl_calloc((size_t)c->nrels + 1, sizeof(RelStats));
    p->fig.hosts = sl_calloc((size_t)p->be->ops->host_stats(p->be, NULL) + 1, sizeof(HostStats));
    p->fig.outs = sl_calloc((size_t)p->cs.nout + 1, sizeof(OutStats));
    for (int j = 0; j < p->cs.nout; j++) {
        snprintf(p->fig.outs[j].name, sizeof(p->fig.outs[j].name), "%s",
                 output_name(p->cs.out[j]));
        p->fig.outs[j].rel = output_rel(p->cs.out[j]);
        p->fig.outs[j].transport = output_transport(p->cs.out[j]);
        p->fig.outs[j].host = output_owner(p->cs.out[j]);
    }
}

void stats_free(Pipeline *p)
{
    sl_free(p->fig.slots);
    sl_free(p->fig.rels);
    sl_free(p->fig.hosts);
    sl_free(p->fig.outs);
}

/* The units of a completed step: latency now, lag at wall clock wall_us
   (microseconds since epoch), records processed. Under mu. */
static void units_done(Pipeline *p, const Unit *u, double now, int64_t wall_us)
{
    for (; u; u = u->next) {
        Slot *s = &p->fig.slots[u->slot];
        hist_add(&s->lat, (now - u->arrival) * 1e6, u->rows);
        s->processed += u->rows;
        for (int i = 0; i < u->nsamp; i++) {
            int64_t w = (int64_t)(u->samp_w + 0.5);
            hist_add(&s->lag, (double)(wall_us - u->ev[i]), w > 0 ? w : 1);
        }
        p->fig.processed += u->rows;
    }
}

void stats_publish(Pipeline *p) { stats_publish_step(p, NULL, 0, 0); }

void stats_publish_step(Pipeline *p, const Pending *done, double now, int64_t wall_us)
{
    const Circuit *c = p->c;
    Backend *be = p->be;
    /* every host's; walking the state is throttled (memory.c) */
    size_t bytes = pmem_refresh(p, false) ? be->ops->state_bytes(be) : p->fig.state_bytes;
    bool ended = true;
    for (int j = 0; j < p->cs.nin; j++)
        ended = ended && input_done(p->cs.in[j]);
    /* progress outside the mutex: a transport may look at its source */
    InProgress *prog = sl_calloc((size_t)p->cs.nin + 1, sizeof(InProgress));
    for (int j = 0; j < p->cs.nin; j++)
        input_progress(p->cs.in[j], &prog[j]);
    pthread_mutex_lock(&p->mu);
    for (int j = 0; j < p->cs.nin; j++) {
        InputConn *ic = p->cs.in[j];
        Slot *s = &p->fig.slots[j];
        if (input_is_http(ic))
            continue;
        p->fig.input_records += input_rows(ic) - s->records;
        p->fig.input_bytes += input_bytes(ic) - s->bytes;
        s->records = input_rows(ic);
        s->bytes = input_bytes(ic);
        s->errors = input_errors(ic);
        s->eoi = input_done(ic);
        s->prog = prog[j];
        if (!p->fig.published) /* restored from a checkpoint: applied before */
            s->processed = input_rows(ic);
    }
    p->fig.published = true;
    /* the pending input the step consumed is reset right after: none of
       it counts as pending any more */
    const Pending *pend = done == &p->pend ? NULL : &p->pend;
    if (done) {
        units_done(p, done->units, now, wall_us);
        p->fig.last_step = (StepTiming){rt_steps(be->rt), done->rows, now - p->step_t0,
                                        pipe_now() - p->step_t0, p->step_view_cpu};
    }
    for (int k = 0; k < p->fig.nslots; k++)
        p->fig.slots[k].pending = pend ? pend->slot_rows[k] : 0;
    for (int j = 0; j < p->cs.nout; j++) {
        p->fig.outs[j].records = output_records(p->cs.out[j]);
        p->fig.outs[j].bytes = output_bytes(p->cs.out[j]);
        p->fig.outs[j].steps = rt_steps(p->be->rt);
    }
    for (int i = 0; i < c->nrels; i++) {
        RelStats *r = &p->fig.rels[i];
        const Relation *rel = &c->rels[i];
        r->has_sink = rel->sink >= 0;
        be->ops->rel_figures(be, i, &r->changes, &r->rows);
        r->has_wm = rel->is_table && rel->wm_col >= 0;
        r->watermark = rt_watermark(p->be->rt, i, &r->late);
        r->divzero = 0;
        for (int n = 0; n < c->nnodes; n++)
            if (c->nodes[n]->owner == i)
                r->divzero += be->ops->divzero(be, n);
    }
    p->fig.steps = rt_steps(p->be->rt);
    p->fig.state_bytes = bytes;
    p->fig.nhosts = be->ops->host_stats(be, p->fig.hosts);
    p->fig.inputs_ended = ended;
    p->fig.pend_rows = pend ? pend->rows : 0;
    p->tx_pub.state = p->tx.state;
    p->tx_pub.id = p->tx.id;
    p->tx_pub.backfill = p->tx.backfill;
    p->tx_pub.t0 = p->tx.t0;
    p->tx_pub.records = p->tx.state != TX_NONE && pend ? pend->rows : 0;
    pthread_mutex_unlock(&p->mu);
    sl_free(prog);
}

static const char *state_name(PState s)
{
    switch (s) {
    case PS_RUNNING: return "running";
    case PS_PAUSED: return "paused";
    case PS_STOPPING: return "stopping";
    case PS_STOPPED: return "stopped";
    }
    return "?";
}

void pipeline_stats(Pipeline *p, PipeStats *o)
{
    const Circuit *c = p->c;
    memset(o, 0, sizeof(*o));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    o->cpu_msecs = (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
                   (int64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
    o->rss_bytes = mem_rss_bytes();
    o->in = sl_calloc((size_t)p->fig.nslots + 1, sizeof(ConnStats));
    o->out = sl_calloc((size_t)p->cs.nout + 1, sizeof(OutStats));
    o->rels = sl_calloc((size_t)c->nrels + 1, sizeof(RelStats));
    o->nrels = c->nrels;
    double now = pipe_now();
    pthread_mutex_lock(&p->mu);
    o->state = p->stop_req && p->state != PS_STOPPED ? "stopping" : state_name(p->state);
    if (p->boot == BOOT_AWAITING && !p->stop_req)
        o->state = "awaiting_approval";
    else if (p->boot == BOOT_APPROVED && !p->stop_req)
        o->state = "bootstrapping";
    o->step = p->fig.steps;
    o->last_step = p->fig.last_step;
    o->input_records = p->fig.input_records;
    o->input_bytes = p->fig.input_bytes;
    o->processed_records = p->fig.processed;
    o->buffered_records = p->q.rows + p->fig.pend_rows;
    o->buffered_bytes = p->q.bytes;
    o->queue_limit = p->q.limit;
    o->state_bytes = p->fig.state_bytes;
    o->uptime_secs = now - p->t0;
    o->inputs_ended = p->fig.inputs_ended;
    o->txn_id = p->tx_pub.state != TX_NONE ? p->tx_pub.id : 0;
    o->txn_status = p->tx_pub.state == TX_NONE   ? "none"
                    : p->tx_pub.state == TX_OPEN ? "open"
                                                 : "committing";
    o->txn_initiator = p->tx_pub.state == TX_NONE ? NULL : p->tx_pub.backfill ? "backfill" : "api";
    o->txn_records = p->tx_pub.records;
    o->txn_secs = p->tx_pub.state != TX_NONE ? now - p->tx_pub.t0 : 0;
    o->commit_secs = p->tx_pub.state == TX_COMMITTING ? now - p->tx_pub.commit_t0 : 0;
    o->last_commit_id = p->tx_pub.last_commit_id;
    o->last_commit_records = p->tx_pub.last_commit_records;
    o->last_commit_step = p->tx_pub.last_commit_step;
    o->rejected_records = p->rej.total;
    for (int k = 0; k < p->fig.nslots; k++) {
        const Slot *s = &p->fig.slots[k];
        if (s->conn >= 0 && input_is_http(p->cs.in[s->conn]))
            continue; /* shown as the table's HTTP input */
        if (s->conn < 0 && !c->rels[s->rel].is_table)
            continue;
        ConnStats *d = &o->in[o->nin++];
        snprintf(d->name, sizeof(d->name), "%s", s->name);
        d->transport = s->transport;
        d->rel = s->rel;
        d->records = s->records;
        d->bytes = s->bytes;
        d->parse_errors = s->errors;
        d->rejected = s->rejected;
        d->applied = s->processed - s->rejected;
        d->prog = s->prog;
        d->buffered = s->queued + s->pending;
        d->end_of_input = s->conn >= 0 ? s->eoi : false;
        d->backfill = s->backfill;
        d->host = s->conn >= 0 ? input_owner(p->cs.in[s->conn]) : 0;
        hist_summary(&s->lat, &d->latency);
        d->has_lag = s->event_col >= 0 || s->event_col == EVENT_SOURCE;
        if (d->has_lag)
            hist_summary(&s->lag, &d->lag);
    }
    memcpy(o->rels, p->fig.rels, sizeof(RelStats) * (size_t)c->nrels);
    if (p->fig.nhosts > 0) { /* scale-out: this process is host 0 */
        o->nhosts = p->fig.nhosts;
        o->hosts = sl_calloc((size_t)o->nhosts, sizeof(HostStats));
        memcpy(o->hosts, p->fig.hosts, sizeof(HostStats) * (size_t)o->nhosts);
        o->hosts[0].cpu_msecs = o->cpu_msecs;
        o->hosts[0].rss_bytes = o->rss_bytes;
        for (int h = 1; h < o->nhosts; h++) {
            o->rss_bytes += o->hosts[h].rss_bytes;
            o->cpu_msecs += o->hosts[h].cpu_msecs;
        }
    }
    o->nout = p->cs.nout;
    memcpy(o->out, p->fig.outs, sizeof(OutStats) * (size_t)p->cs.nout);
    pmem_stats(p, &o->mem, now);
    pthread_mutex_unlock(&p->mu);
    for (int j = 0; j < o->nout && p->dl; j++) { /* delivery: under its own lock */
        OutStats *d = &o->out[j];
        DeliverStats ds;
        deliver_stats(p->dl, j, &ds);
        d->changes = ds.changes;
        d->sent = ds.sent;
        d->acked = ds.acked;
        d->retried = ds.retried;
        d->dead = ds.dead;
        d->pending = ds.pending;
        d->pending_bytes = ds.pending_bytes;
        d->queued_steps = ds.queued_steps;
        d->failing = ds.failing;
        d->backpressure = ds.backpressure;
        snprintf(d->error, sizeof(d->error), "%.250s", ds.error);
        d->lag.n = ds.lag_n;
        d->lag.p50 = ds.lag_p50 * 1e3;
        d->lag.p95 = ds.lag_p95 * 1e3;
        d->lag.p99 = ds.lag_p99 * 1e3;
        if (ds.backpressure && !o->backpressure[0])
            snprintf(o->backpressure, sizeof(o->backpressure), "%s", d->name);
    }
}

bool pipeline_dead_letters(Pipeline *p, const char *name, Buf *out)
{
    return p->dl && deliver_dead_letters(p->dl, name, out);
}

void pipestats_free(PipeStats *s)
{
    sl_free(s->hosts);
    sl_free(s->in);
    sl_free(s->out);
    sl_free(s->rels);
    sl_free(s->mem.nodes);
    sl_free(s->mem.hosts);
    sl_free(s->mem.host_nodes);
    sl_free(s->mem.total_nodes);
    memset(s, 0, sizeof(*s));
}

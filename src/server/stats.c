/*
 * server/stats.c - GET /stats (JSON, Feldera's shape: global_metrics,
 * inputs[], outputs[], plus per-view figures) and GET /metrics (the same
 * figures as Prometheus text: sluice_* names, seconds and bytes as units,
 * counters ending in _total, latency and lag as summaries with quantiles).
 * Both read a copy of the pipeline's published figures (pipeline_stats)
 * and the egress counters; neither waits for a step.
 *
 * Each figure is declared once: the per-input, latency and per-output
 * figures in tables (in_metrics, lat_metrics, out_metrics, dl_metrics:
 * an output connector's delivery) that give the /stats key and the
 * Prometheus name, type and help together; the pipeline-wide Prometheus
 * figures as one scalar() call each.
 *
 * Also GET /dead_letter?output=NAME: the records an output's destination
 * refused (io/deliver.c keeps them).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "http_int.h"

/* The figures of each input connector, in the order both outputs give
   them: /stats inputs[].metrics[json] and /metrics prom{table, endpoint}. */
typedef struct InMetric {
    const char *json, *prom, *type, *help;
    size_t off;   /* of an int64_t in ConnStats, or of a bool when is_bool */
    bool is_bool;
} InMetric;

static const InMetric in_metrics[] = {
    {"total_records", "sluice_connector_input_records_total", "counter",
     "Records received per input.", offsetof(ConnStats, records), false},
    {"total_bytes", "sluice_connector_input_bytes_total", "counter", "Bytes received per input.",
     offsetof(ConnStats, bytes), false},
    {"num_parse_errors", "sluice_connector_parse_errors_total", "counter",
     "Records rejected per input (malformed or invalid).", offsetof(ConnStats, parse_errors),
     false},
    {"rejected_records", "sluice_connector_rejected_records_total", "counter",
     "Records rejected per input by a runtime error in a step (overflow, bad cast).",
     offsetof(ConnStats, rejected), false},
    {"applied_records", "sluice_connector_applied_records_total", "counter",
     "Records per input that completed steps applied to the table (read = applied + "
     "rejected + buffered; parse errors apart).", offsetof(ConnStats, applied), false},
    {"buffered_records", "sluice_connector_buffered_records", "gauge",
     "Records received but not processed yet, per input.", offsetof(ConnStats, buffered), false},
    {"end_of_input", "sluice_connector_end_of_input", "gauge",
     "1 once an input has reached its end.", offsetof(ConnStats, end_of_input), true},
};

static long long in_value(const ConnStats *ci, const InMetric *m)
{
    const char *p = (const char *)ci + m->off;
    return m->is_bool ? *(const bool *)p : (long long)*(const int64_t *)p;
}

/* The latency figures of each input (milliseconds in /stats, seconds in
   /metrics); the event-time lag only for inputs that have one. */
typedef struct LatMetric {
    const char *json, *prom, *help;
    bool lag;
} LatMetric;

static const LatMetric lat_metrics[] = {
    {"processing_latency_ms", "sluice_connector_processing_latency_seconds",
     "Time from a record's arrival to the end of the step that processed it.", false},
    {"event_time_lag_ms", "sluice_connector_event_time_lag_seconds",
     "Wall-clock time when a step's outputs were delivered minus the record's event time.",
     true},
};

/* The figures of an input connector's lat metric, or NULL when it has none. */
static const LatStats *lat_of(const ConnStats *ci, const LatMetric *m)
{
    if (!m->lag)
        return &ci->latency;
    return ci->has_lag ? &ci->lag : NULL;
}

/* The figures of each output, file outputs (OutStats) and /egress streams
   (EgressStats) alike. */
typedef struct OutMetric {
    const char *json, *prom, *help;
    size_t out_off, eg_off; /* of an int64_t in OutStats, EgressStats */
} OutMetric;

static const OutMetric out_metrics[] = {
    {"transmitted_records", "sluice_output_records_total", "Records written per output.",
     offsetof(OutStats, records), offsetof(EgressStats, records)},
    {"transmitted_bytes", "sluice_output_bytes_total", "Bytes written per output.",
     offsetof(OutStats, bytes), offsetof(EgressStats, bytes)},
};

static long long field_i64(const void *base, size_t off)
{
    return (long long)*(const int64_t *)((const char *)base + off);
}

/* An input's position in its source, the source's high watermark and the
   lag between (InProgress, connector.h) into /stats metrics m. */
static void progress_json(cJSON *m, const InProgress *g)
{
    if (!g->unit)
        return;
    cJSON_AddStringToObject(m, "position_unit", g->unit);
    cJSON_AddNumberToObject(m, "position", (double)g->pos);
    cJSON_AddStringToObject(m, "position_text", g->pos_text);
    if (g->high >= 0) {
        cJSON_AddNumberToObject(m, "high_watermark", (double)g->high);
        cJSON_AddStringToObject(m, "high_watermark_text", g->high_text);
    } else {
        cJSON_AddNullToObject(m, "high_watermark");
    }
    if (g->lag >= 0)
        cJSON_AddNumberToObject(m, "lag", (double)g->lag);
    if (g->nparts) {
        cJSON *ps = cJSON_AddArrayToObject(m, "partitions");
        for (int i = 0; i < g->nparts; i++) {
            const InPartProgress *pp = &g->parts[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "topic", pp->topic);
            cJSON_AddNumberToObject(e, "partition", pp->partition);
            if (pp->offset >= 0)
                cJSON_AddNumberToObject(e, "offset", (double)pp->offset);
            else
                cJSON_AddNullToObject(e, "offset");
            if (pp->high >= 0)
                cJSON_AddNumberToObject(e, "high_watermark", (double)pp->high);
            else
                cJSON_AddNullToObject(e, "high_watermark");
            cJSON_AddItemToArray(ps, e);
        }
    }
    if (g->object_offset >= 0) {
        cJSON_AddStringToObject(m, "object", g->object);
        cJSON_AddNumberToObject(m, "object_offset", (double)g->object_offset);
    }
    if (g->total_bytes >= 0)
        cJSON_AddNumberToObject(m, "total_object_bytes", (double)g->total_bytes);
}

static cJSON *lat_json(const LatStats *l)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "count", (double)l->n);
    cJSON_AddNumberToObject(j, "p50", l->p50);
    cJSON_AddNumberToObject(j, "p95", l->p95);
    cJSON_AddNumberToObject(j, "p99", l->p99);
    return j;
}

/* What both endpoints read: a copy of the pipeline's figures, the egress
   counters of each relation and the checkpoint status. */
typedef struct Figures {
    PipeStats st;
    EgressStats *eg; /* indexed like circuit->rels */
    CkptStatus ck;
} Figures;

static void figures_get(Server *s, Figures *f)
{
    pipeline_stats(s->p, &f->st);
    f->eg = sl_calloc((size_t)s->c->nrels + 1, sizeof(EgressStats));
    egress_stats(s->eg, f->eg, s->c->nrels);
    pipeline_checkpoint_status(s->p, &f->ck);
}

static void figures_free(Figures *f)
{
    pipestats_free(&f->st);
    sl_free(f->eg);
}

/* The delivery figures of an output connector (io/deliver.c):
   changes == acknowledged + dead_lettered + pending. */
static const OutMetric dl_metrics[] = {
    {"changes", "sluice_output_changes_total", "Changes (records) handed to each output.",
     offsetof(OutStats, changes), 0},
    {"sent_records", "sluice_output_sent_records_total",
     "Records sent to each output's destination, every attempt.", offsetof(OutStats, sent), 0},
    {"acknowledged_records", "sluice_output_acknowledged_records_total",
     "Records each output's destination acknowledged.", offsetof(OutStats, acked), 0},
    {"retried_records", "sluice_output_retried_records_total",
     "Records of attempts that failed transiently, per output.", offsetof(OutStats, retried), 0},
    {"dead_lettered_records", "sluice_output_dead_lettered_records_total",
     "Records the destination refused, sent to the dead letters, per output.",
     offsetof(OutStats, dead), 0},
    {"pending_records", "sluice_output_pending_records",
     "Records queued for each output, not yet delivered.", offsetof(OutStats, pending), 0},
    {"pending_bytes", "sluice_output_pending_bytes", "Bytes queued for each output.",
     offsetof(OutStats, pending_bytes), 0},
};

static void delivery_json(cJSON *m, const OutStats *o)
{
    for (size_t i = 0; i < ARRAY_LEN(dl_metrics); i++)
        cJSON_AddNumberToObject(m, dl_metrics[i].json, (double)field_i64(o, dl_metrics[i].out_off));
    cJSON_AddNumberToObject(m, "queued_steps", (double)o->queued_steps);
    cJSON_AddBoolToObject(m, "failing", o->failing);
    cJSON_AddBoolToObject(m, "backpressure", o->backpressure);
    if (o->failing)
        cJSON_AddStringToObject(m, "error", o->error);
    cJSON_AddItemToObject(m, "end_to_end_lag_ms", lat_json(&o->lag));
}

/* Bytes queued for the outputs (delivery queues). */
static size_t egress_pending(const PipeStats *st)
{
    size_t n = 0;
    for (int k = 0; k < st->nout; k++)
        n += (size_t)st->out[k].pending_bytes;
    return n;
}

/* Per relation sums of the nodes its definition made (rels[i], nrels). */
static void mem_by_rel(const Circuit *c, const NodeMem *nodes, int nnodes, NodeMem *rels)
{
    memset(rels, 0, sizeof(NodeMem) * (size_t)c->nrels);
    for (int i = 0; i < nnodes; i++) {
        const NodeMem *d = &nodes[i];
        if (d->rel < 0 || d->rel >= c->nrels)
            continue;
        NodeMem *r = &rels[d->rel];
        r->rel = d->rel;
        r->node++; /* counts nodes here */
        r->rows += d->kind[0] == 's' && !strcmp(d->kind, "sink") ? d->rows : 0;
        r->bytes += d->bytes;
        r->disk_bytes += d->disk_bytes;
        r->cache_hits += d->cache_hits;
        r->cache_misses += d->cache_misses;
    }
}

static void mem_fields(cJSON *e, const NodeMem *d)
{
    cJSON_AddNumberToObject(e, "bytes_in_memory", (double)d->bytes);
    cJSON_AddNumberToObject(e, "bytes_on_disk", (double)d->disk_bytes);
    cJSON_AddNumberToObject(e, "cache_hits", (double)d->cache_hits);
    cJSON_AddNumberToObject(e, "cache_misses", (double)d->cache_misses);
}

/* o.operators: one object per node's figures. */
static void add_operators(cJSON *o, const Circuit *c, const NodeMem *nodes, int n)
{
    cJSON *ops = cJSON_AddArrayToObject(o, "operators");
    for (int i = 0; i < n; i++) {
        const NodeMem *d = &nodes[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "node", d->node);
        cJSON_AddStringToObject(e, "kind", d->kind);
        cJSON_AddStringToObject(e, "relation", c->rels[d->rel].name);
        cJSON_AddNumberToObject(e, "rows", (double)d->rows);
        mem_fields(e, d);
        cJSON_AddItemToArray(ops, e);
    }
}


/* The "operators" and "relations" arrays of nodes into o. */
static void mem_lists(cJSON *o, const Circuit *c, const PipeStats *st, const NodeMem *nodes,
                      int nnodes)
{
    add_operators(o, c, nodes, nnodes);
    NodeMem *rels = sl_calloc((size_t)c->nrels + 1, sizeof(NodeMem));
    mem_by_rel(c, nodes, nnodes, rels);
    cJSON *vs = cJSON_AddArrayToObject(o, "relations");
    for (int i = 0; i < c->nrels; i++) {
        if (!rels[i].node)
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", c->rels[i].name);
        cJSON_AddNumberToObject(e, "operators", rels[i].node);
        cJSON_AddNumberToObject(e, "rows", (double)st->rels[i].rows);
        mem_fields(e, &rels[i]);
        cJSON_AddItemToArray(vs, e);
    }
    sl_free(rels);
}

/* Scale-out: memory.hosts[] (each host's figures and operators) and
   memory.totals (the sums over the hosts; rows per relation are every
   host's already). */
/* A process's spill counters (the memory object's, each host's). */
static void spill_counters_json(cJSON *o, size_t cache_bytes, int64_t hits, int64_t misses,
                                int64_t runs, int64_t on_disk, int64_t merged, int64_t held_files,
                                size_t held_bytes)
{
    cJSON_AddNumberToObject(o, "spill_cache_bytes", (double)cache_bytes);
    cJSON_AddNumberToObject(o, "spill_cache_hits", (double)hits);
    cJSON_AddNumberToObject(o, "spill_cache_misses", (double)misses);
    cJSON_AddNumberToObject(o, "spilled_runs", (double)runs);
    cJSON_AddNumberToObject(o, "spilled_runs_on_disk", (double)on_disk);
    cJSON_AddNumberToObject(o, "spilled_runs_merged", (double)merged);
    cJSON_AddNumberToObject(o, "spill_files_held_for_checkpoint", (double)held_files);
    cJSON_AddNumberToObject(o, "spill_bytes_held_for_checkpoint", (double)held_bytes);
}

static void memory_hosts_json(cJSON *o, const Circuit *c, const PipeStats *st)
{
    const MemStats *m = &st->mem;
    cJSON *hs = cJSON_AddArrayToObject(o, "hosts");
    for (int h = 0; h < m->nhosts; h++) {
        const HostMem *hm = &m->hosts[h];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "host", h);
        if (h < st->nhosts) {
            cJSON_AddStringToObject(e, "name", st->hosts[h].name);
            cJSON_AddNumberToObject(e, "rss_bytes", (double)st->hosts[h].rss_bytes);
        }
        cJSON_AddBoolToObject(e, "reported", hm->valid);
        cJSON_AddNumberToObject(e, "state_bytes", (double)hm->state_bytes);
        cJSON_AddNumberToObject(e, "state_on_disk_bytes", (double)hm->disk_bytes);
        cJSON_AddNumberToObject(e, "step_arena_bytes", (double)hm->arena_bytes);
        spill_counters_json(e, hm->cache_bytes, hm->cache_hits, hm->cache_misses,
                            hm->spilled_runs, hm->runs_on_disk, hm->runs_merged, hm->held_files,
                            hm->held_bytes);
        add_operators(e, c, &m->host_nodes[hm->first], hm->nnodes);
        cJSON_AddItemToArray(hs, e);
    }
    cJSON *t = cJSON_AddObjectToObject(o, "totals");
    cJSON_AddNumberToObject(t, "rss_bytes", (double)st->rss_bytes);
    cJSON_AddNumberToObject(t, "state_bytes", (double)m->total_state_bytes);
    cJSON_AddNumberToObject(t, "state_on_disk_bytes", (double)m->total_disk_bytes);
    cJSON_AddNumberToObject(t, "step_arena_bytes", (double)m->total_arena_bytes);
    mem_lists(t, c, st, m->total_nodes, m->ntotal);
}

/* The "memory" object: the budget, where the process's memory goes, per
   operator (most bytes first) and per view (docs/memory.md); with
   --hosts, per host and in all (memory_hosts_json). */
static void memory_json(cJSON *j, const Circuit *c, const PipeStats *st)
{
    const MemStats *m = &st->mem;
    cJSON *o = cJSON_AddObjectToObject(j, "memory");
    if (m->limit)
        cJSON_AddNumberToObject(o, "limit_bytes", (double)m->limit);
    else
        cJSON_AddNullToObject(o, "limit_bytes");
    cJSON_AddStringToObject(o, "limit_source", m->limit_source ? m->limit_source : "none");
    cJSON_AddNumberToObject(o, "rss_bytes", (double)st->rss_bytes);
    cJSON_AddNumberToObject(o, "state_bytes", (double)m->state_bytes);
    cJSON_AddNumberToObject(o, "state_on_disk_bytes", (double)m->disk_bytes);
    spill_counters_json(o, m->cache_bytes, m->cache_hits, m->cache_misses, m->spilled_runs,
                        m->runs_on_disk, m->runs_merged, m->held_files, m->held_bytes);
    cJSON_AddNumberToObject(o, "step_arena_bytes", (double)m->arena_bytes);
    cJSON_AddNumberToObject(o, "input_queue_bytes", (double)st->buffered_bytes);
    cJSON_AddNumberToObject(o, "output_queue_bytes", (double)egress_pending(st));
    size_t known = m->state_bytes + m->cache_bytes + m->arena_bytes + (size_t)st->buffered_bytes +
                   egress_pending(st);
    cJSON_AddNumberToObject(o, "unaccounted_bytes",
                            st->rss_bytes > known ? (double)(st->rss_bytes - known) : 0);
    cJSON_AddNumberToObject(o, "figures_age_msecs", m->age_secs * 1000.0);
    if (m->spill_dir[0])
        cJSON_AddStringToObject(o, "spill_dir", m->spill_dir);
    if (m->pressure[0])
        cJSON_AddStringToObject(o, "pressure", m->pressure);
    else
        cJSON_AddNullToObject(o, "pressure");
    mem_lists(o, c, st, m->nodes, m->nnodes);
    if (m->nhosts > 1)
        memory_hosts_json(o, c, st);
}

/* The /stats document of figures f. */
static cJSON *stats_doc(Server *s, const Figures *f)
{
    const Circuit *c = s->c;
    const PipeStats st = f->st;
    const EgressStats *eg = f->eg;
    const CkptStatus *ck = &f->ck;
    cJSON *j = cJSON_CreateObject();
    cJSON *g = cJSON_AddObjectToObject(j, "global_metrics");
    cJSON_AddStringToObject(g, "state", st.state);
    cJSON_AddNumberToObject(g, "total_completed_steps", (double)st.step);
    cJSON_AddNumberToObject(g, "total_input_records", (double)st.input_records);
    cJSON_AddNumberToObject(g, "total_input_bytes", (double)st.input_bytes);
    cJSON_AddNumberToObject(g, "total_processed_records", (double)st.processed_records);
    cJSON_AddNumberToObject(g, "rejected_records", (double)st.rejected_records);
    cJSON_AddNumberToObject(g, "buffered_input_records", (double)st.buffered_records);
    cJSON_AddNumberToObject(g, "buffered_input_bytes", (double)st.buffered_bytes);
    cJSON_AddNumberToObject(g, "input_queue_limit_records", (double)st.queue_limit);
    cJSON_AddNumberToObject(g, "rss_bytes", (double)st.rss_bytes);
    cJSON_AddNumberToObject(g, "cpu_msecs", (double)st.cpu_msecs);
    cJSON_AddNumberToObject(g, "uptime_msecs", st.uptime_secs * 1000.0);
    cJSON_AddNumberToObject(g, "state_bytes", (double)st.state_bytes);
    if (st.last_step.step > 0) {
        cJSON *ls = cJSON_AddObjectToObject(g, "last_step");
        cJSON_AddNumberToObject(ls, "step", (double)st.last_step.step);
        cJSON_AddNumberToObject(ls, "records", (double)st.last_step.records);
        cJSON_AddNumberToObject(ls, "view_msecs", st.last_step.view_secs * 1000.0);
        cJSON_AddNumberToObject(ls, "total_msecs", st.last_step.total_secs * 1000.0);
        cJSON_AddNumberToObject(ls, "view_cpu_msecs", st.last_step.view_cpu_secs * 1000.0);
    }
    cJSON_AddBoolToObject(g, "pipeline_complete", st.inputs_ended && st.buffered_records == 0);
    if (st.backpressure[0]) { /* an output's queue past its bound pauses the inputs */
        cJSON *bp = cJSON_AddObjectToObject(g, "backpressure");
        cJSON_AddStringToObject(bp, "output", st.backpressure);
        for (int k = 0; k < st.nout; k++)
            if (!strcmp(st.out[k].name, st.backpressure)) {
                cJSON_AddStringToObject(bp, "view", c->rels[st.out[k].rel].name);
                cJSON_AddNumberToObject(bp, "pending_records", (double)st.out[k].pending);
                cJSON_AddNumberToObject(bp, "pending_bytes", (double)st.out[k].pending_bytes);
            }
    } else {
        cJSON_AddNullToObject(g, "backpressure");
    }
    pthread_mutex_lock(&s->mu);
    int64_t body_bytes = s->body_bytes;
    pthread_mutex_unlock(&s->mu);
    cJSON_AddNumberToObject(g, "http_body_bytes_in_flight", (double)body_bytes);
    cJSON_AddNumberToObject(g, "http_body_bytes_limit", (double)s->o.max_inflight);
    if (st.nhosts > 1) {
        /* scale-out: rss_bytes, cpu_msecs and state_bytes above are sums */
        cJSON *hs = cJSON_AddArrayToObject(g, "hosts");
        for (int h = 0; h < st.nhosts; h++) {
            const HostStats *x = &st.hosts[h];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "host", h);
            cJSON_AddStringToObject(e, "name", x->name);
            cJSON_AddNumberToObject(e, "workers", x->workers);
            cJSON_AddNumberToObject(e, "completed_steps", (double)x->steps);
            cJSON_AddNumberToObject(e, "rss_bytes", (double)x->rss_bytes);
            cJSON_AddNumberToObject(e, "state_bytes", (double)x->state_bytes);
            cJSON_AddNumberToObject(e, "cpu_msecs", (double)x->cpu_msecs);
            cJSON_AddNumberToObject(e, "exchanged_bytes", (double)x->exchanged_bytes);
            cJSON_AddNumberToObject(e, "exchange_msecs", x->exchange_secs * 1000.0);
            cJSON_AddItemToArray(hs, e);
        }
    }
    if (ck->enabled) {
        cJSON *k = cJSON_AddObjectToObject(g, "checkpoint");
        cJSON_AddStringToObject(k, "fault_tolerance", ck->mode);
        cJSON_AddBoolToObject(k, "in_progress", ck->in_progress);
        cJSON_AddNumberToObject(k, "last_step", (double)ck->last_step);
        cJSON_AddNumberToObject(k, "last_secs", ck->last_secs);
        cJSON_AddNumberToObject(k, "last_pause_secs", ck->last_pause_secs);
        cJSON_AddNumberToObject(k, "last_bytes_written", (double)ck->last_bytes);
        if (ck->failure[0])
            cJSON_AddStringToObject(k, "failure", ck->failure);
        if (ck->storage_error[0])
            cJSON_AddStringToObject(k, "storage_error", ck->storage_error);
    }
    cJSON_AddStringToObject(g, "transaction_status", api_txn_status(&st));
    cJSON_AddNumberToObject(g, "transaction_id", (double)st.txn_id);
    if (st.txn_id) {
        cJSON_AddStringToObject(g, "transaction_initiator", st.txn_initiator);
        cJSON_AddNumberToObject(g, "transaction_records", (double)st.txn_records);
        cJSON_AddNumberToObject(g, "transaction_msecs", st.txn_secs * 1000.0);
    }
    memory_json(j, c, &st);
    cJSON *ins = cJSON_AddArrayToObject(j, "inputs");
    for (int k = 0; k < st.nin; k++) {
        const ConnStats *ci = &st.in[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "endpoint_name", ci->name);
        cJSON_AddStringToObject(e, "table", c->rels[ci->rel].name);
        cJSON_AddStringToObject(e, "transport", ci->transport);
        if (ci->backfill)
            cJSON_AddStringToObject(e, "transaction", "backfill");
        if (st.nhosts > 1)
            cJSON_AddNumberToObject(e, "host", ci->host);
        cJSON *m = cJSON_AddObjectToObject(e, "metrics");
        for (size_t i = 0; i < ARRAY_LEN(in_metrics); i++) {
            const InMetric *im = &in_metrics[i];
            if (im->is_bool)
                cJSON_AddBoolToObject(m, im->json, in_value(ci, im));
            else
                cJSON_AddNumberToObject(m, im->json, (double)in_value(ci, im));
        }
        for (size_t i = 0; i < ARRAY_LEN(lat_metrics); i++) {
            const LatStats *l = lat_of(ci, &lat_metrics[i]);
            if (l)
                cJSON_AddItemToObject(m, lat_metrics[i].json, lat_json(l));
        }
        progress_json(m, &ci->prog);
        cJSON_AddItemToArray(ins, e);
    }
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int k = 0; k < st.nout; k++) {
        const OutStats *o = &st.out[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "endpoint_name", o->name);
        cJSON_AddStringToObject(e, "view", c->rels[o->rel].name);
        cJSON_AddStringToObject(e, "transport", o->transport ? o->transport : "file_output");
        if (st.nhosts > 1)
            cJSON_AddNumberToObject(e, "host", o->host);
        cJSON *m = cJSON_AddObjectToObject(e, "metrics");
        for (size_t i = 0; i < ARRAY_LEN(out_metrics); i++)
            cJSON_AddNumberToObject(m, out_metrics[i].json,
                                    (double)field_i64(o, out_metrics[i].out_off));
        cJSON_AddNumberToObject(m, "total_processed_steps", (double)o->steps);
        delivery_json(m, o);
        cJSON_AddItemToArray(outs, e);
    }
    for (int i = 0; i < c->nrels; i++) {
        const EgressStats *e = &eg[i];
        if (!e->subscribers && !e->records && !e->dropped)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "endpoint_name", "http");
        cJSON_AddStringToObject(o, "view", c->rels[i].name);
        cJSON_AddStringToObject(o, "transport", "http");
        cJSON *m = cJSON_AddObjectToObject(o, "metrics");
        cJSON_AddNumberToObject(m, "subscribers", e->subscribers);
        for (size_t k = 0; k < ARRAY_LEN(out_metrics); k++)
            cJSON_AddNumberToObject(m, out_metrics[k].json,
                                    (double)field_i64(e, out_metrics[k].eg_off));
        cJSON_AddNumberToObject(m, "total_processed_steps", (double)e->steps);
        cJSON_AddNumberToObject(m, "dropped_subscribers", (double)e->dropped);
        cJSON_AddItemToArray(outs, o);
    }
    cJSON *views = cJSON_AddObjectToObject(j, "views");
    cJSON *tables = cJSON_AddObjectToObject(j, "tables");
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        const RelStats *rs = &st.rels[i];
        cJSON *v = cJSON_AddObjectToObject(r->is_table ? tables : views, r->name);
        cJSON_AddBoolToObject(v, "materialized", r->materialized);
        if (rs->has_sink) {
            cJSON_AddNumberToObject(v, "rows", (double)rs->rows);
            cJSON_AddNumberToObject(v, "changes", (double)rs->changes);
        }
        cJSON_AddNumberToObject(v, "division_by_zero", (double)rs->divzero);
        if (rs->has_wm) { /* LATENESS: docs/streaming.md */
            cJSON_AddNumberToObject(v, "late_records", (double)rs->late);
            if (rs->watermark == INT64_MIN) {
                cJSON_AddNullToObject(v, "watermark");
            } else {
                Buf t = BUF_INIT;
                text_format(r->types[r->wm_col], rs->watermark, 0, (Str){"", 0}, &t);
                buf_putc(&t, 0);
                cJSON_AddStringToObject(v, "watermark", (char *)t.p);
                buf_free(&t);
            }
        }
    }
    return j;
}

/* GET /dead_letter?output=NAME: the records NAME's destination refused
   (NAME: a view with output connectors, or one connector's full name). */
int stats_dead_letter(Req *q)
{
    const char *name = MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, "output");
    if (!name || !*name)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "GET /dead_letter needs ?output=NAME (a view with an output connector)");
    Buf b = BUF_INIT;
    if (!pipeline_dead_letters(q->s->p, name, &b)) {
        buf_free(&b);
        return req_error(q, MHD_HTTP_NOT_FOUND, "UnknownOutput", NULL,
                         "no output connector of a view named \"%s\"", name);
    }
    cJSON *j = cJSON_ParseWithLength((const char *)b.p, b.n);
    buf_free(&b);
    if (!j)
        return req_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, "DeadLetterUnreadable", NULL,
                         "the dead letters of \"%s\" do not parse as JSON", name);
    return req_json(q, MHD_HTTP_OK, j);
}

int stats_json(Req *q)
{
    Figures f;
    figures_get(q->s, &f);
    cJSON *j = stats_doc(q->s, &f);
    figures_free(&f);
    return req_json(q, MHD_HTTP_OK, j);
}

/* ---------------------------------------------------------------- Prometheus */

/* A label value with \, " and newlines escaped. */
static void label(Buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            buf_putc(b, '\\');
        if (*v == '\n') {
            buf_puts(b, "\\n");
            continue;
        }
        buf_putc(b, *v);
    }
}

static void head(Buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric without labels: its HELP and TYPE lines, then "name value". */
__attribute__((format(printf, 5, 6)))
static void scalar(Buf *b, const char *name, const char *type, const char *help,
                   const char *fmt, ...)
{
    va_list ap;
    head(b, name, type, help);
    buf_printf(b, "%s ", name);
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
    buf_putc(b, '\n');
}

/* One sample labelled with a relation: name{kind="rel"} v. */
static void rel_sample(Buf *b, const char *name, const char *kind, const char *rel, long long v)
{
    buf_printf(b, "%s{%s=\"", name, kind);
    label(b, rel);
    buf_printf(b, "\"} %lld\n", v);
}

static void in_labels(Buf *b, const Circuit *c, const ConnStats *ci)
{
    buf_puts(b, "{table=\"");
    label(b, c->rels[ci->rel].name);
    buf_puts(b, "\",endpoint=\"");
    label(b, ci->name);
    buf_puts(b, "\"");
}

static void summary(Buf *b, const LatMetric *lm, const Circuit *c, const PipeStats *st)
{
    head(b, lm->prom, "summary", lm->help);
    for (int k = 0; k < st->nin; k++) {
        const ConnStats *ci = &st->in[k];
        const LatStats *l = lat_of(ci, lm);
        if (!l)
            continue;
        const double qs[3] = {l->p50, l->p95, l->p99};
        const char *qn[3] = {"0.5", "0.95", "0.99"};
        for (int i = 0; i < 3; i++) {
            buf_puts(b, lm->prom);
            in_labels(b, c, ci);
            buf_printf(b, ",quantile=\"%s\"} %.6f\n", qn[i], qs[i] / 1000.0);
        }
        buf_printf(b, "%s_count", lm->prom);
        in_labels(b, c, ci);
        buf_printf(b, "} %lld\n", (long long)l->n);
    }
}

/* Positions, high watermarks and lag of the inputs that report them, and
   kafka_input's per partition. */
static void progress_prom(Buf *b, const Circuit *c, const PipeStats *st)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } g[] = {
        {"sluice_connector_position", "An input's position in its source, in unit (kafka: sum "
         "of the partitions' next offsets; postgres_cdc: LSN; file: byte offset; s3: object "
         "index).", offsetof(InProgress, pos)},
        {"sluice_connector_high_watermark", "How far an input's source goes, in unit (kafka: "
         "sum of high watermarks; postgres_cdc: current WAL LSN; file: size; s3: objects).",
         offsetof(InProgress, high)},
        {"sluice_connector_lag", "High watermark minus position, in unit (kafka messages, WAL "
         "bytes, file bytes).", offsetof(InProgress, lag)},
    };
    for (size_t i = 0; i < ARRAY_LEN(g); i++) {
        head(b, g[i].name, "gauge", g[i].help);
        for (int k = 0; k < st->nin; k++) {
            const InProgress *pg = &st->in[k].prog;
            long long v = (long long)*(const int64_t *)((const char *)pg + g[i].off);
            if (!pg->unit || v < 0)
                continue;
            buf_puts(b, g[i].name);
            in_labels(b, c, &st->in[k]);
            buf_printf(b, ",unit=\"%s\"} %lld\n", pg->unit, v);
        }
    }
    static const char *const pn[2] = {"sluice_connector_partition_offset",
                                      "sluice_connector_partition_high_watermark"};
    static const char *const ph[2] = {"Next offset a kafka_input reads, per partition.",
                                      "High watermark of each partition a kafka_input reads."};
    for (int w = 0; w < 2; w++) {
        head(b, pn[w], "gauge", ph[w]);
        for (int k = 0; k < st->nin; k++) {
            const InProgress *pg = &st->in[k].prog;
            for (int i = 0; i < pg->nparts; i++) {
                const InPartProgress *pp = &pg->parts[i];
                int64_t v = w ? pp->high : pp->offset;
                if (v < 0)
                    continue;
                buf_puts(b, pn[w]);
                in_labels(b, c, &st->in[k]);
                buf_puts(b, ",topic=\"");
                label(b, pp->topic);
                buf_printf(b, "\",partition=\"%d\"} %lld\n", (int)pp->partition, (long long)v);
            }
        }
    }
}

/* The figures every host reports (scale-out). */
static void host_metric(Buf *b, const PipeStats *st, const char *name, const char *type,
                        const char *help, size_t off, bool is_size)
{
    head(b, name, type, help);
    for (int h = 0; h < st->nhosts; h++) {
        const char *x = (const char *)&st->hosts[h] + off;
        buf_printf(b, "%s{host=\"%d\"} %lld\n", name, h,
                   is_size ? (long long)*(const size_t *)x : (long long)*(const int64_t *)x);
    }
}

/* The same as gauges. */
static void memory_prom(Buf *b, const Circuit *c, const PipeStats *st)
{
    const MemStats *m = &st->mem;
    scalar(b, "sluice_memory_limit_bytes", "gauge", "The memory budget of the state (0: none).",
           "%zu", m->limit);
    scalar(b, "sluice_state_disk_bytes", "gauge", "Bytes of state spilled to files.", "%zu",
           m->disk_bytes);
    scalar(b, "sluice_spill_cache_bytes", "gauge", "Bytes of spilled blocks cached in memory.",
           "%zu", m->cache_bytes);
    scalar(b, "sluice_spill_cache_hits_total", "counter",
           "Spilled blocks read from the cache.", "%lld", (long long)m->cache_hits);
    scalar(b, "sluice_spill_cache_misses_total", "counter",
           "Spilled blocks read from files.", "%lld", (long long)m->cache_misses);
    scalar(b, "sluice_spilled_runs_on_disk", "gauge", "Trace runs in spill files now.", "%lld",
           (long long)m->runs_on_disk);
    scalar(b, "sluice_spilled_runs_merged_total", "counter",
           "Spilled trace runs merged into larger ones.", "%lld", (long long)m->runs_merged);
    scalar(b, "sluice_spilled_runs_total", "counter", "Trace runs written to spill files.",
           "%lld", (long long)m->spilled_runs);
    scalar(b, "sluice_spill_files_held_for_checkpoint", "gauge",
           "Spill files kept only for a checkpoint being written.", "%lld",
           (long long)m->held_files);
    scalar(b, "sluice_step_arena_bytes", "gauge", "Bytes held by the workers' step arenas.",
           "%zu", m->arena_bytes);
    scalar(b, "sluice_input_queue_bytes", "gauge", "Bytes of HTTP input waiting for a step.",
           "%lld", (long long)st->buffered_bytes);
    scalar(b, "sluice_output_queue_bytes", "gauge", "Bytes queued for the outputs.", "%zu",
           egress_pending(st));
    static const char *const names[] = {"sluice_operator_state_rows",
                                        "sluice_operator_memory_bytes",
                                        "sluice_operator_disk_bytes"};
    static const char *const helps[] = {"Rows (tuples, groups, keys) an operator keeps.",
                                        "Bytes of an operator's state in memory.",
                                        "Bytes of an operator's state spilled to files."};
    if (m->nhosts > 1) {
        static const char *const hnames[] = {"sluice_host_state_bytes",
                                             "sluice_host_state_disk_bytes",
                                             "sluice_host_step_arena_bytes"};
        static const char *const hhelps[] = {
            "Bytes of operator state in memory per host (scale-out).",
            "Bytes of operator state spilled to files per host (scale-out).",
            "Bytes held by a host's workers' step arenas (scale-out)."};
        for (int f = 0; f < 3; f++) {
            head(b, hnames[f], "gauge", hhelps[f]);
            for (int h = 0; h < m->nhosts; h++) {
                const HostMem *hm = &m->hosts[h];
                buf_printf(b, "%s{host=\"%d\"} %zu\n", hnames[f], h,
                           f == 0 ? hm->state_bytes : f == 1 ? hm->disk_bytes : hm->arena_bytes);
            }
        }
        /* each host's spill counters */
        static const struct {
            const char *name, *type, *help;
            size_t off;
            bool is_size;
        } sc[] = {
            {"sluice_host_spill_cache_bytes", "gauge",
             "Bytes of spilled blocks cached in memory per host.",
             offsetof(HostMem, cache_bytes), true},
            {"sluice_host_spill_cache_hits_total", "counter",
             "Spilled blocks read from the cache per host.", offsetof(HostMem, cache_hits),
             false},
            {"sluice_host_spill_cache_misses_total", "counter",
             "Spilled blocks read from files per host.", offsetof(HostMem, cache_misses), false},
            {"sluice_host_spilled_runs_total", "counter",
             "Trace runs written to spill files per host.", offsetof(HostMem, spilled_runs),
             false},
            {"sluice_host_spilled_runs_on_disk", "gauge", "Trace runs in spill files per host.",
             offsetof(HostMem, runs_on_disk), false},
            {"sluice_host_spilled_runs_merged_total", "counter",
             "Spilled trace runs merged into larger ones per host.",
             offsetof(HostMem, runs_merged), false},
            {"sluice_host_spill_files_held_for_checkpoint", "gauge",
             "Spill files kept only for a checkpoint being written, per host.",
             offsetof(HostMem, held_files), false},
        };
        for (size_t f = 0; f < ARRAY_LEN(sc); f++) {
            head(b, sc[f].name, sc[f].type, sc[f].help);
            for (int h = 0; h < m->nhosts; h++) {
                const char *x = (const char *)&m->hosts[h] + sc[f].off;
                buf_printf(b, "%s{host=\"%d\"} %lld\n", sc[f].name, h,
                           sc[f].is_size ? (long long)*(const size_t *)x
                                         : (long long)*(const int64_t *)x);
            }
        }
        static const char *const onames[] = {"sluice_host_operator_state_rows",
                                             "sluice_host_operator_memory_bytes",
                                             "sluice_host_operator_disk_bytes"};
        for (int f = 0; f < 3; f++) {
            head(b, onames[f], "gauge", helps[f]);
            for (int h = 0; h < m->nhosts; h++)
                for (int i = 0; i < m->hosts[h].nnodes; i++) {
                    const NodeMem *d = &m->host_nodes[m->hosts[h].first + i];
                    buf_printf(b, "%s{host=\"%d\",node=\"%d\",kind=\"%s\",relation=\"",
                               onames[f], h, d->node, d->kind);
                    label(b, c->rels[d->rel].name);
                    long long v = f == 0   ? (long long)d->rows
                                  : f == 1 ? (long long)d->bytes
                                           : (long long)d->disk_bytes;
                    buf_printf(b, "\"} %lld\n", v);
                }
        }
    }
    for (int f = 0; f < 3; f++) {
        head(b, names[f], "gauge", helps[f]);
        for (int i = 0; i < m->nnodes; i++) {
            const NodeMem *d = &m->nodes[i];
            buf_printf(b, "%s{node=\"%d\",kind=\"%s\",relation=\"", names[f], d->node,
                       d->kind);
            label(b, c->rels[d->rel].name);
            long long v = f == 0   ? (long long)d->rows
                          : f == 1 ? (long long)d->bytes
                                   : (long long)d->disk_bytes;
            buf_printf(b, "\"} %lld\n", v);
        }
    }
}

/* The /metrics text of figures f, appended to *out. */
static void prom_text(Server *s, const Figures *f, Buf *b)
{
    const Circuit *c = s->c;
    const PipeStats st = f->st;
    const EgressStats *eg = f->eg;
    const CkptStatus *ck = &f->ck;
    static const char *const states[] = {"running", "paused", "stopping", "stopped"};
    head(b, "sluice_pipeline_state", "gauge", "1 for the pipeline's current state.");
    for (size_t i = 0; i < ARRAY_LEN(states); i++)
        buf_printf(b, "sluice_pipeline_state{state=\"%s\"} %d\n", states[i],
                   !strcmp(st.state, states[i]));
    if (ck->enabled) {
        scalar(b, "sluice_checkpoint_step", "gauge",
               "Step of the newest complete checkpoint (-1: none yet).", "%lld",
               (long long)ck->last_step);
        scalar(b, "sluice_checkpoint_duration_seconds", "gauge",
               "How long the newest complete checkpoint took.", "%.6f", ck->last_secs);
        scalar(b, "sluice_checkpoint_pause_seconds", "gauge",
               "How long the pipeline waited for the newest complete checkpoint.", "%.6f",
               ck->last_pause_secs);
        scalar(b, "sluice_checkpoint_bytes_written", "gauge",
               "Bytes the newest complete checkpoint wrote.", "%lld", (long long)ck->last_bytes);
    }
    scalar(b, "sluice_steps_total", "counter", "Steps completed.", "%lld", (long long)st.step);
    scalar(b, "sluice_input_records_total", "counter", "Records received by all inputs.",
           "%lld", (long long)st.input_records);
    scalar(b, "sluice_input_bytes_total", "counter", "Bytes received by all inputs.", "%lld",
           (long long)st.input_bytes);
    scalar(b, "sluice_processed_records_total", "counter",
           "Records processed by completed steps.", "%lld", (long long)st.processed_records);
    scalar(b, "sluice_buffered_records", "gauge",
           "Records received but not processed yet (queue and open transaction).", "%lld",
           (long long)st.buffered_records);
    scalar(b, "sluice_state_bytes", "gauge",
           "Bytes of operator state in memory (traces, hash maps, materialized contents).", "%zu",
           st.state_bytes);
    scalar(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", "%zu",
           st.rss_bytes);
    scalar(b, "process_cpu_seconds_total", "counter", "User and system CPU time in seconds.",
           "%.3f", (double)st.cpu_msecs / 1000.0);
    if (st.nhosts > 1) {
        host_metric(b, &st, "sluice_host_resident_memory_bytes", "gauge",
                    "Resident memory per host (scale-out).", offsetof(HostStats, rss_bytes),
                    true);
        host_metric(b, &st, "sluice_host_exchanged_bytes_total", "counter",
                    "Bytes a host sent to other hosts (scale-out).",
                    offsetof(HostStats, exchanged_bytes), false);
    }
    scalar(b, "sluice_uptime_seconds", "gauge", "Seconds since the pipeline started.", "%.3f",
           st.uptime_secs);
    scalar(b, "sluice_transaction_open", "gauge", "1 while a transaction is open or committing.",
           "%d", st.txn_id != 0);
    scalar(b, "sluice_transaction_records", "gauge", "Records held by the open transaction.",
           "%lld", (long long)st.txn_records);

    for (size_t i = 0; i < ARRAY_LEN(in_metrics); i++) {
        const InMetric *m = &in_metrics[i];
        head(b, m->prom, m->type, m->help);
        for (int k = 0; k < st.nin; k++) {
            buf_puts(b, m->prom);
            in_labels(b, c, &st.in[k]);
            buf_printf(b, "} %lld\n", in_value(&st.in[k], m));
        }
    }
    for (size_t i = 0; i < ARRAY_LEN(lat_metrics); i++)
        summary(b, &lat_metrics[i], c, &st);
    progress_prom(b, c, &st);
    memory_prom(b, c, &st);

    for (size_t m = 0; m < ARRAY_LEN(out_metrics); m++) {
        const OutMetric *om = &out_metrics[m];
        head(b, om->prom, "counter", om->help);
        for (int k = 0; k < st.nout; k++) {
            buf_printf(b, "%s{view=\"", om->prom);
            label(b, c->rels[st.out[k].rel].name);
            buf_puts(b, "\",endpoint=\"");
            label(b, st.out[k].name);
            buf_printf(b, "\"} %lld\n", field_i64(&st.out[k], om->out_off));
        }
        for (int i = 0; i < c->nrels; i++) {
            long long v = field_i64(&eg[i], om->eg_off);
            if (eg[i].subscribers || v) {
                buf_printf(b, "%s{view=\"", om->prom);
                label(b, c->rels[i].name);
                buf_printf(b, "\",endpoint=\"http\"} %lld\n", v);
            }
        }
    }
    for (size_t m = 0; m < ARRAY_LEN(dl_metrics); m++) {
        const OutMetric *om = &dl_metrics[m];
        head(b, om->prom, strstr(om->prom, "_total") ? "counter" : "gauge", om->help);
        for (int k = 0; k < st.nout; k++) {
            buf_printf(b, "%s{view=\"", om->prom);
            label(b, c->rels[st.out[k].rel].name);
            buf_puts(b, "\",endpoint=\"");
            label(b, st.out[k].name);
            buf_printf(b, "\"} %lld\n", field_i64(&st.out[k], om->out_off));
        }
    }
    head(b, "sluice_output_lag_seconds", "summary",
         "Input arrival to acknowledgement by each output's destination.");
    for (int k = 0; k < st.nout; k++) {
        const LatStats *l = &st.out[k].lag;
        const double q[3] = {l->p50, l->p95, l->p99};
        const char *qn[3] = {"0.5", "0.95", "0.99"};
        for (int i = 0; i < 3; i++) {
            buf_printf(b, "sluice_output_lag_seconds{view=\"");
            label(b, c->rels[st.out[k].rel].name);
            buf_puts(b, "\",endpoint=\"");
            label(b, st.out[k].name);
            buf_printf(b, "\",quantile=\"%s\"} %g\n", qn[i], q[i] / 1000.0);
        }
        buf_printf(b, "sluice_output_lag_seconds_count{view=\"");
        label(b, c->rels[st.out[k].rel].name);
        buf_puts(b, "\",endpoint=\"");
        label(b, st.out[k].name);
        buf_printf(b, "\"} %lld\n", (long long)l->n);
    }
    head(b, "sluice_egress_subscribers", "gauge", "Open /egress streams per view.");
    head(b, "sluice_egress_dropped_total", "counter",
         "/egress streams disconnected for reading too slowly, per view.");
    for (int i = 0; i < c->nrels; i++) {
        if (c->rels[i].sink < 0)
            continue;
        rel_sample(b, "sluice_egress_subscribers", "view", c->rels[i].name, eg[i].subscribers);
        rel_sample(b, "sluice_egress_dropped_total", "view", c->rels[i].name,
                   (long long)eg[i].dropped);
    }
    head(b, "sluice_view_rows", "gauge", "Rows in each view (net of its changes).");
    head(b, "sluice_view_changes_total", "counter", "Changed rows emitted by each view.");
    head(b, "sluice_division_by_zero_total", "counter",
         "Divisions by zero that gave NULL, per table or view.");
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        const RelStats *rs = &st.rels[i];
        if (rs->has_sink && !r->is_table) {
            rel_sample(b, "sluice_view_rows", "view", r->name, (long long)rs->rows);
            rel_sample(b, "sluice_view_changes_total", "view", r->name, (long long)rs->changes);
        }
        rel_sample(b, "sluice_division_by_zero_total", r->is_table ? "table" : "view", r->name,
                   (long long)rs->divzero);
    }
    bool any = false;
    for (int i = 0; i < c->nrels; i++)
        any = any || st.rels[i].has_wm;
    if (any)
        head(b, "sluice_late_records_total", "counter",
             "Rows dropped as late (below the watermark of a table with LATENESS), per table.");
    for (int i = 0; i < c->nrels; i++)
        if (st.rels[i].has_wm)
            rel_sample(b, "sluice_late_records_total", "table", c->rels[i].name,
                       (long long)st.rels[i].late);
}

int stats_prometheus(Req *q)
{
    Figures f;
    Buf b = BUF_INIT;
    figures_get(q->s, &f);
    prom_text(q->s, &f, &b);
    figures_free(&f);
    char *body = malloc(b.n + 1);
    if (!body)
        sl_panic("out of memory");
    memcpy(body, b.p, b.n);
    size_t n = b.n;
    buf_free(&b);
    return req_respond(q, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, n);
}

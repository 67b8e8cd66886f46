/*
 * server/stats.c - GET /stats (JSON, Feldera's shape: global_metrics,
 * inputs[], outputs[], plus per-view figures) and GET /metrics (the same
 * figures as Prometheus text: sluice_* names, seconds and bytes as units,
 * counters ending in _total, latency and lag as summaries with quantiles).
 * Both read a copy of the pipeline's published figures (pipeline_stats)
 * and the egress counters; neither waits for a step.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../base/mem.h"
#include "http_int.h"

static const char *txn_status(const PipeStats *st)
{
    if (!strcmp(st->txn_status, "open"))
        return "TransactionInProgress";
    if (!strcmp(st->txn_status, "committing"))
        return "CommitInProgress";
    return "NoTransaction";
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

int stats_json(Req *q)
{
    Server *s = q->s;
    const Circuit *c = s->c;
    PipeStats st;
    pipeline_stats(s->p, &st);
    EgressStats *eg = sl_calloc((size_t)c->nrels + 1, sizeof(EgressStats));
    egress_stats(s->eg, eg, c->nrels);
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
    cJSON_AddBoolToObject(g, "pipeline_complete", st.inputs_ended && st.buffered_records == 0);
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
    CkptStatus ck;
    pipeline_checkpoint_status(s->p, &ck);
    if (ck.enabled) {
        cJSON *k = cJSON_AddObjectToObject(g, "checkpoint");
        cJSON_AddStringToObject(k, "fault_tolerance", ck.mode);
        cJSON_AddBoolToObject(k, "in_progress", ck.in_progress);
        cJSON_AddNumberToObject(k, "last_step", (double)ck.last_step);
        cJSON_AddNumberToObject(k, "last_secs", ck.last_secs);
        cJSON_AddNumberToObject(k, "last_pause_secs", ck.last_pause_secs);
        cJSON_AddNumberToObject(k, "last_bytes_written", (double)ck.last_bytes);
        if (ck.failure[0])
            cJSON_AddStringToObject(k, "failure", ck.failure);
        if (ck.storage_error[0])
            cJSON_AddStringToObject(k, "storage_error", ck.storage_error);
    }
    cJSON_AddStringToObject(g, "transaction_status", txn_status(&st));
    cJSON_AddNumberToObject(g, "transaction_id", (double)st.txn_id);
    if (st.txn_id) {
        cJSON_AddStringToObject(g, "transaction_initiator", st.txn_initiator);
        cJSON_AddNumberToObject(g, "transaction_records", (double)st.txn_records);
        cJSON_AddNumberToObject(g, "transaction_msecs", st.txn_secs * 1000.0);
    }
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
        cJSON_AddNumberToObject(m, "total_records", (double)ci->records);
        cJSON_AddNumberToObject(m, "total_bytes", (double)ci->bytes);
        cJSON_AddNumberToObject(m, "num_parse_errors", (double)ci->parse_errors);
        cJSON_AddNumberToObject(m, "rejected_records", (double)ci->rejected);
        cJSON_AddNumberToObject(m, "buffered_records", (double)ci->buffered);
        cJSON_AddBoolToObject(m, "end_of_input", ci->end_of_input);
        cJSON_AddItemToObject(m, "processing_latency_ms", lat_json(&ci->latency));
        if (ci->has_lag)
            cJSON_AddItemToObject(m, "event_time_lag_ms", lat_json(&ci->lag));
        cJSON_AddItemToArray(ins, e);
    }
    cJSON *outs = cJSON_AddArrayToObject(j, "outputs");
    for (int k = 0; k < st.nout; k++) {
        const OutStats *o = &st.out[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "endpoint_name", o->name);
        cJSON_AddStringToObject(e, "view", c->rels[o->rel].name);
        cJSON_AddStringToObject(e, "transport", "file_output");
        cJSON *m = cJSON_AddObjectToObject(e, "metrics");
        cJSON_AddNumberToObject(m, "transmitted_records", (double)o->records);
        cJSON_AddNumberToObject(m, "transmitted_bytes", (double)o->bytes);
        cJSON_AddNumberToObject(m, "total_processed_steps", (double)o->steps);
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
        cJSON_AddNumberToObject(m, "transmitted_records", (double)e->records);
        cJSON_AddNumberToObject(m, "transmitted_bytes", (double)e->bytes);
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
    }
    pipestats_free(&st);
    sl_free(eg);
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

static void in_labels(Buf *b, const Circuit *c, const ConnStats *ci)
{
    buf_puts(b, "{table=\"");
    label(b, c->rels[ci->rel].name);
    buf_puts(b, "\",endpoint=\"");
    label(b, ci->name);
    buf_puts(b, "\"");
}

static void summary(Buf *b, const char *name, const Circuit *c, const PipeStats *st, bool lag)
{
    for (int k = 0; k < st->nin; k++) {
        const ConnStats *ci = &st->in[k];
        if (lag && !ci->has_lag)
            continue;
        const LatStats *l = lag ? &ci->lag : &ci->latency;
        const double qs[3] = {l->p50, l->p95, l->p99};
        const char *qn[3] = {"0.5", "0.95", "0.99"};
        for (int i = 0; i < 3; i++) {
            buf_puts(b, name);
            in_labels(b, c, ci);
            buf_printf(b, ",quantile=\"%s\"} %.6f\n", qn[i], qs[i] / 1000.0);
        }
        buf_printf(b, "%s_count", name);
        in_labels(b, c, ci);
        buf_printf(b, "} %lld\n", (long long)l->n);
    }
}

int stats_prometheus(Req *q)
{
    Server *s = q->s;
    const Circuit *c = s->c;
    PipeStats st;
    pipeline_stats(s->p, &st);
    EgressStats *eg = sl_calloc((size_t)c->nrels + 1, sizeof(EgressStats));
    egress_stats(s->eg, eg, c->nrels);
    Buf b = BUF_INIT;
    static const char *const states[] = {"running", "paused", "stopping", "stopped"};
    head(&b, "sluice_pipeline_state", "gauge", "1 for the pipeline's current state.");
    for (size_t i = 0; i < ARRAY_LEN(states); i++)
        buf_printf(&b, "sluice_pipeline_state{state=\"%s\"} %d\n", states[i],
                   !strcmp(st.state, states[i]));
    CkptStatus ck;
    pipeline_checkpoint_status(s->p, &ck);
    if (ck.enabled) {
        head(&b, "sluice_checkpoint_step", "gauge",
             "Step of the newest complete checkpoint (-1: none yet).");
        buf_printf(&b, "sluice_checkpoint_step %lld\n", (long long)ck.last_step);
        head(&b, "sluice_checkpoint_duration_seconds", "gauge",
             "How long the newest complete checkpoint took.");
        buf_printf(&b, "sluice_checkpoint_duration_seconds %.6f\n", ck.last_secs);
        head(&b, "sluice_checkpoint_pause_seconds", "gauge",
             "How long the pipeline waited for the newest complete checkpoint.");
        buf_printf(&b, "sluice_checkpoint_pause_seconds %.6f\n", ck.last_pause_secs);
        head(&b, "sluice_checkpoint_bytes_written", "gauge",
             "Bytes the newest complete checkpoint wrote.");
        buf_printf(&b, "sluice_checkpoint_bytes_written %lld\n", (long long)ck.last_bytes);
    }
    head(&b, "sluice_steps_total", "counter", "Steps completed.");
    buf_printf(&b, "sluice_steps_total %lld\n", (long long)st.step);
    head(&b, "sluice_input_records_total", "counter", "Records received by all inputs.");
    buf_printf(&b, "sluice_input_records_total %lld\n", (long long)st.input_records);
    head(&b, "sluice_input_bytes_total", "counter", "Bytes received by all inputs.");
    buf_printf(&b, "sluice_input_bytes_total %lld\n", (long long)st.input_bytes);
    head(&b, "sluice_processed_records_total", "counter", "Records processed by completed steps.");
    buf_printf(&b, "sluice_processed_records_total %lld\n", (long long)st.processed_records);
    head(&b, "sluice_buffered_records", "gauge",
         "Records received but not processed yet (queue and open transaction).");
    buf_printf(&b, "sluice_buffered_records %lld\n", (long long)st.buffered_records);
    head(&b, "sluice_state_bytes", "gauge",
         "Bytes of operator state (materialized contents and primary-key indexes).");
    buf_printf(&b, "sluice_state_bytes %zu\n", st.state_bytes);
    head(&b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    buf_printf(&b, "process_resident_memory_bytes %zu\n", st.rss_bytes);
    head(&b, "process_cpu_seconds_total", "counter", "User and system CPU time in seconds.");
    buf_printf(&b, "process_cpu_seconds_total %.3f\n", (double)st.cpu_msecs / 1000.0);
    if (st.nhosts > 1) {
        head(&b, "sluice_host_resident_memory_bytes", "gauge",
             "Resident memory per host (scale-out).");
        for (int h = 0; h < st.nhosts; h++)
            buf_printf(&b, "sluice_host_resident_memory_bytes{host=\"%d\"} %zu\n", h,
                       st.hosts[h].rss_bytes);
        head(&b, "sluice_host_exchanged_bytes_total", "counter",
             "Bytes a host sent to other hosts (scale-out).");
        for (int h = 0; h < st.nhosts; h++)
            buf_printf(&b, "sluice_host_exchanged_bytes_total{host=\"%d\"} %lld\n", h,
                       (long long)st.hosts[h].exchanged_bytes);
    }
    head(&b, "sluice_uptime_seconds", "gauge", "Seconds since the pipeline started.");
    buf_printf(&b, "sluice_uptime_seconds %.3f\n", st.uptime_secs);
    head(&b, "sluice_transaction_open", "gauge",
         "1 while a transaction is open or committing.");
    buf_printf(&b, "sluice_transaction_open %d\n", st.txn_id != 0);
    head(&b, "sluice_transaction_records", "gauge", "Records held by the open transaction.");
    buf_printf(&b, "sluice_transaction_records %lld\n", (long long)st.txn_records);

    head(&b, "sluice_connector_input_records_total", "counter", "Records received per input.");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_input_records_total");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %lld\n", (long long)st.in[k].records);
    }
    head(&b, "sluice_connector_input_bytes_total", "counter", "Bytes received per input.");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_input_bytes_total");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %lld\n", (long long)st.in[k].bytes);
    }
    head(&b, "sluice_connector_parse_errors_total", "counter",
         "Records rejected per input (malformed or invalid).");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_parse_errors_total");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %lld\n", (long long)st.in[k].parse_errors);
    }
    head(&b, "sluice_connector_rejected_records_total", "counter",
         "Records rejected per input by a runtime error in a step (overflow, bad cast).");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_rejected_records_total");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %lld\n", (long long)st.in[k].rejected);
    }
    head(&b, "sluice_connector_buffered_records", "gauge",
         "Records received but not processed yet, per input.");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_buffered_records");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %lld\n", (long long)st.in[k].buffered);
    }
    head(&b, "sluice_connector_end_of_input", "gauge", "1 once an input has reached its end.");
    for (int k = 0; k < st.nin; k++) {
        buf_puts(&b, "sluice_connector_end_of_input");
        in_labels(&b, c, &st.in[k]);
        buf_printf(&b, "} %d\n", st.in[k].end_of_input);
    }
    head(&b, "sluice_connector_processing_latency_seconds", "summary",
         "Time from a record's arrival to the end of the step that processed it.");
    summary(&b, "sluice_connector_processing_latency_seconds", c, &st, false);
    head(&b, "sluice_connector_event_time_lag_seconds", "summary",
         "Wall-clock time when a step's outputs were delivered minus the record's event time.");
    summary(&b, "sluice_connector_event_time_lag_seconds", c, &st, true);

    head(&b, "sluice_output_records_total", "counter", "Records written per output.");
    for (int k = 0; k < st.nout; k++) {
        buf_puts(&b, "sluice_output_records_total{view=\"");
        label(&b, c->rels[st.out[k].rel].name);
        buf_puts(&b, "\",endpoint=\"");
        label(&b, st.out[k].name);
        buf_printf(&b, "\"} %lld\n", (long long)st.out[k].records);
    }
    for (int i = 0; i < c->nrels; i++)
        if (eg[i].subscribers || eg[i].records) {
            buf_puts(&b, "sluice_output_records_total{view=\"");
            label(&b, c->rels[i].name);
            buf_printf(&b, "\",endpoint=\"http\"} %lld\n", (long long)eg[i].records);
        }
    head(&b, "sluice_output_bytes_total", "counter", "Bytes written per output.");
    for (int k = 0; k < st.nout; k++) {
        buf_puts(&b, "sluice_output_bytes_total{view=\"");
        label(&b, c->rels[st.out[k].rel].name);
        buf_puts(&b, "\",endpoint=\"");
        label(&b, st.out[k].name);
        buf_printf(&b, "\"} %lld\n", (long long)st.out[k].bytes);
    }
    for (int i = 0; i < c->nrels; i++)
        if (eg[i].subscribers || eg[i].bytes) {
            buf_puts(&b, "sluice_output_bytes_total{view=\"");
            label(&b, c->rels[i].name);
            buf_printf(&b, "\",endpoint=\"http\"} %lld\n", (long long)eg[i].bytes);
        }
    head(&b, "sluice_egress_subscribers", "gauge", "Open /egress streams per view.");
    head(&b, "sluice_egress_dropped_total", "counter",
         "/egress streams disconnected for reading too slowly, per view.");
    for (int i = 0; i < c->nrels; i++) {
        if (c->rels[i].sink < 0)
            continue;
        buf_puts(&b, "sluice_egress_subscribers{view=\"");
        label(&b, c->rels[i].name);
        buf_printf(&b, "\"} %d\n", eg[i].subscribers);
        buf_puts(&b, "sluice_egress_dropped_total{view=\"");
        label(&b, c->rels[i].name);
        buf_printf(&b, "\"} %lld\n", (long long)eg[i].dropped);
    }
    head(&b, "sluice_view_rows", "gauge", "Rows in each view (net of its changes).");
    head(&b, "sluice_view_changes_total", "counter", "Changed rows emitted by each view.");
    head(&b, "sluice_division_by_zero_total", "counter",
         "Divisions by zero that gave NULL, per table or view.");
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        const RelStats *rs = &st.rels[i];
        const char *kind = r->is_table ? "table" : "view";
        if (rs->has_sink && !r->is_table) {
            buf_puts(&b, "sluice_view_rows{view=\"");
            label(&b, r->name);
            buf_printf(&b, "\"} %lld\n", (long long)rs->rows);
            buf_puts(&b, "sluice_view_changes_total{view=\"");
            label(&b, r->name);
            buf_printf(&b, "\"} %lld\n", (long long)rs->changes);
        }
        buf_printf(&b, "sluice_division_by_zero_total{%s=\"", kind);
        label(&b, r->name);
        buf_printf(&b, "\"} %lld\n", (long long)rs->divzero);
    }
    pipestats_free(&st);
    sl_free(eg);
    char *body = malloc(b.n + 1);
    if (!body)
        sl_panic("out of memory");
    memcpy(body, b.p, b.n);
    size_t n = b.n;
    buf_free(&b);
    return req_respond(q, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, n);
}

/*
 * server/api.c - the endpoints that carry no data: GET /status, POST
 * /start, /pause, /stop, the transaction endpoints, GET /completion_status,
 * GET /diff, POST /approve and /reject (bootstrapping a changed program),
 * GET / (what the pipeline serves) and GET /lineage (sql/lineage.h over
 * the compiled program). The others turn into a pipeline_command or read
 * pipeline_stats; none touches the runtime. /status also says
 * when the steps wait on an egress subscriber that does not read
 * ("stalled", from egress.c).
 */
#include <stdlib.h>

#include "../sql/lineage.h"
#include "http_int.h"

const char *api_txn_status(const PipeStats *st)
{
    if (!strcmp(st->txn_status, "open"))
        return "TransactionInProgress";
    if (!strcmp(st->txn_status, "committing"))
        return "CommitInProgress";
    return "NoTransaction";
}

int api_status(Req *q)
{
    PipeStats st;
    pipeline_stats(q->s->p, &st);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "state", st.state);
    cJSON_AddNumberToObject(j, "step", (double)st.step);
    cJSON_AddNumberToObject(j, "buffered_records", (double)st.buffered_records);
    cJSON_AddNumberToObject(j, "processed_records", (double)st.processed_records);
    cJSON_AddBoolToObject(j, "inputs_ended", st.inputs_ended);
    cJSON_AddNumberToObject(j, "uptime_secs", st.uptime_secs);
    int64_t sub;
    int rel;
    double secs;
    if (egress_stalled(q->s->eg, &sub, &rel, &secs)) {
        /* the steps wait on a backpressure subscriber that does not read */
        cJSON *w = cJSON_AddObjectToObject(j, "stalled");
        cJSON_AddStringToObject(w, "reason", "egress_backpressure");
        cJSON_AddStringToObject(w, "view", q->s->c->rels[rel].name);
        cJSON_AddNumberToObject(w, "subscriber", (double)sub);
        cJSON_AddNumberToObject(w, "waiting_secs", secs);
        cJSON_AddNumberToObject(w, "timeout_secs", q->s->o.egress_stall);
    } else if (st.mem.hold) { /* the state cannot fit the memory budget */
        cJSON *w = cJSON_AddObjectToObject(j, "stalled");
        cJSON_AddStringToObject(w, "reason", "memory");
        cJSON_AddStringToObject(w, "message", st.mem.pressure);
    } else {
        cJSON_AddNullToObject(j, "stalled");
    }
    cJSON_AddStringToObject(j, "transaction_status", api_txn_status(&st));
    cJSON_AddNumberToObject(j, "transaction_id", (double)st.txn_id);
    if (st.txn_id) {
        cJSON *t = cJSON_AddObjectToObject(j, "transaction");
        cJSON_AddNumberToObject(t, "id", (double)st.txn_id);
        cJSON_AddStringToObject(t, "status", st.txn_status);
        cJSON_AddStringToObject(t, "initiator", st.txn_initiator);
        cJSON_AddNumberToObject(t, "records", (double)st.txn_records);
        cJSON_AddNumberToObject(t, "elapsed_secs", st.txn_secs);
        if (!strcmp(st.txn_status, "committing")) {
            /* the commit is one step: its progress is the time it has run
               over the records it holds */
            cJSON *c = cJSON_AddObjectToObject(t, "commit_progress");
            cJSON_AddNumberToObject(c, "records", (double)st.txn_records);
            cJSON_AddNumberToObject(c, "elapsed_secs", st.commit_secs);
        }
    } else {
        cJSON_AddNullToObject(j, "transaction");
    }
    if (st.last_commit_id) {
        cJSON *t = cJSON_AddObjectToObject(j, "last_commit");
        cJSON_AddNumberToObject(t, "transaction_id", (double)st.last_commit_id);
        cJSON_AddNumberToObject(t, "records", (double)st.last_commit_records);
        cJSON_AddNumberToObject(t, "step", (double)st.last_commit_step);
    }
    pipestats_free(&st);
    CkptStatus cs; /* a failing disk: input is refused until it works */
    pipeline_checkpoint_status(q->s->p, &cs);
    if (cs.storage_error[0])
        cJSON_AddStringToObject(j, "storage_error", cs.storage_error);
    return req_json(q, MHD_HTTP_OK, j);
}

static int stopping(Req *q)
{
    return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", NULL,
                     "the pipeline is stopping; it accepts no more commands");
}

int api_lifecycle(Req *q, PipeCmd cmd)
{
    PipeCmdResult res;
    int rc = pipeline_command(q->s->p, cmd, true, &res);
    cJSON *j = cJSON_CreateObject();
    if (rc == PIPE_STOPPING && cmd != PC_STOP) {
        cJSON_Delete(j);
        return stopping(q);
    }
    const char *state = cmd == PC_START ? "running" : cmd == PC_PAUSE ? "paused" : "stopped";
    cJSON_AddStringToObject(j, "state", state);
    cJSON_AddNumberToObject(j, "step", (double)res.step);
    return req_json(q, MHD_HTTP_OK, j);
}

int api_transaction(Req *q, PipeCmd cmd)
{
    bool bad = false, wait = true;
    if (req_arg(q, "wait"))
        wait = req_flag(q, "wait", &bad);
    if (bad)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "wait must be true or false");
    PipeCmdResult res;
    int rc = pipeline_command(q->s->p, cmd, cmd != PC_TXN_COMMIT || wait, &res);
    if (rc == PIPE_STOPPING)
        return stopping(q);
    if (rc == PIPE_CONFLICT) {
        PipeStats st;
        pipeline_stats(q->s->p, &st);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "transaction_status", api_txn_status(&st));
        cJSON_AddNumberToObject(d, "transaction_id", (double)st.txn_id);
        cJSON_AddStringToObject(d, "state", st.state);
        pipestats_free(&st);
        return req_error(q, MHD_HTTP_CONFLICT, "TransactionConflict", d, "%s", res.msg);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "transaction_id", (double)res.txn_id);
    unsigned status = MHD_HTTP_OK;
    switch (cmd) {
    case PC_TXN_START:
        cJSON_AddNumberToObject(j, "buffered_records", (double)res.records);
        break;
    case PC_TXN_COMMIT:
        if (!wait) {
            cJSON_AddStringToObject(j, "status", "committing");
            status = MHD_HTTP_ACCEPTED;
        } else {
            cJSON_AddStringToObject(j, "status", "committed");
            cJSON_AddNumberToObject(j, "records", (double)res.records);
            if (res.rejected) {
                cJSON_AddNumberToObject(j, "rejected", (double)res.rejected);
                cJSON_AddStringToObject(j, "rejected_error", res.msg);
            }
            cJSON_AddNumberToObject(j, "step", (double)res.step);
        }
        break;
    default:
        cJSON_AddStringToObject(j, "status", "aborted");
        cJSON_AddNumberToObject(j, "discarded_records", (double)res.records);
        break;
    }
    return req_json(q, status, j);
}

int api_completion(Req *q)
{
    const char *t = req_arg(q, "token");
    char *end = NULL;
    long long tok = t ? strtoll(t, &end, 10) : 0;
    if (!t || !*t || *end || tok < 0)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "give ?token=N, the token of an /ingress response");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "token", (double)tok);
    cJSON_AddStringToObject(j, "status",
                            pipeline_token_done(q->s->p, tok) ? "complete" : "inprogress");
    return req_json(q, MHD_HTTP_OK, j);
}

int api_index(Req *q)
{
    const Circuit *c = q->s->c;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "service", "sluice pipeline");
    cJSON_AddStringToObject(j, "documentation", "docs/http.md");
    cJSON *t = cJSON_AddArrayToObject(j, "tables");
    cJSON *v = cJSON_AddArrayToObject(j, "views");
    for (int i = 0; i < c->nrels; i++) {
        if (!strcmp(c->rels[i].name, PIPELINE_ERRORS_TABLE)) /* the pipeline's own */
            cJSON_AddStringToObject(j, "errors_table", c->rels[i].name);
        else
            cJSON_AddItemToArray(c->rels[i].is_table ? t : v, cJSON_CreateString(c->rels[i].name));
    }
    return req_json(q, MHD_HTTP_OK, j);
}

/* GET /lineage: the field-level lineage of the program's views, as
   `sluice lineage` prints it (docs/lineage.md). */
int api_lineage(Req *q)
{
    Lineage *l = lineage_new(q->s->c);
    cJSON *j = lineage_json_graph(l, PIPELINE_ERRORS_TABLE);
    lineage_free(l);
    return req_json(q, MHD_HTTP_OK, j);
}

/* POST /checkpoint: a checkpoint at the next step boundary. The answer
   comes at once with the request's sequence number; GET
   /checkpoint_status says when it (or a later one) completed. */
int api_checkpoint(Req *q)
{
    int64_t seq;
    if (pipeline_checkpoint(q->s->p, &seq))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "NoStorage", NULL,
                         "checkpoints need storage: start the pipeline with --storage DIR");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "checkpoint_sequence_number", (double)seq);
    return req_json(q, MHD_HTTP_OK, j);
}

/* GET /checkpoint_status: Feldera's {"success": N|null, "failure": ...}
   plus figures of the newest checkpoint. */
int api_checkpoint_status(Req *q)
{
    CkptStatus cs;
    pipeline_checkpoint_status(q->s->p, &cs);
    cJSON *j = cJSON_CreateObject();
    if (cs.completed)
        cJSON_AddNumberToObject(j, "success", (double)cs.completed);
    else
        cJSON_AddNullToObject(j, "success");
    if (cs.failed && cs.failure[0]) {
        cJSON *f = cJSON_AddObjectToObject(j, "failure");
        cJSON_AddNumberToObject(f, "sequence_number", (double)cs.failed);
        cJSON_AddStringToObject(f, "error", cs.failure);
    } else {
        cJSON_AddNullToObject(j, "failure");
    }
    cJSON_AddBoolToObject(j, "storage", cs.enabled);
    cJSON_AddStringToObject(j, "fault_tolerance", cs.mode);
    cJSON_AddNumberToObject(j, "requested", (double)cs.requested);
    cJSON_AddBoolToObject(j, "in_progress", cs.in_progress);
    if (cs.in_progress) { /* a checkpoint that never ends is visible */
        cJSON *w = cJSON_AddObjectToObject(j, "running");
        cJSON_AddNumberToObject(w, "step", (double)cs.job_step);
        cJSON_AddNumberToObject(w, "secs", cs.job_secs);
        if (cs.job_pid > 0)
            cJSON_AddNumberToObject(w, "pid", cs.job_pid);
    }
    /* "failure" answers requests (the reference system's shape); a
       periodic checkpoint's failure shows here too */
    if (cs.failure[0])
        cJSON_AddStringToObject(j, "last_failure", cs.failure);
    else
        cJSON_AddNullToObject(j, "last_failure");
    if (cs.last_step >= 0) {
        cJSON *l = cJSON_AddObjectToObject(j, "last");
        cJSON_AddNumberToObject(l, "step", (double)cs.last_step);
        cJSON_AddNumberToObject(l, "secs", cs.last_secs);
        cJSON_AddNumberToObject(l, "pause_secs", cs.last_pause_secs);
        cJSON_AddNumberToObject(l, "files", (double)cs.last_files);
        cJSON_AddNumberToObject(l, "files_written", (double)cs.last_written);
        cJSON_AddNumberToObject(l, "files_reused", (double)cs.last_reused);
        cJSON_AddNumberToObject(l, "bytes_written", (double)cs.last_bytes);
    } else {
        cJSON_AddNullToObject(j, "last");
    }
    return req_json(q, MHD_HTTP_OK, j);
}

/* GET /diff: the program change this pipeline bootstraps
   (docs/bootstrapping.md); POST /approve runs it, POST /reject stops. */
int api_diff(Req *q)
{
    cJSON *j = pipeline_boot_diff(q->s->p);
    if (!j)
        return req_error(q, MHD_HTTP_NOT_FOUND, "NoProgramChange", NULL,
                         "the pipeline did not start over storage of another program: there "
                         "is no program change to show");
    return req_json(q, MHD_HTTP_OK, j);
}

static int approve(Req *q, bool yes)
{
    if (pipeline_approve(q->s->p, yes))
        return req_error(q, MHD_HTTP_CONFLICT, "NotAwaitingApproval", NULL,
                         "no program change awaits approval (GET /diff says why)");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "bootstrap", yes ? "approved" : "rejected");
    return req_json(q, MHD_HTTP_OK, j);
}

int api_approve(Req *q) { return approve(q, true); }
int api_reject(Req *q) { return approve(q, false); }

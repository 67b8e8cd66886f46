/*
 * fuzz/fuzz_ingress.c - the HTTP ingress body parser (server/ingress.c):
 * POST /ingress/{table} bodies cut into records as they arrive in pieces
 * (CSV records spanning pieces, JSON lines, JSON arrays of records, a
 * record carried over to the next piece), each parsed with io/format.h
 * into an InBatch, the per-record errors collected, and the answer built.
 *
 * ingress.c is compiled into this file with its calls to http.c (which
 * need a libmicrohttpd connection) and to the pipeline's queue renamed to
 * the stand-ins below, so the real entry points run unchanged:
 * ingress_begin on a stand-in request, then its body and done callbacks.
 * The queue stand-in frees the batch (nothing runs the steps).
 *
 * Input: byte 0 chooses the table (bits 0-1), format=csv (bit 2),
 * update_format=raw (bit 3), header=true (bit 4) and the piece size (bits
 * 5-7: 1, 2, 3, 7, 16, 64, 512 bytes or the whole body); the rest is the
 * body. Seeds: fuzz/corpus/ingress/.
 */
#define req_arg fz_req_arg
#define req_flag fz_req_flag
#define req_respond fz_req_respond
#define req_json fz_req_json
#define req_error fz_req_error
#define req_relation fz_req_relation
#define pipeline_push_take fz_push_take
#define pipeline_note_rejected fz_note_rejected
#define pipeline_token_wait fz_token_wait
#define pipeline_token_rejected fz_token_rejected
#define pipeline_stats fz_stats
#define pipestats_free fz_stats_free
#define pipeline_checkpoint_status fz_checkpoint_status
#include "../src/server/ingress.c"

#include <stdarg.h>
#include <strings.h>

#include "fuzz.h"

static const char *const PROGRAM =
    "CREATE TABLE n (b BOOLEAN, i INT, bi BIGINT, d DECIMAL(12,3), f DOUBLE, v VARCHAR(8),\n"
    "  s VARCHAR, dt DATE, ts TIMESTAMP);\n"
    "CREATE TABLE k (id INT NOT NULL PRIMARY KEY, s VARCHAR, amount DECIMAL(10,2) NOT NULL,\n"
    "  at TIMESTAMP);\n"
    "CREATE TABLE m (a BIGINT NOT NULL, b BIGINT NOT NULL, s VARCHAR NOT NULL,\n"
    "  PRIMARY KEY (a, b));\n"
    "CREATE VIEW v AS SELECT s, count(*) AS c FROM n GROUP BY s;\n";

/* The stand-in request's query arguments. */
static const char *arg_format, *arg_update, *arg_header;
static int rel_chosen;
static unsigned last_status;

const char *fz_req_arg(Req *q, const char *name)
{
    if (!strcmp(name, "format"))
        return arg_format;
    if (!strcmp(name, "update_format"))
        return arg_update;
    if (!strcmp(name, "header"))
        return arg_header;
    return NULL;
}

bool fz_req_flag(Req *q, const char *name, bool *bad)
{
    const char *v = fz_req_arg(q, name);
    if (!v)
        return false;
    if (!*v || !strcasecmp(v, "true"))
        return true;
    if (strcasecmp(v, "false"))
        *bad = true;
    return false;
}

int fz_req_respond(Req *q, unsigned status, const char *ctype, char *body, size_t n)
{
    last_status = status;
    free(body);
    q->responded = true;
    return 0;
}

int fz_req_json(Req *q, unsigned status, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text)
        abort();
    return fz_req_respond(q, status, "application/json", text, strlen(text));
}

int fz_req_error(Req *q, unsigned status, const char *code, cJSON *details, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", msg);
    cJSON_AddItemToObject(j, "details", details ? details : cJSON_CreateObject());
    return fz_req_json(q, status, j);
}

int fz_req_relation(Req *q, const char *prefix, const char *what) { return rel_chosen; }

int fz_push_take(Pipeline *p, InBatch *b, double wait_secs, int64_t *token)
{
    inbatch_free(b);
    *token = 0;
    return 0;
}

void fz_note_rejected(Pipeline *p, int rel, int64_t bytes, int64_t bad) {}
void fz_token_wait(Pipeline *p, int64_t token) {}
int64_t fz_token_rejected(Pipeline *p, int64_t token, char *why, size_t whylen) { return 0; }
/* A running pipeline with room, no transaction: the early refusals pass. */
void fz_stats(Pipeline *p, PipeStats *o)
{
    memset(o, 0, sizeof(*o));
    o->state = "running";
    o->queue_limit = 1000000;
    o->txn_status = "none";
}
void fz_stats_free(PipeStats *s) { memset(s, 0, sizeof(*s)); }
void fz_checkpoint_status(Pipeline *p, CkptStatus *out) { memset(out, 0, sizeof(*out)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Circuit *c;
    static Server srv;
    if (!c) {
        c = fz_compile(PROGRAM);
        srv.c = c;
    }
    if (size < 1)
        return 0;
    static const size_t pieces[] = {1, 2, 3, 7, 16, 64, 512, SIZE_MAX};
    rel_chosen = (data[0] & 3) % 3; /* 3: a view, refused */
    if ((data[0] & 3) == 3)
        rel_chosen = c->nrels - 1;
    arg_format = data[0] & 4 ? "csv" : "json";
    arg_update = data[0] & 8 ? "raw" : NULL;
    arg_header = data[0] & 16 ? "true" : NULL;
    size_t piece = pieces[data[0] >> 5];
    const char *body = (const char *)data + 1;
    size_t n = size - 1;

    Req q = {.s = &srv, .method = "POST"};
    snprintf(q.path, sizeof(q.path), "/ingress/%s", c->rels[rel_chosen].name);
    last_status = 0;
    ingress_begin(&q);
    if (!q.responded) {
        if (!q.body || !q.done)
            abort();
        for (size_t at = 0; at < n && !q.responded; at += piece)
            q.body(&q, body + at, SL_MIN(piece, n - at));
        if (!q.responded)
            q.done(&q);
        if (!q.responded || !last_status)
            abort(); /* every body gets an answer */
    }
    if (q.free)
        q.free(&q);
    return 0;
}

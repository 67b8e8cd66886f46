/*
 * server/ingress.c - POST /ingress/{table}?format=json|csv
 * &update_format=insert_delete|raw[&wait=true]: parse the body as it
 * arrives and queue its rows for the pipeline.
 *
 * In: body pieces from http.c. Complete records are cut from the bytes
 * seen so far (only an unfinished record is carried to the next piece)
 * and parsed with io/format.h straight into an InBatch: CSV records (RFC
 * 4180, quoted fields may span lines; all insertions), JSON one object per
 * line, or JSON arrays of objects (a body whose first byte is '[').
 * insert_delete takes {"insert": row}, {"delete": row} and, for PRIMARY
 * KEY tables, {"update": row} (a partial update by key; a delete needs
 * only the key too); a plain row object is an insertion. raw takes plain
 * row objects only.
 *
 * Out: at the end of the body the batch is queued whole
 * (pipeline_push_take) and the answer gives the records accepted and the
 * bad ones (line, text, reason; the first 100 in full): 200 when any
 * record was good, 400 when none was, 503 when the queue is full (retry:
 * nothing was taken), 413 past the size limit (http.c). With wait=true the
 * answer comes once the step that processed the rows has run.
 *
 * Bounds: a request is refused (503) before its body is read when the
 * pipeline is paused with a full queue or an open transaction already
 * holds the queue bound, or while an output's delivery queue is past its
 * bound (503 Backpressure, Retry-After 1: io/deliver.c); one request holds
 * at most the queue bound of records (past it parsing stops and the
 * answer is 413 TooManyRecords); a push that would take an open transaction past the bound is a 503
 * TransactionFull. The search for the end of an unfinished record resumes
 * where the previous piece left it (Scan), so a record spanning many
 * pieces costs linear time, not quadratic.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../io/format.h"
#include "http_int.h"

#define MAX_LISTED 100
#define TEXT_SHOWN 200

typedef enum Mode { M_CSV, M_JSON_START, M_JSON_LINES, M_JSON_ARRAY } Mode;
typedef enum ArrState { A_OPEN, A_VALUE_OR_END, A_VALUE, A_COMMA_OR_END, A_BROKEN } ArrState;

/* Where the scan for the end of an unfinished record stopped, so that
   the next piece resumes there instead of rescanning the record from its
   start (a record spanning many pieces would be quadratic otherwise). */
typedef struct Scan {
    size_t off;             /* bytes of the record already scanned */
    int depth;              /* JSON: open objects and arrays */
    bool in_str;            /* JSON: inside a string */
} Scan;

typedef struct Ingress {
    int rel;
    const Relation *r;
    RowSchema schema;
    Mode mode;
    ArrState arr;
    JsonRecOpts jo;
    bool csv_header;      /* skip the first CSV record */
    InBatch *b;
    Buf carry;            /* bytes of records not complete yet */
    int64_t line;         /* line number of carry[0] */
    Scan scan;
    int64_t good, bad, bytes;
    cJSON *errors;
    uint8_t *present;
    bool wait;
    int64_t limit;        /* records one request may hold (the queue bound) */
    bool over;            /* more records than limit: the rest was skipped */
    bool txn;             /* a transaction was open when the request came */
} Ingress;

static void add_error(Ingress *g, int64_t line, const char *rec, size_t n, const char *why)
{
    g->bad++;
    if (g->bad > MAX_LISTED)
        return;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "line", (double)line);
    char *t = strndup(rec, n > TEXT_SHOWN ? TEXT_SHOWN : n);
    cJSON_AddStringToObject(e, "text", t ? t : "");
    free(t);
    cJSON_AddStringToObject(e, "reason", why);
    cJSON_AddItemToArray(g->errors, e);
}

static int64_t count_nl(const char *p, size_t n)
{
    int64_t k = 0;
    for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
        k++;
    return k;
}

/* Parse one record (no line end) that starts on line `line`. */
static void parse_one(Ingress *g, const char *p, size_t n, int64_t line)
{
    size_t blank = 0;
    while (blank < n && (p[blank] == ' ' || p[blank] == '\t' || p[blank] == '\r'))
        blank++;
    if (blank == n)
        return;
    if (g->csv_header) {
        g->csv_header = false;
        return;
    }
    Chunk *c = inbatch_room(g->b);
    Arena *a = inbatch_arena(g->b);
    Err e;
    err_init(&e);
    if (g->mode == M_CSV) {
        if (fmt_csv_parse(&g->schema, p, n, c, a, &e))
            add_error(g, line, p, n, e.msg);
        else
            g->good++;
        return;
    }
    int kind;
    if (fmt_json_parse_rec(&g->schema, p, n, &g->jo, c, a, g->present, &kind, &e)) {
        add_error(g, line, p, n, e.msg);
        return;
    }
    const Relation *r = g->r;
    if (kind == JSON_REC_UPDATE && !r->npk) {
        c->n--;
        char why[256];
        snprintf(why, sizeof(why),
                 "{\"update\": ...} needs a table with a PRIMARY KEY; table %s has none (send "
                 "{\"delete\": old} and {\"insert\": new})",
                 r->name);
        add_error(g, line, p, n, why);
        return;
    }
    if ((kind == JSON_REC_UPDATE || kind == JSON_REC_DELETE) && r->npk) {
        for (int k = 0; k < r->npk; k++)
            if (!g->present[r->pk[k]]) {
                c->n--;
                char why[256];
                snprintf(why, sizeof(why), "%s needs the primary key column \"%s\"",
                         kind == JSON_REC_UPDATE ? "an update" : "a delete",
                         r->colnames[r->pk[k]]);
                add_error(g, line, p, n, why);
                return;
            }
    }
    if (kind == JSON_REC_UPDATE)
        inbatch_mark_update(g->b, g->present);
    g->good++;
}

/* End of the JSON value at p[0..n) (an object, array, string or scalar);
   0 when it is not complete yet, with sc saying where to resume once more
   bytes follow p[n-1] (sc is zero for a value not scanned yet). */
static size_t value_len(const char *p, size_t n, bool at_eof, Scan *sc)
{
    size_t i = sc->off;
    int depth = sc->depth;
    bool in_str = sc->in_str;
    if (n && p[0] != '{' && p[0] != '[' && p[0] != '"') {
        while (i < n && p[i] != ',' && p[i] != ']' && p[i] != ' ' && p[i] != '\n' &&
               p[i] != '\t' && p[i] != '\r')
            i++;
        if (i < n || at_eof)
            return i;
        sc->off = i;
        return 0;
    }
    for (; i < n; i++) {
        char ch = p[i];
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = false;
            if (!in_str && depth == 0)
                return i + 1;
            continue;
        }
        if (ch == '"')
            in_str = true;
        else if (ch == '{' || ch == '[')
            depth++;
        else if ((ch == '}' || ch == ']') && --depth == 0)
            return i + 1;
    }
    if (at_eof)
        return n;
    *sc = (Scan){i, depth, in_str};
    return 0;
}

/* Consume complete records from carry; at_eof: the body has ended. */
static void drain(Ingress *g, bool at_eof)
{
    const char *base = (const char *)g->carry.p;
    size_t n = g->carry.n, pos = 0;
    while (pos < n) {
        const char *p = base + pos;
        size_t avail = n - pos;
        if (g->mode == M_JSON_START) {
            size_t k = 0;
            while (k < avail && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
                k++;
            g->line += count_nl(p, k);
            pos += k;
            if (k == avail)
                break;
            g->mode = p[k] == '[' ? M_JSON_ARRAY : M_JSON_LINES;
            continue;
        }
        if (g->mode == M_CSV || g->mode == M_JSON_LINES) {
            size_t len;
            if (g->mode == M_CSV) {
                len = fmt_csv_record_len(p, avail, at_eof);
            } else {
                size_t from = g->scan.off < avail ? g->scan.off : avail;
                const char *nl = memchr(p + from, '\n', avail - from);
                len = nl ? (size_t)(nl - p) + 1 : at_eof ? avail : 0;
            }
            if (!len) {
                g->scan.off = avail;
                break;
            }
            g->scan = (Scan){0, 0, false};
            size_t rn = len;
            while (rn && (p[rn - 1] == '\n' || p[rn - 1] == '\r'))
                rn--;
            parse_one(g, p, rn, g->line);
            g->line += count_nl(p, len);
            pos += len;
            continue;
        }
        /* JSON array(s) of records */
        size_t k = 0;
        while (k < avail && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
            k++;
        g->line += count_nl(p, k);
        pos += k;
        p += k;
        avail -= k;
        if (!avail)
            break;
        if (g->arr == A_BROKEN) {
            g->line += count_nl(p, avail);
            pos = n;
            break;
        }
        if (g->arr == A_OPEN) {
            if (*p != '[') {
                add_error(g, g->line, p, avail, "expected '[' to start a JSON array of records");
                g->arr = A_BROKEN;
                continue;
            }
            g->arr = A_VALUE_OR_END;
            pos++;
            continue;
        }
        if (g->arr == A_COMMA_OR_END) {
            if (*p == ',' || *p == ']') {
                g->arr = *p == ',' ? A_VALUE : A_OPEN;
                pos++;
                continue;
            }
            add_error(g, g->line, p, avail, "expected ',' or ']' after a record in the JSON array");
            g->arr = A_BROKEN;
            continue;
        }
        if (*p == ']' && g->arr == A_VALUE_OR_END) {
            g->arr = A_OPEN;
            pos++;
            continue;
        }
        size_t len = value_len(p, avail, at_eof, &g->scan);
        if (!len)
            break;
        g->scan = (Scan){0, 0, false};
        parse_one(g, p, len, g->line);
        g->line += count_nl(p, len);
        pos += len;
        g->arr = A_COMMA_OR_END;
    }
    if (at_eof && g->mode == M_JSON_ARRAY && g->arr != A_OPEN && g->arr != A_BROKEN)
        add_error(g, g->line, "", 0, "the JSON array is not closed with ']'");
    if (pos) {
        memmove(g->carry.p, g->carry.p + pos, n - pos);
        g->carry.n = n - pos;
    }
}

static int on_body(Req *q, const char *data, size_t n)
{
    Ingress *g = q->ctx;
    g->bytes += (int64_t)n;
    bool partial = g->carry.n > 0;
    buf_append(&g->carry, data, n);
    /* a CSV record ends at a line end: none in this piece, none complete */
    if (g->mode == M_CSV && partial && !memchr(data, '\n', n))
        return 0;
    drain(g, false);
    if (g->good > g->limit) {
        g->over = true; /* stop parsing: the rest of the body is discarded */
        return -1;
    }
    return 0;
}

/* The open transaction (if any, per st) and the queue already hold too
   much for another `more` records: answer 503 and return true. */
static bool txn_full(Req *q, const PipeStats *st, int64_t more)
{
    bool full = st->txn_id && strcmp(st->txn_status, "open") == 0 &&
                st->buffered_records + more > st->queue_limit;
    if (full) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "transaction_id", (double)st->txn_id);
        cJSON_AddNumberToObject(d, "transaction_records", (double)st->txn_records);
        cJSON_AddNumberToObject(d, "limit", (double)st->queue_limit);
        req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "TransactionFull", d,
                  "the open transaction %lld holds %lld records and the bound is %lld "
                  "(sluice run --http-buffer); nothing was taken: commit or abort it, then "
                  "retry",
                  (long long)st->txn_id, (long long)st->buffered_records,
                  (long long)st->queue_limit);
    }
    return full;
}

static int on_done(Req *q)
{
    Ingress *g = q->ctx;
    Server *s = q->s;
    if (g->over) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "limit", (double)g->limit);
        return req_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "TooManyRecords", d,
                         "the request body holds more than %lld records, the bound of the "
                         "input queue (sluice run --http-buffer); nothing was taken: split it",
                         (long long)g->limit);
    }
    drain(g, true);
    if (g->bytes == 0)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "EmptyBody", NULL,
                         "the request body is empty: send %s",
                         g->mode == M_CSV ? "CSV records, one per line"
                                          : "JSON objects, one per line, or a JSON array of "
                                            "objects");
    cJSON *errs = g->errors;
    g->errors = NULL;
    if (g->good == 0) {
        pipeline_note_rejected(s->p, g->rel, g->bytes, g->bad);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "error_count", (double)g->bad);
        cJSON_AddItemToObject(d, "errors", errs);
        if (g->bad == 0)
            return req_error(q, MHD_HTTP_BAD_REQUEST, "NoRecords", d,
                             "the request body holds no records (only blank lines)");
        return req_error(q, MHD_HTTP_BAD_REQUEST, "ParseErrors", d,
                         "none of the %lld record%s could be parsed for table %s (see details)",
                         (long long)g->bad, g->bad == 1 ? "" : "s", g->r->name);
    }
    if (g->txn) {
        /* checked again only when a transaction was open at the start (the
           statistics cost a little; a transaction opened since takes at most
           this request's records past the bound) */
        PipeStats st;
        pipeline_stats(s->p, &st);
        bool full = txn_full(q, &st, g->good);
        pipestats_free(&st);
        if (full) {
            cJSON_Delete(errs);
            return 0;
        }
    }
    inbatch_note(g->b, g->bytes, g->bad);
    int64_t token = 0;
    InBatch *b = g->b;
    g->b = NULL;
    int rc = pipeline_push_take(s->p, b, s->o.push_wait, &token);
    if (rc) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "records", (double)g->good);
        cJSON_Delete(errs);
        if (rc == PIPE_STOPPING)
            return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", d,
                             "the pipeline is stopping; nothing was taken");
        if (rc == PIPE_IOERR) {
            CkptStatus cs;
            pipeline_checkpoint_status(s->p, &cs);
            return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "StorageError", d,
                             "the input could not be made durable in the pipeline's storage "
                             "(%s); it was not acknowledged: retry once storage works again",
                             cs.storage_error[0] ? cs.storage_error : "see the pipeline's log");
        }
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "QueueFull", d,
                         "the input queue is full (%s); nothing was taken: retry later",
                         "the pipeline is paused or behind");
    }
    char rwhy[200] = "";
    int64_t rejected = 0;
    if (g->wait && token) {
        pipeline_token_wait(s->p, token);
        rejected = pipeline_token_rejected(s->p, token, rwhy, sizeof(rwhy));
    }
    if (!g->bad && !rejected) {
        /* the common answer, without building a JSON tree */
        cJSON_Delete(errs);
        char *body = malloc(160);
        if (!body)
            sl_panic("out of memory");
        int n = snprintf(body, 160,
                         "{\"accepted\":%lld,\"error_count\":0,\"errors\":[],\"token\":%lld%s}\n",
                         (long long)g->good, (long long)token, g->wait ? ",\"processed\":true" : "");
        return req_respond(q, MHD_HTTP_OK, "application/json", body, (size_t)n);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "accepted", (double)g->good);
    cJSON_AddNumberToObject(j, "error_count", (double)g->bad);
    cJSON_AddItemToObject(j, "errors", errs);
    cJSON_AddNumberToObject(j, "token", (double)token);
    if (g->wait)
        cJSON_AddBoolToObject(j, "processed", true);
    if (rejected) { /* parsed and taken, then refused by a runtime error */
        cJSON_AddNumberToObject(j, "rejected", (double)rejected);
        cJSON_AddStringToObject(j, "rejected_error", rwhy);
    }
    return req_json(q, MHD_HTTP_OK, j);
}

static void on_free(Req *q)
{
    Ingress *g = q->ctx;
    if (!g)
        return;
    inbatch_free(g->b);
    buf_free(&g->carry);
    cJSON_Delete(g->errors);
    free(g->present);
    free(g);
}

int ingress_begin(Req *q)
{
    int rel = req_relation(q, "/ingress/", "table");
    if (rel < 0)
        return 0;
    const Circuit *c = q->s->c;
    const Relation *r = &c->rels[rel];
    if (!r->is_table)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "NotATable", NULL,
                         "%s is a view; push rows into a table", r->name);
    if (!strcmp(r->name, PIPELINE_ERRORS_TABLE))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "ReadOnlyTable", NULL,
                         "%s holds the records the pipeline rejected; only the pipeline "
                         "writes it", r->name);
    const char *fmt = req_arg(q, "format");
    const char *upd = req_arg(q, "update_format");
    bool bad = false;
    if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "format must be json or csv, not \"%s\"", fmt);
    if (upd && strcmp(upd, "insert_delete") && strcmp(upd, "raw"))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "update_format must be insert_delete or raw, not \"%s\"", upd);
    Ingress *g = calloc(1, sizeof(*g));
    if (!g)
        sl_panic("out of memory");
    q->ctx = g;
    q->free = on_free;
    g->wait = req_flag(q, "wait", &bad);
    g->csv_header = req_flag(q, "header", &bad);
    if (bad)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "wait and header must be true or false");
    g->rel = rel;
    g->r = r;
    g->schema = (RowSchema){r->ncol, (const char *const *)r->colnames, r->types};
    g->mode = fmt && !strcmp(fmt, "csv") ? M_CSV : M_JSON_START;
    g->jo.raw = upd && !strcmp(upd, "raw");
    g->jo.update = !g->jo.raw;
    g->jo.partial_delete = r->npk > 0;
    g->b = inbatch_new(c, rel);
    g->line = 1;
    g->errors = cJSON_CreateArray();
    g->present = calloc((size_t)r->ncol + 1, 1);
    /* refuse before reading the body when it could not be taken anyway */
    PipeStats st;
    pipeline_stats(q->s->p, &st);
    g->limit = st.queue_limit;
    g->txn = st.txn_id != 0;
    bool full = !strcmp(st.state, "paused") && st.buffered_records >= st.queue_limit;
    int64_t buffered = st.buffered_records;
    bool tfull = txn_full(q, &st, 1);
    pipestats_free(&st);
    if (tfull)
        return 0;
    if (full)
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "QueueFull", NULL,
                         "the input queue is full (%lld records, the pipeline is paused); "
                         "nothing was taken: retry later",
                         (long long)buffered);
    char bp[192];
    if (pipeline_backpressure(q->s->p, bp, sizeof(bp))) /* io/deliver.c */
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "Backpressure", NULL,
                         "output %s holds more undelivered changes than its bound; the "
                         "inputs are paused until it drains: nothing was taken, retry later",
                         bp);
    q->body = on_body;
    q->done = on_done;
    return 0;
}

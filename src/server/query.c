/*
 * server/query.c - GET|POST /query?sql=...&format=text|json|csv: one
 * SELECT over a consistent snapshot of the materialized tables and views.
 *
 * The SQL (the sql argument, or the POST body) goes to pipeline_query
 * (pipeline/livequery.c, shared with pgwire/): the controller copies the
 * materialized relations it names between two steps, and the query runs
 * on a thread of its own while the pipeline keeps stepping. A query naming a relation that is not materialized gets
 * a 400 naming it and saying how to materialize it.
 *
 * Bounds: the decoding and the query run under a base/budget.h
 * Budget: at most oneshot_limits() seconds and bytes, and cancelled
 * when the client closes its connection (a peek at the socket, at most
 * every 50 ms). A query stopped by its memory budget gets 507, by its time
 * limit 504; each stop is logged. The pipeline goes on either way.
 *
 * Formats: text (an aligned table like psql's, numbers right-aligned,
 * "(N rows)" at the end), json (one object per row and line), csv (a
 * header line, then the rows).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../expr/text.h"
#include "../io/format.h"
#include "../pipeline/oneshot.h"
#include "../sql/sql.h"
#include "http_int.h"

#define MAX_SQL (1 << 20)

static int on_body(Req *q, const char *data, size_t n)
{
    if (q->raw.n + n > MAX_SQL) {
        buf_append(&q->raw, data, MAX_SQL + 1 - q->raw.n); /* marks it too long */
        return 1;
    }
    buf_append(&q->raw, data, n);
    return 0;
}

/* Display width of UTF-8 text (code points). */
static size_t width(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

static void pad(Buf *b, size_t k)
{
    for (size_t i = 0; i < k; i++)
        buf_putc(b, ' ');
}

static void format_text(const QResult *res, Buf *out)
{
    int nc = res->ncol;
    const Chunk *c = res->rows;
    int64_t nr = c ? c->n : 0;
    /* every cell's text, then the column widths */
    Buf cells = BUF_INIT;
    size_t *off = sl_malloc(sizeof(size_t) * (size_t)(nr * nc + 1));
    size_t *wd = sl_calloc((size_t)nc + 1, sizeof(size_t));
    for (int j = 0; j < nc; j++)
        wd[j] = width(res->colnames[j], strlen(res->colnames[j]));
    for (int64_t r = 0; r < nr; r++)
        for (int j = 0; j < nc; j++) {
            off[r * nc + j] = cells.n;
            text_format_vec(&c->col[j], r, &cells);
            size_t from = off[r * nc + j];
            size_t w = width((const char *)cells.p + from, cells.n - from);
            if (w > wd[j])
                wd[j] = w;
        }
    off[nr * nc] = cells.n;
    for (int j = 0; j < nc; j++) {
        size_t w = width(res->colnames[j], strlen(res->colnames[j]));
        size_t left = (wd[j] - w) / 2;
        buf_puts(out, j ? " | " : " ");
        pad(out, left);
        buf_puts(out, res->colnames[j]);
        if (j < nc - 1)
            pad(out, wd[j] - w - left);
    }
    buf_putc(out, '\n');
    for (int j = 0; j < nc; j++) {
        if (j)
            buf_putc(out, '+');
        for (size_t k = 0; k < wd[j] + 2; k++)
            buf_putc(out, '-');
    }
    buf_putc(out, '\n');
    for (int64_t r = 0; r < nr; r++) {
        for (int j = 0; j < nc; j++) {
            size_t from = off[r * nc + j], to = off[r * nc + j + 1];
            const char *t = (const char *)cells.p + from;
            size_t w = width(t, to - from);
            bool right = type_is_numeric((TypeKind)res->types[j].kind);
            buf_puts(out, j ? " | " : " ");
            if (right)
                pad(out, wd[j] - w);
            buf_append(out, t, to - from);
            if (!right && j < nc - 1)
                pad(out, wd[j] - w);
        }
        buf_putc(out, '\n');
    }
    buf_printf(out, "(%lld row%s)\n", (long long)nr, nr == 1 ? "" : "s");
    buf_free(&cells);
    sl_free(off);
    sl_free(wd);
}

static void format_rows(const QResult *res, bool csv, Buf *out)
{
    RowSchema s = {res->ncol, (const char *const *)res->colnames, res->types};
    if (csv) {
        fmt_csv_header(&s, out);
        buf_putc(out, '\n');
    }
    for (int64_t r = 0; res->rows && r < res->rows->n; r++) {
        if (csv)
            fmt_csv_row(res->rows, r, out);
        else
            fmt_json_row(&s, res->rows, r, out);
        buf_putc(out, '\n');
    }
}

/* ------------------------------------------------ streamed: SELECT * FROM v */

/* One streamed response (pipeline_query_stream): the text format walks
   the snapshot twice, first for its column widths and row count. */
typedef struct QOut {
    QStream *qs;
    char fmt;        /* 't', 'j' or 'c' */
    int pass;        /* text: 0 measures, 1 writes */
    bool ended;
    size_t *wd;      /* text: column widths */
    int64_t nrows;
    Buf out;         /* formatted, from off on not yet handed to MHD */
    size_t off;
    char *sql;
} QOut;

static void text_header(const QOut *o, const QStreamInfo *in, Buf *out)
{
    for (int j = 0; j < in->ncol; j++) {
        size_t w = width(in->colnames[j], strlen(in->colnames[j]));
        size_t left = (o->wd[j] - w) / 2;
        buf_puts(out, j ? " | " : " ");
        pad(out, left);
        buf_puts(out, in->colnames[j]);
        if (j < in->ncol - 1)
            pad(out, o->wd[j] - w - left);
    }
    buf_putc(out, '\n');
    for (int j = 0; j < in->ncol; j++) {
        if (j)
            buf_putc(out, '+');
        for (size_t k = 0; k < o->wd[j] + 2; k++)
            buf_putc(out, '-');
    }
    buf_putc(out, '\n');
}

/* Format one chunk of rows (text: measure them in pass 0). */
static void qout_rows(QOut *o, const QStreamInfo *in, const Chunk *c)
{
    RowSchema sch = {in->ncol, in->colnames, in->types};
    Buf cell = BUF_INIT;
    for (int64_t r = 0; r < c->n; r++) {
        if (o->fmt == 'c')
            fmt_csv_row(c, r, &o->out);
        else if (o->fmt == 'j')
            fmt_json_row(&sch, c, r, &o->out);
        if (o->fmt != 't') {
            buf_putc(&o->out, '\n');
            continue;
        }
        for (int j = 0; j < in->ncol; j++) {
            buf_reset(&cell);
            text_format_vec(&c->col[j], r, &cell);
            size_t w = width((const char *)cell.p, cell.n);
            if (o->pass == 0) {
                if (w > o->wd[j])
                    o->wd[j] = w;
                continue;
            }
            bool right = type_is_numeric((TypeKind)in->types[j].kind);
            buf_puts(&o->out, j ? " | " : " ");
            if (right)
                pad(&o->out, o->wd[j] - w);
            buf_append(&o->out, cell.p, cell.n);
            if (!right && j < in->ncol - 1)
                pad(&o->out, o->wd[j] - w);
        }
        if (o->pass == 0)
            o->nrows++;
        else
            buf_putc(&o->out, '\n');
    }
    buf_free(&cell);
}

/* MHD's reader: the next bytes of the response, formatted a chunk of rows
   at a time. */
static ssize_t qout_read(void *cls, uint64_t pos, char *dst, size_t max)
{
    QOut *o = cls;
    (void)pos;
    const QStreamInfo *in = qstream_info(o->qs);
    while (o->out.n - o->off == 0 && !o->ended) {
        buf_reset(&o->out);
        o->off = 0;
        const Chunk *c;
        Err e = {0};
        int rc = qstream_next(o->qs, &c, &e);
        if (rc < 0) {
            fprintf(stderr, "sluice: query stopped mid-stream: %s: %.200s\n", e.msg, o->sql);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (rc > 0) {
            qout_rows(o, in, c);
            continue;
        }
        if (o->fmt == 't' && o->pass == 0) { /* measured: the header, then the rows */
            o->pass = 1;
            text_header(o, in, &o->out);
            continue;
        }
        if (o->fmt == 't')
            buf_printf(&o->out, "(%lld row%s)\n", (long long)o->nrows, o->nrows == 1 ? "" : "s");
        o->ended = true;
    }
    size_t n = o->out.n - o->off;
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n > max)
        n = max;
    memcpy(dst, o->out.p + o->off, n);
    o->off += n;
    return (ssize_t)n;
}

/* The response is done with (sent, or the client went away): the
   snapshot goes. */
static void qout_free(void *cls)
{
    QOut *o = cls;
    qstream_free(o->qs);
    buf_free(&o->out);
    sl_free(o->wd);
    sl_free(o->sql);
    sl_free(o);
}

static int stream(Req *q, QStream *qs, const char *fmt, const char *sql)
{
    const QStreamInfo *in = qstream_info(qs);
    QOut *o = sl_calloc(1, sizeof(*o));
    o->qs = qs;
    o->fmt = fmt[0];
    o->sql = sl_strdup(sql);
    o->wd = sl_calloc((size_t)in->ncol + 1, sizeof(size_t));
    const char *ctype = "text/plain; charset=utf-8";
    if (o->fmt == 't')
        for (int j = 0; j < in->ncol; j++)
            o->wd[j] = width(in->colnames[j], strlen(in->colnames[j]));
    else if (o->fmt == 'c') {
        RowSchema sch = {in->ncol, in->colnames, in->types};
        fmt_csv_header(&sch, &o->out);
        buf_putc(&o->out, '\n');
        ctype = "text/csv";
    } else {
        ctype = "application/x-ndjson";
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, qout_read, o, qout_free);
    if (!resp) {
        qout_free(o);
        return -1;
    }
    char step[32];
    snprintf(step, sizeof(step), "%lld", (long long)in->step);
    MHD_add_response_header(resp, "Content-Type", ctype);
    MHD_add_response_header(resp, "Sluice-Snapshot-Step", step);
    int rc = MHD_queue_response(q->conn, MHD_HTTP_OK, resp) == MHD_YES ? 0 : -1;
    MHD_destroy_response(resp);
    q->responded = true;
    return rc;
}

/* The response for a query its budget stopped (b->stop set); logs it. */
static int stopped(Req *q, const Budget *b, const char *sql)
{
    switch (b->stop) {
    case BUDGET_MEMORY:
        fprintf(stderr, "sluice: query stopped: more than its memory budget of %lld bytes: %.200s\n",
                (long long)b->limit, sql);
        return req_error(q, MHD_HTTP_INSUFFICIENT_STORAGE, "QueryMemoryLimit", NULL,
                         "the query needed more than its memory budget of %lld bytes "
                         "(--query-memory, query_memory_bytes); the pipeline goes on",
                         (long long)b->limit);
    case BUDGET_TIMEOUT:
        fprintf(stderr, "sluice: query stopped: longer than its time limit of %g s: %.200s\n",
                b->timeout, sql);
        return req_error(q, MHD_HTTP_GATEWAY_TIMEOUT, "QueryTimeout", NULL,
                         "the query ran longer than its time limit of %g s "
                         "(--query-timeout, query_timeout_secs); the pipeline goes on",
                         b->timeout);
    default:
        fprintf(stderr, "sluice: query cancelled: the client closed the connection: %.200s\n",
                sql);
        return req_error(q, MHD_HTTP_BAD_REQUEST, "QueryCancelled", NULL,
                         "the query was cancelled: the client closed the connection");
    }
}

static int run(Req *q)
{
    Server *s = q->s;
    const Circuit *c = s->c;
    const char *sql = req_arg(q, "sql");
    if ((!sql || !*sql) && q->raw.n)
        sql = buf_cstr(&q->raw);
    if (q->raw.n > MAX_SQL)
        return req_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "PayloadTooLarge", NULL,
                         "the query text is longer than %d bytes", MAX_SQL);
    if (!sql || !*sql)
        return req_error(q, MHD_HTTP_BAD_REQUEST, "MissingQuery", NULL,
                         "give the query as ?sql=SELECT... or as the POST body");
    const char *fmt = req_arg(q, "format");
    if (!fmt)
        fmt = "text";
    if (strcmp(fmt, "text") && strcmp(fmt, "json") && strcmp(fmt, "csv"))
        return req_error(q, MHD_HTTP_BAD_REQUEST, "InvalidParameter", NULL,
                         "format must be text, json or csv, not \"%s\"", fmt);
    QStream *qs = NULL;
    Err se = {0};
    if (pipeline_query_stream(s->p, sql, !strcmp(fmt, "text") ? 2 : 1, &qs, &se) == LQ_STOPPING)
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", NULL,
                         "the pipeline is stopping; no more queries");
    if (qs)
        return stream(q, qs, fmt, sql);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    QResult res = {0};
    Budget b;
    Err e = {0};
    int unmat;
    LiveQueryRc lq = pipeline_query(s->p, sql, ci ? ci->connect_fd : -1, &res, &b, &unmat, &e);
    if (lq == LQ_STOPPING)
        return req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", NULL,
                         "the pipeline is stopping; no more queries");
    if (lq == LQ_BUDGET)
        return stopped(q, &b, sql);
    if (lq == LQ_SQL) {
        if (unmat >= 0) {
            const Relation *r = &c->rels[unmat];
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "relation", r->name);
            if (r->is_table)
                return req_error(q, MHD_HTTP_BAD_REQUEST, "NotMaterialized", d,
                                 "table %s is not materialized, so /query cannot read it: "
                                 "declare it with WITH ('materialized' = 'true')",
                                 r->name);
            return req_error(q, MHD_HTTP_BAD_REQUEST, "NotMaterialized", d,
                             "view %s is not materialized, so /query cannot read it: declare "
                             "it as CREATE MATERIALIZED VIEW %s",
                             r->name, r->name);
        }
        cJSON *d = cJSON_CreateObject();
        if (e.line) {
            cJSON_AddNumberToObject(d, "line", e.line);
            cJSON_AddNumberToObject(d, "column", e.col);
        }
        cJSON_AddStringToObject(d, "kind", err_kind(e.code));
        if (e.line)
            return req_error(q, MHD_HTTP_BAD_REQUEST, "SqlError", d, "%d:%d: %s: %s", e.line,
                             e.col, err_kind(e.code), e.msg);
        return req_error(q, MHD_HTTP_BAD_REQUEST, "SqlError", d, "%s: %s", err_kind(e.code),
                         e.msg);
    }
    Buf out = BUF_INIT;
    const char *ctype = "text/plain; charset=utf-8";
    if (!strcmp(fmt, "text")) {
        format_text(&res, &out);
    } else {
        format_rows(&res, !strcmp(fmt, "csv"), &out);
        ctype = !strcmp(fmt, "csv") ? "text/csv" : "application/x-ndjson";
    }
    qresult_free(&res);
    /* MHD frees the body with free(): hand it a malloc'd copy */
    char *body = malloc(out.n + 1);
    if (!body)
        sl_panic("out of memory");
    if (out.n)
        memcpy(body, out.p, out.n);
    int rc = req_respond(q, MHD_HTTP_OK, ctype, body, out.n);
    buf_free(&out);
    return rc;
}

int query_begin(Req *q)
{
    q->body = on_body;
    q->done = run;
    return 0;
}

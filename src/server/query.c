/*
 * server/query.c - GET|POST /query?sql=...&format=text|json|csv: one
 * SELECT over a consistent snapshot of the materialized tables and views.
 *
 * The SQL (the sql argument, or the POST body) is tokenized to find the
 * relations it may name; the controller copies the materialized ones'
 * contents between two steps (pipeline_call + pipeline_contents_raw, a
 * memcpy of their row encodings), and this thread decodes them and runs
 * the query with pipeline/oneshot.h, so the pipeline keeps stepping while
 * the query runs. A query naming a relation that is not materialized gets
 * a 400 naming it and saying how to materialize it.
 *
 * Bounds: the decoding and the query run on a thread of their own (a 16
 * MiB stack, whatever the connection threads have) under a base/budget.h
 * Budget: at most oneshot_limits() seconds and bytes, and cancelled
 * when the client closes its connection (a peek at the socket, at most
 * every 50 ms). A query stopped by its memory budget gets 507, by its time
 * limit 504; each stop is logged. The pipeline goes on either way.
 *
 * Formats: text (an aligned table like psql's, numbers right-aligned,
 * "(N rows)" at the end), json (one object per row and line), csv (a
 * header line, then the rows).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../expr/text.h"
#include "../io/format.h"
#include "../zset/xrec.h"
#include "../pipeline/oneshot.h"
#include "../sql/lexer.h"
#include "../sql/sql.h"
#include "../zset/key.h"
#include "http_int.h"

#define MAX_SQL (1 << 20)
#define QUERY_STACK ((size_t)16 << 20)

typedef struct Snap {
    int n;
    int *rels;
    Buf *raw;
} Snap;

static void snapshot(Pipeline *p, void *arg)
{
    Snap *s = arg;
    for (int i = 0; i < s->n; i++)
        pipeline_contents_raw(p, s->rels[i], &s->raw[i]);
}

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

/* Relations whose names appear as identifiers in sql (case-insensitive). */
static int candidates(const Circuit *c, const char *sql, int *rels)
{
    Arena *a = arena_new(4096);
    Token *toks = NULL;
    int ntoks = 0, n = 0;
    Err e = {0};
    if (!lex(sql, a, &toks, &ntoks, &e))
        for (int i = 0; i < ntoks; i++) {
            if (toks[i].k != T_IDENT && toks[i].k != T_QIDENT)
                continue;
            int rel = circuit_find_rel(c, toks[i].s);
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup = dup || rels[k] == rel;
            if (rel >= 0 && !dup)
                rels[n++] = rel;
        }
    arena_free(a);
    return n;
}

/* err names relation r as unknown ("... \"name\" does not exist"). */
static bool names(const Err *e, const char *name)
{
    char quoted[300];
    snprintf(quoted, sizeof(quoted), "\"%s\"", name);
    return strcasestr(e->msg, quoted) != NULL;
}

/* Budget.cancelled: has the client closed the connection (arg: its fd)? */
static bool client_gone(void *arg)
{
    char c;
    ssize_t n = recv(*(const int *)arg, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* One query's run: the snapshot's decoding and oneshot_query, under b, on
   a thread of its own (run_job). */
typedef struct Job {
    const Circuit *c;
    const Snap *sn;
    const char *sql;
    int fd;     /* the client's socket (client_gone), or -1 */
    Budget b;   /* set by the caller; its stop says why the run ended */
    QResult res;
    Err e;
    int rc;     /* oneshot_query's */
} Job;

static void *job_main(void *arg)
{
    Job *j = arg;
    const Snap *sn = j->sn;
    budget_begin(&j->b);
    Arena *a = arena_new(1 << 16);
    QInput *in = arena_zalloc(a, sizeof(QInput) * (size_t)(sn->n + 1));
    for (int i = 0; i < sn->n; i++) {
        const Relation *r = &j->c->rels[sn->rels[i]];
        int64_t nrec = 0;
        size_t pos = 0;
        XRec x;
        while (xrec_next(&sn->raw[i], &pos, &x))
            nrec++;
        Chunk *ch = chunk_new(a, r->ncol, r->types, nrec ? nrec : 1);
        pos = 0;
        while (xrec_next(&sn->raw[i], &pos, &x)) {
            key_decode(x.k, r->types, r->ncol, ch, 0, ch->n);
            ch->w[ch->n++] = x.w;
        }
        in[i] = (QInput){r->name, r->ncol, (const char *const *)r->colnames, r->types, ch};
    }
    j->rc = oneshot_query(j->sql, in, sn->n, 1, &j->res, &j->e);
    arena_free(a);
    budget_end();
    return NULL;
}

/* Run j on a thread with a stack of QUERY_STACK bytes: the front end's
   limits (sql/ast.h) are sized for 8 MiB with room to spare, and a
   connection thread's stack is the default, which is 2 MiB under
   `ulimit -s unlimited`. Runs it on this thread if none can be made. */
static void run_job(Job *j)
{
    pthread_attr_t at;
    pthread_t t;
    bool ok = pthread_attr_init(&at) == 0;
    ok = ok && pthread_attr_setstacksize(&at, QUERY_STACK) == 0 &&
         pthread_create(&t, &at, job_main, j) == 0;
    pthread_attr_destroy(&at);
    if (ok)
        pthread_join(t, NULL);
    else
        job_main(j);
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
    int *cand = sl_calloc((size_t)c->nrels + 1, sizeof(int));
    int ncand = candidates(c, sql, cand);
    Snap sn = {0, sl_calloc((size_t)ncand + 1, sizeof(int)), sl_calloc((size_t)ncand + 1, sizeof(Buf))};
    for (int i = 0; i < ncand; i++)
        if (c->rels[cand[i]].materialized && c->rels[cand[i]].sink >= 0)
            sn.rels[sn.n++] = cand[i];
    int rc = 0;
    if (pipeline_call(s->p, snapshot, &sn)) {
        rc = req_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineStopping", NULL,
                       "the pipeline is stopping; no more queries");
        goto out_free;
    }
    QueryLimits lim = oneshot_limits();
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    Job job = {c, &sn, sql, ci ? ci->connect_fd : -1, {0}, {0}, {0}, 0};
    job.b = (Budget){.limit = lim.memory_bytes, .timeout = lim.timeout_secs,
                     .cancelled = ci ? client_gone : NULL, .arg = &job.fd};
    run_job(&job);
    Budget b = job.b;
    QResult res = job.res;
    Err e = job.e;
    int qrc = job.rc;
    if (qrc && b.stop) {
        rc = stopped(q, &b, sql);
        goto out_free;
    }
    if (qrc) {
        for (int i = 0; i < ncand; i++) {
            const Relation *r = &c->rels[cand[i]];
            if ((r->materialized && r->sink >= 0) || !names(&e, r->name))
                continue;
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "relation", r->name);
            if (r->is_table)
                rc = req_error(q, MHD_HTTP_BAD_REQUEST, "NotMaterialized", d,
                               "table %s is not materialized, so /query cannot read it: declare "
                               "it with WITH ('materialized' = 'true')",
                               r->name);
            else
                rc = req_error(q, MHD_HTTP_BAD_REQUEST, "NotMaterialized", d,
                               "view %s is not materialized, so /query cannot read it: declare "
                               "it as CREATE MATERIALIZED VIEW %s",
                               r->name, r->name);
            goto out_free;
        }
        cJSON *d = cJSON_CreateObject();
        if (e.line) {
            cJSON_AddNumberToObject(d, "line", e.line);
            cJSON_AddNumberToObject(d, "column", e.col);
        }
        cJSON_AddStringToObject(d, "kind", err_kind(e.code));
        if (e.line)
            rc = req_error(q, MHD_HTTP_BAD_REQUEST, "SqlError", d, "%d:%d: %s: %s", e.line,
                           e.col, err_kind(e.code), e.msg);
        else
            rc = req_error(q, MHD_HTTP_BAD_REQUEST, "SqlError", d, "%s: %s", err_kind(e.code),
                           e.msg);
        goto out_free;
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
    rc = req_respond(q, MHD_HTTP_OK, ctype, body, out.n);
    buf_free(&out);
out_free:
    for (int i = 0; i < sn.n; i++)
        buf_free(&sn.raw[i]);
    sl_free(sn.raw);
    sl_free(sn.rels);
    sl_free(cand);
    return rc;
}

int query_begin(Req *q)
{
    q->body = on_body;
    q->done = run;
    return 0;
}

/*
 * pgwire/copy.c - COPY t [(cols)] FROM STDIN and COPY {t | (SELECT ...)}
 * TO STDOUT, in text (tab-separated, \N for NULL, backslash escapes) or
 * CSV format (RFC 4180 quoting, an empty unquoted field is NULL), with
 * the options PostgreSQL spells as WITH (FORMAT csv, HEADER, DELIMITER
 * 'x', NULL 'x') or, older, WITH CSV HEADER DELIMITER AS 'x' NULL AS 'x'.
 *
 * FROM STDIN: CopyInResponse, then CopyData messages cut into records as
 * they come and parsed straight into one InBatch (at most the input
 * queue's bound of records: a COPY is taken whole or not at all), queued
 * at CopyDone through ingress.c like an INSERT. A bad record is reported
 * once the client ended the copy (its data is read and dropped). TO
 * STDOUT: CopyOutResponse, one CopyData per row, CopyDone; TO STDOUT may
 * also be in PostgreSQL's binary format (FORMAT binary: binfmt.c's
 * encodings, a type without one refused before anything is sent).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "../io/format.h"
#include "../sql/sql.h"
#include "pg_int.h"

typedef struct CopyOpts {
    bool csv, header, binary;
    char delim;
    char null[32];
} CopyOpts;

/* A quoted option value at *p ('x' or E'\t'), into out. */
static bool quoted(const char **p, char *out, size_t on)
{
    const char *q = pg_skip_ws(*p);
    bool esc = (*q == 'E' || *q == 'e') && q[1] == '\'';
    q += esc;
    if (*q != '\'')
        return false;
    size_t k = 0;
    for (q++; *q && !(*q == '\'' && q[1] != '\''); q++) {
        char ch = *q;
        if (*q == '\'')
            q++;
        else if (esc && *q == '\\' && q[1]) {
            q++;
            ch = *q == 't' ? '\t' : *q == 'n' ? '\n' : *q == 'r' ? '\r' : *q;
        }
        if (k + 1 < on)
            out[k++] = ch;
    }
    if (*q != '\'')
        return false;
    out[k] = 0;
    *p = q + 1;
    return true;
}

/* The options after FROM STDIN / TO STDOUT. */
static int options(const char *p, CopyOpts *o, PgErr *e)
{
    *o = (CopyOpts){false, false, false, '\t', "\\N"};
    bool null_given = false, delim_given = false;
    pg_accept_kw(&p, "WITH");
    p = pg_skip_ws(p);
    bool paren = *p == '(';
    p += paren;
    for (;;) {
        p = pg_skip_ws(p);
        if (!*p || *p == ';' || (paren && *p == ')'))
            break;
        if (*p == ',') {
            p++;
            continue;
        }
        char kw[32], v[32];
        if (pg_accept_kw(&p, "FORMAT")) {
            pg_accept_kw(&p, "AS");
            const char *q = pg_skip_ws(p);
            size_t n = pg_word(q, v, sizeof(v));
            if (!strcmp(v, "CSV"))
                o->csv = true;
            else if (!strcmp(v, "BINARY"))
                o->binary = true;
            else if (strcmp(v, "TEXT"))
                return pg_err(e, "0A000", "COPY format %s is not supported: text, csv or "
                                          "binary (TO STDOUT)", n ? v : "?");
            p = q + n;
        } else if (pg_accept_kw(&p, "CSV")) {
            o->csv = true;
        } else if (pg_accept_kw(&p, "BINARY")) {
            o->binary = true;
        } else if (pg_accept_kw(&p, "HEADER")) {
            o->header = true;
            const char *q = pg_skip_ws(p);
            size_t n = pg_word(q, v, sizeof(v));
            if (n && (!strcmp(v, "TRUE") || !strcmp(v, "ON") || !strcmp(v, "FALSE") ||
                      !strcmp(v, "OFF") || !strcmp(v, "1") || !strcmp(v, "0"))) {
                o->header = strcmp(v, "FALSE") && strcmp(v, "OFF") && strcmp(v, "0");
                p = q + n;
            }
        } else if (pg_accept_kw(&p, "DELIMITER")) {
            pg_accept_kw(&p, "AS");
            if (!quoted(&p, v, sizeof(v)) || strlen(v) != 1)
                return pg_err(e, "22023", "COPY delimiter must be a single one-byte character");
            o->delim = v[0];
            delim_given = true;
        } else if (pg_accept_kw(&p, "NULL")) {
            pg_accept_kw(&p, "AS");
            if (!quoted(&p, o->null, sizeof(o->null)))
                return pg_err(e, "42601", "syntax error in COPY: NULL needs a quoted string");
            null_given = true;
        } else if (pg_accept_kw(&p, "ENCODING")) {
            if (!quoted(&p, v, sizeof(v)) ||
                (strcasecmp(v, "UTF8") && strcasecmp(v, "UTF-8")))
                return pg_err(e, "22023", "COPY encoding must be UTF8");
        } else {
            pg_word(pg_skip_ws(p), kw, sizeof(kw));
            return pg_err(e, "0A000", "COPY option %s is not supported (FORMAT, HEADER, "
                                      "DELIMITER, NULL, ENCODING are)", kw[0] ? kw : "?");
        }
    }
    if (o->binary && (o->csv || o->header || delim_given || null_given))
        return pg_err(e, "42601", "COPY in binary format takes no CSV, HEADER, DELIMITER or "
                                  "NULL option");
    if (o->csv && !delim_given)
        o->delim = ',';
    if (o->csv && !null_given)
        o->null[0] = 0;
    return 0;
}

/* ---------------------------------------------------------------- TO STDOUT */

static void put_field(Buf *b, const CopyOpts *o, const char *s, size_t n)
{
    if (o->csv) {
        bool q = n == 0; /* "" is the empty string, nothing is NULL */
        for (size_t i = 0; i < n && !q; i++)
            q = s[i] == o->delim || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
        if (!q) {
            buf_append(b, s, n);
            return;
        }
        buf_putc(b, '"');
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"')
                buf_putc(b, '"');
            buf_putc(b, s[i]);
        }
        buf_putc(b, '"');
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\' || ch == o->delim || ch == '\n' || ch == '\r' || ch == '\t') {
            buf_putc(b, '\\');
            ch = ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : ch;
        }
        buf_putc(b, ch);
    }
}

static void copy_data(PgConn *c, const Buf *line)
{
    pg_begin(c, 'd');
    pg_bytes(c, line->p, line->n);
    pg_end(c);
}

/* COPY TO in binary format: PostgreSQL's signature, flags and header
   extension, each row as the body of its binary DataRow (field count,
   then length and bytes of each field, -1 for NULL), the trailer -1. */
static int copy_out_binary(PgConn *c, QResult *q, PgRes *res, PgErr *e)
{
    PgRes r = {0};
    pgres_from_qresult(&r, q);
    qresult_free(q);
    int16_t bin = 1;
    if (pgres_set_formats(&r, 1, &bin, e)) {
        pgres_free(&r);
        return -1;
    }
    pg_begin(c, 'H');
    buf_putc(&c->out, 1);
    pg_i16(c, r.ncol);
    for (int j = 0; j < r.ncol; j++)
        pg_i16(c, 1);
    pg_end(c);
    /* the header goes with the first row (or the trailer), as PostgreSQL
       sends it: clients read it off the first CopyData */
    bool first = true;
    const uint8_t *p = r.rows.p, *end = r.rows.p + r.rows.n;
    for (;;) {
        pg_begin(c, 'd');
        if (first) {
            pg_bytes(c, "PGCOPY\n\377\r\n\0", 11);
            pg_i32(c, 0); /* flags */
            pg_i32(c, 0); /* header extension */
            first = false;
        }
        if (p >= end) {
            pg_i16(c, -1);
            pg_end(c);
            break;
        }
        uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        pg_bytes(c, p + 5, len - 4);
        pg_end(c);
        p += 1 + len;
        if (c->out.n > (1 << 20) && !pg_flush(c))
            break;
    }
    pg_begin(c, 'c');
    pg_end(c);
    snprintf(res->tag, sizeof(res->tag), "COPY %lld", (long long)r.nrows);
    pgres_free(&r);
    return 0;
}

static int copy_out(PgConn *c, const char *sql, long base, const CopyOpts *o, PgRes *res,
                    PgErr *e)
{
    QResult q = {0};
    if (pg_select(c, sql, base, &q, e))
        return -1;
    if (o->binary)
        return copy_out_binary(c, &q, res, e);
    pg_begin(c, 'H');
    buf_putc(&c->out, 0);
    pg_i16(c, q.ncol);
    for (int j = 0; j < q.ncol; j++)
        pg_i16(c, 0);
    pg_end(c);
    Buf line = BUF_INIT, cell = BUF_INIT;
    if (o->header) {
        for (int j = 0; j < q.ncol; j++) {
            if (j)
                buf_putc(&line, o->delim);
            put_field(&line, o, q.colnames[j], strlen(q.colnames[j]));
        }
        buf_putc(&line, '\n');
        copy_data(c, &line);
    }
    int64_t n = q.rows ? q.rows->n : 0;
    for (int64_t i = 0; i < n; i++) {
        buf_reset(&line);
        for (int j = 0; j < q.ncol; j++) {
            const Vec *v = &q.rows->col[j];
            if (j)
                buf_putc(&line, o->delim);
            if (v->t.kind == TK_NULL || vec_is_null(v, i)) {
                buf_puts(&line, o->null);
                continue;
            }
            buf_reset(&cell);
            if (v->t.kind == TK_BOOL)
                buf_putc(&cell, v->i[i] ? 't' : 'f');
            else
                text_format_vec(v, i, &cell);
            put_field(&line, o, (const char *)cell.p, cell.n);
        }
        buf_putc(&line, '\n');
        copy_data(c, &line);
        if (c->out.n > (1 << 20) && !pg_flush(c))
            break;
    }
    pg_begin(c, 'c');
    pg_end(c);
    buf_free(&line);
    buf_free(&cell);
    qresult_free(&q);
    snprintf(res->tag, sizeof(res->tag), "COPY %lld", (long long)n);
    return 0;
}

/* ---------------------------------------------------------------- FROM STDIN */

typedef struct CopyIn {
    PgConn *c;
    const Relation *r;
    const CopyOpts *o;
    const int *map;       /* table column -> field, -1 none */
    int nfield;
    InBatch *b;
    Buf carry, field;
    Str *f;               /* this record's fields */
    bool *isnull;
    int64_t rows, line, limit;
    bool header, done;
    PgErr e;
    bool failed;
} CopyIn;

/* Split one record (no line end) into fields; false on a malformed one. */
static bool fields(CopyIn *ci, const char *p, size_t n, int *nf)
{
    const CopyOpts *o = ci->o;
    Buf *fb = &ci->field;
    buf_reset(fb);
    size_t *starts = sl_malloc(sizeof(size_t) * (size_t)(ci->nfield + 1));
    int k = 0;
    size_t i = 0;
    bool ok = true;
    for (;;) {
        bool q = false, any = false;
        size_t from = fb->n;
        while (i < n) {
            char ch = p[i];
            if (o->csv && ch == '"') {
                any = q = true;
                for (i++; i < n; i++) {
                    if (p[i] == '"' && i + 1 < n && p[i + 1] == '"')
                        buf_putc(fb, p[i++]);
                    else if (p[i] == '"')
                        break;
                    else
                        buf_putc(fb, p[i]);
                }
                if (i >= n)
                    ok = false;
                i++;
                continue;
            }
            if (ch == o->delim)
                break;
            if (!o->csv && ch == '\\' && i + 1 < n) {
                char x = p[++i];
                buf_putc(fb, x == 't' ? '\t' : x == 'n' ? '\n' : x == 'r' ? '\r'
                             : x == 'b' ? '\b' : x == 'f' ? '\f' : x == 'v' ? '\v' : x);
                if (x == 'N')
                    any = true; /* \N: NULL, checked below on the raw text */
                i++;
                continue;
            }
            buf_putc(fb, ch);
            any = true;
            i++;
        }
        if (k < ci->nfield) {
            starts[k] = from;
            /* NULL: the raw field equals the NULL string, unquoted */
            size_t rawlen = fb->n - from;
            const char *raw = (const char *)fb->p + from;
            if (!o->csv)
                ci->isnull[k] = rawlen == 1 && raw[0] == 'N' && any && !q &&
                                !strcmp(o->null, "\\N");
            else
                ci->isnull[k] = !q && rawlen == strlen(o->null) &&
                                !memcmp(raw, o->null, rawlen);
            if (!o->csv && strcmp(o->null, "\\N") && rawlen == strlen(o->null) &&
                !memcmp(raw, o->null, rawlen))
                ci->isnull[k] = true;
            ci->f[k].n = (uint32_t)rawlen;
        }
        k++;
        if (i >= n)
            break;
        i++; /* the delimiter */
    }
    for (int j = 0; j < k && j < ci->nfield; j++)
        ci->f[j].p = (const char *)fb->p + starts[j];
    sl_free(starts);
    *nf = k;
    return ok;
}

static void bad(CopyIn *ci, const char *code, const char *fmt, const char *a, const char *b)
{
    if (ci->failed)
        return;
    ci->failed = true;
    pg_err(&ci->e, code, fmt, a, b);
    char ctx[64];
    snprintf(ctx, sizeof(ctx), " (COPY %s, line %lld)", ci->r->name, (long long)ci->line);
    strncat(ci->e.msg, ctx, sizeof(ci->e.msg) - strlen(ci->e.msg) - 1);
}

static void record(CopyIn *ci, const char *p, size_t n)
{
    ci->line++;
    if (ci->failed)
        return;
    if (ci->header) {
        ci->header = false;
        return;
    }
    if (!ci->o->csv && n == 2 && p[0] == '\\' && p[1] == '.') {
        ci->done = true; /* the end-of-data marker */
        return;
    }
    int nf;
    if (!fields(ci, p, n, &nf)) {
        bad(ci, "22P04", "unterminated CSV quoted field%s%s", "", "");
        return;
    }
    if (nf != ci->nfield) {
        bad(ci, "22P04", nf < ci->nfield ? "missing data for a column%s%s"
                                         : "extra data after last expected column%s%s", "", "");
        return;
    }
    if (ci->rows >= ci->limit) {
        char lim[32];
        snprintf(lim, sizeof(lim), "%lld", (long long)ci->limit);
        bad(ci, "54000", "the COPY holds more than %s records, the bound of the input queue "
                         "(sluice run --http-buffer)%s; nothing was taken: split it", lim, "");
        return;
    }
    const Relation *r = ci->r;
    Chunk *ch = inbatch_room(ci->b);
    int64_t k = ch->n;
    for (int j = 0; j < r->ncol; j++) {
        Vec *v = &ch->col[j];
        int m = ci->map[j];
        if (m < 0 || ci->isnull[m]) {
            if (!v->nul) {
                bad(ci, "23502", "null value in column \"%s\" of relation \"%s\" violates "
                                 "not-null constraint", r->colnames[j], r->name);
                return;
            }
            vec_set_null(v, k);
            continue;
        }
        if (v->nul)
            v->nul[k] = 0;
        Err err;
        err_init(&err);
        if (text_parse_vec(v, k, ci->f[m].p, ci->f[m].n, inbatch_arena(ci->b), &err)) {
            bad(ci, "22P02", "column \"%s\": %s", r->colnames[j], err.msg);
            return;
        }
    }
    ch->w[ch->n++] = 1;
    ci->rows++;
}

/* Complete records of carry (all of it at the end). */
static void drain(CopyIn *ci, bool at_end)
{
    const char *base = (const char *)ci->carry.p;
    size_t n = ci->carry.n, pos = 0;
    while (pos < n && !ci->done) {
        const char *p = base + pos;
        size_t len;
        if (ci->o->csv) {
            len = fmt_csv_record_len(p, n - pos, at_end);
        } else {
            const char *nl = memchr(p, '\n', n - pos);
            len = nl ? (size_t)(nl - p) + 1 : at_end ? n - pos : 0;
        }
        if (!len)
            break;
        size_t rn = len;
        while (rn && (p[rn - 1] == '\n' || p[rn - 1] == '\r'))
            rn--;
        record(ci, p, rn);
        pos += len;
    }
    memmove(ci->carry.p, ci->carry.p + pos, n - pos);
    ci->carry.n = n - pos;
}

static int copy_in(PgConn *c, int rel, const int *map, int nfield, const CopyOpts *o,
                   PgRes *res, PgErr *e)
{
    PgServer *s = c->s;
    const Relation *r = &s->c->rels[rel];
    PipeStats st;
    pipeline_stats(s->p, &st);
    CopyIn ci;
    memset(&ci, 0, sizeof(ci));
    ci.c = c;
    ci.r = r;
    ci.o = o;
    ci.map = map;
    ci.nfield = nfield;
    ci.b = inbatch_new(s->c, rel);
    ci.f = sl_calloc((size_t)nfield + 1, sizeof(Str));
    ci.isnull = sl_calloc((size_t)nfield + 1, sizeof(bool));
    ci.limit = st.queue_limit;
    ci.header = o->header;
    pipestats_free(&st);
    pg_begin(c, 'G');
    buf_putc(&c->out, 0);
    pg_i16(c, nfield);
    for (int j = 0; j < nfield; j++)
        pg_i16(c, 0);
    pg_end(c);
    int rc = 0;
    if (!pg_flush(c))
        rc = pg_err(e, "08006", "the client left during COPY");
    bool ended = false;
    while (!rc && !ended) {
        char t;
        if (pg_read_msg(c, &t)) {
            c->broken = true;
            rc = pg_err(e, "08006", "the client left during COPY");
            break;
        }
        switch (t) {
        case 'd':
            if (ci.done || ci.failed)
                break;
            buf_append(&ci.carry, c->msg.p, c->msg.n);
            drain(&ci, false);
            break;
        case 'c':
            drain(&ci, true);
            ended = true;
            break;
        case 'f':
            rc = pg_err(e, "57014", "COPY from stdin failed: %s", (const char *)c->msg.p);
            break;
        case 'H':
        case 'S':
            break;
        default:
            rc = pg_err(e, "08P01", "unexpected message type 0x%02x during COPY from stdin",
                        (unsigned char)t);
        }
    }
    if (!rc && ci.failed) {
        *e = ci.e;
        rc = -1;
    }
    if (!rc) {
        /* the rows go in as an INSERT's do */
        rc = pg_push_batch(c, ci.b, e);
        ci.b = NULL;
        if (!rc)
            snprintf(res->tag, sizeof(res->tag), "COPY %lld", (long long)ci.rows);
    }
    inbatch_free(ci.b);
    buf_free(&ci.carry);
    buf_free(&ci.field);
    sl_free(ci.f);
    sl_free(ci.isnull);
    return rc;
}

int pg_copy(PgConn *c, const char *sql, long base, PgRes *res, PgErr *e)
{
    const char *p = pg_skip_ws(sql);
    pg_accept_kw(&p, "COPY");
    p = pg_skip_ws(p);
    CopyOpts o;
    if (*p == '(') {
        /* COPY (query) TO STDOUT */
        int depth = 0;
        const char *q = p;
        bool in_str = false;
        for (; *q; q++) {
            if (*q == '\'')
                in_str = !in_str;
            else if (!in_str && *q == '(')
                depth++;
            else if (!in_str && *q == ')' && --depth == 0)
                break;
        }
        if (*q != ')')
            return pg_err(e, "42601", "syntax error in COPY: unbalanced parentheses");
        const char *after = q + 1;
        if (!pg_accept_kw(&after, "TO") || !pg_accept_kw(&after, "STDOUT"))
            return pg_err(e, "0A000", "COPY (query) goes TO STDOUT only: the server writes "
                                      "no files");
        if (options(after, &o, e))
            return -1;
        char *inner = sl_strndup(p + 1, (size_t)(q - p - 1));
        const char *w = pg_skip_ws(inner);
        int rc;
        bool sub = pg_accept_kw(&w, "SUBSCRIBE");
        if (sub && o.binary)
            rc = pg_err(e, "0A000", "COPY (SUBSCRIBE ...) streams text lines only: drop "
                                    "FORMAT binary");
        else if (sub)
            rc = pg_subscribe(c, w, true, e) ? -1 : 1;
        else
            rc = copy_out(c, inner, base + (long)(p + 1 - sql), &o, res, e);
        sl_free(inner);
        return rc;
    }
    char name[256];
    if (!pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error in COPY: expected a table or (query)");
    const Circuit *ci = c->s->c;
    int rel = circuit_find_rel(ci, name);
    if (rel < 0)
        return pg_err(e, "42P01", "relation \"%s\" does not exist", name);
    const Relation *r = &ci->rels[rel];
    int *map = sl_calloc((size_t)r->ncol + 1, sizeof(int));
    int nfield = r->ncol, rc = 0;
    for (int j = 0; j < r->ncol; j++)
        map[j] = j;
    p = pg_skip_ws(p);
    if (*p == '(') {
        for (int j = 0; j < r->ncol; j++)
            map[j] = -1;
        nfield = 0;
        p++;
        for (;;) {
            char col[256];
            int j = 0;
            if (!pg_name_at(&p, col, sizeof(col))) {
                rc = pg_err(e, "42601", "syntax error in the column list of COPY");
                goto out;
            }
            while (j < r->ncol && strcasecmp(r->colnames[j], col))
                j++;
            if (j == r->ncol) {
                rc = pg_err(e, "42703", "column \"%s\" of relation \"%s\" does not exist", col,
                            r->name);
                goto out;
            }
            map[j] = nfield++;
            p = pg_skip_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p++ != ')') {
                rc = pg_err(e, "42601", "syntax error in the column list of COPY");
                goto out;
            }
            break;
        }
    }
    if (pg_accept_kw(&p, "FROM")) {
        if (!pg_accept_kw(&p, "STDIN")) {
            rc = pg_err(e, "0A000", "COPY ... FROM reads STDIN only: the server reads no "
                                    "files");
            goto out;
        }
        if ((rc = options(p, &o, e)))
            goto out;
        if (o.binary) {
            rc = pg_err(e, "0A000", "COPY FROM in binary format is not supported: text or csv");
            goto out;
        }
        if ((rc = pg_write_target(c, name, e) < 0 ? -1 : 0))
            goto out;
        rc = copy_in(c, rel, map, nfield, &o, res, e);
    } else if (pg_accept_kw(&p, "TO")) {
        if (!pg_accept_kw(&p, "STDOUT")) {
            rc = pg_err(e, "0A000", "COPY ... TO writes STDOUT only: the server writes no "
                                    "files");
            goto out;
        }
        if ((rc = options(p, &o, e)))
            goto out;
        Buf q = BUF_INIT;
        buf_puts(&q, "SELECT ");
        for (int j = 0, k = 0; j < r->ncol; j++)
            if (map[j] >= 0 || nfield == r->ncol)
                buf_printf(&q, "%s%s", k++ ? ", " : "", r->colnames[j]);
        buf_printf(&q, " FROM %s", r->name);
        rc = copy_out(c, buf_cstr(&q), 0, &o, res, e);
        buf_free(&q);
    } else {
        rc = pg_err(e, "42601", "syntax error in COPY: expected FROM STDIN or TO STDOUT");
    }
out:
    sl_free(map);
    return rc;
}

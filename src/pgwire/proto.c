/*
 * pgwire/proto.c - the bytes of protocol 3: messages written into a
 * session's output buffer (type byte, length patched at the end, fields in
 * network order) and sent when the session waits for its client; the
 * error and notice fields; our types as PostgreSQL type OIDs with values
 * in text format; results built as encoded DataRow messages; the reader
 * of a message body that never reads past its end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "pg_int.h"

void pg_begin(PgConn *c, char type)
{
    buf_putc(&c->out, type);
    c->mstart = c->out.n;
    pg_i32(c, 0);
}

void pg_i16(PgConn *c, int v)
{
    uint16_t x = htons((uint16_t)v);
    buf_append(&c->out, &x, 2);
}

void pg_i32(PgConn *c, int32_t v)
{
    uint32_t x = htonl((uint32_t)v);
    buf_append(&c->out, &x, 4);
}

void pg_str(PgConn *c, const char *s) { buf_append(&c->out, s, strlen(s) + 1); }

void pg_bytes(PgConn *c, const void *p, size_t n) { buf_append(&c->out, p, n); }

void pg_end(PgConn *c)
{
    uint32_t len = htonl((uint32_t)(c->out.n - c->mstart));
    memcpy(c->out.p + c->mstart, &len, 4);
}

bool pg_flush(PgConn *c)
{
    size_t off = 0;
    while (!c->broken && off < c->out.n) {
        ssize_t k;
        if (c->tls) {
            k = gnutls_record_send(c->tls, c->out.p + off, c->out.n - off);
            if (k == GNUTLS_E_INTERRUPTED)
                continue;
        } else {
            k = send(c->fd, c->out.p + off, c->out.n - off, MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR)
                continue;
        }
        if (k <= 0)
            c->broken = true; /* gone, or SO_SNDTIMEO: it does not read */
        else
            off += (size_t)k;
    }
    buf_reset(&c->out);
    return !c->broken;
}

void pg_param_status(PgConn *c, const char *name, const char *value)
{
    pg_begin(c, 'S');
    pg_str(c, name);
    pg_str(c, value);
    pg_end(c);
}

void pg_ready(PgConn *c)
{
    pg_begin(c, 'Z');
    buf_putc(&c->out, !c->in_block ? 'I' : c->failed ? 'E' : 'T');
    pg_end(c);
}

static void fields(PgConn *c, char type, const char *sev, const char *code, const char *msg,
                   const char *hint, int pos)
{
    pg_begin(c, type);
    buf_putc(&c->out, 'S');
    pg_str(c, sev);
    buf_putc(&c->out, 'V');
    pg_str(c, sev);
    buf_putc(&c->out, 'C');
    pg_str(c, code);
    buf_putc(&c->out, 'M');
    pg_str(c, msg);
    if (hint && *hint) {
        buf_putc(&c->out, 'H');
        pg_str(c, hint);
    }
    if (pos > 0) {
        char p[16];
        snprintf(p, sizeof(p), "%d", pos);
        buf_putc(&c->out, 'P');
        pg_str(c, p);
    }
    buf_putc(&c->out, 0);
    pg_end(c);
}

void pg_send_error(PgConn *c, const PgErr *e)
{
    fields(c, 'E', e->fatal ? "FATAL" : "ERROR", e->code[0] ? e->code : "XX000", e->msg, e->hint,
           e->pos);
}

void pg_notice(PgConn *c, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fields(c, 'N', "WARNING", code, msg, NULL, 0);
}

int pg_err(PgErr *e, const char *code, const char *fmt, ...)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

/* SQLSTATE of an engine error, from its class and message. */
static const char *sqlstate(const Err *err)
{
    const char *m = err->msg;
    switch (err->code) {
    case SL_EPARSE:
        return "42601";
    case SL_ESEMANTIC:
        if (strstr(m, "does not exist") || strstr(m, "unknown table"))
            return strstr(m, "function") ? "42883" : "42P01";
        if (strstr(m, "column") && (strstr(m, "not found") || strstr(m, "unknown")))
            return "42703";
        if (strstr(m, "function"))
            return "42883";
        return "42804";
    case SL_EUNSUPPORTED:
        return "0A000";
    case SL_EDATA:
        return "22P02";
    case SL_ERUNTIME:
        if (strstr(m, "division by zero"))
            return "22012";
        if (strstr(m, "overflow") || strstr(m, "out of range"))
            return "22003";
        return "22000";
    default:
        return "XX000";
    }
}

int pg_err_from(PgConn *c, PgErr *e, const Err *err, const char *sql, long base)
{
    pg_err(e, sqlstate(err), "%s", err->msg);
    if (err->line > 0 && c->query) {
        /* line:col (1-based, bytes) within sql -> characters of the query */
        const char *p = sql;
        int line = 1, col = 1;
        while (*p && (line < err->line || (line == err->line && col < err->col))) {
            if (*p == '\n')
                line++, col = 1;
            else
                col++;
            p++;
        }
        long at = base + (long)(p - sql), qn = (long)strlen(c->query);
        if (at < 0)
            at = 0;
        if (at > qn)
            at = qn;
        int chars = 0;
        for (long i = 0; i < at; i++)
            chars += ((unsigned char)c->query[i] & 0xC0) != 0x80;
        e->pos = chars + 1;
    }
    return -1;
}

uint32_t pg_type_oid(SqlType t)
{
    switch ((TypeKind)t.kind) {
    case TK_BOOL: return 16;
    case TK_TINYINT:
    case TK_SMALLINT: return 21;
    case TK_INT: return 23;
    case TK_BIGINT: return 20;
    case TK_DECIMAL: return 1700;
    case TK_REAL: return 700;
    case TK_DOUBLE: return 701;
    case TK_CHAR: return 1042;
    case TK_VARCHAR: return t.len == VARCHAR_UNBOUNDED ? 25 : 1043;
    case TK_DATE: return 1082;
    case TK_TIME: return 1083;
    case TK_TIMESTAMP: return 1114;
    case TK_TIMESTAMPTZ: return 1184;
    case TK_VARIANT: return 3802; /* jsonb: our text form is JSON */
    case TK_ARRAY: /* the array type of the element's */
        switch ((TypeKind)t.elem) {
        case TK_BOOL: return 1000;
        case TK_TINYINT:
        case TK_SMALLINT: return 1005;
        case TK_INT: return 1007;
        case TK_BIGINT: return 1016;
        case TK_DECIMAL: return 1231;
        case TK_REAL: return 1021;
        case TK_DOUBLE: return 1022;
        case TK_CHAR: return 1014;
        case TK_VARCHAR: return t.len == VARCHAR_UNBOUNDED ? 1009 : 1015;
        case TK_DATE: return 1182;
        case TK_TIME: return 1183;
        case TK_TIMESTAMP: return 1115;
        case TK_TIMESTAMPTZ: return 1185;
        default: return 1009;
        }
    default: return 25; /* intervals (our text form), NULL: text */
    }
}

int pg_type_len(uint32_t oid)
{
    switch (oid) {
    case 16: return 1;
    case 21: return 2;
    case 23: case 700: case 1082: return 4;
    case 20: case 701: case 1083: case 1114: case 1184: return 8;
    default: return -1;
    }
}

void pg_send_desc(PgConn *c, const PgRes *r)
{
    pg_begin(c, 'T');
    pg_i16(c, r->ncol);
    for (int j = 0; j < r->ncol; j++) {
        pg_str(c, r->names[j]);
        pg_i32(c, 0);
        pg_i16(c, 0);
        pg_i32(c, (int32_t)r->oids[j]);
        pg_i16(c, pg_type_len(r->oids[j]));
        pg_i32(c, -1);
        pg_i16(c, r->fmts ? r->fmts[j] : 0);
    }
    pg_end(c);
}

void pg_send_rows(PgConn *c, const PgRes *r) { buf_append(&c->out, r->rows.p, r->rows.n); }

void pg_send_complete(PgConn *c, const char *tag)
{
    pg_begin(c, 'C');
    pg_str(c, tag);
    pg_end(c);
}

void pgres_cols(PgRes *r, int ncol)
{
    r->has_rows = true;
    r->ncol = ncol;
    r->names = sl_calloc((size_t)ncol + 1, sizeof(char *));
    r->oids = sl_calloc((size_t)ncol + 1, sizeof(uint32_t));
}

void pgres_col(PgRes *r, int j, const char *name, uint32_t oid)
{
    r->names[j] = sl_strdup(name);
    r->oids[j] = oid;
}

static void put32(Buf *b, uint32_t v)
{
    v = htonl(v);
    buf_append(b, &v, 4);
}

static void put16(Buf *b, uint16_t v)
{
    v = htons(v);
    buf_append(b, &v, 2);
}

void pgres_row(PgRes *r, const char *const *vals)
{
    Buf *b = &r->rows;
    buf_putc(b, 'D');
    size_t start = b->n;
    put32(b, 0);
    put16(b, (uint16_t)r->ncol);
    for (int j = 0; j < r->ncol; j++) {
        if (!vals[j]) {
            put32(b, 0xFFFFFFFFu);
            continue;
        }
        size_t n = strlen(vals[j]);
        put32(b, (uint32_t)n);
        buf_append(b, vals[j], n);
    }
    uint32_t len = htonl((uint32_t)(b->n - start));
    memcpy(b->p + start, &len, 4);
    r->nrows++;
}

void pgres_from_qresult(PgRes *r, const QResult *q)
{
    pgres_cols(r, q->ncol);
    for (int j = 0; j < q->ncol; j++) /* unnamed columns: PostgreSQL's name for them */
        pgres_col(r, j, strncmp(q->colnames[j], "EXPR$", 5) ? q->colnames[j] : "?column?",
                  pg_type_oid(q->types[j]));
    const Chunk *ch = q->rows;
    Buf cell = BUF_INIT;
    Buf *b = &r->rows;
    for (int64_t i = 0; ch && i < ch->n; i++) {
        buf_putc(b, 'D');
        size_t start = b->n;
        put32(b, 0);
        put16(b, (uint16_t)q->ncol);
        for (int j = 0; j < q->ncol; j++) {
            const Vec *v = &ch->col[j];
            if (vec_is_null(v, i) || v->t.kind == TK_NULL) {
                put32(b, 0xFFFFFFFFu);
                continue;
            }
            buf_reset(&cell);
            if (v->t.kind == TK_BOOL)
                buf_putc(&cell, v->i[i] ? 't' : 'f');
            else
                text_format_vec(v, i, &cell);
            put32(b, (uint32_t)cell.n);
            buf_append(b, cell.p, cell.n);
        }
        uint32_t len = htonl((uint32_t)(b->n - start));
        memcpy(b->p + start, &len, 4);
        r->nrows++;
    }
    buf_free(&cell);
}

void pgres_free(PgRes *r)
{
    for (int j = 0; j < r->ncol; j++)
        sl_free(r->names[j]);
    sl_free(r->names);
    sl_free(r->oids);
    sl_free(r->fmts);
    buf_free(&r->rows);
    memset(r, 0, sizeof(*r));
}

int pgrd_i16(PgRd *r)
{
    if (r->pos + 2 > r->n) {
        r->bad = true;
        return 0;
    }
    uint16_t v;
    memcpy(&v, r->p + r->pos, 2);
    r->pos += 2;
    return (int16_t)ntohs(v);
}

int32_t pgrd_i32(PgRd *r)
{
    if (r->pos + 4 > r->n) {
        r->bad = true;
        return 0;
    }
    uint32_t v;
    memcpy(&v, r->p + r->pos, 4);
    r->pos += 4;
    return (int32_t)ntohl(v);
}

const char *pgrd_str(PgRd *r)
{
    const char *s = r->pos < r->n ? memchr(r->p + r->pos, 0, r->n - r->pos) : NULL;
    if (!s) {
        r->bad = true;
        return "";
    }
    const char *out = r->p + r->pos;
    r->pos = (size_t)(s - r->p) + 1;
    return out;
}

const char *pgrd_bytes(PgRd *r, size_t n)
{
    if (n > r->n - r->pos) {
        r->bad = true;
        return NULL;
    }
    const char *out = r->p + r->pos;
    r->pos += n;
    return out;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool pg_read_full(PgConn *c, void *buf, size_t n, double secs)
{
    double end = secs >= 0 ? mono_now() + secs : 0;
    size_t got = 0;
    while (got < n) {
        int wait = 500;
        if (secs >= 0) {
            double left = end - mono_now();
            if (left <= 0)
                return false;
            if (left * 1000 < wait)
                wait = (int)(left * 1000) + 1;
        }
        struct pollfd pf = {c->fd, POLLIN, 0};
        bool pending = c->tls && gnutls_record_check_pending(c->tls) > 0;
        int k = pending ? 1 : poll(&pf, 1, wait);
        if (k < 0 && errno != EINTR)
            return false;
        if (__atomic_load_n(&c->s->stopping, __ATOMIC_RELAXED))
            return false;
        if (k <= 0)
            continue;
        ssize_t r;
        if (c->tls) {
            r = gnutls_record_recv(c->tls, (char *)buf + got, n - got);
            if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
                continue;
        } else {
            r = recv(c->fd, (char *)buf + got, n - got, 0);
            if (r < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
        }
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

int pg_read_msg(PgConn *c, char *type)
{
    uint32_t len;
    if (!pg_read_full(c, type, 1, -1) || !pg_read_full(c, &len, 4, PG_MSG_SECS))
        return -1;
    len = ntohl(len);
    if (len < 4 || len - 4 > PG_MAX_MSG) {
        PgErr e;
        pg_err(&e, len < 4 ? "08P01" : "54000", "invalid message length %u (at most %d bytes)",
               len, PG_MAX_MSG);
        e.fatal = true;
        pg_send_error(c, &e);
        pg_flush(c);
        return -1;
    }
    buf_reset(&c->msg);
    buf_reserve(&c->msg, len - 4 + 1);
    if (!pg_read_full(c, c->msg.p, len - 4, PG_MSG_SECS))
        return -1;
    c->msg.n = len - 4;
    c->msg.p[c->msg.n] = 0;
    return 0;
}

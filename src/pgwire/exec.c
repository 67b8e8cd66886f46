/*
 * pgwire/exec.c - the statements of a session: a Query message split into
 * statements (quotes, comments and dollar quotes respected), each run by
 * its first keyword:
 *   SELECT / WITH / VALUES / TABLE  catalog queries (catalog.c), else a
 *                                   one-shot SELECT over a snapshot (query.c)
 *   INSERT INTO t [(cols)] VALUES ... | SELECT ...  rows into the ingress
 *                                   queue of table t
 *   DELETE FROM t [WHERE ...]       the matching rows of t's snapshot,
 *                                   queued with weight -1
 *   BEGIN / COMMIT / ROLLBACK       the pipeline's transaction (opened by
 *                                   the block's first write)
 *   SET / SHOW / RESET / DISCARD    session settings
 *   COPY, SUBSCRIBE                 copy.c, sub.c
 * Everything else gets 0A000 with what to do instead.
 *
 * Writes are acknowledged once the input is durable (pipeline_push_take
 * logs it with storage, as HTTP ingress does); outside a transaction block
 * the answer waits for the step that applied the rows, so that the
 * session's next SELECT sees them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "../sql/sql.h"
#include "pg_int.h"

/* ---------------------------------------------------------------- scanning */

/* Statement boundaries of q: [start, end) pairs appended to v. */
typedef struct Span {
    size_t a, b;
} Span;

static int split(const char *q, Span **v, int *cap)
{
    int n = 0;
    size_t i = 0, start = 0;
    while (q[i]) {
        char ch = q[i];
        if (ch == '\'' || ch == '"') {
            for (i++; q[i] && !(q[i] == ch && q[i + 1] != ch); i++)
                if (q[i] == ch)
                    i++;
            if (q[i])
                i++;
        } else if (ch == '-' && q[i + 1] == '-') {
            while (q[i] && q[i] != '\n')
                i++;
        } else if (ch == '/' && q[i + 1] == '*') {
            const char *e = strstr(q + i + 2, "*/");
            i = e ? (size_t)(e - q) + 2 : strlen(q);
        } else if (ch == '$' && (q[i + 1] == '$' || isalpha((unsigned char)q[i + 1]))) {
            size_t k = i + 1;
            while (isalnum((unsigned char)q[k]) || q[k] == '_')
                k++;
            if (q[k] != '$') {
                i = k;
                continue;
            }
            size_t tl = k - i + 1;
            const char *e;
            for (e = q + k + 1; *e && strncmp(e, q + i, tl); e++)
                ;
            i = *e ? (size_t)(e - q) + tl : strlen(q);
        } else if (ch == ';') {
            *VEC_PUSH(*v, n, *cap) = (Span){start, i};
            start = ++i;
        } else {
            i++;
        }
    }
    *VEC_PUSH(*v, n, *cap) = (Span){start, i};
    return n;
}

/* INSERT INTO t [(c, ...)] {VALUES ... | SELECT ... | WITH ...}. */
static int do_insert(PgConn *c, const char *sql, const char *p, long base, PgRes *res,
                     PgErr *e)
{
    char name[256];
    if (!pg_accept_kw(&p, "INTO") || !pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error: expected INSERT INTO table");
    int rel = pg_write_target(c, name, e);
    if (rel < 0)
        return -1;
    const Relation *r = &c->s->c->rels[rel];
    int *map = sl_calloc((size_t)r->ncol + 1, sizeof(int));
    int nsrc = r->ncol;
    for (int j = 0; j < r->ncol; j++)
        map[j] = j;
    p = pg_skip_ws(p);
    int rc = 0;
    if (*p == '(') {
        const char *look = pg_skip_ws(p + 1);
        char w[16];
        pg_word(look, w, sizeof(w));
        if (strcmp(w, "SELECT") && strcmp(w, "VALUES") && strcmp(w, "WITH")) {
            for (int j = 0; j < r->ncol; j++)
                map[j] = -1;
            nsrc = 0;
            p++;
            for (;;) {
                char col[256];
                if (!pg_name_at(&p, col, sizeof(col))) {
                    rc = pg_err(e, "42601", "syntax error in the column list of INSERT");
                    goto out;
                }
                int j = 0;
                while (j < r->ncol && strcasecmp(r->colnames[j], col))
                    j++;
                if (j == r->ncol) {
                    rc = pg_err(e, "42703", "column \"%s\" of relation \"%s\" does not exist",
                                col, r->name);
                    goto out;
                }
                map[j] = nsrc++;
                p = pg_skip_ws(p);
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p != ')') {
                    rc = pg_err(e, "42601", "syntax error in the column list of INSERT");
                    goto out;
                }
                p++;
                break;
            }
        }
    }
    p = pg_skip_ws(p);
    {
        char w[16];
        pg_word(p, w, sizeof(w));
        if (!strcmp(w, "DEFAULT")) {
            rc = pg_err(e, "0A000", "INSERT ... DEFAULT VALUES is not supported: give values");
            goto out;
        }
    }
    QResult q = {0};
    if ((rc = pg_select(c, p, base + (long)(p - sql), &q, e)))
        goto out;
    if (q.ncol != nsrc)
        rc = pg_err(e, "42601", "INSERT has %s expressions than target columns (%d, not %d)",
                    q.ncol > nsrc ? "more" : "fewer", q.ncol, nsrc);
    else
        rc = pg_push_rows(c, rel, &q, map, 1, e);
    if (!rc)
        snprintf(res->tag, sizeof(res->tag), "INSERT 0 %lld",
                 (long long)(q.rows ? q.rows->n : 0));
    qresult_free(&q);
out:
    sl_free(map);
    return rc;
}

/* DELETE FROM t [WHERE ...]: the rows of t's snapshot that match. */
static int do_delete(PgConn *c, const char *sql, const char *p, long base, PgRes *res,
                     PgErr *e)
{
    char name[256];
    if (!pg_accept_kw(&p, "FROM"))
        return pg_err(e, "42601", "syntax error: expected DELETE FROM table");
    const char *at = pg_skip_ws(p);
    if (!pg_name_at(&p, name, sizeof(name)))
        return pg_err(e, "42601", "syntax error: expected DELETE FROM table");
    int rel = pg_write_target(c, name, e);
    if (rel < 0)
        return -1;
    const Relation *r = &c->s->c->rels[rel];
    if (!r->materialized || r->sink < 0) {
        pg_err(e, "55000", "DELETE reads the rows to delete from table %s, which is not "
                           "materialized", r->name);
        snprintf(e->hint, sizeof(e->hint), "declare it with WITH ('materialized' = 'true')");
        return -1;
    }
    Buf q = BUF_INIT;
    static const char pre[] = "SELECT * FROM ";
    buf_puts(&q, pre);
    buf_append(&q, at, strlen(at));
    QResult qr = {0};
    int rc = pg_select(c, buf_cstr(&q), base + (long)(at - sql) - (long)strlen(pre), &qr, e);
    buf_free(&q);
    if (rc)
        return rc;
    int *map = sl_calloc((size_t)r->ncol + 1, sizeof(int));
    for (int j = 0; j < r->ncol; j++)
        map[j] = j;
    rc = pg_push_rows(c, rel, &qr, map, -1, e);
    if (!rc)
        snprintf(res->tag, sizeof(res->tag), "DELETE %lld",
                 (long long)(qr.rows ? qr.rows->n : 0));
    sl_free(map);
    qresult_free(&qr);
    return rc;
}

/* ---------------------------------------------------------------- dispatch */

int pg_exec(PgConn *c, const char *sql, long base, PgRes *res, PgErr *e)
{
    const char *p = pg_skip_ws(sql);
    char kw[32];
    size_t n = pg_word(p, kw, sizeof(kw));
    const char *rest = p + n;
    if (c->failed && strcmp(kw, "ROLLBACK") && strcmp(kw, "ABORT") && strcmp(kw, "COMMIT") &&
        strcmp(kw, "END"))
        return pg_err(e, "25P02", "current transaction is aborted, commands ignored until end "
                                  "of transaction block");
    if (!strcmp(kw, "SELECT") || !strcmp(kw, "WITH") || !strcmp(kw, "VALUES") || *p == '(') {
        int k = pg_catalog_query(c, p, res, e);
        if (k)
            return k < 0 ? -1 : 0;
        QResult q = {0};
        if (pg_select(c, p, base + (long)(p - sql), &q, e))
            return -1;
        pgres_from_qresult(res, &q);
        snprintf(res->tag, sizeof(res->tag), "SELECT %lld", (long long)res->nrows);
        qresult_free(&q);
        return 0;
    }
    if (!strcmp(kw, "TABLE")) {
        char name[256];
        if (!pg_name_at(&rest, name, sizeof(name)))
            return pg_err(e, "42601", "syntax error: expected TABLE name");
        char q2[300];
        snprintf(q2, sizeof(q2), "SELECT * FROM %s", name);
        QResult q = {0};
        if (pg_select(c, q2, 0, &q, e))
            return -1;
        pgres_from_qresult(res, &q);
        snprintf(res->tag, sizeof(res->tag), "SELECT %lld", (long long)res->nrows);
        qresult_free(&q);
        return 0;
    }
    if (!strcmp(kw, "INSERT"))
        return do_insert(c, sql, rest, base, res, e);
    if (!strcmp(kw, "DELETE"))
        return do_delete(c, sql, rest, base, res, e);
    if (!strcmp(kw, "BEGIN") || !strcmp(kw, "START")) {
        if (c->in_block)
            pg_notice(c, "25001", "there is already a transaction in progress");
        c->in_block = true;
        snprintf(res->tag, sizeof(res->tag), "BEGIN");
        return 0;
    }
    if (!strcmp(kw, "COMMIT") || !strcmp(kw, "END") || !strcmp(kw, "ROLLBACK") ||
        !strcmp(kw, "ABORT")) {
        bool commit = !strcmp(kw, "COMMIT") || !strcmp(kw, "END");
        if (!c->in_block)
            pg_notice(c, "25P01", "there is no transaction in progress");
        bool failed = c->failed;
        pg_end_block(c, commit && !failed, e);
        if (e->code[0])
            return -1;
        snprintf(res->tag, sizeof(res->tag), "%s", commit && !failed ? "COMMIT" : "ROLLBACK");
        return 0;
    }
    if (!strcmp(kw, "SET"))
        return pg_set_stmt(c, rest, res, e);
    if (!strcmp(kw, "SHOW"))
        return pg_show_stmt(c, rest, res, e);
    if (!strcmp(kw, "RESET") || !strcmp(kw, "DISCARD")) {
        for (int i = 0; i < c->nset; i++)
            if (!strcmp(kw, "DISCARD") || pg_accept_kw(&rest, "ALL") ||
                !strcasecmp(c->set[i].name, pg_skip_ws(rest)))
                c->set[i].name[0] = 0;
        snprintf(res->tag, sizeof(res->tag), "%s", !strcmp(kw, "RESET") ? "RESET" : "DISCARD ALL");
        return 0;
    }
    if (!strcmp(kw, "COPY"))
        return pg_copy(c, sql, base, res, e);
    if (!strcmp(kw, "SUBSCRIBE"))
        return pg_subscribe(c, rest, false, e) ? -1 : 1;
    if (!strcmp(kw, "UPDATE"))
        return pg_err(e, "0A000", "UPDATE is not supported: DELETE the old rows and INSERT the "
                                  "new ones (an INSERT into a table with a PRIMARY KEY "
                                  "replaces the row with its key)");
    if (!strcmp(kw, "CREATE") || !strcmp(kw, "DROP") || !strcmp(kw, "ALTER"))
        return pg_err(e, "0A000", "%s is not supported over a running pipeline: its program is "
                                  "fixed; change the SQL file and restart", kw);
    static const char *const known[] = {
        "TRUNCATE", "GRANT", "REVOKE", "VACUUM", "ANALYZE", "EXPLAIN", "PREPARE", "EXECUTE",
        "DEALLOCATE", "LISTEN", "NOTIFY", "UNLISTEN", "LOCK", "CALL", "DO", "FETCH", "DECLARE",
        "CLOSE", "MOVE", "CHECKPOINT", "REINDEX", "CLUSTER", "COMMENT", "SAVEPOINT", "RELEASE",
        "MERGE", "REFRESH", "SECURITY", "IMPORT", "LOAD", "REASSIGN"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (!strcmp(kw, known[i]))
            return pg_err(e, "0A000", "%s is not supported (docs/pg-wire.md lists what is)", kw);
    pg_err(e, "42601", "syntax error at or near \"%.*s\"", n ? (int)n : 1, p);
    e->pos = 1;
    for (const char *x = c->query; x && x < c->query + base + (p - sql); x++)
        e->pos += ((unsigned char)*x & 0xC0) != 0x80;
    return -1;
}

void pg_simple_query(PgConn *c, const char *q)
{
    Span *sp = NULL;
    int cap = 0, n = split(q, &sp, &cap), ran = 0;
    c->query = q;
    for (int i = 0; i < n; i++) {
        char *sql = sl_strndup(q + sp[i].a, sp[i].b - sp[i].a);
        if (!*pg_skip_ws(sql)) {
            sl_free(sql);
            continue;
        }
        ran++;
        PgRes res = {0};
        PgErr e;
        memset(&e, 0, sizeof(e));
        int rc = pg_exec(c, sql, (long)sp[i].a, &res, &e);
        sl_free(sql);
        if (rc < 0) {
            pgres_free(&res);
            pg_send_error(c, &e);
            if (c->in_block)
                c->failed = true;
            break;
        }
        if (rc == 0) {
            if (res.has_rows) {
                pg_send_desc(c, &res);
                pg_send_rows(c, &res);
            }
            pg_send_complete(c, res.tag);
        }
        pgres_free(&res);
        if (c->broken)
            break;
    }
    if (!ran) {
        pg_begin(c, 'I'); /* EmptyQueryResponse */
        pg_end(c);
    }
    sl_free(sp);
    c->query = NULL;
    pg_ready(c);
}

/*
 * io/tr_pg_out.c - postgres_output: keeps a PostgreSQL table equal to a
 * view, through libpq.
 *
 * In: each step's consolidated changes of the view (output_write, from the
 * controller's deliver). Out: one PostgreSQL transaction per step that has
 * changes:
 *   COPY the deleted rows' keys into a temporary table (sluice_del) and
 *   the inserted rows into another (sluice_up), both ON COMMIT DELETE ROWS;
 *   DELETE FROM target USING sluice_del (by key), then INSERT ... SELECT
 *   FROM sluice_up ON CONFLICT (key) DO UPDATE (an update of a row is its
 *   delete and its insert: the delete goes first, the upsert wins); and
 *   upsert (target, step, hash) into the progress table; COMMIT.
 * Deletes and upserts by key are "set this key to this value (or to
 * nothing)", so applying a step twice gives the same table.
 *
 * Exactly once. The step number committed last, S, is the connector's
 * output offset (output_offset), which the journal records before each
 * step and checkpoints record too. At restart the controller calls
 * output_truncate(off) with the offset recorded last:
 *   off == 0  the pipeline starts from nothing: the table is emptied
 *             (refused when it holds rows no progress record explains);
 *   S == off  nothing more was written;
 *   S > off   the step after the recorded offset committed before the
 *             crash. The journal replays the same step, with the same
 *             changes: the first write after the restart skips it when
 *             its step number and the hash of its changes equal S's (a
 *             run without the journal, at_least_once, re-applies its
 *             different steps instead, which converges: see above);
 *   S < off   the table was changed behind the pipeline: refused.
 *
 * Failures, in deliver.c's classes. Transient: the connection is lost or
 * refused, the server is shutting down or out of resources, a
 * serialization failure (SQLSTATE 08, 57P, 53, 40001, 40P01): retried in
 * place, reconnecting, up to the connector's "delivery" attempts with
 * backoff, then reported transient (OutputConn.fail) so that deliver.c
 * queues the step; after a reconnect a step whose commit may have
 * happened is checked against the progress table. At start-up
 * (output_truncate) the wait has no bound but a stop. Per record: a data
 * or integrity error (SQLSTATE classes 22, 23: a CHECK or NOT NULL
 * constraint, a value too long for the column) rolls the step back and
 * writes it again row by row, each row under a savepoint; a row refused
 * again is rolled back alone and handed to the dead letters (oc->dead)
 * with PostgreSQL's message, the rest commits with the progress record
 * ("on_record_error": "stop" stops the pipeline instead). Fatal:
 * anything else (no unique index for the key, two rows of a step with the
 * same key) stops the pipeline with PostgreSQL's message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <ctype.h>
#include <math.h>

#include <libpq-fe.h>
#include <xxhash.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "../zset/key.h"
#include "format.h"
#include "io_int.h"

struct PgOut {
    char *uri;
    char *table;      /* quoted (possibly schema-qualified) */
    char *target;     /* the table as given: the progress record's name */
    char *progress;   /* quoted progress table */
    char **cols;      /* quoted column names */
    int *key;         /* key column indexes */
    int nkey;
    PGconn *conn;
    bool prepared;    /* this connection has the temporary tables */
    int64_t committed; /* S: the step committed last (0: none) */
    bool resync;      /* the first write after a restart may be S again */
    int64_t resync_step;
    uint64_t resync_hash;
    Buf copy, sql;
    int64_t retries;  /* transient failures retried */
    bool uncertain;   /* a write failed: its COMMIT may have happened */
    bool down;        /* a failure to reach the server was reported */
};

/* ---------------------------------------------------------------- names */

static void quote_ident(Buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        char c = (char)tolower((unsigned char)s[i]);
        if (c == '"')
            buf_putc(b, '"');
        buf_putc(b, c);
    }
    buf_putc(b, '"');
}

/* "a.b" -> "a"."b" (lower case) */
static char *quote_qualified(const char *s)
{
    Buf b = BUF_INIT;
    const char *dot = strchr(s, '.');
    if (dot) {
        quote_ident(&b, s, (size_t)(dot - s));
        buf_putc(&b, '.');
        s = dot + 1;
    }
    quote_ident(&b, s, strlen(s));
    char *r = sl_strdup(buf_cstr(&b));
    buf_free(&b);
    return r;
}

static void pg_type(Buf *b, SqlType t)
{
    switch (t.kind) {
    case TK_BOOL: buf_puts(b, "boolean"); break;
    case TK_TINYINT:
    case TK_SMALLINT: buf_puts(b, "smallint"); break;
    case TK_INT: buf_puts(b, "integer"); break;
    case TK_BIGINT: buf_puts(b, "bigint"); break;
    case TK_DECIMAL: buf_printf(b, "numeric(%d,%d)", t.prec, t.scale); break;
    case TK_REAL: buf_puts(b, "real"); break;
    case TK_DOUBLE: buf_puts(b, "double precision"); break;
    case TK_CHAR: buf_printf(b, "char(%d)", (int)t.len); break;
    case TK_VARCHAR:
        if (t.len == VARCHAR_UNBOUNDED)
            buf_puts(b, "text");
        else
            buf_printf(b, "varchar(%d)", (int)t.len);
        break;
    case TK_DATE: buf_puts(b, "date"); break;
    case TK_TIME: buf_puts(b, "time"); break;
    case TK_TIMESTAMP: buf_puts(b, "timestamp"); break;
    case TK_TIMESTAMPTZ: buf_puts(b, "timestamptz"); break;
    case TK_ROW: /* the text form, in a text column */
    case TK_MAP: buf_puts(b, "text"); break;
    case TK_VARIANT: buf_puts(b, "jsonb"); break;
    case TK_ARRAY: /* our text form is PostgreSQL's */
        pg_type(b, type_elem(t));
        buf_puts(b, "[]");
        break;
    default: buf_puts(b, "interval"); break;
    }
}

/* ---------------------------------------------------------------- config */

int tr_pg_out_config(OutputConn *oc, const cJSON *cfg, const char *where, Err *err)
{
    static const char *const keys[] = {"uri", "table", "key_columns", "progress_table", NULL};
    PgOut *po = sl_calloc(1, sizeof(*po));
    oc->pg = po;
    if (!cfg)
        return err_set(err, SL_ECONFIG, "%s: postgres_output needs a config with \"uri\", "
                       "\"table\" and \"key_columns\"", where);
    for (const cJSON *it = cfg->child; it; it = it->next) {
        bool ok = false;
        for (int k = 0; keys[k]; k++)
            ok |= !strcmp(it->string, keys[k]);
        if (!ok)
            return err_set(err, SL_ECONFIG, "%s: unknown key \"%s\" in postgres_output config "
                           "(known: uri, table, key_columns, progress_table)", where, it->string);
    }
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(cfg, "uri");
    const cJSON *tab = cJSON_GetObjectItemCaseSensitive(cfg, "table");
    const cJSON *kc = cJSON_GetObjectItemCaseSensitive(cfg, "key_columns");
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(cfg, "progress_table");
    if (!cJSON_IsString(uri) || !*uri->valuestring)
        return err_set(err, SL_ECONFIG, "%s: postgres_output needs a \"uri\" string "
                       "(e.g. \"postgresql://user@host:5432/db\")", where);
    if (!cJSON_IsString(tab) || !*tab->valuestring)
        return err_set(err, SL_ECONFIG, "%s: postgres_output needs a \"table\" string", where);
    if (pt && (!cJSON_IsString(pt) || !*pt->valuestring))
        return err_set(err, SL_ECONFIG, "%s: \"progress_table\" must be a table name", where);
    if (!kc)
        return err_set(err, SL_ECONFIG, "%s: postgres_output needs \"key_columns\": the view's "
                       "columns that identify a row (the table is kept equal to the view by "
                       "upserts and deletes by key)", where);
    if (!cJSON_IsArray(kc) || cJSON_GetArraySize(kc) == 0)
        return err_set(err, SL_ECONFIG, "%s: \"key_columns\" must be a non-empty array of "
                       "column names", where);
    po->uri = sl_strdup(uri->valuestring);
    po->target = sl_strdup(tab->valuestring);
    po->table = quote_qualified(tab->valuestring);
    po->progress = quote_qualified(pt ? pt->valuestring : "sluice_progress");
    po->key = sl_calloc((size_t)cJSON_GetArraySize(kc), sizeof(int));
    for (const cJSON *it = kc->child; it; it = it->next) {
        int col = -1;
        if (cJSON_IsString(it))
            for (int j = 0; j < oc->schema.ncol; j++)
                if (!strcasecmp(oc->schema.names[j], it->valuestring))
                    col = j;
        if (col < 0)
            return err_set(err, SL_ECONFIG, "%s: \"key_columns\": the view has no column %s%s%s",
                           where, cJSON_IsString(it) ? "\"" : "",
                           cJSON_IsString(it) ? it->valuestring : "(not a string)",
                           cJSON_IsString(it) ? "\"" : "");
        for (int k = 0; k < po->nkey; k++)
            if (po->key[k] == col)
                return err_set(err, SL_ECONFIG, "%s: \"key_columns\" names \"%s\" twice", where,
                               it->valuestring);
        po->key[po->nkey++] = col;
    }
    po->cols = sl_calloc((size_t)oc->schema.ncol + 1, sizeof(char *));
    for (int j = 0; j < oc->schema.ncol; j++) {
        Buf b = BUF_INIT;
        quote_ident(&b, oc->schema.names[j], strlen(oc->schema.names[j]));
        po->cols[j] = sl_strdup(buf_cstr(&b));
        buf_free(&b);
    }
    return 0;
}

static void pg_out_free(PgOut *po)
{
    if (!po)
        return;
    if (po->conn)
        PQfinish(po->conn);
    sl_free(po->uri);
    sl_free(po->table);
    sl_free(po->target);
    sl_free(po->progress);
    if (po->cols)
        for (int j = 0; po->cols[j]; j++)
            sl_free(po->cols[j]);
    sl_free(po->cols);
    sl_free(po->key);
    buf_free(&po->copy);
    buf_free(&po->sql);
    sl_free(po);
}

/* ---------------------------------------------------------------- connection */

static void pause_for(double secs)
{
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The message of a failed result or connection, one line. */
static const char *pg_msg(PgOut *po, PGresult *r, char *b, size_t n)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    if (!m || !*m)
        m = po->conn ? PQerrorMessage(po->conn) : "no connection";
    snprintf(b, n, "%s", m);
    for (char *p = b; *p; p++)
        if (*p == '\n')
            *p = *(p + 1) ? ' ' : '\0';
    return b;
}

/* A failure worth retrying: the connection is gone, or the server is
   shutting down, starting, or resolved a conflict by aborting us. */
static bool transient(PgOut *po, PGresult *r)
{
    if (!po->conn || PQstatus(po->conn) != CONNECTION_OK)
        return true;
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (!st)
        return r == NULL || PQresultStatus(r) == PGRES_FATAL_ERROR;
    return !strncmp(st, "08", 2) || !strncmp(st, "57P", 3) || !strcmp(st, "40001") ||
           !strcmp(st, "40P01") || !strncmp(st, "53", 2);
}

static int exec_ok(PgOut *po, const char *sql, PGresult **keep)
{
    PGresult *r = PQexec(po->conn, sql);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (keep) {
        *keep = r;
        return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;
    }
    PQclear(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;
}

static int connect_once(PgOut *po, OutputConn *oc, Err *err)
{
    if (po->conn)
        PQfinish(po->conn);
    po->prepared = false;
    po->conn = PQconnectdb(po->uri);
    if (PQstatus(po->conn) != CONNECTION_OK) {
        char m[400];
        return err_set(err, SL_EIO, "%s: cannot connect to PostgreSQL: %s", oc->name,
                       pg_msg(po, NULL, m, sizeof(m)));
    }
    PQsetNoticeProcessor(po->conn, NULL, NULL);
    PQclear(PQexec(po->conn, "SET client_min_messages = warning"));
    return 0;
}

/* Create the progress table, the target table when missing, and this
   session's staging tables; check that the key has a unique index. */
/* Append an upsert of rows from src ("SELECT * FROM sluice_up", or
   "VALUES ($1, ...)"): INSERT INTO table (columns) src ON CONFLICT (key)
   DO UPDATE SET the other columns (DO NOTHING when every column is a key
   column). */
static void put_upsert(const PgOut *po, int ncol, const char *src, Buf *s)
{
    buf_printf(s, "INSERT INTO %s (", po->table);
    for (int j = 0; j < ncol; j++)
        buf_printf(s, "%s%s", j ? ", " : "", po->cols[j]);
    buf_printf(s, ") %s ON CONFLICT (", src);
    for (int k = 0; k < po->nkey; k++)
        buf_printf(s, "%s%s", k ? ", " : "", po->cols[po->key[k]]);
    int nset = 0;
    for (int j = 0; j < ncol; j++) {
        bool is_key = false;
        for (int k = 0; k < po->nkey; k++)
            is_key |= po->key[k] == j;
        if (!is_key)
            buf_printf(s, "%s%s = EXCLUDED.%s", nset++ ? ", " : ") DO UPDATE SET ",
                       po->cols[j], po->cols[j]);
    }
    if (!nset)
        buf_puts(s, ") DO NOTHING");
}

static int prepare(PgOut *po, OutputConn *oc, Err *err)
{
    if (po->prepared)
        return 0;
    Buf *s = &po->sql;
    char m[600];
    PGresult *r = NULL;
    buf_reset(s);
    buf_printf(s, "CREATE TABLE IF NOT EXISTS %s (target text PRIMARY KEY, step bigint NOT NULL, "
                  "hash bigint NOT NULL)", po->progress);
    if (exec_ok(po, buf_cstr(s), &r))
        goto out_fail;
    PQclear(r);
    buf_reset(s);
    buf_printf(s, "CREATE TABLE IF NOT EXISTS %s (", po->table);
    for (int j = 0; j < oc->schema.ncol; j++) {
        buf_printf(s, "%s%s ", j ? ", " : "", po->cols[j]);
        pg_type(s, oc->schema.types[j]);
    }
    buf_puts(s, ", PRIMARY KEY (");
    for (int k = 0; k < po->nkey; k++)
        buf_printf(s, "%s%s", k ? ", " : "", po->cols[po->key[k]]);
    buf_puts(s, "))");
    if (exec_ok(po, buf_cstr(s), &r))
        goto out_fail;
    PQclear(r);
    buf_reset(s);
    buf_puts(s, "CREATE TEMP TABLE IF NOT EXISTS sluice_up ON COMMIT DELETE ROWS AS SELECT ");
    for (int j = 0; j < oc->schema.ncol; j++)
        buf_printf(s, "%s%s", j ? ", " : "", po->cols[j]);
    buf_printf(s, " FROM %s WITH NO DATA", po->table);
    if (exec_ok(po, buf_cstr(s), &r))
        goto out_fail;
    PQclear(r);
    buf_reset(s);
    buf_puts(s, "CREATE TEMP TABLE IF NOT EXISTS sluice_del ON COMMIT DELETE ROWS AS SELECT ");
    for (int k = 0; k < po->nkey; k++)
        buf_printf(s, "%s%s", k ? ", " : "", po->cols[po->key[k]]);
    buf_printf(s, " FROM %s WITH NO DATA", po->table);
    if (exec_ok(po, buf_cstr(s), &r))
        goto out_fail;
    PQclear(r);
    /* the upsert on an empty stage: PostgreSQL checks its conflict target */
    buf_reset(s);
    put_upsert(po, oc->schema.ncol, "SELECT * FROM sluice_up", s);
    if (exec_ok(po, buf_cstr(s), &r))
        goto out_fail;
    PQclear(r);
    po->prepared = true;
    return 0;
out_fail:
    pg_msg(po, r, m, sizeof(m));
    bool tr = transient(po, r);
    PQclear(r);
    return err_set(err, tr ? SL_EIO : SL_ECONFIG, "%s: PostgreSQL table %s: %s", oc->name,
                   po->table, m);
}

/* The local tier of retries: attempts so far and the next wait. Forever
   (bounded false) at start-up; a write gives up after the connector's
   "delivery" attempts and says the failure was transient (oc->fail). */
typedef struct Tries {
    bool bounded;
    int n;
    double wait;
    bool *said;       /* PgOut.down: the failure was reported */
} Tries;

/* After a transient failure: true to try again (having waited), false when
   the tries are used up or the pipeline stops (err set, oc->fail). */
static bool try_again(OutputConn *oc, Tries *t, const char *m, Err *err)
{
    oc->fail = OUT_FAIL_TRANSIENT;
    /* (a drain thread tries once: deliver.c paces its tries) */
    if (t->bounded && ++t->n >= (oc->draining ? 1 : oc->dcfg.attempts)) {
        err_set(err, SL_EIO, "%.500s", m);
        return false;
    }
    if (oc->stop && oc->stop(oc->stop_arg)) {
        err_set(err, SL_EIO, "%.500s; stopped while waiting for it", m);
        return false;
    }
    if (!*t->said)
        fprintf(stderr, "sluice: %s; retrying\n", m);
    *t->said = true;
    double max = (double)oc->dcfg.max_backoff_ms / 1000.0;
    if (t->wait <= 0)
        t->wait = (double)oc->dcfg.backoff_ms / 1000.0;
    pause_for(t->wait);
    t->wait = fmin(t->wait * 2, max > 0 ? max : 1);
    return true;
}

/* Connected and prepared, waiting (with backoff) while the server is
   unreachable. Errors other than a lost connection are returned. */
static int ensure(PgOut *po, OutputConn *oc, Tries *t, Err *err)
{
    for (;;) {
        Err e = {0};
        int rc = 0;
        if (!po->conn || PQstatus(po->conn) != CONNECTION_OK)
            rc = connect_once(po, oc, &e);
        if (!rc)
            rc = prepare(po, oc, &e);
        if (!rc) {
            return 0;
        }
        if (e.code != SL_EIO) {
            oc->fail = OUT_FAIL_FATAL;
            return err_set(err, e.code, "%s", e.msg);
        }
        po->retries++;
        if (po->conn) {
            PQfinish(po->conn);
            po->conn = NULL;
        }
        if (!try_again(oc, t, e.msg, err))
            return err->code;
    }
}

/* The progress record: *step and *hash (0, 0 when there is none). */
static int read_progress(PgOut *po, int64_t *step, uint64_t *hash, PGresult **fail)
{
    const char *vals[1] = {po->target};
    Buf *s = &po->sql;
    buf_reset(s);
    buf_printf(s, "SELECT step, hash FROM %s WHERE target = $1", po->progress);
    PGresult *r = PQexecParams(po->conn, buf_cstr(s), 1, NULL, vals, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        *fail = r;
        return -1;
    }
    *step = 0;
    *hash = 0;
    if (PQntuples(r) > 0) {
        *step = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *hash = (uint64_t)strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    return 0;
}

/* Run fn until it works, reconnecting after a lost connection (the local
   tier: t); other errors end it (err). A data or integrity error (SQLSTATE
   classes 22, 23) sets *row_err when row_err is given. */
typedef int (*PgFn)(PgOut *po, OutputConn *oc, void *arg, PGresult **fail);

static int with_retry(PgOut *po, OutputConn *oc, PgFn fn, void *arg, const char *what, Tries *t,
                      bool *row_err, Err *err)
{
    for (;;) {
        if (ensure(po, oc, t, err))
            return err->code;
        PGresult *fail = NULL;
        if (fn(po, oc, arg, &fail) == 0) {
            if (*t->said)
                fprintf(stderr, "sluice: %s: connected to PostgreSQL again; %s works again\n",
                        oc->name, what);
            *t->said = false;
            return 0;
        }
        char m[600];
        pg_msg(po, fail, m, sizeof(m));
        bool tr = transient(po, fail);
        const char *st = fail ? PQresultErrorField(fail, PG_DIAG_SQLSTATE) : NULL;
        bool per_row = !tr && st && (!strncmp(st, "22", 2) || !strncmp(st, "23", 2));
        PQclear(fail);
        if (PQtransactionStatus(po->conn) != PQTRANS_IDLE)
            PQclear(PQexec(po->conn, "ROLLBACK"));
        if (!tr) {
            oc->fail = OUT_FAIL_FATAL;
            if (row_err)
                *row_err = per_row;
            return err_set(err, SL_EIO, "%s: %s in PostgreSQL table %s failed: %s", oc->name,
                           what, po->table, m);
        }
        po->uncertain = true;
        PQfinish(po->conn);
        po->conn = NULL;
        po->prepared = false;
        char mm[800];
        snprintf(mm, sizeof(mm), "%.190s: %.40s in PostgreSQL table %.100s failed (%.400s)",
                 oc->name, what, po->table, m);
        if (!try_again(oc, t, mm, err))
            return err->code;
    }
}

/* ---------------------------------------------------------------- restart */

typedef struct TruncArg {
    int64_t off;
    int64_t step;
    uint64_t hash;
} TruncArg;

static int do_truncate(PgOut *po, OutputConn *oc, void *arg, PGresult **fail)
{
    TruncArg *t = arg;
    if (exec_ok(po, "BEGIN", fail))
        return -1;
    PQclear(*fail);
    *fail = NULL;
    if (read_progress(po, &t->step, &t->hash, fail))
        return -1;
    if (t->off > 0) /* nothing to change: output_write decides */
        return exec_ok(po, "COMMIT", fail) ? -1 : (PQclear(*fail), *fail = NULL, 0);
    Buf *s = &po->sql;
    if (t->step == 0) { /* no record: the table must hold nothing */
        buf_reset(s);
        buf_printf(s, "SELECT count(*) FROM %s", po->table);
        PGresult *r = NULL;
        if (exec_ok(po, buf_cstr(s), &r)) {
            *fail = r;
            return -1;
        }
        long long n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        t->hash = (uint64_t)n; /* rows found (reported by the caller) */
        if (n > 0) {
            t->step = -1;
            PQclear(PQexec(po->conn, "ROLLBACK"));
            return 0;
        }
    }
    const char *vals[1] = {po->target};
    buf_reset(s);
    buf_printf(s, "DELETE FROM %s", po->table);
    if (exec_ok(po, buf_cstr(s), fail))
        return -1;
    PQclear(*fail);
    buf_reset(s);
    buf_printf(s, "INSERT INTO %s (target, step, hash) VALUES ($1, 0, 0) ON CONFLICT (target) "
                  "DO UPDATE SET step = 0, hash = 0", po->progress);
    PGresult *r = PQexecParams(po->conn, buf_cstr(s), 1, NULL, vals, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        *fail = r;
        return -1;
    }
    PQclear(r);
    if (exec_ok(po, "COMMIT", fail))
        return -1;
    PQclear(*fail);
    *fail = NULL;
    return 0;
}

static int pg_out_truncate(OutputConn *oc, int64_t off, Err *err)
{
    PgOut *po = oc->pg;
    if (!po->conn) /* not opened here (scale-out: another host writes it) */
        return 0;
    TruncArg t = {off, 0, 0};
    Tries tries = {false, 0, 0, &po->down}; /* at start: until it is back or a stop */
    if (with_retry(po, oc, do_truncate, &t, "reading the progress record", &tries, NULL, err))
        return err->code;
    if (off == 0 && t.step < 0)
        return err_set(err, SL_ECONFIG, "%s: PostgreSQL table %s holds %lld rows, but %s has no "
                       "record of this pipeline writing them; empty the table (TRUNCATE %s) or "
                       "name another one", oc->name, po->table, (long long)t.hash, po->progress,
                       po->table);
    if (off == 0) {
        po->committed = 0;
        po->resync = false;
        return 0;
    }
    if (t.step < off)
        return err_set(err, SL_EIO, "%s: the progress record of PostgreSQL table %s in %s says "
                       "step %lld was written last, but the pipeline's storage says step %lld "
                       "was: the table was changed behind the pipeline. Empty it (TRUNCATE %s) "
                       "and start with a new storage directory", oc->name, po->table,
                       po->progress, (long long)t.step, (long long)off, po->table);
    po->committed = t.step;
    po->resync = t.step > off;
    po->resync_step = t.step;
    po->resync_hash = t.hash;
    return 0;
}

/* (read by the journal while a drain thread writes: deliver.c) */
static int64_t pg_out_offset(const OutputConn *oc)
{
    return __atomic_load_n(&oc->pg->committed, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- writing */

/* Append value j of row 0 of c to the COPY text buffer. */
static void copy_value(Buf *b, const Chunk *c, int j)
{
    const Vec *v = &c->col[j];
    if (vec_is_null(v, 0)) {
        buf_puts(b, "\\N");
        return;
    }
    if (v->t.kind == TK_INTERVAL_DT) {
        buf_printf(b, "%lld microseconds", (long long)v->i[0]);
        return;
    }
    if (v->t.kind == TK_INTERVAL_YM) {
        buf_printf(b, "%lld months", (long long)v->i[0]);
        return;
    }
    if (!v->s) {
        text_format_vec(v, 0, b);
        return;
    }
    const char *p = v->s[0].p;
    for (size_t i = 0; i < v->s[0].n; i++) {
        char ch = p[i];
        switch (ch) {
        case '\\': buf_puts(b, "\\\\"); break;
        case '\t': buf_puts(b, "\\t"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\r': buf_puts(b, "\\r"); break;
        default: buf_putc(b, ch);
        }
    }
}

typedef struct WriteArg {
    const Batch *b;
    int64_t step;
    uint64_t hash;
    int64_t ups, dels;
    bool rowwise;     /* one row at a time under savepoints (a row was refused) */
} WriteArg;

static int copy_in(PgOut *po, const char *sql, Buf *data, PGresult **fail)
{
    PGresult *r = PQexec(po->conn, sql);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        *fail = r;
        return -1;
    }
    PQclear(r);
    if (data->n && PQputCopyData(po->conn, (const char *)data->p, (int)data->n) != 1) {
        *fail = NULL;
        return -1;
    }
    if (PQputCopyEnd(po->conn, NULL) != 1) {
        *fail = NULL;
        return -1;
    }
    r = PQgetResult(po->conn);
    PGresult *extra;
    while ((extra = PQgetResult(po->conn)) != NULL)
        PQclear(extra);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        *fail = r;
        return -1;
    }
    PQclear(r);
    return 0;
}

/* Tuple i of b as a COPY text line into out (deletes: key columns only),
   decoded into row. */
static void row_text(PgOut *po, OutputConn *oc, const Batch *b, int64_t i, Chunk *row, Buf *out)
{
    key_decode(batch_key(b, i), oc->schema.types, oc->schema.ncol, row, 0, 0);
    if (b->w[i] > 0) {
        for (int j = 0; j < oc->schema.ncol; j++) {
            if (j)
                buf_putc(out, '\t');
            copy_value(out, row, j);
        }
    } else {
        for (int k = 0; k < po->nkey; k++) {
            if (k)
                buf_putc(out, '\t');
            copy_value(out, row, po->key[k]);
        }
    }
    buf_putc(out, '\n');
}

static Chunk *one_row(OutputConn *oc)
{
    arena_reset(oc->scratch);
    Chunk *row = chunk_new(oc->scratch, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    return row;
}

/* Fill out with the rows of sign ins (deletes: key columns only). */
static int64_t copy_rows(PgOut *po, OutputConn *oc, const Batch *b, bool ins, Buf *out)
{
    int64_t n = 0;
    buf_reset(out);
    Chunk *row = one_row(oc);
    for (int64_t i = 0; i < b->n; i++) {
        if ((b->w[i] > 0) != ins)
            continue;
        row_text(po, oc, b, i, row, out);
        n++;
    }
    return n;
}

static void put_delete(PgOut *po, Buf *s)
{
    buf_printf(s, "DELETE FROM %s t USING sluice_del d WHERE ", po->table);
    for (int k = 0; k < po->nkey; k++)
        buf_printf(s, "%st.%s = d.%s", k ? " AND " : "", po->cols[po->key[k]],
                   po->cols[po->key[k]]);
}

/* Value j of row 0 of c as a query parameter's text (NULL: false), into
   b after a NUL. */
static bool param_value(Buf *b, const Chunk *c, int j)
{
    const Vec *v = &c->col[j];
    if (vec_is_null(v, 0))
        return false;
    if (v->t.kind == TK_INTERVAL_DT)
        buf_printf(b, "%lld microseconds", (long long)v->i[0]);
    else if (v->t.kind == TK_INTERVAL_YM)
        buf_printf(b, "%lld months", (long long)v->i[0]);
    else if (!v->s)
        text_format_vec(v, 0, b);
    else
        buf_append(b, v->s[0].p, v->s[0].n);
    buf_putc(b, '\0');
    return true;
}

/* The rowwise write: every change under its own savepoint, deletes first,
   each one statement with parameters (no staging table: its dead rows
   would make every later row slower); a row PostgreSQL refuses (a data or
   integrity error) is rolled back alone and handed to the dead letters
   with the message. */
static int write_rows(PgOut *po, OutputConn *oc, WriteArg *wa, PGresult **fail)
{
    int ncol = oc->schema.ncol;
    Buf ins_sql = BUF_INIT, del_sql = BUF_INIT, vals = BUF_INIT;
    Buf vals_src = BUF_INIT;
    buf_puts(&vals_src, "VALUES (");
    for (int j = 0; j < ncol; j++)
        buf_printf(&vals_src, "%s$%d", j ? ", " : "", j + 1);
    buf_puts(&vals_src, ")");
    put_upsert(po, ncol, buf_cstr(&vals_src), &ins_sql);
    buf_free(&vals_src);
    buf_printf(&del_sql, "DELETE FROM %s WHERE ", po->table);
    for (int k = 0; k < po->nkey; k++)
        buf_printf(&del_sql, "%s%s = $%d", k ? " AND " : "", po->cols[po->key[k]], k + 1);
    const char **pv = sl_calloc((size_t)ncol + 1, sizeof(char *));
    size_t *off = sl_calloc((size_t)ncol + 1, sizeof(size_t));
    Chunk *row = one_row(oc);
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (int64_t i = 0; i < wa->b->n && !rc; i++) {
            bool ins = wa->b->w[i] > 0;
            if (ins != (pass == 1))
                continue;
            key_decode(batch_key(wa->b, i), oc->schema.types, ncol, row, 0, 0);
            int np = ins ? ncol : po->nkey;
            buf_reset(&vals);
            for (int p = 0; p < np; p++) {
                size_t at = vals.n;
                off[p] = param_value(&vals, row, ins ? p : po->key[p]) ? at : (size_t)-1;
            }
            for (int p = 0; p < np; p++)
                pv[p] = off[p] == (size_t)-1 ? NULL : (const char *)vals.p + off[p];
            if (exec_ok(po, "SAVEPOINT sluice_row", NULL)) {
                rc = -1;
                break;
            }
            PGresult *r = PQexecParams(po->conn, buf_cstr(ins ? &ins_sql : &del_sql), np, NULL,
                                       pv, NULL, NULL, 0);
            if (r && PQresultStatus(r) == PGRES_COMMAND_OK) {
                PQclear(r);
                if (exec_ok(po, "RELEASE SAVEPOINT sluice_row", NULL))
                    rc = -1;
                continue;
            }
            const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
            if (transient(po, r) || !st || (strncmp(st, "22", 2) && strncmp(st, "23", 2))) {
                *fail = r;
                rc = -1;
                break;
            }
            char m[600];
            pg_msg(po, r, m, sizeof(m));
            PQclear(r);
            if (exec_ok(po, "ROLLBACK TO SAVEPOINT sluice_row", NULL)) {
                rc = -1;
                break;
            }
            Buf rec = BUF_INIT;
            buf_puts(&rec, ins ? "{\"insert\":" : "{\"delete\":");
            fmt_json_row(&oc->schema, row, 0, &rec);
            buf_putc(&rec, '}');
            oc->dead(oc->dead_arg, wa->step, buf_cstr(&rec), m);
            buf_free(&rec);
        }
    }
    sl_free(pv);
    sl_free(off);
    buf_free(&ins_sql);
    buf_free(&del_sql);
    buf_free(&vals);
    return rc;
}

static int do_write(PgOut *po, OutputConn *oc, void *arg, PGresult **fail)
{
    WriteArg *wa = arg;
    int64_t s0;
    uint64_t h0;
    /* after a lost connection the commit may have happened */
    if (po->uncertain) {
        if (read_progress(po, &s0, &h0, fail))
            return -1;
        if (s0 == wa->step && h0 == wa->hash)
            return 0;
    }
    if (exec_ok(po, "BEGIN", fail))
        return -1;
    PQclear(*fail);
    *fail = NULL;
    Buf *s = &po->sql;
    buf_reset(s);
    if (wa->rowwise) {
        if (write_rows(po, oc, wa, fail))
            return -1;
        buf_reset(s);
    } else {
        if (wa->dels) {
            copy_rows(po, oc, wa->b, false, &po->copy);
            if (copy_in(po, "COPY sluice_del FROM STDIN", &po->copy, fail))
                return -1;
        }
        if (wa->ups) {
            copy_rows(po, oc, wa->b, true, &po->copy);
            if (copy_in(po, "COPY sluice_up FROM STDIN", &po->copy, fail))
                return -1;
        }
        if (wa->dels) {
            put_delete(po, s);
            buf_puts(s, "; ");
        }
        if (wa->ups) {
            put_upsert(po, oc->schema.ncol, "SELECT * FROM sluice_up", s);
            buf_puts(s, "; ");
        }
    }
    buf_printf(s, "INSERT INTO %s (target, step, hash) VALUES (", po->progress);
    /* the target name as a literal */
    buf_putc(s, '\'');
    for (const char *p = po->target; *p; p++) {
        if (*p == '\'')
            buf_putc(s, '\'');
        buf_putc(s, *p);
    }
    buf_printf(s, "', %lld, %lld) ON CONFLICT (target) DO UPDATE SET step = EXCLUDED.step, "
                  "hash = EXCLUDED.hash",
               (long long)wa->step, (long long)(int64_t)wa->hash);
    if (exec_ok(po, buf_cstr(s), fail))
        return -1;
    PQclear(*fail);
    *fail = NULL;
    if (exec_ok(po, "COMMIT", fail))
        return -1;
    PQclear(*fail);
    *fail = NULL;
    return 0;
}

/* A step the table already holds (replayed, or committed before a
   restart): the records and bytes pg_out_write adds for it, rows upserted
   and deleted and the COPY text it sends last (the upserts', else the
   deletes'), in buffers of its own (output_account; a drain thread may be
   writing). */
static void pg_out_account(OutputConn *oc, int64_t step, const Batch *b)
{
    (void)step;
    PgOut *po = oc->pg;
    int64_t ups = 0, dels = 0;
    for (int64_t i = 0; i < b->n; i++)
        b->w[i] > 0 ? ups++ : dels++;
    if (ups + dels == 0)
        return;
    Arena *a = arena_new(16 * 1024);
    Chunk *row = chunk_new(a, oc->schema.ncol, oc->schema.types, 1);
    row->n = 1;
    Buf text = BUF_INIT;
    for (int64_t i = 0; i < b->n; i++)
        if ((b->w[i] > 0) == (ups > 0))
            row_text(po, oc, b, i, row, &text);
    __atomic_add_fetch(&oc->records, ups + dels, __ATOMIC_RELAXED);
    __atomic_add_fetch(&oc->bytes, (int64_t)text.n, __ATOMIC_RELAXED);
    buf_free(&text);
    arena_free(a);
}

static int pg_out_write(OutputConn *oc, int64_t step, const Batch *b, Err *err)
{
    PgOut *po = oc->pg;
    if (b->n == 0)
        return 0;
    WriteArg wa = {b, step, 0, 0, 0, false};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < b->n; i++) {
        int64_t w = b->w[i];
        if (w > 1)
            return err_set(err, SL_EIO, "%s: the view holds %lld copies of a row at step %lld, "
                           "but PostgreSQL table %s keeps one row per key: its \"key_columns\" "
                           "must identify the view's rows", oc->name, (long long)w,
                           (long long)step, po->table);
        if (w > 0)
            wa.ups++;
        else
            wa.dels++;
        h = XXH64(batch_key(b, i), batch_klen(b, i), h) ^ (uint64_t)w;
    }
    h &= 0x7fffffffffffffffull; /* kept in a bigint */
    wa.hash = h;
    if (po->resync) { /* the first step after a restart: committed already? */
        po->resync = false;
        if (step == po->resync_step && h == po->resync_hash) {
            fprintf(stderr, "sluice: %s: step %lld was committed to PostgreSQL before the "
                            "restart; not written again\n", oc->name, (long long)step);
            pg_out_account(oc, step, b);
            return 0;
        }
    }
    po->uncertain = false;
    Tries tries = {true, 0, 0, &po->down};
    bool row_err = false;
    Err e = {0};
    if (with_retry(po, oc, do_write, &wa, "writing a step", &tries, &row_err, &e)) {
        /* a row refused: find it (them) by writing the step row by row */
        if (!row_err || !oc->dead || oc->dcfg.stop_on_record_error)
            return err_set(err, e.code, "%s", e.msg);
        wa.rowwise = true;
        tries = (Tries){true, 0, 0, &po->down};
        if (with_retry(po, oc, do_write, &wa, "writing a step row by row", &tries, NULL, err))
            return err->code;
    }
    po->uncertain = false;
    __atomic_store_n(&po->committed, step, __ATOMIC_RELAXED);
    __atomic_add_fetch(&oc->records, wa.ups + wa.dels, __ATOMIC_RELAXED); /* a drain thread */
    __atomic_add_fetch(&oc->bytes, (int64_t)po->copy.n, __ATOMIC_RELAXED);
    return 0;
}

int tr_pg_out_open(OutputConn *oc, Err *err)
{
    PgOut *po = oc->pg;
    if (connect_once(po, oc, err))
        return err->code;
    Err e = {0};
    if (prepare(po, oc, &e))
        return err_set(err, SL_ECONFIG, "%s", e.msg);
    return 0;
}

static void pg_out_close(OutputConn *oc)
{
    pg_out_free(oc->pg);
    oc->pg = NULL;
}

const OutOps tr_pg_out_ops = {
    .write = pg_out_write,
    .truncate = pg_out_truncate,
    .offset = pg_out_offset,
    .close = pg_out_close,
    .committed = pg_out_offset, /* the offset is the last step committed */
    .account = pg_out_account,
};

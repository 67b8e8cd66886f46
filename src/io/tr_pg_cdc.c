/*
 * io/tr_pg_cdc.c - postgres_cdc_input: a PostgreSQL table's rows, then its
 * changes, through logical replication (libpq, pgoutput protocol 1).
 *
 * How data reaches it. At start the connector makes sure the table has
 * REPLICA IDENTITY FULL (old rows in full on update and delete), creates
 * the publication when missing; at the first read (unless it resumes) it
 * (re)creates its replication slot over a replication connection
 * (replication=database) with an exported
 * snapshot; a second connection COPYs the table's rows in that snapshot
 * (the initial snapshot), then the replication connection streams every
 * transaction that committed after it (START_REPLICATION ... LOGICAL at the
 * slot's consistent point). pgoutput messages are decoded here: Relation
 * (column names, mapped to the table's by name), Insert (+1), Update (the
 * old row -1, the new +1; unchanged TOASTed values come from the old row),
 * Delete (-1), Commit. A transaction's changes are held until its Commit,
 * then queued; input_next parses queued records into rows through text
 * (pgoutput's tuple format is text, as is COPY's): a value the table's
 * declared type does not accept is counted and reported, and its change
 * skipped. Truncate cannot be a Z-set change without the table's contents:
 * it is reported and counted.
 *
 * Position and exactly once. The position (input_pos) is (pos_lsn, k):
 * the end of the last transaction (or of the snapshot) whose records all
 * went into steps, and the records handed out after it. A restart
 * (input_seek) resumes streaming at pos_lsn and drops the first k records
 * (a transaction cut between steps continues where it was cut); replayed
 * steps wait for the server to stream their records again. The slot is
 * confirmed (standby status updates) up to pos_lsn, but with storage no
 * further than the position of the oldest checkpoint kept (input_release),
 * so the WAL a restart needs stays. The slot and its snapshot are set up at
 * the first read, after the restart has said where to resume; a fresh
 * start drops an old slot of the same name. The snapshot cannot be read
 * again: a restart inside it is refused. A restart waits (a while) for a
 * connection that just let go of the slot to be gone.
 *
 * Bootstrapping (input_boot_at, on a second instance opened for it): the
 * table as it was at the live input's position, for a changed program's
 * new views: a new snapshot, less the changes since, taken back
 * (boot_read).
 *
 * A lost connection is retried (at most once per backoff interval, without
 * blocking the pipeline): streaming resumes after the last transaction
 * received whole, so nothing is lost or repeated.
 *
 * Progress (/stats): the position is an LSN (the resume LSN, or where the
 * server's decoding has streamed to when everything received was handed
 * out); the high watermark is pg_current_wal_lsn(), asked at most once a
 * second over a third, ordinary connection driven without waiting
 * (probe_wal), so a slow or absent server never holds up a step.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>

#include <libpq-fe.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "io_int.h"

#define MAX_REPORTED 20

typedef struct TxEnd {
    size_t qend;       /* offset in q after the transaction's records */
    int64_t rec_end;   /* rec_in after them */
    uint64_t lsn;      /* its end */
} TxEnd;

struct PgCdc {
    char *uri;
    char *table;       /* as given */
    char *qtable;      /* quoted */
    char *pub, *slot;
    PGconn *conn;      /* replication connection */
    bool streaming;
    uint32_t relid;    /* the table's relation id in the stream */
    int *map;          /* stream column -> table column (-1: not ours) */
    int nmap;
    /* records: int8 weight, then per table column int32 length (-1 NULL)
       and the bytes */
    Buf q;             /* committed, not yet handed out */
    size_t qpos;
    int64_t qn;        /* records in q after qpos */
    Buf tx;            /* the open transaction's */
    int64_t txn;
    TxEnd *ends;       /* committed transactions still in q */
    int nends, capends;
    uint64_t received; /* end of the last transaction received whole */
    uint64_t confirmed;
    char *cols;        /* the table's columns, quoted, for COPY */
    bool started;      /* the slot is set up (lazily, at the first read) */
    /* the position: pos_lsn is the end of the last transaction (or of the
       snapshot) whose records were all handed out (0: in the snapshot),
       and rec_out - pos_base records after it were handed out too */
    uint64_t pos_lsn;
    int64_t pos_base, rec_in, rec_out;
    uint64_t seek_lsn; /* input_seek: resume there ... */
    int64_t skip;      /* ... skipping this many records */
    bool durable_known; /* input_release was called (storage): */
    uint64_t durable;  /* the slot is confirmed no further than this */
    double next_try, backoff, last_status;
    bool said_lost;
    int64_t truncates;
    /* progress (/stats): how far the server's decoding has streamed, and
       its current WAL end, asked over a connection of its own */
    uint64_t stream_end;
    PGconn *probe;
    PostgresPollingStatusType probe_poll; /* connecting: what it waits for */
    bool probe_ready, probe_busy;
    double probe_next;
    uint64_t wal_now;
    /* bootstrapping (input_boot_at): read the table as it was at the live
       input's position (boot_lsn, boot_skip), then end (boot_read) */
    bool boot;
    uint64_t boot_lsn;
    int64_t boot_skip;
};

static char *quoted(const char *s)
{
    Buf b = BUF_INIT;
    const char *dot = strchr(s, '.');
    for (const char *p = s; *p; p++) {
        if (p == s || (dot && p == dot + 1))
            buf_putc(&b, '"');
        if (p == dot) {
            buf_puts(&b, "\".");
            continue;
        }
        char c = (char)tolower((unsigned char)*p);
        if (c == '"')
            buf_putc(&b, '"');
        buf_putc(&b, c);
    }
    buf_putc(&b, '"');
    char *r = sl_strdup(buf_cstr(&b));
    buf_free(&b);
    return r;
}

/* ---------------------------------------------------------------- config */

int tr_pg_cdc_config(InputConn *ic, const cJSON *cfg, const char *where, Err *err)
{
    static const char *const keys[] = {"uri", "table", "publication", "slot", NULL};
    PgCdc *pc = sl_calloc(1, sizeof(*pc));
    ic->cdc = pc;
    if (!cfg)
        return err_set(err, SL_ECONFIG, "%s: postgres_cdc_input needs a config with \"uri\" and "
                       "\"table\"", where);
    for (const cJSON *it = cfg->child; it; it = it->next) {
        bool ok = false;
        for (int k = 0; keys[k]; k++)
            ok |= !strcmp(it->string, keys[k]);
        if (!ok)
            return err_set(err, SL_ECONFIG, "%s: unknown key \"%s\" in postgres_cdc_input config "
                           "(known: uri, table, publication, slot)", where, it->string);
    }
    const char *names[4] = {"uri", "table", "publication", "slot"};
    const char *vals[4] = {0};
    for (int k = 0; k < 4; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, names[k]);
        if (v && (!cJSON_IsString(v) || !*v->valuestring))
            return err_set(err, SL_ECONFIG, "%s: \"%s\" must be a non-empty string", where,
                           names[k]);
        vals[k] = v ? v->valuestring : NULL;
    }
    if (!vals[0] || !vals[1])
        return err_set(err, SL_ECONFIG, "%s: postgres_cdc_input needs \"uri\" and \"table\"",
                       where);
    pc->uri = sl_strdup(vals[0]);
    pc->table = sl_strdup(vals[1]);
    pc->qtable = quoted(vals[1]);
    char def[160];
    snprintf(def, sizeof(def), "sluice_%s", vals[1]);
    for (char *p = def; *p; p++)
        *p = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
    pc->pub = sl_strdup(vals[2] ? vals[2] : def);
    pc->slot = sl_strdup(vals[3] ? vals[3] : def);
    for (const char *p = pc->slot; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
            return err_set(err, SL_ECONFIG, "%s: \"slot\" may hold only lower-case letters, "
                           "digits and '_' (PostgreSQL's rule for slot names)", where);
    pc->backoff = 0.05;
    return 0;
}

static void cdc_free(PgCdc *pc)
{
    if (!pc)
        return;
    if (pc->conn)
        PQfinish(pc->conn);
    if (pc->probe)
        PQfinish(pc->probe);
    sl_free(pc->uri);
    sl_free(pc->table);
    sl_free(pc->qtable);
    sl_free(pc->pub);
    sl_free(pc->slot);
    sl_free(pc->map);
    sl_free(pc->ends);
    sl_free(pc->cols);
    buf_free(&pc->q);
    buf_free(&pc->tx);
    sl_free(pc);
}

/* ---------------------------------------------------------------- helpers */

static const char *one_line(const char *m, char *b, size_t n)
{
    snprintf(b, n, "%s", m && *m ? m : "unknown error");
    for (char *p = b; *p; p++)
        if (*p == '\n')
            *p = *(p + 1) ? ' ' : '\0';
    return b;
}

static int fail(InputConn *ic, PGconn *c, PGresult *r, const char *what, Err *err)
{
    char m[500];
    one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c), m, sizeof(m));
    if (!*m || !strcmp(m, "unknown error"))
        one_line(PQerrorMessage(c), m, sizeof(m));
    PQclear(r);
    return err_set(err, SL_EIO, "%s: %s: %s", ic->name, what, m);
}

static PGconn *connect_to(const char *uri, bool replication)
{
    const char *k[] = {"dbname", replication ? "replication" : NULL, NULL};
    const char *v[] = {uri, replication ? "database" : NULL, NULL};
    PGconn *c = PQconnectdbParams(k, v, 1);
    if (c)
        PQsetNoticeProcessor(c, NULL, NULL);
    return c;
}

static uint64_t lsn_parse(const char *s)
{
    unsigned hi = 0, lo = 0;
    if (sscanf(s, "%X/%X", &hi, &lo) != 2)
        return 0;
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }
static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void rec_begin(Buf *b, int w) { buf_putc(b, (char)w); }
/* Bytes of the record at p. */
static size_t rec_len(const char *p, int ncol)
{
    size_t i = 1;
    for (int j = 0; j < ncol; j++) {
        int32_t n;
        memcpy(&n, p + i, 4);
        i += 4 + (n > 0 ? (size_t)n : 0);
    }
    return i;
}
static void rec_field(Buf *b, const char *p, int32_t n)
{
    buf_append(b, &n, 4);
    if (n > 0)
        buf_append(b, p, (size_t)n);
}

/* ---------------------------------------------------------------- start */

/* COPY text format line -> a record (+1) in q. */
static void copy_line_to_rec(PgCdc *pc, int ncol, const char *p, size_t n)
{
    Buf field = BUF_INIT;
    rec_begin(&pc->q, 1);
    size_t i = 0;
    for (int j = 0; j < ncol; j++) {
        buf_reset(&field);
        size_t s = i;
        while (i < n && p[i] != '\t')
            i++;
        if (i - s == 2 && p[s] == '\\' && p[s + 1] == 'N') {
            rec_field(&pc->q, NULL, -1);
        } else {
            for (size_t k = s; k < i; k++) {
                char c = p[k];
                if (c == '\\' && k + 1 < i) {
                    c = p[++k];
                    c = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 'b' ? '\b'
                      : c == 'f' ? '\f' : c == 'v' ? '\v' : c;
                }
                buf_putc(&field, c);
            }
            rec_field(&pc->q, (const char *)field.p, (int32_t)field.n);
        }
        i++; /* the tab */
    }
    buf_free(&field);
    pc->qn++;
    pc->rec_in++;
}

static int start_stream(InputConn *ic, PgCdc *pc, const char *from, Err *err)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "START_REPLICATION SLOT %s LOGICAL %s (proto_version '1', publication_names '%s')",
             pc->slot, from, pc->pub);
    PGresult *r = PQexec(pc->conn, sql);
    if (PQresultStatus(r) != PGRES_COPY_BOTH)
        return fail(ic, pc->conn, r, "cannot start logical replication", err);
    PQclear(r);
    pc->streaming = true;
    return 0;
}

int tr_pg_cdc_open(InputConn *ic, Err *err)
{
    PgCdc *pc = ic->cdc;
    PGconn *c = connect_to(pc->uri, false);
    char sql[1024];
    PGresult *r;
    int rc = 0;
    if (PQstatus(c) != CONNECTION_OK) {
        rc = fail(ic, c, NULL, "cannot connect to PostgreSQL", err);
        goto out_finish;
    }
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    /* every column of the table must exist upstream */
    snprintf(sql, sizeof(sql), "SELECT relreplident FROM pg_class WHERE oid = '%s'::regclass",
             pc->qtable);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        rc = fail(ic, c, r, "the source table", err);
        goto out_finish;
    }
    bool full = PQgetvalue(r, 0, 0)[0] == 'f';
    PQclear(r);
    Buf cols = BUF_INIT;
    for (int j = 0; j < ic->schema.ncol; j++) {
        char *q = quoted(ic->schema.names[j]);
        buf_printf(&cols, "%s%s", j ? ", " : "", q);
        sl_free(q);
    }
    snprintf(sql, sizeof(sql), "SELECT %s FROM %s WHERE false", buf_cstr(&cols), pc->qtable);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = fail(ic, c, r, "the source table lacks a column of the Sluice table", err);
        goto out_cols;
    }
    PQclear(r);
    if (!full) {
        snprintf(sql, sizeof(sql), "ALTER TABLE %s REPLICA IDENTITY FULL", pc->qtable);
        r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = fail(ic, c, r, "cannot set REPLICA IDENTITY FULL on the source table (needed "
                      "for old rows on update and delete; run it as the table's owner)", err);
            goto out_cols;
        }
        PQclear(r);
    }
    snprintf(sql, sizeof(sql), "SELECT 1 FROM pg_publication WHERE pubname = '%s'", pc->pub);
    r = PQexec(c, sql);
    bool have_pub = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    if (!have_pub) {
        snprintf(sql, sizeof(sql), "CREATE PUBLICATION \"%s\" FOR TABLE %s", pc->pub, pc->qtable);
        r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = fail(ic, c, r, "cannot create the publication", err);
            goto out_cols;
        }
        PQclear(r);
    }
    pc->cols = sl_strdup(buf_cstr(&cols));
out_cols:
    buf_free(&cols);
out_finish:
    PQfinish(c);
    return rc;
}

/* The table's rows in exported snapshot snap (over ordinary connection c)
   into q, as records of weight +1. */
static int copy_snapshot(InputConn *ic, PgCdc *pc, PGconn *c, const char *snap, Err *err)
{
    char sql[1024];
    PGresult *r;
    PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
    snprintf(sql, sizeof(sql), "SET TRANSACTION SNAPSHOT '%s'", snap);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        return fail(ic, c, r, "cannot read the slot's snapshot", err);
    PQclear(r);
    snprintf(sql, sizeof(sql), "COPY (SELECT %s FROM %s) TO STDOUT", pc->cols, pc->qtable);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT)
        return fail(ic, c, r, "cannot copy the source table", err);
    PQclear(r);
    char *line;
    int n;
    while ((n = PQgetCopyData(c, &line, 0)) > 0) {
        size_t len = (size_t)n;
        while (len && line[len - 1] == '\n')
            len--;
        copy_line_to_rec(pc, ic->schema.ncol, line, len);
        ic->bytes += n;
        PQfreemem(line);
    }
    r = PQgetResult(c);
    if (n == -2 || PQresultStatus(r) != PGRES_COMMAND_OK)
        return fail(ic, c, r, "copying the source table failed", err);
    PQclear(r);
    PQclear(PQexec(c, "COMMIT"));
    return 0;
}

/* A fresh start: a new slot (an old one of that name is dropped), the
   table's rows in its snapshot, then the stream from its consistent point. */
static int begin_fresh(InputConn *ic, PgCdc *pc, Err *err)
{
    PGconn *c = connect_to(pc->uri, false);
    char sql[1024];
    PGresult *r;
    int rc = 0;
    if (PQstatus(c) != CONNECTION_OK) {
        rc = fail(ic, c, NULL, "cannot connect to PostgreSQL", err);
        goto out_finish;
    }
    /* a fresh start: a new slot, and its snapshot */
    snprintf(sql, sizeof(sql), "SELECT pg_drop_replication_slot('%s') FROM pg_replication_slots "
             "WHERE slot_name = '%s'", pc->slot, pc->slot);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = fail(ic, c, r, "cannot drop the old replication slot", err);
        goto out_finish;
    }
    PQclear(r);
    pc->conn = connect_to(pc->uri, true);
    if (PQstatus(pc->conn) != CONNECTION_OK) {
        rc = fail(ic, pc->conn, NULL, "cannot open a replication connection", err);
        goto out_finish;
    }
    snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput EXPORT_SNAPSHOT",
             pc->slot);
    r = PQexec(pc->conn, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        rc = fail(ic, pc->conn, r, "cannot create the replication slot", err);
        goto out_finish;
    }
    char point[64], snap[128];
    snprintf(point, sizeof(point), "%s", PQgetvalue(r, 0, 1));
    snprintf(snap, sizeof(snap), "%s", PQgetvalue(r, 0, 2));
    PQclear(r);
    pc->received = pc->confirmed = lsn_parse(point);
    /* the initial snapshot */
    if ((rc = copy_snapshot(ic, pc, c, snap, err)))
        goto out_finish;
    /* the snapshot ends at the slot's consistent point */
    TxEnd *e = VEC_PUSH(pc->ends, pc->nends, pc->capends);
    e->qend = pc->q.n;
    e->rec_end = pc->rec_in;
    e->lsn = pc->received;
    rc = start_stream(ic, pc, point, err);
out_finish:
    PQfinish(c);
    return rc;
}

/* A restart: the slot must still hold what follows the position. */
static int begin_resume(InputConn *ic, PgCdc *pc, Err *err)
{
    char sql[512], from[40];
    pc->conn = connect_to(pc->uri, true);
    if (PQstatus(pc->conn) != CONNECTION_OK)
        return fail(ic, pc->conn, NULL, "cannot open a replication connection", err);
    snprintf(sql, sizeof(sql), "SELECT confirmed_flush_lsn, active FROM pg_replication_slots "
             "WHERE slot_name = '%s'", pc->slot);
    PGresult *r = PQexec(pc->conn, sql);
    /* a connection that just let go of the slot (a killed process's, or
       a bootstrap's reading before this one) may hold it a moment more */
    for (double until = io_now() + 30; PQresultStatus(r) == PGRES_TUPLES_OK &&
                                        PQntuples(r) == 1 && PQgetvalue(r, 0, 1)[0] == 't' &&
                                        io_now() < until;) {
        PQclear(r);
        pause_ms(20);
        r = PQexec(pc->conn, sql);
    }
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(ic, pc->conn, r, "cannot read the replication slot", err);
    snprintf(from, sizeof(from), "%X/%X", (unsigned)(pc->seek_lsn >> 32), (unsigned)pc->seek_lsn);
    if (PQntuples(r) != 1) {
        PQclear(r);
        return err_set(err, SL_EIO, "%s: replication slot \"%s\" is gone, so the changes after "
                       "%s (where the pipeline resumes) cannot be read again; start with a new "
                       "storage directory (a new snapshot)", ic->name, pc->slot, from);
    }
    char cf[40];
    snprintf(cf, sizeof(cf), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (lsn_parse(cf) > pc->seek_lsn)
        return err_set(err, SL_EIO, "%s: replication slot \"%s\" was confirmed up to %s, past "
                       "%s where the pipeline resumes: the changes between are gone; start "
                       "with a new storage directory (a new snapshot)", ic->name, pc->slot,
                       cf, from);
    pc->received = pc->confirmed = pc->pos_lsn = pc->seek_lsn;
    if (pc->boot) { /* reading for a bootstrap: the slot is not moved at all */
        pc->durable_known = true;
        pc->durable = pc->confirmed = lsn_parse(cf);
    }
    int rc = start_stream(ic, pc, from, err);
    if (!rc && !pc->boot)
        fprintf(stderr, "sluice: %s: resuming replication at %s (%lld change%s after it "
                        "already read)\n", ic->name, from, (long long)pc->skip,
                pc->skip == 1 ? "" : "s");
    return rc;
}

/* Bootstrapping (input_boot_at; docs/bootstrapping.md): the table as it
   was at the live input's position (boot_lsn, boot_skip), for the new
   part of a changed program alone. PostgreSQL cannot show a past state, so:
   a new snapshot, exported by a temporary slot (dropped with its
   connection, also by a kill) at its consistent point x >= boot_lsn (the
   table now), then the changes between the position and x, streamed from
   the live slot (never confirmed: a restart still finds them), taken back
   last first (weights negated, in reverse order, so each prefix is a state
   the table had). The transactions of the stream in the snapshot are those
   that end at or before x. The live input then continues from its position
   for the whole circuit, as after any restart. */
static int pump(InputConn *ic, PgCdc *pc, Err *err);
static int boot_read(InputConn *ic, PgCdc *pc, Err *err)
{
    char sql[512], tmp[64], point[64], snap[128];
    pc->started = true;
    if (pc->boot_lsn == 0)
        return err_set(err, SL_EIO, "%s: the checkpoint was written during the initial snapshot "
                       "of %s, which cannot be read again", ic->name, pc->table);
    snprintf(tmp, sizeof(tmp), "%.40s_boot_%d", pc->slot, (int)getpid());
    PGconn *rep = connect_to(pc->uri, true), *c = connect_to(pc->uri, false);
    PGresult *r;
    int rc = 0;
    if (PQstatus(rep) != CONNECTION_OK) {
        rc = fail(ic, rep, NULL, "cannot open a replication connection", err);
        goto out;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        rc = fail(ic, c, NULL, "cannot connect to PostgreSQL", err);
        goto out;
    }
    snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT %s TEMPORARY LOGICAL pgoutput "
             "EXPORT_SNAPSHOT", tmp);
    r = PQexec(rep, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        rc = fail(ic, rep, r, "cannot create a temporary replication slot for a new snapshot "
                  "(bootstrapping needs one free slot)", err);
        goto out;
    }
    snprintf(point, sizeof(point), "%s", PQgetvalue(r, 0, 1));
    snprintf(snap, sizeof(snap), "%s", PQgetvalue(r, 0, 2));
    PQclear(r);
    uint64_t x = lsn_parse(point);
    if ((rc = copy_snapshot(ic, pc, c, snap, err)))
        goto out;
    PQfinish(rep); /* the temporary slot goes with it */
    rep = NULL;
    size_t qsnap = pc->q.n;
    int64_t nsnap = pc->qn, nback = 0;
    if (x > pc->boot_lsn) { /* changes after the position: stream them up to x */
        pc->seek_lsn = pc->boot_lsn;
        pc->skip = pc->boot_skip;
        pc->nends = 0;
        if ((rc = begin_resume(ic, pc, err)))
            goto out;
        for (double until = io_now() + 600; pc->stream_end < x;) {
            if (io_now() > until) {
                rc = err_set(err, SL_EIO, "%s: the change stream did not reach %s (the new "
                             "snapshot) in 600 s", ic->name, point);
                goto out;
            }
            if (pc->conn && pc->streaming) {
                struct pollfd fd = {PQsocket(pc->conn), POLLIN, 0};
                poll(&fd, 1, 100);
            } else {
                pause_ms(20);
            }
            if ((rc = pump(ic, pc, err)))
                goto out;
        }
        size_t cut = qsnap; /* after the last transaction in the snapshot */
        for (int t = 0; t < pc->nends; t++)
            if (pc->ends[t].lsn <= x)
                cut = pc->ends[t].qend;
        /* taken back, last first */
        size_t *at = NULL;
        int64_t cap = 0;
        for (size_t o = qsnap; o < cut; o += rec_len((const char *)pc->q.p + o, ic->schema.ncol))
            *VEC_PUSH(at, nback, cap) = o;
        Buf back = BUF_INIT;
        for (int64_t i = nback - 1; i >= 0; i--) {
            const char *rec = (const char *)pc->q.p + at[i];
            size_t len = rec_len(rec, ic->schema.ncol);
            buf_putc(&back, (char)-(signed char)rec[0]);
            buf_append(&back, rec + 1, len - 1);
        }
        pc->q.n = qsnap;
        if (back.n)
            buf_append(&pc->q, back.p, back.n);
        buf_free(&back);
        sl_free(at);
        if (pc->conn)
            PQfinish(pc->conn); /* the live input takes the slot back */
        pc->conn = NULL;
        pc->streaming = false;
    }
    pc->nends = 0;
    pc->qpos = 0;
    pc->qn = nsnap + nback;
    fprintf(stderr, "sluice: %s: read again for bootstrapping: a new snapshot of %lld row%s "
                    "at %s, less %lld change%s since the checkpoint's position\n",
            ic->name, (long long)nsnap, nsnap == 1 ? "" : "s", point, (long long)nback,
            nback == 1 ? "" : "s");
out:
    if (rep)
        PQfinish(rep);
    PQfinish(c);
    return rc;
}

static int begin(InputConn *ic, PgCdc *pc, Err *err)
{
    pc->started = true;
    return pc->seek_lsn ? begin_resume(ic, pc, err) : begin_fresh(ic, pc, err);
}

/* ---------------------------------------------------------------- stream */

static void report(InputConn *ic, const char *why, const char *text, size_t n)
{
    ic->errors++;
    if (ic->errors <= MAX_REPORTED)
        fprintf(stderr, "sluice: %s: %s%s%.*s\n", ic->name, why, n ? ": " : "",
                (int)(n > 200 ? 200 : n), text);
    else if (ic->errors == MAX_REPORTED + 1)
        fprintf(stderr, "sluice: %s: more bad records; only counting them from now on\n",
                ic->name);
}

/* Decode a TupleData at p into a record of weight w in out; old (may be
   NULL) supplies unchanged TOASTed values. Returns bytes used or 0. */
typedef struct Field {
    const char *p;
    int32_t n;
} Field;

static size_t tuple(PgCdc *pc, const InputConn *ic, const uint8_t *p, size_t n, Field *f)
{
    if (n < 2)
        return 0;
    int nc = p[0] << 8 | p[1];
    size_t i = 2;
    for (int j = 0; j < ic->schema.ncol; j++)
        f[j] = (Field){NULL, -2}; /* -2: absent */
    for (int k = 0; k < nc; k++) {
        if (i >= n)
            return 0;
        char kind = (char)p[i++];
        int col = k < pc->nmap ? pc->map[k] : -1;
        Field v = {NULL, -1};
        if (kind == 't') {
            if (i + 4 > n)
                return 0;
            int32_t len = (int32_t)rd32(p + i);
            i += 4;
            if (len < 0 || i + (size_t)len > n)
                return 0;
            v = (Field){(const char *)p + i, len};
            i += (size_t)len;
        } else if (kind == 'u') {
            v.n = -2; /* unchanged TOAST: the old row's */
        } else if (kind != 'n') {
            return 0;
        }
        if (col >= 0)
            f[col] = v;
    }
    return i;
}

/* The NUL-terminated string at p[*i] within n bytes (*i moves past it),
   or NULL when it has no terminator. */
static const char *cstr(const uint8_t *p, size_t n, size_t *i)
{
    if (*i >= n)
        return NULL;
    const uint8_t *z = memchr(p + *i, 0, n - *i);
    if (!z)
        return NULL;
    const char *s = (const char *)p + *i;
    *i = (size_t)(z - p) + 1;
    return s;
}

static void put_rec(Buf *b, int w, const Field *f, const Field *old, int ncol)
{
    rec_begin(b, w);
    for (int j = 0; j < ncol; j++) {
        Field v = f[j];
        if (v.n == -2 && old)
            v = old[j];
        rec_field(b, v.p, v.n == -2 ? -1 : v.n);
    }
}

static int decode(InputConn *ic, PgCdc *pc, const uint8_t *p, size_t n, Err *err)
{
    if (n == 0)
        return 0;
    int ncol = ic->schema.ncol;
    Field *nf = sl_calloc((size_t)ncol + 1, sizeof(Field));
    Field *of = sl_calloc((size_t)ncol + 1, sizeof(Field));
    char kind = (char)p[0];
    int rc = 0;
    if (kind == 'B') {
        buf_reset(&pc->tx);
        pc->txn = 0;
    } else if (kind == 'C' && n >= 26) {
        uint64_t end = rd64(p + 10);
        /* resuming: the first records after the position were read before */
        size_t off = 0;
        int64_t drop = pc->skip < pc->txn ? pc->skip : pc->txn;
        for (int64_t d = 0; d < drop; d++)
            off += rec_len((const char *)pc->tx.p + off, ncol);
        pc->skip -= drop;
        pc->rec_in += drop;
        pc->rec_out += drop;
        if (pc->tx.n > off) /* (an empty transaction has no buffer) */
            buf_append(&pc->q, pc->tx.p + off, pc->tx.n - off);
        pc->qn += pc->txn - drop;
        pc->rec_in += pc->txn - drop;
        buf_reset(&pc->tx);
        pc->txn = 0;
        TxEnd *e = VEC_PUSH(pc->ends, pc->nends, pc->capends);
        e->qend = pc->q.n;
        e->rec_end = pc->rec_in;
        e->lsn = end;
        pc->received = end;
    } else if (kind == 'R' && n >= 7) {
        uint32_t rel = rd32(p + 1);
        size_t i = 5;
        const char *ns = cstr(p, n, &i), *name = ns ? cstr(p, n, &i) : NULL;
        const char *want = strchr(pc->table, '.') ? strchr(pc->table, '.') + 1 : pc->table;
        if (!name || strcasecmp(name, want) || i + 3 > n)
            goto out; /* another table's (or malformed: nothing of ours) */
        i += 1; /* replica identity */
        int nc = p[i] << 8 | p[i + 1];
        i += 2;
        int *map = sl_calloc((size_t)nc + 1, sizeof(int));
        for (int k = 0; k < nc; k++) {
            const char *cn = NULL;
            if (i < n) {
                i += 1; /* flags */
                cn = cstr(p, n, &i);
            }
            if (!cn || i + 8 > n) {
                sl_free(map);
                goto bad;
            }
            i += 8; /* type, modifier */
            map[k] = -1;
            for (int j = 0; j < ncol; j++)
                if (!strcasecmp(ic->schema.names[j], cn))
                    map[k] = j;
        }
        pc->relid = rel;
        sl_free(pc->map);
        pc->map = map;
        pc->nmap = nc;
    } else if ((kind == 'I' || kind == 'U' || kind == 'D') && n >= 6) {
        uint32_t rel = rd32(p + 1);
        if (rel != pc->relid)
            goto out;
        size_t i = 5, used;
        bool have_old = false;
        if ((kind == 'U' || kind == 'D') && (p[i] == 'O' || p[i] == 'K')) {
            if (p[i] == 'K') {
                report(ic, "a change without the old row (the table's REPLICA IDENTITY is not "
                       "FULL): skipped", "", 0);
                goto out;
            }
            used = tuple(pc, ic, p + i + 1, n - i - 1, of);
            if (!used)
                goto bad;
            i += 1 + used;
            have_old = true;
        }
        if (kind == 'D') {
            if (!have_old)
                goto bad;
            put_rec(&pc->tx, -1, of, NULL, ncol);
            pc->txn++;
            goto out;
        }
        if (i >= n || p[i] != 'N')
            goto bad;
        used = tuple(pc, ic, p + i + 1, n - i - 1, nf);
        if (!used)
            goto bad;
        if (kind == 'U') {
            if (!have_old) {
                report(ic, "an update without the old row: skipped", "", 0);
                goto out;
            }
            put_rec(&pc->tx, -1, of, NULL, ncol);
            pc->txn++;
        }
        put_rec(&pc->tx, 1, nf, have_old ? of : NULL, ncol);
        pc->txn++;
    } else if (kind == 'T') {
        pc->truncates++;
        report(ic, "TRUNCATE of the source table cannot be followed (delete the rows instead); "
               "the Sluice table keeps its rows", "", 0);
    }
    goto out;
bad:
    rc = err_set(err, SL_EIO, "%s: malformed pgoutput message '%c' (%zu bytes)", ic->name, kind,
                 n);
out:
    sl_free(nf);
    sl_free(of);
    return rc;
}

static void send_status(PgCdc *pc, bool reply)
{
    uint8_t m[34];
    m[0] = 'r';
    wr64(m + 1, pc->received);
    wr64(m + 9, pc->confirmed);
    wr64(m + 17, pc->confirmed);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t us = ((int64_t)ts.tv_sec - 946684800) * 1000000 + ts.tv_nsec / 1000;
    wr64(m + 25, (uint64_t)us);
    m[33] = reply ? 1 : 0;
    PQputCopyData(pc->conn, (const char *)m, (int)sizeof(m));
    PQflush(pc->conn);
    pc->last_status = io_now();
}

static void lost(InputConn *ic, PgCdc *pc, const char *why)
{
    if (!pc->said_lost) {
        char m[400];
        fprintf(stderr, "sluice: %s: lost the replication connection (%s); reconnecting\n",
                ic->name, one_line(why, m, sizeof(m)));
    }
    pc->said_lost = true;
    pc->streaming = false;
    buf_reset(&pc->tx); /* a transaction not received whole comes again */
    pc->txn = 0;
    if (pc->conn)
        PQfinish(pc->conn);
    pc->conn = NULL;
    pc->next_try = io_now() + pc->backoff;
    pc->backoff = pc->backoff < 1 ? pc->backoff * 2 : 1;
}

static void reconnect(InputConn *ic, PgCdc *pc)
{
    if (io_now() < pc->next_try)
        return;
    pc->conn = connect_to(pc->uri, true);
    if (PQstatus(pc->conn) != CONNECTION_OK) {
        lost(ic, pc, PQerrorMessage(pc->conn));
        return;
    }
    char from[40];
    snprintf(from, sizeof(from), "%X/%X", (unsigned)(pc->received >> 32),
             (unsigned)pc->received);
    Err e = {0};
    if (start_stream(ic, pc, from, &e)) {
        lost(ic, pc, e.msg);
        return;
    }
    fprintf(stderr, "sluice: %s: replication resumed at %s\n", ic->name, from);
    pc->said_lost = false;
    pc->backoff = 0.05;
}

/* Take what the server has sent (not waiting). */
static int pump(InputConn *ic, PgCdc *pc, Err *err)
{
    if (!pc->streaming) {
        reconnect(ic, pc);
        if (!pc->streaming)
            return 0;
    }
    /* libpq reads one buffer per PQconsumeInput: read again while the
       socket has more, up to a bound per call (a step's worth) */
    for (int64_t got = 0, before = -1; got != before && (pc->q.n < (64u << 20) || pc->boot);) {
        before = got;
        if (!PQconsumeInput(pc->conn)) {
            lost(ic, pc, PQerrorMessage(pc->conn));
            return 0;
        }
        for (;;) {
            char *m;
            int n = PQgetCopyData(pc->conn, &m, 1);
            if (n == 0)
                break;
            if (n < 0) {
                lost(ic, pc, n == -1 ? "the server ended the stream" : PQerrorMessage(pc->conn));
                return 0;
            }
            got++;
            const uint8_t *u = (const uint8_t *)m;
            int rc = 0;
            if ((u[0] == 'w' && n >= 25) || (u[0] == 'k' && n >= 18)) {
                uint64_t end = rd64(u + (u[0] == 'w' ? 9 : 1)); /* walEnd */
                if (end > pc->stream_end)
                    pc->stream_end = end;
            }
            if (u[0] == 'w' && n >= 25) {
                ic->bytes += n;
                rc = decode(ic, pc, u + 25, (size_t)n - 25, err);
            } else if (u[0] == 'k' && n >= 18 && u[17]) {
                send_status(pc, false);
            }
            PQfreemem(m);
            if (rc)
                return rc;
        }
    }
    if (io_now() - pc->last_status > 1.0)
        send_status(pc, false);
    return 0;
}

/* Transactions now wholly handed out: the position moves past them, the
   slot may be confirmed up to it (with storage, no further than the oldest
   checkpoint kept); the queue is compacted. */
static void settle(PgCdc *pc)
{
    int k = 0;
    while (k < pc->nends && pc->ends[k].qend <= pc->qpos) {
        pc->pos_lsn = pc->ends[k].lsn;
        pc->pos_base = pc->ends[k++].rec_end;
    }
    /* with storage, no further than the oldest checkpoint kept */
    pc->confirmed = pc->durable_known && pc->durable < pc->pos_lsn ? pc->durable : pc->pos_lsn;
    if (k) {
        memmove(pc->ends, pc->ends + k, (size_t)(pc->nends - k) * sizeof(TxEnd));
        pc->nends -= k;
    }
    if (pc->qpos > 0 && (pc->qn == 0 || pc->qpos > (1u << 20))) { /* compact */
        for (int t = 0; t < pc->nends; t++)
            pc->ends[t].qend -= pc->qpos;
        memmove(pc->q.p, pc->q.p + pc->qpos, pc->q.n - pc->qpos);
        pc->q.n -= pc->qpos;
        pc->qpos = 0;
    }
}

/* Wait (a while: what never comes makes the caller's check fail) until
   records are queued. */
static int wait_records(InputConn *ic, PgCdc *pc, Err *err)
{
    for (double until = io_now() + 30; pc->qn == 0 && io_now() < until;) {
        if (pc->conn && pc->streaming) {
            struct pollfd fd = {PQsocket(pc->conn), POLLIN, 0};
            poll(&fd, 1, 100);
        } else {
            pause_ms(20);
        }
        if (pump(ic, pc, err))
            return -1;
    }
    return 0;
}

static int64_t cdc_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists,
                       Err *err)
{
    PgCdc *pc = ic->cdc;
    if (pc->boot) { /* read again for a bootstrap: all queued at the first read */
        if (!pc->started && boot_read(ic, pc, err))
            return -1;
        ic->done = pc->qn == 0;
    } else {
        if (!pc->started && begin(ic, pc, err))
            return -1;
        if (pump(ic, pc, err))
            return -1;
        /* replaying journaled steps: the records they took come again, but
           the server streams them at its pace; wait for them */
        if (ic->replay && wait_records(ic, pc, err))
            return -1;
    }
    int ncol = ic->schema.ncol;
    if (pc->qn == 0) { /* nothing queued: no chunk (the arena lives until a step) */
        settle(pc);    /* (a checkpoint may have let the slot move) */
        return 0;
    }
    Chunk *c = chunk_new(a, ncol, ic->schema.types, max < pc->qn ? max : pc->qn);
    while (c->n < max && pc->qn > 0) {
        const char *p = (const char *)pc->q.p + pc->qpos;
        size_t i = 1;
        int w = (signed char)p[0];
        int64_t r = c->n;
        bool ok = true;
        int badcol = -1;
        Err e = {0};
        for (int j = 0; j < ncol; j++) {
            int32_t len;
            memcpy(&len, p + i, 4);
            i += 4;
            Vec *v = &c->col[j];
            if (len < 0) {
                if (!v->nul) {
                    if (ok)
                        err_set(&e, SL_EDATA, "NULL in NOT NULL column %s",
                                ic->schema.names[j]);
                    ok = false;
                } else {
                    v->nul[r] = 1;
                    vec_zero(v, r);
                }
                continue;
            }
            if (v->nul)
                v->nul[r] = 0;
            if (ok && text_parse_vec(v, r, p + i, (size_t)len, a, &e)) {
                ok = false;
                badcol = j;
            }
            i += (size_t)len;
        }
        pc->qpos += i;
        pc->qn--;
        pc->rec_out++;
        if (ok) {
            c->w[r] = w;
            c->n++;
            ic->rows++;
        } else {
            char why[1200];
            snprintf(why, sizeof(why), "%s%s%s%.900s (change skipped)", badcol >= 0 ? "column " : "",
                     badcol >= 0 ? ic->schema.names[badcol] : "", badcol >= 0 ? ": " : "", e.msg);
            report(ic, why, p, 0);
        }
    }
    settle(pc);
    if (pc->boot)
        ic->done = pc->qn == 0;
    int64_t total = c->n, per = (total + nworkers - 1) / nworkers;
    for (int wk = 0; wk < nworkers && total; wk++) {
        int64_t s = (int64_t)wk * per, e = s + per < total ? s + per : total;
        if (s >= e)
            break;
        Piece *pcs = arena_zalloc(a, sizeof(*pcs));
        pcs->chunk = chunk_slice(a, c, s, e - s);
        piece_append(&lists[wk], pcs);
    }
    return total;
}

static void cdc_pos(const InputConn *ic, InPos *out)
{
    const PgCdc *pc = ic->cdc;
    if (!pc->started && pc->seek_lsn) { /* not resumed yet: where it will */
        out->v[0] = (int64_t)pc->seek_lsn;
        out->v[1] = pc->skip;
        return;
    }
    out->v[0] = (int64_t)pc->pos_lsn;
    out->v[1] = pc->rec_out - pc->pos_base;
}

/* Drop records until the position is pos (only forward). */
static int skip_to(InputConn *ic, PgCdc *pc, const InPos *pos, Err *err)
{
    for (;;) {
        InPos cur;
        cdc_pos(ic, &cur);
        if (cur.v[0] == pos->v[0] && cur.v[1] == pos->v[1])
            return 0;
        if ((uint64_t)cur.v[0] > (uint64_t)pos->v[0] ||
            (cur.v[0] == pos->v[0] && cur.v[1] > pos->v[1]))
            return err_set(err, SL_EIO, "%s: cannot move the change stream back from (%lld, "
                           "%lld) to (%lld, %lld)", ic->name, (long long)cur.v[0],
                           (long long)cur.v[1], (long long)pos->v[0], (long long)pos->v[1]);
        if (pump(ic, pc, err) || wait_records(ic, pc, err))
            return err->code ? err->code : SL_EIO;
        if (pc->qn == 0)
            return err_set(err, SL_EIO, "%s: the change stream ended at (%lld, %lld) before "
                           "(%lld, %lld), where the journal says the input was", ic->name,
                           (long long)cur.v[0], (long long)cur.v[1], (long long)pos->v[0],
                           (long long)pos->v[1]);
        pc->qpos += rec_len((const char *)pc->q.p + pc->qpos, ic->schema.ncol);
        pc->qn--;
        pc->rec_out++;
        settle(pc);
    }
}

static int cdc_seek(InputConn *ic, const InPos *pos, Err *err)
{
    PgCdc *pc = ic->cdc;
    if (pc->started) /* replay: records read and thrown away (a discarded transaction) */
        return skip_to(ic, pc, pos, err);
    if (pos->v[0] == 0 && pos->v[1] == 0)
        return 0; /* nothing read yet: a fresh start */
    if (pos->v[0] == 0)
        return err_set(err, SL_EIO, "%s: the pipeline stopped during the initial snapshot of "
                       "%s (%lld rows read), which cannot be read again; start with a new "
                       "storage directory (a new snapshot)", ic->name, pc->table,
                       (long long)pos->v[1]);
    if (pos->v[1] < 0)
        return err_set(err, SL_EIO, "%s: saved position (%lld, %lld) is invalid", ic->name,
                       (long long)pos->v[0], (long long)pos->v[1]);
    pc->seek_lsn = (uint64_t)pos->v[0];
    pc->skip = pos->v[1];
    return 0;
}

static bool cdc_boot_at(InputConn *ic, const InPos *pos)
{
    PgCdc *pc = ic->cdc;
    if (pc->started)
        return false;
    pc->boot = true;
    pc->boot_lsn = (uint64_t)pos->v[0];
    pc->boot_skip = pos->v[1];
    return true;
}

static void cdc_release(InputConn *ic, const InPos *pos)
{
    PgCdc *pc = ic->cdc;
    pc->durable_known = true;
    pc->durable = (uint64_t)pos->v[0];
}
/* Nothing queued: the controller polls the stream again soon. */
static double cdc_wait(const InputConn *ic) { return ic->cdc->qn == 0 ? 0.005 : 0; }

static void cdc_close(InputConn *ic)
{
    cdc_free(ic->cdc);
    ic->cdc = NULL;
}

/* ---------------------------------------------------------------- progress */

static void probe_drop(PgCdc *pc)
{
    if (pc->probe)
        PQfinish(pc->probe);
    pc->probe = NULL;
    pc->probe_ready = pc->probe_busy = false;
}

/* Whether the probe's socket is ready for what connecting waits for. */
static bool probe_can(PgCdc *pc)
{
    struct pollfd fd = {PQsocket(pc->probe),
                        pc->probe_poll == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
    return fd.fd >= 0 && poll(&fd, 1, 0) > 0;
}

/* The server's current WAL end (pg_current_wal_lsn()) into pc->wal_now,
   asked at most once a second over a connection of its own, never
   waiting: each call takes the exchange as far as it goes without
   blocking (connect, send, read the answer). */
static void probe_wal(PgCdc *pc)
{
    double now = io_now();
    if (!pc->probe) {
        if (now < pc->probe_next)
            return;
        pc->probe_next = now + 1;
        const char *k[] = {"dbname", NULL}, *v[] = {pc->uri, NULL};
        pc->probe = PQconnectStartParams(k, v, 1);
        if (!pc->probe || PQstatus(pc->probe) == CONNECTION_BAD)
            return probe_drop(pc);
        pc->probe_poll = PGRES_POLLING_WRITING;
    }
    while (!pc->probe_ready) {
        if (!probe_can(pc))
            return;
        pc->probe_poll = PQconnectPoll(pc->probe);
        if (pc->probe_poll == PGRES_POLLING_FAILED)
            return probe_drop(pc);
        if (pc->probe_poll == PGRES_POLLING_OK) {
            pc->probe_ready = true;
            PQsetNoticeProcessor(pc->probe, NULL, NULL);
            if (PQsetnonblocking(pc->probe, 1))
                return probe_drop(pc);
        }
    }
    if (!pc->probe_busy) {
        if (now < pc->probe_next)
            return;
        if (!PQsendQuery(pc->probe, "SELECT pg_current_wal_lsn()::text"))
            return probe_drop(pc);
        pc->probe_busy = true;
        pc->probe_next = now + 1;
    }
    if (PQflush(pc->probe) < 0 || !PQconsumeInput(pc->probe))
        return probe_drop(pc);
    while (pc->probe_busy && !PQisBusy(pc->probe)) {
        PGresult *r = PQgetResult(pc->probe);
        if (!r) {
            pc->probe_busy = false;
            break;
        }
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            pc->wal_now = lsn_parse(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
}

/* Position: the LSN up to which the change stream has been read into
   steps (the resume LSN; past it, up to where the server's decoding has
   streamed, when everything received has been handed out); high
   watermark: the server's current WAL end (as last polled, and never
   below the position); lag: the WAL bytes between. */
static void cdc_progress(InputConn *ic, InProgress *out)
{
    PgCdc *pc = ic->cdc;
    if (!pc)
        return;
    probe_wal(pc);
    InPos p = {0};
    cdc_pos(ic, &p);
    uint64_t at = (uint64_t)p.v[0];
    bool caught_up = pc->started && pc->qn == 0 && pc->nends == 0 && pc->tx.n == 0;
    if (caught_up && pc->stream_end > at)
        at = pc->stream_end;
    out->unit = "wal_bytes";
    out->pos = (int64_t)at;
    snprintf(out->pos_text, sizeof(out->pos_text), "%X/%X", (unsigned)(at >> 32), (unsigned)at);
    if (pc->wal_now) {
        /* the background poll may predate what the stream has delivered
           since: the WAL end is never behind what was read */
        uint64_t hi = pc->wal_now > at ? pc->wal_now : at;
        out->high = (int64_t)hi;
        out->lag = (int64_t)(hi - at);
        snprintf(out->high_text, sizeof(out->high_text), "%X/%X", (unsigned)(hi >> 32),
                 (unsigned)hi);
    }
}

const InOps tr_pg_cdc_in_ops = {
    .next = cdc_next,
    .wait = cdc_wait,
    .pos = cdc_pos,
    .seek = cdc_seek,
    .release = cdc_release,
    .boot_at = cdc_boot_at,
    .progress = cdc_progress,
    .close = cdc_close,
};

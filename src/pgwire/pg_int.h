/*
 * pgwire/pg_int.h - what the files of pgwire/ share: the server and
 * session objects, the message writer (proto.c), the reader of a message
 * body (proto.c), results in binary format (binfmt.c), the words of
 * statements (scan.c), settings (settings.c), one-shot SELECTs over a
 * snapshot (query.c), rows into the pipeline (ingress.c), the catalog
 * queries clients send (catalog.c), COPY (copy.c), subscriptions (sub.c),
 * statements (exec.c), the extended protocol (ext.c); listen.c accepts
 * connections and runs each session's loop. Files use each other in that
 * order only.
 */
#ifndef SL_PGWIRE_PG_INT_H
#define SL_PGWIRE_PG_INT_H

#include <gnutls/gnutls.h>
#include <pthread.h>

#include "../base/buf.h"
#include "../pipeline/oneshot.h"
#include "pgwire.h"

#define PG_MAX_MSG (1 << 20)      /* largest message body a client may send */
#define PG_MAX_STARTUP 10000      /* largest startup packet (PostgreSQL's bound) */
#define PG_MSG_SECS 30            /* a started message must be complete within this */
#define PG_STARTUP_SECS 30        /* startup and authentication must end within this */
#define PG_SERVER_VERSION "15.0"

typedef struct PgConn PgConn;
typedef struct PgSub PgSub;

struct PgServer {
    Pipeline *p;
    const Circuit *c;
    PgOpts o;
    int lfd;                 /* listening socket */
    int port;
    int wake[2];             /* a byte here stops the accept loop */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* nconn reached 0 */
    int nconn;               /* sessions running */
    bool stopping;
    PgConn *conns;           /* running sessions (shut down at stop) */
    PgSub *subs;             /* subscriptions (sub.c), under mu */
    gnutls_certificate_credentials_t cred; /* TLS, or NULL */
    int64_t next_pid;
};

/* A setting of the session (SET name = value). */
typedef struct PgSetting {
    char *name, *value;
} PgSetting;

/* A prepared statement or a portal of the extended protocol. */
typedef struct PgPrep {
    char *name;
    char *sql;
    int nparam;
    uint32_t *ptypes;        /* parameter type OIDs (0: unspecified) */
} PgPrep;

/* The answer of one statement: the rows (encoded DataRow messages) and
   their description, the command tag, or a COPY/SUBSCRIBE to run. */
typedef struct PgRes {
    bool has_rows;           /* RowDescription + DataRows (SELECT, SHOW, ...) */
    int ncol;
    char **names;
    uint32_t *oids;
    Buf rows;                /* complete 'D' messages */
    int16_t *fmts;           /* per column 0 text / 1 binary, or NULL: all text */
    int64_t nrows;
    char tag[64];
} PgRes;

typedef struct PgPortal {
    char *name;
    char *sql;               /* with the parameters substituted */
    bool ran;
    int nfmt;                /* Bind's result format codes (0: all text) */
    int16_t *fmts;
    PgRes res;               /* once ran */
    size_t sent;             /* bytes of res.rows sent by Execute */
} PgPortal;

/* An error to send: SQLSTATE, message, position (1-based character in the
   query, 0 none), hint. */
typedef struct PgErr {
    char code[6];
    char msg[1024];
    char hint[256];
    int pos;
    bool fatal;
} PgErr;

struct PgConn {
    PgServer *s;
    PgConn *next;
    int fd;
    gnutls_session_t tls;    /* after SSLRequest with TLS configured, else NULL */
    int64_t pid;
    Buf out;                 /* messages not sent yet */
    size_t mstart;           /* where the message being written starts */
    Buf msg;                 /* the body of the message being handled */
    char user[64], db[64];
    bool read_only;          /* authenticated with a read-only key */
    bool in_block;           /* BEGIN seen, no COMMIT/ROLLBACK yet */
    bool failed;             /* an error in the block: only ROLLBACK/COMMIT */
    bool txn_open;           /* the block opened the pipeline's transaction */
    bool skip_to_sync;       /* extended protocol: an error, wait for Sync */
    bool broken;             /* the socket failed: end the session */
    PgSetting *set;
    int nset, capset;
    PgPrep *preps;
    int nprep, capprep;
    PgPortal *portals;
    int nportal, capportal;
    const char *query;       /* the query text errors point into */
    size_t qbase;            /* offset of the statement being run within it */
};

/* proto.c: writing messages into c->out, sending them. */
void pg_begin(PgConn *c, char type);
void pg_i16(PgConn *c, int v);
void pg_i32(PgConn *c, int32_t v);
void pg_str(PgConn *c, const char *s);
void pg_bytes(PgConn *c, const void *p, size_t n);
void pg_end(PgConn *c);
/* Send everything queued; false when the socket failed (c->broken). */
bool pg_flush(PgConn *c);
void pg_param_status(PgConn *c, const char *name, const char *value);
void pg_ready(PgConn *c);
void pg_send_error(PgConn *c, const PgErr *e);
void pg_notice(PgConn *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fill e (code, printf message); returns -1. */
int pg_err(PgErr *e, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Translate an engine error (line:col within sql) into e; byte k of sql
   is byte base + k of c->query (base may be negative when sql starts with
   words of ours). */
int pg_err_from(PgConn *c, PgErr *e, const Err *err, const char *sql, long base);
/* Type OID and size of a column type (text format). */
uint32_t pg_type_oid(SqlType t);
int pg_type_len(uint32_t oid);
/* RowDescription of res; the rows and the tag of res. */
void pg_send_desc(PgConn *c, const PgRes *res);
void pg_send_rows(PgConn *c, const PgRes *res);
void pg_send_complete(PgConn *c, const char *tag);

/* Building a result. */
void pgres_cols(PgRes *r, int ncol);
void pgres_col(PgRes *r, int j, const char *name, uint32_t oid);
/* One row of text fields (NULL pointers are SQL NULLs). */
void pgres_row(PgRes *r, const char *const *vals);
/* The rows of a one-shot result (names and types too). */
void pgres_from_qresult(PgRes *r, const QResult *q);
void pgres_free(PgRes *r);

/* binfmt.c: binary results. Is there a binary form of type oid; its
   name; re-encode r's DataRows with Bind's nf result format codes (0: all
   text, 1: one for all, else one per column), 0A000 for a column whose
   type has no binary form. */
bool pg_bin_supported(uint32_t oid);
const char *pg_type_name(uint32_t oid);
int pgres_set_formats(PgRes *r, int nf, const int16_t *fmts, PgErr *e);

/* Reading a message body. */
typedef struct PgRd {
    const char *p;
    size_t n, pos;
    bool bad;
} PgRd;
int pgrd_i16(PgRd *r);
int32_t pgrd_i32(PgRd *r);
const char *pgrd_str(PgRd *r);
const char *pgrd_bytes(PgRd *r, size_t n);

/* Socket reads with a deadline (seconds from now; < 0 none); false on
   end, failure, stop or timeout. */
bool pg_read_full(PgConn *c, void *buf, size_t n, double secs);
/* The next message: its type into *type, its body into c->msg (NUL
   after it); -1 when the client left or broke the bounds (a FATAL was
   sent). */
int pg_read_msg(PgConn *c, char *type);

/* scan.c: the words of a statement. Past spaces and comments; the word
   at p (letters, digits, _) upper-cased into w, its length; advance *p
   past keyword kw when it comes next; a name (bare or "quoted", a schema
   dropped) into out. */
const char *pg_skip_ws(const char *p);
size_t pg_word(const char *p, char *w, size_t wn);
bool pg_accept_kw(const char **p, const char *kw);
bool pg_name_at(const char **p, char *out, size_t on);

/* settings.c: the session's settings; SET and SHOW (p after the keyword). */
const char *pg_setting(PgConn *c, const char *name);
int pg_set_stmt(PgConn *c, const char *p, PgRes *res, PgErr *e);
int pg_show_stmt(PgConn *c, const char *p, PgRes *res, PgErr *e);

/* query.c: run a SELECT (text at byte base of c->query) over a snapshot
   of the materialized relations it names, under the /query limits. */
int pg_select(PgConn *c, const char *sql, long base, QResult *out, PgErr *e);

/* exec.c: one statement; fills res or e (-1). */
int pg_exec(PgConn *c, const char *sql, long base, PgRes *res, PgErr *e);
/* The simple query protocol: every statement of a Query message. */
void pg_simple_query(PgConn *c, const char *q);

/* catalog.c: the pg_catalog / information_schema / function queries
   drivers send; 1 when sql was one of them (res or e filled), 0 if not. */
int pg_catalog_query(PgConn *c, const char *sql, PgRes *res, PgErr *e);

/* ext.c: the extended protocol's messages; false ends the session. */
bool pg_extended(PgConn *c, char type);
void pg_ext_free(PgConn *c);

/* copy.c: COPY t FROM STDIN and COPY (SELECT ...) TO STDOUT. */
int pg_copy(PgConn *c, const char *sql, long base, PgRes *res, PgErr *e);
/* sub.c: SUBSCRIBE view (or COPY (SUBSCRIBE view) TO STDOUT): streams
   until the client leaves; returns -1 with e on a refusal. */
int pg_subscribe(PgConn *c, const char *sql, bool copy, PgErr *e);
void pg_subs_end_all(PgServer *s);
/* The controller's after-step hook: fan this step's changes out. */
void pg_subs_after_step(void *arg, Pipeline *p, int64_t step);
/* After every session ended: free what is left of the subscriptions. */
void pg_subs_free(PgServer *s);

/* ingress.c: the table a write names (its index, or -1 with e); rows of
   a result (map[j]: the result column of table column j, -1 for NULL),
   weight w each, into table rel; the block's transaction opened by its
   first write, ended (committed or aborted) by pg_end_block. */
int pg_write_target(PgConn *c, const char *name, PgErr *e);
int pg_push_rows(PgConn *c, int rel, const QResult *q, const int *map, int64_t w, PgErr *e);
/* Queue b (taken, freed on every outcome) as a write of the session. */
int pg_push_batch(PgConn *c, InBatch *b, PgErr *e);
int pg_open_txn(PgConn *c, PgErr *e);
void pg_end_block(PgConn *c, bool commit, PgErr *e);

#endif

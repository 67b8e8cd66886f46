/*
 * pgwire/pgwire.h - PostgreSQL's wire protocol (version 3) in front of a
 * running pipeline, what cli/ uses: start it beside a Pipeline before
 * pipeline_run (`sluice run --pg [HOST:]PORT`, pg_listen in --config), stop
 * it after. psql, libpq and drivers then query materialized relations
 * (the one-shot path of /query), insert and delete rows (the ingress
 * queue of HTTP input), run transactions, COPY and subscribe to a view's
 * changes. docs/pg-wire.md says what is supported and what is refused.
 */
#ifndef SL_PGWIRE_PGWIRE_H
#define SL_PGWIRE_PGWIRE_H

#include "../server/server.h"

typedef struct PgOpts {
    const char *host;       /* address to bind, "127.0.0.1" */
    int port;               /* 0 picks a free port */
    const ServerKey *keys;  /* nkeys API keys: the password must be one */
    int nkeys;
    int max_connections;    /* sessions at once; more are refused (0: 64) */
    const char *tls_cert, *tls_key; /* PEM files: offer TLS (both or neither) */
} PgOpts;

typedef struct PgServer PgServer;

/* Bind and serve p on threads of its own; logs "sluice: pg: listening on
   HOST:PORT" on stderr. NULL with err set when the address cannot be
   bound. */
PgServer *pgwire_start(Pipeline *p, const PgOpts *o, Err *err);
int pgwire_port(const PgServer *s);
/* After pipeline_run returned: end every session (subscriptions see the
   end of their stream), wait for their threads, close and free. */
void pgwire_stop(PgServer *s);

#endif

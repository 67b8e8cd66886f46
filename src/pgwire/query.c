/*
 * pgwire/query.c - a SELECT of a session over a consistent snapshot of
 * the materialized tables and views it names, run as HTTP /query runs it
 * (pipeline_query, pipeline/livequery.c: the snapshot between two steps,
 * a thread of its own, the /query budget, cancelled when the client
 * closes its connection); this file turns the outcome into SQLSTATEs.
 * INSERT ... SELECT, DELETE, COPY (SELECT ...) TO
 * STDOUT use it too. A query naming a relation that is not materialized
 * gets 55000 naming it and saying how to materialize it.
 */
#include <stdio.h>

#include "../base/budget.h"
#include "pg_int.h"

int pg_select(PgConn *c, const char *sql, long base, QResult *out, PgErr *e)
{
    const Circuit *ci = c->s->c;
    Budget b;
    Err qe = {0};
    int unmat;
    switch (pipeline_query(c->s->p, sql, c->fd, out, &b, &unmat, &qe)) {
    case LQ_OK:
        return 0;
    case LQ_STOPPING:
        return pg_err(e, "57P01", "the pipeline is stopping; no more queries");
    case LQ_BUDGET:
        switch (b.stop) {
        case BUDGET_MEMORY:
            fprintf(stderr, "sluice: pg: query stopped: more than its memory budget: %.200s\n",
                    sql);
            return pg_err(e, "53200",
                          "the query needed more than its memory budget of %lld bytes "
                          "(--query-memory, query_memory_bytes); the pipeline goes on",
                          (long long)b.limit);
        case BUDGET_TIMEOUT:
            fprintf(stderr, "sluice: pg: query stopped: longer than its time limit: %.200s\n",
                    sql);
            return pg_err(e, "57014",
                          "canceling statement due to statement timeout: the query ran longer "
                          "than %g s (--query-timeout, query_timeout_secs); the pipeline goes on",
                          b.timeout);
        default:
            return pg_err(e, "57014", "the query was cancelled: the client closed the connection");
        }
    case LQ_SQL:
        break;
    }
    if (unmat >= 0) {
        const Relation *r = &ci->rels[unmat];
        int rc = pg_err(e, "55000", "%s %s is not materialized, so it cannot be queried",
                        r->is_table ? "table" : "view", r->name);
        if (r->is_table)
            snprintf(e->hint, sizeof(e->hint), "declare it with WITH ('materialized' = 'true')");
        else
            snprintf(e->hint, sizeof(e->hint), "declare it as CREATE MATERIALIZED VIEW %s",
                     r->name);
        return rc;
    }
    return pg_err_from(c, e, &qe, sql, base);
}

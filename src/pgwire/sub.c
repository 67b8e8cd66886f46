/*
 * pgwire/sub.c - SUBSCRIBE view: a view's changes streamed to a session.
 */
#include "pg_int.h"

int pg_subscribe(PgConn *c, const char *sql, bool copy, PgErr *e)
{
    (void)c, (void)sql, (void)copy;
    return pg_err(e, "0A000", "SUBSCRIBE is not supported yet");
}

void pg_subs_end_all(PgServer *s) { (void)s; }

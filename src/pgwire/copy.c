/*
 * pgwire/copy.c - COPY t FROM STDIN and COPY (SELECT ...) TO STDOUT.
 */
#include "pg_int.h"

int pg_copy(PgConn *c, const char *sql, long base, PgRes *res, PgErr *e)
{
    (void)c, (void)sql, (void)base, (void)res;
    return pg_err(e, "0A000", "COPY is not supported yet");
}

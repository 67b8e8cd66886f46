/*
 * pgwire/ext.c - the extended query protocol.
 */
#include "pg_int.h"

bool pg_extended(PgConn *c, char type)
{
    if (type == 'S') {
        c->skip_to_sync = false;
        pg_ready(c);
        return pg_flush(c);
    }
    if (type == 'H')
        return pg_flush(c);
    if (c->skip_to_sync)
        return true;
    PgErr e;
    pg_err(&e, "0A000", "the extended query protocol is not supported yet");
    pg_send_error(c, &e);
    c->skip_to_sync = true;
    return pg_flush(c);
}

void pg_ext_free(PgConn *c) { (void)c; }

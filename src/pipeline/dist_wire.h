/*
 * pipeline/dist_wire.h - what the coordinator (dist.c) and the followers
 * (follow.c) of a scale-out pipeline say to each other: the command kinds
 * (dist.c's header describes each and its reply) and the encoding of an
 * input position. Every command starts with kind, argument, the
 * coordinator's step and the egress watch changes since the last one.
 */
#ifndef SL_PIPELINE_DIST_WIRE_H
#define SL_PIPELINE_DIST_WIRE_H

#include "../base/mem.h"
#include "../base/wire.h"
#include "../io/connector.h"

enum { DC_STEP = 1, DC_CONTENTS, DC_PING, DC_STOP, DC_LOOKUP, DC_CKPT, DC_RESTORE, DC_READ,
       DC_DROP };

/* One message buffer per host (net_exchange's send or receive side). */
static inline Buf *host_bufs_new(int H) { return sl_calloc((size_t)H, sizeof(Buf)); }

static inline void host_bufs_free(Buf *b, int H)
{
    for (int h = 0; h < H && b; h++)
        buf_free(&b[h]);
    sl_free(b);
}

static inline void put_pos(Buf *b, const InPos *pos)
{
    put64(b, pos->v[0]);
    put64(b, pos->v[1]);
    put64(b, pos->rows);
    put64(b, pos->errors);
    put64(b, pos->bytes);
    put32(b, pos->nx);
    for (int i = 0; i < pos->nx; i++)
        put64(b, pos->x[i]);
}

static inline void rd_pos(Rd *r, InPos *pos)
{
    pos->v[0] = rd64(r);
    pos->v[1] = rd64(r);
    pos->rows = rd64(r);
    pos->errors = rd64(r);
    pos->bytes = rd64(r);
    pos->nx = rd32(r);
    if (pos->nx < 0 || pos->nx > INPOS_MAX) {
        r->bad = true;
        pos->nx = 0;
    }
    for (int i = 0; i < pos->nx; i++)
        pos->x[i] = rd64(r);
}

#endif

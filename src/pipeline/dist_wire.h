/*
 * pipeline/dist_wire.h - what the coordinator (dist.c) and the followers
 * (follow.c) of a scale-out pipeline say to each other: the command kinds
 * (dist.c's header describes each and its reply) and the encoding of an
 * input position. Every command starts with kind, argument, the
 * coordinator's step and the egress watch changes since the last one.
 */
#ifndef SL_PIPELINE_DIST_WIRE_H
#define SL_PIPELINE_DIST_WIRE_H

#include "../base/wire.h"
#include "../io/connector.h"

enum { DC_STEP = 1, DC_CONTENTS, DC_PING, DC_STOP, DC_LOOKUP, DC_CKPT, DC_RESTORE, DC_READ,
       DC_DROP };

static inline void put_pos(Buf *b, const InPos *pos)
{
    put64(b, pos->v[0]);
    put64(b, pos->v[1]);
    put64(b, pos->rows);
    put64(b, pos->errors);
    put64(b, pos->bytes);
}

static inline void rd_pos(Rd *r, InPos *pos)
{
    pos->v[0] = rd64(r);
    pos->v[1] = rd64(r);
    pos->rows = rd64(r);
    pos->errors = rd64(r);
    pos->bytes = rd64(r);
}

#endif

/*
 * pipeline/dist_wire.h - what the coordinator (dist.c) and the followers
 * (follow.c) of a scale-out pipeline say to each other: the command kinds
 * (dist.c's header describes each and its reply), the encoding of an
 * input position, and where output connectors are written (io places
 * the k-th on host k % H) with the changes that travel to their hosts.
 * Every command starts with kind, argument, the coordinator's step and
 * the egress watch changes since the last one.
 */
#ifndef SL_PIPELINE_DIST_WIRE_H
#define SL_PIPELINE_DIST_WIRE_H

#include <string.h>

#include "../base/mem.h"
#include "../base/wire.h"
#include "../circuit/op.h"
#include "../io/connector.h"

enum { DC_STEP = 1, DC_CONTENTS, DC_PING, DC_STOP, DC_LOOKUP, DC_CKPT, DC_RESTORE, DC_READ,
       DC_DROP, DC_OUTSET, DC_RELEASE, DC_BOOT };

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

/* Whether host h writes an output connector of relation rel. */
static inline bool host_writes(const Connectors *cs, int h, int rel)
{
    for (int j = 0; j < cs->nout; j++)
        if (output_owner(cs->out[j]) == h && output_rel(cs->out[j]) == rel)
            return true;
    return false;
}

/* Whether host h writes any output connector. */
static inline bool host_writes_any(const Connectors *cs, int h)
{
    for (int j = 0; j < cs->nout; j++)
        if (output_owner(cs->out[j]) == h)
            return true;
    return false;
}

/* Whether an output connector is written on a host other than the
   coordinator: then every STEP has a third exchange, the outputs' hosts'
   reports (dist.c). */
static inline bool outputs_spread(const Connectors *cs)
{
    for (int j = 0; j < cs->nout; j++)
        if (output_owner(cs->out[j]) != 0)
            return true;
    return false;
}

/* Append rel, the length and this host's changes of rel in the last step
   (every local worker's sink: xrec records; none when it collects none). */
static inline void put_rel_changes(const Circuit *c, Runtime *rt, int rel, Buf *b)
{
    int s = c->rels[rel].sink;
    int64_t len = 0;
    for (int w = 0; w < rt_workers(rt) && s >= 0; w++) {
        Buf *ch = op_sink_changes(rt_op(rt, w, s));
        len += ch ? (int64_t)ch->n : 0;
    }
    put32(b, rel);
    put64(b, len);
    for (int w = 0; w < rt_workers(rt) && s >= 0; w++) {
        Buf *ch = op_sink_changes(rt_op(rt, w, s));
        if (ch && ch->n)
            buf_append(b, ch->p, ch->n);
    }
}

/* What every host sends the host h of output connectors in a STEP's
   reply exchange: its step's status and its changes of every relation h
   writes. */
static inline void put_owner_part(const Circuit *c, Runtime *rt, const Connectors *cs, int h,
                                  int rc, Buf *b)
{
    put32(b, rc);
    size_t at = b->n;
    int32_t n = 0;
    put32(b, 0);
    for (int rel = 0; rel < c->nrels; rel++)
        if (host_writes(cs, h, rel)) {
            put_rel_changes(c, rt, rel, b);
            n++;
        }
    memcpy(b->p + at, &n, 4);
}

#endif

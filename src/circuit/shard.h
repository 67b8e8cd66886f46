/*
 * circuit/shard.h - how a stateful operator meets the other workers: it is
 * handed sharded streams (DBSP), it never runs the exchange itself.
 *
 * Every stateful operator keeps a shard of the state on each of the W
 * workers: the keys op_route sends there (all of them on worker 0 for an
 * operator without a key, "global"). A step of such an operator has three
 * phases:
 *  1. routing, on every worker: push() (once per morsel) and flush() (once,
 *     at the end; the aggregate sends its local partials there) encode the
 *     step's records and put each into the outbox of the worker that owns
 *     its key (shard_rows, shard_put);
 *  2. the runtime moves every outbox to its destination worker
 *     (runtime/worker.c through runtime/exchange.h, across hosts too); it
 *     also empties this worker's outboxes before the step's begin();
 *  3. consuming: finish() reads the records addressed to its worker, one
 *     source worker after the other in worker order (shard_next), or all
 *     of them as one consolidated batch (shard_batch: sorted in place in
 *     the inboxes, copied once, into the batch).
 * A Shard is a view the runtime makes for one (operator, worker): pointers
 * to the buffers it moves, one per destination (outboxes) and one per
 * source (inboxes) and channel; channels keep an operator's input streams
 * apart (a join's two sides). Records are zset/xrec.h records; an inbox is
 * valid during finish() only.
 */
#ifndef SL_CIRCUIT_SHARD_H
#define SL_CIRCUIT_SHARD_H

#include "../base/hash.h"
#include "../expr/chunk.h"
#include "../zset/batch.h"
#include "../zset/xrec.h"

typedef struct Shard {
    int W;      /* workers in all (every host) */
    int me;     /* this worker (global id) */
    int nch;    /* channels */
    Buf **out;  /* [ch * W + to]: this worker's records for worker `to` */
    Buf **in;   /* [ch * W + from]: worker from's records for this one */
    Buf kb, vb; /* scratch of shard_rows */
} Shard;

/* A view of nch channels for worker me of W; the caller points every out
   and in at its buffers (they stay its own). */
Shard *shard_new(int W, int me, int nch);
void shard_free(Shard *sh);

/* Destination worker of an encoded key (the same on every worker). */
static inline int op_route(const uint8_t *k, size_t kn, int nworkers)
{
    return nworkers == 1 ? 0 : (int)(sl_hash(k, kn) % (uint64_t)nworkers);
}

/* Owner of key k: op_route, or worker 0 for a global operator. */
static inline int shard_owner(const Shard *sh, const uint8_t *k, size_t kn, bool global)
{
    return global ? 0 : op_route(k, kn, sh->W);
}

/* Empty this worker's outboxes (the runtime, before a step's begin()). */
static inline void shard_reset(Shard *sh)
{
    for (int i = 0; i < sh->nch * sh->W; i++)
        buf_reset(sh->out[i]);
}

/* Send the record (k, v, w) to worker `to` on channel ch. */
static inline void shard_put(Shard *sh, int ch, int to, const uint8_t *k, size_t kn,
                             const uint8_t *v, size_t vn, int64_t w)
{
    xrec_put(sh->out[ch * sh->W + to], k, (uint32_t)kn, v, (uint32_t)vn, w);
}

/* Encode row r of c (input on channel ch) as a record: its key appended to
   k, its value to v (both empty on entry). */
typedef void (*ShardEnc)(void *ctx, int ch, const Chunk *c, int64_t r, Buf *k, Buf *v);

/* Route every row of c on channel ch to the owner of its key, with its
   weight (an inline loop: the compiler calls enc directly). */
static inline void shard_rows(Shard *sh, int ch, const Chunk *c, bool global, ShardEnc enc,
                              void *ctx)
{
    for (int64_t r = 0; r < c->n; r++) {
        buf_reset(&sh->kb);
        buf_reset(&sh->vb);
        enc(ctx, ch, c, r, &sh->kb, &sh->vb);
        shard_put(sh, ch, shard_owner(sh, sh->kb.p, sh->kb.n, global), sh->kb.p, sh->kb.n,
                  sh->vb.p, sh->vb.n, c->w[r]);
    }
}

/* Where shard_next is in the inboxes of one channel. */
typedef struct ShardPos {
    int from;
    size_t pos;
} ShardPos;
#define SHARD_POS_INIT {0, 0}

/* The next record addressed to this worker on channel ch (inboxes in
   worker order, each in the order it was written); false at the end. */
static inline bool shard_next(const Shard *sh, int ch, ShardPos *p, XRec *r)
{
    for (; p->from < sh->W; p->from++, p->pos = 0)
        if (xrec_next(sh->in[ch * sh->W + p->from], &p->pos, r))
            return true;
    return false;
}

/* Every record addressed to this worker on channel ch, consolidated (a new
   reference). The records are sorted where they lie in the inboxes and
   copied once, into the batch (zset/batch.h batch_from_xrecs). */
Batch *shard_batch(const Shard *sh, int ch);
/* The same for the records of channels chs[0..n) together. */
Batch *shard_batch_of(const Shard *sh, const int *chs, int n);

#endif

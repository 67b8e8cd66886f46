/*
 * runtime/exchange.h - N x N in-process shuffle between worker threads.
 *
 * Each stateful operator node has one Exchange shared by all workers; the
 * workers' instances see it through their Shard (circuit/shard.h), whose
 * boxes worker.c points at its buffers. In a step, worker `from` appends
 * records to buffer(from, to, channel) for every destination, all workers
 * meet at xchg_wait(), then worker `to` reads buffer(from, to, channel)
 * for every source. The exchange moves bytes: what they hold (zset/xrec.h
 * records) is the operators' business. The buffers are reused every step
 * (the step-end barrier separates a read from the next step's writes).
 *
 * Across hosts (scale-out): worker ids are global; this process runs
 * workers [first, first + nlocal) of all W. At xchg_wait, after the local
 * workers have written, the first local worker moves every buffer bound
 * for another host's workers in one all-to-all between hosts (rows for
 * local workers stay in memory) and fills the buffers from other hosts'
 * workers to local ones; a second local barrier releases the readers.
 */
#ifndef SL_RUNTIME_EXCHANGE_H
#define SL_RUNTIME_EXCHANGE_H

#include <pthread.h>

#include "../base/buf.h"

typedef struct Exchange Exchange;

/* The first of host h's workers when W workers are spread over H hosts
   (host h runs [xchg_first(W, H, h), xchg_first(W, H, h + 1))). */
static inline int xchg_first(int W, int H, int h) { return (int)((int64_t)h * W / H); }

/* W workers in all over `hosts` hosts, this process being `host`; bar:
   barrier shared by this host's workers (NULL when it runs one). */
Exchange *xchg_new(int W, int host, int hosts, int nchannels, pthread_barrier_t *bar);
void xchg_free(Exchange *x);
Buf *xchg_buf(Exchange *x, int from, int to, int channel);
/* Every local worker (global id me) calls this once per step per
   exchange, after writing. */
void xchg_wait(Exchange *x, int me);
/* The same for channels [lo, hi) only: an operator that exchanges in two
   rounds (a join's hot keys, circuit/op.h reroute) moves its first
   channels, reads them and writes the others, then moves those. */
void xchg_wait_range(Exchange *x, int me, int lo, int hi);
/* Bytes of the records addressed to worker `to` in the last step (every
   source, every channel): what its instance of the operator read. Valid
   between a step's exchange and the next step's writes. */
size_t xchg_bytes_to(const Exchange *x, int to);
/* Bytes this process sent to other hosts through exchanges. */
int64_t xchg_remote_bytes(const Exchange *x);
/* Nanoseconds this process spent in host-to-host exchanges (packing,
   waiting for and moving the bytes, unpacking). */
int64_t xchg_remote_ns(const Exchange *x);
/* Combine v[0..nmax+nsum) across the hosts (a no-op with one): the first
   nmax entries by max, the others by sum; every host gets the result.
   One thread per host, every host at the same point (watermarks). */
void xchg_hosts_reduce(int64_t *v, int nmax, int nsum, int host, int hosts);

#endif

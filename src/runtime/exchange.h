/*
 * runtime/exchange.h - N x N in-process shuffle between worker threads.
 *
 * Each stateful operator owns one Exchange shared by all workers. In a step,
 * worker `from` appends encoded records to outbox(from, to, channel) for
 * every destination, all workers meet at xchg_wait(), then worker `to`
 * reads inbox(from, to, channel) for every source. Records are key.h
 * encodings: [u32 klen][u32 vlen][i64 weight][key][val]. The buffers are
 * reused every step (the step-end barrier separates a read from the next
 * step's writes).
 */
#ifndef SL_RUNTIME_EXCHANGE_H
#define SL_RUNTIME_EXCHANGE_H

#include <pthread.h>

#include "../base/buf.h"

typedef struct Exchange Exchange;

/* bar: barrier shared by the nworkers workers (NULL when nworkers == 1). */
Exchange *xchg_new(int nworkers, int nchannels, pthread_barrier_t *bar);
void xchg_free(Exchange *x);
int xchg_workers(const Exchange *x);
Buf *xchg_buf(Exchange *x, int from, int to, int channel);
/* All workers call this once per step per exchange, after writing. */
void xchg_wait(Exchange *x);

/* Record helpers. */
void xrec_put(Buf *b, const uint8_t *k, uint32_t kn, const uint8_t *v, uint32_t vn, int64_t w);
typedef struct XRec {
    const uint8_t *k, *v;
    uint32_t kn, vn;
    int64_t w;
} XRec;
/* Read the record at *pos of b into r; false at the end. */
bool xrec_next(const Buf *b, size_t *pos, XRec *r);

#endif

/*
 * runtime/exchange.c - shuffle buffers and the barrier that separates the
 * write phase from the read phase of one exchange.
 */
#include "exchange.h"

#include "../base/mem.h"

struct Exchange {
    int n, nch;
    Buf *bufs; /* [from][to][channel] */
    pthread_barrier_t *bar;
};

Exchange *xchg_new(int nworkers, int nchannels, pthread_barrier_t *bar)
{
    Exchange *x = sl_calloc(1, sizeof(*x));
    x->n = nworkers;
    x->nch = nchannels;
    x->bufs = sl_calloc((size_t)(nworkers * nworkers * nchannels), sizeof(Buf));
    x->bar = bar;
    return x;
}

void xchg_free(Exchange *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n * x->n * x->nch; i++)
        buf_free(&x->bufs[i]);
    sl_free(x->bufs);
    sl_free(x);
}

int xchg_workers(const Exchange *x) { return x->n; }

Buf *xchg_buf(Exchange *x, int from, int to, int channel)
{
    return &x->bufs[(from * x->n + to) * x->nch + channel];
}

void xchg_wait(Exchange *x)
{
    if (x->bar)
        pthread_barrier_wait(x->bar);
}

void xrec_put(Buf *b, const uint8_t *k, uint32_t kn, const uint8_t *v, uint32_t vn, int64_t w)
{
    uint8_t hdr[16];
    memcpy(hdr, &kn, 4);
    memcpy(hdr + 4, &vn, 4);
    memcpy(hdr + 8, &w, 8);
    buf_reserve(b, 16 + kn + vn);
    memcpy(b->p + b->n, hdr, 16);
    if (kn)
        memcpy(b->p + b->n + 16, k, kn);
    if (vn)
        memcpy(b->p + b->n + 16 + kn, v, vn);
    b->n += 16 + (size_t)kn + vn;
}

bool xrec_next(const Buf *b, size_t *pos, XRec *r)
{
    if (*pos >= b->n)
        return false;
    const uint8_t *p = b->p + *pos;
    memcpy(&r->kn, p, 4);
    memcpy(&r->vn, p + 4, 4);
    memcpy(&r->w, p + 8, 8);
    r->k = p + 16;
    r->v = p + 16 + r->kn;
    *pos += 16 + (size_t)r->kn + r->vn;
    return true;
}

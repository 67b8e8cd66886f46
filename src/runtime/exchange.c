/*
 * runtime/exchange.c - shuffle buffers and the barrier that separates the
 * write phase from the read phase of one exchange.
 */
#include "exchange.h"

#include <time.h>

#include "../base/mem.h"
#include "../cluster/net.h"

struct Exchange {
    int n, nch;
    Buf *bufs; /* [from][to][channel] */
    pthread_barrier_t *bar;
    int host, hosts, first, nlocal;
    Buf *send, *recv; /* per host: the all-to-all's buffers (hosts > 1) */
    int64_t remote_bytes;
    int64_t remote_ns; /* time in host-to-host exchange (packing, network, unpacking) */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

Exchange *xchg_new(int W, int host, int hosts, int nchannels, pthread_barrier_t *bar)
{
    Exchange *x = sl_calloc(1, sizeof(*x));
    x->n = W;
    x->nch = nchannels;
    x->bufs = sl_calloc((size_t)(W * W * nchannels), sizeof(Buf));
    x->bar = bar;
    x->host = host;
    x->hosts = hosts;
    x->first = xchg_first(W, hosts, host);
    x->nlocal = xchg_first(W, hosts, host + 1) - x->first;
    if (hosts > 1) {
        x->send = sl_calloc((size_t)hosts, sizeof(Buf));
        x->recv = sl_calloc((size_t)hosts, sizeof(Buf));
    }
    return x;
}

size_t xchg_bytes_to(const Exchange *x, int to)
{
    size_t n = 0;
    for (int f = 0; f < x->n; f++)
        for (int ch = 0; ch < x->nch; ch++)
            n += x->bufs[(f * x->n + to) * x->nch + ch].n;
    return n;
}

int64_t xchg_remote_bytes(const Exchange *x) { return x->remote_bytes; }
int64_t xchg_remote_ns(const Exchange *x) { return x->remote_ns; }

/* The host-to-host part of an exchange of channels [lo, hi). Host d's
   message from this host is, for every such channel, local sender and
   receiver on d in that order, [u64 length][bytes]; the receiver walks the
   same order. */
static void remote(Exchange *x, int lo_ch, int hi_ch)
{
    int64_t t0 = mono_ns();
    int H = x->hosts, W = x->n;
    for (int d = 0; d < H; d++) {
        Buf *m = &x->send[d];
        buf_reset(m);
        if (d == x->host)
            continue;
        int lo = xchg_first(W, H, d), hi = xchg_first(W, H, d + 1);
        for (int ch = lo_ch; ch < hi_ch; ch++)
            for (int f = x->first; f < x->first + x->nlocal; f++)
                for (int t = lo; t < hi; t++) {
                    const Buf *b = xchg_buf(x, f, t, ch);
                    uint64_t n = b->n;
                    buf_append(m, &n, 8);
                    if (n)
                        buf_append(m, b->p, n);
                }
        x->remote_bytes += (int64_t)m->n;
    }
    net_exchange(x->send, x->recv);
    for (int s = 0; s < H; s++) {
        if (s == x->host)
            continue;
        const Buf *m = &x->recv[s];
        size_t pos = 0;
        int lo = xchg_first(W, H, s), hi = xchg_first(W, H, s + 1);
        for (int ch = lo_ch; ch < hi_ch; ch++)
            for (int f = lo; f < hi; f++)
                for (int t = x->first; t < x->first + x->nlocal; t++) {
                    Buf *b = xchg_buf(x, f, t, ch);
                    buf_reset(b);
                    uint64_t n;
                    if (pos + 8 > m->n)
                        sl_panic("exchange: short message from host %d", s);
                    memcpy(&n, m->p + pos, 8);
                    pos += 8;
                    if (n > m->n - pos)
                        sl_panic("exchange: short message from host %d", s);
                    if (n)
                        buf_append(b, m->p + pos, n);
                    pos += n;
                }
    }
    x->remote_ns += mono_ns() - t0;
}

void xchg_free(Exchange *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n * x->n * x->nch; i++)
        buf_free(&x->bufs[i]);
    sl_free(x->bufs);
    for (int h = 0; h < x->hosts && x->send; h++) {
        buf_free(&x->send[h]);
        buf_free(&x->recv[h]);
    }
    sl_free(x->send);
    sl_free(x->recv);
    sl_free(x);
}

Buf *xchg_buf(Exchange *x, int from, int to, int channel)
{
    return &x->bufs[(from * x->n + to) * x->nch + channel];
}

void xchg_wait(Exchange *x, int me) { xchg_wait_range(x, me, 0, x->nch); }

void xchg_wait_range(Exchange *x, int me, int lo, int hi)
{
    if (x->bar)
        pthread_barrier_wait(x->bar);
    if (x->hosts > 1) {
        if (me == x->first)
            remote(x, lo, hi);
        if (x->bar)
            pthread_barrier_wait(x->bar);
    }
}

void xchg_hosts_reduce(int64_t *v, int nmax, int nsum, int host, int hosts)
{
    if (hosts <= 1)
        return;
    int n = nmax + nsum;
    Buf *send = sl_calloc((size_t)hosts, sizeof(Buf)), *recv = sl_calloc((size_t)hosts, sizeof(Buf));
    for (int h = 0; h < hosts; h++)
        if (h != host)
            buf_append(&send[h], v, sizeof(int64_t) * (size_t)n);
    net_exchange(send, recv);
    for (int h = 0; h < hosts; h++) {
        if (h != host && recv[h].n == sizeof(int64_t) * (size_t)n) {
            const int64_t *o = (const int64_t *)(const void *)recv[h].p;
            for (int i = 0; i < nmax; i++)
                v[i] = o[i] > v[i] ? o[i] : v[i];
            for (int i = nmax; i < n; i++)
                v[i] += o[i];
        }
        buf_free(&send[h]);
        buf_free(&recv[h]);
    }
    sl_free(send);
    sl_free(recv);
}

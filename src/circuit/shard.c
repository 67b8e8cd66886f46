/*
 * circuit/shard.c - a stateful operator's view of the exchange (shard.h):
 * its allocation, and the inboxes of a channel read as one batch.
 */
#include "shard.h"

#include "../base/mem.h"

Shard *shard_new(int W, int me, int nch)
{
    Shard *sh = sl_calloc(1, sizeof(*sh));
    sh->W = W;
    sh->me = me;
    sh->nch = nch;
    sh->out = sl_calloc((size_t)(nch * W), sizeof(Buf *));
    sh->in = sl_calloc((size_t)(nch * W), sizeof(Buf *));
    return sh;
}

void shard_free(Shard *sh)
{
    if (!sh)
        return;
    sl_free(sh->out);
    sl_free(sh->in);
    buf_free(&sh->kb);
    buf_free(&sh->vb);
    sl_free(sh);
}

Batch *shard_batch(const Shard *sh, int ch) { return shard_batch_of(sh, &ch, 1); }

Batch *shard_batch_of(const Shard *sh, const int *chs, int n)
{
    const Buf *in[64] = {NULL}, **pin = in;
    size_t k = (size_t)n * (size_t)sh->W;
    if (k > 64)
        pin = sl_malloc(k * sizeof(*pin));
    for (int i = 0; i < n; i++)
        for (int from = 0; from < sh->W; from++)
            pin[i * sh->W + from] = sh->in[chs[i] * sh->W + from];
    Batch *b = batch_from_xrecs(pin, (int)k);
    if (pin != in)
        sl_free(pin);
    return b;
}

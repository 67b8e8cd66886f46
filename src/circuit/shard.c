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

Batch *shard_batch(const Shard *sh, int ch)
{
    BatchBuilder *bb = bb_new();
    for (int from = 0; from < sh->W; from++)
        bb_add_xrecs(bb, sh->in[ch * sh->W + from]);
    return bb_finish(bb);
}

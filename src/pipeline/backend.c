/*
 * pipeline/backend.c - which step backend (backend.h) a pipeline runs on:
 * the local one for one process, the distributed one (dist.c) when the
 * options name several hosts; the connectors are opened for this host's
 * share of them (rank 0: the coordinator's inputs and outputs; the others
 * are proxies of the hosts that read or write them).
 */

#include "backend.h"

Backend *backend_open(const Circuit *c, const PipelineOpts *o, Connectors *cs, Err *err)
{
    int W = o->workers > 0 ? o->workers : 1, H = o->hosts > 1 ? o->hosts : 1;
    if (H > W) {
        err_set(err, SL_ECONFIG, "%d hosts need at least %d workers in all (--workers)", H, H);
        return NULL;
    }
    if (connectors_open_part(c, true, 0, H, cs, err))
        return NULL;
    connectors_set_parse_threads(cs, (W + H - 1) / H); /* this host's workers */
    if (H == 1)
        return backend_local_new(c, cs, W);
    return backend_dist_new(c, cs, W, H);
}

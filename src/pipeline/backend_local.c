/*
 * pipeline/backend_local.c - the local step backend (backend.h): every
 * worker in this process, so each operation is the Runtime's own. Also
 * the figures of a runtime's workers, which the distributed backend
 * (dist.c) uses for the coordinator's share.
 */
#include <string.h>

#include "../base/mem.h"
#include "../zset/key.h"
#include "boot.h"
#include "journal.h"
#include "backend.h"

typedef struct Local {
    Backend be;
    const Circuit *c;
    Connectors *cs;
} Local;

size_t backend_local_state_bytes(const Circuit *c, Runtime *rt)
{
    size_t bytes = 0; /* every operator's state in memory (op.h's mem) */
    for (int w = 0; w < rt_workers(rt); w++)
        for (int n = 0; n < c->nnodes; n++) {
            OpMem m;
            op_mem(rt_op(rt, w, n), &m);
            bytes += m.bytes;
        }
    return bytes;
}

const char *backend_mem_kind(OpKind k)
{
    switch (k) {
    case OPK_AGG: return "aggregate";
    case OPK_JOIN: return "join";
    case OPK_DISTINCT: return "distinct";
    case OPK_SINK: return "sink";
    case OPK_UPSERT: return "upsert";
    case OPK_TOPK: return "top-k";
    case OPK_WINDOW: return "window";
    case OPK_FINAL: return "emit_final";
    case OPK_ASOF: return "asof";
    case OPK_TEMPORAL: return "temporal_filter";
    case OPK_FIXPOINT: return "fixpoint";
    default: return NULL;
    }
}

int backend_local_mem(const Circuit *c, Runtime *rt, NodeMem *out)
{
    int k = 0;
    for (int n = 0; n < c->nnodes; n++) {
        const char *kind = backend_mem_kind(c->nodes[n]->k);
        if (!kind)
            continue;
        NodeMem *d = &out[k++];
        memset(d, 0, sizeof(*d));
        d->node = n;
        d->kind = kind;
        d->rel = c->nodes[n]->owner;
        for (int w = 0; w < rt_workers(rt); w++) {
            OpMem om;
            op_mem(rt_op(rt, w, n), &om);
            d->rows += om.rows;
            d->bytes += om.bytes;
            d->disk_bytes += om.disk_bytes;
            d->cache_hits += om.cache_hits;
            d->cache_misses += om.cache_misses;
            d->trace_bytes += om.trace_bytes;
        }
    }
    return k;
}

void backend_local_rel_figures(const Circuit *c, Runtime *rt, int rel, int64_t *changes,
                               int64_t *rows)
{
    int s = c->rels[rel].sink;
    *changes = *rows = 0;
    for (int w = 0; w < rt_workers(rt) && s >= 0; w++) {
        *changes += op_sink_count(rt_op(rt, w, s));
        *rows += op_sink_net(rt_op(rt, w, s));
    }
}

void backend_local_changes(Runtime *rt, int sink, BatchBuilder *bb)
{
    for (int w = 0; w < rt_workers(rt); w++) {
        Buf *ch = op_sink_changes(rt_op(rt, w, sink));
        size_t pos = 0;
        XRec x;
        while (ch && xrec_next(ch, &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
    }
}

void backend_local_watch(Runtime *rt, int sink, bool on)
{
    for (int w = 0; w < rt_workers(rt); w++)
        op_sink_watch(rt_op(rt, w, sink), on);
}

static int l_step(Backend *be, bool quiet, Err *err)
{
    (void)quiet;
    return rt_step(be->rt, err);
}

static bool l_rolled_back(Backend *be) { return rt_rolled_back(be->rt); }

static void l_set_input(Backend *be, int w, int rel, Piece *list)
{
    rt_set_input(be->rt, w, rel, list);
}

static int64_t l_read(Backend *be, int conn, int64_t max, Arena *a, Piece **list, uint64_t *hash,
                      Err *err)
{
    Local *l = (Local *)be;
    int64_t n = input_next(l->cs->in[conn], max, a, 1, list, err);
    if (hash && n > 0)
        *hash = ft_hash_pieces(*list, 0);
    return n;
}

static void l_nothing(Backend *be) { (void)be; }

static void l_changes(Backend *be, int rel, BatchBuilder *bb)
{
    Local *l = (Local *)be;
    backend_local_changes(be->rt, l->c->rels[rel].sink, bb);
}

static void l_watch(Backend *be, int rel, bool on)
{
    Local *l = (Local *)be;
    backend_local_watch(be->rt, l->c->rels[rel].sink, on);
}

static void l_contents(Backend *be, int rel, Buf *out)
{
    Local *l = (Local *)be;
    rt_sink_contents(be->rt, l->c->rels[rel].sink, out);
}

static const uint8_t *l_lookup(Backend *be, int node, const uint8_t *k, size_t kn, Arena *a)
{
    (void)a;
    uint32_t n = 0;
    int w = op_route(k, kn, be->workers);
    return op_upsert_row(rt_op(be->rt, w, node), k, kn, &n);
}

static void l_ckpt_begin(Backend *be, int64_t step, bool full, BackendReportFn fn, void *arg)
{
}

static int l_restore(Backend *be, int64_t step, const char *state, int W0, Err *err)
{
    return 0;
}

static void l_reset(Backend *be)
{
    Local *l = (Local *)be;
    rt_free(be->rt);
    be->rt = rt_new(l->c, be->workers);
}

static bool l_gone(Backend *be) { return false; }

static size_t l_state_bytes(Backend *be)
{
    return backend_local_state_bytes(((Local *)be)->c, be->rt);
}

static void l_rel_figures(Backend *be, int rel, int64_t *changes, int64_t *rows)
{
    backend_local_rel_figures(((Local *)be)->c, be->rt, rel, changes, rows);
}

static int l_out_truncate(Backend *be, int j, int64_t offset, Err *err)
{
    return output_truncate(((Local *)be)->cs->out[j], offset, err);
}

static void l_release(Backend *be, const InPos *pos)
{
    Connectors *cs = ((Local *)be)->cs;
    for (int j = 0; j < cs->nin; j++)
        input_release(cs->in[j], &pos[j]);
}

static int64_t l_divzero(Backend *be, int node) { return rt_divzero_node(be->rt, node); }

static int l_host_stats(Backend *be, HostStats *out) { return 0; }

static int l_mem_node(Backend *be, int *host, char *name, size_t n)
{
    *host = 0;
    if (n)
        name[0] = 0;
    return rt_step_memory_node(be->rt);
}

static void l_summary(Backend *be, int64_t rows, FILE *f) {}

static void l_free(Backend *be)
{
    rt_free(be->rt);
    sl_free(be);
}

static int l_boot(Backend *be, BootPlan *b, bool first, const Buf *snap, Err *err)
{
    rt_set_boot(be->rt, b->run, b->is_new, first ? boot_feed(b, be->rt) : NULL);
    return 0;
}

static const BackendOps local_ops = {
    .step = l_step,
    .rolled_back = l_rolled_back,
    .set_input = l_set_input,
    .read = l_read,
    .release = l_release,
    .drop = l_nothing,
    .changes = l_changes,
    .watch = l_watch,
    .out_truncate = l_out_truncate,
    .contents = l_contents,
    .lookup = l_lookup,
    .ckpt_begin = l_ckpt_begin,
    .ckpt_abandon = l_nothing,
    .poll = l_nothing,
    .restore = l_restore,
    .reset = l_reset,
    .boot = l_boot,
    .detach = l_nothing,
    .tick = l_nothing,
    .gone = l_gone,
    .stop = l_nothing,
    .state_bytes = l_state_bytes,
    .rel_figures = l_rel_figures,
    .divzero = l_divzero,
    .host_stats = l_host_stats,
    .mem_node = l_mem_node,
    .summary = l_summary,
    .free = l_free,
};

Backend *backend_local_new(const Circuit *c, Connectors *cs, int W)
{
    Local *l = sl_calloc(1, sizeof(*l));
    l->be.ops = &local_ops;
    l->be.rt = rt_new(c, W);
    l->be.workers = W;
    l->be.hosts = 1;
    l->c = c;
    l->cs = cs;
    return &l->be;
}

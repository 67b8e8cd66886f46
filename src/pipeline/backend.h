/*
 * pipeline/backend.h - where the controller's steps run: one interface,
 * two implementations. The `local` backend (backend_local.c) is this
 * process's Runtime, every worker here. The `distributed` one (dist.c) is
 * the coordinator of a scale-out pipeline: this process runs its share of
 * the workers through a local backend and drives the other hosts' shares
 * with one command per operation (dist.c's wire protocol). The controller
 * (pipeline.c), the checkpoints (ckpt.c), the pending input (resolve.c)
 * and the statistics (stats.c) read the same for one host and many; no
 * other file asks how many hosts there are.
 *
 * Workers are numbered globally, 0..workers-1; those of host h are
 * [be_first_worker(be, h), be_first_worker(be, h + 1)). Only the
 * controller thread calls a backend.
 */
#ifndef SL_PIPELINE_BACKEND_H
#define SL_PIPELINE_BACKEND_H

#include <stdio.h>

#include "../io/connector.h"
#include "../runtime/exchange.h"
#include "../runtime/runtime.h"
#include "../zset/batch.h"
#include "pipeline.h"

typedef struct Backend Backend;
struct BootPlan;

/* Another host's report of its share of a checkpoint (dist.c hands it in
   when a reply brings it). */
typedef void (*BackendReportFn)(void *arg, int host, int64_t step, const char *text, size_t n);

typedef struct BackendOps {
    /* One step over the input set with set_input (quiet: a replayed step
       whose outputs are already written). */
    int (*step)(Backend *be, bool quiet, Err *err);
    /* The last step failed and undid itself (it may run again). */
    bool (*rolled_back)(Backend *be);
    /* Global worker w's input of relation rel for the next step. */
    void (*set_input)(Backend *be, int w, int rel, Piece *list);
    /* Up to max rows of input connector conn into *list (from arena a);
       *hash (when not NULL) gets the rows' hash (ft_hash_pieces). Returns
       the rows, -1 on an I/O error. */
    int64_t (*read)(Backend *be, int conn, int64_t max, Arena *a, Piece **list, uint64_t *hash,
                    Err *err);
    /* Every input connector's source may drop what precedes pos[j] (the
       oldest checkpoint kept: input_release, on the host that reads it). */
    void (*release)(Backend *be, const InPos *pos);
    /* Input read and not stepped was thrown away (an aborted transaction). */
    void (*drop)(Backend *be);
    /* Add the last step's changes of relation rel's sink, every host's,
       to bb (the sink collects them: pipeline_track_changes). */
    void (*changes)(Backend *be, int rel, BatchBuilder *bb);
    /* Collect (or stop collecting) the changes of relation rel. */
    void (*watch)(Backend *be, int rel, bool on);
    /* Output connector j (of the connectors the backend was opened with)
       is cut back to offset and goes on from there with the counters set
       on it (output_truncate, output_set_counts), on the host that writes
       it; that host's error, if any. */
    int (*out_truncate)(Backend *be, int j, int64_t offset, Err *err);
    /* Append relation rel's materialized contents, every host's (xrec). */
    void (*contents)(Backend *be, int rel, Buf *out);
    /* The current row of PRIMARY KEY table node's key (encoded k) on the
       worker that owns it: valid until the next step (another host's is
       copied into a); NULL when none. */
    const uint8_t *(*lookup)(Backend *be, int node, const uint8_t *k, size_t kn, Arena *a);
    /* Checkpoints, phase one on the other hosts: each saves its share
       (every node when full) and hands its report to fn later, one per
       other host. */
    void (*ckpt_begin)(Backend *be, int64_t step, bool full, BackendReportFn fn, void *arg);
    /* The reports of the checkpoint begun last are no longer wanted. */
    void (*ckpt_abandon)(Backend *be);
    /* A round trip now (reports of a checkpoint in progress). */
    void (*poll)(Backend *be);
    /* The other hosts' shares restart from a manifest's "state" (JSON;
       "[]": fresh) written by W0 workers, at step. */
    int (*restore)(Backend *be, int64_t step, const char *state, int W0, Err *err);
    /* Bootstrapping (boot.h): the next step is a bootstrap step of plan b
       on every host, which all run the same plan (first: fed the
       integrals of the stored streams, each host its own share:
       boot_feed); snap[j] (xrec records, per output; NULL: none) replaces
       that step's changes of output j where another host writes it (a
       new destination of a kept materialized view gets its contents). */
    int (*boot)(Backend *be, struct BootPlan *b, bool first, const Buf *snap, Err *err);
    /* The other hosts stay for the next pipeline of this process (the old
       program settles the storage before a bootstrap): no STOP for them. */
    void (*detach)(Backend *be);
    /* Fresh workers (the state of a half-loaded checkpoint is dropped). */
    void (*reset)(Backend *be);
    /* Between steps, idle or not: keep the other hosts company. */
    void (*tick)(Backend *be);
    /* The other hosts have left (reports will not come). */
    bool (*gone)(Backend *be);
    /* Tell the other hosts to leave (last figures). */
    void (*stop)(Backend *be);
    /* Figures over every host: bytes of materialized state; per relation
       changes and net rows; per node divisions by zero. */
    size_t (*state_bytes)(Backend *be);
    void (*rel_figures)(Backend *be, int rel, int64_t *changes, int64_t *rows);
    int64_t (*divzero)(Backend *be, int node);
    /* Per host figures into out[hosts] (NULL: the count only); 0 when the
       pipeline has no hosts to show (one process). */
    int (*host_stats)(Backend *be, HostStats *out);
    /* Host h's memory as of its last reply (scale-out; NULL with one
       process): its stateful nodes into out (room for c->nnodes, node
       order); returns how many nodes, -1 before its first figures. Its
       step arenas, spill cache, whether a spill failed there and its
       spill counters into *hm (arena_bytes, cache_bytes, spill_failed,
       cache_hits .. held_bytes). */
    int (*host_mem)(Backend *be, int h, NodeMem *out, HostMem *hm);
    /* Where the last step passed a host's allowance (rt_step_memory_node
       of the first host that did: -2 reading its input, or -1) and which
       host that was (its number into *host, its name into name). */
    int (*mem_node)(Backend *be, int *host, char *name, size_t n);
    /* The end-of-run lines about the hosts (rows: processed this run). */
    void (*summary)(Backend *be, int64_t rows, FILE *f);
    void (*free)(Backend *be);
} BackendOps;

struct Backend {
    const BackendOps *ops;
    Runtime *rt;              /* this process's workers (reset replaces it) */
    int workers;              /* in all, every host */
    int hosts;                /* processes the workers are spread over */
    double src_wall;          /* wall-clock seconds the next step's input arrived, on
                                 average (the controller sets it): its outputs' lag */
    /* the next step's memory allowance (pipeline/memory.c, which also sets
       this process's own with rt_set_step_memory): 0, or every other host
       bounds its workers to the room its own resident memory leaves under
       step_limit, at least step_floor, shared among them (after giving
       freed memory back to the system when step_retry) */
    int64_t step_limit, step_floor;
    bool step_retry;
};

/* Open the connectors (this host's share: io's connectors_open_part) and
   the backend for o (distributed when o->hosts > 1). NULL with err set. */
Backend *backend_open(const Circuit *c, const PipelineOpts *o, Connectors *cs, Err *err);
/* The distributed backend: rank 0 of H hosts (dist.c). */
Backend *backend_dist_new(const Circuit *c, Connectors *cs, int W, int H);
/* The local backend over a new runtime of W workers (hosts = 1). */
Backend *backend_local_new(const Circuit *c, Connectors *cs, int W);
/* Local figures of runtime rt (this process's workers), for the
   distributed backend's own share. */
size_t backend_local_state_bytes(const Circuit *c, Runtime *rt);
void backend_local_rel_figures(const Circuit *c, Runtime *rt, int rel, int64_t *changes,
                               int64_t *rows);
/* The kind /stats names a stateful node by (join, aggregate, ...), NULL
   for a node without state. */
const char *backend_mem_kind(OpKind k);
/* Every stateful node's memory over rt's workers into out (room for
   c->nnodes), in node order; returns how many. */
int backend_local_mem(const Circuit *c, Runtime *rt, NodeMem *out);
/* The changes of sink on every worker of rt into bb. */
void backend_local_changes(Runtime *rt, int sink, BatchBuilder *bb);
void backend_local_watch(Runtime *rt, int sink, bool on);

static inline int be_first_worker(const Backend *be, int h)
{
    return xchg_first(be->workers, be->hosts, h);
}
static inline int64_t be_steps(const Backend *be) { return rt_steps(be->rt); }

/* memory.c, for follow.c: a follower's own memory budget (docs/memory.md):
   its traces spill into its own directory under the limit, which applies
   to each host. Start before its runtime is made (its traces take part);
   walked: its figures' walk (what cannot spill); before_step: a STEP's
   bound (and on the retry after a step past it, spill all that can);
   after_step: spill until the state fits, merge spilled runs. */
typedef struct PMemHost PMemHost;
PMemHost *pmem_host_start(const PipelineOpts *o, int host, int hosts);
void pmem_host_walked(PMemHost *h, const Circuit *c, const NodeMem *nodes, int n);
void pmem_host_before_step(PMemHost *h, bool bounded, bool retry);
void pmem_host_after_step(PMemHost *h, Runtime *rt);
size_t pmem_host_cache_bytes(const PMemHost *h);
bool pmem_host_failed(const PMemHost *h);
void pmem_host_free(PMemHost *h);

#endif

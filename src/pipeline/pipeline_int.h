/*
 * pipeline/pipeline_int.h - the Pipeline object of the controller's files:
 * pipeline.c (the loop, lifecycle, commands, transactions), step.c (one
 * step), inbox.c (the bounded HTTP input queue), resolve.c (the pending
 * input), reject.c (poison records), stats.c (the published figures) and
 * replay.c (journaled steps after a restart). Each concern's state is a
 * struct of its own header, embedded here (Inbox, Pending, Txn, Figures,
 * Rejects); where steps run is the backend (backend.h), fault tolerance
 * is behind ft.h and sees none of this.
 *
 * Locking: everything under "shared" is protected by mu; the rest belongs
 * to the controller thread alone.
 */
#ifndef SL_PIPELINE_PIPELINE_INT_H
#define SL_PIPELINE_PIPELINE_INT_H

#include <pthread.h>

#include "../io/deliver.h"
#include "backend.h"
#include "ft.h"
#include "inbox.h"
#include "pending.h"
#include "pipeline.h"
#include "reject.h"
#include "stats.h"
#include "txn.h"

typedef enum PState { PS_RUNNING, PS_PAUSED, PS_STOPPING, PS_STOPPED } PState;

typedef struct Cmd {
    struct Cmd *next;
    PipeCmd cmd;
    int rc;
    bool accepted, done;
    bool detached;            /* the caller left: the controller frees it */
    PipeCmdResult res;
} Cmd;

typedef struct Call {
    struct Call *next;
    void (*fn)(Pipeline *p, void *arg);
    void *arg;
    int rc;
    bool done;
} Call;



struct Pipeline {
    const Circuit *c;
    Ft *ft;                   /* fault tolerance, or NULL without storage */
    bool quiet_outputs;       /* replay: this step's outputs are already written */
    PipelineOpts o;
    Backend *be;              /* where steps run: this process, or every host */
    Connectors cs;
    Delivery *dl;             /* the outputs' retries, queues, dead letters (io/deliver.h) */
    bool bp_said;             /* backpressure: announced (the inputs are paused) */
    int W;                    /* workers in all (every host) */
    bool tty;
    double t0, last_report;
    int64_t rows;             /* rows processed by completed steps */
    int64_t rows0;            /* ... when this run started (a restart resumes the count) */
    PipelineHooks hooks;
    PipelineHooks more_hooks[3]; /* pipeline_add_hooks */
    int nmore_hooks;
    Pending pend;
    int64_t step_rows;
    double step_t0;           /* when the running step started (pipe_now) */
    double step_cpu0;         /* ... the process's CPU seconds then (pipe_cpu) */
    double step_view_cpu;     /* ... and they took to the views' change */
    int *watch;               /* per relation: pipeline_track_changes count */
    Batch **chg;              /* per relation: this step's changes, cached */
    bool *chg_done;
    Buf kb, vb;               /* scratch encodings (resolve.c) */
    Arena *scratch;           /* resolve.c, reset per use */
    int64_t upd_missing;      /* updates of missing keys (logged) */
    Txn tx;                   /* the transaction (controller; mirrored in tx_pub) */
    int err_rel;              /* the errors table (PIPELINE_ERRORS_TABLE), or -1 */
    int clock_rel;            /* the clock table NOW() reads, fed by clock.c, or -1 */
    double clock_res;         /* its resolution (seconds); 0: driven by hand */
    double clock_next;        /* monotonic time of its next tick */
    int64_t clock_last;       /* the last time pushed (microseconds) */

    /* ---- shared (mu) ---- */
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* controller: work arrived */
    pthread_cond_t room;      /* pushers: the queue has room */
    pthread_cond_t done;      /* commands, calls, tokens finished */
    PState state;
    bool stop_req;
    Inbox q;                  /* the HTTP input queue */
    Cmd *cmds;
    Call *calls;
    Figures fig;              /* the published figures (stats.c) */
    TxnPub tx_pub;            /* the transaction as /stats shows it */
    Rejects rej;              /* rejected records (reject.c) */
    struct PMem *pm;          /* the memory budget and breakdown (memory.c) */
    int boot;                 /* bootstrapping (boot.h): BOOT_* below */
};

/* Pipeline.boot: a restart with a changed program (docs/bootstrapping.md). */
enum {
    BOOT_NONE,     /* the storage held this program's checkpoint, or none */
    BOOT_AWAITING, /* restored, waiting for pipeline_approve: no input is taken */
    BOOT_APPROVED, /* approved: the controller runs the bootstrap step */
    BOOT_REJECTED, /* rejected: the pipeline stops, the storage unchanged */
    BOOT_DONE,     /* the bootstrap step ran and its checkpoint is written */
};

/* clock.c: the clock of NOW() (SLUICE_CLOCK, docs/sql.md) */
void pipe_clock_init(Pipeline *p);
/* Controller loop: push the time when a tick is due. */
void pipe_clock_tick(Pipeline *p);

/* memory.c: the memory budget and breakdown (docs/memory.md) */
typedef struct PMem PMem;
/* Resolve the limit, set up spilling, track the traces this thread makes
   (before the backend is opened). */
void pmem_start(Pipeline *p, const PipelineOpts *o);
void pmem_free(Pipeline *p);
/* Once p->step_rows is set: the step size to come back to; with
   --memory-limit the first steps are small until one is measured. */
void pmem_start_steps(Pipeline *p);
/* Between steps: spill until the state fits the limit. */
int pmem_after_step(Pipeline *p, Err *err);
/* Before a step of rows input rows: bound what its workers may allocate
   by the room left under the limit, and measure it (with --memory-limit,
   or resident memory past half the limit). */
void pmem_before_step(Pipeline *p, int64_t rows);
/* The step failed and was undone because a worker passed its bound in a
   node (the backend's mem_node, on any host; -1: not for memory, false).
   True: run it
   again (everything that can spill was spilled); false: it cannot fit:
   with stall_ok the inputs are paused and /status says why
   (pmem_step_stuck), else the step's error stands (naming the node). */
bool pmem_step_failed(Pipeline *p, bool stall_ok);
bool pmem_step_stuck(Pipeline *p);
/* The state cannot fit the budget: the inputs wait (pipeline.c's loop). */
bool pmem_hold(Pipeline *p);
/* Whether a memory limit applies (pmem_after_step has work to do). */
bool pmem_bounded(Pipeline *p);
/* Walk the state for the figures when due (force: now); true when walked. */
bool pmem_refresh(Pipeline *p, bool force);
/* The published figures (a copy; under p->mu). */
void pmem_stats(Pipeline *p, MemStats *out, double now);

/* txn.c, for pipeline.c */
/* The state (takes mu). */
PState pipe_state(Pipeline *p);
/* Finish cmd with rc (under mu): its waiter wakes. */
void pipe_cmd_finish(Pipeline *p, Cmd *cmd, int rc);

/* replay.c */
/* Queue the logged HTTP input no journaled step consumed, before anything
   new can be queued (queue order must stay log order). After ft_open. */
int ft_requeue(Pipeline *p, Err *err);
/* Replay the journaled steps after the checkpoint. Start of pipeline_run. */
int ft_replay(Pipeline *p, Err *err);

/* step.c: one step (pipeline.c's loop, replay.c) */
/* Read the connectors (when read_conns) and take HTTP batches (up to
   http_max rows, all when < 0, none when 0) into pd. Returns the rows
   gathered, or -1 on an I/O error. */
int64_t pipe_gather(Pipeline *p, Pending *pd, bool read_conns, int64_t http_max, Err *err);
/* HTTP batches up to token tok are done (processed or discarded). */
void pipe_tokens_done(Pipeline *p, int64_t tok);
/* SIGINT, SIGTERM, SIGUSR1 stop the pipeline; pipe_signalled says one came. */
void pipe_catch_signals(void);
bool pipe_signalled(void);
const char *pipe_human(double v, char *b, size_t n);
/* Rows of input connector conn (the backend reads them) into pd. */
int64_t pipe_input_next(Pipeline *p, int conn, int64_t max, Arena *a, Piece **list,
                        uint64_t *hash, Err *err);
void pipe_add_input(Pipeline *p, Pending *pd, int conn, Piece *list, int64_t rows,
                    uint64_t hash);
int64_t pipe_add_batch(Pipeline *p, Pending *pd, InBatch *b);
/* One step over pd (journaled first with storage); pd is reset after. */
int pipe_run_step(Pipeline *p, Pending *pd, Err *err);
/* The same; with stall_ok, a step that cannot fit the memory limit leaves
   pd pending and pauses the inputs (pmem_step_stuck) instead of failing. */
int pipe_run_step_ex(Pipeline *p, Pending *pd, bool stall_ok, Err *err);

#endif

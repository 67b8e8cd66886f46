/*
 * pipeline/pipeline.h - runs a compiled program: the controller loop that
 * pulls input from connectors and from the HTTP input queue, decides step
 * boundaries, runs transactions, steps the workers, delivers outputs,
 * reports progress and statistics, and dumps materialized relations.
 *
 * One thread (the one that calls pipeline_run) is the controller: it alone
 * steps the runtime and touches operator state. Every other thread (the
 * HTTP server's) talks to it through the thread-safe functions below:
 * pipeline_push_take (parsed rows into a bounded queue), pipeline_command
 * (lifecycle and transactions), pipeline_call (run a function on the
 * controller between two steps: snapshots, subscriptions) and
 * pipeline_stats (a copy of the published figures). Hooks run on the
 * controller after every step (egress fan-out).
 */
#ifndef SL_PIPELINE_PIPELINE_H
#define SL_PIPELINE_PIPELINE_H

#include "../circuit/circuit.h"
#include "../io/connector.h"
#include "../zset/batch.h"

typedef struct PipelineOpts {
    int workers;          /* worker threads in all (>= 1; >= hosts) */
    int hosts;            /* scale-out: MPI ranks (0 or 1: one process) */
    bool until_done;      /* stop once every input connector has ended */
    const char *dump_dir; /* write DIR/<name>.csv for materialized relations */
    int64_t step_rows;    /* max input rows per step (all tables), 0 = default */
    int progress;         /* 1 = always, 0 = never, -1 = auto (terminal: live line) */
    bool start_paused;    /* start in the paused state (connectors do not read) */
    int64_t queue_records; /* bound of the HTTP input queue (records), 0 = 1M */
    /* fault tolerance (issue 6; docs/fault-tolerance.md) */
    const char *storage;  /* storage directory, or NULL */
    int fault_tolerance;  /* FT_* (used only with storage) */
    double checkpoint_interval; /* seconds between checkpoints, 0 = on request only */
    double checkpoint_timeout;  /* seconds a checkpoint's writing child may take before
                                   it is killed and the checkpoint fails; 0 = no limit */
    uint64_t fingerprint; /* the program's identity (hash of its text) */
    const char *program;  /* its text, kept in every checkpoint's manifest
                             for `sluice diff` (docs/bootstrapping.md), or NULL */
    int on_error;         /* ONERR_*: what a runtime error in a step does */
    /* memory budget (docs/memory.md): bytes of state kept in memory before
       traces spill to files; 0 = the default (cgroup memory.max, else 80%
       of MemTotal), < 0 = none */
    int64_t memory_limit;
    /* bootstrapping (pipeline/boot.h): the storage holds a checkpoint of
       another program, settled (pipeline_settle); restore it through this
       plan and run the bootstrap step. NULL: such storage is refused. */
    struct BootPlan *boot;
    bool boot_await;      /* ... start awaiting approval (POST /approve) */
} PipelineOpts;

/* The table that receives the records a runtime error rejected: one row
   per record (the step, the table, the record as JSON, the error). The
   CLI adds it to every program it runs; a program may declare it itself
   with these columns. */
#define PIPELINE_ERRORS_TABLE "sluice_errors"
#define PIPELINE_ERRORS_DDL                                                                    \
    "CREATE TABLE sluice_errors (step BIGINT NOT NULL, table_name VARCHAR NOT NULL, "        \
    "record VARCHAR NOT NULL, error VARCHAR NOT NULL) WITH ('materialized' = 'true');"

/* Runtime errors in a step (overflow, invalid cast) caused by input rows. */
enum {
    ONERR_REJECT = 0, /* reject the rows that fail, apply the rest (default) */
    ONERR_STOP,       /* stop the pipeline with the error */
};

enum {
    FT_EXACTLY_ONCE = 0, /* checkpoints + journal + ingress log: the default with storage */
    FT_AT_LEAST_ONCE,    /* checkpoints + ingress log; steps after a checkpoint run again */
    FT_NONE,             /* checkpoints only on request (and at a clean stop) */
};

typedef struct Pipeline Pipeline;

/* Open the connectors and start the workers. NULL with err set (bad
   connector configuration, missing file). */
Pipeline *pipeline_new(const Circuit *c, const PipelineOpts *o, Err *err);
/* The controller loop, on the calling thread, until inputs end
   (until_done), SIGINT/SIGTERM or a stop command; then the summary and
   --dump. Returns 0, or an SL_E* code with err set. */
int pipeline_run(Pipeline *p, Err *err);
/* Bootstrapping (docs/bootstrapping.md), on a pipeline of the program a
   storage was written by: replay its journaled steps and logged HTTP
   input, and write a checkpoint with nothing after it; no connector is
   read. Then pipeline_free it and start the new program over that
   checkpoint (PipelineOpts.boot). */
int pipeline_settle(Pipeline *p, Err *err);
/* GET /diff: the program diff of the bootstrap (sql/progdiff.h's JSON,
   with "bootstrap": awaiting_approval, approved, rejected or done), or
   NULL when the pipeline did not start over another program's storage.
   cJSON_Delete it. Any thread. */
cJSON *pipeline_boot_diff(Pipeline *p);
/* POST /approve (yes) or /reject: the bootstrap awaiting approval runs,
   or the pipeline stops with the storage unchanged. PIPE_CONFLICT when
   nothing awaits approval. Any thread. */
int pipeline_approve(Pipeline *p, bool yes);
/* Free everything; the pipeline must not be running. */
void pipeline_free(Pipeline *p);
const Circuit *pipeline_circuit(const Pipeline *p);
int pipeline_workers(const Pipeline *p);

/* Write DIR/<name>.csv for every materialized relation (see README);
   controller only. */
int pipeline_dump(Pipeline *p, const char *dir, Err *err);
/* Scale-out: the life of a rank > 0 (a follower of rank 0's controller);
   returns when the coordinator stops. */
int pipeline_follow(const Circuit *c, const PipelineOpts *o, Err *err);
/* Rank 0 could not start its pipeline: tell the followers to leave. */
void pipeline_dismiss_followers(void);
/* A follower that cannot start: answer rank 0's first command with why. */
void pipeline_follow_failed(const char *why);

/* Result codes of the thread-safe calls (besides 0). */
enum {
    PIPE_FULL = 1,     /* the input queue is full: retry later */
    PIPE_STOPPING = 2, /* the pipeline is stopping or stopped */
    PIPE_CONFLICT = 3, /* not allowed in the current state (message says why) */
    PIPE_IOERR = 4,    /* storage failed (the input was not made durable) */
};

/* ---------------------------------------------------------------- input */

/* Rows parsed for one table (HTTP ingress), in arrival order, owned by one
   thread until handed to pipeline_push_take. */
typedef struct InBatch InBatch;

InBatch *inbatch_new(const Circuit *c, int rel);
void inbatch_free(InBatch *b);
/* Chunk with room for one more row at its end (rows are appended by the
   format parsers); its strings must come from inbatch_arena(b). */
Chunk *inbatch_room(InBatch *b);
Arena *inbatch_arena(InBatch *b);
/* Mark the row just appended as a partial update of a PRIMARY KEY table:
   present[j] != 0 for the columns it gives (copied). */
void inbatch_mark_update(InBatch *b, const uint8_t *present);
/* Account bytes of input and bad records (for statistics). */
void inbatch_note(InBatch *b, int64_t bytes, int64_t bad);
int64_t inbatch_rows(const InBatch *b);
int inbatch_rel(const InBatch *b);

/*
 * Queue b's rows for the next step (takes ownership of b, freed on every
 * outcome). The rows of one call are accepted or refused together. When
 * the queue is full: paused or wait_secs <= 0 -> PIPE_FULL at once;
 * running -> wait up to wait_secs for room. *token identifies the batch
 * (see pipeline_token_done). Returns 0, PIPE_FULL or PIPE_STOPPING.
 */
int pipeline_push_take(Pipeline *p, InBatch *b, double wait_secs, int64_t *token);
/* Statistics for HTTP input that was refused whole (parse errors only). */
void pipeline_note_rejected(Pipeline *p, int rel, int64_t bytes, int64_t bad);
/* true once the step that consumed the batch with this token has run (or
   its transaction was aborted, or the pipeline stopped). */
bool pipeline_token_done(Pipeline *p, int64_t token);
/* Block until pipeline_token_done(p, token). */
void pipeline_token_wait(Pipeline *p, int64_t token);
/* Records of the batch with this token that a runtime error rejected (0
   when none or forgotten: the newest 256 batches with rejections are
   kept); why gets the first error. Any thread, after pipeline_token_wait. */
int64_t pipeline_token_rejected(Pipeline *p, int64_t token, char *why, size_t whylen);

/* ---------------------------------------------------------------- control */

typedef enum PipeCmd {
    PC_START,        /* resume reading and stepping */
    PC_PAUSE,        /* stop reading connectors and stepping; HTTP input queues */
    PC_STOP,         /* drain the queue, finish the step, flush outputs, return */
    PC_TXN_START,    /* open a transaction */
    PC_TXN_COMMIT,   /* one step over everything the transaction holds */
    PC_TXN_ABORT,    /* discard everything the transaction holds */
} PipeCmd;

typedef struct PipeCmdResult {
    int64_t txn_id;   /* the transaction started, committed or aborted */
    int64_t step;     /* steps completed when the command finished */
    int64_t records;  /* records committed or discarded */
    int64_t rejected; /* a commit: records rejected by runtime errors (msg: the first) */
    char msg[256];    /* why, when the command was refused */
} PipeCmdResult;

/* Run a command. With wait, returns once it has taken effect (a commit:
   once its step is done; stop: once the pipeline has stopped); without,
   once the controller accepted it. Returns 0, PIPE_CONFLICT (res->msg says
   why) or PIPE_STOPPING. */
int pipeline_command(Pipeline *p, PipeCmd cmd, bool wait, PipeCmdResult *res);
/* Run fn(p, arg) on the controller between two steps and return 0 once it
   ran, or PIPE_STOPPING when the pipeline stopped first. */
int pipeline_call(Pipeline *p, void (*fn)(Pipeline *p, void *arg), void *arg);

/* Controller only (inside pipeline_call or a hook): */
int64_t pipeline_step(const Pipeline *p);
/* Append every worker's materialized contents of rel as xrec records
   (key = row encoding, weight; the same row may appear more than once,
   weights add up). false when rel is not materialized. */
bool pipeline_contents_raw(Pipeline *p, int rel, Buf *out);
/* Collect rel's changes from the next step on (counted: on/off pairs). */
void pipeline_track_changes(Pipeline *p, int rel, bool on);
/* This step's consolidated changes of rel (borrowed until the next step),
   or NULL when nothing collects them. After-step hooks only. */
const Batch *pipeline_changes(Pipeline *p, int rel);
bool pipeline_stop_requested(Pipeline *p);

typedef struct PipelineHooks {
    void *arg;
    /* After every step's outputs were delivered (controller thread). */
    void (*after_step)(void *arg, Pipeline *p, int64_t step);
} PipelineHooks;
void pipeline_set_hooks(Pipeline *p, const PipelineHooks *h);
/* One more set of hooks, run after those of pipeline_set_hooks (the
   PostgreSQL protocol's subscriptions beside HTTP egress); before
   pipeline_run. */
void pipeline_add_hooks(Pipeline *p, const PipelineHooks *h);

/* ---------------------------------------------------------------- statistics */

typedef struct LatStats {
    int64_t n;              /* records measured */
    double p50, p95, p99;   /* milliseconds */
} LatStats;

typedef struct ConnStats {
    char name[192];         /* "table t, connector 0 (file_input)" or "http" */
    const char *transport;  /* datagen, file_input, http */
    int rel;
    int64_t records, bytes, parse_errors, buffered;
    int64_t rejected;       /* parsed, then rejected by a runtime error (reject.c) */
    int64_t applied;        /* records completed steps applied (processed - rejected; after
                               a resume, the records read before it count as applied) */
    bool end_of_input;
    bool backfill;          /* "transaction": "backfill" */
    int host;               /* scale-out: the host that reads it */
    LatStats latency;       /* arrival -> end of the step that processed it */
    bool has_lag;
    LatStats lag;           /* outputs delivered (wall clock) - event time */
    InProgress prog;        /* position, high watermark, lag (prog.unit NULL: none) */
} ConnStats;

typedef struct OutStats {
    char name[192];
    const char *transport;  /* file_output, postgres_output, kafka_output */
    int rel;
    int host;               /* scale-out: the host that writes it */
    int64_t records, bytes, steps;
    /* delivery (io/deliver.c): changes == acked + dead + pending */
    int64_t changes, sent, acked, retried, dead, pending, pending_bytes, queued_steps;
    bool failing, backpressure;
    char error[256];        /* the destination's last error while failing */
    LatStats lag;           /* input arrival -> acknowledgement (ms; n: records) */
} OutStats;

typedef struct RelStats {
    int64_t changes;        /* rows (sum of |weights|) that reached the sink */
    int64_t rows;           /* net rows (integral of weights) */
    int64_t divzero;        /* divisions by zero that gave NULL */
    bool has_sink;
    /* tables with LATENESS (circuit/watermark.h): the watermark
       (INT64_MIN until a row is seen) and the rows dropped as late */
    bool has_wm;
    int64_t watermark, late;
} RelStats;

typedef struct HostStats {
    char name[64];
    int workers;
    int64_t steps;
    size_t rss_bytes, state_bytes;
    int64_t cpu_msecs, exchanged_bytes;
    double exchange_secs;   /* in exchanges between hosts */
} HostStats;

/* Memory of one stateful node (all workers of this process). */
typedef struct NodeMem {
    int node;
    const char *kind;       /* join, aggregate, distinct, upsert, sink, top-k, window, emit_final */
    int rel;                /* the relation whose definition made the node */
    int64_t rows;           /* tuples, groups, keys or rows kept */
    size_t bytes, disk_bytes; /* in memory, spilled to files */
    int64_t cache_hits, cache_misses; /* spilled blocks read from the cache / files */
    size_t trace_bytes;     /* of bytes, its traces' (which can spill: a join's,
                               a DISTINCT's, a MIN/MAX's value sets); the rest
                               cannot spill */
} NodeMem;

/* One host's memory (scale-out), as of its last reply. */
typedef struct HostMem {
    size_t state_bytes, disk_bytes; /* its nodes', in memory and on disk */
    size_t arena_bytes;     /* its workers' step and morsel arenas */
    int first, nnodes;      /* its nodes: MemStats.host_nodes[first, first + nnodes),
                               most bytes first */
    bool valid;             /* its figures came (false: none yet) */
    char name[64];          /* (HostStats.name) */
    size_t rss_bytes;       /* its resident memory */
    size_t unspillable_bytes; /* its state that cannot spill (not in traces) */
    size_t cache_bytes;     /* its cache of spilled blocks read back */
    bool spill_failed;      /* a spill failed there: its state stays in memory */
    /* its spill counters (zset/spill.h SpillStats, storage.h spill_store_held) */
    int64_t cache_hits, cache_misses, spilled_runs, runs_on_disk, runs_merged;
    int64_t held_files;     /* spill files kept for a checkpoint's child */
    size_t held_bytes;
} HostMem;

/* Where memory goes (this process; docs/memory.md). */
typedef struct MemStats {
    size_t limit;           /* the budget, 0 when none */
    const char *limit_source; /* flag, cgroup, meminfo, none */
    size_t state_bytes, disk_bytes;  /* every node's, in memory and on disk */
    size_t cache_bytes;     /* spilled blocks read back and cached */
    int64_t cache_hits, cache_misses, spilled_runs;
    int64_t runs_on_disk;   /* spilled runs that exist now */
    int64_t runs_merged;    /* spilled runs merged away (k into one: k - 1) */
    int64_t held_files;     /* spill files kept for a checkpoint's child alone */
    size_t held_bytes;
    size_t arena_bytes;     /* workers' step and morsel arenas */
    double age_secs;        /* since the figures were taken (they are walked
                               at most about once a second) */
    char spill_dir[256];    /* "" until something spilled */
    char pressure[384];     /* why the budget cannot be kept, "" when it is */
    bool hold;              /* ... so the inputs are paused (docs/memory.md) */
    int nnodes;
    NodeMem *nodes;         /* stateful nodes, most bytes first */
    /* scale-out: every host's (host 0's too, the figures above) and the
       sums over the hosts; nhosts is 0 with one process */
    int nhosts;
    HostMem *hosts;
    NodeMem *host_nodes;    /* the hosts' nodes (HostMem.first) */
    size_t total_state_bytes, total_disk_bytes, total_arena_bytes;
    int ntotal;
    NodeMem *total_nodes;   /* per node, summed over the hosts, most bytes first */
} MemStats;

/* The newest step's timing (controller clock): from the step's start (its
   input gathered, before journaling) to the views' change (the circuit
   ran: every view's contents hold the step), and to the step's end (its
   outputs delivered, its figures published). */
typedef struct StepTiming {
    int64_t step;           /* 0: no step yet */
    int64_t records;        /* input records the step applied */
    double view_secs, total_secs;
    double view_cpu_secs;   /* this process's CPU time (every thread) from the
                               step's start to the views' change */
} StepTiming;

typedef struct PipeStats {
    const char *state;      /* running, paused, stopping, stopped */
    int64_t step;
    int64_t input_records, input_bytes, processed_records;
    int64_t buffered_records, buffered_bytes;
    int64_t queue_limit;
    size_t rss_bytes, state_bytes;
    int64_t cpu_msecs;
    double uptime_secs;
    bool inputs_ended;      /* every file/datagen connector reached its end */
    /* transaction */
    int64_t txn_id;         /* 0 when none */
    const char *txn_status; /* none, open, committing */
    const char *txn_initiator; /* api, backfill */
    int64_t txn_records;
    double txn_secs, commit_secs;
    int64_t last_commit_id, last_commit_records, last_commit_step;
    int64_t rejected_records; /* input records rejected by runtime errors */
    int nin, nout, nrels;
    ConnStats *in;
    OutStats *out;
    RelStats *rels;         /* per relation, indexed like circuit->rels */
    int nhosts;             /* scale-out: per host figures (rss_bytes, state_bytes and
                               cpu_msecs above are their sums) */
    HostStats *hosts;
    StepTiming last_step;   /* the newest step's */
    char backpressure[192]; /* the output whose queue pauses the inputs, "" when none */
    MemStats mem;
} PipeStats;

/* ---------------------------------------------------------------- checkpoints */

typedef struct CkptStatus {
    bool enabled;          /* storage is configured */
    const char *mode;      /* exactly_once, at_least_once, none */
    int64_t requested;     /* sequence number of the newest request (0: none) */
    int64_t completed;     /* sequence number of the newest completed request */
    int64_t last_step;     /* step of the newest complete checkpoint (-1: none) */
    double last_secs;      /* how long it took in all */
    double last_pause_secs; /* ... of which the pipeline waited (taking the state) */
    int64_t last_files, last_written, last_reused, last_bytes;
    bool in_progress;
    int64_t job_step;      /* in progress: the step it saves */
    double job_secs;       /* ... how long it has been on its way */
    int job_pid;           /* ... the child writing the state (0: none, reused) */
    char failure[1024];    /* the last failure (requested or periodic) since the
                              last success, "" when none */
    int64_t failed;        /* sequence number of the last failed request (0: none) */
    char storage_error[512]; /* why storage is failing now (input refused), "" when fine */
} CkptStatus;
/* Ask for a checkpoint at the next step boundary; *seq identifies the
   request. PIPE_CONFLICT when there is no storage. Any thread. */
int pipeline_checkpoint(Pipeline *p, int64_t *seq);
void pipeline_checkpoint_status(Pipeline *p, CkptStatus *out);

/* A consistent copy of the published figures (any thread). */
void pipeline_stats(Pipeline *p, PipeStats *out);
/* An output's queue is past its bound (the inputs are paused): true and
   its name. Any thread. */
bool pipeline_backpressure(Pipeline *p, char *name, size_t n);
/* The dead letters of view (or output connector) name as JSON into out;
   false when no output has that name. Any thread. */
bool pipeline_dead_letters(Pipeline *p, const char *name, Buf *out);
void pipestats_free(PipeStats *s);

#endif

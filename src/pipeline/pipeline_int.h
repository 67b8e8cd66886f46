/*
 * pipeline/pipeline_int.h - the Pipeline object shared by the controller's
 * files: pipeline.c (the loop, lifecycle, transactions), step.c (one
 * step), inbox.c (the bounded HTTP input queue), inbatch.c (its batches),
 * resolve.c (partial updates of PRIMARY KEY tables, order-preserving split
 * of a step's input across workers), stats.c (latency histograms and the
 * published figures), and the fault tolerance files (ft_int.h).
 *
 * Locking: everything under "shared" is protected by mu; the rest belongs
 * to the controller thread alone.
 */
#ifndef SL_PIPELINE_PIPELINE_INT_H
#define SL_PIPELINE_PIPELINE_INT_H

#include <pthread.h>

#include "../io/connector.h"
#include "../runtime/runtime.h"
#include "../zset/hmap.h"
#include "backend.h"
#include "pipeline.h"

/* A log-bucketed histogram of durations in microseconds (8 buckets per
   power of two: values within 12.5%), weighted by records. */
#define HIST_BUCKETS (8 * 52)
typedef struct Hist {
    int64_t n;
    int64_t b[HIST_BUCKETS];
} Hist;
void hist_add(Hist *h, double usecs, int64_t weight);
void hist_summary(const Hist *h, LatStats *out);

/* Statistics of one input: a connector (conn >= 0) or a table's HTTP
   ingress (conn == -1). All fields under mu. */
typedef struct Slot {
    char name[192];
    const char *transport;
    int rel, conn;
    int event_col;            /* TIMESTAMP column for lag, or -1 */
    bool backfill;
    int64_t records, bytes, errors;
    int64_t queued;           /* HTTP: records in the queue */
    int64_t rejected;         /* records rejected by a runtime error (reject.c) */
    int64_t pending;          /* records in the pending step or transaction */
    bool eoi;
    Hist lat, lag;
} Slot;

/* A partial update: row `row` of chunk c gives the columns in present[]. */
typedef struct UpdMark {
    struct UpdMark *next;
    Chunk *c;
    int64_t row;
    uint8_t *present;
} UpdMark;

struct InBatch {
    int rel;
    int64_t seq;              /* ingress log sequence number (0: not logged) */
    int ncol;
    const SqlType *types;
    Arena *a;                 /* owns pieces, chunks, strings, marks */
    Piece *head, *tail;       /* chunk pieces in row order */
    int64_t rows;             /* counted at push */
    int64_t bytes, bad;
    UpdMark *upd, *upd_tail;  /* partial updates, in row order */
    double arrival;           /* monotonic seconds when queued */
    int64_t token;
    InBatch *next;            /* queue / pending list */
};

int64_t inbatch_count(InBatch *b); /* inbatch.c */

/* Rows of one input source that entered the pending input together. */
typedef struct Unit {
    struct Unit *next;
    int slot;
    int rel;
    double arrival;
    int64_t rows;
    int nsamp;
    int64_t *ev;              /* sampled event times (microseconds since epoch) */
    double samp_w;            /* records each sample stands for */
} Unit;

/* A table's pending input: pieces in the order they apply. */
typedef struct Seq {
    Piece *head, *tail;
    int64_t rows;
} Seq;

/* The input of the next step, or of the open transaction. */
typedef struct Pending {
    Arena *a;                 /* pieces, connector chunks, units */
    Seq *seq;                 /* per relation */
    Unit *units, *units_tail;
    InBatch *batches, *batches_tail; /* HTTP batches (their arenas) */
    int64_t rows;
    int64_t max_token;
    int64_t max_seq;          /* newest ingress log record taken */
    int64_t *conn_rows;       /* per input connector: rows taken */
    uint64_t *conn_hash;      /* ... and a hash of them (the journal's check) */
    HMap **ov;                /* per relation: key -> Overlay (resolve.c), lazily */
    int64_t *slot_rows;       /* per statistics slot: records pending */
} Pending;

typedef enum PState { PS_RUNNING, PS_PAUSED, PS_STOPPING, PS_STOPPED } PState;
typedef enum TxnState { TX_NONE, TX_OPEN, TX_COMMITTING } TxnState;

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

typedef struct Ft Ft;

/* Rejections per HTTP batch token, newest REJECT_TOKENS kept (reject.c). */
#define REJECT_TOKENS 256
typedef struct RejTok {
    int64_t token, n;
    char why[200];
} RejTok;
typedef struct Rejects {
    RejTok tok[REJECT_TOKENS];
    int next;
} Rejects;

struct Pipeline {
    const Circuit *c;
    Ft *ft;                   /* fault tolerance, or NULL without storage */
    bool replaying;           /* running journaled steps after a restart */
    bool quiet_outputs;       /* replay: this step's outputs are already written */
    PipelineOpts o;
    Backend *be;              /* where steps run: this process, or every host */
    Connectors cs;
    int W;                    /* workers in all (every host) */
    bool tty;
    double t0, last_report;
    int64_t rows;             /* rows processed by completed steps */
    int64_t rows0;            /* ... when this run started (a restart resumes the count) */
    PipelineHooks hooks;
    Pending pend;
    int64_t step_rows;
    int *watch;               /* per relation: pipeline_track_changes count */
    Batch **chg;              /* per relation: this step's changes, cached */
    bool *chg_done;
    Buf kb, vb;               /* scratch encodings (resolve.c) */
    Arena *scratch;           /* resolve.c, reset per use */
    int64_t upd_missing;      /* updates of missing keys (logged) */
    /* transaction (controller; mirrored into the shared block) */
    TxnState txn;
    int64_t txn_id;
    bool txn_backfill;
    double txn_t0;
    Cmd *commit_cmd;
    int err_rel;              /* the errors table (PIPELINE_ERRORS_TABLE), or -1 */

    /* ---- shared (mu) ---- */
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* controller: work arrived */
    pthread_cond_t room;      /* pushers: the queue has room */
    pthread_cond_t done;      /* commands, calls, tokens finished */
    PState state;
    bool stop_req;
    InBatch *qhead, *qtail;
    int64_t qrows, qbytes, qlimit;
    int64_t next_token, done_token;
    Cmd *cmds;
    Call *calls;
    int nslots;
    Slot *slots;              /* cs.nin connectors, then one per relation (HTTP) */
    int64_t steps_pub, processed, input_records, input_bytes;
    int64_t pend_rows;
    size_t state_bytes;
    bool inputs_ended;
    TxnState txn_pub;
    int64_t txn_id_pub, txn_records;
    double txn_t0_pub, commit_t0;
    bool txn_backfill_pub;
    int64_t last_commit_id, last_commit_records, last_commit_step;
    int64_t rejected_total;   /* records rejected by runtime errors (reject.c) */
    char last_reject[200];    /* ... the newest one's error */
    Rejects rej;
    RelStats *rels_pub;
    HostStats *hosts_pub;     /* per host (be->ops->host_stats) */
    int nhosts_pub;           /* ... how many (0: one process) */
    OutStats *outs_pub;
};

/* inbox.c */
/* Queue a batch recovered from the ingress log (no logging, no waiting). */
void inbox_requeue(Pipeline *p, InBatch *b);
/* Pop queued batches (at least one when any, up to max_rows in all, every
   one when max_rows < 0) in order; NULL when none. Controller only. */
InBatch *inbox_take(Pipeline *p, int64_t max_rows);
/* Fail every queued batch (stopped pipeline). */
void inbox_clear(Pipeline *p);

/* resolve.c */
void pend_init(Pipeline *p, Pending *pd);
/* Forget everything pending (after its step ran, or an abort): frees the
   batches and the overlays, resets the arena. */
void pend_reset(Pipeline *p, Pending *pd);
void pend_free(Pipeline *p, Pending *pd);
/* Append pieces (a list in order) to relation rel's pending input,
   keeping the update overlay of rel current when it exists. */
void pend_append(Pipeline *p, Pending *pd, int rel, Piece *list, int64_t rows);
/* Resolve b's partial updates against the table's current rows and the
   pending changes before it; updates of missing keys are dropped (counted,
   logged). Controller only, before b's rows are appended. */
void resolve_batch(Pipeline *p, Pending *pd, InBatch *b);
/* Split every relation's pending pieces evenly and in order across the
   workers and hand them to the runtime. */
void pend_set_input(Pipeline *p, Pending *pd);
/* Sampled event times of column col in a piece list (at most max). */
int sample_events(Pipeline *p, int rel, Piece *list, int64_t rows, int col, Arena *a,
                  int64_t **out, int max);

/* reject.c */
/* After a step that rolled back (rt_rolled_back): find the rows of pd
   that fail in the linear operators over their table, take them out of
   pd, report them. Returns the rows taken out (0: none fails alone, the
   error lies elsewhere). Controller only. */
int64_t reject_isolate(Pipeline *p, Pending *pd);
/* When reject_isolate found nothing: reject, in input order, each row
   that makes the step fail after the rows before it (dry steps, see
   reject.c). Returns the rows rejected; 0 when none is to blame (or the
   operators cannot undo). */
int64_t reject_by_steps(Pipeline *p, Pending *pd, Err *err);
/* Under mu: count a rejection against an HTTP batch token. */
void rejects_note_token(Rejects *r, int64_t token, const char *why);

/* ckpt.c: checkpoints (state files + manifest) and restore */
/* Open the storage, restore the newest usable checkpoint into p (runtime,
   connectors, counters) and read the journal and ingress log after it.
   Called by pipeline_new once the runtime exists. */
int ft_open(Pipeline *p, Err *err);
void ft_close(Pipeline *p);
/* Between steps (controller): take a checkpoint when one is due or
   requested and none is being written; collect finished ones. final: the
   pipeline is stopping: write one and wait for it. */
int ft_tick(Pipeline *p, bool final, Err *err);
/* Something for the controller to do (a request is pending). */
bool ft_wants(Pipeline *p);

/* journal.c: the step journal and the HTTP ingress log */
/* Record pd's inputs (before the step runs; durable on return). A failing
   storage makes it wait and retry until it works or stop(p) says the
   pipeline is stopping. */
int ft_journal_step(Pipeline *p, Pending *pd, bool (*stop)(Pipeline *p), Err *err);
/* The step consumed ingress records up to pd->max_seq. */
void ft_step_done(Pipeline *p, Pending *pd);
/* Input read and thrown away (an aborted transaction), before pend_reset. */
int ft_journal_discard(Pipeline *p, Pending *pd, Err *err);
/* Under p->mu, for pipeline_push_take: log b (sets b->seq); *log and *end
   say what to sync (ft_sync_ingress, outside the lock) before the request
   is acknowledged. *log is NULL when nothing was logged. */
struct Log;
/* The record of b for the ingress log (outside any lock; empty when
   nothing is logged), then its logging under p->mu. */
void ft_encode_ingress(Pipeline *p, InBatch *b, Buf *enc);
int ft_log_ingress(Pipeline *p, InBatch *b, Buf *enc, struct Log **log, uint64_t *end,
                   Err *err);
int ft_sync_ingress(struct Log *log, uint64_t end, Err *err);
/* replay.c */
/* Queue the logged HTTP input no journaled step consumed, before anything
   new can be queued (queue order must stay log order). After ft_open. */
int ft_requeue(Pipeline *p, Err *err);
/* Replay the journaled steps after the checkpoint. Start of pipeline_run. */
int ft_replay(Pipeline *p, Err *err);
/* journal.c internals for ckpt.c: start new journal and ingress segments
   (at a checkpoint, and after a restart); read them back at restart. */
/* step: the last step the new journal segment follows (its records are
   of later steps; segments are read in name order). */
int ft_rotate(Pipeline *p, int64_t step, Err *err);
int ft_read_logs(Pipeline *p, int64_t ckpt_step, int64_t ckpt_seq, Err *err);
void ft_prune_logs(Pipeline *p, int64_t oldest_step, int64_t oldest_seq);
void ft_logs_free(Pipeline *p);
/* Decode an ingress log record (every field checked; what names the file
   in messages, may be NULL); NULL with err set when malformed. */
InBatch *ft_ingress_decode(Pipeline *p, const uint8_t *data, size_t n, const char *what,
                           Err *err);

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
int pipe_run_step(Pipeline *p, Pending *pd, Err *err);


/* stats.c */
void stats_init(Pipeline *p);
void stats_free(Pipeline *p);
/* Copy connector counters, relation figures and state size into the
   shared block (controller, between steps). */
void stats_publish(Pipeline *p);
/* A completed step consumed these units: latency now, lag at wall clock
   wall_us (microseconds since epoch). */
void stats_units_done(Pipeline *p, Unit *u, double now, int64_t wall_us);

double pipe_now(void);

#endif

/*
 * io/connector.h - input and output connectors built from the JSON in a
 * relation's WITH ('connectors' = '[...]'), Feldera-compatible:
 *   {"name": ..., "transport": {"name": T, "config": {...}},
 *    "format": {"name": "csv"|"json", "config": {...}}, "max_batch_size": N}
 * Input transports (tables): datagen, file_input {"path": P}, s3_input
 * {"bucket_name": B, "prefix": P, ...} (tr_s3.c), postgres_cdc_input
 * {"uri", "table"} (tr_pg_cdc.c), kafka_input {"bootstrap.servers",
 * "topic", "start_from", ...} (tr_kafka.c), and http_input (declares the
 * table's HTTP ingress endpoint; reads nothing).
 * Output transports (views): file_output {"path": P}, postgres_output
 * {"uri", "table", "key_columns"} (tr_pg_out.c), kafka_output
 * {"bootstrap.servers", "topic"} (tr_kafka_out.c).
 * Input connectors also take "transaction": "backfill" (the whole input
 * runs as one transaction) and "event_time_column": "ts" (a TIMESTAMP
 * column whose lag behind the wall clock is measured).
 * Output connectors also take "delivery" (retries, queue bounds, dead
 * letters: deliver.h).
 * Unknown keys are rejected with a message naming the key and connector.
 *
 * Inputs hand the controller rows for a step as runtime Pieces, split
 * across workers; outputs receive each step's consolidated changes.
 */
#ifndef SL_IO_CONNECTOR_H
#define SL_IO_CONNECTOR_H

#include "../circuit/circuit.h"
#include "../runtime/runtime.h"
#include "../zset/batch.h"

typedef struct InputConn InputConn;
typedef struct OutputConn OutputConn;

typedef struct Connectors {
    InputConn **in;
    int nin, capin;
    OutputConn **out;
    int nout, capout;
} Connectors;

/* Validate every relation's connectors; when open is true also open files
   and build generators. Returns 0 or SL_ECONFIG/SL_EIO with err saying which
   relation and connector (and line:column of its 'connectors' string). */
int connectors_open(const Circuit *c, bool open, Connectors *out, Err *err);
/* The same for host `host` of a scale-out pipeline (an s3_input becomes
   `hosts` parts, each reading every hosts-th object): the k-th file input,
   kafka_input or S3 part
   (in program order) belongs to host k % hosts and is opened there only;
   elsewhere it is a proxy (input_remote): input_next gives nothing, and
   the owner's reports (input_remote_update) keep its position and
   counters. Likewise the k-th output connector belongs to host k % hosts
   (opened there only; elsewhere a proxy: output_remote). */
int connectors_open_part(const Circuit *c, bool open, int host, int hosts, Connectors *out,
                         Err *err);
void connectors_close(Connectors *cs);
/* Parse file input on up to n threads (the pipeline's workers on this
   host: they are idle while it gathers input). Default 1. */
void connectors_set_parse_threads(Connectors *cs, int n);

/*
 * Rows for the next step: at most max, split into nworkers lists appended
 * to lists[0..nworkers) (Piece memory and parsed rows from arena a). Bad
 * records are counted and reported to stderr; the rest go on. Returns the
 * number of rows, or -1 on an I/O error (err set).
 */
int64_t input_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err);
bool input_done(const InputConn *ic);
int input_rel(const InputConn *ic);
const char *input_name(const InputConn *ic);
int64_t input_rows(const InputConn *ic);
int64_t input_errors(const InputConn *ic);
/* Seconds until a rate-limited input may produce again (0 when it can). */
double input_wait(const InputConn *ic);
int64_t input_bytes(const InputConn *ic);
bool input_backfill(const InputConn *ic);
/* The "event_time_column" (a TIMESTAMP column index), or -1. */
int input_event_col(const InputConn *ic);
/* Whether the source stamps its records with times (kafka_input: message
   timestamps); then, after input_next, up to max of the times of the
   records it gave (a uniform sample; microseconds since the epoch) go to
   out, and the count is returned. */
bool input_has_source_times(const InputConn *ic);
int input_source_times(const InputConn *ic, int64_t *out, int max);
#define INPUT_TIMES_MAX 64 /* source times a proxy keeps (input_remote_update) */
/* An http_input declaration: never produces rows (the controller's HTTP
   queue does), input_done is always true. */
bool input_is_http(const InputConn *ic);
/* datagen, file_input, s3_input, http_input */
const char *input_transport(const InputConn *ic);
/* A datagen input's generator (the src of its Pieces), else NULL. */
const void *input_gen(const InputConn *ic);
/* Make pc a piece of ic's generator (set fill and src; scale-out hosts
   rebuild the ranges they receive). */
void input_gen_piece(const InputConn *ic, Piece *pc);

/* ---- resume positions (checkpoints and the journal, issue 6) ----
   An input's position says where its next row comes from: datagen
   (plan, next row index), s3_input (line << 24 | object index, offset of
   the next record in the object), file_input (byte offset of the next record,
   its line number), postgres_cdc_input (end LSN of the last transaction
   wholly read, changes read after it), kafka_input (partition count, sum of
   offsets) with the next offset of every partition in x. The counters ride
   along so statistics continue. Checkpoints store v and x as one array "pos"
   (two numbers when nx is 0, as before x existed); journal records with
   x have their own kinds, so old storage still loads. */
#define INPOS_MAX 256
typedef struct InPos {
    int64_t v[2];
    int64_t rows, errors, bytes;
    int nx;                /* words in x (0 for datagen and files) */
    int64_t x[INPOS_MAX];
} InPos;
void input_pos(const InputConn *ic, InPos *out);
/* Rewrite pos (a position of ic's) the way input_pos writes that point:
   datagen's end of a plan is the start of the next one. Journals and
   checkpoints may hold either; compare positions after this. */
void input_pos_canon(const InputConn *ic, InPos *pos);
/* Continue from pos (an input that has produced nothing yet, or any time
   for a replay). SL_EIO when the file cannot be positioned. */
int input_seek(InputConn *ic, const InPos *pos, Err *err);
/* Go back to where the input started when it was opened, to read it
   again from the beginning (bootstrapping reads a table again for a new
   view on the host that reads it live; then input_seek back). On a proxy
   only recorded: input_take_rewind hands it to whoever tells the owner
   (once), before any input_take_seek. */
int input_rewind(InputConn *ic, Err *err);
bool input_take_rewind(InputConn *ic);
/* The oldest checkpoint a restart may fall back to holds pos (or, at the
   start, the run begins there): a source that keeps data for restarts may
   let go of what comes before it (postgres_cdc_input confirms its slot no
   further). Never called without storage. */
void input_release(InputConn *ic, const InPos *pos);
/* Replaying journaled steps: ignore datagen rates (rows come as fast as
   asked). */
void input_set_replay(InputConn *ic, bool on);
/* While replaying: the position the replayed step ended at, for inputs
   whose rows do not come in one fixed order (kafka_input reads each
   partition exactly up to its offset in to->x). */
void input_replay_to(InputConn *ic, const InPos *to);
/* Bootstrapping (pipeline/boot.h), on a second instance of a live input
   opened for it: read the table's contents as they were at the live
   input's position pos (not from the beginning: postgres_cdc_input takes
   a new snapshot and takes back the changes since pos), then end
   (input_done). false when the transport cannot (only
   postgres_cdc_input can). */
bool input_boot_at(InputConn *ic, const InPos *pos);
/* Scale-out proxies (connectors_open_part). input_seek on a proxy only
   records the position; input_take_seek hands it to whoever tells the
   owner (once). */
int input_owner(const InputConn *ic);
bool input_remote(const InputConn *ic);
/* The owner's report after a read: position and counters, whether the
   input ended, its input_wait, and source times of the rows it read
   (input_source_times; at most INPUT_TIMES_MAX kept). */
void input_remote_update(InputConn *ic, const InPos *pos, bool done, double wait,
                         const int64_t *times, int ntimes);
bool input_take_seek(InputConn *ic, InPos *pos);
/* While a proxy replays (input_set_replay), the position input_replay_to
   gave it, for whoever tells the owner; false when none. */
bool input_replay_target(const InputConn *ic, InPos *to);

/* ---- progress (/stats and /metrics): where an input is in its source's
   own terms and how far the source goes, so consumer lag is visible.
   unit says what pos, high and lag count: "messages" (kafka_input: pos is
   the sum of the partitions' next offsets, high the sum of their high
   watermarks), "wal_bytes" (postgres_cdc_input: pos the LSN resumed from,
   high pg_current_wal_lsn(), polled at most once a second), "bytes"
   (file_input: pos the offset of the next record, high the file's size),
   "objects" (s3_input: pos the current object's index, high the number of
   objects; object and object_offset say where in it). -1: not known. */
#define PROGRESS_PARTS 64
typedef struct InPartProgress {
    char topic[64];
    int32_t partition;
    int64_t offset;         /* next offset to read (-1: from the start) */
    int64_t high;           /* high watermark (-1: not known yet) */
} InPartProgress;
typedef struct InProgress {
    const char *unit;       /* NULL: the input reports no progress */
    int64_t pos, high, lag; /* lag = high - pos where it means records or bytes behind */
    char pos_text[64];      /* the position as the source writes it ("0/16B3748") */
    char high_text[64];
    int nparts;             /* kafka_input: the first PROGRESS_PARTS partitions */
    InPartProgress parts[PROGRESS_PARTS];
    char object[160];       /* s3_input: the current object's key (after the prefix) */
    int64_t object_offset;  /* ... the offset of the next record in it */
    int64_t total_bytes;    /* ... bytes of all objects (-1: not listed yet) */
} InProgress;
/* Fill out (never blocks: what needs a server is asked in the background
   and the newest answer given). A scale-out proxy reports none. */
void input_progress(InputConn *ic, InProgress *out);

/* Output files are opened without truncation; the controller then calls
   output_truncate: to 0 for a fresh run, to the recorded offset when it
   resumes (a half-written step is cut off and written again). */
int output_truncate(OutputConn *oc, int64_t offset, Err *err);
/* Bytes in the output file after the last flushed step (-1: no file). */
int64_t output_offset(OutputConn *oc);
/* Counters, restored on resume. */
void output_set_counts(OutputConn *oc, int64_t records, int64_t bytes);
/* Make written output durable (fdatasync). */
int output_sync(OutputConn *oc, Err *err);

/* Scale-out proxies (connectors_open_part): output_write, output_flush,
   output_sync and output_truncate do nothing on a proxy (its host does
   them); output_offset and the counters are what the owner reported last
   (output_remote_update). */
int output_owner(const OutputConn *oc);
bool output_remote(const OutputConn *oc);
void output_remote_update(OutputConn *oc, int64_t offset, int64_t records, int64_t bytes);

/* Write one step's consolidated changes (tuples: key = row encoding). */
int output_write(OutputConn *oc, int64_t step, const Batch *changes, Err *err);
/* A replayed step not written again (its output is already there): count
   its changes into the counters as output_write would have. Nothing on a
   proxy, nor for a step after what the destination held at
   output_truncate (it waits in the delivery queue, whose write counts it). */
void output_account(OutputConn *oc, int64_t step, const Batch *changes);
int output_rel(const OutputConn *oc);
const char *output_name(const OutputConn *oc);
/* file_output, postgres_output or kafka_output. */
const char *output_transport(const OutputConn *oc);
/* Records (units of weight) and bytes written so far. */
int64_t output_records(const OutputConn *oc);
int64_t output_bytes(const OutputConn *oc);
/* An output that waits for its destination (postgres_output, while the
   server is unreachable) asks stop(arg) between attempts and gives up
   with an error when it says true (the pipeline is stopping). */
void output_set_stop(OutputConn *oc, bool (*stop)(void *arg), void *arg);
/* Flush buffered output (end of step). */
int output_flush(OutputConn *oc, Err *err);

#endif

/*
 * io/io_int.h - connector internals shared by connector.c (the registry:
 * validation, opening, the input_* and output_* calls) and the transports
 * (tr_*.c). A transport is a file that ends with its InOps or OutOps
 * table, plus one line in connector.c's table of transports (name, open
 * function, ops); the connector structs below hold what every input or
 * output shares and the fields of the transports that keep theirs here.
 */
#ifndef SL_IO_IO_INT_H
#define SL_IO_IO_INT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "connector.h"
#include "datagen.h"
#include "deliver.h"
#include "format.h"

typedef enum FmtKind { FMT_CSV, FMT_JSON } FmtKind;
/* json "update_format" of an input */
typedef enum JsonUpd { JU_INSERT_DELETE, JU_RAW, JU_DEBEZIUM } JsonUpd;
typedef struct PgOut PgOut; /* postgres_output (tr_pg_out.c) */
typedef struct PgCdc PgCdc; /* postgres_cdc_input (tr_pg_cdc.c) */
typedef struct KafkaIn KafkaIn;
typedef struct KafkaOut KafkaOut;

/*
 * What an input transport does; each tr_*.c ends with its table. connector.c
 * calls them only on an input this host reads (never on a scale-out proxy)
 * and does what every input shares itself (max_batch_size, the counters of
 * a position, proxies). A NULL entry means the default said beside it.
 */
typedef struct InOps {
    /* Rows for the next step, input_next's contract (NULL: none ever). */
    int64_t (*next)(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists,
                    Err *err);
    /* Seconds until the input may produce again (NULL: 0, it can). */
    double (*wait)(const InputConn *ic);
    /* The resume position's v and x (the counters are input_pos's). */
    void (*pos)(const InputConn *ic, InPos *out);
    /* Write pos's v and x the one way pos writes that point (NULL: every
       point has one way). */
    void (*canon)(const InputConn *ic, InPos *pos);
    /* Continue from pos's v and x; 0 or SL_EIO (NULL: nothing to do). */
    int (*seek)(InputConn *ic, const InPos *pos, Err *err);
    /* The oldest position a restart may need is pos (NULL: keeps nothing). */
    void (*release)(InputConn *ic, const InPos *pos);
    /* Replaying: read exactly up to `to`; replay over (NULL: rows come in
       one fixed order, reading again is enough). */
    void (*replay_to)(InputConn *ic, const InPos *to);
    void (*replay_end)(InputConn *ic);
    /* Bootstrapping, on a second instance of a live input: read the
       source's contents as they were at the live input's position pos,
       then end; false when the transport cannot (NULL: cannot). */
    bool (*boot_at)(InputConn *ic, const InPos *pos);
    /* Times the source stamped on the last read's records (NULL: the
       source stamps none). */
    int (*source_times)(const InputConn *ic, int64_t *out, int max);
    /* Where the input is and how far its source goes (input_progress's
       contract; out comes zeroed, pos/high/lag -1; NULL: no progress). */
    void (*progress)(InputConn *ic, InProgress *out);
    /* Free what configuring and opening made (also after they failed
       half-way); connector.c frees the shared fields. */
    void (*close)(InputConn *ic);
} InOps;

/* What an output transport does (the output_* functions of connector.h);
   each tr_*.c ends with its table. */
typedef struct OutOps {
    int (*write)(OutputConn *oc, int64_t step, const Batch *b, Err *err);
    int (*flush)(OutputConn *oc, Err *err);                 /* NULL: nothing buffered */
    int (*sync)(OutputConn *oc, Err *err);                  /* NULL: nothing to sync */
    int (*truncate)(OutputConn *oc, int64_t off, Err *err); /* NULL: nothing to cut */
    int64_t (*offset)(const OutputConn *oc);                /* NULL: -1 */
    void (*close)(OutputConn *oc);                          /* NULL: nothing to free */
    /* The last step the destination has committed (deliver.c: a failed
       step may wait in the delivery queue). NULL: the output cannot
       queue; its failures stop the pipeline (file_output). */
    int64_t (*committed)(const OutputConn *oc);
    /* Count step's changes b into records and bytes as write would,
       without writing: a replayed step whose output the destination
       already holds (output_account). Called on the step thread while a
       drain thread may write: touches no buffer write uses. NULL: such
       steps are not counted. */
    void (*account)(OutputConn *oc, int64_t step, const Batch *b);
} OutOps;

/* What opening one connector is given (connector.c fills it). */
typedef struct ConnCtx {
    const Circuit *c;
    int rel;            /* r = &c->rels[rel] */
    const Relation *r;
    const cJSON *cj;    /* the connector's object */
    const cJSON *cfg;   /* its transport "config", or NULL */
    const char *where;  /* "table t, connector 0 (file_input)" */
    bool open;          /* open files and connections; false: validate only */
    bool txn;           /* "transaction": "backfill" was given */
    int host, hosts;    /* scale-out: this host of how many (0 of 1) */
    int *nfile;         /* file-like inputs so far (round-robin placement) */
    int *nout;          /* output connectors so far (round-robin placement) */
    Connectors *cs;     /* for transports that make more inputs (s3 parts) */
} ConnCtx;

/* A configuration error at the connector's 'connectors' string: "where: msg". */
int io_conf_err(const ConnCtx *cx, Err *err, const char *msg);
/* The connector's "format" into fmt (csv when absent), its csv "headers"
   into *csv_header and json "update_format" into *upd (debezium allowed
   only when upd is given); NULL pointers are not wanted. */
int io_parse_format(const ConnCtx *cx, FmtKind *fmt, bool *csv_header, JsonUpd *upd, Err *err);

extern const InOps tr_datagen_in_ops, tr_file_in_ops, tr_s3_in_ops, tr_pg_cdc_in_ops,
    tr_kafka_in_ops;
extern const OutOps tr_file_out_ops, tr_pg_out_ops, tr_kafka_out_ops;

struct InputConn {
    const InOps *ops;
    const char *transport; /* its name in the JSON */
    int rel;
    char name[192];     /* "table t, connector 0 (datagen)" */
    RowSchema schema;
    int64_t max_batch;  /* rows per step from this connector, 0 = no limit */
    bool done;
    int64_t rows, errors;
    int64_t bytes;      /* input bytes read (file) */
    bool backfill;      /* "transaction": "backfill" */
    int event_col;      /* "event_time_column" (a TIMESTAMP column), or -1 */
    /* datagen */
    Datagen *gen;
    int plan;           /* current plan */
    int64_t next;       /* next row index in the plan */
    double plan_start;  /* monotonic seconds when the plan started, <0 unset */
    bool replay;        /* replaying the journal: rates do not apply */
    /* file */
    FmtKind fmt;
    JsonUpd json_upd;
    bool csv_header;    /* skip the first record */
    FILE *f;
    char *path;
    char *rbuf;         /* read buffer */
    size_t rlen, rcap;  /* bytes held, capacity */
    size_t rpos;        /* start of the unparsed part */
    bool eof;
    int64_t line;       /* line number of the next record */
    int par;            /* parse threads (connectors_set_parse_threads), 0 = 1 */
    Err rowerr;
    /* kafka (tr_kafka.c) */
    KafkaIn *kin;
    /* scale-out: the host that reads this input; on the others it is a
       proxy whose position and counters the owner reports */
    int owner;
    bool remote;
    InPos remote_pos;
    bool seek_pending;
    bool rewind_pending;        /* input_rewind on a proxy, for its owner */
    InPos start;                /* the position right after opening (input_rewind) */
    double remote_wait;         /* the owner's input_wait at its last read */
    int64_t remote_ts[INPUT_TIMES_MAX]; /* the source times of its last read */
    int remote_nts;
    bool replay_target;         /* input_replay_to on a proxy: replay_pos */
    InPos replay_pos;
    /* s3_input (tr_s3.c); reads through the file fields above */
    struct S3In *s3;
    PgCdc *cdc;         /* postgres_cdc_input, else NULL */
};

/* How an output delivers (the connector's "delivery" object, deliver.c). */
typedef struct DeliverCfg {
    int attempts;             /* tries in place before a failure queues (>= 1) */
    int backoff_ms;           /* first wait between them, doubling ... */
    int max_backoff_ms;       /* ... up to this */
    int64_t max_queued_records; /* backpressure bounds of the queue */
    int64_t max_queued_bytes;
    bool stop_on_record_error; /* "on_record_error": "stop" (else dead letters) */
} DeliverCfg;

/* Class of an output's last failed write (OutputConn.fail). */
enum { OUT_FAIL_FATAL = 0, OUT_FAIL_TRANSIENT = 1 };

struct OutputConn {
    const OutOps *ops;
    const char *transport;
    int rel;
    char name[192];
    RowSchema schema;
    FmtKind fmt;
    FILE *f;
    char *path;
    Buf line;
    Arena *scratch;
    int64_t records, bytes; /* written so far */
    PgOut *pg;              /* postgres_output, else NULL */
    bool (*stop)(void *arg); /* output_set_stop */
    void *stop_arg;
    KafkaOut *kout;         /* kafka_output (tr_kafka_out.c), else NULL */
    DeliverCfg dcfg;        /* deliver_config */
    int fail;               /* OUT_FAIL_* of the last failed write */
    bool draining;          /* a drain thread writes: one try, no stop check (deliver.c) */
    /* a record the destination refuses for good (the transport found it
       alone): to the dead letters, before the step commits (deliver.c) */
    void (*dead)(void *arg, int64_t step, const char *rec, const char *why);
    void *dead_arg;
    void *deliv;            /* deliver.c's state of it while a Delivery is open (a proxy's
                               figures arrive there: deliver_report_take) */
    /* scale-out: the host that writes this output; on the others it is a
       proxy whose offset and counters the owner reports */
    int owner;
    bool remote;
    int64_t remote_off;
    int64_t resumed;        /* committed() when output_truncate positioned it */
    /* delivery counters a checkpoint restored (deliver_restore_counts), for
       deliver_open (or, on a proxy, for its host) */
    bool dl_saved;
    int64_t dl_saved_step;
    DeliverCounts dl_saved_c;
};

double io_now(void);
/* PieceFill for datagen pieces. */
void datagen_piece_fill(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                        Arena *a);
/* file_input's reader, shared by s3_input (which fills the buffer). */
int64_t tr_file_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err);
/* s3_input (tr_s3.c). config: 0, or -1 with why (open: also make the
   client, which needs the endpoint and credentials); fill: 0 (bytes added, or
   ic->eof at the object's end), 1 (nothing yet), -1 (err set). */
int tr_s3_config(InputConn *ic, const cJSON *cfg, bool open, char *why, size_t n);
int tr_s3_fill(InputConn *ic, Err *err);
/* Read only the objects i (in key order) with i % nparts == part. */
void tr_s3_set_part(InputConn *ic, int part, int nparts);
bool tr_s3_next_object(InputConn *ic);
/* postgres_output (tr_pg_out.c): config (sets oc->pg; validation only),
   then connect and create/check the tables. */
int tr_pg_out_config(OutputConn *oc, const cJSON *cfg, const char *where, Err *err);
int tr_pg_out_open(OutputConn *oc, Err *err);
/* postgres_cdc_input (tr_pg_cdc.c): config (sets ic->cdc), open (checks
   the table, makes the publication; slot, snapshot and stream come at the
   first read). */
int tr_pg_cdc_config(InputConn *ic, const cJSON *cfg, const char *where, Err *err);
int tr_pg_cdc_open(InputConn *ic, Err *err);
/* kafka_input (tr_kafka.c): validate cfg and, when open, connect, read
   the topics' partitions and resolve "start_from". */
int tr_kafka_open(InputConn *ic, const cJSON *cfg, bool open, Err *err);
/* kafka_output (tr_kafka_out.c): validate cfg and, when open, start the
   transactional producer. */
int tr_kafka_out_open(OutputConn *oc, const cJSON *cfg, bool open, Err *err);
/* Append piece p to the list *l (at the end, keeping order). */
void piece_append(Piece **l, Piece *p);

#endif

/*
 * io/io_int.h - connector internals shared by connector.c (registry and
 * validation) and the transports tr_datagen.c, tr_file.c and tr_pg_out.c.
 */
#ifndef SL_IO_IO_INT_H
#define SL_IO_IO_INT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "connector.h"
#include "datagen.h"
#include "format.h"

typedef enum InKind { IN_DATAGEN, IN_FILE, IN_HTTP, IN_S3, IN_PGCDC, IN_KAFKA } InKind;
typedef enum FmtKind { FMT_CSV, FMT_JSON } FmtKind;
/* json "update_format" of an input */
typedef enum JsonUpd { JU_INSERT_DELETE, JU_RAW, JU_DEBEZIUM } JsonUpd;
typedef struct PgOut PgOut; /* postgres_output (tr_pg_out.c) */
typedef struct PgCdc PgCdc; /* postgres_cdc_input (tr_pg_cdc.c) */
typedef struct KafkaIn KafkaIn;
typedef struct KafkaOut KafkaOut;

struct InputConn {
    InKind kind;
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
};

double io_now(void);
/* PieceFill for datagen pieces. */
void datagen_piece_fill(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                        Arena *a);
int64_t tr_datagen_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists);
int64_t tr_file_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err);
/* s3_input (tr_s3.c). config: 0, or -1 with why (open: also make the
   client, which needs the endpoint and credentials); fill: 0 (bytes added, or
   ic->eof at the object's end), 1 (nothing yet), -1 (err set). */
struct cJSON;
int tr_s3_config(InputConn *ic, const struct cJSON *cfg, bool open, char *why, size_t n);
int tr_s3_fill(InputConn *ic, Err *err);
/* Read only the objects i (in key order) with i % nparts == part. */
void tr_s3_set_part(InputConn *ic, int part, int nparts);
bool tr_s3_next_object(InputConn *ic);
void tr_s3_pos(const InputConn *ic, InPos *out);
int tr_s3_seek(InputConn *ic, const InPos *pos, Err *err);
void tr_s3_close(InputConn *ic);
/* postgres_output (tr_pg_out.c): config (sets oc->pg; validation only),
   connect and create/check the tables, and the output_* operations. */
int tr_pg_out_config(OutputConn *oc, const cJSON *cfg, const char *where, Err *err);
int tr_pg_out_open(OutputConn *oc, Err *err);
void tr_pg_out_free(PgOut *po);
int tr_pg_out_truncate(OutputConn *oc, int64_t off, Err *err);
int64_t tr_pg_out_offset(const OutputConn *oc);
int tr_pg_out_write(OutputConn *oc, int64_t step, const Batch *b, Err *err);
/* postgres_cdc_input (tr_pg_cdc.c): config (sets ic->cdc), open (slot,
   snapshot, stream: at the first read), rows for a step, its position
   (input_pos/input_seek/input_release), and whether nothing is queued. */
int tr_pg_cdc_config(InputConn *ic, const cJSON *cfg, const char *where, Err *err);
int tr_pg_cdc_open(InputConn *ic, Err *err);
void tr_pg_cdc_free(PgCdc *pc);
int64_t tr_pg_cdc_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists,
                       Err *err);
void tr_pg_cdc_pos(const InputConn *ic, InPos *out);
int tr_pg_cdc_seek(InputConn *ic, const InPos *pos, Err *err);
void tr_pg_cdc_release(InputConn *ic, const InPos *pos);
bool tr_pg_cdc_idle(const InputConn *ic);
/* kafka_input (tr_kafka.c): validate cfg and, when open, connect, read
   the topics' partitions and resolve "start_from". */
int tr_kafka_open(InputConn *ic, const cJSON *cfg, bool open, Err *err);
void tr_kafka_close(InputConn *ic);
int64_t tr_kafka_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err);
double tr_kafka_wait(const InputConn *ic);
void tr_kafka_pos(const InputConn *ic, InPos *out);
int tr_kafka_seek(InputConn *ic, const InPos *pos, Err *err);
int tr_kafka_times(const InputConn *ic, int64_t *out, int max);
void tr_kafka_replay_to(InputConn *ic, const InPos *to);
void tr_kafka_replay_end(InputConn *ic);
/* kafka_output (tr_kafka_out.c) */
int tr_kafka_out_open(OutputConn *oc, const cJSON *cfg, bool open, Err *err);
void tr_kafka_out_close(OutputConn *oc);
int tr_kafka_out_truncate(OutputConn *oc, int64_t offset, Err *err);
int64_t tr_kafka_out_offset(const OutputConn *oc);
int tr_kafka_out_write(OutputConn *oc, int64_t step, const Batch *b, Err *err);
int tr_kafka_out_flush(OutputConn *oc, Err *err);
/* Append piece p to the list *l (at the end, keeping order). */
void piece_append(Piece **l, Piece *p);

#endif

/*
 * io/io_int.h - connector internals shared by connector.c (registry and
 * validation) and the transports tr_datagen.c and tr_file.c.
 */
#ifndef SL_IO_IO_INT_H
#define SL_IO_IO_INT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "connector.h"
#include "datagen.h"
#include "format.h"

typedef enum InKind { IN_DATAGEN, IN_FILE, IN_HTTP, IN_KAFKA } InKind;
typedef enum FmtKind { FMT_CSV, FMT_JSON } FmtKind;
/* json "update_format" of an input */
typedef enum JsonUpd { JU_INSERT_DELETE, JU_RAW, JU_DEBEZIUM } JsonUpd;
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
    Err rowerr;
    /* kafka (tr_kafka.c) */
    KafkaIn *kin;
    /* scale-out: the host that reads this input; on the others it is a
       proxy whose position and counters the owner reports */
    int owner;
    bool remote;
    InPos remote_pos;
    bool seek_pending;
};

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
    KafkaOut *kout;         /* kafka_output (tr_kafka_out.c), else NULL */
};

double io_now(void);
/* PieceFill for datagen pieces. */
void datagen_piece_fill(const void *src, int plan, int64_t start, int64_t count, Chunk *out,
                        Arena *a);
int64_t tr_datagen_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists);
int64_t tr_file_next(InputConn *ic, int64_t max, Arena *a, int nworkers, Piece **lists, Err *err);
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

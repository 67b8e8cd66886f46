/*
 * pipeline/inbatch.h - one HTTP input batch as the pipeline's files see
 * it (inbatch.c; the server fills it through pipeline.h's inbatch_*):
 * rows in chunk pieces of the batch's own arena, in order, and the marks
 * of partial updates.
 */
#ifndef SL_PIPELINE_INBATCH_H
#define SL_PIPELINE_INBATCH_H

#include "../io/connector.h"
#include "pipeline.h"

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

/* Rows in b (its chunks' rows). */
int64_t inbatch_count(InBatch *b);

#endif

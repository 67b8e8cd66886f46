/*
 * pipeline/pending.h - the input of the next step, or of the open
 * transaction (resolve.c): per relation, pieces in the order they apply;
 * the units of input that entered together (for latency and lag); the
 * HTTP batches whose arenas hold them; per connector the rows taken and
 * their hash (what the journal records).
 */
#ifndef SL_PIPELINE_PENDING_H
#define SL_PIPELINE_PENDING_H

#include "../io/connector.h"
#include "../zset/hmap.h"
#include "inbatch.h"

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

#endif

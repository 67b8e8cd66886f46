/*
 * pipeline/inbox.h - the bounded queue that carries HTTP input batches
 * from the server's threads to the controller (inbox.c; pushers use
 * pipeline.h's pipeline_push_take). Its state is under the pipeline's mu.
 */
#ifndef SL_PIPELINE_INBOX_H
#define SL_PIPELINE_INBOX_H

#include "inbatch.h"

typedef struct Inbox {
    InBatch *head, *tail;     /* in arrival order */
    int64_t rows, bytes;      /* queued */
    int64_t limit;            /* the bound in records (PipelineOpts.queue_records) */
    int64_t next_token;       /* the last token given to a batch */
    int64_t done_token;       /* batches up to this token are processed */
} Inbox;

/* Queue a batch recovered from the ingress log (no logging, no waiting). */
void inbox_requeue(Pipeline *p, InBatch *b);
/* Pop queued batches (at least one when any, up to max_rows in all, every
   one when max_rows < 0) in order; NULL when none. Controller only. */
InBatch *inbox_take(Pipeline *p, int64_t max_rows);
/* Fail every queued batch (stopped pipeline). */
void inbox_clear(Pipeline *p);

#endif

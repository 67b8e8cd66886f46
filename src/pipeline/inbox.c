/*
 * pipeline/inbox.c - HTTP input batches and the bounded queue that carries
 * them from the server's threads to the controller.
 *
 * In: an InBatch filled by a format parser on an HTTP thread (rows in
 * chunks of its own arena, partial-update marks), handed over whole with
 * pipeline_push_take. The queue holds batches in arrival order; its bound
 * is in records (PipelineOpts.queue_records): a batch that does not fit is
 * refused whole (the client retries) unless the queue is empty, so one
 * request larger than the bound still gets in. Out: the controller pops
 * batches in order (inbox_take) and, once the step that consumed them has
 * run, publishes their tokens as done (pipeline_token_done). The batch
 * object itself is inbatch.c's.
 */
#include <errno.h>
#include <time.h>

#include "../base/mem.h"
#include <stdio.h>

#include "pipeline_int.h"

static void deadline_in(struct timespec *ts, double secs)
{
    clock_gettime(CLOCK_REALTIME, ts);
    double s = (double)ts->tv_nsec * 1e-9 + secs;
    ts->tv_sec += (time_t)s;
    ts->tv_nsec = (long)((s - (double)(time_t)s) * 1e9);
}

static void account(Pipeline *p, int rel, int64_t rows, int64_t bytes, int64_t bad)
{
    Slot *s = &p->fig.slots[p->cs.nin + rel];
    s->records += rows;
    s->bytes += bytes;
    s->errors += bad;
    p->fig.input_records += rows;
    p->fig.input_bytes += bytes;
}

/* Append b (rows rows) to the queue with the next token (under mu). */
static void enqueue(Pipeline *p, InBatch *b, int64_t rows)
{
    b->rows = rows;
    b->arrival = pipe_now();
    b->token = ++p->q.next_token;
    b->next = NULL;
    if (p->q.tail)
        p->q.tail->next = b;
    else
        p->q.head = b;
    p->q.tail = b;
    p->q.rows += rows;
    p->q.bytes += b->bytes;
    p->fig.slots[p->cs.nin + b->rel].queued += rows;
}

int pipeline_push_take(Pipeline *p, InBatch *b, double wait_secs, int64_t *token)
{
    int64_t rows = inbatch_count(b);
    struct timespec dl;
    bool timed = false;
    *token = 0;
    /* with storage: the log record is built before taking the lock */
    Buf enc = BUF_INIT;
    if (p->ft && rows)
        ft_encode_ingress(p->ft, b, &enc);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->state == PS_STOPPING || p->state == PS_STOPPED || p->stop_req) {
            pthread_mutex_unlock(&p->mu);
            inbatch_free(b);
            buf_free(&enc);
            return PIPE_STOPPING;
        }
        if (p->boot == BOOT_AWAITING || p->boot == BOOT_APPROVED) {
            /* no input before the bootstrap (it would be logged for the
               old program's checkpoint): retry once approved */
            pthread_mutex_unlock(&p->mu);
            inbatch_free(b);
            buf_free(&enc);
            return PIPE_FULL;
        }
        if (p->q.rows == 0 || p->q.rows + rows <= p->q.limit)
            break;
        if (p->state == PS_PAUSED || wait_secs <= 0) {
            pthread_mutex_unlock(&p->mu);
            inbatch_free(b);
            buf_free(&enc);
            return PIPE_FULL;
        }
        if (!timed) {
            deadline_in(&dl, wait_secs);
            timed = true;
        }
        if (pthread_cond_timedwait(&p->room, &p->mu, &dl) == ETIMEDOUT) {
            wait_secs = 0; /* one more look, then refuse */
        }
    }
    if (rows == 0) { /* nothing to process: done at once */
        account(p, b->rel, rows, b->bytes, b->bad);
        pthread_mutex_unlock(&p->mu);
        inbatch_free(b);
        return 0;
    }
    /* with storage, logged (in queue order) before it is queued */
    struct Log *log = NULL;
    uint64_t end = 0;
    Err lerr = {0};
    int lrc = enc.n ? ft_log_ingress(p->ft, b, &enc, &log, &end, &lerr) : 0;
    buf_free(&enc);
    if (lrc) {
        pthread_mutex_unlock(&p->mu);
        fprintf(stderr, "sluice: HTTP input refused: %s\n", lerr.msg);
        inbatch_free(b);
        return PIPE_IOERR;
    }
    account(p, b->rel, rows, b->bytes, b->bad);
    enqueue(p, b, rows);
    *token = b->token;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    /* acknowledged only once durable (group commit with concurrent pushes) */
    if (log && ft_sync_ingress(log, end, &lerr)) {
        fprintf(stderr, "sluice: HTTP input not made durable: %s\n", lerr.msg);
        return PIPE_IOERR;
    }
    return 0;
}

void inbox_requeue(Pipeline *p, InBatch *b)
{
    int64_t rows = inbatch_count(b);
    pthread_mutex_lock(&p->mu);
    account(p, b->rel, rows, 0, 0);
    enqueue(p, b, rows); /* (a batch from the log counts no bytes) */
    pthread_mutex_unlock(&p->mu);
}

void pipeline_note_rejected(Pipeline *p, int rel, int64_t bytes, int64_t bad)
{
    pthread_mutex_lock(&p->mu);
    account(p, rel, 0, bytes, bad);
    pthread_mutex_unlock(&p->mu);
}

bool pipeline_token_done(Pipeline *p, int64_t token)
{
    pthread_mutex_lock(&p->mu);
    bool d = token <= p->q.done_token || p->state == PS_STOPPED;
    pthread_mutex_unlock(&p->mu);
    return d;
}

void pipeline_token_wait(Pipeline *p, int64_t token)
{
    pthread_mutex_lock(&p->mu);
    while (token > p->q.done_token && p->state != PS_STOPPED)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

InBatch *inbox_take(Pipeline *p, int64_t max_rows)
{
    InBatch *first = NULL, **tail = &first;
    int64_t taken = 0;
    pthread_mutex_lock(&p->mu);
    while (p->q.head && (max_rows < 0 || taken == 0 || taken + p->q.head->rows <= max_rows)) {
        InBatch *b = p->q.head;
        p->q.head = b->next;
        if (!p->q.head)
            p->q.tail = NULL;
        b->next = NULL;
        *tail = b;
        tail = &b->next;
        taken += b->rows;
        p->q.rows -= b->rows;
        p->q.bytes -= b->bytes;
        p->fig.slots[p->cs.nin + b->rel].queued -= b->rows;
    }
    if (first)
        pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
    return first;
}

void inbox_clear(Pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    InBatch *b = p->q.head;
    p->q.head = p->q.tail = NULL;
    p->q.rows = p->q.bytes = 0;
    pthread_mutex_unlock(&p->mu);
    while (b) {
        InBatch *n = b->next;
        inbatch_free(b);
        b = n;
    }
}

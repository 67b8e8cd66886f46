/*
 * io/deliver_int.h - what deliver.c (the queue, the drain threads, the
 * write path) and deliver_figs.c (the figures: /stats, other hosts'
 * reports, dead letters listed, counters across restarts) share: the
 * Delivery, one DOut per output connector, the queued steps. Every field
 * of a DOut that changes after deliver_open is under its Delivery's mu.
 */
#ifndef SL_IO_DELIVER_INT_H
#define SL_IO_DELIVER_INT_H

#include <pthread.h>
#include <sys/types.h>

#include "deliver.h"
#include "io_int.h"

#define LAG_SAMPLES 4096
#define DEAD_MEM_MAX (8u << 20) /* bytes of dead letters kept without storage */

typedef struct QEnt {
    int64_t step;
    Batch *b;           /* our own copy */
    int64_t recs;       /* sum of |w| */
    size_t bytes;
    double src_wall;    /* wall seconds the step's input arrived */
    struct QEnt *next;
} QEnt;

typedef struct DOut {
    Delivery *d;
    OutputConn *oc;
    int idx;
    pthread_t th;
    bool th_started;
    QEnt *head, *tail;   /* under d->mu; only the drain thread pops */
    int64_t qrecs, qsteps;
    size_t qbytes;
    int64_t qlast;       /* step of the newest entry ever queued (-1) */
    int qfd;             /* the durable queue, or -1 */
    int dlfd;            /* the dead letters, or -1 (then dlmem) */
    Buf dlmem;
    int64_t dl_step;     /* step whose dead letters start at dl_start */
    off_t dl_start;
    size_t dlmem_start;
    int64_t cur_dead;    /* dead letters of the write in progress */
    int64_t inflight;    /* records of a direct write in progress (pending too) */
    /* figures, under d->mu */
    int64_t changes, sent, acked, retried, dead;
    int64_t counted;     /* the last step whose records acked + dead count in full */
    int64_t done0;       /* the destination's last step when the Delivery opened */
    bool failing;
    char error[256];
    bool fatal;          /* a drain thread met a fatal error */
    Err fatal_err;
    float lag[LAG_SAMPLES];
    int64_t lagw[LAG_SAMPLES];
    int nlag, lagpos;
    /* scale-out */
    bool remote;         /* another host delivers it: rs is its last report */
    DeliverStats rs;
    char host[96];       /* its host, for messages ("1 (name)") */
    size_t dl_sent;      /* dead letters in memory: bytes the coordinator holds */
    size_t dl_low;       /* the shortest dlmem since the last report (a cut) */
} DOut;

struct Delivery {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* queue changes, quit */
    DOut *o;
    int n;
    bool quit;
    bool exact;
    bool durable;
    bool (*stop)(void *arg);
    void *stop_arg;
};

/* s as a JSON string into b. */
void deliver__json_str(Buf *b, const char *s);
/* The last step the destination committed (-1: it cannot say). */
int64_t deliver__committed(OutputConn *oc);
/* Records (units of weight) of b. */
int64_t deliver__recs(const Batch *b);
/* Dead letters of o whose step is in (lo, hi] (under mu). */
int64_t deliver__dead_between(DOut *o, int64_t lo, int64_t hi);
/* At deliver_open, after o's queue and dead letters loaded: its counters
   go on from those a checkpoint restored (deliver_restore_counts), with
   what changed between the checkpoint and the restart. */
void deliver__restore(DOut *o);

#endif

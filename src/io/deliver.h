/*
 * io/deliver.h - delivery of each step's changes to the output connectors
 * without losing any (deliver.c): a bounded retry in place, then a queue
 * (durable in the storage directory) drained in order by a thread per
 * output while the pipeline goes on stepping, dead letters for records the
 * destination refuses, backpressure past a bound, and the figures /stats
 * shows. The controller hands it every step's changes (deliver_step).
 */
#ifndef SL_IO_DELIVER_H
#define SL_IO_DELIVER_H

#include <cjson/cJSON.h>

#include "../base/buf.h"
#include "connector.h"

typedef struct Delivery Delivery;

typedef struct DeliverOpts {
    const char *dir;         /* a local storage directory, or NULL: queues in memory */
    bool exact_steps;        /* exactly_once: a replayed step number has the same changes */
    bool (*stop)(void *arg); /* the pipeline is stopping */
    void *stop_arg;
} DeliverOpts;

/* After the outputs are positioned (output_truncate): load what the
   storage directory still holds queued for them (steps past what each
   destination committed) and start a drain thread per output. */
Delivery *deliver_open(Connectors *cs, const DeliverOpts *o, Err *err);
/* This step's changes: changes[j] for output j (NULL: none). src_wall:
   wall-clock seconds the step's input arrived (for the lag). A transient
   failure past the retries queues them; 0 or the error that must stop
   the pipeline (a fatal one, here or met by a drain thread). */
int deliver_step(Delivery *d, int64_t step, const Batch *const *changes, double src_wall,
                 Err *err);
/* The fatal error a drain thread met (the pipeline must stop), or 0. */
int deliver_check(Delivery *d, Err *err);
/* An output whose queue is past its bound: true and its name. */
bool deliver_backpressure(Delivery *d, char *name, size_t n);
/* Changes still queued over every output. */
int64_t deliver_pending(Delivery *d);
/* Wait until every queue is empty or giveup(arg) says stop (checked
   every 50 ms). 0, or SL_EIO naming what is left (the queues stay on
   disk with storage: a restart delivers them; without, they are lost). */
int deliver_finish(Delivery *d, bool (*giveup)(void *arg), void *arg, Err *err);
void deliver_close(Delivery *d);

typedef struct DeliverStats {
    int64_t changes;       /* records (units of weight) handed to the output this run */
    int64_t sent;          /* records sent to the destination, every attempt */
    int64_t acked;         /* records the destination acknowledged */
    int64_t retried;       /* records of attempts that failed transiently */
    int64_t dead;          /* records dead-lettered */
    int64_t pending;       /* records queued (acked + dead + pending == changes) */
    int64_t pending_bytes;
    int64_t queued_steps;
    bool failing;          /* the destination is failing now */
    bool backpressure;     /* the queue is past its bound */
    char error[256];       /* the last transient error while failing */
    int64_t counted;       /* the last step whose records acked + dead count in full */
    int64_t lag_n;         /* records with a lag sample */
    double lag_p50, lag_p95, lag_p99; /* seconds from input arrival to acknowledgement */
} DeliverStats;
void deliver_stats(Delivery *d, int out, DeliverStats *s);
/* The dead letters of the outputs of view (or connector) name as a JSON
   document into out; false when no output has that name. */
bool deliver_dead_letters(Delivery *d, const char *name, Buf *out);

/* The counters a checkpoint keeps (docs/connectors.md "Delivery"). */
typedef struct DeliverCounts {
    int64_t changes, sent, acked, retried, dead;
    int64_t counted;       /* the last step whose records acked + dead count in full */
} DeliverCounts;
/* Output oc's counters now (a proxy's: those its host reported last);
   false while no Delivery is open. */
bool deliver_counts(OutputConn *oc, DeliverCounts *c);
/* Their names in a checkpoint manifest, in the order of DeliverCounts. */
extern const char *const deliver_count_names[6];
/* A checkpoint at step restored: oc's counters go on from c (before
   deliver_open, which takes them with what changed since the checkpoint:
   the queue, the dead letters, the destination's last step).
   deliver_saved_counts gives them back (a proxy's, for its host). */
void deliver_restore_counts(OutputConn *oc, int64_t step, const DeliverCounts *c);
bool deliver_saved_counts(OutputConn *oc, int64_t *step, DeliverCounts *c);
/* A replayed step whose outputs are not written again (quiet): count its
   changes[j] as delivered where the destination had them when the
   Delivery opened (the others were queued: counted when loaded). */
void deliver_account(Delivery *d, int64_t step, const Batch *const *changes);

/* Scale-out. Each host delivers the outputs it writes; the coordinator's
   Delivery keeps a proxy of every other one, whose figures (the stats
   above, a fatal error, dead letters kept in memory) the owner sends with
   its replies. deliver_report_put appends this host's report (a length,
   then the figures of every output it writes; d NULL: none) to b;
   deliver_report_take applies one, from host (a name for messages), to
   the proxies of cs (ignored before a Delivery is open): 0, or -1 when
   malformed. A proxy counts in deliver_backpressure, deliver_pending,
   deliver_check, deliver_finish (giveup is called without the lock held,
   so that it may ask the hosts: their reports land here), deliver_stats
   and deliver_dead_letters (with storage the owner's file, read here:
   the storage is shared). */
void deliver_report_put(Delivery *d, Buf *b);
int deliver_report_take(Connectors *cs, const char *host, const uint8_t *p, size_t len);

/* The connector's "delivery" object (NULL: the defaults) into oc. */
int deliver_config(OutputConn *oc, const cJSON *cfg, const char *where, Err *err);

#endif

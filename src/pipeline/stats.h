/*
 * pipeline/stats.h - the figures /stats and /metrics show (stats.c): the
 * latency and lag histograms, one statistics slot per input (a connector,
 * or a table's HTTP ingress), publishing them between steps; and the
 * controller's clock.
 */
#ifndef SL_PIPELINE_STATS_H
#define SL_PIPELINE_STATS_H

#include "pending.h"
#include "pipeline.h"

/* The figures the controller publishes between steps (under the
   pipeline's mu), which pipeline_stats copies. */
typedef struct Figures {
    int nslots;
    struct Slot *slots;       /* cs.nin connectors, then one per relation (HTTP) */
    int64_t steps, processed, input_records, input_bytes;
    int64_t pend_rows;
    size_t state_bytes;
    bool inputs_ended;
    RelStats *rels;
    HostStats *hosts;         /* per host (be->ops->host_stats) */
    int nhosts;               /* ... how many (0: one process) */
    OutStats *outs;
    StepTiming last_step;     /* the newest step's timing */
    bool published;           /* stats_publish ran once (the start's counts are known) */
} Figures;

/* Monotonic seconds (the controller's clock for latencies and timings). */
double pipe_now(void);
/* The process's CPU seconds (every thread, user and system). */
double pipe_cpu(void);

/* A log-bucketed histogram of durations in microseconds (8 buckets per
   power of two: values within 12.5%), weighted by records. */
#define HIST_BUCKETS (8 * 52)
/* Slot.event_col of an input whose lag comes from the source's record
   timestamps (input_source_times), not from a column. */
#define EVENT_SOURCE (-2)
typedef struct Hist {
    int64_t n;
    int64_t b[HIST_BUCKETS];
} Hist;
void hist_add(Hist *h, double usecs, int64_t weight);
void hist_summary(const Hist *h, LatStats *out);

/* Statistics of one input: a connector (conn >= 0) or a table's HTTP
   ingress (conn == -1). All fields under mu. */
typedef struct Slot {
    char name[192];
    const char *transport;
    int rel, conn;
    int event_col;            /* TIMESTAMP column for lag, -1, or EVENT_SOURCE */
    bool backfill;
    int64_t records, bytes, errors;
    int64_t queued;           /* HTTP: records in the queue */
    int64_t rejected;         /* records rejected by a runtime error (reject.c) */
    int64_t pending;          /* records in the pending step or transaction */
    int64_t processed;        /* records of completed steps (with those read before a resume) */
    InProgress prog;          /* the connector's progress (input_progress) */
    bool eoi;
    Hist lat, lag;
} Slot;

void stats_init(Pipeline *p);
void stats_free(Pipeline *p);
/* Copy connector counters, relation figures and state size into the
   shared block (controller, between steps). */
void stats_publish(Pipeline *p);
/* The same, in the same publication with the step that just consumed
   done (before done is reset): its units' records processed, latency
   (now) and lag (at wall clock wall_us, microseconds since epoch); done
   no longer counts as pending. */
void stats_publish_step(Pipeline *p, const Pending *done, double now, int64_t wall_us);

#endif

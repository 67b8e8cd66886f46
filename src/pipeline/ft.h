/*
 * pipeline/ft.h - fault tolerance as the controller sees it: checkpoints
 * (ckpt.c), the step journal and the HTTP ingress log (journal.c). Its
 * state (Ft) is its own (ft_int.h); it works on what it is given at
 * ft_new - the circuit, the connectors, the step backend, the storage
 * options - and on the pending input handed to each call, never on the
 * whole pipeline. See docs/fault-tolerance.md.
 *
 * Threads: the controller calls everything but ft_encode_ingress,
 * ft_log_ingress and ft_sync_ingress (HTTP threads, see each), ft_request
 * and ft_status (any thread). qmu is the HTTP queue's lock: the ingress
 * log is written under it, in queue order; it is taken before Ft's own.
 */
#ifndef SL_PIPELINE_FT_H
#define SL_PIPELINE_FT_H

#include <pthread.h>

#include "backend.h"
#include "pending.h"

typedef struct Ft Ft;
struct Log;

/* What a checkpoint records of the controller, and a restore gives back. */
typedef struct FtCounts {
    int64_t rows;             /* rows processed by completed steps */
    int64_t txn_id;           /* the last transaction id given */
} FtCounts;

/* ckpt.c */
/* Fault tolerance over the storage o->storage (not opened yet); wake is
   signalled (under qmu) when a checkpoint was written. */
Ft *ft_new(const Circuit *c, Connectors *cs, Backend *be, const PipelineOpts *o,
           pthread_mutex_t *qmu, pthread_cond_t *wake);
/* Open the storage, restore the newest usable checkpoint (the backend's
   workers, the connectors' positions, *n) and read the journal and
   ingress log after it. */
int ft_open(Ft *ft, FtCounts *n, Err *err);
/* Wait for a checkpoint being written, free everything (NULL: nothing). */
void ft_close(Ft *ft);
/* Between steps (controller): take a checkpoint when one is due or
   requested and none is being written (not while busy: a transaction is
   open or input is pending); collect finished ones. final: the pipeline
   is stopping: write one and wait for it. NULL ft: nothing to do. */
int ft_tick(Ft *ft, bool busy, FtCounts n, bool final, Err *err);
/* Something for the controller to do (a request is pending). */
bool ft_wants(Ft *ft);
/* Bootstrapping (boot.h): did ft_open restore the checkpoint of the
   program being replaced? Then the bootstrap step runs between
   ft_bootstrap_begin (it is not journaled: a kill before the new
   program's first checkpoint bootstraps again) and ft_bootstrap_end,
   which writes that checkpoint (with "bootstrap" in its manifest) and
   waits for it. */
bool ft_booting(Ft *ft);
void ft_bootstrap_begin(Ft *ft);
int ft_bootstrap_end(Ft *ft, FtCounts n, Err *err);
/* Ask for a checkpoint (its request number in *seq); PIPE_CONFLICT
   without storage (ft NULL). Any thread. */
int ft_request(Ft *ft, int64_t *seq);
/* The checkpoints' status (ft NULL: none configured). Any thread. */
void ft_status(Ft *ft, CkptStatus *out);

/* journal.c */
/* Record pd's inputs (before the step runs; durable on return). A failing
   storage makes it wait and retry until it works or stop(arg) says the
   pipeline is stopping. */
int ft_journal_step(Ft *ft, Pending *pd, bool (*stop)(void *arg), void *arg, Err *err);
/* The step consumed ingress records up to pd->max_seq (ft may be NULL). */
void ft_step_done(Ft *ft, Pending *pd);
/* Input read and thrown away (an aborted transaction), before pend_reset. */
int ft_journal_discard(Ft *ft, Pending *pd, Err *err);
/* The record of b for the ingress log (outside any lock; empty when
   nothing is logged), then, under qmu, for pipeline_push_take: log b
   (sets b->seq); *log and *end say what to sync (ft_sync_ingress,
   outside the lock) before the request is acknowledged. *log is NULL
   when nothing was logged. */
void ft_encode_ingress(Ft *ft, InBatch *b, Buf *enc);
int ft_log_ingress(Ft *ft, InBatch *b, Buf *enc, struct Log **log, uint64_t *end, Err *err);
int ft_sync_ingress(struct Log *log, uint64_t end, Err *err);

#endif

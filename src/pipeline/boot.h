/*
 * pipeline/boot.h - bootstrapping on restart (issue 17; rules and examples
 * in docs/bootstrapping.md): a pipeline restarted with a changed program
 * over storage written by the old one keeps the state that still holds
 * and computes only what changed.
 *
 * The CLI compiles the stored program (progstore.h) and the new one, makes
 * a plan (boot_plan_new) and hands it to pipeline_new through
 * PipelineOpts.boot; when the old program's logs hold steps or input after
 * its checkpoint (BootPlan.unsettled), it first has the old program settle
 * the storage (pipeline_settle: journaled steps replayed, a checkpoint of
 * the old program with nothing after it) and tries again. ckpt.c restores the old checkpoint through the plan
 * (each kept operator's state loaded into the new node computing the same
 * stream, connectors positioned by name); pipeline.c then runs bootstrap
 * steps (the step backend's boot, runtime.h rt_set_boot on every host) in
 * which only the new part of the circuit runs, fed the integral of the
 * stored streams it reads and the tables read again, and writes the first
 * checkpoint of the new program before any input is read.
 * A kill before that checkpoint leaves the old program's checkpoint the
 * newest: the restart bootstraps again from it.
 */
#ifndef SL_PIPELINE_BOOT_H
#define SL_PIPELINE_BOOT_H

#include <cjson/cJSON.h>

#include "../base/wire.h"
#include "../io/connector.h"
#include "../runtime/runtime.h"
#include "../sql/progdiff.h"

typedef struct BootPlan {
    const Circuit *old, *nc; /* the stored program's circuit and the new one (the caller's) */
    ProgDiff *d;
    uint64_t old_fp;         /* the stored program's fingerprint */
    bool *run;               /* per new node: runs in the bootstrap step */
    bool *is_new;            /* per new node: no old node computes its stream */
    int *feed_sink;          /* per new node: the kept materialized sink whose contents
                                are its integral (it is fed them), itself for a kept
                                PRIMARY KEY table's upsert (fed its rows) or aggregate
                                (fed its current output rows), or -1 */
    Arena *arena;            /* the fed chunks (boot_feed) */
    Chunk **feed;            /* per (local worker, new node), or NULL */
    BatchList held;          /* saved states the fed chunks point into */
    int nfeed;
    int nnew;                /* nodes that run new in the bootstrap step */
    bool *reread;            /* per new relation: a kept table read again from the
                                beginning for the new part (backfill) */
    bool *rewind;            /* ... through its live connectors, each on the host that
                                reads it (datagen, file, S3 and kafka inputs: input_rewind,
                                read up to the checkpoint's row count, kafka in replay
                                mode up to its offsets, input_seek back); the others
                                (postgres_cdc_input) through a second instance of them on
                                the coordinator (boot_backfill_open) */
    int64_t *target;         /* per input connector (boot_positions): the rows its
                                backfill reads (its checkpoint's count), or -1 */
    InPos *tpos;             /* ... and its position there (kafka_input reads every
                                partition up to its offset) */
    Circuit *bc;             /* the circuit the backfill connectors are opened from */
    int nout;                /* output connectors of the new program (connectors_open order) */
    int *out_from;           /* per output: the old program's output it continues (its index
                                in the manifest's "outputs": same view kept, same connector
                                JSON), or -1: a new destination (offset 0, counters 0) */
    bool *out_snap;          /* per output: a new destination of a kept materialized view:
                                the first bootstrap step gives it the view's contents */
    int nsnap;               /* outputs with out_snap */
    Batch **snapb;           /* per output written here: the snapshot the first bootstrap
                                step delivers in place of its changes (boot_snapshot) */
    bool unsettled;          /* pipeline_new failed because the old program's journal or
                                ingress log holds steps or input after its checkpoint:
                                pipeline_settle them with the old program, then retry */
} BootPlan;

/* The plan of bootstrapping from old (its text old_text, fingerprint
   old_fp) to nc (new_text). NULL with err (SL_ECONFIG) naming the relation
   and why when a change needs what is not built yet (re-reading a source
   for a new view over a table whose history nothing stores). */
BootPlan *boot_plan_new(const Circuit *old, const char *old_text, uint64_t old_fp,
                        const Circuit *nc, const char *new_text, Err *err);
void boot_plan_free(BootPlan *b);
/* A copy of a manifest's "state" array in the new program's node numbers,
   without the entries of nodes whose stream is gone (cJSON_Delete it). */
cJSON *boot_state(const BootPlan *b, const cJSON *state);
/* Position the new program's input connectors from manifest m: an input
   of a kept table with the same name continues where the checkpoint left
   it; the others (new or changed tables) start from the beginning. Output
   record counts likewise. */
int boot_positions(BootPlan *b, Connectors *cs, const cJSON *m, Err *err);
/* Refuse (SL_ECONFIG, naming the output) when the local storage directory
   dir (NULL: an S3 storage, whose queues are in memory) holds steps
   queued for an old output (DIR/delivery/out<k>.queue, named by the
   output's number: io/deliver.c) that the new program does not continue
   under the same number: the new output j would load old output j's
   steps and deliver them to its own destination. */
int boot_check_queues(const BootPlan *b, const char *dir, Err *err);
/* Where output j continues from: its offset in manifest m when it is a
   kept view's output of the same name, else 0 (a new or changed view's
   output starts over). */
int64_t boot_out_offset(const BootPlan *b, const Connectors *cs, const cJSON *m, int j);
/* What output j delivers in the step running now in place of its
   changes (a new destination's snapshot), or NULL. */
static inline const Batch *boot_snapshot(const BootPlan *b, int j)
{
    return b && b->snapb && j < b->nout ? b->snapb[j] : NULL;
}
/* Scale-out: the plan as the coordinator sends it to every other host
   (which nodes run in the bootstrap steps, which are new, which are fed
   what: every host runs the same plan), and back on a host of program nc
   (its own stored streams feed its own workers: boot_feed). NULL when the
   message does not fit nc. Such a plan has no diff and no connectors. */
void boot_plan_put(const BootPlan *b, Buf *out);
BootPlan *boot_plan_get(const Circuit *nc, Rd *r);
/* Open a second instance of the input connectors of the tables read again
   (b->reread) but not through their live connectors (b->rewind) into out (connectors_close it; before boot_plan_free): the
   backfill, read up to boot_backfill_target rows (postgres_cdc_input:
   the table as it was at the checkpoint's position, a new snapshot less
   the changes since, input_boot_at, until it ends); the live connector of
   the same name in cs continues from the checkpoint's position. */
int boot_backfill_open(BootPlan *b, const Connectors *cs, Connectors *out, Err *err);
/* The rows backfill input ic reads in all (postgres_cdc_input: until it
   ends, INT64_MAX). */
int64_t boot_backfill_target(const BootPlan *b, const Connectors *cs, InputConn *ic);
/* The bootstrap step's fed outputs for rt (rt_set_boot's feed): per local
   worker, each fed node's integral, from its sink's contents. Valid until
   boot_plan_free. */
Chunk *const *boot_feed(BootPlan *b, Runtime *rt);

#endif

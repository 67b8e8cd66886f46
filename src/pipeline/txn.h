/*
 * pipeline/txn.h - transactions (txn.c: start, commit, abort, and the
 * backfill transaction of connectors with "transaction": "backfill"):
 * the controller's state of one, the copy it publishes under the
 * pipeline's mu for /stats, and the commands pipeline.c's loop runs.
 */
#ifndef SL_PIPELINE_TXN_H
#define SL_PIPELINE_TXN_H

#include "pipeline.h"

typedef enum TxnState { TX_NONE, TX_OPEN, TX_COMMITTING } TxnState;

struct Cmd;

/* The controller's. */
typedef struct Txn {
    TxnState state;
    int64_t id;               /* the open one's, else the last one's */
    bool backfill;            /* opened by backfill connectors, commits itself */
    double t0;                /* when it opened (pipe_now) */
    struct Cmd *commit_cmd;   /* the commit accepted, run next by the loop */
} Txn;

/* Published (under mu). */
typedef struct TxnPub {
    TxnState state;
    int64_t id, records;
    double t0, commit_t0;
    bool backfill;
    int64_t last_commit_id, last_commit_records, last_commit_step;
} TxnPub;

/* Open a transaction (backfill: the backfill connectors' own). */
void txn_open(Pipeline *p, bool backfill);
/* A transaction command, on the controller. Returns with the command
   finished, or accepted (a commit, which the loop runs next: txn_commit). */
void txn_command(Pipeline *p, struct Cmd *cmd);
/* Run the open transaction's commit: everything queued joins it, then one
   step. */
int txn_commit(Pipeline *p, Err *err);

#endif

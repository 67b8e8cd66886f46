/*
 * pipeline/txn.c - transactions and the commands that run on the
 * controller (pipeline_command hands them over; pipeline.c's loop runs
 * them between steps). While a transaction is open, gathered input
 * accumulates in the pending input and no step runs, so views emit
 * nothing; the commit is one step over all of it (every view computed
 * once, one change each); an abort discards it, so the state is exactly
 * as before (no operator saw any of it). Input already queued when a
 * transaction starts joins it.
 */
#include <stdio.h>
#include <string.h>

#include "../base/mem.h"
#include "pipeline_int.h"

/* ---------------------------------------------------------------- commands */

PState pipe_state(Pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    PState s = p->state;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* Finish cmd (under mu). */
void pipe_cmd_finish(Pipeline *p, Cmd *cmd, int rc)
{
    cmd->rc = rc;
    cmd->done = cmd->accepted = true;
    cmd->res.step = rt_steps(p->be->rt);
    pthread_cond_broadcast(&p->done);
}

void txn_open(Pipeline *p, bool backfill)
{
    p->tx.state = TX_OPEN;
    p->tx.id++;
    p->tx.backfill = backfill;
    p->tx.t0 = pipe_now();
}

/* Refuse cmd with a message (fmt may use %lld once, for a). */
__attribute__((format(printf, 2, 0)))
static int conflict(Cmd *cmd, const char *fmt, long long a)
{
    snprintf(cmd->res.msg, sizeof(cmd->res.msg), fmt, a);
    return PIPE_CONFLICT;
}

/* A transaction command, on the controller. Returns with the command
   finished, or accepted (a commit, which the loop runs next). */
void txn_command(Pipeline *p, Cmd *cmd)
{
    int rc = 0;
    bool paused = pipe_state(p) == PS_PAUSED;
    switch (cmd->cmd) {
    case PC_TXN_START:
        if (p->tx.state != TX_NONE && p->tx.backfill)
            rc = conflict(cmd,
                          "the backfill transaction %lld is in progress; it commits itself when "
                          "its connectors reach the end of their input",
                          (long long)p->tx.id);
        else if (p->tx.state != TX_NONE)
            rc = conflict(cmd, "transaction %lld is already open; commit or abort it first",
                          (long long)p->tx.id);
        else {
            txn_open(p, false);
            cmd->res.txn_id = p->tx.id;
            pthread_mutex_lock(&p->mu);
            cmd->res.records = p->pend.rows + p->q.rows; /* queued input joins it */
            pthread_mutex_unlock(&p->mu);
        }
        break;
    case PC_TXN_COMMIT:
    case PC_TXN_ABORT:
        if (p->tx.state == TX_NONE)
            rc = conflict(cmd, "no transaction is open; POST /start_transaction first", 0);
        else if (p->tx.backfill)
            rc = conflict(cmd,
                          "transaction %lld is the backfill transaction; it commits itself when "
                          "its connectors reach the end of their input",
                          (long long)p->tx.id);
        else if (p->tx.commit_cmd)
            rc = conflict(cmd, "transaction %lld is already committing", (long long)p->tx.id);
        else if (cmd->cmd == PC_TXN_COMMIT && paused)
            rc = conflict(cmd,
                          "the pipeline is paused; POST /start first (transaction %lld stays "
                          "open)",
                          (long long)p->tx.id);
        else if (cmd->cmd == PC_TXN_COMMIT) {
            cmd->res.txn_id = p->tx.id;
            p->tx.commit_cmd = cmd;
            pthread_mutex_lock(&p->mu);
            cmd->accepted = true;
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mu);
            return;
        } else {
            /* abort: take what is queued too, then forget all of it */
            Err e = {0};
            pipe_gather(p, &p->pend, false, -1, &e);
            cmd->res.txn_id = p->tx.id;
            cmd->res.records = p->pend.rows;
            int64_t tok = p->pend.max_token;
            if (ft_journal_discard(p->ft, &p->pend, &e))
                fprintf(stderr, "sluice: %s\n", e.msg);
            pend_reset(p, &p->pend);
            p->be->ops->drop(p->be);
            p->tx.state = TX_NONE;
            pipe_tokens_done(p, tok);
            fprintf(stderr, "sluice: transaction %lld aborted: %lld record%s discarded\n",
                    (long long)cmd->res.txn_id, (long long)cmd->res.records,
                    cmd->res.records == 1 ? "" : "s");
        }
        break;
    default:
        break;
    }
    stats_publish(p);
    pthread_mutex_lock(&p->mu);
    pipe_cmd_finish(p, cmd, rc);
    pthread_mutex_unlock(&p->mu);
}

/* Run the open transaction's commit: everything queued joins it, then one
   step. */
int txn_commit(Pipeline *p, Err *err)
{
    p->tx.state = TX_COMMITTING;
    pthread_mutex_lock(&p->mu);
    p->tx_pub.commit_t0 = pipe_now();
    pthread_mutex_unlock(&p->mu);
    if (pipe_gather(p, &p->pend, false, -1, err) < 0)
        return err->code;
    int64_t id = p->tx.id, recs = p->pend.rows;
    bool backfill = p->tx.backfill;
    double t0 = pipe_now();
    stats_publish(p);
    if (p->tty && p->o.progress)
        fputc('\n', stderr);
    fprintf(stderr, "sluice: %stransaction %lld: committing %lld record%s in one step\n",
            backfill ? "backfill " : "", (long long)id, (long long)recs, recs == 1 ? "" : "s");
    int64_t rej0 = p->rej.total; /* only the controller changes it */
    int rc = pipe_run_step(p, &p->pend, err);
    int64_t rejected = p->rej.total - rej0;
    p->tx.state = TX_NONE;
    p->tx.backfill = false;
    Cmd *cmd = p->tx.commit_cmd;
    p->tx.commit_cmd = NULL;
    if (!rc)
        fprintf(stderr, "sluice: transaction %lld committed at step %lld in %.3f s\n",
                (long long)id, (long long)rt_steps(p->be->rt), pipe_now() - t0);
    stats_publish(p);
    pthread_mutex_lock(&p->mu);
    p->tx_pub.last_commit_id = id;
    p->tx_pub.last_commit_records = recs;
    p->tx_pub.last_commit_step = rt_steps(p->be->rt);
    if (cmd) {
        cmd->res.txn_id = id;
        cmd->res.records = recs - rejected;
        cmd->res.rejected = rejected;
        if (rc)
            snprintf(cmd->res.msg, sizeof(cmd->res.msg), "%.200s", err->msg);
        else if (rejected)
            snprintf(cmd->res.msg, sizeof(cmd->res.msg), "%.200s", p->rej.last);
        bool detached = cmd->detached;
        pipe_cmd_finish(p, cmd, rc ? PIPE_CONFLICT : 0);
        if (detached)
            sl_free(cmd);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

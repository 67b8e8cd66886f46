/*
 * pipeline/replay.c - a restart runs again what the journal and the
 * ingress log (journal.c) hold beyond the checkpoint. ft_replay re-reads
 * exactly the rows each journaled step consumed (checking count, position
 * and hash: an input that changed since is refused), adds the HTTP input
 * it took from the ingress log, and runs the same step (step.c); outputs
 * of all but the last replayed step are already in the files (the journal
 * explains why): those steps run quiet, their outputs counted, not written. ft_requeue puts the logged HTTP input no journaled step
 * consumed back into the queue (inbox.c), in log order.
 */
#include <stdio.h>

#include "../base/mem.h"
#include "ft_int.h"
#include "pipeline_int.h"

/* Read exactly rec's rows of connector j into pd, checking where they end
   and what they hash to. */
static int replay_input(Pipeline *p, Pending *pd, const JRec *rec, int j, Err *err)
{
    InputConn *ic = p->cs.in[j];
    int64_t want = rec->rows[j], got = 0;
    input_set_replay(ic, true);
    input_replay_to(ic, &rec->pos[j]);
    while (got < want) {
        Piece *list = NULL;
        uint64_t hash = 0;
        int64_t n = pipe_input_next(p, j, want - got, pd->a, &list, &hash, err);
        if (n < 0) {
            input_set_replay(ic, false);
            return err->code;
        }
        if (n == 0)
            break;
        pipe_add_input(p, pd, j, list, n, hash);
        got += n;
    }
    input_set_replay(ic, false);
    InPos pos, rpos = rec->pos[j];
    input_pos(ic, &pos);
    input_pos_canon(ic, &rpos); /* (journals of older versions) */
    bool same_x = pos.nx == rpos.nx;
    for (int i = 0; same_x && i < pos.nx; i++)
        same_x = pos.x[i] == rpos.x[i];
    if (got != want || pos.v[0] != rpos.v[0] || pos.v[1] != rpos.v[1] ||
        !same_x || pd->conn_hash[j] != rec->hash[j])
        return err_set(err, SL_EIO,
                       "replaying step %lld: %s gave %lld rows ending at (%lld, %lld), but the "
                       "journal recorded %lld rows ending at (%lld, %lld)%s; its input changed "
                       "since the step ran, so replaying it would give different results. "
                       "Restore the input or start over with a new storage directory",
                       (long long)rec->step, input_name(ic), (long long)got,
                       (long long)pos.v[0], (long long)pos.v[1], (long long)want,
                       (long long)rpos.v[0], (long long)rpos.v[1],
                       got == want && pd->conn_hash[j] != rec->hash[j] ? " with other contents"
                                                                       : "");
    return 0;
}

/* Logged HTTP input with seq <= hi, in order, into pd (or dropped). */
static int replay_ingress(Pipeline *p, Pending *pd, int *next, int64_t hi, bool keep, Err *err)
{
    Ft *ft = p->ft;
    while (*next < ft->nirecs && ft->irecs[*next].seq <= hi) {
        IRec *r = &ft->irecs[(*next)++];
        if (!keep || !r->p)
            continue;
        InBatch *b = ft_ingress_decode(p->c, r->p, r->n, NULL, err);
        if (!b)
            return err->code;
        b->rows = inbatch_count(b);
        pipe_add_batch(p, pd, b);
    }
    return 0;
}

int ft_requeue(Pipeline *p, Err *err)
{
    Ft *ft = p->ft;
    int64_t hi = ft->ing_consumed;
    for (int i = 0; i < ft->nrecs; i++)
        if (ft->recs[i].seq_hi > hi)
            hi = ft->recs[i].seq_hi;
    int requeued = 0;
    for (int i = 0; i < ft->nirecs; i++) {
        IRec *r = &ft->irecs[i];
        if (r->seq <= hi || !r->p)
            continue;
        InBatch *b = ft_ingress_decode(p->c, r->p, r->n, NULL, err);
        if (!b)
            return err->code;
        inbox_requeue(p, b);
        sl_free(r->p);
        r->p = NULL;
        requeued++;
    }
    if (requeued)
        fprintf(stderr, "sluice: %d acknowledged HTTP input batch%s from before the restart "
                        "queued again\n",
                requeued, requeued == 1 ? "" : "es");
    return 0;
}

int ft_replay(Pipeline *p, Err *err)
{
    Ft *ft = p->ft;
    if (!ft)
        return 0;
    int rc = 0, next = 0, last = -1;
    for (int i = 0; i < ft->nrecs; i++)
        if (ft->recs[i].step >= 0)
            last = i;
    double t0 = pipe_now();
    int nsteps = 0;
    ft->replaying = true;
    for (int i = 0; i < ft->nrecs && !rc; i++) {
        JRec *rec = &ft->recs[i];
        Pending *pd = &p->pend;
        if (rec->step < 0) { /* a discarded transaction: skip what it read */
            for (int j = 0; j < p->cs.nin && !rc; j++)
                if (rec->rows[j] > 0)
                    rc = input_seek(p->cs.in[j], &rec->pos[j], err);
            if (!rc)
                rc = replay_ingress(p, pd, &next, rec->seq_hi, false, err);
            if (rec->seq_hi > ft->ing_consumed)
                ft->ing_consumed = rec->seq_hi;
            continue;
        }
        for (int j = 0; j < p->cs.nin && !rc; j++)
            if (rec->rows[j] > 0)
                rc = replay_input(p, pd, rec, j, err);
        if (!rc)
            rc = replay_ingress(p, pd, &next, rec->seq_hi, true, err);
        if (rc)
            break;
        p->quiet_outputs = i != last;
        rc = pipe_run_step(p, pd, err);
        p->quiet_outputs = false;
        nsteps++;
    }
    ft->replaying = false;
    if (!rc && nsteps)
        fprintf(stderr, "sluice: replayed %d journaled step%s in %.3f s; now at step %lld\n",
                nsteps, nsteps == 1 ? "" : "s", pipe_now() - t0, (long long)rt_steps(p->be->rt));
    ft_records_free(ft);
    return rc;
}

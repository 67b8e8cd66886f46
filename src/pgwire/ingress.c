/*
 * pgwire/ingress.c - rows of a session into the pipeline: the table a
 * write names, the rows of a result converted to the table's types
 * (through their canonical text, so a literal '2024-01-02' fills a DATE)
 * and queued with pipeline_push_take, acknowledged once durable (and,
 * outside a transaction block, once the step that applied them ran); the
 * transaction block's first write opens the pipeline's transaction,
 * COMMIT and ROLLBACK end it (one transaction at a time in the pipeline:
 * a second session that writes in a block is refused until it ends).
 */
#include <stdio.h>
#include <string.h>

#include "../expr/text.h"
#include "../sql/sql.h"
#include "pg_int.h"

/* ---------------------------------------------------------------- transactions */

void pg_end_block(PgConn *c, bool commit, PgErr *e)
{
    e->code[0] = 0;
    if (c->txn_open) {
        PipeCmdResult r;
        int rc = pipeline_command(c->s->p, commit ? PC_TXN_COMMIT : PC_TXN_ABORT, true, &r);
        if (rc == PIPE_CONFLICT)
            pg_err(e, "40001", "the pipeline's transaction could not be %s: %s",
                   commit ? "committed" : "aborted", r.msg);
        else if (rc == PIPE_STOPPING)
            pg_err(e, "57P01", "the pipeline is stopping: the transaction was not committed");
        else if (commit && r.rejected)
            pg_notice(c, "22000", "%lld records of the transaction were rejected: %s",
                      (long long)r.rejected, r.msg);
    }
    c->in_block = c->failed = c->txn_open = false;
}

/* The block's first write opens the pipeline's transaction. */
int pg_open_txn(PgConn *c, PgErr *e)
{
    if (!c->in_block || c->txn_open)
        return 0;
    PipeCmdResult r;
    int rc = pipeline_command(c->s->p, PC_TXN_START, true, &r);
    if (rc == PIPE_STOPPING)
        return pg_err(e, "57P01", "the pipeline is stopping");
    if (rc == PIPE_CONFLICT) {
        pg_err(e, "25001", "cannot write in this transaction block: %s", r.msg);
        snprintf(e->hint, sizeof(e->hint),
                 "the pipeline has one transaction at a time (another session or an HTTP "
                 "client holds it): retry after it commits");
        return -1;
    }
    c->txn_open = true;
    return 0;
}

/* ---------------------------------------------------------------- ingress */

int pg_push_rows(PgConn *c, int rel, const QResult *q, const int *map, int64_t w, PgErr *e)
{
    PgServer *s = c->s;
    const Relation *r = &s->c->rels[rel];
    InBatch *b = inbatch_new(s->c, rel);
    Arena *a = inbatch_arena(b);
    Buf t = BUF_INIT;
    int64_t n = q->rows ? q->rows->n : 0;
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        Chunk *ch = inbatch_room(b);
        int64_t k = ch->n;
        for (int j = 0; j < r->ncol && !rc; j++) {
            Vec *v = &ch->col[j];
            int m = map[j];
            const Vec *src = m >= 0 ? &q->rows->col[m] : NULL;
            if (!src || src->t.kind == TK_NULL || vec_is_null(src, i)) {
                if (!v->nul)
                    rc = pg_err(e, "23502",
                                "null value in column \"%s\" of relation \"%s\" violates "
                                "not-null constraint",
                                r->colnames[j], r->name);
                else
                    vec_set_null(v, k);
                continue;
            }
            if (v->nul)
                v->nul[k] = 0;
            buf_reset(&t);
            text_format_vec(src, i, &t);
            Err err;
            err_init(&err);
            if (text_parse_vec(v, k, (const char *)t.p, t.n, a, &err))
                rc = pg_err(e, strstr(err.msg, "long") ? "22001" : "22P02",
                            "column \"%s\": %s", r->colnames[j], err.msg);
        }
        if (!rc)
            ch->w[ch->n++] = w;
    }
    buf_free(&t);
    if (rc) {
        inbatch_free(b);
        return -1;
    }
    return pg_push_batch(c, b, e);
}

int pg_push_batch(PgConn *c, InBatch *b, PgErr *e)
{
    PgServer *s = c->s;
    if (pg_open_txn(c, e)) {
        inbatch_free(b);
        return -1;
    }
    bool wait = !c->in_block;
    if (wait) {
        PipeStats st;
        pipeline_stats(s->p, &st);
        if (st.txn_id) {
            wait = false;
            pg_notice(c, "01000", "the rows joined the pipeline's open transaction %lld: they "
                      "apply when it commits", (long long)st.txn_id);
        } else if (!strcmp(st.state, "paused")) {
            wait = false;
            pg_notice(c, "01000", "the pipeline is paused: the rows apply when it resumes");
        }
        pipestats_free(&st);
    }
    int64_t token = 0;
    int prc = pipeline_push_take(s->p, b, 5.0, &token);
    if (prc == PIPE_STOPPING)
        return pg_err(e, "57P01", "the pipeline is stopping; nothing was taken");
    if (prc == PIPE_IOERR)
        return pg_err(e, "58030", "the input could not be made durable in the pipeline's "
                                  "storage; it was not taken: retry once storage works");
    if (prc)
        return pg_err(e, "53000", "the input queue is full (the pipeline is behind); nothing "
                                  "was taken: retry later");
    if (wait && token) {
        pipeline_token_wait(s->p, token);
        char why[200] = "";
        int64_t rej = pipeline_token_rejected(s->p, token, why, sizeof(why));
        if (rej)
            pg_notice(c, "22000", "%lld of the rows were rejected by a runtime error: %s",
                      (long long)rej, why);
    }
    return 0;
}

/* The table a write names: a table that is not the errors table. */
int pg_write_target(PgConn *c, const char *name, PgErr *e)
{
    const Circuit *ci = c->s->c;
    int rel = circuit_find_rel(ci, name);
    if (rel < 0)
        return pg_err(e, "42P01", "relation \"%s\" does not exist", name);
    if (!ci->rels[rel].is_table)
        return pg_err(e, "42809", "\"%s\" is a view: rows go into tables", name);
    if (!strcmp(ci->rels[rel].name, PIPELINE_ERRORS_TABLE))
        return pg_err(e, "42501", "%s holds the records the pipeline rejected; only the "
                                  "pipeline writes it", name);
    if (c->read_only)
        return pg_err(e, "42501", "permission denied: a read-only API key may only read");
    return rel;
}


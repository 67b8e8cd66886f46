/*
 * pgwire/query.c - a SELECT of a session over a consistent snapshot of
 * the materialized tables and views it names, as HTTP /query runs it: the
 * controller copies their contents between two steps (pipeline_call +
 * pipeline_contents_raw), this module decodes them and runs the query with
 * pipeline/oneshot.h on a thread with a 16 MiB stack, under the /query
 * budget (oneshot_limits(): time and memory; cancelled when the client
 * closes its connection). INSERT ... SELECT, DELETE, COPY (SELECT ...) TO
 * STDOUT use it too. A query naming a relation that is not materialized
 * gets 55000 naming it and saying how to materialize it.
 */
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../sql/lexer.h"
#include "../sql/sql.h"
#include "../zset/key.h"
#include "../zset/xrec.h"
#include "pg_int.h"

#define QUERY_STACK ((size_t)16 << 20)

typedef struct Snap {
    int n;
    int *rels;
    Buf *raw;
} Snap;

static void snapshot(Pipeline *p, void *arg)
{
    Snap *s = arg;
    for (int i = 0; i < s->n; i++)
        pipeline_contents_raw(p, s->rels[i], &s->raw[i]);
}

/* Relations whose names appear as identifiers in sql. */
static int candidates(const Circuit *c, const char *sql, int *rels)
{
    Arena *a = arena_new(4096);
    Token *toks = NULL;
    int ntoks = 0, n = 0;
    Err e = {0};
    if (!lex(sql, a, &toks, &ntoks, &e))
        for (int i = 0; i < ntoks; i++) {
            if (toks[i].k != T_IDENT && toks[i].k != T_QIDENT)
                continue;
            int rel = circuit_find_rel(c, toks[i].s);
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup = dup || rels[k] == rel;
            if (rel >= 0 && !dup)
                rels[n++] = rel;
        }
    arena_free(a);
    return n;
}

static bool client_gone(void *arg)
{
    char ch;
    ssize_t n = recv(*(const int *)arg, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

typedef struct Job {
    const Circuit *c;
    const Snap *sn;
    const char *sql;
    int fd;
    Budget b;
    QResult res;
    Err e;
    int rc;
} Job;

static void *job_main(void *arg)
{
    Job *j = arg;
    const Snap *sn = j->sn;
    budget_begin(&j->b);
    Arena *a = arena_new(1 << 16);
    QInput *in = arena_zalloc(a, sizeof(QInput) * (size_t)(sn->n + 1));
    for (int i = 0; i < sn->n; i++) {
        const Relation *r = &j->c->rels[sn->rels[i]];
        int64_t nrec = 0;
        size_t pos = 0;
        XRec x;
        while (xrec_next(&sn->raw[i], &pos, &x))
            nrec++;
        Chunk *ch = chunk_new(a, r->ncol, r->types, nrec ? nrec : 1);
        pos = 0;
        while (xrec_next(&sn->raw[i], &pos, &x)) {
            key_decode(x.k, r->types, r->ncol, ch, 0, ch->n);
            ch->w[ch->n++] = x.w;
        }
        in[i] = (QInput){r->name, r->ncol, (const char *const *)r->colnames, r->types, ch};
    }
    j->rc = oneshot_query(j->sql, in, sn->n, 1, &j->res, &j->e);
    arena_free(a);
    budget_end();
    return NULL;
}

static void run_job(Job *j)
{
    pthread_attr_t at;
    pthread_t t;
    bool ok = pthread_attr_init(&at) == 0;
    ok = ok && pthread_attr_setstacksize(&at, QUERY_STACK) == 0 &&
         pthread_create(&t, &at, job_main, j) == 0;
    pthread_attr_destroy(&at);
    if (ok)
        pthread_join(t, NULL);
    else
        job_main(j);
}

static bool names(const Err *e, const char *name)
{
    char quoted[300];
    snprintf(quoted, sizeof(quoted), "\"%s\"", name);
    return strcasestr(e->msg, quoted) != NULL;
}

int pg_select(PgConn *c, const char *sql, long base, QResult *out, PgErr *e)
{
    PgServer *s = c->s;
    const Circuit *ci = s->c;
    int *cand = sl_calloc((size_t)ci->nrels + 1, sizeof(int));
    int ncand = candidates(ci, sql, cand);
    Snap sn = {0, sl_calloc((size_t)ncand + 1, sizeof(int)),
               sl_calloc((size_t)ncand + 1, sizeof(Buf))};
    for (int i = 0; i < ncand; i++)
        if (ci->rels[cand[i]].materialized && ci->rels[cand[i]].sink >= 0)
            sn.rels[sn.n++] = cand[i];
    int rc = 0;
    if (pipeline_call(s->p, snapshot, &sn)) {
        rc = pg_err(e, "57P01", "the pipeline is stopping; no more queries");
        goto out_free;
    }
    QueryLimits lim = oneshot_limits();
    Job job = {ci, &sn, sql, c->fd, {0}, {0}, {0}, 0};
    job.b = (Budget){.limit = lim.memory_bytes, .timeout = lim.timeout_secs,
                     .cancelled = client_gone, .arg = &job.fd};
    run_job(&job);
    if (job.rc && job.b.stop) {
        switch (job.b.stop) {
        case BUDGET_MEMORY:
            fprintf(stderr, "sluice: pg: query stopped: more than its memory budget: %.200s\n",
                    sql);
            rc = pg_err(e, "53200",
                        "the query needed more than its memory budget of %lld bytes "
                        "(--query-memory, query_memory_bytes); the pipeline goes on",
                        (long long)job.b.limit);
            break;
        case BUDGET_TIMEOUT:
            fprintf(stderr, "sluice: pg: query stopped: longer than its time limit: %.200s\n",
                    sql);
            rc = pg_err(e, "57014",
                        "canceling statement due to statement timeout: the query ran longer "
                        "than %g s (--query-timeout, query_timeout_secs); the pipeline goes on",
                        job.b.timeout);
            break;
        default:
            rc = pg_err(e, "57014", "the query was cancelled: the client closed the connection");
        }
        goto out_free;
    }
    if (job.rc) {
        for (int i = 0; i < ncand; i++) {
            const Relation *r = &ci->rels[cand[i]];
            if ((r->materialized && r->sink >= 0) || !names(&job.e, r->name))
                continue;
            rc = pg_err(e, "55000", "%s %s is not materialized, so it cannot be queried",
                        r->is_table ? "table" : "view", r->name);
            if (r->is_table)
                snprintf(e->hint, sizeof(e->hint),
                         "declare it with WITH ('materialized' = 'true')");
            else
                snprintf(e->hint, sizeof(e->hint), "declare it as CREATE MATERIALIZED VIEW %s",
                         r->name);
            goto out_free;
        }
        rc = pg_err_from(c, e, &job.e, sql, base);
        goto out_free;
    }
    *out = job.res;
out_free:
    for (int i = 0; i < sn.n; i++)
        buf_free(&sn.raw[i]);
    sl_free(sn.raw);
    sl_free(sn.rels);
    sl_free(cand);
    return rc;
}

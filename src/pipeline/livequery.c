/*
 * pipeline/livequery.c - one-shot SELECTs over a running pipeline (HTTP
 * /query and the PostgreSQL wire protocol): the materialized relations
 * the query names are copied at a step boundary (pipeline_call), decoded
 * and handed to oneshot_run (after the program's CREATE TYPEs and SQL
 * functions, which the query may name) on a thread of its own, under the limits of
 * oneshot_limits() and cancelled when the client's socket closes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "../circuit/op.h"
#include "../runtime/runtime.h"
#include "../expr/tz.h"
#include "../sql/lexer.h"
#include "../sql/sql.h"
#include "../zset/key.h"
#include "../zset/xrec.h"
#include "backend.h"
#include "oneshot.h"
#include "pipeline_int.h"

/* The front end's limits (sql/ast.h) are sized for an 8 MiB stack with
   room to spare; a connection thread's may be 2 MiB. */
#define QUERY_STACK ((size_t)16 << 20)

typedef struct Snap {
    int n;
    int *rels;
    Buf *raw;
    int64_t limit; /* the query's memory budget (0: none) */
    int64_t need;  /* set: the relations' state is larger than that; not copied */
} Snap;

/* The bytes relation rel's contents take in this process (in memory and
   spilled): about what a copy of them needs. -1 when unknown (scale-out). */
static int64_t rel_bytes(Pipeline *p, int rel)
{
    Runtime *rt = p->be->rt;
    if (p->be->hosts != 1 || !rt)
        return -1;
    const Relation *r = &p->c->rels[rel];
    OpMem m = {0};
    for (int w = 0; w < rt_workers(rt); w++)
        op_mem(rt_op(rt, w, r->sink), &m);
    /* spilled rows are compressed: count at least what one copy (a
       record header, about 9 bytes a column) and its decoding (a weight,
       8 bytes a column, 16 a string) take per row */
    int64_t per = 24 + 17 * (int64_t)r->ncol;
    for (int j = 0; j < r->ncol; j++)
        per += type_phys(r->types[j]) == PHYS_STR ? 16 : 0;
    int64_t est = (int64_t)(m.bytes + m.disk_bytes), low = m.rows * per;
    return est > low ? est : low;
}

static void snapshot(Pipeline *p, void *arg)
{
    Snap *s = arg;
    int64_t need = 0;
    for (int i = 0; i < s->n && s->limit > 0; i++) {
        int64_t b = rel_bytes(p, s->rels[i]);
        need += b > 0 ? b : 0;
    }
    if (s->limit > 0 && need > s->limit) { /* it would not fit: fail before copying */
        s->need = need;
        return;
    }
    for (int i = 0; i < s->n; i++)
        pipeline_contents_raw(p, s->rels[i], &s->raw[i]);
}

/* Relations whose names appear as identifiers in sql (case-insensitive). */
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

/* err names relation r as unknown ("... \"name\" does not exist"). */
static bool names(const Err *e, const char *name)
{
    char quoted[300];
    snprintf(quoted, sizeof(quoted), "\"%s\"", name);
    return strcasestr(e->msg, quoted) != NULL;
}

/* Budget.cancelled: has the client closed the connection (arg: its fd)? */
static bool client_gone(void *arg)
{
    char ch;
    ssize_t n = recv(*(const int *)arg, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* One query's run: the snapshot's decoding and oneshot_run, under b. */
typedef struct Job {
    const Circuit *c;
    const Snap *sn;
    const char *sql;
    Budget *b;
    QResult *res;
    Err *e;
    int rc; /* oneshot_run's */
} Job;

static void *job_main(void *arg)
{
    Job *j = arg;
    const Snap *sn = j->sn;
    budget_begin(j->b);
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
        in[i] = (QInput){r->name, r->ncol, (const char *const *)r->colnames, r->types, ch,
                         r->append_only, r->wm_col >= 0 || r->time_col >= 0,
                         r->wm_col >= 0 ? r->wm_col : r->time_col};
    }
    /* the program's session zone (for the query's own TIMESTAMPTZ values)
       and its SQL functions, which the query may call */
    Buf pre = BUF_INIT;
    if (j->c->tz)
        buf_printf(&pre, "SET TIME ZONE '%s'", tz_name(j->c->tz));
    for (int i = 0; i < j->c->ntypes; i++) /* the types its columns may name */
        buf_printf(&pre, "%s%s", pre.n ? ";\n" : "", j->c->types[i]);
    for (int i = 0; i < j->c->nfuncs; i++)
        if (j->c->funcs[i].text)
            buf_printf(&pre, "%s%s", pre.n ? ";\n" : "", j->c->funcs[i].text);
    const Chunk **steps = arena_zalloc(a, sizeof(Chunk *) * (size_t)(sn->n + 1));
    for (int i = 0; i < sn->n; i++)
        steps[i] = in[i].rows;
    j->rc = oneshot_run(pre.n ? buf_cstr(&pre) : NULL, j->sql, in, sn->n, 1, steps, 1, NULL, NULL,
                        j->res, j->e);
    buf_free(&pre);
    arena_free(a);
    budget_end();
    return NULL;
}

/* Run j on a thread with a stack of QUERY_STACK bytes (on this thread if
   none can be made). */
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

LiveQueryRc pipeline_query(Pipeline *p, const char *sql, int fd, QResult *out, Budget *b,
                           int *unmat, Err *err)
{
    const Circuit *c = p->c;
    *unmat = -1;
    int *cand = sl_calloc((size_t)c->nrels + 1, sizeof(int));
    int ncand = candidates(c, sql, cand);
    Snap sn = {0, sl_calloc((size_t)ncand + 1, sizeof(int)),
               sl_calloc((size_t)ncand + 1, sizeof(Buf)), 0, 0};
    for (int i = 0; i < ncand; i++)
        if (c->rels[cand[i]].materialized && c->rels[cand[i]].sink >= 0)
            sn.rels[sn.n++] = cand[i];
    LiveQueryRc rc = LQ_OK;
    QueryLimits lim = oneshot_limits();
    *b = (Budget){.limit = lim.memory_bytes, .timeout = lim.timeout_secs,
                  .cancelled = fd >= 0 ? client_gone : NULL, .arg = &fd};
    sn.limit = lim.memory_bytes;
    if (pipeline_call(p, snapshot, &sn)) {
        rc = LQ_STOPPING;
        goto out;
    }
    if (sn.need) {
        b->stop = BUDGET_MEMORY;
        fprintf(stderr, "sluice: query refused: the relations it reads take about %lld bytes, "
                "more than its memory budget of %lld\n", (long long)sn.need, (long long)b->limit);
        rc = LQ_BUDGET;
        goto out;
    }
    Job job = {c, &sn, sql, b, out, err, 0};
    run_job(&job);
    if (job.rc && b->stop) {
        rc = LQ_BUDGET;
    } else if (job.rc) {
        rc = LQ_SQL;
        for (int i = 0; i < ncand && *unmat < 0; i++) {
            const Relation *r = &c->rels[cand[i]];
            if (!(r->materialized && r->sink >= 0) && names(err, r->name))
                *unmat = cand[i];
        }
    }
out:
    for (int i = 0; i < sn.n; i++)
        buf_free(&sn.raw[i]);
    sl_free(sn.raw);
    sl_free(sn.rels);
    sl_free(cand);
    return rc;
}

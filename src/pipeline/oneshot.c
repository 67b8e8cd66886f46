/*
 * pipeline/oneshot.c - one SELECT, once, over given contents (oneshot.h).
 *
 * The query becomes a materialized view in presentation mode (CC_PRESENT:
 * its ORDER BY keys stay as hidden trailing columns) over tables declared
 * like the inputs; the inputs are the first and only step's changes; the
 * sinks' integrated contents are decoded, expanded by weight, sorted by
 * the ORDER BY keys (NULL is the smallest value unless NULLS FIRST/LAST
 * says otherwise), cut by OFFSET/LIMIT and stripped of hidden columns.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/budget.h"
#include "../base/mem.h"
#include "../runtime/runtime.h"
#include "../sql/sql.h"
#include "../zset/batch.h"
#include "../zset/hmap.h"
#include "../zset/key.h"
#include "../cluster/net.h"
#include "oneshot.h"

#define QUERY_VIEW "__oneshot_query"

typedef struct SortCtx {
    const Chunk *c;
    const Relation *r;
} SortCtx;

/* Rows x and y of s->c on the ORDER BY keys of s->r. */
static int cmp_keys(const SortCtx *s, int64_t x, int64_t y)
{
    for (int k = 0; k < s->r->norder; k++) {
        const Vec *v = &s->c->col[s->r->order_col[k]];
        bool nx = vec_is_null(v, x), ny = vec_is_null(v, y);
        int c = 0;
        if (nx || ny) {
            if (nx && ny)
                continue;
            c = nx ? -1 : 1;
            if (!s->r->order_nulls_first[k])
                c = -c;
            return c; /* NULL placement ignores DESC */
        }
        if (v->i)
            c = v->i[x] < v->i[y] ? -1 : v->i[x] > v->i[y];
        else if (v->x)
            c = v->x[x] < v->x[y] ? -1 : v->x[x] > v->x[y];
        else if (v->f)
            c = v->f[x] < v->f[y] ? -1 : v->f[x] > v->f[y];
        else {
            Str p = v->s[x], q = v->s[y];
            uint32_t m = p.n < q.n ? p.n : q.n;
            c = memcmp(p.p, q.p, m);
            if (!c)
                c = p.n < q.n ? -1 : p.n > q.n;
        }
        if (c)
            return s->r->order_desc[k] ? -c : c;
    }
    return 0;
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    int c = cmp_keys(arg, x, y);
    return c ? c : x < y ? -1 : x > y; /* stable */
}

/* SPMD scale-out (oneshot_spmd): every MPI rank runs the same calls. */
static bool spmd;

void oneshot_spmd(bool on) { spmd = on && net_active() && net_hosts() > 1; }

/* Every host takes the first host's failure (a runtime error may happen
   on one host only; all must go on alike). */
static int agree(int rc, Err *err)
{
    int H = net_hosts();
    Buf *send = sl_calloc((size_t)H, sizeof(Buf)), *recv = sl_calloc((size_t)H, sizeof(Buf));
    Buf mine = BUF_INIT;
    buf_append(&mine, &rc, sizeof(rc));
    if (rc)
        buf_append(&mine, err->msg, strlen(err->msg) + 1);
    for (int h = 0; h < H; h++)
        send[h] = mine;
    net_exchange(send, recv);
    int me = net_host(), out = 0;
    for (int h = 0; h < H && !out; h++) {
        const Buf *b = h == me ? &mine : &recv[h];
        int v = 0;
        if (b->n >= sizeof(int))
            memcpy(&v, b->p, sizeof(int));
        if (v && h != me)
            err_set(err, v, "%s", b->n > sizeof(int) ? (const char *)b->p + sizeof(int) : "");
        out = v;
    }
    for (int h = 0; h < H; h++)
        buf_free(&recv[h]);
    buf_free(&mine);
    sl_free(send);
    sl_free(recv);
    return out;
}

/* Contents of relation r: every worker's shard, consolidated (a row's
   weights may be spread over workers when no exchange precedes the sink),
   decoded, weight-expanded, strings copied into a. */
static Chunk *collect(Runtime *rt, const Relation *r, Arena *a)
{
    BatchBuilder *bb = bb_new();
    Buf mine = BUF_INIT;
    rt_sink_contents(rt, r->sink, &mine);
    int H = spmd ? net_hosts() : 1;
    Buf *recv = sl_calloc((size_t)H, sizeof(Buf));
    if (spmd) { /* every host gets every other host's shard */
        Buf *send = sl_calloc((size_t)H, sizeof(Buf));
        for (int h = 0; h < H; h++)
            send[h] = mine;
        net_exchange(send, recv);
        sl_free(send);
    }
    for (int h = 0; h < H; h++) { /* this host's own shard is mine */
        const Buf *from = h != net_host() ? &recv[h] : &mine;
        size_t pos = 0;
        XRec x;
        while (xrec_next(from, &pos, &x))
            bb_add(bb, x.k, x.kn, NULL, 0, x.w);
        buf_free(&recv[h]);
    }
    sl_free(recv);
    buf_free(&mine);
    Batch *b = bb_finish(bb);
    int64_t total = 0;
    for (int64_t i = 0; i < b->n; i++)
        if (b->w[i] > 0)
            total += b->w[i];
    Chunk *c = chunk_new(a, r->ncol, r->types, total ? total : 1);
    for (int64_t i = 0; i < b->n; i++) {
        int64_t wt = b->w[i];
        if (wt <= 0)
            continue;
        int64_t row = c->n;
        key_decode(batch_key(b, i), r->types, r->ncol, c, 0, row);
        for (int j = 0; j < r->ncol; j++)
            if (c->col[j].s && !vec_is_null(&c->col[j], row)) {
                Str *s = &c->col[j].s[row];
                s->p = arena_strndup(a, s->p, s->n);
            }
        c->w[row] = 1;
        c->n++;
        for (int64_t d = 1; d < wt; d++) {
            chunk_append_row(c, c, row);
            c->w[c->n - 1] = 1;
            if (unlikely(d % 4096 == 0) && budget_stop())
                break;
        }
        if (unlikely(i % 4096 == 0) && budget_stop())
            break; /* oneshot_run reports it */
    }
    batch_unref(b);
    return c;
}

/* The presented result of relation r now. */
static void present(Runtime *rt, const Relation *r, QResult *out)
{
    Arena *a = arena_new(1 << 16);
    Chunk *all = collect(rt, r, a);
    int64_t *ix = sl_malloc(sizeof(int64_t) * (size_t)(all->n + 1));
    for (int64_t i = 0; i < all->n; i++)
        ix[i] = i;
    SortCtx sc = {all, r};
    if (r->norder)
        qsort_r(ix, (size_t)all->n, sizeof(int64_t), cmp_rows, &sc);
    int64_t from = r->offset > 0 ? r->offset : 0, to = all->n;
    if (from > to)
        from = to;
    if (r->limit >= 0 && from + r->limit < to) {
        to = from + r->limit;
        /* WITH TIES: and the rows tying with the last one */
        while (r->with_ties && to > from && to < all->n && !cmp_keys(&sc, ix[to - 1], ix[to]))
            to++;
    }
    int nvis = r->ncol - r->nhidden;
    out->a = a;
    out->ncol = nvis;
    out->colnames = arena_alloc(a, sizeof(char *) * (size_t)(nvis + 1));
    out->types = arena_alloc(a, sizeof(SqlType) * (size_t)(nvis + 1));
    for (int j = 0; j < nvis; j++) {
        out->colnames[j] = arena_strndup(a, r->colnames[j], strlen(r->colnames[j]));
        out->types[j] = r->types[j];
    }
    Chunk *res = chunk_new(a, nvis, out->types, to - from ? to - from : 1);
    Chunk view = *all;
    view.ncol = nvis; /* the visible prefix of each row */
    for (int64_t i = from; i < to; i++)
        chunk_append_row(res, &view, ix[i]);
    out->rows = res;
    sl_free(ix);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

int oneshot_run(const char *prelude, const char *select_sql, const QInput *in, int nin,
                int nsteps, const Chunk *const *steps, int workers, QStepFn after, void *arg,
                QResult *out, Err *err)
{
    memset(out, 0, sizeof(*out));
    TableDecl *decl = sl_calloc((size_t)(nin ? nin : 1), sizeof(TableDecl));
    for (int i = 0; i < nin; i++)
        decl[i] = (TableDecl){in[i].name, in[i].ncol, in[i].colnames, in[i].types,
                              in[i].append_only, in[i].has_time, in[i].time_col};
    Buf prog = BUF_INIT;
    int skip = 1; /* lines before the query's first */
    if (prelude) {
        buf_printf(&prog, "%s;\n", prelude);
        skip += count_lines(prelude) + 1;
    }
    buf_printf(&prog, "CREATE MATERIALIZED VIEW " QUERY_VIEW " AS\n%s", select_sql);
    Circuit *c = NULL;
    int rc = circuit_compile_with(buf_cstr(&prog), decl, nin, CC_PRESENT, &c, err);
    buf_free(&prog);
    sl_free(decl);
    if (rc) {
        if (err->line > skip)
            err->line -= skip;
        return rc;
    }
    int qrel = circuit_find_rel(c, QUERY_VIEW);
    if (qrel < 0 || c->rels[qrel].is_table || qrel != c->nrels - 1) {
        circuit_free(c);
        return err_set(err, SL_ESEMANTIC, "the query must be a single SELECT");
    }
    if (workers < 1)
        workers = 1;
    if (spmd && workers < net_hosts())
        workers = net_hosts();
    Runtime *rt = spmd ? rt_new_part(c, workers, net_host(), net_hosts()) : rt_new(c, workers);
    int first = rt_first_worker(rt), nl = rt_workers(rt);
    Arena *pa = arena_new(4096);
    for (int s = 0; s < nsteps && !rc; s++) {
        arena_reset(pa);
        for (int i = 0; i < nin; i++) {
            const Chunk *ch = steps[s * nin + i];
            if (!ch || ch->n == 0)
                continue;
            /* split the rows evenly: every worker feeds its share */
            int64_t n = ch->n, per = (n + workers - 1) / workers;
            for (int w = first; w < first + nl; w++) {
                int64_t st = (int64_t)w * per;
                if (st >= n)
                    break;
                Piece *pc = arena_zalloc(pa, sizeof(Piece));
                pc->chunk = chunk_slice(pa, ch, st, st + per > n ? n - st : per);
                rt_set_input(rt, w - first, i, pc);
            }
        }
        rc = rt_step(rt, err);
        if (spmd)
            rc = agree(rc, err);
        if (!rc && after && s < nsteps - 1) {
            QResult now;
            present(rt, &c->rels[qrel], &now);
            rc = after(arg, s, &now);
            qresult_free(&now);
        }
    }
    if (!rc)
        present(rt, &c->rels[qrel], out);
    if (!rc && budget_stop()) { /* the result may be cut short */
        qresult_free(out);
        rc = budget_error(err);
    }
    rt_free(rt);
    arena_free(pa);
    circuit_free(c);
    return rc;
}

int oneshot_query(const char *select_sql, const QInput *in, int nin, int workers, QResult *out,
                  Err *err)
{
    const Chunk **steps = sl_calloc((size_t)(nin ? nin : 1), sizeof(Chunk *));
    for (int i = 0; i < nin; i++)
        steps[i] = in[i].rows;
    int rc = oneshot_run(NULL, select_sql, in, nin, 1, steps, workers, NULL, NULL, out, err);
    sl_free(steps);
    return rc;
}

static QueryLimits limits = {30, (int64_t)1 << 30};

void oneshot_set_limits(const QueryLimits *l) { limits = *l; }

QueryLimits oneshot_limits(void) { return limits; }

void qresult_free(QResult *r)
{
    if (r->a)
        arena_free(r->a);
    memset(r, 0, sizeof(*r));
}

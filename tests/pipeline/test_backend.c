/*
 * tests/pipeline/test_backend.c - the local step backend (pipeline/
 * backend.h) does what the controller relies on, for one process: a step
 * over the input set on any worker, the step's changes of a watched view,
 * a table's contents, the current row of a PRIMARY KEY, figures, a reset
 * to fresh workers; and backend_open refuses more hosts than workers.
 * (The distributed backend runs in tests/e2e/test_scaleout.py.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#if __has_include("sql/sql.h")
#include "sql/sql.h"
#endif
#include "pipeline/backend.h"
#include "runtime/exchange.h"
#include "zset/key.h"

static const char *const program =
    "CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, v BIGINT NOT NULL)\n"
    "  WITH ('materialized' = 'true');\n"
    "CREATE MATERIALIZED VIEW s AS SELECT SUM(v) AS total, COUNT(*) AS n FROM t;\n";

typedef struct Fixture {
    Circuit *c;
    Connectors cs;
    Backend *be;
    Arena *a;
    int t, s;
} Fixture;

static void open_fixture(Fixture *f, int workers)
{
    Err err = {0};
    memset(f, 0, sizeof(*f));
    assert_int_equal(circuit_compile(program, &f->c, &err), 0);
    PipelineOpts o = {.workers = workers, .progress = 0};
    f->be = backend_open(f->c, &o, &f->cs, &err);
    assert_non_null(f->be);
    f->a = arena_new(1 << 16);
    f->t = circuit_find_rel(f->c, "t");
    f->s = circuit_find_rel(f->c, "s");
    assert_true(f->t >= 0 && f->s >= 0);
}

static void close_fixture(Fixture *f)
{
    f->be->ops->stop(f->be);
    f->be->ops->free(f->be);
    connectors_close(&f->cs);
    arena_free(f->a);
    circuit_free(f->c);
}

/* Rows (id, v) of t, weight w each, as one piece. */
static Piece *rows(Fixture *f, const int64_t *ids, const int64_t *vs, int n, int64_t w)
{
    const Relation *r = &f->c->rels[f->t];
    Chunk *ch = chunk_new(f->a, r->ncol, r->types, n);
    for (int i = 0; i < n; i++) {
        ch->col[0].i[i] = ids[i];
        ch->col[1].i[i] = vs[i];
        ch->w[i] = w;
    }
    ch->n = n;
    Piece *pc = arena_zalloc(f->a, sizeof(*pc));
    pc->chunk = ch;
    return pc;
}

/* The weighted row count of buf's xrec records. */
static int64_t xrec_rows(const Buf *b)
{
    size_t pos = 0;
    XRec x;
    int64_t n = 0;
    while (xrec_next(b, &pos, &x))
        n += x.w;
    return n;
}

static void test_local_backend_steps_on_any_worker_and_shows_every_worker(void **state)
{
    (void)state;
    Fixture f;
    open_fixture(&f, 3);
    Backend *be = f.be;
    assert_int_equal(be->hosts, 1);
    assert_int_equal(be->workers, 3);
    assert_int_equal(be_first_worker(be, 1), 3);
    assert_int_equal(be->ops->host_stats(be, NULL), 0); /* nothing to show per host */
    assert_false(be->ops->gone(be));
    be->ops->watch(be, f.s, true);

    /* input on the last worker only: rows reach the workers owning them */
    int64_t ids[] = {1, 2, 3, 4, 5}, vs[] = {10, 20, 30, 40, 50};
    be->ops->set_input(be, 2, f.t, rows(&f, ids, vs, 5, 1));
    Err err = {0};
    assert_int_equal(be->ops->step(be, false, &err), 0);
    assert_false(be->ops->rolled_back(be));
    assert_int_equal(be_steps(be), 1);

    Buf out = BUF_INIT;
    be->ops->contents(be, f.t, &out);
    assert_int_equal(xrec_rows(&out), 5);
    buf_reset(&out);
    be->ops->contents(be, f.s, &out);
    assert_int_equal(xrec_rows(&out), 1);

    BatchBuilder *bb = bb_new();
    be->ops->changes(be, f.s, bb);
    Batch *b = bb_finish(bb);
    assert_int_equal(b->n, 1); /* the view's one row, inserted */
    batch_unref(b);

    int64_t ch = 0, net = 0;
    be->ops->rel_figures(be, f.t, &ch, &net);
    assert_int_equal(net, 5);
    assert_true(be->ops->state_bytes(be) > 0);

    /* the current row of a key, wherever it lives; none for a missing key */
    const Relation *r = &f.c->rels[f.t];
    Buf k = BUF_INIT;
    Piece *probe = rows(&f, (int64_t[]){4, 9}, (int64_t[]){0, 0}, 2, 1);
    key_encode(probe->chunk, r->pk, r->npk, 0, &k);
    assert_non_null(be->ops->lookup(be, r->node, k.p, k.n, f.a));
    buf_reset(&k);
    key_encode(probe->chunk, r->pk, r->npk, 1, &k);
    assert_null(be->ops->lookup(be, r->node, k.p, k.n, f.a));
    buf_free(&k);

    /* a reset gives fresh, empty workers */
    be->ops->reset(be);
    buf_reset(&out);
    be->ops->contents(be, f.t, &out);
    assert_int_equal(xrec_rows(&out), 0);
    assert_int_equal(be->ops->restore(be, 0, "[]", 3, &err), 0); /* no other host */
    buf_free(&out);
    close_fixture(&f);
}

static void test_more_hosts_than_workers_is_refused(void **state)
{
    (void)state;
    Circuit *c = NULL;
    Connectors cs;
    Err err = {0};
    assert_int_equal(circuit_compile(program, &c, &err), 0);
    PipelineOpts o = {.workers = 2, .hosts = 3};
    assert_null(backend_open(c, &o, &cs, &err));
    assert_int_equal(err.code, SL_ECONFIG);
    assert_non_null(strstr(err.msg, "3 hosts need at least 3 workers"));
    circuit_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_backend_steps_on_any_worker_and_shows_every_worker),
        cmocka_unit_test(test_more_hosts_than_workers_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

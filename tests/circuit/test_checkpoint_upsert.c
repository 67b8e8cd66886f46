/*
 * tests/circuit/test_checkpoint_upsert.c - checkpoints of a PRIMARY KEY
 * table and the operators over it.
 *
 * The harness (harness.h) feeds plain tables only, so the upsert operator's
 * save/load is proven here: a PK table, materialized, with views over it
 * (a copy, a GROUP BY with MIN/MAX, a global aggregate, a DISTINCT and a
 * self-join) gets a random stream of inserts (new keys and overwrites) and
 * deletes by key (of present and absent keys). The run is repeated with a
 * save/load restart before the first step and after every third step;
 * after every step the views must hold byte-identical contents in both
 * runs, the table must equal a plain C model of PRIMARY KEY semantics, and
 * 1 and 2 workers must agree. Also: a checkpoint of an unchanged table
 * reuses its batch, and every stateful operator rejects malformed state
 * with SL_EIO.
 */
#include "harness.h"

#define NKEYS 12
#define NSTEPS 90

static const char *const program =
    "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR, v INT)\n"
    "  WITH ('materialized' = 'true');\n"
    "CREATE MATERIALIZED VIEW cp AS SELECT id, name, v FROM t WHERE v IS NULL OR v > -3;\n"
    "CREATE MATERIALIZED VIEW g AS\n"
    "  SELECT name, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM t GROUP BY name;\n"
    "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s, MAX(name) AS m FROM t;\n"
    "CREATE MATERIALIZED VIEW d AS SELECT DISTINCT name FROM t;\n"
    "CREATE MATERIALIZED VIEW j AS\n"
    "  SELECT a.id AS x, b.id AS y FROM t AS a JOIN t AS b ON a.name = b.name;\n";

static const char *const views[] = {"t", "cp", "g", "tot", "d", "j"};
#define NVIEWS ((int)ARRAY_LEN(views))

static const char *const names[] = {"a", "b", "c", "dd"};

/* One change of the stream: insert (w = 1, replaces the key's row) or
   delete by key (w = -1, name and v arbitrary). */
typedef struct Change {
    int64_t id, v;
    int name; /* index into names, -1 = NULL */
    bool vnull;
    int64_t w;
} Change;

typedef struct Stream {
    Change *c;
    int64_t n;
    int64_t size[NSTEPS]; /* changes per step */
} Stream;

static uint64_t rnd(uint64_t *st, uint64_t n)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (*st >> 33) % n;
}

static Stream make_stream(uint64_t seed)
{
    Stream s = {0};
    uint64_t st = seed;
    for (int k = 0; k < NSTEPS; k++) {
        s.size[k] = k % 7 == 3 ? 0 : (int64_t)rnd(&st, 10);
        s.n += s.size[k];
    }
    s.c = sl_calloc((size_t)s.n + 1, sizeof(Change));
    for (int64_t i = 0; i < s.n; i++) {
        Change *c = &s.c[i];
        c->id = (int64_t)rnd(&st, NKEYS);
        c->name = (int)rnd(&st, ARRAY_LEN(names) + 1) - 1;
        c->vnull = rnd(&st, 10) == 0;
        c->v = (int64_t)rnd(&st, 30) - 5;
        c->w = rnd(&st, 100) < 65 ? 1 : -1;
    }
    return s;
}

/* Fill row r of c (t's columns) from ch. */
static void put_row(Chunk *c, int64_t r, const Change *ch)
{
    c->col[0].i[r] = ch->id;
    if (ch->name < 0)
        vec_set_null(&c->col[1], r);
    else
        c->col[1].s[r] = (Str){names[ch->name], (uint32_t)strlen(names[ch->name])};
    if (ch->vnull)
        vec_set_null(&c->col[2], r);
    else
        c->col[2].i[r] = ch->v;
    c->w[r] = ch->w;
}

/* Give step k's changes ch[0..n) to the W workers as the pipeline does: in
   W contiguous ranges, worker 0 the first. */
static void set_input(Runtime *rt, const Circuit *c, int rel, const Change *ch, int64_t n,
                      Arena *a)
{
    const Relation *r = &c->rels[rel];
    int W = rt_workers(rt);
    for (int w = 0; w < W; w++) {
        int64_t lo = n * w / W, hi = n * (w + 1) / W;
        if (lo == hi) {
            rt_set_input(rt, w, rel, NULL);
            continue;
        }
        Chunk *k = chunk_new(a, r->ncol, r->types, hi - lo);
        for (int64_t i = lo; i < hi; i++)
            put_row(k, k->n++, &ch[i]);
        Piece *p = arena_zalloc(a, sizeof(Piece));
        p->chunk = k;
        rt_set_input(rt, w, rel, p);
    }
}

/* Save every operator of every worker, free rt, load into a new runtime. */
static Runtime *restart(const Circuit *c, Runtime *rt)
{
    int W = rt_workers(rt), nn = c->nnodes;
    int64_t steps = rt_steps(rt);
    BatchList *saved = sl_calloc((size_t)W * (size_t)nn, sizeof(BatchList));
    for (int w = 0; w < W; w++)
        for (int n = 0; n < nn; n++)
            assert_int_equal(rt_save(rt, w, n, &saved[w * nn + n]), 0);
    rt_free(rt);
    Runtime *nr = h_rt_new(c, W);
    rt_set_steps(nr, steps);
    for (int w = 0; w < W; w++)
        for (int n = 0; n < nn; n++) {
            Err err = {0};
            BatchList *l = &saved[w * nn + n];
            if (rt_load(nr, w, n, l->b, l->n, &err))
                fail_msg("load of node %d, worker %d: %s", n, w, err.msg);
        }
    for (int i = 0; i < W * nn; i++)
        batchlist_free(&saved[i]);
    sl_free(saved);
    return nr;
}

/* The PRIMARY KEY model after applying ch[0..n): the table's contents,
   encoded as the engine encodes rows. */
typedef struct Model {
    bool present[NKEYS];
    Change row[NKEYS];
} Model;

static void model_apply(Model *m, const Change *ch, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        m->present[ch[i].id] = ch[i].w > 0;
        m->row[ch[i].id] = ch[i];
    }
}

static HCanon model_canon(const Model *m, const Relation *r)
{
    Arena *a = arena_new(4096);
    Chunk *k = chunk_new(a, r->ncol, r->types, NKEYS);
    HCanon cn = {0};
    Buf b = {0};
    cn.e = sl_calloc(NKEYS, sizeof(HEnc));
    for (int id = 0; id < NKEYS; id++) {
        if (!m->present[id])
            continue;
        Change ch = m->row[id];
        ch.w = 1;
        put_row(k, k->n, &ch);
        buf_reset(&b);
        key_encode_row(k, k->n++, &b);
        uint8_t *p = sl_malloc(b.n);
        memcpy(p, b.p, b.n);
        cn.e[cn.n++] = (HEnc){p, b.n, 1};
    }
    qsort(cn.e, (size_t)cn.n, sizeof(HEnc), h_enc_cmp);
    buf_free(&b);
    arena_free(a);
    return cn;
}

/* Every key's current row as op_upsert_row has it (in the map or, spilled,
   in cold) equals the model's. */
static void check_lookups(const Circuit *c, Runtime *rt, const Model *m, int step)
{
    const Relation *r = &c->rels[circuit_find_rel(c, "t")];
    const CNode *n = c->nodes[r->node];
    Arena *a = arena_new(4096);
    Buf kb = {0}, rb = {0};
    for (int id = 0; id < NKEYS; id++) {
        Change ch = m->row[id];
        ch.id = id;
        Chunk *k = chunk_new(a, r->ncol, r->types, 1);
        put_row(k, k->n++, &ch);
        buf_reset(&kb);
        buf_reset(&rb);
        key_encode(k, n->pk, n->npk, 0, &kb);
        key_encode_row(k, 0, &rb);
        uint32_t len = 0;
        int w = op_route(kb.p, kb.n, rt_workers(rt));
        const uint8_t *row = op_upsert_row(rt_op(rt, w, r->node), kb.p, kb.n, &len);
        if (!m->present[id] ? row != NULL
                            : !row || len != rb.n || memcmp(row, rb.p, rb.n))
            fail_msg("step %d: op_upsert_row of key %d differs from the model", step, id);
    }
    buf_free(&kb);
    buf_free(&rb);
    arena_free(a);
}

/* Run the stream on W workers, restarting from a checkpoint before the
   first step and after every third step when restarts is set. Contents of
   every view after every step go to out[step * NVIEWS + view]. */
static void run(const Circuit *c, const Stream *s, int W, bool restarts, HCanon *out)
{
    int rel = circuit_find_rel(c, "t");
    assert_true(rel >= 0);
    Runtime *rt = h_rt_new(c, W);
    Model m = {0};
    int64_t pos = 0;
    if (restarts)
        rt = restart(c, rt);
    for (int k = 0; k < NSTEPS; k++) {
        Arena *a = arena_new(4096);
        Err err = {0};
        set_input(rt, c, rel, s->c + pos, s->size[k], a);
        if (rt_step(rt, &err))
            fail_msg("step %d failed: %s", k, err.msg);
        arena_free(a);
        model_apply(&m, s->c + pos, s->size[k]);
        pos += s->size[k];
        char msg[1400];
        if (!h_spill_all(msg, sizeof(msg)))
            fail_msg("step %d: %s", k, msg);
        if (h_spill) /* the table's rows and the contents went to files */
            for (int w = 0; w < W; w++) {
                OpMem um = {0}, sm = {0};
                op_mem(rt_op(rt, w, c->rels[rel].node), &um);
                op_mem(rt_op(rt, w, c->rels[rel].sink), &sm);
                if (um.rows > 0 && (!um.disk_bytes || !sm.disk_bytes))
                    fail_msg("step %d, worker %d: the table's rows or contents are not on disk "
                             "(%zu, %zu bytes)", k, w, um.disk_bytes, sm.disk_bytes);
            }
        if (restarts && k % 3 == 1)
            rt = restart(c, rt);
        check_lookups(c, rt, &m, k);
        for (int v = 0; v < NVIEWS; v++) {
            int vr = circuit_find_rel(c, views[v]);
            out[k * NVIEWS + v] = h_collect(rt, c->rels[vr].sink);
        }
        HCanon want = model_canon(&m, &c->rels[rel]);
        if (!h_canon_eq(&out[k * NVIEWS], &want))
            fail_msg("%d worker(s)%s, step %d: table t differs from the PRIMARY KEY model", W,
                     restarts ? " with restarts" : "", k);
        h_canon_free(&want);
    }
    rt_free(rt);
}

static void free_canons(HCanon *cs, int n)
{
    for (int i = 0; i < n; i++)
        h_canon_free(&cs[i]);
}

static void test_pk_table_views_are_identical_with_and_without_restarts(void **state)
{
    (void)state;
    Circuit *c;
    Err err = {0};
    if (circuit_compile(program, &c, &err))
        fail_msg("compile error at %d:%d: %s", err.line, err.col, err.msg);
    Stream s = make_stream(0x5eedu);
    const int n = NSTEPS * NVIEWS;
    HCanon *first = sl_calloc((size_t)n, sizeof(HCanon));
    HCanon *plain = sl_calloc((size_t)n, sizeof(HCanon));
    HCanon *restored = sl_calloc((size_t)n, sizeof(HCanon));
    int64_t overwrites = 0, deletes = 0;
    Model m = {0};
    for (int64_t i = 0; i < s.n; i++) { /* the stream covers both cases */
        overwrites += s.c[i].w > 0 && m.present[s.c[i].id];
        deletes += s.c[i].w < 0 && m.present[s.c[i].id];
        model_apply(&m, &s.c[i], 1);
    }
    assert_true(overwrites > 20 && deletes > 20);
    for (int W = 1; W <= 2; W++) {
        run(c, &s, W, false, plain);
        run(c, &s, W, true, restored);
        for (int k = 0; k < NSTEPS; k++)
            for (int v = 0; v < NVIEWS; v++) {
                int i = k * NVIEWS + v;
                if (!h_canon_eq(&plain[i], &restored[i]))
                    fail_msg("%d worker(s), step %d: view %s differs after restarts", W, k,
                             views[v]);
                if (W == 1)
                    continue;
                if (!h_canon_eq(&first[i], &plain[i]))
                    fail_msg("step %d: view %s differs between 1 and 2 workers", k, views[v]);
            }
        if (W == 1) {
            memcpy(first, plain, sizeof(HCanon) * (size_t)n);
            memset(plain, 0, sizeof(HCanon) * (size_t)n);
        } else {
            free_canons(plain, n);
        }
        free_canons(restored, n);
    }
    int last = (NSTEPS - 1) * NVIEWS;
    assert_true(first[last].n > 0); /* the table is not empty at the end */
    free_canons(first, n);
    sl_free(first);
    sl_free(plain);
    sl_free(restored);
    sl_free(s.c);
    circuit_free(c);
}

/* The same with the memory budget at one byte (h_spill): after every step
   the table's rows move into the upsert's cold trace and the views'
   contents into their sinks' cold traces, all to files; the next steps
   read back the keys they touch, lookups and the views' contents read
   cold, and restarts save and load them (op_upsert.c, op_sink.c,
   "Spilling"). */
static void test_pk_table_views_with_every_row_spilled_are_identical(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    h_spill_setup(true);
    test_pk_table_views_are_identical_with_and_without_restarts(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(after.misses > before.misses);
    h_spill_setup(false);
}

static void test_checkpoint_of_unchanged_pk_table_reuses_its_batch(void **state)
{
    (void)state;
    Circuit *c;
    Err err = {0};
    assert_int_equal(circuit_compile(program, &c, &err), 0);
    int rel = circuit_find_rel(c, "t");
    int node = c->rels[rel].node; /* the upsert operator */
    Runtime *rt = rt_new(c, 1);
    Stream s = make_stream(7);
    Arena *a = arena_new(4096);
    set_input(rt, c, rel, s.c, 8, a);
    assert_int_equal(rt_step(rt, &err), 0);
    arena_free(a);
    BatchList l1 = {0}, l2 = {0}, l3 = {0};
    assert_int_equal(rt_save(rt, 0, node, &l1), 0);
    assert_int_equal(rt_save(rt, 0, node, &l2), 0);
    assert_int_equal(l1.n, 1);
    assert_int_equal(l2.n, 1);
    assert_ptr_equal(l1.b[0], l2.b[0]);
    assert_true(l1.b[0]->n > 0);
    assert_int_equal(rt_step(rt, &err), 0); /* no input: unchanged */
    batchlist_free(&l2);
    assert_int_equal(rt_save(rt, 0, node, &l2), 0);
    assert_ptr_equal(l1.b[0], l2.b[0]);
    a = arena_new(4096);
    Change ins = {.id = 0, .v = 1000, .name = 0, .w = 1}; /* no key holds v = 1000 yet */
    set_input(rt, c, rel, &ins, 1, a);
    assert_int_equal(rt_step(rt, &err), 0);
    arena_free(a);
    assert_int_equal(rt_save(rt, 0, node, &l3), 0);
    assert_ptr_not_equal(l1.b[0], l3.b[0]); /* l1 still holds the old one */
    batchlist_free(&l1);
    batchlist_free(&l2);
    batchlist_free(&l3);
    rt_free(rt);
    sl_free(s.c);
    circuit_free(c);
}

/* Load bs[0..n) into node on worker 0 of a fresh runtime; its result. */
static int load_fresh(const Circuit *c, int node, Batch *const *bs, int n)
{
    Runtime *rt = rt_new(c, 1);
    Err err = {0};
    int rc = rt_load(rt, 0, node, bs, n, &err);
    rt_free(rt);
    return rc;
}

static void test_every_stateful_operator_rejects_malformed_state(void **state)
{
    (void)state;
    Circuit *c;
    Err err = {0};
    assert_int_equal(circuit_compile(program, &c, &err), 0);
    BatchBuilder *bb = bb_new();
    bb_add(bb, (const uint8_t *)"bogus", 5, NULL, 0, 3);
    Batch *bogus = bb_finish(bb);
    bb = bb_new();
    bb_add(bb, (const uint8_t *)"k", 1, (const uint8_t *)"v", 1, 2);
    Batch *weighted = bb_finish(bb);
    Batch *three[3] = {bogus, bogus, bogus};
    Runtime *rt = rt_new(c, 1);
    int checked = 0;
    for (int node = 0; node < c->nnodes; node++) {
        if (!rt_stateful(rt, node))
            continue;
        checked++;
        assert_int_equal(load_fresh(c, node, NULL, 0), SL_EIO);
        assert_int_equal(load_fresh(c, node, &bogus, 1), SL_EIO);
        assert_int_equal(load_fresh(c, node, &weighted, 1), SL_EIO);
        assert_int_equal(load_fresh(c, node, three, 3), SL_EIO);
    }
    assert_true(checked >= 7); /* upsert, 5 sinks, aggregates, distinct, join */
    rt_free(rt);
    batch_unref(bogus);
    batch_unref(weighted);
    circuit_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pk_table_views_are_identical_with_and_without_restarts),
        cmocka_unit_test(test_pk_table_views_with_every_row_spilled_are_identical),
        cmocka_unit_test(test_checkpoint_of_unchanged_pk_table_reuses_its_batch),
        cmocka_unit_test(test_every_stateful_operator_rejects_malformed_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/circuit/test_watermark.c - watermarks (circuit/watermark.h).
 *
 * The property harness feeds random inserts and deletes, which a watermark
 * would rightly drop as late, so watermarks are proven here on streams in
 * time order (each row at most half the lateness behind the largest before
 * it: never late, whatever the step boundaries; late-drop in general
 * depends on arrival order and steps, docs/streaming.md):
 *   - propagation: projections (column + constant), TUMBLE and HOP bounds,
 *     joins on the time column (the lesser watermark), DISTINCT; none for
 *     other expressions;
 *   - the same integrated output for one step, one row per step and random
 *     small steps, on 1, 2 and 4 workers, with restarts from checkpoints
 *     (some onto another worker count), equal to a plain C count per window;
 *     'emit_final' holding exactly the windows the final watermark closed;
 *     no row late; the state of the TUMBLE aggregate, of a HOP aggregate
 *     with MAX, of DISTINCT, of a join on the time column and of the
 *     emit_final hold bounded by the watermarks after every step;
 *   - late rows: dropped and counted, the watermark monotonic, both kept
 *     across a restart onto another worker count.
 */
#include "harness.h"

#include "circuit/watermark.h"

#define SEC 1000000LL
#define NROWS 300

static const char *const program =
    "CREATE TABLE t (id INT NOT NULL, v INT, ts TIMESTAMP LATENESS INTERVAL '10' SECOND);\n"
    "CREATE TABLE u (k INT, ts TIMESTAMP);\n"
    "LATENESS u.ts INTERVAL '30' SECOND;\n"
    "CREATE MATERIALIZED VIEW w AS SELECT window_start, window_end, COUNT(*) AS c, SUM(v) AS s\n"
    "  FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\n"
    "  GROUP BY window_start, window_end;\n"
    "CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_start') AS\n"
    "  SELECT window_start, window_end, COUNT(*) AS c, SUM(v) AS s\n"
    "  FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\n"
    "  GROUP BY window_start, window_end;\n"
    "CREATE MATERIALIZED VIEW p AS SELECT ts + INTERVAL '5' SECOND AS a, v FROM t WHERE v > 0;\n"
    "CREATE MATERIALIZED VIEW j AS SELECT t.ts, u.k FROM t JOIN u ON t.ts = u.ts;\n"
    "CREATE MATERIALIZED VIEW d AS SELECT DISTINCT ts FROM t;\n"
    "CREATE MATERIALIZED VIEW h AS SELECT window_start, COUNT(*) AS c, MAX(v) AS m\n"
    "  FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))\n"
    "  GROUP BY window_start;\n";

static Circuit *compile(void)
{
    Circuit *c = NULL;
    Err err = {0};
    if (circuit_compile(program, &c, &err))
        fail_msg("compile: %s", err.msg);
    return c;
}

static int rel(const Circuit *c, const char *name)
{
    int r = circuit_find_rel(c, name);
    assert_true(r >= 0);
    return r;
}

static void test_watermarks_propagate_through_projections_windows_joins_and_distinct(void **st)
{
    (void)st;
    Circuit *c = compile();
    int64_t relwm[16];
    for (int r = 0; r < c->nrels; r++)
        relwm[r] = WM_NONE;
    relwm[rel(c, "t")] = 125 * SEC;
    relwm[rel(c, "u")] = 100 * SEC;
    int64_t **cols = wm_cols_new(c);
    wm_propagate(c, relwm, cols);
    const int64_t *w = cols[c->rels[rel(c, "w")].node];
    assert_int_equal(w[0], 120 * SEC); /* TUMBLE start of 125 s */
    assert_int_equal(w[1], 180 * SEC); /* ... + 1 minute */
    assert_int_equal(w[2], WM_NONE);   /* an aggregate */
    const int64_t *p = cols[c->rels[rel(c, "p")].node];
    assert_int_equal(p[0], 130 * SEC); /* + 5 s, through a filter */
    assert_int_equal(p[1], WM_NONE);
    assert_int_equal(cols[c->rels[rel(c, "j")].node][0], 100 * SEC); /* the lesser side */
    assert_int_equal(cols[c->rels[rel(c, "j")].node][1], WM_NONE);
    assert_int_equal(cols[c->rels[rel(c, "d")].node][0], 125 * SEC);
    assert_int_equal(cols[c->rels[rel(c, "h")].node][0], 90 * SEC); /* one slide before */
    /* emit_final passes its input's watermarks on */
    const Relation *f = &c->rels[rel(c, "f")];
    assert_int_equal(c->nodes[f->node]->k, OPK_FINAL);
    assert_int_equal(cols[f->node][0], 120 * SEC);
    /* a side without a watermark: none for the join */
    relwm[rel(c, "u")] = WM_NONE;
    wm_propagate(c, relwm, cols);
    assert_int_equal(cols[c->rels[rel(c, "j")].node][0], WM_NONE);
    wm_cols_free(c, cols);
    circuit_free(c);
}

/* Row i of the in-order stream: ts at most 4 s behind the largest before. */
static int64_t ts_of(int64_t i) { return (10 + i * 3 - (i * 7919) % 5) * SEC; }
static int64_t v_of(int64_t i) { return i % 5 - 1; }

static void set_rows(Runtime *rt, const Circuit *c, int64_t lo, int64_t hi, Arena *a)
{
    int t = rel(c, "t"), W = rt_workers(rt);
    const Relation *r = &c->rels[t];
    for (int w = 0; w < W; w++) {
        int64_t l = lo + (hi - lo) * w / W, h = lo + (hi - lo) * (w + 1) / W;
        if (l == h) {
            rt_set_input(rt, w, t, NULL);
            continue;
        }
        Chunk *k = chunk_new(a, r->ncol, r->types, h - l);
        for (int64_t i = l; i < h; i++) {
            int64_t n = k->n++;
            k->col[0].i[n] = i;
            k->col[1].i[n] = v_of(i);
            k->col[2].i[n] = ts_of(i);
            k->w[n] = 1;
        }
        Piece *pc = arena_zalloc(a, sizeof(Piece));
        pc->chunk = k;
        rt_set_input(rt, w, t, pc);
        /* u: the same times, keys i (the join j pairs equal times) */
        const Relation *ru = &c->rels[rel(c, "u")];
        Chunk *ku = chunk_new(a, ru->ncol, ru->types, h - l);
        for (int64_t i = l; i < h; i++) {
            int64_t n = ku->n++;
            ku->col[0].i[n] = i;
            ku->col[1].i[n] = ts_of(i);
            ku->w[n] = 1;
        }
        Piece *pu = arena_zalloc(a, sizeof(Piece));
        pu->chunk = ku;
        rt_set_input(rt, w, rel(c, "u"), pu);
    }
}

/* Pairs (i, k) of rows [0, n) with equal times: the join j's size. */
static int64_t time_pairs(int64_t n)
{
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < n; k++)
            p += ts_of(i) == ts_of(k);
    return p;
}

/* Save every node on every worker, free rt, load into nw workers. */
static Runtime *restart(const Circuit *c, Runtime *rt, int nw)
{
    int W = rt_workers(rt), nn = c->nnodes;
    int64_t steps = rt_steps(rt);
    BatchList *saved = sl_calloc((size_t)W * (size_t)nn, sizeof(BatchList));
    for (int w = 0; w < W; w++)
        for (int n = 0; n < nn; n++)
            assert_int_equal(rt_save(rt, w, n, &saved[w * nn + n]), 0);
    rt_free(rt);
    Runtime *nr = h_rt_new(c, nw);
    rt_set_steps(nr, steps);
    Batch *const *lists[8];
    int counts[8];
    for (int w = 0; w < nw; w++)
        for (int n = 0; n < nn; n++) {
            Err err = {0};
            int rc;
            if (nw == W) {
                rc = rt_load(nr, w, n, saved[w * nn + n].b, saved[w * nn + n].n, &err);
            } else {
                for (int k = 0; k < W; k++) {
                    lists[k] = saved[k * nn + n].b;
                    counts[k] = saved[k * nn + n].n;
                }
                rc = rt_load_split(nr, w, n, lists, counts, W, &err);
            }
            if (rc)
                fail_msg("load of node %d on worker %d: %s", n, w, err.msg);
        }
    for (int i = 0; i < W * nn; i++)
        batchlist_free(&saved[i]);
    sl_free(saved);
    return nr;
}

static int64_t state_rows(Runtime *rt, int node)
{
    int64_t rows = 0;
    for (int w = 0; w < rt_workers(rt); w++) {
        OpMem m;
        op_mem(rt_op(rt, w, node), &m);
        rows += m.rows;
    }
    return rows;
}

static size_t state_bytes(Runtime *rt, int node)
{
    size_t b = 0;
    for (int w = 0; w < rt_workers(rt); w++) {
        OpMem m;
        op_mem(rt_op(rt, w, node), &m);
        b += m.bytes;
    }
    return b;
}

static bool canon_eq(const HCanon *a, const HCanon *b)
{
    if (a->n != b->n)
        return false;
    for (int64_t i = 0; i < a->n; i++)
        if (a->e[i].w != b->e[i].w || h_enc_cmp(&a->e[i], &b->e[i]))
            return false;
    return true;
}

/* The reference: per 1-minute window, COUNT(*) and SUM(v) of rows [0, n);
   only windows starting below `below` (INT64_MAX: all). */
static void check_windows(const HCanon *got, int64_t n, int64_t below)
{
    int64_t nwin = ts_of(n) / (60 * SEC) + 2, *cnt = sl_calloc((size_t)nwin, sizeof(int64_t)),
            *sum = sl_calloc((size_t)nwin, sizeof(int64_t)), want = 0;
    for (int64_t i = 0; i < n; i++) {
        cnt[ts_of(i) / (60 * SEC)]++;
        sum[ts_of(i) / (60 * SEC)] += v_of(i);
    }
    for (int64_t k = 0; k < nwin; k++)
        want += cnt[k] && k * 60 * SEC < below;
    assert_int_equal(got->n, want);
    SqlType ty[4] = {type_make(TK_TIMESTAMP, true), type_make(TK_TIMESTAMP, true),
                     type_make(TK_BIGINT, false), type_make(TK_BIGINT, true)};
    Arena *a = arena_new(4096);
    Chunk *row = chunk_new(a, 4, ty, 1);
    for (int64_t i = 0; i < got->n; i++) {
        key_decode(got->e[i].p, ty, 4, row, 0, 0);
        int64_t k = row->col[0].i[0] / (60 * SEC);
        assert_int_equal(got->e[i].w, 1);
        assert_true(k >= 0 && k < nwin && k * 60 * SEC < below);
        assert_int_equal(row->col[1].i[0], (k + 1) * 60 * SEC);
        assert_int_equal(row->col[2].i[0], cnt[k]);
        assert_int_equal(row->col[3].i[0], sum[k]);
    }
    arena_free(a);
    sl_free(cnt);
    sl_free(sum);
}

/* spill: with the memory budget at one byte (h_spill), every step's end
   moves all the state that can spill to files, the emit_final hold's rows
   among it, and the next steps read back what they touch or release. */
static void run_in_order_stream(bool spill)
{
    Circuit *c = compile();
    int vw = rel(c, "w"), vf = rel(c, "f"), t = rel(c, "t");
    int agg = c->nodes[c->rels[vw].sink]->in[0], fin = c->rels[vf].node;
    assert_int_equal(c->nodes[agg]->k, OPK_AGG);
    int dis = -1, join = -1;
    for (int n = 0; n < c->nnodes; n++) {
        if (c->nodes[n]->k == OPK_DISTINCT)
            dis = n;
        if (c->nodes[n]->k == OPK_JOIN)
            join = n;
    }
    assert_true(dis >= 0 && join >= 0);
    int hagg = c->nodes[c->rels[rel(c, "h")].sink]->in[0];
    assert_int_equal(c->nodes[hagg]->k, OPK_AGG);
    int64_t pairs = time_pairs(NROWS);
    HCanon ref_w = {0}, ref_f = {0};
    bool have_ref = false;
    static const int workers[] = {1, 2, 4};
    for (int cut = 0; cut < 3; cut++)
        for (size_t wi = 0; wi < ARRAY_LEN(workers); wi++) {
            Runtime *rt = h_rt_new(c, workers[wi]);
            uint64_t seed = 77 + (uint64_t)cut;
            int64_t i = 0, steps = 0;
            while (i < NROWS) {
                int64_t n = cut == 0 ? NROWS : cut == 1 ? 1 : 1 + (int64_t)(h_rnd(&seed) % 15);
                if (i + n > NROWS)
                    n = NROWS - i;
                Arena *a = arena_new(1 << 16);
                set_rows(rt, c, i, i + n, a);
                Err err = {0};
                if (rt_step(rt, &err))
                    fail_msg("step: %s", err.msg);
                arena_free(a);
                i += n;
                steps++;
                char msg[1200];
                if (!h_spill_all(msg, sizeof(msg)))
                    fail_msg("%s", msg);
                if (spill) { /* the bounds below are of the state in memory */
                    if (cut > 0 && steps % 37 == 0)
                        rt = restart(c, rt, steps % 74 == 0 ? workers[(wi + 1) % 3] : rt_workers(rt));
                    continue;
                }
                /* O(open windows): the window of the watermark and after */
                assert_true(state_rows(rt, agg) <= 3);
                assert_true(state_rows(rt, fin) <= 3);
                /* DISTINCT and the join keep the rows above the watermarks
                   (10 s: at most 5 rows of t; 30 s: 12 of u), and none of
                   a step's rows below them */
                assert_true(state_rows(rt, dis) <= 8);
                assert_true(state_rows(rt, join) <= 5 + 14);
                /* HOP with MAX: the open windows' groups, and their MAX
                   value sets (bytes: 6.5 KB at most here, 12 KB when the
                   value sets are not cut, the groups' maps included) */
                assert_true(state_rows(rt, hagg) <= 4);
                assert_true(state_bytes(rt, hagg) <= 9000);
                if (cut > 0 && steps % 37 == 0) /* restart, sometimes re-sharded */
                    rt = restart(c, rt, steps % 74 == 0 ? workers[(wi + 1) % 3] : rt_workers(rt));
            }
            int64_t late;
            int64_t wm = rt_watermark(rt, t, &late);
            assert_int_equal(late, 0);
            int64_t mx = 0;
            for (int64_t k = 0; k < NROWS; k++)
                mx = ts_of(k) > mx ? ts_of(k) : mx;
            assert_int_equal(wm, mx - 10 * SEC);
            HCanon gw = h_collect(rt, c->rels[vw].sink), gf = h_collect(rt, c->rels[vf].sink);
            HCanon gj = h_collect(rt, c->rels[rel(c, "j")].sink), gd = h_collect(rt, c->rels[rel(c, "d")].sink);
            int64_t nj = 0;
            for (int64_t k = 0; k < gj.n; k++)
                nj += gj.e[k].w;
            assert_int_equal(nj, pairs);
            int64_t distinct_ts = 0;
            for (int64_t k = 0; k < NROWS; k++) {
                bool seen = false;
                for (int64_t m = 0; m < k; m++)
                    seen = seen || ts_of(m) == ts_of(k);
                distinct_ts += !seen;
            }
            assert_int_equal(gd.n, distinct_ts);
            h_canon_free(&gj);
            h_canon_free(&gd);
            check_windows(&gw, NROWS, INT64_MAX);
            check_windows(&gf, NROWS, (wm / (60 * SEC)) * 60 * SEC); /* closed windows */
            if (!have_ref) {
                ref_w = gw;
                ref_f = gf;
                have_ref = true;
            } else {
                assert_true(canon_eq(&gw, &ref_w));
                assert_true(canon_eq(&gf, &ref_f));
                h_canon_free(&gw);
                h_canon_free(&gf);
            }
            rt_free(rt);
        }
    h_canon_free(&ref_w);
    h_canon_free(&ref_f);
    circuit_free(c);
}

static void test_in_order_stream_gives_one_output_for_any_steps_and_workers(void **st)
{
    (void)st;
    run_in_order_stream(false);
}

/* The same with every held row of the emit_final view spilled after every
   step (watermark.c, "OPK_FINAL"): the windows a watermark closes are read
   back from the cold trace, with the changes the map got since, and the
   output is the same; restarts save and load the spilled rows. */
static void test_in_order_stream_with_the_emit_final_hold_spilled_gives_the_same_output(void **st)
{
    (void)st;
    SpillStats before, after;
    spill_stats(&before);
    int64_t read_back = wm_final_rows_read_back();
    h_spill_setup(true);
    run_in_order_stream(true);
    h_spill_setup(false);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(wm_final_rows_read_back() > read_back);
}

/* One step's rows of t: (worker, id, ts or NULL). */
typedef struct R {
    int w;
    int64_t id, ts;
    bool null;
} R;

static void step_rows(Runtime *rt, const Circuit *c, const R *rows, int n)
{
    int t = rel(c, "t");
    const Relation *r = &c->rels[t];
    Arena *a = arena_new(1 << 12);
    for (int w = 0; w < rt_workers(rt); w++) {
        Chunk *k = chunk_new(a, r->ncol, r->types, n);
        for (int i = 0; i < n; i++) {
            if (rows[i].w != w)
                continue;
            int64_t j = k->n++;
            k->col[0].i[j] = rows[i].id;
            k->col[1].i[j] = 1;
            if (rows[i].null)
                vec_set_null(&k->col[2], j);
            else
                k->col[2].i[j] = rows[i].ts;
            k->w[j] = 1;
        }
        Piece *pc = arena_zalloc(a, sizeof(Piece));
        pc->chunk = k;
        rt_set_input(rt, w, t, k->n ? pc : NULL);
    }
    Err err = {0};
    if (rt_step(rt, &err))
        fail_msg("step: %s", err.msg);
    arena_free(a);
}

static void test_late_rows_are_dropped_counted_and_survive_a_restart(void **st)
{
    (void)st;
    Circuit *c = compile();
    int t = rel(c, "t"), vd = rel(c, "d");
    Runtime *rt = rt_new(c, 2);
    int64_t late;
    assert_int_equal(rt_watermark(rt, t, &late), WM_NONE);
    step_rows(rt, c, (R[]){{0, 1, 100 * SEC, false}, {1, 2, 200 * SEC, false}}, 2);
    assert_int_equal(rt_watermark(rt, t, &late), 190 * SEC);
    assert_int_equal(late, 0);
    step_rows(rt, c,
              (R[]){{0, 3, 150 * SEC, false},  /* below 190 s: late */
                    {1, 4, 195 * SEC, false},  /* not late; the watermark stays */
                    {1, 5, 0, true}},          /* NULL is never late */
              3);
    assert_int_equal(rt_watermark(rt, t, &late), 190 * SEC);
    assert_int_equal(late, 1);
    HCanon d = h_collect(rt, c->rels[vd].sink); /* DISTINCT ts: 100, 200, 195, NULL */
    assert_int_equal(d.n, 4);
    h_canon_free(&d);
    rt = restart(c, rt, 3);
    assert_int_equal(rt_watermark(rt, t, &late), 190 * SEC);
    assert_int_equal(late, 1);
    step_rows(rt, c,
              (R[]){{2, 6, 189 * SEC, false},  /* late against the restored watermark */
                    {0, 7, 300 * SEC, false}},
              2);
    assert_int_equal(rt_watermark(rt, t, &late), 290 * SEC);
    assert_int_equal(late, 2);
    d = h_collect(rt, c->rels[vd].sink);
    assert_int_equal(d.n, 5);
    h_canon_free(&d);
    rt_free(rt);
    circuit_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watermarks_propagate_through_projections_windows_joins_and_distinct),
        cmocka_unit_test(test_in_order_stream_gives_one_output_for_any_steps_and_workers),
        cmocka_unit_test(
            test_in_order_stream_with_the_emit_final_hold_spilled_gives_the_same_output),
        cmocka_unit_test(test_late_rows_are_dropped_counted_and_survive_a_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

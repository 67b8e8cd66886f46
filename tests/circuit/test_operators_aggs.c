/*
 * tests/circuit/test_operators_aggs.c - property tests of the aggregates
 * kept as per-group value multisets (circuit/agg_state.c: STRING_AGG,
 * BIT_AND/OR/XOR, PERCENTILE_CONT/DISC, MODE) and of GROUPING SETS /
 * ROLLUP / CUBE (sql/plan_gsets.c).
 *
 * As in test_operators.c (harness.h): random insertions and deletions
 * (duplicates included, tables drained and refilled) cut into steps four
 * ways on 1, 2 and 4 workers, with restarts from checkpoints that change
 * the worker count; after every step each view's integrated output must
 * equal a plain C reference over the integrated input, and the final
 * contents must be identical across cuts and worker counts.
 */
#include "harness.h"

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})

static Arena *ref_strs; /* the references' STRING_AGG results */

/* The non-NULL values of column col in the rows of group key (gcols). */
static int64_t group_vals(const HRows *t, const int *gcols, int ng, const HRow *key, int col,
                          HVal *out)
{
    int64_t n = 0;
    for (int64_t i = 0; i < t->n; i++) {
        const HRow *r = &t->r[i];
        if ((ng == 0 || h_in_group(r, gcols, ng, key)) && !r->v[col].null)
            out[n++] = r->v[col];
    }
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    const HVal *x = a, *y = b;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_str(const void *a, const void *b)
{
    return h_str_cmp(a, b);
}

/* STRING_AGG over sorted string values (once each when distinct). */
static HVal join_strs(const HVal *v, int64_t n, const char *sep, bool distinct)
{
    if (!n)
        return h_null();
    size_t cap = 1, len = 0;
    for (int64_t i = 0; i < n; i++)
        cap += v[i].n + strlen(sep);
    char *s = arena_alloc(ref_strs, cap);
    for (int64_t i = 0; i < n; i++) {
        if (distinct && i && !h_str_cmp(&v[i], &v[i - 1]))
            continue;
        if (i) {
            memcpy(s + len, sep, strlen(sep));
            len += strlen(sep);
        }
        memcpy(s + len, v[i].s, v[i].n);
        len += v[i].n;
    }
    return h_str(s, (uint32_t)len);
}

/* Multiset aggregates of one group of t (a INT, b INT, s VARCHAR, k INT):
   STRING_AGG(s, ',' ORDER BY s), STRING_AGG(DISTINCT s, '|' ORDER BY s),
   BIT_AND(b), BIT_OR(b), BIT_XOR(b), PERCENTILE_CONT(0.5) (ORDER BY b),
   PERCENTILE_DISC(0.3) (ORDER BY b DESC), MODE() (ORDER BY b), into v. */
static void multiset_aggs(const HRows *t, const int *gc, int ng, const HRow *key, HVal *v)
{
    HVal *sv = sl_malloc(sizeof(HVal) * (size_t)(t->n + 1));
    HVal *bv = sl_malloc(sizeof(HVal) * (size_t)(t->n + 1));
    int64_t ns = group_vals(t, gc, ng, key, 2, sv), nb = group_vals(t, gc, ng, key, 1, bv);
    qsort(sv, (size_t)ns, sizeof(HVal), cmp_str);
    qsort(bv, (size_t)nb, sizeof(HVal), cmp_int);
    v[0] = join_strs(sv, ns, ",", false);
    v[1] = join_strs(sv, ns, "|", true);
    for (int j = 2; j < 8; j++)
        v[j] = h_null();
    if (nb) {
        int64_t band = -1, bor = 0, bxor = 0;
        for (int64_t i = 0; i < nb; i++) {
            band &= bv[i].i;
            bor |= bv[i].i;
            bxor ^= bv[i].i;
        }
        v[2] = h_int(band);
        v[3] = h_int(bor);
        v[4] = h_int(bxor);
        double pos = 0.5 * (double)(nb - 1), lo = floor(pos), hi = ceil(pos);
        double x = (double)bv[(int64_t)lo].i;
        v[5] = h_dbl(x + ((double)bv[(int64_t)hi].i - x) * (pos - lo));
        int64_t row = (int64_t)ceil(0.3 * (double)nb);
        row = row < 1 ? 1 : row;
        v[6] = bv[nb - row]; /* descending order */
        int64_t best = 0, bestn = 0;
        for (int64_t i = 0; i < nb;) {
            int64_t j = i;
            while (j < nb && bv[j].i == bv[i].i)
                j++;
            if (j - i > bestn) {
                bestn = j - i;
                best = i;
            }
            i = j;
        }
        v[7] = bv[best];
    }
    sl_free(sv);
    sl_free(bv);
}

static void ref_ms_grouped(const HRows *tabs, HRows *out, bool second)
{
    HRows keys = {0};
    int gc[] = {0};
    h_group_keys(&tabs[0], gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        HVal v[8];
        multiset_aggs(&tabs[0], gc, 1, &keys.r[g], v);
        if (second)
            h_emit(out, ROW(keys.r[g].v[0], v[5], v[6], v[7]));
        else
            h_emit(out, ROW(keys.r[g].v[0], v[0], v[1], v[2], v[3], v[4]));
    }
    h_rows_free(&keys);
}

static void ref_ms1(const HRows *tabs, HRows *out) { ref_ms_grouped(tabs, out, false); }
static void ref_ms2(const HRows *tabs, HRows *out) { ref_ms_grouped(tabs, out, true); }

static void ref_ms_global(const HRows *tabs, HRows *out)
{
    HVal v[8];
    multiset_aggs(&tabs[0], NULL, 0, NULL, v);
    h_emit(out, ROW(h_int(tabs[0].n), v[0], v[3], v[5], v[7]));
}

/* STRING_AGG(s, '' ORDER BY b DESC, s): b descending, NULL b last (NULL
   is the smallest value), then s. */
static int cmp_b_desc_s(const void *x, const void *y)
{
    const HRow *a = *(const HRow *const *)x, *b = *(const HRow *const *)y;
    if (a->v[1].null != b->v[1].null)
        return a->v[1].null ? 1 : -1;
    if (!a->v[1].null && a->v[1].i != b->v[1].i)
        return a->v[1].i > b->v[1].i ? -1 : 1;
    return h_str_cmp(&a->v[2], &b->v[2]);
}

static void ref_ms_order(const HRows *tabs, HRows *out)
{
    HRows keys = {0};
    int gc[] = {3};
    const HRows *t = &tabs[0];
    h_group_keys(t, gc, 1, &keys);
    const HRow **rs = sl_malloc(sizeof(HRow *) * (size_t)(t->n + 1));
    HVal *sv = sl_malloc(sizeof(HVal) * (size_t)(t->n + 1));
    for (int64_t g = 0; g < keys.n; g++) {
        int64_t n = 0;
        for (int64_t i = 0; i < t->n; i++)
            if (h_in_group(&t->r[i], gc, 1, &keys.r[g]) && !t->r[i].v[2].null)
                rs[n++] = &t->r[i];
        qsort(rs, (size_t)n, sizeof(HRow *), cmp_b_desc_s);
        for (int64_t i = 0; i < n; i++)
            sv[i] = rs[i]->v[2];
        h_emit(out, ROW(keys.r[g].v[0], join_strs(sv, n, "", false)));
    }
    sl_free(rs);
    sl_free(sv);
    h_rows_free(&keys);
}

static void test_multiset_aggregates_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    ref_strs = arena_new(1 << 16);
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT, s VARCHAR, k INT NOT NULL);\n"
               "CREATE MATERIALIZED VIEW ms1 AS SELECT a, STRING_AGG(s, ',' ORDER BY s) AS s1,\n"
               "  STRING_AGG(DISTINCT s, '|' ORDER BY s) AS s2, BIT_AND(b) AS ba,\n"
               "  BIT_OR(b) AS bo, BIT_XOR(b) AS bx FROM t GROUP BY a;\n"
               "CREATE MATERIALIZED VIEW ms2 AS SELECT a,\n"
               "  PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY b) AS pc,\n"
               "  PERCENTILE_DISC(0.3) WITHIN GROUP (ORDER BY b DESC) AS pd,\n"
               "  MODE() WITHIN GROUP (ORDER BY b) AS mo FROM t GROUP BY a;\n"
               "CREATE MATERIALIZED VIEW mg AS SELECT COUNT(*) AS c,\n"
               "  STRING_AGG(s, ',' ORDER BY s) AS s1, BIT_OR(b) AS bo,\n"
               "  PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY b) AS pc,\n"
               "  MODE() WITHIN GROUP (ORDER BY b) AS mo FROM t;\n"
               "CREATE MATERIALIZED VIEW mo AS SELECT k,\n"
               "  STRING_AGG(s, '' ORDER BY b DESC, s) AS so FROM t GROUP BY k;\n",
        .tables = {{"t", 4, {{0, 4, 15}, {-3, 6, 20}, {0, 6, 20}, {0, 3, 0}}}},
        .views = {{"ms1", ref_ms1}, {"ms2", ref_ms2}, {"mg", ref_ms_global}, {"mo", ref_ms_order}},
        .nchanges = 400,
        .seed = 19,
    };
    h_run(&s);
    arena_free(ref_strs);
}

/* ROLLUP(a, k) with COUNT(*), SUM(b), MAX(s), GROUPING(a, k) over
   t (a INT, b INT, s VARCHAR, k INT NOT NULL); cube = the sets of CUBE(a, k). */
static void ref_gsets(const HRows *tabs, HRows *out, bool cube)
{
    static const int sets[4][2] = {{0, 3}, {0, -1}, {-1, -1}, {3, -1}};
    const HRows *t = &tabs[0];
    for (int si = 0; si < (cube ? 4 : 3); si++) {
        int gc[2], ng = 0;
        for (int j = 0; j < 2; j++)
            if (sets[si][j] >= 0)
                gc[ng++] = sets[si][j];
        bool has_a = ng > 0 && gc[0] == 0, has_k = (ng == 2) || (ng == 1 && gc[0] == 3);
        HRows keys = {0};
        if (ng)
            h_group_keys(t, gc, ng, &keys);
        else {
            HRow e;
            memset(&e, 0, sizeof(e));
            h_rows_add(&keys, &e, 1); /* the empty set: one row even over no input */
        }
        for (int64_t g = 0; g < keys.n; g++) {
            int64_t rows = 0, nn = 0, sum = 0;
            HVal mx = h_null();
            for (int64_t i = 0; i < t->n; i++) {
                const HRow *r = &t->r[i];
                if (ng && !h_in_group(r, gc, ng, &keys.r[g]))
                    continue;
                rows++;
                if (!r->v[1].null) {
                    nn++;
                    sum += r->v[1].i;
                }
                if (!r->v[2].null && (mx.null || h_str_cmp(&mx, &r->v[2]) < 0))
                    mx = r->v[2];
            }
            HVal a = has_a ? keys.r[g].v[0] : h_null();
            HVal k = has_k ? keys.r[g].v[ng - 1] : h_null();
            h_emit(out, ROW(a, k, h_int(rows), nn ? h_int(sum) : h_null(), mx,
                            h_int((has_a ? 0 : 2) | (has_k ? 0 : 1))));
        }
        h_rows_free(&keys);
    }
}

static void ref_rollup(const HRows *tabs, HRows *out) { ref_gsets(tabs, out, false); }
static void ref_cube(const HRows *tabs, HRows *out) { ref_gsets(tabs, out, true); }

static void test_grouping_sets_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT, s VARCHAR, k INT NOT NULL);\n"
               "CREATE MATERIALIZED VIEW r AS SELECT a, k, COUNT(*) AS c, SUM(b) AS sb,\n"
               "  MAX(s) AS ms, GROUPING(a, k) AS g FROM t GROUP BY ROLLUP(a, k);\n"
               "CREATE MATERIALIZED VIEW cu AS SELECT a, k, COUNT(*) AS c, SUM(b) AS sb,\n"
               "  MAX(s) AS ms, GROUPING(a, k) AS g FROM t GROUP BY CUBE(a, k);\n",
        .tables = {{"t", 4, {{0, 4, 15}, {-3, 6, 20}, {0, 6, 20}, {0, 3, 0}}}},
        .views = {{"r", ref_rollup}, {"cu", ref_cube}},
        .nchanges = 300,
        .seed = 23,
        .end_empty = true,
    };
    h_run(&s);
}

/* One step of rows a = first + i, b = i % 7 (i < n) into table rel,
   split evenly over W workers; rt_step's result. */
static int agg_step(Runtime *rt, const Circuit *c, int W, int rel, int64_t first, int64_t n,
                    Err *err)
{
    Arena *a = arena_new(1 << 16);
    const Relation *r = &c->rels[rel];
    for (int k = 0; k < W; k++) {
        int64_t lo = n * k / W, hi = n * (k + 1) / W;
        Piece *p = arena_zalloc(a, sizeof(Piece));
        p->chunk = chunk_new(a, r->ncol, r->types, hi - lo);
        for (int64_t i = lo; i < hi; i++) {
            HRow row = {.v = {h_int(first + i), h_int(i % 7)}};
            h_put_row(p->chunk, p->chunk->n++, &row, 1, a);
        }
        rt_set_input(rt, k, rel, p);
    }
    int rc = rt_step(rt, err);
    arena_free(a);
    return rc;
}

static bool canon_equal(const HCanon *x, const HCanon *y)
{
    if (x->n != y->n)
        return false;
    for (int64_t i = 0; i < x->n; i++)
        if (x->e[i].w != y->e[i].w || x->e[i].n != y->e[i].n ||
            memcmp(x->e[i].p, y->e[i].p, x->e[i].n))
            return false;
    return true;
}

/* A step that creates many groups under a small allowance per worker
   (rt_set_step_memory): the aggregates stop part way through folding
   (every 4096 records they ask base/budget.h), so the step allocates at
   most about the allowance rather than every group first; the step is
   undone (each view exactly as before), and run again without a bound it
   gives the same views as a run that was never bounded. */
static void test_an_aggregate_past_the_step_allowance_stops_part_way_and_undoes(void **state)
{
    (void)state;
    Circuit *c = NULL;
    Err err = {0};
    assert_int_equal(circuit_compile("CREATE TABLE t (a INT NOT NULL, b INT NOT NULL);\n"
                                     "CREATE MATERIALIZED VIEW g AS SELECT a, COUNT(*) AS n,\n"
                                     "  SUM(b) AS s FROM t GROUP BY a;\n"
                                     "CREATE MATERIALIZED VIEW m AS SELECT a, MIN(b) AS mb\n"
                                     "  FROM t GROUP BY a;\n",
                                     &c, &err),
                     0);
    int t = circuit_find_rel(c, "t");
    int sinks[2] = {c->rels[circuit_find_rel(c, "g")].sink,
                    c->rels[circuit_find_rel(c, "m")].sink};
    enum { W = 2, FIRST = 1000, MANY = 100000 };
    const int64_t allowance = (int64_t)8 << 20; /* per worker */
    Runtime *rt = rt_new(c, W), *ref = rt_new(c, W);
    assert_int_equal(agg_step(rt, c, W, t, 0, FIRST, &err), 0);
    assert_int_equal(agg_step(ref, c, W, t, 0, FIRST, &err), 0);
    HCanon before[2];
    for (int v = 0; v < 2; v++)
        before[v] = h_collect(rt, sinks[v]);
    rt_set_step_memory(rt, allowance);
    assert_int_not_equal(agg_step(rt, c, W, t, FIRST, MANY, &err), 0);
    assert_non_null(strstr(err.msg, "needs more memory than the limit leaves"));
    err_clear(&err);
    assert_true(rt_rolled_back(rt));
    int node = rt_step_memory_node(rt);
    assert_true(node >= 0 && c->nodes[node]->k == OPK_AGG);
    /* stopped part way: well under what folding every group takes
       (debug build, measured: 137 MB in all without the checks inside the
       folding loops, 55 MB with them; the step's input, exchanged and
       combined before the loops, is most of the rest) */
    int64_t peak = rt_step_memory_peak(rt);
    assert_true(peak < 4 * W * allowance);
    for (int v = 0; v < 2; v++) {
        HCanon now = h_collect(rt, sinks[v]);
        assert_true(canon_equal(&now, &before[v]));
        h_canon_free(&now);
        h_canon_free(&before[v]);
    }
    rt_set_step_memory(rt, 0);
    assert_int_equal(agg_step(rt, c, W, t, FIRST, MANY, &err), 0);
    assert_int_equal(agg_step(ref, c, W, t, FIRST, MANY, &err), 0);
    /* and later steps agree too (groups changed and removed) */
    assert_int_equal(agg_step(rt, c, W, t, FIRST / 2, FIRST, &err), 0);
    assert_int_equal(agg_step(ref, c, W, t, FIRST / 2, FIRST, &err), 0);
    for (int v = 0; v < 2; v++) {
        HCanon x = h_collect(rt, sinks[v]), y = h_collect(ref, sinks[v]);
        assert_int_equal(x.n, FIRST + MANY);
        assert_true(canon_equal(&x, &y));
        h_canon_free(&x);
        h_canon_free(&y);
    }
    rt_free(rt);
    rt_free(ref);
    circuit_free(c);
}

/* The same with the memory budget at one byte (h_spill): after every step
   every aggregate's groups move into its cold trace and to files with the
   value multisets, and the next steps read back the groups they touch
   (op_agg.c, "Spilling"); restarts save and load the spilled groups. */
static void test_aggregates_with_every_group_spilled_match_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    h_spill_setup(true);
    test_multiset_aggregates_match_reference_for_any_steps_and_workers(state);
    test_grouping_sets_match_reference_for_any_steps_and_workers(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(after.misses > before.misses);
    h_spill_setup(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregates_with_every_group_spilled_match_the_reference),
        cmocka_unit_test(test_multiset_aggregates_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_grouping_sets_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_an_aggregate_past_the_step_allowance_stops_part_way_and_undoes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

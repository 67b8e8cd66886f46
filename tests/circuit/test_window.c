/*
 * tests/circuit/test_window.c - property tests of window functions
 * (OPK_WINDOW): ROW_NUMBER, RANK, DENSE_RANK, LAG, LEAD, and COUNT, SUM,
 * AVG, MIN, MAX over default, ROWS and RANGE frames, over partitions or
 * the whole input, over GROUP BY results and computed keys.
 *
 * Each test compiles a SQL program, feeds its table a random stream of
 * insertions and deletions cut into steps in several ways on 1, 2 and 4
 * workers (harness.h), and checks every view's integrated output after
 * every step against winref.h's from-scratch evaluation. Top-k is in
 * test_topk.c.
 */
#include "winref.h"
#include "circuit/pstate.h"

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})

/* t (a INT, b INT, s VARCHAR, f DOUBLE, k BIGINT NOT NULL) */
static const char *const T_DDL =
    "CREATE TABLE t (a INT, b INT, s VARCHAR, f DOUBLE, k BIGINT NOT NULL);\n";
static const Phys T_PH[] = {PHYS_I64, PHYS_I64, PHYS_STR, PHYS_F64, PHYS_I64, PHYS_I64};
#define T_GEN {"t", 5, {{0, 3, 20}, {-3, 6, 20}, {0, 6, 15}, {-6, 9, 20}, {0, 5, 0}}}

/* A window over t's rows. */
static WSpec wspec(int npart, const int *part, int nord, const int *ord, const bool *desc,
                   const int *nulls)
{
    WSpec w = {.npart = npart, .nord = nord, .ncmp = 5, .ph = T_PH};
    for (int i = 0; i < npart; i++)
        w.part[i] = part[i];
    for (int i = 0; i < nord; i++) {
        w.ord[i] = ord[i];
        w.desc[i] = desc ? desc[i] : false;
        w.nf[i] = nulls && nulls[i] ? nulls[i] == 1 : !w.desc[i];
    }
    return w;
}

/* vals[f][r] for functions fs[0..n) over the rows of t. */
static HVal **eval_all(const HRows *t, const WSpec *w, const WFn *fs, int n)
{
    HVal **v = sl_malloc(sizeof(HVal *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        v[i] = sl_calloc((size_t)(t->n + 1), sizeof(HVal));
        wref_eval(t, w, &fs[i], v[i]);
    }
    return v;
}

static void free_all(HVal **v, int n)
{
    for (int i = 0; i < n; i++)
        sl_free(v[i]);
    sl_free(v);
}

/* ---- 1. ranking, LAG and LEAD ---------------------------------------------- */

static void ref_ranks(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(1, (int[]){0}, 1, (int[]){1}, NULL, NULL);
    WFn fs[] = {wf(WIN_ROW_NUMBER, -1, true), wf(WIN_RANK, -1, true), wf(WIN_DENSE_RANK, -1, true)};
    HVal **v = eval_all(t, &w, fs, 3);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[1], x[2], v[0][r], v[1][r], v[2][r]));
    }
    free_all(v, 3);
}

static void ref_lag_lead(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(1, (int[]){0}, 2, (int[]){4, 1}, (bool[]){true, false}, NULL);
    WFn fs[5];
    fs[0] = wf(WIN_LAG, 1, true);
    fs[1] = wf(WIN_LEAD, 1, true);
    fs[1].off = 2;
    fs[1].has_def = true;
    fs[1].def = h_int(-1);
    fs[2] = wf(WIN_LAG, 2, true);
    fs[2].has_def = true;
    fs[2].def = h_str("none", 4);
    fs[3] = wf(WIN_LEAD, 4, true);
    fs[3].off = 0;
    fs[4] = wf(WIN_LAG, 3, true);
    fs[4].off = 3;
    fs[4].def_col = 3;
    HVal **v = eval_all(t, &w, fs, 5);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[4], x[1], v[0][r], v[1][r], v[2][r], v[3][r], v[4][r]));
    }
    free_all(v, 5);
}

/* no PARTITION BY; two windows (ROW_NUMBER in the first) */
static void ref_global_ranks(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w1 = wspec(0, NULL, 2, (int[]){3, 2}, (bool[]){true, false}, (int[]){1, 0});
    WSpec w2 = wspec(0, NULL, 1, (int[]){2}, NULL, NULL);
    WFn f1 = wf(WIN_ROW_NUMBER, -1, true), f2 = wf(WIN_DENSE_RANK, -1, true);
    HVal **v1 = eval_all(t, &w1, &f1, 1), **v2 = eval_all(t, &w2, &f2, 1);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[2], x[3], v1[0][r], v2[0][r]));
    }
    free_all(v1, 1);
    free_all(v2, 1);
}

static void test_ranking_lag_lead_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW wr AS SELECT a, b, s,\n"
             "  ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS rn,\n"
             "  RANK() OVER (PARTITION BY a ORDER BY b) AS rk,\n"
             "  DENSE_RANK() OVER (PARTITION BY a ORDER BY b) AS dr FROM t;\n"
             "CREATE MATERIALIZED VIEW wl AS SELECT a, k, b,\n"
             "  LAG(b) OVER (PARTITION BY a ORDER BY k DESC, b) AS l1,\n"
             "  LEAD(b, 2, -1) OVER (PARTITION BY a ORDER BY k DESC, b) AS l2,\n"
             "  LAG(s, 1, 'none') OVER (PARTITION BY a ORDER BY k DESC, b) AS l3,\n"
             "  LEAD(k, 0) OVER (PARTITION BY a ORDER BY k DESC, b) AS l4,\n"
             "  LAG(f, 3, f) OVER (PARTITION BY a ORDER BY k DESC, b) AS l5 FROM t;\n"
             "CREATE MATERIALIZED VIEW wg AS SELECT s, f,\n"
             "  ROW_NUMBER() OVER (ORDER BY f DESC NULLS FIRST, s) AS rn,\n"
             "  DENSE_RANK() OVER (ORDER BY s) AS dr FROM t;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"wr", ref_ranks}, {"wl", ref_lag_lead}, {"wg", ref_global_ranks}},
        .nchanges = 300,
        .seed = 101,
    };
    h_run(&s);
}

/* ---- 2. aggregates over the default frames ------------------------------------ */

static void ref_cumulative(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(1, (int[]){0}, 1, (int[]){1}, NULL, NULL);
    WFn fs[] = {wf(WIN_SUM, 1, true), wf(WIN_COUNT_STAR, -1, true), wf(WIN_AVG, 1, true),
                wf(WIN_MIN, 2, true), wf(WIN_MAX, 3, true), wf(WIN_COUNT, 2, true)};
    HVal **v = eval_all(t, &w, fs, 6);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[1], v[0][r], v[1][r], v[2][r], v[3][r], v[4][r], v[5][r]));
    }
    free_all(v, 6);
}

static void ref_whole_partition(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec wp = wspec(1, (int[]){0}, 0, NULL, NULL, NULL);
    WSpec wa = wspec(0, NULL, 0, NULL, NULL, NULL);
    WFn fp[] = {wf(WIN_SUM, 4, false), wf(WIN_SUM, 3, false)};
    WFn fa[] = {wf(WIN_COUNT_STAR, -1, false), wf(WIN_MAX, 1, false)};
    HVal **vp = eval_all(t, &wp, fp, 2), **va = eval_all(t, &wa, fa, 2);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[4], vp[0][r], va[0][r], va[1][r], vp[1][r]));
    }
    free_all(vp, 2);
    free_all(va, 2);
}

static void test_aggregates_over_default_frames_match_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW wc AS SELECT a, b,\n"
             "  SUM(b) OVER (PARTITION BY a ORDER BY b) AS sb,\n"
             "  COUNT(*) OVER (PARTITION BY a ORDER BY b) AS c,\n"
             "  AVG(b) OVER (PARTITION BY a ORDER BY b) AS ab,\n"
             "  MIN(s) OVER (PARTITION BY a ORDER BY b) AS ms,\n"
             "  MAX(f) OVER (PARTITION BY a ORDER BY b) AS mf,\n"
             "  COUNT(s) OVER (PARTITION BY a ORDER BY b) AS cs FROM t;\n"
             "CREATE MATERIALIZED VIEW wp AS SELECT a, k, SUM(k) OVER (PARTITION BY a) AS sk,\n"
             "  COUNT(*) OVER () AS n, MAX(b) OVER () AS mb,\n"
             "  SUM(f) OVER (PARTITION BY a) AS sf FROM t;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"wc", ref_cumulative}, {"wp", ref_whole_partition}},
        .nchanges = 300,
        .seed = 102,
    };
    h_run(&s);
}

/* ---- 3. ROWS frames -------------------------------------------------------------- */

static void ref_rows(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(1, (int[]){0}, 1, (int[]){4}, NULL, NULL);
    WFn fs[] = {
        wf_rows(WIN_SUM, 1, FB_PRECEDING, 2, FB_FOLLOWING, 1),
        wf_rows(WIN_MIN, 1, FB_PRECEDING, 1, FB_CURRENT_ROW, 0),
        wf_rows(WIN_MAX, 2, FB_CURRENT_ROW, 0, FB_UNBOUNDED_FOLLOWING, 0),
        wf_rows(WIN_COUNT, 3, FB_UNBOUNDED_PRECEDING, 0, FB_CURRENT_ROW, 0),
        wf_rows(WIN_SUM, 3, FB_FOLLOWING, 1, FB_FOLLOWING, 3),
        wf_rows(WIN_AVG, 1, FB_PRECEDING, 3, FB_PRECEDING, 1),
    };
    HVal **v = eval_all(t, &w, fs, 6);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[4], v[0][r], v[1][r], v[2][r], v[3][r], v[4][r], v[5][r]));
    }
    free_all(v, 6);
}

static void ref_rows2(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(0, NULL, 2, (int[]){1, 2}, (bool[]){true, false}, NULL);
    WFn fs[] = {
        wf_rows(WIN_COUNT_STAR, -1, FB_PRECEDING, 1, FB_FOLLOWING, 1),
        wf_rows(WIN_MAX, 3, FB_UNBOUNDED_PRECEDING, 0, FB_PRECEDING, 2),
        wf_rows(WIN_SUM, 4, FB_UNBOUNDED_PRECEDING, 0, FB_UNBOUNDED_FOLLOWING, 0),
    };
    HVal **v = eval_all(t, &w, fs, 3);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[1], x[2], v[0][r], v[1][r], v[2][r]));
    }
    free_all(v, 3);
}

static void test_rows_frames_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW wrows AS SELECT a, k,\n"
             "  SUM(b) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING)"
             " AS s1,\n"
             "  MIN(b) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
             " AS m1,\n"
             "  MAX(s) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED "
             "FOLLOWING) AS m2,\n"
             "  COUNT(f) OVER (PARTITION BY a ORDER BY k ROWS UNBOUNDED PRECEDING) AS c1,\n"
             "  SUM(f) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING)"
             " AS s2,\n"
             "  AVG(b) OVER (PARTITION BY a ORDER BY k ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING)"
             " AS a1 FROM t;\n"
             "CREATE MATERIALIZED VIEW wrows2 AS SELECT b, s,\n"
             "  COUNT(*) OVER (ORDER BY b DESC, s ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c,\n"
             "  MAX(f) OVER (ORDER BY b DESC, s ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING)"
             " AS m,\n"
             "  SUM(k) OVER (ORDER BY b DESC, s ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED "
             "FOLLOWING) AS sk FROM t;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"wrows", ref_rows}, {"wrows2", ref_rows2}},
        .nchanges = 300,
        .seed = 103,
    };
    h_run(&s);
}

/* ---- 4. RANGE frames with offsets ------------------------------------------------ */

static void ref_range(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w1 = wspec(1, (int[]){0}, 1, (int[]){1}, NULL, NULL);
    WSpec w2 = wspec(1, (int[]){0}, 1, (int[]){1}, (bool[]){true}, NULL);
    WSpec w3 = wspec(0, NULL, 1, (int[]){1}, NULL, NULL);
    WSpec w4 = wspec(0, NULL, 1, (int[]){1}, NULL, (int[]){2});
    WFn f1[] = {wf_range(WIN_SUM, 4, FB_PRECEDING, 2, FB_FOLLOWING, 1),
                wf_range(WIN_COUNT, 1, FB_UNBOUNDED_PRECEDING, 0, FB_PRECEDING, 1)};
    WFn f2 = wf_range(WIN_COUNT_STAR, -1, FB_PRECEDING, 1, FB_CURRENT_ROW, 0);
    WFn f3 = wf_range(WIN_MAX, 4, FB_CURRENT_ROW, 0, FB_FOLLOWING, 2);
    WFn f4 = wf_range(WIN_MIN, 2, FB_FOLLOWING, 1, FB_FOLLOWING, 3);
    HVal **v1 = eval_all(t, &w1, f1, 2), **v2 = eval_all(t, &w2, &f2, 1);
    HVal **v3 = eval_all(t, &w3, &f3, 1), **v4 = eval_all(t, &w4, &f4, 1);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0], x[1], v1[0][r], v2[0][r], v3[0][r], v4[0][r], v1[1][r]));
    }
    free_all(v1, 2);
    free_all(v2, 1);
    free_all(v3, 1);
    free_all(v4, 1);
}

static void ref_range_double(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w1 = wspec(0, NULL, 1, (int[]){3}, NULL, NULL);
    WSpec w2 = wspec(0, NULL, 1, (int[]){3}, (bool[]){true}, NULL);
    WFn f1 = wf_range(WIN_SUM, 4, FB_PRECEDING, 0, FB_FOLLOWING, 0);
    f1.sf = 0.5;
    f1.ef = 0.25;
    WFn f2 = wf_range(WIN_MIN, 1, FB_PRECEDING, 0, FB_FOLLOWING, 0);
    f2.sf = 1;
    f2.ef = 1.5;
    HVal **v1 = eval_all(t, &w1, &f1, 1), **v2 = eval_all(t, &w2, &f2, 1);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[3], x[4], v1[0][r], v2[0][r]));
    }
    free_all(v1, 1);
    free_all(v2, 1);
}

static void test_range_frames_with_offsets_match_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW wrange AS SELECT a, b,\n"
             "  SUM(k) OVER (PARTITION BY a ORDER BY b RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING)"
             " AS s1,\n"
             "  COUNT(*) OVER (PARTITION BY a ORDER BY b DESC RANGE BETWEEN 1 PRECEDING AND "
             "CURRENT ROW) AS c1,\n"
             "  MAX(k) OVER (ORDER BY b RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING) AS m1,\n"
             "  MIN(s) OVER (ORDER BY b NULLS LAST RANGE BETWEEN 1 FOLLOWING AND 3 FOLLOWING)"
             " AS m2,\n"
             "  COUNT(b) OVER (PARTITION BY a ORDER BY b RANGE BETWEEN UNBOUNDED PRECEDING AND "
             "1 PRECEDING) AS c2 FROM t;\n"
             "CREATE MATERIALIZED VIEW wrf AS SELECT f, k,\n"
             "  SUM(k) OVER (ORDER BY f RANGE BETWEEN 0.5 PRECEDING AND 0.25 FOLLOWING) AS s1,\n"
             "  MIN(b) OVER (ORDER BY f DESC RANGE BETWEEN 1 PRECEDING AND 1.5 FOLLOWING) AS m"
             " FROM t;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"wrange", ref_range}, {"wrf", ref_range_double}},
        .nchanges = 300,
        .seed = 104,
    };
    h_run(&s);
}

/* ---- 5. over GROUP BY, WHERE, computed keys, expressions ---------------------- */

/* wa: SELECT a, COUNT(*) AS n, SUM(b) AS sb, RANK() OVER (ORDER BY COUNT(*) DESC),
   SUM(SUM(b)) OVER (ORDER BY a ROWS 1 PRECEDING) FROM t GROUP BY a */
static void ref_over_groups(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    HRows keys = {0}, g = {0};
    h_group_keys(t, (int[]){0}, 1, &keys);
    for (int64_t k = 0; k < keys.n; k++) {
        int64_t n = 0, sb = 0, nn = 0;
        for (int64_t i = 0; i < t->n; i++) {
            if (!h_in_group(&t->r[i], (int[]){0}, 1, &keys.r[k]))
                continue;
            n++;
            if (!t->r[i].v[1].null) {
                nn++;
                sb += t->r[i].v[1].i;
            }
        }
        h_emit(&g, ROW(keys.r[k].v[0], h_int(n), nn ? h_int(sb) : h_null()));
    }
    static const Phys gph[] = {PHYS_I64, PHYS_I64, PHYS_I64};
    WSpec w1 = {.nord = 1, .ord = {1}, .desc = {true}, .nf = {false}, .ncmp = 3, .ph = gph};
    WSpec w2 = {.nord = 1, .ord = {0}, .nf = {true}, .ncmp = 3, .ph = gph};
    WFn f1 = wf(WIN_RANK, -1, true);
    WFn f2 = wf_rows(WIN_SUM, 2, FB_PRECEDING, 1, FB_CURRENT_ROW, 0);
    HVal *v1 = sl_calloc((size_t)(g.n + 1), sizeof(HVal)), *v2 = sl_calloc((size_t)(g.n + 1), sizeof(HVal));
    wref_eval(&g, &w1, &f1, v1);
    wref_eval(&g, &w2, &f2, v2);
    for (int64_t r = 0; r < g.n; r++) {
        const HVal *x = g.r[r].v;
        h_emit(out, ROW(x[0], x[1], x[2], v1[r], v2[r]));
    }
    sl_free(v1);
    sl_free(v2);
    h_rows_free(&keys);
    h_rows_free(&g);
}

/* ww: SELECT a, b, k, ROW_NUMBER() OVER (PARTITION BY b % 3 ORDER BY a DESC NULLS FIRST, k),
   b % 3 FROM t WHERE k > 0 */
static void ref_where_computed(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    HRows f = {0};
    for (int64_t i = 0; i < t->n; i++) {
        HRow r = t->r[i];
        if (r.v[4].i <= 0)
            continue;
        r.v[5] = r.v[1].null ? h_null() : h_int(r.v[1].i % 3);
        h_emit(&f, &r);
    }
    WSpec w = wspec(1, (int[]){5}, 2, (int[]){0, 4}, (bool[]){true, false}, (int[]){1, 0});
    w.ncmp = 6;
    WFn fn = wf(WIN_ROW_NUMBER, -1, true);
    HVal *v = sl_calloc((size_t)(f.n + 1), sizeof(HVal));
    wref_eval(&f, &w, &fn, v);
    for (int64_t r = 0; r < f.n; r++) {
        const HVal *x = f.r[r].v;
        h_emit(out, ROW(x[0], x[1], x[4], v[r], x[5]));
    }
    sl_free(v);
    h_rows_free(&f);
}

/* wx: SELECT a + 1, SUM(b) OVER (PARTITION BY a ORDER BY k) + 1 FROM t */
static void ref_window_in_expr(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = wspec(1, (int[]){0}, 1, (int[]){4}, NULL, NULL);
    WFn fn = wf(WIN_SUM, 1, true);
    HVal *v = sl_calloc((size_t)(t->n + 1), sizeof(HVal));
    wref_eval(t, &w, &fn, v);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *x = t->r[r].v;
        h_emit(out, ROW(x[0].null ? h_null() : h_int(x[0].i + 1),
                        v[r].null ? h_null() : h_int(v[r].i + 1)));
    }
    sl_free(v);
}

static void test_windows_over_groups_filters_and_expressions_match_reference(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW wa AS SELECT a, COUNT(*) AS n, SUM(b) AS sb,\n"
             "  RANK() OVER (ORDER BY COUNT(*) DESC) AS r,\n"
             "  SUM(SUM(b)) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s2\n"
             "  FROM t GROUP BY a;\n"
             "CREATE MATERIALIZED VIEW ww AS SELECT a, b, k,\n"
             "  ROW_NUMBER() OVER (PARTITION BY b % 3 ORDER BY a DESC NULLS FIRST, k) AS rn,\n"
             "  b % 3 AS g FROM t WHERE k > 0;\n"
             "CREATE MATERIALIZED VIEW wx AS SELECT a + 1 AS a1,\n"
             "  SUM(b) OVER (PARTITION BY a ORDER BY k) + 1 AS x FROM t;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"wa", ref_over_groups}, {"ww", ref_where_computed}, {"wx", ref_window_in_expr}},
        .nchanges = 300,
        .seed = 105,
        .end_empty = true,
    };
    h_run(&s);
}

/* ---- 6. errors ------------------------------------------------------------------ */

static void expect_error(const char *view, const char *needle)
{
    char sql[1024];
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS %s;\n", T_DDL, view);
    Circuit *c = NULL;
    Err err = {0};
    int rc = circuit_compile(sql, &c, &err);
    if (rc == 0) {
        circuit_free(c);
        fail_msg("compiled, expected an error containing \"%s\": %s", needle, view);
    }
    if (!strstr(err.msg, needle))
        fail_msg("error \"%s\" does not contain \"%s\" (%s)", err.msg, needle, view);
    assert_true(err.line >= 1);
}

static void test_invalid_windows_are_rejected_with_a_message(void **state)
{
    (void)state;
    expect_error("SELECT a FROM t WHERE ROW_NUMBER() OVER (ORDER BY a) > 1",
                 "not allowed in WHERE");
    expect_error("SELECT a, COUNT(*) FROM t GROUP BY a HAVING RANK() OVER (ORDER BY a) > 1",
                 "not allowed in HAVING");
    expect_error("SELECT SUM(b) OVER (ORDER BY a ROWS BETWEEN UNBOUNDED FOLLOWING AND "
                 "CURRENT ROW) FROM t",
                 "cannot start at UNBOUNDED FOLLOWING");
    expect_error("SELECT SUM(b) OVER (ORDER BY a ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) "
                 "FROM t",
                 "cannot end at PRECEDING");
    expect_error("SELECT SUM(b) OVER (ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) "
                 "FROM t",
                 "numeric");
    expect_error("SELECT SUM(b) OVER (ORDER BY a, b RANGE 1 PRECEDING) FROM t", "exactly one");
    expect_error("SELECT NTILE(0) OVER (ORDER BY a) FROM t", "greater than zero");
    expect_error("SELECT SUM(b) OVER (GROUPS 1 PRECEDING) FROM t", "needs ORDER BY");
    expect_error("SELECT SUM(b) OVER (ORDER BY a GROUPS b PRECEDING) FROM t", "integer literal");
    expect_error("SELECT SUM(b) OVER (ORDER BY a ROWS 1 PRECEDING EXCLUDE OTHERS) FROM t",
                 "EXCLUDE");
    expect_error("SELECT ROW_NUMBER(a) OVER (ORDER BY a) FROM t", "no arguments");
    expect_error("SELECT LAG(a, b) OVER (ORDER BY a) FROM t", "integer literal");
    expect_error("SELECT SUM(s) OVER () FROM t", "numeric argument");
    expect_error("SELECT SUM(SUM(b) OVER ()) FROM t", "not allowed");
    expect_error("SELECT a FROM t WINDOW w AS (ORDER BY a), w AS ()", "already defined");
    expect_error("SELECT SUM(b) OVER w FROM t", "does not exist");
    expect_error("SELECT RANK(DISTINCT b) OVER (ORDER BY a) FROM t", "DISTINCT");
    expect_error("SELECT ROW_NUMBER() IGNORE NULLS OVER (ORDER BY a) FROM t", "IGNORE NULLS");
}

/* Windows share a node per (PARTITION BY, ORDER BY); EXPLAIN shows them. */
static void test_window_nodes_are_shared_per_specification_and_explained(void **state)
{
    (void)state;
    char sql[1024];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE VIEW v AS SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS r1,\n"
             "  SUM(k) OVER (PARTITION BY a ORDER BY b ROWS 2 PRECEDING) AS s1,\n"
             "  LAG(s) OVER (ORDER BY b DESC) AS l FROM t;\n");
    Circuit *c = NULL;
    Err err = {0};
    assert_int_equal(circuit_compile(sql, &c, &err), 0);
    int nwin = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->k == OPK_WINDOW)
            nwin++;
    assert_int_equal(nwin, 2);
    Buf b = BUF_INIT;
    circuit_explain(c, &b);
    const char *txt = buf_cstr(&b);
    assert_non_null(strstr(txt, "window(0) partition by #0 order by #1 [row_number, sum(#4) rows "
                                "between 2 preceding and current row]"));
    assert_non_null(strstr(txt, "order by #1 desc [lag(#2, 1)]"));
    buf_free(&b);
    circuit_free(c);
}

/* The same with the memory budget at one byte (h_spill): after every step
   every window partition moves into the operator's cold trace and to files,
   and the next steps read back the partitions they touch (pstate.c,
   "Spilling"); restarts save and load the spilled partitions. What is
   written to cold stays within twice the rows that came in (fails when
   read-back partitions are written again). */
static void test_windows_with_every_partition_spilled_match_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    int64_t read_back = pstate_partitions_read_back();
    int64_t writes = pstate_cold_writes(), in = pstate_rows_in();
    h_spill_setup(true);
    test_ranking_lag_lead_match_reference_for_any_steps_and_workers(state);
    test_aggregates_over_default_frames_match_reference_for_any_steps_and_workers(state);
    test_rows_frames_match_reference_for_any_steps_and_workers(state);
    test_range_frames_with_offsets_match_reference_for_any_steps_and_workers(state);
    test_windows_over_groups_filters_and_expressions_match_reference(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(after.misses > before.misses);
    assert_true(pstate_partitions_read_back() > read_back);
    /* cold keeps every partition once spilled: a step writes its changes
       there, never again the partitions it read back */
    writes = pstate_cold_writes() - writes;
    in = pstate_rows_in() - in;
    assert_true(writes > 0);
    if (writes > 2 * in)
        fail_msg("%lld rows written to cold for %lld rows in", (long long)writes, (long long)in);
    h_spill_setup(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_with_every_partition_spilled_match_the_reference),
        cmocka_unit_test(test_ranking_lag_lead_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_aggregates_over_default_frames_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_rows_frames_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_range_frames_with_offsets_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_windows_over_groups_filters_and_expressions_match_reference),
        cmocka_unit_test(test_invalid_windows_are_rejected_with_a_message),
        cmocka_unit_test(test_window_nodes_are_shared_per_specification_and_explained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/circuit/test_operators.c - property tests of the non-join operators
 * (map/filter/project, UNION ALL, DISTINCT, UNION, GROUP BY aggregates,
 * global aggregates, views over views, HAVING/CASE/BETWEEN/IN/IS NULL).
 *
 * Each test compiles a SQL program, feeds its tables a random stream of
 * insertions and deletions cut into steps in several ways on 1, 2 and 4
 * workers (harness.h), and checks that every materialized view's
 * integrated output equals a plain C reference over the integrated input,
 * after every step, and is identical across cuts and worker counts.
 * Joins are in test_operators_join.c.
 */
#include "harness.h"

/* ---- reference helpers ----------------------------------------------------- */

static bool val_less(const HVal *a, const HVal *b)
{
    if (a->s || b->s)
        return h_str_cmp(a, b) < 0;
    return a->i != b->i ? a->i < b->i : a->f < b->f; /* the unused one is 0 */
}

/* One aggregate argument over one group: rows, non-NULL values, their sum,
   smallest and largest. */
typedef struct Agg {
    int64_t rows, nn, sum;
    double fsum;
    HVal min, max;
} Agg;

static Agg agg_of(const HRows *t, const int *gcols, int ng, const HRow *key, int col)
{
    Agg a = {0};
    for (int64_t i = 0; i < t->n; i++) {
        const HRow *r = &t->r[i];
        if (!h_in_group(r, gcols, ng, key))
            continue;
        a.rows++;
        if (col < 0 || r->v[col].null)
            continue;
        const HVal *v = &r->v[col];
        if (a.nn == 0 || val_less(v, &a.min))
            a.min = *v;
        if (a.nn == 0 || val_less(&a.max, v))
            a.max = *v;
        a.nn++;
        a.sum += v->i;
        a.fsum += v->f;
    }
    return a;
}

static HVal agg_sum(const Agg *a) { return a->nn ? h_int(a->sum) : h_null(); }
static HVal agg_avg(const Agg *a) { return a->nn ? h_dbl((double)a->sum / (double)a->nn) : h_null(); }
static HVal agg_fsum(const Agg *a) { return a->nn ? h_dbl(a->fsum) : h_null(); }
static HVal agg_favg(const Agg *a) { return a->nn ? h_dbl(a->fsum / (double)a->nn) : h_null(); }
static HVal agg_min(const Agg *a) { return a->nn ? a->min : h_null(); }
static HVal agg_max(const Agg *a) { return a->nn ? a->max : h_null(); }

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})

/* ---- 1. map / filter / project --------------------------------------------- */

static void ref_map_v(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    for (int64_t i = 0; i < t->n; i++) {
        const HVal *v = t->r[i].v; /* a, b, s */
        if (!v[0].null && v[0].i > 2)
            h_emit(out, ROW(h_int(v[0].i + 1), v[1], v[2]));
    }
}

static void ref_map_w(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    for (int64_t i = 0; i < t->n; i++) {
        const HVal *v = t->r[i].v;
        if (!v[2].null && v[1].i != 3)
            h_emit(out, ROW(v[0].null ? h_null() : h_int(v[1].i * 2 - v[0].i), v[2]));
    }
}

/* the materialized table itself: its integrated input */
static void ref_map_table(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++)
        h_emit(out, &tabs[0].r[i]);
}

static void test_map_filter_project_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b BIGINT NOT NULL, s VARCHAR)\n"
               "  WITH ('materialized' = 'true');\n"
               "CREATE MATERIALIZED VIEW v AS SELECT a + 1 AS x, b, s FROM t WHERE a > 2;\n"
               "CREATE MATERIALIZED VIEW w AS SELECT b * 2 - a AS y, s FROM t\n"
               "  WHERE s IS NOT NULL AND b <> 3;\n",
        .tables = {{"t", 3, {{-2, 6, 20}, {0, 5, 0}, {0, 6, 15}}}},
        .views = {{"v", ref_map_v}, {"w", ref_map_w}, {"t", ref_map_table}},
        .nchanges = 400,
        .seed = 1,
    };
    h_run(&s);
}

/* a * 2 + b, repeated in a SELECT list and in a WHERE: one shared
   subexpression (circuit/op_linear.c) */
static HVal cse_x(const HVal *v) { return v[0].null ? h_null() : h_int(v[0].i * 2 + v[1].i); }

static void ref_cse_c(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    for (int64_t i = 0; i < t->n; i++) {
        const HVal *v = t->r[i].v;
        HVal x = cse_x(v);
        h_emit(out, ROW(x, v[1].i > 3 ? x : h_int(0), x.null ? h_int(-1) : x));
    }
}

static void ref_cse_d(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    for (int64_t i = 0; i < t->n; i++) {
        const HVal *v = t->r[i].v;
        HVal x = cse_x(v);
        if (x.null || x.i > 4)
            h_emit(out, ROW(v[1], v[2]));
    }
}

static void test_map_shared_subexpressions_match_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b BIGINT NOT NULL, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW c AS SELECT a * 2 + b AS x,\n"
               "  CASE WHEN b > 3 THEN a * 2 + b ELSE 0 END AS y,\n"
               "  COALESCE(a * 2 + b, -1) AS z FROM t;\n"
               "CREATE MATERIALIZED VIEW d AS SELECT b, s FROM t\n"
               "  WHERE a * 2 + b > 4 OR a * 2 + b IS NULL;\n",
        .tables = {{"t", 3, {{-2, 6, 20}, {0, 5, 0}, {0, 6, 15}}}},
        .views = {{"c", ref_cse_c}, {"d", ref_cse_d}},
        .nchanges = 400,
        .seed = 7,
    };
    h_run(&s);
}

/* ---- 2. UNION ALL -------------------------------------------------------- */

static void ref_union_all_v(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++)
        h_emit(out, ROW(tabs[0].r[i].v[0]));
    for (int64_t i = 0; i < tabs[1].n; i++)
        h_emit(out, ROW(tabs[1].r[i].v[1]));
}

static void ref_union_all_w(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++)
        h_emit(out, ROW(tabs[0].r[i].v[0], tabs[0].r[i].v[1]));
    for (int64_t i = 0; i < tabs[1].n; i++)
        h_emit(out, ROW(tabs[1].r[i].v[0], tabs[1].r[i].v[1]));
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *v = tabs[0].r[i].v;
        if (!v[0].null && v[0].i < 2)
            h_emit(out, ROW(v[1], v[0]));
    }
}

/* tt: SELECT a FROM t UNION ALL SELECT a FROM t */
static void ref_union_all_tt(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++)
        h_rows_add(out, ROW(tabs[0].r[i].v[0]), 2);
}

static void test_union_all_integral_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL);\n"
               "CREATE TABLE u (a BIGINT NOT NULL, b INT);\n"
               "CREATE MATERIALIZED VIEW v AS SELECT a FROM t UNION ALL SELECT b FROM u;\n"
               "CREATE MATERIALIZED VIEW w AS SELECT a, b FROM t UNION ALL SELECT a, b FROM u\n"
               "  UNION ALL SELECT b, a FROM t WHERE a < 2;\n"
               "CREATE MATERIALIZED VIEW tt AS SELECT a FROM t UNION ALL SELECT a FROM t;\n",
        .tables = {{"t", 2, {{0, 5, 20}, {0, 4, 0}}}, {"u", 2, {{0, 4, 0}, {0, 5, 20}}}},
        .views = {{"v", ref_union_all_v}, {"w", ref_union_all_w}, {"tt", ref_union_all_tt}},
        .nchanges = 400,
        .seed = 2,
    };
    h_run(&s);
}

/* ---- 3. DISTINCT and UNION --------------------------------------------------- */

/* Each distinct combination of columns cols[0..n) of t's rows (optionally
   only rows passing keep), once. */
static void emit_distinct(const HRows *t, const int *cols, int n, HRows *out)
{
    HRows keys = {0};
    h_group_keys(t, cols, n, &keys);
    for (int64_t g = 0; g < keys.n; g++)
        h_emit(out, &keys.r[g]);
    h_rows_free(&keys);
}

static void ref_distinct_v(const HRows *tabs, HRows *out)
{
    emit_distinct(&tabs[0], (int[]){0, 1}, 2, out);
}

static void ref_distinct_w(const HRows *tabs, HRows *out)
{
    HRows f = {0};
    for (int64_t i = 0; i < tabs[0].n; i++)
        if (tabs[0].r[i].v[1].i > 1)
            h_emit(&f, &tabs[0].r[i]);
    emit_distinct(&f, (int[]){2}, 1, out);
    h_rows_free(&f);
}

/* SELECT a, COUNT(*) FROM (SELECT DISTINCT a, b FROM t) GROUP BY a */
static void ref_distinct_counted(const HRows *tabs, HRows *out)
{
    HRows d = {0}, keys = {0};
    emit_distinct(&tabs[0], (int[]){0, 1}, 2, &d);
    h_group_keys(&d, (int[]){0}, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg a = agg_of(&d, (int[]){0}, 1, &keys.r[g], -1);
        h_emit(out, ROW(keys.r[g].v[0], h_int(a.rows)));
    }
    h_rows_free(&d);
    h_rows_free(&keys);
}

static void test_distinct_integral_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW v AS SELECT DISTINCT a, b FROM t;\n"
               "CREATE MATERIALIZED VIEW w AS SELECT DISTINCT s FROM t WHERE b > 1;\n"
               "CREATE MATERIALIZED VIEW dc AS SELECT a, COUNT(*) AS c\n"
               "  FROM (SELECT DISTINCT a, b FROM t) AS d GROUP BY a;\n",
        .tables = {{"t", 3, {{0, 4, 15}, {0, 3, 0}, {0, 6, 15}}}},
        .views = {{"v", ref_distinct_v}, {"w", ref_distinct_w}, {"dc", ref_distinct_counted}},
        .nchanges = 400,
        .seed = 3,
    };
    h_run(&s);
}

static void ref_union_v(const HRows *tabs, HRows *out)
{
    HRows all = {0};
    for (int t = 0; t < 2; t++)
        for (int64_t i = 0; i < tabs[t].n; i++)
            h_emit(&all, ROW(tabs[t].r[i].v[0], tabs[t].r[i].v[1]));
    emit_distinct(&all, (int[]){0, 1}, 2, out);
    h_rows_free(&all);
}

/* SELECT a FROM t WHERE b < 2 UNION SELECT b FROM t WHERE a IS NOT NULL
   UNION SELECT a FROM u */
static void ref_union_w(const HRows *tabs, HRows *out)
{
    HRows all = {0};
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *v = tabs[0].r[i].v;
        if (v[1].i < 2)
            h_emit(&all, ROW(v[0]));
        if (!v[0].null)
            h_emit(&all, ROW(v[1]));
    }
    for (int64_t i = 0; i < tabs[1].n; i++)
        h_emit(&all, ROW(tabs[1].r[i].v[0]));
    emit_distinct(&all, (int[]){0}, 1, out);
    h_rows_free(&all);
}

/* m: SELECT a FROM t UNION SELECT a FROM u UNION ALL SELECT b FROM t
   (left-associative: the last branch keeps its duplicates) */
static void ref_union_mixed(const HRows *tabs, HRows *out)
{
    HRows all = {0};
    for (int t = 0; t < 2; t++)
        for (int64_t i = 0; i < tabs[t].n; i++)
            h_emit(&all, ROW(tabs[t].r[i].v[0]));
    emit_distinct(&all, (int[]){0}, 1, out);
    for (int64_t i = 0; i < tabs[0].n; i++)
        h_emit(out, ROW(tabs[0].r[i].v[1]));
    h_rows_free(&all);
}

static void test_union_distinct_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL);\n"
               "CREATE TABLE u (a INT, b BIGINT);\n"
               "CREATE MATERIALIZED VIEW v AS SELECT a, b FROM t UNION SELECT a, b FROM u;\n"
               "CREATE MATERIALIZED VIEW w AS SELECT a FROM t WHERE b < 2\n"
               "  UNION SELECT b FROM t WHERE a IS NOT NULL UNION SELECT a FROM u;\n"
               "CREATE MATERIALIZED VIEW m AS SELECT a FROM t UNION SELECT a FROM u\n"
               "  UNION ALL SELECT b FROM t;\n",
        .tables = {{"t", 2, {{0, 4, 15}, {0, 4, 0}}}, {"u", 2, {{0, 6, 15}, {0, 3, 15}}}},
        .views = {{"v", ref_union_v}, {"w", ref_union_w}, {"m", ref_union_mixed}},
        .nchanges = 400,
        .seed = 4,
    };
    h_run(&s);
}

/* ---- 5. GROUP BY aggregates ---------------------------------------------- */

/* t (a INT, b INT, s VARCHAR, k BIGINT NOT NULL) */
static void ref_agg_g(const HRows *tabs, HRows *out)
{
    HRows keys = {0};
    int gc[] = {0};
    h_group_keys(&tabs[0], gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg a = agg_of(&tabs[0], gc, 1, &keys.r[g], 1);
        h_emit(out, ROW(keys.r[g].v[0], h_int(a.rows), h_int(a.nn), agg_sum(&a), agg_avg(&a),
                        agg_min(&a), agg_max(&a)));
    }
    h_rows_free(&keys);
}

static void ref_agg_lin(const HRows *tabs, HRows *out)
{
    HRows keys = {0};
    int gc[] = {0, 2};
    h_group_keys(&tabs[0], gc, 2, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg k = agg_of(&tabs[0], gc, 2, &keys.r[g], 3);
        Agg b = agg_of(&tabs[0], gc, 2, &keys.r[g], 1);
        h_emit(out, ROW(keys.r[g].v[0], keys.r[g].v[1], h_int(k.rows), agg_sum(&k), agg_avg(&b)));
    }
    h_rows_free(&keys);
}

static void ref_agg_str(const HRows *tabs, HRows *out)
{
    HRows keys = {0};
    int gc[] = {3};
    h_group_keys(&tabs[0], gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg s = agg_of(&tabs[0], gc, 1, &keys.r[g], 2);
        Agg b = agg_of(&tabs[0], gc, 1, &keys.r[g], 1);
        h_emit(out, ROW(keys.r[g].v[0], agg_min(&s), agg_max(&s), h_int(s.nn), agg_max(&b)));
    }
    h_rows_free(&keys);
}

/* ge: SELECT a % 3 AS p, COUNT(*) AS c, SUM(f) AS sf, AVG(f) AS af, MIN(f) AS mnf,
         MAX(f) AS mxf FROM t GROUP BY a % 3 */
static void ref_agg_expr_key(const HRows *tabs, HRows *out)
{
    HRows p = {0}, keys = {0};
    int gc[] = {0};
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *v = tabs[0].r[i].v;
        h_emit(&p, ROW(v[0].null ? h_null() : h_int(v[0].i % 3), v[4]));
    }
    h_group_keys(&p, gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg f = agg_of(&p, gc, 1, &keys.r[g], 1);
        h_emit(out, ROW(keys.r[g].v[0], h_int(f.rows), agg_fsum(&f), agg_favg(&f), agg_min(&f),
                        agg_max(&f)));
    }
    h_rows_free(&p);
    h_rows_free(&keys);
}

static void test_group_by_aggregates_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT, s VARCHAR, k BIGINT NOT NULL, f DOUBLE);\n"
               "CREATE MATERIALIZED VIEW g AS SELECT a, COUNT(*) AS c, COUNT(b) AS cb,\n"
               "  SUM(b) AS sb, AVG(b) AS ab, MIN(b) AS mn, MAX(b) AS mx FROM t GROUP BY a;\n"
               "CREATE MATERIALIZED VIEW lin AS SELECT a, s, COUNT(*) AS c, SUM(k) AS sk,\n"
               "  AVG(b) AS ab FROM t GROUP BY a, s;\n"
               "CREATE MATERIALIZED VIEW str AS SELECT k, MIN(s) AS mn, MAX(s) AS mx,\n"
               "  COUNT(s) AS cs, MAX(b) AS mb FROM t GROUP BY k;\n"
               "CREATE MATERIALIZED VIEW ge AS SELECT a % 3 AS p, COUNT(*) AS c, SUM(f) AS sf,\n"
               "  AVG(f) AS af, MIN(f) AS mnf, MAX(f) AS mxf FROM t GROUP BY a % 3;\n",
        .tables = {{"t", 5, {{0, 5, 15}, {-3, 6, 25}, {0, 6, 20}, {0, 3, 0}, {-6, 9, 20}}}},
        .views = {{"g", ref_agg_g}, {"lin", ref_agg_lin}, {"str", ref_agg_str},
                  {"ge", ref_agg_expr_key}},
        .nchanges = 500,
        .seed = 5,
    };
    h_run(&s);
}

/* ---- 6. global aggregates --------------------------------------------------- */

static void ref_global_all(const HRows *tabs, HRows *out)
{
    Agg a = agg_of(&tabs[0], NULL, 0, NULL, 1);
    h_emit(out, ROW(h_int(a.rows), h_int(a.nn), agg_sum(&a), agg_avg(&a), agg_min(&a),
                    agg_max(&a)));
}

static void ref_global_lin(const HRows *tabs, HRows *out)
{
    HRows f = {0};
    for (int64_t i = 0; i < tabs[0].n; i++)
        if (!tabs[0].r[i].v[0].null && tabs[0].r[i].v[0].i > 3)
            h_emit(&f, &tabs[0].r[i]);
    Agg a = agg_of(&f, NULL, 0, NULL, 0);
    h_emit(out, ROW(h_int(a.rows), agg_sum(&a)));
    h_rows_free(&f);
}

static void test_global_aggregate_has_one_row_and_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT);\n"
               "CREATE MATERIALIZED VIEW gl AS SELECT COUNT(*) AS c, COUNT(b) AS cb,\n"
               "  SUM(b) AS s, AVG(b) AS av, MIN(b) AS mn, MAX(b) AS mx FROM t;\n"
               "CREATE MATERIALIZED VIEW gf AS SELECT COUNT(*) AS c, SUM(a) AS s\n"
               "  FROM t WHERE a > 3;\n",
        .tables = {{"t", 2, {{0, 5, 20}, {-4, 6, 30}}}},
        .views = {{"gl", ref_global_all}, {"gf", ref_global_lin}},
        .nchanges = 300,
        .seed = 6,
        .end_empty = true,
    };
    h_run(&s);
}

/* ---- 7. a view over views -------------------------------------------------------- */

/* v: SELECT c.a, s, d.n FROM (SELECT a, SUM(b) AS s FROM t GROUP BY a) c,
        d2 AS d WHERE c.a = d.a */
static void ref_vov_v(const HRows *tabs, HRows *out)
{
    HRows keys = {0};
    int gc[] = {0};
    h_group_keys(&tabs[0], gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg a = agg_of(&tabs[0], gc, 1, &keys.r[g], 1);
        for (int64_t i = 0; i < tabs[1].n; i++) {
            const HVal *d = tabs[1].r[i].v;
            if (h_sql_eq(&keys.r[g].v[0], &d[0]))
                h_emit(out, ROW(keys.r[g].v[0], agg_sum(&a), d[1]));
        }
    }
    h_rows_free(&keys);
}

/* v2: SELECT n, COUNT(*) AS k, SUM(s) AS ss FROM v GROUP BY n */
static void ref_vov_v2(const HRows *tabs, HRows *out)
{
    HRows v = {0}, keys = {0};
    int gc[] = {2};
    ref_vov_v(tabs, &v);
    h_group_keys(&v, gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg a = agg_of(&v, gc, 1, &keys.r[g], 1);
        h_emit(out, ROW(keys.r[g].v[0], h_int(a.rows), agg_sum(&a)));
    }
    h_rows_free(&v);
    h_rows_free(&keys);
}

/* v3: SELECT DISTINCT s FROM c WHERE a IS NOT NULL (c not materialized) */
static void ref_vov_v3(const HRows *tabs, HRows *out)
{
    HRows keys = {0}, sums = {0};
    int gc[] = {0};
    h_group_keys(&tabs[0], gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        if (keys.r[g].v[0].null)
            continue;
        Agg a = agg_of(&tabs[0], gc, 1, &keys.r[g], 1);
        h_emit(&sums, ROW(agg_sum(&a)));
    }
    emit_distinct(&sums, (int[]){0}, 1, out);
    h_rows_free(&keys);
    h_rows_free(&sums);
}

static void test_view_over_views_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT);\n"
               "CREATE TABLE d2 (a INT NOT NULL, n VARCHAR);\n"
               "CREATE VIEW c AS SELECT a, SUM(b) AS s FROM t GROUP BY a;\n"
               "CREATE MATERIALIZED VIEW v AS SELECT c.a, s, d.n FROM c, d2 AS d\n"
               "  WHERE c.a = d.a;\n"
               "CREATE MATERIALIZED VIEW v2 AS SELECT n, COUNT(*) AS k, SUM(s) AS ss\n"
               "  FROM v GROUP BY n;\n"
               "CREATE MATERIALIZED VIEW v3 AS SELECT DISTINCT s FROM c WHERE a IS NOT NULL;\n",
        .tables = {{"t", 2, {{0, 5, 15}, {-2, 4, 25}}, 2}, {"d2", 2, {{0, 6, 0}, {0, 4, 20}}, 1}},
        .views = {{"v", ref_vov_v}, {"v2", ref_vov_v2}, {"v3", ref_vov_v3}},
        .nchanges = 400,
        .seed = 7,
    };
    h_run(&s);
}

/* ---- 8. HAVING, CASE, BETWEEN, IN, IS NULL ----------------------------------- */

/* h: SELECT a, COUNT(*) AS c,
        SUM(CASE WHEN b BETWEEN 1 AND 3 THEN 1 ELSE 0 END) AS mid,
        SUM(CASE WHEN b IS NULL THEN 1 ELSE 0 END) AS nb
      FROM t WHERE a IN (0, 1, 2, 4) OR a IS NULL GROUP BY a
      HAVING COUNT(*) > 1 AND (MAX(b) IS NULL OR MAX(b) BETWEEN 2 AND 5) */
static void ref_expr_h(const HRows *tabs, HRows *out)
{
    HRows f = {0}, keys = {0};
    int gc[] = {0};
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *a = &tabs[0].r[i].v[0];
        if (a->null || a->i == 0 || a->i == 1 || a->i == 2 || a->i == 4)
            h_emit(&f, &tabs[0].r[i]);
    }
    h_group_keys(&f, gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        Agg b = agg_of(&f, gc, 1, &keys.r[g], 1);
        int64_t mid = 0, nb = 0;
        for (int64_t i = 0; i < f.n; i++) {
            const HRow *r = &f.r[i];
            if (!h_in_group(r, gc, 1, &keys.r[g]))
                continue;
            mid += !r->v[1].null && r->v[1].i >= 1 && r->v[1].i <= 3;
            nb += r->v[1].null;
        }
        bool max_ok = b.nn == 0 || (b.max.i >= 2 && b.max.i <= 5);
        if (b.rows > 1 && max_ok)
            h_emit(out, ROW(keys.r[g].v[0], h_int(b.rows), h_int(mid), h_int(nb)));
    }
    h_rows_free(&f);
    h_rows_free(&keys);
}

/* k: SELECT a, CASE WHEN b IS NULL THEN -1 WHEN b BETWEEN 2 AND 4 THEN 1 ELSE 0 END AS k,
        CASE WHEN a > 2 THEN 'big' END AS sz, s
      FROM t WHERE b NOT IN (3, 5) OR s IN ('a', 'b') */
static void ref_expr_k(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *v = tabs[0].r[i].v; /* a, b, s */
        /* three-valued: 1 true, 0 false, -1 unknown */
        int notin = v[1].null ? -1 : (v[1].i != 3 && v[1].i != 5);
        int sin = v[2].null ? -1 : (h_str_is(&v[2], "a") || h_str_is(&v[2], "b"));
        if (notin != 1 && sin != 1)
            continue;
        int64_t k = v[1].null ? -1 : (v[1].i >= 2 && v[1].i <= 4) ? 1 : 0;
        HVal sz = !v[0].null && v[0].i > 2 ? h_str("big", 3) : h_null();
        h_emit(out, ROW(v[0], h_int(k), sz, v[2]));
    }
}

/* k2: SELECT a, b, COALESCE(b, a, -1) AS co,
         CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE s END AS nm,
         (a IN (1, NULL)) IS NULL AS unk
       FROM t WHERE b NOT BETWEEN 2 AND 4 OR a IN (1, NULL) OR NOT (s <> 'ab') */
static void ref_expr_k2(const HRows *tabs, HRows *out)
{
    for (int64_t i = 0; i < tabs[0].n; i++) {
        const HVal *v = tabs[0].r[i].v; /* a, b, s */
        /* x IN (1, NULL) is TRUE when x = 1, else unknown */
        bool in1 = !v[0].null && v[0].i == 1;
        bool keep = (!v[1].null && (v[1].i < 2 || v[1].i > 4)) || in1 || h_str_is(&v[2], "ab");
        if (!keep)
            continue;
        HVal co = !v[1].null ? v[1] : !v[0].null ? v[0] : h_int(-1);
        HVal nm = in1                          ? h_str("one", 3)
                  : !v[0].null && v[0].i == 2 ? h_str("two", 3)
                                               : v[2];
        h_emit(out, ROW(v[0], v[1], co, nm, h_int(!in1)));
    }
}

static void test_having_case_between_in_is_null_match_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW h AS SELECT a, COUNT(*) AS c,\n"
               "  SUM(CASE WHEN b BETWEEN 1 AND 3 THEN 1 ELSE 0 END) AS mid,\n"
               "  SUM(CASE WHEN b IS NULL THEN 1 ELSE 0 END) AS nb\n"
               "  FROM t WHERE a IN (0, 1, 2, 4) OR a IS NULL GROUP BY a\n"
               "  HAVING COUNT(*) > 1 AND (MAX(b) IS NULL OR MAX(b) BETWEEN 2 AND 5);\n"
               "CREATE MATERIALIZED VIEW k AS SELECT a,\n"
               "  CASE WHEN b IS NULL THEN -1 WHEN b BETWEEN 2 AND 4 THEN 1 ELSE 0 END AS k,\n"
               "  CASE WHEN a > 2 THEN 'big' END AS sz, s\n"
               "  FROM t WHERE b NOT IN (3, 5) OR s IN ('a', 'b');\n"
               "CREATE MATERIALIZED VIEW k2 AS SELECT a, b, COALESCE(b, a, -1) AS co,\n"
               "  CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE s END AS nm,\n"
               "  (a IN (1, NULL)) IS NULL AS unk\n"
               "  FROM t WHERE b NOT BETWEEN 2 AND 4 OR a IN (1, NULL) OR NOT (s <> 'ab');\n",
        .tables = {{"t", 3, {{0, 5, 15}, {0, 6, 20}, {0, 4, 20}}}},
        .views = {{"h", ref_expr_h}, {"k", ref_expr_k}, {"k2", ref_expr_k2}},
        .nchanges = 400,
        .seed = 8,
    };
    h_run(&s);
}

/* Every trace (distinct, MIN/MAX value sets) spilled after every step
   (h_spill), merged and read back: the same answers. */
static void test_distinct_and_aggregates_with_every_trace_spilled_match_the_reference(
    void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    h_spill_setup(true);
    test_distinct_integral_matches_reference_for_any_steps_and_workers(state);
    test_group_by_aggregates_integral_matches_reference_for_any_steps_and_workers(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled); /* spilled, */
    assert_true(after.runs_merged > before.runs_merged);   /* merged, */
    assert_true(after.misses > before.misses);             /* read back */
    h_spill_setup(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_distinct_and_aggregates_with_every_trace_spilled_match_the_reference),
        cmocka_unit_test(
            test_map_filter_project_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_map_shared_subexpressions_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_union_all_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_distinct_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_union_distinct_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_group_by_aggregates_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_global_aggregate_has_one_row_and_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_view_over_views_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_having_case_between_in_is_null_match_reference_for_any_steps_and_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

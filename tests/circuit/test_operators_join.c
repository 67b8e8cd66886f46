/*
 * tests/circuit/test_operators_join.c - property tests of the join operator
 * (bilinear): equi-joins on one key (INT and VARCHAR), on two keys of mixed
 * integer types, with residual conditions, a join of three tables, a cross
 * join and self-joins. NULL keys never match.
 *
 * As in test_operators.c, each program's tables get a random stream of
 * insertions and deletions cut into steps several ways on 1, 2 and 4
 * workers (harness.h); every materialized view's integrated output must
 * equal a nested-loop reference over the integrated input after every step
 * and be identical across cuts and worker counts.
 */
#include "harness.h"

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})
/* for each row of rows, var = its values */
#define FOR_ROWS(var, rows)                                                        \
    for (int64_t var##_i = 0, var##_n = (rows)->n; var##_i < var##_n; var##_i++) \
        for (const HVal *var = (rows)->r[var##_i].v; var; var = NULL)

/* ---- one key ----------------------------------------------------------------- */

/* j1: SELECT t.a, t.b, u.c FROM t JOIN u ON t.a = u.a */
static void ref_join_j1(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&t[0], &u[0]))
        h_emit(out, ROW(t[0], t[1], u[1]));
}

/* js: SELECT t.s, t.b, u.c, u.a FROM t JOIN u ON u.s = t.s WHERE u.c > 0 */
static void ref_join_js(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&u[2], &t[2]) && !u[1].null && u[1].i > 0)
        h_emit(out, ROW(t[2], t[1], u[1], u[0]));
}

/* jx: SELECT t.a, t.b, u.a AS ua FROM t JOIN u ON t.a + 1 = u.a AND t.b = u.c
   (computed key; INT against BIGINT) */
static void ref_join_jx(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (!t[0].null && !u[0].null && t[0].i + 1 == u[0].i && h_sql_eq(&t[1], &u[1]))
        h_emit(out, ROW(t[0], t[1], u[0]));
}

static void test_join_on_one_key_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);\n"
               "CREATE TABLE u (a INT, c BIGINT, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW j1 AS SELECT t.a, t.b, u.c FROM t JOIN u ON t.a = u.a;\n"
               "CREATE MATERIALIZED VIEW js AS SELECT t.s, t.b, u.c, u.a FROM t JOIN u\n"
               "  ON u.s = t.s WHERE u.c > 0;\n"
               "CREATE MATERIALIZED VIEW jx AS SELECT t.a, t.b, u.a AS ua FROM t JOIN u\n"
               "  ON t.a + 1 = u.a AND t.b = u.c;\n",
        .tables = {{"t", 3, {{0, 5, 20}, {0, 3, 0}, {0, 6, 20}}},
                   {"u", 3, {{0, 6, 20}, {-1, 3, 15}, {0, 6, 20}}}},
        .views = {{"j1", ref_join_j1}, {"js", ref_join_js}, {"jx", ref_join_jx}},
        .nchanges = 400,
        .seed = 41,
    };
    h_run(&s);
}

/* ---- two keys ----------------------------------------------------------------- */

/* j2: SELECT t.a, t.b, t.x, u.y FROM t JOIN u ON t.a = u.a AND t.b = u.b */
static void ref_join_j2(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&t[0], &u[0]) && h_sql_eq(&t[1], &u[1]))
        h_emit(out, ROW(t[0], t[1], t[2], u[2]));
}

/* j2w: SELECT t.x, u.y, u.a FROM t, u WHERE t.b = u.b AND u.a = t.a AND t.x < u.y */
static void ref_join_j2w(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&t[0], &u[0]) && h_sql_eq(&t[1], &u[1]) && !u[2].null && t[2].i < u[2].i)
        h_emit(out, ROW(t[2], u[2], u[0]));
}

static void test_join_on_two_keys_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT, x INT NOT NULL);\n"
               "CREATE TABLE u (a BIGINT, b INT, y INT);\n"
               "CREATE MATERIALIZED VIEW j2 AS SELECT t.a, t.b, t.x, u.y FROM t JOIN u\n"
               "  ON t.a = u.a AND t.b = u.b;\n"
               "CREATE MATERIALIZED VIEW j2w AS SELECT t.x, u.y, u.a FROM t, u\n"
               "  WHERE t.b = u.b AND u.a = t.a AND t.x < u.y;\n",
        .tables = {{"t", 3, {{0, 3, 15}, {0, 2, 15}, {0, 4, 0}}},
                   {"u", 3, {{0, 3, 15}, {0, 2, 15}, {0, 4, 15}}}},
        .views = {{"j2", ref_join_j2}, {"j2w", ref_join_j2w}},
        .nchanges = 400,
        .seed = 42,
    };
    h_run(&s);
}

/* ---- three tables --------------------------------------------------------------- */

/* j3: SELECT t.b, u.a, w.d FROM t JOIN u ON t.a = u.a JOIN w ON u.c = w.c */
static void ref_join_j3(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    FOR_ROWS(w, &tabs[2])
    if (h_sql_eq(&t[0], &u[0]) && h_sql_eq(&u[1], &w[0]))
        h_emit(out, ROW(t[1], u[0], w[1]));
}

/* j3b: SELECT t.a, w.d, COUNT(*) AS n FROM t, u, w
        WHERE t.a = u.a AND w.c = u.c AND w.d > t.b GROUP BY t.a, w.d */
static void ref_join_j3b(const HRows *tabs, HRows *out)
{
    HRows m = {0}, keys = {0};
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    FOR_ROWS(w, &tabs[2])
    if (h_sql_eq(&t[0], &u[0]) && h_sql_eq(&u[1], &w[0]) && !w[1].null && !t[1].null &&
        w[1].i > t[1].i)
        h_emit(&m, ROW(t[0], w[1]));
    int gc[] = {0, 1};
    h_group_keys(&m, gc, 2, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        int64_t n = 0;
        for (int64_t i = 0; i < m.n; i++)
            n += h_in_group(&m.r[i], gc, 2, &keys.r[g]);
        h_emit(out, ROW(keys.r[g].v[0], keys.r[g].v[1], h_int(n)));
    }
    h_rows_free(&m);
    h_rows_free(&keys);
}

static void test_join_of_three_tables_integral_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT);\n"
               "CREATE TABLE u (a INT, c INT);\n"
               "CREATE TABLE w (c INT, d INT);\n"
               "CREATE MATERIALIZED VIEW j3 AS SELECT t.b, u.a, w.d FROM t JOIN u\n"
               "  ON t.a = u.a JOIN w ON u.c = w.c;\n"
               "CREATE MATERIALIZED VIEW j3b AS SELECT t.a, w.d, COUNT(*) AS n FROM t, u, w\n"
               "  WHERE t.a = u.a AND w.c = u.c AND w.d > t.b GROUP BY t.a, w.d;\n",
        .tables = {{"t", 2, {{0, 4, 15}, {0, 4, 15}}},
                   {"u", 2, {{0, 4, 15}, {0, 3, 15}}},
                   {"w", 2, {{0, 3, 15}, {0, 5, 15}}}},
        .views = {{"j3", ref_join_j3}, {"j3b", ref_join_j3b}},
        .nchanges = 450,
        .seed = 43,
    };
    h_run(&s);
}

/* ---- projections of the output (columns never decoded) ------------------------ */

/* sr: SELECT cu.region, SUM(o.amt) AS total, COUNT(*) AS n FROM o JOIN cu
       ON o.c = cu.id GROUP BY cu.region (the join-heavy bench's shape) */
static void ref_join_sr(const HRows *tabs, HRows *out)
{
    HRows m = {0}, keys = {0};
    FOR_ROWS(o, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&o[1], &u[0]))
        h_emit(&m, ROW(u[1], o[2]));
    int gc[] = {0};
    h_group_keys(&m, gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        int64_t n = 0, sum = 0;
        for (int64_t i = 0; i < m.n; i++)
            if (h_in_group(&m.r[i], gc, 1, &keys.r[g])) {
                n++;
                sum += m.r[i].v[1].i;
            }
        h_emit(out, ROW(keys.r[g].v[0], h_int(sum), h_int(n)));
    }
    h_rows_free(&m);
    h_rows_free(&keys);
}

/* jn: SELECT o.note, cu.name, o.amt FROM o JOIN cu ON o.c = cu.id WHERE o.id > 1
       (columns after a nullable one, strings) */
static void ref_join_jn(const HRows *tabs, HRows *out)
{
    FOR_ROWS(o, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&o[1], &u[0]) && o[0].i > 1)
        h_emit(out, ROW(o[3], u[2], o[2]));
}

static void test_join_projected_output_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE o (id BIGINT NOT NULL, c INT NOT NULL, amt INT NOT NULL,\n"
               "  note VARCHAR);\n"
               "CREATE TABLE cu (id INT NOT NULL, region INT NOT NULL, name VARCHAR);\n"
               "CREATE MATERIALIZED VIEW sr AS SELECT cu.region, SUM(o.amt) AS total,\n"
               "  COUNT(*) AS n FROM o JOIN cu ON o.c = cu.id GROUP BY cu.region;\n"
               "CREATE MATERIALIZED VIEW jn AS SELECT o.note, cu.name, o.amt FROM o JOIN cu\n"
               "  ON o.c = cu.id WHERE o.id > 1;\n",
        .tables = {{"o", 4, {{0, 4, 0}, {0, 6, 0}, {-3, 9, 0}, {0, 5, 20}}},
                   {"cu", 3, {{0, 6, 0}, {0, 3, 0}, {0, 4, 20}}}},
        .views = {{"sr", ref_join_sr}, {"jn", ref_join_jn}},
        .nchanges = 400,
        .seed = 46,
    };
    h_run(&s);
}

/* jf: SELECT o.id, o.c, o.amt, cu.region FROM o JOIN cu ON o.c = cu.id */
static void ref_join_jf(const HRows *tabs, HRows *out)
{
    FOR_ROWS(o, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&o[1], &u[0]))
        h_emit(out, ROW(o[0], o[1], o[2], u[1]));
}

/* jc: SELECT o.amt, cu.region FROM o, cu WHERE o.amt > cu.region (no key) */
static void ref_join_jc(const HRows *tabs, HRows *out)
{
    FOR_ROWS(o, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (o[2].i > u[1].i)
        h_emit(out, ROW(o[2], u[1]));
}

/* Rows of NOT NULL integers only: push() encodes them column by column
   into records of one size (op_join.c push_fixed). */
static void test_join_of_fixed_width_rows_matches_reference_for_any_steps_and_workers(
    void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE o (id BIGINT NOT NULL, c INT NOT NULL, amt SMALLINT NOT NULL);\n"
               "CREATE TABLE cu (id INT NOT NULL, region TINYINT NOT NULL);\n"
               "CREATE MATERIALIZED VIEW sr AS SELECT cu.region, SUM(o.amt) AS total,\n"
               "  COUNT(*) AS n FROM o JOIN cu ON o.c = cu.id GROUP BY cu.region;\n"
               "CREATE MATERIALIZED VIEW jf AS SELECT o.id, o.c, o.amt, cu.region FROM o\n"
               "  JOIN cu ON o.c = cu.id;\n"
               "CREATE MATERIALIZED VIEW jc AS SELECT o.amt, cu.region FROM o, cu\n"
               "  WHERE o.amt > cu.region;\n",
        .tables = {{"o", 3, {{-2, 4, 0}, {-1, 6, 0}, {-3, 9, 0}}},
                   {"cu", 2, {{-1, 6, 0}, {-2, 3, 0}}}},
        .views = {{"sr", ref_join_sr}, {"jf", ref_join_jf}, {"jc", ref_join_jc}},
        .nchanges = 300,
        .seed = 47,
    };
    h_run(&s);
}

/* ---- cross join ------------------------------------------------------------------- */

/* x: SELECT t.a, t.b, u.c, u.s FROM t, u */
static void ref_cross_x(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    h_emit(out, ROW(t[0], t[1], u[0], u[1]));
}

/* xf: SELECT t.a, u.c FROM t CROSS JOIN u WHERE t.b < u.c */
static void ref_cross_xf(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (!t[1].null && !u[0].null && t[1].i < u[0].i)
        h_emit(out, ROW(t[0], u[0]));
}

static void test_cross_join_integral_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT);\n"
               "CREATE TABLE u (c INT, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW x AS SELECT t.a, t.b, u.c, u.s FROM t, u;\n"
               "CREATE MATERIALIZED VIEW xf AS SELECT t.a, u.c FROM t CROSS JOIN u\n"
               "  WHERE t.b < u.c;\n",
        .tables = {{"t", 2, {{0, 3, 15}, {0, 3, 15}}}, {"u", 2, {{0, 3, 15}, {0, 6, 15}}}},
        .views = {{"x", ref_cross_x}, {"xf", ref_cross_xf}},
        .nchanges = 250,
        .seed = 44,
    };
    h_run(&s);
}

/* ---- self-joins --------------------------------------------------------------------- */

/* sj: SELECT x.a, x.b, y.b AS b2 FROM t AS x JOIN t AS y ON x.a = y.a */
static void ref_self_sj(const HRows *tabs, HRows *out)
{
    FOR_ROWS(x, &tabs[0])
    FOR_ROWS(y, &tabs[0])
    if (h_sql_eq(&x[0], &y[0]))
        h_emit(out, ROW(x[0], x[1], y[1]));
}

/* lt: SELECT x.a, x.b, y.b AS b2 FROM t AS x JOIN t AS y ON x.a = y.a WHERE x.b < y.b */
static void ref_self_lt(const HRows *tabs, HRows *out)
{
    FOR_ROWS(x, &tabs[0])
    FOR_ROWS(y, &tabs[0])
    if (h_sql_eq(&x[0], &y[0]) && x[1].i < y[1].i)
        h_emit(out, ROW(x[0], x[1], y[1]));
}

/* chain: SELECT x.a, y.a AS a2, y.b FROM t AS x, t AS y WHERE x.b = y.a */
static void ref_self_chain(const HRows *tabs, HRows *out)
{
    FOR_ROWS(x, &tabs[0])
    FOR_ROWS(y, &tabs[0])
    if (h_sql_eq(&x[1], &y[0]))
        h_emit(out, ROW(x[0], y[0], y[1]));
}

static void test_self_join_integral_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL);\n"
               "CREATE MATERIALIZED VIEW sj AS SELECT x.a, x.b, y.b AS b2\n"
               "  FROM t AS x JOIN t AS y ON x.a = y.a;\n"
               "CREATE MATERIALIZED VIEW lt AS SELECT x.a, x.b, y.b AS b2\n"
               "  FROM t AS x JOIN t AS y ON x.a = y.a WHERE x.b < y.b;\n"
               "CREATE MATERIALIZED VIEW chain AS SELECT x.a, y.a AS a2, y.b\n"
               "  FROM t AS x, t AS y WHERE x.b = y.a;\n",
        .tables = {{"t", 2, {{0, 5, 15}, {0, 5, 0}}}},
        .views = {{"sj", ref_self_sj}, {"lt", ref_self_lt}, {"chain", ref_self_chain}},
        .nchanges = 300,
        .seed = 45,
    };
    h_run(&s);
}

/* Every trace spilled after every step (h_spill): the same answers. */
static void test_joins_with_every_trace_spilled_match_the_reference(void **state)
{
    h_spill_setup(true);
    test_join_on_one_key_integral_matches_reference_for_any_steps_and_workers(state);
    test_join_on_two_keys_integral_matches_reference_for_any_steps_and_workers(state);
    test_self_join_integral_matches_reference_for_any_steps_and_workers(state);
    h_spill_setup(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_join_on_one_key_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_join_on_two_keys_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_join_of_three_tables_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_join_projected_output_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_join_of_fixed_width_rows_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_cross_join_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_self_join_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_joins_with_every_trace_spilled_match_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

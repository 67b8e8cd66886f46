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
 * and be identical across cuts and worker counts. Skewed keys (half of one
 * side's rows on one key) run with a low hot-key threshold, so hot keys
 * are split across workers in most steps; a direct test checks that the
 * join state of a hot key is spread over the workers.
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

/* Every trace spilled after every step (h_spill), merged and read back: the same answers. */
static void test_joins_with_every_trace_spilled_match_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    h_spill_setup(true);
    test_join_on_one_key_integral_matches_reference_for_any_steps_and_workers(state);
    test_join_on_two_keys_integral_matches_reference_for_any_steps_and_workers(state);
    test_self_join_integral_matches_reference_for_any_steps_and_workers(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled); /* spilled, */
    assert_true(after.runs_merged > before.runs_merged);   /* merged, */
    assert_true(after.misses > before.misses);             /* read back */
    h_spill_setup(false);
}

/* ---- a probe spanning blocks of spilled runs, with a cache of one block -------------- */

/* jw: SELECT t.a, t.b, t.s, u.c, u.s FROM t JOIN u ON t.a = u.a
   (few keys: each key's rows fill several blocks of every spilled run) */
static void ref_join_jw(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (h_sql_eq(&t[0], &u[0]))
        h_emit(out, ROW(t[0], t[1], t[2], u[1], u[2]));
}

/* Every trace spilled after every step into blocks of ~2 rows, read back
   through a cache that holds about one block: a step's probe of a key
   walks several blocks of each spilled run, so each block the cursor moves
   off is unpinned and evicted (freed) at once, long before the step's
   output pairs are decoded. Values handed out by a probe must not point
   into a block (ASan: heap-use-after-free), and the join must still match
   the nested-loop reference. */
static void test_join_probe_across_blocks_evicted_before_decode_matches_reference(
    void **state)
{
    (void)state;
    SpillStats before, after;
    spill_stats(&before);
    h_spill = true;
    SpillConf conf = {
        .limit = 1, .cache_bytes = 64, .block_bytes = 48, .min_run = 0, .merge = true};
    spill_store_setup(NULL, 0, 1, &conf);
    HSpec s = {
        .sql = "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);\n"
               "CREATE TABLE u (a INT, c BIGINT, s VARCHAR);\n"
               "CREATE MATERIALIZED VIEW jw AS SELECT t.a, t.b, t.s, u.c, u.s AS us FROM t JOIN u\n"
               "  ON t.a = u.a;\n",
        .tables = {{"t", 3, {{0, 2, 0}, {0, 1000, 0}, {0, 6, 20}}},
                   {"u", 3, {{0, 2, 0}, {-1000, 1000, 10}, {0, 6, 20}}}},
        .views = {{"jw", ref_join_jw}},
        .nchanges = 240,
        .seed = 47,
    };
    h_run(&s);
    spill_stats(&after);
    h_spill_setup(false);
    assert_true(after.runs_spilled > before.runs_spilled);
    /* far more block reads than the cache could ever hold: blocks were
       evicted and read again */
    assert_true(after.misses - before.misses > 1000);
    assert_true(after.cache_bytes <= 64 || after.cache_bytes == 0);
}

/* ---- skewed keys (hot keys split across workers, op_join.c) ------------------------ */

/* The key of t's row in view st: half of t's rows (b even) have key 0. */
static int64_t skew_key(const HVal *t) { return t[1].i % 2 == 0 ? 0 : t[0].i; }

/* sk: SELECT st.a, st.b, u.c FROM st JOIN u ON st.a = u.a */
static void ref_skew_sk(const HRows *tabs, HRows *out)
{
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (skew_key(t) == u[0].i)
        h_emit(out, ROW(h_int(skew_key(t)), t[1], u[1]));
}

/* skr: SELECT u.c, st.b FROM u JOIN st ON u.a = st.a WHERE u.c > 2 */
static void ref_skew_skr(const HRows *tabs, HRows *out)
{
    FOR_ROWS(u, &tabs[1])
    FOR_ROWS(t, &tabs[0])
    if (skew_key(t) == u[0].i && !u[1].null && u[1].i > 2)
        h_emit(out, ROW(u[1], t[1]));
}

/* ska: SELECT u.c, COUNT(*) AS n, SUM(st.b) AS sb FROM st JOIN u ON st.a = u.a
   GROUP BY u.c */
static void ref_skew_ska(const HRows *tabs, HRows *out)
{
    HRows m = {0}, keys = {0};
    FOR_ROWS(t, &tabs[0])
    FOR_ROWS(u, &tabs[1])
    if (skew_key(t) == u[0].i)
        h_emit(&m, ROW(u[1], t[1]));
    int gc[] = {0};
    h_group_keys(&m, gc, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        int64_t n = 0, sb = 0;
        for (int64_t i = 0; i < m.n; i++)
            if (h_in_group(&m.r[i], gc, 1, &keys.r[g])) {
                n++;
                sb += m.r[i].v[1].i;
            }
        h_emit(out, ROW(keys.r[g].v[0], h_int(n), h_int(sb)));
    }
    h_rows_free(&m);
    h_rows_free(&keys);
}

/* With a hot-key threshold of 3 rows, key 0 (half of t's rows) and many
   others turn hot in the larger steps: their rows are split across workers
   and the other side's copied, restarts re-shard them, undone steps undo
   the hot set; the integral must not notice. */
static void test_skewed_join_integral_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    setenv("SLUICE_SKEW_MIN_ROWS", "3", 1);
    HSpec s = {
        .sql = "CREATE TABLE t (a INT NOT NULL, b INT NOT NULL);\n"
               "CREATE TABLE u (a INT NOT NULL, c INT);\n"
               "CREATE VIEW st AS SELECT CASE WHEN b % 2 = 0 THEN 0 ELSE a END AS a, b FROM t;\n"
               "CREATE MATERIALIZED VIEW sk AS SELECT st.a, st.b, u.c FROM st JOIN u\n"
               "  ON st.a = u.a;\n"
               "CREATE MATERIALIZED VIEW skr AS SELECT u.c, st.b FROM u JOIN st\n"
               "  ON u.a = st.a WHERE u.c > 2;\n"
               "CREATE MATERIALIZED VIEW ska AS SELECT u.c, COUNT(*) AS n, SUM(st.b) AS sb\n"
               "  FROM st JOIN u ON st.a = u.a GROUP BY u.c;\n",
        .tables = {{"t", 2, {{0, 6, 0}, {0, 9, 0}}, 3},
                   {"u", 2, {{0, 6, 0}, {0, 5, 20}}, 1}},
        .views = {{"sk", ref_skew_sk}, {"skr", ref_skew_skr}, {"ska", ref_skew_ska}},
        .nchanges = 400,
        .seed = 46,
    };
    h_run(&s);
    unsetenv("SLUICE_SKEW_MIN_ROWS");
}

/* Rows of the left trace and hot keys in worker w's saved join state. */
static void skew_state(Runtime *rt, int w, int node, int64_t *left, int64_t *right, int *hot)
{
    BatchList bl = {0};
    assert_int_equal(rt_save(rt, w, node, &bl), 0);
    assert_true(bl.n >= 1);
    const Batch *h = bl.b[0];
    int64_t nb[2] = {0, 0};
    *hot = 0;
    for (int64_t i = 0; i < h->n; i++) {
        if (batch_klen(h, i) == 3 && !memcmp(batch_key(h, i), "hot", 3))
            (*hot)++;
        else
            nb[batch_klen(h, i) == 4 ? 0 : 1] = h->w[i]; /* "left" / "right" */
    }
    *left = *right = 0;
    for (int64_t i = 0; i < nb[0]; i++)
        *left += bl.b[1 + i]->n;
    for (int64_t i = 0; i < nb[1]; i++)
        *right += bl.b[1 + nb[0] + i]->n;
    batchlist_free(&bl);
}

/* Sum of the weights of sink `sink` over all workers. */
static int64_t skew_rows(Runtime *rt, int sink)
{
    HCanon c = h_collect(rt, sink);
    int64_t n = 0;
    for (int64_t i = 0; i < c.n; i++)
        n += c.e[i].w;
    h_canon_free(&c);
    return n;
}

/* One step of rows into table rel, split evenly over W workers. */
static void skew_step(Runtime *rt, const Circuit *c, int W, int rel, const HRow *rows,
                      const int64_t *w, int64_t n)
{
    Arena *a = arena_new(1 << 16);
    const Relation *r = &c->rels[rel];
    for (int k = 0; k < W; k++) {
        int64_t lo = n * k / W, hi = n * (k + 1) / W;
        Piece *p = arena_zalloc(a, sizeof(Piece));
        p->chunk = chunk_new(a, r->ncol, r->types, hi - lo);
        for (int64_t i = lo; i < hi; i++)
            h_put_row(p->chunk, p->chunk->n++, &rows[i], w[i], a);
        rt_set_input(rt, k, rel, p);
    }
    Err err = {0};
    assert_int_equal(rt_step(rt, &err), 0);
    arena_free(a);
}

/* Half of 8000 rows on one key: with 2 workers both hold about half of
   them (the key's owner spread them) and a copy of the other side's row of
   that key; a later change of that row reaches every part. */
static void test_hot_key_rows_are_spread_over_workers(void **state)
{
    (void)state;
    setenv("SLUICE_SKEW_MIN_ROWS", "1000", 1);
    Circuit *c = NULL;
    Err err = {0};
    assert_int_equal(circuit_compile("CREATE TABLE t (a INT NOT NULL, b INT NOT NULL);\n"
                                     "CREATE TABLE u (a INT NOT NULL, c INT NOT NULL);\n"
                                     "CREATE MATERIALIZED VIEW j AS SELECT t.b, u.c FROM t JOIN u\n"
                                     "  ON t.a = u.a;\n",
                                     &c, &err),
                     0);
    int t = circuit_find_rel(c, "t"), u = circuit_find_rel(c, "u"), j = circuit_find_rel(c, "j");
    int node = -1;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->k == OPK_JOIN)
            node = i;
    assert_true(node >= 0);
    Runtime *rt = rt_new(c, 2);
    enum { N = 8000 };
    HRow *rows = sl_calloc(N, sizeof(HRow));
    int64_t *w = sl_calloc(N, sizeof(int64_t));
    for (int i = 0; i < N; i++) {
        rows[i].v[0] = h_int(i % 2 == 0 ? 0 : i);
        rows[i].v[1] = h_int(i);
        w[i] = 1;
    }
    HRow urow[3] = {{.v = {h_int(0), h_int(7)}}, {.v = {h_int(1), h_int(8)}},
                    {.v = {h_int(0), h_int(9)}}};
    int64_t uw[3] = {1, 1, -1};
    skew_step(rt, c, 2, u, urow, uw, 2);
    skew_step(rt, c, 2, t, rows, w, N);
    assert_int_equal(skew_rows(rt, c->rels[j].sink), N / 2 + 1);
    int64_t left[2], right[2];
    int hot[2];
    for (int k = 0; k < 2; k++)
        skew_state(rt, k, node, &left[k], &right[k], &hot[k]);
    assert_int_equal(hot[0] + hot[1], 1);
    assert_int_equal(left[0] + left[1], N);
    for (int k = 0; k < 2; k++) {
        assert_true(left[k] > N * 2 / 5); /* N/2 each, give or take the uniform keys */
        assert_true(right[k] >= 1);       /* the copy of u's row of key 0 */
    }
    /* u's row of key 0 changes: (0, 7) out, (0, 9) in */
    HRow upd[2] = {urow[0], urow[2]};
    int64_t updw[2] = {-1, 1};
    skew_step(rt, c, 2, u, upd, updw, 2);
    assert_int_equal(skew_rows(rt, c->rels[j].sink), N / 2 + 1);
    HCanon out = h_collect(rt, c->rels[j].sink);
    int64_t nine = 0;
    for (int64_t i = 0; i < out.n; i++) {
        assert_true(out.e[i].w == 1);
        nine += out.e[i].p[out.e[i].n - 1] == 9; /* u.c last: key encoding ends with it */
    }
    h_canon_free(&out);
    assert_int_equal(nine, N / 2);
    rt_free(rt);
    circuit_free(c);
    sl_free(rows);
    sl_free(w);
    unsetenv("SLUICE_SKEW_MIN_ROWS");
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
        cmocka_unit_test(
            test_join_probe_across_blocks_evicted_before_decode_matches_reference),
        cmocka_unit_test(
            test_skewed_join_integral_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_hot_key_rows_are_spread_over_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

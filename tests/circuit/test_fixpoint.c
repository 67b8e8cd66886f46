/*
 * tests/circuit/test_fixpoint.c - recursive relations (OPK_FIXPOINT,
 * circuit/op_fixpoint.c) under the property harness (harness.h): any
 * cutting of a random stream of edge insertions and deletions into steps,
 * 1, 2 and 4 workers, restarts from checkpoints (also to another worker
 * count); every step's views must equal the reference computed plainly in
 * C over the edges present: the transitive closure (a declared recursive
 * view), what node 0 reaches (WITH RECURSIVE), the walks of at most 3
 * edges from node 0 counted with UNION ALL (multiplicities), and an
 * aggregate over the closure; once more with every trace spilled.
 */
#include "harness.h"

#define NN 7 /* nodes 0..NN-1 */

/* mult[a][b]: copies of edge a -> b among the table's rows */
static void edge_counts(const HRows *e, int64_t mult[NN][NN])
{
    memset(mult, 0, sizeof(int64_t) * NN * NN);
    for (int64_t i = 0; i < e->n; i++)
        mult[e->r[i].v[0].i][e->r[i].v[1].i] += e->m[i];
}

static void closure(const HRows *e, bool tc[NN][NN])
{
    int64_t mult[NN][NN];
    edge_counts(e, mult);
    for (int a = 0; a < NN; a++)
        for (int b = 0; b < NN; b++)
            tc[a][b] = mult[a][b] > 0;
    for (int k = 0; k < NN; k++)
        for (int a = 0; a < NN; a++)
            for (int b = 0; b < NN; b++)
                tc[a][b] = tc[a][b] || (tc[a][k] && tc[k][b]);
}

static void ref_tc(const HRows *tabs, HRows *out)
{
    bool tc[NN][NN];
    closure(&tabs[0], tc);
    for (int a = 0; a < NN; a++)
        for (int b = 0; b < NN; b++)
            if (tc[a][b])
                h_rows_add(out, &(HRow){{h_int(a), h_int(b)}}, 1);
}

static void ref_reach(const HRows *tabs, HRows *out)
{
    bool tc[NN][NN];
    closure(&tabs[0], tc);
    for (int b = 0; b < NN; b++)
        if (b == 0 || tc[0][b])
            h_rows_add(out, &(HRow){{h_int(b)}}, 1);
}

/* walks(n, d): the walks of d <= 3 edges from node 0 to n, one row per walk */
static void ref_walks(const HRows *tabs, HRows *out)
{
    int64_t mult[NN][NN], w[NN] = {1}, nw[NN];
    edge_counts(&tabs[0], mult);
    for (int d = 0; d <= 3; d++) {
        for (int n = 0; n < NN; n++)
            if (w[n])
                h_rows_add(out, &(HRow){{h_int(n), h_int(d)}}, w[n]);
        memset(nw, 0, sizeof(nw));
        for (int a = 0; a < NN; a++)
            for (int b = 0; b < NN; b++)
                nw[b] += w[a] * mult[a][b];
        memcpy(w, nw, sizeof(w));
    }
}

/* SELECT src, COUNT(*), MAX(dst) FROM tc GROUP BY src */
static void ref_outdeg(const HRows *tabs, HRows *out)
{
    bool tc[NN][NN];
    closure(&tabs[0], tc);
    for (int a = 0; a < NN; a++) {
        int64_t c = 0, m = -1;
        for (int b = 0; b < NN; b++)
            if (tc[a][b]) {
                c++;
                m = b;
            }
        if (c)
            h_rows_add(out, &(HRow){{h_int(a), h_int(c), h_int(m)}}, 1);
    }
}

static void test_recursive_views_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    HSpec s = {
        .sql = "CREATE TABLE e (src INT NOT NULL, dst INT NOT NULL);\n"
               "DECLARE RECURSIVE VIEW tc (src INT NOT NULL, dst INT NOT NULL);\n"
               "CREATE MATERIALIZED VIEW tc AS SELECT src, dst FROM e\n"
               "  UNION SELECT tc.src, e.dst FROM tc JOIN e ON tc.dst = e.src;\n"
               "CREATE MATERIALIZED VIEW reach AS WITH RECURSIVE r(n) AS (SELECT 0\n"
               "  UNION SELECT e.dst FROM r JOIN e ON r.n = e.src) SELECT n FROM r;\n"
               "CREATE MATERIALIZED VIEW walks AS WITH RECURSIVE w(n, d) AS (SELECT 0, 0\n"
               "  UNION ALL SELECT e.dst, w.d + 1 FROM w JOIN e ON w.n = e.src WHERE w.d < 3)\n"
               "  SELECT n, d FROM w;\n"
               "CREATE MATERIALIZED VIEW outdeg AS\n"
               "  SELECT src, COUNT(*) AS c, MAX(dst) AS m FROM tc GROUP BY src;\n",
        .tables = {{"e", 2, {{0, NN - 1, 0}, {0, NN - 1, 0}}}},
        .views = {{"tc", ref_tc}, {"reach", ref_reach}, {"walks", ref_walks},
                  {"outdeg", ref_outdeg}},
        .nchanges = 120,
        .seed = 19,
    };
    h_run(&s);
}

/* The same with every trace spilled after every step: the inner circuit's
   traces and R are read back from spill files. */
static void test_recursive_views_with_every_trace_spilled_match_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    h_spill_setup(true);
    test_recursive_views_match_reference_for_any_steps_and_workers(state);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(after.misses > before.misses);
    h_spill_setup(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recursive_views_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_recursive_views_with_every_trace_spilled_match_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

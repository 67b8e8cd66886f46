/*
 * tests/circuit/test_topk.c - property tests of top-k (OPK_TOPK): ORDER BY
 * ... LIMIT/OFFSET of views, subqueries and unions, and top-k per group
 * written as ROW_NUMBER()/RANK()/DENSE_RANK() OVER (...) filtered by
 * rank <= k (rewritten to top-k nodes), on a random stream of insertions
 * and deletions cut into steps in several ways, on 1, 2 and 4 workers
 * (harness.h), compared after every step with winref.h's evaluation from
 * scratch. Ties on the ORDER BY keys are broken by the whole row (NULL
 * first), which the references reproduce.
 */
#include "winref.h"
#include "circuit/pstate.h"

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})

static const char *const T_DDL =
    "CREATE TABLE t (a INT, b INT, s VARCHAR, f DOUBLE, k BIGINT NOT NULL);\n";
static const Phys T_PH[] = {PHYS_I64, PHYS_I64, PHYS_STR, PHYS_F64, PHYS_I64};
#define T_GEN {"t", 5, {{0, 3, 20}, {-3, 6, 20}, {0, 6, 15}, {-6, 9, 20}, {0, 5, 0}}}

/* Rows of `proj` (projected rows of ncol columns with phys ph) ranked by
   order columns ord[] (desc[], nulls-first nf[]) then the whole row; those
   ranked offset+1 .. offset+limit (limit -1: all), visible columns only. */
static void ref_limit(const HRows *proj, int ncol, const Phys *ph, int nord, const int *ord,
                      const bool *desc, const int *nulls, int64_t limit, int64_t offset,
                      int nvis, HRows *out)
{
    WSpec w = {.nord = nord, .ncmp = ncol, .ph = ph};
    for (int i = 0; i < nord; i++) {
        w.ord[i] = ord[i];
        w.desc[i] = desc[i];
        w.nf[i] = nulls && nulls[i] ? nulls[i] == 1 : !desc[i];
    }
    WFn f = wf(WIN_ROW_NUMBER, -1, true);
    HVal *rn = sl_calloc((size_t)(proj->n + 1), sizeof(HVal));
    wref_eval(proj, &w, &f, rn);
    for (int64_t r = 0; r < proj->n; r++) {
        if (rn[r].i <= offset || (limit >= 0 && rn[r].i > offset + limit))
            continue;
        HRow x;
        memset(&x, 0, sizeof(x));
        for (int j = 0; j < nvis; j++)
            x.v[j] = proj->r[r].v[j];
        h_emit(out, &x);
    }
    sl_free(rn);
}

/* t's rows projected to columns cols[0..n). */
static void project(const HRows *t, const int *cols, int n, HRows *out)
{
    for (int64_t i = 0; i < t->n; i++) {
        HRow x;
        memset(&x, 0, sizeof(x));
        for (int j = 0; j < n; j++)
            x.v[j] = t->r[i].v[cols[j]];
        h_emit(out, &x);
    }
}

/* ---- 1. ORDER BY ... LIMIT / OFFSET ---------------------------------------- */

static void ref_top_lim(const HRows *tabs, HRows *out)
{
    HRows p = {0};
    project(&tabs[0], (int[]){0, 1, 2}, 3, &p);
    ref_limit(&p, 3, (Phys[]){PHYS_I64, PHYS_I64, PHYS_STR}, 2, (int[]){1, 2},
              (bool[]){true, false}, (int[]){2, 0}, 5, 0, 3, out);
    h_rows_free(&p);
}

static void ref_top_off(const HRows *tabs, HRows *out)
{
    HRows p = {0};
    project(&tabs[0], (int[]){1, 4}, 2, &p);
    ref_limit(&p, 2, (Phys[]){PHYS_I64, PHYS_I64}, 2, (int[]){1, 0}, (bool[]){false, true}, NULL,
              4, 3, 2, out);
    h_rows_free(&p);
}

/* SELECT s FROM t ORDER BY f DESC, k LIMIT 3: the input of the top-k is
   (s, f, k), f and k hidden */
static void ref_top_hidden(const HRows *tabs, HRows *out)
{
    HRows p = {0};
    project(&tabs[0], (int[]){2, 3, 4}, 3, &p);
    ref_limit(&p, 3, (Phys[]){PHYS_STR, PHYS_F64, PHYS_I64}, 2, (int[]){1, 2},
              (bool[]){true, false}, NULL, 3, 0, 1, out);
    h_rows_free(&p);
}

static void ref_top_offset_only(const HRows *tabs, HRows *out)
{
    HRows p = {0};
    project(&tabs[0], (int[]){0, 4}, 2, &p);
    ref_limit(&p, 2, (Phys[]){PHYS_I64, PHYS_I64}, 1, (int[]){0}, (bool[]){true}, NULL, -1, 5, 2,
              out);
    h_rows_free(&p);
}

static void test_order_by_limit_offset_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW top_lim AS SELECT a, b, s FROM t\n"
             "  ORDER BY b DESC NULLS LAST, s LIMIT 5;\n"
             "CREATE MATERIALIZED VIEW top_off AS SELECT b, k FROM t ORDER BY k, b DESC\n"
             "  LIMIT 4 OFFSET 3;\n"
             "CREATE MATERIALIZED VIEW top_hidden AS SELECT s FROM t ORDER BY f DESC, k LIMIT 3;\n"
             "CREATE MATERIALIZED VIEW top_offset_only AS SELECT a, k FROM t ORDER BY a DESC\n"
             "  OFFSET 5;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"top_lim", ref_top_lim}, {"top_off", ref_top_off},
                  {"top_hidden", ref_top_hidden}, {"top_offset_only", ref_top_offset_only}},
        .nchanges = 400,
        .seed = 201,
    };
    h_run(&s);
}

/* ---- 2. top-k per group through rank functions -------------------------------- */

static WSpec tspec(int npart, const int *part, int nord, const int *ord, const bool *desc,
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

static HVal *ranks(const HRows *t, const WSpec *w, WinKind k)
{
    WFn f = wf(k, -1, true);
    HVal *v = sl_calloc((size_t)(t->n + 1), sizeof(HVal));
    wref_eval(t, w, &f, v);
    return v;
}

static void ref_g_rn(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(1, (int[]){0}, 1, (int[]){1}, (bool[]){true}, NULL);
    HVal *rn = ranks(t, &w, WIN_ROW_NUMBER);
    for (int64_t r = 0; r < t->n; r++)
        if (rn[r].i <= 2)
            h_emit(out, ROW(t->r[r].v[0], t->r[r].v[1], t->r[r].v[2], rn[r]));
    sl_free(rn);
}

static void ref_g_rank(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(1, (int[]){0}, 1, (int[]){1}, NULL, NULL);
    HVal *rk = ranks(t, &w, WIN_RANK);
    for (int64_t r = 0; r < t->n; r++)
        if (rk[r].i <= 2)
            h_emit(out, ROW(t->r[r].v[0], t->r[r].v[1], rk[r]));
    sl_free(rk);
}

static void ref_g_dense(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(1, (int[]){2}, 1, (int[]){3}, NULL, (int[]){2});
    HVal *d = ranks(t, &w, WIN_DENSE_RANK);
    for (int64_t r = 0; r < t->n; r++)
        if (d[r].i < 3 && t->r[r].v[4].i > 1)
            h_emit(out, ROW(t->r[r].v[2], t->r[r].v[3], t->r[r].v[4], d[r]));
    sl_free(d);
}

static void ref_g_first(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(1, (int[]){2}, 2, (int[]){4, 3}, (bool[]){true, false}, NULL);
    HVal *rn = ranks(t, &w, WIN_ROW_NUMBER);
    for (int64_t r = 0; r < t->n; r++)
        if (rn[r].i == 1)
            h_emit(out, ROW(t->r[r].v[2], t->r[r].v[4]));
    sl_free(rn);
}

static void test_top_k_per_group_matches_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW g_rn AS SELECT * FROM (SELECT a, b, s,\n"
             "  ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC) AS rn FROM t) AS x\n"
             "  WHERE rn <= 2;\n"
             "CREATE MATERIALIZED VIEW g_rank AS SELECT a, b, r FROM (SELECT a, b,\n"
             "  RANK() OVER (PARTITION BY a ORDER BY b) AS r FROM t) AS x WHERE r <= 2;\n"
             "CREATE MATERIALIZED VIEW g_dense AS SELECT * FROM (SELECT s, f, k,\n"
             "  DENSE_RANK() OVER (PARTITION BY s ORDER BY f NULLS LAST) AS d FROM t) AS x\n"
             "  WHERE d < 3 AND k > 1;\n"
             "CREATE MATERIALIZED VIEW g_first AS SELECT s, k FROM (SELECT s, k,\n"
             "  ROW_NUMBER() OVER (PARTITION BY s ORDER BY k DESC, f) AS rn FROM t) AS x\n"
             "  WHERE rn = 1;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"g_rn", ref_g_rn}, {"g_rank", ref_g_rank}, {"g_dense", ref_g_dense},
                  {"g_first", ref_g_first}},
        .nchanges = 400,
        .seed = 202,
    };
    h_run(&s);
}

/* ---- 3. global top-k, LIMIT 0, LIMIT in subqueries and unions, no rewrite --------- */

static void ref_global(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(0, NULL, 2, (int[]){1, 4}, NULL, NULL);
    HVal *rn = ranks(t, &w, WIN_ROW_NUMBER);
    for (int64_t r = 0; r < t->n; r++)
        if (rn[r].i <= 3)
            h_emit(out, ROW(t->r[r].v[1], t->r[r].v[4], rn[r]));
    sl_free(rn);
}

static void ref_limit0(const HRows *tabs, HRows *out)
{
    (void)tabs;
    (void)out;
}

/* SELECT a, COUNT(*) FROM (SELECT a, b FROM t ORDER BY b DESC, a LIMIT 6) GROUP BY a */
static void ref_sub_limit(const HRows *tabs, HRows *out)
{
    HRows p = {0}, top = {0}, keys = {0};
    project(&tabs[0], (int[]){0, 1}, 2, &p);
    ref_limit(&p, 2, (Phys[]){PHYS_I64, PHYS_I64}, 2, (int[]){1, 0}, (bool[]){true, false}, NULL,
              6, 0, 2, &top);
    h_group_keys(&top, (int[]){0}, 1, &keys);
    for (int64_t g = 0; g < keys.n; g++) {
        int64_t n = 0;
        for (int64_t i = 0; i < top.n; i++)
            n += h_in_group(&top.r[i], (int[]){0}, 1, &keys.r[g]);
        h_emit(out, ROW(keys.r[g].v[0], h_int(n)));
    }
    h_rows_free(&p);
    h_rows_free(&top);
    h_rows_free(&keys);
}

/* WHERE rn <= 2 OR b = 1: not a top-k (the window stays) */
static void ref_no_rewrite(const HRows *tabs, HRows *out)
{
    const HRows *t = &tabs[0];
    WSpec w = tspec(1, (int[]){0}, 1, (int[]){1}, NULL, NULL);
    HVal *rn = ranks(t, &w, WIN_ROW_NUMBER);
    for (int64_t r = 0; r < t->n; r++) {
        const HVal *b = &t->r[r].v[1];
        if (rn[r].i <= 2 || (!b->null && b->i == 1))
            h_emit(out, ROW(t->r[r].v[0], *b, rn[r]));
    }
    sl_free(rn);
}

static void test_global_top_k_subquery_limits_and_non_top_k_filters_match_reference(
    void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE MATERIALIZED VIEW gl AS SELECT * FROM (SELECT b, k,\n"
             "  ROW_NUMBER() OVER (ORDER BY b, k) AS rn FROM t) AS x WHERE 3 >= rn;\n"
             "CREATE MATERIALIZED VIEW l0 AS SELECT a FROM t ORDER BY a LIMIT 0;\n"
             "CREATE MATERIALIZED VIEW sub AS SELECT a, COUNT(*) AS n FROM\n"
             "  (SELECT a, b FROM t ORDER BY b DESC, a LIMIT 6) AS x GROUP BY a;\n"
             "CREATE MATERIALIZED VIEW nr AS SELECT a, b, rn FROM (SELECT a, b,\n"
             "  ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS rn FROM t) AS x\n"
             "  WHERE rn <= 2 OR b = 1;\n");
    HSpec s = {
        .sql = sql,
        .tables = {T_GEN},
        .views = {{"gl", ref_global}, {"l0", ref_limit0}, {"sub", ref_sub_limit},
                  {"nr", ref_no_rewrite}},
        .nchanges = 400,
        .seed = 203,
        .end_empty = true,
    };
    h_run(&s);
}

/* ---- 4. plans ----------------------------------------------------------------- */

static int count_kind(const Circuit *c, int owner, OpKind k)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++)
        n += c->nodes[i]->owner == owner && c->nodes[i]->k == k;
    return n;
}

static void test_rank_filters_become_top_k_nodes_and_others_stay_windows(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", T_DDL,
             "CREATE VIEW a1 AS SELECT * FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a\n"
             "  ORDER BY b) AS rn FROM t) AS x WHERE rn <= 3;\n"
             "CREATE VIEW a2 AS SELECT * FROM (SELECT a, RANK() OVER (ORDER BY b) AS r,\n"
             "  SUM(b) OVER (ORDER BY b) AS s FROM t) AS x WHERE r <= 3;\n"
             "CREATE VIEW a3 AS SELECT a, b FROM t ORDER BY b LIMIT 2 OFFSET 1;\n"
             "CREATE VIEW a4 AS SELECT * FROM (SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS rn\n"
             "  FROM t) AS x WHERE rn > 3;\n");
    Circuit *c = NULL;
    Err err = {0};
    if (circuit_compile(sql, &c, &err))
        fail_msg("%s", err.msg);
    int a1 = circuit_find_rel(c, "a1"), a2 = circuit_find_rel(c, "a2");
    int a3 = circuit_find_rel(c, "a3"), a4 = circuit_find_rel(c, "a4");
    assert_int_equal(count_kind(c, a1, OPK_TOPK), 1);
    assert_int_equal(count_kind(c, a1, OPK_WINDOW), 0);
    assert_int_equal(count_kind(c, a2, OPK_TOPK), 0); /* two functions in the window */
    assert_int_equal(count_kind(c, a2, OPK_WINDOW), 1);
    assert_int_equal(count_kind(c, a3, OPK_TOPK), 1);
    assert_int_equal(count_kind(c, a4, OPK_TOPK), 0); /* rn > 3 is not a top-k */
    Buf b = BUF_INIT;
    circuit_explain(c, &b);
    const char *txt = buf_cstr(&b);
    assert_non_null(strstr(txt, "topk(0) partition by #0 order by #1 limit 3 row_number"));
    assert_non_null(strstr(txt, "order by #1 limit 2 offset 1 ->"));
    buf_free(&b);
    circuit_free(c);
}

static void test_limit_must_be_an_integer_literal(void **state)
{
    (void)state;
    char sql[512];
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a FROM t ORDER BY a LIMIT a;\n", T_DDL);
    Circuit *c = NULL;
    Err err = {0};
    assert_int_not_equal(circuit_compile(sql, &c, &err), 0);
    assert_non_null(strstr(err.msg, "integer literal"));
}

/* The same with the memory budget at one byte (h_spill): after every step
   every top-k partition moves into the operator's cold trace and to files,
   and the next steps read back the partitions they touch (pstate.c,
   "Spilling"); restarts save and load the spilled partitions. What is
   written to cold stays within twice the rows that came in (fails when
   read-back partitions are written again). */
static void test_top_k_with_every_partition_spilled_matches_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    int64_t read_back = pstate_partitions_read_back();
    int64_t writes = pstate_cold_writes(), in = pstate_rows_in();
    h_spill_setup(true);
    test_order_by_limit_offset_match_reference_for_any_steps_and_workers(state);
    test_top_k_per_group_matches_reference_for_any_steps_and_workers(state);
    test_global_top_k_subquery_limits_and_non_top_k_filters_match_reference(state);
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
        cmocka_unit_test(test_top_k_with_every_partition_spilled_matches_the_reference),
        cmocka_unit_test(test_order_by_limit_offset_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_top_k_per_group_matches_reference_for_any_steps_and_workers),
        cmocka_unit_test(
            test_global_top_k_subquery_limits_and_non_top_k_filters_match_reference),
        cmocka_unit_test(test_rank_filters_become_top_k_nodes_and_others_stay_windows),
        cmocka_unit_test(test_limit_must_be_an_integer_literal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

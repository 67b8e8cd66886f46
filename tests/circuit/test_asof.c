/*
 * tests/circuit/test_asof.c - property tests of the ASOF join (OPK_ASOF,
 * circuit/op_asof.c): ASOF JOIN and LEFT ASOF JOIN with MATCH_CONDITION
 * >=, >, <=, <, null-safe keys and conditions on one side, on a random
 * stream of insertions and deletions on both sides cut into steps in
 * several ways, on 1, 2 and 4 workers, with restarts from checkpoints
 * (harness.h), compared after every step with a plain reference: per left
 * row, the right rows with equal keys satisfying the condition, the
 * closest timestamp, ties broken by the right row's columns (the greatest
 * for > and >=, the smallest for < and <=; NULL lowest).
 */
#include "harness.h"

#include "circuit/pstate.h"
#include "circuit/watermark.h"

#define ROW(...) (&(HRow){.v = {__VA_ARGS__}})

static const char *const DDL =
    "CREATE TABLE a (k INT, ts INT, v INT);\n"
    "CREATE TABLE b (k INT, ts INT, p INT);\n";
/* small domains: many ties on (k, ts), duplicates, NULLs */
#define A_GEN {"a", 3, {{0, 3, 10}, {0, 12, 10}, {0, 4, 20}}}
#define B_GEN {"b", 3, {{0, 3, 10}, {0, 12, 10}, {0, 3, 20}}}

enum { GE, GT, LE, LT };

typedef struct Asof {
    int op;
    bool outer;
    bool nullsafe;   /* a.k IS NOT DISTINCT FROM b.k */
    int p_min;       /* right candidates: p >= p_min (-1: all, NULL p included) */
    int v_min;       /* left rows with v >= v_min match (-1: all) */
} Asof;

static bool holds(int op, int64_t l, int64_t r)
{
    switch (op) {
    case GE: return l >= r;
    case GT: return l > r;
    case LE: return l <= r;
    default: return l < r;
    }
}

/* Is right row y a better match than x (op's direction, then ties)? */
static bool better(int op, const HRow *y, const HRow *x)
{
    bool back = op == GE || op == GT;
    if (y->v[1].i != x->v[1].i)
        return back ? y->v[1].i > x->v[1].i : y->v[1].i < x->v[1].i;
    int c = h_val_cmp(&y->v[2], &x->v[2], PHYS_I64); /* k and ts are equal */
    return back ? c > 0 : c < 0;
}

static void ref_asof(const HRows *tabs, HRows *out, const Asof *q)
{
    const HRows *a = &tabs[0], *b = &tabs[1];
    for (int64_t i = 0; i < a->n; i++) {
        const HRow *l = &a->r[i];
        const HRow *m = NULL;
        bool lok = !l->v[1].null && (q->v_min < 0 || (!l->v[2].null && l->v[2].i >= q->v_min));
        for (int64_t j = 0; lok && j < b->n; j++) {
            const HRow *r = &b->r[j];
            bool keq = q->nullsafe ? h_same(&l->v[0], &r->v[0]) : h_sql_eq(&l->v[0], &r->v[0]);
            if (!keq || r->v[1].null || !holds(q->op, l->v[1].i, r->v[1].i))
                continue;
            if (q->p_min >= 0 && (r->v[2].null || r->v[2].i < q->p_min))
                continue;
            if (!m || better(q->op, r, m))
                m = r;
        }
        if (m)
            h_emit(out, ROW(l->v[0], l->v[1], l->v[2], m->v[1], m->v[2]));
        else if (q->outer)
            h_emit(out, ROW(l->v[0], l->v[1], l->v[2], h_null(), h_null()));
    }
}

static void ref_left_ge(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){GE, true, false, -1, -1}); }
static void ref_inner_gt(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){GT, false, false, -1, -1}); }
static void ref_left_le(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){LE, true, false, -1, -1}); }
static void ref_inner_lt(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){LT, false, false, -1, -1}); }

static void test_asof_joins_match_reference_for_any_steps_and_workers(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", DDL,
             "CREATE MATERIALIZED VIEW left_ge AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k;\n"
             "CREATE MATERIALIZED VIEW inner_gt AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a ASOF JOIN b MATCH_CONDITION (b.ts < a.ts) ON b.k = a.k;\n"
             "CREATE MATERIALIZED VIEW left_le AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a LEFT ASOF JOIN b ON a.k = b.k AND a.ts <= b.ts;\n"
             "CREATE MATERIALIZED VIEW inner_lt AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a ASOF JOIN b MATCH_CONDITION (a.ts < b.ts) ON a.k = b.k;\n");
    HSpec s = {
        .sql = sql,
        .tables = {A_GEN, B_GEN},
        .views = {{"left_ge", ref_left_ge}, {"inner_gt", ref_inner_gt}, {"left_le", ref_left_le},
                  {"inner_lt", ref_inner_lt}},
        .nchanges = 400,
        .seed = 401,
    };
    h_run(&s);
}

static void ref_ns(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){GE, true, true, -1, -1}); }
static void ref_rfilter(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){LE, false, false, 2, -1}); }
static void ref_lfilter(const HRows *t, HRows *o) { ref_asof(t, o, &(Asof){GT, true, false, -1, 2}); }

static void test_null_safe_keys_and_one_side_conditions_match_reference(void **state)
{
    (void)state;
    char sql[2048];
    snprintf(sql, sizeof(sql), "%s%s", DDL,
             "CREATE MATERIALIZED VIEW ns AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts)\n"
             "  ON a.k IS NOT DISTINCT FROM b.k;\n"
             "CREATE MATERIALIZED VIEW rfilter AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a ASOF JOIN b MATCH_CONDITION (a.ts <= b.ts) ON a.k = b.k AND b.p >= 2;\n"
             "CREATE MATERIALIZED VIEW lfilter AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
             "  FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts > b.ts) ON a.v >= 2 AND a.k = b.k;\n");
    HSpec s = {
        .sql = sql,
        .tables = {A_GEN, B_GEN},
        .views = {{"ns", ref_ns}, {"rfilter", ref_rfilter}, {"lfilter", ref_lfilter}},
        .nchanges = 300,
        .seed = 402,
        .end_empty = true,
    };
    h_run(&s);
}

static void test_the_plan_is_one_asof_node(void **state)
{
    (void)state;
    char sql[1024];
    snprintf(sql, sizeof(sql), "%s%s", DDL,
             "CREATE VIEW v AS SELECT a.k, b.p FROM a LEFT ASOF JOIN b\n"
             "  MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k;\n");
    Circuit *c = NULL;
    Err err = {0};
    if (circuit_compile(sql, &c, &err))
        fail_msg("%s", err.msg);
    int v = circuit_find_rel(c, "v"), n = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->owner == v && c->nodes[i]->k == OPK_ASOF) {
            n++;
            assert_int_equal(c->nodes[i]->npart, 1);
            assert_true(c->nodes[i]->asof_back && c->nodes[i]->asof_outer);
        }
    assert_int_equal(n, 1);
    circuit_free(c);
}

/* ---- LATENESS: forgetting below the watermark ------------------------------ */

#define NR 400

/* Row i of a (k, ts, v) and, every fourth i, of b (k, ts, p): times
   nearly in order (at most 3 behind the largest: never late with
   LATENESS 5), a NULL ts now and then, ties on both sides. */
static void gc_rows(const Circuit *c, Runtime *rt, int64_t lo, int64_t hi, Arena *a)
{
    int W = rt_workers(rt);
    for (int t = 0; t < 2; t++) {
        int r = circuit_find_rel(c, t ? "b" : "a");
        const Relation *rl = &c->rels[r];
        for (int w = 0; w < W; w++) {
            int64_t l = lo + (hi - lo) * w / W, h = lo + (hi - lo) * (w + 1) / W;
            Chunk *k = chunk_new(a, rl->ncol, rl->types, h - l + 1);
            for (int64_t i = l; i < h; i++) {
                if (t && i % 4)
                    continue;
                int64_t n = k->n++;
                k->col[0].i[n] = (i / 2) % 3;
                k->col[1].i[n] = 10 + i - (i * 7919) % 4;
                k->col[1].nul[n] = !t && i % 17 == 5;
                k->col[2].i[n] = i % 5;
                k->w[n] = 1;
            }
            Piece *pc = arena_zalloc(a, sizeof(Piece));
            pc->chunk = k;
            rt_set_input(rt, w, r, k->n ? pc : NULL);
        }
    }
}

static int64_t asof_rows(const Circuit *c, Runtime *rt, const char *view)
{
    int v = circuit_find_rel(c, view), node = -1;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->owner == v && c->nodes[i]->k == OPK_ASOF)
            node = i;
    assert_true(node >= 0);
    int64_t rows = 0;
    for (int w = 0; w < rt_workers(rt); w++) {
        OpMem m = {0};
        op_mem(rt_op(rt, w, node), &m);
        rows += m.rows;
    }
    return rows;
}

/* spill: the LATENESS runtime's state spills after every step (h_spill):
   its forgetting sees only the partitions a step read back, and the output
   stays the plain runtime's (the bounds on the state are not checked). */
static void run_lateness(bool spill)
{
    static const char *const views =
        "CREATE MATERIALIZED VIEW back AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
        "  FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k;\n"
        "CREATE MATERIALIZED VIEW fwd AS SELECT a.k, a.ts, a.v, b.ts AS bts, b.p\n"
        "  FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts < b.ts) ON a.k = b.k;\n";
    char plain[1024], late[1024];
    snprintf(plain, sizeof(plain), "CREATE TABLE a (k INT, ts BIGINT, v INT);\n"
             "CREATE TABLE b (k INT, ts BIGINT, p INT);\n%s", views);
    snprintf(late, sizeof(late), "CREATE TABLE a (k INT, ts BIGINT LATENESS 5, v INT);\n"
             "CREATE TABLE b (k INT, ts BIGINT LATENESS 5, p INT);\n%s", views);
    Circuit *cp = NULL, *cl = NULL;
    Err err = {0};
    if (circuit_compile(plain, &cp, &err) || circuit_compile(late, &cl, &err))
        fail_msg("%s", err.msg);
    static const char *const names[] = {"back", "fwd"};
    for (int W = 1; W <= 2; W++) {
        Runtime *rp = rt_new(cp, W), *rl = h_rt_new(cl, W);
        uint64_t seed = 91 + (uint64_t)W;
        int64_t i = 0, steps = 0, most = 0;
        while (i < NR) {
            int64_t n = 1 + (int64_t)(h_rnd(&seed) % 12);
            n = i + n > NR ? NR - i : n;
            Arena *a = arena_new(1 << 16);
            gc_rows(cp, rp, i, i + n, a);
            gc_rows(cl, rl, i, i + n, a);
            if (rt_step(rp, &err) || rt_step(rl, &err))
                fail_msg("step: %s", err.msg);
            arena_free(a);
            i += n;
            steps++;
            char msg[1200];
            if (!h_spill_all(msg, sizeof(msg)))
                fail_msg("%s", msg);
            for (int v = 0; v < 2; v++) {
                /* per key: the rows within the lateness, the NULL times,
                   a right row below the watermark, left rows waiting */
                int64_t r = asof_rows(cl, rl, names[v]);
                most = r > most ? r : most;
                assert_true(spill || r <= 3 * 12 + i / 17 + 2 * 12);
                HCanon gp = h_collect(rp, cp->rels[circuit_find_rel(cp, names[v])].sink);
                HCanon gl = h_collect(rl, cl->rels[circuit_find_rel(cl, names[v])].sink);
                bool same = gp.n == gl.n;
                for (int64_t e = 0; same && e < gp.n; e++)
                    same = gp.e[e].w == gl.e[e].w && !h_enc_cmp(&gp.e[e], &gl.e[e]);
                if (!same)
                    fail_msg("view %s differs with LATENESS after step %lld (%d workers)",
                             names[v], (long long)steps, W);
                h_canon_free(&gp);
                h_canon_free(&gl);
            }
        }
        /* without LATENESS the state is every row */
        int64_t all = asof_rows(cp, rp, "back");
        if (all < NR || (!spill && most > all / 8))
            fail_msg("state: %lld rows at most with LATENESS, %lld without", (long long)most,
                     (long long)all);
        rt_free(rp);
        rt_free(rl);
    }
    circuit_free(cp);
    circuit_free(cl);
}

static void test_lateness_bounds_the_state_and_keeps_the_output(void **state)
{
    (void)state;
    run_lateness(false);
}

/* The same tests with the memory budget at one byte (h_spill): after every
   step every ASOF partition moves into the operator's cold trace and to
   files, and the next steps read back the partitions they touch
   (pstate.c, "Spilling"); restarts save and load the spilled partitions. */
static void test_asof_joins_with_every_partition_spilled_match_the_reference(void **state)
{
    SpillStats before, after;
    spill_stats(&before);
    int64_t read_back = pstate_partitions_read_back();
    h_spill_setup(true);
    test_asof_joins_match_reference_for_any_steps_and_workers(state);
    test_null_safe_keys_and_one_side_conditions_match_reference(state);
    run_lateness(true);
    h_spill_setup(false);
    spill_stats(&after);
    assert_true(after.runs_spilled > before.runs_spilled);
    assert_true(pstate_partitions_read_back() > read_back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asof_joins_match_reference_for_any_steps_and_workers),
        cmocka_unit_test(test_null_safe_keys_and_one_side_conditions_match_reference),
        cmocka_unit_test(test_the_plan_is_one_asof_node),
        cmocka_unit_test(test_lateness_bounds_the_state_and_keeps_the_output),
        cmocka_unit_test(test_asof_joins_with_every_partition_spilled_match_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

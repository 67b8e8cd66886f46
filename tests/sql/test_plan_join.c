/*
 * tests/sql/test_plan_join.c - the planner's joins, set operations, WITH and
 * VALUES (src/sql/plan_join.c, plan_set.c): the shapes that matter (a WITH
 * query planned once, outer-join conditions kept off the preserved side,
 * set-operation precedence), the result columns and types, and the errors
 * with their positions. Results against SQLite: tests/e2e/test_joins_vs_sqlite.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#include "sql/ast.h"
#include "sql/sql.h"

#define TABLES                                                                          \
    "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);\n"                              \
    "CREATE TABLE u (a BIGINT, c INT, s VARCHAR);\n"

static Circuit *compile_ok(const char *sql)
{
    Err e = {0};
    Circuit *c = NULL;
    if (circuit_compile(sql, &c, &e))
        fail_msg("compile failed for\n%s\n%d:%d: %s", sql, e.line, e.col, e.msg);
    return c;
}

static void expect_error(const char *sql, int code, int line, int col, const char *words)
{
    Err e = {0};
    Circuit *c = NULL;
    if (circuit_compile(sql, &c, &e) == 0) {
        circuit_free(c);
        fail_msg("for %s\n compiled, want an error containing \"%s\"", sql, words);
    }
    if (e.code != code || e.line != line || e.col != col || !strstr(e.msg, words))
        fail_msg("for %s\n got code %d at %d:%d: %s\n want code %d at %d:%d containing \"%s\"",
                 sql, e.code, e.line, e.col, e.msg, code, line, col, words);
}

static int count_nodes(const Circuit *c, OpKind k)
{
    int n = 0;
    for (int i = 0; i < c->nnodes; i++)
        n += c->nodes[i]->k == k;
    return n;
}

static const Relation *rel(const Circuit *c, const char *name)
{
    int r = circuit_find_rel(c, name);
    assert_true(r >= 0);
    return &c->rels[r];
}

static void test_with_query_used_twice_is_planned_once(void **state)
{
    (void)state;
    Circuit *c = compile_ok(TABLES "CREATE VIEW v AS WITH g AS (SELECT a, COUNT(*) AS n FROM t "
                                   "GROUP BY a) SELECT x.a, y.n FROM g x JOIN g y ON x.a = y.a;");
    assert_int_equal(count_nodes(c, OPK_AGG), 1);
    assert_int_equal(count_nodes(c, OPK_JOIN), 1);
    circuit_free(c);
}

static void test_with_query_sees_earlier_ones_and_hides_tables(void **state)
{
    (void)state;
    Circuit *c = compile_ok(TABLES "CREATE VIEW v AS WITH u AS (SELECT a AS k FROM t), "
                                   "w (kk) AS (SELECT k FROM u) SELECT kk FROM w;");
    const Relation *v = rel(c, "v");
    assert_int_equal(v->ncol, 1);
    assert_string_equal(v->colnames[0], "kk");
    circuit_free(c);
    /* a WITH query cannot see itself (no recursion) nor later ones */
    expect_error(TABLES "CREATE VIEW v AS WITH x AS (SELECT * FROM y), y AS (SELECT a FROM t) "
                        "SELECT * FROM x;",
                 SL_ESEMANTIC, 3, 43, "\"y\" does not exist");
}

static void test_left_join_condition_stays_off_the_preserved_side(void **state)
{
    (void)state;
    /* ON t.b > 1 names only the preserved side: it must not filter t's
       source (t's rows without a match still appear) */
    Circuit *c = compile_ok(TABLES "CREATE VIEW v AS SELECT t.a, u.c FROM t LEFT JOIN u "
                                   "ON t.a = u.a AND t.b > 1;");
    int src = rel(c, "t")->node;
    int filtered_t = 0, unions = 0;
    for (int i = 0; i < c->nnodes; i++) {
        const CNode *n = c->nodes[i];
        filtered_t += n->k == OPK_MAP && n->filter && n->in[0] == src;
        unions += n->k == OPK_UNION && (n->in[0] == src || n->in[1] == src);
    }
    /* one filtered copy looks for matches; t itself feeds the unmatched part */
    assert_int_equal(filtered_t, 1);
    assert_int_equal(unions, 1);
    const Relation *v = rel(c, "v");
    assert_true(v->types[1].nullable);
    circuit_free(c);
}

static void test_using_columns_come_first_once(void **state)
{
    (void)state;
    Circuit *c = compile_ok(TABLES "CREATE VIEW v AS SELECT * FROM t FULL JOIN u USING (a, s);"
                                   "CREATE VIEW w AS SELECT t.a AS ta, u.a AS ua, a FROM t "
                                   "NATURAL JOIN u;");
    const Relation *v = rel(c, "v");
    assert_int_equal(v->ncol, 4);
    assert_string_equal(v->colnames[0], "a");
    assert_string_equal(v->colnames[1], "s");
    assert_string_equal(v->colnames[2], "b");
    assert_string_equal(v->colnames[3], "c");
    assert_int_equal(v->types[0].kind, TK_BIGINT); /* common type of INT and BIGINT */
    assert_true(v->types[2].nullable);             /* b is NOT NULL in t, padded here */
    assert_int_equal(rel(c, "w")->ncol, 3);
    circuit_free(c);
}

static void test_intersect_binds_tighter_than_union(void **state)
{
    (void)state;
    Arena *a = arena_new(4096);
    Program *prog;
    Err e = {0};
    assert_int_equal(sql_parse("CREATE VIEW v AS SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 "
                               "EXCEPT ALL SELECT 4;", a, &prog, &e), 0);
    Select *q = prog->stmts[0]->query;
    assert_int_equal(q->setop, SET_UNION);
    Select *r = q->next; /* SELECT * FROM (SELECT 2 INTERSECT SELECT 3) */
    assert_int_equal(r->nfrom, 1);
    assert_int_equal(r->from[0]->k, F_SUBQUERY);
    assert_int_equal(r->from[0]->sub->setop, SET_INTERSECT);
    assert_int_equal(r->setop, SET_EXCEPT_ALL);
    assert_null(r->next->next);
    arena_free(a);
}

static void test_values_has_the_rows_common_types(void **state)
{
    (void)state;
    Circuit *c = compile_ok(TABLES "CREATE VIEW v AS VALUES (1, 'a'), (2.5, NULL);"
                                   "CREATE VIEW w AS SELECT t.x FROM (VALUES (1), (2)) AS t (x);");
    const Relation *v = rel(c, "v");
    assert_int_equal(v->ncol, 2);
    assert_string_equal(v->colnames[0], "column1");
    assert_int_equal(v->types[0].kind, TK_DECIMAL);
    assert_false(v->types[0].nullable);
    assert_int_equal(v->types[1].kind, TK_VARCHAR);
    assert_true(v->types[1].nullable);
    assert_int_equal(count_nodes(c, OPK_CONST), 2);
    circuit_free(c);
}

static void test_join_and_set_operation_errors_name_their_place(void **state)
{
    (void)state;
    expect_error(TABLES "CREATE VIEW v AS SELECT * FROM t JOIN u USING (c);", SL_ESEMANTIC, 3, 34,
                 "\"c\" in USING is not a column of the left input");
    expect_error(TABLES "CREATE VIEW v AS SELECT * FROM t JOIN (SELECT a > 0 AS a FROM u) q "
                        "USING (a);",
                 SL_ESEMANTIC, 3, 34, "incompatible types INT and BOOLEAN");
    expect_error(TABLES "CREATE VIEW v AS SELECT a > 1 FROM t\n  INTERSECT SELECT c FROM u;",
                 SL_ESEMANTIC, 4, 13, "INTERSECT column 1 has incompatible types BOOLEAN and INT");
    expect_error(TABLES "CREATE VIEW v AS SELECT a, b FROM t EXCEPT ALL SELECT a FROM u;",
                 SL_ESEMANTIC, 3, 48, "each EXCEPT ALL query must have the same number");
    expect_error(TABLES "CREATE VIEW v AS VALUES (1, 2), (3);", SL_ESEMANTIC, 3, 34,
                 "VALUES rows must all have the same number of columns");
    expect_error(TABLES "CREATE VIEW v AS VALUES (1), ('x' = 1), (TRUE);", SL_ESEMANTIC, 3, 31,
                 "VALUES column 1 has incompatible types INT and BOOLEAN");
    expect_error(TABLES "CREATE VIEW v AS WITH x (p, q) AS (SELECT a FROM t) SELECT p FROM x;",
                 SL_ESEMANTIC, 3, 23, "has 1 columns but 2 column names");
    expect_error(TABLES "CREATE VIEW v AS WITH x AS (SELECT a FROM t), x AS (SELECT a FROM u) "
                        "SELECT a FROM x;",
                 SL_ESEMANTIC, 3, 47, "\"x\" is given more than once");
    expect_error(TABLES "CREATE VIEW v AS WITH RECURSIVE x(n) AS (SELECT a FROM t UNION "
                        "SELECT n + 1 FROM x WHERE n < 3 ORDER BY n) SELECT n FROM x;",
                 SL_EUNSUPPORTED, 3, 42, "inside the recursive query \"x\" are not supported yet");
    expect_error(TABLES "CREATE VIEW v AS SELECT t.a FROM t LEFT JOIN u\n  ON u.a = "
                        "(SELECT MAX(c) FROM u);",
                 SL_EUNSUPPORTED, 4, 6, "subqueries in an outer join's ON clause");
    /* an alias on a parenthesised join hides the names inside */
    expect_error(TABLES "CREATE VIEW v AS SELECT t.b FROM (t JOIN u ON t.a = u.a) AS x (p);",
                 SL_ESEMANTIC, 3, 25, "unknown table or alias \"t\"");
}

/* The join of the program's only join (fails when there is none). */
static const CNode *the_join(const Circuit *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->k == OPK_JOIN)
            return c->nodes[i];
    fail_msg("no join");
    return NULL;
}

/* Join narrowing (plan_prune.c): the inputs keep the columns read after
   the join, through a chain of maps, and the keys; CC_NO_NARROW keeps the
   older shape (every column, unread ones constants). */
static void test_join_inputs_keep_only_the_columns_read_after_it(void **state)
{
    (void)state;
    const char *sql = TABLES "CREATE VIEW v AS SELECT q.a * 2 AS a2 FROM "
                             "(SELECT t.a, t.s, u.s AS us, u.a AS ua FROM t JOIN u "
                             "ON t.b = u.c) AS q WHERE q.a > 0;";
    Circuit *c = compile_ok(sql);
    const CNode *j = the_join(c);
    /* t: a (read), b (key); u: c (key); s, us, ua read by nobody */
    assert_int_equal(j->ncol, 3);
    const CNode *l = c->nodes[j->in[0]], *r = c->nodes[j->in[1]];
    assert_int_equal(l->k, OPK_MAP);
    assert_int_equal(l->ncol, 2);
    assert_int_equal(r->k, OPK_MAP);
    assert_int_equal(r->ncol, 1);
    assert_int_equal(j->nkeys, 1);
    assert_int_equal(l->proj[j->lkeys[0]]->col, 1); /* t.b */
    assert_int_equal(r->types[j->rkeys[0]].kind, l->types[j->lkeys[0]].kind);
    for (int i = 0; i < c->nnodes; i++) /* node ids stay topological */
        for (int k = 0; k < c->nodes[i]->nin; k++)
            assert_true(c->nodes[i]->in[k] < i);
    circuit_free(c);

    Err e = {0};
    assert_int_equal(circuit_compile_with(sql, NULL, 0, CC_NO_NARROW, &c, &e), 0);
    j = the_join(c); /* t's 3 columns, u's 3 and u.c not null */
    assert_int_equal(j->ncol, 7);
    circuit_free(c);

    /* a view that is the join's rows keeps every column */
    c = compile_ok(TABLES "CREATE VIEW w AS SELECT t.a, t.b, t.s, u.a AS ua, u.c, u.s AS us "
                               "FROM t JOIN u ON t.b = u.c;");
    assert_int_equal(the_join(c)->ncol, 7);
    circuit_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_with_query_used_twice_is_planned_once),
        cmocka_unit_test(test_with_query_sees_earlier_ones_and_hides_tables),
        cmocka_unit_test(test_left_join_condition_stays_off_the_preserved_side),
        cmocka_unit_test(test_using_columns_come_first_once),
        cmocka_unit_test(test_intersect_binds_tighter_than_union),
        cmocka_unit_test(test_values_has_the_rows_common_types),
        cmocka_unit_test(test_join_and_set_operation_errors_name_their_place),
        cmocka_unit_test(test_join_inputs_keep_only_the_columns_read_after_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

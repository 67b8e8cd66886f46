/*
 * tests/sql/test_parse.c - the SQL front end: what it accepts, and the
 * line, column and wording of what it rejects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#include "sql/ast.h"
#include "sql/sql.h"

static Err compile(const char *sql)
{
    Err e = {0};
    Circuit *c = NULL;
    if (circuit_compile(sql, &c, &e) == 0)
        circuit_free(c);
    return e;
}

static void expect_error(const char *sql, int code, int line, int col, const char *words)
{
    Err e = compile(sql);
    if (e.code != code || e.line != line || e.col != col || !strstr(e.msg, words))
        fail_msg("for %s\n got code %d at %d:%d: %s\n want code %d at %d:%d containing \"%s\"",
                 sql, e.code, e.line, e.col, e.msg, code, line, col, words);
}

static void test_parse_accepts_every_column_type(void **state)
{
    (void)state;
    Err e = compile("CREATE TABLE t (a BOOLEAN, b TINYINT, c SMALLINT, d INT, e INTEGER,\n"
                    " f BIGINT, g DECIMAL(10,2), h REAL, i DOUBLE, j VARCHAR(5), k CHAR(3),\n"
                    " l TEXT, m DATE, n TIME, o TIMESTAMP NOT NULL, PRIMARY KEY (d));");
    assert_int_equal(e.code, 0);
}

static void test_parse_accepts_comments_and_case_insensitive_names(void **state)
{
    (void)state;
    Err e = compile("-- a comment\ncreate table T (A int /* inline */);\n"
                    "CREATE VIEW v AS SELECT t.a AS x FROM t WHERE A > 1;");
    assert_int_equal(e.code, 0);
}

static void test_parse_reports_line_column_and_what_was_expected(void **state)
{
    (void)state;
    expect_error("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM t WHERE;", SL_EPARSE,
                 2, 39, "expected an expression");
    expect_error("CREATE TABLE t (a INTT);", SL_EPARSE, 1, 19, "expected a type name");
    expect_error("CREATE TABLE t (a INT", SL_EPARSE, 1, 22, "end of input");
    expect_error("SELECT 1;", SL_EUNSUPPORTED, 1, 1, "not supported yet");
}

static void test_parse_names_unsupported_constructs(void **state)
{
    (void)state;
    const char *t = "CREATE TABLE t (a INT, b INT);\n";
    char sql[512];
    snprintf(sql, sizeof(sql),
             "%sCREATE VIEW v AS WITH RECURSIVE x(n) AS (SELECT a FROM t UNION SELECT n FROM x "
             "LIMIT 3) SELECT n FROM x;", t);
    expect_error(sql, SL_EUNSUPPORTED, 2, 42, "inside the recursive query \"x\" are not supported yet");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a FROM t ORDER BY a LIMIT a;", t);
    expect_error(sql, SL_EUNSUPPORTED, 2, 51, "LIMIT must be an integer literal");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a, (SELECT MAX(b) FROM t) FROM t GROUP BY a;", t);
    expect_error(sql, SL_EUNSUPPORTED, 2, 28, "a subquery in the select list is not supported yet");
    expect_error("CREATE TABLE t (a DECIMAL(39, 2));", SL_EUNSUPPORTED, 1, 27, "DECIMAL precision 39");
    expect_error("CREATE TABLE t (a INTERVAL);", SL_EUNSUPPORTED, 1, 19, "INTERVAL");
}

static void test_bind_reports_unknown_and_ambiguous_names(void **state)
{
    (void)state;
    const char *t = "CREATE TABLE t (a INT, b INT);\nCREATE TABLE u (a INT);\n";
    char sql[512];
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT c FROM t;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 25, "column \"c\" not found");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a FROM t, u;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 25, "ambiguous");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a FROM nope;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 32, "\"nope\" does not exist");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT b, SUM(a) FROM t GROUP BY a;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 25, "must appear in GROUP BY");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a FROM t WHERE SUM(a) > 1;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 40, "not allowed in WHERE");
    snprintf(sql, sizeof(sql), "%sCREATE VIEW v AS SELECT a + TRUE FROM t;", t);
    expect_error(sql, SL_ESEMANTIC, 3, 25, "not defined for INT and BOOLEAN");
}

static void test_plan_bank_program_compiles_to_joined_aggregates(void **state)
{
    (void)state;
    FILE *f = fopen("examples/bank.sql", "rb");
    char text[8192];
    size_t n;
    if (!f)
        f = fopen("../../../../examples/bank.sql", "rb");
    assert_non_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = 0;
    fclose(f);
    Circuit *c = NULL;
    Err e = {0};
    assert_int_equal(circuit_compile(text, &c, &e), 0);
    int nagg = 0, njoin = 0;
    for (int i = 0; i < c->nnodes; i++) {
        nagg += c->nodes[i]->k == OPK_AGG && c->nodes[i]->linear;
        njoin += c->nodes[i]->k == OPK_JOIN;
    }
    assert_int_equal(nagg, 2);
    assert_int_equal(njoin, 1);
    int b = circuit_find_rel(c, "BALANCE");
    assert_true(b >= 0);
    assert_true(c->rels[b].materialized);
    assert_int_equal(c->rels[b].ncol, 2);
    circuit_free(c);
}

static void test_connectors_json_error_points_into_the_string(void **state)
{
    (void)state;
    expect_error("CREATE TABLE t (a INT) WITH ('connectors' = '[{\n  \"transport\": }]');",
                 SL_ECONFIG, 2, 16, "invalid JSON");
    expect_error("CREATE TABLE t (a INT) WITH ('colour' = 'red');", SL_ECONFIG, 1, 30,
                 "unknown property 'colour'");
}

/* 'retain_input': a table's, 'true' or 'false'; a sink that keeps the
   contents, while the table stays without a change stream (sink -1) and
   not materialized. */
static void test_retain_input(void **state)
{
    (void)state;
    expect_error("CREATE TABLE t (a INT) WITH ('retain_input' = 'yes');", SL_ECONFIG, 1, 48,
                 "'retain_input' must be 'true' or 'false'");
    expect_error("CREATE TABLE t (a INT);\n"
                 "CREATE VIEW v WITH ('retain_input' = 'true') AS SELECT a FROM t;",
                 SL_ECONFIG, 2, 21, "'retain_input' applies to tables");
    Err err = {0};
    Circuit *c = NULL;
    assert_int_equal(
        circuit_compile("CREATE TABLE t (a INT) WITH ('retain_input' = 'true');", &c, &err), 0);
    const Relation *r = &c->rels[circuit_find_rel(c, "t")];
    assert_true(r->retain && !r->materialized && rel_keeps(r));
    assert_int_equal(r->sink, -1);
    int sinks = 0;
    for (int i = 0; i < c->nnodes; i++)
        sinks += c->nodes[i]->k == OPK_SINK;
    assert_int_equal(sinks, 1);
    circuit_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts_every_column_type),
        cmocka_unit_test(test_retain_input),
        cmocka_unit_test(test_parse_accepts_comments_and_case_insensitive_names),
        cmocka_unit_test(test_parse_reports_line_column_and_what_was_expected),
        cmocka_unit_test(test_parse_names_unsupported_constructs),
        cmocka_unit_test(test_bind_reports_unknown_and_ambiguous_names),
        cmocka_unit_test(test_plan_bank_program_compiles_to_joined_aggregates),
        cmocka_unit_test(test_connectors_json_error_points_into_the_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

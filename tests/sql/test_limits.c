/*
 * tests/sql/test_limits.c - the front end's bounds (ast.h): nesting past
 * SQL_MAX_NESTING, expression trees higher than SQL_MAX_HEIGHT and queries
 * nested past SQL_MAX_QUERY_NESTING are errors with line, column and the
 * limit, never a stack overflow; long AND/OR chains stay shallow and bind
 * to one n-ary node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#include "expr/expr.h"
#include "sql/ast.h"
#include "sql/sql.h"

#define TABLE "CREATE TABLE t (a INT, b BOOLEAN);\n"
#define VIEW "CREATE VIEW v AS SELECT " /* 24 characters: the select list starts in column 25 */

static Buf text;

static void start(void)
{
    buf_reset(&text);
    buf_puts(&text, TABLE VIEW);
}

static void repeat(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        buf_puts(&text, s);
}

static Err compile(Circuit **out)
{
    Err e = {0};
    Circuit *c = NULL;
    if (circuit_compile(buf_cstr(&text), &c, &e) == 0) {
        if (out)
            *out = c;
        else
            circuit_free(c);
    }
    return e;
}

static void expect_error(int code, int line, int col, const char *words)
{
    Err e = compile(NULL);
    if (e.code != code || e.line != line || e.col != col || !strstr(e.msg, words))
        fail_msg("got code %d at %d:%d: %s\n want code %d at %d:%d containing \"%s\"", e.code,
                 e.line, e.col, e.msg, code, line, col, words);
}

static void expect_ok(void)
{
    Err e = compile(NULL);
    if (e.code)
        fail_msg("got code %d at %d:%d: %s", e.code, e.line, e.col, e.msg);
}

static void test_parentheses_nested_past_the_limit_are_an_error_at_the_deepest(void **state)
{
    (void)state;
    start();
    repeat("(", 100000);
    buf_puts(&text, "a");
    repeat(")", 100000);
    buf_puts(&text, " FROM t;");
    /* the query and its select item take two levels: the 999th "(" opens
       the 1000th, and the next "(" (column 25 + 999) is one too many */
    expect_error(SL_EPARSE, 2, 25 + 999, "expression nested too deeply (limit 1000)");
}

static void test_parentheses_nested_just_below_the_limit_compile(void **state)
{
    (void)state;
    start();
    repeat("(", SQL_MAX_NESTING - 10);
    buf_puts(&text, "a");
    repeat(")", SQL_MAX_NESTING - 10);
    buf_puts(&text, " FROM t;");
    expect_ok();
}

static void test_not_and_unary_minus_chains_hit_the_nesting_limit(void **state)
{
    (void)state;
    start();
    repeat("NOT ", 50000);
    buf_puts(&text, "b FROM t;");
    expect_error(SL_EPARSE, 2, 25 + 4 * 998, "expression nested too deeply (limit 1000)");
    start();
    repeat("- ", 50000);
    buf_puts(&text, "a FROM t;");
    expect_error(SL_EPARSE, 2, 25 + 2 * 998, "expression nested too deeply (limit 1000)");
}

static void test_nested_subqueries_and_case_hit_the_nesting_limit(void **state)
{
    (void)state;
    start();
    buf_puts(&text, "a FROM t WHERE ");
    repeat("EXISTS (SELECT a FROM t WHERE ", 2000);
    buf_puts(&text, "a = 1");
    repeat(")", 2000);
    buf_puts(&text, ";");
    Err e = compile(NULL);
    assert_int_equal(e.code, SL_EPARSE);
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.msg, "expression nested too deeply (limit 1000)"));
    start();
    repeat("CASE WHEN a = 1 THEN 1 ELSE ", 5000);
    buf_puts(&text, "0");
    repeat(" END", 5000);
    buf_puts(&text, " FROM t;");
    e = compile(NULL);
    assert_int_equal(e.code, SL_EPARSE);
    assert_non_null(strstr(e.msg, "expression nested too deeply (limit 1000)"));
}

static void test_a_chain_of_ten_thousand_operators_is_the_limit(void **state)
{
    (void)state;
    /* a + a + ... with n terms is a tree n high */
    start();
    repeat("a+", SQL_MAX_HEIGHT - 1);
    buf_puts(&text, "a FROM t;");
    expect_ok();
    start();
    repeat("a+", 100000);
    buf_puts(&text, "a FROM t;");
    /* the 10000th "+" (column 25 + 2 * 10000 - 1) makes the tree 10001 high */
    expect_error(SL_EPARSE, 2, 25 + 2 * SQL_MAX_HEIGHT - 1,
                 "expression nested too deeply (limit 10000)");
}

static void test_common_table_expressions_chained_past_the_limit_are_an_error(void **state)
{
    (void)state;
    buf_reset(&text);
    buf_puts(&text, TABLE "CREATE VIEW v AS WITH c0 AS (SELECT a FROM t)");
    for (int i = 1; i < 600; i++)
        buf_printf(&text, ", c%d AS (SELECT a FROM c%d)", i, i - 1);
    buf_puts(&text, " SELECT a FROM c599;");
    Err e = compile(NULL);
    assert_int_equal(e.code, SL_ESEMANTIC);
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.msg, "queries nested too deeply (limit 500"));
}

static void test_a_from_clause_of_more_than_500_relations_is_an_error(void **state)
{
    (void)state;
    start();
    buf_puts(&text, "t0.a FROM t t0");
    for (int i = 1; i < 20000; i++)
        buf_printf(&text, " LEFT JOIN t t%d ON t%d.a = t%d.a", i, i, i - 1);
    buf_puts(&text, ";");
    Err e = compile(NULL);
    assert_int_equal(e.code, SL_EPARSE);
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.msg, "too many relations in one FROM clause (limit 500)"));
    /* a subquery's FROM counts its own */
    start();
    buf_puts(&text, "x.a FROM (SELECT t0.a FROM t t0");
    for (int i = 1; i < 400; i++)
        buf_printf(&text, " JOIN t t%d ON t%d.a = t%d.a", i, i, i - 1);
    buf_puts(&text, ") x");
    for (int i = 1; i < 400; i++)
        buf_printf(&text, " JOIN t u%d ON u%d.a = x.a", i, i);
    buf_puts(&text, ";");
    expect_ok();
    /* parentheses around a join are no relation of their own */
    start();
    buf_puts(&text, "a FROM ");
    repeat("(", 600);
    buf_puts(&text, "t");
    repeat(")", 600);
    buf_puts(&text, ";");
    expect_ok();
}

static void test_a_select_list_of_100000_items_compiles(void **state)
{
    (void)state;
    /* the parser's arrays grow by doubling (they were copied per item) */
    start();
    for (int i = 0; i < 100000; i++)
        buf_printf(&text, "%sa AS c%d", i ? ", " : "", i);
    buf_puts(&text, " FROM t;");
    expect_ok();
}

/* The view's filter: the MAP node's. */
static const Expr *view_filter(const Circuit *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->k == OPK_MAP && c->nodes[i]->filter)
            return c->nodes[i]->filter;
    return NULL;
}

static void test_twenty_thousand_conjuncts_bind_to_one_and(void **state)
{
    (void)state;
    for (int or = 0; or < 2; or++) {
        start();
        buf_puts(&text, "a FROM t WHERE ");
        for (int i = 0; i < 20000; i++)
            buf_printf(&text, "%sa <> %d", i ? (or ? " OR " : " AND ") : "", i);
        buf_puts(&text, ";");
        Circuit *c = NULL;
        Err e = compile(&c);
        if (e.code)
            fail_msg("got code %d at %d:%d: %s", e.code, e.line, e.col, e.msg);
        const Expr *f = view_filter(c);
        assert_non_null(f);
        assert_int_equal(f->k, or ? E_OR : E_AND);
        assert_int_equal(f->na, 20000);
        /* in the written order */
        assert_int_equal(f->a[0]->a[1]->ci, 0);
        assert_int_equal(f->a[19999]->a[1]->ci, 19999);
        circuit_free(c);
    }
}

static void test_conjuncts_still_name_the_operand_that_is_not_boolean(void **state)
{
    (void)state;
    start();
    buf_puts(&text, "b AND b AND a AND b AS x FROM t;");
    expect_error(SL_ESEMANTIC, 2, 37, "AND needs a BOOLEAN operand, not INT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parentheses_nested_past_the_limit_are_an_error_at_the_deepest),
        cmocka_unit_test(test_parentheses_nested_just_below_the_limit_compile),
        cmocka_unit_test(test_not_and_unary_minus_chains_hit_the_nesting_limit),
        cmocka_unit_test(test_nested_subqueries_and_case_hit_the_nesting_limit),
        cmocka_unit_test(test_a_chain_of_ten_thousand_operators_is_the_limit),
        cmocka_unit_test(test_common_table_expressions_chained_past_the_limit_are_an_error),
        cmocka_unit_test(test_a_from_clause_of_more_than_500_relations_is_an_error),
        cmocka_unit_test(test_a_select_list_of_100000_items_compiles),
        cmocka_unit_test(test_twenty_thousand_conjuncts_bind_to_one_and),
        cmocka_unit_test(test_conjuncts_still_name_the_operand_that_is_not_boolean),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    buf_free(&text);
    return rc;
}

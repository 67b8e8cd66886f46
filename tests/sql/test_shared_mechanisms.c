/*
 * tests/sql/test_shared_mechanisms.c - the mechanisms the compiler's files share
 * since the split of issue 14: the planner's node builders and Z-set
 * algebra (src/sql/plan_node.c), the one AST walker behind "has a
 * subquery" and "has an aggregate", and the parser's lists grown through
 * base/vec.h (parse*.c: select items, FROM items, IN lists, VALUES rows,
 * GROUP BY, ORDER BY, name lists, WITH queries, columns, statements), read
 * back long enough to grow many times and in the order written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "sql/sql_int.h"

/* A planner context over an empty circuit, with one two-column source. */
typedef struct Fixture {
    Circuit c;
    Err err;
    P p;
    int src;
} Fixture;

static void fixture_init(Fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->c.arena = arena_new(4096);
    f->p.a = f->c.arena;
    f->p.c = &f->c;
    f->p.err = &f->err;
    CNode *s = sql__add_node(&f->p, OPK_SOURCE, 0, 2);
    s->types[0] = type_make(TK_INT, true);
    s->types[1] = type_make(TK_VARCHAR, false);
    f->src = s->id;
}

static int setup(void **state)
{
    Fixture *f = malloc(sizeof(*f));
    fixture_init(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    arena_free(f->c.arena);
    free(f);
    return 0;
}

static void assert_types_equal(const CNode *a, const CNode *b)
{
    assert_int_equal(a->ncol, b->ncol);
    for (int i = 0; i < a->ncol; i++) {
        assert_int_equal(a->types[i].kind, b->types[i].kind);
        assert_int_equal(a->types[i].nullable, b->types[i].nullable);
    }
}

static void test_nodes_get_their_index_as_id_and_inputs_before_them(void **state)
{
    Fixture *f = *state;
    int prev = f->src;
    for (int i = 0; i < 1000; i++) /* the node array grows many times */
        prev = sql__unary(&f->p, OPK_DISTINCT, prev);
    assert_int_equal(f->c.nnodes, 1001);
    for (int i = 0; i < f->c.nnodes; i++) {
        assert_int_equal(f->c.nodes[i]->id, i);
        for (int k = 0; k < f->c.nodes[i]->nin; k++)
            assert_true(f->c.nodes[i]->in[k] < i);
    }
    assert_types_equal(f->c.nodes[1000], f->c.nodes[f->src]);
}

static void test_minus_is_a_union_with_the_negated_input(void **state)
{
    Fixture *f = *state;
    int d = sql__unary(&f->p, OPK_DISTINCT, f->src);
    int m = sql__minus(&f->p, f->src, d);
    const CNode *u = f->c.nodes[m];
    assert_int_equal(u->k, OPK_UNION);
    assert_int_equal(u->nin, 2);
    assert_int_equal(u->in[0], f->src);
    const CNode *neg = f->c.nodes[u->in[1]];
    assert_int_equal(neg->k, OPK_NEGATE);
    assert_int_equal(neg->in[0], d);
    assert_types_equal(u, f->c.nodes[f->src]);
    int one[1] = {f->src};
    assert_int_equal(sql__sum(&f->p, one, 1), f->src); /* a sum of one is itself */
}

static void test_semi_join_on_all_columns_keeps_the_left_columns(void **state)
{
    Fixture *f = *state;
    int s = sql__unary(&f->p, OPK_DISTINCT, f->src);
    const CNode *map = f->c.nodes[sql__semi_all(&f->p, f->src, s)];
    assert_int_equal(map->k, OPK_MAP);
    assert_null(map->filter);
    assert_types_equal(map, f->c.nodes[f->src]);
    const CNode *j = f->c.nodes[map->in[0]];
    assert_int_equal(j->k, OPK_JOIN);
    assert_int_equal(j->nkeys, 2);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(j->lkeys[k], k);
        assert_int_equal(j->rkeys[k], k);
    }
    assert_int_equal(j->ncol, 4);
    /* a cross join (no keys) takes no key arrays from the caller */
    const CNode *x = f->c.nodes[sql__join(&f->p, f->src, s, NULL, NULL, 0)];
    assert_int_equal(x->nkeys, 0);
    assert_non_null(x->lkeys);
    assert_int_equal(x->ncol, 4);
}

static void test_remap_moves_only_columns_from_the_boundary(void **state)
{
    Fixture *f = *state;
    Expr *e = sql__mk(&f->p, E_EQ, type_make(TK_BOOL, false), 2);
    e->a[0] = expr_col(f->p.a, 1, type_make(TK_INT, false));
    e->a[1] = expr_col(f->p.a, 5, type_make(TK_INT, false));
    Expr *r = sql__remap(&f->p, e, 3, -3);
    assert_int_equal(r->a[0]->col, 1);
    assert_int_equal(r->a[1]->col, 2);
    assert_int_equal(e->a[1]->col, 5); /* a copy: e is unchanged */
    assert_true(sql__refs_within(r, 0, 3));
    assert_false(sql__refs_within(e, 0, 3));
    assert_true(sql__refs_any(e));
    assert_false(sql__refs_any(expr_const_i64(f->p.a, type_make(TK_BIGINT, false), 7)));
}

/* The first select item of the one view in sql. */
static Ast *first_item(Arena *a, const char *sql)
{
    Program *prog;
    Err e = {0};
    if (sql_parse(sql, a, &prog, &e))
        fail_msg("parse failed: %d:%d: %s", e.line, e.col, e.msg);
    return prog->stmts[0]->query->items[0].e;
}

static void test_walker_sees_aggregates_and_subqueries_but_not_inside_them(void **state)
{
    (void)state;
    Arena *a = arena_new(4096);
    Ast *x = first_item(a, "CREATE VIEW v AS SELECT 1 + (SELECT MAX(b) FROM t) FROM t;");
    assert_true(sql__has_subquery(x));
    assert_false(sql__has_agg(x)); /* MAX belongs to the subquery */
    x = first_item(a, "CREATE VIEW v AS SELECT CASE WHEN b IN (1, 2) THEN SUM(b) END FROM t;");
    assert_false(sql__has_subquery(x));
    assert_true(sql__has_agg(x));
    x = first_item(a, "CREATE VIEW v AS SELECT b NOT IN (SELECT c FROM u) FROM t;");
    assert_true(sql__has_subquery(x));
    /* a window function is an aggregate only over one */
    x = first_item(a, "CREATE VIEW v AS SELECT SUM(b) OVER (ORDER BY b) FROM t;");
    assert_false(sql__has_agg(x));
    x = first_item(a, "CREATE VIEW v AS SELECT SUM(b) OVER (ORDER BY MAX(b)) FROM t;");
    assert_true(sql__has_agg(x));
    arena_free(a);
}

/* n copies of fmt (one %d: the index), separated by sep. */
static void repeat(Buf *b, int n, const char *fmt, const char *sep)
{
    for (int i = 0; i < n; i++) {
        if (i)
            buf_printf(b, "%s", sep);
        buf_printf(b, fmt, i);
    }
}

static void test_long_lists_of_every_kind_parse_in_order(void **state)
{
    (void)state;
    enum { N = 300 };
    Buf b = {0};
    buf_printf(&b, "CREATE TABLE t (");
    repeat(&b, N, "c%d INT", ", ");
    buf_printf(&b, ", PRIMARY KEY (");
    repeat(&b, N, "c%d", ", ");
    buf_printf(&b, ")) WITH (");
    repeat(&b, N, "'k%d' = 'v'", ", ");
    buf_printf(&b, ");\nCREATE VIEW v (");
    repeat(&b, N, "n%d", ", ");
    buf_printf(&b, ") AS WITH ");
    repeat(&b, N, "w%d (x) AS (SELECT 1)", ", ");
    buf_printf(&b, " SELECT ");
    repeat(&b, N, "c%d", ", ");
    buf_printf(&b, " FROM ");
    repeat(&b, N, "t AS a%d", ", ");
    buf_printf(&b, " JOIN t USING (");
    repeat(&b, N, "c%d", ", ");
    buf_printf(&b, ") WHERE c0 IN (");
    repeat(&b, N, "%d", ", ");
    buf_printf(&b, ") GROUP BY ");
    repeat(&b, N, "c%d", ", ");
    buf_printf(&b, " ORDER BY ");
    repeat(&b, N, "c%d DESC", ", ");
    buf_printf(&b, ";\nCREATE VIEW x AS VALUES ");
    repeat(&b, N, "(%d)", ", ");
    buf_printf(&b, ";\n");
    repeat(&b, N, "CREATE VIEW s%d AS SELECT 1;", "\n");

    Arena *a = arena_new(4096);
    Program *prog;
    Err e = {0};
    if (sql_parse(buf_cstr(&b), a, &prog, &e))
        fail_msg("parse failed: %d:%d: %s", e.line, e.col, e.msg);
    assert_int_equal(prog->n, 3 + N);
    const Stmt *t = prog->stmts[0], *v = prog->stmts[1], *x = prog->stmts[2];
    assert_int_equal(t->ncols, N);
    assert_int_equal(t->npk, N);
    assert_int_equal(t->nprops, N);
    assert_int_equal(v->ncol_aliases, N);
    const Select *q = v->query;
    assert_int_equal(q->nctes, N);
    assert_int_equal(q->nitems, N);
    assert_int_equal(q->nfrom, N);
    const FromItem *j = q->from[N - 1];
    assert_int_equal(j->k, F_JOIN);
    assert_int_equal(j->nusing, N);
    assert_int_equal(q->where->args.n, N);
    assert_int_equal(q->group.n, N);
    assert_int_equal(q->norder, N);
    assert_int_equal(x->query->nvalues, N);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        assert_string_equal(t->cols[i].name, name);
        assert_string_equal(t->pk[i], name);
        assert_string_equal(q->items[i].e->name, name);
        assert_string_equal(j->using_cols[i], name);
        assert_string_equal(q->group.v[i]->name, name);
        assert_string_equal(q->order[i].e->name, name);
        assert_true(q->order[i].desc);
        snprintf(name, sizeof(name), "n%d", i);
        assert_string_equal(v->col_aliases[i], name);
        snprintf(name, sizeof(name), "w%d", i);
        assert_string_equal(q->ctes[i].name, name);
        assert_int_equal(q->ctes[i].ncol_aliases, 1);
        snprintf(name, sizeof(name), "%d", i);
        assert_string_equal(q->where->args.v[i]->str, name);
        assert_string_equal(x->query->values[i].v[0]->str, name);
        snprintf(name, sizeof(name), "s%d", i);
        assert_string_equal(prog->stmts[3 + i]->name, name);
    }
    arena_free(a);
    buf_free(&b);
}

#define WITH_FIXTURE(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        WITH_FIXTURE(test_nodes_get_their_index_as_id_and_inputs_before_them),
        WITH_FIXTURE(test_minus_is_a_union_with_the_negated_input),
        WITH_FIXTURE(test_semi_join_on_all_columns_keeps_the_left_columns),
        WITH_FIXTURE(test_remap_moves_only_columns_from_the_boundary),
        cmocka_unit_test(test_walker_sees_aggregates_and_subqueries_but_not_inside_them),
        cmocka_unit_test(test_long_lists_of_every_kind_parse_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

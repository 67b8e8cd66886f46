/*
 * tests/sql/test_lineage.c - field-level lineage (sql/lineage.h) through
 * each planner construct: the kind of every (view column, table column)
 * pair and the row-deciding bits of a view, read with lineage_col and
 * lineage_rows over small programs; the constant pruning rules; and the
 * renderings (JSON, dot, OpenLineage, impact) built and freed under ASan.
 * tests/e2e/test_lineage.py proves the same rules by experiment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "circuit/circuit.h"
#include "sql/lineage.h"
#include "sql/sql.h"

#define TABLES                                                                                 \
    "CREATE TABLE t (a INT, b INT, s VARCHAR, ts TIMESTAMP);\n"                               \
    "CREATE TABLE u (k INT, v INT);\n"

typedef struct Prog {
    Circuit *c;
    Lineage *l;
} Prog;

static Prog prog(const char *views)
{
    Prog p = {NULL, NULL};
    Err e = {0};
    char text[4096];
    snprintf(text, sizeof(text), "%s%s", TABLES, views);
    if (circuit_compile(text, &p.c, &e))
        fail_msg("does not compile (%d:%d %s):\n%s", e.line, e.col, e.msg, text);
    p.l = lineage_new(p.c);
    return p;
}

static void done(Prog *p)
{
    lineage_free(p->l);
    circuit_free(p->c);
}

static int col_index(const Relation *r, const char *name)
{
    for (int i = 0; i < r->ncol; i++)
        if (!strcasecmp(r->colnames[i], name))
            return i;
    fail_msg("no column %s in %s", name, r->name);
    return -1;
}

/* The kind of view.col from table.tcol ("v.c", "t.a"). */
static LinKind kind(const Prog *p, const char *vc, const char *tc)
{
    char v[64], c[64], t[64], x[64];
    sscanf(vc, "%63[^.].%63s", v, c);
    sscanf(tc, "%63[^.].%63s", t, x);
    int rv = circuit_find_rel(p->c, v), rt = circuit_find_rel(p->c, t);
    assert_true(rv >= 0 && rt >= 0);
    return lineage_col(p->l, rv, col_index(&p->c->rels[rv], c), rt,
                       col_index(&p->c->rels[rt], x));
}

static int rows(const Prog *p, const char *v, const char *tc)
{
    char t[64], x[64];
    sscanf(tc, "%63[^.].%63s", t, x);
    int rv = circuit_find_rel(p->c, v), rt = circuit_find_rel(p->c, t);
    return lineage_rows(p->l, rv, rt, col_index(&p->c->rels[rt], x));
}

static void test_projection_keeps_identity_and_expressions_transform(void **st)
{
    Prog p = prog("CREATE VIEW v AS SELECT a, a + b AS ab, CAST(s AS INT) AS si, 7 AS k "
                  "FROM t WHERE b > 0;\n");
    assert_int_equal(kind(&p, "v.a", "t.a"), LK_IDENTITY);
    assert_int_equal(kind(&p, "v.a", "t.b"), LK_NONE);
    assert_int_equal(kind(&p, "v.ab", "t.a"), LK_TRANSFORMATION);
    assert_int_equal(kind(&p, "v.ab", "t.b"), LK_TRANSFORMATION);
    assert_int_equal(kind(&p, "v.si", "t.s"), LK_TRANSFORMATION);
    assert_int_equal(kind(&p, "v.k", "t.a"), LK_NONE);
    assert_int_equal(rows(&p, "v", "t.b"), LR_FILTER);
    assert_int_equal(rows(&p, "v", "t.a"), 0);
    done(&p);
}

static void test_aggregates_and_views_over_views(void **st)
{
    Prog p = prog("CREATE VIEW g AS SELECT a, SUM(b) AS sb, COUNT(*) AS n FROM t GROUP BY a;\n"
                  "CREATE VIEW h AS SELECT a, sb * 2 AS sb2 FROM g WHERE n > 1;\n");
    assert_int_equal(kind(&p, "g.a", "t.a"), LK_IDENTITY);
    assert_int_equal(kind(&p, "g.sb", "t.b"), LK_AGGREGATION);
    assert_int_equal(kind(&p, "g.n", "t.a"), LK_NONE);
    assert_int_equal(kind(&p, "g.n", "t.b"), LK_NONE);
    assert_int_equal(rows(&p, "g", "t.a"), LR_GROUP_KEY);
    assert_int_equal(kind(&p, "h.sb2", "t.b"), LK_AGGREGATION); /* not lowered */
    assert_int_equal(rows(&p, "h", "t.a"), LR_GROUP_KEY);
    done(&p);
}

static void test_joins_outer_joins_and_set_operations(void **st)
{
    Prog p = prog("CREATE VIEW j AS SELECT t.a, u.v FROM t LEFT JOIN u ON t.a = u.k AND u.v > 3;\n"
                  "CREATE VIEW e AS SELECT a FROM t EXCEPT SELECT k FROM u;\n"
                  "CREATE VIEW i AS SELECT a FROM t INTERSECT SELECT k FROM u;\n"
                  "CREATE VIEW un AS SELECT a FROM t UNION ALL SELECT v + 1 FROM u;\n");
    assert_int_equal(kind(&p, "j.a", "t.a"), LK_IDENTITY);
    assert_int_equal(kind(&p, "j.v", "u.v"), LK_IDENTITY);
    /* keys are also filtered: IS NOT NULL before the join */
    assert_true(rows(&p, "j", "t.a") & LR_JOIN_KEY);
    assert_true(rows(&p, "j", "u.k") & LR_JOIN_KEY);
    assert_int_equal(rows(&p, "j", "u.v"), LR_FILTER);
    /* the subtracted side decides rows, it gives no value */
    assert_int_equal(kind(&p, "e.a", "t.a"), LK_IDENTITY);
    assert_int_equal(kind(&p, "e.a", "u.k"), LK_NONE);
    assert_true(rows(&p, "e", "u.k") & LR_GROUP_KEY);
    assert_int_equal(kind(&p, "i.a", "u.k"), LK_NONE);
    assert_true(rows(&p, "i", "u.k") & LR_GROUP_KEY);
    assert_int_equal(kind(&p, "un.a", "t.a"), LK_IDENTITY);
    assert_int_equal(kind(&p, "un.a", "u.v"), LK_TRANSFORMATION);
    done(&p);
}

static void test_windows_and_top_k_decide_by_order(void **st)
{
    Prog p = prog("CREATE VIEW w AS SELECT a, SUM(b) OVER (PARTITION BY s ORDER BY a) AS sb, "
                  "RANK() OVER (ORDER BY b) AS r FROM t;\n"
                  "CREATE VIEW k AS SELECT a, b FROM t ORDER BY b DESC LIMIT 3;\n"
                  "CREATE VIEW rn AS SELECT a, ROW_NUMBER() OVER (ORDER BY b) AS r FROM t;\n");
    assert_int_equal(kind(&p, "w.sb", "t.b"), LK_AGGREGATION);
    assert_int_equal(kind(&p, "w.r", "t.b"), LK_AGGREGATION);
    assert_true(rows(&p, "w", "t.s") & LR_GROUP_KEY);
    assert_true(rows(&p, "w", "t.a") & LR_ORDER);
    assert_int_equal(rows(&p, "w", "t.ts"), 0); /* ranks: no tie-breaking by the row */
    assert_true(rows(&p, "k", "t.b") & LR_ORDER);
    assert_true(rows(&p, "k", "t.a") & LR_ORDER); /* ties broken by the whole row */
    assert_true(rows(&p, "rn", "t.ts") & LR_ORDER);
    done(&p);
}

static void test_table_functions_and_subqueries(void **st)
{
    Prog p = prog("CREATE VIEW h AS SELECT window_start, COUNT(*) AS n FROM TABLE(HOP(TABLE t, "
                  "DESCRIPTOR(ts), INTERVAL '1' HOUR, INTERVAL '2' HOUR)) GROUP BY window_start;\n"
                  "CREATE VIEW q AS SELECT a, (SELECT MAX(v) FROM u) AS mv FROM t "
                  "WHERE b IN (SELECT k FROM u);\n");
    assert_int_equal(kind(&p, "h.window_start", "t.ts"), LK_TRANSFORMATION);
    assert_true(rows(&p, "h", "t.ts") & LR_GROUP_KEY);
    assert_int_equal(kind(&p, "q.mv", "u.v"), LK_AGGREGATION);
    assert_int_equal(kind(&p, "q.a", "t.a"), LK_IDENTITY);
    assert_true(rows(&p, "q", "t.b") & LR_JOIN_KEY);
    assert_true(rows(&p, "q", "u.k") & LR_JOIN_KEY);
    done(&p);
}

static void test_constants_prune_what_never_counts(void **st)
{
    Prog p = prog("CREATE VIEW f AS SELECT a FROM t WHERE 1 > 2 AND b > 0;\n"
                  "CREATE VIEW nn AS SELECT a FROM t WHERE b < NULLIF(a, a);\n"
                  "CREATE VIEW z AS SELECT a FROM t ORDER BY a LIMIT 0;\n"
                  "CREATE VIEW c AS SELECT CASE WHEN 1 = 0 THEN a WHEN b > 0 THEN b ELSE 0 END "
                  "AS x, CASE WHEN s = 'x' THEN a ELSE a END AS y, COALESCE(1, b) AS w, "
                  "(1 = 2) AND b > 0 AS fa, b > 0 OR 2 > 1 AS tr, b > 0 OR 1 > 2 AS o FROM t;\n"
                  "CREATE VIEW g AS SELECT COUNT(*) AS n, SUM(a) AS sa FROM t WHERE FALSE;\n"
                  "CREATE VIEW self AS SELECT a FROM t WHERE a <> a OR NOT (s = s);\n");
    assert_int_equal(kind(&p, "f.a", "t.a"), LK_NONE);
    assert_int_equal(rows(&p, "f", "t.b"), 0);
    assert_int_equal(kind(&p, "nn.a", "t.a"), LK_NONE);
    assert_int_equal(kind(&p, "z.a", "t.a"), LK_NONE);
    assert_int_equal(kind(&p, "c.x", "t.a"), LK_NONE);
    assert_int_equal(kind(&p, "c.x", "t.b"), LK_TRANSFORMATION);
    assert_int_equal(kind(&p, "c.y", "t.s"), LK_NONE);
    assert_int_equal(kind(&p, "c.y", "t.a"), LK_TRANSFORMATION);
    assert_int_equal(kind(&p, "c.w", "t.b"), LK_NONE);
    assert_int_equal(kind(&p, "c.fa", "t.b"), LK_NONE);
    assert_int_equal(kind(&p, "c.tr", "t.b"), LK_NONE);
    assert_int_equal(kind(&p, "c.o", "t.b"), LK_TRANSFORMATION);
    /* a global aggregate of nothing still has its row, of constants */
    assert_int_equal(kind(&p, "g.sa", "t.a"), LK_NONE);
    assert_int_equal(kind(&p, "self.a", "t.a"), LK_NONE);
    done(&p);
}

static void test_renderings_and_impact(void **st)
{
    Prog p = prog("CREATE VIEW v AS SELECT a, SUM(b) AS sb FROM t WHERE s <> '' GROUP BY a;\n");
    cJSON *j = lineage_json(p.l);
    char *txt = cJSON_PrintUnformatted(j);
    assert_non_null(strstr(txt, "\"sb\":[{\"table\":\"t\",\"column\":\"b\",\"kind\":\"aggregation\"}]"));
    assert_non_null(strstr(txt, "{\"table\":\"t\",\"column\":\"s\",\"kind\":\"filter\"}"));
    cJSON_free(txt);
    cJSON_Delete(j);
    Buf b = BUF_INIT;
    lineage_dot(p.l, NULL, &b);
    buf_cstr(&b);
    assert_non_null(strstr((const char *)b.p, "r0:c1 -> r2:c1 [style=bold, label=\"aggregation\"]"));
    buf_free(&b);
    j = lineage_openlineage(p.l, "ns", "job", "2026-01-01T00:00:00Z", NULL);
    txt = cJSON_PrintUnformatted(j);
    assert_non_null(strstr(txt, "\"subtype\":\"AGGREGATION\""));
    assert_non_null(strstr(txt, "\"subtype\":\"FILTER\""));
    cJSON_free(txt);
    cJSON_Delete(j);
    Err e = {0};
    j = lineage_impact(p.l, "T.S", &e);
    assert_non_null(j);
    txt = cJSON_PrintUnformatted(j);
    assert_string_equal(txt, "{\"source\":\"t.s\",\"columns\":[],\"rows\":[{\"view\":\"v\","
                             "\"kinds\":[\"filter\"]}]}");
    cJSON_free(txt);
    cJSON_Delete(j);
    assert_null(lineage_impact(p.l, "t.nope", &e));
    assert_non_null(strstr(e.msg, "no column named \"nope\""));
    assert_null(lineage_impact(p.l, "v.a", &e)); /* a view is not a source */
    assert_null(lineage_impact(p.l, "nodot", &e));
    done(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_projection_keeps_identity_and_expressions_transform),
        cmocka_unit_test(test_aggregates_and_views_over_views),
        cmocka_unit_test(test_joins_outer_joins_and_set_operations),
        cmocka_unit_test(test_windows_and_top_k_decide_by_order),
        cmocka_unit_test(test_table_functions_and_subqueries),
        cmocka_unit_test(test_constants_prune_what_never_counts),
        cmocka_unit_test(test_renderings_and_impact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

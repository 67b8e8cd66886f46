/*
 * tests/sql/test_progdiff.c - the program diff (sql/progdiff.h) over many
 * small edits of one program: each case compiles an old and a new text
 * and checks every relation's status, what changed and the consequence on
 * restart (kept, recomputed from stored state, re-read from which tables,
 * dropped), and the node map bootstrapping will use (which new node
 * continues which old one, which old nodes are dropped). Programs written
 * again token by token (case, whitespace, comments) must compare unchanged.
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
#include "sql/lexer.h"
#include "sql/progdiff.h"
#include "sql/sql.h"

#define T "CREATE TABLE t (a INT, b INT);\n"
#define U "CREATE TABLE u (k INT PRIMARY KEY, name VARCHAR);\n"
#define V1 "CREATE MATERIALIZED VIEW v1 AS SELECT a, SUM(b) AS s FROM t GROUP BY a;\n"
#define V2 "CREATE VIEW v2 AS SELECT v1.a, s, name FROM v1 JOIN u ON v1.a = u.k;\n"
#define BASE T U V1 V2

static Circuit *compile(const char *text)
{
    Circuit *c = NULL;
    Err e = {0};
    if (circuit_compile(text, &c, &e))
        fail_msg("does not compile (%d:%d %s):\n%s", e.line, e.col, e.msg, text);
    return c;
}

static ProgDiff *diff(const char *old, const char *new_text)
{
    Circuit *o = compile(old), *n = compile(new_text);
    ProgDiff *d = progdiff_new(o, old, n, new_text);
    circuit_free(o); /* the diff copies what it names */
    circuit_free(n);
    return d;
}

static const PdRel *rel(const ProgDiff *d, const char *name)
{
    for (int i = 0; i < d->nrels; i++)
        if (!strcasecmp(d->rels[i].name, name))
            return &d->rels[i];
    fail_msg("no relation %s in the diff", name);
    return NULL;
}

/* "a,b" == the list v[0..n) */
static void expect_list(const char *what, const char *const *v, int n, const char *want)
{
    Buf b = BUF_INIT;
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? "," : "", v[i]);
    if (strcmp(buf_cstr(&b), want))
        fail_msg("%s: got \"%s\", want \"%s\"", what, buf_cstr(&b), want);
    buf_free(&b);
}

static void expect(const ProgDiff *d, const char *name, PdStatus st, int what, PdAction act,
                   const char *reread)
{
    const PdRel *r = rel(d, name);
    if (r->status != st || r->what != what || r->action != act)
        fail_msg("%s: got %s what=%d %s, want %s what=%d %s", name,
                 progdiff_status_name(r->status), r->what, progdiff_action_name(r->action),
                 progdiff_status_name(st), what, progdiff_action_name(act));
    expect_list(name, r->reread, r->nreread, reread);
}

static void expect_unchanged(const ProgDiff *d, const char *name)
{
    expect(d, name, PD_UNCHANGED, 0, PD_KEEP, "");
}

static void test_layout_comments_and_keyword_case_do_not_count(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, "-- the same program\n"
                             "create table T (A int, B int);\n"
                             "CREATE TABLE u ( k INT PRIMARY KEY ,\n   name VARCHAR ) ;\n"
                             "/* v1 */ create materialized view V1 as select a, sum(b) as s\n"
                             "  from t group by a;\n"
                             "create view v2 as select v1.a, s, name\n"
                             "  from v1 join u on v1.a = u.k;");
    assert_false(progdiff_changed(d));
    for (int i = 0; i < d->nrels; i++)
        expect_unchanged(d, d->rels[i].name);
    for (int i = 0; i < d->nnew; i++) /* every node continues an old one */
        assert_true(d->old_node[i] >= 0);
    for (int i = 0; i < d->nold; i++)
        assert_false(d->dropped[i]);
    progdiff_free(d);
}

static void test_add_view_over_materialized_view_is_recomputed(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, BASE "CREATE VIEW big AS SELECT a FROM v1 WHERE s > 10;");
    assert_true(progdiff_changed(d));
    assert_int_equal(d->counts[PD_ADDED], 1);
    assert_int_equal(d->counts[PD_UNCHANGED], 4);
    expect(d, "big", PD_ADDED, 0, PD_RECOMPUTE, "");
    expect_unchanged(d, "t");
    assert_int_equal(rel(d, "t")->nreread_for, 0);
    progdiff_free(d);
}

static void test_add_view_over_unmaterialized_table_rereads_it(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, BASE "CREATE VIEW pos AS SELECT a, b FROM t WHERE b > 0;");
    expect(d, "pos", PD_ADDED, 0, PD_REREAD, "t");
    const PdRel *t = rel(d, "t");
    expect_unchanged(d, "t");
    expect_list("t read again for", t->reread_for, t->nreread_for, "pos");
    progdiff_free(d);
}

static void test_add_view_over_table_in_a_join_uses_the_join_trace(void **s)
{
    (void)s;
    /* u is a PRIMARY KEY table (its upsert state holds it) */
    ProgDiff *d = diff(BASE, BASE "CREATE VIEW names AS SELECT name FROM u;");
    expect(d, "names", PD_ADDED, 0, PD_RECOMPUTE, "");
    progdiff_free(d);
    /* a view over an unmaterialized join: the join's traces give its
       output; but the traces hold w's rows with a non-NULL key only, so a
       view of all of w reads w again */
    const char *old = T "CREATE TABLE w (a INT, c INT);\n"
                        "CREATE VIEW j AS SELECT t.a, b, c FROM t JOIN w ON t.a = w.a;\n";
    d = diff(old, "CREATE TABLE t (a INT, b INT);\nCREATE TABLE w (a INT, c INT);\n"
                  "CREATE VIEW j AS SELECT t.a, b, c FROM t JOIN w ON t.a = w.a;\n"
                  "CREATE VIEW jc AS SELECT c FROM j WHERE b > 1;\n"
                  "CREATE VIEW tw AS SELECT a FROM w;");
    expect(d, "jc", PD_ADDED, 0, PD_RECOMPUTE, "");
    expect(d, "tw", PD_ADDED, 0, PD_REREAD, "w");
    progdiff_free(d);
}

static void test_drop_view_releases_its_nodes(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE "CREATE VIEW gone AS SELECT a FROM t WHERE a > 3;", BASE);
    expect(d, "gone", PD_REMOVED, 0, PD_DROP, "");
    assert_int_equal(d->counts[PD_REMOVED], 1);
    int dropped = 0;
    for (int i = 0; i < d->nold; i++)
        dropped += d->dropped[i];
    assert_true(dropped >= 2); /* its map and its sink */
    for (int i = 0; i < d->nnew; i++)
        assert_true(d->old_node[i] >= 0);
    progdiff_free(d);
}

static void test_change_view_changes_views_over_it(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE "CREATE VIEW over AS SELECT s FROM v1;",
                       T U "CREATE MATERIALIZED VIEW v1 AS SELECT a, SUM(b) + 1 AS s FROM t "
                           "GROUP BY a;\n" V2 "CREATE VIEW over AS SELECT s FROM v1;");
    /* the aggregate's state is kept: the new projection over it is recomputed */
    expect(d, "v1", PD_CHANGED, PD_DEFINITION, PD_RECOMPUTE, "");
    expect(d, "v2", PD_CHANGED, PD_INPUTS, PD_RECOMPUTE, "");
    expect_list("v2 inputs", rel(d, "v2")->inputs, rel(d, "v2")->ninputs, "v1");
    expect(d, "over", PD_CHANGED, PD_INPUTS, PD_RECOMPUTE, "");
    expect_unchanged(d, "t");
    expect_unchanged(d, "u");
    progdiff_free(d);
}

static void test_change_aggregate_over_unstored_table_rereads(void **s)
{
    (void)s;
    ProgDiff *d = diff(T U "CREATE MATERIALIZED VIEW v1 AS SELECT a, MIN(b) AS s FROM t "
                           "GROUP BY a;\n" V2,
                       T U "CREATE MATERIALIZED VIEW v1 AS SELECT a, MAX(b) AS s FROM t "
                           "GROUP BY a;\n" V2);
    expect(d, "v1", PD_CHANGED, PD_DEFINITION, PD_REREAD, "t");
    /* v2's join is new, but u's side is stored (upsert state): only t */
    expect(d, "v2", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    const PdRel *t = rel(d, "t");
    expect_list("t read again for", t->reread_for, t->nreread_for, "v1,v2");
    progdiff_free(d);
}

static void test_add_column_rereads_the_table_and_what_reads_it(void **s)
{
    (void)s;
#define BIG "CREATE VIEW big AS SELECT a FROM t WHERE a > 40;\n"
    ProgDiff *d = diff(BASE BIG, "CREATE TABLE t (a INT, b INT, c INT);\n" U V1 V2 BIG);
    expect(d, "t", PD_CHANGED, PD_SCHEMA, PD_REREAD, "t");
    expect(d, "v1", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    expect(d, "v2", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    /* big compiles to wider nodes, but its statement is the same */
    expect(d, "big", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    expect_unchanged(d, "u");
    progdiff_free(d);
    /* without the texts only the circuits speak: big's nodes differ */
    Circuit *o = compile(BASE BIG);
    Circuit *n = compile("CREATE TABLE t (a INT, b INT, c INT);\n" U V1 V2 BIG);
    d = progdiff_new(o, NULL, n, NULL);
    expect(d, "big", PD_CHANGED, PD_DEFINITION | PD_INPUTS, PD_REREAD, "t");
    progdiff_free(d);
    circuit_free(o);
    circuit_free(n);
}

static void test_primary_key_change_is_a_definition_change(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, T "CREATE TABLE u (k INT, name VARCHAR, PRIMARY KEY (k, name));\n" V1
                               V2);
    const PdRel *u = rel(d, "u");
    assert_int_equal(u->status, PD_CHANGED);
    assert_true(u->what & PD_DEFINITION);
    assert_int_equal(u->action, PD_REREAD);
    /* name becomes NOT NULL: v2's types change too */
    const PdRel *v2 = rel(d, "v2");
    assert_true(v2->what & PD_INPUTS);
    assert_int_equal(v2->action, PD_REREAD);
    expect_list("v2 reread", v2->reread, v2->nreread, "u");
    progdiff_free(d);
}

#define CONN_A "'[{\"transport\": {\"name\": \"datagen\", \"config\": {\"seed\": 1, \"x\": 5}}}]'"
#define CONN_A2 "'[{\"transport\": {\"config\": {\"x\": 5, \"seed\": 1}, \"name\": \"datagen\"}}]'"
#define CONN_B "'[{\"transport\": {\"name\": \"datagen\", \"config\": {\"seed\": 2, \"x\": 5}}}]'"

static void test_change_table_connector_rereads(void **s)
{
    (void)s;
    const char *tail = V1 "CREATE VIEW c AS SELECT COUNT(*) AS n FROM t;\n";
    Buf o = BUF_INIT, n = BUF_INIT, same = BUF_INIT;
    buf_printf(&o, "CREATE TABLE t (a INT, b INT) WITH ('connectors' = %s);\n%s", CONN_A, tail);
    buf_printf(&n, "CREATE TABLE t (a INT, b INT) WITH ('connectors' = %s);\n%s", CONN_B, tail);
    buf_printf(&same, "CREATE TABLE t (a INT, b INT) WITH ('connectors' = %s);\n%s", CONN_A2,
               tail);
    ProgDiff *d = diff(buf_cstr(&o), buf_cstr(&n));
    expect(d, "t", PD_CHANGED, PD_CONNECTORS, PD_REREAD, "t");
    expect(d, "v1", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    expect(d, "c", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    assert_false(rel(d, "t")->no_source);
    Buf txt = BUF_INIT;
    progdiff_print(d, NULL, &txt);
    assert_null(strstr(buf_cstr(&txt), "HTTP input"));
    buf_free(&txt);
    progdiff_free(d);
    /* the same connectors with keys in another order */
    d = diff(buf_cstr(&o), buf_cstr(&same));
    assert_false(progdiff_changed(d));
    progdiff_free(d);
    buf_free(&o);
    buf_free(&n);
    buf_free(&same);
}

static void test_change_view_connector_keeps_its_state(void **s)
{
    (void)s;
    const char *o = BASE "CREATE VIEW out1 WITH ('connectors' = "
                         "'[{\"transport\": {\"name\": \"file_output\", \"config\": {\"path\": "
                         "\"a.csv\"}}, \"format\": {\"name\": \"csv\"}}]') AS SELECT a FROM v1;";
    const char *n = BASE "CREATE VIEW out1 WITH ('connectors' = "
                         "'[{\"transport\": {\"name\": \"file_output\", \"config\": {\"path\": "
                         "\"b.csv\"}}, \"format\": {\"name\": \"csv\"}}]') AS SELECT a FROM v1;";
    ProgDiff *d = diff(o, n);
    expect(d, "out1", PD_CHANGED, PD_CONNECTORS, PD_KEEP, "");
    assert_true(rel(d, "out1")->stored); /* over the materialized v1 */
    Buf b = BUF_INIT;
    progdiff_print(d, NULL, &b);
    /* not materialized itself: its contents are not kept, no snapshot */
    assert_non_null(strstr(buf_cstr(&b), "kept; new or changed outputs start with its next "
                                         "changes (not materialized: no snapshot)"));
    progdiff_free(d);
    /* materialized: its new destination gets its contents first */
    d = diff(BASE "CREATE MATERIALIZED VIEW out1 WITH ('connectors' = '[1]') AS SELECT a FROM v1;",
             BASE "CREATE MATERIALIZED VIEW out1 WITH ('connectors' = '[1, 2]') AS SELECT a FROM "
                  "v1;");
    expect(d, "out1", PD_CHANGED, PD_CONNECTORS, PD_KEEP, "");
    buf_reset(&b);
    progdiff_print(d, NULL, &b);
    assert_non_null(strstr(buf_cstr(&b), "kept; new or changed outputs start with a snapshot"));
    cJSON *j = progdiff_json(d, NULL), *e;
    bool seen = false;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "relations"))
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring, "out1")) {
            assert_string_equal(
                cJSON_GetObjectItemCaseSensitive(e, "new_outputs")->valuestring, "snapshot");
            seen = true;
        }
    assert_true(seen);
    cJSON_Delete(j);
    progdiff_free(d);
    /* a filter over a table nothing stores: no snapshot to give */
    d = diff(BASE "CREATE VIEW f WITH ('connectors' = '[1]') AS SELECT a FROM t WHERE b > 0;",
             BASE "CREATE VIEW f WITH ('connectors' = '[2]') AS SELECT a FROM t WHERE b > 0;");
    expect(d, "f", PD_CHANGED, PD_CONNECTORS, PD_KEEP, "");
    assert_false(rel(d, "f")->stored);
    buf_reset(&b);
    progdiff_print(d, NULL, &b);
    assert_non_null(strstr(buf_cstr(&b), "new or changed outputs start with its next changes"));
    buf_free(&b);
    progdiff_free(d);
}

static void test_column_rename_in_a_view_is_a_schema_change_that_keeps_state(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, T U "CREATE MATERIALIZED VIEW v1 AS SELECT a, SUM(b) AS total FROM t "
                                 "GROUP BY a;\n"
                                 "CREATE VIEW v2 AS SELECT v1.a, total AS s, name FROM v1 JOIN u "
                                 "ON v1.a = u.k;\n");
    expect(d, "v1", PD_CHANGED, PD_SCHEMA, PD_KEEP, "");
    expect(d, "v2", PD_UNCHANGED, 0, PD_KEEP, ""); /* same stream */
    progdiff_free(d);
}

static void test_renamed_view_is_dropped_and_added_from_its_state(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE, T U "CREATE MATERIALIZED VIEW sums AS SELECT a, SUM(b) AS s FROM t "
                                 "GROUP BY a;\n"
                                 "CREATE VIEW v2 AS SELECT sums.a, s, name FROM sums JOIN u ON "
                                 "sums.a = u.k;\n");
    expect(d, "v1", PD_REMOVED, 0, PD_DROP, "");
    expect(d, "sums", PD_ADDED, 0, PD_RECOMPUTE, "");
    /* v2's text names another relation: a definition change, same stream */
    expect(d, "v2", PD_CHANGED, PD_DEFINITION, PD_KEEP, "");
    progdiff_free(d);
    /* a renamed table is another source: read from the beginning */
    d = diff(T "CREATE VIEW c AS SELECT COUNT(*) AS n FROM t;",
             "CREATE TABLE t2 (a INT, b INT);\nCREATE VIEW c AS SELECT COUNT(*) AS n FROM t2;");
    expect(d, "t", PD_REMOVED, 0, PD_DROP, "");
    expect(d, "t2", PD_ADDED, 0, PD_REREAD, "t2");
    expect(d, "c", PD_CHANGED, PD_DEFINITION | PD_INPUTS, PD_REREAD, "t2");
    progdiff_free(d);
}

static void test_materialized_toggle(void **s)
{
    (void)s;
    /* a view becoming materialized: its aggregate's state gives its contents */
    ProgDiff *d = diff(T "CREATE VIEW c AS SELECT a, COUNT(*) AS n FROM t GROUP BY a;",
                       T "CREATE MATERIALIZED VIEW c AS SELECT a, COUNT(*) AS n FROM t\n"
                         "GROUP BY a;");
    expect(d, "c", PD_CHANGED, PD_MATERIALIZED, PD_RECOMPUTE, "");
    progdiff_free(d);
    /* a table becoming materialized: nothing stores its rows yet */
    d = diff(T, "CREATE TABLE t (a INT, b INT) WITH ('materialized' = 'true');");
    expect(d, "t", PD_CHANGED, PD_MATERIALIZED, PD_REREAD, "t");
    progdiff_free(d);
    /* ... and back: its state is released, nothing is computed */
    d = diff("CREATE TABLE t (a INT, b INT) WITH ('materialized' = 'true');", T);
    expect(d, "t", PD_CHANGED, PD_MATERIALIZED, PD_KEEP, "");
    progdiff_free(d);
}

static void test_a_table_that_becomes_a_view_is_another_relation(void **s)
{
    (void)s;
    ProgDiff *d = diff(T "CREATE TABLE x (a INT);", T "CREATE VIEW x AS SELECT a FROM t;");
    int removed = 0, added = 0;
    for (int i = 0; i < d->nrels; i++)
        if (!strcasecmp(d->rels[i].name, "x")) {
            removed += d->rels[i].status == PD_REMOVED && d->rels[i].is_table;
            added += d->rels[i].status == PD_ADDED && !d->rels[i].is_table;
        }
    assert_int_equal(removed, 1);
    assert_int_equal(added, 1);
    progdiff_free(d);
}

static void test_statement_order_and_node_numbers_do_not_count(void **s)
{
    (void)s;
    ProgDiff *d = diff(T U "CREATE VIEW p AS SELECT a FROM t;\nCREATE VIEW q AS SELECT k FROM u;",
                       U T "CREATE VIEW q AS SELECT k FROM u;\nCREATE VIEW p AS SELECT a FROM t;");
    assert_false(progdiff_changed(d));
    progdiff_free(d);
}

static void test_fingerprint_sees_constants_types_and_expressions(void **s)
{
    (void)s;
    const char *views[] = {
        "SELECT a FROM t WHERE b > 1",       "SELECT a FROM t WHERE b > 2",
        "SELECT a FROM t WHERE b >= 1",      "SELECT a FROM t WHERE b > 1 AND a < 3",
        "SELECT CAST(a AS BIGINT) AS a FROM t WHERE b > 1",
        "SELECT a FROM t WHERE 'x' || CAST(b AS VARCHAR) = 'x1'",
        "SELECT a FROM t WHERE 'y' || CAST(b AS VARCHAR) = 'x1'",
        "SELECT DISTINCT a FROM t",          "SELECT a, COUNT(*) AS n FROM t GROUP BY a",
        "SELECT a, COUNT(b) AS n FROM t GROUP BY a",
        "SELECT a FROM t ORDER BY a LIMIT 3", "SELECT a FROM t ORDER BY a DESC LIMIT 3",
        "SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY a) AS r FROM t",
        "SELECT a, RANK() OVER (PARTITION BY b ORDER BY a) AS r FROM t",
    };
    int n = (int)(sizeof(views) / sizeof(views[0]));
    uint64_t fps[32];
    for (int i = 0; i < n; i++) {
        Buf b = BUF_INIT;
        buf_printf(&b, T "CREATE VIEW v AS %s;", views[i]);
        Circuit *c = compile(buf_cstr(&b));
        const Relation *r = &c->rels[circuit_find_rel(c, "v")];
        fps[i] = progdiff_node_fp(c, r->node);
        for (int j = 0; j < i; j++)
            if (fps[j] == fps[i])
                fail_msg("same fingerprint for \"%s\" and \"%s\"", views[j], views[i]);
        circuit_free(c);
        buf_free(&b);
    }
}

/* text written again token by token: keyword and identifier case flipped
   at random, whitespace, line breaks and comments between tokens */
static void reformat(const char *text, unsigned seed, Buf *out)
{
    Arena *a = arena_new(4096);
    Token *t;
    int nt;
    Err e = {0};
    assert_int_equal(lex(text, a, &t, &nt, &e), 0);
    for (int i = 0; i < nt && t[i].k != T_EOF; i++) {
        seed = seed * 1103515245u + 12345u;
        const char *gap[] = {" ", "  ", "\n", "\n\t", " /* c */ ", " -- c\n"};
        buf_puts(out, gap[(seed >> 16) % 6]);
        switch (t[i].k) {
        case T_IDENT:
            for (size_t k = 0; k < t[i].n; k++) {
                char c = t[i].s[k];
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) & 1)
                    c = (char)(c >= 'a' && c <= 'z' ? c - 32 : c >= 'A' && c <= 'Z' ? c + 32 : c);
                buf_putc(out, c);
            }
            break;
        case T_QIDENT:
        case T_STR: {
            char q = t[i].k == T_STR ? '\'' : '"';
            buf_putc(out, q);
            for (size_t k = 0; k < t[i].n; k++) {
                if (t[i].s[k] == q)
                    buf_putc(out, q);
                buf_putc(out, t[i].s[k]);
            }
            buf_putc(out, q);
            break;
        }
        default:
            buf_append(out, t[i].s, t[i].n);
        }
    }
    arena_free(a);
}

static void test_reformatted_programs_are_unchanged(void **s)
{
    (void)s;
    const char *programs[] = {
        BASE,
        BASE "CREATE VIEW w AS SELECT a, COUNT(*) AS n, MIN(b) AS lo FROM t WHERE b > 1 OR "
             "a IS NULL GROUP BY a HAVING COUNT(*) > 1;",
        T "CREATE VIEW q AS SELECT CASE WHEN a > 1 THEN 'x''y' ELSE 'Z' END AS \"Mixed\" "
          "FROM t;",
        T U "CREATE VIEW r AS SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY a DESC) "
            "AS rn FROM t;\nCREATE VIEW k AS SELECT name FROM u ORDER BY name LIMIT 3;",
        "CREATE TABLE t (a INT, b INT) WITH ('connectors' = '[{\"transport\": {\"name\": "
        "\"datagen\"}}]');\nCREATE VIEW d AS SELECT DISTINCT b FROM t;",
    };
    for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
        for (unsigned seed = 1; seed <= 5; seed++) {
            Buf b = BUF_INIT;
            reformat(programs[i], seed * 7919u + (unsigned)i, &b);
            ProgDiff *d = diff(programs[i], buf_cstr(&b));
            if (progdiff_changed(d)) {
                Buf p = BUF_INIT;
                progdiff_print(d, NULL, &p);
                fail_msg("reformatted program differs:\n%s\n%s", buf_cstr(&b), buf_cstr(&p));
            }
            progdiff_free(d);
            buf_free(&b);
        }
}

/* A kept table whose history cannot be read again for a new view over it
   is marked in the diff (bootstrapping refuses); the ones that can are
   not: datagen, files, S3, PostgreSQL CDC, Kafka from a known start. */
static void test_tables_that_cannot_be_read_again_are_marked(void **s)
{
    (void)s;
    static const struct {
        const char *conn, *why; /* why NULL: can be read again */
    } cases[] = {
        {"", "HTTP input only: its history is not kept"},
        {"WITH ('connectors' = '[{\"transport\": {\"name\": \"kafka_input\", \"config\": "
         "{\"bootstrap.servers\": \"h:1\", \"topic\": \"e\"}}, \"format\": {\"name\": "
         "\"json\"}}]')",
         "kafka_input from \"latest\": where its history began is not known"},
        {"WITH ('connectors' = '[{\"transport\": {\"name\": \"kafka_input\", \"config\": "
         "{\"bootstrap.servers\": \"h:1\", \"topic\": \"e\", \"start_from\": "
         "\"earliest\"}}, \"format\": {\"name\": \"json\"}}]')", NULL},
        {"WITH ('connectors' = '[{\"transport\": {\"name\": \"postgres_cdc_input\", "
         "\"config\": {\"uri\": \"x\", \"table\": \"t\"}}}]')", NULL},
        {"WITH ('connectors' = '[{\"transport\": {\"name\": \"datagen\", \"config\": "
         "{\"plan\": [{\"limit\": 5}]}}}]')", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Buf o = BUF_INIT, n = BUF_INIT;
        buf_printf(&o, "CREATE TABLE t (a INT, b INT) %s;\n" V1, cases[i].conn);
        buf_printf(&n, "%sCREATE VIEW c AS SELECT COUNT(*) AS n FROM t;\n", buf_cstr(&o));
        ProgDiff *d = diff(buf_cstr(&o), buf_cstr(&n));
        expect(d, "c", PD_ADDED, 0, PD_REREAD, "t");
        const PdRel *t = rel(d, "t");
        assert_int_equal(t->action, PD_KEEP);
        if (!cases[i].why ? t->unreadable != NULL : !t->unreadable ||
                                                      strcmp(t->unreadable, cases[i].why))
            fail_msg("case %zu: got \"%s\", want \"%s\"", i,
                     t->unreadable ? t->unreadable : "(null)",
                     cases[i].why ? cases[i].why : "(null)");
        Buf txt = BUF_INIT;
        progdiff_print(d, NULL, &txt);
        assert_int_equal(strstr(buf_cstr(&txt), "bootstrapping refuses") != NULL,
                         cases[i].why != NULL);
        cJSON *j = progdiff_json(d, NULL);
        const cJSON *e;
        bool refused = false;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "relations"))
            refused |= cJSON_GetObjectItemCaseSensitive(e, "reread_refused") != NULL;
        assert_int_equal(refused, cases[i].why != NULL);
        cJSON_Delete(j);
        buf_free(&txt);
        progdiff_free(d);
        buf_free(&o);
        buf_free(&n);
    }
}

/* WITH ('retain_input' = 'true') on a table fed over HTTP: its contents
   are stored, so a new view over it is computed from them (nothing read
   again, nothing refused); adding the setting to a table with a history
   needs that history (refused for HTTP input); removing it keeps the
   table; going from retain_input to materialized changes nothing stored. */
static void test_retained_input_is_stored(void **s)
{
    (void)s;
    const char *ret = "CREATE TABLE t (a INT, b INT) WITH ('retain_input' = 'true');\n" V1;
    const char *plain = "CREATE TABLE t (a INT, b INT);\n" V1;
    const char *mat = "CREATE TABLE t (a INT, b INT) WITH ('materialized' = 'true');\n" V1;
    Buf n = BUF_INIT;
    buf_printf(&n, "%sCREATE VIEW c AS SELECT b, COUNT(*) AS n FROM t GROUP BY b;\n", ret);
    ProgDiff *d = diff(ret, buf_cstr(&n));
    expect(d, "c", PD_ADDED, 0, PD_RECOMPUTE, "");
    expect_unchanged(d, "t");
    assert_true(rel(d, "t")->retain);
    Buf txt = BUF_INIT;
    progdiff_print(d, NULL, &txt);
    assert_null(strstr(buf_cstr(&txt), "bootstrapping refuses"));
    assert_non_null(strstr(buf_cstr(&txt), "kept; input retained: re-readable"));
    progdiff_free(d);
    /* added: the table's history is needed, and an HTTP table's is gone */
    d = diff(plain, ret);
    expect(d, "t", PD_CHANGED, PD_RETAIN, PD_REREAD, "t");
    expect_unchanged(d, "v1");
    buf_reset(&txt);
    progdiff_print(d, NULL, &txt);
    assert_non_null(strstr(buf_cstr(&txt), "retain_input"));
    assert_non_null(strstr(buf_cstr(&txt), "bootstrapping refuses"));
    cJSON *j = progdiff_json(d, NULL);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "relations"), 0);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(e, "reread_refused"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "retain_input")));
    cJSON_Delete(j);
    progdiff_free(d);
    /* removed: kept, its stored rows released */
    d = diff(ret, plain);
    expect(d, "t", PD_CHANGED, PD_RETAIN, PD_KEEP, "");
    expect_unchanged(d, "v1");
    progdiff_free(d);
    /* retain_input -> materialized: the same stored contents */
    d = diff(ret, mat);
    expect(d, "t", PD_CHANGED, PD_MATERIALIZED | PD_RETAIN, PD_KEEP, "");
    progdiff_free(d);
    buf_free(&txt);
    buf_free(&n);
}

static void test_printouts(void **s)
{
    (void)s;
    ProgDiff *d = diff(BASE "CREATE VIEW gone AS SELECT a FROM t;",
                       BASE "CREATE VIEW pos AS SELECT a FROM t WHERE b > 0;");
    Buf b = BUF_INIT;
    progdiff_print(d, NULL, &b);
    const char *txt = buf_cstr(&b);
    assert_non_null(strstr(txt, "relation"));
    assert_non_null(strstr(txt, "re-read from source: t (HTTP input only: its history is not "
                                "kept: bootstrapping refuses)"));
    assert_non_null(strstr(txt, "kept; read again for pos"));
    assert_non_null(strstr(txt, "dropped"));
    assert_non_null(strstr(txt, "4 unchanged, 1 added, 1 removed, 0 changed"));
    buf_reset(&b);
    progdiff_print(d, "t", &b); /* hidden only while unchanged and not read again */
    assert_non_null(strstr(buf_cstr(&b), "kept; read again for pos"));
    cJSON *j = progdiff_json(d, NULL);
    const cJSON *rels = cJSON_GetObjectItemCaseSensitive(j, "relations");
    assert_int_equal(cJSON_GetArraySize(rels), 6);
    const cJSON *last = cJSON_GetArrayItem(rels, 5);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(last, "name")->valuestring, "gone");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(last, "action")->valuestring, "drop");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "nodes")), d->nnew);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "changed")));
    cJSON_Delete(j);
    buf_free(&b);
    progdiff_free(d);
}

static void test_changed_function_changes_its_callers_only(void **s)
{
    (void)s;
#define FN_G "CREATE FUNCTION g(x BIGINT) RETURNS BIGINT AS f(x) * 2;\n"
#define FN_VIEWS                                                                          \
    "CREATE VIEW fv AS SELECT a, f(s) AS y FROM v1;\n"                                     \
    "CREATE VIEW gv AS SELECT a, g(s) AS y FROM v1;\n"                                     \
    "CREATE VIEW plain AS SELECT a, s + 1 AS y FROM v1;\n"
    const char *old = BASE "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT AS x + 1;\n" FN_G FN_VIEWS;
    /* the same definitions spelled otherwise, and a function added: nothing */
    ProgDiff *d = diff(old, BASE "CREATE FUNCTION unused(y INT) RETURNS INT AS y;\n"
                            "CREATE OR REPLACE FUNCTION f(x bigint) RETURNS bigint LANGUAGE sql "
                            "RETURN x+1;\n" FN_G FN_VIEWS);
    assert_false(progdiff_changed(d));
    progdiff_free(d);
    d = diff(old, BASE "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT AS x + 2;\n" FN_G FN_VIEWS);
    /* over v1's kept aggregate: recomputed */
    expect(d, "fv", PD_CHANGED, PD_FUNCTIONS, PD_RECOMPUTE, "");
    expect_list("fv functions", rel(d, "fv")->funcs, rel(d, "fv")->nfuncs, "f");
    expect(d, "gv", PD_CHANGED, PD_FUNCTIONS, PD_RECOMPUTE, "");
    expect_list("gv functions", rel(d, "gv")->funcs, rel(d, "gv")->nfuncs, "g,f");
    expect_unchanged(d, "plain");
    expect_unchanged(d, "v1");
    Buf b = BUF_INIT;
    progdiff_print(d, NULL, &b);
    assert_non_null(strstr(buf_cstr(&b), "functions (g, f)"));
    buf_free(&b);
    progdiff_free(d);
}

static void test_statements_declaring_no_relation_keep_the_token_match(void **s)
{
    (void)s;
    /* a column added to t and a function declared before big: big's
       statement is the same, so its change is its input's only */
    ProgDiff *d = diff(BASE BIG, "CREATE TABLE t (a INT, b INT, c INT);\n" U
                                 "CREATE FUNCTION f(x INT) RETURNS INT AS $$ SELECT x; $$;\n"
                                 "LATENESS t.a 10;\n" V1 V2 BIG);
    expect(d, "big", PD_CHANGED, PD_INPUTS, PD_REREAD, "t");
    progdiff_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_comments_and_keyword_case_do_not_count),
        cmocka_unit_test(test_add_view_over_materialized_view_is_recomputed),
        cmocka_unit_test(test_add_view_over_unmaterialized_table_rereads_it),
        cmocka_unit_test(test_add_view_over_table_in_a_join_uses_the_join_trace),
        cmocka_unit_test(test_drop_view_releases_its_nodes),
        cmocka_unit_test(test_change_view_changes_views_over_it),
        cmocka_unit_test(test_change_aggregate_over_unstored_table_rereads),
        cmocka_unit_test(test_add_column_rereads_the_table_and_what_reads_it),
        cmocka_unit_test(test_primary_key_change_is_a_definition_change),
        cmocka_unit_test(test_change_table_connector_rereads),
        cmocka_unit_test(test_change_view_connector_keeps_its_state),
        cmocka_unit_test(test_column_rename_in_a_view_is_a_schema_change_that_keeps_state),
        cmocka_unit_test(test_renamed_view_is_dropped_and_added_from_its_state),
        cmocka_unit_test(test_materialized_toggle),
        cmocka_unit_test(test_a_table_that_becomes_a_view_is_another_relation),
        cmocka_unit_test(test_statement_order_and_node_numbers_do_not_count),
        cmocka_unit_test(test_fingerprint_sees_constants_types_and_expressions),
        cmocka_unit_test(test_reformatted_programs_are_unchanged),
        cmocka_unit_test(test_tables_that_cannot_be_read_again_are_marked),
        cmocka_unit_test(test_retained_input_is_stored),
        cmocka_unit_test(test_printouts),
        cmocka_unit_test(test_changed_function_changes_its_callers_only),
        cmocka_unit_test(test_statements_declaring_no_relation_keep_the_token_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

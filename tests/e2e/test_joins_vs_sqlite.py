"""Joins, set operations, WITH and VALUES against SQLite on random data.

The tables and data are those of test_sql_vs_sqlite.py (imported): t1 from
CSV with a PRIMARY KEY, t2 from CSV with a header, t3 from JSON lines with
inserts, duplicate rows and deletions of earlier rows, t4 whose every row is
deleted again; ~15% NULLs everywhere. Every query below is one materialized
view of a single program, run with --workers 1 and --workers 3 and small
steps (so deletions and the retractions they cause land in later steps than
the rows they delete); each view's dump is compared as a multiset with
SQLite's answer to the same (or an equivalent) query, or for EXCEPT ALL /
INTERSECT ALL (which SQLite lacks) with the multiset difference /
intersection of SQLite's answers for the two operands.

The program also runs as an MPI job with --hosts 2 --workers 3 and
--hosts 3 --workers 3 (same small steps; skipped when mpirun is not on
PATH), whose dumps must be byte-identical to the --workers 3 run's, every
file included (with the same number of workers, DOUBLE sums may not differ
either).
"""
import os
from collections import Counter

import pytest

from conftest import relation_types, run
from test_sql_vs_sqlite import (assert_dump_matches, check_dumps_identical_across_hosts,
                                compile_views, gen_data, mpirun_missing, run_each, run_on_hosts,
                                tables_sql, write_inputs)

SEEDS = [314159, 2718]
STEP_ROWS = 37

# name -> Sluice query, or (Sluice query, SQLite query), or
# (Sluice query, ("EXCEPT ALL" | "INTERSECT ALL", SQLite left, SQLite right)).
QUERIES = {
    # ---- LEFT / RIGHT / FULL OUTER JOIN
    "j_left_eq": "SELECT t1.id, t1.a, t3.k AS k3, t3.v FROM t1 LEFT JOIN t3 ON t1.a = t3.k",
    "j_left_outer_kw": "SELECT t3.k, t3.v, t2.x FROM t3 LEFT OUTER JOIN t2 ON t3.k = t2.k",
    "j_left_theta": "SELECT t1.id, t3.k AS k3, t3.v FROM t1 LEFT JOIN t3 "
                    "ON t1.a = t3.k AND t1.b < t3.v",
    "j_left_nonequi": "SELECT t2.k, t2.x, t3.k AS k3, t3.v FROM t2 LEFT JOIN t3 "
                      "ON t2.x < t3.k AND t3.v > 40",
    "j_left_lonly": "SELECT t1.id, t1.c, t2.x FROM t1 LEFT JOIN t2 ON t1.a = t2.k AND t1.c = 1",
    "j_left_ronly": "SELECT t1.id, t2.x, t2.s2 FROM t1 LEFT JOIN t2 ON t1.a = t2.k AND t2.x > 15",
    "j_left_true": ("SELECT t3.k, t3.v, t4.k AS k4 FROM t3 LEFT JOIN t4 ON TRUE",
                    "SELECT t3.k, t3.v, t4.k FROM t3 LEFT JOIN t4 ON 1"),
    "j_left_false": ("SELECT t3.k, t3.v, t2.x FROM t3 LEFT JOIN t2 ON 1 = 0",),
    "j_left_null_on": ("SELECT t3.k, t3.v, t2.x FROM t3 LEFT JOIN t2 ON NULL IS NULL "
                       "WHERE t2.x = 3",),
    "j_left_anti": "SELECT t1.id, t1.a FROM t1 LEFT JOIN t3 ON t1.a = t3.k WHERE t3.k IS NULL",
    "j_left_where": "SELECT t1.id, t3.v FROM t1 LEFT JOIN t3 ON t1.a = t3.k "
                    "WHERE t1.b > 0 AND (t3.v IS NULL OR t3.v > 0)",
    "j_left_expr_key": "SELECT t1.id, t3.v, t3.name FROM t1 LEFT JOIN t3 ON t1.a + 1 = t3.k",
    "j_left_str_key": "SELECT t1.id, t1.s, t3.v FROM t1 LEFT JOIN t3 ON t1.s = t3.name",
    "j_left_agg": "SELECT t1.a, COUNT(*) AS n, COUNT(t3.v) AS nv, SUM(t3.v) AS sv "
                  "FROM t1 LEFT JOIN t3 ON t1.a = t3.k GROUP BY t1.a",
    "j_left_coalesce": "SELECT t2.k, t2.x, COALESCE(t3.v, -1) AS v, t3.name IS NULL AS unmatched "
                       "FROM t2 LEFT JOIN t3 ON t2.x = t3.k AND t3.w > 0",
    "j_left_self": "SELECT x.k, x.v, y.v AS yv FROM t3 x LEFT JOIN t3 y ON x.k = y.v",
    "j_left_subq": "SELECT g.a, g.n, t3.v FROM (SELECT a, COUNT(*) AS n FROM t1 GROUP BY a) g "
                   "LEFT JOIN t3 ON g.a = t3.k",
    "j_left_empty_right": "SELECT t3.k, t3.v, t4.s FROM t3 LEFT JOIN t4 ON t3.k = t4.k",
    "j_right": ("SELECT t3.k AS k3, t3.v, t1.id FROM t3 RIGHT JOIN t1 ON t1.a = t3.k",),
    "j_right_theta": ("SELECT t3.k AS k3, t2.k, t2.x FROM t3 RIGHT OUTER JOIN t2 "
                      "ON t3.k = t2.x AND t3.v > t2.k",),
    "j_full": ("SELECT t2.k, t2.x, t3.k AS k3, t3.v FROM t2 FULL JOIN t3 "
               "ON t2.k = t3.k AND t2.x > t3.v",),
    "j_full_eq": ("SELECT t2.x, t3.k AS k3, t3.name FROM t2 FULL OUTER JOIN t3 ON t2.x = t3.k",),
    "j_full_nonequi": ("SELECT t2.x, t3.k AS k3 FROM t2 FULL JOIN t3 ON t2.x > t3.k + 15",),
    "j_full_sided": ("SELECT t2.k, t2.x, t3.k AS k3, t3.v FROM t2 FULL JOIN t3 "
                     "ON t2.k = t3.k AND t3.v > 0 AND t2.x < 10",),
    "j_left_lonly_nokey": ("SELECT t3.k, t3.v, t2.x FROM t3 LEFT JOIN t2 ON t3.v > 45 AND t2.tt = 3",),
    "j_full_empty": ("SELECT t4.k, t4.v, t3.k AS k3 FROM t4 FULL JOIN t3 ON t4.k = t3.k",),
    "j_full_agg": ("SELECT COUNT(*) AS n, COUNT(t2.x) AS nx, COUNT(t3.v) AS nv "
                   "FROM t2 FULL JOIN t3 ON t2.k = t3.k",),
    # ---- mixed chains, parentheses, more than two relations
    "j_chain_inner_left": "SELECT t1.id, t2.x, t3.v FROM t1 JOIN t2 ON t1.a = t2.k "
                          "LEFT JOIN t3 ON t2.x = t3.k WHERE t1.id < 50",
    "j_chain_left_inner": "SELECT t1.id, t2.x, t3.v FROM t1 LEFT JOIN t2 ON t1.a = t2.k "
                          "JOIN t3 ON t3.k = t2.x WHERE t1.id < 50",
    "j_chain_left_left": "SELECT t2.k, t2.x, t3.v, t4.s FROM t2 LEFT JOIN t3 ON t2.k = t3.k "
                         "LEFT JOIN t4 ON t3.v = t4.v",
    "j_chain_comma": "SELECT t1.id, t3.v, t2.x FROM t1 LEFT JOIN t3 ON t1.a = t3.k, t2 "
                     "WHERE t2.x = t1.c + 17 AND t1.id < 100",
    "j_paren_right": "SELECT t1.id, t2.x, t3.v FROM t1 LEFT JOIN (t2 JOIN t3 ON t2.x = t3.k) "
                     "ON t1.a = t2.k WHERE t1.id < 50",
    "j_paren_left": "SELECT t1.id, t2.x, t3.v FROM (t1 JOIN t2 ON t1.a = t2.k) "
                    "LEFT JOIN t3 ON t3.k = t2.x WHERE t1.id < 50",
    "j_paren_cross": "SELECT COUNT(*) AS n, SUM(t2.x) AS sx FROM (t2 CROSS JOIN t3)",
    "j_cross": "SELECT t2.x, t3.v FROM t2 CROSS JOIN t3 WHERE t2.k = 1 AND t3.v > 40",
    "j_four": "SELECT t1.id, t2.x, x.v, y.name FROM t1 JOIN t2 ON t1.a = t2.k "
              "JOIN t3 x ON x.k = t2.x LEFT JOIN t3 y ON y.v = x.v AND y.k <> x.k "
              "WHERE t1.id < 25",
    "j_self3": "SELECT a.k, a.v, b.v AS bv, c.v AS cv FROM t3 a JOIN t3 b ON a.k = b.k "
               "JOIN t3 c ON c.k = b.v WHERE a.v < b.v",
    # ---- USING and NATURAL
    "u_inner": ("SELECT * FROM t2 JOIN t3 USING (k)",
                "SELECT t2.k, t2.x, t2.y, t2.s2, t2.r, t2.tm, t2.tt, t2.code, t3.v, t3.name, t3.w "
                "FROM t2 JOIN t3 ON t2.k = t3.k"),
    "u_left": ("SELECT * FROM t3 LEFT JOIN t2 USING (k)",
               "SELECT t3.k, t3.v, t3.name, t3.w, t2.x, t2.y, t2.s2, t2.r, t2.tm, t2.tt, t2.code "
               "FROM t3 LEFT JOIN t2 ON t3.k = t2.k"),
    "u_right": ("SELECT k, v, x FROM t3 RIGHT JOIN t2 USING (k)",
                "SELECT t2.k, t3.v, t2.x FROM t3 RIGHT JOIN t2 ON t3.k = t2.k"),
    "u_full": ("SELECT k, t2.k AS k2, t3.k AS k3, x, v FROM t2 FULL JOIN t3 USING (k)",
               "SELECT COALESCE(t2.k, t3.k), t2.k, t3.k, t2.x, t3.v "
               "FROM t2 FULL JOIN t3 ON t2.k = t3.k"),
    "u_two_cols": ("SELECT * FROM t3 JOIN (SELECT k, v, COUNT(*) AS c FROM t3 GROUP BY k, v) g "
                   "USING (k, v)",
                   "SELECT t3.k, t3.v, t3.name, t3.w, g.c FROM t3 JOIN "
                   "(SELECT k, v, COUNT(*) AS c FROM t3 GROUP BY k, v) g "
                   "ON t3.k = g.k AND t3.v = g.v"),
    "u_star_qual": ("SELECT t3.*, g.* FROM t3 JOIN (SELECT k AS kk, MAX(x) AS mx FROM t2 "
                    "GROUP BY k) g ON g.kk = t3.k",),
    "n_inner": ("SELECT * FROM t3 NATURAL JOIN (SELECT k, COUNT(*) AS cnt FROM t2 GROUP BY k) g",
                "SELECT t3.k, t3.v, t3.name, t3.w, g.cnt FROM t3 JOIN "
                "(SELECT k, COUNT(*) AS cnt FROM t2 GROUP BY k) g ON t3.k = g.k"),
    "n_left": ("SELECT * FROM t3 NATURAL LEFT JOIN (SELECT k, v, w FROM t3 WHERE w > 0) q",
               "SELECT k, v, w, name FROM t3 NATURAL LEFT JOIN "
               "(SELECT k, v, w FROM t3 WHERE w > 0) q"),
    "n_full_sub": ("SELECT * FROM (SELECT k, v FROM t3 WHERE v > 0) a "
                   "NATURAL FULL JOIN (SELECT k, v FROM t3 WHERE v < 10) b",
                   "SELECT COALESCE(a.k, b.k), COALESCE(a.v, b.v) FROM "
                   "(SELECT k, v FROM t3 WHERE v > 0) a FULL JOIN "
                   "(SELECT k, v FROM t3 WHERE v < 10) b ON a.k = b.k AND a.v = b.v"),
    "u_nested": ("SELECT k, x, t3.v FROM t2 JOIN t3 USING (k) LEFT JOIN t4 USING (k) "
                 "WHERE t2.x < 5",
                 "SELECT t2.k, t2.x, t3.v FROM t2 JOIN t3 ON t2.k = t3.k "
                 "LEFT JOIN t4 ON t2.k = t4.k WHERE t2.x < 5"),
    # ---- set operations
    "s_except": "SELECT k FROM t3 EXCEPT SELECT a FROM t1",
    "s_except_multi": "SELECT k, v FROM t3 EXCEPT SELECT a, b FROM t1",
    "s_except_str": "SELECT s FROM t1 EXCEPT SELECT name FROM t3",
    "s_intersect": "SELECT k, v FROM t3 INTERSECT SELECT a, b FROM t1",
    "s_intersect_str": "SELECT s2 FROM t2 INTERSECT SELECT s FROM t1",
    "s_intersect_distinct": ("SELECT k FROM t3 INTERSECT DISTINCT SELECT a FROM t1",
                             "SELECT k FROM t3 INTERSECT SELECT a FROM t1"),
    "s_except_all": ("SELECT k FROM t3 EXCEPT ALL SELECT a FROM t1 WHERE b > 0",
                     ("EXCEPT ALL", "SELECT k FROM t3", "SELECT a FROM t1 WHERE b > 0")),
    "s_except_all2": ("SELECT k, name FROM t3 EXCEPT ALL SELECT k, name FROM t3 WHERE v > 0",
                      ("EXCEPT ALL", "SELECT k, name FROM t3",
                       "SELECT k, name FROM t3 WHERE v > 0")),
    "s_intersect_all": ("SELECT k FROM t3 INTERSECT ALL SELECT c FROM t1",
                        ("INTERSECT ALL", "SELECT k FROM t3", "SELECT c FROM t1")),
    "s_intersect_all2": ("SELECT tt, k FROM t2 INTERSECT ALL SELECT c, a FROM t1",
                         ("INTERSECT ALL", "SELECT tt, k FROM t2", "SELECT c, a FROM t1")),
    "s_precedence": ("SELECT k FROM t3 UNION SELECT a FROM t1 INTERSECT SELECT x FROM t2",
                     "SELECT k FROM t3 UNION SELECT * FROM "
                     "(SELECT a FROM t1 INTERSECT SELECT x FROM t2)"),
    "s_precedence2": ("SELECT k FROM t3 INTERSECT SELECT x FROM t2 EXCEPT SELECT a FROM t1",
                      "SELECT * FROM (SELECT k FROM t3 INTERSECT SELECT x FROM t2) "
                      "EXCEPT SELECT a FROM t1"),
    "s_paren": ("SELECT k FROM t3 EXCEPT (SELECT a FROM t1 UNION SELECT tt FROM t2)",
                "SELECT k FROM t3 EXCEPT SELECT * FROM "
                "(SELECT a FROM t1 UNION SELECT tt FROM t2)"),
    "s_types": "SELECT x FROM t2 EXCEPT SELECT c FROM t1",
    "s_count": ("SELECT COUNT(*) AS n FROM (SELECT k FROM t3 EXCEPT ALL SELECT a FROM t1) q",
                ("COUNT", "SELECT k FROM t3", "SELECT a FROM t1")),
    "s_empty_side": "SELECT k FROM t3 EXCEPT SELECT k FROM t4",
    "s_intersect_empty": ("SELECT k FROM t3 INTERSECT SELECT k FROM t4",),
    "s_in_view_join": "SELECT q.v, COUNT(*) AS n FROM (SELECT a AS v FROM t1 INTERSECT "
                      "SELECT k FROM t3) q JOIN t2 ON t2.k = q.v GROUP BY q.v",
    # ---- WITH
    "w_twice": "WITH g AS (SELECT a, COUNT(*) AS n FROM t1 GROUP BY a) "
               "SELECT x.a, x.n, y.n AS n2 FROM g x JOIN g y ON x.a = y.a + 1",
    "w_chain": "WITH a1 AS (SELECT k, v FROM t3 WHERE v IS NOT NULL), "
               "a2 AS (SELECT k, SUM(v) AS sv FROM a1 GROUP BY k) "
               "SELECT a2.k, a2.sv, t2.x FROM a2 LEFT JOIN t2 ON a2.k = t2.k",
    "w_cols": ("WITH c(kk, vv) AS (SELECT k, v FROM t3) SELECT kk, SUM(vv) AS s FROM c GROUP BY kk",
               "SELECT k, SUM(v) FROM t3 GROUP BY k"),
    "w_nested": "SELECT q.k, q.n FROM (WITH z AS (SELECT k FROM t3) "
                "SELECT k, COUNT(*) AS n FROM z GROUP BY k) q WHERE q.n > 1",
    "w_setop": "WITH a AS (SELECT k FROM t3), b AS (SELECT a AS k FROM t1) "
               "SELECT k FROM a EXCEPT SELECT k FROM b",
    "w_shadow": "WITH t2 AS (SELECT k, v FROM t3) SELECT t2.k, t2.v FROM t2 WHERE t2.v > 0",
    "w_view": "WITH h AS (SELECT * FROM h_grp) SELECT h.a, h.n FROM h WHERE h.n > 1",
    # ---- VALUES
    "v_query": ("VALUES (1, 'a'), (2, NULL), (NULL, 'c'), (2, NULL)",
                "VALUES (1, 'a'), (2, NULL), (NULL, 'c'), (2, NULL)"),
    "v_types": ("SELECT * FROM (VALUES (1, 2.5), (2, 3), (NULL, -1.25)) AS t(x, y)",
                "SELECT column1, column2 FROM (VALUES (1, 2.5), (2, 3), (NULL, -1.25))"),
    "v_join": ("SELECT t.x, t.y, t3.v FROM (VALUES (1, 'one'), (2, 'two'), (NULL, 'n')) "
               "AS t(x, y) LEFT JOIN t3 ON t3.k = t.x",
               "SELECT t.column1, t.column2, t3.v FROM (VALUES (1, 'one'), (2, 'two'), "
               "(NULL, 'n')) AS t LEFT JOIN t3 ON t3.k = t.column1"),
    "v_setop": ("SELECT k FROM t3 EXCEPT VALUES (1), (2), (NULL)",
                "SELECT k FROM t3 EXCEPT SELECT * FROM (VALUES (1), (2), (NULL))"),
    "v_cte": ("WITH m(code, label) AS (VALUES (0, 'zero'), (1, 'one'), (3, 'three')) "
              "SELECT t1.id, m.label FROM t1 JOIN m ON t1.c = m.code WHERE t1.id < 50",
              "WITH m(code, label) AS (VALUES (0, 'zero'), (1, 'one'), (3, 'three')) "
              "SELECT t1.id, m.label FROM t1 JOIN m ON t1.c = m.code WHERE t1.id < 50"),
}

# Views that are empty by design.
EXPECT_EMPTY = {"s_intersect_empty"}


def sluice_sql(name):
    q = QUERIES[name]
    return q[0] if isinstance(q, tuple) else q


def expected_rows(db, name):
    q = QUERIES[name]
    ref = q[-1] if isinstance(q, tuple) else q
    if isinstance(ref, tuple):
        op, left, right = ref
        a = Counter(db.execute(left).fetchall())
        b = Counter(db.execute(right).fetchall())
        if op == "COUNT":  # COUNT(*) of EXCEPT ALL
            return [(sum((a - b).values()),)]
        res = a - b if op == "EXCEPT ALL" else a & b
        return list(res.elements())
    return db.execute(ref).fetchall()


def view_sql(name):
    return "CREATE MATERIALIZED VIEW %s AS\n%s;" % (name, sluice_sql(name))


class World:
    pass


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: "seed%d" % s)
def world(request, tmp_path_factory, sluice):
    seed = request.param
    w = World()
    d = str(tmp_path_factory.mktemp("joins%d" % seed))
    data = gen_data(seed)
    w.db = write_inputs(d, data)
    base = tables_sql(d)
    w.compile_errors, ok = compile_views(d, base, list(QUERIES), view_sql)
    w.program = os.path.join(d, "program.sql")
    with open(w.program, "w") as f:
        f.write(base + "\n" + "\n".join(view_sql(n) for n in ok) + "\n")
    p = run(["check", w.program])
    w.check = p
    w.types = relation_types(p.stdout) if p.returncode == 0 else {}
    w.dumps, w.runs = {}, {}
    w.host_runs, w.host_dumps, w.host_errors = {}, {}, {}
    if p.returncode == 0:
        run_each(w, d, {"w1": (1, STEP_ROWS), "w3": (3, STEP_ROWS)})
        run_on_hosts(w, w.program, d, STEP_ROWS, seed, SEEDS)
    return w


def compare_view(world, name, key):
    if name in world.compile_errors:
        pytest.fail("sluice check rejected the query:\n%s\n%s" % (
            sluice_sql(name), world.compile_errors[name]))
    assert world.check.returncode == 0, "sluice check failed:\n" + world.check.stderr[-3000:]
    assert_dump_matches(world, name, key, expected_rows(world.db, name),
                        "Sluice: " + sluice_sql(name), name not in EXPECT_EMPTY)


@pytest.mark.parametrize("name", list(QUERIES))
def test_join_view_vs_sqlite_w1(world, name):
    compare_view(world, name, "w1")


@pytest.mark.parametrize("name", list(QUERIES))
def test_join_view_vs_sqlite_w3(world, name):
    compare_view(world, name, "w3")


def test_all_join_queries_compile(world):
    assert not world.compile_errors, "queries rejected by sluice check:\n" + "\n".join(
        "%s: %s" % kv for kv in world.compile_errors.items())


def test_join_dumps_identical_workers_1_and_3(world):
    assert world.dumps, "program did not compile:\n" + world.check.stderr[-3000:]
    for fn in sorted(os.listdir(world.dumps["w1"])):
        cols = world.types[fn[:-4].lower()]
        if any(c[1] in ("DOUBLE", "REAL") for c in cols):
            continue  # summation order may differ in the last bits
        with open(os.path.join(world.dumps["w1"], fn), "rb") as a, \
                open(os.path.join(world.dumps["w3"], fn), "rb") as b:
            assert a.read() == b.read(), "%s differs between 1 and 3 workers" % fn


def test_dumps_identical_across_hosts(world):
    """--hosts 2 and --hosts 3 with 3 workers give the dump of --workers 3,
    byte for byte."""
    reason = mpirun_missing()
    if reason:
        pytest.skip(reason)
    assert world.dumps, "program did not compile:\n" + world.check.stderr[-3000:]
    check_dumps_identical_across_hosts(world, "w3")


def test_outer_join_columns_become_nullable(world):
    """The NULL-supplying side's columns are nullable; the preserved side
    keeps NOT NULL."""
    t = {c[0].lower(): c for c in world.types["j_right"]}
    assert t["id"][2]  # t1.id is the PRIMARY KEY of the preserved side
    t = {c[0].lower(): c for c in world.types["j_left_ronly"]}
    assert not t["x"][2]  # t2.x is NOT NULL in t2 but NULL-padded here
    t = {c[0].lower(): c for c in world.types["j_left_eq"]}
    assert t["id"][2]

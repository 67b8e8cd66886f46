"""Window functions and top-k against SQLite on random data.

The tables and data of test_sql_vs_sqlite.py (t1 from CSV with ~15% NULLs,
t3 from JSON with inserts and later deletes, t2 and t4 too) feed one
program of materialized views using ROW_NUMBER/RANK/DENSE_RANK, LAG/LEAD,
aggregates and FIRST_VALUE/LAST_VALUE/NTH_VALUE over default, ROWS, RANGE
and GROUPS frames (also with EXCLUDE), NTILE/PERCENT_RANK/CUME_DIST, named
windows, windows over GROUP BY results, ORDER BY ... LIMIT/OFFSET (views,
subqueries, unions) and top-k per group (ROW_NUMBER() ... WHERE rn <= k). The program runs with
--workers 1 and --workers 3 with small steps (so deletions land in later
steps than their rows) and once with the default step size; every view's
dump is compared as a multiset with SQLite 3's answer to the same query
(SQLite has window functions since 3.25 and RANGE offsets since 3.28), and
the dumps must be byte-identical across the runs. It also runs as an MPI
job with --hosts 2 --workers 3 and --hosts 3 --workers 3 (same small steps;
skipped when mpirun is not on PATH), whose dumps must be byte-identical to
the --workers 3 run's.

Every ORDER BY here is total up to identical rows (t1 has a unique id; t3
is ordered by all its columns), so ROW_NUMBER, ROWS frames, LAG/LEAD and
LIMIT have one right answer as a multiset - as long as the position-
dependent functions of a query over t3's duplicate rows share one window
(two windows could pair the copies' values differently, both correctly).
"""
import os

import pytest

from conftest import relation_types, run_ok
from test_sql_vs_sqlite import (STEP_ROWS, assert_dump_matches, check_dumps_identical_across_hosts,
                                compile_views, gen_data, mpirun_missing, run_each, run_on_hosts,
                                tables_sql, write_inputs)

SEEDS = [20240611, 4242]

# name -> query (the same text for Sluice and SQLite)
QUERIES = {
    # ---- ranking
    "w_rank": "SELECT id, a, b, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b, id) AS rn, "
              "RANK() OVER (PARTITION BY a ORDER BY b) AS rk, "
              "DENSE_RANK() OVER (PARTITION BY a ORDER BY b DESC) AS dr FROM t1",
    "w_rank_global": "SELECT id, s, RANK() OVER (ORDER BY s NULLS LAST) AS r, "
                     "ROW_NUMBER() OVER (ORDER BY d DESC NULLS FIRST, id) AS rn FROM t1",
    # ---- LAG / LEAD
    "w_lag": "SELECT id, c, LAG(b) OVER (PARTITION BY c ORDER BY id) AS l1, "
             "LEAD(s, 2, 'zz') OVER (PARTITION BY c ORDER BY id) AS l2, "
             "LAG(d, 3) OVER (ORDER BY id) AS l3, "
             "LEAD(b, 1, a) OVER (PARTITION BY c ORDER BY id DESC) AS l4 FROM t1",
    # ---- aggregates, default frames (RANGE with peers; whole partition)
    "w_cum": "SELECT id, a, SUM(b) OVER (PARTITION BY a ORDER BY id) AS cs, "
             "COUNT(*) OVER (PARTITION BY a ORDER BY b) AS cn, "
             "AVG(d) OVER (PARTITION BY a ORDER BY b NULLS LAST) AS ad, "
             "MIN(s) OVER (PARTITION BY a ORDER BY id) AS ms, "
             "MAX(m) OVER (PARTITION BY c) AS mm, SUM(c) OVER () AS tot FROM t1",
    # ---- ROWS frames
    "w_rows": "SELECT id, "
              "SUM(b) OVER (PARTITION BY c ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS s5, "
              "AVG(b) OVER (ORDER BY id ROWS 3 PRECEDING) AS a4, "
              "MAX(d) OVER (PARTITION BY a ORDER BY id ROWS BETWEEN CURRENT ROW AND "
              "UNBOUNDED FOLLOWING) AS mx, "
              "MIN(s) OVER (PARTITION BY a ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING) AS mn, "
              "COUNT(b) OVER (PARTITION BY a ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND "
              "1 PRECEDING) AS cb FROM t1",
    # ---- RANGE frames with offsets
    "w_range": "SELECT id, b, "
               "SUM(a) OVER (ORDER BY b RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s3, "
               "COUNT(*) OVER (PARTITION BY c ORDER BY b DESC RANGE BETWEEN 2 PRECEDING AND "
               "CURRENT ROW) AS c3, "
               "MAX(id) OVER (PARTITION BY a ORDER BY d RANGE BETWEEN 10.5 PRECEDING AND "
               "5 FOLLOWING) AS md FROM t1",
    # ---- the table with deletions
    "w_t3": "SELECT k, v, name, w, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v, name, w) AS rn, "
            "SUM(v) OVER (PARTITION BY name ORDER BY k, v, w) AS sv, "
            "LAG(w) OVER (PARTITION BY k ORDER BY v, name, w) AS lw, "
            "COUNT(*) OVER (PARTITION BY k) AS n FROM t3",
    "w_t3_rows": "SELECT k, v, SUM(w) OVER (PARTITION BY k ORDER BY v, name, w ROWS BETWEEN "
                 "1 PRECEDING AND 1 FOLLOWING) AS sw, "
                 "MIN(v) OVER (PARTITION BY k ORDER BY v, name, w ROWS 2 PRECEDING) AS mv, "
                 "MAX(name) OVER (PARTITION BY v ORDER BY w RANGE BETWEEN 3 PRECEDING AND "
                 "2 FOLLOWING) AS mn FROM t3",
    # ---- windows over GROUP BY, expressions, WHERE
    "w_agg": "SELECT a, COUNT(*) AS n, SUM(b) AS sb, RANK() OVER (ORDER BY COUNT(*) DESC) AS r, "
             "SUM(SUM(b)) OVER (ORDER BY a) AS cs, LAG(COUNT(*)) OVER (ORDER BY a) AS pn "
             "FROM t1 GROUP BY a",
    "w_t3_agg": "SELECT name, SUM(v) AS sv, DENSE_RANK() OVER (ORDER BY SUM(v) DESC) AS dr "
                "FROM t3 GROUP BY name",
    "w_expr": "SELECT id, b * 2 + ROW_NUMBER() OVER (PARTITION BY a % 3 ORDER BY id) AS x, "
              "SUM(b + c) OVER (PARTITION BY f ORDER BY id) AS y FROM t1 WHERE b > -3",
    # ---- FIRST/LAST/NTH_VALUE, NTILE, PERCENT_RANK, CUME_DIST, named windows
    "w_value": "SELECT id, FIRST_VALUE(b) OVER (PARTITION BY a ORDER BY id) AS fv, "
               "LAST_VALUE(s) OVER (PARTITION BY c ORDER BY id ROWS BETWEEN 1 PRECEDING AND "
               "2 FOLLOWING) AS lv, NTH_VALUE(d, 2) OVER (PARTITION BY a ORDER BY b, id) AS nv, "
               "LAST_VALUE(b) OVER (ORDER BY b RANGE BETWEEN 2 PRECEDING AND 1 PRECEDING) AS rl, "
               "NTH_VALUE(id, 3) OVER (PARTITION BY c ORDER BY id ROWS BETWEEN CURRENT ROW AND "
               "UNBOUNDED FOLLOWING) AS n3 FROM t1",
    "w_dist": "SELECT id, NTILE(4) OVER (PARTITION BY a ORDER BY b, id) AS nt, "
              "PERCENT_RANK() OVER (PARTITION BY c ORDER BY b) AS pr, "
              "CUME_DIST() OVER (PARTITION BY a ORDER BY s) AS cd, "
              "NTILE(3) OVER (ORDER BY id DESC) AS n3 FROM t1",
    "w_named": "SELECT id, SUM(b) OVER w AS sw, FIRST_VALUE(id) OVER (w ROWS BETWEEN 1 PRECEDING "
               "AND CURRENT ROW) AS f2, CUME_DIST() OVER w AS cd FROM t1 "
               "WINDOW p AS (PARTITION BY a), w AS (p ORDER BY b, id)",
    "w_t3_value": "SELECT k, v, name, w, FIRST_VALUE(w) OVER (PARTITION BY k ORDER BY v, name, w) "
                  "AS fw, LAST_VALUE(name) OVER (PARTITION BY k ORDER BY v, name, w ROWS BETWEEN "
                  "CURRENT ROW AND 1 FOLLOWING) AS ln, PERCENT_RANK() OVER (PARTITION BY name "
                  "ORDER BY v) AS pr, CUME_DIST() OVER (ORDER BY k) AS cd, NTILE(2) OVER "
                  "(PARTITION BY k ORDER BY v, name, w) AS nt FROM t3",
    # ---- GROUPS frames and EXCLUDE (test_window_frames.py has the rest)
    "w_groups": "SELECT id, SUM(b) OVER (PARTITION BY a ORDER BY c GROUPS BETWEEN 1 PRECEDING "
                "AND 1 FOLLOWING) AS g1, COUNT(*) OVER (ORDER BY c DESC GROUPS BETWEEN 2 "
                "PRECEDING AND 1 PRECEDING) AS g2, MAX(d) OVER (PARTITION BY f ORDER BY a "
                "GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING) AS g3, FIRST_VALUE(a) OVER (ORDER "
                "BY a GROUPS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS g4 FROM t1",
    "w_exclude": "SELECT id, SUM(b) OVER (PARTITION BY c ORDER BY id ROWS BETWEEN 2 PRECEDING "
                 "AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS x1, COUNT(b) OVER (PARTITION BY c "
                 "ORDER BY a RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP) AS x2, "
                 "MIN(b) OVER (PARTITION BY a ORDER BY c GROUPS BETWEEN 1 PRECEDING AND CURRENT "
                 "ROW EXCLUDE TIES) AS x3, AVG(d) OVER (ORDER BY a RANGE BETWEEN CURRENT ROW "
                 "AND 1 FOLLOWING EXCLUDE TIES) AS x4, NTH_VALUE(c, 2) OVER (PARTITION BY a "
                 "ORDER BY c GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP) "
                 "AS x5 FROM t1",
    # ---- ORDER BY ... LIMIT / OFFSET
    "top_lim": "SELECT id, a, b FROM t1 ORDER BY b DESC, id LIMIT 10",
    "top_off": "SELECT id, s FROM t1 ORDER BY s NULLS LAST, id LIMIT 7 OFFSET 5",
    "top_hidden": "SELECT id FROM t1 ORDER BY d DESC, id LIMIT 5",
    "top_t3": "SELECT k, v, name FROM t3 ORDER BY v DESC, k, name, w LIMIT 8",
    "top_sub": "SELECT a, COUNT(*) AS n FROM (SELECT a, b FROM t1 ORDER BY b, id LIMIT 50) AS x "
               "GROUP BY a",
    "top_union": "SELECT a AS v FROM t1 UNION ALL SELECT k FROM t2 ORDER BY 1 DESC LIMIT 6",
    # ---- top-k per group
    "top_group": "SELECT * FROM (SELECT id, a, b, ROW_NUMBER() OVER (PARTITION BY a "
                 "ORDER BY b DESC, id) AS rn FROM t1) AS x WHERE rn <= 3",
    "top_rank": "SELECT a, b, r FROM (SELECT a, b, RANK() OVER (PARTITION BY a ORDER BY b) AS r "
                "FROM t1) AS x WHERE r <= 2",
    "top_t3_group": "SELECT k, v, name FROM (SELECT k, v, name, ROW_NUMBER() OVER "
                    "(PARTITION BY name ORDER BY v DESC, k, w) AS rn FROM t3) AS x WHERE rn <= 2",
}

# Runs: name -> (workers, --step-rows or None for the default).
RUNS = {"w1": (1, STEP_ROWS), "w3": (3, STEP_ROWS), "w1_bigstep": (1, None)}


class World:
    pass


def view_sql(name):
    return "CREATE MATERIALIZED VIEW %s AS\n%s;" % (name, QUERIES[name])


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: "seed%d" % s)
def world(request, tmp_path_factory, sluice):
    seed = request.param
    w = World()
    d = str(tmp_path_factory.mktemp("winvs%d" % seed))
    data = gen_data(seed)
    w.db = write_inputs(d, data)
    base = tables_sql(d)
    w.compile_errors, ok = compile_views(d, base, list(QUERIES), view_sql)
    w.program = os.path.join(d, "program.sql")
    with open(w.program, "w") as f:
        f.write(base + "\n" + "\n".join(view_sql(n) for n in ok) + "\n")
    w.check = run_ok(["check", w.program]).stdout
    w.types = relation_types(w.check)
    run_each(w, d, RUNS)
    run_on_hosts(w, w.program, d, STEP_ROWS, seed, SEEDS)
    return w


def compare_view(world, name, run_key):
    if name in world.compile_errors:
        pytest.fail("sluice check rejected the query:\n%s\n%s" % (
            QUERIES[name], world.compile_errors[name]))
    assert_dump_matches(world, name, run_key, world.db.execute(QUERIES[name]).fetchall(),
                        "query: " + QUERIES[name])


@pytest.mark.parametrize("name", list(QUERIES))
def test_window_view_vs_sqlite_w1(world, name):
    compare_view(world, name, "w1")


@pytest.mark.parametrize("name", list(QUERIES))
def test_window_view_vs_sqlite_w3(world, name):
    compare_view(world, name, "w3")


def test_window_dumps_identical_across_workers_and_step_sizes(world):
    for other in ("w3", "w1_bigstep"):
        a, b = world.dumps["w1"], world.dumps[other]
        files = sorted(os.listdir(a))
        assert files == sorted(os.listdir(b)) and files
        for fn in files:
            with open(os.path.join(a, fn), "rb") as x, open(os.path.join(b, fn), "rb") as y:
                assert x.read() == y.read(), "%s differs between w1 and %s" % (fn, other)


def test_dumps_identical_across_hosts(world):
    """--hosts 2 and --hosts 3 with 3 workers give the dump of --workers 3."""
    reason = mpirun_missing()
    if reason:
        pytest.skip(reason)
    check_dumps_identical_across_hosts(world, "w3")


def test_top_k_queries_plan_top_k_nodes(world):
    """ORDER BY ... LIMIT and rank <= k are top-k nodes, not windows over
    the whole input (the check output names the node kinds)."""
    assert "topk(" in world.check
    assert "limit 3 row_number" in world.check  # top_group
    assert "limit 2 rank" in world.check  # top_rank
    assert "limit 7 offset 5" in world.check  # top_off

"""FIRST_VALUE/LAST_VALUE/NTH_VALUE, NTILE/PERCENT_RANK/CUME_DIST, named
windows, QUALIFY and RANGE offsets over dates and times (issue 19; docs/sql.md, "Window functions"):
  - tests/slt/window_more.test (written by tests/slt/gen_window_more.py from
    SQLite's answers) in one-shot mode and incrementally with every step
    compared to a from-scratch run, on 1-3 workers;
  - the generator still agrees with SQLite;
  - QUALIFY rank <= k is planned as a top-k;
  - RANGE offsets over DATE and TIMESTAMP keys (INTERVAL) are in the slt
    file; the errors of named windows, of offsets of the wrong kind and of
    what is not supported yet, at their line and column.
Random insert/delete streams on 1 and 3 workers against SQLite are in
test_window_vs_sqlite.py (w_value, w_dist, w_named, w_t3_value) and in the
differential test (feature window_more).
"""
import os

import pytest

import sltfile
from conftest import run_ok
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "window_more.test")


@sltfile.modes()
def test_window_more_slt(args):
    sltfile.all_pass(args, CASE)


def test_expected_results_are_sqlite_answers():
    sltfile.generator_agrees("gen_window_more.py", postgres=False)


def test_qualify_rank_bound_is_a_top_k(tmp_path):
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (p INT, o INT, v INT);\n"
                    "CREATE VIEW x AS SELECT p, o FROM t "
                    "QUALIFY ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) <= 3;\n"
                    "CREATE VIEW y AS SELECT p, o, RANK() OVER w AS r FROM t "
                    "WINDOW w AS (PARTITION BY p ORDER BY o) QUALIFY r <= 2;\n")
    out = run_ok(["check", str(prog)]).stdout
    assert "limit 3 row_number" in out and "limit 2 rank" in out, out
    assert "window(" not in out, out


TABLES = ["CREATE TABLE t (a INT, b INT, s VARCHAR, d DATE);"]

ERRORS = [
    # (id, view text, needle where the error must point, words in the message)
    ("unknown_window", "SELECT a, SUM(b) OVER nope AS x FROM t WINDOW w AS (ORDER BY a)",
     "nope", ['window "nope" does not exist']),
    ("no_window_clause", "SELECT a, RANK() OVER w AS x FROM t", "w AS x",
     ['window "w" does not exist']),
    ("window_of_outer_select", "SELECT a, (SELECT MAX(b) FROM t) AS m FROM t "
     "WHERE a IN (SELECT RANK() OVER w FROM t) WINDOW w AS ()", "w FROM",
     ['window "w" does not exist']),
    ("override_partition", "SELECT a, SUM(b) OVER (w PARTITION BY b) AS x FROM t "
     "WINDOW w AS (ORDER BY a)", "w PARTITION", ["cannot override PARTITION BY"]),
    ("override_order", "SELECT a, SUM(b) OVER (w ORDER BY b) AS x FROM t "
     "WINDOW w AS (ORDER BY a)", "w ORDER", ["cannot override ORDER BY"]),
    ("copy_frame", "SELECT a, SUM(b) OVER (w) AS x FROM t "
     "WINDOW w AS (ORDER BY a ROWS 1 PRECEDING)", "w) AS", ["cannot copy window", "frame"]),
    ("defined_twice", "SELECT a FROM t WINDOW w AS (), w AS (ORDER BY a)", "w AS (ORDER",
     ["already defined"]),
    ("ntile_zero", "SELECT a, NTILE(0) OVER (ORDER BY a) AS x FROM t", "0)",
     ["NTILE", "greater than zero"]),
    ("nth_value_column", "SELECT a, NTH_VALUE(b, a) OVER (ORDER BY a) AS x FROM t", "a) OVER",
     ["NTH_VALUE", "integer literal"]),
    ("range_interval_over_int", "SELECT a, SUM(b) OVER (ORDER BY a RANGE INTERVAL '1' DAY "
     "PRECEDING) AS x FROM t", "INTERVAL", ["RANGE", "numeric literal"]),
    ("range_number_over_date", "SELECT a, SUM(b) OVER (ORDER BY d RANGE 1 PRECEDING) AS x "
     "FROM t", "1 PRECEDING", ["RANGE", "INTERVAL"]),
    ("qualify_not_boolean", "SELECT a FROM t QUALIFY RANK() OVER (ORDER BY a)", "RANK",
     ["QUALIFY"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_window_errors_are_located(tmp_path, case):
    _, query, needle, words = case
    lines = TABLES + ["-- %s" % case[0], "CREATE VIEW v AS   " + query + ";"]
    e = compile_error(tmp_path, lines)
    for w in words:
        assert w.lower() in e[3].lower(), e
    line, col = locate(lines, needle)
    assert (e[0], e[1]) == (line, col), "reported %d:%d, expected %d:%d for %r: %s" % (
        e[0], e[1], line, col, needle, e[3])


UNSUPPORTED = [
    # GROUPS, EXCLUDE, DISTINCT, IGNORE NULLS with NTH_VALUE/LAG/LEAD and RANGE
    # offsets of months are supported now: test_window_frames.py
    ("ignore_nulls_no_over", "SELECT MAX(b) IGNORE NULLS AS x FROM t", "IGNORE",
     ["IGNORE NULLS", "OVER"]),
    ("range_hours_over_date", "SELECT a, SUM(b) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND "
     "INTERVAL '2' HOUR FOLLOWING) AS x FROM t", "INTERVAL", ["RANGE", "DATE", "whole days"]),
]


@pytest.mark.parametrize("case", UNSUPPORTED, ids=[c[0] for c in UNSUPPORTED])
def test_unsupported_window_constructs_are_located(tmp_path, case):
    _, query, needle, words = case
    lines = TABLES + ["-- %s" % case[0], "CREATE VIEW v AS   " + query + ";"]
    e = compile_error(tmp_path, lines)
    assert "not supported yet" in e[3], e
    for w in words:
        assert w.lower() in e[3].lower(), e
    line, col = locate(lines, needle)
    assert (e[0], e[1]) == (line, col), "reported %d:%d, expected %d:%d for %r: %s" % (
        e[0], e[1], line, col, needle, e[3])

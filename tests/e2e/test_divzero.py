"""Division and modulo by zero give NULL (as SQLite does) and are counted per
view in the run summary; the counts do not depend on the worker count."""
import re

import pytest

from conftest import run_ok


@pytest.mark.parametrize("workers", [1, 3])
def test_division_by_zero_is_null_and_counted_per_view(tmp_path, workers):
    data = tmp_path / "t.csv"
    data.write_text("1,0\n2,1\n3,0\n4,\n7,2\n")
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (a INT, b INT) WITH ('connectors' = '[{\"transport\": "
        "{\"name\": \"file_input\", \"config\": {\"path\": \"%s\"}}, "
        "\"format\": {\"name\": \"csv\"}}]');\n"
        "CREATE MATERIALIZED VIEW q AS SELECT a, a / b AS x FROM t;\n"
        "CREATE MATERIALIZED VIEW r AS SELECT a, a %% b AS y, a / (b - 1) AS z FROM t;\n"
        "CREATE MATERIALIZED VIEW clean AS SELECT a + 1 AS a1 FROM t;\n" % data)
    out = tmp_path / "dump"
    p = run_ok(["run", prog, "--until-done", "--workers", workers, "--dump", out])
    # SQLite's answers: x/0 and x%0 are NULL; NULL operands give NULL uncounted
    assert (out / "q.csv").read_text() == "a,x\n1,\n2,2\n3,\n4,\n7,3\n"
    assert (out / "r.csv").read_text() == "a,y,z\n1,,-1\n2,0,\n3,,-3\n4,,\n7,1,7\n"
    counts = dict(re.findall(r"view (\w+): (\d+) divisions? by zero gave NULL", p.stderr))
    assert counts == {"q": "2", "r": "3"}, p.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_a_division_repeated_in_a_filter_or_a_select_list_is_evaluated_once(tmp_path, workers):
    """a / b repeated in one WHERE (its first OR operand runs over every
    row), or in one SELECT list (a column and a CASE branch), is one shared
    subexpression: computed once a row, so each division by zero counts
    once; the rows are SQLite's."""
    import sqlite3
    rows = [(1, 0), (2, 1), (3, 0), (4, None), (7, 2), (-5, 0), (9, 3)]
    data = tmp_path / "t.csv"
    data.write_text("".join("%d,%s\n" % (a, "" if b is None else b) for a, b in rows))
    views = {"q": "SELECT a, a / b AS x, CASE WHEN a > 0 THEN a / b + 1 ELSE -1 END AS y FROM t",
             "r": "SELECT a, b FROM t WHERE a / b > 1 OR a / b IS NULL"}
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (a INT, b INT) WITH ('connectors' = '[{\"transport\": "
        "{\"name\": \"file_input\", \"config\": {\"path\": \"%s\"}}, "
        "\"format\": {\"name\": \"csv\"}}]');\n" % data +
        "".join("CREATE MATERIALIZED VIEW %s AS %s;\n" % kv for kv in views.items()))
    out = tmp_path / "dump"
    p = run_ok(["run", prog, "--until-done", "--workers", workers, "--dump", out])
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INT, b INT)")
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)
    for name, sql in views.items():
        want = sorted(db.execute(sql).fetchall())
        got = sorted(tuple(None if f == "" else int(f) for f in line.split(","))
                     for line in (out / ("%s.csv" % name)).read_text().splitlines()[1:])
        assert got == want, name
    # three rows divide by zero: once each per view, not once per occurrence
    counts = dict(re.findall(r"view (\w+): (\d+) divisions? by zero gave NULL", p.stderr))
    assert counts == {"q": "3", "r": "3"}, p.stderr

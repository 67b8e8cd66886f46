"""FETCH {FIRST|NEXT} n ROWS WITH TIES against SQLite.

A table t(id, a, b) with few distinct values of a and b (many ties, some
NULLs) gets random inserts and deletes in small steps (deletions land in
steps after their rows), through views whose top-k keeps every row tying
with the n-th, and is then queried one-shot over HTTP (/query). SQLite has
no WITH TIES, so its queries emulate it with window functions: FETCH FIRST
n ROWS WITH TIES keeps the rows whose RANK() is at most n; with OFFSET m,
the rows past position m (ROW_NUMBER() > m) whose RANK() is at most m + n.
PostgreSQL (when installed) runs the same queries with its own WITH TIES
over the final rows. Every query's result is determined as a multiset (with OFFSET, only the
order key is selected, so which of tying rows the offset skips does not
matter). Runs with 1 and 3 workers must agree with SQLite and with each
other.
"""
import json
import random
import sqlite3

import pytest
import requests

from conftest import json_input, read_dump, run, run_ok, wait_until

# name -> (Sluice query, SQLite query)
VIEWS = {
    "first5": ("SELECT id, a, b FROM t ORDER BY a NULLS FIRST FETCH FIRST 5 ROWS WITH TIES",
               "SELECT id, a, b FROM (SELECT *, RANK() OVER (ORDER BY a NULLS FIRST) AS r "
               "FROM t) WHERE r <= 5"),
    "next3": ("SELECT a, b FROM t ORDER BY a DESC NULLS LAST, b NULLS LAST "
              "FETCH NEXT 3 ROWS WITH TIES",
              "SELECT a, b FROM (SELECT *, RANK() OVER (ORDER BY a DESC NULLS LAST, "
              "b NULLS LAST) AS r FROM t) WHERE r <= 3"),
    "one": ("SELECT id, b FROM t ORDER BY b DESC NULLS LAST FETCH FIRST ROW WITH TIES",
            "SELECT id, b FROM (SELECT *, RANK() OVER (ORDER BY b DESC NULLS LAST) AS r "
            "FROM t) WHERE r <= 1"),
    "skipped": ("SELECT a FROM t ORDER BY a NULLS LAST OFFSET 7 ROWS FETCH FIRST 4 ROWS WITH TIES",
               "SELECT a FROM (SELECT a, ROW_NUMBER() OVER (ORDER BY a NULLS LAST) AS rn, "
               "RANK() OVER (ORDER BY a NULLS LAST) AS r FROM t) WHERE rn > 7 AND r <= 11"),
    "grouped": ("SELECT a, COUNT(*) AS c FROM t GROUP BY a ORDER BY COUNT(*) DESC "
                "FETCH FIRST 2 ROWS WITH TIES",
                "SELECT a, c FROM (SELECT a, COUNT(*) AS c, RANK() OVER (ORDER BY COUNT(*) DESC) "
                "AS r FROM t GROUP BY a) WHERE r <= 2"),
    "sub": ("SELECT b, COUNT(*) AS c FROM (SELECT a, b FROM t ORDER BY a NULLS FIRST "
            "FETCH FIRST 6 ROWS WITH TIES) s GROUP BY b",
            "SELECT b, COUNT(*) FROM (SELECT a, b, RANK() OVER (ORDER BY a NULLS FIRST) AS r "
            "FROM t) WHERE r <= 6 GROUP BY b"),
}


def gen_ops(seed, n=600):
    """Random inserts, and deletes of rows inserted before."""
    rnd = random.Random(seed)
    live, ops, nid = [], [], 0
    for _ in range(n):
        if live and rnd.random() < 0.35:
            row = live.pop(rnd.randrange(len(live)))
            ops.append(("delete", row))
        else:
            nid += 1
            row = {"id": nid, "a": None if rnd.random() < 0.08 else rnd.randrange(8),
                   "b": None if rnd.random() < 0.08 else rnd.randrange(5)}
            live.append(row)
            ops.append(("insert", row))
    return ops, live


def program(inp):
    sql = ["CREATE TABLE t (id INT NOT NULL, a INT, b INT) WITH ('materialized' = 'true', %s);"
           % json_input(inp)[len("WITH ("):-1]]
    for name, (q, _) in VIEWS.items():
        sql.append("CREATE MATERIALIZED VIEW %s AS %s;" % (name, q))
    return "\n".join(sql) + "\n"


def norm(rows):
    return sorted(tuple("" if x is None else str(x) for x in r) for r in rows)


def sqlite_of(rows):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, a INT, b INT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(r["id"], r["a"], r["b"]) for r in rows])
    return db


@pytest.fixture(scope="module", params=[1, 20240611])
def data(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("ties")
    ops, live = gen_ops(request.param)
    inp = d / "in.json"
    with open(inp, "w") as f:
        for op, row in ops:
            f.write(json.dumps({op: row}) + "\n")
    prog = d / "prog.sql"
    prog.write_text(program(inp))
    return d, prog, live


@pytest.mark.parametrize("workers", [1, 3])
def test_views_with_ties_match_sqlite(data, workers):
    d, prog, live = data
    dump = d / ("dump_w%d" % workers)
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 7, "--workers", workers,
            "--dump", dump])
    db = sqlite_of(live)
    sizes = {}
    for name, (_, ref) in VIEWS.items():
        _, got = read_dump(dump / ("%s.csv" % name))
        want = norm(db.execute(ref).fetchall())
        assert norm(got) == want, name
        sizes[name] = len(want)
    # ties do happen: more rows than the count for the plain ORDER BY a
    assert sizes["first5"] > 5 and sizes["next3"] >= 3 and sizes["skipped"] > 4, sizes


def test_views_with_ties_match_postgresql(data):
    """The same queries, WITH TIES and all, run by PostgreSQL itself (which
    has it since version 13) over the rows left at the end; this checks the
    SQLite emulation too."""
    import pgserver
    ok, why = pgserver.available()
    if not ok:
        pytest.skip(why)
    d, prog, live = data
    dump = d / "dump_pg"
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 5, "--workers", 2,
            "--dump", dump])
    srv = pgserver.PgServer()
    srv.start()
    try:
        vals = ", ".join("(%d, %s, %s)" % (r["id"], "NULL" if r["a"] is None else r["a"],
                                           "NULL" if r["b"] is None else r["b"]) for r in live)
        srv.psql("CREATE TABLE t (id INT, a INT, b INT); INSERT INTO t VALUES %s;" % vals)
        for name, (q, _) in VIEWS.items():
            _, got = read_dump(dump / ("%s.csv" % name))
            assert norm(got) == norm(srv.query(q)), name
    finally:
        srv.stop()
        srv.remove()


def test_one_shot_queries_with_ties_match_sqlite(data, http_pipeline):
    _, prog, live = data
    pl = http_pipeline(prog.read_text(), "--step-rows", 7, "--workers", 2)

    def done():
        s = requests.get(pl.url("/stats"), timeout=30).json()
        return s if s["global_metrics"]["pipeline_complete"] else None
    wait_until(done, "the pipeline reading its input to the end")
    db = sqlite_of(live)
    for name, (q, ref) in VIEWS.items():
        r = requests.get(pl.url("/query"), params={"sql": q, "format": "json"}, timeout=60)
        assert r.status_code == 200, (name, r.text)
        rows = [json.loads(line) for line in r.text.splitlines() if line.strip()]
        got = norm(tuple(x.values()) for x in rows)
        assert got == norm(db.execute(ref).fetchall()), name
    # the presented order: ORDER BY a, the ties of the 5th row included
    r = requests.get(pl.url("/query"), timeout=60, params={
        "sql": "SELECT a FROM t ORDER BY a DESC NULLS LAST FETCH FIRST 5 ROWS WITH TIES",
        "format": "json"})
    got = [json.loads(line)["a"] for line in r.text.splitlines() if line.strip()]
    want = [x[0] for x in db.execute(
        "SELECT a FROM (SELECT a, RANK() OVER (ORDER BY a DESC NULLS LAST) AS r FROM t) "
        "WHERE r <= 5 ORDER BY a DESC NULLS LAST")]
    assert got == want and len(want) > 5
    pl.stop()


def test_with_ties_needs_order_by(tmp_path):
    cases = [  # (program, line, column)
        ("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM t\n"
         "  FETCH FIRST 3 ROWS WITH TIES;", 3, 3),
        ("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM\n"
         "  (SELECT a FROM t FETCH NEXT 2 ROWS WITH TIES) s;", 3, 20),
    ]
    for i, (text, line, col) in enumerate(cases):
        p = tmp_path / ("bad%d.sql" % i)
        p.write_text(text)
        res = run(["check", p])
        assert res.returncode != 0, text
        assert "bad%d.sql:%d:%d:" % (i, line, col) in res.stderr, res.stderr
        assert "WITH TIES needs ORDER BY" in res.stderr, res.stderr
    p = tmp_path / "bad_kw.sql"
    p.write_text("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM t ORDER BY a "
                 "FETCH FIRST 3 ROWS WITH OTHERS;")
    res = run(["check", p])
    assert res.returncode != 0 and "TIES" in res.stderr, res.stderr
    p = tmp_path / "ok.sql"
    p.write_text("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM t ORDER BY a "
                 "FETCH FIRST 3 ROWS WITH TIES;")
    assert "with ties" in run_ok(["check", p]).stdout

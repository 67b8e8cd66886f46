"""SQL functions (CREATE FUNCTION; docs/sql.md "SQL functions"): results
against SQLite running the same queries with each function's body
substituted by hand, incrementally (random inserts and deletes in small
steps, 1 and 3 workers) and one-shot (/query over a running pipeline, fed
through HTTP); a NULL from a NOT NULL function rejects its record; each
refusal with its line:column; the program diff and a bootstrap when a
function changes (and when one is only added); lineage through a call."""
import json
import random
import sqlite3

import pytest
import requests

from conftest import (convert_sqlite, convert_text, csv_input, json_input, multiset_diff,
                      read_dump, relation_types, run, run_ok, write_csv)
from httpkit import ingress, lines, query

FUNCS = """
CREATE FUNCTION add1(x INT) RETURNS INT AS x + 1;
CREATE OR REPLACE FUNCTION score(a int, b int) RETURNS bigint LANGUAGE SQL IMMUTABLE
  RETURN add1(a) * 10 + COALESCE(b, 0);
CREATE FUNCTION bucket(v INT) RETURNS VARCHAR AS $$
  SELECT CASE WHEN v IS NULL THEN 'none' WHEN v < 3 THEN 'low' ELSE 'high' END
$$ LANGUAGE sql;
CREATE FUNCTION tag(s VARCHAR, n INT) RETURNS VARCHAR NOT NULL
  AS COALESCE(s, '?') || '-' || COALESCE(CAST(n AS VARCHAR), 'n');
CREATE FUNCTION near(a INT, b INT) RETURNS BOOLEAN AS $f$ SELECT a - b BETWEEN -1 AND 1; $f$;
CREATE FUNCTION both(x INT, y INT) RETURNS INT STRICT AS COALESCE(x, 0) + COALESCE(y, 100);
"""


# SQLite's spellings of the bodies, substituted by hand below
def s_add1(x):
    return "((%s) + 1)" % x


def s_score(a, b):
    return "(%s * 10 + COALESCE(%s, 0))" % (s_add1(a), b)


def s_bucket(v):
    return ("(CASE WHEN (%s) IS NULL THEN 'none' WHEN (%s) < 3 THEN 'low' ELSE 'high' END)"
            % (v, v))


def s_tag(s, n):
    return "(COALESCE(%s, '?') || '-' || COALESCE(CAST(%s AS TEXT), 'n'))" % (s, n)


def s_near(a, b):
    return "((%s) - (%s) BETWEEN -1 AND 1)" % (a, b)


def s_both(x, y):
    return ("(CASE WHEN (%s) IS NULL OR (%s) IS NULL THEN NULL "
            "ELSE COALESCE(%s, 0) + COALESCE(%s, 100) END)" % (x, y, x, y))


# name -> (Sluice query, SQLite query)
QUERIES = {
    "f_select": ("SELECT id, add1(v) AS a1, score(v, w) AS sc, bucket(v) AS bk, tag(s, v) AS tg "
                 "FROM k",
                 "SELECT id, %s, %s, %s, %s FROM k" % (s_add1("v"), s_score("v", "w"),
                                                      s_bucket("v"), s_tag("s", "v"))),
    "f_where": ("SELECT id, v FROM k WHERE add1(v) > 4 AND bucket(w) <> 'high'",
                "SELECT id, v FROM k WHERE %s > 4 AND %s <> 'high'" % (s_add1("v"),
                                                                       s_bucket("w"))),
    "f_group": ("SELECT bucket(v) AS bk, COUNT(*) AS n, SUM(score(v, w)) AS ss, "
                "add1(MAX(w)) AS mw FROM k GROUP BY bucket(v)",
                "SELECT %s, COUNT(*), SUM(%s), %s FROM k GROUP BY %s" % (
                    s_bucket("v"), s_score("v", "w"), s_add1("MAX(w)"), s_bucket("v"))),
    "f_group_key": ("SELECT add1(v) AS k1, COUNT(*) AS n FROM k GROUP BY v",
                    "SELECT %s, COUNT(*) FROM k GROUP BY v" % s_add1("v")),
    "f_having": ("SELECT v, SUM(w) AS sw FROM k GROUP BY v HAVING add1(COUNT(*)) > 3",
                 "SELECT v, SUM(w) FROM k GROUP BY v HAVING %s > 3" % s_add1("COUNT(*)")),
    "f_strict": ("SELECT id, both(v, w) AS b1, both(id, 1) AS b2 FROM k",
                 "SELECT id, %s, %s FROM k" % (s_both("v", "w"), s_both("id", "1"))),
    "f_join_eq": ("SELECT k.id, m.name FROM k JOIN m ON add1(k.v) = m.key",
                  "SELECT k.id, m.name FROM k JOIN m ON %s = m.key" % s_add1("k.v")),
    "f_join_near": ("SELECT k.id, m.key FROM k JOIN m ON near(k.w, m.key) WHERE k.id < 40",
                    "SELECT k.id, m.key FROM k JOIN m ON %s WHERE k.id < 40"
                    % s_near("k.w", "m.key")),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fn")
    rng = random.Random(20261204)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER, v INTEGER, w INTEGER, s TEXT)")
    db.execute("CREATE TABLE m (key INTEGER, name TEXT)")
    events, live = [], []
    for i in range(300):
        row = {"id": i, "v": rng.choice([None] + list(range(0, 7))),
               "w": rng.choice([None] + list(range(-2, 6))),
               "s": rng.choice([None, "", "a", "b c", "x'y"])}
        events.append({"insert": row})
        live.append(row)
        if rng.random() < 0.3 and live:  # delete an earlier row, as it was
            gone = live.pop(rng.randrange(len(live)))
            events.append({"delete": gone})
    for r in live:
        db.execute("INSERT INTO k VALUES (?, ?, ?, ?)", (r["id"], r["v"], r["w"], r["s"]))
    mrows = [[key, "n%d" % key] for key in range(0, 8)] + [[3, "again"]]
    for r in mrows:
        db.execute("INSERT INTO m VALUES (?, ?)", r)
    kpath, mpath = tmp / "k.json", tmp / "m.csv"
    kpath.write_text("".join(json.dumps(e) + "\n" for e in events))
    write_csv(mpath, mrows)
    prog = tmp / "prog.sql"
    prog.write_text(FUNCS + "CREATE TABLE k (id INT, v INT, w INT, s VARCHAR) %s;\n"
                    % json_input(kpath) + "CREATE TABLE m (key INT, name VARCHAR) %s;\n"
                    % csv_input(mpath) + "".join(
                        "CREATE MATERIALIZED VIEW %s AS %s;\n" % (n, q[0])
                        for n, q in QUERIES.items()))
    return {"db": db, "prog": prog, "tmp": tmp, "live": live,
            "types": relation_types(run_ok(["check", prog]).stdout)}


@pytest.mark.parametrize("workers,step", [(1, 7), (3, 7), (1, 100000)])
def test_views_vs_sqlite(world, workers, step):
    out = world["tmp"] / ("d_%d_%d" % (workers, step))
    run_ok(["run", world["prog"], "--workers", workers, "--until-done", "--dump", out,
            "--step-rows", step, "--no-progress"])
    for name, (_, sq) in QUERIES.items():
        cols = world["types"][name]
        _, recs = read_dump(str(out / (name + ".csv")))
        actual = [tuple(convert_text(v, cols[i][1]) for i, v in enumerate(r)) for r in recs]
        expected = [tuple(convert_sqlite(v, cols[i][1]) for i, v in enumerate(r))
                    for r in world["db"].execute(sq)]
        assert expected, name
        diff = multiset_diff(actual, expected)
        assert diff is None, "%s (workers=%d, step-rows=%d): %s" % (name, workers, step, diff)


def test_result_types_follow_the_declarations(world):
    t = {c[0]: (c[1], c[2]) for c in world["types"]["f_select"]}
    assert t["a1"] == ("INT", False)
    assert t["sc"] == ("BIGINT", False)
    assert t["tg"] == ("VARCHAR", True)  # RETURNS VARCHAR NOT NULL


# ------------------------------------------------------------------ HTTP, one-shot

HTTP_PROG = FUNCS + """
CREATE TABLE k (id INT, v INT, w INT, s VARCHAR) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW g AS SELECT bucket(v) AS bk, SUM(score(v, w)) AS ss FROM k
  GROUP BY bucket(v);
CREATE FUNCTION must(x INT) RETURNS INT NOT NULL AS x * 2;
CREATE MATERIALIZED VIEW strict AS SELECT id, must(v) AS mv FROM k;
"""


def sqlite_rows(db, sql):
    return sorted((tuple(r) for r in db.execute(sql)), key=repr)


def test_http_incremental_and_one_shot_vs_sqlite(http_pipeline):
    p = http_pipeline(HTTP_PROG, "--workers", "2")
    rng = random.Random(7)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER, v INTEGER, w INTEGER, s TEXT)")
    live = []
    g_sql = "SELECT %s, SUM(%s) FROM k GROUP BY %s" % (s_bucket("v"), s_score("v", "w"),
                                                       s_bucket("v"))
    oneshot = ("SELECT id, tag(s, add1(v)) AS t, near(v, w) AS nr FROM k WHERE score(v, w) > 20",
               "SELECT id, %s, %s FROM k WHERE %s > 20" % (
                   s_tag("s", s_add1("v")), s_near("v", "w"), s_score("v", "w")))
    for rnd in range(6):
        evs = []
        for _ in range(25):
            if live and rng.random() < 0.35:
                evs.append({"delete": live.pop(rng.randrange(len(live)))})
            else:
                r = {"id": len(live) + 100 * rnd, "v": rng.choice([1, 2, 3, 4, 5]),
                     "w": rng.choice([None, 0, 2, 5]), "s": rng.choice([None, "q", ""])}
                live.append(r)
                evs.append({"insert": r})
        j = ingress(p, "k", lines(*evs), wait="true")
        assert "rejected" not in j, j
        db.execute("DELETE FROM k")
        db.executemany("INSERT INTO k VALUES (?, ?, ?, ?)",
                       [(r["id"], r["v"], r["w"], r["s"]) for r in live])
        got = sorted(((r["bk"], r["ss"]) for r in query(p, "SELECT * FROM g")), key=repr)
        assert got == sqlite_rows(db, g_sql), "round %d" % rnd
        got = sorted(((r["id"], r["t"], None if r["nr"] is None else int(r["nr"]))
                      for r in query(p, oneshot[0])), key=repr)
        assert got == sqlite_rows(db, oneshot[1]), "round %d" % rnd
    # a call with the wrong arguments, at its line:column in the query
    r = requests.get(p.url("/query"), params={"sql": "SELECT id,\n  add1(v, w) FROM k"})
    assert r.status_code == 400 and "2:3" in r.text and "takes 1 argument" in r.text, r.text
    p.stop()


def test_null_from_a_not_null_function_rejects_the_record(http_pipeline):
    p = http_pipeline(HTTP_PROG)
    body = lines({"insert": {"id": 1, "v": 4, "w": 1, "s": "a"}},
                 {"insert": {"id": 2, "v": None, "w": 1, "s": "b"}},
                 {"insert": {"id": 3, "v": 6, "w": None, "s": None}})
    j = ingress(p, "k", body, wait="true")
    assert j["rejected"] == 1, j
    assert "function must returned NULL" in j["rejected_error"], j
    assert sorted((r["id"], r["mv"]) for r in query(p, "SELECT * FROM strict")) == [(1, 8), (3, 12)]
    assert sorted(r["id"] for r in query(p, "SELECT id FROM k")) == [1, 3]
    res = p.stop()
    assert "function must returned NULL" in res.stderr


# ------------------------------------------------------------------ refusals

T = "CREATE TABLE t (a INT, b BOOLEAN, s VARCHAR);\n"
F = "CREATE FUNCTION f(x INT) RETURNS INT AS x + 1;\n"
ERRORS = [
    ("CREATE FUNCTION f(x INT) RETURNS INT AS f(x) + 1;", "1:41",
     "function f calls itself: recursive functions are not supported"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS g(x);\nCREATE FUNCTION g(x INT) RETURNS INT AS f(x);",
     "1:41", "functions f and g call each other: recursive functions are not supported"),
    (T + "CREATE VIEW v AS SELECT f(a) FROM t;\n" + F, "2:25",
     "function f is declared after this statement (at 3:17)"),
    (T + F + "CREATE VIEW v AS SELECT f(a, a) FROM t;", "3:25",
     "function f takes 1 argument (x INT), not 2"),
    (T + F + "CREATE VIEW v AS SELECT f(b) FROM t;", "3:27",
     "argument 1 of function f is BOOLEAN, which does not convert to INT (parameter x)"),
    (T + F + "CREATE VIEW v AS SELECT nosuch(a) FROM t;", "3:25", "function nosuch is not supported"),
    (T + F + "CREATE VIEW v AS SELECT f(DISTINCT a) FROM t;", "3:25", "f is a SQL function"),
    ("CREATE FUNCTION abs(x INT) RETURNS INT AS x;", "1:17",
     "function abs would hide the built-in function of that name"),
    ("CREATE FUNCTION Count(x INT) RETURNS INT AS x;", "1:17", "would hide the built-in"),
    (F + "CREATE FUNCTION f(y INT) RETURNS INT AS y;", "2:17", "function f is already declared"),
    ("CREATE FUNCTION f(x INT, x INT) RETURNS INT AS x;", "1:26", "two parameters named \"x\""),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS a + 1;", "1:41", "column \"a\" not found"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS x > 1;", "1:41",
     "function f returns INT, but its body is BOOLEAN"),
    ("CREATE FUNCTION f(x INT) RETURNS INT NOT NULL AS NULL;", "1:50", "but its body is NULL"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS SUM(x);", "1:41",
     "aggregate function sum is not allowed in a function body"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS (SELECT 1);", "1:41", "subquery in a function body"),
    ("CREATE FUNCTION f(x INT) RETURNS INT LANGUAGE plpgsql AS $$ BEGIN RETURN x; END $$;", "1:47",
     "LANGUAGE plpgsql is not supported: only SQL functions"),
    ("CREATE FUNCTION f(x INT) RETURNS TABLE (a INT) AS $$ SELECT x $$ LANGUAGE sql;", "1:34",
     "table-returning functions (RETURNS TABLE) are not supported"),
    ("CREATE FUNCTION f(x INT) RETURNS SETOF INT LANGUAGE sql AS $$ SELECT x $$;", "1:34",
     "RETURNS SETOF"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS $$\n  SELECT x FROM t\n$$ LANGUAGE sql;", "2:12",
     "FROM in a function body is not supported"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS $$ SELECT x, x $$ LANGUAGE sql;", "1:52",
     "its body must SELECT one expression"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS 'select x' LANGUAGE sql;", "1:41",
     "a function body in a string literal is not supported"),
    ("CREATE FUNCTION f(x INT) RETURNS INT SECURITY DEFINER AS x;", "1:38",
     "function option SECURITY"),
    ("CREATE FUNCTION f(x INT) RETURNS INT AS $$ SELECT x $q$;", "1:53",
     "expected the end of the function body ($$)"),
    ("CREATE FUNCTION f(x INT NOT NULL) RETURNS INT AS x;\n" + T +
     "CREATE VIEW v AS SELECT f(NULL) FROM t;", "3:27",
     "argument 1 of function f is NULL, but parameter x is declared NOT NULL"),
]


@pytest.mark.parametrize("prog,pos,msg", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_refusals_name_their_place(tmp_path, prog, pos, msg):
    path = tmp_path / "bad.sql"
    path.write_text(prog)
    p = run(["check", path])
    assert p.returncode != 0
    assert "%s:%s:" % (path, pos) in p.stderr and msg in p.stderr, p.stderr


def test_expansion_and_nesting_are_bounded(tmp_path):
    # each g doubles the body: g15's expansion passes 65536 nodes
    big = ["CREATE FUNCTION g0(x INT) RETURNS INT AS x + x;"] + [
        "CREATE FUNCTION g%d(x INT) RETURNS INT AS g%d(x) + g%d(x);" % (k, k - 1, k - 1)
        for k in range(1, 18)]
    path = tmp_path / "big.sql"
    path.write_text("\n".join(big) + "\n")
    p = run(["check", path])
    assert p.returncode == 1
    assert "expands to more than 65536 expression nodes" in p.stderr, p.stderr
    # 200 calls of g13 (32768 nodes each) pass the program's 2097152 in all
    path.write_text("\n".join(big[:14]) + "\nCREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT "
                    + ", ".join("g13(a) AS c%d" % i for i in range(200)) + " FROM t;\n")
    p = run(["check", path])
    assert p.returncode == 1
    assert "%s:16:" % path in p.stderr and "expand to more than 2097152 expression nodes in " \
        "all" in p.stderr, p.stderr
    # h64 would nest 65 bodies
    deep = ["CREATE FUNCTION h0(x INT) RETURNS INT AS x + 1;"] + [
        "CREATE FUNCTION h%d(x INT) RETURNS INT AS h%d(x);" % (k, k - 1) for k in range(1, 70)]
    path.write_text("\n".join(deep) + "\n")
    p = run(["check", path])
    assert p.returncode == 1
    assert "%s:65:17: error: function h64 nests 65 function bodies within one another (at most " \
        "64)" % path in p.stderr, p.stderr
    path.write_text("\n".join(deep[:64]) + "\nCREATE TABLE t (a INT);\n"
                    "CREATE VIEW v AS SELECT h63(a) AS b FROM t;\n")
    assert "(#0 + 1)" in run_ok(["check", path]).stdout


# ------------------------------------------------------------------ program diff, bootstrap

def diff_prog(tmp_path, fbody, extra=""):
    t = tmp_path / "t.csv"
    if not t.exists():
        write_csv(t, [[i, i % 5] for i in range(40)])
    return ("CREATE TABLE t (a INT, b INT) %s;\n" % csv_input(t) + extra +
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT AS %s;\n" % fbody +
            "CREATE MATERIALIZED VIEW sums AS SELECT b, SUM(a) AS s FROM t GROUP BY b;\n"
            "CREATE MATERIALIZED VIEW fs AS SELECT b, f(s) AS y FROM sums;\n"
            "CREATE MATERIALIZED VIEW plain AS SELECT b, s + 1 AS z FROM sums;\n")


def by_name(j):
    return {r["name"]: r for r in j["relations"]}


def test_changed_function_recomputes_its_callers_and_an_added_one_nothing(tmp_path):
    old = tmp_path / "old.sql"
    old.write_text(diff_prog(tmp_path, "x + 1"))
    st = tmp_path / "storage"
    run_ok(["run", old, "--storage", st, "--until-done"])

    added = tmp_path / "added.sql"
    added.write_text(diff_prog(tmp_path, "x + 1", "CREATE FUNCTION g(y INT) RETURNS INT AS y;\n"))
    j = json.loads(run_ok(["diff", "--storage", st, added, "--format", "json"]).stdout)
    assert j["changed"] is False, j["relations"]

    new = tmp_path / "new.sql"
    new.write_text(diff_prog(tmp_path, "x * 100"))
    j = json.loads(run_ok(["diff", "--storage", st, new, "--format", "json"]).stdout)
    r = by_name(j)
    assert (r["fs"]["status"], r["fs"]["changes"], r["fs"]["functions"], r["fs"]["action"]) == \
        ("changed", ["functions"], ["f"], "recompute")
    for name in ("t", "sums", "plain"):
        assert r[name]["status"] == "unchanged", name
    text = run_ok(["diff", "--storage", st, new]).stdout
    assert "functions (f)" in text

    out = tmp_path / "dump"
    run_ok(["run", new, "--storage", st, "--until-done", "--bootstrap", "allow", "--dump", out])
    sums = {b: sum(a for a in range(40) if a % 5 == b) for b in range(5)}
    _, recs = read_dump(str(out / "fs.csv"))
    assert sorted((int(b), int(y)) for b, y in recs) == sorted((b, s * 100)
                                                               for b, s in sums.items())


# ------------------------------------------------------------------ lineage

def test_lineage_traces_through_a_call(tmp_path):
    prog = tmp_path / "l.sql"
    prog.write_text("CREATE FUNCTION pick(x INT, y INT) RETURNS INT AS x * 2;\n"
                    "CREATE TABLE t (a INT, b INT, c INT);\n"
                    "CREATE VIEW v AS SELECT pick(a, b) AS p, c FROM t WHERE pick(c, a) > 0;")
    j = json.loads(run_ok(["lineage", prog]).stdout)
    v = j["views"]["v"]
    assert [(s["table"], s["column"], s["kind"]) for s in v["columns"]["p"]] == \
        [("t", "a", "transformation")]  # pick ignores y: b is not read
    assert ("t", "c", "filter") in [(s["table"], s["column"], s["kind"]) for s in v["rows"]]


def test_pgwire_query_calls_functions(http_pipeline):
    """The PostgreSQL wire protocol shares /query's path: a SELECT there may
    call the program's functions too."""
    pytest.importorskip("psycopg2")
    from test_pgwire import PgPipeline
    pg = PgPipeline(http_pipeline(HTTP_PROG, "--pg", "127.0.0.1:0"))
    rows = [(i, i % 4, None if i % 3 == 0 else i - 5, "s%d" % i) for i in range(30)]
    ingress(pg.p, "k", lines(*[{"insert": dict(zip(("id", "v", "w", "s"), r))} for r in rows]),
            wait="true")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER, v INTEGER, w INTEGER, s TEXT)")
    db.executemany("INSERT INTO k VALUES (?, ?, ?, ?)", rows)
    conn = pg.connect()
    cur = conn.cursor()
    cur.execute("SELECT id, add1(v), score(v, w), bucket(w) FROM k WHERE near(v, 2)")
    got = sorted(cur.fetchall(), key=repr)
    want = sqlite_rows(db, "SELECT id, %s, %s, %s FROM k WHERE %s" % (
        s_add1("v"), s_score("v", "w"), s_bucket("w"), s_near("v", "2")))
    assert want and got == want
    conn.close()
    pg.p.stop()


def test_a_call_compiles_to_its_body_written_out(tmp_path):
    """Inlining leaves nothing of the function: the program diff between a
    view written with calls and the same view with the bodies written out
    by hand finds every node equal (same fingerprints)."""
    t = "CREATE TABLE t (a INT, b INT, s VARCHAR);\n"
    calls = tmp_path / "calls.sql"
    calls.write_text(t + FUNCS + "CREATE MATERIALIZED VIEW v AS SELECT add1(a) AS x, "
                     "bucket(b) AS y, near(a, b) AS z FROM t WHERE add1(b) > 2;\n")
    by_hand = tmp_path / "by_hand.sql"
    by_hand.write_text(t + "CREATE MATERIALIZED VIEW v AS SELECT a + 1 AS x, "
                       "CASE WHEN b IS NULL THEN 'none' WHEN b < 3 THEN 'low' ELSE 'high' END "
                       "AS y, a - b BETWEEN -1 AND 1 AS z FROM t WHERE b + 1 > 2;\n")
    j = json.loads(run_ok(["check", by_hand, calls, "--format", "json"]).stdout)
    assert j["changed"] is False, j["relations"]
    assert all(n["old"] is not None for n in j["nodes"])


# ------------------------------------------------------------------ sqllogictest

def slt_value(v):
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return "%.3f" % v
    return "(empty)" if v == "" else str(v)


@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]],
                         ids=["oneshot", "incremental"])
def test_sqllogictest_file_vs_sqlite(tmp_path, args):
    """sluice-slt takes CREATE FUNCTION statements (kept before every
    query): a file written here with SQLite's answers to the queries with
    the bodies substituted by hand, run one-shot and incrementally (every
    step compared with a from-scratch run)."""
    import sltfile
    rng = random.Random(11)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER, v INTEGER, w INTEGER, s TEXT)")
    rows = [(i, rng.choice([None, 0, 1, 2, 3, 4]), rng.choice([None, -1, 2, 5]),
             rng.choice([None, "a", "bc"])) for i in range(60)]
    db.executemany("INSERT INTO k VALUES (?, ?, ?, ?)", rows)
    out = ["statement ok\nCREATE TABLE k(id INTEGER, v INTEGER, w INTEGER, s VARCHAR)\n"]
    out.append("statement ok\nINSERT INTO k VALUES %s\n" % ",".join(
        "(%s)" % ",".join("NULL" if x is None else ("'%s'" % x if isinstance(x, str) else str(x))
                          for x in r) for r in rows))
    for stmt in FUNCS.strip().split(";\n"):
        if stmt.strip():
            out.append("statement ok\n%s\n" % stmt.strip().rstrip(";").replace("; $f$", " $f$"))
    for name, (sq, lq) in QUERIES.items():
        if "JOIN" in sq:
            continue
        res = db.execute(lq).fetchall()
        ncol = len(res[0]) if res else sq.count(",") + 1
        types = "".join("I" if all(r[i] is None or isinstance(r[i], int) for r in res) else "T"
                        for i in range(ncol))
        body = "\n".join(slt_value(v) for r in sorted(res, key=repr) for v in r)
        out.append("# %s\nquery %s rowsort\n%s\n----\n%s\n" % (name, types, sq, body))
    path = tmp_path / "functions.test"
    path.write_text("\n".join(out))
    sltfile.all_pass(args, str(path))

"""ROW / struct and MAP types (issue 19; docs/sql.md, "Structs and maps"):
tests/slt/rowmap.test (ROW answers from PostgreSQL 15, MAP answers from
Python dicts, written by tests/slt/gen_rowmap.py) in one-shot mode and
incrementally on 1 and 2 workers; JSON rows with struct and map columns
pushed over HTTP with inserts and deletes, views reading fields and keys,
grouping by a field, by a whole struct and by a map, and a join on maps,
each compared after every step with a computation over the live rows done
here in Python; bad JSON for a struct or a map as a per-record error; CSV
file input and --dump in the text forms; program diffs that see a field's
type; errors at their line and column."""
import json
import os
import random
import subprocess

import pytest
import requests

import sltfile

from conftest import csv_input, read_dump, run_ok
from httpkit import ingress, lines, query
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT = os.path.join(ROOT, "tests", "slt", "rowmap.test")


@sltfile.modes(2)
def test_rowmap_slt(args):
    sltfile.all_pass(args, SLT)


def test_expected_results_are_reference_answers():
    """gen_rowmap.py --check recomputes every expected value (PostgreSQL 15
    for ROW, Python dicts for MAP) and compares with the file."""
    sltfile.generator_agrees("gen_rowmap.py")


# ---------------------------------------------------------------- HTTP, vs Python

CONN = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
PROG = ("CREATE TYPE addr AS (city VARCHAR, zip INT);\n"
        "CREATE TABLE t (id INT NOT NULL, g INT, a addr, m MAP<VARCHAR, INT>) %s;\n"
        "CREATE MATERIALIZED VIEW v_fields AS SELECT id, a.city AS city, (a).zip AS zip, "
        "m['x'] AS mx, CARDINALITY(m) AS n, MAP_CONTAINS_KEY(m, 'y') AS hy FROM t;\n"
        "CREATE MATERIALIZED VIEW v_city AS SELECT a.city AS city, COUNT(*) AS c, "
        "SUM(a.zip) AS s FROM t GROUP BY a.city;\n"
        "CREATE MATERIALIZED VIEW v_addr AS SELECT a, COUNT(*) AS c, MAX(g) AS mg FROM t GROUP BY a;\n"
        "CREATE MATERIALIZED VIEW v_map AS SELECT m, COUNT(*) AS c FROM t GROUP BY m;\n"
        "CREATE MATERIALIZED VIEW v_join AS SELECT x.id AS l, y.id AS r FROM t x JOIN t y "
        "ON x.m = y.m AND x.id < y.id;\n"
        "CREATE MATERIALIZED VIEW v_build AS SELECT id, ROW(g, a.city) AS gc, "
        "MAP['g', g, 'z', a.zip] AS gm FROM t;\n") % CONN


def gen_row(rng, rid):
    a = None
    if rng.random() > 0.15:
        a = {"city": rng.choice([None, "ams", "ber", "a \"q\""]),
             "zip": rng.choice([None, 1, 2, 3])}
        if rng.random() < 0.2:
            del a["zip"]  # a missing member is a NULL field
    m = None
    if rng.random() > 0.15:
        m = {}
        for k in rng.sample(["x", "y", "z"], rng.randint(0, 2)):
            m[k] = rng.choice([None, 1, 2])
    return {"id": rid, "g": rng.randint(0, 3), "a": a, "m": m}


def shuffled(rng, m):
    """The same map, its members in another order (a delete must match)."""
    if m is None:
        return None
    items = list(m.items())
    rng.shuffle(items)
    return dict(items)


def field(a, f):
    return None if a is None else a.get(f)


def full_addr(a):
    return None if a is None else {"city": a.get("city"), "zip": a.get("zip")}


def key(v):
    return json.dumps(v, sort_keys=True)


def expected(live):
    rows = list(live.values())
    out = {}
    out["v_fields"] = [(r["id"], field(r["a"], "city"), field(r["a"], "zip"), field(r["m"], "x"),
                        None if r["m"] is None else len(r["m"]),
                        None if r["m"] is None else ("y" in r["m"])) for r in rows]
    cities = {}
    for r in rows:
        c = cities.setdefault(field(r["a"], "city"), [0, None])
        c[0] += 1
        z = field(r["a"], "zip")
        if z is not None:
            c[1] = z if c[1] is None else c[1] + z
    out["v_city"] = [(k, c, s) for k, (c, s) in cities.items()]
    addrs = {}
    for r in rows:
        k = key(full_addr(r["a"]))
        c = addrs.setdefault(k, [0, None])
        c[0] += 1
        c[1] = r["g"] if c[1] is None else max(c[1], r["g"])
    out["v_addr"] = [(json.loads(k), c, mg) for k, (c, mg) in addrs.items()]
    maps = {}
    for r in rows:
        maps[key(r["m"])] = maps.get(key(r["m"]), 0) + 1
    out["v_map"] = [(json.loads(k), c) for k, c in maps.items()]
    out["v_join"] = [(x["id"], y["id"]) for x in rows for y in rows
                     if x["m"] is not None and x["m"] == y["m"] and x["id"] < y["id"]]
    out["v_build"] = [(r["id"], {"f1": r["g"], "f2": field(r["a"], "city")},
                       {"g": r["g"], "z": field(r["a"], "zip")}) for r in rows]
    return out


def canon(rows):
    return sorted((key(list(r)) for r in rows))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_random_inserts_and_deletes_equal_python(http_pipeline, workers):
    """Random inserts and deletes of JSON rows with a struct column (NULL
    structs, NULL and missing fields) and a map column (NULL maps, empty
    maps, NULL values) over HTTP; deletes carry the map's members in another
    order. After every step each view equals the Python computation over
    the live rows."""
    p = http_pipeline(PROG, "--workers", workers)
    rng = random.Random(20261204 + int(workers))
    live, next_id, checks = {}, 1, 0
    for step in range(8):
        batch = []
        for _ in range(rng.randint(5, 25)):
            if live and rng.random() < 0.35:
                rid = rng.choice(sorted(live))
                row = dict(live.pop(rid))
                row["m"] = shuffled(rng, row["m"])
                batch.append({"delete": row})
            else:
                row = gen_row(rng, next_id)
                next_id += 1
                live[row["id"]] = row
                batch.append({"insert": row})
        r = requests.post(p.url("/ingress/t"), params={"wait": "true"}, data=lines(*batch),
                          timeout=120)
        assert r.status_code == 200, r.text
        assert not r.json().get("errors"), r.text
        want = expected(live)
        for name, rows in want.items():
            got = [tuple(o.values()) for o in query(p, "SELECT * FROM %s" % name)]
            assert canon(got) == canon(rows), "%s after step %d (%d rows)" % (name, step, len(live))
            checks += 1
    assert checks == 8 * 6
    p.stop()


def test_bad_struct_and_map_json_is_a_per_record_error(http_pipeline):
    """A struct with an unknown field, a field of the wrong type, a map
    whose value or key does not read as its type, a number for a struct:
    each is a bad record with its line; the others are applied. Struct and
    map values also read from their text form in a JSON string."""
    p = http_pipeline("CREATE TYPE pt AS (x INT, y INT);\n"
                      "CREATE TABLE j (id INT NOT NULL, p pt, m MAP<INT, VARCHAR>) "
                      "WITH ('materialized' = 'true');\n")
    body = ('{"id": 1, "p": {"x": 1, "y": 2}, "m": {"1": "a", "2": null}}\n'
            '{"id": 2, "p": {"x": 1, "w": 2}, "m": null}\n'
            '{"id": 3, "p": {"x": "one"}, "m": null}\n'
            '{"id": 4, "p": null, "m": {"k": "a"}}\n'
            '{"id": 5, "p": 7, "m": null}\n'
            '{"id": 6, "p": "(3,)", "m": "{2=>b,1=>a}"}\n'
            '{"id": 7, "p": {"Y": 5}, "m": {}}\n'
            '{"id": 8, "p": {"x": 1, "y": 2}, "m": {"1": [1]}}\n')
    r = ingress(p, "j", body, wait="true")
    assert r["accepted"] == 3, r
    errs = sorted(r["errors"], key=lambda e: e["line"])
    assert [e["line"] for e in errs] == [2, 3, 4, 5, 8], r
    assert "unknown field" in errs[0]["reason"] and "w" in errs[0]["reason"], errs
    assert "INT" in errs[1]["reason"], errs
    assert "INT" in errs[2]["reason"], errs
    assert "INT" in errs[4]["reason"] or "array" in errs[4]["reason"], errs
    got = query(p, "SELECT id, p, m, p.y AS y, m[1] AS m1 FROM j ORDER BY id")
    assert got == [
        {"id": 1, "p": {"x": 1, "y": 2}, "m": {"1": "a", "2": None}, "y": 2, "m1": "a"},
        {"id": 6, "p": {"x": 3, "y": None}, "m": {"1": "a", "2": "b"}, "y": None, "m1": "a"},
        {"id": 7, "p": {"x": None, "y": 5}, "m": {}, "y": 5, "m1": None},
    ], got
    csv = query(p, "SELECT id, p, m FROM j ORDER BY id", fmt="csv").splitlines()
    assert csv == ['id,p,m', '1,"(1,2)","{1=>a,2=>NULL}"', '6,"(3,)","{1=>a,2=>b}"',
                   '7,"(,5)",{}'], csv
    p.stop()


def test_csv_file_input_and_dump(tmp_path):
    """A CSV file with structs and maps in their text forms; a malformed
    one is a counted bad record; the dump shows the text forms."""
    data = tmp_path / "in.csv"
    data.write_text('1,"(ams,1)","{a=>1,b=>2}"\n'
                    '2,"(""x,y"",)",{}\n'
                    '3,"(ams,1,9)",{}\n'
                    '4,,"{b=>2,a=>1}"\n')
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TYPE addr AS (city VARCHAR, zip INT);\n"
                    "CREATE TABLE t (k INT, a addr, m MAP<VARCHAR, BIGINT>) %s;\n"
                    "CREATE MATERIALIZED VIEW v AS SELECT k, a, m, a.city AS c, m['b'] AS b "
                    "FROM t;\n"
                    "CREATE MATERIALIZED VIEW w AS SELECT m, COUNT(*) AS n FROM t GROUP BY m;\n"
                    % csv_input(data))
    dump = tmp_path / "dump"
    p = run_ok(["run", str(prog), "--until-done", "--no-progress", "--workers", "2",
                "--dump", str(dump)])
    assert "1 bad input record skipped" in p.stderr, p.stderr[-3000:]
    assert "line 3" in p.stderr and "malformed record literal" in p.stderr, p.stderr[-3000:]
    header, rows = read_dump(dump / "v.csv")
    assert header[:5] == ["k", "a", "m", "c", "b"], header
    got = sorted(tuple(r[:5]) for r in rows)
    assert got == [("1", "(ams,1)", "{a=>1,b=>2}", "ams", "2"),
                   ("2", '("x,y",)', "{}", "x,y", None),
                   ("4", None, "{a=>1,b=>2}", None, "2")], got
    header, rows = read_dump(dump / "w.csv")
    assert sorted(tuple(r[:2]) for r in rows) == [("{a=>1,b=>2}", "2"), ("{}", "1")], rows


def test_program_diff_sees_a_field_type(tmp_path):
    """A field's type is part of the stored encoding's type: changing it
    keeps nothing of the view; the same program keeps everything."""
    old, new = tmp_path / "old.sql", tmp_path / "new.sql"
    old.write_text("CREATE TYPE a AS (x INT);\nCREATE TABLE t (r a, m MAP<INT, INT>);\n"
                   "CREATE VIEW v AS SELECT r, m FROM t;\n")
    new.write_text("CREATE TYPE a AS (x BIGINT);\nCREATE TABLE t (r a, m MAP<INT, INT>);\n"
                   "CREATE VIEW v AS SELECT r, m FROM t;\n")
    out = run_ok(["check", str(old), str(new)]).stdout
    rows = {l.split()[0]: l for l in out.splitlines() if l.split()[:1] in (["t"], ["v"])}
    assert "changed" in rows["v"] and "kept" not in rows["v"], out
    same = run_ok(["check", str(old), str(old)]).stdout
    assert "2 unchanged" in same, same


TABLE = ("CREATE TYPE pt AS (x INT, y VARCHAR);\n"
         "CREATE TABLE t (a INT, p pt, m MAP<VARCHAR, INT>, s VARCHAR);")

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT p.z FROM t", "p.z", "error", ["no field", "z"]),
    ("SELECT (a).x FROM t", "a).x", "error", ["needs a ROW", "INT"]),
    ("SELECT m[1] FROM t", "m[1]", "error", ["key", "MAP"]),
    ("SELECT MAP['a', 1, 'b'] FROM t", "MAP[", "error", ["even"]),
    ("SELECT MAP[1, 'a', 'b', 2] FROM t", "'b', 2", "error", ["incompatible"]),
    ("SELECT MAP_KEYS(a) FROM t", "MAP_KEYS", "error", ["needs a MAP", "INT"]),
    ("SELECT CAST(p AS INT) FROM t", "CAST", "error", ["cannot cast"]),
    ("SELECT a FROM t WHERE (a, s) = (1, 'x', 2)", "(a, s) =", "error", ["2 fields", "3 fields"]),
    ("SELECT (a).* FROM t", "a).*", "error", ["needs a struct", "INT"]),
    ("SELECT a FROM t WHERE (a, s) IN (SELECT a FROM t)", "IN (SELECT", "error",
     ["2 columns", "not 1"]),
    ("SELECT a FROM t WHERE (a, s) IN (SELECT a, s FROM t u WHERE u.a = t.a)", "IN (SELECT",
     "unsupported", ["row IN", "correlated"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_rowmap_errors(tmp_path, case):
    query_text, needle, kind, words = case
    lines_ = TABLE.split("\n") + ["CREATE VIEW v AS " + query_text + ";"]
    e = compile_error(tmp_path, lines_)
    for w in words:
        assert w.lower() in e[3].lower(), e
    assert kind in e[2], e
    assert (e[0], e[1]) == locate(lines_, needle), e


def test_type_errors(tmp_path):
    e = compile_error(tmp_path, ["CREATE TYPE pt AS (x INT, x INT);"])
    assert "twice" in e[3], e
    e = compile_error(tmp_path, ["CREATE TYPE int AS (x INT);"])
    assert "built-in" in e[3], e
    e = compile_error(tmp_path, ["CREATE TABLE t (m MAP<pt2, INT>);"])
    assert "type name" in e[3], e


def test_pgwire_text_form(http_pipeline):
    """Over PostgreSQL's wire protocol: INSERT with ROW(...) and MAP[...]
    as ingress, then SELECT: structs and maps arrive as text (OID 25) in
    their text forms, fields and keys as their own types."""
    import psycopg2
    from test_pgwire import PgPipeline
    p = PgPipeline(http_pipeline(
        "CREATE TYPE addr AS (city VARCHAR, zip INT);\n"
        "CREATE TABLE t (id INT NOT NULL, a addr, m MAP<VARCHAR, INT>) "
        "WITH ('materialized' = 'true');\n"
        "CREATE MATERIALIZED VIEW v AS SELECT id, a, m, a.zip AS zip, m['b'] AS b FROM t;\n",
        "--pg", "127.0.0.1:0"))
    conn = p.connect()
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("INSERT INTO t VALUES (1, ROW('x y', 5), MAP['b', 2, 'a', 1]), "
                "(2, NULL, MAP['c', NULL])")
    cur.execute("SELECT id, a, m, zip, b FROM v ORDER BY id")
    assert [d.type_code for d in cur.description] == [23, 25, 25, 23, 23], cur.description
    assert cur.fetchall() == [(1, '("x y",5)', "{a=>1,b=>2}", 5, 2),
                              (2, None, "{c=>NULL}", None, None)]
    conn.close()
    p.p.stop()


def test_json_nested_arrays_and_arrays_of_structs(http_pipeline):
    """JSON arrays of arrays into INT ARRAY ARRAY, arrays of objects into an
    ARRAY of structs, maps of arrays; a scalar where an inner array belongs
    is a bad record; /query gives them back as JSON and, in CSV, in the
    text forms."""
    p = http_pipeline("CREATE TYPE pt AS (x INT, y INT);\n"
                      "CREATE TABLE j (id INT NOT NULL, aa INT ARRAY ARRAY, ps pt ARRAY, "
                      "ma MAP<VARCHAR, INT ARRAY>) WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW v AS SELECT id, aa[2][1] AS a21, ps[1].y AS y1, "
                      "ma['k'][2] AS k2 FROM j;\n")
    body = ('{"id": 1, "aa": [[1, 2], [3], null, []], "ps": [{"x": 1, "y": 2}, null], '
            '"ma": {"k": [1, 2], "e": []}}\n'
            '{"id": 2, "aa": [1, 2], "ps": null, "ma": null}\n'
            '{"id": 3, "aa": "{{4},{5,6}}", "ps": "{\\"(7,8)\\"}", "ma": "{k=>\\"{9,10}\\"}"}\n')
    r = ingress(p, "j", body, wait="true")
    assert r["accepted"] == 2 and [e["line"] for e in r["errors"]] == [2], r
    got = query(p, "SELECT id, aa, ps, ma FROM j ORDER BY id")
    assert got == [
        {"id": 1, "aa": [[1, 2], [3], None, []], "ps": [{"x": 1, "y": 2}, None],
         "ma": {"e": [], "k": [1, 2]}},
        {"id": 3, "aa": [[4], [5, 6]], "ps": [{"x": 7, "y": 8}], "ma": {"k": [9, 10]}},
    ], got
    assert query(p, "SELECT id, a21, y1, k2 FROM v ORDER BY id") == [
        {"id": 1, "a21": 3, "y1": 2, "k2": 2}, {"id": 3, "a21": 5, "y1": 8, "k2": 10}]
    csv = query(p, "SELECT id, aa, ps, ma FROM j ORDER BY id", fmt="csv").splitlines()
    assert csv == ['id,aa,ps,ma',
                   '1,"{{1,2},{3},NULL,{}}","{""(1,2)"",NULL}","{e=>""{}"",k=>""{1,2}""}"',
                   '3,"{{4},{5,6}}","{""(7,8)""}","{k=>""{9,10}""}"'], csv
    p.stop()


def test_type_names_belong_to_their_program(http_pipeline, tmp_path):
    """A CREATE TYPE name is the program's: /query over a pipeline names its
    types (re-declared for the query), and a type one sqllogictest file
    declared is unknown in the next file run by the same process (type
    shapes are interned per process; their names used to resolve there
    too, newest first)."""
    p = http_pipeline("CREATE TYPE pt AS (x INT, y INT);\n"
                      "CREATE TABLE j (id INT NOT NULL, p pt) WITH ('materialized' = 'true');\n")
    ingress(p, "j", '{"id": 1, "p": {"x": 1, "y": 2}}\n', wait="true")
    assert query(p, "SELECT id, CAST(ROW(p.y, p.x) AS pt) AS q FROM j") == [
        {"id": 1, "q": {"x": 2, "y": 1}}]
    r = requests.get(p.url("/query"), params={"sql": "SELECT CAST(p AS nosuch_t) FROM j"},
                     timeout=60)
    assert r.status_code == 400 and "nosuch_t" in r.text, r.text
    p.stop()
    a, b = tmp_path / "a.test", tmp_path / "b.test"
    a.write_text("statement ok\nCREATE TYPE leak_t AS (x INT)\n\n"
                 "statement ok\nCREATE TABLE ta (c leak_t)\n")
    b.write_text("statement error\nCREATE TABLE tb (c leak_t)\n")
    out = subprocess.run([sltfile.DBG_SLT, "--verbose", str(a), str(b)], capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.rstrip().endswith("3 passed, 0 failed, 0 skipped"), out.stdout

"""The ARRAY type (issue 19; docs/sql.md, "Arrays"): tests/slt/arrays.test
(PostgreSQL 15's answers, written by tests/slt/gen_arrays.py) in one-shot
mode and incrementally - rows inserted, deleted and inserted again, every
step compared with a from-scratch evaluation - on 1 and 2 workers; arrays
in and out of a running pipeline (JSON arrays and PostgreSQL's text form
over HTTP ingress, /query in JSON and CSV, a CSV file input), malformed
array text as a counted per-record error; and the errors for what is not
supported (named, at its line and column)."""
import os

import pytest

import sltfile

from conftest import csv_input, read_dump, run_ok
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT = os.path.join(ROOT, "tests", "slt", "arrays.test")


@sltfile.modes(2)
def test_arrays_slt(args):
    sltfile.all_pass(args, SLT)


def test_expected_results_are_postgresql_answers():
    """gen_arrays.py --check recomputes every expected value with its own
    throw-away PostgreSQL 15 server and compares with the file."""
    sltfile.generator_agrees("gen_arrays.py")


TABLE = "CREATE TABLE t (a INT, s VARCHAR, x INT ARRAY, y VARCHAR[]);"

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT a[1] FROM t", "a[1]", "error", ["subscript", "array", "INT"]),
    ("SELECT x[s] FROM t", "s] FROM", "error", ["subscript", "integer"]),
    ("SELECT CAST(x AS INT) FROM t", "CAST", "error", ["cannot cast", "INT ARRAY"]),
    ("SELECT x || y FROM t", "x || y", "error", ["concatenate"]),
    ("SELECT ARRAY[1, 'a', DATE '2024-01-01'] FROM t", "DATE", "error", ["incompatible"]),
    ("SELECT CARDINALITY(a) FROM t", "CARDINALITY", "error", ["cardinality", "array"]),
    ("SELECT a FROM t WHERE a = ANY(SELECT a FROM t)", "ANY", "unsupported",
     ["ANY", "subquery"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_array_errors(tmp_path, case):
    query, needle, kind, words = case
    lines = [TABLE, "CREATE VIEW v AS " + query + ";"]
    e = compile_error(tmp_path, lines)
    for w in words:
        assert w.lower() in e[3].lower(), e
    assert kind in e[2], e
    assert (e[0], e[1]) == locate(lines, needle), e


def test_nested_array_type_is_an_array_of_arrays(tmp_path):
    """INT[][] is INT ARRAY ARRAY: arrays of arrays (tests/slt/rowmap.test),
    not PostgreSQL's multidimensional arrays."""
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (a INT[][]);\nCREATE VIEW v AS SELECT a[1] AS x FROM t;\n")
    out = run_ok(["check", str(prog)]).stdout
    assert "INT ARRAY ARRAY" in out and "x INT ARRAY" in out, out


def test_http_json_arrays_in_and_out(http_pipeline):
    """JSON arrays and text-form strings into ARRAY columns; a malformed
    array is a bad record listed with its line (the others are applied);
    /query gives arrays back as JSON arrays and, in CSV, in the text form."""
    from httpkit import ingress, query
    p = http_pipeline("CREATE TABLE j (id INT NOT NULL, a INT[], s VARCHAR ARRAY, "
                      "d DATE[], f DOUBLE[]) WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW v AS SELECT id, a[2] AS a2, CARDINALITY(s) AS n, "
                      "a || id AS b FROM j;\n")
    body = ('{"id": 1, "a": [1, 2, null], "s": ["x", "y \\"z\\"", null, ""], '
            '"d": ["2024-02-29"], "f": [1.5, -0.0]}\n'
            '{"id": 2, "a": "{3, 4}", "s": "{a,\\"b c\\"}", "d": "{}", "f": null}\n'
            '{"id": 3, "a": "{1,2", "s": null, "d": null, "f": null}\n'
            '{"id": 4, "a": [1, "x"], "s": null, "d": null, "f": null}\n'
            '{"id": 5, "a": [[1]], "s": null, "d": null, "f": null}\n'
            '{"id": 6, "a": [], "s": [], "d": [], "f": []}\n')
    r = ingress(p, "j", body, wait="true")
    assert r["accepted"] == 3, r
    assert sorted(e["line"] for e in r["errors"]) == [3, 4, 5], r
    reasons = [e["reason"] for e in sorted(r["errors"], key=lambda e: e["line"])]
    assert "malformed array literal" in reasons[0], reasons
    assert "invalid INT" in reasons[1], reasons
    assert "nested" in reasons[2], reasons
    got = query(p, "SELECT id, a, s, d, f FROM j ORDER BY id")
    assert got == [
        {"id": 1, "a": [1, 2, None], "s": ["x", 'y "z"', None, ""], "d": ["2024-02-29"],
         "f": [1.5, 0]},
        {"id": 2, "a": [3, 4], "s": ["a", "b c"], "d": [], "f": None},
        {"id": 6, "a": [], "s": [], "d": [], "f": []},
    ], got
    csv = query(p, "SELECT id, a, s FROM j ORDER BY id", fmt="csv").splitlines()
    assert csv == ['id,a,s', '1,"{1,2,NULL}","{x,""y \\""z\\"""",NULL,""""}"',
                   '2,"{3,4}","{a,""b c""}"', '6,{},{}'], csv
    got = query(p, "SELECT id, a2, n, b FROM v ORDER BY id")
    assert got == [{"id": 1, "a2": 2, "n": 4, "b": [1, 2, None, 1]},
                   {"id": 2, "a2": 4, "n": 2, "b": [3, 4, 2]},
                   {"id": 6, "a2": None, "n": 0, "b": [6]}], got
    p.stop()


def test_csv_file_input_and_dump(tmp_path):
    """A CSV file with arrays in the text form; a malformed one is a
    counted bad record; the dump shows the text form."""
    data = tmp_path / "in.csv"
    data.write_text('1,"{1,2,3}","{a,""b c""}"\n'
                    '2,{},{NULL}\n'
                    '3,"{1,,2}",{}\n'
                    '4,"{4}",\n')
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (k INT, a BIGINT[], s TEXT[]) %s;\n"
                    "CREATE MATERIALIZED VIEW v AS SELECT k, a, s, ARRAY_TO_STRING(a, '+') AS j, "
                    "a[1] + 1 AS f FROM t;\n" % csv_input(data))
    dump = tmp_path / "dump"
    p = run_ok(["run", str(prog), "--until-done", "--no-progress", "--workers", "2",
                "--dump", str(dump)])
    assert "1 bad input record skipped" in p.stderr, p.stderr[-3000:]
    assert "line 3" in p.stderr and "malformed array literal" in p.stderr, p.stderr[-3000:]
    header, rows = read_dump(dump / "v.csv")
    assert header[:5] == ["k", "a", "s", "j", "f"], header
    got = sorted((r[0], r[1], r[2], r[3], r[4]) for r in rows)
    assert got == [("1", "{1,2,3}", '{a,"b c"}', "1+2+3", "2"),
                   ("2", "{}", "{NULL}", "", None),
                   ("4", "{4}", None, "4", "5")], got


# ---------------------------------------------------------------- vs PostgreSQL

VIEWS = {
    "v_agg": "SELECT g, CAST(ARRAY_AGG(v ORDER BY v NULLS FIRST, id) AS VARCHAR) AS agg, "
             "CAST(ARRAY_AGG(a[1] ORDER BY id DESC) AS VARCHAR) AS firsts FROM t GROUP BY g",
    "v_unnest": "SELECT id, x, n FROM t, UNNEST(a) WITH ORDINALITY AS u(x, n)",
    "v_row": "SELECT id, a[1] AS f, a[2] AS s, CARDINALITY(a) AS c, CAST(a AS VARCHAR) AS txt, "
             "CAST(a || v AS VARCHAR) AS app, 3 = ANY(a) AS has3, "
             "CAST(CAST(CAST(a AS VARCHAR) AS INT[]) AS VARCHAR) AS back FROM t",
    "v_elem": "SELECT x, COUNT(*) AS cnt FROM t, UNNEST(a) AS u(x) GROUP BY x",
}


def gen_array(rng):
    if rng.random() < 0.1:
        return None
    return [None if rng.random() < 0.15 else rng.randint(-3, 6)
            for _ in range(rng.randint(0, 4))]


def pg_text(arr):
    return None if arr is None else "{%s}" % ",".join("NULL" if x is None else str(x)
                                                      for x in arr)


def norm(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "t" if v else "f"
    return str(v)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_random_inserts_and_deletes_equal_postgresql(pg, http_pipeline, workers):
    """Random inserts and deletes of rows with INT[] columns (NULL arrays,
    empty arrays, NULL elements) over HTTP ingress; after every step each
    view (ARRAY_AGG with ORDER BY, UNNEST WITH ORDINALITY, subscripts,
    CARDINALITY, ||, = ANY, casts both ways) equals PostgreSQL's answer
    over the live rows."""
    import json
    import random
    import requests
    from httpkit import lines
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    prog = "CREATE TABLE t (id INT NOT NULL, g INT, v INT, a INT[]) %s;\n" % conn
    prog += "".join("CREATE MATERIALIZED VIEW %s AS %s;\n" % (k, q) for k, q in VIEWS.items())
    p = http_pipeline(prog, "--workers", workers)
    rng = random.Random(20241204 + int(workers))
    live, next_id, checks = {}, 1, 0
    for step in range(8):
        batch = []
        for _ in range(rng.randint(5, 25)):
            if live and rng.random() < 0.35:
                rid = rng.choice(sorted(live))
                batch.append({"delete": live.pop(rid)})
            else:
                row = {"id": next_id, "g": rng.randint(0, 3), "v": rng.choice([None, 1, 2, 5]),
                       "a": gen_array(rng)}
                next_id += 1
                live[row["id"]] = row
                batch.append({"insert": row})
        r = requests.post(p.url("/ingress/t"), params={"wait": "true"}, data=lines(*batch),
                          timeout=120)
        assert r.status_code == 200, r.text
        pg.query("DROP TABLE IF EXISTS t; CREATE TABLE t (id INT NOT NULL, g INT, v INT, a INT[])")
        if live:
            pg.query("INSERT INTO t VALUES %s" % ",".join(
                "(%d, %s, %s, %s)" % (x["id"], "NULL" if x["g"] is None else x["g"],
                                      "NULL" if x["v"] is None else x["v"],
                                      "NULL" if x["a"] is None else "'%s'" % pg_text(x["a"]))
                for x in live.values()))
        for name, sql in VIEWS.items():
            r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM %s" % name,
                                                      "format": "json"}, timeout=60)
            assert r.status_code == 200, r.text
            got = sorted((tuple(norm(v) for v in json.loads(l).values())
                          for l in r.text.splitlines() if l.strip()), key=repr)
            want = sorted((tuple(norm(v) for v in w) for w in pg.query(sql)), key=repr)
            assert got == want, "%s after step %d (%d rows)" % (name, step, len(live))
            checks += 1
    assert checks == 8 * len(VIEWS)
    p.stop()


def test_program_diff_sees_the_element_type(tmp_path):
    """INT[] to BIGINT[] changes the stored encoding's type: the diff of the
    two programs keeps nothing of the view (its node fingerprints differ)."""
    old, new = tmp_path / "old.sql", tmp_path / "new.sql"
    old.write_text("CREATE TABLE t (a INT[]);\nCREATE VIEW v AS SELECT a FROM t;\n")
    new.write_text("CREATE TABLE t (a BIGINT[]);\nCREATE VIEW v AS SELECT a FROM t;\n")
    out = run_ok(["check", str(old), str(new)]).stdout
    rows = {l.split()[0]: l for l in out.splitlines() if l.split()[:1] in (["t"], ["v"])}
    assert "changed" in rows["v"] and "kept" not in rows["v"], out
    same = run_ok(["check", str(old), str(old)]).stdout
    assert "2 unchanged" in same, same

"""The VARIANT type (issue 19; docs/sql.md, "VARIANT (JSON)"):
tests/slt/variant.test (PostgreSQL 15's jsonb answers, written by
tests/slt/gen_variant.py) in one-shot mode and incrementally on 1 and 2
workers; JSON rows with nested VARIANT values pushed over HTTP, inserted and
deleted at random (a delete spells the document differently: keys
reordered, numbers rewritten), with views that extract members, group by
them and take DISTINCT VARIANTs, each compared after every step with the
same computation done here in Python's json module; PARSE_JSON of
malformed text is NULL; malformed VARIANT input is a per-record error (JSON
and CSV); CSV and --dump output; the compile errors."""
import decimal
import json
import os
import random
import sys

import pytest
import requests

import sltfile
from conftest import csv_input, read_dump, run_ok
from httpkit import ingress, query
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT = os.path.join(ROOT, "tests", "slt", "variant.test")
SLT_MORE = os.path.join(ROOT, "tests", "slt", "variant_more.test")
sys.path.insert(0, os.path.join(ROOT, "tests", "slt"))
from gen_variant import canon  # noqa: E402  (Sluice's JSON text form, in Python)


@sltfile.modes(2)
def test_variant_slt(args):
    sltfile.all_pass(args, SLT)
    sltfile.all_pass(args, SLT_MORE)


@pytest.mark.parametrize("gen", ["gen_variant.py", "gen_variant_more.py"])
def test_expected_results_are_postgresql_answers(gen):
    """gen_variant.py and gen_variant_more.py --check recompute every
    expected value with their own throw-away PostgreSQL 15 server and
    compare with the files."""
    sltfile.generator_agrees(gen)


def dec(text):
    return json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def key(v):
    """A JSON value's identity as Sluice's VARIANT equality sees it."""
    return None if v is None else canon(v)


# ------------------------------------------------- random streams vs Python

VIEWS = {
    "v_fields": "SELECT id, CAST(doc['user']['name'] AS VARCHAR) AS name, "
                "CAST(doc['score'] AS INT) AS score, TYPEOF(doc['kind']) AS ty, "
                "doc['tags'][1] AS tag1, doc ->> 'kind' AS kind_text, "
                "TO_JSON(doc['user']) AS user_json FROM t",
    "v_by_kind": "SELECT doc['kind'] AS kind, TO_JSON(doc['kind']) AS ktext, COUNT(*) AS cnt, "
                 "SUM(CAST(doc['score'] AS BIGINT)) AS total FROM t GROUP BY doc['kind']",
    "v_by_tag": "SELECT CAST(doc['tags'][1] AS VARCHAR) AS tag, COUNT(*) AS cnt FROM t "
                "WHERE IS_ARRAY(doc['tags']) GROUP BY CAST(doc['tags'][1] AS VARCHAR)",
    "v_users": "SELECT DISTINCT doc['user'] AS u FROM t",
}

KINDS = ['"a"', '"b"', "1", "1.0", "10e-1", "null", '{"y": 2, "z": [1, 2]}',
         '{"z": [1.0, 2], "y": 2}', "[]"]
NAMES = ["ann", "bob", 'q"uote', "\u00e9t\u00e9", "back\\slash"]


def gen_doc(rng):
    """JSON text of a document: some members missing, some of other kinds."""
    parts = []
    if rng.random() < 0.9:
        parts.append('"kind": ' + rng.choice(KINDS))
    if rng.random() < 0.85:
        parts.append('"score": ' + rng.choice(["1", "2.0", "-3", "7.9", '"x"', "1e1"]))
    if rng.random() < 0.8:
        tags = rng.sample(["red", "green", "blue"], rng.randint(0, 3))
        parts.append('"tags": ' + json.dumps(tags))
    elif rng.random() < 0.5:
        parts.append('"tags": "notalist"')
    if rng.random() < 0.85:
        u = ['"name": ' + json.dumps(rng.choice(NAMES))]
        if rng.random() < 0.5:
            u.append('"age": %d' % rng.randint(20, 23))
        rng.shuffle(u)
        parts.append('"user": {%s}' % ", ".join(u))
    rng.shuffle(parts)
    return "{" + ", ".join(parts) + "}"


def respell(text, rng):
    """The same JSON value written differently: members reordered, numbers
    as decimals with trailing zeros."""
    def re(v):
        if isinstance(v, dict):
            items = list(v.items())
            rng.shuffle(items)
            return "{" + ",".join(json.dumps(k) + " : " + re(x) for k, x in items) + "}"
        if isinstance(v, list):
            return "[ " + " , ".join(re(x) for x in v) + " ]"
        if isinstance(v, decimal.Decimal):
            return str(v) + ("" if "e" in str(v).lower() or "." in str(v) else ".00")
        return json.dumps(v)
    return re(dec(text))


def to_int(v):
    """CAST(variant AS INT): numbers truncated toward zero, else NULL."""
    if isinstance(v, decimal.Decimal):
        return int(v)
    return None


def expected(live):
    docs = [(rid, dec(text)) for rid, text in live.items()]
    out = {"v_fields": [], "v_by_kind": {}, "v_by_tag": {}, "v_users": set()}
    for rid, d in docs:
        u = d.get("user")
        tags = d.get("tags")
        kind = d.get("kind", ...)
        tag1 = tags[0] if isinstance(tags, list) and tags else ...
        kind_text = (None if kind is ... or kind is None else
                     kind if isinstance(kind, str) else canon(kind))
        out["v_fields"].append((
            rid, u["name"] if isinstance(u, dict) and "name" in u else None,
            to_int(d.get("score")),
            None if kind is ... else
            {type(None): "null", str: "string", dict: "object", list: "array"}.get(
                type(kind), "number"),
            None if tag1 is ... else key(tag1), kind_text,
            None if u is None else canon(u)))
        # JSON null and a missing member (SQL NULL) are two groups: the
        # VARIANT column shows both as null, its TO_JSON tells them apart
        g = (None if kind is ... or kind is None else canon(kind),
             None if kind is ... else canon(kind))
        cnt, tot = out["v_by_kind"].get(g, (0, None))
        s = to_int(d.get("score"))
        out["v_by_kind"][g] = (cnt + 1, tot if s is None else (tot or 0) + s)
        if isinstance(tags, list):
            t = tags[0] if tags else None
            out["v_by_tag"][t] = out["v_by_tag"].get(t, 0) + 1
        out["v_users"].add(None if u is None else key(u))
    return {
        "v_fields": sorted(out["v_fields"], key=repr),
        "v_by_kind": sorted((k + v for k, v in out["v_by_kind"].items()), key=repr),
        "v_by_tag": sorted(out["v_by_tag"].items(), key=repr),
        "v_users": sorted(((u,) for u in out["v_users"]), key=repr),
    }


def got(p, name):
    rows = query(p, "SELECT * FROM %s" % name)
    vcols = {"v_fields": ("tag1",), "v_by_kind": ("kind",), "v_users": ("u",)}.get(name, ())
    res = []
    for r in rows:
        res.append(tuple(key(dec(json.dumps(v))) if c in vcols and v is not None else v
                         for c, v in r.items()))
    return sorted(res, key=repr)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_random_inserts_and_deletes_equal_python(http_pipeline, workers):
    """Random inserts and deletes of rows with a VARIANT column holding
    nested documents over HTTP ingress (a delete names the row by a
    differently spelled document); after every step each view equals
    the same computation over the live rows in Python."""
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    prog = "CREATE TABLE t (id INT NOT NULL, doc VARIANT) %s;\n" % conn
    prog += "".join("CREATE MATERIALIZED VIEW %s AS %s;\n" % (k, q) for k, q in VIEWS.items())
    p = http_pipeline(prog, "--workers", workers)
    rng = random.Random(20241205 + int(workers))
    live, next_id, checks = {}, 1, 0
    for step in range(8):
        body = []
        for _ in range(rng.randint(5, 25)):
            if live and rng.random() < 0.35:
                rid = rng.choice(sorted(live))
                body.append('{"delete": {"id": %d, "doc": %s}}' % (rid, respell(live.pop(rid), rng)))
            else:
                doc = gen_doc(rng)
                live[next_id] = doc
                body.append('{"insert": {"id": %d, "doc": %s}}' % (next_id, doc))
                next_id += 1
        r = requests.post(p.url("/ingress/t"), params={"wait": "true"},
                          data="\n".join(body) + "\n", timeout=120)
        assert r.status_code == 200, r.text
        assert not r.json().get("errors"), r.text
        want = expected(live)
        for name in VIEWS:
            assert got(p, name) == want[name], "%s after step %d (%d rows)" % (
                name, step, len(live))
            checks += 1
    assert checks == 8 * len(VIEWS)
    # everything deleted: every view is empty
    body = "".join('{"delete": {"id": %d, "doc": %s}}\n' % (rid, respell(d, rng))
                   for rid, d in live.items())
    ingress(p, "t", body, wait="true")
    for name in VIEWS:
        assert query(p, "SELECT * FROM %s" % name) == [], name
    p.stop()


# ------------------------------------- JSON aggregates vs PostgreSQL, per step

AGG_VIEWS = {  # name: (Sluice's query, PostgreSQL's), every column JSON text
    "j_groups": ("SELECT g, TO_JSON(json_agg(x ORDER BY id)) AS a, "
                 "TO_JSON(jsonb_agg(doc ORDER BY id DESC)) AS b, "
                 "TO_JSON(json_object_agg(k, x ORDER BY id)) AS o, "
                 "TO_JSON(jsonb_object_agg(k, doc ORDER BY id DESC)) AS o2, "
                 "TO_JSON(json_agg(DISTINCT x)) AS d, TO_JSON(jsonb_agg(x)) AS e FROM t GROUP BY g",
                 "SELECT g, jsonb_agg(x ORDER BY id)::text, jsonb_agg(doc ORDER BY id DESC)::text, "
                 "jsonb_object_agg(k, x ORDER BY id)::text, "
                 "jsonb_object_agg(k, doc ORDER BY id DESC)::text, "
                 "jsonb_agg(DISTINCT x ORDER BY x NULLS FIRST)::text, "
                 "jsonb_agg(x ORDER BY x NULLS FIRST)::text FROM t GROUP BY g"),
    "j_all": ("SELECT TO_JSON(json_agg(json_build_object('id', id, 'd', doc) ORDER BY id)) AS a, "
              "TO_JSON(json_object_agg(CAST(id AS VARCHAR), x ORDER BY id)) AS o FROM t",
              "SELECT jsonb_agg(jsonb_build_object('id', id, 'd', doc) ORDER BY id)::text, "
              "jsonb_object_agg(id::text, x ORDER BY id)::text FROM t"),
}
AGG_DOCS = ['{"a": 1}', '{"a": 1.0}', '[1, "x"]', '"s"', "null", "2.50", '{"b": [true, null], "a": {}}']


def agg_row(rng, rid):
    return {"id": rid, "g": rng.randint(1, 3), "k": rng.choice(["a", "b", "c", "d"]),
            "x": rng.choice([None, 1, 2, 3, 5]), "doc": rng.choice(AGG_DOCS + [None])}


def agg_json(r, rng):
    """Row r as a JSON record (doc embedded, spelled at random)."""
    doc = "null" if r["doc"] is None else respell(r["doc"], rng)
    return '{"id": %d, "g": %d, "k": "%s", "x": %s, "doc": %s}' % (
        r["id"], r["g"], r["k"], "null" if r["x"] is None else r["x"], doc)


def canon_text(t):
    return None if t is None else canon(dec(t))


def pg_agg_answer(pg, live, name):
    pg.query("DROP TABLE IF EXISTS t; CREATE TABLE t(id INT, g INT, k TEXT, x INT, doc jsonb)")
    if live:
        pg.query("INSERT INTO t VALUES " + ",".join(
            "(%d, %d, '%s', %s, %s)" % (r["id"], r["g"], r["k"],
                                        "NULL" if r["x"] is None else r["x"],
                                        "NULL" if r["doc"] is None else "'%s'" % r["doc"])
            for r in live.values()))
    rows = pg.query(AGG_VIEWS[name][1])
    return sorted((tuple(int(v) if j == 0 and name == "j_groups" else canon_text(v)
                         for j, v in enumerate(r)) for r in rows), key=repr)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_json_aggregates_equal_postgresql_after_every_step(pg, http_pipeline, workers):
    """JSON_AGG / JSONB_AGG / JSON_OBJECT_AGG / JSONB_OBJECT_AGG views
    (ordered, unordered, DISTINCT, under GROUP BY and over the whole
    table) over rows inserted, updated (a delete and an insert of the same
    id, moving it between groups) and deleted at random over HTTP: after
    every step each view equals PostgreSQL 15's jsonb aggregates over the
    live rows; deleting everything empties the grouped view."""
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    prog = ("CREATE TABLE t (id INT NOT NULL, g INT, k VARCHAR, x INT, doc VARIANT) %s;\n" % conn +
            "".join("CREATE MATERIALIZED VIEW %s AS %s;\n" % (n, q[0]) for n, q in AGG_VIEWS.items()))
    p = http_pipeline(prog, "--workers", workers)
    rng = random.Random(19 + int(workers))
    live, next_id, checks = {}, 1, 0
    for step in range(10):
        body = []
        for _ in range(rng.randint(1, 12)):
            u = rng.random()
            if live and u < 0.3:  # delete
                r = live.pop(rng.choice(sorted(live)))
                body.append('{"delete": %s}' % agg_json(r, rng))
            elif live and u < 0.55:  # update: another group, key, value or doc
                old = live[rng.choice(sorted(live))]
                new = agg_row(rng, old["id"])
                body.append('{"delete": %s}' % agg_json(old, rng))
                body.append('{"insert": %s}' % agg_json(new, rng))
                live[old["id"]] = new
            else:
                r = agg_row(rng, next_id)
                next_id += 1
                live[r["id"]] = r
                body.append('{"insert": %s}' % agg_json(r, rng))
        r = requests.post(p.url("/ingress/t"), params={"wait": "true"},
                          data="\n".join(body) + "\n", timeout=120)
        assert r.status_code == 200, r.text
        assert not r.json().get("errors"), r.text
        for name in AGG_VIEWS:
            rows = query(p, "SELECT * FROM %s" % name)
            got_rows = sorted((tuple(v for v in row.values()) for row in rows), key=repr)
            assert got_rows == pg_agg_answer(pg, live, name), "%s after step %d (%d rows)" % (
                name, step, len(live))
            checks += 1
    assert checks == 10 * len(AGG_VIEWS)
    body = "".join('{"delete": %s}\n' % agg_json(r, rng) for r in live.values())
    ingress(p, "t", body, wait="true")
    assert query(p, "SELECT * FROM j_groups") == []
    p.stop()


# ------------------------------------------------------ input, output, errors

def test_http_json_any_value_malformed_rows_and_parse_json(http_pipeline):
    """Any JSON value goes into a VARIANT column; a bare null is SQL NULL;
    a malformed row is a per-record error (the others applied); PARSE_JSON
    of malformed text is NULL; /query gives VARIANTs back as JSON values
    and, in CSV, as JSON text."""
    p = http_pipeline("CREATE TABLE j (id INT NOT NULL, v VARIANT, s VARCHAR) "
                      "WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW pj AS SELECT id, PARSE_JSON(s) AS parsed, "
                      "PARSE_JSON(s) IS NULL AS bad, TYPEOF(v) AS ty FROM j;\n")
    body = ('{"id": 1, "v": {"b": [1, 2.50, {"c": null}], "a": "x"}, "s": "[1, {\\"k\\": true}]"}\n'
            '{"id": 2, "v": "text", "s": "{bad json"}\n'
            '{"id": 3, "v": null, "s": "null"}\n'
            '{"id": 4, "v": {"a": }, "s": null}\n'
            '{"id": 5, "v": 12.50e1, "s": "  42  "}\n'
            '{"id": 6, "v": [[], {}], "s": "[1,]"}\n')
    r = ingress(p, "j", body, wait="true")
    assert r["accepted"] == 5, r
    assert [e["line"] for e in r["errors"]] == [4], r
    got = query(p, "SELECT id, v FROM j ORDER BY id")
    assert got == [{"id": 1, "v": {"a": "x", "b": [1, 2.5, {"c": None}]}},
                   {"id": 2, "v": "text"}, {"id": 3, "v": None}, {"id": 5, "v": 125},
                   {"id": 6, "v": [[], {}]}], got
    got = query(p, "SELECT id, parsed, bad, ty FROM pj ORDER BY id")
    assert got == [{"id": 1, "parsed": [1, {"k": True}], "bad": False, "ty": "object"},
                   {"id": 2, "parsed": None, "bad": True, "ty": "string"},
                   {"id": 3, "parsed": None, "bad": False, "ty": None},
                   {"id": 5, "parsed": 42, "bad": False, "ty": "number"},
                   {"id": 6, "parsed": None, "bad": True, "ty": "array"}], got
    # JSON null from PARSE_JSON is a value, not SQL NULL
    got = query(p, "SELECT id, TO_JSON(parsed) AS t FROM pj WHERE id = 3")
    assert got == [{"id": 3, "t": "null"}], got
    csv = query(p, "SELECT id, v FROM j ORDER BY id", fmt="csv").splitlines()
    assert csv == ['id,v', '1,"{""a"":""x"",""b"":[1,2.5,{""c"":null}]}"', '2,"""text"""',
                   '3,', '5,125', '6,"[[],{}]"'], csv
    p.stop()


def test_csv_file_input_and_dump(tmp_path):
    """A CSV file with JSON text in a VARIANT column; malformed JSON is a
    counted bad record; the dump shows compact JSON."""
    data = tmp_path / "in.csv"
    data.write_text('1,"{""k"": [1, 2], ""a"": 1.50}"\n'
                    '2,"[true, null]"\n'
                    '3,"{""k"": [1, 2}"\n'
                    '4,"""s"""\n'
                    '5,\n')
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (k INT, v JSONB) %s;\n"
                    "CREATE MATERIALIZED VIEW v AS SELECT k, v, v['k'][2] AS k2, "
                    "CAST(v['a'] AS DECIMAL(5,2)) AS a FROM t;\n" % csv_input(data))
    dump = tmp_path / "dump"
    p = run_ok(["run", str(prog), "--until-done", "--no-progress", "--workers", "2",
                "--dump", str(dump)])
    assert "1 bad input record skipped" in p.stderr, p.stderr[-3000:]
    assert "line 3" in p.stderr and "invalid JSON" in p.stderr, p.stderr[-3000:]
    header, rows = read_dump(dump / "v.csv")
    assert header[:4] == ["k", "v", "k2", "a"], header
    got = sorted((r[0], r[1], r[2], r[3]) for r in rows)
    assert got == [("1", '{"a":1.5,"k":[1,2]}', "2", "1.50"),
                   ("2", "[true,null]", None, None),
                   ("4", '"s"', None, None),
                   ("5", None, None, None)], got


TABLE = "CREATE TABLE t (a INT, s VARCHAR, v VARIANT);"

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT PARSE_JSON(a) FROM t", "PARSE_JSON", "error", ["PARSE_JSON", "string"]),
    ("SELECT TYPEOF(a) FROM t", "TYPEOF", "error", ["VARIANT", "INT"]),
    ("SELECT v[1.5] FROM t", "1.5", "error", ["subscript", "string or an integer"]),
    ("SELECT a -> 'x' FROM t", "a -> 'x'", "error", ["VARIANT", "INT"]),
    ("SELECT VARIANTNULL(1) FROM t", "VARIANTNULL", "error", ["number of arguments"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_variant_errors(tmp_path, case):
    query_text, needle, kind, words = case
    lines_ = [TABLE, "CREATE VIEW v AS " + query_text + ";"]
    e = compile_error(tmp_path, lines_)
    for w in words:
        assert w.lower() in e[3].lower(), e
    assert kind in e[2], e
    assert (e[0], e[1]) == locate(lines_, needle), e


def test_pgwire_jsonb_text_and_binary(http_pipeline):
    """Over pg-wire a VARIANT column is jsonb (OID 3802): psycopg 3 reads
    the same Python values in text and binary format; an INSERT of JSON
    text into a VARIANT column parses it."""
    psycopg = pytest.importorskip("psycopg")
    from test_pgwire import PgPipeline
    pg = PgPipeline(http_pipeline("CREATE TABLE tj (id INT NOT NULL, v VARIANT) "
                                  "WITH ('materialized' = 'true');\n", "--pg", "127.0.0.1:0"))
    c = psycopg.connect(host="127.0.0.1", port=pg.port, user="tester", dbname="x",
                        autocommit=True, connect_timeout=30)
    c.execute("""INSERT INTO tj VALUES (1, '{"b": [1, 2.5], "a": "x\\u00e9"}'), (2, 'null'), """
              """(3, NULL), (4, '[true, {}]')""")
    q = "SELECT id, v, v['b'][2] AS b2, v ->> 'a' AS a FROM tj ORDER BY id"
    cur = c.cursor()
    text = cur.execute(q).fetchall()
    assert [d.type_code for d in cur.description] == [23, 3802, 3802, 25]
    binary = c.cursor(binary=True).execute(q).fetchall()
    want = [(1, {"a": "x\u00e9", "b": [1, 2.5]}, 2.5, "x\u00e9"), (2, None, None, None),
            (3, None, None, None), (4, [True, {}], None, None)]
    assert text == want, text
    assert binary == want, binary
    c.close()
    pg.p.stop()


def test_datagen_fills_variant_from_values_only(tmp_path):
    """datagen takes a VARIANT column's values from "values" (JSON texts)
    and refuses to make up strings for one."""
    from conftest import run

    def prog(fields):
        conn = json.dumps([{"transport": {"name": "datagen", "config": {
            "plan": [{"limit": 4, "fields": fields}]}}}])
        p = tmp_path / "p.sql"
        p.write_text("CREATE TABLE t (id INT, v VARIANT) WITH ('materialized' = 'true', "
                     "'connectors' = '%s');\n"
                     "CREATE MATERIALIZED VIEW w AS SELECT id, v['a'] AS a FROM t;\n" % conn)
        return p
    dump = tmp_path / "dump"
    run_ok(["run", str(prog({"v": {"values": ['{"a": 1}', "[1, 2]"]}})), "--until-done",
            "--no-progress", "--dump", str(dump)])
    header, rows = read_dump(dump / "w.csv")
    assert sorted((r[0], r[1]) for r in rows) == [("0", "1"), ("1", None), ("2", "1"),
                                                  ("3", None)], rows
    r = run(["run", str(prog({})), "--until-done", "--no-progress"])
    assert r.returncode != 0 and "only from \"values\"" in r.stderr, r.stderr

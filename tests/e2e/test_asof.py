"""ASOF JOIN and LEFT ASOF JOIN (issue 19 item 3; docs/sql.md, "ASOF
joins"; circuit/op_asof.c) against PostgreSQL 15 (the `pg` fixture), whose
answer is the lateral join

    a [LEFT] JOIN LATERAL (SELECT * FROM b WHERE b.k = a.k AND a.ts OP b.ts
                           ORDER BY b.ts DESC, b.k DESC NULLS LAST, ...
                           LIMIT 1) b ON TRUE

(ASC NULLS FIRST for <= and <: the tie rule Sluice defines):
  - tests/slt/asof.test (written by tests/slt/gen_asof.py) in one-shot mode
    and incrementally with every step compared to a from-scratch run, on
    1-3 workers;
  - random insert/update/delete streams on both sides over HTTP, every
    view compared with PostgreSQL after every step, on 1 and 3 workers;
  - the same streams from files cut into steps of 1, 7 and all rows: the
    integrated output does not depend on step boundaries;
  - the errors for the forms not supported, at their line and column.
"""
import json
import os
import random

import pytest
import requests

import sltfile
from conftest import json_input, multiset_diff, read_dump, run_ok
from httpkit import lines
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "asof.test")


@sltfile.modes()
def test_asof_slt(args):
    sltfile.all_pass(args, CASE)


def test_expected_results_are_postgresql_answers():
    """gen_asof.py --check recomputes every expected value with its own
    throw-away PostgreSQL 15 server and compares with the file."""
    sltfile.generator_agrees("gen_asof.py")


# ---------------------------------------------------------------- random streams

A_COLS = ["id", "k", "ts", "v"]
B_COLS = ["k", "ts", "p", "tag"]
DDL_A = "CREATE TABLE a (id INT, k INT, ts INT, v INT)"
DDL_B = "CREATE TABLE b (k INT, ts INT, p INT, tag VARCHAR)"

VIEWS = {  # name: (outer, op)
    "v_left_ge": (True, ">="),
    "v_inner_gt": (False, ">"),
    "v_left_le": (True, "<="),
    "v_inner_lt": (False, "<"),
    "v_left_lt": (True, "<"),
}
SEL = "a.id, a.k, a.ts, a.v, b.ts AS bts, b.p, b.tag"


def sluice_view(name):
    outer, op = VIEWS[name]
    return "SELECT %s FROM a %s b MATCH_CONDITION (a.ts %s b.ts) ON a.k = b.k" % (
        SEL, "LEFT ASOF JOIN" if outer else "ASOF JOIN", op)


def pg_query(name):
    outer, op = VIEWS[name]
    d = "DESC NULLS LAST" if op[0] == ">" else "ASC NULLS FIRST"
    order = "b.ts %s, b.k %s, b.ts %s, b.p %s, b.tag COLLATE \"C\" %s" % (
        "DESC" if op[0] == ">" else "ASC", d, d, d, d)
    return ("SELECT %s FROM a %s LATERAL (SELECT * FROM b WHERE b.k = a.k AND a.ts %s b.ts "
            "ORDER BY %s LIMIT 1) b %s" % (SEL, "LEFT JOIN" if outer else "CROSS JOIN", op,
                                           order, "ON TRUE" if outer else ""))


def rand_a(rng, i):
    return {"id": i, "k": None if rng.random() < 0.05 else rng.randrange(4),
            "ts": None if rng.random() < 0.05 else rng.randrange(40), "v": rng.randrange(100)}


def rand_b(rng):
    return {"k": None if rng.random() < 0.05 else rng.randrange(4),
            "ts": None if rng.random() < 0.05 else rng.randrange(40),
            "p": rng.randrange(5), "tag": rng.choice(["x", "y", "Z", "xx", None])}


def gen_stream(seed, steps):
    """Per step a list of (table, kind, row) changes; rows are dicts. Both
    tables are multisets (duplicates happen: b's values are few)."""
    rng = random.Random(seed)
    live = {"a": [], "b": []}
    nid = 0
    out = []
    for s in range(steps):
        ch = []
        for t in ("a", "b"):
            for _ in range(rng.randrange(0, 12 if s < 3 else 6)):
                r = rng.random()
                if r < 0.6 or not live[t]:
                    row = rand_a(rng, nid) if t == "a" else rand_b(rng)
                    nid += 1
                    live[t].append(row)
                    ch.append((t, "insert", row))
                elif r < 0.8:
                    row = live[t].pop(rng.randrange(len(live[t])))
                    ch.append((t, "delete", row))
                else:  # update: delete then insert a changed copy
                    old = live[t].pop(rng.randrange(len(live[t])))
                    new = dict(old)
                    new["ts"] = None if rng.random() < 0.05 else rng.randrange(40)
                    if rng.random() < 0.3:
                        new["k"] = rng.randrange(4)
                    live[t].append(new)
                    ch += [(t, "delete", old), (t, "insert", new)]
        out.append((ch, {t: list(v) for t, v in live.items()}))
    return out


def norm(v):
    if v is None or v == "":
        return None
    return str(v)


def sql_val(v):
    if v is None:
        return "NULL"
    return "'%s'" % v if isinstance(v, str) else str(v)


def pg_answers(pg, live):
    pg.query("DROP TABLE IF EXISTS a; DROP TABLE IF EXISTS b; %s; %s" % (DDL_A, DDL_B))
    for t, cols in (("a", A_COLS), ("b", B_COLS)):
        if live[t]:
            pg.query("INSERT INTO %s VALUES %s" % (t, ",".join(
                "(%s)" % ",".join(sql_val(r[c]) for c in cols) for r in live[t])))
    return {name: [tuple(norm(v) for v in r) for r in pg.query(pg_query(name))]
            for name in VIEWS}


def check(got, want, what):
    d = multiset_diff(got, want)
    assert d is None, "%s differs from PostgreSQL:\n%s" % (what, d)


def views_sql():
    return "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (n, sluice_view(n)) for n in VIEWS)


@pytest.mark.parametrize("workers", [1, 3])
def test_random_streams_over_http_equal_postgresql_after_every_step(pg, http_pipeline,
                                                                     workers):
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    p = http_pipeline("%s %s;\n%s %s;\n%s\n" % (DDL_A, conn, DDL_B, conn, views_sql()),
                      "--workers", workers)
    checks = 0
    for step, (ch, live) in enumerate(gen_stream(19 + workers, 14)):
        for t in ("a", "b"):  # one push per table: a step each
            mine = [{kind: row} for (tt, kind, row) in ch if tt == t]
            if not mine:
                continue
            r = requests.post(p.url("/ingress/%s" % t), params={"wait": "true"},
                              data=lines(*mine), timeout=120)
            assert r.status_code == 200, r.text
        want = pg_answers(pg, live)
        for name in VIEWS:
            r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM %s" % name,
                                                      "format": "json"}, timeout=60)
            assert r.status_code == 200, r.text
            got = [tuple(norm(v) for v in json.loads(l).values())
                   for l in r.text.splitlines() if l.strip()]
            check(got, want[name], "%s after step %d (%d workers)" % (name, step, workers))
            checks += 1
    assert checks == 14 * len(VIEWS)
    p.stop()


@pytest.mark.parametrize("workers", [1, 3])
def test_integrated_output_does_not_depend_on_step_boundaries(pg, tmp_path, workers):
    """The whole stream from files, cut into steps of 1, 7 and all rows:
    every cut ends with PostgreSQL's answer for the final contents."""
    stream = gen_stream(77 + workers, 10)
    final = stream[-1][1]
    for t in ("a", "b"):
        (tmp_path / ("%s.json" % t)).write_text("".join(
            json.dumps({kind: row}) + "\n" for ch, _ in stream for (tt, kind, row) in ch
            if tt == t))
    prog = tmp_path / "p.sql"
    prog.write_text("%s %s;\n%s %s;\n%s\n" % (DDL_A, json_input(tmp_path / "a.json"), DDL_B,
                                              json_input(tmp_path / "b.json"), views_sql()))
    want = pg_answers(pg, final)
    assert any(want[n] for n in VIEWS)
    for rows in (1, 7, 100000):
        dump = tmp_path / ("dump%d" % rows)
        run_ok(["run", prog, "--until-done", "--dump", dump, "--workers", workers,
                "--step-rows", rows, "--no-progress"])
        for name in VIEWS:
            _, recs = read_dump(dump / ("%s.csv" % name))
            check([tuple(norm(v) for v in r) for r in recs], want[name],
                  "%s, steps of %d rows, %d workers" % (name, rows, workers))


# ---------------------------------------------------------------- errors

TABLES = ["CREATE TABLE a (id INT, k INT, ts INT);", "CREATE TABLE b (k INT, ts INT, p INT);"]

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT * FROM a RIGHT ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k",
     "ASOF", "unsupported", ["RIGHT ASOF JOIN"]),
    ("SELECT * FROM a FULL ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k",
     "ASOF", "unsupported", ["FULL ASOF JOIN"]),
    ("SELECT * FROM a ASOF JOIN b ON a.k = b.k", "ASOF", "error",
     ["ASOF JOIN", "match condition"]),
    ("SELECT * FROM a ASOF JOIN b MATCH_CONDITION (a.ts = b.ts) ON a.k = b.k",
     "a.ts = b.ts", "error", ["MATCH_CONDITION", ">="]),
    ("SELECT * FROM a ASOF JOIN b MATCH_CONDITION (a.ts >= a.id) ON a.k = b.k",
     "a.ts >= a.id", "error", ["MATCH_CONDITION", "left input", "right input"]),
    ("SELECT * FROM a LEFT ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) ON a.k = b.k AND a.id > b.p",
     "a.id > b.p", "unsupported", ["LEFT ASOF JOIN", "equalities"]),
    ("SELECT * FROM a ASOF JOIN b MATCH_CONDITION (a.ts >= b.ts) WHERE a.k = 1", "WHERE",
     "error", ["ON"]),
    ("SELECT * FROM a JOIN b FOR SYSTEM_TIME AS OF a.ts ON a.k = b.k", "b FOR", "unsupported",
     ["FOR SYSTEM_TIME", "append_only"]),
]


@pytest.mark.parametrize("view,needle,kind,words", ERRORS, ids=[e[0][14:48] for e in ERRORS])
def test_errors_name_the_construct_at_its_position(tmp_path, view, needle, kind, words):
    lines = TABLES + ["CREATE VIEW v AS " + view + ";"]
    line, col, k, msg = compile_error(tmp_path, lines)
    assert (line, col) == locate(lines, needle), msg
    assert kind in k, (k, msg)
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)

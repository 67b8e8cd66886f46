"""Temporal joins `o [LEFT] JOIN r FOR SYSTEM_TIME AS OF x [AS] a ON ...`
over an append-only table r (issue 19; docs/sql.md, "Temporal joins";
sql/plan_asof.c), planned as the ASOF join on r's time column and checked
against PostgreSQL 15 (the `pg` fixture), whose answer is the lateral join

    o [LEFT] JOIN LATERAL (SELECT * FROM r a WHERE on AND x >= a.time
                           ORDER BY a.time DESC, a.c1 DESC NULLS LAST, ...
                           LIMIT 1) a ON TRUE

  - tests/slt/temporal.test (written by tests/slt/gen_temporal.py) in
    one-shot mode and incrementally with every step compared to a
    from-scratch run, on 1-3 workers;
  - random streams over HTTP (inserts, updates and deletes of the orders,
    new versions of r), every view compared with PostgreSQL after every
    step, on 1 and 2 workers; r's time column is its LATENESS column, next
    to another TIMESTAMP column;
  - the errors for the tables and forms a temporal join cannot read, at
    their line and column.
"""
import json
import os
import random

import pytest
import requests

import sltfile
from conftest import multiset_diff
from httpkit import lines
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "temporal.test")


@sltfile.modes()
def test_temporal_slt(args):
    sltfile.all_pass(args, CASE)


def test_expected_results_are_postgresql_answers():
    sltfile.generator_agrees("gen_temporal.py")


# ---------------------------------------------------------------- random streams

O_COLS = ["id", "k", "ts", "v"]
R_COLS = ["k", "vt", "p", "tag", "seen"]
DDL_O = "CREATE TABLE o (id INT, k INT, ts TIMESTAMP, v INT)"
DDL_R = ("CREATE TABLE r (k INT, vt TIMESTAMP LATENESS INTERVAL '100' DAY, p INT, tag VARCHAR, "
         "seen TIMESTAMP)")
SEL = "o.id, o.k, o.ts, o.v, x.vt, x.p, x.tag"

VIEWS = {  # name: (outer, AS OF expression, select list, tail)
    "v_left": (True, "o.ts", SEL, ""),
    "v_inner": (False, "o.ts", SEL, ""),
    "v_shift": (True, "o.ts - INTERVAL '3' HOUR", SEL, ""),
    "v_agg": (False, "o.ts", "o.k, COUNT(*) AS n, SUM(x.p) AS s", "GROUP BY o.k"),
}


def sluice_view(name):
    outer, asof, sel, tail = VIEWS[name]
    return "SELECT %s FROM o %s r FOR SYSTEM_TIME AS OF %s AS x ON o.k = x.k %s" % (
        sel, "LEFT JOIN" if outer else "JOIN", asof, tail)


def pg_query(name):
    outer, asof, sel, tail = VIEWS[name]
    order = "x.vt DESC, x.k DESC NULLS LAST, x.vt DESC NULLS LAST, x.p DESC NULLS LAST, " \
            "x.tag COLLATE \"C\" DESC NULLS LAST, x.seen DESC NULLS LAST"
    return ("SELECT %s FROM o %s LATERAL (SELECT * FROM r x WHERE o.k = x.k AND %s >= x.vt "
            "ORDER BY %s LIMIT 1) x %s %s" % (sel, "LEFT JOIN" if outer else "CROSS JOIN", asof,
                                             order, "ON TRUE" if outer else "", tail))


def ts(h):
    return None if h is None else "2024-01-%02d %02d:00:00" % (1 + h // 24, h % 24)


def rand_o(rng, i):
    return {"id": i, "k": None if rng.random() < 0.05 else rng.randrange(4),
            "ts": None if rng.random() < 0.05 else ts(rng.randrange(40)),
            "v": rng.randrange(100)}


def rand_r(rng):
    return {"k": None if rng.random() < 0.05 else rng.randrange(4),
            "vt": None if rng.random() < 0.05 else ts(rng.randrange(40)),
            "p": rng.randrange(5), "tag": rng.choice(["x", "y", "Z", "xx", None]),
            "seen": ts(rng.randrange(40))}


def gen_stream(seed, steps):
    """Per step a list of (table, kind, row) changes: o's rows are
    inserted, deleted and updated; r (append-only) only gains rows."""
    rng = random.Random(seed)
    live = {"o": [], "r": []}
    nid = 0
    out = []
    for s in range(steps):
        ch = []
        for _ in range(rng.randrange(0, 12 if s < 3 else 6)):
            r = rng.random()
            if r < 0.6 or not live["o"]:
                row = rand_o(rng, nid)
                nid += 1
                live["o"].append(row)
                ch.append(("o", "insert", row))
            elif r < 0.8:
                ch.append(("o", "delete", live["o"].pop(rng.randrange(len(live["o"])))))
            else:
                old = live["o"].pop(rng.randrange(len(live["o"])))
                new = dict(old)
                new["ts"] = ts(rng.randrange(40))
                if rng.random() < 0.3:
                    new["k"] = rng.randrange(4)
                live["o"].append(new)
                ch += [("o", "delete", old), ("o", "insert", new)]
        for _ in range(rng.randrange(0, 6)):
            row = rand_r(rng)
            live["r"].append(row)
            ch.append(("r", "insert", row))
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
    pg.query("DROP TABLE IF EXISTS o; DROP TABLE IF EXISTS r; %s; %s" % (
        DDL_O, DDL_R.replace(" LATENESS INTERVAL '100' DAY", "")))
    for t, cols in (("o", O_COLS), ("r", R_COLS)):
        if live[t]:
            pg.query("INSERT INTO %s VALUES %s" % (t, ",".join(
                "(%s)" % ",".join(sql_val(r[c]) for c in cols) for r in live[t])))
    return {name: [tuple(norm(v) for v in r) for r in pg.query(pg_query(name))]
            for name in VIEWS}


@pytest.mark.parametrize("workers", [1, 2])
def test_random_streams_over_http_equal_postgresql_after_every_step(pg, http_pipeline,
                                                                     workers):
    conn = """'connectors' = '[{"transport": {"name": "http_input"}}]'"""
    views = "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (n, sluice_view(n)) for n in VIEWS)
    p = http_pipeline("%s WITH (%s);\n%s WITH (%s, 'append_only' = 'true');\n%s\n" % (
        DDL_O, conn, DDL_R, conn, views), "--workers", workers)
    checks = nonempty = 0
    for step, (ch, live) in enumerate(gen_stream(23 + workers, 14)):
        for t in ("r", "o"):  # one push per table: a step each
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
            d = multiset_diff(got, want[name])
            assert d is None, "%s after step %d (%d workers) differs from PostgreSQL:\n%s" % (
                name, step, workers, d)
            checks += 1
            nonempty += bool(want[name])
    assert checks == 14 * len(VIEWS) and nonempty > 10 * len(VIEWS)
    p.stop()


# ---------------------------------------------------------------- errors

AO = " WITH ('append_only' = 'true')"
TABLES = ["CREATE TABLE o (id INT, k INT, ts TIMESTAMP);",
          "CREATE TABLE h (k INT, vt TIMESTAMP, p INT)" + AO + ";",
          "CREATE TABLE cur (k INT, vt TIMESTAMP, p INT);",
          "CREATE TABLE two (k INT, a TIMESTAMP, b TIMESTAMP)" + AO + ";",
          "CREATE TABLE none (k INT, p INT)" + AO + ";",
          "CREATE VIEW hv AS SELECT * FROM h;"]

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT * FROM o JOIN cur FOR SYSTEM_TIME AS OF o.ts ON o.k = cur.k", "cur FOR",
     "unsupported", ["append_only", "not declared", "versions"]),
    ("SELECT * FROM o JOIN hv FOR SYSTEM_TIME AS OF o.ts ON o.k = hv.k", "hv FOR",
     "unsupported", ["append_only", "view"]),
    ("SELECT * FROM o JOIN two FOR SYSTEM_TIME AS OF o.ts ON o.k = two.k", "two FOR",
     "unsupported", ["several time columns", "LATENESS"]),
    ("SELECT * FROM o JOIN none FOR SYSTEM_TIME AS OF o.ts ON o.k = none.k", "none FOR",
     "unsupported", ["neither LATENESS nor"]),
    ("SELECT * FROM h FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'", "FOR",
     "unsupported", ["right side of a JOIN"]),
    ("SELECT * FROM o RIGHT JOIN h FOR SYSTEM_TIME AS OF o.ts ON o.k = h.k", "RIGHT",
     "unsupported", ["FOR SYSTEM_TIME", "LEFT JOIN"]),
    ("SELECT * FROM o JOIN h FOR SYSTEM_TIME AS OF h.vt ON o.k = h.k", "h.vt ON",
     "error", ["FOR SYSTEM_TIME AS OF", "rows before the JOIN"]),
    ("SELECT * FROM o JOIN h FOR SYSTEM_TIME AS OF o.ts ON o.k = h.k AND o.id < h.p", "o.id < h.p",
     "unsupported", ["FOR SYSTEM_TIME", "equalities"]),
]


@pytest.mark.parametrize("view,needle,kind,words", ERRORS, ids=[e[0][14:50] for e in ERRORS])
def test_errors_name_the_construct_at_its_position(tmp_path, view, needle, kind, words):
    lines_ = TABLES + ["CREATE VIEW v AS " + view + ";"]
    line, col, k, msg = compile_error(tmp_path, lines_)
    assert (line, col) == locate(lines_, needle), msg
    assert kind in k, (k, msg)
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)


# ---------------------------------------------------------------- LATENESS names the time

TWO_TIMES = ("CREATE TABLE o (id INT, k INT, ts TIMESTAMP){o};\n"
             "CREATE TABLE v (k INT, vt TIMESTAMP LATENESS INTERVAL '1' DAY, loaded TIMESTAMP, "
             "p INT) WITH ({v}'append_only' = 'true');\n")
AS_OF = "SELECT o.id, v.p FROM o JOIN v FOR SYSTEM_TIME AS OF o.ts ON o.k = v.k"
V_ROWS = [(1, "2024-01-01 10:00:00", "2024-01-05 00:00:00", 100),
          (1, "2024-01-01 12:00:00", "2024-01-01 00:00:00", 101),
          (2, "2024-01-01 09:00:00", "2024-01-09 00:00:00", 200)]
O_ROWS = [(1, 1, "2024-01-01 11:00:00"), (2, 1, "2024-01-01 13:00:00"),
          (3, 2, "2024-01-01 08:00:00"), (4, 2, "2024-01-01 09:30:00")]


def as_of_answer():
    """The version of each order's key with the greatest vt <= ts (Python)."""
    out = []
    for oid, k, t in O_ROWS:
        vs = [(vt, p) for (vk, vt, _, p) in V_ROWS if vk == k and vt <= t]
        if vs:
            out.append((oid, max(vs)[1]))
    return sorted(out)


def test_lateness_column_is_the_time_of_a_temporal_join_in_queries_too(http_pipeline, tmp_path):
    """A versioned table with two TIMESTAMP columns, LATENESS on one of them:
    the view, a /query over the running pipeline and the sqllogictest runner
    all take the LATENESS column as the versions' time (/query and the
    runner used to see only 'several time columns' and refuse)."""
    conn = """'connectors' = '[{"transport": {"name": "http_input"}}]'"""
    p = http_pipeline(TWO_TIMES.format(o=" WITH (%s, 'materialized' = 'true')" % conn,
                                       v=conn + ", 'materialized' = 'true', ")
                      + "CREATE MATERIALIZED VIEW j AS %s;\n" % AS_OF)
    for t, cols, rows in (("v", ("k", "vt", "loaded", "p"), V_ROWS),
                          ("o", ("id", "k", "ts"), O_ROWS)):
        r = requests.post(p.url("/ingress/%s" % t), params={"wait": "true"},
                          data=lines(*[{"insert": dict(zip(cols, x))} for x in rows]), timeout=60)
        assert r.status_code == 200, r.text
    want = as_of_answer()
    assert want == [(1, 100), (2, 101), (4, 200)]
    for sql in ("SELECT * FROM j", AS_OF):
        r = requests.get(p.url("/query"), params={"sql": sql, "format": "json"}, timeout=60)
        assert r.status_code == 200, (sql, r.text)
        got = sorted(tuple(json.loads(l).values()) for l in r.text.splitlines() if l.strip())
        assert got == want, (sql, got)
    p.stop()
    f = tmp_path / "two_times.test"
    f.write_text("statement ok\n" + TWO_TIMES.format(o="", v="").split(";\n")[0] + "\n\n"
                 "statement ok\n" + TWO_TIMES.format(o="", v="").split(";\n")[1] + "\n\n"
                 "statement ok\nINSERT INTO v VALUES %s\n\n" % ",".join(
                     "(%d,'%s','%s',%d)" % r for r in V_ROWS) +
                 "statement ok\nINSERT INTO o VALUES %s\n\n" % ",".join(
                     "(%d,%d,'%s')" % r for r in O_ROWS) +
                 "query II rowsort\n%s\n----\n%s\n" % (
                     AS_OF, "\n".join("%d\n%d" % r for r in want)))
    sltfile.all_pass([], str(f))
    sltfile.all_pass(["--incremental", "--check-steps", "--workers", "2"], str(f))

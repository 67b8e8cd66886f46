"""GROUPS frames, frame EXCLUDE, DISTINCT in window aggregates, IGNORE NULLS
with NTH_VALUE/LAG/LEAD and RANGE offsets of months (issue 19; docs/sql.md,
"Window functions"):
  - tests/slt/window_frames.test (written by tests/slt/gen_window_frames.py
    from SQLite's, PostgreSQL 15's and a Python reference's answers) in
    one-shot mode and incrementally with every step compared to a
    from-scratch run, on 1-3 workers;
  - the generator still agrees with its oracles;
  - random insert/upsert/delete events on a PRIMARY KEY table, in steps of
    5 rows on 1 and 3 workers and in one step: the GROUPS and EXCLUDE views
    against SQLite's answers over the final rows, the DISTINCT, IGNORE
    NULLS and month-offset views against the generator's Python reference
    (neither SQLite nor PostgreSQL 15 has them); small steps in partitions
    of ~100 rows recompute only the rows a change reaches;
  - errors at their line and column.
"""
import calendar
import datetime
import json
import os
import random
import sqlite3
import sys

import pytest

import sltfile
from conftest import (convert_sqlite, convert_text, json_input, multiset_diff, read_dump,
                      relation_types, run_ok)
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "window_frames.test")
sys.path.insert(0, os.path.join(ROOT, "tests", "slt"))
import gen_window_frames as ref  # noqa: E402  (the Python reference)


@sltfile.modes()
def test_window_frames_slt(args):
    sltfile.all_pass(args, CASE)


def test_expected_results_are_the_oracles_answers():
    sltfile.generator_agrees("gen_window_frames.py")


# ---- random events ---------------------------------------------------------------

SQLITE_VIEWS = {
    "k_groups": "SELECT id, SUM(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 2 PRECEDING "
                "AND 1 FOLLOWING) AS a, COUNT(*) OVER (ORDER BY o GROUPS BETWEEN 1 FOLLOWING "
                "AND 3 FOLLOWING) AS b, MAX(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 3 "
                "PRECEDING AND 1 PRECEDING) AS c, FIRST_VALUE(o) OVER (PARTITION BY p ORDER BY o "
                "GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW) AS d, AVG(v) OVER (PARTITION BY p "
                "ORDER BY o DESC GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING) AS e FROM k",
    "k_exclude": "SELECT id, SUM(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 3 PRECEDING "
                 "AND 3 FOLLOWING EXCLUDE CURRENT ROW) AS a, COUNT(v) OVER (PARTITION BY p "
                 "ORDER BY o RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE GROUP) AS b, "
                 "MIN(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 "
                 "FOLLOWING EXCLUDE TIES) AS c, NTH_VALUE(o, 2) OVER (PARTITION BY p ORDER BY o "
                 "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) AS d, "
                 "LAST_VALUE(o) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 2 PRECEDING AND "
                 "1 FOLLOWING EXCLUDE GROUP) AS e, COUNT(*) OVER (PARTITION BY p ORDER BY o "
                 "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE TIES) AS f "
                 "FROM k",
}

REF_VIEWS = {
    "k_ignore": "SELECT id, LAG(v) IGNORE NULLS OVER (PARTITION BY p ORDER BY o, id) AS a, "
                "LEAD(v, 2, -1) IGNORE NULLS OVER (PARTITION BY p ORDER BY o, id) AS b, "
                "NTH_VALUE(v, 2) IGNORE NULLS OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 3 "
                "PRECEDING AND 3 FOLLOWING) AS c, LAST_VALUE(v) IGNORE NULLS OVER (PARTITION BY "
                "p ORDER BY o, id ROWS BETWEEN 4 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) "
                "AS d FROM k",
    "k_distinct": "SELECT id, COUNT(DISTINCT v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN "
                  "5 PRECEDING AND 2 FOLLOWING) AS a, SUM(DISTINCT v) OVER (PARTITION BY p "
                  "ORDER BY o) AS b, AVG(DISTINCT o) OVER (PARTITION BY p ORDER BY o GROUPS "
                  "BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP) AS c FROM k",
    "k_months": "SELECT id, SUM(v) OVER (PARTITION BY p ORDER BY d RANGE BETWEEN INTERVAL '1' "
                "MONTH PRECEDING AND CURRENT ROW) AS a, COUNT(*) OVER (ORDER BY d DESC RANGE "
                "BETWEEN INTERVAL '2' MONTH PRECEDING AND INTERVAL '1' MONTH FOLLOWING) AS b "
                "FROM k",
}


def add_months(d, n):
    """PostgreSQL's date + n months: the day clamped to the month's end."""
    t = d.year * 12 + d.month - 1 + n
    y, m = divmod(t, 12)
    return datetime.date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def range_months(rows, part, val, lo, hi, agg):
    """agg over the rows y of row r's partition whose date is within
    [r + lo months, r + hi months]; a NULL date's frame: its NULL peers."""
    out = {}
    for pr in ref.partitions(rows, part):
        for r in pr:
            if r[2] is None:
                fr = [y for y in pr if y[2] is None]
            else:
                d = datetime.date.fromisoformat(r[2])
                a, b = add_months(d, lo), add_months(d, hi)
                fr = [y for y in pr if y[2] is not None and
                      a <= datetime.date.fromisoformat(y[2]) <= b]
            out[r[0]] = agg([val(y) for y in fr])
    return out


def reference(db, name):
    rows = db.execute("SELECT id, p, o, v, s FROM k").fetchall()
    V, O = ref.V, ref.O
    byp, oid, by_o = ref.BY_P, ref.BY_O_ID, ref.BY_O
    if name == "k_ignore":
        cols = [
            ref.window(rows, byp, oid, oid, lambda pr, g, i: ref.lag(pr, i, V, 1, True)),
            ref.window(rows, byp, oid, oid, lambda pr, g, i: ref.lag(pr, i, V, 2, True, True, -1)),
            ref.window(rows, byp, oid, oid, lambda pr, g, i: ref.nth(
                [pr[j][V] for j in ref.frame(len(pr), i, "rows", -3, 3, g)], 2, True)),
            ref.window(rows, byp, oid, oid, lambda pr, g, i: (lambda x: x[-1] if x else None)(
                [pr[j][V] for j in ref.frame(len(pr), i, "rows", -4, 1, g, "current row")
                 if pr[j][V] is not None])),
        ]
    elif name == "k_distinct":
        cols = [
            ref.window(rows, byp, oid, oid, lambda pr, g, i: ref.agg(
                "count", [pr[j][V] for j in ref.frame(len(pr), i, "rows", -5, 2, g)], True)),
            ref.window(rows, byp, oid, by_o, lambda pr, g, i: ref.agg(
                "sum", [pr[j][V] for j in ref.frame(len(pr), i, "range", None, 0, g)], True)),
            ref.window(rows, byp, oid, by_o, lambda pr, g, i: ref.agg(
                "avg", [pr[j][O] for j in ref.frame(len(pr), i, "groups", -1, 1, g, "group")],
                True)),
        ]
    else:
        drows = db.execute("SELECT id, p, d, v FROM k").fetchall()

        def total(vals):
            vals = [x for x in vals if x is not None]
            return sum(vals) if vals else None
        cols = [range_months(drows, lambda r: r[1], lambda r: r[3], -1, 0, total),
                range_months(drows, lambda r: 0, lambda r: r[3], -1, 2, len)]
    return [(r[0],) + tuple(c[r[0]] for c in cols) for r in rows]


def events(rng, db):
    base = datetime.date(2023, 11, 28)
    lines = []
    for _ in range(1200):
        key = rng.randint(0, 299)
        cur = db.execute("SELECT id, p, o, v, s, d FROM k WHERE id = ?", (key,)).fetchone()
        if cur is not None and rng.random() < 0.25:
            lines.append(json.dumps({"delete": dict(zip("id p o v s d".split(), cur))}))
            db.execute("DELETE FROM k WHERE id = ?", (key,))
            continue
        d = base + datetime.timedelta(days=rng.randint(0, 150))
        row = (key, rng.randint(0, 1), rng.choice([None] + list(range(12))),
               rng.choice([None, None] + list(range(-5, 20))), rng.choice(["a", "b", None]),
               None if rng.random() < 0.1 else d.isoformat())
        lines.append(json.dumps({"insert": dict(zip("id p o v s d".split(), row))}))
        db.execute("INSERT OR REPLACE INTO k VALUES (?, ?, ?, ?, ?, ?)", row)
    return lines


def test_random_events_vs_sqlite_and_reference(tmp_path, sluice):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER PRIMARY KEY, p INTEGER, o INTEGER, v INTEGER, "
               "s TEXT, d TEXT)")
    path = tmp_path / "k.json"
    path.write_text("\n".join(events(random.Random(19), db)) + "\n")
    views = dict(SQLITE_VIEWS, **REF_VIEWS)
    prog = tmp_path / "k.sql"
    prog.write_text("CREATE TABLE k (id INT NOT NULL PRIMARY KEY, p INT, o INT, v INT, "
                    "s VARCHAR, d DATE) %s;\n" % json_input(path) + "".join(
                        "CREATE MATERIALIZED VIEW %s AS %s;\n" % kv for kv in views.items()))
    types = relation_types(run_ok(["check", prog]).stdout)
    assert db.execute("SELECT COUNT(*) FROM k").fetchone()[0] > 150
    for workers, step in ((1, 5), (3, 5), (1, 100000)):
        out = tmp_path / ("d_%d_%d" % (workers, step))
        run_ok(["run", prog, "--workers", workers, "--until-done", "--dump", out,
                "--step-rows", step, "--no-progress"])
        for name, q in views.items():
            cols = types[name]
            header, recs = read_dump(str(out / (name + ".csv")))
            actual = [tuple(convert_text(v, cols[i][1]) for i, v in enumerate(r)) for r in recs]
            raw = db.execute(q).fetchall() if name in SQLITE_VIEWS else reference(db, name)
            expected = [tuple(convert_sqlite(v, cols[i][1]) for i, v in enumerate(r))
                        for r in raw]
            floats = [i for i, c in enumerate(cols) if c[1].upper() == "DOUBLE"]
            diff = multiset_diff(actual, expected, floats)
            assert diff is None, "%s (workers=%d, step-rows=%d): %s" % (name, workers, step, diff)


# ---- errors ------------------------------------------------------------------------

TABLES = ["CREATE TABLE t (a INT, b INT, s VARCHAR, d DATE, tm TIME);"]

ERRORS = [
    # (id, view text, needle where the error must point, words in the message)
    ("groups_offset_no_order", "SELECT a, SUM(b) OVER (GROUPS 1 PRECEDING) AS x FROM t",
     "GROUPS", ["GROUPS", "ORDER BY"]),
    ("groups_offset_not_literal", "SELECT a, SUM(b) OVER (ORDER BY a GROUPS b PRECEDING) AS x "
     "FROM t", "b PRECEDING", ["GROUPS offset", "integer literal"]),
    ("exclude_what", "SELECT a, SUM(b) OVER (ORDER BY a ROWS 1 PRECEDING EXCLUDE ALL) AS x "
     "FROM t", "ALL", ["EXCLUDE"]),
    ("distinct_rank", "SELECT a, RANK(DISTINCT b) OVER (ORDER BY a) AS x FROM t", "RANK",
     ["DISTINCT", "only COUNT, SUM, AVG"]),
    ("ignore_nulls_rank", "SELECT a, RANK() IGNORE NULLS OVER (ORDER BY a) AS x FROM t",
     "IGNORE", ["IGNORE NULLS", "rank"]),
    ("months_over_time", "SELECT a, SUM(b) OVER (ORDER BY tm RANGE INTERVAL '1' MONTH "
     "PRECEDING) AS x FROM t", "INTERVAL", ["months", "TIME"]),
    ("months_negative", "SELECT a, SUM(b) OVER (ORDER BY d RANGE INTERVAL '-1' MONTH "
     "PRECEDING) AS x FROM t", "INTERVAL", ["must not be negative"]),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_window_frame_errors_are_located(tmp_path, case):
    _, query, needle, words = case
    lines = TABLES + ["-- %s" % case[0], "CREATE VIEW v AS   " + query + ";"]
    e = compile_error(tmp_path, lines)
    for w in words:
        assert w.lower() in e[3].lower(), e
    line, col = locate(lines, needle)
    assert (e[0], e[1]) == (line, col), "reported %d:%d, expected %d:%d for %r: %s" % (
        e[0], e[1], line, col, needle, e[3])

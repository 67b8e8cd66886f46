#!/usr/bin/env python3
"""Writes tests/slt/window_frames.test (run by tests/e2e/test_window_frames.py
in one-shot mode and incrementally on 1-3 workers): GROUPS frames, frame
EXCLUDE, DISTINCT in window aggregates, IGNORE NULLS with NTH_VALUE, LAG and
LEAD, and RANGE offsets of months and years (issue 19; docs/sql.md, "Window
functions"). Expected results come from three oracles, named in each
record's comment:
  - SQLite (Python's sqlite3) for GROUPS and EXCLUDE; PostgreSQL 15 gives
    the same answers to these (checked here, the query written with NULLS
    FIRST where ORDER BY keys are NULL, as SQLite orders them);
  - PostgreSQL 15 (a throw-away server, tests/e2e/pgserver.py) for RANGE
    offsets of INTERVAL YEAR/MONTH over DATE and TIMESTAMP keys;
  - a Python reference below (per-partition lists, frames as index lists)
    for IGNORE NULLS with NTH_VALUE/LAG/LEAD and for COUNT/SUM/AVG(DISTINCT)
    OVER, which neither SQLite nor PostgreSQL 15 has. The reference's
    RESPECT NULLS and non-DISTINCT forms of the same queries are checked
    against SQLite first, so the frames it builds are SQLite's.

Every window ORDER BY that a position-dependent function reads is total
(it ends with the unique id), so each query has one right answer.

    /usr/bin/python3 tests/slt/gen_window_frames.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_window_frames.py --check    # compares, writes nothing
"""
import os
import re
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import gen_dialect  # noqa: E402  (fmt, query_record, Engine)

gen_dialect.HASH_THRESHOLD = 120

SETUP = [
    "CREATE TABLE t(id INTEGER, p INTEGER, o INTEGER, v INTEGER, s VARCHAR)",
    "INSERT INTO t VALUES(1,1,1,10,'a'),(2,1,2,NULL,'b'),(3,1,2,30,NULL),(4,1,4,40,'d'),"
    "(5,2,1,5,'e'),(6,2,3,NULL,'f'),(7,2,5,7,'g'),(8,1,6,60,'h'),(9,NULL,3,9,'i'),"
    "(10,2,NULL,11,'j'),(11,1,NULL,NULL,'k'),(12,3,7,70,'l'),(13,1,4,10,'a'),(14,2,3,5,NULL),"
    "(15,1,2,30,'b'),(16,2,5,NULL,'e')",
    "CREATE TABLE e(id INTEGER, g INTEGER, ts TIMESTAMP, d DATE, v INTEGER)",
    "INSERT INTO e VALUES(1,1,'2024-01-31 10:00:00','2024-01-31',1),"
    "(2,1,'2024-02-29 09:00:00','2024-02-29',2),(3,1,'2024-03-31 12:00:00','2024-03-31',4),"
    "(4,1,'2024-04-30 08:00:00','2024-04-30',8),(5,2,'2023-12-31 23:59:59','2023-12-31',16),"
    "(6,2,'2024-02-28 10:00:00',NULL,32),(7,2,NULL,'2024-03-28',64),"
    "(8,1,'2023-01-31 00:00:00','2023-02-28',128),(9,2,'2024-05-31 10:00:00','2024-06-30',256),"
    "(10,1,'2024-03-01 00:00:00','2024-03-01',512),(11,2,'2025-02-28 10:00:00','2025-02-28',1024)",
]

DML = [
    "DELETE FROM t WHERE id IN (3, 6, 14)",
    "INSERT INTO t VALUES(17,1,3,33,'m'),(18,2,2,NULL,'n'),(19,3,7,71,'o'),(20,1,2,22,'p'),"
    "(21,1,2,NULL,'a'),(22,2,5,7,NULL)",
    "UPDATE t SET o = 5, v = v + 1 WHERE id IN (1, 12)",
    "UPDATE t SET p = 2 WHERE id = 4",
    "UPDATE t SET v = NULL WHERE id IN (7, 8)",
    "DELETE FROM e WHERE id = 3",
    "INSERT INTO e VALUES(12,1,'2024-03-30 11:10:00','2024-03-30',2048),"
    "(13,2,'2024-01-29 09:00:00','2024-01-29',4096)",
    "UPDATE e SET ts = '2024-02-29 23:00:00', d = '2024-02-01' WHERE id = 4",
]


# ---- the Python reference ---------------------------------------------------

def nkey(x):
    """SQLite's (and Sluice's) ascending order: NULLs first."""
    return (0, 0) if x is None else (1, x)


def partitions(rows, part):
    out = {}
    for r in rows:
        out.setdefault(part(r), []).append(r)
    return out.values()


def frame(n, i, mode, a, b, gid, excl=None):
    """Indexes of row i's frame in a partition of n rows (gid: peer group of
    each row): mode rows/groups with offsets a, b (None: unbounded; <0
    preceding), or range with a, b in {None, 0}; then EXCLUDE."""
    if mode == "rows":
        idx = [j for j in range(n) if (a is None or j >= i + a) and (b is None or j <= i + b)]
    else:  # groups, and range with UNBOUNDED / CURRENT ROW bounds only
        g = gid[i]
        idx = [j for j in range(n)
               if (a is None or gid[j] >= g + a) and (b is None or gid[j] <= g + b)]
    if excl == "current row":
        idx = [j for j in idx if j != i]
    elif excl == "group":
        idx = [j for j in idx if gid[j] != gid[i]]
    elif excl == "ties":
        idx = [j for j in idx if j == i or gid[j] != gid[i]]
    return idx


def window(rows, part, order, peer, fn):
    """fn(partition rows in window order, their peer groups, i) per row:
    {id: value}."""
    out = {}
    for pr in partitions(rows, part):
        pr.sort(key=order)
        gid, g, prev = [], -1, object()
        for r in pr:
            k = peer(r)
            if k != prev:
                g, prev = g + 1, k
            gid.append(g)
        for i, r in enumerate(pr):
            out[r[0]] = fn(pr, gid, i)
    return out


def nth(vals, n, ignore):
    vals = [x for x in vals if x is not None] if ignore else vals
    return vals[n - 1] if 0 < n <= len(vals) else None


def lag(pr, i, col, k, ignore, lead=False, default=None):
    if lead:
        rest = [r[col] for r in pr[i + 1:]]
    else:
        rest = [r[col] for r in reversed(pr[:i])]
    if k == 0:
        return pr[i][col]
    if ignore:
        rest = [x for x in rest if x is not None]
    return rest[k - 1] if k <= len(rest) else default


def agg(kind, vals, distinct):
    vals = [x for x in vals if x is not None]
    if distinct:
        vals = sorted(set(vals))
    if kind == "count":
        return len(vals)
    if not vals:
        return None
    return sum(vals) if kind == "sum" else sum(vals) / len(vals)


# t's columns as the reference reads them: (id, p, o, v, s)
ID, P, O, V, S = range(5)
BY_P = lambda r: r[P]  # noqa: E731
ONE = lambda r: 0  # noqa: E731
BY_ID = lambda r: r[ID]  # noqa: E731
BY_O_ID = lambda r: (nkey(r[O]), r[ID])  # noqa: E731
BY_O = lambda r: nkey(r[O])  # noqa: E731


def py_ignore_nulls(rows, ignore):
    """NTH_VALUE, LAG, LEAD with IGNORE NULLS (or, for the check against
    SQLite, RESPECT NULLS)."""
    cols = [
        window(rows, BY_P, BY_O_ID, BY_O_ID, lambda pr, gid, i: nth(
            [pr[j][V] for j in frame(len(pr), i, "rows", None, 0, gid)], 2, ignore)),
        window(rows, ONE, BY_ID, BY_ID, lambda pr, gid, i: nth(
            [pr[j][S] for j in frame(len(pr), i, "rows", -2, 2, gid)], 3, ignore)),
        window(rows, BY_P, BY_O_ID, BY_O, lambda pr, gid, i: nth(
            [pr[j][O] for j in frame(len(pr), i, "range", None, 0, gid)], 3, ignore)),
        window(rows, BY_P, BY_ID, BY_ID, lambda pr, gid, i: lag(pr, i, V, 1, ignore)),
        window(rows, ONE, BY_ID, BY_ID, lambda pr, gid, i: lag(pr, i, S, 2, ignore, default="zz")),
        window(rows, BY_P, BY_O_ID, BY_O_ID, lambda pr, gid, i: lag(pr, i, V, 1, ignore,
                                                                    lead=True)),
        window(rows, ONE, lambda r: -r[ID], BY_ID, lambda pr, gid, i: lag(
            pr, i, V, 3, ignore, lead=True, default=-1)),
        window(rows, ONE, BY_ID, BY_ID, lambda pr, gid, i: lag(pr, i, V, 0, ignore)),
        window(rows, BY_P, BY_ID, BY_ID, lambda pr, gid, i: lag(pr, i, S, 0, ignore, lead=True)),
    ]
    return [[r[ID]] + [c[r[ID]] for c in cols] for r in rows]


IGN_SQL = ("SELECT id, NTH_VALUE(v, 2) {n} OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN "
           "UNBOUNDED PRECEDING AND CURRENT ROW), NTH_VALUE(s, 3) {n} OVER (ORDER BY id ROWS "
           "BETWEEN 2 PRECEDING AND 2 FOLLOWING), NTH_VALUE(o, 3) {n} OVER (PARTITION BY p "
           "ORDER BY o), LAG(v) {n} OVER (PARTITION BY p ORDER BY id), LAG(s, 2, 'zz') {n} OVER "
           "(ORDER BY id), LEAD(v {n}) OVER (PARTITION BY p ORDER BY o, id), LEAD(v, 3, -1) {n} "
           "OVER (ORDER BY id DESC), LAG(v, 0) {n} OVER (ORDER BY id), LEAD(s, 0) {n} OVER (PARTITION "
           "BY p ORDER BY id) FROM t")


def py_distinct(rows, distinct):
    def a(kind, col, part, order, peer, mode, lo, hi, excl=None):
        return window(rows, part, order, peer, lambda pr, gid, i: agg(
            kind, [pr[j][col] for j in frame(len(pr), i, mode, lo, hi, gid, excl)], distinct))
    cols = [
        a("count", V, BY_P, BY_ID, BY_ID, "range", None, None),
        a("sum", V, BY_P, BY_O_ID, BY_O, "range", None, 0),
        a("avg", V, ONE, BY_ID, BY_ID, "rows", -3, 1),
        a("count", S, BY_P, BY_O_ID, BY_O_ID, "rows", -1, 3),
        a("sum", O, ONE, BY_O_ID, BY_O, "groups", -1, 1, "current row"),
        a("count", V, BY_P, BY_O_ID, BY_O, "groups", None, 0, "group"),
        a("sum", V, ONE, BY_ID, BY_ID, "rows", 1, 4),
    ]
    return [[r[ID]] + [c[r[ID]] for c in cols] for r in rows]


DIST_SQL = ("SELECT id, COUNT({d}v) OVER (PARTITION BY p), SUM({d}v) OVER (PARTITION BY p ORDER "
            "BY o), AVG({d}v) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING), "
            "COUNT({d}s) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 PRECEDING AND 3 "
            "FOLLOWING), SUM({d}o) OVER (ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING "
            "EXCLUDE CURRENT ROW), COUNT({d}v) OVER (PARTITION BY p ORDER BY o GROUPS UNBOUNDED "
            "PRECEDING EXCLUDE GROUP), SUM({d}v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND "
            "4 FOLLOWING) FROM t")


# ---- the queries ---------------------------------------------------------------

def q(oracle, comment, sql, types, asked=None):
    return (oracle, comment, sql, asked or sql, types)


def queries():
    return [
        q("sqlite", "GROUPS frames: around, ahead, behind, to the ends (peers on o; NULL o is "
          "a group of its own)",
          "SELECT id, SUM(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 "
          "FOLLOWING), COUNT(*) OVER (ORDER BY o GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW), "
          "MIN(s) OVER (ORDER BY o NULLS FIRST GROUPS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), "
          "MAX(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING), "
          "COUNT(v) OVER (ORDER BY o DESC GROUPS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), "
          "SUM(o) OVER (ORDER BY o GROUPS 1 PRECEDING) FROM t", "IIITIII"),
        q("sqlite", "GROUPS frames with FIRST_VALUE, LAST_VALUE, NTH_VALUE and AVG (of the "
          "order key, equal among peers); GROUPS over a two-key and a total order",
          "SELECT id, FIRST_VALUE(o) OVER (ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 "
          "FOLLOWING), LAST_VALUE(o) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN CURRENT "
          "ROW AND 1 FOLLOWING), NTH_VALUE(o, 2) OVER (ORDER BY o GROUPS BETWEEN 3 PRECEDING "
          "AND 0 FOLLOWING), AVG(v) OVER (PARTITION BY p ORDER BY o, s GROUPS BETWEEN 1 "
          "PRECEDING AND 1 FOLLOWING), LAST_VALUE(id) OVER (ORDER BY o, id GROUPS BETWEEN 2 "
          "PRECEDING AND 1 PRECEDING) FROM t", "IIIIRI"),
        q("sqlite", "EXCLUDE CURRENT ROW, GROUP, TIES, NO OTHERS over ROWS, RANGE and GROUPS "
          "frames (aggregates)",
          "SELECT id, SUM(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 PRECEDING AND 1 "
          "FOLLOWING EXCLUDE CURRENT ROW), COUNT(*) OVER (ORDER BY o RANGE BETWEEN UNBOUNDED "
          "PRECEDING AND CURRENT ROW EXCLUDE GROUP), SUM(v) OVER (PARTITION BY p ORDER BY o "
          "RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES), MAX(v) OVER (ORDER BY o "
          "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP), MIN(v) OVER (PARTITION BY "
          "p ORDER BY o RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE TIES), COUNT(v) OVER "
          "(ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE NO "
          "OTHERS), AVG(o) OVER (PARTITION BY p ORDER BY o GROUPS CURRENT ROW EXCLUDE TIES), "
          "MAX(s) OVER (ORDER BY o GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING EXCLUDE TIES), "
          "SUM(v) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE TIES) "
          "FROM t", "IIIIIIIRTI"),
        q("sqlite", "EXCLUDE with FIRST_VALUE, LAST_VALUE, NTH_VALUE and FIRST_VALUE IGNORE "
          "NULLS (SQLite: the v of the MIN over the same frame of the ids of non-NULL v)",
          "SELECT id, FIRST_VALUE(id) OVER (ORDER BY o, id ROWS BETWEEN CURRENT ROW AND 2 "
          "FOLLOWING EXCLUDE CURRENT ROW), LAST_VALUE(o) OVER (PARTITION BY p ORDER BY o "
          "GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP), NTH_VALUE(o, 2) "
          "OVER (PARTITION BY p ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING "
          "EXCLUDE TIES), FIRST_VALUE(v) IGNORE NULLS OVER (ORDER BY id ROWS BETWEEN 1 "
          "PRECEDING AND 3 FOLLOWING EXCLUDE CURRENT ROW) FROM t", "IIIII",
          "SELECT id, a, b, c, (SELECT v FROM t x WHERE x.id = d) FROM (SELECT id, "
          "FIRST_VALUE(id) OVER (ORDER BY o, id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING "
          "EXCLUDE CURRENT ROW) AS a, LAST_VALUE(o) OVER (PARTITION BY p ORDER BY o GROUPS "
          "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP) AS b, NTH_VALUE(o, 2) "
          "OVER (PARTITION BY p ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING "
          "EXCLUDE TIES) AS c, MIN(CASE WHEN v IS NOT NULL THEN id END) OVER (ORDER BY id ROWS "
          "BETWEEN 1 PRECEDING AND 3 FOLLOWING EXCLUDE CURRENT ROW) AS d FROM t) AS y"),
        q("py", "IGNORE NULLS with NTH_VALUE, LAG and LEAD (offsets 0 to 3, defaults) "
          "(the Python reference; its RESPECT NULLS answers are SQLite's)",
          IGN_SQL.format(n="IGNORE NULLS"), "IITIITIIIT", py_ignore_nulls),
        q("py", "COUNT/SUM/AVG(DISTINCT x) OVER default, ROWS and GROUPS frames, with EXCLUDE "
          "(the Python reference; its answers without DISTINCT are SQLite's)",
          DIST_SQL.format(d="DISTINCT "), "IIIRIIII", py_distinct),
        q("pg", "RANGE offsets of months and years over a DATE key (month ends clamp, as in "
          "PostgreSQL)",
          "SELECT id, SUM(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND "
          "CURRENT ROW), COUNT(*) OVER (PARTITION BY g ORDER BY d RANGE BETWEEN CURRENT ROW AND "
          "INTERVAL '2' MONTH FOLLOWING), MIN(id) OVER (ORDER BY d DESC RANGE BETWEEN INTERVAL "
          "'1' YEAR PRECEDING AND INTERVAL '1-1' YEAR TO MONTH FOLLOWING), MAX(v) OVER (ORDER BY "
          "d RANGE BETWEEN INTERVAL '3' MONTH PRECEDING AND INTERVAL '1' MONTH PRECEDING) "
          "FROM e", "IIIII",
          "SELECT id, SUM(v) OVER (ORDER BY d NULLS FIRST RANGE BETWEEN INTERVAL '1' MONTH "
          "PRECEDING AND CURRENT ROW), COUNT(*) OVER (PARTITION BY g ORDER BY d NULLS FIRST "
          "RANGE BETWEEN CURRENT ROW AND INTERVAL '2' MONTH FOLLOWING), MIN(id) OVER (ORDER BY "
          "d DESC NULLS LAST RANGE BETWEEN INTERVAL '1' YEAR PRECEDING AND INTERVAL '1 year 1 "
          "month' FOLLOWING), MAX(v) OVER (ORDER BY d NULLS FIRST RANGE BETWEEN INTERVAL '3' "
          "MONTH PRECEDING AND INTERVAL '1' MONTH PRECEDING) FROM e"),
        q("pg", "RANGE offsets of months over a TIMESTAMP key (the time of day kept), with "
          "FIRST_VALUE/LAST_VALUE and EXCLUDE",
          "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '1' MONTH "
          "PRECEDING AND CURRENT ROW), FIRST_VALUE(id) OVER (ORDER BY ts RANGE BETWEEN "
          "INTERVAL '2' MONTH PRECEDING AND INTERVAL '1' MONTH FOLLOWING), LAST_VALUE(id) OVER "
          "(ORDER BY ts DESC RANGE BETWEEN CURRENT ROW AND INTERVAL '1' MONTH FOLLOWING), "
          "COUNT(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '12' MONTH PRECEDING AND CURRENT "
          "ROW EXCLUDE CURRENT ROW) FROM e", "IIIII",
          "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY ts NULLS FIRST RANGE BETWEEN "
          "INTERVAL '1' MONTH PRECEDING AND CURRENT ROW), FIRST_VALUE(id) OVER (ORDER BY ts "
          "NULLS FIRST RANGE BETWEEN INTERVAL '2' MONTH PRECEDING AND INTERVAL '1' MONTH "
          "FOLLOWING), LAST_VALUE(id) OVER (ORDER BY ts DESC NULLS LAST RANGE BETWEEN CURRENT "
          "ROW AND INTERVAL '1' MONTH FOLLOWING), COUNT(*) OVER (ORDER BY ts NULLS FIRST RANGE "
          "BETWEEN INTERVAL '12' MONTH PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM e"),
    ]


def pg_form(sql):
    """The PostgreSQL text of a SQLite query: every ORDER BY key of a window
    with SQLite's NULL order (first when ascending, last when descending)."""
    out, pos = [], 0
    for m in re.finditer(r"ORDER BY (.*?)(?= ROWS| RANGE| GROUPS|\))", sql):
        keys = []
        for k in m.group(1).split(", "):
            keys.append(k if "NULLS" in k else
                        k + (" NULLS LAST" if k.endswith(" DESC") else " NULLS FIRST"))
        out.append(sql[pos:m.start(1)] + ", ".join(keys))
        pos = m.end(1)
    return "".join(out) + sql[pos:]


def render(lite, pg):
    out = ["# GROUPS frames, frame EXCLUDE, DISTINCT in window aggregates, IGNORE NULLS with "
           "NTH_VALUE/LAG/LEAD, RANGE offsets of months and years.",
           "# Generated by tests/slt/gen_window_frames.py; expected results from SQLite %s "
           "(Python's sqlite3; PostgreSQL 15 agrees), PostgreSQL 15 (a throw-away server) for "
           "RANGE offsets of months, and, for IGNORE NULLS with NTH_VALUE/LAG/LEAD and "
           "DISTINCT window aggregates (in neither engine), the generator's Python reference "
           "(each record names its oracle)." % sqlite3.sqlite_version,
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]

    def fmt_rows(rows, types):
        return [[gen_dialect.fmt(v, types[i]) for i, v in enumerate(r)] for r in rows]

    def records(stage):
        for oracle, comment, sql, asked, types in queries():
            if oracle == "py":
                rows = lite.execute("SELECT id, p, o, v, s FROM t").fetchall()
                got = fmt_rows(asked(rows, True), types)
                # the same reference without IGNORE NULLS / DISTINCT is SQLite's answer
                plain = sql.replace("IGNORE NULLS", "RESPECT NULLS").replace("DISTINCT ", "")
                mine = sorted(fmt_rows(asked(rows, False), types))
                theirs = sorted(fmt_rows(lite.execute(plain.replace("RESPECT NULLS", ""))
                                         .fetchall(), types))
                assert mine == theirs, "reference differs from SQLite: %s\n%s\n%s" % (
                    plain, mine, theirs)
                who = "the Python reference"
            elif oracle == "sqlite":
                got = fmt_rows(lite.execute(asked).fetchall(), types)
                if "IGNORE NULLS" not in asked:
                    other = sorted(fmt_rows(pg.run(pg_form(asked)), types))
                    assert sorted(got) == other, "PostgreSQL differs: %s\n%s\n%s" % (
                        pg_form(asked), sorted(got), other)
                who = "SQLite"
            else:
                got = fmt_rows(pg.run(asked), types)
                who = "PostgreSQL"
            gen_dialect.query_record(out, "%s (%s; %s)" % (comment, stage, who), sql, types,
                                     "rowsort", got)
    for s in SETUP:
        lite.execute(s)
        pg.run(s)
        out.extend(["statement ok", s, ""])
    records("first rows")
    for s in DML:
        lite.execute(s)
        pg.run(s)
        out.extend(["statement ok", s, ""])
    records("after deletes, inserts and updates")
    return "\n".join(out)


def main():
    pg = gen_dialect.Engine("pg")
    try:
        text = render(sqlite3.connect(":memory:"), pg)
    finally:
        pg.close()
    sys.exit(0 if gen_dialect.write_or_check("window_frames.test", text,
                                             "SQLite, PostgreSQL and the reference") else 1)


if __name__ == "__main__":
    main()

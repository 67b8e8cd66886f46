#!/usr/bin/env python3
"""Writes tests/slt/window_more.test (run by tests/e2e/test_window_more.py in
one-shot mode and incrementally on 1-3 workers): FIRST_VALUE, LAST_VALUE,
NTH_VALUE over default, ROWS and RANGE frames; NTILE, PERCENT_RANK,
CUME_DIST; named windows (WINDOW w AS (...), OVER w, OVER (w ...)); QUALIFY
IGNORE NULLS; RANGE offsets over DATE and TIMESTAMP keys (INTERVAL) (issue
19; docs/sql.md, "Window functions"). Every expected result is
SQLite's answer (Python's sqlite3, which has all of these but QUALIFY; a
QUALIFY query is sent to SQLite as the equivalent filter over a subquery).

Every window ORDER BY that a position-dependent function reads is total
(it ends with the unique id), so each query has one right answer; RANGE
offsets need one ORDER BY key, so there the function reads that key.

    /usr/bin/python3 tests/slt/gen_window_more.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_window_more.py --check    # compares, writes nothing
"""
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, query_record)

gen_dialect.HASH_THRESHOLD = 120

SETUP = [
    "CREATE TABLE t(id INTEGER, p INTEGER, o INTEGER, v INTEGER, s VARCHAR, f DOUBLE)",
    "INSERT INTO t VALUES(1,1,1,10,'a',1.5),(2,1,2,NULL,'b',2.5),(3,1,2,30,NULL,-1.0),"
    "(4,1,4,40,'d',0.25),(5,2,1,5,'e',NULL),(6,2,3,NULL,'f',3.0),(7,2,5,7,'g',7.5),"
    "(8,1,6,60,'h',6.0),(9,NULL,3,9,'i',9.0),(10,2,NULL,11,'j',1.0),(11,1,NULL,NULL,'k',2.0),"
    "(12,3,7,70,'l',7.0)",
    "CREATE TABLE e(id INTEGER, g INTEGER, ts TIMESTAMP, d DATE, v INTEGER)",
    "INSERT INTO e VALUES(1,1,'2024-01-01 10:00:00','2024-01-01',1),"
    "(2,1,'2024-01-01 10:30:00','2024-01-02',2),(3,1,'2024-01-01 11:00:00','2024-01-02',4),"
    "(4,1,'2024-01-01 12:15:00','2024-01-05',8),(5,2,'2024-01-01 10:00:00','2024-01-03',16),"
    "(6,2,'2024-01-02 09:59:59',NULL,32),(7,2,NULL,'2024-01-04',64),"
    "(8,1,'2023-12-31 23:30:00','2023-12-30',128),(9,2,'2024-01-02 10:00:00','2024-01-06',256)",
]

DML = [
    "DELETE FROM t WHERE id IN (3, 6)",
    "INSERT INTO t VALUES(13,1,3,33,'m',3.5),(14,2,2,NULL,'n',NULL),(15,3,7,71,'o',7.25),"
    "(16,1,2,22,'p',2.25)",
    "UPDATE t SET o = 5, v = v + 1 WHERE id IN (1, 12)",
    "UPDATE t SET p = 2 WHERE id = 4",
    "DELETE FROM e WHERE id = 3",
    "INSERT INTO e VALUES(10,1,'2024-01-01 11:10:00','2024-01-03',512),"
    "(11,2,'2024-01-02 09:00:00','2024-01-04',1024)",
    "UPDATE e SET ts = '2024-01-01 09:45:00', d = '2024-01-07' WHERE id = 4",
]


def q(comment, sql, types, oracle=None, sort="rowsort"):
    return (comment, sql, oracle or sql, types, sort)


def queries():
    return [
        q("FIRST_VALUE, LAST_VALUE, NTH_VALUE over the default frame (RANGE UNBOUNDED "
          "PRECEDING .. CURRENT ROW with ORDER BY: LAST_VALUE is the last peer)",
          "SELECT id, FIRST_VALUE(v) OVER (PARTITION BY p ORDER BY o, id), "
          "LAST_VALUE(v) OVER (PARTITION BY p ORDER BY o, id), "
          "NTH_VALUE(s, 2) OVER (PARTITION BY p ORDER BY o, id), "
          "LAST_VALUE(o) OVER (PARTITION BY p ORDER BY o), "
          "NTH_VALUE(o, 3) OVER (PARTITION BY p ORDER BY o DESC) FROM t", "IIITII"),
        q("without ORDER BY the frame is the whole partition (in no particular order: "
          "the functions read values equal across it)",
          "SELECT id, LAST_VALUE(p) OVER (PARTITION BY p), NTH_VALUE(p, 3) OVER (PARTITION BY "
          "p), FIRST_VALUE(o % 2) OVER (PARTITION BY o % 2) FROM t", "IIII"),
        q("ROWS frames: sliding, ahead, behind, to the end",
          "SELECT id, FIRST_VALUE(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 "
          "PRECEDING AND 1 FOLLOWING), LAST_VALUE(s) OVER (PARTITION BY p ORDER BY o, id ROWS "
          "BETWEEN 1 PRECEDING AND 2 FOLLOWING), NTH_VALUE(f, 2) OVER (ORDER BY id ROWS "
          "BETWEEN 2 PRECEDING AND CURRENT ROW), FIRST_VALUE(id) OVER (ORDER BY f DESC, id "
          "ROWS BETWEEN 2 FOLLOWING AND 3 FOLLOWING), LAST_VALUE(v) OVER (PARTITION BY p "
          "ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), NTH_VALUE(v, 2) "
          "OVER (PARTITION BY p ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
          "FROM t", "IITRIII"),
        q("RANGE frames with offsets (NULL keys: their NULL peers)",
          "SELECT id, FIRST_VALUE(o) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1 "
          "PRECEDING AND 1 FOLLOWING), LAST_VALUE(o) OVER (ORDER BY o RANGE BETWEEN CURRENT "
          "ROW AND 2 FOLLOWING), NTH_VALUE(o, 2) OVER (ORDER BY o DESC RANGE BETWEEN 2 "
          "PRECEDING AND CURRENT ROW), LAST_VALUE(f) OVER (ORDER BY f RANGE BETWEEN 2.5 "
          "PRECEDING AND 0.5 PRECEDING) FROM t", "IIIIR"),
        q("NTILE, PERCENT_RANK, CUME_DIST (peers share PERCENT_RANK and CUME_DIST)",
          "SELECT id, NTILE(3) OVER (PARTITION BY p ORDER BY o, id), NTILE(5) OVER (ORDER BY "
          "id), NTILE(20) OVER (PARTITION BY p ORDER BY id DESC), PERCENT_RANK() OVER "
          "(PARTITION BY p ORDER BY o), CUME_DIST() OVER (PARTITION BY p ORDER BY o), "
          "PERCENT_RANK() OVER (ORDER BY v DESC), CUME_DIST() OVER (ORDER BY s) FROM t",
          "IIIIRRRR"),
        q("without ORDER BY every row is a peer: PERCENT_RANK 0, CUME_DIST 1",
          "SELECT id, PERCENT_RANK() OVER (PARTITION BY p), CUME_DIST() OVER (), "
          "NTILE(4) OVER (PARTITION BY p ORDER BY id) FROM t", "IRRI"),
        q("named windows: OVER w, OVER (w ORDER BY ...), OVER (w frame), a window built "
          "on another",
          "SELECT id, SUM(v) OVER w, ROW_NUMBER() OVER (w ORDER BY o, id), "
          "FIRST_VALUE(v) OVER (wo ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
          "RANK() OVER wo, COUNT(*) OVER wf FROM t WINDOW w AS (PARTITION BY p), "
          "wo AS (w ORDER BY o, id), wf AS (ORDER BY id ROWS 2 PRECEDING)", "IIIIII"),
        q("QUALIFY: top 2 per partition, by a window of the select list and by its alias",
          "SELECT id, p, v, RANK() OVER (PARTITION BY p ORDER BY v DESC) AS r FROM t "
          "QUALIFY r <= 2 AND ROW_NUMBER() OVER (PARTITION BY p ORDER BY v DESC, id) <= 2",
          "IIII",
          "SELECT id, p, v, r FROM (SELECT id, p, v, RANK() OVER (PARTITION BY p ORDER BY v "
          "DESC) AS r, ROW_NUMBER() OVER (PARTITION BY p ORDER BY v DESC, id) AS rn FROM t) "
          "WHERE r <= 2 AND rn <= 2"),
        q("QUALIFY over a window of an aggregate, with WHERE and GROUP BY",
          "SELECT p, COUNT(*) AS n, SUM(v) AS sv FROM t WHERE id > 1 GROUP BY p QUALIFY "
          "CUME_DIST() OVER (ORDER BY COUNT(*), p) > 0.4", "III",
          "SELECT p, n, sv FROM (SELECT p, COUNT(*) AS n, SUM(v) AS sv, CUME_DIST() OVER "
          "(ORDER BY COUNT(*), p) AS c FROM t WHERE id > 1 GROUP BY p) WHERE c > 0.4"),
        q("QUALIFY with a named window and a window function only it reads",
          "SELECT id, s FROM t WINDOW w AS (PARTITION BY p ORDER BY o, id) QUALIFY "
          "LAST_VALUE(v) OVER (w ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) IS NULL "
          "OR NTILE(2) OVER w = 1", "IT",
          "SELECT id, s FROM (SELECT id, s, LAST_VALUE(v) OVER (w ROWS BETWEEN CURRENT ROW "
          "AND 1 FOLLOWING) AS a, NTILE(2) OVER w AS b FROM t WINDOW w AS (PARTITION BY p "
          "ORDER BY o, id)) WHERE a IS NULL OR b = 1"),
        q("FIRST_VALUE/LAST_VALUE IGNORE NULLS (SQLite: the v of the row whose id is the "
          "MIN/MAX over the frame of the ids of non-NULL v)",
          "SELECT id, FIRST_VALUE(v) IGNORE NULLS OVER (PARTITION BY p ORDER BY id ROWS BETWEEN "
          "1 PRECEDING AND 2 FOLLOWING), LAST_VALUE(v IGNORE NULLS) OVER (ORDER BY id), "
          "LAST_VALUE(s) IGNORE NULLS OVER (ORDER BY id DESC ROWS BETWEEN CURRENT ROW AND 2 "
          "FOLLOWING), FIRST_VALUE(v) RESPECT NULLS OVER (ORDER BY id) FROM t", "IIITI",
          "SELECT id, (SELECT v FROM t x WHERE x.id = a), (SELECT v FROM t x WHERE x.id = b), "
          "(SELECT s FROM t x WHERE x.id = c), d FROM (SELECT id, MIN(CASE WHEN v IS NOT NULL "
          "THEN id END) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 1 PRECEDING AND 2 "
          "FOLLOWING) AS a, MAX(CASE WHEN v IS NOT NULL THEN id END) OVER (ORDER BY id) AS b, "
          "MIN(CASE WHEN s IS NOT NULL THEN id END) OVER (ORDER BY id DESC ROWS BETWEEN "
          "CURRENT ROW AND 2 FOLLOWING) AS c, FIRST_VALUE(v) OVER (ORDER BY id) AS d FROM t)"),
        q("RANGE offsets over a TIMESTAMP key: INTERVALs in hours, minutes, seconds and days "
          "(SQLite: the same frames over unixepoch(ts))",
          "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR "
          "PRECEDING AND CURRENT ROW), COUNT(*) OVER (ORDER BY ts DESC RANGE BETWEEN INTERVAL "
          "'30' MINUTE PRECEDING AND INTERVAL '2:00' HOUR TO MINUTE FOLLOWING), "
          "FIRST_VALUE(ts) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1 12' DAY TO HOUR "
          "PRECEDING AND INTERVAL '1' SECOND PRECEDING) FROM e", "IIIT",
          "SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY unixepoch(ts) RANGE BETWEEN 3600 "
          "PRECEDING AND CURRENT ROW), COUNT(*) OVER (ORDER BY unixepoch(ts) DESC RANGE "
          "BETWEEN 1800 PRECEDING AND 7200 FOLLOWING), FIRST_VALUE(ts) OVER (ORDER BY "
          "unixepoch(ts) RANGE BETWEEN 129600 PRECEDING AND 1 PRECEDING) FROM e"),
        q("RANGE offsets over a DATE key, in days (SQLite: over julianday(d))",
          "SELECT id, MAX(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL '2' DAY PRECEDING AND "
          "INTERVAL '1' DAY FOLLOWING), LAST_VALUE(d) OVER (PARTITION BY g ORDER BY d DESC "
          "RANGE BETWEEN CURRENT ROW AND INTERVAL '3' DAY FOLLOWING), COUNT(*) OVER (ORDER BY "
          "d RANGE INTERVAL '1' DAY PRECEDING) FROM e", "IITI",
          "SELECT id, MAX(v) OVER (ORDER BY julianday(d) RANGE BETWEEN 2 PRECEDING AND 1 "
          "FOLLOWING), LAST_VALUE(d) OVER (PARTITION BY g ORDER BY julianday(d) DESC RANGE "
          "BETWEEN CURRENT ROW AND 3 FOLLOWING), COUNT(*) OVER (ORDER BY julianday(d) RANGE "
          "1 PRECEDING) FROM e"),
    ]


def render(db):
    out = ["# FIRST_VALUE/LAST_VALUE/NTH_VALUE, NTILE/PERCENT_RANK/CUME_DIST, named windows, "
           "QUALIFY.",
           "# Generated by tests/slt/gen_window_more.py; expected results from SQLite %s "
           "(Python's sqlite3; QUALIFY as a filter over a subquery)." % sqlite3.sqlite_version,
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]

    def records(stage):
        for comment, sql, oracle, types, sort in queries():
            rows = [[gen_dialect.fmt(v, types[i]) for i, v in enumerate(r)]
                    for r in db.execute(oracle).fetchall()]
            gen_dialect.query_record(out, "%s (%s)" % (comment, stage), sql, types, sort, rows)
    for s in SETUP:
        db.execute(s)
        out.extend(["statement ok", s, ""])
    records("first rows")
    for s in DML:
        db.execute(s)
        out.extend(["statement ok", s, ""])
    records("after deletes, inserts and updates")
    return "\n".join(out)


def main():
    text = render(sqlite3.connect(":memory:"))
    sys.exit(0 if gen_dialect.write_or_check("window_more.test", text, "SQLite") else 1)


if __name__ == "__main__":
    main()

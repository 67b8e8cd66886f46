#!/usr/bin/env python3
"""Writes tests/slt/unnest.test (run by tests/e2e/test_unnest.py in one-shot
mode and incrementally on 1-3 workers): UNNEST anywhere in a FROM list and
inside joins (CROSS JOIN, [INNER] JOIN ... ON, [, | JOIN] LATERAL UNNEST,
LEFT JOIN [LATERAL] UNNEST ... ON TRUE), UNNEST of several arrays (zipped, the shorter padded with NULL), WITH
ORDINALITY, and array slices a[lo:hi] (issue 19; docs/sql.md, "Arrays").
Every expected result is PostgreSQL 15's answer (a throw-away server
started through tests/e2e/pgserver.py) to the same query.

    /usr/bin/python3 tests/slt/gen_unnest.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_unnest.py --check    # compares, writes nothing
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 400

SETUP = [  # (Sluice, PostgreSQL)
    ("CREATE TABLE a(id INTEGER, xs INTEGER ARRAY, ss VARCHAR ARRAY)",
     "CREATE TABLE a(id INTEGER, xs INTEGER[], ss VARCHAR[])"),
    ("CREATE TABLE b(id INTEGER, name VARCHAR)", "CREATE TABLE b(id INTEGER, name VARCHAR)"),
    ("INSERT INTO a VALUES(1, ARRAY[10,20,30,40], ARRAY['p']),(2, ARRAY[5], ARRAY['q','r','s']),"
     "(3, NULL, ARRAY['t']),(4, NULL, NULL),(5, ARRAY[7,NULL,9], ARRAY[]),(1, ARRAY[10], NULL)",
     "INSERT INTO a VALUES(1, ARRAY[10,20,30,40], ARRAY['p']),(2, ARRAY[5], ARRAY['q','r','s']),"
     "(3, NULL, ARRAY['t']),(4, NULL, NULL),(5, ARRAY[7,NULL,9], ARRAY[]::VARCHAR[]),"
     "(1, ARRAY[10], NULL)"),
    ("INSERT INTO b VALUES(1,'one'),(2,'two'),(3,'three'),(5,'five'),(7,'seven')",
     "INSERT INTO b VALUES(1,'one'),(2,'two'),(3,'three'),(5,'five'),(7,'seven')"),
]


def arr(v):
    if v is None:
        return "NULL"
    return "{%s}" % ",".join("NULL" if x is None else str(x) for x in v)


QUERIES = [  # (comment, Sluice query, PostgreSQL query or None: the same, types)
    ("UNNEST between two items, joined with the later one by WHERE",
     "SELECT a.id, u.x, b.name FROM a, UNNEST(a.xs) AS u(x), b WHERE b.id = a.id", None, "IIT"),
    ("UNNEST first (a constant array), then a table",
     "SELECT u.x, b.name FROM UNNEST(ARRAY[1,2,7]) AS u(x), b WHERE b.id = u.x", None, "IT"),
    ("UNNEST between two items, with ORDINALITY, SELECT *",
     "SELECT * FROM b, UNNEST(ARRAY[b.id, b.id * 10]) WITH ORDINALITY AS u(v, n), a "
     "WHERE a.id = b.id AND n = 2", "SELECT b.id, b.name, u.v, u.n, a.id, a.xs, a.ss FROM b, "
     "UNNEST(ARRAY[b.id, b.id * 10]) WITH ORDINALITY AS u(v, n), a WHERE a.id = b.id AND n = 2",
     "ITIIITT"),
    ("two UNNESTs in a row (a cross product per row)",
     "SELECT a.id, u.x, w.s FROM a, UNNEST(a.xs) AS u(x), UNNEST(a.ss) AS w(s) WHERE a.id < 3",
     None, "IIT"),
    ("UNNEST of two arrays: zipped, the shorter padded with NULL",
     "SELECT a.id, u.x, u.s FROM a, UNNEST(a.xs, a.ss) AS u(x, s)", None, "IIT"),
    ("UNNEST of two arrays WITH ORDINALITY",
     "SELECT a.id, u.x, u.s, u.n FROM a, UNNEST(a.xs, a.ss) WITH ORDINALITY AS u(x, s, n)",
     None, "IITI"),
    ("UNNEST of three arrays, one constant, in the middle of the FROM list",
     "SELECT b.id, u.x, u.y, u.z FROM b, UNNEST(ARRAY[b.id], ARRAY['k','l'], ARRAY[1,2,3]) "
     "AS u(x, y, z), a WHERE a.id = b.id AND a.id = 2", None, "IITI"),
    ("aggregate over a zipped UNNEST", "SELECT a.id, COUNT(*), COUNT(u.x), COUNT(u.s) FROM a, "
     "UNNEST(a.xs, a.ss) AS u(x, s) GROUP BY a.id", None, "IIII"),
    ("array slices: 1-based, clamped, bounds omitted, empty and NULL",
     "SELECT id, xs[2:3], xs[:2], xs[3:], xs[0:9], xs[3:2], xs[-5:1], xs[id:id + 1] FROM a",
     None, "ITTTTTTT"),
    ("a slice unnested and subscripted",
     "SELECT a.id, u.x, a.xs[2:][1] FROM a, UNNEST(a.xs[2:3]) AS u(x)",
     "SELECT a.id, u.x, (a.xs[2:])[1] FROM a, UNNEST(a.xs[2:3]) AS u(x)", "III"),
    # WHERE pushed to the items before the UNNEST: join keys and filters there
    # (docs/sql.md, "Arrays"; the plans: tests/e2e/test_unnest.py)
    ("WHERE pushed: two tables before the UNNEST joined by a key",
     "SELECT a.id, b.name, u.x FROM a, b, UNNEST(a.xs) AS u(x) WHERE a.id = b.id", None, "ITI"),
    ("WHERE pushed: three tables before the UNNEST, keys, filters and one on the element",
     "SELECT a.id, b.name, c.name, u.x FROM a, b, b AS c, UNNEST(a.xs) AS u(x) "
     "WHERE b.id = a.id AND c.id = b.id + 2 AND b.name <> 'two' AND u.x > 5", None, "ITTI"),
    ("WHERE pushed: tables before and after the UNNEST",
     "SELECT a.id, u.x, c.name FROM b, a, UNNEST(a.xs) AS u(x), b AS c "
     "WHERE a.id = b.id AND c.id = u.x - 8 AND b.id < 5", None, "IIT"),
    ("WHERE pushed: an OR and a condition on the element and a table stay after",
     "SELECT a.id, b.name, u.x FROM a, b, UNNEST(a.xs) WITH ORDINALITY AS u(x, n) "
     "WHERE a.id = b.id AND (b.name = 'one' OR u.x = 5) AND u.x > a.id * u.n", None, "ITI"),
    ("WHERE pushed: an outer query's column shadowed by the UNNEST's is not pushed",
     "SELECT b.id, b.name FROM b WHERE EXISTS (SELECT 1 FROM a, UNNEST(a.ss) AS u(name) "
     "WHERE a.id = b.id AND name IN ('q', 't'))", None, "IT"),
    # UNNEST inside explicit joins (a function in FROM is lateral)
    ("join: CROSS JOIN UNNEST",
     "SELECT a.id, u.x FROM a CROSS JOIN UNNEST(a.xs) AS u(x)", None, "II"),
    ("join: JOIN LATERAL UNNEST ... ON a condition over both sides, then a table",
     "SELECT a.id, u.x, b.name FROM a JOIN LATERAL UNNEST(a.xs) AS u(x) ON u.x > a.id * 4 "
     "JOIN b ON b.id = a.id", None, "IIT"),
    ("join: INNER JOIN UNNEST WITH ORDINALITY ON a join key to the table before",
     "SELECT b.name, u.x, u.n FROM b INNER JOIN UNNEST(ARRAY[1,2,2,9]) WITH ORDINALITY "
     "AS u(x, n) ON u.x = b.id", None, "TII"),
    ("join: comma LATERAL UNNEST",
     "SELECT a.id, u.s FROM a, LATERAL UNNEST(a.ss) AS u(s) WHERE a.id <> 2", None, "IT"),
    ("join: LEFT JOIN UNNEST ON TRUE keeps NULL and empty arrays (outer)",
     "SELECT a.id, u.x, u.n FROM a LEFT JOIN UNNEST(a.xs) WITH ORDINALITY AS u(x, n) ON TRUE",
     None, "III"),
    ("join: LEFT JOIN LATERAL UNNEST of two arrays ON TRUE (outer)",
     "SELECT a.id, u.x, u.s FROM a LEFT JOIN LATERAL UNNEST(a.xs, a.ss) AS u(x, s) ON TRUE",
     None, "IIT"),
    ("join: LEFT JOIN UNNEST (outer) counted per row, then joined to a table",
     "SELECT a.id, b.name, COUNT(*), COUNT(u.x) FROM a LEFT JOIN UNNEST(a.xs) AS u(x) ON TRUE "
     "JOIN b ON b.id = a.id GROUP BY a.id, b.name", None, "ITII"),
    ("join: WHERE on the element after LEFT JOIN UNNEST (outer) drops the NULL rows",
     "SELECT a.id, u.x FROM a LEFT JOIN UNNEST(a.xs) AS u(x) ON TRUE "
     "WHERE u.x IS NULL OR u.x > 9", None, "II"),
    ("join: LEFT JOIN UNNEST ON a condition: the matching elements, else one row of NULLs "
     "(no match, NULL or empty array, a NULL condition)",
     "SELECT a.id, u.x, u.n FROM a LEFT JOIN UNNEST(a.xs) WITH ORDINALITY AS u(x, n) "
     "ON u.x > 15 - a.id * 2", None, "III"),
    ("join: LEFT JOIN UNNEST of two arrays ON a condition over both elements and the row",
     "SELECT a.id, u.x, u.s FROM a LEFT JOIN LATERAL UNNEST(a.xs, a.ss) AS u(x, s) "
     "ON u.s IS NOT NULL AND (u.x IS NULL OR u.x < 20)", None, "IIT"),
    ("join: LEFT JOIN UNNEST ON a condition after a join, counted per row, then WHERE",
     "SELECT a.id, b.name, COUNT(*), COUNT(u.x) FROM a JOIN b ON b.id = a.id "
     "LEFT JOIN UNNEST(a.xs) AS u(x) ON u.x = 10 OR u.x = 9 WHERE a.id < 6 "
     "GROUP BY a.id, b.name", None, "ITII"),
    ("join: UNNEST on the left of a LEFT JOIN",
     "SELECT u.x, b.name FROM UNNEST(ARRAY[1,2,4,NULL]) AS u(x) LEFT JOIN b ON b.id = u.x",
     None, "IT"),
    ("join: LEFT JOIN UNNEST (outer) inside an outer join",
     "SELECT b.id, a.id, u.x FROM b LEFT JOIN (a LEFT JOIN UNNEST(a.xs) AS u(x) ON TRUE) "
     "ON a.id = b.id", None, "III"),
]

DML = [
    "DELETE FROM a WHERE id = 2",
    "INSERT INTO a VALUES(6, ARRAY[1,2], ARRAY['x','y','z'])",
    "UPDATE a SET xs = ARRAY[3] WHERE id = 5",
]


def render(eng):
    out = ["# UNNEST anywhere in FROM and in joins, of several arrays, WITH ORDINALITY; array slices "
           "(docs/sql.md, Arrays).",
           "# Generated by tests/slt/gen_unnest.py; expected results from PostgreSQL 15 "
           "(a throw-away server, tests/e2e/pgserver.py).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    eng.run("DROP TABLE IF EXISTS a")
    eng.run("DROP TABLE IF EXISTS b")

    def queries(qs):
        for comment, sql, pg_sql, types in qs:
            rows = [[arr(v) if isinstance(v, list) else gen_dialect.fmt(v, types[i])
                     for i, v in enumerate(r)] for r in eng.run(pg_sql or sql)]
            gen_dialect.query_record(out, comment, sql, types, "rowsort", rows)
    for s, pg in SETUP:
        eng.run(pg)
        out.extend(["statement ok", s, ""])
    queries(QUERIES)
    for s in DML:
        eng.run(s)
        out.extend(["statement ok", s, ""])
    queries([q for q in QUERIES if "zipped" in q[0] or "slices" in q[0] or "between" in q[0]
                      or "pushed" in q[0] or "join:" in q[0]])
    return "\n".join(out)


def main():
    gen_dialect.run_pg("unnest.test", render)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the dialect files of tests/slt/ (dialect_*.test, run by
tests/e2e/test_dialect.py in one-shot and incremental mode): PostgreSQL-
family spellings and constructs of issue 19. Every expected result is the
answer of an independent engine, never Sluice's: SQLite (Python's sqlite3)
where it has the construct, otherwise PostgreSQL 15 (a throw-away server
started here through tests/e2e/pgserver.py and removed at the end). Each
file's header says which engine answered.

    /usr/bin/python3 tests/slt/gen_dialect.py            # rewrites the files
    /usr/bin/python3 tests/slt/gen_dialect.py --check    # compares, writes nothing

Values are printed as the SLT harness prints them (I: integer, truncated;
R: three decimals; T: text, booleans 1/0, empty string "(empty)").
"""
import datetime
import decimal
import hashlib
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

HASH_THRESHOLD = 40

DDL = [
    "CREATE TABLE t1(a INTEGER, b INTEGER, c INTEGER)",
    "INSERT INTO t1 VALUES(1,10,100),(2,20,200),(3,30,300),(4,40,NULL),(5,NULL,500),"
    "(6,60,600),(NULL,70,700),(2,25,NULL)",
    "CREATE TABLE t2(k INTEGER, s VARCHAR, f DOUBLE PRECISION, ok BOOLEAN)",
    "INSERT INTO t2 VALUES(1,'apple',1.5,TRUE),(1,'pear',2.25,FALSE),(2,'fig',NULL,TRUE),"
    "(2,NULL,4.0,TRUE),(3,'kiwi',-1.0,NULL),(3,'lime',0.5,FALSE),(4,NULL,NULL,NULL),"
    "(NULL,'plum',7.5,TRUE)",
]

# Each file: (name, engine, title, [(comment, sql, types, sort)]).
FILES = [
    ("dialect_types.test", "pg",
     "Type aliases, :: casts and typed literals (docs/sql.md, Dialect)", [
         ("type aliases in CAST: INT2, INT4, INT8, FLOAT4, FLOAT8, FLOAT(p)",
          "SELECT CAST(a AS INT2), CAST(b AS INT4), CAST(c AS INT8), CAST(a AS FLOAT4) / 4, "
          "CAST(b AS FLOAT8) / 3, CAST(a AS FLOAT(10)) / 8, CAST(a AS FLOAT(40)) / 3 FROM t1",
          "IIIRRRR", "rowsort"),
         (":: casts, chained and inside expressions",
          "SELECT a::FLOAT8 / 4, (a + b)::TEXT, b::INT8 * 1000000000, '42'::INT4 + a, "
          "a::TEXT::INT2 FROM t1 WHERE a IS NOT NULL",
          "RTIII", "rowsort"),
         (":: binds tighter than unary minus and arithmetic",
          "SELECT -a::INT8, 2 * b::FLOAT8 / 8, '7'::INT + 1 FROM t1",
          "IRI", "rowsort"),
         ("typed literals of the numeric and text types",
          "SELECT INT '1' + a, BIGINT '5000000000' + a, FLOAT8 '2.5' * a, "
          "DOUBLE PRECISION '0.25' + a, INT2 '3', REAL '1.5', TEXT 'x' || a FROM t1 "
          "WHERE a < 3",
          "IIRRIRT", "rowsort"),
         ("typed literals of the date types and :: to them",
          "SELECT DATE '2024-02-28', '2024-03-01'::DATE, "
          "TIMESTAMP '2024-01-01 10:00:00' + INTERVAL '90' MINUTE, "
          "'2024-01-01 10:00:00'::TIMESTAMP",
          "TTTT", "nosort"),
         ("booleans from text",
          "SELECT k, BOOLEAN 'true', 'false'::BOOL, ok::TEXT::BOOLEAN FROM t2 WHERE k = 1",
          "IIII", "rowsort"),
         ("aliases in CREATE TABLE",
          "SELECT x + y, z / 2 FROM t3",
          "IR", "rowsort"),
     ]),
]

FILES.append(
    ("dialect_aggs.test", "pg",
     "BOOL_AND, BOOL_OR, EVERY and aggregate FILTER (WHERE ...) (docs/sql.md, Dialect)", [
         ("grouped",
          "SELECT k, BOOL_AND(ok), BOOL_OR(ok), EVERY(ok) FROM t2 GROUP BY k",
          "IIII", "rowsort"),
         ("global, over expressions, with NULL-only input",
          "SELECT BOOL_AND(f > 0), BOOL_OR(f > 5), EVERY(s IS NOT NULL), BOOL_AND(k > 10), "
          "BOOL_OR(NULL) FROM t2",
          "IIIII", "nosort"),
         ("over no rows: NULL",
          "SELECT BOOL_AND(ok), BOOL_OR(ok), COUNT(*) FROM t2 WHERE k > 100",
          "III", "nosort"),
         ("in HAVING and in expressions",
          "SELECT k, CASE WHEN BOOL_OR(ok) THEN 'some' ELSE 'none' END FROM t2 GROUP BY k "
          "HAVING BOOL_AND(f IS NOT NULL) OR BOOL_OR(ok IS NULL)",
          "IT", "rowsort"),
         ("FILTER (WHERE ...) on every aggregate",
          "SELECT k, COUNT(*) FILTER (WHERE ok), SUM(f) FILTER (WHERE s LIKE '%i%'), "
          "MIN(s) FILTER (WHERE f > 1), BOOL_AND(ok) FILTER (WHERE f IS NOT NULL), "
          "BOOL_OR(ok) FILTER (WHERE s IS NULL), EVERY(f > 0) FILTER (WHERE ok) "
          "FROM t2 GROUP BY k",
          "IIRTIII", "rowsort"),
         ("FILTER with DISTINCT and over a join",
          "SELECT t1.a, COUNT(DISTINCT t2.k) FILTER (WHERE t2.ok), "
          "AVG(t1.b) FILTER (WHERE t2.f > 0) FROM t1 JOIN t2 ON t1.a = t2.k GROUP BY t1.a",
          "IIR", "rowsort"),
         ("as window functions",
          "SELECT k, s, BOOL_AND(ok) OVER (PARTITION BY k), "
          "BOOL_OR(ok) OVER (ORDER BY s ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t2 "
          "WHERE s IS NOT NULL",
          "ITII", "rowsort"),
     ]))

# LISTAGG and GROUP_CONCAT: PostgreSQL has neither spelling, so the
# expected rows are PostgreSQL's answer to the STRING_AGG form each maps to
# (the fifth element: the query asked of the engine instead).
FILES.append(
    ("dialect_listagg.test", "pg",
     "LISTAGG and GROUP_CONCAT as STRING_AGG (docs/sql.md, Dialect); expected rows are "
     "PostgreSQL's answers to the STRING_AGG queries gen_dialect.py pairs them with", [
         ("LISTAGG with a separator, ordered WITHIN GROUP",
          "SELECT k, LISTAGG(s, ', ') WITHIN GROUP (ORDER BY s) FROM t2 GROUP BY k",
          "IT", "rowsort",
          "SELECT k, string_agg(s, ', ' ORDER BY s) FROM t2 GROUP BY k"),
         ("LISTAGG of integers: cast to text, no separator by default, DESC order",
          "SELECT LISTAGG(a) WITHIN GROUP (ORDER BY a DESC, b) FROM t1",
          "T", "nosort",
          "SELECT string_agg(CAST(a AS TEXT), '' ORDER BY a DESC, b) FROM t1"),
         ("GROUP_CONCAT: ',' by default, ORDER BY in the call",
          "SELECT k, GROUP_CONCAT(s ORDER BY s DESC) FROM t2 GROUP BY k",
          "IT", "rowsort",
          "SELECT k, string_agg(s, ',' ORDER BY s DESC) FROM t2 GROUP BY k"),
         ("GROUP_CONCAT with MySQL's SEPARATOR and DISTINCT",
          "SELECT c / 300, GROUP_CONCAT(DISTINCT b ORDER BY b SEPARATOR '-') FROM t1 "
          "GROUP BY c / 300",
          "IT", "rowsort",
          "SELECT c / 300, string_agg(DISTINCT CAST(b AS TEXT), '-' ORDER BY CAST(b AS TEXT)) "
          "FROM t1 GROUP BY c / 300"),
         ("GROUP_CONCAT with SQLite's separator argument, over a join",
          "SELECT t1.a, GROUP_CONCAT(t2.s, ' | ' ORDER BY t2.s) FROM t1 JOIN t2 ON t1.a = t2.k "
          "GROUP BY t1.a",
          "IT", "rowsort",
          "SELECT t1.a, string_agg(t2.s, ' | ' ORDER BY t2.s) FROM t1 JOIN t2 ON t1.a = t2.k "
          "GROUP BY t1.a"),
         ("NULL when every value is NULL; with FILTER-like CASE",
          "SELECT k, LISTAGG(CASE WHEN ok THEN s END, '/') WITHIN GROUP (ORDER BY s), "
          "GROUP_CONCAT(f ORDER BY f) FROM t2 GROUP BY k",
          "ITT", "rowsort",
          "SELECT k, string_agg(CASE WHEN ok THEN s END, '/' ORDER BY s), "
          "string_agg(CAST(f AS TEXT), ',' ORDER BY f) FROM t2 GROUP BY k"),
     ]))

FILES.append(
    ("dialect_window_stats.test", "pg",
     "STDDEV, VARIANCE, COVAR and CORR as window functions (OVER)", [
         ("one argument, whole partitions and no partition",
          "SELECT a, b, STDDEV(b) OVER (PARTITION BY a % 2), VAR_POP(c) OVER (PARTITION BY a % 2), "
          "STDDEV_POP(c) OVER (), VARIANCE(b) OVER (), VAR_SAMP(a) OVER (PARTITION BY b > 30), "
          "STDDEV_SAMP(c) OVER (PARTITION BY a % 2) FROM t1",
          "IIRRRRRR", "rowsort"),
         ("ROWS frames and the default RANGE frame of an ORDER BY",
          "SELECT a, b, VARIANCE(b) OVER (ORDER BY a NULLS FIRST, b ROWS BETWEEN 2 PRECEDING AND "
          "CURRENT ROW), STDDEV_POP(c) OVER (ORDER BY a NULLS FIRST, b ROWS BETWEEN 1 PRECEDING "
          "AND 1 FOLLOWING), VAR_POP(b) OVER (PARTITION BY a % 2 ORDER BY b NULLS FIRST) FROM t1",
          "IIRRR", "rowsort"),
         ("two arguments: rows where both are not NULL",
          "SELECT a, COVAR_POP(b, c) OVER (PARTITION BY a % 2), COVAR_SAMP(c, b) OVER (), "
          "CORR(b, c) OVER (), CORR(c, a) OVER (PARTITION BY b > 25), "
          "COVAR_SAMP(b, a) OVER (ORDER BY a NULLS FIRST, b ROWS BETWEEN 2 PRECEDING AND "
          "CURRENT ROW) FROM t1",
          "IRRRRR", "rowsort"),
         ("DOUBLE values, partitions of one row, NULL-only partitions",
          "SELECT k, s, STDDEV(f) OVER (PARTITION BY k), STDDEV_POP(f) OVER (PARTITION BY k), "
          "VAR_SAMP(f) OVER (PARTITION BY s), CORR(f, k) OVER (PARTITION BY ok) FROM t2",
          "ITRRRR", "rowsort"),
     ]))

FILES.append(
    ("dialect_distinct_from.test", "sqlite",
     "IS [NOT] DISTINCT FROM, also as a join condition (a null-safe join key)", [
         ("as an expression",
          "SELECT a, c, a IS DISTINCT FROM c / 100, a IS NOT DISTINCT FROM c / 100, "
          "NULL IS NOT DISTINCT FROM NULL FROM t1",
          "IIIII", "rowsort"),
         ("in WHERE",
          "SELECT a, b FROM t1 WHERE b / 10 IS DISTINCT FROM a",
          "II", "rowsort"),
         ("inner join key: NULL matches NULL",
          "SELECT t1.a, t1.b, t2.s FROM t1 JOIN t2 ON t1.a IS NOT DISTINCT FROM t2.k",
          "IIT", "rowsort"),
         ("comma join with a filter, keys of two types",
          "SELECT t1.a, t2.s, t2.f FROM t1, t2 WHERE t2.f IS NOT DISTINCT FROM t1.a "
          "AND t1.b IS NOT NULL",
          "ITR", "rowsort"),
         ("null-safe and plain keys together",
          "SELECT t1.a, t1.c, t2.s FROM t1 JOIN t2 ON t1.a IS NOT DISTINCT FROM t2.k "
          "AND (t1.c IS NULL) = (t2.f IS NULL)",
          "IIT", "rowsort"),
         ("three tables joined on null-safe keys",
          "SELECT x.a, y.s, z.b FROM t1 x, t2 y, t1 z WHERE x.a IS NOT DISTINCT FROM y.k "
          "AND z.a IS NOT DISTINCT FROM y.k AND x.b IS NOT DISTINCT FROM z.b",
          "ITI", "rowsort"),
         ("LEFT JOIN",
          "SELECT t2.k, t2.s, t1.b FROM t2 LEFT JOIN t1 ON t2.k IS NOT DISTINCT FROM t1.a",
          "ITI", "rowsort"),
         ("FULL JOIN",
          "SELECT t2.s, t1.a, t1.c FROM t2 FULL JOIN t1 ON t2.k IS NOT DISTINCT FROM t1.a "
          "AND t2.f IS NOT DISTINCT FROM t1.c / 100",
          "TII", "rowsort"),
         ("IS DISTINCT FROM in ON: not a key (a filter after the join)",
          "SELECT COUNT(*) FROM t1 JOIN t2 ON t1.a IS DISTINCT FROM t2.k",
          "I", "nosort"),
     ]))

FILES.append(
    ("dialect_distinct_on.test", "pg",
     "DISTINCT ON (the first row of each group in ORDER BY order)", [
         ("the row with the largest f per k (NULLS LAST: PostgreSQL's DESC default is NULLS "
          "FIRST)",
          "SELECT DISTINCT ON (k) k, s, f FROM t2 ORDER BY k NULLS LAST, f DESC NULLS LAST, s",
          "ITR", "nosort"),
         ("several expressions, an output name and a position",
          "SELECT DISTINCT ON (a % 2, 2) a % 2 AS par, c IS NULL AS nc, a, b FROM t1 "
          "ORDER BY par NULLS LAST, 2, b DESC NULLS LAST, a",
          "IIII", "nosort"),
         ("with a WHERE and a join",
          "SELECT DISTINCT ON (t2.k) t2.k, t1.b, t2.s FROM t1 JOIN t2 ON t1.a = t2.k "
          "WHERE t2.s IS NOT NULL ORDER BY t2.k, t1.b, t2.s",
          "IIT", "rowsort"),
         ("with LIMIT after it",
          "SELECT DISTINCT ON (k) k, s FROM t2 WHERE s IS NOT NULL "
          "ORDER BY k NULLS FIRST, s DESC LIMIT 3",
          "IT", "nosort"),
         ("over a grouped query",
          "SELECT DISTINCT ON (a % 2) a % 2, a, SUM(b) FROM t1 WHERE a IS NOT NULL GROUP BY a "
          "ORDER BY a % 2, SUM(b) DESC NULLS LAST, a",
          "III", "nosort"),
         ("in a subquery, then aggregated",
          "SELECT COUNT(*), SUM(b) FROM (SELECT DISTINCT ON (c IS NULL) a, b FROM t1 "
          "ORDER BY c IS NULL, a DESC NULLS LAST) AS x",
          "II", "nosort"),
     ]))

FILES.append(
    ("dialect_fetch.test", "pg",
     "FETCH FIRST n ROWS ONLY, OFFSET n ROWS, LIMIT ALL (the standard's and PostgreSQL's "
     "spellings of LIMIT/OFFSET)", [
         ("FETCH FIRST",
          "SELECT a, b FROM t1 ORDER BY b NULLS LAST, a FETCH FIRST 3 ROWS ONLY",
          "II", "nosort"),
         ("OFFSET ... ROWS before FETCH NEXT",
          "SELECT a, b FROM t1 ORDER BY b NULLS LAST, a OFFSET 2 ROWS FETCH NEXT 2 ROWS ONLY",
          "II", "nosort"),
         ("FETCH FIRST ROW ONLY: one row",
          "SELECT k, s FROM t2 ORDER BY f DESC NULLS LAST, k FETCH FIRST ROW ONLY",
          "IT", "nosort"),
         ("OFFSET before LIMIT",
          "SELECT a FROM t1 ORDER BY a NULLS LAST OFFSET 5 LIMIT 2",
          "I", "nosort"),
         ("LIMIT ALL: no limit",
          "SELECT a FROM t1 WHERE a > 3 ORDER BY a LIMIT ALL",
          "I", "nosort"),
         ("in a subquery",
          "SELECT SUM(b) FROM (SELECT b FROM t1 ORDER BY b DESC NULLS LAST "
          "FETCH FIRST 2 ROWS ONLY) AS x",
          "I", "nosort"),
     ]))

# Statements a file needs beyond DDL (same text for both engines).
EXTRA = {
    "dialect_types.test": [
        "CREATE TABLE t3(x INT2, y INT8, z FLOAT8)",
        "INSERT INTO t3 VALUES(1, 5000000000, 1.5),(2, -3, 3.0),(NULL, 1, NULL)",
    ],
}


def fmt(v, ty):
    if v is None:
        return "NULL"
    if ty == "I":
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, (float, decimal.Decimal)):
            return str(int(v))
        if isinstance(v, str):
            return str(int(float(v)))
        return str(v)
    if ty == "R":
        return "%.3f" % float(v)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if v == "":
        return "(empty)"
    return str(v)


class Engine:
    def __init__(self, kind):
        self.kind = kind
        self.srv = None
        if kind == "sqlite":
            self.db = sqlite3.connect(":memory:")
        else:
            import pgserver
            import psycopg2
            ok, why = pgserver.available()
            if not ok:
                raise SystemExit("no PostgreSQL server: " + why)
            self.srv = pgserver.PgServer()
            self.srv.start()
            self.db = psycopg2.connect(self.srv.uri)
            self.db.autocommit = True
            cur = self.db.cursor()
            cur.execute("SET TIME ZONE 'UTC'")

    def run(self, sql):
        cur = self.db.cursor()
        cur.execute(sql)
        return cur.fetchall() if cur.description else None

    def close(self):
        if self.srv:
            self.db.close()
            self.srv.remove()


def query_record(out, comment, sql, types, sort, rows):
    """Append one sqllogictest query record to out: rows are the expected
    answer (formatted values), sorted here for rowsort, hashed past
    HASH_THRESHOLD values."""
    assert rows, sql  # an empty answer checks little
    if sort == "rowsort":
        rows.sort()
    vals = [v for r in rows for v in r]
    out.append("# " + comment)
    out.extend(["query %s %s" % (types, sort), sql, "----"])
    if len(vals) > HASH_THRESHOLD:
        out.append("%d values hashing to %s" % (
            len(vals), hashlib.md5("".join(v + "\n" for v in vals).encode()).hexdigest()))
    else:
        out.extend(vals)
    out.append("")


def render(name, engine, title, queries, eng):
    who = ("SQLite %s (Python's sqlite3)" % sqlite3.sqlite_version if engine == "sqlite"
           else "PostgreSQL 15 (a throw-away server, tests/e2e/pgserver.py)")
    out = ["# %s." % title,
           "# Generated by tests/slt/gen_dialect.py; expected results from %s." % who,
           "hash-threshold %d" % HASH_THRESHOLD, ""]
    for t in ("t1", "t2", "t3"):  # one server per engine: each file starts afresh
        eng.run("DROP TABLE IF EXISTS %s" % t)
    for s in DDL + EXTRA.get(name, []):
        eng.run(s)
        out.extend(["statement ok", s, ""])
    for comment, sql, types, sort, *asked in queries:
        rows = [[fmt(v, types[i]) for i, v in enumerate(r)]
                for r in eng.run(asked[0] if asked else sql)]
        query_record(out, comment, sql, types, sort, rows)
    return "\n".join(out)


def write_or_check(name, text, oracle):
    """Write tests/slt/NAME with TEXT or, with --check on the command line,
    compare the file with it: False (and a message naming ORACLE, whose
    answers TEXT holds) when they differ. Every gen_*.py ends with this."""
    path = os.path.join(HERE, name)
    if "--check" in sys.argv:
        with open(path) as f:
            if f.read() != text:
                print("%s differs from %s's answers" % (name, oracle))
                return False
        return True
    with open(path, "w") as f:
        f.write(text)
    return True


def run_pg(name, render, oracle="PostgreSQL", open_engine=None):
    """The main() of a generator whose answers come from PostgreSQL: open
    the engine (open_engine(), or a plain Engine("pg")), render the file's
    text with it, close it, then write or --check tests/slt/NAME and exit
    with the outcome."""
    eng = open_engine() if open_engine else Engine("pg")
    try:
        text = render(eng)
    finally:
        eng.close()
    sys.exit(0 if write_or_check(name, text, oracle) else 1)


def main():
    engines = {}
    bad = 0
    try:
        for name, engine, title, queries in FILES:
            if engine not in engines:
                engines[engine] = Engine(engine)
            eng = engines[engine]
            text = render(name, engine, title, queries, eng)
            bad += not write_or_check(name, text, engine)
    finally:
        for e in engines.values():
            e.close()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/slt/arrays.test (run by tests/e2e/test_arrays.py in one-shot
mode and incrementally on 1-2 workers): the ARRAY type, its constructor,
subscripts, CARDINALITY/ARRAY_LENGTH, ||, ARRAY_TO_STRING, = ANY / ALL,
ARRAY_POSITION, casts to and from PostgreSQL's text form, comparison,
GROUP BY, DISTINCT and joins over arrays (issue 19). Every expected result
is PostgreSQL 15's answer (a throw-away server started here through
tests/e2e/pgserver.py and removed at the end), never Sluice's; arrays are
compared in PostgreSQL's text form ('{1,2,NULL}').

    /usr/bin/python3 tests/slt/gen_arrays.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_arrays.py --check    # compares, writes nothing
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 60

DDL = [
    "CREATE TABLE ta(k INT, a INT[], s VARCHAR[], f FLOAT8[], d DECIMAL(10,2)[], "
    "b BOOLEAN ARRAY, t TIMESTAMP[], x INT)",
    "INSERT INTO ta VALUES"
    "(1, ARRAY[1,2,3], ARRAY['a','b c'], ARRAY[1.5,-0.25], ARRAY[1.10,2], ARRAY[true,false], "
    "ARRAY[TIMESTAMP '2024-01-02 03:04:05'], 2),"
    "(2, ARRAY[1,NULL,3], ARRAY['x\"y','back\\slash',NULL,''], ARRAY[0.1], ARRAY[NULL,3.5], "
    "ARRAY[NULL,true], NULL, 3),"
    "(3, '{}', '{}', '{}', '{}', '{}', '{}', 1),"
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    "(5, ARRAY[1,2], ARRAY['null','NULL','{}',','], ARRAY[1e20,2], ARRAY[-7.5], ARRAY[false], "
    "ARRAY[TIMESTAMP '1999-12-31 23:59:59.5', NULL], 5),"
    "(6, ARRAY[1,2,3], ARRAY['a','b c'], ARRAY[3], ARRAY[0], ARRAY[true], NULL, NULL),"
    "(7, ARRAY[2], ARRAY['b'], ARRAY[-1], ARRAY[1.1], ARRAY[true,true], NULL, 1)",
    "CREATE TABLE tb(j INT, a INT[])",
    "INSERT INTO tb VALUES(10, ARRAY[1,2,3]),(11, ARRAY[2]),(12, '{}'),(13, ARRAY[1,NULL,3]),"
    "(14, NULL),(15, ARRAY[1,2,3,4])",
]

QUERIES = [
    ("array columns in PostgreSQL's text form: quoting, NULL elements, the empty array",
     "SELECT k, a, s, f, d, b, t FROM ta", "ITTTTTT", "rowsort"),
    ("subscripts are 1-based, NULL out of range and for a NULL index",
     "SELECT k, a[1], a[2], a[3], a[0], a[4], a[x], s[2], d[1], b[2] FROM ta",
     "IIIIIIITRI", "rowsort"),
    ("CARDINALITY and ARRAY_LENGTH (NULL for the empty array and other dimensions)",
     "SELECT k, CARDINALITY(a), ARRAY_LENGTH(a, 1), ARRAY_LENGTH(s, 1), ARRAY_LENGTH(a, 2), "
     "CARDINALITY(t) FROM ta", "IIIIII", "rowsort"),
    ("constructors, with NULL elements and a cast of the empty array",
     "SELECT ARRAY[1,2,NULL], ARRAY['x', NULL, 'y z'], ARRAY[1.5, 2.5], ARRAY[]::INT[], "
     "ARRAY[k, x, k + x] FROM ta WHERE k < 3", "TTTTT", "rowsort"),
    ("casts to VARCHAR and from PostgreSQL's text form",
     "SELECT k, CAST(a AS VARCHAR), CAST(s AS VARCHAR), CAST(CAST(a AS VARCHAR) AS INT[]) = a FROM ta",
     "ITTI", "rowsort"),
    ("text input: spaces, quotes, escapes, NULL in any case",
     "SELECT CAST('{1, 2 ,NULL,null}' AS INT[]), CAST(' { \"a\\\\b\" , \"\" , NuLl , \"NULL\" } ' AS VARCHAR[]), "
     "CAST('{}' AS BIGINT[]), CAST('{1.25,-3}' AS DECIMAL(5,2)[]), CAST('{t,false}' AS BOOLEAN[])",
     "TTTTT", "nosort"),
    ("element type conversions",
     "SELECT k, CAST(a AS BIGINT[]), CAST(a AS VARCHAR[]), CAST(d AS FLOAT8[]) FROM ta",
     "ITTT", "rowsort"),
    ("|| between arrays, with an element on either side, with NULL arrays",
     "SELECT k, a || ARRAY[9], 0 || a, a || 7, a || NULL, a || a, ARRAY_APPEND(a, k), "
     "ARRAY_PREPEND(k, a), ARRAY_CAT(a, ARRAY[NULL]::INT[]) FROM ta", "ITTTTTTTT", "rowsort"),
    ("ARRAY_TO_STRING skips NULL elements unless given a text for them",
     "SELECT k, ARRAY_TO_STRING(a, ','), ARRAY_TO_STRING(a, '-', '*'), ARRAY_TO_STRING(s, '|'), "
     "ARRAY_TO_STRING(b, ''), ARRAY_TO_STRING(d, ';', 'n') FROM ta", "ITTTTT", "rowsort"),
    ("= ANY, <> ALL, < ANY, >= ALL: three-valued with NULL elements, false/true when empty",
     "SELECT k, 2 = ANY(a), 3 = ANY(a), x = ANY(a), 2 <> ALL(a), 0 < ANY(a), x >= ALL(a), "
     "NULL::INT = ANY(a), 'b' = ANY(s) FROM ta", "IIIIIIIII", "rowsort"),
    ("= ANY in WHERE",
     "SELECT k FROM ta WHERE 3 = ANY(a)", "I", "rowsort"),
    ("ARRAY_POSITION finds NULL too",
     "SELECT k, ARRAY_POSITION(a, 2), ARRAY_POSITION(a, NULL), ARRAY_POSITION(s, 'b c') FROM ta",
     "IIII", "rowsort"),
    ("ordering: element by element, then the shorter first, NULL elements last",
     "SELECT j, a FROM tb WHERE a IS NOT NULL ORDER BY a, j", "IT", "nosort"),
    ("comparison operators between arrays",
     "SELECT x.j, y.j, x.a < y.a, x.a = y.a, x.a >= y.a FROM tb x, tb y WHERE x.j < y.j",
     "IIIII", "rowsort"),
    ("GROUP BY and DISTINCT over an array",
     "SELECT a, COUNT(*), MIN(k) FROM ta GROUP BY a", "TII", "rowsort"),
    ("DISTINCT",
     "SELECT DISTINCT s FROM ta", "T", "rowsort"),
    ("an equi-join on arrays",
     "SELECT k, j FROM ta JOIN tb ON ta.a = tb.a", "II", "rowsort"),
    ("MIN and MAX of arrays",
     "SELECT MIN(a), MAX(a), MAX(s) FROM ta", "TTT", "nosort"),
    ("subscript of an expression, CASE over arrays",
     "SELECT k, (a || ARRAY[k])[CARDINALITY(a) + 1], CASE WHEN k > 3 THEN a ELSE ARRAY[0] END "
     "FROM ta", "IIT", "rowsort"),
    ("ARRAY_AGG with ORDER BY keeps NULL values as elements",
     "SELECT x, ARRAY_AGG(k ORDER BY k), ARRAY_AGG(a[1] ORDER BY k DESC) FROM ta GROUP BY x",
     "ITT", "rowsort"),
    ("ARRAY_AGG ordered by two keys, NULLS FIRST / LAST, DISTINCT",
     "SELECT k > 3, ARRAY_AGG(x ORDER BY x NULLS FIRST, k), ARRAY_AGG(s[1] ORDER BY s[1] DESC NULLS LAST, k), "
     "ARRAY_AGG(DISTINCT x ORDER BY x NULLS LAST) FROM ta GROUP BY k > 3", "ITTT", "rowsort"),
    ("global ARRAY_AGG, over no rows NULL, and in expressions",
     "SELECT ARRAY_AGG(k ORDER BY k), CARDINALITY(ARRAY_AGG(x ORDER BY k)), "
     "(ARRAY_AGG(x ORDER BY k NULLS LAST))[2], ARRAY_AGG(j ORDER BY j) FROM ta, (SELECT j FROM tb WHERE j > 100) e",
     "TIIT", "nosort"),
    ("global ARRAY_AGG over rows",
     "SELECT ARRAY_AGG(k ORDER BY k DESC), ARRAY_TO_STRING(ARRAY_AGG(x ORDER BY k), ',', '?') FROM ta",
     "TT", "nosort"),
    ("ARRAY_AGG of strings and decimals grouped by an array",
     "SELECT a, ARRAY_AGG(d[1] ORDER BY k), ARRAY_AGG(s[1] ORDER BY k) FROM ta GROUP BY a",
     "TTT", "rowsort"),
    ("UNNEST in FROM, lateral over the rows before it: NULL and empty arrays give no rows",
     "SELECT k, y FROM ta, UNNEST(a) AS u(y)", "II", "rowsort"),
    ("UNNEST WITH ORDINALITY, filtered on the position and the element",
     "SELECT k, u.e, u.n FROM ta, UNNEST(s) WITH ORDINALITY AS u(e, n) WHERE n <= 2 AND k < 6",
     "ITI", "rowsort"),
    ("UNNEST of an expression, grouped",
     "SELECT y, COUNT(*) FROM ta, UNNEST(a || k) AS u(y) GROUP BY y", "II", "rowsort"),
    ("UNNEST of a constant array, joined",
     "SELECT j, v FROM tb, UNNEST(ARRAY[1, 3]) AS c(v) WHERE v = ANY(a)", "II", "rowsort"),
    ("UNNEST then ARRAY_AGG rebuilds the arrays (NULL elements kept)",
     "SELECT k, ARRAY_AGG(y ORDER BY n) FROM ta, UNNEST(a) WITH ORDINALITY AS u(y, n) GROUP BY k",
     "IT", "rowsort"),
]


def pg_engine():
    eng = gen_dialect.Engine("pg")
    import psycopg2.extensions as ext
    # arrays as PostgreSQL's text form, not Python lists
    oids = (1000, 1005, 1007, 1016, 1009, 1015, 1021, 1022, 1231, 1115, 1182, 1183, 1185)
    ext.register_type(ext.new_type(oids, "ARRAY_TEXT", lambda v, cur: v), eng.db)
    return eng


def render(eng):
    out = ["# ARRAY: type, constructors, subscripts, functions, casts (docs/sql.md, Arrays).",
           "# Generated by tests/slt/gen_arrays.py; expected results from PostgreSQL 15 "
           "(a throw-away server, tests/e2e/pgserver.py).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    for s in DDL:
        eng.run(s)
        out.extend(["statement ok", s, ""])
    for comment, sql, types, sort in QUERIES:
        rows = [[gen_dialect.fmt(v, types[i]) for i, v in enumerate(r)] for r in eng.run(sql)]
        gen_dialect.query_record(out, comment, sql, types, sort, rows)
    return "\n".join(out)


def main():
    gen_dialect.run_pg("arrays.test", render, open_engine=pg_engine)


if __name__ == "__main__":
    main()

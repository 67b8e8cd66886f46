"""Sluice's SQL results against SQLite on random data.

Three tables of seeded random rows (small integer ranges so that groups and
joins collide, ~15% NULLs, strings with commas, quotes, spaces, newlines and
the empty string, DOUBLE/REAL/DECIMAL/DATE/TIME/TIMESTAMP columns) are
written as CSV (t1: no header, t2: with a header line) and as JSON lines with
inserts followed by deletes (t3), and loaded into an in-memory SQLite
database (t3 with its net contents). Every query below becomes one
materialized view of a single Sluice program; the program runs with
--workers 1 and with --workers 3 (both with small steps so that deletions
and retractions land in later steps than the rows they delete); each view's
dump is converted by the view's column types (from `sluice check`) and
compared as a multiset with SQLite's answer to the same (or an equivalent)
query. The two runs' dumps must be byte-identical.

The program also runs as an MPI job with --hosts 2 --workers 3 and
--hosts 3 --workers 3 (same small steps; skipped when mpirun is not on
PATH): their dumps must be byte-identical to the --workers 3 run's, as
results may not depend on how the workers are spread over hosts. The
helpers for these host runs (HOST_RUNS, run_on_hosts,
check_dumps_identical_across_hosts) are shared with the other *_vs_sqlite
modules.
"""
import datetime
import json
import os
import random
import shutil
import sqlite3
from decimal import Decimal

import pytest

from conftest import (csv_field, csv_input, json_input, multiset_diff, read_dump, relation_types,
                      run, run_ok, run_progressing, write_csv, convert_text, convert_sqlite,
                      split_lines_keep)

SEEDS = [20240611, 4242, 99]
N1, N2, N3_INS, N3_DEL = 500, 300, 500, 200
STEP_ROWS = 40

STRINGS = ["", "a", "apple", "Apple", "banana", "a,b", 'say "hi"', "  pad  ", "x",
           "xyz", "MiXeD", "line1\nline2", "b", "ab", "q'uote", "%_", "a%"]

T1_DDL = """CREATE TABLE t1 (
    id INT NOT NULL PRIMARY KEY,
    a INT,
    b INT,
    c SMALLINT,
    s VARCHAR,
    d DOUBLE,
    m DECIMAL(10,2),
    f BOOLEAN,
    dt DATE,
    ts TIMESTAMP
) %s;"""

T2_DDL = """CREATE TABLE t2 (
    k INTEGER,
    x INT NOT NULL,
    y BIGINT,
    s2 VARCHAR(20),
    r REAL,
    tm TIME,
    tt TINYINT,
    code CHAR(3)
) %s;"""

T3_DDL = """create table T3 (k int, v int, name text, w double) %s;"""

# t4 is fed inserts and then deletes of every one of them.
T4_DDL = """CREATE TABLE t4 (k INT, v INT, s VARCHAR) %s;"""
N4 = 40

# Helper views (not compared themselves; other views build on them).
HELPERS = [
    "CREATE VIEW h_pos AS SELECT id, a, b, s FROM t1 WHERE b > 0;",
    "CREATE VIEW h_grp AS SELECT a, COUNT(*) AS n, SUM(b) AS sb FROM t1 GROUP BY a;",
]
SQLITE_HELPERS = [
    "CREATE VIEW h_pos AS SELECT id, a, b, s FROM t1 WHERE b > 0;",
    "CREATE VIEW h_grp AS SELECT a, COUNT(*) AS n, SUM(b) AS sb FROM t1 GROUP BY a;",
]

# name -> Sluice query, or (Sluice query, SQLite query) when the dialects differ.
QUERIES = {
    # ---- projections and arithmetic
    "q_arith": "SELECT id, a, b, a + b AS pl, a - b AS mi, a * b AS mu, a / b AS dv, "
               "a % b AS md, -a AS ng, a + b * c - c / 2 AS prec, -(a - b) * 3 AS par FROM t1",
    "q_mixed": "SELECT id, a + d AS ad, d * 2 AS d2, d / b AS db, d - c AS dc, d * d AS dd, "
               "a * 1.5 AS a15 FROM t1",
    "q_decimal": "SELECT id, m, m * 2 AS m2, m + a AS ma, m - m AS zero, m * m AS mm, "
                 "m + 0.5 AS mh, m / 4 AS m4 FROM t1",
    "q_bigint": "SELECT k, y, y + x AS yx, y * 3 AS y3, y / 7 AS y7, y % 1000 AS ym, "
                "tt + 1 AS tt1, tt * x AS ttx, r * 2 AS r2, r + x AS rx FROM t2",
    "q_const": ("SELECT id, 1 + 2 * 3 AS k1, 'lit' AS k2, 7 / 2 AS k3, -7 / 2 AS k4, "
                "7 % -3 AS k5, TRUE AS k6, NULL IS NULL AS k7 FROM t1 WHERE id < 10",
                "SELECT id, 1 + 2 * 3, 'lit', 7 / 2, -7 / 2, 7 % -3, 1, 1 FROM t1 WHERE id < 10"),
    "q_star": "SELECT * FROM t2",
    "q_dup": "SELECT a, c FROM t1",
    # ---- comparisons and logic (three-valued)
    "q_cmp": "SELECT id, a < b AS lt, a <= b AS le, a = b AS eq, a <> b AS ne, a != b AS ne2, "
             "a > b AS gt, a >= b AS ge, s = 'x' AS sx, s < 'b' AS sl, d > 0 AS dp, "
             "m >= 10 AS mp FROM t1",
    "q_bool": "SELECT id, f, NOT f AS nf, f AND a > 3 AS fa, f OR a > 3 AS fo, "
              "(a > 3) OR (b < 0) AS o2, NOT (a > 3 AND b < 0) AS n2, "
              "f = (b > 0) AS feq FROM t1",
    "q_isnull": "SELECT id, a IS NULL AS an, s IS NOT NULL AS snn, f IS NULL AS fn, "
                "(a + b) IS NULL AS abn FROM t1",
    "q_where": "SELECT id, a, b, s FROM t1 WHERE a > 3 AND (b < 2 OR s IS NULL)",
    "q_where_not": "SELECT id, a, b FROM t1 WHERE NOT (a = b) OR f",
    "q_where_bool_col": "SELECT id FROM t1 WHERE f",
    "q_where_str": "SELECT id, s FROM t1 WHERE s <> '' AND s >= 'a'",
    # ---- CASE, CAST, BETWEEN, IN, COALESCE, NULLIF, ABS
    "q_case": "SELECT id, CASE WHEN b > 2 THEN 'big' WHEN b IS NULL THEN 'null' "
              "WHEN b < 0 THEN NULL ELSE 'small' END AS c1, "
              "CASE a WHEN 1 THEN 10 WHEN 2 THEN 20 ELSE a * 100 END AS c2, "
              "CASE WHEN f THEN d END AS c3, "
              "CASE s WHEN '' THEN 'empty' WHEN 'a,b' THEN 'comma' END AS c4 FROM t1",
    "q_cast": ("SELECT id, CAST(a AS DOUBLE) AS c1, CAST(d AS INT) AS c2, "
               "CAST(a AS VARCHAR) AS c3, CAST(m AS INT) AS c4, CAST(c AS BIGINT) AS c5, "
               "CAST(a AS DECIMAL(10,2)) AS c6, CAST(dt AS VARCHAR) AS c7, "
               "CAST('12' AS INT) + a AS c8, CAST(b AS REAL) AS c9 FROM t1",
               "SELECT id, CAST(a AS REAL), CAST(d AS INTEGER), CAST(a AS TEXT), "
               "CAST(m AS INTEGER), c, a, dt, 12 + a, CAST(b AS REAL) FROM t1"),
    "q_between_in": "SELECT id, a BETWEEN 2 AND 5 AS b1, a NOT BETWEEN b AND 5 AS b2, "
                    "s BETWEEN 'a' AND 'b' AS b3, a IN (1, 3, 5) AS i1, a NOT IN (2, 4) AS i2, "
                    "s IN ('x', '', 'a,b') AS i3, d BETWEEN -10 AND 10.5 AS b4 FROM t1",
    "q_where_in": "SELECT id, a FROM t1 WHERE a IN (0, 9, 4) AND b NOT BETWEEN -1 AND 1",
    "q_coalesce": "SELECT id, COALESCE(a, b, -1) AS c1, COALESCE(s, 'none') AS c2, "
                  "NULLIF(a, b) AS n1, NULLIF(s, '') AS n2, ABS(b) AS a1, ABS(d) AS a2, "
                  "ABS(m) AS a3, COALESCE(d, a) AS c3 FROM t1",
    # ---- strings
    "q_str": ("SELECT id, s || '#' AS s1, s || s AS s2, LOWER(s) AS lo, UPPER(s) AS up, "
              "CHAR_LENGTH(s) AS ln, SUBSTRING(s FROM 2 FOR 3) AS su1, "
              "SUBSTRING(s FROM 3) AS su2, SUBSTRING(s, 1, 2) AS su3, TRIM(s) AS tr, "
              "REPLACE(s, 'a', 'AA') AS rp, UPPER(s) || LOWER(s) AS ul FROM t1",
              "SELECT id, s || '#', s || s, lower(s), upper(s), length(s), substr(s, 2, 3), "
              "substr(s, 3), substr(s, 1, 2), trim(s), replace(s, 'a', 'AA'), "
              "upper(s) || lower(s) FROM t1"),
    "q_like": "SELECT id, s LIKE 'a%' AS l1, s LIKE '%a%' AS l2, s LIKE '_' AS l3, "
              "s NOT LIKE '%,%' AS l4, s LIKE '%\"%' AS l5, s LIKE '' AS l6, "
              "s LIKE 'A%' AS l7, s LIKE '_p%e' AS l8 FROM t1",
    "q_substr_edges": ("SELECT id, SUBSTRING(s FROM 0 FOR 2) AS e1, SUBSTRING(s FROM 10) AS e2, "
                       "SUBSTRING(s FROM 2 FOR 0) AS e3, SUBSTRING(s FROM 1 FOR 100) AS e4 FROM t1",
                       "SELECT id, substr(s, 0, 2), substr(s, 10), substr(s, 2, 0), substr(s, 1, 100) "
                       "FROM t1"),
    "q_where_like": "SELECT id, s FROM t1 WHERE s LIKE '%a%' OR s LIKE 'x%'",
    "q_str2": ("SELECT k, s2, CHAR_LENGTH(TRIM(s2)) AS n, UPPER(SUBSTRING(s2 FROM 1 FOR 1)) AS ini "
               "FROM t2",
               "SELECT k, s2, length(trim(s2)), upper(substr(s2, 1, 1)) FROM t2"),
    "q_case_types": "SELECT id, CASE WHEN f THEN a ELSE d END AS c1, "
                    "CASE WHEN b > 0 THEN m ELSE a END AS c2, m = a AS c3, m < d AS c4 FROM t1",
    # ---- dates and times
    "q_date": ("SELECT id, dt, ts, dt > DATE '2020-06-01' AS d1, "
               "dt BETWEEN DATE '2020-03-01' AND DATE '2021-03-01' AS d2, "
               "ts >= TIMESTAMP '2020-06-15 12:00:00' AS t1c, dt = CAST('2020-01-05' AS DATE) AS d3 "
               "FROM t1",
               "SELECT id, dt, ts, dt > '2020-06-01', dt BETWEEN '2020-03-01' AND '2021-03-01', "
               "ts >= '2020-06-15 12:00:00', dt = '2020-01-05' FROM t1"),
    "q_time": ("SELECT k, tm, tm < TIME '12:00:00' AS am FROM t2",
               "SELECT k, tm, tm < '12:00:00' FROM t2"),
    "q_date_agg": "SELECT a, MIN(dt) AS mn, MAX(dt) AS mx, MIN(ts) AS mts, MAX(ts) AS xts, "
                  "COUNT(dt) AS n FROM t1 GROUP BY a",
    # ---- DISTINCT
    "q_distinct": "SELECT DISTINCT a, c FROM t1",
    "q_distinct_str": "SELECT DISTINCT s FROM t1",
    "q_distinct_expr": "SELECT DISTINCT a / 3 AS g, f FROM t1",
    # ---- aggregates
    "q_group": "SELECT a, COUNT(*) AS n, COUNT(b) AS nb, SUM(b) AS sb, AVG(b) AS ab, "
               "MIN(b) AS mnb, MAX(b) AS mxb, MIN(s) AS mns, MAX(s) AS mxs, SUM(d) AS sd, "
               "AVG(d) AS ad, MIN(d) AS mnd, MAX(d) AS mxd, SUM(m) AS sm, MIN(m) AS mnm, "
               "MAX(m) AS mxm, SUM(c) AS sc, COUNT(s) AS ns FROM t1 GROUP BY a",
    "q_group2": "SELECT a, c, COUNT(*) AS n, SUM(b) AS sb FROM t1 GROUP BY a, c",
    "q_group_bool": "SELECT f, COUNT(*) AS n, SUM(a) AS sa, MIN(f) AS mn, MAX(f) AS mx "
                    "FROM t1 GROUP BY f",
    "q_group_str": "SELECT s, COUNT(*) AS n, MAX(id) AS mx, AVG(a) AS aa FROM t1 GROUP BY s",
    "q_group_expr": "SELECT a + c AS g, COUNT(*) AS n FROM t1 GROUP BY a + c",
    "q_group_date": "SELECT dt, COUNT(*) AS n FROM t1 GROUP BY dt",
    "q_group_t2": "SELECT k, COUNT(*) AS n, SUM(y) AS sy, AVG(y) AS ay, SUM(tt) AS stt, "
                  "SUM(r) AS sr, MIN(r) AS mr, MAX(tm) AS mtm, MIN(s2) AS ms FROM t2 GROUP BY k",
    "q_having": "SELECT a, c, SUM(b) AS sb FROM t1 GROUP BY a, c HAVING SUM(b) > 3 OR MIN(d) < -90",
    "q_having2": "SELECT a, c, COUNT(*) AS n FROM t1 GROUP BY a, c HAVING COUNT(*) > 3 AND AVG(d) > 0",
    "q_having_nosel": "SELECT a FROM t1 GROUP BY a HAVING MAX(b) - MIN(b) >= 10 AND COUNT(*) > 30",
    "q_agg_expr": ("SELECT a, SUM(b * 2) + 1 AS x, MAX(b) - MIN(b) AS rng, COUNT(*) * 10 AS n10, "
                  "SUM(CASE WHEN f THEN 1 ELSE 0 END) AS nf, MAX(CHAR_LENGTH(s)) AS ml, "
                  "SUM(a) / COUNT(*) AS q FROM t1 GROUP BY a",
                  "SELECT a, SUM(b * 2) + 1, MAX(b) - MIN(b), COUNT(*) * 10, "
                  "SUM(CASE WHEN f THEN 1 ELSE 0 END), MAX(length(s)), SUM(a) / COUNT(*) "
                  "FROM t1 GROUP BY a"),
    "q_global": "SELECT COUNT(*) AS n, COUNT(a) AS na, SUM(a) AS sa, AVG(a) AS aa, MIN(s) AS mns, "
                "MAX(s) AS mxs, SUM(c) AS sc, SUM(d) AS sd, MIN(m) AS mm, MAX(dt) AS md FROM t1",
    "q_global_empty": "SELECT COUNT(*) AS n, COUNT(a) AS na, SUM(a) AS sa, AVG(d) AS ad, "
                      "MAX(s) AS mx, MIN(m) AS mm FROM t1 WHERE a > 1000",
    "q_group_hidden_key": "SELECT COUNT(*) AS n, SUM(b) AS sb FROM t1 GROUP BY a, c",
    "q_distinct_agg": "SELECT DISTINCT COUNT(*) AS n FROM t1 GROUP BY a, f",
    "q_group_empty": "SELECT a, COUNT(*) AS n FROM t1 WHERE a > 1000 GROUP BY a",
    "q_global_where": "SELECT COUNT(*) AS n, SUM(b) AS sb, MIN(d) AS md FROM t1 WHERE f AND a < 5",
    # ---- joins
    "q_join_comma": "SELECT t1.id, t2.x, t2.k FROM t1, t2 WHERE t1.a = t2.k",
    "q_join_on": "SELECT t1.id, t2.x, t2.s2, t1.s FROM t1 JOIN t2 ON t1.a = t2.k WHERE t2.x > 10",
    "q_join_inner_2keys": "SELECT t1.id, t2.x FROM t1 INNER JOIN t2 ON t1.a = t2.k AND t1.c = t2.tt",
    "q_join_theta": "SELECT t1.id, t2.x FROM t1 JOIN t2 ON t1.a = t2.k AND t1.b < t2.tt",
    "q_join_nonequi": "SELECT t1.id, t2.x FROM t1, t2 WHERE t1.b > t2.x AND t1.c = 1 AND t2.k = 3",
    "q_join_expr_key": "SELECT t1.id, t2.x FROM t1 JOIN t2 ON t1.a + 1 = t2.k",
    "q_join_date": "SELECT x.id AS xid, y.id AS yid FROM t1 x JOIN t1 y ON x.dt = y.dt "
                   "WHERE x.id <> y.id",
    "q_join_double": "SELECT x.id AS xid, y.k AS yk FROM t1 x JOIN t3 y ON x.d = y.w + 0 "
                     "OR x.b = y.v AND x.c = 1",
    "q_join_str": "SELECT t1.id, t3.v FROM t1 JOIN t3 ON t1.s = t3.name",
    "q_join_self": "SELECT x.id AS xid, y.id AS yid, x.a AS xa FROM t1 AS x JOIN t1 y "
                   "ON x.a = y.b WHERE x.id < y.id",
    "q_join_agg": "SELECT t1.a, COUNT(*) AS n, SUM(t2.x) AS sx, MAX(t2.s2) AS ms "
                  "FROM t1 JOIN t2 ON t1.a = t2.k GROUP BY t1.a",
    "q_join3": "SELECT t1.c, COUNT(*) AS n, SUM(t3.v) AS sv FROM t1 JOIN t2 ON t1.a = t2.k "
               "JOIN t3 ON t3.k = t2.x WHERE t1.id < 100 GROUP BY t1.c",
    "q_join_comma3": "SELECT t1.id, t2.x, t3.v FROM t1, t2, t3 "
                     "WHERE t1.a = t2.k AND t2.x = t3.k AND t1.id < 40",
    # ---- subqueries in FROM, views over views
    "q_subq": "SELECT g.a, g.n FROM (SELECT a, COUNT(*) AS n FROM t1 GROUP BY a) AS g WHERE g.n > 28",
    "q_subq_join": "SELECT x.a, x.sb, y.mx FROM (SELECT a, SUM(b) AS sb FROM t1 GROUP BY a) x "
                   "JOIN (SELECT k, MAX(x) AS mx FROM t2 GROUP BY k) AS y ON x.a = y.k",
    "q_subq_nested": "SELECT q.g, COUNT(*) AS n FROM (SELECT p.a / 2 AS g FROM "
                     "(SELECT a FROM t1 WHERE b IS NOT NULL) p) q GROUP BY q.g",
    "q_view_on_view": "SELECT a, n * 2 AS n2, sb FROM h_grp WHERE n > 1",
    "q_view_join_view": "SELECT h_pos.id, h_grp.n FROM h_pos JOIN h_grp ON h_pos.a = h_grp.a",
    "q_view_on_mview": "SELECT a, c, n FROM q_group2 WHERE n >= 3",
    # ---- set operations
    "q_union_all": "SELECT a AS v FROM t1 UNION ALL SELECT k FROM t2",
    "q_union": "SELECT a, c FROM t1 UNION SELECT k, tt FROM t2",
    "q_union3": "SELECT s FROM t1 UNION SELECT s2 FROM t2 UNION ALL SELECT name FROM t3",
    "q_union_types": "SELECT a AS v FROM t1 UNION ALL SELECT d FROM t1 WHERE d > 50",
    "q_union_agg": "SELECT u.v, COUNT(*) AS n FROM (SELECT a AS v FROM t1 UNION ALL "
                   "SELECT k AS v FROM t3) AS u GROUP BY u.v",
    # ---- identifiers, comments, qualified names
    "q_case_ins": "SeLeCt ID, A AS Aa, t1.B FrOm T1 wHeRe b > 0 AND T1.c IS NOT NULL",
    "q_comments": "SELECT /* block\n comment */ id, -- line comment\n a FROM t1 -- trailing\n"
                  "WHERE /* inline */ a = 2",
    "q_alias_qual": "SELECT z.id AS ident, z.a AS aa FROM t1 AS z WHERE z.a = z.b",
    # ---- the table fed with deletions
    "q_t3_all": "SELECT * FROM t3",
    "q_t3_group": "SELECT k, COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS mn, MAX(v) AS mx, AVG(w) AS aw, "
                  "MIN(name) AS mname, MAX(w) AS mw FROM t3 GROUP BY k",
    "q_t3_name": "SELECT name, MIN(v) AS mn, MAX(v) AS mx, COUNT(*) AS n FROM t3 GROUP BY name",
    "q_t3_distinct": "SELECT DISTINCT k, name FROM t3",
    "q_t3_global": "SELECT COUNT(*) AS n, SUM(v) AS sv, MIN(w) AS mw, MAX(v) AS xv FROM t3",
    "q_t3_join": "SELECT t3.k, t3.v, t1.id FROM t3 JOIN t1 ON t3.k = t1.a WHERE t1.c = 2",
    "q_t3_self": "SELECT x.k, x.v AS xv, y.v AS yv FROM t3 x JOIN t3 y ON x.k = y.k AND x.v < y.v",
    "q_t3_union": "SELECT k FROM t3 UNION SELECT a FROM t1",
    "q_t3_having": "SELECT k FROM t3 GROUP BY k HAVING COUNT(*) >= 8",
    # ---- a table whose every row was deleted again
    "q_t4_all": "SELECT * FROM t4",
    "q_t4_global": "SELECT COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS sv, MIN(s) AS ms, "
                   "AVG(v) AS av FROM t4",
    "q_t4_group": "SELECT k, COUNT(*) AS n, MAX(v) AS mv FROM t4 GROUP BY k",
    "q_t4_join": "SELECT t1.id, t4.v FROM t1 JOIN t4 ON t1.a = t4.k",
    "q_t4_union": "SELECT k FROM t4 UNION SELECT v FROM t4",
    # ---- CHAR(n) (values of exactly n characters)
    "q_char": ("SELECT code, COUNT(*) AS n, MIN(x) AS mx FROM t2 GROUP BY code",),
    "q_char2": ("SELECT k, code, code || '!' AS c2, CHAR_LENGTH(code) AS ln, code = 'abc' AS ia "
                "FROM t2 WHERE code IS NOT NULL",
                "SELECT k, code, code || '!', length(code), code = 'abc' FROM t2 "
                "WHERE code IS NOT NULL"),
}


# Views that are empty by design.
EXPECT_EMPTY = {"q_group_empty", "q_t4_all", "q_t4_group", "q_t4_join", "q_t4_union"}

# ------------------------------------------------------------------ data

def gen_data(seed):
    rng = random.Random(seed)

    def maybe(v, p=0.15):
        return None if rng.random() < p else v

    t1 = []
    base_date = datetime.date(2020, 1, 1)
    base_ts = datetime.datetime(2020, 1, 1)
    for i in range(N1):
        cents = rng.randint(-100000, 100000)
        t1.append((
            i,
            maybe(rng.randint(0, 9)),
            maybe(rng.randint(-5, 5)),
            maybe(rng.randint(0, 3)),
            maybe(rng.choice(STRINGS)),
            maybe(round(rng.uniform(-100, 100), 2)),
            maybe(Decimal(cents).scaleb(-2)),
            maybe(rng.random() < 0.5),
            maybe((base_date + datetime.timedelta(days=rng.randint(0, 800))).isoformat()),
            maybe((base_ts + datetime.timedelta(seconds=rng.randint(0, 86400 * 400)))
                  .strftime("%Y-%m-%d %H:%M:%S")),
        ))
    t2 = []
    for _ in range(N2):
        t2.append((
            maybe(rng.randint(0, 9)),
            rng.randint(0, 20),
            maybe(rng.randint(-10 ** 12, 10 ** 12)),
            maybe(rng.choice(STRINGS + ["longer string here", "zz top"])),
            maybe(rng.randint(-400, 400) / 4.0),
            maybe("%02d:%02d:%02d" % (rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))),
            maybe(rng.randint(0, 3)),
            maybe(rng.choice(["abc", "x,y", 'q"q', "A b", " zz", "1 2", "ABC"])),
        ))
    # t3: inserts (with duplicates), then deletes of some inserted rows,
    # interleaved so that every delete follows its insert.
    names = ["a", "x", "n2", "", "a,b", 'say "hi"', None]
    pool = []
    for _ in range(N3_INS):
        if pool and rng.random() < 0.1:
            pool.append(rng.choice(pool))  # exact duplicate row
        else:
            pool.append((maybe(rng.randint(0, 20)), maybe(rng.randint(-50, 50)),
                         rng.choice(names), maybe(round(rng.uniform(-10, 10), 3))))
    events, live = [], []
    ins = list(pool)
    deletes_left = N3_DEL
    while ins or deletes_left:
        if ins and (not live or deletes_left == 0 or rng.random() < 0.7):
            r = ins.pop(0)
            events.append(("insert", r))
            live.append(r)
        elif live and deletes_left:
            j = rng.randrange(len(live))
            events.append(("delete", live.pop(j)))
            deletes_left -= 1
        else:
            break
    # t4: every inserted row is deleted again (some only at the very end)
    t4rows = [(maybe(rng.randint(0, 5)), maybe(rng.randint(-9, 9)), maybe(rng.choice(STRINGS)))
              for _ in range(N4)]
    t4ev, pending = [], []
    for r in t4rows:
        t4ev.append(("insert", r))
        pending.append(r)
        if rng.random() < 0.5:
            t4ev.append(("delete", pending.pop(rng.randrange(len(pending)))))
    rng.shuffle(pending)
    t4ev.extend(("delete", r) for r in pending)
    return {"t1": t1, "t2": t2, "t3_events": events, "t3": live, "t4_events": t4ev}


def t3_json(r):
    return {"k": r[0], "v": r[1], "name": r[2], "w": r[3]}


def t4_json(r):
    return {"k": r[0], "v": r[1], "s": r[2]}


def sqlite_db(t1, t2, t3):
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA case_sensitive_like = ON")
    db.execute("CREATE TABLE t1 (id INTEGER, a INTEGER, b INTEGER, c INTEGER, s TEXT, d REAL, "
               "m REAL, f INTEGER, dt TEXT, ts TEXT)")
    db.execute("CREATE TABLE t2 (k INTEGER, x INTEGER, y INTEGER, s2 TEXT, r REAL, tm TEXT, "
               "tt INTEGER, code TEXT)")
    db.execute("CREATE TABLE t4 (k INTEGER, v INTEGER, s TEXT)")  # stays empty
    db.execute("CREATE TABLE t3 (k INTEGER, v INTEGER, name TEXT, w REAL)")
    db.executemany("INSERT INTO t1 VALUES (?,?,?,?,?,?,?,?,?,?)",
                   [r[:6] + (None if r[6] is None else float(r[6]),
                             None if r[7] is None else int(r[7])) + r[8:] for r in t1])
    db.executemany("INSERT INTO t2 VALUES (?,?,?,?,?,?,?,?)", t2)
    db.executemany("INSERT INTO t3 VALUES (?,?,?,?)", t3)
    for h in SQLITE_HELPERS:
        db.execute(h)
    # q_view_on_mview reads another view
    db.execute("CREATE VIEW q_group2 AS " + sqlite_sql("q_group2"))
    return db


def sluice_sql(name):
    q = QUERIES[name]
    return q[0] if isinstance(q, tuple) else q


def sqlite_sql(name):
    q = QUERIES[name]
    return q[-1] if isinstance(q, tuple) else q


# ------------------------------------------------------------------ fixture

class World:
    pass


def tables_sql(d):
    return "\n".join([
        "-- generated test program",
        T1_DDL % csv_input(os.path.join(d, "t1.csv")),
        T2_DDL % csv_input(os.path.join(d, "t2.csv"), headers=True),
        T3_DDL % json_input(os.path.join(d, "t3.json")),
        T4_DDL % json_input(os.path.join(d, "t4.json")),
    ] + HELPERS)


def view_sql(name):
    return "CREATE MATERIALIZED VIEW %s AS\n%s;" % (name, sluice_sql(name))


# Runs of the program: name -> (workers, --step-rows or None for the default).
RUNS = {"w1": (1, STEP_ROWS), "w3": (3, STEP_ROWS), "w1_bigstep": (1, None)}

# Scale-out runs of the program: name -> (--hosts, --workers), each with the
# step size of the "w3" run and compared byte for byte with it.
HOST_RUNS = {"h2w3": (2, 3), "h3w3": (3, 3)}
HOST_RUN_TIMEOUT = 300  # hang guard only (mpirun start-up, ASan), not a bound
# The program's runs (tiny steps, ASan, up to 3 MPI processes of 3 workers
# on a machine that may be loaded) take what they take: a run is a hang
# only when it completes no step for this long (conftest.run_progressing).
RUN_STALL = 600


def write_inputs(d, data):
    """The input files of tables_sql(d) for data (gen_data), and a SQLite
    database holding the same rows."""
    write_csv(os.path.join(d, "t1.csv"), data["t1"])
    with open(os.path.join(d, "t2.csv"), "w") as f:
        f.write("k,x,y,s2,r,tm,tt,code\n")  # skipped: headers = true
        for r in data["t2"]:
            f.write(",".join(csv_field(v) for v in r) + "\n")
    with open(os.path.join(d, "t3.json"), "w") as f:
        for kind, r in data["t3_events"]:
            f.write(json.dumps({kind: t3_json(r)}) + "\n")
    with open(os.path.join(d, "t4.json"), "w") as f:
        for kind, r in data["t4_events"]:
            f.write(json.dumps({kind: t4_json(r)}) + "\n")
    return sqlite_db(data["t1"], data["t2"], data["t3"])


def compile_views(d, base, names, view_sql, deps=None):
    """Which views compile: the whole program first, and when it does not,
    each view on its own (with the views it needs, deps[name]) so that one
    rejected query fails only its own tests. Returns (errors by name, the
    names that compile, in order)."""
    deps = deps or {}
    whole = os.path.join(d, "check_all.sql")
    with open(whole, "w") as f:
        f.write(base + "\n" + "\n".join(view_sql(n) for n in names) + "\n")
    if run(["check", whole]).returncode == 0:
        return {}, list(names)
    errors, ok = {}, []
    for name in names:
        prog = os.path.join(d, "check_%s.sql" % name)
        with open(prog, "w") as f:
            f.write(base + "\n" + "\n".join(view_sql(n) for n in deps.get(name, []) + [name]) +
                    "\n")
        p = run(["check", prog])
        if p.returncode != 0:
            errors[name] = p.stderr.strip()
        else:
            ok.append(name)
    ok = [n for n in ok if all(m in ok for m in deps.get(n, []))]
    return errors, ok


def run_each(w, d, runs):
    """Run w.program once per entry of runs ({key: (workers, step rows or
    None)}) into w.runs[key] and w.dumps[key]."""
    w.runs, w.dumps = {}, {}
    for key, (workers, step) in runs.items():
        out = os.path.join(d, "dump_" + key)
        args = ["run", w.program, "--workers", workers, "--until-done", "--dump", out,
                "--no-progress"]
        if step:
            args += ["--step-rows", step]
        w.runs[key] = run_progressing(args, stall=RUN_STALL)
        w.dumps[key] = out


def assert_dump_matches(world, name, key, expected_raw, what, expect_rows=True):
    """The dump of view name from run key equals expected_raw (SQLite's
    rows) as a multiset, floats up to rounding; NOT NULL columns hold no
    NULL. what shows the query in a failure."""
    p = world.runs[key]
    assert p.returncode == 0, "run failed (exit %d):\n%s" % (p.returncode, p.stderr[-4000:])
    cols = world.types[name.lower()]
    path = os.path.join(world.dumps[key], name + ".csv")
    assert os.path.exists(path), "no dump file %s" % path
    header, recs = read_dump(path)
    assert [h.lower() for h in header] == [c[0].lower() for c in cols]
    actual = [tuple(convert_text(v, cols[i][1]) for i, v in enumerate(r)) for r in recs]
    assert all(len(r) == len(cols) for r in expected_raw)
    expected = [tuple(convert_sqlite(v, cols[i][1]) for i, v in enumerate(r))
                for r in expected_raw]
    for i, c in enumerate(cols):
        if c[2]:
            assert all(r[i] is not None for r in actual), "NULL in NOT NULL column %s" % c[0]
    if expect_rows:
        assert expected, "test data makes %s empty: fix the test" % name
    float_cols = {i for i, c in enumerate(cols)
                  if c[1].startswith(("DOUBLE", "REAL", "FLOAT", "DECIMAL"))}
    diff = multiset_diff(actual, expected, float_cols)
    assert diff is None, "view %s (run %s) differs from SQLite\n%s\n%s" % (name, key, what, diff)


def mpirun_missing():
    """Reason to skip the --hosts runs, or None when mpirun is on PATH."""
    if shutil.which("mpirun") is None:
        return "mpirun is not on PATH: the --hosts runs need Open MPI"
    return None


def run_on_hosts(w, program, d, step, seed=None, seeds=None):
    """Run program once per HOST_RUNS entry (when mpirun is on PATH) with
    --until-done, --dump d/dump_<name> and --step-rows step. Sets
    w.host_runs (name -> CompletedProcess), w.host_dumps (name -> dump dir)
    and w.host_errors (name -> message when the run crashed, hung or showed
    a sanitizer report: recorded rather than raised, so that a broken host
    run fails check_dumps_identical_across_hosts and not every test of the
    world)."""
    w.host_runs, w.host_dumps, w.host_errors = {}, {}, {}
    w.host_skip = None
    if mpirun_missing():
        return
    if seeds and seed != seeds[0] and not os.environ.get("SLUICE_SCALEOUT_ALL"):
        # each MPI run costs about 2 s of start-up under ASan: the default
        # test run checks the hosts on the first seed of every module
        w.host_skip = ("host runs are checked on the first seed only "
                       "(SLUICE_SCALEOUT_ALL=1 runs every seed)")
        return
    for key, (hosts, workers) in HOST_RUNS.items():
        out = os.path.join(d, "dump_" + key)
        args = ["run", program, "--hosts", hosts, "--workers", workers, "--until-done",
                "--dump", out, "--no-progress", "--step-rows", step]
        w.host_dumps[key] = out
        try:
            w.host_runs[key] = run_progressing(args, stall=RUN_STALL)
        except (AssertionError, pytest.fail.Exception) as e:
            w.host_errors[key] = "sluice %s:\n%s" % (" ".join(map(str, args)), e)


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: "seed%d" % s)
def world(request, tmp_path_factory, sluice):
    seed = request.param
    w = World()
    d = str(tmp_path_factory.mktemp("sqlvs%d" % seed))
    w.dir = d
    data = gen_data(seed)
    w.data = data
    w.db = write_inputs(d, data)

    base = tables_sql(d)
    w.compile_errors, ok = compile_views(d, base, list(QUERIES), view_sql,
                                         {"q_view_on_mview": ["q_group2"]})
    w.program = os.path.join(d, "program.sql")
    with open(w.program, "w") as f:
        f.write(base + "\n" + "\n".join(view_sql(n) for n in ok) + "\n")
    p = run_ok(["check", w.program])
    w.types = relation_types(p.stdout)
    run_each(w, d, RUNS)
    run_on_hosts(w, w.program, d, STEP_ROWS, seed, SEEDS)
    return w


def compare_view(world, name, workers):
    if name in world.compile_errors:
        pytest.fail("sluice check rejected the query:\n%s\n%s" % (
            sluice_sql(name), world.compile_errors[name]))
    expected = world.db.execute(sqlite_sql(name)).fetchall()
    assert_dump_matches(world, name, workers, expected, "Sluice: %s\nSQLite: %s" % (
        sluice_sql(name), sqlite_sql(name)), name not in EXPECT_EMPTY)


@pytest.mark.parametrize("name", list(QUERIES))
def test_view_vs_sqlite_w1(world, name):
    compare_view(world, name, "w1")


@pytest.mark.parametrize("name", list(QUERIES))
def test_view_vs_sqlite_w3(world, name):
    compare_view(world, name, "w3")


def test_all_queries_compile_and_run(world):
    assert not world.compile_errors, "queries rejected by sluice check:\n" + "\n".join(
        "%s: %s" % kv for kv in world.compile_errors.items())
    for key, p in world.runs.items():
        assert p.returncode == 0, "%s: %s" % (key, p.stderr[-4000:])


def dump_differences(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    assert fa == fb
    assert fa, "no dump files"
    differ = []
    for fn in fa:
        with open(os.path.join(a, fn), "rb") as x, open(os.path.join(b, fn), "rb") as y:
            la, lb = x.read().split(b"\n"), y.read().split(b"\n")
        if la != lb:
            bad = [(p, q) for p, q in zip(la, lb) if p != q][:2]
            differ.append("%s: first differing lines %r" % (fn, bad))
    return differ


def dump_differences_by_line(ref, other, max_lines=3, max_files=20):
    """Differences between two --dump directories, for failure messages:
    files missing on either side and, per differing file, its name, record
    counts and first differing records (1-based line numbers; records may
    span lines inside quotes). Empty when the directories are byte-identical."""
    fr, fo = sorted(os.listdir(ref)), sorted(os.listdir(other))
    out = []
    if not fr:
        out.append("no dump files in %s" % ref)
    out += ["%s: missing from %s" % (fn, other) for fn in fr if fn not in fo]
    out += ["%s: only in %s" % (fn, other) for fn in fo if fn not in fr]
    for fn in fr:
        if fn not in fo:
            continue
        with open(os.path.join(ref, fn), "rb") as x, open(os.path.join(other, fn), "rb") as y:
            ra, rb = x.read(), y.read()
        if ra == rb:
            continue
        la, lb = split_lines_keep(ra), split_lines_keep(rb)
        lines = []
        for i in range(max(len(la), len(lb))):
            a = la[i] if i < len(la) else "(no line)"
            b = lb[i] if i < len(lb) else "(no line)"
            if a != b:
                lines.append("line %d: %r != %r" % (i + 1, a, b))
                if len(lines) == max_lines:
                    break
        if not lines:
            lines.append("same records, %d != %d bytes" % (len(ra), len(rb)))
        out.append("%s (%d != %d lines):\n      %s" % (fn, len(la), len(lb),
                                                      "\n      ".join(lines)))
    if len(out) > max_files:
        out = out[:max_files] + ["... and %d more" % (len(out) - max_files)]
    return out


def check_dumps_identical_across_hosts(world, ref_key="w3"):
    """The body of each *_vs_sqlite module's test_dumps_identical_across_hosts:
    every HOST_RUNS run succeeded and its dump is byte-identical to the
    dump of world.runs[ref_key] (the --workers 3 run). The caller skips
    first when mpirun_missing() (so that the skip names its own module)."""
    reason = mpirun_missing() or getattr(world, "host_skip", None)
    if reason:
        pytest.skip(reason)
    failed = []
    for key in HOST_RUNS:
        if key in world.host_errors:
            failed.append("%s: %s" % (key, world.host_errors[key]))
            continue
        p = world.host_runs[key]
        if p.returncode != 0:
            failed.append("%s failed (exit %d): %s\nstderr:\n%s" % (
                key, p.returncode, " ".join(map(str, p.args)), p.stderr[-4000:]))
    assert not failed, "--hosts runs failed:\n" + "\n\n".join(failed)
    ref = world.dumps[ref_key]
    differ = []
    for key, (hosts, workers) in HOST_RUNS.items():
        d = dump_differences_by_line(ref, world.host_dumps[key])
        if d:
            differ.append("--hosts %d --workers %d (%s) differs from %s (%s); line pairs are "
                          "%s != %s:\n  %s\ncommand: %s" % (
                              hosts, workers, world.host_dumps[key], ref_key, ref, ref_key, key,
                              "\n  ".join(d), " ".join(map(str, world.host_runs[key].args))))
    assert not differ, "dumps differ across hosts:\n" + "\n".join(differ)


def test_dumps_identical_workers_1_and_3(world):
    """README: results are identical for any number of workers."""
    differ = dump_differences(world.dumps["w1"], world.dumps["w3"])
    assert not differ, "dumps differ between --workers 1 and --workers 3:\n" + "\n".join(differ)


def test_dumps_identical_across_hosts(world):
    """README: results are identical for any number of hosts and workers:
    --hosts 2 and --hosts 3 with 3 workers give the dump of --workers 3."""
    reason = mpirun_missing()
    if reason:
        pytest.skip(reason)
    check_dumps_identical_across_hosts(world, "w3")


def test_dumps_identical_any_step_size(world):
    """The final contents cannot depend on how the input was cut into steps."""
    differ = dump_differences(world.dumps["w1"], world.dumps["w1_bigstep"])
    assert not differ, ("dumps differ between --step-rows %d and the default:\n" % STEP_ROWS
                        + "\n".join(differ))


def test_dumps_sorted_bytewise(world):
    for fn in sorted(os.listdir(world.dumps["w1"])):
        with open(os.path.join(world.dumps["w1"], fn), "rb") as f:
            lines = split_lines_keep(f.read())
        body = lines[1:]
        assert body == sorted(body), "%s: rows not in byte order" % fn


def test_result_types(world):
    """The documented result types: COUNT and SUM of integers are BIGINT,
    AVG of integers is DOUBLE, integer division stays an integer."""
    t = {c[0].lower(): c[1] for c in world.types.get("q_group", [])}
    assert t, "q_group missing"
    assert t["n"] == "BIGINT" and t["nb"] == "BIGINT"
    assert t["sb"] == "BIGINT" and t["sc"] == "BIGINT"
    assert t["ab"] == "DOUBLE" and t["ad"] == "DOUBLE"
    assert t["sd"] == "DOUBLE"
    assert t["sm"].startswith("DECIMAL")
    t = {c[0].lower(): c[1] for c in world.types.get("q_arith", [])}
    assert t["dv"] in ("INT", "INTEGER")
    t = {c[0].lower(): c[1] for c in world.types.get("q_group_t2", [])}
    assert t["sy"] == "BIGINT" and t["stt"] == "BIGINT" and t["ay"] == "DOUBLE"


def test_fixture_has_deletions(world):
    """Sanity of the generated input: t3 really deletes rows (and the JSON
    file has the deletes after their inserts), t4 deletes everything."""
    ev = world.data["t3_events"]
    assert sum(1 for k, _ in ev if k == "delete") == N3_DEL
    assert len(world.data["t3"]) == N3_INS - N3_DEL
    ev4 = world.data["t4_events"]
    assert sum(1 for k, _ in ev4 if k == "insert") == sum(1 for k, _ in ev4 if k == "delete") == N4


def _rounded_dump(path, cols):
    header, recs = read_dump(path)
    out = []
    for r in recs:
        row = []
        for i, v in enumerate(r):
            if v is not None and cols[i][1] in ("DOUBLE", "REAL"):
                v = "%.12g" % float(v)
            row.append(v)
        out.append(tuple(row))
    return header, sorted(out, key=repr)


def test_dumps_equal_workers_1_and_3_up_to_float_rounding(world):
    """Like the byte-identity test, with DOUBLE/REAL values rounded to 12
    significant digits: separates summation-order effects from any other
    difference between worker counts."""
    differ = []
    for fn in sorted(os.listdir(world.dumps["w1"])):
        cols = world.types[fn[:-4].lower()]
        a = _rounded_dump(os.path.join(world.dumps["w1"], fn), cols)
        b = _rounded_dump(os.path.join(world.dumps["w3"], fn), cols)
        if a != b:
            differ.append(fn)
    assert not differ, differ


# ------------------------------------------------------------------ PRIMARY KEY

def test_primary_key_upserts_vs_sqlite(tmp_path, sluice):
    """A PRIMARY KEY table takes inserts as upserts and deletes by key (a
    delete of a missing key is ignored): replay the same random events in
    SQLite with INSERT OR REPLACE / DELETE ... WHERE id = ? and compare."""
    rng = random.Random(7)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE k (id INTEGER PRIMARY KEY, v INTEGER, s TEXT)")
    lines = []
    for _ in range(400):
        key = rng.randint(0, 29)
        cur = db.execute("SELECT id, v, s FROM k WHERE id = ?", (key,)).fetchone()
        if rng.random() < 0.3:
            if cur is None:
                row = (key, rng.randint(0, 9), rng.choice(["a", "b", None]))
            else:
                row = cur
            lines.append(json.dumps({"delete": {"id": row[0], "v": row[1], "s": row[2]}}))
            db.execute("DELETE FROM k WHERE id = ?", (key,))
        else:
            row = (key, rng.choice([None, rng.randint(0, 9)]), rng.choice(["a", "b", "", None]))
            lines.append(json.dumps({"insert": {"id": row[0], "v": row[1], "s": row[2]}}))
            db.execute("INSERT OR REPLACE INTO k VALUES (?, ?, ?)", row)
    path = tmp_path / "k.json"
    path.write_text("\n".join(lines) + "\n")
    queries = {
        "kv": "SELECT id, v, s FROM k",
        "kg": "SELECT s, COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS mn, MAX(v) AS mx FROM k GROUP BY s",
        "kj": "SELECT a.id AS aid, b.id AS bid FROM k a JOIN k b ON a.v = b.v WHERE a.id < b.id",
    }
    prog = tmp_path / "pk.sql"
    prog.write_text("CREATE TABLE k (id INT NOT NULL PRIMARY KEY, v INT, s VARCHAR) %s;\n"
                    % json_input(path) + "".join(
                        "CREATE MATERIALIZED VIEW %s AS %s;\n" % kv for kv in queries.items()))
    types = relation_types(run_ok(["check", prog]).stdout)
    for workers, step in ((1, 7), (3, 7), (1, 100000)):
        out = tmp_path / ("d_%d_%d" % (workers, step))
        run_ok(["run", prog, "--workers", workers, "--until-done", "--dump", out,
                "--step-rows", step, "--no-progress"])
        for name, q in queries.items():
            cols = types[name]
            header, recs = read_dump(str(out / (name + ".csv")))
            actual = [tuple(convert_text(v, cols[i][1]) for i, v in enumerate(r)) for r in recs]
            expected = [tuple(convert_sqlite(v, cols[i][1]) for i, v in enumerate(r))
                        for r in db.execute(q)]
            assert expected
            diff = multiset_diff(actual, expected)
            assert diff is None, "%s (workers=%d, step-rows=%d): %s" % (name, workers, step, diff)


def test_dumps_identical_across_network_namespaces(world, tmp_path):
    """Scale-out across simulated hosts: the program on 3 hosts that are
    network namespaces joined by a bridge (rows between hosts travel over
    TCP on virtual links; tests/e2e/netns.py) gives the dump of --workers 3.
    First seed only (SLUICE_SCALEOUT_ALL=1: every seed)."""
    import subprocess
    from conftest import assert_no_crash, mpi_env, sluice_bin
    from netns import NetnsHosts, netns_available
    reason = mpirun_missing() or getattr(world, "host_skip", None)
    if reason:
        pytest.skip(reason)
    ok, why = netns_available()
    if not ok:
        print("skipped: network namespaces unavailable: %s" % why)
        pytest.skip("network namespaces unavailable: %s" % why)
    out = tmp_path / "dump_netns"
    with NetnsHosts(3) as h:
        env = dict(os.environ)
        env.update(mpi_env())
        argv = h.on_host1([sluice_bin(), "run", world.program, "--hosts", "3", "--workers", "3",
                           "--until-done", "--dump", str(out), "--no-progress", "--step-rows",
                           str(STEP_ROWS), "--hostfile", h.hostfile] + h.mca)
        p = subprocess.run(argv, capture_output=True, timeout=HOST_RUN_TIMEOUT, env=env)
    p.stdout = p.stdout.decode("utf-8", "replace")
    p.stderr = p.stderr.decode("utf-8", "replace")
    assert_no_crash(p)
    assert p.returncode == 0, p.stderr[-4000:]
    d = dump_differences_by_line(world.dumps["w3"], str(out))
    assert not d, "dumps differ across 3 network namespaces:\n  " + "\n  ".join(d)

#!/usr/bin/env python3
"""Writes tests/slt/asof.test (run by tests/e2e/test_asof.py in one-shot
mode and incrementally on 1-3 workers): ASOF JOIN and LEFT ASOF JOIN with
MATCH_CONDITION >=, >, <=, < (issue 19 item 3; docs/sql.md, "ASOF joins").
Every expected result is PostgreSQL 15's answer (a throw-away server
started through tests/e2e/pgserver.py) to the equivalent lateral join

    L [LEFT] JOIN LATERAL (SELECT * FROM R WHERE keys AND cond
                           ORDER BY R.ts DESC, R.c1 DESC NULLS LAST, ...
                           LIMIT 1) ON TRUE

(ASC NULLS FIRST for <= and <): the closest right row, ties between right
rows broken by their columns left to right as Sluice defines it.

    /usr/bin/python3 tests/slt/gen_asof.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_asof.py --check    # compares, writes nothing
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 400  # the values in the file, readable

# right tables: their columns (name, is a string) for the tie order
RIGHT = {
    "quotes": [("sym", True), ("ts", False), ("px", False), ("src", True)],
    "st": [("k", False), ("t", False), ("s", True)],
    "q2": [("sym", True), ("venue", True), ("ts", False), ("px", False)],
}

SETUP = [
    "CREATE TABLE trades(id INTEGER, sym VARCHAR, ts INTEGER, qty INTEGER)",
    "CREATE TABLE quotes(sym VARCHAR, ts INTEGER, px INTEGER, src VARCHAR)",
    "CREATE TABLE ev(id INTEGER, k INTEGER, t TIMESTAMP)",
    "CREATE TABLE st(k INTEGER, t TIMESTAMP, s VARCHAR)",
    "CREATE TABLE q2(sym VARCHAR, venue VARCHAR, ts INTEGER, px INTEGER)",
    "INSERT INTO trades VALUES(1,'A',10,100),(2,'A',15,200),(3,'A',20,300),(4,'A',5,50),"
    "(5,'B',10,10),(6,'B',30,20),(7,'C',10,1),(8,NULL,10,5),(9,'A',NULL,7),(10,'A',20,300),"
    "(11,'B',25,40),(1,'A',10,100)",
    "INSERT INTO quotes VALUES('A',8,80,'x'),('A',10,101,'y'),('A',10,100,'x'),('A',18,180,NULL),"
    "('A',25,250,'z'),('B',10,11,'x'),('B',10,11,'y'),('B',20,22,'x'),(NULL,10,999,'n'),"
    "('A',NULL,777,'n'),('B',40,44,NULL),('A',18,180,NULL)",
    "INSERT INTO ev VALUES(1,1,'2024-01-01 10:00:00'),(2,1,'2024-01-01 12:30:00'),"
    "(3,2,'2024-01-02 00:00:00'),(4,1,'2023-12-31 23:59:59'),(5,3,NULL)",
    "INSERT INTO st VALUES(1,'2024-01-01 09:00:00','on'),(1,'2024-01-01 12:30:00','off'),"
    "(1,'2024-01-01 12:30:00','idle'),(2,'2024-01-01 23:00:00','on'),(3,'2024-01-01 00:00:00','x')",
    "INSERT INTO q2 VALUES('A','n',9,1),('A','l',9,2),('A','n',19,3),('B','n',5,4),"
    "('B','l',31,5),('A','l',21,6)",
]

FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}


def asof(sel, left, right, ra, op, lts, rts, keys, outer, tail="", form="match"):
    """The Sluice query and PostgreSQL's lateral equivalent. form: "match"
    (MATCH_CONDITION (lts op rts)), "flip" (written rts flip(op) lts),
    "on" (the inequality in ON, DuckDB's form)."""
    kind = "LEFT ASOF JOIN" if outer else "ASOF JOIN"
    cond = "%s %s %s" % (lts, op, rts)
    if form == "match":
        s = "SELECT %s FROM %s %s %s %s MATCH_CONDITION (%s) ON %s" % (
            sel, left, kind, right, ra, cond, keys)
    elif form == "flip":
        s = "SELECT %s FROM %s %s %s %s MATCH_CONDITION (%s %s %s) ON %s" % (
            sel, left, kind, right, ra, rts, FLIP[op], lts, keys)
    else:
        s = "SELECT %s FROM %s %s %s %s ON %s AND %s" % (sel, left, kind, right, ra, keys, cond)
    back = op in (">=", ">")
    order = ["%s %s" % (rts, "DESC" if back else "ASC")]
    for c, is_str in RIGHT[right]:
        order.append('%s.%s%s %s' % (ra, c, ' COLLATE "C"' if is_str else "",
                                      "DESC NULLS LAST" if back else "ASC NULLS FIRST"))
    p = "SELECT %s FROM %s %s LATERAL (SELECT * FROM %s %s WHERE %s AND %s ORDER BY %s LIMIT 1) " \
        "%s %s" % (sel, left, "LEFT JOIN" if outer else "CROSS JOIN", right, ra, keys, cond,
                   ", ".join(order), ra, "ON TRUE" if outer else "")
    if tail:
        s += " " + tail
        p += " " + tail
    return s, p


TQ = "t.id, t.sym, t.ts, t.qty, q.ts, q.px, q.src"
TQT = "ITII" + "IIT"


def stream1():
    out = []
    for op in (">=", ">", "<=", "<"):
        for outer in (True, False):
            s, p = asof(TQ, "trades t", "quotes", "q", op, "t.ts", "q.ts", "t.sym = q.sym", outer)
            out.append(("%s ASOF, t.ts %s q.ts: ties on q.ts go to the %s row" % (
                "LEFT" if outer else "inner", op, "greatest" if op[0] == ">" else "smallest"),
                s, p, TQT, "rowsort"))
    s, p = asof(TQ, "trades t", "quotes", "q", ">=", "t.ts", "q.ts", "t.sym = q.sym", True,
                form="flip")
    out.append(("the condition written the other way round", s, p, TQT, "rowsort"))
    s, p = asof(TQ, "trades t", "quotes", "q", "<", "t.ts", "q.ts", "q.sym = t.sym", False,
                form="on")
    out.append(("the inequality inside ON (no MATCH_CONDITION)", s, p, TQT, "rowsort"))
    s, p = asof("t.id, t.sym, q.sym, q.px", "trades t", "quotes", "q", ">=", "t.ts", "q.ts",
                "t.sym IS NOT DISTINCT FROM q.sym", True)
    out.append(("IS NOT DISTINCT FROM: a NULL key matches a NULL key", s, p, "ITTI", "rowsort"))
    s, p = asof("t.id, q.ts, q.px", "trades t", "quotes", "q", ">=", "t.ts - 3", "q.ts + 1",
                "LOWER(t.sym) = LOWER(q.sym)", True)
    out.append(("expressions as keys and in the condition", s, p, "III", "rowsort"))
    s, p = asof("t.sym, COUNT(*), SUM(q.px), MAX(q.src)", "trades t", "quotes", "q", ">=",
                "t.ts", "q.ts", "t.sym = q.sym", True, tail="WHERE t.qty > 5 GROUP BY t.sym")
    out.append(("WHERE and GROUP BY over the join", s, p, "TIIT", "rowsort"))
    s, p = asof("x.id, q.px", "(SELECT id, sym, ts + 1 AS ts FROM trades WHERE id < 9) AS x",
                "quotes", "q", ">", "x.ts", "q.ts", "x.sym = q.sym", True)
    out.append(("a subquery on the left", s, p, "II", "rowsort"))
    s, p = asof("t.id, r.venue, r.ts, r.px", "trades t", "q2", "r", "<=", "t.ts", "r.ts",
                "t.sym = r.sym AND r.venue = 'n'", True)
    out.append(("a condition on the right row: only venue n is a candidate", s, p, "ITII",
                "rowsort"))
    s, p = asof("t.id, t.qty, q.px", "trades t", "quotes", "q", ">=", "t.ts", "q.ts",
                "t.sym = q.sym AND t.qty > 50", True)
    out.append(("a condition on the left row: a row failing it has no match", s, p, "III",
                "rowsort"))
    s, p = asof("e.id, e.t, s.t, s.s", "ev e", "st", "s", ">=", "e.t", "s.t", "e.k = s.k", True)
    out.append(("TIMESTAMP timestamps (ties: 'off' > 'idle')", s, p, "ITTT", "rowsort"))
    s, p = asof("e.id, s.s", "ev e", "st", "s", "<", "e.t", "s.t", "e.k = s.k", False)
    out.append(("TIMESTAMP, strictly after", s, p, "IT", "rowsort"))
    return out


DML = [
    "DELETE FROM quotes WHERE sym = 'A' AND ts = 10 AND px = 101",
    "INSERT INTO quotes VALUES('A',12,120,'w'),('C',1,5,'c'),('B',10,11,'y')",
    "UPDATE quotes SET ts = 16 WHERE sym = 'A' AND ts = 18",
    "DELETE FROM trades WHERE id = 3",
    "INSERT INTO trades VALUES(12,'C',2,3),(13,'A',16,1)",
    "UPDATE trades SET ts = ts + 5 WHERE sym = 'B'",
]


def stream2():
    out = []
    for op in (">=", "<"):
        for outer in (True, False):
            s, p = asof(TQ, "trades t", "quotes", "q", op, "t.ts", "q.ts", "t.sym = q.sym", outer)
            out.append(("after deletes, inserts and updates on both sides: %s, %s" % (
                op, "LEFT" if outer else "inner"), s, p, TQT, "rowsort"))
    return out


def render(eng):
    out = ["# ASOF JOIN and LEFT ASOF JOIN (docs/sql.md, ASOF joins).",
           "# Generated by tests/slt/gen_asof.py; expected results from PostgreSQL 15 "
           "(a throw-away server, tests/e2e/pgserver.py) for the equivalent LEFT JOIN LATERAL "
           "(... ORDER BY ts LIMIT 1).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    for t in ("trades", "quotes", "ev", "st", "q2"):
        eng.run("DROP TABLE IF EXISTS %s" % t)

    def queries(qs):
        for comment, sql, pg_sql, types, sort in qs:
            rows = [[gen_dialect.fmt(v, types[i]) for i, v in enumerate(r)]
                    for r in eng.run(pg_sql)]
            gen_dialect.query_record(out, comment, sql, types, sort, rows)
    for s in SETUP:
        eng.run(s)
        out.extend(["statement ok", s, ""])
    queries(stream1())
    for s in DML:
        eng.run(s)
        out.extend(["statement ok", s, ""])
    queries(stream2())
    return "\n".join(out)


def main():
    gen_dialect.run_pg("asof.test", render)


if __name__ == "__main__":
    main()

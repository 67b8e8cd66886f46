#!/usr/bin/env python3
"""Writes tests/slt/temporal.test (run by tests/e2e/test_temporal.py in
one-shot mode and incrementally on 1-3 workers): temporal joins

    o [LEFT] JOIN r FOR SYSTEM_TIME AS OF x [AS] a ON ...

over append-only tables (issue 19; docs/sql.md, "Temporal joins"). Every
expected result is PostgreSQL 15's answer (a throw-away server started
through tests/e2e/pgserver.py) to the lateral join

    o [LEFT] JOIN LATERAL (SELECT * FROM r a WHERE on AND x >= a.time
                           ORDER BY a.time DESC, a.c1 DESC NULLS LAST, ...
                           LIMIT 1) a ON TRUE

(the version of r's key as of x: the row with the greatest time <= x, ties
broken as ASOF joins break them).

    /usr/bin/python3 tests/slt/gen_temporal.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_temporal.py --check    # compares, writes nothing
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 400

# the versioned tables: time column, columns (name, is a string) for ties
RIGHT = {
    "rates": ("vt", [("cur", True), ("rate", False), ("vt", False)]),
    "hist": ("d", [("k", False), ("d", False), ("s", True)]),
}
AO = " WITH ('append_only' = 'true')"

SETUP = [
    "CREATE TABLE orders(id INTEGER, cur VARCHAR, ts TIMESTAMP, amt INTEGER)",
    "CREATE TABLE rates(cur VARCHAR, rate INTEGER, vt TIMESTAMP)" + AO,
    "CREATE TABLE ev(id INTEGER, k INTEGER, d DATE)",
    "CREATE TABLE hist(k INTEGER, d DATE, s VARCHAR)" + AO,
    "CREATE TABLE cust(id INTEGER, name VARCHAR)",
    "INSERT INTO orders VALUES(1,'EUR','2024-01-01 10:00:00',10),(2,'EUR','2024-01-01 12:00:00',20),"
    "(3,'USD','2024-01-01 09:00:00',30),(4,'USD','2024-01-01 13:30:00',40),"
    "(5,'GBP','2024-01-01 10:00:00',50),(6,NULL,'2024-01-01 10:00:00',60),(7,'EUR',NULL,70),"
    "(8,'EUR','2024-01-01 08:00:00',80),(1,'EUR','2024-01-01 10:00:00',10),"
    "(9,'USD','2024-01-01 11:00:00',90)",
    "INSERT INTO rates VALUES('EUR',110,'2024-01-01 09:00:00'),('EUR',111,'2024-01-01 11:00:00'),"
    "('EUR',112,'2024-01-01 12:00:00'),('USD',100,'2024-01-01 09:00:00'),"
    "('USD',101,'2024-01-01 11:00:00'),('USD',99,'2024-01-01 11:00:00'),"
    "('GBP',130,'2024-01-01 10:00:01'),(NULL,1,'2024-01-01 00:00:00'),('EUR',5,NULL)",
    "INSERT INTO ev VALUES(1,1,'2024-03-01'),(2,1,'2024-03-05'),(3,2,'2024-03-01'),"
    "(4,3,'2024-02-01'),(5,1,NULL)",
    "INSERT INTO hist VALUES(1,'2024-02-28','a'),(1,'2024-03-05','b'),(1,'2024-03-05','c'),"
    "(2,'2024-03-02','x'),(3,'2024-01-01','y')",
    "INSERT INTO cust VALUES(1,'ann'),(2,'bob'),(3,'cy'),(4,'di'),(9,'ed')",
]


def temporal(sel, left, right, ra, asof, on, outer, tail=""):
    """The Sluice query and PostgreSQL's lateral equivalent."""
    tcol, cols = RIGHT[right]
    s = "SELECT %s FROM %s %s %s FOR SYSTEM_TIME AS OF %s AS %s ON %s" % (
        sel, left, "LEFT JOIN" if outer else "JOIN", right, asof, ra, on)
    order = ["%s.%s DESC" % (ra, tcol)]
    for c, is_str in cols:
        order.append('%s.%s%s DESC NULLS LAST' % (ra, c, ' COLLATE "C"' if is_str else ""))
    p = "SELECT %s FROM %s %s LATERAL (SELECT * FROM %s %s WHERE %s AND %s >= %s.%s ORDER BY %s " \
        "LIMIT 1) %s %s" % (sel, left, "LEFT JOIN" if outer else "CROSS JOIN", right, ra, on,
                            asof, ra, tcol, ", ".join(order), ra, "ON TRUE" if outer else "")
    if tail:
        s += " " + tail
        p += " " + tail
    return s, p


SEL = "o.id, o.cur, o.ts, o.amt, r.rate, r.vt"


def stream1():
    out = []
    for outer in (True, False):
        s, p = temporal(SEL, "orders o", "rates", "r", "o.ts", "o.cur = r.cur", outer)
        out.append(("%s temporal join: the rate in force at each order's time (ties on vt: the "
                    "greatest row)" % ("LEFT" if outer else "inner"), s, p, "ITTIIT", "rowsort"))
    s, p = temporal(SEL, "orders o", "rates", "r", "o.ts - INTERVAL '1' HOUR", "o.cur = r.cur",
                    True)
    out.append(("AS OF an expression: the version an hour before", s, p, "ITTIIT", "rowsort"))
    s, p = temporal("o.cur, SUM(o.amt * r.rate), COUNT(*)", "orders o", "rates", "r", "o.ts",
                    "o.cur = r.cur", False, tail="GROUP BY o.cur")
    out.append(("aggregated over the join", s, p, "TII", "rowsort"))
    s, p = temporal("o.id, r.rate", "orders o", "rates", "r", "o.ts",
                    "o.cur = r.cur AND r.rate >= 100 AND o.amt < 80", True)
    out.append(("conditions on the version (candidates) and on the order (no match)", s, p,
                "II", "rowsort"))
    s, p = temporal("o.id, c.name, r.rate", "orders o JOIN cust c ON c.id = o.id", "rates", "r",
                    "o.ts", "o.cur = r.cur", True)
    out.append(("after another join", s, p, "ITI", "rowsort"))
    s, p = temporal("e.id, e.d, h.d, h.s", "ev e", "hist", "h", "e.d", "e.k = h.k", True)
    out.append(("DATE versions; ties on d: 'c' > 'b'", s, p, "ITTT", "rowsort"))
    s, p = temporal("e.id, h.s", "ev e", "hist", "h", "e.d", "h.k = e.k", False,
                    tail="WHERE e.id < 4")
    out.append(("inner, keys written the other way round, WHERE after", s, p, "IT", "rowsort"))
    return out


DML = [
    "INSERT INTO rates VALUES('EUR',113,'2024-01-01 11:30:00'),('GBP',131,'2024-01-01 09:00:00')",
    "DELETE FROM orders WHERE id = 3",
    "UPDATE orders SET ts = '2024-01-01 11:45:00' WHERE id = 2",
    "INSERT INTO orders VALUES(10,'GBP','2024-01-01 09:30:00',5)",
    "INSERT INTO hist VALUES(2,'2024-03-01','z')",
]


def stream2():
    out = []
    for outer in (True, False):
        s, p = temporal(SEL, "orders o", "rates", "r", "o.ts", "o.cur = r.cur", outer)
        out.append(("after new versions and changed orders: %s" % ("LEFT" if outer else "inner"),
                    s, p, "ITTIIT", "rowsort"))
    s, p = temporal("e.id, h.s", "ev e", "hist", "h", "e.d", "e.k = h.k", True)
    out.append(("DATE versions after a new one", s, p, "IT", "rowsort"))
    return out


def render(eng):
    out = ["# Temporal joins FOR SYSTEM_TIME AS OF over append-only tables "
           "(docs/sql.md, Temporal joins).",
           "# Generated by tests/slt/gen_temporal.py; expected results from PostgreSQL 15 "
           "(a throw-away server, tests/e2e/pgserver.py) for the equivalent LEFT JOIN LATERAL "
           "(... ORDER BY time DESC LIMIT 1).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    for t in ("orders", "rates", "ev", "hist", "cust"):
        eng.run("DROP TABLE IF EXISTS %s" % t)

    def queries(qs):
        for comment, sql, pg_sql, types, sort in qs:
            rows = [[gen_dialect.fmt(v, types[i]) for i, v in enumerate(r)]
                    for r in eng.run(pg_sql)]
            gen_dialect.query_record(out, comment, sql, types, sort, rows)
    for s in SETUP:
        eng.run(s.replace(AO, ""))
        out.extend(["statement ok", s, ""])
    queries(stream1())
    for s in DML:
        eng.run(s)
        out.extend(["statement ok", s, ""])
    queries(stream2())
    return "\n".join(out)


def main():
    gen_dialect.run_pg("temporal.test", render)


if __name__ == "__main__":
    main()

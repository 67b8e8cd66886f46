#!/usr/bin/env python3
"""Writes tests/slt/interval.test (run by tests/e2e/test_interval.py in
one-shot mode and incrementally on 1-3 workers): table columns of type
INTERVAL DAY TO SECOND and INTERVAL YEAR TO MONTH (issue 19; docs/sql.md,
"Dates, times and intervals"), read from the canonical text and ISO 8601
durations, compared, summed, grouped, joined, added to dates and
timestamps, aggregated (SUM, AVG, MIN, MAX) and taken apart (EXTRACT). Every expected result is PostgreSQL 15's answer (a throw-away
server started through tests/e2e/pgserver.py): its interval columns hold
the same values (microseconds, months), its results are read as
EXTRACT(EPOCH ...) and months and written in Sluice's canonical text
([-]D HH:MM:SS[.f], [-]Y-M) here.

    /usr/bin/python3 tests/slt/gen_interval.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_interval.py --check    # compares, writes nothing
"""
import decimal
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 400
US_DAY = 86400 * 10**6


def dt_text(us):
    """Sluice's canonical text of a day-to-second interval."""
    a = abs(us)
    d, r = divmod(a, US_DAY)
    sec, frac = divmod(r, 10**6)
    s = "%s%d %02d:%02d:%02d" % ("-" if us < 0 else "", d, sec // 3600, sec // 60 % 60, sec % 60)
    if frac:
        s += ("." + "%06d" % frac).rstrip("0")
    return s


def ym_text(m):
    a = abs(m)
    return "%s%d-%d" % ("-" if m < 0 else "", a // 12, a % 12)


def pg_dt(v):  # EXTRACT(EPOCH FROM d) -> canonical text
    return None if v is None else dt_text(int(decimal.Decimal(v) * 10**6))


def pg_ym(v):
    return None if v is None else ym_text(int(v))


def PD(col):  # PostgreSQL expressions giving what pg_dt / pg_ym read
    return "EXTRACT(EPOCH FROM %s)" % col


def PM(col):
    return "(EXTRACT(YEAR FROM %s) * 12 + EXTRACT(MONTH FROM %s))" % (col, col)


# rows: id, d (microseconds), m (months), ts, dt; d and m also as Sluice text
ROWS = [
    (1, 93784500000, 14, "2024-01-31 10:00:00", "2024-01-31"),
    (2, -10000000, -3, "2024-03-31 00:00:00", "2024-03-31"),
    (3, 0, 0, "2024-02-29 12:00:00", "2024-02-29"),
    (4, 3 * US_DAY, 12, None, None),
    (5, None, None, "2024-06-15 06:30:00", "2024-06-15"),
    (6, 3600000000, 25, "2023-12-31 23:00:00", "2023-12-31"),
    (7, 3600000000, 14, "2024-01-01 00:00:00", "2024-01-01"),
    (8, -2 * US_DAY - 1500000, -13, "2024-05-31 00:00:00", "2024-05-31"),
]


def sq(v):
    return "NULL" if v is None else "'%s'" % v


def sluice_row(r, iso=False):
    i, d, m, ts, dt = r
    if iso and d is not None:  # ISO 8601 durations
        a = abs(d)
        dd, rest = divmod(a, US_DAY)
        dtext = "%sP%dDT%dS" % ("-" if d < 0 else "", dd, rest // 10**6)
        if rest % 10**6:
            dtext = dtext[:-1] + ".%06dS" % (rest % 10**6)
        mtext = None if m is None else "%sP%dY%dM" % ("-" if m < 0 else "", abs(m) // 12,
                                                        abs(m) % 12)
    else:
        dtext = None if d is None else dt_text(d)
        mtext = None if m is None else ym_text(m)
    return "(%d,%s,%s,%s,%s)" % (i, sq(dtext), sq(mtext), sq(ts), sq(dt))


def pg_row(r):
    i, d, m, ts, dt = r
    return "(%d,%s,%s,%s,%s)" % (i, "NULL" if d is None else "'%d microseconds'" % d,
                                 "NULL" if m is None else "'%d months'" % m, sq(ts), sq(dt))


SETUP = [  # (Sluice, PostgreSQL)
    ("CREATE TABLE iv(id INTEGER, d INTERVAL DAY TO SECOND, m INTERVAL YEAR TO MONTH, "
     "ts TIMESTAMP, dt DATE)",
     "CREATE TABLE iv(id INTEGER, d INTERVAL, m INTERVAL, ts TIMESTAMP, dt DATE)"),
    ("INSERT INTO iv VALUES" + ",".join(sluice_row(r) for r in ROWS[:6]),
     "INSERT INTO iv VALUES" + ",".join(pg_row(r) for r in ROWS[:6])),
    ("INSERT INTO iv VALUES" + ",".join(sluice_row(r, iso=True) for r in ROWS[6:]),
     "INSERT INTO iv VALUES" + ",".join(pg_row(r) for r in ROWS[6:])),
]

# (comment, Sluice query, PostgreSQL query, slt types, value kinds: D/M an
# interval read as above, else gen_dialect.fmt's letter)
QUERIES = [
    ("the columns as stored (canonical text and ISO 8601 input)",
     "SELECT id, d, m FROM iv", "SELECT id, %s, %s FROM iv" % (PD("d"), PM("m")), "ITT", "IDM"),
    ("CAST to VARCHAR gives the canonical text",
     "SELECT id, CAST(d AS VARCHAR), CAST(m AS VARCHAR) FROM iv",
     "SELECT id, %s, %s FROM iv" % (PD("d"), PM("m")), "ITT", "IDM"),
    ("added to timestamps and dates (months clamp the day)",
     "SELECT id, ts + d, ts - d, ts + m, dt + m, dt - m FROM iv",
     "SELECT id, ts + d, ts - d, ts + m, CAST(dt + m AS DATE), CAST(dt - m AS DATE) FROM iv",
     "ITTTTT", "ISSSTT"),
    ("compared with literals",
     "SELECT id FROM iv WHERE d > INTERVAL '1' HOUR OR m < INTERVAL '-1' YEAR",
     "SELECT id FROM iv WHERE d > INTERVAL '1' HOUR OR m < INTERVAL '-1' YEAR", "I", "I"),
    ("aggregates", "SELECT MIN(d), MAX(d), MIN(m), MAX(m), COUNT(d) FROM iv",
     "SELECT %s, %s, %s, %s, COUNT(d) FROM iv" % (
         PD("MIN(d)"), PD("MAX(d)"), PM("MIN(m)"), PM("MAX(m)")), "TTTTI", "DDMMI"),
    ("grouped by an interval column", "SELECT m, COUNT(*), MAX(d) FROM iv GROUP BY m",
     "SELECT %s, COUNT(*), %s FROM iv GROUP BY m" % (PM("m"), PD("MAX(d)")), "TIT", "MID"),
    ("arithmetic on the columns",
     "SELECT id, d + INTERVAL '1' DAY, -d, d * 2, m + m FROM iv",
     "SELECT id, %s, %s, %s, %s FROM iv" % (PD("d + INTERVAL '1' DAY"), PD("-d"), PD("d * 2"),
                                            PM("m + m")), "ITTTT", "IDDDM"),
    ("joined on an interval", "SELECT a.id, b.id FROM iv a JOIN iv b ON a.d = b.d AND a.id < b.id",
     "SELECT a.id, b.id FROM iv a JOIN iv b ON a.d = b.d AND a.id < b.id", "II", "II"),
    ("SUM and AVG of interval columns (AVG of YEAR TO MONTH: whole months, truncated)",
     "SELECT SUM(d), AVG(d), SUM(m), AVG(m) FROM iv",
     "SELECT %s, %s, %s, %s FROM iv" % (PD("SUM(d)"), PD("AVG(d)"), PM("SUM(m)"), PM("AVG(m)")),
     "TTTT", "DDMM"),
    ("SUM and AVG of intervals grouped",
     "SELECT id % 3, SUM(d), AVG(d), SUM(m), AVG(m), COUNT(*) FROM iv GROUP BY id % 3",
     "SELECT id %% 3, %s, %s, %s, %s, COUNT(*) FROM iv GROUP BY id %% 3" % (
         PD("SUM(d)"), PD("AVG(d)"), PM("SUM(m)"), PM("AVG(m)")), "ITTTTI", "IDDMMI"),
    ("SUM, AVG, MIN and MAX of a timestamp difference",
     "SELECT id % 2, SUM(ts - TIMESTAMP '2024-01-01 00:00:00'), "
     "AVG(ts - TIMESTAMP '2024-01-01 00:00:00'), MIN(TIMESTAMP '2024-03-01 00:00:00' - ts), "
     "MAX(ts - CAST(dt AS TIMESTAMP)) FROM iv GROUP BY id % 2",
     "SELECT id %% 2, %s, %s, %s, %s FROM iv GROUP BY id %% 2" % (
         PD("SUM(ts - TIMESTAMP '2024-01-01 00:00:00')"),
         PD("AVG(ts - TIMESTAMP '2024-01-01 00:00:00')"),
         PD("MIN(TIMESTAMP '2024-03-01 00:00:00' - ts)"), PD("MAX(ts - CAST(dt AS TIMESTAMP))")),
     "ITTTT", "IDDDD"),
    ("EXTRACT from intervals (a day is 24 hours: PostgreSQL's justify_hours; seconds truncated)",
     "SELECT id, EXTRACT(DAY FROM d), EXTRACT(HOUR FROM d), EXTRACT(MINUTE FROM d), "
     "EXTRACT(SECOND FROM d), EXTRACT(MILLISECOND FROM d), EXTRACT(EPOCH FROM d), "
     "EXTRACT(YEAR FROM m), EXTRACT(MONTH FROM m), EXTRACT(EPOCH FROM m), "
     "date_part('hour', d) FROM iv",
     "SELECT id, %s FROM iv" % ", ".join("TRUNC(EXTRACT(%s FROM %s))::bigint" % (f, c) for f, c in [
         ("DAY", "justify_hours(d)"), ("HOUR", "justify_hours(d)"),
         ("MINUTE", "justify_hours(d)"), ("SECOND", "d"), ("MILLISECOND", "d"), ("EPOCH", "d"),
         ("YEAR", "m"), ("MONTH", "m"), ("EPOCH", "m"), ("HOUR", "justify_hours(d)")]),
     "IIIIIIIIIII", "IIIIIIIIIII"),
    ("EXTRACT from interval aggregates",
     "SELECT EXTRACT(DAY FROM SUM(d)), EXTRACT(HOUR FROM SUM(d)), EXTRACT(EPOCH FROM AVG(d)), "
     "EXTRACT(YEAR FROM SUM(m)), EXTRACT(MONTH FROM SUM(m)) FROM iv",
     "SELECT TRUNC(EXTRACT(DAY FROM justify_hours(SUM(d))))::bigint, "
     "TRUNC(EXTRACT(HOUR FROM justify_hours(SUM(d))))::bigint, "
     "TRUNC(EXTRACT(EPOCH FROM AVG(d)))::bigint, EXTRACT(YEAR FROM SUM(m))::bigint, "
     "EXTRACT(MONTH FROM SUM(m))::bigint FROM iv", "IIIII", "IIIII"),
]

DML = [
    ("UPDATE iv SET d = d + INTERVAL '1' HOUR, m = m - INTERVAL '1' MONTH WHERE id < 3",
     "UPDATE iv SET d = d + INTERVAL '1' HOUR, m = m - INTERVAL '1' MONTH WHERE id < 3"),
    ("DELETE FROM iv WHERE id = 3", "DELETE FROM iv WHERE id = 3"),
    ("INSERT INTO iv VALUES(9,'10 00:00:00.000001','100-11',NULL,'2024-02-29')",
     "INSERT INTO iv VALUES(9,'%d microseconds','%d months',NULL,'2024-02-29')" % (
         10 * US_DAY + 1, 1211)),
]


def render(eng):
    out = ["# INTERVAL DAY TO SECOND and INTERVAL YEAR TO MONTH table columns "
           "(docs/sql.md, Dates, times and intervals).",
           "# Generated by tests/slt/gen_interval.py; expected results from PostgreSQL 15 "
           "(a throw-away server, tests/e2e/pgserver.py).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    eng.run("DROP TABLE IF EXISTS iv")

    def queries():
        for comment, sql, pg_sql, types, kinds in QUERIES:
            rows = []
            for r in eng.run(pg_sql):
                row = []
                for k, v in zip(kinds, r):
                    if k == "S":
                        row.append("NULL" if v is None else v.strftime("%Y-%m-%d %H:%M:%S") + (
                            (".%06d" % v.microsecond).rstrip("0") if v.microsecond else ""))
                    elif k in "DM":
                        v = (pg_dt if k == "D" else pg_ym)(v)
                        row.append("NULL" if v is None else v)
                    else:
                        row.append(gen_dialect.fmt(v, k))
                rows.append(row)
            gen_dialect.query_record(out, comment, sql, types, "rowsort", rows)
    for s, pg in SETUP:
        eng.run(pg)
        out.extend(["statement ok", s, ""])
    queries()
    for s, pg in DML:
        eng.run(pg)
        out.extend(["statement ok", s, ""])
    queries()
    return "\n".join(out)


def main():
    gen_dialect.run_pg("interval.test", render)


if __name__ == "__main__":
    main()

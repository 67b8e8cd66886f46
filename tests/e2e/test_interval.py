"""INTERVAL DAY TO SECOND and INTERVAL YEAR TO MONTH table columns (issue
19; docs/sql.md, "Dates, times and intervals"), against PostgreSQL 15 (the
`pg` fixture), whose interval columns hold the same values:
  - tests/slt/interval.test (written by tests/slt/gen_interval.py) in
    one-shot mode and incrementally with every step compared to a
    from-scratch run, on 1-3 workers;
  - random insert/update/delete streams over HTTP in JSON, the intervals
    written as canonical text, ISO 8601 durations or bare numbers (days,
    years), views of the columns, filters, groups, SUM/AVG/MIN/MAX and
    EXTRACT of intervals, every view compared with PostgreSQL after every step, on 1 and
    2 workers;
  - a CSV file with a bad interval among good ones: the bad record is
    reported and counted, the others are applied;
  - the errors for the INTERVAL types not supported.
"""
import datetime
import decimal
import json
import os
import random

import pytest
import requests

import sltfile
from conftest import csv_input, multiset_diff, read_dump, run_ok
from httpkit import lines
from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "interval.test")
US_DAY = 86400 * 10**6


@sltfile.modes()
def test_interval_slt(args):
    sltfile.all_pass(args, CASE)


def test_expected_results_are_postgresql_answers():
    sltfile.generator_agrees("gen_interval.py")


def dt_text(us):
    a = abs(us)
    d, r = divmod(a, US_DAY)
    sec, frac = divmod(r, 10**6)
    s = "%s%d %02d:%02d:%02d" % ("-" if us < 0 else "", d, sec // 3600, sec // 60 % 60, sec % 60)
    return s + (("." + "%06d" % frac).rstrip("0") if frac else "")


def ym_text(m):
    return "%s%d-%d" % ("-" if m < 0 else "", abs(m) // 12, abs(m) % 12)


# ---------------------------------------------------------------- random streams

DDL = ("CREATE TABLE iv (id INT, d INTERVAL DAY TO SECOND, m INTERVAL YEAR TO MONTH, "
       "ts TIMESTAMP, dt DATE)")
PG_DDL = "CREATE TABLE iv (id INT, d INTERVAL, m INTERVAL, ts TIMESTAMP, dt DATE)"
VIEWS = {
    "v_rows": ("SELECT id, d, m, ts + d AS t1, dt + m AS d1 FROM iv",
               "SELECT id, EXTRACT(EPOCH FROM d), EXTRACT(YEAR FROM m) * 12 + EXTRACT(MONTH FROM m),"
               " ts + d, CAST(dt + m AS DATE) FROM iv", "IDMSS"),
    "v_group": ("SELECT m, COUNT(*) AS n, MIN(d) AS lo, MAX(d) AS hi FROM iv GROUP BY m",
                "SELECT EXTRACT(YEAR FROM m) * 12 + EXTRACT(MONTH FROM m), COUNT(*), "
                "EXTRACT(EPOCH FROM MIN(d)), EXTRACT(EPOCH FROM MAX(d)) FROM iv GROUP BY m",
                "MIDD"),
    "v_filter": ("SELECT id, d FROM iv WHERE d > INTERVAL '1' HOUR AND m <= INTERVAL '1' YEAR",
                 "SELECT id, EXTRACT(EPOCH FROM d) FROM iv "
                 "WHERE d > INTERVAL '1' HOUR AND m <= INTERVAL '1' YEAR", "ID"),
    "v_sum": ("SELECT dt, SUM(d) AS sd, AVG(d) AS ad, SUM(m) AS sm, AVG(m) AS am, "
              "SUM(ts - CAST(dt AS TIMESTAMP)) AS st FROM iv GROUP BY dt",
              "SELECT dt, EXTRACT(EPOCH FROM SUM(d)), EXTRACT(EPOCH FROM AVG(d)), "
              "EXTRACT(YEAR FROM SUM(m)) * 12 + EXTRACT(MONTH FROM SUM(m)), "
              "EXTRACT(YEAR FROM AVG(m)) * 12 + EXTRACT(MONTH FROM AVG(m)), "
              "EXTRACT(EPOCH FROM SUM(ts - CAST(dt AS TIMESTAMP))) FROM iv GROUP BY dt",
              "SDDMMD"),
    "v_extract": ("SELECT id, EXTRACT(DAY FROM d) AS dd, EXTRACT(HOUR FROM d) AS hh, "
                  "EXTRACT(MINUTE FROM d) AS mi, EXTRACT(SECOND FROM d) AS ss, "
                  "EXTRACT(EPOCH FROM d) AS ep, EXTRACT(YEAR FROM m) AS yy, "
                  "EXTRACT(MONTH FROM m) AS mo, EXTRACT(EPOCH FROM m) AS em FROM iv",
                  "SELECT id, " + ", ".join("TRUNC(EXTRACT(%s FROM %s))::bigint" % fc for fc in [
                      ("DAY", "justify_hours(d)"), ("HOUR", "justify_hours(d)"),
                      ("MINUTE", "justify_hours(d)"), ("SECOND", "d"), ("EPOCH", "d"),
                      ("YEAR", "m"), ("MONTH", "m"), ("EPOCH", "m")]) + " FROM iv",
                  "IIIIIIIII"),
}


def norm_pg(v, k):
    if v is None:
        return None
    if k == "D":
        return dt_text(int(decimal.Decimal(v) * 10**6))
    if k == "M":
        return ym_text(int(v))
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def rand_row(rng, i):
    d = rng.choice([None, rng.randrange(-3 * US_DAY, 3 * US_DAY, 10**6), rng.randrange(-3, 4) * US_DAY])
    m = rng.choice([None, rng.randrange(-30, 31), rng.randrange(-2, 3) * 12])
    ts = rng.choice([None, "2024-%02d-%02d %02d:00:00" % (rng.randrange(1, 13), rng.randrange(1, 29),
                                                          rng.randrange(24))])
    dt = rng.choice([None, "2024-01-31", "2024-02-29", "2023-12-%02d" % rng.randrange(1, 32)])
    return {"id": i, "d": d, "m": m, "ts": ts, "dt": dt}


def json_row(rng, r):
    """The row for JSON input: intervals as canonical text, ISO 8601 or a
    number (days, years)."""
    out = dict(r)
    d, m = r["d"], r["m"]
    form = rng.randrange(3)
    if d is not None:
        if form == 2 and d % US_DAY == 0:
            out["d"] = d // US_DAY
        elif form == 1:
            out["d"] = "%sP%dDT%dS" % ("-" if d < 0 else "", abs(d) // US_DAY,
                                      abs(d) % US_DAY // 10**6)
        else:
            out["d"] = dt_text(d)
    if m is not None:
        if form == 2 and m % 12 == 0:
            out["m"] = m // 12
        elif form == 1:
            out["m"] = "%sP%dY%dM" % ("-" if m < 0 else "", abs(m) // 12, abs(m) % 12)
        else:
            out["m"] = ym_text(m)
    return out


def gen_stream(seed, steps):
    rng = random.Random(seed)
    live, out, nid = [], [], 0
    for s in range(steps):
        ch = []
        for _ in range(rng.randrange(1, 10 if s < 3 else 6)):
            x = rng.random()
            if x < 0.6 or not live:
                row = rand_row(rng, nid)
                nid += 1
                live.append(row)
                ch.append(("insert", row))
            elif x < 0.8:
                ch.append(("delete", live.pop(rng.randrange(len(live)))))
            else:
                old = live.pop(rng.randrange(len(live)))
                new = rand_row(rng, old["id"])
                live.append(new)
                ch += [("delete", old), ("insert", new)]
        out.append((ch, list(live)))
    return out


def pg_val(c, v):
    if v is None:
        return "NULL"
    if c == "d":
        return "'%d microseconds'" % v
    if c == "m":
        return "'%d months'" % v
    return "'%s'" % v if isinstance(v, str) else str(v)


def pg_answers(pg, live):
    pg.query("DROP TABLE IF EXISTS iv; " + PG_DDL)
    if live:
        pg.query("INSERT INTO iv VALUES " + ",".join(
            "(%s)" % ",".join(pg_val(c, r[c]) for c in ("id", "d", "m", "ts", "dt")) for r in live))
    return {n: [tuple(norm_pg(v, k) for v, k in zip(r, kinds)) for r in pg.query(q)]
            for n, (_, q, kinds) in VIEWS.items()}


def norm(v):
    return None if v is None or v == "" else str(v)


@pytest.mark.parametrize("workers", [1, 2])
def test_random_streams_over_http_equal_postgresql_after_every_step(pg, http_pipeline, workers):
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    views = "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (n, v[0]) for n, v in VIEWS.items())
    p = http_pipeline("%s %s;\n%s\n" % (DDL, conn, views), "--workers", workers)
    rng = random.Random(5)
    checks = nonempty = 0
    for step, (ch, live) in enumerate(gen_stream(31 + workers, 12)):
        r = requests.post(p.url("/ingress/iv"), params={"wait": "true"},
                          data=lines(*[{kind: json_row(rng, row)} for kind, row in ch]),
                          timeout=120)
        assert r.status_code == 200, r.text
        want = pg_answers(pg, live)
        for name in VIEWS:
            r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM %s" % name,
                                                      "format": "json"}, timeout=60)
            assert r.status_code == 200, r.text
            got = [tuple(norm(v) for v in json.loads(l).values())
                   for l in r.text.splitlines() if l.strip()]
            d = multiset_diff(got, want[name])
            assert d is None, "%s after step %d (%d workers) differs from PostgreSQL:\n%s" % (
                name, step, workers, d)
            checks += 1
            nonempty += bool(want[name])
    assert checks == 12 * len(VIEWS) and nonempty >= 8 * len(VIEWS)
    p.stop()


def test_csv_input_and_a_bad_interval_is_a_counted_record_error(tmp_path, pg):
    rows = [("1", "1 02:03:04.5", "1-2"), ("2", "P2DT1H", "P3M"), ("3", "soon", "1-0"),
            ("4", "-0 00:00:10", "-2-11"), ("5", "", ""), ("6", "7", "2")]
    (tmp_path / "iv.csv").write_text("".join("%s,%s,%s\n" % r for r in rows))
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE iv (id INT, d INTERVAL DAY TO SECOND, m INTERVAL YEAR TO MONTH) "
                    "%s;\nCREATE MATERIALIZED VIEW v AS SELECT id, d, m, d * 2 AS d2 FROM iv;\n"
                    % csv_input(tmp_path / "iv.csv"))
    dump = tmp_path / "dump"
    r = run_ok(["run", prog, "--until-done", "--no-progress", "--dump", dump])
    got = sorted(tuple(norm(v) for v in r) for r in read_dump(dump / "v.csv")[1])
    pg.query("DROP TABLE IF EXISTS iv; CREATE TABLE iv (id INT, d INTERVAL, m INTERVAL)")
    pg.query("INSERT INTO iv VALUES (1, '1 day 02:03:04.5', '1 year 2 months'), "
             "(2, '2 days 1 hour', '3 months'), (4, '-10 seconds', '-2 years -11 months'), "
             "(5, NULL, NULL), (6, '7 days', '2 years')")
    want = sorted(tuple(norm_pg(v, k) for v, k in zip(r, "IDMD")) for r in pg.query(
        "SELECT id, EXTRACT(EPOCH FROM d), EXTRACT(YEAR FROM m) * 12 + EXTRACT(MONTH FROM m), "
        "EXTRACT(EPOCH FROM d * 2) FROM iv"))
    assert got == want
    assert "line 3: column \"d\": invalid INTERVAL 'soon'" in r.stderr, r.stderr
    assert "1 bad input record skipped" in r.stderr, r.stderr


ERRORS = [
    ("CREATE TABLE t (a INT, d INTERVAL);", "INTERVAL", ["type INTERVAL", "qualifier",
                                                         "DAY TO SECOND"]),
    ("CREATE TABLE t (a INT, d INTERVAL HOUR TO SECOND);", "HOUR", ["INTERVAL HOUR TO SECOND",
                                                                    "DAY TO SECOND"]),
    ("CREATE TABLE t (a INT, d INTERVAL MONTH);", "MONTH", ["YEAR TO MONTH"]),
]


@pytest.mark.parametrize("ddl,needle,words", ERRORS, ids=["plain", "hour", "month"])
def test_unsupported_interval_types_are_named_at_their_position(tmp_path, ddl, needle, words):
    line, col, k, msg = compile_error(tmp_path, [ddl])
    assert (line, col) == locate([ddl], needle), msg
    assert "unsupported" in k and "not supported yet" in msg, (k, msg)
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)

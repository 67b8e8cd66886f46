"""TIMESTAMP WITH TIME ZONE against PostgreSQL 15 (pgserver.py).

One table t(id, x TIMESTAMPTZ, l TIMESTAMP) of seeded random rows whose
times cluster around DST changes: America/New_York's 2024-03-10 gap and
2024-11-03 overlap, Europe/Paris's 2024 changes, Australia/Lord_Howe's
half-hour ones, and New York's in 2090 (past the last transition of the
tz files: the POSIX footer rule). x is text with an offset (+02, -05:30,
+05:45, Z), a zone name, or nothing (the session zone). The same text
goes to PostgreSQL (same session zone, same tz database: Debian builds it
with the system tzdata) and to Sluice, run for several session zones:
  - one-shot (`sluice run --until-done --dump`, file input, CSV dump);
  - incremental over HTTP: inserts, then deletes of some rows, each push
    waited for, the views read with /query (JSON) after each.
Every view's rows must equal PostgreSQL's answer to the same query as a
multiset: AT TIME ZONE both ways, casts between TIMESTAMPTZ, TIMESTAMP,
DATE and VARCHAR, comparisons, EXTRACT/date_part, DATE_TRUNC in the session zone,
+/- intervals (minutes, months, calendar days), MIN/MAX/COUNT with GROUP BY, TUMBLE
(against PostgreSQL's date_bin; windows of whole days against date_bin over
the wall-clock time, read back in the zone).
"""
import json
import os
import random

import pytest
import requests

from conftest import json_input, multiset_diff, read_dump, run, run_ok
from httpkit import lines

ZONES = ["America/New_York", "Europe/Paris", "Australia/Lord_Howe", "UTC"]

# local wall-clock times near DST changes (gaps and overlaps included)
BASES = ["2024-03-10 02:00:00", "2024-11-03 01:00:00", "2024-03-31 02:00:00",
         "2024-10-27 02:00:00", "2024-04-07 01:30:00", "2024-10-06 02:00:00",
         "2090-03-12 02:00:00", "2090-11-05 01:00:00", "2024-07-01 23:30:00",
         "2024-12-31 23:00:00"]
SUFFIXES = ["", "", "", "+02", "-05:30", "+05:45", "Z", " America/New_York", " Europe/Paris",
            " Australia/Lord_Howe", " UTC"]

QUERIES = {
    "v_row": """SELECT id, x, CAST(x AS VARCHAR) AS xs, l,
        x AT TIME ZONE 'America/New_York' AS a_ny, x AT TIME ZONE 'Australia/Lord_Howe' AS a_lh,
        l AT TIME ZONE 'Europe/Paris' AS l_pa, l AT TIME ZONE 'America/New_York' AS l_ny,
        CAST(l AS TIMESTAMP WITH TIME ZONE) AS lz, CAST(x AS TIMESTAMP) AS xl,
        CAST(x AS DATE) AS xd, CAST(EXTRACT(HOUR FROM x) AS BIGINT) AS h,
        CAST(EXTRACT(MINUTE FROM x) AS BIGINT) AS mi, CAST(EXTRACT(DAY FROM x) AS BIGINT) AS dd,
        CAST(EXTRACT(EPOCH FROM DATE_TRUNC('second', x)) AS BIGINT) AS ep,
        CAST(date_part('dow', x) AS BIGINT) AS dw, CAST(date_part('doy', x) AS BIGINT) AS dy,
        CAST(EXTRACT(TIMEZONE FROM x) AS BIGINT) AS tzs,
        CAST(EXTRACT(TIMEZONE_HOUR FROM x) AS BIGINT) AS tzh,
        CAST(EXTRACT(TIMEZONE_MINUTE FROM x) AS BIGINT) AS tzm,
        DATE_TRUNC('day', x) AS tday, DATE_TRUNC('hour', x) AS thour,
        DATE_TRUNC('month', x) AS tmon, x + INTERVAL '90' MINUTE AS p90,
        x - INTERVAL '1' MONTH AS m1, x < l AS lt, x = CAST(l AS TIMESTAMPTZ) AS eq,
        CAST(CAST(x AS VARCHAR) AS TIMESTAMPTZ) = x AS rt
        FROM t""",
    "v_day": """SELECT CAST(x AS DATE) AS d, MIN(x) AS mn, MAX(x) AS mx, COUNT(*) AS c
        FROM t GROUP BY CAST(x AS DATE)""",
    "v_hour": """SELECT DATE_TRUNC('hour', x) AS hr, COUNT(*) AS c, MAX(l) AS ml
        FROM t GROUP BY DATE_TRUNC('hour', x)""",
    # day-interval literals add calendar days in the session zone (23 or 25
    # hours across a DST change), the rest of the interval as a length
    "v_days": """SELECT id, x + INTERVAL '1' DAY AS d1, x - INTERVAL '1' DAY AS dm1,
        INTERVAL '2' DAY + x AS d2, x + INTERVAL '1 02:30:00' DAY TO SECOND AS dts,
        x - INTERVAL '1 12' DAY TO HOUR AS dth, x + INTERVAL '24' HOUR AS h24,
        x + INTERVAL '-1' DAY AS dneg FROM t""",
    # TUMBLE over instants; PostgreSQL's date_bin from the epoch is the same
    "v_tumble": ("""SELECT window_start, window_end, COUNT(*) AS c, MIN(x) AS mn
        FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(x), INTERVAL '6' HOUR))
        GROUP BY window_start, window_end""",
                 """SELECT date_bin('6 hours', x, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
        date_bin('6 hours', x, TIMESTAMPTZ '1970-01-01 00:00:00+00') + INTERVAL '6 hours',
        COUNT(*), MIN(x) FROM t WHERE x IS NOT NULL GROUP BY 1, 2"""),
    # windows of whole days follow the session zone's midnight (23 or 25
    # hours across a DST change): PostgreSQL's date_bin over the wall-clock
    # time, read back in the zone
    "v_tumble_day": ("""SELECT window_start, window_end, COUNT(*) AS c, MIN(x) AS mn
        FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(x), INTERVAL '1' DAY))
        GROUP BY window_start, window_end""",
                     """SELECT CAST(b AS TIMESTAMPTZ), CAST(b + INTERVAL '1 day' AS TIMESTAMPTZ),
        COUNT(*), MIN(x) FROM (SELECT date_bin('1 day', CAST(x AS TIMESTAMP),
        TIMESTAMP '1970-01-01') AS b, x FROM t WHERE x IS NOT NULL) s GROUP BY 1, 2"""),
    "v_hop_day": ("""SELECT window_start, window_end, COUNT(*) AS c, MAX(id) AS m
        FROM TABLE(HOP(TABLE t, DESCRIPTOR(x), INTERVAL '1' DAY, INTERVAL '2' DAY,
        INTERVAL '6' HOUR)) GROUP BY window_start, window_end""",
                  """SELECT CAST(b AS TIMESTAMPTZ), CAST(b + INTERVAL '2 days' AS TIMESTAMPTZ),
        COUNT(*), MAX(id) FROM (SELECT date_bin('1 day', CAST(x AS TIMESTAMP),
        TIMESTAMP '1970-01-01 06:00:00') AS b, id FROM t WHERE x IS NOT NULL
        UNION ALL SELECT date_bin('1 day', CAST(x AS TIMESTAMP),
        TIMESTAMP '1970-01-01 06:00:00') - INTERVAL '1 day', id FROM t WHERE x IS NOT NULL) s
        GROUP BY 1, 2"""),
}


def sluice_sql(name):
    q = QUERIES[name]
    return q[0] if isinstance(q, tuple) else q


def pg_sql(name):
    q = QUERIES[name]
    return q[1] if isinstance(q, tuple) else q


def gen_rows(seed, n):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        def local():
            b = rng.choice(BASES)
            mins = rng.randrange(-150, 151, 15)
            h, m = divmod(int(b[11:13]) * 60 + int(b[14:16]) + mins, 60)
            day = int(b[8:10])
            if h >= 24:
                h, day = h - 24, day + 1
            if h < 0:
                h, day = h + 24, day - 1
            if day < 1 or day > 28:  # keep it simple: stay inside the month
                day = min(max(day, 1), 28)
            frac = rng.choice(["", "", ".5", ".123456"])
            return "%s%02d %02d:%02d:%02d%s" % (b[:8], day, h, m, rng.randrange(60), frac)
        x = None if rng.random() < 0.05 else local() + rng.choice(SUFFIXES)
        rows.append({"id": i, "x": x, "l": None if rng.random() < 0.05 else local()})
    return rows


def program(zone, inp):
    views = "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (name, sluice_sql(name))
                      for name in QUERIES)
    return ("SET TIME ZONE '%s';\nCREATE TABLE t (id INT NOT NULL, x TIMESTAMP WITH TIME ZONE, "
            "l TIMESTAMP) %s;\n%s\n" % (zone, inp, views))


def norm(v):
    if v is True or v in ("t", "true"):
        return "t"
    if v is False or v in ("f", "false"):
        return "f"
    if v is None or v == "":
        return None
    return str(v)


def pg_answer(pg, zone, rows, name):
    pg.query("DROP TABLE IF EXISTS t; CREATE TABLE t (id INT NOT NULL, x TIMESTAMPTZ, "
             "l TIMESTAMP)")
    if rows:
        vals = ",".join("(%d, %s, %s)" % (r["id"], q(r["x"]), q(r["l"])) for r in rows)
        pg.query("SET TIME ZONE '%s'; INSERT INTO t VALUES %s" % (zone, vals))
    return [tuple(norm(v) for v in r)
            for r in pg.query("SET TIME ZONE '%s'; %s" % (zone, pg_sql(name)))]


def q(v):
    return "NULL" if v is None else "'%s'" % v


def check(got, want, what):
    d = multiset_diff(got, want)
    assert d is None, "%s differs from PostgreSQL:\n%s" % (what, d)


@pytest.mark.parametrize("zone", ZONES)
def test_one_shot_run_equals_postgresql(pg, tmp_path, zone):
    rows = gen_rows(sum(map(ord, zone)), 250)
    inp = tmp_path / "t.json"
    inp.write_text("".join(json.dumps({"insert": r}) + "\n" for r in rows))
    prog = tmp_path / "p.sql"
    prog.write_text(program(zone, json_input(inp)))
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--dump", dump, "--workers", "2", "--step-rows", "60",
            "--no-progress"])
    for name in QUERIES:
        _, recs = read_dump(dump / ("%s.csv" % name))
        check([tuple(norm(v) for v in r) for r in recs], pg_answer(pg, zone, rows, name),
              "%s in %s" % (name, zone))


@pytest.mark.parametrize("zone", ["America/New_York", "Australia/Lord_Howe"])
def test_inserts_and_deletes_over_http_equal_postgresql(pg, http_pipeline, zone):
    rows = gen_rows(20241204 + len(zone), 200)
    p = http_pipeline(program(zone, """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""),
                      "--workers", "2")
    live = {}
    rng = random.Random(3)
    batches = [("insert", rows[:120]), ("insert", rows[120:]),
               ("delete", rng.sample(rows, 70))]
    for kind, batch in batches:
        body = lines(*[{kind: r} for r in batch])
        r = requests.post(p.url("/ingress/t"), params={"wait": "true"}, data=body, timeout=120)
        assert r.status_code == 200, r.text
        for row in batch:
            if kind == "insert":
                live[row["id"]] = row
            else:
                live.pop(row["id"], None)
        for name in QUERIES:
            r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM %s" % name,
                                                      "format": "json"}, timeout=60)
            assert r.status_code == 200, r.text
            got = [tuple(norm(v) for v in json.loads(l).values())
                   for l in r.text.splitlines() if l.strip()]
            check(got, pg_answer(pg, zone, list(live.values()), name),
                  "%s in %s after %d rows" % (name, zone, len(live)))
        # an ad-hoc query's own values are in the program's session zone
        adhoc = ("SELECT id, CAST(xl AS TIMESTAMPTZ) AS back, TIMESTAMPTZ '2024-11-03 01:30:00' "
                 "AS lit, CAST('2024-04-07 02:15:00' AS TIMESTAMPTZ) AS s FROM v_row")
        r = requests.get(p.url("/query"), params={"sql": adhoc, "format": "json"}, timeout=60)
        assert r.status_code == 200, r.text
        got = [tuple(norm(v) for v in json.loads(l).values()) for l in r.text.splitlines()
               if l.strip()]
        pg.query("DROP TABLE IF EXISTS t; CREATE TABLE t (id INT NOT NULL, x TIMESTAMPTZ, "
                 "l TIMESTAMP)")
        if live:
            pg.query("SET TIME ZONE '%s'; INSERT INTO t VALUES %s" % (zone, ",".join(
                "(%d, %s, %s)" % (v["id"], q(v["x"]), q(v["l"])) for v in live.values())))
        want = pg.query("SET TIME ZONE '%s'; SELECT id, CAST(CAST(x AS TIMESTAMP) AS TIMESTAMPTZ), "
                        "TIMESTAMPTZ '2024-11-03 01:30:00', "
                        "CAST('2024-04-07 02:15:00' AS TIMESTAMPTZ) FROM t" % zone)
        check(got, [tuple(norm(v) for v in w) for w in want], "ad-hoc query in %s" % zone)
    p.stop()


def test_unknown_zones_are_compile_errors_with_a_position(tmp_path):
    for sql, where in [
            ("SET TIME ZONE 'Mars/Base';\nCREATE TABLE t (x TIMESTAMPTZ);", "1:15"),
            ("CREATE TABLE t (x TIMESTAMPTZ);\nCREATE VIEW v AS SELECT x AT TIME ZONE "
             "'Mars/Olympus' FROM t;", "2:40"),
            ("CREATE TABLE t (x TIMESTAMPTZ);\nCREATE VIEW v AS SELECT "
             "TIMESTAMPTZ '2024-01-01 10:00 Mars/Base' AS y FROM t;", "2:25"),
            ("CREATE TABLE t (x INT);\nSET TIME ZONE 'UTC';", "2:1")]:
        prog = tmp_path / "bad.sql"
        prog.write_text(sql)
        r = run(["check", prog])
        assert r.returncode != 0, sql
        assert where in r.stderr and ("unknown time zone" in r.stderr or
                                      "must come before" in r.stderr), r.stderr


def test_a_changed_session_zone_changes_the_views_that_use_it(tmp_path):
    """The session zone is part of the program: the program diff counts a
    view as changed when its computation reads or shows a TIMESTAMPTZ (vx,
    and vy whose CAST to TIMESTAMP is wall-clock time of the session zone),
    and keeps the others (vn) and the table (no TIMESTAMPTZ column)."""
    base = ("CREATE TABLE t (id INT, x TIMESTAMP, n INT);\n"
            "CREATE VIEW vx AS SELECT id, x AT TIME ZONE 'Asia/Tokyo' AS s FROM t;\n"
            "CREATE VIEW vy AS SELECT id, CAST(x AT TIME ZONE 'Asia/Tokyo' AS TIMESTAMP) AS s "
            "FROM t;\n"
            "CREATE VIEW vn AS SELECT id, n FROM t;\n")
    old, new = tmp_path / "old.sql", tmp_path / "new.sql"
    old.write_text("SET TIME ZONE 'UTC';\n" + base)
    new.write_text("SET timezone = 'Europe/Paris';\n" + base)

    def status(a, b):
        out = json.loads(run_ok(["check", a, b, "--format", "json"]).stdout)
        return {r["name"]: r["status"] for r in out["relations"]}
    assert status(old, new) == {"t": "unchanged", "vx": "changed", "vy": "changed",
                                "vn": "unchanged"}
    assert set(status(old, old).values()) == {"unchanged"}
    # a TIMESTAMPTZ column: the table's text without an offset is read in
    # the session zone, so its contents (and every view of it) change
    tz = tmp_path / "tz.sql"
    tz.write_text("SET TIME ZONE 'Europe/Paris';\nCREATE TABLE t (id INT, x TIMESTAMPTZ);\n"
                  "CREATE VIEW v AS SELECT id FROM t;\n")
    utc = tmp_path / "utc.sql"
    utc.write_text(tz.read_text().replace("Europe/Paris", "UTC"))
    assert status(utc, tz) == {"t": "changed", "v": "changed"}


def test_postgresql_clients_read_timestamptz_as_oid_1184(http_pipeline):
    """Over the wire protocol a TIMESTAMPTZ column is type 1184: psycopg2
    (text) and psycopg 3 (binary results) read aware datetimes equal to the
    instants sent, whatever the session zone shows them in."""
    import datetime
    psycopg2 = pytest.importorskip("psycopg2")
    import re
    p = http_pipeline("SET TIME ZONE 'America/New_York';\n"
                      "CREATE TABLE e (id INT NOT NULL PRIMARY KEY, x TIMESTAMPTZ) "
                      "WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW v AS SELECT id, x, x AT TIME ZONE 'Asia/Tokyo' "
                      "AS tokyo FROM e;\n", "--pg", "127.0.0.1:0")
    from conftest import wait_until
    port = wait_until(lambda: (lambda m: int(m.group(1)) if m else None)(
        re.search(r"sluice: pg: listening on 127\.0\.0\.1:(\d+)", p.stderr())),
        "the pg port", poll=0.01)
    utc = datetime.timezone.utc
    sent = {1: datetime.datetime(2024, 3, 10, 10, 0, tzinfo=datetime.timezone(
                datetime.timedelta(hours=2))),
            2: datetime.datetime(2024, 11, 3, 5, 30, 0, 250000, tzinfo=utc),
            3: datetime.datetime(2090, 7, 1, 12, 0, tzinfo=utc)}
    c = psycopg2.connect(host="127.0.0.1", port=port, user="tester", dbname="db",
                         connect_timeout=30)
    c.autocommit = True
    cur = c.cursor()
    for i, x in sent.items():
        cur.execute("INSERT INTO e VALUES (%s, %s)", (i, x))
    cur.execute("SELECT id, x, tokyo FROM v ORDER BY id")
    assert [d.type_code for d in cur.description] == [23, 1184, 1114]
    rows = cur.fetchall()
    assert [(r[0], r[1]) for r in rows] == sorted(sent.items())
    assert rows[0][1].utcoffset() == datetime.timedelta(hours=-4)  # shown in New York
    assert rows[0][2] == datetime.datetime(2024, 3, 10, 17, 0)
    c.close()
    psycopg = pytest.importorskip("psycopg")
    c = psycopg.connect(host="127.0.0.1", port=port, user="tester", dbname="db",
                        autocommit=True, connect_timeout=30)
    cur = c.cursor(binary=True)
    cur.execute("SELECT id, x FROM v ORDER BY id")
    assert cur.fetchall() == sorted(sent.items())
    c.close()
    p.stop()


def test_an_unknown_zone_in_a_value_rejects_that_record_only(pg, tmp_path):
    """A zone that is a column's value is looked up row by row: a name that
    is no zone rejects that record (reported and counted), the others get
    PostgreSQL's answer; input text with an unknown zone is a bad record."""
    rows = [(1, "2024-03-10 02:30:00", "America/New_York"), (2, "2024-03-10 10:00:00", "Mars/Base"),
            (3, "2024-11-03 01:30:00", "America/New_York"), (4, "2024-04-07 02:15:00",
                                                             "Australia/Lord_Howe"),
            (5, "2090-03-12 02:30:00", "America/New_York")]
    inp = tmp_path / "z.csv"
    inp.write_text("".join("%d,%s,%s\n" % r for r in rows) + "6,2024-01-01 00:00:00,UTC\n")
    tz_inp = tmp_path / "tz.csv"
    tz_inp.write_text("1,2024-01-01 10:00:00 Mars/Base\n2,2024-01-01 10:00:00 Asia/Tokyo\n")
    from conftest import csv_input
    prog = tmp_path / "z.sql"
    prog.write_text(
        "SET TIME ZONE 'Europe/Paris';\n"
        "CREATE TABLE t (id INT, l TIMESTAMP, z VARCHAR) %s;\n"
        "CREATE TABLE u (id INT, x TIMESTAMPTZ) %s;\n"
        "CREATE MATERIALIZED VIEW v AS SELECT id, l AT TIME ZONE z AS x FROM t;\n"
        "CREATE MATERIALIZED VIEW w AS SELECT id, x FROM u;\n" % (csv_input(inp),
                                                                    csv_input(tz_inp)))
    dump = tmp_path / "dump"
    r = run_ok(["run", prog, "--until-done", "--dump", dump, "--no-progress"])
    assert 'unknown time zone "Mars/Base"' in r.stderr
    _, got = read_dump(dump / "v.csv")
    want = pg.query("SET TIME ZONE 'Europe/Paris'; SELECT id, l AT TIME ZONE z FROM (VALUES %s) "
                    "AS s(id, l, z) WHERE z <> 'Mars/Base'" % ",".join(
                        "(%d, TIMESTAMP '%s', '%s')" % r for r in rows + [(6, "2024-01-01 00:00:00",
                                                                            "UTC")]))
    check([tuple(x) for x in got], [tuple(x) for x in want], "AT TIME ZONE of a column")
    _, got = read_dump(dump / "w.csv")
    assert got == [["2", "2024-01-01 02:00:00+01"]]


def test_a_restart_with_another_zone_recomputes_what_depends_on_it(pg, tmp_path):
    """--storage, then a restart with the session zone changed and
    --bootstrap allow: the view showing a TIMESTAMPTZ is recomputed from
    stored state in the new zone, the one that does not is kept, and a
    table with a TIMESTAMPTZ column is read again (its text has no offset,
    so the new zone gives other instants); all as PostgreSQL has them."""
    from conftest import csv_input
    rows = [(1, "2024-03-10 02:30:00"), (2, "2024-11-03 01:30:00"), (3, "2090-07-01 12:00:00"),
            (4, "2024-04-07 01:45:00")]
    inp = tmp_path / "r.csv"
    inp.write_text("".join("%d,%s\n" % r for r in rows))
    base = ("CREATE TABLE t (id INT, l TIMESTAMP) %s;\n"
            "CREATE TABLE u (id INT, x TIMESTAMPTZ) %s;\n"
            "CREATE MATERIALIZED VIEW vx AS SELECT id, l AT TIME ZONE 'America/New_York' AS x "
            "FROM t;\n"
            "CREATE MATERIALIZED VIEW vn AS SELECT id, l FROM t;\n"
            "CREATE MATERIALIZED VIEW vu AS SELECT id, x FROM u;\n" % (csv_input(inp),
                                                                     csv_input(inp)))
    store = tmp_path / "store"
    for i, zone in enumerate(["UTC", "Australia/Lord_Howe"]):
        prog = tmp_path / ("p%d.sql" % i)
        prog.write_text("SET TIME ZONE '%s';\n%s" % (zone, base))
        dump = tmp_path / ("dump%d" % i)
        r = run_ok(["run", prog, "--storage", store, "--until-done", "--dump", dump,
                    "--no-progress"] + (["--bootstrap", "allow"] if i else []))
        vals = ",".join("(%d, '%s')" % r for r in rows)
        want_x = pg.query("SET TIME ZONE '%s'; SELECT id, CAST(l AS TIMESTAMP) AT TIME ZONE "
                          "'America/New_York' FROM (VALUES %s) s(id, l)" % (zone, vals))
        want_u = pg.query("SET TIME ZONE '%s'; SELECT id, CAST(l AS TIMESTAMPTZ) "
                          "FROM (VALUES %s) s(id, l)" % (zone, vals))
        for view, want in (("vx", want_x), ("vu", want_u)):
            _, got = read_dump(dump / ("%s.csv" % view))
            check([tuple(x) for x in got], [tuple(x) for x in want], "%s in %s" % (view, zone))
        if i:
            assert "bootstrapping" in r.stderr, r.stderr
    diff = json.loads(run_ok(["check", tmp_path / "p0.sql", tmp_path / "p1.sql",
                              "--format", "json"]).stdout)
    assert {x["name"]: x["status"] for x in diff["relations"]} == {
        "t": "unchanged", "u": "changed", "vx": "changed", "vn": "unchanged", "vu": "changed"}

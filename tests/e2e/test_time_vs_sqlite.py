"""String functions, date/time arithmetic and the TUMBLE/HOP table functions
against SQLite (where SQLite has an equivalent) and against Python.

One table t(id, s, n, d, ts) of seeded random rows (strings with mixed case,
padding, x's and UTF-8; dates from 1960 to 2030 with month ends and leap
days over-represented; timestamps from 1965 to 2035 with millisecond
fractions, some on exact hour boundaries; ~10% NULLs) is fed as JSON
inserts followed by deletes of some rows, in small steps, with 1 and with 3
workers (and as an MPI job with --hosts 2 --workers 3 and --hosts 3
--workers 3, skipped when mpirun is not on PATH, whose dumps must be
byte-identical to the --workers 3 run's). Each view's dump is compared as a
multiset with:
  - SQLite's answer for an equivalent query (ILIKE as lower() LIKE lower()
    with case_sensitive_like on, date()/strftime() modifiers for interval
    arithmetic and DATE_TRUNC, instr() for POSITION, trim()/ltrim()/rtrim());
  - or rows computed in Python from the table's net contents (INITCAP,
    calendar-month arithmetic, which SQLite does not clamp, ISO weeks,
    TIMESTAMPDIFF, TIMESTAMP - TIMESTAMP intervals, TUMBLE and HOP).
Timestamps are compared after normalising the fraction (SQLite prints
milliseconds, Sluice cuts trailing zeros).
"""
import datetime
import json
import os
import random
import sqlite3

import pytest

from conftest import multiset_diff, read_dump, relation_types, run, run_ok, convert_text
from test_sql_vs_sqlite import (check_dumps_identical_across_hosts, json_input, mpirun_missing,
                                run_on_hosts)

SEEDS = [7, 20241202]
N, NDEL, STEP_ROWS = 300, 80, 25

STRINGS = ["", "a", "Apple", "aPPle pie", "xxhixx", "  pad  ", "x", "XyZ", "MiXeD case",
           "h\u00e9llo w\u00f6rld", "o'neil-smith", "abcabc", "%_", " xx a xx ", "APPLE"]

T_DDL = "CREATE TABLE t (id INT NOT NULL, s VARCHAR, n INT, d DATE, ts TIMESTAMP) %s;"

EPOCH = datetime.datetime(1970, 1, 1)
US = datetime.timedelta(microseconds=1)
TSF = "%Y-%m-%d %H:%M:%f"  # SQLite: seconds with milliseconds


def ts_us(text):
    """'YYYY-MM-DD HH:MM:SS[.f]' -> microseconds since 1970."""
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    return (datetime.datetime.strptime(text, fmt) - EPOCH) // US


def us_ts(v):
    return norm_ts((EPOCH + v * US).strftime("%Y-%m-%d %H:%M:%S.%f"))


def norm_ts(text):
    """Canonical 'YYYY-MM-DD HH:MM:SS.ffffff' for comparing timestamps."""
    if text is None:
        return None
    date, _, time = text.partition(" ")
    if not time:
        time = "00:00:00"
    hms, _, frac = time.partition(".")
    return "%s %s.%s" % (date, hms, (frac + "000000")[:6])


def fmt_interval_dt(v):
    a = abs(v)
    days, rest = divmod(a, 86400 * 10**6)
    sec, frac = divmod(rest, 10**6)
    s = "%s%d %02d:%02d:%02d" % ("-" if v < 0 else "", days, sec // 3600, sec // 60 % 60, sec % 60)
    if frac:
        s += "." + ("%06d" % frac).rstrip("0")
    return s


def add_months(date_text, months):
    y, m, d = map(int, date_text[:10].split("-"))
    t = y * 12 + (m - 1) + months
    ny, nm = divmod(t, 12)
    nm += 1
    dim = [31, 29 if (ny % 4 == 0 and ny % 100 != 0) or ny % 400 == 0 else 28, 31, 30, 31, 30,
           31, 31, 30, 31, 30, 31][nm - 1]
    return "%04d-%02d-%02d%s" % (ny, nm, min(d, dim), date_text[10:])


def initcap(s):
    out, in_word = [], False
    for c in s:
        if not in_word and "a" <= c <= "z":
            c = c.upper()
        elif in_word and "A" <= c <= "Z":
            c = c.lower()
        in_word = c.isascii() and c.isalnum() or not c.isascii()
        out.append(c)
    return "".join(out)


def months_between(a_us, b_us):
    """TIMESTAMPDIFF(MONTH, a, b): whole calendar months, toward zero."""
    a, b = EPOCH + a_us * US, EPOCH + b_us * US
    months = (b.year * 12 + b.month) - (a.year * 12 + a.month)
    ka = (a.day, a.time())
    kb = (b.day, b.time())
    if months > 0 and kb < ka:
        months -= 1
    elif months < 0 and kb > ka:
        months += 1
    return months


def trunc_div(a, b):
    q = abs(a) // b
    return q if a >= 0 else -q


# ------------------------------------------------------------- the views

# name -> (Sluice query, SQLite query) or (Sluice query, python(rows) -> rows)
def py_initcap(rows):
    return [(r["id"], None if r["s"] is None else initcap(r["s"])) for r in rows]


def py_months(rows):
    out = []
    for r in rows:
        d, ts = r["d"], r["ts"]
        out.append((r["id"],
                    None if d is None else add_months(d, 1),
                    None if d is None else add_months(d, -13),
                    None if ts is None else norm_ts(add_months(ts, 12)),
                    None if d is None else add_months(d, 14)))
    return out


def py_week(rows):
    return [(r["id"], None if r["d"] is None else
             datetime.date.fromisoformat(r["d"]).isocalendar()[1]) for r in rows]


REF = "2000-02-29 12:00:00"


def py_diff(rows):
    ref = ts_us(REF)
    out = []
    for r in rows:
        if r["ts"] is None:
            out.append((r["id"], None, None, None, None))
            continue
        v = ts_us(r["ts"])
        out.append((r["id"], fmt_interval_dt(v - ref), trunc_div(v - ref, 86400 * 10**6),
                    trunc_div(v - ref, 3600 * 10**6), months_between(ref, v)))
    return out


def py_tumble(size, offset=0):
    def f(rows):
        out = []
        for r in rows:
            if r["ts"] is None:
                continue
            v = ts_us(r["ts"])
            start = (v - offset) // size * size + offset
            out.append((r["id"], norm_ts(r["ts"]), us_ts(start), us_ts(start + size)))
        return out
    return f


def py_hop(slide, size):
    def f(rows):
        out = []
        for r in rows:
            if r["ts"] is None:
                continue
            v = ts_us(r["ts"])
            first = v // slide * slide
            for k in range(size // slide):
                start = first - k * slide
                assert start <= v < start + size
                out.append((r["id"], us_ts(start), us_ts(start + size)))
        return out
    return f


def py_hop_counts(slide, size):
    def f(rows):
        counts = {}
        for rec in py_hop(slide, size)(rows):
            counts[rec[1]] = counts.get(rec[1], 0) + 1
        return [(k, v) for k, v in counts.items()]
    return f


HOUR, MIN, DAY = 3600 * 10**6, 60 * 10**6, 86400 * 10**6

QUERIES = {
    "v_ilike": ("SELECT id, s ILIKE '%a%' AS a1, s ILIKE 'apple%' AS a2, s NOT ILIKE 'x_z' AS a3, "
                "s ILIKE '%E' AS a4, s ILIKE '%X%%' ESCAPE 'X' AS a5, "
                "s ILIKE '%!_' ESCAPE '!' AS a6 FROM t",
                "SELECT id, lower(s) LIKE lower('%a%'), lower(s) LIKE 'apple%', "
                "NOT (lower(s) LIKE 'x_z'), lower(s) LIKE lower('%E'), "
                "lower(s) LIKE '%x%%' ESCAPE 'x', lower(s) LIKE '%!_' ESCAPE '!' FROM t"),
    "v_position_trim": ("SELECT id, POSITION('a' IN s) AS p1, POSITION('xx' IN s) AS p2, "
                        "TRIM(s) AS t0, TRIM(BOTH 'x' FROM s) AS t1, TRIM(LEADING 'x ' FROM s) AS t2, "
                        "TRIM(TRAILING FROM s) AS t3, LTRIM(s) AS t4, RTRIM(s, 'x') AS t5 FROM t",
                        "SELECT id, instr(s, 'a'), instr(s, 'xx'), trim(s), trim(s, 'x'), "
                        "ltrim(s, 'x '), rtrim(s), ltrim(s), rtrim(s, 'x') FROM t"),
    "v_left_right": ("SELECT id, LEFT(s, n) AS l, RIGHT(s, n) AS r, LEFT(s, 2) AS l2 FROM t",
                     "SELECT id, CASE WHEN s IS NULL THEN NULL WHEN n <= 0 THEN '' "
                     "ELSE substr(s, 1, n) END, CASE WHEN s IS NULL THEN NULL WHEN n <= 0 THEN '' "
                     "WHEN n >= length(s) THEN s ELSE substr(s, -n) END, "
                     "substr(s, 1, 2) FROM t"),
    "v_concat": ("SELECT id, CONCAT(s, '-', n) AS c1, s || id AS c2, CONCAT(UPPER(s)) AS c3 FROM t",
                 "SELECT id, s || '-' || n, s || id, upper(s) FROM t"),
    "v_initcap": ("SELECT id, INITCAP(s) AS ic FROM t", py_initcap),
    "v_date_days": ("SELECT id, d + INTERVAL '1' DAY AS d1, d - INTERVAL '30' DAY AS d2, "
                    "INTERVAL '2' DAY + d AS d3, d + INTERVAL '2' HOUR AS d4, "
                    "d - INTERVAL '1 01:30:00' DAY TO SECOND AS d5 FROM t",
                    "SELECT id, date(d, '+1 day'), date(d, '-30 days'), date(d, '+2 days'), "
                    "strftime('%s', d, '+2 hours'), "
                    "strftime('%s', d, '-1 days', '-1 hours', '-30 minutes') FROM t" % (TSF, TSF)),
    "v_ts_arith": ("SELECT id, ts + INTERVAL '90' MINUTE AS t1, ts - INTERVAL '10' SECOND AS t2, "
                   "ts + INTERVAL '1 02:03:04.5' DAY TO SECOND AS t3, "
                   "ts - INTERVAL '1.25' SECOND AS t4, ts + INTERVAL '3' HOUR * 2 AS t5 FROM t",
                   "SELECT id, strftime('{0}', ts, '+90 minutes'), strftime('{0}', ts, '-10 seconds'), "
                   "strftime('{0}', ts, '+1 days', '+2 hours', '+3 minutes', '+4.5 seconds'), "
                   "strftime('{0}', ts, '-1.25 seconds'), strftime('{0}', ts, '+6 hours') "
                   "FROM t".format(TSF)),
    "v_time": ("SELECT id, CAST(ts AS TIME) + INTERVAL '2' HOUR AS a, "
               "CAST(ts AS TIME) - INTERVAL '90' MINUTE AS b, "
               "INTERVAL '1 00:00:01' DAY TO SECOND + CAST(ts AS TIME) AS c FROM t",
               "SELECT id, strftime('%H:%M:%f', ts, '+2 hours'), strftime('%H:%M:%f', ts, "
               "'-90 minutes'), strftime('%H:%M:%f', ts, '+1 seconds') FROM t"),
    "v_months": ("SELECT id, d + INTERVAL '1' MONTH AS m1, d - INTERVAL '1-1' YEAR TO MONTH AS m2, "
                 "ts + INTERVAL '1' YEAR AS m3, INTERVAL '14' MONTH + d AS m4 FROM t", py_months),
    "v_trunc": ("SELECT id, DATE_TRUNC('month', d) AS a, DATE_TRUNC(d, YEAR) AS b, "
                "DATE_TRUNC('week', d) AS c, DATE_TRUNC('day', ts) AS e, "
                "DATE_TRUNC('hour', ts) AS f, DATE_TRUNC(ts, MINUTE) AS g, "
                "DATE_TRUNC('month', ts) AS h FROM t",
                "SELECT id, date(d, 'start of month'), date(d, 'start of year'), "
                "date(d, '-6 days', 'weekday 1'), strftime('{0}', ts, 'start of day'), "
                "strftime('%Y-%m-%d %H:00:00', ts), strftime('%Y-%m-%d %H:%M:00', ts), "
                "strftime('{0}', ts, 'start of month') FROM t".format(TSF)),
    "v_extract": ("SELECT id, EXTRACT(QUARTER FROM d) AS q, EXTRACT(MILLISECOND FROM ts) AS ms, "
                  "EXTRACT(YEAR FROM ts + INTERVAL '12' HOUR) AS y, EXTRACT(DOW FROM d) AS w FROM t",
                  "SELECT id, (CAST(strftime('%m', d) AS INT) + 2) / 3, "
                  "CAST(round(strftime('%f', ts) * 1000) AS INT), "
                  "CAST(strftime('%Y', ts, '+12 hours') AS INT), CAST(strftime('%w', d) AS INT) "
                  "FROM t"),
    "v_week": ("SELECT id, EXTRACT(WEEK FROM d) AS wk FROM t", py_week),
    "v_diff": ("SELECT id, ts - TIMESTAMP '%s' AS iv, TIMESTAMPDIFF(DAY, TIMESTAMP '%s', ts) AS dd, "
               "TIMESTAMPDIFF(HOUR, TIMESTAMP '%s', ts) AS hh, "
               "TIMESTAMPDIFF(MONTH, TIMESTAMP '%s', ts) AS mm FROM t" % (REF, REF, REF, REF),
               py_diff),
    "v_cmp": ("SELECT id FROM t WHERE ts - TIMESTAMP '2000-01-01 00:00:00' > INTERVAL '3650' DAY "
              "AND ts < TIMESTAMP '2020-01-01 00:00:00' + INTERVAL '1' DAY",
              "SELECT id FROM t WHERE ts > '2009-12-29 00:00:00' AND ts < '2020-01-02 00:00:00'"),
    "v_tumble": ("SELECT id, ts, window_start, window_end FROM "
                 "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR))", py_tumble(HOUR)),
    "v_tumble_off": ("SELECT w.id, w.ts, w.window_start, w.window_end FROM "
                     "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' DAY, INTERVAL '6' HOUR)) AS w",
                     py_tumble(DAY, 6 * HOUR)),
    "v_hop": ("SELECT id, window_start, window_end FROM "
              "TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '20' MINUTE, INTERVAL '1' HOUR))",
              py_hop(20 * MIN, HOUR)),
    "v_hop_agg": ("SELECT window_start, COUNT(*) AS n FROM "
                  "TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' DAY, INTERVAL '7' DAY)) "
                  "GROUP BY window_start", py_hop_counts(DAY, 7 * DAY)),
}

TS_TYPES = ("TIMESTAMP",)


# ------------------------------------------------------------- data

def gen_rows(seed):
    rnd = random.Random(seed)
    special_dates = ["2024-02-29", "2024-01-31", "2023-01-31", "2000-02-29", "1969-12-31",
                     "1970-01-01", "2021-01-03", "2024-12-30", "1968-02-29", "2030-12-31"]

    def maybe(v):
        return None if rnd.random() < 0.1 else v

    rows = []
    for i in range(1, N + 1):
        if rnd.random() < 0.3:
            d = rnd.choice(special_dates)
        else:
            d = (datetime.date(1960, 1, 1) + datetime.timedelta(days=rnd.randrange(25500))).isoformat()
        base = datetime.datetime(1965, 1, 1) + datetime.timedelta(seconds=rnd.randrange(70 * 365 * 86400))
        if rnd.random() < 0.2:
            base = base.replace(minute=0, second=0)
            ms = 0
        else:
            ms = rnd.randrange(1000)
        ts = base.strftime("%Y-%m-%d %H:%M:%S") + (".%03d" % ms if ms else "")
        rows.append({"id": i, "s": maybe(rnd.choice(STRINGS)), "n": maybe(rnd.randint(-2, 8)),
                     "d": maybe(d), "ts": maybe(ts)})
    dels = rnd.sample(rows, NDEL)
    return rows, dels


# ------------------------------------------------------------- fixture

class World:
    pass


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: "seed%d" % s)
def world(request, tmp_path_factory, sluice):
    w = World()
    d = str(tmp_path_factory.mktemp("timevs%d" % request.param))
    rows, dels = gen_rows(request.param)
    with open(os.path.join(d, "t.json"), "w") as f:
        for r in rows:
            f.write(json.dumps({"insert": r}) + "\n")
        for r in dels:
            f.write(json.dumps({"delete": r}) + "\n")
    gone = {r["id"] for r in dels}
    w.rows = [r for r in rows if r["id"] not in gone]
    w.db = sqlite3.connect(":memory:")
    w.db.execute("PRAGMA case_sensitive_like = ON")
    w.db.execute("CREATE TABLE t (id INTEGER, s TEXT, n INTEGER, d TEXT, ts TEXT)")
    w.db.executemany("INSERT INTO t VALUES (?,?,?,?,?)",
                     [(r["id"], r["s"], r["n"], r["d"], r["ts"]) for r in w.rows])
    base = T_DDL % json_input(os.path.join(d, "t.json"))
    w.compile_errors = {}
    ok = []
    for name in QUERIES:
        prog = os.path.join(d, "check_%s.sql" % name)
        with open(prog, "w") as f:
            f.write(base + "\nCREATE MATERIALIZED VIEW %s AS\n%s;\n" % (name, QUERIES[name][0]))
        p = run(["check", prog])
        if p.returncode:
            w.compile_errors[name] = p.stderr.strip()
        else:
            ok.append(name)
    w.program = os.path.join(d, "program.sql")
    with open(w.program, "w") as f:
        f.write(base + "\n" + "\n".join("CREATE MATERIALIZED VIEW %s AS\n%s;" % (n, QUERIES[n][0])
                                        for n in ok) + "\n")
    w.types = relation_types(run_ok(["check", w.program]).stdout)
    w.runs, w.dumps = {}, {}
    for key, workers in (("w1", 1), ("w3", 3)):
        out = os.path.join(d, "dump_" + key)
        w.runs[key] = run(["run", w.program, "--workers", workers, "--until-done", "--dump", out,
                           "--no-progress", "--step-rows", STEP_ROWS])
        w.dumps[key] = out
    run_on_hosts(w, w.program, d, STEP_ROWS, request.param, SEEDS)
    return w


def norm(v, ty):
    if ty.startswith("TIMESTAMP"):
        return norm_ts(v)
    if ty == "TIME" and v is not None:
        return norm_ts("2000-01-01 " + v)[11:]
    if ty.startswith("BOOL") and isinstance(v, int):
        return bool(v)
    return v


def compare(world, name, key):
    if name in world.compile_errors:
        pytest.fail("sluice check rejected %s:\n%s" % (name, world.compile_errors[name]))
    p = world.runs[key]
    assert p.returncode == 0, "run failed:\n" + p.stderr[-4000:]
    cols = world.types[name]
    header, recs = read_dump(os.path.join(world.dumps[key], name + ".csv"))
    assert [h.lower() for h in header] == [c[0] for c in cols]
    actual = [tuple(norm(convert_text(v, cols[i][1]), cols[i][1]) for i, v in enumerate(r))
              for r in recs]
    ref = QUERIES[name][1]
    if callable(ref):
        exp = ref(world.rows)
    else:
        exp = list(world.db.execute(ref))
    expected = [tuple(norm(v, cols[i][1]) for i, v in enumerate(r)) for r in exp]
    assert expected, "test data makes %s empty" % name
    diff = multiset_diff(actual, expected)
    assert diff is None, "view %s (%s) differs\n%s\n%s" % (name, key, QUERIES[name][0], diff)


@pytest.mark.parametrize("name", list(QUERIES))
def test_view_w1(world, name):
    compare(world, name, "w1")


@pytest.mark.parametrize("name", list(QUERIES))
def test_view_w3(world, name):
    compare(world, name, "w3")


def test_dumps_identical_across_hosts(world):
    """--hosts 2 and --hosts 3 with 3 workers give the dump of --workers 3."""
    reason = mpirun_missing()
    if reason:
        pytest.skip(reason)
    check_dumps_identical_across_hosts(world, "w3")


def test_result_types(world):
    t = {n: [c[1] for c in cols] for n, cols in world.types.items()}
    assert t["v_diff"][1] == "INTERVAL DAY TO SECOND"
    assert t["v_date_days"][1:] == ["DATE", "DATE", "DATE", "TIMESTAMP", "TIMESTAMP"]
    assert t["v_months"][1:] == ["DATE", "DATE", "TIMESTAMP", "DATE"]
    assert t["v_tumble"][2:] == ["TIMESTAMP", "TIMESTAMP"]
    assert t["v_ilike"][1] == "BOOLEAN"


# ------------------------------------------------------------- errors

ERRORS = [
    ("SELECT d - d AS x FROM t", "TIMESTAMPDIFF(DAY, a, b)"),
    ("SELECT CURRENT_DATE AS x FROM t", "CURRENT_DATE is not supported"),
    ("SELECT id FROM t WHERE ts = NOW()", "only in a view's temporal filter"),
    ("SELECT INTERVAL '1:2' DAY AS x FROM t", "invalid INTERVAL '1:2' DAY"),
    ("SELECT INTERVAL '1' FORTNIGHT AS x FROM t", "interval unit"),
    ("SELECT DATE_TRUNC('eon', d) AS x FROM t", "needs a unit"),
    ("SELECT d + 1 AS x FROM t", "operator + is not defined for DATE and INT"),
    ("SELECT * FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '40' MINUTE, INTERVAL '1' HOUR))",
     "HOP size must be a multiple of its slide"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(d), INTERVAL '1' HOUR))",
     "must be a TIMESTAMP, not DATE"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), id))", "must be a constant INTERVAL"),
    ("SELECT * FROM TABLE(SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR))",
     "table function session is not supported yet"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(nope), INTERVAL '1' HOUR))",
     "column \"nope\" not found"),
]


@pytest.mark.parametrize("query,msg", ERRORS)
def test_errors_name_the_construct(tmp_path, sluice, query, msg):
    prog = tmp_path / "e.sql"
    prog.write_text(T_DDL % "" + "\nCREATE VIEW v AS " + query + ";\n")
    p = run(["check", str(prog)])
    assert p.returncode != 0
    assert msg.lower() in p.stderr.lower(), p.stderr
    assert "e.sql:2:" in p.stderr, p.stderr  # line and column

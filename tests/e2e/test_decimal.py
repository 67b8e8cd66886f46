"""Exact decimals (docs/sql.md, types): NUMERIC without a precision keeps
0.05 exactly and a million of them sum to 50000 exactly; a value with more
integer digits than its DECIMAL(p,s) allows is a per-record error while the
other records go on; extra fraction digits round half away from zero; the
answers of tests/slt/decimal.test agree with PostgreSQL 15.

Expected values are computed here with Python's decimal module or by
PostgreSQL itself, never taken from an earlier Sluice run.
"""
import os
import re
import subprocess
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation, getcontext

import pytest

from conftest import conn_clause, read_dump, run_ok

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT_FILE = os.path.join(ROOT, "tests", "slt", "decimal.test")
SLT_DBG = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
RELEASE = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))
getcontext().prec = 120  # 38-digit values and their products, exactly
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def slt(args):
    p = subprocess.run([SLT_DBG] + args, capture_output=True, text=True, timeout=600)
    m = FINAL.findall(p.stdout)
    assert m, p.stdout[-2000:] + p.stderr[-2000:]
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    return p, tuple(int(x) for x in m[-1])


@pytest.mark.parametrize("mode", [[], ["--incremental", "--check-steps", "--workers", "3"]],
                         ids=["snapshot", "incremental-w3"])
def test_decimal_slt_file_passes(mode):
    p, (passed, failed, skipped) = slt(["--verbose"] + mode + [SLT_FILE])
    assert failed == 0, p.stdout
    assert passed >= 30


def parse_slt(path):
    """(kind, sql, types, sort, expected values, pg annotation) per record."""
    recs, lines, i = [], open(path).read().split("\n"), 0
    note = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("# pg"):
            note = line[2:].strip()
        if line.startswith("statement "):
            sql = []
            i += 1
            while i < len(lines) and lines[i].strip():
                sql.append(lines[i])
                i += 1
            recs.append(("statement", "\n".join(sql), line.split()[1], None, None, None))
            continue
        if line.startswith("query "):
            head = line.split()
            types, sort = head[1], head[2] if len(head) > 2 else "nosort"
            sql = []
            i += 1
            while lines[i] != "----":
                sql.append(lines[i])
                i += 1
            i += 1
            vals = []
            while i < len(lines) and lines[i].strip():
                vals.append(lines[i])
                i += 1
            recs.append(("query", "\n".join(sql), types, sort, vals, note))
            note = None
            continue
        i += 1
    return recs


def as_value(v):
    try:
        return Decimal(v)
    except InvalidOperation:
        return v


def pg_matches(ours, theirs, note):
    """Our printed value against PostgreSQL's: equal as numbers; with
    "pg: round" PostgreSQL's exact value is first rounded half away from
    zero to our scale."""
    if ours == "NULL" or theirs is None:
        return ours == "NULL" and theirs is None
    a, b = as_value(ours), as_value(theirs)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        if note == "pg: round":
            b = b.quantize(Decimal(1).scaleb(a.as_tuple().exponent), rounding=ROUND_HALF_UP)
        return a == b
    return a == b


def test_decimal_slt_answers_agree_with_postgres(pg):
    pg.psql("DROP TABLE IF EXISTS acct; DROP TABLE IF EXISTS rate;")
    checked = 0
    for kind, sql, arg, sort, vals, note in parse_slt(SLT_FILE):
        if kind == "statement":
            if arg == "ok":
                pg.psql(sql)
            continue  # our errors are overflows past 38 digits: PostgreSQL has no limit
        if note and note.startswith("pg-sql:"):
            sql, note = note[len("pg-sql:"):].strip(), None
        rows = pg.query(sql)
        width = len(arg)
        ours = [vals[k:k + width] for k in range(0, len(vals), width)]
        if sort == "rowsort":  # match rows by their first column (an id or a key)
            key = lambda r: as_value(r[0]) if r[0] not in ("NULL", None) else Decimal(-10**40)
            ours.sort(key=key)
            rows.sort(key=key)
        assert len(ours) == len(rows), (sql, ours, rows)
        for o, t in zip(ours, rows):
            assert all(pg_matches(x, y, note) for x, y in zip(o, t)), (sql, o, t)
        checked += 1
    assert checked >= 25


def test_numeric_keeps_values_exact_and_overflow_is_a_per_record_error(tmp_path):
    """1M records of 0.05 into NUMERIC sum to 50000 exactly; DECIMAL(5,2)
    rounds 1.005 to 1.01 (half away from zero) and rejects 1234.5 (four
    integer digits) as a bad record while every other record is applied."""
    n = 1000000
    bad = {250001, 750001}  # line numbers (1-based) of the records that overflow
    path = tmp_path / "in.csv"
    with open(path, "w") as f:
        for line in range(1, n + len(bad) + 1):
            f.write("0.05,1234.5\n" if line in bad else "0.05,1.005\n")
    clause = conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                           "format": {"name": "csv"}}])
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (x NUMERIC, y DECIMAL(5,2)) %s;\n" % clause +
        "CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(x) AS sx, SUM(y) AS sy, "
        "MIN(y) AS lo, MAX(y) AS hi, AVG(x) AS ax FROM t;\n")
    dump = tmp_path / "dump"
    p = run_ok(["run", prog, "--until-done", "--no-progress", "--workers", "2", "--dump", dump],
               binary=RELEASE, timeout=600)
    _, rows = read_dump(dump / "agg.csv")
    assert len(rows) == 1
    cnt, sx, sy, lo, hi, ax = rows[0]
    assert int(cnt) == n
    assert Decimal(sx) == Decimal("0.05") * n and sx == "50000.000000000000000000"
    assert Decimal(sy) == Decimal("1.005").quantize(Decimal("0.01"), ROUND_HALF_UP) * n
    assert (lo, hi) == ("1.01", "1.01")
    assert Decimal(ax) == Decimal("0.05")
    reported = sorted(int(l.split(" line ")[1].split(":")[0]) for l in p.stderr.splitlines()
                      if " line " in l and "file_input" in l)
    assert reported == sorted(bad), p.stderr[-3000:]
    assert "out of range for DECIMAL(5,2)" in p.stderr


def test_wide_decimals_over_the_postgresql_wire_protocol(http_pipeline):
    """psql (text format) inserts NUMERIC and DECIMAL(38,4) values through
    `--pg` and reads them back and their sums: every digit arrives."""
    import shutil
    psql = shutil.which("psql")
    if not psql:
        pytest.skip("psql (postgresql-client) is not installed")
    p = http_pipeline("CREATE TABLE w (id INT NOT NULL PRIMARY KEY, x NUMERIC, "
                      "y DECIMAL(38,4)) WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW s AS SELECT SUM(x) AS sx, SUM(y) AS sy FROM w;\n",
                      "--pg", "127.0.0.1:0")

    def port():
        m = re.search(r"sluice: pg: listening on 127\.0\.0\.1:(\d+)", p.stderr())
        return int(m.group(1)) if m else None
    from conftest import wait_until
    pgport = wait_until(port, "sluice printing its pg port", poll=0.01)
    rows = [(1, "0.05", "1234567890123456789012345678901234.5678"),
            (2, "12345678901234567890.123456789012345678", "-0.0001"),
            (3, "-0.000000000000000001", "-999999999999999999999999999999999.9999")]

    def run(sql):
        r = subprocess.run([psql, "-X", "-h", "127.0.0.1", "-p", str(pgport), "-U", "tester",
                            "-d", "x", "-A", "-t", "-F", ",", "-v", "ON_ERROR_STOP=1", "-c", sql],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PGCONNECT_TIMEOUT="30"))
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
    run("INSERT INTO w VALUES " + ", ".join("(%d, %s, %s)" % r for r in rows))
    got = run("SELECT id, x, y FROM w ORDER BY id").splitlines()
    assert [tuple(l.split(",")) for l in got] == [
        (str(i), format(Decimal(x).quantize(Decimal(1).scaleb(-18)), "f"),
         format(Decimal(y).quantize(Decimal("0.0001")), "f")) for i, x, y in rows]
    sx, sy = run("SELECT sx, sy FROM s").split(",")
    assert Decimal(sx) == sum(Decimal(r[1]) for r in rows)
    assert Decimal(sy) == sum(Decimal(r[2]) for r in rows)
    p.stop()


def test_json_ingress_and_output_keep_every_digit(http_pipeline):
    """JSON numbers and strings into NUMERIC and DECIMAL(38,4) over HTTP
    ingress; a value with too many integer digits is a bad record listed
    with its line, the others are applied; /query in CSV and JSON gives the
    digits back."""
    from httpkit import ingress, lines, query
    p = http_pipeline("CREATE TABLE j (id INT NOT NULL, x NUMERIC, y DECIMAL(38,4)) "
                      "WITH ('materialized' = 'true');\n"
                      "CREATE MATERIALIZED VIEW s AS SELECT SUM(x) AS sx, SUM(y) AS sy FROM j;\n")
    body = ('{"id": 1, "x": 0.05, "y": 1234567890123456789012345678901234.56785}\n'
            '{"id": 2, "x": "-12345678901234567890.123456789012345678", "y": "-0.00005"}\n'
            '{"id": 3, "x": 123456789012345678901, "y": 1}\n'
            '{"id": 4, "x": 1e-18, "y": 99999999999999999999999999999999999999}\n')
    r = ingress(p, "j", body, wait="true")
    assert r["accepted"] == 2, r
    assert sorted(e["line"] for e in r["errors"]) == [3, 4], r
    assert all("out of range" in e["reason"] for e in r["errors"]), r
    got = query(p, "SELECT id, x, y FROM j ORDER BY id", fmt="csv").splitlines()
    assert got == ["id,x,y", "1,0.050000000000000000,1234567890123456789012345678901234.5679",
                   "2,-12345678901234567890.123456789012345678,-0.0001"]
    sx, sy = query(p, "SELECT sx, sy FROM s", fmt="csv").splitlines()[1].split(",")
    assert Decimal(sx) == Decimal("0.05") - Decimal("12345678901234567890.123456789012345678")
    assert Decimal(sy) == Decimal("1234567890123456789012345678901234.5679") - Decimal("0.0001")
    import requests
    js = requests.get(p.url("/query"), params={"sql": "SELECT y FROM j WHERE id = 1",
                                               "format": "json"}, timeout=60).text
    assert js.replace(" ", "").strip() == '{"y":1234567890123456789012345678901234.5679}', js
    p.stop()


def test_datagen_fills_wide_decimal_columns(tmp_path):
    """datagen generates NUMERIC (DECIMAL(38,18)) and DECIMAL(30,2) columns
    as DECIMAL(18, min(s, 6)) values widened exactly: increment over
    [0, 1000) sums to 499500, uniform over [1.5, 2.5) stays in it."""
    cfg = {"seed": 1, "plan": [{"limit": 1000, "fields": {
        "x": {"strategy": "increment", "range": [0, 1000]},
        "y": {"strategy": "uniform", "range": [1.5, 2.5]}}}]}
    clause = conn_clause([{"transport": {"name": "datagen", "config": cfg}}])
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (x NUMERIC, y DECIMAL(30,2)) %s;\n" % clause +
                    "CREATE MATERIALIZED VIEW s AS SELECT COUNT(*) AS n, SUM(x) AS sx, "
                    "MIN(y) AS lo, MAX(y) AS hi, COUNT(DISTINCT y) AS dy FROM t;\n")
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--no-progress", "--workers", "2", "--dump", dump])
    _, rows = read_dump(dump / "s.csv")
    n, sx, lo, hi, dy = rows[0]
    assert int(n) == 1000 and sx == "499500.000000000000000000"
    assert Decimal("1.50") <= Decimal(lo) and Decimal(hi) <= Decimal("2.49") and int(dy) > 50


# ------------------------------------------------- random arithmetic vs Python

def dec_type_of_op(op, t1, t2):
    """The result type docs/sql.md gives for t1 op t2 (t = (p, s))."""
    (p1, s1), (p2, s2) = t1, t2
    if op in "+-%":
        s = max(s1, s2)
        p = min(38, max(p1 - s1, p2 - s2) + s + (1 if op in "+-" else 0))
        return p, s
    if op == "*":
        p, s = p1 + p2, s1 + s2
    else:
        s = max(s1, s2, 6)
        p = p1 - s1 + s2 + s
    if p > 38:
        s = min(s, max(min(s, 6), 38 - (p - s)))
        p = 38
    return p, s


class Overflow(Exception):
    pass


def fit(v, t, rounding):
    """v at scale t[1] (rounded as given), or Overflow past t's digits."""
    q = v.quantize(Decimal(1).scaleb(-t[1]), rounding=rounding)
    if abs(q) >= Decimal(10) ** (t[0] - t[1]):
        raise Overflow()
    return q


def model(op, a, t1, b, t2):
    """Python's exact decimal arithmetic with Sluice's documented typing and
    rounding: None for NULL (division by zero); Overflow raised."""
    if a is None or b is None:
        return None
    t = dec_type_of_op(op, t1, t2)
    if op in "+-%":
        x, y = fit(a, t, ROUND_HALF_UP), fit(b, t, ROUND_HALF_UP)  # exact: scales only grow
        if op == "%":
            return None if y == 0 else fit(x % y, t, ROUND_HALF_UP)
        return fit(x + y if op == "+" else x - y, t, ROUND_HALF_UP)
    if op == "*":
        return fit(a * b, t, ROUND_HALF_UP)
    return None if b == 0 else fit(a / b, t, ROUND_DOWN)


def text_of(v, scale):
    if v is None:
        return "NULL"
    v = v.quantize(Decimal(1).scaleb(-scale))
    return format(abs(v) if v == 0 else v, "f")


def test_random_decimal_arithmetic_matches_python(tmp_path):
    """Random values of DECIMAL(38,10), (30,20), (18,4) and (12,6) (wide
    and 64-bit, digits up to the type's limit, zeros, negatives) through
    + - * / % of every pair of columns, checked row by row against Python's
    decimal module under the result types and rounding of docs/sql.md; a
    query that overflows anywhere must fail. Run in both slt modes."""
    import random
    rnd = random.Random(20261203)
    cols = {"a": (38, 10), "b": (30, 20), "c": (18, 4), "d": (12, 6)}

    def value(t):
        p, s = t
        k = rnd.choice([0, 1, 3, p // 2, p - 2, p])  # digits
        if k == 0:
            return Decimal(0)
        m = rnd.randrange(10 ** (k - 1), 10 ** k) * rnd.choice([1, -1])
        return Decimal(m).scaleb(-s)
    rows = [{c: (None if rnd.random() < 0.05 else value(t)) for c, t in cols.items()}
            for _ in range(60)]
    lines = ["hash-threshold 100000", "", "statement ok",
             "CREATE TABLE r(id INTEGER, %s)" % ", ".join(
                 "%s DECIMAL(%d,%d)" % (c, t[0], t[1]) for c, t in cols.items()), ""]
    for i, r in enumerate(rows):
        vals = ", ".join("NULL" if r[c] is None else text_of(r[c], cols[c][1]) for c in cols)
        lines += ["statement ok", "INSERT INTO r VALUES(%d, %s)" % (i, vals), ""]
    nq = nerr = 0
    for x in cols:
        for y in cols:
            for op in "+-*/%":
                t = dec_type_of_op(op, cols[x], cols[y])
                sql = "SELECT id, %s %s %s FROM r ORDER BY id" % (x, op, y)
                try:
                    out = [text_of(model(op, r[x], cols[x], r[y], cols[y]), t[1]) for r in rows]
                except Overflow:
                    lines += ["statement error", sql, ""]
                    nerr += 1
                    continue
                lines += ["query IT nosort", sql, "----"]
                for i, v in enumerate(out):
                    lines += [str(i), v]
                lines.append("")
                nq += 1
    for x in cols:  # comparisons across widths and scales, and casts that round
        for y in cols:
            sql = "SELECT id, %s < %s, %s = %s FROM r ORDER BY id" % (x, y, x, y)
            lines += ["query ITT nosort", sql, "----"]
            for i, r in enumerate(rows):
                a, b = r[x], r[y]
                lines += [str(i)] + (["NULL", "NULL"] if a is None or b is None else
                                     [str(int(a < b)), str(int(a == b))])
            lines.append("")
            nq += 1
        for t in ((20, 3), (38, 0), (10, 9)):
            sql = "SELECT id, CAST(%s AS DECIMAL(%d,%d)) FROM r ORDER BY id" % ((x,) + t)
            try:
                out = [text_of(None if r[x] is None else fit(r[x], t, ROUND_HALF_UP), t[1])
                       for r in rows]
            except Overflow:
                lines += ["statement error", sql, ""]
                nerr += 1
                continue
            lines += ["query IT nosort", sql, "----"]
            for i, v in enumerate(out):
                lines += [str(i), v]
            lines.append("")
            nq += 1
    path = tmp_path / "random_decimal.test"
    path.write_text("\n".join(lines))
    assert nq >= 40, (nq, nerr)
    for mode in ([], ["--incremental", "--workers", "2"]):
        p, (passed, failed, skipped) = slt(["--verbose"] + mode + [str(path)])
        assert failed == 0, p.stdout[-6000:]
        assert passed == 1 + len(rows) + nq + nerr

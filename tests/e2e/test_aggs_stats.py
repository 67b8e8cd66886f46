"""STDDEV/VARIANCE (_SAMP/_POP), COVAR_POP/SAMP, CORR, MEDIAN, ANY_VALUE,
COUNT_IF and ARG_MIN/ARG_MAX (docs/sql.md, Aggregate functions) against
PostgreSQL 15 (pgserver.py), over seeded random inserts AND deletes.

  - one-shot runs of a file mixing inserts and deletes (deletes of rows
    inserted earlier, some re-inserted), with small steps (--step-rows 7)
    and one large step, on 1 and 3 workers: every view equals PostgreSQL's
    answer over the surviving rows (floats within a tight tolerance), and
    the four runs give exactly the same text (results independent of step
    boundaries and worker count);
  - over HTTP on 2 workers: batches inserted and deleted, each push
    waited for, the views compared with PostgreSQL after each;
  - exactness of retraction: rows of extreme magnitudes (1e15, 1e-9, ...)
    inserted then deleted leave exactly (bit for bit) the results of never
    having inserted them.
PostgreSQL lacks MEDIAN, ANY_VALUE, COUNT_IF and ARG_MIN/MAX: it is asked
the documented equivalents (PERCENTILE_CONT(0.5), MIN, COUNT(*) FILTER,
the first of an ordered ARRAY_AGG).
"""
import json
import math
import random

import pytest
import requests

from conftest import json_input, read_dump, run_ok
from httpkit import lines

AGGS = [  # (Sluice, PostgreSQL)
    ("STDDEV(x)", None), ("STDDEV_POP(x)", None), ("VARIANCE(x)", None), ("VAR_POP(x)", None),
    ("STDDEV_SAMP(y)", None), ("VAR_SAMP(y)", None), ("VAR_POP(d)", None), ("STDDEV(d)", None),
    ("COVAR_POP(y, x)", None), ("COVAR_SAMP(x, d)", None), ("CORR(y, x)", None),
    ("CORR(d, y)", None), ("VAR_SAMP(DISTINCT x)", None),
    ("MEDIAN(y)", "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY y)"),
    ("MEDIAN(x)", "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)"),
    ("ANY_VALUE(s)", "MIN(s)"), ("ANY_VALUE(x)", "MIN(x)"),
    ("COUNT_IF(b)", "COUNT(*) FILTER (WHERE b)"),
    ("COUNT_IF(x > 0)", "COUNT(*) FILTER (WHERE x > 0)"),
    ("ARG_MIN(s, x)", "(ARRAY_AGG(s ORDER BY x, s) "
                      "FILTER (WHERE s IS NOT NULL AND x IS NOT NULL))[1]"),
    ("ARG_MAX(s, x)", "(ARRAY_AGG(s ORDER BY x DESC, s) "
                      "FILTER (WHERE s IS NOT NULL AND x IS NOT NULL))[1]"),
    ("ARG_MIN(id, y)", "(ARRAY_AGG(id ORDER BY y, id) FILTER (WHERE y IS NOT NULL))[1]"),
    ("ARG_MAX(x, d)", "(ARRAY_AGG(x ORDER BY d DESC, x) "
                      "FILTER (WHERE x IS NOT NULL AND d IS NOT NULL))[1]"),
]
COLS = ["a%d" % i for i in range(len(AGGS))]


def view(pg, grouped):
    sel = ", ".join("%s AS %s" % ((p or s) if pg else s, c) for (s, p), c in zip(AGGS, COLS))
    if grouped:
        return "SELECT g, COUNT(*) AS c, %s FROM t GROUP BY g" % sel
    return "SELECT COUNT(*) AS c, %s FROM t" % sel


VIEWS = {"v_g": True, "v_all": False}
TABLE = ("CREATE TABLE t (id INT NOT NULL, g INT, x INT, y DOUBLE, d DECIMAL(12,3), "
         "s VARCHAR, b BOOLEAN)")


def program(inp):
    views = "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (n, view(False, g))
                      for n, g in VIEWS.items())
    return "%s %s;\n%s\n" % (TABLE, inp, views)


def gen_row(rng, i):
    def maybe(v):
        return None if rng.random() < 0.08 else v
    return {"id": i, "g": maybe(rng.randrange(5)), "x": maybe(rng.randrange(-1000, 1001)),
            "y": maybe(rng.choice([round(rng.uniform(-1e4, 1e4), 2), rng.randrange(3) * 0.1,
                                   1e6 + rng.randrange(100) / 8])),
            "d": maybe("%.3f" % (rng.randrange(-10 ** 7, 10 ** 7) / 1000)),
            "s": maybe("".join(rng.choice("abcdef") for _ in range(rng.randrange(1, 4)))),
            "b": maybe(rng.random() < 0.5)}


def gen_changes(seed, n):
    """A list of ("insert"|"delete", row) whose deletes remove live rows."""
    rng = random.Random(seed)
    live, out = [], []
    for i in range(n):
        if live and rng.random() < 0.35:
            r = live.pop(rng.randrange(len(live)))
            out.append(("delete", r))
            if rng.random() < 0.3:  # inserted again
                live.append(r)
                out.append(("insert", r))
        else:
            r = gen_row(rng, i)
            live.append(r)
            out.append(("insert", r))
    return out, live


def sql_lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'%s'" % v
    return repr(v)


def pg_answer(pg, rows, name):
    pg.query("DROP TABLE IF EXISTS t; " + TABLE.replace("DOUBLE", "DOUBLE PRECISION"))
    if rows:
        pg.query("INSERT INTO t VALUES " + ",".join(
            "(%s)" % ",".join(sql_lit(r[k]) for k in ("id", "g", "x", "y", "d", "s", "b"))
            for r in rows))
    return pg.query(view(True, VIEWS[name]))


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    try:
        fa, fb = float(a), float(b)
    except ValueError:
        return a == b
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    return abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb)) + 1e-6


def norm(v):
    if v is True or v is False:
        return str(v).lower()
    return None if v is None or v == "" else str(v)


def check(got, want, what):
    key = lambda r: (r[0] is None, float(r[0]) if r[0] is not None else 0)  # noqa: E731
    got, want = sorted(got, key=key), sorted(want, key=key)
    assert len(got) == len(want), "%s: %d rows, PostgreSQL %d" % (what, len(got), len(want))
    for g, w in zip(got, want):
        bad = [(h, a, b) for h, a, b in zip(["key", "c"] + COLS, g, w) if not close(a, b)]
        assert not bad, "%s differs from PostgreSQL in row %r: %r\n(aggregates: %r)" % (
            what, w[0], bad, [AGGS[COLS.index(h)][0] for h, _, _ in bad if h in COLS])


def run_file(tmp_path, changes, tag, *args):
    inp = tmp_path / ("t_%s.json" % tag)
    inp.write_text("".join(json.dumps({k: r}) + "\n" for k, r in changes))
    prog = tmp_path / ("p_%s.sql" % tag)
    prog.write_text(program(json_input(inp)))
    dump = tmp_path / ("dump_%s" % tag)
    run_ok(["run", prog, "--until-done", "--dump", dump, "--no-progress"] + list(args))
    return {n: read_dump(dump / ("%s.csv" % n))[1] for n in VIEWS}


@pytest.mark.parametrize("seed", [1, 2])
def test_random_inserts_and_deletes_equal_postgresql_whatever_the_steps(pg, tmp_path, seed):
    changes, live = gen_changes(seed, 400)
    runs = {}
    for workers in ("1", "3"):
        for step in ("7", "100000"):
            tag = "w%s_s%s" % (workers, step)
            runs[tag] = run_file(tmp_path, changes, tag, "--workers", workers, "--step-rows", step)
    for name in VIEWS:
        want = pg_answer(pg, live, name)
        for tag, res in runs.items():
            check([tuple(norm(v) for v in r) for r in res[name]], want, "%s (%s)" % (name, tag))
        texts = {tag: sorted(map(tuple, res[name]), key=repr) for tag, res in runs.items()}
        first = next(iter(texts.values()))
        for tag, t in texts.items():
            assert t == first, "%s: %s differs from the other runs" % (name, tag)


def query(p, name):
    r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM %s" % name,
                                              "format": "json"}, timeout=60)
    assert r.status_code == 200, r.text
    return [tuple(norm(v) for v in json.loads(l).values()) for l in r.text.splitlines()
            if l.strip()]


def push(p, kind, rows):
    r = requests.post(p.url("/ingress/t"), params={"wait": "true"},
                      data=lines(*[{kind: x} for x in rows]), timeout=120)
    assert r.status_code == 200, r.text


def test_inserts_and_deletes_over_http_equal_postgresql(pg, http_pipeline):
    prog = program("""WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')""")
    p = http_pipeline(prog, "--workers", "2")
    rng = random.Random(7)
    rows = [gen_row(rng, i) for i in range(240)]
    live = {}
    batches = [("insert", rows[:3]), ("insert", rows[3:150]), ("delete", rows[:2]),
               ("delete", rng.sample(rows[2:150], 60)), ("insert", rows[150:]),
               ("delete", rows[150:239]), ("insert", rows[:2])]
    for kind, batch in batches:
        push(p, kind, batch)
        for r in batch:
            if kind == "insert":
                live[r["id"]] = r
            else:
                live.pop(r["id"], None)
        for name in VIEWS:
            check(query(p, name), pg_answer(pg, list(live.values()), name),
                  "%s after a %s of %d rows (%d live)" % (name, kind, len(batch), len(live)))
    p.stop()


def test_retracting_extreme_values_leaves_exactly_the_state_before(http_pipeline):
    """Running sums of x and x^2 kept by adding and subtracting would keep
    the rounding errors of 1e15-sized rows after their deletion."""
    prog = program("""WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')""")
    p = http_pipeline(prog, "--workers", "2")
    rng = random.Random(11)
    base = [gen_row(rng, i) for i in range(60)]
    push(p, "insert", base)
    before = {n: sorted(query(p, n), key=str) for n in VIEWS}
    extreme = []
    for i in range(40):
        r = gen_row(rng, 1000 + i)
        r["y"] = rng.choice([1e15, -3e15, 1e-9, 123456789.123, 1e300 / 1e290]) * (i + 1)
        r["x"] = rng.choice([10 ** 9, -(10 ** 9) + 7, 2 ** 30])
        r["d"] = rng.choice(["999999999.999", "-999999999.999", "0.001"])
        extreme.append(r)
    push(p, "insert", extreme)
    during = {n: sorted(query(p, n), key=str) for n in VIEWS}
    assert during != before
    push(p, "delete", extreme[::2])
    push(p, "delete", extreme[1::2])
    after = {n: sorted(query(p, n), key=str) for n in VIEWS}
    assert after == before
    p.stop()

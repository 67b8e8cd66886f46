"""UNNEST anywhere in a FROM list and inside joins (CROSS JOIN, JOIN ... ON,
LATERAL, LEFT JOIN ... ON TRUE keeping NULL and empty arrays), UNNEST of several arrays (zipped, padded
with NULL), WITH ORDINALITY and array slices a[lo:hi] (issue 19;
docs/sql.md, "Arrays"), against PostgreSQL 15 (the `pg` fixture):
  - tests/slt/unnest.test (written by tests/slt/gen_unnest.py) in one-shot
    mode and incrementally with every step compared to a from-scratch run,
    on 1-3 workers;
  - random insert/update/delete streams over HTTP, every view compared with
    PostgreSQL after every step, on 1 and 2 workers;
  - the plans (`sluice check`) of FROM lists with tables before an UNNEST
    linked by WHERE: every join has keys (no cross product of the tables
    before the UNNEST; their results are in unnest.test);
  - the joins with UNNEST not built refused at line:column.
"""
import re
import json
import os
import random

import pytest
import requests

import sltfile
from conftest import multiset_diff, run, run_ok
from httpkit import lines

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "unnest.test")


@sltfile.modes()
def test_unnest_slt(args):
    sltfile.all_pass(args, CASE)


PUSHED = [
    "SELECT a.id, b.name, u.x FROM a, b, UNNEST(a.xs) AS u(x) WHERE a.id = b.id",
    "SELECT a.id, b.name, c.name AS cn, u.x FROM a, b, b AS c, UNNEST(a.xs) AS u(x) "
    "WHERE b.id = a.id AND c.id = b.id + 2 AND b.name <> 'two' AND u.x > 5",
    "SELECT a.id, u.x, c.name FROM b, a, UNNEST(a.xs) AS u(x), b AS c "
    "WHERE a.id = b.id AND c.id = u.x - 8 AND b.id < 5",
    "SELECT a.id, b.name, u.x FROM a, b, UNNEST(a.xs) WITH ORDINALITY AS u(x, n) "
    "WHERE a.id = b.id AND (b.name = 'one' OR u.x = 5) AND u.x > a.id * u.n",
    "SELECT a.id, u.x, w.s FROM b, a, UNNEST(a.xs) AS u(x), UNNEST(a.ss) AS w(s) "
    "WHERE a.id = b.id",
]


def test_where_joins_the_tables_before_an_unnest_by_keys(tmp_path):
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE a(id INTEGER, xs INTEGER ARRAY, ss VARCHAR ARRAY);\n"
                    "CREATE TABLE b(id INTEGER, name VARCHAR);\n" +
                    "".join("CREATE VIEW v%d AS %s;\n" % (i, q) for i, q in enumerate(PUSHED)))
    plan = run_ok(["check", prog]).stdout
    joins = re.findall(r"^ *\d+: join\(.*$", plan, re.M)
    assert len(joins) == 1 + 2 + 2 + 1 + 1, plan
    cross = [j for j in joins if " on " not in j]
    assert not cross, "cross products:\n%s\n%s" % ("\n".join(cross), plan)
    # the filters on b's columns apply to b before its joins, b.name <> 'two' among them
    assert re.search(r"^ *\d+: map\(1\) where \(.*<> 'two'", plan, re.M), plan


REFUSED = [  # (query, the text the error points at, what it says)
    ("SELECT a.id, u.x FROM a LEFT JOIN UNNEST(a.xs) AS u(x) ON u.x IN (SELECT id FROM a)",
     "IN (SELECT", "not supported"),
    # an UNNEST in a RIGHT, FULL, NATURAL or USING join reads no column of the other side
    ("SELECT a.id, u.x FROM a RIGHT JOIN UNNEST(a.xs) AS u(x) ON TRUE", "a.xs", "unknown"),
    ("SELECT a.id, u.x FROM a JOIN UNNEST(a.xs) AS u(id) USING (id)", "a.xs", "unknown"),
    ("SELECT a.id, s.x FROM a, LATERAL (SELECT 1 AS x) AS s", "LATERAL", "not supported"),
]


@pytest.mark.parametrize("query,at,says", REFUSED, ids=["left-on-subquery", "right", "using", "lateral-q"])
def test_unnest_joins_not_built_are_refused_at_their_place(tmp_path, query, at, says):
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE a(id INTEGER, xs INTEGER ARRAY);\nCREATE VIEW v AS\n%s;\n"
                    % query)
    p = run(["check", prog], timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    m = re.search(r":(\d+):(\d+): [a-z ]+: (.*)$", p.stderr, re.M)
    assert m, p.stderr
    assert (int(m.group(1)), int(m.group(2))) == (3, query.index(at) + 1), p.stderr
    assert says in m.group(3), p.stderr


def test_expected_results_are_postgresql_answers():
    sltfile.generator_agrees("gen_unnest.py")


DDL = "CREATE TABLE a (id INT, xs INT ARRAY, ys INT ARRAY)"
PG_DDL = "CREATE TABLE a (id INT, xs INT[], ys INT[])"
DDL_B = "CREATE TABLE b (k INT, name VARCHAR)"
VIEWS = {
    "v_mid": "SELECT a.id, u.x, b.name FROM a, UNNEST(a.xs) AS u(x), b WHERE b.k = u.x",
    "v_zip": "SELECT a.id, u.x, u.y, u.n FROM a, UNNEST(a.xs, a.ys) WITH ORDINALITY AS u(x, y, n)",
    "v_slice": "SELECT id, CARDINALITY(xs[2:3]) AS c, xs[2:3][1] AS f, xs[id % 3:] [1] AS g FROM a",
    "v_left": "SELECT a.id, u.x, u.n FROM a LEFT JOIN UNNEST(a.xs) WITH ORDINALITY AS u(x, n) "
              "ON TRUE",
    "v_left_on": "SELECT a.id, u.x, u.y, u.n FROM a LEFT JOIN UNNEST(a.xs, a.ys) WITH ORDINALITY "
                 "AS u(x, y, n) ON u.x > u.y OR u.y IS NULL",
    "v_join": "SELECT a.id, u.x, u.y, b.name FROM a JOIN LATERAL UNNEST(a.xs, a.ys) AS u(x, y) "
              "ON u.x >= u.y JOIN b ON b.k = u.x",
    "v_cross": "SELECT a.id, COUNT(*) AS c, SUM(u.x) AS s FROM a CROSS JOIN UNNEST(a.xs) AS u(x) "
               "GROUP BY a.id",
}
PG = {
    "v_slice": "SELECT id, CARDINALITY(xs[2:3]), (xs[2:3])[1], (xs[id % 3:])[1] FROM a",
}


def rand_arr(rng):
    if rng.random() < 0.1:
        return None
    return [None if rng.random() < 0.1 else rng.randrange(6) for _ in range(rng.randrange(5))]


def gen_stream(seed, steps):
    rng = random.Random(seed)
    live, out, nid = [], [], 0
    for s in range(steps):
        ch = []
        for _ in range(rng.randrange(1, 8)):
            x = rng.random()
            if x < 0.6 or not live:
                row = {"id": nid, "xs": rand_arr(rng), "ys": rand_arr(rng)}
                nid += 1
                live.append(row)
                ch.append(("insert", row))
            elif x < 0.8:
                ch.append(("delete", live.pop(rng.randrange(len(live)))))
            else:
                old = live.pop(rng.randrange(len(live)))
                new = {"id": old["id"], "xs": rand_arr(rng), "ys": old["ys"]}
                live.append(new)
                ch += [("delete", old), ("insert", new)]
        out.append((ch, list(live)))
    return out


def pg_arr(v):
    if v is None:
        return "NULL"
    return "ARRAY[%s]::INT[]" % ",".join("NULL" if x is None else str(x) for x in v)


def norm(v):
    return None if v is None or v == "" else str(v)


def pg_answers(pg, live):
    pg.query("DROP TABLE IF EXISTS a; " + PG_DDL)
    if live:
        pg.query("INSERT INTO a VALUES " + ",".join(
            "(%d,%s,%s)" % (r["id"], pg_arr(r["xs"]), pg_arr(r["ys"])) for r in live))
    return {n: [tuple(norm(v) for v in r) for r in pg.query(PG.get(n, q))]
            for n, q in VIEWS.items()}


@pytest.mark.parametrize("workers", [1, 2])
def test_random_streams_over_http_equal_postgresql_after_every_step(pg, http_pipeline, workers):
    conn = """WITH ('connectors' = '[{"transport": {"name": "http_input"}}]')"""
    views = "\n".join("CREATE MATERIALIZED VIEW %s AS %s;" % (n, q) for n, q in VIEWS.items())
    p = http_pipeline("%s %s;\n%s %s;\n%s\n" % (DDL, conn, DDL_B, conn, views),
                      "--workers", workers)
    names = [{"insert": {"k": k, "name": "n%d" % k}} for k in range(0, 6, 2)]
    r = requests.post(p.url("/ingress/b"), params={"wait": "true"}, data=lines(*names),
                      timeout=120)
    assert r.status_code == 200, r.text
    pg.query("DROP TABLE IF EXISTS b; %s; INSERT INTO b VALUES (0,'n0'),(2,'n2'),(4,'n4')"
             % DDL_B)
    checks = nonempty = 0
    for step, (ch, live) in enumerate(gen_stream(41 + workers, 12)):
        r = requests.post(p.url("/ingress/a"), params={"wait": "true"},
                          data=lines(*[{kind: row} for kind, row in ch]), timeout=120)
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
    assert checks == 12 * len(VIEWS) and nonempty >= 10 * len(VIEWS)
    p.stop()

"""Skewed joins against SQLite: half of the orders belong to one customer.

A join whose key is hot (src/circuit/op_join.c: the key's owner spreads
the rows of one side over the workers and copies the other side's rows of
that key to every worker) must give SQLite's answer and the same dump for
any worker count and step boundaries. The hot-key threshold is lowered
(SLUICE_SKEW_MIN_ROWS=50) so that keys turn hot at this small size.

orders and customers are JSON insert/delete streams: orders inserts (half
on customer 0) with deletes of earlier orders of customer 0 and of others
mixed in; customers inserts, then customer 0 deleted and inserted again in
another region, twice, late in the stream (so the hot key's small side
changes after its big side was split). Views: a join aggregated per
region, the plain join with the hot side left, and with it right. Runs:
1, 2 and 3 workers with small steps, 3 workers in one step, 2 workers with
other step sizes, and --hosts 2 --workers 3 when mpirun is on PATH.
"""
import json
import os
import random
import sqlite3
from collections import Counter

import pytest

from conftest import json_input, mpi_env, read_dump, run  # noqa: F401
from test_sql_vs_sqlite import mpirun_missing

NORDERS = 6000
NCUST = 1500

VIEWS = {
    "sales_by_region": "SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS n "
                       "FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region",
    "pairs": "SELECT o.id, o.amount, c.region FROM orders o JOIN customers c "
             "ON o.customer = c.id",
    "rpairs": "SELECT c.id, c.region, o.amount FROM customers c JOIN orders o "
              "ON c.id = o.customer WHERE o.amount > 50",
}

# name -> (extra arguments, environment of the run)
RUNS = {
    "w1": ["--workers", 1, "--step-rows", 400],
    "w2": ["--workers", 2, "--step-rows", 400],
    "w3": ["--workers", 3, "--step-rows", 400],
    "w3_onestep": ["--workers", 3],
    "w2_steps97": ["--workers", 2, "--step-rows", 97],
}


def gen(seed):
    rng = random.Random(seed)
    orders, live = [], []
    for i in range(NORDERS):
        cust = 0 if rng.random() < 0.5 else rng.randrange(1, NCUST)
        row = {"id": i, "customer": cust, "amount": rng.randrange(1, 100)}
        orders.append(("insert", row))
        live.append(row)
        if i % 7 == 3 and len(live) > 10:  # delete an earlier order (often customer 0's)
            victim = live.pop(rng.randrange(len(live)))
            orders.append(("delete", victim))
    custs = [("insert", {"id": c, "region": c % 7}) for c in range(NCUST)]
    # customer 0 moves region twice, late in the stream
    at = [NCUST // 2, NCUST - 100]
    for n, pos in enumerate(at):
        old = {"id": 0, "region": 0 if n == 0 else 3}
        new = {"id": 0, "region": 3 if n == 0 else 5}
        custs[pos:pos] = [("delete", old), ("insert", new)]
    return orders, custs


def final(events):
    c = Counter()
    for kind, r in events:
        c[tuple(sorted(r.items()))] += 1 if kind == "insert" else -1
    assert all(v >= 0 for v in c.values())
    return [dict(k) for k, v in c.items() for _ in range(v)]


@pytest.fixture(scope="module")
def world(tmp_path_factory, sluice):
    d = str(tmp_path_factory.mktemp("skew"))
    orders, custs = gen(4242)
    for name, events in (("orders", orders), ("customers", custs)):
        with open(os.path.join(d, name + ".json"), "w") as f:
            for kind, r in events:
                f.write(json.dumps({kind: r}) + "\n")
    prog = os.path.join(d, "skew.sql")
    with open(prog, "w") as f:
        f.write("CREATE TABLE orders (id BIGINT NOT NULL, customer INT NOT NULL, "
                "amount INT NOT NULL) %s;\n" % json_input(os.path.join(d, "orders.json")))
        f.write("CREATE TABLE customers (id INT NOT NULL, region INT NOT NULL) %s;\n"
                % json_input(os.path.join(d, "customers.json")))
        for name, q in VIEWS.items():
            f.write("CREATE MATERIALIZED VIEW %s AS %s;\n" % (name, q))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id INTEGER, customer INTEGER, amount INTEGER)")
    db.execute("CREATE TABLE customers (id INTEGER, region INTEGER)")
    db.executemany("INSERT INTO orders VALUES (?, ?, ?)",
                   [(r["id"], r["customer"], r["amount"]) for r in final(orders)])
    db.executemany("INSERT INTO customers VALUES (?, ?)",
                   [(r["id"], r["region"]) for r in final(custs)])
    w = {"db": db, "dir": d, "prog": prog, "runs": {}}
    os.environ["SLUICE_SKEW_MIN_ROWS"] = "50"
    try:
        for key, args in RUNS.items():
            out = os.path.join(d, "dump_" + key)
            w["runs"][key] = (run(["run", prog, "--until-done", "--no-progress", "--dump", out]
                                  + args), out)
        if not mpirun_missing():
            out = os.path.join(d, "dump_h2w3")
            w["runs"]["h2w3"] = (run(["run", prog, "--hosts", 2, "--workers", 3, "--until-done",
                                      "--no-progress", "--dump", out, "--step-rows", 400],
                                     timeout=300), out)
    finally:
        del os.environ["SLUICE_SKEW_MIN_ROWS"]
    return w


def dump_rows(path):
    header, recs = read_dump(path)
    return header, [tuple(int(v) for v in r) for r in recs]


@pytest.mark.parametrize("key", list(RUNS) + ["h2w3"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_skewed_join_view_matches_sqlite(world, view, key):
    if key not in world["runs"]:
        pytest.skip(mpirun_missing() or "no such run")
    p, out = world["runs"][key]
    assert p.returncode == 0, p.stderr[-3000:]
    _, rows = dump_rows(os.path.join(out, view + ".csv"))
    expected = [tuple(r) for r in world["db"].execute(VIEWS[view]).fetchall()]
    assert expected, "test data makes %s empty" % view
    assert Counter(rows) == Counter(expected), "%s (run %s) differs from SQLite" % (view, key)


def test_hot_customer_holds_half_the_orders(world):
    n0, n = world["db"].execute(
        "SELECT SUM(customer = 0), COUNT(*) FROM orders").fetchone()
    assert 0.4 < n0 / n < 0.6


def test_dumps_identical_for_any_steps_and_workers(world):
    ref = world["runs"]["w1"][1]
    for key, (p, out) in world["runs"].items():
        assert p.returncode == 0, p.stderr[-3000:]
        for view in VIEWS:
            with open(os.path.join(ref, view + ".csv"), "rb") as a, \
                    open(os.path.join(out, view + ".csv"), "rb") as b:
                assert a.read() == b.read(), "%s of run %s differs from w1's" % (view, key)

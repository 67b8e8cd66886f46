"""Join order: inner joins are ordered by connectivity (src/sql/plan.c), so a
FROM list written in an order where neighbours share no predicate does not
build their cross product.

A chain of 60 tables of 10 rows (t_i.b = t_{i+1}.a), written in a scrambled
order where no two neighbours are linked, compiles and runs with a peak
memory (the run's summary line) of a few hundred MB at most: joined in the
order written, the first 20 tables alone would be a cross product of 10^20
rows. The result is compared with SQLite's answer to the same query, and a
SELECT * over a scrambled chain keeps the columns in the written order.

The sqllogictest file tests/slt/join_order.test (chains, stars and cycles in
unconnected orders; expected results written by SQLite through
tests/slt/gen_join_order.py) runs in both modes of sluice-slt."""
import os
import re
import sqlite3
from collections import Counter

from conftest import csv_input, read_dump, run, run_ok, sluice_bin, write_csv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT_FILE = os.path.join(ROOT, "tests", "slt", "join_order.test")
SLT = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
REL = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)
PEAK = re.compile(r"peak memory ([0-9.]+) MB")

N = 60
ROWS = 10


def scrambled(n):
    """0..n-1 where no two neighbours are consecutive (7 is prime to 60)."""
    order = [(i * 7) % n for i in range(n)]
    assert sorted(order) == list(range(n))
    assert all(abs(x - y) != 1 for x, y in zip(order, order[1:]))
    return order


def table_rows(i):
    # a is a key; b maps it to another key, so every join is one to one
    return [(j, (j * 3 + i) % ROWS) for j in range(ROWS)]


def columns(i):
    # names unique over all tables: a SELECT * view needs distinct names
    return "a%d BIGINT NOT NULL, b%d BIGINT NOT NULL" % (i, i)


def chain_query(order, select):
    preds = " AND ".join("b%d = t%d.a%d" % (i, i + 1, i + 1)
                         for i in reversed(range(len(order) - 1)))
    return "SELECT %s FROM %s WHERE %s" % (select, ", ".join("t%d" % i for i in order), preds)


def test_sixty_table_chain_scrambled(tmp_path):
    order = scrambled(N)
    ddl, db = [], sqlite3.connect(":memory:")
    for i in range(N):
        path = tmp_path / ("t%d.csv" % i)
        write_csv(path, table_rows(i))
        ddl.append("CREATE TABLE t%d (%s) %s;" % (i, columns(i), csv_input(path)))
        db.execute("CREATE TABLE t%d (a%d INTEGER, b%d INTEGER)" % (i, i, i))
        db.executemany("INSERT INTO t%d VALUES (?, ?)" % i, table_rows(i))
    sel = "a0, t30.a30, t59.b59 AS last"
    q = chain_query(order, sel)
    q_star = chain_query(scrambled(10)[::-1], "*")  # t0..t9, another unconnected order
    prog = tmp_path / "chain.sql"
    prog.write_text("\n".join(ddl) + "\nCREATE MATERIALIZED VIEW v AS %s;\n"
                    "CREATE MATERIALIZED VIEW vstar AS %s;\n" % (q, q_star))
    out = tmp_path / "dump"
    # the release build: its peak memory is the engine's, not the sanitizers'
    p = run_ok(["run", prog, "--workers", 2, "--until-done", "--dump", out, "--no-progress"],
               binary=REL, timeout=600)
    m = PEAK.search(p.stderr)
    assert m, p.stderr[-2000:]
    assert float(m.group(1)) < 300, p.stderr[-2000:]
    for name, query in (("v", q), ("vstar", q_star)):
        _, recs = read_dump(os.path.join(out, name + ".csv"))
        got = Counter(tuple(int(x) for x in r) for r in recs)
        want = Counter(tuple(r) for r in db.execute(query))
        assert len(want) == ROWS
        assert got == want, (name, got, want)


def test_sixty_table_chain_compiles_under_sanitizers(tmp_path):
    order = scrambled(N)
    ddl = ["CREATE TABLE t%d (%s);" % (i, columns(i)) for i in range(N)]
    prog = tmp_path / "chain.sql"
    prog.write_text("\n".join(ddl) + "\nCREATE VIEW v AS %s;\n" % chain_query(order, "*"))
    p = run(["check", prog], binary=sluice_bin())
    assert p.returncode == 0, p.stderr[-3000:]


def run_slt(args):
    import subprocess
    p = subprocess.run([SLT] + args + ["--verbose", SLT_FILE], capture_output=True, text=True,
                       timeout=600)
    m = FINAL.findall(p.stdout)
    assert m, p.stdout[-2000:] + p.stderr[-2000:]
    passed, failed, skipped = (int(x) for x in m[-1])
    assert failed == 0 and p.returncode == 0, p.stdout[-4000:]
    assert passed >= 30 and skipped == 0, p.stdout[-2000:]
    assert "ERROR: AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr


def test_slt_join_order_snapshot():
    run_slt([])


def test_slt_join_order_incremental_every_step_checked():
    run_slt(["--incremental", "--check-steps", "--workers", "2"])

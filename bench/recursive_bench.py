#!/usr/bin/env python3
"""What deleting one edge under a recursive view costs (docs/sql.md,
recursive queries, "Incremental maintenance"): the transitive closure of
a binary tree of N edges (node i's children 2i+1 and 2i+2; the closure has
about N log2 N rows) built in one step, then one edge deleted in a second
step: an edge to a leaf (few closure rows lose their derivation) and the
edge 0 -> 1 under the root (half the closure's rows go). The cost of the
deletion step is the CPU time (user + sys) of a run with it minus that of
a run without it, median of 3, release build, 1 worker; with DRed (the
default: over-delete what a deleted edge derives, re-derive what still
holds) and with SLUICE_FIXPOINT_NO_DRED=1 (the fixed point recomputed from
the empty relation: the behaviour before DRed). Each run's closure is
checked against SQLite's (count of rows).

usage: bench/recursive_bench.py [N]   (default 20000 edges)
"""
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))

PROGRAM = """
CREATE TABLE e (src INT NOT NULL, dst INT NOT NULL) WITH ('connectors' = '%s');
DECLARE RECURSIVE VIEW tc (src INT NOT NULL, dst INT NOT NULL);
CREATE MATERIALIZED VIEW tc AS SELECT src, dst FROM e UNION SELECT tc.src, e.dst FROM tc JOIN e ON tc.dst = e.src;
CREATE MATERIALIZED VIEW n AS SELECT COUNT(*) AS c FROM tc;
"""


def closure_rows(edges):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e (src INT, dst INT)")
    db.executemany("INSERT INTO e VALUES (?, ?)", edges)
    return db.execute("WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM e UNION SELECT tc.a, "
                      "e.dst FROM tc JOIN e ON tc.b = e.src) SELECT COUNT(*) FROM tc").fetchone()[0]


def run(d, edges, delete, dred):
    inp = os.path.join(d, "in.json")
    with open(inp, "w") as f:
        for a, b in edges:
            f.write(json.dumps({"insert": {"src": a, "dst": b}}) + "\n")
        if delete:
            f.write(json.dumps({"delete": {"src": delete[0], "dst": delete[1]}}) + "\n")
    conn = json.dumps([{"transport": {"name": "file_input", "config": {"path": inp}},
                        "format": {"name": "json",
                                   "config": {"update_format": "insert_delete"}}}])
    prog = os.path.join(d, "prog.sql")
    with open(prog, "w") as f:
        f.write(PROGRAM % conn)
    out = os.path.join(d, "dump")
    env = dict(os.environ)
    env.pop("SLUICE_FIXPOINT_NO_DRED", None)
    if not dred:
        env["SLUICE_FIXPOINT_NO_DRED"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([SLUICE, "run", prog, "--until-done", "--no-progress", "--workers", "1",
                    "--step-rows", str(len(edges)), "--dump", out], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(out, "n.csv")) as f:
        rows = int(f.read().split()[-1].split(",")[0])
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rows


def median3(f):
    r = sorted((f() for _ in range(3)), key=lambda x: x[0])
    return r[1]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    edges = [((i - 1) // 2, i) for i in range(1, n + 1)]
    full = closure_rows(edges)
    print("binary tree of %d edges, closure %d rows (release build, 1 worker, CPU s, median of 3)"
          % (n, full))
    with tempfile.TemporaryDirectory() as d:
        base, rows = median3(lambda: run(d, edges, None, True))
        assert rows == full, (rows, full)
        print("%-36s %8.3f s" % ("build the closure", base))
        for name, edge in (("delete a leaf edge", edges[-1]), ("delete edge 0 -> 1", edges[0])):
            want = closure_rows([x for x in edges if x != edge])
            for dred in (False, True):
                t, rows = median3(lambda: run(d, edges, edge, dred))
                assert rows == want, (name, dred, rows, want)
                print("%-36s %8.3f s  (%s)" % (name, t - base,
                                             "DRed" if dred else "recomputed from empty"))


if __name__ == "__main__":
    main()

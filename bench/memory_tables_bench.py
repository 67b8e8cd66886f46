#!/usr/bin/python3
"""bench/memory_tables_bench.py - a PRIMARY KEY table larger than its limit
(issue 20, docs/memory.md: a table's rows spill through the upsert's cold
trace).

A table of K keys (`--keys`, default 2M) loaded in steps of K/100 rows,
then `--update-steps` steps (default 20) that each rewrite 1% of the keys,
picked uniformly, with a materialized COUNT/SUM over the table, run to the
end (`--until-done`) in memory (`--memory-limit none`) and under a limit
(`--limit`, default a quarter of the in-memory run's peak resident
memory). Runs alternate (in memory, limited, ...) because the machine is
shared. For each run: CPU time (user + system, wait4's rusage) and the
peak resident memory the kernel reports for the child (ru_maxrss). The
view's dump of every run must be byte-identical to the first's; the
script fails otherwise.

usage: bench/memory_tables_bench.py [--keys 2000000] [--update-steps 20]
                                    [--limit BYTES] [--runs 3]
Writes bench/results/memory_tables.json.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, median, save)
import memrun as M  # noqa: E402  (run_once, SameDumps)


def write_input(path, keys, update_steps):
    rng = random.Random(20)
    with open(path, "w") as f:
        for i in range(keys):
            f.write("%d,%d,n%07d\n" % (i, rng.randrange(10 ** 6), rng.randrange(10 ** 7)))
        for _ in range(update_steps * (keys // 100)):
            f.write("%d,%d,u%07d\n" % (rng.randrange(keys), rng.randrange(10 ** 6),
                                       rng.randrange(10 ** 7)))


def program(path, tmp):
    conn = json.dumps([{"transport": {"name": "file_input", "config": {"path": path}},
                        "format": {"name": "csv"}}])
    prog = os.path.join(tmp, "tables.sql")
    with open(prog, "w") as f:
        f.write("CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, v BIGINT NOT NULL,\n"
                "  nm VARCHAR NOT NULL) WITH ('connectors' = '%s');\n"
                "CREATE MATERIALIZED VIEW s AS SELECT COUNT(*) AS n, SUM(v) AS sv FROM t;\n"
                % conn)
    return prog


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=2000000)
    ap.add_argument("--update-steps", type=int, default=20)
    ap.add_argument("--limit", type=int, default=0,
                    help="bytes (default: a quarter of the in-memory peak RSS)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    step = str(a.keys // 100)
    tmp = tempfile.mkdtemp(prefix="sluice-tablebench-")
    try:
        data = os.path.join(tmp, "t.csv")
        write_input(data, a.keys, a.update_steps)
        prog = program(data, tmp)
        out = {"keys": a.keys, "update_steps": a.update_steps, "step_rows": int(step),
               "results": []}
        same = M.SameDumps(("s",))
        res = {"in memory": [], "limited": []}
        limit = a.limit
        for r in range(a.runs):
            for name in ("in memory", "limited"):
                if name == "limited" and not limit:
                    limit = int(B.median([x["peak_mb"] for x in res["in memory"]]) * 1048576 / 4)
                lim = "none" if name == "in memory" else str(limit)
                dump = os.path.join(tmp, "dump-%s-%d" % (lim, r))
                x = M.run_once(B.SLUICE, prog, dump, lim, step, os.environ.copy())
                same.check(dump)
                res[name].append(x)
                print("  %-10s CPU %7.2f s  peak RSS %7.1f MB%s" %
                      (name, x["cpu"], x["peak_mb"],
                       "  (%d runs spilled)" % x["runs_spilled"] if x["runs_spilled"] else ""),
                      flush=True)
        cbase = B.median([x["cpu"] for x in res["in memory"]])
        out["limit_bytes"] = limit
        for name in ("in memory", "limited"):
            cpus = [x["cpu"] for x in res[name]]
            pk = max(x["peak_mb"] for x in res[name])
            row = {"config": name, "cpus": cpus, "cpu_median": B.median(cpus),
                   "peak_mb_max": pk, "cpu_vs_in_memory": B.median(cpus) / cbase,
                   "log": res[name][-1]["log"]}
            if name == "limited":
                row["peak_vs_limit"] = pk * 1048576 / limit
            out["results"].append(row)
            print("%-10s CPU median %7.2f s (%.2fx in memory), peak RSS %.1f MB%s"
                  % (name, row["cpu_median"], row["cpu_vs_in_memory"], pk,
                     " = %.2fx the limit of %.1f MB" % (row["peak_vs_limit"], limit / 1048576)
                     if name == "limited" else ""))
        print("outputs identical across all runs")
        B.save("memory_tables", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

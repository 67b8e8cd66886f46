#!/usr/bin/python3
"""bench/memory_bench.py - state larger than memory (issue 20, docs/memory.md).

bench/join.sql (N orders joined to 100K customers, summed per region) run
to the end (`--until-done`) in memory (`--memory-limit none`) and under a
limit a quarter of its state (`--memory-limit L`), for each step size
asked (`--step-rows`; "default" is the engine's 1M rows per worker). Runs
alternate (in memory, limited, in memory, ...) because the machine is
shared. For each run: wall time, CPU time (user + system, wait4's
rusage: steadier than wall time on a loaded machine), throughput, and the peak resident memory
the kernel reports for the child (wait4's ru_maxrss: not the engine's own
figure). The view's dump of every run must be byte-identical to the first
in-memory run's; the script fails otherwise.

The state of the in-memory run is about 40 bytes per order (state_bytes in
/stats: the orders side of the join), so the default limit is N * 10 bytes.

usage: bench/memory_bench.py [--orders 10000000] [--limit BYTES] [--runs 2]
                             [--step-rows default,100000] [--no-merge]
Writes bench/results/memory.json.
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, with_limit, median, save)
import memrun as M  # noqa: E402  (run_once, SameDumps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", type=int, default=10000000)
    ap.add_argument("--limit", type=int, default=0, help="bytes (default: orders * 10)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--step-rows", default="default,100000")
    ap.add_argument("--no-merge", action="store_true",
                    help="also run the limited case with SLUICE_SPILL_MERGE=0")
    a = ap.parse_args()
    limit = a.limit or a.orders * 10
    tmp = tempfile.mkdtemp(prefix="sluice-membench-")
    try:
        prog = B.with_limit("bench/join.sql", a.orders, tmp)
        configs = [("in memory", "none", {})]
        configs.append(("limit %.0f MB" % (limit / 1e6), str(limit), {}))
        if a.no_merge:
            configs.append(("limit, no merge", str(limit), {"SLUICE_SPILL_MERGE": "0"}))
        same = M.SameDumps(("sales_by_region",))
        out = {"orders": a.orders, "limit_bytes": limit, "results": []}
        print("bench/join.sql, %d orders; limit %d bytes; %d run(s) each, alternating"
              % (a.orders, limit, a.runs))
        for sr in a.step_rows.split(","):
            walls = {c[0]: [] for c in configs}
            peaks = {c[0]: [] for c in configs}
            cpus = {c[0]: [] for c in configs}
            for r in range(a.runs):
                for name, lim, extra in configs:
                    env = dict(os.environ, **extra)
                    dump = os.path.join(tmp, "dump-%s-%s-%d" % (sr, lim, r))
                    res = M.run_once(B.SLUICE, prog, dump, lim, sr, env)
                    same.check(dump)
                    walls[name].append(res["wall"])
                    cpus[name].append(res["cpu"])
                    peaks[name].append(res["peak_mb"])
                    print("  step rows %-8s %-16s %6.2f s (CPU %6.2f s)  %7.0f rows/s  "
                          "peak RSS %6.1f MB%s"
                          % (sr, name, res["wall"], res["cpu"], (a.orders + 100000) / res["wall"],
                             res["peak_mb"],
                             "  (%d runs spilled)" % res["runs_spilled"]
                             if res["runs_spilled"] else ""), flush=True)
            base = B.median(walls["in memory"])
            cbase = B.median(cpus["in memory"])
            for name, lim, _ in configs:
                w, pk = B.median(walls[name]), max(peaks[name])
                c = B.median(cpus[name])
                row = {"step_rows": sr, "config": name, "memory_limit": lim,
                       "wall_median": w, "walls": walls[name], "peak_mb_max": pk,
                       "cpu_median": c, "cpus": cpus[name],
                       "throughput_vs_in_memory": base / w,
                       "cpu_throughput_vs_in_memory": cbase / c}
                if lim != "none":
                    row["peak_vs_limit"] = pk * 1048576 / limit
                out["results"].append(row)
                print("step rows %-8s %-16s median %6.2f s (%.0f%% of in-memory throughput), "
                      "CPU %6.2f s (%.0f%% of in-memory by CPU), peak RSS %.1f MB%s"
                      % (sr, name, w, 100 * base / w, c, 100 * cbase / c, pk,
                                               " = %.2fx the limit" % row["peak_vs_limit"]
                                               if lim != "none" else ""))
        print("outputs identical across all runs")
        B.save("memory", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/scaleout_bench.py - scale-out benchmark (run by `make bench`).

Runs two backfills with the release binary, each with the same number of
workers in all (so the same threads on the same cores) spread over H = 1,
2 and 4 local processes (MPI ranks launched by `sluice run --hosts H`):

- bank: examples/bank.sql (one GROUP BY per view over generated rows);
- join: bench/join.sql (every order joins its customer, then a GROUP BY),
  the join-heavy case where every row crosses the exchange.

For each it prints throughput, the ratio to H = 1, the bytes exchanged
between hosts per input row, the time per step spent in exchanges between
hosts, and peak memory of all processes. On this machine (2 cores) more
hosts cannot be faster: the slowdown of H hosts against one host with the
same workers is the exchange overhead, and the projected speed-up on H
real hosts (each with the cores this run gave one host) is H / (1 +
overhead). Then the join at H = 2 across two network namespaces
(simulated hosts, traffic over virtual links; skipped with the reason
where namespaces cannot be created).

Writes bench/results/scaleout.json.

usage: bench/scaleout_bench.py [--quick] [--workers W] [--step-rows N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "build", "sluice")
RESULTS = os.path.join(ROOT, "bench", "results")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def program(tmp, src, old, new, name):
    text = open(os.path.join(ROOT, src)).read().replace(old, new)
    path = os.path.join(tmp, name)
    open(path, "w").write(text)
    return path


def run(prog, hosts, workers, step_rows, prefix=(), extra=()):
    args = [SLUICE, "run", prog, "--workers", str(workers), "--until-done", "--no-progress",
            "--step-rows", str(step_rows)]
    if hosts > 1:
        args += ["--hosts", str(hosts)]
    t0 = time.perf_counter()
    p = subprocess.run(list(prefix) + args + list(extra), capture_output=True, text=True,
                       env=ENV)
    el = time.perf_counter() - t0
    if p.returncode:
        sys.exit("sluice failed:\n" + p.stderr[-3000:])
    m = re.search(r"done: ([\d.]+)([KMG]?) rows in ([\d.]+) s .* (\d+) steps.*peak memory "
                  r"([\d.]+) MB", p.stderr)
    if not m:
        sys.exit("no summary in:\n" + p.stderr[-2000:])
    mult = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    rows, secs, steps = float(m.group(1)) * mult, float(m.group(3)), int(m.group(4))
    res = {"hosts": hosts, "workers": workers, "rows": rows, "secs": secs, "wall_secs": el,
           "steps": steps, "rows_per_sec": rows / secs if secs else 0,
           "peak_mb": float(m.group(5)), "bytes_per_row": 0.0, "exchange_ms_per_step": 0.0}
    x = re.search(r"(\d+) hosts: ([\d.]+) MB exchanged between hosts \(([\d.]+) bytes per row\), "
                  r"([\d.]+) s per host in exchanges between hosts \(([\d.]+) ms per step\), "
                  r"peak memory ([\d.]+) MB in all", p.stderr)
    if x:
        res.update(bytes_per_row=float(x.group(3)), exchange_secs=float(x.group(4)),
                   exchange_ms_per_step=float(x.group(5)), peak_mb=float(x.group(6)))
    return res


def best(prog, hosts, workers, step_rows, reps, **kw):
    runs = [run(prog, hosts, workers, step_rows, **kw) for _ in range(reps)]
    return min(runs, key=lambda r: r["secs"])


def table(title, rows):
    print("\n%s" % title)
    print("%-6s %-8s %12s %8s %12s %14s %10s" % ("hosts", "workers", "rows/s", "vs H=1",
                                                "bytes/row", "exch ms/step", "peak MB"))
    base = rows[0]["rows_per_sec"]
    for r in rows:
        r["ratio"] = r["rows_per_sec"] / base if base else 0
        print("%-6s %-8d %12s %7.0f%% %12.1f %14.2f %10.0f" % (
            r.get("label", r["hosts"]), r["workers"], "%.2fM" % (r["rows_per_sec"] / 1e6),
            100 * r["ratio"], r["bytes_per_row"], r["exchange_ms_per_step"], r["peak_mb"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--step-rows", type=int, default=200000)
    a = ap.parse_args()
    reps = 1 if a.quick else 3
    bank_rows = 5_000_000 if a.quick else 50_000_000
    orders = 1_000_000 if a.quick else 4_000_000
    out = {"machine_cores": os.cpu_count(), "workers": a.workers, "step_rows": a.step_rows}
    with tempfile.TemporaryDirectory() as tmp:
        bank = program(tmp, "examples/bank.sql", "100000000", str(bank_rows), "bank.sql")
        join = program(tmp, "bench/join.sql", '"limit": 10000000', '"limit": %d' % orders,
                       "join.sql")
        for name, prog in (("bank", bank), ("join", join)):
            rows = [best(prog, h, a.workers, a.step_rows, reps) for h in (1, 2, 4)]
            table("%s backfill, %d workers in all over H local processes" % (name, a.workers),
                  rows)
            for r in rows[1:]:
                overhead = max(0.0, 1 / r["ratio"] - 1) if r["ratio"] else 0
                r["exchange_overhead"] = overhead
                r["projected_speedup_on_real_hosts"] = r["hosts"] / (1 + overhead)
                print("  H=%d: exchange overhead %.0f%% of the per-row cost; projected speed-up "
                      "on %d real hosts: %.1fx" % (r["hosts"], 100 * overhead, r["hosts"],
                                                   r["projected_speedup_on_real_hosts"]))
            out[name] = rows

        # two simulated hosts: network namespaces joined by a bridge
        from netns import NetnsHosts, netns_available
        ok, why = netns_available()
        if not ok:
            print("\njoin across 2 network namespaces: skipped (%s)" % why)
            out["join_netns"] = {"skipped": why}
        else:
            with NetnsHosts(2) as h:
                r1 = best(join, 1, 2, a.step_rows, reps)
                r1["label"] = "1"
                r2 = best(join, 2, 2, a.step_rows, reps, prefix=h.on_host1([]),
                          extra=["--hostfile", h.hostfile] + h.mca)
                r2["label"] = "2 ns"
                table("join backfill, 2 workers: one process vs 2 hosts across network "
                      "namespaces (virtual links)", [r1, r2])
                out["join_netns"] = [r1, r2]
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "scaleout.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

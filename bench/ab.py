#!/usr/bin/python3
"""bench/ab.py - before/after comparison of two sluice binaries on the
bank backfill, the join-heavy (uniform and skewed keys) and the
distinct-heavy programs (the figures a refactor must keep). Runs alternate
between the binaries (A, B, A, B, ...) so that load from other processes
hits both alike; prints the median wall time, rows/s and peak memory of
each and the ratio B/A. With --callgrind it
also counts instructions of one run per binary on a small size (stable under
load, slow).

    bench/ab.py --a /path/old/sluice --b build/sluice [--sizes 1000000] [--runs 5]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, median, run, with_limit  # noqa: E402

PROGRAMS = (("examples/bank.sql", "bank backfill"), ("bench/join.sql", "join-heavy"),
            ("bench/join_skew.sql", "join-skewed"), ("bench/distinct.sql", "distinct-heavy"))


def one(binary, program, workers):
    wall, _, err = run([binary, "run", program, "--until-done", "--no-progress",
                        "--workers", str(workers)])
    m = re.search(r"done: .* peak memory ([0-9.]+) MB", err)
    return wall, float(m.group(1)) if m else float("nan")


def instructions(binary, program, workers, tmp):
    out = os.path.join(tmp, "cg.out")
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary,
                        "run", program, "--until-done", "--no-progress", "--workers",
                        str(workers)], capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the binary before")
    ap.add_argument("--b", default=os.path.join(ROOT, "build", "sluice"), help="the binary after")
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--callgrind", type=int, default=0, metavar="ROWS",
                    help="also count instructions at this size (0: no)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sluice-ab-")
    print("%-16s %10s %2s %10s %10s %8s %8s %7s" % ("program", "rows", "w", "A wall", "B wall",
                                                  "A MB", "B MB", "B/A"))
    for n in [int(s) for s in a.sizes.split(",")]:
        for prog, name in PROGRAMS:
            p = with_limit(prog, n, tmp)
            for w in [int(x) for x in a.workers.split(",")]:
                res = {"a": [], "b": []}
                for _ in range(a.runs):
                    for k in ("a", "b"):
                        res[k].append(one(getattr(a, k), p, w))
                wa = median([r[0] for r in res["a"]])
                wb = median([r[0] for r in res["b"]])
                ma = max(r[1] for r in res["a"])
                mb = max(r[1] for r in res["b"])
                print("%-16s %10d %2d %9.3fs %9.3fs %8.1f %8.1f %6.3fx" % (
                    name, n, w, wa, wb, ma, mb, wb / wa), flush=True)
    if a.callgrind:
        for prog, name in PROGRAMS:
            p = with_limit(prog, a.callgrind, tmp)
            ia = instructions(a.a, p, 1, tmp)
            ib = instructions(a.b, p, 1, tmp)
            if ia and ib:
                print("%-16s %10d  instructions A %d  B %d  B/A %.4f" % (
                    name, a.callgrind, ia, ib, ib / ia), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

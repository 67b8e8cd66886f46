#!/usr/bin/env python3
"""Bootstrapping figures (issue 17; docs/bootstrapping.md): the bank program
(examples/bank.sql, N datagen rows) is backfilled once with --storage; then,
each on a copy of that storage, the release binary restarts with
  - the same program (a plain restart: the baseline),
  - a view added over the materialized balance,
  - balance's definition changed ((credits - debits) * 100: recomputed from
    the stored credits/debits aggregate results),
  - a view added over transactions (a count per account: transactions is
    read again from the beginning for it alone),
with --bootstrap allow --until-done. Reported per case: the wall time of the
whole restart (compile, settle, load, bootstrap step, first checkpoint,
exit) and the bootstrap step alone (from the pipeline's own message).

usage: bench/bootstrap_bench.py [N] [--hosts H] [--workers W]
(N default 10000000; with --hosts H every run, the backfill included, is
a scale-out pipeline of H processes on this machine: docs/scale-out.md)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))


def run(args):
    t0 = time.monotonic()
    p = subprocess.run([SLUICE] + [str(a) for a in args], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("sluice %s failed:\n%s" % (" ".join(map(str, args)), p.stderr[-3000:]))
    return wall, p.stderr


def main():
    argv = sys.argv[1:]
    scale = []
    for flag in ("--hosts", "--workers"):
        if flag in argv:
            i = argv.index(flag)
            scale += [flag, argv[i + 1]]
            del argv[i:i + 2]
    if "--hosts" in scale:
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    n = int(argv[0]) if argv else 10_000_000
    tmp = tempfile.mkdtemp(prefix="bootbench")
    try:
        bank = open(os.path.join(ROOT, "examples", "bank.sql")).read().replace(
            "100000000", str(n))
        progs = {
            "same program (plain restart)": bank,
            "add a view over balance": bank + "\nCREATE MATERIALIZED VIEW rich AS SELECT "
            "account, balance FROM balance WHERE balance > 0;\n",
            "change balance's definition": bank.replace("credits - debits AS balance",
                                                        "(credits - debits) * 100 AS balance"),
            "add a view over transactions": bank + "\nCREATE MATERIALIZED VIEW per_account AS "
            "SELECT from_account, COUNT(*) AS n FROM transactions GROUP BY from_account;\n",
        }
        paths = {}
        for i, (k, text) in enumerate(progs.items()):
            paths[k] = os.path.join(tmp, "p%d.sql" % i)
            open(paths[k], "w").write(text)
        st = os.path.join(tmp, "st")
        wall, _ = run(["run", paths["same program (plain restart)"], "--storage", st,
                       "--until-done", "--no-progress"] + scale)
        print("bank backfill, %d rows%s: %.2f s" % (n, (" (%s)" % " ".join(scale)) if scale
                                                   else "", wall))
        for k, path in paths.items():
            copy = os.path.join(tmp, "copy")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(st, copy)
            wall, err = run(["run", path, "--storage", copy, "--until-done", "--no-progress",
                             "--bootstrap", "allow"] + scale)
            m = re.search(r"bootstrapping: (\d+) new nodes? computed from stored state.* in "
                          r"(\d+) steps? \(([\d.]+) s; (\d+) rows read again\), checkpoint of "
                          r"the new program written \(([\d.]+) s\)", err)
            step = ("%s bootstrap step(s) %.3f s (%s new nodes, %s rows read again), its "
                    "checkpoint %.3f s" % (m.group(2), float(m.group(3)), m.group(1),
                                           m.group(4), float(m.group(5))) if m else
                    "no bootstrap")
            print("%-30s restart wall %.3f s; %s" % (k, wall, step))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

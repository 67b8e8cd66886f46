#!/usr/bin/env python3
"""bench/decimal_bench.py - the cost of 128-bit DECIMAL against the 64-bit
path: the same aggregate, SUM(price * qty) GROUP BY key over N generated
rows, with price as DECIMAL(15,2) (64-bit: the product is DECIMAL(18,2))
and as DECIMAL(30,2) (128-bit: DECIMAL(33,2)); also a filter + projection
over each. SUM's result is DECIMAL(38,2) in both. Prints one line per variant: wall seconds and rows per second
(best of --repeat runs). --sluice picks the binary (default build/sluice);
pass an older build to compare the 64-bit path across versions.

    python3 bench/decimal_bench.py [--rows 5000000] [--workers 1] [--repeat 3]
"""
import argparse
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROG = """
CREATE TABLE t (k INT NOT NULL, cents BIGINT NOT NULL, q INT NOT NULL)
WITH ('connectors' = '[{{"transport": {{"name": "datagen", "config": {{"seed": 7, "plan": [{{
    "limit": {rows},
    "fields": {{"k": {{"strategy": "uniform", "range": [0, 1000]}},
               "cents": {{"strategy": "uniform", "range": [1, 100000000]}},
               "q": {{"strategy": "uniform", "range": [1, 100]}}}}}}]}}}}}}]');
CREATE VIEW p AS SELECT k, CAST(cents AS DECIMAL({p},2)) AS price,
    CAST(q AS DECIMAL(3,0)) AS qty FROM t;
CREATE MATERIALIZED VIEW agg AS SELECT k, SUM(price * qty) AS s, COUNT(*) AS n FROM p GROUP BY k;
CREATE MATERIALIZED VIEW big AS SELECT k, price + qty AS x FROM p WHERE price * qty > 9990000000;
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sluice", default=os.path.join(ROOT, "build", "sluice"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for name, p in (("64-bit DECIMAL(15,2)", 15), ("128-bit DECIMAL(30,2)", 30)):
            prog = os.path.join(d, "p%d.sql" % p)
            with open(prog, "w") as f:
                f.write(PROG.format(rows=a.rows, p=p))
            best = None
            for _ in range(a.repeat):
                t0 = time.monotonic()
                r = subprocess.run([a.sluice, "run", prog, "--until-done", "--no-progress",
                                    "--workers", str(a.workers)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                wall = time.monotonic() - t0
                if r.returncode:
                    break
                best = wall if best is None else min(best, wall)
            if best is None:
                print("%-24s refused: %s" % (name, r.stderr.strip().splitlines()[-1]))
                continue
            print("%-24s %8.2f s  %12.0f rows/s" % (name, best, a.rows / best))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/partitions_bench.py - top-k and window partitions larger than
memory (issue 20, docs/memory.md "What spills").

A table fed from a JSON file (insert/delete: inserts over K keys, then
updates and deletes of a tenth of the rows each), with a top 3 per key
(ROW_NUMBER() <= 3) and a window view (a ROWS frame SUM and ROW_NUMBER per
key), each summarised into a small materialized view; run to the end
(`--until-done`) in memory (`--memory-limit none`) and under `--limit`,
alternating, `--runs` times each. For each run: CPU time (user + system
of the child, wait4's rusage), peak resident memory (ru_maxrss), the spill
cache's hits and misses (the line the pipeline prints at its end). The
input is written by a child process, so that the children that run the
pipeline fork from a small parent (ru_maxrss counts what a child had
before it exec'd: a parent holding the input would be its peak). The
dumps of every run must be byte-identical to the first in-memory run's;
the script fails otherwise.

usage: bench/partitions_bench.py [--rows 2000000] [--keys 300000] [--limit 64M]
                                 [--runs 3] [--step-rows 100000] [--sluice PATH]
Writes bench/results/partitions.json.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, save)
import memrun as M  # noqa: E402  (rounds, SameDumps, medians)

PROG = """
CREATE TABLE t (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL) WITH ('connectors' = '%s');
CREATE VIEW top3 AS SELECT k, v, id FROM (SELECT k, v, id,
  ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM t) x WHERE rn <= 3;
CREATE VIEW win AS SELECT k, id, v,
  SUM(v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s2,
  ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) AS rn FROM t;
CREATE MATERIALIZED VIEW top_summary AS SELECT k %% 16 AS b, COUNT(*) AS n, SUM(v) AS sv,
  SUM(id) AS si, SUM(k * v) AS kv FROM top3 GROUP BY k %% 16;
CREATE MATERIALIZED VIEW win_summary AS SELECT k %% 16 AS b, COUNT(*) AS n, SUM(s2) AS ss,
  SUM(rn * v) AS rv FROM win GROUP BY k %% 16;
"""


def make_input(path, rows, keys):
    rng = random.Random(7)
    live = []
    with open(path, "w") as f:
        for i in range(rows):
            r = {"id": i, "k": rng.randrange(keys), "v": rng.randrange(10 ** 6)}
            live.append(r)
            f.write(json.dumps({"insert": r}) + "\n")
        for _ in range(rows // 10):  # updates
            j = rng.randrange(len(live))
            old = live[j]
            new = dict(old, v=rng.randrange(10 ** 6))
            live[j] = new
            f.write(json.dumps({"delete": old}) + "\n" + json.dumps({"insert": new}) + "\n")
        for _ in range(rows // 10):  # deletes
            j = rng.randrange(len(live))
            live[j], live[-1] = live[-1], live[j]
            f.write(json.dumps({"delete": live.pop()}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000000)
    ap.add_argument("--keys", type=int, default=300000)
    ap.add_argument("--limit", default="64M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step-rows", type=int, default=100000)
    ap.add_argument("--sluice", default=B.SLUICE)
    ap.add_argument("--label", default="")
    ap.add_argument("--make-input", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make_input:
        make_input(a.make_input, a.rows, a.keys)
        return
    tmp = tempfile.mkdtemp(prefix="sluice-partitions-")
    try:
        data = os.path.join(tmp, "t.json")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--make-input", data,
                        "--rows", str(a.rows), "--keys", str(a.keys)], check=True)
        conn = json.dumps([{"transport": {"name": "file_input", "config": {"path": data}},
                            "format": {"name": "json",
                                       "config": {"update_format": "insert_delete"}}}])
        prog = os.path.join(tmp, "p.sql")
        with open(prog, "w") as f:
            f.write(PROG % conn)
        configs = [(limit, a.sluice, limit) for limit in ("none", a.limit)]
        res = M.rounds(configs, a.runs, prog, tmp, a.step_rows,
                       M.SameDumps(("top_summary", "win_summary")), 5)
        out = {"rows": a.rows, "keys": a.keys, "limit": a.limit, "step_rows": a.step_rows,
               "label": a.label}
        M.medians(res, out)
        B.save("partitions" + ("-" + a.label if a.label else ""), out)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

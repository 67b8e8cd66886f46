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
import filecmp
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, median, save)

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


def run_once(sluice, prog, dump, limit, step_rows):
    cmd = [sluice, "run", prog, "--until-done", "--no-progress", "--dump", dump,
           "--memory-limit", limit, "--step-rows", str(step_rows)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("sluice failed: %s\n%s" % (" ".join(cmd), err))
    m = re.search(r"read (\d+) times from the cache, (\d+) from files", err)
    return {"cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024.0,
            "hits": int(m.group(1)) if m else 0, "misses": int(m.group(2)) if m else 0,
            "log": err.strip()}


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
        res = {"none": [], a.limit: []}
        first = None
        for r in range(a.runs):
            for limit in ("none", a.limit):
                dump = os.path.join(tmp, "dump-%s-%d" % (limit, r))
                x = run_once(a.sluice, prog, dump, limit, a.step_rows)
                res[limit].append(x)
                print("%-5s run %d: cpu %.2f s, peak %.1f MB, cache %d hits / %d misses"
                      % (limit, r, x["cpu"], x["peak_mb"], x["hits"], x["misses"]), flush=True)
                if first is None:
                    first = dump
                else:
                    for v in ("top_summary", "win_summary"):
                        if not filecmp.cmp(os.path.join(first, v + ".csv"),
                                           os.path.join(dump, v + ".csv"), shallow=False):
                            sys.exit("the dumps of %s differ: %s, %s" % (v, first, dump))
        out = {"rows": a.rows, "keys": a.keys, "limit": a.limit, "step_rows": a.step_rows,
               "label": a.label}
        for limit, xs in res.items():
            out[limit] = {"cpu_median": B.median([x["cpu"] for x in xs]),
                          "peak_mb_median": B.median([x["peak_mb"] for x in xs]),
                          "hits": [x["hits"] for x in xs], "misses": [x["misses"] for x in xs],
                          "runs": xs}
            print("%s: cpu median %.2f s, peak median %.1f MB" %
                  (limit, out[limit]["cpu_median"], out[limit]["peak_mb_median"]))
        B.save("partitions" + ("-" + a.label if a.label else ""), out)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

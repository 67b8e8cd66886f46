#!/usr/bin/python3
"""bench/memory_final_bench.py - emit_final holds and ASOF join partitions
larger than memory (issue 20, docs/memory.md "What spills").

Three tables fed from JSON files: e (events in time order, at most a
quarter of the lateness behind, over --groups groups, --rate a minute,
ts with LATENESS --lateness-min minutes), q and r (the left and right
sides of a LEFT ASOF join over --keys keys, (k, ts) unique on the right;
then a tenth of each side deleted). Views: an emit_final per-minute,
per-group aggregate (materialized: the closed windows) and the ASOF join
summarised into a small materialized view. Each run goes to the end
(`--until-done`); per round, alternating: this build in memory
(`--memory-limit none`), the other binary (--main, e.g. main's build) in
memory, and this build under `--limit` (main's build cannot spill these:
it would pause). For each run: CPU time (user + system of the child,
wait4's rusage), peak resident memory (ru_maxrss), the spill cache's hits
and misses. The input is written by a child process (ru_maxrss counts what
a child had before it exec'd). The dumps of every run must be identical
(as sorted lines) to the first run's; the script fails otherwise.

usage: bench/memory_final_bench.py [--events 600000] [--groups 3000] [--rate 1000]
       [--lateness-min 240] [--left 300000] [--right 150000] [--keys 50000]
       [--limit 32M] [--runs 3] [--step-rows 50000] [--sluice PATH] [--main PATH]
Writes bench/results/memory-final.json.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, save)
import memrun as M  # noqa: E402  (rounds, SameDumps, medians)

PROG = """
CREATE TABLE e (id BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT NOT NULL,
  ts TIMESTAMP NOT NULL LATENESS INTERVAL '%(lat)d' MINUTE) WITH ('connectors' = '%(ce)s');
CREATE TABLE q (id BIGINT NOT NULL, k BIGINT NOT NULL, ts BIGINT NOT NULL, v BIGINT NOT NULL)
  WITH ('connectors' = '%(cq)s');
CREATE TABLE r (k BIGINT NOT NULL, ts BIGINT NOT NULL, p BIGINT NOT NULL)
  WITH ('connectors' = '%(cr)s');
CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_start') AS
  SELECT window_start, g, COUNT(*) AS c, SUM(v) AS s
  FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, g;
CREATE VIEW j AS SELECT q.id, q.k, q.ts, q.v, r.ts AS rts, r.p
  FROM q LEFT ASOF JOIN r MATCH_CONDITION (q.ts >= r.ts) ON q.k = r.k;
CREATE MATERIALIZED VIEW j_summary AS SELECT k %% 16 AS b, COUNT(*) AS n, SUM(v) AS sv,
  SUM(COALESCE(p, -7)) AS sp, SUM(COALESCE(rts, -3)) AS st FROM j GROUP BY k %% 16;
"""
EPOCH = datetime.datetime(1970, 1, 1)
T0 = int((datetime.datetime(2024, 3, 1) - EPOCH).total_seconds())


def ts_text(sec):
    return (EPOCH + datetime.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def make_input(d, a):
    rng = random.Random(9)
    with open(os.path.join(d, "e.json"), "w") as f:
        for i in range(a.events):
            ts = T0 + i * 60 // a.rate - rng.randrange(0, a.lateness_min * 15)
            f.write(json.dumps({"insert": {"id": i, "g": rng.randrange(a.groups),
                                           "v": rng.randrange(1000), "ts": ts_text(ts)}}) + "\n")
    with open(os.path.join(d, "q.json"), "w") as f:
        rows = []
        for i in range(a.left):
            r = {"id": i, "k": rng.randrange(a.keys), "ts": rng.randrange(10 ** 7),
                 "v": rng.randrange(1000)}
            rows.append(r)
            f.write(json.dumps({"insert": r}) + "\n")
        for r in rng.sample(rows, a.left // 10):
            f.write(json.dumps({"delete": r}) + "\n")
    with open(os.path.join(d, "r.json"), "w") as f:
        rows, seen = [], set()
        while len(rows) < a.right:
            r = {"k": rng.randrange(a.keys), "ts": rng.randrange(10 ** 7), "p": rng.randrange(1000)}
            if (r["k"], r["ts"]) in seen:
                continue
            seen.add((r["k"], r["ts"]))
            rows.append(r)
            f.write(json.dumps({"insert": r}) + "\n")
        for r in rng.sample(rows, a.right // 10):
            f.write(json.dumps({"delete": r}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=600000)
    ap.add_argument("--groups", type=int, default=3000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--lateness-min", type=int, default=240)
    ap.add_argument("--left", type=int, default=300000)
    ap.add_argument("--right", type=int, default=150000)
    ap.add_argument("--keys", type=int, default=50000)
    ap.add_argument("--limit", default="32M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step-rows", type=int, default=50000)
    ap.add_argument("--sluice", default=B.SLUICE)
    ap.add_argument("--main", default="/tmp/sluice-main")
    ap.add_argument("--label", default="")
    ap.add_argument("--make-input", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make_input:
        make_input(a.make_input, a)
        return
    tmp = tempfile.mkdtemp(prefix="sluice-final-")
    try:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--make-input", tmp] +
                       [x for x in sys.argv[1:]], check=True)

        def conn(name):
            return json.dumps([{"transport": {"name": "file_input",
                                              "config": {"path": os.path.join(tmp, name)}},
                                "format": {"name": "json",
                                           "config": {"update_format": "insert_delete"}}}])
        prog = os.path.join(tmp, "p.sql")
        with open(prog, "w") as f:
            f.write(PROG % {"lat": a.lateness_min, "ce": conn("e.json"), "cq": conn("q.json"),
                            "cr": conn("r.json")})
        configs = [("new-none", a.sluice, "none"), ("main-none", a.main, "none"),
                   ("new-" + a.limit, a.sluice, a.limit)]

        def count_f(dump):
            with open(os.path.join(dump, "f.csv")) as f:
                print("f: %d closed (window, group) rows" % len(f.read().splitlines()),
                      flush=True)
        res = M.rounds(configs, a.runs, prog, tmp, a.step_rows,
                       M.SameDumps(("f", "j_summary"), as_lines=True), 10, count_f)
        out = {k: getattr(a, k) for k in ("events", "groups", "rate", "lateness_min", "left",
                                          "right", "keys", "limit", "step_rows", "label")}
        M.medians(res, out)
        B.save("memory-final" + ("-" + a.label if a.label else ""), out)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

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
import re
import shutil
import subprocess
import sys
import tempfile
import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (SLUICE, median, save)

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


def sorted_lines(path):
    with open(path) as f:
        return sorted(f.read().splitlines())


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
        res = {c[0]: [] for c in configs}
        first = None
        for r in range(a.runs):
            for name, binary, limit in configs:
                dump = os.path.join(tmp, "dump-%s-%d" % (name, r))
                x = run_once(binary, prog, dump, limit, a.step_rows)
                res[name].append(x)
                print("%-10s run %d: cpu %.2f s, peak %.1f MB, cache %d hits / %d misses"
                      % (name, r, x["cpu"], x["peak_mb"], x["hits"], x["misses"]), flush=True)
                if first is None:
                    first = dump
                    nf = len(sorted_lines(os.path.join(first, "f.csv")))
                    print("f: %d closed (window, group) rows" % nf, flush=True)
                else:
                    for v in ("f", "j_summary"):
                        if sorted_lines(os.path.join(first, v + ".csv")) != \
                                sorted_lines(os.path.join(dump, v + ".csv")):
                            sys.exit("the dumps of %s differ: %s, %s" % (v, first, dump))
                shutil.rmtree(dump) if dump != first else None
        out = {k: getattr(a, k) for k in ("events", "groups", "rate", "lateness_min", "left",
                                          "right", "keys", "limit", "step_rows", "label")}
        for name, xs in res.items():
            out[name] = {"cpu_median": B.median([x["cpu"] for x in xs]),
                         "peak_mb_median": B.median([x["peak_mb"] for x in xs]),
                         "hits": [x["hits"] for x in xs], "misses": [x["misses"] for x in xs],
                         "runs": xs}
            print("%s: cpu median %.2f s, peak median %.1f MB" %
                  (name, out[name]["cpu_median"], out[name]["peak_mb_median"]))
        B.save("memory-final" + ("-" + a.label if a.label else ""), out)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

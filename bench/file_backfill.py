#!/usr/bin/python3
"""bench/file_backfill.py - file input backfill speed, 1 vs 2 workers.

Writes an N-row CSV (and the same rows as JSON lines) once, then runs
`sluice run --until-done` over a program whose table reads the file and a
view that sums it, with --workers 1 and 2 (the file is parsed on that many
threads, io/tr_file.c). Prints rows/s (median of --runs) and the 2/1
speed-up; checks the view's count and sum against Python's. Writes
bench/results/file_backfill.json.

With --s3 the same CSV, cut into 8 objects, is also read by s3_input
from a throw-away OpenStack Swift server (tests/e2e/s3server.py).

usage: bench/file_backfill.py [--rows 10000000] [--runs 3] [--formats csv,json] [--s3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))
RESULTS = os.path.join(ROOT, "bench", "results")


def write_data(d, rows):
    csv_path, json_path = os.path.join(d, "in.csv"), os.path.join(d, "in.json")
    total = 0
    with open(csv_path, "w") as c, open(json_path, "w") as j:
        for start in range(0, rows, 100000):
            cl, jl = [], []
            for i in range(start, min(rows, start + 100000)):
                v = (i * 7919) % 100003
                total += v
                cl.append("%d,%d,name-%d,%d.%02d\n" % (i, v, i % 1000, v, i % 100))
                jl.append('{"id":%d,"v":%d,"s":"name-%d","d":%d.%02d}\n'
                          % (i, v, i % 1000, v, i % 100))
            c.write("".join(cl))
            j.write("".join(jl))
    return {"csv": csv_path, "json": json_path}, total


def run_one(d, path, fmt, workers, s3cfg=None):
    conn = [{"transport": {"name": "file_input", "config": {"path": path}},
             "format": {"name": fmt}}]
    if s3cfg:
        conn = [{"transport": {"name": "s3_input", "config": s3cfg}, "format": {"name": fmt}}]
    prog = os.path.join(d, "p.sql")
    with open(prog, "w") as f:
        f.write("CREATE TABLE t (id BIGINT, v BIGINT, s VARCHAR, d DECIMAL(12,2)) "
                "WITH ('connectors' = '%s');\n" % json.dumps(conn))
        f.write("CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS sv FROM t;\n")
    dump = os.path.join(d, "dump")
    t = time.monotonic()
    p = subprocess.run([SLUICE, "run", prog, "--workers", str(workers), "--until-done",
                        "--no-progress", "--dump", dump], capture_output=True, text=True)
    wall = time.monotonic() - t
    if p.returncode:
        sys.exit("sluice failed: %s" % p.stderr[-2000:])
    with open(os.path.join(dump, "agg.csv")) as f:
        f.readline()
        n, sv = f.readline().strip().split(",")
    return wall, int(n), int(sv)


def cpus_available():
    """CPUs two busy processes actually get now (other load on a shared
    machine caps any speed-up): their CPU time over the wall time."""
    t = time.monotonic()
    before = os.times()
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            x = 0
            for i in range(5_000_000):
                x += i
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.monotonic() - t
    after = os.times()
    return (after.children_user - before.children_user +
            after.children_system - before.children_system) / wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="csv,json")
    ap.add_argument("--s3", action="store_true")
    a = ap.parse_args()
    cpus = cpus_available()
    print("CPUs available to 2 busy processes now: %.2f (of %d)" % (cpus, os.cpu_count()))
    out = {"rows": a.rows, "runs": a.runs, "cpus_available": cpus, "results": {}}
    with tempfile.TemporaryDirectory(prefix="sluice-fb-") as d:
        paths, total = write_data(d, a.rows)
        cases = [(fmt, fmt, None) for fmt in a.formats.split(",")]
        srv = None
        if a.s3:
            sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
            import s3server
            srv = s3server.SwiftS3(os.path.join(d, "swift"))
            srv.start()
            srv.create_bucket("bench")
            with open(paths["csv"], "rb") as f:
                data = f.read()
            cuts = [0]
            for k in range(1, 8):
                cuts.append(data.index(b"\n", len(data) * k // 8) + 1)
            cuts.append(len(data))
            for k in range(8):
                srv.put_object("bench", "rows/%02d.csv" % k, data[cuts[k]:cuts[k + 1]])
            del data
            cases.append(("s3-csv", "csv", {
                "bucket_name": "bench", "prefix": "rows/", "endpoint_url": srv.endpoint,
                "region": srv.region, "aws_access_key_id": srv.access_key,
                "aws_secret_access_key": srv.secret_key}))
        try:
            run_cases(a, d, paths, total, cases, out)
        finally:
            if srv:
                srv.stop()
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "file_backfill.json"), "w") as f:
        json.dump(out, f, indent=1)


def run_cases(a, d, paths, total, cases, out):
    for label, fmt, s3cfg in cases:
        rate = {}
        for w in (1, 2):
            walls = []
            for _ in range(a.runs):
                wall, n, sv = run_one(d, paths[fmt], fmt, w, s3cfg)
                if n != a.rows or sv != total:
                    sys.exit("wrong result: count %d sum %d, expected %d %d"
                             % (n, sv, a.rows, total))
                walls.append(wall)
            rate[w] = a.rows / statistics.median(walls)
            print("%-6s workers=%d  %6.2fM rows/s  (median of %d, %.2f s)"
                  % (label, w, rate[w] / 1e6, a.runs, statistics.median(walls)), flush=True)
        print("%-6s speed-up 2/1 workers: %.2fx" % (label, rate[2] / rate[1]), flush=True)
        out["results"][label] = {"rows_per_s_w1": rate[1], "rows_per_s_w2": rate[2],
                                 "speedup": rate[2] / rate[1]}


if __name__ == "__main__":
    main()

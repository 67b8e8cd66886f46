#!/usr/bin/python3
"""bench/bench.py - Sluice benchmarks (run by `make bench`, never by `make test`).

Runs each benchmark several times and reports the median: the bank program's
backfill through the CLI (1 and 2 workers; 10M and 100M rows), its
incremental steps (insert 1%, delete 1% after the backfill) through
build/bench/bank_bench, pipeline start-up, a join-heavy and a distinct-heavy
variant, the physical-limit probe (plain C, same distributions, same thread
count), and the peers DuckDB (npm @duckdb/node-api) and SQLite. Prints one
table; writes bench/results/<name>.json for every benchmark.

usage: bench/bench.py [--sizes 10000000,100000000] [--runs 3] [--quick]
       [--no-peers] [--sqlite-max 10000000]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "build", "sluice")
BANK_BENCH = os.path.join(ROOT, "build", "bench", "bank_bench")
PROBE = os.path.join(ROOT, "build", "bench", "probe")
RESULTS = os.path.join(ROOT, "bench", "results")
PEERS = os.path.join(ROOT, "bench", "peers")


def run(cmd, **kw):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return wall, p.stdout, p.stderr


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in output:\n" + text[-1000:])


def median(values):
    return statistics.median(values)


def with_limit(program, n, tmpdir):
    """The program with its datagen limits rewritten to n (the biggest table)."""
    text = open(os.path.join(ROOT, program)).read()
    text = re.sub(r'"limit": (100000000|10000000)\b', '"limit": %d' % n, text)
    path = os.path.join(tmpdir, "%s.%d.sql" % (os.path.basename(program), n))
    with open(path, "w") as f:
        f.write(text)
    return path


def sluice_run(program, workers, runs):
    walls, peaks, rows = [], [], 0
    for _ in range(runs):
        wall, _, err = run([SLUICE, "run", program, "--until-done", "--no-progress",
                            "--workers", str(workers)])
        m = re.search(r"done: .* peak memory ([0-9.]+) MB", err)
        walls.append(wall)
        peaks.append(float(m.group(1)) if m else float("nan"))
    return median(walls), max(peaks)


def ensure_duckdb():
    if not shutil.which("node") or not shutil.which("npm"):
        return False
    if not os.path.isdir(os.path.join(PEERS, "node_modules", "@duckdb")):
        print("bench: installing @duckdb/node-api into bench/peers/node_modules ...", flush=True)
        p = subprocess.run(["npm", "install", "--prefix", PEERS, "--no-audit", "--no-fund"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("bench: npm install failed; skipping DuckDB:\n" + p.stderr[-500:])
            return False
    return True


def save(name, obj):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(obj, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000000,100000000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1M and 10M rows, 1 run")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--sqlite-max", type=int, default=10000000)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    runs = a.runs
    if a.quick:
        sizes, runs = [1000000, 10000000], 1
    rows_out = []  # table rows
    tmp = tempfile.mkdtemp(prefix="sluice-bench-")

    def report(name, rows, workers, wall, peak, ratios, extra=None):
        rec = {"benchmark": name, "rows": rows, "workers": workers, "wall_s": wall,
               "rows_per_s": rows / wall if wall else None, "peak_rss_mb": peak,
               "ratios": ratios, "runs": runs}
        if extra:
            rec.update(extra)
        rows_out.append(rec)
        save("%s-%d-w%d" % (re.sub(r"[^a-z0-9%+-]+", "_", name.lower()).strip("_"), rows,
                            workers), rec)
        print("  %-34s %12d %3d %9.3f s %12s/s %8s MB  %s" % (
            name, rows, workers, wall, "%.2fM" % (rows / wall / 1e6) if wall else "-",
            "%.1f" % peak if peak == peak else "-",
            "  ".join("%s %.2fx" % kv for kv in ratios.items())), flush=True)

    have_duck = not a.no_peers and ensure_duckdb()
    print("%-36s %12s %3s %11s %14s %11s  %s" % ("benchmark", "rows", "w", "wall", "rows/s",
                                                 "peak RSS", "ratios"))
    # start-up: compile, plan, spawn workers, run an empty input to completion
    empty = with_limit("examples/bank.sql", 0, tmp)
    walls = [run([SLUICE, "run", empty, "--until-done", "--no-progress"])[0] for _ in range(5)]
    report("startup (bank, 0 rows)", 0, 1, median(walls), float("nan"), {})

    for n in sizes:
        bank = with_limit("examples/bank.sql", n, tmp)
        probe = {}
        for w in (1, 2):
            t = [last_json(run([PROBE, str(n), str(w)])[1])["seconds"] for _ in range(runs)]
            probe[w] = median(t)
            report("probe (plain C limit)", n, w, probe[w], float("nan"), {})
        duck = None
        if have_duck:
            try:
                outs = [last_json(run(["node", os.path.join(PEERS, "duckdb_bank.mjs"), str(n),
                                       "2"])[1]) for _ in range(1)]
                duck = outs[0]
                report("duckdb recompute", n, 2, duck["recompute_s"], duck.get("peak_rss_mb",
                                                                              float("nan")), {},
                       {"duckdb": duck})
            except Exception as e:  # a peer failing must not hide our figures
                print("bench: duckdb failed: %s" % e)
        sqlite = None
        if not a.no_peers and n <= a.sqlite_max:
            try:
                sqlite = last_json(run([sys.executable, os.path.join(PEERS, "sqlite_bank.py"),
                                        str(n)])[1])
                report("sqlite recompute", n, 1, sqlite["recompute_s"],
                       sqlite.get("peak_rss_mb", float("nan")), {}, {"sqlite": sqlite})
            except Exception as e:
                print("bench: sqlite failed: %s" % e)
        for w in (1, 2):
            wall, peak = sluice_run(bank, w, runs)
            ratios = {"vs probe": wall / probe[w]}
            if duck:
                ratios["vs duckdb recompute"] = wall / duck["recompute_s"]
            report("sluice bank backfill", n, w, wall, peak, ratios)
        for w in (1, 2):
            res = [last_json(run([BANK_BENCH, bank, str(n), str(w)])[1]) for _ in range(runs)]
            ins = median([r["insert_1pct_step_s"] for r in res])
            dele = median([r["delete_1pct_step_s"] for r in res])
            backfill = median([r["backfill_s"] for r in res])
            ratios = {"vs own backfill": ins / backfill}
            if duck:
                ratios["vs duckdb recompute"] = ins / duck["recompute_after_append_s"]
            report("sluice bank +1% step", n // 100, w, ins, max(r["peak_rss_mb"] for r in res),
                   ratios, {"backfill_s": backfill})
            report("sluice bank -1% step", n // 100, w, dele, max(r["peak_rss_mb"] for r in res),
                   {"vs own backfill": dele / backfill})
        for prog, name in (("bench/join.sql", "sluice join-heavy"),
                           ("bench/distinct.sql", "sluice distinct-heavy")):
            if n > 10000000:
                continue  # their state grows with the input: keep them at <= 10M rows
            p = with_limit(prog, n, tmp)
            for w in (1, 2):
                wall, peak = sluice_run(p, w, runs)
                report(name, n, w, wall, peak, {})
    save("summary", rows_out)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

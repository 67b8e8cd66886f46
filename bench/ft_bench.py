#!/usr/bin/python3
"""bench/ft_bench.py - fault-tolerance benchmark (run by `make bench`).

Measures, with the release binary and storage in a temporary directory:

- bank backfill (examples/bank.sql, N rows) without storage, and with
  storage and a checkpoint every 0.5 s: throughput of each and their ratio
  (the cost of the journal and of checkpoints written while steps go on);
- the bank pipeline's final checkpoint: time and bytes;
- restart-to-running: starting the finished bank pipeline again on its
  storage until it has resumed (nothing to replay) and exited;
- a materialized table of M rows (10M by default) of state: a checkpoint
  after the backfill (time, bytes), a second checkpoint of the unchanged
  state (time; target under 100 ms), and restart-to-running (load of the
  whole state).

Prints a table and writes bench/results/fault_tolerance.json.

usage: bench/ft_bench.py [--quick] [--rows N] [--state-rows M]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "build", "sluice")
RESULTS = os.path.join(ROOT, "bench", "results")


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def run(args, env=None):
    t0 = time.perf_counter()
    p = subprocess.run([SLUICE] + [str(a) for a in args], capture_output=True, text=True,
                       env=env)
    el = time.perf_counter() - t0
    if p.returncode:
        sys.exit("sluice failed:\n" + p.stderr[-3000:])
    return el, p.stderr


def bank(tmp, rows):
    sql = open(os.path.join(ROOT, "examples", "bank.sql")).read().replace("100000000", str(rows))
    prog = os.path.join(tmp, "bank.sql")
    open(prog, "w").write(sql)
    res = {}
    el, _ = run(["run", prog, "--until-done", "--no-progress"])
    res["plain_secs"] = el
    st = os.path.join(tmp, "bank-storage")
    el, err = run(["run", prog, "--until-done", "--no-progress", "--storage", st,
                   "--checkpoint-interval", "0.5"])
    res["storage_secs"] = el
    res["rows"] = rows
    res["plain_rows_per_sec"] = rows / res["plain_secs"]
    res["storage_rows_per_sec"] = rows / res["storage_secs"]
    res["throughput_ratio"] = res["plain_secs"] / res["storage_secs"]
    m = re.search(r"checkpoint at step (\d+) written to .* \(([\d.]+) s\)", err)
    res["final_checkpoint_secs"] = float(m.group(2)) if m else None
    res["storage_bytes"] = dir_bytes(st)
    el, err = run(["run", prog, "--until-done", "--no-progress", "--storage", st])
    assert "resuming from the checkpoint" in err, err
    res["restart_secs"] = el
    return res


def get(url):
    with urllib.request.urlopen(url, timeout=600) as r:
        return json.loads(r.read())


def post(url):
    req = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def checkpoint(base):
    seq = post(base + "/checkpoint")["checkpoint_sequence_number"]
    while True:
        st = get(base + "/checkpoint_status")
        if st["success"] is not None and st["success"] >= seq:
            return st["last"]
        if st["failure"]:
            sys.exit("checkpoint failed: %s" % st["failure"])
        time.sleep(0.005)


def table_state(tmp, rows):
    prog = os.path.join(tmp, "state.sql")
    open(prog, "w").write("""
CREATE TABLE t (id BIGINT NOT NULL, v INT NOT NULL, s VARCHAR) WITH (
  'materialized' = 'true',
  'connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 1, "plan": [{
      "limit": %d, "fields": {"id": {"strategy": "increment"}, "v": {"range": [0, 1000]},
      "s": {"strategy": "word"}}}]}}}]');
CREATE MATERIALIZED VIEW n AS SELECT COUNT(*) AS n FROM t;
""" % rows)
    # backfill cost of storage: the history kept for pause-free checkpoints
    plain, _ = run(["run", prog, "--until-done", "--no-progress"])
    with_st, err = run(["run", prog, "--until-done", "--no-progress", "--storage",
                        os.path.join(tmp, "state-once"), "--checkpoint-interval", "0"])
    m = re.search(r"checkpoint at step \d+ written to .* \(([\d.]+) s\)", err)
    final_ck = float(m.group(1)) if m else 0.0
    st = os.path.join(tmp, "state-storage")
    errp = os.path.join(tmp, "state.err")
    p = subprocess.Popen([SLUICE, "run", prog, "--http", "127.0.0.1:0", "--no-progress",
                          "--storage", st, "--checkpoint-interval", "0"],
                         stdout=subprocess.DEVNULL, stderr=open(errp, "w"))
    port = None
    while port is None:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(errp).read())
        if m:
            port = int(m.group(1))
        elif p.poll() is not None:
            sys.exit(open(errp).read())
        time.sleep(0.01)
    base = "http://127.0.0.1:%d" % port
    t0 = time.perf_counter()
    while not get(base + "/status").get("inputs_ended"):
        time.sleep(0.05)
    res = {"rows": rows, "backfill_secs": time.perf_counter() - t0,
           "backfill_plain_secs": plain, "backfill_storage_secs": with_st,
           "final_checkpoint_secs": final_ck}
    first = checkpoint(base)
    res["checkpoint_secs"] = first["secs"]
    res["checkpoint_pause_secs"] = first["pause_secs"]
    res["checkpoint_bytes"] = first["bytes_written"]
    again = checkpoint(base)
    res["unchanged_checkpoint_secs"] = again["secs"]
    res["unchanged_files_written"] = again["files_written"]
    post(base + "/stop")
    p.wait()
    res["storage_bytes"] = dir_bytes(st)
    # restart-to-running: until the HTTP API answers (state loaded)
    t0 = time.perf_counter()
    errp2 = os.path.join(tmp, "state2.err")
    p = subprocess.Popen([SLUICE, "run", prog, "--http", "127.0.0.1:0", "--no-progress",
                          "--storage", st], stdout=subprocess.DEVNULL, stderr=open(errp2, "w"))
    while not re.search(r"listening on", open(errp2).read()):
        if p.poll() is not None:
            sys.exit(open(errp2).read())
        time.sleep(0.002)
    res["restart_secs"] = time.perf_counter() - t0
    port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", open(errp2).read()).group(1))
    post("http://127.0.0.1:%d/stop" % port)
    p.wait()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--state-rows", type=int, default=None)
    a = ap.parse_args()
    rows = a.rows or (10_000_000 if a.quick else 100_000_000)
    srows = a.state_rows or (1_000_000 if a.quick else 10_000_000)
    tmp = tempfile.mkdtemp(prefix="sluice-ftbench-")
    try:
        b = bank(tmp, rows)
        s = table_state(tmp, srows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("fault tolerance (release build, storage on local disk)")
    print("  bank %dM rows: %.2f s plain (%.1fM rows/s), %.2f s with storage + checkpoint "
          "every 0.5 s (%.1fM rows/s): %.0f%% of plain throughput" % (
              rows // 1_000_000, b["plain_secs"], b["plain_rows_per_sec"] / 1e6,
              b["storage_secs"], b["storage_rows_per_sec"] / 1e6, 100 * b["throughput_ratio"]))
    print("  bank final checkpoint %.3f s, storage %.1f KB, restart-to-done %.3f s" % (
        b["final_checkpoint_secs"] or -1, b["storage_bytes"] / 1024, b["restart_secs"]))
    print("  table of %dM rows: checkpoint %.3f s (pipeline paused %.3f s of it; %.1f MB "
          "written), unchanged checkpoint %.1f ms (%d files written), restart-to-serving "
          "%.3f s, storage %.1f MB" % (
              srows // 1_000_000, s["checkpoint_secs"], s["checkpoint_pause_secs"],
              s["checkpoint_bytes"] / 1e6,
              1000 * s["unchanged_checkpoint_secs"], s["unchanged_files_written"],
              s["restart_secs"], s["storage_bytes"] / 1e6))
    print("  table of %dM rows, backfill to the end: %.2f s plain, %.2f s with storage, of "
          "which %.2f s its final checkpoint at the stop" % (
              srows // 1_000_000, s["backfill_plain_secs"], s["backfill_storage_secs"],
              s["final_checkpoint_secs"]))
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "fault_tolerance.json"), "w") as f:
        json.dump({"bank": b, "table_state": s}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/join_peer.py - the join-heavy benchmark beside DuckDB (issue 16).

bench/join.sql (N orders joined to 100K customers, summed per region):
  - Sluice's backfill through the CLI (`--until-done`, 1 and 2 workers),
    median wall time and peak memory;
  - a 1% update: the same program with `--http`, once the backfill is in,
    N/100 new orders pushed as one CSV request (`/ingress/orders?wait=true`,
    answered once the step that applied them has run), median of 3 pushes;
    the view's order count is checked after each; beside it the issue's
    measure, the push's step from its start to the view's change
    (/stats global_metrics.last_step.view_msecs: the engine's clock, no
    HTTP transfer nor CSV parsing; and view_cpu_msecs, the CPU it took);
  - DuckDB (bench/peers/duckdb_join.mjs, same sizes and distributions) from
    scratch, and after appending the same 1%;
and prints the ratios. Writes bench/results/join_peer.json.

usage: bench/join_peer.py [--n 10000000] [--runs 3] [--no-peers]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (run, last_json, median, with_limit, ensure_duckdb, save)


def peak_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def http(port, path, body=None, timeout=600):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def orders_in_view(port):
    q = urllib.parse.quote("SELECT SUM(orders) AS n FROM sales_by_region")
    rows = [json.loads(l) for l in http(port, "/query?format=json&sql=" + q).splitlines()
            if l.strip()]
    return rows[0]["n"] if rows and rows[0]["n"] is not None else 0


def sluice_update(program, n, workers, pushes, tmp):
    """Backfill with --http, then time pushes of n/100 orders each."""
    log = open(os.path.join(tmp, "join_update.log"), "w+")
    p = subprocess.Popen([B.SLUICE, "run", program, "--http", "127.0.0.1:0", "--no-progress",
                          "--workers", str(workers)], stdout=subprocess.DEVNULL, stderr=log)
    try:
        port = None
        while port is None:
            if p.poll() is not None:
                raise RuntimeError("sluice exited: " + open(log.name).read()[-2000:])
            text = open(log.name).read()
            if "listening on 127.0.0.1:" in text:
                port = int(text.split("listening on 127.0.0.1:")[1].split()[0])
            else:
                time.sleep(0.05)
        while orders_in_view(port) < n:
            time.sleep(0.05)
        rng = random.Random(7)
        k, total, times, steps, cpus = n // 100, n, [], [], []
        for i in range(pushes):
            body = "".join("%d,%d,%d\n" % (total + j, rng.randrange(100000), rng.randrange(1, 100))
                           for j in range(k)).encode()
            t = time.monotonic()
            reply = json.loads(http(port, "/ingress/orders?format=csv&wait=true", body))
            times.append(time.monotonic() - t)
            total += k
            last = json.loads(http(port, "/stats"))["global_metrics"].get("last_step", {})
            if last.get("records") != k:  # one step applied the whole push
                raise RuntimeError("push %d: the newest step is %s, not the push's" % (i, last))
            steps.append(last["view_msecs"] / 1000.0)
            cpus.append(last["view_cpu_msecs"] / 1000.0)
            if reply.get("error_count") or orders_in_view(port) != total:
                raise RuntimeError("push %d: %s; view counts %d orders, want %d" % (
                    i, reply, orders_in_view(port), total))
        return B.median(times), times, B.median(steps), steps, B.median(cpus), peak_mb(p.pid)
    finally:
        p.terminate()
        p.wait(timeout=120)
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true")
    a = ap.parse_args()
    import tempfile
    tmp = tempfile.mkdtemp(prefix="sluice-join-peer-")
    prog = B.with_limit("bench/join.sql", a.n, tmp)
    out = {"n": a.n, "sluice": {}, "duckdb": {}}
    duck = {}
    if not a.no_peers and B.ensure_duckdb():
        for t in (1, 2):
            duck[t] = B.last_json(B.run(["node", os.path.join(B.PEERS, "duckdb_join.mjs"),
                                         str(a.n), str(t)])[1])
            out["duckdb"][t] = duck[t]
    print("%-34s %8s %10s %10s  %s" % ("join-heavy, N=%d" % a.n, "workers", "seconds",
                                        "peak MB", "ratio"))
    for w in (1, 2):
        wall, peak = B.sluice_run(prog, w, a.runs)
        upd, upd_all, step, step_all, step_cpu, upd_peak = sluice_update(prog, a.n, w, a.runs, tmp)
        out["sluice"][w] = {"backfill_s": wall, "backfill_peak_mb": peak,
                            "update_1pct_s": upd, "update_1pct_runs_s": upd_all,
                            "update_1pct_step_s": step, "update_1pct_step_runs_s": step_all,
                            "update_1pct_step_cpu_s": step_cpu,
                            "update_peak_mb": upd_peak}
        d = duck.get(w)
        print("%-34s %8d %10.3f %10.0f  %s" % ("sluice backfill", w, wall, peak,
              "%.1fx duckdb recompute" % (wall / d["recompute_s"]) if d else ""))
        print("%-34s %8d %10.3f %10.0f  %s" % ("sluice +1%% (%d orders, HTTP)" % (a.n // 100), w,
              upd, upd_peak, "%.2fx duckdb append+recompute" % (
                  upd / (d["append_s"] + d["recompute_after_append_s"])) if d else ""))
        print("%-34s %8d %10.3f %10s  %s(CPU %.3f s)" % ("sluice +1% step start->view", w, step,
              "", "%.3fx duckdb append+recompute " % (
                  step / (d["append_s"] + d["recompute_after_append_s"])) if d else "", step_cpu))
        if d:
            print("%-34s %8d %10.3f %10.0f" % ("duckdb recompute", w, d["recompute_s"],
                                               d["peak_rss_mb"]))
            print("%-34s %8d %10.3f" % ("duckdb append 1% + recompute", w,
                                        d["append_s"] + d["recompute_after_append_s"]))
    B.save("join_peer", out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/http_bench.py - HTTP ingest benchmark (run by `make bench`).

Starts the release binary with `--http 127.0.0.1:0` on a keyed table
(PRIMARY KEY, so every record goes through the upsert operator) with a
materialized aggregate over it, and measures over loopback:

- ingest throughput: records/s pushed with POST /ingress in batches of 1,
  100 and 10,000 rows, JSON (insert_delete) and CSV, from Python client
  threads with keep-alive connections and bodies built in advance, into the
  keyed table ("key") and, for large batches, into a table without a key
  ("log", no upsert); the clock stops when the last batch has been
  processed (?wait=true). Also records per second of server CPU time
  (cpu_msecs from /stats): the per-core figure, since client and server
  share the machine's cores.
- latency: p50/p99 time from sending a one-row push to a subscriber of
  /egress (another process) seeing it, at a moderate load (200 pushes/s),
  on a fresh pipeline.

Prints a table and writes bench/results/http_ingest.json.

usage: bench/http_bench.py [--quick] [--workers N] [--clients N]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "build", "sluice")
RESULTS = os.path.join(ROOT, "bench", "results")

PROG = """
CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR, amount DOUBLE, qty INT);
CREATE MATERIALIZED VIEW totals AS SELECT COUNT(*) AS n, SUM(qty) AS q FROM t;
CREATE VIEW ids AS SELECT id FROM t;
CREATE TABLE log (id BIGINT NOT NULL, name VARCHAR, amount DOUBLE, qty INT);
CREATE MATERIALIZED VIEW log_totals AS SELECT COUNT(*) AS n, SUM(qty) AS q FROM log;
"""


class Server:
    def __init__(self, workers):
        self.dir = tempfile.mkdtemp(prefix="sluice-http-bench-")
        prog = os.path.join(self.dir, "p.sql")
        with open(prog, "w") as f:
            f.write(PROG)
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen(
            [SLUICE, "run", prog, "--http", "127.0.0.1:0", "--no-progress", "--workers",
             str(workers), "--http-max-body", "1G", "--http-buffer", "4000000"],
            stdout=subprocess.DEVNULL, stderr=self.err)
        for _ in range(500):
            self.err.seek(0)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.err.read())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.01)
        raise RuntimeError("sluice did not start")

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def request(self, method, path, body=None):
        c = self.conn()
        c.request(method, path, body=body)
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return data

    def stats(self):
        return json.loads(self.request("GET", "/stats"))["global_metrics"]

    def stop(self):
        try:
            self.request("POST", "/stop")
        except Exception:  # noqa: BLE001
            pass
        self.proc.wait(timeout=120)


def bodies(fmt, batch, nbatches, start):
    """nbatches request bodies of batch rows each, ids from start."""
    out = []
    i = start
    for _ in range(nbatches):
        if fmt == "json":
            rows = ['{"insert":{"id":%d,"name":"customer %d","amount":%d.25,"qty":%d}}'
                    % (k, k % 1000, k % 977, k % 7) for k in range(i, i + batch)]
        else:
            rows = ["%d,customer %d,%d.25,%d" % (k, k % 1000, k % 977, k % 7)
                    for k in range(i, i + batch)]
        out.append(("\n".join(rows) + "\n").encode())
        i += batch
    return out, i


def throughput(srv, fmt, batch, total, clients, start, table="t"):
    nb = max(1, total // batch)
    per = [[] for _ in range(clients)]
    allb, nxt = bodies(fmt, batch, nb, start)
    for k, b in enumerate(allb):
        per[k % clients].append(b)
    path = "/ingress/%s?format=%s" % (table, fmt)
    errors = []

    def client(mine):
        try:
            c = srv.conn()
            for b in mine:
                for _ in range(10000):
                    c.request("POST", path, body=b)
                    r = c.getresponse()
                    r.read()
                    if r.status != 503:
                        break
                    time.sleep(0.001)
                if r.status != 200:
                    raise RuntimeError("push failed: %d" % r.status)
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    g0 = srv.stats()
    t0 = time.monotonic()
    ths = [threading.Thread(target=client, args=(m,)) for m in per if m]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    # the clock stops when everything pushed has been processed
    srv.request("POST", "/ingress/%s?format=csv&wait=true" % table, b"%d,end,0,0\n" % nxt)
    wall = time.monotonic() - t0
    g1 = srv.stats()
    if errors:
        raise errors[0]
    rows = nb * batch
    cpu = (g1["cpu_msecs"] - g0["cpu_msecs"]) / 1000.0
    return {"table": table, "format": fmt, "batch": batch, "records": rows, "seconds": wall,
            "records_per_s": rows / wall, "server_cpu_s": cpu,
            "records_per_cpu_s": rows / cpu if cpu > 0 else None,
            "bytes": sum(len(b) for b in allb)}, nxt + 1


def follow(port, n_expected, ready, out):
    """Subscriber process: time every id seen on /egress/ids (monotonic
    clock, shared by the processes of this machine)."""
    import socket as so
    seen = {}
    s = so.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /egress/ids?format=json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
              b"Content-Length: 0\r\n\r\n" % port)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    buf = buf.split(b"\r\n\r\n", 1)[1]
    ready.set()
    while len(seen) < n_expected:
        chunk = s.recv(65536)
        if not chunk:
            break
        now = time.monotonic()
        buf += chunk
        # chunked transfer encoding around JSON lines: take every JSON line
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            line = line.strip()
            if line.startswith(b"{"):
                for x in json.loads(line)["json_data"]:
                    if "insert" in x:
                        seen[x["insert"]["id"]] = now
    s.close()
    out.put(seen)


def latency(srv, n, rate, start):
    """p50/p99 ms from sending a one-row push to a subscriber (another
    process) seeing it."""
    import multiprocessing as mp
    ready, out = mp.Event(), mp.Queue()
    sub = mp.Process(target=follow, args=(srv.port, n, ready, out))
    sub.start()
    ready.wait(30)
    c = srv.conn()
    sent, rtt = {}, []
    gap = 1.0 / rate
    next_t = time.monotonic()
    for k in range(n):
        i = start + k
        body = b'{"insert":{"id":%d,"name":"lat","amount":1.5,"qty":1}}\n' % i
        sent[i] = time.monotonic()
        c.request("POST", "/ingress/t?format=json", body=body)
        r = c.getresponse()
        r.read()
        rtt.append((time.monotonic() - sent[i]) * 1000.0)
        next_t += gap
        d = next_t - time.monotonic()
        if d > 0:
            time.sleep(d)
    seen = out.get(timeout=120)
    sub.join(30)
    lat = sorted((seen[i] - sent[i]) * 1000.0 for i in sent if i in seen)
    rtt.sort()
    q = lambda a, p: a[min(len(a) - 1, int(p * len(a)))]  # noqa: E731
    return {"pushes": n, "rate_per_s": rate, "seen": len(lat), "p50_ms": q(lat, 0.50),
            "p99_ms": q(lat, 0.99), "max_ms": lat[-1], "push_rtt_p50_ms": q(rtt, 0.50),
            "push_rtt_p99_ms": q(rtt, 0.99)}, start + n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--clients", type=int, default=4)
    a = ap.parse_args()
    if not os.access(SLUICE, os.X_OK):
        sys.exit("build/sluice is missing: run make first")
    scale = 0.2 if a.quick else 1.0
    plan = [(1, int(20000 * scale)), (100, int(400000 * scale)), (10000, int(2000000 * scale))]
    srv = Server(a.workers)
    results = {"workers": a.workers, "clients": a.clients, "throughput": [], "latency": None}
    nxt = 0
    try:
        runs = [("t", fmt, b, n) for fmt in ("json", "csv") for b, n in plan]
        runs += [("log", fmt, 10000, plan[-1][1]) for fmt in ("json", "csv")]
        for table, fmt, batch, total in runs:
            r, nxt = throughput(srv, fmt, batch, total, a.clients, nxt, table)
            results["throughput"].append(r)
            print("push %-3s %-4s batch %6d: %9.0f records/s  (%d records in %.2f s; "
                  "%s records per server CPU-second)" % (
                      "key" if table == "t" else "log", fmt, batch, r["records_per_s"],
                      r["records"], r["seconds"],
                      "%.0f" % r["records_per_cpu_s"] if r["records_per_cpu_s"] else "-"),
                  flush=True)
        results["final_stats"] = srv.stats()
    finally:
        srv.stop()
    # latency on a fresh pipeline: not behind the millions of keys above
    srv = Server(a.workers)
    try:
        lr, nxt = latency(srv, int(1000 * scale) or 100, 200, 0)
        results["latency"] = lr
        print("push -> subscriber latency at %d pushes/s: p50 %.2f ms, p99 %.2f ms, max %.2f ms "
              "(%d samples); the push's own round trip: p50 %.2f ms, p99 %.2f ms" % (
                  lr["rate_per_s"], lr["p50_ms"], lr["p99_ms"], lr["max_ms"], lr["seen"],
                  lr["push_rtt_p50_ms"], lr["push_rtt_p99_ms"]), flush=True)
    finally:
        srv.stop()
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "http_ingest.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/kafka_bench.py - Kafka in -> view -> Kafka out (not part of `make test`).

Builds tests/tools/tool_kafka_mock.c with -O2 (librdkafka's mock cluster in
a process of its own, on loopback), produces N JSON records into a topic
(one partition per 25,000 records, at least 4: the mock keeps only the
newest few MB of a partition and silently drops older messages), then starts the release binary on

    t (kafka_input, earliest)  ->  big = SELECT id, v FROM t WHERE v >= 500
                                   (kafka_output, transactional, to "out")

and measures the time from the start until every record has been applied
(a materialized COUNT over t, polled through /query) and until the output
topic holds every change (read_committed). Records/s in, per second of the
pipeline's CPU time (cpu_msecs from /stats: the per-core figure, since the
mock broker shares the machine's cores), and out. Optionally with
--storage (exactly_once: checkpoints and the step journal).

With --rate R, measures end-to-end lag at a steady rate instead: a
producer sends R records/s for --seconds S (default 20), each stamped with
its send time (wall clock, microseconds) in a column "ts" that the view
passes through; a read_committed consumer (kcat, started before the
producer) stamps every output message when it arrives. Lag = arrival -
send time; p50/p95/p99/max over every record of the run, and the records
that never arrived (must be 0). One record goes through first and the
clock starts when it has arrived (its lag, printed as first_record_ms,
is the producer's and consumers' start-up: connections and metadata).

Prints a table and writes bench/results/kafka.json (kafka_lag.json).

usage: bench/kafka_bench.py [--quick] [--records N] [--workers N] [--storage]
       bench/kafka_bench.py --rate R [--seconds S] [--workers N] [--storage]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.path.join(ROOT, "build", "sluice")
MOCK = os.path.join(ROOT, "build", "bench", "kafka_mock")
RESULTS = os.path.join(ROOT, "bench", "results")


def build_mock():
    os.makedirs(os.path.dirname(MOCK), exist_ok=True)
    flags = subprocess.check_output(["pkg-config", "--cflags", "--libs", "rdkafka"], text=True)
    subprocess.check_call(["cc", "-O2", "-o", MOCK, os.path.join(ROOT, "tests", "tools",
                                                                 "tool_kafka_mock.c")] +
                          flags.split())


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=60) as r:
        return r.read().decode()


def count(port):
    q = urllib.parse.quote("SELECT n FROM total")
    rows = [json.loads(l) for l in get(port, "/query?format=json&sql=" + q).splitlines() if l]
    return rows[0]["n"] if rows else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--storage", action="store_true")
    ap.add_argument("--rate", type=int, help="steady rate (records/s): measure lag")
    ap.add_argument("--seconds", type=float, default=20.0)
    # librdkafka's default is 500 ms. A real broker answers a fetch as soon
    # as data arrives; the mock cluster was seen to answer only when the
    # wait runs out (lag spread evenly over 0-500 ms at 10K records/s), so
    # the bench sets 10 ms on both consumers.
    ap.add_argument("--fetch-wait-ms", type=int, default=10,
                    help="kafka_input's fetch.wait.max.ms (default 10; librdkafka's: 500)")
    a = ap.parse_args()
    if a.rate:
        return steady(a)
    n = a.records or (200_000 if a.quick else 1_000_000)
    parts = max(4, n // 25_000 + 1)  # the mock keeps a partition's newest ~5 MB only
    subprocess.check_call(["make", "--no-print-directory", "-C", ROOT, "build/sluice"])
    build_mock()
    tmp = tempfile.mkdtemp(prefix="kafka_bench.")
    mock = subprocess.Popen([MOCK, "3", "ev:%d" % parts, "out:%d" % parts], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    proc = None
    try:
        bs = mock.stdout.readline().split()[1]
        body = "".join('{"id": %d, "v": %d}\n' % (i, (i * 7919) % 1000) for i in range(n))
        t0 = time.monotonic()
        subprocess.run([MOCK, "produce", bs, "ev"], input=body, text=True, check=True,
                       stdout=subprocess.DEVNULL)
        t_produce = time.monotonic() - t0
        want_out = sum(1 for i in range(n) if (i * 7919) % 1000 >= 500)
        sql = program(bs, "id BIGINT NOT NULL, v BIGINT", "id, v", "v >= 500",
                      {"start_from": "earliest"}) + \
            "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n FROM t;\n"
        t0 = time.monotonic()
        proc, port = start_sluice(tmp, sql, a)
        while count(port) < n:
            time.sleep(0.01)
        t_in = time.monotonic() - t0
        cpu = json.loads(get(port, "/stats"))["global_metrics"].get("cpu_msecs", 0) / 1000.0
        got = 0
        while got < want_out:
            out = subprocess.run([MOCK, "consume", bs, "out"], capture_output=True, text=True,
                                 check=True).stdout
            got = out.count("\n")
        t_out = time.monotonic() - t0
        res = {"records": n, "workers": a.workers, "storage": a.storage,
               "produce_secs": round(t_produce, 3), "in_secs": round(t_in, 3),
               "in_records_per_sec": round(n / t_in), "cpu_secs": round(cpu, 3),
               "records_per_cpu_sec": round(n / cpu) if cpu else None,
               "out_messages": want_out, "in_to_out_secs": round(t_out, 3)}
        print("kafka in -> view -> kafka out: %d records, %d workers%s" % (
            n, a.workers, ", exactly_once storage" if a.storage else ""))
        for k, v in res.items():
            print("  %-22s %s" % (k, v))
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "kafka.json"), "w") as f:
            json.dump(res, f, indent=1)
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=120)
        mock.stdin.write("quit\n")
        mock.stdin.flush()
        mock.wait(timeout=60)


def program(bs, cols, select, where, in_config):
    """t (kafka_input from topic ev) -> big = SELECT select FROM t WHERE
    where (kafka_output to topic out, transactional)."""
    conn = lambda d: json.dumps([d])
    cfg = {"bootstrap.servers": bs, "topic": "ev"}
    cfg.update(in_config)
    return ("CREATE TABLE t (%s) WITH ('connectors' = '%s');\n"
            "CREATE VIEW big WITH ('connectors' = '%s') AS SELECT %s FROM t WHERE %s;\n" % (
                cols, conn({"transport": {"name": "kafka_input", "config": cfg},
                            "format": {"name": "json"}}),
                conn({"transport": {"name": "kafka_output", "config": {
                    "bootstrap.servers": bs, "topic": "out"}}, "format": {"name": "json"}}),
                select, where))


def start_sluice(tmp, sql, a):
    prog = os.path.join(tmp, "p.sql")
    open(prog, "w").write(sql)
    log = os.path.join(tmp, "run.log")
    args = [SLUICE, "run", prog, "--http", "127.0.0.1:0", "--no-progress", "--workers",
            str(a.workers)]
    if a.storage:
        args += ["--storage", os.path.join(tmp, "st")]
    proc = subprocess.Popen(args, stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    while True:
        t = open(log).read()
        if "listening on" in t:
            return proc, int(t.split("listening on 127.0.0.1:")[1].split()[0])
        if proc.poll() is not None:
            sys.exit("sluice exited:\n" + t)
        time.sleep(0.01)


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def steady(a):
    """Lag at a steady rate: send time (in the record) to arrival at a
    read_committed consumer of the output topic."""
    import threading
    subprocess.check_call(["make", "--no-print-directory", "-C", ROOT, "build/sluice"])
    build_mock()
    tmp = tempfile.mkdtemp(prefix="kafka_lag.")
    mock = subprocess.Popen([MOCK, "3", "ev:4", "out:4"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    proc = cons = prod = None
    try:
        bs = mock.stdout.readline().split()[1]
        sql = program(bs, "id BIGINT NOT NULL, v BIGINT, ts BIGINT", "id, v, ts", "v >= 0",
                      {"start_from": "earliest", "fetch.wait.max.ms": str(a.fetch_wait_ms)})
        proc, port = start_sluice(tmp, sql, a)
        arrivals = {}
        cons = subprocess.Popen(["kcat", "-C", "-q", "-u", "-b", bs, "-t", "out", "-o",
                                 "beginning", "-X", "isolation.level=read_committed",
                                 "-X", "fetch.wait.max.ms=%d" % a.fetch_wait_ms,
                                 "-f", "%s\n"], stdout=subprocess.PIPE, text=True)

        def read():
            for line in cons.stdout:
                now = time.time()
                try:
                    row = json.loads(line)["insert"]
                except (ValueError, KeyError, TypeError):
                    continue
                arrivals[row["id"]] = (now * 1e6 - row["ts"]) / 1000.0
        th = threading.Thread(target=read, daemon=True)
        th.start()
        prod = subprocess.Popen([MOCK, "produce", bs, "ev"], stdin=subprocess.PIPE, text=True,
                                stdout=subprocess.DEVNULL)
        # one record through every stage first (connections, metadata, the
        # first transaction): the steady state starts once it has arrived
        prod.stdin.write('{"id": -1, "v": 0, "ts": %d}\n' % int(time.time() * 1e6))
        prod.stdin.flush()
        deadline = time.monotonic() + 60
        while -1 not in arrivals and time.monotonic() < deadline:
            time.sleep(0.01)
        first_ms = arrivals.get(-1)
        n, t0, tick = 0, time.monotonic(), 0.005
        while time.monotonic() - t0 < a.seconds:
            due = int((time.monotonic() - t0) * a.rate)
            lines = []
            while n < due:
                lines.append('{"id": %d, "v": %d, "ts": %d}\n' % (n, n % 1000,
                                                                   int(time.time() * 1e6)))
                n += 1
            if lines:
                prod.stdin.write("".join(lines))
                prod.stdin.flush()
            time.sleep(tick)
        prod.stdin.close()
        prod.wait(timeout=120)
        deadline = time.monotonic() + 60
        while len(arrivals) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        lags = sorted(v for k, v in arrivals.items() if k >= 0)
        stats = json.loads(get(port, "/stats"))
        st = stats["global_metrics"]
        cpu = st.get("cpu_msecs", 0) / 1000.0
        inm = stats["inputs"][0]["metrics"] if stats.get("inputs") else {}
        res = {"rate": a.rate, "seconds": a.seconds, "workers": a.workers,
               "storage": a.storage, "records": n, "arrived": len(arrivals),
               "missing": n - (len(arrivals) - (first_ms is not None)),
               "first_record_ms": round(first_ms, 1) if first_ms is not None else None,
               "lag_ms_p50": round(pct(lags, 0.50), 2), "lag_ms_p95": round(pct(lags, 0.95), 2),
               "lag_ms_p99": round(pct(lags, 0.99), 2), "lag_ms_max": round(lags[-1], 2),
               "pipeline_cpu_share": round(cpu / (time.monotonic() - t0), 3),
               # the pipeline's own view: arrival to end of step, and the
               # message timestamp to the step's outputs delivered
               "sluice_processing_ms_p95": inm.get("processing_latency_ms", {}).get("p95"),
               "sluice_event_lag_ms_p95": inm.get("event_time_lag_ms", {}).get("p95")}
        print("kafka in -> view -> kafka out at a steady %d records/s for %g s, %d workers%s" % (
            a.rate, a.seconds, a.workers, ", exactly_once storage" if a.storage else ""))
        for k, v in res.items():
            print("  %-22s %s" % (k, v))
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "kafka_lag.json"), "w") as f:
            json.dump(res, f, indent=1)
    finally:
        for p in (prod, cons, proc):
            if p and p.poll() is None:
                p.terminate()
                p.wait(timeout=120)
        mock.stdin.write("quit\n")
        mock.stdin.flush()
        mock.wait(timeout=60)


if __name__ == "__main__":
    main()

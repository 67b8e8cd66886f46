#!/usr/bin/python3
"""bench/pg_bench.py - PostgreSQL CDC -> view -> PostgreSQL (issue 15).

Starts a throw-away PostgreSQL 15 (tests/e2e/pgserver.py) and the release
binary with a table fed by postgres_cdc_input and an aggregate view written
by postgres_output, then measures:

- snapshot: N rows present at start, from the pipeline's start until the
  output table equals PostgreSQL's own GROUP BY over the source;
- stream: N rows inserted in transactions of T rows after the snapshot,
  from the first insert until the output table equals the GROUP BY again
  (records/s through logical replication, the view, and the upserts);
- backlog: the pipeline stopped (SIGTERM, with --storage), N rows inserted
  in transactions of T rows, then the pipeline restarted: from the restart
  until the output table equals the GROUP BY (the pipeline's own speed
  through decoding, the view and the upserts, the inserts being done);
- lag: single-row inserts at a steady rate while the pipeline runs; for
  each, the time until the output table shows it (p50/p95), polled with
  psql; each sample includes at least two psql launches (the insert and
  the last poll), whose round trip is reported too (psql_roundtrip_ms).

The clock includes PostgreSQL's own work (the inserts, WAL decoding, the
upserts) on the same 2 cores. Prints a table and writes
bench/results/pg_cdc.json.

usage: bench/pg_bench.py [--rows N] [--txn T]
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
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import pgserver  # noqa: E402

SLUICE = os.path.join(ROOT, "build", "sluice")
RESULTS = os.path.join(ROOT, "bench", "results")


def prog(uri):
    cdc = json.dumps([{"transport": {"name": "postgres_cdc_input",
                                     "config": {"uri": uri, "table": "src"}}}])
    out = json.dumps([{"transport": {"name": "postgres_output", "config": {
        "uri": uri, "table": "agg", "key_columns": ["grp"]}}}])
    return ("CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT) "
            "WITH ('connectors' = '%s');\n"
            "CREATE VIEW agg WITH ('connectors' = '%s') AS "
            "SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;\n" % (cdc, out))


def equal(pg):
    a = pg.query("SELECT grp, count(*), sum(v) FROM src GROUP BY grp ORDER BY grp")
    try:
        b = pg.query("SELECT grp, n, s FROM agg ORDER BY grp")
    except RuntimeError:
        return False
    return a == b


def wait(pred, guard=600):
    end = time.monotonic() + guard
    while not pred():
        if time.monotonic() > end:
            raise SystemExit("hung")
        time.sleep(0.01)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--txn", type=int, default=10000)
    a = ap.parse_args()
    pg = pgserver.PgServer()
    pg.start()
    tmp = tempfile.mkdtemp()
    res = {"rows": a.rows, "txn_rows": a.txn}
    try:
        pg.psql("CREATE TABLE src (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint);"
                "INSERT INTO src SELECT i, i %% 1000, i %% 97 FROM generate_series(1, %d) i"
                % a.rows)
        p_path = os.path.join(tmp, "p.sql")
        open(p_path, "w").write(prog(pg.uri))
        t0 = time.monotonic()
        argv = [SLUICE, "run", p_path, "--no-progress", "--storage", os.path.join(tmp, "st")]
        proc = subprocess.Popen(argv, stderr=open(os.path.join(tmp, "err"), "wb"))
        wait(lambda: equal(pg))
        res["snapshot_secs"] = time.monotonic() - t0
        res["snapshot_rows_per_s"] = a.rows / res["snapshot_secs"]
        t0 = time.monotonic()
        base = a.rows
        for k in range(0, a.rows, a.txn):
            pg.psql("INSERT INTO src SELECT i, i %% 1000, i %% 89 FROM generate_series(%d, %d) i"
                    % (base + k + 1, base + k + a.txn))
        res["insert_secs"] = time.monotonic() - t0
        wait(lambda: equal(pg))
        res["stream_secs"] = time.monotonic() - t0
        res["stream_rows_per_s"] = a.rows / res["stream_secs"]
        proc.terminate()
        proc.wait()
        base = 2 * a.rows
        for k in range(0, a.rows, a.txn):
            pg.psql("INSERT INTO src SELECT i, i %% 1000, i %% 83 FROM generate_series(%d, %d) i"
                    % (base + k + 1, base + k + a.txn))
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stderr=open(os.path.join(tmp, "err2"), "wb"))
        wait(lambda: equal(pg))
        res["backlog_secs"] = time.monotonic() - t0
        res["backlog_rows_per_s"] = a.rows / res["backlog_secs"]
        lags = []
        nid = 10 * a.rows
        for k in range(50):
            nid += 1
            g = 5000 + k
            t1 = time.monotonic()
            pg.psql("INSERT INTO src VALUES (%d, %d, 1)" % (nid, g))
            wait(lambda: pg.query("SELECT n FROM agg WHERE grp = %d" % g) == [["1"]])
            lags.append(time.monotonic() - t1)
            time.sleep(0.05)
        lags.sort()
        rt = []
        for k in range(20):  # one psql launch and query: part of every lag sample (twice)
            t1 = time.monotonic()
            pg.query("SELECT 1")
            rt.append(time.monotonic() - t1)
        res["psql_roundtrip_ms"] = 1000 * statistics.median(rt)
        res["lag_p50_ms"] = 1000 * statistics.median(lags)
        res["lag_p95_ms"] = 1000 * lags[int(0.95 * (len(lags) - 1))]
        proc.terminate()
        proc.wait()
    finally:
        pg.remove()
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "pg_cdc.json"), "w") as f:
        json.dump(res, f, indent=1)
    for k, v in res.items():
        print("%-22s %s" % (k, ("%.3f" % v) if isinstance(v, float) else v))


if __name__ == "__main__":
    main()

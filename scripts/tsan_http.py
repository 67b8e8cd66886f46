#!/usr/bin/env python3
"""scripts/tsan_http.py - the HTTP phase of `make tsan` (scripts/run_tsan.sh):
drive a ThreadSanitizer build of sluice through its threads at once. Four
clients push JSON rows concurrently (wait=true) while others read /query,
/stats and /status, a checkpoint is requested (the writer thread, the
ingress log's group commit), and POST /stop ends the run. Every wait is for
an event (a line, a status, the process's exit) under a generous hang guard.
Exit status: the pipeline's (66 when TSan reported a race), 1 on a failed
check.
usage: tsan_http.py SLUICE_BIN WORKDIR"""
import json
import os
import re
import subprocess
import sys
import threading
import time

import requests

PROGRAM = """CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, customer VARCHAR, amount INT NOT NULL)
  WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW totals AS SELECT customer, SUM(amount) AS total, COUNT(*) AS n
  FROM orders GROUP BY customer;
CREATE MATERIALIZED VIEW big AS SELECT * FROM orders WHERE amount > 50;
"""
GUARD = 300  # seconds: a hang guard, never a bound on how long work takes


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "orders.sql")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    log = open(os.path.join(work, "http.log"), "w+")
    p = subprocess.Popen([binary, "run", prog, "--workers", "3", "--http", "127.0.0.1:0",
                          "--storage", os.path.join(work, "storage"),
                          "--checkpoint-interval", "0", "--no-progress"],
                         stdout=subprocess.DEVNULL, stderr=log)
    port = None
    deadline = time.monotonic() + GUARD
    while port is None and time.monotonic() < deadline and p.poll() is None:
        log.seek(0)
        m = re.search(r"listening on [^:\s]+:(\d+)", log.read())
        if m:
            port = int(m.group(1))
        else:
            time.sleep(0.05)
    if port is None:
        p.kill()
        print("tsan_http: sluice did not start listening", file=sys.stderr)
        return 1
    url = "http://127.0.0.1:%d" % port
    errors = []

    def push(k):
        try:
            for b in range(10):
                rows = "\n".join(json.dumps({"id": k * 1000 + b * 10 + i, "customer": "c%d" % (i % 3),
                                             "amount": i * 7}) for i in range(10))
                r = requests.post(url + "/ingress/orders?wait=true", data=rows, timeout=GUARD)
                if r.status_code != 200:
                    errors.append("push: %d %s" % (r.status_code, r.text))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("push: %r" % e)

    def read():
        try:
            for _ in range(10):
                for path in ("/stats", "/status", "/checkpoint_status"):
                    requests.get(url + path, timeout=GUARD)
                requests.post(url + "/query?format=json",
                              data="SELECT customer, total FROM totals ORDER BY customer",
                              timeout=GUARD)
        except Exception as e:  # noqa: BLE001
            errors.append("read: %r" % e)

    threads = [threading.Thread(target=push, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    requests.post(url + "/checkpoint", timeout=GUARD)
    for t in threads:
        t.join(GUARD)
    seq = requests.post(url + "/checkpoint", timeout=GUARD).json()["checkpoint_sequence_number"]
    while time.monotonic() < deadline:
        st = requests.get(url + "/checkpoint_status", timeout=GUARD).json()
        if (st.get("success") or 0) >= seq or st.get("failure"):
            break
        time.sleep(0.05)
    n = requests.post(url + "/query?format=json", data="SELECT COUNT(*) AS n FROM orders",
                      timeout=GUARD).text
    if '"n":400' not in n.replace(" ", ""):
        errors.append("expected 400 rows in orders, /query said %s" % n)
    requests.post(url + "/stop", timeout=GUARD)
    try:
        rc = p.wait(GUARD)
    except subprocess.TimeoutExpired:
        p.kill()
        errors.append("sluice did not stop")
        rc = 1
    for e in errors:
        print("tsan_http: " + e, file=sys.stderr)
    return rc if rc else (1 if errors else 0)


if __name__ == "__main__":
    sys.exit(main())

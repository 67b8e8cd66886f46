#!/usr/bin/env python3
"""What WITH ('retain_input' = 'true') costs (docs/bootstrapping.md, "Tables
fed over HTTP"): a table ev (k BIGINT, g INT, v BIGINT) fed over HTTP with a
view over it (SUM per g), pushed N rows, then R rounds that each update
every row (a delete and an insert per row: the history grows by 2N
records a round, the table stays N rows), with a checkpoint after each
round. Reported per setting (none, retain_input, materialized): the bytes
of the storage directory after the last checkpoint (checkpoint files,
ingress log, journal), the bytes the last checkpoint wrote, and the
pipeline's state bytes (/stats), beside the bytes pushed (the history).

usage: bench/retain_bench.py [N] [R]   (default 100000 rows, 4 rounds)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUICE = os.environ.get("SLUICE_RELEASE", os.path.join(ROOT, "build", "sluice"))


def du(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def start(prog, st, err):
    p = subprocess.Popen([SLUICE, "run", prog, "--http", "127.0.0.1:0", "--no-progress",
                          "--storage", st, "--checkpoint-interval", "0"],
                         stdout=subprocess.DEVNULL, stderr=open(err, "wb"))
    while True:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(err).read())
        if m:
            return p, "http://127.0.0.1:%s" % m.group(1)
        if p.poll() is not None:
            sys.exit(open(err).read())
        time.sleep(0.02)


def checkpoint(base):
    seq = requests.post(base + "/checkpoint").json()["checkpoint_sequence_number"]
    while True:
        st = requests.get(base + "/checkpoint_status").json()
        if st["success"] is not None and st["success"] >= seq:
            return st["last"]
        time.sleep(0.02)


def case(prop, n, rounds, tmp):
    w = " WITH ('%s' = 'true')" % prop if prop else ""
    prog = os.path.join(tmp, "p-%s.sql" % prop)
    open(prog, "w").write("CREATE TABLE ev (k BIGINT, g INT, v BIGINT)%s;\n"
                          "CREATE MATERIALIZED VIEW tot AS SELECT g, SUM(v) AS s FROM ev "
                          "GROUP BY g;\n" % w)
    st = os.path.join(tmp, "st-%s" % prop)
    p, base = start(prog, st, os.path.join(tmp, "err-%s" % prop))
    pushed = 0
    rows = [(k, k % 100, 0) for k in range(n)]

    def send(recs):
        nonlocal pushed
        for i in range(0, len(recs), 20000):
            body = "".join(json.dumps(r) + "\n" for r in recs[i:i + 20000])
            pushed += len(body)
            r = requests.post(base + "/ingress/ev", params={"wait": "true"}, data=body)
            assert r.status_code == 200, r.text
    send([{"insert": {"k": k, "g": g, "v": v}} for k, g, v in rows])
    last = checkpoint(base)
    for rd in range(1, rounds + 1):
        recs = []
        for i, (k, g, v) in enumerate(rows):
            recs.append({"delete": {"k": k, "g": g, "v": v}})
            rows[i] = (k, g, v + rd)
            recs.append({"insert": {"k": k, "g": g, "v": v + rd}})
        send(recs)
        last = checkpoint(base)
    state = requests.get(base + "/stats").json()["memory"]["state_bytes"]
    requests.post(base + "/stop")
    p.wait()
    return du(st), last["bytes_written"], state, pushed


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        print("%d rows, %d update rounds (history %d records)" % (n, rounds, n * (1 + 2 * rounds)))
        print("%-14s %14s %18s %14s %14s" % ("setting", "storage bytes", "last ckpt written",
                                             "state bytes", "bytes pushed"))
        for prop in (None, "retain_input", "materialized"):
            s, w, m, pushed = case(prop, n, rounds, tmp)
            print("%-14s %14d %18d %14s %14d" % (prop or "none", s, w, m, pushed))


if __name__ == "__main__":
    main()

"""/query over a large snapshot streams, or fails alone (docs/memory.md,
"Queries over a running pipeline"):

  * a 1M-row view larger than --memory-limit (32 MB), queried whole
    with SELECT * in csv, json and text: every row as SQLite computes it
    from the generator's rows, and the process's peak resident memory
    (VmHWM, the release build) stays within 1.2x the limit (the copying
    path needed the view's size again);
  * a pipeline that keeps stepping while a client reads slowly: the
    response is the view at the snapshot's step (its header says which),
    as SQLite computes it, not the rows the later steps changed;
  * a client that goes away mid-stream releases the snapshot (its process
    is gone) and the pipeline goes on;
  * a join over the large view with a small --query-memory fails alone
    with the JSON memory error (refused before copying), and the pipeline
    goes on stepping.
"""
import collections
import csv
import io
import json
import os
import re
import socket
import sqlite3
import subprocess
import urllib.parse

import pytest
import requests

from conftest import REPO, assert_no_crash, wait_until

RELEASE = os.environ.get("SLUICE_RELEASE", os.path.join(REPO, "build", "sluice"))

BIG_ROWS = 1000000
LIMIT_MB = 32

# every row a pure function of its index (docs/connectors.md, datagen):
# id = i, a = 7 i
BIG = """
CREATE TABLE t (id BIGINT NOT NULL, a BIGINT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 1, "plan": [{"limit": %d,
    "fields": {"a": {"scale": 7}}}]}}}]');
CREATE MATERIALIZED VIEW v AS
SELECT id, a, 'x' || CAST(id %% 997 AS VARCHAR) AS s FROM t WHERE id %% 10 <> 3;
"""

VIEW_SQLITE = "SELECT id, a, 'x' || (id % 997) FROM t WHERE id % 10 <> 3"


class Server:
    def __init__(self, tmp_path, sql, *args, binary=None, name="prog"):
        prog = tmp_path / ("%s.sql" % name)
        prog.write_text(sql)
        self.err_path = tmp_path / ("%s.stderr" % name)
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        with open(self.err_path, "wb") as errf:
            self.proc = subprocess.Popen(
                [binary or os.environ.get("SLUICE_BIN", os.path.join(REPO, "build", "debug",
                                                                     "sluice")),
                 "run", str(prog), "--http", "127.0.0.1:0", "--no-progress"] +
                [str(a) for a in args], stdout=subprocess.DEVNULL, stderr=errf, env=env)

        def port():
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.stderr())
            if not m and self.proc.poll() is not None:
                pytest.fail("sluice exited before listening:\n" + self.stderr())
            return int(m.group(1)) if m else None
        self.port = wait_until(port, "sluice printing its port", poll=0.01)
        self.base = "http://127.0.0.1:%d" % self.port

    def url(self, path):
        return self.base + path

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stats(self):
        return requests.get(self.url("/stats"), timeout=60).json()

    def children(self):
        """The server's child processes (a stream's snapshot is one)."""
        kids = []
        for task in os.listdir("/proc/%d/task" % self.proc.pid):
            with open("/proc/%d/task/%s/children" % (self.proc.pid, task)) as f:
                kids += f.read().split()
        return kids

    def stop(self):
        r = requests.post(self.url("/stop"), timeout=60)
        assert r.status_code == 200, r.text
        rc = self.proc.wait(timeout=120)
        res = subprocess.CompletedProcess(self.proc.args, rc, "", self.stderr())
        assert_no_crash(res)
        assert rc == 0, res.stderr[-3000:]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def servers():
    started = []
    yield started
    for s in started:
        s.kill()


def same(got, want):
    """got and want hold the same rows (a short message when not: pytest
    would diff the long lists for ever)."""
    got, want = collections.Counter(got), collections.Counter(want)
    if got != want:
        extra, missing = got - want, want - got
        pytest.fail("%d rows extra (%s), %d missing (%s)" % (
            sum(extra.values()), list(extra)[:5], sum(missing.values()), list(missing)[:5]))


def vmhwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def get_query(srv, sql, fmt, stream=False):
    return requests.get(srv.url("/query"), params={"sql": sql, "format": fmt}, timeout=600,
                        stream=stream)


def wait_complete(srv, rows):
    def done():
        s = srv.stats()
        return s["global_metrics"]["pipeline_complete"] and s["views"]["v"]["rows"] == rows
    wait_until(done, "the generator's end", hang_guard=600)


def expected_big(n):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER, a INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?)", ((i, 7 * i) for i in range(n)))
    return sorted(db.execute(VIEW_SQLITE).fetchall())


def test_a_view_larger_than_the_memory_limit_streams_whole_within_the_limit(tmp_path, servers):
    # (bounded steps: what ingesting takes stays small next to the limit, so
    # the peak measures the queries)
    srv = Server(tmp_path, BIG % BIG_ROWS, "--memory-limit", "%dM" % LIMIT_MB, "--step-rows",
                 "20000", binary=RELEASE)
    servers.append(srv)
    want_rows = BIG_ROWS - BIG_ROWS // 10
    wait_complete(srv, want_rows)
    mem = {o["relation"]: o for o in srv.stats()["memory"]["operators"]}["v"]
    assert mem["bytes_on_disk"] > 0  # the view spilled
    expected = expected_big(BIG_ROWS)
    # csv: every row, as SQLite has them
    r = get_query(srv, "SELECT * FROM v", "csv")
    assert r.status_code == 200, r.text[:300]
    assert r.headers["Content-Type"] == "text/csv"
    got = list(csv.reader(io.StringIO(r.text)))
    assert got[0] == ["id", "a", "s"]
    same([(int(i), int(a), s) for i, a, s in got[1:]], expected)
    del got, r
    # json: one object per row and line
    r = get_query(srv, "SELECT * FROM v;", "json")
    assert r.status_code == 200
    lines = r.text.splitlines()
    assert len(lines) == want_rows
    same([tuple(o[k] for k in ("id", "a", "s")) for o in map(json.loads, lines)], expected)
    del lines, r
    # text: measured, then written: the header is as wide as the widest cell
    r = get_query(srv, "select * from V", "text")
    assert r.status_code == 200
    text = r.text.splitlines()
    assert text[-1] == "(%d rows)" % want_rows and len(text) == want_rows + 3
    # the widest id, a and s (BIG_ROWS - 1, 7 times that, "x996"): headers
    # centred, numbers right-aligned, the last column unpadded
    w = [len(str(BIG_ROWS - 1)), len(str(7 * (BIG_ROWS - 1))), 4]
    head = " | ".join(" " * ((n - len(h)) // 2) + h + " " * (n - len(h) - (n - len(h)) // 2)
                      for h, n in zip(("id", "a", "s"), w))
    assert text[0] == " " + head.rstrip(), (text[0], w)
    assert text[1] == "+".join("-" * (n + 2) for n in w)
    bad = [x for x in text[2:-1] if x[w[0] + 2] != "|" or x[w[0] + w[1] + 5] != "|"]
    assert not bad, bad[:5]
    same([(int(i), int(a), s.strip()) for i, a, s in (x.split("|") for x in text[2:-1])],
         expected)
    del text, r
    peak = vmhwm_kb(srv.proc.pid)
    assert peak <= LIMIT_MB * 1024 * 1.2, "peak %d kB, limit %d MB" % (peak, LIMIT_MB)
    srv.stop()


SMALL = """
CREATE TABLE t (id BIGINT NOT NULL, g INT NOT NULL) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW v AS SELECT id, g, id * 3 AS x FROM t WHERE g <> 7;
"""


def push_csv(srv, rows, delete=False):
    for k in range(0, len(rows), 50000):  # (steps of a bounded size)
        push_part(srv, rows[k:k + 50000], delete)


def push_part(srv, rows, delete):
    body = "".join(json.dumps({"delete" if delete else "insert": {"id": i, "g": g}}) + "\n"
                   for i, g in rows)
    r = requests.post(srv.url("/ingress/t"), params={"format": "json", "wait": "true"},
                      data=body.encode(), timeout=600)
    assert r.status_code == 200, r.text


def test_a_slow_reader_gets_the_snapshot_while_the_pipeline_steps(tmp_path, servers):
    srv = Server(tmp_path, SMALL, "--memory-limit", "2M")
    servers.append(srv)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, g INTEGER)")
    rows = [(i, i % 13) for i in range(200000)]
    push_csv(srv, rows)
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)
    want = sorted(db.execute("SELECT id, g, id * 3 FROM t WHERE g <> 7").fetchall())
    step0 = srv.stats()["global_metrics"]["total_completed_steps"]
    r = get_query(srv, "SELECT * FROM v", "csv", stream=True)
    assert r.status_code == 200
    snap_step = int(r.headers["Sluice-Snapshot-Step"])
    assert snap_step == step0
    it = r.iter_content(chunk_size=4096)
    first = next(it)
    assert len(srv.children()) == 1  # the snapshot's process
    # meanwhile: deletes and inserts, each a step of its own
    push_csv(srv, [(i, i % 13) for i in range(0, 100000, 2)], delete=True)
    push_csv(srv, [(i, 5) for i in range(300000, 350000)])
    assert srv.stats()["global_metrics"]["total_completed_steps"] >= snap_step + 2
    body = first + b"".join(it)
    got = list(csv.reader(io.StringIO(body.decode())))
    assert got[0] == ["id", "g", "x"]
    same([(int(a), int(b), int(c)) for a, b, c in got[1:]], want)
    wait_until(lambda: not srv.children(), "the snapshot's process to end")
    # a new query sees the later steps
    db.executemany("DELETE FROM t WHERE id = ?", ((i,) for i in range(0, 100000, 2)))
    db.executemany("INSERT INTO t VALUES (?, 5)", ((i,) for i in range(300000, 350000)))
    want = sorted(db.execute("SELECT id, g, id * 3 FROM t WHERE g <> 7").fetchall())
    r = get_query(srv, "SELECT * FROM v", "json")
    assert int(r.headers["Sluice-Snapshot-Step"]) > snap_step
    same([tuple(json.loads(x)[k] for k in ("id", "g", "x")) for x in r.text.splitlines()], want)
    srv.stop()


def test_a_client_gone_mid_stream_releases_the_snapshot(tmp_path, servers):
    srv = Server(tmp_path, SMALL, "--memory-limit", "2M")
    servers.append(srv)
    push_csv(srv, [(i, i % 13) for i in range(200000)])
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(("GET /query?format=json&sql=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
               % (urllib.parse.quote("SELECT * FROM v"), srv.port)).encode())
    assert b"200 OK" in s.recv(4096)
    assert len(srv.children()) == 1
    s.close()  # after a few rows of many
    wait_until(lambda: not srv.children(), "the snapshot's process to end")
    push_csv(srv, [(i, 1) for i in range(500000, 500010)])
    r = get_query(srv, "SELECT COUNT(*) AS n FROM v", "json")
    assert r.status_code == 200
    assert json.loads(r.text)["n"] == sum(1 for i in range(200000) if i % 13 != 7) + 10
    srv.stop()


def test_a_too_large_join_fails_alone_and_the_pipeline_goes_on(tmp_path, servers):
    srv = Server(tmp_path, SMALL, "--memory-limit", "2M", "--query-memory", "8M")
    servers.append(srv)
    push_csv(srv, [(i, i % 13) for i in range(200000)])
    r = get_query(srv, "SELECT COUNT(*) AS n FROM v x JOIN v y ON x.g = y.g", "json")
    assert r.status_code == 507, r.text[:300]
    j = r.json()
    assert j["error_code"] == "QueryMemoryLimit"
    assert "memory budget of 8388608 bytes" in j["error"] and "pipeline goes on" in j["error"]
    assert "query refused: the relations it reads take about" in srv.stderr()
    before = srv.stats()["views"]["v"]["rows"]
    push_csv(srv, [(i, 1) for i in range(500000, 500010)])
    assert srv.stats()["views"]["v"]["rows"] == before + 10
    assert srv.stats()["global_metrics"]["state"] == "running"
    srv.stop()

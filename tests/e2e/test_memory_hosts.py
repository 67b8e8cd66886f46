"""Memory with scale-out (--hosts 2; docs/memory.md, docs/scale-out.md).

  * Every host reports its memory breakdown with its step replies: /stats'
    memory.hosts[] lists host 1's operators (a materialized view and an
    aggregate whose state lives on both hosts), memory.totals sums them
    (the view's rows over the hosts are the generator's row count and the
    aggregate's groups are the view's rows, counted by /query), the total
    exceeds host 0's own figure (memory.state_bytes, kept as it was), and
    /metrics and `sluice stats --format memory` show the same per host.
  * The limit applies to each host. A join whose output explodes in one
    step on host 1 (4000 x 4000 rows of one key, whose hash places it on
    host 1 of 2): host 1 passes its allowance, every host undoes the step
    (the view of the input on both hosts stays empty, and the outputs
    written by host 0 and by host 1 get nothing), it is tried once more,
    then its input waits and the inputs pause: /status, /stats and the log
    name host 1 and the join; a stop ends cleanly without it.
  * Every host spills: a join whose trace on host 1 (key 0) is several
    times the limit, under --memory-limit 256K with --storage, completes
    without pausing; /stats shows host 1's join rows and bytes on disk
    (more than the limit, compressed) and its state in memory within it,
    its files are in <storage>/spill/host-1 while it runs (gone after the
    stop), and the view equals SQLite's over the same rows.
  * kill -9 of host 1 (SLUICE_CRASH_AT=after-step:10@1) after checkpoints,
    with spilled files left in <storage>/spill/host-1; more input; then the
    same pipeline on 2 hosts and on 1 host from its checkpoint: the view
    equals SQLite's and, byte for byte, a run without a limit on one
    host; the dead run's spill directory is gone.
Waits poll observable state with a hang guard.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess

import pytest
import requests

from conftest import (csv_input, mpi_env, read_dump, run_ok, sluice_bin, wait_until,
                      write_csv)
from memkit import with_env

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

ROWS = 20000

SPREAD = """
CREATE TABLE t (id BIGINT NOT NULL, v INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 5, "plan": [{"limit": %d,
    "fields": {"id": {"strategy": "increment"},
               "v": {"strategy": "uniform", "range": [0, 1000]}}}]}}}]');
CREATE MATERIALIZED VIEW everything AS SELECT id, v FROM t;
CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n FROM t GROUP BY v;
""" % ROWS


def ops_by(ops, relation, kind):
    return [o for o in ops if o["relation"] == relation and o["kind"] == kind]


def test_every_hosts_memory_appears_in_stats_metrics_and_sluice_stats(http_pipeline):
    p = http_pipeline(SPREAD, "--hosts", 2, "--workers", 2)

    def reported():
        st = requests.get(p.url("/stats"), timeout=60).json()
        m = st["memory"]
        if st["global_metrics"]["total_processed_records"] != ROWS or "hosts" not in m:
            return None
        if not all(h["reported"] for h in m["hosts"]):
            return None
        tot = ops_by(m["totals"]["operators"], "everything", "sink")
        return st if tot and tot[0]["rows"] == ROWS else None
    st = wait_until(reported, "every host's memory figures after the input", hang_guard=120)
    m = st["memory"]
    assert [h["host"] for h in m["hosts"]] == [0, 1]
    h0, h1 = m["hosts"]
    # host 0's entry is the figures the memory object always had
    assert h0["state_bytes"] == m["state_bytes"]
    assert [o["node"] for o in h0["operators"]] == [o["node"] for o in m["operators"]]
    # the view's rows live on both hosts and add up to the generator's
    s0 = ops_by(h0["operators"], "everything", "sink")[0]
    s1 = ops_by(h1["operators"], "everything", "sink")[0]
    assert s0["rows"] > 0 and s1["rows"] > 0 and s0["rows"] + s1["rows"] == ROWS
    assert s1["bytes_in_memory"] > 0 and h1["state_bytes"] >= s1["bytes_in_memory"]
    # the aggregate's groups over the hosts are the view's rows (/query)
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT COUNT(*) AS n FROM per_v", timeout=60)
    assert q.status_code == 200, q.text
    groups = json.loads(q.text)["n"]
    a0 = ops_by(h0["operators"], "per_v", "aggregate")[0]
    a1 = ops_by(h1["operators"], "per_v", "aggregate")[0]
    tot_agg = ops_by(m["totals"]["operators"], "per_v", "aggregate")[0]
    assert a0["rows"] + a1["rows"] == tot_agg["rows"] == groups
    # the totals: every host's, more than host 0's own
    t = m["totals"]
    assert t["state_bytes"] == h0["state_bytes"] + h1["state_bytes"]
    assert t["state_bytes"] > m["state_bytes"]
    rel = [r for r in t["relations"] if r["name"] == "everything"][0]
    assert rel["bytes_in_memory"] == s0["bytes_in_memory"] + s1["bytes_in_memory"]
    assert t["rss_bytes"] == st["global_metrics"]["rss_bytes"]
    # /metrics: per host, with host 1's operators
    text = requests.get(p.url("/metrics"), timeout=60).text
    got = re.findall(r'^sluice_host_operator_state_rows\{host="(\d)",node="\d+",kind="sink",'
                     r'relation="everything"\} (\d+)$', text, re.M)
    assert sorted(got) == sorted([("0", str(s0["rows"])), ("1", str(s1["rows"]))])
    assert re.search(r'^sluice_host_state_bytes\{host="1"\} [1-9]\d*$', text, re.M), text
    # the existing per-operator gauges stay host 0's
    assert re.search(r'^sluice_operator_state_rows\{node="\d+",kind="sink",'
                     r'relation="everything"\} %d$' % s0["rows"], text, re.M)
    # sluice stats --format memory
    out = run_ok(["stats", p.base, "--format", "memory"]).stdout
    assert re.search(r"^host 1 \(.*\): resident .*, state .* in memory", out, re.M), out
    assert re.search(r"^all hosts: resident", out, re.M), out
    assert re.search(r"^\d+\s+sink\s+everything\s+%d\s" % ROWS, out, re.M), out
    p.stop()


# one key, 0: on 2 hosts of 1 worker each its join instance is host 1's
EXPLOSION = """
CREATE TABLE a (k INT NOT NULL, x INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 5, "plan": [{"limit": 4000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE TABLE b (k INT NOT NULL, y INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 6, "plan": [{"limit": 4000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE MATERIALIZED VIEW everything_a AS SELECT k, x FROM a;
CREATE MATERIALIZED VIEW pairs AS SELECT a.x, b.y FROM a JOIN b ON a.k = b.k;
CREATE VIEW out0 WITH ('connectors' = '[{"transport": {"name": "file_output",
  "config": {"path": "%(dir)s/out0.csv"}}, "format": {"name": "csv"}}]') AS SELECT * FROM a;
CREATE VIEW out1 WITH ('connectors' = '[{"transport": {"name": "file_output",
  "config": {"path": "%(dir)s/out1.csv"}}, "format": {"name": "csv"}}]') AS SELECT * FROM b;
"""


def stalled_status(p):
    def stalled():
        s = requests.get(p.url("/status"), timeout=60).json()
        return s if s["stalled"] else None
    return wait_until(stalled, "the inputs pausing for memory", hang_guard=1800)


def test_a_join_exploding_on_host_1_pauses_the_pipeline_and_names_host_and_join(http_pipeline,
                                                                                tmp_path):
    # (two file outputs: the first is written by host 0, the second by host 1;
    # host 1's exploding step can take minutes in a debug build on a loaded
    # machine, with host 0 waiting in the exchange: the step watchdog's
    # default 60 s would end the job, which is not what this test is about)
    p = http_pipeline(EXPLOSION % {"dir": tmp_path}, "--hosts", 2, "--workers", 2,
                      "--memory-limit", "64M", "--step-deadline", 1800)
    s = stalled_status(p)
    assert s["stalled"]["reason"] == "memory" and s["state"] == "running"
    msg = s["stalled"]["message"]
    assert msg.startswith("step 1 needs more memory than the limit (67108864 bytes) leaves "
                          "on host 1 ("), msg
    assert "(join of pairs); its input waits" in msg, msg
    assert "sluice: memory: %s; inputs are paused" % msg in p.stderr()
    st = requests.get(p.url("/stats"), timeout=60).json()
    assert st["memory"]["pressure"] == msg
    assert st["global_metrics"]["total_processed_records"] == 0  # undone
    # undone on every host: the copy of a (rows on both hosts) is empty
    assert all(o["rows"] == 0 for h in st["memory"]["hosts"]
               for o in ops_by(h["operators"], "everything_a", "sink"))
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT COUNT(*) AS n FROM everything_a", timeout=60)
    assert q.status_code == 200 and json.loads(q.text)["n"] == 0, q.text
    assert "not run" not in p.stderr()
    p.stop()
    assert "the step that does not fit the memory limit is not run (8000 input records)" \
        in p.stderr()
    # the undone step wrote nothing on either host
    for name in ("out0.csv", "out1.csv"):
        path = tmp_path / name
        assert not path.exists() or path.read_text() == "", name


# A join whose trace of a grows on host 1 (key 0 hashes there on 2 hosts of
# 1 worker each) to several times the limit; b's matching rows come last, so
# later steps probe a's spilled runs. Every host spills its own traces.
A_ROWS, B_ROWS = 48000, 4100
LIMIT = 262144


def write_join_input(tmp, extra=0):
    """a: mostly key 0, some keys 1..6; b: 4000 rows of keys no a row has,
    then 100 rows of keys 0..6. extra: more rows of a appended (a rerun's
    new input)."""
    a = [[0 if i % 4 else i % 7, i, "pad%07d" % i] for i in range(A_ROWS + extra)]
    b = [[100 + i, i % 10] for i in range(B_ROWS - 100)] + \
        [[i % 7, i % 10] for i in range(100)]
    write_csv(tmp / "a.csv", a)
    write_csv(tmp / "b.csv", b)
    return a, b


def join_program(tmp):
    return """
CREATE TABLE a (k INT NOT NULL, x BIGINT NOT NULL, pad VARCHAR NOT NULL) %s;
CREATE TABLE b (k INT NOT NULL, y INT NOT NULL) %s;
CREATE MATERIALIZED VIEW per_y AS
SELECT b.y, COUNT(*) AS n, SUM(a.x) AS s, MAX(a.pad) AS p FROM a JOIN b ON a.k = b.k GROUP BY b.y;
""" % (csv_input(tmp / "a.csv"), csv_input(tmp / "b.csv"))


def sqlite_per_y(a, b):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE a (k INT, x INT, pad TEXT)")
    db.execute("CREATE TABLE b (k INT, y INT)")
    db.executemany("INSERT INTO a VALUES (?, ?, ?)", a)
    db.executemany("INSERT INTO b VALUES (?, ?)", b)
    return sorted(db.execute("SELECT b.y, COUNT(*), SUM(a.x), MAX(a.pad) FROM a JOIN b "
                             "ON a.k = b.k GROUP BY b.y").fetchall())


def dump_rows(path):
    _, rows = read_dump(str(path))
    return sorted((int(y), int(n), int(s), p) for y, n, s, p in rows)


SMALL_SPILL = {"SLUICE_SPILL_BLOCK": "4096", "SLUICE_SPILL_MIN_RUN": "0"}


def test_a_join_several_times_the_limit_on_host_1_spills_there_and_completes(http_pipeline,
                                                                              tmp_path):
    a, b = write_join_input(tmp_path)
    want = sqlite_per_y(a, b)
    storage = tmp_path / "storage"
    p = with_env(SMALL_SPILL, lambda: http_pipeline(
        join_program(tmp_path), "--hosts", 2, "--workers", 2, "--memory-limit", LIMIT,
        "--step-rows", 2000, "--storage", storage))

    def done():
        st = requests.get(p.url("/stats"), timeout=60).json()
        if st["global_metrics"]["total_processed_records"] != A_ROWS + B_ROWS:
            return None
        if "hosts" not in st["memory"] or not all(h["reported"] for h in st["memory"]["hosts"]):
            return None
        return st
    st = wait_until(done, "every row processed", hang_guard=300)
    s = requests.get(p.url("/status"), timeout=60).json()
    assert not s["stalled"], s
    h1 = st["memory"]["hosts"][1]
    # host 1 holds the bulk of the join and spilled it: on disk, several
    # times the limit in all, its state in memory within the limit
    j1 = ops_by(h1["operators"], "per_y", "join")
    assert j1 and sum(o["bytes_on_disk"] for o in j1) > 0, h1
    assert h1["state_on_disk_bytes"] > 0, h1
    # a's 36000 rows of key 0 (at least 24 bytes each in memory: key, x,
    # pad, weight, offsets) are more than 3 times the limit; on disk
    # (zstd) more than the limit
    assert sum(o["rows"] for o in j1) >= A_ROWS * 3 // 4, h1
    assert h1["state_on_disk_bytes"] > LIMIT, h1
    assert h1["state_bytes"] < LIMIT, h1
    assert st["memory"]["totals"]["state_on_disk_bytes"] >= h1["state_on_disk_bytes"]
    # each host's spill counters: host 1 spilled runs of its own (host 0's
    # entry is the figures of the memory object), and /metrics says the same
    assert h1["spilled_runs"] > 0 and h1["spilled_runs_on_disk"] > 0, h1
    assert h1["spilled_runs_on_disk"] <= h1["spilled_runs"] - h1["spilled_runs_merged"], h1
    assert h1["spill_files_held_for_checkpoint"] == 0, h1
    h0 = st["memory"]["hosts"][0]
    for k in ("spilled_runs", "spilled_runs_on_disk", "spill_cache_hits", "spill_cache_misses"):
        assert h0[k] == st["memory"][k], (k, h0, st["memory"])
    text = requests.get(p.url("/metrics"), timeout=60).text
    h1_now = requests.get(p.url("/stats"), timeout=60).json()["memory"]["hosts"][1]
    for k, name in (("spilled_runs", "sluice_host_spilled_runs_total"),
                    ("spilled_runs_merged", "sluice_host_spilled_runs_merged_total"),
                    ("spill_cache_misses", "sluice_host_spill_cache_misses_total")):
        m = re.search(r'^%s\{host="1"\} (\d+)$' % name, text, re.M)
        assert m and int(m.group(1)) == h1_now[k], (name, h1_now, text[-3000:])
    # sluice stats --format memory prints each host's spill counters
    out = run_ok(["stats", p.base, "--format", "memory"]).stdout
    lines = out.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith("host 1 ("))
    m = re.match(r"  spilled runs (\d+) \((\d+) on disk, (\d+) merged away\), spill cache ",
                 lines[i + 1])
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, out
    assert "held for a checkpoint 0 files" in lines[i + 1], out
    # each host in its own directory under the storage while running
    assert any(f.name.startswith("run-") for f in (storage / "spill" / "host-1").iterdir())
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT y, n, s, p FROM per_y", timeout=60)
    assert q.status_code == 200, q.text
    rows = [json.loads(line) for line in q.text.splitlines() if line.strip()]
    got = sorted((r["y"], r["n"], r["s"], r["p"]) for r in rows)
    assert got == want
    p.stop()
    err = p.stderr()
    m = re.search(r"sluice: memory: host 1 \(.*\): (\d+) trace runs spilled under the limit",
                  err)
    assert m and int(m.group(1)) >= h1_now["spilled_runs"], (h1_now, err)
    assert "inputs are paused" not in err
    # the spilled files go with the pipeline
    assert not (storage / "spill" / "host-1").exists()


def run_join(tmp, dump, hosts, crash=None, limit=LIMIT):
    e = dict(os.environ)
    e.update(mpi_env())
    e.update(SMALL_SPILL)
    e["SLUICE_CHECKPOINT_EVERY_STEPS"] = "3"
    if crash:
        e["SLUICE_CRASH_AT"] = crash
    args = [sluice_bin(), "run", str(tmp / "join.sql"), "--storage", str(tmp / "storage"),
            "--workers", str(max(hosts, 1)), "--step-rows", "2000", "--checkpoint-interval", "0",
            "--until-done", "--no-progress", "--dump", str(dump), "--memory-limit", str(limit)]
    if hosts > 1:
        args += ["--hosts", str(hosts)]
    r = subprocess.run(args, capture_output=True, text=True, env=e, timeout=600)
    for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
        assert m not in r.stderr, r.stderr[-4000:]
    if crash:
        assert r.returncode != 0 and "ended with status 137" in r.stderr, r.stderr[-3000:]
    else:
        assert r.returncode == 0, r.stderr[-4000:]
    return r.stderr


@pytest.mark.parametrize("then_hosts", [2, 1])
def test_a_restart_after_kill_9_of_a_spilling_host_gives_the_same_results(tmp_path, then_hosts):
    a, b = write_join_input(tmp_path)
    (tmp_path / "join.sql").write_text(join_program(tmp_path))
    # host 1 dies (kill -9) at step 10, after checkpoints and with state spilled
    run_join(tmp_path, tmp_path / "d1", 2, crash="after-step:10@1")
    spill1 = tmp_path / "storage" / "spill" / "host-1"
    assert spill1.exists() and any(f.name.startswith("run-") for f in spill1.iterdir())
    # more input, then the same pipeline on then_hosts hosts from its checkpoint
    a, b = write_join_input(tmp_path, extra=8000)
    # on one host the state both hosts held, restored whole (a restored
    # aggregate reads its spilled groups back and spills them again after
    # its first step; a spilled run's index cannot spill): twice the limit
    # a host had, or the inputs pause for memory, as they should
    err = run_join(tmp_path, tmp_path / "d2", then_hosts, limit=LIMIT * 2 // then_hosts)
    assert "restor" in err.lower() or "checkpoint" in err.lower(), err[-3000:]
    assert re.search(r"trace runs spilled under the limit", err), err[-3000:]
    assert dump_rows(tmp_path / "d2" / "per_y.csv") == sqlite_per_y(a, b)
    # and the same as a run without a limit on one host
    ref = tmp_path / "ref"
    run_ok(["run", str(tmp_path / "join.sql"), "--until-done", "--no-progress",
            "--memory-limit", "none", "--dump", str(ref)], timeout=300)
    assert (ref / "per_y.csv").read_bytes() == (tmp_path / "d2" / "per_y.csv").read_bytes()
    # the dead run's spill files are gone (its own host's at its restart;
    # a host that no longer takes part: swept by host 0)
    assert not spill1.exists()

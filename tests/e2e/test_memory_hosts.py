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
  * State that grows past the limit on host 1 (a join's trace, which does
    not spill there) pauses the inputs with a message naming host 1 and
    the join; the processed rows equal the view's count (/query).
Waits poll observable state with a hang guard.
"""
import json
import re
import shutil

import pytest
import requests

from conftest import run_ok, wait_until

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
    return wait_until(stalled, "the inputs pausing for memory", hang_guard=240)


def test_a_join_exploding_on_host_1_pauses_the_pipeline_and_names_host_and_join(http_pipeline,
                                                                                tmp_path):
    # (two file outputs: the first is written by host 0, the second by host 1)
    p = http_pipeline(EXPLOSION % {"dir": tmp_path}, "--hosts", 2, "--workers", 2,
                      "--memory-limit", "64M")
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


# the join's trace of a grows on host 1 (key 0), where it cannot spill
GROWING_ON_1 = """
CREATE TABLE a (k INT NOT NULL, x INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 5, "plan": [{"limit": 200000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE TABLE b (k INT NOT NULL, y INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 6, "plan": [{"limit": 1,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE MATERIALIZED VIEW pairs AS SELECT COUNT(*) AS n FROM a JOIN b ON a.k = b.k;
"""


def test_state_past_the_limit_on_host_1_pauses_the_pipeline_and_names_host_1(http_pipeline):
    p = http_pipeline(GROWING_ON_1, "--hosts", 2, "--workers", 2, "--memory-limit", "256K",
                      "--step-rows", 2000)
    s = stalled_status(p)
    assert s["stalled"]["reason"] == "memory" and s["state"] == "running"
    msg = s["stalled"]["message"]
    assert msg.startswith("host 1 (") and "): state that cannot spill (" in msg, msg
    assert "exceeds the memory limit (262144 bytes); largest: node" in msg, msg
    assert "(join of pairs, " in msg, msg
    assert "inputs are paused" in p.stderr()
    st = requests.get(p.url("/stats"), timeout=60).json()
    assert st["memory"]["pressure"] == msg
    h1 = st["memory"]["hosts"][1]
    assert h1["state_bytes"] > 262144 > st["memory"]["hosts"][0]["state_bytes"]
    done = st["global_metrics"]["total_processed_records"]
    assert 0 < done < 200001
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT n FROM pairs", timeout=60)
    assert q.status_code == 200 and json.loads(q.text)["n"] == done - 1, q.text
    p.stop()

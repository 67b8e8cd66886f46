"""The HTTP API (docs/http.md): lifecycle, ingress (JSON and CSV, inserts,
deletes, upserts and partial updates, every kind of malformed body),
ad-hoc queries, statistics, errors, and the `sluice` client subcommands.

Every pipeline runs `sluice run --http 127.0.0.1:0` (a free loopback port)
and is stopped by the test or killed by the fixture. Expected contents are
computed here from the pushed rows, never taken from an earlier run.
"""
import json
import os
import random
import sqlite3
import subprocess

import pytest
import requests

from conftest import assert_no_crash, conn_clause, read_dump, run_ok, sluice_bin, wait_until
from httpkit import ingress as push
from httpkit import lines, query

PROG = """
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR, v INT)
    WITH ('materialized' = 'true');
CREATE TABLE e (k INT, s VARCHAR, x DOUBLE);
CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS total FROM t;
CREATE MATERIALIZED VIEW ev AS SELECT k, s FROM e WHERE k > 0;
CREATE VIEW plain AS SELECT k FROM e;
"""


def error(r, status, code):
    assert r.status_code == status, (r.status_code, r.text)
    j = r.json()
    assert j["error_code"] == code, j
    assert isinstance(j["error"], str) and j["error"]
    assert isinstance(j["details"], dict)
    return j


# ---------------------------------------------------------------- lifecycle

def test_status_pause_start_stop(http_pipeline):
    p = http_pipeline(PROG)
    s = requests.get(p.url("/status")).json()
    assert s["state"] == "running" and s["transaction_status"] == "NoTransaction"
    r = requests.post(p.url("/pause"))
    assert r.status_code == 200 and r.json()["state"] == "paused"
    assert requests.get(p.url("/status")).json()["state"] == "paused"
    # paused: pushed input is accepted into the queue but not processed
    j = push(p, "t", lines({"insert": {"id": 1, "name": "a", "v": 5}}))
    assert j["accepted"] == 1
    tok = j["token"]
    assert requests.get(p.url("/completion_status"), params={"token": tok}).json()[
        "status"] == "inprogress"
    assert query(p, "SELECT * FROM t") == []
    assert requests.get(p.url("/status")).json()["buffered_records"] == 1
    r = requests.post(p.url("/start"))
    assert r.json()["state"] == "running"
    push(p, "t", lines({"insert": {"id": 2, "name": "b", "v": 6}}), wait="true")
    assert requests.get(p.url("/completion_status"), params={"token": tok}).json()[
        "status"] == "complete"
    assert sorted(r["id"] for r in query(p, "SELECT id FROM t")) == [1, 2]
    res = p.stop()
    assert "stop requested" in res.stderr


def test_started_paused_and_stop_drains_the_queue(http_pipeline, tmp_path):
    out = tmp_path / "dump"
    p = http_pipeline(PROG, "--paused", "--dump", out)
    assert requests.get(p.url("/status")).json()["state"] == "paused"
    push(p, "t", lines(*[{"insert": {"id": i, "name": "n%d" % i, "v": i}} for i in range(10)]))
    # stop while paused: what was accepted is processed before the exit
    p.stop()
    hdr, rows = read_dump(out / "t.csv")
    assert len(rows) == 10
    hdr, rows = read_dump(out / "agg.csv")
    assert rows == [["10", "45"]]


def test_sigterm_stops_like_stop(http_pipeline, tmp_path):
    out = tmp_path / "dump"
    p = http_pipeline(PROG, "--paused", "--dump", out)
    push(p, "e", lines({"k": 1, "s": "x", "x": 1.5}))
    p.proc.terminate()
    res = p.wait_exit()
    assert res.returncode == 0, res.stderr
    assert "stop requested" in res.stderr
    hdr, rows = read_dump(out / "ev.csv")
    assert rows == [["1", "x"]]


def test_unknown_endpoints_and_wrong_methods(http_pipeline):
    p = http_pipeline(PROG)
    j = error(requests.get(p.url("/nope")), 404, "UnknownEndpoint")
    assert any("/ingress/" in e for e in j["details"]["endpoints"])
    r = requests.get(p.url("/start"))
    error(r, 405, "MethodNotAllowed")
    assert r.headers["Allow"] == "POST"
    error(requests.post(p.url("/status")), 405, "MethodNotAllowed")
    error(requests.delete(p.url("/ingress/t")), 405, "MethodNotAllowed")
    error(requests.put(p.url("/query")), 405, "MethodNotAllowed")
    j = error(requests.post(p.url("/ingress/nope"), data="{}"), 404, "UnknownTable")
    assert sorted(j["details"]["known"]) == ["e", "t"]
    error(requests.post(p.url("/ingress/agg"), data="{}"), 400, "NotATable")
    error(requests.post(p.url("/egress/nope")), 404, "UnknownView")
    error(requests.post(p.url("/ingress/t"), params={"format": "xml"}, data="{}"), 400,
          "InvalidParameter")
    error(requests.post(p.url("/ingress/t"), params={"update_format": "debezium"}, data="{}"),
          400, "InvalidParameter")
    error(requests.get(p.url("/completion_status")), 400, "InvalidParameter")
    idx = requests.get(p.url("/")).json()
    assert sorted(idx["tables"]) == ["e", "t"]
    p.stop()


# ---------------------------------------------------------------- ingress

def random_stream(rng, n):
    """Inserts and deletes of (k, s, x) rows where every delete removes a
    row inserted earlier (and not yet deleted)."""
    live, events = [], []
    for i in range(n):
        if live and rng.random() < 0.3:
            row = live.pop(rng.randrange(len(live)))
            events.append({"delete": row})
        else:
            row = {"k": rng.randrange(-5, 20), "s": rng.choice(["a", "b", "", "c,d", None, "é"]),
                   "x": rng.choice([0.5, -1.25, 3.0, None])}
            live.append(row)
            events.append({"insert": row})
    return events


def test_pushed_stream_equals_file_connector(http_pipeline, tmp_path):
    rng = random.Random(7)
    events = random_stream(rng, 600)
    src = tmp_path / "e.json"
    src.write_text(lines(*events))
    views = """
CREATE MATERIALIZED VIEW ev AS SELECT k, s FROM e WHERE k > 0;
CREATE MATERIALIZED VIEW g AS SELECT k, COUNT(*) AS c, SUM(x) AS sx FROM e GROUP BY k;
CREATE MATERIALIZED VIEW j AS SELECT a.k, b.s FROM e a, e b WHERE a.k = b.k AND a.k < 3;
"""
    file_prog = tmp_path / "file.sql"
    fmt = {"name": "json", "config": {"update_format": "insert_delete"}}
    file_prog.write_text(
        "CREATE TABLE e (k INT, s VARCHAR, x DOUBLE) WITH ('materialized' = 'true', %s);\n"
        % conn_clause([{"transport": {"name": "file_input", "config": {"path": str(src)}},
                        "format": fmt}])[6:-1] + views)
    run_ok(["run", file_prog, "--until-done", "--dump", tmp_path / "d1", "--step-rows", "97"])
    p = http_pipeline("CREATE TABLE e (k INT, s VARCHAR, x DOUBLE) "
                      "WITH ('materialized' = 'true');\n" + views, "--workers", "2",
                      "--dump", tmp_path / "d2")
    # in requests of varied sizes, as lines and as JSON arrays
    i = 0
    while i < len(events):
        n = rng.randrange(1, 80)
        part = events[i:i + n]
        body = json.dumps(part, indent=1) if rng.random() < 0.5 else lines(*part)
        j = push(p, "e", body, wait="true" if rng.random() < 0.3 else "false")
        assert j["accepted"] == len(part) and j["error_count"] == 0
        i += n
    p.stop()
    for name in ("e", "ev", "g", "j"):
        a = open(tmp_path / "d1" / (name + ".csv"), "rb").read()
        b = open(tmp_path / "d2" / (name + ".csv"), "rb").read()
        assert a == b, name


def test_csv_and_raw_formats(http_pipeline):
    p = http_pipeline(PROG)
    j = push(p, "e", '1,plain,1.5\n2,"quoted, with comma",2\n3,"multi\nline",\n4,,\n',
             format="csv", wait="true")
    assert j["accepted"] == 4
    j = push(p, "e", "k,s,x\n5,h,0\n", format="csv", header="true", wait="true")
    assert j["accepted"] == 1
    j = push(p, "e", lines({"k": 6, "s": "raw"}), update_format="raw", wait="true")
    assert j["accepted"] == 1
    # raw takes plain rows only: a wrapper is an unknown member
    j = push(p, "e", lines({"k": 7}, {"insert": {"k": 8}}), update_format="raw", wait="true")
    assert j["accepted"] == 1 and j["errors"][0]["line"] == 2
    assert "unknown member" in j["errors"][0]["reason"]
    rows = sorted((r["k"], r["s"]) for r in query(p, "SELECT k, s FROM ev"))
    assert rows == [(1, "plain"), (2, "quoted, with comma"), (3, "multi\nline"), (4, None),
                    (5, "h"), (6, "raw"), (7, None)]
    p.stop()


def test_malformed_bodies(http_pipeline):
    p = http_pipeline(PROG, "--http-max-body", "2000")
    # some good, some bad: 200 with the bad ones listed by line
    body = "\n".join([
        '{"insert": {"id": 1, "name": "ok", "v": 1}}',
        '{"insert": {"id": 2, "name": "x", "v": "notanumber"}}',
        '{"insert": {"id": 3, "nope": 1}}',
        '{"insert": {"id": 4, "name": "x", "v": 1}',
        'not json at all',
        '{"insert": {"name": "no key"}}',
        '{"insert": {"id": 5, "v": 2147483648}}',
        '{"insert": {"id": 6, "v": [1]}}',
        '',
        '{"delete": {"name": "no key"}}',
        '{"insert": {"id": 7}}',
    ]) + "\n"
    j = push(p, "t", body, wait="true")
    assert j["accepted"] == 2 and j["error_count"] == 8
    errs = {e["line"]: e for e in j["errors"]}
    assert sorted(errs) == [2, 3, 4, 5, 6, 7, 8, 10]
    assert 'column "v"' in errs[2]["reason"] and "notanumber" in errs[2]["text"]
    assert 'unknown member "nope"' in errs[3]["reason"]
    assert 'column "id" is NOT NULL' in errs[6]["reason"]
    assert 'primary key column "id"' in errs[10]["reason"]
    # nothing good: 400 with the same details
    r = requests.post(p.url("/ingress/t"), data="[1, 2]\n")
    j = error(r, 400, "ParseErrors")
    assert j["details"]["error_count"] == 2
    # an unclosed array: its records count, the missing ']' is an error
    j = push(p, "t", '[{"insert": {"id": 9}}')
    assert j["accepted"] == 1 and j["error_count"] == 1
    error(requests.post(p.url("/ingress/t"), data=""), 400, "EmptyBody")
    error(requests.post(p.url("/ingress/t"), data="\n\n  \n"), 400, "NoRecords")
    error(requests.post(p.url("/ingress/t"), data="1,x\n", params={"format": "csv"}), 400,
          "ParseErrors")
    # too large: by Content-Length, and streamed (chunked, no length)
    big = lines(*[{"insert": {"id": i, "name": "x" * 20, "v": i}} for i in range(100)])
    error(requests.post(p.url("/ingress/t"), data=big), 413, "PayloadTooLarge")
    error(requests.post(p.url("/ingress/t"), data=(l.encode() for l in big.splitlines(True))),
          413, "PayloadTooLarge")
    # the pipeline is fine and kept only the good rows
    assert sorted(r["id"] for r in query(p, "SELECT id FROM t")) == [1, 7, 9]
    st = requests.get(p.url("/stats")).json()
    http_t = [i for i in st["inputs"] if i["table"] == "t"][0]["metrics"]
    assert http_t["num_parse_errors"] == 8 + 2 + 1 + 1
    p.stop()


def test_queue_full_is_503_and_nothing_is_lost(http_pipeline):
    p = http_pipeline(PROG, "--paused", "--http-buffer", "10")
    push(p, "e", lines(*[{"k": i} for i in range(8)]))
    r = requests.post(p.url("/ingress/e"), data=lines(*[{"k": i} for i in range(8, 13)]))
    j = error(r, 503, "QueueFull")
    assert r.headers.get("Retry-After")
    push(p, "e", lines({"k": 8}, {"k": 9}))  # fits exactly
    requests.post(p.url("/start"))
    push(p, "e", lines(*[{"k": i} for i in range(10, 13)]), wait="true")
    assert sorted(r["k"] for r in query(p, "SELECT k FROM ev")) == list(range(1, 13))
    p.stop()


def test_upserts_and_partial_updates(http_pipeline):
    p = http_pipeline(PROG, "--workers", "2")
    j = push(p, "t", lines(
        {"insert": {"id": 1, "name": "a", "v": 1}},
        {"insert": {"id": 2, "name": "b", "v": 2}},
        {"insert": {"id": 1, "name": "A", "v": 10}},   # replaces id 1
        {"delete": {"id": 3}},                          # missing key: ignored
        {"update": {"id": 2, "v": 20}},                 # same request as the insert
        {"insert": {"id": 4, "name": "d", "v": 4}},
    ), wait="true")
    assert j["accepted"] == 6
    assert sorted(tuple(r.values()) for r in query(p, "SELECT id, name, v FROM t")) == [
        (1, "A", 10), (2, "b", 20), (4, "d", 4)]
    j = push(p, "t", lines(
        {"update": {"id": 1, "name": None}},            # set to NULL
        {"update": {"id": 4, "name": "D"}},
        {"delete": {"id": 2}},                          # delete by key alone
        {"update": {"id": 2, "v": 99}},                 # deleted just before: missing
        {"update": {"id": 77, "v": 1}},                 # never existed: missing
        {"update": {"v": 1}},                           # no key: parse error
    ), wait="true")
    assert j["accepted"] == 5 and j["error_count"] == 1
    assert "primary key" in j["errors"][0]["reason"]
    assert sorted(tuple(r.values()) for r in query(p, "SELECT id, name, v FROM t")) == [
        (1, None, 10), (4, "D", 4)]
    assert query(p, "SELECT * FROM agg") == [{"n": 2, "total": 14}]
    # updates need a primary key
    j = push(p, "e", lines({"update": {"k": 1}}, {"k": 2}), wait="true")
    assert j["accepted"] == 1 and "PRIMARY KEY" in j["errors"][0]["reason"]
    res = p.stop()
    assert "update of a key that does not exist (id=2)" in res.stderr
    assert "(id=77)" in res.stderr


# ---------------------------------------------------------------- query

def test_query_formats_and_errors(http_pipeline):
    p = http_pipeline(PROG)
    push(p, "t", lines(*[{"insert": {"id": i, "name": "n%d" % (i % 3), "v": i * 10}}
                         for i in range(1, 7)]), wait="true")
    push(p, "e", lines({"k": 1, "s": "one"}, {"k": 2, "s": "two"}, {"k": 2, "s": "two"}),
         wait="true")
    rows = query(p, "SELECT name, SUM(v) AS s FROM t GROUP BY name ORDER BY s DESC LIMIT 2")
    assert rows == [{"name": "n0", "s": 90}, {"name": "n2", "s": 70}]
    rows = query(p, "SELECT t.id, ev.s FROM t, ev WHERE t.id = ev.k ORDER BY t.id, ev.s")
    assert rows == [{"id": 1, "s": "one"}, {"id": 2, "s": "two"}, {"id": 2, "s": "two"}]
    txt = query(p, "SELECT id, name FROM t WHERE id <= 2 ORDER BY id", fmt="text")
    assert txt == " id | name\n----+------\n  1 | n1\n  2 | n2\n(2 rows)\n"
    csv = query(p, "SELECT id, name FROM t WHERE id = 3", fmt="csv")
    assert csv == "id,name\n3,n0\n"
    r = requests.post(p.url("/query"), params={"format": "json"}, data="SELECT COUNT(*) AS c FROM t")
    assert r.status_code == 200 and json.loads(r.text) == {"c": 6}
    j = error(requests.get(p.url("/query"), params={"sql": "SELECT k FROM plain"}), 400,
              "NotMaterialized")
    assert "plain" in j["error"] and "CREATE MATERIALIZED VIEW" in j["error"]
    assert j["details"]["relation"] == "plain"
    j = error(requests.get(p.url("/query"), params={"sql": "SELECT k FROM e"}), 400,
              "NotMaterialized")
    assert "'materialized' = 'true'" in j["error"]
    j = error(requests.get(p.url("/query"), params={"sql": "SELEC 1"}), 400, "SqlError")
    error(requests.get(p.url("/query"), params={"sql": "SELECT * FROM nope"}), 400, "SqlError")
    error(requests.get(p.url("/query")), 400, "MissingQuery")
    error(requests.get(p.url("/query"), params={"sql": "SELECT 1", "format": "xml"}), 400,
          "InvalidParameter")
    p.stop()


# ---------------------------------------------------------------- statistics

def test_stats_after_a_waited_push_show_its_step_whole(http_pipeline):
    """A step's figures are published at once, before the pushes it
    consumed are acknowledged: after each waited push /stats counts every
    record processed, none buffered, and the view's rows as SQLite counts
    them (they were published a moment after the acknowledgement)."""
    p = http_pipeline("CREATE TABLE t (k INT NOT NULL, v INT NOT NULL);\n"
                      "CREATE MATERIALIZED VIEW c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;\n")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (k INT, v INT)")
    rng = random.Random(5)
    sent = steps = 0
    for i in range(40):
        rows = [(rng.randint(1, 25), i) for _ in range(rng.randint(1, 30))]
        push(p, "t", "".join("%d,%d\n" % r for r in rows), format="csv", wait="true")
        db.executemany("INSERT INTO t VALUES (?, ?)", rows)
        sent += len(rows)
        st = requests.get(p.url("/stats"), timeout=60).json()
        g = st["global_metrics"]
        assert g["total_processed_records"] == sent, g
        assert g["buffered_input_records"] == 0, g
        assert st["views"]["c"]["rows"] == db.execute(
            "SELECT COUNT(*) FROM (SELECT k FROM t GROUP BY k)").fetchone()[0], st["views"]
        assert g["total_completed_steps"] > steps, g  # the push's step is counted
        steps = g["total_completed_steps"]


def test_stats_metrics_and_event_time_lag(http_pipeline, tmp_path):
    src = tmp_path / "old.csv"
    src.write_text("1,2020-01-01 00:00:00\n2,2020-01-01 00:00:01\n")
    conns = conn_clause([
        {"transport": {"name": "file_input", "config": {"path": str(src)}},
         "format": {"name": "csv"}, "event_time_column": "ts"},
        {"transport": {"name": "http_input"}, "event_time_column": "ts"}])
    prog = """
CREATE TABLE m (a INT, ts TIMESTAMP) %s;
CREATE MATERIALIZED VIEW q AS SELECT a, 10 / a AS d FROM m;
""" % conns
    p = http_pipeline(prog)
    push(p, "m", "0,2021-06-01 00:00:00\n3,2021-06-01 00:00:00\n", format="csv", wait="true")
    # the push's step is done; the file's rows may come in a step of their
    # own (before or after it): wait for every record to be processed
    st = wait_until(lambda: (lambda s: s if s["global_metrics"]["total_processed_records"] == 4
                             else None)(requests.get(p.url("/stats")).json()),
                    "the file's and the push's records processed")
    g = st["global_metrics"]
    assert g["state"] == "running" and g["total_completed_steps"] >= 1
    assert g["total_input_records"] == 4 and g["total_processed_records"] == 4
    assert g["rss_bytes"] > 0 and g["uptime_msecs"] > 0 and g["state_bytes"] > 0
    assert g["transaction_status"] == "NoTransaction"
    f = [i for i in st["inputs"] if i["transport"] == "file_input"][0]["metrics"]
    assert f["total_records"] == 2 and f["end_of_input"] and f["total_bytes"] == 44
    assert f["processing_latency_ms"]["count"] == 2
    # lag = delivery wall clock - event time: years for 2020
    assert f["event_time_lag_ms"]["p50"] > 3 * 365 * 86400 * 1000
    h = [i for i in st["inputs"] if i["transport"] == "http"][0]
    assert "http_input" in h["endpoint_name"]
    assert h["metrics"]["total_records"] == 2 and h["metrics"]["event_time_lag_ms"]["count"] == 2
    assert st["views"]["q"]["division_by_zero"] == 1 and st["views"]["q"]["rows"] == 4
    text = requests.get(p.url("/metrics")).text
    assert "# TYPE sluice_steps_total counter" in text
    assert 'sluice_division_by_zero_total{view="q"} 1' in text
    assert 'sluice_connector_processing_latency_seconds{table="m",endpoint="' in text
    assert 'quantile="0.99"' in text
    assert 'sluice_pipeline_state{state="running"} 1' in text
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            float(value)
    p.stop()


def test_bad_connector_keys_are_config_errors(tmp_path):
    from conftest import run
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE m (a INT) %s;\n" % conn_clause(
        [{"transport": {"name": "http_input"}, "event_time_column": "a"}]))
    r = run(["check", prog])
    assert r.returncode == 1 and "must be a TIMESTAMP" in r.stderr
    prog.write_text("CREATE TABLE m (a INT) %s;\n" % conn_clause(
        [{"transport": {"name": "datagen"}, "transaction": "backfill"}]))
    r = run(["check", prog])
    assert r.returncode == 1 and "needs an input that ends" in r.stderr
    prog.write_text("CREATE TABLE m (a INT) %s;\n" % conn_clause(
        [{"transport": {"name": "datagen", "config": {"plan": [{"limit": 3}]}},
          "transaction": "sometimes"}]))
    r = run(["check", prog])
    assert r.returncode == 1 and '"transaction" must be "backfill"' in r.stderr


# ---------------------------------------------------------------- the client

def test_client_subcommands(http_pipeline, tmp_path):
    p = http_pipeline(PROG)
    b = sluice_bin()
    data = tmp_path / "rows.json"
    data.write_text(lines({"insert": {"id": 1, "name": "x", "v": 3}}, {"bogus": 1}))
    tail = subprocess.Popen([b, "tail", p.base, "agg", "--snapshot"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # the snapshot line proves the subscription is in place before the push
    first = tail.stdout.readline()
    assert json.loads(first)["snapshot"] is True
    r = subprocess.run([b, "push", p.base, "t", str(data), "--wait"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "pushed 1 record into t (1 bad)" in r.stdout
    assert "line 2" in r.stderr
    csvf = tmp_path / "more.csv"
    csvf.write_text("2,y,4\n")
    r = subprocess.run([b, "push", p.base, "t", str(csvf), "--wait"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([b, "query", p.base, "SELECT id, name FROM t ORDER BY id"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == " id | name\n----+------\n  1 | x\n  2 | y\n(2 rows)\n"
    r = subprocess.run([b, "query", p.base, "SELECT nope FROM t"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "nope" in r.stderr
    r = subprocess.run([b, "stats", p.base], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["global_metrics"]["state"] == "running"
    r = subprocess.run([b, "push", p.base, "nope", str(csvf)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and 'no table named "nope"' in r.stderr
    r = subprocess.run([b, "push", p.base, "t", str(tmp_path / "x.txt")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "--format" in r.stderr
    r = subprocess.run([b, "query", "http://127.0.0.1:1", "SELECT 1"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "cannot connect" in r.stderr
    p.stop()
    out, err = tail.communicate(timeout=60)
    assert tail.returncode == 0, err
    changes = [json.loads(l) for l in out.splitlines()]
    inserts = [c["json_data"] for c in changes]
    assert inserts[-1] == [{"delete": {"n": 1, "total": 3}}, {"insert": {"n": 2, "total": 7}}]

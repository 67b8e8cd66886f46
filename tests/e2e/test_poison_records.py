"""Poison records (issue 13): a record whose evaluation fails at run time
(an overflow, an invalid cast in a view's projection or filter) is
rejected - reported in the ingress answer, /stats, the log and the
sluice_errors table - and every other record is applied. The pipeline
never stops for it, and a restart from storage replays to the same state.

Expected results are computed here (Python and SQLite over the records
that can be evaluated), never taken from an earlier run.
"""
import json
import os
import random
import signal
import sqlite3

import pytest
import requests

from conftest import (csv_input, read_dump, run_ok,
                      write_csv)

INT_MAX = 2**31 - 1

PROG = """
CREATE TABLE t (id INT NOT NULL, amount INT) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW big AS SELECT id, amount * 1000000 AS m FROM t;
CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(amount) AS s FROM t;
"""


def fails(amount):
    return amount is not None and not (-2**31 <= amount * 1000000 <= INT_MAX)


def push(p, body, status=200, **params):
    r = requests.post(p.url("/ingress/t"), params=params, data=body, timeout=60)
    assert r.status_code == status, r.text
    return r.json()


def query(p, sql):
    r = requests.get(p.url("/query"), params={"sql": sql, "format": "json"}, timeout=60)
    assert r.status_code == 200, r.text
    return [json.loads(l) for l in r.text.splitlines() if l.strip()]


def rec(i, a):
    return json.dumps({"insert": {"id": i, "amount": a}}) + "\n"


def test_overflowing_record_is_rejected_and_the_rest_applied(http_pipeline):
    p = http_pipeline(PROG)
    body = rec(1, 5) + rec(2, 5000) + rec(3, 7) + rec(4, -3000)
    j = push(p, body, wait="true")
    assert j["accepted"] == 4 and j["processed"] is True
    assert j["rejected"] == 2, j
    assert "overflow" in j["rejected_error"]
    assert sorted(r["id"] for r in query(p, "SELECT id FROM t")) == [1, 3]
    assert query(p, "SELECT * FROM total") == [{"n": 2, "s": 12}]
    errs = query(p, "SELECT table_name, record, error FROM sluice_errors")
    assert sorted(json.loads(e["record"])["id"] for e in errs) == [2, 4]
    assert all(e["table_name"] == "t" and "overflow" in e["error"] for e in errs)
    # the pipeline goes on: later pushes are applied
    assert "rejected" not in push(p, rec(5, 1), wait="true")
    assert query(p, "SELECT * FROM total") == [{"n": 3, "s": 13}]
    st = requests.get(p.url("/stats"), timeout=10).json()
    assert st["global_metrics"]["rejected_records"] == 2
    http_in = [i for i in st["inputs"] if i["table"] == "t"]
    assert http_in and http_in[0]["metrics"]["rejected_records"] == 2
    assert "sluice_connector_rejected_records_total" in requests.get(
        p.url("/metrics"), timeout=10).text
    res = p.stop()
    assert "rejected a record of table t: integer overflow" in res.stderr
    assert '{"id":2,"amount":5000}' in res.stderr


def test_transaction_commit_reports_rejections(http_pipeline):
    p = http_pipeline(PROG)
    assert requests.post(p.url("/start_transaction"), timeout=10).status_code == 200
    push(p, rec(1, 1) + rec(2, 99999) + rec(3, 2))
    r = requests.post(p.url("/commit_transaction"), timeout=60)
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["status"] == "committed" and j["rejected"] == 1 and j["records"] == 2, j
    assert query(p, "SELECT * FROM total") == [{"n": 2, "s": 3}]
    p.stop()


def test_stop_policy_stops_with_the_error(http_pipeline):
    p = http_pipeline(PROG, "--on-error", "stop")
    requests.post(p.url("/ingress/t"), params={"wait": "true"}, data=rec(1, 5000), timeout=60)
    res = p.wait_exit()
    assert res.returncode != 0
    assert "integer overflow" in res.stderr


def csv_prog(tmp_path, rows, name="in.csv"):
    path = tmp_path / name
    write_csv(path, rows)
    return """
CREATE TABLE t (id INT NOT NULL, amount INT) %s;
CREATE MATERIALIZED VIEW big AS SELECT id, amount * 1000000 AS m FROM t WHERE amount <> 0;
CREATE MATERIALIZED VIEW per AS SELECT id %% 7 AS g, COUNT(*) AS n, SUM(amount) AS s
    FROM t GROUP BY id %% 7;
""" % csv_input(path)


def expected(rows):
    """The views over the rows that evaluate, computed by SQLite."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER, amount INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?)", [r for r in rows if not fails(r[1])])
    big = sorted(db.execute("SELECT id, amount * 1000000 FROM t WHERE amount <> 0"))
    per = sorted(db.execute("SELECT id % 7, COUNT(*), SUM(amount) FROM t GROUP BY id % 7"))
    return big, per


@pytest.mark.parametrize("workers,step_rows", [(1, 1000000), (1, 37), (3, 50)])
def test_rejections_are_the_same_for_any_workers_and_steps(tmp_path, workers, step_rows):
    """Connector input (a CSV file): the bad rows are found wherever they
    fall in steps and workers; the views equal SQLite over the good rows;
    sluice_errors holds exactly the bad rows."""
    rng = random.Random(13)
    rows = [(i, rng.choice([rng.randint(-2000, 2000), rng.randint(-10**6, 10**6)]))
            for i in range(700)]
    prog = tmp_path / "p.sql"
    prog.write_text(csv_prog(tmp_path, rows))
    dump = tmp_path / "dump"
    r = run_ok(["run", prog, "--until-done", "--no-progress", "--workers", workers,
                "--step-rows", step_rows, "--dump", dump])
    big, per = expected(rows)
    got_big = sorted(tuple(int(x) for x in row) for row in read_dump(dump / "big.csv")[1])
    got_per = sorted(tuple(int(x) for x in row) for row in read_dump(dump / "per.csv")[1])
    assert got_big == big
    assert got_per == per
    bad = sorted(i for i, a in rows if fails(a))
    assert len(bad) > 50
    errs = read_dump(dump / "sluice_errors.csv")[1]
    assert sorted(json.loads(e[2])["id"] for e in errs) == bad
    assert "more records rejected" in r.stderr


def test_a_clean_run_has_no_errors_file(tmp_path):
    rows = [(i, i) for i in range(100)]
    prog = tmp_path / "p.sql"
    prog.write_text(csv_prog(tmp_path, rows))
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--no-progress", "--dump", dump])
    assert sorted(os.listdir(dump)) == ["big.csv", "per.csv"]


def test_generated_rows_are_rejected_too(tmp_path):
    """datagen rows that overflow are rejected; the rest is applied (the
    count of the two adds up to the rows generated)."""
    prog = tmp_path / "g.sql"
    prog.write_text("""
CREATE TABLE t (id BIGINT NOT NULL, amount INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 3, "plan": [{"limit": 20000,
    "fields": {"amount": {"strategy": "uniform", "range": [1, 2200]}}}]}}}]');
CREATE MATERIALIZED VIEW m AS SELECT COUNT(*) AS n FROM (SELECT amount * 1000000 AS x FROM t) s;
""")
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--no-progress", "--workers", 2, "--step-rows", 3000,
            "--dump", dump])
    n = int(read_dump(dump / "m.csv")[1][0][0])
    errs = read_dump(dump / "sluice_errors.csv")[1]
    assert n + len(errs) == 20000
    assert all(json.loads(e[2])["amount"] * 1000000 > INT_MAX for e in errs)
    assert 0 < len(errs) < 20000


def test_restart_from_storage_replays_the_rejection(tmp_path, http_pipeline):
    """With storage, a rejected record neither stops the pipeline nor a
    restart after kill -9: the replay rejects it again and the state equals
    the run before the kill."""
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    push(p, rec(1, 5) + rec(2, 5000), wait="true")
    push(p, rec(3, 6), wait="true")
    before = query(p, "SELECT * FROM total")
    assert before == [{"n": 2, "s": 11}]
    p.proc.send_signal(signal.SIGKILL)
    p.proc.wait()
    q = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0", name="again")
    assert query(q, "SELECT * FROM total") == before
    errs = query(q, "SELECT record FROM sluice_errors")
    assert [json.loads(e["record"])["id"] for e in errs] == [2]
    push(q, rec(4, 1), wait="true")
    assert query(q, "SELECT * FROM total") == [{"n": 3, "s": 12}]
    q.stop()


def test_errors_table_streams_and_refuses_pushes(http_pipeline):
    """Subscribers of /egress/sluice_errors see each rejection as it
    happens; nobody but the pipeline writes the table."""
    p = http_pipeline(PROG)
    r = requests.post(p.url("/ingress/sluice_errors"), data="{}", timeout=10)
    assert r.status_code == 400 and r.json()["error_code"] == "ReadOnlyTable", r.text
    with requests.post(p.url("/egress/sluice_errors"), stream=True, timeout=60) as sub:
        assert sub.status_code == 200
        push(p, rec(1, 1) + rec(7, 7777), wait="true")
        for line in sub.iter_lines():
            if not line.strip():
                continue
            msg = json.loads(line)
            rows = [json.dumps(x) for x in msg.get("json_data", msg.get("data", [msg]))]
            if any('\\"id\\": 7' in x or '\\"id\\":7' in x for x in rows):
                break
    p.stop()

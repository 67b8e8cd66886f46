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


PK_PROG = """
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, amount INT) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW big AS SELECT id, amount * 1000000 AS m FROM t;
CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(amount) AS s FROM t;
CREATE MATERIALIZED VIEW pairs AS SELECT a.id AS x, b.id AS y FROM t a JOIN t b ON a.id = b.id + 1;
"""


@pytest.mark.parametrize("workers", [1, 3])
def test_primary_key_table_rejects_through_the_upsert(http_pipeline, workers):
    """A PRIMARY KEY table's rows pass its upsert, an aggregate and a join
    before the failing projection's step ends: the step is undone in every
    operator, the bad insert and the bad update are rejected, the rest
    (including the other update of the same push) is applied."""
    p = http_pipeline(PK_PROG, "--workers", workers)
    j = push(p, rec(1, 5) + rec(2, 5000) + rec(3, 7), wait="true")
    assert j["rejected"] == 1
    r = requests.post(p.url("/ingress/t"), params={"wait": "true"}, timeout=60, data=(
        json.dumps({"update": {"id": 1, "amount": 6000}}) + "\n" +
        json.dumps({"update": {"id": 3, "amount": 8}}) + "\n"))
    assert r.status_code == 200 and r.json()["rejected"] == 1, r.text
    assert sorted((x["id"], x["amount"]) for x in query(p, "SELECT * FROM t")) == [(1, 5), (3, 8)]
    assert query(p, "SELECT * FROM total") == [{"n": 2, "s": 13}]
    assert sorted((x["id"], x["m"]) for x in query(p, "SELECT * FROM big")) == [
        (1, 5000000), (3, 8000000)]
    assert query(p, "SELECT * FROM pairs") == []
    push(p, rec(2, 2), wait="true")
    assert sorted((x["x"], x["y"]) for x in query(p, "SELECT * FROM pairs")) == [(2, 1), (3, 2)]
    assert query(p, "SELECT * FROM total") == [{"n": 3, "s": 15}]
    errs = sorted(json.loads(e["record"])["amount"]
                  for e in query(p, "SELECT record FROM sluice_errors"))
    assert errs == [5000, 6000]
    p.stop()


def test_record_that_overflows_an_aggregate_is_rejected(http_pipeline):
    """SUM past what the view can hold blames no single record on its own:
    dry steps find the record, in input order, after which the step fails;
    it is rejected, the others (before and after it) are applied."""
    p = http_pipeline("""
CREATE TABLE t (v BIGINT);
CREATE MATERIALIZED VIEW s AS SELECT SUM(v) * 4 AS x, COUNT(*) AS n FROM t;
""", "--workers", 2)
    big = 2**60
    assert "rejected" not in push(p, json.dumps({"v": big}) + "\n", wait="true")
    # in order: 1 and 2 pass, the first big overflows (rejected), 5 passes,
    # the second big overflows again (rejected)
    j = push(p, "".join(json.dumps({"v": v}) + "\n" for v in (1, 2, big, 5, big)), wait="true")
    assert j["rejected"] == 2 and "overflow" in j["rejected_error"], j
    assert query(p, "SELECT * FROM s") == [{"x": (big + 1 + 2 + 5) * 4, "n": 4}]
    # a negative value lets the same big value in again
    j = push(p, "".join(json.dumps({"v": v}) + "\n" for v in (-big, big)), wait="true")
    assert "rejected" not in j, j
    errs = query(p, "SELECT record FROM sluice_errors")
    assert [json.loads(e["record"])["v"] for e in errs] == [big, big]
    p.stop()


def test_error_where_state_cannot_be_undone_stops(http_pipeline):
    """Top-k cannot undo a step yet: an error in a step that fed it stops
    the pipeline, as with --on-error stop."""
    p = http_pipeline("""
CREATE TABLE t (id INT, v INT);
CREATE VIEW top AS SELECT id, v FROM t ORDER BY v DESC LIMIT 2;
CREATE MATERIALIZED VIEW m AS SELECT id, v * 1000000 AS w FROM top;
""")
    try:  # the pipeline may end before it answers
        requests.post(p.url("/ingress/t"), params={"wait": "true"}, timeout=60,
                      data=rec(1, 1).replace("amount", "v") + json.dumps({"id": 2, "v": 9999}))
    except requests.exceptions.ConnectionError:
        pass
    res = p.wait_exit()
    assert res.returncode != 0
    assert "overflow" in res.stderr


@pytest.mark.parametrize("workers,step_rows", [(1, 1000000), (2, 7), (3, 40)])
def test_aggregate_rejections_follow_input_order_for_any_steps(tmp_path, workers, step_rows):
    """The records an aggregate's overflow rejects are those that, applied
    in input order after the ones kept, would overflow it (a Python model of
    the rule decides). With positive values the sum only grows, so the view
    after each step is its value after each record, and the result is the
    same for any step size and worker count. (With mixed signs it is not:
    only a step's end result is ever computed, so a sum that overflows in
    the middle of a step and comes back is no error.)"""
    rng = random.Random(7)
    big = 2**57
    vals = [rng.choice([rng.randint(1, 1000), rng.randint(1, 1000), big]) for _ in range(120)]
    kept, acc = [], 0
    for v in vals:
        if -2**63 <= (acc + v) * 8 <= 2**63 - 1:
            kept.append(v)
            acc += v
    path = tmp_path / "v.csv"
    write_csv(path, [(v,) for v in vals])
    prog = tmp_path / "a.sql"
    prog.write_text("CREATE TABLE t (v BIGINT) %s;\n" % csv_input(path) +
                    "CREATE MATERIALIZED VIEW s AS SELECT SUM(v) * 8 AS x, COUNT(*) AS n FROM t;\n")
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--no-progress", "--workers", workers,
            "--step-rows", step_rows, "--dump", dump])
    assert read_dump(dump / "s.csv")[1] == [[str(acc * 8), str(len(kept))]]
    errs = read_dump(dump / "sluice_errors.csv")[1]
    assert len(errs) == len(vals) - len(kept) > 3

"""Transactions over HTTP (start, commit, abort) and backfill transactions
of connectors: while a transaction is open views emit nothing, the commit
emits one change per view over everything it held, an abort leaves the
state exactly as before, and a connector with "transaction": "backfill"
runs its whole input as one step.
"""
import json

import requests

from conftest import conn_clause, read_dump, run_ok, wait_until
from httpkit import Follower, ingress, lines
from httpkit import query as query_rows

PROG = """
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR, v INT)
    WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS total FROM t;
CREATE MATERIALIZED VIEW big AS SELECT id, name FROM t WHERE v >= 100;
"""


def push(p, body, status=200, **params):
    return ingress(p, "t", body, status, **params)


def query(p, sql):
    return sorted(json.dumps(r, sort_keys=True) for r in query_rows(p, sql))


def norm(changes):
    """A chunk's changes as a sorted list (their order is the rows' order)."""
    return sorted(json.dumps(x, sort_keys=True) for x in changes)


def post(p, path, status=200, **params):
    r = requests.post(p.url(path), params=params, timeout=60)
    assert r.status_code == status, (path, r.status_code, r.text)
    return r.json()


def test_commit_computes_once_and_emits_one_change_per_view(http_pipeline):
    p = http_pipeline(PROG, "--workers", "2")
    push(p, lines({"insert": {"id": 1, "name": "a", "v": 100}}), wait="true")
    fa, fb = Follower(p, "agg"), Follower(p, "big")
    j = post(p, "/start_transaction")
    tid = j["transaction_id"]
    assert tid >= 1
    err = post(p, "/start_transaction", 409)
    assert err["error_code"] == "TransactionConflict" and "already open" in err["error"]
    push(p, lines({"insert": {"id": 2, "name": "b", "v": 200}},
                  {"insert": {"id": 3, "name": "c", "v": 5}}))
    push(p, lines({"update": {"id": 3, "v": 300}}, {"delete": {"id": 1}}))
    push(p, "4,d,400\n", format="csv")
    st = requests.get(p.url("/status")).json()
    assert st["transaction_status"] == "TransactionInProgress"
    assert st["transaction"]["id"] == tid and st["transaction"]["initiator"] == "api"
    # nothing is visible yet
    assert query(p, "SELECT * FROM agg") == [json.dumps({"n": 1, "total": 100}, sort_keys=True)]
    j = post(p, "/commit_transaction")
    assert j["status"] == "committed" and j["transaction_id"] == tid and j["records"] == 5
    assert query(p, "SELECT * FROM agg") == [json.dumps({"n": 3, "total": 900}, sort_keys=True)]
    st = requests.get(p.url("/status")).json()
    assert st["transaction_status"] == "NoTransaction"
    assert st["last_commit"]["transaction_id"] == tid
    post(p, "/commit_transaction", 409)
    post(p, "/abort_transaction", 409)
    p.stop()
    ca, cb = fa.join(), fb.join()
    # exactly one change per view for the whole transaction
    assert [norm(c["json_data"]) for c in ca] == [norm([{"delete": {"n": 1, "total": 100}},
                                                        {"insert": {"n": 3, "total": 900}}])]
    assert len(cb) == 1
    assert sorted(json.dumps(x, sort_keys=True) for x in cb[0]["json_data"]) == sorted(
        json.dumps(x, sort_keys=True) for x in [
            {"delete": {"id": 1, "name": "a"}}, {"insert": {"id": 2, "name": "b"}},
            {"insert": {"id": 3, "name": "c"}}, {"insert": {"id": 4, "name": "d"}}])


def test_abort_leaves_state_exactly_as_before(http_pipeline, tmp_path):
    p = http_pipeline(PROG, "--dump", tmp_path / "d")
    push(p, lines(*[{"insert": {"id": i, "name": "n%d" % i, "v": i * 50}} for i in range(6)]),
         wait="true")
    before = {v: query(p, "SELECT * FROM " + v) for v in ("t", "agg", "big")}
    f = Follower(p, "agg")
    tid = post(p, "/start_transaction")["transaction_id"]
    push(p, lines({"insert": {"id": 100, "name": "new", "v": 1}},
                  {"update": {"id": 2, "name": "CHANGED"}},
                  {"delete": {"id": 3}},
                  {"insert": {"id": 4, "name": "replaced", "v": 0}}))
    push(p, "200,x,1000\n", format="csv")
    j = post(p, "/abort_transaction")
    assert j["status"] == "aborted" and j["transaction_id"] == tid and j["discarded_records"] == 5
    after = {v: query(p, "SELECT * FROM " + v) for v in ("t", "agg", "big")}
    assert after == before
    # the next change builds on the old state: the aborted update is gone
    push(p, lines({"update": {"id": 2, "v": 7}}), wait="true")
    assert query(p, "SELECT name, v FROM t WHERE id = 2") == [
        json.dumps({"name": "n2", "v": 7}, sort_keys=True)]
    res = p.stop()
    assert "transaction %d aborted: 5 records discarded" % tid in res.stderr
    chunks = f.join()
    # the only change the follower saw is the one after the abort
    assert [norm(c["json_data"]) for c in chunks] == [norm([{"delete": {"n": 6, "total": 750}},
                                                            {"insert": {"n": 6, "total": 657}}])]
    hdr, rows = read_dump(tmp_path / "d" / "t.csv")
    assert len(rows) == 6 and ["2", "n2", "7"] in rows


def test_commit_without_waiting_and_while_paused(http_pipeline):
    p = http_pipeline(PROG)
    post(p, "/start_transaction")
    push(p, lines({"insert": {"id": 1, "name": "a", "v": 1}}))
    post(p, "/pause")
    err = post(p, "/commit_transaction", 409)
    assert "paused" in err["error"] and err["details"]["transaction_status"] == \
        "TransactionInProgress"
    post(p, "/start")
    j = post(p, "/commit_transaction", 202, wait="false")
    assert j["status"] == "committing"
    def committed():
        st = requests.get(p.url("/status")).json()
        return st if st.get("last_commit", {}).get("transaction_id") == j["transaction_id"] \
            else None
    st = wait_until(committed, "the commit finishing")
    assert st["last_commit"]["records"] == 1
    assert query(p, "SELECT id FROM t") == [json.dumps({"id": 1})]
    p.stop()


def test_stop_discards_an_open_transaction(http_pipeline, tmp_path):
    p = http_pipeline(PROG, "--dump", tmp_path / "d")
    push(p, lines({"insert": {"id": 1, "name": "kept", "v": 1}}), wait="true")
    post(p, "/start_transaction")
    push(p, lines({"insert": {"id": 2, "name": "uncommitted", "v": 1}}))
    res = p.stop()
    assert "transaction 1 was still open at the stop: its 1 record was discarded" in res.stderr
    hdr, rows = read_dump(tmp_path / "d" / "t.csv")
    assert rows == [["1", "kept", "1"]]


def backfill_prog(tmp_path, backfill, out):
    src = tmp_path / "hist.json"
    ev = [{"insert": {"id": i, "name": "h%d" % i, "v": i}} for i in range(200)]
    ev += [{"delete": {"id": i}} for i in range(0, 200, 2)]   # cancels within the backfill
    ev += [{"insert": {"id": i, "name": "again", "v": 1000}} for i in range(0, 10, 2)]
    src.write_text(lines(*ev))
    conn = {"transport": {"name": "file_input", "config": {"path": str(src)}},
            "format": {"name": "json", "config": {"update_format": "insert_delete"}}}
    if backfill:
        conn["transaction"] = "backfill"
    prog = tmp_path / ("bf%d.sql" % backfill)
    prog.write_text(
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR, v INT) %s;\n"
        "CREATE VIEW agg %s AS SELECT COUNT(*) AS n, SUM(v) AS total FROM t;\n"
        "CREATE MATERIALIZED VIEW big AS SELECT id, name FROM t WHERE v >= 100;\n"
        % (conn_clause([conn]), conn_clause([
            {"transport": {"name": "file_output", "config": {"path": str(out)}},
             "format": {"name": "csv"}}])))
    return prog


def test_backfill_runs_the_whole_input_as_one_step(tmp_path):
    out1, out2 = tmp_path / "steps.csv", tmp_path / "one.csv"
    run_ok(["run", backfill_prog(tmp_path, False, out1), "--until-done", "--step-rows", "25",
            "--dump", tmp_path / "d1"])
    r = run_ok(["run", backfill_prog(tmp_path, True, out2), "--until-done", "--step-rows", "25",
                "--dump", tmp_path / "d2"])
    assert "backfill transaction 1: committing 305 records in one step" in r.stderr
    # step by step, the aggregate changed many times; as one transaction, once
    assert len(open(out1).read().splitlines()) > 10
    n = 100 + 5
    total = sum(range(1, 200, 2)) + 5 * 1000
    assert open(out2).read() == "%d,%d,1\n" % (n, total)
    assert open(tmp_path / "d1" / "big.csv").read() == open(tmp_path / "d2" / "big.csv").read()


def test_backfill_with_http_and_api_transactions(http_pipeline, tmp_path):
    out = tmp_path / "one.csv"
    p = http_pipeline(backfill_prog(tmp_path, True, out).read_text())
    # the backfill may still be open or already committed; either way an API
    # transaction works once it is done
    def backfill_committed():
        st = requests.get(p.url("/status")).json()
        if st.get("last_commit"):
            return st
        r = requests.post(p.url("/commit_transaction"))
        assert r.status_code == 409
        assert "backfill" in r.json()["error"] or "no transaction" in r.json()["error"]
        return None
    st = wait_until(backfill_committed, "the backfill transaction committing")
    assert st["last_commit"]["transaction_id"] == 1 and st["last_commit"]["records"] == 305
    tid = post(p, "/start_transaction")["transaction_id"]
    assert tid == 2
    push(p, lines({"insert": {"id": 1000, "name": "z", "v": 1}}))
    post(p, "/commit_transaction")
    p.stop()
    got = open(out).read().splitlines()
    assert len(got) == 3  # the backfill's insert, then the commit's -old +new

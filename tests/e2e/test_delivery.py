"""Delivery that loses nothing (issue 15 items 5 and 6, output side;
src/io/deliver.c): postgres_output against a real PostgreSQL 15 that goes
away and comes back (the pipeline keeps stepping, the queue grows and
drains in order), rows a CHECK constraint refuses (dead letters, queryable
at GET /dead_letter, everything else arrives), backpressure past a small
queue bound (inputs pause: ingress answers 503, /stats says which output;
they resume once it drains), and kill -9 while steps are queued in the
storage directory (the restart delivers them exactly once: PostgreSQL's
own audit trigger counts every row operation), and the delivery counters
across kill -9 (restored from the checkpoint, then what the queue, the
dead letters and the replayed steps say: equal to Python's count). Expected tables are
computed in Python from the rows pushed, never from Sluice's figures; the
accounting changes == acknowledged + dead-lettered + pending is checked
against /stats.

One server for the module (pgserver.py), each test its own tables.
"""
import json
import os

import requests
import pytest

from conftest import conn_clause, wait_until
from httpkit import ingress, lines


FAST = {"retry": {"attempts": 2, "backoff_ms": 10, "max_backoff_ms": 20}}


def pg_out(pg, table, keys, delivery=None):
    c = {"transport": {"name": "postgres_output",
                       "config": {"uri": pg.uri, "table": table, "key_columns": keys}}}
    c["delivery"] = dict(FAST, **(delivery or {}))
    return conn_clause([c])


SQL = """
CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)
  WITH ('connectors' = '[{"transport": {"name": "http_input"}}]');
CREATE VIEW v %s AS SELECT id, v FROM t;
"""


def stats(p):
    r = requests.get(p.url("/stats"), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def out_metrics(p):
    outs = [o for o in stats(p)["outputs"] if o["transport"] == "postgres_output"]
    assert len(outs) == 1
    return outs[0]["metrics"]


def adds_up(m):
    assert m["changes"] == m["acknowledged_records"] + m["dead_lettered_records"] + \
        m["pending_records"], m
    return m


def table(pg, name):
    return {int(i): int(v) for i, v in pg.query("SELECT id, v FROM %s" % name)}


def steps(p):
    return stats(p)["global_metrics"]["total_completed_steps"]


def test_database_away_the_queue_grows_and_drains_in_order(pg, http_pipeline):
    p = http_pipeline(SQL % pg_out(pg, "dl_away", ["id"]))
    want = {}
    ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(50)]))
    want.update({i: i for i in range(50)})
    wait_until(lambda: pg.query("SELECT to_regclass('dl_away') IS NOT NULL") == [["t"]] and
               table(pg, "dl_away") == want, "the first rows in PostgreSQL")
    pg.stop()
    try:
        # each push is a step; the pipeline keeps stepping while they queue.
        # The same ids change several times: a step applied out of order
        # would leave an older value behind.
        for k in range(1, 6):
            s0 = steps(p)
            rows = [{"delete": {"id": i, "v": want[i]}} for i in range(0, 50, 2)]
            rows += [{"insert": {"id": i, "v": i * 100 + k}} for i in range(0, 50, 2)]
            for i in range(0, 50, 2):
                want[i] = i * 100 + k
            ingress(p, "t", lines(*rows))
            wait_until(lambda: steps(p) > s0, "step %d running with the database away" % k)
        m = wait_until(lambda: (lambda m: m if m["queued_steps"] >= 5 else None)(out_metrics(p)),
                       "five steps queued")
        adds_up(m)
        assert m["pending_records"] == 5 * 50 and m["failing"], m
        assert m["retried_records"] > 0
        assert "retrying in the background" in p.stderr()
    finally:
        pg.start()
    wait_until(lambda: out_metrics(p)["pending_records"] == 0, "the queue draining")
    assert table(pg, "dl_away") == want
    m = adds_up(out_metrics(p))
    assert m["dead_lettered_records"] == 0 and not m["failing"]
    assert m["acknowledged_records"] == m["changes"] == 50 + 5 * 50
    lag = m["end_to_end_lag_ms"]
    assert lag["count"] == m["acknowledged_records"] and lag["p99"] >= lag["p50"] > 0
    metrics = requests.get(p.url("/metrics"), timeout=60).text
    assert "sluice_output_acknowledged_records_total{" in metrics
    assert 'sluice_output_lag_seconds{view="v"' in metrics
    # delivering again: a new step goes straight through
    ingress(p, "t", lines({"id": 1000, "v": 1}))
    want[1000] = 1
    wait_until(lambda: table(pg, "dl_away") == want, "a step after the drain")
    p.stop()


def test_rows_a_check_constraint_refuses_go_to_the_dead_letters(pg, http_pipeline):
    pg.psql("CREATE TABLE dl_check (id bigint PRIMARY KEY, v bigint CHECK (v >= 0))")
    p = http_pipeline(SQL % pg_out(pg, "dl_check", ["id"]))
    rows = [{"id": i, "v": (i * 37) % 23 - 5} for i in range(200)]
    good = {r["id"]: r["v"] for r in rows if r["v"] >= 0}
    bad = {r["id"]: r["v"] for r in rows if r["v"] < 0}
    assert bad and good
    for k in range(0, 200, 40):
        ingress(p, "t", lines(*rows[k:k + 40]))
    # a delete of a refused row (never in the table) and of an accepted one
    gone_good = next(iter(good))
    ingress(p, "t", lines({"delete": {"id": gone_good, "v": good.pop(gone_good)}}))
    m = wait_until(lambda: (lambda m: m if m["changes"] == 201 and m["pending_records"] == 0
                            else None)(out_metrics(p)), "every change delivered")
    adds_up(m)
    assert m["dead_lettered_records"] == len(bad)
    assert m["acknowledged_records"] == 201 - len(bad)
    assert table(pg, "dl_check") == good
    r = requests.get(p.url("/dead_letter"), params={"output": "v"}, timeout=60)
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["count"] == len(bad)
    assert {e["record"]["insert"]["id"]: e["record"]["insert"]["v"] for e in d["records"]} == bad
    for e in d["records"]:
        assert "dl_check_v_check" in e["error"] and e["step"] > 0 and e["time"]
    assert requests.get(p.url("/dead_letter"), params={"output": "nope"},
                        timeout=60).status_code == 404
    assert "went to the dead letters" in p.stderr()
    p.stop()


def test_backpressure_pauses_the_inputs_until_the_queue_drains(pg, http_pipeline):
    p = http_pipeline(SQL % pg_out(pg, "dl_bp", ["id"], {"max_queued_records": 30}))
    ingress(p, "t", lines({"id": 0, "v": 0}))
    wait_until(lambda: pg.query("SELECT to_regclass('dl_bp') IS NOT NULL") == [["t"]] and
               table(pg, "dl_bp") == {0: 0}, "the first row")
    want = {0: 0}
    pg.stop()
    try:
        n = 1
        # push 20 rows at a time until the inputs pause (past 30 queued)
        while True:
            batch = [{"id": i, "v": i} for i in range(n, n + 20)]
            s0 = out_metrics(p)["pending_records"]
            r = requests.post(p.url("/ingress/t"), data=lines(*batch), timeout=60)
            if r.status_code == 503:
                assert r.json()["error_code"] == "Backpressure", r.text
                assert r.headers.get("Retry-After") == "1"
                break
            assert r.status_code == 200, r.text
            want.update({i: i for i in range(n, n + 20)})
            n += 20
            wait_until(lambda: out_metrics(p)["pending_records"] >= s0 + 20 or
                       stats(p)["global_metrics"]["backpressure"], "the push queued")
            assert n < 400, "no backpressure"
        g = stats(p)["global_metrics"]
        assert g["backpressure"]["view"] == "v" and g["backpressure"]["pending_records"] > 30
        assert "inputs are paused" in p.stderr()
    finally:
        pg.start()
    wait_until(lambda: stats(p)["global_metrics"]["backpressure"] is None, "the inputs resuming")
    ingress(p, "t", lines({"id": 999, "v": 9}))
    want[999] = 9
    wait_until(lambda: table(pg, "dl_bp") == want, "everything in the table")
    adds_up(out_metrics(p))
    p.stop()


AUDIT = """
CREATE TABLE {t} (id bigint PRIMARY KEY, v bigint);
CREATE TABLE {t}_audit (op text);
CREATE OR REPLACE FUNCTION {t}_audit_fn() RETURNS trigger AS $$
BEGIN INSERT INTO {t}_audit VALUES (TG_OP); RETURN NULL; END $$ LANGUAGE plpgsql;
CREATE TRIGGER {t}_audit_tr AFTER INSERT OR UPDATE OR DELETE ON {t}
  FOR EACH ROW EXECUTE FUNCTION {t}_audit_fn();
"""


def test_kill9_with_steps_queued_delivers_them_exactly_once(pg, http_pipeline, tmp_path):
    """Steps queued in the storage directory while the database is away,
    then kill -9: the restart (database back) delivers each queued step
    once. Inserts of new ids only: a step applied twice would show as
    UPDATEs in PostgreSQL's audit, a lost one as missing rows."""
    pg.psql(AUDIT.format(t="dl_kill"))
    st = tmp_path / "st"
    sql = SQL % pg_out(pg, "dl_kill", ["id"])
    p = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="a")
    ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(10)]))
    wait_until(lambda: len(table(pg, "dl_kill")) == 10, "the first rows")
    pg.stop()
    try:
        for k in range(1, 5):
            ingress(p, "t", lines(*[{"id": k * 100 + i, "v": k} for i in range(10)]))
            wait_until(lambda: out_metrics(p)["queued_steps"] >= k, "step queued %d" % k)
        # a checkpoint past the queued steps: the restart does not replay them
        r = requests.post(p.url("/checkpoint"), timeout=60)
        assert r.status_code == 200, r.text
        seq = r.json()["checkpoint_sequence_number"]
        wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60).json()
                            .get("success") or 0) >= seq, "the checkpoint")
        ingress(p, "t", lines(*[{"id": 500 + i, "v": 5} for i in range(10)]))
        wait_until(lambda: out_metrics(p)["queued_steps"] >= 5, "the fifth step queued")
        assert "in the storage directory" in p.stderr()
        p.proc.kill()
        p.proc.wait()
    finally:
        pg.start()
    q = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="b")
    want = {i: i for i in range(10)}
    for k in range(1, 6):
        want.update({k * 100 + i: k for i in range(10)})
    wait_until(lambda: table(pg, "dl_kill") == want, "the queued steps delivered")
    assert "still to deliver" in q.stderr()
    ingress(q, "t", lines({"id": 9999, "v": 1}))
    want[9999] = 1
    wait_until(lambda: table(pg, "dl_kill") == want, "a new step")
    audit = dict(pg.query("SELECT op, count(*) FROM dl_kill_audit GROUP BY op"))
    assert audit == {"INSERT": str(len(want))}, audit
    q.stop()


def test_a_stop_with_changes_queued_and_no_storage_says_they_are_lost(pg, http_pipeline):
    p = http_pipeline(SQL % pg_out(pg, "dl_lost", ["id"]))
    ingress(p, "t", lines({"id": 1, "v": 1}))
    wait_until(lambda: pg.query("SELECT to_regclass('dl_lost') IS NOT NULL") == [["t"]] and
               table(pg, "dl_lost") == {1: 1}, "the first row")
    pg.stop()
    try:
        ingress(p, "t", lines({"id": 2, "v": 2}))
        wait_until(lambda: out_metrics(p)["pending_records"] == 1, "a change queued")
        requests.post(p.url("/stop"), timeout=60)
        r = p.wait_exit(timeout=120)
    finally:
        pg.start()
    assert r.returncode != 0
    assert "1 change of 1 step not delivered (no local storage: they are lost)" in r.stderr, r.stderr


def test_delivery_configuration_errors_are_clear(pg, tmp_path):
    from conftest import run
    prog = tmp_path / "p.sql"
    for bad, words in [({"retry": {"attempts": 0}}, "\"attempts\" must be"),
                       ({"retry": {"tries": 3}}, "unknown key \"tries\""),
                       ({"on_record_error": "skip"}, "\"dead_letter\" or \"stop\""),
                       ({"max_queued_records": -1}, "positive number"),
                       ({"queue": 1}, "unknown key \"queue\"")]:
        c = {"transport": {"name": "postgres_output",
                           "config": {"uri": pg.uri, "table": "x", "key_columns": ["id"]}},
             "delivery": bad}
        prog.write_text(SQL % conn_clause([c]))
        r = run(["check", prog])
        assert r.returncode != 0 and words in r.stderr, (bad, r.stderr)


def test_kafka_brokers_away_then_back(http_pipeline):
    """kafka_output with every broker of a mock cluster down: the steps go
    on, their changes queue; once the brokers are back the queue drains
    and a read_committed consumer sees every change once."""
    import os
    from test_kafka import MOCK, Kafka, consume
    if not os.access(MOCK, os.X_OK):
        pytest.skip("tool_kafka_mock not built")
    k = Kafka((("out", 2),))
    try:
        out = conn_clause([{"transport": {"name": "kafka_output", "config": {
            "bootstrap.servers": k.bootstrap, "topic": "out"}},
            "format": {"name": "json"}, "delivery": FAST}])
        p = http_pipeline(SQL % out)
        ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(20)]))
        wait_until(lambda: len(consume(k, "out")) == 20, "the first messages")
        k.command("down")
        for j in range(3):
            s0 = steps(p)
            ingress(p, "t", lines(*[{"id": 100 * (j + 1) + i, "v": j} for i in range(10)]))
            wait_until(lambda: steps(p) > s0, "a step with the brokers down")
        m = wait_until(lambda: (lambda m: m if m["queued_steps"] >= 1 else None)(
            (lambda o: o[0]["metrics"])([o for o in stats(p)["outputs"]
                                         if o["transport"] == "kafka_output"])),
            "steps queued")
        adds_up(m)
        k.command("up")

        def drained():
            o = [o for o in stats(p)["outputs"] if o["transport"] == "kafka_output"]
            return o[0]["metrics"] if o[0]["metrics"]["pending_records"] == 0 else None
        m = wait_until(drained, "the queue draining")
        adds_up(m)
        assert m["acknowledged_records"] == 50
        msgs = consume(k, "out")
        ids = sorted(json.loads(v)["insert"]["id"] for _s, _q, v in msgs)
        want = sorted(list(range(20)) + [100 * (j + 1) + i for j in range(3) for i in range(10)])
        assert ids == want
        assert len({(s, q) for s, q, _ in msgs}) == len(msgs)
        p.stop()
    finally:
        k.stop()


def test_dead_letters_are_kept_once_across_kill9(pg, http_pipeline, tmp_path):
    """Dead letters live in the storage directory: after kill -9 and a
    restart (which replays the last journaled step: the destination
    already committed it) each refused record is listed once."""
    pg.psql("CREATE TABLE dl_dead9 (id bigint PRIMARY KEY, v bigint CHECK (v >= 0))")
    st = tmp_path / "st"
    sql = SQL % pg_out(pg, "dl_dead9", ["id"])
    p = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="a")
    rows = [{"id": i, "v": i % 7 - 2} for i in range(70)]
    bad = sorted(r["id"] for r in rows if r["v"] < 0)
    for k in range(0, 70, 35):
        ingress(p, "t", lines(*rows[k:k + 35]))
    wait_until(lambda: out_metrics(p)["dead_lettered_records"] == len(bad) and
               out_metrics(p)["pending_records"] == 0, "the refused rows dead-lettered")
    p.proc.kill()
    p.proc.wait()
    q = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="b")
    ingress(q, "t", lines({"id": 1000, "v": -1}))
    # (the counters go on: the replayed steps' dead letters count again)
    wait_until(lambda: out_metrics(q)["dead_lettered_records"] == len(bad) + 1,
               "one more refused")
    d = requests.get(q.url("/dead_letter"), params={"output": "v"}, timeout=60).json()
    assert sorted(e["record"]["insert"]["id"] for e in d["records"]) == sorted(bad + [1000])
    assert table(pg, "dl_dead9") == {r["id"]: r["v"] for r in rows if r["v"] >= 0}
    q.stop()


def test_the_row_by_row_pass_keeps_values_of_every_type(pg, tmp_path):
    """A refused row sends its step through the row-by-row pass (query
    parameters, not COPY): the other rows' values of every type arrive as
    they are."""
    import hashlib
    from conftest import run_ok
    pg.psql("CREATE TABLE dl_types (id integer PRIMARY KEY, b boolean, d numeric(10,2), "
            "f double precision, s text, dt date, ts timestamp, tm time, iv interval, "
            "CHECK (id <> 5))")
    rows = [
        {"id": 1, "b": True, "d": "12.50", "f": 0.1, "s": "tab\there", "dt": "2024-02-29",
         "ts": "2024-02-29 23:59:58.5", "tm": "01:02:03"},
        {"id": 2, "b": False, "d": "-0.07", "f": -1e20, "s": "back\\slash\nnew line 'q' \"dq\"",
         "dt": "1970-01-01", "ts": "1999-12-31 00:00:00", "tm": "23:59:59.25"},
        {"id": 3, "b": None, "d": None, "f": None, "s": None, "dt": None, "ts": None,
         "tm": None},
        {"id": 5, "b": True, "d": "1.00", "f": 1.0, "s": "refused", "dt": "2000-01-01",
         "ts": "2000-01-01 00:00:00", "tm": "00:00:00"},
    ]
    data = tmp_path / "t.json"
    data.write_text(lines(*rows))
    inp = conn_clause([{"transport": {"name": "file_input", "config": {"path": str(data)}},
                        "format": {"name": "json"}}])
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (id INT NOT NULL, b BOOLEAN, d DECIMAL(10,2), f DOUBLE, s VARCHAR, "
        "dt DATE, ts TIMESTAMP, tm TIME) %s;\n"
        "CREATE VIEW v %s AS SELECT *, ts - TIMESTAMP '1999-12-31 00:00:00' AS iv FROM t;\n"
        % (inp, pg_out(pg, "dl_types", ["id"])))
    r = run_ok(["run", prog, "--until-done", "--no-progress"])
    assert r.stderr.count("went to the dead letters") == 1, r.stderr
    got = pg.query("SELECT id, b, d, f, md5(s), length(s), dt, ts, tm, "
                   "extract(epoch FROM iv)::float8 FROM dl_types ORDER BY id")
    import datetime
    iv1 = (datetime.datetime(2024, 2, 29, 23, 59, 58, 500000) -
           datetime.datetime(1999, 12, 31)).total_seconds()

    def md5(x):
        return hashlib.md5(x.encode()).hexdigest()
    s1, s2 = "tab\there", "back\\slash\nnew line 'q' \"dq\""
    assert got == [
        ["1", "t", "12.50", "0.1", md5(s1), str(len(s1)), "2024-02-29", "2024-02-29 23:59:58.5",
         "01:02:03", repr(iv1)],
        ["2", "f", "-0.07", "-1e+20", md5(s2), str(len(s2)), "1970-01-01", "1999-12-31 00:00:00",
         "23:59:59.25", "0"],
        ["3", None, None, None, None, None, None, None, None, None],
    ]


def test_counters_survive_kill9_from_the_checkpoint(pg, http_pipeline, tmp_path):
    """The delivery counters come back from the checkpoint after kill -9:
    a checkpoint after two steps, one more step delivered, two queued while
    the database is away, kill -9; the restart (database back) counts the
    delivered step and the queued ones once, so at the end changes,
    acknowledged and dead-lettered records equal what Python counts of the
    rows pushed (CHECK refuses v < 0), as without the crash."""
    pg.psql("CREATE TABLE dl_cnt (id bigint PRIMARY KEY, v bigint CHECK (v >= 0))")
    st = tmp_path / "st"
    sql = SQL % pg_out(pg, "dl_cnt", ["id"])
    args = ("--storage", st, "--checkpoint-interval", "0")
    rows = [{"id": i, "v": i % 7 - 2} for i in range(140)]
    batches = [rows[k:k + 20] for k in range(0, 140, 20)]

    def push(p, b):
        s0 = steps(p)
        ingress(p, "t", lines(*batches[b]))
        wait_until(lambda: steps(p) > s0, "batch %d stepped" % b)

    def settled(p, n):
        return wait_until(lambda: (lambda m: m if m["changes"] == n and m["pending_records"] == 0
                                   else None)(out_metrics(p)), "%d changes delivered" % n)

    def counted(n):
        bad = sum(1 for r in rows[:n] if r["v"] < 0)
        return n, n - bad, bad

    p = http_pipeline(sql, *args, name="a")
    push(p, 0)
    push(p, 1)
    settled(p, 40)
    r = requests.post(p.url("/checkpoint"), timeout=60)
    assert r.status_code == 200, r.text
    seq = r.json()["checkpoint_sequence_number"]
    wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60).json()
                        .get("success") or 0) >= seq, "the checkpoint")
    push(p, 2)
    settled(p, 60)
    pg.stop()
    try:
        push(p, 3)
        push(p, 4)
        wait_until(lambda: out_metrics(p)["queued_steps"] >= 2, "two steps queued")
        p.proc.kill()
        p.proc.wait()
    finally:
        pg.start()
    q = http_pipeline(sql, *args, name="b")
    m = adds_up(settled(q, 100))
    assert (m["changes"], m["acknowledged_records"], m["dead_lettered_records"]) == counted(100)
    push(q, 5)
    push(q, 6)
    m = adds_up(settled(q, 140))
    assert (m["changes"], m["acknowledged_records"], m["dead_lettered_records"]) == counted(140)
    assert m["sent_records"] >= m["changes"]
    assert table(pg, "dl_cnt") == {r["id"]: r["v"] for r in rows if r["v"] >= 0}
    d = requests.get(q.url("/dead_letter"), params={"output": "v"}, timeout=60).json()
    assert sorted(e["record"]["insert"]["id"] for e in d["records"]) == \
        sorted(r["id"] for r in rows if r["v"] < 0)
    q.stop()


def test_bootstrap_that_renumbers_outputs_with_steps_queued_is_refused(pg, http_pipeline,
                                                                       tmp_path):
    """Delivery queues are named by output number (DIR/delivery/out<N>.queue).
    Views a (output 0) and b (output 1) queue steps while the database is
    away; a checkpoint; kill -9. The new program drops a, so b's output
    becomes output 0: it would load a's queue and deliver a's rows to b's
    table (and never b's own queued steps). The bootstrap is refused, naming
    the output, with the storage and both tables as they were; once the old
    program has drained its queues (database back), the bootstrap goes
    ahead and b's table ends with every row once."""
    st = tmp_path / "st"
    tab = ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)\n"
           "  WITH ('connectors' = '[{\"transport\": {\"name\": \"http_input\"}}]');\n")
    va = "CREATE VIEW a %s AS SELECT id, v FROM t;\n" % pg_out(pg, "rq_a", ["id"])
    vb = "CREATE VIEW b %s AS SELECT id, v * 10 AS v FROM t;\n" % pg_out(pg, "rq_b", ["id"])
    old, new = tab + va + vb, tab + vb

    def queued(p):
        return [o["metrics"]["queued_steps"] for o in stats(p)["outputs"]
                if o["transport"] == "postgres_output"]
    p = http_pipeline(old, "--storage", st, "--checkpoint-interval", "0", name="old")
    ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(10)]))
    wait_until(lambda: len(table(pg, "rq_a")) == 10 and len(table(pg, "rq_b")) == 10,
               "the first rows")
    pg.stop()
    try:
        ingress(p, "t", lines(*[{"id": 100 + i, "v": i} for i in range(10)]))
        wait_until(lambda: min(queued(p)) >= 1, "a step queued for both outputs")
        r = requests.post(p.url("/checkpoint"), timeout=60)
        seq = r.json()["checkpoint_sequence_number"]
        wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60).json()
                            .get("success") or 0) >= seq, "the checkpoint")
        p.proc.kill()
        p.proc.wait()
    finally:
        pg.start()
    prog = tmp_path / "new.sql"
    prog.write_text(new)
    from conftest import run
    files = sorted(os.listdir(st))
    res = run(["run", prog, "--storage", st, "--bootstrap", "allow", "--until-done"])
    assert res.returncode == 1, res.stderr[-3000:]
    assert "output 0 of the old program (of view a) has steps queued" in res.stderr, res.stderr
    assert "Run the old program until its queues drain" in res.stderr
    assert sorted(os.listdir(st)) == files
    want_b = {i: i * 10 for i in range(10)}
    assert table(pg, "rq_b") == want_b  # nothing of a's reached it
    # the old program drains its queues, then the bootstrap goes ahead
    p = http_pipeline(old, "--storage", st, "--checkpoint-interval", "0", name="drain")
    want_b.update({100 + i: i * 10 for i in range(10)})
    wait_until(lambda: table(pg, "rq_b") == want_b and len(table(pg, "rq_a")) == 20,
               "the queues drained")
    wait_until(lambda: max(queued(p)) == 0, "the queues empty")
    p.stop()
    q = http_pipeline(new, "--storage", st, "--bootstrap", "allow", name="new")
    ingress(q, "t", lines({"id": 999, "v": 1}))
    want_b[999] = 10
    wait_until(lambda: table(pg, "rq_b") == want_b, "a step of the new program")
    assert "has steps queued" not in q.stderr()
    q.stop()

"""Kafka connectors (issue 15) against librdkafka's mock cluster, run as a
process of its own (tests/tools/tool_kafka_mock.c) that speaks the real
Kafka protocol on 127.0.0.1: every record produced is applied once (counts
and sums against what the test produced), malformed messages are reported,
counted and skipped, a pipeline killed with kill -9 resumes from its
checkpoint and journal with nothing lost or doubled, and one whose brokers
go away waits and resumes when they come back.

No test depends on how much work fits in an interval: waits poll /query
(with a hang guard) for the counts the test knows it produced.
"""
import json
import os
import random
import signal
import subprocess

import pytest
import requests

from conftest import assert_no_crash, conn_clause, mpi_env, run, sluice_bin, wait_until

TOOLS = os.environ.get("SLUICE_TOOLS") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "debug", "tests")
MOCK = os.path.join(TOOLS, "tools", "tool_kafka_mock")


class Kafka:
    """A mock cluster: bootstrap servers, produce, brokers down and up."""

    def __init__(self, topics):
        if not os.access(MOCK, os.X_OK):
            pytest.fail("%s not built (make build/debug/tests/tools/tool_kafka_mock)" % MOCK)
        self.p = subprocess.Popen([MOCK, "3"] + ["%s:%d" % t for t in topics],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, start_new_session=True, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("BOOTSTRAP "), "mock cluster did not start: %r %s" % (
            line, self.p.stderr.read() if self.p.poll() is not None else "")
        self.bootstrap = line.split()[1]

    def produce(self, topic, records, partition=None):
        """Send each record (a str, or an object sent as JSON) as a message."""
        body = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
        args = [MOCK, "produce", self.bootstrap, topic]
        if partition is not None:
            args.append(str(partition))
        p = subprocess.run(args, input=body, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "PRODUCED %d" % len(records) in p.stdout, p.stderr

    def command(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "OK"

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                self.p.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()


@pytest.fixture
def kafka(request):
    clusters = []

    def make(topics=(("ev", 3),)):
        k = Kafka(topics)
        clusters.append(k)
        return k
    yield make
    for k in clusters:
        k.stop()


class Pipeline:
    """sluice run with the HTTP API, in its own process group."""

    def __init__(self, tmp_path, sql, extra=(), name="run"):
        self.prog = tmp_path / ("%s.sql" % name)
        self.prog.write_text(sql)
        self.log = tmp_path / ("%s.log" % name)
        self.start(extra)

    def start(self, extra=()):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        if "--hosts" in [str(a) for a in extra]:
            env.update(mpi_env())
        before = self.text().count("listening on")
        self.proc = subprocess.Popen(
            [sluice_bin(), "run", str(self.prog), "--http", "127.0.0.1:0", "--no-progress"] +
            [str(a) for a in extra], stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"),
            env=env, start_new_session=True)

        def port():
            t = self.text()
            if t.count("listening on") > before:
                return int(t.rsplit("listening on 127.0.0.1:", 1)[1].split()[0])
            if self.proc.poll() is not None:
                pytest.fail("sluice exited (%d) before listening:\n%s" % (
                    self.proc.returncode, t[-3000:]))
            return None
        self.port = wait_until(port, "sluice printing its port")

    def text(self):
        return open(self.log, encoding="utf-8", errors="replace").read() \
            if os.path.exists(self.log) else ""

    def query(self, sql):
        r = requests.get("http://127.0.0.1:%d/query" % self.port,
                         params={"sql": sql, "format": "json"}, timeout=60)
        assert r.status_code == 200, r.text
        return [json.loads(l) for l in r.text.splitlines() if l.strip()]

    def count(self, view="total"):
        rows = self.query("SELECT * FROM %s" % view)
        return rows[0] if rows else None

    def wait_count(self, n, view="total"):
        def ok():
            if self.proc.poll() is not None:
                pytest.fail("sluice exited (%d):\n%s" % (self.proc.returncode, self.text()[-3000:]))
            c = self.count(view)
            return c if c and c["n"] == n else None
        return wait_until(ok, "%s reaching %d rows" % (view, n))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            assert self.proc.wait(timeout=120) == 0, self.text()[-3000:]
        assert_no_crash(subprocess.CompletedProcess([], 0, "", self.text()))

    def kill9(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        # a checkpoint process it forked dies with it, not at the same instant
        wait_until(lambda: not _running(self.prog), "the killed pipeline's processes ending")


def _running(path):
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and str(path).encode() in open("/proc/%s/cmdline" % pid,
                                                            "rb").read():
                return True
        except OSError:
            pass
    return False


@pytest.fixture
def pipelines():
    ps = []
    yield ps
    for p in ps:
        if p.proc.poll() is None:
            os.killpg(p.proc.pid, signal.SIGKILL)
            p.proc.wait()


def kafka_in(bs, topic="ev", fmt=None, **cfg):
    c = {"bootstrap.servers": bs, "topic": topic, "start_from": "earliest"}
    c.update(cfg)
    return conn_clause([{"transport": {"name": "kafka_input", "config": c},
                         "format": fmt or {"name": "json"}}])


def program(bs, **kw):
    return ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) %s;\n"
            "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t;\n"
            "CREATE MATERIALIZED VIEW per_id AS SELECT id, COUNT(*) AS n, SUM(v) AS s "
            "FROM t GROUP BY id;\n" % kafka_in(bs, **kw))


def records(lo, hi):
    return [{"id": i, "v": (i * 7919) % 1000} for i in range(lo, hi)]


def test_every_record_is_applied_once_and_bad_ones_are_reported(tmp_path, kafka, pipelines):
    k = kafka()
    good = records(0, 3000)
    bad = ["not json", '{"id": "x", "v": 1}', '{"id": 5, "zzz": 1}']
    k.produce("ev", good[:1500] + bad)
    p = Pipeline(tmp_path, program(k.bootstrap))
    pipelines.append(p)
    p.wait_count(1500)
    k.produce("ev", good[1500:])  # while it runs
    c = p.wait_count(3000)
    assert c["s"] == sum(r["v"] for r in good)
    per = p.query("SELECT COUNT(*) AS ids, MAX(n) AS most FROM per_id")[0]
    assert per == {"ids": 3000, "most": 1}
    stats = requests.get("http://127.0.0.1:%d/stats" % p.port, timeout=30).json()
    p.stop()
    text = p.text()
    assert "not json" in text and "offset" in text, text[-2000:]
    assert "3 bad input records skipped" in text
    assert json.dumps(stats).count("kafka_input") >= 1
    # no event_time_column: the message timestamps give the event-time lag
    assert "event_time_lag_ms" in json.dumps(stats), stats


def test_csv_messages_and_explicit_offsets(tmp_path, kafka, pipelines):
    k = kafka((("c", 2),))
    for part in (0, 1):
        k.produce("c", ["%d,%d" % (part * 100 + i, i) for i in range(10)], partition=part)
    # skip the first 4 messages of partition 0 and 7 of partition 1
    p = Pipeline(tmp_path, program(k.bootstrap, topic="c", fmt={"name": "csv"},
                                   start_from={"offsets": [4, 7]}))
    pipelines.append(p)
    c = p.wait_count(6 + 3)
    assert c["s"] == sum(range(4, 10)) + sum(range(7, 10))
    p.stop()


def test_debezium_change_events(tmp_path, kafka, pipelines):
    k = kafka((("cdc", 1),))

    def ev(op, before=None, after=None, wrap=False):
        e = {"op": op, "before": before, "after": after, "source": {"db": "x"}, "ts_ms": 1}
        return {"schema": {"type": "struct"}, "payload": e} if wrap else e
    k.produce("cdc", [
        ev("r", after={"id": 1, "v": 10}),
        ev("c", after={"id": 2, "v": 20}, wrap=True),
        ev("c", after={"id": 3, "v": 30}),
        ev("u", before={"id": 2, "v": 20}, after={"id": 2, "v": 25}),
        ev("d", before={"id": 3, "v": 30}),
        ev("t"),  # truncate: reported, skipped
        ev("u", after={"id": 9, "v": 1}),  # no before image: reported
    ])
    sql = ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) %s;\n"
           "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t;\n"
           "CREATE MATERIALIZED VIEW rows_ AS SELECT * FROM t;\n" % kafka_in(
               k.bootstrap, topic="cdc",
               fmt={"name": "json", "config": {"update_format": "debezium"}}))
    p = Pipeline(tmp_path, sql)
    pipelines.append(p)
    wait_until(lambda: "2 bad" in p.text() or p.count() and p.count()["s"] == 35,
               "the change events applied")
    wait_until(lambda: p.count()["s"] == 35, "the change events applied")
    assert sorted((r["id"], r["v"]) for r in p.query("SELECT * FROM rows_")) == [(1, 10), (2, 25)]
    p.stop()
    assert "2 bad input records skipped" in p.text(), p.text()[-2000:]


def test_killed_pipeline_resumes_with_nothing_lost_or_doubled(tmp_path, kafka, pipelines):
    k = kafka((("ev", 4),))
    st = tmp_path / "storage"
    extra = ["--storage", st, "--checkpoint-interval", "0.3", "--step-rows", "500"]
    p = Pipeline(tmp_path, program(k.bootstrap), extra)
    pipelines.append(p)
    rng = random.Random(15)
    produced = 0
    for round_ in range(5):
        n = rng.randint(1000, 4000)
        k.produce("ev", records(produced, produced + n))
        produced += n
        # kill once some (a random share) of it has been applied
        goal = produced - n + rng.randint(0, n)
        wait_until(lambda: p.count() and p.count()["n"] >= goal, "some input applied")
        p.kill9()
        p.start(extra)
    c = p.wait_count(produced)
    assert c["s"] == sum(r["v"] for r in records(0, produced))
    per = p.query("SELECT COUNT(*) AS ids, MAX(n) AS most, MIN(n) AS least FROM per_id")[0]
    assert per == {"ids": produced, "most": 1, "least": 1}
    p.stop()


def test_brokers_away_and_back(tmp_path, kafka, pipelines):
    k = kafka()
    k.produce("ev", records(0, 1000))
    p = Pipeline(tmp_path, program(k.bootstrap, **{"reconnect.backoff.max.ms": 200}))
    pipelines.append(p)
    p.wait_count(1000)
    k.command("down")
    wait_until(lambda: "waiting for the brokers" in p.text(), "the pipeline noticing")
    assert p.count()["n"] == 1000  # still serving
    k.command("up")
    k.produce("ev", records(1000, 2500))
    c = p.wait_count(2500)
    assert c["s"] == sum(r["v"] for r in records(0, 2500))
    p.stop()


@pytest.mark.parametrize("cfg,msg", [
    ({"topic": "ev", "group.id": "g"}, 'unsupported key "group.id"'),
    ({"topic": "ev", "poller_threads": 2}, 'key "poller_threads"'),
    ({"topic": "ev", "start_from": {"timestamp": 5}}, '"timestamp" is not supported'),
    ({}, 'needs one of "topic"'),
    ({"topic": "ev", "no.such.property": "1"}, 'librdkafka property "no.such.property"'),
    ({"topic": "ev", "backfill": 1}, 'needs an input that ends'),
])
def test_config_errors_name_the_key(tmp_path, cfg, msg):
    c = {"bootstrap.servers": "127.0.0.1:1"}
    c.update(cfg)
    extra = {"transaction": "backfill"} if c.pop("backfill", None) else {}
    sql = "CREATE TABLE t (id BIGINT) %s;\n" % conn_clause(
        [dict({"transport": {"name": "kafka_input", "config": c}, "format": {"name": "json"}},
              **extra)])
    f = tmp_path / "p.sql"
    f.write_text(sql)
    r = run(["check", f])
    assert r.returncode != 0 and msg in r.stderr, r.stderr


# ---------------------------------------------------------------- kafka_output

def consume(k, topic):
    """Every message of topic (read_committed): (step, seq, value) tuples."""
    p = subprocess.run([MOCK, "consume", k.bootstrap, topic], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = []
    for line in p.stdout.splitlines():
        _part, _off, step, seq, value = line.split(" ", 4)
        out.append((int(step), int(seq), value))
    return out


def out_program(bs):
    return program(bs) + (
        "CREATE VIEW big %s AS SELECT id, v FROM t WHERE v >= 500;\n" % conn_clause(
            [{"transport": {"name": "kafka_output", "config": {
                "bootstrap.servers": bs, "topic": "out"}},
              "format": {"name": "json"}}]))


def expected_out(n):
    return sorted(r["id"] for r in records(0, n) if r["v"] >= 500)


def ids_of(msgs):
    ids = []
    for _s, _q, v in msgs:
        o = json.loads(v)
        assert list(o) == ["insert"], v
        ids.append(o["insert"]["id"])
    return sorted(ids)


def test_output_sends_every_change_once(tmp_path, kafka, pipelines):
    k = kafka((("ev", 3), ("out", 2)))
    k.produce("ev", records(0, 2000))
    p = Pipeline(tmp_path, out_program(k.bootstrap))
    pipelines.append(p)
    p.wait_count(2000)
    k.produce("ev", records(2000, 3000))
    p.wait_count(3000)
    want = expected_out(3000)
    msgs = wait_until(lambda: (lambda m: m if len(m) >= len(want) else None)(consume(k, "out")),
                      "the output reaching the topic")
    assert ids_of(msgs) == want
    assert len({(s, q) for s, q, _ in msgs}) == len(msgs)
    stats = requests.get("http://127.0.0.1:%d/stats" % p.port, timeout=30).json()
    assert [o["transport"] for o in stats["outputs"]] == ["kafka_output"], stats["outputs"]
    p.stop()


def crash_then_restart(tmp_path, k, point, ats, n=6000):
    """Run the output program over n records with storage, crashing at
    SLUICE_CRASH_AT=point:at for each at in turn, then restart it for good:
    the stderr of the crashed runs and the running Pipeline."""
    k.produce("ev", records(0, n))
    prog = tmp_path / "p.sql"
    prog.write_text(out_program(k.bootstrap))
    st = tmp_path / "storage"
    args = ["run", prog, "--no-progress", "--storage", st, "--step-rows", "300",
            "--http", "127.0.0.1:0"]
    env = dict(os.environ, SLUICE_CHECKPOINT_EVERY_STEPS="3")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    log = ""
    for at in ats:
        r = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True,
                           text=True, timeout=300,
                           env=dict(env, SLUICE_CRASH_AT="%s:%d" % (point, at)))
        log += r.stderr
        assert r.returncode == 137, r.stderr[-3000:]
    return log, Pipeline(tmp_path, out_program(k.bootstrap), ["--storage", st, "--step-rows", "300"])


def test_output_exactly_once_across_crashes_after_a_commit(tmp_path, kafka):
    """A crash right after a step's transaction committed: the restart
    replays that step and must not send it again."""
    k = kafka((("ev", 4), ("out", 3)))
    n = 6000
    log, p = crash_then_restart(tmp_path, k, "after-step", (4, 8, 13), n)
    assert "already holds step" in log, log[-3000:]
    try:
        p.wait_count(n)
        want = expected_out(n)
        msgs = wait_until(lambda: (lambda m: m if len(m) >= len(want) else None)(
            consume(k, "out")), "the output reaching the topic")
        assert ids_of(msgs) == want  # nothing lost, nothing twice
        p.stop()
    finally:
        if p.proc.poll() is None:
            os.killpg(p.proc.pid, signal.SIGKILL)
            p.proc.wait()


def test_output_crash_inside_a_transaction_sends_the_step_again(tmp_path, kafka):
    """A crash with half of a step's messages at the brokers, in an open
    transaction. The mock cluster shows them to read_committed readers (it
    writes no abort markers), so the restart sees part of that step at the
    end of the topic: it must count the step as not sent (sluice_count)
    and send it whole, not skip it."""
    k = kafka((("ev", 4), ("out", 3)))
    n = 6000
    log, p = crash_then_restart(tmp_path, k, "kafka-mid-step", (5, 11), n)
    assert "the step is sent again" in log, log[-3000:]
    try:
        p.wait_count(n)
        want = expected_out(n)
        msgs = wait_until(lambda: (lambda m: m if len({(s, q) for s, q, _ in m}) >= len(want)
                                   else None)(consume(k, "out")), "the output reaching the topic")
        first = {}
        for s, q, v in msgs:
            assert first.setdefault((s, q), v) == v, "two messages for step %d seq %d" % (s, q)
        assert ids_of([(s, q, v) for (s, q), v in first.items()]) == want
        p.stop()
    finally:
        if p.proc.poll() is None:
            os.killpg(p.proc.pid, signal.SIGKILL)
            p.proc.wait()


def test_output_killed_at_random_moments(tmp_path, kafka, pipelines):
    """kill -9 anywhere, also inside a transaction. The mock cluster writes no
    abort markers, so a read_committed reader of it also sees the messages of
    the transaction the kill cut off; each of those is a copy (same step,
    seq and value) of one that was committed again after the restart. With
    them set aside, every change is there exactly once."""
    k = kafka((("ev", 4), ("out", 3)))
    st = tmp_path / "storage"
    extra = ["--storage", st, "--checkpoint-interval", "0.3", "--step-rows", "400"]
    p = Pipeline(tmp_path, out_program(k.bootstrap), extra)
    pipelines.append(p)
    rng = random.Random(150)
    produced = 0
    for _ in range(4):
        n = rng.randint(1000, 3000)
        k.produce("ev", records(produced, produced + n))
        produced += n
        goal = produced - n + rng.randint(0, n)
        wait_until(lambda: p.count() and p.count()["n"] >= goal, "some input applied")
        p.kill9()
        p.start(extra)
    p.wait_count(produced)
    want = expected_out(produced)
    msgs = wait_until(lambda: (lambda m: m if len({(s, q) for s, q, _ in m}) >= len(want)
                               else None)(consume(k, "out")), "the output reaching the topic")
    first = {}
    for s, q, v in msgs:
        assert first.setdefault((s, q), v) == v, "two different messages for step %d seq %d" % (s, q)
    assert ids_of([(s, q, v) for (s, q), v in first.items()]) == want
    p.stop()


def test_in_and_out_on_two_hosts(tmp_path, kafka, pipelines):
    """--hosts 2: both connectors run on host 0, the views' work is shared."""
    k = kafka((("ev", 3), ("out", 2)))
    k.produce("ev", records(0, 2000))
    p = Pipeline(tmp_path, out_program(k.bootstrap), ["--hosts", "2", "--workers", "2"])
    pipelines.append(p)
    c = p.wait_count(2000)
    assert c["s"] == sum(r["v"] for r in records(0, 2000))
    want = expected_out(2000)
    msgs = wait_until(lambda: (lambda m: m if len(m) >= len(want) else None)(consume(k, "out")),
                      "the output reaching the topic")
    assert ids_of(msgs) == want
    p.stop()


def input_metrics(p):
    st = requests.get("http://127.0.0.1:%d/stats" % p.port, timeout=30).json()
    return [i for i in st["inputs"] if i["transport"] == "kafka_input"][0]["metrics"]


def test_position_high_watermark_and_lag(tmp_path, kafka, pipelines):
    """Position = the partitions' next offsets (sum), high watermark = the
    sum of theirs: lag 0 once everything produced is read, the messages
    produced while paused as lag; records read = applied + rejected."""
    k = kafka((("ev", 2),))
    bad = ["not json", '{"id": "x", "v": 1}']
    poison = {"id": 9999, "v": 1000000}  # its view overflows: rejected at run time
    k.produce("ev", records(0, 300) + bad + [poison], partition=0)
    k.produce("ev", records(300, 500), partition=1)
    sql = program(k.bootstrap) + \
        "CREATE MATERIALIZED VIEW big AS SELECT id, v * 10000000000000 AS m FROM t;\n"
    p = Pipeline(tmp_path, sql)
    pipelines.append(p)
    p.wait_count(500)

    def lag_is(n, pos):
        m = input_metrics(p)
        return m if m.get("lag") == n and m["position"] == pos else None
    m = wait_until(lambda: lag_is(0, 503), "lag 0 at position 503")
    assert m["position_unit"] == "messages" and m["high_watermark"] == 503
    parts = sorted((x["partition"], x["offset"], x["high_watermark"]) for x in m["partitions"])
    assert parts == [(0, 303, 303), (1, 200, 200)]
    m = wait_until(lambda: (lambda m: m if m["buffered_records"] == 0 else None)(
        input_metrics(p)), "nothing buffered")
    assert (m["total_records"], m["num_parse_errors"]) == (501, 2)
    assert (m["applied_records"], m["rejected_records"]) == (500, 1)

    r = requests.post("http://127.0.0.1:%d/pause" % p.port, timeout=30)
    assert r.status_code == 200, r.text
    k.produce("ev", records(500, 600), partition=1)
    m = wait_until(lambda: lag_is(100, 503), "the messages produced while paused as lag")
    assert m["high_watermark"] == 603
    prom = requests.get("http://127.0.0.1:%d/metrics" % p.port, timeout=30).text
    assert 'unit="messages"} 100' in prom and "sluice_connector_partition_high_watermark{" in prom

    r = requests.post("http://127.0.0.1:%d/start" % p.port, timeout=30)
    assert r.status_code == 200, r.text
    c = p.wait_count(600)
    assert c["s"] == sum(r["v"] for r in records(0, 600))
    wait_until(lambda: lag_is(0, 603), "lag 0 again")
    p.stop()

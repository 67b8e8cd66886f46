"""Output connectors on every host (--hosts H): the k-th output connector
of the program is written by host k % H, which gathers its view's changes
from every host each step (docs/scale-out.md).

- Three file outputs over two hosts (two on host 0, one on host 1) and over
  three (one each): the files are byte-identical to the same program's on
  one host, and what they say, integrated, equals the views computed in
  Python from the input; the final checkpoint manifest records the same
  offsets and counters as on one host, and those match the files.
- kill -9 (SLUICE_CRASH_AT, counted points, checkpoints every K steps) of
  host 1 right after a step, of the coordinator right after a step, and of
  host 1 right after its share of a checkpoint, one after another in one
  storage: the restarted run's files are byte-identical to an uninterrupted
  run's (every change exactly once), and so is the manifest.
- A kafka_output and a postgres_output owned by host 1 (fixtures of
  test_kafka.py and pgserver.py): every change reaches the topic once and
  the table equals PostgreSQL's view of the input, also across kill -9 of
  host 1 right after a step committed (the restart must not send or apply
  it again).
- Delivery on host 1 (io/deliver.c on every host): its postgres_output's
  database goes away and comes back (host 1 queues, drains in order; the
  coordinator's /stats adds up), its queue past a small bound pauses the
  coordinator's inputs (ingress 503) until it drains, rows a CHECK refuses
  become dead letters that the coordinator's GET /dead_letter lists, and
  host 1 dies with steps queued in the storage directory: the restart
  delivers each once, and the delivery counters, restored from a
  checkpoint, count each change once.
- A postgres_cdc_input placed on host 1 (after a file input): the view
  equals PostgreSQL's GROUP BY over the source; host 1 confirms the
  replication slot once the coordinator's checkpoint lets it.
No test depends on timing: crashes happen at counted events and waits poll
observable state with a hang guard.
"""
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess

import pytest

from conftest import conn_clause, mpi_env, run_ok, sluice_bin, wait_until

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")


def changes(rng, n, lo):
    """n JSON change lines over ids lo..lo+300: inserts, and deletes of live
    rows; returns (lines, live rows by id)."""
    live, out = {}, []
    for _ in range(n):
        if live and rng.random() < 0.25:
            out.append({"delete": live.pop(rng.choice(sorted(live)))})
            continue
        k = lo + rng.randrange(300)
        if k in live:
            out.append({"delete": live.pop(k)})
        row = {"id": k, "g": rng.randrange(20), "v": rng.randrange(1000)}
        live[k] = row
        out.append({"insert": row})
    return out, live


def file_in(path):
    return {"transport": {"name": "file_input", "config": {"path": str(path)}},
            "format": {"name": "json", "config": {"update_format": "insert_delete"}}}


def file_out(path, fmt):
    return conn_clause([{"transport": {"name": "file_output", "config": {"path": str(path)}},
                         "format": {"name": fmt}}])


def make_inputs(tmp_path):
    """Two input files (the second read by host 1), disjoint ids; returns
    their paths and the live rows at the end."""
    rng = random.Random(5)
    paths, live = [], {}
    for i, lo in enumerate((0, 1000)):
        out, l = changes(rng, 4000, lo)
        p = tmp_path / ("in%d.json" % i)
        p.write_text("".join(json.dumps(o) + "\n" for o in out))
        paths.append(p)
        live.update(l)
    return paths, live


def program(tmp_path, tag, paths):
    outs = {v: tmp_path / ("%s_%s.out" % (tag, v)) for v in "abc"}
    sql = ("CREATE TABLE t (id BIGINT NOT NULL, g INT NOT NULL, v INT NOT NULL) %s;\n"
           "CREATE VIEW a %s AS SELECT g, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY g;\n"
           "CREATE VIEW b %s AS SELECT id, v FROM t WHERE v >= 900;\n"
           "CREATE VIEW c %s AS SELECT g, MAX(v) AS m FROM t GROUP BY g;\n" % (
               conn_clause([file_in(p) for p in paths]), file_out(outs["a"], "csv"),
               file_out(outs["b"], "json"), file_out(outs["c"], "csv")))
    prog = tmp_path / ("%s.sql" % tag)
    prog.write_text(sql)
    return prog, outs


def expected(live):
    rows = list(live.values())
    a, c = {}, {}
    for r in rows:
        n, s = a.get(r["g"], (0, 0))
        a[r["g"]] = (n + 1, s + r["v"])
        c[r["g"]] = max(c.get(r["g"], -1), r["v"])
    return {"a": sorted((g, n, s) for g, (n, s) in a.items()),
            "b": sorted((r["id"], r["v"]) for r in rows if r["v"] >= 900),
            "c": sorted(c.items())}


def integrate(path, fmt):
    """The view's contents from its output file (changes integrated), and
    the records (units of weight) the file holds."""
    acc, records = {}, 0
    for line in open(path).read().splitlines():
        if fmt == "csv":
            f = [int(x) for x in line.split(",")]
            row, w = tuple(f[:-1]), f[-1]
        else:
            o = json.loads(line)
            (kind, r), = o.items()
            row, w = (r["id"], r["v"]), 1 if kind == "insert" else -1
        acc[row] = acc.get(row, 0) + w
        records += abs(w)
    assert all(w in (0, 1) for w in acc.values()), path
    return sorted(r for r, w in acc.items() if w), records


def manifest_outputs(st):
    last = sorted(glob.glob(str(st / "manifest-*.json")),
                  key=lambda f: int(re.search(r"manifest-(\d+)", f).group(1)))[-1]
    return json.loads(open(last).read().split("\n")[0])["outputs"]


def run_prog(prog, hosts, st, extra=(), env=None, expect_ok=True):
    args = [sluice_bin(), "run", str(prog), "--workers", "3", "--no-progress", "--until-done",
            "--step-rows", "200", "--storage", str(st), "--checkpoint-interval", "0"]
    if hosts > 1:
        args += ["--hosts", str(hosts)]
    e = dict(os.environ)
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    e.update(mpi_env())
    e.update(env or {})
    p = subprocess.run(args + list(extra), capture_output=True, text=True, timeout=300, env=e)
    for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
        assert m not in p.stderr, p.stderr[-4000:]
    if expect_ok:
        assert p.returncode == 0, p.stderr[-4000:]
    else:
        assert p.returncode != 0, p.stderr[-4000:]
    return p


def test_file_outputs_on_two_and_three_hosts(tmp_path):
    paths, live = make_inputs(tmp_path)
    want = expected(live)
    fmts = {"a": "csv", "b": "json", "c": "csv"}
    base = None
    for hosts in (1, 2, 3):
        prog, outs = program(tmp_path, "h%d" % hosts, paths)
        st = tmp_path / ("st%d" % hosts)
        run_prog(prog, hosts, st)
        files = {v: outs[v].read_bytes() for v in "abc"}
        man = manifest_outputs(st)
        for j, v in enumerate("abc"):
            rows, records = integrate(outs[v], fmts[v])
            assert rows == want[v], (hosts, v)
            size = len(files[v])
            assert (man[j]["offset"], man[j]["records"], man[j]["bytes"]) == (
                size, records, size), (hosts, v, man[j])
        if base is None:
            base = (files, man)
        else:
            assert files == base[0], "%d hosts: output files differ from one host's" % hosts
            assert man == base[1], "%d hosts: manifest outputs differ" % hosts


def test_kill9_of_each_host_outputs_exactly_once(tmp_path):
    """Host 1 dies right after step 7 (it wrote its output of the step and
    did not report it), then the coordinator right after step 16, then host
    1 right after its share of the second checkpoint of the third run (the
    manifest never written): each restart resumes from the last checkpoint
    and replays the journal; at the end the files equal an uninterrupted
    run's."""
    paths, live = make_inputs(tmp_path)
    ref, ref_outs = program(tmp_path, "ref", paths)
    run_prog(ref, 1, tmp_path / "st_ref")
    prog, outs = program(tmp_path, "kill", paths)
    st = tmp_path / "st"
    log = ""
    for at in ("after-step:7@1", "after-step:16@0", "after-checkpoint:2@1"):
        p = run_prog(prog, 2, st, env={"SLUICE_CRASH_AT": at,
                                       "SLUICE_CHECKPOINT_EVERY_STEPS": "5"}, expect_ok=False)
        log += p.stderr
        assert "ended with status 137" in p.stderr, p.stderr[-3000:]
    p = run_prog(prog, 2, st)
    assert "resuming from the checkpoint" in p.stderr, p.stderr[-3000:]
    assert "journaled step" in log + p.stderr
    for v in "abc":
        assert outs[v].read_bytes() == ref_outs[v].read_bytes(), v
    want = expected(live)
    assert integrate(outs["b"], "json")[0] == want["b"]
    # the counters a restart restores are the same as one host's
    # (tested without crashes above; here offsets must match the files)
    for j, v in enumerate("abc"):
        assert manifest_outputs(st)[j]["offset"] == len(outs[v].read_bytes())


# ---------------------------------------------------------------- kafka, postgres

def test_kafka_output_on_host_1_exactly_once_across_its_kill(tmp_path):
    import test_kafka as tk
    k = tk.Kafka((("ev", 3), ("out", 2)))
    try:
        n = 4000
        k.produce("ev", tk.records(0, n))
        sql = tk.program(k.bootstrap) + (
            "CREATE VIEW big_file %s AS SELECT id, v FROM t WHERE v >= 500;\n"
            "CREATE VIEW big %s AS SELECT id, v FROM t WHERE v >= 500;\n" % (
                file_out(tmp_path / "big.csv", "csv"),
                conn_clause([{"transport": {"name": "kafka_output", "config": {
                    "bootstrap.servers": k.bootstrap, "topic": "out"}},
                    "format": {"name": "json"}}])))
        prog = tmp_path / "p.sql"
        prog.write_text(sql)
        st = tmp_path / "st"
        args = [sluice_bin(), "run", str(prog), "--no-progress", "--storage", str(st),
                "--step-rows", "300", "--http", "127.0.0.1:0", "--hosts", "2", "--workers",
                "2", "--checkpoint-interval", "0"]
        env = dict(os.environ, SLUICE_CHECKPOINT_EVERY_STEPS="3", **mpi_env())
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        log = ""
        for at in (4,):  # host 1 dies right after its commit of step `at`
            r = subprocess.run(args, capture_output=True, text=True, timeout=300,
                               env=dict(env, SLUICE_CRASH_AT="after-step:%d@1" % at))
            log += r.stderr
            assert r.returncode != 0 and "status 137" in r.stderr, r.stderr[-3000:]
        p = tk.Pipeline(tmp_path, sql, ["--storage", st, "--step-rows", "300", "--hosts", "2",
                                        "--workers", "2", "--checkpoint-interval", "0"])
        try:
            p.wait_count(n)
            # host 1's producer found its step 4 committed: not sent again
            assert "already holds step 4" in p.text(), (log + p.text())[-3000:]
            want = tk.expected_out(n)
            msgs = wait_until(lambda: (lambda m: m if len(m) >= len(want) else None)(
                tk.consume(k, "out")), "the output reaching the topic")
            assert tk.ids_of(msgs) == want  # nothing lost, nothing twice
            assert len({(s, q) for s, q, _ in msgs}) == len(msgs)
            import requests
            stats = requests.get("http://127.0.0.1:%d/stats" % p.port, timeout=30).json()
            outs = {o["transport"]: o for o in stats["outputs"]}
            assert (outs["file_output"]["host"], outs["kafka_output"]["host"]) == (0, 1)
            # counted on host 1, shown by the coordinator: the checkpoint's
            # count, the replayed steps (quiet or already in the topic) and
            # this run's, so every message in the topic once
            sent = outs["kafka_output"]["metrics"]["transmitted_records"]
            assert sent == len(want), (sent, len(want))
            p.stop()
        finally:
            if p.proc.poll() is None:
                os.killpg(p.proc.pid, signal.SIGKILL)
                p.proc.wait()
    finally:
        k.stop()


def test_postgres_output_on_host_1_exactly_once_across_its_kill(pg, tmp_path):
    """The same input into two tables: one written on one host without a
    break, one written by host 1 of two and killed right after step 12
    committed (checkpoints every 5 steps): the second ends equal to the
    view computed in Python, and PostgreSQL's audit trigger saw exactly the
    row operations of the first (a step applied twice would add some)."""
    import test_postgres as tp
    rng = random.Random(23)
    ch, live = tp.random_changes(rng, 6000, ids=500)
    data = tmp_path / "t.json"
    data.write_text("".join(json.dumps(o) + "\n" for o in ch))
    for t in ("oh_ref", "oh_kill"):
        pg.psql(tp.AUDIT.format(t=t))

    def prog(name, table):
        p = tmp_path / ("%s.sql" % name)
        p.write_text(
            "CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL) %s;\n"
            "CREATE VIEW agg_file %s AS SELECT grp, COUNT(*) AS n FROM t GROUP BY grp;\n"
            "CREATE VIEW agg %s AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;\n"
            % (tp.json_in(data), file_out(tmp_path / ("%s.csv" % name), "csv"),
               tp.pg_out(pg, table, ["grp"])))
        return p
    base = ["--until-done", "--no-progress", "--step-rows", "200"]
    run_ok(["run", prog("ref", "oh_ref")] + base)
    assert tp.pg_groups(pg, "oh_ref") == tp.groups_of(live)
    kp = prog("kill", "oh_kill")
    args = ["run", kp, "--hosts", "2", "--workers", "2", "--storage", tmp_path / "st",
            "--checkpoint-interval", "0"] + base
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:12@1", SLUICE_CHECKPOINT_EVERY_STEPS="5",
               **mpi_env())
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    r = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode != 0 and "status 137" in r.stderr, r.stderr[-3000:]
    assert tp.progress_step(pg, "oh_kill") == 12
    p = run_ok(args, timeout=300)
    assert "resuming from the checkpoint at step 10" in p.stderr, p.stderr[-3000:]
    assert tp.pg_groups(pg, "oh_kill") == tp.groups_of(live)
    assert tp.audit_counts(pg, "oh_kill") == tp.audit_counts(pg, "oh_ref")
    assert tp.progress_step(pg, "oh_kill") == tp.progress_step(pg, "oh_ref")
    assert (tmp_path / "kill.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()


def test_kafka_input_on_host_1_exactly_once_across_its_kill(tmp_path):
    """Inputs are placed as outputs are: a file input first (host 0), then
    a kafka_input, read on host 1 (/stats says so). Host 1 dies right after
    step 5 (checkpoints every 3 steps): the restart seeks it back and
    replays the journaled step, reading each partition exactly up to where
    it ended; every record counts once (count and sum against Python)."""
    import requests
    import test_kafka as tk
    k = tk.Kafka((("ev", 3),))
    try:
        n = 3000
        k.produce("ev", tk.records(0, n))
        side = tmp_path / "side.csv"
        side.write_text("".join("%d\n" % i for i in range(50)))
        sql = ("CREATE TABLE side (x INT) %s;\n" % conn_clause(
            [{"transport": {"name": "file_input", "config": {"path": str(side)}},
              "format": {"name": "csv"}}]) + tk.program(k.bootstrap))
        prog = tmp_path / "p.sql"
        prog.write_text(sql)
        st = tmp_path / "st"
        extra = ["--storage", st, "--step-rows", "200", "--hosts", "2", "--workers", "2",
                 "--checkpoint-interval", "0"]
        env = dict(os.environ, SLUICE_CHECKPOINT_EVERY_STEPS="3",
                   SLUICE_CRASH_AT="after-step:5@1", **mpi_env())
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        r = subprocess.run([sluice_bin(), "run", str(prog), "--no-progress", "--http",
                            "127.0.0.1:0"] + [str(a) for a in extra], capture_output=True,
                           text=True, timeout=300, env=env)
        assert r.returncode != 0 and "status 137" in r.stderr, r.stderr[-3000:]
        p = tk.Pipeline(tmp_path, sql, extra)
        try:
            c = p.wait_count(n)
            assert c["s"] == sum(x["v"] for x in tk.records(0, n))
            assert "journaled step" in p.text(), p.text()[-3000:]
            stats = requests.get("http://127.0.0.1:%d/stats" % p.port, timeout=30).json()
            hosts = {i["transport"]: i["host"] for i in stats["inputs"]
                     if i["transport"] != "http"}
            assert hosts == {"file_input": 0, "kafka_input": 1}, stats["inputs"]
            p.stop()
        finally:
            if p.proc.poll() is None:
                os.killpg(p.proc.pid, signal.SIGKILL)
                p.proc.wait()
    finally:
        k.stop()


def test_a_stop_ends_host_1_s_wait_for_its_database(pg, http_pipeline, tmp_path):
    """A postgres_output on host 1 waits for its unreachable server; SIGTERM
    to the launcher reaches host 1 too and ends the wait, as on one host:
    the job exits saying the step (queued in memory on host 1) is lost, and
    the table stays at the step before."""
    import test_postgres as tp
    from httpkit import ingress, lines
    sql = ("CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL)\n"
           "  WITH ('connectors' = '[{\"transport\": {\"name\": \"http_input\"}}]');\n"
           "CREATE VIEW agg_file %s AS SELECT grp, COUNT(*) AS n FROM t GROUP BY grp;\n"
           "CREATE VIEW agg %s AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;\n"
           % (file_out(tmp_path / "agg.csv", "csv"), tp.pg_out(pg, "oh_stop", ["grp"])))
    p = http_pipeline(sql, "--hosts", "2", "--workers", "2")
    ingress(p, "t", lines({"id": 1, "grp": 1, "v": 1}))
    wait_until(lambda: tp.pg_groups(pg, "oh_stop") == {1: (1, 1)}, "the first row")
    pg.stop()
    try:
        ingress(p, "t", lines({"id": 2, "grp": 1, "v": 1}))
        wait_until(lambda: "retrying" in p.stderr(), "host 1 waiting for the server")
        p.proc.send_signal(signal.SIGTERM)
        r = p.wait_exit(timeout=120)
        assert r.returncode != 0
        assert re.search(r"host 1 \(.*stopped while waiting", r.stderr), r.stderr[-3000:]
    finally:
        pg.start()
    assert tp.pg_groups(pg, "oh_stop") == {1: (1, 1)}


def test_counters_after_a_restart_include_quietly_replayed_steps(tmp_path):
    """The coordinator dies right after step 8 (checkpoint at 5): the
    restart replays steps 6 and 7 quietly on both hosts (host 1 writes
    view b); the final manifest's records and bytes of every output still
    equal what its file holds (Python's count)."""
    paths, _ = make_inputs(tmp_path)
    prog, outs = program(tmp_path, "quiet", paths)
    st = tmp_path / "st"
    p = run_prog(prog, 2, st, env={"SLUICE_CRASH_AT": "after-step:8@0",
                                   "SLUICE_CHECKPOINT_EVERY_STEPS": "5"}, expect_ok=False)
    assert "ended with status 137" in p.stderr, p.stderr[-3000:]
    p = run_prog(prog, 2, st)
    assert "3 journaled steps to replay" in p.stderr, p.stderr[-3000:]
    man = manifest_outputs(st)
    wrong = []
    for j, (v, fmt) in enumerate((("a", "csv"), ("b", "json"), ("c", "csv"))):
        size = len(outs[v].read_bytes())
        records = integrate(outs[v], fmt)[1]
        if (man[j]["offset"], man[j]["records"], man[j]["bytes"]) != (size, records, size):
            wrong.append((v, man[j], size, records))
    assert not wrong, wrong


def test_postgres_output_counters_after_host_1_s_kill(pg, tmp_path):
    """Host 1 (the postgres_output's) dies right after step 12 committed,
    checkpoint at 10: the restart replays step 11 quietly and finds step
    12 committed. The final manifest's records of the output equal the row
    operations PostgreSQL's audit trigger saw, and its records and bytes
    equal those of an uninterrupted run."""
    import test_postgres as tp
    rng = random.Random(29)
    ch, _ = tp.random_changes(rng, 4000, ids=300)
    data = tmp_path / "t.json"
    data.write_text("".join(json.dumps(o) + "\n" for o in ch))
    for t in ("oc_ref", "oc_kill"):
        pg.psql(tp.AUDIT.format(t=t))

    def args(name, table):
        p = tmp_path / ("%s.sql" % name)
        p.write_text(
            "CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL) %s;\n"
            "CREATE VIEW agg_file %s AS SELECT grp, COUNT(*) AS n FROM t GROUP BY grp;\n"
            "CREATE VIEW agg %s AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;\n"
            % (tp.json_in(data), file_out(tmp_path / ("%s.csv" % name), "csv"),
               tp.pg_out(pg, table, ["grp"])))
        return ["run", p, "--hosts", "2", "--workers", "2", "--storage", tmp_path / name,
                "--checkpoint-interval", "0", "--until-done", "--no-progress", "--step-rows",
                "200"]
    run_ok(args("ref", "oc_ref"), timeout=300)
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:12@1", SLUICE_CHECKPOINT_EVERY_STEPS="5",
               **mpi_env())
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    r = subprocess.run([sluice_bin()] + [str(a) for a in args("kill", "oc_kill")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0 and "status 137" in r.stderr, r.stderr[-3000:]
    p = run_ok(args("kill", "oc_kill"), timeout=300)
    assert "was committed to PostgreSQL before the restart" in p.stderr, p.stderr[-3000:]
    ref, got = manifest_outputs(tmp_path / "ref"), manifest_outputs(tmp_path / "kill")
    assert got[1]["records"] == sum(tp.audit_counts(pg, "oc_kill").values()), got
    assert [(o["records"], o["bytes"]) for o in got] == [(o["records"], o["bytes"]) for o in ref]


# ---------------------------------------------------------------- delivery on host 1

DL_FAST = {"retry": {"attempts": 2, "backoff_ms": 10, "max_backoff_ms": 20}}


def dl_program(pg, tmp_path, table, tag, delivery=None):
    """An HTTP table, a file output (host 0) and a postgres_output (host 1)
    of the same view, delivered with quick retries."""
    pgc = {"transport": {"name": "postgres_output",
                         "config": {"uri": pg.uri, "table": table, "key_columns": ["id"]}},
           "delivery": dict(DL_FAST, **(delivery or {}))}
    return ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT NOT NULL)\n"
            "  WITH ('connectors' = '[{\"transport\": {\"name\": \"http_input\"}}]');\n"
            "CREATE VIEW v_file %s AS SELECT id, v FROM t;\n"
            "CREATE VIEW v %s AS SELECT id, v FROM t;\n"
            % (file_out(tmp_path / ("%s.json" % tag), "json"), conn_clause([pgc])))


def dl_stats(p):
    import requests
    r = requests.get(p.url("/stats"), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def dl_metrics(p):
    outs = [o for o in dl_stats(p)["outputs"] if o["transport"] == "postgres_output"]
    assert len(outs) == 1 and outs[0]["host"] == 1, outs
    return outs[0]["metrics"]


def dl_adds_up(m):
    assert m["changes"] == m["acknowledged_records"] + m["dead_lettered_records"] + \
        m["pending_records"], m
    return m


def dl_table(pg, name):
    if pg.query("SELECT to_regclass('%s') IS NULL" % name) == [["t"]]:
        return None
    return {int(i): int(v) for i, v in pg.query("SELECT id, v FROM %s" % name)}


def dl_steps(p):
    return dl_stats(p)["global_metrics"]["total_completed_steps"]


def test_host_1_queues_while_its_database_is_away_and_drains_in_order(pg, http_pipeline,
                                                                        tmp_path):
    """The postgres_output of host 1 keeps failing: host 1 queues its steps
    (the pipeline goes on stepping), the coordinator's /stats shows the
    queue growing with changes = acknowledged + dead-lettered + pending,
    and once the database is back the queue drains in order (the same ids
    change in every step: a step applied out of order would leave an older
    value), nothing lost."""
    from httpkit import ingress, lines
    p = http_pipeline(dl_program(pg, tmp_path, "oh_away", "away"), "--hosts", "2",
                      "--workers", "2")
    want = {i: i for i in range(50)}
    ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(50)]))
    wait_until(lambda: dl_table(pg, "oh_away") == want, "the first rows in PostgreSQL")
    pg.stop()
    try:
        for k in range(1, 6):
            s0 = dl_steps(p)
            rows = [{"delete": {"id": i, "v": want[i]}} for i in range(0, 50, 2)]
            rows += [{"insert": {"id": i, "v": i * 100 + k}} for i in range(0, 50, 2)]
            for i in range(0, 50, 2):
                want[i] = i * 100 + k
            ingress(p, "t", lines(*rows))
            wait_until(lambda: dl_steps(p) > s0, "step %d running with the database away" % k)
        m = wait_until(lambda: (lambda m: m if m["queued_steps"] >= 5 else None)(dl_metrics(p)),
                       "five steps queued on host 1")
        dl_adds_up(m)
        assert m["pending_records"] == 5 * 50 and m["failing"] and m["error"], m
        assert m["retried_records"] > 0
        assert "retrying in the background" in p.stderr()
    finally:
        pg.start()
    m = wait_until(lambda: (lambda m: m if m["pending_records"] == 0 else None)(dl_metrics(p)),
                   "host 1's queue draining")
    assert dl_table(pg, "oh_away") == want
    dl_adds_up(m)
    assert m["dead_lettered_records"] == 0 and not m["failing"]
    assert m["acknowledged_records"] == m["changes"] == 50 + 5 * 50
    lag = m["end_to_end_lag_ms"]
    assert lag["count"] == m["acknowledged_records"] and lag["p99"] >= lag["p50"] > 0
    import requests
    metrics = requests.get(p.url("/metrics"), timeout=60).text
    assert re.search(r'sluice_output_acknowledged_records_total\{view="v"[^}]*\} 300', metrics), \
        metrics
    ingress(p, "t", lines({"id": 1000, "v": 1}))
    want[1000] = 1
    wait_until(lambda: dl_table(pg, "oh_away") == want, "a step after the drain")
    p.stop()


def test_rows_refused_on_host_1_are_dead_letters_on_the_coordinator(pg, http_pipeline,
                                                                     tmp_path):
    """A CHECK constraint refuses some rows of host 1's postgres_output: they
    go to host 1's dead letters (kept in memory: no storage), which GET
    /dead_letter on the coordinator lists; everything else arrives and the
    counts add up."""
    import requests
    from httpkit import ingress, lines
    pg.psql("CREATE TABLE oh_check (id bigint PRIMARY KEY, v bigint CHECK (v >= 0))")
    p = http_pipeline(dl_program(pg, tmp_path, "oh_check", "check"), "--hosts", "2",
                      "--workers", "2")
    rows = [{"id": i, "v": (i * 37) % 23 - 5} for i in range(200)]
    good = {r["id"]: r["v"] for r in rows if r["v"] >= 0}
    bad = {r["id"]: r["v"] for r in rows if r["v"] < 0}
    assert bad and good
    for k in range(0, 200, 40):
        ingress(p, "t", lines(*rows[k:k + 40]))
    m = wait_until(lambda: (lambda m: m if m["changes"] == 200 and m["pending_records"] == 0
                            else None)(dl_metrics(p)), "every change delivered")
    dl_adds_up(m)
    assert m["dead_lettered_records"] == len(bad)
    assert m["acknowledged_records"] == 200 - len(bad)
    assert dl_table(pg, "oh_check") == good
    r = requests.get(p.url("/dead_letter"), params={"output": "v"}, timeout=60)
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["count"] == len(bad)
    assert {e["record"]["insert"]["id"]: e["record"]["insert"]["v"] for e in d["records"]} == bad
    for e in d["records"]:
        assert "oh_check_v_check" in e["error"] and e["step"] > 0
    assert requests.get(p.url("/dead_letter"), params={"output": "v_file"},
                        timeout=60).json()["count"] == 0
    assert "went to the dead letters" in p.stderr()
    p.stop()


DL_AUDIT = """
CREATE TABLE {t} (id bigint PRIMARY KEY, v bigint CHECK (v >= 0));
CREATE TABLE {t}_audit (op text);
CREATE OR REPLACE FUNCTION {t}_audit_fn() RETURNS trigger AS $$
BEGIN INSERT INTO {t}_audit VALUES (TG_OP); RETURN NULL; END $$ LANGUAGE plpgsql;
CREATE TRIGGER {t}_audit_tr AFTER INSERT OR UPDATE OR DELETE ON {t}
  FOR EACH ROW EXECUTE FUNCTION {t}_audit_fn();
"""


def test_kill9_of_host_1_with_its_queue_full_delivers_each_step_once(pg, http_pipeline,
                                                                      tmp_path, monkeypatch):
    """Host 1 queues steps in the storage directory while its database is
    away and dies (SLUICE_CRASH_AT, right after queuing step 7); the restart
    (database back) loads host 1's queue and delivers every step once:
    inserts of new ids only, so a step applied twice would show as UPDATEs
    in PostgreSQL's audit trigger and a lost one as missing rows. A row the
    CHECK refuses in a queued step is a dead letter once, listed by the
    coordinator from host 1's file. A checkpoint taken with two steps queued
    restores the delivery counters: at the end they count each change once."""
    import requests
    from httpkit import ingress, lines
    pg.psql(DL_AUDIT.format(t="oh_kill9"))
    st = tmp_path / "st"
    sql = dl_program(pg, tmp_path, "oh_kill9", "kill9")
    args = ("--hosts", "2", "--workers", "2", "--storage", st, "--checkpoint-interval", "0")
    monkeypatch.setenv("SLUICE_CRASH_AT", "after-step:7@1")
    p = http_pipeline(sql, *args, name="a")
    monkeypatch.delenv("SLUICE_CRASH_AT")
    want = {i: i for i in range(10)}
    ingress(p, "t", lines(*[{"id": i, "v": i} for i in range(10)]))
    wait_until(lambda: dl_table(pg, "oh_kill9") == want, "the first rows")
    assert dl_steps(p) == 2  # (the start with storage is step 1)
    pg.stop()
    try:
        for k in range(1, 5):  # steps 3..6, queued on host 1
            rows = [{"id": k * 100 + i, "v": k} for i in range(10)]
            if k == 4:
                rows.append({"id": 999, "v": -1})  # refused once delivered
            ingress(p, "t", lines(*rows))
            want.update({k * 100 + i: k for i in range(10)})
            wait_until(lambda: dl_metrics(p)["queued_steps"] >= k, "step %d queued" % (k + 2))
            if k == 2:  # a checkpoint with two steps queued on host 1
                r = requests.post(p.url("/checkpoint"), timeout=60)
                assert r.status_code == 200, r.text
                seq = r.json()["checkpoint_sequence_number"]
                wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60)
                                    .json().get("success") or 0) >= seq, "the checkpoint")
        m = dl_adds_up(dl_metrics(p))
        assert m["pending_records"] == 41, m
        # step 7: host 1 queues it, then dies
        try:
            requests.post(p.url("/ingress/t"), data=lines(*[{"id": 600 + i, "v": 6}
                                                            for i in range(10)]), timeout=60)
        except requests.RequestException:
            pass  # the job may end before it answers
        want.update({600 + i: 6 for i in range(10)})
        p.proc.wait(timeout=120)
        err = p.stderr()
        assert p.proc.returncode != 0 and "status 137" in err, err[-3000:]
        assert "in the storage directory" in err
    finally:
        pg.start()
    assert dl_table(pg, "oh_kill9") == {i: i for i in range(10)}
    q = http_pipeline(sql, *args, name="b")
    wait_until(lambda: dl_table(pg, "oh_kill9") == want, "host 1's queued steps delivered")
    assert "still to deliver" in q.stderr()
    ingress(q, "t", lines({"id": 9999, "v": 1}))
    want[9999] = 1
    wait_until(lambda: dl_table(pg, "oh_kill9") == want, "a new step")
    audit = dict(pg.query("SELECT op, count(*) FROM oh_kill9_audit GROUP BY op"))
    assert audit == {"INSERT": str(len(want))}, audit
    d = requests.get(q.url("/dead_letter"), params={"output": "v"}, timeout=60).json()
    assert [e["record"]["insert"] for e in d["records"]] == [{"id": 999, "v": -1}], d
    # the counters went on from the checkpoint's (host 1's, through the
    # coordinator): every change counted once
    m = wait_until(lambda: (lambda m: m if m["changes"] == len(want) + 1 and
                            m["pending_records"] == 0 else None)(dl_metrics(q)),
                   "every change counted")
    dl_adds_up(m)
    assert (m["acknowledged_records"], m["dead_lettered_records"]) == (len(want), 1), m
    q.stop()


def test_postgres_cdc_input_on_host_1_confirms_its_slot_there(pg, http_pipeline, tmp_path):
    """Change streams are placed as file and Kafka inputs: a file input
    first (host 0), then a postgres_cdc_input, read on host 1 (/stats says
    so). The view equals PostgreSQL's GROUP BY over the source through the
    snapshot and the changes; the replication slot stays where the start
    left it until a checkpoint, after which the coordinator tells host 1,
    which confirms it (pg_replication_slots)."""
    import requests
    import test_postgres as tp
    pg.psql("CREATE TABLE src_h1 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src_h1 SELECT i, i % 11, i * 3 % 97, 'x' FROM generate_series(1, 2000) i")
    side = tmp_path / "side.csv"
    side.write_text("".join("%d\n" % i for i in range(50)))
    sql = ("CREATE TABLE side (x INT) %s;\n" % conn_clause(
        [{"transport": {"name": "file_input", "config": {"path": str(side)}},
          "format": {"name": "csv"}}]) + tp.CDC_SQL.format(inp=tp.cdc_in(pg, "src_h1"), out=""))
    p = http_pipeline(sql, "--hosts", "2", "--workers", "2", "--storage", tmp_path / "st",
                      "--checkpoint-interval", "0")
    want = tp.pg_source_groups(pg, "src_h1")
    wait_until(lambda: tp.view_groups(p) == want, "the snapshot through host 1")
    stats = requests.get(p.url("/stats"), timeout=60).json()
    hosts = {i["transport"]: i["host"] for i in stats["inputs"] if i["transport"] != "http"}
    assert hosts == {"file_input": 0, "postgres_cdc_input": 1}, stats["inputs"]
    pg.psql("UPDATE src_h1 SET grp = grp + 1 WHERE id % 5 = 0; DELETE FROM src_h1 WHERE id < 100")
    want = tp.pg_source_groups(pg, "src_h1")
    wait_until(lambda: tp.view_groups(p) == want, "the changes through host 1")

    def confirmed():
        rows = pg.query("SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
                        "WHERE slot_name = 'sluice_src_h1'")
        return int(rows[0][0]) if rows and rows[0][0] else 0
    before = confirmed()
    r = requests.post(p.url("/checkpoint"), timeout=60)
    assert r.status_code == 200, r.text
    seq = r.json()["checkpoint_sequence_number"]
    wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60).json()
                        .get("success") or 0) >= seq, "the checkpoint")
    wait_until(lambda: confirmed() > before, "host 1 confirming the slot up to the checkpoint")
    p.stop()


def test_host_1_s_queue_past_its_bound_pauses_the_coordinator_s_inputs(pg, http_pipeline,
                                                                        tmp_path):
    """Backpressure from host 1: its postgres_output's queue past a small
    bound (the database away) makes the coordinator's ingress answer 503
    and /stats name the output; once host 1 drains it, inputs resume and
    every row arrives."""
    import requests
    from httpkit import ingress, lines
    sql = dl_program(pg, tmp_path, "oh_bp", "bp", {"max_queued_records": 30})
    p = http_pipeline(sql, "--hosts", "2", "--workers", "2")
    ingress(p, "t", lines({"id": 0, "v": 0}))
    want = {0: 0}
    wait_until(lambda: dl_table(pg, "oh_bp") == want, "the first row")
    pg.stop()
    try:
        n = 1
        while True:  # 20 rows a push until the inputs pause (past 30 queued on host 1)
            s0 = dl_metrics(p)["pending_records"]
            r = requests.post(p.url("/ingress/t"), timeout=60,
                              data=lines(*[{"id": i, "v": i} for i in range(n, n + 20)]))
            if r.status_code == 503:
                assert r.json()["error_code"] == "Backpressure", r.text
                break
            assert r.status_code == 200, r.text
            want.update({i: i for i in range(n, n + 20)})
            n += 20
            wait_until(lambda: dl_metrics(p)["pending_records"] >= s0 + 20 or
                       dl_stats(p)["global_metrics"]["backpressure"], "the push queued")
            assert n < 400, "no backpressure"
        bp = dl_stats(p)["global_metrics"]["backpressure"]
        assert bp["view"] == "v" and bp["pending_records"] > 30, bp
    finally:
        pg.start()
    wait_until(lambda: dl_stats(p)["global_metrics"]["backpressure"] is None,
               "the inputs resuming")
    ingress(p, "t", lines({"id": 999, "v": 9}))
    want[999] = 9
    wait_until(lambda: dl_table(pg, "oh_bp") == want, "every row in the table")
    dl_adds_up(dl_metrics(p))
    p.stop()

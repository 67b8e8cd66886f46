"""Scale-out (--hosts H): one pipeline as H MPI processes.

- The bank pipeline and a join-heavy program (joins, DISTINCT, MIN/MAX,
  top-k, windows over generated tables) give byte-identical --dump and
  output files with H = 1, 2, 3 local processes and small steps (so that
  exchanges between hosts happen in many steps), and with H = 3 across
  network namespaces (simulated hosts, tests/e2e/netns.py).
- The coordinator (rank 0) serves the HTTP API for the whole pipeline:
  /ingress rows reach workers on every host, /query and /egress see every
  host's rows, partial updates of PRIMARY KEY rows owned by another host,
  transactions, /stats with a per-host breakdown, /metrics.
- Failure: a follower that dies mid-run ends the job with a message naming
  it; a host cut off the network is caught by the step watchdog
  (--step-deadline).
The SQL-vs-SQLite suites run their programs with --hosts 2 and 3 too.

Processes die at counted events (SLUICE_CRASH_AT=after-step:N@rank) after
checkpoints taken every K steps and waited for
(SLUICE_CHECKPOINT_EVERY_STEPS=K), so what storage holds at a crash never
depends on timing; waits poll observable state with a hang guard.
"""
import json
import os
import re
import shutil
import subprocess
import threading

import pytest

from conftest import mpi_env, run, run_ok, sluice_bin, wait_until

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

JOIN_PROGRAM = """
CREATE TABLE orders (id BIGINT NOT NULL, cust INT NOT NULL, item INT NOT NULL, qty INT NOT NULL)
WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 7, "plan": [{
  "limit": %(orders)d, "fields": {
    "id": {"strategy": "increment"},
    "cust": {"strategy": "uniform", "range": [1, 2000]},
    "item": {"strategy": "uniform", "range": [1, 500]},
    "qty": {"strategy": "uniform", "range": [1, 9]}}}]}}}]');
CREATE TABLE customers (cust INT NOT NULL, region INT NOT NULL)
WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 8, "plan": [{
  "limit": 2000, "fields": {
    "cust": {"strategy": "increment", "range": [1, 2001]},
    "region": {"strategy": "uniform", "range": [1, 12]}}}]}}}]');
CREATE TABLE items (item INT NOT NULL, price INT NOT NULL)
WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 9, "plan": [{
  "limit": 500, "fields": {
    "item": {"strategy": "increment", "range": [1, 501]},
    "price": {"strategy": "uniform", "range": [1, 100]}}}]}}}]');
CREATE MATERIALIZED VIEW region_sales AS
  SELECT c.region, COUNT(*) AS n, SUM(o.qty * i.price) AS revenue, MAX(i.price) AS top_price
  FROM orders o JOIN customers c ON o.cust = c.cust JOIN items i ON o.item = i.item
  GROUP BY c.region;
CREATE MATERIALIZED VIEW buyers AS SELECT DISTINCT o.cust, c.region FROM orders o
  JOIN customers c ON o.cust = c.cust WHERE o.qty > 7;
CREATE MATERIALIZED VIEW top_items AS
  SELECT item, SUM(qty) AS q FROM orders GROUP BY item ORDER BY q DESC, item LIMIT 5;
CREATE MATERIALIZED VIEW ranked AS
  SELECT region, cust, RANK() OVER (PARTITION BY region ORDER BY cust) AS r FROM customers;
CREATE MATERIALIZED VIEW min_qty AS SELECT item, MIN(qty) AS mq FROM orders GROUP BY item;
CREATE VIEW big_orders WITH ('connectors' = '[{"transport": {"name": "file_output",
  "config": {"path": "%(out)s"}}, "format": {"name": "csv"}}]') AS
  SELECT o.id, o.cust, i.price FROM orders o JOIN items i ON o.item = i.item WHERE o.qty = 9;
"""


def bank_program(tmp_path, rows, out):
    text = open(os.path.join(REPO, "examples", "bank.sql")).read()
    text = text.replace('"limit": 100000000', '"limit": %d' % rows)
    text += ("\nCREATE VIEW balance_out WITH ('connectors' = '[{\"transport\": {\"name\": "
             "\"file_output\", \"config\": {\"path\": \"%s\"}}, \"format\": {\"name\": "
             "\"csv\"}}]') AS SELECT * FROM balance;\n" % out)
    p = tmp_path / "bank.sql"
    p.write_text(text)
    return p


def read_dir(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def run_hosts(tmp_path, make_program, hosts, workers, step_rows, extra=()):
    """Run the program made by make_program(out_path) with --hosts; return
    (dump files, output file bytes, stderr)."""
    tag = "h%d_w%d" % (hosts, workers)
    out = tmp_path / ("out_%s.csv" % tag)
    prog = make_program(out)
    dump = tmp_path / ("dump_" + tag)
    args = ["run", prog, "--workers", workers, "--until-done", "--dump", dump, "--no-progress",
            "--step-rows", step_rows] + list(extra)
    if hosts > 1:
        args += ["--hosts", hosts]
    p = run_ok(args, timeout=300)
    return read_dir(dump), out.read_bytes(), p.stderr


def assert_same(base, other, what):
    (d0, o0, _), (d1, o1, e1) = base, other
    assert sorted(d0) == sorted(d1), what
    for f in d0:
        if d0[f] != d1[f]:
            la, lb = d0[f].split(b"\n"), d1[f].split(b"\n")
            bad = [(x, y) for x, y in zip(la, lb) if x != y][:3]
            pytest.fail("%s: %s differs; first differing lines %r\n%s" % (what, f, bad,
                                                                            e1[-2000:]))
    assert o0 == o1, "%s: the output file differs" % what


def test_bank_identical_on_1_2_3_hosts(tmp_path):
    make = lambda out: bank_program(tmp_path, 300000, out)
    base = run_hosts(tmp_path, make, 1, 3, 20000)
    assert base[0]["balance.csv"].count(b"\n") == 10  # header + 9 accounts
    for hosts in (2, 3):
        other = run_hosts(tmp_path, make, hosts, 3, 20000)
        assert_same(base, other, "bank, %d hosts" % hosts)
        assert "%d hosts:" % hosts in other[2], other[2][-2000:]


def test_join_heavy_identical_on_1_2_3_hosts(tmp_path):
    def make(out):
        p = tmp_path / ("join_%s.sql" % os.path.basename(str(out)))
        p.write_text(JOIN_PROGRAM % {"orders": 30000, "out": out})
        return p
    base = run_hosts(tmp_path, make, 1, 1, 3000)
    assert base[0]["region_sales.csv"].count(b"\n") == 12  # header + regions 1..11
    for hosts, workers in ((2, 2), (2, 3), (3, 4)):
        other = run_hosts(tmp_path, make, hosts, workers, 3000)
        assert_same(base, other, "join program, %d hosts, %d workers" % (hosts, workers))
    # more rows crossed hosts than the coordinator shipped: the exchange worked
    m = re.search(r"([\d.]+) MB exchanged between hosts", other[2])
    assert m and float(m.group(1)) > 0.1, other[2][-2000:]


def test_hosts_need_enough_workers_and_come_from_the_config_too(tmp_path):
    prog = bank_program(tmp_path, 1000, tmp_path / "o.csv")
    p = run(["run", prog, "--hosts", 3, "--workers", 2, "--until-done", "--no-progress"])
    assert p.returncode != 0
    assert "3 hosts need at least 3 workers" in p.stderr, p.stderr[-2000:]
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"hosts": 2, "workers": 2, "step_deadline_secs": 30}))
    env = dict(os.environ)
    env.update(mpi_env())
    p = subprocess.run([sluice_bin(), "run", str(prog), "--config", str(cfg), "--until-done",
                        "--no-progress"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and "2 hosts:" in p.stderr, p.stderr[-2000:]


def test_restart_on_other_host_and_worker_counts(tmp_path):
    """Killed on 2 hosts (a follower), resumed on 3 hosts with 3 workers
    (state re-sharded) and killed again (the coordinator), finished on one
    process: dump and output file equal an uninterrupted run's."""
    out = tmp_path / "hw_out.csv"
    prog = tmp_path / "hw_bank.sql"
    prog.write_text(bank_program(tmp_path, 400000, out).read_text())
    st = tmp_path / "st"
    base = ["run", prog, "--no-progress", "--storage", st, "--checkpoint-interval", "0",
            "--until-done", "--step-rows", "1000"]
    # checkpoints at steps 20 and 40, then host 1 dies after step 50
    crash_run(base + ["--hosts", 2, "--workers", 2], "after-step:50@1", tmp_path)
    # resumed from step 40, checkpoints at 60 and 80, host 0 dies after step 90
    crash_run(base + ["--hosts", 3, "--workers", 3], "after-step:90@0", tmp_path)
    err = (tmp_path / "err").read_text()
    assert "at step 40 was written by 2 workers; its state is re-sharded for 3" in err, \
        err[-3000:]
    p = run_ok(base + ["--dump", tmp_path / "dump_hw"], timeout=300)
    assert "resuming from the checkpoint at step 80" in p.stderr, p.stderr[-3000:]
    plain = run_hosts(tmp_path, lambda o: bank_program(tmp_path, 400000, o), 1, 3, 1000)
    assert_same(plain, (read_dir(tmp_path / "dump_hw"), out.read_bytes(), p.stderr),
                "2 hosts, then 3, then 1")


# ---------------------------------------------------------------- HTTP

HTTP_PROGRAM = """
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, g INT, v INT);
CREATE TABLE u (g INT, name VARCHAR);
CREATE MATERIALIZED VIEW s AS SELECT g, COUNT(*) AS n, SUM(v) AS sv FROM t GROUP BY g;
CREATE MATERIALIZED VIEW j AS SELECT t.id, t.v, u.name FROM t JOIN u ON t.g = u.g;
"""


def hp_storage(tmp_path):
    return tmp_path / "http_storage"


def test_http_api_through_the_coordinator(http_pipeline, tmp_path):
    import requests
    hp = http_pipeline(HTTP_PROGRAM, "--hosts", 2, "--workers", 3, "--storage",
                       str(hp_storage(tmp_path)))
    # egress subscription first: it must see every host's changes
    got = []

    def tail():
        with requests.post(hp.url("/egress/j?format=json"), stream=True, timeout=60) as r:
            for line in r.iter_lines():
                if line:
                    got.append(json.loads(line))
                if sum(len(x.get("json_data", [])) for x in got) >= 60:
                    return
    th = threading.Thread(target=tail, daemon=True)
    th.start()

    def subscribed():
        st = requests.get(hp.url("/stats"), timeout=60).json()
        return any(o["view"] == "j" and o["metrics"]["subscribers"] for o in st["outputs"])
    wait_until(subscribed, "the /egress subscription registering")
    rows = "\n".join(json.dumps({"insert": {"id": i, "g": i % 5, "v": i}}) for i in range(1, 61))
    r = requests.post(hp.url("/ingress/t?format=json&update_format=insert_delete"), data=rows,
                      timeout=60)
    assert r.status_code == 200, r.text
    names = "\n".join(json.dumps({"insert": {"g": g, "name": "n%d" % g}}) for g in range(5))
    r = requests.post(hp.url("/ingress/u?format=json&update_format=insert_delete"), data=names,
                      timeout=60)
    assert r.status_code == 200, r.text

    def query(sql):
        r = requests.get(hp.url("/query"), params={"sql": sql, "format": "json"}, timeout=60)
        assert r.status_code == 200, r.text
        return [json.loads(x) for x in r.text.splitlines() if x.strip()]

    res = wait_until(lambda: (lambda r: r if sum(x["n"] for x in r) == 60 else None)(
        query("SELECT g, n, sv FROM s ORDER BY g")), "60 rows in s")
    want = [{"g": g, "n": 12, "sv": sum(i for i in range(1, 61) if i % 5 == g)} for g in range(5)]
    assert res == want
    assert query("SELECT COUNT(*) AS c FROM j") == [{"c": 60}]

    # partial updates of keys owned by any host: the coordinator looks them up
    ups = "\n".join(json.dumps({"update": {"id": i, "v": 1000 + i}}) for i in range(1, 11))
    r = requests.post(hp.url("/ingress/t?format=json&update_format=insert_delete"), data=ups,
                      timeout=60)
    assert r.status_code == 200, r.text
    want_sum = sum(1000 + i if i <= 10 else i for i in range(1, 61))
    res = wait_until(lambda: (lambda r: r if r[0]["total"] == want_sum else None)(
        query("SELECT SUM(sv) AS total, SUM(n) AS rows_ FROM s")), "the updates in s")
    assert res == [{"total": want_sum, "rows_": 60}]

    # a transaction spans every host: nothing shows before the commit
    r = requests.post(hp.url("/start_transaction"), timeout=60)
    assert r.status_code == 200, r.text
    more = "\n".join(json.dumps({"insert": {"id": i, "g": 9, "v": 1}}) for i in range(100, 120))
    r = requests.post(hp.url("/ingress/t?format=json&update_format=insert_delete"), data=more,
                      timeout=60)
    assert r.status_code == 200, r.text
    # the controller holds the 20 records in the transaction: no step shows them
    wait_until(lambda: (requests.get(hp.url("/status"), timeout=60).json()["transaction"]
                        or {}).get("records") == 20, "the transaction holding 20 records")
    assert query("SELECT n FROM s WHERE g = 9") == []
    r = requests.post(hp.url("/commit_transaction?wait=true"), timeout=60)
    assert r.status_code == 200, r.text
    wait_until(lambda: query("SELECT n FROM s WHERE g = 9") == [{"n": 20}], "the commit in s")

    # a checkpoint through the coordinator: every host writes its share
    hp2_ck = requests.post(hp.url("/checkpoint"), timeout=60)
    assert hp2_ck.status_code == 200, hp2_ck.text
    seq = hp2_ck.json()["checkpoint_sequence_number"]
    cs = wait_until(lambda: (lambda c: c if c.get("success") == seq or c.get("failure") else None)(
        requests.get(hp.url("/checkpoint_status"), timeout=60).json()), "the checkpoint")
    assert cs.get("success") == seq, cs

    th.join(timeout=120)
    inserted = [d for x in got for d in x.get("json_data", []) if "insert" in d]
    assert len({d["insert"]["id"] for d in inserted}) == 60, got[:3]

    st = requests.get(hp.url("/stats"), timeout=60).json()
    hosts = st["global_metrics"]["hosts"]
    assert [h["host"] for h in hosts] == [0, 1]
    assert sum(h["workers"] for h in hosts) == 3
    assert all(h["rss_bytes"] > 0 for h in hosts)
    assert st["global_metrics"]["rss_bytes"] == sum(h["rss_bytes"] for h in hosts)
    assert all(h["completed_steps"] == hosts[0]["completed_steps"] for h in hosts)
    assert sum(h["exchanged_bytes"] for h in hosts) > 0
    m = requests.get(hp.url("/metrics"), timeout=60).text
    assert 'sluice_host_resident_memory_bytes{host="1"}' in m
    res = hp.stop()
    assert "2 hosts:" in res.stderr


# ---------------------------------------------------------------- failure

# how mpirun names the rank that died with the injected crash (exit 137)
RANK_DIED = r"Process name: *\[\[\d+,\d+\],%d\] *Exit code: *137"


def rank_pids(marker):
    """{rank: pid} of the sluice processes whose command line has marker."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if not any(marker.encode() in c for c in cmd):
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(e.split(b"=")[1])] = int(pid)
    return out


def slow_bank(tmp_path, name):
    text = open(os.path.join(REPO, "examples", "bank.sql")).read()
    text = text.replace('"limit": 100000000', '"limit": 100000000, "rate": 20000')
    p = tmp_path / name
    p.write_text(text)
    return p


def crash_run(args, at, tmp_path, every=20):
    """Run sluice with args, a checkpoint every `every` steps (waited for)
    and the injected crash SLUICE_CRASH_AT=at (e.g. after-step:50@2: MPI
    rank 2 exits with 137 after step 50); the job must then end, nonzero.
    stderr appends to tmp_path/err; returns the job's exit status."""
    env = dict(os.environ, SLUICE_CRASH_AT=at, SLUICE_CHECKPOINT_EVERY_STEPS=str(every))
    env.update(mpi_env())
    with open(tmp_path / "err", "ab") as ef:
        p = subprocess.run([sluice_bin()] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                           stderr=ef, env=env, timeout=300)
    assert p.returncode != 0, (tmp_path / "err").read_text()[-3000:]
    return p.returncode


def test_killed_host_ends_the_job_and_a_restart_resumes(tmp_path):
    """One follower dies mid-run (after step 50; checkpoints at 20 and
    40): the job ends naming it; the same command resumes from the last
    checkpoint (two-phase: every host's share, then the manifest) and the
    journal, and the final dump and output file equal an uninterrupted
    run's."""
    out = tmp_path / "kill_out.csv"
    prog = tmp_path / "kill_me.sql"
    prog.write_text(bank_program(tmp_path, 300000, out).read_text())
    st = tmp_path / "st"
    args = ["run", str(prog), "--hosts", "3", "--no-progress", "--storage", str(st),
            "--checkpoint-interval", "0", "--until-done", "--dump", str(tmp_path / "dump_k"),
            "--step-rows", "1000"]
    crash_run(args, "after-step:50@2", tmp_path)
    err = (tmp_path / "err").read_text()
    assert re.search(RANK_DIED % 2, err.replace("\n", " ")), err[-3000:]
    assert "run the same command again" in err, err[-3000:]
    wait_until(lambda: rank_pids("kill_me.sql") == {}, "every process of the job ending")
    p = run_ok(args, timeout=300)
    assert "resuming from the checkpoint at step 40" in p.stderr, p.stderr[-3000:]
    resumed = (read_dir(tmp_path / "dump_k"), out.read_bytes(), p.stderr)
    plain = run_hosts(tmp_path, lambda o: bank_program(tmp_path, 300000, o), 1, 3, 1000)
    assert_same(plain, resumed, "killed and resumed on 3 hosts")


# ---------------------------------------------------------------- simulated hosts

def netns_or_skip():
    from netns import netns_available
    ok, why = netns_available()
    if not ok:
        print("skipped: network namespaces unavailable: %s" % why)
        pytest.skip("network namespaces unavailable: %s" % why)


def test_three_hosts_across_network_namespaces(tmp_path):
    netns_or_skip()
    from netns import NetnsHosts
    make = lambda out: bank_program(tmp_path, 200000, out)
    base = run_hosts(tmp_path, make, 1, 3, 20000)
    out = tmp_path / "ns_out.csv"
    prog = make(out)
    dump = tmp_path / "ns_dump"
    with NetnsHosts(3) as h:
        env = dict(os.environ)
        env.update(mpi_env())
        argv = h.on_host1([sluice_bin(), "run", str(prog), "--hosts", "3", "--workers", "3",
                           "--until-done", "--dump", str(dump), "--no-progress",
                           "--step-rows", "20000", "--hostfile", h.hostfile] + h.mca)
        p = subprocess.run(argv, capture_output=True, env=env, timeout=300)
        err = p.stderr.decode("utf-8", "replace")
        assert p.returncode == 0, err[-4000:]
    assert_same(base, (read_dir(dump), out.read_bytes(), err), "bank across 3 namespaces")
    assert "3 hosts:" in err


def test_partitioned_host_is_caught_by_the_step_watchdog(tmp_path):
    netns_or_skip()
    from netns import NetnsHosts
    prog = slow_bank(tmp_path, "cut_me.sql")
    with NetnsHosts(3) as h:
        env = dict(os.environ)
        env.update(mpi_env())
        argv = h.on_host1([sluice_bin(), "run", str(prog), "--hosts", "3",
                           "--step-deadline", "3", "--hostfile", h.hostfile] + h.mca)
        errp = tmp_path / "err"
        with open(errp, "wb") as ef:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=ef, env=env)
        try:
            # the job is stepping (its first progress line, at 5 s), then the cut
            wait_until(lambda: proc.poll() is not None or
                       b"sluice: progress: " in errp.read_bytes(), "the job stepping")
            assert proc.poll() is None, errp.read_text()[-3000:]
            h.cut(3)
            rc = proc.wait(timeout=120)  # hang guard: the watchdog ends it
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    err = errp.read_text()
    assert rc != 0
    assert "no progress for 3 s" in err, err[-3000:]
    # the cut one is named (a loaded machine can leave another host behind
    # too: "waiting for host 1 (..), host 2 (..)")
    assert re.search(r"no progress for 3 s in step \d+; waiting for (host \d \([^)]*\), )*"
                     r"host 2 \(", err), err[-3000:]


# ---------------------------------------------------------------- file inputs on their hosts

FILE_PROGRAM = """
CREATE TABLE a (k INT NOT NULL, v INT NOT NULL) WITH ('connectors' = '[{"transport":
  {"name": "file_input", "config": {"path": "%(a)s"}}, "format": {"name": "csv"}}]');
CREATE TABLE b (k INT NOT NULL, w INT NOT NULL) WITH ('connectors' = '[{"transport":
  {"name": "file_input", "config": {"path": "%(b)s"}}, "format": {"name": "csv"}}]');
CREATE MATERIALIZED VIEW joined AS
  SELECT a.k, SUM(a.v * b.w) AS s, COUNT(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.k;
CREATE VIEW joined_out WITH ('connectors' = '[{"transport": {"name": "file_output",
  "config": {"path": "%(out)s"}}, "format": {"name": "csv"}}]') AS SELECT * FROM joined;
"""


def file_program(tmp_path, out, rows=30000):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    if not a.exists():
        a.write_text("".join("%d,%d\n" % (i % 997, i % 13) for i in range(rows)))
        b.write_text("".join("%d,%d\n" % (i % 997, i % 7) for i in range(rows // 2)) +
                     "oops,1\n")
    p = tmp_path / ("files_%s.sql" % os.path.basename(str(out)))
    p.write_text(FILE_PROGRAM % {"a": a, "b": b, "out": out})
    return p


def test_file_inputs_are_read_on_their_hosts_and_survive_a_kill(tmp_path, http_pipeline):
    """The k-th file input is read and parsed by host k % H (its bad record
    is reported there and counted); the results equal one process's, also
    after a follower is killed mid-run and the job resumed from storage
    (the owner seeks back and the journal replays its reads)."""
    import requests
    base = run_hosts(tmp_path, lambda o: file_program(tmp_path, o), 1, 2, 1000)
    two = run_hosts(tmp_path, lambda o: file_program(tmp_path, o), 2, 2, 1000)
    assert_same(base, two, "file inputs on 2 hosts")
    assert "oops" in two[2]  # the owner's parse error reached the log

    out = tmp_path / "k_out.csv"
    prog = file_program(tmp_path, out)
    st = tmp_path / "st"
    args = ["run", str(prog), "--hosts", "2", "--workers", "2", "--no-progress", "--storage",
            str(st), "--checkpoint-interval", "0", "--until-done", "--dump",
            str(tmp_path / "dump_k"), "--step-rows", "100"]
    crash_run(args, "after-step:50@1", tmp_path)  # checkpoints at 20 and 40
    p = run_ok(args, timeout=300)
    assert "resuming from the checkpoint at step 40" in p.stderr, p.stderr[-3000:]
    plain = run_hosts(tmp_path, lambda o: file_program(tmp_path, o), 1, 2, 100)
    assert_same(plain, (read_dir(tmp_path / "dump_k"), out.read_bytes(), p.stderr),
                "file inputs, killed and resumed")

    hp = http_pipeline(open(prog).read().replace(str(out), str(tmp_path / "h_out.csv")),
                       "--hosts", 2, "--workers", 2)
    def ended():
        stt = requests.get(hp.url("/stats"), timeout=30).json()
        return stt if all(i["metrics"]["end_of_input"] for i in stt["inputs"]
                          if i["transport"] == "file_input") else None
    stt = wait_until(ended, "the file inputs ending")
    hosts = {i["table"]: i["host"] for i in stt["inputs"] if i["transport"] == "file_input"}
    assert hosts == {"a": 0, "b": 1}, stt["inputs"]
    errs = {i["table"]: i["metrics"]["num_parse_errors"] for i in stt["inputs"]
            if i["transport"] == "file_input"}
    assert errs == {"a": 0, "b": 1}  # counted by host 1, which parsed b
    hp.stop()


def test_s3_storage_on_two_hosts(tmp_path, s3):
    """The storage every host reaches: a bucket. Each host uploads its share
    of the checkpoints (every 20 steps) through its own cache; the
    coordinator crashes after step 70 and the job resumes from the bucket."""
    out = tmp_path / "s3_out.csv"
    prog = bank_program(tmp_path, 120000, out)
    url = "s3://sluice-so/bank-%d" % os.getpid()
    args = [sluice_bin(), "run", str(prog), "--hosts", "2", "--until-done", "--no-progress",
            "--step-rows", "1000", "--storage", url, "--s3-endpoint", s3.endpoint,
            "--checkpoint-interval", "0"]
    env = dict(os.environ, AWS_ACCESS_KEY_ID=s3.access_key,
               AWS_SECRET_ACCESS_KEY=s3.secret_key, AWS_REGION=s3.region)
    env.update(mpi_env())
    p = subprocess.run(args, capture_output=True, text=True, timeout=600,
                       env=dict(env, SLUICE_CRASH_AT="after-step:70@0",
                                SLUICE_CHECKPOINT_EVERY_STEPS="20"))
    assert p.returncode != 0, p.stderr[-3000:]
    keys = s3.list_keys("sluice-so", "bank-%d/" % os.getpid())
    assert any("manifest-" in k for k in keys), (keys, p.stderr[-3000:])
    p = subprocess.run(args + ["--dump", str(tmp_path / "dump_s3")], capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "resuming from the checkpoint at step 60" in p.stderr, p.stderr[-3000:]
    plain = run_hosts(tmp_path, lambda o: bank_program(tmp_path, 120000, o), 1, 2, 1000)
    assert_same(plain, (read_dir(tmp_path / "dump_s3"), out.read_bytes(), p.stderr),
                "two hosts on S3")

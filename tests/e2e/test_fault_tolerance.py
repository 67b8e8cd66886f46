"""Fault tolerance (issue 6): a pipeline with --storage can be killed at any
moment (kill -9, or a crash injected at a named point of a checkpoint or
journal write) and restarted with the same storage, any number of times;
the final views and the output files equal those of an uninterrupted run,
byte for byte. Acknowledged HTTP input is reflected exactly once. Storage
copied elsewhere resumes there; a corrupt checkpoint falls back to the
previous one; storage of another program is refused.

No test here depends on how much work fits in an interval: crashes happen
at counted events (SLUICE_CRASH_AT=after-step:N, after-checkpoint:N, or the
n-th arrival at a write), checkpoints that a test needs are taken every K
steps and waited for (SLUICE_CHECKPOINT_EVERY_STEPS=K), waits poll
observable state with a hang guard, and random kill times only ever meet
assertions that hold wherever the kill lands.

SLUICE_FT_LONG=1 runs the kill test over the full 100M-row bank program.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest
import requests

from conftest import EXAMPLES, assert_no_crash, read_dump, run, run_ok, sluice_bin, wait_until

LONG = os.environ.get("SLUICE_FT_LONG") == "1"
ROWS = 100_000_000 if LONG else 5_000_000
STEP_ROWS = 200_000 if LONG else 20_000


def bank_program(tmp_path, rows=ROWS):
    """examples/bank.sql with its limit set to rows and a file output on the
    balance view (the change stream whose bytes must not change)."""
    sql = open(os.path.join(EXAMPLES, "bank.sql")).read().replace("100000000", str(rows))
    out = tmp_path / "balance_out.csv"
    sql += ("\nCREATE VIEW balance_out WITH ('connectors' = '[{\"transport\": {\"name\": "
            "\"file_output\", \"config\": {\"path\": \"%s\"}}, \"format\": {\"name\": "
            "\"csv\"}}]') AS SELECT * FROM balance;\n" % out)
    prog = tmp_path / "bank.sql"
    prog.write_text(sql)
    return prog, out


def reference(tmp_path, rows=ROWS):
    """The uninterrupted run (no storage): dump and output file bytes."""
    ref = tmp_path / "ref"
    ref.mkdir()
    prog, out = bank_program(ref, rows)
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--dump", ref / "dump"], timeout=1200)
    return (ref / "dump" / "balance.csv").read_bytes(), out.read_bytes()


def start(args, env_extra=None, log=None):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.update(env_extra or {})
    errf = open(log, "ab") if log else subprocess.DEVNULL
    return subprocess.Popen([sluice_bin()] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                            stderr=errf, env=env)


def crash_env(at, every=None):
    """The environment of a run that crashes (exit 137) at the counted
    event `at`, taking and waiting for a checkpoint every `every` steps."""
    env = dict(os.environ, SLUICE_CRASH_AT=at)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    if every:
        env["SLUICE_CHECKPOINT_EVERY_STEPS"] = str(every)
    return env


def crash(args, at, every=None, env=None):
    """Run sluice with args until the injected crash at `at`; its stderr."""
    p = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True,
                       timeout=600, env=dict(crash_env(at, every), **(env or {})))
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 137, "expected the injected crash at %s (137), got %d:\n%s" % (
        at, p.returncode, err[-3000:])
    return err


def processes_using(path):
    """Pids of processes whose command line names path (a pipeline and the
    checkpoint process it forked)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and str(path).encode() in open("/proc/%s/cmdline" % pid,
                                                            "rb").read():
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def kill9(proc, storage):
    """kill -9 the pipeline, then wait until every process of it has gone:
    a checkpoint process it forked dies with it (PR_SET_PDEATHSIG) but
    not at the same instant, and holds the storage lock until it does."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not processes_using(storage), "the killed pipeline's processes ending")


def finish(args, timeout=1200):
    p = run(args, timeout=timeout)
    assert p.returncode == 0, p.stderr[-4000:]
    return p


def test_bank_killed_at_random_moments_equals_an_uninterrupted_run(tmp_path, procs):
    """kill -9 at random moments, 10 times, each run resuming from the same
    storage (periodic checkpoints in the background every 0.3 s); then a
    final run to the end. Dump and output file must equal the uninterrupted
    run's, wherever the kills landed (a run that ended before its kill is
    fine too). That restarts from a checkpoint plus journal replay happen
    does not rest on the kill times: the first run crashes at step 40 with
    a checkpoint taken at step 25."""
    steps = STEP_ROWS if LONG else 2_000
    ref_dir = tmp_path / "r"
    ref_dir.mkdir()
    prog_r, out_r = bank_program(ref_dir)
    run_ok(["run", prog_r, "--until-done", "--no-progress", "--step-rows", steps,
            "--dump", ref_dir / "dump"], timeout=1200)
    ref_balance, ref_out = (ref_dir / "dump" / "balance.csv").read_bytes(), out_r.read_bytes()
    prog, out = bank_program(tmp_path)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", steps,
            "--storage", st, "--checkpoint-interval", "0.3", "--dump", tmp_path / "dump"]
    rng = random.Random(6)
    log = tmp_path / "runs.log"
    first = list(args)
    first[first.index("--checkpoint-interval") + 1] = "0"  # only the one at step 25
    text = crash(first, "after-step:40", every=25)
    resumed = lambda: open(log, "rb").read().count(b"resuming from the checkpoint") \
        if log.exists() else 0
    for _ in range(10):
        before = resumed()
        p = start(args, log=log)
        procs.append(p)
        # past its restore (the log says where it resumes), then a random moment
        wait_until(lambda: p.poll() is not None or resumed() > before,
                   "the restarted pipeline saying where it resumes")
        time.sleep(rng.uniform(0.0, 0.5))
        kill9(p, st)
        assert p.returncode in (0, -signal.SIGKILL), \
            open(log, encoding="utf-8", errors="replace").read()[-3000:]
    res = finish(args)
    text += open(log, encoding="utf-8", errors="replace").read() + res.stderr
    assert_no_crash(subprocess.CompletedProcess([], 0, "", text))  # no sanitizer report
    # the kills hit both kinds of restart: from a checkpoint, and journal replay
    assert "resuming from the checkpoint" in text, text[-3000:]
    assert "replayed" in text, text[-3000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out


@pytest.mark.parametrize("point", ["batch-write:2", "batch-rename:3", "manifest-write:2",
                                   "manifest-rename:2", "journal-write:40", "journal-write:1",
                                   "after-step:23", "after-checkpoint:3",
                                   "background:batch-write:1", "background:manifest-rename:1"])
def test_crash_at_a_named_point_then_resume(tmp_path, point):
    """50 steps with a checkpoint every 10, waited for, so that every point
    is met mid-run; "background:" points run with periodic checkpoints in
    the background instead (the final checkpoint at the latest meets them)."""
    rows = 1_000_000
    ref_balance, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    background = point.startswith("background:")
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", st, "--checkpoint-interval", "0.05" if background else "0",
            "--dump", tmp_path / "dump"]
    crash(args, point.replace("background:", ""), every=None if background else 10)
    res = finish(args)
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out, res.stderr[-3000:]


def test_storage_copied_elsewhere_resumes_there(tmp_path):
    rows = 1_000_000
    ref_balance, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--checkpoint-interval", "0"]
    crash(args + ["--storage", st], "after-step:30", every=10)  # checkpoints at 10, 20
    # "another machine": only the storage directory (and the output file,
    # which lives with the outputs) travels
    moved = tmp_path / "elsewhere"
    shutil.copytree(st, moved)
    shutil.rmtree(st)
    res = finish(args + ["--storage", moved, "--dump", tmp_path / "dump"])
    assert "resuming from the checkpoint at step 20" in res.stderr, res.stderr[-3000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out


def test_corrupt_checkpoint_falls_back_to_the_previous_one(tmp_path):
    rows = 600_000
    ref_balance, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", st, "--checkpoint-interval", "0"]
    # stop mid-way so that two checkpoints exist (steps 10 and 15) and steps follow them
    crash(args, "after-step:17", every=5)
    manifests = sorted((f for f in os.listdir(st) if f.startswith("manifest-")),
                       key=lambda f: int(f.split("-")[1].split(".")[0]))
    assert manifests == ["manifest-10.json", "manifest-15.json"], manifests
    newest = json.loads(open(st / manifests[-1]).read().split("\n#sluice-manifest")[0])
    older = set()
    for m in manifests[:-1]:
        older |= set(json.loads(open(st / m).read().split("\n#sluice-manifest")[0])["files"])
    only_new = [f for f in newest["files"] if f not in older] or newest["files"]
    victim = st / only_new[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    res = finish(args + ["--dump", tmp_path / "dump"])
    assert "unusable" in res.stderr and "falling back" in res.stderr, res.stderr[-3000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out


def test_storage_of_another_program_is_refused(tmp_path):
    prog, _ = bank_program(tmp_path, 100_000)
    st = tmp_path / "storage"
    finish(["run", prog, "--until-done", "--no-progress", "--storage", st])
    other = tmp_path / "other.sql"
    other.write_text(prog.read_text().replace("sum(amount) AS credits", "sum(amount) + 0 AS credits"))
    p = run(["run", other, "--until-done", "--no-progress", "--storage", st])
    assert p.returncode == 1
    assert "checkpoint of another program" in p.stderr and str(st) in p.stderr, p.stderr
    assert "--bootstrap allow" in p.stderr  # test_bootstrap.py: what it does


def test_restart_with_other_worker_counts_resumes_identically(tmp_path):
    """Killed on 1 worker, resumed on 2 and killed again, finished on 3: the
    state is re-sharded at each start; dump and output file equal an
    uninterrupted 1-worker run's. Checkpoints every 5 steps, crashes at
    steps 17 and 27: each restart loads the other worker count's state."""
    rows = 1_000_000
    ref_balance, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", st, "--checkpoint-interval", "0"]
    crash(args + ["--workers", 1], "after-step:17", every=5)
    err = crash(args + ["--workers", 2], "after-step:27", every=5)
    assert "at step 15 was written by 1 worker; its state is re-sharded for 2" in err, err[-2000:]
    res = finish(args + ["--workers", 3, "--dump", tmp_path / "dump"])
    assert "at step 25 was written by 2 workers; its state is re-sharded for 3" in res.stderr, \
        res.stderr[-2000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out


def s3_env(s3, secret=None):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=s3.access_key,
               AWS_SECRET_ACCESS_KEY=secret or s3.secret_key, AWS_REGION=s3.region)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    return env


def test_s3_storage_resumes_on_another_machine(tmp_path, s3):
    """Checkpoints and journal in a bucket: a run killed mid-way resumes from
    the bucket alone (every start fills a fresh local cache from it)."""
    rows = 1_000_000
    ref_balance, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    url = "s3://sluice-ft/bank-%d" % os.getpid()
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", url, "--s3-endpoint", s3.endpoint, "--checkpoint-interval", "0"]
    cache = tmp_path / "tmp"  # where the local caches go (TMPDIR), to see them all removed
    cache.mkdir()
    env = dict(s3_env(s3), TMPDIR=str(cache))
    crash(args, "after-step:30", every=10, env=env)  # checkpoints at 10 and 20
    keys = s3.list_keys("sluice-ft", "bank-%d/" % os.getpid())
    assert any("manifest-" in k for k in keys), keys
    assert any("batch-" in k for k in keys), keys
    assert any("journal-" in k for k in keys), keys
    p = subprocess.run([sluice_bin()] + [str(a) for a in args + ["--dump", tmp_path / "dump"]],
                       capture_output=True, env=env, timeout=600)
    err = p.stderr.decode()
    assert p.returncode == 0, err[-3000:]
    assert "resuming from the checkpoint at step 20" in err and url in err, err
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out
    # no local cache is left behind
    assert os.listdir(cache) == []


def test_s3_wrong_credentials_are_a_clear_error(tmp_path, s3):
    prog, _ = bank_program(tmp_path, 1000)
    p = subprocess.run([sluice_bin(), "run", str(prog), "--until-done", "--no-progress",
                        "--storage", "s3://sluice-ft/x", "--s3-endpoint", s3.endpoint],
                       capture_output=True, env=s3_env(s3, secret="wrong"), timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 1 and "S3" in err and "403" in err, err


def test_s3_without_endpoint_says_what_is_missing(tmp_path):
    prog, _ = bank_program(tmp_path, 1000)
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL",
                                                           "SLUICE_S3_ENDPOINT")}
    p = subprocess.run([sluice_bin(), "run", str(prog), "--until-done", "--no-progress",
                        "--storage", "s3://bucket/prefix"], capture_output=True, env=env,
                       timeout=120)
    assert p.returncode == 1 and "--s3-endpoint" in p.stderr.decode()


# ---------------------------------------------------------------- HTTP input

HTTP_PROG = """
CREATE TABLE t (id BIGINT NOT NULL, v INT);
CREATE MATERIALIZED VIEW per_id AS SELECT id, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY id;
CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n FROM t;
"""


def listening(err_path):
    import re
    if not os.path.exists(err_path):
        return []
    text = open(err_path, "rb").read().decode("utf-8", "replace")
    return re.findall(r"sluice: http: listening on 127\.0\.0\.1:(\d+)", text)


def wait_port(err_path, proc, before):
    """The port of the process started after `before` listening lines."""
    def port():
        ms = listening(err_path)
        if len(ms) <= before and proc.poll() is not None:
            text = open(err_path, "rb").read().decode("utf-8", "replace")
            pytest.fail("sluice exited (%d) before listening:\n%s" % (proc.returncode, text))
        return int(ms[-1]) if len(ms) > before else None
    return wait_until(port, "sluice printing its port", poll=0.01)


@pytest.fixture
def procs():
    """Processes a test starts; any still running at the end are killed."""
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_acknowledged_http_input_is_reflected_exactly_once_across_kills(tmp_path, procs):
    prog = tmp_path / "p.sql"
    prog.write_text(HTTP_PROG)
    st = tmp_path / "storage"
    log = tmp_path / "runs.log"
    args = ["run", prog, "--http", "127.0.0.1:0", "--no-progress", "--storage", st,
            "--checkpoint-interval", "0.2"]
    rng = random.Random(7)
    acked = set()
    next_id = 0
    for round_ in range(10):
        with open(log, "a") as f:
            f.write("---- round %d\n" % round_)
        before = len(listening(log))
        proc = start(args, log=log)
        procs.append(proc)
        port = wait_port(log, proc, before)
        for _ in range(rng.randint(3, 30)):  # a number of requests, not a time window
            batch = list(range(next_id, next_id + rng.randint(1, 50)))
            next_id += len(batch)
            body = "".join(json.dumps({"insert": {"id": i, "v": 1}}) + "\n" for i in batch)
            try:
                r = requests.post("http://127.0.0.1:%d/ingress/t?format=json" % port, data=body,
                                  timeout=10)
            except requests.RequestException:
                break
            if r.status_code == 200:
                acked.update(batch)
            if rng.random() < 0.1:
                requests.post("http://127.0.0.1:%d/checkpoint" % port, timeout=10)
        kill9(proc, st)
    before = len(listening(log))
    proc = start(args + ["--dump", tmp_path / "dump"], log=log)
    procs.append(proc)
    port = wait_port(log, proc, before)
    r = requests.post("http://127.0.0.1:%d/stop" % port, timeout=120)
    assert r.status_code == 200
    assert proc.wait(timeout=120) == 0
    text = open(log, encoding="utf-8", errors="replace").read()
    assert_no_crash(subprocess.CompletedProcess([], 0, "", text))
    _, rows = read_dump(tmp_path / "dump" / "per_id.csv")
    seen = {}
    for rid, n, s in rows:
        seen[int(rid)] = (int(n), int(s))
    assert len(acked) > 100
    missing = sorted(acked - set(seen))
    assert not missing, "acknowledged ids missing after kills: %s" % missing[:20]
    dup = {i: c for i, c in seen.items() if c != (1, 1)}
    assert not dup, "ids reflected more than once: %s" % list(dup.items())[:20]


def checkpoint_done(status_url, seq):
    """Wait until checkpoint request seq completed; the /checkpoint_status."""
    def done():
        st = requests.get(status_url, timeout=10).json()
        return st if st["success"] is not None and st["success"] >= seq else None
    return wait_until(done, "checkpoint %d completing" % seq)


def test_checkpoint_endpoints(http_pipeline, tmp_path):
    p = http_pipeline(HTTP_PROG, "--storage", tmp_path / "st", "--checkpoint-interval", "0")
    r = requests.get(p.url("/checkpoint_status"), timeout=10)
    assert r.status_code == 200 and r.json()["success"] is None
    assert r.json()["fault_tolerance"] == "exactly_once"
    body = "".join(json.dumps({"insert": {"id": i, "v": i}}) + "\n" for i in range(100))
    assert requests.post(p.url("/ingress/t"), data=body, timeout=10).status_code == 200
    r = requests.post(p.url("/checkpoint"), timeout=10)
    assert r.status_code == 200
    seq = r.json()["checkpoint_sequence_number"]
    st = checkpoint_done(p.url("/checkpoint_status"), seq)
    assert st["success"] >= seq and st["failure"] is None
    assert st["last"]["files"] >= 1
    # a second checkpoint of unchanged state writes no new batch file
    seq2 = requests.post(p.url("/checkpoint"), timeout=10).json()["checkpoint_sequence_number"]
    st = checkpoint_done(p.url("/checkpoint_status"), seq2)
    assert st["last"]["files_written"] == 0, st
    g = requests.get(p.url("/stats"), timeout=10).json()["global_metrics"]
    assert g["checkpoint"]["last_step"] == st["last"]["step"]
    assert g["checkpoint"]["fault_tolerance"] == "exactly_once"
    m = requests.get(p.url("/metrics"), timeout=10).text
    assert "sluice_checkpoint_step %d" % st["last"]["step"] in m
    assert "sluice_checkpoint_pause_seconds" in m
    p.stop()


def test_checkpoint_without_storage_is_a_clear_400(http_pipeline):
    p = http_pipeline(HTTP_PROG)
    r = requests.post(p.url("/checkpoint"), timeout=10)
    assert r.status_code == 400 and "--storage" in r.json()["error"]
    p.stop()


@pytest.mark.parametrize("mode", ["at_least_once", "none"])
def test_other_modes_resume_with_the_same_views(tmp_path, mode):
    """at_least_once: no journal; after a crash the input since the last
    checkpoint is read again (possibly in other steps), views end up equal.
    none: checkpoints only on request and at a clean stop; a restart after a
    clean stop resumes from it."""
    rows = 600_000
    ref_balance, _ = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", st, "--fault-tolerance", mode, "--checkpoint-interval", "0.01"]
    if mode == "at_least_once":
        # a crash inside the 3rd checkpoint's writing (step 15) kills the pipeline
        first = list(args)
        first[first.index("--checkpoint-interval") + 1] = "0"  # only those every 5 steps
        crash(first, "manifest-write:3", every=5)
        assert not any(f.startswith("journal-") for f in os.listdir(st))
    else:
        finish(args)
        assert any(f.startswith("manifest-") for f in os.listdir(st))
    res = finish(args + ["--dump", tmp_path / "dump"])
    assert "resuming from the checkpoint" in res.stderr, res.stderr[-2000:]
    if mode == "at_least_once":
        assert "resuming from the checkpoint at step 10" in res.stderr, res.stderr[-2000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance


def test_checkpoint_saves_again_only_the_operators_that_received_input(http_pipeline, tmp_path):
    prog = ("CREATE TABLE a (k BIGINT NOT NULL, v INT);\n"
            "CREATE TABLE b (k BIGINT NOT NULL, v INT);\n"
            "CREATE MATERIALIZED VIEW sa AS SELECT k, SUM(v) AS s FROM a GROUP BY k;\n"
            "CREATE MATERIALIZED VIEW sb AS SELECT k, SUM(v) AS s FROM b GROUP BY k;\n")
    p = http_pipeline(prog, "--storage", tmp_path / "st", "--checkpoint-interval", "0")

    def push(table, n):
        body = "".join(json.dumps({"insert": {"k": i % 50, "v": i}}) + "\n" for i in range(n))
        r = requests.post(p.url("/ingress/%s?wait=true" % table), data=body, timeout=30)
        assert r.status_code == 200, r.text

    def checkpoint():
        seq = requests.post(p.url("/checkpoint"), timeout=10).json()["checkpoint_sequence_number"]
        return checkpoint_done(p.url("/checkpoint_status"), seq)["last"]

    push("a", 500)
    push("b", 500)
    first = checkpoint()
    push("a", 100)  # only a's operators change
    second = checkpoint()
    assert second["files_written"] >= 1
    assert second["files_reused"] >= 2, second  # b's aggregate and sink kept their files
    assert second["files_written"] < first["files_written"], (first, second)
    p.stop()
    # and the state is complete: a restart resumes with both views intact
    out = tmp_path / "dump"
    q = http_pipeline(prog, "--storage", tmp_path / "st", "--dump", out, name="again")
    q.stop()
    _, rows_a = read_dump(out / "sa.csv")
    _, rows_b = read_dump(out / "sb.csv")
    assert sum(int(s) for _, s in rows_a) == sum(range(500)) + sum(range(100))
    assert sum(int(s) for _, s in rows_b) == sum(range(500))


def test_transactions_survive_a_kill(tmp_path, procs):
    """A committed transaction is one journaled step: killed right after the
    commit, a restart replays it; records pushed into a transaction still
    open at the kill were acknowledged, so they come back as ordinary
    input. Either way each acknowledged record counts exactly once."""
    prog = tmp_path / "p.sql"
    prog.write_text(HTTP_PROG)
    st = tmp_path / "storage"
    log = tmp_path / "runs.log"
    args = ["run", prog, "--http", "127.0.0.1:0", "--no-progress", "--storage", st,
            "--checkpoint-interval", "0"]

    def start_one(extra=()):
        before = len(listening(log))
        proc = start(args + list(extra), log=log)
        procs.append(proc)
        return proc, "http://127.0.0.1:%d" % wait_port(log, proc, before)

    def push(base, ids):
        body = "".join(json.dumps({"insert": {"id": i, "v": 1}}) + "\n" for i in ids)
        r = requests.post(base + "/ingress/t", data=body, timeout=30)
        assert r.status_code == 200, r.text

    proc, base = start_one()
    push(base, range(0, 100))
    assert requests.post(base + "/start_transaction", timeout=10).status_code == 200
    push(base, range(100, 200))
    r = requests.post(base + "/commit_transaction?wait=true", timeout=60)
    assert r.status_code == 200, r.text
    assert requests.post(base + "/start_transaction", timeout=10).status_code == 200
    push(base, range(200, 300))  # acknowledged, never committed
    kill9(proc, st)
    proc, base = start_one(["--dump", tmp_path / "dump"])
    assert requests.post(base + "/stop", timeout=60).status_code == 200
    assert proc.wait(timeout=120) == 0
    text = open(log, encoding="utf-8", errors="replace").read()
    assert_no_crash(subprocess.CompletedProcess([], 0, "", text))
    _, rows = read_dump(tmp_path / "dump" / "per_id.csv")
    seen = {int(i): (int(n), int(s)) for i, n, s in rows}
    assert sorted(seen) == list(range(300)), text[-2000:]
    assert all(v == (1, 1) for v in seen.values())


def test_input_that_ends_within_the_first_step_replays_after_a_kill(tmp_path):
    """The datagen input ends inside step 1 (the step asked for more rows
    than the limit), the run dies before any checkpoint: the restart
    replays step 1 from the journal, whose recorded position (the end of
    the plan, written as the start of the next) must match where the
    replay stops (exactly at the limit)."""
    rows = 50_000
    prog, out = bank_program(tmp_path, rows)
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", rows * 4]
    finish(args + ["--dump", tmp_path / "ref"])  # uninterrupted, the same one step
    ref_balance, ref_out = (tmp_path / "ref" / "balance.csv").read_bytes(), out.read_bytes()
    args += ["--storage", tmp_path / "storage", "--checkpoint-interval", "0",
             "--dump", tmp_path / "dump"]
    crash(args, "after-step:1")
    res = finish(args)
    assert "replaying" in res.stderr or "journal" in res.stderr, res.stderr[-3000:]
    assert (tmp_path / "dump" / "balance.csv").read_bytes() == ref_balance
    assert out.read_bytes() == ref_out, res.stderr[-3000:]


def newest_manifest(st):
    names = [f for f in os.listdir(st) if f.startswith("manifest-") and f.endswith(".json")]
    name = max(names, key=lambda f: int(f.split("-")[1].split(".")[0]))
    return json.loads(open(st / name).read().split("\n#sluice-manifest")[0])


def test_output_counters_include_the_steps_replayed_quietly(tmp_path):
    """A crash three steps past a checkpoint: the restart replays them, the
    first two quietly (their output is already in the file); the final
    manifest's records and bytes of the file output still count them: they
    equal the file's size and the sum of the weights in it (Python's count),
    and the file equals an uninterrupted run's."""
    rows = 600_000
    _, ref_out = reference(tmp_path, rows)
    prog, out = bank_program(tmp_path, rows)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", STEP_ROWS,
            "--storage", st, "--checkpoint-interval", "0"]
    crash(args, "after-step:18", every=5)  # checkpoint at 15; journal 16, 17, 18
    res = finish(args)
    assert "3 journaled steps to replay" in res.stderr, res.stderr[-3000:]
    data = out.read_bytes()
    assert data == ref_out
    weights = sum(abs(int(line.rsplit(b",", 1)[1])) for line in data.splitlines())
    o = newest_manifest(st)["outputs"][0]
    assert (o["records"], o["bytes"], o["offset"]) == (weights, len(data), len(data)), o

"""The pipeline manager (`sluice serve`, docs/manager.md; issue 18 item 1).

Each test starts a manager on a free loopback port with its own directory
and always stops it (SIGTERM) and every pipeline process it started. The
bank-like program's balances are checked against Python's own sums over
the rows the test pushed through the manager's proxy; after the pipeline
process is killed with -9 the manager restarts it from its storage and
the balances equal those of the rows pushed (an uninterrupted run's).
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

import pytest
import requests

from httpkit import Follower
from conftest import REPO, SANITIZER_MARKERS, UBSAN_RE, csv_input, run, sluice_bin, wait_until

BANK = """
CREATE TABLE transfers (
    id BIGINT NOT NULL,
    from_account INT NOT NULL,
    to_account INT NOT NULL,
    amount BIGINT NOT NULL
);
CREATE VIEW credits AS
SELECT to_account AS account, sum(amount) AS credits FROM transfers GROUP BY to_account;
CREATE VIEW debits AS
SELECT from_account AS account, sum(amount) AS debits FROM transfers GROUP BY from_account;
CREATE MATERIALIZED VIEW balance AS
SELECT credits.account AS account, credits - debits AS balance
FROM credits, debits WHERE credits.account = debits.account;
"""

FT = {"workers": 2, "storage": True,
      "fault_tolerance": {"model": "exactly_once", "checkpoint_interval_secs": 0}}


def transfers(rng, first, n):
    return [{"id": first + i, "from_account": rng.randint(1, 9), "to_account": rng.randint(1, 9),
             "amount": rng.randint(1, 1000)} for i in range(n)]


def expected_balances(rows):
    cred, deb = {}, {}
    for r in rows:
        cred[r["to_account"]] = cred.get(r["to_account"], 0) + r["amount"]
        deb[r["from_account"]] = deb.get(r["from_account"], 0) + r["amount"]
    return {a: cred[a] - deb[a] for a in cred if a in deb}


def processes_using(path):
    pids = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and str(path).encode() in open("/proc/%s/cmdline" % pid,
                                                            "rb").read():
                stat = open("/proc/%s/stat" % pid).read()
                if stat[stat.rindex(")") + 2] not in "ZX":
                    pids.append(int(pid))
        except (OSError, ValueError):
            pass
    return pids


def wait_checkpoint(m, name, seq, pid):
    """Wait for /checkpoint_status (through the proxy) to report request seq
    of process pid complete. Request numbers are the process's own, so a
    restart meanwhile fails at once, as does a failure of this request
    (with its reason); a hang says what the status last showed."""
    seen = {}

    def done():
        j = m.get(name)
        assert j["pid"] == pid, "the pipeline restarted while checkpoint %d was pending " \
            "(pid %s, then %s: %s)" % (seq, pid, j["pid"], j.get("last_error"))
        r = requests.get(m.url("/v0/pipelines/%s/checkpoint_status" % name), timeout=60)
        assert r.status_code == 200, r.text
        st = seen["status"] = r.json()
        f = st.get("failure")
        if f and f["sequence_number"] >= seq:
            pytest.fail("checkpoint %d failed: %s" % (seq, f["error"]))
        return (st.get("success") or -1) >= seq
    wait_until(done, lambda: "checkpoint %d through the proxy (last status %s)" % (
        seq, json.dumps(seen.get("status"))))


class Prefixed:
    """A pipeline's own API through the manager, for httpkit.Follower."""

    def __init__(self, m, name):
        self.m, self.name = m, name

    def url(self, path):
        return self.m.url("/v0/pipelines/%s%s" % (self.name, path))


class Manager:
    def __init__(self, d, extra=()):
        self.dir = d
        self.err_path = os.path.join(os.path.dirname(str(d)), "manager-%d.stderr" % time.monotonic_ns())
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        errf = open(self.err_path, "wb")
        self.proc = subprocess.Popen(
            [sluice_bin(), "serve", "--dir", str(d), "--http", "127.0.0.1:0", "--grace", "5"]
            + list(extra), stdout=subprocess.DEVNULL, stderr=errf, env=env)
        errf.close()

        def port():
            text = self.stderr()
            m = re.search(r"sluice: manager: listening on 127\.0\.0\.1:(\d+)", text)
            if not m and self.proc.poll() is not None:
                pytest.fail("the manager exited (%d):\n%s" % (self.proc.returncode, text))
            return int(m.group(1)) if m else None
        self.port = wait_until(port, "the manager printing its port", poll=0.01)
        self.base = "http://127.0.0.1:%d" % self.port

    def stderr(self):
        return open(self.err_path, "rb").read().decode("utf-8", "replace")

    def url(self, path):
        return self.base + path

    def get(self, name):
        r = requests.get(self.url("/v0/pipelines/" + name), timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    def wait_state(self, name, state):
        return wait_until(lambda: (lambda j: j if j["state"] == state else None)(self.get(name)),
                          "pipeline %s reaching %s" % (name, state))

    def put(self, name, program, rc=None, status=201):
        body = {"program_code": program}
        if rc is not None:
            body["runtime_config"] = rc
        r = requests.put(self.url("/v0/pipelines/" + name), json=body, timeout=120)
        assert r.status_code == status, r.text
        return r.json()

    def post(self, name, verb, status=202):
        r = requests.post(self.url("/v0/pipelines/%s/%s" % (name, verb)), timeout=120)
        assert r.status_code == status, r.text
        return r.json()

    def push(self, name, table, rows):
        body = "".join(json.dumps(r) + "\n" for r in rows)
        r = requests.post(self.url("/v0/pipelines/%s/ingress/%s" % (name, table)),
                          params={"format": "json", "wait": "true"}, data=body, timeout=120)
        assert r.status_code == 200, r.text
        return r.json()

    def balances(self, name):
        r = requests.get(self.url("/v0/pipelines/%s/query" % name),
                         params={"sql": "SELECT account, balance FROM balance", "format": "json"},
                         timeout=120)
        assert r.status_code == 200, r.text
        rows = [json.loads(l) for l in r.text.splitlines() if l.strip()]
        return {row["account"]: row["balance"] for row in rows}

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                pytest.fail("the manager did not stop on SIGTERM:\n" + self.stderr()[-3000:])
        text = self.stderr()
        for m in SANITIZER_MARKERS:
            assert m not in text, text[-4000:]
        assert not UBSAN_RE.search(text), text[-4000:]
        return self.proc.returncode


def process_report(pid):
    """A live process's state for a hang's report: its status line, where
    each thread waits in the kernel, and (gdb installed) every thread's
    stack. A checkpoint child is a fork of its pipeline: same command line."""
    out = []
    try:
        stat = open("/proc/%d/stat" % pid).read()
        out.append("pid %d ppid %s state %s: %s" % (
            pid, stat[stat.rindex(")") + 2:].split()[1], stat[stat.rindex(")") + 2],
            open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode()))
        for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
            t = "/proc/%d/task/%s/" % (pid, tid)
            out.append("  thread %s %s wchan %s" % (tid, open(t + "comm").read().strip(),
                                                    open(t + "wchan").read().strip()))
    except (OSError, ValueError, IndexError):
        return "pid %d: gone\n" % pid
    if shutil.which("gdb"):
        try:
            g = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex",
                                "thread apply all bt 30"], capture_output=True, timeout=60)
            out.append(g.stdout.decode("utf-8", "replace")[-12000:])
        except subprocess.TimeoutExpired:
            out.append("  (gdb did not finish)")
    return "\n".join(out) + "\n"


def keep_artifacts(request, tmp_path, started):
    """After a failed test: the processes still on its directory (state,
    stacks), each manager's stderr and each pipeline's log (its stderr and
    stdout, supervise.c) printed and copied to
    build/test-artifacts/manager/<test>/. Called before the processes are
    stopped, and again for the logs once they are."""
    dest = os.path.join(REPO, "build", "test-artifacts", "manager",
                        re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name))
    os.makedirs(dest, exist_ok=True)

    def keep(name, text):
        with open(os.path.join(dest, name), "w") as f:
            f.write(text)
        print("===== %s (kept in %s) =====\n%s" % (name, dest, text[-20000:]))
    procs = "".join(process_report(pid) for pid in processes_using(tmp_path / "mgr"))
    keep("processes.txt", procs or "(no process left on the directory)\n")

    def logs():
        for i, m in enumerate(started):
            keep("manager-%d.stderr" % i, m.stderr())
        for root, _, files in os.walk(str(tmp_path / "mgr")):
            if "log" in files:
                keep("pipeline-%s.log" % os.path.basename(root),
                     open(os.path.join(root, "log"), "rb").read().decode("utf-8", "replace"))
    return logs


@pytest.fixture
def manager(request, tmp_path):
    started = []

    def start(extra=()):
        m = Manager(tmp_path / "mgr", extra)
        started.append(m)
        return m
    yield start
    failed = getattr(getattr(request.node, "rep_call", None), "failed", False)
    logs = keep_artifacts(request, tmp_path, started) if failed else None
    try:
        for m in started:
            m.stop()
    finally:
        if logs:
            logs()
    for pid in processes_using(tmp_path / "mgr"):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not processes_using(tmp_path / "mgr"), "pipeline processes ending")
    for root, _, files in os.walk(str(tmp_path / "mgr")):
        if "log" in files:
            text = open(os.path.join(root, "log"), "rb").read().decode("utf-8", "replace")
            for mk in SANITIZER_MARKERS:
                assert mk not in text, text[-4000:]
            assert not UBSAN_RE.search(text), text[-4000:]


def test_bank_through_the_proxy_survives_kill_9(manager):
    m = manager()
    j = m.put("bank", BANK, FT)
    assert j["state"] == "STOPPED" and j["runtime_config"]["workers"] == 2
    m.post("bank", "start")
    j = m.wait_state("bank", "RUNNING")
    assert j["restart_count"] == 0 and j["pid"] and j["port"]
    # the child's own port needs its key: the manager's gate is not bypassed
    r = requests.get("http://127.0.0.1:%d/stats" % j["port"], timeout=60)
    assert r.status_code == 401, r.text
    rng = random.Random(18)
    rows = transfers(rng, 0, 400)
    assert m.push("bank", "transfers", rows)["accepted"] == 400
    assert m.balances("bank") == expected_balances(rows)
    # the pipeline's own errors pass through with their status and body
    r = requests.get(m.url("/v0/pipelines/bank/query"), params={"sql": "SELECT nope FROM balance"},
                     timeout=60)
    assert r.status_code == 400 and "nope" in r.json()["error"], r.text
    r = requests.post(m.url("/v0/pipelines/bank/ingress/nosuch"), data="{}", timeout=60)
    assert r.status_code == 404 and r.json()["error_code"] == "UnknownTable", r.text

    old = j["pid"]
    t0 = time.monotonic()
    os.kill(old, signal.SIGKILL)
    r = requests.get(m.url("/v0/pipelines/bank/stats"), timeout=60)
    assert r.status_code in (200, 503)  # 503 JSON while it is down
    if r.status_code == 503:
        assert r.json()["error_code"] == "PipelineUnavailable"
    j = wait_until(lambda: (lambda x: x if x["state"] == "RUNNING" and x["restart_count"] == 1
                            else None)(m.get("bank")), "bank restarted and RUNNING")
    took = time.monotonic() - t0
    print("kill -9 to RUNNING: %.2f s" % took)
    assert j["pid"] != old
    # the manager's own record of the transitions (not a race with polling)
    states = [h["state"] for h in j["state_history"]]
    assert states[-3:] == ["RUNNING", "UNAVAILABLE", "RUNNING"], states
    ats = [h["at_ms"] for h in j["state_history"]]
    print("UNAVAILABLE to RUNNING (manager's record): %d ms" % (ats[-1] - ats[-2]))
    assert "signal 9" in j["last_error"]
    # where it left off: every pushed row, none twice
    assert m.balances("bank") == expected_balances(rows)
    # a second death soon after: the backoff doubled (1 s before the restart)
    os.kill(j["pid"], signal.SIGKILL)
    j = wait_until(lambda: (lambda x: x if x["state"] == "RUNNING" and x["restart_count"] == 2
                            else None)(m.get("bank")), "bank restarted a second time")
    h = j["state_history"]
    assert [x["state"] for x in h[-2:]] == ["UNAVAILABLE", "RUNNING"]
    assert h[-1]["at_ms"] - h[-2]["at_ms"] >= 1000, h
    assert m.balances("bank") == expected_balances(rows)
    # a change stream through the proxy: the snapshot, then the next step's changes
    follower = Follower(Prefixed(m, "bank"), "balance", snapshot="true")
    more = transfers(rng, 400, 300)
    m.push("bank", "transfers", more)
    assert m.balances("bank") == expected_balances(rows + more)

    def streamed():
        net = {}
        for chunk in list(follower.chunks):
            for change in chunk.get("json_data", []):
                for op, sign in (("insert", 1), ("delete", -1)):
                    if op in change:
                        k = (change[op]["account"], change[op]["balance"])
                        net[k] = net.get(k, 0) + sign
        return {a: b for (a, b), w in net.items() if w}
    wait_until(lambda: streamed() == expected_balances(rows + more),
               "the proxied change stream reaching the balances")
    r = requests.get(m.url("/v0/pipelines/bank/stats"), timeout=60)
    assert r.status_code == 200 and "application/json" in r.headers["Content-Type"]
    r = requests.get(m.url("/v0/pipelines/bank/metrics"), timeout=60)
    assert r.status_code == 200 and "sluice_" in r.text
    # a transaction and a checkpoint through the proxy
    pb = "/v0/pipelines/bank/"
    assert requests.post(m.url(pb + "start_transaction"), timeout=60).status_code == 200
    last = transfers(rng, 700, 20)
    r = requests.post(m.url(pb + "ingress/transfers"), params={"format": "json"},
                      data="".join(json.dumps(x) + "\n" for x in last), timeout=60)
    assert r.status_code == 200 and r.json()["accepted"] == 20, r.text
    assert requests.post(m.url(pb + "commit_transaction"), timeout=60).status_code == 200
    wait_until(lambda: m.balances("bank") == expected_balances(rows + more + last),
               "the committed transaction's rows in the balances")
    more += last
    r = requests.post(m.url(pb + "checkpoint"), timeout=60)
    assert r.status_code == 200, r.text
    wait_checkpoint(m, "bank", r.json()["checkpoint_sequence_number"], j["pid"])

    m.post("bank", "pause")
    m.wait_state("bank", "PAUSED")
    m.post("bank", "start")
    m.wait_state("bank", "RUNNING")
    r = requests.delete(m.url("/v0/pipelines/bank"), timeout=60)
    assert r.status_code == 409 and r.json()["error_code"] == "CannotDeleteNonShutdownPipeline"
    j = m.post("bank", "stop", status=200)
    assert j["state"] == "STOPPED" and j["pid"] is None
    follower.join()  # the stream ended with the pipeline
    assert not processes_using(os.path.join(str(m.dir), "bank"))
    r = requests.get(m.url("/v0/pipelines/bank/query"), params={"sql": "SELECT 1"}, timeout=60)
    assert r.status_code == 503 and r.json()["details"]["state"] == "STOPPED"
    # stopping kept the storage: started again, the balances are still there
    m.post("bank", "start")
    m.wait_state("bank", "RUNNING")
    assert m.balances("bank") == expected_balances(rows + more)
    m.post("bank", "stop", status=200)
    assert requests.delete(m.url("/v0/pipelines/bank"), timeout=60).status_code == 200
    r = requests.get(m.url("/v0/pipelines/bank"), timeout=60)
    assert r.status_code == 404 and r.json()["error_code"] == "UnknownPipeline"
    assert not os.path.exists(os.path.join(str(m.dir), "bank"))


def test_manager_restart_keeps_pipelines_and_adopts_none_twice(manager, tmp_path):
    m = manager()
    m.put("bank", BANK, FT)
    m.put("idle", BANK, {"storage": False})
    m.post("bank", "start")
    m.wait_state("bank", "RUNNING")
    rows = transfers(random.Random(7), 0, 200)
    m.push("bank", "transfers", rows)
    assert m.stop() == 0
    assert not processes_using(tmp_path / "mgr")  # SIGTERM stopped the children

    m = manager()
    names = sorted(p["name"] for p in requests.get(m.url("/v0/pipelines"), timeout=60).json())
    assert names == ["bank", "idle"]
    assert m.get("idle")["state"] == "STOPPED"
    j = m.wait_state("bank", "RUNNING")
    assert m.balances("bank") == expected_balances(rows)
    # pause from STOPPED starts it paused; a restarted manager keeps it so
    m.post("idle", "pause")
    m.wait_state("idle", "PAUSED")
    r = requests.get(m.url("/v0/pipelines/idle/stats"), timeout=60)
    assert r.status_code == 200 and r.json()["global_metrics"]["state"] == "paused", r.text
    m.stop()
    m = manager()
    m.wait_state("idle", "PAUSED")
    j = m.wait_state("bank", "RUNNING")
    # start while it may still be starting paused: it ends up running
    m.post("idle", "stop", status=200)
    m.post("idle", "pause")
    m.post("idle", "start")
    m.wait_state("idle", "RUNNING")
    wait_until(lambda: requests.get(m.url("/v0/pipelines/idle/stats"), timeout=60)
               .json()["global_metrics"]["state"] == "running", "idle's own state running")

    # a manager killed with -9 leaves its child; the next one ends it and
    # starts the pipeline again: one process on the storage, not two
    m.stop(signal.SIGKILL)
    assert j["pid"] in processes_using(tmp_path / "mgr" / "bank")
    m = manager()
    j2 = m.wait_state("bank", "RUNNING")
    assert j2["pid"] != j["pid"]
    assert processes_using(tmp_path / "mgr" / "bank" / "program.sql") == [j2["pid"]]
    assert m.balances("bank") == expected_balances(rows)


def test_compile_error_has_line_and_column_and_bad_start_fails(manager, tmp_path):
    m = manager()
    bad = "CREATE TABLE t (x INT);\n\nCREATE VIEW v AS SELECT y FROM t;\n"
    r = requests.put(m.url("/v0/pipelines/p"), json={"program_code": bad}, timeout=60)
    assert r.status_code == 400, r.text
    e = r.json()
    assert e["error_code"] == "ProgramError"
    err = e["details"]["errors"][0]
    assert err["line"] == 3 and err["column"] == bad.splitlines()[2].index("y") + 1
    assert requests.get(m.url("/v0/pipelines/p"), timeout=60).status_code == 404

    # compiles, but its input file does not exist: three starts, then FAILED
    prog = "CREATE TABLE t (x INT) %s;\nCREATE MATERIALIZED VIEW v AS SELECT x FROM t;\n" % (
        csv_input(tmp_path / "missing.csv"))
    m.put("p", prog)
    m.post("p", "start")
    j = m.wait_state("p", "FAILED")
    assert "missing.csv" in j["last_error"] and j["pid"] is None
    r = requests.get(m.url("/v0/pipelines/p/logs"), timeout=60)
    assert r.status_code == 200 and r.text.count("--- manager: started") == 3, r.text
    assert r.text.count("missing.csv") >= 3
    # the file appears: start tries again and it runs
    (tmp_path / "missing.csv").write_text("1\n2\n3\n")
    m.post("p", "start")
    m.wait_state("p", "RUNNING")
    r = requests.get(m.url("/v0/pipelines/p/query"), params={"sql": "SELECT sum(x) AS s FROM v",
                                                             "format": "json"}, timeout=60)
    assert r.status_code == 200 and json.loads(r.text) == {"s": 6}, r.text
    # replaced once stopped; its old program's storage refuses the new one,
    # so the replacement keeps no storage
    m.post("p", "stop", status=200)
    m.put("p", prog.replace("SELECT x FROM", "SELECT x * 10 AS x FROM"), {"storage": False},
          status=200)
    m.post("p", "start")
    m.wait_state("p", "RUNNING")
    r = requests.get(m.url("/v0/pipelines/p/query"), params={"sql": "SELECT sum(x) AS s FROM v",
                                                             "format": "json"}, timeout=60)
    assert r.status_code == 200 and json.loads(r.text) == {"s": 60}, r.text
    m.post("p", "stop", status=200)

    # the client subcommands
    f = tmp_path / "bank.sql"
    f.write_text(BANK)
    res = run(["create", m.base, "cli", str(f), "--workers", "1", "--storage", "none"])
    assert res.returncode == 0, res.stderr
    res = run(["start", m.base, "cli", "--wait"])
    assert res.returncode == 0 and "RUNNING" in res.stdout, res.stderr
    res = run(["list", m.base])
    assert re.search(r"^cli\s+RUNNING", res.stdout, re.M), res.stdout
    assert re.search(r"^p\s+STOPPED", res.stdout, re.M), res.stdout
    res = run(["status", m.base, "cli"])
    assert json.loads(res.stdout)["state"] == "RUNNING"
    # query and push through the manager: the pipeline's path as the URL
    rows = transfers(random.Random(3), 0, 50)
    data = tmp_path / "rows.json"
    data.write_text("".join(json.dumps({"insert": r}) + "\n" for r in rows))
    piped = m.base + "/v0/pipelines/cli"
    res = run(["push", piped, "transfers", str(data), "--wait"])
    assert res.returncode == 0 and "pushed 50 records" in res.stdout, res.stderr
    res = run(["query", piped, "SELECT account, balance FROM balance", "--format", "json"])
    assert res.returncode == 0, res.stderr
    got = {r["account"]: r["balance"] for r in map(json.loads, res.stdout.split())}
    assert got == expected_balances(rows)
    res = run(["stop", m.base, "cli"])
    assert res.returncode == 0 and "STOPPED" in res.stdout, res.stderr
    res = run(["delete", m.base, "cli"])
    assert res.returncode == 0, res.stderr
    f.write_text(bad)
    res = run(["create", m.base, "cli", str(f)])
    assert res.returncode == 1 and "line 3, column" in res.stderr, res.stderr


def test_hostile_requests_get_json_4xx(manager):
    m = manager(["--max-body", "100000"])

    def check(r, status, code=None):
        assert r.status_code == status or (status == "4xx" and 400 <= r.status_code < 500), (
            r.status_code, r.text)
        j = r.json()
        assert "error" in j
        if code:
            assert j["error_code"] == code, j

    s = requests.Session()
    for name in ("a%20b", "x" * 101, "-x", ".x", "a.b", "a%2Eb"):
        check(s.put(m.url("/v0/pipelines/" + name), json={"program_code": BANK}, timeout=60),
              400, "InvalidName")
    for name in ("..%2Fx", "..%2F..%2Fetc", "%00"):  # decoded first: never a name
        check(s.put(m.url("/v0/pipelines/" + name), json={"program_code": BANK}, timeout=60),
              "4xx")
    assert sorted(os.listdir(str(m.dir))) == ["manager.lock"]
    raw = requests.Request("GET", m.url("/v0/pipelines/../../etc/passwd")).prepare()
    raw.url = m.url("/v0/pipelines/../../etc/passwd")
    r = s.send(raw, timeout=60)
    assert r.status_code in (400, 404) and r.json()["error"]
    check(s.put(m.url("/v0/pipelines/p"), data="{not json", timeout=60), 400, "InvalidJson")
    check(s.put(m.url("/v0/pipelines/p"), json=[1, 2], timeout=60), 400, "InvalidPipeline")
    check(s.put(m.url("/v0/pipelines/p"), json={"program_code": BANK, "runtime_config":
                                                  {"workers": "many"}}, timeout=60),
          400, "InvalidPipeline")
    check(s.put(m.url("/v0/pipelines/p"), json={"program_code": BANK, "runtime_config":
                                                  {"wrokers": 2}}, timeout=60),
          400, "InvalidPipeline")
    check(s.put(m.url("/v0/pipelines/p"), json={"program": BANK}, timeout=60),
          400, "InvalidPipeline")
    check(s.put(m.url("/v0/pipelines/p"), data="x" * 300000, timeout=60), 413, "PayloadTooLarge")
    check(s.get(m.url("/v1/pipelines"), timeout=60), 404, "NotFound")
    check(s.get(m.url("/nope"), timeout=60), 404, "NotFound")
    assert "text/html" in s.get(m.url("/"), timeout=60).headers["Content-Type"]  # the console
    check(s.patch(m.url("/v0/pipelines"), timeout=60), 405, "MethodNotAllowed")
    check(s.get(m.url("/v0/pipelines/p/start"), timeout=60), 405, "MethodNotAllowed")
    check(s.post(m.url("/v0/pipelines/nope/start"), timeout=60), 404, "UnknownPipeline")
    check(s.get(m.url("/v0/pipelines/nope/stats"), timeout=60), 404, "UnknownPipeline")
    check(s.get(m.url("/v0/pipelines"), headers={"Host": "evil.example:80"}, timeout=60),
          403, "HostNotAllowed")
    m.put("p", BANK, {"storage": False})
    check(s.post(m.url("/v0/pipelines/p/stop"), headers={"Origin": "http://evil.example"},
                 timeout=60), 403, "OriginNotAllowed")
    check(s.get(m.url("/v0/pipelines/p/stats"), timeout=60), 503, "PipelineUnavailable")
    assert s.get(m.url("/v0/pipelines"), timeout=60).status_code == 200


def test_api_keys_guard_the_manager(manager, tmp_path):
    m = manager(["--api-key", "k1", "--api-key-ro", "r1"])
    r = requests.get(m.url("/v0/pipelines"), timeout=60)
    assert r.status_code == 401 and r.json()["error_code"] == "Unauthorized"
    r = requests.get(m.url("/v0/pipelines"), headers={"Authorization": "Bearer r1"}, timeout=60)
    assert r.status_code == 200 and r.json() == []
    r = requests.put(m.url("/v0/pipelines/p"), json={"program_code": BANK},
                     headers={"Authorization": "Bearer r1"}, timeout=60)
    assert r.status_code == 403 and r.json()["error_code"] == "ReadOnlyKey"
    f = tmp_path / "bank.sql"
    f.write_text(BANK)
    res = run(["create", m.base, "p", str(f), "--api-key", "k1", "--storage", "none"])
    assert res.returncode == 0, res.stderr
    res = run(["list", m.base])
    assert res.returncode == 1 and "API key" in res.stderr
    res = run(["list", m.base, "--api-key", "r1"])
    assert res.returncode == 0 and re.search(r"^p\s+STOPPED", res.stdout, re.M), res.stdout


def test_checkpoint_timeout_reaches_the_pipeline(manager, tmp_path, monkeypatch):
    # runtime_config.fault_tolerance.checkpoint_timeout_secs is passed on as
    # --checkpoint-timeout: a checkpoint child held (SLUICE_CKPT_HOLD, debug
    # builds) is killed past it and the checkpoint fails saying so
    hold = tmp_path / "hold"
    hold.mkdir()
    monkeypatch.setenv("SLUICE_CKPT_HOLD", str(hold))
    m = manager()
    rc = {"storage": True, "fault_tolerance": {"model": "exactly_once",
                                               "checkpoint_interval_secs": 0,
                                               "checkpoint_timeout_secs": "soon"}}
    j = m.put("bank", BANK, rc, status=400)
    assert "checkpoint_timeout_secs" in json.dumps(j), j
    rc["fault_tolerance"]["checkpoint_timeout_secs"] = 0.5
    j = m.put("bank", BANK, rc)
    assert j["runtime_config"]["fault_tolerance"]["checkpoint_timeout_secs"] == 0.5, j
    assert m.put("other", BANK, {"storage": True})["runtime_config"]["fault_tolerance"][
        "checkpoint_timeout_secs"] == 3600
    m.post("bank", "start")
    j = m.wait_state("bank", "RUNNING")
    m.push("bank", "transfers", transfers(random.Random(3), 0, 50))
    (hold / "hold").touch()
    try:
        r = requests.post(m.url("/v0/pipelines/bank/checkpoint"), timeout=60)
        assert r.status_code == 200, r.text
        seq = r.json()["checkpoint_sequence_number"]

        def failed():
            assert m.get("bank")["pid"] == j["pid"]
            st = requests.get(m.url("/v0/pipelines/bank/checkpoint_status"), timeout=60).json()
            f = st.get("failure")
            return f if f and f["sequence_number"] >= seq else None
        f = wait_until(failed, "the held checkpoint failing")
        assert "ran longer than the checkpoint timeout of 0.5 s" in f["error"], f
    finally:
        (hold / "hold").unlink()

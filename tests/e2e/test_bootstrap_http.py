"""Bootstrapping over a table fed over HTTP only (issue 17; docs/bootstrapping.md,
"Tables fed over HTTP"): WITH ('retain_input' = 'true') keeps the table's
contents (its integrated rows) in the checkpoint, so a new or changed view
that needs its whole history is computed from them: nothing is read again,
the ingress log may have been pruned long ago.

Every case pushes inserts, deletes and updates (a delete and an insert in
one request) over several requests and checkpoints (each taken and waited
for, so the ingress log's old segments are pruned: the test checks that
the segments that held the first rows pushed are deleted), stops, and restarts
with a program that adds views over the table and changes one; more rows
are pushed after the bootstrap. The final dumps must equal a from-scratch
run of the new program over the same pushes (byte for byte), and each
view must equal SQLite's answer over the table's final rows. Also: a
table WITH ('materialized' = 'true') needs no setting; the diff of each
case; adding and removing the setting on an existing table; kill -9 inside
the bootstrap step; --hosts 2 with two workers per host."""
import json
import os
import random
import shutil
import sqlite3
import subprocess

import pytest
import requests

from conftest import read_dump, run, sluice_bin, wait_until
from test_bootstrap_hosts import sluice_run

needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None,
                               reason="mpirun (Open MPI) is not installed")

OLD_VIEWS = [
    "CREATE MATERIALIZED VIEW tot AS SELECT g, SUM(v) AS s, COUNT(*) AS n FROM ev GROUP BY g;",
    "CREATE MATERIALIZED VIEW big AS SELECT k, g, v FROM ev WHERE v > 60;",
]
NEW_VIEWS = [
    OLD_VIEWS[0],
    "CREATE MATERIALIZED VIEW big AS SELECT k, g, v FROM ev WHERE v > 30;",  # changed
    "CREATE MATERIALIZED VIEW per_k AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(g) AS mg "
    "FROM ev GROUP BY k;",
    "CREATE MATERIALIZED VIEW gs AS SELECT DISTINCT g FROM ev;",
    "CREATE MATERIALIZED VIEW pairs AS SELECT a.k AS k, b.v AS v FROM ev a JOIN ev b "
    "ON a.g = b.k WHERE a.v < 20;",
]
# the queries in SQLite's dialect, per view
SQLITE = {
    "tot": "SELECT g, SUM(v), COUNT(*) FROM ev GROUP BY g",
    "big": "SELECT k, g, v FROM ev WHERE v > 30",
    "per_k": "SELECT k, COUNT(*), SUM(v), MAX(g) FROM ev GROUP BY k",
    "gs": "SELECT DISTINCT g FROM ev",
    "pairs": "SELECT a.k, b.v FROM ev a JOIN ev b ON a.g = b.k WHERE a.v < 20",
}


def table(prop):
    w = " WITH ('%s' = 'true')" % prop if prop else ""
    return "CREATE TABLE ev (k INT, g INT, v BIGINT)%s;" % w


def program(prop, views):
    return "\n".join([table(prop)] + views) + "\n"


class Pushes:
    """The requests pushed to ev, in order (JSON lines), and the table's
    rows after them (a multiset), computed here."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.rows = []
        self.bodies = []
        self.nid = 0

    def batch(self, n_ins=40, n_del=8, n_upd=8):
        recs = []
        for _ in range(n_ins):
            row = (self.nid % 23, self.r.randint(0, 9), self.r.randint(-20, 100))
            if self.nid == 0:  # a line no later request repeats (v only grows)
                row = (0, 0, 777777)
            self.nid += 1
            self.rows.append(row)
            recs.append({"insert": dict(zip("kgv", row))})
        for _ in range(n_del):
            row = self.rows.pop(self.r.randrange(len(self.rows)))
            recs.append({"delete": dict(zip("kgv", row))})
        for _ in range(n_upd):  # an update: the old row out, the changed row in
            i = self.r.randrange(len(self.rows))
            old = self.rows[i]
            new = (old[0], old[1], old[2] + self.r.randint(1, 50))
            self.rows[i] = new
            recs.append({"delete": dict(zip("kgv", old))})
            recs.append({"insert": dict(zip("kgv", new))})
        body = "".join(json.dumps(x) + "\n" for x in recs)
        self.bodies.append(body)
        return body


def push(p, body):
    r = requests.post(p.url("/ingress/ev"), params={"wait": "true"}, data=body, timeout=120)
    assert r.status_code == 200, r.text


def checkpoint(p):
    seq = requests.post(p.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]

    def done():
        st = requests.get(p.url("/checkpoint_status"), timeout=60).json()
        return st if st["success"] is not None and st["success"] >= seq else None
    return wait_until(done, "checkpoint %d completing" % seq)


def ingress_segments(st):
    """The ingress log segments in storage directory st (ft_int.h:
    ingress-<seq>-<uniq>.log)."""
    return {f for _, _, fs in os.walk(st) for f in fs
            if f.startswith("ingress-") and f.endswith(".log")}


def dumps(d):
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))}


def check_sqlite(d, rows):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE ev (k INTEGER, g INTEGER, v INTEGER)")
    db.executemany("INSERT INTO ev VALUES (?, ?, ?)", rows)
    for view, q in SQLITE.items():
        _, got = read_dump(d / ("%s.csv" % view))
        want = sorted(tuple(str(x) for x in r) for r in db.execute(q))
        assert sorted(tuple(r) for r in got) == want, view


def kill_job(pid):
    """kill -9 of a pipeline and, with --hosts, of its whole job: killing
    the launcher alone lets mpirun stop the hosts with SIGTERM, which is a
    clean stop (a final checkpoint), not a crash."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open("/proc/%s/stat" % d).read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    tree, pending = [], [pid]
    while pending:
        q = pending.pop()
        tree.append(q)
        pending.extend(kids.get(q, []))
    for q in reversed(tree):
        try:
            os.kill(q, 9)
        except ProcessLookupError:
            pass


def wait_for_hosts_to_exit(st):
    """kill -9 of a --hosts launcher ends its job through mpirun, which
    signals the host processes: they may outlive the launcher for a moment,
    holding the storage lock. Wait until the lock's holder (pid in LOCK)
    is gone, as a user restarting the job would."""
    def gone():
        try:
            pid = int((st / "LOCK").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return True
        try:
            return open("/proc/%d/stat" % pid).read().split(") ")[1][0] == "Z"
        except OSError:
            return True
    wait_until(gone, "the killed job's host processes to exit", poll=0.05)


def old_run(http_pipeline, tmp, prop, pushes, args=(), kill=False):
    """The old program over 4 pushes with a checkpoint after each; the
    first rows pushed are gone from the ingress log by the end. kill: one
    more push (acknowledged: in the ingress log), then kill -9 before any
    checkpoint holds it."""
    st = tmp / "st"
    p = http_pipeline(program(prop, OLD_VIEWS), "--storage", st, "--checkpoint-interval", "0",
                      *args, name="old")
    first = None
    for i in range(4):
        push(p, pushes.batch())
        if first is None:  # the segments holding the first request, for now
            first = ingress_segments(st)
            assert first
        checkpoint(p)
    if kill:
        push(p, pushes.batch())
        kill_job(p.proc.pid)  # the launcher, mpirun and every host at once
        p.proc.wait()
        wait_for_hosts_to_exit(st)
    else:
        p.stop()
    # the segments that held the first request's rows are deleted:
    # without the setting, nothing could give them back
    assert not first & ingress_segments(st), (first, ingress_segments(st))
    return st


def new_run(http_pipeline, tmp, prop, pushes, st, args=(), name="new", after=2):
    d = tmp / ("dump-" + name)
    p = http_pipeline(program(prop, NEW_VIEWS), "--storage", st, "--checkpoint-interval", "0",
                      "--bootstrap", "allow", "--dump", d, *args, name=name)
    for i in range(after):
        push(p, pushes.batch())
        if i == 0:
            checkpoint(p)
    res = p.stop()
    return d, res


def fresh_run(http_pipeline, tmp, pushes, args=()):
    """The new program from scratch over the same pushes, in the same order."""
    d = tmp / "dump-fresh"
    p = http_pipeline(program(None, NEW_VIEWS), "--dump", d, *args, name="fresh")
    for body in pushes.bodies:
        push(p, body)
    p.stop()
    return d


def check_against_fresh(d, ref):
    got, want = dumps(d), dumps(ref)
    assert set(want) <= set(got)
    for n in want:
        assert got[n] == want[n], "%s differs from a fresh run's" % n


@pytest.mark.parametrize("prop", ["retain_input", "materialized"])
def test_new_and_changed_views_over_an_http_table(http_pipeline, tmp_path, prop):
    """retain_input: the table's rows are kept for this; materialized
    (already so before retain_input existed): its contents are kept
    anyway, and a new view over it needs no setting."""
    pushes = Pushes(5)
    st = old_run(http_pipeline, tmp_path, prop, pushes, ("--workers", 2))
    # the diff: the table is re-readable, the views computed from stored state
    newp = tmp_path / "new_diff.sql"
    newp.write_text(program(prop, NEW_VIEWS))
    p = run(["diff", "--storage", st, newp])
    assert p.returncode == 0, p.stderr
    assert "bootstrapping refuses" not in p.stdout, p.stdout
    if prop == "retain_input":
        assert "input retained: re-readable" in p.stdout, p.stdout
    for v in ("per_k", "gs", "pairs", "big"):
        line = [l for l in p.stdout.splitlines() if l.startswith(v + " ")][0]
        assert "recomputed from stored state" in line, line
    j = json.loads(run(["diff", "--storage", st, newp, "--format", "json"]).stdout)
    ev = [r for r in j["relations"] if r["name"] == "ev"][0]
    assert ev["status"] == "unchanged" and ev["action"] == "keep"
    assert ev["http_input_only"] and "reread_refused" not in ev
    assert ev["retain_input"] == (prop == "retain_input")

    d, res = new_run(http_pipeline, tmp_path, prop, pushes, st, ("--workers", 3))
    assert "computed from stored state in 1 step" in res.stderr, res.stderr[-3000:]
    assert "; 0 rows read again" in res.stderr
    ref = fresh_run(http_pipeline, tmp_path, pushes)
    check_against_fresh(d, ref)
    check_sqlite(d, pushes.rows)


def test_without_the_setting_it_is_refused(http_pipeline, tmp_path):
    """The same history without retain_input: refused, naming the table
    and the way out; the storage is left as it was."""
    pushes = Pushes(6)
    st = old_run(http_pipeline, tmp_path, None, pushes)
    before = sorted(os.listdir(st))
    newp = tmp_path / "new.sql"
    newp.write_text(program(None, NEW_VIEWS))
    p = run(["run", newp, "--storage", st, "--bootstrap", "allow", "--until-done"])
    assert p.returncode == 1
    assert "HTTP input only" in p.stderr and "'retain_input' = 'true'" in p.stderr, p.stderr
    assert sorted(os.listdir(st)) == before


def test_adding_and_removing_the_setting(http_pipeline, tmp_path):
    """Adding retain_input to a table with a history: its pushed rows are
    gone, so the diff marks it (changed: retain_input; bootstrapping
    refuses) and the run refuses. Removing it: the table is kept, its
    retained rows released, the views unchanged."""
    pushes = Pushes(7)
    st = old_run(http_pipeline, tmp_path, None, pushes)
    add = tmp_path / "add.sql"
    add.write_text(program("retain_input", OLD_VIEWS))
    p = run(["diff", "--storage", st, add])
    line = [l for l in p.stdout.splitlines() if l.startswith("ev ")][0]
    assert "changed" in line and "retain_input" in line and "bootstrapping refuses" in line, line
    j = json.loads(run(["diff", "--storage", st, add, "--format", "json"]).stdout)
    ev = [r for r in j["relations"] if r["name"] == "ev"][0]
    assert ev["changes"] == ["retain_input"] and "reread_refused" in ev, ev
    p = run(["run", add, "--storage", st, "--bootstrap", "allow", "--until-done"])
    assert p.returncode == 1 and "starts keeping its contents" in p.stderr, p.stderr

    # a storage that had it from the start, then drops it
    pushes = Pushes(8)
    tmp2 = tmp_path / "two"
    tmp2.mkdir()
    st = old_run(http_pipeline, tmp2, "retain_input", pushes)
    drop = tmp2 / "drop.sql"
    drop.write_text(program(None, OLD_VIEWS))
    j = json.loads(run(["diff", "--storage", st, drop, "--format", "json"]).stdout)
    rels = {r["name"]: r for r in j["relations"]}
    assert rels["ev"]["changes"] == ["retain_input"] and rels["ev"]["action"] == "keep"
    assert rels["tot"]["status"] == "unchanged" and rels["big"]["status"] == "unchanged"
    d = tmp2 / "dump"
    q = http_pipeline(program(None, OLD_VIEWS), "--storage", st, "--bootstrap", "allow",
                      "--dump", d, name="drop")
    push(q, pushes.batch())
    q.stop()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE ev (k INTEGER, g INTEGER, v INTEGER)")
    db.executemany("INSERT INTO ev VALUES (?, ?, ?)", pushes.rows)
    _, got = read_dump(d / "tot.csv")
    want = sorted(tuple(str(x) for x in r)
                  for r in db.execute("SELECT g, SUM(v), COUNT(*) FROM ev GROUP BY g"))
    assert sorted(tuple(r) for r in got) == want


def manifest_steps(st):
    ms = [n for n in os.listdir(st) if n.startswith("manifest-")]
    return max(json.loads(open(os.path.join(st, n)).read().split("\n")[0])["step"] for n in ms)


def test_kill_inside_the_bootstrap(http_pipeline, tmp_path):
    """kill -9 right after the bootstrap step: no checkpoint of the new
    program was published, so the next start bootstraps again from the
    old one, and the end is the same as without the kill."""
    pushes = Pushes(9)
    st = old_run(http_pipeline, tmp_path, "retain_input", pushes, ("--workers", 2))
    step = manifest_steps(st)
    newp = tmp_path / "new.sql"
    newp.write_text(program("retain_input", NEW_VIEWS))
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:%d" % (step + 1))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    p = subprocess.run([sluice_bin(), "run", str(newp), "--storage", str(st), "--until-done",
                        "--bootstrap", "allow", "--workers", "2"],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 137, p.stderr.decode()[-3000:]
    assert manifest_steps(st) == step  # the old program's checkpoint is still the newest
    d, res = new_run(http_pipeline, tmp_path, "retain_input", pushes, st, ("--workers", 2))
    assert "bootstrapping:" in res.stderr, res.stderr[-3000:]
    ref = fresh_run(http_pipeline, tmp_path, pushes)
    check_against_fresh(d, ref)
    check_sqlite(d, pushes.rows)


def test_old_program_killed_with_pushes_after_its_checkpoint(http_pipeline, tmp_path):
    """The old program is killed with an acknowledged push after its last
    checkpoint: the bootstrap first settles it (the logged push processed
    by the old program, its retained rows included), then computes the
    new views from the retained rows."""
    pushes = Pushes(11)
    st = old_run(http_pipeline, tmp_path, "retain_input", pushes, kill=True)
    d, res = new_run(http_pipeline, tmp_path, "retain_input", pushes, st)
    assert "1 logged HTTP input" in res.stderr and "bootstrapping:" in res.stderr, \
        res.stderr[-3000:]
    ref = fresh_run(http_pipeline, tmp_path, pushes)
    check_against_fresh(d, ref)
    check_sqlite(d, pushes.rows)


@needs_mpi
def test_two_hosts(http_pipeline, tmp_path):
    """--hosts 2 --workers 4 for both programs: HTTP rows arrive at the
    coordinator and are split over every host's workers, so each host's
    checkpoint keeps its share of the table's rows and feeds its own
    workers from it in the bootstrap step. The old program is killed with
    a push after its checkpoint (settled first), and the bootstrap is
    killed on host 1, then on the coordinator, before it finishes."""
    pushes = Pushes(10)
    hosts = ("--hosts", 2, "--workers", 4)
    st = old_run(http_pipeline, tmp_path, "retain_input", pushes, hosts, kill=True)
    step = manifest_steps(st)
    newp = tmp_path / "new.sql"
    newp.write_text(program("retain_input", NEW_VIEWS))
    args = ["run", newp, "--storage", st, "--until-done", "--bootstrap", "allow"] + list(hosts)
    # settled by the old program (the push after its checkpoint), then
    # host 1 dies right after the bootstrap step
    p = sluice_run(args, env={"SLUICE_CRASH_AT": "after-step:%d@1" % (step + 2)}, expect=137)
    assert "1 logged HTTP input" in p.stderr, p.stderr[-3000:]
    settled = manifest_steps(st)
    assert settled == step + 1
    # then the coordinator, right after the bootstrap step
    sluice_run(args, env={"SLUICE_CRASH_AT": "after-step:%d@0" % (settled + 1)}, expect=137)
    assert manifest_steps(st) == settled  # no checkpoint of the new program yet
    d, res = new_run(http_pipeline, tmp_path, "retain_input", pushes, st, hosts)
    assert "bootstrapping:" in res.stderr, res.stderr[-3000:]
    ref = fresh_run(http_pipeline, tmp_path, pushes)
    check_against_fresh(d, ref)
    check_sqlite(d, pushes.rows)

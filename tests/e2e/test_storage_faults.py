"""Storage faults (issue 13): whatever the disk does — fills up, flips a byte
in the middle of a log, damages a checkpoint file, loses its LOCK file,
holds a manifest whose checksum verifies but whose fields are nonsense —
no acknowledged row is lost silently. The pipeline either keeps every
acknowledged row, or refuses to start with a message naming the file.

Faults come from a real full filesystem (a 2 MB tmpfs, when mounting works
here) and from the SLUICE_FAULT hook in the store's write path. Every test
waits on events (HTTP answers, files, process exit), never on time.
"""
import ctypes
import ctypes.util
import json
import os
import re
import signal
import stat
import subprocess
import time

import pytest
import requests

from conftest import read_dump, run

PROG = """
CREATE TABLE t (id BIGINT NOT NULL, v INT);
CREATE MATERIALIZED VIEW per_id AS SELECT id, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY id;
"""

TWO = """
CREATE TABLE a (id BIGINT NOT NULL, v INT);
CREATE TABLE b (id BIGINT NOT NULL, v INT);
CREATE MATERIALIZED VIEW sa AS SELECT id, SUM(v) AS s FROM a GROUP BY id;
CREATE MATERIALIZED VIEW sb AS SELECT id, SUM(v) AS s FROM b GROUP BY id;
"""


def push(p, ids, table="t", pad=0):
    body = "".join(json.dumps({"insert": {"id": i, "v": 1}}) + (" " * pad) + "\n"
                   for i in ids)
    return requests.post(p.url("/ingress/%s?format=json&wait=true" % table), data=body,
                         timeout=120)


def kill9(p):
    p.proc.send_signal(signal.SIGKILL)
    p.proc.wait()


def final_rows(http_pipeline, tmp_path, storage, prog=PROG, view="per_id", name="final"):
    """Restart on storage, stop cleanly, and return the view's rows."""
    out = tmp_path / ("dump-" + name)
    q = http_pipeline(prog, "--storage", storage, "--dump", out, name=name)
    q.stop()
    _, rows = read_dump(out / ("%s.csv" % view))
    return rows


def assert_exactly(rows, acked, refused=()):
    seen = {}
    for r in rows:
        seen[int(r[0])] = seen.get(int(r[0]), 0) + int(r[1])
    missing = sorted(set(acked) - set(seen))
    assert not missing, "acknowledged ids lost: %s" % missing[:20]
    extra = sorted(set(seen) & set(refused))
    assert not extra, "ids whose push was refused came back: %s" % extra[:20]
    dup = {i: n for i, n in seen.items() if n != 1}
    assert not dup, "ids reflected more than once: %s" % list(dup.items())[:20]


def start_fails(tmp_path, prog, storage):
    """Run the pipeline on storage (expected to refuse to start)."""
    path = tmp_path / "refused.sql"
    path.write_text(prog)
    res = run(["run", path, "--storage", storage, "--until-done", "--no-progress"])
    return res


def segments(storage, prefix):
    return sorted(f for f in os.listdir(storage) if f.startswith(prefix))


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x40]))


def log_records(path):
    """(offset, length) of each record of a log file (format in storage.h)."""
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos + 16 <= len(data):
        n = int.from_bytes(data[pos + 4:pos + 8], "little")
        out.append((pos, 16 + n))
        pos += 16 + n
    return out


# ---------------------------------------------------------------- (a) a failing disk

def test_a_failed_ingress_append_is_refused_with_503_and_leaves_no_torn_record(
        http_pipeline, tmp_path, monkeypatch):
    """The 3rd and 4th appends to the ingress log fail (half written, then
    ENOSPC): those pushes get 503 naming the storage error, /status says
    storage is failing, the next push is acknowledged and clears it; after
    kill -9 every acknowledged row is back and no refused one."""
    st = tmp_path / "st"
    monkeypatch.setenv("SLUICE_FAULT", "ingress-write-enospc:3+2")
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    acked, refused = [], []
    for k in range(2):
        r = push(p, range(k * 10, k * 10 + 10))
        assert r.status_code == 200, r.text
        acked += range(k * 10, k * 10 + 10)
    for k in range(2, 4):
        r = push(p, range(k * 10, k * 10 + 10))
        assert r.status_code == 503, r.text
        assert r.json()["error_code"] == "StorageError", r.text
        assert "No space left on device" in r.json()["error"], r.text
        refused += range(k * 10, k * 10 + 10)
        status = requests.get(p.url("/status"), timeout=30).json()
        assert "No space left on device" in status["storage_error"], status
        stats = requests.get(p.url("/stats"), timeout=30).json()
        assert "storage_error" in stats["global_metrics"]["checkpoint"], stats
    for k in range(4, 6):
        r = push(p, range(k * 10, k * 10 + 10))
        assert r.status_code == 200, r.text
        acked += range(k * 10, k * 10 + 10)
    assert "storage_error" not in requests.get(p.url("/status"), timeout=30).json()
    kill9(p)
    monkeypatch.delenv("SLUICE_FAULT")
    assert_exactly(final_rows(http_pipeline, tmp_path, st), acked, refused)


def test_a_failed_journal_write_makes_steps_wait_not_the_pipeline_exit(
        http_pipeline, tmp_path, monkeypatch):
    """exactly_once: the step journal's 2nd write fails (ENOSPC) three
    times; the step waits and runs once the write works; nothing exits."""
    st = tmp_path / "st"
    monkeypatch.setenv("SLUICE_FAULT", "journal-write-enospc:2+3")
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    acked = []
    for k in range(4):
        r = push(p, range(k * 10, k * 10 + 10))
        assert r.status_code == 200, r.text
        acked += range(k * 10, k * 10 + 10)
    assert p.proc.poll() is None
    assert "steps wait until it works" in p.stderr()
    assert "storage works again" in p.stderr()
    kill9(p)
    monkeypatch.delenv("SLUICE_FAULT")
    assert_exactly(final_rows(http_pipeline, tmp_path, st), acked)


@pytest.fixture
def small_fs(tmp_path):
    """A 2 MB tmpfs (skipped where mounting is not allowed), unmounted after."""
    d = tmp_path / "fs"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(d)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % r.stderr.decode().strip())
    yield d
    subprocess.run(["umount", "-l", str(d)])


def test_a_full_disk_pauses_ingestion_and_loses_no_acknowledged_row(
        http_pipeline, tmp_path, small_fs):
    """A real full filesystem: pushes are refused (503) while it is full,
    acknowledged again once space returns, and after kill -9 every
    acknowledged row is there (on main a push that hit ENOSPC left half a
    record in the log, and every row acknowledged after it was dropped as
    a "torn record" at restart)."""
    st = small_fs / "st"
    ballast = small_fs / "ballast"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    with open(ballast, "wb") as f:  # leave little room
        f.write(b"\0" * (1500 * 1024))
    acked, refused, nxt = [], [], 0
    answers = []
    for _ in range(200):  # fill: bodies of ~40 KB until one is refused
        ids = list(range(nxt, nxt + 400))
        nxt += 400
        r = push(p, ids, pad=60)
        if r.status_code == 200:
            acked += ids
            continue
        refused += ids
        answers.append(r)
        break
    assert answers, "the filesystem never filled"
    status = requests.get(p.url("/status"), timeout=30).json()
    # a small push may still fit; a second big one is refused too
    ids = list(range(nxt, nxt + 400))
    nxt += 400
    r = push(p, ids, pad=60)
    (acked if r.status_code == 200 else refused).extend(ids)
    os.unlink(ballast)  # space returns
    for _ in range(3):
        ids = list(range(nxt, nxt + 100))
        nxt += 100
        r = push(p, ids)
        assert r.status_code == 200, r.text
        acked += ids
    assert p.proc.poll() is None
    kill9(p)
    # first what matters most: nothing acknowledged is lost
    assert_exactly(final_rows(http_pipeline, tmp_path, st), acked, refused)
    # then what the client and the operator saw while the disk was full
    assert answers[0].status_code == 503, answers[0].text
    assert "No space left on device" in answers[0].text, answers[0].text
    assert "No space left on device" in status.get("storage_error", ""), status


# ---------------------------------------------------------------- (b) corruption mid-log

@pytest.mark.parametrize("log", ["ingress", "journal"])
def test_a_flipped_byte_in_the_middle_of_a_log_refuses_the_start(http_pipeline, tmp_path, log):
    """One flipped byte in the first of several records: the restart names
    the file and the offset and exits 1, instead of dropping every record
    after it as a torn tail."""
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    for k in range(4):
        assert push(p, range(k * 10, k * 10 + 10)).status_code == 200
    kill9(p)
    seg = [s for s in segments(st, log + "-") if os.path.getsize(st / s) > 0]
    assert seg, os.listdir(st)
    recs = log_records(st / seg[0])
    assert len(recs) >= 3, recs
    flip(st / seg[0], recs[0][0] + 20)
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode == 1, res.stderr[-2000:]
    assert "corrupt" in res.stderr and seg[0] in res.stderr, res.stderr[-2000:]
    assert "offset 0" in res.stderr, res.stderr[-2000:]


def test_a_torn_last_record_is_cut_off_and_later_restarts_stay_clean(http_pipeline, tmp_path):
    """Half a record at the end of the newest ingress segment is what a
    crash mid-write leaves: it was never acknowledged, so the start cuts it
    off; the restarts after that (with newer segments) find nothing wrong."""
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    for k in range(3):
        assert push(p, range(k * 10, k * 10 + 10)).status_code == 200
    kill9(p)
    seg = [s for s in segments(st, "ingress-") if os.path.getsize(st / s) > 0][-1]
    with open(st / seg, "ab") as f:
        f.write(b"SLJ1\x40\x00\x00\x00partial")
    for i, name in enumerate(("again", "third")):
        q = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0", name=name)
        assert push(q, [100 + i]).status_code == 200
        kill9(q)
    assert "torn record" in open(tmp_path / "again.stderr").read()
    assert "torn record" not in open(tmp_path / "third.stderr").read()
    rows = final_rows(http_pipeline, tmp_path, st)
    assert_exactly(rows, list(range(30)) + [100, 101])


# ---------------------------------------------------------------- (c) damaged checkpoint files

def manifests(st):
    out = {}
    for f in os.listdir(st):
        m = re.match(r"manifest-(\d+)\.json$", f)
        if m:
            text = open(st / f).read()
            out[int(m.group(1))] = json.loads(text[:text.rindex("\n#sluice-manifest")])
    return [out[k] for k in sorted(out)]


def checkpoint(p):
    seq = requests.post(p.url("/checkpoint"), timeout=30).json()["checkpoint_sequence_number"]
    for _ in range(30000):  # hang guard only
        s = requests.get(p.url("/checkpoint_status"), timeout=30).json()
        if s["success"] is not None and s["success"] >= seq:
            return s["last"]
        assert s["failure"] is None or s["failure"]["sequence_number"] < seq, s
        time.sleep(0.01)  # not a bound: spares the CPU while the checkpoint is written
    pytest.fail("checkpoint did not complete")


def two_checkpoints_with_b_unchanged(http_pipeline, tmp_path, st, mode):
    p = http_pipeline(TWO, "--storage", st, "--checkpoint-interval", "0",
                      "--fault-tolerance", mode)
    assert push(p, range(0, 50), "a").status_code == 200
    assert push(p, range(0, 50), "b").status_code == 200
    checkpoint(p)
    assert push(p, range(50, 60), "a").status_code == 200
    second = checkpoint(p)
    assert push(p, range(60, 70), "a").status_code == 200  # after both checkpoints
    kill9(p)
    return second


def second_a_files(older, newer):
    """Files of the newer checkpoint's state entries whose contents changed
    (a's operators): their hashes differ from the older entry's."""
    def hashes(m):
        return {(e["node"], e["worker"]): {f[6:38] for f in e["files"]} for e in m["state"]}
    old_h, out = hashes(older), []
    for e in newer["state"]:
        if {f[6:38] for f in e["files"]} != old_h.get((e["node"], e["worker"])):
            out += e["files"]
    return out


@pytest.mark.parametrize("mode", ["exactly_once", "at_least_once"])
def test_the_two_kept_checkpoints_share_no_file_and_one_damaged_file_loses_nothing(
        http_pipeline, tmp_path, mode):
    """b's operators are unchanged between the two checkpoints. On main both
    manifests named the same batch files, so one damaged file spoiled both
    checkpoints: at_least_once started from scratch (acknowledged rows
    gone). Now the newer one keeps b's state under the files' twin names:
    damaging every file of the newer checkpoint falls back to the older one
    and the logs bring back every acknowledged row."""
    st = tmp_path / "st"
    second = two_checkpoints_with_b_unchanged(http_pipeline, tmp_path, st, mode)
    assert second["files_reused"] >= 1, second
    older, newer = manifests(st)[-2:]
    shared = set(older["files"]) & set(newer["files"])
    # one file of b's unchanged state, damaged (on main: shared by both)
    victim = sorted(set(newer["files"]) - set(older["files"]) - set(second_a_files(older, newer))
                    or shared or newer["files"])[0]
    flip(st / victim, os.path.getsize(st / victim) // 2)
    rows_a = final_rows(http_pipeline, tmp_path, st, TWO, "sa")
    assert sorted(int(r[0]) for r in rows_a) == list(range(70))
    assert sum(int(r[1]) for r in rows_a) == 70
    rows_b = final_rows(http_pipeline, tmp_path, st, TWO, "sb", name="final-b")
    assert sorted(int(r[0]) for r in rows_b) == list(range(50))
    assert not shared, "both kept checkpoints use %s" % sorted(shared)


def test_checkpoints_that_all_fail_to_load_refuse_the_start_naming_the_file(
        http_pipeline, tmp_path):
    """Every batch file of both kept checkpoints damaged: the pipeline does
    not start from scratch (which would drop acknowledged rows); it exits 1
    naming a damaged file."""
    st = tmp_path / "st"
    two_checkpoints_with_b_unchanged(http_pipeline, tmp_path, st, "at_least_once")
    names = [f for f in os.listdir(st) if f.startswith("batch-")]
    for f in names:
        flip(st / f, os.path.getsize(st / f) // 2)
    res = start_fails(tmp_path, TWO, st)
    assert res.returncode == 1, res.stderr[-3000:]
    assert "none of them can be loaded" in res.stderr, res.stderr[-3000:]
    assert any(n in res.stderr for n in names), res.stderr[-3000:]
    assert "starting from the beginning" not in res.stderr


def test_reusing_a_damaged_file_saves_that_state_again_from_memory(http_pipeline, tmp_path):
    """b's file is damaged while the pipeline runs; the next checkpoint,
    which keeps b's unchanged state, notices (its copy verifies the
    checksum) and writes that state again from memory."""
    st = tmp_path / "st"
    p = http_pipeline(TWO, "--storage", st, "--checkpoint-interval", "0")
    assert push(p, range(0, 50), "a").status_code == 200
    assert push(p, range(0, 50), "b").status_code == 200
    checkpoint(p)
    for f in manifests(st)[-1]["files"]:
        flip(st / f, os.path.getsize(st / f) // 2)
    assert push(p, range(50, 60), "a").status_code == 200
    checkpoint(p)
    assert "saving that state again" in p.stderr()
    kill9(p)
    newest = manifests(st)[-1]
    # the newest checkpoint alone restores everything
    for m in manifests(st)[:-1]:
        for f in set(m["files"]) - set(newest["files"]):
            os.unlink(st / f)
    rows_b = final_rows(http_pipeline, tmp_path, st, TWO, "sb")
    assert sorted(int(r[0]) for r in rows_b) == list(range(50))


# ---------------------------------------------------------------- (d) the lock

def test_deleting_the_lock_file_does_not_let_a_second_pipeline_in(http_pipeline, tmp_path):
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    os.unlink(st / "LOCK")
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode == 1, res.stderr[-2000:]
    assert "in use by another pipeline" in res.stderr, res.stderr[-2000:]
    (st / "LOCK").write_text("")  # an emptied LOCK file does not help either
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode == 1 and "in use by another pipeline" in res.stderr
    assert p.proc.poll() is None
    p.stop()
    # once it is gone, the storage opens (and names its pid while held)
    q = http_pipeline(PROG, "--storage", st, name="next")
    res = start_fails(tmp_path, PROG, st)
    assert "(pid %d)" % q.proc.pid in res.stderr, res.stderr[-2000:]
    q.stop()


# ---------------------------------------------------------------- (e) malformed manifests

def xxh64(data):
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib.XXH64(data, len(data), 0)


def rewrite_manifest(path, change):
    text = open(path).read()
    m = json.loads(text[:text.rindex("\n#sluice-manifest")])
    change(m)
    body = (json.dumps(m) + "\n").encode()
    open(path, "wb").write(body + b"#sluice-manifest v1 xxh64=%016x\n" % xxh64(body))


MALFORMED = {
    "pos_not_numbers": lambda m: m["inputs"].append({"name": "x", "pos": "no"}),
    "pos_missing": lambda m: m.update(inputs=[{"name": "x"}]),
    "worker_huge": lambda m: m["state"][0].update(worker=1e300),
    "node_string": lambda m: m["state"][0].update(node="zero"),
    "files_not_names": lambda m: m["state"][0].update(files=[1, 2]),
    "state_not_array": lambda m: m.update(state={"a": 1}),
    "workers_nan_like": lambda m: m.update(workers=-1e308),
    "outputs_bad": lambda m: m.update(outputs=[7]),
}


@pytest.mark.parametrize("how", sorted(MALFORMED))
def test_a_malformed_manifest_with_a_valid_checksum_is_an_error_not_a_crash(
        http_pipeline, tmp_path, how):
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st)
    assert push(p, range(10)).status_code == 200
    p.stop()  # a final checkpoint: the only manifest
    (name,) = [f for f in os.listdir(st) if f.startswith("manifest-")]
    rewrite_manifest(st / name, MALFORMED[how])
    for f in segments(st, "ingress-") + segments(st, "journal-"):
        os.unlink(st / f)  # the checkpoint is the only copy of the state
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode == 1, res.stderr[-2000:]
    assert name in res.stderr and "malformed" in res.stderr, res.stderr[-2000:]
    assert "none of them can be loaded" in res.stderr, res.stderr[-2000:]


def test_a_malformed_only_checkpoint_is_passed_over_when_the_logs_reach_back(
        http_pipeline, tmp_path):
    """When the logs still hold everything since the beginning, starting
    from there loses nothing: the pipeline says so and does it."""
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st)
    assert push(p, range(10)).status_code == 200
    p.stop()
    (name,) = [f for f in os.listdir(st) if f.startswith("manifest-")]
    rewrite_manifest(st / name, MALFORMED["worker_huge"])
    q = http_pipeline(PROG, "--storage", st, "--dump", tmp_path / "d", name="again")
    q.stop()
    assert "logs reach back to the beginning" in q.stderr()
    _, rows = read_dump(tmp_path / "d" / "per_id.csv")
    assert_exactly(rows, range(10))


def rewrite_record(path, index, change):
    """Replace the payload of a log record by change(payload), with a valid
    checksum: the bytes verify, their fields are nonsense."""
    data = bytearray(open(path, "rb").read())
    off, n = log_records(path)[index]
    payload = change(bytes(data[off + 16:off + n]))
    rec = data[off:off + 4] + len(payload).to_bytes(4, "little") + \
        xxh64(payload).to_bytes(8, "little") + payload
    open(path, "wb").write(bytes(data[:off]) + bytes(rec) + bytes(data[off + n:]))


MALFORMED_RECORDS = {
    # journal: kind u32, step, seq_hi, nin u32, per input 56 bytes, nout u32, offsets
    "journal_huge_output_count": ("journal-",
                                  lambda b: b[:-4] + (0x7fffffff).to_bytes(4, "little")),
    "journal_kind": ("journal-", lambda b: (9).to_bytes(4, "little") + b[4:]),
    "journal_cut_short": ("journal-", lambda b: b[:10]),
    # ingress: seq, rel u32, rows, then rows
    "ingress_huge_row_count": ("ingress-",
                               lambda b: b[:12] + (1 << 40).to_bytes(8, "little") + b[20:]),
    "ingress_no_table": ("ingress-", lambda b: b[:8] + (77).to_bytes(4, "little") + b[12:]),
    "ingress_row_length": ("ingress-",
                           lambda b: b[:20 + 9] + (1 << 30).to_bytes(4, "little") + b[33:]),
    "ingress_row_encoding": ("ingress-", lambda b: b[:-1]),
}


@pytest.mark.parametrize("how", sorted(MALFORMED_RECORDS))
def test_a_malformed_log_record_with_a_valid_checksum_is_an_error_not_a_crash(
        http_pipeline, tmp_path, how):
    prefix, change = MALFORMED_RECORDS[how]
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    for k in range(3):
        assert push(p, range(k * 10, k * 10 + 10)).status_code == 200
    kill9(p)
    seg = [s for s in segments(st, prefix) if os.path.getsize(st / s) > 0][0]
    rewrite_record(st / seg, 0, change)
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode == 1, res.stderr[-2000:]
    assert "malformed" in res.stderr and seg in res.stderr, res.stderr[-2000:]


# ---------------------------------------------------------------- (f) permissions

def test_storage_files_are_private_to_the_user(http_pipeline, tmp_path):
    st = tmp_path / "new" / "st"
    p = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0")
    assert push(p, range(10)).status_code == 200
    checkpoint(p)
    p.stop()
    assert stat.S_IMODE(os.stat(st).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700
    files = os.listdir(st)
    assert any(f.startswith("batch-") for f in files) and "LOCK" in files
    assert any(f.startswith("ingress-") for f in files)
    for f in files:
        assert stat.S_IMODE(os.stat(st / f).st_mode) == 0o600, f


def test_a_checkpoint_of_a_build_that_compiled_the_program_differently_is_refused(
        http_pipeline, tmp_path):
    """The manifest records the compiled circuit's shape (every node's kind,
    inputs and column types): another build of sluice may compile the same
    program text into another circuit (a planner that narrows a join's
    rows), whose per-node state has another layout. Such a checkpoint is
    refused with a message saying so, never read into the wrong layout; a
    manifest of a build before the field existed loads as before."""
    st = tmp_path / "st"
    p = http_pipeline(PROG, "--storage", st)
    assert push(p, range(10)).status_code == 200
    p.stop()
    (name,) = [f for f in os.listdir(st) if f.startswith("manifest-")]
    shape = manifests(st)[-1]["circuit"]
    assert re.fullmatch(r"[0-9a-f]{16}", shape)
    for f in segments(st, "ingress-") + segments(st, "journal-"):
        os.unlink(st / f)  # the checkpoint is the only copy of the state
    other = "%016x" % (int(shape, 16) ^ 1)
    rewrite_manifest(st / name, lambda m: m.update(circuit=other))
    res = start_fails(tmp_path, PROG, st)
    assert res.returncode != 0, res.stderr[-2000:]
    assert "compiles this program into a different circuit" in res.stderr, res.stderr[-2000:]
    assert other in res.stderr and shape in res.stderr, res.stderr[-2000:]
    # an older build's manifest (no "circuit") is taken as it is
    rewrite_manifest(st / name, lambda m: m.pop("circuit"))
    q = http_pipeline(PROG, "--storage", st, "--dump", tmp_path / "d", name="legacy")
    q.stop()
    _, rows = read_dump(tmp_path / "d" / "per_id.csv")
    assert_exactly(rows, range(10))


JOINP = """
CREATE TABLE customers (id BIGINT NOT NULL, region INT NOT NULL, name VARCHAR NOT NULL,
                        extra VARCHAR) WITH ('retain_input' = 'true');
CREATE TABLE orders (id BIGINT NOT NULL, customer BIGINT NOT NULL, amount INT NOT NULL,
                     note VARCHAR) WITH ('retain_input' = 'true');
CREATE MATERIALIZED VIEW by_region AS
SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS n
FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region;
"""
JOINQ = ("SELECT c.region, SUM(o.amount), COUNT(*) FROM orders o JOIN customers c "
         "ON o.customer = c.id GROUP BY c.region")


def push_rows(p, table, changes):
    body = "".join(json.dumps({op: row}) + "\n" for op, row in changes)
    r = requests.post(p.url("/ingress/%s?format=json&wait=true" % table), data=body,
                      timeout=120)
    assert r.status_code == 200, r.text


def join_changes(db, k):
    """Round k's changes (applied to SQLite db too): customers and orders
    inserted, and from round 1 on some orders of round 0 deleted (their rows
    must meet the join's stored ones, in the layout they were kept in)."""
    cust = [{"id": 100 * k + i, "region": i % 5, "name": "c%d" % i, "extra": "x" * (i % 40)}
            for i in range(30)]
    orders = [{"id": 1000 * k + i, "customer": 100 * ((i * 7) % (k + 1)) + i % 30,
               "amount": i % 17 + 1, "note": None if i % 3 else "n%d" % i} for i in range(200)]
    dele = [] if k == 0 else [{"id": i, "customer": i % 30, "amount": i % 17 + 1,
                               "note": None if i % 3 else "n%d" % i}
                              for i in range(10 * k, 10 * k + 10)]
    for c in cust:
        db.execute("INSERT INTO customers VALUES (?, ?, ?, ?)",
                   (c["id"], c["region"], c["name"], c["extra"]))
    for o in orders:
        db.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                   (o["id"], o["customer"], o["amount"], o["note"]))
    for o in dele:
        db.execute("DELETE FROM orders WHERE id = ?", (o["id"],))
    return ([("insert", c) for c in cust],
            [("insert", o) for o in orders] + [("delete", o) for o in dele])


def test_a_storage_in_the_layout_before_join_narrowing_restarts_in_it(
        http_pipeline, tmp_path, monkeypatch):
    """Join narrowing (sql/plan_prune.c) compiles every join program into
    another circuit than builds before it did. A storage written in the
    older layout (--no-join-narrowing, or SLUICE_WRITER_BIN: a build before
    narrowing) is restarted in it, not refused: its recorded shape matches
    the program compiled without narrowing. A manifest without a shape (a
    build before shapes were recorded) compiles without narrowing too. The
    view is checked against SQLite after each restart, and after a
    bootstrap to a changed program."""
    import sqlite3
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE customers (id, region, name, extra)")
    db.execute("CREATE TABLE orders (id, customer, amount, note)")
    st = tmp_path / "st"
    writer = os.environ.get("SLUICE_WRITER_BIN")
    if writer:
        monkeypatch.setenv("SLUICE_BIN", writer)
    p = http_pipeline(JOINP, "--storage", st, *([] if writer else ["--no-join-narrowing"]),
                      name="old")
    cust, orders = join_changes(db, 0)
    push_rows(p, "customers", cust)
    push_rows(p, "orders", orders)
    p.stop()
    monkeypatch.undo()
    old_shape = manifests(st)[-1]["circuit"]
    # this build's own layout is another circuit: what the test is about
    fresh = http_pipeline(JOINP, "--storage", tmp_path / "fresh", name="fresh")
    fresh.stop()
    assert manifests(tmp_path / "fresh")[-1]["circuit"] != old_shape
    for f in segments(st, "ingress-") + segments(st, "journal-"):
        os.unlink(st / f)  # the checkpoint is the only copy of the state

    def round_(k, name):
        q = http_pipeline(JOINP, "--storage", st, "--dump", tmp_path / name, name=name)
        cust, orders = join_changes(db, k)
        push_rows(q, "customers", cust)
        push_rows(q, "orders", orders)
        res = q.stop()
        assert "as builds before join narrowing compiled it" in res.stderr, res.stderr[-2000:]
        _, rows = read_dump(tmp_path / name / "by_region.csv")
        got = sorted(tuple(int(x) for x in r) for r in rows)
        assert got == sorted(db.execute(JOINQ).fetchall())
        assert manifests(st)[-1]["circuit"] == old_shape  # still that layout

    round_(1, "restart")
    # a manifest of a build before shapes were recorded: compiled without narrowing
    name = max((f for f in os.listdir(st) if f.startswith("manifest-")),
               key=lambda f: int(re.match(r"manifest-(\d+)", f).group(1)))
    rewrite_manifest(st / name, lambda m: m.pop("circuit"))
    for f in segments(st, "ingress-") + segments(st, "journal-"):
        os.unlink(st / f)
    round_(2, "legacy")
    # bootstrapping from that layout to a changed program (a view added, the
    # join's view kept): the stored program compiles in the stored layout,
    # the new one with narrowed joins; the diff sees the maps as nodes
    newp = JOINP + ("CREATE MATERIALIZED VIEW big AS SELECT o.id, c.name FROM orders o "
                    "JOIN customers c ON o.customer = c.id WHERE o.amount > 15;\n")
    q = http_pipeline(newp, "--storage", st, "--bootstrap", "allow", "--dump",
                      tmp_path / "boot", name="boot")
    cust, orders = join_changes(db, 3)
    push_rows(q, "customers", cust)
    push_rows(q, "orders", orders)
    q.stop()
    _, rows = read_dump(tmp_path / "boot" / "by_region.csv")
    assert sorted(tuple(int(x) for x in r) for r in rows) == sorted(db.execute(JOINQ).fetchall())
    _, rows = read_dump(tmp_path / "boot" / "big.csv")
    assert sorted((int(r[0]), r[1]) for r in rows) == sorted(db.execute(
        "SELECT o.id, c.name FROM orders o JOIN customers c ON o.customer = c.id "
        "WHERE o.amount > 15").fetchall())
    assert manifests(st)[-1]["circuit"] != old_shape

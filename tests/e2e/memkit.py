"""What the memory tests share (test_memory_checkpoint.py,
test_memory_partitions.py, test_memory_final_asof.py,
test_memory_hosts_final.py, test_memory_groups.py, test_memory_tables.py):
pushes that wait for their step, /stats and an operator's figures in it,
checkpoints waited for, kill -9, tiny spill blocks, the spill-then-kill
scenario, and the emit_final and ASOF answers SQLite gives.

Waits poll observable state with a hang guard; no wall-clock bounds.
"""
import datetime
import json
import os
import signal
import sqlite3

import requests

from conftest import wait_until

# spill blocks of 4 KiB, any run spills: small inputs reach the files
SPILL_ENV = {"SLUICE_SPILL_BLOCK": "4096", "SLUICE_SPILL_MIN_RUN": "0"}

EPOCH = datetime.datetime(1970, 1, 1)
T0 = int((datetime.datetime(2024, 3, 1) - EPOCH).total_seconds())


def ts_text(sec):
    return (EPOCH + datetime.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def push(p, table, body):
    r = requests.post(p.url("/ingress/%s" % table), params={"wait": "true"}, data=body,
                      timeout=120)
    assert r.status_code == 200 and r.json()["error_count"] == 0, r.text


def stats(p):
    return requests.get(p.url("/stats"), timeout=60).json()


def op_of(st, kind, rel=None):
    """The memory figures of the operator of kind (of relation rel) in st."""
    return next(o for o in st["memory"]["operators"]
                if o["kind"] == kind and (rel is None or o["relation"] == rel))


def query(p, sql, cols):
    """/query's rows of sql as sorted tuples of cols."""
    q = requests.post(p.url("/query"), params={"format": "json"}, data=sql, timeout=120)
    assert q.status_code == 200, q.text
    return sorted(tuple(r[c] for c in cols)
                  for r in (json.loads(line) for line in q.text.splitlines() if line.strip()))


def ckpt_status(p):
    return requests.get(p.url("/checkpoint_status"), timeout=60).json()


def ckpt_finished(p, seq):
    """Wait until checkpoint request seq completed or failed."""
    def done():
        st = ckpt_status(p)
        if st["success"] is not None and st["success"] >= seq:
            return st
        if st["failure"] is not None and st["failure"]["sequence_number"] >= seq:
            return st
        return None
    return wait_until(done, "checkpoint %d finishing" % seq, hang_guard=240)


def kill9(p):
    """kill -9, then wait until its checkpoint child (PR_SET_PDEATHSIG) is
    gone too: it holds the storage lock until it is."""
    p.proc.send_signal(signal.SIGKILL)
    p.proc.wait()

    def gone():
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and str(p.prog).encode() in open(
                        "/proc/%s/cmdline" % pid, "rb").read():
                    return False
            except OSError:
                pass
        return True
    wait_until(gone, "the killed pipeline's processes ending")


def with_env(env, fn):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def spill_kill_restart(http_pipeline, prog, args, chunks, feed, kinds):
    """Spill, checkpoint, kill -9, restart. Pipeline a (SPILL_ENV, args)
    is fed the first half of chunks (feed(p, chunk), each once the pipeline
    is not stalled); it must not be under memory pressure and its
    operators of kinds must have bytes on disk and have read blocks back.
    A checkpoint while they are spilled, kill -9, then pipeline b from it
    fed the rest. Returns b and its /stats once it processed records:
    checked that b resumed from the checkpoint without memory pressure,
    its operators of kinds have bytes on disk, and neither pipeline said
    "state that cannot spill" (the pause before these could spill)."""
    def fed(name, part):
        p = with_env(SPILL_ENV, lambda: http_pipeline(prog, *args, name=name))
        for c in part:
            s = requests.get(p.url("/status"), timeout=60).json()
            assert not s["stalled"], s
            feed(p, c)
        return p

    half = len(chunks) // 2
    a = fed("a", chunks[:half])
    st = stats(a)
    assert st["memory"]["pressure"] is None, st["memory"]
    for kind in kinds:
        o = op_of(st, kind)
        assert o["bytes_on_disk"] > 0 and o["cache_misses"] > 0, o
    seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    c = ckpt_finished(a, seq)
    assert c["failure"] is None and c["success"] == seq, (c, a.stderr()[-3000:])
    kill9(a)

    b = fed("b", chunks[half:])

    def settled():
        st = stats(b)
        return st if st["global_metrics"]["total_processed_records"] > 0 else None
    st = wait_until(settled, "the restarted pipeline's figures", hang_guard=600)
    assert st["memory"]["pressure"] is None, st["memory"]
    assert "resuming from the checkpoint" in b.stderr(), b.stderr()[-3000:]
    for kind in kinds:
        assert op_of(st, kind)["bytes_on_disk"] > 0, op_of(st, kind)
    assert "state that cannot spill" not in a.stderr() + b.stderr()
    return b, st


def sqlite_final_asof(events, qrows, rrows, lateness, asof_cols):
    """SQLite's answers over e (id, g, v, ts seconds), q (id, k, ts, v) and
    r (k, ts, p): the per-minute, per-group (COUNT, SUM(v)) of e's windows
    the final watermark (largest ts - lateness) closed, and asof_cols (a
    select list over q and r) per q.k % 16 of q LEFT ASOF JOIN r on k,
    q.ts >= r.ts ((k, ts) unique in r); both sorted."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e (id INT, g INT, v INT, ts INT)")
    db.executemany("INSERT INTO e VALUES (?, ?, ?, ?)", events)
    db.execute("CREATE TABLE q (id INT, k INT, ts INT, v INT)")
    db.executemany("INSERT INTO q VALUES (?, ?, ?, ?)", qrows)
    db.execute("CREATE TABLE r (k INT, ts INT, p INT)")
    db.executemany("INSERT INTO r VALUES (?, ?, ?)", rrows)
    db.execute("CREATE INDEX rk ON r (k, ts)")
    closed = ((max(t for *_, t in events) - lateness) // 60) * 60
    final = db.execute(
        "SELECT datetime(ws, 'unixepoch'), g, COUNT(*), SUM(v) FROM "
        "(SELECT (ts / 60) * 60 AS ws, g, v FROM e) WHERE ws < ? GROUP BY ws, g",
        (closed,)).fetchall()
    asof = db.execute(
        "SELECT q.k % 16, " + asof_cols + " FROM q LEFT JOIN r ON r.k = q.k AND r.ts = "
        "(SELECT MAX(r2.ts) FROM r r2 WHERE r2.k = q.k AND r2.ts <= q.ts) "
        "GROUP BY q.k % 16").fetchall()
    return sorted(final), sorted(asof)

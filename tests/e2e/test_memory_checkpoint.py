"""Checkpoints of spilled state (docs/memory.md, "Checkpoint and spill
files"; issue 20).

A checkpoint is written by a forked child from its frozen copy of the
state; the spilled trace runs in that copy live in files under
<storage>/spill, which the parent keeps merging (and so removing) while
it steps. The test holds the child before it reads anything
(SLUICE_CKPT_HOLD, debug builds: the child waits while <dir>/hold
exists), pushes input until merges have dropped, in the parent, more
spilled block files that existed when the child forked than the spill
cache can hold, then lets the child go:

  * the checkpoint completes (/checkpoint_status success, no failure):
    the files the child still needs are kept for it (/stats
    memory.spill_files_held_for_checkpoint) and removed once it exited;
  * kill -9, then a restart from that checkpoint (and the journal) under
    the same limit, with more input: the views' dumps equal, byte for
    byte, a run without a memory limit over the same input, and SQLite's
    answers over the same rows.

And a checkpoint that cannot read a spilled block fails with a message
naming it (/checkpoint_status failure), the pipeline going on; one whose
child hangs is killed at --checkpoint-timeout and fails the same way.

Waits poll observable state with a hang guard; no wall-clock bounds.
"""
import json
import os
import random
import sqlite3

import requests

from conftest import read_dump, wait_until
from memkit import SPILL_ENV, ckpt_finished, ckpt_status, kill9, push, stats, with_env

PROG = """
CREATE TABLE customers (id INT NOT NULL, region INT NOT NULL);
CREATE TABLE orders (id BIGINT NOT NULL, customer INT NOT NULL, amount INT NOT NULL);
CREATE MATERIALIZED VIEW sales AS
SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS s
FROM orders o JOIN customers c ON o.customer = c.id
GROUP BY c.region;
CREATE MATERIALIZED VIEW pairs AS SELECT DISTINCT customer % 20 AS c, amount % 100 AS a FROM orders;
CREATE MATERIALIZED VIEW extremes AS
SELECT customer % 7 AS g, MIN(amount) AS lo, MAX(amount) AS hi FROM orders GROUP BY customer % 7;
"""
VIEWS = ("sales", "pairs", "extremes")
SQLITE_VIEWS = {
    "sales": "SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o JOIN customers c "
             "ON o.customer = c.id GROUP BY c.region",
    "pairs": "SELECT DISTINCT customer % 20, amount % 100 FROM orders",
    "extremes": "SELECT customer % 7, MIN(amount), MAX(amount) FROM orders GROUP BY customer % 7",
}
CUSTOMERS = 2000
CHUNK = 2000
CHUNKS = 40


def make_input():
    """Customer rows, and CHUNKS chunks of order changes (JSON lines): each
    inserts CHUNK orders and deletes a tenth of an earlier chunk's, so that
    merges of spilled runs cancel tuples and MIN/MAX must look again."""
    rng = random.Random(20)
    customers = [(i, rng.randrange(12)) for i in range(CUSTOMERS)]
    live, chunks, next_id = [], [], 0
    for _ in range(CHUNKS):
        lines = []
        for _ in range(CHUNK):
            row = (next_id, rng.randrange(CUSTOMERS + 100), rng.randrange(1000))
            next_id += 1
            live.append(row)
            lines.append({"insert": dict(zip(("id", "customer", "amount"), row))})
        for _ in range(CHUNK // 10):
            row = live.pop(rng.randrange(len(live)))
            lines.append({"delete": dict(zip(("id", "customer", "amount"), row))})
        chunks.append("".join(json.dumps(x) + "\n" for x in lines))
    return customers, chunks, live


def push_customers(p, customers):
    push(p, "customers", "".join(json.dumps({"insert": {"id": i, "region": g}}) + "\n"
                                 for i, g in customers))


def spill_files(spill):
    return {f for f in os.listdir(spill) if f.startswith("run-")} if os.path.isdir(spill) \
        else set()


def dumps(d):
    return {v: (d / (v + ".csv")).read_bytes() for v in VIEWS}


def sqlite_answers(customers, live):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE customers (id INT, region INT)")
    db.execute("CREATE TABLE orders (id INT, customer INT, amount INT)")
    db.executemany("INSERT INTO customers VALUES (?, ?)", customers)
    db.executemany("INSERT INTO orders VALUES (?, ?, ?)", live)
    return {v: sorted(tuple(str(x) for x in r) for r in db.execute(q))
            for v, q in SQLITE_VIEWS.items()}


def test_checkpoint_while_spilled_runs_merge_then_kill_and_restart(http_pipeline, tmp_path):
    customers, chunks, live = make_input()
    st = tmp_path / "st"
    spill = st / "spill"
    hold = tmp_path / "hold"
    hold.mkdir()
    limited = ("--memory-limit", "400K", "--step-rows", "1000", "--storage", st,
               "--checkpoint-interval", "0")
    env = dict(SPILL_ENV, SLUICE_CKPT_HOLD=str(hold))
    a = with_env(env, lambda: http_pipeline(PROG, *limited, name="a"))
    push_customers(a, customers)
    for c in chunks[:10]:
        push(a, "orders", c)
    m = stats(a)["memory"]
    assert m["spilled_runs"] > 0 and m["spilled_runs_merged"] > 0, m

    # a checkpoint whose child waits before it reads anything
    (hold / "hold").touch()
    seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    wait_until(lambda: [f for f in os.listdir(hold) if f.startswith("held-")],
               "the checkpoint child waiting")
    at_fork = spill_files(spill)
    assert len(at_fork) > 4, at_fork
    # the parent steps on: merges drop runs (one file each) that existed at
    # the fork
    done = 10

    def dropped():
        gone = len(at_fork - spill_files(spill))
        held = stats(a)["memory"].get("spill_files_held_for_checkpoint", 0)
        return max(gone, held)
    merged0 = stats(a)["memory"]["spilled_runs_merged"]
    while dropped() < 3:
        assert done < 30, "merges dropped no spilled file of the checkpoint's state"
        push(a, "orders", chunks[done])
        done += 1
    m = stats(a)["memory"]
    assert m["spilled_runs_merged"] > merged0
    # every file of the child's state is still there, those the pipeline
    # no longer uses kept for it
    assert at_fork <= spill_files(spill)
    assert m["spill_files_held_for_checkpoint"] >= 3 and m["spill_bytes_held_for_checkpoint"] > 0
    assert ckpt_status(a)["in_progress"]
    (hold / "hold").unlink()
    cs = ckpt_finished(a, seq)
    assert cs["failure"] is None and cs["success"] == seq, (cs, a.stderr()[-3000:])
    assert cs["last_failure"] is None and "running" not in cs, cs
    step = cs["last"]["step"]
    # the files kept for the child are gone once it exited (the figures
    # are refreshed after steps and while idle)
    wait_until(lambda: stats(a)["memory"]["spill_files_held_for_checkpoint"] == 0,
               "the files kept for the checkpoint released")
    assert stats(a)["memory"]["spill_bytes_held_for_checkpoint"] == 0
    kill9(a)

    # restart from that checkpoint (and the journal after it) under the
    # same limit; the rest of the input
    d_limited = tmp_path / "dump_limited"
    b = with_env(SPILL_ENV, lambda: http_pipeline(PROG, *limited, "--dump", d_limited,
                                                  name="b"))
    for c in chunks[done:]:
        push(b, "orders", c)
    assert stats(b)["memory"]["spilled_runs"] > 0
    b.stop()
    assert "resuming from the checkpoint at step %d" % step in b.stderr(), b.stderr()[-3000:]

    # the same input without a limit, no storage
    d_free = tmp_path / "dump_free"
    f = http_pipeline(PROG, "--memory-limit", "none", "--step-rows", "1000", "--dump", d_free,
                      name="free")
    push_customers(f, customers)
    for c in chunks:
        push(f, "orders", c)
    f.stop()
    assert dumps(d_limited) == dumps(d_free)
    want = sqlite_answers(customers, live)
    for v in VIEWS:
        _, rows = read_dump(str(d_limited / (v + ".csv")))
        assert sorted(tuple(r) for r in rows) == want[v], v


def test_a_checkpoint_that_cannot_read_a_spilled_block_fails_and_says_which(http_pipeline,
                                                                            tmp_path):
    # the spill files vanish while the checkpoint's child waits (as a
    # damaged disk would have it): the checkpoint fails, /checkpoint_status
    # and the log name the block, the pipeline answers on; kill -9 and a
    # restart (no checkpoint: the journal from the start) give SQLite's views
    customers, chunks, _ = make_input()
    chunks = chunks[:8]
    st = tmp_path / "st"
    hold = tmp_path / "hold"
    hold.mkdir()
    args = ("--memory-limit", "400K", "--step-rows", "1000", "--storage", st,
            "--checkpoint-interval", "0")
    a = with_env(dict(SPILL_ENV, SLUICE_CKPT_HOLD=str(hold)),
                 lambda: http_pipeline(PROG, *args, name="a"))
    push_customers(a, customers)
    for c in chunks:
        push(a, "orders", c)
    (hold / "hold").touch()
    seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    held = wait_until(lambda: [f for f in os.listdir(hold) if f.startswith("held-")],
                      "the checkpoint child waiting")
    # a checkpoint on its way is visible: its step, age and writing child
    cs = ckpt_status(a)
    assert cs["in_progress"] and cs["running"]["pid"] == int(held[0][len("held-"):]), cs
    assert cs["running"]["secs"] >= 0 and cs["running"]["step"] >= 0, cs
    files = spill_files(st / "spill")
    assert len(files) > 4, files
    for f in files:
        os.unlink(st / "spill" / f)
    (hold / "hold").unlink()
    cs = ckpt_finished(a, seq)
    assert cs["success"] is None and cs["failure"]["sequence_number"] == seq, cs
    msg = cs["failure"]["error"]
    assert "checkpoint at step" in msg and "spilled trace block run-" in msg, msg
    assert "cannot be read back" in msg and "No such file" in msg, msg
    assert "sluice: " + msg in a.stderr()
    assert "internal error" not in a.stderr()
    s = requests.get(a.url("/stats"), timeout=60).json()
    assert s["global_metrics"]["checkpoint"]["failure"] == msg
    cs = ckpt_status(a)
    assert not cs["in_progress"] and "running" not in cs, cs
    assert cs["last_failure"] == msg, cs
    kill9(a)

    d = tmp_path / "dump"
    b = http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0", "--dump", d,
                      name="b")
    b.stop()
    assert "resuming from the checkpoint" not in b.stderr()
    live = []
    for c in chunks:
        for line in c.splitlines():
            x = json.loads(line)
            row = tuple(next(iter(x.values()))[k] for k in ("id", "customer", "amount"))
            if "insert" in x:
                live.append(row)
            else:
                live.remove(row)
    want = sqlite_answers(customers, live)
    for v in VIEWS:
        _, rows = read_dump(str(d / (v + ".csv")))
        assert sorted(tuple(r) for r in rows) == want[v], v


def test_a_checkpoint_child_that_hangs_is_killed_at_the_timeout(http_pipeline, tmp_path):
    # the child waits (SLUICE_CKPT_HOLD) as one stuck on a dead disk would:
    # past --checkpoint-timeout it is killed, the checkpoint fails saying
    # so, the pipeline answers on, and the next checkpoint succeeds
    customers, chunks, _ = make_input()
    st = tmp_path / "st"
    hold = tmp_path / "hold"
    hold.mkdir()
    a = with_env({"SLUICE_CKPT_HOLD": str(hold)},
                 lambda: http_pipeline(PROG, "--storage", st, "--checkpoint-interval", "0",
                                       "--checkpoint-timeout", "0.5"))
    push_customers(a, customers)
    push(a, "orders", chunks[0])
    (hold / "hold").touch()
    seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    held = wait_until(lambda: [f for f in os.listdir(hold) if f.startswith("held-")],
                      "the checkpoint child waiting")
    pid = int(held[0][len("held-"):])
    cs = ckpt_finished(a, seq)
    assert cs["success"] is None and cs["failure"]["sequence_number"] == seq, cs
    msg = cs["failure"]["error"]
    assert "ran longer than the checkpoint timeout of 0.5 s" in msg and "killed" in msg, msg
    assert "(pid %d) ran longer than 0.5 s" % pid in a.stderr()
    assert not os.path.exists("/proc/%d" % pid), "the child is still there (not killed or reaped)"
    # the pipeline goes on stepping, and a later checkpoint is not wedged
    # by the killed one: it starts a child of its own (held, killed again)
    push(a, "orders", chunks[1])
    assert stats(a)["global_metrics"]["total_processed_records"] > 0
    seq2 = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    assert seq2 > seq
    cs = ckpt_finished(a, seq2)
    assert cs["failure"]["sequence_number"] == seq2, cs
    held2 = [f for f in os.listdir(hold) if f.startswith("held-") and f != held[0]]
    assert len(held2) == 1, os.listdir(hold)
    assert "internal error" not in a.stderr()
    # (not POST /stop: its final checkpoint would race the 0.5 s deadline)
    kill9(a)
    (hold / "hold").unlink()


def test_a_hanging_checkpoint_child_on_another_host_is_killed_at_the_timeout(http_pipeline,
                                                                             tmp_path):
    # only host 1's child waits (DIR/hold-host1): the follower kills it at
    # --checkpoint-timeout, the checkpoint fails naming host 1, and the
    # next one (not held) succeeds. Host 0's child and the next checkpoint
    # are not held: they must finish within the timeout, so it is long
    # (10 s) for a loaded machine (0.5 s failed there once).
    customers, chunks, _ = make_input()
    st = tmp_path / "st"
    hold = tmp_path / "hold"
    hold.mkdir()
    a = with_env({"SLUICE_CKPT_HOLD": str(hold)},
                 lambda: http_pipeline(PROG, "--hosts", 2, "--storage", st,
                                       "--checkpoint-interval", "0",
                                       "--checkpoint-timeout", "10"))
    push_customers(a, customers)
    push(a, "orders", chunks[0])
    (hold / "hold-host1").touch()
    try:
        seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
        wait_until(lambda: [f for f in os.listdir(hold) if f.startswith("held-")],
                   "host 1's checkpoint child waiting")
        cs = ckpt_finished(a, seq)
        assert cs["success"] is None and cs["failure"]["sequence_number"] == seq, cs
        msg = cs["failure"]["error"]
        assert "host 1" in msg and "ran longer than the checkpoint timeout of 10 s" in msg, msg
    finally:
        (hold / "hold-host1").unlink()
    assert len([f for f in os.listdir(hold) if f.startswith("held-")]) == 1
    push(a, "orders", chunks[1])
    seq2 = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    cs = ckpt_finished(a, seq2)
    assert cs["success"] == seq2, cs
    assert "internal error" not in a.stderr()

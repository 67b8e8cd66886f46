"""Memory: a PRIMARY KEY table's rows and a materialized view's contents
spill (docs/memory.md, "What spills").

A PRIMARY KEY table of 20000 keys, then updates (a key inserted again with
new values) and deletes by key over later steps, with a materialized view
over it, under a 1M limit in steps of 2000 rows: after every step the
upsert's rows move into its cold trace and the view's contents into its
sink's cold trace, both to files, and the next steps read back only the
keys they touch. The pipeline must not pause ("state that cannot spill",
as it did before these could spill), both operators must have bytes on
disk, and a checkpoint taken while they are spilled, kill -9 and a
restart from it must give, through /query over the whole view (read back
from disk), the rows SQLite holds after the same changes.
"""
import json
import os
import random
import sqlite3

import requests

from conftest import json_input, wait_until
from memkit import ckpt_finished, kill9, stats

VIEW_SQL = "SELECT id, v, nm FROM t WHERE v % 7 <> 3"


def program(path):
    return """
CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, v BIGINT NOT NULL, nm VARCHAR NOT NULL) %s;
CREATE MATERIALIZED VIEW big AS %s;
""" % (json_input(path), VIEW_SQL)


def op(st, kind, rel):
    return next(o for o in st["memory"]["operators"] if o["kind"] == kind and o["relation"] == rel)


def ended(p):
    def check():
        s = requests.get(p.url("/status"), timeout=60).json()
        if s["stalled"]:
            return ("stalled", s["stalled"])
        st = stats(p)
        return ("complete", st) if st["global_metrics"]["pipeline_complete"] else None
    return wait_until(check, "the input read, or the inputs pausing", hang_guard=600)


def changes(n_keys=20000, n_changes=40000, seed=5):
    """Inserts of every key, then updates and deletes (of present and
    absent keys), as JSON lines and as the SQLite statements they mean."""
    rng = random.Random(seed)
    ops = []
    for i in range(n_keys):
        ops.append(("insert", i, rng.randrange(10 ** 6), "n%05d" % rng.randrange(100000)))
    for _ in range(n_changes):
        k = rng.randrange(n_keys + 500)
        if rng.random() < 0.25:
            ops.append(("delete", k, 0, ""))
        else:
            ops.append(("insert", k, rng.randrange(10 ** 6), "u%05d" % rng.randrange(100000)))
    return ops


def test_pk_table_and_view_spill_and_survive_kill_9_and_restart(http_pipeline, tmp_path):
    ops = changes()
    path = tmp_path / "t.json"
    with open(path, "w") as f:
        for kind, k, v, nm in ops:
            f.write(json.dumps({kind: {"id": k, "v": v, "nm": nm}}) + "\n")
    prog = program(path)
    store = tmp_path / "store"
    args = ("--memory-limit", "1M", "--step-rows", "2000", "--storage", str(store),
            "--checkpoint-interval", "0")
    env = {"SLUICE_SPILL_BLOCK": "4096", "SLUICE_SPILL_MIN_RUN": "0"}
    os.environ.update(env)
    try:
        a = http_pipeline(prog, *args, name="a")

        # part way (into the updates), with rows on disk
        def spilled():
            s = requests.get(a.url("/status"), timeout=60).json()
            assert not s["stalled"], s
            st = stats(a)
            done = st["global_metrics"]["total_processed_records"]
            return (st if done >= 26000 and op(st, "upsert", "t")["bytes_on_disk"] > 0
                    and op(st, "sink", "big")["bytes_on_disk"] > 0 else None)
        st = wait_until(spilled, "rows spilled part way", hang_guard=600)
        assert st["memory"]["pressure"] is None, st["memory"]
        seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
        c = ckpt_finished(a, seq)
        assert c["failure"] is None or c["failure"]["sequence_number"] < seq, c
        kill9(a)

        b = http_pipeline(prog, *args, name="b")
        how, st = ended(b)
    finally:
        for k in env:
            del os.environ[k]
    assert how == "complete", st
    assert "resuming from the checkpoint" in b.stderr(), b.stderr()[-3000:]
    assert op(st, "upsert", "t")["bytes_on_disk"] > 0, st["memory"]["operators"]
    assert op(st, "sink", "big")["bytes_on_disk"] > 0, st["memory"]["operators"]
    assert "state that cannot spill" not in a.stderr() + b.stderr()
    q = requests.post(b.url("/query"), params={"format": "json"},
                      data="SELECT id, v, nm FROM big", timeout=120)
    assert q.status_code == 200, q.text
    got = sorted((r["id"], r["v"], r["nm"])
                 for r in (json.loads(line) for line in q.text.splitlines() if line.strip()))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, nm TEXT)")
    for kind, k, v, nm in ops:
        if kind == "insert":
            db.execute("INSERT OR REPLACE INTO t VALUES (?, ?, ?)", (k, v, nm))
        else:
            db.execute("DELETE FROM t WHERE id = ?", (k,))
    want = sorted(db.execute(VIEW_SQL))
    assert len(want) > 12000
    assert got == want
    b.stop()

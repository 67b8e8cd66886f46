"""Memory: an aggregate's groups spill (docs/memory.md, "What spills").

A GROUP BY with tens of thousands of groups (COUNT, SUM, MAX, MIN over a
string) under a 1M limit, in steps of 2000 rows: after every step the
groups move out of the aggregate's map into its trace of cold groups and to
files, and the next steps read back the groups they touch. The pipeline
must not pause ("state that cannot spill", as it did before groups could
spill), the aggregate must have bytes on disk, and a checkpoint taken while
groups are spilled, kill -9 and a restart from it must give the answer
SQLite gives over the same rows. The big view is not materialized (a
materialized copy of every group could not spill); a small materialized
view summarises it so that every group's figures count.
"""
import json
import os
import random
import sqlite3

import requests

from conftest import csv_input, wait_until, write_csv
from memkit import ckpt_finished, kill9, stats

SUMMARY_SQL = """SELECT n, COUNT(*) AS k, SUM(s) AS s, SUM(mx) AS mx, SUM(g * n) AS gn,
  SUM(g * mx) AS gmx, MIN(nm) AS lo, MAX(nm) AS hi
FROM groups GROUP BY n"""


def program(path):
    return """
CREATE TABLE t (id BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT NOT NULL, nm VARCHAR NOT NULL) %s;
CREATE VIEW groups AS SELECT g, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS mx, MIN(nm) AS nm
FROM t GROUP BY g;
CREATE MATERIALIZED VIEW summary AS %s;
""" % (csv_input(path), SUMMARY_SQL)


def agg_of_groups(st):
    return next(o for o in st["memory"]["operators"]
                if o["kind"] == "aggregate" and o["relation"] == "groups")


def ended(p):
    def check():
        s = requests.get(p.url("/status"), timeout=60).json()
        if s["stalled"]:
            return ("stalled", s["stalled"])
        st = stats(p)
        return ("complete", st) if st["global_metrics"]["pipeline_complete"] else None
    return wait_until(check, "the input read, or the inputs pausing", hang_guard=600)


def summary(p):
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT n, k, s, mx, gn, gmx, lo, hi FROM summary", timeout=60)
    assert q.status_code == 200, q.text
    return sorted(tuple(r[c] for c in ("n", "k", "s", "mx", "gn", "gmx", "lo", "hi"))
                  for r in (json.loads(line) for line in q.text.splitlines() if line.strip()))


def test_groups_spill_and_survive_kill_9_and_restart(http_pipeline, tmp_path):
    rng = random.Random(11)
    rows = [(i, rng.randrange(30000), rng.randrange(10 ** 6),
             "n%05d" % rng.randrange(100000)) for i in range(60000)]
    path = tmp_path / "t.csv"
    write_csv(path, rows)
    prog = program(path)
    store = tmp_path / "store"
    args = ("--memory-limit", "1M", "--step-rows", "2000", "--storage", str(store),
            "--checkpoint-interval", "0")
    env = {"SLUICE_SPILL_BLOCK": "4096", "SLUICE_SPILL_MIN_RUN": "0"}
    os.environ.update(env)
    try:
        a = http_pipeline(prog, *args, name="a")

        # part way, with groups on disk (every step spills them at this limit)
        def spilled():
            s = requests.get(a.url("/status"), timeout=60).json()
            assert not s["stalled"], s
            st = stats(a)
            done = st["global_metrics"]["total_processed_records"]
            return st if done >= 10000 and agg_of_groups(st)["bytes_on_disk"] > 0 else None
        st = wait_until(spilled, "groups spilled part way", hang_guard=600)
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
    agg = agg_of_groups(st)
    assert agg["bytes_on_disk"] > 0 and agg["rows"] > 20000, agg
    assert "state that cannot spill" not in a.stderr() + b.stderr()
    got = summary(b)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, g INT, v INT, nm TEXT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    db.execute("CREATE VIEW groups AS SELECT g, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS mx, "
               "MIN(nm) AS nm FROM t GROUP BY g")
    want = sorted(db.execute(SUMMARY_SQL))
    assert got == want
    b.stop()


def test_a_restore_of_more_groups_than_the_limit_spills_them_at_once(http_pipeline, tmp_path):
    """A checkpoint of an aggregate with more groups than a later limit (it
    ran without one), restored under that limit: its groups go straight to
    its cold groups and to files (before this version it loaded them all
    into its map, over the limit, before its first step), and so do its
    MIN/MAX value sets. Paused at the
    start, /stats shows the aggregate within the limit with bytes on disk;
    then, with more input touching old and new groups, the pipeline ends
    without pausing and the summary is SQLite's over all rows."""
    rng = random.Random(12)
    first = [(i, rng.randrange(30000), rng.randrange(10 ** 6),
              "n%05d" % rng.randrange(100000)) for i in range(60000)]
    more = [(60000 + i, rng.randrange(40000), rng.randrange(10 ** 6),
             "n%05d" % rng.randrange(100000)) for i in range(8000)]
    path = tmp_path / "t.csv"
    write_csv(path, first)
    prog = program(path)
    store = tmp_path / "store"
    limit = 2 << 20
    env = {"SLUICE_SPILL_BLOCK": "16384", "SLUICE_SPILL_MIN_RUN": "0"}
    os.environ.update(env)
    try:
        a = http_pipeline(prog, "--storage", str(store), "--checkpoint-interval", "0",
                          "--memory-limit", "none", name="a")
        how, st = ended(a)
        assert how == "complete", st
        agg = agg_of_groups(st)
        assert agg["rows"] > 20000 and agg["bytes_in_memory"] > limit, agg  # (the premise)
        a.stop()
        with open(path, "a") as f:  # more input for the restarted pipeline
            for r in more:
                f.write("%d,%d,%d,%s\n" % r)

        b = http_pipeline(prog, "--storage", str(store), "--checkpoint-interval", "0",
                          "--memory-limit", str(limit), "--step-rows", "2000", "--paused",
                          name="b")

        def restored():
            st = stats(b)
            ops = [o for o in st["memory"]["operators"]
                   if o["kind"] == "aggregate" and o["relation"] == "groups"]
            return ops[0] if ops and ops[0]["rows"] else None
        agg = wait_until(restored, "the restored aggregate in /stats", hang_guard=600)
        assert agg["rows"] > 20000 and agg["bytes_on_disk"] > 0, agg
        assert agg["bytes_in_memory"] < limit // 4, agg
        assert requests.post(b.url("/start"), timeout=60).status_code == 200
        how, st = ended(b)
    finally:
        for k in env:
            del os.environ[k]
    assert how == "complete", st
    assert "resuming from the checkpoint" in b.stderr(), b.stderr()[-3000:]
    assert "inputs are paused" not in b.stderr(), b.stderr()[-3000:]
    assert st["memory"]["pressure"] is None, st["memory"]
    got = summary(b)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, g INT, v INT, nm TEXT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", first + more)
    db.execute("CREATE VIEW groups AS SELECT g, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS mx, "
               "MIN(nm) AS nm FROM t GROUP BY g")
    want = sorted(db.execute(SUMMARY_SQL))
    assert len(want) > 3
    assert got == want
    b.stop()

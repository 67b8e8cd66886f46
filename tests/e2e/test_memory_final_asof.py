"""Memory: the rows an emit_final view holds and the partitions of an ASOF
join spill (docs/memory.md, "What spills"; issue 20).

An emit_final view of a per-minute, per-group aggregate over a table with
LATENESS of one hour (about 60 windows open, each with a few hundred
groups held) and a LEFT ASOF join over 20,000 keys (inserts and deletes on
both sides, summarised into a small materialized view) run under a 1M
limit, fed over HTTP in steps of about 1000 changes. After every step the
emit_final hold moves into its cold trace and the ASOF partitions into
theirs, and to files; the next steps read back the windows a watermark
closes and the partitions they touch. The pipeline must not pause ("state
that cannot spill", as it did before these could spill), both operators
must have bytes on disk and read blocks back, and a checkpoint taken while
they are spilled, kill -9 and a restart from it with the rest of the input
must give the answers SQLite gives over the same rows: the closed windows,
once each, and the ASOF matches (per left row, the right row of its key
with the greatest ts at or below its own; (k, ts) is unique on the right).

Waits poll observable state with a hang guard; no wall-clock bounds.
"""
import datetime
import json
import random
import sqlite3

import requests

from conftest import wait_until
from test_memory_checkpoint import SPILL_ENV, ckpt_finished, kill9, push, with_env

EPOCH = datetime.datetime(1970, 1, 1)
T0 = int((datetime.datetime(2024, 3, 1) - EPOCH).total_seconds())
LATENESS = 3600
GROUPS = 300
KEYS = 20000
CHUNKS = 30
EVENTS = 1000  # per chunk, into e
LEFT, RIGHT, DELETES = 600, 300, 60  # per chunk, into q and r

FINAL = """SELECT window_start, g, COUNT(*) AS c, SUM(v) AS s
  FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
  GROUP BY window_start, g"""
ASOF = """SELECT q.id, q.k, q.ts, q.v, r.ts AS rts, r.p
  FROM q LEFT ASOF JOIN r MATCH_CONDITION (q.ts >= r.ts) ON q.k = r.k"""
ASOF_SUM = """SELECT k % 16 AS b, COUNT(*) AS n, SUM(v) AS sv, SUM(COALESCE(p, -7)) AS sp,
  SUM(COALESCE(rts, -3)) AS st, SUM(COALESCE(p, 0) * (id % 1000)) AS pi
  FROM j GROUP BY k % 16"""
PROG = """
CREATE TABLE e (id BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT NOT NULL,
  ts TIMESTAMP NOT NULL LATENESS INTERVAL '1' HOUR);
CREATE TABLE q (id BIGINT NOT NULL, k BIGINT NOT NULL, ts BIGINT NOT NULL, v BIGINT NOT NULL);
CREATE TABLE r (k BIGINT NOT NULL, ts BIGINT NOT NULL, p BIGINT NOT NULL);
CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_start') AS %s;
CREATE VIEW j AS %s;
CREATE MATERIALIZED VIEW j_summary AS %s;
""" % (FINAL, ASOF, ASOF_SUM)


def ts_text(sec):
    return (EPOCH + datetime.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def lines(table, op, rows, cols):
    return "".join(json.dumps({op: dict(zip(cols, r))}) + "\n" for r in rows)


def make_input():
    """CHUNKS chunks, each (e body, q body, r body): e in time order (at
    most a quarter of the lateness behind: never late), about 150 events a
    minute; q and r inserts over KEYS keys with a few deletes of live
    rows. Returns the chunks and the final rows of e, q and r."""
    rng = random.Random(31)
    chunks, events, qlive, rlive, rkeys = [], [], {}, {}, set()
    n = qid = 0
    for _ in range(CHUNKS):
        ev = []
        for _ in range(EVENTS):
            ts = T0 + n * 60 // 150 - rng.randrange(0, LATENESS // 4)
            ev.append((n, rng.randrange(GROUPS), rng.randrange(-50, 100), ts))
            n += 1
        events += ev
        ebody = "".join(json.dumps({"insert": {"id": i, "g": g, "v": v, "ts": ts_text(t)}}) + "\n"
                        for i, g, v, t in ev)
        qrows = []
        for _ in range(LEFT):
            row = (qid, rng.randrange(KEYS), rng.randrange(100000), rng.randrange(1000))
            qid += 1
            qlive[row[0]] = row
            qrows.append(row)
        qdel = [qlive.pop(i) for i in rng.sample(sorted(qlive), DELETES)]
        rrows = []
        while len(rrows) < RIGHT:
            row = (rng.randrange(KEYS), rng.randrange(100000), rng.randrange(1000))
            if (row[0], row[1]) in rkeys:
                continue
            rkeys.add((row[0], row[1]))
            rlive[(row[0], row[1])] = row
            rrows.append(row)
        rdel = [rlive.pop(k) for k in rng.sample(sorted(rlive), DELETES)]
        qcols, rcols = ("id", "k", "ts", "v"), ("k", "ts", "p")
        chunks.append((ebody,
                       lines("q", "insert", qrows, qcols) + lines("q", "delete", qdel, qcols),
                       lines("r", "insert", rrows, rcols) + lines("r", "delete", rdel, rcols)))
    return chunks, events, sorted(qlive.values()), sorted(rlive.values())


def stats(p):
    return requests.get(p.url("/stats"), timeout=60).json()


def op_of(st, kind):
    return next(o for o in st["memory"]["operators"] if o["kind"] == kind)


def query(p, sql, cols):
    q = requests.post(p.url("/query"), params={"format": "json"}, data=sql, timeout=120)
    assert q.status_code == 200, q.text
    return sorted(tuple(r[c] for c in cols)
                  for r in (json.loads(line) for line in q.text.splitlines() if line.strip()))


def sqlite_answers(events, qrows, rrows):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e (id INT, g INT, v INT, ts INT)")
    db.executemany("INSERT INTO e VALUES (?, ?, ?, ?)", events)
    db.execute("CREATE TABLE q (id INT, k INT, ts INT, v INT)")
    db.executemany("INSERT INTO q VALUES (?, ?, ?, ?)", qrows)
    db.execute("CREATE TABLE r (k INT, ts INT, p INT)")
    db.executemany("INSERT INTO r VALUES (?, ?, ?)", rrows)
    db.execute("CREATE INDEX rk ON r (k, ts)")
    # the windows the final watermark (largest ts - lateness) closed
    mx = max(t for _, _, _, t in events)
    closed = ((mx - LATENESS) // 60) * 60
    final = db.execute(
        "SELECT datetime(ws, 'unixepoch'), g, COUNT(*), SUM(v) FROM "
        "(SELECT (ts / 60) * 60 AS ws, g, v FROM e) WHERE ws < ? GROUP BY ws, g",
        (closed,)).fetchall()
    asof = db.execute(
        "SELECT q.k % 16, COUNT(*), SUM(q.v), SUM(COALESCE(r.p, -7)), SUM(COALESCE(r.ts, -3)), "
        "SUM(COALESCE(r.p, 0) * (q.id % 1000)) FROM q LEFT JOIN r ON r.k = q.k AND r.ts = "
        "(SELECT MAX(r2.ts) FROM r r2 WHERE r2.k = q.k AND r2.ts <= q.ts) "
        "GROUP BY q.k % 16").fetchall()
    return sorted(final), sorted(asof)


def feed(p, chunk):
    s = requests.get(p.url("/status"), timeout=60).json()
    assert not s["stalled"], s
    ebody, qbody, rbody = chunk
    push(p, "e", ebody)
    push(p, "r", rbody)
    push(p, "q", qbody)


def test_emit_final_holds_and_asof_partitions_spill_and_survive_kill_9_and_restart(
        http_pipeline, tmp_path):
    chunks, events, qrows, rrows = make_input()
    store = tmp_path / "store"
    args = ("--memory-limit", "1M", "--step-rows", "1000", "--storage", str(store),
            "--checkpoint-interval", "0")
    a = with_env(SPILL_ENV, lambda: http_pipeline(PROG, *args, name="a"))
    half = CHUNKS // 2
    for c in chunks[:half]:
        feed(a, c)
    st = stats(a)
    assert st["memory"]["pressure"] is None, st["memory"]
    for kind in ("emit_final", "asof"):
        o = op_of(st, kind)
        assert o["bytes_on_disk"] > 0 and o["cache_misses"] > 0, o
    # a checkpoint while the holds and partitions are spilled, then kill -9
    seq = requests.post(a.url("/checkpoint"), timeout=60).json()["checkpoint_sequence_number"]
    c = ckpt_finished(a, seq)
    assert c["failure"] is None and c["success"] == seq, (c, a.stderr()[-3000:])
    kill9(a)

    b = with_env(SPILL_ENV, lambda: http_pipeline(PROG, *args, name="b"))
    for c in chunks[half:]:
        feed(b, c)

    def settled():
        st = stats(b)
        return st if st["global_metrics"]["total_processed_records"] > 0 else None
    st = wait_until(settled, "the restarted pipeline's figures", hang_guard=600)
    assert st["memory"]["pressure"] is None, st["memory"]
    assert "resuming from the checkpoint" in b.stderr(), b.stderr()[-3000:]
    for kind in ("emit_final", "asof"):
        o = op_of(st, kind)
        assert o["bytes_on_disk"] > 0 and o["cache_misses"] > 0, o
    assert "state that cannot spill" not in a.stderr() + b.stderr()
    want_final, want_asof = sqlite_answers(events, qrows, rrows)
    got_final = query(b, "SELECT window_start, g, c, s FROM f", ("window_start", "g", "c", "s"))
    got_asof = query(b, "SELECT b, n, sv, sp, st, pi FROM j_summary",
                     ("b", "n", "sv", "sp", "st", "pi"))
    assert len(want_final) > 10000 and len(want_asof) == 16
    assert got_asof == want_asof
    assert got_final == want_final
    b.stop()

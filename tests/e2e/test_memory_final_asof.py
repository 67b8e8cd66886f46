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
import json
import random

from memkit import T0, op_of, push, query, spill_kill_restart, sqlite_final_asof, ts_text

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


def feed(p, chunk):
    ebody, qbody, rbody = chunk
    push(p, "e", ebody)
    push(p, "r", rbody)
    push(p, "q", qbody)


def test_emit_final_holds_and_asof_partitions_spill_and_survive_kill_9_and_restart(
        http_pipeline, tmp_path):
    chunks, events, qrows, rrows = make_input()
    args = ("--memory-limit", "1M", "--step-rows", "1000", "--storage", str(tmp_path / "store"),
            "--checkpoint-interval", "0")
    b, st = spill_kill_restart(http_pipeline, PROG, args, chunks, feed, ("emit_final", "asof"))
    for kind in ("emit_final", "asof"):
        assert op_of(st, kind)["cache_misses"] > 0, op_of(st, kind)
    want_final, want_asof = sqlite_final_asof(
        events, qrows, rrows, LATENESS,
        "COUNT(*), SUM(q.v), SUM(COALESCE(r.p, -7)), SUM(COALESCE(r.ts, -3)), "
        "SUM(COALESCE(r.p, 0) * (q.id % 1000))")
    got_final = query(b, "SELECT window_start, g, c, s FROM f", ("window_start", "g", "c", "s"))
    got_asof = query(b, "SELECT b, n, sv, sp, st, pi FROM j_summary",
                     ("b", "n", "sv", "sp", "st", "pi"))
    assert len(want_final) > 10000 and len(want_asof) == 16
    assert got_asof == want_asof
    assert got_final == want_final
    b.stop()

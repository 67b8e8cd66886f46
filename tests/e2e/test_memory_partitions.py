"""Memory: the partitions of top-k and window operators spill
(docs/memory.md, "What spills"; issue 20).

A top 3 per key (ROW_NUMBER() <= 3) over 30,000 keys and a window view
(a ROWS frame SUM and ROW_NUMBER per key) under a 1M limit, fed over HTTP
in steps of about 2000 changes: inserts, updates (a delete and an insert
of the same id) and deletes. After every step the partitions move out of
the operators' maps into their traces of cold partitions and to files;
the next steps read back the partitions they touch. The pipeline must not
pause ("state that cannot spill", as it did before partitions could
spill), both operators must have bytes on disk, and a checkpoint taken
while partitions are spilled, kill -9 and a restart from it with the rest
of the input must give the answers SQLite gives over the same rows. The
top-k and window views are not materialized (a materialized copy of every
row could not spill); small materialized views summarise them so that
every output row counts.

Waits poll observable state with a hang guard; no wall-clock bounds.
"""
import json
import random
import sqlite3

from memkit import op_of, push, query, spill_kill_restart

TOP_SQL = """SELECT k, v, id FROM (SELECT k, v, id,
  ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM t) x WHERE rn <= 3"""
WIN_SQL = """SELECT k, id, v,
  SUM(v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s2,
  ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) AS rn FROM t"""
TOP_SUM = """SELECT k % 16 AS b, COUNT(*) AS n, SUM(v) AS sv, SUM(id) AS si,
  SUM(k * v) AS kv, SUM(v * (id % 1000)) AS vi FROM top3 GROUP BY k % 16"""
WIN_SUM = """SELECT k % 16 AS b, COUNT(*) AS n, SUM(s2) AS ss, SUM(rn * v) AS rv,
  SUM(s2 * rn) AS sr, SUM(rn * id) AS ri FROM win GROUP BY k % 16"""
PROG = """
CREATE TABLE t (id BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL);
CREATE VIEW top3 AS %s;
CREATE VIEW win AS %s;
CREATE MATERIALIZED VIEW top_summary AS %s;
CREATE MATERIALIZED VIEW win_summary AS %s;
""" % (TOP_SQL, WIN_SQL, TOP_SUM, WIN_SUM)
KEYS = 30000
CHUNK = 2000
CHUNKS = 40
COLS = ("id", "k", "v")


def make_input():
    """CHUNKS chunks of changes (JSON lines): each inserts rows over the
    keys, updates a tenth of the live rows' values and deletes another
    tenth; returns the chunks and the rows live at the end."""
    rng = random.Random(21)
    live, chunks, next_id = {}, [], 0
    for _ in range(CHUNKS):
        lines = []
        for _ in range(CHUNK * 8 // 10):
            row = (next_id, rng.randrange(KEYS), rng.randrange(1000))
            next_id += 1
            live[row[0]] = row
            lines.append({"insert": dict(zip(COLS, row))})
        ids = rng.sample(sorted(live), CHUNK // 5)
        for i in ids[:CHUNK // 10]:  # updates
            old = live[i]
            new = (i, old[1], rng.randrange(1000))
            live[i] = new
            lines.append({"delete": dict(zip(COLS, old))})
            lines.append({"insert": dict(zip(COLS, new))})
        for i in ids[CHUNK // 10:]:  # deletes
            lines.append({"delete": dict(zip(COLS, live.pop(i)))})
        chunks.append("".join(json.dumps(x) + "\n" for x in lines))
    return chunks, sorted(live.values())


def sqlite_answers(live):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, k INT, v INT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", live)
    db.execute("CREATE VIEW top3 AS " + TOP_SQL)
    db.execute("CREATE VIEW win AS " + WIN_SQL)
    return sorted(db.execute(TOP_SUM)), sorted(db.execute(WIN_SUM))


def test_top_k_and_window_partitions_spill_and_survive_kill_9_and_restart(http_pipeline,
                                                                          tmp_path):
    chunks, live = make_input()
    args = ("--memory-limit", "1M", "--step-rows", "2000", "--storage", str(tmp_path / "store"),
            "--checkpoint-interval", "0")
    b, st = spill_kill_restart(http_pipeline, PROG, args, chunks,
                               lambda p, c: push(p, "t", c), ("top-k", "window"))
    for kind in ("top-k", "window"):
        assert op_of(st, kind)["rows"] > 20000, op_of(st, kind)
    got_top = query(b, "SELECT b, n, sv, si, kv, vi FROM top_summary",
                    ("b", "n", "sv", "si", "kv", "vi"))
    got_win = query(b, "SELECT b, n, ss, rv, sr, ri FROM win_summary",
                    ("b", "n", "ss", "rv", "sr", "ri"))
    want_top, want_win = sqlite_answers(live)
    assert len(want_top) == 16 and sum(r[1] for r in want_top) > 3 * KEYS // 2
    assert got_top == want_top
    assert got_win == want_win
    b.stop()

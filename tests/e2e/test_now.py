"""NOW() / CURRENT_TIMESTAMP in views: temporal filters (docs/sql.md, "NOW()
and temporal filters").

With SLUICE_CLOCK=manual the clock moves only when the test pushes a time to
the clock table `now`, so every check is deterministic: random inserts and
deletes into t interleaved with clock moves (and steps where only the clock
moves), and after each step every view is compared with SQLite computing
the same filter over t's current contents at the same clock value. Also: the
temporal filter's state holds only rows whose status can still change (it
empties once the clock has passed every bound), a restart from a checkpoint
keeps the clock, the wall clock (the default) moves a view without any
input, and the uses of NOW() that are not temporal filters are refused.
"""
import datetime
import json
import random
import sqlite3

import pytest
import requests

from conftest import run, wait_until
from httpkit import ingress, lines, query

EPOCH = datetime.datetime(1970, 1, 1)
T0 = int((datetime.datetime(2024, 3, 1) - EPOCH).total_seconds())

PROG = """
CREATE TABLE t (id INT NOT NULL, k INT, ts TIMESTAMP);
CREATE MATERIALIZED VIEW recent AS SELECT id, ts FROM t WHERE ts >= NOW() - INTERVAL '1' HOUR;
CREATE MATERIALIZED VIEW due AS SELECT id FROM t WHERE ts <= CURRENT_TIMESTAMP;
CREATE MATERIALIZED VIEW win AS SELECT k, COUNT(*) AS c FROM t
    WHERE ts BETWEEN NOW() - INTERVAL '10' MINUTE AND NOW() + INTERVAL '5' MINUTE GROUP BY k;
CREATE MATERIALIZED VIEW strict AS SELECT id FROM t
    WHERE NOW() > ts + INTERVAL '30' MINUTE AND ts + INTERVAL '2' HOUR > NOW() AND k > 1;
"""

# the same views in SQLite, over epoch seconds e, at clock c (epoch seconds)
SQLITE = {
    "recent": "SELECT id, datetime(e, 'unixepoch') FROM t WHERE e >= :c - 3600",
    "due": "SELECT id FROM t WHERE e <= :c",
    "win": "SELECT k, COUNT(*) FROM t WHERE e BETWEEN :c - 600 AND :c + 300 GROUP BY k",
    "strict": "SELECT id FROM t WHERE :c > e + 1800 AND e + 7200 > :c AND k > 1",
}


def ts_text(sec):
    return (EPOCH + datetime.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def norm(rows):
    return sorted(tuple("NULL" if x is None else str(x) for x in r) for r in rows)


def view_rows(p, name):
    return norm([list(r.values()) for r in query(p, "SELECT * FROM %s" % name)])


def set_clock(p, sec):
    ingress(p, "now", lines({"insert": {"ts": ts_text(sec)}}), wait="true")


@pytest.fixture
def manual_clock(monkeypatch):
    monkeypatch.setenv("SLUICE_CLOCK", "manual")


def check_all(p, db, clock):
    for name, q in SQLITE.items():
        want = norm(db.execute(q, {"c": clock}).fetchall())
        got = view_rows(p, name)
        assert got == want, (name, clock, got, want)


def operator_rows(p, kind):
    mem = requests.get(p.url("/stats"), timeout=60).json()["memory"]
    return sum(o["rows"] for o in mem["operators"] if o["kind"] == kind)


@pytest.mark.parametrize("workers", [1, 3])
def test_temporal_filters_match_sqlite_as_the_clock_moves(http_pipeline, manual_clock, workers):
    p = http_pipeline(PROG, "--workers", workers)
    rnd = random.Random(workers)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, k INT, e INT)")
    live, next_id, clock = [], 0, T0
    # before the clock has a value, no row passes
    ingress(p, "t", lines({"insert": {"id": 999, "k": 1, "ts": ts_text(T0)}}), wait="true")
    for name in SQLITE:
        assert view_rows(p, name) == [], name
    ingress(p, "t", lines({"delete": {"id": 999, "k": 1, "ts": ts_text(T0)}}), wait="true")
    set_clock(p, clock)
    check_all(p, db, clock)
    for step in range(60):
        recs = []
        for _ in range(rnd.randrange(0, 8)):
            if live and rnd.random() < 0.3:
                row = live.pop(rnd.randrange(len(live)))
                recs.append({"delete": {"id": row[0], "k": row[1],
                                        "ts": None if row[2] is None else ts_text(row[2])}})
                db.execute("DELETE FROM t WHERE rowid = (SELECT rowid FROM t WHERE id = ? LIMIT 1)",
                           (row[0],))
            else:
                e = None if rnd.random() < 0.05 else clock + rnd.randrange(-3 * 3600, 3600)
                row = (next_id, rnd.randrange(0, 4), e)
                next_id += 1
                live.append(row)
                recs.append({"insert": {"id": row[0], "k": row[1],
                                        "ts": None if e is None else ts_text(e)}})
                db.execute("INSERT INTO t VALUES (?, ?, ?)", row)
        if recs:
            ingress(p, "t", lines(*recs), wait="true")
        if rnd.random() < 0.7:  # also steps where only the clock moves
            clock += rnd.choice([0, 1, 59, 60, 300, 600, 1799, 1800, 3600])
            set_clock(p, clock)
        check_all(p, db, clock)
    # the state holds only rows whose status can still change: past every
    # bound, nothing is held (and every view but `due` is empty)
    assert operator_rows(p, "temporal_filter") > 0
    clock += 3 * 3600 + 1
    set_clock(p, clock)
    check_all(p, db, clock)
    assert operator_rows(p, "temporal_filter") == 0
    # a clock that goes back is late: dropped, the views keep the clock
    set_clock(p, clock - 7200)
    check_all(p, db, clock)
    p.stop()


def test_clock_survives_a_restart(http_pipeline, manual_clock, tmp_path):
    store = tmp_path / "store"
    p = http_pipeline(PROG, "--storage", store, name="a")
    rows = [{"insert": {"id": i, "k": 2, "ts": ts_text(T0 + i * 600)}} for i in range(12)]
    ingress(p, "t", lines(*rows), wait="true")
    set_clock(p, T0 + 3600)
    before = {name: view_rows(p, name) for name in SQLITE}
    requests.post(p.url("/checkpoint"), timeout=60).raise_for_status()
    p.stop()
    q = http_pipeline(PROG, "--storage", store, name="b")
    assert {name: view_rows(q, name) for name in SQLITE} == before
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, k INT, e INT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, 2, T0 + i * 600) for i in range(12)])
    set_clock(q, T0 + 2 * 3600)
    check_all(q, db, T0 + 2 * 3600)
    q.stop()


def test_wall_clock_moves_a_view_without_input(http_pipeline, monkeypatch):
    monkeypatch.setenv("SLUICE_CLOCK", "50")  # a tick every 50 ms
    p = http_pipeline("CREATE TABLE t (id INT, ts TIMESTAMP);\n"
                      "CREATE MATERIALIZED VIEW due AS SELECT id FROM t WHERE ts <= NOW();\n"
                      "CREATE MATERIALIZED VIEW fresh AS SELECT id FROM t "
                      "WHERE ts > NOW() - INTERVAL '1' SECOND;\n")
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    soon = (now + datetime.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
    ingress(p, "t", lines({"insert": {"id": 1, "ts": soon}}), wait="true")
    # no more input: the clock alone brings the row into `due`, later takes
    # it out of `fresh` (waits for the events, with a hang guard only)
    wait_until(lambda: view_rows(p, "due") == [("1",)], "the row entering due")
    wait_until(lambda: view_rows(p, "fresh") == [], "the row leaving fresh")
    p.stop()


@pytest.mark.parametrize("sql,msg", [
    ("SELECT NOW() AS n FROM t", "supported only in a view's temporal filter"),
    ("SELECT id FROM t WHERE ts = NOW()", "supported only in a view's temporal filter"),
    ("SELECT id FROM t WHERE ts >= NOW() - INTERVAL '1' MONTH",
     "supported only in a view's temporal filter"),
    ("SELECT id FROM t WHERE id >= NOW()", "compares NOW() with a TIMESTAMP"),
    ("SELECT id FROM t WHERE ts >= NOW() OR id = 1", "supported only in a view's temporal filter"),
    ("SELECT CURRENT_DATE AS d FROM t", "CURRENT_DATE is not supported"),
])
def test_other_uses_of_now_are_refused(tmp_path, sql, msg):
    prog = tmp_path / "bad.sql"
    prog.write_text("CREATE TABLE t (id INT, ts TIMESTAMP);\nCREATE VIEW v AS %s;\n" % sql)
    r = run(["check", str(prog)])
    assert r.returncode != 0
    assert msg in r.stderr, r.stderr
    assert "2:" in r.stderr  # line:column of the view's text

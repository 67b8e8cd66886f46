"""Watermarks: LATENESS, late rows, 'emit_final' and state that stops growing
(docs/streaming.md).

One table t(id, v, ts TIMESTAMP LATENESS INTERVAL '1' HOUR) fed from a JSON
file of events in nearly increasing time order: each row is at most half the
lateness behind the largest ts before it (so never late, whatever the step
boundaries), and every so often a row far behind (more than twice the
lateness below a row at least 60 rows earlier: with at most 10 rows per
worker per step that row was in an earlier step, so the watermark the late
row meets is already past it, whatever the step boundaries). Late-drop
depends on arrival order and step boundaries in general; the data here is
built so that it does not, and the test knows which rows are late.

Checked against SQLite over the rows that are not late: a TUMBLE aggregate,
a HOP aggregate, DISTINCT window starts, and the 'emit_final' view (the
windows whose start is below the final watermark's window start, each once).
Also: /stats late_records and /metrics sluice_late_records_total, the state
of the aggregates (groups kept) staying O(open windows) against a copy of
the table without LATENESS, a restart from a checkpoint that keeps the
watermark (rows late only against the restored watermark are dropped), and
the compile errors of the syntax.
"""
import datetime
import json
import re
import sqlite3

import pytest
import requests

from conftest import json_input, read_dump, run, run_ok, wait_until

EPOCH = datetime.datetime(1970, 1, 1)
BASE = datetime.datetime(2024, 3, 1)
HOUR = 3600
LATENESS = HOUR


def ts_text(sec):
    return (EPOCH + datetime.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")


def gen_events(n, first_id=0, start=None, every=97, seed=1):
    """n events ~12 minutes apart with jitter; every `every`-th is late.
    Returns (events, late ids, the largest ts)."""
    import random
    rnd = random.Random(seed)
    t0 = int((BASE - EPOCH).total_seconds()) if start is None else start
    events, late, mx = [], set(), None
    for i in range(n):
        ident = first_id + i
        if i >= 60 and i % every == 0:
            ts = mx - 2 * LATENESS - rnd.randrange(1, 5 * HOUR)  # far behind: late
            late.add(ident)
        else:
            ts = t0 + i * 720 - rnd.randrange(0, LATENESS // 2)
            mx = ts if mx is None else max(mx, ts)
        events.append({"id": ident, "v": rnd.randrange(-50, 100), "ts": ts})
    return events, late, mx


def write_events(path, events, mode="w"):
    with open(path, mode) as f:
        for e in events:
            f.write(json.dumps({"insert": {"id": e["id"], "v": e["v"], "ts": ts_text(e["ts"])}}) + "\n")


VIEWS = {
    "w": "SELECT window_start, window_end, COUNT(*) AS c, SUM(v) AS s "
         "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR)) "
         "GROUP BY window_start, window_end",
    "h": "SELECT window_start, COUNT(*) AS c, MAX(id) AS m "
         "FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '30' MINUTE, INTERVAL '1' HOUR)) "
         "GROUP BY window_start",
    "d": "SELECT DISTINCT window_start FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
         "INTERVAL '2' HOUR)) WHERE v > 0",
}
# SQLite: the window starts by integer arithmetic on epoch seconds
SQLITE = {
    "w": "SELECT datetime(ws, 'unixepoch'), datetime(ws + 3600, 'unixepoch'), COUNT(*), SUM(v) "
         "FROM (SELECT (e / 3600) * 3600 AS ws, v FROM t) GROUP BY ws",
    "h": "SELECT datetime(ws, 'unixepoch'), COUNT(*), MAX(id) FROM ("
         "SELECT (e / 1800) * 1800 AS ws, id FROM t UNION ALL "
         "SELECT (e / 1800) * 1800 - 1800 AS ws, id FROM t) GROUP BY ws",
    "d": "SELECT DISTINCT datetime((e / 7200) * 7200, 'unixepoch') FROM t WHERE v > 0",
}


def program(tmp_path, inp, lateness=True, extra="", watermark_for=False):
    """watermark_for: the lateness spelled as Flink's WATERMARK FOR clause
    (declared before its column, which the clause allows)."""
    lat = " LATENESS INTERVAL '1' HOUR" if lateness and not watermark_for else ""
    wm = "WATERMARK FOR ts AS ts - INTERVAL '1' HOUR, " if watermark_for else ""
    sql = ["CREATE TABLE t (%sid INT NOT NULL, v INT, ts TIMESTAMP%s) %s;"
           % (wm, lat, json_input(inp))]
    for name, q in VIEWS.items():
        sql.append("CREATE MATERIALIZED VIEW %s AS %s;" % (name, q))
    if lateness:
        sql.append("CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_end') AS %s;"
                   % VIEWS["w"])
    sql.append(extra)
    p = tmp_path / ("prog%s%s.sql" % ("" if lateness else "_nolate", "_wm" if watermark_for else ""))
    p.write_text("\n".join(sql) + "\n")
    return p


def sqlite_of(events):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, v INT, e INT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(e["id"], e["v"], e["ts"]) for e in events])
    return db


def norm(rows):
    return sorted(tuple("" if x is None else str(x) for x in r) for r in rows)


def check_views(dump, kept, final_wm):
    db = sqlite_of(kept)
    for name, q in SQLITE.items():
        _, got = read_dump(dump / ("%s.csv" % name))
        assert norm(got) == norm(db.execute(q).fetchall()), name
    # emit_final: the windows closed by the final watermark, once each
    closed = (final_wm // HOUR) * HOUR
    want = db.execute(SQLITE["w"].replace("GROUP BY ws", "GROUP BY ws HAVING ws < %d" % closed))
    _, got = read_dump(dump / "f.csv")
    want = norm(want.fetchall())
    assert norm(got) == want and len(want) > 100


def test_lateness_and_emit_final_syntax():
    ok = [
        "CREATE TABLE t (ts TIMESTAMP LATENESS INTERVAL '1' HOUR, v INT);",
        "CREATE TABLE t (ts TIMESTAMP NOT NULL LATENESS INTERVAL 5 MINUTE);",
        "CREATE TABLE t (n BIGINT LATENESS 100, v INT);",
        "CREATE TABLE t (d DATE LATENESS INTERVAL '2' DAY);",
        "CREATE TABLE t (ts TIMESTAMP, v INT);\nLATENESS t.ts INTERVAL '10' SECOND;",
        # the statement after a view that reads the column: emit_final still sees it
        "CREATE TABLE t (ts TIMESTAMP, v INT);\n"
        "CREATE VIEW f WITH ('emit_final' = 'true') AS SELECT window_start, COUNT(*) AS c FROM "
        "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY window_start;\n"
        "LATENESS t.ts INTERVAL '1' HOUR;",
        "CREATE TABLE t (n INT LATENESS 10);\n"
        "CREATE VIEW f WITH ('emit_final' = 'k') AS SELECT n + 5 AS k, COUNT(*) AS c FROM t "
        "GROUP BY n + 5;",
    ]
    bad = [
        ("CREATE TABLE t (s VARCHAR LATENESS 1);", "LATENESS on column s of type VARCHAR"),
        ("CREATE TABLE t (ts TIMESTAMP LATENESS 5);", "must be a constant INTERVAL"),
        ("CREATE TABLE t (n INT LATENESS INTERVAL '1' HOUR);", "must be a constant integer"),
        ("CREATE TABLE t (n INT LATENESS -3);", "must not be negative"),
        ("CREATE TABLE t (a INT LATENESS 1, b INT LATENESS 2);", "one watermark column per table"),
        ("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT a FROM t;\nLATENESS v.a 10;",
         "LATENESS on a view (v) is not supported"),
        ("LATENESS t.a 10;\nCREATE TABLE t (a INT);", "not a table declared before it"),
        ("CREATE TABLE t (a INT);\nLATENESS t.b 10;", "column \"b\" not found in t"),
        ("CREATE TABLE t (a INT LATENESS 1, b INT);\n"
         "CREATE VIEW v WITH ('emit_final' = 'c') AS SELECT b, COUNT(*) AS c FROM t GROUP BY b;",
         "its column c has none"),
        ("CREATE TABLE t (a INT LATENESS 1, b INT);\n"
         "CREATE VIEW v WITH ('emit_final' = 'zz') AS SELECT b FROM t;", "not one of its columns"),
        ("CREATE TABLE t (a INT, b INT) WITH ('emit_final' = 'a');", "applies to views"),
        ("CREATE TABLE t (a INT LATENESS 1);\n"
         "CREATE VIEW v WITH ('emit_final' = 'true') AS SELECT a * 2 AS x FROM t;",
         "none of its columns has one"),
    ]
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for i, text in enumerate(ok):
            p = "%s/ok%d.sql" % (d, i)
            open(p, "w").write(text)
            out = run_ok(["check", p]).stdout
            assert "lateness" in out, out
        for i, (text, msg) in enumerate(bad):
            p = "%s/bad%d.sql" % (d, i)
            open(p, "w").write(text)
            res = run(["check", p])
            assert res.returncode != 0 and msg in res.stderr, (text, res.stderr)
            assert "AddressSanitizer" not in res.stderr


def test_watermark_for_syntax():
    """Flink's WATERMARK FOR col AS col [- constant] is LATENESS on col: the
    same compiled source (lateness in the circuit listing) as the LATENESS
    spelling; any other expression is refused where it is wrong."""
    same = [
        ("CREATE TABLE t (ts TIMESTAMP, v INT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);",
         "CREATE TABLE t (ts TIMESTAMP LATENESS INTERVAL '5' SECOND, v INT);"),
        ("CREATE TABLE t (WATERMARK FOR ts AS ts - INTERVAL '1' HOUR, ts TIMESTAMP NOT NULL);",
         "CREATE TABLE t (ts TIMESTAMP NOT NULL LATENESS INTERVAL '1' HOUR);"),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR TS AS ts);",
         "CREATE TABLE t (ts TIMESTAMP LATENESS INTERVAL '0' SECOND);"),
        ("CREATE TABLE t (d DATE, watermark for d as d);", "CREATE TABLE t (d DATE LATENESS INTERVAL '0' DAY);"),
        ("CREATE TABLE t (n BIGINT, v INT, WATERMARK FOR n AS n - 100);",
         "CREATE TABLE t (n BIGINT LATENESS 100, v INT);"),
        ("CREATE TABLE t (n INT, WATERMARK FOR n AS n);", "CREATE TABLE t (n INT LATENESS 0);"),
        ("CREATE TABLE t (d DATE, WATERMARK FOR d AS d - INTERVAL '2' DAY);",
         "CREATE TABLE t (d DATE LATENESS INTERVAL '2' DAY);"),
    ]
    W = "WATERMARK FOR ts AS ... supports only ts or ts - <constant>"
    bad = [  # (program, line, column, message)
        ("CREATE TABLE t (id INT, ts TIMESTAMP,\n  WATERMARK FOR ts AS id - INTERVAL '5' SECOND);",
         2, 23, W),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR ts AS ts + INTERVAL '5' SECOND);", 1, 51, W),
        ("CREATE TABLE t (id INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - id);", 1, 64, W),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR ts AS CAST(ts AS DATE));", 1, 51, W),
        ("CREATE TABLE t (ts TIMESTAMP,\n WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE - "
         "INTERVAL '1' SECOND);", 2, 22, W),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR zz AS zz);", 1, 45,
         'WATERMARK FOR names column "zz", which table t does not have'),
        ("CREATE TABLE t (ts TIMESTAMP LATENESS INTERVAL '1' SECOND, WATERMARK FOR ts AS ts);",
         1, 60, "column ts has both LATENESS and WATERMARK FOR"),
        ("CREATE TABLE t (a INT, b INT, WATERMARK FOR a AS a, WATERMARK FOR b AS b);", 1, 53,
         "one watermark column per table"),
        ("CREATE TABLE t (a INT LATENESS 1, b INT, WATERMARK FOR b AS b);", 1, 42,
         "one watermark column per table"),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR ts AS ts - 5);", 1, 56,
         "must be a constant INTERVAL"),
        ("CREATE TABLE t (n INT, WATERMARK FOR n AS n - INTERVAL '1' HOUR);", 1, 47,
         "must be a constant integer"),
        ("CREATE TABLE t (s VARCHAR, WATERMARK FOR s AS s);", 1, 28,
         "LATENESS on column s of type VARCHAR is not supported"),
    ]
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for i, (wm, lat) in enumerate(same):
            open("%s/wm%d.sql" % (d, i), "w").write(wm)
            open("%s/lat%d.sql" % (d, i), "w").write(lat)
            a = run_ok(["check", "%s/wm%d.sql" % (d, i)]).stdout
            b = run_ok(["check", "%s/lat%d.sql" % (d, i)]).stdout
            assert "lateness" in a and a == b, (wm, a, b)
        for i, (text, line, col, msg) in enumerate(bad):
            p = "%s/bad%d.sql" % (d, i)
            open(p, "w").write(text)
            res = run(["check", p])
            assert res.returncode != 0 and msg in res.stderr, (text, res.stderr)
            assert "bad%d.sql:%d:%d:" % (i, line, col) in res.stderr, (text, res.stderr)
            assert "AddressSanitizer" not in res.stderr


def test_watermark_for_and_lateness_are_the_same_program_to_diff(tmp_path):
    """Bootstrapping's program diff sees the two spellings as one table
    definition (nothing to recompute on a restart that switches), and a
    different lateness as a change (the view over t is computed again)."""
    view = "CREATE VIEW v AS SELECT COUNT(*) AS c FROM t;\n"
    lat = tmp_path / "lat.sql"
    lat.write_text("CREATE TABLE t (id INT, ts TIMESTAMP LATENESS INTERVAL '5' SECOND);\n" + view)
    wm = tmp_path / "wm.sql"
    wm.write_text("CREATE TABLE t (id INT, ts TIMESTAMP,\n"
                  "  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND);\n" + view)
    other = tmp_path / "other.sql"
    other.write_text("CREATE TABLE t (id INT, ts TIMESTAMP,\n"
                     "  WATERMARK FOR ts AS ts - INTERVAL '6' SECOND);\n" + view)
    out = run_ok(["check", lat, wm]).stdout
    assert "2 unchanged, 0 added, 0 removed, 0 changed" in out, out
    out = run_ok(["check", lat, other]).stdout
    assert "1 changed" in out and "re-read from source: t" in out, out
    # sluice diff against the checkpoint of a run of the LATENESS program
    inp = tmp_path / "in.json"
    inp.write_text('{"insert": {"id": 1, "ts": "2024-03-01 10:00:00"}}\n')
    for p in (lat, wm, other):
        p.write_text(p.read_text().replace(");\n", ") %s;\n" % json_input(inp), 1))
    st = tmp_path / "storage"
    run_ok(["run", lat, "--storage", st, "--until-done", "--no-progress"])
    out = run_ok(["diff", "--storage", st, wm]).stdout
    assert "2 unchanged, 0 added, 0 removed, 0 changed" in out, out
    out = run_ok(["diff", "--storage", st, other]).stdout
    assert "1 changed" in out, out


@pytest.mark.parametrize("workers", [1, 2])
def test_watermark_for_behaves_as_lateness(tmp_path, workers):
    """The same input with late rows through the program with LATENESS and
    through the one with WATERMARK FOR: the same late rows dropped and
    counted, the same dumps (checked against SQLite over the kept rows)."""
    events, late, _ = gen_events(1200, seed=3)
    inp = tmp_path / "in.json"
    write_events(inp, events)
    outs = []
    for wm in (False, True):
        d = tmp_path / ("dump_wm" if wm else "dump_lat")
        res = run_ok(["run", program(tmp_path, inp, watermark_for=wm), "--until-done",
                      "--no-progress", "--step-rows", 10, "--workers", workers, "--dump", d])
        assert "sluice: table t: %d late rows dropped" % len(late) in res.stderr, res.stderr
        outs.append({n: sorted(read_dump(d / ("%s.csv" % n))[1]) for n in list(VIEWS) + ["f"]})
    assert len(late) > 10 and outs[0] == outs[1]
    kept = [e for e in events if e["id"] not in late]
    check_views(tmp_path / "dump_wm", kept, max(e["ts"] for e in kept) - LATENESS)


@pytest.mark.parametrize("workers", [1, 2])
def test_late_rows_are_dropped_counted_and_views_match_sqlite(tmp_path, workers):
    events, late, _ = gen_events(1500)
    inp = tmp_path / "in.json"
    write_events(inp, events)
    prog = program(tmp_path, inp)
    res = run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 10, "--workers",
                  workers, "--dump", tmp_path / "dump"])
    assert len(late) > 10
    assert "sluice: table t: %d late rows dropped" % len(late) in res.stderr, res.stderr
    kept = [e for e in events if e["id"] not in late]
    check_views(tmp_path / "dump", kept, max(e["ts"] for e in kept) - LATENESS)
    # the same input in one step: nothing is late (the watermark moves only
    # between steps' inputs), and without LATENESS nothing is late either
    res = run_ok(["run", program(tmp_path, inp, lateness=False), "--until-done", "--no-progress",
                  "--dump", tmp_path / "dump_all"])
    assert "late row" not in res.stderr
    db = sqlite_of(events)
    _, got = read_dump(tmp_path / "dump_all" / "w.csv")
    assert norm(got) == norm(db.execute(SQLITE["w"]).fetchall())


def agg_rows(stats, view):
    """Groups kept by the aggregate operators of `view` (all workers)."""
    return sum(o["rows"] for o in stats["memory"]["operators"]
               if o["relation"] == view and o["kind"] == "aggregate")


@pytest.mark.parametrize("watermark_for", [False, True])
def test_stats_metrics_and_state_bounded_by_open_windows(tmp_path, http_pipeline, watermark_for):
    """2000 rows over ~400 windows: the TUMBLE aggregate over the table with
    LATENESS keeps only the open windows' groups (a count, not a time),
    the same aggregate over a copy without LATENESS keeps every window."""
    events, late, _ = gen_events(2000, seed=5)
    inp = tmp_path / "in.json"
    write_events(inp, events)
    extra = ("CREATE TABLE u (id INT NOT NULL, v INT, ts TIMESTAMP) %s;\n"
             "CREATE VIEW wu AS SELECT window_start, COUNT(*) AS c FROM "
             "TABLE(TUMBLE(TABLE u, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY window_start;\n"
             "CREATE VIEW wt AS SELECT window_start, COUNT(*) AS c FROM "
             "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY window_start;"
             % json_input(inp))
    prog = program(tmp_path, inp, extra=extra, watermark_for=watermark_for)
    pl = http_pipeline(prog.read_text(), "--step-rows", 10, "--workers", 2)
    kept = [e for e in events if e["id"] not in late]
    windows_all = len({e["ts"] // HOUR for e in events})
    windows_kept = len({e["ts"] // HOUR for e in kept})

    def settled():
        s = requests.get(pl.url("/stats"), timeout=30).json()
        done = s["global_metrics"]["pipeline_complete"]
        return s if done and agg_rows(s, "wu") == windows_all else None
    s = wait_until(settled, "the pipeline reading both inputs to the end")
    assert s["tables"]["t"]["late_records"] == len(late)
    assert s["tables"]["t"]["watermark"] == ts_text(max(e["ts"] for e in kept) - LATENESS)
    assert "late_records" not in s["tables"]["u"]
    # O(open windows): the windows the lateness keeps open, on two workers
    assert agg_rows(s, "wt") <= 4, agg_rows(s, "wt")
    assert agg_rows(s, "w") <= 4 and windows_kept > 300
    fin = [o["rows"] for o in s["memory"]["operators"] if o["kind"] == "emit_final"]
    assert fin and sum(fin) <= 4, fin
    m = requests.get(pl.url("/metrics"), timeout=30).text
    assert re.search(r'^sluice_late_records_total\{table="t"\} %d$' % len(late), m, re.M), m
    assert "# TYPE sluice_late_records_total counter" in m
    assert 'sluice_late_records_total{table="u"}' not in m
    pl.stop()


def test_restart_from_checkpoint_keeps_the_watermark(tmp_path):
    """A run ends (final checkpoint); more input is appended; the rows of the
    new input that are late only against the first run's watermark are
    dropped after the restart (a lost watermark would let them in), also on
    another worker count. Results equal SQLite over the kept rows."""
    first, late1, mx = gen_events(600, seed=9)
    inp = tmp_path / "in.json"
    write_events(inp, first)
    prog = program(tmp_path, inp)
    st = tmp_path / "storage"
    args = ["run", prog, "--until-done", "--no-progress", "--step-rows", 10, "--storage", st,
            "--checkpoint-interval", "0"]
    res = run_ok(args + ["--workers", 1])
    assert "sluice: table t: %d late rows dropped" % len(late1) in res.stderr, res.stderr
    # new rows: first 5 below the restored watermark (late), then in order
    late2 = []
    for k in range(5):
        late2.append({"id": 5000 + k, "v": 7, "ts": mx - LATENESS - 600 * (k + 1)})
    more, late3, _ = gen_events(300, first_id=6000, start=mx + 60, seed=11)
    write_events(inp, late2 + more, mode="a")
    res = run_ok(args + ["--workers", 2, "--dump", tmp_path / "dump"])
    assert "resuming from the checkpoint" in res.stderr, res.stderr
    nlate = len(late1) + len(late2) + len(late3)
    assert "sluice: table t: %d late rows dropped" % nlate in res.stderr, res.stderr
    lateids = late1 | late3 | {e["id"] for e in late2}
    kept = [e for e in first + late2 + more if e["id"] not in lateids]
    check_views(tmp_path / "dump", kept, max(e["ts"] for e in kept) - LATENESS)


def test_two_hosts_drop_the_same_rows_and_give_the_same_dump(tmp_path):
    """--hosts 2 --workers 3 (the watermark a max across hosts each step,
    late counts summed) gives the --workers 3 run's dump and late count."""
    import os
    import shutil
    import subprocess
    from conftest import mpi_env, sluice_bin
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not on PATH: the --hosts run needs Open MPI")
    events, late, _ = gen_events(800, seed=3)
    inp = tmp_path / "in.json"
    write_events(inp, events)
    prog = program(tmp_path, inp)
    base = ["run", prog, "--until-done", "--no-progress", "--step-rows", 10, "--workers", 3]
    one = run_ok(base + ["--dump", tmp_path / "d1"])
    env = dict(os.environ, **mpi_env())
    p = subprocess.run([sluice_bin()] + [str(a) for a in base + ["--hosts", 2, "--dump",
                                                                 tmp_path / "d2"]],
                       capture_output=True, env=env, timeout=600)
    err = p.stderr.decode()
    assert p.returncode == 0 and "AddressSanitizer" not in err, err[-3000:]
    msg = "sluice: table t: %d late rows dropped" % len(late)
    assert msg in one.stderr and msg in err, err[-2000:]
    for name in list(VIEWS) + ["f"]:
        assert (tmp_path / "d1" / ("%s.csv" % name)).read_bytes() == \
            (tmp_path / "d2" / ("%s.csv" % name)).read_bytes(), name


def test_in_order_input_gives_one_dump_for_any_steps_and_workers(tmp_path):
    """Rows never more than half the lateness behind: nothing is late, and
    the dumps (emit_final included) are byte-identical for one step, steps
    of 3 and of 10 rows per worker, on 1 and 3 workers (late-drop depends
    on arrival order and steps only when rows are late)."""
    events, _, _ = gen_events(900, every=10**9, seed=13)
    inp = tmp_path / "in.json"
    write_events(inp, events)
    prog = program(tmp_path, inp)
    dumps = []
    for k, args in enumerate([[], ["--step-rows", 3], ["--step-rows", 10, "--workers", 3],
                              ["--workers", 3]]):
        d = tmp_path / ("d%d" % k)
        res = run_ok(["run", prog, "--until-done", "--no-progress", "--dump", d] + args)
        assert "late row" not in res.stderr, res.stderr
        dumps.append({n: (d / ("%s.csv" % n)).read_bytes() for n in list(VIEWS) + ["f"]})
    assert all(x == dumps[0] for x in dumps)
    check_views(tmp_path / "d1", events, max(e["ts"] for e in events) - LATENESS)


def test_state_forgotten_without_input_stays_forgotten_after_restart(tmp_path, http_pipeline):
    """A row that only moves the watermark (the filter drops it) makes the
    aggregate forget its closed groups; the checkpoint after it saves the
    aggregate again, so a restart does not bring the forgotten groups back
    (a late row's step shows what was restored). On one host the step's
    input marks the aggregate changed anyway; on several, a host whose
    instance got no rows relies on wm_commit marking it (runtime/worker.c),
    which /stats cannot show (its memory covers host 0 only)."""
    from httpkit import ingress
    sql = ("CREATE TABLE t (ts BIGINT NOT NULL LATENESS 10, x INT);\n"
           "CREATE VIEW g AS SELECT ts, COUNT(*) AS c FROM t WHERE x > 0 GROUP BY ts;\n")
    st = tmp_path / "storage"

    def rows(*pairs):
        return "\n".join(json.dumps({"ts": ts, "x": x}) for ts, x in pairs)

    def checkpoint(p):
        r = requests.post(p.url("/checkpoint"), timeout=60)
        assert r.status_code == 200, r.text
        seq = r.json()["checkpoint_sequence_number"]
        wait_until(lambda: (requests.get(p.url("/checkpoint_status"), timeout=60).json()
                            .get("success") or 0) >= seq, "checkpoint %d" % seq)

    def settled(p, records, groups):
        def ok():
            s = requests.get(p.url("/stats"), timeout=30).json()
            done = s["global_metrics"]["total_processed_records"] >= records
            return s if done and agg_rows(s, "g") == groups else None
        return wait_until(ok, "%d records processed, %d groups kept" % (records, groups))

    p = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="a")
    ingress(p, "t", rows((1, 1), (2, 1)))
    settled(p, 2, 2)
    checkpoint(p)
    ingress(p, "t", rows((100, -1)))  # filtered out; the watermark moves to 90
    settled(p, 3, 0)
    checkpoint(p)
    p.stop()
    p = http_pipeline(sql, "--storage", st, "--checkpoint-interval", "0", name="b")
    ingress(p, "t", rows((50, 1)))  # late: dropped, a step without changes
    # wait for the step that dropped it (the processed count is published
    # apart from the step's figures, so it can run ahead of late_records)
    s = wait_until(lambda: (lambda s: s if s["tables"]["t"]["late_records"] >= 1 else None)(
        requests.get(p.url("/stats"), timeout=30).json()), "the late row counted")
    assert s["tables"]["t"]["late_records"] == 1
    assert agg_rows(s, "g") == 0, s["memory"]["operators"]
    p.stop()


@pytest.mark.parametrize("workers", [1, 2])
def test_day_windows_of_a_timestamptz_follow_the_zone_and_still_close(tmp_path, workers):
    """TUMBLE of 1 day over a TIMESTAMPTZ column with LATENESS in session zone
    Europe/Paris, across its 2024-03-31 DST change: windows run from local
    midnight to local midnight (that day has 23 hours), and the watermark
    passes through the zone conversion, so 'emit_final' still outputs each
    closed day once. Expected windows from Python's zoneinfo."""
    from zoneinfo import ZoneInfo
    paris = ZoneInfo("Europe/Paris")
    t0 = int((datetime.datetime(2024, 3, 25) - EPOCH).total_seconds())
    evs = [t0 + i * 2400 for i in range(12 * 36)]  # every 40 minutes for 12 days
    inp = tmp_path / "tz.json"
    with open(inp, "w") as f:
        for i, e in enumerate(evs):
            f.write(json.dumps({"insert": {"id": i, "x": ts_text(e) + "+00"}}) + "\n")
    q = ("SELECT window_start, window_end, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE t, "
         "DESCRIPTOR(x), INTERVAL '1' DAY)) GROUP BY window_start, window_end")
    prog = tmp_path / "tz.sql"
    prog.write_text("SET TIME ZONE 'Europe/Paris';\n"
                    "CREATE TABLE t (id INT, x TIMESTAMPTZ LATENESS INTERVAL '1' HOUR) %s;\n"
                    "CREATE MATERIALIZED VIEW w AS %s;\n"
                    "CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_end') AS %s;\n"
                    % (json_input(inp), q, q))
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 10, "--workers",
            workers, "--dump", dump])

    def text(d):  # PostgreSQL's text of local midnight of date d
        m = datetime.datetime(d.year, d.month, d.day, tzinfo=paris)
        off = int(m.utcoffset().total_seconds()) // 3600
        return m.strftime("%Y-%m-%d %H:%M:%S") + "%+03d" % off, m
    count, ends = {}, {}
    for e in evs:
        d = datetime.datetime.fromtimestamp(e, paris).date()
        (s, _), (nd, end) = text(d), text(d + datetime.timedelta(days=1))
        count[(s, nd)] = count.get((s, nd), 0) + 1
        ends[(s, nd)] = end.timestamp()
    want = sorted((s, nd, str(c)) for (s, nd), c in count.items())
    dst = [w for w in want if w[0] == "2024-03-31 00:00:00+01"]  # a 23-hour day
    assert dst and dst[0][1] == "2024-04-01 00:00:00+02" and int(dst[0][2]) < 36, dst
    _, got = read_dump(dump / "w.csv")
    assert sorted(tuple(r) for r in got) == want
    _, fin = read_dump(dump / "f.csv")
    fin = sorted(tuple(r) for r in fin)
    assert set(fin) <= set(want) and len(fin) == len(set(fin))
    # every day that ended well before the watermark (the last time less the
    # lateness, a day and the zone slack) was emitted
    closed = [w for w in want if ends[(w[0], w[1])] <= evs[-1] - HOUR - 86400 - 6 * HOUR]
    assert set(closed) <= set(fin) and len(closed) >= 9

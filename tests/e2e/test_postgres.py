"""postgres_output against a real PostgreSQL 15 (issue 15): the table equals
the view (checked with SELECTs in PostgreSQL against rows computed in
Python), exactly once across kill -9 (an audit trigger in PostgreSQL counts
every row operation applied: the killed-and-resumed run applies exactly
the operations of an uninterrupted one), a database restarted under a
running pipeline (it waits, reconnects and goes on), and configuration or
data the table refuses reported clearly.

One server for the module (pgserver.py: initdb in a temporary directory, a
free port, always stopped); each test uses its own tables.
"""
import hashlib
import os
import random
import signal
import subprocess

import pytest
import requests

from conftest import conn_clause, run, run_ok, sluice_bin, wait_until
from httpkit import ingress, lines


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def pg_out(pg, table, keys, **extra):
    cfg = {"uri": pg.uri, "table": table, "key_columns": keys}
    cfg.update(extra)
    return conn_clause([{"transport": {"name": "postgres_output", "config": cfg}}])


def json_in(path):
    return conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                         "format": {"name": "json",
                                    "config": {"update_format": "insert_delete"}}}])


def random_changes(rng, n, ids=400):
    """n JSON change lines over ids: inserts of new rows, deletes of live
    ones (so groups shrink and vanish); returns (lines, live rows)."""
    live = {}
    out = []
    for i in range(n):
        if live and rng.random() < 0.3:
            k = rng.choice(sorted(live))
            out.append({"delete": live.pop(k)})
        else:
            k = rng.randrange(ids)
            if k in live:
                out.append({"delete": live.pop(k)})
            row = {"id": k, "grp": rng.randrange(25), "v": rng.randrange(-1000, 1000)}
            live[k] = row
            out.append({"insert": row})
    return out, live


def groups_of(live):
    g = {}
    for r in live.values():
        n, s = g.get(r["grp"], (0, 0))
        g[r["grp"]] = (n + 1, s + r["v"])
    return g


AGG_SQL = """
CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL) {inp};
CREATE VIEW agg {out} AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;
"""


def pg_groups(pg, table):
    if pg.query("SELECT to_regclass('%s') IS NULL" % table) == [["t"]]:
        return None  # not created yet
    return {int(g): (int(n), int(s)) for g, n, s in pg.query(
        "SELECT grp, n, s FROM %s" % table)}


def test_table_equals_the_view_with_updates_and_deletes(pg, tmp_path):
    rng = random.Random(7)
    changes, live = random_changes(rng, 3000)
    data = tmp_path / "t.json"
    data.write_text(lines(*changes))
    prog = tmp_path / "p.sql"
    prog.write_text(AGG_SQL.format(inp=json_in(data), out=pg_out(pg, "agg_eq", ["grp"])))
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 97])
    assert pg_groups(pg, "agg_eq") == groups_of(live)
    # PostgreSQL's own count and sum agree with the input's
    n, s = pg.query("SELECT sum(n), sum(s) FROM agg_eq")[0]
    assert (int(n), int(s)) == (len(live), sum(r["v"] for r in live.values()))
    # the table was created with the view's key as its primary key
    pk = pg.query("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON "
                  "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
                  "WHERE i.indrelid = 'agg_eq'::regclass AND i.indisprimary")
    assert pk == [["grp"]]
    # a second run (no storage) starts from nothing again: same table
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 1000])
    assert pg_groups(pg, "agg_eq") == groups_of(live)


def test_values_of_every_type_arrive_as_they_are(pg, tmp_path):
    rows = [
        {"id": 1, "b": True, "d": "12.50", "f": 0.1, "s": "tab\there", "dt": "2024-02-29",
         "ts": "2024-02-29 23:59:58.5", "tm": "01:02:03"},
        {"id": 2, "b": False, "d": "-0.07", "f": -1e20, "s": "back\\slash\nnew line 'q' \"dq\"",
         "dt": "1970-01-01", "ts": "1999-12-31 00:00:00", "tm": "23:59:59.25"},
        {"id": 3, "b": None, "d": None, "f": None, "s": None, "dt": None, "ts": None,
         "tm": None},
        {"id": 4, "b": True, "d": "0.00", "f": 3.5, "s": "", "dt": "2000-01-01",
         "ts": "2000-01-01 00:00:00", "tm": "00:00:00"},
    ]
    data = tmp_path / "t.json"
    data.write_text(lines(*rows))
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (id INT NOT NULL, b BOOLEAN, d DECIMAL(10,2), f DOUBLE, s VARCHAR, "
        "dt DATE, ts TIMESTAMP, tm TIME) %s;\n"
        "CREATE VIEW v %s AS SELECT * FROM t;\n" % (json_in(data), pg_out(pg, "types_out", ["id"])))
    run_ok(["run", prog, "--until-done", "--no-progress"])
    # strings through md5 (psql prints them raw, tabs and newlines included)
    got = pg.query("SELECT id, b, d, f, md5(s), length(s), dt, ts, tm FROM types_out "
                   "ORDER BY id")

    def md5(x):
        return hashlib.md5(x.encode()).hexdigest()
    s1, s2 = "tab\there", "back\\slash\nnew line 'q' \"dq\""
    assert got == [
        ["1", "t", "12.50", "0.1", md5(s1), str(len(s1)), "2024-02-29", "2024-02-29 23:59:58.5",
         "01:02:03"],
        ["2", "f", "-0.07", "-1e+20", md5(s2), str(len(s2)), "1970-01-01", "1999-12-31 00:00:00",
         "23:59:59.25"],
        ["3", None, None, None, None, None, None, None, None],
        ["4", "t", "0.00", "3.5", md5(""), "0", "2000-01-01", "2000-01-01 00:00:00", "00:00:00"],
    ]


AUDIT = """
CREATE TABLE IF NOT EXISTS {t} (grp integer PRIMARY KEY, n bigint, s numeric);
CREATE TABLE IF NOT EXISTS {t}_audit (op text);
CREATE OR REPLACE FUNCTION {t}_audit_fn() RETURNS trigger AS $$
BEGIN INSERT INTO {t}_audit VALUES (TG_OP); RETURN NULL; END $$ LANGUAGE plpgsql;
CREATE TRIGGER {t}_audit_tr AFTER INSERT OR UPDATE OR DELETE ON {t}
  FOR EACH ROW EXECUTE FUNCTION {t}_audit_fn();
"""


def audit_counts(pg, t):
    return {op: int(n) for op, n in pg.query("SELECT op, count(*) FROM %s_audit GROUP BY op" % t)}


def progress_step(pg, t):
    rows = pg.query("SELECT step FROM sluice_progress WHERE target = '%s'" % t)
    return int(rows[0][0]) if rows else 0


def test_kill9_mid_stream_resumes_exactly_once(pg, tmp_path, procs):
    """The same input cut into the same steps, run once without a break
    into one table and killed with -9 three times into another: the second
    table ends equal to the view and PostgreSQL's audit trigger saw exactly
    the row operations of the uninterrupted run (a step applied twice
    would add updates; one lost would change the contents)."""
    rng = random.Random(11)
    changes, live = random_changes(rng, 60000, ids=3000)
    data = tmp_path / "t.json"
    data.write_text(lines(*changes))
    for t in ("ft_ref", "ft_kill"):
        pg.psql(AUDIT.format(t=t))
    ref = tmp_path / "ref.sql"
    ref.write_text(AGG_SQL.format(inp=json_in(data), out=pg_out(pg, "ft_ref", ["grp"])))
    run_ok(["run", ref, "--until-done", "--no-progress", "--step-rows", 100])
    assert pg_groups(pg, "ft_ref") == groups_of(live)

    prog = tmp_path / "kill.sql"
    prog.write_text(AGG_SQL.format(inp=json_in(data), out=pg_out(pg, "ft_kill", ["grp"])))
    st = tmp_path / "st"
    args = [sluice_bin(), "run", str(prog), "--until-done", "--no-progress", "--step-rows", "100",
            "--storage", str(st), "--checkpoint-interval", "0.2"]
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    # first a crash right after step 30 was committed (checkpoints every 10
    # steps): the restart replays steps 21..30 and must not write 30 again
    crash = subprocess.run(args + ["--checkpoint-interval", "0"], capture_output=True,
                           env=dict(env, SLUICE_CRASH_AT="after-step:30",
                                    SLUICE_CHECKPOINT_EVERY_STEPS="10"), timeout=600)
    assert crash.returncode == 137, crash.stderr.decode()[-3000:]
    assert progress_step(pg, "ft_kill") == 30
    last = 30
    skipped = False
    for k in range(3):
        log = open(tmp_path / ("run%d.log" % k), "wb")
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env=env)
        procs.append(p)
        # kill once it has written some steps beyond the last kill's
        target = last + rng.randrange(20, 80)
        wait_until(lambda: progress_step(pg, "ft_kill") >= target or p.poll() is not None,
                   "the pipeline writing step %d" % target)
        p.send_signal(signal.SIGKILL)
        p.wait()
        log.close()
        skipped |= "step 30 was committed to PostgreSQL before the restart" in open(
            tmp_path / ("run%d.log" % k)).read()
        last = progress_step(pg, "ft_kill")
    p = run(args[1:], timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert skipped
    assert pg_groups(pg, "ft_kill") == groups_of(live)
    assert audit_counts(pg, "ft_kill") == audit_counts(pg, "ft_ref")
    assert progress_step(pg, "ft_kill") == progress_step(pg, "ft_ref")


def test_at_least_once_converges_to_the_view(pg, tmp_path):
    """Without the journal the steps after the checkpoint run again, cut
    differently: the table was ahead and is re-applied over; it ends equal
    to the view."""
    rng = random.Random(5)
    changes, live = random_changes(rng, 20000, ids=2000)
    data = tmp_path / "t.json"
    data.write_text(lines(*changes))
    prog = tmp_path / "p.sql"
    prog.write_text(AGG_SQL.format(inp=json_in(data), out=pg_out(pg, "alo", ["grp"])))
    args = [sluice_bin(), "run", str(prog), "--until-done", "--no-progress", "--step-rows", "100",
            "--storage", str(tmp_path / "st"), "--fault-tolerance", "at_least_once",
            "--checkpoint-interval", "0"]
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:45", SLUICE_CHECKPOINT_EVERY_STEPS="20")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    crash = subprocess.run(args, capture_output=True, env=env, timeout=600)
    assert crash.returncode == 137, crash.stderr.decode()[-3000:]
    assert progress_step(pg, "alo") == 45
    p = run(args[1:-2] + ["--step-rows", "130"], timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert pg_groups(pg, "alo") == groups_of(live)


HTTP_SQL = """
CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL)
  WITH ('connectors' = '[{"transport": {"name": "http_input"}}]');
CREATE VIEW agg %s AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;
"""


def test_database_restarted_under_the_pipeline(pg, http_pipeline):
    """Pushes while PostgreSQL is down wait in the pipeline; once it is back
    the pipeline reconnects and the table catches up with the view."""
    p = http_pipeline(HTTP_SQL % pg_out(pg, "agg_restart", ["grp"]))
    rows = [{"id": i, "grp": i % 7, "v": i} for i in range(200)]
    ingress(p, "t", lines(*rows[:100]))
    want1 = groups_of({r["id"]: r for r in rows[:100]})
    wait_until(lambda: pg_groups(pg, "agg_restart") == want1, "the first rows in PostgreSQL")
    pg.stop()
    try:
        ingress(p, "t", lines(*rows[100:]))
        wait_until(lambda: "retrying" in p.stderr(), "the pipeline noticing the lost server")
    finally:
        pg.start()
    want2 = groups_of({r["id"]: r for r in rows})
    wait_until(lambda: pg_groups(pg, "agg_restart") == want2, "the table catching up")
    assert "again" in p.stderr()
    p.stop()


def test_a_stop_while_the_database_is_down_ends_the_wait(pg, http_pipeline):
    """SIGTERM while the output waits for an unreachable server: the
    pipeline gives up the wait and exits, saying the step was not written."""
    p = http_pipeline(HTTP_SQL % pg_out(pg, "agg_stop", ["grp"]))
    ingress(p, "t", lines({"id": 1, "grp": 1, "v": 1}))
    wait_until(lambda: pg_groups(pg, "agg_stop") == {1: (1, 1)}, "the first row")
    pg.stop()
    try:
        ingress(p, "t", lines({"id": 2, "grp": 1, "v": 1}))
        wait_until(lambda: "retrying" in p.stderr(), "the pipeline waiting for the server")
        p.proc.send_signal(signal.SIGTERM)
        r = p.wait_exit(timeout=120)
        assert r.returncode != 0
        assert "stopped while waiting" in r.stderr, r.stderr
    finally:
        pg.start()
    assert pg_groups(pg, "agg_stop") == {1: (1, 1)}


def test_configuration_errors_are_clear(pg, tmp_path):
    data = tmp_path / "t.json"
    data.write_text(lines({"id": 1, "grp": 1, "v": 1}))
    prog = tmp_path / "p.sql"

    def check(out, *words):
        prog.write_text(AGG_SQL.format(inp=json_in(data), out=out))
        r = run(["run", prog, "--until-done", "--no-progress"])
        assert r.returncode != 0
        for w in words:
            assert w in r.stderr, r.stderr
        return r

    # no key
    check(conn_clause([{"transport": {"name": "postgres_output",
                                      "config": {"uri": pg.uri, "table": "x1"}}}]),
          "key_columns")
    check(pg_out(pg, "x1", ["nope"]), "no column \"nope\"")
    check(pg_out(pg, "x1", ["grp"], batch=3), "unknown key \"batch\"")
    # `sluice check` validates without connecting
    prog.write_text(AGG_SQL.format(inp=json_in(data), out=pg_out(pg, "x1", [])))
    assert run(["check", prog]).returncode != 0
    # an unreachable server at start is an error that says so
    bad = "postgresql://postgres@127.0.0.1:1/postgres"
    check(conn_clause([{"transport": {"name": "postgres_output", "config": {
        "uri": bad, "table": "x1", "key_columns": ["grp"]}}}]), "cannot connect to PostgreSQL")
    # a table holding rows this pipeline did not write is not emptied
    pg.psql("CREATE TABLE foreign_rows (grp integer PRIMARY KEY, n bigint, s bigint); "
            "INSERT INTO foreign_rows VALUES (1, 2, 3)")
    check(pg_out(pg, "foreign_rows", ["grp"]), "holds 1 rows", "TRUNCATE")
    assert pg.query("SELECT * FROM foreign_rows") == [["1", "2", "3"]]
    # a key without a unique index in an existing table
    pg.psql("CREATE TABLE no_unique (grp integer, n bigint, s bigint)")
    check(pg_out(pg, "no_unique", ["grp"]), "no_unique", "ON CONFLICT")


def test_a_value_the_table_refuses_stops_with_postgresql_s_message(pg, tmp_path):
    pg.psql("CREATE TABLE narrow (id integer PRIMARY KEY, s varchar(3))")
    data = tmp_path / "t.json"
    data.write_text(lines({"id": 1, "s": "abc"}, {"id": 2, "s": "too long"}))
    prog = tmp_path / "p.sql"
    # "on_record_error": "stop" (the default sends the row to the dead
    # letters: test_delivery.py)
    out = conn_clause([{"transport": {"name": "postgres_output", "config": {
        "uri": pg.uri, "table": "narrow", "key_columns": ["id"]}},
        "delivery": {"on_record_error": "stop"}}])
    prog.write_text("CREATE TABLE t (id INT NOT NULL, s VARCHAR) %s;\n"
                    "CREATE VIEW v %s AS SELECT * FROM t;\n" % (json_in(data), out))
    r = run(["run", prog, "--until-done", "--no-progress"])
    assert r.returncode != 0
    assert "narrow" in r.stderr and "too long" in r.stderr, r.stderr
    # nothing of the failed step is in the table (one transaction per step)
    assert pg.query("SELECT count(*) FROM narrow") == [["0"]]


# ---------------------------------------------------------------- postgres_cdc_input

def cdc_in(pg, table, **extra):
    cfg = {"uri": pg.uri, "table": table}
    cfg.update(extra)
    return conn_clause([{"transport": {"name": "postgres_cdc_input", "config": cfg}}])


CDC_SQL = """
CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT, s VARCHAR) {inp};
CREATE MATERIALIZED VIEW agg {out} AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY grp;
"""


def pg_source_groups(pg, src):
    return {int(g): (int(n), int(s) if s is not None else None) for g, n, s in pg.query(
        "SELECT grp, count(*), sum(v) FROM %s GROUP BY grp" % src)}


def view_groups(p):
    from httpkit import query
    return {r["grp"]: (r["n"], r["s"]) for r in query(p, "SELECT grp, n, s FROM agg")}


def test_cdc_snapshot_then_changes_reach_the_view_and_a_postgres_table(pg, http_pipeline):
    """Rows present at start (the snapshot), then inserts, updates (also of
    the group, moving a row between groups) and deletes in several
    transactions: the view equals PostgreSQL's own GROUP BY over the source,
    and so does the postgres_output table fed by the view (CDC -> view ->
    PostgreSQL)."""
    pg.psql("CREATE TABLE src1 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src1 SELECT i, i % 9, i * 3, 'r' || i FROM generate_series(1, 500) i")
    p = http_pipeline(CDC_SQL.format(inp=cdc_in(pg, "src1"),
                                     out=pg_out(pg, "agg_cdc", ["grp"])))
    wait_until(lambda: view_groups(p) == pg_source_groups(pg, "src1"), "the snapshot in the view")
    rng = random.Random(3)
    for k in range(30):
        stmts = []
        for _ in range(rng.randrange(1, 20)):
            i = rng.randrange(1, 800)
            op = rng.random()
            if op < 0.4:
                stmts.append("INSERT INTO src1 VALUES (%d, %d, %d, 'n%d') ON CONFLICT (id) DO "
                             "UPDATE SET v = EXCLUDED.v" % (i, rng.randrange(9), rng.randrange(-50, 50), i))
            elif op < 0.7:
                stmts.append("UPDATE src1 SET v = v + 1, grp = (grp + %d) %% 9 WHERE id = %d"
                             % (rng.randrange(2), i))
            else:
                stmts.append("DELETE FROM src1 WHERE id = %d" % i)
        pg.psql("BEGIN; %s; COMMIT" % "; ".join(stmts))
    want = pg_source_groups(pg, "src1")
    wait_until(lambda: view_groups(p) == want, "the changes in the view")
    wait_until(lambda: pg_groups(pg, "agg_cdc") == want, "the changes in the output table")
    p.stop()


def test_cdc_unsupported_values_are_reported_counted_and_skipped(pg, http_pipeline):
    pg.psql("CREATE TABLE src2 (id bigint PRIMARY KEY, grp text NOT NULL, v bigint, s text);"
            "INSERT INTO src2 VALUES (1, '1', 10, 'a'), (2, 'two', 20, 'b'), (3, '1', 30, NULL)")
    p = http_pipeline(CDC_SQL.format(inp=cdc_in(pg, "src2"), out=""))
    wait_until(lambda: view_groups(p) == {1: (2, 40)}, "the good snapshot rows")
    pg.psql("INSERT INTO src2 VALUES (4, 'x4', 1, 'c'), (5, '2', 5, 'd')")
    wait_until(lambda: view_groups(p) == {1: (2, 40), 2: (1, 5)}, "the good changes")
    err = p.stderr()
    assert "two" in err and "x4" in err and "column grp" in err, err
    # counted in /stats: the snapshot's row and the streamed one
    text = requests.get(p.url("/stats"), timeout=30).text
    assert '"num_parse_errors":2' in text.replace(" ", ""), text
    p.stop()


def test_cdc_follows_across_a_database_restart(pg, http_pipeline):
    pg.psql("CREATE TABLE src3 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src3 SELECT i, i % 4, i, NULL FROM generate_series(1, 100) i")
    p = http_pipeline(CDC_SQL.format(inp=cdc_in(pg, "src3"), out=""))
    wait_until(lambda: view_groups(p) == pg_source_groups(pg, "src3"), "the snapshot")
    pg.restart()
    wait_until(lambda: "lost the replication connection" in p.stderr(),
               "the pipeline noticing the restart")
    pg.psql("INSERT INTO src3 SELECT i, i % 4, i, NULL FROM generate_series(101, 300) i;"
            "DELETE FROM src3 WHERE id % 10 = 0")
    want = pg_source_groups(pg, "src3")
    wait_until(lambda: view_groups(p) == want, "the changes after the restart")
    assert "replication resumed" in p.stderr()
    p.stop()


def test_cdc_configuration_errors(pg, tmp_path):
    prog = tmp_path / "p.sql"
    for inp, words in [
        (cdc_in(pg, "no_such_table"), ["no_such_table"]),
        (cdc_in(pg, "src1", slot="Bad-Name"), ["slot"]),
        (cdc_in(pg, "src1", lsn=5), ["unknown key \"lsn\""]),
    ]:
        prog.write_text(CDC_SQL.format(inp=inp, out=""))
        r = run(["run", prog, "--no-progress"])
        assert r.returncode != 0
        for w in words:
            assert w in r.stderr, r.stderr


def test_cdc_to_postgres_output_on_two_hosts(pg, tmp_path):
    """--hosts 2: host 0 reads the slot and writes the table, both hosts
    compute; the table equals PostgreSQL's GROUP BY over the source."""
    import shutil
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed (Debian package openmpi-bin)")
    pg.psql("CREATE TABLE src4 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src4 SELECT i, i % 13, i * 7 % 101, 'x' FROM generate_series(1, 3000) i;"
            "DELETE FROM src4 WHERE id % 7 = 0")
    prog = tmp_path / "p.sql"
    prog.write_text(CDC_SQL.format(inp=cdc_in(pg, "src4"), out=pg_out(pg, "agg_hosts", ["grp"])))
    from conftest import mpi_env
    env = dict(os.environ, **mpi_env())
    p = subprocess.Popen([sluice_bin(), "run", str(prog), "--no-progress", "--hosts", "2",
                          "--workers", "2", "--step-rows", "500"], stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / "err", "wb"), env=env, start_new_session=True)
    try:
        want = pg_source_groups(pg, "src4")
        wait_until(lambda: pg_groups(pg, "agg_hosts") == want or p.poll() is not None,
                   "the snapshot through two hosts")
        pg.psql("UPDATE src4 SET grp = grp + 1 WHERE id % 5 = 0; DELETE FROM src4 WHERE id < 100")
        want = pg_source_groups(pg, "src4")
        wait_until(lambda: pg_groups(pg, "agg_hosts") == want or p.poll() is not None,
                   "the changes through two hosts")
        assert p.poll() is None, (tmp_path / "err").read_text()[-3000:]
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=120) == 0, (tmp_path / "err").read_text()[-3000:]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    err = (tmp_path / "err").read_text()
    assert "Sanitizer" not in err, err[-3000:]


def test_cdc_to_postgres_output_exactly_once_across_kill9(pg, tmp_path, procs):
    """CDC -> view -> postgres_output with --storage, killed with -9 three
    times while transactions keep committing upstream: after the last
    restart the output table equals PostgreSQL's GROUP BY over the source
    (nothing lost, nothing counted twice: counts and sums are exact), and
    the slot was never confirmed past what a restart needed."""
    import glob
    pg.psql("CREATE TABLE src5 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src5 SELECT i, i % 11, i, NULL FROM generate_series(1, 300) i")
    prog = tmp_path / "p.sql"
    prog.write_text(CDC_SQL.format(inp=cdc_in(pg, "src5"), out=pg_out(pg, "agg_k", ["grp"])))
    st = tmp_path / "st"
    # small steps: transactions are cut between steps, so restarts resume
    # inside them (the position counts the changes read after a commit)
    args = [sluice_bin(), "run", str(prog), "--no-progress", "--storage", str(st),
            "--checkpoint-interval", "0.2", "--step-rows", "7"]
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    rng = random.Random(17)
    nid = [300]

    def churn(n):
        for _ in range(n):
            stmts = []
            for _ in range(rng.randrange(1, 30)):
                nid[0] += 1
                r = rng.random()
                if r < 0.5:
                    stmts.append("INSERT INTO src5 VALUES (%d, %d, %d, NULL)"
                                 % (nid[0], rng.randrange(11), rng.randrange(100)))
                elif r < 0.8:
                    stmts.append("UPDATE src5 SET v = v + 1, grp = (grp + 1) %% 11 WHERE id = %d"
                                 % rng.randrange(1, nid[0]))
                else:
                    stmts.append("DELETE FROM src5 WHERE id = %d" % rng.randrange(1, nid[0]))
            pg.psql("BEGIN; %s; COMMIT" % "; ".join(stmts))

    for k in range(3):
        log = open(tmp_path / ("run%d.log" % k), "wb")
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env=env)
        procs.append(p)
        if k == 0:  # a checkpoint after the snapshot before the first kill
            wait_until(lambda: pg_groups(pg, "agg_k") == pg_source_groups(pg, "src5")
                       or p.poll() is not None, "the snapshot written")
            # a checkpoint after the snapshot's last step (a restart from
            # one inside the snapshot is refused: it cannot be read again)
            snap = progress_step(pg, "agg_k")
            wait_until(lambda: any(int(os.path.basename(m)[9:-5]) >= snap for m in glob.glob(
                str(st / "manifest-*.json"))) or p.poll() is not None,
                "a checkpoint after the snapshot")
            start_lsn = pg.query("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                                 "WHERE slot_name = 'sluice_src5'")[0][0]
        before = progress_step(pg, "agg_k")
        churn(rng.randrange(5, 25))
        wait_until(lambda: progress_step(pg, "agg_k") > before or p.poll() is not None,
                   "the pipeline writing the changes")
        churn(rng.randrange(1, 10))  # some still in flight at the kill
        assert p.poll() is None, open(tmp_path / ("run%d.log" % k)).read()[-3000:]
        p.send_signal(signal.SIGKILL)
        p.wait()
        log.close()
    churn(10)
    log = open(tmp_path / "last.log", "wb")
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env=env)
    procs.append(p)
    want = pg_source_groups(pg, "src5")
    wait_until(lambda: pg_groups(pg, "agg_k") == want or p.poll() is not None,
               "the output table equal to the source's GROUP BY")
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=120)
    log.close()
    text = "".join(open(tmp_path / f).read() for f in ("run1.log", "run2.log", "last.log"))
    assert rc == 0, text[-3000:]
    assert pg_groups(pg, "agg_k") == want, text[-3000:]
    assert "resuming replication at" in text, text[-3000:]
    # the slot was confirmed past the snapshot (PostgreSQL may recycle WAL)
    assert pg.query("SELECT confirmed_flush_lsn > '%s'::pg_lsn FROM pg_replication_slots "
                    "WHERE slot_name = 'sluice_src5'" % start_lsn) == [["t"]]


def _lsn(text):
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def _cdc_metrics(p):
    st = requests.get(p.url("/stats"), timeout=30).json()
    return [i for i in st["inputs"] if i["transport"] == "postgres_cdc_input"][0]["metrics"]


def test_cdc_position_is_the_lsn_and_lag_the_wal_behind(pg, http_pipeline):
    """The position is an LSN ("X/Y") past the last change read, the high
    watermark the server's pg_current_wal_lsn(); paused, the position stays
    and the WAL written meanwhile shows as lag."""
    pg.psql("CREATE TABLE src6 (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint, s text);"
            "INSERT INTO src6 SELECT i, i % 5, i, NULL FROM generate_series(1, 50) i")
    p = http_pipeline(CDC_SQL.format(inp=cdc_in(pg, "src6"), out=""))
    wait_until(lambda: view_groups(p) == pg_source_groups(pg, "src6"), "the snapshot")
    before = _lsn(pg.query("SELECT pg_current_wal_lsn()")[0][0])
    pg.psql("INSERT INTO src6 SELECT i, i % 5, i, NULL FROM generate_series(51, 120) i")
    after = _lsn(pg.query("SELECT pg_current_wal_lsn()")[0][0])
    wait_until(lambda: view_groups(p) == pg_source_groups(pg, "src6"), "the changes")

    def known(at_least):
        m = _cdc_metrics(p)
        return m if m.get("high_watermark") is not None and m["high_watermark"] >= at_least \
            and m["position"] > before else None
    m = wait_until(lambda: known(after), "the server's WAL end in /stats")
    assert m["position_unit"] == "wal_bytes"
    assert _lsn(m["position_text"]) == m["position"] and \
        _lsn(m["high_watermark_text"]) == m["high_watermark"]
    assert before < m["position"] <= m["high_watermark"]
    assert m["lag"] == m["high_watermark"] - m["position"]

    assert requests.post(p.url("/pause"), timeout=30).status_code == 200
    pos = _cdc_metrics(p)["position"]
    pg.psql("INSERT INTO src6 SELECT i, i % 5, i, NULL FROM generate_series(121, 2000) i")
    later = _lsn(pg.query("SELECT pg_current_wal_lsn()")[0][0])
    m = wait_until(lambda: known(later), "the WAL written while paused in /stats")
    assert m["position"] == pos and m["lag"] == m["high_watermark"] - pos >= later - pos > 0
    assert requests.post(p.url("/start"), timeout=30).status_code == 200
    wait_until(lambda: view_groups(p) == pg_source_groups(pg, "src6"), "the rest")
    wait_until(lambda: _cdc_metrics(p)["position"] > pos, "the position past the rows read")
    p.stop()

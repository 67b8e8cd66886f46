"""Bootstrapping with a postgres_cdc_input table (docs/bootstrapping.md):
a view added over a CDC table that nothing stores is fed the table as it
was at the checkpoint's position (a new snapshot from a temporary slot,
less the changes between the checkpoint's LSN and the snapshot's, taken
back), while the live connector continues from the checkpoint for the
whole circuit. The database keeps changing before, during and after the
bootstrap. Both views (the kept one and the new one) are written to
PostgreSQL tables by postgres_output and compared with the same queries
computed by PostgreSQL over the source, and with a from-scratch run of
the new program (its own slot and tables). A kill -9 inside the bootstrap
steps (SLUICE_CRASH_AT) leaves no temporary slot and the next start
bootstraps again. Against a real PostgreSQL 15 (pgserver.py)."""
import os
import random
import shutil
import re
import signal
import subprocess
import threading

import pytest

from test_bootstrap import manifest, manifests
from test_postgres import cdc_in, pg_out, procs  # noqa: F401 (fixture)

from conftest import csv_input, mpi_env, sluice_bin, wait_until, write_csv

GROUPS = 9


def program(pg, src, suffix, new, slot=None, pad=None):
    """pad: a CSV file read by a table declared first, so that with
    --hosts 2 the CDC input is the second file-like input: read live on
    host 1, while the bootstrap reads it again on the coordinator."""
    extra = {"slot": slot} if slot else {}
    sql = "CREATE TABLE pad (k INT) %s;\n" % csv_input(pad) if pad else ""
    sql += ("CREATE TABLE t (id BIGINT NOT NULL, grp INT NOT NULL, v BIGINT NOT NULL, s VARCHAR) "
           "%s;\n" % cdc_in(pg, src, **extra) +
           "CREATE MATERIALIZED VIEW agg %s AS SELECT grp, COUNT(*) AS n, SUM(v) AS s FROM t "
           "GROUP BY grp;\n" % pg_out(pg, "agg" + suffix, ["grp"]))
    if new:  # needs every row of t: nothing stores them
        sql += ("CREATE MATERIALIZED VIEW per_b %s AS SELECT v %% 7 AS b, COUNT(*) AS n, "
                "SUM(id) AS si, MAX(grp) AS mg FROM t GROUP BY v %% 7;\n"
                % pg_out(pg, "perb" + suffix, ["b"]))
    return sql


def want_agg(pg, src):
    return sorted(tuple(r) for r in pg.query(
        "SELECT grp, count(*), sum(v) FROM %s GROUP BY grp" % src))


def want_perb(pg, src):
    return sorted(tuple(r) for r in pg.query(
        "SELECT v %% 7, count(*), sum(id), max(grp) FROM %s GROUP BY v %% 7" % src))


def got(pg, table, cols):
    if pg.query("SELECT to_regclass('%s') IS NULL" % table) == [["t"]]:
        return None
    return sorted(tuple(r) for r in pg.query("SELECT %s FROM %s" % (cols, table)))


def got_agg(pg, suffix):
    return got(pg, "agg" + suffix, "grp, n, s")


def got_perb(pg, suffix):
    return got(pg, "perb" + suffix, "b, n, si, mg")


class Churn:
    """Transactions of inserts, updates (also of the group and of v) and
    deletes on the source table."""

    def __init__(self, pg, src, seed):
        self.pg, self.src = pg, src
        self.rng = random.Random(seed)
        self.nid = 400
        self.stop_ev = threading.Event()
        self.thread = None
        self.done = 0

    def run(self, n):
        for _ in range(n):
            stmts = []
            for _ in range(self.rng.randrange(1, 15)):
                self.nid += 1
                r = self.rng.random()
                if r < 0.45:
                    stmts.append("INSERT INTO %s VALUES (%d, %d, %d, 'n')" % (
                        self.src, self.nid, self.rng.randrange(GROUPS), self.rng.randrange(1000)))
                elif r < 0.8:
                    stmts.append("UPDATE %s SET v = v + %d, grp = (grp + 1) %% %d WHERE id = %d"
                                 % (self.src, self.rng.randrange(1, 5), GROUPS,
                                    self.rng.randrange(1, self.nid)))
                else:
                    stmts.append("DELETE FROM %s WHERE id = %d"
                                 % (self.src, self.rng.randrange(1, self.nid)))
            self.pg.psql("BEGIN; %s; COMMIT" % "; ".join(stmts))
            self.done += 1

    def start(self):
        """Keep changing the table in a thread until stop()."""
        def loop():
            while not self.stop_ev.is_set():
                self.run(1)
        self.stop_ev.clear()
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_ev.set()
        self.thread.join()


def make_source(pg, tmp_path, src, hosts=1):
    pad = None
    if hosts > 1:
        pad = tmp_path / "pad.csv"
        write_csv(pad, [[1], [2]])
    pg.psql("CREATE TABLE %s (id bigint PRIMARY KEY, grp integer NOT NULL, v bigint NOT NULL, "
            "s text); INSERT INTO %s SELECT i, i %% %d, i * 7 %% 1000, 'r' FROM "
            "generate_series(1, 400) i" % (src, src, GROUPS))
    old = tmp_path / "old.sql"
    old.write_text(program(pg, src, "_" + src, False, pad=pad))
    new = tmp_path / "new.sql"
    new.write_text(program(pg, src, "_" + src, True, pad=pad))
    return old, new


def start(args, log, procs, env=None, hosts=1):
    e = dict(os.environ, **(env or {}))
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    if hosts > 1:
        e.update(mpi_env())
        args = args + ["--hosts", hosts, "--workers", 2]
    p = subprocess.Popen([sluice_bin()] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                         stderr=open(log, "wb"), env=e)
    procs.append(p)
    return p


def stop(p, log):
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=300)
    assert rc == 0, open(log).read()[-3000:]


def run_old(pg, tmp_path, src, old, st, churn, procs, hosts=1):
    """The old program over the table while it changes, stopped once its
    view equals PostgreSQL's; then more changes (after its checkpoint)."""
    log = tmp_path / "old.log"
    p = start(["run", old, "--no-progress", "--storage", st, "--checkpoint-interval", "0.2",
               "--step-rows", 7], log, procs, hosts=hosts)
    churn.run(20)
    wait_until(lambda: got_agg(pg, "_" + src) == want_agg(pg, src) or p.poll() is not None,
               "the old program's view equal to PostgreSQL's")
    assert p.poll() is None, open(log).read()[-3000:]
    stop(p, log)
    churn.run(15)  # between the checkpoint's LSN and the new snapshot's


def slots(pg, src):
    return sorted(r[0] for r in pg.query("SELECT slot_name FROM pg_replication_slots WHERE "
                                         "slot_name LIKE '%%%s%%'" % src))


def check_final(pg, tmp_path, src, new, bsuffix, procs):
    """Both views equal PostgreSQL's queries, and a from-scratch run of
    the new program (its own slot and tables) gives the same tables."""
    wagg, wperb = want_agg(pg, src), want_perb(pg, src)
    assert got_agg(pg, bsuffix) == wagg
    assert got_perb(pg, bsuffix) == wperb
    fresh = tmp_path / "fresh.sql"
    fresh.write_text(program(pg, src, "_fresh_" + src, True, slot="fresh_" + src))
    log = tmp_path / "fresh.log"
    p = start(["run", fresh, "--no-progress", "--step-rows", 50], log, procs)
    wait_until(lambda: (got_agg(pg, "_fresh_" + src) == wagg and
                        got_perb(pg, "_fresh_" + src) == wperb) or p.poll() is not None,
               "the from-scratch run's tables")
    assert p.poll() is None, open(log).read()[-3000:]
    stop(p, log)
    assert got_agg(pg, "_fresh_" + src) == got_agg(pg, bsuffix)
    assert got_perb(pg, "_fresh_" + src) == got_perb(pg, bsuffix)
    pg.psql("SELECT pg_drop_replication_slot('fresh_%s')" % src)


@pytest.mark.parametrize("hosts", [1, 2])
def test_a_view_over_a_cdc_table_is_fed_a_new_snapshot_less_the_changes_since(
        pg, tmp_path, procs, hosts):
    if hosts > 1 and not shutil.which("mpirun"):
        pytest.skip("mpirun not installed (Debian package openmpi-bin)")
    src = "pgb1h%d" % hosts
    old, new = make_source(pg, tmp_path, src, hosts)
    st = tmp_path / "st"
    churn = Churn(pg, src, 5 + hosts)
    run_old(pg, tmp_path, src, old, st, churn, procs, hosts)
    log = tmp_path / "new.log"
    churn.start()  # changes while the new program starts and bootstraps
    p = start(["run", new, "--no-progress", "--storage", st, "--bootstrap", "allow",
               "--checkpoint-interval", "0.2", "--step-rows", 50], log, procs, hosts=hosts)
    wait_until(lambda: "checkpoint of the new program written" in open(log).read()
               or p.poll() is not None, "the bootstrap done")
    churn.stop()
    text = open(log).read()
    assert p.poll() is None, text[-3000:]
    m = re.search(r"a new snapshot of (\d+) rows at \S+, less (\d+) changes? since", text)
    assert m, text[-3000:]
    assert int(m.group(2)) > 0, text  # the changes made after the old program stopped
    assert "re-read from source: t" in text, text[-3000:]
    churn.run(20)  # after the bootstrap
    suffix = "_" + src
    wait_until(lambda: (got_agg(pg, suffix) == want_agg(pg, src) and
                        got_perb(pg, suffix) == want_perb(pg, src)) or p.poll() is not None,
               "both views equal to PostgreSQL's queries")
    assert p.poll() is None, open(log).read()[-3000:]
    stop(p, log)
    assert slots(pg, src) == ["sluice_" + src]  # the temporary slot is gone
    check_final(pg, tmp_path, src, new, suffix, procs)
    text = open(log).read()
    assert "Sanitizer" not in text and "runtime error" not in text, text[-3000:]


def test_kill9_inside_the_bootstrap_then_the_next_start_bootstraps_again(pg, tmp_path, procs):
    src = "pgb2"
    old, new = make_source(pg, tmp_path, src)
    st = tmp_path / "st"
    churn = Churn(pg, src, 11)
    run_old(pg, tmp_path, src, old, st, churn, procs)
    step = manifest(st, manifests(st)[-1])["step"]
    before = manifests(st)
    # killed after the first bootstrap step (of several: 50 rows each)
    log = tmp_path / "killed.log"
    p = start(["run", new, "--no-progress", "--storage", st, "--bootstrap", "allow",
               "--step-rows", 50], log, procs, env={"SLUICE_CRASH_AT": "after-step:%d" % (step + 1)})
    assert p.wait(timeout=300) == 137, open(log).read()[-3000:]
    assert "a new snapshot of" in open(log).read()
    assert manifests(st) == before  # no checkpoint of the new program
    # the temporary slot went with the killed process's connection
    wait_until(lambda: slots(pg, src) == ["sluice_" + src], "the temporary slot dropped")
    churn.run(10)
    log = tmp_path / "new.log"
    p = start(["run", new, "--no-progress", "--storage", st, "--bootstrap", "allow",
               "--checkpoint-interval", "0.2", "--step-rows", 50], log, procs)
    wait_until(lambda: "checkpoint of the new program written" in open(log).read()
               or p.poll() is not None, "the bootstrap done")
    churn.run(10)
    suffix = "_" + src
    wait_until(lambda: (got_agg(pg, suffix) == want_agg(pg, src) and
                        got_perb(pg, suffix) == want_perb(pg, src)) or p.poll() is not None,
               "both views equal to PostgreSQL's queries")
    assert p.poll() is None, open(log).read()[-3000:]
    stop(p, log)
    check_final(pg, tmp_path, src, new, suffix, procs)

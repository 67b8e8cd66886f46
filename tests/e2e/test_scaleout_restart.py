"""Restarts of a --hosts 2 pipeline from incremental checkpoints (docs/
scale-out.md, "Fault tolerance"; docs/fault-tolerance.md, "How a
checkpoint is taken").

A checkpoint saves again only the operators that received input since the
previous one; each host decides that for its own workers. The k-th file
input is read by host k % 2 and its rows stay on that host's workers
(input the coordinator reads is split over every worker): with the
transactions read by host 1, host 0's workers get the rows of their
aggregate groups (and of their keys of a PRIMARY KEY table read there)
only through the operators' exchanges. Such an operator changed on host 0
all the same and must be saved again there; when it was not, every
checkpoint after the first (full) one kept host 0's files of the one
before, and a restart from it came back with stale state on host 0: an
account twice in `balance` (its old row never retracted).

Every case appends to the input files between runs and compares the final
--dump with a fresh run over all of the input on one host, byte for byte:
- transactions read by host 1 (the case that failed; also with 3 hosts)
  and by host 0, with a checkpoint every 3 steps (the second one incremental), and with the
  final checkpoints only (the one after a restore is incremental too:
  a third run, from it);
- a PRIMARY KEY table read by host 1, upserted in every step;
- kill -9 (SLUICE_CRASH_AT=after-step, counted steps) of either host after
  an incremental checkpoint, then the same command again;
- S3 storage (a real S3 server on loopback), when one is available.
No test depends on timing: checkpoints are taken every K steps and waited
for (SLUICE_CHECKPOINT_EVERY_STEPS), kills happen at counted steps.
"""
import os
import shutil
import subprocess

import pytest

from conftest import csv_input, mpi_env, run_ok, sluice_bin, write_csv
from test_bootstrap import ACCOUNTS, append_csv, tx_rows

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

STEP_ROWS = 150


class Bank:
    """accounts (PRIMARY KEY) and transactions from CSV files; tx_host: the
    host that reads transactions (its file input comes first for host 0,
    second for host 1). latest: a PRIMARY KEY table upserted from a file
    read by host 1 (the fourth file input), with a materialized sum over
    it."""

    def __init__(self, tmp, tx_host=1, latest=False, n=700, hosts=2):
        self.tmp = tmp
        self.hosts = hosts
        self.tx_host = tx_host
        self.latest = latest
        self.tx_path, self.acc_path, self.lat_path = (tmp / "tx.csv", tmp / "acc.csv",
                                                      tmp / "latest.csv")
        self.tx = tx_rows(1, 0, n)
        write_csv(self.tx_path, self.tx)
        write_csv(self.acc_path, [[a, "owner%d" % a] for a in range(1, ACCOUNTS + 1)])
        if latest:
            write_csv(self.lat_path, [r[1:] for r in self.tx])
        (tmp / "empty.csv").write_text("")
        self.prog = tmp / "bank.sql"
        self.prog.write_text(self.program())
        self.st = tmp / "storage"
        self.runs = 0

    def program(self):
        tx = "CREATE TABLE transactions (id BIGINT, account INT, amount BIGINT) %s;" % (
            csv_input(self.tx_path))
        acc = "CREATE TABLE accounts (account INT PRIMARY KEY, owner VARCHAR) %s;" % (
            csv_input(self.acc_path))
        files = [tx, acc] if self.tx_host == 0 else [acc, tx]
        views = [
            "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
            "FROM transactions GROUP BY account;",
            "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
            "JOIN accounts ON balance.account = accounts.account;",
        ]
        if self.latest:
            files += ["CREATE TABLE spare (x INT) %s;" % csv_input(self.tmp / "empty.csv"),
                      "CREATE TABLE latest (account INT PRIMARY KEY, amount BIGINT) %s;"
                      % csv_input(self.lat_path).replace("WITH (", "WITH ('materialized' = "
                                                         "'true', ", 1)]
            views.append("CREATE MATERIALIZED VIEW latest_total AS SELECT COUNT(*) AS n, "
                         "SUM(amount) AS s FROM latest;")
        return "\n".join(files + views) + "\n"

    def more(self, n=300, seed=2):
        rows = tx_rows(seed + self.runs * 10, len(self.tx), n)
        self.tx += rows
        append_csv(self.tx_path, rows)
        if self.latest:
            append_csv(self.lat_path, [r[1:] for r in rows])

    def args(self, dump, storage=None):
        return ["run", self.prog, "--storage", storage or self.st, "--hosts", self.hosts,
                "--workers", self.hosts,
                "--step-rows", STEP_ROWS, "--checkpoint-interval", 0, "--until-done",
                "--dump", dump]

    def run(self, every=None, crash=None, expect=0, storage=None, env=None):
        """One run of the program on self.hosts hosts over the same storage; every:
        a checkpoint every that many steps; crash: SLUICE_CRASH_AT."""
        self.runs += 1
        dump = self.tmp / ("dump%d" % self.runs)
        e = dict(os.environ)
        e.update(mpi_env())
        e.update(env or {})
        if every:
            e["SLUICE_CHECKPOINT_EVERY_STEPS"] = str(every)
        if crash:
            e["SLUICE_CRASH_AT"] = crash
        p = subprocess.run([sluice_bin()] + [str(a) for a in self.args(dump, storage)],
                           capture_output=True, text=True, env=e, timeout=300)
        for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
            assert m not in p.stderr, p.stderr[-4000:]
        if expect == 137:  # the launcher reports the rank's exit
            assert p.returncode != 0 and "ended with status 137" in p.stderr, p.stderr[-3000:]
        else:
            assert p.returncode == expect, p.stderr[-4000:]
        return dump, p.stderr

    def check(self, dump):
        """dump equals a fresh run's over the same input on one host."""
        ref = self.tmp / ("ref%d" % self.runs)
        run_ok(["run", self.prog, "--until-done", "--dump", ref], timeout=300)
        names = sorted(os.listdir(ref))
        assert sorted(os.listdir(dump)) == names
        for n in names:
            got, want = (dump / n).read_text(), (ref / n).read_text()
            assert got == want, "%s differs from a fresh run's:\n%s\nwant:\n%s" % (n, got, want)
        bal = {}
        for _, a, amt in self.tx:
            bal[a] = bal.get(a, 0) + amt
        rows = [r.split(",") for r in (dump / "balance.csv").read_text().split("\n")[1:] if r]
        assert {int(a): int(b) for a, b in rows} == bal and len(rows) == len(bal)


def resumed_from(err):
    return [ln for ln in err.splitlines() if "resuming from the checkpoint" in ln]


@pytest.mark.parametrize("tx_host,hosts", [(1, 2), (0, 2), (1, 3)])
def test_restart_from_an_incremental_checkpoint(tmp_path, tx_host, hosts):
    """Checkpoints at steps 3 and 6 (the second saves only what changed,
    on every host), then the final one; 300 more rows; the restart resumes
    from the last and ends as a fresh run over all 1000 rows. With 3 hosts
    (a worker each) hosts 0 and 2 get the transactions host 1 reads only
    through the exchanges."""
    bank = Bank(tmp_path, tx_host, hosts=hosts)
    bank.run(every=3)
    bank.more()
    d, err = bank.run(every=3)
    assert resumed_from(err), err[-3000:]
    bank.check(d)


def test_restart_twice_from_final_checkpoints(tmp_path):
    """No periodic checkpoints: the first run's final checkpoint is full;
    the restarted run's final one is incremental (it keeps the restored
    state's files of what did not change), and a third run resumes from
    it."""
    bank = Bank(tmp_path)
    bank.run()
    for k in range(2):
        bank.more(seed=2 + k)
        d, err = bank.run()
        assert resumed_from(err), err[-3000:]
        bank.check(d)


def test_primary_key_table_read_by_host_1(tmp_path):
    """latest (PRIMARY KEY, read by host 1) is upserted in every step; host
    0's keys of it arrive there through the table's exchange only (the
    transactions are read by host 0 here: split over every worker)."""
    bank = Bank(tmp_path, tx_host=0, latest=True)
    bank.run(every=2)
    bank.more()
    d, err = bank.run(every=2)
    assert resumed_from(err), err[-3000:]
    bank.check(d)


@pytest.mark.parametrize("rank", [0, 1])
def test_kill_after_an_incremental_checkpoint(tmp_path, rank):
    """Checkpoints every 2 steps; host `rank` dies (exit 137) after step 5:
    the same command resumes from the checkpoint at step 4 (incremental)
    and replays step 5 from the journal; then more input and a clean
    restart."""
    bank = Bank(tmp_path, latest=True)
    bank.run(every=2, crash="after-step:5@%d" % rank, expect=137)
    d, err = bank.run(every=2)
    assert "resuming from the checkpoint at step 4" in err, err[-3000:]
    bank.check(d)
    bank.more()
    d, err = bank.run(every=2)
    assert resumed_from(err), err[-3000:]
    bank.check(d)


def test_restart_from_an_incremental_checkpoint_on_s3(tmp_path, s3):
    """The same with the storage in a bucket (each host uploads its share
    through its own cache)."""
    bank = Bank(tmp_path)
    url = "s3://sluice-rs/bank-%d" % os.getpid()
    env = {"AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
           "AWS_REGION": s3.region, "AWS_ENDPOINT_URL": s3.endpoint}
    bank.run(every=3, storage=url, env=env)
    bank.more()
    d, err = bank.run(every=3, storage=url, env=env)
    assert resumed_from(err), err[-3000:]
    bank.check(d)

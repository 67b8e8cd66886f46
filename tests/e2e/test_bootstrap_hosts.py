"""Bootstrapping with --hosts 2 (issue 17: "works with --hosts and any
worker count"; docs/bootstrapping.md, docs/scale-out.md): a storage written
by the old program (on one host or two), more input appended, then
`sluice run NEW.sql --storage DIR --bootstrap allow --hosts 2`. Every case
compares the final --dump with a from-scratch run of the new program over
the same input on one host and one worker (byte for byte), and checks the
output files: a kept view's output holds every change once across the
restart, a new view's (and a new output connector of a kept materialized
view's, wherever it is written) starts with a snapshot.

- views added over stored state, one over a file table read again (by
  the host that reads that file live: host 1, or the coordinator) and one
  over a datagen table read again (generated on every host), a view
  changed, a new output connector of the kept `balance`
  written on host 1;
- a view changed (from stored aggregate results), the old storage written
  by one host with one worker, bootstrapped on two hosts with three;
- a table changed (a column added: read again, everything over it
  recomputed);
- views dropped;
- kill -9 (SLUICE_CRASH_AT, counted steps) of the old program, then of
  host 1 and of the coordinator inside the bootstrap steps: each restart
  settles or bootstraps again and the end is as without kills;
- the add-view case across two network namespaces (simulated hosts);
- on one host: a new or changed output connector of a kept materialized
  view gets the view's contents first, one of a view that is not
  materialized only its next changes, and the diff says which.
No test depends on timing: kills happen at counted steps.
"""
import json
import os
import shutil
import subprocess

import pytest

import test_bootstrap
from conftest import conn_clause, mpi_env, parse_csv, run, run_ok, sluice_bin, write_csv
from test_bootstrap import RICH

needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None,
                               reason="mpirun (Open MPI) is not installed")


def datagen(limit):
    return conn_clause([{"transport": {"name": "datagen", "config": {
        "seed": 7, "plan": [{"limit": limit, "fields": {
            "usr": {"strategy": "uniform", "range": [1, 9]},
            "n": {"strategy": "uniform", "range": [1, 50]}}}]}}}])


class Bank(test_bootstrap.Bank):
    """The bank program of docs/bootstrapping.md over CSV files
    (test_bootstrap.Bank), with a datagen table of clicks beside it, on
    one or more hosts."""

    def __init__(self, tmp, tx_host=0):
        super().__init__(tmp)
        self.tx_host = tx_host

    def tables(self):
        """The k-th file input is read by host k % 2 with --hosts 2:
        transactions' file first (host 0) or second (tx_host 1)."""
        files = [self.table_tx(), self.table_acc()]
        if self.tx_host:
            files.reverse()
        return files + ["CREATE TABLE clicks (usr INT, n INT) %s;" % datagen(600)]

    def big_tx(self):
        return ("CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
                % self.out("big_tx"))

    def old(self):
        return self.tables() + [
            self.big_tx(),
            "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
            "FROM transactions GROUP BY account;",
            "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
            "JOIN accounts ON balance.account = accounts.account;",
            "CREATE MATERIALIZED VIEW clicks_total AS SELECT SUM(n) AS s FROM clicks;",
        ]

    def start(self, hosts=2, workers=2, env=None, expect=0, extra=()):
        old = self.write("old.sql", self.old())
        return sluice_run(["run", old, "--storage", self.st, "--until-done",
                           "--workers", workers] + hosts_args(hosts) + list(extra),
                          env=env, expect=expect)


def hosts_args(hosts):
    return ["--hosts", hosts] if hosts > 1 else []


def sluice_run(args, env=None, expect=0):
    """run() with SLUICE_CRASH_AT and the like in env; expect: the exit
    status (137: killed at a crash point)."""
    if env is None:
        p = run(args, timeout=300)
    else:
        e = dict(os.environ)
        e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        e.update(mpi_env())
        e.update(env)
        p = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True,
                           text=True, env=e, timeout=300)
        for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
            assert m not in p.stderr, p.stderr[-4000:]
    if expect == 137 and "--hosts" in [str(a) for a in args]:  # the launcher reports it
        assert p.returncode != 0 and "ended with status 137" in p.stderr, p.stderr[-3000:]
    else:
        assert p.returncode == expect, p.stderr[-6000:]
    return p


def dumps(d):
    return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))}


def check_same_as_fresh(bank, new, d, extra=()):
    """The bootstrapped dump d equals a from-scratch run of new over the
    same input (one host, one worker, its own storage and outputs)."""
    fresh = bank.tmp / "fresh"
    fresh.mkdir(exist_ok=True)
    prog = fresh / "new.sql"
    out = '"file_output", "config": {"path": "%s/' % bank.tmp
    prog.write_text(new.read_text().replace(out, out + "fresh/"))
    ref = bank.tmp / "ref"
    shutil.rmtree(ref, ignore_errors=True)
    run_ok(["run", prog, "--until-done", "--dump", ref] + list(extra))
    got, want = dumps(d), dumps(ref)
    assert got.keys() == want.keys()
    for n in want:
        assert got[n] == want[n], "%s differs from a fresh run's" % n


def changes(path):
    return [tuple(r) for r in parse_csv(open(path).read()) if r and r != [None]]


def integrated(path):
    acc = {}
    if not os.path.exists(path):
        return acc
    for rec in changes(path):
        key, w = tuple(rec[:-1]), int(rec[-1])
        acc[key] = acc.get(key, 0) + w
    return {k: v for k, v in acc.items() if v}


def check_big_tx_once(bank):
    big = sorted((str(i), str(a)) for i, _, a in bank.tx if a > 700)
    got = changes(bank.tmp / "big_tx.out.csv")
    assert sorted(r[:2] for r in got) == big and all(r[2] == "1" for r in got)


def manifests(st):
    return sorted((n for n in os.listdir(st) if n.startswith("manifest-")),
                  key=lambda n: int(n[len("manifest-"):].split(".")[0]))


def manifest(st, k=-1):
    return json.loads(open(os.path.join(st, manifests(st)[k])).read().split("\n")[0])


def last_step(st):
    return manifest(st)["step"]


def added_program(bank, name="new.sql"):
    """rich (over the materialized balance), per_account (over the file
    table transactions, read again), per_user (over the datagen table
    clicks, read again: generated on every host), named_balance changed,
    and a second output connector of the kept balance; big_tx first, so
    that balance's new output is the second output (written on host 1)."""
    bal_outs = conn_clause([
        {"transport": {"name": "file_output",
                       "config": {"path": str(bank.tmp / "balance2.out.csv")}},
         "format": {"name": "csv"}}])
    return bank.write(name, bank.tables() + [
        bank.big_tx(),
        "CREATE MATERIALIZED VIEW balance %s AS SELECT account, SUM(amount) AS balance "
        "FROM transactions GROUP BY account;" % bal_outs,
        "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance * 2 AS b2 FROM balance "
        "JOIN accounts ON balance.account = accounts.account;",
        "CREATE MATERIALIZED VIEW clicks_total AS SELECT SUM(n) AS s FROM clicks;",
        "CREATE MATERIALIZED VIEW rich %s AS SELECT account, balance FROM balance "
        "WHERE balance > %d;" % (bank.out("rich"), RICH),
        "CREATE MATERIALIZED VIEW per_account AS SELECT account, COUNT(*) AS n "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW per_user AS SELECT usr, SUM(n) AS s, COUNT(*) AS c "
        "FROM clicks GROUP BY usr;",
    ])


def check_added_outputs(bank):
    check_big_tx_once(bank)
    bal = bank.balance()
    rich = {(str(a), str(v)) for a, v in bal.items() if v > RICH}
    assert integrated(bank.tmp / "rich.out.csv") == {k: 1 for k in rich}
    # balance's new output (host 1): the snapshot first, then its changes
    assert integrated(bank.tmp / "balance2.out.csv") == {
        (str(a), str(v)): 1 for a, v in bal.items()}


@needs_mpi
@pytest.mark.parametrize("workers,tx_host", [(2, 1), (3, 0)])
def test_add_views_reread_and_new_output_on_two_hosts(sluice, tmp_path, workers, tx_host):
    """transactions is read again by the host that reads its file live
    (host 1, or the coordinator)."""
    bank = Bank(tmp_path, tx_host)
    bank.start(hosts=2, workers=2)
    bank.more()
    new = added_program(bank)
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--hosts", 2, "--workers", workers, "--step-rows", 150, "--dump", d],
               timeout=300)
    assert "re-read from source: transactions" in p.stderr
    assert "re-read from source: clicks" in p.stderr
    assert "1000 rows read again" in p.stderr  # 400 transactions, 600 clicks
    check_same_as_fresh(bank, new, d)
    check_added_outputs(bank)
    # an ordinary restart of the new program afterwards, with more input
    bank.more(seed=3)
    d2 = tmp_path / "d2"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--hosts", 2,
                "--workers", workers, "--dump", d2], timeout=300)
    assert "bootstrapping" not in p.stderr
    check_same_as_fresh(bank, new, d2)
    check_added_outputs(bank)


@needs_mpi
def test_change_a_view_written_by_one_host_bootstrapped_on_two(sluice, tmp_path):
    """balance becomes SUM(amount) * 100, computed from the aggregate's
    stored results; the storage was written by one host with one worker,
    the bootstrap runs on two hosts with three workers (re-sharded)."""
    bank = Bank(tmp_path)
    bank.start(hosts=1, workers=1)
    bank.more()
    new = bank.write("new.sql", [s.replace("SUM(amount) AS balance", "SUM(amount) * 100 AS balance")
                                 for s in bank.old()])
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--hosts", 2, "--workers", 3, "--dump", d], timeout=300)
    assert "recomputed from stored state" in p.stderr
    assert "0 rows read again" in p.stderr
    check_same_as_fresh(bank, new, d)
    check_big_tx_once(bank)


@needs_mpi
def test_changed_table_is_read_again_on_two_hosts(sluice, tmp_path):
    """A column added to transactions: the table is read from the start and
    everything over it recomputed; accounts and clicks keep their state."""
    bank = Bank(tmp_path)
    bank.start()
    bank.more()
    tx2 = tmp_path / "tx2.csv"
    write_csv(tx2, [r + ["n%d" % r[0]] for r in bank.tx])
    stmts = bank.old()
    stmts[0] = bank.table_tx(", note VARCHAR", tx2)
    new = bank.write("new.sql", stmts)
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--hosts", 2, "--workers", 2, "--dump", d], timeout=300)
    assert "transactions   table  changed" in p.stderr
    check_same_as_fresh(bank, new, d)
    # big_tx changed (its input did): its output starts over, each row once
    check_big_tx_once(bank)


@needs_mpi
def test_drop_views_on_two_hosts(sluice, tmp_path):
    """(The storage written by one host with two workers.)"""
    bank = Bank(tmp_path)
    bank.start(hosts=1, workers=2)
    old_nodes = manifest(bank.st)["nodes"]
    bank.more()
    new = bank.write("new.sql", bank.tables() + [
        "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW clicks_total AS SELECT SUM(n) AS s FROM clicks;"])
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--hosts", 2, "--workers", 2, "--dump", d], timeout=300)
    assert "named_balance  view   removed" in p.stderr and "dropped" in p.stderr
    check_same_as_fresh(bank, new, d)
    # the dropped views' state is gone from the newest checkpoint
    assert manifest(bank.st)["nodes"] < old_nodes


@needs_mpi
def test_kill9_of_each_host_during_bootstrap(sluice, tmp_path):
    """The old program (one host, two workers) dies with journaled steps
    after its last checkpoint; the bootstrap on two hosts first has the old
    program settle them (on the coordinator), then dies on host 1 inside its bootstrap steps (re-reading
    transactions in steps of 50 rows); the next start dies on the
    coordinator after the first bootstrap step; the third finishes: the
    dump is a fresh run's, big_tx's output holds each change once, rich's
    and balance's new output their snapshot."""
    bank = Bank(tmp_path)
    p = bank.start(hosts=1, workers=2, env={"SLUICE_CRASH_AT": "after-step:7",
                                            "SLUICE_CHECKPOINT_EVERY_STEPS": "3"}, expect=137,
                   extra=["--step-rows", 40, "--checkpoint-interval", 0])
    assert last_step(bank.st) == 6  # step 7 is journaled only
    bank.more()
    new = added_program(bank)
    args = ["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
            "--hosts", 2, "--workers", 2, "--step-rows", 50]
    # the settled checkpoint is at step 7 at least: steps 9.. are bootstrap steps
    p = sluice_run(args, env={"SLUICE_CRASH_AT": "after-step:9@1"}, expect=137)
    assert "1 journaled step to replay" in p.stderr, p.stderr[-3000:]
    settled = last_step(bank.st)
    assert settled == 7  # the old program's, settled: nothing after it
    assert "bootstrap" not in manifest(bank.st)
    p = sluice_run(args, env={"SLUICE_CRASH_AT": "after-step:%d@0" % (settled + 1)},
                   expect=137)
    assert last_step(bank.st) == settled  # no checkpoint of the new program yet
    d = tmp_path / "d"
    p = run_ok(args + ["--dump", d], timeout=300)
    assert "bootstrapping:" in p.stderr
    check_same_as_fresh(bank, new, d)
    check_added_outputs(bank)


def test_new_output_of_a_kept_view_starts_with_a_snapshot(sluice, tmp_path):
    """One host. balance (materialized) keeps its output a and gains b; rich
    (materialized) moves its output from r1 to r2 (changed JSON: a new
    destination); big_tx (not materialized) gains big2. b and r2 start
    with the view's contents, then its changes; a continues without a
    duplicate; big2 gets only the changes after the restart."""
    bank = Bank(tmp_path)

    def outs(*names):
        return conn_clause([{"transport": {"name": "file_output",
                                           "config": {"path": str(tmp_path / n)}},
                             "format": {"name": "csv"}} for n in names])

    def prog(bal, rich, big):
        return bank.tables() + [
            "CREATE MATERIALIZED VIEW balance %s AS SELECT account, SUM(amount) AS balance "
            "FROM transactions GROUP BY account;" % outs(*bal),
            "CREATE MATERIALIZED VIEW rich %s AS SELECT account, balance FROM balance "
            "WHERE balance > %d;" % (outs(*rich), RICH),
            "CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
            % outs(*big)]
    bank.old = lambda: prog(["a.csv"], ["r1.csv"], ["big.csv"])
    bank.start(hosts=1, workers=1)
    before = bank.balance()
    old_big = {(str(i), str(a)) for i, _, a in bank.tx if a > 700}
    a_before = changes(tmp_path / "a.csv")
    bank.more()
    new = bank.write("new.sql", prog(["a.csv", "b.csv"], ["r2.csv"], ["big.csv", "big2.csv"]))
    p = run(["diff", "--storage", bank.st, new])
    assert p.returncode == 0, p.stderr
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.strip()}
    assert "kept; new or changed outputs start with a snapshot" in lines["balance"]
    assert "kept; new or changed outputs start with a snapshot" in lines["rich"]
    assert "next changes (not materialized: no snapshot)" in lines["big_tx"]
    d = tmp_path / "d"
    run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
            "--dump", d])
    check_same_as_fresh(bank, new, d)
    bal = bank.balance()
    want = {(str(a), str(v)): 1 for a, v in bal.items()}
    assert integrated(tmp_path / "a.csv") == want
    assert integrated(tmp_path / "b.csv") == want
    # the changes after the restart, summed: -old +new per changed balance
    delta = {}
    for a, v in bal.items():
        if before.get(a) != v:
            delta[(str(a), str(v))] = 1
            if a in before:
                delta[(str(a), str(before[a]))] = -1

    def summed(recs):
        acc = {}
        for r in recs:
            acc[tuple(r[:-1])] = acc.get(tuple(r[:-1]), 0) + int(r[-1])
        return {k: v for k, v in acc.items() if v}
    # b starts with the snapshot (the balances as of the checkpoint), then the changes
    b = changes(tmp_path / "b.csv")
    assert sorted(b[:len(before)]) == sorted((str(a), str(v), "1") for a, v in before.items())
    assert summed(b[len(before):]) == delta
    # a continues: what it held, then the changes (no snapshot in between)
    a = changes(tmp_path / "a.csv")
    assert a[:len(a_before)] == a_before
    assert summed(a[len(a_before):]) == delta
    rich = {(str(a), str(v)): 1 for a, v in bal.items() if v > RICH}
    assert integrated(tmp_path / "r2.csv") == rich
    big = {(str(i), str(a)) for i, _, a in bank.tx if a > 700}
    assert {r[:2] for r in changes(tmp_path / "big.csv")} == big
    assert {r[:2] for r in changes(tmp_path / "big2.csv")} == big - old_big


@needs_mpi
def test_bootstrap_across_two_network_namespaces(sluice, tmp_path):
    """The add-view bootstrap with the two hosts in network namespaces of
    their own (scripts/netns-hosts.sh, tests/e2e/netns.py): the rows read
    again on host 1, the plan and the snapshot for its output travel over
    TCP between the namespaces."""
    from netns import NetnsHosts, netns_available
    ok, why = netns_available()
    if not ok:
        pytest.skip("network namespaces unavailable: %s" % why)
    bank = Bank(tmp_path, tx_host=1)
    with NetnsHosts(2) as h:
        def ns_run(args):
            env = dict(os.environ)
            env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
            env.update(mpi_env())
            argv = h.on_host1([sluice_bin()] + [str(a) for a in args] +
                              ["--hosts", "2", "--workers", "2", "--no-progress",
                               "--hostfile", h.hostfile] + h.mca)
            p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
            for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
                assert m not in p.stderr, p.stderr[-4000:]
            assert p.returncode == 0, p.stderr[-4000:]
            return p
        ns_run(["run", bank.write("old.sql", bank.old()), "--storage", bank.st,
                "--until-done"])
        bank.more()
        new = added_program(bank)
        d = tmp_path / "d"
        p = ns_run(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                    "--dump", d])
    assert "bootstrapping:" in p.stderr and "1000 rows read again" in p.stderr
    check_same_as_fresh(bank, new, d)
    check_added_outputs(bank)

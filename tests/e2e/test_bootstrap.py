"""Bootstrapping on restart (issue 17 item 2; docs/bootstrapping.md): a
storage written by `sluice run OLD.sql --storage DIR`, more input appended,
then `sluice run NEW.sql --storage DIR --bootstrap allow`. Every case
checks the final dumps against the new program's results computed here in
Python over all the input (never numbers Sluice produced), that unchanged
views' output files hold every change exactly once (no gap, no duplicate
across the restart), and that new views' output files start with a
snapshot. Also: the policies (reject, the default without --http), a
case not built yet refused with a message naming the relation, kill -9
inside the bootstrap (SLUICE_CRASH_AT) redone by the next start, another
worker count, and GET /diff + POST /approve with --http."""
import json
import os
import random
import subprocess
import urllib.request

from conftest import (csv_input, csv_output, conn_clause, parse_csv, read_dump, run, run_ok,
                      sluice_bin, wait_until, write_csv)

ACCOUNTS = 12
RICH = 3000


def tx_rows(seed, start, n):
    r = random.Random(seed)
    return [[start + i, r.randint(1, ACCOUNTS), r.randint(-200, 900)] for i in range(n)]


def append_csv(path, rows):
    with open(path, "a") as f:
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")


class Bank:
    """The bank program of docs/bootstrapping.md over CSV files."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.tx_path = tmp / "tx.csv"
        self.acc_path = tmp / "acc.csv"
        self.tx = tx_rows(1, 0, 400)
        write_csv(self.tx_path, self.tx)
        write_csv(self.acc_path, [[a, "owner%d" % a] for a in range(1, ACCOUNTS + 1)])
        self.st = tmp / "storage"

    def table_tx(self, extra="", path=None):
        return "CREATE TABLE transactions (id BIGINT, account INT, amount BIGINT%s) %s;" % (
            extra, csv_input(path or self.tx_path))

    def table_acc(self):
        return "CREATE TABLE accounts (account INT PRIMARY KEY, owner VARCHAR) %s;" % csv_input(
            self.acc_path)

    def out(self, name):
        return csv_output(self.tmp / ("%s.out.csv" % name))

    def old(self):
        return [
            self.table_tx(), self.table_acc(),
            "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
            "FROM transactions GROUP BY account;",
            "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
            "JOIN accounts ON balance.account = accounts.account;",
            "CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
            % self.out("big_tx"),
        ]

    def write(self, name, stmts):
        p = self.tmp / name
        p.write_text("\n".join(stmts) + "\n")
        return p

    def start(self, workers=1):
        old = self.write("old.sql", self.old())
        run_ok(["run", old, "--storage", self.st, "--until-done", "--workers", workers])

    def more(self, n=300, seed=2):
        rows = tx_rows(seed, len(self.tx), n)
        self.tx += rows
        append_csv(self.tx_path, rows)

    # expected results, computed here
    def balance(self, mult=1):
        b = {}
        for _, a, amt in self.tx:
            b[a] = b.get(a, 0) + amt
        return {a: v * mult for a, v in b.items()}


def dump(tmp, name):
    d = tmp / name
    return d


def rows_of(dumpdir, rel):
    _, recs = read_dump(dumpdir / ("%s.csv" % rel))
    return sorted(tuple(r) for r in recs)


def integrated(path):
    """An output file's changes summed up: row -> weight (none zero)."""
    acc = {}
    if not os.path.exists(path):
        return acc
    for rec in parse_csv(open(path).read()):
        if not rec or rec == [None]:
            continue
        key, w = tuple(rec[:-1]), int(rec[-1])
        acc[key] = acc.get(key, 0) + w
    return {k: v for k, v in acc.items() if v}


def changes(path):
    return [tuple(r) for r in parse_csv(open(path).read()) if r and r != [None]]


def manifests(st):
    return sorted((n for n in os.listdir(st) if n.startswith("manifest-")),
                  key=lambda n: int(n[len("manifest-"):].split(".")[0]))


def manifest(st, name):
    return json.loads(open(os.path.join(st, name)).read().split("\n")[0])


def new_program(bank):
    """Adds views over the materialized balance and the PRIMARY KEY
    accounts, changes named_balance (over both), drops nothing else."""
    return bank.write("new.sql", [
        bank.table_tx(), bank.table_acc(),
        "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance * 2 AS b2 FROM balance "
        "JOIN accounts ON balance.account = accounts.account;",
        "CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
        % bank.out("big_tx"),
        "CREATE MATERIALIZED VIEW rich %s AS SELECT account, balance FROM balance "
        "WHERE balance > %d;" % (bank.out("rich"), RICH),
        "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(balance) AS s FROM balance;",
        "CREATE MATERIALIZED VIEW owners AS SELECT owner FROM accounts WHERE account <= 3;",
    ])


def check_new(bank, d):
    bal = bank.balance()
    assert rows_of(d, "balance") == sorted((str(a), str(v)) for a, v in bal.items())
    assert rows_of(d, "named_balance") == sorted(("owner%d" % a, str(2 * v))
                                                 for a, v in bal.items())
    rich = {(str(a), str(v)) for a, v in bal.items() if v > RICH}
    assert set(rows_of(d, "rich")) == rich
    assert rows_of(d, "total") == [(str(len(bal)), str(sum(bal.values())))]
    assert rows_of(d, "owners") == [("owner1",), ("owner2",), ("owner3",)]
    # the kept view's output: every change once, across the restart
    big = sorted((str(i), str(a)) for i, _, a in bank.tx if a > 700)
    got = changes(bank.tmp / "big_tx.out.csv")
    assert sorted(r[:2] for r in got) == big and all(r[2] == "1" for r in got)
    # the new view's output: its snapshot, then its changes, add up to it
    assert integrated(bank.tmp / "rich.out.csv") == {k: 1 for k in rich}


def test_add_and_change_views_over_stored_state(sluice, tmp_path):
    bank = Bank(tmp_path)
    bank.start()
    before = manifests(bank.st)
    old_m = manifest(bank.st, before[-1])
    bank.more()
    new = new_program(bank)

    # without --http the default refuses, and so does reject: nothing changes
    for extra in ([], ["--bootstrap", "reject"]):
        p = run(["run", new, "--storage", bank.st, "--until-done"] + extra)
        assert p.returncode == 1, p.stderr
        assert "named_balance  view   changed" in p.stderr
        assert "not restarting with a changed program" in p.stderr
        assert manifests(bank.st) == before

    d = tmp_path / "d1"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--dump", d])
    assert "bootstrapping:" in p.stderr
    check_new(bank, d)
    boots = [manifest(bank.st, n).get("bootstrap") for n in manifests(bank.st)]
    assert {"from": old_m["fingerprint"], "from_step": old_m["step"]} in boots

    # an ordinary restart of the new program afterwards, with more input
    bank.more(seed=3)
    d = tmp_path / "d2"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--dump", d])
    assert "bootstrapping" not in p.stderr
    check_new(bank, d)


def test_changed_table_is_read_again(sluice, tmp_path):
    """A column added to transactions: the table is read from the start and
    everything over it recomputed; accounts keeps its state."""
    bank = Bank(tmp_path)
    bank.start()
    bank.more()
    tx2 = tmp_path / "tx2.csv"
    write_csv(tx2, [r + ["n%d" % r[0]] for r in bank.tx])
    new = bank.write("new.sql", [
        bank.table_tx(", note VARCHAR", tx2), bank.table_acc(),
        "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) AS balance "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
        "JOIN accounts ON balance.account = accounts.account;",
        "CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
        % bank.out("big_tx"),
    ])
    d = tmp_path / "d"
    run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
            "--dump", d])
    bal = bank.balance()
    assert rows_of(d, "balance") == sorted((str(a), str(v)) for a, v in bal.items())
    assert rows_of(d, "named_balance") == sorted(("owner%d" % a, str(v)) for a, v in bal.items())
    # big_tx changed (its input did): its output starts over, each row once
    big = sorted((str(i), str(a)) for i, _, a in bank.tx if a > 700)
    assert sorted(r[:2] for r in changes(tmp_path / "big_tx.out.csv")) == big


def test_a_case_not_built_yet_is_refused_naming_the_relation(sluice, tmp_path):
    """A new view over a table fed over HTTP only, without 'retain_input':
    its history is in no connector and not in the checkpoint
    (test_bootstrap_http.py has the table WITH ('retain_input' = 'true'))."""
    bank = Bank(tmp_path)
    bank.old = lambda old=bank.old: old() + ["CREATE TABLE pushed (k INT);"]
    bank.start()
    before = manifests(bank.st)
    new = bank.write("new.sql", bank.old() + [
        "CREATE MATERIALIZED VIEW pushed_n AS SELECT COUNT(*) AS n FROM pushed;"])
    p = run(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow"])
    assert p.returncode == 1
    assert "view pushed_n" in p.stderr and "pushed" in p.stderr
    assert "WITH ('retain_input' = 'true')" in p.stderr
    assert "pushed: HTTP input only: its history is not kept" in p.stderr, p.stderr
    assert "HTTP input only: its history is not kept: bootstrapping refuses" in p.stderr
    assert manifests(bank.st) == before


def test_the_documented_example_reads_transactions_again_for_per_account(sluice, tmp_path):
    """docs/bootstrapping.md's bank2: balance changed (from its stored
    aggregate), named_balance follows, rich added over balance, per_account
    added over the non-materialized transactions (read again from the
    beginning for it alone, in small bootstrap steps), big_tx dropped."""
    bank = Bank(tmp_path)
    bank.start()
    bank.more()
    new = bank.write("new.sql", [
        bank.table_tx(), bank.table_acc(),
        "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) * 100 AS balance "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
        "JOIN accounts ON balance.account = accounts.account;",
        "CREATE MATERIALIZED VIEW rich %s AS SELECT account, balance FROM balance "
        "WHERE balance > %d;" % (bank.out("rich"), RICH * 100),
        "CREATE MATERIALIZED VIEW per_account %s AS SELECT account, COUNT(*) AS n "
        "FROM transactions GROUP BY account;" % bank.out("per_account"),
    ])
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--step-rows", 50, "--dump", d])
    assert "re-read from source: transactions" in p.stderr
    assert "400 rows read again" in p.stderr  # the first run's rows, not the new ones
    bal = bank.balance(100)
    assert rows_of(d, "balance") == sorted((str(a), str(v)) for a, v in bal.items())
    assert rows_of(d, "named_balance") == sorted(("owner%d" % a, str(v)) for a, v in bal.items())
    rich = {(str(a), str(v)) for a, v in bal.items() if v > RICH * 100}
    assert set(rows_of(d, "rich")) == rich
    counts = {}
    for _, a, _ in bank.tx:
        counts[a] = counts.get(a, 0) + 1
    want = {(str(a), str(n)) for a, n in counts.items()}
    assert set(rows_of(d, "per_account")) == want
    assert integrated(tmp_path / "per_account.out.csv") == {k: 1 for k in want}
    assert not os.path.exists(d / "big_tx.csv")


def test_kill_during_bootstrap_then_restart_finishes_it(sluice, tmp_path):
    bank = Bank(tmp_path)
    bank.start()
    step = manifest(bank.st, manifests(bank.st)[-1])["step"]
    bank.more()
    new = new_program(bank)
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:%d" % (step + 1))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    p = subprocess.run([sluice_bin(), "run", str(new), "--storage", str(bank.st), "--until-done",
                        "--bootstrap", "allow"], capture_output=True, env=env, timeout=300)
    assert p.returncode == 137, p.stderr.decode()[-3000:]
    # the bootstrap step's snapshot reached rich's output before the kill
    assert integrated(tmp_path / "rich.out.csv")
    d = tmp_path / "d"
    run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
            "--dump", d])
    check_new(bank, d)


def test_other_worker_count(sluice, tmp_path):
    bank = Bank(tmp_path)
    bank.start(workers=1)
    bank.more()
    new = new_program(bank)
    d = tmp_path / "d"
    run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
            "--workers", 3, "--dump", d])
    check_new(bank, d)


def test_http_await_approval_then_approve(sluice, tmp_path, http_pipeline):
    """With --http the default is await_approval: the pipeline restores,
    shows the diff at GET /diff, takes no input (a push is refused with
    503), and bootstraps on POST /approve; POST /reject instead stops it
    with the storage unchanged."""
    import requests
    bank = Bank(tmp_path)
    bank.start()
    before = manifests(bank.st)
    bank.more()
    new = new_program(bank)
    sql = new.read_text()

    p = http_pipeline(sql, "--storage", bank.st, name="rejected")
    wait_until(lambda: requests.get(p.url("/status"), timeout=30).json()["state"]
               == "awaiting_approval", "awaiting approval")
    d = requests.get(p.url("/diff"), timeout=30).json()
    rels = {r["name"]: r for r in d["relations"]}
    assert d["bootstrap"] == "awaiting_approval"
    assert rels["rich"]["status"] == "added" and rels["named_balance"]["status"] == "changed"
    r = requests.post(p.url("/ingress/accounts"), data='{"insert": {"account": 99, "owner": "x"}}',
                      timeout=30)
    assert r.status_code == 503, r.text
    assert requests.post(p.url("/reject"), timeout=30).status_code == 200
    assert p.wait_exit().returncode == 0
    assert manifests(bank.st) == before
    assert not integrated(tmp_path / "rich.out.csv")

    p = http_pipeline(sql, "--storage", bank.st, name="approved")
    wait_until(lambda: requests.get(p.url("/status"), timeout=30).json()["state"]
               == "awaiting_approval", "awaiting approval")
    assert requests.post(p.url("/approve"), timeout=30).status_code == 200
    assert requests.post(p.url("/approve"), timeout=30).status_code == 409
    bal = bank.balance()
    want = sorted([str(a), str(v)] for a, v in bal.items() if v > RICH)

    def rich_now():
        r = requests.get(p.url("/query"), params={"sql": "SELECT account, balance FROM rich",
                                                  "format": "json"}, timeout=30)
        if r.status_code != 200:
            return None
        rows = [json.loads(line) for line in r.text.splitlines() if line.strip()]
        return sorted([str(x["account"]), str(x["balance"])] for x in rows) == want
    wait_until(rich_now, "rich computed over every transaction")
    assert requests.get(p.url("/diff"), timeout=30).json()["bootstrap"] == "done"
    p.stop()


def test_change_a_view_over_stored_aggregate_state(sluice, tmp_path):
    """balance becomes SUM(amount) * 100: computed from the aggregate's
    stored results, no transaction read again; named_balance (unchanged
    text, changed input) follows; big_tx and its output are untouched."""
    bank = Bank(tmp_path)
    bank.start(workers=2)
    bank.more()
    new = bank.write("new.sql", [
        bank.table_tx(), bank.table_acc(),
        "CREATE MATERIALIZED VIEW balance AS SELECT account, SUM(amount) * 100 AS balance "
        "FROM transactions GROUP BY account;",
        "CREATE MATERIALIZED VIEW named_balance AS SELECT owner, balance FROM balance "
        "JOIN accounts ON balance.account = accounts.account;",
        "CREATE VIEW big_tx %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
        % bank.out("big_tx"),
    ])
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--workers", 2, "--dump", d])
    assert "recomputed from stored state" in p.stderr
    bal = bank.balance(100)
    assert rows_of(d, "balance") == sorted((str(a), str(v)) for a, v in bal.items())
    assert rows_of(d, "named_balance") == sorted(("owner%d" % a, str(v)) for a, v in bal.items())
    big = sorted((str(i), str(a)) for i, _, a in bank.tx if a > 700)
    assert sorted(r[:2] for r in changes(tmp_path / "big_tx.out.csv")) == big


def test_a_view_added_with_an_old_views_body_gets_its_snapshot(sluice, tmp_path):
    """big_tx2 computes the same stream as the kept big_tx (equal
    fingerprints): it still starts its output with its full contents."""
    bank = Bank(tmp_path)
    bank.start()
    bank.more()
    new = bank.write("new.sql", bank.old() + [
        "CREATE VIEW big_tx2 %s AS SELECT id, amount FROM transactions WHERE amount > 700;"
        % bank.out("big_tx2")])
    run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow"])
    big = {(str(i), str(a)): 1 for i, _, a in bank.tx if a > 700}
    assert integrated(tmp_path / "big_tx2.out.csv") == big
    assert sorted(r[:2] for r in changes(tmp_path / "big_tx.out.csv")) == sorted(big)


def test_old_program_killed_then_bootstrapped_settles_its_journal_first(sluice, tmp_path):
    """The old program dies (kill -9) with journaled steps after its last
    checkpoint: the bootstrap first has the old program replay them (its
    outputs written once), then bootstraps; every view as computed here."""
    bank = Bank(tmp_path)
    old = bank.write("old.sql", bank.old())
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:7", SLUICE_CHECKPOINT_EVERY_STEPS="3")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    p = subprocess.run([sluice_bin(), "run", str(old), "--storage", str(bank.st),
                        "--until-done", "--step-rows", "40", "--checkpoint-interval", "0"],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 137, p.stderr.decode()[-3000:]
    assert manifest(bank.st, manifests(bank.st)[-1])["step"] == 6  # steps 7.. are journaled
    bank.more()
    new = new_program(bank)
    d = tmp_path / "d"
    p = run_ok(["run", new, "--storage", bank.st, "--until-done", "--bootstrap", "allow",
                "--step-rows", 40, "--dump", d])
    assert "1 journaled step to replay" in p.stderr
    check_new(bank, d)


def test_a_new_layout_of_the_same_program_restarts_without_approval(sluice, tmp_path):
    """Comments, line breaks, keyword case: another text, the same circuit:
    no policy needed, nothing recomputed, the outputs continue."""
    bank = Bank(tmp_path)
    bank.start()
    bank.more()
    same = bank.write("same.sql", ["-- the same program, laid out anew"] +
                      [s.replace("CREATE MATERIALIZED VIEW", "create materialized view\n")
                       for s in bank.old()])
    d = tmp_path / "d"
    p = run_ok(["run", same, "--storage", bank.st, "--until-done", "--dump", d])
    assert "the same tables and views: restarting with this one" in p.stderr
    assert "0 new nodes" in p.stderr
    bal = bank.balance()
    assert rows_of(d, "balance") == sorted((str(a), str(v)) for a, v in bal.items())
    big = sorted((str(i), str(a)) for i, _, a in bank.tx if a > 700)
    assert sorted(r[:2] for r in changes(tmp_path / "big_tx.out.csv")) == big

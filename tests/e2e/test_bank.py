"""The bank example (examples/bank.sql) with 1M generated transactions.

The program is the example file with its "limit" rewritten to 1000000 and
one extra view `raw` (SELECT * FROM transactions) with a file_output CSV
connector, so the generated transactions themselves can be checked. For
--workers 1, 2 and 4 the test checks:
  * balance.csv equals what SQLite computes from the raw output file
    (credits - debits per account, joined the same way as the program),
  * the balances sum to 0, the accounts are 1..9 (range [1,10) is half-open),
  * the raw output has 1M rows, each with weight 1, from/to accounts in
    [1,10), amounts in [1,1000), and timestamps 1970-01-01 + i seconds for
    i = 0..999999 (datagen's "scale": 1000 on a TIMESTAMP),
  * every run generated the same transactions and balance.csv is
    byte-identical across worker counts.
"""
import datetime
import hashlib
import os
import re
import sqlite3

import pytest

from conftest import EXAMPLES, csv_output, read_dump, run_ok

ROWS = 1000000
WORKERS = (1, 2, 4)


def bank_program(tmp, raw_path):
    with open(os.path.join(EXAMPLES, "bank.sql")) as f:
        text = f.read()
    text, n = re.subn(r'("limit"\s*:\s*)100000000\b', r"\g<1>%d" % ROWS, text)
    assert n == 1, "examples/bank.sql no longer has \"limit\": 100000000"
    text += ("\n-- test addition: the raw transactions, written to a CSV file\n"
             "CREATE VIEW raw %s AS SELECT * FROM transactions;\n" % csv_output(raw_path))
    path = os.path.join(tmp, "bank.sql")
    with open(path, "w") as f:
        f.write(text)
    return path


@pytest.fixture(scope="module")
def bank_runs(tmp_path_factory, sluice):
    out = {}
    for w in WORKERS:
        d = str(tmp_path_factory.mktemp("bank_w%d" % w))
        raw = os.path.join(d, "raw.csv")
        prog = bank_program(d, raw)
        dump = os.path.join(d, "dump")
        p = run_ok(["run", prog, "--workers", w, "--until-done", "--dump", dump,
                    "--no-progress"], timeout=300)
        out[w] = {"dir": d, "raw": raw, "dump": dump, "proc": p}
    return out


def load_raw(path):
    """Raw output lines: from_account,to_account,amount,ts,weight."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE raw (from_account INTEGER, to_account INTEGER, amount INTEGER, "
               "ts TEXT, weight INTEGER)")
    with open(path) as f:
        db.executemany("INSERT INTO raw VALUES (?,?,?,?,?)",
                       (line.rstrip("\n").split(",") for line in f))
    return db


@pytest.fixture(scope="module")
def raw_db(bank_runs):
    return load_raw(bank_runs[1]["raw"])


def read_balance(dump):
    header, recs = read_dump(os.path.join(dump, "balance.csv"))
    assert header == ["account", "balance"]
    return {int(a): int(b) for a, b in recs}, len(recs)


def test_dump_has_only_materialized_balance(bank_runs):
    for w, r in bank_runs.items():
        assert sorted(os.listdir(r["dump"])) == ["balance.csv"], "workers=%d" % w


def test_raw_transactions_follow_datagen_plan(raw_db):
    db = raw_db
    n, nw, w1 = db.execute("SELECT COUNT(*), SUM(weight), MIN(weight) = 1 AND MAX(weight) = 1 "
                           "FROM raw").fetchone()
    assert n == ROWS and nw == ROWS and w1 == 1
    lo_f, hi_f, lo_t, hi_t, lo_a, hi_a = db.execute(
        "SELECT MIN(from_account), MAX(from_account), MIN(to_account), MAX(to_account), "
        "MIN(amount), MAX(amount) FROM raw").fetchone()
    assert (lo_f, hi_f, lo_t, hi_t) == (1, 9, 1, 9)
    assert 1 <= lo_a and hi_a <= 999
    # zipf: the smallest amount is the most frequent one
    top = db.execute("SELECT amount FROM raw GROUP BY amount ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
    assert top == (1,)
    # "ts": {"scale": 1000}: row i gets 1970-01-01 00:00:00 + i seconds
    nd, mn, mx = db.execute("SELECT COUNT(DISTINCT ts), MIN(ts), MAX(ts) FROM raw").fetchone()
    last = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=ROWS - 1)
    assert (nd, mn, mx) == (ROWS, "1970-01-01 00:00:00", last.strftime("%Y-%m-%d %H:%M:%S"))


def test_balance_matches_sqlite(bank_runs, raw_db):
    expected = dict(raw_db.execute("""
        SELECT credits.account, credits.credits - debits.debits
        FROM (SELECT to_account AS account, SUM(amount * weight) AS credits
              FROM raw GROUP BY to_account) AS credits,
             (SELECT from_account AS account, SUM(amount * weight) AS debits
              FROM raw GROUP BY from_account) AS debits
        WHERE credits.account = debits.account""").fetchall())
    assert sorted(expected) == list(range(1, 10))
    for w, r in bank_runs.items():
        got, nrec = read_balance(r["dump"])
        assert nrec == 9, "workers=%d: %d balance rows" % (w, nrec)
        assert got == expected, "workers=%d" % w


def test_balances_sum_to_zero(bank_runs):
    for w, r in bank_runs.items():
        got, _ = read_balance(r["dump"])
        assert sum(got.values()) == 0, "workers=%d: %r" % (w, got)
        assert any(v != 0 for v in got.values())


def _sorted_digest(path):
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines.sort()
    return len(lines), hashlib.sha256(b"\n".join(lines)).hexdigest()


def test_same_transactions_for_any_worker_count(bank_runs):
    digests = {w: _sorted_digest(r["raw"]) for w, r in bank_runs.items()}
    assert digests[1][0] == ROWS
    assert len(set(digests.values())) == 1, digests


def test_balance_byte_identical_across_workers(bank_runs):
    blobs = {}
    for w, r in bank_runs.items():
        with open(os.path.join(r["dump"], "balance.csv"), "rb") as f:
            blobs[w] = f.read()
    assert blobs[1] == blobs[2] == blobs[4], blobs


def test_summary_reports_rows(bank_runs):
    for w, r in bank_runs.items():
        err = r["proc"].stderr
        assert "done" in err and ("1.00M" in err or "1000000" in err), err[-2000:]

"""Randomized differential test: Sluice against SQLite (tests/difftest/).

Every seed generates a schema, a stream of INSERT/DELETE/UPDATE batches and
queries over the SQL the engine supports (tests/difftest/gen.py; optional
constructs are switched on when the engine accepts a probe query). The case
becomes one sqllogictest file with SQLite's answer to every query after
every batch, run through the runner twice (tests/difftest/check.py): with
--incremental --check-steps (each table fed over several steps with
deletions and re-insertions, every step compared with a from-scratch run)
and in one step, with random worker counts. A failing seed is reported with
a minimized reproduction (CREATE TABLE, INSERTs, the query, expected and
actual) and the SLT files to rerun.

Environment:
  SLUICE_SLT           the runner (default build/debug/sluice-slt)
  SLUICE_DIFF_SEEDS    seeds to run (default 45: ~3500 checks, ~30 s on 2 cores)
  SLUICE_DIFF_START    first seed (default 1)
  SLUICE_DIFF_QUERIES  queries per seed (default 8)
  SLUICE_DIFF_JOBS     seeds run in parallel (default: the number of CPUs)
  SLUICE_DIFF_FEATURES as gen.py --features (e.g. "+window" or "-union")
For unlimited runs: python3 tests/difftest/gen.py --seeds 100000 --keep-going
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "difftest"))

import check  # noqa: E402
import gen  # noqa: E402

SEEDS = int(os.environ.get("SLUICE_DIFF_SEEDS", "45"))
START = int(os.environ.get("SLUICE_DIFF_START", "1"))
QUERIES = int(os.environ.get("SLUICE_DIFF_QUERIES", "8"))
JOBS = int(os.environ.get("SLUICE_DIFF_JOBS", str(os.cpu_count() or 1)))


@pytest.fixture(scope="module")
def runner():
    b = check.find_runner()
    if not os.access(b, os.X_OK):
        pytest.fail("sqllogictest runner %r not found: build it with `make debug` or set "
                    "SLUICE_SLT" % b)
    return b


@pytest.fixture(scope="module")
def features(runner):
    avail, notes = check.probe_features(runner)
    for n in notes:
        print("difftest: " + n)
    return gen.parse_features(os.environ.get("SLUICE_DIFF_FEATURES", ""), avail)


def test_random_queries_match_sqlite_after_every_batch(runner, features, tmp_path):
    reports, checks = [], 0
    for res in check.run_seeds(range(START, START + SEEDS), runner, features, QUERIES,
                               jobs=JOBS, out_dir=str(tmp_path)):
        checks += res.checks
        if res.failures:
            reports.append(res.report())
    print("difftest: %d checks over %d seeds; features %s" % (checks, SEEDS, ",".join(sorted(features))))
    assert not reports, "%d of %d seeds differ from SQLite:\n\n%s" % (
        len(reports), SEEDS, "\n\n".join(reports[:3]))
    assert checks >= SEEDS * QUERIES, "too few checks ran: %d" % checks


def test_a_seed_always_generates_the_same_case():
    feats = gen.default_features()
    a = check.build_slt(gen.gen_case(4242, feats)).render()
    b = check.build_slt(gen.gen_case(4242, feats)).render()
    assert a == b
    assert a.count("\nquery ") >= 8 and "DELETE FROM" in a


def test_values_are_printed_like_the_slt_harness():
    f = check.fmt_value
    assert [f(None, "I"), f(5, "I"), f(-2.7, "I"), f(5.0, "I"), f(True, "I")] == \
        ["NULL", "5", "-2", "5", "1"]
    assert [f(1, "R"), f(-0.5, "R"), f(0.0625, "R"), f(-0.0, "R")] == \
        ["1.000", "-0.500", "0.062", "0.000"]
    assert [f("", "T"), f("a\tb", "T"), f("x y", "T")] == ["(empty)", "a@b", "x y"]
    # a value that would print as a blank line (ending the record) is hashed
    block, vals = check.expected_block([(" ",), ("a",)], "T")
    assert vals == [" ", "a"] and block == ["2 values hashing to %s" %
                                            __import__("hashlib").md5(b" \na\n").hexdigest()]
    block, _ = check.expected_block([(2, None), (1, "b")], "IT")
    assert block == ["1", "b", "2", "NULL"]  # rowsort: rows by their printed text


def planted_case():
    """One table, a stream with a deletion, one query."""
    t = gen.Table("t1", [gen.Column("a", "int", "INTEGER"), gen.Column("b", "text", "TEXT")])
    rows = ", ".join("(%d, 'v%d')" % (i % 7, i) for i in range(40))
    batches = [["INSERT INTO t1 VALUES " + rows], ["DELETE FROM t1 WHERE a = 1"]]
    q = gen.Query()
    s = gen.Select()
    fi = gen.FromItem(t, "t1", [gen.ColRef("a", "int", 10, "t1"), gen.ColRef("b", "text", 0, "t1")])
    s.frm = [fi]
    s.items = [c.expr() for c in fi.cols]
    s.where = [gen.E("(a > 3)", [], "bool", row_ok=True, agg_ok=False, refs={"t1"}),
               gen.E("(b <> 'zz')", [], "bool", row_ok=True, agg_ok=False, refs={"t1"})]
    q.branches = [s]
    q.types = ["int", "text"]
    return gen.Case(99, [t], batches, [q], 2, 1)


def test_a_planted_difference_is_found_and_minimized(runner, tmp_path, monkeypatch):
    """SQLite is made to evaluate `a >= 3` where Sluice runs `a > 3`: the
    harness must report it and shrink the data to a single row with a = 3."""
    monkeypatch.setattr(check, "SQLITE_REWRITE", lambda sql: sql.replace("(a > 3)", "(a >= 3)"))
    res = check.run_case(planted_case(), runner, str(tmp_path))
    assert res.failures and all(f.kind == "wrong" for f in res.failures), res.report()
    rep = res.repro
    assert "minimized reproduction" in rep, rep
    inserts = [l for l in rep.splitlines() if l.strip().startswith("INSERT INTO")]
    assert len(inserts) == 1 and inserts[0].count("(") == 1 and "(3, " in inserts[0], rep
    assert "b <> 'zz'" not in rep, rep  # the irrelevant conjunct is gone
    assert "rerun:" in rep


def test_features_are_probed(runner, features):
    base = gen.default_features()
    assert base <= features | set(gen.KNOWN_BUGS)
    for f in gen.KNOWN_BUGS:
        assert f not in features or f in os.environ.get("SLUICE_DIFF_FEATURES", "")

"""Randomized differential test: Sluice against SQLite and PostgreSQL 15
(tests/difftest/).

Every seed generates a schema, a stream of INSERT/DELETE/UPDATE batches and
queries over the SQL the engine supports (tests/difftest/gen.py; optional
constructs are switched on when the engine accepts a probe query). The case
becomes one sqllogictest file with SQLite's answer to every query after
every batch, run through the runner twice (tests/difftest/check.py): with
--incremental --check-steps (each table fed over several steps with
deletions and re-insertions, every step compared with a from-scratch run)
and in one step, with random worker counts. The same runs with PostgreSQL
15 as the oracle (a throw-away server on 127.0.0.1, the `pg` fixture;
tests/difftest/pgoracle.py normalizes the known differences in the SQL it
sends there), which also checks the constructs SQLite lacks (FILTER,
timestamps and intervals, ... gen.PG_ONLY) once the engine accepts them. A
failing seed is reported with
a minimized reproduction (CREATE TABLE, INSERTs, the query, expected and
actual) and the SLT files to rerun.

Environment:
  SLUICE_SLT           the runner (default build/debug/sluice-slt)
  SLUICE_DIFF_SEEDS    seeds to run (default 45: ~3500 checks, ~30 s on 2 cores)
  SLUICE_DIFF_START    first seed (default 1)
  SLUICE_DIFF_QUERIES  queries per seed (default 8)
  SLUICE_DIFF_JOBS     seeds run in parallel (default: the number of CPUs)
  SLUICE_DIFF_FEATURES as gen.py --features (e.g. "+window" or "-union")
  SLUICE_DIFF_PG_SEEDS seeds run against PostgreSQL (default 20: ~1600 checks, ~25 s)
  SLUICE_DIFF_PG_START first of them (default 1)
For unlimited runs: python3 tests/difftest/gen.py --seeds 100000 --keep-going
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "difftest"))

import check  # noqa: E402
import gen  # noqa: E402
import pgoracle  # noqa: E402

SEEDS = int(os.environ.get("SLUICE_DIFF_SEEDS", "45"))
START = int(os.environ.get("SLUICE_DIFF_START", "1"))
QUERIES = int(os.environ.get("SLUICE_DIFF_QUERIES", "8"))
JOBS = int(os.environ.get("SLUICE_DIFF_JOBS", str(os.cpu_count() or 1)))
PG_SEEDS = int(os.environ.get("SLUICE_DIFF_PG_SEEDS", "20"))
PG_START = int(os.environ.get("SLUICE_DIFF_PG_START", "1"))

# Seeds of the PostgreSQL run that fail because of an open engine bug
# outside this test's reach: run as xfail with the bug as the reason, and
# left out of the main run. Remove an entry when its bug is fixed (the test
# says so when the seed passes). None open: the bug of seeds 1, 134, 200 and
# 263 (a stale node pointer in plan_subq.c) is fixed.
PG_KNOWN_SEEDS = {
}


@pytest.fixture(scope="module")
def runner():
    b = check.find_runner()
    if not os.access(b, os.X_OK):
        pytest.fail("sqllogictest runner %r not found: build it with `make debug` or set "
                    "SLUICE_SLT" % b)
    return b


@pytest.fixture(scope="module")
def all_features(runner):
    """The probed features, PostgreSQL-only ones included."""
    avail, notes = check.probe_features(runner)
    for n in notes:
        print("difftest: " + n)
    return gen.parse_features(os.environ.get("SLUICE_DIFF_FEATURES", ""), avail)


@pytest.fixture(scope="module")
def features(all_features):
    return all_features - gen.PG_ONLY


@pytest.fixture(scope="module")
def pg_oracle(pg):
    ok, why = pgoracle.available()
    if not ok:
        pytest.skip("no PostgreSQL oracle: " + why)
    return pgoracle.PgOracle(pg.uri)


def run_and_check(seeds, runner, feats, tmp_path, oracle=None):
    reports, checks, dropped, rejected = [], 0, 0, 0
    for res in check.run_seeds(seeds, runner, feats, QUERIES, jobs=JOBS, out_dir=str(tmp_path),
                               oracle=oracle):
        checks += res.checks
        dropped += res.dropped
        rejected += res.rejected
        if res.failures:
            reports.append(res.report())
    name = oracle.name if oracle else "SQLite"
    print("difftest[%s]: %d checks over %d seeds (generated queries the oracle rejected: %d, "
          "failed to run: %d); features %s" % (name, checks, len(seeds), rejected, dropped,
                                               ",".join(sorted(feats))))
    assert not reports, "%d of %d seeds differ from %s:\n\n%s" % (
        len(reports), len(seeds), name, "\n\n".join(reports[:3]))
    return checks


def test_random_queries_match_sqlite_after_every_batch(runner, features, tmp_path):
    checks = run_and_check(range(START, START + SEEDS), runner, features, tmp_path)
    assert checks >= SEEDS * QUERIES, "too few checks ran: %d" % checks


def test_random_queries_match_postgresql_after_every_batch(runner, all_features, pg_oracle,
                                                           tmp_path):
    seeds = [s for s in range(PG_START, PG_START + PG_SEEDS) if s not in PG_KNOWN_SEEDS]
    checks = run_and_check(seeds, runner, all_features, tmp_path, pg_oracle)
    # PostgreSQL rejects some generated queries (types it will not mix):
    # still most of them must be checked
    assert checks >= len(seeds) * QUERIES, "too few checks ran: %d" % checks


@pytest.mark.parametrize("seed", sorted(PG_KNOWN_SEEDS))
def test_known_postgresql_seed(seed, runner, all_features, pg_oracle, tmp_path):
    res = next(check.run_seeds([seed], runner, all_features, QUERIES, out_dir=str(tmp_path),
                               oracle=pg_oracle, minimize=False))
    if res.failures:
        pytest.xfail("seed %d: %s" % (seed, PG_KNOWN_SEEDS[seed]))
    # not a failure: the features probed change as constructs land
    print("difftest: known seed %d passes now: remove it from PG_KNOWN_SEEDS" % seed)


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


def test_sql_for_postgresql_is_normalized():
    t = pgoracle.translate
    assert t("SELECT (a / b), (x.c % 3) FROM t AS x") == \
        "SELECT (a / NULLIF (b, 0)), (x.c % NULLIF (3, 0)) FROM t AS x"
    assert t("SELECT CAST((b * 2.5) AS INTEGER), (a / CAST(b AS DOUBLE)) FROM t") == \
        "SELECT CAST (TRUNC ((b * 2.5)) AS INTEGER), (a / NULLIF (CAST (b AS DOUBLE PRECISION), 0)) FROM t"
    assert t("SELECT RANK() OVER (PARTITION BY a ORDER BY b DESC), c FROM t ORDER BY 2, 1 NULLS LAST "
             "LIMIT 3") == "SELECT RANK () OVER (PARTITION BY a ORDER BY b DESC NULLS LAST), c FROM t " \
                           "ORDER BY 2 NULLS FIRST, 1 NULLS LAST LIMIT 3"
    # the divisor is rewritten too (seeds 1106, 1164 of the first runs)
    assert t("SELECT (x.a / CAST(2.75 AS INTEGER)) FROM t AS x") == \
        "SELECT (x.a / NULLIF (CAST (TRUNC (2.75) AS INTEGER), 0)) FROM t AS x"
    assert t("SELECT s FROM t WHERE s LIKE 'a%b' OR s = 'it''s (x / y)'") == \
        "SELECT s FROM t WHERE s LIKE 'a%b' OR s = 'it''s (x / y)'"
    tb = gen.Table("t1", [gen.Column("id", "int", "INTEGER", pk=True),
                          gen.Column("f", "float", "REAL"), gen.Column("s", "text", "VARCHAR(40)",
                                                                      notnull=True)])
    assert pgoracle.pg_ddl(tb) == \
        'CREATE TABLE t1 (id BIGINT PRIMARY KEY, f DOUBLE PRECISION, s TEXT COLLATE "C" NOT NULL)'


def test_postgresql_answers_as_sluice_defines_them(pg_oracle):
    """Where the engines differ by definition, the PostgreSQL oracle gives
    Sluice's answer (docs/sql.md): division by zero is NULL, a float cast to
    an integer truncates, NULL sorts first ascending, text in byte order."""
    tb = gen.Table("t1", [gen.Column("a", "int", "INTEGER"), gen.Column("f", "float", "FLOAT"),
                          gen.Column("s", "text", "TEXT")])
    s = pg_oracle.session([tb])
    try:
        s.execute("INSERT INTO t1 VALUES (0, 2.75, 'a'), (NULL, -2.75, 'B'), (3, NULL, NULL)")
        assert sorted(s.rows("SELECT (7 / a), (7 % a), (f / CAST(a AS DOUBLE)) FROM t1 WHERE a = 0")) \
            == [(None, None, None)]
        assert sorted(s.rows("SELECT CAST(f AS INTEGER) FROM t1 WHERE f IS NOT NULL")) == [(-2,), (2,)]
        assert s.rows("SELECT a FROM t1 ORDER BY a LIMIT 1") == [(None,)]
        assert s.rows("SELECT a FROM t1 ORDER BY a DESC LIMIT 1") == [(3,)]
        assert s.rows("SELECT s FROM t1 WHERE s IS NOT NULL ORDER BY s LIMIT 1") == [("B",)]
        assert s.rows("SELECT MIN(s), MAX(s) FROM t1") == [("B", "a")]
    finally:
        s.close()


def test_correlated_in_subquery_planned_after_the_node_array_grew(runner, tmp_path):
    """Found by the PostgreSQL run (seeds 1, 134, 200, 263): planning a
    correlated IN took `p->c->nodes[sql__unary(...)]`, reading the node
    array before the call that may reallocate it (src/sql/plan_subq.c);
    with enough nodes planned before it, the pointer was stale (UBSan:
    misaligned address 0xbebebebebebebebe in sql__identity_proj)."""
    q = ("SELECT (TIMESTAMP '2024-06-17 23:00:00' = TIMESTAMP '2024-08-05 15:00:00') AS c0 "
         "FROM t1 AS x20 FULL OUTER JOIN t2 AS x21 ON (x20.a = x21.c4) AND (-1.75 != x21.c0) "
         "INTERSECT SELECT q22.c2 AS c0 FROM (SELECT x24.d AS c0, x23.c0 AS c1, "
         "(x23.c4 LIKE 'h%o') AS c2 FROM t2 AS x23, t2 AS x24 WHERE (x23.c = x24.c0) "
         "ORDER BY c0, c2, c1 LIMIT 7) AS q22 WHERE ((SELECT COUNT(s25.c0) FROM t2 s25) = q22.c0) "
         "EXCEPT SELECT (x28.c0 >= 6) AS c0 FROM (SELECT x27.b AS c0, x27.b AS c1, "
         "TIMESTAMP '2024-10-13 10:30:00' AS c2, x27.b AS c3 FROM t1 AS x27) AS q26 "
         "LEFT JOIN t2 AS x28 ON (q26.c1 = x28.c0) WHERE ('a%b' NOT IN (SELECT s29.a FROM t1 s29 "
         "WHERE s29.a = x28.b)) AND (' a' BETWEEN 'a_c' AND 'B')")
    s = check.Slt()
    s.statement("CREATE TABLE t1 (a TEXT, b BIGINT NOT NULL)")
    s.statement("CREATE TABLE t2 (id INTEGER PRIMARY KEY, c0 INTEGER, b TEXT, c FLOAT, d BIGINT, "
                "c4 VARCHAR)")
    s.statement("INSERT INTO t1 VALUES ('x', 1)")
    s.query(q, "I", [])
    for mode in (check.Mode(False, 1), check.Mode(True, 2)):
        rr = check.run_text(runner, s.render(), mode, str(tmp_path))
        assert not rr.crashed, rr.err[-2000:]
        assert rr.counts == (4, 0, 0), rr.out


def test_a_planted_difference_is_found_against_postgresql(runner, pg_oracle, tmp_path,
                                                           monkeypatch):
    """The same planted difference, PostgreSQL being the oracle: found,
    and minimized with PostgreSQL's answers."""
    real = pgoracle.translate
    monkeypatch.setattr(pgoracle, "translate", lambda sql: real(sql.replace("(a > 3)", "(a >= 3)")))
    case = planted_case()
    case.oracle = pg_oracle
    res = check.run_case(case, runner, str(tmp_path))
    assert res.failures and all(f.kind == "wrong" for f in res.failures), res.report()
    rep = res.repro
    assert "minimized reproduction" in rep and "expected (PostgreSQL;" in rep, rep
    inserts = [l for l in rep.splitlines() if l.strip().startswith("INSERT INTO")]
    assert len(inserts) == 1 and inserts[0].count("(") == 1 and "(3, " in inserts[0], rep


def test_features_are_probed(runner, features):
    base = gen.default_features()
    assert base <= features | set(gen.KNOWN_BUGS)
    for f in gen.KNOWN_BUGS:
        assert f not in features or f in os.environ.get("SLUICE_DIFF_FEATURES", "")

"""CAST between every pair of types: compiled or refused at compile time.

A cast with no conversion between its types (TIME to TIMESTAMP, a number
to a DATE, an interval to a number) used to compile and then reject every
record at run time; it is now an error at the cast's line:column naming
both types. The expected matrix below is PostgreSQL's (pg_cast plus I/O
conversions to and from text), with the differences docs/sql.md states:
BOOLEAN converts to and from every numeric type, not only INT, and an
interval converts only to a string (PostgreSQL also has interval -> time).
Casts to interval types (from strings) are checked by test_interval.py. That the
compile-time rule is exactly what the evaluator converts is checked by
tests/expr/test_expr.c (test_cast_exists_matches_what_eval_cast_converts).
"""
import json

from conftest import json_input, read_dump, run, run_ok

# name -> (column type or None for an expression, expression)
SOURCES = {
    "BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT",
    "BIGINT": "BIGINT", "DECIMAL(10,2)": "DECIMAL(10,2)", "REAL": "REAL", "DOUBLE": "DOUBLE",
    "CHAR(4)": "CHAR(4)", "VARCHAR": "VARCHAR", "DATE": "DATE", "TIME": "TIME",
    "TIMESTAMP": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE",
}
INTERVALS = {"INTERVAL DAY TO SECOND": "INTERVAL '1' DAY",
             "INTERVAL YEAR TO MONTH": "INTERVAL '1' MONTH"}
TARGETS = list(SOURCES)
NUMS = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL(10,2)", "REAL", "DOUBLE"}
STRS = {"CHAR(4)", "VARCHAR"}
TEMPORAL_OK = {("DATE", "TIMESTAMP"), ("DATE", "TIMESTAMPTZ"), ("TIMESTAMP", "DATE"),
               ("TIMESTAMP", "TIME"), ("TIMESTAMP", "TIMESTAMPTZ"), ("TIMESTAMPTZ", "DATE"),
               ("TIMESTAMPTZ", "TIME"), ("TIMESTAMPTZ", "TIMESTAMP")}


def expected(src, dst):
    if src == dst or src in STRS or dst in STRS:
        return True
    if src in NUMS and dst in NUMS:
        return True
    return (src, dst) in TEMPORAL_OK


def col(name):
    return "c_" + "".join(ch for ch in name.lower() if ch.isalnum())


TABLE = "CREATE TABLE t (%s);" % ", ".join("%s %s" % (col(n), t) for n, t in SOURCES.items())


def test_every_pair_compiles_or_is_refused_at_its_position(tmp_path):
    refused = allowed = 0
    pairs = [(s, col(s)) for s in SOURCES] + list(INTERVALS.items())
    for i, (src, expr) in enumerate(pairs):
        for j, dst in enumerate(TARGETS):
            p = tmp_path / ("c%d_%d.sql" % (i, j))
            line2 = "CREATE VIEW v AS SELECT 1 AS k, CAST(%s AS %s) AS x FROM t;" % (expr, dst)
            p.write_text(TABLE + "\n" + line2 + "\n")
            res = run(["check", p])
            want = expected(src, dst)
            if want:
                assert res.returncode == 0, (src, dst, res.stderr)
                allowed += 1
                continue
            refused += 1
            assert res.returncode != 0, (src, dst, "compiled")
            pos = "%s:2:%d: " % (p.name, line2.index("CAST(") + 1)
            shown_src = "TIMESTAMP WITH TIME ZONE" if src == "TIMESTAMPTZ" else src
            shown_dst = "TIMESTAMP WITH TIME ZONE" if dst == "TIMESTAMPTZ" else dst
            assert pos in res.stderr, (src, dst, res.stderr)
            assert "cannot cast %s to %s" % (shown_src, shown_dst) in res.stderr, res.stderr
    assert refused == 8 * 4 * 2 + 4 + 2 * 12 and allowed == 16 * 14 - refused


def test_allowed_casts_convert_and_value_errors_stay_per_record(tmp_path):
    """DATE -> TIMESTAMP, BOOLEAN <-> INT, TIMESTAMP -> TIME convert; VARCHAR
    -> INT fails only for the records whose text is not a number (rejected
    and reported, the others applied)."""
    inp = tmp_path / "in.json"
    rows = [{"id": 1, "s": "5", "d": "2024-03-01", "b": True, "ts": "2024-03-01 10:20:30"},
            {"id": 2, "s": "x", "d": "2024-03-02", "b": False, "ts": "2024-03-02 00:00:01"},
            {"id": 3, "s": "-7", "d": "2024-03-03", "b": None, "ts": "2024-03-03 23:59:59"}]
    inp.write_text("".join(json.dumps({"insert": r}) + "\n" for r in rows))
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (id INT, s VARCHAR, d DATE, b BOOLEAN, ts TIMESTAMP) %s;\n"
        "CREATE MATERIALIZED VIEW v AS SELECT id, CAST(d AS TIMESTAMP) AS x, CAST(b AS INT) AS y,"
        " CAST(CAST(b AS INT) AS BOOLEAN) AS z, CAST(ts AS TIME) AS w FROM t;\n"
        "CREATE MATERIALIZED VIEW n AS SELECT id, CAST(s AS INT) AS i FROM t;\n" % json_input(inp))
    res = run_ok(["run", prog, "--until-done", "--no-progress", "--dump", tmp_path / "d"])
    _, got = read_dump(tmp_path / "d" / "v.csv")
    # record 2 ('x' is no INT) is rejected as a whole, from every view
    assert sorted(got) == [["1", "2024-03-01 00:00:00", "1", "true", "10:20:30"],
                           ["3", "2024-03-03 00:00:00", None, None, "23:59:59"]], got
    _, got = read_dump(tmp_path / "d" / "n.csv")
    assert sorted(got) == [["1", "5"], ["3", "-7"]], got
    assert res.stderr.count("rejected a record of table t: invalid INT value \"x\"") == 1, res.stderr

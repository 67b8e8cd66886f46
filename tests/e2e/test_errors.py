"""Every kind of bad input gets its own clear error, and nothing crashes.

Compile errors must be reported as FILE:LINE:COL: KIND: message with exit
status 1, where LINE:COL is computed here from the program text (the place
of the offending token); bad connector configuration likewise; bad input
rows are skipped, reported one by one (line number, reason, row text) and
counted, while the good rows still reach the dump; run-time overflow stops
the run with exit 1; command-line misuse exits 2. Every sluice invocation
also fails the test if a sanitizer report or a crash shows up in stderr
(conftest.run).
"""
import json
import os
import re

import pytest

from conftest import conn_clause, csv_input, json_input, read_dump, run

TABLES = [
    "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);",
    "CREATE TABLE u (a INT, c INT, s2 VARCHAR);",
]


def write_prog(tmp_path, lines, name="prog.sql"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def locate(lines, needle, occurrence=1):
    """1-based (line, col) of the occurrence-th needle in the program."""
    seen = 0
    for ln, text in enumerate(lines, 1):
        start = 0
        while True:
            i = text.find(needle, start)
            if i < 0:
                break
            seen += 1
            if seen == occurrence:
                return ln, i + 1
            start = i + 1
    raise AssertionError("%r not in program" % needle)


def compile_error(tmp_path, lines, cmd="check"):
    """Run `sluice check` (or run) on the program; expect exactly one
    located error; return (line, col, kind, message)."""
    prog = write_prog(tmp_path, lines)
    args = [cmd, prog]
    if cmd == "run":
        args += ["--until-done", "--no-progress", "--dump", str(tmp_path / "dump")]
    p = run(args)
    assert p.returncode == 1, "expected exit 1, got %d\nstdout:%s\nstderr:%s" % (
        p.returncode, p.stdout, p.stderr)
    m = re.search(r"^(.*?):(\d+):(\d+): ([a-z ]+): (.*)$", p.stderr, re.M)
    assert m, "no FILE:LINE:COL: KIND: message in stderr:\n" + p.stderr
    assert m.group(1) == prog or os.path.basename(m.group(1)) == "prog.sql", m.group(1)
    if cmd == "check":
        assert "circuit" not in p.stdout
    return int(m.group(2)), int(m.group(3)), m.group(4), m.group(5)


def assert_at(got, lines, needle, occurrence=1, slack=0):
    line, col = locate(lines, needle, occurrence)
    assert got[0] == line and abs(got[1] - col) <= slack, (
        "error reported at %d:%d, expected %d:%d (%r): %s" % (got[0], got[1], line, col,
                                                              needle, got[3]))


# ---------------------------------------------------------------- SQL errors

def test_syntax_error(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS", "  SELECT a, b", "  FROM t WHERE ;"]
    e = compile_error(tmp_path, lines)
    assert e[2] == "syntax error"
    assert "expected" in e[3]
    assert_at(e, lines, ";", occurrence=3)


def test_syntax_error_bad_type_name(tmp_path):
    lines = ["CREATE TABLE t (", "    a INTT,", "    b INT", ");"]
    e = compile_error(tmp_path, lines)
    assert e[2] == "syntax error"
    assert "expected" in e[3] and "type" in e[3] and "INTT" in e[3]
    assert_at(e, lines, "INTT")


def test_syntax_error_misspelled_keyword(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELEC a FROM t;"]
    e = compile_error(tmp_path, lines)
    assert e[2] == "syntax error" and "expected" in e[3] and "SELEC" in e[3]
    assert_at(e, lines, "SELEC")


def test_syntax_error_also_from_run(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a FROM t WHERE a >;"]
    e = compile_error(tmp_path, lines, cmd="run")
    assert e[2] == "syntax error" and "expected" in e[3]
    assert_at(e, lines, ";", occurrence=3)
    assert not os.path.exists(tmp_path / "dump" / "v.csv")


def test_unknown_table(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a FROM nosuch;"]
    e = compile_error(tmp_path, lines)
    assert "nosuch" in e[3] and ("not exist" in e[3] or "unknown" in e[3] or "not found" in e[3])
    assert_at(e, lines, "nosuch")


def test_unknown_column(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a,", "    zz + 1 AS x FROM t;"]
    e = compile_error(tmp_path, lines)
    assert "zz" in e[3] and ("not found" in e[3] or "unknown" in e[3] or "not exist" in e[3])
    assert_at(e, lines, "zz")


def test_unknown_qualified_column(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT t.c FROM t;"]
    e = compile_error(tmp_path, lines)
    assert "c" in e[3] and ("not found" in e[3] or "unknown" in e[3] or "not exist" in e[3])
    assert_at(e, lines, "t.c", slack=2)


def test_ambiguous_column(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT b, a FROM t, u;"]
    e = compile_error(tmp_path, lines)
    assert "ambiguous" in e[3] and '"a"' in e[3]
    assert_at(e, lines, "a FROM")


def test_type_mismatch(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT 'a' + TRUE AS x FROM t;"]
    e = compile_error(tmp_path, lines)
    assert e[2] == "error"
    assert "VARCHAR" in e[3] and "BOOLEAN" in e[3]
    line, col = locate(lines, "'a' + TRUE")
    assert e[0] == line and col <= e[1] <= col + 4, e


def test_type_mismatch_string_plus_int_column(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT s + b AS x FROM t;"]
    e = compile_error(tmp_path, lines)
    assert "VARCHAR" in e[3] and "INT" in e[3]


def test_where_not_boolean(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a FROM t WHERE s;"]
    e = compile_error(tmp_path, lines)
    assert "BOOLEAN" in e[3]


def test_aggregate_in_where(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a FROM t WHERE SUM(b) > 1;"]
    e = compile_error(tmp_path, lines)
    assert "aggregate" in e[3].lower() and "WHERE" in e[3]
    assert_at(e, lines, "SUM")


def test_non_grouped_column(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a, b FROM t GROUP BY a;"]
    e = compile_error(tmp_path, lines)
    assert '"b"' in e[3] and "GROUP BY" in e[3]
    assert_at(e, lines, "b FROM")


def test_duplicate_view_name(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a FROM t;", "CREATE VIEW v AS SELECT b FROM t;"]
    e = compile_error(tmp_path, lines)
    assert '"v"' in e[3] and "exists" in e[3]
    assert e[0] == 4


UNSUPPORTED = [
    # (id, view text, needle where the error must point, words in the message)
    ("lateral", "SELECT t.a FROM t, LATERAL (SELECT c FROM u) x", "LATERAL", ["LATERAL"]),
    ("outer_join_on_subquery", "SELECT t.a FROM t LEFT JOIN u ON u.a = (SELECT MAX(c) FROM u)",
     "u.a = (SELECT", ["subquer", "outer join", "ON"]),
    ("limit_expression", "SELECT a FROM t ORDER BY a LIMIT b", "b;", ["LIMIT", "integer"]),
    ("subquery_after_group_by", "SELECT a, (SELECT MAX(c) FROM u) AS m FROM t GROUP BY a",
     "(SELECT", ["subquer", "select list"]),
    ("in_subquery_in_having", "SELECT a FROM t GROUP BY a HAVING a IN (SELECT a FROM u)",
     "IN (SELECT", ["IN", "subquery", "HAVING"]),
    ("correlated_exists_union",
     "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a UNION SELECT 2 FROM u)",
     "EXISTS", ["correlated", "UNION"]),
    ("recursive_cte_limit", "WITH RECURSIVE x(n) AS (SELECT a FROM t UNION SELECT n FROM x "
     "LIMIT 3) SELECT n FROM x", "SELECT a FROM t UNION", ["recursive query", "LIMIT"]),
    ("right_asof_join", "SELECT t.a FROM t RIGHT ASOF JOIN u MATCH_CONDITION (t.b >= u.c) "
     "ON t.a = u.a", "ASOF", ["RIGHT ASOF JOIN"]),
    ("full_asof_join_alias", "SELECT x.a FROM t x FULL OUTER ASOF JOIN u MATCH_CONDITION "
     "(x.b >= u.c) ON x.a = u.a", "ASOF", ["FULL ASOF JOIN"]),
    ("arrayagg_filter", "SELECT ARRAY_AGG(a) FILTER (WHERE a > 1) AS x FROM t", "FILTER",
     ["FILTER"]),
    ("session_window", "SELECT * FROM TABLE(SESSION(TABLE t, DESCRIPTOR(a), 1))", "SESSION",
     ["SESSION"]),
    ("string_agg_separator", "SELECT b, STRING_AGG(s, s) AS x FROM t GROUP BY b", "s) AS",
     ["STRING_AGG", "separator"]),
    ("bit_xor_over", "SELECT a, BIT_XOR(a) OVER (PARTITION BY b) AS x FROM t", "OVER (",
     ["bit_xor", "window function"]),
    ("cast_to_interval", "SELECT a, s::INTERVAL AS x FROM t", "INTERVAL AS", ["type INTERVAL"]),
    ("array_subquery", "SELECT a, ARRAY(SELECT 1) AS x FROM t", "ARRAY", ["ARRAY(subquery)"]),
    ("distinct_on_correlated",
     "SELECT a FROM t WHERE EXISTS (SELECT DISTINCT ON (c) c FROM u WHERE u.a = t.a)",
     "SELECT DISTINCT", ["DISTINCT ON", "correlated"]),
    ("within_group_over",
     "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY b) OVER () AS x FROM t", "OVER (",
     ["WITHIN GROUP", "window function"]),
    ("order_by_in_window_aggregate", "SELECT MAX(b ORDER BY a) OVER () AS x FROM t", "OVER (",
     ["ORDER BY", "window function"]),
    ("temporal_join_first", "SELECT u.a FROM u FOR SYSTEM_TIME AS OF 1 JOIN t ON t.a = u.a",
     "FOR SYSTEM_TIME", ["FOR SYSTEM_TIME AS OF", "right side of a JOIN"]),
    ("tablesample", "SELECT a FROM t TABLESAMPLE BERNOULLI (10)", "TABLESAMPLE",
     ["TABLESAMPLE"]),
    ("filter_on_window", "SELECT a, SUM(b) FILTER (WHERE a > 1) OVER () AS x FROM t",
     "FILTER", ["FILTER"]),
]


@pytest.mark.parametrize("case", UNSUPPORTED, ids=[c[0] for c in UNSUPPORTED])
def test_unsupported_construct(tmp_path, case):
    _, query, needle, words = case
    # Put the construct on line 4 after some indentation.
    lines = TABLES + ["-- unsupported: %s" % case[0], "CREATE VIEW v AS   " + query + ";"]
    e = compile_error(tmp_path, lines)
    assert "not supported yet" in e[3], e
    for w in words:
        assert w.lower() in e[3].lower(), e
    line, col = locate(lines, needle)
    # the position is the construct's own keyword (OVER may be reported at
    # the function it applies to)
    ok = [col]
    if needle == "OVER":
        ok.append(locate(lines, "SUM(b) OVER" if "SUM(b) OVER" in query else "ROW_NUMBER")[1])
    if needle == "(SELECT":
        ok.append(col + 1)  # the subquery's SELECT
    if needle == "IN (SELECT":
        ok += [col + 3, col + 4]  # its "(" or the subquery's SELECT
    assert e[0] == line and e[1] in ok, "reported %d:%d, expected %d:%s for %r" % (
        e[0], e[1], line, ok, needle)


DDL_UNSUPPORTED = [
    # (id, program lines, needle, words)
    # WATERMARK FOR works (test_streaming.py: the same as LATENESS)
    # LATENESS on a table's column works (test_streaming.py); on a view not yet
    ("lateness_statement", TABLES + ["CREATE VIEW v AS SELECT a FROM t;",
                                     "LATENESS v.a 10;"], "LATENESS", ["LATENESS", "view"]),
    # mutually recursive views work (test_recursive_mutual.py)
]


@pytest.mark.parametrize("case", DDL_UNSUPPORTED, ids=[c[0] for c in DDL_UNSUPPORTED])
def test_unsupported_ddl_construct(tmp_path, case):
    _, lines, needle, words = case
    e = compile_error(tmp_path, lines)
    assert e[2] == "unsupported" and "not supported yet" in e[3], e
    for w in words:
        assert w.lower() in e[3].lower(), e
    assert_at(e, lines, needle)


def test_bool_aggregate_of_a_number(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT b,", "  BOOL_AND(a) AS x FROM t GROUP BY b;"]
    e = compile_error(tmp_path, lines)
    assert "BOOLEAN" in e[3] and "bool_and" in e[3].lower(), e
    assert_at(e, lines, "BOOL_AND")


def test_ambiguous_alias_in_group_by(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a AS k, b AS k,", "  COUNT(*) AS n FROM t GROUP BY k;"]
    e = compile_error(tmp_path, lines)
    assert "ambiguous" in e[3] and '"k"' in e[3] and "GROUP BY" in e[3], e
    # both choices named by their place in the select list
    for needle in ("a AS k", "b AS k"):
        assert "%d:%d" % locate(lines, needle) in e[3], e
    assert_at(e, lines, "k;")


def test_ambiguous_alias_in_having(tmp_path):
    lines = TABLES + ["CREATE VIEW v AS SELECT a AS k, SUM(b) AS k FROM t", "  GROUP BY a HAVING k > 1;"]
    e = compile_error(tmp_path, lines)
    assert "ambiguous" in e[3] and '"k"' in e[3] and "HAVING" in e[3], e
    assert_at(e, lines, "k >")


def test_input_column_wins_over_alias_in_group_by(tmp_path):
    # as in PostgreSQL: GROUP BY a groups by t.a, so b is not grouped
    lines = TABLES + ["CREATE VIEW v AS SELECT b AS a, COUNT(*) AS n FROM t GROUP BY a;"]
    e = compile_error(tmp_path, lines)
    assert '"b"' in e[3] and "GROUP BY" in e[3], e


def test_decimal_precision_too_large(tmp_path):
    lines = ["CREATE TABLE w (", "  id INT,", "  d DECIMAL(39,2)", ");"]
    e = compile_error(tmp_path, lines)
    assert "DECIMAL" in e[3] and "39" in e[3] and "38" in e[3]
    assert "not supported" in e[3]
    line, col = locate(lines, "DECIMAL")
    assert e[0] == line and e[1] in (col, locate(lines, "39")[1]), e


# ---------------------------------------------------------------- connectors

def datagen_table(config, extra=None):
    c = {"transport": {"name": "datagen", "config": config}}
    if extra:
        c.update(extra)
    return "CREATE TABLE t (a INT, b INT NOT NULL) %s;" % conn_clause([c])


def test_connector_invalid_json(tmp_path):
    lines = [
        "-- a comment",
        "CREATE TABLE t (a INT) WITH ('connectors' = '[{",
        '    "transport": {',
        '      "name": "datagen" "config": {"seed": 1}',
        "    }",
        "}]');",
    ]
    e = compile_error(tmp_path, lines)
    assert e[2] == "configuration error"
    assert "JSON" in e[3] and "connectors" in e[3]
    # the position of the error inside the JSON text: the missing comma
    # before "config"
    line, col = locate(lines, '"config"')
    assert e[0] == line and col - 2 <= e[1] <= col + 1, e


def test_connector_invalid_json_one_line(tmp_path):
    text = ('CREATE TABLE t (a INT) WITH (\'connectors\' = \'[{"transport": {"name": "datagen", '
            '"config": {"seed": 1,}}}]\');')
    lines = [text]
    e = compile_error(tmp_path, lines)
    assert "JSON" in e[3]
    line, col = locate(lines, ",}")
    assert e[0] == 1 and col <= e[1] <= col + 3, e


def test_connector_not_json_at_all(tmp_path):
    lines = ["CREATE TABLE t (a INT) WITH ('connectors' = 'not json');"]
    e = compile_error(tmp_path, lines)
    assert "JSON" in e[3]
    assert_at(e, lines, "not json", slack=1)


def test_unknown_connector_key(tmp_path):
    lines = [datagen_table({"seed": 1, "plan": [{"limit": 3}]}, {"bogus_key": 1})]
    e = compile_error(tmp_path, lines)
    assert e[2] == "configuration error"
    assert "bogus_key" in e[3] and "unknown" in e[3]
    assert "table t" in e[3] and "connector" in e[3]


def test_unknown_datagen_key(tmp_path):
    lines = [datagen_table({"seed": 1, "plna": [{"limit": 3}]})]
    e = compile_error(tmp_path, lines)
    assert "plna" in e[3] and "unknown" in e[3]
    assert "datagen" in e[3] and "table t" in e[3] and "connector 0" in e[3]


def test_unknown_datagen_field_key(tmp_path):
    lines = [datagen_table({"seed": 1, "plan": [{"limit": 3, "fields": {
        "a": {"strategy": "uniform", "rnage": [1, 5]}}}]})]
    e = compile_error(tmp_path, lines)
    assert "rnage" in e[3] and "unknown" in e[3]
    assert '"a"' in e[3] and "datagen" in e[3] and "table t" in e[3]


def test_datagen_unknown_column(tmp_path):
    lines = [datagen_table({"seed": 1, "plan": [{"limit": 3, "fields": {"zz": {}}}]})]
    e = compile_error(tmp_path, lines)
    assert "zz" in e[3] and "column" in e[3]


def test_datagen_fills_nested_columns_from_values_only(tmp_path):
    # datagen has no generator of ARRAY, MAP or ROW values: without
    # "values" such a column is refused (it used to get numbers as text,
    # which read as {} or NULL in every row); with "values" (text forms)
    # every row holds one of them
    for decl, name in (("INT ARRAY", "INT ARRAY"), ("MAP<VARCHAR, INT>", "MAP"),
                       ("ROW(x INT, y VARCHAR)", "ROW")):
        lines = ["CREATE TABLE t (id INT, arr %s) %s;" % (decl, conn_clause([{"transport": {
            "name": "datagen", "config": {"plan": [{"limit": 3}]}}}]))]
        e = compile_error(tmp_path, lines)
        assert e[2] == "configuration error", e
        assert 'only from "values"' in e[3] and '"arr"' in e[3] and name in e[3], e
    vals = ["{1,2,3}", "{}", "{NULL,7}"]
    conn = conn_clause([{"transport": {"name": "datagen", "config": {"plan": [
        {"limit": 6, "fields": {"arr": {"values": vals}}}]}}}])
    prog = write_prog(tmp_path, [
        "CREATE TABLE t (id INT, arr INT ARRAY) %s;" % conn,
        "CREATE MATERIALIZED VIEW v AS SELECT id, CARDINALITY(arr) AS n, arr[1] AS a1, "
        "arr[2] AS a2 FROM t;"])
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "d")])
    assert p.returncode == 0, p.stderr
    _, rows = read_dump(str(tmp_path / "d" / "v.csv"))
    want = {0: ("3", "1", "2"), 1: ("0", None, None), 2: ("2", None, "7")}
    assert sorted(tuple(r) for r in rows) == sorted(
        (str(i),) + want[i % 3] for i in range(6)), rows


def test_unknown_transport(tmp_path):
    c = [{"transport": {"name": "pubsub_input", "config": {}}, "format": {"name": "csv"}}]
    lines = ["CREATE TABLE t (a INT) %s;" % conn_clause(c)]
    e = compile_error(tmp_path, lines)
    assert "pubsub_input" in e[3] and "transport" in e[3]
    assert "table t" in e[3]


def test_output_connector_on_a_table_is_refused(tmp_path):
    c = [{"transport": {"name": "file_output", "config": {"path": str(tmp_path / "o.csv")}},
          "format": {"name": "csv"}}]
    lines = ["CREATE TABLE t (a INT) %s;" % conn_clause(c)]
    e = compile_error(tmp_path, lines)
    assert "table t" in e[3] and "belong to views" in e[3]


def test_input_connector_on_a_view_is_refused(tmp_path):
    c = [{"transport": {"name": "datagen", "config": {}}}]
    lines = ["CREATE TABLE t (a INT);",
             "CREATE VIEW v WITH ('connectors' = '%s') AS SELECT a FROM t;" % json.dumps(c)]
    e = compile_error(tmp_path, lines)
    assert "view v" in e[3] and "belong to tables" in e[3]


def test_unknown_format(tmp_path):
    c = [{"transport": {"name": "file_input", "config": {"path": str(tmp_path / "x.csv")}},
          "format": {"name": "xml"}}]
    lines = ["CREATE TABLE t (a INT) %s;" % conn_clause(c)]
    e = compile_error(tmp_path, lines)
    assert "xml" in e[3] and "format" in e[3]


@pytest.mark.parametrize("conn,words", [
    ({"transport": {"name": "file_input", "config": {"path": "/x.csv"}},
      "format": {"name": "csv", "config": {"header": True}}}, ["header", "csv"]),
    ({"transport": {"name": "file_input", "config": {"path": "/x.csv", "pth": 1}},
      "format": {"name": "csv"}}, ["pth", "file_input"]),
    ({"transport": {"name": "file_input", "config": {}}, "format": {"name": "csv"}},
     ["path", "file_input"]),
    ({"transport": {"name": "file_input", "config": {"path": "/x.json"}},
      "format": {"name": "json", "config": {"update_format": "debezium"}}},
     ["update_format", "insert_delete"]),
], ids=["csv_config_key", "file_input_key", "file_input_no_path", "json_update_format"])
def test_bad_transport_or_format_config(tmp_path, conn, words):
    lines = ["CREATE TABLE t (a INT) %s;" % conn_clause([conn])]
    e = compile_error(tmp_path, lines)
    assert e[2] == "configuration error"
    assert "table t" in e[3] and "connector 0" in e[3]
    for w in words:
        assert w in e[3], e
    assert e[0] == 1


def test_connectors_not_an_array(tmp_path):
    lines = ['CREATE TABLE t (a INT) WITH (\'connectors\' = \'{"transport": {"name": "datagen"}}\');']
    e = compile_error(tmp_path, lines)
    assert "array" in e[3] and "connectors" in e[3]


def test_unknown_table_property(tmp_path):
    lines = ["CREATE TABLE t (a INT) WITH ('connectorz' = '[]');"]
    e = compile_error(tmp_path, lines)
    assert "connectorz" in e[3]


def test_missing_input_file(tmp_path):
    missing = tmp_path / "does_not_exist.csv"
    lines = ["CREATE TABLE t (a INT) %s;" % csv_input(missing),
             "CREATE MATERIALIZED VIEW v AS SELECT a FROM t;"]
    prog = write_prog(tmp_path, lines)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 1, p.stderr
    assert str(missing) in p.stderr
    assert "No such file" in p.stderr or "cannot open" in p.stderr
    assert "table t" in p.stderr


def test_program_file_missing(tmp_path):
    for cmd in ("check", "run"):
        p = run([cmd, str(tmp_path / "nope.sql")])
        assert p.returncode == 1, p.stderr
        assert "nope.sql" in p.stderr and ("cannot open" in p.stderr or "No such" in p.stderr)


# ---------------------------------------------------------------- bad rows

def bad_row_lines(stderr):
    return [l for l in stderr.splitlines() if re.search(r"\bline \d+\b", l)]


def find_report(stderr, path, lineno, reason_words, text):
    for l in stderr.splitlines():
        if re.search(r"\bline %d\b" % lineno, l) and os.path.basename(path) in l:
            low = l.lower()
            if all(w.lower() in low for w in reason_words) and text in l:
                return l
    raise AssertionError("no report for line %d (%s, %r) in stderr:\n%s" % (
        lineno, reason_words, text, stderr))


def test_malformed_csv_rows(tmp_path):
    data = [
        ("1,10,ok", None),                                   # 1 good
        ("2,20", ["expected 3 fields", "found 2"]),          # 2 too few fields
        ("3,30,three", None),                                # 3 good
        ("4,x4,bad", ['"b"', "invalid", "x4"]),              # 4 bad number
        ("5,50,", None),                                     # 5 good, s NULL
        ("6,,nn", ['"b"', "NOT NULL"]),                      # 6 NULL in NOT NULL
        ('7,70,"with, comma"', None),                        # 7 good
        ("8,80,x,extra", ["expected 3 fields", "found 4"]),  # 8 too many fields
        ("99999999999,90,big", ['"a"', "range"]),            # 9 out of range for INT
        (",100,\"\"", None),                                 # 10 good, a NULL, s ''
        ("11,1.5,frac", ['"b"', "invalid"]),                 # 11 not an integer
    ]
    path = tmp_path / "bad.csv"
    path.write_text("".join(l + "\n" for l, _ in data))
    lines = ["CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR) %s;" % csv_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT a, b, s FROM t;"]
    prog = write_prog(tmp_path, lines)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    nbad = 0
    for i, (text, reason) in enumerate(data, 1):
        if reason:
            nbad += 1
            find_report(p.stderr, str(path), i, reason, text)
    assert len(bad_row_lines(p.stderr)) == nbad, p.stderr
    assert re.search(r"\b%d bad input records?\b" % nbad, p.stderr), p.stderr
    header, recs = read_dump(str(tmp_path / "dump" / "v.csv"))
    assert header == ["a", "b", "s"]
    assert sorted(recs, key=repr) == sorted([["1", "10", "ok"], ["3", "30", "three"],
                                             ["5", "50", None], ["7", "70", "with, comma"],
                                             [None, "100", ""]], key=repr)


def test_malformed_csv_unterminated_quote(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('1,10,ok\n2,20,"never closed\n')
    lines = ["CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR) %s;" % csv_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT a, b, s FROM t;"]
    prog = write_prog(tmp_path, lines)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    find_report(p.stderr, str(path), 2, ["unterminated"], "never closed")
    header, recs = read_dump(str(tmp_path / "dump" / "v.csv"))
    assert recs == [["1", "10", "ok"]]


def test_malformed_json_rows(tmp_path):
    data = [
        ({"insert": {"a": 1, "b": 10, "s": "ok"}}, None),            # 1 good
        ({"insert": {"a": 2, "b": "x"}}, ['"b"', "invalid"]),        # 2 bad value
        ({"insert": {"a": 3}}, ['"b"', "NOT NULL"]),                 # 3 missing NOT NULL
        ({"insert": {"a": 4, "b": 40, "zz": 1}}, ["zz"]),            # 4 unknown column
        ("not json", ["JSON"]),                                      # 5 not JSON
        ({"a": 6, "b": 60, "s": "plain"}, None),                     # 6 good (plain insert)
        ({"upsert": {"a": 7, "b": 70}}, ["upsert"]),                 # 7 unknown event
        ('{"insert": {"a": 8, "b": 80', ["expected"]),               # 8 truncated
        ({"insert": {"a": 9, "b": 90, "s": "nine"}}, None),          # 9 good
        ({"delete": {"a": 1, "b": 10, "s": "ok"}}, None),            # 10 good delete
        ({"insert": {"a": 11, "b": 2147483648}}, ['"b"']),           # 11 out of range
        ({"insert": {"a": None, "b": 12, "s": None}}, None),         # 12 good, NULLs
    ]
    path = tmp_path / "bad.json"
    with open(path, "w") as f:
        for obj, _ in data:
            f.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    lines = ["CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR) %s;" % json_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT a, b, s FROM t;"]
    prog = write_prog(tmp_path, lines)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    nbad = 0
    for i, (obj, reason) in enumerate(data, 1):
        if reason:
            nbad += 1
            text = obj if isinstance(obj, str) else json.dumps(obj)
            find_report(p.stderr, str(path), i, reason, text[:20])
    assert len(bad_row_lines(p.stderr)) == nbad, p.stderr
    assert re.search(r"\b%d bad input records?\b" % nbad, p.stderr), p.stderr
    header, recs = read_dump(str(tmp_path / "dump" / "v.csv"))
    assert sorted(recs, key=repr) == sorted([["6", "60", "plain"], ["9", "90", "nine"],
                                             [None, "12", None]], key=repr)


# ---------------------------------------------------------------- run time

def test_integer_overflow_at_run_time(tmp_path):
    path = tmp_path / "ov.csv"
    path.write_text("1\n3000\n2\n")
    lines = ["CREATE TABLE t (a INT) %s;" % csv_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT a * 1000000000 AS x FROM t;"]
    prog = write_prog(tmp_path, lines)
    # the default policy rejects the record that overflows and applies the rest
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    assert "rejected a record of table t: integer overflow" in p.stderr, p.stderr
    assert sorted(read_dump(str(tmp_path / "dump" / "v.csv"))[1]) == [
        ["1000000000"], ["2000000000"]]
    # --on-error stop: the old behaviour, the pipeline stops with the error
    p = run(["run", prog, "--until-done", "--no-progress", "--on-error", "stop",
             "--dump", str(tmp_path / "dump2")])
    assert p.returncode == 1, p.stderr
    assert "overflow" in p.stderr.lower()
    assert not os.path.exists(tmp_path / "dump2" / "v.csv")


def test_integer_overflow_in_addition_after_aggregate(tmp_path):
    path = tmp_path / "ov.csv"
    path.write_text("2147483647\n1\n")
    lines = ["CREATE TABLE t (a INT) %s;" % csv_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT MAX(a) + 1 AS m FROM t;"]
    prog = write_prog(tmp_path, lines)
    # no record fails alone: a dry step finds the one after which the
    # aggregate's result overflows, and rejects it (docs/errors.md)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    assert "rejected a record of table t: integer overflow in + for INT" in p.stderr
    assert read_dump(str(tmp_path / "dump" / "v.csv"))[1] == [["2"]]
    p = run(["run", prog, "--until-done", "--no-progress", "--on-error", "stop"])
    assert p.returncode == 1, p.stderr
    assert "overflow" in p.stderr.lower()


def test_sum_of_int_does_not_overflow_int(tmp_path):
    """SUM of INT is BIGINT, so 2147483647 + 1 is fine there."""
    path = tmp_path / "ov.csv"
    path.write_text("2147483647\n1\n")
    lines = ["CREATE TABLE t (a INT) %s;" % csv_input(path),
             "CREATE MATERIALIZED VIEW v AS SELECT SUM(a) AS s FROM t;"]
    prog = write_prog(tmp_path, lines)
    p = run(["run", prog, "--until-done", "--no-progress", "--dump", str(tmp_path / "dump")])
    assert p.returncode == 0, p.stderr
    assert read_dump(str(tmp_path / "dump" / "v.csv")) == (["s"], [["2147483648"]])


# ---------------------------------------------------------------- usage

@pytest.fixture
def good_prog(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("1\n")
    return write_prog(tmp_path, ["CREATE TABLE t (a INT) %s;" % csv_input(path),
                                 "CREATE MATERIALIZED VIEW v AS SELECT a FROM t;"], "good.sql")


@pytest.mark.parametrize("argv,words", [
    (["run", "{prog}", "--bogus"], ["--bogus"]),
    (["run", "{prog}", "--until-done", "--frobnicate=3"], ["--frobnicate"]),
    (["run", "{prog}", "--workers"], ["--workers"]),
    (["run", "{prog}", "--workers", "0"], ["--workers"]),
    (["run", "{prog}", "--workers", "abc"], ["--workers"]),
    (["run", "{prog}", "--step-rows", "-5"], ["--step-rows"]),
    (["run", "{prog}", "--dump"], ["--dump"]),
    (["frobnicate", "{prog}"], ["frobnicate"]),
    (["run"], ["usage"]),
    (["check"], ["usage"]),
    ([], ["usage"]),
], ids=["unknown_flag", "unknown_flag_eq", "workers_missing", "workers_zero", "workers_nan",
        "step_rows_negative", "dump_missing", "unknown_command", "run_no_program",
        "check_no_program", "no_args"])
def test_usage_errors_exit_2(good_prog, argv, words):
    p = run([a.replace("{prog}", good_prog) for a in argv])
    assert p.returncode == 2, "exit %d\n%s" % (p.returncode, p.stderr)
    for w in words:
        assert w in p.stderr, p.stderr
    assert p.stderr.strip()

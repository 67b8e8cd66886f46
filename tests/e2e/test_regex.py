"""Regular expressions (docs/sql.md, "Regular expressions"; src/expr/fn_regex.c):

- tests/slt/regex.test (PostgreSQL 15's answers, written by
  tests/slt/gen_regex.py) in one-shot mode and incrementally, every step
  compared with a from-scratch evaluation, on 2 workers; and that the file
  still holds PostgreSQL's answers;
- a constant pattern that does not compile is a compile error at the
  pattern's line and column with PCRE2's message; the functions that return
  arrays are refused by name;
- a pattern that comes from the data and does not compile is a run-time
  error for that record: the record is rejected (ingress answer,
  sluice_errors) and the other records are applied;
- a view over these functions is maintained incrementally through inserts
  and deletes, its contents after every step equal to PostgreSQL's answer
  over the same rows.
"""
import json
import os
import re

import pytest
import requests

import sltfile
from conftest import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT = os.path.join(ROOT, "tests", "slt", "regex.test")


@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]],
                         ids=["oneshot", "incremental"])
def test_regex_slt(args):
    sltfile.all_pass(args, SLT)


def test_expected_results_are_postgres_answers():
    sltfile.generator_agrees("gen_regex.py")


# ------------------------------------------------------------ compile errors

def check_error(tmp_path, lines):
    prog = tmp_path / "prog.sql"
    prog.write_text("\n".join(lines) + "\n")
    p = run(["check", str(prog)])
    assert p.returncode == 1, p.stdout + p.stderr
    m = re.search(r"^.*?:(\d+):(\d+): ([a-z ]+): (.*)$", p.stderr, re.M)
    assert m, p.stderr
    return int(m.group(1)), int(m.group(2)), m.group(4)


def at(lines, needle):
    for ln, text in enumerate(lines, 1):
        if needle in text:
            return ln, text.index(needle) + 1
    raise AssertionError(needle)


@pytest.mark.parametrize("expr,needle,why", [
    ("s ~ 'ab(c'", "'ab(c'", "missing closing parenthesis"),
    ("regexp_replace(s, '[a-', 'x', 'g')", "'[a-'", "missing terminating ]"),
    ("REGEXP_EXTRACT(s, 'a{2,1}', 0)", "'a{2,1}'", "out of order"),
    ("s SIMILAR TO '(a'", "SIMILAR", "missing closing parenthesis"),
    ("s NOT SIMILAR TO 'a' ESCAPE 'ab'", "'ab'", "invalid escape string"),
    ("regexp_like(s, 'a', 'z')", "regexp_like", "invalid regular expression option: \"z\""),
    ("regexp_like(s, 'a', 'g')", "regexp_like", "does not support the \"global\" option"),
])
def test_bad_constant_pattern_is_a_compile_error_at_the_pattern(tmp_path, expr, needle, why):
    lines = ["CREATE TABLE t (id INT, s VARCHAR);",
             "CREATE VIEW v AS",
             "  SELECT id,",
             "         %s AS x FROM t;" % expr]
    line, col, msg = check_error(tmp_path, lines)
    assert (line, col) == at(lines, needle), msg
    assert why in msg, msg


@pytest.mark.parametrize("fn", ["regexp_match", "regexp_matches", "regexp_split_to_array"])
def test_array_returning_functions_are_refused_by_name(tmp_path, fn):
    lines = ["CREATE TABLE t (id INT, s VARCHAR);",
             "CREATE VIEW v AS SELECT %s(s, 'a') AS x FROM t;" % fn]
    line, col, msg = check_error(tmp_path, lines)
    assert (line, col) == at(lines, fn)
    assert fn in msg and "arrays" in msg, msg


# ---------------------------------------------------------- per-row errors

def push(p, body):
    r = requests.post(p.url("/ingress/t"), params={"wait": "true"}, data=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def query(p, sql):
    r = requests.get(p.url("/query"), params={"sql": sql, "format": "json"}, timeout=60)
    assert r.status_code == 200, r.text
    return [json.loads(l) for l in r.text.splitlines() if l.strip()]


def ins(**row):
    return json.dumps({"insert": row}) + "\n"


def dele(**row):
    return json.dumps({"delete": row}) + "\n"


def test_bad_pattern_from_the_data_rejects_only_its_record(http_pipeline):
    p = http_pipeline("""
CREATE TABLE t (id INT NOT NULL, s VARCHAR, pat VARCHAR) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW m AS SELECT id, s ~ pat AS hit, regexp_replace(s, pat, '_', 'g') AS r
FROM t;
""")
    j = push(p, ins(id=1, s="abc", pat="b") + ins(id=2, s="abc", pat="(b") +
             ins(id=3, s="xyz", pat="[xz]") + ins(id=4, s="q", pat="a{2,1}"))
    assert j["rejected"] == 2, j
    assert "regular expression" in j["rejected_error"], j
    assert sorted(query(p, "SELECT id, hit, r FROM m"), key=lambda r: r["id"]) == [
        {"id": 1, "hit": True, "r": "a_c"}, {"id": 3, "hit": True, "r": "_y_"}]
    errs = query(p, "SELECT record, error FROM sluice_errors")
    assert sorted(json.loads(e["record"])["id"] for e in errs) == [2, 4]
    assert all("missing closing parenthesis" in e["error"] or "out of order" in e["error"]
               for e in errs), errs
    # the pipeline goes on
    assert "rejected" not in push(p, ins(id=5, s="bbb", pat="b+"))
    assert {"id": 5, "hit": True, "r": "_"} in query(p, "SELECT id, hit, r FROM m")
    res = p.stop()
    assert "rejected a record of table t" in res.stderr


# -------------------------------------------------- incremental maintenance

VIEW = ("SELECT split_part(s, '/', 1) AS host, COUNT(*) AS n, "
        "SUM(regexp_count(s, '[0-9]')) AS digits, "
        "MAX(regexp_replace(s, '([a-z]+)=([0-9]+)', '\\2:\\1', 'g')) AS swapped, "
        "MIN(regexp_substr(s, '[a-z]+', 1, 2)) AS second "
        "FROM t WHERE s ~ '^[a-z.]+/' AND s !~* 'SKIP' GROUP BY split_part(s, '/', 1)")


def test_view_is_maintained_like_postgres_through_inserts_and_deletes(http_pipeline, pg):
    p = http_pipeline("""
CREATE TABLE t (id INT NOT NULL, s VARCHAR) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW v AS %s;
""" % VIEW)
    pg.psql("DROP TABLE IF EXISTS t; CREATE TABLE t (id INT NOT NULL, s VARCHAR)")
    hosts = ["a.com", "b.org", "c.net"]
    rows = {}
    steps = []
    for i in range(40):
        h = hosts[i % 3]
        s = "%s/p%d?x=%d&y=%d&tag=%s" % (h, i, i * 7, i % 5, "skip" if i % 11 == 0 else "k")
        if i % 13 == 0:
            s = "Upper.com/%d" % i  # fails the ~ filter
        steps.append(("ins", i, s))
        if i % 4 == 3:
            steps.append(("del", i - 2, None))
    batch = []
    for n, (op, i, s) in enumerate(steps):
        if op == "ins":
            rows[i] = s
            batch.append(ins(id=i, s=s))
        else:
            batch.append(dele(id=i, s=rows.pop(i)))
        if n % 9 == 8 or n == len(steps) - 1:
            assert "rejected" not in push(p, "".join(batch))
            batch = []
            pg.psql("DELETE FROM t")
            if rows:
                pg.psql("INSERT INTO t VALUES " + ",".join(
                    "(%d, '%s')" % (k, v) for k, v in rows.items()))
            want = sorted(tuple(r) for r in pg.query(VIEW))
            got = sorted((r["host"], str(r["n"]), str(r["digits"]), r["swapped"], r["second"])
                         for r in query(p, "SELECT * FROM v"))
            assert got == want
    p.stop()

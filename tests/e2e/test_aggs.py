"""STRING_AGG, BIT_AND/OR/XOR, PERCENTILE_CONT/DISC, MODE, STDDEV/VARIANCE,
COVAR/CORR, ARG_MIN/MAX, MEDIAN, ANY_VALUE, COUNT_IF, GROUPING SETS,
ROLLUP, CUBE and GROUPING() (issue 19 item 3; docs/sql.md, "Aggregate
functions"): tests/slt/aggs_*.test (PostgreSQL 15's answers, written by
tests/slt/gen_aggs.py) in one-shot mode and incrementally - rows inserted,
deleted and inserted again over 4 steps, every step compared with a
from-scratch evaluation - on 1, 2 and 3 workers; and the errors for the
forms not supported (the construct named, at its line and column)."""
import glob
import os

import pytest

import sltfile

from test_errors import compile_error, locate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = sorted(glob.glob(os.path.join(ROOT, "tests", "slt", "aggs_*.test")))


@pytest.mark.parametrize("case", CASES, ids=os.path.basename)
@sltfile.modes()
def test_aggs_slt(args, case):
    sltfile.all_pass(args, case)


def test_expected_results_are_postgresql_answers():
    """gen_aggs.py --check recomputes every expected value with its own
    throw-away PostgreSQL 15 server and compares with the files."""
    sltfile.generator_agrees("gen_aggs.py")


TABLE = "CREATE TABLE t (a INT, b INT NOT NULL, s VARCHAR);"

ERRORS = [
    # (view text, needle where the error points, kind, words the message has)
    ("SELECT STRING_AGG(s, s) FROM t", "s) FROM", "unsupported",
     ["STRING_AGG", "separator", "string constant"]),
    ("SELECT STRING_AGG(s, ',') OVER (PARTITION BY a) FROM t", "OVER", "unsupported",
     ["string_agg", "window function"]),
    ("SELECT BIT_OR(a) OVER () FROM t", "OVER", "unsupported", ["bit_or", "window function"]),
    ("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY a) OVER () FROM t", "OVER",
     "unsupported", ["percentile_cont", "WITHIN GROUP", "window function"]),
    ("SELECT ARRAY_AGG(a) OVER () FROM t", "OVER", "unsupported", ["array_agg", "window function"]),
    ("SELECT PERCENTILE_CONT(b) WITHIN GROUP (ORDER BY a) FROM t", "b) WITHIN",
     "unsupported", ["PERCENTILE_CONT", "fraction", "constant"]),
    ("SELECT PERCENTILE_DISC(1.5) WITHIN GROUP (ORDER BY a) FROM t", "1.5", "error",
     ["between 0 and 1"]),
    ("SELECT PERCENTILE_CONT(0.5) FROM t", "PERCENTILE_CONT", "error", ["WITHIN GROUP"]),
    ("SELECT SUM(a) WITHIN GROUP (ORDER BY a) FROM t", "WITHIN", "error",
     ["sum", "ordered-set"]),
    ("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY s) FROM t", "s) FROM", "error",
     ["PERCENTILE_CONT", "numeric"]),
    ("SELECT STRING_AGG(DISTINCT s, ',' ORDER BY a) FROM t", "a) FROM", "error",
     ["DISTINCT", "ORDER BY"]),
    ("SELECT BIT_AND(s) FROM t", "s) FROM", "error", ["bit_and", "integer"]),
    ("SELECT LOWER(s ORDER BY a) FROM t", "ORDER BY a", "error", ["lower", "not an aggregate"]),
    ("SELECT a, GROUPING(b) FROM t GROUP BY ROLLUP(a)", "b) FROM", "error",
     ["GROUPING", "GROUP BY"]),
    # the statistical and alias aggregates (tests/slt/aggs_stats.test)
    ("SELECT MEDIAN(a) OVER (PARTITION BY b) FROM t", "OVER", "unsupported",
     ["median", "window function"]),
    ("SELECT STDDEV(DISTINCT a) OVER (PARTITION BY b) FROM t", "STDDEV", "unsupported",
     ["stddev", "DISTINCT"]),
    ("SELECT CORR(a) OVER () FROM t", "CORR", "error", ["corr", "two arguments"]),
    ("SELECT ARG_MIN(s, a) OVER () FROM t", "OVER", "unsupported", ["arg_min", "window"]),
    ("SELECT CORR(a) FROM t", "CORR", "error", ["corr", "two arguments"]),
    ("SELECT STDDEV(s) FROM t", "s) FROM", "error", ["stddev", "numeric", "VARCHAR"]),
    ("SELECT COVAR_POP(a, s) FROM t", "s) FROM", "error", ["covar_pop", "numeric"]),
    ("SELECT COUNT_IF(a) FROM t", "COUNT_IF", "error", ["count_if", "BOOLEAN"]),
    ("SELECT MEDIAN(a) WITHIN GROUP (ORDER BY a) FROM t", "WITHIN", "error",
     ["median", "ordered-set"]),
    ("SELECT MEDIAN(DISTINCT a) FROM t", "MEDIAN", "unsupported", ["MEDIAN", "DISTINCT"]),
    # LISTAGG / GROUP_CONCAT are STRING_AGG (tests/slt/dialect_listagg.test)
    ("SELECT LISTAGG(s, ',') OVER () FROM t", "OVER", "unsupported", ["listagg", "window"]),
    ("SELECT GROUP_CONCAT(s, s) FROM t", "s) FROM", "unsupported",
     ["group_concat", "separator", "string constant"]),
    ("SELECT LISTAGG(s, ',', 'x') FROM t", "LISTAGG", "error",
     ["listagg", "optional separator"]),
]


@pytest.mark.parametrize("view,needle,kind,words", ERRORS, ids=[e[0][:48] for e in ERRORS])
def test_unsupported_forms_are_named_at_their_place(tmp_path, view, needle, kind, words):
    lines = [TABLE, "CREATE VIEW v AS " + view + ";"]
    line, col, k, msg = compile_error(tmp_path, lines)
    assert (line, col) == locate(lines, needle), msg
    assert kind in k, (k, msg)
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)

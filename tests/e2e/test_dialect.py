"""Dialect choices (issue 19 items 3 and 4, docs/sql.md "Dialect"): select-list
aliases in GROUP BY and HAVING, checked by tests/slt/cases/dialect.test
(expected values from SQLite), and the PostgreSQL-family spellings and
constructs of tests/slt/dialect_*.test (written by tests/slt/gen_dialect.py
from SQLite's or PostgreSQL 15's answers, the file says which), each in
one-shot mode and incrementally with every step compared to a from-scratch
evaluation; the errors for an ambiguous
alias and for constructs not supported yet (name and line:column) are in
test_errors.py."""
import glob
import os

import pytest

import sltfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [os.path.join(ROOT, "tests", "slt", "cases", "dialect.test")] + sorted(
    glob.glob(os.path.join(ROOT, "tests", "slt", "dialect_*.test")))


@pytest.mark.parametrize("case", CASES, ids=os.path.basename)
@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]],
                         ids=["oneshot", "incremental"])
def test_dialect_slt(args, case):
    sltfile.all_pass(args, case)


def test_expected_results_are_the_engines_answers():
    """The dialect_*.test files hold SQLite's and PostgreSQL 15's answers:
    gen_dialect.py --check recomputes them (with its own throw-away
    server, tests/e2e/pgserver.py) and compares."""
    sltfile.generator_agrees("gen_dialect.py")

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
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [os.path.join(ROOT, "tests", "slt", "cases", "dialect.test")] + sorted(
    glob.glob(os.path.join(ROOT, "tests", "slt", "dialect_*.test")))
DBG = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def records(path):
    with open(path) as f:
        return sum(1 for line in f if line.startswith(("statement ", "query ")))


@pytest.mark.parametrize("case", CASES, ids=os.path.basename)
@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]],
                         ids=["oneshot", "incremental"])
def test_dialect_slt(args, case):
    p = subprocess.run([DBG, "--verbose"] + args + [case], capture_output=True, text=True,
                       timeout=300)
    m = FINAL.findall(p.stdout)
    assert m, p.stdout[-2000:] + p.stderr[-2000:]
    passed, failed, skipped = (int(x) for x in m[-1])
    assert (passed, failed, skipped) == (records(case), 0, 0), p.stdout
    assert p.returncode == 0


def test_expected_results_are_the_engines_answers():
    """The dialect_*.test files hold SQLite's and PostgreSQL 15's answers:
    gen_dialect.py --check recomputes them (with its own throw-away
    server, tests/e2e/pgserver.py) and compares."""
    import pgserver
    ok, why = pgserver.available()
    if not ok:
        pytest.skip("no PostgreSQL server: " + why)
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "slt", "gen_dialect.py"),
                        "--check"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr

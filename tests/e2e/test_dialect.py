"""Dialect choices (issue 19 item 4, docs/sql.md "Dialect"): select-list
aliases in GROUP BY and HAVING, checked by tests/slt/cases/dialect.test
(expected values from SQLite) in one-shot mode and incrementally with every
step compared to a from-scratch evaluation; the errors for an ambiguous
alias and for constructs not supported yet (name and line:column) are in
test_errors.py."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASE = os.path.join(ROOT, "tests", "slt", "cases", "dialect.test")
DBG = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def records(path):
    with open(path) as f:
        return sum(1 for line in f if line.startswith(("statement ", "query ")))


@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]],
                         ids=["oneshot", "incremental"])
def test_dialect_slt(args):
    p = subprocess.run([DBG, "--verbose"] + args + [CASE], capture_output=True, text=True,
                       timeout=300)
    m = FINAL.findall(p.stdout)
    assert m, p.stdout[-2000:] + p.stderr[-2000:]
    passed, failed, skipped = (int(x) for x in m[-1])
    assert (passed, failed, skipped) == (records(CASE), 0, 0), p.stdout
    assert p.returncode == 0

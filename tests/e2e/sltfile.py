"""Running one sqllogictest file of tests/slt/ with the debug sluice-slt and
checking that every record passed, and re-checking a generated file's
expected answers with its generator (tests/slt/gen_*.py --check, which
starts its own throw-away PostgreSQL). Shared by the tests of the SQL
surface (test_aggs, test_dialect, test_regex)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DBG_SLT = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def modes(max_workers=3):
    """The pytest parameters `args` of a file's runs: one-shot on 2 workers,
    then incremental with --check-steps on 1 to max_workers workers."""
    ws = range(1, max_workers + 1)
    return pytest.mark.parametrize(
        "args", [["--workers", "2"]] + [["--incremental", "--check-steps", "--workers", str(w)]
                                         for w in ws],
        ids=["oneshot"] + ["incremental-w%d" % w for w in ws])


def records(path):
    """The statement and query records of an slt file."""
    with open(path) as f:
        return sum(1 for line in f if line.startswith(("statement ", "query ")))


def all_pass(args, path):
    """sluice-slt --verbose ARGS PATH passes every record of PATH."""
    p = subprocess.run([DBG_SLT, "--verbose"] + args + [path], capture_output=True, text=True,
                       timeout=300)
    m = FINAL.findall(p.stdout)
    assert m, p.stdout[-2000:] + p.stderr[-2000:]
    assert tuple(int(x) for x in m[-1]) == (records(path), 0, 0), p.stdout
    assert p.returncode == 0


def generator_agrees(script, postgres=True):
    """tests/slt/SCRIPT --check recomputes every expected value with
    PostgreSQL (and SQLite where the file says so; only SQLite when not
    postgres) and compares."""
    if postgres:
        import pgserver
        ok, why = pgserver.available()
        if not ok:
            pytest.skip("no PostgreSQL server: " + why)
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "slt", script), "--check"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr

"""The sqllogictest corpus (../shared/testdata/slt) through build/sluice-slt,
in both modes, and the runner's own behaviour on small files.

The corpus runs with the release runner (the whole corpus under ASan takes
minutes); a part of it runs under the sanitizers with every step checked.
Records Sluice does not pass yet are listed with their reasons in
tests/slt/skips.tsv (tests/slt/make_skips.py regenerates it)."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "..", "shared", "testdata", "slt")
CASES = os.path.join(ROOT, "tests", "slt", "cases")
SKIPS = os.path.join(ROOT, "tests", "slt", "skips.tsv")
REL = os.environ.get("SLUICE_SLT_RELEASE", os.path.join(ROOT, "build", "sluice-slt"))
DBG = os.environ.get("SLUICE_SLT", os.path.join(ROOT, "build", "debug", "sluice-slt"))
FINAL = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def corpus_files():
    out = []
    for d, _, names in os.walk(CORPUS):
        out += [os.path.join(d, n) for n in names if n.endswith(".test")]
    return sorted(out)


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=900)
    m = FINAL.findall(p.stdout)
    assert m, "no final line:\n" + p.stdout[-2000:] + p.stderr[-2000:]
    passed, failed, skipped = (int(x) for x in m[-1])
    return p, passed, failed, skipped


def own_skips():
    with open(SKIPS) as f:
        return sum(1 for line in f if line.strip() and not line.startswith("#"))


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="no corpus at ../shared/testdata/slt")
@pytest.mark.parametrize("mode", [[], ["--incremental", "--workers", "2"]],
                         ids=["snapshot", "incremental"])
def test_corpus_passes(mode):
    files = corpus_files()
    assert len(files) >= 40
    p, passed, failed, skipped = run(REL, mode + ["--skip-list", SKIPS, "--verbose"] + files)
    assert failed == 0, "\n".join(l for l in p.stdout.splitlines() if not l.startswith("./"))[-4000:]
    assert p.returncode == 0
    # records we skip ourselves count against the pass rate
    assert passed / (passed + own_skips()) >= 0.99, (passed, own_skips())


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="no corpus at ../shared/testdata/slt")
def test_corpus_part_under_sanitizers_every_step_checked():
    files = [os.path.join(CORPUS, f) for f in ("select1.test", "index/delete/10/slt_good_0.test")]
    files += sorted(os.path.join(CORPUS, "evidence", f) for f in os.listdir(os.path.join(CORPUS, "evidence")))
    p, passed, failed, skipped = run(DBG, ["--check-steps", "--workers", "3", "--skip-list", SKIPS,
                                           "--verbose"] + files)
    assert failed == 0, p.stdout[-4000:]
    assert passed > 10000
    assert "ERROR: AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr


def test_runner_format_rules():
    p, passed, failed, skipped = run(DBG, ["--verbose", os.path.join(CASES, "format.test")])
    assert (passed, failed, skipped) == (8, 0, 2), p.stdout
    assert p.returncode == 0


def test_runner_reports_wrong_expectations():
    p, passed, failed, skipped = run(DBG, ["--verbose", os.path.join(CASES, "wrong.test")])
    assert (passed, failed) == (2, 3), p.stdout
    assert p.returncode == 1
    assert "expected (2 values): 1 3" in p.stdout
    assert "hashing to" in p.stdout


def test_runner_lists_skips_with_reasons(tmp_path):
    out = tmp_path / "skipped.tsv"
    run(DBG, ["--list-skipped", str(out), os.path.join(CASES, "format.test")])
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    assert all("\t" in l for l in lines)
    assert any("skipif sluice" in l for l in lines)
    assert any("onlyif mysql" in l for l in lines)


@pytest.mark.parametrize("workers", ["1", "3"])
def test_subqueries_match_sqlite_at_every_step(workers):
    """Scalar, EXISTS and IN subqueries, uncorrelated and correlated
    (expected values computed by SQLite), maintained over steps with
    deletions and re-insertions."""
    p, passed, failed, skipped = run(DBG, ["--check-steps", "--workers", workers, "--verbose",
                                           os.path.join(CASES, "subquery.test")])
    assert (passed, failed) == (18, 0), p.stdout


def mpi_run(hosts, args):
    """sluice-slt (release) under mpirun with `hosts` ranks: every rank runs
    the same file with its share of the workers (oneshot_spmd)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    argv = ["mpirun", "--oversubscribe", "-np", str(hosts), "--mca", "mpi_yield_when_idle", "1",
            REL] + args
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    m = FINAL.findall(p.stdout)
    assert m, "no final line:\n" + p.stdout[-2000:] + p.stderr[-2000:]
    return p, tuple(int(x) for x in m[-1])


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="no corpus at ../shared/testdata/slt")
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (Open MPI) is not installed")
@pytest.mark.parametrize("hosts", [2, 3])
def test_corpus_part_same_results_on_several_hosts(hosts):
    """Scale-out: a part of the corpus and the runner's own cases, every
    step checked, with 3 workers spread over `hosts` MPI processes: the same
    records pass as on one process (the rest of the corpus on several hosts:
    SLUICE_SCALEOUT_ALL=1)."""
    files = [os.path.join(CASES, "subquery.test"), os.path.join(CORPUS, "select1.test")]
    if os.environ.get("SLUICE_SCALEOUT_ALL"):
        files = corpus_files()
    args = ["--incremental", "--workers", "3", "--skip-list", SKIPS] + files
    one, *counts1 = run(REL, args)
    many, counts = mpi_run(hosts, args)
    assert counts == tuple(counts1), (counts, counts1, many.stdout[-3000:], many.stderr[-3000:])
    assert counts[1] == 0, many.stdout[-4000:]
    assert counts[0] > 1000
    per_file = lambda out: [l.split(" (")[0] for l in out.splitlines() if ": " in l and " passed, " in l]
    assert per_file(many.stdout) == per_file(one.stdout)

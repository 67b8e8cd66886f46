"""Recursive views (DECLARE RECURSIVE VIEW, WITH RECURSIVE) against SQLite.

A table of edges gets random inserts and deletes (duplicates included) in
small steps; after every step the materialized views - the transitive
closure (a declared recursive view, and an aggregate over it), the nodes
reachable from node 0 (WITH RECURSIVE in a view), paths of bounded length
counted with UNION ALL - are read over HTTP (/query) and compared with
SQLite's WITH RECURSIVE over the edges live at that point. Runs with 1 and
3 workers. The same operations from a file, cut into steps of 1 row and
into one step, with 1 to 3 workers and (when mpirun is on PATH) on 2
hosts, give identical dumps; a crash and a resume from a checkpoint give
those of an uninterrupted run. A recursion under UNION ALL that does
not end fails its step with a clear error; the pipeline rejects the input
record that caused it and goes on. Definitions that are not monotone in
the recursive relation, a view read before its recursive definition is
complete and a declaration without its view are refused at line:column
(mutual recursion: test_recursive_mutual.py). The sqllogictest file
tests/slt/recursive.test (expected results written by SQLite through
tests/slt/gen_recursive.py) runs in both modes of sluice-slt.
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess

import pytest

import sltfile

from conftest import json_input, read_dump, run, run_ok
from httpkit import ingress, lines, query

NODES = 10
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT_FILE = os.path.join(ROOT, "tests", "slt", "recursive.test")

PROGRAM = """
CREATE TABLE e (src INT NOT NULL, dst INT NOT NULL) WITH ('materialized' = 'true'%s);
DECLARE RECURSIVE VIEW tc (src INT NOT NULL, dst INT NOT NULL);
CREATE MATERIALIZED VIEW tc AS
  SELECT src, dst FROM e UNION SELECT tc.src, e.dst FROM tc JOIN e ON tc.dst = e.src;
CREATE MATERIALIZED VIEW outdeg AS SELECT src, COUNT(*) AS c, MAX(dst) AS m FROM tc GROUP BY src;
CREATE MATERIALIZED VIEW reach AS
  WITH RECURSIVE r(n) AS (SELECT 0 UNION SELECT e.dst FROM r JOIN e ON r.n = e.src)
  SELECT n FROM r;
CREATE MATERIALIZED VIEW paths AS
  WITH RECURSIVE p(n, d) AS (SELECT 0, 0 UNION ALL
                             SELECT e.dst, p.d + 1 FROM p JOIN e ON p.n = e.src WHERE p.d < 4)
  SELECT n, d, COUNT(*) AS c FROM p GROUP BY n, d;
"""

# view -> SQLite's query over the edges
REFERENCE = {
    "tc": "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM e UNION "
          "SELECT tc.src, e.dst FROM tc JOIN e ON tc.dst = e.src) SELECT * FROM tc",
    "outdeg": "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM e UNION "
              "SELECT tc.src, e.dst FROM tc JOIN e ON tc.dst = e.src) "
              "SELECT src, COUNT(*), MAX(dst) FROM tc GROUP BY src",
    "reach": "WITH RECURSIVE r(n) AS (SELECT 0 UNION SELECT e.dst FROM r JOIN e ON r.n = e.src) "
             "SELECT n FROM r",
    "paths": "WITH RECURSIVE p(n, d) AS (SELECT 0, 0 UNION ALL SELECT e.dst, p.d + 1 FROM p "
             "JOIN e ON p.n = e.src WHERE p.d < 4) SELECT n, d, COUNT(*) FROM p GROUP BY n, d",
}


def gen_steps(seed, nsteps=24):
    """Steps of random edge inserts and deletes of live edges."""
    rnd = random.Random(seed)
    live, steps = [], []
    for _ in range(nsteps):
        ops = []
        for _ in range(rnd.randrange(1, 6)):
            if live and rnd.random() < 0.35:
                ops.append(("delete", live.pop(rnd.randrange(len(live)))))
            else:
                edge = {"src": rnd.randrange(NODES), "dst": rnd.randrange(NODES)}
                live.append(edge)
                ops.append(("insert", edge))
        steps.append(ops)
    return steps


def norm(rows):
    return sorted(tuple(str(x) for x in r) for r in rows)


def sqlite_answers(live):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e (src INT, dst INT)")
    db.executemany("INSERT INTO e VALUES (?, ?)", [(r["src"], r["dst"]) for r in live])
    return {v: norm(db.execute(q).fetchall()) for v, q in REFERENCE.items()}


def apply(live, ops):
    for op, edge in ops:
        if op == "insert":
            live.append(edge)
        else:
            live.remove(edge)


@pytest.mark.parametrize("workers", [1, 3])
def test_views_match_sqlite_after_every_step(http_pipeline, workers):
    p = http_pipeline(PROGRAM % "", "--workers", workers)
    live, sizes = [], {v: 0 for v in REFERENCE}
    for i, ops in enumerate(gen_steps(7 + workers)):
        j = ingress(p, "e", lines(*({op: edge} for op, edge in ops)), wait="true")
        assert j["accepted"] == len(ops) and j["error_count"] == 0, j
        apply(live, ops)
        want = sqlite_answers(live)
        for v in REFERENCE:
            got = norm(tuple(r.values()) for r in query(p, "SELECT * FROM %s" % v))
            assert got == want[v], "step %d, view %s" % (i, v)
            sizes[v] = max(sizes[v], len(got))
    # the closure grew well past the edges (cycles, long paths)
    assert sizes["tc"] > 30 and sizes["reach"] >= 4 and sizes["paths"] > 5, sizes
    p.stop()


def test_one_shot_with_recursive(http_pipeline):
    """WITH RECURSIVE in a /query over a running pipeline's table."""
    p = http_pipeline(PROGRAM % "", "--workers", 2)
    live = [{"src": a, "dst": b} for a, b in [(0, 1), (1, 2), (2, 0), (2, 3), (5, 6), (3, 3)]]
    ingress(p, "e", lines(*({"insert": e} for e in live)), wait="true")
    want = sqlite_answers(live)
    for v, q in REFERENCE.items():
        got = norm(tuple(r.values()) for r in query(p, q))
        assert got == want[v], v
    got = query(p, "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t "
                   "WHERE n < 100) SELECT COUNT(*) AS c, SUM(n) AS s FROM t")
    assert got == [{"c": 100, "s": 5050}]
    p.stop()


def test_step_boundaries_do_not_change_the_output(tmp_path):
    steps = gen_steps(99, nsteps=40)
    inp = tmp_path / "in.json"
    live = []
    with open(inp, "w") as f:
        for ops in steps:
            for op, edge in ops:
                f.write(json.dumps({op: edge}) + "\n")
            apply(live, ops)
    prog = tmp_path / "prog.sql"
    prog.write_text(PROGRAM % (", " + json_input(inp)[len("WITH ("):-1]))
    dumps = {}
    runs = [(1, 1, 1), (1, 3, 1), (3, 2, 1), (100000, 3, 1)]
    if shutil.which("mpirun"):
        runs.append((2, 3, 2))  # --hosts 2: the fixed point on worker 0 of host 0
    for rows, workers, hosts in runs:
        d = tmp_path / ("dump_%d_%d_%d" % (rows, workers, hosts))
        run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", rows,
                "--workers", workers, "--dump", d] + (["--hosts", hosts] if hosts > 1 else []))
        dumps[(rows, workers, hosts)] = {v: (d / ("%s.csv" % v)).read_bytes() for v in REFERENCE}
    first = dumps[(1, 1, 1)]
    for k, dump in dumps.items():
        assert dump == first, k
    want = sqlite_answers(live)
    for v in REFERENCE:
        _, got = read_dump(tmp_path / "dump_1_1_1" / ("%s.csv" % v))
        assert norm(got) == want[v], v


def test_a_recursion_that_does_not_end_is_rejected(http_pipeline):
    """UNION ALL over a cycle has no finite fixed point: the step that
    closes the cycle fails after the iteration bound; the pipeline undoes
    it, rejects the record that closes the cycle, and goes on."""
    prog = PROGRAM % "" + """
CREATE MATERIALIZED VIEW walks AS
  WITH RECURSIVE w(n) AS (SELECT src FROM e UNION ALL SELECT e.dst FROM w JOIN e ON w.n = e.src)
  SELECT n, COUNT(*) AS c FROM w GROUP BY n;
"""
    p = http_pipeline(prog, "--workers", 2)
    ok = [{"src": 1, "dst": 2}, {"src": 2, "dst": 3}]
    j = ingress(p, "e", lines(*({"insert": e} for e in ok)), wait="true")
    assert j["accepted"] == 2 and j.get("rejected", 0) == 0, j
    assert query(p, "SELECT n, c FROM walks ORDER BY n") == [
        {"n": 1, "c": 1}, {"n": 2, "c": 2}, {"n": 3, "c": 2}]
    j = ingress(p, "e", lines({"insert": {"src": 4, "dst": 5}}, {"insert": {"src": 3, "dst": 1}}),
                wait="true")
    assert j["rejected"] == 1, j
    assert "no fixed point after 10000 iterations" in j["rejected_error"], j
    assert "recursive relation w (in view walks)" in j["rejected_error"], j
    # the pipeline runs on, without the record that closed the cycle
    j = ingress(p, "e", lines({"insert": {"src": 5, "dst": 6}}), wait="true")
    assert j.get("rejected", 0) == 0, j
    live = ok + [{"src": 4, "dst": 5}, {"src": 5, "dst": 6}]
    want = sqlite_answers(live)
    for v in REFERENCE:
        got = norm(tuple(r.values()) for r in query(p, "SELECT * FROM %s" % v))
        assert got == want[v], v
    assert "no fixed point" in p.stderr()
    p.stop()


def test_refused_definitions_name_line_and_column(tmp_path):
    head = "CREATE TABLE e (src INT, dst INT);\n"
    cases = [  # (program, line, column, message part)
        (head + "CREATE VIEW v AS WITH RECURSIVE r(n, c) AS (SELECT 1, 1 UNION\n"
         "  SELECT n, COUNT(*) FROM r GROUP BY n) SELECT * FROM r;", 2, 33,
         "an aggregate or GROUP BY"),
        (head + "CREATE VIEW v AS WITH RECURSIVE r(n) AS (SELECT 1 UNION\n"
         "  SELECT src FROM e WHERE src NOT IN (SELECT n FROM r)) SELECT * FROM r;", 2, 33,
         "recursion must be monotone"),
        (head + "CREATE VIEW v AS WITH RECURSIVE r(n) AS (SELECT 1 EXCEPT\n"
         "  SELECT n + 1 FROM r) SELECT * FROM r;", 2, 51, "UNION or UNION ALL, not EXCEPT"),
        (head + "DECLARE RECURSIVE VIEW a (n INT);\nDECLARE RECURSIVE VIEW b (n INT);\n"
         "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM b;\n"
         "CREATE VIEW c AS SELECT n FROM a;\n"
         "CREATE VIEW b AS SELECT n FROM c;", 5, 32, "is read before it is defined"),
        (head + "DECLARE RECURSIVE VIEW a (n INT);\nDECLARE RECURSIVE VIEW b (n INT);\n"
         "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM b;\n"
         "CREATE VIEW b AS SELECT n FROM a GROUP BY n;", 5, 13, "over the views it recurses with"),
        (head + "DECLARE RECURSIVE VIEW a (n INT);", 2, 24, "no CREATE VIEW a follows"),
        (head + "DECLARE RECURSIVE VIEW a (n INT NOT NULL);\n"
         "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM a;", 2, 27,
         "declared NOT NULL"),
        (head + "DECLARE RECURSIVE VIEW a (n INT, m INT);\n"
         "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM a;", 3, 13,
         "declared with 2 columns"),
    ]
    for i, (text, line, col, what) in enumerate(cases):
        f = tmp_path / ("bad%d.sql" % i)
        f.write_text(text)
        res = run(["check", f])
        assert res.returncode != 0, text
        assert "bad%d.sql:%d:%d:" % (i, line, col) in res.stderr, (text, res.stderr)
        assert what in res.stderr, (text, res.stderr)


@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "3"]])
def test_slt_recursive(args):
    sltfile.all_pass(args, SLT_FILE)


def test_crash_and_resume_from_a_checkpoint(tmp_path):
    """With --storage: a crash after step 17 (checkpoints every 5 steps),
    then a restart (with another worker count: the fixed point's state
    moves with worker 0) gives the dumps of an uninterrupted run."""
    steps = gen_steps(5, nsteps=30)
    inp = tmp_path / "in.json"
    with open(inp, "w") as f:
        for ops in steps:
            for op, edge in ops:
                f.write(json.dumps({op: edge}) + "\n")
    prog = tmp_path / "prog.sql"
    prog.write_text(PROGRAM % (", " + json_input(inp)[len("WITH ("):-1]))
    base = ["run", prog, "--until-done", "--no-progress", "--step-rows", 2,
            "--checkpoint-interval", "0"]
    run_ok(base + ["--workers", 2, "--dump", tmp_path / "ref"])
    st = tmp_path / "storage"
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:17", SLUICE_CHECKPOINT_EVERY_STEPS="5")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    from conftest import sluice_bin
    p = subprocess.run([sluice_bin()] + [str(a) for a in base + ["--workers", 2, "--storage", st]],
                       capture_output=True, timeout=600, env=env)
    assert p.returncode == 137, p.stderr.decode()[-3000:]
    res = run_ok(base + ["--workers", 3, "--storage", st, "--dump", tmp_path / "dump"])
    assert "resuming from the checkpoint at step 15" in res.stderr, res.stderr[-3000:]
    for v in REFERENCE:
        assert (tmp_path / "dump" / ("%s.csv" % v)).read_bytes() == \
            (tmp_path / "ref" / ("%s.csv" % v)).read_bytes(), v

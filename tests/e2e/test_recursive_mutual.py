"""Mutually recursive views (DECLARE RECURSIVE VIEW; docs/sql.md, recursive
queries) against SQLite.

A table of coloured edges gets random inserts and deletes (duplicates
included) over many small steps; after every step each view of three
components - even/odd walks from node 0 (two views), paths alternating
red and blue edges (two views of two columns), walk lengths modulo 3
(three views) - and views reading them (an aggregate, a join of two
members) are read over HTTP (/query) and compared with SQLite's answer.
SQLite has no mutual recursion: each component is one WITH RECURSIVE with
a tag column there (which view a row belongs to). Runs on 1 and 2
workers. A crash and a resume from a checkpoint (with another worker
count) give the dumps of an uninterrupted run; the sqllogictest file
tests/slt/recursive_mutual.test (written from SQLite's answers by
tests/slt/gen_recursive_mutual.py) runs in both modes of sluice-slt.
"""
import json
import os
import random
import sqlite3
import subprocess

import pytest

import sltfile

from conftest import json_input, run, run_ok
from httpkit import ingress, lines, query

NODES = 9
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLT_FILE = os.path.join(ROOT, "tests", "slt", "recursive_mutual.test")

PROGRAM = """
CREATE TABLE e (src INT NOT NULL, dst INT NOT NULL, w INT NOT NULL) %s;
DECLARE RECURSIVE VIEW ev (n INT NOT NULL);
DECLARE RECURSIVE VIEW od (n INT NOT NULL);
DECLARE RECURSIVE VIEW red (s INT NOT NULL, d INT NOT NULL);
DECLARE RECURSIVE VIEW blue (s INT NOT NULL, d INT NOT NULL);
DECLARE RECURSIVE VIEW m0 (n INT NOT NULL);
DECLARE RECURSIVE VIEW m1 (n INT NOT NULL);
DECLARE RECURSIVE VIEW m2 (n INT NOT NULL);
CREATE MATERIALIZED VIEW ev AS SELECT 0 AS n UNION SELECT e.dst FROM od JOIN e ON od.n = e.src;
CREATE MATERIALIZED VIEW red AS
  SELECT src, dst FROM e WHERE w = 1 UNION
  SELECT blue.s, e.dst FROM blue JOIN e ON blue.d = e.src WHERE e.w = 1;
CREATE MATERIALIZED VIEW od AS SELECT DISTINCT e.dst FROM ev JOIN e ON ev.n = e.src;
CREATE MATERIALIZED VIEW m0 AS SELECT 1 AS n UNION SELECT e.dst FROM m2 JOIN e ON m2.n = e.src;
CREATE MATERIALIZED VIEW blue AS
  SELECT src, dst FROM e WHERE w = 0 UNION
  SELECT red.s, e.dst FROM red, e WHERE red.d = e.src AND e.w = 0;
CREATE MATERIALIZED VIEW m1 AS SELECT DISTINCT e.dst AS n FROM m0 JOIN e ON m0.n = e.src;
CREATE MATERIALIZED VIEW m2 AS SELECT DISTINCT e.dst AS n FROM m1 JOIN e ON m1.n = e.src;
CREATE MATERIALIZED VIEW red_out AS SELECT s, COUNT(*) AS c, MAX(d) AS m FROM red GROUP BY s;
CREATE MATERIALIZED VIEW both_parities AS SELECT ev.n FROM ev JOIN od ON ev.n = od.n;
"""

EO = ("WITH RECURSIVE m(tag, n) AS (SELECT 0, 0 UNION SELECT 1 - m.tag, e.dst FROM m "
      "JOIN e ON m.n = e.src) ")
RB = ("WITH RECURSIVE m(tag, s, d) AS (SELECT w, src, dst FROM e UNION "
      "SELECT e.w, m.s, e.dst FROM m JOIN e ON m.d = e.src WHERE e.w <> m.tag) ")
M3 = ("WITH RECURSIVE m(tag, n) AS (SELECT 0, 1 UNION SELECT (m.tag + 1) % 3, e.dst FROM m "
      "JOIN e ON m.n = e.src) ")
# view -> SQLite's query over the edges
REFERENCE = {
    "ev": EO + "SELECT n FROM m WHERE tag = 0",
    "od": EO + "SELECT n FROM m WHERE tag = 1",
    "red": RB + "SELECT s, d FROM m WHERE tag = 1",
    "blue": RB + "SELECT s, d FROM m WHERE tag = 0",
    "m0": M3 + "SELECT n FROM m WHERE tag = 0",
    "m1": M3 + "SELECT n FROM m WHERE tag = 1",
    "m2": M3 + "SELECT n FROM m WHERE tag = 2",
    "red_out": RB + "SELECT s, COUNT(*), MAX(d) FROM m WHERE tag = 1 GROUP BY s",
    "both_parities": EO + "SELECT a.n FROM m a JOIN m b ON a.n = b.n AND a.tag = 0 "
                          "AND b.tag = 1",
}


def gen_steps(seed, nsteps=30):
    """Steps of random edge inserts and deletes of live edges."""
    rnd = random.Random(seed)
    live, steps = [], []
    for _ in range(nsteps):
        ops = []
        for _ in range(rnd.randrange(1, 5)):
            if live and rnd.random() < 0.35:
                ops.append(("delete", live.pop(rnd.randrange(len(live)))))
            else:
                edge = {"src": rnd.randrange(NODES), "dst": rnd.randrange(NODES),
                        "w": rnd.randrange(2)}
                live.append(edge)
                ops.append(("insert", edge))
        steps.append(ops)
    return steps


def norm(rows):
    return sorted(tuple(str(x) for x in r) for r in rows)


def sqlite_answers(live):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e (src INT, dst INT, w INT)")
    db.executemany("INSERT INTO e VALUES (?, ?, ?)",
                   [(r["src"], r["dst"], r["w"]) for r in live])
    return {v: norm(db.execute(q).fetchall()) for v, q in REFERENCE.items()}


def apply(live, ops):
    for op, edge in ops:
        if op == "insert":
            live.append(edge)
        else:
            live.remove(edge)


@pytest.mark.parametrize("workers", [1, 2])
def test_views_match_sqlite_after_every_step(http_pipeline, workers):
    p = http_pipeline(PROGRAM % "", "--workers", workers)
    live, sizes, most, shrank = [], {v: 0 for v in REFERENCE}, {v: 0 for v in REFERENCE}, set()
    for i, ops in enumerate(gen_steps(11 + workers)):
        j = ingress(p, "e", lines(*({op: edge} for op, edge in ops)), wait="true")
        assert j["accepted"] == len(ops) and j["error_count"] == 0, j
        apply(live, ops)
        want = sqlite_answers(live)
        for v in REFERENCE:
            got = norm(tuple(r.values()) for r in query(p, "SELECT * FROM %s" % v))
            assert got == want[v], "step %d, view %s" % (i, v)
            if len(got) < sizes[v]:
                shrank.add(v)
            sizes[v] = len(got)
            most[v] = max(most[v], len(got))
    # the views grew past their seeds, and deletions shrank them
    assert most["red"] + most["blue"] > 10 and most["od"] >= 3 and most["m2"] >= 2, most
    assert {"red", "od", "m1"} & shrank, shrank
    p.stop()


@pytest.mark.parametrize("dred", [True, False])
def test_a_deletion_that_cuts_off_a_cycle(http_pipeline, dred, monkeypatch):
    """Rows on a cycle support one another: deleting the edge into the
    cycle must remove them all (DRed over-deletes them, nothing re-derives
    them), as must recomputation (SLUICE_FIXPOINT_NO_DRED=1)."""
    if not dred:
        monkeypatch.setenv("SLUICE_FIXPOINT_NO_DRED", "1")
    p = http_pipeline(PROGRAM % "", "--workers", 2)
    live = [{"src": a, "dst": b, "w": w} for a, b, w in
            [(0, 1, 1), (1, 2, 0), (2, 3, 1), (3, 1, 0), (2, 4, 1), (4, 4, 0), (5, 1, 1)]]
    steps = [[("insert", x) for x in live], [("delete", live[0])], [("insert", live[0])],
             [("delete", live[0]), ("delete", live[6])]]
    live = []
    for i, ops in enumerate(steps):
        ingress(p, "e", lines(*({op: edge} for op, edge in ops)), wait="true")
        apply(live, ops)
        want = sqlite_answers(live)
        for v in REFERENCE:
            got = norm(tuple(r.values()) for r in query(p, "SELECT * FROM %s" % v))
            assert got == want[v], "step %d, view %s" % (i, v)
    assert want["ev"] == [("0",)] and want["od"] == [], want
    p.stop()


def test_crash_and_resume_from_a_checkpoint(tmp_path):
    """With --storage: a crash after step 17 (checkpoints every 5 steps),
    then a restart on another worker count gives the dumps of an
    uninterrupted run, and they are SQLite's answers."""
    steps = gen_steps(5, nsteps=30)
    inp = tmp_path / "in.json"
    live = []
    with open(inp, "w") as f:
        for ops in steps:
            for op, edge in ops:
                f.write(json.dumps({op: edge}) + "\n")
            apply(live, ops)
    prog = tmp_path / "prog.sql"
    prog.write_text(PROGRAM % json_input(inp))
    base = ["run", prog, "--until-done", "--no-progress", "--step-rows", 2,
            "--checkpoint-interval", "0"]
    run_ok(base + ["--workers", 2, "--dump", tmp_path / "ref"])
    st = tmp_path / "storage"
    env = dict(os.environ, SLUICE_CRASH_AT="after-step:17", SLUICE_CHECKPOINT_EVERY_STEPS="5")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    from conftest import read_dump, sluice_bin
    p = subprocess.run([sluice_bin()] + [str(a) for a in base + ["--workers", 2, "--storage", st]],
                       capture_output=True, timeout=600, env=env)
    assert p.returncode == 137, p.stderr.decode()[-3000:]
    res = run_ok(base + ["--workers", 1, "--storage", st, "--dump", tmp_path / "dump"])
    assert "resuming from the checkpoint at step 15" in res.stderr, res.stderr[-3000:]
    want = sqlite_answers(live)
    for v in REFERENCE:
        assert (tmp_path / "dump" / ("%s.csv" % v)).read_bytes() == \
            (tmp_path / "ref" / ("%s.csv" % v)).read_bytes(), v
        _, got = read_dump(tmp_path / "dump" / ("%s.csv" % v))
        assert norm(got) == want[v], v


def test_refused_uses_name_line_and_column(tmp_path):
    head = ("CREATE TABLE e (src INT, dst INT);\n"
            "DECLARE RECURSIVE VIEW a (n INT);\nDECLARE RECURSIVE VIEW b (n INT);\n")
    cases = [  # (program, line, column, message part)
        (head + "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM b;\n"
         "CREATE VIEW b AS SELECT n FROM a GROUP BY n;", 5, 13,
         "recursive view \"b\": an aggregate or GROUP BY"),
        (head + "CREATE VIEW a AS SELECT src FROM e EXCEPT SELECT n FROM b;\n"
         "CREATE VIEW b AS SELECT n FROM a;", 4, 13, "over the views it recurses with"),
        (head + "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM b;\n"
         "CREATE VIEW c AS SELECT n FROM a;\nCREATE VIEW b AS SELECT n FROM c;", 5, 32,
         "is read before it is defined"),
        (head + "CREATE VIEW a AS SELECT src FROM e UNION SELECT n FROM b;", 3, 24,
         "no CREATE VIEW b follows"),
    ]
    for i, (text, line, col, what) in enumerate(cases):
        f = tmp_path / ("bad%d.sql" % i)
        f.write_text(text)
        res = run(["check", f])
        assert res.returncode != 0, text
        assert "bad%d.sql:%d:%d:" % (i, line, col) in res.stderr, (text, res.stderr)
        assert what in res.stderr, (text, res.stderr)


def test_a_component_changes_as_one_unit(tmp_path):
    """sluice check OLD NEW: editing one view of a component changes them
    all (one fixed point); the edited one is named as the definition."""
    old = tmp_path / "old.sql"
    old.write_text(PROGRAM % "")
    new = tmp_path / "new.sql"
    new.write_text((PROGRAM % "").replace("SELECT DISTINCT e.dst FROM ev JOIN e ON ev.n = e.src",
                                          "SELECT DISTINCT e.dst FROM ev JOIN e ON ev.n = e.src "
                                          "WHERE e.dst > 0"))
    j = json.loads(run_ok(["check", old, new, "--format", "json"]).stdout)
    rel = {r["name"]: r for r in j["relations"]}
    assert rel["od"]["status"] == "changed" and "definition" in rel["od"]["changes"], rel["od"]
    assert rel["ev"]["status"] == "changed" and rel["ev"]["changes"] == ["inputs"], rel["ev"]
    assert rel["ev"]["inputs"] == ["od"], rel["ev"]
    for v in ("red", "blue", "m0", "m1", "m2", "red_out"):
        assert rel[v]["status"] == "unchanged", rel[v]
    assert rel["both_parities"]["status"] == "changed", rel["both_parities"]


@pytest.mark.parametrize("args", [[], ["--incremental", "--check-steps", "--workers", "2"]])
def test_slt_recursive_mutual(args):
    sltfile.all_pass(args, SLT_FILE)


def test_expected_results_are_sqlite_answers():
    sltfile.generator_agrees("gen_recursive_mutual.py", postgres=False)

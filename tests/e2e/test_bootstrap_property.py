"""Bootstrapping as a property (issue 17 item 3): random programs made of
the SQL-vs-SQLite queries (test_sql_vs_sqlite.py) over its random tables
(materialized, so that every new view is computed from stored state, or
not, so that new views read their tables again), evolved by random edits - views dropped, added, and changed (the
same name, another query), a table's connector changed - are run with --storage over the first part of
the input, then bootstrapped to the edited program (--bootstrap allow)
while the rest of the input arrives. Every view of the edited program must
then equal SQLite's answer over the whole input (the same comparison as
test_sql_vs_sqlite.py: a multiset, floats up to rounding). One evolution
also changes the worker count, one is killed inside the bootstrap step
(SLUICE_CRASH_AT) and restarted."""
import json
import os
import random
import subprocess

import pytest

from conftest import csv_input, json_input, relation_types, run, run_ok, sluice_bin, \
    split_lines_keep
from test_sql_vs_sqlite import (HELPERS, QUERIES, T1_DDL, T2_DDL, T3_DDL, T4_DDL, World,
                                assert_dump_matches, compile_views, gen_data, sluice_sql,
                                sqlite_sql, write_inputs)

STEP_ROWS = 40
# (seed, old workers, new workers, kill inside the bootstrap, tables materialized)
EVOLUTIONS = [(7, 1, 1, False, True), (11, 1, 3, False, True), (13, 2, 1, True, True),
              (17, 1, 1, False, False), (19, 3, 2, True, False)]
if os.environ.get("BOOT_PROPERTY_SEEDS"):  # more evolutions: N of them, seeds 1000..
    EVOLUTIONS = [(1000 + i, 1 + i % 3, 1 + (i // 3) % 3, i % 4 == 0, i % 2 == 0)
                  for i in range(int(os.environ["BOOT_PROPERTY_SEEDS"]))]


def tables_sql(d, mat=True, changed=()):
    """changed: tables whose connector gets another setting (max_batch_size):
    another history, so they are read again and everything over them
    recomputed."""
    def m(name, clause):
        if name in changed:
            clause = clause.replace('"format"', '"max_batch_size": 7, "format"', 1)
        return clause.replace("WITH (", "WITH ('materialized' = 'true', ", 1) if mat else clause
    return "\n".join([
        T1_DDL % m("t1", csv_input(os.path.join(d, "t1.csv"))),
        T2_DDL % m("t2", csv_input(os.path.join(d, "t2.csv"), headers=True)),
        T3_DDL % m("t3", json_input(os.path.join(d, "t3.json"))),
        T4_DDL % m("t4", json_input(os.path.join(d, "t4.json"))),
    ] + HELPERS)


def view(name, query):
    return "CREATE MATERIALIZED VIEW %s AS\n%s;" % (name, sluice_sql(query))


def program(d, fname, views, mat, changed=()):
    path = os.path.join(d, fname)
    with open(path, "w") as f:
        f.write(tables_sql(d, mat, changed) + "\n" + "\n".join(view(n, q) for n, q in views) +
                "\n")
    return path


def split_inputs(d, rng):
    """Cut every input file to a random prefix of its records; return the
    full contents, to be written back (the prefix grows to the whole)."""
    full = {}
    for name in ("t1.csv", "t2.csv", "t3.json", "t4.json"):
        path = os.path.join(d, name)
        raw = open(path, "rb").read()
        full[path] = raw
        recs = split_lines_keep(raw)
        keep = 1 + rng.randrange(len(recs)) if name != "t2.csv" else 2 + rng.randrange(
            len(recs) - 1)  # t2 keeps its header line
        open(path, "wb").write(b"".join(r + b"\n" for r in recs[:keep]))
    return full


@pytest.mark.parametrize("seed,w_old,w_new,kill,mat", EVOLUTIONS,
                         ids=lambda v: str(v))
def test_random_evolution_equals_sqlite(sluice, tmp_path, seed, w_old, w_new, kill, mat):
    rng = random.Random(seed)
    d = str(tmp_path)
    data = gen_data(seed)
    db = write_inputs(d, data)
    names = [n for n in QUERIES if n != "q_view_on_mview"]
    _, ok = compile_views(d, tables_sql(d), names, lambda n: view(n, n))
    pool = rng.sample(ok, 10)
    old_views = [(n, n) for n in pool[:6]]
    # the edits: drop one, change one (same name, another query), add two
    dropped = old_views[0]
    changed = (old_views[1][0], pool[6])
    new_views = [changed] + old_views[2:] + [(n, n) for n in pool[7:9]]
    # and one table's connector changes, in half of the evolutions
    changed_tables = [rng.choice(["t2", "t3", "t4"])] if rng.random() < 0.5 else []
    old = program(d, "old.sql", old_views, mat)
    new = program(d, "new.sql", new_views, mat, changed_tables)
    st = os.path.join(d, "storage")

    full = split_inputs(d, rng)
    run_ok(["run", old, "--storage", st, "--until-done", "--workers", w_old,
            "--step-rows", STEP_ROWS, "--no-progress"])
    for path, raw in full.items():  # the rest of the input arrives
        open(path, "wb").write(raw)
    args = ["run", new, "--storage", st, "--until-done", "--workers", w_new,
            "--step-rows", STEP_ROWS, "--no-progress", "--bootstrap", "allow"]
    if kill:
        step = max(json.loads(open(os.path.join(st, m)).read().split("\n")[0])["step"]
                   for m in os.listdir(st) if m.startswith("manifest-"))
        env = dict(os.environ, SLUICE_CRASH_AT="after-step:%d" % (step + 1))
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        p = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True,
                           env=env, timeout=300)
        assert p.returncode == 137, p.stderr.decode()[-3000:]
    w = World()
    out = os.path.join(d, "dump")
    w.runs = {"new": run(args + ["--dump", out])}
    w.dumps = {"new": out}
    assert w.runs["new"].returncode == 0, w.runs["new"].stderr[-4000:]
    assert "bootstrapping:" in w.runs["new"].stderr
    w.types = relation_types(run_ok(["check", new]).stdout)
    for name, query in new_views:
        expected = db.execute(sqlite_sql(query)).fetchall()
        assert_dump_matches(w, name, "new", expected,
                            "view %s = %s (old program: %s; dropped %s; changed tables %s)" % (
                                name, sluice_sql(query), [q for _, q in old_views], dropped[0],
                                changed_tables),
                            expect_rows=False)
    assert not os.path.exists(os.path.join(out, dropped[0] + ".csv"))

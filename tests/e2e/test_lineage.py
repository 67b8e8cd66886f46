"""Field-level lineage (`sluice lineage`, GET /lineage; docs/lineage.md),
proven by experiment.

The property test takes the random programs of the differential suite
(tests/difftest/gen.py: random schemas, streams and queries over every
construct the generator knows), one materialized view per query, and runs
each program as a pipeline fed over HTTP. After the stream's rows are in,
it changes one source column T.X at a time: random new values in random
existing rows, pushed as update pairs (delete the old row, insert the new
one). After every change it reads every view (/query), checks its contents
against SQLite's answer to the same query over the same rows (so the
changes observed are right), and then checks the lineage:

  - soundness: every view column whose multiset of values changed lists
    T.X among its sources, or the view lists T.X among the columns that
    decide its rows; a view whose rows changed while no single column's
    values did lists T.X somewhere;
  - for every column listed as depending on T.X by identity or
    transformation, some experiment changes it when T.X changes: the
    pipeline's experiments first, then (for those none triggered) SQLite
    over fresh random inputs, changing T.X only.

Tightness (listed dependencies that no experiment triggered) is printed
(pytest -s shows it; docs/lineage.md records the figures). A fixed seed
set keeps the test to tens of seconds.
"""
import json
import os
import random
import re
import sys
from collections import Counter

import pytest
import requests

from conftest import run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "difftest"))

import check  # noqa: E402
import gen  # noqa: E402

# SLUICE_LINEAGE_SEEDS=N runs seeds 1..N instead (longer hunts for counterexamples)
SEEDS = ([11, 23, 37, 58, 71, 94] if not os.environ.get("SLUICE_LINEAGE_SEEDS") else
         list(range(1, int(os.environ["SLUICE_LINEAGE_SEEDS"]) + 1)))
QUERIES = 8
TRIALS = 2              # pipeline experiments per source column
EXPLORE = 150           # SQLite experiments per unconfirmed identity/transformation dependency
SQL_TYPES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR"}


def program(case, queries):
    out = []
    for t in case.tables:
        cols = []
        for c in t.cols:
            d = "%s %s" % (c.name, SQL_TYPES[c.ty])
            if c.pk:
                d += " NOT NULL PRIMARY KEY"
            elif c.notnull:
                d += " NOT NULL"
            cols.append(d)
        out.append("CREATE TABLE %s (%s);" % (t.name, ", ".join(cols)))
    for i, q in queries:
        out.append("CREATE MATERIALIZED VIEW q%d AS %s;" % (i, q.sql()))
    return "\n".join(out) + "\n"


def lineage_of(path):
    p = run(["lineage", path])
    return p, (json.loads(p.stdout) if p.returncode == 0 else None)


def compiled_queries(case, d):
    """The case's queries that Sluice compiles as views, and the lineage of
    the program made of them."""
    qs = list(enumerate(case.queries))
    path = os.path.join(d, "prog.sql")
    with open(path, "w") as f:
        f.write(program(case, qs))
    p, lin = lineage_of(path)
    if p.returncode != 0:
        ok = []
        for i, q in qs:
            with open(path, "w") as f:
                f.write(program(case, [(i, q)]))
            if lineage_of(path)[0].returncode == 0:
                ok.append((i, q))
        qs = ok
        with open(path, "w") as f:
            f.write(program(case, qs))
        p, lin = lineage_of(path)
        assert p.returncode == 0, p.stderr
    return qs, path, lin


def fmt_rows(rows, letters):
    return Counter(tuple(check.fmt_value(v, letters[j]) for j, v in enumerate(r)) for r in rows)


def columns_of(rows, n):
    """Per column (n of them), the multiset of its values."""
    cols = [Counter() for _ in range(n)]
    for r, w in rows.items():
        for j in range(n):
            cols[j][r[j]] += w
    return cols


class World:
    """One seed: the case, SQLite holding the same rows as the pipeline."""

    def __init__(self, seed, d, http_pipeline):
        self.seed = seed
        self.rng = random.Random(seed * 7919)
        self.case = gen.gen_case(seed, set(gen.FEATURES) - set(gen.KNOWN_BUGS), QUERIES)
        self.queries, self.path, self.lin = compiled_queries(self.case, d)
        self.db = gen.sqlite_db(self.case.tables)
        for stmts in self.case.batches:
            for s in stmts:
                self.db.execute(s)
        self.p = http_pipeline(open(self.path).read(), name="lineage%d" % seed)
        for t in self.case.tables:
            body = "".join(json.dumps({"insert": self.row_obj(t, r)}) + "\n"
                           for r in self.db.execute("SELECT * FROM %s" % t.name))
            if body:
                self.push(t, body)

    def row_obj(self, t, r):
        return {c.name: v for c, v in zip(t.cols, r)}

    def push(self, t, body):
        r = requests.post(self.p.url("/ingress/" + t.name), params={"wait": "true"}, data=body,
                          timeout=120)
        assert r.status_code == 200, r.text

    def read(self):
        """Every view's contents from the pipeline, checked against SQLite."""
        out = {}
        for i, q in self.queries:
            r = requests.get(self.p.url("/query"), params={"sql": "SELECT * FROM q%d" % i,
                                                          "format": "json"}, timeout=120)
            assert r.status_code == 200, r.text
            got = fmt_rows([list(json.loads(l).values()) for l in r.text.splitlines()
                            if l.strip()], q.letters())
            want = fmt_rows(self.db.execute(q.sql()).fetchall(), q.letters())
            assert got == want, "seed %d q%d differs from SQLite:\n%s\nsluice-only %s\n" \
                "sqlite-only %s" % (self.seed, i, q.sql(), got - want, want - got)
            out["q%d" % i] = got
        return out

    def change(self, t, ci):
        """Random new values of column ci in random rows of t, as update
        pairs to the pipeline and UPDATEs by rowid to SQLite. False when t
        has no rows."""
        rows = self.db.execute("SELECT rowid, * FROM %s" % t.name).fetchall()
        if not rows:
            return False
        col = t.cols[ci]
        vg = gen.ValueGen(self.rng)
        k = self.rng.choice([1, 1, 2, max(1, len(rows) // 3), len(rows)])
        body = []
        for r in self.rng.sample(rows, min(k, len(rows))):
            old = list(r[1:])
            new = list(old)
            for _ in range(10):
                new[ci] = vg.value(col)
                if new[ci] != old[ci]:
                    break
            self.db.execute("UPDATE %s SET %s = ? WHERE rowid = ?" % (t.name, col.name),
                            (new[ci], r[0]))
            body.append(json.dumps({"delete": self.row_obj(t, old)}))
            body.append(json.dumps({"insert": self.row_obj(t, new)}))
        self.push(t, "\n".join(body) + "\n")
        return True


def deps(lin):
    """(view, column) -> {(table, column): kind}; view -> {(table, column)}
    deciding rows."""
    cols, rows = {}, {}
    for v, o in lin["views"].items():
        for c, lst in o["columns"].items():
            cols[(v.lower(), c.lower())] = {(e["table"].lower(), e["column"].lower()): e["kind"]
                                            for e in lst}
        rows[v.lower()] = {(e["table"].lower(), e["column"].lower()) for e in o["rows"]}
    return cols, rows


class LiteralValues:
    """gen.ValueGen, but one value in three is a literal of the query (so
    that conditions such as x = 9.0 or s LIKE 'ab' are met)."""

    def __init__(self, rng, sql):
        self.vg, self.rng = gen.ValueGen(rng), rng
        self.nums = [float(x) if "." in x else int(x)
                     for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", sql)]
        self.strs = [x.replace("''", "'") for x in re.findall(r"'((?:[^']|'')*)'", sql)]

    def value(self, col):
        if self.rng.random() < 0.33:
            if col.ty == "text" and self.strs:
                return self.rng.choice(self.strs)
            if col.ty == "int" and self.nums:
                return int(self.rng.choice(self.nums))
            if col.ty == "float" and self.nums:
                return float(self.rng.choice(self.nums))
        return self.vg.value(col)


def explore(world, q, t, ci, wanted):
    """SQLite over fresh random inputs, changing only t.ci: which of the
    columns `wanted` (indexes; -1 for the rows as a whole) of query q
    change in some experiment."""
    rng = random.Random(world.seed * 31 + ci)
    n = len(q.types)
    seen = set()
    for _ in range(EXPLORE):
        db = gen.sqlite_db(world.case.tables)
        vg = LiteralValues(rng, q.sql())
        for tt in world.case.tables:
            used = set()
            for _ in range(rng.choice([0, 1, 3, 8, 15])):
                row = [vg.value(c) for c in tt.cols]
                if tt.pk is not None:
                    if row[tt.pk] in used:
                        continue
                    used.add(row[tt.pk])
                db.execute("INSERT INTO %s VALUES (%s)" % (tt.name, ",".join("?" * len(row))),
                           row)
        ids = [r[0] for r in db.execute("SELECT rowid FROM %s" % t.name)]
        if ids:
            r0 = fmt_rows(db.execute(q.sql()).fetchall(), q.letters())
            for rid in rng.sample(ids, rng.randint(1, len(ids))):
                db.execute("UPDATE %s SET %s = ? WHERE rowid = ?" % (t.name, t.cols[ci].name),
                           (vg.value(t.cols[ci]), rid))
            r1 = fmt_rows(db.execute(q.sql()).fetchall(), q.letters())
            before, after = columns_of(r0, n), columns_of(r1, n)
            seen |= {j for j in wanted if (before[j] != after[j] if j >= 0 else r0 != r1)}
        db.close()
        if seen >= set(wanted):
            break
    return seen


def test_lineage_explains_every_change_and_is_tight(tmp_path, http_pipeline, sluice):
    totals = Counter()
    unexplained, unconfirmed = [], []
    for seed in SEEDS:
        d = tmp_path / ("s%d" % seed)
        d.mkdir()
        w = World(seed, str(d), http_pipeline)
        cols, rows = deps(w.lin)
        # the JSON names every view and every column of it
        for i, q in w.queries:
            o = w.lin["views"]["q%d" % i]
            assert list(o["columns"]) == ["c%d" % j for j in range(len(q.types))], o
        triggered_cols, triggered_rows = set(), set()
        state = w.read()
        for t in w.case.tables:
            for ci, c in enumerate(t.cols):
                if c.pk:
                    continue  # keys stay unique: a changed key is another row
                src = (t.name.lower(), c.name.lower())
                for _ in range(TRIALS):
                    if not w.change(t, ci):
                        continue
                    totals["experiments"] += 1
                    new = w.read()
                    for v in new:
                        if new[v] == state[v]:
                            continue
                        triggered_rows.add((v, src))
                        n = len(dict(w.queries)[int(v[1:])].types)
                        a, b = columns_of(state[v], n), columns_of(new[v], n)
                        changed = [j for j in range(n) if a[j] != b[j]]
                        for j in changed:
                            triggered_cols.add((v, "c%d" % j, src))
                            if src not in cols[(v, "c%d" % j)] and src not in rows[v]:
                                unexplained.append("seed %d: %s.c%d changed with %s.%s: %s" % (
                                    seed, v, j, src[0], src[1], dict(w.queries)[int(v[1:])].sql()))
                        if not changed and not (any(src in cols[(v, "c%d" % j)]
                                                    for j in range(n)) or src in rows[v]):
                            unexplained.append("seed %d: rows of %s changed with %s.%s" % (
                                seed, v, src[0], src[1]))
                    state = new
        # tightness, and the identity/transformation promise
        todo = {}  # (view, source) -> [(column index or -1, kind)] to find by exploring
        for (v, cname), srcs in cols.items():
            for src, kind in srcs.items():
                totals["listed_" + kind] += 1
                if (v, cname, src) in triggered_cols:
                    totals["triggered_" + kind] += 1
                else:
                    todo.setdefault((v, src), []).append((int(cname[1:]), kind))
        for v, srcs in rows.items():
            for src in srcs:
                totals["listed_rows"] += 1
                if (v, src) in triggered_rows:
                    totals["triggered_rows"] += 1
                else:
                    todo.setdefault((v, src), []).append((-1, "rows"))
        for (v, src), wanted in sorted(todo.items()):
            t = next(t for t in w.case.tables if t.name.lower() == src[0])
            ci = next(k for k, c in enumerate(t.cols) if c.name.lower() == src[1])
            if t.cols[ci].pk:
                for _, kind in wanted:
                    totals["key_" + kind] += 1
                continue
            q = dict(w.queries)[int(v[1:])]
            seen = explore(w, q, t, ci, [j for j, _ in wanted])
            for j, kind in wanted:
                if j in seen:
                    totals["explored_" + kind] += 1
                elif kind in ("identity", "transformation"):
                    unconfirmed.append("seed %d: %s.c%d listed %s from %s.%s, never changed: %s"
                                       % (seed, v, j, kind, src[0], src[1], q.sql()))
        totals["views"] += len(w.queries)
        w.p.stop()
    print("lineage: %d views over %d seeds, %d update experiments through the pipeline; "
          "the rest explored in SQLite over %d random inputs each" % (
              totals["views"], len(SEEDS), totals["experiments"], EXPLORE))
    for k in ("identity", "transformation", "aggregation", "rows"):
        n = totals["listed_" + k] - totals["key_" + k]
        hit = totals["triggered_" + k] + totals["explored_" + k]
        print("lineage: %-14s listed %4d, triggered %4d (pipeline %d, SQLite %d), never %4d "
              "(%.0f%%); on PRIMARY KEY columns (not changed) %d" % (
                  k, n, hit, totals["triggered_" + k], totals["explored_" + k], n - hit,
                  100.0 * (n - hit) / max(n, 1), totals["key_" + k]))
    for u in unconfirmed:
        print("lineage: untriggered " + u)
    assert totals["experiments"] > 0 and totals["views"] >= len(SEEDS) * 4
    assert not unexplained, "changes the lineage does not explain:\n" + "\n".join(unexplained)
    # identity/transformation: changing the source changes the column for
    # some input. The exceptions are conditions that can never hold but
    # are not constant (HAVING MIN('a ') IS NULL, x = 6 / x) and branches
    # that give the same value either way (CASE WHEN b THEN id ELSE id):
    # printed above, bounded here (the seeds are fixed, so is the count).
    # SLUICE_LINEAGE_SEEDS hunts for counterexamples to the first property
    # over other seeds: the second is reported there, not bounded.
    direct = sum(totals["listed_" + k] - totals["key_" + k] for k in ("identity", "transformation"))
    assert len(unconfirmed) <= 0.15 * direct or os.environ.get("SLUICE_LINEAGE_SEEDS"), \
        "identity/transformation never observed:\n" + "\n".join(unconfirmed)


# ---------------------------------------------------------------- the bank program

BANK = os.path.join(ROOT, "examples", "bank.sql")


def test_bank_lineage_is_as_documented(sluice):
    p = run(["lineage", BANK])
    assert p.returncode == 0, p.stderr
    lin = json.loads(p.stdout)
    tx = lambda c, k: {"table": "transactions", "column": c, "kind": k}  # noqa: E731
    assert lin["views"]["balance"] == {
        "columns": {"account": [tx("to_account", "identity")],
                    "balance": [tx("amount", "aggregation")]},
        "rows": [tx("from_account", "join_key"), tx("from_account", "group_key"),
                 tx("to_account", "join_key"), tx("to_account", "group_key")],
        "reads": ["credits", "debits"],  # for a drawing (test_console_lineage.py)
    }
    assert lin["views"]["credits"]["columns"] == {
        "account": [tx("to_account", "identity")], "credits": [tx("amount", "aggregation")]}
    assert lin["views"]["credits"]["rows"] == [tx("to_account", "group_key")]
    assert list(lin["views"]) == ["credits", "debits", "balance"]
    # ts influences nothing
    p = run(["lineage", BANK, "--impact", "transactions.ts"])
    assert p.returncode == 0 and "nothing" in p.stdout, p.stdout
    p = run(["lineage", BANK, "--impact", "TRANSACTIONS.amount", "--format", "json"])
    imp = json.loads(p.stdout)
    assert imp["source"] == "transactions.amount"
    assert imp["columns"] == [{"view": "credits", "column": "credits", "kind": "aggregation"},
                              {"view": "debits", "column": "debits", "kind": "aggregation"},
                              {"view": "balance", "column": "balance", "kind": "aggregation"}]
    assert imp["rows"] == []
    p = run(["lineage", BANK, "--impact", "transactions.from_account"])
    assert "rows of balance (join_key, group_key)" in p.stdout, p.stdout
    assert "column debits.account (identity)" in p.stdout, p.stdout


def test_dot_and_openlineage_exports(sluice):
    p = run(["lineage", BANK, "--format", "dot"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("digraph lineage {") and p.stdout.rstrip().endswith("}")
    assert "sluice_errors" not in p.stdout  # the pipeline's own table, read by no view
    assert 'label="aggregation"' in p.stdout and "style=dotted" in p.stdout
    p = run(["lineage", BANK, "--format", "openlineage"])
    ev = json.loads(p.stdout)
    assert ev["job"] == {"namespace": "sluice", "name": "bank"}
    assert [d["name"] for d in ev["inputs"]] == ["transactions"]
    out = {d["name"]: d for d in ev["outputs"]}
    cl = out["balance"]["facets"]["columnLineage"]
    assert cl["_schemaURL"].endswith("ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet")
    f = cl["fields"]["balance"]["inputFields"]
    assert [(x["name"], x["field"], x["transformations"][0]["type"],
             x["transformations"][0]["subtype"]) for x in f] == [
        ("transactions", "amount", "DIRECT", "AGGREGATION")]
    assert {(x["field"], x["transformations"][0]["subtype"]) for x in cl["dataset"]} == {
        ("from_account", "JOIN"), ("from_account", "GROUP_BY"), ("to_account", "JOIN"),
        ("to_account", "GROUP_BY")}


def test_get_lineage_on_a_running_pipeline_is_the_cli_json(http_pipeline, sluice):
    p = http_pipeline(open(BANK).read(), "--paused", name="bank")
    r = requests.get(p.url("/lineage"), timeout=60)
    assert r.status_code == 200, r.text
    assert r.json() == json.loads(run(["lineage", BANK]).stdout)
    p.stop()


def test_operators_through_the_planner(tmp_path, sluice):
    """Kinds and row deciders through outer joins, set operations,
    subqueries, windows, top-k and TUMBLE, views over views."""
    prog = tmp_path / "ops.sql"
    prog.write_text("""
CREATE TABLE t (a INT, b INT, s VARCHAR, ts TIMESTAMP);
CREATE TABLE u (k INT, v INT);
CREATE VIEW lj AS SELECT t.a, u.v, COALESCE(u.v, 0) + 1 AS w FROM t LEFT JOIN u ON t.a = u.k;
CREATE VIEW st AS SELECT a FROM t EXCEPT SELECT k FROM u;
CREATE VIEW sq AS SELECT a, (SELECT MAX(v) FROM u) AS mv FROM t WHERE b IN (SELECT k FROM u);
CREATE VIEW win AS SELECT a, SUM(b) OVER (PARTITION BY s ORDER BY a) AS sb FROM t;
CREATE VIEW topk AS SELECT a, b FROM t ORDER BY b DESC LIMIT 3;
CREATE VIEW tum AS SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts),
    INTERVAL '1' HOUR)) GROUP BY window_start;
CREATE VIEW vv AS SELECT w * 2 AS w2 FROM lj WHERE a > 0;
""")
    p = run(["lineage", prog])
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)["views"]

    def col(view, c):
        return {(e["table"], e["column"]): e["kind"] for e in v[view]["columns"][c]}

    def rows(view):
        return {(e["table"], e["column"], e["kind"]) for e in v[view]["rows"]}
    assert col("lj", "a") == {("t", "a"): "identity"}
    assert col("lj", "v") == {("u", "v"): "identity"}
    assert col("lj", "w") == {("u", "v"): "transformation"}
    assert ("t", "a", "join_key") in rows("lj") and ("u", "k", "join_key") in rows("lj")
    assert col("st", "a") == {("t", "a"): "identity"}
    assert ("u", "k", "group_key") in rows("st") or ("u", "k", "join_key") in rows("st")
    assert col("sq", "mv") == {("u", "v"): "aggregation"}
    assert ("t", "b", "join_key") in rows("sq") and ("u", "k", "join_key") in rows("sq")
    assert col("win", "sb") == {("t", "b"): "aggregation"}
    assert ("t", "s", "group_key") in rows("win") and ("t", "a", "order") in rows("win")
    assert ("t", "b", "order") in rows("topk")
    assert col("tum", "window_start") == {("t", "ts"): "transformation"}
    assert ("t", "ts", "group_key") in rows("tum")
    assert col("tum", "n") == {}
    assert col("vv", "w2") == {("u", "v"): "transformation"}
    assert ("t", "a", "filter") in rows("vv")


def test_errors_are_printed_like_the_other_subcommands(tmp_path, sluice):
    p = run(["lineage", str(tmp_path / "missing.sql")])
    assert p.returncode == 1 and "cannot open" in p.stderr, p.stderr
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELECT nope FROM t;\n")
    p = run(["lineage", str(bad)])
    assert p.returncode == 1 and p.stderr.startswith(str(bad) + ":2:"), p.stderr
    p = run(["lineage", BANK, "--impact", "transactions.nope"])
    assert p.returncode == 1 and 'no column named "nope"' in p.stderr, p.stderr
    p = run(["lineage", BANK, "--format", "yaml"])
    assert p.returncode == 2 and "--format" in p.stderr
    p = run(["lineage"])
    assert p.returncode == 2

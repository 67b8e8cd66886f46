"""Memory: the breakdown of /stats, /metrics and `sluice stats --format
memory`, and the memory budget (docs/memory.md).

  * The bank example (300K generated transactions) plus a join view: every
    stateful node that `sluice check` lists appears in /stats' "memory"
    operators and in /metrics; state_bytes is within a sane factor of the
    resident memory the run added; the join's row count is the number of
    transactions (its trace holds them all); the join view's count equals
    the independent count of transactions (every account matches).
  * A join, an aggregate over it and a DISTINCT under a 400K limit with small
    steps (so state spills after most steps and is read back by the next)
    give byte-identical dumps to the same run without a limit, and the
    order count SQLite computes from the generator's rows.
"""
import json
import os
import re
import subprocess

import requests

from conftest import EXAMPLES, REPO, read_dump, run_ok, sluice_bin, wait_until

BANK_ROWS = 300000


def bank_with_join():
    with open(os.path.join(EXAMPLES, "bank.sql")) as f:
        text = f.read()
    text, n = re.subn(r'("limit"\s*:\s*)100000000\b', r"\g<1>%d" % BANK_ROWS, text)
    assert n == 1
    # (the view reads t.ts, distinct in every transaction, so the join keeps
    # one row per transaction: join narrowing keeps only the columns read
    # after the join, and (from_account, amount) alone repeat, their
    # copies kept as one row of a larger weight)
    text += """
CREATE TABLE accounts (id INT NOT NULL, tier INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 3, "plan": [{"limit": 10,
    "fields": {"tier": {"strategy": "uniform", "range": [0, 3]}}}]}}}]');
CREATE MATERIALIZED VIEW tier_volume AS
SELECT a.tier, COUNT(*) AS n, SUM(t.amount) AS s, SUM(EXTRACT(SECOND FROM t.ts)) AS secs
FROM transactions t JOIN accounts a ON t.from_account = a.id
GROUP BY a.tier;
"""
    return text


STATEFUL = ("join", "aggregate", "distinct", "sink", "upsert", "top-k", "window")


def stateful_nodes(prog):
    r = run_ok(["check", prog])
    nodes = {}
    for m in re.finditer(r"^\s+(\d+): ([a-z-]+)\(", r.stdout, re.M):
        if m.group(2) in STATEFUL:
            nodes[int(m.group(1))] = m.group(2)
    return nodes


def test_memory_breakdown_lists_every_operator_and_counts_the_state(http_pipeline):
    p = http_pipeline(bank_with_join(), "--paused", "--step-rows", "20000")
    nodes = stateful_nodes(str(p.prog))
    assert "join" in nodes.values() and "aggregate" in nodes.values()
    rss0 = requests.get(p.url("/stats"), timeout=60).json()["memory"]["rss_bytes"]
    assert requests.post(p.url("/start"), timeout=60).status_code == 200

    def done():
        s = requests.get(p.url("/stats"), timeout=60).json()
        if not s["global_metrics"]["pipeline_complete"]:
            return None
        ops = {o["node"]: o for o in s["memory"]["operators"]}
        joins = [o for o in ops.values() if o["kind"] == "join"]
        # the walk is throttled: wait for one after the last step
        return s if joins and joins[0]["rows"] == BANK_ROWS + 10 else None
    s = wait_until(done, "the pipeline's end and its memory figures", hang_guard=240)
    m = s["memory"]
    # (the run adds the sluice_errors table, which `check` does not show)
    ops = {o["node"]: o for o in m["operators"] if o["relation"] != "sluice_errors"}
    assert {n: o["kind"] for n, o in ops.items()} == nodes
    for o in m["operators"]:
        # (a sink of a view neither materialized nor output keeps nothing)
        assert o["bytes_in_memory"] > 0 or o["kind"] == "sink", o
        assert o["bytes_on_disk"] == 0 and o["rows"] >= 0
    # most bytes first
    sizes = [o["bytes_in_memory"] for o in m["operators"]]
    assert sizes == sorted(sizes, reverse=True)
    assert m["operators"][0]["kind"] == "join"
    # state_bytes counts all state, and within a sane factor of what the run added
    assert m["state_bytes"] == sum(sizes) == s["global_metrics"]["state_bytes"]
    grown = m["rss_bytes"] - rss0
    assert grown > 0 and grown / 20 <= m["state_bytes"] <= 2 * grown, (m["state_bytes"], grown)
    assert m["limit_source"] in ("cgroup", "meminfo") and m["limit_bytes"] > 0
    assert m["step_arena_bytes"] > 0 and m["pressure"] is None
    rels = {r["name"]: r for r in m["relations"]}
    assert rels["tier_volume"]["operators"] == 3  # join, aggregate, sink
    # the join view against an independent count: every transaction matches
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT SUM(n) AS n FROM tier_volume", timeout=60)
    assert q.status_code == 200, q.text
    assert json.loads(q.text.splitlines()[0])["n"] == BANK_ROWS
    # /metrics: one gauge per stateful node
    text = requests.get(p.url("/metrics"), timeout=60).text
    got = set(int(x) for x in re.findall(r'^sluice_operator_memory_bytes\{node="(\d+)"', text,
                                         re.M))
    assert got == set(o["node"] for o in m["operators"]) and set(nodes) <= got
    # sluice stats --format memory: the top consumer first
    r = subprocess.run([sluice_bin(), "stats", p.base, "--format", "memory"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("memory limit ")
    assert re.match(r"spilled runs 0 \(0 on disk, 0 merged away\), spill cache ", lines[2]), lines
    head = lines.index(next(l for l in lines if l.startswith("node ")))
    assert lines[head + 1].split()[1] == "join"
    p.stop()


JOIN = """
CREATE TABLE customers (id INT NOT NULL, region INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 1, "plan": [{"limit": 2000,
    "fields": {"region": {"strategy": "uniform", "range": [0, 10]}}}]}}}]');
CREATE TABLE orders (id BIGINT NOT NULL, customer INT NOT NULL, amount INT NOT NULL)
WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 2, "plan": [{"limit": 100000,
    "fields": {"customer": {"strategy": "uniform", "range": [0, 2000]},
               "amount": {"strategy": "uniform", "range": [1, 100]}}}]}}}]');
CREATE MATERIALIZED VIEW sales_by_region AS
SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS orders
FROM orders o JOIN customers c ON o.customer = c.id
GROUP BY c.region;
CREATE MATERIALIZED VIEW pairs AS SELECT DISTINCT customer % 50 AS c, amount FROM orders;
"""


def test_join_under_a_small_memory_limit_spills_and_equals_the_run_without(tmp_path):
    prog = tmp_path / "join.sql"
    prog.write_text(JOIN)
    dumps = {}
    # small blocks, and every run may spill: the DISTINCT's small trace too,
    # which every step probes
    os.environ["SLUICE_SPILL_BLOCK"], os.environ["SLUICE_SPILL_MIN_RUN"] = "4096", "0"
    try:
        cfg = tmp_path / "cfg.json"
        cfg.write_text(json.dumps({"memory_limit": "400K"}))  # as --memory-limit 400K
        for name, extra in (("free", ["--memory-limit", "none"]),
                            ("limited", ["--config", str(cfg)])):
            d = tmp_path / name
            r = run_ok(["run", str(prog), "--until-done", "--no-progress", "--step-rows", "5000",
                        "--dump", str(d)] + extra, timeout=300)
            dumps[name] = (d, r)
    finally:
        del os.environ["SLUICE_SPILL_BLOCK"], os.environ["SLUICE_SPILL_MIN_RUN"]
    free, limited = dumps["free"], dumps["limited"]
    assert "spilled" not in free[1].stderr
    m = re.search(r"sluice: memory: (\d+) trace runs spilled under the limit of 0\.4 MB; "
                  r"spilled blocks read (\d+) times from the cache, (\d+) from files",
                  limited[1].stderr)
    assert m and int(m.group(1)) > 0 and int(m.group(3)) > 0, limited[1].stderr
    for v in ("sales_by_region", "pairs"):
        a = (free[0] / (v + ".csv")).read_bytes()
        b = (limited[0] / (v + ".csv")).read_bytes()
        assert a == b, v
    # independent: every order has its customer (ids 0..1999), so the
    # join counts every order once; every (c, amount) pair of 50 x 99
    # values shows up among 100000 uniform orders
    _, rows = read_dump(str(limited[0] / "sales_by_region.csv"))
    assert sum(int(r[2]) for r in rows) == 100000
    assert len(read_dump(str(limited[0] / "pairs.csv"))[1]) == 50 * 99


GROWING = """
CREATE TABLE t (id BIGINT NOT NULL, v INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 4, "plan": [{"limit": 200000,
    "fields": {"v": {"strategy": "uniform", "range": [0, 1000]}}}]}}}]');
CREATE MATERIALIZED VIEW everything AS SELECT id, v FROM t;
"""


def test_state_that_cannot_spill_past_the_limit_pauses_the_inputs_and_says_why(http_pipeline):
    # a materialized view's contents spill, but the index of its spilled
    # runs (the first row of each block) stays in memory: with blocks of 64
    # bytes (a row or two) that index alone passes 256K, the inputs pause,
    # /status and the log name the operator, and the pipeline stays up
    # (queries answer, reading the spilled contents; a stop ends it cleanly)
    env = {"SLUICE_SPILL_BLOCK": "64", "SLUICE_SPILL_MIN_RUN": "0"}
    os.environ.update(env)
    try:
        p = http_pipeline(GROWING, "--memory-limit", "256K", "--step-rows", "2000")
    finally:
        for k in env:
            del os.environ[k]

    def stalled():
        s = requests.get(p.url("/status"), timeout=60).json()
        return s if s["stalled"] else None
    s = wait_until(stalled, "the inputs pausing for memory", hang_guard=120)
    assert s["stalled"]["reason"] == "memory" and s["state"] == "running"
    msg = s["stalled"]["message"]
    assert "exceeds the memory limit (262144 bytes)" in msg and "sink of everything" in msg, msg
    assert msg.endswith("; cannot spill: spilled runs' indexes, the distinct emit_final "
                        "values of spilled rows"), msg
    assert "sluice: memory: state that cannot spill" in p.stderr()
    assert "inputs are paused" in p.stderr()
    st = requests.get(p.url("/stats"), timeout=60).json()
    assert st["memory"]["pressure"] == msg
    done = st["global_metrics"]["total_processed_records"]
    assert 0 < done < 200000
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT COUNT(*) AS n FROM everything", timeout=60)
    assert q.status_code == 200 and json.loads(q.text)["n"] == done
    p.stop()


def test_a_bad_memory_limit_is_refused(tmp_path):
    prog = tmp_path / "p.sql"
    prog.write_text("CREATE TABLE t (x INT);\n")
    for bad in ("12X", "-1", "", "0"):
        r = subprocess.run([sluice_bin(), "run", str(prog), "--memory-limit", bad],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "--memory-limit needs a size" in r.stderr, (bad, r.stderr)
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"memory_limit": True}))
    r = subprocess.run([sluice_bin(), "run", str(prog), "--config", str(cfg)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and 'bad or unknown setting "memory_limit"' in r.stderr, r.stderr


def spill_run_counts(p):
    """Once the pipeline has ended its input: /stats' spilled-run counts
    (runs written by spilling, runs on disk now, merges)."""
    def done():
        s = requests.get(p.url("/stats"), timeout=60).json()
        return s if s["global_metrics"]["pipeline_complete"] else None
    m = wait_until(done, "the end of the input", hang_guard=240)["memory"]
    return m["spilled_runs"], m["spilled_runs_on_disk"], m["spilled_runs_merged"]


def test_spilled_runs_are_merged_so_few_stay_on_disk(http_pipeline):
    # the same spilling run twice: with merges (the default) the runs on
    # disk stay few (k runs merged into one count k - 1 merged away); with
    # SLUICE_SPILL_MERGE=0 every run spilled stays on disk
    os.environ["SLUICE_SPILL_BLOCK"], os.environ["SLUICE_SPILL_MIN_RUN"] = "4096", "0"
    try:
        counts = {}
        for merge in ("1", "0"):
            os.environ["SLUICE_SPILL_MERGE"] = merge
            # (600K: without merges the index of every spilled run stays in
            # memory and counts as state that cannot spill; with the
            # pairs' sink it passes 400K there and the inputs would pause)
            p = http_pipeline(JOIN, "--memory-limit", "600K", "--step-rows", "5000",
                              name="merge" + merge)
            # merges between steps may still move the figures once the
            # input has ended: /stats and /metrics are compared once they
            # hold still (the same counts read before and after /metrics)
            def agreed():
                c = spill_run_counts(p)
                text = requests.get(p.url("/metrics"), timeout=60).text
                if spill_run_counts(p) != c:
                    return None
                return c, text
            counts[merge], text = wait_until(agreed, "the spill figures to settle")
            assert "sluice_spilled_runs_on_disk %d\n" % counts[merge][1] in text, text
            assert "sluice_spilled_runs_merged_total %d\n" % counts[merge][2] in text, text
            q = requests.post(p.url("/query"), params={"format": "json"},
                              data="SELECT SUM(orders) AS n FROM sales_by_region", timeout=60)
            assert q.status_code == 200 and json.loads(q.text)["n"] == 100000, q.text
            p.stop()
    finally:
        for k in ("SLUICE_SPILL_BLOCK", "SLUICE_SPILL_MIN_RUN", "SLUICE_SPILL_MERGE"):
            del os.environ[k]
    spilled, on_disk, merged = counts["1"]
    assert spilled > 20 and merged > 0, counts
    assert on_disk <= spilled - merged, counts
    # size tiers (a factor 4 each) of fewer than four runs: O(log) runs per
    # trace (three traces here: the join's two sides and the DISTINCT's)
    assert on_disk <= 3 * 3 * (spilled.bit_length() // 2 + 1), counts
    spilled0, on_disk0, merged0 = counts["0"]
    assert merged0 == 0 and on_disk0 == spilled0 and on_disk0 > on_disk, counts


EXPLOSION = """
CREATE TABLE a (k INT NOT NULL, x INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 5, "plan": [{"limit": 4000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE TABLE b (k INT NOT NULL, y INT NOT NULL) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 6, "plan": [{"limit": 4000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 1]}}}]}}}]');
CREATE MATERIALIZED VIEW small AS SELECT COUNT(*) AS n FROM a;
CREATE MATERIALIZED VIEW pairs AS SELECT a.x, b.y FROM a JOIN b ON a.k = b.k;
"""


def test_a_step_whose_join_explodes_pauses_the_inputs_and_names_the_join(http_pipeline):
    # 4000 x 4000 rows of one key: 16M output rows in the first step, far
    # more than a 64M limit leaves. The step is undone, tried once more after
    # spilling, then its input waits: /status names the join, the pipeline
    # stays up (queries, /stats) and a stop ends it cleanly
    p = http_pipeline(EXPLOSION, "--memory-limit", "64M")

    def stalled():
        s = requests.get(p.url("/status"), timeout=60).json()
        return s if s["stalled"] else None
    # (the step and its retry build millions of pairs before they stop: on
    # a loaded machine that took 222 s of wall clock in the release build;
    # the guard is for a hang only)
    s = wait_until(stalled, "the inputs pausing for memory", hang_guard=1800)
    assert s["stalled"]["reason"] == "memory" and s["state"] == "running"
    msg = s["stalled"]["message"]
    assert "step 1 needs more memory than the limit (67108864 bytes) leaves" in msg, msg
    assert "(join of pairs)" in msg, msg
    assert "inputs are paused" in p.stderr()
    st = requests.get(p.url("/stats"), timeout=60).json()
    assert st["memory"]["pressure"] == msg
    assert st["global_metrics"]["total_processed_records"] == 0  # the step was undone
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT COUNT(*) AS n FROM small", timeout=60)
    assert q.status_code == 200, q.text
    assert "not run" not in p.stderr()
    p.stop()
    assert "the step that does not fit the memory limit is not run (8000 input records)" \
        in p.stderr()


def test_min_max_value_sets_spill_and_do_not_pause_the_inputs(http_pipeline, tmp_path):
    # MIN/MAX keep every value of each group (traces, which can spill); the
    # groups themselves are few. Under a 256K limit the value sets (several
    # MB on disk, their index of blocks in memory alone more than the
    # limit) spill and the pipeline completes: only the groups count as
    # state that cannot spill (they all did once: the inputs paused). The
    # view equals SQLite's over the same rows.
    import random
    import sqlite3
    from conftest import csv_input, write_csv
    rng = random.Random(7)
    rows = [(i, rng.randrange(10), rng.randrange(10 ** 9), rng.randrange(10 ** 9),
             rng.randrange(10 ** 9)) for i in range(100000)]
    path = tmp_path / "t.csv"
    write_csv(path, rows)
    prog = """
CREATE TABLE t (id BIGINT NOT NULL, g INT NOT NULL, v BIGINT NOT NULL, w BIGINT NOT NULL,
                x BIGINT NOT NULL) %s;
CREATE MATERIALIZED VIEW ext AS SELECT g, MIN(v) AS lo, MAX(v) AS hi, MIN(w) AS wlo,
  MAX(w) AS whi, MIN(x) AS xlo, MAX(x) AS xhi, COUNT(*) AS n
FROM t GROUP BY g;
""" % csv_input(path)
    os.environ["SLUICE_SPILL_BLOCK"] = "4096"
    try:
        p = http_pipeline(prog, "--memory-limit", "256K", "--step-rows", "5000")
    finally:
        del os.environ["SLUICE_SPILL_BLOCK"]

    def ended():
        s = requests.get(p.url("/status"), timeout=60).json()
        if s["stalled"]:
            return ("stalled", s["stalled"])
        st = requests.get(p.url("/stats"), timeout=60).json()
        return ("complete", st) if st["global_metrics"]["pipeline_complete"] else None
    how, st = wait_until(ended, "the input read, or the inputs pausing", hang_guard=300)
    assert how == "complete", st
    s = requests.get(p.url("/status"), timeout=60).json()
    assert not s["stalled"], s
    m = st["memory"]
    agg = [o for o in m["operators"] if o["kind"] == "aggregate" and o["relation"] == "ext"]
    assert agg and agg[0]["bytes_on_disk"] > 0 and m["spilled_runs"] > 0, m
    q = requests.post(p.url("/query"), params={"format": "json"},
                      data="SELECT g, lo, hi, wlo, whi, xlo, xhi, n FROM ext", timeout=60)
    assert q.status_code == 200, q.text
    got = sorted(tuple(r[k] for k in ("g", "lo", "hi", "wlo", "whi", "xlo", "xhi", "n"))
                 for r in (json.loads(line) for line in q.text.splitlines() if line.strip()))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INT, g INT, v INT, w INT, x INT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    want = sorted(db.execute("SELECT g, MIN(v), MAX(v), MIN(w), MAX(w), MIN(x), MAX(x), "
                             "COUNT(*) FROM t GROUP BY g"))
    assert got == want
    p.stop()


def steps_of(stderr):
    m = re.search(r"done: .* (\d+) steps?,", stderr)
    assert m, stderr[-2000:]
    return int(m.group(1))


def test_default_steps_follow_what_a_join_emits_and_give_the_same_results(tmp_path):
    """Without --step-rows a backfill starts with 128K rows per worker and
    sizes its next steps by its step arenas (docs/memory.md): 400K rows
    in one 1M-row step before, several steps now; the dump equals the
    one-step run's (--step-rows 10000000)."""
    prog = tmp_path / "wide.sql"
    prog.write_text("""
CREATE TABLE t (id BIGINT NOT NULL, k BIGINT NOT NULL, s VARCHAR, u VARCHAR) WITH ('connectors' = '[{
  "transport": {"name": "datagen", "config": {"seed": 5, "plan": [{"limit": 400000,
    "fields": {"k": {"strategy": "uniform", "range": [0, 50000]},
               "s": {"strategy": "word"}, "u": {"strategy": "word"}}}]}}}]');
CREATE MATERIALIZED VIEW v AS
SELECT a.k, COUNT(*) AS n, MAX(LENGTH(a.s) + LENGTH(b.u)) AS m, SUM(a.id - b.id) AS d
FROM t a JOIN t b ON a.id = b.id
GROUP BY a.k;
""")
    dumps = {}
    for name, extra in (("auto", []), ("one", ["--step-rows", "10000000"])):
        out = tmp_path / name
        r = run_ok(["run", str(prog), "--until-done", "--no-progress", "--dump", str(out)] + extra,
                   timeout=600)
        dumps[name] = (read_dump(out / "v.csv"), steps_of(r.stderr))
    assert dumps["one"][1] == 1
    assert dumps["auto"][1] >= 2
    assert dumps["auto"][0] == dumps["one"][0]


def test_default_steps_count_what_stateful_operators_receive(tmp_path):
    """Steps are also sized by the records the stateful operators receive
    through the exchanges (docs/memory.md): a top-k over every bid of 1M
    Nexmark events (q19's shape) emits little into the step arenas, so
    its steps grew to 524K rows while each bid waited in the top-k's
    exchange buffer and its sorted batch too (4 steps, twice the peak
    memory of the state); counting those bytes keeps its steps near 150K
    rows (7 steps). The view equals a run in fixed steps of 100K rows."""
    with open(os.path.join(REPO, "bench", "nexmark", "q19.sql")) as f:
        text = f.read()
    text = re.sub(r'"events": \d+', '"events": 1000000', text)
    text = text.replace("CREATE VIEW q19", "CREATE MATERIALIZED VIEW q19")
    prog = tmp_path / "q19.sql"
    prog.write_text(text)
    release = os.environ.get("SLUICE_RELEASE", os.path.join(REPO, "build", "sluice"))
    dumps = {}
    for name, extra in (("auto", []), ("fixed", ["--step-rows", "100000"])):
        out = tmp_path / name
        r = run_ok(["run", str(prog), "--until-done", "--no-progress", "--dump", str(out)] + extra,
                   binary=release, timeout=900)
        dumps[name] = (read_dump(out / "q19.csv"), steps_of(r.stderr))
    assert dumps["fixed"][1] >= 10
    assert dumps["auto"][1] >= 6, dumps["auto"][1]
    assert dumps["auto"][0] == dumps["fixed"][0]


UNDONE = """
CREATE TABLE t (id BIGINT NOT NULL, g INT NOT NULL) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW v AS SELECT id, g, id * 3 AS x FROM t WHERE g <> 7;
CREATE MATERIALIZED VIEW per_g AS SELECT g, COUNT(*) AS n, SUM(id) AS s FROM t GROUP BY g;
"""


def test_a_step_undone_for_memory_leaves_nothing_behind_in_the_tables(http_pipeline, tmp_path):
    """One request of 100K rows under a 2 MB limit: the step passes what the
    limit leaves, is undone, everything spills and it runs again. The undo
    must withdraw every morsel the failed step fed (it stopped after the
    first one while the step's memory budget was spent, so the retry put
    the rest in the materialized table and view a second time)."""
    import sqlite3
    rows = [(i, i % 13) for i in range(100000)]
    p = http_pipeline(UNDONE, "--memory-limit", "2M", "--storage", tmp_path / "st")
    body = "".join(json.dumps({"insert": {"id": i, "g": g}}) + "\n" for i, g in rows)
    r = requests.post(p.url("/ingress/t"), params={"format": "json", "wait": "true"},
                      data=body.encode(), timeout=600)
    assert r.status_code == 200, r.text
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER, g INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)

    def check(p):
        for sql in ("SELECT COUNT(*), SUM(id) FROM t", "SELECT COUNT(*), SUM(x) FROM v",
                    "SELECT COUNT(*) FROM per_g"):
            got = requests.get(p.url("/query"), params={"sql": sql, "format": "csv"},
                               timeout=600)
            assert got.status_code == 200, got.text
            want = db.execute(sql.replace("FROM v", "FROM (SELECT id * 3 AS x FROM t "
                                                    "WHERE g <> 7)")
                              .replace("FROM per_g", "FROM (SELECT g FROM t GROUP BY g)")
                              ).fetchone()
            assert [int(x) for x in got.text.split()[-1].split(",")] == list(want), sql
        got = requests.get(p.url("/query"), params={"sql": "SELECT g, n, s FROM per_g",
                                                     "format": "csv"}, timeout=600)
        per_g = sorted(tuple(int(x) for x in l.split(",")) for l in got.text.split()[1:])
        assert per_g == sorted(db.execute("SELECT g, COUNT(*), SUM(id) FROM t GROUP BY g"))

    check(p)
    p.stop()  # a final checkpoint: what it saved is what the tables hold
    check(http_pipeline(UNDONE, "--memory-limit", "2M", "--storage", tmp_path / "st",
                        name="again"))


WAITED = """
CREATE TABLE a (k BIGINT NOT NULL, x INT NOT NULL);
CREATE TABLE b (k BIGINT NOT NULL, y INT NOT NULL);
CREATE MATERIALIZED VIEW n AS SELECT COUNT(*) AS n, SUM(a.x + b.y) AS s
FROM a JOIN b ON a.k = b.k;
"""


def test_stats_after_a_waited_push_show_the_state_after_the_spill(http_pipeline):
    """A wait=true push is answered after the spilling that follows its step,
    and after the figures of that spill are counted: /stats read right
    after it shows the push's rows in the state (more bytes in memory plus
    on disk than after the push before) and the join's traces spilled (a
    1 MB limit is below the process's own baseline: after each step
    everything that can spill goes to files, and what stays in memory is
    what cannot: run indexes and the one-row view, far less than the ~170 KB
    of join state one push adds). The push used to be answered first, and
    the figures then stayed those of a walk before the spill, or of an
    earlier step (the walk after the spill was throttled)."""
    import sqlite3
    os.environ["SLUICE_SPILL_MIN_RUN"], os.environ["SLUICE_SPILL_BLOCK"] = "0", "16384"
    try:
        p = http_pipeline(WAITED, "--memory-limit", "1M")
    finally:
        del os.environ["SLUICE_SPILL_MIN_RUN"], os.environ["SLUICE_SPILL_BLOCK"]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE a (k INTEGER, x INTEGER)")
    db.execute("CREATE TABLE b (k INTEGER, y INTEGER)")
    total, runs = 0, 0
    for i in range(10):
        for t, rows in (("a", [(k, k % 97) for k in range(i * 6000, i * 6000 + 6000)]),
                        ("b", [(k, k % 89) for k in range(i * 6000 + 3000, i * 6000 + 9000)])):
            col = "x" if t == "a" else "y"
            body = "".join(json.dumps({"insert": {"k": k, col: v}}) + "\n" for k, v in rows)
            r = requests.post(p.url("/ingress/" + t), params={"format": "json", "wait": "true"},
                              data=body.encode(), timeout=600)
            assert r.status_code == 200 and '"processed":true' in r.text, r.text
            db.executemany("INSERT INTO %s VALUES (?, ?)" % t, rows)
            m = requests.get(p.url("/stats"), timeout=60).json()["memory"]
            figures = {k: v for k, v in m.items() if not isinstance(v, (list, dict))}
            assert m["limit_bytes"] == 1 << 20 and not m["pressure"], figures
            # the push's rows are counted (the figures are not an earlier step's)
            assert m["state_bytes"] + m["state_on_disk_bytes"] > total, (i, t, total, figures)
            total = m["state_bytes"] + m["state_on_disk_bytes"]
            # ... as spilled (not the state before the spill)
            assert m["state_bytes"] < 64 << 10, (i, t, figures)
            assert m["spilled_runs"] > runs, (i, t, runs, figures)
            runs = m["spilled_runs"]
    got = requests.get(p.url("/query"), params={"sql": "SELECT n, s FROM n", "format": "csv"},
                       timeout=600)
    want = db.execute("SELECT COUNT(*), SUM(a.x + b.y) FROM a JOIN b ON a.k = b.k").fetchone()
    assert [int(x) for x in got.text.split()[-1].split(",")] == list(want), got.text

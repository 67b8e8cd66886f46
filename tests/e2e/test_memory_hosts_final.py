"""Memory with scale-out (--hosts 2) for programs that cannot undo a step
(docs/memory.md, "At the edge"): an emit_final view and a LEFT ASOF join.

Such a program's steps have no allowance, but every host measures them
now (the coordinator's STEP carries a bound no step reaches, so every
host bounds its steps the same way and the hosts agree after each phase,
runtime/worker.c): run on 2 hosts of 2 workers under --memory-limit 256K
with tiny spill blocks, the pipeline completes without pausing, host 1
spills its own emit_final holds and ASOF partitions (its end-of-run line),
and the dumps equal, as sorted rows, a run on one host without a limit
and SQLite's answers over the same rows.
"""
import json
import os
import random
import re
import shutil
import subprocess

import pytest

from conftest import json_input, mpi_env, read_dump, sluice_bin
from memkit import T0, sqlite_final_asof, ts_text

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

EVENTS, GROUPS, LEFT, RIGHT, KEYS = 12000, 200, 6000, 3000, 2000


def write_input(tmp):
    rng = random.Random(41)
    events, qrows, rrows, seen = [], [], [], set()
    for i in range(EVENTS):  # ~100 a minute, at most 15 minutes behind (lateness 1 hour)
        events.append((i, rng.randrange(GROUPS), rng.randrange(100),
                       T0 + i * 60 // 100 - rng.randrange(900)))
    for i in range(LEFT):
        qrows.append((i, rng.randrange(KEYS), rng.randrange(10 ** 6), rng.randrange(1000)))
    while len(rrows) < RIGHT:
        r = (rng.randrange(KEYS), rng.randrange(10 ** 6), rng.randrange(1000))
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            rrows.append(r)
    with open(tmp / "e.json", "w") as f:
        for i, g, v, t in events:
            f.write(json.dumps({"insert": {"id": i, "g": g, "v": v, "ts": ts_text(t)}}) + "\n")
    with open(tmp / "q.json", "w") as f:
        for r in qrows:
            f.write(json.dumps({"insert": dict(zip(("id", "k", "ts", "v"), r))}) + "\n")
    with open(tmp / "r.json", "w") as f:
        for r in rrows:
            f.write(json.dumps({"insert": dict(zip(("k", "ts", "p"), r))}) + "\n")
    return events, qrows, rrows


def program(tmp):
    return """
CREATE TABLE e (id BIGINT NOT NULL, g BIGINT NOT NULL, v BIGINT NOT NULL,
  ts TIMESTAMP NOT NULL LATENESS INTERVAL '1' HOUR) %s;
CREATE TABLE q (id BIGINT NOT NULL, k BIGINT NOT NULL, ts BIGINT NOT NULL, v BIGINT NOT NULL) %s;
CREATE TABLE r (k BIGINT NOT NULL, ts BIGINT NOT NULL, p BIGINT NOT NULL) %s;
CREATE MATERIALIZED VIEW f WITH ('emit_final' = 'window_start') AS
  SELECT window_start, g, COUNT(*) AS c, SUM(v) AS s
  FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, g;
CREATE VIEW j AS SELECT q.id, q.k, q.ts, q.v, r.ts AS rts, r.p
  FROM q LEFT ASOF JOIN r MATCH_CONDITION (q.ts >= r.ts) ON q.k = r.k;
CREATE MATERIALIZED VIEW j_summary AS SELECT k %% 16 AS b, COUNT(*) AS n, SUM(v) AS sv,
  SUM(COALESCE(p, -7)) AS sp, SUM(COALESCE(rts, -3)) AS st FROM j GROUP BY k %% 16;
""" % (json_input(tmp / "e.json"), json_input(tmp / "q.json"), json_input(tmp / "r.json"))


def run(tmp, dump, hosts, limit):
    e = dict(os.environ)
    e.update(mpi_env())
    e.update({"SLUICE_SPILL_BLOCK": "4096", "SLUICE_SPILL_MIN_RUN": "0"})
    args = [sluice_bin(), "run", str(tmp / "p.sql"), "--workers", str(hosts),
            "--step-rows", "1500", "--until-done", "--no-progress", "--dump", str(dump),
            "--memory-limit", limit]
    if hosts > 1:
        args += ["--hosts", str(hosts)]
    r = subprocess.run(args, capture_output=True, text=True, env=e, timeout=900)
    for m in ("Sanitizer", "runtime error:", "Segmentation fault"):
        assert m not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-4000:]
    return r.stderr


def rows(dump, name):
    _, recs = read_dump(dump / ("%s.csv" % name))
    return sorted(tuple(x) for x in recs)


def test_emit_final_and_asof_spill_on_every_host_and_match_one_host(tmp_path):
    events, qrows, rrows = write_input(tmp_path)
    (tmp_path / "p.sql").write_text(program(tmp_path))
    run(tmp_path, tmp_path / "one", 1, "none")
    err = run(tmp_path, tmp_path / "two", 2, "256K")
    assert "inputs are paused" not in err, err[-3000:]
    m = re.search(r"sluice: memory: host 1 \(.*\): (\d+) trace runs spilled under the limit", err)
    assert m and int(m.group(1)) > 0, err[-3000:]
    for v in ("f", "j_summary"):
        assert rows(tmp_path / "two", v) == rows(tmp_path / "one", v), v
    # the one-host run against SQLite
    want_f, want_j = sqlite_final_asof(
        events, qrows, rrows, 3600,
        "COUNT(*), SUM(q.v), SUM(COALESCE(r.p, -7)), SUM(COALESCE(r.ts, -3))")
    want_f = sorted(tuple(str(x) for x in r) for r in want_f)
    want_j = sorted(tuple(str(x) for x in r) for r in want_j)
    assert len(want_f) > 5000
    got_f = rows(tmp_path / "one", "f")
    got_j = rows(tmp_path / "one", "j_summary")
    assert sorted(tuple(x for x in r[:4]) for r in got_f) == want_f
    assert sorted(tuple(x for x in r[:5]) for r in got_j) == want_j

"""The program diff (issue 17 item 1; docs/bootstrapping.md): a storage
made by a real `sluice run --storage` with an old program, then `sluice diff
--storage DIR NEW.sql` (text and JSON) for edits whose classification the
test states itself; `sluice check OLD.sql NEW.sql`; the diff changes nothing
in the storage (not even while another process holds its lock); errors
name what is wrong and exit 1, a bad command line exits 2; a restart with
the changed program is refused without --bootstrap allow (test_bootstrap.py
has the rest). The same from an S3 bucket."""
import fcntl
import json
import os
import subprocess

from conftest import assert_no_crash, csv_input, run, run_ok, sluice_bin, write_csv


def old_program(tmp_path):
    t = tmp_path / "t.csv"
    u = tmp_path / "u.csv"
    write_csv(t, [[i, i % 7] for i in range(50)])
    write_csv(u, [[k, "n%d" % k] for k in range(10)])
    return {
        "t": "CREATE TABLE t (a INT, b INT) %s;" % csv_input(t),
        "u": "CREATE TABLE u (k INT PRIMARY KEY, name VARCHAR) %s;" % csv_input(u),
        "sums": "CREATE MATERIALIZED VIEW sums AS SELECT b, SUM(a) AS s FROM t GROUP BY b;",
        "named": "CREATE VIEW named AS SELECT sums.b, s, name FROM sums JOIN u ON sums.b = u.k;",
        "big": "CREATE VIEW big AS SELECT a FROM t WHERE a > 40;",
        "cnt": "CREATE MATERIALIZED VIEW cnt AS SELECT COUNT(*) AS n FROM u;",
    }


def write(path, stmts):
    path.write_text("\n".join(stmts) + "\n")
    return path


def make_storage(tmp_path, prog):
    old = write(tmp_path / "old.sql", prog.values())
    st = tmp_path / "storage"
    run_ok(["run", old, "--storage", st, "--until-done"])
    assert any(n.startswith("manifest-") for n in os.listdir(st))
    return old, st


def snapshot(d):
    out = {}
    for n in sorted(os.listdir(d)):
        s = os.stat(os.path.join(d, n))
        out[n] = (s.st_size, s.st_mtime_ns)
    return out


def by_name(j):
    return {r["name"]: r for r in j["relations"]}


def test_diff_of_a_real_storage(sluice, tmp_path):
    prog = old_program(tmp_path)
    old, st = make_storage(tmp_path, prog)
    before = snapshot(st)

    # the same program, laid out differently: nothing changes
    same = write(tmp_path / "same.sql", [
        "-- comments, line breaks and keyword case do not count",
        prog["t"].replace("CREATE TABLE", "create   table"),
        prog["u"],
        "create materialized view SUMS as\n  select b, sum(a) as s\n  from t group by b;",
        prog["named"], prog["big"], prog["cnt"]])
    p = run_ok(["diff", "--storage", st, same])
    assert "6 unchanged, 0 added, 0 removed, 0 changed" in p.stdout
    j = json.loads(run_ok(["diff", "--storage", st, same, "--format", "json"]).stdout)
    assert j["changed"] is False
    assert {r["status"] for r in j["relations"]} == {"unchanged"}
    assert all(n["old"] is not None for n in j["nodes"])
    assert j["dropped_nodes"] == []

    # edits: change sums (over its kept aggregate), so named changes with it;
    # drop big; add a view over the materialized cnt, one over t (not
    # stored: t is read again), and a renamed copy of sums
    new = write(tmp_path / "new.sql", [
        prog["t"], prog["u"],
        "CREATE MATERIALIZED VIEW sums AS SELECT b, SUM(a) * 2 AS s FROM t GROUP BY b;",
        prog["named"], prog["cnt"],
        "CREATE VIEW cnt2 AS SELECT n + 1 AS m FROM cnt;",
        "CREATE VIEW small AS SELECT a FROM t WHERE a < 5;",
        "CREATE MATERIALIZED VIEW sums_copy AS SELECT b, SUM(a) AS s FROM t GROUP BY b;"])
    j = json.loads(run_ok(["diff", "--storage", st, new, "--format", "json"]).stdout)
    assert j["changed"] is True
    r = by_name(j)
    want = {  # name: (status, changes, action, reread)
        "t": ("unchanged", [], "keep", []),
        "u": ("unchanged", [], "keep", []),
        "sums": ("changed", ["definition"], "recompute", []),
        "named": ("changed", ["inputs"], "recompute", []),
        "cnt": ("unchanged", [], "keep", []),
        "cnt2": ("added", [], "recompute", []),
        "small": ("added", [], "reread", ["t"]),
        "sums_copy": ("added", [], "recompute", []),
        "big": ("removed", [], "drop", []),
    }
    assert set(r) == set(want)
    for name, (status, changes, action, reread) in want.items():
        got = r[name]
        assert (got["status"], got["changes"], got["action"], got["reread"]) == \
            (status, changes, action, reread), name
    assert r["named"]["inputs"] == ["sums"]
    assert r["t"]["reread_for"] == ["small"]
    assert j["counts"] == {"unchanged": 3, "added": 3, "removed": 1, "changed": 2}
    assert j["dropped_nodes"], "big's nodes are released"

    text = run_ok(["diff", "--storage", st, new]).stdout
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln and ln.split()[0] in want}
    assert "re-read from source: t" in lines["small"]
    assert "kept; read again for small" in lines["t"]
    assert "recomputed from stored state" in lines["sums"]
    assert "inputs (sums)" in lines["named"]
    assert "dropped" in lines["big"]
    assert "3 unchanged, 3 added, 1 removed, 2 changed" in text

    # `sluice check OLD NEW` prints the same table for two files
    c = run_ok(["check", old, new]).stdout
    assert c.split("\n\n", 1)[1] == text.split("\n\n", 1)[1]
    # `sluice check FILE` still prints the circuit
    assert "circuit:" in run_ok(["check", new]).stdout

    # a schema change: the table and everything over it are read again
    added_col = dict(prog)
    added_col["t"] = prog["t"].replace("(a INT, b INT)", "(a INT, b INT, c INT)")
    j = json.loads(run_ok(["diff", "--storage", st,
                           write(tmp_path / "col.sql", added_col.values()),
                           "--format", "json"]).stdout)
    r = by_name(j)
    assert (r["t"]["status"], r["t"]["changes"], r["t"]["action"]) == \
        ("changed", ["schema"], "reread")
    for v in ("sums", "named", "big"):
        assert (r[v]["changes"], r[v]["action"], r[v]["reread"]) == \
            (["inputs"], "reread", ["t"]), v
    assert r["cnt"]["status"] == "unchanged"

    # nothing in the storage changed, even while another process holds its lock
    fd = os.open(st, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run_ok(["diff", "--storage", st, new])
    finally:
        os.close(fd)
    assert snapshot(st) == before

    # restarting with the changed program is refused by default (item 2)
    p = run(["run", new, "--storage", st, "--until-done"])
    assert p.returncode == 1 and "not restarting with a changed program" in p.stderr
    assert snapshot(st) == before


def test_errors_and_usage(sluice, tmp_path):
    prog = old_program(tmp_path)
    old, st = make_storage(tmp_path, prog)
    # a compile error in the new program: file, line and column
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (a INT);\nCREATE VIEW v AS SELEC a FROM t;\n")
    p = run(["diff", "--storage", st, bad])
    assert p.returncode == 1 and "%s:2:18:" % bad in p.stderr
    p = run(["check", old, bad])
    assert p.returncode == 1 and "%s:2:18:" % bad in p.stderr
    # no storage, an empty one, a file that is not a directory
    p = run(["diff", "--storage", tmp_path / "nowhere", old])
    assert p.returncode == 1 and "No such file or directory" in p.stderr
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "empty").mkdir()
    p = run(["diff", "--storage", tmp_path / "empty", old])
    assert p.returncode == 1 and "holds no checkpoint" in p.stderr
    assert os.listdir(tmp_path / "empty") == []
    p = run(["diff", "--storage", old, old])
    assert p.returncode == 1 and "not a directory" in p.stderr
    # bad command lines
    for args in (["diff", old], ["diff", "--storage", st], ["diff", "--storage", st, old, old],
                 ["diff", "--storage", st, old, "--format", "xml"], ["check", old, old, old],
                 ["diff", "--storage", st, old, "--bogus"]):
        p = run(args)
        assert p.returncode == 2, args


def test_diff_of_an_s3_storage(sluice, tmp_path, s3):
    """The program read from a bucket through a temporary cache that is
    removed again; nothing in the bucket changes."""
    prog = old_program(tmp_path)
    old = write(tmp_path / "old.sql", prog.values())
    url = "s3://sluice-pd/diff-%d" % os.getpid()
    cache = tmp_path / "tmp"
    cache.mkdir()
    env = dict(os.environ, AWS_ACCESS_KEY_ID=s3.access_key, AWS_SECRET_ACCESS_KEY=s3.secret_key,
               AWS_REGION=s3.region, TMPDIR=str(cache))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")

    def sl(*args):
        p = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True,
                           env=env, timeout=300)
        p.stdout, p.stderr = p.stdout.decode(), p.stderr.decode()
        assert_no_crash(p)
        assert p.returncode == 0, p.stderr[-3000:]
        return p

    sl("run", old, "--until-done", "--storage", url, "--s3-endpoint", s3.endpoint)
    keys = s3.list_keys("sluice-pd", "diff-%d/" % os.getpid())
    assert any("manifest-" in k for k in keys), keys
    new = write(tmp_path / "new.sql", list(prog.values()) +
                ["CREATE VIEW cnt2 AS SELECT n * 2 AS m FROM cnt;"])
    j = json.loads(sl("diff", "--storage", url, "--s3-endpoint", s3.endpoint, new,
                      "--format", "json").stdout)
    assert j["counts"] == {"unchanged": 6, "added": 1, "removed": 0, "changed": 0}
    assert by_name(j)["cnt2"]["action"] == "recompute"
    assert s3.list_keys("sluice-pd", "diff-%d/" % os.getpid()) == keys
    assert os.listdir(cache) == []

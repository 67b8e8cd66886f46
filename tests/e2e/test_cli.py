"""The sluice command line: `check`, the --dump file format, output
connectors, --until-done and signals, --step-rows, --version.

Expected outputs are written out by hand (or computed here from the
documented format rules), never taken from an earlier Sluice run.
"""
import os
import re
import signal
import subprocess

import pytest

from conftest import (EXAMPLES, assert_no_crash, conn_clause, csv_input, csv_output, json_input,
                      read_dump, relation_types, run, run_ok, sluice_bin, wait_until)


def write(path, text):
    with open(path, "w", newline="") as f:
        f.write(text)
    return str(path)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------- check

def test_check_prints_bank_circuit(tmp_path):
    # check compiles only, it reads no input: given the bank program with
    # an endless generator (no limit), it must still finish
    bank = open(os.path.join(EXAMPLES, "bank.sql")).read()
    endless = bank.replace('"limit": 100000000,', "")
    assert endless != bank
    p = run_ok(["check", write(tmp_path / "bank.sql", endless)])
    out = p.stdout
    assert "relations:" in out and "circuit:" in out
    rels = relation_types(out)
    assert rels["transactions"] == [("from_account", "INT", True), ("to_account", "INT", True),
                                    ("amount", "INT", True), ("ts", "TIMESTAMP", True)]
    assert [c[:2] for c in rels["credits"]] == [("account", "INT"), ("credits", "BIGINT")]
    assert [c[:2] for c in rels["debits"]] == [("account", "INT"), ("debits", "BIGINT")]
    assert [c[:2] for c in rels["balance"]] == [("account", "INT"), ("balance", "BIGINT")]
    assert "view balance [materialized]" in out
    assert "[materialized]" not in [l for l in out.splitlines() if "view credits" in l][0]
    circuit = out[out.index("circuit:"):]
    assert "source transactions" in circuit
    assert circuit.count("aggregate") >= 2
    assert "join" in circuit
    for name in ("credits", "debits", "balance"):
        assert re.search(r"^\s*\d+: sink\(\d+\) %s\b" % name, circuit, re.M), circuit
    assert p.stderr.strip() == "" or "error" not in p.stderr.lower()


def test_check_accepts_all_connector_kinds(tmp_path):
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE a (x INT) %s;" % csv_input(tmp_path / "a.csv", headers=True),
        "CREATE TABLE b (x INT) %s;" % json_input(tmp_path / "b.json"),
        "CREATE MATERIALIZED VIEW v AS SELECT x FROM a UNION ALL SELECT x FROM b;",
        "CREATE VIEW o %s AS SELECT x FROM v;" % csv_output(tmp_path / "o.csv"),
    ]) + "\n")
    p = run_ok(["check", prog])
    rels = relation_types(p.stdout)
    assert set(rels) == {"a", "b", "v", "o"}


def test_version():
    p = run_ok(["--version"])
    assert "sluice" in p.stdout and any(ch.isdigit() for ch in p.stdout)


# ---------------------------------------------------------------- --dump format

def enc_str(s):
    if s == "" or any(c in s for c in ',"\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s


def test_dump_format_exact(tmp_path):
    # a, s, b, m DECIMAL(6,2), d DOUBLE, dt, ts ; CSV input text per row
    rows_in = [
        '1,x,true,1.5,2.5,2020-01-01,2020-01-01 10:00:00',
        '1,x,true,1.5,2.5,2020-01-01,2020-01-01 10:00:00',   # duplicate: weight 2
        '2,"a,b",false,-0.05,-1.25,2021-12-31,1999-12-31 23:59:59',
        '3,,,,,,',                                            # all NULL but a
        '4,"",false,0,100.0,2020-02-29,2020-02-29 00:00:00',  # empty string
        '5,"q""q",true,12.3,0.1,2020-03-01,2020-03-01 12:34:56',
        '6,"l1\nl2",false,-1,-0.5,2020-03-02,2020-03-02 01:02:03',
        '7,"cr\rx",true,999.99,3.0,2020-03-03,2020-03-03 00:00:01',
        '8, pad ,false,2.00,1.75,2020-03-04,2020-03-04 00:00:02',
        '9,b,true,0.01,-100.0,2020-03-05,2020-03-05 00:00:03',
        '10,B,false,-0.10,7.0,2020-03-06,2020-03-06 00:00:04',
    ]
    write(tmp_path / "t.csv", "".join(r + "\n" for r in rows_in))
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE t (a INT, s VARCHAR, b BOOLEAN, m DECIMAL(6,2), d DOUBLE, dt DATE, "
        "ts TIMESTAMP) WITH ('materialized' = 'true', %s);"
        % csv_input(tmp_path / "t.csv")[len("WITH ("):-1],
        "CREATE MATERIALIZED VIEW v AS SELECT * FROM t;",
        "CREATE MATERIALIZED VIEW names AS SELECT s FROM t;",
        "CREATE MATERIALIZED VIEW small AS SELECT a FROM t WHERE a < 3;",
        "CREATE VIEW hidden AS SELECT a FROM t;",
    ]) + "\n")
    dump = tmp_path / "dump"
    run_ok(["run", prog, "--until-done", "--dump", dump, "--no-progress"])
    assert sorted(os.listdir(dump)) == ["names.csv", "small.csv", "t.csv", "v.csv"]

    # The expected text, from the documented rules.
    S = [("1", "x", "true", "1.50", "2.5", "2020-01-01", "2020-01-01 10:00:00")] * 2 + [
        ("2", "a,b", "false", "-0.05", "-1.25", "2021-12-31", "1999-12-31 23:59:59"),
        ("3", None, None, None, None, None, None),
        ("4", "", "false", "0.00", "100", "2020-02-29", "2020-02-29 00:00:00"),
        ("5", 'q"q', "true", "12.30", "0.1", "2020-03-01", "2020-03-01 12:34:56"),
        ("6", "l1\nl2", "false", "-1.00", "-0.5", "2020-03-02", "2020-03-02 01:02:03"),
        ("7", "cr\rx", "true", "999.99", "3", "2020-03-03", "2020-03-03 00:00:01"),
        ("8", " pad ", "false", "2.00", "1.75", "2020-03-04", "2020-03-04 00:00:02"),
        ("9", "b", "true", "0.01", "-100", "2020-03-05", "2020-03-05 00:00:03"),
        ("10", "B", "false", "-0.10", "7", "2020-03-06", "2020-03-06 00:00:04"),
    ]

    def line(r):
        return ",".join("" if v is None else (enc_str(v) if i == 1 else v)
                        for i, v in enumerate(r)).encode()

    def expect(header, recs):
        return header.encode() + b"\n" + b"".join(x + b"\n" for x in sorted(recs))

    want_v = expect("a,s,b,m,d,dt,ts", [line(r) for r in S])
    assert read_bytes(dump / "v.csv") == want_v
    assert read_bytes(dump / "t.csv") == want_v
    want_names = expect("s", [(b"" if r[1] is None else enc_str(r[1]).encode()) for r in S])
    assert read_bytes(dump / "names.csv") == want_names
    assert read_bytes(dump / "small.csv") == b"a\n1\n1\n2\n"


def test_dump_value_formats(tmp_path):
    """Number and time formats that the exact test leaves out: DOUBLE
    shortest round trip (any exponent style), REAL, DECIMAL scale,
    fractional TIMESTAMP and TIME seconds."""
    write(tmp_path / "f.csv",
          "1e-7,0.1,-0.001,2020-01-01 00:00:00.5,00:00:00.25,-7\n"
          "0.30000000000000004,3.25,12345.678,2020-01-01 00:00:00.123456,23:59:59,127\n"
          "123456789012.5,,0,,,\n")
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE f (d DOUBLE, r REAL, m DECIMAL(8,3), ts TIMESTAMP, tm TIME, i TINYINT) "
        "%s;" % csv_input(tmp_path / "f.csv"),
        "CREATE MATERIALIZED VIEW v AS SELECT * FROM f;",
    ]) + "\n")
    run_ok(["run", prog, "--until-done", "--dump", tmp_path / "dump", "--no-progress"])
    header, recs = read_dump(str(tmp_path / "dump" / "v.csv"))
    assert header == ["d", "r", "m", "ts", "tm", "i"]
    by_d = {float(r[0]): r for r in recs}
    assert set(by_d) == {1e-7, 0.30000000000000004, 123456789012.5}
    r = by_d[1e-7]
    assert r[0].lower() in ("1e-07", "1e-7", "0.0000001")
    assert r[1] == "0.1" and r[2] == "-0.001" and r[5] == "-7"
    assert r[3] in ("2020-01-01 00:00:00.5", "2020-01-01 00:00:00.500000")
    assert r[4] in ("00:00:00.25", "00:00:00.250000")
    r = by_d[0.30000000000000004]
    assert r[0] == "0.30000000000000004" and r[1] == "3.25" and r[2] == "12345.678"
    assert r[3] == "2020-01-01 00:00:00.123456" and r[4] == "23:59:59" and r[5] == "127"
    r = by_d[123456789012.5]
    assert r[0] == "123456789012.5" and r[1] is None and r[2] == "0.000"


def test_global_aggregate_over_empty_input(tmp_path):
    write(tmp_path / "empty.csv", "")
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE t (a INT, s VARCHAR, d DOUBLE) %s;" % csv_input(tmp_path / "empty.csv"),
        "CREATE MATERIALIZED VIEW g AS SELECT COUNT(*) AS n, COUNT(a) AS na, SUM(a) AS sa, "
        "MIN(s) AS ms, AVG(d) AS ad FROM t;",
        "CREATE MATERIALIZED VIEW gg AS SELECT a, COUNT(*) AS n FROM t GROUP BY a;",
        "CREATE MATERIALIZED VIEW p AS SELECT a, s FROM t;",
    ]) + "\n")
    p = run_ok(["run", prog, "--until-done", "--dump", tmp_path / "dump", "--no-progress"])
    assert p.returncode == 0
    assert read_bytes(tmp_path / "dump" / "g.csv") == b"n,na,sa,ms,ad\n0,0,,,\n"
    assert read_bytes(tmp_path / "dump" / "gg.csv") == b"a,n\n"
    assert read_bytes(tmp_path / "dump" / "p.csv") == b"a,s\n"


def test_csv_headers_option(tmp_path):
    write(tmp_path / "h.csv", "a,s\n1,one\n2,two\n")
    write(tmp_path / "n.csv", "3,three\n")
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE h (a INT, s VARCHAR) %s;" % csv_input(tmp_path / "h.csv", headers=True),
        "CREATE TABLE n (a INT, s VARCHAR) %s;" % csv_input(tmp_path / "n.csv"),
        "CREATE MATERIALIZED VIEW v AS SELECT a, s FROM h UNION ALL SELECT a, s FROM n;",
    ]) + "\n")
    p = run_ok(["run", prog, "--until-done", "--dump", tmp_path / "dump", "--no-progress"])
    assert read_bytes(tmp_path / "dump" / "v.csv") == b"a,s\n1,one\n2,two\n3,three\n"
    assert "bad input" not in p.stderr


# ---------------------------------------------------------------- output connectors

def test_csv_output_connector_weights(tmp_path):
    """Each step's changes go to the output file as rows followed by their
    weight; with one input row per step, the deleted row shows up with -1
    and a count view shows each retraction of its old value."""
    events = ['{"insert": {"a": 1, "s": "x"}}', '{"insert": {"a": 2, "s": "y,z"}}',
              '{"delete": {"a": 1, "s": "x"}}', '{"insert": {"a": 3, "s": ""}}']
    write(tmp_path / "j.json", "".join(e + "\n" for e in events))
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE j (a INT, s VARCHAR) %s;" % json_input(tmp_path / "j.json"),
        "CREATE VIEW o %s AS SELECT a, s FROM j;" % csv_output(tmp_path / "o.csv"),
        "CREATE VIEW c %s AS SELECT COUNT(*) AS n FROM j;" % csv_output(tmp_path / "c.csv"),
    ]) + "\n")
    run_ok(["run", prog, "--until-done", "--no-progress", "--step-rows", 1])
    o = read_bytes(tmp_path / "o.csv").decode().splitlines()
    assert sorted(o) == sorted(['1,x,1', '2,"y,z",1', '1,x,-1', '3,"",1'])
    # the delete comes after the insert it cancels
    assert o.index("1,x,1") < o.index("1,x,-1")
    c = read_bytes(tmp_path / "c.csv").decode().splitlines()
    assert sorted(c) == sorted(["1,1", "1,-1", "2,1", "2,-1", "1,1", "1,-1", "2,1"])
    net = {}
    for l in c:
        v, w = l.split(",")
        net[v] = net.get(v, 0) + int(w)
    assert {k: v for k, v in net.items() if v} == {"2": 1}


def test_json_output_connector(tmp_path):
    write(tmp_path / "t.csv", "1,a\n2,\n")
    c = [{"transport": {"name": "file_output", "config": {"path": str(tmp_path / "o.json")}},
          "format": {"name": "json"}}]
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE t (a INT, s VARCHAR) %s;" % csv_input(tmp_path / "t.csv"),
        "CREATE VIEW o %s AS SELECT a, s FROM t;" % conn_clause(c),
    ]) + "\n")
    run_ok(["run", prog, "--until-done", "--no-progress"])
    import json
    objs = [json.loads(l) for l in read_bytes(tmp_path / "o.json").decode().splitlines() if l]
    assert sorted(objs, key=repr) == sorted([{"insert": {"a": 1, "s": "a"}},
                                             {"insert": {"a": 2, "s": None}}], key=repr)


# ---------------------------------------------------------------- run modes

def simple_prog(tmp_path):
    write(tmp_path / "t.csv", "1\n2\n3\n")
    return write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE t (a INT) %s;" % csv_input(tmp_path / "t.csv"),
        "CREATE MATERIALIZED VIEW v AS SELECT SUM(a) AS s, COUNT(*) AS n FROM t;",
    ]) + "\n")


def test_until_done_exits_0_with_summary(tmp_path):
    prog = simple_prog(tmp_path)
    p = run(["run", prog, "--until-done", "--dump", tmp_path / "dump", "--no-progress"],
            timeout=60)
    assert p.returncode == 0, p.stderr
    assert read_bytes(tmp_path / "dump" / "v.csv") == b"s,n\n6,3\n"
    assert "done" in p.stderr and "3 rows" in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_without_until_done_stays_up_until_signal(tmp_path, sig):
    prog = simple_prog(tmp_path)
    errp = tmp_path / "stderr"
    with open(errp, "wb") as ef:
        proc = subprocess.Popen([sluice_bin(), "run", prog, "--dump", str(tmp_path / "dump"),
                                 "--no-progress"], stdout=subprocess.PIPE, stderr=ef)
    try:
        # every input has ended (it says so) and it is still up
        wait_until(lambda: proc.poll() is not None or
                   b"all inputs have ended" in errp.read_bytes(), "the inputs ending")
        assert proc.poll() is None, "exited on its own without --until-done"
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    cp = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(),
                                     errp.read_text(errors="replace"))
    assert_no_crash(cp)
    assert proc.returncode == 0, cp.stderr
    assert read_bytes(tmp_path / "dump" / "v.csv") == b"s,n\n6,3\n"


def test_step_rows_smaller_than_number_of_inputs(tmp_path):
    """--step-rows 1 with three input tables must still make progress and
    finish (at most one row per step in all)."""
    for name in "abc":
        write(tmp_path / ("%s.csv" % name), "1\n2\n3\n4\n")
    prog = write(tmp_path / "p.sql", "\n".join(
        ["CREATE TABLE %s (x INT) %s;" % (n, csv_input(tmp_path / ("%s.csv" % n))) for n in "abc"]
        + ["CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n, SUM(x) AS s FROM "
           "(SELECT x FROM a UNION ALL SELECT x FROM b UNION ALL SELECT x FROM c) AS u;"]) + "\n")
    for step in (1, 2):
        p = run(["run", prog, "--until-done", "--dump", tmp_path / ("d%d" % step),
                 "--no-progress", "--step-rows", step], timeout=20)
        assert p.returncode == 0, p.stderr
        assert read_bytes(tmp_path / ("d%d" % step) / "v.csv") == b"n,s\n12,30\n"


def test_step_rows_and_workers_do_not_change_results(tmp_path):
    write(tmp_path / "t.csv", "".join("%d,%d\n" % (i % 7, i) for i in range(500)))
    prog = write(tmp_path / "p.sql", "\n".join([
        "CREATE TABLE t (k INT, v INT) %s;" % csv_input(tmp_path / "t.csv"),
        "CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS mn, "
        "MAX(v) AS mx FROM t GROUP BY k;",
    ]) + "\n")
    want = "k,n,s,mn,mx\n" + "".join(
        "%d,%d,%d,%d,%d\n" % (k, len(vs), sum(vs), min(vs), max(vs))
        for k in range(7) for vs in [[i for i in range(500) if i % 7 == k]])
    for workers, step in ((1, 3), (2, 50), (3, 1000)):
        d = tmp_path / ("d_%d_%d" % (workers, step))
        run_ok(["run", prog, "--until-done", "--dump", d, "--no-progress",
                "--workers", workers, "--step-rows", step])
        assert read_bytes(d / "v.csv") == want.encode(), (workers, step)

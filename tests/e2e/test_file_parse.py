"""File input parsed in parallel (io/tr_file.c): the records of a step are
cut into record-aligned byte ranges parsed on as many threads as the
pipeline has workers. Whatever the worker count and step size, every good
record is applied once (count, sum and string contents checked against
Python), bad records are reported in file order with their physical line
numbers (quoted CSV fields spanning lines, blank lines and the header
counted), and a kill -9 resumes exactly."""
import json
import os
import random
import signal
import subprocess

import pytest

from conftest import conn_clause, read_dump, run_ok, sluice_bin, wait_until

ROWS = 200_000


def make_csv(path, seed):
    """CSV with a header, quoted multi-line fields, blank lines and 30 bad
    records. Returns (count, sum, {id: s} of the quoted rows, bad lines)."""
    rnd = random.Random(seed)
    bad_at = set(rnd.sample(range(100, ROWS), 30))
    out, line, n, total, special, bad = ["id,v,s\n"], 2, 0, 0, {}, []
    for i in range(ROWS):
        if i in bad_at:
            out.append("%d,notanumber,x\n" % i)
            bad.append(line)
            line += 1
            continue
        if i % 997 == 0:
            out.append("\n")
            line += 1
        v = (i * 7919) % 100003
        if i % 1000 == 7:
            s = 'a "q", b\nline %d' % i
            out.append('%d,%d,"%s"\n' % (i, v, s.replace('"', '""')))
            special[i] = s
            line += 2
        else:
            out.append("%d,%d,n%d\n" % (i, v, i % 100))
            line += 1
        n += 1
        total += v
    with open(path, "w") as f:
        f.write("".join(out))
    return n, total, special, bad


def make_json(path, seed):
    rnd = random.Random(seed)
    bad_at = set(rnd.sample(range(100, ROWS), 25))
    out, n, total, bad = [], 0, 0, []
    for i in range(ROWS):
        if i in bad_at:
            out.append('{"id": %d, "v": "x"}\n' % i)
            bad.append(i + 1)
            continue
        v = (i * 7919) % 100003
        out.append(json.dumps({"insert": {"id": i, "v": v, "s": "n%d" % (i % 100)}}) + "\n")
        n += 1
        total += v
    with open(path, "w") as f:
        f.write("".join(out))
    return n, total, bad


def program(tmp_path, clause):
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (id BIGINT NOT NULL, v BIGINT, s VARCHAR) %s;\n" % clause +
        "CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS sv FROM t;\n"
        "CREATE MATERIALIZED VIEW odd AS SELECT id, s FROM t WHERE id % 1000 = 7;\n")
    return prog


def reported_lines(stderr):
    return [int(l.split(" line ")[1].split(":")[0]) for l in stderr.splitlines()
            if " line " in l and "file_input" in l]


def check(tmp_path, prog, args, n, total, special):
    dump = tmp_path / "dump"
    p = run_ok(["run", prog, "--until-done", "--no-progress", "--dump", dump] + args)
    _, rows = read_dump(dump / "agg.csv")
    assert rows == [[str(n), str(total)]]
    if special is not None:
        _, odd = read_dump(dump / "odd.csv")
        assert {int(r[0]): r[1] for r in odd} == special
    return p


@pytest.mark.parametrize("args", [["--workers", "1"], ["--workers", "2"],
                                  ["--workers", "2", "--step-rows", "3000"]],
                         ids=["w1", "w2", "w2-small-steps"])
def test_csv_parallel_parse_counts_and_line_numbers(tmp_path, args):
    path = tmp_path / "in.csv"
    n, total, special, bad = make_csv(path, 1)
    clause = conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                           "format": {"name": "csv", "config": {"headers": True}}}])
    p = check(tmp_path, program(tmp_path, clause), args, n, total, special)
    assert reported_lines(p.stderr) == bad[:20]
    assert "more bad records" in p.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_json_parallel_parse_counts_and_line_numbers(tmp_path, workers):
    path = tmp_path / "in.json"
    n, total, bad = make_json(path, 2)
    clause = conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                           "format": {"name": "json",
                                      "config": {"update_format": "insert_delete"}}}])
    p = check(tmp_path, program(tmp_path, clause), ["--workers", workers], n, total, None)
    assert reported_lines(p.stderr) == bad[:20]


def test_kill9_during_parallel_backfill_resumes_exactly(tmp_path):
    """kill -9 while two workers parse the file with exactly-once storage;
    the restart continues from the checkpointed/journaled byte offset and
    the view holds every record once (a run that ended before the kill is
    fine too)."""
    path = tmp_path / "in.csv"
    n, total, special, _ = make_csv(path, 3)
    clause = conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                           "format": {"name": "csv", "config": {"headers": True}}}])
    prog = program(tmp_path, clause)
    store, log = tmp_path / "store", tmp_path / "run.log"
    args = ["run", prog, "--workers", "2", "--step-rows", "300", "--storage", store,
            "--checkpoint-interval", "0.05", "--no-progress"]
    with open(log, "wb") as lf:
        proc = subprocess.Popen([sluice_bin()] + [str(a) for a in args + ["--until-done"]],
                                stdout=subprocess.DEVNULL, stderr=lf, start_new_session=True)
    try:
        # kill -9 once steps are being journaled (the restart replays them)
        def journaled():
            if proc.poll() is not None:
                return True
            if not store.exists():
                return False
            return sum(e.stat().st_size for e in os.scandir(store)
                       if e.name.startswith("journal-")) > 4000
        wait_until(journaled, "steps journaled", hang_guard=120)
        killed = proc.poll() is None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    dump = tmp_path / "dump"
    run_ok(args + ["--until-done", "--dump", dump], timeout=300)
    _, rows = read_dump(dump / "agg.csv")
    assert rows == [[str(n), str(total)]], "killed mid-run: %s" % killed
    _, odd = read_dump(dump / "odd.csv")
    assert {int(r[0]): r[1] for r in odd} == special


def _input_metrics(p, transport):
    import requests
    st = requests.get(p.url("/stats"), timeout=30).json()
    return [i for i in st["inputs"] if i["transport"] == transport][0]["metrics"]


def test_position_high_watermark_lag_and_loss_accounting(tmp_path, http_pipeline):
    """A paused pipeline shows the file's size as its high watermark and the
    whole file as lag; once read, position = size and lag 0, and the
    records read add up: parsed = applied + rejected (a record whose view
    overflows), with the malformed ones counted apart."""
    import requests
    path = tmp_path / "in.csv"
    good = [(i, (i * 7919) % 1000) for i in range(500)]
    lines = ["%d,%d\n" % r for r in good[:250]] + ["1,notanumber\n", "2,3,4,5\n"] + \
        ["9999,1000000\n"] + ["%d,%d\n" % r for r in good[250:]]
    path.write_text("".join(lines))
    size = os.path.getsize(path)
    sql = ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) %s;\n"
           "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t;\n"
           "CREATE MATERIALIZED VIEW big AS SELECT id, v * 10000000000000 AS m FROM t;\n"
           % conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                           "format": {"name": "csv"}}]))
    p = http_pipeline(sql, "--paused")
    m = wait_until(lambda: (lambda m: m if "position" in m else None)(
        _input_metrics(p, "file_input")), "the input's position in /stats")
    assert m["position_unit"] == "bytes"
    assert (m["position"], m["high_watermark"], m["lag"]) == (0, size, size), m
    assert requests.post(p.url("/start"), timeout=30).status_code == 200

    def settled():
        m = _input_metrics(p, "file_input")
        return m if m["end_of_input"] and m["buffered_records"] == 0 and m["lag"] == 0 else None
    m = wait_until(settled, "the file read to its end")
    assert (m["position"], m["high_watermark"], m["position_text"]) == (size, size, str(size))
    assert m["num_parse_errors"] == 2
    assert m["total_records"] == 501  # parsed: 500 good and the one that overflows
    assert m["rejected_records"] == 1
    assert m["applied_records"] == 500
    assert m["total_records"] == m["applied_records"] + m["rejected_records"] + \
        m["buffered_records"]
    r = requests.get(p.url("/query"), params={"sql": "SELECT * FROM total", "format": "json"},
                     timeout=30)
    assert json.loads(r.text.splitlines()[0]) == {"n": 500, "s": sum(v for _, v in good)}
    prom = requests.get(p.url("/metrics"), timeout=30).text
    assert 'sluice_connector_lag{table="t",endpoint="table t, connector 0 (file_input)",' \
        'unit="bytes"} 0' in prom, prom
    assert "sluice_connector_position{" in prom and \
        'sluice_connector_applied_records_total{table="t",' in prom
    p.stop()

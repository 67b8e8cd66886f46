"""s3_input against a real S3 server (OpenStack Swift + s3api, conftest's
`s3` fixture): every object under the prefix read once, in key order, as
CSV or JSON, gzip and zstd objects decompressed; counts and sums checked
against Python; malformed records reported with the object and line;
kill -9 with storage resumes exactly; the server going away (a proxy in
front of it stops answering) makes the input wait, then go on."""
import gzip
import json
import os
import random
import signal
import socket
import subprocess
import threading

import pytest

from conftest import conn_clause, read_dump, run, run_ok, sluice_bin, wait_until


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True,
                          check=True).stdout


def s3_conn_dict(s3, bucket, prefix, fmt="csv", endpoint=None, **extra):
    cfg = {"bucket_name": bucket, "prefix": prefix, "region": s3.region,
           "endpoint_url": endpoint or s3.endpoint, "aws_access_key_id": s3.access_key,
           "aws_secret_access_key": s3.secret_key}
    cfg.update(extra)
    f = {"name": "csv", "config": {"headers": True}} if fmt == "csv" else \
        {"name": "json", "config": {"update_format": "insert_delete"}}
    return {"transport": {"name": "s3_input", "config": cfg}, "format": f}


def s3_conn(s3, bucket, prefix, fmt="csv", endpoint=None, **extra):
    return conn_clause([s3_conn_dict(s3, bucket, prefix, fmt, endpoint, **extra)])


def program(tmp_path, clause):
    prog = tmp_path / "p.sql"
    prog.write_text(
        "CREATE TABLE t (id BIGINT NOT NULL, v BIGINT, s VARCHAR) %s;\n" % clause +
        "CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS sv FROM t;\n")
    return prog


def csv_object(lo, hi, bad=()):
    rows, n, total = ["id,v,s\n"], 0, 0
    for i in range(lo, hi):
        if i in bad:
            rows.append("%d,oops,x\n" % i)
            continue
        v = (i * 7919) % 100003
        rows.append('%d,%d,"s ""%d"", x"\n' % (i, v, i % 7) if i % 50 == 0 else
                    "%d,%d,s%d\n" % (i, v, i % 7))
        n += 1
        total += v
    return "".join(rows).encode(), n, total


def upload(s3, bucket, objects, rows_per=20_000, bad=()):
    """objects: list of (key, compression). Returns (count, sum)."""
    s3.create_bucket(bucket)
    n = total = 0
    for k, (key, comp) in enumerate(objects):
        data, dn, dt = csv_object(k * rows_per, (k + 1) * rows_per, bad)
        n, total = n + dn, total + dt
        if comp == "gzip":
            data = gzip.compress(data)
        elif comp == "zstd":
            data = zstd(data)
        s3.put_object(bucket, key, data)
    return n, total


def dump_agg(tmp_path, p_args, timeout=300):
    dump = tmp_path / "dump"
    p = run_ok(p_args + ["--until-done", "--no-progress", "--dump", dump], timeout=timeout)
    _, rows = read_dump(dump / "agg.csv")
    return p, rows


def test_every_object_under_the_prefix_once_compressed_too(tmp_path, s3):
    objs = [("in/a-0.csv", None), ("in/a-1.csv.gz", "gzip"), ("in/b/a-2.csv.zst", "zstd"),
            ("in/c-3.csv", None)]
    bad = {20_005, 61_000}
    n, total = upload(s3, "s3in1", objs, bad=bad)
    s3.put_object("s3in1", "other/x.csv", b"id,v,s\n1,1000000,x\n")   # not under the prefix
    s3.put_object("s3in1", "in/empty.csv", b"")
    prog = program(tmp_path, s3_conn(s3, "s3in1", "in/", max_concurrent_fetches=3))
    for w in ("1", "2"):
        p, rows = dump_agg(tmp_path, ["run", prog, "--workers", w])
        assert rows == [[str(n), str(total)]]
        # bad records: the object and the line (header = line 1)
        assert "s3://s3in1/in/a-1.csv.gz\" line 7:" in p.stderr, p.stderr
        assert "s3://s3in1/in/c-3.csv\" line 1002:" in p.stderr, p.stderr


def test_json_objects_and_config_errors(tmp_path, s3):
    s3.create_bucket("s3in2")
    lines = [json.dumps({"insert": {"id": i, "v": i, "s": "j"}}) for i in range(1000)]
    s3.put_object("s3in2", "j/1.json", ("\n".join(lines[:500]) + "\n").encode())
    s3.put_object("s3in2", "j/2.json", ("\n".join(lines[500:])).encode())  # no final newline
    prog = program(tmp_path, s3_conn(s3, "s3in2", "j/", fmt="json"))
    _, rows = dump_agg(tmp_path, ["run", prog])
    assert rows == [["1000", str(sum(range(1000)))]]
    prog = program(tmp_path, s3_conn(s3, "s3in2", "j/", fmt="json", bogus="1"))
    p = run(["run", prog, "--until-done"])
    assert p.returncode != 0 and "bogus" in p.stderr
    prog = program(tmp_path, s3_conn(s3, "s3in2", "j/", fmt="json", aws_secret_access_key="no"))
    p = run(["run", prog, "--until-done"])
    assert p.returncode != 0 and "403" in p.stderr, p.stderr


def test_kill9_resumes_exactly(tmp_path, s3):
    objs = [("k/%02d.csv.gz" % i, "gzip") if i == 2 else ("k/%02d.csv" % i, None)
            for i in range(5)]
    n, total = upload(s3, "s3in3", objs, rows_per=8_000)
    prog = program(tmp_path, s3_conn(s3, "s3in3", "k/"))
    store = tmp_path / "store"
    args = ["run", prog, "--workers", "2", "--step-rows", "300", "--storage", store,
            "--checkpoint-interval", "0.05", "--no-progress"]
    rnd = random.Random(5)
    for attempt in range(3):
        proc = subprocess.Popen([sluice_bin()] + [str(a) for a in args + ["--until-done"]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            target = 3000 * (attempt + 1) + rnd.randrange(3000)

            def journaled():
                if proc.poll() is not None:
                    return True
                return store.exists() and sum(
                    e.stat().st_size for e in os.scandir(store)
                    if e.name.startswith("journal-")) > target
            wait_until(journaled, "steps journaled", hang_guard=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _, rows = dump_agg(tmp_path, args)
    assert rows == [[str(n), str(total)]]


class Proxy:
    """TCP proxy on a fixed loopback port to the S3 server; down() closes
    the listener and every connection (the server is away), up() listens
    on the same port again."""

    def __init__(self, target_port):
        self.target = target_port
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.conns = []
        self.lsock = None
        self.lock = threading.Lock()

    def up(self):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.lsock = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def down(self):
        ls, self.lsock = self.lsock, None
        if ls:
            ls.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []

    def _accept(self, ls):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            if self.lsock is not ls:
                c.close()
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_server_away_and_back(tmp_path, s3):
    objs = [("w/%02d.csv" % i, None) for i in range(4)]
    n, total = upload(s3, "s3in4", objs, rows_per=20_000)
    port = int(s3.endpoint.rsplit(":", 1)[1])
    proxy = Proxy(port)
    proxy.up()
    try:
        prog = program(tmp_path, s3_conn(s3, "s3in4", "w/", endpoint="http://127.0.0.1:%d"
                                         % proxy.port, max_concurrent_fetches=1))
        log = tmp_path / "run.log"
        with open(log, "wb") as lf:
            proc = subprocess.Popen([sluice_bin(), "run", str(prog), "--until-done",
                                     "--no-progress", "--step-rows", "500", "--dump",
                                     str(tmp_path / "dump")], stdout=subprocess.DEVNULL,
                                    stderr=lf, start_new_session=True)
        try:
            proxy.down()
            wait_until(lambda: b"retrying until it answers" in log.read_bytes()
                       or proc.poll() is not None, "the input noticing the outage")
            assert proc.poll() is None, log.read_text()
            proxy.up()
            wait_until(lambda: proc.poll() is not None, "the run ending", hang_guard=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        text = log.read_text()
        assert proc.returncode == 0, text
        assert "answers again" in text
        _, rows = read_dump(tmp_path / "dump" / "agg.csv")
        assert rows == [[str(n), str(total)]]
    finally:
        proxy.down()


def test_two_hosts(tmp_path, s3):
    """--hosts 2: an s3_input's objects are divided among the hosts (and a
    second connector's single object goes to one of them); every record
    once."""
    n1, t1 = upload(s3, "s3in5", [("p1/a.csv", None), ("p1/b.csv.gz", "gzip"),
                                  ("p1/c.csv", None)], rows_per=5_000, bad={100, 5100})
    s3.put_object("s3in5", "p2/c.csv", csv_object(20_000, 27_000)[0])
    _, n2, t2 = csv_object(20_000, 27_000)
    conns = [s3_conn_dict(s3, "s3in5", p) for p in ("p1/", "p2/")]
    prog = program(tmp_path, conn_clause(conns))
    p, rows = dump_agg(tmp_path, ["run", prog, "--hosts", "2", "--workers", "2"])
    assert rows == [[str(n1 + n2), str(t1 + t2)]]
    # objects 0 and 2 are the first part's, object 1 the second's
    assert '(s3_input) part 1/2: "s3://s3in5/p1/a.csv" line 102' in p.stderr, p.stderr
    assert '(s3_input) part 2/2: "s3://s3in5/p1/b.csv.gz" line 102' in p.stderr, p.stderr


def test_position_is_the_object_and_the_high_watermark_the_listing(tmp_path, s3, http_pipeline):
    """/stats: the high watermark is the number of objects listed (with
    their bytes); read to the end, the position is past the last object."""
    import requests
    s3.create_bucket("s3in6")
    sizes = []
    for k in range(3):
        data, _, _ = csv_object(k * 100, (k + 1) * 100)
        s3.put_object("s3in6", "p/%d.csv" % k, data)
        sizes.append(len(data))
    p = http_pipeline(program(tmp_path, s3_conn(s3, "s3in6", "p/")).read_text())

    def metrics():
        st = requests.get(p.url("/stats"), timeout=30).json()
        return [i for i in st["inputs"] if i["transport"] == "s3_input"][0]["metrics"]
    m = wait_until(lambda: (lambda m: m if m["end_of_input"] else None)(metrics()),
                   "the objects read")
    assert m["position_unit"] == "objects"
    assert (m["position"], m["high_watermark"]) == (3, 3), m
    assert m["total_object_bytes"] == sum(sizes)
    assert m["total_records"] == 300 and m["total_bytes"] == sum(sizes)
    p.stop()


def test_a_new_view_reads_the_objects_again_on_their_hosts(tmp_path, s3):
    """Bootstrapping (docs/bootstrapping.md): a view added over an s3_input
    table that nothing stores reads the objects again, each part on the
    host that reads it live (--hosts 2), or on one host; the dump equals a
    fresh run of the new program, and agg (kept) counts every record once."""
    n, total = upload(s3, "s3in7", [("r/a.csv", None), ("r/b.csv.gz", "gzip"),
                                    ("r/c.csv", None)], rows_per=2_000)
    clause = s3_conn(s3, "s3in7", "r/")
    old = program(tmp_path, clause)
    new = tmp_path / "new.sql"
    new.write_text(old.read_text() + "CREATE MATERIALIZED VIEW by_s AS SELECT s, COUNT(*) AS n "
                   "FROM t GROUP BY s;\n")
    fresh = tmp_path / "fresh"
    run_ok(["run", new, "--until-done", "--no-progress", "--dump", fresh])
    for hosts in (1, 2):
        st, d = tmp_path / ("st%d" % hosts), tmp_path / ("d%d" % hosts)
        scale = ["--hosts", "2", "--workers", "2"] if hosts == 2 else ["--workers", "2"]
        run_ok(["run", old, "--storage", st, "--until-done", "--no-progress"] + scale,
               timeout=300)
        p = run_ok(["run", new, "--storage", st, "--until-done", "--no-progress", "--dump", d,
                    "--bootstrap", "allow", "--step-rows", "2500"] + scale, timeout=300)
        assert "%d rows read again" % n in p.stderr, p.stderr[-3000:]
        for f in ("agg.csv", "by_s.csv"):
            assert (d / f).read_bytes() == (fresh / f).read_bytes(), (hosts, f)
        _, rows = read_dump(d / "agg.csv")
        assert rows == [[str(n), str(total)]]


def test_bootstrap_with_another_host_count(tmp_path, s3):
    """An s3_input's positions are per part ("part h/H"), so they fit only
    the host count that wrote them (docs/connectors.md). A bootstrap with
    another --hosts (2 -> 1, 1 -> 2) is refused, naming the input and the
    host count, with the storage left as it was; it used to find no
    position for the kept table's renamed parts and read them from the
    beginning, so agg counted every record twice. With the same --hosts
    it goes ahead (test_a_new_view_reads_the_objects_again_on_their_hosts)."""
    n, total = upload(s3, "s3in8", [("r/a.csv", None), ("r/b.csv", None)], rows_per=1_000)
    old = program(tmp_path, s3_conn(s3, "s3in8", "r/"))
    new = tmp_path / "new.sql"
    new.write_text(old.read_text() + "CREATE MATERIALIZED VIEW by_s AS SELECT s, COUNT(*) AS n "
                   "FROM t GROUP BY s;\n")
    for before, after in ((2, 1), (1, 2)):
        st = tmp_path / ("st%d" % before)
        scale = lambda h: ["--hosts", "2", "--workers", "2"] if h == 2 else ["--workers", "2"]
        run_ok(["run", old, "--storage", st, "--until-done", "--no-progress"] + scale(before),
               timeout=300)
        files = sorted(os.listdir(st))
        p = run(["run", new, "--storage", st, "--until-done", "--no-progress", "--dump",
                 tmp_path / "d", "--bootstrap", "allow"] + scale(after), timeout=300)
        assert p.returncode == 1, p.stderr[-3000:]
        assert "s3_input" in p.stderr and "has no position in the checkpoint" in p.stderr
        assert "bootstrap with --hosts %d" % before in p.stderr, p.stderr[-3000:]
        assert sorted(os.listdir(st)) == files

"""PostgreSQL's wire protocol (`sluice run --pg`, docs/pg-wire.md) with real
clients from Debian: psql for the simple protocol and its \\dt, \\dv, \\d
catalog queries, psycopg2 for parameters, transactions, COPY and a
subscription consumed while rows are pushed, psycopg 3 for the extended
protocol, raw sockets for hostile clients and protocol details, and three
files of the sqllogictest corpus (about 5,400 records) run over the wire.
Answers are checked against SQLite or Python's own count of what was sent,
never against numbers Sluice produced.
"""
import json
import os
import random
import re
import socket
import sqlite3
import struct
import subprocess

import pytest
import requests

from conftest import wait_until

psycopg2 = pytest.importorskip("psycopg2")

PROG = """
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR, v INT, d DATE, ok BOOLEAN, x DOUBLE)
    WITH ('materialized' = 'true');
CREATE TABLE ev (k INT, amount BIGINT, tag VARCHAR) WITH ('materialized' = 'true');
CREATE MATERIALIZED VIEW per_k AS SELECT k, COUNT(*) AS n, SUM(amount) AS total FROM ev GROUP BY k;
CREATE MATERIALIZED VIEW agg AS SELECT COUNT(*) AS n, SUM(v) AS total FROM t;
CREATE VIEW hidden AS SELECT id FROM t;
"""


def psql_bin():
    for p in ("/usr/bin/psql", "/usr/lib/postgresql/15/bin/psql"):
        if os.access(p, os.X_OK):
            return p
    pytest.skip("psql (postgresql-client) is not installed")


class PgPipeline:
    def __init__(self, p):
        self.p = p
        self.port = wait_until(self._port, "sluice printing its pg port", poll=0.01)

    def _port(self):
        m = re.search(r"sluice: pg: listening on 127\.0\.0\.1:(\d+)", self.p.stderr())
        return int(m.group(1)) if m else None

    def connect(self, **kw):
        kw.setdefault("user", "tester")
        kw.setdefault("dbname", "bank")
        return psycopg2.connect(host="127.0.0.1", port=self.port, connect_timeout=30, **kw)

    def psql(self, *args, password=None, check=True):
        env = dict(os.environ, PGCONNECT_TIMEOUT="30")
        env.pop("PGPASSWORD", None)
        if password:
            env["PGPASSWORD"] = password
        r = subprocess.run([psql_bin(), "-X", "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "tester", "-d", "bank", "-v", "ON_ERROR_STOP=0"] + list(args),
                           capture_output=True, text=True, timeout=120, env=env)
        if check:
            assert r.returncode == 0, r.stderr
        return r


@pytest.fixture
def pg_pipeline(http_pipeline):
    def start(sql=PROG, *args):
        return PgPipeline(http_pipeline(sql, "--pg", "127.0.0.1:0", *args))
    return start


def test_psql_inserts_and_selects_match_sqlite(pg_pipeline):
    pg = pg_pipeline()
    rnd = random.Random(7)
    rows = [(rnd.randrange(20), rnd.randrange(-1000, 1000), rnd.choice(["a", "b", "it's", None]))
            for _ in range(600)]
    # a few INSERTs of many rows each, then one of single rows
    stmts = []
    for i in range(0, 500, 100):
        vals = ",".join("(%d, %d, %s)" % (k, a, "NULL" if t is None else "'%s'" % t.replace("'", "''"))
                        for k, a, t in rows[i:i + 100])
        stmts.append("INSERT INTO ev VALUES %s;" % vals)
    for k, a, t in rows[500:]:
        stmts.append("INSERT INTO ev (amount, k, tag) VALUES (%d, %d, %s);" % (
            a, k, "NULL" if t is None else "'%s'" % t.replace("'", "''")))
    r = pg.psql("-q", "-c", "\n".join(stmts))
    assert "ERROR" not in r.stderr
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE ev (k INT, amount BIGINT, tag VARCHAR)")
    db.executemany("INSERT INTO ev VALUES (?, ?, ?)", rows)
    want = sorted(db.execute("SELECT k, COUNT(*), SUM(amount) FROM ev GROUP BY k").fetchall())
    out = pg.psql("-A", "-t", "-F", ",", "-c", "SELECT k, n, total FROM per_k").stdout
    got = sorted(tuple(int(x) for x in line.split(",")) for line in out.split())
    assert got == want
    # an ad-hoc query over a table, and the tag psql prints
    want2 = db.execute("SELECT COUNT(*) FROM ev WHERE tag = 'it''s' AND amount > 0").fetchone()[0]
    out = pg.psql("-A", "-t", "-c", "SELECT COUNT(*) FROM ev WHERE tag = 'it''s' AND amount > 0")
    assert int(out.stdout.strip()) == want2
    # DELETE through the snapshot, then the counts again
    pg.psql("-c", "DELETE FROM ev WHERE k < 5")
    db.execute("DELETE FROM ev WHERE k < 5")
    want = sorted(db.execute("SELECT k, COUNT(*), SUM(amount) FROM ev GROUP BY k").fetchall())
    out = pg.psql("-A", "-t", "-F", ",", "-c", "SELECT k, n, total FROM per_k").stdout
    assert sorted(tuple(int(x) for x in line.split(",")) for line in out.split()) == want
    pg.p.stop()


def test_psql_describes_relations(pg_pipeline):
    pg = pg_pipeline()
    out = pg.psql("-c", "\\dt").stdout
    assert re.search(r"public \| t\s+\| table", out) and re.search(r"public \| ev\s+\| table", out)
    assert "per_k" not in out
    out = pg.psql("-c", "\\dv").stdout
    for v in ("per_k", "agg", "hidden"):
        assert re.search(r"public \| %s\s+\| view" % v, out), out
    out = pg.psql("-c", "\\dt e*").stdout
    assert "ev" in out and "| t " not in out
    out = pg.psql("-c", "\\d+ t").stdout  # more columns asked for: answered too
    assert 'Table "public.t"' in out and "plain" in out
    out = pg.psql("-c", "\\d t").stdout
    assert 'Table "public.t"' in out
    for col, typ in (("id", "integer"), ("name", "text"), ("d", "date"), ("ok", "boolean"),
                     ("x", "double precision")):
        assert re.search(r"%s\s+\| %s" % (col, typ), out), out
    assert re.search(r"id\s+\| integer\s+\|\s+\| not null", out)
    out = pg.psql("-A", "-t", "-c", "SELECT version()", "-c", "SHOW server_version",
                  "-c", "SELECT current_setting('client_encoding')").stdout.split("\n")
    assert out[0].startswith("PostgreSQL 15") and out[1] == "15.0" and out[2] == "UTF8"
    pg.p.stop()


def test_errors_carry_sqlstate_and_the_session_goes_on(pg_pipeline):
    pg = pg_pipeline()
    c = pg.connect()
    c.autocommit = True
    cur = c.cursor()
    cases = [("SELECT * FROM nope", "42P01", 15), ("SELECT id FROM t WHERE", "42601", None),
             ("SELECT nosuch FROM t", "42703", None), ("SELECT * FROM hidden", "55000", None),
             ("SELEC 1", "42601", 1), ("UPDATE t SET v = 1", "0A000", None),
             ("INSERT INTO agg VALUES (1, 2)", "42809", None),
             ("INSERT INTO t (id, v) VALUES (NULL, 1)", "23502", None),
             ("INSERT INTO t (id, v) VALUES (1, 'zz')", "22P02", None),
             ("SELECT CAST(2147483647 AS INT) + CAST(1 AS INT)", "22003", None)]
    for sql, code, pos in cases:
        with pytest.raises(psycopg2.Error) as ei:
            cur.execute(sql)
        assert ei.value.pgcode == code, (sql, ei.value.pgerror)
        if pos:
            assert int(ei.value.diag.statement_position) == pos
        cur.execute("SELECT 41 + 1")
        assert cur.fetchall() == [(42,)]
    # psql: the error, then the next command of the same session answers
    r = pg.psql("-A", "-t", "-c", "SELECT * FROM nope; ", "-c", "SELECT 7", check=False)
    assert "does not exist" in r.stderr and r.stdout.split() == ["7"]
    pg.p.stop()


def test_psycopg2_parameters_and_transactions(pg_pipeline):
    pg = pg_pipeline()
    c = pg.connect()
    cur = c.cursor()  # psycopg2 opens a transaction block (BEGIN) on its own
    sent = {}
    for i in range(20):
        row = (i, "n'%d" % i, i * 10, "2024-01-%02d" % (i + 1), i % 2 == 0, i / 4)
        cur.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", row)
        sent[i] = row
    # nothing is visible before the commit
    other = pg.connect()
    other.autocommit = True
    ocur = other.cursor()
    ocur.execute("SELECT n FROM agg")
    assert ocur.fetchall() in ([], [(0,)])
    c.commit()
    ocur.execute("SELECT n, total FROM agg")
    assert ocur.fetchall() == [(20, sum(r[2] for r in sent.values()))]
    cur.execute("SELECT id, name, v, d, ok, x FROM t WHERE id = %s", (7,))
    (got,) = cur.fetchall()
    assert got[:3] == sent[7][:3] and str(got[3]) == sent[7][3] and got[4] == sent[7][4]
    assert got[5] == sent[7][5]
    c.commit()
    # a rolled back block leaves nothing
    cur.execute("INSERT INTO t (id, v) VALUES (%s, %s)", (100, 5))
    cur.execute("DELETE FROM t WHERE id < %s", (5,))
    c.rollback()
    ocur.execute("SELECT n, total FROM agg")
    assert ocur.fetchall() == [(20, sum(r[2] for r in sent.values()))]
    # an error in a block: the rest is refused until ROLLBACK
    with pytest.raises(psycopg2.Error) as ei:
        cur.execute("SELECT * FROM nope")
    with pytest.raises(psycopg2.Error) as ei:
        cur.execute("SELECT 1")
    assert ei.value.pgcode == "25P02"
    c.rollback()
    cur.execute("SELECT COUNT(*) FROM t")
    assert cur.fetchall() == [(20,)]
    c.commit()
    c.close()
    other.close()
    pg.p.stop()


def raw(pg):
    s = socket.create_connection(("127.0.0.1", pg.port), timeout=60)
    return s


def startup_packet(user="evil"):
    body = struct.pack("!I", 196608) + b"user\0" + user.encode() + b"\0\0"
    return struct.pack("!I", len(body) + 4) + body


def read_until_ready(s):
    """Messages until ReadyForQuery; returns their types."""
    types, buf = [], b""
    while True:
        while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
            chunk = s.recv(65536)
            if not chunk:
                return types
            buf += chunk
        n = struct.unpack("!I", buf[1:5])[0]
        types.append(buf[:1])
        buf = buf[1 + n:]
        if types[-1] in (b"Z",):
            return types


def closed(s):
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except OSError:
        return True


def test_hostile_clients_never_stop_the_pipeline(pg_pipeline):
    pg = pg_pipeline()
    rnd = random.Random(11)
    # garbage instead of a startup packet
    for _ in range(5):
        s = raw(pg)
        try:  # the server may close (and reset) before all is sent
            s.sendall(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))))
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        assert closed(s)
        s.close()
    # a huge startup length, a huge message length after a good startup
    s = raw(pg)
    s.sendall(struct.pack("!II", 0x7FFFFFF0, 196608))
    assert closed(s)
    s = raw(pg)
    s.sendall(startup_packet())
    assert read_until_ready(s)[-1] == b"Z"
    s.sendall(b"Q" + struct.pack("!I", 0x7FFFFFFF))
    assert closed(s)
    # garbage messages after startup
    s = raw(pg)
    s.sendall(startup_packet())
    read_until_ready(s)
    s.sendall(b"Q" + struct.pack("!I", 9) + b"abcde")  # no terminating zero
    assert closed(s)
    # half a message, then the client leaves; another one stays half-sent
    s = raw(pg)
    s.sendall(startup_packet())
    read_until_ready(s)
    s.sendall(b"Q" + struct.pack("!I", 100) + b"SELECT")
    s.close()
    slow = raw(pg)
    slow.sendall(startup_packet())
    read_until_ready(slow)
    slow.sendall(b"Q" + struct.pack("!I", 100) + b"SEL")
    half = raw(pg)
    half.sendall(startup_packet()[:7])
    # the pipeline and other sessions still answer, over both protocols
    c = pg.connect()
    c.autocommit = True
    cur = c.cursor()
    cur.execute("INSERT INTO t (id, v) VALUES (1, 5), (2, 6)")
    cur.execute("SELECT n, total FROM agg")
    assert cur.fetchall() == [(2, 11)]
    r = requests.get(pg.p.url("/query"), params={"sql": "SELECT n FROM agg", "format": "json"})
    assert r.json() == {"n": 2}
    c.close()
    slow.close()
    half.close()
    pg.p.stop()


def test_api_keys_are_passwords(http_pipeline, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"api_keys": ["sekrit", {"key": "reader", "read_only": True}],
                               "pg_listen": "127.0.0.1:0"}))
    pg = PgPipeline(http_pipeline(PROG, "--config", str(cfg)))  # pg_listen instead of --pg
    r = pg.psql("-w", "-c", "SELECT 1", check=False)
    assert r.returncode != 0 and "password" in r.stderr
    r = pg.psql("-w", "-c", "SELECT 1", password="wrong", check=False)
    assert r.returncode != 0 and "password authentication failed" in r.stderr
    assert pg.psql("-A", "-t", "-c", "SELECT 1", password="sekrit").stdout.strip() == "1"
    c = pg.connect(password="reader")
    c.autocommit = True
    with pytest.raises(psycopg2.Error) as ei:
        c.cursor().execute("INSERT INTO t (id) VALUES (1)")
    assert ei.value.pgcode == "42501"
    c.close()
    requests.post(pg.p.url("/stop"), headers={"Authorization": "Bearer sekrit"}, timeout=60)
    assert pg.p.wait_exit().returncode == 0


def test_copy_in_and_out(pg_pipeline):
    import io
    pg = pg_pipeline()
    c = pg.connect()
    c.autocommit = True
    cur = c.cursor()
    rnd = random.Random(3)
    rows = [(i, rnd.randrange(-50, 50), rnd.choice(["plain", "tab\there", "new\nline", "back\\slash",
                                                    "comma,quote\"", None]))
            for i in range(300)]

    def text_field(v):
        if v is None:
            return "\\N"
        return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    body = "".join("\t".join(text_field(v) for v in r) + "\n" for r in rows[:200])
    cur.copy_from(io.StringIO(body), "ev", columns=("k", "amount", "tag"))
    assert cur.rowcount == 200
    import csv
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["k", "amount", "tag"])
    for r in rows[200:]:
        w.writerow(["" if v is None else v for v in r])
    cur.copy_expert("COPY ev (k, amount, tag) FROM STDIN WITH (FORMAT csv, HEADER true)",
                    io.StringIO(out.getvalue()))
    # CSV cannot tell NULL from "" unless quoted: the writer quoted nothing, so "" stays NULL
    # a bad record: nothing of that COPY is taken, the session goes on
    with pytest.raises(psycopg2.Error) as ei:
        cur.copy_expert("COPY ev FROM STDIN", io.StringIO("1\t2\tok\nx\t3\tbad\n"))
    assert ei.value.pgcode == "22P02" and "line 2" in ei.value.pgerror
    got = io.StringIO()
    cur.copy_expert("COPY (SELECT k, amount, tag FROM ev) TO STDOUT", got)
    def parse(line):
        vals = []
        for f in line.split("\t"):
            if f == "\\N":
                vals.append(None)
                continue
            vals.append(re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), f))
        return (int(vals[0]), int(vals[1]), vals[2])
    back = sorted((parse(l) for l in got.getvalue().split("\n") if l), key=repr)
    assert back == sorted(rows, key=repr)
    got = io.StringIO()
    cur.copy_expert("COPY ev TO STDOUT WITH CSV HEADER", got)
    lines = list(csv.reader(io.StringIO(got.getvalue())))
    assert lines[0] == ["k", "amount", "tag"] and len(lines) == 301
    c.close()
    pg.p.stop()


def read_msg(s, buf):
    """One message from socket s (buf: bytes already read); (type, body, rest)."""
    while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection"
        buf += chunk
    n = struct.unpack("!I", buf[1:5])[0]
    return buf[:1], buf[5:1 + n], buf[1 + n:]


def test_subscription_streams_changes_while_rows_are_pushed(pg_pipeline):
    import io
    import threading
    pg = pg_pipeline()
    c = pg.connect()
    c.autocommit = True
    cur = c.cursor()
    cur.execute("INSERT INTO ev VALUES (1, 5, 'a'), (2, 7, 'b')")

    class Sink(io.TextIOBase):
        def __init__(self):
            self.data, self.lock = "", threading.Lock()

        def write(self, d):
            with self.lock:
                self.data += d
            return len(d)

        def integral(self):
            """The view's contents from the stream: weights added per row."""
            with self.lock:
                lines = [l for l in self.data.split("\n") if l]
            z, steps = {}, []
            for l in lines:
                f = l.split("\t")
                steps.append(int(f[0]))
                key = (int(f[2]), int(f[3]), int(f[4]))
                z[key] = z.get(key, 0) + int(f[1])
            assert steps == sorted(steps)
            return {k: w for k, w in z.items() if w}

    sink = Sink()
    sub = pg.connect()
    sub.autocommit = True
    errors = []

    def follow():
        try:
            sub.cursor().copy_expert("COPY (SUBSCRIBE per_k) TO STDOUT", sink)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    th = threading.Thread(target=follow)
    th.start()
    expect = {1: [1, 5], 2: [1, 7]}
    wait_until(lambda: sink.integral() == {(k, n, t): 1 for k, (n, t) in expect.items()},
               "the snapshot")
    rnd = random.Random(5)
    for i in range(30):
        k, a = rnd.randrange(6), rnd.randrange(100)
        cur.execute("INSERT INTO ev VALUES (%s, %s, 'x')", (k, a))
        e = expect.setdefault(k, [0, 0])
        e[0] += 1
        e[1] += a
    want = {(k, n, t): 1 for k, (n, t) in expect.items()}
    wait_until(lambda: sink.integral() == want, "the stream to reach the pushed rows")
    # a raw SUBSCRIBE without snapshot: RowDescription, then DataRows as changes come
    s = raw(pg)
    s.sendall(startup_packet())
    read_until_ready(s)
    q = b"SUBSCRIBE TO per_k WITH (SNAPSHOT = false)\0"
    s.sendall(b"Q" + struct.pack("!I", len(q) + 4) + q)
    t, body, rest = read_msg(s, b"")
    assert t == b"T" and body[:2] == struct.pack("!H", 5)
    cur.execute("INSERT INTO ev VALUES (9, 1, 'y')")
    t, body, rest = read_msg(s, rest)
    assert t == b"D"
    vals, pos = [], 2
    for _ in range(5):
        n = struct.unpack("!i", body[pos:pos + 4])[0]
        vals.append(body[pos + 4:pos + 4 + n].decode())
        pos += 4 + n
    assert vals[1:] == ["1", "9", "1", "1"]
    s.close()
    pg.p.stop()  # ends the COPY stream: CopyDone, then the client's copy returns
    th.join(timeout=120)
    assert not th.is_alive() and not errors, errors
    want[(9, 1, 1)] = 1
    assert sink.integral() == want


def test_extended_protocol_with_psycopg3(pg_pipeline):
    """psycopg 3 binds parameters on the server (Parse/Bind/Describe/Execute),
    some in binary (dates, numbers), and prepares repeated statements."""
    psycopg = pytest.importorskip("psycopg")
    import datetime
    import decimal
    pg = pg_pipeline()
    c = psycopg.connect(host="127.0.0.1", port=pg.port, user="tester", dbname="bank",
                        autocommit=True, connect_timeout=30)
    cur = c.cursor()
    sent = {}
    for i in range(25):
        row = (i, "o'%d" % i, i * 3, datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
               i % 3 == 0, i / 8)
        cur.execute("INSERT INTO t (id, name, v, d, ok, x) VALUES (%s, %s, %s, %s, %s, %s)", row)
        sent[i] = row
    for i in (0, 7, 24):
        cur.execute("SELECT id, name, v, d, ok, x FROM t WHERE id = %s", (i,), prepare=True)
        assert cur.fetchall() == [sent[i]]
    cur.execute("SELECT name FROM t WHERE v >= %s AND d < %s ORDER BY name",
                (30, datetime.date(2024, 1, 20)))
    want = sorted(r[1] for r in sent.values() if r[2] >= 30 and r[3] < datetime.date(2024, 1, 20))
    assert [r[0] for r in cur.fetchall()] == want
    cur.execute("SELECT CAST(%s AS VARCHAR), CAST(%s AS VARCHAR)",
                (decimal.Decimal("-12.345"), datetime.datetime(2024, 5, 6, 7, 8, 9, 123)))
    assert cur.fetchall() == [("-12.345", "2024-05-06 07:08:09.000123")]
    with pytest.raises(psycopg.Error) as ei:
        cur.execute("SELECT * FROM nope WHERE id = %s", (1,))
    assert ei.value.sqlstate == "42P01"
    with c.transaction():
        cur.execute("DELETE FROM t WHERE id < %s", (10,))
    cur.execute("SELECT n, total FROM agg")
    assert cur.fetchall() == [(15, sum(r[2] for r in sent.values() if r[0] >= 10))]
    cur.execute("SELECT id FROM t")
    assert sorted(r[0] for r in cur.fetchall()) == list(range(10, 25))
    c.close()
    # by hand: Execute with a row limit gives PortalSuspended, then the rest
    s = raw(pg)
    s.sendall(startup_packet())
    read_until_ready(s)

    def msg(t, body):
        return t + struct.pack("!I", len(body) + 4) + body
    sql = b"SELECT id FROM t WHERE id >= $1\0"
    s.sendall(msg(b"P", b"\0" + sql + struct.pack("!H", 0)) +
              msg(b"B", b"\0\0" + struct.pack("!HHI", 0, 1, 2) + b"20" + struct.pack("!H", 0)) +
              msg(b"E", b"\0" + struct.pack("!I", 3)) + msg(b"E", b"\0" + struct.pack("!I", 0)) +
              msg(b"S", b""))
    types, rest = [], b""
    while not types or types[-1] != b"Z":
        t, body, rest = read_msg(s, rest)
        types.append(t)
    assert types == [b"1", b"2", b"D", b"D", b"D", b"s", b"D", b"D", b"C", b"Z"], types
    s.close()
    pg.p.stop()


def test_tls_with_the_http_servers_certificate(http_pipeline, tmp_path):
    key, crt = tmp_path / "key.pem", tmp_path / "crt.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        str(key), "-out", str(crt), "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    p = http_pipeline(PROG, "--pg", "127.0.0.1:0", "--tls-cert", crt, "--tls-key", key,
                      "--api-key", "sekrit")
    pg = PgPipeline(p)
    c = psycopg2.connect(host="localhost", port=pg.port, user="u", dbname="d", password="sekrit",
                         sslmode="verify-full", sslrootcert=str(crt), connect_timeout=30)
    c.autocommit = True
    cur = c.cursor()
    cur.execute("INSERT INTO t (id, v) VALUES (1, 4), (2, 5)")
    cur.execute("SELECT n, total FROM agg")
    assert cur.fetchall() == [(2, 9)]
    c.close()
    # without TLS the same key still works (sslmode=disable), a wrong one does not
    c = pg.connect(password="sekrit", sslmode="disable")
    c.close()
    with pytest.raises(psycopg2.OperationalError):
        pg.connect(password="nope", sslmode="require")
    import urllib3
    urllib3.disable_warnings()
    requests.post(p.url("/stop").replace("http:", "https:"), verify=False,
                  headers={"Authorization": "Bearer sekrit"},
                  timeout=60)
    assert p.wait_exit().returncode == 0


CORPUS = os.environ.get("SLUICE_SLT_CORPUS") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "..", "shared",
    "testdata", "slt")


def slt_records(path):
    """(line, head words, sql, expected lines, conditions) of an SLT file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, cond = [], 0, []
    while i < len(lines):
        words = lines[i].split()
        if words and words[0] in ("skipif", "onlyif"):
            cond.append(words)
        if words and words[0] in ("statement", "query"):
            j, sql, exp = i + 1, [], []
            while j < len(lines) and lines[j] != "----" and lines[j].strip():
                sql.append(lines[j])
                j += 1
            if j < len(lines) and lines[j] == "----":
                j += 1
                while j < len(lines) and lines[j].strip():
                    exp.append(lines[j])
                    j += 1
            out.append((i + 1, words, "\n".join(sql), exp, cond))
            cond, i = [], j
            continue
        i += 1
    return out


def slt_value(v, t):
    import decimal
    if v is None:
        return "NULL"
    if t == "I":
        return str(int(v)) if not isinstance(v, str) else str(int(float(v)))
    if t == "R":
        return "%.3f" % float(v)
    s = str(v) if not isinstance(v, bool) else ("1" if v else "0")
    if isinstance(v, (float, decimal.Decimal)):
        s = "%.3f" % float(v)
    return "(empty)" if s == "" else "".join(c if " " <= c <= "~" else "@" for c in s)


@pytest.mark.parametrize("name", ["select1.test", "select2.test", "select3.test"])
def test_sqllogictest_records_through_the_wire(pg_pipeline, name):
    """Files of the sqllogictest corpus (their tables filled with INSERTs over
    the wire, their queries run over the wire: about 1,000 each) give
    SQLite's answers, as the in-process runner does."""
    import hashlib
    path = os.path.join(CORPUS, name)
    if not os.path.exists(path):
        pytest.skip("no sqllogictest corpus at %s" % CORPUS)
    recs = [r for r in slt_records(path)
            if not any((w[0] == "skipif" and w[1] == "sluice") or
                       (w[0] == "onlyif" and w[1] != "sluice") for w in r[4])]
    ddl = [r for r in recs if r[1][0] == "statement" and r[2].upper().startswith("CREATE TABLE")]
    prog = "\n".join(re.sub(r"\bINTEGER\b", "BIGINT", r[2]) +
                     " WITH ('materialized' = 'true');" for r in ddl)
    pg = pg_pipeline(prog)
    c = pg.connect()
    c.autocommit = True
    cur = c.cursor()
    ran, failures = 0, []
    for line, head, sql, exp, _ in recs:
        if head[0] == "statement":
            if sql.upper().startswith("CREATE TABLE"):
                continue
            try:
                cur.execute(sql)
                ok = head[1] == "ok"
            except psycopg2.Error:
                ok = head[1] == "error"
            ran += 1
            if not ok:
                failures.append("line %d: statement %s" % (line, sql))
            continue
        types, sort = head[1], head[2] if len(head) > 2 else "nosort"
        try:
            cur.execute(sql)
            rows = cur.fetchall()
        except psycopg2.Error as e:
            failures.append("line %d: %s: %s" % (line, sql, e))
            continue
        ran += 1
        vals = [[slt_value(v, types[k] if k < len(types) else "T") for k, v in enumerate(r)]
                for r in rows]
        if sort == "rowsort":
            vals.sort()
        flat = [v for r in vals for v in r]
        if sort == "valuesort":
            flat.sort()
        m = re.match(r"(\d+) values hashing to ([0-9a-f]+)$", exp[0]) if exp else None
        if m:
            h = hashlib.md5("".join(v + "\n" for v in flat).encode()).hexdigest()
            good = int(m.group(1)) == len(flat) and h == m.group(2)
        else:
            good = flat == exp
        if not good:
            failures.append("line %d: %s\n  got %r\n  want %r" % (line, sql, flat[:10], exp[:10]))
    c.close()
    pg.p.stop()
    assert ran >= 1000 and not failures, "%d of %d records differ:\n%s" % (
        len(failures), ran, "\n".join(failures[:10]))

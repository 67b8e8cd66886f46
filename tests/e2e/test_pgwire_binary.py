"""Binary result format of the extended protocol (docs/pg-wire.md, type
table): psycopg 3 binary cursors over a table with every type, values
compared with the text-format answer of the same query and with the Python
values that were inserted (NULLs and a row of extremes: INT64 min/max,
negative decimals, dates before 2000); COPY TO STDOUT (FORMAT binary) read
by psycopg 3's binary COPY; by hand, the format codes of RowDescription,
the bytes of a negative numeric and an early date, and the refusals.
"""
import datetime
import math
import struct
from decimal import Decimal

import pytest

from test_pgwire import PgPipeline, raw, read_msg, startup_packet

psycopg = pytest.importorskip("psycopg")

PROG = """
CREATE TABLE ty (id INT NOT NULL PRIMARY KEY, b BOOLEAN, t8 TINYINT, s SMALLINT, i INT,
    l BIGINT, dm DECIMAL(18,4), dz DECIMAL(10,0), r REAL, f DOUBLE, ch CHAR(5), vc VARCHAR(10),
    tx VARCHAR, d DATE, tm TIME, ts TIMESTAMP) WITH ('materialized' = 'true');
"""

COLS = "id, b, t8, s, i, l, dm, dz, r, f, ch, vc, tx, d, tm, ts"

D = datetime.date
DT = datetime.datetime
T = datetime.time
ROWS = [
    (1, True, 7, 300, 70000, 5000000000, Decimal("12.5000"), Decimal("42"), 0.1, 0.1, "ab",
     "héllo", "it's text", D(2024, 2, 29), T(13, 14, 15, 123456), DT(2024, 5, 6, 7, 8, 9, 123)),
    (2, False, -128, -32768, -2147483648, -9223372036854775808, Decimal("-0.0700"),
     Decimal("-9999999999"), -3.5, -1e308, "xyzzy", "", "", D(1999, 12, 31), T(0, 0, 0),
     DT(1999, 12, 31, 23, 59, 59, 999999)),
    (3, True, 127, 32767, 2147483647, 9223372036854775807, Decimal("-12345678901234.5678"),
     Decimal("0"), 3.4028234663852886e38, 2.2250738585072014e-308, "a b", "0123456789",
     "x" * 300, D(1, 1, 1), T(23, 59, 59, 999999), DT(1969, 12, 31, 23, 59, 59, 1)),
    (4, False, 0, 0, 0, 0, Decimal("0.0000"), Decimal("10000"), 0.0, 5e-324, "", "a", "b",
     D(1970, 1, 1), T(12, 0, 0), DT(2000, 1, 1, 0, 0, 0)),
    (5, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
    (6, True, 1, 1, 1, 1, Decimal("0.0001"), Decimal("100000000"), float("inf"), float("nan"),
     "q", "z", "z", D(9999, 12, 31), T(0, 0, 0, 1), DT(1900, 3, 1, 12, 0, 0, 500000)),
]


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return "CAST('%sInfinity' AS DOUBLE)" % ("-" if v < 0 else "")
        if v == 0 and math.copysign(1, v) < 0:
            return "CAST('-0' AS DOUBLE)"
        return repr(v)
    if isinstance(v, (int, Decimal)):
        return str(v)
    if isinstance(v, DT):
        return "TIMESTAMP '%s'" % v.isoformat(sep=" ")
    if isinstance(v, D):
        return "DATE '%04d-%02d-%02d'" % (v.year, v.month, v.day)
    if isinstance(v, T):
        return "TIME '%s'" % v.isoformat()
    return "'%s'" % v.replace("'", "''")


def f32(x):
    return struct.unpack("!f", struct.pack("!f", x))[0]


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    return type(a) is type(b) and a == b


def expected(row):
    """What PostgreSQL would give for row: REAL as float4, CHAR(5) padded."""
    out = list(row)
    if out[8] is not None:
        out[8] = f32(out[8])
    if out[10] is not None:
        out[10] = out[10].ljust(5)
    return tuple(out)


def test_binary_results_match_text_and_python(http_pipeline):
    pg = PgPipeline(http_pipeline(PROG, "--pg", "127.0.0.1:0"))
    c = psycopg.connect(host="127.0.0.1", port=pg.port, user="tester", dbname="x",
                        autocommit=True, connect_timeout=30)
    c.execute("INSERT INTO ty (%s) VALUES %s" % (
        COLS, ", ".join("(%s)" % ", ".join(lit(v) for v in r) for r in ROWS)))
    q = "SELECT %s FROM ty ORDER BY id" % COLS
    text = c.cursor().execute(q).fetchall()
    bcur = c.cursor(binary=True)
    binary = bcur.execute(q).fetchall()
    assert [d.type_code for d in bcur.description][:4] == [23, 16, 21, 21]
    assert len(binary) == len(ROWS)
    for want, t, b in zip(ROWS, text, binary):
        w = expected(want)
        for j, name in enumerate(COLS.split(", ")):
            assert same(b[j], w[j]), (name, b[j], w[j])
            tv = t[j]
            if j == 8 and tv is not None:
                tv = f32(tv)  # the text of a REAL is read as a float8 by psycopg
            assert same(b[j], tv), (name, b[j], t[j])
    # a parameter, an expression, a prepared statement, the unnamed column
    for i in (1, 2, 3):
        r = bcur.execute("SELECT l, dm * 2, d, CAST(l AS VARCHAR) FROM ty WHERE id = %s", (i,),
                         prepare=True).fetchone()
        w = ROWS[i - 1]
        assert r == (w[5], w[6] * 2, w[13], str(w[5]))
    # COPY TO STDOUT in binary format, read by psycopg 3's binary COPY
    types = ["int4", "bool", "int2", "int2", "int4", "int8", "numeric", "numeric", "float4",
             "float8", "bpchar", "varchar", "text", "date", "time", "timestamp"]
    cur = c.cursor()
    for src in ("(SELECT %s FROM ty ORDER BY id)" % COLS, "ty"):
        with cur.copy("COPY %s TO STDOUT (FORMAT binary)" % src) as cp:
            cp.set_types(types)
            got = list(cp.rows())
        got.sort(key=lambda r: r[0])
        assert len(got) == len(ROWS)
        for want, g in zip(ROWS, got):
            w = expected(want)
            assert all(same(g[j], w[j]) for j in range(len(w))), (g, w)
    import io
    import psycopg2
    c2 = psycopg2.connect(host="127.0.0.1", port=pg.port, user="tester", dbname="x",
                          connect_timeout=30)
    c2.autocommit = True
    cur2, data = c2.cursor(), io.BytesIO()
    cur2.copy_expert("COPY (SELECT id, l FROM ty ORDER BY id) TO STDOUT WITH BINARY", data)
    assert cur2.rowcount == len(ROWS)  # the tag, COPY n
    body = data.getvalue()
    assert body[:19] == b"PGCOPY\n\377\r\n\0" + bytes(8) and body[-2:] == b"\xff\xff"
    rows, pos = [], 19
    while body[pos:pos + 2] != b"\xff\xff":
        assert struct.unpack("!h", body[pos:pos + 2])[0] == 2
        pos += 2
        row = []
        for _ in range(2):
            n = struct.unpack("!i", body[pos:pos + 4])[0]
            pos += 4
            row.append(None if n < 0 else int.from_bytes(body[pos:pos + n], "big", signed=True))
            pos += max(n, 0)
        rows.append(tuple(row))
    assert rows == [(r[0], r[5]) for r in ROWS]
    data = io.BytesIO()  # no rows: the header and the trailer
    cur2.copy_expert("COPY (SELECT id FROM ty WHERE id < 0) TO STDOUT (FORMAT binary)", data)
    assert data.getvalue() == b"PGCOPY\n\377\r\n\0" + bytes(8) + b"\xff\xff"
    assert cur2.rowcount == 0
    c2.close()
    for bad in ("COPY ty FROM STDIN (FORMAT binary)",
                "COPY ty TO STDOUT (FORMAT binary, HEADER)",
                "COPY (SUBSCRIBE ty) TO STDOUT (FORMAT binary)"):
        with pytest.raises(psycopg.Error) as ei:
            cur.execute(bad)
        assert ei.value.sqlstate in ("0A000", "42601"), bad
    # per column formats: text for one, binary for the others (psycopg's
    # per-column choice is all or nothing, so raw messages here)
    s = raw(pg)
    s.sendall(startup_packet())
    rest = b""
    while True:
        t, body, rest = read_msg(s, rest)
        if t == b"Z":
            break

    def msg(t, body):
        return t + struct.pack("!I", len(body) + 4) + body

    def run(sql, fmts):
        s.sendall(msg(b"P", b"\0" + sql + b"\0" + struct.pack("!H", 0)) +
                  msg(b"B", b"\0\0" + struct.pack("!HH", 0, 0) +
                      struct.pack("!H", len(fmts)) + b"".join(struct.pack("!h", f) for f in fmts)) +
                  msg(b"D", b"P\0") + msg(b"E", b"\0" + struct.pack("!I", 0)) + msg(b"S", b""))
        out, r = [], rest_box[0]
        while True:
            t, body, r = read_msg(s, r)
            out.append((t, body))
            if t == b"Z":
                rest_box[0] = r
                return out
    rest_box = [rest]
    out = run(b"SELECT id, l, dm, d FROM ty WHERE id = 2", [0, 1, 1, 1])
    types = [t for t, _ in out]
    assert types == [b"1", b"2", b"T", b"D", b"C", b"Z"], types
    desc = out[2][1]
    # the format code is the last int16 of each column's description
    n = struct.unpack("!H", desc[:2])[0]
    pos, fmts = 2, []
    for _ in range(n):
        pos = desc.index(b"\0", pos) + 1 + 18
        fmts.append(struct.unpack("!h", desc[pos - 2:pos])[0])
    assert fmts == [0, 1, 1, 1]
    row = out[3][1]
    assert row == (struct.pack("!H", 4) + struct.pack("!I", 1) + b"2" +
                   struct.pack("!Iq", 8, -9223372036854775808) +
                   # -0.0700: 1 digit (700), weight -1, negative, dscale 4
                   struct.pack("!IHhHHH", 10, 1, -1, 0x4000, 4, 700) +
                   struct.pack("!Ii", 4, -1))  # 1999-12-31 is day -1 of PostgreSQL's epoch
    # a format code that is neither 0 nor 1, and a count that fits no column count
    out = run(b"SELECT id FROM ty", [2])
    err = [b for t, b in out if t == b"E"]
    assert err and b"C22023\0" in err[0], out
    out = run(b"SELECT id, l FROM ty", [1, 1, 1])
    err = [b for t, b in out if t == b"E"]
    assert err and b"C08P01\0" in err[0], out
    out = run(b"SELECT 1", [1])  # and the session goes on
    assert [t for t, _ in out] == [b"1", b"2", b"T", b"D", b"C", b"Z"]
    assert out[3][1] == struct.pack("!HIi", 1, 4, 1)
    s.close()
    c.close()
    pg.p.stop()


class RawSession:
    """A hand-driven protocol-3 session (trust authentication)."""

    def __init__(self, port, user):
        self.s = raw(type("P", (), {"port": port}))
        self.s.sendall(startup_packet(user))
        self.rest = b""
        while self.read()[0] != b"Z":
            pass

    def read(self):
        t, body, self.rest = read_msg(self.s, self.rest)
        return t, body

    def binary_rows(self, sql):
        """(column OIDs, DataRow bodies) of sql with every result column binary."""
        def msg(t, body):
            return t + struct.pack("!I", len(body) + 4) + body
        self.s.sendall(msg(b"P", b"\0" + sql.encode() + b"\0" + struct.pack("!H", 0)) +
                       msg(b"B", b"\0\0" + struct.pack("!HHHh", 0, 0, 1, 1)) +
                       msg(b"D", b"P\0") + msg(b"E", b"\0" + struct.pack("!I", 0)) +
                       msg(b"S", b""))
        oids, rows = [], []
        while True:
            t, body = self.read()
            assert t != b"E", body
            if t == b"T":
                pos = 2
                for _ in range(struct.unpack("!H", body[:2])[0]):
                    pos = body.index(b"\0", pos) + 1
                    oids.append(struct.unpack("!I", body[pos + 6:pos + 10])[0])
                    pos += 18
            elif t == b"D":
                rows.append(body)
            elif t == b"Z":
                return oids, rows

    def close(self):
        self.s.close()


def test_binary_bytes_are_postgresqls(http_pipeline):
    """The same table and rows in PostgreSQL 15 and in Sluice: every binary
    DataRow is byte for byte the one PostgreSQL sends, and so are the
    column type OIDs."""
    import pgserver
    ok, why = pgserver.available()
    if not ok:
        pytest.skip(why)
    pg = PgPipeline(http_pipeline(PROG, "--pg", "127.0.0.1:0"))
    srv = pgserver.PgServer()
    try:
        srv.start()
        srv.psql(PROG.replace("DOUBLE", "DOUBLE PRECISION").replace("TINYINT", "SMALLINT")
                 .replace(" WITH ('materialized' = 'true')", "")
                 .replace("tx VARCHAR,", "tx TEXT,"))  # PostgreSQL's bare VARCHAR is varchar
        values = ", ".join("(%s)" % ", ".join(lit(v) for v in r) for r in ROWS)
        srv.psql("INSERT INTO ty (%s) VALUES %s" % (
            COLS, values.replace(" AS DOUBLE)", " AS DOUBLE PRECISION)")))
        c = psycopg.connect(host="127.0.0.1", port=pg.port, user="tester", dbname="x",
                            autocommit=True, connect_timeout=30)
        c.execute("INSERT INTO ty (%s) VALUES %s" % (COLS, values))
        c.close()
        q = ("SELECT %s, dm * 3, CAST(NULL AS INT), CAST(l AS TEXT) FROM ty ORDER BY id"
             % COLS)
        theirs = RawSession(srv.port, "postgres")
        ours = RawSession(pg.port, "tester")
        want, got = theirs.binary_rows(q), ours.binary_rows(q)
        theirs.close()
        ours.close()
        assert got[0] == want[0]
        assert len(got[1]) == len(want[1]) == len(ROWS)
        for g, w in zip(got[1], want[1]):
            assert g == w
    finally:
        srv.remove()
    pg.p.stop()

"""tests/difftest/pgoracle.py - PostgreSQL 15 as the second oracle of the
differential test (issue 19), next to SQLite.

check.py asks an oracle for a session over a case's tables, feeds it the
stream's statements and asks it for every query's rows after every batch;
those rows become the expected values of the SLT file that sluice-slt runs.
Two oracles implement the same small interface:

  oracle.session(tables) -> s;  s.execute(sql);  s.rows(sql);  s.valid(sql);
  s.reset();  s.close();  oracle.name

SqliteOracle is Python's sqlite3 (check.py's original path). PgOracle talks
to a PostgreSQL server (the test starts a throw-away one on 127.0.0.1,
tests/e2e/pgserver.py) through psycopg2: every session is one connection and
one schema of its own in a database with the "C" collation, dropped at close.

What the two engines legitimately do differently is normalized here, in
the SQL sent to PostgreSQL only (Sluice always runs the generated text):
  - types: INTEGER/INT -> BIGINT (PostgreSQL's INTEGER is 32-bit), REAL ->
    DOUBLE PRECISION (PostgreSQL's REAL is 32-bit), DOUBLE -> DOUBLE
    PRECISION, text columns COLLATE "C" (byte order, as in Sluice);
  - `x / y` and `x % y` -> `x / NULLIF(y, 0)`: division by zero is NULL in
    Sluice (docs/sql.md, as in SQLite) and an error in PostgreSQL;
  - `CAST(f AS INTEGER)` -> `CAST(TRUNC(f) AS INTEGER)`: Sluice truncates a
    float toward zero, PostgreSQL rounds;
  - result types: SUM of BIGINT is BIGINT in Sluice, NUMERIC in PostgreSQL
    (so `SUM(x) / 3` would not truncate): each session's schema has its own
    sum(bigint) returning BIGINT, found before pg_catalog's; EXTRACT is
    CAST to BIGINT;
  - an ORDER BY item without NULLS FIRST/LAST gets the one Sluice uses by
    default (NULL is the smallest value: NULLS FIRST ascending, NULLS LAST
    descending; PostgreSQL's default is the opposite), in top-level ORDER
    BY, subqueries, windows and aggregates' ORDER BY alike.
The rewriting works on tokens and parenthesized groups: the generator
parenthesizes every binary operation, so `( a / b )` is always one group.
"""
import itertools
import os
import re
import threading

TOKEN_RE = re.compile(r"""'(?:[^']|'')*'|"[^"]*"|\d+\.\d*(?:[eE][-+]?\d+)?|\d+|[A-Za-z_][A-Za-z_0-9]*"""
                      r"""|\|\||<>|!=|<=|>=|\S""")


class Group(list):
    """A parenthesized group: its elements are tokens (str) and Groups."""


def tokenize(sql):
    return TOKEN_RE.findall(sql)


def parse(tokens):
    """Nested Groups for the parentheses of a token list."""
    stack = [Group()]
    for t in tokens:
        if t == "(":
            g = Group()
            stack[-1].append(g)
            stack.append(g)
        elif t == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            stack.pop()
        else:
            stack[-1].append(t)
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


def render(g):
    """The text of a group's elements: tokens joined by spaces (none around
    '.' or before ',')."""
    out = []
    prev = None
    for el in g:
        s = "(" + render(el) + ")" if isinstance(el, Group) else el
        if prev is not None and prev != "." and s not in (".", ","):
            out.append(" ")
        out.append(s)
        prev = s
    return "".join(out)


STOP_ORDER = {"LIMIT", "OFFSET", "FETCH", "UNION", "EXCEPT", "INTERSECT",
              "ROWS", "RANGE", "GROUPS"}  # the last three end a window's ORDER BY


def split_top(elems, sep=","):
    parts, cur = [], []
    for el in elems:
        if isinstance(el, str) and el == sep:
            parts.append(cur)
            cur = []
        else:
            cur.append(el)
    parts.append(cur)
    return parts


def up(el):
    return el.upper() if isinstance(el, str) else None


def trunc_cast(g, i):
    """CAST ( x AS INTEGER ) at g[i] -> CAST ( TRUNC ( x ) AS INTEGER ), in place."""
    if up(g[i]) == "CAST" and i + 1 < len(g) and isinstance(g[i + 1], Group):
        inner = g[i + 1]
        if len(inner) >= 3 and up(inner[-1]) in ("INTEGER", "INT", "BIGINT") and \
                up(inner[-2]) == "AS":
            g[i + 1] = Group(["TRUNC", Group(inner[:-2])] + inner[-2:])


def rewrite(g, nested=False):
    """The PostgreSQL form of one group's elements (recursively)."""
    g = Group(rewrite(el, True) if isinstance(el, Group) else el for el in g)
    out = rewrite_seq(g)
    # ( a / b ), ( a % b ): one division in a parenthesized group (last, so
    # that the divisor has had the rewrites above)
    ops = [i for i, el in enumerate(out) if el in ("/", "%")]
    if nested and len(ops) == 1 and 0 < ops[0] < len(out) - 1:
        i = ops[0]
        out = Group(out[:i + 1] + ["NULLIF", Group(out[i + 1:] + [",", "0"])])
    return out


def rewrite_seq(g):
    """The rewrites of one sequence of elements whose groups are rewritten
    already (an ORDER BY item's elements get them too)."""
    out = Group()
    i = 0
    while i < len(g):
        el = g[i]
        u = up(el)
        # CAST ( x AS INTEGER ) -> CAST ( TRUNC ( x ) AS INTEGER )
        trunc_cast(g, i)
        # EXTRACT is NUMERIC in PostgreSQL, BIGINT in Sluice
        if u == "EXTRACT" and i + 1 < len(g) and isinstance(g[i + 1], Group):
            out += ["CAST", Group(["EXTRACT", g[i + 1], "AS", "BIGINT"])]
            i += 2
            continue
        if u == "DOUBLE" and not (i + 1 < len(g) and up(g[i + 1]) == "PRECISION"):
            out += ["DOUBLE", "PRECISION"]
            i += 1
            continue
        if u == "ORDER" and i + 1 < len(g) and up(g[i + 1]) == "BY":
            j = i + 2
            while j < len(g) and up(g[j]) not in STOP_ORDER:
                j += 1
            items = split_top(g[i + 2:j])
            out += ["ORDER", "BY"]
            for k, it in enumerate(items):
                if k:
                    out.append(",")
                it = rewrite_seq(Group(it))  # CAST, EXTRACT, ... in the item
                out += it
                words = [up(x) for x in it]
                if "NULLS" not in words:
                    out += ["NULLS", "LAST" if words and words[-1] == "DESC" else "FIRST"]
            i = j
            continue
        out.append(el)
        i += 1
    return out


def translate(sql):
    """The SQL text PostgreSQL runs for a generated statement or query."""
    return render(rewrite(parse(tokenize(sql))))


TYPE_MAP = {"INTEGER": "BIGINT", "INT": "BIGINT", "BIGINT": "BIGINT", "FLOAT": "DOUBLE PRECISION",
            "REAL": "DOUBLE PRECISION", "DOUBLE": "DOUBLE PRECISION"}


def pg_ddl(t):
    parts = []
    for c in t.cols:
        base = c.decl.split("(")[0].upper()
        ty = TYPE_MAP.get(base) or ('TEXT COLLATE "C"' if c.ty == "text" else c.decl)
        d = "%s %s" % (c.name, ty)
        if c.pk:
            d += " PRIMARY KEY"
        elif c.notnull:
            d += " NOT NULL"
        parts.append(d)
    return "CREATE TABLE %s (%s)" % (t.name, ", ".join(parts))


def available():
    """(ok, why): psycopg2 and a PostgreSQL 15 server installation."""
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return False, "python3-psycopg2 is not installed (Debian package python3-psycopg2)"
    here = os.path.dirname(os.path.abspath(__file__))
    import sys
    sys.path.insert(0, os.path.join(here, "..", "e2e"))
    import pgserver
    return pgserver.available()


class PgOracle:
    """Sessions on a PostgreSQL server given by a libpq URI of its
    maintenance database; cases live in the database `difftest` (created
    with the C collation and ctype when missing)."""
    name = "PostgreSQL"
    DB = "difftest"

    def __init__(self, uri):
        import psycopg2
        self.pg = psycopg2
        c = psycopg2.connect(uri)
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.DB,))
        if not cur.fetchone():
            cur.execute("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' "
                        "LC_CTYPE 'C'" % self.DB)
        c.close()
        self.dsn = re.sub(r"/[^/?]*(\?|$)", "/%s\\1" % self.DB, uri, count=1) \
            if uri.count("/") >= 3 else uri + "/" + self.DB
        self.seq = itertools.count()
        self.lock = threading.Lock()

    def session(self, tables=()):
        with self.lock:
            n = next(self.seq)
        return PgSession(self, "c%d_%d" % (os.getpid(), n), tables)


class PgSession:
    def __init__(self, oracle, schema, tables):
        self.o, self.schema, self.tables = oracle, schema, list(tables)
        self.conn = oracle.pg.connect(oracle.dsn)
        self.conn.autocommit = True
        self.cur = self.conn.cursor()
        self.cur.execute("SET statement_timeout = '120s'")
        self.cur.execute("CREATE SCHEMA %s" % schema)
        # SUM(BIGINT) is BIGINT in Sluice, NUMERIC in PostgreSQL (2/3 is then
        # 0.67, not 0): the session's schema, searched before pg_catalog,
        # has its own sum(bigint) returning BIGINT (overflow is an error)
        self.cur.execute("CREATE AGGREGATE %s.sum(bigint) (SFUNC = int8pl, STYPE = bigint)"
                         % schema)
        self.cur.execute("SET search_path TO %s, pg_catalog" % schema)
        for t in self.tables:
            self.cur.execute(pg_ddl(t))

    def execute(self, sql):
        self.cur.execute(translate(sql))

    def rows(self, sql):
        self.cur.execute(translate(sql))
        return self.cur.fetchall()

    def valid(self, sql):
        try:
            self.cur.execute("EXPLAIN " + translate(sql))
            return True
        except self.o.pg.Error:
            return False
        except ValueError:
            return False

    def reset(self):
        for t in self.tables:
            self.cur.execute("DELETE FROM %s" % t.name)

    def close(self):
        try:
            self.cur.execute("DROP SCHEMA %s CASCADE" % self.schema)
        finally:
            self.conn.close()

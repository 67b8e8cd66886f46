"""tests/difftest/check.py - runs generated cases (gen.py) through Sluice's
sqllogictest runner and SQLite, and shrinks failures.

A case becomes one SLT file: its CREATE TABLEs, then each batch of the stream
as `statement ok` records followed by one `query` record per query, with the
expected values computed by Python's sqlite3 over the same statements and
printed the way the SLT harness prints them (I/R/T letters, `rowsort`, one
value per line, NULL, `(empty)`, R as %.3f). The file runs twice:
`--incremental --check-steps --workers W` (each table fed over several
steps with deletions and re-insertions; every step compared with a
from-scratch evaluation, the last also with SQLite) and one-shot with
another worker count.

A failing query is shrunk: first to the table contents at its check point,
then rows are removed (delta debugging) and the query is simplified
(set-operation branches, ORDER BY, select items, WHERE/HAVING/ON
conjuncts, joins, GROUP BY keys, sub-expressions) while it keeps failing in
the same way; candidates are batched into one SLT file per runner call.

The oracle is SQLite (SqliteOracle) unless the case names another
(pgoracle.PgOracle): build_slt and the minimizer ask it through sessions
(execute, rows, reset), the same for both.
"""
import copy
import hashlib
import os
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import gen

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "ThreadSanitizer", "Segmentation fault", "Aborted")
UBSAN_RE = re.compile(r"\.[ch]:\d+(:\d+)?: runtime error:")  # not Sluice's own "runtime error"
RUN_TIMEOUT = 300

# Test hook: a function applied to a query's SQL before SQLite evaluates it
# (never to what Sluice runs), so that a test can plant a difference and
# check that it is found and minimized.
SQLITE_REWRITE = None


def sqlite_rows(db, sql):
    return db.execute(SQLITE_REWRITE(sql) if SQLITE_REWRITE else sql).fetchall()


class SqliteOracle:
    """Python's sqlite3 as the oracle (the other one is pgoracle.PgOracle;
    both give sessions with the same methods)."""
    name = "SQLite"

    def session(self, tables=()):
        return SqliteSession(tables)


class SqliteSession:
    def __init__(self, tables):
        self.tables = list(tables)
        self.db = gen.sqlite_db(self.tables)

    def execute(self, sql):
        self.db.execute(sql)

    def rows(self, sql):
        return sqlite_rows(self.db, sql)

    def valid(self, sql):
        try:
            self.db.execute("EXPLAIN " + sql)
            return True
        except Exception:
            return False

    def reset(self):
        for t in self.tables:
            self.db.execute("DELETE FROM %s" % t.name)

    def close(self):
        self.db.close()


SQLITE = SqliteOracle()


def oracle_of(case):
    return getattr(case, "oracle", None) or SQLITE


def find_runner(explicit=None):
    b = explicit or os.environ.get("SLUICE_SLT") or os.path.join(REPO, "build", "debug", "sluice-slt")
    if not os.path.isabs(b):
        b = os.path.abspath(b)
    return b


# ---------------------------------------------------------------- values

def fmt_value(v, letter):
    """One value as the SLT harness prints it (../shared/testdata/slt/README.md)."""
    if v is None:
        return "NULL"
    if letter == "I":
        if isinstance(v, float):
            return str(int(v))  # truncation toward zero
        if isinstance(v, str):
            m = re.match(r"\s*[-+]?\d+", v)
            return str(int(m.group(0))) if m else "0"
        return str(int(v))
    if letter == "R":
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                v = 0.0
        v = float(v)
        if v == 0:
            # Sluice stores -0.0 as 0.0 (a Z-set key is canonical); SQLite
            # keeps the sign. The two are equal in SQL.
            v = 0.0
        return "%.3f" % v
    # T
    if isinstance(v, float):
        s = "%.15g" % v
        return s if any(c in s for c in ".eEni") else s + ".0"
    s = str(v)
    if s == "":
        return "(empty)"
    return "".join(c if 0x20 <= ord(c) <= 0x7e else "@" for c in s)


def expected_block(rows, letters):
    """The lines of the expected block: values one per line, rows sorted as
    `rowsort` does; an MD5 line when a value would be a blank line (which
    would end the record)."""
    vals = sorted([fmt_value(v, letters[j]) for j, v in enumerate(r)] for r in rows)
    flat = [v for r in vals for v in r]
    if any(not v.strip() for v in flat):
        h = hashlib.md5("".join(v + "\n" for v in flat).encode()).hexdigest()
        return ["%d values hashing to %s" % (len(flat), h)], flat
    return flat, flat


# ---------------------------------------------------------------- SLT files

class Rec:
    """One record of an SLT file we write. line: its header line in the
    last rendering."""
    def __init__(self, kind, sql, qi=None, batch=None, letters=None, expect=None,
                 values=None, tag=None, query=None):
        self.kind, self.sql, self.line = kind, sql, None
        self.qi, self.batch, self.letters = qi, batch, letters
        self.expect, self.values, self.tag, self.query = expect, values, tag, query
        self.skipped = False  # marked `skipif sluice` in the last rendering


class Slt:
    def __init__(self):
        self.recs = []

    def statement(self, sql, **kw):
        self.recs.append(Rec("statement", sql, **kw))

    def query(self, sql, letters, rows, **kw):
        expect, values = expected_block(rows, letters)
        self.recs.append(Rec("query", sql, letters=letters, expect=expect, values=values, **kw))

    def render(self, skip=None, upto=None):
        """The file's text. skip(rec) -> reason or None: records to mark
        `skipif sluice` (with the reason as a comment); upto: only the first
        upto records."""
        lines = []
        for r in self.recs[:upto]:
            why = skip(r) if skip else None
            if why:
                lines += ["# " + why, "skipif sluice"]
            r.line = len(lines) + 1
            r.skipped = bool(why)
            if r.kind == "statement":
                lines += ["statement ok", r.sql, ""]
            else:
                lines += ["query %s rowsort" % r.letters, r.sql, "----"] + r.expect + [""]
        return "\n".join(lines) + "\n"

    @property
    def text(self):
        return self.render()

    def rec_at(self, line):
        for r in self.recs:
            if r.line == line:
                return r
        return None

    def nqueries(self):
        return sum(1 for r in self.recs if r.kind == "query" and not r.skipped)


def build_slt(case):
    """The case as an SLT file: the stream's batches, every query after
    every batch, with the oracle's answers. A query that the oracle fails
    to run at some check (PostgreSQL: a run-time error such as a cast out
    of range) is left out of the case (case.dropped counts them); SQLite
    never fails a query the generator kept."""
    oracle = oracle_of(case)
    while True:
        sess = oracle.session(case.tables)
        s = Slt()
        bad = None
        try:
            for t in case.tables:
                s.statement(t.ddl())
            for b, stmts in enumerate(case.batches):
                for st in stmts:
                    sess.execute(st)
                    s.statement(st, batch=b)
                for qi, q in enumerate(case.queries):
                    sql = q.sql()
                    try:
                        rows = sess.rows(sql)
                    except Exception:
                        if oracle is SQLITE:
                            raise
                        bad = qi
                        break
                    s.query(sql, q.letters(), rows, qi=qi, batch=b, query=q)
                if bad is not None:
                    break
        finally:
            sess.close()
        if bad is None:
            return s
        case.queries = case.queries[:bad] + case.queries[bad + 1:]
        case.dropped = getattr(case, "dropped", 0) + 1


# ---------------------------------------------------------------- running

class Mode:
    def __init__(self, incremental, workers):
        self.incremental, self.workers = incremental, workers

    def args(self):
        a = ["--incremental", "--check-steps"] if self.incremental else []
        return a + ["--workers", str(self.workers)]

    def __str__(self):
        return " ".join(self.args())


class Failure:
    def __init__(self, line, kind, msg, detail=""):
        self.line, self.kind, self.msg, self.detail = line, kind, msg, detail
        self.rec = None     # the record (Rec) that failed
        self.mode = None    # the run (Mode)
        self.file = None    # the SLT file that was run
        self.qindex = 0     # query records run before it in that file


FAIL_RE = re.compile(r"^FAIL (.*?):(\d+): (.*)$")


def classify(msg):
    if msg.startswith("wrong result"):
        return "wrong"
    if msg.startswith("incremental check"):
        return "steps"
    if msg.startswith("query failed"):
        return "error"
    if msg.startswith("statement"):
        return "statement"
    return "other"


class RunResult:
    def __init__(self, rc, out, err, crashed, elapsed):
        self.rc, self.out, self.err, self.crashed, self.elapsed = rc, out, err, crashed, elapsed
        self.failures = parse_failures(out) if not crashed else []
        m = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", out, re.M)
        self.counts = tuple(int(x) for x in m.groups()) if m else None


def parse_failures(out):
    fails = []
    cur = None
    for line in out.splitlines():
        m = FAIL_RE.match(line)
        if m:
            cur = Failure(int(m.group(2)), classify(m.group(3)), m.group(3))
            fails.append(cur)
        elif cur is not None and line.startswith("  "):
            cur.detail += line + "\n"
        else:
            cur = None
    return fails


def run_runner(binary, path, mode, timeout=RUN_TIMEOUT):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    argv = [binary] + mode.args() + ["--verbose", path]
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        return RunResult(-1, (e.stdout or b"").decode("utf-8", "replace"),
                         "timeout after %d s" % timeout, True, time.time() - t0)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    crashed = (p.returncode not in (0, 1) or any(m in err for m in SANITIZER_MARKERS)
               or UBSAN_RE.search(err) is not None)
    return RunResult(p.returncode, out, err, crashed, time.time() - t0)


def run_text(binary, text, mode, workdir, name="run.test"):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return run_runner(binary, path, mode)


# ---------------------------------------------------------------- probing

def probe_features(binary, keep_buggy=False):
    """Which optional features the engine accepts: each probe query runs
    once (one-shot mode) over a tiny table; a feature is on when its query
    compiles and runs (wrong answers are for the real test to find).
    Returns (set of features, notes)."""
    notes = []
    avail = {f for f, (on, _, _) in gen.FEATURES.items() if on}
    probes = {f: p for f, (on, p, _) in gen.FEATURES.items() if not on and p}
    if not os.access(binary, os.X_OK):
        raise SystemExit("difftest: runner %s not found (make build/debug/sluice-slt)" % binary)
    db = gen.sqlite_db()
    s = Slt()
    for st in gen.PROBE_SCHEMA:
        db.execute(st)
        s.statement(st)
    for f, sql in probes.items():
        if f in gen.PG_ONLY:  # SQLite cannot answer: only an error matters here
            s.query(sql, gen.PG_PROBE_LETTERS[f], [], tag=f)
            continue
        cur = db.execute(sql)
        rows = cur.fetchall()
        letters = "".join(
            "R" if any(isinstance(r[j], float) for r in rows) else
            "T" if any(isinstance(r[j], str) for r in rows) else "I"
            for j in range(len(cur.description)))
        s.query(sql, letters, rows, tag=f)
    db.close()
    with tempfile.TemporaryDirectory(prefix="difftest-probe-") as d:
        res = run_text(binary, s.render(), Mode(False, 1), d)
        if res.crashed:  # one probe at a time to find the culprit
            for r in s.recs:
                if r.kind != "query":
                    continue
                one = Slt()
                one.recs = [x for x in s.recs if x.kind == "statement"] + [r]
                rr = run_text(binary, one.render(), Mode(False, 1), d)
                if rr.crashed:
                    notes.append("feature %s: probe crashed the engine; left off" % r.tag)
                elif not any(x.kind == "error" for x in rr.failures):
                    avail.add(r.tag)
        else:
            s.render()
            bad = {x.line for x in res.failures if x.kind == "error"}
            for r in s.recs:
                if r.kind == "query" and r.line not in bad:
                    avail.add(r.tag)
    if not keep_buggy:
        for f in sorted(avail & set(gen.KNOWN_BUGS)):
            notes.append("feature %s left off: %s" % (f, gen.KNOWN_BUGS[f]))
        avail -= set(gen.KNOWN_BUGS)
    return avail, notes


# ---------------------------------------------------------------- one seed

class SeedResult:
    def __init__(self, seed):
        self.seed = seed
        self.checks = 0
        self.failures = []
        self.elapsed = 0.0
        self.files = []
        self.features = None
        self.nqueries = None
        self.repro = None
        self.notes = []
        self.oracle = SQLITE.name
        self.dropped = 0    # queries the oracle failed to run (left out)
        self.rejected = 0   # generated queries the oracle rejected (PostgreSQL's EXPLAIN)

    def report(self):
        out = ["difftest seed %d (%s): %d of %d checks failed (case files %s)" % (
            self.seed, self.oracle, len(self.failures), self.checks, ", ".join(self.files))]
        for f in self.failures[:5]:
            r = f.rec
            where = ("query %d after batch %d" % (r.qi, r.batch)) if r and r.qi is not None else "record"
            out.append("  line %d (%s), sluice-slt %s: %s" % (f.line, where, f.mode, f.msg))
        if len(self.failures) > 5:
            out.append("  ... %d more" % (len(self.failures) - 5))
        out += self.notes
        if self.repro:
            out.append(self.repro)
        if self.features is not None:
            out.append("  regenerate: python3 tests/difftest/gen.py --seed %d --queries %d --no-probe "
                       "--features %s%s" % (self.seed, self.nqueries, ",".join(sorted(self.features)),
                " --ignore-known-bugs" if gen.IGNORE_KNOWN_BUGS else "") +
                (" --oracle postgresql" if self.oracle != SQLITE.name else ""))
        return "\n".join(out)


def run_case(case, binary, workdir, minimize=True):
    res = SeedResult(case.seed)
    t0 = time.time()
    slt = build_slt(case)
    for mode in (Mode(True, case.workers_inc), Mode(False, case.workers_full)):
        def skip(r, mode=mode):
            return gen.mode_exclusion(r.query, mode.incremental, mode.workers) if r.query else None
        text = slt.render(skip)
        path = os.path.join(workdir, "seed%d.%s.test" % (case.seed, "inc" if mode.incremental else "full"))
        with open(path, "w") as f:
            f.write(text)
        res.files.append(path)
        rr = run_runner(binary, path, mode)
        res.checks += slt.nqueries()
        if rr.crashed:
            res.failures.append(locate_crash(binary, slt, skip, mode, workdir, rr))
            break
        nskip = sum(1 for r in slt.recs if r.skipped)
        if rr.counts != (len(slt.recs) - nskip - len(rr.failures), len(rr.failures), nskip):
            res.notes.append("  runner counted %r for %d records (%d skipped)" % (
                rr.counts, len(slt.recs), nskip))
        qindex = {}
        for r in slt.recs:
            if r.kind == "query" and not r.skipped:
                qindex[r.line] = len(qindex)
        for f in rr.failures:
            f.rec = slt.rec_at(f.line)
            f.qindex = qindex.get(f.line, 0)
            f.mode = mode
            f.file = path
            res.failures.append(f)
    if res.failures and minimize:
        first = min((f for f in res.failures if f.rec is not None and f.rec.kind == "query"),
                    key=lambda f: (f.rec.batch, f.rec.qi), default=None)
        if first is not None:
            try:
                res.repro = Minimizer(case, binary, workdir, first).run()
            except Exception as e:  # the report must still come out
                import traceback
                res.repro = "  (minimization failed: %s)\n%s" % (e, traceback.format_exc())
        else:
            f = res.failures[0]
            res.repro = "  rerun: %s %s --verbose %s\n%s" % (binary, f.mode, f.file, f.detail)
    res.elapsed = time.time() - t0
    return res


def locate_crash(binary, slt, skip, mode, workdir, rr):
    """The first record at which the runner crashes: bisect on prefixes."""
    lo, hi = 0, len(slt.recs)  # a prefix of hi records crashes; of lo does not
    last = rr
    while hi - lo > 1:
        mid = (lo + hi) // 2
        r = run_text(binary, slt.render(skip, upto=mid), mode, workdir, "crash.test")
        if r.crashed:
            hi, last = mid, r
        else:
            lo = mid
    path = os.path.join(workdir, "crash.test")
    with open(path, "w") as f:
        f.write(slt.render(skip, upto=hi))
    rec = slt.recs[hi - 1]
    f = Failure(rec.line, "crash", "crashed (exit %d)" % last.rc, last.err[-3000:])
    f.rec, f.mode, f.file = rec, mode, path
    f.qindex = sum(1 for r in slt.recs[:hi - 1] if r.kind == "query" and not r.skipped)
    return f


def run_seeds(seeds, binary, feats, nqueries, jobs=1, minimize=True, out_dir=None, oracle=None):
    """Yields a SeedResult per seed, in the order of seeds (jobs of them run
    at a time). oracle: SQLITE (None) or a pgoracle.PgOracle."""
    base = out_dir or tempfile.mkdtemp(prefix="difftest-")
    os.makedirs(base, exist_ok=True)

    def one(seed):
        case = gen.gen_case(seed, feats, nqueries, oracle=oracle)
        d = os.path.join(base, "seed%d" % seed)
        os.makedirs(d, exist_ok=True)
        r = run_case(case, binary, d, minimize)
        r.features, r.nqueries = feats, nqueries
        r.oracle = oracle_of(case).name
        r.dropped = case.dropped
        r.rejected = getattr(case, "rejected", 0)
        if not r.failures and out_dir is None:
            for fn in os.listdir(d):
                os.unlink(os.path.join(d, fn))
            os.rmdir(d)
        return r
    if jobs <= 1:
        for s in seeds:
            yield one(s)
        return
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(one, s) for s in seeds]
        try:
            for fu in futs:
                yield fu.result()
        finally:
            for fu in futs:
                fu.cancel()


# ---------------------------------------------------------------- minimizing

def snapshot(case, batch):
    """Table contents after `batch`: {table name: [row tuple]}."""
    db = gen.sqlite_db(case.tables)
    for b in range(batch + 1):
        for st in case.batches[b]:
            db.execute(st)
    rows = {t.name: db.execute("SELECT * FROM %s ORDER BY rowid" % t.name).fetchall()
            for t in case.tables}
    db.close()
    return rows


def insert_sql(t, rows):
    vg_lit = []
    for r in rows:
        vals = []
        for c, v in zip(t.cols, r):
            if v is None:
                vals.append("NULL")
            elif c.ty == "int":
                vals.append(str(v))
            elif c.ty == "float":
                vals.append(gen.fmt_float(v))
            else:
                vals.append(gen.sql_str(v))
        vg_lit.append("(%s)" % ", ".join(vals))
    return "INSERT INTO %s VALUES %s" % (t.name, ", ".join(vg_lit))


class Minimizer:
    MAX_RUNS = 120

    def __init__(self, case, binary, workdir, failure):
        self.case, self.binary, self.workdir = case, binary, workdir
        self.failure = failure
        self.kind = failure.kind
        self.mode = failure.mode
        self.reps = 3 if self.mode.incremental else 1
        self.runs = 0
        self.tables = case.tables
        self.sess = None

    # ---- candidate evaluation
    def session(self):
        """The oracle's session for candidates, emptied."""
        if self.sess is None:
            self.sess = oracle_of(self.case).session(self.tables)
        else:
            self.sess.reset()
        return self.sess

    def block(self, s, rows, query, idx, first):
        """Statements giving the tables `rows`, then the query (reps times)."""
        db = self.session()
        stmts = ["DELETE FROM %s" % t.name for t in self.tables] if not first else []
        for t in self.tables:
            if rows[t.name]:
                stmts.append(insert_sql(t, rows[t.name]))
                db.execute(stmts[-1])
        sql = query.sql()
        res = db.rows(sql)  # raises when the candidate is not valid SQL
        for st in stmts:
            s.statement(st, tag=idx)
        for _ in range(self.reps):
            s.query(sql, query.letters(), res, tag=idx)

    def ddl(self):
        s = Slt()
        for t in self.tables:
            s.statement(t.ddl())
        return s

    def failing(self, cands, mode=None):
        """Index of the first candidate (rows, query) that fails the way the
        original did, or None. Candidates run in one file (one per file when
        the failure is a crash)."""
        mode = mode or self.mode
        if self.kind == "crash":
            for i, (rows, q) in enumerate(cands):
                s = self.ddl()
                try:
                    self.block(s, rows, q, i, True)
                except Exception:
                    continue
                self.runs += 1
                if run_text(self.binary, s.render(), mode, self.workdir, "min.test").crashed:
                    return i
            return None
        s = self.ddl()
        ok = []
        for i, (rows, q) in enumerate(cands):
            try:
                self.block(s, rows, q, i, not ok)
                ok.append(i)
            except Exception:  # not valid SQLite: not a candidate
                continue
        if not ok:
            return None
        self.runs += 1
        rr = run_text(self.binary, s.render(), mode, self.workdir, "min.test")
        if rr.crashed:
            return None
        hit = set()
        for f in rr.failures:
            rec = s.rec_at(f.line)
            if rec is not None and rec.kind == "query" and f.kind == self.kind:
                hit.add(rec.tag)
        for i in ok:
            if i in hit:
                return i
        return None

    def detail(self, rows, q, mode):
        """The runner's verbose output for one candidate."""
        s = self.ddl()
        self.block(s, rows, q, 0, True)
        path = os.path.join(self.workdir, "seed%d.min.test" % self.case.seed)
        with open(path, "w") as f:
            f.write(s.render())
        rr = run_runner(self.binary, path, mode)
        return path, s, rr

    # ---- shrinking
    def shrink_rows(self, rows, q):
        items = [(t, r) for t in sorted(rows) for r in rows[t]]

        def as_rows(lst):
            d = {t.name: [] for t in self.tables}
            for t, r in lst:
                d[t].append(r)
            return d
        n = 2
        while len(items) >= 1 and self.runs < self.MAX_RUNS:
            chunk = max(1, (len(items) + n - 1) // n)
            parts = [items[i:i + chunk] for i in range(0, len(items), chunk)]
            cands = []
            for i in range(len(parts)):
                rest = [x for j, p in enumerate(parts) if j != i for x in p]
                cands.append(rest)
            if len(parts) > 1:
                cands = [p for p in parts if len(p) < len(items)] + cands
            else:
                cands = [[]]
            hit = self.failing([(as_rows(c), q) for c in cands])
            if hit is not None:
                items = cands[hit]
                n = max(2, n - 1) if len(parts) > 1 else 2
                if not items:
                    break
                continue
            if chunk == 1:
                break
            n = min(len(items), n * 2)
        return as_rows(items)

    def shrink_query(self, rows, q):
        progress = True
        while progress and self.runs < self.MAX_RUNS:
            progress = False
            cands = list(mutations(q))
            for i in range(0, len(cands), 40):
                part = cands[i:i + 40]
                hit = self.failing([(rows, c) for c in part])
                if hit is not None:
                    q = part[hit]
                    progress = True
                    break
        return q

    # ---- history mode: the stream's statements replayed, the query at its
    # original position (the runner derives each query's step plan from the
    # number of queries before it, and a table's row order from the
    # statements that built it)
    def history_slt(self, stmts, q):
        db = self.session()
        for st in stmts:
            db.execute(st)
        sql = q.sql()
        res = db.rows(sql)
        s = self.ddl()
        # padding: queries that fail to compile still advance the runner's
        # plan seed (an extra table would change the circuit instead)
        for _ in range(self.failure.qindex):
            s.query("SELECT no_such_column FROM %s" % self.tables[0].name, "I", [], tag="pad")
        for st in stmts:
            s.statement(st)
        s.query(sql, q.letters(), res, tag="q")
        return s

    def history_fails(self, stmts, q, mode=None):
        try:
            s = self.history_slt(stmts, q)
        except Exception:
            return False
        self.runs += 1
        rr = run_text(self.binary, s.render(), mode or self.mode, self.workdir, "min.test")
        if self.kind == "crash":
            return rr.crashed
        for f in rr.failures:
            rec = s.rec_at(f.line)
            if rec is not None and rec.tag == "q" and f.kind == self.kind:
                return True
        return False

    def run_history(self, q):
        rec = self.failure.rec
        stmts = [st for b in range(rec.batch + 1) for st in self.case.batches[b]]
        if not self.history_fails(stmts, q):
            return None
        n = 2  # delta debugging over the statements
        while len(stmts) > 1 and self.runs < self.MAX_RUNS:
            chunk = max(1, (len(stmts) + n - 1) // n)
            parts = [stmts[i:i + chunk] for i in range(0, len(stmts), chunk)]
            done = False
            for i in range(len(parts)):
                rest = [x for j, p in enumerate(parts) if j != i for x in p]
                if self.history_fails(rest, q):
                    stmts, n, done = rest, max(2, n - 1), True
                    break
            if not done:
                if chunk == 1:
                    break
                n = min(len(stmts), n * 2)
        progress = True
        while progress and self.runs < self.MAX_RUNS:
            progress = False
            for c in mutations(q):
                if self.runs >= self.MAX_RUNS:
                    break
                if self.history_fails(stmts, c):
                    q, progress = c, True
                    break
        s = self.history_slt(stmts, q)
        path = os.path.join(self.workdir, "seed%d.min.test" % self.case.seed)
        with open(path, "w") as f:
            f.write(s.render())
        rr = run_runner(self.binary, path, self.mode)
        lines = ["reproduction (%d runner calls): the statements replayed in the runner, then "
                 "the query as query record #%d of the file (the runner's step plan depends on "
                 "it); fails with sluice-slt %s:" % (self.runs, self.failure.qindex + 1, self.mode)]
        lines += ["  %s;" % t.ddl() for t in self.tables]
        lines += ["  %s;" % st for st in stmts]
        lines.append("  %s;" % q.sql())
        return self.describe(lines, s, rr, self.mode, path)

    def describe(self, lines, s, rr, mode, path):
        qrec = [r for r in s.recs if r.kind == "query" and r.tag != "pad"][0]
        lines.append("  expected (%s; types %s, rows sorted): %s" % (
            oracle_of(self.case).name, qrec.letters, " ".join(qrec.values) if qrec.values else "(no rows)"))
        fails = [f for f in rr.failures if s.rec_at(f.line) is not None]
        if fails:
            lines.append("  sluice: %s" % fails[0].msg)
            for l in fails[0].detail.splitlines():
                if not l.strip().startswith("sql:"):
                    lines.append("  " + l.strip())
        elif rr.crashed:
            lines.append("  sluice crashed:")
            lines += ["  " + l for l in rr.err[-2500:].splitlines()]
        else:
            lines.append("  (the final rerun passed: the failure is not deterministic)")
        lines.append("  rerun: %s %s --verbose %s" % (self.binary, mode, path))
        return "\n".join(lines)

    def run(self):
        try:
            return self.run1()
        finally:
            if self.sess is not None:
                self.sess.close()

    def run1(self):
        rec = self.failure.rec
        q = self.case.queries[rec.qi]
        rows = snapshot(self.case, rec.batch)
        if self.failing([(rows, q)]) is None and self.mode.incremental:
            self.reps = 12  # more step plans
        if self.failing([(rows, q)]) is None:
            self.reps = 1
            out = self.run_history(q)
            if out is not None:
                return out
            return ("  not reproduced in a smaller file; rerun the case file:\n"
                    "  %s %s --verbose %s\n%s" % (
                        self.binary, self.mode, self.failure.file, self.failure.detail))
        for _ in range(3):
            before = (sum(len(v) for v in rows.values()), len(q.sql()))
            rows = self.shrink_rows(rows, q)
            q = self.shrink_query(rows, q)
            if (sum(len(v) for v in rows.values()), len(q.sql())) == before or self.runs >= self.MAX_RUNS:
                break
        # the simplest mode that still fails
        mode = self.mode
        for m in (Mode(False, 1), Mode(False, mode.workers), Mode(True, 1)):
            if (m.incremental, m.workers) == (mode.incremental, mode.workers):
                continue
            if (m.incremental and not mode.incremental) or m.workers > mode.workers:
                continue
            if self.failing([(rows, q)], m) is not None:
                mode = m
                break
        path, s, rr = self.detail(rows, q, mode)
        used = [t for t in self.tables if rows[t.name] or re.search(r"\b%s\b" % t.name, q.sql())]
        lines = ["minimized reproduction (%d runner calls); fails with sluice-slt %s:" % (
            self.runs, mode)]
        for t in used:
            lines.append("  %s;" % t.ddl())
        for t in used:
            if rows[t.name]:
                lines.append("  %s;" % insert_sql(t, rows[t.name]))
        lines.append("  %s;" % q.sql())
        return self.describe(lines, s, rr, mode, path)


def recompute_types(q):
    q.types = []
    for j in range(len(q.branches[0].items)):
        tys = {b.items[j].ty for b in q.branches}
        q.types.append("float" if "float" in tys else q.branches[0].items[j].ty)


def mutations(q, keep_cols=False):
    """Smaller variants of q, biggest reductions first. keep_cols: q is a
    subquery whose columns the outer query refers to by position."""
    def cp():
        return copy.deepcopy(q)
    # set-operation branches
    if len(q.branches) > 1:
        for bi in range(len(q.branches)):
            c = cp()
            del c.branches[bi]
            del c.ops[max(0, bi - 1)]
            recompute_types(c)
            yield c
    if q.order is not None:
        c = cp()
        c.order = c.limit = c.offset = None
        yield c
        if q.offset is not None:
            c = cp()
            c.offset = None
            yield c
    # a whole FROM item (join) that nothing else refers to
    for bi, b in enumerate(q.branches):
        if len(b.frm) > 1:
            for i in range(len(b.frm)):
                c = cp()
                cb = c.branches[bi]
                gone = cb.frm[i]
                rest = [x for x in cb.frm if x is not gone]
                exprs = cb.items + cb.where + cb.having + (cb.group or []) + [
                    e for x in rest for e in x.on]
                if any(gone.alias in e.refs for e in exprs):
                    continue
                if i == 0:
                    rest[0].join = ""
                    cb.where = rest[0].on + cb.where
                    rest[0].on = []
                cb.frm = rest
                yield c
    # select items
    ncol = len(q.branches[0].items)
    has_win = any(e.win for b in q.branches for e in b.items)
    if ncol > 1 and not keep_cols:
        for j in range(ncol):
            if has_win and not q.branches[0].items[j].win:
                continue
            c = cp()
            for b in c.branches:
                del b.items[j]
            if c.order is not None:
                c.order = [(i if i < j else i - 1, d, n) for i, d, n in c.order if i != j]
            recompute_types(c)
            yield c
    for bi, b in enumerate(q.branches):
        for name in ("where", "having"):
            for i in range(len(getattr(b, name))):
                c = cp()
                del getattr(c.branches[bi], name)[i]
                yield c
        for fi_i, fi in enumerate(b.frm):
            for i in range(len(fi.on)):
                c = cp()
                cf = c.branches[bi].frm[fi_i]
                del cf.on[i]
                if not cf.on:
                    if cf.join.strip() not in ("JOIN", "INNER JOIN"):
                        continue
                    cf.join = " CROSS JOIN "
                yield c
        if b.distinct:
            c = cp()
            c.branches[bi].distinct = False
            yield c
        if b.group:
            for i, k in enumerate(b.group):
                used = any(node is k for e in b.items + b.having for _, node in e.nodes())
                if used or len(b.group) == 1:
                    continue
                c = cp()
                del c.branches[bi].group[i]
                yield c
    # sub-expressions: a node replaced by one of its children of the same type
    for bi, b in enumerate(q.branches):
        for lst_name in ("items", "where", "having"):
            lst = getattr(b, lst_name)
            for i, e in enumerate(lst):
                for path, node in e.nodes():
                    for k in node.kids:
                        if k.ty != node.ty and not (lst_name == "items" and not path):
                            continue
                        if k.ty != node.ty:
                            continue
                        if (node.agg_ok and not k.agg_ok) or (node.row_ok and not k.row_ok):
                            continue
                        if b.group and any(node is g for g in b.group):
                            continue
                        c = cp()
                        cl = getattr(c.branches[bi], lst_name)
                        cl[i] = cl[i].replace(path, copy.deepcopy(k))
                        recompute_types(c)
                        yield c
    # the same inside subqueries in FROM
    for bi, b in enumerate(q.branches):
        for fi_i, fi in enumerate(b.frm):
            if isinstance(fi.src, gen.Query):
                for m in mutations(fi.src, keep_cols=True):
                    c = cp()
                    c.branches[bi].frm[fi_i].src = m
                    yield c

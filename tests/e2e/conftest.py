"""Shared helpers for Sluice's end-to-end tests.

Everything here is standard library only: running the binary, writing
connector clauses, parsing the --dump CSV format (which, unlike Python's csv
module, distinguishes NULL = empty unquoted field from "" = empty string),
parsing `sluice check` output for the column types of each relation, and
comparing multisets of rows with a float tolerance.
"""
import json
import math
import os
import re
import subprocess
from decimal import Decimal

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples")

SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "ThreadSanitizer", "Segmentation fault", "Aborted")
# UBSan reports look like "src/x.c:12:5: runtime error: ..."; Sluice's own
# "sluice: runtime error: integer overflow" message is legitimate.
UBSAN_RE = re.compile(r"\.[ch]:\d+(:\d+)?: runtime error:")


def sluice_bin():
    b = os.environ.get("SLUICE_BIN") or os.path.join(REPO, "build", "debug", "sluice")
    if not os.path.isabs(b):
        b = os.path.join(REPO, b)
    return b


@pytest.fixture(scope="session")
def sluice():
    b = sluice_bin()
    if not os.access(b, os.X_OK):
        pytest.fail("Sluice binary %r not found: build it with `make debug` "
                    "or set SLUICE_BIN" % b)
    return b


def run(args, binary=None, timeout=120, cwd=None):
    """Run sluice with args; return CompletedProcess (text mode). Fails the
    test if a sanitizer or a crash shows up, whatever the exit status."""
    b = binary or sluice_bin()
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    argv = [b] + [str(a) for a in args]
    if "--hosts" in argv:
        env.update(mpi_env())
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode("utf-8", "replace")
        pytest.fail("sluice did not finish within %d s (hang?): %s\nstderr:\n%s" % (
            timeout, " ".join(argv), err[-3000:]))
    p.stdout = p.stdout.decode("utf-8", "replace")
    p.stderr = p.stderr.decode("utf-8", "replace")
    assert_no_crash(p)
    return p


def run_progressing(args, stall=600, binary=None):
    """run() for a long `sluice run` whose time depends on the machine's
    load (tiny steps, ASan, MPI): --no-progress becomes --progress (host 0
    writes a line with the step count at most every 5 s), and the run is
    taken for a hang only when no step completes for `stall` seconds. That
    is a safety net against waiting for ever, never a bound on how long a
    run that moves may take."""
    import threading
    import time
    b = binary or sluice_bin()
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    argv = [b] + ["--progress" if str(a) == "--no-progress" else str(a) for a in args]
    if "--progress" not in argv:
        argv.append("--progress")
    if "--hosts" in argv:
        env.update(mpi_env())
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = [], []
    moved = {"step": -1, "at": time.monotonic()}
    step_re = re.compile(rb"\| step (\d+) \|")

    def read_out():
        out.append(proc.stdout.read())

    def read_err():
        for line in iter(proc.stderr.readline, b""):
            err.append(line)
            m = step_re.search(line)
            if m and int(m.group(1)) > moved["step"]:
                moved["step"], moved["at"] = int(m.group(1)), time.monotonic()

    readers = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for t in readers:
        t.start()
    while True:
        try:
            proc.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() - moved["at"] > stall:
                proc.kill()
                proc.wait()
                for t in readers:
                    t.join()
                pytest.fail("sluice completed no step for %d s (hang; last step %d): %s\n"
                            "stderr:\n%s" % (stall, moved["step"], " ".join(argv),
                                             b"".join(err).decode("utf-8", "replace")[-3000:]))
    for t in readers:
        t.join()
    p = subprocess.CompletedProcess(argv, proc.returncode,
                                    b"".join(out).decode("utf-8", "replace"),
                                    b"".join(err).decode("utf-8", "replace"))
    assert_no_crash(p)
    return p


def mpi_env():
    """Environment for runs under MPI (--hosts): Open MPI's own process-
    lifetime allocations are suppressed for LeakSanitizer (tests/lsan-mpi.supp;
    full stacks so that its frames are recognised), Sluice's are still
    reported."""
    supp = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "lsan-mpi.supp")
    return {
        "ASAN_OPTIONS": "detect_leaks=1:fast_unwind_on_malloc=0",
        "LSAN_OPTIONS": "suppressions=%s:print_suppressions=0" % supp,
        "OMPI_MCA_mca_base_component_disable_dlclose": "1",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }


def assert_no_crash(p):
    for m in SANITIZER_MARKERS:
        assert m not in p.stderr, "sanitizer/crash report in stderr:\n" + p.stderr[-6000:]
    assert not UBSAN_RE.search(p.stderr), "UBSan report in stderr:\n" + p.stderr[-6000:]
    assert p.returncode >= 0, "killed by signal %d\nstderr:\n%s" % (-p.returncode, p.stderr[-4000:])
    assert p.returncode in (0, 1, 2), "unexpected exit status %d\nstderr:\n%s" % (
        p.returncode, p.stderr[-4000:])


def wait_until(pred, what, hang_guard=120, poll=0.02):
    """Poll pred() until it returns something true and return that. The
    limit is a hang guard (a test that reaches it is broken, not slow),
    never a bound the test relies on. what may be a function: it is called
    at the hang, so the message can say what was last seen."""
    import time
    end = time.monotonic() + hang_guard
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail("hung: %s (nothing after %d s)" % (what() if callable(what) else what,
                                                           hang_guard))
        time.sleep(poll)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report on the test item (item.rep_setup, rep_call), so a
    fixture's teardown can tell whether the test failed and print what it
    kept (a manager's and its pipelines' stderr, test_manager.py)."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def run_ok(args, binary=None, timeout=120):
    p = run(args, binary=binary, timeout=timeout)
    assert p.returncode == 0, "sluice %s failed (exit %d):\n%s" % (
        " ".join(map(str, args)), p.returncode, p.stderr[-6000:])
    return p


# ---------------------------------------------------------------- connectors

def conn_clause(connectors):
    """WITH ('connectors' = '<json>') for a list of connector dicts."""
    text = json.dumps(connectors)
    assert "'" not in text
    return "WITH ('connectors' = '%s')" % text


def csv_input(path, headers=False):
    fmt = {"name": "csv"}
    if headers:
        fmt["config"] = {"headers": True}
    return conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                         "format": fmt}])


def json_input(path):
    return conn_clause([{"transport": {"name": "file_input", "config": {"path": str(path)}},
                         "format": {"name": "json", "config": {"update_format": "insert_delete"}}}])


def csv_output(path):
    return conn_clause([{"transport": {"name": "file_output", "config": {"path": str(path)}},
                         "format": {"name": "csv"}}])


# ---------------------------------------------------------------- CSV

def csv_field(v):
    """Encode one Python value the way Sluice's CSV input reads it."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        if v == "" or any(c in v for c in ',"\r\n'):
            return '"' + v.replace('"', '""') + '"'
        return v
    return str(v)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        for r in rows:
            f.write(",".join(csv_field(v) for v in r) + "\n")


def parse_csv(text):
    """RFC 4180 parser that keeps NULL (empty unquoted field -> None) apart
    from the empty string (\"\" -> ''). Returns a list of records; each
    record is a list of str/None. Also returns the raw line texts."""
    records = []
    i, n = 0, len(text)
    while i < n:
        rec = []
        while True:
            if i < n and text[i] == '"':
                i += 1
                buf = []
                while True:
                    if i >= n:
                        raise ValueError("unterminated quoted field")
                    c = text[i]
                    if c == '"':
                        if i + 1 < n and text[i + 1] == '"':
                            buf.append('"')
                            i += 2
                            continue
                        i += 1
                        break
                    buf.append(c)
                    i += 1
                rec.append("".join(buf))
                if i < n and text[i] not in ",\n\r":
                    raise ValueError("garbage after quoted field at %d: %r" % (i, text[i:i + 20]))
            else:
                j = i
                while j < n and text[j] not in ",\n\r":
                    if text[j] == '"':
                        raise ValueError("quote inside unquoted field at %d" % j)
                    j += 1
                rec.append(text[i:j] if j > i else None)
                i = j
            if i < n and text[i] == ",":
                i += 1
                continue
            break
        if i < n and text[i] == "\r":
            i += 1
        if i < n and text[i] == "\n":
            i += 1
        records.append(rec)
    return records


def read_dump(path):
    """Returns (header list, list of records) for a --dump file."""
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    recs = parse_csv(text)
    assert recs, "empty dump file %s" % path
    header = recs[0]
    for r in recs[1:]:
        assert len(r) == len(header), "%s: record %r has %d fields, header %d" % (
            path, r, len(r), len(header))
    return header, recs[1:]


def split_lines_keep(raw):
    """Dump file bytes -> list of physical-record byte strings (records may
    contain quoted newlines, so split on record boundaries)."""
    out, i, n, start, q = [], 0, len(raw), 0, False
    while i < n:
        c = raw[i:i + 1]
        if c == b'"':
            q = not q
        elif c == b"\n" and not q:
            out.append(raw[start:i])
            start = i + 1
        i += 1
    if start < n:
        out.append(raw[start:])
    return out


# ---------------------------------------------------------------- check output

REL_RE = re.compile(r"^\s*(table|view)\s+(\S+)\s*(\[[^\]]*\])?\s*\(")


def _balanced(text, start):
    """text[start] == '('; return the text inside the matching parens."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    raise ValueError("unbalanced parentheses: %r" % text)


def split_top(s):
    parts, depth, cur = [], 0, []
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if cur and "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def relation_types(check_stdout):
    """{name_lower: [(col, TYPE, not_null)]} from `sluice check` output."""
    rels = {}
    for line in check_stdout.splitlines():
        m = REL_RE.match(line)
        if not m:
            continue
        cols = []
        for part in split_top(_balanced(line, m.end() - 1)):
            bits = part.split(None, 1)
            name, ty = bits[0], bits[1] if len(bits) > 1 else ""
            nn = ty.upper().endswith("NOT NULL")
            if nn:
                ty = ty[: -len("NOT NULL")].strip()
            cols.append((name, ty.upper(), nn))
        rels[m.group(2).lower()] = cols
    return rels


# ---------------------------------------------------------------- values

DEC_RE = re.compile(r"DECIMAL\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def convert_text(text, ty):
    """Dump field text -> Python value for a column of SQL type ty.
    Strictly checks the printed form of the type."""
    if text is None:
        return None
    t = ty.upper()
    if t.startswith("BOOL"):
        assert text in ("true", "false"), "bad BOOLEAN text %r" % text
        return text == "true"
    if t in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"):
        assert re.fullmatch(r"-?\d+", text), "bad %s text %r" % (t, text)
        return int(text)
    if t.startswith("DECIMAL") or t.startswith("NUMERIC"):
        m = DEC_RE.match(t)
        if m:
            scale = int(m.group(2))
            pat = r"-?\d+" + (r"\.\d{%d}" % scale if scale else "")
            assert re.fullmatch(pat, text), "DECIMAL text %r does not have scale %d" % (text, scale)
        return Decimal(text)
    if t in ("DOUBLE", "REAL", "FLOAT", "DOUBLE PRECISION"):
        v = float(text)
        if t != "REAL":
            assert float(repr(v)) == v
        return v
    if t == "DATE":
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", text), "bad DATE text %r" % text
        return text
    if t.startswith("TIMESTAMP"):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?", text), \
            "bad TIMESTAMP text %r" % text
        return text
    return text  # strings, TIME


def convert_sqlite(v, ty):
    """A SQLite result value -> the Python value Sluice's type would give."""
    if v is None:
        return None
    t = ty.upper()
    if t.startswith("BOOL"):
        return bool(v)
    if t in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"):
        assert isinstance(v, int) and not isinstance(v, bool), "SQLite gave %r for %s" % (v, t)
        return v
    if t.startswith("DECIMAL"):
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    if t in ("DOUBLE", "REAL", "FLOAT"):
        return float(v)
    return v


def _is_float(v):
    return isinstance(v, (float, Decimal))


def values_close(a, b, rel=1e-9, abs_tol=1e-9):
    if a is None or b is None:
        return a is None and b is None
    if _is_float(a) or _is_float(b):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return math.isclose(fa, fb, rel_tol=rel, abs_tol=abs_tol)
    return a == b


def _sort_key(v):
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, (int, float, Decimal)):
        return (1, v)
    return (2, str(v))


def multiset_diff(actual, expected, float_cols=()):
    """Compare two lists of row tuples as multisets. Exact on every column
    except those listed in float_cols (compared with a tolerance). Returns
    None when equal, else a readable description of the difference."""
    def exact_part(r):
        return tuple(_sort_key(v) for i, v in enumerate(r) if i not in float_cols)

    def float_part(r):
        return tuple(_sort_key(v) for i, v in enumerate(r) if i in float_cols)

    groups_a, groups_e = {}, {}
    for r in actual:
        groups_a.setdefault(exact_part(r), []).append(r)
    for r in expected:
        groups_e.setdefault(exact_part(r), []).append(r)
    missing, extra = [], []
    for k in set(groups_a) | set(groups_e):
        ga = sorted(groups_a.get(k, []), key=float_part)
        ge = sorted(groups_e.get(k, []), key=float_part)
        if not float_cols:
            if len(ga) > len(ge):
                extra.extend(ga[len(ge):])
            elif len(ge) > len(ga):
                missing.extend(ge[len(ga):])
            continue
        # greedy matching within the exact-key group
        rest = list(ge)
        for r in ga:
            for j, e in enumerate(rest):
                if all(values_close(r[i], e[i]) for i in float_cols):
                    del rest[j]
                    break
            else:
                extra.append(r)
        missing.extend(rest)
    if not missing and not extra:
        return None
    def fmt(rows):
        rows = sorted(rows, key=lambda r: tuple(_sort_key(v) for v in r))
        s = "\n".join("    %r" % (r,) for r in rows[:15])
        if len(rows) > 15:
            s += "\n    ... (%d more)" % (len(rows) - 15)
        return s
    msg = "actual has %d rows, expected %d" % (len(actual), len(expected))
    if missing:
        msg += "\n  expected but missing (%d):\n%s" % (len(missing), fmt(missing))
    if extra:
        msg += "\n  unexpected extra (%d):\n%s" % (len(extra), fmt(extra))
    return msg


# ---------------------------------------------------------------- HTTP server

class HttpPipeline:
    """A `sluice run --http 127.0.0.1:0` process: its base URL, its stderr
    (a file, so a chatty pipeline never blocks on a full pipe) and helpers.
    Always shut down by the `http_pipeline` fixture."""

    def __init__(self, proc, port, err_path, prog):
        self.proc, self.port, self.err_path, self.prog = proc, port, err_path, prog
        self.base = "http://127.0.0.1:%d" % port

    def url(self, path):
        return self.base + path

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_exit(self, timeout=60):
        """Wait for the process to end; returns its CompletedProcess-like
        result after checking for sanitizer reports."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("sluice did not exit within %d s:\n%s" % (timeout, self.stderr()[-3000:]))
        res = subprocess.CompletedProcess(self.proc.args, rc, "", self.stderr())
        assert_no_crash(res)
        return res

    def stop(self):
        """POST /stop, then wait for a clean exit (status 0)."""
        import requests
        r = requests.post(self.url("/stop"), timeout=60)
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "stopped"
        res = self.wait_exit()
        assert res.returncode == 0, res.stderr[-3000:]
        return res


@pytest.fixture
def http_pipeline(tmp_path):
    """Factory: http_pipeline(sql_text, *extra_args) starts a pipeline that
    serves HTTP on a free loopback port and returns an HttpPipeline. Every
    pipeline started is killed at the end of the test if still running."""
    started = []

    def start(sql, *args, name="prog"):
        prog = tmp_path / ("%s.sql" % name)
        prog.write_text(sql)
        err_path = tmp_path / ("%s.stderr" % name)
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        errf = open(err_path, "wb")
        argv = [sluice_bin(), "run", str(prog), "--http", "127.0.0.1:0", "--no-progress"] + [
            str(a) for a in args]
        if "--hosts" in argv:
            env.update(mpi_env())
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errf, env=env)
        errf.close()
        started.append(proc)

        def port():
            text = open(err_path, "rb").read().decode("utf-8", "replace")
            m = re.search(r"sluice: http: listening on 127\.0\.0\.1:(\d+)", text)
            if not m and proc.poll() is not None:
                pytest.fail("sluice exited (%d) before listening:\n%s" % (proc.returncode, text))
            return int(m.group(1)) if m else None
        return HttpPipeline(proc, wait_until(port, "sluice printing its port", poll=0.01),
                            err_path, prog)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A real S3-compatible server on loopback (OpenStack Swift + s3api)."""
    import s3server
    ok, why = s3server.available()
    if not ok:
        pytest.skip("no S3-compatible server: " + why)
    srv = s3server.SwiftS3(str(tmp_path_factory.mktemp("swift")))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def pg():
    """A throw-away PostgreSQL 15 server (pgserver.py) for the tests of a
    module, removed after them; skips when the server cannot be installed."""
    import pgserver
    ok, why = pgserver.available()
    if not ok:
        pytest.skip("no PostgreSQL server: " + why)
    srv = pgserver.PgServer()
    try:
        srv.start()
        yield srv
    finally:
        srv.remove()

"""Progress reporting: on a terminal a live line (rewritten in place at most
once a second) with rows per table, rows/s, step and memory; on a
non-terminal a log line every 5 s; at the end a summary with rows, time,
rows/s and peak memory.

The input is rate-limited, so a run lasts at least its planned time (a
lower bound no load can break); upper bounds on the number of lines come
from the run's measured duration, never from the planned one.
"""
import os
import pty
import re
import select
import subprocess
import time

from conftest import run_ok, sluice_bin

PROGRAM = """CREATE TABLE ticks (x INT) WITH ('connectors' = '[{"transport": {"name": "datagen",
  "config": {"plan": [{"limit": %d, "rate": %d}]}}}]');
CREATE MATERIALIZED VIEW c AS SELECT COUNT(*) AS n FROM ticks;
"""


def test_terminal_gets_a_live_progress_line_at_most_once_a_second(tmp_path):
    prog = tmp_path / "p.sql"
    prog.write_text(PROGRAM % (3000, 1000))  # about 3 s
    master, slave = pty.openpty()
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    t0 = time.monotonic()
    p = subprocess.Popen([sluice_bin(), "run", str(prog), "--until-done"], stdin=slave,
                         stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=30)
    took = time.monotonic() - t0
    os.close(master)
    text = out.decode("utf-8", "replace")
    assert p.returncode == 0, text
    lines = [l for l in text.split("\r\x1b[K") if "rows/s" in l and "step" in l]
    # at least 3 s of work: 2 refreshes or more, never more than one a second
    assert 2 <= len(lines) <= int(took) + 1, (took, repr(text))
    assert re.search(r"ticks: [0-9.]+K? rows \| [0-9.]+K? rows/s \| step \d+ \| mem \d+ MB", lines[0])
    assert re.search(r"sluice: done: 3\.0K rows in [0-9.]+ s \(.* rows/s\), \d+ steps, 1 worker, "
                     r"peak memory [0-9.]+ MB", text), text


def test_non_terminal_gets_a_progress_log_line_every_few_seconds(tmp_path):
    prog = tmp_path / "p.sql"
    prog.write_text(PROGRAM % (5500, 1000))  # at least 5.5 s
    t0 = time.monotonic()
    p = run_ok(["run", prog, "--until-done"], timeout=120)
    took = time.monotonic() - t0
    logs = [l for l in p.stderr.splitlines() if l.startswith("sluice: progress: ")]
    assert 1 <= len(logs) <= int(took / 5) + 1, (took, p.stderr)  # one at 5 s, 10 s, ...
    assert "ticks:" in logs[0] and "rows/s" in logs[0] and "mem" in logs[0]
    assert "\r" not in p.stderr
    assert re.search(r"sluice: done: 5\.5K rows", p.stderr), p.stderr

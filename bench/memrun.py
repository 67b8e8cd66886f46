"""bench/memrun.py - what the memory benches share (memory_bench.py,
memory_tables_bench.py, memory_final_bench.py, partitions_bench.py): one
run of a program to its end under a memory limit, measured from outside
the engine; the check that every run's dumps equal the first run's; and,
for benches that alternate (name, binary, limit) configurations, the
rounds of runs and their medians.

Measures are the child's own: CPU time (user + system, wait4's rusage:
steadier than wall time on a loaded machine), peak resident memory
(ru_maxrss: what the kernel saw, not the engine's figure). ru_maxrss counts
what a child had before it exec'd, so a bench writes its input from
another child and runs these from a small parent.
"""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (median)

CACHE = re.compile(r"read (\d+) times from the cache, (\d+) from files")
SPILLED = re.compile(r"memory: (\d+) trace runs spilled")


def run_once(sluice, prog, dump, limit, step_rows="default", env=None):
    """`sluice run prog --until-done`, dumping the materialized views into
    dump, under `--memory-limit limit`, with `--step-rows step_rows` (or
    the engine's default). Exits the script when the run fails. Returns
    wall and CPU seconds, the peak resident MB, the spill cache's hits and
    misses and the trace runs spilled (the lines the pipeline prints at its
    end), and that log."""
    cmd = [sluice, "run", prog, "--until-done", "--no-progress", "--dump", dump,
           "--memory-limit", str(limit)]
    if str(step_rows) != "default":
        cmd += ["--step-rows", str(step_rows)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit("sluice failed (%d): %s\n%s" % (rc, " ".join(cmd), err))
    cache = CACHE.search(err)
    spilled = SPILLED.search(err)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024.0,
            "hits": int(cache.group(1)) if cache else 0,
            "misses": int(cache.group(2)) if cache else 0,
            "runs_spilled": int(spilled.group(1)) if spilled else 0, "log": err.strip()}


def _sorted_lines(path):
    with open(path) as f:
        return sorted(f.read().splitlines())


class SameDumps:
    """Every run's dump of the views (names of their .csv files) must equal
    the first run's: byte for byte, or as sorted lines (as_lines: views
    whose dump order is not fixed). The first dump is kept for that; the
    others are removed once checked."""

    def __init__(self, views, as_lines=False):
        self.views, self.as_lines, self.first = views, as_lines, None

    def check(self, dump):
        """True for the first dump; exits the script when one differs."""
        if self.first is None:
            self.first = dump
            return True
        for v in self.views:
            a, b = os.path.join(self.first, v + ".csv"), os.path.join(dump, v + ".csv")
            same = (_sorted_lines(a) == _sorted_lines(b) if self.as_lines
                    else filecmp.cmp(a, b, shallow=False))
            if not same:
                sys.exit("the dumps of %s differ: %s, %s" % (v, self.first, dump))
        shutil.rmtree(dump, ignore_errors=True)
        return False


def rounds(configs, runs, prog, tmp, step_rows, same, width, on_first=None):
    """runs rounds of the configurations (name, sluice binary, limit), in
    turn within a round (the machine is shared: alternating spreads its
    load over all of them); each run's figures printed as it ends, its dump
    checked by same (on_first(dump) after the first); names padded to
    width. Returns name -> the runs' figures."""
    res = {c[0]: [] for c in configs}
    for r in range(runs):
        for name, binary, limit in configs:
            dump = os.path.join(tmp, "dump-%s-%d" % (name, r))
            x = run_once(binary, prog, dump, limit, step_rows)
            res[name].append(x)
            print("%-*s run %d: cpu %.2f s, peak %.1f MB, cache %d hits / %d misses"
                  % (width, name, r, x["cpu"], x["peak_mb"], x["hits"], x["misses"]), flush=True)
            if same.check(dump) and on_first:
                on_first(dump)
    return res


def medians(res, out):
    """Into out, per configuration of rounds' res: the medians of CPU time
    and peak memory, the cache figures and the runs; printed."""
    for name, xs in res.items():
        out[name] = {"cpu_median": B.median([x["cpu"] for x in xs]),
                     "peak_mb_median": B.median([x["peak_mb"] for x in xs]),
                     "hits": [x["hits"] for x in xs], "misses": [x["misses"] for x in xs],
                     "runs": xs}
        print("%s: cpu median %.2f s, peak median %.1f MB" %
              (name, out[name]["cpu_median"], out[name]["peak_mb_median"]))
    return out

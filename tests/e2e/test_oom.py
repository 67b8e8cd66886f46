"""Out of memory (issue 13): a view whose state explodes ends the pipeline
with exit status 3 and a message naming the step and the operator, never a
bare abort. Run on the release binary under an address-space limit (the
sanitizers of the debug build reserve address space of their own)."""
import os
import resource
import subprocess

import pytest

from conftest import REPO

EXPLODE = """
CREATE TABLE a (id BIGINT NOT NULL, x INT NOT NULL) WITH ('connectors' = '[{"transport":
  {"name": "datagen", "config": {"seed": 1, "plan": [{"limit": 30000,
   "fields": {"x": {"strategy": "uniform", "range": [0, 2]}}}]}}}]');
CREATE MATERIALIZED VIEW boom AS SELECT a1.id, a2.id AS id2 FROM a a1 JOIN a a2 ON a1.x = a2.x;
"""


def release_bin():
    b = os.environ.get("SLUICE_RELEASE") or os.path.join(REPO, "build", "sluice")
    if not os.access(b, os.X_OK):
        pytest.skip("release binary not built (make build/sluice)")
    return b


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))


def test_exploding_view_ends_with_a_message_and_status_3(tmp_path):
    prog = tmp_path / "boom.sql"
    prog.write_text(EXPLODE)
    p = subprocess.run([release_bin(), "run", str(prog), "--until-done", "--no-progress",
                        "--workers", "2"], capture_output=True, text=True, timeout=600,
                       preexec_fn=limit_address_space)
    assert p.returncode == 3, (p.returncode, p.stderr[-2000:])
    assert "sluice: out of memory allocating" in p.stderr
    assert "while running step 1 in operator node" in p.stderr, p.stderr
    assert "the pipeline stops (exit status 3)" in p.stderr
    assert "Aborted" not in p.stderr

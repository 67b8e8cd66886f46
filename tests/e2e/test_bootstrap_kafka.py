"""Bootstrapping with a Kafka table (docs/bootstrapping.md): a view added
over a kafka_input table that nothing stores reads the topic again from
the earliest offsets up to the checkpoint's offset of every partition, for
the new view alone, through the live connector on the host that reads it
(with --hosts 2: host 1, while the coordinator runs the bootstrap), which
then continues from the checkpoint; the kept view sees no message twice.
Against librdkafka's mock cluster (test_kafka.py: make
build/debug/tests/tools/tool_kafka_mock)."""
import shutil

import pytest
from test_kafka import Pipeline, kafka, kafka_in, pipelines, records  # noqa: F401 (fixtures)

from conftest import csv_input, wait_until, write_csv


@pytest.mark.parametrize("hosts", [1, 2])
def test_a_view_over_a_kafka_table_reads_the_topic_again(tmp_path, kafka, pipelines, hosts):
    if hosts > 1 and not shutil.which("mpirun"):
        pytest.skip("mpirun not installed (Debian package openmpi-bin)")
    k = kafka()
    k.produce("ev", records(0, 1000))
    st = tmp_path / "st"
    old = ""
    run = []
    if hosts > 1:  # the k-th file-like input is read on host k % 2: the topic on host 1
        write_csv(tmp_path / "pad.csv", [[1], [2]])
        old = "CREATE TABLE pad (k INT) %s;\n" % csv_input(tmp_path / "pad.csv")
        run = ["--hosts", hosts, "--workers", 2]
    old += ("CREATE TABLE t (id BIGINT NOT NULL, v BIGINT) %s;\n"
            "CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t;\n"
            % kafka_in(k.bootstrap))
    p = Pipeline(tmp_path, old, extra=["--storage", st] + run, name="old")
    pipelines.append(p)
    p.wait_count(1000)
    p.stop()
    k.produce("ev", records(1000, 1500))
    new = old + ("CREATE MATERIALIZED VIEW per_bucket AS SELECT v % 10 AS b, COUNT(*) AS n "
                 "FROM t GROUP BY v % 10;\n")
    q = Pipeline(tmp_path, new, extra=["--storage", st, "--bootstrap", "allow"] + run,
                 name="new")
    pipelines.append(q)
    everything = records(0, 1500)
    c = q.wait_count(1500)
    assert c["s"] == sum(r["v"] for r in everything)  # the kept view: nothing twice
    want = {}
    for r in everything:
        want[r["v"] % 10] = want.get(r["v"] % 10, 0) + 1

    def buckets():
        rows = q.query("SELECT b, n FROM per_bucket")
        got = {r["b"]: r["n"] for r in rows}
        return got if got == want else None
    wait_until(buckets, "per_bucket over all 1500 records")
    assert "1000 rows read again" in q.text(), q.text()[-3000:]
    if hosts > 1:  # by the live connector, where it runs
        assert "(kafka_input) read again on host 1 (1000 rows)" in q.text(), q.text()[-3000:]
    q.stop()

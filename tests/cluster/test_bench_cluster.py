"""`kafka-ref bench cluster` runs end to end at tiny sizes: one JSON object per measurement,
and one `cluster ratio` per case whose figures are the two measurements' quotient."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_ref.tools.cluster import zookeeper_installed

pytestmark = pytest.mark.timeout(180)


@pytest.mark.spec("TOOLS-5")
def test_bench_cluster_prints_both_measurements_and_their_ratio(tmp_path):
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    cmd = [
        sys.executable,
        "-m",
        "kafka_ref.cli",
        "--log-level",
        "WARNING",
        "bench",
        "cluster",
        "--messages",
        "500",
        "--sizes",
        "100",
        "--partitions",
        "2",
        "--json",
        "--data-dir",
        str(tmp_path),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    produce = {r["broker"]: r for r in rows if r["what"] == "produce"}
    assert set(produce) == {"kafka-ref 1 broker acks=1", "kafka-ref 3 brokers rf=3 acks=all"}
    assert {r["acks"] for r in produce.values()} == {"1", "all"}
    assert all(r["messages"] == 500 and r["errors"] == 0 for r in produce.values())
    (ratio,) = [r for r in rows if r["what"] == "cluster ratio"]
    single, cluster = produce.values()
    assert ratio["ratio MB/s"] == round(cluster["MB/s"] / single["MB/s"], 3)

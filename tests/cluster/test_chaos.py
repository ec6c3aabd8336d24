"""The short fault campaign CI runs: `kafka-ref chaos`, five faults, judged for safety and
liveness.

It runs the command as a user does, in a subprocess with its own ZooKeeper and three
brokers (not the session's cluster: the nemesis kills, pauses and partitions them). Seed 903
draws, in its first five faults, every kind the nemesis knows, each once: kill, term, pause, a
partition from ZooKeeper and a partition from the other brokers. The KRaft campaign is in
test_chaos_kraft.py, a file of its own so that the two run side by side. The long campaigns (100
faults per seed, and the same with `replica.truncation=high-watermark`) are run on demand
with the same command; docs/chaos.md reports them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_ref.conformance.nemesis import KINDS

pytestmark = pytest.mark.timeout(660)


@pytest.mark.spec("CHAOS-1", "CHAOS-2")
def test_a_short_campaign_loses_nothing_and_the_cluster_answers_soon_after_each_fault(
    tmp_path,
):
    report_path = tmp_path / "report.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_ref.cli",
            "chaos",
            "--seed",
            "903",
            "--faults",
            "5",
            "--rate",
            "1000",
            "--data-dir",
            str(tmp_path / "cluster"),
            "--report",
            str(report_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,  # a broken cluster: 120 s to heal, 120 s to flush, 180 s to read
    )
    assert report_path.exists(), f"no report; exit code {run.returncode}:\n{run.stderr[-3000:]}"
    report = json.loads(report_path.read_text())
    assert report["valid"], report["reasons"]
    assert run.returncode == 0
    assert report["faults"] == 5
    assert {f["kind"] for f in report["fault_log"]} == set(KINDS)
    # the workload ran through the faults and the checker saw it all
    assert report["acked"] > 10000, report["acked"]
    assert report["lost"] == 0 and report["anomalies"].get("duplicate") is None
    assert report["group"]["polled"] >= report["acked"] // 2
    assert sum(report["high_watermarks"].values()) >= report["acked"]
    # every fault healed, the cluster whole again and a write acknowledged within 30 s
    for fault in report["fault_log"]:
        assert fault["healed"] is not None and fault["whole"] is not None, fault
        assert fault["window"] is not None and fault["window"] <= 30.0, fault
    assert report["max_window_s"] <= 30.0

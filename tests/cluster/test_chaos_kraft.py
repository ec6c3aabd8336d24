"""The short fault campaign on KRaft that CI runs: `kafka-ref chaos --kraft`, five faults.

Three combined KRaft nodes (broker and controller each) in a subprocess, behind proxies for
both listeners. Seed 98 draws every KRaft kind in its first five faults, among them a partition
that isolates a node's controller listener; every fault that strikes the active controller is
timed until another is named (docs/chaos.md, "On KRaft").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_ref.conformance.nemesis import KRAFT_KINDS

pytestmark = pytest.mark.timeout(660)


@pytest.mark.spec("CHAOS-4")
def test_a_short_campaign_on_kraft_loses_nothing_and_times_the_controller_failovers(tmp_path):
    # seed 98 draws every KRaft kind in its first five faults
    report_path = tmp_path / "report.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_ref.cli",
            "chaos",
            "--kraft",
            "--seed",
            "98",
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
    assert report["kraft"] and report["faults"] == 5
    assert {f["kind"] for f in report["fault_log"]} == set(KRAFT_KINDS)
    assert report["acked"] > 10000 and report["lost"] == 0
    for fault in report["fault_log"]:  # a fault on the active controller is timed
        listed = [f["fault"] for f in report["controller_failovers"]]
        assert (fault["n"] in listed) == fault["was_controller"]

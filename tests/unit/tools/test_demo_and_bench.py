"""The demo (`make demo`) and the storage benchmark, at small sizes."""

import json
import os

import pytest

from kafka_ref.cli import main


@pytest.mark.spec("TOOLS-1")
def test_demo_writes_a_rolled_log_that_dump_log_reads(tmp_path, capsys):
    assert main(["--log-level", "ERROR", "demo", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    files = sorted(os.listdir(tmp_path / "demo-0"))
    logs = [name for name in files if name.endswith(".log")]
    assert len(logs) >= 2, "the demo's small segment.bytes must roll the log"
    assert all(len(name) == len("00000000000000000000.log") for name in logs)
    assert "offset 250: b'user-5' -> b'clicked page 250'" in out
    assert main(["dump-log", str(tmp_path / "demo-0" / logs[-1])]) == 0


@pytest.mark.spec("TOOLS-4")
def test_bench_storage_reports_every_measurement(tmp_path, capsys):
    code = main(
        [
            "--log-level",
            "ERROR",
            "bench",
            "storage",
            "--dir",
            str(tmp_path),
            "--total-mb",
            "8",
            "--lookup-sizes",
            "1000,20000",
            "--lookups",
            "200",
            "--json",
        ]
    )
    assert code == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_name = {r["what"]: r for r in results}
    assert by_name["Log.append"]["MB"] == by_name["raw file.write"]["MB"] >= 7
    assert by_name["Log.append"]["vs raw"] > 0
    assert by_name["Log.read sequential"]["MB"] == by_name["Log.append"]["MB"]
    assert [r["what"] for r in results if r["what"].startswith("lookup")] == [
        "lookup 1e+03 records",
        "lookup 2e+04 records",
    ]


@pytest.mark.spec("TOOLS-26")
def test_bench_soak_measures_each_step_at_a_tiny_size(capsys):
    code = main(
        [
            "--log-level",
            "ERROR",
            "bench",
            "soak",
            "--idle",
            "5",
            "--greedy",
            "3",
            "--frame-mb",
            "4",
            "--send-mb",
            "0.5",
            "--pool-mb",
            "4",
            "--json",
        ]
    )
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = [(r["step"], r["connections"]) for r in rows]
    assert steps == [("base", 0), ("idle", 5), ("greedy", 8), ("closed", 5)]
    assert all(r["rss_MB"] > 0 and r["queued.max.request.bytes"] == "4 MB" for r in rows)
    greedy, closed = rows[2], rows[3]
    assert greedy["announced_MB"] == 12 and greedy["sent_MB"] == 2
    assert greedy["metadata_ms"] is None  # the pool is spent: it waits for memory
    assert closed["metadata_ms"] > 0

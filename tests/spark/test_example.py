"""The example pipeline (examples/user_activity.py) runs end to end (SPARK-9, SPARK-10)."""

from __future__ import annotations

import collections
import importlib.util
import json
import pathlib

import pytest

from tests.spark.conftest import read_topic

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "user_activity.py"


@pytest.fixture
def example(monkeypatch, new_topic):
    spec = importlib.util.spec_from_file_location("user_activity", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "EVENTS", new_topic(2))  # fresh topics for this run
    monkeypatch.setattr(module, "RESULTS", new_topic(2))
    return module


@pytest.mark.spec("SPARK-9", "SPARK-10")
def test_user_activity_counts_every_closed_minute_once(spark, bootstrap, example, tmp_path):
    common = ["--bootstrap-server", bootstrap, "--out", str(tmp_path)]
    example.main(["produce", "--events", "600", "--users", "4", "--minutes", "4", *common])
    example.main(["aggregate", *common])

    events = [
        json.loads(r.value)
        for r in read_topic(spark, bootstrap, subscribe=example.EVENTS).collect()
    ]
    assert len(events) == 600
    # Append mode emits a window once the watermark (latest event - 1 minute) passed its end.
    watermark = max(e["ts"] for e in events) - 60_000
    expected = collections.Counter(
        (e["ts"] // 60_000 * 60_000, e["user"], e["action"])
        for e in events
        if e["ts"] // 60_000 * 60_000 + 60_000 <= watermark
    )
    table = spark.read.parquet(str(tmp_path / "per_minute")).selectExpr(
        "unix_millis(minute)", "user", "action", "events"
    )
    got = {(m, u, a): n for m, u, a, n in (tuple(r) for r in table.collect())}
    assert got == dict(expected)
    results = read_topic(spark, bootstrap, subscribe=example.RESULTS)
    assert results.count() == len(got)  # the same windows went back to Kafka

    # A second run with nothing new reads nothing and writes nothing twice.
    example.main(["aggregate", *common])
    assert spark.read.parquet(str(tmp_path / "per_minute")).count() == len(got)

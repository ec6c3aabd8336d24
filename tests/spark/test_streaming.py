"""Structured Streaming reads and writes through `format("kafka_ref")` (SPARK-7..SPARK-10).

Every query here runs with `trigger(availableNow=True)`, so it stops by itself once it has
read what existed when it started; restarting from the same checkpoint continues there.
"""

from __future__ import annotations

import json

import pytest
from pyspark.errors import StreamingQueryException

from kafka_ref.client.admin import Admin, NewTopic
from tests.spark.conftest import kafka_options, produce, read_topic, rows_of


def stream(spark, bootstrap: str, **options):
    return (
        spark.readStream.format("kafka_ref").options(**kafka_options(bootstrap, **options)).load()
    )


def run_to_parquet(df, out: str, checkpoint: str):
    """One availableNow run into Parquet (an exactly-once sink); returns its progress."""
    query = (
        df.selectExpr("topic", "partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive, "an availableNow query stops by itself"
    return [p for p in query.recentProgress if p["numInputRows"] > 0]


def offsets_read(spark, out: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.parquet(out).select("partition", "offset").collect())


@pytest.mark.spec("SPARK-7", "SPARK-8", "SPARK-9")
def test_available_now_reads_each_offset_once_across_a_restart(
    spark, bootstrap, new_topic, tmp_path
):
    topic = new_topic(2)
    produce(bootstrap, topic, [(i % 2, b"k", b"first-%d" % i) for i in range(100)])
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    source = stream(
        spark, bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=40
    )

    batches = run_to_parquet(source, out, checkpoint)
    assert [b["numInputRows"] for b in batches] == [40, 40, 20]  # maxOffsetsPerTrigger=40
    assert json.loads(batches[0]["sources"][0]["endOffset"]) == {topic: {"0": 20, "1": 20}}
    assert json.loads(batches[-1]["sources"][0]["endOffset"]) == {topic: {"0": 50, "1": 50}}
    assert offsets_read(spark, out) == [(p, o) for p in (0, 1) for o in range(50)]

    produce(bootstrap, topic, [(i % 2, b"k", b"second-%d" % i) for i in range(30)])
    again = run_to_parquet(source, out, checkpoint)
    assert json.loads(again[0]["sources"][0]["startOffset"]) == {topic: {"0": 50, "1": 50}}
    assert offsets_read(spark, out) == [(p, o) for p in (0, 1) for o in range(65)]


@pytest.mark.spec("SPARK-9")
def test_a_failed_micro_batch_is_read_again_with_the_same_offsets(
    spark, bootstrap, new_topic, tmp_path
):
    topic = new_topic(2)
    produce(bootstrap, topic, [(i % 2, b"k", b"%d" % i) for i in range(60)])
    seen: dict[int, list[list[tuple]]] = {}
    fail_batch = {1}

    def sink(batch_df, batch_id):
        rows = sorted(tuple(r) for r in batch_df.select("partition", "offset").collect())
        seen.setdefault(batch_id, []).append(rows)
        if batch_id in fail_batch:
            fail_batch.clear()
            raise RuntimeError("the sink failed this micro-batch")

    def run():
        query = (
            stream(
                spark,
                bootstrap,
                subscribe=topic,
                startingOffsets="earliest",
                maxOffsetsPerTrigger=25,
            )
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)

    with pytest.raises(StreamingQueryException, match="the sink failed this micro-batch"):
        run()
    assert sorted(seen) == [0, 1]
    run()
    assert len(seen[1]) == 2 and seen[1][0] == seen[1][1]  # the same offsets, read again
    assert len(seen[0]) == 1  # the committed batch is not read again
    delivered = sorted(row for runs in seen.values() for row in runs[-1])
    assert delivered == [(p, o) for p in (0, 1) for o in range(30)]


@pytest.mark.spec("SPARK-7")
def test_a_new_query_starts_at_latest_and_new_partitions_at_earliest(
    spark, bootstrap, new_topic, tmp_path
):
    first = new_topic(1)
    produce(bootstrap, first, [(0, b"k", b"old")] * 5)
    pattern = f"{first}|{first}-later"
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    source = stream(spark, bootstrap, subscribePattern=pattern)  # startingOffsets: latest
    assert run_to_parquet(source, out, checkpoint) == []

    produce(bootstrap, first, [(0, b"k", b"new")] * 3)
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(f"{first}-later", 1, 1)])
    produce(bootstrap, f"{first}-later", [(0, b"k", b"later")] * 4)
    run_to_parquet(source, out, checkpoint)
    got = sorted(tuple(r) for r in spark.read.parquet(out).select("topic", "offset").collect())
    assert got == [(first, o) for o in (5, 6, 7)] + [(f"{first}-later", o) for o in range(4)]


@pytest.mark.spec("SPARK-10")
def test_a_stream_can_be_written_to_a_topic(spark, bootstrap, new_topic, tmp_path):
    source, sink = new_topic(2), new_topic(2)
    produce(bootstrap, source, [(i % 2, b"user-%d" % (i % 7), b"%d" % i) for i in range(50)])
    query = (
        stream(spark, bootstrap, subscribe=source, startingOffsets="earliest")
        .selectExpr("key", "value", "partition")
        .writeStream.format("kafka_ref")
        .options(**kafka_options(bootstrap, topic=sink))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    columns = ("partition", "key", "value")
    assert rows_of(read_topic(spark, bootstrap, subscribe=sink), *columns) == rows_of(
        read_topic(spark, bootstrap, subscribe=source), *columns
    )

"""`kafka.isolation.level=read_committed` in the `kafka_ref` source (SPARK-26).

A real confluent-kafka (librdkafka) transactional producer commits, aborts and leaves one
transaction open; batch and streaming reads then see only the committed records, never a
control record, and end at the last stable offset.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kafka_ref.client.consumer import Consumer
from kafka_ref.common import TopicPartition
from tests.spark.conftest import read_topic
from tests.spark.test_streaming import run_to_parquet, stream

COMMITTED = {"kafka.isolation.level": "read_committed"}


def transaction(producer: Producer, topic: str, tag: str, end: str | None) -> list[bytes]:
    """Six records over two partitions; end: "commit", "abort" or None (left open)."""
    producer.begin_transaction()
    values = [b"%s-%d" % (tag.encode(), i) for i in range(6)]
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % 2)
    producer.flush(30)
    if end == "commit":
        producer.commit_transaction(30)
    elif end == "abort":
        producer.abort_transaction(30)
    return values


def end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[str, int]:
    with Consumer(bootstrap, isolation_level=isolation) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in (0, 1)])
    return {str(tp.partition): offset for tp, offset in ends.items()}


@pytest.mark.spec("SPARK-26")
def test_read_committed_skips_aborted_records_and_stops_at_the_lso(
    spark, bootstrap, new_topic, tmp_path
):
    topic = new_topic(2)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    committed = transaction(producer, topic, "c1", "commit")
    aborted = transaction(producer, topic, "a1", "abort")
    committed += transaction(producer, topic, "c2", "commit")
    still_open = transaction(producer, topic, "open", None)

    def values(df) -> list[bytes]:
        return sorted(bytes(r.value) for r in df.select("value").collect())

    assert values(read_topic(spark, bootstrap, subscribe=topic, **COMMITTED)) == sorted(committed)
    # The aborted and open records are in the log, up to the high watermark: 6 + 6 records
    # and 3 markers, of which the LSO leaves out the open transaction's 6 (3 per partition).
    lso = end_offsets(bootstrap, topic, "read_committed")
    hw = end_offsets(bootstrap, topic, "read_uncommitted")
    assert len(aborted) == 6 and hw == {p: lso[p] + 3 for p in lso}
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    source = stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest", **COMMITTED)
    batches = run_to_parquet(source, out, checkpoint)
    assert json.loads(batches[-1]["sources"][0]["endOffset"]) == {topic: lso}
    assert values(spark.read.parquet(out)) == sorted(committed)

    producer.commit_transaction(30)  # the open transaction commits: the LSO moves on
    run_to_parquet(source, out, checkpoint)
    assert values(spark.read.parquet(out)) == sorted(committed + still_open)

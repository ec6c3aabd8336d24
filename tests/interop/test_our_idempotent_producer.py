"""Our idempotent producer against a real kafka-ref broker (IPROD-1, IPROD-2, IPROD-5, IPROD-8).

Uses the session broker of conftest.py. 10,000 records go out with `enable_idempotence=True`
and small batches, so that five requests per connection are in flight most of the time; they
are read back with our consumer: each exactly once, each partition in send order. The log
files show that every batch carries the producer id from InitProducerId and that each
partition's sequences run 0, n1, n1+n2, ... without a gap. A second test makes the broker see
a sequence gap and checks that the producer recovers by bumping its epoch (KIP-360), and that
the broker accepts the new epoch starting again at sequence 0.
"""

from __future__ import annotations

import os
import time

import pytest

from kafka_ref.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from kafka_ref.record.batch import iter_batch_headers

pytestmark = pytest.mark.timeout(90)

RECORDS = 10_000
PARTITIONS = 3


@pytest.fixture(scope="module")
def bootstrap(kafka_ref_broker) -> str:
    return kafka_ref_broker.bootstrap


def log_batches(data_dir: str, topic: str, partition: int) -> list:
    """Every batch header in the partition's segment files, in offset order."""
    directory = os.path.join(data_dir, f"{topic}-{partition}")
    headers = []
    for name in sorted(f for f in os.listdir(directory) if f.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        headers.extend(header for _, header in iter_batch_headers(data))
    return headers


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 30.0) -> list:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        records: list = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
    return records


@pytest.mark.spec("IPROD-8", "IPROD-1", "IPROD-2")
def test_ten_thousand_records_once_each_in_order(bootstrap, kafka_ref_broker):
    topic = "our-idempotent"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    with Producer(
        bootstrap, enable_idempotence=True, batch_size=2048, linger_ms=2, max_in_flight=5
    ) as producer:
        futures = [
            producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % 97)) for i in range(RECORDS)
        ]
        producer.flush(timeout=60)
        pid = producer.transaction_manager.producer_id_and_epoch
        metadata = [f.result(timeout=1) for f in futures]
    assert pid.producer_id >= 0 and pid.epoch == 0

    records = consume_all(bootstrap, topic, RECORDS)
    values = [r.value for r in records]
    assert len(values) == len(set(values)) == RECORDS  # no loss, no duplicate
    acked = {(m.partition, m.offset) for m in metadata}
    assert {(r.partition, r.offset) for r in records} == acked
    for p in range(PARTITIONS):  # each partition in send order
        got = [int(r.value.split(b"-")[1]) for r in records if r.partition == p]
        assert got == sorted(got)

    for p in range(PARTITIONS):  # the log: our producer id, sequences without a gap
        expected_sequence = 0
        for header in log_batches(kafka_ref_broker.data_dir, topic, p):
            assert (header.producer_id, header.producer_epoch) == pid
            assert header.base_sequence == expected_sequence
            expected_sequence += header.records_count


@pytest.mark.spec("IPROD-5", "IPROD-8")
def test_a_sequence_gap_is_healed_by_an_epoch_bump(bootstrap, kafka_ref_broker):
    topic = "our-idempotent-gap"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    with Producer(bootstrap, enable_idempotence=True, linger_ms=0) as producer:
        first = producer.send(topic, b"before", partition=0).result(timeout=30)
        tm = producer.transaction_manager
        # Pretend the broker lost 100 acknowledged records (an unclean leader election): the
        # producer's next sequence is 100 past the broker's. The sender thread is idle
        # (everything is acknowledged), so changing its state is safe here.
        entry = tm.entry(TopicPartition(topic, 0))
        entry.next_sequence += 100
        entry.last_acked_sequence += 100
        after = producer.send(topic, b"after", partition=0).result(timeout=30)
        bumped = tm.producer_id_and_epoch
    assert bumped.epoch == 1 and after.offset == first.offset + 1
    assert [r.value for r in consume_all(bootstrap, topic, 2, timeout=15)] == [b"before", b"after"]
    headers = log_batches(kafka_ref_broker.data_dir, topic, 0)
    assert [(h.producer_epoch, h.base_sequence) for h in headers] == [(0, 0), (1, 0)]

"""kafka-ref's own transactional producer against a kafka-ref broker (spec/transactions.md).

Our producer commits and aborts transactions spanning two partitions; our read_committed
consumer and confluent-kafka's (librdkafka) read exactly the committed records. A second
producer with the same transactional id fences the first, and offsets sent to a
transaction are the group's only once it commits.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafka_ref.client import Consumer, Producer, ProducerFencedError, TopicPartition
from kafka_ref.client.transaction_state import TransactionAbortedError
from tests.interop.test_transactions import create_topic, read_all

pytestmark = pytest.mark.timeout(120)


def our_producer(port: int, transactional_id: str) -> Producer:
    p = Producer(
        f"127.0.0.1:{port}",
        transactional_id=transactional_id,
        transaction_timeout_ms=10_000,
        linger_ms=5,
    )
    p.init_transactions(30)
    return p


def transaction(p: Producer, topic: str, prefix: str, n: int, *, commit: bool) -> list[bytes]:
    p.begin_transaction()
    values = [f"{prefix}-{i}".encode() for i in range(n)]
    futures = [p.send(topic, v, partition=i % 2) for i, v in enumerate(values)]
    if commit:
        p.commit_transaction(30)
        assert all(f.result(0).offset >= 0 for f in futures)
    else:
        p.flush(30)  # written to the log, then aborted: the read_committed side drops them
        p.abort_transaction(30)
    return values


def read_ours(port: int, topic: str, expected: int) -> list[bytes]:
    with Consumer(
        f"127.0.0.1:{port}", auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < expected and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(1.0)]  # nothing else may come
    return sorted(got)


@pytest.mark.spec("TXN-41", "TXN-17")
def test_our_producer_commits_and_aborts_across_partitions(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = our_producer(port, f"ours-{uuid.uuid4().hex[:6]}")
    committed = transaction(p, topic, "c", 8, commit=True)
    aborted = transaction(p, topic, "a", 8, commit=False)
    committed += transaction(p, topic, "d", 8, commit=True)
    p.close()
    assert read_ours(port, topic, len(committed)) == sorted(committed)
    assert read_all(port, topic, "read_committed", len(committed)) == sorted(committed)
    everything = sorted(committed + aborted)
    assert read_all(port, topic, "read_uncommitted", len(everything)) == everything


@pytest.mark.spec("TXN-42")
def test_records_not_yet_sent_fail_when_the_transaction_aborts(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    with Producer(
        f"127.0.0.1:{port}", transactional_id=f"ours-{uuid.uuid4().hex[:6]}", linger_ms=60_000
    ) as p:
        p.init_transactions(30)
        p.begin_transaction()
        future = p.send(topic, b"never", partition=0)  # lingers: never drained
        p.abort_transaction(30)
        assert isinstance(future.exception(10), TransactionAbortedError)
        kept = transaction(p, topic, "k", 2, commit=True)
    assert read_ours(port, topic, len(kept)) == sorted(kept)


@pytest.mark.spec("TXN-44", "TXN-17")
def test_a_second_producer_with_the_same_transactional_id_fences_ours(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    tid = f"ours-{uuid.uuid4().hex[:6]}"
    zombie = our_producer(port, tid)
    zombie.begin_transaction()
    zombie.send(topic, b"zombie", partition=0)
    zombie.flush(30)
    successor = our_producer(port, tid)  # aborts the zombie's transaction, bumps the epoch
    committed = transaction(successor, topic, "new", 4, commit=True)
    with pytest.raises(ProducerFencedError):
        zombie.send(topic, b"zombie-2", partition=1)
        zombie.commit_transaction(10)
    with pytest.raises(ProducerFencedError):
        zombie.begin_transaction()
    zombie.close()
    successor.close()
    assert read_ours(port, topic, len(committed)) == sorted(committed)


@pytest.mark.spec("TXN-46", "TXN-16")
def test_offsets_sent_by_our_producer_count_only_when_it_commits(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    group = f"copier-{uuid.uuid4().hex[:6]}"
    # read_uncommitted: librdkafka then fetches offsets without require_stable, so it sees
    # the last committed offset while a transaction's offsets are pending; a read_committed
    # observer would be told to wait until the transaction ends (KIP-447, TXN-84).
    observer = ConfluentConsumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    p = our_producer(port, f"ours-{uuid.uuid4().hex[:6]}")

    def send_offsets(offset: int, *, commit: bool) -> None:
        p.begin_transaction()
        p.send(topic, b"x", partition=0)
        p.send_offsets_to_transaction({TopicPartition(topic, 0): offset}, group, 30)
        p.commit_transaction(30) if commit else p.abort_transaction(30)

    def committed(expected: int, wait: float = 10) -> int:
        # the marker reaching __consumer_offsets follows EndTxn's answer within moments
        deadline = time.monotonic() + wait
        while True:
            tp = ConfluentTopicPartition(topic, 0)
            offset = observer.committed([tp], 10)[0].offset
            if offset == expected or time.monotonic() > deadline:
                return offset
            time.sleep(0.1)

    send_offsets(5, commit=True)
    assert committed(5) == 5
    send_offsets(9, commit=False)
    assert committed(9, wait=1) == 5
    send_offsets(12, commit=True)
    assert committed(12) == 12
    p.begin_transaction()
    p.send_offsets_to_transaction({TopicPartition(topic, 0): 20}, group, 30)
    assert committed(20, wait=1) == 12  # pending while the transaction is open
    p.abort_transaction(30)
    send_offsets(21, commit=True)
    assert committed(21) == 21
    observer.close()
    p.close()

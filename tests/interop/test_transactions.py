"""Real transactional clients against a kafka-ref broker (spec/transactions.md).

confluent-kafka (librdkafka) transactional producers commit and abort transactions that
span two partitions, and read_committed consumers read the topic: every committed record
arrives, no aborted record ever does, and a read_uncommitted consumer sees both. The
markers travel from the coordinator to the partition leader as WriteTxnMarkers over the
wire, also on this one broker. A second producer with the same transactional.id fences the
first, and offsets sent to the transaction are visible to the group only once committed.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)


def create_topic(port: int, partitions: int = 2) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def producer(port: int, transactional_id: str, **extra) -> Producer:
    p = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 10_000,
            **extra,
        }
    )
    p.init_transactions(30)
    return p


def read_all(port: int, topic: str, isolation: str, expected: int, wait: float = 20) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got, deadline = [], time.monotonic() + wait
    while time.monotonic() < deadline and len(got) < expected:
        for m in consumer.consume(100, 0.3):
            assert m.error() is None, m.error()
            got.append(m.value())
    if len(got) >= expected:  # a little longer: nothing else may arrive
        for m in consumer.consume(100, 1.0):
            got.append(m.value())
    consumer.close()
    return sorted(got)


def produce_txn(p: Producer, topic: str, tag: str, count: int, commit: bool) -> list[bytes]:
    p.begin_transaction()
    values = [f"{tag}-{i}".encode() for i in range(count)]
    for i, value in enumerate(values):
        p.produce(topic, value, partition=i % 2)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
    return values


@pytest.mark.spec("TXN-8", "TXN-12", "TXN-17")
def test_committed_records_are_read_and_aborted_never(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = producer(port, f"app-{uuid.uuid4().hex[:6]}")
    committed = produce_txn(p, topic, "c1", 10, commit=True)
    aborted = produce_txn(p, topic, "a1", 10, commit=False)
    committed += produce_txn(p, topic, "c2", 10, commit=True)
    aborted += produce_txn(p, topic, "a2", 7, commit=False)
    p.flush(10)
    assert read_all(port, topic, "read_committed", len(committed)) == sorted(committed)
    everything = sorted(committed + aborted)
    assert read_all(port, topic, "read_uncommitted", len(everything)) == everything


@pytest.mark.spec("TXN-4", "TXN-17")
def test_an_open_transaction_holds_read_committed_consumers_back(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = producer(port, f"app-{uuid.uuid4().hex[:6]}")
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, f"open-{i}".encode(), partition=i % 2)
    p.flush(30)
    assert read_all(port, topic, "read_committed", 1, wait=3) == []  # stuck at the LSO
    assert len(read_all(port, topic, "read_uncommitted", 4)) == 4
    p.commit_transaction(30)
    assert len(read_all(port, topic, "read_committed", 4)) == 4


@pytest.mark.spec("TXN-13", "TXN-17")
def test_a_new_producer_with_the_same_transactional_id_fences_the_old_one(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    zombie = producer(port, tid)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    zombie.flush(30)
    successor = producer(port, tid)  # aborts the zombie's transaction, bumps the epoch
    committed = produce_txn(successor, topic, "new", 4, commit=True)
    with pytest.raises(KafkaException) as err:
        zombie.produce(topic, b"zombie-2", partition=1)
        zombie.flush(10)
        zombie.commit_transaction(10)
    assert err.value.args[0].fatal() or "fenc" in str(err.value).lower()
    assert read_all(port, topic, "read_committed", len(committed)) == sorted(committed)


@pytest.mark.spec("TXN-16", "TXN-17")
def test_offsets_sent_to_a_transaction_count_only_when_it_commits(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    group = f"copier-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    p = producer(port, f"app-{uuid.uuid4().hex[:6]}")

    def send_offsets(offset: int, commit: bool) -> None:
        p.begin_transaction()
        p.produce(topic, b"x", partition=0)
        p.send_offsets_to_transaction(
            [TopicPartition(topic, 0, offset)], consumer.consumer_group_metadata(), 30
        )
        p.commit_transaction(30) if commit else p.abort_transaction(30)

    def committed(expected: int) -> int:
        # EndTxn answers once the decision is logged; the marker reaching __consumer_offsets
        # (which makes the offsets visible) follows within moments
        deadline = time.monotonic() + 10
        while True:
            offset = consumer.committed([TopicPartition(topic, 0)], 10)[0].offset
            if offset == expected or time.monotonic() > deadline:
                return offset
            time.sleep(0.1)

    send_offsets(5, commit=True)
    assert committed(5) == 5
    send_offsets(9, commit=False)
    time.sleep(1)  # the abort marker has landed by now
    assert committed(9) == 5
    send_offsets(12, commit=True)
    assert committed(12) == 12
    consumer.close()


@pytest.mark.spec("TXN-8", "TXN-12", "TXN-17")
def test_kafka_python_transactions_and_read_committed(kafka_ref_broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{port}", transactional_id=f"kp-{uuid.uuid4().hex[:6]}"
    )
    p.init_transactions()
    expected = []
    for n, commit in enumerate([True, False, True, False]):
        p.begin_transaction()
        values = [f"kp{n}-{i}".encode() for i in range(6)]
        for i, value in enumerate(values):
            p.send(topic, value, partition=i % 2)
        if commit:
            p.commit_transaction()
            expected += values
        else:
            p.abort_transaction()
    p.close()
    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{port}",
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    consumer.assign([KTopicPartition(topic, 0), KTopicPartition(topic, 1)])
    got = sorted(m.value for m in consumer)
    consumer.close()
    assert got == sorted(expected)
    assert read_all(port, topic, "read_committed", len(expected)) == sorted(expected)


@pytest.mark.spec("TXN-15", "TXN-17")
def test_a_transaction_left_open_past_its_timeout_is_aborted(tmp_path):
    from tests.interop.conftest import BrokerProcess, free_port

    interval = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    broker = BrokerProcess(str(tmp_path / "data"), free_port(), {interval: 300})
    broker.start()
    try:
        port = broker.port
        topic = create_topic(port)
        stuck = producer(
            port,
            f"stuck-{uuid.uuid4().hex[:6]}",
            **{
                "transaction.timeout.ms": 2000,
                "message.timeout.ms": 2000,
            },
        )
        stuck.begin_transaction()
        for i in range(3):
            stuck.produce(topic, f"stuck-{i}".encode(), partition=i % 2)
        stuck.flush(10)
        other = producer(port, f"other-{uuid.uuid4().hex[:6]}")
        committed = produce_txn(other, topic, "ok", 4, commit=True)
        # held back by the open transaction at first; then the coordinator aborts it
        assert read_all(port, topic, "read_committed", 1, wait=1) == []
        assert read_all(port, topic, "read_committed", 4, wait=15) == sorted(committed)
        with pytest.raises(KafkaException):  # the stuck producer's epoch was bumped
            stuck.commit_transaction(10)
    finally:
        broker.stop()


@pytest.mark.spec("TXN-8", "TXN-17")
def test_our_consumer_reads_committed_transactions_only(kafka_ref_broker):
    from kafka_ref.client import Consumer as OurConsumer
    from kafka_ref.client import TopicPartition as OurTopicPartition

    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = producer(port, f"ours-{uuid.uuid4().hex[:6]}")
    committed = produce_txn(p, topic, "c", 6, commit=True)
    produce_txn(p, topic, "a", 6, commit=False)
    committed += produce_txn(p, topic, "d", 6, commit=True)
    bootstrap = f"127.0.0.1:{port}"
    with OurConsumer(
        bootstrap, auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        consumer.assign([OurTopicPartition(topic, 0), OurTopicPartition(topic, 1)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < len(committed) and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(1.0)]  # nothing else may come
    assert sorted(got) == sorted(committed)

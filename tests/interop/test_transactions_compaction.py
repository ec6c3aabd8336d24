"""Compaction of a transactional topic, and expiry of transactional ids, over the wire
(COMPACT-23, COMPACT-25, COMPACT-26, TXN-81).

A confluent-kafka (librdkafka) transactional producer commits and aborts transactions on
a topic with `cleanup.policy=compact` and tiny segments, on a broker whose cleaner runs
every 100 ms. Once the cleaner has run, the segment files hold no aborted record, and a
read_committed librdkafka consumer reading from the start ends with the same latest value
per key as the transactions committed; an open transaction holds the cleaner back at the
last stable offset until it ends. The same broker forgets transactional ids idle for
two seconds: the coordinator's periodic task writes the id's tombstone to
`__transaction_state`.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.record.batch import RecordBatch, iter_batch_headers
from kafka_ref.tools.server_process import free_port
from kafka_ref.txn import transaction_log as tlog
from tests.interop.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)

TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",  # a few batches per segment: most of the log is cleanable
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "0",  # markers without data may go at the next round
}


@pytest.fixture(scope="module")
def cleaning_broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("txn-compaction")
    configs = {
        "log.cleaner.backoff.ms": 100,
        "transactional.id.expiration.ms": 2000,
        "transaction.remove.expired.transaction.cleanup.interval.ms": 200,
    }
    broker = BrokerProcess(str(base / "data"), free_port(), configs)
    broker.start()
    yield broker
    broker.stop()


def segment_records(data_dir: str, topic: str, partition: int = 0) -> list[tuple]:
    """(is control, key, value) of every record in the partition's segment files."""
    directory = os.path.join(data_dir, f"{topic}-{partition}")
    out = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        for pos, header in iter_batch_headers(data):
            for record in RecordBatch(data, pos).records():
                out.append((header.is_control, record.key, record.value))
    return out


@pytest.mark.spec("COMPACT-23", "COMPACT-26")
def test_the_cleaner_removes_aborted_records_and_keeps_committed_values(cleaning_broker):
    bootstrap = f"127.0.0.1:{cleaning_broker.port}"
    topic = f"txn-compact-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=TOPIC_CONFIG)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    expected: dict[bytes, bytes] = {}
    for round_ in range(6):
        commit = round_ % 2 == 0
        producer.begin_transaction()
        for k in range(8):
            key, value = b"k%d" % k, b"%s-%d-%d" % (b"c" if commit else b"aborted", round_, k)
            producer.produce(topic, value, key=key, partition=0)
            if commit:
                expected[key] = value
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):  # plain records roll the last transactions out of the active segment
        plain.produce(topic, b"filler-%d" % i, key=b"filler", partition=0)
        expected[b"filler"] = b"filler-%d" % i
        plain.flush(30)

    def aborted_on_disk() -> int:
        return sum(
            1
            for _, _, v in segment_records(cleaning_broker.data_dir, topic)
            if v and b"aborted" in v
        )

    deadline = time.monotonic() + 30
    while aborted_on_disk() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert aborted_on_disk() == 0, "the cleaner did not remove the aborted records"

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    latest: dict[bytes, bytes] = {}
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    position, deadline = 0, time.monotonic() + 30
    while position < high and time.monotonic() < deadline:
        for m in consumer.consume(500, 0.5):
            assert m.error() is None, m.error()
            assert b"aborted" not in m.value()
            latest[m.key()] = m.value()
        position = consumer.position([TopicPartition(topic, 0)])[0].offset
    consumer.close()
    assert latest == expected


def wait_for(condition, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


@pytest.mark.spec("COMPACT-25")
def test_the_broker_never_cleans_past_an_open_transaction(cleaning_broker):
    bootstrap = f"127.0.0.1:{cleaning_broker.port}"
    topic, probe = (f"txn-open-{uuid.uuid4().hex[:8]}" for _ in range(2))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name in (topic, probe):
        admin.create_topics([NewTopic(name, 1, 1, config=TOPIC_CONFIG)])[name].result(30)
    plain = Producer({"bootstrap.servers": bootstrap})

    def fill(name: str, count: int = 20) -> None:  # plain records that roll segments
        for i in range(count):
            plain.produce(name, b"filler-%d" % i, key=b"filler", partition=0)
            plain.flush(30)

    fill(topic)  # cleanable data before the open transaction
    stuck = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic + "-open"})
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.produce(topic, b"open", key=b"o", partition=0)
    stuck.flush(30)  # open from here on: the LSO stays at its first offset
    late = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic + "-late"})
    late.init_transactions(30)
    late.begin_transaction()
    late.produce(topic, b"late-aborted", key=b"l", partition=0)
    late.flush(30)
    late.abort_transaction(30)  # decided, but after the LSO
    fill(topic)

    # A cleaner pass runs on the broker's event loop, between requests: one that cleans the
    # probe topic's records, produced now, also went over `topic` after all of the above.
    fill(probe)
    path = os.path.join(cleaning_broker.data_dir, "cleaner-offset-checkpoint")
    cleaned = OffsetCheckpointFile(path).read
    assert wait_for(lambda: cleaned().get((probe, 0), 0) > 0), "no cleaner pass ran"
    assert b"late-aborted" in values(cleaning_broker, topic)
    stuck.commit_transaction(30)  # the LSO moves on: the aborted record can go now
    fill(topic)
    assert wait_for(lambda: b"late-aborted" not in values(cleaning_broker, topic))
    assert b"open" in values(cleaning_broker, topic)


def values(broker, topic: str) -> list:
    return [v for _, _, v in segment_records(broker.data_dir, topic)]


@pytest.mark.spec("TXN-81")
def test_an_idle_transactional_id_is_expired_with_a_tombstone(cleaning_broker):
    bootstrap = f"127.0.0.1:{cleaning_broker.port}"
    tid = f"expiring-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.commit_transaction(30)  # an empty transaction: the id is at rest now
    partition = tlog.partition_for(tid, 50)
    key = tlog.key_bytes(tid)

    def tombstoned() -> bool:
        records = segment_records(cleaning_broker.data_dir, "__transaction_state", partition)
        return (False, key, None) in records

    deadline = time.monotonic() + 20
    while not tombstoned() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tombstoned(), "the idle transactional id got no tombstone"
    again = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    again.init_transactions(30)  # a fresh start for the id

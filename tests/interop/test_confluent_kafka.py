"""confluent-kafka (librdkafka) against a kafka-ref broker process, default settings (BROKER-43).

The only setting beyond `bootstrap.servers` is the `group.id` librdkafka's Consumer requires;
with its default `enable.auto.commit=true` it finds the group coordinator and commits on
`close()` (tests/interop/test_groups.py covers the groups themselves).
"""

from __future__ import annotations

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from tests.interop.conftest import T_BASE, Produced, offset_inside_a_batch

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
RECORDS = 10_000
PARTITIONS = 3


def consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "interop"})


def consume(bootstrap: str, assignment: list[TopicPartition], expected: int, timeout: float = 30):
    c = consumer(bootstrap)
    c.assign(assignment)
    out = []
    import time

    deadline = time.monotonic() + timeout
    while len(out) < expected and time.monotonic() < deadline:
        for m in c.consume(10_000, 0.5):
            if m.error():
                raise KafkaException(m.error())
            out.append(m)
    c.close()
    return out


def as_produced(messages) -> list[Produced]:
    return sorted(
        Produced(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in messages
    )


@pytest.fixture(scope="module")
def admin(kafka_ref_broker):
    return AdminClient({"bootstrap.servers": kafka_ref_broker.bootstrap})


@pytest.fixture(scope="module")
def topics(kafka_ref_broker, admin, produced):
    """One topic per codec, 10k keyed records each, produced with acks=all (the default)."""
    names = {codec: f"ck-{codec}" for codec in CODECS}
    for future in admin.create_topics([NewTopic(n, PARTITIONS) for n in names.values()]).values():
        future.result(10)
    for codec, name in names.items():
        config = {"bootstrap.servers": kafka_ref_broker.bootstrap, "compression.type": codec}
        producer = Producer(config)
        reports: list = []

        def report(err, msg, reports=reports):
            assert err is None, err
            reports.append(msg)

        for i in range(RECORDS):
            producer.produce(
                name,
                key=b"key-%d" % i,
                value=b"value-%d-" % i + b"x" * (i % 50),
                timestamp=T_BASE + i,
                on_delivery=report,
            )
        assert producer.flush(30) == 0
        assert len(reports) == RECORDS
        produced[name] = as_produced(reports)
    return names


@pytest.mark.spec("BROKER-43")
def test_list_and_describe_topics(admin, topics):
    metadata = admin.list_topics(timeout=10)
    assert metadata.controller_id == 0 and list(metadata.brokers) == [0]
    for name in topics.values():
        partitions = metadata.topics[name].partitions
        assert sorted(partitions) == list(range(PARTITIONS))
        for p in partitions.values():
            assert (p.leader, p.replicas, p.isrs) == (0, [0], [0])
    described = admin.describe_topics(TopicCollection(list(topics.values())))
    for name, future in described.items():
        assert len(future.result(10).partitions) == PARTITIONS, name


@pytest.mark.spec("BROKER-43")
@pytest.mark.parametrize("codec", CODECS)
def test_keyed_records_spread_and_dense(topics, produced, codec):
    records = produced[topics[codec]]
    by_partition: dict[int, list[int]] = {}
    for r in records:
        by_partition.setdefault(r.partition, []).append(r.offset)
    assert sorted(by_partition) == list(range(PARTITIONS))  # murmur2 spreads the keys
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # dense from 0


@pytest.mark.spec("BROKER-43")
@pytest.mark.parametrize("codec", CODECS)
def test_consume_everything_from_the_beginning(kafka_ref_broker, topics, produced, codec):
    name = topics[codec]
    assignment = [TopicPartition(name, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
    assert as_produced(consume(kafka_ref_broker.bootstrap, assignment, RECORDS)) == produced[name]


@pytest.mark.spec("BROKER-43")
def test_consume_from_an_offset(kafka_ref_broker, topics, produced):
    name = topics["lz4"]
    mine = [r for r in produced[name] if r.partition == 1]
    start = offset_inside_a_batch(kafka_ref_broker.data_dir, name, 1, len(mine) // 2)
    got = consume(kafka_ref_broker.bootstrap, [TopicPartition(name, 1, start)], len(mine) - start)
    assert [m.offset() for m in got] == list(range(start, len(mine)))
    assert as_produced(got) == mine[start:]


@pytest.mark.spec("BROKER-43")
def test_offsets_for_times(kafka_ref_broker, topics, produced):
    name = topics["zstd"]
    target = T_BASE + RECORDS // 2
    c = consumer(kafka_ref_broker.bootstrap)
    found = c.offsets_for_times([TopicPartition(name, p, target) for p in range(PARTITIONS)], 10)
    c.close()
    for tp in found:
        mine = [r for r in produced[name] if r.partition == tp.partition]
        expected = min(r.offset for r in mine if r.timestamp >= target)
        assert tp.error is None and tp.offset == expected
        start = [TopicPartition(name, tp.partition, tp.offset)]
        first = consume(kafka_ref_broker.bootstrap, start, 1)
        assert first[0].timestamp()[1] >= target
    late = consumer(kafka_ref_broker.bootstrap)
    after = late.offsets_for_times([TopicPartition(name, 0, T_BASE + RECORDS + 1)], 10)
    late.close()
    assert after[0].offset == -1  # nothing that recent: the end


@pytest.mark.spec("BROKER-43")
def test_describe_configs(admin, topics):
    topic = ConfigResource(ConfigResource.Type.TOPIC, topics["gzip"])
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    results = admin.describe_configs([topic, broker])
    topic_configs = results[topic].result(10)
    assert topic_configs["cleanup.policy"].value == "delete"
    assert topic_configs["retention.ms"].is_default
    assert len(topic_configs) >= 20
    broker_configs = results[broker].result(10)
    assert broker_configs["num.partitions"].value == "1"
    assert broker_configs["num.partitions"].is_read_only  # static only
    assert not broker_configs["log.segment.bytes"].is_read_only  # a dynamic log default


@pytest.mark.spec("BROKER-43")
def test_admin_errors_and_changes(admin, topics):
    exists = admin.create_topics([NewTopic(topics["gzip"], 1)])[topics["gzip"]]
    with pytest.raises(KafkaException) as info:
        exists.result(10)
    assert info.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    too_many = admin.create_topics([NewTopic("ck-rf3", 1, 3)])["ck-rf3"]
    with pytest.raises(KafkaException) as info:
        too_many.result(10)
    assert info.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    temp = NewTopic("ck-temp", 1, config={"cleanup.policy": "compact"})
    admin.create_topics([temp])["ck-temp"].result(10)
    admin.create_partitions([NewPartitions("ck-temp", 4)])["ck-temp"].result(10)
    assert len(admin.list_topics(timeout=10).topics["ck-temp"].partitions) == 4
    admin.delete_topics(["ck-temp"])["ck-temp"].result(10)
    assert "ck-temp" not in admin.list_topics(timeout=10).topics


@pytest.mark.spec("BROKER-49", "LOG-17")
def test_librdkafka_reports_a_refused_batchs_errors_per_record(kafka_ref_broker, admin):
    """Keyless records in one batch to a compacted topic: the broker refuses the batch and
    names the keyless records (Produce v8, KIP-467), so librdkafka fails those with
    INVALID_RECORD and the others of the batch with _INVALID_DIFFERENT_RECORD."""
    name = "per-record-errors"
    config = {"cleanup.policy": "compact"}
    admin.create_topics([NewTopic(name, 1, config=config)])[name].result(10)
    producer = Producer({"bootstrap.servers": kafka_ref_broker.bootstrap, "linger.ms": 500})
    reports: dict = {}
    keys = [b"k0", None, b"k2", None, b"k4"]
    for i, key in enumerate(keys):
        producer.produce(
            name,
            b"v%d" % i,
            key=key,
            on_delivery=lambda err, msg: reports.update({msg.value(): err and err.code()}),
        )
    assert producer.flush(30) == 0
    assert reports == {
        b"v0": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v1": KafkaError.INVALID_RECORD,
        b"v2": KafkaError._INVALID_DIFFERENT_RECORD,
        b"v3": KafkaError.INVALID_RECORD,
        b"v4": KafkaError._INVALID_DIFFERENT_RECORD,
    }


@pytest.mark.spec("BROKER-50")
def test_describe_cluster(kafka_ref_broker, admin):
    """librdkafka's describe_cluster (DescribeCluster, KIP-700): the cluster id, the
    controller and the broker, as Metadata has them."""
    described = admin.describe_cluster(request_timeout=10).result(10)
    metadata = admin.list_topics(timeout=10)
    assert described.cluster_id == metadata.cluster_id and described.cluster_id
    assert described.controller.id == metadata.controller_id
    assert [(n.id, n.host, n.port) for n in described.nodes] == [
        (b.id, b.host, b.port) for b in metadata.brokers.values()
    ]

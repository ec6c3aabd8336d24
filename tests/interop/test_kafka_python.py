"""kafka-python against a kafka-ref broker process, default settings (BROKER-43).

kafka-python 2.1+ enables idempotence by default (KIP-679), which needs InitProducerId
(IDEM-15); `test_default_producer_needs_init_producer_id` produces with the defaults. The
topic fixture's producers pass `enable_idempotence=False` so that the plain produce path
stays covered; tests/interop/test_idempotence.py covers the idempotent one under faults.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import TopicAlreadyExistsError

from tests.interop.conftest import T_BASE, Produced, offset_inside_a_batch

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
RECORDS = 10_000
PARTITIONS = 3


def consume(bootstrap: str, start: dict[TopicPartition, int | None], expected: int) -> list:
    """Read from each partition's start offset (None: the beginning) until `expected`."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    consumer.assign(list(start))
    for tp, offset in start.items():
        if offset is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, offset)
    out: list = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500, max_records=5000).values():
            out.extend(records)
    consumer.close()
    return out


def key(i: int) -> bytes:
    return b"key-%d" % i


def value(i: int) -> bytes:
    return b"value-%d-" % i + b"y" * (i % 40)


def as_produced(records) -> list[Produced]:
    return sorted(Produced(r.partition, r.offset, r.key, r.value, r.timestamp) for r in records)


@pytest.fixture(scope="module")
def admin(kafka_ref_broker):
    client = KafkaAdminClient(bootstrap_servers=kafka_ref_broker.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def topics(kafka_ref_broker, admin, produced):
    names = {codec: f"kp-{codec}" for codec in CODECS}
    admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names.values()])
    for codec, name in names.items():
        producer = KafkaProducer(
            bootstrap_servers=kafka_ref_broker.bootstrap,
            compression_type=codec,
            enable_idempotence=False,
        )
        assert producer.config["acks"] == -1  # acks=all is the default
        futures = [
            producer.send(name, key=key(i), value=value(i), timestamp_ms=T_BASE + i)
            for i in range(RECORDS)
        ]
        producer.flush(60)
        sent = []
        for i, future in enumerate(futures):
            meta = future.get(10)
            sent.append(Produced(meta.partition, meta.offset, key(i), value(i), T_BASE + i))
        producer.close()
        produced[name] = sorted(sent)
    return names


@pytest.mark.spec("BROKER-43")
def test_list_and_describe_topics(admin, topics):
    assert set(topics.values()) <= set(admin.list_topics())
    described = {t["name"]: t for t in admin.describe_topics(list(topics.values()))}
    for name in topics.values():
        partitions = described[name]["partitions"]
        assert sorted(p["partition_index"] for p in partitions) == list(range(PARTITIONS))
        assert all(p["leader_id"] == 0 and p["isr_nodes"] == [0] for p in partitions)


@pytest.mark.spec("BROKER-43")
@pytest.mark.parametrize("codec", CODECS)
def test_consume_everything_from_the_beginning(kafka_ref_broker, topics, produced, codec):
    name = topics[codec]
    start = {TopicPartition(name, p): None for p in range(PARTITIONS)}
    got = consume(kafka_ref_broker.bootstrap, start, RECORDS)
    assert as_produced(got) == produced[name]


@pytest.mark.spec("BROKER-43")
def test_consume_from_an_offset(kafka_ref_broker, topics, produced):
    name = topics["snappy"]
    mine = [r for r in produced[name] if r.partition == 2]
    start = offset_inside_a_batch(kafka_ref_broker.data_dir, name, 2, len(mine) // 3)
    got = consume(kafka_ref_broker.bootstrap, {TopicPartition(name, 2): start}, len(mine) - start)
    assert [r.offset for r in got] == list(range(start, len(mine)))


@pytest.mark.spec("BROKER-43")
def test_offsets_for_times(kafka_ref_broker, topics, produced):
    name = topics["gzip"]
    target = T_BASE + RECORDS // 3
    consumer = KafkaConsumer(bootstrap_servers=kafka_ref_broker.bootstrap)
    found = consumer.offsets_for_times({TopicPartition(name, p): target for p in range(PARTITIONS)})
    assert set(consumer.beginning_offsets(list(found)).values()) == {0}
    ends = consumer.end_offsets(list(found))
    consumer.close()
    for tp, offset_and_ts in found.items():
        mine = [r for r in produced[name] if r.partition == tp.partition]
        first = min((r for r in mine if r.timestamp >= target), key=lambda r: r.offset)
        assert (offset_and_ts.offset, offset_and_ts.timestamp) == (first.offset, first.timestamp)
        assert ends[tp] == len(mine)


@pytest.mark.spec("BROKER-43")
def test_describe_configs(admin, topics):
    resources = [
        ConfigResource(ConfigResourceType.TOPIC, topics["lz4"]),
        ConfigResource(ConfigResourceType.BROKER, "0"),
    ]
    everything = admin.describe_configs(resources, config_filter="all")
    topic = everything["topic"][topics["lz4"]]
    assert topic["cleanup.policy"]["value"] == "delete"
    assert topic["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    broker = everything["broker"]["0"]
    assert broker["num.partitions"]["value"] == "1" and broker["num.partitions"]["read_only"]
    assert not broker["log.segment.bytes"]["read_only"]  # a dynamic log default
    assert admin.describe_configs(resources) == {"topic": {topics["lz4"]: {}}, "broker": {"0": {}}}


@pytest.mark.spec("BROKER-43")
def test_admin_changes(admin, topics):
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(topics["lz4"], 1, 1)])
    admin.create_topics([NewTopic("kp-temp", 1, 1)])
    admin.create_partitions({"kp-temp": NewPartitions(3)})
    assert len(admin.describe_topics(["kp-temp"])[0]["partitions"]) == 3
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("kp-temp", 1, 1)])
    admin.delete_topics(["kp-temp"])
    assert "kp-temp" not in admin.list_topics()


@pytest.mark.spec("BROKER-43", "IDEM-15")
def test_default_producer_needs_init_producer_id(kafka_ref_broker, produced):
    producer = KafkaProducer(bootstrap_servers=kafka_ref_broker.bootstrap)
    try:
        assert producer.config["enable_idempotence"]
        futures = [producer.send("kp-default", key=b"k", value=b"v%d" % i) for i in range(3)]
        metas = [future.get(10) for future in futures]  # auto-creates the topic
        pid = producer._transaction_manager.producer_id_and_epoch
        assert pid.producer_id >= 0 and pid.epoch == 0
        assert [m.offset for m in metas] == [0, 1, 2]
        # test_restart reads these back after the broker restarts
        produced["kp-default"] = [
            Produced(m.partition, m.offset, b"k", b"v%d" % i, m.timestamp)
            for i, m in enumerate(metas)
        ]
    finally:
        producer.close(timeout=5)

"""Topic administration and configuration over the wire: CreateTopics' defaults and checks,
DescribeConfigs for topics and brokers, min.insync.replicas, segment.bytes, and the internal
offsets topic.

Topic-level configs go in CreateTopics, so these tests run on any broker that accepts them.
The one rule about a config *set in the broker's configuration* (its source is
STATIC_BROKER_CONFIG) asks for a broker started with it (`configurable-broker`).
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.groups import coordinator
from kafka_ref.conformance.wire import batch
from kafka_ref.protocol.messages import ApiKey, CreateTopicsRequest, DescribeConfigsRequest

UNKNOWN_TOPIC, RECORD_LIST_TOO_LARGE = 3, 18
INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_REQUEST = 37, 38, 40, 42
TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
TOPIC_CONFIGS = {
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
}


def create(
    wire,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs=None,
    validate_only: bool = False,
) -> int:
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=replication,
                assignments=[],
                configs=[
                    CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                    for k, v in (configs or {}).items()
                ],
            )
        ],
        timeout_ms=10000,
        validate_only=validate_only,
    )
    return wire.request(ApiKey.CREATE_TOPICS, 4, body).topics[0].error_code


def describe_configs(wire, kind: int, name: str, synonyms: bool = False):
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=kind, resource_name=name, configuration_keys=None
            )
        ],
        include_synonyms=synonyms,
    )
    return wire.request(ApiKey.DESCRIBE_CONFIGS, 1, body).results[0]


def configs_of(result) -> dict:
    return {c.name: c for c in result.configs}


def broker_id(wire) -> int:
    return wire.metadata([]).brokers[0].node_id


@pytest.fixture
def admin(target):
    target.require("create-topics")
    return target


@pytest.mark.spec("BROKER-29")
def test_min_insync_replicas_is_capped_at_the_replication_factor(admin, wire):
    name = admin.topic_name("minisr")
    # replication factor 1: min.insync.replicas=2 is capped at the one replica there is,
    # so the ISR of one is enough (the refusal itself needs followers: REPL-5)
    assert wire.create_topic(name, **{"min.insync.replicas": "2"}) == 0
    assert wire.produce(name, 0, batch([b"x"]), acks=-1).error_code == 0
    assert wire.produce(name, 0, batch([b"y"]), acks=1).error_code == 0
    assert wire.fetch(name, 0, 0).high_watermark == 2, "both committed"


@pytest.mark.spec("BROKER-31")
def test_minus_one_means_the_broker_default_and_bad_counts_are_refused(admin, wire):
    name = admin.topic_name("defaults")
    assert create(wire, name, partitions=-1, replication=-1) == 0
    wire.wait_for_leader(name, 1)
    parts = wire.metadata([name]).topics[0].partitions
    if admin.has("describe-configs"):
        node = configs_of(describe_configs(wire, BROKER, str(broker_id(wire))))
        assert "num.partitions" in node, "the broker's num.partitions is not described"
        assert len(parts) == int(node["num.partitions"].value)
    assert len(parts) >= 1
    brokers = len(wire.metadata([]).brokers)
    for partitions in (0, -2):
        assert create(wire, admin.topic_name("p"), partitions=partitions) == INVALID_PARTITIONS
    for replication in (0, -2, brokers + 1):
        code = create(wire, admin.topic_name("r"), replication=replication)
        assert code == INVALID_REPLICATION_FACTOR, replication


@pytest.mark.spec("BROKER-33")
def test_topic_configs_are_validated_and_validate_only_creates_nothing(admin, wire):
    bad = {
        "no.such.config": "1",
        "cleanup.policy": "sometimes",
        "retention.ms": "soon",
        "min.insync.replicas": "0",
    }
    for key, value in bad.items():
        name = admin.topic_name("badcfg")
        assert create(wire, name, configs={key: value}) == INVALID_CONFIG, key
        assert wire.metadata([name]).topics[0].error_code == UNKNOWN_TOPIC
    assert create(wire, admin.topic_name("null"), configs={"retention.ms": None}) in (
        INVALID_REQUEST,
        INVALID_CONFIG,  # Kafka before 3.x answered a null value so
    )
    name = admin.topic_name("dry")
    assert create(wire, name, configs={"retention.ms": "1000"}, validate_only=True) == 0
    assert create(wire, name, configs={"retention.ms": "x"}, validate_only=True) == INVALID_CONFIG
    assert wire.metadata([name]).topics[0].error_code == UNKNOWN_TOPIC, "validate_only created it"


@pytest.mark.spec("BROKER-37")
def test_describe_configs_lists_every_topic_config_with_its_source(admin, wire):
    admin.require("describe-configs")
    name = admin.topic_name("described")
    assert wire.create_topic(name, **{"retention.ms": "123456"}) == 0
    result = describe_configs(wire, TOPIC, name, synonyms=True)
    assert result.error_code == 0
    got = configs_of(result)
    assert set(got) >= TOPIC_CONFIGS, f"missing {TOPIC_CONFIGS - set(got)}"
    assert not any(c.read_only for c in got.values()), "topic configs are not read-only"
    mine = got["retention.ms"]
    assert (mine.value, mine.config_source) == ("123456", DYNAMIC_TOPIC_CONFIG)
    assert (mine.synonyms[0].name, mine.synonyms[0].source) == (
        "retention.ms",
        DYNAMIC_TOPIC_CONFIG,
    )
    assert [s.source for s in mine.synonyms] == sorted(s.source for s in mine.synonyms), (
        "synonyms most specific first"
    )
    assert got["cleanup.policy"].value == "delete"
    assert got["cleanup.policy"].config_source in (STATIC_BROKER_CONFIG, DEFAULT_CONFIG)
    assert describe_configs(wire, TOPIC, admin.topic_name("nope")).error_code == UNKNOWN_TOPIC


@pytest.mark.spec("BROKER-37", "BROKER-38")
def test_a_static_broker_config_is_reported_as_such(configured_broker):
    broker = configured_broker({"log.retention.bytes": 987654321})
    broker.require("create-topics", "describe-configs")
    name = broker.topic_name("static")
    with broker.wire() as w:
        assert w.create_topic(name) == 0
        topic = configs_of(describe_configs(w, TOPIC, name, synonyms=True))["retention.bytes"]
        assert (topic.value, topic.config_source) == ("987654321", STATIC_BROKER_CONFIG)
        assert (topic.synonyms[0].name, topic.synonyms[0].source) == (
            "log.retention.bytes",
            STATIC_BROKER_CONFIG,
        )
        node = configs_of(describe_configs(w, BROKER, str(broker_id(w))))["log.retention.bytes"]
        assert (node.value, node.config_source, node.read_only) == (  # dynamic, as in Kafka
            "987654321",
            STATIC_BROKER_CONFIG,
            False,
        )


@pytest.mark.spec("BROKER-38")
def test_describe_configs_lists_the_brokers_configs(admin, wire):
    admin.require("describe-configs")
    node = broker_id(wire)
    result = describe_configs(wire, BROKER, str(node))
    assert result.error_code == 0
    got = configs_of(result)
    for key in (
        "num.partitions",
        "log.segment.bytes",
        "log.retention.hours",
        "default.replication.factor",
        "auto.create.topics.enable",
    ):
        assert key in got, key
    assert got["log.segment.bytes"].value and int(got["log.segment.bytes"].value) > 0
    assert got["num.partitions"].read_only, "never dynamically updatable (CONFIG-5)"
    other = describe_configs(wire, BROKER, str(node + 1000))
    assert other.error_code == INVALID_REQUEST


@pytest.mark.spec("SEG-6")
def test_an_append_larger_than_a_segment_is_refused(admin, wire):
    name = admin.topic_name("seg")
    assert wire.create_topic(name, **{"segment.bytes": "1024"}) == 0
    assert wire.produce(name, 0, batch([b"z" * 2000])).error_code == RECORD_LIST_TOO_LARGE
    assert wire.fetch(name, 0, 0).high_watermark == 0
    assert wire.produce(name, 0, batch([b"z" * 500])).error_code == 0, "one that fits"


@pytest.mark.spec("BROKER-45")
def test_the_offsets_topic_is_created_on_first_use_compacted_and_internal(target, wire):
    target.require("groups")
    coordinator(wire, target.group_name("first"))
    meta = wire.metadata(["__consumer_offsets"])
    if not meta.topics or meta.topics[0].error_code != 0:
        pytest.skip("the target keeps committed offsets outside a __consumer_offsets topic")
    offsets = meta.topics[0]
    assert offsets.is_internal, "reported as internal"
    brokers = len(meta.brokers)
    assert all(1 <= len(p.replica_nodes) <= brokers for p in offsets.partitions)
    if target.has("describe-configs"):
        node = configs_of(describe_configs(wire, BROKER, str(broker_id(wire))))
        assert len(offsets.partitions) == int(node["offsets.topic.num.partitions"].value)
        wanted_rf = min(int(node["offsets.topic.replication.factor"].value), brokers)
        assert all(len(p.replica_nodes) == wanted_rf for p in offsets.partitions)
        got = configs_of(describe_configs(wire, TOPIC, "__consumer_offsets"))
        assert got["cleanup.policy"].value == "compact"
        assert got["compression.type"].value == "producer"
        assert got["segment.bytes"].value == node["offsets.topic.segment.bytes"].value

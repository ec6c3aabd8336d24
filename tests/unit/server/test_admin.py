"""Topic administration and configs over the wire (BROKER-30..BROKER-35, 37, 38)."""

from __future__ import annotations

import os
import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
)
from kafka_ref.server.dynamic_config import KAFKA_DYNAMIC_CONFIGS
from tests.unit.server.conftest import Wire, batch, fetch_body, wait_until

pytestmark = pytest.mark.timeout(60)


def topic(name, partitions=1, rf=1, configs=None, assignments=None):
    return CreateTopicsRequest.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        assignments=[
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=ids)
            for i, ids in (assignments or {}).items()
        ],
        configs=[
            CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
            for k, v in (configs or {}).items()
        ],
    )


def create(wire, *topics, validate_only=False, version=4):
    body = CreateTopicsRequest(topics=list(topics), timeout_ms=5000, validate_only=validate_only)
    return {t.name: t.error_code for t in wire.request(ApiKey.CREATE_TOPICS, version, body).topics}


def partitions_of(wire, name):
    return len(wire.metadata([name], auto=False).topics[0].partitions)


@pytest.mark.spec("BROKER-30")
@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "a/b", "ü", "a b", "x:y"])
def test_illegal_topic_names(wire, name):
    assert create(wire, topic(name)) == {name: ErrorCode.INVALID_TOPIC}


@pytest.mark.spec("BROKER-30")
def test_legal_names_and_collisions(wire):
    created = create(wire, topic("a" * 249), topic("my.topic_1-X"))
    assert created == {"a" * 249: 0, "my.topic_1-X": 0}
    assert create(wire, topic("my_topic.1-X")) == {"my_topic.1-X": ErrorCode.INVALID_TOPIC}


@pytest.mark.spec("BROKER-31")
@pytest.mark.parametrize("version", [2, 3, 4])
def test_minus_one_means_the_broker_defaults(make_broker, version):
    wire = Wire(make_broker(props={"num.partitions": 4}).port)
    assert create(wire, topic("d", -1, -1), version=version) == {"d": 0}
    assert partitions_of(wire, "d") == 4


@pytest.mark.spec("BROKER-31")
def test_bad_counts(wire):
    assert create(wire, topic("p0", 0), topic("pm", -5), topic("r0", 1, 0), topic("r3", 1, 3)) == {
        "p0": ErrorCode.INVALID_PARTITIONS,
        "pm": ErrorCode.INVALID_PARTITIONS,
        "r0": ErrorCode.INVALID_REPLICATION_FACTOR,
        "r3": ErrorCode.INVALID_REPLICATION_FACTOR,
    }
    assert wire.metadata(None).topics == []


@pytest.mark.spec("BROKER-32")
def test_existing_and_duplicate_topics(wire):
    assert create(wire, topic("x")) == {"x": 0}
    body = CreateTopicsRequest(
        topics=[topic("x"), topic("y"), topic("y")], timeout_ms=1, validate_only=False
    )
    result = wire.request(ApiKey.CREATE_TOPICS, 4, body).topics
    assert [(t.name, t.error_code) for t in result] == [
        ("x", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("y", ErrorCode.INVALID_REQUEST),
        ("y", ErrorCode.INVALID_REQUEST),
    ]
    assert "already exists" in result[0].error_message


@pytest.mark.spec("BROKER-33")
def test_configs_are_validated(wire):
    assert create(
        wire,
        topic("u", configs={"no.such.config": "1"}),
        topic("v", configs={"segment.bytes": "abc"}),
        topic("w", configs={"cleanup.policy": "shred"}),
        topic("n", configs={"retention.ms": None}),
        topic("ok", configs={"cleanup.policy": "compact", "segment.bytes": "1048576"}),
    ) == {
        "u": ErrorCode.INVALID_CONFIG,
        "v": ErrorCode.INVALID_CONFIG,
        "w": ErrorCode.INVALID_CONFIG,
        "n": ErrorCode.INVALID_REQUEST,
        "ok": 0,
    }


@pytest.mark.spec("BROKER-33")
def test_validate_only_creates_nothing(wire, broker):
    assert create(wire, topic("vo", 3), validate_only=True) == {"vo": 0}
    invalid = create(wire, topic("bad", 0), validate_only=True)
    assert invalid == {"bad": ErrorCode.INVALID_PARTITIONS}
    assert wire.metadata(None).topics == []
    assert not any(n.startswith("vo-") for n in os.listdir(broker.broker.config.data_dir))


@pytest.mark.spec("BROKER-31")
def test_explicit_assignments(wire):
    assert create(wire, topic("as", -1, -1, assignments={0: [0], 1: [0]})) == {"as": 0}
    assert partitions_of(wire, "as") == 2
    assert create(wire, topic("as2", -1, -1, assignments={0: [5]})) == {
        "as2": ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    }
    both = create(wire, topic("as3", 2, 1, assignments={0: [0]}))
    assert both == {"as3": ErrorCode.INVALID_REQUEST}


@pytest.mark.spec("BROKER-34")
def test_delete_topics(wire, broker):
    create(wire, topic("gone", 2))
    wire.produce("gone", 0, batch(3))
    body = DeleteTopicsRequest(topic_names=["gone", "never"], timeout_ms=5000)
    result = {r.name: r.error_code for r in wire.request(ApiKey.DELETE_TOPICS, 3, body).responses}
    assert result == {"gone": 0, "never": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert wire.metadata(["gone"], auto=False).topics[0].error_code == 3
    assert not [n for n in os.listdir(broker.broker.config.data_dir) if n.startswith("gone-")]
    assert create(wire, topic("gone")) == {"gone": 0}  # the name is free again
    assert wire.fetch_many([("gone", 0, 0)]).responses[0].partitions[0].high_watermark == 0


@pytest.mark.spec("BROKER-34")
def test_deleting_a_topic_answers_its_waiting_fetches(wire, broker):
    create(wire, topic("w"))
    waiting = Wire(broker.port)
    waiting.send(ApiKey.FETCH, 10, fetch_body([("w", 0, 0)], max_wait_ms=20_000))
    parked = broker.broker.apis.fetch_purgatory
    assert wait_until(lambda: parked.watched(("w", 0)) == 1), "the fetch never parked"
    started = time.monotonic()
    wire.request(ApiKey.DELETE_TOPICS, 3, DeleteTopicsRequest(topic_names=["w"], timeout_ms=1))
    partition = waiting.receive().responses[0].partitions[0]
    assert time.monotonic() - started < 5
    assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.spec("BROKER-34")
def test_topic_deletion_can_be_disabled(make_broker):
    wire = Wire(make_broker(props={"delete.topic.enable": "false"}).port)
    create(wire, topic("keep"))
    body = DeleteTopicsRequest(topic_names=["keep"], timeout_ms=1)
    assert wire.request(ApiKey.DELETE_TOPICS, 1, body).responses[0].error_code == 73


def grow(wire, name, count, assignments=None, validate_only=False):
    body = CreatePartitionsRequest(
        topics=[
            CreatePartitionsRequest.CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=None
                if assignments is None
                else [
                    CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=a)
                    for a in assignments
                ],
            )
        ],
        timeout_ms=1000,
        validate_only=validate_only,
    )
    return wire.request(ApiKey.CREATE_PARTITIONS, 1, body).results[0].error_code


@pytest.mark.spec("BROKER-35")
def test_create_partitions(wire):
    create(wire, topic("g", 2))
    assert grow(wire, "g", 2) == ErrorCode.INVALID_PARTITIONS
    assert grow(wire, "g", 1) == ErrorCode.INVALID_PARTITIONS
    assert grow(wire, "nope", 3) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert grow(wire, "g", 4, assignments=[[0]]) == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert grow(wire, "g", 4, validate_only=True) == 0 and partitions_of(wire, "g") == 2
    assert grow(wire, "g", 4, assignments=[[0], [0]]) == 0
    assert partitions_of(wire, "g") == 4
    assert wire.produce("g", 3, batch(1)).error_code == 0


def describe(wire, resource_type, name, keys=None, synonyms=False, version=2):
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=keys
            )
        ],
        include_synonyms=synonyms,
    )
    return wire.request(ApiKey.DESCRIBE_CONFIGS, version, body).results[0]


@pytest.mark.spec("BROKER-37")
def test_describe_topic_configs(make_broker):
    from kafka_ref.config import TOPIC_CONFIGS

    wire = Wire(make_broker(props={"log.retention.ms": 1000}).port)
    create(wire, topic("c", configs={"cleanup.policy": "compact", "segment.bytes": "1048576"}))
    for version in (1, 2):
        result = describe(wire, 2, "c", synonyms=True, version=version)
        assert result.error_code == 0
        configs = {c.name: c for c in result.configs}
        assert set(configs) == set(TOPIC_CONFIGS)

        def value_and_source(name, configs=configs):
            return configs[name].value, configs[name].config_source

        assert value_and_source("cleanup.policy") == ("compact", 1)
        assert configs["segment.bytes"].value == "1048576"
        assert value_and_source("retention.ms") == ("1000", 4)
        assert value_and_source("max.message.bytes") == ("1048588", 5)
        assert configs["preallocate"].value == "false" and not configs["preallocate"].read_only
        chain = [(s.name, s.value, s.source) for s in configs["retention.ms"].synonyms]
        assert chain == [  # the synonym log.retention.hours has a default too, as in Kafka
            ("log.retention.ms", "1000", 4),
            ("log.retention.ms", "604800000", 5),
            ("log.retention.hours", "168", 5),
        ]
    only = describe(wire, 2, "c", keys=["segment.bytes"])
    assert [c.name for c in only.configs] == ["segment.bytes"] and only.configs[0].synonyms == []
    assert describe(wire, 2, "missing").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.spec("BROKER-38")
def test_describe_broker_configs(make_broker):
    broker = make_broker(props={"num.partitions": 3, "broker.id": 2})
    wire = Wire(broker.port)
    result = describe(wire, 4, "2")
    configs = {c.name: c for c in result.configs}
    assert (configs["num.partitions"].value, configs["num.partitions"].config_source) == ("3", 4)
    segment = configs["log.segment.bytes"]
    assert (segment.value, segment.config_source) == ("1073741824", 5)
    assert configs["auto.create.topics.enable"].value == "true"
    dynamic = {c.name for c in result.configs if not c.read_only}  # CONFIG-5's keys only
    assert dynamic == KAFKA_DYNAMIC_CONFIGS & {c.name for c in result.configs}
    assert "num.partitions" not in dynamic and "listeners" in dynamic
    assert describe(wire, 4, "9").error_code == ErrorCode.INVALID_REQUEST
    assert describe(wire, 3, "x").error_code == ErrorCode.INVALID_REQUEST

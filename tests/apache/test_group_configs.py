"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on a GROUP resource, the same on
Apache Kafka 4.4 and on kafka-ref (CONFIG-11, CONFIG-12, CONFIG-13).

One Apache Kafka 4.4 node and one kafka-ref broker, both with
`group.share.record.lock.duration.ms=20000` in their configs, get the same script over the
wire: describe a group's configs with synonyms, set some, set values Kafka refuses (an
unknown key, a value below a key's floor, outside the broker's bounds, of the wrong type,
not one of the choices, a session not above the heartbeat), replace a group's set with
AlterConfigs, delete a key, and describe again; then a consumer group with a config joins,
leaves and is deleted, and keeps its config (CONFIG-13). Every answer is compared: per config its
value, source, type, read-only and sensitive flags and synonyms; per change its error code
and message. Kafka 4.4 lists keys kafka-ref does not have (the streams groups', the
assignment intervals, the dead-letter queue's, ...: CONFIG-11); the comparison keeps
kafka-ref's keys, and the script sets only those.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.group.group_configs import GROUP_CONFIGS, GROUP_RESOURCE
from kafka_ref.protocol.messages import (
    AlterConfigsRequest,
    ApiKey,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
)
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig

pytestmark = pytest.mark.timeout(300)
CONFIGS = {"group.share.record.lock.duration.ms": 20000}
SET, DELETE = 0, 1
CHANGES = [  # (group, [(key, value, operation)]), one IncrementalAlterConfigs each
    ("g", [("share.auto.offset.reset", "earliest", SET)]),
    (
        "g",
        [
            ("consumer.session.timeout.ms", "50000", SET),
            ("share.isolation.level", "read_committed", SET),
        ],
    ),
    ("g", [("no.such.config", "1", SET)]),
    ("g", [("share.record.lock.duration.ms", "999", SET)]),
    ("g", [("share.delivery.count.limit", "3", SET)]),
    ("g", [("share.delivery.count.limit", "1", SET)]),
    ("g", [("share.delivery.count.limit", "11", SET)]),
    ("g", [("share.partition.max.record.locks", "99", SET)]),
    ("g", [("share.partition.max.record.locks", "4001", SET)]),
    ("g", [("share.partition.max.record.locks", "150", SET)]),
    ("g", [("share.record.lock.duration.ms", "90000", SET)]),
    ("g", [("share.heartbeat.interval.ms", "4000", SET)]),
    ("g", [("consumer.heartbeat.interval.ms", "soon", SET)]),
    ("g", [("share.isolation.level", "READ_COMMITTED", SET)]),
    ("g", [("share.auto.offset.reset", "by_duration:PT1H", SET)]),
    ("g", [("share.auto.offset.reset", "by_duration:-PT1H", SET)]),
    ("g", [("share.auto.offset.reset", "soonest", SET)]),
    (
        "h",
        [("share.session.timeout.ms", "60000", SET), ("share.heartbeat.interval.ms", "15000", SET)],
    ),
    ("g", [("share.isolation.level", None, DELETE)]),
]


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1, configs=CONFIGS) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path_factory.mktemp("kr")),
        **{k: str(v) for k, v in CONFIGS.items()},
    }
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


def described(wire: Wire, *groups: str) -> list:
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=GROUP_RESOURCE, resource_name=g, configuration_keys=None
            )
            for g in groups
        ],
        include_synonyms=True,
    )
    out = []
    for result in wire.request(ApiKey.DESCRIBE_CONFIGS, 4, body).results:
        configs = sorted(
            (
                c.name,
                c.value,
                c.config_source,
                c.config_type,
                c.read_only,
                c.is_sensitive,
                [(s.name, s.value, s.source) for s in c.synonyms],
            )
            for c in result.configs
            if c.name in GROUP_CONFIGS
        )
        # Kafka answers a success's message as "", kafka-ref as null, for every resource type
        message = result.error_message or None
        out.append((result.resource_name, result.error_code, message, configs))
    return out


def script(port: int) -> list:
    answers = []
    with Wire("127.0.0.1", port) as wire:
        answers.append(("describe", described(wire, "g", "")))
        for group, changes in CHANGES:
            body = IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource(
                        resource_type=GROUP_RESOURCE,
                        resource_name=group,
                        configs=[
                            IncrementalAlterConfigsRequest.AlterableConfig(
                                name=k, config_operation=op, value=v
                            )
                            for k, v, op in changes
                        ],
                    )
                ],
                validate_only=False,
            )
            [r] = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
            answers.append((group, changes, r.error_code, r.error_message))
        body = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=GROUP_RESOURCE,
                    resource_name="h",
                    configs=[
                        AlterConfigsRequest.AlterableConfig(
                            name="share.record.lock.duration.ms", value="16000"
                        )
                    ],
                )
            ],
            validate_only=False,
        )
        [r] = wire.request(ApiKey.ALTER_CONFIGS, 2, body).responses
        answers.append(("legacy", r.error_code, r.error_message))
        answers.append(("describe", described(wire, "g", "h")))
        answers.append(("deleted", deleted_group_keeps(wire)))
    return answers


def deleted_group_keeps(wire: Wire) -> list:
    """A consumer group with a config joins, leaves and is deleted: its config stays."""
    group = "doomed"
    body = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name=group,
                configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(
                        name="consumer.heartbeat.interval.ms", config_operation=SET, value="7000"
                    )
                ],
            )
        ],
        validate_only=False,
    )
    wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)

    def heartbeat(member: str, epoch: int):
        body = ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["anything"] if epoch == 0 else None,
            topic_partitions=[] if epoch == 0 else None,
        )
        return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)

    deadline = time.monotonic() + 60
    find = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])  # makes the offsets topic
    while wire.request(ApiKey.FIND_COORDINATOR, 4, find).coordinators[0].error_code != 0:
        assert time.monotonic() < deadline, "no coordinator"
        time.sleep(0.2)
    while (joined := heartbeat(uuid.uuid4().hex, 0)).error_code != 0:  # coordinator loading
        assert time.monotonic() < deadline, joined
        time.sleep(0.2)
    left = heartbeat(joined.member_id, -1)
    deletion = DeleteGroupsRequest(groups_names=[group])
    result = wire.request(ApiKey.DELETE_GROUPS, 2, deletion).results[0]
    return [
        joined.heartbeat_interval_ms,
        left.error_code,
        result.error_code,
        described(wire, group),
    ]


@pytest.mark.spec("CONFIG-11", "CONFIG-12", "CONFIG-13")
def test_group_configs_are_answered_as_kafka_4_4_answers(kafka, kafka_ref):
    theirs = script(kafka.nodes[0].port)
    ours = script(kafka_ref.port)
    for mine, kafkas in zip(ours, theirs, strict=True):
        print("kafka-ref:", mine)
        print("Kafka:    ", kafkas)
    assert ours == theirs

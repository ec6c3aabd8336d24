"""Authorized operations (Metadata v8+, DescribeTopicPartitions) and lookups by topic id,
computed from the ACLs for the SASL user alice (BROKER-62, BROKER-63, BROKER-64)."""

from __future__ import annotations

import pytest

from kafka_ref.client.admin import NewTopic
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, DescribeTopicPartitionsRequest, MetadataRequest
from kafka_ref.security.acls import AclBindingFilter, AclOperation, ResourceType
from tests.unit.security.authz_fixtures import acl, admin_of, ports, start_acl_broker, user_wire

Op, Res = AclOperation, ResourceType
TOPICS = ["ops-read", "ops-hidden"]
NOT_ASKED = -2147483648


def bits(*operations: AclOperation) -> int:
    return sum(1 << op for op in operations)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = start_acl_broker(tmp_path_factory.mktemp("ops") / "data")
    with admin_of(broker) as admin:
        admin.create_topics([NewTopic(t, 2, 1) for t in TOPICS])
    yield broker
    broker.stop()


@pytest.fixture
def admin(broker):
    with admin_of(broker) as admin:
        yield admin
        admin.delete_acls([AclBindingFilter()])


@pytest.fixture
def root(broker):
    """A connection on the PLAINTEXT listener, whose principal is a super user."""
    with Wire("127.0.0.1", ports(broker)["PLAINTEXT"]) as wire:
        yield wire


@pytest.fixture
def alice(broker):
    wire = user_wire(broker)
    yield wire
    wire.close()


def metadata(wire, version: int, topics: list, **asked) -> object:
    body = MetadataRequest(topics=topics, allow_auto_topic_creation=False, **asked)
    return wire.request(ApiKey.METADATA, version, body)


def named(*names: str) -> list:
    return [MetadataRequest.MetadataRequestTopic(name=n) for n in names]


@pytest.mark.spec("BROKER-62")
def test_metadata_v8_answers_the_operations_the_acls_allow(admin, alice, root):
    admin.create_acls(
        [
            acl(Res.TOPIC, "ops-read", Op.READ),
            acl(Res.TOPIC, "ops-read", Op.ALTER_CONFIGS),
            acl(Res.CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),
        ]
    )
    asked = {"include_topic_authorized_operations": True}
    answer = metadata(alice, 8, named("ops-read", "ops-hidden"), **asked)
    read, hidden = answer.topics
    # READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS (SEC-13)
    assert read.topic_authorized_operations == bits(
        Op.READ, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS
    )
    assert hidden.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert hidden.topic_authorized_operations == NOT_ASKED  # refused: none given
    assert answer.cluster_authorized_operations == NOT_ASKED  # not asked for
    cluster = {"include_cluster_authorized_operations": True}
    assert metadata(alice, 8, [], **cluster).cluster_authorized_operations == 0  # no DESCRIBE
    admin.create_acls([acl(Res.CLUSTER, "kafka-cluster", Op.DESCRIBE)])
    answer = metadata(alice, 10, [], **cluster)
    assert answer.cluster_authorized_operations == bits(Op.IDEMPOTENT_WRITE, Op.DESCRIBE)
    assert metadata(alice, 11, [], **cluster).cluster_authorized_operations == NOT_ASKED  # v11+
    # the super user may do every operation of the resource type
    every_topic_op = bits(
        *(Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE),
        *(Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    )
    (topic,) = metadata(root, 9, named("ops-hidden"), **asked).topics
    assert topic.topic_authorized_operations == every_topic_op


@pytest.mark.spec("BROKER-63")
def test_a_topic_asked_by_id_is_refused_by_id_without_its_name(admin, alice, root):
    ids = {t.name: t.topic_id for t in metadata(root, 10, named(*TOPICS)).topics}
    admin.create_acls([acl(Res.TOPIC, "ops-read", Op.DESCRIBE)])
    by_id = [MetadataRequest.MetadataRequestTopic(topic_id=ids[t], name=None) for t in TOPICS]
    seen, refused = metadata(alice, 12, by_id).topics
    assert (seen.error_code, seen.name, seen.topic_id) == (0, "ops-read", ids["ops-read"])
    assert (refused.error_code, refused.name, refused.topic_id) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        None,
        ids["ops-hidden"],
    )


@pytest.mark.spec("BROKER-64")
def test_describe_topic_partitions_hides_or_refuses_what_may_not_be_described(admin, alice):
    admin.create_acls([acl(Res.TOPIC, "ops-read", Op.DESCRIBE)])
    request = DescribeTopicPartitionsRequest

    def describe(*names: str) -> list:
        body = request(topics=[request.TopicRequest(name=n) for n in names])
        answer = alice.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body).topics
        return [
            (t.name, t.error_code, len(t.partitions), t.topic_authorized_operations) for t in answer
        ]

    described = ("ops-read", 0, 2, bits(Op.DESCRIBE))
    # named: the refused topic last, without partitions or operations
    assert describe("ops-hidden", "ops-read") == [
        described,
        ("ops-hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0, NOT_ASKED),
    ]
    assert describe() == [described]  # every topic: the hidden one left out

"""The newer versions of the admin APIs, over the wire: what each version adds.

Each test asks for the versions it speaks (`target.require_versions`): a broker that stops
below them is skipped, not failed. The same tests run against Apache Kafka 4.4
(`--target bootstrap=HOST:PORT` with `kafka-ref reference-kafka`), which serves them all.
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_ref.errors import ErrorCode as E
from kafka_ref.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ApiKey,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
)

CT, DT, IAC = CreateTopicsRequest, DeleteTopicsRequest, IncrementalAlterConfigsRequest
ZERO = uuid.UUID(int=0)
TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG = 1
CLUSTER_OPERATIONS = 8096  # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS
#                            IDEMPOTENT_WRITE: every one, without an authorizer


@pytest.fixture
def admin(target):
    target.require("create-topics")
    return target


def create(wire, name: str, version: int, partitions: int = 2, **configs: str):
    body = CT(
        topics=[
            CT.CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=[],
                configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        timeout_ms=10000,
        validate_only=False,
    )
    return wire.request(ApiKey.CREATE_TOPICS, version, body).topics[0]


def delete(wire, version: int, *topics: tuple[str | None, uuid.UUID]) -> dict:
    body = DT(topics=[DT.DeleteTopicState(name=n, topic_id=i) for n, i in topics], timeout_ms=10000)
    answer = wire.request(ApiKey.DELETE_TOPICS, version, body).responses
    return {(r.name, r.topic_id): (r.error_code, r.error_message) for r in answer}


def alter_broker(wire, name: str, *configs: tuple[str, int, str | None], validate: bool = False):
    body = IAC(
        resources=[
            IAC.AlterConfigsResource(
                resource_type=BROKER,
                resource_name=name,
                configs=[
                    IAC.AlterableConfig(name=k, config_operation=op, value=v)
                    for k, op, v in configs
                ],
            )
        ],
        validate_only=validate,
    )
    answer = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0]
    return answer.error_code, answer.error_message


def broker_id(wire) -> int:
    return wire.metadata([]).brokers[0].node_id


def describe_acls(wire, version: int, resource_type: int = 1):
    ANY = 1
    body = DescribeAclsRequest(
        resource_type_filter=resource_type,
        resource_name_filter=None,
        pattern_type_filter=ANY,
        principal_filter=None,
        host_filter=None,
        operation=ANY,
        permission_type=ANY,
    )
    return wire.request(ApiKey.DESCRIBE_ACLS, version, body)


def require_no_authorizer(wire) -> None:
    """Skip unless the target runs without an authorizer (the suite's shared brokers)."""
    if describe_acls(wire, 1).error_code != E.SECURITY_DISABLED:
        pytest.skip("the target has an authorizer")


# -- CreateTopics ------------------------------------------------------------------------
@pytest.mark.spec("BROKER-73")
def test_v7_describes_the_created_topic_and_names_its_id(admin, wire):
    admin.require_versions((ApiKey.CREATE_TOPICS, 7))
    created = create(wire, admin.topic_name("v7"), 7, 3, **{"retention.ms": "123456"})
    assert created.error_code == 0 and created.topic_id != ZERO
    assert (created.num_partitions, created.replication_factor) == (3, 1)
    assert created.topic_config_error_code == 0
    names = [c.name for c in created.configs]
    assert names == sorted(names) and {"cleanup.policy", "segment.bytes"} <= set(names)
    retention = next(c for c in created.configs if c.name == "retention.ms")
    assert (retention.value, retention.config_source) == ("123456", DYNAMIC_TOPIC_CONFIG)
    again = create(wire, created.name, 7)
    assert again.error_code == E.TOPIC_ALREADY_EXISTS
    assert (again.topic_id, again.num_partitions, again.replication_factor) == (ZERO, -1, -1)
    assert again.configs == []


# -- DeleteTopics ------------------------------------------------------------------------
@pytest.mark.spec("BROKER-74")
def test_v6_deletes_by_topic_id(admin, wire):
    admin.require_versions((ApiKey.CREATE_TOPICS, 7), (ApiKey.DELETE_TOPICS, 6))
    name = admin.topic_name("by-id")
    topic_id = create(wire, name, 7).topic_id
    assert delete(wire, 6, (None, topic_id)) == {(name, topic_id): (0, None)}
    assert delete(wire, 6, (None, topic_id)) == {
        (None, topic_id): (E.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
    }


@pytest.mark.spec("BROKER-74")
def test_v6_refuses_neither_both_and_duplicates(admin, wire):
    admin.require_versions((ApiKey.DELETE_TOPICS, 6))
    some_id, missing = uuid.uuid4(), admin.topic_name("missing")
    answers = delete(wire, 6, (None, ZERO), ("x", some_id), (missing, ZERO), (missing, ZERO))
    assert answers == {
        (None, ZERO): (E.INVALID_REQUEST, "Neither topic name nor id were specified."),
        ("x", some_id): (E.INVALID_REQUEST, "You may not specify both topic name and topic id."),
        (missing, ZERO): (E.INVALID_REQUEST, "Duplicate topic name."),
    }
    unknown = "This server does not host this topic-partition."
    assert delete(wire, 6, (missing, ZERO)) == {
        (missing, ZERO): (E.UNKNOWN_TOPIC_OR_PARTITION, unknown)
    }


# -- DescribeConfigs ---------------------------------------------------------------------
@pytest.mark.spec("BROKER-75")
def test_v3_says_each_configs_type_and_its_documentation_when_asked(admin, wire):
    admin.require_versions((ApiKey.DESCRIBE_CONFIGS, 4))
    name = admin.topic_name("doc")
    assert create(wire, name, 4).error_code == 0
    keys = ["retention.ms", "cleanup.policy", "segment.bytes", "preallocate"]

    def describe(version: int, documentation: bool) -> dict:
        body = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=TOPIC, resource_name=name, configuration_keys=keys
                )
            ],
            include_synonyms=False,
            include_documentation=documentation,
        )
        answer = wire.request(ApiKey.DESCRIBE_CONFIGS, version, body).results[0]
        return {c.name: c for c in answer.configs}

    typed = describe(4, True)
    # Kafka's ConfigType: BOOLEAN 1, INT 3, LONG 5, LIST 7
    assert {k: c.config_type for k, c in typed.items()} == {
        "retention.ms": 5,
        "cleanup.policy": 7,
        "segment.bytes": 3,
        "preallocate": 1,
    }
    assert all(c.documentation for c in typed.values())
    assert all(c.documentation is None for c in describe(3, False).values())


# -- DescribeLogDirs ---------------------------------------------------------------------
@pytest.mark.spec("BROKER-76", "CONFIG-9")
def test_v5_says_which_log_dirs_are_cordoned(admin, wire):
    admin.require_versions((ApiKey.DESCRIBE_LOG_DIRS, 5))
    admin.require_versions((ApiKey.INCREMENTAL_ALTER_CONFIGS, 1))
    me = str(broker_id(wire))

    def cordoned() -> list[bool]:
        answer = wire.request(ApiKey.DESCRIBE_LOG_DIRS, 5, DescribeLogDirsRequest(topics=[]))
        return [r.is_cordoned for r in answer.results]

    assert not any(cordoned())
    assert alter_broker(wire, "", ("cordoned.log.dirs", 0, "*")) == (
        E.INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "[cordoned.log.dirs]",
    )
    assert alter_broker(wire, me, ("cordoned.log.dirs", 0, "*")) == (0, None)
    try:
        time.sleep(1)  # Kafka applies it through its metadata log
        assert all(cordoned())
    finally:
        assert alter_broker(wire, me, ("cordoned.log.dirs", 1, None)) == (0, None)


# -- IncrementalAlterConfigs on a broker -------------------------------------------------
@pytest.mark.spec("CONFIG-5", "CONFIG-9")
def test_broker_configs_are_refused_and_accepted_in_kafkas_words(admin, wire):
    admin.require_versions((ApiKey.INCREMENTAL_ALTER_CONFIGS, 1))
    me = str(broker_id(wire))
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
    assert alter_broker(wire, me, ("num.partitions", 0, "3"), validate=True) == (
        E.INVALID_REQUEST,
        "Cannot update these configs dynamically: [num.partitions]",
    )
    assert alter_broker(wire, me, ("ssl.keystore.location", 0, "/k.pem"), validate=True) == (
        E.INVALID_REQUEST,
        "These security configs can be dynamically updated only per-listener using the "
        "listener prefix: [ssl.keystore.location]",
    )
    for key, value in [
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
        ("listener.name.ssl.ssl.keystore.location", "/k.pem"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("background.threads", "12"),  # within twice or half its 10 (DynamicThreadPool)
    ]:
        assert alter_broker(wire, me, (key, 0, value), validate=True) == (0, None), key
    assert alter_broker(wire, "", ("sasl.jaas.config", 0, jaas), validate=True) == (
        E.INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "[sasl.jaas.config]",
    )


# -- DescribeCluster ---------------------------------------------------------------------
@pytest.mark.spec("BROKER-50")
def test_a_broker_describes_brokers_only(target, wire):
    target.require_versions((ApiKey.DESCRIBE_CLUSTER, 2))

    def describe(endpoint_type: int, fenced: bool = False):
        body = DescribeClusterRequest(
            include_cluster_authorized_operations=False,
            endpoint_type=endpoint_type,
            include_fenced_brokers=fenced,
        )
        return wire.request(ApiKey.DESCRIBE_CLUSTER, 2, body)

    brokers = describe(1, fenced=True)
    assert brokers.error_code == 0 and brokers.brokers
    assert not any(b.is_fenced for b in brokers.brokers)
    controllers = describe(2)
    assert (controllers.error_code, controllers.error_message) == (
        E.MISMATCHED_ENDPOINT_TYPE,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
        "type CONTROLLER",
    )
    other = describe(3)
    assert (other.error_code, other.error_message) == (
        E.UNSUPPORTED_ENDPOINT_TYPE,
        "Unsupported endpoint type 3",
    )


@pytest.mark.spec("SEC-26")
def test_the_clusters_authorized_operations_when_asked(target, wire):
    target.require_versions((ApiKey.DESCRIBE_CLUSTER, 0))
    require_no_authorizer(wire)

    def operations(asked: bool) -> int:
        body = DescribeClusterRequest(include_cluster_authorized_operations=asked)
        return wire.request(ApiKey.DESCRIBE_CLUSTER, 0, body).cluster_authorized_operations

    assert operations(False) == -(2**31)
    assert operations(True) == CLUSTER_OPERATIONS


# -- ACLs --------------------------------------------------------------------------------
@pytest.mark.spec("SEC-27")
def test_acl_requests_without_an_authorizer_are_security_disabled(target, wire):
    target.require_versions((ApiKey.DESCRIBE_ACLS, 3))
    require_no_authorizer(wire)
    USER = 7  # v3's resource type, a filter like any other
    for version, resource_type in ((1, 1), (2, 1), (3, USER)):
        answer = describe_acls(wire, version, resource_type)
        assert (answer.error_code, answer.error_message) == (
            E.SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
        )


# -- AlterPartitionReassignments ---------------------------------------------------------
@pytest.mark.spec("CTRL-33")
def test_v1_echoes_whether_a_replication_factor_may_change(admin, wire):
    admin.require_versions((ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1))
    name = admin.topic_name("rf")
    assert create(wire, name, 4, 1).error_code == 0
    R = AlterPartitionReassignmentsRequest
    me = broker_id(wire)
    for allow in (False, True):
        body = R(
            timeout_ms=10000,
            allow_replication_factor_change=allow,
            topics=[
                R.ReassignableTopic(
                    name=name,
                    partitions=[R.ReassignablePartition(partition_index=0, replicas=[me])],
                )
            ],
        )
        answer = wire.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, body)
        assert answer.allow_replication_factor_change is allow
        assert [p.error_code for t in answer.responses for p in t.partitions] == [0]

"""The same administration sent to an Apache Kafka 4.4 broker and to a kafka-ref KRaft broker,
each a combined node alone in its cluster, neither with an authorizer: the answers agree.

Each request goes through the broker, which answers it itself or forwards it to its active
controller (KBROKER-18, KCTRL-19): a broker config for itself and for another broker, a
config of a topic that does not exist, ACLs without an authorizer, a client quota with an
unknown key, the list of reassignments, a preferred election of an unknown partition.
"""

from __future__ import annotations

import os

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import (
    AlterClientQuotasRequest,
    ApiKey,
    CreateAclsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)
from kafka_ref.tools.cluster import KRaftNodeProcess
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(240)

TOPIC, BROKER = 2, 4


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    """(Kafka's broker port, kafka-ref's broker port): both node 1 of their cluster."""
    base = tmp_path_factory.mktemp("kraft-forwarding")
    ours = KRaftNodeProcess(1, os.path.join(base, "node-1"), new_cluster_id(), {1: free_port()})
    with ApacheKafka(1) as kafka:
        ours.start(timeout=60)
        try:
            yield kafka.nodes[0].port, ours.port
        finally:
            ours.stop()


def incremental_alter_configs(resources: list[tuple[int, str, str, str]]) -> object:
    request = IncrementalAlterConfigsRequest
    return request(
        resources=[
            request.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=[request.AlterableConfig(name=key, config_operation=0, value=value)],
            )
            for kind, name, key, value in resources
        ],
        validate_only=False,
    )


def answers(port: int) -> dict[str, object]:
    """What the broker on `port` answers to each request, its messages included where
    Kafka's words are part of the contract."""
    found: dict[str, object] = {}
    with Wire("127.0.0.1", port) as wire:
        configs = wire.request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            incremental_alter_configs(
                [
                    (BROKER, "1", "log.cleaner.backoff.ms", "15001"),
                    (BROKER, "2", "log.cleaner.backoff.ms", "15001"),
                    (TOPIC, "no-such-topic", "retention.ms", "1000"),
                ]
            ),
        )
        found["configs"] = [
            (r.resource_name, r.error_code, r.error_message) for r in configs.responses
        ]
        creation = CreateAclsRequest.AclCreation(
            resource_type=2,
            resource_name="t",
            resource_pattern_type=3,
            principal="User:alice",
            host="*",
            operation=3,
            permission_type=3,
        )
        acls = wire.request(ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=[creation]))
        found["acls"] = [r.error_code for r in acls.results]
        quota = AlterClientQuotasRequest
        quotas = wire.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            1,
            quota(
                entries=[
                    quota.EntryData(
                        entity=[quota.EntityData(entity_type="user", entity_name="alice")],
                        ops=[quota.OpData(key="no_such_quota", value=1.0, remove=False)],
                    )
                ],
                validate_only=False,
            ),
        )
        found["quotas"] = [e.error_code for e in quotas.entries]
        listed = wire.request(
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            0,
            ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None),
        )
        found["reassignments"] = (listed.error_code, list(listed.topics))
        elect = ElectLeadersRequest
        elected = wire.request(
            ApiKey.ELECT_LEADERS,
            2,
            elect(
                election_type=0,
                topic_partitions=[elect.TopicPartitions(topic="no-such-topic", partitions=[0])],
                timeout_ms=5000,
            ),
        )
        found["election"] = (
            elected.error_code,
            [
                (r.topic, p.partition_id, p.error_code, p.error_message)
                for r in elected.replica_election_results
                for p in r.partition_result
            ],
        )
    return found


@pytest.mark.spec("KBROKER-18", "KCTRL-19")
def test_kafka_ref_answers_the_forwarded_administration_as_kafka_does(brokers):
    kafka, ours = brokers
    theirs, mine = answers(kafka), answers(ours)
    assert mine == theirs
    assert theirs["configs"][1][2] == "Unexpected broker id, expected 1, but received 2"

"""A KRaft cluster's administration through its brokers, with real clients: three combined
nodes (`process.roles=broker,controller`) as processes, ACLs on (`super.users` the
PLAINTEXT clients' ANONYMOUS, nobody else allowed without an ACL), and a SASL_PLAINTEXT
listener with SCRAM-SHA-256 on each broker.

Every change is sent to one broker, which forwards it to the active controller in an
Envelope (KBROKER-18); the controller writes its records (KCTRL-19); and every broker,
asked directly, answers from its own image (KBROKER-19): a topic config and a cluster
default, ACLs and a SCRAM user that let a client log in and write on another broker, client
quotas, a reassignment and a preferred leader election. A controller failover in between
keeps them all.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from confluent_kafka import ElectionType, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as PythonNewTopic

from kafka_ref.client.admin import Admin
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.errors import KafkaError as KafkaRefError
from kafka_ref.protocol.messages import (
    ApiKey,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)
from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.tools.cluster import KRaftNodeProcess, _stop_together
from kafka_ref.tools.metadata_quorum import describe
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(300)

WAIT_S = 60.0
ALICE = ("alice", "alice-secret")
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


class Nodes:
    """Nodes 1..3 and what each broker answers when asked alone."""

    def __init__(self, base: str) -> None:
        cluster_id = new_cluster_id()
        voters = {i: free_port() for i in (1, 2, 3)}
        self.sasl_ports = {i: free_port() for i in voters}
        self.nodes: dict[int, KRaftNodeProcess] = {}
        for i in voters:
            port = free_port()
            configs = {
                "listeners": (
                    f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:"
                    f"{self.sasl_ports[i]},CONTROLLER://127.0.0.1:{voters[i]}"
                ),
                "listener.security.protocol.map": (
                    "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
                ),
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "allow.everyone.if.no.acl.found": "false",
                "super.users": "User:ANONYMOUS",
                "broker.heartbeat.interval.ms": 500,
                "broker.session.timeout.ms": 3000,
                "offsets.topic.num.partitions": 3,
            }
            self.nodes[i] = KRaftNodeProcess(
                i, os.path.join(base, f"node-{i}"), cluster_id, voters, port=port, configs=configs
            )

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values() if n.alive)

    def admin(self, via: int) -> AdminClient:
        """A confluent-kafka admin client that knows one broker to start with."""
        return AdminClient({"bootstrap.servers": self.nodes[via].bootstrap})

    def ask(self, broker: int, api_key: int, version: int, body) -> object:
        """One request to one broker: what its own image says."""
        with Wire("127.0.0.1", self.nodes[broker].port) as wire:
            return wire.request(api_key, version, body)

    def configs(self, broker: int, resource_type: int, name: str) -> dict[str, tuple[str, int]]:
        """(value, config source) of each config of the resource, asked of `broker`."""
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=resource_type, resource_name=name, configuration_keys=None
        )
        answer = self.ask(
            broker, ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=[resource])
        )
        [result] = answer.results
        assert result.error_code == 0, result
        return {c.name: (c.value, c.config_source) for c in result.configs}

    def replicas(self, broker: int, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
        """(leader, replicas) of each partition of `topic`, asked of `broker`."""
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
        [found] = self.ask(broker, ApiKey.METADATA, 9, body).topics
        return {p.partition_index: (p.leader_id, tuple(p.replica_nodes)) for p in found.partitions}

    def isr(self, broker: int, topic: str) -> tuple[int, ...]:
        """The ISR of partition 0 of `topic`, asked of `broker`."""
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
        [found] = self.ask(broker, ApiKey.METADATA, 9, body).topics
        return tuple(next(p for p in found.partitions if p.partition_index == 0).isr_nodes)

    def active_controller(self) -> int:
        for node in self.nodes.values():
            if node.alive:
                _, (partition, _) = describe(f"127.0.0.1:{node.controller_port}")
                return partition.leader_id
        raise AssertionError("no node is alive")

    def fail_over(self) -> int:
        """Stop the active controller's node and start it again: another node leads the
        quorum meanwhile, and answers from the records its predecessor committed."""
        leader = self.active_controller()
        self.nodes[leader].stop(signal.SIGTERM)
        wait_for(lambda: self.active_controller() not in (leader, -1), "a new active controller")
        self.nodes[leader].start(timeout=WAIT_S)
        return leader


def wait_for(condition, what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (OSError, AssertionError, KafkaException, KafkaRefError):
            pass  # a node restarting, an answer not yet there
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def on_every_broker(nodes: Nodes, condition, what: str) -> None:
    for broker in nodes.nodes:
        wait_for(lambda b=broker: condition(b), f"{what} on broker {broker}")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    started = Nodes(str(tmp_path_factory.mktemp("kraft-admin")))
    try:
        for node in started.nodes.values():
            node.launch()
        for node in started.nodes.values():
            node.wait_listening(timeout=WAIT_S)
        yield started
    finally:
        _stop_together(list(started.nodes.values()))


@pytest.mark.spec("KBROKER-18", "KCTRL-19")
def test_a_topic_config_and_a_cluster_default_reach_every_broker(nodes):
    admin = nodes.admin(1)
    admin.create_topics([NewTopic("configured", 1, 3)])["configured"].result(30)
    topic = ConfigResource(ResourceType.TOPIC, "configured")
    topic.add_incremental_config(
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    )
    admin.incremental_alter_configs([topic])[topic].result(30)
    # the cluster default (a broker resource named ""), which librdkafka cannot name
    assert alter_broker_configs(nodes, via=2, named=("",), value="12345") == [
        ("", ErrorCode.NO_ERROR, None)
    ]
    dynamic_topic, dynamic_broker, dynamic_default = 1, 2, 3  # DescribeConfigs' sources
    on_every_broker(
        nodes,
        lambda b: (
            nodes.configs(b, TOPIC_RESOURCE, "configured")["retention.ms"]
            == ("3600000", dynamic_topic)
        ),
        "the topic's retention.ms",
    )
    on_every_broker(
        nodes,
        lambda b: (
            nodes.configs(b, BROKER_RESOURCE, str(b))["log.cleaner.backoff.ms"]
            == ("12345", dynamic_default)
        ),
        "the cluster default",
    )
    # a broker config names the broker it is sent to: another's is refused there, and the
    # rest of the request still goes to the controller
    assert alter_broker_configs(nodes, via=1, named=("1", "2"), value="54321") == [
        ("1", ErrorCode.NO_ERROR, None),
        ("2", ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
    ]
    wait_for(
        lambda: (
            nodes.configs(1, BROKER_RESOURCE, "1")["log.cleaner.backoff.ms"]
            == ("54321", dynamic_broker)
        ),
        "broker 1's own config",
    )
    nodes.fail_over()
    on_every_broker(
        nodes,
        lambda b: nodes.configs(b, TOPIC_RESOURCE, "configured")["retention.ms"][0] == "3600000",
        "the topic's retention.ms after a failover",
    )


def alter_broker_configs(nodes: Nodes, via: int, named: tuple[str, ...], value: str) -> list[tuple]:
    """IncrementalAlterConfigs setting `log.cleaner.backoff.ms` for each broker resource
    named, sent to broker `via`: (name, error, message) of each resource."""
    request = IncrementalAlterConfigsRequest
    body = request(
        resources=[
            request.AlterConfigsResource(
                resource_type=BROKER_RESOURCE,
                resource_name=name,
                configs=[
                    request.AlterableConfig(
                        name="log.cleaner.backoff.ms", config_operation=0, value=value
                    )
                ],
            )
            for name in named
        ],
        validate_only=False,
    )
    answer = nodes.ask(via, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    return [(r.resource_name, r.error_code, r.error_message) for r in answer.responses]


def alice_produces(nodes: Nodes, broker: int, topic: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{nodes.sasl_ports[broker]}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": ALICE[0],
            "sasl.password": ALICE[1],
            "message.timeout.ms": 10000,
        }
    )
    errors = []
    producer.produce(topic, b"from alice", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(15)
    assert errors == [None], errors


@pytest.mark.spec("KBROKER-19", "KCTRL-20")
def test_a_scram_user_and_acls_made_through_two_brokers_count_on_the_third(nodes):
    admin1, admin2 = nodes.admin(1), nodes.admin(2)
    admin1.create_topics([NewTopic("alices", 1, 3), NewTopic("not-alices", 1, 3)])
    upsert = UserScramCredentialUpsertion(
        ALICE[0], ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), ALICE[1].encode()
    )
    for future in admin1.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    acls = [
        AclBinding(
            ResourceType.TOPIC,
            "alices",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for operation in (AclOperation.WRITE, AclOperation.DESCRIBE)
    ]
    for future in admin2.create_acls(acls).values():
        future.result(30)

    def described(broker: int) -> tuple[set[str], int]:
        users = nodes.ask(
            broker,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            DescribeUserScramCredentialsRequest(users=None),
        )
        acls = nodes.ask(
            broker,
            ApiKey.DESCRIBE_ACLS,
            3,
            DescribeAclsRequest(
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter="User:alice",
                host_filter=None,
                operation=1,
                permission_type=1,
            ),
        )
        return {r.user for r in users.results}, sum(len(r.acls) for r in acls.resources)

    on_every_broker(nodes, lambda b: described(b) == ({"alice"}, 2), "alice and her ACLs")
    alice_produces(nodes, 3, "alices")
    with pytest.raises(AssertionError, match="TOPIC_AUTHORIZATION_FAILED"):
        alice_produces(nodes, 3, "not-alices")
    # the controller authorizes what a broker forwards, as the client's principal
    alice_admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{nodes.sasl_ports[2]}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": ALICE[0],
            "sasl.password": ALICE[1],
        }
    )
    grant = AclBinding(
        ResourceType.TOPIC,
        "not-alices",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        alice_admin.create_acls([grant])[grant].result(30)
    nodes.fail_over()
    on_every_broker(nodes, lambda b: described(b) == ({"alice"}, 2), "alice after a failover")
    alice_produces(nodes, 1, "alices")
    removed = admin1.delete_acls(
        [
            AclBindingFilter(
                ResourceType.ANY,
                None,
                ResourcePatternType.ANY,
                "User:alice",
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    )
    assert len(next(iter(removed.values())).result(30)) == 2
    on_every_broker(nodes, lambda b: described(b) == ({"alice"}, 0), "the ACLs removed")


@pytest.mark.spec("KBROKER-19")
def test_client_quotas_set_through_one_broker_are_described_by_every_broker(nodes):
    with Admin(nodes.nodes[2].bootstrap) as admin:
        admin.alter_client_quotas(QuotaEntity("alice", None), {"producer_byte_rate": 2048})
        admin.alter_client_quotas(QuotaEntity(None, "<default>"), {"consumer_byte_rate": 4096})

    def quotas(broker: int) -> dict:
        answer = nodes.ask(
            broker,
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            1,
            DescribeClientQuotasRequest(components=[], strict=False),
        )
        assert answer.error_code == 0, answer
        return {
            tuple((e.entity_type, e.entity_name) for e in entry.entity): {
                v.key: v.value for v in entry.values
            }
            for entry in answer.entries
        }

    wanted = {
        (("user", "alice"),): {"producer_byte_rate": 2048.0},
        (("client-id", None),): {"consumer_byte_rate": 4096.0},
    }
    on_every_broker(nodes, lambda b: quotas(b) == wanted, "the quotas")


@pytest.mark.spec("KBROKER-18", "KCTRL-19")
def test_a_reassignment_and_a_preferred_election_through_a_broker(nodes):
    mover = KafkaAdminClient(bootstrap_servers=nodes.nodes[3].bootstrap)
    try:
        mover.create_topics(
            [
                PythonNewTopic("moving", replica_assignments={0: [1, 2]}),
                PythonNewTopic("preferred", replica_assignments={0: [2, 3, 1]}),
            ]
        )
        on_every_broker(nodes, lambda b: nodes.replicas(b, "moving") == {0: (1, (1, 2))}, "moving")
        mover.alter_partition_reassignments({TopicPartition("moving", 0): [3, 2]})
        on_every_broker(
            nodes,
            lambda b: nodes.replicas(b, "moving")[0][1] == (3, 2),
            "the partition moved to brokers 3 and 2",
        )
        wait_for(lambda: not mover.list_partition_reassignments(), "the reassignment done")
    finally:
        mover.close()
    assert nodes.replicas(1, "moving")[0][0] in (3, 2)
    # the preferred leader stops cleanly and comes back: its leadership moved meanwhile
    on_every_broker(nodes, lambda b: nodes.replicas(b, "preferred")[0][0] == 2, "2 leading")
    nodes.nodes[2].stop(signal.SIGTERM)
    nodes.nodes[2].start(timeout=WAIT_S)
    assert nodes.replicas(1, "preferred")[0][0] != 2

    # once broker 2 is back in the ISR, the preferred election makes it lead again
    wait_for(lambda: 2 in nodes.isr(1, "preferred"), "broker 2 back in the ISR")
    admin = nodes.admin(1)  # kept: a client destroyed drops its futures
    wanted = ConfluentPartition("preferred", 0)
    errors = admin.elect_leaders(ElectionType.PREFERRED, [wanted]).result(30)
    assert list(errors.values()) == [None]
    on_every_broker(nodes, lambda b: nodes.replicas(b, "preferred")[0][0] == 2, "2 leading again")

"""ApiVersions and Metadata over the wire (BROKER-6, BROKER-7, BROKER-10..BROKER-12)."""

from __future__ import annotations

import struct

import pytest

from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import ApiKey, ApiVersionsRequest, ApiVersionsResponse
from kafka_ref.server.handlers.metadata import live_brokers
from tests.unit.server.conftest import Wire, assert_all_apis_have_handlers

pytestmark = pytest.mark.timeout(60)

ADVERTISED = {
    0: (0, 12),
    1: (4, 18),
    2: (1, 11),
    3: (0, 13),
    4: (4, 4),  # LeaderAndIsr, StopReplica, UpdateMetadata: from the controller (CTRL-19)
    5: (3, 3),
    6: (6, 6),
    8: (2, 10),  # OffsetCommit: v6 leader epoch, v7 instance id, v10 topic ids (OFFSET-10..13)
    9: (1, 10),  # OffsetFetch; v7 require_stable (TXN-84), v8 groups (OFFSET-14)
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    17: (0, 1),  # SaslHandshake, SaslAuthenticate (SEC-6)
    18: (0, 5),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    22: (0, 5),  # InitProducerId: v3+ for the KIP-360 epoch bump (TXN-18)
    23: (2, 4),  # OffsetForLeaderEpoch: followers (REPL-7, TRUNC-4)
    24: (0, 5),  # AddPartitionsToTxn (v4+: brokers, TXN-23)
    25: (0, 4),  # AddOffsetsToTxn, EndTxn (TXN-12, TXN-13; EndTxn v5 is TV2, TXN-85)
    26: (0, 5),
    27: (1, 2),  # WriteTxnMarkers: the coordinator to partition leaders
    28: (0, 5),  # TxnOffsetCommit (TXN-16, TXN-83)
    29: (1, 3),  # DescribeAcls, CreateAcls, DeleteAcls (SEC-18)
    30: (1, 3),
    31: (1, 3),
    32: (1, 4),
    33: (0, 2),
    35: (1, 5),  # DescribeLogDirs (BROKER-52)
    36: (0, 2),
    37: (0, 3),
    42: (0, 3),  # DeleteGroups
    43: (0, 2),  # ElectLeaders (CTRL-27)
    44: (0, 1),
    45: (0, 1),  # AlterPartitionReassignments (CTRL-24)
    46: (0, 0),  # ListPartitionReassignments
    47: (0, 0),  # OffsetDelete (OFFSET-15)
    48: (0, 1),  # DescribeClientQuotas (QUOTA-9)
    49: (0, 1),  # AlterClientQuotas (QUOTA-10)
    50: (0, 0),  # DescribeUserScramCredentials, AlterUserScramCredentials (SEC-22)
    51: (0, 0),
    56: (0, 3),  # AlterPartition: v0 to the ZooKeeper controller (CTRL-22), v2-3 KRaft's
    60: (0, 2),  # DescribeCluster (BROKER-50)
    61: (0, 0),  # DescribeProducers, DescribeTransactions, ListTransactions (TXN-19)
    65: (0, 0),
    66: (0, 2),  # ListTransactions: v2 transactional id pattern (TXN-86)
    68: (0, 1),  # ConsumerGroupHeartbeat, ConsumerGroupDescribe: KIP-848 (CGRP-1)
    69: (0, 1),
    75: (0, 0),  # DescribeTopicPartitions (BROKER-64)
    78: (1, 2),  # ShareFetch, ShareAcknowledge: KIP-932 (SHARE-17)
    79: (1, 2),
    83: (0, 0),  # the share coordinator's state APIs, 83-87 (KIP-932, SHARE-79)
    84: (0, 0),
    85: (0, 1),
    86: (0, 0),
    87: (0, 1),
    76: (1, 1),  # ShareGroupHeartbeat, ShareGroupDescribe: KIP-932 (SHARE-40)
    77: (1, 1),
    90: (0, 1),  # Describe/Alter/DeleteShareGroupOffsets: KIP-932 (SHARE-49)
    91: (0, 0),
    92: (0, 0),
}


def api_versions(wire: Wire, version: int, name: str = "kafka-ref-test", ver: str = "1.0"):
    body = ApiVersionsRequest(client_software_name=name, client_software_version=ver)
    return wire.request(ApiKey.API_VERSIONS, version, body)


@pytest.mark.spec("BROKER-6")
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_api_versions_lists_exactly_what_is_served(wire, broker, version):
    response = api_versions(wire, version)
    assert response.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == ADVERTISED
    assert_all_apis_have_handlers(broker)


@pytest.mark.spec("BROKER-6")
def test_unknown_api_versions_version_gets_a_v0_error_body(wire):
    body = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    frame = bytearray(frames.encode_request(ApiKey.API_VERSIONS, 3, 77, "c", body))
    struct.pack_into(">h", frame, 6, 6)  # claim v6, which no broker knows yet
    wire.send_raw(bytes(frame))
    payload = wire.read_frame()
    assert struct.unpack_from(">i", payload)[0] == 77
    decoded = ApiVersionsResponse.decode(0, payload[4:])
    assert decoded.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert (18, 0, 5) in [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys]


@pytest.mark.spec("BROKER-7")
@pytest.mark.parametrize("name,ver", [("", "1.0"), ("-bad", "1"), ("ok", "1.0-"), ("sp ace", "1")])
def test_api_versions_v3_checks_the_software_name(wire, name, ver):
    assert api_versions(wire, 3, name, ver).error_code == ErrorCode.INVALID_REQUEST
    assert api_versions(wire, 3, "librdkafka", "2.6.0").error_code == 0


@pytest.mark.spec("BROKER-10")
def test_which_topics_metadata_describes(wire):
    for name in ("b", "a"):
        wire.create_topic(name)
    assert [t.name for t in wire.metadata([], version=0).topics] == ["a", "b"]  # v0: all
    assert [t.name for t in wire.metadata(None, version=1).topics] == ["a", "b"]  # null: all
    assert wire.metadata([], version=1).topics == []  # empty: none
    assert [t.name for t in wire.metadata(["b", "a", "b"]).topics] == ["b", "a"]


@pytest.mark.spec("BROKER-11")
@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_auto_creation_answers_unknown_as_kraft_then_exists(make_broker, version):
    """Embedded metadata is KRaft's combined mode: the topic being created is not there yet
    (ZooKeeper mode answers LEADER_NOT_AVAILABLE: tests/cluster)."""
    broker = make_broker(props={"num.partitions": 3})
    wire = Wire(broker.port)
    first = wire.metadata(["auto"], version=version).topics[0]
    assert (first.error_code, first.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    second = wire.metadata(["auto"], version=version).topics[0]
    assert second.error_code == 0 and len(second.partitions) == 3


@pytest.mark.spec("BROKER-11")
def test_auto_creation_can_be_refused(make_broker):
    wire = Wire(make_broker().port)
    topic = wire.metadata(["nocreate"], version=4, auto=False).topics[0]
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert wire.metadata(["bad/name"]).topics[0].error_code == ErrorCode.INVALID_TOPIC
    off = Wire(make_broker(props={"auto.create.topics.enable": "false"}).port)
    for version in (1, 5):
        assert off.metadata(["x"], version=version).topics[0].error_code == 3
    assert off.metadata(None).topics == []


@pytest.mark.spec("BROKER-11")
def test_auto_creation_fails_with_a_replication_factor_above_one(make_broker):
    wire = Wire(make_broker(props={"default.replication.factor": 3}).port)
    topic = wire.metadata(["rf"]).topics[0]
    assert topic.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.spec("BROKER-12")
def test_one_broker_is_controller_leader_and_isr(make_broker):
    broker = make_broker(props={"broker.id": 7})
    wire = Wire(broker.port)
    wire.create_topic("t", partitions=2)
    response = wire.metadata(["t"])
    assert response.controller_id == 7
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
        (7, "127.0.0.1", broker.port)
    ]
    assert response.cluster_id == broker.broker.controller.cluster_id
    for p in response.topics[0].partitions:
        assert (p.leader_id, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (7, [7], [7], [])
    # v7 carries the leader epoch: one broker leads every partition in epoch 0 forever
    assert [p.leader_epoch for p in wire.metadata(["t"], version=7).topics[0].partitions] == [0, 0]


@pytest.mark.spec("BROKER-12")
def test_advertised_listener(make_broker):
    broker = make_broker(props={"advertised.listeners": "PLAINTEXT://kafka.example:9999"})
    response = Wire(broker.port).metadata([])
    assert [(b.host, b.port) for b in response.brokers] == [("kafka.example", 9999)]


class _Picture:
    """A broker's picture of the cluster as `ZkClusterMetadata` holds it just after its
    ZooKeeper session expired: the other brokers are live, its own registration is gone."""

    def __init__(self, me: BrokerEndpoint, others: list[BrokerEndpoint]) -> None:
        self.endpoint, self._others = me, others

    def brokers(self) -> list[BrokerEndpoint]:
        return list(self._others)


@pytest.mark.spec("CTRL-14")
def test_the_answering_broker_is_always_listed():
    me = BrokerEndpoint(2, "127.0.0.1", 9093)
    others = [BrokerEndpoint(1, "127.0.0.1", 9092), BrokerEndpoint(3, "127.0.0.1", 9094)]
    listed = live_brokers(_Picture(me, others))
    assert [b.node_id for b in listed] == [1, 2, 3]
    assert live_brokers(_Picture(me, [])) == [me]
    assert live_brokers(_Picture(me, [*others, me])) == [*others, me]  # not twice

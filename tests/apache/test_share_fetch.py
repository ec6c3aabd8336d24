"""ShareFetch and ShareAcknowledge against Apache Kafka 4.4: its JSON, then its answers (KIP-932).

kafka-python bundles no definition of the share group APIs, so kafka-ref's declarations are
compared with the JSON files of Kafka 4.4's client jar, field for field, at Kafka's full
version range (PROTO-22).

Then one Apache Kafka 4.4 node and one kafka-ref broker get the same script of raw ShareFetch
and ShareAcknowledge v2 requests from two members of one share group: disjoint acquisitions,
acknowledgements of each kind, a piggybacked release fetched again, the session epochs'
errors, a closing fetch. On both brokers each member first joins the group with
ShareGroupHeartbeat (sent raw, declared here from Kafka's JSON) until it is assigned the
partition: on both the share group coordinator initializes the share-partition's state at
the share coordinator before it assigns it, and without that state a share-partition cannot
load. Once it is initialized, neither broker checks a fetching member id against the group:
a member id that never joined acquires records too (the script's last steps). Each answer
is compared in a normal form: the top-level error, and per partition its error, its
acknowledgement error and its acquired offsets with their delivery counts (partitions with
none of these left out).
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    FindCoordinatorRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
)
from kafka_ref.protocol.schema import Field, Message, parse_versions
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.apache.test_kraft_messages import kafka_message_json
from tests.unit.protocol.test_messages import assert_fields_match
from tests.unit.server.conftest import batch

pytestmark = pytest.mark.timeout(300)
TOPIC, GROUP = "queue", "share-group"
ACCEPT, RELEASE, REJECT = 1, 2, 3

# ShareGroupHeartbeat v1 (API 76), only to join the group on Kafka's side.
SHARE_GROUP_HEARTBEAT = Message(
    "ShareGroupHeartbeatRequest",
    api_key=76,
    valid_versions="1",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+"),
        Field("MemberId", "string", "0+"),
        Field("MemberEpoch", "int32", "0+"),
        Field("RackId", "string", "0+", nullable_versions="0+", default=None),
        Field("SubscribedTopicNames", "[]string", "0+", nullable_versions="0+", default=None),
    ],
)
SHARE_GROUP_HEARTBEAT_RESPONSE = Message(
    "ShareGroupHeartbeatResponse",
    api_key=76,
    valid_versions="1",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+"),
        Field("ErrorCode", "int16", "0+"),
        Field("ErrorMessage", "string", "0+", nullable_versions="0+", default=None),
        Field("MemberId", "string", "0+", nullable_versions="0+", default=None),
        Field("MemberEpoch", "int32", "0+"),
        Field("HeartbeatIntervalMs", "int32", "0+"),
        Field(
            "Assignment",
            "Assignment",
            "0+",
            nullable_versions="0+",
            default=None,
            fields=[
                Field(
                    "TopicPartitions",
                    "[]TopicPartitions",
                    "0+",
                    fields=[
                        Field("TopicId", "uuid", "0+"),
                        Field("Partitions", "[]int32", "0+"),
                    ],
                )
            ],
        ),
    ],
)


@pytest.mark.spec("SHARE-17")
@pytest.mark.parametrize("key", [ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE])
def test_declaration_is_kafkas_json(key):
    definitions = kafka_message_json()
    api = APIS[key]
    for message in (api.request, api.response):
        spec = definitions[message.name]
        assert message.api_key == spec["apiKey"]
        assert message.valid_versions == parse_versions(spec["validVersions"]), message.name
        assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        assert_fields_match(message.fields, spec["fields"], message.name, common)
    assert set(api.listeners) == set(definitions[api.request.name]["listeners"])


def heartbeat(wire: Wire, member: str, epoch: int, group: str = GROUP, topic: str = TOPIC):
    """One raw ShareGroupHeartbeat v1: (error, epoch, assigned partition count)."""
    out = bytearray(4)
    header = frames.RequestHeader(
        request_api_key=76, request_api_version=1, correlation_id=9999, client_id="share"
    )
    frames.RequestHeader.encode_into(2, out, header)
    body = SHARE_GROUP_HEARTBEAT.cls(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        subscribed_topic_names=[topic] if epoch == 0 else None,
    )
    SHARE_GROUP_HEARTBEAT.encode_into(1, out, body)
    out[:4] = (len(out) - 4).to_bytes(4, "big")
    wire.send_raw(bytes(out))
    payload = wire.read_frame()
    assert int.from_bytes(payload[:4], "big") == 9999 and payload[4] == 0  # header v1
    answer = SHARE_GROUP_HEARTBEAT_RESPONSE.decode(1, payload[5:])
    a = answer.assignment
    return answer.error_code, answer.member_epoch, a


def _coordinator_ready(wire: Wire, group: str = GROUP) -> None:
    """FindCoordinator until the group's coordinator is there (it makes __consumer_offsets)."""
    for _ in range(100):
        body = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        if wire.request(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError("no coordinator")


def join(wire: Wire, member: str, group: str = GROUP, topic: str = TOPIC) -> None:
    """Heartbeat until the member is assigned the partition."""
    epoch = 0
    for _ in range(150):
        error, epoch, assignment = heartbeat(wire, member, epoch, group, topic)
        assert error in (0, 14, 15, 16), error  # the coordinator may still be loading
        if error == 0 and assignment is not None and assignment.topic_partitions:
            return
        if error != 0:
            epoch = 0
        time.sleep(0.2)
    raise AssertionError(f"{member} was never assigned the partition")


def normal(answer) -> tuple:
    parts = []
    for t in answer.responses:
        for p in t.partitions:
            acquired = [
                (a.first_offset, a.last_offset, a.delivery_count)
                for a in getattr(p, "acquired_records", [])
            ]
            ack_error = getattr(p, "acknowledge_error_code", None)
            leader = (p.current_leader.leader_id, p.current_leader.leader_epoch)
            if p.error_code or ack_error or acquired:
                parts.append((p.error_code, ack_error, acquired, leader))
    return answer.error_code, parts


def script(port: int) -> list[tuple[str, tuple]]:
    """Run the exchanges on one broker; the normal form of every answer."""
    with Wire("127.0.0.1", port) as wire:
        assert wire.create_topic(TOPIC, 1) == 0
        topic_id = wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
        members = {"m1": str(uuid.uuid4()), "m2": str(uuid.uuid4())}
        _coordinator_ready(wire)
        for member_id in members.values():
            join(wire, member_id)
        answers = []

        def fetch(step, member, epoch, acks=(), max_records=5, wait=2000, topic=None):
            body = ShareFetchRequest(
                group_id=GROUP,
                member_id=members.get(member, member),
                share_session_epoch=epoch,
                max_wait_ms=wait,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=max_records,
                batch_size=max_records,
                topics=[
                    ShareFetchRequest.FetchTopic(
                        topic_id=topic or topic_id,
                        partitions=[
                            ShareFetchRequest.FetchPartition(
                                partition_index=0,
                                acknowledgement_batches=[
                                    ShareFetchRequest.AcknowledgementBatch(
                                        first_offset=f, last_offset=last, acknowledge_types=[k]
                                    )
                                    for f, last, k in acks
                                ],
                            )
                        ],
                    )
                ],
            )
            answers.append((step, normal(wire.request(ApiKey.SHARE_FETCH, 2, body))))

        def acknowledge(step, member, epoch, acks):
            body = ShareAcknowledgeRequest(
                group_id=GROUP,
                member_id=members.get(member, member),
                share_session_epoch=epoch,
                topics=[
                    ShareAcknowledgeRequest.AcknowledgeTopic(
                        topic_id=topic_id,
                        partitions=[
                            ShareAcknowledgeRequest.AcknowledgePartition(
                                partition_index=0,
                                acknowledgement_batches=[
                                    ShareAcknowledgeRequest.AcknowledgementBatch(
                                        first_offset=f, last_offset=last, acknowledge_types=[k]
                                    )
                                    for f, last, k in acks
                                ],
                            )
                        ],
                    )
                ],
            )
            answers.append((step, normal(wire.request(ApiKey.SHARE_ACKNOWLEDGE, 2, body))))

        fetch("m1 opens its session", "m1", 0, wait=500)
        fetch("m2 opens its session", "m2", 0, wait=500)
        for _ in range(2):
            assert wire.produce(TOPIC, 0, batch(5)).error_code == 0  # offsets 0-4, 5-9
        fetch("m1 fetches", "m1", 1)
        fetch("m2 fetches", "m2", 1)
        acknowledge("m1 accepts 0-3, rejects 4", "m1", 2, [(0, 3, ACCEPT), (4, 4, REJECT)])
        acknowledge("m1 accepts 0 again", "m1", 3, [(0, 0, ACCEPT)])
        fetch("m2 releases 5-9 and fetches", "m2", 2, acks=[(5, 9, RELEASE)])
        acknowledge("m1 accepts 5, which m2 holds", "m1", 4, [(5, 5, ACCEPT)])
        acknowledge("m1 accepts 12, never delivered", "m1", 5, [(12, 12, ACCEPT)])
        fetch("m2 skips an epoch", "m2", 7, wait=0)
        acknowledge("ShareAcknowledge opening", "m1", 0, [(5, 5, ACCEPT)])
        fetch("a member without a session", "nobody", 1, wait=0)
        fetch("an unknown topic id", "m1", 6, topic=uuid.uuid4(), wait=0)
        fetch("m2 accepts 5-9 and closes", "m2", -1, acks=[(5, 9, ACCEPT)], wait=0)
        fetch("m1 finds nothing left", "m1", 7, wait=0)
        fetch("a member id that never joined opens", "stranger", 0, wait=0)
        assert wire.produce(TOPIC, 0, batch(5)).error_code == 0  # offsets 10-14
        fetch("the stranger fetches", "stranger", 1)
        return answers


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path_factory.mktemp("kr")),
    }
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


@pytest.mark.spec("SHARE-19", "SHARE-13")
def test_share_fetch_exchanges_answer_as_kafka_does(kafka, kafka_ref):
    theirs = script(kafka.nodes[0].port)
    ours = script(kafka_ref.port)
    for (step, k), (_, r) in zip(theirs, ours, strict=True):
        print(f"{step:35} Kafka {k}  kafka-ref {r}")
    assert ours == theirs


def closing_script(port: int) -> list[tuple[str, tuple]]:
    """A member fetches and its connection closes without a word (no acknowledgement, no
    epoch -1), as when its process is killed: does another member get its records before
    their 30 s acquisition locks expire? The normal form of every answer."""
    topic, group = "closing-queue", "closing-group"
    with Wire("127.0.0.1", port) as wire, Wire("127.0.0.1", port) as doomed:
        assert wire.create_topic(topic, 1) == 0
        topic_id = wire.metadata([topic], version=12, auto=False).topics[0].topic_id
        members = {"m1": str(uuid.uuid4()), "m2": str(uuid.uuid4())}
        _coordinator_ready(wire, group)
        for member_id in members.values():
            join(wire, member_id, group, topic)
        answers = []

        def fetch(step, connection, member, epoch, wait):
            body = ShareFetchRequest(
                group_id=group,
                member_id=members[member],
                share_session_epoch=epoch,
                max_wait_ms=wait,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=10,
                batch_size=10,
                topics=[
                    ShareFetchRequest.FetchTopic(
                        topic_id=topic_id,
                        partitions=[ShareFetchRequest.FetchPartition(partition_index=0)],
                    )
                ],
            )
            answers.append((step, normal(connection.request(ApiKey.SHARE_FETCH, 2, body))))

        fetch("m1 opens its session", doomed, "m1", 0, wait=500)
        fetch("m2 opens its session", wire, "m2", 0, wait=500)
        assert wire.produce(topic, 0, batch(10)).error_code == 0  # offsets 0-9
        fetch("m1 fetches", doomed, "m1", 1, wait=2000)
        doomed.close()
        fetch("m2 fetches after m1's connection closed", wire, "m2", 1, wait=5000)
        return answers


@pytest.mark.spec("SHARE-25")
def test_a_closed_connection_releases_its_records_as_kafka_does(kafka, kafka_ref):
    theirs = closing_script(kafka.nodes[0].port)
    ours = closing_script(kafka_ref.port)
    for (step, k), (_, r) in zip(theirs, ours, strict=True):
        print(f"{step:42} Kafka {k}  kafka-ref {r}")
    assert ours == theirs
    assert theirs[-1][1][1][0][2] == [(0, 9, 2)]  # m1's records, delivered a second time

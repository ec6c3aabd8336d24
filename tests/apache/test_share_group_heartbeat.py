"""ShareGroupHeartbeat and ShareGroupDescribe exchanges, the same on Apache Kafka 4.4 and on
kafka-ref (KIP-932).

One Apache Kafka 4.4 node and one kafka-ref broker each get a topic of three partitions and
the same script: a member joins and heartbeats until its share-partitions are initialized
and assigned, a second joins, the first catches up, the requests Kafka refuses, the group
as ShareGroupDescribe, DescribeGroups, ConsumerGroupDescribe and ListGroups show it, and
the first member leaves. Each heartbeat's answer is compared in a normal form: error code,
error message, member epoch (relative to the first one), heartbeat interval and the number
of partitions in the assignment (None: no assignment). Which partitions each member gets is
the assignor's choice, so the group's assignment sizes are compared, not the partitions.
Kafka runs with `group.share.assignment.interval.ms=0`, as kafka-ref computes a target at
the heartbeat that finds the group epoch ahead of it. The answers are printed, so a
difference shows both sides.
"""

from __future__ import annotations

import json
import os
import re
import time
import zipfile

import pytest

from kafka_ref.apache.classpath import classpath
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ConsumerGroupDescribeRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from kafka_ref.protocol.schema import parse_versions
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.share import share_group_records as records
from tests.apache.test_kraft_messages import kafka_message_json
from tests.unit.protocol.test_messages import assert_fields_match

pytestmark = pytest.mark.timeout(300)
TOPIC, GROUP = "sgh", "sgh-group"
COORDINATOR_NOT_READY = {14, 15, 16}
KAFKA_CONFIGS = {
    "group.share.assignment.interval.ms": 0,
    "group.share.assignor.offload.enable": False,
}


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1, configs=KAFKA_CONFIGS) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path_factory.mktemp("kr")),
        "offsets.topic.replication.factor": 1,
    }
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


def _coordinator_ready(wire: Wire) -> None:
    for _ in range(100):
        body = FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP])
        if wire.request(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError("no coordinator")


def script(port: int) -> list[tuple]:
    """Run the exchanges on one broker; the normal form of every answer."""
    with Wire("127.0.0.1", port) as wire:
        assert wire.create_topic(TOPIC, 3) == 0
        _coordinator_ready(wire)

        def hb(member, epoch, group=GROUP, topics=None):
            body = ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
            )
            for _ in range(100):  # a coordinator still loading its partition: retry
                answer = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
                if answer.error_code not in COORDINATOR_NOT_READY:
                    return answer
                time.sleep(0.2)
            raise AssertionError("the coordinator never answered")

        def count(answer):
            a = answer.assignment
            return None if a is None else sum(len(t.partitions) for t in a.topic_partitions)

        answers: list[tuple] = []
        beats: set[str] = set()

        def note(step, answer):
            answers.append(
                (
                    step,
                    (
                        answer.error_code,
                        answer.error_message,
                        answer.member_epoch,
                        answer.heartbeat_interval_ms,
                        count(answer),
                    ),
                )
            )
            beats.add(step)
            return answer

        a = note("a joins", hb("member-a", 0, topics=[TOPIC]))
        for _ in range(50):  # until its share-partitions are initialized and assigned
            assigned = hb("member-a", a.member_epoch)
            a = assigned if assigned.member_epoch else a
            if count(assigned):
                break
            time.sleep(0.2)
        note("a is assigned the initialized partitions", assigned)
        b = note("b joins", hb("member-b", 0, topics=[TOPIC]))
        a = note("a catches up", hb("member-a", a.member_epoch))
        note("b heartbeats", hb("member-b", b.member_epoch))
        note("a from the future", hb("member-a", a.member_epoch + 5))
        note("an unknown member", hb("member-x", 1))
        note("a group that does not exist", hb("member-x", 1, group="no-such-share-group"))
        note("a join without topics", hb("member-y", 0))
        note("an epoch below -1", hb("member-y", -2))
        note("an empty member id", hb("", 0, topics=[TOPIC]))

        described = {
            d.group_id: d
            for d in wire.request(
                ApiKey.SHARE_GROUP_DESCRIBE,
                1,
                ShareGroupDescribeRequest(group_ids=[GROUP, "no-such-share-group"]),
            ).groups
        }  # Kafka answers in its own order
        g = described[GROUP]
        sizes = sorted(
            sum(len(t.partitions) for t in m.assignment.topic_partitions) for m in g.members
        )
        answers.append(
            ("ShareGroupDescribe", (g.error_code, g.group_state, g.assignor_name, tuple(sizes)))
        )
        missing = described["no-such-share-group"]
        answers.append(("ShareGroupDescribe of none", (missing.error_code, missing.error_message)))
        classic = wire.request(
            ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=[GROUP])
        ).groups[0]
        answers.append(
            ("DescribeGroups v6", (classic.error_code, classic.error_message, classic.group_state))
        )
        consumer = wire.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=[GROUP])
        ).groups[0]
        answers.append(("ConsumerGroupDescribe", (consumer.error_code, consumer.error_message)))
        listed = wire.request(
            ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["Share"])
        ).groups
        kinds = sorted((x.group_id, x.group_type, x.protocol_type, x.group_state) for x in listed)
        answers.append(("ListGroups v5 of type share", tuple(kinds)))
        note("a leaves", hb("member-a", -1))
        # epochs relative to the first one a got, in the answers and in the messages:
        # where a group starts is not compared
        base = answers[0][1][2] - 1

        def relative(message):
            if message is None:
                return None
            return re.sub(r"\((\d+)\)", lambda m: f"({int(m.group(1)) - base})", message)

        return [
            (
                step,
                (a[0], relative(a[1]), a[2] - base if a[2] > 0 else a[2], *a[3:])
                if step in beats
                else a,
            )
            for step, a in answers
        ]


@pytest.mark.spec("SHARE-41", "SHARE-43")
def test_the_share_heartbeat_exchanges_answer_as_kafka_does(kafka, kafka_ref):
    theirs = script(kafka.nodes[0].port)
    ours = script(kafka_ref.port)
    for (step, k), (_, r) in zip(theirs, ours, strict=True):
        print(f"{step:42} Kafka {k}\n{'':42} kafka-ref {r}")
    assert ours == theirs


@pytest.mark.spec("SHARE-40")
@pytest.mark.parametrize("key", [ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE])
def test_the_messages_are_kafkas_json(key):
    definitions = kafka_message_json()
    for message in (APIS[key].request, APIS[key].response):
        spec = definitions[message.name]
        assert message.api_key == spec["apiKey"]
        assert message.valid_versions == parse_versions(spec["validVersions"]), message.name
        assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        assert_fields_match(message.fields, spec["fields"], message.name, common)


def share_group_record_json() -> dict[str, dict]:
    """The share group record definitions of the kafka-group-coordinator jar, by name."""
    jar = next(j for j in classpath().split(os.pathsep) if "/kafka-group-coordinator-4" in j)
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("common/message/ShareGroup") and name.endswith(".json"):
                text = archive.read(name).decode()
                lines = (x for x in text.splitlines() if not x.strip().startswith("//"))
                found[name.split("/")[-1][:-5]] = json.loads("\n".join(lines))
    return found


@pytest.mark.spec("SHARE-45")
def test_the_records_are_kafkas_json():
    definitions = share_group_record_json()
    ours = {
        records.GroupKey: ("ShareGroupMetadataKey", records.GROUP_METADATA),
        records.MemberKey: ("ShareGroupMemberMetadataKey", records.MEMBER_METADATA),
        records.GroupMetadataValue: ("ShareGroupMetadataValue", records.GROUP_METADATA),
        records.MemberMetadataValue: ("ShareGroupMemberMetadataValue", records.MEMBER_METADATA),
        records.TargetMetadataValue: (
            "ShareGroupTargetAssignmentMetadataValue",
            records.TARGET_ASSIGNMENT_METADATA,
        ),
        records.TargetMemberValue: (
            "ShareGroupTargetAssignmentMemberValue",
            records.TARGET_ASSIGNMENT_MEMBER,
        ),
        records.CurrentAssignmentValue: (
            "ShareGroupCurrentMemberAssignmentValue",
            records.CURRENT_MEMBER_ASSIGNMENT,
        ),
        records.StatePartitionMetadataValue: (
            "ShareGroupStatePartitionMetadataValue",
            records.STATE_PARTITION_METADATA,
        ),
    }
    for schema, (name, record_type) in ours.items():
        spec = definitions[name]
        assert spec["apiKey"] == record_type, name
        assert schema.flexible_versions == parse_versions(spec["flexibleVersions"]), name
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        if name.endswith("Key"):
            assert [(f.name, f.type) for f in schema.fields] == [
                (f["name"], f["type"]) for f in spec["fields"]
            ]
        else:
            assert_fields_match(schema.fields, spec["fields"], name, common)
    for kind in ("TargetAssignmentMetadata", "StatePartitionMetadata"):  # the group's key
        assert (
            definitions[f"ShareGroup{kind}Key"]["fields"]
            == (definitions["ShareGroupMetadataKey"]["fields"])
        )

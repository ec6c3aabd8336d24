"""ConsumerGroupHeartbeat exchanges, the same on Apache Kafka 4.4 and on kafka-ref (KIP-848).

One Apache Kafka 4.4 node and one kafka-ref broker each get a topic of four partitions and
the same script of ConsumerGroupHeartbeat v1 requests: a member joins, a second joins, the
first revokes and catches up, the second gets its partitions, the first leaves; and the
requests Kafka refuses. Each answer is compared in a normal form: error code, member epoch,
heartbeat interval and the number of partitions in the assignment (None: no assignment).
Which partitions move is the assignor's choice (both balance them; kafka-ref's uniform
assignor and Kafka's need not pick the same ones), so the numbers are compared, not the
partitions. The answers are printed, so a difference shows both sides. Kafka runs with
`group.consumer.assignment.interval.ms=0`: kafka-ref computes a new target assignment at
the heartbeat that finds the group epoch ahead of it (CGRP-4), which Kafka 4.3+ postpones
by up to that interval (1 s by default).
"""

from __future__ import annotations

import json
import os
import time
import zipfile

import pytest

from kafka_ref.apache.classpath import classpath
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.group import consumer_group_records as records
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
)
from kafka_ref.protocol.schema import parse_versions
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.apache.test_kraft_messages import kafka_message_json
from tests.unit.protocol.test_messages import assert_fields_match

pytestmark = pytest.mark.timeout(300)
TOPIC, GROUP = "cgh", "cgh-group"
TP = ConsumerGroupHeartbeatRequest.TopicPartitions
COORDINATOR_NOT_READY = {14, 15, 16}  # load in progress, not available, not coordinator
# Kafka 4.3+ computes a target assignment at most once per assignment interval (1 s by
# default), maybe on another thread; kafka-ref at the heartbeat that needs it, as Kafka with
# an interval of 0 and no offload (CGRP-4).
KAFKA_CONFIGS = {
    "group.consumer.assignment.interval.ms": 0,
    "group.consumer.assignor.offload.enable": False,
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
    """FindCoordinator until the group's coordinator is there (it makes __consumer_offsets)."""
    for _ in range(100):
        body = FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP])
        if wire.request(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0].error_code == 0:
            return
        time.sleep(0.2)
    raise AssertionError("no coordinator")


def script(port: int) -> list[tuple]:
    """Run the exchanges on one broker; the normal form of every answer."""
    with Wire("127.0.0.1", port) as wire:
        assert wire.create_topic(TOPIC, 4) == 0
        _coordinator_ready(wire)

        def hb(member, epoch, **fields):
            body = ConsumerGroupHeartbeatRequest(
                group_id=fields.pop("group", GROUP), member_id=member, member_epoch=epoch, **fields
            )
            for _ in range(100):  # a coordinator still loading its partition: retry
                answer = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
                if answer.error_code not in COORDINATOR_NOT_READY:
                    break
                time.sleep(0.2)
            a = answer.assignment
            count = None if a is None else sum(len(t.partitions) for t in a.topic_partitions)
            owned = (
                []
                if a is None
                else [TP(topic_id=t.topic_id, partitions=t.partitions) for t in a.topic_partitions]
            )
            return (
                answer.error_code,
                answer.member_epoch,
                answer.heartbeat_interval_ms,
                count,
            ), owned

        join = dict(
            rebalance_timeout_ms=60_000, subscribed_topic_names=[TOPIC], topic_partitions=[]
        )
        answers = []
        beats: set[str] = set()  # the heartbeats' steps, whose epochs are normalized
        epochs: dict[str, int] = {}

        def note(step, member, result):
            (error, epoch, interval, count), owned = result
            if error == 0:
                epochs[member] = epoch
            answers.append((step, (error, epoch, interval, count)))
            beats.add(step)
            return owned

        def epoch(member):
            return epochs.get(member, 0)

        a_owns = note("a joins", "a", hb("member-a", 0, **join))
        note("a heartbeats", "a", hb("member-a", epoch("a"), topic_partitions=a_owns))
        note("b joins", "b", hb("member-b", 0, **join))
        a_keeps = note(
            "a is asked to revoke", "a", hb("member-a", epoch("a"), topic_partitions=a_owns)
        )
        note("a revoked", "a", hb("member-a", epoch("a"), topic_partitions=a_keeps))
        note("b gets its partitions", "b", hb("member-b", epoch("b")))
        note("a from the future", "a", hb("member-a", epoch("a") + 5))
        note("an unknown member", "x", hb("member-x", 1))
        note("a group that does not exist", "x", hb("member-x", 1, group="no-such-group"))
        no_timeout = dict(join, rebalance_timeout_ms=-1)
        note("a join without rebalance timeout", "y", hb("member-y", 0, **no_timeout))
        note("an unknown assignor", "y", hb("member-y", 0, server_assignor="nope", **join))
        described = wire.request(
            ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=[GROUP])
        ).groups[0]
        seen = (described.error_code, described.error_message, described.group_state)
        answers.append(("DescribeGroups v6", seen))
        listed = wire.request(
            ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["Consumer"])
        ).groups
        kinds = sorted((g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed)
        answers.append(("ListGroups v5 of type consumer", tuple(kinds)))
        note("a leaves", "a", hb("member-a", -1))
        # epochs relative to the first one a got: where a group starts is not compared
        base = answers[0][1][1] - 1
        return [
            (step, (a[0], a[1] - base if a[1] > 0 else a[1], *a[2:]) if step in beats else a)
            for step, a in answers
        ]


@pytest.mark.spec("CGRP-3", "CGRP-5")
def test_the_heartbeat_exchanges_answer_as_kafka_does(kafka, kafka_ref):
    theirs = script(kafka.nodes[0].port)
    ours = script(kafka_ref.port)
    for (step, k), (_, r) in zip(theirs, ours, strict=True):
        print(f"{step:35} Kafka {k}  kafka-ref {r}")
    assert ours == theirs


@pytest.mark.spec("CGRP-1")
@pytest.mark.parametrize("key", [ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE])
def test_the_messages_are_kafkas_json_at_its_full_range(key):
    definitions = kafka_message_json()
    for message in (APIS[key].request, APIS[key].response):
        spec = definitions[message.name]
        assert message.api_key == spec["apiKey"]
        assert message.valid_versions == parse_versions(spec["validVersions"]), message.name
        assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        assert_fields_match(message.fields, spec["fields"], message.name, common)


def group_coordinator_json() -> dict[str, dict]:
    """The record definitions of the kafka-group-coordinator jar, by name."""
    jar = next(j for j in classpath().split(os.pathsep) if "/kafka-group-coordinator-4" in j)
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("common/message/ConsumerGroup") and name.endswith(".json"):
                text = archive.read(name).decode()
                lines = (x for x in text.splitlines() if not x.strip().startswith("//"))
                found[name.split("/")[-1][:-5]] = json.loads("\n".join(lines))
    return found


# The one field kafka-ref does not write: the classic members of a consumer group (CGRP-15)
NOT_WRITTEN = {"ConsumerGroupMemberMetadataValue": {"ClassicMemberMetadata"}}


@pytest.mark.spec("CGRP-13")
def test_the_records_are_kafkas_json():
    definitions = group_coordinator_json()
    ours = {
        records.GroupKey: ("ConsumerGroupMetadataKey", records.GROUP_METADATA),
        records.MemberKey: ("ConsumerGroupMemberMetadataKey", records.MEMBER_METADATA),
        records.GroupMetadataValue: ("ConsumerGroupMetadataValue", records.GROUP_METADATA),
        records.MemberMetadataValue: (
            "ConsumerGroupMemberMetadataValue",
            records.MEMBER_METADATA,
        ),
        records.TargetMetadataValue: (
            "ConsumerGroupTargetAssignmentMetadataValue",
            records.TARGET_ASSIGNMENT_METADATA,
        ),
        records.TargetMemberValue: (
            "ConsumerGroupTargetAssignmentMemberValue",
            records.TARGET_ASSIGNMENT_MEMBER,
        ),
        records.CurrentAssignmentValue: (
            "ConsumerGroupCurrentMemberAssignmentValue",
            records.CURRENT_MEMBER_ASSIGNMENT,
        ),
    }
    for schema, (name, record_type) in ours.items():
        spec = definitions[name]
        assert spec["apiKey"] == record_type, name
        assert schema.flexible_versions == parse_versions(spec["flexibleVersions"]), name
        theirs = [f for f in spec["fields"] if f["name"] not in NOT_WRITTEN.get(name, set())]
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        if name.endswith("Key"):  # every key field is a string at version 0
            assert [(f.name, f.type) for f in schema.fields] == [
                (f["name"], f["type"]) for f in theirs
            ]
        else:
            assert_fields_match(schema.fields, theirs, name, common)
    # the same keys serve the target assignment's metadata and the member records
    assert (
        definitions["ConsumerGroupTargetAssignmentMetadataKey"]["fields"]
        == (definitions["ConsumerGroupMetadataKey"]["fields"])
    )

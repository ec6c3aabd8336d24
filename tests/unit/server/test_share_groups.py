"""Share groups on a running broker (KIP-932): raw ShareGroupHeartbeat and ShareGroupDescribe
over the wire, the group as the other group APIs see it (SHARE-47, SHARE-48), the admin's
offsets (SHARE-49) and the share.version feature (SHARE-50).

The broker runs its own share coordinator: what the share group coordinator initialized,
altered or deleted is read back from it through the broker's persister
(tests/unit/server/share_fixtures.py).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    ApiKey,
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
    ShareGroupDescribeRequest,
)
from kafka_ref.share.share_coordinator import READ_UNINITIALIZED
from tests.unit.server import share_fixtures
from tests.unit.server.conftest import Wire
from tests.unit.server.share_fixtures import assigned, join, read_state, until_assigned

GROUP, TOPIC = "queue", "jobs"
OK = ErrorCode.NO_ERROR
# what ReadShareGroupState answers for a share-partition without a state: never
# initialized, or deleted (Kafka 4.4's ShareCoordinatorShard)
GONE = (ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED)


def heartbeat(wire, member, epoch, topics=None):
    return share_fixtures.heartbeat(wire, GROUP, member, epoch, topics)


def topic_id_of(wire: Wire):
    return wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id


def gone(broker, topic_id, partition: int) -> bool:
    state = read_state(broker, GROUP, topic_id, partition)
    return (state.error, state.error_message) == GONE


@pytest.mark.spec("SHARE-47")
def test_a_share_group_over_the_wire_and_as_the_other_group_apis_see_it(broker):
    with Wire(broker.port) as wire:
        assert wire.create_topic(TOPIC, 3) == 0
        topic_id = topic_id_of(wire)
        joined = heartbeat(wire, "a", 0, [TOPIC])
        assert (joined.error_code, joined.member_id, assigned(joined)) == (OK, "a", 0)
        # the share group coordinator initializes the three share-partitions at the share
        # coordinator, off the heartbeat; a later heartbeat assigns them
        answer = until_assigned(wire, GROUP, "a", joined, 3)
        initialized = [read_state(broker, GROUP, topic_id, p) for p in range(3)]
        assert [(s.error, s.start_offset, s.batches) for s in initialized] == [(OK, -1, ())] * 3
        b = heartbeat(wire, "b", 0, [TOPIC])
        # 2 members, 3 partitions: a keeps 2 of its 3 (sticky), b gets the third
        assert (b.error_code, assigned(b)) == (OK, 1)
        assert heartbeat(wire, "a", answer.member_epoch + 7).error_code == (
            ErrorCode.FENCED_MEMBER_EPOCH
        )

        described = wire.request(
            ApiKey.SHARE_GROUP_DESCRIBE,
            1,
            ShareGroupDescribeRequest(group_ids=[GROUP, "nope"]),
        ).groups
        g = described[0]
        assert (g.error_code, g.group_state, g.assignor_name) == (OK, "Stable", "simple")
        assert sorted(m.member_id for m in g.members) == ["a", "b"]
        assert {t.topic_name for m in g.members for t in m.assignment.topic_partitions} == {TOPIC}
        assert (described[1].error_code, described[1].error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Group nope not found.",
        )

        listed = wire.request(ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["share"]))
        assert [
            (x.group_id, x.group_type, x.protocol_type, x.group_state) for x in listed.groups
        ] == [(GROUP, "share", "share", "Stable")]
        classic = wire.request(
            ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=[GROUP])
        ).groups[0]
        assert (classic.error_code, classic.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {GROUP} is not a classic group.",
        )
        consumer = wire.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=[GROUP])
        ).groups[0]
        assert (consumer.error_code, consumer.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Group {GROUP} is not a consumer group.",
        )
        fetched = wire.request(
            ApiKey.OFFSET_FETCH,
            8,
            OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=GROUP)]),
        ).groups[0]
        assert fetched.error_code == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.spec("SHARE-48")
def test_deleting_a_share_group_needs_it_empty_and_deletes_its_share_partitions(broker):
    with Wire(broker.port) as wire:
        assert wire.create_topic(TOPIC, 2) == 0
        topic_id = topic_id_of(wire)
        join(wire, GROUP, "a", [TOPIC], partitions=2)  # both share-partitions initialized
        assert not any(gone(broker, topic_id, p) for p in (0, 1))
        delete = DeleteGroupsRequest(groups_names=[GROUP])
        result = wire.request(ApiKey.DELETE_GROUPS, 2, delete).results[0]
        assert result.error_code == ErrorCode.NON_EMPTY_GROUP
        assert heartbeat(wire, "a", -1).error_code == OK
        result = wire.request(ApiKey.DELETE_GROUPS, 2, delete).results[0]
        assert result.error_code == OK
        # the share coordinator deleted both states (in the background of the answer)
        for partition in (0, 1):
            state = share_fixtures.wait_for_state(
                broker, GROUP, topic_id, lambda s: (s.error, s.error_message) == GONE, partition
            )
            assert (state.error, state.error_message) == GONE
        assert heartbeat(wire, "a", 1).error_code == ErrorCode.GROUP_ID_NOT_FOUND


def offsets(wire, topics=None, version=1):
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
        group_id=GROUP,
        topics=None
        if topics is None
        else [
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(
                topic_name=t, partitions=ps
            )
            for t, ps in topics.items()
        ],
    )
    body = DescribeShareGroupOffsetsRequest(groups=[group])
    answer = wire.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, body).groups[0]
    return answer.error_code, {
        (t.topic_name, p.partition_index): (p.start_offset, p.error_code)
        for t in answer.topics
        for p in t.partitions
    }


@pytest.mark.spec("SHARE-49")
def test_the_share_admin_apis_over_the_wire(broker):
    A = AlterShareGroupOffsetsRequest
    with Wire(broker.port) as wire:
        assert wire.create_topic(TOPIC, 2) == 0
        topic_id = topic_id_of(wire)
        share_fixtures.wait_for_group_coordinator(wire, GROUP)
        alter = A(
            group_id=GROUP,
            topics=[
                A.AlterShareGroupOffsetsRequestTopic(
                    topic_name=TOPIC,
                    partitions=[
                        A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=5)
                    ],
                ),
                A.AlterShareGroupOffsetsRequestTopic(
                    topic_name="nope",
                    partitions=[
                        A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=1)
                    ],
                ),
            ],
        )
        answer = wire.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        codes = {
            (t.topic_name, p.partition_index): p.error_code
            for t in answer.responses
            for p in t.partitions
        }
        assert (answer.error_code, codes) == (
            OK,
            {(TOPIC, 0): OK, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION},
        )
        for _ in range(50):
            if offsets(wire)[1]:
                break
            time.sleep(0.05)
        assert offsets(wire) == (OK, {(TOPIC, 0): (5, OK)})
        started = read_state(broker, GROUP, topic_id, 0)  # the share coordinator's state
        assert (started.error, started.start_offset, started.batches) == (OK, 5, ())
        assert gone(broker, topic_id, 1)
        assert offsets(wire, {TOPIC: [0, 1]}, version=0) == (
            OK,
            {(TOPIC, 0): (5, OK), (TOPIC, 1): (-1, OK)},
        )
        delete = DeleteShareGroupOffsetsRequest(
            group_id=GROUP,
            topics=[
                DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC)
            ],
        )
        answer = wire.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete)
        assert (answer.error_code, [(t.topic_name, t.error_code) for t in answer.responses]) == (
            OK,
            [(TOPIC, OK)],
        )
        assert gone(broker, topic_id, 0)  # deleted before the answer
        assert offsets(wire) == (OK, {})
        heartbeat(wire, "a", 0, [TOPIC])  # a member: no more altering
        answer = wire.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        assert answer.error_code == ErrorCode.NON_EMPTY_GROUP


@pytest.mark.spec("SHARE-50")
def test_api_versions_shows_share_version_supported_and_finalized(broker):
    with Wire(broker.port) as wire:
        answer = wire.api_versions(4)
        supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
        finalized = {f.name: f.max_version_level for f in answer.finalized_features}
        assert supported["share.version"] == (0, 2)
        assert finalized["share.version"] == 2
        assert "share.version" not in {f.name for f in wire.api_versions(3).supported_features}

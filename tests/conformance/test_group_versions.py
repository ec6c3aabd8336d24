"""The newer versions of the group APIs, over the wire: what each version adds.

Each test asks for the versions it speaks (`target.require_versions`): a broker that stops
below them is skipped, not failed. The same tests run against Apache Kafka 4.4
(`--target bootstrap=HOST:PORT` with `kafka-ref reference-kafka`), which serves them all.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from kafka_ref.conformance.groups import Member, form_group, sync_generation
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode as E
from kafka_ref.protocol.consumer_protocol import Subscription, encode_subscription
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

OC, OF, OD = OffsetCommitRequest, OffsetFetchRequest, OffsetDeleteRequest
NOT_ASKED = -(2**31)  # DescribeGroups' authorized operations when not asked for
GROUP_OPERATIONS = 3400  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (bits)


def commit(
    w: Wire,
    version: int,
    group: str,
    topic: str,
    offsets: dict[int, int],
    *,
    generation: int = -1,
    member: str = "",
    instance: str | None = None,
    epoch: int = -1,
    topic_id: uuid.UUID | None = None,
) -> dict[int, int]:
    """OffsetCommit of one topic at `version`: {partition: error code}."""
    partitions = [
        OC.OffsetCommitRequestPartition(
            partition_index=p,
            committed_offset=o,
            committed_leader_epoch=epoch,
            committed_metadata="m",
        )
        for p, o in offsets.items()
    ]
    body = OC(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=instance,
        topics=[
            OC.OffsetCommitRequestTopic(
                name=topic, topic_id=topic_id or uuid.UUID(int=0), partitions=partitions
            )
        ],
    )
    response = w.request(ApiKey.OFFSET_COMMIT, version, body)
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def fetch(w: Wire, version: int, group: str, topic: str, partitions: list[int]) -> dict:
    """OffsetFetch v1-v7 of one topic: {partition: partition response}."""
    body = OF(
        group_id=group,
        topics=[OF.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
    )
    response = w.request(ApiKey.OFFSET_FETCH, version, body)
    assert response.error_code == 0
    return {p.partition_index: p for t in response.topics for p in t.partitions}


def delete_offsets(w: Wire, group: str, parts: dict[str, list[int]]) -> tuple[int, dict]:
    """OffsetDelete: (top-level error, {(topic, partition): error})."""
    body = OD(
        group_id=group,
        topics=[
            OD.OffsetDeleteRequestTopic(
                name=t, partitions=[OD.OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in parts.items()
        ],
    )
    response = w.request(ApiKey.OFFSET_DELETE, 0, body)
    return response.error_code, {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def describe(w: Wire, version: int, group: str, operations: bool = False) -> Any:
    body = DescribeGroupsRequest(groups=[group], include_authorized_operations=operations)
    return w.request(ApiKey.DESCRIBE_GROUPS, version, body).groups[0]


def consumer(connect, group: str, *topics: str, **kw: Any) -> Member:
    """A member whose metadata is a consumer subscription to `topics`."""
    subscription = encode_subscription(Subscription(list(topics)))
    return Member(connect(), group, protocols=[("range", subscription)], **kw)


def stable(members: list[Member]) -> None:
    form_group(members)
    sync_generation(members)


# -- OffsetCommit and OffsetFetch --------------------------------------------------------
@pytest.mark.spec("OFFSET-10")
def test_v6_commits_keep_the_leader_epoch_and_v5_fetches_return_it(
    target, connect, group, make_topic
):
    target.require_versions((ApiKey.OFFSET_COMMIT, 6), (ApiKey.OFFSET_FETCH, 5))
    topic, w = make_topic("epoch"), connect()
    assert commit(w, 6, group, topic, {0: 10}, epoch=7) == {0: 0}
    assert commit(w, 5, group, topic, {1: 20}, epoch=9) == {1: 0}  # v5 has no epoch
    found = fetch(w, 5, group, topic, [0, 1])
    assert (found[0].committed_offset, found[0].committed_leader_epoch) == (10, 7)
    assert (found[1].committed_offset, found[1].committed_leader_epoch) == (20, -1)
    assert fetch(w, 4, group, topic, [0])[0].committed_offset == 10


@pytest.mark.spec("OFFSET-11")
def test_v9_answers_group_id_not_found_where_v8_answers_illegal_generation(
    target, connect, group, make_topic
):
    target.require_versions((ApiKey.OFFSET_COMMIT, 9))
    topic, w = make_topic("missing"), connect()
    assert commit(w, 8, group, topic, {0: 1}, generation=1, member="m") == {0: E.ILLEGAL_GENERATION}
    assert commit(w, 9, group, topic, {0: 1}, generation=1, member="m") == {0: E.GROUP_ID_NOT_FOUND}
    assert fetch(w, 5, group, topic, [0])[0].committed_offset == -1


@pytest.mark.spec("OFFSET-12", "REBAL-11")
def test_v7_a_fenced_static_member_cannot_commit(target, connect, group, make_topic):
    target.require_versions((ApiKey.OFFSET_COMMIT, 7))
    topic = make_topic("fenced")
    old = Member(connect(), group, instance_id="i-1")
    stable([old])
    new = Member(connect(), group, instance_id="i-1")
    assert new.join().error_code == 0  # the instance restarted: a new member id, same place
    w, gen = connect(), old.generation
    assert commit(
        w, 7, group, topic, {0: 5}, generation=gen, member=old.member_id, instance="i-1"
    ) == {0: E.FENCED_INSTANCE_ID}
    assert commit(
        w, 7, group, topic, {0: 5}, generation=gen, member=new.member_id, instance="i-2"
    ) == {0: E.UNKNOWN_MEMBER_ID}
    assert commit(
        w, 7, group, topic, {0: 5}, generation=gen, member=new.member_id, instance="i-1"
    ) == {0: 0}


@pytest.mark.spec("OFFSET-13")
def test_v10_an_unknown_topic_id_is_unknown_topic_id(target, connect, group):
    target.require_versions((ApiKey.OFFSET_COMMIT, 10), (ApiKey.OFFSET_FETCH, 10))
    w, nowhere = connect(), uuid.uuid4()
    assert commit(w, 10, group, "", {0: 1, 1: 2}, topic_id=nowhere) == {
        0: E.UNKNOWN_TOPIC_ID,
        1: E.UNKNOWN_TOPIC_ID,
    }
    body = OF(
        groups=[
            OF.OffsetFetchRequestGroup(
                group_id=group,
                topics=[OF.OffsetFetchRequestTopics(topic_id=nowhere, partition_indexes=[0])],
            )
        ]
    )
    answer = w.request(ApiKey.OFFSET_FETCH, 10, body).groups[0]
    assert answer.error_code == 0
    assert [(t.topic_id, p.error_code) for t in answer.topics for p in t.partitions] == [
        (nowhere, E.UNKNOWN_TOPIC_ID)
    ]


@pytest.mark.spec("OFFSET-13")
def test_v10_names_topics_by_id(target, wire, connect, group, make_topic):
    target.require_versions(
        (ApiKey.OFFSET_COMMIT, 10), (ApiKey.OFFSET_FETCH, 10), (ApiKey.METADATA, 10)
    )
    if APIS[ApiKey.METADATA].max_version < 10:  # topic ids come from Metadata v10+
        pytest.skip("the suite's codec does not declare Metadata v10 yet")
    topic = make_topic("ids")
    topic_id = wire.metadata([topic], version=10).topics[0].topic_id
    w = connect()
    assert commit(w, 10, group, "", {0: 42}, topic_id=topic_id) == {0: 0}
    assert fetch(w, 5, group, topic, [0])[0].committed_offset == 42  # stored by name
    body = OF(groups=[OF.OffsetFetchRequestGroup(group_id=group, topics=None)])
    answer = w.request(ApiKey.OFFSET_FETCH, 10, body).groups[0]
    assert [
        (t.topic_id, p.partition_index, p.committed_offset)
        for t in answer.topics
        for p in t.partitions
    ] == [(topic_id, 0, 42)]


@pytest.mark.spec("OFFSET-14")
def test_v8_fetches_several_groups_each_answered_alone(target, connect, group, make_topic):
    target.require_versions((ApiKey.OFFSET_FETCH, 8))
    topic, w = make_topic("groups"), connect()
    other = target.group_name("other")
    assert commit(w, 3, group, topic, {0: 3}) == {0: 0}
    body = OF(
        groups=[
            OF.OffsetFetchRequestGroup(group_id=group, topics=None),
            OF.OffsetFetchRequestGroup(
                group_id=other,
                topics=[OF.OffsetFetchRequestTopics(name=topic, partition_indexes=[0, 1])],
            ),
        ]
    )
    groups = {g.group_id: g for g in w.request(ApiKey.OFFSET_FETCH, 8, body).groups}
    assert [
        (p.partition_index, p.committed_offset) for t in groups[group].topics for p in t.partitions
    ] == [(0, 3)]
    coordinated_here = groups[other].error_code == 0
    if coordinated_here:  # the other group may live on another broker: NOT_COORDINATOR
        assert [
            (p.partition_index, p.committed_offset)
            for t in groups[other].topics
            for p in t.partitions
        ] == [(0, -1), (1, -1)]
    else:
        assert groups[other].error_code == E.NOT_COORDINATOR


# -- OffsetDelete ----------------------------------------------------------------------
@pytest.mark.spec("OFFSET-15")
def test_offset_delete_removes_a_simple_groups_offsets(target, connect, group, make_topic):
    target.require_versions((ApiKey.OFFSET_DELETE, 0))
    topic, w = make_topic("delete"), connect()
    assert delete_offsets(w, group, {topic: [0]}) == (E.GROUP_ID_NOT_FOUND, {})
    assert commit(w, 3, group, topic, {0: 5, 1: 6}) == {0: 0, 1: 0}
    error, results = delete_offsets(w, group, {topic: [0, 9], "conf-no-such-topic": [0]})
    assert error == 0
    assert results == {
        (topic, 0): 0,
        (topic, 9): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("conf-no-such-topic", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    found = fetch(w, 5, group, topic, [0, 1])
    assert (found[0].committed_offset, found[1].committed_offset) == (-1, 6)
    assert describe(w, 5, group).group_state == "Empty"  # the group stays


@pytest.mark.spec("OFFSET-15")
def test_offset_delete_keeps_offsets_of_topics_a_member_subscribes_to(
    target, connect, group, make_topic
):
    target.require_versions((ApiKey.OFFSET_DELETE, 0))
    read, unread = make_topic("read"), make_topic("unread")
    member = consumer(connect, group, read)
    stable([member])
    w = connect()
    for topic in (read, unread):
        assert commit(
            w, 3, group, topic, {0: 7}, generation=member.generation, member=member.member_id
        ) == {0: 0}
    error, results = delete_offsets(w, group, {read: [0], unread: [0]})
    assert (error, results) == (0, {(read, 0): E.GROUP_SUBSCRIBED_TO_TOPIC, (unread, 0): 0})
    assert fetch(w, 5, group, read, [0])[0].committed_offset == 7
    assert fetch(w, 5, group, unread, [0])[0].committed_offset == -1


# -- JoinGroup, SyncGroup, LeaveGroup ---------------------------------------------------
@pytest.mark.spec("REBAL-19")
def test_v7_joins_and_v5_syncs_carry_and_check_the_protocol_type(target, connect, group):
    target.require_versions((ApiKey.JOIN_GROUP, 7), (ApiKey.SYNC_GROUP, 5))
    member = Member(connect(), group, versions={ApiKey.JOIN_GROUP: 7, ApiKey.SYNC_GROUP: 5})
    form_group([member])
    joined = member.join()  # a Stable-bound group: the leader's rejoin answers again
    assert joined.error_code == 0 and joined.protocol_type == "consumer"

    def sync(protocol_type: str | None, protocol_name: str | None) -> Any:
        body = SyncGroupRequest(
            group_id=group,
            generation_id=member.generation,
            member_id=member.member_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=member.member_id, assignment=b"a"
                )
            ],
        )
        return member.wire.request(ApiKey.SYNC_GROUP, 5, body)

    assert sync("consumer", "roundrobin").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert sync("connect", "range").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    good = sync("consumer", "range")
    assert (good.error_code, good.protocol_type, good.protocol_name) == (0, "consumer", "range")
    assert bytes(good.assignment) == b"a"


@pytest.mark.spec("REBAL-21", "REBAL-11")
def test_v9_a_static_leader_that_restarts_learns_its_members_without_assigning(
    target, connect, group
):
    target.require_versions((ApiKey.JOIN_GROUP, 9))
    v9 = {ApiKey.JOIN_GROUP: 9}
    leader = Member(connect(), group, instance_id="i-a", versions=v9)
    assert leader.join().error_code == 0  # alone: the leader of the first generation
    other = Member(connect(), group, versions=v9)
    assert other.get_member_id() == E.MEMBER_ID_REQUIRED
    other.send_join()
    leader.send_join()  # the leader rejoins, and stays leader (REBAL-9)
    leader.finish_join(), other.finish_join()
    assert leader.is_leader and leader.generation == other.generation
    sync_generation([leader, other])
    restarted = Member(connect(), group, instance_id="i-a", versions=v9)
    answer = restarted.join()
    assert answer.error_code == 0 and answer.generation_id == leader.generation
    assert answer.skip_assignment is True and answer.leader == answer.member_id
    assert sorted(m.member_id for m in answer.members) == sorted(
        [answer.member_id, other.member_id]
    )
    assert describe(connect(), 5, group).group_state == "Stable"


@pytest.mark.spec("REBAL-22")
def test_v3_leaves_a_batch_of_members_each_answered(target, connect, group):
    target.require_versions((ApiKey.LEAVE_GROUP, 3))
    a = Member(connect(), group, instance_id="i-a")
    b = Member(connect(), group)
    stable([a, b])
    body = LeaveGroupRequest(
        group_id=group,
        members=[
            LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="i-a"),
            LeaveGroupRequest.MemberIdentity(member_id=b.member_id, reason="done"),
            LeaveGroupRequest.MemberIdentity(member_id="ghost"),
        ],
    )
    answer = connect().request(ApiKey.LEAVE_GROUP, 5, body)
    assert answer.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == [
        ("", "i-a", 0),
        (b.member_id, None, 0),
        ("ghost", None, E.UNKNOWN_MEMBER_ID),
    ]
    assert describe(connect(), 5, group).group_state == "Empty"


# -- DescribeGroups, ListGroups, FindCoordinator ------------------------------------------
@pytest.mark.spec("REBAL-23")
def test_describe_groups_operations_instance_ids_and_unknown_groups(target, connect, group):
    target.require_versions((ApiKey.DESCRIBE_GROUPS, 6))
    member = Member(connect(), group, instance_id="i-1")
    stable([member])
    w = connect()
    described = describe(w, 4, group, operations=True)
    assert described.error_code == 0 and described.authorized_operations == GROUP_OPERATIONS
    assert [(m.member_id, m.group_instance_id) for m in described.members] == [
        (member.member_id, "i-1")
    ]
    assert describe(w, 4, group).authorized_operations == NOT_ASKED
    missing = target.group_name("missing")
    old = describe(w, 5, missing)
    assert (old.error_code, old.group_state, old.members) == (0, "Dead", [])
    new = describe(w, 6, missing, operations=True)
    assert (new.error_code, new.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {missing} not found.",
    )
    assert new.authorized_operations == NOT_ASKED


@pytest.mark.spec("REBAL-24")
def test_list_groups_filters_by_state_and_type(target, connect, group, make_topic):
    target.require_versions((ApiKey.LIST_GROUPS, 5))
    topic, w = make_topic("list"), connect()
    assert commit(w, 3, group, topic, {0: 1}) == {0: 0}  # an Empty "simple" group

    def listed(version: int, states=(), types=()) -> dict[str, Any]:
        body = ListGroupsRequest(states_filter=list(states), types_filter=list(types))
        answer = w.request(ApiKey.LIST_GROUPS, version, body)
        assert answer.error_code == 0
        return {g.group_id: g for g in answer.groups}

    found = listed(5, states=["EMPTY"], types=["Classic"])[group]
    assert (found.protocol_type, found.group_state, found.group_type) == ("", "Empty", "classic")
    assert group not in listed(4, states=["Stable"])
    assert group not in listed(5, types=["consumer"])
    assert group in listed(4)


@pytest.mark.spec("REBAL-25")
def test_v4_finds_the_coordinators_of_a_batch_of_keys(target, wire, group):
    target.require_versions((ApiKey.FIND_COORDINATOR, 5))
    other = target.group_name("other")
    body = FindCoordinatorRequest(key_type=0, coordinator_keys=[group, other])
    deadline = time.monotonic() + 15
    while True:  # the offsets topic may still be getting its leaders
        answer = wire.request(ApiKey.FIND_COORDINATOR, 4, body)
        if all(c.error_code == 0 for c in answer.coordinators) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [(c.key, c.error_code) for c in answer.coordinators] == [(group, 0), (other, 0)]
    assert all(c.node_id >= 0 and c.port > 0 for c in answer.coordinators)
    share = FindCoordinatorRequest(key_type=2, coordinator_keys=[f"{group}:x:0"])
    refused = wire.request(ApiKey.FIND_COORDINATOR, 5, share).coordinators[0]
    assert (refused.error_code, refused.node_id, refused.host, refused.port) == (
        E.INVALID_REQUEST,
        -1,
        "",
        -1,
    )


@pytest.mark.spec("REBAL-26", "OFFSET-7")
def test_the_flexible_versions_serve_a_whole_group_life(target, connect, group, make_topic):
    flexible = {
        ApiKey.JOIN_GROUP: 6,
        ApiKey.SYNC_GROUP: 4,
        ApiKey.HEARTBEAT: 4,
        ApiKey.LEAVE_GROUP: 4,
    }
    target.require_versions(
        *flexible.items(),
        (ApiKey.OFFSET_COMMIT, 8),
        (ApiKey.OFFSET_FETCH, 6),
        (ApiKey.DESCRIBE_GROUPS, 5),
        (ApiKey.LIST_GROUPS, 3),
        (ApiKey.DELETE_GROUPS, 2),
    )
    topic = make_topic("flexible")
    a, b = Member(connect(), group, versions=flexible), Member(connect(), group, versions=flexible)
    stable([a, b])
    assert a.heartbeat() == 0 and b.heartbeat() == 0
    w = connect()
    assert commit(w, 8, group, topic, {0: 11}, generation=a.generation, member=a.member_id) == {
        0: 0
    }
    assert fetch(w, 6, group, topic, [0])[0].committed_offset == 11
    described = describe(w, 5, group)
    assert described.group_state == "Stable" and len(described.members) == 2
    listed = w.request(ApiKey.LIST_GROUPS, 3, ListGroupsRequest())
    assert group in {g.group_id for g in listed.groups}
    assert a.leave() == 0 and b.leave() == 0
    for version in (2, 3):  # v3 adds an error message, null as in Kafka
        answer = w.request(ApiKey.DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=[group]))
        result = answer.results[0]
        expected = 0 if version == 2 else E.GROUP_ID_NOT_FOUND
        assert (result.error_code, result.error_message) == (expected, None)

"""Consumer groups over the wire: FindCoordinator, rebalances, committed offsets, group admin.

Each member gets its own connection, as a real consumer has: a JoinGroup waits in the
coordinator until the rebalance round completes, and later requests on the same connection
wait behind it (BROKER-2).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka_ref.server.group_adapter import OFFSETS_TOPIC
from tests.unit.server.conftest import Wire, wait_until

pytestmark = pytest.mark.timeout(60)

GROUP_PROPS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 100,
    "offsets.topic.num.partitions": 5,
}
SESSION_MS = 10_000


@pytest.fixture
def gbroker(make_broker):
    return make_broker(props=GROUP_PROPS)


def connect(broker) -> Wire:
    return Wire(broker.port)


def find_coordinator(wire: Wire, key: str = "g", key_type: int = 0, version: int = 2):
    body = FindCoordinatorRequest(key=key, key_type=key_type)
    return wire.request(ApiKey.FIND_COORDINATOR, version, body)


def join_body(group: str, member_id: str = "", session_ms: int = SESSION_MS, **kw):
    protocols = kw.pop("protocols", [("range", b"sub")])
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=kw.pop("rebalance_ms", SESSION_MS),
        member_id=member_id,
        group_instance_id=kw.pop("instance", None),
        protocol_type=kw.pop("protocol_type", "consumer"),
        protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols
        ],
    )


def join(wire: Wire, group: str, member_id: str = "", version: int = 5, **kw):
    return wire.request(ApiKey.JOIN_GROUP, version, join_body(group, member_id, **kw))


def join_new_member(wire: Wire, group: str) -> str:
    """The KIP-394 dance of a v4+ client: ask for a member id, then join with it."""
    first = join(wire, group)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    return first.member_id


def sync_body(group: str, generation: int, member_id: str, assignments=None):
    return SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )


def sync(wire: Wire, group: str, generation: int, member_id: str, assignments=None):
    body = sync_body(group, generation, member_id, assignments)
    return wire.request(ApiKey.SYNC_GROUP, 3, body)


def heartbeat(wire: Wire, group: str, generation: int, member_id: str) -> int:
    body = HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id)
    return wire.request(ApiKey.HEARTBEAT, 3, body).error_code


def leave(wire: Wire, group: str, member_id: str) -> int:
    body = LeaveGroupRequest(group_id=group, member_id=member_id)
    return wire.request(ApiKey.LEAVE_GROUP, 1, body).error_code


def commit(wire, group, offsets, *, generation=-1, member_id="", retention=-1, version=2):
    """`offsets`: {(topic, partition): (offset, metadata)}; returns {(topic, p): error}."""
    topics: dict[str, list] = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    body = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        retention_time_ms=retention,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
            for t, ps in topics.items()
        ],
    )
    answer = wire.request(ApiKey.OFFSET_COMMIT, version, body)
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def fetch_offsets(wire, group, parts=None, version=3):
    """`parts`: {topic: [partitions]} or None for all; returns (error, {(t, p): (o, m, e)})."""
    topics = None
    if parts is not None:
        topics = [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
            for t, ps in parts.items()
        ]
    answer = wire.request(
        ApiKey.OFFSET_FETCH, version, OffsetFetchRequest(group_id=group, topics=topics)
    )
    found = {
        (t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
        for t in answer.topics
        for p in t.partitions
    }
    return answer.error_code, found


def describe(wire, *groups):
    body = DescribeGroupsRequest(groups=list(groups))
    return wire.request(ApiKey.DESCRIBE_GROUPS, 2, body).groups


def list_groups(wire):
    answer = wire.request(ApiKey.LIST_GROUPS, 2, ListGroupsRequest())
    assert answer.error_code == 0
    return {g.group_id: g.protocol_type for g in answer.groups}


def delete_groups(wire, *groups):
    body = DeleteGroupsRequest(groups_names=list(groups))
    return {r.group_id: r.error_code for r in wire.request(ApiKey.DELETE_GROUPS, 1, body).results}


# ---------------------------------------------------------------------- FindCoordinator
@pytest.mark.spec("BROKER-44", "BROKER-45")
def test_find_coordinator_creates_the_offsets_topic_and_answers_this_broker(broker):
    wire = connect(broker)
    controller = broker.broker.controller
    assert controller.topic(OFFSETS_TOPIC) is None
    for version in (0, 1, 2):
        answer = find_coordinator(wire, "my-group", version=version)
        assert answer.error_code == ErrorCode.NO_ERROR
        assert (answer.node_id, answer.host, answer.port) == (0, "127.0.0.1", broker.port)
    meta = controller.topic(OFFSETS_TOPIC)
    assert (meta.partitions, meta.replication_factor) == (50, 1)  # 3 capped at one broker
    assert meta.configs == {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
        "compression.type": "producer",
    }
    log = broker.broker.replica_manager.get_partition(OFFSETS_TOPIC, 49).log
    assert log.config.compact and log.config.segment_bytes == 104857600
    topic = wire.metadata([OFFSETS_TOPIC], auto=False).topics[0]
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (0, True, 50)
    assert {t.name: t.is_internal for t in wire.metadata(None).topics} == {OFFSETS_TOPIC: True}


@pytest.mark.spec("BROKER-44", "TXN-9")
def test_find_coordinator_for_transactions_and_unknown_key_types(broker):
    wire = connect(broker)
    answer = find_coordinator(wire, "txn", key_type=7)
    assert answer.error_code == ErrorCode.INVALID_REQUEST
    assert (answer.node_id, answer.host, answer.port) == (-1, "", -1)
    assert answer.error_message
    assert broker.broker.controller.topic("__transaction_state") is None
    answer = find_coordinator(wire, "txn", key_type=1)  # creates __transaction_state
    assert (answer.error_code, answer.node_id, answer.port) == (0, 0, broker.port)
    topic = broker.broker.controller.topic("__transaction_state")
    assert topic is not None and topic.partitions == 50
    assert broker.broker.controller.topic(OFFSETS_TOPIC) is None


@pytest.mark.spec("BROKER-45")
def test_metadata_creates_the_offsets_topic_even_without_auto_creation(make_broker):
    broker = make_broker(props={"auto.create.topics.enable": "false", **GROUP_PROPS})
    wire = connect(broker)
    first = wire.metadata([OFFSETS_TOPIC]).topics[0]
    # being created, as a KRaft broker answers (BROKER-11)
    assert (first.error_code, first.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
    again = wire.metadata([OFFSETS_TOPIC]).topics[0]
    assert (again.error_code, len(again.partitions)) == (0, 5)  # offsets.topic.num.partitions
    other = wire.metadata(["plain"]).topics[0]
    assert other.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not other.is_internal


# ---------------------------------------------------------------------- the rebalance
@pytest.mark.spec("REBAL-1", "REBAL-2", "REBAL-5", "REBAL-9", "REBAL-10", "REBAL-12")
def test_two_members_join_sync_heartbeat_and_leave(gbroker):
    a, b = connect(gbroker), connect(gbroker)
    find_coordinator(a, "g")
    m1 = join_new_member(a, "g")
    first = join(a, "g", m1)
    assert (first.error_code, first.generation_id, first.leader, first.member_id) == (0, 1, m1, m1)
    assert first.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in first.members] == [(m1, b"sub")]
    assert sync(a, "g", 1, m1, {m1: b"all"}).assignment == b"all"
    assert heartbeat(a, "g", 1, m1) == ErrorCode.NO_ERROR

    # A second member joins: the first learns of the rebalance from its heartbeat.
    m2 = join_new_member(b, "g")
    b.send(ApiKey.JOIN_GROUP, 5, join_body("g", m2))
    assert wait_until(lambda: heartbeat(a, "g", 1, m1) == ErrorCode.REBALANCE_IN_PROGRESS)
    a.send(ApiKey.JOIN_GROUP, 5, join_body("g", m1))
    leader, follower = a.receive(), b.receive()
    assert (leader.error_code, follower.error_code) == (0, 0)
    assert leader.generation_id == follower.generation_id == 2
    assert leader.leader == follower.leader == m1
    assert sorted(m.member_id for m in leader.members) == sorted([m1, m2])
    assert follower.members == [] and follower.member_id == m2

    # The follower's SyncGroup waits for the leader's assignment.
    b.send(ApiKey.SYNC_GROUP, 3, sync_body("g", 2, m2))
    assert sync(a, "g", 2, m1, {m1: b"p0", m2: b"p1"}).assignment == b"p0"
    assert b.receive().assignment == b"p1"
    assert heartbeat(a, "g", 2, m1) == heartbeat(b, "g", 2, m2) == ErrorCode.NO_ERROR

    (group,) = describe(a, "g")
    assert (group.error_code, group.group_state, group.protocol_type) == (0, "Stable", "consumer")
    assert group.protocol_data == "range"
    members = {m.member_id: m for m in group.members}
    assert {m: members[m].member_assignment for m in members} == {m1: b"p0", m2: b"p1"}
    assert {(m.client_id, m.client_host) for m in group.members} == {("conformance", "/127.0.0.1")}

    # The follower leaves: the leader is told to rejoin and forms generation 3 alone.
    assert leave(b, "g", m2) == ErrorCode.NO_ERROR
    assert heartbeat(a, "g", 2, m1) == ErrorCode.REBALANCE_IN_PROGRESS
    alone = join(a, "g", m1)
    assert (alone.generation_id, [m.member_id for m in alone.members]) == (3, [m1])
    assert leave(a, "g", m1) == ErrorCode.NO_ERROR
    assert describe(a, "g")[0].group_state == "Empty"


@pytest.mark.spec("REBAL-3", "REBAL-4", "REBAL-5")
def test_rebalance_errors(gbroker):
    a, b = connect(gbroker), connect(gbroker)
    find_coordinator(a, "g")
    m1 = join_new_member(a, "g")
    assert join(a, "g", m1).generation_id == 1
    assert heartbeat(a, "g", 0, m1) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(a, "g", 1, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(a, "other-group", 1, m1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert sync(a, "g", 1, "nobody").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert leave(a, "g", "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert join(a, "g", "nobody").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert sync(a, "g", 1, m1, {m1: b"x"}).error_code == 0
    # A rebalance starts: heartbeats, syncs and commits of the old generation are refused.
    m2 = join_new_member(b, "g")
    b.send(ApiKey.JOIN_GROUP, 5, join_body("g", m2))
    assert wait_until(lambda: heartbeat(a, "g", 1, m1) == ErrorCode.REBALANCE_IN_PROGRESS)
    assert sync(a, "g", 1, m1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    b.close()


@pytest.mark.spec("REBAL-14")
def test_group_id_and_session_timeout_are_checked(gbroker):
    wire = connect(gbroker)
    find_coordinator(wire, "g")
    assert join(wire, "").error_code == ErrorCode.INVALID_GROUP_ID
    assert heartbeat(wire, "", 1, "m") == ErrorCode.INVALID_GROUP_ID
    assert join(wire, "g", session_ms=50).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    too_long = join(wire, "g", session_ms=1_800_001)
    assert too_long.error_code == ErrorCode.INVALID_SESSION_TIMEOUT


@pytest.mark.spec("REBAL-10")
def test_member_id_required_only_from_v4(gbroker):
    wire = connect(gbroker)
    find_coordinator(wire, "g")
    for version in (4, 5):
        answer = join(wire, f"g{version}", version=version)
        assert answer.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert answer.member_id and answer.generation_id == -1
    old = join(wire, "g3", version=3)  # before KIP-394 a member id comes with the answer
    assert (old.error_code, old.generation_id, old.leader) == (0, 1, old.member_id)
    v0 = join(wire, "g0", version=0, session_ms=5000)  # no rebalance timeout in v0
    assert (v0.error_code, v0.generation_id) == (0, 1)


@pytest.mark.spec("BROKER-45", "BROKER-46")
def test_a_joining_group_before_the_offsets_topic_exists_is_not_coordinated(gbroker):
    wire = connect(gbroker)
    assert join(wire, "g").error_code == ErrorCode.NOT_COORDINATOR  # no partition to host it
    assert heartbeat(wire, "g", 1, "m") == ErrorCode.NOT_COORDINATOR
    find_coordinator(wire, "g")
    assert join(wire, "g").error_code == ErrorCode.MEMBER_ID_REQUIRED


# ---------------------------------------------------------------------- committed offsets
@pytest.mark.spec("OFFSET-1", "OFFSET-2", "OFFSET-3")
def test_commit_then_fetch(gbroker):
    wire = connect(gbroker)
    wire.create_topic("t", partitions=3)
    find_coordinator(wire, "c")
    errors = commit(wire, "c", {("t", 0): (5, "five"), ("t", 1): (7, None), ("nope", 0): (1, "")})
    assert errors == {("t", 0): 0, ("t", 1): 0, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    for version in (1, 2, 3):
        error, found = fetch_offsets(wire, "c", {"t": [0, 1, 2]}, version=version)
        assert error == 0
        assert found == {("t", 0): (5, "five", 0), ("t", 1): (7, "", 0), ("t", 2): (-1, "", 0)}
    error, found = fetch_offsets(wire, "c", None)  # v2+: null topics = everything committed
    assert (error, found) == (0, {("t", 0): (5, "five", 0), ("t", 1): (7, "", 0)})
    assert fetch_offsets(wire, "unknown", {"t": [0]})[1] == {("t", 0): (-1, "", 0)}
    assert commit(wire, "c", {("t", 0): (6, "six")}, version=3) == {("t", 0): 0}
    assert fetch_offsets(wire, "c", {"t": [0]})[1] == {("t", 0): (6, "six", 0)}


@pytest.mark.spec("OFFSET-8")
def test_commits_of_group_members_are_checked(gbroker):
    wire = connect(gbroker)
    wire.create_topic("t")
    find_coordinator(wire, "g")
    m1 = join_new_member(wire, "g")
    assert join(wire, "g", m1).generation_id == 1
    sync(wire, "g", 1, m1, {m1: b"t-0"})
    assert commit(wire, "g", {("t", 0): (3, "")}, generation=1, member_id=m1) == {("t", 0): 0}
    stale = commit(wire, "g", {("t", 0): (4, "")}, generation=0, member_id=m1)
    assert stale == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    stranger = commit(wire, "g", {("t", 0): (4, "")}, generation=1, member_id="x")
    assert stranger == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    outside = commit(wire, "g", {("t", 0): (4, "")})  # generation -1 while the group has members
    assert outside == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert fetch_offsets(wire, "g", {"t": [0]})[1] == {("t", 0): (3, "", 0)}


@pytest.mark.spec("OFFSET-3")
def test_commit_metadata_is_limited_by_offset_metadata_max_bytes(make_broker):
    broker = make_broker(props={**GROUP_PROPS, "offset.metadata.max.bytes": 4})
    wire = connect(broker)
    wire.create_topic("t")
    find_coordinator(wire, "c")
    errors = commit(wire, "c", {("t", 0): (1, "12345")})
    assert errors == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert commit(wire, "c", {("t", 0): (1, "1234")}) == {("t", 0): 0}


@pytest.mark.spec("OFFSET-6")
def test_an_explicit_retention_time_expires_the_offset(gbroker):
    wire = connect(gbroker)
    wire.create_topic("t", partitions=2)
    find_coordinator(wire, "c")
    assert commit(wire, "c", {("t", 0): (1, "")}, retention=1) == {("t", 0): 0}  # v2: KIP-211
    assert commit(wire, "c", {("t", 1): (2, "")}, retention=-1) == {("t", 1): 0}
    time.sleep(0.01)
    gbroker.call(gbroker.broker.groups.run_offset_expiration)
    found = fetch_offsets(wire, "c", {"t": [0, 1]})[1]
    assert found == {("t", 0): (-1, "", 0), ("t", 1): (2, "", 0)}


@pytest.mark.spec("BROKER-46", "OFFSET-4")
def test_groups_and_commits_survive_a_broker_restart(make_broker, tmp_path):
    data = tmp_path / "d"
    first = make_broker(data, GROUP_PROPS)
    wire = connect(first)
    wire.create_topic("t", partitions=2)
    find_coordinator(wire, "keep")
    commit(wire, "keep", {("t", 0): (11, "meta-0"), ("t", 1): (22, "")})
    commit(wire, "keep", {("t", 0): (12, "meta-0b")})  # the later commit wins
    find_coordinator(wire, "members")
    m1 = join_new_member(wire, "members")
    join(wire, "members", m1)
    sync(wire, "members", 1, m1, {m1: b"t-0,t-1"})  # the group is written at its sync
    first.stop()

    second = make_broker(data, GROUP_PROPS)
    wire = connect(second)
    assert find_coordinator(wire, "keep").port == second.port
    found = fetch_offsets(wire, "keep", {"t": [0, 1]})[1]
    assert found == {("t", 0): (12, "meta-0b", 0), ("t", 1): (22, "", 0)}
    assert list_groups(wire) == {"keep": "", "members": "consumer"}
    (group,) = describe(wire, "members")
    assert (group.group_state, [m.member_id for m in group.members]) == ("Stable", [m1])
    assert group.members[0].member_assignment == b"t-0,t-1"
    assert heartbeat(wire, "members", 1, m1) == ErrorCode.NO_ERROR  # within its session
    assert second.broker.controller.topic(OFFSETS_TOPIC).partitions == 5


# ---------------------------------------------------------------------- group admin
@pytest.mark.spec("OFFSET-7")
def test_describe_list_and_delete_groups(gbroker):
    wire, member = connect(gbroker), connect(gbroker)
    wire.create_topic("t")
    find_coordinator(wire, "g")
    m1 = join_new_member(member, "busy")
    join(member, "busy", m1)
    commit(wire, "idle", {("t", 0): (1, "")})
    assert list_groups(wire) == {"busy": "consumer", "idle": ""}

    (unknown,) = describe(wire, "nobody")
    assert (unknown.error_code, unknown.group_state, unknown.members) == (0, "Dead", [])
    idle, busy = describe(wire, "idle", "busy")
    assert (idle.group_state, idle.protocol_type, idle.members) == ("Empty", "", [])
    assert busy.group_state == "CompletingRebalance" and busy.protocol_data == ""
    assert [m.member_id for m in busy.members] == [m1]

    assert delete_groups(wire, "busy", "nobody", "idle") == {
        "busy": ErrorCode.NON_EMPTY_GROUP,
        "nobody": ErrorCode.GROUP_ID_NOT_FOUND,
        "idle": ErrorCode.NO_ERROR,
    }
    assert list_groups(wire) == {"busy": "consumer"}
    assert fetch_offsets(wire, "idle", {"t": [0]})[1] == {("t", 0): (-1, "", 0)}
    assert delete_groups(wire, "") == {"": ErrorCode.GROUP_ID_NOT_FOUND}


# ---------------------------------------------------------------------- newer versions
@pytest.mark.spec("OFFSET-13")
def test_v10_commits_and_fetches_name_topics_by_their_ids(gbroker):
    wire = connect(gbroker)
    wire.create_topic("t", partitions=2)
    wire.create_topic("gone")
    find_coordinator(wire, "c")
    ids = {t.name: t.topic_id for t in gbroker.broker.controller.topics()}
    partition = OffsetCommitRequest.OffsetCommitRequestPartition
    body = OffsetCommitRequest(
        group_id="c",
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                topic_id=ids["t"],
                partitions=[
                    partition(partition_index=1, committed_offset=9, committed_metadata="by id")
                ],
            ),
        ],
    )
    answer = wire.request(ApiKey.OFFSET_COMMIT, 10, body)
    assert [
        (t.topic_id, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions
    ] == [(ids["t"], 1, 0)]
    assert fetch_offsets(wire, "c", {"t": [1]})[1] == {("t", 1): (9, "by id", 0)}  # by name
    assert commit(wire, "c", {("gone", 0): (3, "")}) == {("gone", 0): 0}
    gbroker.broker.controller.delete_topic("gone")
    # all of the group's offsets at v10: the deleted topic, without an id, is left out
    body = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="c")])
    body.groups[0].topics = None
    group = wire.request(ApiKey.OFFSET_FETCH, 10, body).groups[0]
    assert [
        (t.topic_id, t.name, p.partition_index, p.committed_offset)
        for t in group.topics
        for p in t.partitions
    ] == [(ids["t"], "", 1, 9)]


@pytest.mark.spec("TXN-85")
def test_the_transaction_apis_are_advertised_at_kafkas_versions(broker):
    wire = connect(broker)
    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    keys = {
        k.api_key: (k.min_version, k.max_version)
        for k in wire.request(ApiKey.API_VERSIONS, 3, body).api_keys
    }
    assert keys[ApiKey.END_TXN] == (0, 5)  # v5: KIP-890's epoch bump per transaction
    assert keys[ApiKey.TXN_OFFSET_COMMIT] == (0, 5)  # v5: the implicit AddOffsetsToTxn
    assert keys[ApiKey.PRODUCE] == (0, 12)  # v12: the implicit AddPartitionsToTxn
    assert keys[ApiKey.INIT_PRODUCER_ID] == (0, 5) and keys[ApiKey.ADD_OFFSETS_TO_TXN] == (0, 4)
    assert keys[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)
    assert keys[ApiKey.WRITE_TXN_MARKERS] == (1, 2)

"""The share group's membership (KIP-932), rule by rule (spec/share_groups.md, SHARE-40..).

Each test drives a real `GroupCoordinator` (its `ShareGroupCoordinator`) on a `ManualClock`
+ `ManualScheduler`, with `__consumer_offsets` in memory behind its `append` and a
persister that remembers what it was asked, as tests/unit/group/test_consumer_group.py does
for consumer groups.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group_coordinator import ConsumerHeartbeat, TopicImage
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.group.group_metadata import EMPTY, GroupMetadata
from kafka_ref.protocol.messages import (
    APIS,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_ref.record.batch import RecordBatch
from kafka_ref.share import share_group_records as rec
from kafka_ref.share.persister import NoOpPersister, SharePartitionKey, ShareStateSummary
from kafka_ref.share.share_group import ShareGroup
from kafka_ref.share.share_group_coordinator import (
    END_OFFSET_MESSAGES,
    ShareHeartbeat,
    SharePartitionOffsets,
    run_now,
)

OK = ErrorCode.NO_ERROR
E = ErrorCode
G = "sgroup"
T1 = TopicImage("t1", uuid.UUID(int=1), 4)
T2 = TopicImage("t2", uuid.UUID(int=2), 2)
SESSION = 45_000


class RecordingPersister(NoOpPersister):
    """Succeeds at once, like NoOpPersister, and remembers the calls; `fail` makes
    `initialize` answer an error for those keys."""

    def __init__(self) -> None:
        self.initialized: list[tuple[SharePartitionKey, int, int]] = []
        self.deleted: list[SharePartitionKey] = []
        self.fail: set[SharePartitionKey] = set()
        self.summaries: dict[SharePartitionKey, ShareStateSummary] = {}

    async def initialize(self, key, state_epoch, start_offset):
        if key in self.fail:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.initialized.append((key, state_epoch, start_offset))
        return OK

    async def delete_state(self, key):
        self.deleted.append(key)
        return OK

    async def read_summary(self, key, leader_epoch):
        return self.summaries.get(key, ShareStateSummary())


class Harness:
    """A coordinator with its offsets partitions in memory; records survive `restart()`."""

    def __init__(self, topics=(T1, T2), **config):
        config.setdefault("offsets_topic_num_partitions", 4)
        self.config = GroupConfig(**config)
        self.clock = ManualClock(1_000_000)
        self.scheduler = ManualScheduler(self.clock)
        self.log: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        self.topics = list(topics)
        self.persister = RecordingPersister()
        self.persister_calls: list = []  # spawned, not run yet: see `answer_persister`
        self.hold_persister = False
        self.coordinator = self._start()

    def _spawn(self, coroutine):
        if self.hold_persister:
            self.persister_calls.append(coroutine)
        else:
            run_now(coroutine)

    def answer_persister(self):
        """The persister answers the calls held so far."""
        calls, self.persister_calls = self.persister_calls, []
        for coroutine in calls:
            run_now(coroutine)

    def _append(self, partition, batch, done):
        for r in RecordBatch(batch).records():
            self.log.setdefault(partition, []).append((r.key, r.value))
        done(OK)

    def _start(self):
        c = GroupCoordinator(
            self.config,
            self.clock,
            self.scheduler.schedule,
            self._append,
            share_persister=lambda: self.persister,
            spawn=self._spawn,
        )
        for p in range(self.config.offsets_topic_num_partitions):
            c.on_elected(p, list(self.log.get(p, [])))
        return c

    def restart(self):
        self.coordinator.shutdown()
        self.coordinator = self._start()

    def heartbeat(self, member_id, epoch, group=G, **fields):
        box = []
        hb = ShareHeartbeat(group_id=group, member_id=member_id, member_epoch=epoch, **fields)
        self.coordinator.share.heartbeat(hb, self.topics, box.append)
        assert len(box) == 1
        return box[0]

    def join(self, member_id, topics=("t1",), group=G, **fields):
        """Join, then heartbeat once more: the first heartbeat initializes the
        share-partitions, the second is handed them (SHARE-46)."""
        first = self.heartbeat(
            member_id, 0, group=group, subscribed_topic_names=tuple(topics), **fields
        )
        assert first.error == OK, first
        return self.heartbeat(member_id, first.member_epoch, group=group)

    def group(self, group_id=G) -> ShareGroup:
        return self.coordinator.manager.get_group(group_id)


def parts(result_or_assignment) -> set[tuple[str, int]]:
    a = getattr(result_or_assignment, "assignment", result_or_assignment)
    names = {T1.topic_id: "t1", T2.topic_id: "t2"}
    return {(names[t], p) for t, ps in (a or {}).items() for p in ps}


# -- SHARE-40: the messages and the request's checks -----------------------------------
@pytest.mark.spec("SHARE-40")
def test_heartbeat_and_describe_are_declared_at_version_1_and_round_trip():
    assert (APIS[76].name, APIS[76].min_version, APIS[76].max_version) == (
        "ShareGroupHeartbeat",
        1,
        1,
    )
    assert (APIS[77].name, APIS[77].min_version, APIS[77].max_version) == (
        "ShareGroupDescribe",
        1,
        1,
    )
    request = ShareGroupHeartbeatRequest(
        group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=["t"]
    )
    data = ShareGroupHeartbeatRequest.encode(1, request)
    assert ShareGroupHeartbeatRequest.decode(1, memoryview(data)) == request
    answer = ShareGroupHeartbeatResponse(
        member_id="m",
        member_epoch=3,
        heartbeat_interval_ms=5000,
        assignment=ShareGroupHeartbeatResponse.Assignment(
            topic_partitions=[
                ShareGroupHeartbeatResponse.TopicPartitions(topic_id=T1.topic_id, partitions=[0])
            ]
        ),
    )
    data = ShareGroupHeartbeatResponse.encode(1, answer)
    assert ShareGroupHeartbeatResponse.decode(1, memoryview(data)) == answer
    described = ShareGroupDescribeResponse(groups=[])
    assert (
        ShareGroupDescribeResponse.decode(
            1, memoryview(ShareGroupDescribeResponse.encode(1, described))
        )
        == described
    )


@pytest.mark.spec("SHARE-40")
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(member_id="", member_epoch=0, subscribed_topic_names=("t1",)), None),
        (
            dict(member_id=" ", member_epoch=0, subscribed_topic_names=("t1",)),
            "MemberId can't be empty.",
        ),
        (
            dict(group_id="", member_epoch=0, subscribed_topic_names=("t1",)),
            "GroupId can't be empty.",
        ),
        (
            dict(rack_id="", member_epoch=0, subscribed_topic_names=("t1",)),
            "RackId can't be empty.",
        ),
        (dict(member_epoch=0), "SubscribedTopicNames must be set in first request."),
        (
            dict(member_epoch=0, subscribed_topic_names=()),
            "SubscribedTopicNames must be set in first request.",
        ),
        (dict(member_epoch=-2), "MemberEpoch is invalid."),
    ],
)
def test_an_invalid_heartbeat_is_invalid_request_with_kafkas_message(fields, message):
    h = Harness()
    fields = {"group_id": G, "member_id": "m1", **fields}
    box = []
    h.coordinator.share.heartbeat(ShareHeartbeat(**fields), h.topics, box.append)
    assert (box[0].error, box[0].message) == (E.INVALID_REQUEST, message)
    assert h.group() is None  # nothing was created


# -- SHARE-41: joining, leaving, fencing, sessions -------------------------------------
@pytest.mark.spec("SHARE-41")
def test_join_leave_and_the_errors_of_an_unknown_member_group_or_epoch():
    h = Harness()
    assert h.heartbeat("m1", 1).error == E.GROUP_ID_NOT_FOUND
    joined = h.join("m1")
    assert joined.error == OK and joined.member_epoch == h.group().group_epoch
    h.heartbeat("m1", joined.member_epoch, subscribed_topic_names=("t1", "t2"))
    epoch = h.heartbeat("m1", h.group().members["m1"].member_epoch).member_epoch
    assert epoch >= 4
    assert h.heartbeat("m9", epoch).error == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("m1", epoch + 1).error == E.FENCED_MEMBER_EPOCH
    assert h.heartbeat("m1", epoch - 2).error == E.FENCED_MEMBER_EPOCH
    assert h.heartbeat("m1", epoch - 1).error == OK  # its previous epoch: the answer was lost
    left = h.heartbeat("m1", -1)
    assert (left.error, left.member_epoch, left.member_id) == (OK, -1, "m1")
    assert not h.group().members
    assert h.heartbeat("m1", -1).error == E.UNKNOWN_MEMBER_ID


@pytest.mark.spec("SHARE-41")
def test_a_group_of_another_type_and_a_full_group_refuse_the_join():
    h = Harness(group_share_max_size=2)
    h.coordinator.manager.add_group(GroupMetadata("classic", EMPTY, 0))
    box = []
    h.coordinator.consumer.heartbeat(
        ConsumerHeartbeat(
            "consumer", "c1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t1",)
        ),
        h.topics,
        box.append,
    )
    for other in ("classic", "consumer"):
        result = h.heartbeat("m1", 0, group=other, subscribed_topic_names=("t1",))
        assert (result.error, result.message) == (
            E.GROUP_ID_NOT_FOUND,
            f"Group {other} is not a share group.",
        )
    h.join("m1")
    h.join("m2")
    full = h.heartbeat("m3", 0, subscribed_topic_names=("t1",))
    assert (full.error, full.message) == (
        E.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 2 members.",
    )
    assert h.heartbeat("m2", 0, subscribed_topic_names=("t1",)).error == OK  # a member rejoins


@pytest.mark.spec("SHARE-41")
def test_a_member_that_misses_its_session_leaves_and_its_partitions_go_to_the_others():
    h = Harness()
    h.join("m1")
    h.join("m2")
    h.heartbeat("m1", h.group().members["m1"].member_epoch)
    assert parts(h.group().members["m1"].assigned) != {("t1", p) for p in range(4)}
    before = h.group().group_epoch
    for _ in range(3):  # m1 keeps heartbeating, m2 goes silent
        h.clock.advance(SESSION // 3)
        h.scheduler.run_due()
        h.heartbeat("m1", h.group().members["m1"].member_epoch)
    h.clock.advance(1)
    h.scheduler.run_due()
    assert set(h.group().members) == {"m1"}
    assert h.group().group_epoch > before
    h.heartbeat("m1", h.group().members["m1"].member_epoch)
    assert parts(h.group().members["m1"].assigned) == {("t1", p) for p in range(4)}


# -- SHARE-42, SHARE-43: epochs and the assignment -------------------------------------
@pytest.mark.spec("SHARE-42")
def test_the_group_epoch_moves_on_join_subscription_change_partitions_and_leave():
    h = Harness()
    h.join("m1")
    g = h.group()
    e0 = g.group_epoch
    h.heartbeat("m1", g.members["m1"].member_epoch)  # nothing changed
    assert g.group_epoch == e0
    h.heartbeat("m1", g.members["m1"].member_epoch, subscribed_topic_names=("t1", "t2"))
    e1 = g.group_epoch
    assert e1 > e0
    h.topics = [TopicImage("t1", T1.topic_id, 6), T2]  # t1 grew
    h.heartbeat("m1", g.members["m1"].member_epoch)
    e2 = g.group_epoch
    assert e2 > e1
    h.join("m2")
    assert g.group_epoch > e2
    e3 = g.group_epoch
    h.heartbeat("m2", -1)
    assert g.group_epoch == e3 + 1


@pytest.mark.spec("SHARE-43")
def test_a_member_reaches_its_target_in_one_heartbeat_and_gets_it_in_the_answer():
    h = Harness(topics=(TopicImage("t1", T1.topic_id, 1),))
    a = h.join("m1")
    b = h.heartbeat("m2", 0, subscribed_topic_names=("t1",))
    # one partition, two members: both read it (no revocation, no waiting)
    assert parts(b) == {("t1", 0)}
    moved = h.heartbeat("m1", a.member_epoch)
    # m1 keeps t1-0 and moves to the new epoch at once; its assignment did not change, so
    # the answer does not repeat it
    assert moved.member_epoch == h.group().target_assignment_epoch > a.member_epoch
    assert moved.assignment is None
    assert parts(h.group().members["m1"].assigned) == {("t1", 0)}
    h.group().check_invariants()


@pytest.mark.spec("SHARE-43")
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["join", "beat", "leave", "expire", "resubscribe"]),
            st.integers(0, 3),
        ),
        max_size=25,
    )
)
def test_epochs_never_go_back_and_members_hold_only_initialized_partitions(steps):
    h = Harness()
    last_epoch: dict[str, int] = {}
    group_epoch = 0
    for action, n in steps:
        member = f"m{n}"
        g = h.group()
        known = g.members.get(member) if g else None
        if action == "join" and known is None:
            result = h.heartbeat(member, 0, subscribed_topic_names=("t1",))
        elif action == "beat" and known is not None:
            result = h.heartbeat(member, known.member_epoch)
        elif action == "resubscribe" and known is not None:
            topics = ("t1", "t2") if len(known.subscribed_topic_names) == 1 else ("t2",)
            result = h.heartbeat(member, known.member_epoch, subscribed_topic_names=topics)
        elif action == "leave" and known is not None:
            result = h.heartbeat(member, -1)
            last_epoch.pop(member, None)
            result = None
        elif action == "expire":
            h.clock.advance(SESSION + 1)
            h.scheduler.run_due()
            last_epoch.clear()
            result = None
        else:
            continue
        g = h.group()
        if g is None:
            continue
        if result is not None:
            assert result.error == OK
            assert result.member_epoch >= last_epoch.get(member, 0)
            last_epoch[member] = result.member_epoch
        assert g.group_epoch >= group_epoch
        group_epoch = g.group_epoch
        g.check_invariants()


# -- SHARE-45: durable in __consumer_offsets -------------------------------------------
@pytest.mark.spec("SHARE-45")
def test_a_restarted_coordinator_reloads_members_epochs_assignments_and_partition_states():
    h = Harness()
    h.join("m1", topics=("t1", "t2"))
    h.join("m2")
    h.heartbeat("m1", h.group().members["m1"].member_epoch)
    g = h.group()
    before = (
        g.group_epoch,
        g.target_assignment_epoch,
        dict(g.target_assignment),
        dict(g.members),
        dict(g.initialized),
    )
    kinds = {rec.record_type(k) for p in h.log.values() for k, _ in p if k is not None}
    assert {10, 11, 12, 13, 14, 15} <= kinds
    h.restart()
    g = h.group()
    assert isinstance(g, ShareGroup)
    assert (
        g.group_epoch,
        g.target_assignment_epoch,
        dict(g.target_assignment),
        dict(g.members),
        dict(g.initialized),
    ) == before
    h.heartbeat("m2", -1)
    h.heartbeat("m1", -1)
    assert h.coordinator.delete_groups([G]) == {G: OK}
    h.restart()
    assert h.group() is None  # the tombstones deleted every record


# -- SHARE-46: share-partitions are initialized before they are assigned ---------------
@pytest.mark.spec("SHARE-46")
def test_partitions_are_initialized_through_the_persister_before_they_are_assigned():
    h = Harness()
    first = h.heartbeat("m1", 0, subscribed_topic_names=("t1",))
    assert first.error == OK and first.assignment == {}  # nothing initialized yet
    asked = [(k.topic_id, k.partition, start) for k, _, start in h.persister.initialized]
    assert asked == [(T1.topic_id, p, -1) for p in range(4)]
    assert all(epoch == first.member_epoch for _, epoch, _ in h.persister.initialized)
    second = h.heartbeat("m1", first.member_epoch)
    assert parts(second) == {("t1", p) for p in range(4)}
    assert second.member_epoch > first.member_epoch  # initialization moved the group epoch
    h.heartbeat("m1", second.member_epoch)
    assert len(h.persister.initialized) == 4  # each partition is initialized once


@pytest.mark.spec("SHARE-46")
def test_a_partition_that_failed_to_initialize_is_not_assigned_and_is_retried():
    h = Harness(topics=(TopicImage("t1", T1.topic_id, 2),))
    bad = SharePartitionKey(G, T1.topic_id, 1)
    h.persister.fail = {bad}
    joined = h.join("m1")
    assert parts(joined) == {("t1", 0)}
    assert set(h.group().initializing) == set()  # the failure left the initializing set
    h.persister.fail = set()
    result = h.heartbeat("m1", joined.member_epoch)  # asks again
    assert bad in [k for k, _, _ in h.persister.initialized]
    result = h.heartbeat("m1", result.member_epoch)
    assert parts(result) == {("t1", 0), ("t1", 1)}


@pytest.mark.spec("SHARE-46")
def test_nothing_is_assigned_while_the_persister_has_not_answered():
    h = Harness()
    h.hold_persister = True
    a = h.heartbeat("m1", 0, subscribed_topic_names=("t1",))
    b = h.heartbeat("m2", 0, subscribed_topic_names=("t1",))  # a new target, still nothing
    assert (a.assignment, b.assignment) == ({}, {})
    assert h.group().target_assignment_epoch == h.group().group_epoch
    assert len(h.persister_calls) == 1  # m2's join asked for no partition twice
    h.answer_persister()
    a = h.heartbeat("m1", a.member_epoch)
    b = h.heartbeat("m2", h.group().members["m2"].member_epoch)
    assert len(parts(a)) == len(parts(h.group().members["m2"].assigned)) == 2
    h.group().check_invariants()


@pytest.mark.spec("SHARE-47")
def test_an_empty_share_group_does_not_expire_and_commits_no_offsets():
    h = Harness(offsets_retention_minutes=1)
    joined = h.join("m1")
    h.heartbeat("m1", -1)
    h.clock.advance(10 * 60_000)
    h.coordinator.run_offset_expiration()
    assert isinstance(h.group(), ShareGroup) and h.group().state.wire_name == "Empty"
    assert joined.error == OK
    box = []
    h.coordinator.commit_offsets(
        G, "", None, -1, {TopicPartition("t1", 0): OffsetAndMetadata(1)}, box.append
    )
    assert box == [{TopicPartition("t1", 0): E.GROUP_ID_NOT_FOUND}]
    assert h.coordinator.fetch_offsets(G, None) == (E.GROUP_ID_NOT_FOUND, {})


# -- SHARE-49: the admin's offsets ------------------------------------------------------
def admin(h, method, *args):
    box = []
    getattr(h.coordinator.share_admin, method)(G, *args, lambda *result: box.append(result))
    assert len(box) == 1
    return box[0]


@pytest.mark.spec("SHARE-51")
def test_the_lag_is_the_end_offset_less_the_start_offset_and_the_done_records():
    h = Harness()
    h.join("m1")
    key = {p: SharePartitionKey(G, T1.topic_id, p) for p in range(4)}
    h.persister.summaries = {
        key[0]: ShareStateSummary(leader_epoch=7, start_offset=2, delivery_complete_count=3),
        key[1]: ShareStateSummary(start_offset=-1, delivery_complete_count=-1),  # not written
        key[2]: ShareStateSummary(start_offset=5, delivery_complete_count=-1),  # no count
        key[3]: ShareStateSummary(leader_epoch=7, start_offset=4, delivery_complete_count=0),
    }
    ordered = [(T1.topic_id, p) for p in range(4)]
    assert admin(h, "describe_offsets", ordered)[2][ordered[0]].lag == -1  # no end offsets
    asked = []

    async def end_offsets(pairs):
        asked.append(sorted(pairs))
        return {ordered[0]: (10, OK), ordered[3]: (-1, E.LEADER_NOT_AVAILABLE)}

    h.coordinator.share_admin.end_offsets = end_offsets
    error, _, described = admin(h, "describe_offsets", None)
    assert error == OK and asked == [[ordered[0], ordered[3]]]  # only those with a lag
    assert [described[pair] for pair in ordered] == [
        SharePartitionOffsets(start_offset=2, leader_epoch=7, lag=10 - 2 - 3),
        SharePartitionOffsets(start_offset=-1, leader_epoch=-1, lag=-1),
        SharePartitionOffsets(start_offset=5, leader_epoch=-1, lag=-1),
        # Kafka answers the end offset's error alone: start offset 0, leader epoch 0
        SharePartitionOffsets(
            0, 0, -1, E.LEADER_NOT_AVAILABLE, END_OFFSET_MESSAGES[E.LEADER_NOT_AVAILABLE]
        ),
    ]


@pytest.mark.spec("SHARE-49")
def test_offsets_are_read_reset_and_deleted_through_the_persister_of_an_empty_group_only():
    h = Harness()
    assert admin(h, "describe_offsets", None)[0] == E.GROUP_ID_NOT_FOUND
    joined = h.join("m1")
    t1_0 = (T1.topic_id, 0)
    error, _, described = admin(h, "describe_offsets", [t1_0, (T2.topic_id, 0)])
    assert error == OK and described[(T2.topic_id, 0)].start_offset == -1  # no state
    assert set(described) == {t1_0, (T2.topic_id, 0)}
    error, message, _ = admin(h, "alter_offsets", {(T1.topic_id, "t1", 0): 42})
    assert (error, message) == (E.NON_EMPTY_GROUP, f"Group {G} is not empty.")
    assert admin(h, "delete_offsets", {T1.topic_id: "t1"})[0] == E.NON_EMPTY_GROUP
    h.heartbeat("m1", -1)
    before = h.group().group_epoch
    h.persister.initialized.clear()
    error, _, results = admin(h, "alter_offsets", {(T1.topic_id, "t1", 0): 42})
    assert (error, results) == (OK, {t1_0: OK})
    [(key, state_epoch, start)] = h.persister.initialized
    assert (key.topic_id, key.partition, start) == (T1.topic_id, 0, 42)
    assert state_epoch > before  # a new state epoch fences the old state's writers
    error, _, results = admin(h, "delete_offsets", {T1.topic_id: "t1"})
    assert (error, results) == (OK, {T1.topic_id: OK})
    assert sorted(k.partition for k in h.persister.deleted) == [0, 1, 2, 3]
    assert T1.topic_id not in h.group().initialized
    assert joined.error == OK


@pytest.mark.spec("SHARE-49")
def test_altering_the_offsets_of_an_unknown_group_creates_it_empty_and_initialized():
    h = Harness()
    error, _, results = admin(h, "alter_offsets", {(T2.topic_id, "t2", 1): 7})
    assert (error, results) == (OK, {(T2.topic_id, 1): OK})
    g = h.group()
    assert isinstance(g, ShareGroup) and not g.members
    assert g.initialized == {T2.topic_id: ("t2", frozenset({1}))}
    h.restart()
    assert h.group().initialized == {T2.topic_id: ("t2", frozenset({1}))}

"""The consumer group protocol (KIP-848), rule by rule (spec/consumer_group.md).

Each test drives a real `GroupCoordinator` (its `ConsumerGroupCoordinator`) on a
`ManualClock` + `ManualScheduler`, with `__consumer_offsets` in memory behind its `append`,
as tests/unit/group/test_coordinator.py does for classic groups.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import ConsumerGroup, MemberState, assignment, partitions_of
from kafka_ref.group.consumer_group_assignors import AssignmentSpec, range_assign, uniform_assign
from kafka_ref.group.consumer_group_coordinator import ConsumerHeartbeat, TopicImage
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.group.group_metadata import GroupMetadata
from kafka_ref.protocol.messages import (
    APIS,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kafka_ref.record.batch import RecordBatch

OK = ErrorCode.NO_ERROR
E = ErrorCode
G = "cgroup"
T1 = TopicImage("t1", uuid.UUID(int=1), 6)
T2 = TopicImage("t2", uuid.UUID(int=2), 3)
SESSION = 45_000
REBALANCE = 30_000


class Harness:
    """A coordinator with its offsets partitions in memory; records survive `restart()`."""

    def __init__(self, topics=(T1, T2), **config):
        config.setdefault("offsets_topic_num_partitions", 4)
        self.config = GroupConfig(**config)
        self.clock = ManualClock(1_000_000)
        self.scheduler = ManualScheduler(self.clock)
        self.log: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        self.topics = list(topics)
        ids = itertools.count()
        self.new_uuid = lambda: f"u{next(ids)}"
        self.coordinator = self._start()

    def _append(self, partition, batch, done):
        for r in RecordBatch(batch).records():
            self.log.setdefault(partition, []).append((r.key, r.value))
        done(OK)

    def _start(self):
        c = GroupCoordinator(
            self.config, self.clock, self.scheduler.schedule, self._append, new_uuid=self.new_uuid
        )
        for p in range(self.config.offsets_topic_num_partitions):
            c.on_elected(p, list(self.log.get(p, [])))
        return c

    def restart(self):
        self.coordinator.shutdown()
        self.coordinator = self._start()

    def heartbeat(self, member_id, epoch, group=G, **fields):
        box = []
        hb = ConsumerHeartbeat(group_id=group, member_id=member_id, member_epoch=epoch, **fields)
        self.coordinator.consumer.heartbeat(hb, self.topics, box.append)
        assert len(box) == 1
        return box[0]

    def join(self, member_id, topics=("t1",), group=G, **fields):
        fields.setdefault("rebalance_timeout_ms", REBALANCE)
        fields.setdefault("owned", {})
        return self.heartbeat(
            member_id, 0, group=group, subscribed_topic_names=tuple(topics), **fields
        )

    def group(self, group_id=G) -> ConsumerGroup:
        return self.coordinator.manager.get_group(group_id)


def parts(result_or_assignment) -> set[tuple[str, int]]:
    """(topic name, partition) of an answer's or a member's assignment."""
    a = getattr(result_or_assignment, "assignment", result_or_assignment)
    names = {T1.topic_id: "t1", T2.topic_id: "t2"}
    return {(names[t], p) for t, ps in (a or {}).items() for p in ps}


def owned(*pairs) -> dict:
    ids = {"t1": T1.topic_id, "t2": T2.topic_id}
    return assignment((ids[t], [p]) for t, p in pairs)


# -- CGRP-1: the messages --------------------------------------------------------------
@pytest.mark.spec("CGRP-1")
def test_heartbeat_and_describe_are_declared_at_kafka_44s_versions():
    assert (APIS[68].name, APIS[68].min_version, APIS[68].max_version) == (
        "ConsumerGroupHeartbeat",
        0,
        1,
    )
    assert (APIS[69].name, APIS[69].min_version, APIS[69].max_version) == (
        "ConsumerGroupDescribe",
        0,
        1,
    )
    request = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rebalance_timeout_ms=300_000,
        subscribed_topic_names=["a"],
        subscribed_topic_regex="b.*",
        topic_partitions=[],
    )
    v1 = ConsumerGroupHeartbeatRequest.decode(1, ConsumerGroupHeartbeatRequest.encode(1, request))
    assert v1.subscribed_topic_regex == "b.*" and v1.topic_partitions == []
    # a null assignment ("unchanged") is an INT8 -1 marker, a present one 1 then the struct
    empty = ConsumerGroupHeartbeatResponse(member_epoch=3, heartbeat_interval_ms=5000)
    assert (
        ConsumerGroupHeartbeatResponse.decode(0, ConsumerGroupHeartbeatResponse.encode(0, empty))
        == empty
    )
    described = ConsumerGroupDescribeResponse.Member(member_id="m")
    assert described.member_type == -1  # v1's field, "unknown" by default


# -- CGRP-2, CGRP-3: what a heartbeat must be -------------------------------------------
@pytest.mark.spec("CGRP-2")
def test_invalid_heartbeats_are_refused_with_kafkas_errors():
    h = Harness(group_consumer_max_size=1)
    assert h.heartbeat("", 0, rebalance_timeout_ms=1, subscribed_topic_names=("t1",)).error == (
        E.INVALID_REQUEST
    )
    assert h.heartbeat("m", 0, subscribed_topic_names=("t1",)).error == E.INVALID_REQUEST
    assert h.heartbeat("m", 0, rebalance_timeout_ms=1).error == E.INVALID_REQUEST
    joined_owning = h.join("m", owned=owned(("t1", 0)))
    assert joined_owning.error == E.INVALID_REQUEST and "TopicPartitions" in joined_owning.message
    assert h.join("m", server_assignor="sticky").error == E.UNSUPPORTED_ASSIGNOR
    bad_regex = h.heartbeat("m", 0, rebalance_timeout_ms=1, subscribed_topic_regex="(", owned={})
    assert bad_regex.error == E.INVALID_REGULAR_EXPRESSION
    assert h.heartbeat("m", -2).error == E.INVALID_REQUEST  # -2 without an instance id
    assert h.join("m").error == OK
    assert h.join("n").error == E.GROUP_MAX_SIZE_REACHED  # group.consumer.max.size


@pytest.mark.spec("CGRP-3")
def test_member_epochs_are_checked():
    h = Harness()
    assert h.heartbeat("m", 1).error == E.GROUP_ID_NOT_FOUND  # no group yet
    a = h.join("a")
    assert a.error == OK and a.member_epoch == 1 and len(parts(a)) == 6
    assert h.heartbeat("b", 1).error == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("a", 2).error == E.FENCED_MEMBER_EPOCH  # from the future
    b = h.join("b")
    assert b.member_epoch == 2
    # a's answer with epoch 2 is lost: its previous epoch is accepted once it owns no more
    # than what it has, and it learns the new epoch
    a2 = h.heartbeat("a", 1, owned=owned(*sorted(parts(a))))
    assert a2.error == OK and a2.member_epoch == 1  # still revoking: epoch 1 is its own
    a3 = h.heartbeat("a", 1, owned=owned(*sorted(parts(a2))))
    assert a3.error == OK and a3.member_epoch == 2
    assert h.heartbeat("a", 1, owned=owned(*sorted(parts(a3)))).error == OK  # previous epoch
    assert h.heartbeat("a", 1, owned=owned(("t1", 0), ("t1", 1), ("t1", 2), ("t1", 3))).error == (
        E.FENCED_MEMBER_EPOCH
    )  # its previous epoch, but owning partitions it no longer has
    assert h.heartbeat("a", 1).error == E.FENCED_MEMBER_EPOCH  # previous, owning unknown


# -- CGRP-4: the group epoch ------------------------------------------------------------
@pytest.mark.spec("CGRP-4")
def test_group_epoch_moves_with_membership_subscriptions_and_metadata_only():
    h = Harness()
    h.join("a")
    group = h.group()
    assert (group.group_epoch, group.target_assignment_epoch) == (1, 1)
    h.heartbeat("a", 1)  # nothing changed
    h.heartbeat("a", 1, subscribed_topic_names=("t1",))  # the same subscription again
    assert group.group_epoch == 1
    a = h.heartbeat("a", 1, subscribed_topic_names=("t1", "t2"))  # a new subscription
    assert group.group_epoch == 2 and a.member_epoch == 2 and len(parts(a)) == 9
    h.topics = [TopicImage("t1", T1.topic_id, 8), T2]  # t1 grows
    a = h.heartbeat("a", 2)
    assert group.group_epoch == 3 and a.member_epoch == 3 and len(parts(a)) == 11
    h.join("b")
    assert group.group_epoch == 4
    assert h.heartbeat("b", group.members["b"].member_epoch).error == OK
    left = h.heartbeat("b", -1)
    assert left.error == OK and left.member_epoch == -1 and group.group_epoch == 5
    assert "b" not in group.members


# -- CGRP-8, CGRP-9: the assignors ------------------------------------------------------
SUBSCRIBERS = st.dictionaries(
    st.sampled_from(["m1", "m2", "m3", "m4", "m5"]),
    st.sets(st.sampled_from([T1.topic_id, T2.topic_id]), min_size=1).map(frozenset),
    min_size=1,
)


@pytest.mark.spec("CGRP-8")
@given(subscriptions=SUBSCRIBERS, counts=st.tuples(st.integers(0, 12), st.integers(0, 12)))
def test_uniform_assigns_every_partition_once_balanced_and_sticky(subscriptions, counts):
    partitions = {T1.topic_id: counts[0], T2.topic_id: counts[1]}
    spec = AssignmentSpec(subscriptions, partitions, {})
    first = uniform_assign(spec)
    _every_partition_once_to_a_subscriber(first, subscriptions, partitions)
    if len(set(subscriptions.values())) == 1:  # the same subscription: balanced to one
        sizes = [len(partitions_of(a)) for a in first.values()]
        assert max(sizes) - min(sizes) <= 1
    # a member leaves: the others keep what they had
    if len(subscriptions) > 1:
        gone = sorted(subscriptions)[0]
        rest = {m: s for m, s in subscriptions.items() if m != gone}
        second = uniform_assign(AssignmentSpec(rest, partitions, first))
        _every_partition_once_to_a_subscriber(second, rest, partitions)
        if len(set(subscriptions.values())) == 1:
            for m in rest:
                assert partitions_of(first[m]) <= partitions_of(second[m])


def _every_partition_once_to_a_subscriber(result, subscriptions, partitions):
    seen = []
    for member, a in result.items():
        for t, p in partitions_of(a):
            assert t in subscriptions[member]
            seen.append((t, p))
    subscribed = {t for s in subscriptions.values() for t in s}
    assert sorted(seen) == sorted((t, p) for t in subscribed for p in range(partitions[t]))


@pytest.mark.spec("CGRP-9")
def test_range_gives_contiguous_ranges_in_member_order():
    subs = {m: frozenset({T1.topic_id, T2.topic_id}) for m in ("b", "a", "c", "d")}
    result = range_assign(AssignmentSpec(subs, {T1.topic_id: 6, T2.topic_id: 3}, {}))
    assert result["a"] == {T1.topic_id: {0, 1}, T2.topic_id: {0}}
    assert result["b"] == {T1.topic_id: {2, 3}, T2.topic_id: {1}}
    assert result["c"] == {T1.topic_id: {4}, T2.topic_id: {2}}
    assert result["d"] == {T1.topic_id: {5}}
    h = Harness()
    h.join("a", server_assignor="range")
    h.join("b", server_assignor="range")
    assert h.group().target_assignment["a"] == {T1.topic_id: {0, 1, 2}}


# -- CGRP-10, CGRP-11: leaving, fencing, static members ---------------------------------
@pytest.mark.spec("CGRP-10")
def test_silent_and_slow_members_are_fenced():
    h = Harness(group_consumer_session_timeout_ms=SESSION)
    h.join("a")
    h.join("b", rebalance_timeout_ms=5_000)
    h.heartbeat("b", 2)  # b waits for a's partitions
    a = h.heartbeat("a", 1, owned=owned(*[("t1", p) for p in range(6)]))
    assert h.group().members["a"].state is MemberState.UNREVOKED_PARTITIONS and a.member_epoch == 1
    h.scheduler.advance(4_000)
    h.heartbeat("b", 2)
    assert "a" in h.group().members  # within its rebalance timeout
    h.scheduler.advance(27_000)  # a never says it revoked: past its rebalance timeout
    assert "a" not in h.group().members and h.group().group_epoch == 3
    assert h.heartbeat("a", 1).error == E.UNKNOWN_MEMBER_ID  # it must rejoin
    b = h.heartbeat("b", 2)
    assert b.member_epoch == 3 and len(parts(b)) == 6  # everything is b's now
    h.scheduler.advance(SESSION)  # b falls silent: fenced at its session timeout
    assert h.group().members == {} and h.group().state.wire_name == "Empty"
    assert h.group().owners == {}


@pytest.mark.spec("CGRP-11")
def test_a_static_member_comes_back_to_its_assignment():
    h = Harness(group_consumer_session_timeout_ms=SESSION)
    a = h.join("a1", instance_id="i-a")
    h.join("b", instance_id="i-b")
    for _ in range(3):
        a = h.heartbeat("a1", h.group().members["a1"].member_epoch, owned=owned(*parts(a)))
        h.heartbeat("b", h.group().members["b"].member_epoch)
    before, epoch = parts(h.group().members["a1"].assigned), h.group().group_epoch
    assert h.join("a2", instance_id="i-a").error == E.UNRELEASED_INSTANCE_ID
    left = h.heartbeat("a1", h.group().members["a1"].member_epoch, instance_id="i-a")
    left = h.heartbeat("a1", -2, instance_id="i-a")
    assert left.error == OK and left.member_epoch == -2
    assert h.group().members["a1"].member_epoch == -2 and h.group().group_epoch == epoch
    back = h.join("a2", instance_id="i-a")  # a new process, the same instance
    assert back.error == OK and parts(back) == before and h.group().group_epoch == epoch
    assert "a1" not in h.group().members and h.heartbeat("a1", 1).error == E.UNKNOWN_MEMBER_ID
    h.heartbeat("a2", back.member_epoch, instance_id="i-a")
    h.heartbeat("a2", -2, instance_id="i-a")
    for _ in range(3):  # away longer than its session (b heartbeats): its place is gone
        h.scheduler.advance(SESSION // 2)
        h.heartbeat("b", h.group().members["b"].member_epoch)
    assert "a2" not in h.group().members and h.group().group_epoch == epoch + 1


# -- CGRP-12: offsets of a consumer group ------------------------------------------------
@pytest.mark.spec("CGRP-12")
def test_offset_commits_and_fetches_are_checked_by_member_epoch():
    h = Harness()
    h.join("a")
    c = h.coordinator
    tp = TopicPartition("t1", 0)
    box = []
    c.commit_offsets(G, "a", None, 1, {tp: OffsetAndMetadata(5)}, box.append, api_version=9)
    assert box.pop() == {tp: OK}
    c.commit_offsets(G, "a", None, 0, {tp: OffsetAndMetadata(6)}, box.append, api_version=9)
    assert box.pop() == {tp: E.STALE_MEMBER_EPOCH}
    c.commit_offsets(G, "x", None, 1, {tp: OffsetAndMetadata(6)}, box.append, api_version=9)
    assert box.pop() == {tp: E.UNKNOWN_MEMBER_ID}
    c.commit_offsets(G, "a", None, 1, {tp: OffsetAndMetadata(6)}, box.append, api_version=8)
    assert box.pop() == {tp: E.UNSUPPORTED_VERSION}
    c.commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(6)}, box.append, api_version=9)
    assert box.pop() == {tp: E.UNKNOWN_MEMBER_ID}  # from outside, while it has members
    assert c.fetch_offsets(G, [tp], ("a", 1))[1][tp].offset == 5
    assert c.fetch_offsets(G, [tp], ("a", 0))[0] == E.STALE_MEMBER_EPOCH
    assert c.fetch_offsets(G, [tp], ("z", 1))[0] == E.UNKNOWN_MEMBER_ID
    assert c.fetch_offsets(G, [tp])[1][tp].offset == 5  # an admin's fetch


# -- CGRP-13: durable in __consumer_offsets ---------------------------------------------
@pytest.mark.spec("CGRP-13")
def test_a_restarted_coordinator_has_every_member_back():
    h = Harness()
    a = h.join("a", instance_id="i-a", rack_id="r1")
    h.join("b", topics=("t1", "t2"), server_assignor="uniform")
    a = h.heartbeat("a", 1, owned=owned(*parts(a)))  # a revokes some, still at epoch 1
    before = h.group()
    members, target = dict(before.members), dict(before.target_assignment)
    epochs = (before.group_epoch, before.target_assignment_epoch, before.metadata_hash)
    box = []
    tp = TopicPartition("t1", 0)
    h.coordinator.commit_offsets(G, "a", None, 1, {tp: OffsetAndMetadata(7)}, box.append, 9)
    h.restart()
    after = h.group()
    assert after is not before and after.members == members
    assert after.target_assignment == target
    assert (after.group_epoch, after.target_assignment_epoch, after.metadata_hash) == epochs
    assert after.static_members == {"i-a": "a"} and after.offsets[tp].offset == 7
    after.check_invariants()
    # and it goes on from there: a member that left is gone after a restart too
    assert h.heartbeat("b", members["b"].member_epoch, owned={}).error == OK
    assert h.heartbeat("b", -1).error == OK
    h.restart()
    assert set(h.group().members) == {"a"}


# -- CGRP-14, CGRP-15: one coordinator, two protocols -----------------------------------
def classic_join(h, member_id="", group=G):
    box = []
    h.coordinator.rebalance.join_group(
        group,
        member_id,
        None,
        False,
        "c",
        "/h",
        30_000,
        10_000,
        "consumer",
        [("range", b"")],
        box.append,
    )
    h.scheduler.run_due()
    return box


@pytest.mark.spec("CGRP-14")
def test_an_empty_group_changes_protocol_and_keeps_its_offsets():
    h = Harness(group_initial_rebalance_delay_ms=0)
    tp = TopicPartition("t1", 0)
    box = []
    h.coordinator.commit_offsets(G, "", None, -1, {tp: OffsetAndMetadata(3)}, box.append)
    assert isinstance(h.group(), GroupMetadata)
    assert h.join("a").error == OK
    assert isinstance(h.group(), ConsumerGroup) and h.group().offsets[tp].offset == 3
    assert h.heartbeat("a", -1).error == OK
    joined = classic_join(h)
    assert joined[0].error == OK and isinstance(h.group(), GroupMetadata)
    assert h.group().offsets[tp].offset == 3
    h.restart()  # the conversions are in the log: a classic group comes back
    assert isinstance(h.group(), GroupMetadata) and h.group().offsets[tp].offset == 3


@pytest.mark.spec("CGRP-15")
def test_a_group_in_use_keeps_its_protocol():
    h = Harness(group_initial_rebalance_delay_ms=0)
    h.join("a")
    assert classic_join(h)[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert classic_join(h, group="classic")[0].error == OK
    refused = h.join("b", group="classic")
    assert refused.error == E.GROUP_ID_NOT_FOUND and "not a consumer group" in refused.message
    assert h.coordinator.rebalance.heartbeat(G, "a", None, 1) == E.UNKNOWN_MEMBER_ID


# -- CGRP-16, CGRP-17: listing, describing, regex subscriptions -------------------------
@pytest.mark.spec("CGRP-16")
def test_groups_are_listed_with_their_type():
    h = Harness(group_initial_rebalance_delay_ms=0)
    h.join("a")
    classic_join(h, group="classic")
    error, groups = h.coordinator.list_groups()
    assert error == OK
    by_id = {g.group_id: (g.group_type, g.state, g.protocol_type) for g in groups}
    assert by_id[G] == ("consumer", "Stable", "consumer")
    assert by_id["classic"][0] == "classic"
    assert [g.group_id for g in h.coordinator.list_groups(types_filter=["Consumer"])[1]] == [G]
    error, summary = h.coordinator.describe_group(G)
    assert summary.group_type == "consumer" and summary.state == "Dead"


@pytest.mark.spec("CGRP-17")
def test_a_regex_subscribes_to_every_topic_it_matches_and_to_new_ones():
    h = Harness(topics=(T1, T2, TopicImage("__consumer_offsets", uuid.UUID(int=9), 4)))
    a = h.heartbeat("a", 0, rebalance_timeout_ms=1, subscribed_topic_regex="t.*", owned={})
    assert a.error == OK and len(parts(a)) == 9  # t1 and t2
    h.topics.append(TopicImage("t3", uuid.UUID(int=3), 2))
    a = h.heartbeat("a", a.member_epoch)  # a topic that matches appears: a new epoch
    assert a.member_epoch == 2 and len(partitions_of(a.assignment)) == 11
    h.topics.append(TopicImage("x", uuid.UUID(int=4), 2))
    assert h.heartbeat("a", 2).member_epoch == 2  # one that does not: nothing changes
    only_t1 = h.heartbeat("a", 2, subscribed_topic_regex="t1")  # whole-name match
    assert h.group().group_epoch == 3 and parts(only_t1) == {("t1", p) for p in range(6)}
    internal = h.heartbeat(  # another group: internal topics are not skipped
        "b", 0, group="g2", rebalance_timeout_ms=1, subscribed_topic_regex="__.*", owned={}
    )
    assert internal.assignment == {uuid.UUID(int=9): frozenset(range(4))}

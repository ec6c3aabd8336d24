"""The group coordinator, rule by rule (spec/rebalance.md, spec/offsets.md).

Each test drives a real `GroupCoordinator` on a `ManualClock` + `ManualScheduler`, with an
in-memory `__consumer_offsets` (a list of records per partition) behind its `append`.
"""

from __future__ import annotations

import itertools

import pytest

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.group.group_metadata import (
    COMPLETE_EMPTY_JOIN,
    COMPLETE_JOIN,
    COMPLETE_SYNC,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARE_REBALANCE,
    PREPARING_REBALANCE,
    REMOVE_GROUP,
    STABLE,
    TRANSITIONS,
    GroupMetadata,
    GroupState,
    IllegalGroupStateError,
    MemberMetadata,
)
from kafka_ref.group.group_metadata_manager import java_string_hashcode, partition_for
from kafka_ref.group.messages import LeavingMember
from kafka_ref.record.batch import RecordBatch

OK = ErrorCode.NO_ERROR
E = ErrorCode
G = "group-a"
SESSION = 10_000
REBALANCE = 30_000
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Harness:
    """A coordinator with its offsets partitions in memory; records survive `restart()`."""

    def __init__(self, **config):
        config.setdefault("offsets_topic_num_partitions", 4)
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        self.config = GroupConfig(**config)
        self.clock = ManualClock(1_000_000)
        self.scheduler = ManualScheduler(self.clock)
        self.log: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        self.fail_appends: ErrorCode | None = None
        self.held: list = []  # appends waiting when hold_appends is set
        self.hold_appends = False
        ids = itertools.count()
        self.new_uuid = lambda: f"u{next(ids)}"
        self.coordinator = self._start()

    def _append(self, partition, batch, done):
        if self.fail_appends is not None:
            return done(self.fail_appends)

        def write():
            for r in RecordBatch(batch).records():
                self.log.setdefault(partition, []).append((r.key, r.value))
            done(OK)

        if self.hold_appends:
            self.held.append(write)
        else:
            write()

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
        return self.coordinator

    def advance(self, ms):
        self.scheduler.advance(ms)

    # -- calls that collect the callback's answer --
    def join(
        self, member_id="", group=G, instance=None, protocols=None, known=False, settle=True, **kw
    ):
        """JoinGroup; then, with `settle`, the timers due now run, as the broker's event
        loop runs a zero-delay timer right after the request (REBAL-17)."""
        box = []
        self.coordinator.rebalance.join_group(
            group,
            member_id,
            instance,
            known,
            kw.get("client_id", "c"),
            "/127.0.0.1",
            kw.get("rebalance", REBALANCE),
            kw.get("session", SESSION),
            kw.get("protocol_type", "consumer"),
            [("range", b"sub")] if protocols is None else protocols,
            box.append,
        )
        if settle:
            self.scheduler.run_due()
        return box

    def sync(self, member_id, generation, assignments=None, group=G, instance=None):
        box = []
        self.coordinator.rebalance.sync_group(
            group, generation, member_id, instance, "consumer", None, assignments or {}, box.append
        )
        return box

    def commit(self, offsets, member_id="", generation=-1, group=G, instance=None):
        box = []
        self.coordinator.commit_offsets(group, member_id, instance, generation, offsets, box.append)
        return box[0] if box else None

    def group(self, group_id=G) -> GroupMetadata:
        return self.coordinator.manager.get_group(group_id)

    def stable_group(self, n=2, **kw):
        """n members joined and synced; returns (member ids, generation)."""
        boxes: dict[str, list] = {}
        for _ in range(n):
            box = self.join(**kw)
            for m in list(boxes):  # the others rejoin, which completes the round
                boxes[m] = self.join(m, **kw)
            boxes[box[0].member_id] = box
        results = [b[0] for b in boxes.values()]
        gen, leader = results[0].generation_id, results[0].leader_id
        assert all(r.error == OK and r.generation_id == gen for r in results)
        members = list(boxes)
        for m in sorted(members, key=lambda m: m == leader):  # followers first
            plan = {x: x.encode() for x in members} if m == leader else {}
            self.sync(m, gen, plan, instance=kw.get("instance"))
        assert self.group().state is STABLE
        return members, gen


def om(offset, metadata=""):
    return OffsetAndMetadata(offset, metadata=metadata)


# -- REBAL-1, REBAL-2, REBAL-9: the two rounds ------------------------------------------
@pytest.mark.spec("REBAL-9", "REBAL-15")
def test_join_completes_with_generation_protocol_and_leader():
    h = Harness()
    a = h.join(protocols=[("range", b"A"), ("roundrobin", b"a")])
    assert a[0].error == OK and a[0].generation_id == 1 and a[0].leader_id == a[0].member_id
    assert a[0].member_id == "c-u0" and a[0].protocol_name == "range"
    # a second member that prefers roundrobin: a rejoin round, then the vote
    b = h.join(protocols=[("roundrobin", b"b"), ("range", b"B")])
    assert b == [] and h.group().state is PREPARING_REBALANCE
    a2 = h.join(a[0].member_id, protocols=[("roundrobin", b"a"), ("range", b"A")])
    assert a2[0].generation_id == 2 and b[0].generation_id == 2
    assert a2[0].protocol_name == b[0].protocol_name == "roundrobin"
    assert {(m.member_id, m.metadata) for m in a2[0].members} == {
        (a[0].member_id, b"a"),
        (b[0].member_id, b"b"),
    }
    assert b[0].members == [] and b[0].leader_id == a[0].member_id
    assert h.group().state is COMPLETING_REBALANCE


@pytest.mark.spec("REBAL-9")
def test_inconsistent_protocols_are_refused():
    h = Harness()
    h.join(protocols=[("range", b"")])
    assert h.join(protocols=[("roundrobin", b"")])[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect")[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert Harness().join(protocols=[])[0].error == E.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.spec("REBAL-1", "REBAL-2", "REBAL-15")
def test_followers_wait_for_the_leader_and_get_its_assignment():
    h = Harness()
    a = h.join()[0]
    b = h.join()
    a2 = h.join(a.member_id)[0]
    leader, follower = a2.member_id, b[0].member_id
    waiting = h.sync(follower, 2)
    assert waiting == [] and h.group().state is COMPLETING_REBALANCE
    # the leader's map names a stranger too: ignored
    done = h.sync(leader, 2, {leader: b"L", follower: b"F", "stranger": b"X"})
    assert done[0].assignment == b"L" and waiting[0].assignment == b"F"
    assert waiting[0].protocol_name == "range" and h.group().state is STABLE
    # a retried sync in Stable gets the same bytes again
    assert h.sync(follower, 2)[0].assignment == b"F"


@pytest.mark.spec("REBAL-2")
def test_a_member_left_out_by_the_leader_gets_an_empty_assignment():
    h = Harness()
    a = h.join()[0]
    b = h.join()
    a2 = h.join(a.member_id)[0]
    assert h.sync(a2.member_id, 2, {a2.member_id: b"all"})[0].assignment == b"all"
    assert h.sync(b[0].member_id, 2)[0].assignment == b""


@pytest.mark.spec("REBAL-2")
def test_a_failed_group_write_fails_every_waiting_sync_and_rebalances():
    h = Harness()
    a = h.join()[0]
    b = h.join()
    a2 = h.join(a.member_id)[0]
    waiting = h.sync(b[0].member_id, 2)
    h.fail_appends = E.NOT_LEADER_OR_FOLLOWER
    leader = h.sync(a2.member_id, 2, {a2.member_id: b"x"})
    assert leader[0].error == waiting[0].error == E.NOT_COORDINATOR
    assert h.group().state is PREPARING_REBALANCE


# -- REBAL-3, REBAL-4, REBAL-5 ---------------------------------------------------------
@pytest.mark.spec("REBAL-3")
def test_stale_generation_is_illegal_generation():
    h = Harness()
    (a, _b), gen = h.stable_group()
    assert h.coordinator.rebalance.heartbeat(G, a, None, gen - 1) == E.ILLEGAL_GENERATION
    assert h.sync(a, gen + 1)[0].error == E.ILLEGAL_GENERATION
    assert h.commit({TP0: om(1)}, a, gen - 1) == {TP0: E.ILLEGAL_GENERATION}
    assert h.coordinator.rebalance.heartbeat(G, a, None, gen) == OK


@pytest.mark.spec("REBAL-4")
def test_unknown_members_are_unknown_member_id():
    h = Harness()
    assert h.join("ghost")[0].error == E.UNKNOWN_MEMBER_ID  # no such group
    (_a, _b), gen = h.stable_group()
    assert h.join("ghost")[0].error == E.UNKNOWN_MEMBER_ID
    assert h.sync("ghost", gen)[0].error == E.UNKNOWN_MEMBER_ID
    assert h.coordinator.rebalance.heartbeat(G, "ghost", None, gen) == E.UNKNOWN_MEMBER_ID
    assert h.coordinator.rebalance.heartbeat("other", "ghost", None, 1) == E.UNKNOWN_MEMBER_ID
    assert h.commit({TP0: om(1)}, "ghost", gen) == {TP0: E.UNKNOWN_MEMBER_ID}
    assert h.coordinator.rebalance.leave_group(G, [("ghost", None)]) == (
        OK,
        [("ghost", None, E.UNKNOWN_MEMBER_ID)],
    )
    # LeaveGroup v5 gives a reason; a group that does not exist answers each member the same
    leaving = [LeavingMember("ghost", "i-1", "shutting down")]
    assert h.coordinator.rebalance.leave_group("no-such-group", leaving) == (
        OK,
        [("ghost", "i-1", E.UNKNOWN_MEMBER_ID)],
    )


@pytest.mark.spec("REBAL-5")
def test_heartbeats_and_syncs_during_a_rebalance_say_rebalance_in_progress():
    h = Harness()
    (a, b), gen = h.stable_group()
    h.join(a)  # the leader rejoins: a rebalance starts
    assert h.group().state is PREPARING_REBALANCE
    assert h.coordinator.rebalance.heartbeat(G, b, None, gen) == E.REBALANCE_IN_PROGRESS
    assert h.sync(b, gen)[0].error == E.REBALANCE_IN_PROGRESS
    h.join(b)
    assert h.group().state is COMPLETING_REBALANCE
    assert h.coordinator.rebalance.heartbeat(G, b, None, gen + 1) == OK


@pytest.mark.spec("REBAL-5")
def test_a_waiting_sync_is_told_to_rejoin_when_a_new_rebalance_starts():
    h = Harness()
    a = h.join()[0]
    b = h.join()
    a2 = h.join(a.member_id)[0]
    waiting = h.sync(b[0].member_id, a2.generation_id)
    h.join()  # a third member arrives before the leader syncs
    assert waiting[0].error == E.REBALANCE_IN_PROGRESS


# -- REBAL-6, REBAL-7, REBAL-8, REBAL-12, REBAL-13 ----------------------------------------
@pytest.mark.spec("REBAL-6")
def test_session_expiry_removes_the_member_and_rebalances():
    h = Harness()
    (a, b), gen = h.stable_group()
    h.advance(SESSION // 2)
    assert h.coordinator.rebalance.heartbeat(G, a, None, gen) == OK  # a keeps beating, b does not
    h.advance(SESSION // 2 - 1)
    assert h.group().has(b) and h.group().state is STABLE
    h.advance(1)
    assert not h.group().has(b) and h.group().state is PREPARING_REBALANCE
    rejoin = h.join(a)
    assert rejoin[0].generation_id == gen + 1 and [m.member_id for m in rejoin[0].members] == [a]


@pytest.mark.spec("REBAL-6")
def test_the_last_member_expiring_leaves_the_group_empty_in_a_new_generation():
    h = Harness()
    (a,), gen = h.stable_group(n=1)
    h.advance(SESSION)
    assert h.group().state is EMPTY and h.group().generation_id == gen + 1
    assert h.coordinator.rebalance.heartbeat(G, a, None, gen) == E.UNKNOWN_MEMBER_ID


@pytest.mark.spec("REBAL-6")
def test_a_member_parked_in_joingroup_does_not_expire():
    h = Harness()
    (a, b), _gen = h.stable_group()
    h.join(a)  # a waits for b to rejoin
    h.advance(SESSION + 1)  # neither heartbeats; b expires, a is waiting, not silent
    assert h.group().has(a) and not h.group().has(b)


@pytest.mark.spec("REBAL-7")
def test_members_that_do_not_rejoin_in_the_rebalance_timeout_are_removed():
    h = Harness()
    (a, b), gen = h.stable_group(session=60_000, rebalance=20_000)
    joined = h.join(a, session=60_000, rebalance=20_000)
    h.advance(19_999)
    assert joined == []
    h.advance(1)
    assert joined[0].generation_id == gen + 1 and not h.group().has(b)


@pytest.mark.spec("REBAL-4", "REBAL-7", "REBAL-18")
def test_a_member_removed_for_missing_the_rebalance_is_answered_unknown_member_id_at_once():
    """A consumer that stopped polling heartbeats on through the rebalance (REBAL-5), is
    removed when the rebalance timeout (its max.poll.interval.ms) runs out, and from then on
    every request of its old member id is answered at once with UNKNOWN_MEMBER_ID, as
    Kafka's validateCurrentMember answers: nothing is parked, nothing retried forever. With
    a fresh id it joins as a new member."""
    h = Harness()
    (a, b), gen = h.stable_group(session=10_000, rebalance=20_000)
    joined = h.join(a, session=10_000, rebalance=20_000)  # b does not rejoin: it is not polling
    for _ in range(3):
        h.advance(5_000)
        assert h.coordinator.rebalance.heartbeat(G, b, None, gen) == E.REBALANCE_IN_PROGRESS
    h.advance(5_000)
    assert joined[0].generation_id == gen + 1 and not h.group().has(b)
    assert h.coordinator.rebalance.heartbeat(G, b, None, gen) == E.UNKNOWN_MEMBER_ID
    assert h.sync(b, gen)[0].error == E.UNKNOWN_MEMBER_ID
    assert h.commit({TP0: om(5)}, b, gen) == {TP0: E.UNKNOWN_MEMBER_ID}
    assert h.coordinator.rebalance.leave_group(G, [(b, None)]) == (
        OK,
        [(b, None, E.UNKNOWN_MEMBER_ID)],
    )
    assert h.join(b)[0].error == E.UNKNOWN_MEMBER_ID
    assert h.join("", known=True)[0].error == E.MEMBER_ID_REQUIRED


@pytest.mark.spec("REBAL-8")
def test_initial_rebalance_delay_waits_for_members_starting_together():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    a = h.join(rebalance=10_000)
    h.advance(2000)
    b = h.join(rebalance=10_000)  # a new member during the delay extends it
    h.advance(1000)
    assert a == [] and b == []
    h.advance(3000)
    assert a[0].generation_id == b[0].generation_id == 1
    assert len(a[0].members) + len(b[0].members) == 2


@pytest.mark.spec("REBAL-8")
def test_initial_delay_without_newcomers_completes_after_one_delay():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    a = h.join()
    h.advance(2999)
    assert a == []
    h.advance(1)
    assert a[0].error == OK and a[0].generation_id == 1


@pytest.mark.spec("REBAL-17")
def test_zero_delay_completes_the_first_join_on_its_timer_not_inside_the_join_group():
    h = Harness()  # group.initial.rebalance.delay.ms=0
    a = h.join(settle=False)
    assert a == [] and h.group().state is PREPARING_REBALANCE
    b = h.join(settle=False)  # handled before the 0 ms timer fires: same generation
    h.scheduler.run_due()
    assert a[0].generation_id == b[0].generation_id == 1
    assert len(a[0].members) + len(b[0].members) == 2


@pytest.mark.spec("REBAL-17")
def test_zero_delay_does_not_wait_for_pending_members():
    h = Harness()
    waiting = h.join(known=True)[0].member_id  # KIP-394: has its id, has not joined with it
    new_id = h.join(known=True)[0].member_id
    joined = h.join(new_id, known=True)
    assert joined[0].error == OK and joined[0].generation_id == 1
    assert list(h.group().members) == [new_id] and h.group().is_pending_member(waiting)


@pytest.mark.spec("REBAL-17")
def test_zero_delay_a_later_member_starts_the_next_rebalance():
    h = Harness()
    a = h.join(instance="i-a")[0]  # static members: no MEMBER_ID_REQUIRED round
    assert a.generation_id == 1 and [m.member_id for m in a.members] == [a.member_id]
    b = h.join(instance="i-b")  # the first generation is over: b starts the next one
    assert b == [] and h.group().state is PREPARING_REBALANCE
    assert h.sync(a.member_id, 1, {a.member_id: b"all"}, instance="i-a")[0].error == (
        E.REBALANCE_IN_PROGRESS
    )
    again = h.join(a.member_id, instance="i-a")[0]
    assert again.generation_id == b[0].generation_id == 2 and len(again.members) == 2


@pytest.mark.spec("REBAL-12")
def test_leave_group_removes_the_member_and_rebalances():
    h = Harness()
    (a, b), gen = h.stable_group()
    assert h.coordinator.rebalance.leave_group(G, [(b, None)]) == (OK, [(b, None, OK)])
    assert h.group().state is PREPARING_REBALANCE and not h.group().has(b)
    assert h.join(a)[0].generation_id == gen + 1
    assert h.coordinator.rebalance.leave_group(G, [(a, None)])[1][0][2] == OK
    assert h.group().state is PREPARING_REBALANCE or h.group().state is EMPTY


@pytest.mark.spec("REBAL-13")
def test_members_that_never_sync_are_removed_after_the_rebalance_timeout():
    h = Harness()
    a = h.join()[0]
    b = h.join()
    a2 = h.join(a.member_id)[0]
    follower = b[0].member_id
    h.sync(a2.member_id, 2, {a2.member_id: b"x", follower: b"y"})
    h.coordinator.rebalance.heartbeat(G, follower, None, 2)
    for _ in range(4):  # the leader keeps beating; the follower beats but never syncs
        h.advance(SESSION - 1)
        beat = h.coordinator.rebalance.heartbeat(G, a2.member_id, None, 2)
        assert beat in (OK, E.REBALANCE_IN_PROGRESS)
        h.coordinator.rebalance.heartbeat(G, follower, None, 2)
    assert not h.group().has(follower) and h.group().has(a2.member_id)


# -- REBAL-10, REBAL-11 ----------------------------------------------------------------
@pytest.mark.spec("REBAL-10")
def test_member_id_required_then_join_with_it():
    h = Harness()
    first = h.join(known=True, client_id="app")
    assert first[0].error == E.MEMBER_ID_REQUIRED and first[0].member_id == "app-u0"
    assert h.group().pending_members == {"app-u0"}
    second = h.join("app-u0", known=True)
    assert second[0].error == OK and second[0].member_id == "app-u0"


@pytest.mark.spec("REBAL-10")
def test_a_pending_member_that_never_returns_expires_and_stops_blocking_the_rebalance():
    h = Harness()
    (a,), _gen = h.stable_group(n=1)
    h.join(known=True)  # pending
    joined = h.join(a)
    assert joined == []  # waits for the pending member
    h.advance(SESSION)
    assert joined[0].error == OK and h.group().pending_members == set()


@pytest.mark.spec("REBAL-11")
def test_static_member_rejoin_keeps_the_group_stable_and_fences_the_old_id():
    h = Harness()
    x = h.join(instance="i-x")[0]
    y = h.join(instance="i-y")
    x2 = h.join(x.member_id, instance="i-x")[0]
    gen = x2.generation_id
    h.sync(x2.member_id, gen, {x2.member_id: b"X", y[0].member_id: b"Y"}, instance="i-x")
    h.sync(y[0].member_id, gen, instance="i-y")
    old = y[0].member_id
    # i-y restarts: joins with no member id
    again = h.join(instance="i-y")[0]
    assert again.error == OK and again.member_id == "i-y-u2" and again.generation_id == gen
    assert again.leader_id == x2.member_id and h.group().state is STABLE
    assert h.sync(again.member_id, gen, instance="i-y")[0].assignment == b"Y"
    # the old instance is fenced everywhere
    assert h.coordinator.rebalance.heartbeat(G, old, "i-y", gen) == E.FENCED_INSTANCE_ID
    assert h.sync(old, gen, instance="i-y")[0].error == E.FENCED_INSTANCE_ID
    assert h.join(old, instance="i-y")[0].error == E.FENCED_INSTANCE_ID
    assert h.commit({TP0: om(1)}, old, gen, instance="i-y") == {TP0: E.FENCED_INSTANCE_ID}
    assert h.coordinator.rebalance.leave_group(G, [(old, "i-y")])[1][0][2] == E.FENCED_INSTANCE_ID
    # an admin removes a static member by instance id alone
    assert h.coordinator.rebalance.leave_group(G, [("", "i-y")])[1][0][2] == OK
    assert h.group().state is PREPARING_REBALANCE


@pytest.mark.spec("REBAL-11", "REBAL-7")
def test_static_members_survive_a_rebalance_they_miss_until_their_session_expires():
    h = Harness()
    x = h.join(instance="i-x", session=20_000)[0]
    y = h.join(instance="i-y", session=20_000)
    x2 = h.join(x.member_id, instance="i-x", session=20_000)[0]
    h.sync(x2.member_id, 2, {}, instance="i-x")
    h.sync(y[0].member_id, 2, instance="i-y")
    h.join(x2.member_id, instance="i-x", session=20_000, rebalance=5000)  # leader rejoins
    h.advance(5000)
    assert h.group().has(y[0].member_id)  # static: not dropped by the rebalance timeout


# -- REBAL-14, REBAL-15, REBAL-16 ------------------------------------------------------
@pytest.mark.spec("REBAL-14")
def test_join_validation():
    h = Harness(group_max_size=1)
    assert h.join(session=5999)[0].error == E.INVALID_SESSION_TIMEOUT
    assert h.join(session=1_800_001)[0].error == E.INVALID_SESSION_TIMEOUT
    assert h.join(group="")[0].error == E.INVALID_GROUP_ID
    assert h.coordinator.rebalance.heartbeat("", "m", None, 1) == E.INVALID_GROUP_ID
    h.stable_group(n=1)
    assert h.join()[0].error == E.GROUP_MAX_SIZE_REACHED


# Kafka `GroupMetadata.validPreviousStates`: the states each state may be entered from
KAFKA_VALID_PREVIOUS_STATES = {
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    EMPTY: {PREPARING_REBALANCE},
}


@pytest.mark.spec("REBAL-15")
def test_state_transitions_follow_kafka():
    entered_from = {state: set() for state in GroupState}
    for transition in TRANSITIONS:
        entered_from[transition.target] |= transition.sources
    assert entered_from == KAFKA_VALID_PREVIOUS_STATES
    g = GroupMetadata("g", EMPTY, 0)
    with pytest.raises(IllegalGroupStateError, match="CompleteSync from Empty"):
        g.transition(COMPLETE_SYNC, 1)
    for transition in (
        PREPARE_REBALANCE,
        COMPLETE_JOIN,
        COMPLETE_SYNC,
        PREPARE_REBALANCE,
        COMPLETE_EMPTY_JOIN,
        REMOVE_GROUP,
    ):
        g.transition(transition, 2)
        assert g.state is transition.target
    assert g.current_state_timestamp == 2 and STABLE.wire_name == "Stable"
    h = Harness()
    (a, b), _gen = h.stable_group()
    desc = h.coordinator.describe_group(G)[1]
    assert desc.state == "Stable" and desc.protocol_name == "range"
    assert {m.assignment for m in desc.members} == {a.encode(), b.encode()}
    assert h.coordinator.describe_group("nope")[1].state == "Dead"
    assert [(o.group_id, o.state) for o in h.coordinator.list_groups()[1]] == [(G, "Stable")]


# -- REBAL-28 --------------------------------------------------------------------------
def broken_promises(group: GroupMetadata) -> list[str]:
    """What REBAL-28 says the group's state holds and the group does not, read from its
    records (not from the coordinator's own assertion)."""
    members = list(group.members.values())
    broken = []
    if group.is_(EMPTY) and members:
        broken.append("Empty with members")
    if group.is_(PREPARING_REBALANCE):
        if group.join_timer is None:
            broken.append("PreparingRebalance with no join timer")
        if group.pending_sync_members or any(m.is_awaiting_sync for m in members):
            broken.append("PreparingRebalance waiting for a SyncGroup")
    if group.is_(COMPLETING_REBALANCE) or group.is_(STABLE):
        if group.generation_id < 1 or not members or group.leader_id not in group.members:
            broken.append(f"{group.state.wire_name} without a generation or a leader")
        if not all(group.protocol_name in m.protocols() for m in members):
            broken.append(f"{group.state.wire_name} with a protocol not everyone supports")
    if group.is_(COMPLETING_REBALANCE) and any(m.is_awaiting_join for m in members):
        broken.append("CompletingRebalance waiting for a JoinGroup")
    if group.is_(STABLE) and any(m.is_awaiting_sync for m in members):
        broken.append("Stable waiting for a SyncGroup")
    return broken


@pytest.mark.spec("REBAL-28")
def test_each_state_holds_what_it_promises():
    """Through every state and every kind of event (new, pending and static members, syncs,
    a failed write, leaving, session, rebalance and pending-sync timeouts), the group holds
    after each step what its state promises."""
    h = Harness(group_initial_rebalance_delay_ms=3000)
    seen = set()

    def check(step: str) -> None:
        group = h.group()
        assert broken_promises(group) == [], step
        seen.add(group.state)

    h.join(known=True)
    check("a member id handed out: an Empty group with a pending member")
    h.advance(SESSION)
    check("the pending member forgotten")
    x = h.join(instance="i-x")
    check("a static member starts the initial delay")
    y = h.join()
    check("a newcomer extends it")
    h.advance(3000)
    check("the delay again")
    h.advance(3000)
    check("the round complete")
    x_id, y_id = x[0].member_id, y[0].member_id
    assert x[0].generation_id == 1 and h.group().state is COMPLETING_REBALANCE
    h.sync(y_id, 1)
    check("the follower waits for the leader's assignment")
    h.join()
    check("a newcomer arrives meanwhile: the follower is told to rejoin")
    [n_id] = [m for m in h.group().members if m not in (x_id, y_id)]
    h.coordinator.rebalance.leave_group(G, [(n_id, None)])
    check("the newcomer leaves")
    h.join(x_id, instance="i-x")
    h.join(y_id)
    check("both rejoined")
    h.sync(y_id, 2)
    check("the follower waits again")
    h.fail_appends = E.NOT_LEADER_OR_FOLLOWER
    h.sync(x_id, 2, {x_id: b"X", y_id: b"Y"}, instance="i-x")
    check("the leader's write failed: everyone told to rejoin")
    h.fail_appends = None
    x, y = h.join(x_id, instance="i-x"), h.join(y_id)
    check("both rejoined again")
    gen = x[0].generation_id
    h.sync(x_id, gen, {x_id: b"X", y_id: b"Y"}, instance="i-x")
    check("the leader's assignment stored")
    assert h.group().state is STABLE
    h.hold_appends = True
    restarted = h.join(instance="i-x")
    check("a static member restarts in a Stable group, its write in flight")
    h.hold_appends = False
    assert restarted == []
    h.held.pop()()
    check("the write done")
    assert restarted[0].error == OK and restarted[0].generation_id == gen
    h.join(y_id, protocols=[("range", b"new")])
    check("a follower's subscription changes: a rebalance")
    h.advance(SESSION)
    check("the static member fell silent: the round completes without it")
    assert h.group().state is COMPLETING_REBALANCE and list(h.group().members) == [y_id]
    for _ in range(4):
        h.advance(SESSION - 1)
        h.coordinator.rebalance.heartbeat(G, y_id, None, h.group().generation_id)
        check("the last member heartbeats but never syncs")
    assert h.group().state is EMPTY
    z = h.join(instance="i-z", session=60_000, rebalance=5_000)
    check("a static member joins the Empty group")
    h.advance(3000)
    check("its round complete")
    z_id = z[0].member_id
    h.sync(z_id, z[0].generation_id, {z_id: b"Z"}, instance="i-z")
    check("Stable with one member")
    h.join()
    check("a newcomer starts a rebalance")
    [w_id] = [m for m in h.group().members if m != z_id]
    h.coordinator.rebalance.leave_group(G, [(w_id, None)])
    check("the newcomer leaves again")
    h.advance(REBALANCE)
    check("only the absent static member: the round waits again")
    assert h.group().state is PREPARING_REBALANCE and h.group().has(z_id)
    h.advance(60_000)
    check("its session ends: nobody left")
    assert seen == {EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE}
    h.coordinator.shutdown()


@pytest.mark.spec("REBAL-28")
def test_the_coordinator_asserts_what_each_state_holds():
    g = GroupMetadata("g", EMPTY, 0)
    g.check_state()
    g.add(MemberMetadata("m", None, "c", "/h", 1, 1, "consumer", [("range", b"")]), None)
    with pytest.raises(AssertionError, match="Empty with members"):
        g.check_state()
    g.transition(PREPARE_REBALANCE, 1)
    with pytest.raises(AssertionError, match="no timer to end the join"):
        g.check_state()


@pytest.mark.spec("REBAL-16")
def test_partition_for_is_javas_string_hashcode():
    # pinned with OpenJDK 17: System.out.println("my-group".hashCode())
    assert java_string_hashcode("my-group") == -1906497762
    assert java_string_hashcode("console-consumer-12345") == 158455506
    assert java_string_hashcode("\u00e9t\u00e9-\U0001f600") == -1803456526  # surrogate pair
    assert java_string_hashcode("group-with-a-long-name-that-overflows-int32") == 337883778
    assert java_string_hashcode("") == 0
    # Utils.abs(h) % 50, as Apache Kafka 4.4's GroupCoordinatorService.partitionFor gives
    # it; (h & 0x7fffffff) % 50, the producer partitioner's toPositive, would give 36
    assert partition_for("my-group", 50) == 12


@pytest.mark.spec("REBAL-16")
def test_coordinator_errors_for_groups_elsewhere_loading_or_after_shutdown():
    h = Harness()
    c = h.coordinator
    home = c.partition_for(G)
    c.on_resigned(home)
    assert h.join()[0].error == E.NOT_COORDINATOR
    assert c.fetch_offsets(G, None)[0] == E.NOT_COORDINATOR
    c.begin_loading(home)
    assert h.join()[0].error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.rebalance.heartbeat(G, "m", None, 1) == OK
    assert h.sync("m", 1)[0].error == E.REBALANCE_IN_PROGRESS
    c.on_elected(home, [])
    assert h.join()[0].error == OK
    c.shutdown()
    assert h.join()[0].error == E.COORDINATOR_NOT_AVAILABLE
    assert c.list_groups()[0] == E.COORDINATOR_NOT_AVAILABLE


@pytest.mark.spec("REBAL-16")
def test_resigning_sends_waiting_members_to_the_new_coordinator():
    h = Harness()
    (a, _b), _gen = h.stable_group()
    joined = h.join(a)
    h.coordinator.on_resigned(h.coordinator.partition_for(G))
    assert joined[0].error == E.NOT_COORDINATOR and h.group() is None


# -- offsets ---------------------------------------------------------------------------
@pytest.mark.spec("OFFSET-1")
def test_never_committed_partitions_fetch_as_none():
    h = Harness()
    assert h.coordinator.fetch_offsets(G, [TP0]) == (OK, {TP0: None})
    h.commit({TP0: om(5)})
    _err, got = h.coordinator.fetch_offsets(G, [TP0, TP1])
    assert got[TP0].offset == 5 and got[TP1] is None
    assert list(h.coordinator.fetch_offsets(G, None)[1]) == [TP0]


@pytest.mark.spec("OFFSET-2")
def test_a_commit_is_visible_only_after_its_append_succeeds():
    h = Harness()
    h.commit({TP0: om(5)})
    h.hold_appends = True
    answer = []
    h.coordinator.commit_offsets(G, "", None, -1, {TP0: om(9)}, answer.append)
    assert answer == [] and h.coordinator.fetch_offsets(G, [TP0])[1][TP0].offset == 5
    h.held.pop()()
    assert answer == [{TP0: OK}]
    assert h.coordinator.fetch_offsets(G, [TP0])[1][TP0].offset == 9
    h.hold_appends = False
    h.fail_appends = E.NOT_ENOUGH_REPLICAS
    assert h.commit({TP0: om(11)}) == {TP0: E.COORDINATOR_NOT_AVAILABLE}
    assert h.coordinator.fetch_offsets(G, [TP0])[1][TP0].offset == 9


@pytest.mark.spec("OFFSET-3")
def test_metadata_round_trips_and_too_large_fails_only_that_partition():
    h = Harness(offset_metadata_max_bytes=8)
    meta = "\u00e9\U0001f600\x00a"  # 5 UTF-16 units
    assert h.commit({TP0: om(1, meta), TP1: om(2, "x" * 9)}) == {
        TP0: OK,
        TP1: E.OFFSET_METADATA_TOO_LARGE,
    }
    assert h.coordinator.fetch_offsets(G, [TP0])[1][TP0].metadata == meta
    h.restart()
    got = h.coordinator.fetch_offsets(G, None)[1]
    assert got[TP0].metadata == meta and TP1 not in got


@pytest.mark.spec("OFFSET-4")
def test_offsets_and_groups_survive_a_restart():
    h = Harness()
    (a, b), gen = h.stable_group()
    assert h.commit({TP0: om(7, "m")}, a, gen) == {TP0: OK}
    before = h.coordinator.fetch_offsets(G, None)
    h.restart()
    assert h.coordinator.fetch_offsets(G, None) == before
    g = h.group()
    assert g.state is STABLE and g.generation_id == gen and set(g.members) == {a, b}
    assert h.sync(b, gen)[0].assignment == b.encode()
    # members that do not come back expire
    h.advance(SESSION)
    assert h.group().state is EMPTY


@pytest.mark.spec("OFFSET-5")
def test_offsets_survive_compaction():
    h = Harness()
    for i in range(5):
        h.commit({TP0: om(i), TP1: om(10 + i)})
    before = h.coordinator.fetch_offsets(G, None)
    for p, records in h.log.items():
        last = {}
        for key, value in records:
            last.pop(key, None)
            last[key] = value
        h.log[p] = list(last.items())
    assert all(v is not None for records in h.log.values() for _, v in records)
    h.restart()
    assert h.coordinator.fetch_offsets(G, None) == before


@pytest.mark.spec("OFFSET-6")
def test_offsets_expire_only_after_the_group_was_empty_for_the_retention():
    h = Harness(offsets_retention_minutes=1)
    (a,), gen = h.stable_group(n=1, session=60_000)
    h.commit({TP0: om(3)}, a, gen)
    for _ in range(3):  # two minutes with a live member: nothing expires
        h.advance(50_000)
        h.coordinator.rebalance.heartbeat(G, a, None, gen)
        assert h.coordinator.run_offset_expiration() == 0
    h.coordinator.rebalance.leave_group(G, [(a, None)])
    assert h.group().state is EMPTY
    h.advance(59_999)
    assert h.coordinator.run_offset_expiration() == 0
    h.advance(1)
    assert h.coordinator.run_offset_expiration() == 1
    assert h.group() is None and h.coordinator.fetch_offsets(G, [TP0])[1] == {TP0: None}
    h.restart()  # the tombstones make it stick
    assert h.coordinator.fetch_offsets(G, [TP0])[1] == {TP0: None} and h.group() is None


@pytest.mark.spec("OFFSET-6")
def test_simple_consumer_offsets_expire_by_commit_time():
    h = Harness(offsets_retention_minutes=1)
    h.commit({TP0: om(3)})
    h.advance(30_000)
    h.commit({TP1: om(4)})
    h.advance(30_000)
    assert h.coordinator.run_offset_expiration() == 1
    assert h.coordinator.fetch_offsets(G, None)[1].keys() == {TP1}
    old = OffsetAndMetadata(1, expire_timestamp=h.clock.milliseconds() + 10)
    h.commit({TP0: old})
    h.advance(10)
    h.coordinator.run_offset_expiration()
    assert TP0 not in h.coordinator.fetch_offsets(G, None)[1]


@pytest.mark.spec("OFFSET-7")
def test_only_empty_groups_are_deleted_with_tombstones():
    h = Harness()
    (a,), gen = h.stable_group(n=1)
    h.commit({TP0: om(1)}, a, gen)
    assert h.coordinator.delete_groups([G, "nope"]) == {
        G: E.NON_EMPTY_GROUP,
        "nope": E.GROUP_ID_NOT_FOUND,
    }
    h.coordinator.rebalance.leave_group(G, [(a, None)])
    assert h.coordinator.delete_groups([G]) == {G: OK}
    assert h.group() is None and h.coordinator.fetch_offsets(G, [TP0])[1] == {TP0: None}
    tail = h.log[h.coordinator.partition_for(G)][-2:]
    assert [v for _, v in tail] == [None, None]
    h.restart()
    assert h.group() is None


@pytest.mark.spec("OFFSET-8")
def test_commit_validation():
    h = Harness()
    assert h.commit({TP0: om(1)}, "m", 3) == {TP0: E.ILLEGAL_GENERATION}  # no such group
    assert h.commit({TP0: om(1)}, group="") == {TP0: OK}  # the empty group id is allowed
    (a, b), gen = h.stable_group()
    assert h.commit({TP0: om(1)}) == {TP0: E.UNKNOWN_MEMBER_ID}  # outsider, group has members
    assert h.commit({TP0: om(1)}, a, gen) == {TP0: OK}
    h.join(a)
    h.join(b)  # CompletingRebalance in generation gen + 1
    assert h.commit({TP0: om(2)}, a, gen + 1) == {TP0: E.REBALANCE_IN_PROGRESS}
    h.join(a, protocols=[("range", b"new")])  # PreparingRebalance: commits are allowed
    assert h.group().state is PREPARING_REBALANCE
    assert h.commit({TP0: om(3)}, b, gen + 1) == {TP0: OK}


@pytest.mark.spec("OFFSET-8")
def test_a_commit_counts_as_a_heartbeat():
    h = Harness()
    (a,), gen = h.stable_group(n=1)
    for i in range(3):
        h.advance(SESSION - 1)
        assert h.commit({TP0: om(i)}, a, gen) == {TP0: OK}
    assert h.group().has(a)

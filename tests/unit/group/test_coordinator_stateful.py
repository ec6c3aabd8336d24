"""A hypothesis state machine over the group coordinator alone.

Four consumer "slots" join, sync, heartbeat, leave, commit and fetch in any order while time
jumps (session expiries, rebalance timeouts) and the coordinator restarts, from its records
as written or after a compaction that keeps only the newest record per key. After every step:

* no partition is assigned to two live members that completed sync in the current
  generation (REBAL-1);
* every member that completed sync in a generation got exactly the leader's assignment for
  it (REBAL-1, REBAL-2);
* requests from another generation are refused (REBAL-3);
* committed offsets equal what the successful commits wrote, before and after a restart or a
  compaction (OFFSET-4, OFFSET-5);
* the group's state holds what it promises (REBAL-28).
"""

from __future__ import annotations

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_ref.client.assignors import Subscription, range_assign
from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.coordinator import GroupConfig, GroupCoordinator
from kafka_ref.group.group_metadata import COMPLETING_REBALANCE, STABLE
from kafka_ref.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_ref.record.batch import RecordBatch

OK = ErrorCode.NO_ERROR
G = "g"
SESSION, REBALANCE = 10_000, 20_000
CLUSTER = {"t": 6}
PARTITIONS = [TopicPartition("t", p) for p in range(6)]
SUBSCRIPTION = encode_subscription(Subscription(("t",)))


class Slot:
    """One consumer as its client sees itself."""

    def __init__(self) -> None:
        self.member_id = ""
        self.generation = -1
        self.join: list = []  # the JoinGroup answer box; None = nothing outstanding
        self.joining = False
        self.syncing = False
        self.joined = None  # the last successful JoinGroupResult
        self.synced_generation = -1


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.config = GroupConfig(
            offsets_topic_num_partitions=2, group_initial_rebalance_delay_ms=0
        )
        self.clock = ManualClock(0)
        self.scheduler = ManualScheduler(self.clock)
        self.log: dict[int, list] = {}
        self.slots = [Slot() for _ in range(4)]
        self.plans: dict[int, dict[str, bytes]] = {}  # generation -> the leader's plan
        self.completed: dict[int, dict[str, bytes]] = {}  # generation -> synced assignments
        self.committed: dict[TopicPartition, tuple[int, str]] = {}
        self.coordinator = self._start()

    # -- plumbing -----------------------------------------------------------------------
    def _append(self, partition, batch, done):
        for r in RecordBatch(batch).records():
            self.log.setdefault(partition, []).append((r.key, r.value))
        done(OK)

    def _start(self) -> GroupCoordinator:
        c = GroupCoordinator(self.config, self.clock, self.scheduler.schedule, self._append)
        for p in range(self.config.offsets_topic_num_partitions):
            c.on_elected(p, list(self.log.get(p, [])))
        return c

    def group(self):
        return self.coordinator.manager.get_group(G)

    def _on_join(self, slot: Slot, result) -> None:
        slot.joining = False
        if result.error == ErrorCode.MEMBER_ID_REQUIRED:
            slot.member_id = result.member_id
        elif result.error == OK:
            slot.member_id, slot.generation, slot.joined = (
                result.member_id,
                result.generation_id,
                result,
            )
        else:  # UNKNOWN_MEMBER_ID, NOT_COORDINATOR at a restart...: start over
            slot.member_id, slot.generation, slot.joined = "", -1, None

    def _on_sync(self, slot: Slot, generation: int, member_id: str, result) -> None:
        slot.syncing = False
        if result.error != OK:
            return
        plan = self.plans.get(generation, {})
        assert result.assignment == plan.get(member_id, b""), "not the leader's assignment"
        self.completed.setdefault(generation, {})[member_id] = result.assignment
        slot.synced_generation = generation

    # -- rules --------------------------------------------------------------------------
    @rule(i=st.integers(0, 3))
    def join(self, i):
        slot = self.slots[i]
        for _ in range(2):  # MEMBER_ID_REQUIRED: the client joins again at once, with its id
            if slot.joining:
                return
            slot.joining = True
            self.coordinator.rebalance.join_group(
                G,
                slot.member_id,
                None,
                True,
                f"c{i}",
                "/h",
                REBALANCE,
                SESSION,
                "consumer",
                [("range", SUBSCRIPTION)],
                lambda r, s=slot: self._on_join(s, r),
            )
            if slot.joined is not None or not slot.member_id:
                return

    @rule(i=st.integers(0, 3))
    def sync(self, i):
        slot = self.slots[i]
        joined = slot.joined
        if joined is None or slot.syncing or slot.synced_generation == slot.generation:
            return
        plan: dict[str, bytes] = {}
        if joined.leader_id == slot.member_id and joined.members:
            subs = {m.member_id: decode_subscription(m.metadata)[1] for m in joined.members}
            plan = {m: encode_assignment(tps) for m, tps in range_assign(CLUSTER, subs).items()}
        gen, mid = slot.generation, slot.member_id
        # The plan is the generation's from the moment the coordinator takes it (followers
        # may be answered before the leader); a leader refused (a stale one) made no plan.
        previous = self.plans.get(gen)
        if plan:
            self.plans[gen] = plan
        slot.syncing = True
        answers: list = []
        in_call = [True]

        def answered(result) -> None:  # now (kept until the plan is settled) or later
            if in_call[0]:
                answers.append(result)
            else:
                self._on_sync(slot, gen, mid, result)

        rebalance = self.coordinator.rebalance
        rebalance.sync_group(G, gen, mid, None, "consumer", "range", plan, answered)
        in_call[0] = False
        if plan and (not answers or answers[0].error != OK):
            if previous is None:
                self.plans.pop(gen, None)
            else:
                self.plans[gen] = previous
        for answer in answers:
            self._on_sync(slot, gen, mid, answer)

    @rule(i=st.integers(0, 3))
    def heartbeat(self, i):
        self._heartbeat(i)

    def _heartbeat(self, i) -> ErrorCode:
        slot = self.slots[i]
        if not slot.member_id:
            return ErrorCode.UNKNOWN_MEMBER_ID
        group = self.group()
        error = self.coordinator.rebalance.heartbeat(G, slot.member_id, None, slot.generation)
        if group is not None and group.has(slot.member_id):
            if slot.generation != group.generation_id:
                assert error == ErrorCode.ILLEGAL_GENERATION  # REBAL-3
        elif error != OK:
            assert error == ErrorCode.UNKNOWN_MEMBER_ID
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                slot.member_id = ""
            slot.joined = None
        return error

    @rule(i=st.integers(0, 3))
    def poll(self, i):
        """What a consumer's poll loop does next: join, sync, or heartbeat (and rejoin)."""
        slot = self.slots[i]
        if slot.joining or slot.syncing:
            return
        if slot.joined is None:
            return self.join(i)
        if slot.synced_generation != slot.generation:
            return self.sync(i)
        error = self._heartbeat(i)
        if error == ErrorCode.REBALANCE_IN_PROGRESS or slot.joined is None:
            self.join(i)

    @rule(i=st.integers(0, 3))
    def stale_requests_are_refused(self, i):
        slot = self.slots[i]
        group = self.group()
        if not slot.member_id or group is None or not group.has(slot.member_id):
            return
        stale = group.generation_id - 1
        assert self.coordinator.rebalance.heartbeat(G, slot.member_id, None, stale) == (
            ErrorCode.ILLEGAL_GENERATION
        )
        box = []
        offsets = {PARTITIONS[0]: OffsetAndMetadata(1)}
        self.coordinator.commit_offsets(G, slot.member_id, None, stale, offsets, box.append)
        assert box == [{PARTITIONS[0]: ErrorCode.ILLEGAL_GENERATION}]

    @rule(i=st.integers(0, 3))
    def leave(self, i):
        slot = self.slots[i]
        if slot.member_id:
            self.coordinator.rebalance.leave_group(G, [(slot.member_id, None)])
        slot.member_id, slot.generation, slot.joined = "", -1, None

    @rule(ms=st.sampled_from([100, 3000, 9000, 10_001, 20_001]))
    def advance(self, ms):
        self.scheduler.advance(ms)

    @rule(
        i=st.integers(-1, 3),
        p=st.integers(0, 5),
        offset=st.integers(0, 1000),
        meta=st.sampled_from(["", "m", "\u00e9\U0001f600"]),
    )
    def commit(self, i, p, offset, meta):
        slot = self.slots[i] if i >= 0 else None
        member_id = slot.member_id if slot else ""
        generation = slot.generation if slot and slot.member_id else -1
        box = []
        tp = PARTITIONS[p]
        self.coordinator.commit_offsets(
            G,
            member_id,
            None,
            generation,
            {tp: OffsetAndMetadata(offset, metadata=meta)},
            box.append,
        )
        assert len(box) == 1
        if box[0][tp] == OK:
            self.committed[tp] = (offset, meta)

    @rule()
    def fetch(self):
        self.check_offsets()

    @rule(compact=st.booleans())
    def restart(self, compact):
        before = self.coordinator.fetch_offsets(G, None)
        self.coordinator.shutdown()
        if compact:
            for p, records in self.log.items():
                last: dict = {}
                for key, value in records:
                    last.pop(key, None)
                    last[key] = value
                self.log[p] = list(last.items())
        self.coordinator = self._start()
        event(f"restart (compacted={compact}) with {len(before[1])} offsets")
        assert self.coordinator.fetch_offsets(G, None) == before
        group = self.group()
        generation = group.generation_id if group else 0
        # a generation that was never stored may be numbered again by the new coordinator
        for gen in [g for g in self.plans if g > generation]:
            del self.plans[gen]
            self.completed.pop(gen, None)

    # -- invariants ---------------------------------------------------------------------
    @invariant()
    def one_owner_per_partition(self):
        group = self.group()
        if group is None or not (group.is_(STABLE) or group.is_(COMPLETING_REBALANCE)):
            return
        owners: dict[TopicPartition, str] = {}
        plan = self.plans.get(group.generation_id, {})
        for member_id, assignment in self.completed.get(group.generation_id, {}).items():
            if not group.has(member_id):
                continue
            assert assignment == plan.get(member_id, b"")
            for tp in decode_assignment(assignment)[1] if assignment else []:
                assert tp not in owners, f"{tp} owned by {owners[tp]} and {member_id}"
                owners[tp] = member_id
        event(f"{group.state.wire_name} with {len(owners)} partitions owned by synced members")

    @invariant()
    def counts_match_the_members(self):
        """The group's running counts (REBAL-9's shared protocols, the members still to join)
        say what counting the members would."""
        group = self.group()
        if group is None or not group.members:
            return
        members = list(group.members.values())
        assert group.num_awaiting_join() == sum(m.is_awaiting_join for m in members)
        assert group.candidate_protocols() == set.intersection(
            *(set(m.protocols()) for m in members)
        )

    @invariant()
    def each_state_holds_what_it_promises(self):
        """REBAL-28 holds after every request and timer, not only at the transitions where
        the coordinator asserts it."""
        group = self.group()
        if group is not None:
            group.check_state()

    @invariant()
    def check_offsets(self):
        error, got = self.coordinator.fetch_offsets(G, None)
        assert error == OK
        assert {tp: (o.offset, o.metadata) for tp, o in got.items()} == self.committed


CoordinatorMachine.TestCase.settings = settings(
    settings.default, stateful_step_count=40, max_examples=settings.default.max_examples
)
CITED = pytest.mark.spec("REBAL-1", "REBAL-2", "REBAL-3", "REBAL-28", "OFFSET-4", "OFFSET-5")
TestCoordinatorMachine = CITED(CoordinatorMachine.TestCase)

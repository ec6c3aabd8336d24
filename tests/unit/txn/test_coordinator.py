"""The transaction coordinator's state machine (spec/transactions.md TXN-11..TXN-15), with a
hypothesis state machine that interleaves requests, log writes, markers, timeouts and
failovers and checks that a decision is logged before any marker and always carried out."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from kafka_ref.errors import ErrorCode
from kafka_ref.txn.transaction_metadata import (
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
)
from tests.unit.txn.harness import OK, CoordinatorWorld, Harness

S = TransactionState
CONCURRENT = ErrorCode.CONCURRENT_TRANSACTIONS


def init_ok(h: Harness, tid: str = "app-1") -> tuple[int, int]:
    answers = h.init(tid)
    h.settle()
    assert answers and answers[0][0] == OK, answers
    return answers[0][1], answers[0][2]


# ---------------------------------------------------------------------- the state machine
@pytest.mark.spec("TXN-11")
def test_only_kafkas_transitions_are_allowed():
    meta = TransactionMetadata("t", 1, 0, 1000)
    with pytest.raises(IllegalTransitionError):
        meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 0)  # Empty -> PrepareCommit
    target = meta.prepare_add_partitions({("a", 0)}, 5)
    with pytest.raises(IllegalTransitionError):  # a second transition while one is pending
        meta.prepare_add_partitions({("a", 1)}, 6)
    meta.complete_transition(target)
    assert (meta.state, meta.partitions, meta.txn_start_timestamp) == (S.ONGOING, {("a", 0)}, 5)
    with pytest.raises(IllegalTransitionError):
        meta.prepare_complete(7)  # Ongoing -> CompleteCommit skips the decision
    meta.complete_transition(meta.prepare_abort_or_commit(S.PREPARE_COMMIT, 8))
    with pytest.raises(IllegalTransitionError):
        meta.prepare_add_partitions({("a", 1)}, 9)  # no new partitions once decided
    meta.complete_transition(meta.prepare_complete(10))
    assert (meta.state, meta.partitions) == (S.COMPLETE_COMMIT, set())
    assert [s.kafka_name for s in S] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]


@pytest.mark.spec("TXN-11")
def test_a_failed_log_write_changes_nothing():
    h = Harness()
    answers = h.init("app-1")
    h.complete_append(error=ErrorCode.NOT_ENOUGH_REPLICAS)
    assert answers == [(ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1)]
    assert h.durable("app-1") is None
    _, epoch = init_ok(h)
    assert epoch == 0


# ---------------------------------------------------------------------- InitProducerId
@pytest.mark.spec("TXN-13")
def test_init_producer_id_bumps_the_epoch_and_fences_the_older_producer():
    h = Harness()
    pid, epoch = init_ok(h)
    assert (pid, epoch) == (1001, 0)
    assert h.durable("app-1").state == S.EMPTY
    pid2, epoch2 = init_ok(h)
    assert (pid2, epoch2) == (pid, 1)
    assert h.add("app-1", pid, 0, ("t", 0)) == [ErrorCode.PRODUCER_FENCED]
    assert h.add("app-1", 999, 1, ("t", 0)) == [ErrorCode.INVALID_PRODUCER_ID_MAPPING]
    assert h.init("") == [(ErrorCode.INVALID_REQUEST, -1, -1)]
    assert h.init("x", timeout_ms=60_001) == [(ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1)]


@pytest.mark.spec("TXN-13")
def test_init_producer_id_aborts_the_zombies_open_transaction():
    h = Harness()
    pid, epoch = init_ok(h)
    assert h.add("app-1", pid, epoch, ("t", 0), ("t", 1)) == []
    h.settle()
    answers = h.init("app-1")  # the new instance
    assert answers == [(CONCURRENT, -1, -1)]
    h.settle()
    (request,) = h.sent
    assert (request.commit, request.producer_epoch) == (False, 1)  # fenced epoch
    assert request.partitions == {("t", 0), ("t", 1)}
    assert h.durable("app-1").state == S.COMPLETE_ABORT
    pid2, epoch2 = init_ok(h)
    assert (pid2, epoch2) == (pid, 2)
    assert h.end("app-1", pid, epoch, True) == [ErrorCode.PRODUCER_FENCED]


@pytest.mark.spec("TXN-13")
def test_an_exhausted_epoch_gets_a_new_producer_id():
    h = Harness()
    pid, _ = init_ok(h)
    meta = h.coordinator.describe("app-1")[1]
    meta.producer_epoch = 32766
    pid2, epoch2 = init_ok(h)
    assert pid2 != pid and epoch2 == 0


# ---------------------------------------------------------------------- EndTxn
@pytest.mark.spec("TXN-12")
def test_the_decision_is_logged_before_the_answer_and_the_markers():
    h = Harness()
    pid, epoch = init_ok(h)
    h.add("app-1", pid, epoch, ("t", 0), ("u", 3))
    h.settle()
    answers = h.end("app-1", pid, epoch, True)
    assert answers == [] and h.sent == []  # nothing before the PrepareCommit is durable
    assert h.end("app-1", pid, epoch, True) == [CONCURRENT]  # pending
    h.complete_append()
    assert answers == [OK] and h.durable("app-1").state == S.PREPARE_COMMIT
    (request,) = h.sent
    assert request.commit and request.partitions == {("t", 0), ("u", 3)}
    assert h.end("app-1", pid, epoch, True) == [CONCURRENT]  # markers in flight
    assert h.end("app-1", pid, epoch, False) == [ErrorCode.INVALID_TXN_STATE]
    h.complete_markers(error=ErrorCode.NOT_LEADER_OR_FOLLOWER)  # retried after a backoff
    h.scheduler.advance(1000)
    assert len(h.sent) == 2 and h.durable("app-1").state == S.PREPARE_COMMIT
    h.complete_markers()
    h.complete_append()
    assert h.durable("app-1").state == S.COMPLETE_COMMIT
    assert h.end("app-1", pid, epoch, True) == [OK]  # a retry of the commit
    assert h.end("app-1", pid, epoch, False) == [ErrorCode.INVALID_TXN_STATE]


@pytest.mark.spec("TXN-12")
def test_ending_without_a_transaction_is_invalid_txn_state():
    h = Harness()
    pid, epoch = init_ok(h)
    assert h.end("app-1", pid, epoch, True) == [ErrorCode.INVALID_TXN_STATE]


# ---------------------------------------------------------------------- failover
@pytest.mark.spec("TXN-14")
def test_a_new_coordinator_finishes_the_markers_of_a_logged_decision():
    h = Harness()
    pid, epoch = init_ok(h)
    h.add("app-1", pid, epoch, ("t", 0))
    h.settle()
    h.end("app-1", pid, epoch, False)
    h.complete_append()
    assert len(h.markers) == 1
    h.markers.clear()  # the old coordinator dies with its requests
    partition = h.coordinator.partition_for("app-1")
    h.elect(partition)
    (request,) = h.markers[0:1] and [h.markers[0][0]]
    assert not request.commit and request.coordinator_epoch == 1
    h.settle()
    assert h.durable("app-1").state == S.COMPLETE_ABORT


@pytest.mark.spec("TXN-14")
def test_answers_of_a_coordinator_that_lost_its_partition_are_dropped():
    h = Harness()
    answers = h.init("app-1")
    h.coordinator.on_resigned(h.coordinator.partition_for("app-1"))
    h.complete_append()
    assert answers == [(ErrorCode.NOT_COORDINATOR, -1, -1)]
    assert h.init("app-1") == [(ErrorCode.NOT_COORDINATOR, -1, -1)]


# ---------------------------------------------------------------------- timeouts
@pytest.mark.spec("TXN-15")
def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced():
    h = Harness()
    pid, epoch = init_ok(h)
    h.add("app-1", pid, epoch, ("t", 0))
    h.settle()
    h.clock.advance(9_999)
    assert h.coordinator.abort_timed_out_transactions() == []
    h.clock.advance(1)
    assert h.coordinator.abort_timed_out_transactions() == ["app-1"]
    h.settle()
    assert h.durable("app-1").state == S.COMPLETE_ABORT
    assert h.durable("app-1").producer_epoch == epoch + 1
    assert h.end("app-1", pid, epoch, True) == [ErrorCode.PRODUCER_FENCED]


# ---------------------------------------------------------------------- state machine
IDS = ["a", "b", "c"]
PARTS = [("t", 0), ("t", 1), ("u", 0)]


class CoordinatorMachine(CoordinatorWorld):
    """Requests, log writes, marker answers, time and failovers in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(num_partitions=2)
        self.producers: dict[str, tuple[int, int]] = {}
        self.checked_sent = 0

    @rule(tid=st.sampled_from(IDS))
    def init(self, tid):
        def got(error, pid, epoch):
            if error == OK:
                self.producers[tid] = (pid, epoch)

        self.h.coordinator.handle_init_producer_id(tid, 10_000, got)

    @precondition(lambda self: self.producers)
    @rule(data=st.data(), parts=st.sets(st.sampled_from(PARTS), min_size=1))
    def add(self, data, parts):
        tid = data.draw(st.sampled_from(sorted(self.producers)))
        self.h.coordinator.handle_add_partitions(tid, *self.producers[tid], parts, lambda e: None)

    @precondition(lambda self: self.producers)
    @rule(data=st.data(), commit=st.booleans())
    def end(self, data, commit):
        tid = data.draw(st.sampled_from(sorted(self.producers)))
        self.h.coordinator.handle_end_txn(tid, *self.producers[tid], commit, lambda e: None)

    @rule(ms=st.integers(0, 12_000))
    def time_passes(self, ms):
        self.h.scheduler.advance(ms)
        self.h.coordinator.abort_timed_out_transactions()

    @rule(partition=st.integers(0, 1))
    def failover(self, partition):
        # in-flight writes either landed or not; the old coordinator's callbacks are stale
        for i in reversed(range(len(self.h.appends))):
            if self.h.appends[i][0] == partition:
                self.h.complete_append(i)
        home = self.h.coordinator.partition_for
        self.h.markers = [m for m in self.h.markers if home(m[0].transactional_id) != partition]
        self.h.elect(partition)

    @invariant()
    def markers_follow_a_logged_decision(self):
        """TXN-12: a marker request only ever follows a durable Prepare record that names
        its partitions, producer epoch and outcome."""
        for request in self.h.sent[self.checked_sent :]:
            decided = self.h.durable(request.transactional_id)
            assert decided is not None
            expected = S.PREPARE_COMMIT if request.commit else S.PREPARE_ABORT
            assert decided.state == expected, (request, decided)
            assert request.partitions <= decided.partitions
            assert request.producer_epoch == decided.producer_epoch
        self.checked_sent = len(self.h.sent)

    @invariant()
    def the_log_never_skips_the_decision_and_epochs_never_go_back(self):
        for tid in IDS:
            history = self.h.history(tid)
            for before, after in itertools.pairwise(history):
                if after.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
                    assert before.state == after.state - 2  # Prepare X -> Complete X
                if after.producer_id == before.producer_id:
                    assert after.producer_epoch >= before.producer_epoch

    def teardown(self):
        """TXN-14: with the writes and markers done, every decision is carried out."""
        self.h.settle(rounds=500)
        for tid in IDS:
            meta = self.h.durable(tid)
            assert meta is None or meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT)


TestCoordinatorMachine = pytest.mark.spec("TXN-11", "TXN-12", "TXN-14")(CoordinatorMachine.TestCase)
TestCoordinatorMachine.settings = settings(stateful_step_count=40, deadline=None)


@pytest.mark.spec("TXN-18")
def test_kip_360_bumps_the_named_epoch_and_recognises_a_retry():
    h = Harness()
    pid, epoch = init_ok(h)

    def init_with(expected):
        out: list = []
        h.coordinator.handle_init_producer_id("app-1", 10_000, lambda *a: out.append(a), expected)
        h.settle()
        return out[0]

    assert init_with((pid, epoch)) == (OK, pid, epoch + 1)  # bumped
    assert init_with((pid, epoch)) == (OK, pid, epoch + 1)  # a retry of that bump: no bump
    assert init_with((pid, epoch + 1)) == (OK, pid, epoch + 2)
    assert init_with((pid, epoch)) == (ErrorCode.PRODUCER_FENCED, -1, -1)  # too old
    assert init_with((pid + 7, epoch + 2)) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert init_with((-1, -1)) == (OK, pid, epoch + 3)  # no id yet: as in v0


@pytest.mark.spec("TXN-14")
def test_a_retry_left_by_the_coordinator_before_a_failover_writes_nothing():
    h = Harness()
    pid, epoch = init_ok(h)
    h.add("app-1", pid, epoch, ("t", 0))
    h.settle()
    h.end("app-1", pid, epoch, False)
    h.complete_append()  # PrepareAbort is durable: the markers go out
    h.complete_markers()  # written: CompleteAbort is appended...
    h.complete_append(error=ErrorCode.NOT_ENOUGH_REPLICAS)  # ...fails, a retry is scheduled
    h.elect(h.coordinator.partition_for("app-1"))  # the new epoch sends the markers again
    assert len(h.markers) == 1
    h.scheduler.advance(1000)  # the old epoch's retry is due: it must not write Complete
    assert h.appends == [], "a write of the old coordinator epoch"
    h.settle()
    states = [m.state for m in h.history("app-1")]
    assert states[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]

"""Each of eleven bugs of Raft, its listener, its observers and its snapshots, put into the
shipping classes, is found by the simulator.

A mutant replaces one method of a real class (monkeypatch, undone after the test), so the
simulation runs the quorum core with that one bug. The same search as
test_raft_simulation.py, bounded, must then end in a `SafetyViolation` naming the property
the bug breaks. Without the mutant the same search finds nothing (test_raft_simulation.py),
so each of these failures is the bug's.

Each hunt searches the worlds where its bug can show: most search every world the
property tests do; a vote forgotten at a restart shows only when a candidate crashes
between two candidates' requests, so that hunt runs five voters (whose first vote of an
election splits more often than three's) that crash often, along short schedules (the
world's crashes do the work; a long schedule only spends time); a follower truncates only
what diverges from the leader, so the hunt for a bad truncation cuts leaders off; the bugs
of observers show only where there are some; the bugs of snapshots, only in worlds that
write them.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from kafka_ref.raft import kafka_raft_client
from kafka_ref.raft.election_state import NOT_SET, FileQuorumStateStore
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.listener import ListenerContext
from kafka_ref.raft.nominee_state import majority_size
from kafka_ref.raft.quorum_state import QuorumState
from kafka_ref.sim.raft_checks import ApplyingListener, SafetyViolation, log_entries
from tests.raft.schedules import partition_schedules, play, schedules, worlds

HUNT_EXAMPLES = 1_000
EVERY_WORLD = worlds()
EVERY_SCHEDULE = schedules()


def hunt(
    monkeypatch: pytest.MonkeyPatch, mutant, world=EVERY_WORLD, schedule=EVERY_SCHEDULE
) -> tuple[SafetyViolation, int]:
    """Search with `mutant` applied; the violation found and the examples it took."""
    tried = 0

    @settings(
        max_examples=HUNT_EXAMPLES,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the history tells the story
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(world=world, schedule=schedule)
    def search(world, schedule):
        nonlocal tried
        tried += 1
        with tempfile.TemporaryDirectory() as directory:
            play(directory, world, schedule)

    started = time.monotonic()
    with monkeypatch.context() as patched:
        mutant(patched)
        with pytest.raises(SafetyViolation) as found:
            search()
    seconds = time.monotonic() - started
    print(f"found after {tried} examples, {seconds:.1f} s: {found.value}")
    return found.value, tried


def vote_twice(patched: pytest.MonkeyPatch) -> None:
    """A voter that knows no leader grants every candidate with a good log, its vote cast
    or not."""
    decide = kafka_raft_client.can_grant_vote
    patched.setattr(
        kafka_raft_client,
        "can_grant_vote",
        lambda voter, request: decide(voter._replace(voted_id=NOT_SET), request),
    )


def commit_without_a_majority(patched: pytest.MonkeyPatch) -> None:
    """The leader's high watermark follows its own log end, as if it were the majority."""
    patched.setattr(
        LeaderState, "majority_end_offset", lambda self: self.replicas[self.local_id].end_offset
    )


def forget_the_vote_on_restart(patched: pytest.MonkeyPatch) -> None:
    """The quorum-state file is written without the vote: a restart forgets it."""
    write = FileQuorumStateStore.write_election_state
    patched.setattr(
        FileQuorumStateStore,
        "write_election_state",
        lambda self, state: write(self, dataclasses.replace(state, voted_id=NOT_SET)),
    )


def truncate_below_the_high_watermark(patched: pytest.MonkeyPatch) -> None:
    """A follower told to truncate drops the whole epoch the cut falls in, committed or not."""
    truncate = KafkaRaftLog.truncate_to

    def truncate_to(self, offset):
        starts = [e.start_offset for e in self.epochs.entries if e.start_offset < offset]
        truncate(self, max(starts, default=0))

    patched.setattr(KafkaRaftLog, "truncate_to", truncate_to)


@pytest.mark.spec("RAFT-9", "RAFT-2")
def test_voting_twice_in_an_epoch_is_caught(monkeypatch):
    """The quorum state refuses to record the second vote (its assertion, a core
    invariant); were it recorded, two candidates could win the epoch."""
    violation, _ = hunt(monkeypatch, vote_twice)
    assert violation.prop == "core invariant" and "two votes in one epoch" in str(violation)


@pytest.mark.spec("RAFT-6", "RAFT-11")
def test_committing_without_a_majority_loses_a_committed_entry(monkeypatch):
    violation, _ = hunt(monkeypatch, commit_without_a_majority)
    assert violation.prop in ("leader completeness", "state machine safety")


@pytest.mark.spec("RAFT-3", "RAFT-9")
def test_forgetting_the_vote_on_restart_votes_twice(monkeypatch):
    crashing = worlds(voters=(5,), crash_rates=(0.05, 0.1, 0.2))
    violation, _ = hunt(monkeypatch, forget_the_vote_on_restart, crashing, schedules(6))
    # two candidates win with the same voter's two votes; which broken property the checker
    # meets first (two leaders of an epoch, or their two histories applied) depends on timing
    assert violation.prop in ("election safety", "leader completeness", "state machine safety")


@pytest.mark.spec("RAFT-7", "RAFT-12")
def test_truncating_below_the_high_watermark_removes_a_committed_entry(monkeypatch):
    partitions = partition_schedules()  # a leader cut off appends on; healed, it truncates
    # without snapshots: a cut log asserts a truncation below its start before the checker
    # sees the committed entry go
    unsnapshotted = worlds(snapshot_bytes=(None,))
    violation, _ = hunt(
        monkeypatch, truncate_below_the_high_watermark, unsnapshotted, schedule=partitions
    )
    assert violation.prop == "state machine safety"


def tell_uncommitted_batches(patched: pytest.MonkeyPatch) -> None:
    """The listener is told what the leader appended, committed or not."""
    deliver = ListenerContext.deliver
    patched.setattr(
        ListenerContext, "deliver", lambda self, log, hw: deliver(self, log, log.end_offset)
    )


def announce_leadership_at_once(patched: pytest.MonkeyPatch) -> None:
    """A new leader's listener hears of its leadership before it caught up with the log."""
    fire = ListenerContext.maybe_fire_leader_change
    patched.setattr(
        ListenerContext,
        "maybe_fire_leader_change",
        lambda self, leader, local_id, start: fire(
            self, leader, local_id, None if start is None else 0
        ),
    )


@pytest.mark.spec("RAFT-17")
def test_telling_uncommitted_batches_is_caught(monkeypatch):
    violation, _ = hunt(monkeypatch, tell_uncommitted_batches)
    assert violation.prop in ("listener", "state machine safety")


@pytest.mark.spec("RAFT-17")
def test_announcing_leadership_before_catching_up_is_caught(monkeypatch):
    violation, _ = hunt(monkeypatch, announce_leadership_at_once)
    assert violation.prop == "listener"


def count_observers_in_the_high_watermark(patched: pytest.MonkeyPatch) -> None:
    """The leader takes the majority's offset over voters and observers together: with
    observers as far as the leader, the voters need not be."""

    def majority_end_offset(self):
        replicas = [*self.replicas.values(), *self.observers.values()]
        offsets = sorted((r.end_offset or 0 for r in replicas), reverse=True)
        return offsets[majority_size(self.voters) - 1]

    patched.setattr(LeaderState, "majority_end_offset", majority_end_offset)


def observers_stand_for_election(patched: pytest.MonkeyPatch) -> None:
    """A node outside the voter set takes itself for a voter: it has an election timer."""
    patched.setattr(QuorumState, "is_voter", property(lambda self: True))


@pytest.mark.spec("RAFT-19", "RAFT-11")
def test_counting_observers_in_the_high_watermark_loses_a_committed_entry(monkeypatch):
    # the followers cut off, the leader commits with the observers alone; the followers then
    # elect one of them, which lacks what was committed
    observed = worlds(voters=(3,), observers=(1, 2))
    violation, _ = hunt(
        monkeypatch, count_observers_in_the_high_watermark, observed, partition_schedules()
    )
    assert violation.prop in ("leader completeness", "state machine safety")


@pytest.mark.spec("RAFT-18")
def test_an_observer_standing_for_election_is_caught(monkeypatch):
    # three or five voters: a lone voter would make the observer leader within one event,
    # where the core's own assertions meet the bug before the checker does
    observed = worlds(voters=(3, 5), observers=(1, 2))
    violation, _ = hunt(monkeypatch, observers_stand_for_election, observed)
    assert violation.prop == "observer"


SNAPSHOTTING = worlds(snapshot_bytes=(150, 600))  # every world writes snapshots


def snapshot_above_the_high_watermark(patched: pytest.MonkeyPatch) -> None:
    """The application snapshots all its log holds, committed or not (as an active
    controller that snapshots the records it replayed before they committed), and the
    quorum takes any offset."""

    def snapshot_point(self):
        data = [(e[0], e[3]) for e in log_entries(self.log, self.next_offset) if not e[2]]
        return self.log.end_offset, [*self.applied, *data]

    patched.setattr(ApplyingListener, "snapshot_point", snapshot_point)
    patched.setattr(KafkaRaftClient, "check_snapshot_offset", lambda self, end_offset: None)


def delete_log_past_the_snapshot(patched: pytest.MonkeyPatch) -> None:
    """The log cut deletes every record the log holds, not only what the snapshot covers."""
    delete = KafkaRaftLog.delete_before_snapshot

    def delete_before_snapshot(self, snapshot_id):
        if not delete(self, snapshot_id):
            return False
        self.log.delete_records_before(self.end_offset)
        self.epochs.truncate_from_start(self.end_offset)
        return True

    patched.setattr(KafkaRaftLog, "delete_before_snapshot", delete_before_snapshot)


def install_without_truncating(patched: pytest.MonkeyPatch) -> None:
    """A follower keeps the leader's snapshot but not its log's new start: its old log
    stays, and what it fetches next is appended after it."""
    patched.setattr(KafkaRaftLog, "install_snapshot", KafkaRaftLog._write_snapshot)


@pytest.mark.spec("RAFT-21")
def test_a_snapshot_above_the_high_watermark_is_caught(monkeypatch):
    violation, _ = hunt(monkeypatch, snapshot_above_the_high_watermark, SNAPSHOTTING)
    assert violation.prop == "snapshot"


@pytest.mark.spec("RAFT-22")
def test_deleting_log_no_snapshot_covers_is_caught(monkeypatch):
    """A node whose listener must read what was deleted finds no snapshot holding it: the
    quorum asserts that invariant (a restarted node would rebuild a state with a hole)."""
    violation, _ = hunt(monkeypatch, delete_log_past_the_snapshot, SNAPSHOTTING)
    assert violation.prop == "core invariant" and "in no snapshot" in str(violation)


@pytest.mark.spec("RAFT-23")
def test_appending_after_a_snapshot_without_truncating_is_caught(monkeypatch):
    """The follower's log then ends below its own latest snapshot, which the log's next
    cut (or read of its last epoch) asserts against."""
    violation, _ = hunt(monkeypatch, install_without_truncating, SNAPSHOTTING)
    assert violation.prop == "core invariant"
    assert "past the log end" in str(violation) or "without epochs" in str(violation)

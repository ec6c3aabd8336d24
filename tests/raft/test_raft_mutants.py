"""Each of four bugs of Raft, put into the shipping classes, is found by the simulator.

A mutant replaces one method of a real class (monkeypatch, undone after the test), so the
simulation runs the quorum core with that one bug. The same search as
test_raft_simulation.py, bounded, must then end in a `SafetyViolation` naming the property
the bug breaks. Without the mutant the same search finds nothing (test_raft_simulation.py),
so each of these failures is the bug's.

Each hunt searches the worlds where its bug can show: most search every world the
property tests do; a vote forgotten at a restart shows only when a candidate crashes
between two candidates' requests, so that hunt runs five voters (whose first vote of an
election splits more often than three's) that crash often; a follower truncates only what
diverges from the leader, so the hunt for a bad truncation cuts leaders off.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from kafka_ref.raft.election_state import NOT_SET, FileQuorumStateStore
from kafka_ref.raft.epoch_state import UnattachedState
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.sim.raft_checks import SafetyViolation
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
    """An unattached voter grants every candidate with a good log, its vote cast or not."""
    patched.setattr(UnattachedState, "can_grant_vote", lambda self, c, up_to_date, pre: up_to_date)


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
def test_voting_twice_in_an_epoch_elects_two_leaders(monkeypatch):
    violation, _ = hunt(monkeypatch, vote_twice)
    assert violation.prop == "election safety"


@pytest.mark.spec("RAFT-6", "RAFT-11")
def test_committing_without_a_majority_loses_a_committed_entry(monkeypatch):
    violation, _ = hunt(monkeypatch, commit_without_a_majority)
    assert violation.prop in ("leader completeness", "state machine safety")


@pytest.mark.spec("RAFT-3", "RAFT-9")
def test_forgetting_the_vote_on_restart_votes_twice(monkeypatch):
    crashing = worlds(voters=(5,), crash_rates=(0.05, 0.1, 0.2))
    violation, _ = hunt(monkeypatch, forget_the_vote_on_restart, crashing)
    # two candidates win with the same voter's two votes; which broken property the checker
    # meets first (two leaders of an epoch, or their two histories applied) depends on timing
    assert violation.prop in ("election safety", "leader completeness", "state machine safety")


@pytest.mark.spec("RAFT-7", "RAFT-12")
def test_truncating_below_the_high_watermark_removes_a_committed_entry(monkeypatch):
    partitions = partition_schedules()  # a leader cut off appends on; healed, it truncates
    violation, _ = hunt(monkeypatch, truncate_below_the_high_watermark, schedule=partitions)
    assert violation.prop == "state machine safety"

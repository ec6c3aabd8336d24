"""The replicated log: the leader's check of a fetch and the follower's truncation, the
high watermark's majority rule (Figure 8), recovery after a crash, the quorum-state file,
and the checker's log matching."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode, KafkaStorageError
from kafka_ref.raft.control_records import data_batch
from kafka_ref.raft.election_state import ElectionState, FileQuorumStateStore
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.messages import FetchRequest, FetchResponse, OffsetAndEpoch
from kafka_ref.raft.replicated_log import truncation_offset, validate_offset_and_epoch
from kafka_ref.sim.faults import crash_log
from kafka_ref.sim.raft_checks import RaftChecker, SafetyViolation
from tests.raft.voters import Voter, log_of, open_log

FIVE = (0, 1, 2, 3, 4)


@pytest.mark.spec("RAFT-7")
def test_a_fetch_agrees_or_gets_the_diverging_epoch(tmp_path):
    leader = log_of(tmp_path, [(1, 3), (3, 4)])  # epoch 1 at 0-2, epoch 3 at 3-6
    assert validate_offset_and_epoch(leader, 0, -1) is None  # an empty log agrees
    assert validate_offset_and_epoch(leader, 3, 1) is None  # at the end of epoch 1
    assert validate_offset_and_epoch(leader, 5, 3) is None
    assert validate_offset_and_epoch(leader, 5, 1) == OffsetAndEpoch(1, 3)  # epoch 1 ends at 3
    assert validate_offset_and_epoch(leader, 6, 2) == OffsetAndEpoch(1, 3)  # 2: never here
    assert validate_offset_and_epoch(leader, 9, 3) == OffsetAndEpoch(3, 7)  # past the end


@pytest.mark.spec("RAFT-7")
def test_a_follower_truncates_to_the_sooner_end_of_the_epoch(tmp_path):
    follower = log_of(tmp_path / "f", [(1, 5), (2, 3)])  # epoch 1 at 0-4, epoch 2 at 5-7
    assert truncation_offset(follower, OffsetAndEpoch(1, 3)) == 3  # the leader's end
    assert truncation_offset(follower, OffsetAndEpoch(2, 20)) == 8  # ours is sooner
    other = log_of(tmp_path / "g", [(1, 2), (4, 3)])  # lacks epoch 3
    assert truncation_offset(other, OffsetAndEpoch(3, 6)) == 2  # the end of its epoch 1


@pytest.mark.spec("RAFT-7")
def test_a_follower_refuses_to_truncate_below_its_high_watermark(tmp_path):
    voter = Voter(tmp_path, log=log_of(tmp_path, [(1, 5)]))
    voter.client._maybe_transition(1, 1, 0)
    voter.client.quorum.update_high_watermark(4)
    fetch = voter.client._in_flight  # the fetch the follower sends on its next poll
    voter.client.poll(0)
    [(_, (request, _))] = fetch.items()
    assert isinstance(request, FetchRequest)
    cut = FetchResponse(
        ErrorCode.NO_ERROR,
        1,
        1,
        4,
        diverging_epoch=OffsetAndEpoch(1, 2),
        correlation_id=request.correlation_id,
    )
    with pytest.raises(AssertionError, match="below the high watermark"):
        voter.client.handle(1, cut, 0)
    assert voter.log.end_offset == 5


@pytest.mark.spec("RAFT-6", "RAFT-7")
def test_a_diverging_answer_moves_no_high_watermark(tmp_path):
    """The follower holds epoch 1 at 5-7 and epoch 3 at 8-9; the leader of epoch 4 holds
    epoch 2 at 5-9, committed (its high watermark 11). Told that epoch 2 ends at 10 there,
    the follower, which lacks epoch 2, cuts to where its epoch 1 ends, 8: its entries of
    epoch 1 at 5-7 are still not the leader's, so the leader's high watermark must not make
    them committed. The next fetch, at (8, 1), is told where epoch 1 ends there."""
    voter = Voter(tmp_path, log=log_of(tmp_path, [(0, 5), (1, 3), (3, 2)]))
    voter.client._maybe_transition(1, 4, 0)
    voter.client.poll(0)
    [(_, (request, _))] = voter.client._in_flight.items()
    assert (request.fetch_offset, request.last_fetched_epoch) == (10, 3)
    cut = FetchResponse(
        ErrorCode.NO_ERROR,
        1,
        4,
        11,
        diverging_epoch=OffsetAndEpoch(2, 10),
        correlation_id=request.correlation_id,
    )
    voter.client.handle(1, cut, 0)
    assert voter.log.end_offset == 8
    assert voter.client.high_watermark == 0
    [(_, (again, _))] = voter.client._in_flight.items()
    assert (again.fetch_offset, again.last_fetched_epoch) == (8, 1)


def leader_of(epoch_start: int, voters=FIVE) -> LeaderState:
    return LeaderState(7, voters, 0, epoch_start, voters, now_ms=0, check_quorum_timeout_ms=300)


@pytest.mark.spec("RAFT-6")
def test_the_high_watermark_is_the_offset_a_majority_reached():
    leader = leader_of(epoch_start=0)
    leader.update_local_state(10)
    leader.update_replica_state(1, 8, 0)
    assert leader.maybe_update_high_watermark(0) == 0  # two of five
    leader.update_replica_state(2, 6, 0)
    assert leader.maybe_update_high_watermark(0) == 6  # three of five have 6
    leader.update_replica_state(3, 9, 0)
    assert leader.maybe_update_high_watermark(6) == 8


@pytest.mark.spec("RAFT-6")
def test_figure_8_old_entries_on_a_majority_commit_nothing_until_one_of_this_epoch_does():
    """The leader of epoch 7 started at offset 10 (its LeaderChange record there). Entries
    0-9, from older epochs, on a majority, are not committed by being there: a voter with a
    later epoch's entry at offset 9 could still be elected by voters lacking it."""
    leader = leader_of(epoch_start=10)
    leader.update_local_state(11)
    for voter in (1, 2):
        leader.update_replica_state(voter, 10, 0)  # they hold 0-9, not the LeaderChange
    assert leader.maybe_update_high_watermark(0) == 0
    leader.update_replica_state(1, 11, 0)
    leader.update_replica_state(2, 11, 0)
    assert leader.maybe_update_high_watermark(0) == 11  # the LeaderChange, and all before it


@pytest.mark.spec("RAFT-6")
def test_the_high_watermark_never_decreases(tmp_path):
    leader = leader_of(epoch_start=0, voters=(0, 1, 2))
    leader.update_local_state(10)
    leader.update_replica_state(1, 9, 0)
    assert leader.maybe_update_high_watermark(0) == 9
    leader.update_replica_state(1, 3, 0)  # a follower restarted and lost its tail
    assert leader.maybe_update_high_watermark(9) == 9
    quorum = Voter(tmp_path).client.quorum
    quorum.update_high_watermark(5)
    quorum.update_high_watermark(2)
    assert quorum.high_watermark == 5


@pytest.mark.spec("RAFT-8")
def test_the_log_recovers_to_what_was_flushed(tmp_path):
    log = log_of(tmp_path, [(1, 3), (2, 2)])  # flushed: 0-4
    log.append_as_leader(data_batch([b"lost"], 4, 0), 4)  # epoch 4 at 5, never flushed
    assert (log.end_offset, log.last_fetched_epoch) == (6, 4)
    crash_log(log.log, lose_unflushed=True)
    recovered = open_log(tmp_path)
    assert (recovered.end_offset, recovered.last_fetched_epoch) == (5, 2)
    assert recovered.end_offset_for_epoch(4) == OffsetAndEpoch(2, 5)
    recovered.append_as_leader(data_batch([b"new"], 5, 0), 5)
    recovered.flush()
    crash_log(recovered.log, lose_unflushed=True)
    again = open_log(tmp_path)
    assert (again.end_offset, again.last_fetched_epoch) == (6, 5)
    assert again.end_offset_for_epoch(2) == OffsetAndEpoch(2, 5)


@pytest.mark.spec("RAFT-8")
def test_a_leader_flushes_before_its_append_counts(tmp_path):
    voter = Voter(tmp_path, voters=(0,))
    voter.client.poll(500)  # a lone voter leads at once
    voter.client.append([b"a", b"b"], 500)
    assert voter.client.high_watermark == 3
    crash_log(voter.log.log, lose_unflushed=True)
    assert open_log(tmp_path).end_offset == 3


@pytest.mark.spec("RAFT-3")
def test_the_quorum_state_file_round_trips_and_a_missing_one_is_epoch_zero(tmp_path):
    assert Voter(tmp_path / "new").client.epoch == 0
    (tmp_path / "dir").mkdir()
    store = FileQuorumStateStore(tmp_path / "dir")
    assert store.read_election_state() is None
    state = ElectionState(4, leader_id=2, voted_id=1, voters=(0, 1, 2))
    store.write_election_state(state)
    assert store.read_election_state() == state
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [
        "quorum-state"
    ]  # no temp file left


@pytest.mark.spec("RAFT-3")
@pytest.mark.parametrize(
    "content", [b"", b'{"leaderEpoch":4,"leaderId":', b'{"data_version":7}', b"\xff\x00"]
)
def test_a_torn_or_foreign_quorum_state_file_is_a_storage_error(tmp_path, content):
    (tmp_path / "quorum-state").write_bytes(content)
    with pytest.raises(KafkaStorageError, match=r"malformed quorum state .*quorum-state"):
        FileQuorumStateStore(tmp_path).read_election_state()
    with pytest.raises(KafkaStorageError):
        Voter(tmp_path)


@pytest.mark.spec("RAFT-10")
def test_the_checker_finds_logs_that_agree_at_an_entry_but_not_before(tmp_path):
    a = log_of(tmp_path / "a", [(1, 1)])
    a.append_as_leader(data_batch([b"same"], 2, 0), 2)
    b = open_log(tmp_path / "b")
    b.append_as_leader(data_batch([b"other"], 1, 0), 1)
    b.append_as_leader(data_batch([b"same"], 2, 0), 2)
    c = log_of(tmp_path / "c", [(1, 1)])
    RaftChecker().check_logs([(0, a), (2, c)])  # a prefix of the other: they match
    with pytest.raises(SafetyViolation, match="log matching"):
        RaftChecker().check_logs([(0, a), (1, b)])

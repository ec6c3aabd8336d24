"""Elections, one voter at a time: timeouts and majorities, one vote per epoch remembered
across a restart, the pre-vote that changes nothing, the up-to-date check."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.raft.election_state import NOT_SET, ElectionState
from kafka_ref.raft.epoch_state import UnattachedState
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.messages import FetchResponse, VoteRequest, VoteResponse
from kafka_ref.raft.nominee_state import CandidateState, EpochElection, ProspectiveState
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.raft.quorum_state import QuorumState
from kafka_ref.raft.vote import can_grant_vote
from tests.raft.voters import Voter, log_of


def vote(candidate: int, epoch: int, last_epoch: int = -1, last_offset: int = 0, pre=False):
    return VoteRequest("", 0, epoch, candidate, last_epoch, last_offset, pre, correlation_id=7)


@pytest.mark.spec("RAFT-1")
def test_election_timeouts_are_drawn_in_one_to_two_timeouts(tmp_path):
    quorum = QuorumState(
        0, (0, 1, 2), None, log_of(tmp_path, []), QuorumConfig(1000), random.Random(1)
    )
    drawn = {quorum.random_election_timeout_ms() for _ in range(500)}
    assert min(drawn) >= 1000 and max(drawn) < 2000 and len(drawn) > 300
    narrow = QuorumConfig(1000, election_jitter_ms=10)
    quorum = QuorumState(0, (0, 1, 2), None, quorum.log, narrow, random.Random(1))
    assert {quorum.random_election_timeout_ms() for _ in range(500)} == set(range(1000, 1010))
    none = QuorumConfig(1000, election_jitter_ms=0)
    quorum = QuorumState(0, (0, 1, 2), None, quorum.log, none, random.Random(1))
    assert {quorum.random_election_timeout_ms() for _ in range(50)} == {1000}


@pytest.mark.spec("RAFT-1")
def test_a_majority_is_more_than_half_and_each_voter_counts_once():
    election = EpochElection((0, 1, 2, 3, 4), local_id=0)
    election.record_vote(1, True)
    election.record_vote(1, True)  # a duplicated response
    election.record_vote(7, True)  # not a voter
    assert not election.is_vote_granted()
    election.record_vote(2, True)
    assert election.is_vote_granted()
    lost = EpochElection((0, 1, 2), local_id=0)
    lost.record_vote(1, False)
    assert not lost.is_vote_rejected()
    lost.record_vote(2, False)
    assert lost.is_vote_rejected() and not lost.is_vote_granted()


@pytest.mark.spec("RAFT-1")
def test_a_lone_voter_elects_itself_after_its_timeout(tmp_path):
    voter = Voter(tmp_path, local_id=0, voters=(0,))
    voter.client.poll(10)
    assert isinstance(voter.client.state, UnattachedState)
    voter.client.poll(voter.client.poll_timeout_ms(10) + 10)
    state = voter.client.state
    assert isinstance(state, LeaderState) and state.epoch == 1
    assert voter.client.high_watermark == 1  # its LeaderChange record, committed alone


@pytest.mark.spec("RAFT-2")
def test_one_vote_per_epoch_remembered_across_a_restart(tmp_path):
    voter = Voter(tmp_path)
    assert voter.ask(1, vote(1, 1)).vote_granted
    assert voter.ask(1, vote(1, 1)).vote_granted  # a retry from the same candidate
    assert not voter.ask(2, vote(2, 1)).vote_granted
    assert voter.store.read_election_state() == ElectionState(1, NOT_SET, 1, (0, 1, 2))
    voter = voter.restart()
    assert voter.client.state.voted_id == 1
    assert not voter.ask(2, vote(2, 1)).vote_granted
    assert voter.ask(2, vote(2, 2)).vote_granted  # a later epoch: a new vote


@pytest.mark.spec("RAFT-2")
def test_an_older_epoch_is_fenced_and_a_later_one_adopted(tmp_path):
    voter = Voter(tmp_path)
    voter.ask(1, vote(1, 3))
    old = voter.ask(2, vote(2, 2))
    assert (old.error_code, old.leader_epoch, old.vote_granted) == (
        ErrorCode.FENCED_LEADER_EPOCH,
        3,
        False,
    )
    later = FetchResponse(ErrorCode.FENCED_LEADER_EPOCH, 2, 5, correlation_id=7)
    voter.client._in_flight[2] = (vote(0, 3), 0)  # a request it waits an answer to
    voter.client.handle(2, later, 0)
    assert voter.client.epoch == 5 and voter.client.state.leader_id == 2


@pytest.mark.spec("RAFT-3")
def test_the_vote_is_on_disk_before_it_is_answered(tmp_path):
    voter = Voter(tmp_path)
    on_disk_when_sent = []
    voter.client._send = lambda dst, message: on_disk_when_sent.append(
        voter.store.read_election_state()
    )
    voter.client.handle(1, vote(1, 1), 0)
    assert on_disk_when_sent[0].voted_id == 1 and on_disk_when_sent[0].epoch == 1


@pytest.mark.spec("RAFT-3")
def test_a_restart_comes_back_resigned_follower_or_unattached(tmp_path):
    leader = Voter(tmp_path / "a", voters=(0,))
    leader.client.poll(500)
    assert isinstance(leader.client.state, LeaderState)
    assert type(leader.restart().client.state).__name__ == "ResignedState"
    follower = Voter(tmp_path / "b")
    follower.ask(1, vote(1, 1))
    follower.client._maybe_transition(1, 1, 0)
    restarted = follower.restart().client.state
    assert isinstance(restarted, FollowerState) and restarted.leader_id == 1
    assert restarted.voted_id == 1


@pytest.mark.spec("RAFT-4")
def test_a_pre_vote_changes_nothing(tmp_path):
    fresh = Voter(tmp_path / "fresh")
    assert fresh.ask(1, vote(1, 1, pre=True)).vote_granted
    assert (fresh.client.epoch, fresh.client.state.voted_id) == (0, NOT_SET)
    assert not (tmp_path / "fresh" / "quorum-state").exists()  # nothing written
    voter = Voter(tmp_path)
    voter.ask(1, vote(1, 1))
    before = (tmp_path / "quorum-state").read_bytes()
    answer = voter.ask(2, vote(2, 2, pre=True))
    assert answer.vote_granted and answer.leader_epoch == 1  # would vote, in epoch 1 still
    assert voter.client.epoch == 1 and voter.client.state.voted_id == 1
    assert (tmp_path / "quorum-state").read_bytes() == before
    assert voter.ask(2, vote(2, 2)).vote_granted  # the real vote is still free


@pytest.mark.spec("RAFT-4")
def test_a_follower_fetching_from_its_leader_refuses_pre_votes(tmp_path):
    voter = Voter(tmp_path)
    voter.client._maybe_transition(1, 1, 0)
    assert voter.ask(2, vote(2, 2, pre=True)).vote_granted  # not yet heard from its leader
    voter.client.state.reset_fetch_timeout(0, 200)
    assert not voter.ask(2, vote(2, 2, pre=True)).vote_granted


@pytest.mark.spec("RAFT-4")
def test_a_lost_pre_vote_returns_to_the_same_epoch(tmp_path):
    voter = Voter(tmp_path)
    voter.client._maybe_transition(1, 1, 0)
    voter.client.poll(10_000)  # the fetch timeout expires: prospective, same epoch
    state = voter.client.state
    assert isinstance(state, ProspectiveState) and state.epoch == 1
    requests = [m for _, m in voter.sent if isinstance(m, VoteRequest)]
    assert requests and all(r.pre_vote and r.candidate_epoch == 2 for r in requests)
    for source, request in [(d, m) for d, m in voter.sent if isinstance(m, VoteRequest)]:
        refused = VoteResponse(ErrorCode.NO_ERROR, NOT_SET, 1, False, request.correlation_id)
        voter.client.handle(source, refused, 10_000)
    state = voter.client.state
    assert isinstance(state, FollowerState) and (state.epoch, state.leader_id) == (1, 1)
    assert not isinstance(state, CandidateState)


@pytest.mark.spec("RAFT-5")
def test_a_later_last_epoch_is_more_up_to_date_whatever_the_length(tmp_path):
    quorum = QuorumState(
        0, (0, 1, 2), None, log_of(tmp_path, [(1, 3), (2, 2)]), QuorumConfig(), random.Random()
    )  # last epoch 2, end offset 5
    voter = quorum.voter_state()
    assert (voter.last_epoch, voter.end_offset) == (2, 5)
    for pre in (False, True):
        assert can_grant_vote(voter, vote(1, 3, 3, 1, pre))  # later epoch, shorter
        assert can_grant_vote(voter, vote(1, 3, 2, 5, pre))  # same epoch, as long
        assert not can_grant_vote(voter, vote(1, 3, 2, 4, pre))  # same epoch, shorter
        assert not can_grant_vote(voter, vote(1, 3, 1, 100, pre))  # older epoch, longer


@pytest.mark.spec("RAFT-5")
def test_no_vote_for_a_stale_log(tmp_path):
    voter = Voter(tmp_path, log=log_of(tmp_path, [(1, 3)]))
    assert not voter.ask(1, vote(1, 2, last_epoch=1, last_offset=2)).vote_granted
    assert voter.client.state.voted_id == NOT_SET  # refused: still free
    assert voter.ask(2, vote(2, 2, last_epoch=1, last_offset=3)).vote_granted


@pytest.mark.spec("RAFT-2", "RAFT-4")
def test_a_leader_a_resigned_leader_and_a_candidate_grant_no_vote_in_their_epoch(tmp_path):
    """A leader and a resigned leader refuse votes and pre-votes; a candidate, having voted
    for itself, refuses votes but grants a pre-vote for the next epoch; a real vote of a
    later epoch is granted by any of them, which then follows that epoch without a leader."""
    leader = Voter(tmp_path / "leader", voters=(0,))
    leader.client.poll(500)
    assert isinstance(leader.client.state, LeaderState) and leader.client.epoch == 1
    end = leader.log.end_offset
    for pre in (False, True):
        assert not leader.ask(1, vote(1, 1 + pre, 1, end, pre)).vote_granted
    resigned = leader.restart()
    assert type(resigned.client.state).__name__ == "ResignedState"
    for pre in (False, True):
        assert not resigned.ask(1, vote(1, 1 + pre, 1, end, pre)).vote_granted
    candidate = Voter(tmp_path / "candidate")
    candidate.client.poll(10_000)  # prospective: asks for pre-votes
    granted = VoteResponse(ErrorCode.NO_ERROR, NOT_SET, 0, True, 0)
    for source, request in [(d, m) for d, m in candidate.sent if isinstance(m, VoteRequest)]:
        candidate.client.handle(source, replace(granted, correlation_id=request.correlation_id), 0)
    assert isinstance(candidate.client.state, CandidateState) and candidate.client.epoch == 1
    assert not candidate.ask(2, vote(2, 1)).vote_granted
    assert candidate.ask(2, vote(2, 2, pre=True)).vote_granted
    assert candidate.ask(2, vote(2, 2)).vote_granted  # a later epoch
    assert candidate.client.state.voted_id == 2 and candidate.client.epoch == 2


@pytest.mark.spec("RAFT-2")
def test_the_quorum_state_never_records_two_votes_in_an_epoch(tmp_path):
    """Whoever decides the vote, the switch that records it asserts one vote per epoch, and
    none in an epoch whose leader the voter knows."""
    voter = Voter(tmp_path)
    quorum = voter.client.quorum
    assert voter.ask(1, vote(1, 1)).vote_granted
    quorum.transition_to_unattached_voted(1, 0)  # the same candidate again: nothing new
    with pytest.raises(AssertionError, match="two votes in one epoch"):
        quorum.transition_to_unattached_voted(2, 0)
    voter.client._maybe_transition(2, 2, 0)
    with pytest.raises(AssertionError, match="whose leader 2 it knows"):
        quorum.transition_to_unattached_voted(1, 0)

"""Lets the vote cast in its epoch bind a pre-vote: having voted for another (or for itself, as
a candidate), it refuses every pre-vote. After a split vote, where each candidate voted for
itself, no node can win a pre-vote again (RAFT-4, RAFT-13)."""

from __future__ import annotations

from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import OffsetAndEpoch, VoteRequest
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.raft.vote import VoterState


def can_grant_vote(voter: VoterState, request: VoteRequest) -> bool:
    if request.candidate_epoch < voter.epoch:
        return False
    if request.last_offset_epoch != voter.last_epoch:
        up_to_date = request.last_offset_epoch > voter.last_epoch
    else:
        up_to_date = request.last_offset >= voter.end_offset
    if not up_to_date:
        return False
    if request.pre_vote:
        if voter.voted_id not in (NOT_SET, request.candidate_id):
            return False
        return voter.leader_id != voter.local_id and not voter.fetched_from_leader
    if request.candidate_epoch > voter.epoch:
        return True
    if voter.leader_id != NOT_SET:
        return False
    return voter.voted_id in (NOT_SET, request.candidate_id)


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset

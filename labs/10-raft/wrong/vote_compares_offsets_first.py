"""Compares the logs by end offset first, then by last epoch: a longer log of an older epoch
wins the vote, and its leader may lack entries committed in a later epoch (RAFT-5, and
leader completeness, RAFT-11)."""

from __future__ import annotations

from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import OffsetAndEpoch, VoteRequest
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.raft.vote import VoterState


def can_grant_vote(voter: VoterState, request: VoteRequest) -> bool:
    if request.candidate_epoch < voter.epoch:
        return False
    if request.last_offset != voter.end_offset:
        up_to_date = request.last_offset > voter.end_offset
    else:
        up_to_date = request.last_offset_epoch >= voter.last_epoch
    if not up_to_date:
        return False
    if request.pre_vote:
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

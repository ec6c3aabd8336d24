"""Compares offsets only: cuts at the leader's end of the diverging epoch (capped at its own
log end) whether or not the follower holds that epoch. A follower without it keeps entries
of its own later epochs below that offset, and is told the same again, forever (RAFT-7)."""

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
        return voter.leader_id != voter.local_id and not voter.fetched_from_leader
    if request.candidate_epoch > voter.epoch:
        return True
    if voter.leader_id != NOT_SET:
        return False
    return voter.voted_id in (NOT_SET, request.candidate_id)


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    return min(diverging.offset, log.end_offset)

"""Holds the voter to the vote it cast in its own epoch in a later epoch too: having voted for
node 2 in epoch 5, it refuses node 1 in epoch 6. After a split vote every voter has voted
for someone else and no candidate can win again (RAFT-2, RAFT-13)."""

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
        return voter.voted_id in (NOT_SET, request.candidate_id)
    if voter.leader_id != NOT_SET:
        return False
    return voter.voted_id in (NOT_SET, request.candidate_id)


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset

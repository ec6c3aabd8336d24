"""Never looks at the request's epoch for a refusal: a candidate of an epoch the voter has left
behind gets its vote, by the same rules as one of the voter's own epoch (RAFT-2: an older
epoch is refused; kafka-ref's client fences it first, the function must say no too)."""

from __future__ import annotations

from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import OffsetAndEpoch, VoteRequest
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.raft.vote import VoterState


def can_grant_vote(voter: VoterState, request: VoteRequest) -> bool:
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
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset

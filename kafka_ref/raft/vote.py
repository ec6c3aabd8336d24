"""The vote: whether a voter grants a candidate its vote, or a pre-vote (Kafka:
`KafkaRaftClient.handleVoteRequest` and the epoch states' `canGrantVote`).

Raft's safety rests on two rules a voter applies to every VoteRequest (Raft paper section
5.2 and 5.4.1):

* **one vote per epoch** (RAFT-2). A candidate wins an epoch with the votes of a majority,
  and two majorities share a voter: if that voter votes once, two candidates cannot both
  win. The vote belongs to the epoch: in a later epoch the voter has not voted yet, and
  knows no leader. The same candidate asking again (its request or the answer was lost)
  gets the same yes. A voter that knows its epoch's leader (it leads it, led it, or
  follows it) votes for nobody in it: the epoch is decided. A candidate has voted for
  itself.
* **only for a log at least as up to date** (RAFT-5): the candidate's last batch has a later
  epoch than the voter's, or the same epoch and the candidate's log end offset is at least
  the voter's. Every committed entry is on a majority; the winner needs a majority's votes;
  a voter of both majorities holds the entry and refuses a candidate without it. So every
  leader holds every entry committed before it (leader completeness).

A request of an epoch older than the voter's is refused: the voter has moved on (the client
answers FENCED_LEADER_EPOCH).

A **pre-vote** (KIP-996, RAFT-4) asks "would you vote for me in the next epoch?". It binds
nothing, so the vote already cast in this epoch does not count, and nothing is recorded.
Only the log does, and whether the voter's leader is alive: a voter that leads its epoch (or
led it and resigned), or a follower that has fetched from its leader in this epoch, says no,
so a node that merely lost touch with a healthy leader cannot depose it.

`can_grant_vote` decides from a snapshot of the voter (`VoterState`, which `QuorumState`
takes) and the request. The client does the rest (kafka_raft_client.py): it fences an older
epoch, moves to a later one on a real vote, and writes a granted vote to the `quorum-state`
file before it answers (RAFT-3); the quorum state asserts that a voter never records two
votes in one epoch, nor a vote in an epoch whose leader it knows.

Rules: RAFT-2, RAFT-4, RAFT-5.
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import VoteRequest
from kafka_ref.seams import seam


class VoterState(NamedTuple):
    """What a voter knows when a VoteRequest reaches it."""

    local_id: int  # the voter's own id
    epoch: int  # its current epoch
    voted_id: int  # whom it voted for in `epoch` (itself, as candidate or leader), or NOT_SET
    leader_id: int  # the leader of `epoch` it knows (itself, if it leads or led it), or NOT_SET
    fetched_from_leader: bool  # a follower that has fetched from that leader in `epoch`
    last_epoch: int  # the epoch of its log's last batch (-1: an empty log)
    end_offset: int  # its log end offset


@seam
def can_grant_vote(voter: VoterState, request: VoteRequest) -> bool:
    """Whether `voter` grants the vote (or the pre-vote, `request.pre_vote`) `request` asks
    for (RAFT-2, RAFT-4, RAFT-5)."""
    if request.candidate_epoch < voter.epoch:
        return False  # an older epoch: the voter has moved on
    candidate_log = (request.last_offset_epoch, request.last_offset)
    log_up_to_date = candidate_log >= (voter.last_epoch, voter.end_offset)  # epoch first
    if request.pre_vote:
        leads = voter.leader_id == voter.local_id
        return log_up_to_date and not leads and not voter.fetched_from_leader
    if request.candidate_epoch > voter.epoch:
        return log_up_to_date  # a new epoch: no vote cast in it, no leader known
    if voter.leader_id != NOT_SET:
        return False  # this epoch has a leader
    if voter.voted_id != NOT_SET:
        return voter.voted_id == request.candidate_id  # one vote; the same again on a retry
    return log_up_to_date

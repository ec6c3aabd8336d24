"""Asking for votes: the prospective node (pre-vote, KIP-996) and the candidate.

An election in Raft bumps the epoch: a candidate takes epoch + 1, votes for itself and asks
every voter (Raft paper section 5.2). A bumped epoch is disruptive: any node that hears of
it gives up the older epoch, a healthy leader included. So a node that has merely lost
touch (it was partitioned away, its own network flapped) would depose a leader the rest of
the quorum is happy with, every time it comes back.

KIP-996 puts a **pre-vote** in front (Raft thesis section 9.6). A **prospective** node
keeps its epoch and asks "would you vote for me in epoch + 1?" (a VoteRequest with
`pre_vote`). A voter answers as it would a real vote but changes nothing: no epoch bump,
no vote recorded, nothing written; a follower still fetching from a live leader says no.
Only with a majority of pre-votes does the node become a **candidate**, bump the epoch and
ask for real votes. A prospective node whose pre-vote fails, or times out, goes back to
waiting (Unattached, or Follower if it knows a leader) in the same epoch (RAFT-4).

`EpochElection` counts the answers of one election, granted or rejected, one per voter: a
duplicated response counts once. A majority is more than half of the voters, the node's own
vote included (RAFT-1).

Rules: RAFT-1, RAFT-4.
"""

from __future__ import annotations

from kafka_ref.raft.election_state import ElectionState
from kafka_ref.raft.epoch_state import EpochState


def majority_size(voters: tuple[int, ...]) -> int:
    return len(voters) // 2 + 1


class EpochElection:
    """The votes of one election (Kafka: `EpochElection`)."""

    def __init__(self, voters: tuple[int, ...], local_id: int) -> None:
        self.voters = voters
        self.granted = {local_id}
        self.rejected: set[int] = set()

    def record_vote(self, voter_id: int, granted: bool) -> None:
        if voter_id not in self.voters or voter_id in self.granted | self.rejected:
            return  # not a voter, or already counted (a duplicate)
        (self.granted if granted else self.rejected).add(voter_id)

    def unrecorded(self) -> list[int]:
        return [v for v in self.voters if v not in self.granted | self.rejected]

    def is_vote_granted(self) -> bool:
        return len(self.granted) >= majority_size(self.voters)

    def is_vote_rejected(self) -> bool:
        return len(self.rejected) > len(self.voters) - majority_size(self.voters)


class ProspectiveState(EpochState):
    """Asking for pre-votes for epoch + 1 (Kafka: `ProspectiveState`). Keeps what it knew
    of its epoch: its vote, and the leader it had (so that losing returns to it)."""

    name = "Prospective"

    def __init__(
        self,
        epoch: int,
        voters: tuple[int, ...],
        local_id: int,
        voted_id: int,
        leader_id: int,
        election_deadline_ms: int,
    ) -> None:
        super().__init__(epoch, voters, voted_id)
        self.known_leader_id = leader_id
        self.election_deadline_ms = election_deadline_ms
        self.epoch_election = EpochElection(voters, local_id)

    @property
    def leader_id(self) -> int:
        """The leader it followed, if any: asking for pre-votes does not end its epoch, so a
        peer's answer naming that leader is no news (Kafka: `ProspectiveState.leaderId`)."""
        return self.known_leader_id

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.known_leader_id, self.voted_id, self.voters)

    def deadline_ms(self) -> int | None:
        return self.election_deadline_ms


class CandidateState(EpochState):
    """Asking for votes in its own, bumped epoch, having voted for itself (Kafka:
    `CandidateState`). Wins with a majority; on a majority of rejections it backs off a
    random while, and when its election timer expires it becomes prospective again."""

    name = "Candidate"

    def __init__(
        self, epoch: int, voters: tuple[int, ...], local_id: int, election_deadline_ms: int
    ) -> None:
        super().__init__(epoch, voters, voted_id=local_id)
        self.local_id = local_id
        self.election_deadline_ms = election_deadline_ms
        self.epoch_election = EpochElection(voters, local_id)

    def deadline_ms(self) -> int | None:
        return self.election_deadline_ms

"""A voter's state in one epoch: the base of the states, and the two simplest ones.

A voter is always in exactly one **epoch state** (Kafka: `EpochState`), held by
quorum_state.py, which is the only one to switch them:

    Unattached --election timeout--> Prospective --pre-vote majority--> Candidate
        ^                                 |                                |
        |                         lost / timeout                     vote majority
        |                                 v                                v
        +---------- higher epoch -- Follower <----- BeginQuorumEpoch --- Leader --> Resigned

An **observer** (a node outside the voter set, RAFT-18) knows only the two states on the
left of the picture: Unattached, while it looks for the leader, and Follower.

* **Unattached**: the epoch is known, its leader is not; the voter may have voted in it.
* **Prospective** (KIP-996): asking for pre-votes, without bumping the epoch.
* **Candidate**: the epoch bumped, voted for itself, asking for votes.
* **Leader** / **Follower**: the epoch's leader, and the voters that know it.
* **Resigned**: a leader that stopped leading (shut down gracefully, or lost its majority)
  and waits for the next epoch; it never leads this epoch again.

Each state answers two questions: its epoch and what of it must be durable (`election`, an
`ElectionState`: the epoch, the leader it knows, the vote it cast), and when its timer
expires (`deadline_ms`, on the clock passed in; no state reads the time itself). Whom it
may vote for is decided from what it knows, its epoch, vote and leader (and a follower's
whether it has fetched from that leader), the same way in every state (vote.py).

Rules: RAFT-2, RAFT-18.
"""

from __future__ import annotations

from kafka_ref.raft.election_state import NOT_SET, ElectionState


class EpochState:
    """What every epoch state has: an epoch, voters, a durable part, a vote policy."""

    name = "Epoch"

    def __init__(self, epoch: int, voters: tuple[int, ...], voted_id: int = NOT_SET) -> None:
        self.epoch = epoch
        self.voters = voters
        self.voted_id = voted_id  # the candidate this voter voted for in `epoch`, or -1

    def election(self) -> ElectionState:
        """The part of this state that must survive a crash."""
        return ElectionState(self.epoch, self.leader_id, self.voted_id, self.voters)

    @property
    def leader_id(self) -> int:
        return NOT_SET

    def deadline_ms(self) -> int | None:
        """When this state's timer expires (absolute, on the caller's clock), if it has one."""
        return None

    def __repr__(self) -> str:
        return f"{self.name}(epoch={self.epoch}, leader={self.leader_id})"


class UnattachedState(EpochState):
    """An epoch without a known leader (Kafka: `UnattachedState`; with a vote, once
    `VotedState`). A voter waits a random election timeout, then becomes prospective; an
    observer has no election timer (`election_deadline_ms` None): it only asks the bootstrap
    servers who leads (RAFT-18)."""

    name = "Unattached"

    def __init__(
        self,
        epoch: int,
        voters: tuple[int, ...],
        voted_id: int,
        election_deadline_ms: int | None,
    ) -> None:
        super().__init__(epoch, voters, voted_id)
        self.election_deadline_ms = election_deadline_ms

    def deadline_ms(self) -> int | None:
        return self.election_deadline_ms


class ResignedState(EpochState):
    """A leader that has stopped leading its epoch (Kafka: `ResignedState`). It tells the
    voters (EndQuorumEpoch, with its preferred successors), grants no vote in its epoch,
    and after an election timeout becomes prospective itself."""

    name = "Resigned"

    def __init__(
        self,
        epoch: int,
        voters: tuple[int, ...],
        local_id: int,
        preferred_successors: tuple[int, ...],
        election_deadline_ms: int,
    ) -> None:
        super().__init__(epoch, voters, voted_id=local_id)
        self.local_id = local_id
        self.preferred_successors = preferred_successors
        self.election_deadline_ms = election_deadline_ms
        self.unacknowledged = set(voters) - {local_id}  # who has not answered EndQuorumEpoch

    @property
    def leader_id(self) -> int:
        return self.local_id

    def deadline_ms(self) -> int | None:
        return self.election_deadline_ms

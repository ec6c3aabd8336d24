"""A voter that knows its epoch's leader, and fetches from it (Kafka: `FollowerState`).

A follower pulls: it sends Fetch with its log end offset and last fetched epoch, appends
what comes back, fsyncs it, and fetches again (RAFT-7, RAFT-8). Every good answer from the
leader resets its **fetch timer**; when it expires (`fetch_timeout_ms` with no answer) the
follower presumes the leader gone and becomes prospective (RAFT-4).

An EndQuorumEpoch from its leader (the leader resigns) brings the timer forward: the first
of the leader's preferred successors starts at once, the others after a backoff that grows
with their place in the list, so that the most caught-up voter usually wins.

A follower grants no real vote in its epoch (the epoch has a leader). It grants a pre-vote
only while it has not yet heard from its leader in this epoch (KIP-996): a follower that
fetches happily keeps a lone disconnected voter from deposing the leader it follows. Hence
`has_fetched_from_leader`, which the vote's decision reads (vote.py).

A follower told to load a snapshot (its fetch fell below the leader's log start offset)
**fetches the snapshot** instead of the log: `fetching_snapshot` holds the snapshot's id
and the bytes copied so far, and each FetchSnapshot asks from where they end (RAFT-23).

Rules: RAFT-4, RAFT-7, RAFT-23.
"""

from __future__ import annotations

from kafka_ref.raft.epoch_state import EpochState
from kafka_ref.raft.messages import OffsetAndEpoch


class FollowerState(EpochState):
    name = "Follower"

    def __init__(
        self,
        epoch: int,
        voters: tuple[int, ...],
        leader_id: int,
        voted_id: int,
        fetch_deadline_ms: int,
    ) -> None:
        super().__init__(epoch, voters, voted_id)
        self._leader_id = leader_id
        self.fetch_deadline_ms = fetch_deadline_ms
        self.has_fetched_from_leader = False
        self.fetching_snapshot: tuple[OffsetAndEpoch, bytearray] | None = None

    @property
    def leader_id(self) -> int:
        return self._leader_id

    def reset_fetch_timeout(self, now_ms: int, fetch_timeout_ms: int) -> None:
        self.fetch_deadline_ms = now_ms + fetch_timeout_ms
        self.has_fetched_from_leader = True

    def deadline_ms(self) -> int | None:
        return self.fetch_deadline_ms

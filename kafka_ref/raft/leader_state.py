"""The leader of an epoch: what it knows of each voter, and its high watermark.

Like an ISR leader (kafka_ref/replication/partition.py), a Raft leader learns how far each
follower is from the follower's own fetches: a fetch at offset O, accepted (its last
fetched epoch agrees with the leader's log), says the follower holds, fsynced, everything
below O (Kafka: `LeaderState.updateReplicaState`). Its own end offset counts once flushed.

Where the two part is the **high watermark**. An ISR leader takes the smallest end offset
of the in-sync replicas, a set the controller keeps and may shrink to the leader alone. A
Raft leader takes the offset a **majority of the voters** has reached (sort the voters'
end offsets, largest first, take the one at position n / 2): no set to maintain, no
controller, and any later majority, the one that elects the next leader, overlaps it
(RAFT-6).

One more condition, the subtle one of Raft (paper section 5.4.2, Figure 8): the high
watermark moves only once it covers an entry of the leader's own epoch, that is past
`epoch_start_offset`, where the leader's LeaderChange record sits (Kafka:
`LeaderState.maybeUpdateHighWatermark`). An entry of an older epoch stored on a majority
may still be overwritten: a voter holding a later epoch's entry at that offset can be
elected by voters that lack it. Counting replicas of old entries would commit, and hand to
the application, a record a later leader erases. Once an entry of the current epoch is on a
majority, no voter without it can win (its log is less up to date than a majority's), and
everything before it is safe too.

The leader also **checks its quorum** (Kafka's check quorum): if a majority of voters has
not fetched within 1.5 fetch timeouts, it resigns, rather than lead a minority forever.

**Observers** (RAFT-19) fetch too, and the leader serves them the same records, but they
count for nothing: not in the high watermark, not in the check of the quorum. Their
replicas are kept apart (`observers`, Kafka's `observerStates`) only to be described
(DescribeQuorum's Observers), and one not heard from for `OBSERVER_SESSION_TIMEOUT_MS` is
forgotten. A fetch from no node at all (replica id -1) is served and not tracked.

Rules: RAFT-6, RAFT-19.
"""

from __future__ import annotations

import uuid

from kafka_ref.raft.epoch_state import EpochState
from kafka_ref.raft.nominee_state import majority_size

OBSERVER_SESSION_TIMEOUT_MS = 300_000  # Kafka: LeaderState.OBSERVER_SESSION_TIMEOUT_MS


class ReplicaState:
    """What the leader knows of one replica: its end offset (None until it fetched)."""

    __slots__ = ("directory_id", "end_offset", "last_caught_up_ms", "last_fetch_ms")

    def __init__(self) -> None:
        self.end_offset: int | None = None
        self.last_fetch_ms = -1
        self.last_caught_up_ms = -1  # when it last fetched at the leader's end (DescribeQuorum)
        self.directory_id: uuid.UUID | None = None  # an observer's metadata log directory


class LeaderState(EpochState):
    name = "Leader"

    def __init__(
        self,
        epoch: int,
        voters: tuple[int, ...],
        local_id: int,
        epoch_start_offset: int,
        granting_voters: tuple[int, ...],
        now_ms: int,
        check_quorum_timeout_ms: int,
    ) -> None:
        super().__init__(epoch, voters, voted_id=local_id)
        self.local_id = local_id
        self.epoch_start_offset = epoch_start_offset
        self.granting_voters = granting_voters
        self.replicas = {v: ReplicaState() for v in voters}  # what the majority is taken of
        self.observers: dict[int, ReplicaState] = {}  # never counted: only described
        self.check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum_deadline_ms = now_ms + check_quorum_timeout_ms
        self._fetched_since_check = {local_id}
        self.acknowledged = {local_id}  # voters known to have heard of this epoch

    @property
    def leader_id(self) -> int:
        return self.local_id

    def deadline_ms(self) -> int | None:
        return self.check_quorum_deadline_ms

    # ------------------------------------------------------------------ replicas
    def update_local_state(self, end_offset: int) -> None:
        """The leader's own log reached `end_offset`, fsynced."""
        self.replicas[self.local_id].end_offset = end_offset

    def update_replica_state(
        self,
        replica_id: int,
        end_offset: int,
        now_ms: int,
        directory_id: uuid.UUID | None = None,
    ) -> None:
        """A replica fetched at `end_offset`, its log agreeing with the leader's below it.
        A voter's fetch counts toward the check of the quorum; an observer's is only
        recorded (Kafka: `LeaderState.updateReplicaState`)."""
        if replica_id < 0:
            return  # a fetcher that is no replica (Kafka ignores negative ids)
        voter = replica_id in self.replicas
        replica = (
            self.replicas[replica_id]
            if voter
            else self.observers.setdefault(replica_id, ReplicaState())
        )
        replica.end_offset = end_offset
        replica.last_fetch_ms = now_ms
        if end_offset >= (self.replicas[self.local_id].end_offset or 0):
            replica.last_caught_up_ms = now_ms
        if not voter:  # RAFT-19: an observer is described, never counted
            replica.directory_id = directory_id
            return
        self.update_check_quorum(replica_id, now_ms)

    def update_check_quorum(self, replica_id: int, now_ms: int) -> None:
        """A voter fetched (the log, or a snapshot): it follows this leader (Kafka:
        `updateCheckQuorumForFollowingVoter`)."""
        if replica_id not in self.replicas:
            return
        self.acknowledged.add(replica_id)
        self._fetched_since_check.add(replica_id)
        if len(self._fetched_since_check) >= majority_size(self.voters):
            self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms
            self._fetched_since_check = {self.local_id}

    def observer_states(self, now_ms: int) -> dict[int, ReplicaState]:
        """The observers heard from within the session timeout; the others are forgotten
        (Kafka: `observerStates`, `clearInactiveObservers`)."""
        for replica_id, replica in list(self.observers.items()):
            if now_ms - replica.last_fetch_ms >= OBSERVER_SESSION_TIMEOUT_MS:
                del self.observers[replica_id]
        return self.observers

    def majority_end_offset(self) -> int:
        """The largest offset a majority of the voters has reached (observers not counted)."""
        offsets = sorted((r.end_offset or 0 for r in self.replicas.values()), reverse=True)
        return offsets[majority_size(self.voters) - 1]

    def maybe_update_high_watermark(self, high_watermark: int) -> int:
        """The high watermark after the voters' latest offsets: the majority's offset, if it
        covers an entry of this epoch and is larger than `high_watermark` (RAFT-6)."""
        candidate = self.majority_end_offset()
        if candidate > self.epoch_start_offset and candidate > high_watermark:
            return candidate
        return high_watermark

    def non_leader_voters_by_descending_fetch_offset(self) -> tuple[int, ...]:
        """The preferred successors of a resigning leader, the most caught up first."""
        others = [v for v in self.voters if v != self.local_id]
        return tuple(sorted(others, key=lambda v: -(self.replicas[v].end_offset or 0)))

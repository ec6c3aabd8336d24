"""The messages of the Raft quorum (KIP-595), as plain values.

The quorum core never touches a socket: whoever drives it (the simulator in `kafka_ref/sim/`,
later the broker's controller listener) carries these values between the voters. Each is the
one-partition part of a Kafka request or response, with the fields of Kafka's message
definitions (`clients/src/main/resources/common/message/*.json`) under snake_case names:

* `VoteRequest` / `VoteResponse` (API key 52): a candidate asks for a vote in its epoch. With
  `pre_vote` (KIP-996, VoteRequest v2) it only asks "would you vote for me?": the voter
  changes nothing, neither its epoch nor its vote, and a node whose pre-vote fails never
  bumps the epoch and so never disturbs a healthy leader.
* `BeginQuorumEpochRequest` / `Response` (53): a new leader tells the voters it won.
* `EndQuorumEpochRequest` / `Response` (54): a leader that resigns tells the voters, with the
  voters it prefers as successors (the most caught up first), so they need not wait for
  their fetch timeout.
* `FetchRequest` / `FetchResponse` (1): followers, and observers (RAFT-18), pull from the
  leader, as Kafka's ISR replication does. The request carries the follower's log end
  (`fetch_offset`) and the epoch of its last batch (`last_fetched_epoch`); the leader
  checks the two against its own log and answers either records and its high watermark,
  or a `diverging_epoch`: "your epoch E ends at offset O on my log, truncate there"
  (KIP-595 reuses KIP-279's truncation by leader epoch, but inside Fetch instead of a
  separate OffsetsForLeaderEpoch round). A follower whose fetch falls below the leader's
  log start offset gets a `snapshot_id` instead (KIP-630): the snapshot to load first.
* `FetchSnapshotRequest` / `Response` (59, KIP-630): that follower copies the snapshot in
  chunks, each from the `position` it has reached, until it holds all `size` bytes.

A request carries the `correlation_id` of Kafka's request header, and its response echoes
it: a node answers only the request it is waiting for from that peer (Kafka's
`RequestManager`), so a duplicated, late or reordered response is recognised and dropped.

Errors are Kafka's codes (`kafka_ref.errors.ErrorCode`): FENCED_LEADER_EPOCH for an epoch
older than the receiver's, NOT_LEADER_OR_FOLLOWER for a fetch sent to a non-leader. A
response always carries what the receiver knows of the leader (`leader_id`, `leader_epoch`),
so a node behind learns of the new epoch from any answer (RAFT-2).

Wire encoding is not part of this module: these are the values the core reads and writes.

Rules: RAFT-2, RAFT-4, RAFT-23.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafka_ref.errors import ErrorCode
from kafka_ref.replication.leader_epoch import UNDEFINED_EPOCH

NO_LEADER = -1  # Kafka's "leaderId -1": the leader is unknown


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A position in a replicated log: an offset and the epoch of the batch before it
    (Kafka: `OffsetAndEpoch`). Ordered by epoch first: a log whose last batch has a larger
    epoch is more up to date, whatever its length (Raft paper section 5.4.1)."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """VoteRequest.json: CandidateEpoch, CandidateId, LastOffsetEpoch, LastOffset, PreVote."""

    cluster_id: str
    voter_id: int  # the voter receiving the request (v1+)
    candidate_epoch: int  # the candidate's bumped epoch; for a pre-vote, epoch + 1
    candidate_id: int
    last_offset_epoch: int  # the epoch of the candidate's last batch
    last_offset: int  # the candidate's log end offset
    pre_vote: bool = False  # KIP-996 (v2+)
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class VoteResponse:
    """VoteResponse.json: ErrorCode, LeaderId, LeaderEpoch, VoteGranted."""

    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """BeginQuorumEpochRequest.json: LeaderId, LeaderEpoch (and VoterId, v1+)."""

    cluster_id: str
    voter_id: int
    leader_id: int
    leader_epoch: int
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """EndQuorumEpochRequest.json: LeaderId, LeaderEpoch, PreferredSuccessors."""

    cluster_id: str
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """One partition of FetchRequest.json as KIP-595 uses it: ReplicaId (in ReplicaState),
    CurrentLeaderEpoch, FetchOffset, LastFetchedEpoch, the PartitionMaxBytes, and the
    fetching replica's ReplicaDirectoryId (v17, KIP-853: the leader describes an observer
    by it)."""

    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int = UNDEFINED_EPOCH
    max_bytes: int = 1 << 20
    correlation_id: int = 0
    replica_directory_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """One partition of FetchResponse.json: ErrorCode, HighWatermark, DivergingEpoch
    (EpochEndOffset: Epoch, EndOffset), CurrentLeader (LeaderId, LeaderEpoch), Records.

    `records` are whole v2 batches as the leader stores them; empty when the follower must
    truncate first (`diverging_epoch` set), must load a snapshot first (`snapshot_id` set:
    SnapshotId, v12+) or has nothing new to read."""

    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int = -1
    records: bytes = b""
    diverging_epoch: OffsetAndEpoch | None = None
    correlation_id: int = 0
    snapshot_id: OffsetAndEpoch | None = None  # (epoch, end offset) of the snapshot to load


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """One partition of FetchSnapshotRequest.json: ReplicaId, CurrentLeaderEpoch,
    SnapshotId (EndOffset, Epoch), Position, and the MaxBytes of the answer."""

    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 1 << 20
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """One partition of FetchSnapshotResponse.json: ErrorCode, SnapshotId, CurrentLeader,
    Size (the whole snapshot's), Position (of this chunk) and UnalignedRecords (the chunk,
    which may end inside a batch)."""

    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch | None = None
    size: int = -1
    position: int = -1
    unaligned_records: bytes = b""
    correlation_id: int = 0


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)
RaftMessage = RaftRequest | RaftResponse

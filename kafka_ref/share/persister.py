"""The persister: where a share-partition's state lives between fetches (KIP-932).

A share group reads a topic like a queue: the broker that leads a partition keeps, for each
share group, which records are acquired, acknowledged or archived (the share-partition,
`share_partition.py`). That state must survive the leader: it is written, on every change
that matters, to the **share coordinator**, which keeps it in the internal topic
`__share_group_state` as Kafka does (`ShareSnapshot` and `ShareUpdate` records, compacted).

The share-partition never talks to the coordinator itself: it calls a `Persister` (Kafka:
`org.apache.kafka.server.share.persister.Persister`), which finds the coordinator for the
key `group:topicId:partition` and sends it InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState or ReadShareGroupStateSummary (APIs 83-87).
`NoOpPersister` keeps nothing, as Kafka's `NoOpStatePersister` does; a broker runs
`DefaultStatePersister` (`share/default_persister.py`).

What is written is not every record's state but **state batches**: runs of offsets with one
delivery state and one delivery count, from the share-partition start offset (SPSO) up.
Below the SPSO everything is done (acknowledged or archived); above the last batch nothing
has been delivered yet.
"""

from __future__ import annotations

import abc
import base64
import enum
import uuid
from dataclasses import dataclass, field

from kafka_ref.errors import ErrorCode


class RecordState(enum.IntEnum):
    """A record's delivery state in a share-partition (Kafka `RecordState`). Only AVAILABLE,
    ACKNOWLEDGED and ARCHIVED are written: an ACQUIRED record is written as AVAILABLE, for
    its lock dies with the leader."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True)
class StateBatch:
    """Offsets first..last (inclusive) in one state with one delivery count (Kafka
    `PersisterStateBatch`; WriteShareGroupState's StateBatch)."""

    first_offset: int
    last_offset: int
    delivery_state: RecordState
    delivery_count: int

    def __post_init__(self) -> None:
        assert self.first_offset <= self.last_offset, self
        assert self.delivery_state is not RecordState.ACQUIRED, "acquisitions are not durable"


@dataclass(frozen=True)
class SharePartitionKey:
    """Whose state: a share group's view of one topic partition (Kafka `SharePartitionKey`).
    Its coordinator is the leader of `__share_group_state`'s partition for
    `coordinator_key`."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    @property
    def coordinator_key(self) -> str:
        """FindCoordinator's key for key type SHARE (2): `group:topicId:partition`."""
        return f"{self.group_id}:{_base64_uuid(self.topic_id)}:{self.partition}"


@dataclass(frozen=True)
class ShareState:
    """What ReadShareGroupState answers: the state epoch, the SPSO (-1 when never set), the
    leader epoch it was written under, the batches above the SPSO, and an error if any."""

    state_epoch: int = 0
    start_offset: int = -1
    leader_epoch: int = -1
    batches: tuple[StateBatch, ...] = field(default_factory=tuple)
    error: ErrorCode = ErrorCode.NO_ERROR
    error_message: str | None = None


@dataclass(frozen=True)
class ShareStateSummary:
    """What ReadShareGroupStateSummary answers (the admin's view): the SPSO and the count
    of done records at or above it, from which the admin tells the lag (SHARE-51)."""

    state_epoch: int = 0
    start_offset: int = -1
    leader_epoch: int = -1
    delivery_complete_count: int = -1
    error: ErrorCode = ErrorCode.NO_ERROR
    error_message: str | None = None


class Persister(abc.ABC):
    """The share-partition state's store, seen from a broker (Kafka `Persister`). Every call
    is for one key; each answers once the coordinator has made it durable (or failed: the
    error is in the answer, never raised)."""

    @abc.abstractmethod
    async def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        """InitializeShareGroupState: start a share-partition's state at `start_offset` (-1:
        let the share-partition apply `share.auto.offset.reset` on its first read)."""

    @abc.abstractmethod
    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """ReadShareGroupState: the state a new leader of the partition starts from. A
        `leader_epoch` below the one stored is fenced (FENCED_LEADER_EPOCH)."""

    @abc.abstractmethod
    async def write_state(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> ErrorCode:
        """WriteShareGroupState: the SPSO (-1: unchanged), the batches that changed and the
        count of done records at or above the SPSO (-1: unknown; KIP-1226, SHARE-51).
        Stale `state_epoch` or `leader_epoch` is fenced (FENCED_STATE_EPOCH,
        FENCED_LEADER_EPOCH)."""

    @abc.abstractmethod
    async def delete_state(self, key: SharePartitionKey) -> ErrorCode:
        """DeleteShareGroupState: the group's state for this partition is gone."""

    @abc.abstractmethod
    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        """ReadShareGroupStateSummary: the SPSO without the batches."""


class NoOpPersister(Persister):
    """Keeps nothing (Kafka `NoOpStatePersister`): every read finds a fresh state, every
    write succeeds. For unit tests of the share-partition alone; a broker never runs it."""

    async def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        return ErrorCode.NO_ERROR

    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        return ShareState()

    async def write_state(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> ErrorCode:
        return ErrorCode.NO_ERROR

    async def delete_state(self, key: SharePartitionKey) -> ErrorCode:
        return ErrorCode.NO_ERROR

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        return ShareStateSummary()


def is_coordinator_key(key: str) -> bool:
    """Is `key` a share coordinator key, `group:topicId:partition`, with a topic id Kafka can
    read and a partition number (Kafka `SharePartitionKey.validate`)? FindCoordinator answers
    INVALID_REQUEST for one that is not."""
    parts = key.split(":")
    if len(parts) != 3 or not parts[0]:
        return False
    _, topic_id, partition = parts
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except (ValueError, TypeError):
        return False
    return len(raw) == 16 and partition.isdigit()


def _base64_uuid(value: uuid.UUID) -> str:
    """A topic id as Kafka prints it (`Uuid.toString`: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")

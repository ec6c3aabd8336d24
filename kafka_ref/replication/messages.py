"""The messages of replication, as plain values, and the errors they carry.

The replication core never touches a socket. Whoever drives it (the asyncio broker, the
simulator in `kafka_ref/sim/`, a hypothesis test) turns these values into requests and
back. Each one is the partition-level part of a Kafka request:

* `LeaderAndIsr`: the controller's decision for one partition (a partition state of
  Kafka's LeaderAndIsr request, kept in ZooKeeper mode in the
  `/brokers/topics/<t>/partitions/<p>/state` znode): leader, leader epoch, ISR, assigned
  replicas and the state's version (ZooKeeper's `zkVersion`, KRaft's partition epoch).
* `FetchRequest` / `FetchResult`: a follower's (or consumer's) fetch of one partition, with
  the follower's `current_leader_epoch` (KIP-320 fencing) and `last_fetched_epoch` (the
  epoch of its last batch, KIP-595's divergence check).
* `EpochRequest` / `EpochResult`: OffsetsForLeaderEpoch for one partition (KIP-101).
* `AlterIsr` / `AlterIsrResult`: the leader asks the controller to change the ISR
  (KIP-497's AlterIsr, now AlterPartition; before it, in ZooKeeper mode, the leader wrote
  the znode itself with a version check, which is the same conditional update).

Errors are Kafka's (`NOT_LEADER_OR_FOLLOWER`, `FENCED_LEADER_EPOCH`, ...), raised as
`KafkaError` subclasses by the core, or carried as an `ErrorCode` in results.

Rules: REPL-7, REPL-8, REPL-10.
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass

from kafka_ref.common import TopicPartition
from kafka_ref.errors import (  # noqa: F401  (re-exported: the core's errors in one place)
    ErrorCode,
    KafkaError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
)
from kafka_ref.replication.leader_epoch import UNDEFINED_EPOCH


class FencedLeaderEpochError(KafkaError):
    """The request carries a leader epoch older than this replica's (REPL-8)."""

    code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(KafkaError):
    """The request carries a leader epoch newer than this replica knows yet (KIP-320)."""

    code = ErrorCode.UNKNOWN_LEADER_EPOCH


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """The controller's state of one partition (Kafka: `LeaderAndIsrPartitionState`)."""

    topic: str
    partition: int
    leader: int | None  # None: offline, no leader could be elected
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    version: int = 0  # zkVersion / partition epoch: every write bumps it

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """One partition of a Fetch request. `replica_id` is -1 for a consumer."""

    topic: str
    partition: int
    replica_id: int
    fetch_offset: int
    current_leader_epoch: int = UNDEFINED_EPOCH  # -1: not checked (old clients)
    last_fetched_epoch: int = UNDEFINED_EPOCH  # -1: no divergence check
    max_bytes: int = 1 << 20
    log_start_offset: int = -1  # the follower's (v5+); -1 from a consumer

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One partition of a Fetch response.

    `records` are whole batches, byte for byte as the leader stores them: bytes, a view into
    the buffer a follower's connection read them into, or a leader broker's file slices
    (`Partition.fetch`'s `records_of`); anything with a length. `diverging_epoch`
    is set (and `records` empty) when the follower's last fetched epoch ends before its
    fetch offset on the leader: the follower must truncate first. `log_end_offset` is the
    leader's LEO; Kafka's fetcher asks for it with ListOffsets after OFFSET_OUT_OF_RANGE.
    """

    error: ErrorCode
    records: bytes | memoryview | Sized = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset)


@dataclass(frozen=True, slots=True)
class EpochRequest:
    """OffsetsForLeaderEpoch for one partition: where does `leader_epoch` end on the leader?"""

    topic: str
    partition: int
    replica_id: int
    current_leader_epoch: int
    leader_epoch: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class EpochResult:
    """The answer: the largest epoch <= the requested one that the leader knows, and where
    the next one starts (or its LEO). (-1, -1) when undefined."""

    error: ErrorCode
    leader_epoch: int = UNDEFINED_EPOCH
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class AlterIsr:
    """A leader's request to change the ISR, conditional on its epoch and state version."""

    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    version: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class AlterIsrResult:
    """The controller's answer: the new state, or an error (stale epoch or version)."""

    topic: str
    partition: int
    error: ErrorCode
    state: LeaderAndIsr | None = None

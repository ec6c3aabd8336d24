"""A follower's fetch loop for one partition, as a state machine (Kafka: the per-partition
`PartitionFetchState` of `AbstractFetcherThread` / `ReplicaFetcherThread`).

When a replica becomes a follower in a new epoch, a fetcher starts for it. It knows its
leader and epoch and goes through these states:

    TRUNCATING --OffsetsForLeaderEpoch answers, truncation done--> FETCHING
    FETCHING   --fetch answers: append the batches, take the HW--> FETCHING
    any        --FENCED_LEADER_EPOCH--> FENCED (wait for the controller's next LeaderAndIsr)

With `replica.truncation=high-watermark` there is no TRUNCATING state: the log is cut to
the local HW at once and fetching starts there (TRUNC-1). With `leader-epoch` the fetcher
sends OffsetsForLeaderEpoch for its latest epoch and applies `truncation_step` to each
answer until the logs share a prefix (TRUNC-5, TRUNC-6); it fetches nothing before that
(TRUNC-8). While fetching it sends the epoch of its last batch, and a leader that finds
the logs diverged answers with a diverging epoch instead of records: the same truncation
rule applies (KIP-595's check, TRUNC-5). Kafka's followers do so from 2.7 on
(`ReplicaFetcherThread.isTruncationOnFetchSupported`); `truncate_on_fetch=False` is the
follower of Kafka 2.0 to 2.6, which truncates only on OffsetsForLeaderEpoch answers, so
that their repeated question (TRUNC-6) is all that makes the logs meet.

The fetcher only builds requests and takes answers; the broker's fetcher
(`FetcherPartitions` in kafka_ref/server/follower_fetcher.py, in the broker and in the
simulator alike) gathers them into rounds, one in flight per leader, and backs off after
a round that brought nothing.

An OFFSET_OUT_OF_RANGE answer means the follower's LEO is outside the leader's log: past its
end (the follower truncates to the leader's end, which KIP-101 makes a should-not-happen),
or before its start (retention: the follower starts over, empty, at the leader's start).

Rules: TRUNC-1, TRUNC-5, TRUNC-6, TRUNC-8, REPL-7.
"""

from __future__ import annotations

import logging
from enum import StrEnum

from kafka_ref.errors import ErrorCode
from kafka_ref.replication.leader_epoch import UNDEFINED_EPOCH
from kafka_ref.replication.messages import EpochRequest, EpochResult, FetchRequest, FetchResult
from kafka_ref.replication.partition import Partition
from kafka_ref.replication.truncation import (
    TruncationRule,
    high_watermark_truncation,
    truncation_step,
)

logger = logging.getLogger("kafka_ref.replication.follower_fetch_state")


class FetchState(StrEnum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"
    FENCED = "fenced"


class PartitionFetcher:
    """Fetches one partition from its leader into a follower `Partition`."""

    def __init__(
        self,
        partition: Partition,
        rule: TruncationRule | str = TruncationRule.LEADER_EPOCH,
        *,
        max_bytes: int = 1 << 20,
        truncate_on_fetch: bool = True,
    ) -> None:
        if partition.is_leader or partition.leader_id is None:
            raise ValueError(f"{partition!r} has no leader to fetch from")
        self.partition = partition
        self.rule = TruncationRule.parse(rule)
        self.leader_id: int = partition.leader_id
        self.leader_epoch = partition.leader_epoch
        self.max_bytes = max_bytes
        self.truncate_on_fetch = truncate_on_fetch
        self.state = FetchState.TRUNCATING
        if self.rule is TruncationRule.HIGH_WATERMARK:
            self._truncate(high_watermark_truncation(partition.high_watermark, self._leo))
            self.state = FetchState.FETCHING
        elif partition.cache.latest_epoch == UNDEFINED_EPOCH:
            # No epoch known (an empty or pre-0.11 log): Kafka falls back to the HW.
            self._truncate(high_watermark_truncation(partition.high_watermark, self._leo))
            self.state = FetchState.FETCHING

    def __repr__(self) -> str:
        return (
            f"PartitionFetcher({self.partition.topic}-{self.partition.index}, "
            f"leader={self.leader_id}, epoch={self.leader_epoch}, {self.state.value})"
        )

    @property
    def _leo(self) -> int:
        return self.partition.log_end_offset

    def _truncate(self, offset: int) -> None:
        if offset < self._leo:
            logger.info("%r: truncating from %d to %d", self, self._leo, offset)
        self.partition.truncate_to(offset)

    # ------------------------------------------------------------------ requests
    def next_request(self) -> EpochRequest | FetchRequest | None:
        p = self.partition
        if self.state is FetchState.TRUNCATING:
            return EpochRequest(
                p.topic, p.index, p.broker_id, self.leader_epoch, p.cache.latest_epoch
            )
        if self.state is FetchState.FETCHING:
            last_epoch = UNDEFINED_EPOCH
            if self.rule is TruncationRule.LEADER_EPOCH and self.truncate_on_fetch:
                last_epoch = p.cache.latest_epoch
            return FetchRequest(
                p.topic,
                p.index,
                p.broker_id,
                self._leo,
                current_leader_epoch=self.leader_epoch,
                last_fetched_epoch=last_epoch,
                max_bytes=self.max_bytes,
                log_start_offset=p.log_start_offset,
            )
        return None

    # ------------------------------------------------------------------ answers
    def _error(self, error: ErrorCode) -> None:
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            # Our epoch is old: a newer LeaderAndIsr is coming; stop until it does.
            self.state = FetchState.FENCED
        # NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH: the leader has not caught up with
        # the controller yet; the driver retries after a backoff.

    def on_epoch_result(self, request: EpochRequest, result: EpochResult) -> None:
        """An OffsetsForLeaderEpoch answer: truncate, and maybe ask again (TRUNC-6)."""
        if self.state is not FetchState.TRUNCATING:
            return
        if request.leader_epoch != self.partition.cache.latest_epoch:
            return  # an answer to an older question
        if result.error != ErrorCode.NO_ERROR:
            self._error(result.error)
            return
        p = self.partition
        step = truncation_step(
            p.cache, self._leo, p.high_watermark, result.leader_epoch, result.end_offset
        )
        self._truncate(step.offset)
        if step.done:
            self.state = FetchState.FETCHING

    def on_fetch_result(self, request: FetchRequest, result: FetchResult) -> int:
        """A fetch answer: append its batches and take the HW. Returns bytes appended."""
        p = self.partition
        if self.state is not FetchState.FETCHING or request.fetch_offset != self._leo:
            return 0  # stale: we truncated or appended since it was sent
        if result.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            if 0 <= result.log_end_offset < self._leo:
                logger.warning("%r: log end %d is past the leader's", self, self._leo)
                self._truncate(result.log_end_offset)
            elif self._leo < result.log_start_offset:
                p.truncate_fully_and_start_at(result.log_start_offset)
            return 0
        if result.error != ErrorCode.NO_ERROR:
            self._error(result.error)
            return 0
        if result.diverging_epoch is not None:
            epoch, end = result.diverging_epoch
            self._truncate(truncation_step(p.cache, self._leo, p.high_watermark, epoch, end).offset)
            return 0
        if result.records:
            p.append_as_follower(result.records)
        p.update_follower_high_watermark(result.high_watermark)
        return len(result.records)

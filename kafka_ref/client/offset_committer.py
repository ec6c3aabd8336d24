"""Committed offsets: where a group left off, so that the next owner starts there.

A consumer's position lives in its memory. To survive a restart or a rebalance, the group
*commits* positions to its coordinator with **OffsetCommit** (kept as records of the
compacted topic `__consumer_offsets`), and a member that receives a partition starts from
the committed offset, read with **OffsetFetch** (Kafka: `ConsumerCoordinator.commitOffsets*`,
`fetchCommittedOffsets`, `refreshCommittedOffsetsIfNeeded`):

* The committed offset is the *next* record to read, which is the consumer's position
  after the records it processed; never more than the position (CLIENT-26).
* A partition newly assigned (or assigned manually with a group id) starts at its committed
  offset; a partition never committed (offset -1) falls back to `auto.offset.reset`.
* A member commits *within its generation*: the request carries the generation id and
  member id, and the coordinator refuses a stale one (ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID), because the partition may belong to somebody else by now: that is
  `CommitFailedError`. A consumer using `assign()` commits with generation -1 and member
  id "", which the coordinator accepts only while no member is in the group.
* `enable.auto.commit` (default on) commits every position each `auto.commit.interval.ms`
  from `poll()`, before an eager rebalance revokes partitions, and on `close()`. Positions
  move when `poll()` returns records, so auto-commit never commits records not yet handed
  to the application; a crash after processing but before the next commit redelivers them:
  **at-least-once**.

Commits are synchronous (`commit_sync`: retries retriable errors until the timeout) or
asynchronous (`commit_async`: its callback runs later on the application thread, inside
`poll()`; no retries, since a retry could overwrite a newer commit).

Spec rules: CLIENT-26, CLIENT-27, CLIENT-28, CLIENT-29 (spec/client.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kafka_ref.client.abstract_coordinator import NO_GENERATION, Generation, MemberState
from kafka_ref.client.cluster_view import error_code
from kafka_ref.client.connection import ClientRequest, RequestTimedOutError
from kafka_ref.client.network_client import now_ms
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import OffsetCommitRequest, OffsetFetchRequest

log = logging.getLogger("kafka_ref.client")


class CommitFailedError(KafkaError):
    """The commit cannot succeed: this member is no longer in the generation that owns the
    partitions (Kafka: CommitFailedException). Rejoin; the partitions may have moved."""

    code = ErrorCode.ILLEGAL_GENERATION


class RebalanceInProgressError(KafkaError):
    """The group is rebalancing; commit after the rebalance (or in on_partitions_revoked)."""

    code = ErrorCode.REBALANCE_IN_PROGRESS


CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], KafkaError | None], None]


def as_offsets(offsets: Mapping) -> dict[TopicPartition, OffsetAndMetadata]:
    """{tp: int or OffsetAndMetadata} -> {TopicPartition: OffsetAndMetadata}."""
    out = {}
    for tp, value in offsets.items():
        value = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
        if value.offset < 0:
            raise ValueError(f"cannot commit a negative offset for {tp}: {value.offset}")
        out[TopicPartition(*tp)] = value
    return out


def offset_commit_request(
    group_id: str, generation: Generation, offsets: dict[TopicPartition, OffsetAndMetadata]
) -> Any:
    topics: dict[str, list] = {}
    for tp, om in sorted(offsets.items()):
        topics.setdefault(tp.topic, []).append(
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch,
                committed_metadata=om.metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation.generation_id,
        member_id=generation.member_id,
        retention_time_ms=-1,  # the broker's offsets.retention.minutes
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p)
            for t, p in topics.items()
        ],
    )


def offset_fetch_request(group_id: str, partitions: list[TopicPartition] | None) -> Any:
    """OffsetFetch for `partitions`, or for every committed partition (None; v2+)."""
    if partitions is None:
        return OffsetFetchRequest(group_id=group_id, topics=None)
    topics: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return OffsetFetchRequest(
        group_id=group_id,
        topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
            for t, p in topics.items()
        ],
    )


def parse_offset_fetch(
    response: Any,
) -> tuple[ErrorCode, dict[TopicPartition, tuple[ErrorCode, OffsetAndMetadata | None]]]:
    """(group error, {tp: (error, committed or None)}) from an OffsetFetch response."""
    out = {}
    for topic in response.topics or []:
        for p in topic.partitions:
            om = None
            if p.committed_offset >= 0:
                epoch = p.committed_leader_epoch
                om = OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch)
            out[TopicPartition(topic.name, p.partition_index)] = (error_code(p.error_code), om)
    return error_code(response.error_code), out


class OffsetCommitter:
    """Commits and committed-offset lookups of one ConsumerCoordinator."""

    def __init__(self, coordinator, *, enable_auto_commit: bool, interval_ms: int) -> None:
        self.coordinator = coordinator
        self.subscriptions = coordinator.subscriptions
        self.enable_auto_commit, self.interval_ms = enable_auto_commit, interval_ms
        self.next_auto_commit_ms = now_ms() + interval_ms
        self._pending_committed: set[TopicPartition] = set()  # OffsetFetch in flight
        self._committed_retry_at = 0

    # -- commit ---------------------------------------------------------------------------

    def _generation(self) -> Generation:
        """The generation to commit in: none for assign(); the current stable one otherwise."""
        coord = self.coordinator
        if not self.subscriptions.is_subscribed:
            return NO_GENERATION
        with coord.lock:
            if coord.state == MemberState.STABLE and coord.generation.generation_id >= 0:
                return coord.generation
            if coord.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
                raise RebalanceInProgressError(f"group {coord.group_id} is rebalancing")
        raise CommitFailedError(f"not a member of group {coord.group_id} now; rejoin first")

    def _send_commit(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], callback=None
    ) -> ClientRequest:
        coord = self.coordinator
        generation = self._generation()
        body = offset_commit_request(coord.group_id, generation, offsets)
        node = coord.coordinator
        return coord.client.send(
            node.node_id,
            ApiKey.OFFSET_COMMIT,
            body,
            callback=lambda request: callback and callback(request, generation),
        )

    def _commit_error(self, request: ClientRequest, generation: Generation) -> KafkaError | None:
        """The first error of a commit answer, after acting on it as the Java client does."""
        coord = self.coordinator
        if request.error is not None:
            coord.mark_coordinator_unknown(f"OffsetCommit: {request.error}")
            return request.error
        for topic in request.response.topics:
            for p in topic.partitions:
                code = error_code(p.error_code)
                if code == ErrorCode.NO_ERROR:
                    continue
                tp = TopicPartition(topic.name, p.partition_index)
                what = f"commit of {tp} in group {coord.group_id}"
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    coord.mark_coordinator_unknown(code.name)
                elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                    if self.subscriptions.is_subscribed and coord.generation == generation:
                        coord.reset_generation(f"OffsetCommit: {code.name}")
                    return CommitFailedError(f"{what}: {code.name}")
                elif code == ErrorCode.REBALANCE_IN_PROGRESS:
                    coord.request_rejoin("OffsetCommit: REBALANCE_IN_PROGRESS")
                    return RebalanceInProgressError(what)
                return KafkaError(what, code=code)
        return None

    def commit_sync(self, offsets: Mapping | None, timeout_ms: int) -> None:
        """Commit and wait, retrying retriable errors (coordinator moved, loading) until
        the timeout; raises CommitFailedError if the generation is gone."""
        offsets = self.subscriptions.all_consumed() if offsets is None else as_offsets(offsets)
        if not offsets:
            return
        coord, deadline = self.coordinator, now_ms() + timeout_ms
        while True:
            if not coord.ensure_coordinator_ready(deadline):
                raise RequestTimedOutError(f"no coordinator for group {coord.group_id}")
            request = self._send_commit(offsets)
            while not request.done and now_ms() < deadline:
                coord.client.poll(deadline - now_ms())
            if not request.done:
                raise RequestTimedOutError(f"OffsetCommit to group {coord.group_id} timed out")
            error = self._commit_error(request, self._generation_or_none())
            if error is None:
                log.debug("group %s: committed %s", coord.group_id, offsets)
                return
            if not error.code.retriable or now_ms() >= deadline:
                raise error
            coord.client.poll(min(coord.retry_backoff_ms, max(deadline - now_ms(), 0)))

    def _generation_or_none(self) -> Generation | None:
        try:
            return self._generation()
        except KafkaError:
            return None

    def commit_async(self, offsets: Mapping | None, callback: CommitCallback | None) -> None:
        """Commit without waiting; `callback(offsets, error)` runs in a later poll()."""
        offsets = self.subscriptions.all_consumed() if offsets is None else as_offsets(offsets)
        coord = self.coordinator

        def done(request: ClientRequest, generation: Generation) -> None:
            error = self._commit_error(request, generation)
            if callback is not None:
                callback(offsets, error)
            elif error is not None:
                log.warning("group %s: async commit failed: %s", coord.group_id, error)

        if not offsets:
            if callback is not None:
                callback(offsets, None)
            return
        if coord.coordinator_unknown() and not coord.ensure_coordinator_ready(now_ms()):
            error = KafkaError("coordinator unknown", code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if callback is not None:
                callback(offsets, error)
            return
        try:
            self._send_commit(offsets, done)
        except KafkaError as error:
            if callback is None:
                raise
            callback(offsets, error)

    # -- auto-commit ---------------------------------------------------------------------

    def _auto_commit_possible(self) -> bool:
        if not self.enable_auto_commit or self.coordinator.group_id is None:
            return False
        if self.subscriptions.is_subscribed:
            with self.coordinator.lock:
                return self.coordinator.state == MemberState.STABLE
        return True

    def maybe_auto_commit_async(self, now: int) -> None:
        if now < self.next_auto_commit_ms or not self._auto_commit_possible():
            return
        if self.coordinator.coordinator_unknown():
            self.next_auto_commit_ms = now + self.coordinator.retry_backoff_ms
            return
        self.next_auto_commit_ms = now + self.interval_ms
        self.commit_async(None, None)

    def maybe_auto_commit_sync(self, timeout_ms: int) -> None:
        """Before a rebalance revokes partitions and on close: commit what was consumed."""
        if not self._auto_commit_possible():
            return
        try:
            self.commit_sync(None, timeout_ms)
        except KafkaError as err:  # as Java: logged, the rebalance or close goes on
            log.warning("group %s: auto-commit failed: %s", self.coordinator.group_id, err)

    # -- committed offsets ---------------------------------------------------------------

    def fetch_committed(
        self, partitions: list[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch, blocking; retries while the coordinator moves or loads."""
        coord, deadline = self.coordinator, now_ms() + timeout_ms
        while True:
            if not coord.ensure_coordinator_ready(deadline):
                raise RequestTimedOutError(f"no coordinator for group {coord.group_id}")
            request = coord.client.send(
                coord.coordinator.node_id,
                ApiKey.OFFSET_FETCH,
                offset_fetch_request(coord.group_id, partitions),
            )
            while not request.done and now_ms() < deadline:
                coord.client.poll(deadline - now_ms())
            if not request.done:
                raise RequestTimedOutError(f"OffsetFetch from group {coord.group_id} timed out")
            error, found = self._fetch_error(request)
            if error is None:
                return {tp: found.get(tp, (None, None))[1] for tp in partitions}
            if not error.code.retriable or now_ms() >= deadline:
                raise error
            coord.client.poll(min(coord.retry_backoff_ms, max(deadline - now_ms(), 0)))

    def _fetch_error(self, request: ClientRequest):
        coord = self.coordinator
        if request.error is not None:
            coord.mark_coordinator_unknown(f"OffsetFetch: {request.error}")
            return request.error, {}
        group_error, found = parse_offset_fetch(request.response)
        codes = [group_error] + [code for code, _ in found.values()]
        code = next((c for c in codes if c != ErrorCode.NO_ERROR), ErrorCode.NO_ERROR)
        if code == ErrorCode.NO_ERROR:
            return None, found
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            coord.mark_coordinator_unknown(f"OffsetFetch: {code.name}")
        return KafkaError(f"OffsetFetch from group {coord.group_id}", code=code), found

    def refresh_committed_offsets_if_needed(self) -> set[TopicPartition]:
        """Start partitions without a position at their committed offset (asynchronously).

        Returns the partitions still waiting for their committed offset, which must not be
        reset by auto.offset.reset yet. A partition never committed is reset right away.
        """
        coord = self.coordinator
        missing = [
            tp
            for tp in self.subscriptions.missing_position()
            if tp not in self._pending_committed
            and not self.subscriptions.state(tp).committed_checked
        ]
        if not missing or now_ms() < self._committed_retry_at:
            return self._pending_committed | set(missing)
        if coord.coordinator_unknown() and not coord.ensure_coordinator_ready(now_ms()):
            return self._pending_committed | set(missing)
        self._pending_committed |= set(missing)
        coord.client.send(
            coord.coordinator.node_id,
            ApiKey.OFFSET_FETCH,
            offset_fetch_request(coord.group_id, missing),
            callback=lambda request: self._handle_committed(request, missing),
        )
        return set(self._pending_committed)

    def _handle_committed(self, request: ClientRequest, partitions: list[TopicPartition]) -> None:
        self._pending_committed -= set(partitions)
        error, found = self._fetch_error(request)
        if error is not None:
            if not error.code.retriable:
                log.error("group %s: committed offsets: %s", self.coordinator.group_id, error)
            self._committed_retry_at = now_ms() + self.coordinator.retry_backoff_ms
            return
        for tp in partitions:
            if not self.subscriptions.is_assigned(tp):
                continue  # revoked while the OffsetFetch was in flight
            state = self.subscriptions.state(tp)
            if state.position is not None or state.reset_strategy is not None:
                continue  # the application seeked meanwhile
            committed = found.get(tp, (None, None))[1]
            if committed is not None:
                log.info(
                    "group %s: %s starts at committed offset %d",
                    self.coordinator.group_id,
                    tp,
                    committed.offset,
                )
                self.subscriptions.seek(tp, committed.offset)
            else:  # never committed: auto.offset.reset decides (OffsetFetcher)
                state.committed_checked = True

"""The consumer: assign or subscribe, poll records, commit where the group stands.

    consumer = Consumer("127.0.0.1:9092", group_id="billing", auto_offset_reset="earliest")
    consumer.subscribe(["clicks"])          # the group shares the partitions of "clicks"
    while True:
        for record in consumer.poll(timeout=1.0):
            print(record.partition, record.offset, record.key, record.value)
        # enable.auto.commit (default) commits the positions every auto.commit.interval.ms

A consumer is a loop around `poll()` (Kafka's `KafkaConsumer.poll`):

1. **group** - with `subscribe()`, the consumer coordinator (consumer_coordinator.py) keeps
   the consumer in its group: it joins, runs the rebalance listener, and auto-commits.
   While a rebalance is under way `poll` returns nothing (up to its timeout);
2. **positions** - every assigned partition needs a position (subscription_state.py). A
   group consumer starts a new partition at its *committed* offset (OffsetFetch); a
   partition without one is reset per `auto.offset.reset` with a ListOffsets request to
   its leader (offset_lookup.py);
3. **buffered records first** - if earlier Fetch answers are buffered, up to
   `max.poll.records` records come from them at once;
4. **prefetch** - Fetch requests go to the leaders of all partitions with nothing buffered
   (consumer_fetch.py), *before* the records are returned, so the next answer is on its way while
   the application works;
5. **wait** - with nothing buffered, `poll` waits for answers up to its timeout; the
   broker itself holds a Fetch up to `fetch.max.wait.ms` until `fetch.min.bytes` arrived.

`assign()` is the manual alternative to `subscribe()`: the application picks partitions,
no group membership, no rebalances; with a `group_id` it can still commit (generation -1).
`seek(tp, offset)` moves a position anywhere, `offsets_for_times` finds the first offset at
or after a time (KIP-79). Like Kafka's, this consumer is not thread-safe: one thread owns it
(its heartbeat thread shares nothing with it but the group state; heartbeat.py).

Spec rules: CLIENT-13..CLIENT-17, CLIENT-20..CLIENT-29 (spec/client.md).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.connection import RequestTimedOutError, parse_bootstrap_servers
from kafka_ref.client.consumer_coordinator import (
    DEFAULT_ASSIGNMENT_STRATEGY,
    ConsumerCoordinator,
    ConsumerRebalanceListener,
)
from kafka_ref.client.consumer_fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ConsumerRecord,
    Fetcher,
)
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.offset_committer import CommitCallback
from kafka_ref.client.offset_lookup import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetFetcher
from kafka_ref.client.subscription_state import (
    IllegalStateError,
    OffsetResetStrategy,
    SubscriptionState,
)
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.security.client_security import ClientSecurity, resolve_security

__all__ = [
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
]

_ids = itertools.count(1)


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class Consumer:
    """A Kafka consumer (Kafka's `KafkaConsumer`): manual assignment or a consumer group."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        client_id: str | None = None,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300_000,
        partition_assignment_strategy: Iterable[str] = DEFAULT_ASSIGNMENT_STRATEGY,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        isolation_level: str = "read_uncommitted",
        check_crcs: bool = True,
        client_rack: str = "",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        default_api_timeout_ms: int = 60_000,
        allow_auto_create_topics: bool = True,
        security: Mapping[str, Any] | ClientSecurity | None = None,
    ) -> None:
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(
                "isolation_level must be read_uncommitted or read_committed, "
                f"not {isolation_level!r}"
            )
        if group_id == "":
            raise ValueError("group_id must not be empty (None: no group)")
        self.group_id = group_id
        self.client_id = client_id or f"kafka-ref-consumer-{next(_ids)}"
        self.retry_backoff_ms, self.request_timeout_ms = retry_backoff_ms, request_timeout_ms
        self.default_api_timeout_ms = default_api_timeout_ms
        self.isolation_level = (
            READ_COMMITTED if isolation_level == "read_committed" else READ_UNCOMMITTED
        )
        self.subscriptions = SubscriptionState(auto_offset_reset)
        self.metadata = Metadata(
            parse_bootstrap_servers(bootstrap_servers),
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            allow_auto_topic_creation=allow_auto_create_topics,
        )
        self.client = NetworkClient(
            self.metadata,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            security=resolve_security(security),
        )
        self.fetcher = Fetcher(
            self.client,
            self.metadata,
            self.subscriptions,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            max_poll_records=max_poll_records,
            isolation_level=self.isolation_level,
            check_crcs=check_crcs,
            client_rack=client_rack,
            metadata_max_age_ms=metadata_max_age_ms,
        )
        self.offset_fetcher = OffsetFetcher(
            self.client,
            self.metadata,
            self.subscriptions,
            isolation_level=self.isolation_level,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        self.coordinator: ConsumerCoordinator | None = None
        if group_id is not None:
            self.coordinator = ConsumerCoordinator(
                self.client,
                self.metadata,
                self.subscriptions,
                self.fetcher,
                group_id=group_id,
                client_id=self.client_id,
                group_instance_id=group_instance_id,
                session_timeout_ms=session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms,
                assignment_strategy=partition_assignment_strategy,
                enable_auto_commit=enable_auto_commit,
                auto_commit_interval_ms=auto_commit_interval_ms,
                retry_backoff_ms=retry_backoff_ms,
                request_timeout_ms=request_timeout_ms,
            )
        self._closed = False

    # -- assignment and subscription --------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions (replacing any earlier assignment); no group."""
        partitions = [TopicPartition(*tp) for tp in partitions]
        self.subscriptions.assign(partitions)
        self.fetcher.clear_buffered()
        self.metadata.set_topics({tp.topic for tp in partitions})

    def assignment(self) -> set[TopicPartition]:
        return set(self.subscriptions.assigned_partitions())

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join the group and read its share of `topics` (a list of names, or a regex
        pattern: a str starting with '^', or a compiled re.Pattern)."""
        if self.coordinator is None:
            raise IllegalStateError("subscribe() needs a group_id; use assign() without one")
        if isinstance(topics, re.Pattern) or (isinstance(topics, str) and topics[:1] == "^"):
            pattern = topics if isinstance(topics, re.Pattern) else re.compile(topics)
            self.subscriptions.subscribe_pattern(pattern, listener)
            self.metadata.need_all_topics = True  # a pattern is matched against every topic
            self.metadata.request_update()
        else:
            topics = [topics] if isinstance(topics, str) else list(topics)
            if not topics:
                return self.unsubscribe()
            if any(not t or not t.strip() for t in topics):
                raise ValueError("topic names in subscribe() must not be empty")
            changed = frozenset(topics) != self.subscriptions.subscription
            self.subscriptions.subscribe(topics, listener)
            self.metadata.set_topics(self.metadata.topics | set(topics))
            if changed:
                self.coordinator.request_rejoin("the subscription changed")

    def subscription(self) -> set[str]:
        return set(self.subscriptions.subscription)

    def unsubscribe(self) -> None:
        """Leave the group (revoking the partitions) or drop the manual assignment."""
        if self.coordinator is not None and self.subscriptions.is_subscribed:
            self.coordinator.on_leave_prepare()
            self.coordinator.maybe_leave_group("the consumer unsubscribed", self.request_timeout_ms)
        self.subscriptions.unsubscribe()
        self.fetcher.clear_buffered()
        self.metadata.need_all_topics = False

    # -- positions ---------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """The next poll returns records of `tp` from `offset` on."""
        self.subscriptions.seek(TopicPartition(*tp), offset)
        self.fetcher.clear_buffered(TopicPartition(*tp))

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, OffsetResetStrategy.EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, OffsetResetStrategy.LATEST)

    def _reset(self, partitions, strategy: OffsetResetStrategy) -> None:
        for tp in self.subscriptions.assigned_partitions() if partitions is None else partitions:
            self.subscriptions.request_offset_reset(TopicPartition(*tp), strategy)
            self.fetcher.clear_buffered(TopicPartition(*tp))

    def position(self, tp: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll would return (resolving it if needed)."""
        tp = TopicPartition(*tp)
        deadline = now_ms() + self._timeout_ms(timeout)
        while self.subscriptions.position(tp) is None:
            self._update_fetch_positions()
            if self.subscriptions.position(tp) is not None:
                break
            if now_ms() >= deadline:
                raise RequestTimedOutError(f"no position for {tp} within the timeout")
            self.client.poll(min(deadline - now_ms(), self.retry_backoff_ms))
        return self.subscriptions.position(tp)

    def _update_fetch_positions(self) -> None:
        """Committed offsets first (group consumers), then auto.offset.reset (CLIENT-22)."""
        waiting: set[TopicPartition] = set()
        if self.coordinator is not None:
            waiting = self.coordinator.offsets.refresh_committed_offsets_if_needed()
        self.offset_fetcher.reset_positions_if_needed(exclude=waiting)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.subscriptions.pause(TopicPartition(*tp))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.subscriptions.resume(TopicPartition(*tp))

    # -- polling -----------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> list[ConsumerRecord]:
        """Records from the assigned partitions; waits up to `timeout` seconds for some."""
        if self._closed:
            raise RuntimeError("the consumer is closed")
        subscribed = self.subscriptions.is_subscribed
        if not subscribed and not self.subscriptions.assigned_partitions():
            raise IllegalStateError(
                "Consumer is not subscribed to any topics or assigned any partitions"
            )
        deadline = now_ms() + int(timeout * 1000)
        while True:
            self.metadata.maybe_throw_auth_failure()  # refused credentials: no use waiting
            # The group first: a rebalance may change what we may read (CLIENT-20)
            if self.coordinator is not None and not self.coordinator.poll(deadline):
                return []
            self._update_fetch_positions()
            records = self.fetcher.collect_fetch()
            if records:
                self.fetcher.send_fetches()  # prefetch while the caller works (CLIENT-16)
                return records
            self.fetcher.send_fetches()
            remaining = deadline - now_ms()
            if remaining <= 0:
                return []
            # Waiting for an answer; without one in flight, look again after the backoff.
            # A group member wakes up at least every heartbeat interval to notice a rebalance.
            wait = remaining if self.client.in_flight_count() else self.retry_backoff_ms
            if self.coordinator is not None and subscribed:
                wait = min(wait, self.coordinator.heartbeat_interval_ms)
            self.client.poll(min(remaining, wait))

    # -- committed offsets (consumer groups) --------------------------------------------

    def _group(self) -> ConsumerCoordinator:
        if self.coordinator is None:
            raise IllegalStateError("committing offsets needs a group_id")
        return self.coordinator

    def commit(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        asynchronous: bool = False,
    ) -> None:
        """Commit `offsets` ({tp: next offset to read}), by default every position."""
        if asynchronous:
            self.commit_async(offsets)
        else:
            self.commit_sync(offsets)

    def commit_sync(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Commit and wait; raises CommitFailedError if the group moved on without us."""
        self._group().offsets.commit_sync(offsets, self._timeout_ms(timeout))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        callback: CommitCallback | None = None,
    ) -> None:
        """Commit without waiting; `callback(offsets, error)` runs inside a later poll()."""
        self._group().offsets.commit_async(offsets, callback)

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None: never committed)."""
        partitions = [TopicPartition(*tp) for tp in partitions]
        return self._group().offsets.fetch_committed(partitions, self._timeout_ms(timeout))

    # -- offset lookups -------------------------------------------------------------------

    def _list_offsets(self, targets, timeout: float | None) -> dict:
        return self.offset_fetcher.list_offsets(targets, self._timeout_ms(timeout))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (its log start offset)."""
        found = self._list_offsets(dict.fromkeys(partitions, EARLIEST_TIMESTAMP), timeout)
        return {tp: offset for tp, (offset, _) in found.items()}

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last readable record (high watermark, or LSO if committed)."""
        found = self._list_offsets(dict.fromkeys(partitions, LATEST_TIMESTAMP), timeout)
        return {tp: offset for tp, (offset, _) in found.items()}

    def offsets_for_times(
        self, timestamps: dict[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one (None: no such record)."""
        for ts in timestamps.values():
            if ts < 0:
                raise ValueError(f"target timestamp must not be negative: {ts}")
        found = self._list_offsets(timestamps, timeout)
        return {
            tp: OffsetAndTimestamp(offset, ts) if offset >= 0 else None
            for tp, (offset, ts) in found.items()
        }

    def partitions_for_topic(self, topic: str, timeout: float | None = None) -> list[int]:
        """The partition ids of `topic`, from fresh metadata ([] if it does not exist)."""
        self.metadata.add_topic(topic)
        self.client.await_metadata(self._timeout_ms(timeout))
        return [p.partition for p in self.metadata.fetch().partitions_for_topic(topic)]

    def _timeout_ms(self, timeout: float | None) -> int:
        return self.default_api_timeout_ms if timeout is None else int(timeout * 1000)

    def close(self, timeout: float | None = None) -> None:
        """Commit (with auto-commit), leave the group, close the connections."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.coordinator is not None:
                self.coordinator.close(min(self._timeout_ms(timeout), self.request_timeout_ms))
        except KafkaError as err:
            raise KafkaError(f"closing the consumer: {err}", code=err.code) from err
        finally:
            self.client.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

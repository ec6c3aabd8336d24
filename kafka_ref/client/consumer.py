"""The consumer: assign partitions, seek, and poll records.

    consumer = Consumer(bootstrap_servers="127.0.0.1:9092", auto_offset_reset="earliest")
    consumer.assign([TopicPartition("clicks", 0), TopicPartition("clicks", 1)])
    while True:
        for record in consumer.poll(timeout=1.0):
            print(record.partition, record.offset, record.key, record.value)

A consumer is a loop around `poll()` (Kafka's `KafkaConsumer.poll`):

1. **positions** - every assigned partition needs a position (subscription_state.py). A
   partition without one is reset per `auto.offset.reset` with a ListOffsets request to its
   leader (earliest = timestamp -2, latest = -1);
2. **buffered records first** - if earlier Fetch answers are buffered, up to
   `max.poll.records` records come from them at once;
3. **prefetch** - Fetch requests go to the leaders of all partitions with nothing buffered
   (fetcher.py), *before* the records are returned, so the next answer is on its way while
   the application works;
4. **wait** - with nothing buffered, `poll` waits for answers up to its timeout; the
   broker itself holds a Fetch up to `fetch.max.wait.ms` until `fetch.min.bytes` arrived.

The position is the only state, and it is local: `seek(tp, offset)` moves it anywhere,
`seek_to_beginning` / `seek_to_end` ask for a reset, `offsets_for_times` finds the first
offset with a timestamp at or after a given time (ListOffsets by timestamp, KIP-79), so
"replay from 10:00" is `seek(tp, consumer.offsets_for_times({tp: t})[tp].offset)`.

Consumer groups (`subscribe()`, FindCoordinator/JoinGroup/SyncGroup/Heartbeat, committed
offsets) come in a later issue; `assign()` is the manual assignment they will build on.
Like Kafka's, this consumer is not thread-safe: one thread owns it.

Spec rules: CLIENT-13..CLIENT-17 (spec/client.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import NamedTuple

from kafka_ref.client.connection import ClientRequest, RequestTimedOutError, parse_bootstrap_servers
from kafka_ref.client.fetcher import READ_COMMITTED, READ_UNCOMMITTED, ConsumerRecord, Fetcher
from kafka_ref.client.metadata import INVALIDATES_METADATA, Metadata, TopicPartition, error_code
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.subscription_state import (
    NoOffsetForPartitionError,
    OffsetResetStrategy,
    SubscriptionState,
)
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import ListOffsetsRequest

__all__ = ["Consumer", "ConsumerRecord", "OffsetAndTimestamp", "TopicPartition"]

_ids = itertools.count(1)
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class Consumer:
    """A Kafka consumer with manual assignment (Kafka's `KafkaConsumer`, without groups)."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        client_id: str | None = None,
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        isolation_level: str = "read_uncommitted",
        check_crcs: bool = True,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        default_api_timeout_ms: int = 60_000,
        allow_auto_create_topics: bool = True,
    ) -> None:
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError(
                "isolation_level must be read_uncommitted or read_committed, "
                f"not {isolation_level!r}"
            )
        self.group_id = group_id  # kept for the consumer-group issue; unused by assign()
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
            self.metadata, client_id=self.client_id, request_timeout_ms=request_timeout_ms
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
        )
        self._closed = False

    # -- assignment and positions ------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions (replacing any earlier assignment)."""
        partitions = [TopicPartition(*tp) for tp in partitions]
        self.subscriptions.assign(partitions)
        self.fetcher.clear_buffered()
        self.metadata.set_topics({tp.topic for tp in partitions})

    def assignment(self) -> set[TopicPartition]:
        return set(self.subscriptions.assigned_partitions())

    def subscribe(self, topics: Iterable[str]) -> None:
        raise NotImplementedError("subscribe() needs consumer groups, a later issue; use assign()")

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
        """The offset of the next record poll would return (resolving a reset if needed)."""
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
        if not self.subscriptions.assigned_partitions():
            raise RuntimeError(
                "Consumer is not subscribed to any topics or assigned any partitions"
            )
        deadline = now_ms() + int(timeout * 1000)
        while True:
            self._update_fetch_positions()
            records = self.fetcher.collect_fetch()
            if records:
                self.fetcher.send_fetches()  # prefetch while the caller works (CLIENT-16)
                return records
            self.fetcher.send_fetches()
            remaining = deadline - now_ms()
            if remaining <= 0:
                return []
            # Waiting for an answer; without one in flight, look again after the backoff
            wait = remaining if self.client.in_flight_count() else self.retry_backoff_ms
            self.client.poll(min(remaining, wait))

    def _update_fetch_positions(self) -> None:
        """Reset partitions without a position (auto.offset.reset), asynchronously."""
        missing = self.subscriptions.missing_position()
        if missing:
            if self.subscriptions.default_reset == OffsetResetStrategy.NONE:
                raise NoOffsetForPartitionError(missing)
            for tp in missing:
                self.subscriptions.request_offset_reset(tp)
        needing = self.subscriptions.partitions_needing_reset(now_ms())
        if not needing:
            return
        cluster, by_node = self.metadata.fetch(), {}
        for tp, strategy in needing.items():
            leader = cluster.leader_for(tp)
            if leader is None:
                self.metadata.request_update()
            else:
                by_node.setdefault(leader, {})[tp] = strategy.timestamp
        for node, targets in by_node.items():
            if not self.client.ready(node):
                continue
            self.subscriptions.set_next_reset_allowed(targets, now_ms() + self.request_timeout_ms)
            self.client.send(
                node,
                ApiKey.LIST_OFFSETS,
                self._list_offsets_request(targets),
                callback=lambda request, targets=targets: self._handle_reset(request, targets),
            )

    def _handle_reset(self, request: ClientRequest, targets: dict[TopicPartition, int]) -> None:
        backoff = now_ms() + self.retry_backoff_ms
        if request.error is not None:
            self.subscriptions.set_next_reset_allowed(targets, backoff)
            return
        for tp, (code, offset, _) in self._parse_list_offsets(request.response).items():
            if code == ErrorCode.NO_ERROR and offset >= 0:
                self.subscriptions.maybe_complete_reset(tp, offset)
            else:
                if code in INVALIDATES_METADATA:
                    self.metadata.request_update()
                self.subscriptions.set_next_reset_allowed([tp], backoff)

    # -- offset lookups (ListOffsets) ----------------------------------------------------

    def _list_offsets_request(self, targets: dict[TopicPartition, int]) -> object:
        topics: dict[str, list] = {}
        for tp, timestamp in targets.items():
            topics.setdefault(tp.topic, []).append(
                ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=tp.partition, current_leader_epoch=-1, timestamp=timestamp
                )
            )
        return ListOffsetsRequest(
            replica_id=-1,
            isolation_level=self.isolation_level,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=p) for t, p in topics.items()
            ],
        )

    @staticmethod
    def _parse_list_offsets(response) -> dict[TopicPartition, tuple[ErrorCode, int, int]]:
        return {
            TopicPartition(topic.name, p.partition_index): (
                error_code(p.error_code),
                p.offset,
                p.timestamp,
            )
            for topic in response.topics
            for p in topic.partitions
        }

    def _list_offsets(
        self, targets: dict[TopicPartition, int], timeout: float | None
    ) -> dict[TopicPartition, tuple[int, int]]:
        """Blocking ListOffsets to each leader, retrying stale-metadata errors until timeout."""
        deadline = now_ms() + self._timeout_ms(timeout)
        targets = {TopicPartition(*tp): ts for tp, ts in targets.items()}
        self.metadata.set_topics(self.metadata.topics | {tp.topic for tp in targets})
        results: dict[TopicPartition, tuple[int, int]] = {}
        while True:
            remaining = {tp: ts for tp, ts in targets.items() if tp not in results}
            if not remaining:
                return results
            if now_ms() >= deadline:
                raise RequestTimedOutError(
                    f"ListOffsets for {sorted(map(str, remaining))} timed out"
                )
            cluster, by_node = self.metadata.fetch(), {}
            for tp, ts in remaining.items():
                leader = cluster.leader_for(tp)
                if leader is None:
                    self.metadata.request_update()
                else:
                    by_node.setdefault(leader, {})[tp] = ts
            for node, node_targets in by_node.items():
                try:
                    response = self.client.send_and_wait(
                        node,
                        ApiKey.LIST_OFFSETS,
                        self._list_offsets_request(node_targets),
                        max(deadline - now_ms(), 1),
                    )
                except KafkaError as err:
                    if not err.code.retriable:
                        raise
                    continue
                for tp, (code, offset, timestamp) in self._parse_list_offsets(response).items():
                    if code == ErrorCode.NO_ERROR:
                        results[tp] = (offset, timestamp)
                    elif code.retriable:
                        self.metadata.request_update()
                    else:
                        raise KafkaError(f"ListOffsets for {tp}", code=code)
            if len(results) < len(targets):
                self.client.poll(min(self.retry_backoff_ms, max(deadline - now_ms(), 0)))

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

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.client.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The offset fetcher: where a consumer starts reading, and offsets looked up by time.

A partition without a position (newly assigned, never committed, or whose position fell
out of the log) needs a starting offset from its leader. Kafka's `OffsetFetcher` asks with
**ListOffsets**, whose "timestamp" doubles as a question:

* -2 (`earliest`) - the log start offset;
* -1 (`latest`) - the end of the log: the high watermark, or the last stable offset for
  `read_committed`;
* t >= 0 - the first offset whose record timestamp is at or after t (KIP-79), which is how
  "replay from 10:00" works.

Resets are *asynchronous*: `reset_positions_if_needed()` sends one ListOffsets per leader
and returns; the answer completes the reset inside a later `NetworkClient.poll`, unless the
user seeked meanwhile. A failed lookup is retried after `retry.backoff.ms`. The blocking
`list_offsets()` serves `beginning_offsets`, `end_offsets` and `offsets_for_times`.

Spec rules: CLIENT-15, CLIENT-17 (spec/client.md).
"""

from __future__ import annotations

from typing import Any

from kafka_ref.client.cluster_view import INVALIDATES_METADATA, Metadata, error_code
from kafka_ref.client.connection import ClientRequest, RequestTimedOutError
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.subscription_state import (
    NoOffsetForPartitionError,
    OffsetResetStrategy,
    SubscriptionState,
)
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import ListOffsetsRequest

EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1


def list_offsets_request(targets: dict[TopicPartition, int], isolation_level: int = 0) -> Any:
    """A ListOffsets request asking, per partition, for the offset at `targets[tp]`."""
    topics: dict[str, list] = {}
    for tp, timestamp in targets.items():
        topics.setdefault(tp.topic, []).append(
            ListOffsetsRequest.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=-1, timestamp=timestamp
            )
        )
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=p) for t, p in topics.items()
        ],
    )


def parse_list_offsets(response: Any) -> dict[TopicPartition, tuple[ErrorCode, int, int]]:
    """{tp: (error, offset, timestamp)} from a ListOffsets response."""
    return {
        TopicPartition(topic.name, p.partition_index): (
            error_code(p.error_code),
            p.offset,
            p.timestamp,
        )
        for topic in response.topics
        for p in topic.partitions
    }


class OffsetFetcher:
    """ListOffsets for resets and lookups (Kafka's `OffsetFetcher`)."""

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        *,
        isolation_level: int = 0,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.client, self.metadata, self.subscriptions = client, metadata, subscriptions
        self.isolation_level = isolation_level
        self.request_timeout_ms, self.retry_backoff_ms = request_timeout_ms, retry_backoff_ms

    # -- resets (asynchronous) --------------------------------------------------------

    def reset_positions_if_needed(self, exclude: set[TopicPartition] = frozenset()) -> None:
        """Reset partitions without a position (auto.offset.reset), asynchronously.

        `exclude`: partitions whose committed offset is still being fetched (a group
        consumer starts from its committed offset, and resets only when there is none).
        """
        missing = [tp for tp in self.subscriptions.missing_position() if tp not in exclude]
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
                list_offsets_request(targets, self.isolation_level),
                callback=lambda request, targets=targets: self._handle_reset(request, targets),
            )

    def _handle_reset(self, request: ClientRequest, targets: dict[TopicPartition, int]) -> None:
        backoff = now_ms() + self.retry_backoff_ms
        if request.error is not None:
            self.subscriptions.set_next_reset_allowed(targets, backoff)
            return
        for tp, (code, offset, _) in parse_list_offsets(request.response).items():
            if code == ErrorCode.NO_ERROR and offset >= 0:
                self.subscriptions.maybe_complete_reset(tp, offset)
            else:
                if code in INVALIDATES_METADATA:
                    self.metadata.request_update()
                self.subscriptions.set_next_reset_allowed([tp], backoff)

    # -- lookups (blocking) ------------------------------------------------------------

    def list_offsets(
        self, targets: dict[TopicPartition, int], timeout_ms: int
    ) -> dict[TopicPartition, tuple[int, int]]:
        """Blocking ListOffsets to each leader, retrying stale-metadata errors until timeout:
        {tp: (offset, timestamp)}."""
        deadline = now_ms() + timeout_ms
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
                        list_offsets_request(node_targets, self.isolation_level),
                        max(deadline - now_ms(), 1),
                    )
                except KafkaError as err:
                    if not err.code.retriable:
                        raise
                    continue
                for tp, (code, offset, timestamp) in parse_list_offsets(response).items():
                    if code == ErrorCode.NO_ERROR:
                        results[tp] = (offset, timestamp)
                    elif code.retriable:
                        self.metadata.request_update()
                    else:
                        raise KafkaError(f"ListOffsets for {tp}", code=code)
            if len(results) < len(targets):
                self.client.poll(min(self.retry_backoff_ms, max(deadline - now_ms(), 0)))

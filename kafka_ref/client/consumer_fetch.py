"""The fetcher: how a consumer pulls records from partition leaders.

A Kafka consumer *pulls*. For every partition it reads, it sends the leader a **Fetch**
with its position; all partitions led by one broker share one request. The broker
answers with raw record batches - exactly the bytes in its log - and the consumer decodes
them itself (Kafka's `Fetcher`, `CompletedFetch`). Four details make this work:

* **Long polling.** `fetch.min.bytes` and `fetch.max.wait.ms` let the broker hold a Fetch
  until enough data arrived or the wait is over, so an idle consumer is not a busy loop.
  `max.partition.fetch.bytes` and `fetch.max.bytes` bound the answer (but the broker always
  returns at least one whole batch, so a large batch cannot block a consumer, KIP-74).
* **Whole batches.** The broker does not split batches: a Fetch at offset 5 returns the
  batch holding offsets 3..7 whole. The consumer drops the records below its position
  (3 and 4). A truncated batch at the end of the answer (cut by the byte limits) is
  ignored; the next Fetch starts with it.
* **Prefetching.** While the application processes the records of one `poll()`, the next
  Fetch is already on the wire: `poll()` sends new fetches *before* returning records, for
  every partition that has no answer buffered (Kafka: "we can send off the next round of
  fetches ... while the user is handling the fetched records"). Buffered answers are
  handed out `max.poll.records` at a time.
* **What is not data.** Control batches (transaction markers) take offsets but are never
  returned; the position moves past them. With `isolation.level=read_committed` the broker
  stops at the last stable offset and lists the aborted transactions; batches of an
  aborted transaction are skipped until its ABORT marker (the rule is
  kafka_ref/log/isolation.py's `read_committed_batches`).

Reading from a follower (KIP-392): a consumer that names its rack (`client.rack`) sends it
in every Fetch. A leader whose `replica.selector.class` finds a better replica, one in the
client's rack, answers with no records and that replica's id as its *preferred read
replica*; the consumer then fetches the partition from it until `metadata.max.age.ms` has
passed (Kafka: `SubscriptionState.updatePreferredReadReplica`), and goes back to the leader
at once when the replica errs, cannot be reached, or is no longer in the metadata (Kafka:
`AbstractFetch.selectReadReplica`). A follower serves only up to its high watermark, so
what the consumer reads is the same.

Errors per partition: NOT_LEADER_OR_FOLLOWER and friends refresh the metadata and fetch
again from the new leader; OFFSET_OUT_OF_RANGE applies `auto.offset.reset` (or raises
when it is `none`), unless it came from a preferred read replica, which may only lag: then
the next fetch asks the leader again; anything else is raised from `poll()`.

Spec rules: CLIENT-13, CLIENT-14, CLIENT-15, CLIENT-16, CLIENT-33 (spec/client.md).
"""

from __future__ import annotations

import itertools
import logging
import struct
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, NamedTuple

from kafka_ref.client.cluster_view import INVALIDATES_METADATA, Metadata, error_code
from kafka_ref.client.connection import ClientRequest
from kafka_ref.client.network_client import NetworkClient
from kafka_ref.client.subscription_state import OffsetResetStrategy, SubscriptionState
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from kafka_ref.log.isolation import FetchedBatch, read_committed_batches
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import FetchRequest
from kafka_ref.record.batch import (
    HEADER_SIZE,
    BatchHeader,
    RecordBatch,
    TimestampType,
    validate_batch,
)

log = logging.getLogger("kafka_ref.client")

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_CONTROL_KEY = struct.Struct(">hh")  # version, type (0 = ABORT, 1 = COMMIT)


class ConsumerRecord(NamedTuple):
    """A record as `poll()` returns it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class CompletedFetch:
    """One partition's answer to one Fetch, handed out record by record across polls.

    `next_fetch_offset` is where the consumer stands after the records taken so far: past
    the last record returned, and past whole batches that were skipped (control batches,
    aborted transactions, records below the fetch offset).
    """

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        data: Any,
        *,
        read_committed: bool = False,
        check_crcs: bool = True,
    ) -> None:
        self.tp, self.fetch_offset, self.next_fetch_offset = tp, fetch_offset, fetch_offset
        self.error = error_code(data.error_code)
        self.high_watermark = data.high_watermark
        self.log_start_offset = data.log_start_offset
        self.preferred_read_replica = data.preferred_read_replica  # -1: none (before v11)
        self.last_stable_offset = data.last_stable_offset
        self._buffer = memoryview(data.records if data.records is not None else b"")
        aborted = data.aborted_transactions or []
        self._aborted = [(a.producer_id, a.first_offset) for a in aborted]
        self._fed_end = fetch_offset  # the end of the last whole batch read from the answer
        self._read_committed, self._check_crcs = read_committed, check_crcs
        self._records = self._iterate()
        self.exhausted = False

    def take(self, max_records: int) -> list[ConsumerRecord]:
        """Up to `max_records` records; `exhausted` is set once none are left."""
        records = list(itertools.islice(self._records, max_records))
        if len(records) < max_records:
            self.exhausted = True
        return records

    def _whole_batches(self) -> Iterator[FetchedBatch]:
        """The answer's whole batches, CRC-checked, one at a time."""
        buf, pos = self._buffer, 0
        while len(buf) - pos >= HEADER_SIZE:
            header = BatchHeader.parse(buf, pos)
            if pos + header.size > len(buf):
                break  # a batch cut short by the size limits: the next fetch gets it whole
            if self._check_crcs:
                validate_batch(buf, pos, check_count=False)
            abort = self._read_committed and header.is_control and header.has_producer_id
            self._fed_end = header.next_offset
            yield FetchedBatch(
                header.base_offset,
                header.last_offset,
                header.producer_id,
                header.is_transactional,
                header.is_control,
                abort and self._is_abort_marker(buf, pos),
                pos,
            )
            pos += header.size

    def _iterate(self) -> Iterator[ConsumerRecord]:
        if self._read_committed:  # aborted transactions are skipped (isolation.py)
            batches = read_committed_batches(self._whole_batches(), self._aborted)
        else:  # control batches (transaction markers) are never returned (CLIENT-14)
            batches = (b for b in self._whole_batches() if not b.is_control)
        for batch in batches:
            header = BatchHeader.parse(self._buffer, batch.position)
            for record in RecordBatch(self._buffer, batch.position).records():
                if record.offset < self.next_fetch_offset:
                    continue  # the batch began before our position (CLIENT-13)
                self.next_fetch_offset = record.offset + 1
                yield ConsumerRecord(
                    self.tp.topic,
                    self.tp.partition,
                    record.offset,
                    record.timestamp,
                    header.timestamp_type,
                    record.key,
                    record.value,
                    tuple(record.headers),
                )
            self.next_fetch_offset = max(self.next_fetch_offset, header.next_offset)
        # past the batches skipped after the last one returned (markers, aborted batches)
        self.next_fetch_offset = max(self.next_fetch_offset, self._fed_end)

    @staticmethod
    def _is_abort_marker(buf: memoryview, pos: int) -> bool:
        record = next(RecordBatch(buf, pos).records(), None)
        if record is None or record.key is None or len(record.key) < 4:
            return False
        return _CONTROL_KEY.unpack_from(record.key)[1] == 0


class Fetcher:
    """Sends Fetch requests to leaders and turns the answers into records."""

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        *,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        max_poll_records: int = 500,
        isolation_level: int = READ_UNCOMMITTED,
        check_crcs: bool = True,
        client_rack: str = "",
        metadata_max_age_ms: int = 300_000,
    ) -> None:
        self.client, self.metadata, self.subscriptions = client, metadata, subscriptions
        self.fetch_min_bytes, self.fetch_max_wait_ms = fetch_min_bytes, fetch_max_wait_ms
        self.fetch_max_bytes, self.max_partition_fetch_bytes = (
            fetch_max_bytes,
            max_partition_fetch_bytes,
        )
        self.max_poll_records, self.isolation_level = max_poll_records, isolation_level
        self.check_crcs = check_crcs
        self.client_rack, self.metadata_max_age_ms = client_rack, metadata_max_age_ms
        self.completed: deque[CompletedFetch] = deque()
        self.next_in_line: CompletedFetch | None = None
        self.nodes_with_pending_fetch: set[int] = set()  # one Fetch in flight per broker

    def _buffered(self) -> set[TopicPartition]:
        buffered = {cf.tp for cf in self.completed}
        if self.next_in_line is not None and not self.next_in_line.exhausted:
            buffered.add(self.next_in_line.tp)
        return buffered

    def send_fetches(self) -> int:
        """A Fetch to every leader of a fetchable partition with nothing buffered or pending."""
        cluster, buffered = self.metadata.fetch(), self._buffered()
        by_node: dict[int, dict[TopicPartition, int]] = {}
        for tp in self.subscriptions.fetchable_partitions():
            leader = cluster.leader_for(tp)
            if leader is None:
                self.metadata.request_update()
                continue
            node = self._read_replica(tp, leader)
            if tp not in buffered and node not in self.nodes_with_pending_fetch:
                by_node.setdefault(node, {})[tp] = self.subscriptions.position(tp)
        sent = 0
        for node, offsets in by_node.items():
            if not self.client.ready(node):
                continue
            self.nodes_with_pending_fetch.add(node)
            self.client.send(
                node,
                ApiKey.FETCH,
                self._fetch_request(offsets),
                callback=lambda request, node=node, offsets=offsets: self._handle_fetch(
                    request, node, offsets
                ),
            )
            sent += 1
        return sent

    def _read_replica(self, tp: TopicPartition, leader: int) -> int:
        """Where to fetch `tp`: the preferred read replica while it lasts and is known to the
        metadata, else the leader (CLIENT-33)."""
        state = self.subscriptions.state(tp)
        replica = state.preferred_read_replica
        if replica is None:
            return leader
        if time.monotonic() >= state.preferred_read_replica_expires or (
            self.metadata.fetch().node(replica) is None
        ):
            self._clear_read_replica(tp)
            return leader
        return replica

    def _clear_read_replica(self, tp: TopicPartition) -> int | None:
        """Forget `tp`'s preferred read replica; the one forgotten, if any."""
        if not self.subscriptions.is_assigned(tp):
            return None
        state = self.subscriptions.state(tp)
        replica, state.preferred_read_replica = state.preferred_read_replica, None
        return replica

    def _fetch_request(self, offsets: dict[TopicPartition, int]) -> Any:
        topics: dict[str, list] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append(
                FetchRequest.FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    log_start_offset=-1,
                    partition_max_bytes=self.max_partition_fetch_bytes,
                )
            )
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=self.fetch_max_wait_ms,
            min_bytes=self.fetch_min_bytes,
            max_bytes=self.fetch_max_bytes,
            isolation_level=self.isolation_level,
            session_id=0,  # no incremental fetch sessions (KIP-227): a full fetch every time
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=p) for t, p in topics.items()],
            forgotten_topics_data=[],
            rack_id=self.client_rack,
        )

    def _handle_fetch(
        self, request: ClientRequest, node: int, offsets: dict[TopicPartition, int]
    ) -> None:
        self.nodes_with_pending_fetch.discard(node)
        if request.error is not None:
            log.debug("fetch from node %s failed: %s", node, request.error)
            for tp in offsets:  # a follower out of reach: the leader, next time
                self._clear_read_replica(tp)
            self.metadata.request_update()
            return
        response = request.response
        if response.error_code:
            log.warning("fetch from node %s: %s", node, error_code(response.error_code).name)
            return
        for topic in response.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, data.partition_index)
                if tp in offsets:
                    self.completed.append(
                        CompletedFetch(
                            tp,
                            offsets[tp],
                            data,
                            read_committed=self.isolation_level == READ_COMMITTED,
                            check_crcs=self.check_crcs,
                        )
                    )

    def collect_fetch(self) -> list[ConsumerRecord]:
        """Records from the buffered answers, at most max.poll.records, positions advanced."""
        records: list[ConsumerRecord] = []
        while len(records) < self.max_poll_records:
            fetch = self.next_in_line
            if fetch is None or fetch.exhausted:
                if not self.completed:
                    break
                self.next_in_line = self._initialize(self.completed.popleft())
                continue
            if self.subscriptions.is_assigned(fetch.tp) and (
                self.subscriptions.position(fetch.tp) == fetch.next_fetch_offset
            ):
                records.extend(fetch.take(self.max_poll_records - len(records)))
                self.subscriptions.state(fetch.tp).position = fetch.next_fetch_offset
            else:  # unassigned, or the user seeked since this fetch was sent: stale
                fetch.exhausted = True
        return records

    def _initialize(self, fetch: CompletedFetch) -> CompletedFetch | None:
        """Check one partition's answer; None when it carries no records to hand out."""
        tp = fetch.tp
        if not self.subscriptions.is_assigned(tp):
            return None
        state = self.subscriptions.state(tp)
        if state.position != fetch.fetch_offset:
            return None  # stale: a seek happened while the fetch was in flight
        if fetch.error == ErrorCode.NO_ERROR:
            state.high_watermark = fetch.high_watermark
            state.log_start_offset = fetch.log_start_offset
            state.last_stable_offset = fetch.last_stable_offset
            if fetch.preferred_read_replica >= 0:  # the leader sends us elsewhere (KIP-392)
                state.preferred_read_replica = fetch.preferred_read_replica
                expires = time.monotonic() + self.metadata_max_age_ms / 1000
                state.preferred_read_replica_expires = expires
            return fetch
        replica = self._clear_read_replica(tp)
        if fetch.error in INVALIDATES_METADATA:
            self.metadata.request_update()
        elif fetch.error == ErrorCode.OFFSET_OUT_OF_RANGE and replica is not None:
            log.info("%s: out of range on read replica %d, asking the leader", tp, replica)
        elif fetch.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self.subscriptions.default_reset == OffsetResetStrategy.NONE:
                raise OffsetOutOfRangeError(offsets={tp: fetch.fetch_offset})
            log.info("fetch offset %d is out of range for %s, resetting", fetch.fetch_offset, tp)
            self.subscriptions.request_offset_reset(tp)
        else:
            raise KafkaError(
                f"fetch of {tp} at offset {fetch.fetch_offset} failed", code=fetch.error
            )
        return None

    def clear_buffered(self, tp: TopicPartition | None = None) -> None:
        """Forget buffered answers (for `tp`, or all): after a seek or a new assignment."""
        self.completed = deque(cf for cf in self.completed if tp is not None and cf.tp != tp)
        if self.next_in_line is not None and (tp is None or self.next_in_line.tp == tp):
            self.next_in_line = None

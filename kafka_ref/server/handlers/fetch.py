"""Fetch: consumers read record batches, waiting for data when there is none (long poll).

A FetchRequest names partitions with a `fetch_offset` and a `partition_max_bytes` each, an
overall `max_bytes`, and `min_bytes` / `max_wait_ms`. The broker (Kafka:
`KafkaApis.handleFetchRequest` -> `ReplicaManager.fetchMessages` -> `readFromLocalLog`):

1. reads every partition: whole batches from the one *containing* the fetch offset, up to
   the high watermark, at most `partition_max_bytes` per partition and `max_bytes` in
   total, except that the first partition with data returns at least one whole batch
   even if it is larger than both limits, so no consumer is stuck behind a big batch
   (KIP-74, BROKER-18, BROKER-19). The read returns file slices, not bytes: the response
   sends them with sendfile (BROKER-5);
2. answers at once if `max_wait_ms` <= 0, or the reads found `min_bytes`, or a partition
   had an error; otherwise parks a `DelayedFetch` in the purgatory, watching the
   requested partitions (BROKER-22);
3. a `DelayedFetch` completes when an append to a watched partition makes `min_bytes`
   available, when a partition disappears, this broker stops leading it (CTRL-10) or its
   fetch offset falls out of range, or at `max_wait_ms` (BROKER-23); it then reads again
   and answers.

Per partition the answer has the error code (OFFSET_OUT_OF_RANGE for an offset outside
[log start, log end], then the client resets via ListOffsets, BROKER-17;
UNKNOWN_TOPIC_OR_PARTITION; a partition in error carries no records and -1 for every
offset, as in Kafka), the high watermark, the last stable offset (the bound of a
read_committed fetch, TXN-4), the log start offset (v5+), the aborted transactions that
overlap the records returned (read_committed only, TXN-8; empty otherwise), and the
records. Fetch sessions (v7+, KIP-227) are not kept: the answer always has
`session_id` 0 and lists every requested partition, which tells the client to keep sending
full fetches (BROKER-21). An incremental fetch (epoch > 0) gets FETCH_SESSION_ID_NOT_FOUND.

A fetch with `replica_id` >= 0 comes from a follower and is served by follower_fetch.py.
A consumer under a `consumer_byte_rate` quota gets at most what the quota lets through in
one burst: `max_bytes` is capped (server/throttling.py, QUOTA-7).

Rules: BROKER-5, BROKER-17..BROKER-23, CTRL-10, TXN-8, QUOTA-7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import FetchResponse
from kafka_ref.server.handlers import follower_fetch
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.purgatory import DelayedOperation
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED, FileRecordsValue
from kafka_ref.server.throttling import max_fetch_bytes

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a fetch (Kafka: `FetchRequest.PartitionData`)."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-wide knobs (Kafka: `FetchParams`)."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    read_committed: bool


def empty_partition(index: int, error: ErrorCode = ErrorCode.NO_ERROR) -> Any:
    return FetchResponse.PartitionData(
        partition_index=index,
        error_code=error,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=[],
        records=FileRecordsValue([]),
    )


def read_partitions(
    apis: ApiContext, partitions: list[FetchPartition], params: FetchParams
) -> tuple[list[Any], int, bool]:
    """Read every partition (Kafka: `readFromLocalLog`): (PartitionData list, bytes, error?)."""
    limit, min_one, total, any_error = params.max_bytes, True, 0, False
    out = []
    for fp in partitions:
        data = empty_partition(fp.partition)
        try:
            partition = apis.replica_manager.get_partition(fp.topic, fp.partition)
            data.high_watermark = partition.high_watermark
            data.last_stable_offset = partition.last_stable_offset
            data.log_start_offset = partition.log_start_offset
            if fp.leader_epoch >= 0 and fp.leader_epoch != partition.leader_epoch:
                data.error_code = (
                    ErrorCode.FENCED_LEADER_EPOCH
                    if fp.leader_epoch < partition.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH
                )
            else:
                budget = max(min(fp.max_bytes, limit), 0)
                info = partition.read(
                    fp.fetch_offset,
                    budget,
                    min_one_batch=min_one,
                    read_committed=params.read_committed,
                )
                if params.read_committed:  # TXN-8
                    data.aborted_transactions = [
                        FetchResponse.AbortedTransaction(
                            producer_id=t.producer_id, first_offset=t.first_offset
                        )
                        for t in partition.aborted_transactions(info)
                    ]
                if info.slices:
                    data.records = FileRecordsValue(info.slices)
                    size = data.records.size
                    total += size
                    limit = max(limit - size, 0)
                    min_one = False
        except KafkaError as err:
            data.error_code = err.code
        if data.error_code != ErrorCode.NO_ERROR:
            # An error carries no offsets: -1 as Kafka's `createLogReadResult(e)` (BROKER-17).
            data = empty_partition(fp.partition, data.error_code)
            any_error = True
        apis.replica_manager.topic_stats.fetched(fp.topic, data.error_code != ErrorCode.NO_ERROR)
        out.append((fp.topic, data))
    return out, total, any_error


def build_response(read: list[Any], error: ErrorCode = ErrorCode.NO_ERROR) -> Any:
    """Group the partitions by topic, in request order; session_id is always 0."""
    topics: list[Any] = []
    for topic, data in read:
        if not topics or topics[-1].topic != topic:
            topics.append(FetchResponse.FetchableTopicResponse(topic=topic, partitions=[]))
        topics[-1].partitions.append(data)
    return FetchResponse(throttle_time_ms=0, error_code=error, session_id=0, responses=topics)


class DelayedFetch(DelayedOperation):
    """A fetch waiting for min_bytes or max_wait_ms (Kafka: `DelayedFetch`)."""

    def __init__(
        self,
        apis: ApiContext,
        request: Request,
        partitions: list[FetchPartition],
        params: FetchParams,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.apis, self.request = apis, request
        self.partitions, self.params = partitions, params

    def try_complete(self) -> bool:
        accumulated = 0
        manager = self.apis.replica_manager
        for fp in self.partitions:
            partition = manager.partitions.get((fp.topic, fp.partition))
            if partition is None or not partition.is_leader:
                return self.force_complete()  # case A: gone, or this broker follows now
            bound = (
                partition.last_stable_offset
                if self.params.read_committed
                else partition.high_watermark
            )
            if not partition.log_start_offset <= fp.fetch_offset <= partition.log.log_end_offset:
                return self.force_complete()  # case B: the offset is now out of range
            if fp.fetch_offset < bound:
                if self.params.min_bytes <= 1:
                    return self.force_complete()  # any new byte will do
                accumulated += partition.bytes_available(
                    fp.fetch_offset, fp.max_bytes, self.params.read_committed
                )
        if accumulated >= self.params.min_bytes:
            return self.force_complete()  # case C: enough bytes
        return False

    def on_complete(self) -> None:
        if self.request.connection_closed():
            self.apis.send(self.request, None)
            return
        read, _, _ = read_partitions(self.apis, self.partitions, self.params)
        self.apis.replica_manager.topic_stats.bytes_sent(read)
        self.apis.send(self.request, build_response(read))


def handle_fetch(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if body.replica_id >= 0:  # a follower replicating (handlers/follower_fetch.py)
        return follower_fetch.handle_follower_fetch(apis, request)
    cap = max_fetch_bytes(apis.quotas, request)  # no bigger than the quota allows (QUOTA-7)
    params = FetchParams(
        max_wait_ms=body.max_wait_ms,
        min_bytes=body.min_bytes,
        max_bytes=body.max_bytes if cap is None else min(body.max_bytes, cap),
        read_committed=body.isolation_level == READ_COMMITTED,
    )
    if request.api_version >= 7 and body.session_epoch > 0:
        # An incremental fetch on a session we never created (we always answer session 0).
        return build_response([], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    partitions = [
        FetchPartition(
            t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch
        )
        for t in body.topics
        for p in t.partitions
    ]
    topics = {p.topic for p in partitions}
    denied = {t for t in topics if not authorized(apis, request, Op.READ, Res.TOPIC, t)}
    if denied:  # answered at once, the refused topics' partitions with their error (SEC-17)
        read, _, _ = read_partitions(apis, [p for p in partitions if p.topic not in denied], params)
        refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return build_response(read + [(p.topic, empty_partition(p.partition, refused))
                                      for p in partitions if p.topic in denied])  # fmt: skip
    read, total, any_error = read_partitions(apis, partitions, params)
    if params.max_wait_ms <= 0 or not partitions or total >= params.min_bytes or any_error:
        apis.replica_manager.topic_stats.bytes_sent(read)
        return build_response(read)
    delayed = DelayedFetch(apis, request, partitions, params)
    keys = {(fp.topic, fp.partition) for fp in partitions}
    apis.fetch_purgatory.try_complete_else_watch(delayed, keys)
    return DEFERRED

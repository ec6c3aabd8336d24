"""The leader's side of replication: followers' Fetch, and OffsetsForLeaderEpoch (23).

A follower is a broker that copies a partition's log from the leader by fetching, like a
consumer does, with one difference on the wire: `replica_id` is its broker id instead of
-1 (Kafka: `FetchRequest.isFromFollower`). The leader then (Kafka:
`ReplicaManager.fetchMessages` -> `Partition.fetchRecords` -> `updateFollowerFetchState`):

* reads from the follower's fetch offset up to the **log end**, not the HW: a follower
  needs the records before they are committed, since their being on the follower is what
  commits them (REPL-3);
* takes the fetch offset as the follower's log end offset (LEO): this may add the follower
  to the ISR (ISR-2) and move the HW to the smallest LEO over the ISR (REPL-3); the
  acks=all produces and consumers' long polls of that partition then re-check;
* answers with the HW, so the follower's HW = min(leader's HW, own LEO) (REPL-7);
* checks `current_leader_epoch` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, REPL-8).

The records go out as a consumer's do: file slices sent with sendfile (BROKER-5), so the
leader neither reads them into Python nor copies them into the response. A small read
(under `SENDFILE_MIN_BYTES`, typical of followers that keep up with a trickle of small
produces) is read and written instead: one `pread` and one `write` cost less than a
response with slices, which duplicates a descriptor per slice and is sent by a task.

Fetch v4-10 has no `last_fetched_epoch` (v12, KIP-595), so the leader cannot answer a
diverging epoch; the follower finds where its log diverges with OffsetsForLeaderEpoch
before its first fetch in each epoch instead (the KIP-101 protocol, TRUNC-4..TRUNC-6).

A follower's fetch that finds nothing new waits in the fetch purgatory like a consumer's,
up to `replica.fetch.wait.max.ms`, and completes on the next append (BROKER-22). Both
handlers reach the partition through the replication core: `Partition.fetch` and
`Partition.last_offset_for_leader_epoch`.

Rules: REPL-3, REPL-7, REPL-8, ISR-2, TRUNC-4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.log.file_records import LogReadInfo
from kafka_ref.protocol.messages import FetchResponse, OffsetsForLeaderEpochResponse
from kafka_ref.replication.messages import EpochRequest, FetchRequest, FetchResult
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.purgatory import DelayedOperation
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED, FileRecordsValue

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

SENDFILE_MIN_BYTES = 64 * 1024


def _records(info: LogReadInfo) -> bytes | FileRecordsValue:
    """A follower's records: file slices for sendfile, or the bytes of a small read."""
    if info.size >= SENDFILE_MIN_BYTES:
        return FileRecordsValue(info.slices)
    return info.read_bytes()


def _requests(body: Any) -> list[FetchRequest]:
    return [
        FetchRequest(
            t.topic,
            p.partition,
            body.replica_id,
            p.fetch_offset,
            current_leader_epoch=p.current_leader_epoch,
            max_bytes=p.partition_max_bytes,
        )
        for t in body.topics
        for p in t.partitions
    ]


def _fetch_all(apis: ApiContext, requests: list[FetchRequest], max_bytes: int) -> list[Any]:
    """Serve each partition through the leader's `Partition.fetch`, within `max_bytes`
    (the first partition with data may exceed it, as for consumers: KIP-74)."""
    out, budget = [], max_bytes
    for request in requests:
        if budget <= 0 and out:
            result = _unread(apis, request)
        else:
            limited = FetchRequest(
                request.topic, request.partition, request.replica_id, request.fetch_offset,
                request.current_leader_epoch, request.last_fetched_epoch,
                max(min(request.max_bytes, budget), 1),
            )  # fmt: skip
            result = apis.replica_manager.fetch_as_leader(limited, _records)
            budget -= len(result.records)
        out.append((request, result))
    return out


def _unread(apis: ApiContext, request: FetchRequest) -> FetchResult:
    partition = apis.replica_manager.partitions.get(request.tp)
    if partition is None:
        return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return FetchResult(ErrorCode.NO_ERROR, b"", partition.high_watermark,
                       partition.log_start_offset, partition.log_end_offset)  # fmt: skip


def _response(results: list[Any]) -> Any:
    topics: list[Any] = []
    for request, result in results:
        if not topics or topics[-1].topic != request.topic:
            topics.append(FetchResponse.FetchableTopicResponse(topic=request.topic, partitions=[]))
        topics[-1].partitions.append(
            FetchResponse.PartitionData(
                partition_index=request.partition,
                error_code=result.error,
                high_watermark=result.high_watermark,
                last_stable_offset=result.high_watermark,
                log_start_offset=result.log_start_offset,
                aborted_transactions=[],
                records=result.records,
            )
        )
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)


class DelayedReplicaFetch(DelayedOperation):
    """A follower's fetch waiting for new data at the leader (Kafka: `DelayedFetch` for a
    replica: its bound is the log end, not the HW)."""

    def __init__(self, apis: ApiContext, request: Request, fetches: list[FetchRequest]) -> None:
        body = request.body
        super().__init__(body.max_wait_ms)
        self.apis, self.request, self.fetches = apis, request, fetches
        self.min_bytes, self.max_bytes = body.min_bytes, body.max_bytes

    def try_complete(self) -> bool:
        available = 0
        for f in self.fetches:
            partition = self.apis.replica_manager.partitions.get(f.tp)
            if partition is None or not partition.is_leader:
                return self.force_complete()  # the answer is an error now
            if f.fetch_offset > partition.log_end_offset:
                return self.force_complete()
            if f.fetch_offset < partition.log_end_offset:
                if self.min_bytes <= 1:
                    return self.force_complete()  # any new byte will do: no need to count
                available += partition.log.read(f.fetch_offset, f.max_bytes).size
        if available >= max(self.min_bytes, 1):  # replica.fetch.min.bytes
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.request.connection_closed():
            self.apis.send(self.request, None)
            return
        self.apis.send(self.request, _response(_fetch_all(self.apis, self.fetches, self.max_bytes)))


def handle_follower_fetch(apis: ApiContext, request: Request) -> Any:
    """Fetch from a follower (`replica_id` >= 0)."""
    body = request.body
    fetches = _requests(body)
    if not authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER):  # brokers only (SEC-17)
        return _response([(f, FetchResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for f in fetches])
    results = _fetch_all(apis, fetches, body.max_bytes)
    got = sum(len(r.records) for _, r in results)
    errors = any(r.error != ErrorCode.NO_ERROR for _, r in results)
    if body.max_wait_ms <= 0 or not fetches or errors or got >= max(body.min_bytes, 1):
        return _response(results)
    delayed = DelayedReplicaFetch(apis, request, fetches)
    apis.fetch_purgatory.try_complete_else_watch(delayed, {f.tp for f in fetches})
    return DEFERRED


def handle_offsets_for_leader_epoch(apis: ApiContext, request: Request) -> Any:
    """OffsetsForLeaderEpoch: where each requested epoch ends on this leader (TRUNC-4)."""
    body = request.body
    # A replica needs CLUSTER_ACTION, a consumer DESCRIBE on the topic (SEC-17).
    replica_refused = body.replica_id >= 0 and not authorized(
        apis, request, Op.CLUSTER_ACTION, Res.CLUSTER
    )
    topics = []
    for t in body.topics:
        partitions = []
        for p in t.partitions:
            partition = apis.replica_manager.partitions.get((t.topic, p.partition))
            if replica_refused:
                error, epoch, end = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1
            elif not authorized(apis, request, Op.DESCRIBE, Res.TOPIC, t.topic):
                error, epoch, end = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1
            elif partition is None:
                error, epoch, end = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
            else:
                ask = EpochRequest(t.topic, p.partition, body.replica_id,
                                   p.current_leader_epoch, p.leader_epoch)  # fmt: skip
                answer = partition.last_offset_for_leader_epoch(ask)
                error, epoch, end = answer.error, answer.leader_epoch, answer.end_offset
            partitions.append(
                OffsetsForLeaderEpochResponse.EpochEndOffset(
                    error_code=error, partition=p.partition, leader_epoch=epoch, end_offset=end
                )
            )
        topics.append(
            OffsetsForLeaderEpochResponse.OffsetForLeaderTopicResult(
                topic=t.topic, partitions=partitions
            )
        )
    return OffsetsForLeaderEpochResponse(throttle_time_ms=0, topics=topics)

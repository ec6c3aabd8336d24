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

kafka-ref's followers fetch at v10, without `last_fetched_epoch` (v12, KIP-595): they find
where their log diverges with OffsetsForLeaderEpoch before their first fetch in each epoch
(the KIP-101 protocol, TRUNC-4..TRUNC-6). A follower that sends it (v12+) is answered a
diverging epoch as a consumer is (BROKER-66).

A follower's fetch that finds nothing new waits in the fetch purgatory like a consumer's,
up to `replica.fetch.wait.max.ms`, and completes on the next append (BROKER-22). Both
handlers reach the partition through the replica manager (`fetch_as_leader`,
`last_offset_for_leader_epoch`), which the simulator drives too.

Rules: REPL-3, REPL-7, REPL-8, ISR-2, TRUNC-4, BROKER-66, BROKER-68.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.log.file_records import LogReadInfo
from kafka_ref.protocol.messages import FetchResponse, OffsetsForLeaderEpochResponse
from kafka_ref.replication.messages import EpochRequest, FetchRequest, FetchResult
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.handlers.fetch_partitions import FetchPartition, replica_id, respond
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


def _requests(partitions: list[FetchPartition], replica_id: int) -> list[FetchRequest]:
    return [
        FetchRequest(
            fp.topic or "",
            fp.partition,
            replica_id,
            fp.fetch_offset,
            current_leader_epoch=fp.leader_epoch,
            last_fetched_epoch=fp.last_fetched_epoch,
            max_bytes=fp.max_bytes,
            log_start_offset=fp.log_start_offset,
        )
        for fp in partitions
    ]


def _fetch_all(
    apis: ApiContext, partitions: list[FetchPartition], replica_id: int, max_bytes: int
) -> list[tuple[FetchPartition, FetchResult]]:
    """Serve each partition through the leader's `Partition.fetch`, within `max_bytes`
    (the first partition with data may exceed it, as for consumers: KIP-74). A topic id
    this broker does not know (v13+) is UNKNOWN_TOPIC_ID."""
    out, budget = [], max_bytes
    for fp, request in zip(partitions, _requests(partitions, replica_id), strict=True):
        if fp.topic is None:
            result = FetchResult(ErrorCode.UNKNOWN_TOPIC_ID)
        elif budget <= 0 and out:
            result = _unread(apis, request)
        else:
            limited = dataclasses.replace(request, max_bytes=max(min(request.max_bytes, budget), 1))
            result = apis.replica_manager.fetch_as_leader(limited, _records)
            budget -= len(result.records)
        out.append((fp, result))
    return out


def _unread(apis: ApiContext, request: FetchRequest) -> FetchResult:
    partition = apis.replica_manager.partitions.get(request.tp)
    if partition is None:
        return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return FetchResult(
        ErrorCode.NO_ERROR,
        b"",
        partition.high_watermark,
        partition.log_start_offset,
        partition.log_end_offset,
    )


def _response(apis: ApiContext, request: Request, results: list[Any]) -> Any:
    answered = []
    for fp, result in results:
        data = FetchResponse.PartitionData(
            partition_index=fp.partition,
            error_code=result.error,
            high_watermark=result.high_watermark,
            last_stable_offset=result.high_watermark,
            log_start_offset=result.log_start_offset,
            aborted_transactions=[],
            records=result.records,
        )
        if result.diverging_epoch is not None:  # v12+: truncate first (BROKER-66)
            epoch, end_offset = result.diverging_epoch
            data.diverging_epoch = FetchResponse.EpochEndOffset(epoch=epoch, end_offset=end_offset)
        answered.append((fp, data))
    return respond(apis, request, answered)


class DelayedReplicaFetch(DelayedOperation):
    """A follower's fetch waiting for new data at the leader (Kafka: `DelayedFetch` for a
    replica: its bound is the log end, not the HW)."""

    def __init__(
        self, apis: ApiContext, request: Request, partitions: list[FetchPartition], replica: int
    ) -> None:
        body = request.body
        super().__init__(body.max_wait_ms)
        self.apis, self.request, self.partitions, self.replica = apis, request, partitions, replica
        self.min_bytes, self.max_bytes = body.min_bytes, body.max_bytes

    def try_complete(self) -> bool:
        available = 0
        for fp in self.partitions:
            partition = self.apis.replica_manager.partitions.get((fp.topic, fp.partition))
            if partition is None or not partition.is_leader:
                return self.force_complete()  # the answer is an error now
            if fp.fetch_offset > partition.log_end_offset:
                return self.force_complete()
            if fp.fetch_offset < partition.log_end_offset:
                if self.min_bytes <= 1:
                    return self.force_complete()  # any new byte will do: no need to count
                available += partition.log.read(fp.fetch_offset, fp.max_bytes).size
        if available >= max(self.min_bytes, 1):  # replica.fetch.min.bytes
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.request.connection_closed():
            self.apis.send(self.request, None)
            return
        results = _fetch_all(self.apis, self.partitions, self.replica, self.max_bytes)
        self.apis.send(self.request, _response(self.apis, self.request, results))


def handle_follower_fetch(
    apis: ApiContext, request: Request, partitions: list[FetchPartition]
) -> Any:
    """Fetch from a follower (its replica id >= 0: `ReplicaId`, from v15 `ReplicaState`)."""
    body, replica = request.body, replica_id(request)
    if not authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER):  # brokers only (SEC-17)
        refused = FetchResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return _response(apis, request, [(fp, refused) for fp in partitions])
    results = _fetch_all(apis, partitions, replica, body.max_bytes)
    got = sum(len(r.records) for _, r in results)
    answer_now = any(r.error != ErrorCode.NO_ERROR or r.diverging_epoch for _, r in results)
    if body.max_wait_ms <= 0 or not partitions or answer_now or got >= max(body.min_bytes, 1):
        return _response(apis, request, results)
    delayed = DelayedReplicaFetch(apis, request, partitions, replica)
    apis.fetch_purgatory.try_complete_else_watch(
        delayed, {(fp.topic, fp.partition) for fp in partitions}
    )
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
            if replica_refused:
                error, epoch, end = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1
            elif not authorized(apis, request, Op.DESCRIBE, Res.TOPIC, t.topic):
                error, epoch, end = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1
            else:
                ask = EpochRequest(
                    t.topic, p.partition, body.replica_id, p.current_leader_epoch, p.leader_epoch
                )
                answer = apis.replica_manager.last_offset_for_leader_epoch(ask)
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

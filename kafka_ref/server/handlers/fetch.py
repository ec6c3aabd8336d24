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
   available, when a partition disappears, this broker stops leading it (CTRL-10), its
   fetch offset falls out of range or lies past what may be read (the HW, or the LSO), or
   at `max_wait_ms` (BROKER-23); it then reads again and answers.

Per partition the answer has the error code (OFFSET_OUT_OF_RANGE for an offset outside
[log start, log end], then the client resets via ListOffsets, BROKER-17;
UNKNOWN_TOPIC_OR_PARTITION; a partition in error carries no records and -1 for every
offset, as in Kafka), the high watermark, the last stable offset (the bound of a
read_committed fetch, TXN-4), the log start offset (v5+), the aborted transactions that
overlap the records returned (read_committed only, TXN-8; empty otherwise), and the
records. Fetch sessions (v7+, KIP-227) are not kept: the answer always has
`session_id` 0 and lists every requested partition, which tells the client to keep sending
full fetches (BROKER-21). An incremental fetch (epoch > 0) gets FETCH_SESSION_ID_NOT_FOUND.

Newer versions (fetch_partitions.py reads their differences): from v12 a partition may name
`last_fetched_epoch`, the epoch of the fetcher's last record; if that epoch ends here before
the fetch offset, the answer is a `diverging_epoch` instead of records, at once, and the
consumer validates its position (KIP-320, BROKER-66); from v13 topics travel by id
(UNKNOWN_TOPIC_ID for one not known, BROKER-67); from v16 a partition refused with
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its leader (KIP-951, BROKER-69).

From v11 the request carries the client's rack (`ClientMetadata`), and reads from followers
begin (KIP-392, docs/replication.md). A leader with a replica selector
(`replica.selector.class`) asks it where this client should read; when it names another
replica, the partition's answer is that `preferred_read_replica`, with the offsets and no
records, and the fetch answers at once (REPL-16). A follower answers a consumer's fetch as
the leader would, up to its own high watermark (BROKER-78, REPL-17). Below v11 only the
leader answers.

A fetch from a broker id (`replica_id`, from v15 `ReplicaState`) comes from a follower and is
served by follower_fetch.py. A consumer under a `consumer_byte_rate` quota gets at most what
the quota lets through in one burst: `max_bytes` is capped (server/throttling.py, QUOTA-7).

Rules: BROKER-5, BROKER-17..BROKER-23, BROKER-66, BROKER-67, BROKER-78, REPL-16, REPL-17,
CTRL-10, TXN-8, QUOTA-7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import FetchResponse
from kafka_ref.replication.replica_selector import ClientMetadata
from kafka_ref.server.handlers import follower_fetch
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.handlers.fetch_partitions import (
    FetchPartition,
    empty_partition,
    fetch_partitions,
    replica_id,
    respond,
)
from kafka_ref.server.purgatory import DelayedOperation
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED, FileRecordsValue
from kafka_ref.server.throttling import max_fetch_bytes

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

READ_COMMITTED = 1
MIN_VERSION_WITH_CLIENT_METADATA = 11  # the client's rack: reads from followers (KIP-392)


@dataclass(frozen=True, slots=True)
class FetchParams:
    """The request-wide knobs (Kafka: `FetchParams`)."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    read_committed: bool
    # Who fetches, from v11 (Kafka: `ClientMetadata`): the client's rack, for the leader's
    # replica selector (REPL-16). None below v11.
    client: ClientMetadata | None = None

    @property
    def leader_only(self) -> bool:
        """Only the leader may answer (Kafka: `FetchParams.fetchOnlyLeader`): a consumer's
        fetch without client metadata, below v11; from v11 a follower serves it too, up to
        its own high watermark (KIP-392, BROKER-78, REPL-17)."""
        return self.client is None


def read_partitions(
    apis: ApiContext,
    partitions: list[FetchPartition],
    params: FetchParams,
    denied: frozenset[str] = frozenset(),
) -> tuple[list[tuple[FetchPartition, Any]], int, bool]:
    """Read every partition (Kafka: `readFromLocalLog`): ((partition, PartitionData) list,
    bytes read, answer now?). A partition of an unknown topic id (v13+) or of a topic in
    `denied` (SEC-17) is answered with its error, unread. An error, a diverging epoch or a
    preferred read replica answers the fetch at once."""
    limit, min_one, total, answer_now = params.max_bytes, True, 0, False
    out = []
    for fp in partitions:
        if fp.topic is None:
            data = empty_partition(fp.partition, ErrorCode.UNKNOWN_TOPIC_ID)
        elif fp.topic in denied:
            data = empty_partition(fp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        else:
            data = _read(apis, fp, max(min(fp.max_bytes, limit), 0), min_one, params)
            apis.replica_manager.topic_stats.fetched(
                fp.topic, data.error_code != ErrorCode.NO_ERROR
            )
            if data.records.size:
                total += data.records.size
                limit = max(limit - data.records.size, 0)
                min_one = False
        if (
            data.error_code != ErrorCode.NO_ERROR
            or data.diverging_epoch.epoch >= 0
            or data.preferred_read_replica >= 0  # go elsewhere now, not after max_wait_ms
        ):
            answer_now = True
        out.append((fp, data))
    return out, total, answer_now


def _read(
    apis: ApiContext, fp: FetchPartition, budget: int, min_one: bool, params: FetchParams
) -> Any:
    """One partition's answer: its offsets, and its records, a diverging epoch, the replica
    to read from instead, or an error."""
    data = empty_partition(fp.partition)
    manager = apis.replica_manager
    try:
        partition = manager.get_partition(fp.topic, fp.partition, require_leader=params.leader_only)
        # KIP-320's fencing (REPL-8); a follower may serve a consumer from v11 (BROKER-78)
        partition.check_leader_request(fp.leader_epoch, require_leader=params.leader_only)
        data.high_watermark = partition.high_watermark
        data.last_stable_offset = partition.last_stable_offset
        data.log_start_offset = partition.log_start_offset
        if params.client is not None:  # v11+: should the client read elsewhere? (REPL-16)
            preferred = manager.find_preferred_read_replica(
                partition, params.client, fp.fetch_offset
            )
            if preferred is not None:
                data.preferred_read_replica = preferred
                return data  # no records: the client fetches them from `preferred`
        if fp.last_fetched_epoch >= 0:  # v12+ (BROKER-66)
            diverging = partition.diverging_epoch(fp.last_fetched_epoch, fp.fetch_offset)
            if diverging is not None:
                epoch, end_offset = diverging
                data.diverging_epoch = FetchResponse.EpochEndOffset(
                    epoch=epoch, end_offset=end_offset
                )
                return data
        info = partition.read(
            fp.fetch_offset, budget, min_one_batch=min_one, read_committed=params.read_committed
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
    except KafkaError as err:
        # An error carries no offsets: -1 as Kafka's `createLogReadResult(e)` (BROKER-17).
        return empty_partition(fp.partition, err.code)
    return data


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
            if partition is None or (self.params.leader_only and not partition.is_leader):
                return self.force_complete()  # case A: gone, or this broker follows now
            bound = (
                partition.last_stable_offset
                if self.params.read_committed
                else partition.high_watermark
            )
            if not partition.log_start_offset <= fp.fetch_offset <= partition.log.log_end_offset:
                return self.force_complete()  # case B: the offset is now out of range
            if fp.fetch_offset > bound:
                # case F: past what may be read, e.g. at a follower whose HW is behind the
                # leader's, which the client read from before (REPL-17): answer, empty
                return self.force_complete()
            if fp.last_fetched_epoch >= 0 and self._diverged(partition, fp):
                return self.force_complete()  # case H: the fetcher's log diverged
            if fp.fetch_offset < bound:
                if self.params.min_bytes <= 1:
                    return self.force_complete()  # any new byte will do
                accumulated += partition.bytes_available(
                    fp.fetch_offset, fp.max_bytes, self.params.read_committed
                )
        if accumulated >= self.params.min_bytes:
            return self.force_complete()  # case C: enough bytes
        return False

    @staticmethod
    def _diverged(partition: Any, fp: FetchPartition) -> bool:
        try:
            return partition.diverging_epoch(fp.last_fetched_epoch, fp.fetch_offset) is not None
        except KafkaError:
            return True  # the answer is an error now

    def on_complete(self) -> None:
        if self.request.connection_closed():
            self.apis.send(self.request, None)
            return
        read, _, _ = read_partitions(self.apis, self.partitions, self.params)
        self.apis.replica_manager.topic_stats.bytes_sent([(fp.topic, data) for fp, data in read])
        self.apis.send(self.request, respond(self.apis, self.request, read))


def handle_fetch(apis: ApiContext, request: Request) -> Any:
    body = request.body
    partitions = fetch_partitions(apis, request)
    if replica_id(request) >= 0:  # a follower replicating (handlers/follower_fetch.py)
        return follower_fetch.handle_follower_fetch(apis, request, partitions)
    cap = max_fetch_bytes(apis.quotas, request)  # no bigger than the quota allows (QUOTA-7)
    client = None
    if request.api_version >= MIN_VERSION_WITH_CLIENT_METADATA:
        client = ClientMetadata(body.rack_id, request.listener_name)
    params = FetchParams(
        max_wait_ms=body.max_wait_ms,
        min_bytes=body.min_bytes,
        max_bytes=body.max_bytes if cap is None else min(body.max_bytes, cap),
        read_committed=body.isolation_level == READ_COMMITTED,
        client=client,
    )
    if request.api_version >= 7 and body.session_epoch > 0:
        # An incremental fetch on a session we never created (we always answer session 0).
        return respond(apis, request, [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    topics = {fp.topic for fp in partitions if fp.topic is not None}
    denied = frozenset(t for t in topics if not authorized(apis, request, Op.READ, Res.TOPIC, t))
    read, total, answer_now = read_partitions(apis, partitions, params, denied)
    if params.max_wait_ms <= 0 or not partitions or total >= params.min_bytes or answer_now:
        apis.replica_manager.topic_stats.bytes_sent([(fp.topic, data) for fp, data in read])
        return respond(apis, request, read)
    delayed = DelayedFetch(apis, request, partitions, params)
    keys = {(fp.topic, fp.partition) for fp in partitions}
    apis.fetch_purgatory.try_complete_else_watch(delayed, keys)
    return DEFERRED

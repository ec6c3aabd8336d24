"""The follower's side of replication: one fetcher per source broker (Kafka:
`ReplicaFetcherManager`, `ReplicaFetcherThread`, `AbstractFetcherThread`).

When the controller makes this broker a follower of a partition, the `ReplicaManager`
hands the partition to the fetcher of the leader's broker (`add_partition`); when it
becomes leader, or follows someone else, or the topic goes, the partition is taken away
(`remove_partition`). A fetcher with no partitions left stops. Kafka runs each fetcher as
a thread with its own network client; here it is an asyncio task on the broker's loop,
with one connection to the leader (follower_connection.py: responses are read into a
reused buffer and appended from it, no copy in between), so that appending to the local
log happens on the loop like every other change to a partition.

Per partition, the decisions are the replication core's `PartitionFetcher`
(kafka_ref/replication/follower_fetch_state.py), the same state machine the simulator drives:

1. TRUNCATING: one OffsetsForLeaderEpoch request for all truncating partitions, for each
   its latest epoch; the answers truncate the local log until it shares a prefix with the
   leader's (KIP-101/279, TRUNC-4..TRUNC-6). With `replica.truncation=high-watermark` the
   log is cut to the local HW instead, the pre-0.11 rule that loses acknowledged writes
   (TRUNC-1);
2. FETCHING: one Fetch for all fetching partitions, with `replica_id` = this broker's id,
   `current_leader_epoch` (fencing, REPL-8), `replica.fetch.wait.max.ms`,
   `replica.fetch.min.bytes`, `replica.fetch.max.bytes` per partition and
   `replica.fetch.response.max.bytes` in all. The batches are appended byte for byte with
   the leader's offsets and epochs, which rebuilds the producer state as the leader's
   (REPL-7, IDEM rules); the follower's HW becomes min(leader's HW, own LEO).

Errors (the leader is down, not leader yet, a timeout after `replica.socket.timeout.ms`)
close the connection and wait `replica.fetch.backoff.ms` before trying again; the
controller's next decision usually moves the partition to another fetcher meanwhile.

Both brokers run the same kafka-ref version, so the versions are fixed (Fetch v10,
OffsetsForLeaderEpoch v3) instead of negotiated: Kafka picks them from
`inter.broker.protocol.version` for the same reason.

Rules: REPL-7, REPL-8, TRUNC-1, TRUNC-4..TRUNC-6.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, FetchRequest, OffsetsForLeaderEpochRequest
from kafka_ref.replication import messages as core
from kafka_ref.replication.follower_fetch_state import FetchState, PartitionFetcher
from kafka_ref.replication.partition import Partition
from kafka_ref.replication.truncation import TruncationRule
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.follower_connection import FetcherConnection

logger = logging.getLogger("kafka_ref.server.follower_fetcher")

FETCH_VERSION = 10
EPOCH_VERSION = 3


class ReplicaFetcher:
    """Fetches every partition this broker follows from one source broker."""

    def __init__(self, manager: ReplicaFetcherManager, source_id: int) -> None:
        self.manager, self.source_id = manager, source_id
        self.partitions: dict[TopicPartition, PartitionFetcher] = {}
        self._changed = asyncio.Event()
        self._connection: FetcherConnection | None = None
        self.stopped = False
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"ReplicaFetcher-{manager.broker_id}-{source_id}"
        )

    def __repr__(self) -> str:
        return f"ReplicaFetcher({self.manager.broker_id} <- {self.source_id})"

    @property
    def client_id(self) -> str:
        return f"broker-{self.manager.broker_id}-fetcher-{self.source_id}"

    def add(self, partition: Partition) -> None:
        fetcher = PartitionFetcher(
            partition,
            self.manager.truncation,
            max_bytes=self.manager.config["replica.fetch.max.bytes"],
        )
        self.partitions[(partition.topic, partition.index)] = fetcher
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._changed.set()

    def cancel(self) -> None:
        """Stop the loop. The flag, not only `task.cancel()`: Python 3.11's `wait_for`
        swallows a cancellation that arrives as its awaited call completes, and the loop
        would then wait for partitions forever, hanging the broker's shutdown."""
        self.stopped = True
        self._changed.set()
        self.task.cancel()
        self._disconnect()

    async def stop(self) -> None:
        self.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self._disconnect()

    # ------------------------------------------------------------------ the loop
    async def _run(self) -> None:
        backoff = self.manager.config["replica.fetch.backoff.ms"] / 1000
        while not self.stopped:
            self._changed.clear()
            truncating = {
                tp: f for tp, f in self.partitions.items() if f.state is FetchState.TRUNCATING
            }
            fetching = {
                tp: f for tp, f in self.partitions.items() if f.state is FetchState.FETCHING
            }
            if not truncating and not fetching:  # nothing to do until a partition changes
                await self._changed.wait()
                continue
            try:
                connection = await self._connect()
                if truncating:
                    progressed = await self._truncate(connection, truncating)
                else:
                    progressed = await self._fetch(connection, fetching)
            except (TimeoutError, OSError, EOFError, ConnectionError, LookupError) as err:
                logger.info("%r: %s; retrying in %.1fs", self, err or type(err).__name__, backoff)
                self._disconnect()
                progressed = False
            except Exception:  # a bug: log it, keep the broker alive, try again later
                logger.exception("%r failed", self)
                self._disconnect()
                progressed = False
            if not progressed:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), backoff)

    async def _connect(self) -> FetcherConnection:
        if self._connection is None:
            endpoint = self.manager.endpoint_of(self.source_id)
            if endpoint is None:
                raise LookupError(f"broker {self.source_id} is not registered")
            timeout = self.manager.config["replica.socket.timeout.ms"] / 1000
            call = FetcherConnection.open(*endpoint, self.manager.security, self.client_id)
            self._connection = await asyncio.wait_for(call, timeout)
        return self._connection

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _send(self, api_key: int, version: int, body: Any, wait_ms: int = 0) -> Any:
        assert self._connection is not None
        timeout = (self.manager.config["replica.socket.timeout.ms"] + wait_ms) / 1000
        call = self._connection.request(api_key, version, body, self.client_id)
        return await asyncio.wait_for(call, timeout)

    # ------------------------------------------------------------------ truncation
    async def _truncate(self, conn: FetcherConnection, fetchers: dict[TopicPartition, Any]) -> bool:
        asked = {tp: f.next_request() for tp, f in fetchers.items()}
        by_topic: dict[str, list[Any]] = {}
        for (topic, _), r in asked.items():
            by_topic.setdefault(topic, []).append(
                OffsetsForLeaderEpochRequest.OffsetForLeaderPartition(
                    partition=r.partition,
                    current_leader_epoch=r.current_leader_epoch,
                    leader_epoch=r.leader_epoch,
                )
            )
        body = OffsetsForLeaderEpochRequest(
            replica_id=self.manager.broker_id,
            topics=[
                OffsetsForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        response = await self._send(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body)
        progressed = False
        for t in response.topics:
            for p in t.partitions:
                tp = (t.topic, p.partition)
                fetcher = self.partitions.get(tp)
                if fetcher is None or fetcher is not fetchers.get(tp):
                    continue  # the partition moved while we asked
                result = core.EpochResult(ErrorCode(p.error_code), p.leader_epoch, p.end_offset)
                fetcher.on_epoch_result(asked[tp], result)
                progressed |= result.error == ErrorCode.NO_ERROR
        return progressed

    # ------------------------------------------------------------------ fetching
    async def _fetch(self, conn: FetcherConnection, fetchers: dict[TopicPartition, Any]) -> bool:
        config = self.manager.config
        asked = {tp: f.next_request() for tp, f in fetchers.items()}
        by_topic: dict[str, list[Any]] = {}
        for (topic, _), r in asked.items():
            by_topic.setdefault(topic, []).append(
                FetchRequest.FetchPartition(
                    partition=r.partition,
                    current_leader_epoch=r.current_leader_epoch,
                    fetch_offset=r.fetch_offset,
                    log_start_offset=fetchers[(topic, r.partition)].partition.log_start_offset,
                    partition_max_bytes=r.max_bytes,
                )
            )
        wait_ms = config["replica.fetch.wait.max.ms"]
        body = FetchRequest(
            replica_id=self.manager.broker_id,
            max_wait_ms=wait_ms,
            min_bytes=config["replica.fetch.min.bytes"],
            max_bytes=config["replica.fetch.response.max.bytes"],
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            forgotten_topics_data=[],
        )
        response = await self._send(ApiKey.FETCH, FETCH_VERSION, body, wait_ms)
        progressed, errors = False, False
        for t in response.responses:
            for p in t.partitions:
                tp = (t.topic, p.partition_index)
                fetcher = self.partitions.get(tp)
                if fetcher is None or fetcher is not fetchers.get(tp):
                    continue
                result = core.FetchResult(
                    ErrorCode(p.error_code),
                    p.records if p.records is not None else b"",  # a view: no copy
                    p.high_watermark,
                    p.log_start_offset,
                )
                errors |= result.error != ErrorCode.NO_ERROR
                progressed |= fetcher.on_fetch_result(asked[tp], result) > 0
                if fetcher.state is FetchState.FENCED:
                    logger.info("%r: fenced on %s-%d; waiting for the controller", self, *tp)
        return progressed or not errors  # an empty long poll is no reason to back off


class ReplicaFetcherManager:
    """The fetchers of this broker, one per source broker (Kafka: `ReplicaFetcherManager`)."""

    def __init__(
        self,
        broker_id: int,
        config: Any,
        endpoint_of: Callable[[int], tuple[str, int] | None],
    ) -> None:
        self.broker_id, self.config, self.endpoint_of = broker_id, config, endpoint_of
        self.security = InterBrokerSecurity.from_config(config)  # TLS and SASL (SEC-21)
        self.truncation = TruncationRule.parse(config["replica.truncation"])
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._stopping: set[asyncio.Task] = set()

    def add_partition(self, partition: Partition, leader_id: int) -> None:
        """Follow `partition` from `leader_id`: truncate first, then fetch."""
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = ReplicaFetcher(self, leader_id)
        fetcher.add(partition)

    def remove_partition(self, tp: TopicPartition) -> None:
        for source_id, fetcher in list(self.fetchers.items()):
            fetcher.remove(tp)
            if not fetcher.partitions:  # Kafka: shutdownIdleFetcherThreads
                del self.fetchers[source_id]
                fetcher.cancel()
                self._stopping.add(fetcher.task)  # keep a reference until it has ended
                fetcher.task.add_done_callback(self._stopping.discard)

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            await fetcher.stop()
        await asyncio.gather(*self._stopping, return_exceptions=True)

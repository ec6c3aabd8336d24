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
(kafka_ref/replication/follower_fetch_state.py). What a fetcher decides for all the
partitions of one source broker is `FetcherPartitions`, which does no I/O: it builds a
round's requests and takes their answers (Kafka: the per-partition half of
`AbstractFetcherThread`, `processFetchRequest` and `truncateToEpochEndOffsets`). The asyncio
`ReplicaFetcher` below carries its rounds over a connection to the leader; the simulator
(kafka_ref/sim/broker.py) carries the same rounds over its simulated network, so the code
that decides is the code that ships. A round is one of two kinds:

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
   (REPL-7, IDEM rules); the follower's HW becomes min(leader's HW, own LEO). A HW that
   moved wakes the consumers' fetches waiting at this follower (`high_watermark_moved`, the
   replica manager's `wake`; Kafka: `ReplicaFetcherThread.completeDelayedFetchRequests`):
   a follower serves consumers up to its HW (REPL-17).

Errors (the leader is down, not leader yet, a timeout after `replica.socket.timeout.ms`)
close the connection and wait `replica.fetch.backoff.ms` before trying again; the
controller's next decision usually moves the partition to another fetcher meanwhile.

Both brokers run the same kafka-ref version, so the versions are fixed (Fetch v10,
OffsetsForLeaderEpoch v3) instead of negotiated: Kafka picks them from
`inter.broker.protocol.version` for the same reason.

A follower's write that fails with an I/O error (truncating or appending) is not the
network's fault: it goes to `storage_failed` (the replica manager's), which takes the log
directory offline and with it the partition (DUR-16); the other partitions go on.

Rules: REPL-7, REPL-8, REPL-17, TRUNC-1, TRUNC-4..TRUNC-6, DUR-16.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaStorageError
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


# A round's requests, by partition: the fetcher that asked, and what it asked
Round = dict[TopicPartition, tuple[PartitionFetcher, "core.EpochRequest | core.FetchRequest"]]
# A follower's log was cut: (its fetcher, the request and answer that decided it, or None
# for the cut to the HW when fetching starts, and the log end offset before the cut)
TruncationListener = Callable[[PartitionFetcher, Any, Any, int], None]


@dataclass
class Progress:
    """What a round's answers did: moved a log (appended, truncated, or an epoch answered),
    or carried an error."""

    moved: bool = False
    errors: bool = False


class FetcherPartitions:
    """The partitions one fetcher copies from one source broker, and its rounds: which
    requests to send next, and what their answers do. No socket, task or clock: whoever
    carries the rounds (`ReplicaFetcher`, or the simulator) decides when to send them and
    how long to wait after one that brought nothing."""

    def __init__(
        self,
        truncation: TruncationRule,
        *,
        max_bytes: int,
        truncate_on_fetch: bool = True,
        storage_failed: Callable[[TopicPartition, BaseException], None],
        truncated: TruncationListener | None = None,
        high_watermark_moved: Callable[[TopicPartition], None] = lambda tp: None,
    ) -> None:
        self.truncation, self.max_bytes = truncation, max_bytes
        self.truncate_on_fetch = truncate_on_fetch
        self.storage_failed, self.truncated = storage_failed, truncated
        self.high_watermark_moved = high_watermark_moved
        self.partitions: dict[TopicPartition, PartitionFetcher] = {}

    def add(self, partition: Partition) -> None:
        """Follow `partition`; with the HW rule (or no epoch known) its log is cut to the HW
        at once (TRUNC-1)."""
        log_end_offset = partition.log_end_offset
        fetcher = PartitionFetcher(
            partition,
            self.truncation,
            max_bytes=self.max_bytes,
            truncate_on_fetch=self.truncate_on_fetch,
        )
        self.partitions[(partition.topic, partition.index)] = fetcher
        self._note_truncation(fetcher, None, None, log_end_offset)

    def remove(self, tp: TopicPartition) -> bool:
        return self.partitions.pop(tp, None) is not None

    def next_round(self) -> Round:
        """The next round: OffsetsForLeaderEpoch for the truncating partitions if there are
        any (none of them fetches before its log shares a prefix with the leader's, TRUNC-8),
        else a Fetch for the fetching ones; empty when every partition waits (FENCED)."""
        truncating = {
            tp: f for tp, f in self.partitions.items() if f.state is FetchState.TRUNCATING
        }
        chosen = truncating or {
            tp: f for tp, f in self.partitions.items() if f.state is FetchState.FETCHING
        }
        asked: Round = {}
        for tp, fetcher in chosen.items():
            request = fetcher.next_request()
            if request is not None:
                asked[tp] = (fetcher, request)
        return asked

    def on_answers(self, asked: Round, answers: Iterable[tuple[TopicPartition, Any]]) -> Progress:
        """Apply a round's answers (`EpochResult`s or `FetchResult`s, by partition). A
        partition that moved to another fetcher meanwhile ignores its answer; a failed write
        goes to `storage_failed` (DUR-15, DUR-16)."""
        progress = Progress()
        for tp, result in answers:
            fetcher, request = asked.get(tp, (None, None))
            if fetcher is None or self.partitions.get(tp) is not fetcher:
                continue  # the partition moved while we asked
            progress.errors |= result.error != ErrorCode.NO_ERROR
            log_end_offset = fetcher.partition.log_end_offset
            high_watermark = fetcher.partition.high_watermark
            try:
                if isinstance(request, core.EpochRequest):
                    fetcher.on_epoch_result(request, result)
                    progress.moved |= result.error == ErrorCode.NO_ERROR
                else:
                    appended = fetcher.on_fetch_result(request, result)
                    progress.moved |= appended > 0 or result.diverging_epoch is not None
            except (OSError, KafkaStorageError) as err:
                self.storage_failed(tp, err)
                continue
            self._note_truncation(fetcher, request, result, log_end_offset)
            if fetcher.partition.high_watermark > high_watermark:
                self.high_watermark_moved(tp)  # consumers reading here see more (REPL-17)
            if fetcher.state is FetchState.FENCED:
                logger.info("%s-%d: fenced; waiting for the controller", *tp)
        return progress

    def _note_truncation(
        self, fetcher: PartitionFetcher, request: Any, result: Any, log_end_offset: int
    ) -> None:
        if self.truncated is not None and fetcher.partition.log_end_offset < log_end_offset:
            self.truncated(fetcher, request, result, log_end_offset)


class ReplicaFetcher:
    """Fetches every partition this broker follows from one source broker: carries the
    rounds of its `FetcherPartitions` over a connection to the leader."""

    def __init__(self, manager: ReplicaFetcherManager, source_id: int) -> None:
        self.manager, self.source_id = manager, source_id
        self.fetch_partitions = FetcherPartitions(
            manager.truncation,
            max_bytes=manager.config["replica.fetch.max.bytes"],
            storage_failed=lambda tp, err: manager.storage_failed(tp, err),
            high_watermark_moved=lambda tp: manager.high_watermark_moved(tp),
        )
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

    @property
    def partitions(self) -> dict[TopicPartition, PartitionFetcher]:
        return self.fetch_partitions.partitions

    def add(self, partition: Partition) -> None:
        self.fetch_partitions.add(partition)
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        if self.fetch_partitions.remove(tp):
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
            asked = self.fetch_partitions.next_round()
            if not asked:  # nothing to do until a partition changes
                await self._changed.wait()
                continue
            try:
                connection = await self._connect()
                if isinstance(next(iter(asked.values()))[1], core.EpochRequest):
                    progressed = (await self._truncate(connection, asked)).moved
                else:
                    progress = await self._fetch(connection, asked)
                    # an empty long poll is no reason to back off
                    progressed = progress.moved or not progress.errors
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
    async def _truncate(self, conn: FetcherConnection, asked: Round) -> Progress:
        by_topic: dict[str, list[Any]] = {}
        for (topic, _), (_, r) in asked.items():
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
        answers = (
            (
                (t.topic, p.partition),
                core.EpochResult(ErrorCode(p.error_code), p.leader_epoch, p.end_offset),
            )
            for t in response.topics
            for p in t.partitions
        )
        return self.fetch_partitions.on_answers(asked, answers)

    # ------------------------------------------------------------------ fetching
    async def _fetch(self, conn: FetcherConnection, asked: Round) -> Progress:
        config = self.manager.config
        by_topic: dict[str, list[Any]] = {}
        for (topic, _), (_, r) in asked.items():
            by_topic.setdefault(topic, []).append(
                FetchRequest.FetchPartition(
                    partition=r.partition,
                    current_leader_epoch=r.current_leader_epoch,
                    fetch_offset=r.fetch_offset,
                    log_start_offset=r.log_start_offset,
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
        answers = (
            (
                (t.topic, p.partition_index),
                core.FetchResult(
                    ErrorCode(p.error_code),
                    p.records if p.records is not None else b"",  # a view: no copy
                    p.high_watermark,
                    p.log_start_offset,
                ),
            )
            for t in response.responses
            for p in t.partitions
        )
        return self.fetch_partitions.on_answers(asked, answers)


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
        # A follower's write failed (DUR-15, DUR-16): the replica manager's storage_failed
        self.storage_failed: Callable[[TopicPartition, BaseException], None] = lambda tp, err: None
        # A followed partition's HW moved: the replica manager's `wake` (REPL-17)
        self.high_watermark_moved: Callable[[TopicPartition], None] = lambda tp: None

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

"""One broker of the simulated cluster: the broker's own replication code, no sockets.

A `SimBroker` runs what a kafka-ref broker runs for replication, and nothing of its own:

* a `LogManager` (kafka_ref/log/log_manager.py) over the broker's data directory: it opens
  and, after a crash, recovers the logs, keeps the recovery-point checkpoint and the
  clean-shutdown marker;
* a `ReplicaManager` (kafka_ref/server/replica_manager.py), which hosts a `Partition` per
  replica, applies LeaderAndIsr (`become_leader_or_follower`), appends produces
  (`append_records`), answers followers' fetches and OffsetsForLeaderEpoch
  (`fetch_as_leader`, `last_offset_for_leader_epoch`), shrinks and expands the ISR through
  AlterIsr (`shrink_isrs`, `alter_partition`) and writes the HW checkpoint; acks=all waits
  in its produce purgatory as its `DelayedProduce`;
* per source broker, the follower fetcher's `FetcherPartitions`
  (kafka_ref/server/follower_fetcher.py), which builds each round of OffsetsForLeaderEpoch
  or Fetch requests and applies the answers through each partition's `PartitionFetcher`.

What the adapter supplies is what the real broker gets from asyncio and sockets: **time**
(the cluster's `ManualClock`, and timers on its `ManualScheduler` for the purgatories and
the periodic jobs of server/broker_tasks.py: ISR expiration every
`replica.lag.time.max.ms / 2`, the log flusher, the recovery-point and HW checkpoints), and
**the network**: a fetcher's round travels as one `FetcherRequest` to the leader's broker
and comes back as one `FetcherResponse`; LeaderAndIsr, AlterIsr and their answers travel to
and from the controller; produces and their answers to and from the client. The simulated
network may delay, drop or cut any of them (network.py).

`SimFetcherManager` carries the fetcher rounds as `ReplicaFetcher` carries them over a
connection: one round in flight per source broker, sent again after `fetch_timeout_ms`
without an answer; after a round that moved nothing the next waits
`replica_fetch_backoff_ms` (the simulated leader answers at once: there is no long poll).

A process has timers, and they die with it: every timer this broker schedules (purgatory
expirations, periodic jobs) belongs to one incarnation and does nothing once the broker
crashed or stopped, as the network drops what was in flight to it (network.py).

Every cut of a follower's log goes into the cluster's history (`truncate`), with the LEO
before and after and what decided it: the HW rule, an OffsetsForLeaderEpoch answer, or a
fetch answered with a diverging epoch. The recovery points are then checkpointed at once,
as Kafka's `LogManager.truncateTo` does, so that a restart never trusts a cut tail.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.log.file_records import LogReadInfo
from kafka_ref.log.log_manager import LogManager
from kafka_ref.replication.follower_fetch_state import FetchState, PartitionFetcher
from kafka_ref.replication.messages import (
    AlterIsr,
    AlterIsrResult,
    EpochRequest,
    EpochResult,
    FetchRequest,
    FetchResult,
    LeaderAndIsr,
)
from kafka_ref.replication.partition import Partition
from kafka_ref.server.follower_fetcher import FetcherPartitions, Round
from kafka_ref.server.purgatory import DelayedOperationPurgatory
from kafka_ref.server.replica_manager import DelayedProduce, ReplicaManager
from kafka_ref.sim.faults import crash_log
from kafka_ref.sim.network import SimWorld

CONTROLLER = "controller"


@dataclass(frozen=True)
class Produce:
    """A client's produce request for one partition."""

    request_id: int
    topic: str
    partition: int
    records: bytes
    acks: int


@dataclass(frozen=True)
class ProduceResponse:
    request_id: int
    error: ErrorCode
    base_offset: int = -1


@dataclass(frozen=True)
class FetcherRequest:
    """One round of a follower's fetcher: OffsetsForLeaderEpoch or Fetch requests."""

    round_id: int
    requests: tuple[EpochRequest | FetchRequest, ...]


@dataclass(frozen=True)
class FetcherResponse:
    """The leader's answers to a round, by partition."""

    round_id: int
    results: tuple[tuple[TopicPartition, EpochResult | FetchResult], ...]


class SimBroker:
    """A broker process; `start`, `stop` and `crash` are its life."""

    def __init__(self, broker_id: int, cluster: SimWorld) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.config = cluster.config
        self.data_dir = os.path.join(cluster.data_dir, f"broker-{broker_id}")
        self.alive = False
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.fetchers: SimFetcherManager | None = None
        self._incarnation = 0
        self._alter_isr_answers: dict[TopicPartition, Callable[[AlterIsrResult], None]] = {}

    def __repr__(self) -> str:
        return f"SimBroker({self.broker_id}, {'up' if self.alive else 'down'})"

    @property
    def clock(self):
        return self.cluster.clock

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        """The replicas this broker hosts now (none while it is down)."""
        return self.replica_manager.partitions if self.replica_manager is not None else {}

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Open (and, after a crash, recover) the logs; host partitions as LeaderAndIsr
        requests come."""
        config = self.config
        self._incarnation += 1
        self.alive = True
        self.log_manager = LogManager(self.data_dir, self.cluster.log_config, self.clock)
        schedule = self._schedule
        rm = self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            DelayedOperationPurgatory("Fetch", schedule),
            clock=self.clock,
            produce_purgatory=DelayedOperationPurgatory("Produce", schedule),
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
            defer=lambda fn: schedule(0, fn),
            partition_known=lambda topic, index: True,  # every partition is in the metadata
        )
        rm.alter_partition = self._send_alter_isr
        rm.fetcher_manager = self.fetchers = SimFetcherManager(self)
        self._alter_isr_answers = {}
        self.cluster.network.attach(self.broker_id, self.handle)
        # The periodic jobs of server/broker_tasks.py
        self._every(config.tick_ms, self.fetchers.tick)
        self._every(config.replica_lag_time_max_ms // 2, rm.shrink_isrs)
        self._every(config.tick_ms, self.log_manager.flush_logs)
        self._every(config.recovery_point_checkpoint_interval_ms, self.log_manager.checkpoint)
        self._every(config.hw_checkpoint_interval_ms, rm.checkpoint_high_watermarks)

    def stop(self) -> None:
        """Clean shutdown, in the broker's order: waiting produces answer, the HWs are
        checkpointed, the logs flushed and closed with the clean-shutdown marker."""
        rm, log_manager = self.replica_manager, self.log_manager
        assert rm is not None and log_manager is not None
        rm.fetch_purgatory.shutdown()
        rm.produce_purgatory.shutdown()  # REQUEST_TIMED_OUT: not on the ISR
        self._down()
        rm.checkpoint_high_watermarks()
        log_manager.close()

    def crash(self, *, lose_unflushed: bool, torn_bytes: int = 0) -> int:
        """The process dies (and with `lose_unflushed` the machine's page cache with it)."""
        log_manager = self.log_manager
        assert log_manager is not None
        self._down()
        return sum(
            crash_log(log, lose_unflushed=lose_unflushed, torn_bytes=torn_bytes)
            for log in log_manager.logs.values()
        )

    def _down(self) -> None:
        self.alive = False
        self._incarnation += 1  # this process's timers die with it
        self.cluster.network.detach(self.broker_id)
        self.log_manager = self.replica_manager = self.fetchers = None

    # ------------------------------------------------------------------ time and network
    def _schedule(self, delay_s: float, fn: Callable[[], None]) -> Any:
        """A timer of this incarnation: it does nothing once the process is gone."""
        incarnation = self._incarnation

        def run() -> None:
            if self._incarnation == incarnation:
                fn()

        return self.cluster.scheduler.schedule(delay_s, run)

    def _every(self, interval_ms: int, job: Callable[[], object]) -> None:
        def run() -> None:
            job()
            self._schedule(interval_ms / 1000, run)

        self._schedule(interval_ms / 1000, run)

    def send(self, dst: Any, message: Any, *, reliable: bool = False) -> None:
        assert self.alive, f"{self!r} cannot send"
        self.cluster.network.send(self.broker_id, dst, message, reliable=reliable)

    # ------------------------------------------------------------------ messages
    def handle(self, src: Any, message: Any) -> None:
        rm = self.replica_manager
        assert rm is not None and self.fetchers is not None
        if isinstance(message, LeaderAndIsr):
            self._on_leader_and_isr(message)
        elif isinstance(message, Produce):
            self._on_produce(src, message)
        elif isinstance(message, FetcherRequest):
            results = tuple(
                (
                    request.tp,
                    rm.fetch_as_leader(request, LogReadInfo.read_bytes)
                    if isinstance(request, FetchRequest)
                    else rm.last_offset_for_leader_epoch(request),
                )
                for request in message.requests
            )
            self.send(src, FetcherResponse(message.round_id, results))
        elif isinstance(message, FetcherResponse):
            self.fetchers.on_response(src, message)
        elif isinstance(message, AlterIsrResult):
            answer = self._alter_isr_answers.pop((message.topic, message.partition), None)
            if answer is not None:
                answer(message)

    def _on_leader_and_isr(self, state: LeaderAndIsr) -> None:
        rm = self.replica_manager
        assert rm is not None
        before = rm.partitions.get(state.tp)
        epoch = before.leader_epoch if before is not None else None
        leader = -1 if state.leader is None else state.leader
        partition = rm.become_leader_or_follower(
            PartitionState(
                state.topic,
                state.partition,
                leader,
                state.leader_epoch,
                state.replicas,
                state.isr,
                zk_version=state.version,
            )
        )
        if partition is not None and partition.leader_epoch != epoch:
            self.cluster.record("become", self.broker_id, state)

    def _on_produce(self, client: Any, request: Produce) -> None:
        rm = self.replica_manager
        assert rm is not None
        tp = TopicPartition(request.topic, request.partition)
        result = rm.append_records({tp: memoryview(request.records)}, request.acks)[tp]
        if result.error != ErrorCode.NO_ERROR or result.info is None:
            self.send(client, ProduceResponse(request.request_id, result.error))
        elif request.acks == -1:
            required = {tp: result.info.last_offset + 1}
            delayed = SimDelayedProduce(self, client, request, result.info.first_offset, required)
            rm.produce_purgatory.try_complete_else_watch(delayed, [tp])
        elif request.acks == 1:
            response = ProduceResponse(
                request.request_id, ErrorCode.NO_ERROR, result.info.first_offset
            )
            self.send(client, response)

    def _send_alter_isr(
        self, alter: AlterIsr, replicas: tuple[int, ...], answer: Callable[[AlterIsrResult], None]
    ) -> None:
        """The replica manager's AlterPartition sender: to the controller, whose answer
        comes back as an `AlterIsrResult` (one in flight per partition, ISR-5)."""
        self._alter_isr_answers[alter.tp] = answer
        self.send(CONTROLLER, alter, reliable=True)

    # ------------------------------------------------------------------ history
    def on_truncation(
        self, fetcher: PartitionFetcher, request: Any, result: Any, log_end_offset: int
    ) -> None:
        """A follower's log was cut: into the history, and the recovery points to disk."""
        p = fetcher.partition
        if request is None:
            why = f"to its HW {p.high_watermark}"
        elif isinstance(request, EpochRequest):
            again = ", asks again" if fetcher.state is FetchState.TRUNCATING else ""
            why = (
                f"OffsetsForLeaderEpoch({request.leader_epoch}): epoch {result.leader_epoch} "
                f"ends at {result.end_offset}{again}"
            )
        elif result.diverging_epoch is not None:
            epoch, end = result.diverging_epoch
            why = f"fetch at {request.fetch_offset}: diverging epoch {epoch} ends at {end}"
        else:
            why = (
                f"fetch at {request.fetch_offset}: the leader's log ends at {result.log_end_offset}"
            )
        self.cluster.record(
            "truncate", self.broker_id, f"{log_end_offset} -> {p.log_end_offset}", f"({why})"
        )
        assert self.log_manager is not None
        self.log_manager.checkpoint()


class SimDelayedProduce(DelayedProduce):
    """The replica manager's `DelayedProduce`, answering the simulated client."""

    def __init__(
        self,
        broker: SimBroker,
        client: Any,
        request: Produce,
        base_offset: int,
        required: dict[TopicPartition, int],
    ) -> None:
        assert broker.replica_manager is not None
        super().__init__(broker.replica_manager, broker.config.request_timeout_ms, required)
        self.broker, self.client = broker, client
        self.request_id, self.base_offset = request.request_id, base_offset
        ((self.tp, _),) = required.items()

    def on_complete(self) -> None:
        error = self.errors.get(self.tp, ErrorCode.NO_ERROR)
        if self.tp in self.waiting:  # not on the ISR in time: never acknowledged
            error = ErrorCode.REQUEST_TIMED_OUT
        offset = self.base_offset if error == ErrorCode.NO_ERROR else -1
        self.broker.send(self.client, ProduceResponse(self.request_id, error, offset))


@dataclass
class _SourceFetcher:
    """The fetcher of one source broker: its partitions, and the round in flight."""

    partitions: FetcherPartitions
    in_flight: Round | None = None
    round_id: int = 0
    sent_ms: int = 0
    next_ms: int = 0


class SimFetcherManager:
    """The replica manager's fetcher manager in the simulator (the broker's is
    `ReplicaFetcherManager`): a `FetcherPartitions` per source broker, its rounds carried
    over the simulated network."""

    def __init__(self, broker: SimBroker) -> None:
        self.broker = broker
        self.fetchers: dict[int, _SourceFetcher] = {}
        self._round_ids = 0

    def add_partition(self, partition: Partition, leader_id: int) -> None:
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            broker, config = self.broker, self.broker.config
            assert broker.replica_manager is not None
            partitions = FetcherPartitions(
                config.truncation,
                max_bytes=config.replica_fetch_max_bytes,
                truncate_on_fetch=config.truncate_on_fetch,
                storage_failed=broker.replica_manager.storage_failed,
                truncated=broker.on_truncation,
                high_watermark_moved=broker.replica_manager.wake,
            )
            fetcher = self.fetchers[leader_id] = _SourceFetcher(partitions)
        fetcher.partitions.add(partition)

    def remove_partition(self, tp: TopicPartition) -> None:
        for source_id, fetcher in list(self.fetchers.items()):
            fetcher.partitions.remove(tp)
            if not fetcher.partitions.partitions:
                del self.fetchers[source_id]

    def tick(self) -> None:
        """Send each source's next round, unless one is in flight (and not timed out)."""
        now = self.broker.clock.milliseconds()
        config = self.broker.config
        for source_id, fetcher in self.fetchers.items():
            if fetcher.in_flight is not None and now - fetcher.sent_ms >= config.fetch_timeout_ms:
                fetcher.in_flight = None  # lost on the way: send again
            if fetcher.in_flight is not None or now < fetcher.next_ms:
                continue
            asked = fetcher.partitions.next_round()
            if asked:
                self._round_ids += 1
                fetcher.in_flight, fetcher.round_id, fetcher.sent_ms = asked, self._round_ids, now
                requests = tuple(request for _, request in asked.values())
                self.broker.send(source_id, FetcherRequest(self._round_ids, requests))

    def on_response(self, source_id: Any, response: FetcherResponse) -> None:
        fetcher = self.fetchers.get(source_id)
        if fetcher is None or fetcher.in_flight is None or fetcher.round_id != response.round_id:
            return  # the fetcher changed, or this answer timed out already
        asked, fetcher.in_flight = fetcher.in_flight, None
        progress = fetcher.partitions.on_answers(asked, response.results)
        now = self.broker.clock.milliseconds()
        backoff = 0 if progress.moved else self.broker.config.replica_fetch_backoff_ms
        fetcher.next_ms = now + backoff

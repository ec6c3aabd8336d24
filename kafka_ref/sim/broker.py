"""One broker of the simulated cluster: real logs on disk, the replication core, no sockets.

A `SimBroker` is a thin adapter around the pure replication core, in its simplest form: it
hosts a
`Partition` (kafka_ref/replication/partition.py) per replica, each over a real `Log` in its
own data directory, and turns messages from the simulated network into calls on them:

* `LeaderAndIsr` from the controller: become leader or follower (a follower gets a
  `PartitionFetcher`), or refuse a stale epoch;
* `Produce` from a client: append as leader; acks=all waits in `delayed` until the HW
  passes it or `request_timeout_ms` (Kafka's DelayedProduce in the produce purgatory);
* fetch and OffsetsForLeaderEpoch requests from followers, and their answers;
* `AlterIsrResult` from the controller.

Every cut of a follower's log goes into the cluster's history (`truncate`), with the LEO
before and after and what decided it: the HW rule, an OffsetsForLeaderEpoch answer, or a
fetch answered with a diverging epoch.

A timer every `tick_ms` does the periodic work: followers send their next request (one in
flight, resent after `fetch_timeout_ms`, a backoff after an empty answer), leaders check
for lagging followers every `replica.lag.time.max.ms / 2` and send AlterIsr, logs flush
per their `flush.ms`, and the checkpoint files are written: `recovery-point-offset-checkpoint`
after flushes and truncations, `replication-offset-checkpoint` (the HWs) every
`replica.high.watermark.checkpoint.interval.ms`, like Kafka's `ReplicaManager`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.checkpoints import (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from kafka_ref.log.isolation import READ_COMMITTED
from kafka_ref.log.log import Log
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.replication.follower_fetch_state import FetchState, PartitionFetcher
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.messages import (
    AlterIsrResult,
    EpochRequest,
    EpochResult,
    FetchRequest,
    FetchResult,
    LeaderAndIsr,
)
from kafka_ref.replication.partition import Partition, read_high_watermarks
from kafka_ref.sim.faults import crash_log
from kafka_ref.sim.network import SimWorld

logger = logging.getLogger("kafka_ref.sim.broker")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
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


@dataclass
class _DelayedProduce:
    client: Any
    request_id: int
    tp: TopicPartition
    required_offset: int
    base_offset: int
    deadline_ms: int


@dataclass
class _FetcherSlot:
    fetcher: PartitionFetcher
    in_flight: Any = None
    sent_ms: int = 0
    next_ms: int = 0
    request_seq: int = field(default=0)


class SimBroker:
    """A broker process; `start`, `stop` and `crash` are its life."""

    def __init__(self, broker_id: int, cluster: SimWorld) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.config = cluster.config
        self.data_dir = os.path.join(cluster.data_dir, f"broker-{broker_id}")
        os.makedirs(self.data_dir, exist_ok=True)
        self.alive = False
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetchers: dict[TopicPartition, _FetcherSlot] = {}
        self.delayed: list[_DelayedProduce] = []
        self._timer = None
        self._last_isr_check = self._last_hw_checkpoint = 0
        self._recovery_points: dict[TopicPartition, int] = {}

    def __repr__(self) -> str:
        return f"SimBroker({self.broker_id}, {'up' if self.alive else 'down'})"

    @property
    def clock(self):
        return self.cluster.clock

    def _path(self, name: str) -> str:
        return os.path.join(self.data_dir, name)

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        """Open (and, after a crash, recover) every log of this broker's replicas."""
        marker = self._path(CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        if clean:
            os.unlink(marker)
        recovery_points = OffsetCheckpointFile(self._path(RECOVERY_POINT_CHECKPOINT)).read()
        hws = read_high_watermarks(self._path(REPLICATION_OFFSET_CHECKPOINT))
        for tp in self.cluster.replicas_of(self.broker_id):
            directory = self._path(f"{tp[0]}-{tp[1]}")
            log = Log.open(
                directory,
                self.cluster.log_config,
                self.clock,
                recovery_point=recovery_points.get(tp, 0),
                clean_shutdown=clean and os.path.isdir(directory),
                producer_state=ProducerStateManager,  # a broker's logs (LOG-19)
            )
            self.partitions[tp] = Partition(
                tp[0],
                tp[1],
                self.broker_id,
                log,
                LeaderEpochFileCache.load(directory),
                self.clock,
                replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
                high_watermark=hws.get(tp, 0),
                isolation=READ_COMMITTED,
            )
        self._recovery_points = {tp: p.log.recovery_point for tp, p in self.partitions.items()}
        self.alive = True
        now = self.clock.milliseconds()
        self._last_isr_check = self._last_hw_checkpoint = now
        self.cluster.network.attach(self.broker_id, self.handle)
        self._timer = self.cluster.scheduler.schedule(self.config.tick_ms / 1000, self._tick)

    def stop(self) -> None:
        """Clean shutdown: flush, write the checkpoints and the clean-shutdown marker."""
        self._down()
        for p in self.partitions.values():
            p.log.close()
        self._write_checkpoints(hw=True)
        with open(self._path(CLEAN_SHUTDOWN_FILE), "w"):
            pass
        self.partitions = {}

    def crash(self, *, lose_unflushed: bool, torn_bytes: int = 0) -> int:
        """The process dies (and with `lose_unflushed` the machine's page cache with it)."""
        self._down()
        lost = sum(
            crash_log(p.log, lose_unflushed=lose_unflushed, torn_bytes=torn_bytes)
            for p in self.partitions.values()
        )
        self.partitions = {}
        return lost

    def _down(self) -> None:
        self.alive = False
        self.cluster.network.detach(self.broker_id)
        if self._timer is not None:
            self._timer.cancel()
        self.fetchers, self.delayed = {}, []

    # ------------------------------------------------------------------ messages
    def handle(self, src: Any, message: Any) -> None:
        if isinstance(message, LeaderAndIsr):
            self._on_leader_and_isr(message)
        elif isinstance(message, Produce):
            self._on_produce(src, message)
        elif isinstance(message, tuple) and message[0] == "request":
            _, seq, request = message
            p = self.partitions.get(request.tp)
            if isinstance(request, FetchRequest):
                result = p.fetch(request) if p else FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                self._complete_delayed()
            else:
                result = (
                    p.last_offset_for_leader_epoch(request)
                    if p
                    else EpochResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                )
            self.cluster.network.send(self.broker_id, src, ("response", seq, request, result))
        elif isinstance(message, tuple) and message[0] == "response":
            self._on_response(*message[1:])
        elif isinstance(message, AlterIsrResult):
            p = self.partitions.get((message.topic, message.partition))
            if p is not None:
                p.on_alter_isr_result(message)
                self._complete_delayed()
        self._checkpoint_recovery_points(only_if_lower=True)

    def _on_leader_and_isr(self, state: LeaderAndIsr) -> None:
        p = self.partitions.get(state.tp)
        if p is None:
            return
        try:
            if state.leader == self.broker_id:
                p.make_leader(state)
                self.fetchers.pop(state.tp, None)
            else:
                p.make_follower(state)
                self.fetchers.pop(state.tp, None)
                if state.leader is not None:
                    leo = p.log_end_offset
                    fetcher = PartitionFetcher(
                        p, self.config.truncation, truncate_on_fetch=self.config.truncate_on_fetch
                    )
                    self.fetchers[state.tp] = _FetcherSlot(fetcher)
                    self._record_truncation(p, leo, f"to its HW {p.high_watermark}")
        except KafkaError as err:  # a stale LeaderAndIsr (FENCED_LEADER_EPOCH): ignored
            logger.debug("broker %d ignores %s: %s", self.broker_id, state, err)
            return
        self.cluster.record("become", self.broker_id, state)
        self._complete_delayed()

    def _on_produce(self, client: Any, request: Produce) -> None:
        p = self.partitions.get((request.topic, request.partition))
        if p is None:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            self.cluster.network.send(
                self.broker_id, client, ProduceResponse(request.request_id, error)
            )
            return
        try:
            info = p.append_records_to_leader(request.records, request.acks)
        except KafkaError as err:
            response = ProduceResponse(request.request_id, err.code)
            self.cluster.network.send(self.broker_id, client, response)
            return
        if request.acks == -1:
            now = self.clock.milliseconds()
            self.delayed.append(
                _DelayedProduce(
                    client,
                    request.request_id,
                    (request.topic, request.partition),
                    info.last_offset + 1,
                    info.first_offset,
                    now + self.config.request_timeout_ms,
                )
            )
            self._complete_delayed()
        elif request.acks == 1:
            response = ProduceResponse(request.request_id, ErrorCode.NO_ERROR, info.first_offset)
            self.cluster.network.send(self.broker_id, client, response)

    def _complete_delayed(self) -> None:
        """Answer every acks=all produce whose batch the whole ISR now has (REPL-4)."""
        now = self.clock.milliseconds()
        waiting = []
        for d in self.delayed:
            p = self.partitions.get(d.tp)
            done, error = p.check_enough_replicas_reach_offset(d.required_offset)
            if not done and now >= d.deadline_ms:
                done, error = True, ErrorCode.REQUEST_TIMED_OUT
            if done:
                offset = d.base_offset if error == ErrorCode.NO_ERROR else -1
                response = ProduceResponse(d.request_id, error, offset)
                self.cluster.network.send(self.broker_id, d.client, response)
            else:
                waiting.append(d)
        self.delayed = waiting

    def _on_response(self, seq: int, request: Any, result: Any) -> None:
        slot = self.fetchers.get(request.tp)
        if slot is None or slot.request_seq != seq or slot.in_flight is None:
            return  # the fetcher changed, or this answer timed out already
        slot.in_flight = None
        now = self.clock.milliseconds()
        p, leo = slot.fetcher.partition, slot.fetcher.partition.log_end_offset
        if isinstance(request, EpochRequest):
            slot.fetcher.on_epoch_result(request, result)
            progressed = result.error == ErrorCode.NO_ERROR
            again = ", asks again" if slot.fetcher.state is FetchState.TRUNCATING else ""
            why = f"OffsetsForLeaderEpoch({request.leader_epoch}): epoch {result.leader_epoch}"
            self._record_truncation(p, leo, f"{why} ends at {result.end_offset}{again}")
        else:
            progressed = slot.fetcher.on_fetch_result(request, result) > 0
            why = (
                f"fetch at {request.fetch_offset}: the leader's log ends at {result.log_end_offset}"
            )
            if result.diverging_epoch is not None:
                progressed = True
                epoch, end = result.diverging_epoch
                why = f"fetch at {request.fetch_offset}: diverging epoch {epoch} ends at {end}"
            self._record_truncation(p, leo, why)
        slot.next_ms = now if progressed else now + self.config.replica_fetch_backoff_ms

    def _record_truncation(self, p: Partition, log_end_offset: int, why: str) -> None:
        """Put a truncation in the cluster's history: the replica's LEO before and after."""
        if p.log_end_offset < log_end_offset:
            self.cluster.record(
                "truncate", self.broker_id, f"{log_end_offset} -> {p.log_end_offset}", f"({why})"
            )

    # ------------------------------------------------------------------ periodic work
    def _tick(self) -> None:
        if not self.alive:
            return
        now = self.clock.milliseconds()
        config = self.config
        for slot in self.fetchers.values():
            if slot.in_flight is not None and now - slot.sent_ms >= config.fetch_timeout_ms:
                slot.in_flight = None  # lost on the way: send again
            if slot.in_flight is None and now >= slot.next_ms:
                request = slot.fetcher.next_request()
                if request is not None:
                    slot.request_seq += 1
                    slot.in_flight, slot.sent_ms = request, now
                    message = ("request", slot.request_seq, request)
                    self.cluster.network.send(self.broker_id, slot.fetcher.leader_id, message)
        if now - self._last_isr_check >= config.replica_lag_time_max_ms // 2:
            self._last_isr_check = now
            for p in self.partitions.values():
                p.maybe_shrink_isr()
        for p in self.partitions.values():
            alter = p.take_alter_isr()
            if alter is not None:
                self.cluster.network.send(self.broker_id, CONTROLLER, alter, reliable=True)
            p.log.maybe_flush()
        self._complete_delayed()
        hw_due = now - self._last_hw_checkpoint >= config.hw_checkpoint_interval_ms
        if hw_due:
            self._last_hw_checkpoint = now
        self._write_checkpoints(hw=hw_due)
        self._timer = self.cluster.scheduler.schedule(config.tick_ms / 1000, self._tick)

    def _write_checkpoints(self, *, hw: bool) -> None:
        self._checkpoint_recovery_points(only_if_lower=False)
        if hw:
            offsets = {tp: p.high_watermark for tp, p in self.partitions.items()}
            OffsetCheckpointFile(self._path(REPLICATION_OFFSET_CHECKPOINT)).write(offsets)

    def _checkpoint_recovery_points(self, *, only_if_lower: bool) -> None:
        """Kafka checkpoints recovery points after flushes and at once after a truncation,
        so that a restart never trusts an unflushed tail as recovered."""
        current = {tp: p.log.recovery_point for tp, p in self.partitions.items()}
        changed = current != self._recovery_points
        lower = any(current[tp] < self._recovery_points.get(tp, 0) for tp in current)
        if changed and (lower or not only_if_lower):
            OffsetCheckpointFile(self._path(RECOVERY_POINT_CHECKPOINT)).write(current)
            self._recovery_points = current

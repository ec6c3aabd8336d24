"""A transaction coordinator with an in-memory `__transaction_state` and marker channel.

Appends and marker requests wait in queues until a test (or a state machine rule)
completes them, so every interleaving of "the log write is durable", "the markers are
written" and "the coordinator fails over" can be played. With `logs` (topic partition ->
a real `Log`), a completed marker request writes its markers into those logs, as the
partition leaders' WriteTxnMarkers handler does, and answers with what each append said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.log import Log
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import RecordBatch
from kafka_ref.record.control import ControlRecordType, EndTransactionMarker, build_marker_batch
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.coordinator import MarkerRequest, TransactionCoordinator, TxnConfig
from kafka_ref.txn.transaction_metadata import TransactionMetadata
from kafka_ref.txn.transaction_version import TV_2

OK = ErrorCode.NO_ERROR


@dataclass
class Harness:
    num_partitions: int = 3
    clock: ManualClock = field(default_factory=lambda: ManualClock(1_000_000))
    log: dict[int, list[tuple[bytes, bytes | None]]] = field(default_factory=dict)
    appends: list = field(default_factory=list)  # (partition, records, on_done)
    markers: list = field(default_factory=list)  # (MarkerRequest, on_done)
    sent: list[MarkerRequest] = field(default_factory=list)  # every request ever sent
    epochs: dict[int, int] = field(default_factory=dict)
    next_pid: int = 1000
    logs: dict[tuple[str, int], Log] = field(default_factory=dict)  # where markers are written

    def __post_init__(self) -> None:
        self.scheduler = ManualScheduler(self.clock)
        self.coordinator = self._new_coordinator()
        for p in range(self.num_partitions):
            self.elect(p)

    def _new_coordinator(self) -> TransactionCoordinator:
        config = TxnConfig(num_partitions=self.num_partitions, max_timeout_ms=60_000)
        return TransactionCoordinator(
            config, self.clock, self.scheduler, self._append, self._send, self._pid
        )

    def _pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def _append(self, partition: int, batch: bytes, on_done) -> None:
        records = [(r.key, r.value) for r in RecordBatch(batch).records()]
        self.appends.append((partition, records, on_done))

    def _send(self, request: MarkerRequest, on_done) -> None:
        self.sent.append(request)
        self.markers.append((request, on_done))

    # -- driving ------------------------------------------------------------------------
    def complete_append(self, i: int = 0, error: ErrorCode = OK) -> None:
        partition, records, on_done = self.appends.pop(i)
        if error == OK:
            self.log.setdefault(partition, []).extend(records)
        on_done(error)

    def complete_markers(self, i: int = 0, error: ErrorCode = OK) -> None:
        request, on_done = self.markers.pop(i)
        errors = dict.fromkeys(request.partitions, error)
        if error == OK and self.logs:
            errors = {tp: self._write_marker(tp, request) for tp in request.partitions}
        on_done(errors)

    def _write_marker(self, tp: tuple[str, int], request: MarkerRequest) -> ErrorCode:
        kind = ControlRecordType.COMMIT if request.commit else ControlRecordType.ABORT
        marker = EndTransactionMarker(kind, request.coordinator_epoch)
        batch = build_marker_batch(
            request.producer_id, request.producer_epoch, marker, self.clock.milliseconds()
        )
        try:
            self.logs[tp].append(batch, origin=AppendOrigin.COORDINATOR)
        except KafkaError as err:  # an older producer or coordinator epoch (TXN-3)
            return err.code
        return OK

    def settle(self, rounds: int = 50) -> None:
        """Complete every append and marker, and run due timers, until nothing is left."""
        for _ in range(rounds):
            if self.appends:
                self.complete_append()
            elif self.markers:
                self.complete_markers()
            elif self.scheduler.pending():
                self.scheduler.advance(1000)
            else:
                return

    def elect(self, partition: int) -> None:
        """This coordinator (re)loads `partition` with a new coordinator epoch."""
        self.epochs[partition] = self.epochs.get(partition, -1) + 1
        self.coordinator.on_resigned(partition)
        self.coordinator.on_elected(partition, self.epochs[partition], self.log.get(partition, []))

    def crash(self, landed: Sequence[bool] = ()) -> None:
        """The coordinator's process dies: of its log writes in flight, the i-th reached the
        log if landed[i] (its answer is lost either way); its marker requests and timers
        die with it. A new coordinator then loads every partition from the log (TXN-14)."""
        for (partition, records, _), durable in zip(self.appends, landed, strict=False):
            if durable:
                self.log.setdefault(partition, []).extend(records)
        self.appends.clear()
        self.markers.clear()
        self.scheduler = ManualScheduler(self.clock)
        self.coordinator = self._new_coordinator()
        for p in range(self.num_partitions):
            self.elect(p)

    def durable(self, transactional_id: str) -> TransactionMetadata | None:
        partition = self.coordinator.partition_for(transactional_id)
        return tlog.fold(self.log.get(partition, [])).transactions.get(transactional_id)

    def history(self, transactional_id: str) -> list[TransactionMetadata]:
        partition = self.coordinator.partition_for(transactional_id)
        return [
            tlog.read_value(transactional_id, v)
            for k, v in self.log.get(partition, [])
            if v is not None and tlog.read_key(k) == transactional_id
        ]

    # -- calls with captured answers ------------------------------------------------------
    def init(self, tid: str, timeout_ms: int = 10_000) -> list:
        out: list = []
        self.coordinator.handle_init_producer_id(tid, timeout_ms, lambda *a: out.append(a))
        return out

    def add(self, tid: str, pid: int, epoch: int, *parts: tuple[str, int]) -> list:
        out: list = []
        self.coordinator.handle_add_partitions(tid, pid, epoch, set(parts), out.append)
        return out

    def end(self, tid: str, pid: int, epoch: int, commit: bool) -> list:
        out: list = []
        self.coordinator.handle_end_txn(tid, pid, epoch, commit, out.append)
        return out

    # -- transactions v2: a leader adds the partitions, EndTxn v5 answers id and epoch ------
    def add_v2(self, tid: str, pid: int, epoch: int, *parts: tuple[str, int]) -> list:
        out: list = []
        self.coordinator.handle_add_partitions(tid, pid, epoch, set(parts), out.append, TV_2)
        return out

    def end_v2(self, tid: str, pid: int, epoch: int, commit: bool) -> list:
        out: list = []
        self.coordinator.handle_end_txn_v2(tid, pid, epoch, commit, lambda *a: out.append(a))
        return out


class CoordinatorWorld(RuleBasedStateMachine):
    """The rules of the coordinator's surroundings that the stateful tests share: a pending
    log write (`self.h`, a `Harness`) completes or fails, a pending marker request is answered
    or fails; the subclasses add the clients and the crashes."""

    h: Harness

    @precondition(lambda self: self.h.appends)
    @rule(data=st.data(), fail=st.booleans())
    def write(self, data, fail):
        i = data.draw(st.integers(0, len(self.h.appends) - 1))
        self.h.complete_append(i, ErrorCode.NOT_ENOUGH_REPLICAS if fail else OK)

    @precondition(lambda self: self.h.markers)
    @rule(data=st.data(), fail=st.booleans())
    def markers(self, data, fail):
        i = data.draw(st.integers(0, len(self.h.markers) - 1))
        self.h.complete_markers(i, ErrorCode.NOT_LEADER_OR_FOLLOWER if fail else OK)

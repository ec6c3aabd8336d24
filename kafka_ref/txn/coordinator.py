"""The transaction coordinator: two-phase commit across partitions, decided in a log.

A transactional producer is configured with a `transactional.id`. Its home is a partition
of `__transaction_state` (transaction_log.py), and the broker leading that partition is
its **transaction coordinator** (Kafka: `TransactionCoordinator`). The protocol (KIP-98):

1. **InitProducerId**(transactional id): the coordinator maps the id to a producer id and
   bumps the epoch, which *fences* every older instance of the producer (a "zombie"
   writing with the old epoch is refused everywhere, TXN-13). If the id had a transaction
   open, the coordinator aborts it first and answers CONCURRENT_TRANSACTIONS until that is
   done; the producer retries.
2. **AddPartitionsToTxn** / **AddOffsetsToTxn** before the first write to a partition (or
   the first offset commit through a group): the coordinator records the partition in the
   transaction; the state becomes Ongoing.
3. The producer writes transactional batches to the partition leaders and commits offsets
   with TxnOffsetCommit to the group coordinator.
4. **EndTxn**(commit or abort): the coordinator writes PrepareCommit or PrepareAbort to
   its log. *This record is the decision*: once it is durable the transaction will be
   committed (or aborted) whatever fails later, and only then does anyone hear of it
   (TXN-12). The coordinator answers the producer, then sends **WriteTxnMarkers** to the
   leaders of every partition of the transaction, and when every marker is written it
   logs CompleteCommit or CompleteAbort.

A coordinator that takes over a `__transaction_state` partition (failover, restart)
replays its records; transactions it finds in PrepareCommit or PrepareAbort get their
markers sent again, so a decision is always carried out (TXN-14). A transaction open for
longer than its `transaction.timeout.ms` is aborted with a bumped epoch, which also fences
the producer that left it (TXN-15).

Like the group coordinator this class is pure: the log write is `append(partition, batch,
on_done)`, the markers go out through `send_markers(request, on_done)`, time comes from a
clock and timers from a scheduler (kafka_ref/server/txn_adapter.py drives it).

Ids idle longer than `transactional.id.expiration.ms` are forgotten (expiration.py, TXN-81).

**Transactions v2** (KIP-890 part 2, transaction_version.py). A client of
`transaction.version` 2 sends no AddPartitionsToTxn: the partition leader adds the partition
for it (AddPartitionsToTxn v5 from the broker, TXN-95). Its EndTxn (v5) bumps the epoch: the
decision is logged with epoch + 1, the markers carry it, and the answer names the producer id
and epoch of the next transaction (TXN-92). A retried EndTxn comes with the epoch just below
the current one and is answered as a retry, with the current id and epoch; at the last epoch
the producer moves to a new producer id once the markers are written (TXN-94).

Rules: TXN-12..TXN-15, TXN-81, TXN-92, TXN-94, TXN-95.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.clock import Clock, Scheduler
from kafka_ref.errors import ErrorCode
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.txn import expiration
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.transaction_metadata import (
    COMPLETE,
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
)
from kafka_ref.txn.transaction_metadata import TransactionState as S
from kafka_ref.txn.transaction_version import TV_0, TV_2, supports_epoch_bump

logger = logging.getLogger("kafka_ref.txn.coordinator")

OK = ErrorCode.NO_ERROR
Callback = Callable[[ErrorCode], None]
InitCallback = Callable[[ErrorCode, int, int], None]
EndCallback = Callable[[ErrorCode, int, int], None]  # error, next producer id and epoch (v2)
Append = Callable[[int, bytes, Callback], None]
MarkerCallback = Callable[[dict[TopicPartition, ErrorCode]], None]

# A marker write that failed with one of these is tried again (Kafka:
# `TransactionMarkerRequestCompletionHandler`); other errors end that partition's marker.
RETRIABLE_MARKER_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.LEADER_NOT_AVAILABLE,
    }
)


@dataclass(frozen=True)
class TxnConfig:
    """The coordinator's settings (Kafka: `TransactionConfig`)."""

    num_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    abort_timed_out_interval_ms: int = 10_000  # ...abort.timed.out.transaction.cleanup.interval.ms
    marker_retry_backoff_ms: int = 100
    transactional_id_expiration_ms: int = expiration.DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS
    remove_expired_interval_ms: int = expiration.DEFAULT_REMOVE_EXPIRED_INTERVAL_MS


@dataclass(frozen=True)
class MarkerRequest:
    """The markers one transaction needs (one `WritableTxnMarker` per leader, once grouped)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]
    transaction_version: int = TV_0  # WriteTxnMarkers v2 carries it (KIP-1228)


SendMarkers = Callable[[MarkerRequest, MarkerCallback], None]


def _log_error(error: ErrorCode) -> ErrorCode:
    """Kafka's translation of a failed `__transaction_state` write for the client."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


class TransactionCoordinator:
    """The broker's transaction coordinator (Kafka: `TransactionCoordinator` with its
    `TransactionStateManager`). Not thread-safe: the broker's event loop drives it."""

    def __init__(
        self,
        config: TxnConfig,
        clock: Clock,
        schedule: Scheduler,
        append: Append,
        send_markers: SendMarkers,
        generate_producer_id: Callable[[], int],
    ) -> None:
        self.config, self.clock, self.schedule = config, clock, schedule
        self.append, self.send_markers = append, send_markers
        self.generate_producer_id = generate_producer_id
        self._owned: dict[int, dict[str, TransactionMetadata]] = {}  # partition -> its ids
        self._epochs: dict[int, int] = {}  # partition -> coordinator epoch
        self._loading: set[int] = set()

    def partition_for(self, transactional_id: str) -> int:
        return tlog.partition_for(transactional_id, self.config.num_partitions)

    def _now(self) -> int:
        return self.clock.milliseconds()

    def _owner(self, transactional_id: str) -> tuple[ErrorCode, int]:
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, partition
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR, partition
        return OK, partition

    def _still_owner(self, partition: int, epoch: int) -> bool:
        return partition in self._owned and self._epochs.get(partition) == epoch

    # -- InitProducerId ------------------------------------------------------------------
    def handle_init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        callback: InitCallback,
        expected: tuple[int, int] | None = None,
    ) -> None:
        """Map the id to a producer id and bump its epoch (TXN-13). `expected` is the
        (producer id, epoch) a KIP-360 producer (InitProducerId v3+) already has (TXN-18)."""

        def fail(error: ErrorCode) -> None:
            callback(error, -1, NO_PRODUCER_EPOCH)

        if transactional_id == "":
            return fail(ErrorCode.INVALID_REQUEST)
        if expected == (-1, -1):
            expected = None  # v3+ from a producer that has no id yet
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return fail(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        error, partition = self._owner(transactional_id)
        if error != OK:
            return fail(error)
        txns = self._owned[partition]
        meta = txns.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id, self.generate_producer_id(), NO_PRODUCER_EPOCH, timeout_ms
            )
            txns[transactional_id] = meta
        if meta.pending_state is not None or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected(meta, *expected):
            return fail(ErrorCode.PRODUCER_FENCED)
        if meta.state in (S.ONGOING, S.PREPARE_EPOCH_FENCE):
            # Abort the open transaction with a bumped epoch; the producer retries (KIP-98).
            if meta.state == S.ONGOING:
                meta.fence_producer_epoch()
            self._abort_fenced(meta, partition)
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        expected_epoch = expected[1] if expected is not None else None
        exhausted = meta.epoch_exhausted and expected_epoch in (None, meta.producer_epoch)
        new_pid = self.generate_producer_id() if exhausted else None
        target = meta.prepare_increment_producer_epoch(
            timeout_ms, self._now(), new_pid, expected_epoch
        )
        if target is None:
            return fail(ErrorCode.PRODUCER_FENCED)

        def done() -> None:
            callback(OK, meta.producer_id, meta.producer_epoch)

        self._write(partition, meta, target, done, fail)

    @staticmethod
    def _valid_expected(meta: TransactionMetadata, producer_id: int, epoch: int) -> bool:
        """KIP-360: the producer's (id, epoch) is the current one or the one just before a
        bump (Kafka: `isValidProducerId` without producer id rotation across epochs)."""
        return producer_id == meta.producer_id and epoch in (
            meta.producer_epoch,
            meta.last_producer_epoch,
        )

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------
    def handle_add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[TopicPartition],
        callback: Callback,
        transaction_version: int = TV_0,
    ) -> None:
        """Add partitions to the transaction; Ongoing once durable. Under transactions v2 the
        partition leaders ask, for the producer (TXN-95); a transaction's markers still
        being written make them wait (CONCURRENT_TRANSACTIONS, retried)."""
        error, meta, partition = self._check(transactional_id, producer_id, producer_epoch)
        if error != OK or meta is None:
            return callback(error)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return callback(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state == S.ONGOING and partitions <= meta.partitions:
            return callback(OK)  # nothing new: no write
        target = meta.prepare_add_partitions(partitions, self._now(), transaction_version)
        self._write(partition, meta, target, lambda: callback(OK), callback)

    def handle_verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """KIP-890: is each partition in the producer's open transaction? Asked by a
        partition leader before a transaction's first write there (AddPartitionsToTxn v4
        `verify_only`, TXN-23); writes nothing (Kafka: `handleVerifyPartitionsInTransaction`,
        INVALID_TXN_STATE for a partition that is not in it, as in Kafka 3.6)."""
        error, meta, _ = self._check(
            transactional_id, producer_id, producer_epoch, pending_allowed=True
        )
        if error == OK and meta is not None and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = ErrorCode.CONCURRENT_TRANSACTIONS  # its markers are being written
        if error != OK or meta is None:
            return dict.fromkeys(partitions, error)
        return {
            tp: OK if tp in meta.partitions else ErrorCode.INVALID_TXN_STATE for tp in partitions
        }

    def _check(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        pending_allowed: bool = False,
    ) -> tuple[ErrorCode, TransactionMetadata | None, int]:
        """The checks every request of a producer passes (Kafka: the first branches of
        `handleAddPartitionsToTransaction`, `handleEndTransaction`,
        `handleVerifyPartitionsInTransaction`). A verification passes `pending_allowed`:
        it reads only partitions already durable in the transaction, so a write in flight
        does not concern it."""
        if transactional_id == "":
            return ErrorCode.INVALID_REQUEST, None, -1
        error, partition = self._owner(transactional_id)
        if error != OK:
            return error, None, partition
        meta = self._owned[partition].get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None, partition
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None, partition
        if meta.pending_state is not None and not pending_allowed:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None, partition
        return OK, meta, partition

    # -- EndTxn --------------------------------------------------------------------------
    def handle_end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        callback: Callback,
    ) -> None:
        """Decide (PrepareCommit / PrepareAbort), answer, then write the markers (TXN-12)."""
        error, meta, partition = self._check(transactional_id, producer_id, producer_epoch)
        if error != OK or meta is None:
            return callback(error)
        state = meta.state
        if state == S.ONGOING:
            return self._end(meta, partition, commit, TV_0, lambda error, *_: callback(error))
        retry_of = {
            S.COMPLETE_COMMIT: (True, OK),
            S.COMPLETE_ABORT: (False, OK),
            S.PREPARE_COMMIT: (True, ErrorCode.CONCURRENT_TRANSACTIONS),
            S.PREPARE_ABORT: (False, ErrorCode.CONCURRENT_TRANSACTIONS),
        }
        if state in retry_of and retry_of[state][0] == commit:
            return callback(retry_of[state][1])  # a retry of what was already decided
        callback(ErrorCode.INVALID_TXN_STATE)

    def handle_end_txn_v2(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        callback: EndCallback,
    ) -> None:
        """EndTxn v5 (transactions v2): decide with the epoch bumped and answer the producer
        id and epoch of the next transaction (TXN-92). A retry names the epoch before the
        bump, or the last epoch of the producer id an overflow left (TXN-94); it is answered
        OK with the current id and epoch once the markers are written. (Kafka:
        `TransactionCoordinator.endTransaction` for `supportsEpochBump`.)"""

        def fail(error: ErrorCode) -> None:
            callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        if transactional_id == "":
            return fail(ErrorCode.INVALID_REQUEST)
        error, partition = self._owner(transactional_id)
        if error != OK:
            return fail(error)
        meta = self._owned[partition].get(transactional_id)
        if meta is None:
            return fail(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        state = meta.state
        retry_on_bump = meta.producer_epoch == producer_epoch + 1
        retry_on_overflow = (
            meta.previous_producer_id == producer_id
            and producer_epoch == MAX_PRODUCER_EPOCH - 1
            and meta.producer_epoch == 0
        )
        if meta.producer_id != producer_id and not retry_on_overflow:
            return fail(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in COMPLETE:
            valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:
            valid = producer_epoch == meta.producer_epoch
        if not valid:
            return fail(ErrorCode.PRODUCER_FENCED)
        if meta.pending_state is not None:
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS)
        retry = retry_on_bump or retry_on_overflow
        if state == S.ONGOING:
            return self._end(meta, partition, commit, TV_2, callback)
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            same = (state == S.PREPARE_COMMIT) == commit
            return fail(ErrorCode.CONCURRENT_TRANSACTIONS if same else ErrorCode.INVALID_TXN_STATE)
        if state in COMPLETE and retry:
            if (state == S.COMPLETE_COMMIT) == commit:
                return callback(OK, meta.producer_id, meta.producer_epoch)
            return fail(ErrorCode.INVALID_TXN_STATE)
        if state in (S.EMPTY, *COMPLETE) and not commit:
            # an abort with nothing open still bumps the epoch (the producer may have written
            # batches that never reached their partition before it was added)
            return self._end(meta, partition, False, TV_2, callback)
        fail(ErrorCode.INVALID_TXN_STATE)

    def _end(
        self,
        meta: TransactionMetadata,
        partition: int,
        commit: bool,
        version: int,
        answer: EndCallback,
    ) -> None:
        """Log the decision; once durable, answer and send the markers (TXN-12). Under
        transactions v2 (`version`) the decision bumps the epoch, and the answer names the
        next transaction's producer id and epoch: after an overflow the new id at epoch 0."""
        state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        next_pid = NO_PRODUCER_ID
        fencing = meta.state == S.PREPARE_EPOCH_FENCE
        if supports_epoch_bump(version) and meta.epoch_exhausted and not fencing:
            next_pid = self.generate_producer_id()
        nothing_open = meta.state in (S.EMPTY, *COMPLETE)
        target = meta.prepare_abort_or_commit(state, self._now(), version, next_pid, nothing_open)
        epoch = self._epochs[partition]

        def decided() -> None:  # the decision is durable: answer, then carry it out
            if meta.next_producer_id != NO_PRODUCER_ID:
                answer(OK, meta.next_producer_id, 0)
            else:
                answer(OK, meta.producer_id, meta.producer_epoch)
            self._send_markers(meta, partition, epoch)

        def failed(error: ErrorCode) -> None:
            answer(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        self._write(partition, meta, target, decided, failed)

    def _abort_fenced(self, meta: TransactionMetadata, partition: int) -> None:
        """The coordinator aborts on its own (a fence, a timeout), in the transaction's own
        protocol: a v2 transaction's abort bumps the epoch once more, past the fence."""
        self._end(meta, partition, False, meta.client_transaction_version, lambda *_: None)

    def _send_markers(self, meta: TransactionMetadata, partition: int, epoch: int) -> None:
        remaining = set(meta.partitions)
        commit = meta.state == S.PREPARE_COMMIT

        def send() -> None:
            if not self._still_owner(partition, epoch):
                return  # the new coordinator finishes it (TXN-14)
            if not remaining:
                return self._complete(meta, partition, epoch)
            request = MarkerRequest(
                meta.transactional_id,
                meta.producer_id,
                meta.producer_epoch,
                commit,
                epoch,
                frozenset(remaining),
                meta.client_transaction_version,
            )
            self.send_markers(request, on_done)

        def on_done(errors: dict[TopicPartition, ErrorCode]) -> None:
            if ErrorCode.TRANSACTION_COORDINATOR_FENCED in errors.values():
                logger.warning("%s: fenced by a newer coordinator", meta.transactional_id)
                return
            for tp, error in errors.items():
                if error not in RETRIABLE_MARKER_ERRORS:
                    if error != OK:
                        logger.error(
                            "%s: marker for %s failed: %s", meta.transactional_id, tp, error.name
                        )
                    remaining.discard(tp)
            if remaining:
                self.schedule(self.config.marker_retry_backoff_ms / 1000, send)
            else:
                send()

        send()

    def _complete(self, meta: TransactionMetadata, partition: int, epoch: int) -> None:
        """Every marker is written: log CompleteCommit / CompleteAbort."""
        if not self._still_owner(partition, epoch):
            return  # a retry of an earlier coordinator epoch: the new one finishes (TXN-14)
        target = meta.prepare_complete(self._now())

        def failed(error: ErrorCode) -> None:
            if error != ErrorCode.NOT_COORDINATOR and self._still_owner(partition, epoch):
                retry = lambda: self._complete(meta, partition, epoch)  # noqa: E731
                self.schedule(self.config.marker_retry_backoff_ms / 1000, retry)

        self._write(partition, meta, target, lambda: None, failed)

    # -- the log ---------------------------------------------------------------------------
    def _write(
        self,
        partition: int,
        meta: TransactionMetadata,
        target: TransactionMetadata,
        on_success: Callable[[], None],
        on_error: Callback,
    ) -> None:
        """Append `target` to the id's partition; make it the state once durable."""
        epoch = self._epochs[partition]
        key, value = tlog.key_bytes(meta.transactional_id), tlog.value_bytes(target)
        batch = build_batch([Record(key, value, self._now())])

        def done(error: ErrorCode) -> None:
            if not self._still_owner(partition, epoch):
                meta.abort_transition()
                return on_error(ErrorCode.NOT_COORDINATOR)
            if error != OK:
                meta.abort_transition()
                return on_error(_log_error(error))
            meta.complete_transition(target)
            on_success()

        self.append(partition, batch, done)

    # -- partitions of __transaction_state -------------------------------------------------
    def begin_loading(self, partition: int) -> None:
        self._loading.add(partition)

    def on_elected(self, partition: int, coordinator_epoch: int, records: tlog.Records) -> None:
        """Load a partition; finish the decisions it holds (TXN-10, TXN-14)."""
        loaded = tlog.fold(records).transactions
        self._loading.discard(partition)
        self._owned[partition], self._epochs[partition] = loaded, coordinator_epoch
        for meta in loaded.values():
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(meta, partition, coordinator_epoch)
        logger.info("loaded %d transactional ids of partition %d", len(loaded), partition)

    def on_resigned(self, partition: int) -> None:
        self._loading.discard(partition)
        self._owned.pop(partition, None)
        self._epochs.pop(partition, None)

    def owns(self, partition: int) -> bool:
        return partition in self._owned

    # -- timeouts and views ----------------------------------------------------------------
    def abort_timed_out_transactions(self) -> list[str]:
        """Abort every transaction open longer than its timeout, fencing its producer
        (Kafka: `abortTimedOutTransactions`, TXN-15). Returns the ids aborted."""
        now, aborted = self._now(), []
        for partition, txns in list(self._owned.items()):
            for meta in list(txns.values()):
                if meta.pending_state is not None:
                    continue
                expired = meta.state == S.ONGOING and (
                    meta.txn_start_timestamp + meta.txn_timeout_ms <= now
                )
                if not expired and meta.state != S.PREPARE_EPOCH_FENCE:
                    continue
                if meta.state == S.ONGOING:
                    meta.fence_producer_epoch()
                logger.info("aborting timed out transaction of %s", meta.transactional_id)
                self._abort_fenced(meta, partition)
                aborted.append(meta.transactional_id)
        return aborted

    def remove_expired_transactional_ids(self) -> list[str]:
        """Forget the ids idle past `transactional.id.expiration.ms`, writing a tombstone
        for each (Kafka: `removeExpiredTransactionalIds`, TXN-81; expiration.py)."""
        now, removed = self._now(), []
        for partition, txns in list(self._owned.items()):
            epoch = self._epochs[partition]
            removed += expiration.expire_partition(
                txns,
                partition,
                now,
                self.config.transactional_id_expiration_ms,
                self.append,
                lambda p=partition, e=epoch: self._still_owner(p, e),
            )
        return removed

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        error, partition = self._owner(transactional_id)
        if error != OK:
            return error, None
        meta = self._owned[partition].get(transactional_id)
        return (OK, meta) if meta is not None else (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)

    def transactions(self) -> list[TransactionMetadata]:
        """Every transactional id this coordinator owns (ListTransactions)."""
        return [m for txns in self._owned.values() for m in txns.values()]

"""The transactional producer: Kafka's TransactionManager, idempotence plus transactions.

A transactional producer (KIP-98) has a `transactional.id` that outlives the process. It
writes to many partitions, and commits its consumer group's offsets, as one atomic unit:

    producer.init_transactions()     # FindCoordinator(key type 1), InitProducerId(tid)
    producer.begin_transaction()     # local: READY -> IN_TRANSACTION
    producer.send("out", b"x")       # AddPartitionsToTxn(out-0) before the first batch leaves
    producer.send_offsets_to_transaction(offsets, "group")  # AddOffsetsToTxn, TxnOffsetCommit
    producer.commit_transaction()    # flush, then EndTxn(commit)

Four modules make the transaction manager: the states and their legal transitions
(transaction_state.py), the six requests and how each answer is handled (txn_requests.py),
the sequence numbers of the idempotent producer, which a transactional producer is too
(idempotence.py), and here the application's calls and the Sender's questions:

* **init_transactions** finds the transaction coordinator (FindCoordinator, key type 1,
  the transactional id as key) and sends it InitProducerId with the transactional id and
  `transaction.timeout.ms`. The coordinator bumps the id's epoch, which fences any older
  producer with the same id, and aborts what that one left open.
* **send** to a partition new to the transaction marks it (`maybe_add_partition`); the
  Sender sends AddPartitionsToTxn before it drains a batch for it (`should_stop_drain`),
  because the coordinator writes a marker only into the partitions it knows. Batches carry
  the transactional bit and the Produce request the transactional id.
* **send_offsets_to_transaction** sends AddOffsetsToTxn (the group's `__consumer_offsets`
  partition joins the transaction), then TxnOffsetCommit to the *group* coordinator
  (FindCoordinator key type 0): offsets that become visible only at the commit marker.
* **commit_transaction** / **abort_transaction** send EndTxn once every batch of the
  transaction is complete (`next_request`); an abort first fails the batches not yet
  drained with `TransactionAbortedError`. A transaction that added nothing is ended
  locally. A batch that failed in the transaction makes it abortable; if it left a gap in
  a partition's sequence, the abort sends InitProducerId with the current id and epoch
  (v3+, KIP-360) instead of EndTxn: the coordinator aborts and bumps the epoch, and the
  sequences start again at 0.

An idempotent producer without a transactional id uses the same class: InitProducerId to
any broker, the epoch bumped locally after a gap, no transactions.

Kafka: `TransactionManager` (`initializeTransactions`, `beginTransaction`, `beginCommit`,
`beginAbort`, `sendOffsetsToTransaction`, `maybeAddPartition`, `isSendToPartitionAllowed`,
`nextRequest`, `throwIfPendingState`, `maybeFailWithError`).

Spec rules: TXN-40, TXN-41, TXN-42, TXN-45 (spec/transactions.md); IPROD-1
(spec/idempotent_producer.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.client.idempotence import (
    NO_PRODUCER,
    SequencedBatch,
)
from kafka_ref.client.transaction_state import (
    ProducerFencedError,
    State,
    TransactionAbortedError,
    TransactionalRequestResult,
    TransactionStateError,
    TxnRequest,
)
from kafka_ref.client.txn_requests import FENCED, TransactionRequests
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError


class TransactionManager(TransactionRequests):
    """Idempotence and transactions of one producer (Kafka's TransactionManager).

    The application thread calls the public methods; the Sender thread calls
    `next_request`, `handle_response` and the idempotent bookkeeping. One lock covers both."""

    def _check(self, operation: str, *, allow_abortable: bool = False) -> None:
        """Kafka's ensureTransactional, throwIfPendingState and maybeFailWithError."""
        if not self.is_transactional:
            raise TransactionStateError(
                f"Transactional method {operation} invoked on a non-transactional producer."
            )
        if self._pending is not None and not self._pending.is_done:
            raise TransactionStateError(
                f"Cannot attempt operation `{operation}` because the previous call to "
                f"`{self._pending.operation}` timed out and must be retried"
            )
        if self.state is State.FATAL_ERROR or (
            self.state is State.ABORTABLE_ERROR and not allow_abortable
        ):
            raise self.last_error or TransactionStateError(f"in state {self.state.name}")

    def _call(self, operation: str, start, *, allow_abortable: bool = False):
        """Run an application call once; a call repeated after its wait timed out gets the
        same result back (Kafka lets `commitTransaction` and friends be retried)."""
        with self._lock:
            pending = self._pending
            if pending is not None and pending.operation == operation and not pending.is_done:
                return pending
            self._check(operation, allow_abortable=allow_abortable)
            request = start()
            request.result.operation = operation
            self._pending = request.result
            self.enqueue(request)
            return request.result

    # -- the application's calls ------------------------------------------------------------

    def initialize_transactions(self) -> TransactionalRequestResult:
        def start() -> TxnRequest:
            self.transition_to(State.INITIALIZING)
            self.producer_id_and_epoch = NO_PRODUCER
            return self._init_producer_id(NO_PRODUCER)

        return self._call("init_transactions", start)

    def begin_transaction(self) -> None:
        with self._lock:
            self._check("begin_transaction")
            self.transition_to(State.IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        def start() -> TxnRequest:
            self.transition_to(State.COMMITTING_TRANSACTION)
            return self._end_txn(committed=True)

        return self._call("commit_transaction", start)

    def begin_abort(self) -> TransactionalRequestResult:
        def start() -> TxnRequest:
            self.transition_to(State.ABORTING_TRANSACTION)
            self.new_partitions.clear()  # nothing more is sent in this transaction
            if self.epoch_bump_required:  # a sequence gap: abort by bumping the epoch
                self.transition_to(State.INITIALIZING)
                return self._init_producer_id(self.producer_id_and_epoch)
            return self._end_txn(committed=False)

        return self._call("abort_transaction", start, allow_abortable=True)

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], group_id: str
    ) -> TransactionalRequestResult:
        def start() -> TxnRequest:
            if self.state is not State.IN_TRANSACTION:
                raise TransactionStateError(
                    "Cannot send offsets if a transaction is not in progress "
                    f"(currentState= {self.state.name})"
                )
            return self._add_offsets(group_id, dict(offsets))

        return self._call("send_offsets_to_transaction", start)

    def fail_if_not_ready_for_send(self) -> None:
        """`send()` of a transactional producer: only in a transaction without an error."""
        with self._lock:
            if self.state in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
                raise TransactionStateError(
                    "Cannot perform send because at least one previous transactional or "
                    f"idempotent request has failed with errors: {self.last_error}"
                ) from self.last_error
            if self.state is not State.IN_TRANSACTION:
                raise TransactionStateError(f"Cannot call send in state {self.state.name}")

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """A record for `tp` was appended: `tp` joins the transaction before its first batch
        leaves (TXN-41)."""
        with self._lock:
            if tp not in self.partitions_in_transaction and tp not in self.pending_partitions:
                self.new_partitions.add(tp)

    # -- the Sender's and the accumulator's questions ------------------------------------------

    def bump_idempotent_epoch_and_reset_id_if_needed(self) -> None:
        """An idempotent producer bumps locally, and asks for a producer id when it has none."""
        with self._lock:
            if self.is_transactional:
                return  # a transactional producer's epoch comes from its coordinator
            super().bump_idempotent_epoch_and_reset_id_if_needed()
            if not self.has_producer_id and self.state is not State.INITIALIZING:
                if self.state is not State.UNINITIALIZED:  # the id was reset at EPOCH_MAX
                    self.transition_to(State.UNINITIALIZED)
                self.transition_to(State.INITIALIZING)
                self.enqueue(self._init_producer_id(NO_PRODUCER))

    def next_request(self, has_incomplete_batches: bool, now: int):
        """The next request to send and its broker (None: any), an int of ms to wait before
        one may go, or None when there is none (Kafka's nextRequest, TXN-42)."""
        with self._lock:
            if self.new_partitions and self.state is State.IN_TRANSACTION:
                self.enqueue(self._add_partitions())
            while self._queue:
                request = self._queue[0]
                if request.waits_for_batches and has_incomplete_batches:
                    return None  # EndTxn only once every batch of the transaction is done
                if request.retry_at_ms > now:
                    return request.retry_at_ms - now
                self._queue.pop(0)
                if request.is_end_txn and not self.transaction_started:
                    self.complete_transaction()  # nothing was added: nothing to end
                    request.result.done()
                    continue
                node = None
                if request.coordinator is not None:
                    node = self.coordinators[request.coordinator]
                    if node is None:  # find it first; the request waits behind the lookup
                        self.enqueue(request)
                        request = self._find_coordinator(request.coordinator, request.key)
                self.in_flight = request
                return request, node
            return None

    @property
    def should_abort_undrained(self) -> bool:
        """An abort, or an error that forces one: batches not yet drained must not go."""
        return self.state is State.ABORTING_TRANSACTION or (
            self.is_transactional and self.state in (State.ABORTABLE_ERROR, State.INITIALIZING)
        )

    def should_stop_drain(self, batch: SequencedBatch) -> bool:
        """Kafka's isSendToPartitionAllowed, then the idempotent checks (TXN-41)."""
        if self.is_transactional and batch.tp not in self.partitions_in_transaction:
            return True
        return super().should_stop_drain(batch)

    def can_retry(self, batch: SequencedBatch, error: ErrorCode) -> bool:
        """A transactional producer never bumps its epoch locally: a real sequence gap fails
        the batch, the transaction becomes abortable, and the abort bumps (TXN-45)."""
        gap = error in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID)
        if self.is_transactional and gap and self.is_next_expected(batch):
            return False
        return super().can_retry(batch, error)

    def handle_failed_batch(self, batch: SequencedBatch, error: KafkaError) -> None:
        """A batch failed for good: fencing is fatal; in a transaction, the rest abortable."""
        with self._lock:
            super().handle_failed_batch(batch)
            if error.code in FENCED:
                fenced = ProducerFencedError(f"producing to {batch.tp}: {error}")
                self._fail(fenced, abortable=False)
            elif self.is_transactional and not isinstance(error, TransactionAbortedError):
                self._fail(error, abortable=True)

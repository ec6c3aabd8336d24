"""The requests of a transaction, and how the producer handles each answer.

A transactional producer talks to two coordinators: its **transaction coordinator** (the
leader of the transactional id's partition of `__transaction_state`) and its consumer
group's **group coordinator**. Each is found with FindCoordinator (key type 1 with the
transactional id, 0 with the group id) and remembered until an answer says it moved.
Six requests make a transaction (Kafka's `TxnRequestHandler` subclasses):

    FindCoordinator      any broker             where is the coordinator?
    InitProducerId       transaction coord.     the producer id, and a new epoch (fences)
    AddPartitionsToTxn   transaction coord.     these partitions get a marker at the end
    AddOffsetsToTxn      transaction coord.     so does the group's offsets partition
    TxnOffsetCommit      group coordinator      the group's offsets, pending until the marker
    EndTxn               transaction coord.     commit or abort: write the markers

Errors are handled the same way for all of them (`handle_error`): NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE forget the coordinator and retry after a new FindCoordinator;
COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS retry after `retry.backoff.ms`
(the coordinator is still loading, or still writing the markers of the previous
transaction; the first AddPartitionsToTxn of a transaction retries after at most 20 ms, as
Kafka's does, since markers take milliseconds); PRODUCER_FENCED and INVALID_PRODUCER_EPOCH
mean that a newer producer owns the transactional id: `ProducerFencedError`, fatal. A few
errors only make the transaction abortable (`_ABORTABLE`); every other error is fatal. A
lost connection or a timeout looks the coordinator up again and retries.

An idempotent producer sends only InitProducerId, with a null transactional id, to any
broker, and retries every retriable error.

Kafka: `TransactionManager.FindCoordinatorHandler`, `InitProducerIdHandler`,
`AddPartitionsToTxnHandler`, `AddOffsetsToTxnHandler`, `TxnOffsetCommitHandler`,
`EndTxnHandler`, `TxnRequestHandler.reenqueue`, `TransactionManager.transitionTo`.

Spec rules: TXN-43, TXN-44 (spec/transactions.md).
"""

from __future__ import annotations

import itertools
import logging
import threading

from kafka_ref.client.cluster_view import Node, error_code
from kafka_ref.client.idempotence import (
    INT32_MAX,
    NO_PRODUCER,
    IdempotentProducerState,
    ProducerIdAndEpoch,
)
from kafka_ref.client.transaction_state import (
    ProducerFencedError,
    State,
    TransactionalRequestResult,
    TransactionStateError,
    TxnRequest,
    is_transition_valid,
)
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

log = logging.getLogger("kafka_ref.client")

GROUP, TRANSACTION = 0, 1  # FindCoordinator key types
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20  # Kafka's TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS
_MOVED = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
_BUSY = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS)
FENCED = (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)
# Errors a transaction survives by aborting (Kafka: abortableError / abortableErrorIfPossible).
_ABORTABLE = frozenset(
    {
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


class TransactionRequests(IdempotentProducerState):
    """A producer's transactional state, its request queue and the six requests' handlers;
    TransactionManager (transaction_manager.py) adds the application's calls on top."""

    def __init__(
        self,
        *,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        super().__init__(retry_backoff_ms=retry_backoff_ms)
        if transactional_id == "":
            raise ValueError("transactional_id must not be empty (None: not transactional)")
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = State.UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.coordinators: dict[int, Node | None] = {GROUP: None, TRANSACTION: None}
        self.partitions_in_transaction: set[TopicPartition] = set()
        self.pending_partitions: set[TopicPartition] = set()  # AddPartitionsToTxn in flight
        self.new_partitions: set[TopicPartition] = set()  # sent to, not yet being added
        self.transaction_started = False  # something was added: EndTxn is needed
        self.in_flight: TxnRequest | None = None
        self._queue: list[TxnRequest] = []
        self._arrival = itertools.count()
        self._pending: TransactionalRequestResult | None = None  # the last call's result
        self._lock = threading.RLock()

    @property
    def is_transactional(self) -> bool:
        return self.transactional_id is not None

    # -- the state machine ---------------------------------------------------------------

    def transition_to(self, target: State, error: KafkaError | None = None) -> None:
        """Move to `target` if the state machine allows it from here (TXN-40)."""
        if not is_transition_valid(self.state, target):
            raise TransactionStateError(
                f"TransactionalId {self.transactional_id}: Invalid transition attempted "
                f"from state {self.state.name} to state {target.name}"
            )
        self.last_error = error if target in (State.ABORTABLE_ERROR, State.FATAL_ERROR) else None
        if target is State.FATAL_ERROR:
            self.fatal_error = error
        log.debug(
            "transactional id %s: %s -> %s", self.transactional_id, self.state.name, target.name
        )
        self.state = target

    def _fail(self, error: KafkaError, *, abortable: bool) -> None:
        """An error of a request or a batch: abortable when a transaction can absorb it."""
        if abortable and self.state is State.ABORTING_TRANSACTION:
            self.last_error = error  # the abort goes on regardless
            return
        fatal = not abortable or not is_transition_valid(self.state, State.ABORTABLE_ERROR)
        self.transition_to(State.FATAL_ERROR if fatal else State.ABORTABLE_ERROR, error)
        if fatal:
            for request in self._queue:  # nothing queued can succeed any more
                request.result.done(error)
            self._queue.clear()

    # -- the request queue ----------------------------------------------------------------

    def enqueue(self, request: TxnRequest) -> None:
        with self._lock:
            request.arrival = next(self._arrival)
            self._queue.append(request)
            self._queue.sort(key=lambda r: (r.priority, r.arrival))

    def retry(
        self, request: TxnRequest, now: int, *, lookup: bool = False, backoff_ms: int | None = None
    ) -> None:
        """Queue `request` again after the backoff; `lookup`: its coordinator moved."""
        if lookup and request.coordinator is not None:
            self.coordinators[request.coordinator] = None
        request.retry_at_ms = now + (self.retry_backoff_ms if backoff_ms is None else backoff_ms)
        self.enqueue(request)

    def handle_response(self, request: TxnRequest, sent, now: int) -> None:
        """The Sender's callback: a lost connection or a timeout finds the broker again."""
        with self._lock:
            self.in_flight = None
            if self.state is State.FATAL_ERROR:  # fenced meanwhile: the caller gets that
                request.result.done(self.last_error)
            elif sent.error is not None:
                self.retry(request, now, lookup=True)
            else:
                request.handle(sent.response, now)

    def handle_error(self, request: TxnRequest, code: ErrorCode, now: int) -> None:
        """What every coordinator request does with an error (TXN-43, TXN-44)."""
        what = request.api_key.name
        if code in _MOVED:
            self.retry(request, now, lookup=True)
        elif code in _BUSY or (not self.is_transactional and code.retriable):
            self.retry(request, now)
        elif code in FENCED:
            error: KafkaError = ProducerFencedError(
                "There is a newer producer with the same transactionalId which fences the "
                f"current one ({what} answered {code.name})"
            )
            self._fail(error, abortable=False)
            request.result.done(error)
        else:
            error = KafkaError(f"{what} failed", code=code)
            abortable = code in _ABORTABLE and request.api_key != ApiKey.INIT_PRODUCER_ID
            self._fail(error, abortable=abortable)
            request.result.done(error)

    def complete_transaction(self) -> None:
        """EndTxn succeeded (or was not needed): READY, with nothing in the transaction."""
        self.transition_to(State.READY)
        self.transaction_started = False
        self.new_partitions.clear()
        self.pending_partitions.clear()
        self.partitions_in_transaction.clear()

    # -- the requests and their handlers ------------------------------------------------------

    def _find_coordinator(self, key_type: int, key: str) -> TxnRequest:
        def handle(response, now: int) -> None:
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                return self.handle_error(request, code, now)
            # Its own connection id, as the consumer's group coordinator (Kafka: MAX - id).
            node = Node(2**31 - 1 - response.node_id, response.host, response.port)
            self.coordinators[key_type] = node
            log.info(
                "%s coordinator for %s is node %d",
                "transaction" if key_type else "group",
                key,
                response.node_id,
            )

        body = FindCoordinatorRequest(key=key, key_type=key_type)
        request = TxnRequest(ApiKey.FIND_COORDINATOR, body, handle)
        return request

    def _init_producer_id(self, current: ProducerIdAndEpoch) -> TxnRequest:
        """InitProducerId: with the transactional id to its coordinator, or null to any broker.

        `current` is the id and epoch to bump after a sequence gap (v3+), else NO_PRODUCER."""
        bump = current != NO_PRODUCER

        def handle(response, now: int) -> None:
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                return self.handle_error(request, code, now)
            producer = ProducerIdAndEpoch(response.producer_id, response.producer_epoch)
            if bump:  # every partition starts again at sequence 0 under the new epoch
                self.partitions.clear()
                self.epoch_bump_required = False
            self.set_producer_id_and_epoch(producer)
            if self.is_transactional:
                self.complete_transaction()
            else:
                self.transition_to(State.READY)
            request.result.done()

        body = InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self.transaction_timeout_ms
            if self.is_transactional
            else INT32_MAX,
            producer_id=current.producer_id,
            producer_epoch=current.epoch,
        )
        request = TxnRequest(ApiKey.INIT_PRODUCER_ID, body, handle, *self._coordinator_of())
        request.waits_for_batches = bump  # the batches in flight belong to the old epoch
        return request

    def _coordinator_of(self) -> tuple[int | None, str]:
        return (TRANSACTION, self.transactional_id or "") if self.is_transactional else (None, "")

    def _add_partitions(self) -> TxnRequest:
        adding = sorted(self.new_partitions)
        self.pending_partitions |= self.new_partitions
        self.new_partitions.clear()
        by_topic: dict[str, list[int]] = {}
        for tp in adding:
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def handle(response, now: int) -> None:
            errors = {
                TopicPartition(topic.name, part.partition_index): error_code(
                    part.partition_error_code
                )
                for topic in response.results_by_topic_v3_and_below
                for part in topic.results_by_partition
            }
            code = next((c for c in errors.values() if c != ErrorCode.NO_ERROR), None)
            if code is None:
                self.pending_partitions.difference_update(adding)
                self.partitions_in_transaction.update(adding)
                self.transaction_started = True
                log.debug("added %s to the transaction", adding)
                return request.result.done()
            if code == ErrorCode.CONCURRENT_TRANSACTIONS and not self.transaction_started:
                # the previous transaction's markers are still being written: they take
                # milliseconds, so the first add of a transaction asks again sooner (Kafka)
                backoff = min(self.retry_backoff_ms, ADD_PARTITIONS_RETRY_BACKOFF_MS)
                return self.retry(request, now, backoff_ms=backoff)
            if code in _MOVED or code in _BUSY:
                return self.retry(request, now, lookup=code in _MOVED)
            self.pending_partitions.difference_update(adding)
            self.handle_error(request, code, now)

        pid = self.producer_id_and_epoch
        body = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=pid.producer_id,
            v3_and_below_producer_epoch=pid.epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
        )
        request = TxnRequest(ApiKey.ADD_PARTITIONS_TO_TXN, body, handle, *self._coordinator_of())
        return request

    def _add_offsets(
        self, group_id: str, offsets: dict[TopicPartition, int | OffsetAndMetadata]
    ) -> TxnRequest:
        def handle(response, now: int) -> None:
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                return self.handle_error(request, code, now)
            self.transaction_started = True  # the group's offsets partition is in it now
            commit = self._txn_offset_commit(group_id, offsets)
            commit.result = request.result  # the caller waits for the commit itself
            self.enqueue(commit)

        pid = self.producer_id_and_epoch
        body = AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            group_id=group_id,
        )
        request = TxnRequest(ApiKey.ADD_OFFSETS_TO_TXN, body, handle, *self._coordinator_of())
        return request

    def _txn_offset_commit(
        self, group_id: str, offsets: dict[TopicPartition, int | OffsetAndMetadata]
    ) -> TxnRequest:
        def handle(response, now: int) -> None:
            errors = {
                TopicPartition(topic.name, part.partition_index): error_code(part.error_code)
                for topic in response.topics
                for part in topic.partitions
            }
            failed = {tp: c for tp, c in errors.items() if c != ErrorCode.NO_ERROR}
            if not failed:
                return request.result.done()
            code = next(iter(failed.values()))
            if code in _MOVED or code in _BUSY or code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                retry = self._txn_offset_commit(group_id, {tp: offsets[tp] for tp in failed})
                retry.result = request.result
                return self.retry(retry, now, lookup=code in _MOVED)
            self.handle_error(request, code, now)

        by_topic: dict[str, list] = {}
        for tp, value in sorted(offsets.items()):
            committed = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
            by_topic.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=committed.offset,
                    committed_leader_epoch=committed.leader_epoch,
                    committed_metadata=committed.metadata,
                )
            )
        pid = self.producer_id_and_epoch
        body = TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=group_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
        )
        request = TxnRequest(ApiKey.TXN_OFFSET_COMMIT, body, handle, GROUP, group_id)
        return request

    def _end_txn(self, *, committed: bool) -> TxnRequest:
        if self.new_partitions:  # sent to, never added: add them before the end
            self.enqueue(self._add_partitions())

        def handle(response, now: int) -> None:
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                return self.handle_error(request, code, now)
            self.complete_transaction()
            request.result.done()

        pid = self.producer_id_and_epoch
        body = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            committed=committed,
        )
        request = TxnRequest(ApiKey.END_TXN, body, handle, *self._coordinator_of())
        request.waits_for_batches = True
        return request

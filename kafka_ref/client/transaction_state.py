"""The transactional producer's state machine, and the requests it waits on.

A transactional producer is always in one of eight states (Kafka's
`TransactionManager.State`). Each call of the application moves it along one edge; a call
the state does not allow raises `TransactionStateError` and changes nothing:

    UNINITIALIZED --init_transactions--> INITIALIZING --InitProducerId ok--> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING_TRANSACTION --EndTxn ok--> READY
    IN_TRANSACTION, ABORTABLE_ERROR --abort_transaction--> ABORTING_TRANSACTION --> READY
    a failed send or request inside a transaction --> ABORTABLE_ERROR (abort is allowed)
    fencing, authorization, an unexpected error --> FATAL_ERROR (only close is allowed)

`VALID_PREVIOUS` is Kafka's `State.isTransitionValid` as a table: for each state, the
states it may be entered from. FATAL_ERROR may be entered from anywhere and left to none.

Each call that needs the coordinator queues a `TxnRequest` (Kafka's `TxnRequestHandler`)
and returns a `TransactionalRequestResult` that the application thread waits on while the
Sender thread sends the request and handles its answer. Requests leave in priority order,
then in arrival order: FindCoordinator before InitProducerId before AddPartitionsToTxn,
AddOffsetsToTxn and TxnOffsetCommit, before EndTxn.

Kafka: `TransactionManager.State`, `TransactionManager.TxnRequestHandler`,
`TransactionalRequestResult`, `ProducerFencedException`.

Spec rules: TXN-40 (spec/transactions.md).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey


class State(enum.Enum):
    UNINITIALIZED = 0
    INITIALIZING = 1
    READY = 2
    IN_TRANSACTION = 3
    COMMITTING_TRANSACTION = 4
    ABORTING_TRANSACTION = 5
    ABORTABLE_ERROR = 6
    FATAL_ERROR = 7


VALID_PREVIOUS: dict[State, frozenset[State]] = {
    State.UNINITIALIZED: frozenset({State.READY, State.ABORTABLE_ERROR}),
    State.INITIALIZING: frozenset({State.UNINITIALIZED, State.ABORTING_TRANSACTION}),
    State.READY: frozenset(
        {State.INITIALIZING, State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION}
    ),
    State.IN_TRANSACTION: frozenset({State.READY}),
    State.COMMITTING_TRANSACTION: frozenset({State.IN_TRANSACTION}),
    State.ABORTING_TRANSACTION: frozenset({State.IN_TRANSACTION, State.ABORTABLE_ERROR}),
    State.ABORTABLE_ERROR: frozenset(
        {
            State.IN_TRANSACTION,
            State.COMMITTING_TRANSACTION,
            State.ABORTABLE_ERROR,
            State.INITIALIZING,
        }
    ),
    State.FATAL_ERROR: frozenset(State),
}


def is_transition_valid(source: State, target: State) -> bool:
    """May the producer move from `source` to `target`? (TXN-40)"""
    return source in VALID_PREVIOUS[target]


class TransactionStateError(KafkaError, RuntimeError):
    """A transactional call the producer's state does not allow (Kafka: IllegalStateException)."""

    code = ErrorCode.INVALID_TXN_STATE


class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional id exists; this one can only close."""

    code = ErrorCode.PRODUCER_FENCED


class TransactionAbortedError(KafkaError):
    """The record's transaction was aborted before the record was sent."""


class TransactionalRequestResult:
    """What a transactional call waits for (Kafka's TransactionalRequestResult)."""

    def __init__(self, operation: str = "") -> None:
        self.operation = operation
        self.error: KafkaError | None = None
        self._done = threading.Event()

    @property
    def is_done(self) -> bool:
        return self._done.is_set()

    def done(self, error: KafkaError | None = None) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    def wait(self, timeout_s: float | None) -> None:
        """Block until done; raise its error, or a timeout (the call may then be repeated)."""
        if not self._done.wait(timeout_s):
            raise KafkaError(
                f"Timeout expired after {timeout_s} s while awaiting {self.operation}",
                code=ErrorCode.REQUEST_TIMED_OUT,
            )
        if self.error is not None:
            raise self.error


# Kafka's TxnRequestHandler priorities: lower goes first.
PRIORITY = {
    ApiKey.FIND_COORDINATOR: 0,
    ApiKey.INIT_PRODUCER_ID: 1,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.TXN_OFFSET_COMMIT: 2,
    ApiKey.END_TXN: 3,
}


@dataclass(eq=False)
class TxnRequest:
    """One queued transactional request: its body, where it goes, what handles the answer.

    `coordinator` is the FindCoordinator key type of the broker it goes to (1 the
    transaction coordinator, 0 the group coordinator) and `key` the id to look up; None
    sends it to any broker."""

    api_key: ApiKey
    body: Any
    handle: Callable[[Any, int], None]  # (response, now ms)
    coordinator: int | None = None
    key: str = ""
    result: TransactionalRequestResult = field(default_factory=TransactionalRequestResult)
    retry_at_ms: int = 0
    arrival: int = 0
    waits_for_batches: bool = False  # EndTxn: sent only once every batch is complete

    @property
    def priority(self) -> int:
        return PRIORITY[self.api_key]

    @property
    def is_end_txn(self) -> bool:
        return self.api_key == ApiKey.END_TXN

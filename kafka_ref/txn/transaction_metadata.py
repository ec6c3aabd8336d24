"""A transaction's state and the transitions between states (Kafka: `TransactionMetadata`,
`TransactionState`).

The transaction coordinator keeps, per transactional id, one `TransactionMetadata`: the
producer id and epoch it handed out, the transaction timeout, the partitions of the
transaction in progress and its state. The states, with Kafka's ids (they are written into
`__transaction_state`, transaction_log.py):

    0 Empty              no transaction in progress (after InitProducerId)
    1 Ongoing            partitions added; the producer is writing
    2 PrepareCommit      the decision "commit" is durable; markers are being written
    3 PrepareAbort       the decision "abort" is durable; markers are being written
    4 CompleteCommit     every marker of the commit is written
    5 CompleteAbort      every marker of the abort is written
    6 Dead               the transactional id expired and is being removed
    7 PrepareEpochFence  the epoch was bumped to fence the producer; an abort follows

```mermaid
stateDiagram-v2
    [*] --> Empty: InitProducerId
    Empty --> Ongoing: AddPartitionsToTxn / AddOffsetsToTxn
    Ongoing --> Ongoing: more partitions
    Ongoing --> PrepareCommit: EndTxn(commit)
    Ongoing --> PrepareAbort: EndTxn(abort), timeout, InitProducerId (fence)
    PrepareCommit --> CompleteCommit: all markers written
    PrepareAbort --> CompleteAbort: all markers written
    CompleteCommit --> Ongoing
    CompleteAbort --> Ongoing
    CompleteCommit --> Empty: InitProducerId
    CompleteAbort --> Empty: InitProducerId
    Empty --> PrepareAbort: EndTxn v5 (abort), transactions v2
    CompleteCommit --> PrepareAbort: EndTxn v5 (abort), transactions v2
    CompleteAbort --> PrepareAbort: EndTxn v5 (abort), transactions v2
```

Every transition happens in two steps, as in Kafka. `prepare_*` checks that the move is
legal (TXN-11), marks the metadata with a *pending state* and returns the target metadata;
the coordinator writes the target to the log; only when the write is durable does
`complete_transition` make it the current state (or `abort_transition` forget it after a
failed write). While a state is pending, every other request for the id is answered
CONCURRENT_TRANSACTIONS, so the log and the memory never disagree about what was decided.

Rules: TXN-11.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum

from kafka_ref.common import TopicPartition
from kafka_ref.txn.transaction_version import TV_0, supports_epoch_bump

MAX_PRODUCER_EPOCH = 32767  # Short.MaxValue
NO_PRODUCER_EPOCH = -1
NO_PRODUCER_ID = -1


class TransactionState(IntEnum):
    """Kafka's `TransactionState`, with the ids written to `__transaction_state`."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use ("PrepareCommit")."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        return next((s for s in cls if s.kafka_name.lower() == name.lower()), None)


S = TransactionState
COMPLETE = (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)

# Kafka: TransactionState.validPreviousStates
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, *COMPLETE}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, *COMPLETE}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty and Complete*: transactions v2 may abort with no transaction open (TXN-92)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, *COMPLETE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, *COMPLETE}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class IllegalTransitionError(Exception):
    """A transition Kafka's state machine does not allow (a bug in the caller)."""


@dataclass
class TransactionMetadata:
    """One transactional id's state (Kafka: `TransactionMetadata`)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    pending_state: TransactionState | None = None
    # Transactions v2 (KIP-890 part 2): the producer id before a rotation on epoch overflow,
    # the one the rotation moves to once the markers are written, and the protocol the
    # client speaks (transaction_version.py), so that a reloaded coordinator carries on.
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = TV_0

    @property
    def epoch_exhausted(self) -> bool:
        """Kafka: `isProducerEpochExhausted`: one bump left for the fence."""
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1

    def _target(self, state: TransactionState, now: int, **changes) -> TransactionMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.pending_state.kafka_name} is still pending"
            )
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name}"
            )
        self.pending_state = state
        changes.setdefault("partitions", set(self.partitions))
        return dataclasses.replace(
            self, state=state, txn_last_update_timestamp=now, pending_state=None, **changes
        )

    # -- the transitions (Kafka: prepareIncrementProducerEpoch, prepareAddPartitions, ...)
    def prepare_increment_producer_epoch(
        self,
        timeout_ms: int,
        now: int,
        new_producer_id: int | None = None,
        expected_epoch: int | None = None,
    ) -> TransactionMetadata | None:
        """InitProducerId: epoch + 1, or a fresh producer id at epoch 0 once exhausted.

        With KIP-360 the producer names the epoch it has (`expected_epoch`): the current one
        is bumped; the previous one means a retry of a bump already made, answered with the
        current epoch unchanged; any other is fenced (None). (Kafka:
        `prepareIncrementProducerEpoch`.)"""
        if new_producer_id is not None:
            pid, epoch, last = new_producer_id, 0, NO_PRODUCER_EPOCH
        elif expected_epoch is None:
            pid, epoch, last = self.producer_id, self.producer_epoch + 1, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            pid, epoch, last = self.producer_id, self.producer_epoch + 1, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            pid, epoch, last = self.producer_id, self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._target(
            S.EMPTY,
            now,
            producer_id=pid,
            producer_epoch=epoch,
            last_producer_epoch=last,
            txn_timeout_ms=timeout_ms,
            partitions=set(),
            txn_start_timestamp=-1,
        )

    def prepare_add_partitions(
        self, partitions: set[TopicPartition], now: int, transaction_version: int = TV_0
    ) -> TransactionMetadata:
        start = now if self.state in (S.EMPTY, *COMPLETE) else self.txn_start_timestamp
        if self.state in COMPLETE:
            base: set[TopicPartition] = set()
        else:
            base = set(self.partitions)
        return self._target(
            S.ONGOING,
            now,
            partitions=base | partitions,
            txn_start_timestamp=start,
            client_transaction_version=transaction_version,
        )

    def prepare_abort_or_commit(
        self,
        state: TransactionState,
        now: int,
        transaction_version: int = TV_0,
        next_producer_id: int = NO_PRODUCER_ID,
        no_partition_added: bool = False,
    ) -> TransactionMetadata:
        """The decision. Under transactions v2 the epoch goes up by one, so that the markers
        and the next transaction carry a newer epoch than anything the producer wrote in this
        one (TXN-92); at the last epoch `next_producer_id` is the id the producer moves to
        once the markers are written, at epoch 0 (TXN-94). An abort already at Short.MaxValue
        (a fence at the end of the range) keeps its epoch. (Kafka: `prepareAbortOrCommit`.)"""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if supports_epoch_bump(transaction_version):
            if not (epoch == MAX_PRODUCER_EPOCH and state == S.PREPARE_ABORT):
                epoch += 1
            last = self.producer_epoch
        return self._target(
            state,
            now,
            producer_epoch=epoch,
            last_producer_epoch=last,
            next_producer_id=next_producer_id,
            client_transaction_version=transaction_version,
            txn_start_timestamp=now if no_partition_added else self.txn_start_timestamp,
        )

    def prepare_complete(self, now: int) -> TransactionMetadata:
        """Every marker is written. A v2 transaction that used the last epoch moves to its
        next producer id at epoch 0 (Kafka: `prepareComplete`)."""
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        pid, epoch, previous = self.producer_id, self.producer_epoch, self.previous_producer_id
        rotate = self.next_producer_id != NO_PRODUCER_ID
        if rotate and supports_epoch_bump(self.client_transaction_version):
            pid, epoch, previous = self.next_producer_id, 0, self.producer_id
        return self._target(
            state,
            now,
            partitions=set(),
            producer_id=pid,
            producer_epoch=epoch,
            previous_producer_id=previous,
            next_producer_id=NO_PRODUCER_ID,
        )

    def prepare_dead(self, now: int) -> TransactionMetadata:
        return self._target(S.DEAD, now, partitions=set())

    def fence_producer_epoch(self) -> None:
        """Bump the epoch in place so that the producer is fenced; an abort follows (Kafka:
        `prepareFenceProducerEpoch`; the fence itself is never written to the log)."""
        if self.state != S.ONGOING or self.pending_state is not None:
            raise IllegalTransitionError(f"{self.transactional_id}: cannot fence now")
        if self.producer_epoch < MAX_PRODUCER_EPOCH:
            self.producer_epoch += 1
        self.state = S.PREPARE_EPOCH_FENCE

    # -- completing the two steps
    def complete_transition(self, target: TransactionMetadata) -> None:
        """The target is durable: it becomes the state (Kafka: `completeTransitionTo`)."""
        if self.pending_state != target.state:
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing {target.state.kafka_name}, pending is "
                f"{self.pending_state.kafka_name if self.pending_state is not None else None}"
            )
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(target, f.name))
        self.pending_state = None

    def abort_transition(self) -> None:
        """The write failed: nothing changes but the pending state goes."""
        self.pending_state = None

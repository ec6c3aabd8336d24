"""What the cleaner knows of transactions as it walks a log (Kafka `CleanedTransactionMetadata`).

Compaction by key (cleaner.py) is not enough for a log that holds transactions (KIP-98):

* the records of an **aborted** transaction never count, so the cleaner removes them
  whole, batch by batch, and never lets them into the offset map (an aborted record must
  not supersede a committed one of the same key) (COMPACT-23);
* a **marker** (control batch, kafka_ref/record/control.py) must stay while any batch of
  its transaction is left in the log: without its ABORT marker a read_committed consumer
  would not know where the aborted records end. Once the transaction has no data left,
  the marker is kept `delete.retention.ms` longer, like a tombstone (KIP-534: the cleaner
  stamps the batch's delete horizon), so a consumer that read the data also reads the
  marker; a round at or after the horizon removes it (COMPACT-24).

The cleaner walks the batches in offset order. Which transactions were aborted it learns
from the `.txnindex` files (txn_index.py): `add_aborted_transactions_of` the range being
cleaned gives (producer id, first offset, last offset) of each (isolation.py's search, the
one read_committed fetches use). Walking, it
keeps:

    pending        aborted transactions not yet reached, ordered by first offset
    ongoing_abort  producer id -> the aborted transaction it is inside (from the batch at
                   or after the transaction's first offset up to its ABORT marker), and
                   whether a batch of it was seen in this walk
    ongoing_commit producer ids with a transactional batch seen whose marker is not yet
                   read (the transaction committed, or the cleaner could not walk past the LSO)

A data batch is *discardable* when it is transactional and its producer is inside an
aborted transaction. A marker is *discardable* when the walk saw no batch of its
transaction: for an ABORT, every batch was removed by an earlier round; for a COMMIT, every
batch was compacted away. One walk covers a whole round, across its groups of segments
(Kafka shares one `CleanedTransactionMetadata` per `doClean`), so a transaction whose
batches are in one group and whose marker is in the next is still seen whole. An ABORT
marker that is kept because its data was seen (and is being removed now) keeps its
`.txnindex` entry in the cleaned segment: `cleaned_index`, the index of the segment being
written (`write_into`), receives it. A marker found discardable next round gets no entry: no
data is left for a consumer to drop. A plain log, whose segments have no `.txnindex`, has
no aborted transactions to find.

Only decided transactions are touched: the cleaner never walks past the last stable
offset (cleaner_manager.py, COMPACT-25), so every transaction it meets has its marker in
the log (or is aborted and indexed).

Rules: COMPACT-23, COMPACT-24.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafka_ref.errors import InvalidRecordError
from kafka_ref.log.isolation import collect_aborted_transactions
from kafka_ref.log.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex
from kafka_ref.record.batch import RecordBatch
from kafka_ref.record.control import ControlRecordType, read_marker

if TYPE_CHECKING:
    from kafka_ref.log.log import Log
    from kafka_ref.log.segment import Segment


class _AbortedTransaction:
    """An aborted transaction the walk is inside (Kafka: `AbortedTransactionMetadata`)."""

    __slots__ = ("batch_seen", "txn")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.batch_seen = False


class CleanedTransactionMetadata:
    """The walk's state; one per pass (a map build, or a round's rewrite of its groups)."""

    def __init__(self, cleaned_index: TransactionIndex | None = None) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._ongoing_abort: dict[int, _AbortedTransaction] = {}
        self._ongoing_commit: set[int] = set()
        self.cleaned_index = cleaned_index

    def add_aborted_transactions(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            heapq.heappush(self._pending, (txn.first_offset, txn.last_offset, txn))

    def add_aborted_transactions_of(self, log: Log, start: int, upper: int) -> None:
        """The aborted transactions of `log` that overlap [start, upper) (TXN-8's search)."""
        self.add_aborted_transactions(collect_aborted_transactions(log, start, upper))

    def write_into(self, segment: Segment) -> None:
        """The ABORT markers kept from now on are in `segment`: its `.txnindex` gets their
        entries (a plain log's segment has none, and no aborted transaction either)."""
        self.cleaned_index = segment.plugin_indexes.get(TXN_INDEX_SUFFIX)

    def _enter_aborted_up_to(self, offset: int) -> None:
        """Aborted transactions that began at or before `offset` are now being walked."""
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._ongoing_abort.setdefault(txn.producer_id, _AbortedTransaction(txn))

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """A data batch is walked over: True if it belongs to an aborted transaction."""
        header = batch.header
        self._enter_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._ongoing_abort.get(header.producer_id)
        if aborted is not None:
            aborted.batch_seen = True
            return True
        self._ongoing_commit.add(header.producer_id)
        return False

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """A marker is walked over: True if no batch of its transaction was seen."""
        header = batch.header
        self._enter_aborted_up_to(header.last_offset)
        if header.records_count == 0:
            return True  # an emptied control batch: nothing left to mean
        pid = header.producer_id
        try:
            kind = read_marker(batch.buffer).control_type
        except InvalidRecordError:
            return False  # a control batch of a kind the cleaner does not know: kept
        if kind == ControlRecordType.ABORT:
            aborted = self._ongoing_abort.pop(pid, None)
            if aborted is not None and aborted.batch_seen:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(aborted.txn)
                return False
            return True
        if pid in self._ongoing_commit:
            self._ongoing_commit.discard(pid)
            return False
        return True

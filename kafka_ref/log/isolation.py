"""Read isolation: what a `read_committed` consumer may see of a log with transactions.

A transactional producer writes its records into the log as it goes, before it knows
whether the transaction will commit; the transaction coordinator then writes a marker,
COMMIT or ABORT, into every partition the transaction touched (KIP-98). A consumer reads
at one of two isolation levels (`isolation.level`):

* `read_uncommitted` reads up to the high watermark: every record, aborted or not, and
  records of transactions still open;
* `read_committed` sees only committed records, which takes two rules, one on each side
  of a Fetch.

**The broker's bound: the last stable offset** (LSO, TXN-4; Kafka
`UnifiedLog.lastStableOffset`). Below the LSO every transaction is decided. It is the
first offset of the oldest transaction that is not finished yet, capped at the high
watermark: a transaction still open, or one whose marker is written but not yet below the
high watermark (a new leader might not have that marker, and the transaction would be
open again there). With no such transaction the LSO is the high watermark. A
read_committed Fetch reads below the LSO only, so one long transaction holds back every
read_committed consumer of the partition, transactional or not: this is why
`transaction.timeout.ms` exists (TXN-15).

**The consumer's filter: aborted transactions** (TXN-8, CLIENT-14; Kafka
`CompletedFetch.nextFetchedBatch`). Below the LSO the log still holds the batches of
aborted transactions. The broker does not rewrite them away; it answers a read_committed
Fetch with the list of aborted transactions (producer id, first offset) that overlap the
batches it returns, from its `.txnindex` files (txn_index.py). The consumer walks the
batches in offset order: a producer's transactional batches are aborted from the first
offset of one of its listed transactions until that producer's ABORT marker, and skipped.
Markers themselves (control batches) are never returned. The consumer needs no state
beyond the one answer: the list names exactly the transactions that answer overlaps.

Both rules are pure functions, seams (kafka_ref/seams.py) of lab 07 (`last_stable_offset`,
used by the broker's reads; `read_committed_batches`, used by our consumer's fetcher).

**Where they plug in.** The log knows nothing of transactions (log.py), and a partition
reads below its HW (replication/reads.py). A broker's partitions are given `ReadCommitted`
as their `Isolation`: it takes the LSO's inputs from the log's producer state
(producer_state.py: the open transactions, and the finished ones whose marker was not yet
below the HW when it last moved) and finds the aborted transactions of a read in the
`.txnindex` files (txn_index.py), from the segment holding the read's start on: each entry
records the LSO its transaction left, so the search stops at the first entry whose LSO
reaches the read's end (Kafka: `UnifiedLog.collectAbortedTransactions`, TXN-8). Neither
answer changes anything: reading the LSO (or the HW) leaves the log and its producer state
as they were (TXN-25); the producer state forgets finished transactions only when the
partition says the HW moved.

Rules: TXN-4, TXN-8, TXN-25, CLIENT-14.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.log.txn_index import TXN_INDEX_SUFFIX, AbortedTxn
from kafka_ref.seams import seam

if TYPE_CHECKING:
    from kafka_ref.log.log import Log


@seam
def last_stable_offset(
    open_transactions: Iterable[int],
    finished_transactions: Iterable[tuple[int, int]],
    high_watermark: int,
    log_start_offset: int,
) -> int:
    """The LSO (TXN-4): the first offset of the oldest unfinished transaction, at most the
    high watermark and at least the log start offset; the high watermark when none is.

    `open_transactions`: the first offset of each open transaction. `finished_transactions`:
    (first offset, marker offset) of transactions whose marker is written; one is still
    unfinished while its marker is not below the high watermark."""
    unstable = [*open_transactions]
    unstable += [first for first, marker in finished_transactions if marker >= high_watermark]
    if not unstable:
        return high_watermark
    return min(max(min(unstable), log_start_offset), high_watermark)


class FetchedBatch(NamedTuple):
    """One batch of a Fetch answer, as read_committed sees it."""

    base_offset: int
    last_offset: int
    producer_id: int  # -1: not idempotent or transactional
    is_transactional: bool
    is_control: bool  # a transaction marker (its records are control records)
    is_abort_marker: bool  # a control batch whose marker is ABORT
    position: int  # where the batch starts in the answer's bytes


@seam
def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    """The batches whose records a read_committed consumer returns (CLIENT-14), in order.

    `batches`: the answer's batches in offset order. `aborted`: the answer's aborted
    transactions, (producer id, first offset). A transactional batch of producer P is
    aborted when a listed transaction of P starts at or before its last offset and P's
    ABORT marker has not come since; control batches are never returned. Reads `batches`
    one at a time (a fetch answer is decoded lazily)."""
    pending = [(first, producer) for producer, first in aborted]
    heapq.heapify(pending)
    aborting: set[int] = set()
    for batch in batches:
        if batch.producer_id >= 0:
            # the transactions that began at or before this batch are now known aborted
            while pending and pending[0][0] <= batch.last_offset:
                aborting.add(heapq.heappop(pending)[1])
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch


class ReadCommitted:
    """read_committed's view of a partition whose log keeps producer state (a broker's):
    the `Isolation` of replication/reads.py. Reads only (TXN-25)."""

    def last_stable_offset(self, log: Log, high_watermark: int) -> int:
        """The LSO of `log` under `high_watermark` (TXN-4; Kafka `UnifiedLog.lastStableOffset`)."""
        state = log.producer_state
        assert isinstance(state, ProducerStateManager), "read_committed needs producer state"
        lso = last_stable_offset(
            state.ongoing_transactions.values(),
            state.unreplicated_transactions,
            high_watermark,
            log.log_start_offset,
        )
        assert lso <= high_watermark, f"TXN-90: LSO {lso} above the HW {high_watermark}"
        return lso

    def aborted_transactions(self, log: Log, start: int, upper: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start, upper) (TXN-8)."""
        return collect_aborted_transactions(log, start, upper)


READ_COMMITTED = ReadCommitted()


def collect_aborted_transactions(log: Log, start: int, upper: int) -> list[AbortedTxn]:
    """The aborted transactions overlapping [start, upper), from the `.txnindex` of the
    segment holding `start` onward (Kafka: `collectAbortedTransactions`, TXN-8). A segment
    without one (a plain log's) has none."""
    found: list[AbortedTxn] = []
    for segment in log.segments_from(start):
        index = segment.plugin_indexes.get(TXN_INDEX_SUFFIX)
        if index is None:
            continue
        part, complete = index.collect_aborted(start, upper)
        found.extend(part)
        if complete:
            break
    return found

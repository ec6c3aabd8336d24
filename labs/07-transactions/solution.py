"""Lab 07, transactions: your last stable offset and your read_committed filter.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 07

Each function takes the place of kafka-ref's own of the same name in
kafka_ref/log/isolation.py whenever KAFKA_REF_SOLUTION names this file (the grader sets it):
every partition log, in a test and in a real broker, bounds read_committed fetches (and
ListOffsets under read_committed) with your `last_stable_offset`, and our consumer with
`isolation_level="read_committed"` skips aborted records with your `read_committed_batches`.
From kafka_ref you may import anything but the modules that hold these functions (beyond the
names this file imports from them): `kafka-ref lab check` refuses a solution that reaches
kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_ref.log.isolation import FetchedBatch


def last_stable_offset(
    open_transactions: Iterable[int],
    finished_transactions: Iterable[tuple[int, int]],
    high_watermark: int,
    log_start_offset: int,
) -> int:
    """The partition's last stable offset (TXN-4; Kafka `UnifiedLog.lastStableOffset`,
    `ProducerStateManager.firstUnstableOffset`).

    `open_transactions`: the first offset of each transaction still open in this partition
    (its first batch's base offset). `finished_transactions`: `(first offset, marker
    offset)` of transactions whose COMMIT or ABORT marker is written. `high_watermark`,
    `log_start_offset`: the partition's.

    A transaction is unfinished while it is open, or while its marker is not yet below
    the high watermark (a leader elected now might not have the marker). The LSO is the
    first offset of the oldest unfinished transaction, never above the high watermark and
    never below the log start offset; with no unfinished transaction, the high watermark.
    """
    raise NotImplementedError


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    """The batches of one Fetch answer whose records a read_committed consumer returns, in
    order (CLIENT-14; Kafka `CompletedFetch.nextFetchedBatch`).

    `batches`: the answer's batches in offset order, each a `FetchedBatch` with
    `base_offset`, `last_offset`, `producer_id` (-1: none), `is_transactional`,
    `is_control` (a transaction marker) and `is_abort_marker` (a marker that says ABORT).
    `aborted`: the answer's aborted transactions, `(producer id, first offset)`, in no
    particular order; they are exactly the aborted transactions the answer overlaps.

    Return (or yield) the batches to return, unchanged, in their order:
    - a marker is never returned;
    - a transactional batch of producer P is dropped when one of P's listed aborted
      transactions starts at or before its last offset, and P's ABORT marker has not
      appeared between that start and the batch (the marker ends the aborted
      transaction: P's later transactions may commit);
    - every other batch is returned.

    Read `batches` as you go (an iterator: our consumer decodes the answer lazily).
    """
    raise NotImplementedError

"""Wrong: the LSO counts only open transactions, not finished ones whose marker is not yet
below the high watermark (TXN-4).

A transaction whose COMMIT or ABORT marker is written but not replicated below the HW is
still unfinished: a leader elected now might not have the marker. This LSO moves past it
as soon as the marker is written. The read_committed filter is right.
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
    firsts = list(open_transactions)
    if not firsts:
        return high_watermark
    return min(max(min(firsts), log_start_offset), high_watermark)


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    starts = sorted((first, producer) for producer, first in aborted)
    aborting: set[int] = set()
    for batch in batches:
        while starts and starts[0][0] <= batch.last_offset:
            aborting.add(starts.pop(0)[1])
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
        elif not (batch.is_transactional and batch.producer_id in aborting):
            yield batch

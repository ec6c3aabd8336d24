"""Wrong: once a producer has an aborted transaction, every later transactional batch of
that producer is dropped: the ABORT marker does not end it (CLIENT-14).

The producer's next transaction, which may commit, loses all its records for a
read_committed consumer. The LSO is right.
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
    firsts += [first for first, marker in finished_transactions if marker >= high_watermark]
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
        if not batch.is_control and not (batch.is_transactional and batch.producer_id in aborting):
            yield batch

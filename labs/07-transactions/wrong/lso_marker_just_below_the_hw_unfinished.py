"""A marker at HW - 1 is taken as not yet replicated (marker >= HW - 1): off by one the other
way, the LSO stays behind a finished transaction (TXN-4).
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
    unfinished = list(open_transactions)
    for first, marker in finished_transactions:
        if marker >= high_watermark - 1:
            unfinished.append(first)
    if not unfinished:
        return high_watermark
    return min(high_watermark, max(min(unfinished), log_start_offset))


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    upcoming = sorted(aborted, key=lambda txn: txn[1])  # by first offset
    reached = 0
    aborting: set[int] = set()
    for batch in batches:
        while reached < len(upcoming) and upcoming[reached][1] <= batch.last_offset:
            aborting.add(upcoming[reached][0])
            reached += 1
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch

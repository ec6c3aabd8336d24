"""Drops only the batch at the listed first offset of an aborted transaction, not the
transaction's later batches up to its ABORT marker (CLIENT-14).
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
        if marker >= high_watermark:  # the marker is not below the HW yet
            unfinished.append(first)
    if not unfinished:
        return high_watermark
    return min(high_watermark, max(min(unfinished), log_start_offset))


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    starts = set(aborted)
    for batch in batches:
        if batch.is_control:
            continue
        if batch.is_transactional and (batch.producer_id, batch.base_offset) in starts:
            continue
        yield batch

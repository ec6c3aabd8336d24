"""Reads `open_transactions` twice (once to see whether any is open, once for their first
offsets): given a one-pass iterator, as its Iterable type allows, the second read finds
none and the LSO passes an open transaction (TXN-4)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_ref.log.isolation import FetchedBatch


def last_stable_offset(
    open_transactions: Iterable[int],
    finished_transactions: Iterable[tuple[int, int]],
    high_watermark: int,
    log_start_offset: int,
) -> int:
    finished = [first for first, marker in finished_transactions if marker >= high_watermark]
    if not any(True for _ in open_transactions) and not finished:
        return high_watermark
    unfinished = [*open_transactions, *finished]
    first_unstable = max(min(unfinished, default=high_watermark), log_start_offset)
    return min(first_unstable, high_watermark)


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    pending = sorted((first, producer) for producer, first in aborted)
    aborting: set[int] = set()
    i = 0
    for batch in batches:
        while i < len(pending) and pending[i][0] <= batch.last_offset:
            aborting.add(pending[i][1])
            i += 1
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch

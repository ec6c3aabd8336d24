"""Keeps one aborted transaction per producer (a dict by producer id): a producer that aborts
twice in one answer has its second aborted transaction returned (CLIENT-14).
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
    first_of = dict(aborted)  # producer id -> first offset: the last listed wins
    aborting: set[int] = set()
    for batch in batches:
        start = first_of.get(batch.producer_id)
        if start is not None and start <= batch.last_offset:
            aborting.add(batch.producer_id)
            del first_of[batch.producer_id]
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch

"""Starts an aborted transaction when the walk reaches a batch whose *base* offset is at or
past the listed first offset, not its last offset: a batch of P that the listed
transaction starts inside is returned (CLIENT-14: "starts at or before its last offset").
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
    unfinished += [first for first, marker in finished_transactions if marker >= high_watermark]
    first_unstable = max(min(unfinished, default=high_watermark), log_start_offset)
    return min(first_unstable, high_watermark)


def read_committed_batches(
    batches: Iterable[FetchedBatch], aborted: Iterable[tuple[int, int]]
) -> Iterator[FetchedBatch]:
    pending = sorted((first, producer) for producer, first in aborted)
    aborting: set[int] = set()
    i = 0
    for batch in batches:
        while i < len(pending) and pending[i][0] <= batch.base_offset:
            aborting.add(pending[i][1])
            i += 1
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch

"""Ignores the aborted list and holds each transaction's batches until its marker says COMMIT
or ABORT: a transaction whose marker is past the answer is returned, and batches come out of
order (CLIENT-14).
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
    held: dict[int, list[FetchedBatch]] = {}
    for batch in batches:
        if batch.is_control:
            waiting = held.pop(batch.producer_id, [])
            if not batch.is_abort_marker:
                yield from waiting
        elif batch.is_transactional:
            held.setdefault(batch.producer_id, []).append(batch)
        else:
            yield batch
    for waiting in held.values():
        yield from waiting

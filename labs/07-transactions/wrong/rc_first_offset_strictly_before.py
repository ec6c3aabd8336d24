"""A transaction counts as begun only when its first offset is strictly before the batch's last
offset (< instead of <=): a one-record aborted batch is returned (CLIENT-14).
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
    upcoming = sorted(aborted, key=lambda txn: txn[1])
    reached = 0
    aborting: set[int] = set()
    for batch in batches:
        while reached < len(upcoming) and upcoming[reached][1] < batch.last_offset:
            aborting.add(upcoming[reached][0])
            reached += 1
        if batch.is_control:
            if batch.is_abort_marker:
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        yield batch

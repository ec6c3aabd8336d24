"""Combining state batches: what the share coordinator keeps after each write (KIP-932).

A share-partition's state above its start offset (SPSO) is a list of **state batches**, runs
of offsets with one delivery state and one delivery count (`persister.StateBatch`). A leader
does not resend the whole list on every change: WriteShareGroupState carries only the
batches that changed, and they may overlap what the coordinator holds (a run of 10 offsets
acquired together whose middle 3 were then acknowledged), or each other. The coordinator
folds them into what it holds (Kafka `PersisterStateBatchCombiner`, used by
`ShareCoordinatorShard` on every write and on every ShareUpdate it replays):

* batches that end below the SPSO are dropped, and one that straddles it is cut at it:
  below the SPSO every record is done;
* on an offset covered by more than one batch, the batch with the **higher delivery
  count** wins, and at equal counts the **higher state** (ARCHIVED 4 over ACKNOWLEDGED 2
  over AVAILABLE 0; Kafka `compareBatchDeliveryInfo`). A record's delivery count only grows
  and its state only moves from AVAILABLE to a final one between two deliveries, so the
  winner is always the newer write: a stale or replayed batch can never undo progress;
* the result has no overlap, is sorted by offset, and neighbours with the same state and
  count are one batch.

So the result is a pure function of *which* (offset, state, count) facts were ever written
above the SPSO, not of their order or of how they were cut into batches: the coordinator can
merge a write into a snapshot, or replay a snapshot and the updates after it, and get the
same list (SHARE-72). Batches can span any offsets, so the combination sweeps over batch
boundaries, never over single offsets.

Rules: SHARE-72.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

from kafka_ref.share.persister import RecordState, StateBatch


def priority(batch: StateBatch) -> tuple[int, int]:
    """Which batch wins an offset: delivery count first, then state (Kafka
    `compareBatchDeliveryInfo`)."""
    return batch.delivery_count, int(batch.delivery_state)


def combine(
    so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """The batches of `so_far` and `new` above `start_offset` (-1: no cut), combined: on
    each offset the highest-priority batch, no overlap, equal neighbours merged."""
    pruned = []
    for batch in (*so_far, *new):
        if start_offset != -1 and batch.last_offset < start_offset:
            continue  # all done: below the SPSO
        if start_offset != -1 and batch.first_offset < start_offset:
            batch = StateBatch(
                start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count
            )
        pruned.append(batch)
    return _merge(_sweep(pruned))


def _sweep(batches: list[StateBatch]) -> list[StateBatch]:
    """Cut the offset line at every batch boundary; each piece takes the winner among the
    batches covering it (a heap of the open batches, highest priority on top)."""
    starts = sorted(batches, key=lambda b: b.first_offset)
    bounds = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[StateBatch] = []
    open_batches: list[tuple[tuple[int, int], int, StateBatch]] = []  # (-priority, i, batch)
    index = 0
    for lo, hi in itertools.pairwise(bounds):
        while index < len(starts) and starts[index].first_offset <= lo:
            batch = starts[index]
            key = (-batch.delivery_count, -int(batch.delivery_state))
            heapq.heappush(open_batches, (key, index, batch))
            index += 1
        winner = _top_covering(open_batches, lo)
        if winner is not None:  # else a gap: no batch covers lo..hi-1
            out.append(StateBatch(lo, hi - 1, winner.delivery_state, winner.delivery_count))
    return out


def _top_covering(
    open_batches: list[tuple[tuple[int, int], int, StateBatch]], offset: int
) -> StateBatch | None:
    """The winner among the open batches that still cover `offset`; those that ended
    before it leave the heap when they reach its top (lazy deletion)."""
    while open_batches and open_batches[0][2].last_offset < offset:
        heapq.heappop(open_batches)
    return open_batches[0][2] if open_batches else None


def _merge(pieces: list[StateBatch]) -> tuple[StateBatch, ...]:
    """Contiguous pieces with one state and one count become one batch."""
    out: list[StateBatch] = []
    for piece in pieces:
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset + 1 == piece.first_offset
            and priority(last) == priority(piece)
        ):
            out[-1] = StateBatch(
                last.first_offset, piece.last_offset, last.delivery_state, last.delivery_count
            )
        else:
            out.append(piece)
    for a, b in itertools.pairwise(out):
        assert a.last_offset < b.first_offset, (a, b)  # sorted, no overlap
    return tuple(out)


def delivered_state(value: int) -> RecordState:
    """A delivery state read from the wire or a record; ValueError if it is not one that
    is written (0, 2, 4)."""
    state = RecordState(value)
    if state is RecordState.ACQUIRED:
        raise ValueError("an acquired record is not written")
    return state

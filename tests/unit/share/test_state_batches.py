"""Combining state batches (spec/share_groups.md SHARE-72): on every offset above the SPSO
the batch with the higher delivery count, then the higher state, wins; the result is sorted,
without overlap, with equal neighbours merged."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.share.persister import RecordState, StateBatch
from kafka_ref.share.state_batches import combine, priority

A, ACK, ARC = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


@st.composite
def batches(draw, low: int = 0, high: int = 60) -> StateBatch:
    first = draw(st.integers(low, high))
    last = draw(st.integers(first, first + 15))
    state = draw(st.sampled_from([A, ACK, ARC]))
    return StateBatch(first, last, state, draw(st.integers(0, 4)))


def per_offset(result: tuple[StateBatch, ...]) -> dict[int, tuple[int, int]]:
    out = {}
    for b in result:
        for offset in range(b.first_offset, b.last_offset + 1):
            assert offset not in out, f"offset {offset} twice in {result}"
            out[offset] = priority(b)
    return out


@pytest.mark.spec("SHARE-72")
@given(
    st.lists(batches(), max_size=6),
    st.lists(batches(), max_size=6),
    st.sampled_from([-1, 0, 10, 30]),
)
def test_every_offset_takes_the_winning_batch_and_nothing_overlaps(so_far, new, start):
    result = combine(so_far, new, start)
    expected: dict[int, tuple[int, int]] = {}
    for b in (*so_far, *new):
        for offset in range(max(b.first_offset, start), b.last_offset + 1):
            expected[offset] = max(expected.get(offset, (-1, -1)), priority(b))
    assert per_offset(result) == expected
    for a, b in itertools.pairwise(result):  # sorted; equal neighbours merged
        assert a.last_offset < b.first_offset
        assert not (a.last_offset + 1 == b.first_offset and priority(a) == priority(b))


@pytest.mark.spec("SHARE-72")
@given(st.lists(batches(), min_size=1, max_size=8), st.data())
def test_the_newer_write_wins_when_deliveries_move_forward(writes, data):
    """A leader's writes of one offset only move forward (a new delivery raises the count;
    an acknowledgement ends it): combining them in order, one at a time, leaves each offset
    with its last write."""
    state: tuple[StateBatch, ...] = ()
    last_write: dict[int, tuple[int, int]] = {}
    for b in writes:
        known = [last_write[o] for o in range(b.first_offset, b.last_offset + 1) if o in last_write]
        floor = max(known, default=(0, 0))
        count = data.draw(st.integers(floor[0] + (floor[1] > 0), floor[0] + 2))
        b = StateBatch(b.first_offset, b.last_offset, b.delivery_state, count)
        state = combine(state, [b], -1)
        for o in range(b.first_offset, b.last_offset + 1):
            last_write[o] = priority(b)
    assert per_offset(state) == last_write


@pytest.mark.spec("SHARE-72")
def test_kafka_examples():
    # a run acquired together, its middle acknowledged later: three batches
    assert combine([StateBatch(0, 9, A, 1)], [StateBatch(3, 5, ACK, 1)], -1) == (
        StateBatch(0, 2, A, 1),
        StateBatch(3, 5, ACK, 1),
        StateBatch(6, 9, A, 1),
    )
    # the SPSO cuts what straddles it and drops what is below it
    assert combine([StateBatch(0, 4, ARC, 1), StateBatch(5, 9, A, 1)], [], 7) == (
        StateBatch(7, 9, A, 1),
    )
    # a stale batch (lower delivery count) does not undo a newer one
    assert combine([StateBatch(0, 4, A, 2)], [StateBatch(0, 4, ACK, 1)], -1) == (
        StateBatch(0, 4, A, 2),
    )
    # contiguous batches with one state and count become one
    assert combine([StateBatch(0, 4, ACK, 1)], [StateBatch(5, 9, ACK, 1)], -1) == (
        StateBatch(0, 9, ACK, 1),
    )

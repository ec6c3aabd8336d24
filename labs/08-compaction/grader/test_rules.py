"""Lab 08 grader, the two rules as functions: the offset map (COMPACT-1, COMPACT-5) and
whether a record is kept (COMPACT-1, COMPACT-5, COMPACT-6, COMPACT-9).

Your functions are called through kafka-ref's modules (kafka_ref/log/offset_map.py and
cleaner.py), where the seams put them. The oracles are the rules as spec/retention.md states
them, and examples worked out by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.log import cleaner, offset_map

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e", None])


@st.composite
def dirty_sections(draw):
    """Batches in offset order, as the map sees them, with gaps (from earlier rounds) and
    transaction markers (no records); and a start offset somewhere in them."""
    batches, offset = [], draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 9)) == 0:  # a marker
            batches.append((offset, []))
            offset += 1
            continue
        size = draw(st.integers(1, 5))
        present = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        records = [(offset + i, draw(KEYS)) for i in range(size) if present[i] or i == 0]
        batches.append((offset + size - 1, records))
        offset += size + draw(st.integers(0, 2))
    start = draw(st.integers(0, offset))
    return [b for b in batches if b[0] >= start], start


def expected_map(batches, start):
    """COMPACT-1: each key's last offset at or after start; the last batch's last offset."""
    offsets = {}
    for _, records in batches:
        for offset, key in records:
            if key is not None and offset >= start:
                offsets[key] = offset
    return offsets, (batches[-1][0] if batches else -1)


@pytest.mark.spec("COMPACT-1")
@given(section=dirty_sections())
def test_the_map_holds_each_keys_latest_offset(section):
    batches, start = section
    assert offset_map.build_offset_map(iter(batches), start, 1000) == expected_map(batches, start)


@pytest.mark.spec("COMPACT-1")
def test_the_map_by_hand():
    batches = [(2, [(0, b"a"), (1, b"b"), (2, b"a")]), (3, []), (6, [(4, b"b"), (6, None)])]
    assert offset_map.build_offset_map(iter(batches), 0, 10) == ({b"a": 2, b"b": 4}, 6)
    assert offset_map.build_offset_map(iter(batches), 2, 10) == ({b"a": 2, b"b": 4}, 6)
    assert offset_map.build_offset_map(iter(batches), 3, 10) == ({b"b": 4}, 6)
    assert offset_map.build_offset_map(iter([]), 0, 10) == ({}, -1)


class Reading:
    """The batches, counting how many were read."""

    def __init__(self, batches):
        self.batches, self.read = batches, 0

    def __iter__(self):
        for batch in self.batches:
            self.read += 1
            yield batch


@pytest.mark.spec("COMPACT-5")
@given(section=dirty_sections(), max_keys=st.integers(1, 4))
def test_a_full_map_ends_the_round_early(section, max_keys):
    batches, start = section
    reading = Reading(batches)
    offsets, latest = offset_map.build_offset_map(reading, start, max_keys)
    # the rule, step by step: where does the map fill up?
    mapped, end, stopped_in = {}, -1, None
    for n, (last_offset, records) in enumerate(batches, 1):
        for offset, key in records:
            if key is None or offset < start:
                continue
            if len(mapped) >= max_keys:
                stopped_in = n
                break
            mapped[key], end = offset, offset
        if stopped_in:
            break
        end = last_offset
    assert (offsets, latest) == (mapped, end)
    if stopped_in:
        assert reading.read == stopped_in, "a full map must not read further batches"


@pytest.mark.spec("COMPACT-5")
def test_a_full_map_by_hand():
    batches = [(1, [(0, b"a"), (1, b"b")]), (3, [(2, b"a"), (3, b"c")]), (4, [(4, b"d")])]
    # two keys fit: at offset 2 the map is full, even though "a" is mapped already
    assert offset_map.build_offset_map(iter(batches), 0, 2) == ({b"a": 0, b"b": 1}, 1)
    assert offset_map.build_offset_map(iter(batches), 0, 3) == ({b"a": 2, b"b": 1, b"c": 3}, 3)


def retain(offset, key, tombstone, latest, map_end, horizon, now):
    return cleaner.should_retain(offset, key, tombstone, latest, map_end, horizon, now)


@pytest.mark.spec("COMPACT-1", "COMPACT-5", "COMPACT-6", "COMPACT-9")
@given(
    offset=st.integers(0, 20), key=st.sampled_from([b"k", None]), tombstone=st.booleans(),
    latest=st.integers(-1, 20), map_end=st.integers(-1, 20),
    horizon=st.none() | st.integers(0, 20), now=st.integers(0, 20),
)  # fmt: skip
def test_a_record_is_kept_by_the_rule(offset, key, tombstone, latest, map_end, horizon, now):
    got = retain(offset, key, tombstone, latest, map_end, horizon, now)
    if offset > map_end:
        assert got, "past the map's end: not this round's to judge (COMPACT-5)"
    elif key is None:
        assert not got, "no key: dropped (COMPACT-9)"
    elif offset < latest:
        assert not got, "superseded by a later record of its key (COMPACT-1)"
    elif tombstone and horizon is not None and now >= horizon:
        assert not got, "a tombstone past its delete horizon goes (COMPACT-6)"
    else:
        assert got, "the key's latest record stays (COMPACT-1, COMPACT-6)"


@pytest.mark.spec("COMPACT-1", "COMPACT-6")
def test_the_rule_by_hand():
    assert not retain(3, b"a", False, 7, 10, None, 0)  # a later "a" at 7
    assert retain(7, b"a", False, 7, 10, None, 0)  # the latest "a"
    assert retain(12, b"a", False, 7, 10, None, 0)  # past the map: next round's
    assert retain(7, b"a", True, 7, 10, None, 100)  # a tombstone, no horizon yet
    assert retain(7, b"a", True, 7, 10, 500, 499)  # before its horizon
    assert not retain(7, b"a", True, 7, 10, 500, 500)  # at its horizon
    assert not retain(5, None, False, -1, 10, None, 0)  # no key

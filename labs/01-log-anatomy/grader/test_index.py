"""Lab 01 grader: the sparse offset index's entry rule and lookup (INDEX-3..INDEX-5, INDEX-7).

The rule and the search are checked alone against oracles written here (Python's `bisect`,
a loop over the batches' sizes), then inside a real log on disk: kafka-ref's `Log` appends
batches, writes `.index` files, finds offsets for reads and rebuilds a lost index, all
through your functions.
"""

from __future__ import annotations

import bisect
import itertools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.log import offset_index
from kafka_ref.log.log import Log
from kafka_ref.record.batch import BatchHeader, build_batch
from kafka_ref.record.record import Record


def reads(keys: list[int]):
    """key_at over `keys`, counting the slots it reads."""
    count = itertools.count()
    touched: list[int] = []

    def key_at(slot: int) -> int:
        next(count)
        touched.append(slot)
        return keys[slot]

    return key_at, touched


@st.composite
def searches(draw):
    keys = sorted(draw(st.sets(st.integers(0, 10_000), max_size=300)))
    lo = draw(st.integers(0, len(keys)))
    hi = draw(st.integers(lo - 1, len(keys) - 1))
    target = draw(st.integers(-5, 10_005))
    return keys, lo, hi, target


@pytest.mark.spec("INDEX-3")
@given(searches())
def test_the_lookup_finds_the_greatest_key_at_or_below_the_target(search):
    keys, lo, hi, target = search
    key_at, touched = reads(keys)
    expected = min(bisect.bisect_right(keys, target, lo, max(lo, hi + 1)) - 1, hi)
    expected = expected if expected >= lo else lo - 1
    assert offset_index.largest_lower_bound(key_at, target, lo, hi) == expected
    assert all(lo <= slot <= hi for slot in touched), "read a slot outside lo..hi"


@pytest.mark.spec("INDEX-3")
def test_the_lookup_reads_about_log2_slots():
    keys = list(range(0, 3 * 65_536, 3))
    key_at, touched = reads(keys)
    assert offset_index.largest_lower_bound(key_at, 100_000, 0, len(keys) - 1) == 33_333
    assert len(touched) <= 20, f"{len(touched)} slots read for 65,536 entries"


@pytest.mark.spec("INDEX-4")
@given(st.integers(0, 1 << 20), st.integers(0, 1 << 20))
def test_an_entry_is_due_after_more_than_the_interval(since, interval):
    assert offset_index.needs_index_entry(since, interval) is (since > interval)


def expected_entries(sizes: list[int], counts: list[int], interval: int) -> list[tuple[int, int]]:
    """(relative last offset, position) of every entry INDEX-4 asks for, computed here."""
    entries, since, position, offset = [], 0, 0, -1
    for size, count in zip(sizes, counts, strict=True):
        offset += count
        if since > interval:
            entries.append((offset, position))
            since = 0
        since += size
        position += size
    return entries


def write_log(directory, batches: list[list[bytes]], interval: int) -> tuple[Log, list[int]]:
    config = LogConfig(index_interval_bytes=interval, segment_bytes=1 << 30)
    log = Log.open(directory, config, ManualClock())
    sizes = []
    for values in batches:
        batch = build_batch([Record(None, v, 0) for v in values])
        sizes.append(len(batch))
        log.append(batch)
    return log, sizes


def index_entries(log: Log) -> list[tuple[int, int]]:
    index = log.segments[0].offset_index
    return [tuple(index.entry(slot)) for slot in range(index.entries)]


batch_lists = st.lists(
    st.lists(st.binary(min_size=1, max_size=400), min_size=1, max_size=5), min_size=1,
    max_size=60,
)  # fmt: skip


@pytest.mark.spec("INDEX-4", "INDEX-7")
@given(batch_lists, st.sampled_from([0, 100, 1000, 4096]))
def test_a_real_segment_indexes_exactly_where_the_rule_says_and_recovery_agrees(
    tmp_path_factory, batches, interval
):
    directory = tmp_path_factory.mktemp("log") / "t-0"
    log, sizes = write_log(directory, batches, interval)
    expected = expected_entries(sizes, [len(b) for b in batches], interval)
    assert index_entries(log) == expected
    log.close()
    for name in os.listdir(directory):
        if name.endswith(".index"):
            os.unlink(directory / name)  # lost: recovery rebuilds it with the same rule
    reopened = Log.open(directory, LogConfig(index_interval_bytes=interval), ManualClock())
    assert index_entries(reopened) == expected
    reopened.close()


@pytest.mark.spec("INDEX-5", "INDEX-3")
@given(batch_lists, st.data())
def test_every_offset_is_found_for_a_read(tmp_path_factory, batches, data):
    directory = tmp_path_factory.mktemp("log") / "t-0"
    log, _ = write_log(directory, batches, 200)
    total = sum(len(b) for b in batches)
    for offset in data.draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=10)):
        first = BatchHeader.parse(log.read(offset, 1 << 20).read_bytes())
        assert first.base_offset <= offset <= first.last_offset, (offset, first)
    log.close()

"""Lab 01 grader: the sparse offset index's entry rule and lookup (INDEX-3..INDEX-5, INDEX-7).

The rule and the search are checked alone, first on cases worked out by hand (each boundary
of the handout and the docstrings, named), then as properties against oracles written here
(Python's `bisect`, a loop over the batches' sizes), then inside a real log on disk:
kafka-ref's `Log` appends batches, writes `.index` files, finds offsets for reads and
rebuilds a lost index, all through your functions.
"""

from __future__ import annotations

import bisect
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
    """key_at over `keys`, recording the slots it reads."""
    touched: list[int] = []

    def key_at(slot: int) -> int:
        touched.append(slot)
        return keys[slot]

    return key_at, touched


# ---------------------------------------------------------------------- INDEX-4, by hand
# (bytes since the last entry, index.interval.bytes, is an entry due?)
ENTRY_CASES = {
    "a segment's first batch, interval 0": (0, 0, False),
    "one byte appended, interval 0": (1, 0, True),
    "nothing appended yet, interval 4096": (0, 4096, False),
    "one byte short of the interval": (4095, 4096, False),
    "exactly the interval": (4096, 4096, False),
    "one byte more than the interval": (4097, 4096, True),
    "twice the interval": (8192, 4096, True),
    "a little more than the interval": (5000, 4096, True),
    "exactly the interval of 1 byte": (1, 1, False),
    "one byte more than 1 byte": (2, 1, True),
}


@pytest.mark.spec("INDEX-4")
@pytest.mark.parametrize(("since", "interval", "due"), ENTRY_CASES.values(), ids=ENTRY_CASES)
def test_an_entry_is_due_exactly_when_more_than_the_interval_was_appended(since, interval, due):
    got = offset_index.needs_index_entry(since, interval)
    assert got is due, (
        f"{since} bytes appended since the last entry, index.interval.bytes {interval}: "
        f"an entry is {'due' if due else 'not due'} (more than the interval), got {got!r}"
    )


@pytest.mark.spec("INDEX-4")
@given(st.integers(0, 1 << 20), st.integers(0, 1 << 20))
def test_an_entry_is_due_after_more_than_the_interval(since, interval):
    got = offset_index.needs_index_entry(since, interval)
    assert got is (since > interval), f"{since} bytes since the last entry: got {got!r}"


# ---------------------------------------------------------------------- INDEX-3, by hand
KEYS = [10, 20, 30, 40, 50]  # slots 0..4
# (keys, lo, hi, target, the slot to answer)
LOOKUP_CASES = {
    "a target equal to a key": (KEYS, 0, 4, 30, 2),
    "a target between two keys": (KEYS, 0, 4, 35, 2),
    "a target just above the first key": (KEYS, 0, 4, 11, 0),
    "a target equal to the first key": (KEYS, 0, 4, 10, 0),
    "a target below every key: -1 for the whole index": (KEYS, 0, 4, 5, -1),
    "a target equal to the last key": (KEYS, 0, 4, 50, 4),
    "a target past every key": (KEYS, 0, 4, 99, 4),
    "a part of the index, every key above the target: lo - 1": (KEYS, 2, 4, 5, 1),
    "a part of the index above the target, keys below lo qualify: lo - 1": (KEYS, 3, 4, 25, 2),
    "a part of the index, the target past its last key": (KEYS, 1, 3, 45, 3),
    "a part of the index, the target between its keys": (KEYS, 1, 3, 25, 1),
    "a part of the index at its end, the target past it": (KEYS, 3, 4, 60, 4),
    "a range of one slot, its key equal to the target": (KEYS, 2, 2, 30, 2),
    "a range of one slot, its key above the target": (KEYS, 2, 2, 29, 1),
    "an empty range (hi = lo - 1) in the middle": (KEYS, 2, 1, 99, 1),
    "an empty index": ([], 0, -1, 7, -1),
    "an index of one entry, the target at it": ([7], 0, 0, 7, 0),
    "an index of one entry, the target below it": ([7], 0, 0, 6, -1),
    "an index of two entries, the target at the second": ([3, 9], 0, 1, 9, 1),
}


@pytest.mark.spec("INDEX-3")
@pytest.mark.parametrize(
    ("keys", "lo", "hi", "target", "expected"), LOOKUP_CASES.values(), ids=LOOKUP_CASES
)
def test_the_lookup_on_cases_worked_by_hand(keys, lo, hi, target, expected):
    key_at, touched = reads(keys)
    got = offset_index.largest_lower_bound(key_at, target, lo, hi)
    where = f"keys {keys} (slot i holds keys[i]), search slots {lo}..{hi} for target {target}"
    assert got == expected, (
        f"{where}: the greatest slot in {lo}..{hi} whose key is <= {target} is {expected}"
        f"{' (lo - 1: none qualifies)' if expected == lo - 1 else ''}, got {got}"
    )
    outside = sorted({slot for slot in touched if not lo <= slot <= hi})
    assert not outside, f"{where}: read slots {outside}, outside {lo}..{hi}"


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
    expected = bisect.bisect_right(keys, target, lo, max(lo, hi + 1)) - 1
    got = offset_index.largest_lower_bound(key_at, target, lo, hi)
    assert got == expected, f"slots {lo}..{hi}, target {target}: slot {expected}, got {got}"
    assert all(lo <= slot <= hi for slot in touched), "read a slot outside lo..hi"


@pytest.mark.spec("INDEX-3")
@pytest.mark.parametrize(
    ("target", "expected"),
    [(100_000, 33_333), (0, 0), (-1, -1), (3 * 65_535, 65_535), (10**9, 65_535), (4, 1)],
    ids=[
        "the middle",
        "the first key",
        "below every key",
        "the last key",
        "past every key",
        "near the start",
    ],
)
def test_the_lookup_reads_about_log2_slots(target, expected):
    keys = list(range(0, 3 * 65_536, 3))
    key_at, touched = reads(keys)
    got = offset_index.largest_lower_bound(key_at, target, 0, len(keys) - 1)
    assert got == expected, f"65,536 keys 0, 3, 6, ...: target {target} is at slot {expected}"
    assert len(touched) <= 20, (
        f"65,536 entries, target {target}: {len(touched)} calls of key_at, at most 20 allowed "
        "(a binary search reads about 17)"
    )


# ---------------------------------------------------------------------- a real log on disk
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


def recovered(directory, interval: int) -> Log:
    """The log reopened after its `.index` files were deleted: recovery rebuilds them."""
    for name in os.listdir(directory):
        if name.endswith(".index"):
            os.unlink(directory / name)
    return Log.open(directory, LogConfig(index_interval_bytes=interval), ManualClock())


@pytest.mark.spec("INDEX-4", "INDEX-7")
def test_ten_equal_batches_are_indexed_at_batches_3_6_and_9_and_recovery_agrees(tmp_path):
    """Ten batches of one 100-byte record, S bytes each, index.interval.bytes 2S. Before
    batch 2, 2S bytes were appended: not more than the interval, no entry. Before batch 3,
    3S: an entry, and the count restarts with batch 3's S bytes; then batches 6 and 9."""
    directory = tmp_path / "t-0"
    size = len(build_batch([Record(None, b"x" * 100, 0)]))
    log, sizes = write_log(directory, [[b"x" * 100]] * 10, 2 * size)
    assert sizes == [size] * 10
    expected = [(3, 3 * size), (6, 6 * size), (9, 9 * size)]
    what = f"10 batches of {size} bytes, index.interval.bytes {2 * size}"
    got = index_entries(log)
    assert got == expected, f"{what}: entries (offset, position) must be {expected}, got {got}"
    log.close()
    reopened = recovered(directory, 2 * size)
    got = index_entries(reopened)
    reopened.close()
    assert got == expected, f"{what}, index deleted: recovery must rebuild {expected}, got {got}"


@pytest.mark.spec("INDEX-5", "INDEX-3")
def test_a_read_starts_at_the_nearest_entry_at_or_below_the_offset(tmp_path):
    """The same ten batches: an offset is looked up at the greatest entry at or below it
    (offset 7 at the entry of batch 6), or at the segment's start below the first entry."""
    directory = tmp_path / "t-0"
    size = len(build_batch([Record(None, b"x" * 100, 0)]))
    log, _ = write_log(directory, [[b"x" * 100]] * 10, 2 * size)
    index = log.segments[0].offset_index
    for offset, entry in [
        (0, (0, 0)),
        (2, (0, 0)),
        (3, (3, 3 * size)),
        (7, (6, 6 * size)),
        (9, (9, 9 * size)),
        (40, (9, 9 * size)),
    ]:
        got = tuple(index.lookup(offset))
        assert got == entry, (
            f"entries {index_entries(log)}: a lookup of offset {offset} must answer {entry}, "
            f"got {got}"
        )
    for offset in range(10):
        first = BatchHeader.parse(log.read(offset, 1 << 20).read_bytes())
        assert first.base_offset == offset, f"a read of offset {offset} began at {first}"
    log.close()


batch_lists = st.lists(
    st.lists(st.binary(min_size=1, max_size=400), min_size=1, max_size=5),
    min_size=1,
    max_size=60,
)


@pytest.mark.spec("INDEX-4", "INDEX-7")
@given(batch_lists, st.sampled_from([0, 100, 1000, 4096]))
def test_a_real_segment_indexes_exactly_where_the_rule_says_and_recovery_agrees(
    tmp_path_factory, batches, interval
):
    directory = tmp_path_factory.mktemp("log") / "t-0"
    log, sizes = write_log(directory, batches, interval)
    expected = expected_entries(sizes, [len(b) for b in batches], interval)
    assert index_entries(log) == expected, f"batch sizes {sizes}, interval {interval}"
    log.close()
    reopened = recovered(directory, interval)
    assert index_entries(reopened) == expected, f"recovered: sizes {sizes}, interval {interval}"
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

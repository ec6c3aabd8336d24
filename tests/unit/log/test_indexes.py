"""The offset index and the time index (INDEX-1..3, INDEX-6, INDEX-7, TIDX-1..4)."""

import contextlib
import os
import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import InvalidConfigError
from kafka_ref.log.abstract_index import (
    IndexCorruptError,
    IndexOffsetOverflowError,
    InvalidIndexEntryError,
)
from kafka_ref.log.offset_index import (
    OffsetIndex,
    OffsetPosition,
    largest_lower_bound,
    warm_largest_lower_bound,
)
from kafka_ref.log.time_index import TimeIndex, TimestampOffset
from tests.unit.log.conftest import temp_dir

BASE = 1000


def _random_offset_entries(rng: random.Random, n: int) -> list[tuple[int, int]]:
    offset, position, entries = BASE, 0, []
    for _ in range(n):
        offset += rng.randint(1, 50)
        position += rng.randint(1, 5000)
        entries.append((offset, position))
    return entries


# ---------------------------------------------------------------------- offset index
@pytest.mark.spec("INDEX-1")
def test_offset_index_is_preallocated_8_byte_big_endian_entries(tmp_path):
    path = tmp_path / "x.index"
    index = OffsetIndex(path, BASE, 1003)
    assert os.path.getsize(path) == 1000  # rounded down to whole entries
    assert (index.max_entries, index.entries) == (125, 0)
    index.append(BASE + 5, 100)
    index.append(BASE + 70000, 2**31 - 1)
    index.flush()
    raw = path.read_bytes()
    assert raw[:16] == struct.pack(">ii", 5, 100) + struct.pack(">ii", 70000, 2**31 - 1)
    assert raw[16:] == bytes(1000 - 16)
    with pytest.raises(InvalidConfigError):
        TimeIndex(tmp_path / "y.timeindex", BASE, 8)  # cannot hold one 12-byte entry


@pytest.mark.spec("INDEX-2")
def test_offset_index_entries_must_strictly_increase(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", BASE, 24)
    index.append(BASE + 10, 500)
    for offset, position in [(BASE + 10, 600), (BASE + 11, 500), (BASE + 9, 700)]:
        with pytest.raises(InvalidIndexEntryError):
            index.append(offset, position)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE + 2**31, 900)
    index.append(BASE + 11, 501)
    index.append(BASE + 12, 502)
    assert index.is_full()
    with pytest.raises(InvalidIndexEntryError):
        index.append(BASE + 13, 503)
    assert [index.entry(i) for i in range(3)] == [
        (BASE + 10, 500),
        (BASE + 11, 501),
        (BASE + 12, 502),
    ]


@pytest.mark.spec("INDEX-3", "TIDX-3")
@given(
    keys=st.lists(st.integers(-50, 5000), unique=True, max_size=60).map(sorted),
    target=st.integers(-60, 5100),
    entry_size=st.sampled_from([8, 12, 1024, 4096]),  # a warm tail of 1024 .. 2 entries
)
def test_the_search_and_its_warm_wrapper_find_the_greatest_key_at_or_below(
    keys, target, entry_size
):
    expected = max((i for i, k in enumerate(keys) if k <= target), default=-1)
    assert largest_lower_bound(keys.__getitem__, target, 0, len(keys) - 1) == expected
    assert warm_largest_lower_bound(keys.__getitem__, len(keys), entry_size, target) == expected


@pytest.mark.spec("INDEX-3")
@given(
    n=st.one_of(st.integers(0, 40), st.integers(1000, 2600)),  # the warm section is 1024
    seed=st.integers(0, 2**32),
    targets=st.lists(st.integers(BASE - 10, BASE + 140_000), max_size=40),
)
def test_offset_lookup_is_greatest_entry_at_or_below(n, seed, targets):
    entries = _random_offset_entries(random.Random(seed), n)
    with temp_dir() as d:
        index = OffsetIndex(os.path.join(d, "x.index"), BASE, 8 * (n + 1))
        for offset, position in entries:
            index.append(offset, position)
        probes = targets + [o for o, _ in entries[:: max(1, n // 20)]] + [BASE + 10**7]
        for target in probes:
            below = [e for e in entries if e[0] <= target]
            assert index.lookup(target) == (below[-1] if below else (BASE, 0))
            by_position = [e for e in entries if e[1] <= target]
            assert index.lookup_by_position(target) == (
                by_position[-1] if by_position else (BASE, 0)
            )
        index.close_handler()


@pytest.mark.spec("INDEX-6", "INDEX-3")
def test_truncate_trim_and_reopen(tmp_path):
    path = tmp_path / "x.index"
    index = OffsetIndex(path, BASE, 800)
    entries = _random_offset_entries(random.Random(7), 30)
    for offset, position in entries:
        index.append(offset, position)
    index.truncate_to(entries[20][0])  # drops entry 20 and later
    assert index.entries == 20 and index.last_offset == entries[19][0]
    index.truncate_to(entries[15][0] + 1)  # no exact match: keeps entries <= target
    assert index.entries == 16
    index.close()  # trims to the entries
    assert os.path.getsize(path) == 16 * 8
    reopened = OffsetIndex(path, BASE, 800)
    assert reopened.entries == 16 and reopened.is_full()
    assert reopened.lookup(entries[10][0] + 1) == entries[10]
    reopened.resize(800)  # active again: room to grow, entries kept
    assert (reopened.entries, reopened.max_entries) == (16, 100)
    reopened.append(entries[16][0], entries[16][1])
    assert reopened.entries == 17


@pytest.mark.spec("INDEX-6")
def test_reopen_preallocated_index_after_crash(tmp_path):
    path = tmp_path / "x.index"
    index = OffsetIndex(path, BASE, 8000)
    index.append(BASE, 0)  # a legitimate all-zero first entry
    index.append(BASE + 4, 90)
    index.append(BASE + 9, 180)
    index.truncate_to(BASE + 9)  # the dropped slot is zeroed, not just forgotten
    index.flush()
    index.close_handler()  # a crash: no trim
    assert os.path.getsize(path) == 8000
    reopened = OffsetIndex(path, BASE, 8000)
    assert reopened.entries == 2 and not reopened.is_full()
    assert reopened.lookup(BASE + 100) == OffsetPosition(BASE + 4, 90)
    reopened.sanity_check()
    reopened.append(BASE + 5, 100)  # appends continue after the real entries
    assert reopened.entries == 3
    empty = OffsetIndex(tmp_path / "empty.index", BASE, 800)
    empty.close_handler()
    assert OffsetIndex(tmp_path / "empty.index", BASE, 800).entries == 0


@pytest.mark.spec("INDEX-7")
def test_index_file_of_the_wrong_size_is_corrupt(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(struct.pack(">ii", 1, 10) + b"\x00" * 5)
    with pytest.raises(IndexCorruptError, match="multiple of 8"):
        OffsetIndex(path, BASE, 800).sanity_check()


@pytest.mark.spec("INDEX-7")
def test_index_entries_that_do_not_increase_are_corrupt(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(struct.pack(">iiii", 5, 100, 3, 50))
    with pytest.raises(IndexCorruptError, match="does not follow"):
        OffsetIndex(path, BASE, 800).sanity_check()
    path.write_bytes(struct.pack(">iiii", 5, 100, 6, 100))  # position does not increase
    with pytest.raises(IndexCorruptError):
        OffsetIndex(path, BASE, 800).sanity_check()


@pytest.mark.spec("INDEX-7")
@pytest.mark.parametrize("garbage_slot", [4, 10, 15, 19])
def test_trailing_garbage_after_the_entries_is_corrupt(tmp_path, garbage_slot):
    path = tmp_path / "x.index"
    body = bytearray(struct.pack(">iiiiii", 1, 10, 2, 20, 3, 30) + bytes(8 * 17))
    body[garbage_slot * 8 + 3] = 0x7F
    path.write_bytes(body)
    with pytest.raises(IndexCorruptError):
        OffsetIndex(path, BASE, 800).sanity_check()
    body[garbage_slot * 8 + 3] = 0
    path.write_bytes(body)
    index = OffsetIndex(path, BASE, 800)
    index.sanity_check()
    assert index.entries == 3


# ---------------------------------------------------------------------- time index
@pytest.mark.spec("TIDX-1")
def test_time_index_is_12_byte_big_endian_entries(tmp_path):
    path = tmp_path / "x.timeindex"
    index = TimeIndex(path, BASE, 100)
    assert os.path.getsize(path) == 96 and index.max_entries == 8
    index.maybe_append(1_700_000_000_123, BASE + 42)
    index.flush()
    assert path.read_bytes()[:12] == struct.pack(">qi", 1_700_000_000_123, 42)


@pytest.mark.spec("TIDX-2")
def test_time_index_timestamps_strictly_increase(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", BASE, 120)
    assert not index.maybe_append(-1, BASE)  # no timestamp: nothing to index
    assert index.maybe_append(100, BASE + 3)
    assert not index.maybe_append(100, BASE + 5)  # equal timestamp: skipped
    assert index.entries == 1
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(99, BASE + 6)
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(200, BASE + 2)
    assert index.maybe_append(200, BASE + 3)  # same offset, later timestamp is allowed
    assert index.last_entry() == TimestampOffset(200, BASE + 3)


@pytest.mark.spec("TIDX-3")
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(0, 1500),
    targets=st.lists(st.integers(-5, 80_000), max_size=30),
)
def test_time_lookup_is_greatest_entry_at_or_below(seed, n, targets):
    rng = random.Random(seed)
    ts, offset, entries = 0, BASE, []
    for _ in range(n):
        ts += rng.randint(1, 50)
        offset += rng.randint(0, 3)
        entries.append((ts, offset))
    with temp_dir() as d:
        index = TimeIndex(os.path.join(d, "x.timeindex"), BASE, 12 * (n + 2))
        for entry in entries:
            assert index.maybe_append(*entry)
        for target in targets + [t for t, _ in entries[:: max(1, n // 10)]]:
            below = [e for e in entries if e[0] <= target]
            assert index.lookup(target) == (below[-1] if below else (-1, BASE))
        index.close_handler()


@pytest.mark.spec("TIDX-4")
def test_time_index_keeps_one_slot_for_the_roll_entry(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", BASE, 36)  # three slots
    index.maybe_append(10, BASE + 1)
    index.maybe_append(20, BASE + 2)
    assert index.is_full()
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(30, BASE + 3)
    assert index.maybe_append(30, BASE + 3, skip_full_check=True)
    assert index.entries == 3


@pytest.mark.spec("INDEX-6", "TIDX-2")
def test_time_index_truncate_and_reopen_after_crash(tmp_path):
    path = tmp_path / "x.timeindex"
    index = TimeIndex(path, BASE, 1200)
    for i in range(10):
        index.maybe_append(1000 + 10 * i, BASE + 5 * i)
    index.truncate_to(BASE + 25)  # entries at offsets >= 25 go
    assert index.entries == 5 and index.last_entry() == (1040, BASE + 20)
    index.close_handler()
    reopened = TimeIndex(path, BASE, 1200)
    assert reopened.entries == 5 and reopened.last_entry() == (1040, BASE + 20)
    reopened.sanity_check()
    path.write_bytes(struct.pack(">qiqi", 50, 1, 40, 2))
    with pytest.raises(IndexCorruptError):
        TimeIndex(path, BASE, 1200).sanity_check()


# ---------------------------------------------------------------------- memory maps
def _mapping(path: str) -> dict[str, str]:
    """The /proc/self/smaps block of the map of `path`: its fields by name."""
    fields: dict[str, str] = {}
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                inside = line.rstrip().endswith(path)  # a new mapping starts
            elif inside:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
    return fields


def _open_files() -> list[str]:
    """The paths this process holds descriptors of (/proc/self/fd)."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone already
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
    return paths


@pytest.mark.spec("INDEX-8")
@pytest.mark.parametrize("cls", [OffsetIndex, TimeIndex])
def test_index_map_is_advised_random_access_and_holds_no_descriptor(cls, tmp_path):
    """VmFlags `rr` in /proc/self/smaps is VM_RAND_READ, set by MADV_RANDOM: a fault then
    reads no pages around the one touched (the page cache they would fill is not RSS, so
    the flag is what a test can see)."""
    path = str(tmp_path / f"{BASE:020d}.index")
    index = cls(path, BASE, 10 * 1024 * 1024)  # preallocated: a 10 MiB hole
    if cls is OffsetIndex:
        index.append(BASE + 1, 100)
    else:
        index.maybe_append(1_700_000_000_000, BASE + 1)
    mapping = _mapping(path)
    assert "rr" in mapping["VmFlags"].split()  # MADV_RANDOM
    # and the map holds no descriptor of the file: one per partition is its .log's
    assert path not in _open_files()
    index.resize(4 * 1024 * 1024)  # a new map after a resize is advised too
    assert "rr" in _mapping(path)["VmFlags"].split()
    index.close()


@pytest.mark.spec("INDEX-8")
def test_a_file_map_writes_through_to_the_file_and_fails_clearly(tmp_path):
    from kafka_ref.log.file_map import FileMap

    path = tmp_path / "mapped"
    path.write_bytes(bytes(8192))
    fd = os.open(path, os.O_RDWR)
    mapped = FileMap(fd, 8192)
    os.close(fd)  # the map lives on without it
    struct.pack_into(">qi", mapped.buffer, 4096, 7, 8)
    mapped.flush()
    assert path.read_bytes()[4096:4108] == struct.pack(">qi", 7, 8)
    assert mapped.buffer[4096:4104] == struct.pack(">q", 7)
    mapped.close()
    mapped.close()  # closing twice is harmless
    assert mapped.buffer is None
    with pytest.raises(OSError, match="mmap"):
        FileMap(fd, 8192)  # a closed descriptor: EBADF, in one line

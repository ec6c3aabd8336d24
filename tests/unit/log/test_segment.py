"""A log segment: files, index entries, offset translation, reads (SEG-1, SEG-7, SEG-8,
INDEX-4, INDEX-5, TIDX-4, LOG-3)."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.config import LogConfig
from kafka_ref.log.segment import Segment
from kafka_ref.log.segment_recovery import recover_segment
from kafka_ref.record import batch as batch_module
from kafka_ref.record.batch import iter_batch_headers
from tests.unit.log.conftest import T0, headers, make_batch, temp_dir

BASE = 500


def _fill(segment: Segment, appends: list[list[int]], *, start: int = BASE):
    """Append groups of batches (each inner list: record counts of one append's batches).
    Returns (position, size, base, last) per append and per batch."""
    offset, per_append, per_batch = start, [], []
    for group in appends:
        data = b"".join(
            make_batch(n, base_offset=o, ts=T0 + o)
            for n, o in zip(group, _bases(offset, group), strict=True)
        )
        position = segment.size
        segment.append(data)
        for pos, h in iter_batch_headers(data):
            per_batch.append((position + pos, h.size, h.base_offset, h.last_offset))
        per_append.append((position, len(data), offset, offset + sum(group) - 1))
        offset += sum(group)
    return per_append, per_batch


def _bases(offset, group):
    out = []
    for n in group:
        out.append(offset)
        offset += n
    return out


@pytest.mark.spec("SEG-1")
def test_segment_files_are_named_by_20_digit_base_offset(tmp_path, clock):
    segment = Segment(tmp_path, 368769, LogConfig(), clock)
    assert sorted(os.listdir(tmp_path)) == [
        "00000000000000368769.index",
        "00000000000000368769.log",
        "00000000000000368769.timeindex",
    ]
    segment.close()


appends_strategy = st.lists(
    st.lists(st.integers(1, 12), min_size=1, max_size=3), min_size=1, max_size=40
)


@pytest.mark.spec("INDEX-4", "TIDX-4")
@given(appends=appends_strategy, interval=st.sampled_from([0, 1, 100, 300, 1000, 4096]))
def test_index_entries_follow_the_interval_rule_and_equal_a_rebuild(appends, interval):
    with temp_dir() as d:
        config = LogConfig(index_interval_bytes=interval)
        segment = Segment(d, BASE, config, _Clock())
        _, per_batch = _fill(segment, appends)
        expected, since = [], 0
        for position, size, _, last in per_batch:
            if since > interval:  # compare first, then count this batch
                expected.append((last, position))
                since = 0
            since += size
        index = segment.offset_index
        assert [tuple(index.entry(i)) for i in range(index.entries)] == expected
        times = segment.time_index
        # every time entry was written along with an offset entry, at its batch's offset
        assert times.entries <= len(expected)
        for i in range(times.entries):
            ts, offset = times.entry(i)
            assert ts == T0 + offset  # our batches' max timestamp is T0 + last offset
        written = [tuple(index.entry(i)) for i in range(index.entries)]
        written_times = [tuple(times.entry(i)) for i in range(times.entries)]
        assert recover_segment(segment) == 0
        assert [tuple(index.entry(i)) for i in range(index.entries)] == written
        assert [tuple(times.entry(i)) for i in range(times.entries)][: len(written_times)] == (
            written_times
        )
        segment.close()


@pytest.mark.spec("INDEX-5", "LOG-3")
@given(appends=appends_strategy, interval=st.sampled_from([0, 64, 300, 1000]))
def test_translate_offset_finds_the_containing_batch_within_the_scan_bound(appends, interval):
    with temp_dir() as d:
        segment = Segment(d, BASE, LogConfig(index_interval_bytes=interval), _Clock())
        _, per_batch = _fill(segment, appends)
        largest_batch = max(size for _, size, _, _ in per_batch)
        for position, size, base, last in per_batch:
            for offset in {base, (base + last) // 2, last}:
                found = segment.translate_offset(offset)
                assert (found.position, found.size, found.base_offset) == (position, size, base)
                scan_start = segment.offset_index.lookup(offset).position
                assert 0 <= found.position - scan_start <= interval + largest_batch
        assert segment.translate_offset(per_batch[-1][3] + 1) is None
        segment.close()


@pytest.mark.spec("LOG-3", "LOG-6")
def test_segment_read_starts_at_the_batch_holding_the_offset(tmp_path, clock):
    segment = Segment(tmp_path, BASE, LogConfig(index_interval_bytes=50), clock)
    _, batches = _fill(segment, [[4]] * 10)
    mid = batches[3][2] + 2  # inside the fourth batch
    piece = segment.read(mid, 10_000)
    assert piece.position == batches[3][0]
    assert headers(piece.read_bytes())[0].base_offset == batches[3][2]
    assert piece.next_offset == batches[-1][3] + 1
    # a limit that ends inside a batch stops before it: whole batches only
    piece = segment.read(mid, batches[3][1] + batches[4][1] + 5)
    assert [h.base_offset for h in headers(piece.read_bytes())] == [batches[3][2], batches[4][2]]
    assert piece.next_offset == batches[5][2]
    # too small for one batch: empty unless min_one_batch
    assert segment.read(mid, 10).length == 0
    assert segment.read(mid, 10, min_one_batch=True).length == batches[3][1]
    # max_position (a high watermark's batch) bounds the read
    piece = segment.read(batches[0][2], 10_000, max_position=batches[2][0])
    assert piece.length == batches[2][0] and piece.next_offset == batches[2][2]


@pytest.mark.spec("SEG-8")
def test_appends_lookups_and_reads_never_decode_records(tmp_path, clock, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a record was decoded")

    monkeypatch.setattr(batch_module, "decode_record", refuse)
    segment = Segment(tmp_path, BASE, LogConfig(index_interval_bytes=100), clock)
    _, batches = _fill(segment, [[3], [5, 2], [7]] * 20)
    for position, _, base, last in batches:
        assert segment.translate_offset(last).position == position
        assert segment.read(base, 1000).position == position
    assert segment.read_next_offset() == batches[-1][3] + 1
    with pytest.raises(AssertionError, match="decoded"):  # the guard itself works
        segment.find_offset_by_timestamp(T0 + BASE + 5, BASE)


@pytest.mark.spec("SEG-7", "TIDX-4")
def test_inactive_segment_indexes_are_trimmed_with_a_final_time_entry(tmp_path, clock):
    config = LogConfig(index_interval_bytes=200, segment_index_bytes=4096)
    segment = Segment(tmp_path, BASE, config, clock)
    _fill(segment, [[5]] * 30)
    assert os.path.getsize(segment.offset_index.path) == 4096
    segment.on_become_inactive()
    assert os.path.getsize(segment.offset_index.path) == segment.offset_index.entries * 8
    assert os.path.getsize(segment.time_index.path) == segment.time_index.entries * 12
    last_offset = segment.next_offset - 1
    assert segment.time_index.last_entry() == (T0 + last_offset, last_offset)


class _Clock:
    def milliseconds(self) -> int:
        return T0


@pytest.mark.spec("LOG-6", "INDEX-5")
@given(data=st.data())
def test_long_reads_end_at_the_last_whole_batch_within_the_limit(data):
    sizes = data.draw(st.lists(st.integers(1, 40), min_size=80, max_size=120), label="sizes")
    with temp_dir() as d:
        segment = Segment(d, BASE, LogConfig(index_interval_bytes=4096), _Clock())
        offset, batches = BASE, []
        for size in sizes:  # batches of 1..40 records of 60 bytes: up to ~3 KiB each
            raw = make_batch(size, base_offset=offset, value_size=60)
            batches.append((segment.size, len(raw), offset, offset + size - 1))
            segment.append(raw)
            offset += size
        for _ in range(10):
            k = data.draw(st.integers(0, len(batches) // 3), label="first batch")
            position, size, base, last = batches[k]
            rest = segment.size - position
            max_size = data.draw(  # short reads, and long ones ending inside the segment
                st.one_of(st.integers(0, 3000), st.integers(rest // 2, rest + 10)),
                label="max_size",
            )
            piece = segment.read(data.draw(st.integers(base, last)), max_size, min_one_batch=True)
            limit = position + max(max_size, size)
            included = [b for b in batches[k:] if b[0] + b[1] <= limit]
            assert (piece.position, piece.length) == (position, sum(b[1] for b in included))
            assert piece.next_offset == included[-1][3] + 1
            assert [h.base_offset for h in headers(piece.read_bytes())] == [b[2] for b in included]
        segment.close()

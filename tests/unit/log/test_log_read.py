"""Reading the log: containing batch, no skips, bounds, sizes, timestamps, truncation
(LOG-2..LOG-7, LOG-13..LOG-16)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import OffsetOutOfRangeError
from kafka_ref.record.batch import RecordBatch, iter_batch_headers
from tests.unit.log.conftest import T0, headers, make_batch, open_log, read_everything, temp_dir

counts_strategy = st.lists(st.integers(1, 8), min_size=1, max_size=40)


def _filled(d, counts, **config):
    config.setdefault("segment_bytes", 600)
    config.setdefault("index_interval_bytes", 150)
    log = open_log(d, **config)
    spans = []
    for count in counts:
        info = log.append(make_batch(count))
        spans.append((info.first_offset, info.last_offset))
    return log, spans


@pytest.mark.spec("LOG-3", "LOG-6")
@given(counts=counts_strategy, max_bytes=st.integers(0, 2000))
def test_a_read_starts_with_the_batch_holding_the_offset(counts, max_bytes):
    with temp_dir() as d:
        log, _ = _filled(d, counts)
        for offset in range(log.log_end_offset):
            info = log.read(offset, max_bytes)
            data = info.read_bytes()
            found = [h for _, h in iter_batch_headers(data)]  # raises on a partial batch
            assert found[0].base_offset <= offset <= found[0].last_offset
            assert info.first_offset == found[0].base_offset
            assert len(data) <= max_bytes or len(found) == 1  # at least one, else within limit
        log.close()


@pytest.mark.spec("LOG-4", "LOG-16")
@given(counts=counts_strategy, max_bytes=st.integers(1, 1500))
def test_chained_reads_see_every_batch_once(counts, max_bytes):
    with temp_dir() as d:
        log, spans = _filled(d, counts)
        seen = [(h.base_offset, h.last_offset) for h, _ in read_everything(log, max_bytes)]
        assert seen == spans
        for offset in range(log.log_end_offset):  # binary search agrees with a linear scan
            holder = [s for s in log.segments if s.base_offset <= offset][-1]
            assert log.segment_for(offset) is holder
        log.close()


@pytest.mark.spec("LOG-5", "LOG-2")
def test_reads_at_and_outside_the_ends(tmp_path):
    log, _ = _filled(tmp_path, [3, 3, 3])
    info = log.read(9, 1000)
    assert (info.slices, info.next_offset, info.log_end_offset) == ([], 9, 9)
    for offset in (-1, 10, 100):
        with pytest.raises(OffsetOutOfRangeError):
            log.read(offset, 1000)
    log.delete_records_before(4)
    assert log.read(4, 1000).first_offset == 3  # the batch holding 4 starts at 3
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 1000)


@pytest.mark.spec("LOG-6")
def test_min_one_batch_returns_a_batch_larger_than_max_bytes(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(50, value_size=100))
    log.append(make_batch(1))
    info = log.read(0, 10)
    assert [h.base_offset for h in headers(info.read_bytes())] == [0]
    assert log.read(0, 10, min_one_batch=False).slices == []


@pytest.mark.spec("LOG-7")
@given(counts=counts_strategy, data=st.data())
def test_reads_stop_before_max_offset(counts, data):
    with temp_dir() as d:
        log, spans = _filled(d, counts)
        boundaries = [first for first, _ in spans] + [log.log_end_offset]
        hw = data.draw(st.sampled_from(boundaries))
        for offset in range(log.log_end_offset):
            info = log.read(offset, 10_000, max_offset=hw)
            batches = headers(info.read_bytes())
            assert all(h.last_offset < hw for h in batches)
            if offset < hw:  # everything from the holding batch up to hw, in one read
                holder = next(s for s in spans if s[0] <= offset <= s[1])
                assert batches[0].base_offset == holder[0]
                assert info.next_offset == hw
            else:
                assert batches == []
        log.close()


@pytest.mark.spec("LOG-7")
def test_a_batch_straddling_max_offset_is_not_returned(tmp_path):
    log, _ = _filled(tmp_path, [3, 3, 3])
    info = log.read(0, 10_000, max_offset=7)  # 7 lies inside the batch 6..8
    assert [h.base_offset for h in headers(info.read_bytes())] == [0, 3]


@pytest.mark.spec("LOG-15")
@given(
    stamps=st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=5), min_size=1, max_size=9),
    target=st.integers(-100, 5200),
)
def test_offset_for_timestamp_is_the_first_record_at_or_after(stamps, target):
    from kafka_ref.record.batch import build_batch
    from kafka_ref.record.record import Record

    with temp_dir() as d:
        log = open_log(d, segment_bytes=500, index_interval_bytes=60)
        records = []
        for group in stamps:  # timestamps that need not increase
            info = log.append(build_batch([Record(b"k", b"v", timestamp=T0 + t) for t in group]))
            records += [(info.first_offset + i, T0 + t) for i, t in enumerate(group)]
        want = next(((o, t) for o, t in records if t >= T0 + target), None)
        got = log.offset_for_timestamp(T0 + target)
        assert (got and (got.offset, got.timestamp)) == (want or None)
        assert log.offset_for_timestamp(-2).offset == 0
        assert log.offset_for_timestamp(-1).offset == log.log_end_offset
        best = max(records, key=lambda r: r[1])  # the first record with the largest (KIP-734)
        found = log.offset_for_timestamp(-3)
        assert (found.offset, found.timestamp) == best
        log.close()


@pytest.mark.spec("LOG-15")
def test_offset_for_timestamp_respects_the_log_start_and_log_append_time(tmp_path, clock):
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    for step in range(4):
        clock.set(T0 + 100 * step)
        log.append(make_batch(3, ts=0))
    got = log.offset_for_timestamp(T0 + 150)
    assert (got.offset, got.timestamp) == (6, T0 + 200)
    log.delete_records_before(7)
    assert log.offset_for_timestamp(T0 + 150).offset == 7
    assert log.offset_for_timestamp(T0 + 301) is None
    first = RecordBatch(log.read(7, 100).read_bytes())
    assert [r.timestamp for r in first.records()] == [T0 + 200] * 3


@pytest.mark.spec("LOG-13")
@given(counts=counts_strategy, data=st.data())
def test_truncation_removes_whole_batches_from_the_target(counts, data):
    with temp_dir() as d:
        log, spans = _filled(d, counts)
        target = data.draw(st.integers(0, log.log_end_offset + 2))
        before = read_everything(log)
        log.truncate_to(target)
        kept = [(h.base_offset, h.last_offset) for h, _ in read_everything(log)]
        assert kept == [s for s in spans if s[1] < target]
        assert [b for _, b in read_everything(log)] == [b for _, b in before][: len(kept)]
        assert log.log_end_offset == (kept[-1][1] + 1 if kept else 0)
        assert log.log_end_offset <= max(target, 0) or target >= spans[-1][1] + 1
        assert log.log_start_offset <= log.log_end_offset
        info = log.append(make_batch(2))  # appends continue densely from the new end
        assert info.first_offset == (kept[-1][1] + 1 if kept else 0)
        bases = [s.base_offset for s in log.segments]
        assert bases == sorted(set(bases))
        log.close()


@pytest.mark.spec("LOG-13")
def test_truncation_below_the_first_segment_restarts_the_log(tmp_path):
    log, _ = _filled(tmp_path, [3] * 10, segment_bytes=300)
    log.delete_records_before(12)
    first = log.segments[0].base_offset
    assert first > 0
    assert not log.truncate_to(log.log_end_offset)
    log.truncate_to(first - 1)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (first - 1,) * 2 + (1,)
    assert log.append(make_batch(1)).first_offset == first - 1


@pytest.mark.spec("LOG-14")
def test_delete_records_raises_the_log_start_and_drops_old_segments(tmp_path):
    log, _ = _filled(tmp_path, [3] * 12, segment_bytes=300)
    bases = [s.base_offset for s in log.segments]
    assert not log.delete_records_before(0)
    log.delete_records_before(bases[2] + 1)
    assert log.log_start_offset == bases[2] + 1
    assert [s.base_offset for s in log.segments] == bases[2:]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(bases[2], 100)
    assert not log.delete_records_before(5)  # never down
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(log.log_end_offset + 1)
    log.delete_records_before(log.log_end_offset)
    assert log.segments == (log.active_segment,)  # the active segment stays
    assert log.read(log.log_end_offset, 100).slices == []
    with pytest.raises(ValueError):
        log.delete_segments([log.active_segment])


@pytest.mark.spec("LOG-3", "LOG-4")
def test_reads_across_gaps_left_by_compaction(tmp_path):
    log, _ = _filled(tmp_path, [2] * 6, segment_bytes=10_000)
    log.roll()
    log.append(make_batch(2))  # 12..13 in the new active segment
    batches = read_everything(log)
    cleaned = log.new_cleaned_segment(0)
    for header, raw in batches[:6]:
        if header.base_offset in (0, 6):  # the cleaner kept only these two batches
            cleaned.append(raw)
    log.replace_segments([cleaned], [log.segments[0]])
    assert [h.base_offset for h, _ in read_everything(log)] == [0, 6, 12]
    for offset, first in [(1, 0), (2, 6), (5, 6), (7, 6), (8, 12), (11, 12)]:
        assert log.read(offset, 10_000).first_offset == first
    log.truncate_to(12)  # now nothing at all remains in [8, 12)
    info = log.read(8, 10_000)
    assert (info.slices, info.next_offset) == ([], 12)

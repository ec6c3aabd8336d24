"""Appending to the log: offsets, validation, limits, rolls, flushes (LOG-1, LOG-2,
LOG-8..LOG-12, SEG-2..SEG-6, DUR-9)."""

import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    MessageTooLargeError,
)
from kafka_ref.log import log as log_module
from kafka_ref.record.batch import (
    ATTR_TIMESTAMP_TYPE,
    TimestampType,
    build_batch,
    validate_batch,
)
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, headers, make_batch, open_log, read_everything, temp_dir


@pytest.mark.spec("LOG-1", "LOG-2")
@given(counts=st.lists(st.integers(1, 20), min_size=1, max_size=60))
def test_offsets_are_dense_from_the_log_end_offset(counts):
    with temp_dir() as d:
        log = open_log(d, segment_bytes=700, index_interval_bytes=100)
        assert (log.log_start_offset, log.log_end_offset) == (0, 0)
        expected = 0
        for count in counts:
            info = log.append(make_batch(count))
            assert (info.first_offset, info.last_offset) == (expected, expected + count - 1)
            assert info.record_count == count and info.batch_count == 1
            expected += count
            assert log.log_end_offset == expected
            assert log.log_start_offset <= log.log_end_offset
        batches = [h for h, _ in read_everything(log)]
        assert [h.base_offset for h in batches] == [sum(counts[:i]) for i in range(len(counts))]
        log.close()


@pytest.mark.spec("SEG-2")
@given(counts=st.lists(st.integers(1, 20), min_size=1, max_size=60))
def test_each_segment_holds_whole_batches_within_its_offset_range(counts):
    with temp_dir() as d:
        log = open_log(d, segment_bytes=700, index_interval_bytes=100)
        for count in counts:
            log.append(make_batch(count))
        segments = log.segments
        held = []
        for i, segment in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
            found = headers(segment.log.read(0, segment.size))
            assert sum(h.size for h in found) == segment.size  # whole batches, end to end
            for h in found:
                assert segment.base_offset <= h.base_offset and h.last_offset < upper
            held += [h.records_count for h in found]
        assert held == counts  # every batch whole, in exactly one segment
        log.close()


@pytest.mark.spec("LOG-1")
def test_several_batches_in_one_append_get_consecutive_offsets(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2))
    info = log.append(make_batch(3) + make_batch(4) + make_batch(1))
    assert (info.first_offset, info.last_offset, info.batch_count) == (2, 9, 3)
    assert [(h.base_offset, h.last_offset) for h, _ in read_everything(log)] == [
        (0, 1),
        (2, 4),
        (5, 8),
        (9, 9),
    ]


@pytest.mark.spec("LOG-10")
def test_offsets_and_epoch_are_stamped_in_place_and_nothing_else_changes(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(3))
    sent = make_batch(5, value_size=40)
    log.append(sent, leader_epoch=7)
    mutable = bytearray(make_batch(2))
    log.append(mutable, leader_epoch=7)
    assert struct.unpack_from(">q", mutable, 0)[0] == 8  # a writable buffer is stamped in place
    _, (h1, stored1), (_, stored2) = read_everything(log)
    assert sent[:8] == bytes(8)  # the caller's immutable bytes are left alone
    assert (h1.base_offset, h1.partition_leader_epoch) == (3, 7)
    assert stored1[8:12] == sent[8:12] and stored1[16:] == sent[16:]
    assert stored2 == bytes(mutable)
    validate_batch(stored1)  # the CRC still holds


@pytest.mark.spec("LOG-8")
def test_a_corrupt_batch_is_rejected_and_nothing_is_written(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2))
    size_before = log.size_in_bytes
    good = make_batch(3)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    wrong_count = bytearray(good)
    struct.pack_into(">i", wrong_count, 57, 2)
    cases = [
        (good + bytes(bad_crc), CorruptRecordError),  # the second batch is bad: all rejected
        (good[:-4], CorruptRecordError),  # torn
        (good + good[:30], CorruptRecordError),  # trailing partial batch
        (bytes(wrong_magic), InvalidRecordError),
        (_recrc(wrong_count), InvalidRecordError),
    ]
    for data, error in cases:
        with pytest.raises(error):
            log.append(data)
        assert (log.log_end_offset, log.size_in_bytes) == (2, size_before)
    assert log.append(b"").first_offset == -1  # empty: nothing appended
    assert log.log_end_offset == 2


def _recrc(buf: bytearray) -> bytes:
    from kafka_ref.record.batch import compute_crc

    struct.pack_into(">I", buf, 17, compute_crc(buf, 0, len(buf)))
    return bytes(buf)


@pytest.mark.spec("LOG-9")
def test_a_batch_over_max_message_bytes_is_rejected(tmp_path):
    big = make_batch(10, value_size=100)
    log = open_log(tmp_path, max_message_bytes=len(big) - 1)
    with pytest.raises(MessageTooLargeError) as err:
        log.append(big)
    assert err.value.code == ErrorCode.MESSAGE_TOO_LARGE and log.log_end_offset == 0
    log.append(make_batch(1))
    info = log.append(build_batch([Record(b"k", b"v" * 1000)], base_offset=1), assign_offsets=False)
    assert info.first_offset == 1  # a follower takes what its leader accepted


@pytest.mark.spec("LOG-11")
def test_log_append_time_stamps_the_brokers_clock(tmp_path, clock):
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    clock.set(T0 + 123_456)
    info = log.append(make_batch(3, ts=5))
    assert info.log_append_time == T0 + 123_456 == info.max_timestamp
    ((header, stored),) = read_everything(log)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.attributes & ATTR_TIMESTAMP_TYPE and header.max_timestamp == T0 + 123_456
    validate_batch(stored)
    assert open_log(tmp_path / "b", clock).append(make_batch(1, ts=5)).log_append_time == -1


@pytest.mark.spec("LOG-12")
def test_follower_appends_keep_offsets_that_must_increase(tmp_path):
    log = open_log(tmp_path)
    leader_batches = make_batch(3, base_offset=0) + make_batch(2, base_offset=3)
    info = log.append(leader_batches, leader_epoch=9, assign_offsets=False)
    assert (info.first_offset, info.last_offset) == (0, 4)
    overlapping = make_batch(2, base_offset=6) + make_batch(1, base_offset=7)
    for bad in (make_batch(1, base_offset=4), overlapping):
        with pytest.raises(InvalidRecordError):
            log.append(bad, assign_offsets=False)
        assert log.log_end_offset == 5
    log.append(make_batch(2, base_offset=10), assign_offsets=False)  # a gap (compaction) is fine
    assert log.log_end_offset == 12
    assert [h.partition_leader_epoch for h, _ in read_everything(log)] == [-1, -1, -1]


@pytest.mark.spec("LOG-12")
def test_a_stale_follower_append_is_refused_as_stale_before_its_size(tmp_path):
    """Kafka checks a follower append's offsets before its size (UnifiedLog.append): a batch
    below the log end that also exceeds segment.bytes is INVALID_RECORD, not
    RECORD_LIST_TOO_LARGE."""
    small = make_batch(1, base_offset=0)
    log = open_log(tmp_path, segment_bytes=len(small) + 10)
    log.append(small, assign_offsets=False)
    big_and_stale = make_batch(3, base_offset=0)
    assert len(big_and_stale) > log.config.segment_bytes
    with pytest.raises(InvalidRecordError):
        log.append(big_and_stale, assign_offsets=False)
    assert log.log_end_offset == 1


@pytest.mark.spec("SEG-3")
def test_roll_before_exceeding_segment_bytes(tmp_path):
    one = len(make_batch(2))
    log = open_log(tmp_path, segment_bytes=3 * one)
    for _ in range(10):
        log.append(make_batch(2))
    assert [s.base_offset for s in log.segments] == [0, 6, 12, 18]
    assert all(s.size <= 3 * one for s in log.segments)
    assert [s.size for s in log.segments[:-1]] == [3 * one] * 3


@pytest.mark.spec("SEG-4")
def test_roll_after_segment_ms_by_batch_timestamps(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append(make_batch(1, ts=T0))
    log.append(make_batch(1, ts=T0 + 1000))  # exactly segment.ms: no roll
    clock.advance(10**6)  # the wall clock does not matter while batches carry timestamps
    log.append(make_batch(1, ts=T0 + 500))
    assert len(log.segments) == 1
    log.append(make_batch(1, ts=T0 + 1001))
    assert [s.base_offset for s in log.segments] == [0, 3]


@pytest.mark.spec("SEG-4")
def test_roll_after_segment_ms_by_the_clock_without_timestamps(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append(make_batch(1, ts=-1))
    clock.advance(1000)
    log.append(make_batch(1, ts=-1))
    assert len(log.segments) == 1
    clock.advance(1)
    log.append(make_batch(1, ts=-1))
    assert [s.base_offset for s in log.segments] == [0, 2]
    clock.advance(5000)
    log.roll()  # an explicit roll of a non-empty segment
    log.roll()  # rolling an empty active segment again is a no-op
    assert [s.base_offset for s in log.segments] == [0, 2, 3]


@pytest.mark.spec("SEG-5")
def test_roll_when_an_index_is_full_or_offsets_would_overflow(tmp_path):
    log = open_log(tmp_path, segment_index_bytes=24, index_interval_bytes=0)
    for _ in range(8):
        log.append(make_batch(1))
    for segment in log.segments[:-1]:
        assert segment.offset_index.entries <= 2  # the time index (2 slots, 1 kept) filled
    assert len(log.segments) >= 3
    other = open_log(tmp_path / "overflow")
    other.append(make_batch(1, base_offset=0), assign_offsets=False)
    other.append(make_batch(1, base_offset=2**31), assign_offsets=False)
    assert [s.base_offset for s in other.segments] == [0, 2**31]


@pytest.mark.spec("SEG-5")
def test_roll_when_the_offset_index_is_full(tmp_path, caplog):
    """Constant timestamps never add a time index entry after the first, so the offset index
    (6 slots of segment.index.bytes=48, an entry at every batch but a segment's first) is
    the one that fills: the segment rolls after 7 batches, for that reason."""
    log = open_log(tmp_path, segment_index_bytes=48, index_interval_bytes=0)
    with caplog.at_level("INFO", logger="kafka_ref.log.log"):
        for _ in range(15):
            log.append(make_batch(1, ts=T0))
    reasons = [r.args[2] for r in caplog.records if r.msg.endswith("rolled segment %d (%s)")]
    assert reasons == ["offset index full"] * 2
    assert [s.base_offset for s in log.segments] == [0, 7, 14]
    for segment in log.segments[:-1]:
        assert segment.offset_index.entries == 6 and segment.time_index.entries == 1


@pytest.mark.spec("SEG-6")
def test_an_append_larger_than_a_segment_is_rejected(tmp_path):
    data = make_batch(2) * 1
    log = open_log(tmp_path, segment_bytes=len(data) + len(data) // 2)
    with pytest.raises(MessageTooLargeError) as err:
        log.append(make_batch(2) + make_batch(2))
    assert err.value.code == ErrorCode.RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0


@pytest.mark.spec("DUR-9")
def test_flush_messages_and_flush_ms_drive_fsync_and_the_recovery_point(
    tmp_path, clock, monkeypatch
):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    log = open_log(tmp_path / "m", clock, flush_messages=5)
    log.append(make_batch(3))
    assert (log.recovery_point, synced) == (0, [])
    log.append(make_batch(2))
    assert log.recovery_point == 5 and synced
    timed = open_log(tmp_path / "t", clock, flush_ms=1000)
    synced.clear()
    timed.append(make_batch(1))
    clock.advance(999)
    timed.append(make_batch(1))
    assert (timed.recovery_point, synced) == (0, [])
    clock.advance(1)
    timed.append(make_batch(1))
    assert timed.recovery_point == 3 and synced
    assert not timed.maybe_flush()  # nothing new to flush


@pytest.mark.spec("DUR-9")
def test_rolled_segments_are_flushed_by_the_periodic_task(tmp_path, monkeypatch):
    log = open_log(tmp_path, segment_bytes=len(make_batch(1)) * 2)
    for _ in range(5):
        log.append(make_batch(1))
    assert log.recovery_point == 0
    assert log.maybe_flush()
    assert log.recovery_point == log.active_segment.base_offset == 4
    monkeypatch.setattr(log_module, "fsync_directory", lambda path: None)
    log.flush()
    assert log.recovery_point == log.log_end_offset == 5


@pytest.mark.spec("SEG-9")
def test_one_append_that_would_overflow_the_index_rolls_instead_of_dropping_entries(tmp_path):
    """segment.index.bytes=48: 6 offset entries. One append of five batches (an entry at every
    batch but a segment's first) after five single appends would need 5 entries where 2
    are left: the log rolls first, and every batch but each segment's first has its entry."""
    log = open_log(tmp_path, segment_index_bytes=48, index_interval_bytes=0)
    for _ in range(5):
        log.append(make_batch(1, ts=T0))
    assert log.active_segment.offset_index.entries == 4
    log.append(b"".join(make_batch(1, ts=T0) for _ in range(5)))
    assert [s.base_offset for s in log.segments] == [0, 5]
    assert [s.offset_index.entries for s in log.segments] == [4, 4]
    log.append(b"".join(make_batch(1, ts=T0) for _ in range(8)))  # more than a segment holds
    assert [s.base_offset for s in log.segments] == [0, 5, 10]
    assert log.segments[-1].offset_index.entries == 6, "a new segment indexes what fits"
    assert log.log_end_offset == 18

"""Retention: deleting whole old segments by time, size and log start offset (RET-1..RET-8)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.config import LONG_MAX, LogConfig
from kafka_ref.errors import OffsetOutOfRangeError
from kafka_ref.log.log import Log
from kafka_ref.log.log_read import EARLIEST_TIMESTAMP
from kafka_ref.log.retention import LogRetention
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, read_everything, segment_files, temp_dir

HOUR = 3_600_000


def build(path, segments: list[list[int]], clock: ManualClock | None = None, **config) -> Log:
    """A log whose segments hold records with these timestamps; the last list is the
    active segment. Every record is its own batch with a 20-byte value. Timestamps may lie
    far ahead of the clock (message.timestamp.after.max.ms unbounded, as before Kafka 4)."""
    config.setdefault("message_timestamp_after_max_ms", LONG_MAX)
    log = Log.open(path, LogConfig(**config), clock or ManualClock(T0))
    for i, timestamps in enumerate(segments):
        if i:
            log.roll()
        for ts in timestamps:
            log.append(build_batch([Record(b"k", b"v" * 20, timestamp=ts)]))
    return log


def bases(log: Log) -> list[int]:
    return [s.base_offset for s in log.segments]


@pytest.mark.spec("RET-1")
def test_retention_never_deletes_the_active_segment(tmp_path):
    log = build(tmp_path / "t-0", [[T0], [T0 + 1], [T0 + 2]], retention_ms=HOUR)
    active = log.active_segment
    result = LogRetention.run(log, now=T0 + 100 * HOUR)  # every record has expired
    assert log.segments == (active,)
    assert result.segments_deleted == 2
    assert [d.base_offset for d in result.deleted] == [0, 1]
    assert log.log_end_offset == 3 and active.size > 0
    # A log of one (active) segment keeps it, by time and by size.
    again = LogRetention.run(log, now=T0 + 1000 * HOUR)
    assert again.segments_deleted == 0 and log.segments == (active,)


@pytest.mark.spec("RET-1")
def test_retention_bytes_zero_keeps_the_active_segment(tmp_path):
    log = build(tmp_path / "t-0", [[T0], [T0], [T0]], retention_bytes=0, retention_ms=-1)
    LogRetention.run(log, now=T0)
    assert bases(log) == [2]


@pytest.mark.spec("RET-1", "RET-2")
def test_retention_ms_stops_at_the_first_segment_that_must_stay(tmp_path):
    # segment 0 expired, segment 1 young (a new record), segment 2 expired again, active.
    log = build(tmp_path / "t-0", [[T0], [T0, T0 + 5 * HOUR], [T0], [T0]], retention_ms=HOUR)
    result = LogRetention.run(log, now=T0 + 5 * HOUR + HOUR)  # segment 1: exactly HOUR old
    assert [d.base_offset for d in result.deleted] == [0]
    assert bases(log) == [1, 3, 4]
    result = LogRetention.run(log, now=T0 + 6 * HOUR + 1)  # one ms more: it has expired
    assert [d.base_offset for d in result.deleted] == [1, 3]
    assert {d.reason for d in result.deleted} == {"retention.ms"}


@pytest.mark.spec("RET-2")
def test_retention_ms_uses_the_largest_timestamp_not_the_first(tmp_path):
    log = build(tmp_path / "t-0", [[T0 - 10 * HOUR, T0], [T0]], retention_ms=HOUR)
    LogRetention.run(log, now=T0 + HOUR)  # the oldest record expired, the newest did not
    assert bases(log) == [0, 2]
    LogRetention.run(log, now=T0 + HOUR + 1)
    assert bases(log) == [2]


@pytest.mark.spec("RET-2")
def test_future_timestamps_and_disabled_retention_ms_keep_segments(tmp_path):
    log = build(tmp_path / "a-0", [[T0 + 50 * HOUR], [T0]], retention_ms=HOUR)
    assert LogRetention.run(log, now=T0 + 10 * HOUR).segments_deleted == 0
    log = build(tmp_path / "b-0", [[0], [T0]], retention_ms=-1)
    assert LogRetention.run(log, now=T0 + 1000 * HOUR).segments_deleted == 0


@pytest.mark.spec("RET-3")
def test_retention_bytes_keeps_at_least_retention_bytes(tmp_path):
    log = build(tmp_path / "t-0", [[T0]] * 5, retention_ms=-1)
    sizes = [s.size for s in log.segments]
    total = sum(sizes)
    log.config = LogConfig(retention_ms=-1, retention_bytes=total - sizes[0] - sizes[1] + 1)
    result = LogRetention.run(log, now=T0)
    assert [d.base_offset for d in result.deleted] == [0]  # a second would leave too little
    assert result.bytes_freed == sizes[0]
    log.config = LogConfig(retention_ms=-1, retention_bytes=total - sizes[0] - sizes[1])
    result = LogRetention.run(log, now=T0)
    assert [d.base_offset for d in result.deleted] == [1]
    assert log.size_in_bytes == total - sizes[0] - sizes[1]
    assert {d.reason for d in result.deleted} == {"retention.bytes"}


@pytest.mark.spec("RET-3")
def test_retention_bytes_off_or_not_reached_deletes_nothing(tmp_path):
    log = build(tmp_path / "t-0", [[T0]] * 3, retention_ms=-1, retention_bytes=-1)
    assert LogRetention.run(log, now=T0).segments_deleted == 0
    log.config = LogConfig(retention_ms=-1, retention_bytes=log.size_in_bytes)
    assert LogRetention.run(log, now=T0).segments_deleted == 0


def _reopen_with_start(path, start: int, **config) -> Log:
    """Open a closed log with a checkpointed log start offset (as the LogManager does)."""
    return Log.open(path, LogConfig(**config), ManualClock(T0), log_start_offset=start)


@pytest.mark.spec("RET-4", "RET-6")
def test_segments_below_the_log_start_offset_go_even_when_compacted(tmp_path):
    path = tmp_path / "t-0"
    build(path, [[T0, T0], [T0, T0], [T0, T0], [T0]]).close()
    log = _reopen_with_start(path, 5, cleanup_policy=("compact",), retention_ms=1)
    assert log.log_start_offset == 5 and bases(log) == [0, 2, 4, 6]
    result = LogRetention.run(log, now=T0 + 100 * HOUR)  # retention.ms does not apply
    assert [d.base_offset for d in result.deleted] == [0, 2]
    assert {d.reason for d in result.deleted} == {"log-start-offset"}
    assert bases(log) == [4, 6] and log.log_start_offset == 5


@pytest.mark.spec("RET-5")
def test_log_start_offset_rises_to_the_first_remaining_segment(tmp_path):
    log = build(tmp_path / "t-0", [[T0, T0], [T0, T0], [T0 + HOUR], [T0]], retention_ms=HOUR)
    before = read_everything(log)
    LogRetention.run(log, now=T0 + HOUR + 1)
    assert log.log_start_offset == 4 == bases(log)[0]
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP).offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 1 << 20)
    assert [h.base_offset for h, _ in read_everything(log)] == [4, 5]
    assert read_everything(log) == before[4:]


@pytest.mark.spec("RET-5")
def test_log_start_offset_never_moves_down(tmp_path):
    path = tmp_path / "t-0"
    build(path, [[T0, T0], [T0, T0], [T0 + 10 * HOUR, T0], [T0]]).close()
    log = _reopen_with_start(path, 5, retention_ms=HOUR)
    result = LogRetention.run(log, now=T0 + 2 * HOUR)
    assert [d.base_offset for d in result.deleted] == [0, 2]
    assert bases(log) == [4, 6] and log.log_start_offset == 5  # not down to 4


@pytest.mark.spec("RET-6")
def test_time_and_size_retention_only_under_delete(tmp_path):
    old = [[T0], [T0], [T0]]
    compact, both = ("compact",), ("compact", "delete")
    log = build(tmp_path / "a-0", old, cleanup_policy=compact, retention_ms=1, retention_bytes=0)
    assert LogRetention.run(log, now=T0 + HOUR).segments_deleted == 0
    log = build(tmp_path / "b-0", old, cleanup_policy=both, retention_ms=1)
    assert LogRetention.run(log, now=T0 + HOUR).segments_deleted == 2


@pytest.mark.spec("RET-7")
def test_retention_stops_at_the_high_watermark(tmp_path):
    log = build(tmp_path / "t-0", [[T0], [T0], [T0], [T0]], retention_ms=1)
    result = LogRetention.run(log, now=T0 + HOUR, high_watermark=1)  # segment 1 holds 1
    assert [d.base_offset for d in result.deleted] == [0]
    result = LogRetention.run(log, now=T0 + HOUR, high_watermark=2)
    assert [d.base_offset for d in result.deleted] == [1]
    assert log.log_start_offset == 2


@pytest.mark.spec("RET-8")
def test_a_deleted_segment_stays_readable_by_an_inflight_read(tmp_path):
    path = tmp_path / "t-0"
    log = build(path, [[T0, T0], [T0]], retention_ms=HOUR)
    inflight = log.read(0, 1 << 20).slices[0]  # a fetch holding a slice of segment 0
    expected = inflight.read_bytes()
    assert "00000000000000000000.log" in segment_files(path)
    LogRetention.run(log, now=T0 + 2 * HOUR)
    assert not [n for n in segment_files(path) if n.startswith("00000000000000000000")]
    assert not [n for n in os.listdir(path) if n.endswith(".deleted")]
    assert inflight.read_bytes() == expected  # the unlinked file is still readable
    with open(tmp_path / "socket", "wb") as out:  # and sendfile still sends it whole
        sent = os.sendfile(out.fileno(), inflight.file.fileno(), inflight.position, len(expected))
    assert sent == len(expected) and (tmp_path / "socket").read_bytes() == expected
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1 << 20)


def _model(segments, sizes, now, retention_ms, retention_bytes, delete):
    """The expected number of deleted segments, computed from the rules alone."""
    largest = [max(ts) for ts in segments]
    kept = list(range(len(segments)))
    if delete and retention_bytes >= 0 and sum(sizes) >= retention_bytes:
        excess = sum(sizes) - retention_bytes
        while len(kept) > 1 and excess - sizes[kept[0]] >= 0:
            excess -= sizes[kept.pop(0)]
    if delete and retention_ms >= 0:
        while len(kept) > 1 and now - largest[kept[0]] > retention_ms:
            kept.pop(0)
    return len(segments) - len(kept)


@pytest.mark.spec("RET-1", "RET-2", "RET-3", "RET-5")
@given(
    segments=st.lists(
        st.lists(st.integers(0, 10 * HOUR), min_size=1, max_size=3), min_size=1, max_size=6
    ),
    now=st.integers(0, 12 * HOUR),
    retention_ms=st.one_of(st.just(-1), st.integers(0, 10 * HOUR)),
    retention_bytes=st.one_of(st.just(-1), st.integers(0, 2000)),
    delete=st.booleans(),
)
def test_retention_matches_the_model(segments, now, retention_ms, retention_bytes, delete):
    policy = ("delete",) if delete else ("compact",)
    with temp_dir() as d:
        log = build(
            os.path.join(d, "t-0"),
            segments,
            cleanup_policy=policy,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
        )
        sizes = [s.size for s in log.segments]
        before = read_everything(log)
        offsets = [0]
        for ts in segments:
            offsets.append(offsets[-1] + len(ts))
        result = LogRetention.run(log, now=now)
        expected = _model(segments, sizes, now, retention_ms, retention_bytes, delete)
        assert result.segments_deleted == expected
        assert len(log.segments) == len(segments) - expected >= 1
        assert log.log_start_offset == offsets[expected] == bases(log)[0]
        assert result.bytes_freed == sum(sizes[:expected])
        assert read_everything(log) == before[offsets[expected] :]  # a prefix went, no more
        log.close()

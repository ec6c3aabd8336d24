"""Log compaction: the offset map, the cleaner, the checkpoint, the swap (COMPACT-1..13)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.cluster.topic_requests import check_configs
from kafka_ref.config import LogConfig
from kafka_ref.errors import InvalidConfigError
from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.log.cleaner import group_segments_by_size
from kafka_ref.log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT, LogCleaner, cleanable_offsets
from kafka_ref.log.log import Log
from kafka_ref.log.offset_map import OffsetMapFullError, SkimpyOffsetMap
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.log.segment import Segment
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import (
    ATTR_DELETE_HORIZON,
    RecordBatch,
    TimestampType,
    build_batch,
    validate_batch,
)
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from tests.unit.log.conftest import T0, read_everything, temp_dir

COMPACT = ("compact",)
DAY = 86_400_000


def no_fsync():
    """These tests simulate a killed process, not a power cut: what is in the page cache
    survives, so fsync changes nothing here but the time (durability.md tests fsync)."""
    return mock.patch.object(os, "fsync", lambda fd: None)


class SimulatedCrash(BaseException):
    """A kill -9 in the middle of cleaning: not an Exception, so nothing cleans up."""


def open_log(path, clock: ManualClock, **config) -> Log:
    config.setdefault("cleanup_policy", COMPACT)
    return Log.open(path, LogConfig(**config), clock, producer_state=ProducerStateManager)


def produce(log: Log, clock: ManualClock, *pairs, leader_epoch: int = 0, **batch_args) -> None:
    """One batch of (key, value) records stamped with the clock's time."""
    now = clock.milliseconds()
    records = [Record(k, v, timestamp=now) for k, v in pairs]
    log.append(build_batch(records, **batch_args), leader_epoch=leader_epoch)


def batches(log: Log) -> list[RecordBatch]:
    return [RecordBatch(raw) for _, raw in read_everything(log)]


def contents(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the log start, by chained reads."""
    return [(r.offset, r.key, r.value) for b in batches(log) for r in b.records()]


def fold(records) -> dict:
    """What a consumer that applies the log in order ends with (a tombstone deletes)."""
    state = {}
    for _, key, value in records:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def clean(log: Log, clock: ManualClock, cleaner: LogCleaner | None = None, force=True):
    return (cleaner or LogCleaner()).clean(log, clock.milliseconds(), force=force)


def checkpoint(log: Log) -> int | None:
    return LogCleaner().checkpoint_of(log)


# ---------------------------------------------------------------------- the offset map
@pytest.mark.spec("COMPACT-1")
def test_offset_map_keeps_the_latest_offset_per_key():
    omap = SkimpyOffsetMap(memory=24 * 64)
    assert omap.slots == 64 and omap.latest_offset == -1
    for offset, key in enumerate([b"a", b"b", b"a", b"c", b"a"]):
        omap.put(key, offset)
    assert (omap.get(b"a"), omap.get(b"b"), omap.get(b"c"), omap.get(b"zz")) == (4, 1, 3, -1)
    assert len(omap) == 3 and omap.latest_offset == 4 and b"b" in omap
    omap.clear()
    assert len(omap) == 0 and omap.get(b"a") == -1 and omap.latest_offset == -1


@pytest.mark.spec("COMPACT-5")
def test_offset_map_has_a_fixed_capacity():
    omap = SkimpyOffsetMap(memory=24 * 8 + 5, load_factor=0.5)
    assert omap.slots == 8 and omap.max_desired_size == 4
    keys = [b"key-%d" % i for i in range(8)]
    for i, key in enumerate(keys):
        assert omap.is_full == (i >= 4)
        omap.put(key, i)
    assert omap.utilization == 1.0
    assert [omap.get(k) for k in keys] == list(range(8))  # every probe sequence resolves
    omap.put(keys[3], 99)  # an existing key can still be updated
    assert omap.get(keys[3]) == 99
    with pytest.raises(OffsetMapFullError):
        omap.put(b"one too many", 100)
    with pytest.raises(ValueError):
        SkimpyOffsetMap(memory=23)


# ---------------------------------------------------------------------- the worked example
def _worked_example(path, clock):
    log = open_log(path, clock)
    for key, value in [(b"a", b"a1"), (b"b", b"b1"), (b"a", b"a2")]:
        produce(log, clock, (key, value))
    log.roll()
    for key, value in [(b"c", b"c1"), (b"b", None), (b"a", b"a3")]:
        produce(log, clock, (key, value))
    log.roll()
    produce(log, clock, (b"d", b"d1"))
    return log


@pytest.mark.spec("COMPACT-1", "COMPACT-2", "COMPACT-11")
def test_the_worked_example(tmp_path):
    clock = ManualClock(T0)
    log = _worked_example(tmp_path / "t-0", clock)
    before = contents(log)
    result = clean(log, clock)
    assert result.cleaned and result.stats.end_offset == 6 == checkpoint(log)
    assert contents(log) == [(3, b"c", b"c1"), (4, b"b", None), (5, b"a", b"a3"), (6, b"d", b"d1")]
    assert fold(contents(log)) == fold(before) == {b"a": b"a3", b"c": b"c1", b"d": b"d1"}
    assert result.stats.records_removed == 3 and result.stats.bytes_freed > 0
    assert log.log_end_offset == 7 and log.log_start_offset == 0
    # Offsets survive a restart with full recovery (thinned batches validate).
    cleaned = contents(log)
    log.close()
    reopened = Log.open(
        tmp_path / "t-0",
        log.config,
        clock,
        clean_shutdown=False,
        producer_state=ProducerStateManager,
    )
    assert contents(reopened) == cleaned


@pytest.mark.spec("COMPACT-3")
def test_the_active_segment_is_never_compacted(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    produce(log, clock, (b"a", b"1"), (b"a", b"2"))
    assert not clean(log, clock).cleaned  # one segment: it is the active one
    log.roll()
    for value in (b"3", b"4", b"5"):
        produce(log, clock, (b"a", value))
    active = log.active_segment
    raw = active.log.read(0, active.size)
    result = clean(log, clock)
    assert result.to_clean.first_uncleanable_offset == active.base_offset == checkpoint(log)
    assert log.active_segment is active and active.log.read(0, active.size) == raw
    # a=2 is the latest *outside* the active segment; the three in it stay as written.
    assert contents(log) == [(1, b"a", b"2"), (2, b"a", b"3"), (3, b"a", b"4"), (4, b"a", b"5")]
    assert cleanable_offsets(log, None, clock.milliseconds()) == (0, active.base_offset)


@pytest.mark.spec("COMPACT-3")
def test_compaction_stops_below_the_high_watermark(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    for value in (b"1", b"2", b"3", b"4", b"5", b"6"):
        produce(log, clock, (b"a", value))
        if value in (b"2", b"4"):
            log.roll()
    produce(log, clock, (b"z", b"1"))  # segments 0-1, 2-3, 4-6 (active)
    result = LogCleaner().clean(log, clock.milliseconds(), force=True, max_offset=3)
    assert result.to_clean.first_uncleanable_offset == 2 == checkpoint(log)  # holder of 3
    assert [o for o, _, _ in contents(log)] == [1, 2, 3, 4, 5, 6]


# ---------------------------------------------------------------------- dirty ratio
@pytest.mark.spec("COMPACT-4")
def test_a_log_is_cleaned_only_above_the_dirty_ratio(tmp_path):
    clock = ManualClock(T0)
    log = _worked_example(tmp_path / "t-0", clock)
    clean(log, clock)
    clean_bytes = sum(s.size for s in log.segments[:-1])
    nothing = clean(log, clock, force=False)
    assert not nothing.cleaned and nothing.to_clean.cleanable_ratio == 0.0
    produce(log, clock, (b"a", b"a4"), (b"e", b"e1"))
    log.roll()
    produce(log, clock, (b"z", b"z1"))
    dirty_bytes = log.segments[-2].size
    ratio = dirty_bytes / (clean_bytes + dirty_bytes)
    cleaner = LogCleaner()
    log.config = dataclasses.replace(log.config, min_cleanable_dirty_ratio=ratio)
    result = clean(log, clock, cleaner, force=False)
    assert (result.to_clean.clean_bytes, result.to_clean.cleanable_bytes) == (
        clean_bytes,
        dirty_bytes,
    )
    assert result.to_clean.cleanable_ratio == pytest.approx(ratio)
    assert not result.cleaned and "dirty ratio" in result.reason  # not strictly greater
    log.config = dataclasses.replace(log.config, min_cleanable_dirty_ratio=ratio - 1e-6)
    assert clean(log, clock, cleaner, force=False).cleaned
    assert (5, b"a", b"a3") not in contents(log)


@pytest.mark.spec("COMPACT-4")
def test_a_log_without_compact_policy_is_never_cleaned(tmp_path):
    clock = ManualClock(T0)
    log = _worked_example(tmp_path / "t-0", clock)
    log.config = dataclasses.replace(log.config, cleanup_policy=("delete",))
    before = contents(log)
    result = clean(log, clock)
    assert not result.cleaned and contents(log) == before and checkpoint(log) is None


# ---------------------------------------------------------------------- checkpoint, map size
@pytest.mark.spec("COMPACT-5")
def test_the_cleaner_checkpoint_file(tmp_path):
    clock = ManualClock(T0)
    log = _worked_example(tmp_path / "orders-3", clock)
    clean(log, clock)
    path = tmp_path / CLEANER_OFFSET_CHECKPOINT
    assert path.read_text() == "0\n1\norders 3 6\n"
    assert OffsetCheckpointFile(path).read() == {("orders", 3): 6}
    # A checkpoint outside [log start, log end] is ignored.
    now = clock.milliseconds()
    assert cleanable_offsets(log, 1000, now)[0] == 0
    assert cleanable_offsets(log, 4, now)[0] == 4
    LogCleaner().maybe_truncate_checkpoint(log, 2)
    assert checkpoint(log) == 2
    LogCleaner().maybe_truncate_checkpoint(log, 5)
    assert checkpoint(log) == 2
    path.write_text("0\n7\ngarbage\n")  # unreadable: clean from the log start, rewrite it
    assert checkpoint(log) is None
    assert clean(log, clock).to_clean.first_dirty_offset == 0
    assert OffsetCheckpointFile(path).read() == {("orders", 3): 6}


@pytest.mark.spec("COMPACT-5", "COMPACT-1")
def test_a_small_offset_map_cleans_in_several_rounds(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    for i in range(24):
        produce(log, clock, (b"k%d" % (i % 6), b"v%d" % i))
        if i % 4 == 3:
            log.roll()
    produce(log, clock, (b"tail", b"x"))
    before = contents(log)
    cleaner = LogCleaner(SkimpyOffsetMap(memory=24 * 3, load_factor=1.0))  # three keys
    ends = []
    while True:
        result = clean(log, clock, cleaner)
        if not result.cleaned:
            break
        ends.append(result.stats.end_offset)
        assert result.stats.map_entries <= 3
        assert fold(contents(log)) == fold(before)
        below = [key for offset, key, _ in contents(log) if offset < ends[-1]]
        assert len(below) == len(set(below))  # each key at most once in the clean part
    assert len(ends) > 1 and ends == sorted(set(ends)) and ends[-1] == 24
    keys = [key for _, key, _ in contents(log)]
    assert keys == [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"tail"]


# ---------------------------------------------------------------------- tombstones
@pytest.mark.spec("COMPACT-6")
def test_tombstones_live_until_their_delete_horizon(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, delete_retention_ms=1000)
    produce(log, clock, (b"a", b"1"), (b"b", b"1"))
    produce(log, clock, (b"a", None))
    log.roll()
    produce(log, clock, (b"z", b"1"))
    first_clean = clock.milliseconds()
    clean(log, clock)
    assert contents(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"z", b"1")]
    stamped = batches(log)[1]
    assert stamped.header.attributes & ATTR_DELETE_HORIZON
    assert stamped.header.base_timestamp == first_clean + 1000
    assert [r.timestamp for r in stamped.records()] == [T0]  # the record's own time is kept

    def round_at(now):  # new dirty data, so that a round runs
        clock.set(now)
        produce(log, clock, (b"z", b"%d" % now))
        log.roll()
        return clean(log, clock)

    round_at(first_clean + 999)
    assert (2, b"a", None) in contents(log)
    assert batches(log)[1].header.base_timestamp == first_clean + 1000  # not moved
    result = round_at(first_clean + 1000)
    assert (2, b"a", None) not in contents(log) and result.stats.tombstones_removed == 1
    assert b"a" not in {key for _, key, _ in contents(log)}


# ---------------------------------------------------------------------- min.compaction.lag.ms
@pytest.mark.spec("COMPACT-7")
def test_records_younger_than_the_compaction_lag_stay(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, min_compaction_lag_ms=10_000)
    produce(log, clock, (b"a", b"1"), (b"a", b"2"))
    log.roll()
    clock.advance(8_000)
    produce(log, clock, (b"a", b"3"), (b"a", b"4"))
    log.roll()
    produce(log, clock, (b"z", b"1"))
    clock.advance(5_000)  # segment 0 is 13 s old, segment 2 only 5 s
    result = clean(log, clock)
    assert result.to_clean.first_uncleanable_offset == 2 == checkpoint(log)
    assert contents(log)[:3] == [(1, b"a", b"2"), (2, b"a", b"3"), (3, b"a", b"4")]
    clock.advance(5_000)
    clean(log, clock)
    assert contents(log) == [(3, b"a", b"4"), (4, b"z", b"1")]


# ---------------------------------------------------------------------- max.compaction.lag.ms
def _clean_then_one_dirty_segment(path, clock: ManualClock, **config) -> Log:
    """A log whose big clean part keeps the dirty ratio low: one small dirty segment,
    written at T0 + 1000, then an active segment."""
    log = open_log(path, clock, **config)
    for i in range(20):
        produce(log, clock, (b"k%d" % i, b"v" * 100))
    log.roll()
    clean(log, clock)  # all of it clean now
    clock.advance(1_000)
    produce(log, clock, (b"k0", b"new"))
    log.roll()
    produce(log, clock, (b"z", b"1"))
    return log


@pytest.mark.spec("COMPACT-28")
def test_a_record_older_than_the_max_compaction_lag_is_compacted_whatever_the_ratio(tmp_path):
    clock = ManualClock(T0)
    log = _clean_then_one_dirty_segment(tmp_path / "t-0", clock, max_compaction_lag_ms=10_000)
    first_dirty_at = T0 + 1_000
    clock.set(first_dirty_at + 10_000)  # exactly the lag: not yet due
    waiting = clean(log, clock, force=False)
    assert not waiting.cleaned and not waiting.to_clean.need_compaction_now
    assert waiting.to_clean.cleanable_ratio < 0.5 and "dirty ratio" in waiting.reason
    clock.advance(1)
    due = clean(log, clock, force=False)
    assert due.cleaned and due.to_clean.need_compaction_now
    assert due.to_clean.cleanable_ratio < 0.5  # the ratio alone would not have cleaned
    assert (0, b"k0", b"v" * 100) not in contents(log)
    assert (20, b"k0", b"new") in contents(log) and checkpoint(log) == 21
    nothing = clean(log, clock, force=False)  # no dirty segment left: nothing is due
    assert not nothing.cleaned and not nothing.to_clean.need_compaction_now


@pytest.mark.spec("COMPACT-28")
def test_without_a_max_compaction_lag_a_low_ratio_log_waits(tmp_path):
    clock = ManualClock(T0)
    log = _clean_then_one_dirty_segment(tmp_path / "t-0", clock)  # Kafka's default: none
    clock.advance(365 * DAY)
    result = clean(log, clock, force=False)
    assert not result.cleaned and not result.to_clean.need_compaction_now
    assert (0, b"k0", b"v" * 100) in contents(log)


@pytest.mark.spec("COMPACT-28")
def test_the_active_segment_of_a_compacted_log_rolls_after_the_max_compaction_lag(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, max_compaction_lag_ms=5_000)
    assert log.config.max_segment_ms == 5_000 < log.config.segment_ms
    produce(log, clock, (b"a", b"1"))
    clock.advance(5_000)
    produce(log, clock, (b"a", b"2"))  # exactly the lag: no roll
    assert len(log.segments) == 1
    clock.advance(1)
    produce(log, clock, (b"a", b"3"))
    assert [s.base_offset for s in log.segments] == [0, 2]
    deleting = open_log(
        tmp_path / "d-0", clock, max_compaction_lag_ms=5_000, cleanup_policy=("delete",)
    )
    assert deleting.config.max_segment_ms == deleting.config.segment_ms  # not compacted


@pytest.mark.spec("COMPACT-28")
def test_a_min_compaction_lag_above_the_max_is_refused():
    conflict = (
        r"conflict topic config setting min.compaction.lag.ms \(5000\) > "
        r"max.compaction.lag.ms \(4000\)"
    )
    with pytest.raises(InvalidConfigError, match=conflict):
        LogConfig.from_properties(
            {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "4000"}
        ).validate_values()
    defaults = LogConfig.from_properties({"max.compaction.lag.ms": "4000"})
    with pytest.raises(InvalidConfigError):  # the topic's min over the broker's max
        check_configs({"min.compaction.lag.ms": "5000"}, defaults)
    with pytest.raises(InvalidConfigError):
        check_configs({"max.compaction.lag.ms": "0"}, LogConfig())  # at least 1
    assert check_configs({"max.compaction.lag.ms": "4000"}, LogConfig()) == {
        "max.compaction.lag.ms": "4000"
    }
    with pytest.raises(ConfigError, match="conflict topic config setting"):
        KafkaConfig.from_props(
            {
                "log.cleaner.min.compaction.lag.ms": "5000",
                "log.cleaner.max.compaction.lag.ms": "4000",
            }
        )


# ---------------------------------------------------------------------- batches
@pytest.mark.spec("COMPACT-8", "COMPACT-2")
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_a_thinned_batch_keeps_its_header(tmp_path, codec):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    txn = dict(producer_id=7, producer_epoch=3, base_sequence=11, is_transactional=True)
    hdr = (Header("h", b"v"),)
    records = [Record(b"x", b"1", T0), Record(b"y", b"1", T0 + 5, hdr), Record(b"z", b"1", T0 + 9)]
    coordinator = AppendOrigin.COORDINATOR  # no sequence checks (IDEM-8): headers as they are
    log.append(build_batch(records, compression=codec, **txn), leader_epoch=4, origin=coordinator)
    produce(log, clock, (b"q", b"1"))  # 3: superseded
    produce(log, clock, (b"q", b"2"), (b"q", b"3"))  # 4-5: emptied by offset 7
    produce(log, clock, (b"z", b"2"), (b"q", b"4"))  # 6-7: untouched (q5 is active)
    untouched = batches(log)[3].buffer.tobytes()
    log.roll()
    produce(log, clock, (b"q", b"5"))
    result = clean(log, clock)
    thin, *rest = batches(log)
    h = thin.header
    # The last record (z@2) is gone, yet the batch still ends at offset 2.
    assert (h.base_offset, h.last_offset_delta, h.records_count) == (0, 2, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 3, 11)
    assert h.is_transactional and not h.is_control and h.compression == codec
    assert h.partition_leader_epoch == 4 and h.timestamp_type == TimestampType.CREATE_TIME
    assert [(r.offset, r.key, r.timestamp, r.headers) for r in thin.records()] == [
        (0, b"x", T0, ()),
        (1, b"y", T0 + 5, hdr),
    ]
    assert h.max_timestamp == T0 + 5  # recomputed over what is left (CreateTime)
    validate_batch(thin.buffer, check_count=False)  # the CRC is right
    assert [b.header.base_offset for b in rest] == [6, 8]  # 3 and 4-5 vanished whole
    assert result.stats.batches_removed == 2
    assert rest[0].buffer.tobytes() == untouched


@pytest.mark.spec("COMPACT-8")
def test_an_untouched_batch_is_kept_byte_for_byte_and_log_append_time_is_kept(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    produce(log, clock, (b"a", b"1"), (b"b", b"1"), compression=Compression.GZIP)
    clock.advance(100)
    produce(log, clock, (b"c", b"1"))
    kept = batches(log)[1].buffer.tobytes()
    produce(log, clock, (b"a", b"2"))
    log.roll()
    produce(log, clock, (b"z", b"1"))
    clean(log, clock)
    thin, same, _, _ = batches(log)
    assert same.buffer.tobytes() == kept
    assert thin.header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert thin.header.max_timestamp == T0 and thin.header.compression == Compression.GZIP


@pytest.mark.spec("COMPACT-9")
def test_records_without_a_key_are_removed(tmp_path):
    """Keyless records reach a compacted log only from before its cleanup.policy became
    compact (a compacted topic refuses them on produce, LOG-17); the cleaner drops them."""
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, cleanup_policy=("delete",))
    produce(log, clock, (None, b"orphan"), (b"a", b"1"))
    produce(log, clock, (None, b"orphan2"))
    log.roll()
    produce(log, clock, (None, b"in the active segment"))
    log.config = dataclasses.replace(log.config, cleanup_policy=COMPACT)  # altered topic
    result = clean(log, clock)
    assert contents(log) == [(1, b"a", b"1"), (3, None, b"in the active segment")]
    assert result.stats.null_keys_removed == 2


@pytest.mark.spec("COMPACT-12")
def test_control_batches_are_kept(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    marker = [Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", T0)]
    txn = dict(producer_id=9, producer_epoch=0, is_transactional=True)
    for _ in range(2):  # what a transaction coordinator writes: no sequences (IDEM-8)
        log.append(build_batch([Record(b"a", b"1", T0)], **txn), origin=AppendOrigin.COORDINATOR)
        log.append(build_batch(marker, is_control=True, **txn), origin=AppendOrigin.COORDINATOR)
    log.roll()
    produce(log, clock, (b"z", b"1"))
    clean(log, clock)
    kept = batches(log)
    assert [(b.header.base_offset, b.header.is_control) for b in kept] == [
        (1, True),
        (2, False),
        (3, True),
        (4, False),
    ]


# ---------------------------------------------------------------------- grouping
@pytest.mark.spec("COMPACT-13")
def test_small_cleaned_segments_merge_up_to_segment_bytes(tmp_path):
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    for i in range(12):
        produce(log, clock, (b"k%02d" % i, b"v"))
        log.roll()
    produce(log, clock, (b"z", b"1"))
    size = log.segments[0].size
    log.config = dataclasses.replace(log.config, segment_bytes=4 * size + 1)
    old_bases = [s.base_offset for s in log.segments]
    groups = group_segments_by_size(log.segments[:-1], log.config.segment_bytes, 1 << 20)
    assert [[s.base_offset for s in g] for g in groups] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10, 11],
    ]
    before = contents(log)
    result = clean(log, clock)
    assert [s.base_offset for s in log.segments] == [0, 4, 8, 12]
    assert set(s.base_offset for s in log.segments) <= set(old_bases)
    assert all(s.size <= log.config.segment_bytes for s in log.segments)
    assert result.stats.segments_cleaned == 12 and result.stats.segments_written == 3
    assert contents(log) == before
    assert len(group_segments_by_size(log.segments[:1], 10, 1)) == 1  # one always fits


# ---------------------------------------------------------------------- crashes in the swap
@contextlib.contextmanager
def crash_after(allowed: int):
    """Let `allowed` file-system mutations (renames, unlinks) happen, then 'kill' the
    process at the next one by raising SimulatedCrash from inside it."""
    done = 0
    real = {"replace": os.replace, "unlink": os.unlink}

    def guard(name):
        def call(*args, **kwargs):
            nonlocal done
            if done >= allowed:
                raise SimulatedCrash(f"crash before {name}{args}")
            done += 1
            return real[name](*args, **kwargs)

        return call

    with (
        mock.patch.object(os, "replace", guard("replace")),
        mock.patch.object(os, "unlink", guard("unlink")),
    ):
        yield


def _crash_log(path, clock) -> Log:
    """Six segments in three groups of two; each segment keeps one key of its own, so
    no segment is emptied; keys a, b, c are overwritten across groups; b ends deleted."""
    log = open_log(path, clock, delete_retention_ms=DAY, segment_index_bytes=4096)
    pairs = [(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"2")]
    for i, (key, value) in enumerate(pairs):
        produce(log, clock, (key, value), (b"own%d" % i, b"x"))
        produce(log, clock, (b"a", b"%d" % (10 + i)))
        log.roll()
    produce(log, clock, (b"c", b"active"))
    log.config = dataclasses.replace(log.config, segment_bytes=2 * log.segments[0].size)
    return log


def _reopen(path, config, clock) -> Log:
    log = Log.open(path, config, clock, clean_shutdown=False, producer_state=ProducerStateManager)
    leftovers = [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert not leftovers
    return log


@pytest.mark.spec("COMPACT-10")
@no_fsync()
def test_a_crash_at_any_step_of_the_swap_leaves_each_group_before_or_after(tmp_path):
    clock = ManualClock(T0)
    reference = _crash_log(tmp_path / "ref-0", clock)
    segment_bytes = reference.config.segment_bytes
    groups = group_segments_by_size(reference.segments[:-1], segment_bytes, 1 << 20)
    assert len(groups) == 3
    ranges = [(g[0].base_offset, g[-1].next_offset) for g in groups]
    before = contents(reference)
    clean(reference, clock)
    after = contents(reference)
    assert after != before

    def part(records, lo, hi):
        return [r for r in records if lo <= r[0] < hi]

    crashes = 0
    for allowed in range(100):
        path = tmp_path / f"crash{allowed}-0"
        log = _crash_log(path, clock)
        try:
            with crash_after(allowed):
                clean(log, clock)
        except SimulatedCrash:
            crashes += 1
        else:
            break
        reopened = _reopen(path, log.config, clock)
        seen = contents(reopened)
        for lo, hi in ranges:
            assert part(seen, lo, hi) in (part(before, lo, hi), part(after, lo, hi)), allowed
        assert part(seen, ranges[-1][1], 10**9) == part(before, ranges[-1][1], 10**9)
        assert fold(seen) == fold(before)
        clean(reopened, clock)  # the next round finishes the job
        assert contents(reopened) == after
        reopened.close()
    assert crashes >= 3 * (3 + 6 + 3)  # every rename and unlink of three swaps was a point


@pytest.mark.spec("COMPACT-10")
def test_a_crash_while_writing_the_cleaned_segment_rolls_back(tmp_path):
    clock = ManualClock(T0)
    log = _crash_log(tmp_path / "t-0", clock)
    before = contents(log)
    real_append = Segment.append
    calls = 0

    def append_then_die(self, data, **options):
        nonlocal calls
        calls += 1
        if calls == 2:  # inside the first group, before its commit
            raise SimulatedCrash("killed while writing .cleaned")
        return real_append(self, data, **options)

    with (
        mock.patch.object(Segment, "append", append_then_die),
        pytest.raises(SimulatedCrash),
    ):
        clean(log, clock)
    assert any(n.endswith(".cleaned") for n in os.listdir(tmp_path / "t-0"))
    assert contents(_reopen(tmp_path / "t-0", log.config, clock)) == before


@pytest.mark.spec("COMPACT-10")
def test_an_error_while_cleaning_leaves_the_log_as_it_was(tmp_path):
    clock = ManualClock(T0)
    log = _crash_log(tmp_path / "t-0", clock)
    before = contents(log)
    with (
        mock.patch.object(Segment, "append", side_effect=OSError("disk full")),
        pytest.raises(OSError),
    ):
        clean(log, clock)
    assert not any(n.endswith(".cleaned") for n in os.listdir(tmp_path / "t-0"))
    assert contents(log) == before and checkpoint(log) is None
    assert clean(log, clock).cleaned


@pytest.mark.spec("COMPACT-10", "COMPACT-11")
def test_a_crash_after_the_commit_may_leave_an_emptied_segment_without_losing_a_value(tmp_path):
    clock = ManualClock(T0)
    path = tmp_path / "t-0"
    log = open_log(path, clock)
    produce(log, clock, (b"r", b"1"), (b"p", b"1"))  # 0-1: r survives, p does not
    log.roll()
    produce(log, clock, (b"q", b"1"))  # 2: wholly superseded by the next group
    log.roll()
    produce(log, clock, (b"q", b"2"), (b"p", b"2"))  # 3-4
    log.roll()
    produce(log, clock, (b"z", b"1"))
    segment_bytes = log.segments[0].size + log.segments[1].size
    log.config = dataclasses.replace(log.config, segment_bytes=segment_bytes)
    groups = group_segments_by_size(log.segments[:-1], segment_bytes, 1 << 20)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 2], [3]]
    before = contents(log)
    with pytest.raises(SimulatedCrash), crash_after(3):  # after .cleaned -> .swap: committed
        clean(log, clock)
    seen = contents(_reopen(path, log.config, clock))
    after = [(0, b"r", b"1"), (3, b"q", b"2"), (4, b"p", b"2"), (5, b"z", b"1")]
    # The old segment 2 is left behind: the .swap only covered offsets [0, 2).
    assert seen == [(0, b"r", b"1"), (2, b"q", b"1"), (3, b"q", b"2"), (4, b"p", b"2"), after[-1]]
    assert set(after) <= set(seen) <= set(before) | set(after)
    assert fold(seen) == fold(after) == fold(before)


# ---------------------------------------------------------------------- the property
KEYS = [b"a", b"b", b"c", b"d", b"e"]
VALUES = st.one_of(st.none(), st.binary(min_size=1, max_size=6), st.binary(min_size=1, max_size=6))
PRODUCE = st.tuples(
    st.just("produce"),
    st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=3),
    st.sampled_from([Compression.NONE, Compression.GZIP, Compression.LZ4]),
)
OPS = st.lists(
    st.one_of(
        PRODUCE,
        PRODUCE,
        st.tuples(st.just("roll")),
        st.tuples(st.just("clean"), st.integers(0, 1500), st.booleans()),
    ),
    min_size=5,
    max_size=40,
)


@pytest.mark.spec("COMPACT-1", "COMPACT-2", "COMPACT-3", "COMPACT-6", "COMPACT-11")
@given(ops=OPS)
@no_fsync()
def test_compaction_matches_the_model(ops):
    retention = 500
    clock = ManualClock(T0)
    model: list[tuple[int, bytes, bytes | None]] = []  # everything ever appended
    first_cover: dict[int, int] = {}  # tombstone offset -> time of the first round over it
    last_round = None
    with temp_dir() as d:
        path = os.path.join(d, "t-0")
        log = open_log(
            path,
            clock,
            segment_bytes=250,
            segment_index_bytes=4096,
            delete_retention_ms=retention,
        )
        cleaner = LogCleaner()
        for op in ops:
            if op[0] == "produce":
                offset = log.log_end_offset
                produce(log, clock, *op[1], compression=op[2])
                model.extend((offset + i, k, v) for i, (k, v) in enumerate(op[1]))
            elif op[0] == "roll":
                log.roll()
            else:
                clock.advance(op[1])
                result = clean(log, clock, cleaner, force=op[2])
                if result.cleaned:
                    last_round = clock.milliseconds()
                    for offset, _, value in model:
                        if value is None and offset < result.stats.end_offset:
                            first_cover.setdefault(offset, last_round)
            _check(log, model, first_cover, last_round, retention, cleaner)
        final = contents(log)
        log.close()
        assert (
            contents(Log.open(path, log.config, clock, producer_state=ProducerStateManager))
            == final
        )


def _check(log, model, first_cover, last_round, retention, cleaner):
    seen = contents(log)
    offsets = [o for o, _, _ in seen]
    assert offsets == sorted(set(offsets))  # COMPACT-2: in order, each once
    by_offset = {o: (k, v) for o, k, v in model}
    assert all(by_offset[o] == (k, v) for o, k, v in seen)  # nothing invented or moved
    assert fold(seen) == fold(model)  # COMPACT-11
    latest = {}
    for offset, key, value in model:
        latest[key] = (offset, key, value)
    present = set(seen)
    for offset, key, value in latest.values():
        if value is not None:
            assert (offset, key, value) in present  # COMPACT-1: the latest value stays
        else:  # COMPACT-6: a tombstone stays until a round at or after its horizon
            expired = offset in first_cover and last_round >= first_cover[offset] + retention
            assert ((offset, key, value) in present) != expired
            if expired:
                assert key not in {k for _, k, _ in seen}
    active = log.active_segment.base_offset
    assert [r for r in model if r[0] >= active] == [r for r in seen if r[0] >= active]
    done = cleaner.checkpoint_of(log) or 0
    clean_keys = [k for o, k, _ in seen if o < done]
    assert len(clean_keys) == len(set(clean_keys))  # COMPACT-1: each key once below it


@pytest.mark.spec("SEG-9")
def test_a_cleaned_segment_keeps_the_index_entries_that_fit(tmp_path):
    """One append of two batches made one index entry (`index.interval.bytes` 1, room for one
    entry in each index); the cleaner writes the batches one at a time and would want two.
    A cleaned segment cannot roll: it keeps the entry that fits, and reads still find every
    record (the index is sparse, never wrong)."""
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, segment_index_bytes=12, index_interval_bytes=1)
    now = clock.milliseconds()
    two = b"".join(build_batch([Record(k, k, timestamp=now)], base_offset=0) for k in (b"a", b"b"))
    log.append(two, leader_epoch=0)
    log.roll()
    produce(log, clock, (b"c", b"c"))
    result = clean(log, clock)
    assert result.cleaned
    assert contents(log) == [(0, b"a", b"a"), (1, b"b", b"b"), (2, b"c", b"c")]

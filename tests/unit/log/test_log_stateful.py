"""A model-based, stateful test of the partition log (hypothesis `RuleBasedStateMachine`).

A real `Log` in a temporary directory, with tiny segments and tiny indexes so that rolls,
full indexes and multi-segment reads happen within a few steps, is driven by random
operations: appends (1-2 batches of 1-20 records, every codec, some tombstones, some
null keys, some LogAppendTime) and follower appends, reads (any offset, size, bound),
ListOffsets, rolls, flushes, clock moves, clean restarts (sometimes with new index
settings), crashes that tear, extend or flip bytes of what was never fsynced, deleted or
damaged index files, retention, DeleteRecords, compaction, a crash at any file operation
of a compaction swap, and truncation. Next to it runs a plain model: the batches that
were acknowledged (offsets, keys, values, timestamps, leader epochs, the bytes expected on
disk), the log start and end offsets, and for compacted logs the cleaner checkpoint and a
shadow copy of everything appended, never compacted.

After every step the named invariants compare the two. They read the files on disk with
this module's own header parser (not the engine's): offsets, segment layout and names,
index entries against the batches they point at, bytes, what a consumer reading from the
log start sees, and for compacted logs the consumer's key -> value view.

Each run picks one cleanup policy: `delete` (retention and DeleteRecords) or `compact`
(compaction; Kafka refuses DeleteRecords on compacted topics). The model keeps to what a
broker can see: on a compacted log, truncation and crashes stay above what the cleaner
has rewritten (the cleaner works below the high watermark, truncation only above it).
Two cases that fail today are pinned by focused tests in test_log_bad_input.py instead of
here, so that this machine keeps hunting: a middle segment cut exactly between two
batches, and a smaller `segment.index.bytes` after a restart.

Rules: see the `spec` mark on `TestLogMachine`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass, field, replace
from unittest import mock

import pytest
from crc32c import crc32c
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from kafka_ref.log.cleaner_manager import LogCleaner
from kafka_ref.log.log import Log
from kafka_ref.log.offset_map import SkimpyOffsetMap
from kafka_ref.log.retention import LogRetention
from kafka_ref.log.segment import Segment
from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record

T0 = 1_700_000_000_000
LONG_MAX = 2**63 - 1
KEYS = [b"a", b"b", b"c", b"d", b"e", None]
TOPIC_DIR = "orders.v2-eu-0"  # dots and dashes: the partition is what follows the last dash
_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header
_ATTR_LOG_APPEND_TIME, _ATTR_DELETE_HORIZON = 0x08, 0x40


class _Crash(BaseException):
    """The process dies here (a BaseException, so no `except Exception` handles it)."""


# ---------------------------------------------------------------------- the model
@dataclass(frozen=True)
class MRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple = ()


@dataclass
class MBatch:
    """A batch as the model expects it on disk."""

    base: int
    last: int
    epoch: int
    codec: Compression
    log_append_time: bool
    records: list[MRecord]
    raw: bytes | None  # the exact bytes, None once the cleaner rewrote the batch
    horizon: int | None = None  # KIP-534 delete horizon set by the cleaner

    @property
    def max_ts(self) -> int:
        return max(r.timestamp for r in self.records)


@dataclass
class DiskBatch:
    """A batch parsed from a segment file by this module (not by the engine)."""

    position: int
    size: int
    base: int
    last: int
    epoch: int
    attributes: int
    base_ts: int
    max_ts: int
    raw: bytes
    records: list[MRecord] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.position + self.size


_PARSED: dict[bytes, list[DiskBatch]] = {}


def parse_batches(data: bytes, *, decode: bool = True) -> list[DiskBatch]:
    """Whole v2 batches end to end; anything else fails the test. Decoded batches are
    cached by content: every invariant reads the same files after a step."""
    if decode and data in _PARSED:
        return _PARSED[data]
    if len(_PARSED) > 256:
        _PARSED.clear()
    out, pos = [], 0
    while pos < len(data):
        assert len(data) - pos >= 61, f"partial header at {pos} ({len(data) - pos} bytes)"
        fields = _HEADER.unpack_from(data, pos)
        base, length, epoch, magic, crc, attributes, delta, base_ts, max_ts = fields[:9]
        size = length + 12
        assert magic == 2, f"magic {magic} at {pos}"
        assert 61 <= size <= len(data) - pos, f"batch at {pos} of size {size} is torn"
        raw = data[pos : pos + size]
        assert crc32c(raw[21:]) == crc, f"CRC mismatch for the batch at {pos} (offset {base})"
        batch = DiskBatch(pos, size, base, base + delta, epoch, attributes, base_ts, max_ts, raw)
        if decode:
            batch.records = [
                MRecord(r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
                for r in RecordBatch(raw).records()
            ]
        out.append(batch)
        pos += size
    if decode:
        _PARSED[bytes(data)] = out
    return out


def read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def seg_name(base: int, kind: str) -> str:
    return f"{base:020d}{kind}"


def fold(records) -> dict:
    """A consumer's view of a compacted topic: key -> latest value, tombstones delete."""
    state: dict = {}
    for r in records:
        if r.key is None:
            continue
        if r.value is None:
            state.pop(r.key, None)
        else:
            state[r.key] = r.value
    return state


# ---------------------------------------------------------------------- strategies
def _flag(one_in: int):
    return st.integers(0, one_in - 1).map(lambda x: x == 0)


record_spec = st.tuples(
    st.sampled_from(KEYS),  # key (None: a keyless record)
    _flag(6),  # tombstone
    st.integers(0, 60),  # padding of the (unique) value
    st.integers(-3 * 3_600_000, 3_600_000),  # timestamp relative to the clock
    _flag(5),  # one header
)
batch_spec = st.tuples(
    st.sampled_from(list(Compression)), st.lists(record_spec, min_size=1, max_size=20)
)
append_spec = st.lists(batch_spec, min_size=1, max_size=2)


class LogMachine(RuleBasedStateMachine):
    """A real Log against a list of acknowledged batches."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="kafka-ref-stateful-")
        self.dir = os.path.join(self.tmp, TOPIC_DIR)
        self.clock = ManualClock(T0)
        self.log: Log | None = None
        self.batches: list[MBatch] = []  # every batch physically in the log, in order
        self.shadow: list[MRecord] = []  # every record ever acked and not truncated (COMPACT-11)
        self.start = 0
        self.leo = 0
        self.checkpoint: int | None = None  # the cleaner's first dirty offset (compact)
        self.cleaned_floor = 0  # no truncation or crash reaches below what was cleaned
        self.counter = 0
        self.max_append = 0
        self.max_interval = 0
        self.max_segment_bytes = 0

    # ------------------------------------------------------------------ setup
    @initialize(
        policy=st.sampled_from(["delete", "compact"]),
        segment_bytes=st.integers(1024, 2048) | st.integers(1024, 8192),
        index_interval=st.integers(32, 1024),
        index_bytes=st.integers(12, 240),
        flush_messages=st.sampled_from([LONG_MAX, LONG_MAX, 1, 7, 25]),
        log_append_time=_flag(5),
        segment_ms=st.sampled_from([604_800_000, 1_800_000]),
        retention_ms=st.sampled_from([-1, 3_600_000, 4 * 3_600_000]),
        retention_bytes=st.sampled_from([-1, -1, 2000, 6000]),
        delete_retention_ms=st.sampled_from([0, 3_600_000]),
        max_message=st.sampled_from([1_048_588, 1500]),
        prefill=st.lists(st.tuples(append_spec, st.booleans()), max_size=6),
    )
    def setup(self, policy, segment_bytes, index_interval, index_bytes, flush_messages, **kw):
        self.policy = policy
        props = {
            "cleanup.policy": policy,
            "segment.bytes": segment_bytes,
            "index.interval.bytes": index_interval,
            "segment.index.bytes": index_bytes,
            "flush.messages": flush_messages,
            "segment.ms": kw["segment_ms"],
            "retention.ms": kw["retention_ms"],
            "retention.bytes": kw["retention_bytes"],
            "delete.retention.ms": kw["delete_retention_ms"],
            "max.message.bytes": kw["max_message"],
            "message.timestamp.type": "LogAppendTime" if kw["log_append_time"] else "CreateTime",
        }
        self.config = LogConfig.from_properties(props)
        self._note_config()
        self.cleaner = LogCleaner(SkimpyOffsetMap(memory=24 * 64))
        self.log = Log.open(self.dir, self.config, self.clock)
        for spec, roll in kw["prefill"]:  # start from a log of a few segments, often
            self.append(spec, 0)
            if roll:
                self.log.roll()

    def _note_config(self) -> None:
        self.max_interval = max(self.max_interval, self.config.index_interval_bytes)
        self.max_segment_bytes = max(self.max_segment_bytes, self.config.segment_bytes)

    def teardown(self) -> None:
        if self.log is not None:
            self._crash_close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers
    def _visible(self) -> list[MRecord]:
        return [r for b in self.batches for r in b.records if r.offset >= self.start]

    def _segment_bounds(self) -> list[tuple[int, int | None]]:
        bases = [s.base_offset for s in self.log.segments]
        return list(zip(bases, [*bases[1:], None], strict=True))

    def _batches_in(self, lo: int, hi: int | None) -> list[MBatch]:
        return [b for b in self.batches if b.base >= lo and (hi is None or b.base < hi)]

    def _crash_close(self) -> None:
        """A process crash: what was written stays in the page cache; nothing is trimmed,
        flushed, checkpointed or closed cleanly. Only our descriptors and maps are freed."""
        for segment in self.log.segments:
            segment.offset_index.close_handler()
            segment.time_index.close_handler()
            segment.log.close()
        self.log = None

    def _reopen(self, *, clean: bool, recovery_point: int) -> None:
        self.log = Log.open(
            self.dir,
            self.config,
            self.clock,
            recovery_point=recovery_point,
            log_start_offset=self.start,
            clean_shutdown=clean,
        )

    def _cleaned_end(self) -> int:
        """The end of the furthest cleaning round ever started (finished or not)."""
        return self.cleaned_floor

    def _after_truncation(self) -> None:
        """The model after the log lost its tail (truncation or crash): the shadow log
        and the cleaner checkpoint follow (Kafka: `maybeTruncateCheckpoint`)."""
        self.shadow = [r for r in self.shadow if r.offset < self.leo]
        if self.policy == "compact":
            self.cleaner.maybe_truncate_checkpoint(self.log, self.log.log_end_offset)
            if self.checkpoint is not None and self.checkpoint > self.leo:
                self.checkpoint = self.leo

    # ------------------------------------------------------------------ rules
    @rule(spec=append_spec, epoch=st.integers(0, 3))
    def append(self, spec, epoch):
        now = self.clock.milliseconds()
        sent = []
        for codec, record_specs in spec:
            records = []
            for key, tombstone, pad, dt, with_header in record_specs:
                self.counter += 1
                value = None if tombstone else b"%d:" % self.counter + b"x" * pad
                headers = (Header("h", b"%d" % self.counter),) if with_header else ()
                records.append(Record(key, value, now + dt, headers))
            sent.append((codec, records, build_batch(records, compression=codec)))
        data = b"".join(raw for _, _, raw in sent)
        log = self.log
        before = (log.log_end_offset, log.size_in_bytes, len(log.segments))
        expected = None
        for _, records, raw in sent:  # the validator's order: batch by batch, then the whole
            if len(raw) > self.config.max_message_bytes:
                expected = ErrorCode.MESSAGE_TOO_LARGE  # LOG-9
            elif self.policy == "compact" and any(r.key is None for r in records):
                expected = ErrorCode.INVALID_RECORD  # LOG-17: compacted topics need keys
            if expected is not None:
                break
        if expected is None and len(data) > self.config.segment_bytes:
            expected = ErrorCode.RECORD_LIST_TOO_LARGE  # SEG-6
        if expected is not None:
            with pytest.raises(KafkaError) as err:
                log.append(data, leader_epoch=epoch)
            assert err.value.code == expected
            event(f"append rejected: {expected.name}")
            assert (log.log_end_offset, log.size_in_bytes, len(log.segments)) == before
            return
        info = log.append(data, leader_epoch=epoch)
        count = sum(len(records) for _, records, _ in sent)
        assert (info.first_offset, info.last_offset) == (self.leo, self.leo + count - 1)  # LOG-1
        assert (info.record_count, info.batch_count) == (count, len(sent))
        lat = self.config.message_timestamp_type == "LogAppendTime"
        offset = self.leo
        for codec, records, raw in sent:
            stamped = bytearray(raw)
            struct.pack_into(">q", stamped, 0, offset)
            struct.pack_into(">i", stamped, 12, epoch)
            mrecords = [
                MRecord(offset + i, r.key, r.value, now if lat else r.timestamp, r.headers)
                for i, r in enumerate(records)
            ]
            last = offset + len(records) - 1
            batch = MBatch(
                offset, last, epoch, codec, lat, mrecords, None if lat else bytes(stamped)
            )
            self.batches.append(batch)
            self.shadow.extend(mrecords)
            offset = last + 1
        self.leo = offset
        self.max_append = max(self.max_append, len(data))
        n = len(log.segments)
        event(f"segments after append: {n if n < 5 else '5+'}")
        if self.config.flush_messages != LONG_MAX:  # DUR-9
            assert log.log_end_offset - log.recovery_point < self.config.flush_messages

    @rule(spec=append_spec, epoch=st.integers(0, 3))
    def append_again(self, spec, epoch):
        """Appends twice as often as any other step, so logs grow past a few segments."""
        self.append(spec, epoch)

    @rule(spec=batch_spec, data=st.data())
    def append_as_follower(self, spec, data):
        """LOG-12: a follower appends its leader's bytes: offsets kept, no stamping. A
        compacted leader's batches may start past the log end and miss offsets inside."""
        compacted = self.policy == "compact"
        gap = data.draw(st.integers(0, 3 if compacted else 0), label="gap")
        codec, record_specs = spec
        deltas = list(range(len(record_specs)))
        if compacted and len(deltas) > 1:
            deltas = sorted(data.draw(st.sets(st.sampled_from(deltas), min_size=1), label="kept"))
        last_delta = len(record_specs) - 1
        epoch = data.draw(st.integers(0, 3), label="epoch")
        now, base = self.clock.milliseconds(), self.leo + gap
        records = []
        for delta in deltas:
            key, tombstone, pad, dt, _ = record_specs[delta]
            self.counter += 1
            value = None if tombstone else b"%d:" % self.counter + b"x" * pad
            records.append(Record(key, value, now + dt))
        raw = build_batch(
            records,
            base_offset=base,
            compression=codec,
            partition_leader_epoch=epoch,
            offset_deltas=deltas,
            last_offset_delta=last_delta,
        )
        if len(raw) > self.config.segment_bytes:
            with pytest.raises(KafkaError) as err:
                self.log.append(raw, assign_offsets=False)
            assert err.value.code == ErrorCode.RECORD_LIST_TOO_LARGE  # SEG-6
            return
        info = self.log.append(raw, assign_offsets=False)
        assert (info.first_offset, info.last_offset) == (base, base + last_delta)
        pairs = zip(deltas, records, strict=True)
        mrecords = [MRecord(base + d, r.key, r.value, r.timestamp, ()) for d, r in pairs]
        self.batches.append(MBatch(base, base + last_delta, epoch, codec, False, mrecords, raw))
        self.shadow.extend(mrecords)
        self.leo = base + last_delta + 1
        self.max_append = max(self.max_append, len(raw))
        behind = data.draw(st.integers(1, 3), label="behind")
        stale = build_batch(records, base_offset=max(0, self.leo - behind), offset_deltas=deltas)
        with pytest.raises(KafkaError) as err:  # LOG-12: below the log end: refused
            self.log.append(stale, assign_offsets=False)
        assert err.value.code == ErrorCode.INVALID_RECORD
        assert self.log.log_end_offset == self.leo

    @rule(data=st.data())
    def read(self, data):
        log = self.log
        o = data.draw(st.integers(self.start, self.leo), label="offset")
        max_bytes = data.draw(st.integers(0, 3000), label="max_bytes")
        max_offset = data.draw(st.none() | st.integers(o, self.leo), label="max_offset")
        min_one = data.draw(st.booleans(), label="min_one_batch")
        info = log.read(o, max_bytes, max_offset=max_offset, min_one_batch=min_one)
        got = parse_batches(info.read_bytes())
        upper = self.leo if max_offset is None else max_offset
        eligible = []
        for b in self.batches:  # LOG-7: nothing holding an offset >= max_offset
            if b.last < o:
                continue
            if b.last >= upper:
                break
            eligible.append(b)
        sizes = {d.base: d.size for d in self._disk_batches()}
        if not eligible:
            assert got == [], f"read({o}) below max_offset {upper} returned {len(got)} batches"
            return
        if min_one:
            assert got, f"read({o}, {max_bytes}) returned nothing; LOG-6 wants one batch"
            assert info.size <= max(max_bytes, got[0].size)  # LOG-6
        else:
            assert info.size <= max_bytes  # LOG-6
            if sizes[eligible[0].base] <= max_bytes:
                assert got, f"read({o}, {max_bytes}) returned nothing though a batch fits"
        if not got:
            return
        # LOG-3: the first batch is the one holding o (or the first after a gap);
        # LOG-4: then the following batches, none skipped.
        assert [(d.base, d.last) for d in got] == [
            (b.base, b.last) for b in eligible[: len(got)]
        ], f"read({o}) returned the wrong batches"
        for d, b in zip(got, eligible, strict=False):
            assert d.records == b.records, f"records of batch {b.base} differ"
        assert info.first_offset == got[0].base
        self._check_next_offset(info.next_offset, got[-1].last, upper)

    def _check_next_offset(self, next_offset: int, last: int, upper: int) -> None:
        """LOG-4: the next read starts after the last batch returned and skips no batch;
        it may jump over a gap (compaction) up to the read's bound."""
        assert last + 1 <= next_offset <= max(upper, last + 1), (last, next_offset, upper)
        skipped = [b.base for b in self.batches if last < b.last < next_offset]
        assert not skipped, f"next_offset {next_offset} skips batches {skipped}"

    @rule(data=st.data())
    def read_out_of_range(self, data):
        below = list(range(max(0, self.start - 3), self.start))
        o = data.draw(st.sampled_from([*below, self.leo + 1, self.leo + 1000]))
        with pytest.raises(OffsetOutOfRangeError) as err:  # LOG-5
            self.log.read(o, 1000)
        assert err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE

    @rule(data=st.data())
    def offset_for_timestamp(self, data):
        visible = self._visible()
        stamps = sorted({r.timestamp for r in visible})
        now = self.clock.milliseconds()
        target = data.draw(
            st.one_of(
                st.sampled_from(stamps).flatmap(lambda t: st.sampled_from([t - 1, t, t + 1]))
                if stamps
                else st.just(now),
                st.integers(now - 4 * 3_600_000, now + 2 * 3_600_000),
                st.sampled_from([-2, -1]),
            ),
            label="timestamp",
        )
        found = self.log.offset_for_timestamp(target)
        if target == -2:
            assert found.offset == self.start
            return
        if target == -1:
            assert found.offset == self.leo
            return
        first = next((r for r in visible if r.timestamp >= target), None)  # LOG-15
        if first is None:
            assert found is None, f"offset_for_timestamp({target}) found {found}"
        else:
            epoch = next(b.epoch for b in self.batches if b.base <= first.offset <= b.last)
            assert found is not None, f"offset_for_timestamp({target}) missed {first}"
            assert tuple(found) == (first.timestamp, first.offset, epoch)

    @rule()
    def roll(self):
        active = self.log.active_segment
        was_empty = active.size == 0
        count = len(self.log.segments)
        segment = self.log.roll()
        assert segment is self.log.active_segment
        assert segment.base_offset == self.leo or was_empty
        assert len(self.log.segments) == count + (0 if was_empty else 1)

    @rule(ms=st.integers(0, 3 * 3_600_000))
    def advance_clock(self, ms):
        self.clock.advance(ms)

    @rule(data=st.data())
    def flush(self, data):
        rp = self.log.recovery_point
        up_to = data.draw(st.none() | st.integers(0, self.leo + 5))
        self.log.flush(up_to)
        target = self.leo if up_to is None else min(up_to, self.leo)
        assert self.log.recovery_point == max(rp, target)  # DUR-9

    @rule(clean=st.booleans(), data=st.data())
    def restart(self, clean, data):
        """Close cleanly and reopen, sometimes with new index settings (as an operator
        may change `segment.index.bytes` or `index.interval.bytes` between restarts)."""
        self.log.close()
        assert self.log.recovery_point == self.leo
        if data.draw(_flag(4), label="reconfigure"):
            # (only larger: shrinking below the entries of the active segment is pinned
            # down by test_log_bad_input.py)
            index_bytes = data.draw(
                st.integers(self.config.segment_index_bytes, 240), label="segment.index.bytes"
            )
            interval = data.draw(st.integers(32, 1024), label="index.interval.bytes")
            self.config = replace(
                self.config, segment_index_bytes=index_bytes, index_interval_bytes=interval
            )
            self._note_config()
        self._reopen(clean=clean, recovery_point=self.leo)
        assert self.log.recovery_point == self.leo  # DUR-6, DUR-5

    @rule(data=st.data())
    def crash(self, data):
        """Kill the process (or the machine), damage what was never fsynced, recover."""
        log = self.log
        rp = log.recovery_point
        segments = [(s.base_offset, s.log.path) for s in log.segments]
        bases = [b for b, _ in segments]
        # Only what was never fsynced can be damaged: batches from the recovery point on
        # (a batch holding offsets below it was flushed whole), and on a compacted log
        # nothing the cleaner wrote (it fsyncs its segments, and it only ever cleans below
        # the high watermark, which a crash never takes back). A segment can be damaged
        # if recovery visits it and every segment after it is unflushed: after an OS crash
        # any unflushed segment may have lost its tail, not only the last one.
        floor = max(rp, self._cleaned_end())
        rp_holder = max([i for i, b in enumerate(bases) if b <= rp] or [0])
        eligible = [
            i for i in range(rp_holder, len(bases)) if i + 1 == len(bases) or bases[i + 1] >= floor
        ]
        index = data.draw(st.sampled_from(eligible), label="segment")
        base, path = segments[index]
        disk = parse_batches(read_file(path))
        unflushed = [d for d in disk if d.base >= floor]
        kind = data.draw(st.sampled_from(["cut", "garbage", "flip"]), label="damage")
        if not unflushed:
            kind = "garbage"
        self._crash_close()
        survivors = disk
        if kind == "cut" and index == len(bases) - 1:  # a torn write, at any byte
            cut = data.draw(st.integers(unflushed[0].position, disk[-1].end - 1), label="cut")
            os.truncate(path, cut)
            survivors = [d for d in disk if d.end <= cut]
        elif kind == "cut":  # an earlier unflushed segment lost its tail, inside a batch
            # (a cut exactly between two batches of a middle segment leaves a hole that
            # recovery cannot see: test_log_bad_input.py pins that down separately)
            torn = data.draw(st.sampled_from(unflushed), label="torn batch")
            cut = torn.position + data.draw(st.integers(1, torn.size - 1), label="cut")
            os.truncate(path, cut)
            survivors = [d for d in disk if d.end <= cut]
        elif kind == "flip":  # a flipped bit in a batch's length, magic or CRC'd bytes
            victim = data.draw(st.sampled_from(unflushed), label="victim")
            inside = data.draw(
                st.sampled_from([*range(8, 12), *range(16, victim.size)]), label="byte"
            )
            bit = data.draw(st.integers(0, 7), label="bit")
            with open(path, "r+b") as f:
                f.seek(victim.position + inside)
                byte = f.read(1)[0]
                f.seek(victim.position + inside)
                f.write(bytes([byte ^ (1 << bit)]))
            survivors = [d for d in disk if d.end <= victim.position]
        else:  # garbage after the last batch (or zeros: blocks allocated, never written)
            garbage = data.draw(
                st.binary(min_size=1, max_size=120) | st.integers(1, 200).map(bytes),
                label="garbage",
            )
            with open(path, "ab") as f:
                f.write(garbage)
        later = bases[index + 1] if index + 1 < len(bases) else None
        self._reopen(clean=False, recovery_point=rp)
        lost = sum(1 for b in self.batches if b.base >= base) - len(survivors)
        event(f"crash: {kind}, {'later segments, ' if later is not None else ''}{lost} lost")
        # DUR-1, DUR-3: the log keeps every batch before the damaged one, in place, and
        # nothing after it, later segments included
        kept = {d.base for d in survivors}
        self.batches = [b for b in self.batches if b.base < base or b.base in kept]
        self.leo = survivors[-1].last + 1 if survivors else base
        if self.leo < self.start:  # the log ends below its start: Kafka restarts it empty
            self.batches, self.leo = [], self.start
        self._after_truncation()
        assert self.log.log_end_offset >= rp  # DUR-2: flushed data is never lost
        assert self.log.recovery_point == min(rp, self.log.log_end_offset)  # DUR-5

    @rule(data=st.data())
    def damage_index(self, data):
        """Delete or corrupt an index file while the log is down; nothing may change."""
        clean = data.draw(st.booleans(), label="clean")
        rp = self.leo if clean else self.log.recovery_point
        bases = [s.base_offset for s in self.log.segments]
        if clean:
            self.log.close()
            self.log = None
        else:
            self._crash_close()
        base = data.draw(st.sampled_from(bases), label="segment")
        kind = data.draw(st.sampled_from([".index", ".timeindex"]), label="kind")
        path = os.path.join(self.dir, seg_name(base, kind))
        size = 8 if kind == ".index" else 12
        actions = ["delete", "odd-size", "backwards"] + (["random"] if kind == ".index" else [])
        action = data.draw(st.sampled_from(actions), label="action")
        if action == "delete":
            os.unlink(path)
        elif action == "odd-size":
            with open(path, "ab") as f:
                f.write(data.draw(st.binary(min_size=1, max_size=size - 1), label="bytes"))
        elif action == "backwards":  # two entries, the second below the first (INDEX-7)
            if kind == ".index":
                body = struct.pack(">iiii", 2, 200, 1, 100)
            else:
                body = struct.pack(">qiqi", T0 + 2000, 1, T0 + 1000, 2)
            with open(path, "wb") as f:
                f.write(body)
        else:  # random bytes (a random offset index fails the sanity check or is harmless)
            with open(path, "wb") as f:
                f.write(data.draw(st.binary(max_size=200), label="bytes"))
        self._reopen(clean=clean, recovery_point=rp)

    @rule()
    def retention(self):
        """RET-1..RET-6: predict which segments go, from the model's sizes and times."""
        now = self.clock.milliseconds()
        bounds = self._segment_bounds()
        inactive = [(lo, hi, self._batches_in(lo, hi)) for lo, hi in bounds[:-1]]
        expected: list[int] = []
        i = 0
        while i < len(inactive) and inactive[i][1] <= self.start:  # RET-4
            expected.append(inactive[i][0])
            i += 1
        if self.policy == "delete":  # RET-6
            limit = self.config.retention_bytes
            sizes = {s.base_offset: s.size for s in self.log.segments}
            size = sum(sizes[lo] for lo, _ in bounds[i:])
            if limit >= 0 and size >= limit:  # RET-3
                excess = size - limit
                while i < len(inactive):
                    seg_size = sizes[inactive[i][0]]
                    if excess - seg_size < 0:
                        break
                    excess -= seg_size
                    expected.append(inactive[i][0])
                    i += 1
            if self.config.retention_ms >= 0:  # RET-2
                while i < len(inactive) and inactive[i][2]:
                    largest = max(b.max_ts for b in inactive[i][2])
                    if now - largest <= self.config.retention_ms:
                        break
                    expected.append(inactive[i][0])
                    i += 1
        in_flight = self.log.read(self.start, 1 << 20) if self.start < self.leo else None
        sent = in_flight.read_bytes() if in_flight else b""
        result = LogRetention.run(self.log, now)
        if in_flight:  # RET-8: a read in flight keeps its bytes after the files go
            assert in_flight.read_bytes() == sent
        event(f"retention deleted {min(len(expected), 3)}{'+' if len(expected) > 2 else ''}")
        assert [d.base_offset for d in result.deleted] == expected  # RET-1
        if expected:
            first = self.log.segments[0].base_offset
            assert first == (inactive[i][0] if i < len(inactive) else bounds[-1][0])
            self.batches = [b for b in self.batches if b.base >= first]
            self.start = max(self.start, first)  # RET-5
            for base in expected:
                assert not os.path.exists(os.path.join(self.dir, seg_name(base, ".log")))
                with pytest.raises(OffsetOutOfRangeError):  # RET-8, LOG-5
                    self.log.read(base, 100)
        assert result.log_start_offset == self.log.log_start_offset == self.start

    @precondition(lambda self: self.policy == "delete")
    @rule(data=st.data())
    def delete_records(self, data):
        o = data.draw(st.integers(self.start, self.leo), label="offset")
        bases = [s.base_offset for s in self.log.segments]
        holder = max(b for b in bases if b <= o) if bases[0] <= o else bases[0]
        moved = self.log.delete_records_before(o)
        assert moved == (o > self.start)
        if moved:  # LOG-14: the start rises; segments wholly below the holder's go
            assert [s.base_offset for s in self.log.segments] == [b for b in bases if b >= holder]
            self.batches = [b for b in self.batches if b.base >= holder]
            self.start = o

    def _compaction_model(self, now: int):
        """What one cleaning round must leave: (batches, new checkpoint), or None when
        there is nothing dirty to clean (COMPACT-1, -3, -5, -6, -8, -9)."""
        active_base = self.log.active_segment.base_offset
        first_dirty = self.checkpoint
        if first_dirty is None or not self.start <= first_dirty <= self.leo:  # COMPACT-5
            first_dirty = self.start
        inactive = [b for b in self.batches if b.base < active_base]  # COMPACT-3
        dirty = [b for b in inactive if b.last >= first_dirty]
        if first_dirty >= active_base or not dirty:
            return None
        latest: dict = {}
        for b in dirty:
            for r in b.records:
                if r.key is not None and r.offset >= first_dirty:
                    latest[r.key] = r.offset
        kept_batches = []
        for b in self.batches:
            if b.base >= active_base:
                kept_batches.append(b)
                continue
            kept = []
            for r in b.records:
                if r.key is None:  # COMPACT-9
                    continue
                if r.offset < latest.get(r.key, -1):  # COMPACT-1
                    continue
                if r.value is None and b.horizon is not None and now >= b.horizon:  # COMPACT-6
                    continue
                kept.append(r)
            if not kept:  # COMPACT-8
                continue
            if b.horizon is None and any(r.value is None for r in kept):
                horizon = now + self.config.delete_retention_ms
                b = replace(b, records=kept, raw=None, horizon=horizon)
            elif len(kept) != len(b.records):
                b = replace(b, records=kept, raw=None)
            kept_batches.append(b)
        end = dirty[-1].last + 1
        self.cleaned_floor = max(self.cleaned_floor, end)
        return kept_batches, end

    @precondition(lambda self: self.policy == "compact")
    @rule()
    def compact(self):
        now = self.clock.milliseconds()
        expected = self._compaction_model(now)
        first_dirty = self.checkpoint
        result = self.cleaner.clean(self.log, now, force=True)
        if expected is None:
            assert result.stats is None or result.stats.end_offset <= (first_dirty or 0)
            assert self.cleaner.checkpoint_of(self.log) == self.checkpoint
            return
        assert result.cleaned
        event("compaction round")
        self.batches, self.checkpoint = expected
        assert result.stats.end_offset == self.checkpoint
        assert self.cleaner.checkpoint_of(self.log) == self.checkpoint  # COMPACT-5

    @precondition(lambda self: self.policy == "compact")
    @rule(data=st.data())
    def crash_during_compaction(self, data):
        """COMPACT-10, DUR-11: kill the process at any rename or delete of the swap; the
        loader must finish or undo it, batch by batch, and lose no key's latest value."""
        now = self.clock.milliseconds()
        expected = self._compaction_model(now)
        if expected is None:
            return
        crash_at = data.draw(st.integers(1, 8), label="crash at file operation")
        after_it = data.draw(st.booleans(), label="after the operation")
        rp, calls = self.log.recovery_point, []
        real_rename, real_delete = Segment.change_suffix, Segment.delete

        def step(real):
            def wrapper(segment, *args):
                calls.append(real.__name__)
                if len(calls) == crash_at and not after_it:
                    raise _Crash
                real(segment, *args)
                if len(calls) == crash_at:
                    raise _Crash

            return wrapper

        with (
            mock.patch.object(Segment, "change_suffix", step(real_rename)),
            mock.patch.object(Segment, "delete", step(real_delete)),
        ):
            try:
                self.cleaner.clean(self.log, now, force=True)
                crashed = False
            except _Crash:
                crashed = True
        event(f"crash during compaction: {crashed}")
        if not crashed:
            self.batches, self.checkpoint = expected
        self._crash_close()
        self._reopen(clean=False, recovery_point=rp)
        # Each batch is the one before cleaning or the one after it; a batch the round
        # drops may linger (COMPACT-10's nuance), one the round keeps may not vanish.
        before = {b.base: b for b in self.batches}
        after = {b.base: b for b in expected[0]}
        disk = self._disk_batches()
        adopted = []
        for d in disk:
            options = [b for b in (after.get(d.base), before.get(d.base)) if b is not None]
            horizon = d.base_ts if d.attributes & _ATTR_DELETE_HORIZON else None
            match = [
                b for b in options if (b.last, b.records, b.horizon) == (d.last, d.records, horizon)
            ]
            assert match, f"batch {d.base} after a crash in compaction is neither version"
            adopted.append(match[0])
        missing = sorted(set(after) - {d.base for d in disk})
        assert not missing, f"batches {missing} lost by a crash during compaction"
        self.batches = adopted

    @rule(data=st.data())
    def truncate(self, data):
        # Replication truncates only above the high watermark, and the cleaner only works
        # below it: a compacted log is never truncated below the cleaned part.
        o = data.draw(st.integers(min(self._cleaned_end(), self.leo), self.leo), label="offset")
        bases = [s.base_offset for s in self.log.segments]
        changed = self.log.truncate_to(o)
        assert changed == (o < self.leo)
        if not changed:
            return
        if o < bases[0]:  # LOG-13: below the first segment: empty, restarted at o
            self.batches, self.start, self.leo = [], o, o
        else:  # whole batches from the one holding o
            holder = max(b for b in bases if b <= o)
            self.batches = [b for b in self.batches if b.last < o]
            self.leo = max([b.last + 1 for b in self.batches if b.base >= holder] or [holder])
            self.start = min(self.start, self.leo)
        self._after_truncation()

    # ------------------------------------------------------------------ invariants
    def _disk_batches(self) -> list[DiskBatch]:
        out = []
        for segment in self.log.segments:
            out.extend(parse_batches(read_file(segment.log.path)))
        return out

    @invariant()
    def log_end_offset_matches_model(self):
        assert self.log.log_end_offset == self.leo

    @invariant()
    def log_start_offset_bounds_the_log(self):
        log = self.log
        assert log.log_start_offset == self.start
        assert 0 <= log.log_start_offset <= log.log_end_offset
        assert log.recovery_point <= log.log_end_offset

    @invariant()
    def segments_are_named_sorted_and_whole(self):
        log = self.log
        segments = log.segments
        bases = [s.base_offset for s in segments]
        assert bases == sorted(set(bases)), f"base offsets do not increase: {bases}"
        assert log.active_segment is segments[-1]
        names = set(os.listdir(self.dir))
        for s in segments:
            assert seg_name(s.base_offset, ".log") in names  # SEG-1
            assert os.path.basename(s.log.path) == seg_name(s.base_offset, ".log")
        for name in names:
            assert not name.endswith((".cleaned", ".swap", ".deleted")), name
        for i, s in enumerate(segments):  # SEG-2: whole batches within the segment's range
            upper = bases[i + 1] if i + 1 < len(bases) else log.log_end_offset
            data = read_file(s.log.path)
            assert len(data) == s.size
            for d in parse_batches(data):
                assert s.base_offset <= d.base and d.last < upper, (
                    f"batch {d.base}..{d.last} outside segment [{s.base_offset}, {upper})"
                )
                assert log.segment_for(d.base) is s and log.segment_for(d.last) is s  # LOG-16
            if self.policy == "delete":  # SEG-3 (cleaned segments may grow past it)
                assert s.size <= self.max_segment_bytes

    @invariant()
    def offsets_strictly_increase(self):
        disk = self._disk_batches()
        for prev, cur in itertools.pairwise(disk):
            assert cur.base > prev.last, f"batch {cur.base} follows {prev.last}"
            if self.policy == "delete":  # LOG-1: dense without compaction
                assert cur.base == prev.last + 1, f"gap between {prev.last} and {cur.base}"
        if disk:
            assert disk[-1].last + 1 <= self.log.log_end_offset

    @invariant()
    def indexes_are_sound(self):
        """INDEX-2, INDEX-5, INDEX-6, SEG-7, TIDX-1, TIDX-2, TIDX-4, on the files on disk."""
        segments = self.log.segments
        for i, s in enumerate(segments):
            active = i == len(segments) - 1
            disk = parse_batches(read_file(s.log.path))
            by_position = {d.position: d for d in disk}
            next_offset = disk[-1].last + 1 if disk else s.base_offset
            # offset index
            raw = read_file(s.offset_index.path)
            n = s.offset_index.entries
            assert len(raw) % 8 == 0
            if active:
                assert len(raw) == self.config.segment_index_bytes // 8 * 8  # INDEX-6
            else:
                assert len(raw) == n * 8, f"inactive {s.offset_index.path} not trimmed"  # SEG-7
            assert raw[n * 8 :] == bytes(len(raw) - n * 8)  # INDEX-6: zeros after the entries
            previous = None
            for rel, pos in struct.iter_unpack(">ii", raw[: n * 8]):
                offset = s.base_offset + rel
                if previous is not None:  # INDEX-2
                    assert offset > previous[0] and pos > previous[1], (previous, (offset, pos))
                assert pos in by_position, f"index entry ({offset}, {pos}) is not a batch start"
                assert by_position[pos].base <= offset < next_offset, (offset, pos)
                previous = (offset, pos)
            if self.policy == "delete":  # INDEX-5
                bound = self.max_interval + 2 * self.max_append
                for d in disk:
                    start = s.offset_index.lookup(d.base).position
                    assert start <= d.position and d.position - start < bound, (d.base, start)
            # time index
            raw = read_file(s.time_index.path)
            n = s.time_index.entries
            assert len(raw) % 12 == 0
            if not active:
                assert len(raw) == n * 12, f"inactive {s.time_index.path} not trimmed"
            assert raw[n * 12 :] == bytes(len(raw) - n * 12)
            entries = [
                (t, s.base_offset + rel) for t, rel in struct.iter_unpack(">qi", raw[: n * 12])
            ]
            for (t0, o0), (t1, o1) in itertools.pairwise(entries):
                assert t1 > t0 and o1 >= o0, f"time index goes backwards: {entries}"  # TIDX-2
            for t, o in entries:  # TIDX-1, TIDX-4: (largest timestamp so far, its batch's end)
                holder = [d for d in disk if d.last == o]
                assert holder and holder[0].max_ts == t, f"time entry ({t}, {o}) names no batch"
                assert all(d.max_ts < t for d in disk if d.last < o), f"entry ({t}, {o})"
            if not active and disk:  # TIDX-4, SEG-7: the final entry is the largest timestamp
                assert entries and entries[-1][0] == max(d.max_ts for d in disk), (
                    f"segment {s.base_offset}: last time entry {entries[-1:]} is not the max"
                )

    @invariant()
    def disk_matches_model(self):
        """LOG-10, COMPACT-2, COMPACT-8: every batch on disk is the model's, byte for byte
        where the model knows the bytes."""
        disk = self._disk_batches()
        assert [(d.base, d.last) for d in disk] == [(b.base, b.last) for b in self.batches]
        for d, b in zip(disk, self.batches, strict=True):
            assert d.records == b.records, f"records of batch {b.base} differ"
            assert d.epoch == b.epoch and d.attributes & 0x07 == b.codec
            assert bool(d.attributes & _ATTR_LOG_APPEND_TIME) == b.log_append_time  # LOG-11
            if b.raw is not None:
                assert d.raw == b.raw, f"bytes of batch {b.base} changed"
            horizon = d.base_ts if d.attributes & _ATTR_DELETE_HORIZON else None
            assert horizon == b.horizon, f"batch {b.base}: horizon {horizon} != {b.horizon}"

    @invariant()
    def reading_from_the_start_returns_the_model(self):
        """LOG-3, LOG-4, LOG-6: a consumer from the log start sees exactly the model."""
        log, offset, seen = self.log, self.start, []
        expected = [b for b in self.batches if b.last >= self.start]
        while offset < self.leo:
            info = log.read(offset, 1)
            got = parse_batches(info.read_bytes())
            if not got:  # only compaction can leave offsets below the end without a batch
                rest = [b.base for b in self.batches if b.last >= offset]
                assert not rest, f"read({offset}, 1) returned nothing; batches {rest} remain"
                assert info.next_offset == self.leo, (offset, info.next_offset)
                break
            assert len(got) == 1, f"read({offset}, 1) returned {len(got)} batches"
            assert got[0].last >= offset
            seen.append(got[0])
            self._check_next_offset(info.next_offset, got[0].last, self.leo)
            offset = info.next_offset
        assert log.read(self.leo, 1000).size == 0  # LOG-5
        assert [(d.base, d.last) for d in seen] == [(b.base, b.last) for b in expected]
        records = [r for d in seen for r in d.records if r.offset >= self.start]
        assert records == self._visible()

    @invariant()
    def compaction_keeps_the_latest_value_of_every_key(self):
        """COMPACT-1, COMPACT-11: keys are unique below the checkpoint, and a consumer's
        key -> value map is the one of the log as if it had never been compacted."""
        if self.policy != "compact":
            return
        visible = self._visible()
        checkpoint = self.cleaner.checkpoint_of(self.log)
        assert checkpoint == self.checkpoint
        if checkpoint is not None:
            keys = [r.key for r in visible if r.offset < checkpoint]
            assert len(keys) == len(set(keys)), f"duplicate keys below {checkpoint}: {keys}"
        assert fold(visible) == fold(r for r in self.shadow if r.offset >= self.start)


LogMachine.TestCase.settings = settings(stateful_step_count=50)
TestLogMachine = pytest.mark.spec(
    "LOG-1",
    "LOG-2",
    "LOG-3",
    "LOG-4",
    "LOG-5",
    "LOG-6",
    "LOG-7",
    "LOG-9",
    "LOG-10",
    "LOG-11",
    "LOG-12",
    "LOG-13",
    "LOG-14",
    "LOG-15",
    "LOG-16",
    "LOG-17",
    "SEG-1",
    "SEG-2",
    "SEG-3",
    "SEG-6",
    "SEG-7",
    "INDEX-2",
    "INDEX-5",
    "INDEX-6",
    "INDEX-7",
    "TIDX-1",
    "TIDX-2",
    "TIDX-4",
    "DUR-1",
    "DUR-2",
    "DUR-3",
    "DUR-4",
    "DUR-5",
    "DUR-6",
    "DUR-9",
    "RET-1",
    "RET-2",
    "RET-3",
    "RET-4",
    "RET-5",
    "RET-6",
    "RET-8",
    "COMPACT-1",
    "COMPACT-2",
    "COMPACT-3",
    "COMPACT-5",
    "COMPACT-6",
    "COMPACT-8",
    "COMPACT-9",
    "COMPACT-10",
    "COMPACT-11",
    "DUR-11",
)(LogMachine.TestCase)

"""The producer state of a partition log: sequence checks, duplicates, snapshots, expiry
(spec/idempotence.md, IDEM-1..IDEM-14), plus a stateful test of idempotent producers.

The unit tests drive a real `Log`. The state machine at the end plays the client's side of
KIP-98: producers with at most five requests in flight, delivered in any order, some
responses lost, retried, older epochs ("zombies"), rolls and restarts (clean, and crashes
that lose or damage snapshot files). Its invariants: the log never holds a value twice,
each producer's values are a prefix of what it sent, in order, every acknowledged value is
where its acknowledgement said, and the producer state equals what an independent reading
of the batch headers gives.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass

import pytest
from crc32c import crc32c
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import (
    ErrorCode,
    InvalidProducerEpochError,
    InvalidRecordError,
    KafkaError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from kafka_ref.log.log import Log
from kafka_ref.log.producer_entry import (
    INT32_MAX,
    increment_sequence,
    last_sequence_of,
)
from kafka_ref.log.producer_snapshot import (
    CorruptSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    snapshot_path,
)
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.log.retention import LogRetention
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, make_batch, open_broker_log, read_everything

pytestmark = pytest.mark.timeout(120)

PID = 4242
HOUR = 3_600_000
DAY = 24 * HOUR


def pbatch(seq: int, count: int = 1, *, pid: int = PID, epoch: int = 0, **kw) -> bytes:
    """A producer's batch of `count` records; values name the sequence of each record."""
    records = [
        Record(None, b"%d-%d" % (pid, increment_sequence(seq, i)) if seq >= 0 else b"x", T0 + i)
        for i in range(count)
    ]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, **kw)


def values(log: Log) -> list[bytes]:
    return [r.value for _, raw in read_everything(log) for r in RecordBatch(raw).records()]


def files(log: Log) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(log.dir)):
        with open(os.path.join(log.dir, name), "rb") as f:
            out[name] = f.read()
    return out


def state(log: Log) -> dict[int, tuple]:
    return {pid: e.key() for pid, e in log.producer_state.active_producers.items()}


def expected_state(log: Log) -> dict[int, tuple]:
    """The producer state, computed from the log's batch headers by this test's own rules."""
    out: dict[int, tuple] = {}
    for header, _ in read_everything(log):
        if header.producer_id < 0:
            continue
        pid, epoch, spans = out.get(header.producer_id, (header.producer_id, None, ()))
        if epoch != header.producer_epoch:
            spans = ()
        if not header.is_control:
            span = (
                header.base_sequence,
                last_sequence_of(header),
                header.base_offset,
                header.last_offset,
            )
            spans = (*spans, span)[-5:]
        out[pid] = (pid, header.producer_epoch, spans)
    return out


def crash(log: Log) -> None:
    """The process dies: nothing is flushed, trimmed, checkpointed or snapshotted."""
    for segment in log.segments:
        segment.offset_index.flush()
        segment.time_index.flush()


# ---------------------------------------------------------------------- checking a batch
@pytest.mark.spec("IDEM-2")
def test_in_order_batches_are_appended_and_the_last_five_remembered(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    first = log.append(pbatch(0, 3))
    second = log.append(pbatch(3, 2))
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    entry = log.producer_state.last_entry(PID)
    assert (entry.producer_epoch, entry.last_seq, len(entry.batches)) == (0, 4, 2)
    for seq in range(5, 11):
        log.append(pbatch(seq))
    entry = log.producer_state.last_entry(PID)
    assert [(b.first_seq, b.last_seq) for b in entry.batches] == [(s, s) for s in range(6, 11)]
    assert values(log) == [b"%d-%d" % (PID, s) for s in range(11)]


@pytest.mark.spec("IDEM-2", "IDEM-3", "IDEM-4")
def test_sequences_wrap_after_int32_max(tmp_path):
    assert increment_sequence(INT32_MAX, 1) == 0 and increment_sequence(INT32_MAX - 1, 3) == 1
    log = open_broker_log(tmp_path / "t-0")
    # A producer already near the end of the range (state taken from a replicated batch).
    log.append(pbatch(INT32_MAX - 9, 8), assign_offsets=False)  # ... INT32_MAX - 2
    wrapping = log.append(pbatch(INT32_MAX - 1, 3))  # INT32_MAX - 1, INT32_MAX, 0
    assert log.producer_state.last_entry(PID).last_seq == 0
    assert log.append(pbatch(1, 2)).first_offset == wrapping.last_offset + 1
    retry = log.append(pbatch(INT32_MAX - 1, 3))  # the wrapping batch, again
    assert (retry.first_offset, retry.size) == (wrapping.first_offset, 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(4))  # 3 is missing


@pytest.mark.spec("IDEM-3", "IDEM-1", "IDEM-4")
def test_a_duplicate_of_the_last_five_returns_the_original_offsets(tmp_path):
    log = open_broker_log(tmp_path / "t-0", segment_bytes=400)
    originals = {}
    seq = 0
    for count in (2, 1, 3, 1, 2, 4):
        originals[seq] = (count, log.append(pbatch(seq, count)))
        seq += count
    before, end = files(log), log.log_end_offset
    for first, (count, info) in list(originals.items())[1:]:  # the five newest
        retry = log.append(pbatch(first, count))
        assert (retry.first_offset, retry.last_offset) == (info.first_offset, info.last_offset)
        assert retry.size == retry.record_count == 0
    assert log.log_end_offset == end and files(log) == before
    with pytest.raises(OutOfOrderSequenceError) as err:  # the sixth newest is forgotten
        log.append(pbatch(0, 2))
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert values(log) == [b"%d-%d" % (PID, s) for s in range(seq)]


@pytest.mark.spec("IDEM-3")
def test_a_duplicate_on_a_log_append_time_topic_returns_the_original_time(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    original = log.append(pbatch(0, 2))
    clock.advance(5000)
    retry = log.append(pbatch(0, 2))
    assert original.log_append_time == T0
    assert (retry.first_offset, retry.log_append_time) == (0, T0)
    plain = open_broker_log(tmp_path / "t-1", clock)  # CreateTime: -1, as for a new batch
    plain.append(pbatch(0))
    assert plain.append(pbatch(0)).log_append_time == -1


@pytest.mark.spec("IDEM-4", "IDEM-1")
def test_a_gap_or_a_reordered_batch_is_out_of_order(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    log.append(pbatch(0, 2))
    before = files(log)
    for seq in (5, 3, 1):  # a gap, a later request before an earlier one, a partial overlap
        with pytest.raises(OutOfOrderSequenceError) as err:
            log.append(pbatch(seq))
        assert isinstance(err.value, KafkaError)
        assert err.value.code not in (ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NO_ERROR)
    assert files(log) == before and log.log_end_offset == 2
    log.append(pbatch(2))
    log.append(pbatch(3))  # the retry, once the batch before it is in
    assert values(log)[-2:] == [b"%d-2" % PID, b"%d-3" % PID]


@pytest.mark.spec("IDEM-5", "IDEM-6")
def test_epochs_fence_older_producers_and_a_new_epoch_starts_at_zero(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    log.append(pbatch(0, 2, epoch=0))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(2, epoch=1))  # a new epoch must start at 0
    log.append(pbatch(0, epoch=1))
    entry = log.producer_state.last_entry(PID)
    assert (entry.producer_epoch, [(b.first_seq, b.last_seq) for b in entry.batches]) == (
        1,
        [(0, 0)],
    )
    end = log.log_end_offset
    for zombie in (pbatch(2, epoch=0), pbatch(0, 2, epoch=0)):  # a new batch, a retry
        with pytest.raises(InvalidProducerEpochError) as err:
            log.append(zombie)
        assert err.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == end
    log.append(pbatch(1, epoch=1))


@pytest.mark.spec("IDEM-7")
def test_a_producer_without_state_must_start_at_sequence_zero(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    with pytest.raises(UnknownProducerIdError) as err:
        log.append(pbatch(7, pid=77))
    assert err.value.code == ErrorCode.UNKNOWN_PRODUCER_ID
    assert log.log_end_offset == 0 and log.producer_state.last_entry(77) is None
    log.append(pbatch(0, pid=77))
    log.append(make_batch(2))  # batches without a producer id are not checked at all
    assert log.log_end_offset == 3


@pytest.mark.spec("IDEM-8")
def test_client_batches_need_a_sequence_and_an_epoch_and_no_control(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    bad = [
        pbatch(-1),  # a producer id without a sequence
        pbatch(0, epoch=-1),
        build_batch([Record(b"\0\0\0\1", b"\0" * 6, T0)], is_control=True),  # a marker
    ]
    for batch in bad:
        with pytest.raises(InvalidRecordError) as err:
            log.append(batch)
        assert err.value.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0
    coordinator = AppendOrigin.COORDINATOR  # checks epochs only
    log.append(pbatch(-1, pid=9, epoch=3, is_transactional=True), origin=coordinator)
    marker = build_batch(
        [Record(b"\0\0\0\1", b"\0" * 6, T0)],
        producer_id=9,
        producer_epoch=3,
        is_transactional=True,
        is_control=True,
    )
    log.append(marker, origin=coordinator)
    with pytest.raises(InvalidProducerEpochError):
        log.append(pbatch(-1, pid=9, epoch=2, is_transactional=True), origin=coordinator)
    assert log.log_end_offset == 2


@pytest.mark.spec("IDEM-1", "IDEM-3")
def test_a_multi_batch_append_is_all_or_nothing(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(0, 2) + pbatch(3))  # the second batch leaves a gap
    assert log.log_end_offset == 0 and log.producer_state.last_entry(PID) is None
    info = log.append(pbatch(0, 2) + pbatch(2, 3))
    assert (info.first_offset, info.last_offset) == (0, 4)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(2, 3) + pbatch(5))  # a retry and a new batch together
    retry = log.append(pbatch(0, 2) + pbatch(2, 3))
    assert (retry.first_offset, retry.last_offset, retry.size) == (0, 4, 0)
    assert log.log_end_offset == 5


# ---------------------------------------------------------------------- keeping the state
@pytest.mark.spec("IDEM-9")
def test_the_state_survives_a_clean_restart(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, segment_bytes=500)
    infos = [log.append(pbatch(seq, 2)) for seq in range(0, 30, 2)]
    log.append(pbatch(0, pid=7))
    before = state(log)
    log.close()
    assert list_snapshots(log.dir)[-1] == infos[-1].last_offset + 2  # at the log end
    leftover = tmp_path / "t-0" / "00000000000000000099.snapshot.tmp"  # a write cut short
    leftover.write_bytes(b"\x00\x01")
    reopened = Log.open(
        log.dir, log.config, clock, clean_shutdown=True, producer_state=ProducerStateManager
    )
    assert not leftover.exists()
    assert state(reopened) == before == expected_state(reopened)
    for seq, info in zip(range(20, 30, 2), infos[-5:], strict=True):  # all five survive
        assert reopened.append(pbatch(seq, 2)).first_offset == info.first_offset
    assert reopened.log_end_offset == log.log_end_offset


@pytest.mark.spec("IDEM-9")
def test_completing_a_swap_keeps_the_producer_snapshots_in_its_range(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    for seq in range(10):
        if seq == 5:
            log.roll()  # a snapshot at 5
        log.append(pbatch(seq))
    log.roll()
    data = b"".join(segment.log.read(0, segment.size) for segment in log.segments[:2])
    log.close()
    # A committed replacement of the segments 0 and 5 (a crash before the loader finished
    # it, DUR-11): one `.swap` segment of both, offsets 0..9.
    (tmp_path / "t-0" / "00000000000000000000.log.swap").write_bytes(data)
    assert (tmp_path / "t-0" / "00000000000000000005.snapshot").exists()
    reopened = Log.open(log.dir, log.config, clock, producer_state=ProducerStateManager)
    names = os.listdir(log.dir)
    assert "00000000000000000005.log" not in names  # replaced by the swap
    assert "00000000000000000005.snapshot" in names  # it describes offsets: it stays
    assert [s.base_offset for s in reopened.segments] == [0, 10]
    assert reopened.producer_state.last_entry(PID).last_seq == 9
    assert values(reopened) == [b"%d-%d" % (PID, seq) for seq in range(10)]


@pytest.mark.spec("IDEM-9")
@pytest.mark.parametrize("damage", ["delete all", "delete newest", "corrupt newest", "cut newest"])
def test_the_state_is_rebuilt_after_a_crash_whatever_happened_to_snapshots(tmp_path, damage):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, segment_bytes=400)
    infos = [log.append(pbatch(seq, 2)) for seq in range(0, 40, 2)]
    log.append(pbatch(0, 3, pid=7))
    before = state(log)
    crash(log)
    snapshots = list_snapshots(log.dir)
    assert len(snapshots) >= 2, "the small segments roll, and every roll writes a snapshot"
    newest = snapshot_path(log.dir, snapshots[-1])
    if damage == "delete all":
        for offset in snapshots:
            os.unlink(snapshot_path(log.dir, offset))
    elif damage == "delete newest":
        os.unlink(newest)
    else:
        with open(newest, "rb") as f:
            data = bytearray(f.read())
        if damage == "corrupt newest":
            data[-3] ^= 0x40
        else:
            del data[-10:]
        with open(newest, "wb") as f:
            f.write(data)
    # Recovery from the active segment only: the loader then starts from the newest snapshot
    # (recovering older segments would replay from below them, to rebuild .txnindex files).
    recovery_point = log.active_segment.base_offset
    reopened = Log.open(
        log.dir,
        log.config,
        clock,
        recovery_point=recovery_point,
        producer_state=ProducerStateManager,
    )
    assert state(reopened) == before == expected_state(reopened)
    assert reopened.log_end_offset in list_snapshots(log.dir)  # written after the replay
    if damage != "delete all":
        assert snapshots[-1] not in list_snapshots(log.dir) or damage == "delete newest"
    for seq, info in zip(range(30, 40, 2), infos[-5:], strict=True):
        assert reopened.append(pbatch(seq, 2)).first_offset == info.first_offset
    assert reopened.append(pbatch(40)).first_offset == log.log_end_offset


@pytest.mark.spec("IDEM-10")
def test_snapshot_files_have_kafkas_layout_with_one_entry_per_batch(tmp_path):
    entry = SnapshotEntry(5, 2, 9, 100, 3, T0, -1, -1)
    data = encode_snapshot([entry])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 5, 2, 9, 100, 3, T0, -1, -1)
    assert data == struct.pack(">hI", 1, crc32c(body)) + body  # version, CRC-32C, entries
    assert decode_snapshot(data) == [entry]
    for broken in (data[:-1], b"\x00\x02" + data[2:], data[:20] + b"\xff" + data[21:]):
        with pytest.raises(CorruptSnapshotError):
            decode_snapshot(broken)

    log = open_broker_log(tmp_path / "t-0")
    for seq in range(0, 14, 2):
        log.append(pbatch(seq, 2))
    log.close()
    with open(snapshot_path(log.dir, log.log_end_offset), "rb") as f:
        entries = decode_snapshot(f.read())
    assert [(e.producer_id, e.last_sequence, e.last_offset, e.offset_delta) for e in entries] == [
        (PID, seq + 1, seq + 1, 1) for seq in range(4, 14, 2)
    ]
    kafka_reads = {e.producer_id: e for e in entries}  # Kafka keeps the last entry per id
    assert kafka_reads[PID].last_sequence == 13


@pytest.mark.spec("IDEM-11")
def test_a_follower_takes_the_state_from_what_it_copies(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    log.append(pbatch(10, 2, base_offset=0), assign_offsets=False)  # no state, sequence 10
    log.append(pbatch(50, 3, base_offset=2), assign_offsets=False)  # a gap: not checked
    assert log.producer_state.last_entry(PID).last_seq == 52
    retry = log.append(pbatch(50, 3))  # now leader: a retry the old leader had appended
    assert (retry.first_offset, retry.last_offset, retry.size) == (2, 4, 0)
    assert log.append(pbatch(53)).first_offset == 5


@pytest.mark.spec("IDEM-12")
def test_truncation_reloads_the_state_from_the_nearest_snapshot(tmp_path):
    log = open_broker_log(tmp_path / "t-0", segment_bytes=400)
    infos = [log.append(pbatch(seq, 2)) for seq in range(0, 40, 2)]
    cut = infos[13].first_offset  # batches 13.. go
    assert any(s > cut for s in log.producer_state.snapshot_offsets)
    log.truncate_to(cut)
    assert all(s <= cut for s in list_snapshots(log.dir))
    assert log.producer_state.last_entry(PID).last_seq == 25
    assert state(log) == expected_state(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(38, 2))  # the old end is gone
    assert log.append(pbatch(26, 2)).first_offset == cut  # the producer resends what was cut
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.active_producers == {} and list_snapshots(log.dir) == []
    with pytest.raises(UnknownProducerIdError):
        log.append(pbatch(28))


@pytest.mark.spec("IDEM-13")
def test_snapshots_go_with_their_segments_and_only_recent_ones_stay(tmp_path):
    clock = ManualClock(T0)
    unflushed = open_broker_log(tmp_path / "u-0", clock, segment_bytes=300)
    flushed = open_broker_log(
        tmp_path / "t-0", clock, segment_bytes=300, retention_ms=HOUR, flush_messages=1
    )
    for seq in range(60):
        for log in (unflushed, flushed):
            log.append(pbatch(seq))
        # The recovery point is the log end: the snapshots of the last two segments stay.
        bases = [s.base_offset for s in flushed.segments]
        assert list_snapshots(flushed.dir) == [b for b in bases[-2:] if b > 0]
    # Nothing flushed: recovery would start at segment 0, so every snapshot may be needed.
    assert list_snapshots(unflushed.dir) == [s.base_offset for s in unflushed.segments[1:]]
    flushed.roll()
    clock.advance(2 * HOUR)
    assert LogRetention.run(flushed, clock.milliseconds()).segments_deleted > 0
    assert list_snapshots(flushed.dir) == [flushed.segments[0].base_offset]
    flushed.delete_records_before(flushed.log_end_offset)
    assert flushed.producer_state.last_entry(PID).last_seq == 59  # memory keeps the producer


@pytest.mark.spec("IDEM-14")
def test_idle_producers_expire_by_the_brokers_clock(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    log.append(pbatch(0, pid=1))  # the record timestamps say T0, as does the clock
    clock.advance(HOUR)
    log.append(pbatch(0, pid=2))
    clock.set(T0 + DAY - 1)
    assert log.producer_state.remove_expired_producers(clock.milliseconds(), DAY) == []
    clock.set(T0 + DAY)
    assert log.producer_state.remove_expired_producers(clock.milliseconds(), DAY) == [1]
    with pytest.raises(UnknownProducerIdError):
        log.append(pbatch(1, pid=1))
    log.append(pbatch(1, pid=2))
    log.append(pbatch(0, pid=1))  # a forgotten producer may start again at 0


@pytest.mark.spec("IDEM-14", "IDEM-9")
def test_a_replayed_batch_counts_from_the_replay_not_its_old_timestamp(tmp_path):
    clock = ManualClock(T0 + 30 * DAY)  # records stamped a month ago (CreateTime)
    log = open_broker_log(tmp_path / "t-0", clock)
    log.append(pbatch(0, 3))
    crash(log)
    for offset in list_snapshots(log.dir):
        os.unlink(snapshot_path(log.dir, offset))
    clock.advance(HOUR)
    reopened = Log.open(
        log.dir, log.config, clock, producer_state=ProducerStateManager
    )  # replays the batch at this time
    assert reopened.producer_state.remove_expired_producers(clock.milliseconds(), DAY) == []
    clock.advance(DAY)
    assert reopened.producer_state.remove_expired_producers(clock.milliseconds(), DAY) == [PID]


# ---------------------------------------------------------------------- the state machine
VALUE = b"p%d-%d"


@dataclass
class Sent:
    seq: int
    values: list[bytes]
    batch: bytes


class IdempotentProducers(RuleBasedStateMachine):
    """Two idempotent producers writing to one partition log through an unreliable network."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="kafka-ref-idem-")
        self.clock = ManualClock(T0)
        self.config = LogConfig(segment_bytes=700, index_interval_bytes=100)
        self.log = Log.open(self.dir, self.config, self.clock, producer_state=ProducerStateManager)
        self.model: list[bytes] = []  # the values the log must hold, in offset order
        self.sent: dict[int, list[bytes]] = {0: [], 1: []}
        self.next_seq = {0: 0, 1: INT32_MAX - 12}  # producer 1 wraps after a few batches
        self.inflight: dict[int, list[Sent]] = {0: [], 1: []}
        self.acked: dict[bytes, int] = {}
        self.counter = 0
        # Producer 1 already wrote sequences up to INT32_MAX - 13: the state came from a
        # replicated batch (a follower append), as after a leader change.
        seed = [b"seed-%d" % i for i in range(4)]
        self.log.append(self._batch(1, INT32_MAX - 16, seed), assign_offsets=False)
        self.model += seed
        self.sent[1] += seed

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def _batch(p: int, seq: int, vals: list[bytes], epoch: int = 1) -> bytes:
        return build_batch(
            [Record(None, v, T0) for v in vals],
            producer_id=500 + p,
            producer_epoch=epoch,
            base_sequence=seq,
        )

    # ---------------------------------------------------------------- the client's side
    @rule(p=st.integers(0, 1), count=st.integers(1, 4))
    def send(self, p: int, count: int) -> None:
        """A new batch joins the requests in flight (at most five per producer)."""
        if len(self.inflight[p]) >= 5:
            p = 1 - p
            if len(self.inflight[p]) >= 5:
                return
        vals = [VALUE % (p, self.counter + i) for i in range(count)]
        self.counter += count
        seq = self.next_seq[p]
        self.next_seq[p] = increment_sequence(seq, count)
        self.sent[p] += vals
        self.inflight[p].append(Sent(seq, vals, self._batch(p, seq, vals)))

    @precondition(lambda self: self.inflight[0] or self.inflight[1])
    @rule(data=st.data(), lose_response=st.booleans())
    def deliver(self, data, lose_response: bool) -> None:
        """Any request in flight reaches the broker (reordering); its answer may be lost."""
        p = data.draw(st.sampled_from([p for p in (0, 1) if self.inflight[p]]))
        i = data.draw(st.integers(0, len(self.inflight[p]) - 1))
        self._deliver(p, i, lose_response)

    @precondition(lambda self: self.inflight[0] or self.inflight[1])
    @rule(p=st.integers(0, 1))
    def drain(self, p: int) -> None:
        """The network heals: every request in flight is sent in order, each one twice."""
        while self.inflight[p]:
            self._deliver(p, 0, lose_response=True)
            self._deliver(p, 0, lose_response=False)

    def _deliver(self, p: int, i: int, lose_response: bool) -> None:
        sent = self.inflight[p][i]
        self.clock.advance(7)
        try:
            info = self.log.append(sent.batch)
        except (OutOfOrderSequenceError, UnknownProducerIdError) as err:
            # A later batch overtook an earlier one (IDEM-4; IDEM-7 while the producer has
            # no state here yet): refused, and legal only while an earlier batch is missing.
            earlier = [v for s in self.inflight[p][:i] for v in s.values]
            assert not set(earlier) <= set(self.model), "refused though all before it is in"
            if isinstance(err, UnknownProducerIdError):
                assert self.log.producer_state.last_entry(500 + p) is None
            event(f"{err.code.name}: retried later")
            return
        span = self.model[info.first_offset : info.last_offset + 1]
        if info.size:  # appended now
            assert info.first_offset == len(self.model)
            self.model += sent.values
            event("appended")
        else:  # a retry: the original offsets hold exactly this batch
            assert span == sent.values
            event("duplicate: original offsets")
        if not lose_response:
            for k, v in enumerate(sent.values):
                self.acked[v] = info.first_offset + k
            del self.inflight[p][i]

    @rule(p=st.integers(0, 1), seq=st.integers(0, 50))
    def zombie(self, p: int, seq: int) -> None:
        """An older instance of the producer (epoch 0) is fenced and writes nothing."""
        if self.log.producer_state.last_entry(500 + p) is None:
            return  # no epoch to be older than yet (IDEM-7 applies)
        with pytest.raises(InvalidProducerEpochError):
            self.log.append(self._batch(p, seq, [b"zombie"], epoch=0))

    # ---------------------------------------------------------------- the broker's side
    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(
        clean=st.booleans(),
        damage=st.sampled_from(["none", "delete all", "delete some", "corrupt newest"]),
        data=st.data(),
    )
    def restart(self, clean: bool, damage: str, data) -> None:
        recovery_point = self.log.recovery_point
        if clean:
            self.log.close()
        else:
            crash(self.log)
        snapshots = list_snapshots(self.dir)
        if damage == "delete all":
            doomed = snapshots
        elif damage == "delete some":
            doomed = (
                data.draw(st.lists(st.sampled_from(snapshots), unique=True)) if snapshots else []
            )
        else:
            doomed = []
        for offset in doomed:
            os.unlink(snapshot_path(self.dir, offset))
        if damage == "corrupt newest" and snapshots:
            with open(snapshot_path(self.dir, snapshots[-1]), "r+b") as f:
                f.seek(8)
                f.write(b"\xde\xad")
        event(f"restart clean={clean} snapshots: {damage}")
        start = recovery_point if clean else data.draw(st.sampled_from([0, recovery_point]))
        self.log = Log.open(
            self.dir,
            self.config,
            self.clock,
            recovery_point=start,
            clean_shutdown=clean,
            producer_state=ProducerStateManager,
        )

    # ---------------------------------------------------------------- invariants
    @invariant()
    def the_log_holds_each_value_once_as_the_model_says(self) -> None:
        got = values(self.log)
        assert len(got) == len(set(got)), "a value is in the log twice"
        assert got == self.model

    @invariant()
    def each_producer_wrote_a_prefix_of_what_it_sent_in_order(self) -> None:
        for p in (0, 1):
            mine = [v for v in self.model if v in set(self.sent[p])]
            assert mine == self.sent[p][: len(mine)]

    @invariant()
    def every_acknowledged_value_is_where_its_ack_said(self) -> None:
        for value, offset in self.acked.items():
            assert self.model[offset] == value

    @invariant()
    def the_state_is_what_the_batch_headers_say(self) -> None:
        assert state(self.log) == expected_state(self.log)


IdempotentProducers.TestCase.settings = settings(settings(), stateful_step_count=40, deadline=None)
TestIdempotentProducers = pytest.mark.spec(
    "IDEM-1", "IDEM-2", "IDEM-3", "IDEM-4", "IDEM-5", "IDEM-7", "IDEM-9", "IDEM-11"
)(IdempotentProducers.TestCase)

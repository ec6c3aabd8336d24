"""Transactions in the partition log: markers, open transactions, the LSO, `.txnindex`
(spec/transactions.md, TXN-1..TXN-8).

The unit tests drive a real `Log` with real files. The property at the end appends random
interleavings of several producers' transactional batches and markers, with rolls and
crashes, and checks the LSO and the aborted transaction index against a model that reads
nothing but the sequence of operations.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.isolation import READ_COMMITTED, collect_aborted_transactions
from kafka_ref.log.log import Log
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.log.txn_index import AbortedTxn, TransactionIndex, transaction_index
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import BatchHeader, RecordBatch, build_batch
from kafka_ref.record.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_marker_batch,
    read_marker,
)
from kafka_ref.record.record import Record
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.partition import Partition
from tests.unit.log.conftest import T0, open_broker_log

pytestmark = pytest.mark.timeout(120)

COMMIT = EndTransactionMarker(ControlRecordType.COMMIT, 0)
ABORT = EndTransactionMarker(ControlRecordType.ABORT, 0)


class Producer:
    """A transactional producer's side: its id, epoch and next sequence."""

    def __init__(self, pid: int, epoch: int = 0) -> None:
        self.pid, self.epoch, self.seq = pid, epoch, 0

    def batch(self, count: int = 1, *, transactional: bool = True) -> bytes:
        records = [Record(None, b"%d-%d" % (self.pid, self.seq + i), T0) for i in range(count)]
        data = build_batch(
            records,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            is_transactional=transactional,
        )
        self.seq += count
        return data

    def marker(self, marker: EndTransactionMarker) -> bytes:
        return build_marker_batch(self.pid, self.epoch, marker, T0)


def pairs(txns) -> list[tuple[int, int]]:
    """(producer id, first offset) of each aborted transaction, as a Fetch lists them."""
    return [(t.producer_id, t.first_offset) for t in txns]


def end(log: Log, producer: Producer, marker: EndTransactionMarker) -> int:
    return log.append(producer.marker(marker), origin=AppendOrigin.COORDINATOR).first_offset


# ---------------------------------------------------------------------- markers
@pytest.mark.spec("TXN-1")
def test_a_marker_is_a_control_batch_with_kafkas_key_and_value_bytes():
    data = build_marker_batch(7, 3, EndTransactionMarker(ControlRecordType.COMMIT, 5), T0)
    header = BatchHeader.parse(data)
    assert (header.is_control, header.is_transactional) == (True, True)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, -1)
    assert header.records_count == 1 and header.last_offset_delta == 0
    (record,) = RecordBatch(data).records()
    assert record.key == b"\x00\x00\x00\x01"  # version 0, type 1 = COMMIT
    assert record.value == b"\x00\x00\x00\x00\x00\x05"  # version 0, coordinator epoch 5
    assert read_marker(data) == EndTransactionMarker(ControlRecordType.COMMIT, 5)
    abort = build_marker_batch(7, 3, ABORT, T0)
    assert next(RecordBatch(abort).records()).key == b"\x00\x00\x00\x00"
    assert read_marker(abort).control_type == ControlRecordType.ABORT


@pytest.mark.spec("TXN-1")
def test_clients_cannot_write_markers(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    with pytest.raises(KafkaError) as err:
        log.append(Producer(1).marker(COMMIT))
    assert err.value.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


# ---------------------------------------------------------------------- open transactions
@pytest.mark.spec("TXN-2")
def test_a_transactional_batch_opens_a_transaction_that_its_marker_closes(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    p = Producer(1)
    log.append(Producer(9).batch(2, transactional=False))  # 0, 1: not transactional
    log.append(p.batch(2))  # 2, 3
    log.append(p.batch(1))  # 4
    assert log.producer_state.ongoing_transactions == {1: 2}
    assert log.producer_state.last_entry(1).current_txn_first_offset == 2
    assert end(log, p, COMMIT) == 5
    assert log.producer_state.ongoing_transactions == {}
    assert log.producer_state.last_entry(1).current_txn_first_offset == -1
    log.append(p.batch(1))  # the next transaction starts at 6
    assert log.producer_state.ongoing_transactions == {1: 6}


@pytest.mark.spec("TXN-2")
def test_a_producer_inside_a_transaction_cannot_write_outside_it(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    p = Producer(1)
    log.append(p.batch())
    with pytest.raises(KafkaError) as err:
        log.append(p.batch(transactional=False))
    assert err.value.code == ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 1


@pytest.mark.spec("TXN-3")
def test_markers_from_an_older_producer_or_coordinator_epoch_are_fenced(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    p = Producer(1, epoch=2)
    log.append(p.batch())
    old = Producer(1, epoch=1)
    with pytest.raises(KafkaError) as err:
        end(log, old, COMMIT)
    assert err.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    log.append(
        p.marker(EndTransactionMarker(ControlRecordType.COMMIT, 4)), origin=AppendOrigin.COORDINATOR
    )
    log.append(p.batch())
    with pytest.raises(KafkaError) as err:
        end(log, p, EndTransactionMarker(ControlRecordType.ABORT, 3))
    assert err.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.producer_state.ongoing_transactions == {1: 2}


# ---------------------------------------------------------------------- LSO
@pytest.mark.spec("TXN-4")
def test_the_lso_is_the_first_offset_of_the_oldest_open_transaction(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    a, b = Producer(1), Producer(2)
    log.append(Producer(9).batch(3, transactional=False))  # 0..2
    assert READ_COMMITTED.last_stable_offset(log, 3) == 3
    log.append(a.batch(2))  # 3, 4
    log.append(b.batch(1))  # 5
    assert READ_COMMITTED.last_stable_offset(log, 6) == 3
    assert READ_COMMITTED.last_stable_offset(log, 2) == 2  # never above the high watermark
    end(log, a, COMMIT)  # 6
    # a's marker is not below the HW yet: its transaction still holds the LSO
    assert READ_COMMITTED.last_stable_offset(log, 6) == 3
    assert READ_COMMITTED.last_stable_offset(log, 7) == 5  # now b's open transaction does
    end(log, b, ABORT)  # 7
    assert READ_COMMITTED.last_stable_offset(log, 8) == 8


@pytest.mark.spec("TXN-5")
@pytest.mark.parametrize("how", ["clean", "crash"])
def test_an_open_transaction_survives_a_restart(tmp_path, how):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, segment_bytes=300)
    a = Producer(1)
    for _ in range(3):
        log.append(Producer(9 + _).batch(2, transactional=False))
    log.append(a.batch(1))
    first = log.log_end_offset - 1
    for i in range(6):  # rolls: the open transaction's first offset is in an older segment
        log.append(Producer(20 + i).batch(2, transactional=False))
    assert len(log.segments) > 1
    if how == "clean":
        log.close()
        reopened = Log.open(
            log.dir,
            log.config,
            clock,
            recovery_point=log.log_end_offset,
            clean_shutdown=True,
            producer_state=ProducerStateManager,
        )
    else:
        reopened = Log.open(
            log.dir, log.config, clock, recovery_point=0, producer_state=ProducerStateManager
        )
    assert reopened.producer_state.ongoing_transactions == {1: first}
    assert READ_COMMITTED.last_stable_offset(reopened, reopened.log_end_offset) == first
    end(reopened, a, ABORT)
    assert (
        READ_COMMITTED.last_stable_offset(reopened, reopened.log_end_offset)
        == reopened.log_end_offset
    )


# ---------------------------------------------------------------------- .txnindex
@pytest.mark.spec("TXN-6")
def test_an_abort_adds_a_34_byte_entry_to_the_markers_segment_txnindex(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    a, b = Producer(1), Producer(2)
    log.append(a.batch(2))  # 0, 1
    log.append(b.batch(1))  # 2
    end(log, a, ABORT)  # 3: b is still open, so the LSO after it is 2
    end(log, b, COMMIT)  # 4: a commit indexes nothing
    path = os.path.join(log.dir, "00000000000000000000.txnindex")
    with open(path, "rb") as f:
        data = f.read()
    assert data == struct.pack(">hqqqq", 0, 1, 0, 3, 2)
    assert transaction_index(log.active_segment).entries == [AbortedTxn(1, 0, 3, 2)]
    log.append(b.batch(1))  # 5
    end(log, b, ABORT)  # 6
    assert TransactionIndex(path, 0).entries == [AbortedTxn(1, 0, 3, 2), AbortedTxn(2, 5, 6, 7)]


@pytest.mark.spec("TXN-6")
def test_a_segment_without_aborted_transactions_has_no_txnindex_file(tmp_path):
    log = open_broker_log(tmp_path / "t-0")
    p = Producer(1)
    log.append(p.batch())
    end(log, p, COMMIT)
    assert not [n for n in os.listdir(log.dir) if n.endswith(".txnindex")]


@pytest.mark.spec("TXN-7")
@pytest.mark.parametrize("damage", ["crash", "deleted txnindex"])
def test_recovery_rebuilds_the_txnindex_from_the_markers(tmp_path, damage):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, segment_bytes=400)
    producers = [Producer(i) for i in range(1, 5)]
    for i in range(12):
        p = producers[i % 4]
        log.append(p.batch(2))
        if i % 3 == 2:
            end(log, p, ABORT if i % 2 else COMMIT)
    for p in producers:
        end(log, p, ABORT)
    before = [transaction_index(s).entries for s in log.segments]
    assert len(log.segments) > 2 and sum(map(len, before)) >= 4
    log.flush()
    if damage == "deleted txnindex":
        log.close()
        for name in os.listdir(log.dir):
            if name.endswith((".txnindex", ".index")):  # a missing index rebuilds the segment
                os.unlink(os.path.join(log.dir, name))
        reopened = Log.open(
            log.dir,
            log.config,
            clock,
            recovery_point=log.log_end_offset,
            clean_shutdown=True,
            producer_state=ProducerStateManager,
        )
    else:
        reopened = Log.open(
            log.dir, log.config, clock, recovery_point=0, producer_state=ProducerStateManager
        )
    assert [transaction_index(s).entries for s in reopened.segments] == before


# ---------------------------------------------------------------------- reads
@pytest.mark.spec("TXN-8")
def test_collect_aborted_transactions_overlapping_a_read(tmp_path):
    log = open_broker_log(tmp_path / "t-0", segment_bytes=300)
    a, b = Producer(1), Producer(2)
    log.append(a.batch(1))  # 0
    log.append(b.batch(1))  # 1
    end(log, a, ABORT)  # 2: (1, 0, 2)
    for i in range(4):
        log.append(Producer(10 + i).batch(2, transactional=False))  # 3..10
    end(log, b, ABORT)  # 11: (2, 1, 11)
    log.append(a.batch(1))  # 12
    end(log, a, ABORT)  # 13: (1, 12, 13)
    assert len(log.segments) > 1
    assert pairs(collect_aborted_transactions(log, 0, 14)) == [(1, 0), (2, 1), (1, 12)]
    assert pairs(collect_aborted_transactions(log, 3, 11)) == [(2, 1)]
    assert pairs(collect_aborted_transactions(log, 12, 14)) == [(1, 12)]
    assert pairs(collect_aborted_transactions(log, 0, 1)) == [(1, 0)]


# ---------------------------------------------------------------------- property
OPS = st.lists(
    st.tuples(st.sampled_from(["batch", "commit", "abort", "plain", "crash"]), st.integers(0, 2)),
    max_size=40,
)


@pytest.mark.spec("TXN-4", "TXN-6", "TXN-7")
@given(OPS)
def test_lso_and_aborted_index_match_a_model_through_rolls_and_crashes(ops):
    directory = tempfile.mkdtemp()
    try:
        clock = ManualClock(T0)
        log = open_broker_log(os.path.join(directory, "t-0"), clock, segment_bytes=350)
        producers = [Producer(i + 1) for i in range(3)]
        open_first: dict[int, int] = {}  # the model: pid -> first offset of its open txn
        aborted: list[tuple[int, int, int]] = []
        for op, i in ops:
            p = producers[i]
            offset = log.log_end_offset
            if op == "batch":
                log.append(p.batch(1 + i))
                open_first.setdefault(p.pid, offset)
            elif op in ("commit", "abort"):
                end(log, p, COMMIT if op == "commit" else ABORT)
                first = open_first.pop(p.pid, offset)
                if op == "abort":
                    aborted.append((p.pid, first, offset))
            elif op == "plain":
                log.append(Producer(100 + i).batch(1, transactional=False))
            else:
                log.flush()
                log = Log.open(
                    log.dir,
                    log.config,
                    clock,
                    recovery_point=0,
                    producer_state=ProducerStateManager,
                )
            hw = log.log_end_offset
            assert READ_COMMITTED.last_stable_offset(log, hw) == min(
                open_first.values(), default=hw
            )
            index = [
                (t.producer_id, t.first_offset, t.last_offset)
                for s in log.segments
                for t in transaction_index(s).entries
            ]
            assert index == aborted
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.spec("TXN-82")
def test_a_producer_with_an_open_transaction_never_expires(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    a, b = Producer(1), Producer(2)
    log.append(a.batch())  # 0: a's transaction stays open
    log.append(b.batch())  # 1
    end(log, b, COMMIT)  # 2
    day = 86_400_000
    clock.advance(2 * day)
    assert log.producer_state.remove_expired_producers(clock.milliseconds(), day) == [2]
    assert log.producer_state.ongoing_transactions == {1: 0}
    assert READ_COMMITTED.last_stable_offset(log, log.log_end_offset) == 0  # a still holds the LSO
    end(log, a, ABORT)  # 3: its marker finds the producer and closes the transaction
    assert READ_COMMITTED.last_stable_offset(log, log.log_end_offset) == 4
    clock.advance(2 * day)
    assert log.producer_state.remove_expired_producers(clock.milliseconds(), day) == [1]


@pytest.mark.spec("TXN-90")
def test_an_lso_above_the_high_watermark_is_a_bug_caught_at_once(tmp_path, monkeypatch):
    log = open_broker_log(tmp_path)
    assert READ_COMMITTED.last_stable_offset(log, 0) == 0
    from kafka_ref.log import isolation

    monkeypatch.setattr(isolation, "last_stable_offset", lambda *args: args[2] + 1)
    with pytest.raises(AssertionError, match="above the HW"):
        READ_COMMITTED.last_stable_offset(log, 0)


# ---------------------------------------------------------------------- reads change nothing
@pytest.mark.spec("TXN-25")
def test_reading_the_lso_or_the_hw_changes_nothing(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    cache = LeaderEpochFileCache.load(log.dir)
    partition = Partition(
        "t", 0, 0, log, cache, clock, replica_lag_time_max_ms=30_000, isolation=READ_COMMITTED
    )
    a, b = Producer(1), Producer(2)
    log.append(a.batch(2))  # 0, 1
    end(log, a, ABORT)  # 2
    log.append(b.batch(1))  # 3: b's transaction is open
    state = log.producer_state

    def observed():
        return (
            {pid: e.key() for pid, e in state.active_producers.items()},
            state.ongoing_transactions,
            state.unreplicated_transactions,
            state.snapshot_offsets,
            sorted(os.listdir(log.dir)),
        )

    before = observed()
    # a's marker (2) is below a HW of 3 or 4, not of 2: the answers depend on the HW asked
    # for only, in any order, however often
    for hw, lso in [(4, 3), (2, 0), (3, 3), (2, 0), (4, 3)]:
        assert READ_COMMITTED.last_stable_offset(log, hw) == lso
        assert pairs(collect_aborted_transactions(log, 0, hw)) == [(1, 0)]
    partition.high_watermark = 4  # setting the attribute tells nobody
    assert partition.high_watermark == 4 and partition.last_stable_offset == 3
    info = partition.read(0, 1 << 20, min_one_batch=True, read_committed=True)
    assert pairs(partition.aborted_transactions(info)) == [(1, 0)]
    partition.high_watermark = 2
    assert partition.last_stable_offset == 0
    assert observed() == before
    # Moving the HW is said explicitly: a's transaction is replicated and forgotten.
    partition.update_high_watermark(4)
    assert state.unreplicated_transactions == [] and state.ongoing_transactions == {2: 3}

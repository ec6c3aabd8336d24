"""Compaction of logs that hold transactions (COMPACT-12, COMPACT-23..COMPACT-26) and
retention of their `.txnindex` (TXN-80).

The logs are real `Log`s with real files; markers are appended as the coordinator does
(`AppendOrigin.COORDINATOR`). `committed_view` reads a log as a read_committed consumer
does (the broker's aborted-transaction list and the client's CompletedFetch), so the
property at the end compares what a consumer would see, not the cleaner's internals.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.client.consumer_fetch import CompletedFetch
from kafka_ref.clock import ManualClock
from kafka_ref.common import TopicPartition
from kafka_ref.config import LogConfig
from kafka_ref.log.cleaner_manager import LogCleaner
from kafka_ref.log.isolation import READ_COMMITTED, collect_aborted_transactions
from kafka_ref.log.log import Log
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.log.retention import LogRetention
from kafka_ref.log.txn_index import AbortedTxn, transaction_index
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import ATTR_DELETE_HORIZON, RecordBatch, build_batch
from kafka_ref.record.control import ControlRecordType, EndTransactionMarker, build_marker_batch
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, read_everything
from tests.unit.log.test_cleaner import no_fsync

pytestmark = pytest.mark.timeout(120)

COMMIT = EndTransactionMarker(ControlRecordType.COMMIT, 0)
ABORT = EndTransactionMarker(ControlRecordType.ABORT, 0)
RETENTION = 1000  # delete.retention.ms in these tests


class Txn:
    """A transactional producer's batches and the coordinator's markers for it."""

    def __init__(self, log: Log, pid: int) -> None:
        self.log, self.pid, self.seq = log, pid, 0

    def send(self, *pairs: tuple[bytes, bytes | None]) -> None:
        records = [Record(k, v, T0) for k, v in pairs]
        self.log.append(
            build_batch(
                records,
                producer_id=self.pid,
                producer_epoch=0,
                base_sequence=self.seq,
                is_transactional=True,
            )
        )
        self.seq += len(records)

    def end(self, marker: EndTransactionMarker) -> None:
        batch = build_marker_batch(self.pid, 0, marker, T0)
        self.log.append(batch, origin=AppendOrigin.COORDINATOR)


def plain(log: Log, *pairs: tuple[bytes, bytes | None]) -> None:
    log.append(build_batch([Record(k, v, T0) for k, v in pairs]))


def open_broker_log(path, clock: ManualClock, **config) -> Log:
    config.setdefault("cleanup_policy", ("compact",))
    config.setdefault("delete_retention_ms", RETENTION)
    return Log.open(str(path), LogConfig(**config), clock, producer_state=ProducerStateManager)


def clean(log: Log, clock: ManualClock):
    """A forced round bounded by the LSO, as the broker runs it (COMPACT-25)."""
    lso = READ_COMMITTED.last_stable_offset(log, log.log_end_offset)
    return LogCleaner().clean(log, clock.milliseconds(), force=True, max_offset=lso)


def committed_view(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) a read_committed consumer reads from the log start to the LSO."""
    lso = READ_COMMITTED.last_stable_offset(log, log.log_end_offset)
    out, offset = [], log.log_start_offset
    while offset < lso:
        info = log.read(offset, 1 << 20, max_offset=lso)
        data = SimpleNamespace(
            error_code=0,
            high_watermark=log.log_end_offset,
            log_start_offset=log.log_start_offset,
            last_stable_offset=lso,
            records=info.read_bytes(),
            aborted_transactions=collect_aborted_transactions(log, offset, info.next_offset),
            preferred_read_replica=-1,
        )
        fetched = CompletedFetch(TopicPartition("t", 0), offset, data, read_committed=True)
        out += [(r.offset, r.key, r.value) for r in fetched.take(1 << 20)]
        if max(fetched.next_fetch_offset, info.next_offset) <= offset:
            break  # no batch between here and the LSO (compaction emptied the range)
        offset = max(fetched.next_fetch_offset, info.next_offset)
    return out


def latest(view) -> dict:
    state = {}
    for _, key, value in view:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def batch_kinds(log: Log) -> list[tuple[int, str]]:
    """(base offset, kind) per batch: data, commit or abort, or empty (a batch kept for
    its producer's state, COMPACT-27); a delete horizon adds '+h'."""
    out = []
    for header, raw in read_everything(log):
        kind = "data" if header.records_count else "empty"
        if header.is_control and header.records_count:
            key = next(RecordBatch(raw).records()).key
            kind = "commit" if key[3] == ControlRecordType.COMMIT else "abort"
        if header.attributes & ATTR_DELETE_HORIZON:
            kind += "+h"
        out.append((header.base_offset, kind))
    return out


# ---------------------------------------------------------------------- aborted records
@pytest.mark.spec("COMPACT-23")
def test_aborted_records_are_removed_and_their_marker_keeps_its_index_entry(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    a, b = Txn(log, 1), Txn(log, 2)
    a.send((b"x", b"a1"), (b"y", b"a1"))  # 0, 1
    b.send((b"z", b"b1"))  # 2
    a.end(ABORT)  # 3
    b.end(COMMIT)  # 4
    log.roll()
    plain(log, (b"w", b"1"))  # 5, active
    assert transaction_index(log.segments[0]).entries == [AbortedTxn(1, 0, 3, 2)]
    stats = clean(log, clock).stats
    assert stats.aborted_records_removed == 2
    # a's records are gone; its batch stays, empty, as a's last batch (COMPACT-27)
    assert batch_kinds(log) == [
        (0, "empty"),
        (2, "data"),
        (3, "abort"),
        (4, "commit"),
        (5, "data"),
    ]
    # The kept ABORT marker's entry moved into the cleaned segment's .txnindex.
    assert transaction_index(log.segments[0]).entries == [AbortedTxn(1, 0, 3, 2)]
    assert committed_view(log) == [(2, b"z", b"b1"), (5, b"w", b"1")]


@pytest.mark.spec("COMPACT-23")
def test_an_aborted_record_never_supersedes_a_committed_one(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    plain(log, (b"k", b"committed"))  # 0
    a = Txn(log, 1)
    a.send((b"k", b"aborted"))  # 1
    a.end(ABORT)  # 2
    log.roll()
    plain(log, (b"other", b"1"))  # 3, active
    clean(log, clock)
    assert latest(committed_view(log)) == {b"k": b"committed", b"other": b"1"}
    assert batch_kinds(log) == [(0, "data"), (1, "empty"), (2, "abort"), (3, "data")]


# ---------------------------------------------------------------------- markers
def next_round(log: Log, clock: ManualClock) -> None:
    """A round needs dirty data (COMPACT-4): one more record in a segment of its own."""
    plain(log, (b"filler", b"%d" % log.log_end_offset))
    log.roll()
    clean(log, clock)


def markers(log: Log) -> list[tuple[int, str]]:
    return [(o, k) for o, k in batch_kinds(log) if k != "data"]


@pytest.mark.spec("COMPACT-24")
@pytest.mark.parametrize("kind", [ABORT, COMMIT])
def test_a_marker_without_data_goes_after_delete_retention_ms(tmp_path, kind):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    a = Txn(log, 1)
    a.send((b"k", b"1"))  # 0
    a.end(kind)  # 1
    plain(log, (b"k", b"2"))  # 2: supersedes a committed record
    a.send((b"later", b"1"))  # 3: a's last batch is another one (COMPACT-27)
    a.end(COMMIT)  # 4
    log.roll()
    name = "abort" if kind is ABORT else "commit"
    later = (4, "commit")
    next_round(log, clock)  # the data goes now; the marker saw it, so it stays as it was
    assert [o for o, _ in batch_kinds(log)][:2] == [1, 2]
    assert markers(log) == [(1, name), later]
    next_round(log, clock)  # no data left: the marker gets its delete horizon
    assert markers(log) == [(1, name + "+h"), later]
    assert transaction_index(log.segments[0]).entries == []  # no data left for a consumer to drop
    clock.advance(RETENTION - 1)
    next_round(log, clock)
    assert markers(log) == [(1, name + "+h"), later]
    clock.advance(1)  # the horizon
    next_round(log, clock)
    assert markers(log) == [later]
    assert latest(committed_view(log)) == {b"k": b"2", b"later": b"1", b"filler": b"8"}


@pytest.mark.spec("COMPACT-12")
def test_a_commit_marker_stays_while_its_transaction_has_records(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    a = Txn(log, 1)
    a.send((b"k", b"1"))  # 0
    a.end(COMMIT)  # 1
    log.roll()
    plain(log, (b"w", b"1"))  # 2, active
    for _ in range(3):
        clock.advance(RETENTION)
        next_round(log, clock)
    assert batch_kinds(log)[:2] == [(0, "data"), (1, "commit")]


@pytest.mark.spec("COMPACT-12")
def test_a_commit_marker_in_the_next_group_stays_while_its_records_do(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, segment_bytes=700)
    a = Txn(log, 1)
    a.send((b"k", b"v" * 600))  # 0: alone fills most of a segment
    log.roll()
    a.end(COMMIT)  # 1: in the next segment, which cannot join the first one's group
    log.roll()
    for _ in range(3):
        clock.advance(RETENTION)
        next_round(log, clock)
    assert markers(log) == [(1, "commit")]
    assert latest(committed_view(log))[b"k"] == b"v" * 600


@pytest.mark.spec("COMPACT-27")
def test_a_producers_emptied_last_batch_stays_so_its_state_can_be_rebuilt(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    idempotent = dict(producer_id=7, producer_epoch=0)
    log.append(build_batch([Record(b"k", b"1", T0)], base_sequence=0, **idempotent))  # 0
    plain(log, (b"k", b"2"))  # 1: supersedes producer 7's only record
    a = Txn(log, 1)
    a.send((b"x", b"aborted"))  # 2
    a.end(ABORT)  # 3
    log.roll()
    next_round(log, clock)
    assert batch_kinds(log)[:4] == [(0, "empty"), (1, "data"), (2, "empty"), (3, "abort")]
    # A crash that lost every producer snapshot: the state is rebuilt from the log alone.
    log.close()
    for name in os.listdir(log.dir):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(log.dir, name))
    rebuilt = Log.open(
        log.dir, log.config, clock, recovery_point=0, producer_state=ProducerStateManager
    )
    assert rebuilt.producer_state.last_entry(7).last_seq == 0
    assert rebuilt.producer_state.last_entry(1).last_seq == 0
    rebuilt.append(build_batch([Record(b"k", b"3", T0)], base_sequence=1, **idempotent))
    rebuilt.close()


# ---------------------------------------------------------------------- open transactions
@pytest.mark.spec("COMPACT-25")
def test_an_open_transaction_is_never_cleaned(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock)
    plain(log, (b"k", b"1"))  # 0
    a = Txn(log, 1)
    a.send((b"k", b"open"))  # 1: undecided
    log.roll()
    plain(log, (b"k", b"2"))  # 2
    log.roll()
    plain(log, (b"w", b"1"))  # 3, active
    assert READ_COMMITTED.last_stable_offset(log, log.log_end_offset) == 1
    result = clean(log, clock)
    # The round stops at the segment holding the LSO: nothing of the transaction is read.
    assert result.to_clean.first_uncleanable_offset == 0 and not result.cleaned
    assert [o for o, _ in batch_kinds(log)] == [0, 1, 2, 3]
    a.end(ABORT)  # 4
    log.roll()
    plain(log, (b"v", b"1"))  # 5, active
    clean(log, clock)
    assert latest(committed_view(log)) == {b"k": b"2", b"w": b"1", b"v": b"1"}
    assert batch_kinds(log) == [(1, "empty"), (2, "data"), (3, "data"), (4, "abort"), (5, "data")]


# ---------------------------------------------------------------------- retention
@pytest.mark.spec("TXN-80")
def test_retention_deletes_the_txnindex_with_its_segment(tmp_path):
    clock = ManualClock(T0)
    log = open_broker_log(tmp_path / "t-0", clock, cleanup_policy=("delete",))
    a, b, c = Txn(log, 1), Txn(log, 2), Txn(log, 3)
    a.send((b"x", b"1"))  # 0
    a.end(ABORT)  # 1: indexed in the first segment
    b.send((b"y", b"1"))  # 2: b's transaction starts in the first segment...
    log.roll()
    c.send((b"z", b"1"))  # 3
    b.end(ABORT)  # 4: ...and is aborted in the second
    log.roll()
    plain(log, (b"w", b"1"))  # 5, active; c still open
    first = os.path.join(log.dir, "00000000000000000000.txnindex")
    assert os.path.exists(first)
    limit = log.size_in_bytes - log.segments[0].size  # retention.bytes: the first goes
    log.config = dataclasses.replace(log.config, retention_bytes=limit)
    LogRetention.run(log, clock.milliseconds())
    assert log.log_start_offset == 3 and not os.path.exists(first)
    assert READ_COMMITTED.last_stable_offset(log, log.log_end_offset) == 3  # c still holds the LSO
    assert collect_aborted_transactions(log, 3, 6) == [AbortedTxn(2, 2, 4, 3)]
    c.end(COMMIT)  # 6
    assert READ_COMMITTED.last_stable_offset(log, log.log_end_offset) == 7
    assert committed_view(log) == [(3, b"z", b"1"), (5, b"w", b"1")]


# ---------------------------------------------------------------------- the property
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("send"), st.integers(1, 3), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("end"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("roll")),
        st.tuples(st.just("clean"), st.integers(0, 2 * RETENTION)),
    ),
    max_size=40,
)


@pytest.mark.spec("COMPACT-26")
@settings(deadline=None)
@given(ops=OPS)
def test_cleaning_keeps_the_read_committed_latest_value_of_every_key(ops):
    with tempfile.TemporaryDirectory() as tmp, no_fsync():
        clock = ManualClock(T0)
        log = open_broker_log(os.path.join(tmp, "t-0"), clock)
        txns = {pid: Txn(log, pid) for pid in (1, 2, 3)}
        open_: dict[int, list[bytes | None]] = {}  # pid -> values of its open transaction
        aborted: set[bytes | None] = set()
        for op in ops:
            if op[0] == "plain":
                plain(log, (b"k%d" % op[1], None if op[2] else b"p%d" % log.log_end_offset))
            elif op[0] == "send":
                _, pid, key, tomb = op
                value = None if tomb else b"t%d" % log.log_end_offset
                txns[pid].send((b"k%d" % key, value))
                open_.setdefault(pid, []).append(value)
            elif op[0] == "end" and op[1] in open_:
                txns[op[1]].end(COMMIT if op[2] else ABORT)
                values = open_.pop(op[1])
                if not op[2]:
                    aborted.update(v for v in values if v is not None)
            elif op[0] == "roll":
                log.roll()
            elif op[0] == "clean":
                before = latest(committed_view(log))
                clock.advance(op[1])
                clean(log, clock)
                assert latest(committed_view(log)) == before
        for pid, values in open_.items():  # decide everything, then clean past the horizons
            txns[pid].end(ABORT)
            aborted.update(v for v in values if v is not None)
        log.roll()
        before = latest(committed_view(log))
        for _ in range(3):
            clock.advance(RETENTION)
            next_round(log, clock)
        before.pop(b"filler", None)
        after = latest(committed_view(log))
        after.pop(b"filler", None)
        assert after == before
        # No aborted record is left in the files (a producer's last batch may stay, empty).
        on_disk = {r.value for _, raw in read_everything(log) for r in RecordBatch(raw).records()}
        assert not on_disk & aborted
        log.close()

"""The consumer's fetch path without a broker: answers built from real batch bytes."""

from __future__ import annotations

import struct
import time

import pytest

from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.consumer_fetch import CompletedFetch, Fetcher
from kafka_ref.client.subscription_state import OffsetResetStrategy, SubscriptionState
from kafka_ref.common import TopicPartition
from kafka_ref.errors import CorruptRecordError, ErrorCode, OffsetOutOfRangeError
from kafka_ref.protocol.messages import FetchResponse
from kafka_ref.record.batch import build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Record
from tests.unit.client.conftest import metadata_response

TP = TopicPartition("t", 0)


def batch(base: int, n: int, *, pid=-1, transactional=False, codec=Compression.NONE) -> bytes:
    records = [Record(b"k%d" % (base + i), b"v%d" % (base + i), 1000 + base + i) for i in range(n)]
    return build_batch(
        records,
        base_offset=base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=transactional,
        compression=codec,
    )


def marker(offset: int, pid: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return build_batch(
        [Record(key, value, 5000)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


def data(records: bytes, error=0, aborted=(), preferred=-1) -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(
        preferred_read_replica=preferred,
        partition_index=0,
        error_code=error,
        high_watermark=100,
        last_stable_offset=100,
        log_start_offset=0,
        aborted_transactions=[
            FetchResponse.AbortedTransaction(producer_id=p, first_offset=o) for p, o in aborted
        ],
        records=records,
    )


@pytest.mark.spec("CLIENT-13")
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
def test_records_below_the_fetch_offset_are_dropped_from_the_first_batch(codec):
    fetch = CompletedFetch(TP, 5, data(batch(3, 5, codec=codec) + batch(8, 2)))
    records = fetch.take(100)
    assert [r.offset for r in records] == [5, 6, 7, 8, 9]
    assert records[0].key == b"k5" and records[0].timestamp == 1005
    assert fetch.next_fetch_offset == 10 and fetch.exhausted


@pytest.mark.spec("CLIENT-13")
def test_a_truncated_last_batch_is_ignored_and_refetched():
    whole, cut = batch(0, 3), batch(3, 3)
    fetch = CompletedFetch(TP, 0, data(whole + cut[: len(cut) - 5]))
    assert [r.offset for r in fetch.take(100)] == [0, 1, 2]
    assert fetch.next_fetch_offset == 3


@pytest.mark.spec("CLIENT-13")
def test_records_are_handed_out_max_records_at_a_time():
    fetch = CompletedFetch(TP, 0, data(batch(0, 7)))
    assert [r.offset for r in fetch.take(3)] == [0, 1, 2]
    assert fetch.next_fetch_offset == 3 and not fetch.exhausted
    assert [r.offset for r in fetch.take(3)] == [3, 4, 5]
    assert [r.offset for r in fetch.take(3)] == [6]
    assert fetch.exhausted and fetch.next_fetch_offset == 7


@pytest.mark.spec("CLIENT-13")
def test_a_corrupt_batch_is_an_error_not_data():
    raw = bytearray(batch(0, 3))
    raw[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        CompletedFetch(TP, 0, data(bytes(raw))).take(10)


@pytest.mark.spec("CLIENT-14")
def test_control_batches_are_skipped_and_the_position_moves_past_them():
    answer = batch(0, 2, pid=7, transactional=True) + marker(2, 7, commit=True) + batch(3, 1)
    fetch = CompletedFetch(TP, 0, data(answer))
    assert [r.offset for r in fetch.take(100)] == [0, 1, 3]
    only_marker = CompletedFetch(TP, 2, data(marker(2, 7, commit=True)))
    assert only_marker.take(100) == [] and only_marker.next_fetch_offset == 3


@pytest.mark.spec("CLIENT-14")
def test_read_committed_skips_aborted_transactions_until_their_marker():
    answer = (
        batch(0, 2, pid=7, transactional=True)  # aborted below
        + batch(2, 1, pid=8, transactional=True)  # committed
        + marker(3, 7, commit=False)
        + batch(4, 1, pid=7, transactional=True)  # a new transaction of 7: committed
        + marker(5, 8, commit=True)
        + marker(6, 7, commit=True)
    )
    committed = CompletedFetch(TP, 0, data(answer, aborted=[(7, 0)]), read_committed=True)
    assert [r.offset for r in committed.take(100)] == [2, 4]
    assert committed.next_fetch_offset == 7
    uncommitted = CompletedFetch(TP, 0, data(answer, aborted=[(7, 0)]))
    assert [r.offset for r in uncommitted.take(100)] == [0, 1, 2, 4]


def fetcher(reset="earliest", brokers=None) -> tuple[Fetcher, SubscriptionState, Metadata]:
    metadata = Metadata([("h", 1)])
    extra = {"brokers": brokers} if brokers else {}
    metadata.update(metadata_response({"t": [1]}, **extra), now_ms=0)
    subscriptions = SubscriptionState(reset)
    subscriptions.assign([TP])
    return Fetcher(None, metadata, subscriptions, max_poll_records=4), subscriptions, metadata


@pytest.mark.spec("CLIENT-13")
def test_collect_fetch_advances_the_position_and_respects_max_poll_records():
    f, subscriptions, _ = fetcher()
    subscriptions.seek(TP, 1)
    f.completed.append(CompletedFetch(TP, 1, data(batch(0, 10))))
    assert [r.offset for r in f.collect_fetch()] == [1, 2, 3, 4]
    assert subscriptions.position(TP) == 5
    assert [r.offset for r in f.collect_fetch()] == [5, 6, 7, 8]
    assert [r.offset for r in f.collect_fetch()] == [9]
    assert subscriptions.position(TP) == 10


@pytest.mark.spec("CLIENT-13")
def test_an_answer_to_an_older_position_is_dropped_after_a_seek():
    f, subscriptions, _ = fetcher()
    subscriptions.seek(TP, 0)
    f.completed.append(CompletedFetch(TP, 0, data(batch(0, 10))))
    subscriptions.seek(TP, 50)
    assert f.collect_fetch() == [] and subscriptions.position(TP) == 50


@pytest.mark.spec("CLIENT-15")
def test_offset_out_of_range_resets_per_the_strategy_or_raises_with_none():
    f, subscriptions, _ = fetcher("earliest")
    subscriptions.seek(TP, 500)
    f.completed.append(CompletedFetch(TP, 500, data(b"", error=ErrorCode.OFFSET_OUT_OF_RANGE)))
    assert f.collect_fetch() == []
    assert subscriptions.position(TP) is None
    assert subscriptions.partitions_needing_reset(0) == {TP: OffsetResetStrategy.EARLIEST}
    f, subscriptions, _ = fetcher("none")
    subscriptions.seek(TP, 500)
    f.completed.append(CompletedFetch(TP, 500, data(b"", error=ErrorCode.OFFSET_OUT_OF_RANGE)))
    with pytest.raises(OffsetOutOfRangeError, match="t-0=500"):
        f.collect_fetch()


@pytest.mark.spec("CLIENT-10")
def test_not_leader_in_a_fetch_asks_for_fresh_metadata():
    f, subscriptions, metadata = fetcher()
    subscriptions.seek(TP, 0)
    assert not metadata.update_requested
    f.completed.append(CompletedFetch(TP, 0, data(b"", error=ErrorCode.NOT_LEADER_OR_FOLLOWER)))
    assert f.collect_fetch() == [] and metadata.update_requested
    assert subscriptions.position(TP) == 0


@pytest.mark.spec("CLIENT-15")
def test_subscription_state_positions_and_resets():
    subscriptions = SubscriptionState("latest")
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    subscriptions.assign([a, b])
    assert subscriptions.missing_position() == [a, b]
    subscriptions.seek(a, 3)
    subscriptions.request_offset_reset(b)
    assert subscriptions.fetchable_partitions() == [a]
    assert subscriptions.partitions_needing_reset(0) == {b: OffsetResetStrategy.LATEST}
    subscriptions.maybe_complete_reset(b, 9)
    assert subscriptions.position(b) == 9
    subscriptions.assign([b])  # kept partitions keep their position
    assert subscriptions.position(b) == 9 and not subscriptions.is_assigned(a)
    with pytest.raises(ValueError):
        SubscriptionState("sometimes")


TWO_BROKERS = [(1, "127.0.0.1", 9092), (2, "127.0.0.1", 9093)]


@pytest.mark.spec("CLIENT-33")
def test_the_preferred_read_replica_is_read_from_until_it_expires_or_errs(monkeypatch):
    f, subscriptions, _ = fetcher(brokers=TWO_BROKERS)
    subscriptions.seek(TP, 0)
    assert f._read_replica(TP, leader=1) == 1
    f.completed.append(CompletedFetch(TP, 0, data(b"", preferred=2)))  # the leader's redirect
    assert f.collect_fetch() == [] and subscriptions.position(TP) == 0
    assert f._read_replica(TP, leader=1) == 2
    f.completed.append(CompletedFetch(TP, 0, data(batch(0, 3))))  # the follower's answer: -1
    assert [r.offset for r in f.collect_fetch()] == [0, 1, 2]
    assert f._read_replica(TP, leader=1) == 2  # kept: -1 is no news
    later = time.monotonic() + f.metadata_max_age_ms / 1000 + 1
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert f._read_replica(TP, leader=1) == 1  # metadata.max.age.ms has passed


@pytest.mark.spec("CLIENT-33")
def test_an_error_from_the_read_replica_sends_the_consumer_back_to_the_leader():
    f, subscriptions, _ = fetcher("none", brokers=TWO_BROKERS)
    subscriptions.seek(TP, 50)
    f.completed.append(CompletedFetch(TP, 50, data(b"", preferred=2)))
    f.collect_fetch()
    out_of_range = data(b"", error=ErrorCode.OFFSET_OUT_OF_RANGE)
    f.completed.append(CompletedFetch(TP, 50, out_of_range))  # the replica lags: no reset
    assert f.collect_fetch() == [] and subscriptions.position(TP) == 50
    assert f._read_replica(TP, leader=1) == 1
    f.completed.append(CompletedFetch(TP, 50, data(b"", preferred=2)))
    f.collect_fetch()
    f.completed.append(CompletedFetch(TP, 50, data(b"", error=ErrorCode.NOT_LEADER_OR_FOLLOWER)))
    f.collect_fetch()
    assert f._read_replica(TP, leader=1) == 1
    f.completed.append(CompletedFetch(TP, 50, data(b"", preferred=3)))  # not in the metadata
    f.collect_fetch()
    assert f._read_replica(TP, leader=1) == 1

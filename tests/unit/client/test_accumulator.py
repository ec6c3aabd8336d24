"""The record accumulator: batching, linger, drain, retry backoff, expiry, completion."""

from __future__ import annotations

import threading

import pytest

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Cluster
from kafka_ref.client.producer_batch import estimate_size
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.record.batch import HEADER_SIZE, RecordBatch, validate_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record
from tests.unit.client.conftest import metadata_response

T0 = 1_000_000
TP0, TP1, TP2 = (TopicPartition("t", i) for i in range(3))


def cluster(leaders=(1, 1, 2)) -> Cluster:
    response = metadata_response(
        {"t": list(leaders)}, brokers=[(1, "h", 1), (2, "h", 2)], controller_id=1
    )
    return Cluster.from_metadata_response(response)


def record(i: int, size: int = 10) -> Record:
    return Record(b"k%d" % i, b"v" * size, 1_700_000_000_000 + i)


@pytest.mark.spec("CLIENT-5")
def test_records_fill_a_batch_up_to_batch_size_then_start_another():
    acc = RecordAccumulator(batch_size=500, linger_ms=100)
    sizes = []
    for i in range(20):
        result = acc.append(TP0, record(i, 50), None, T0)
        sizes.append(result.new_batch_created)
    per_record = estimate_size(b"k1", b"v" * 50, ())
    fit = (500 - HEADER_SIZE) // per_record
    assert sizes[: fit + 1] == [True] + [False] * (fit - 1) + [True]
    drained = acc.drain(cluster(), {1}, 1_000_000, T0)[1]
    assert len(drained) == 1 and drained[0].record_count == fit  # one batch per partition
    assert len(drained[0].built) <= 500


@pytest.mark.spec("CLIENT-5")
def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = RecordAccumulator(batch_size=100)
    acc.append(TP0, record(0, 10), None, T0)
    result = acc.append(TP0, record(1, 5000), None, T0)
    assert result.new_batch_created and result.batch_is_full
    acc.append(TP0, record(2, 10), None, T0)
    batches = [acc.drain(cluster(), {1}, 10**6, T0)[1][0] for _ in range(3)]
    assert [b.record_count for b in batches] == [1, 1, 1]


@pytest.mark.spec("CLIENT-5")
def test_a_batch_is_ready_when_full_or_after_linger_ms():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=50)
    acc.append(TP0, record(0), None, T0)
    early = acc.ready(cluster(), T0 + 10)
    assert early.ready_nodes == set() and early.next_ready_check_delay_ms == 40
    assert acc.ready(cluster(), T0 + 50).ready_nodes == {1}
    # a full batch (or a second one behind it) is ready at once
    acc2 = RecordAccumulator(batch_size=200, linger_ms=10_000)
    for i in range(5):
        acc2.append(TP2, record(i, 50), None, T0)
    assert acc2.ready(cluster(), T0).ready_nodes == {2}


@pytest.mark.spec("CLIENT-5")
def test_flush_and_close_make_everything_ready_at_once():
    acc = RecordAccumulator(linger_ms=60_000)
    acc.append(TP0, record(0), None, T0)
    assert acc.ready(cluster(), T0).ready_nodes == set()
    acc.begin_flush()
    assert acc.ready(cluster(), T0).ready_nodes == {1}
    acc.await_flush_completion(0)
    assert acc.ready(cluster(), T0).ready_nodes == set()
    acc.close()
    assert acc.ready(cluster(), T0).ready_nodes == {1}
    with pytest.raises(KafkaError):
        acc.append(TP0, record(1), None, T0)


@pytest.mark.spec("CLIENT-5")
def test_unknown_leaders_are_reported_for_a_metadata_refresh():
    acc = RecordAccumulator(linger_ms=0)
    acc.append(TopicPartition("other", 0), record(0), None, T0)
    result = acc.ready(cluster(), T0)
    assert result.unknown_leader_topics == {"other"} and not result.ready_nodes


@pytest.mark.spec("CLIENT-6")
@pytest.mark.parametrize("codec", list(Compression))
def test_drain_builds_one_v2_batch_per_partition_with_the_codec(codec):
    acc = RecordAccumulator(batch_size=100_000, linger_ms=0, compression=codec)
    headers = (Header("h", b"1"),)
    for i in range(30):
        acc.append(
            TP0 if i % 2 else TP1, Record(b"k%d" % i, b"v%d" % i, 1000 + i, headers), None, T0
        )
    acc.append(TP2, record(99), None, T0)
    drained = acc.drain(cluster(), {1, 2}, 10**6, T0)
    assert sorted(b.tp for b in drained[1]) == [TP0, TP1] and [b.tp for b in drained[2]] == [TP2]
    batch = next(b for b in drained[1] if b.tp == TP1)
    header = validate_batch(batch.built)
    assert header.compression == codec and header.records_count == 15
    assert header.producer_id == -1  # no idempotence yet
    records = list(RecordBatch(batch.built).records())
    assert [r.offset for r in records] == list(range(15))
    assert [r.value for r in records] == [b"v%d" % i for i in range(0, 30, 2)]
    assert records[0].headers == headers


@pytest.mark.spec("CLIENT-6")
def test_futures_get_base_offset_plus_index_and_callbacks_run_first():
    acc = RecordAccumulator(linger_ms=0)
    seen = []
    futures = [
        acc.append(TP0, record(i), lambda m, e, i=i: seen.append((i, m.offset, e)), T0).future
        for i in range(3)
    ]
    batch = acc.drain(cluster(), {1}, 10**6, T0)[1][0]
    assert batch.done(base_offset=40, log_append_time=-1)
    assert [f.result().offset for f in futures] == [40, 41, 42]
    assert [f.result().timestamp for f in futures] == [record(i).timestamp for i in range(3)]
    assert seen == [(0, 40, None), (1, 41, None), (2, 42, None)]
    assert not batch.done(base_offset=99, log_append_time=-1)  # completes once only


@pytest.mark.spec("CLIENT-6")
def test_log_append_time_replaces_the_timestamp_and_errors_fail_every_future():
    acc = RecordAccumulator(linger_ms=0)
    ok = acc.append(TP0, record(0), None, T0).future
    acc.drain(cluster(), {1}, 10**6, T0)[1][0].done(7, 123456)
    assert ok.result().timestamp == 123456
    bad = [acc.append(TP1, record(i), None, T0).future for i in range(2)]
    acc.drain(cluster(), {1}, 10**6, T0)[1][0].done(-1, -1, KafkaError("boom"))
    assert all(isinstance(f.exception(), KafkaError) for f in bad)


@pytest.mark.spec("CLIENT-7")
def test_a_reenqueued_batch_goes_first_and_waits_for_the_retry_backoff():
    acc = RecordAccumulator(linger_ms=0, retry_backoff_ms=100)
    acc.append(TP0, record(0), None, T0)
    first = acc.drain(cluster(), {1}, 10**6, T0)[1][0]
    acc.append(TP0, record(1), None, T0)
    acc.reenqueue(first, T0 + 5)
    assert first.attempts == 1
    backing_off = acc.ready(cluster(), T0 + 50)
    assert backing_off.ready_nodes == set() and backing_off.next_ready_check_delay_ms == 55
    assert acc.drain(cluster(), {1}, 10**6, T0 + 50) == {}
    assert acc.ready(cluster(), T0 + 105).ready_nodes == {1}
    again = acc.drain(cluster(), {1}, 10**6, T0 + 105)[1][0]
    assert again is first and again.built == first.built  # the same bytes are resent


@pytest.mark.spec("CLIENT-7")
def test_batches_expire_after_delivery_timeout():
    acc = RecordAccumulator(linger_ms=0, delivery_timeout_ms=1000)
    acc.append(TP0, record(0), None, T0)
    assert acc.expired_batches(T0 + 999) == []
    assert [b.tp for b in acc.expired_batches(T0 + 1000)] == [TP0]
    assert not acc.has_undrained()


@pytest.mark.spec("CLIENT-8")
def test_a_muted_partition_is_neither_ready_nor_drained():
    acc = RecordAccumulator(linger_ms=0)
    acc.append(TP0, record(0), None, T0)
    acc.mute(TP0)
    assert acc.ready(cluster(), T0).ready_nodes == set()
    assert acc.drain(cluster(), {1}, 10**6, T0) == {}
    acc.unmute(TP0)
    assert acc.drain(cluster(), {1}, 10**6, T0)[1][0].tp == TP0


@pytest.mark.spec("CLIENT-5")
def test_drain_respects_max_request_size_but_always_sends_one_batch():
    acc = RecordAccumulator(batch_size=10_000, linger_ms=0)
    acc.append(TP0, record(0, 3000), None, T0)
    acc.append(TP1, record(1, 3000), None, T0)
    first = acc.drain(cluster(), {1}, 4000, T0)[1]
    assert len(first) == 1
    assert len(acc.drain(cluster(), {1}, 4000, T0)[1]) == 1


@pytest.mark.spec("CLIENT-5")
@pytest.mark.timeout(10)
def test_send_blocks_when_buffer_memory_is_exhausted_until_a_batch_completes():
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, buffer_memory=2000)
    acc.append(TP0, record(0), None, T0)
    acc.append(TP1, record(1), None, T0)
    with pytest.raises(KafkaError, match="allocate memory"):
        acc.append(TP2, record(2), None, T0, max_block_ms=50)
    assert acc.ready(cluster(), T0).ready_nodes  # exhausted memory makes batches sendable
    batch = acc.drain(cluster(), {1}, 10**6, T0)[1][0]
    done = threading.Timer(0.1, lambda: (batch.done(0, -1), acc.deallocate(batch)))
    done.start()
    result = acc.append(TP2, record(2), None, T0, max_block_ms=5000)
    assert result.new_batch_created
    done.join()

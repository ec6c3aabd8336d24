"""Fetch over the wire and the purgatory behind its long poll (BROKER-17..BROKER-23)."""

from __future__ import annotations

import threading
import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.record.batch import iter_batch_headers
from kafka_ref.server.purgatory import DelayedOperation, DelayedOperationPurgatory
from tests.unit.server.conftest import Wire, batch

pytestmark = pytest.mark.timeout(60)


def batches_of(records) -> list[tuple[int, int]]:
    data = bytes(records)
    return [(h.base_offset, h.last_offset) for _, h in iter_batch_headers(data)]


@pytest.fixture
def filled(wire):
    """Topic "f": batches of 5 records at offsets 0-4, 5-9, 10-14, 15-19."""
    wire.create_topic("f")
    for _ in range(4):
        wire.produce("f", 0, batch(5, value_size=100))
    return wire


@pytest.mark.spec("BROKER-17")
def test_offsets_outside_the_log_are_out_of_range(filled):
    for offset in (-1, 21, 1000):
        partition = filled.fetch_many([("f", 0, offset)]).responses[0].partitions[0]
        assert partition.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        offsets = partition.high_watermark, partition.last_stable_offset
        assert (*offsets, partition.log_start_offset) == (-1, -1, -1), "no offsets in an error"
        assert len(partition.records) == 0
    at_end = filled.fetch_many([("f", 0, 20)]).responses[0].partitions[0]
    assert at_end.error_code == 0 and len(at_end.records) == 0


@pytest.mark.spec("BROKER-18")
@pytest.mark.parametrize("offset", [5, 7, 9])
def test_a_fetch_mid_batch_returns_the_batch_holding_it(filled, offset):
    records = filled.fetch_many([("f", 0, offset)]).responses[0].partitions[0].records
    assert batches_of(records)[0] == (5, 9)


@pytest.mark.spec("BROKER-19")
def test_partition_max_bytes_still_returns_one_whole_batch(filled):
    records = (
        filled.fetch_many([("f", 0, 0)], partition_max_bytes=10).responses[0].partitions[0].records
    )
    assert batches_of(records) == [(0, 4)]
    one = len(records)
    two = filled.fetch_many([("f", 0, 0)], partition_max_bytes=2 * one).responses[0].partitions[0]
    assert batches_of(two.records) == [(0, 4), (5, 9)]


@pytest.mark.spec("BROKER-19")
def test_max_bytes_limits_the_whole_response(wire):
    wire.create_topic("m", partitions=3)
    for p in range(3):
        wire.produce("m", p, batch(5, value_size=1000))
    response = wire.fetch_many([("m", 0, 0), ("m", 1, 0), ("m", 2, 0)], max_bytes=10)
    sizes = [len(p.records) for p in response.responses[0].partitions]
    assert sizes[0] > 10 and sizes[1:] == [0, 0]  # the first batch whole, then nothing
    everything = wire.fetch_many([("m", 0, 0), ("m", 1, 0), ("m", 2, 0)])
    assert all(len(p.records) == sizes[0] for p in everything.responses[0].partitions)


@pytest.mark.spec("BROKER-20")
def test_partition_offsets_in_the_response(filled, broker):
    partition = broker.broker.replica_manager.get_partition("f", 0)
    broker.call(lambda: partition.delete_records_before(5))
    for version in (4, 5, 10):
        partition = filled.fetch_many([("f", 0, 5)], version=version).responses[0].partitions[0]
        assert partition.high_watermark == 20
        assert partition.last_stable_offset == 20
        assert partition.log_start_offset == (5 if version >= 5 else -1)
        assert partition.aborted_transactions == []


@pytest.mark.spec("BROKER-20")
def test_reads_stop_at_the_high_watermark(filled, broker, monkeypatch):
    from kafka_ref.server.replica_manager import Partition

    monkeypatch.setattr(Partition, "high_watermark", property(lambda self: 10), raising=False)
    records = filled.fetch_many([("f", 0, 0)]).responses[0].partitions[0].records
    assert batches_of(records) == [(0, 4), (5, 9)]


@pytest.mark.spec("BROKER-21")
def test_session_zero_and_every_partition_listed(filled):
    response = filled.fetch_many([("f", 0, 20), ("f", 3, 0), ("nope", 0, 0), ("f", 0, 0)])
    assert response.session_id == 0 and response.error_code == 0
    listed = [
        (t.topic, p.partition_index, p.error_code) for t in response.responses for p in t.partitions
    ]
    assert listed == [("f", 0, 0), ("f", 3, 3), ("nope", 0, 3), ("f", 0, 0)]


@pytest.mark.spec("BROKER-21")
def test_an_incremental_fetch_has_no_session(filled):
    response = filled.fetch_many([("f", 0, 0)], session_epoch=1)
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert response.responses == []


@pytest.mark.spec("BROKER-22")
def test_a_waiting_fetch_wakes_on_append(broker, wire):
    wire.create_topic("poll", partitions=2)
    producer = Wire(broker.port)

    def produce_later():
        time.sleep(0.3)
        producer.produce("poll", 1, batch(3))

    threading.Thread(target=produce_later).start()
    started = time.monotonic()
    response = wire.fetch_many([("poll", 0, 0), ("poll", 1, 0)], max_wait_ms=10_000)
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 5
    partitions = response.responses[0].partitions
    assert len(partitions[0].records) == 0
    assert batches_of(partitions[1].records) == [(0, 2)]


@pytest.mark.spec("BROKER-22")
def test_min_bytes_waits_for_enough_data(broker, wire):
    wire.create_topic("mb")
    producer = Wire(broker.port)
    one = len(batch(3, value_size=100))

    def produce_twice():
        time.sleep(0.2)
        producer.produce("mb", 0, batch(3, value_size=100))
        time.sleep(0.3)
        producer.produce("mb", 0, batch(3, value_size=100))

    threading.Thread(target=produce_twice).start()
    started = time.monotonic()
    response = wire.fetch_many([("mb", 0, 0)], max_wait_ms=10_000, min_bytes=one + 1)
    assert time.monotonic() - started >= 0.45  # the first append was not enough
    assert batches_of(response.responses[0].partitions[0].records) == [(0, 2), (3, 5)]


@pytest.mark.spec("BROKER-23")
def test_a_waiting_fetch_expires_at_max_wait(wire):
    wire.create_topic("idle")
    started = time.monotonic()
    response = wire.fetch_many([("idle", 0, 0)], max_wait_ms=300)
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 3
    assert len(response.responses[0].partitions[0].records) == 0
    started = time.monotonic()
    wire.fetch_many([("idle", 0, 0)], max_wait_ms=0)
    assert time.monotonic() - started < 0.25


@pytest.mark.spec("BROKER-23")
def test_an_error_answers_at_once(wire):
    started = time.monotonic()
    response = wire.fetch_many([("unknown", 0, 0)], max_wait_ms=5_000)
    assert time.monotonic() - started < 2
    assert response.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -------------------------------------------------------------- the purgatory alone
class FakeTimers:
    def __init__(self):
        self.pending = []

    def schedule(self, delay, callback):
        timers = self

        class Handle:
            def cancel(self):
                timers.pending.remove(entry)

        entry = (delay, callback)
        self.pending.append(entry)
        return Handle()

    def fire_all(self):
        for _, callback in list(self.pending):
            self.pending.remove((_, callback))
            callback()


class Counter(DelayedOperation):
    def __init__(self, state, need, delay_ms=1000):
        super().__init__(delay_ms)
        self.state, self.need, self.completions, self.expired = state, need, 0, False

    def try_complete(self):
        return self.state["n"] >= self.need and self.force_complete()

    def on_complete(self):
        self.completions += 1

    def on_expiration(self):
        self.expired = True


@pytest.mark.spec("BROKER-22")
def test_purgatory_completes_watchers_when_their_key_changes():
    timers = FakeTimers()
    purgatory = DelayedOperationPurgatory("test", timers.schedule)
    state = {"n": 0}
    a, b = Counter(state, 1), Counter(state, 2)
    assert not purgatory.try_complete_else_watch(a, ["k1", "k2"])
    assert not purgatory.try_complete_else_watch(b, ["k1"])
    assert purgatory.watched() == 2 and len(timers.pending) == 2
    state["n"] = 1
    assert purgatory.check_and_complete("k2") == 1
    assert a.completions == 1 and not a.expired and len(timers.pending) == 1
    assert purgatory.check_and_complete("k1") == 0  # b still needs 2; a is not run again
    state["n"] = 2
    assert purgatory.check_and_complete("k1") == 1
    assert (a.completions, b.completions) == (1, 1) and purgatory.watched() == 0


@pytest.mark.spec("BROKER-23")
def test_purgatory_expires_once():
    timers = FakeTimers()
    purgatory = DelayedOperationPurgatory("test", timers.schedule)
    op = Counter({"n": 0}, 1)
    purgatory.try_complete_else_watch(op, ["k"])
    timers.fire_all()
    assert op.expired and op.completions == 1
    assert not op.force_complete()  # a late wake-up cannot answer twice
    assert purgatory.check_and_complete("k") == 0 and op.completions == 1
    ready = Counter({"n": 5}, 1)
    assert purgatory.try_complete_else_watch(ready, ["k"]) and not timers.pending

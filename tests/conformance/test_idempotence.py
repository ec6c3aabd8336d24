"""The idempotent producer's broker side: sequences, retries, epochs, over the wire.

Each test gets its own producer id (InitProducerId with no transactional id) and writes raw
batches with explicit (producer id, epoch, base sequence), so it can send the retry of a
batch whose response "was lost", a gap, or an old epoch, which a real client only does by
accident. The dedup window test is the one that tells a 5-batch window (Kafka's, and what
max.in.flight.requests.per.connection=5 relies on) from a shorter one (Redpanda #3039).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.transactions import negotiate
from kafka_ref.conformance.wire import batch, decode_batches, retrying
from kafka_ref.protocol.messages import ApiKey, FindCoordinatorRequest, InitProducerIdRequest

OUT_OF_ORDER_SEQUENCE, INVALID_PRODUCER_EPOCH, INVALID_RECORD = 45, 47, 87


def init_producer_id(wire) -> tuple[int, int]:
    body = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    resp = retrying(lambda: wire.request(ApiKey.INIT_PRODUCER_ID, 1, body))
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


@pytest.fixture
def topic(target, wire):
    target.require("idempotence", "create-topics")
    name = target.topic_name("idem")
    assert wire.create_topic(name) == 0
    return name


def send(wire, topic, pid, epoch, seq, n=2, tag="x"):
    """An idempotent batch stamped now, as a producer stamps it: Kafka ages a producer's
    state by its batches' CreateTime timestamps (IDEM-14), so a batch of long ago is a
    producer idle for that long, forgotten at the next expiration check."""
    records = batch(
        [f"{tag}{seq + i}".encode() for i in range(n)],
        ts=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    return wire.produce(topic, 0, records)


def log_values(wire, topic) -> list[bytes]:
    return [r.value for r in wire.read_all(topic)]


@pytest.mark.spec("IDEM-15")
def test_init_producer_id_gives_fresh_ids_with_epoch_zero(target, wire):
    target.require("idempotence")
    ids = [init_producer_id(wire) for _ in range(3)]
    assert len({pid for pid, _ in ids}) == 3 and {e for _, e in ids} == {0}
    assert all(pid >= 0 for pid, _ in ids)


@pytest.mark.spec("IDEM-2", "IDEM-1")
def test_batches_in_sequence_are_appended(wire, topic):
    pid, epoch = init_producer_id(wire)
    offsets = [send(wire, topic, pid, epoch, seq).base_offset for seq in (0, 2, 4)]
    assert offsets == [0, 2, 4]
    assert log_values(wire, topic) == [f"x{i}".encode() for i in range(6)]


@pytest.mark.spec("IDEM-3")
def test_a_retry_of_any_of_the_last_five_batches_returns_the_original_offset(wire, topic):
    pid, epoch = init_producer_id(wire)
    firsts = [send(wire, topic, pid, epoch, 2 * i).base_offset for i in range(5)]
    # with five requests in flight, the response to the *oldest* can be the lost one
    for i in (0, 4, 2):
        retry = send(wire, topic, pid, epoch, 2 * i)
        assert (retry.error_code, retry.base_offset) == (0, firsts[i]), f"retry of batch {i}"
    assert len(log_values(wire, topic)) == 10, "a retry writes nothing"


@pytest.mark.spec("IDEM-4")
def test_a_sequence_gap_is_out_of_order(wire, topic):
    pid, epoch = init_producer_id(wire)
    assert send(wire, topic, pid, epoch, 0).error_code == 0
    assert send(wire, topic, pid, epoch, 5).error_code == OUT_OF_ORDER_SEQUENCE
    assert send(wire, topic, pid, epoch, 2).base_offset == 2, "the gap wrote nothing"


@pytest.mark.spec("IDEM-5", "IDEM-6")
def test_a_newer_epoch_starts_at_zero_and_fences_the_older(wire, topic):
    pid, epoch = init_producer_id(wire)
    assert send(wire, topic, pid, epoch, 0).error_code == 0
    assert send(wire, topic, pid, epoch + 1, 2).error_code == OUT_OF_ORDER_SEQUENCE  # IDEM-6
    assert send(wire, topic, pid, epoch + 1, 0, tag="new").error_code == 0
    assert send(wire, topic, pid, epoch, 2).error_code == INVALID_PRODUCER_EPOCH  # IDEM-5
    assert log_values(wire, topic) == [b"x0", b"x1", b"new0", b"new1"]


@pytest.mark.spec("IDEM-8")
def test_a_client_batch_with_a_producer_id_needs_a_sequence(wire, topic):
    pid, epoch = init_producer_id(wire)
    records = batch([b"a"], producer_id=pid, producer_epoch=epoch, base_sequence=-1)
    assert wire.produce(topic, 0, records).error_code == INVALID_RECORD
    # A control batch is not a client's to write (the coordinator writes markers). Sent as a
    # transactional one without a transactional id, it is refused for that first (TXN-88).
    control = batch([b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_control=True)
    assert wire.produce(topic, 0, control).error_code == INVALID_RECORD
    assert not decode_batches(wire.fetch(topic, 0, 0).records)


@pytest.mark.spec("IDEM-9")
def test_the_producer_state_survives_a_restart(target, wire, topic):
    target.require("restart")
    pid, epoch = init_producer_id(wire)
    first = send(wire, topic, pid, epoch, 0).base_offset
    wire.close()
    target.restart()
    with target.wire() as again:
        retry = send(again, topic, pid, epoch, 0)
        assert (retry.error_code, retry.base_offset) == (0, first), "still a duplicate"
        assert send(again, topic, pid, epoch, 2).base_offset == 2


UNKNOWN_PRODUCER_ID, NOT_COORDINATOR, INVALID_REQUEST = 59, 16, 42


@pytest.mark.spec("IDEM-7")
def test_a_producer_without_state_must_start_at_sequence_zero(wire, topic):
    # Kafka 2.5+ accepts any first sequence (KIP-360); this is the rule of Kafka 2.x
    pid, epoch = init_producer_id(wire)
    assert send(wire, topic, pid, epoch, 5).error_code == UNKNOWN_PRODUCER_ID
    assert not decode_batches(wire.fetch(topic, 0, 0).records), "nothing appended"
    assert send(wire, topic, pid, epoch, 0).base_offset == 0


@pytest.mark.spec("IDEM-14")
def test_an_idle_producer_is_forgotten_and_an_active_one_is_not(configured_broker):
    broker = configured_broker(
        {"producer.id.expiration.ms": 1000, "producer.id.expiration.check.interval.ms": 200}
    )
    broker.require("idempotence", "create-topics")
    name = broker.topic_name("expire")
    with broker.wire() as w:
        assert w.create_topic(name) == 0
        (idle, idle_epoch), (busy, busy_epoch) = init_producer_id(w), init_producer_id(w)
        first = send(w, name, idle, idle_epoch, 0).base_offset
        seq = 0
        for _ in range(10):  # 2 s: twice the expiration; `busy` appends every 200 ms
            last = send(w, name, busy, busy_epoch, seq)
            assert last.error_code == 0
            seq += 2
            time.sleep(0.2)
        # the active producer is remembered: its last batch again is a duplicate
        retry = send(w, name, busy, busy_epoch, seq - 2)
        assert (retry.error_code, retry.base_offset) == (0, last.base_offset)
        # the idle one is not: its first batch again is appended anew
        again = send(w, name, idle, idle_epoch, 0)
        assert again.error_code == 0 and again.base_offset != first, "still deduplicated"


# answered while a new __transaction_state partition loads, or before it has a leader
RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


@pytest.mark.spec("IDEM-17")
def test_a_transactional_init_producer_id_is_not_coordinated_here(target, wire):
    """An empty transactional id is refused everywhere. A target without a transaction
    coordinator answers NOT_COORDINATOR for any other id; a one-broker target with one is that
    id's coordinator and answers with a producer id (TXN-13). (A broker of a cluster that is
    not the id's coordinator: tests/cluster/test_transactions.py.)"""
    target.require("idempotence")
    version = negotiate(wire)[ApiKey.INIT_PRODUCER_ID]  # as a client picks it
    body = InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60000)
    assert wire.request(ApiKey.INIT_PRODUCER_ID, version, body).error_code == INVALID_REQUEST
    if target.has("transactions"):  # a client looks for the coordinator first (TXN-9)
        find = FindCoordinatorRequest(key="conf-txn", key_type=1)
        wire.request(ApiKey.FIND_COORDINATOR, 2, find)
    body = InitProducerIdRequest(transactional_id="conf-txn", transaction_timeout_ms=60000)
    deadline = time.monotonic() + 20
    answer = wire.request(ApiKey.INIT_PRODUCER_ID, version, body)
    while (
        target.has("transactions")
        and answer.error_code in RETRIABLE
        and (time.monotonic() < deadline)
    ):  # the first look for a coordinator creates __transaction_state: it loads
        time.sleep(0.1)
        answer = wire.request(ApiKey.INIT_PRODUCER_ID, version, body)
    if target.has("transactions"):
        assert (answer.error_code, answer.producer_epoch) == (0, 0), answer
        assert answer.producer_id >= 0
    else:
        assert (answer.error_code, answer.producer_id) == (NOT_COORDINATOR, -1), answer

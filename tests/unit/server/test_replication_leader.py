"""The leader's side of replication on one in-process broker, with a pretend follower.

The partition is made leader of a replica set {0, 99} in a new epoch (what the controller
would decide); broker 99 does not exist, the test plays it by sending Fetch with
replica_id=99 and OffsetsForLeaderEpoch. acks=all then waits for "99" (a DelayedProduce),
times out when it does not fetch, and completes when its fetch moves the HW.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, OffsetsForLeaderEpochRequest, ProduceRequest
from kafka_ref.replication.messages import LeaderAndIsr
from tests.unit.server.conftest import Wire, batch, fetch_body

FOLLOWER = 99


@pytest.fixture
def led(broker, wire):
    """Topic `r` whose partition 0 is led by broker 0 in epoch 1 with the ISR {0, 99}."""
    assert wire.create_topic("r") == 0
    assert wire.produce("r", 0, batch(2)).error_code == 0  # offsets 0-1, epoch 0
    partition = broker.broker.replica_manager.get_partition("r", 0)
    state = LeaderAndIsr("r", 0, 0, 1, (0, FOLLOWER), (0, FOLLOWER))
    broker.call(lambda: partition.make_leader(state))
    return partition


def produce(port: int, timeout_ms: int) -> tuple[int, int]:
    body = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="r",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(1))],
            )
        ],
    )
    conn = Wire(port)
    try:
        r = conn.request(ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0]
        return r.error_code, r.base_offset
    finally:
        conn.close()


def follower_fetch(wire: Wire, offset: int, epoch: int = 1, max_wait_ms: int = 0):
    body = fetch_body([("r", 0, offset)], max_wait_ms=max_wait_ms)
    body.replica_id = FOLLOWER
    body.topics[0].partitions[0].current_leader_epoch = epoch
    return wire.request(ApiKey.FETCH, 10, body).responses[0].partitions[0]


@pytest.mark.spec("REPL-11", "REPL-4")
def test_acks_all_times_out_when_the_isr_does_not_fetch(led, broker):
    started = time.monotonic()
    assert produce(broker.port, 300) == (ErrorCode.REQUEST_TIMED_OUT, -1)
    assert 0.25 < time.monotonic() - started < 5
    assert led.log_end_offset == 3 and led.high_watermark == 2  # appended, not committed


@pytest.mark.spec("REPL-4", "REPL-3", "REPL-12")
def test_a_follower_fetch_completes_acks_all(led, broker, wire):
    assert follower_fetch(wire, 2).error_code == 0  # the follower has 0-1: HW 2
    out = {}
    thread = threading.Thread(target=lambda: out.update(r=produce(broker.port, 10_000)))
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive()  # waiting for broker 99
    data = follower_fetch(wire, 2)
    assert data.error_code == 0 and len(data.records) > 0  # past the HW: followers see it
    assert data.high_watermark == 2
    assert follower_fetch(wire, 3).high_watermark == 3  # LEO 3 reported: committed
    thread.join(5)
    assert out["r"] == (ErrorCode.NO_ERROR, 2)


@pytest.mark.spec("REPL-12", "REPL-8")
def test_follower_fetches_are_fenced_and_long_poll_on_the_log_end(led, broker, wire):
    assert follower_fetch(wire, 0, epoch=0).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert follower_fetch(wire, 0, epoch=2).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    started = time.monotonic()
    data = follower_fetch(wire, 2, max_wait_ms=300)  # nothing past the log end: waits
    assert data.error_code == 0 and len(data.records) == 0
    assert time.monotonic() - started >= 0.25


@pytest.mark.spec("REPL-12", "TRUNC-4")
def test_offsets_for_leader_epoch(led, wire):
    def ask(epoch: int, current: int = 1):
        body = OffsetsForLeaderEpochRequest(
            replica_id=FOLLOWER,
            topics=[
                OffsetsForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic="r",
                    partitions=[
                        OffsetsForLeaderEpochRequest.OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=current, leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
        p = wire.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body).topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    assert ask(0) == (0, 0, 2)  # epoch 0 ended where epoch 1 started
    assert ask(1) == (0, 1, 2)  # the current epoch ends at the log end
    assert ask(0, current=0)[0] == ErrorCode.FENCED_LEADER_EPOCH


@pytest.mark.spec("BROKER-5", "REPL-3")
def test_a_followers_records_go_out_with_sendfile_unless_the_read_is_small(
    led, broker, wire, monkeypatch
):
    sent = []
    real = os.sendfile

    def counting(out_fd, in_fd, offset, count):
        sent.append(count)
        return real(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counting)
    small = follower_fetch(wire, 0)  # offsets 0-1: under SENDFILE_MIN_BYTES
    expected = broker.call(lambda: led.log.read(0, 1 << 20).read_bytes())
    assert bytes(small.records) == expected and not sent  # read and written
    assert wire.produce("r", 0, batch(20, value_size=10_000), acks=1).error_code == 0
    large = follower_fetch(wire, 2)  # about 200 KB: from the segment file
    expected = broker.call(lambda: led.log.read(2, 1 << 20).read_bytes())
    assert bytes(large.records) == expected
    assert sum(sent) == len(expected)


def wait_parked(purgatory) -> None:
    deadline = time.monotonic() + 10
    while purgatory.watched(("r", 0)) == 0:
        assert time.monotonic() < deadline, f"nothing parked in {purgatory}"
        time.sleep(0.01)


@pytest.mark.spec("CTRL-10", "REPL-4")
def test_waiting_requests_answer_at_once_when_the_broker_stops_leading(led, broker):
    """An acks=all produce waiting for the ISR, and a consumer's long poll, must not wait
    for their timeouts once the broker follows (Kafka: `ReplicaManager.makeFollowers`
    completes the partition's delayed produces and fetches): both answer
    NOT_LEADER_OR_FOLLOWER at once, and the client goes to the new leader."""
    replicas = broker.broker.replica_manager
    out: dict = {}
    producing = threading.Thread(target=lambda: out.update(produce=produce(broker.port, 60_000)))
    producing.start()
    wait_parked(replicas.produce_purgatory)

    def long_poll() -> None:
        conn = Wire(broker.port)
        try:
            # at the HW (2): past it the fetch would answer at once, empty (BROKER-23)
            body = fetch_body([("r", 0, 2)], max_wait_ms=60_000, min_bytes=1 << 20)
            out["fetch"] = conn.request(ApiKey.FETCH, 10, body).responses[0].partitions[0]
        finally:
            conn.close()

    polling = threading.Thread(target=long_poll)
    polling.start()
    wait_parked(replicas.fetch_purgatory)
    started = time.monotonic()
    follows = PartitionState("r", 0, FOLLOWER, 2, (0, FOLLOWER), (0, FOLLOWER))
    broker.call(lambda: replicas.become_leader_or_follower(follows))
    producing.join(10)
    polling.join(10)
    assert time.monotonic() - started < 5, out
    assert out["produce"] == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    assert out["fetch"].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

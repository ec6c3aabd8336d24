"""What survives a stop and a crash: topics with their configs, acknowledged records, parked
requests, and an idempotent producer that keeps sending through a kill -9.

These need the `restart` capability: the suite must have started the broker itself and its
data must outlive the process (kafka-ref's target; not Tansu with memory storage). Each
restart costs seconds, so every test does as much as it can per restart.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_ref.conformance.wire import batch, fetch_body
from kafka_ref.protocol.messages import ApiKey, DescribeConfigsRequest


def topic_state(wire, name: str) -> tuple:
    meta = wire.metadata([name]).topics[0]
    values = [[r.value for r in wire.read_all(name, p)] for p in range(len(meta.partitions))]
    return meta.error_code, len(meta.partitions), values


def retention_override(wire, name: str):
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=2, resource_name=name, configuration_keys=["retention.ms"]
            )
        ],
        include_synonyms=False,
    )
    (config,) = wire.request(ApiKey.DESCRIBE_CONFIGS, 1, body).results[0].configs
    return config.value, config.config_source


@pytest.mark.spec("BROKER-36", "BROKER-39")
def test_topics_and_acknowledged_records_survive_a_stop_and_a_crash(target, wire):
    target.require("restart", "create-topics", "describe-configs")
    name = target.topic_name("durable")
    assert wire.create_topic(name, 3, **{"retention.ms": "86400123"}) == 0
    for p in range(3):
        for i in range(4):
            assert wire.produce(name, p, batch([b"p%d-%d" % (p, i)]), acks=-1).error_code == 0
    before = topic_state(wire, name)
    # a fetch parked on another connection must be answered (or closed) by the shutdown,
    # not left until its 20 s max_wait_ms
    parked = target.wire()
    parked.send(ApiKey.FETCH, 10, fetch_body([(name, 0, 4)], max_wait_ms=20000))
    answered: list[float] = []

    def wait_for_the_answer() -> None:  # while the broker stops (and starts again)
        try:
            parked.sock.settimeout(30)
            parked.receive()
        except (ConnectionError, OSError):
            pass  # closed: also an answer
        answered.append(time.monotonic())

    waiter = threading.Thread(target=wait_for_the_answer)
    waiter.start()
    wire.close()
    started = time.monotonic()
    target.restart()  # SIGTERM
    waiter.join(30)
    parked.close()
    assert answered and answered[0] - started < 15, "the parked fetch waited out its max_wait_ms"
    with target.wire() as w:
        assert topic_state(w, name) == before, "after a clean stop"
        assert retention_override(w, name) == ("86400123", 1), "the override survives"
        created = target.topic_name("justcreated")
        assert w.create_topic(created, 2) == 0  # acknowledged: must survive a kill -9
        assert w.produce(name, 1, batch([b"last"]), acks=-1).error_code == 0
    target.restart(kill=True)
    with target.wire() as w:
        state = topic_state(w, name)
        assert state[2][1] == before[2][1] + [b"last"], "an acknowledged record was lost"
        assert state[:2] == before[:2] and state[2][0] == before[2][0]
        assert retention_override(w, name) == ("86400123", 1)
        meta = w.metadata([created]).topics[0]
        assert (meta.error_code, len(meta.partitions)) == (0, 2), "the new topic is known"


confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.mark.spec("IDEM-16")
def test_an_idempotent_client_writes_each_record_once_through_a_crash(target, wire):
    target.require("restart", "idempotence", "create-topics")
    name = target.topic_name("idemcrash")
    assert wire.create_topic(name, 2) == 0
    wire.close()
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": target.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 60000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
        }
    )
    acked: dict[int, list[bytes]] = {0: [], 1: []}
    failed: list[str] = []

    def delivered(err, msg) -> None:
        if err:
            failed.append(str(err))
        else:
            acked[msg.partition()].append(msg.value())

    crash = threading.Timer(0.3, lambda: target.restart(kill=True))
    crash.start()  # while requests are in flight
    sent = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline or sent < 2000:
        producer.produce(name, value=b"v%05d" % sent, partition=sent % 2, on_delivery=delivered)
        sent += 1
        producer.poll(0)
        if sent >= 4000:
            break
    crash.join()
    assert producer.flush(60) == 0, "undelivered messages"
    assert not failed, failed[:3]
    with target.wire() as w:
        for p in (0, 1):
            stored = [r.value for r in w.read_all(name, p)]
            assert len(stored) == len(set(stored)), f"partition {p}: duplicates"
            sent_here = [b"v%05d" % i for i in range(p, sent, 2)]
            assert stored == sent_here, f"partition {p}: not each record once, in order"
            assert sorted(acked[p]) == sorted(stored)

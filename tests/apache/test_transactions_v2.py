"""Transactions v2 on Apache Kafka 4.4 and on kafka-ref, side by side.

One Apache Kafka 4.4 node formatted with its defaults (`transaction.version` 2) and one
kafka-ref broker (its default, 2) are driven through the same EndTxn v5 script by the
wire-level producer: an end with nothing open, a commit, its retry, the retry with the
other outcome, an older epoch, an abort with nothing open. The answers, with the producer id
named relative to the producer's first one and the epoch relative to its first epoch, must
be equal (TXN-92). Then both play the late produce (TXN-97): on both, the late batch of the
aborted transaction is fenced and the history is valid.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance import late_produce
from kafka_ref.conformance.history import check
from kafka_ref.conformance.transactions import TxnProducer, settled
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, EndTxnRequest
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path_factory.mktemp("kr"))}
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


def ports(kafka, kafka_ref) -> dict[str, int]:
    return {"kafka": kafka.nodes[0].port, "kafka-ref": kafka_ref.port}


def initialised(producer: TxnProducer, timeout_s: float = 30.0) -> bool:
    """InitProducerId until the coordinator has loaded `__transaction_state` (a new
    cluster's topic: NOT_COORDINATOR for a moment, which a client looks up again)."""
    deadline = time.monotonic() + timeout_s
    while (error := producer.init()) == ErrorCode.NOT_COORDINATOR and time.monotonic() < deadline:
        time.sleep(0.2)
    return error == 0


def end_txn_v5_script(port: int, topic: str) -> list[tuple[str, int, str, int]]:
    """(step, error, producer id as 'first'/'other'/'none', epoch - first epoch or -1)."""
    with Wire("127.0.0.1", port) as wire:
        assert wire.create_topic(topic, 1) == 0
    answers = []
    with TxnProducer("127.0.0.1", port, f"{topic}-id", transaction_version=2) as producer:
        assert initialised(producer) and producer.init() == 0  # epoch 1: an older one exists
        pid, first = producer.producer_id, producer.epoch

        def end(step: str, epoch: int, commit: bool) -> None:
            body = EndTxnRequest(
                transactional_id=producer.transactional_id,
                producer_id=pid,
                producer_epoch=epoch,
                committed=commit,
            )
            answer = producer.coordinator.request(ApiKey.END_TXN, 5, body)
            deadline = time.monotonic() + 30
            # The last transaction's markers may still be in flight at the coordinator
            # (Kafka: PREPARE_COMMIT until every marker is written, even once the partition's
            # LSO has moved): CONCURRENT_TRANSACTIONS, which a client retries after a backoff.
            while (
                answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
                and time.monotonic() < deadline
            ):
                time.sleep(0.1)
                answer = producer.coordinator.request(ApiKey.END_TXN, 5, body)
            named = {pid: "first", -1: "none"}.get(answer.producer_id, "other")
            relative = answer.producer_epoch - first if answer.producer_epoch >= 0 else -1
            answers.append((step, answer.error_code, named, relative))

        end("commit with nothing open", first, True)
        assert producer.produce(topic, 0, [b"v"]).error_code == 0
        end("commit", first, True)
        settled(producer.leader, topic, 0)
        end("its retry", first, True)
        end("its retry as an abort", first, False)
        end("an older epoch", first - 1, True)
        end("abort with nothing open", first + 1, False)
        settled(producer.leader, topic, 0)
        end("commit after it", first + 2, True)
    return answers


@pytest.mark.spec("TXN-92")
def test_end_txn_v5_answers_as_kafka_does(kafka, kafka_ref):
    traces = {
        name: end_txn_v5_script(port, f"endtxn-v5-{name}")
        for name, port in ports(kafka, kafka_ref).items()
    }
    assert traces["kafka-ref"] == traces["kafka"]
    assert traces["kafka"][1] == ("commit", 0, "first", 1)  # the bump itself


@pytest.mark.spec("TXN-97")
def test_the_late_produce_is_fenced_on_both(kafka, kafka_ref):
    for name, port in ports(kafka, kafka_ref).items():
        topic = f"late-{name}"
        with Wire("127.0.0.1", port) as wire:
            assert wire.create_topic(topic, 1) == 0
        spoken, history = late_produce.run("127.0.0.1", port, topic, f"{topic}-id")
        assert spoken == 2, name
        assert check(history).valid, (name, check(history))

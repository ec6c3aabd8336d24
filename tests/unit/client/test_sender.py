"""The Sender against a fake network client: requests per leader, retries, metadata refresh."""

from __future__ import annotations

import pytest

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.connection import ClientRequest, NetworkError
from kafka_ref.client.sender import DeliveryTimeoutError, Sender
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import ProduceResponse
from kafka_ref.record.record import Record
from tests.unit.client.conftest import metadata_response

TP0, TP1, TP2 = (TopicPartition("t", i) for i in range(3))


class FakeClient:
    reconnect_backoff_ms = 50

    def __init__(self) -> None:
        self.sent: list[ClientRequest] = []
        self.expect_response: list[bool] = []
        self.unready: set[int] = set()

    def ready(self, node: int) -> bool:
        return node not in self.unready

    def send(self, node, api_key, body, *, callback=None, expect_response=True):
        request = ClientRequest(node, api_key, 7, len(self.sent), body, callback)
        self.sent.append(request)
        self.expect_response.append(expect_response)
        if not expect_response:
            request.complete()
        return request

    def poll(self, timeout_ms):
        return []

    def in_flight_count(self, node=None):
        return 0

    def wakeup(self):
        pass

    def close(self):
        pass


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


def setup(acks=-1, retries=3, max_in_flight=5, delivery_timeout_ms=120_000):
    metadata = Metadata([("h", 1)], retry_backoff_ms=0)
    metadata.update(
        metadata_response({"t": [1, 1, 2]}, brokers=[(1, "h", 1), (2, "h", 2)]), now_ms=0
    )
    accumulator = RecordAccumulator(
        linger_ms=0, retry_backoff_ms=0, delivery_timeout_ms=delivery_timeout_ms
    )
    client = FakeClient()
    sender = Sender(
        client,
        metadata,
        accumulator,
        acks=acks,
        retries=retries,
        request_timeout_ms=1000,
        max_request_size=10**6,
        guarantee_message_order=max_in_flight == 1,
        clock=Clock(),
    )
    return sender, client, accumulator, metadata


def append(accumulator, tp, n=1):
    return [
        accumulator.append(tp, Record(b"k", b"v%d" % i, 1000 + i), None, 0).future for i in range(n)
    ]


def answer(request: ClientRequest, errors: dict[TopicPartition, ErrorCode], base=0):
    body = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name=topic.name,
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(
                        index=p.index,
                        error_code=errors.get(TopicPartition(topic.name, p.index), 0),
                        base_offset=base,
                        log_append_time_ms=-1,
                        log_start_offset=0,
                    )
                    for p in topic.partition_data
                ],
            )
            for topic in request.body.topic_data
        ],
        throttle_time_ms=0,
    )
    request.complete(body)


@pytest.mark.spec("CLIENT-5")
def test_one_produce_request_per_leader_with_all_its_partitions():
    sender, client, accumulator, _ = setup()
    for tp in (TP0, TP1, TP2):
        append(accumulator, tp, 3)
    sender.send_producer_data(now=10)
    assert sorted(r.node_id for r in client.sent) == [1, 2]
    to_1 = next(r for r in client.sent if r.node_id == 1)
    assert to_1.api_key == ApiKey.PRODUCE and to_1.body.acks == -1
    assert sorted(p.index for t in to_1.body.topic_data for p in t.partition_data) == [0, 1]


@pytest.mark.spec("CLIENT-7")
def test_a_retriable_error_requeues_the_batch_and_success_completes_it():
    sender, client, accumulator, metadata = setup()
    futures = append(accumulator, TP0, 2)
    sender.send_producer_data(now=10)
    version = metadata.version
    answer(client.sent[0], {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    assert metadata.update_requested and metadata.version == version  # CLIENT-10
    assert not futures[0].done() and accumulator.has_undrained()
    sender.send_producer_data(now=20)
    assert len(client.sent) == 2
    assert client.sent[1].body.topic_data[0].partition_data[0].records == (
        client.sent[0].body.topic_data[0].partition_data[0].records
    )  # the very same batch bytes
    answer(client.sent[1], {}, base=40)
    assert [f.result().offset for f in futures] == [40, 41]
    assert not accumulator.has_incomplete()


@pytest.mark.spec("CLIENT-7")
def test_retries_run_out_and_non_retriable_errors_fail_at_once():
    sender, client, accumulator, _ = setup(retries=1)
    retried = append(accumulator, TP0)[0]
    fatal = append(accumulator, TP2)[0]
    sender.send_producer_data(now=10)
    for request in list(client.sent):
        answer(request, {TP0: ErrorCode.NOT_ENOUGH_REPLICAS, TP2: ErrorCode.MESSAGE_TOO_LARGE})
    assert fatal.exception().code == ErrorCode.MESSAGE_TOO_LARGE
    assert not retried.done()
    sender.send_producer_data(now=20)
    answer(client.sent[-1], {TP0: ErrorCode.NOT_ENOUGH_REPLICAS})
    assert retried.exception().code == ErrorCode.NOT_ENOUGH_REPLICAS


@pytest.mark.spec("CLIENT-7")
def test_a_lost_connection_is_retried_and_refreshes_metadata():
    sender, client, accumulator, metadata = setup()
    future = append(accumulator, TP2)[0]
    sender.send_producer_data(now=10)
    metadata.update(metadata_response({"t": [1, 1, 1]}, brokers=[(1, "h", 1)]), now_ms=10)
    client.sent[0].complete(error=NetworkError("gone"))
    assert metadata.update_requested
    sender.send_producer_data(now=20)
    assert client.sent[-1].node_id == 1  # the retry goes to the new leader
    answer(client.sent[-1], {}, base=5)
    assert future.result().offset == 5


@pytest.mark.spec("CLIENT-7")
def test_a_batch_that_outlives_delivery_timeout_fails_with_a_timeout():
    sender, client, accumulator, _ = setup(delivery_timeout_ms=100)
    client.unready = {1}
    future = append(accumulator, TP0)[0]
    sender.send_producer_data(now=50)
    assert not future.done()
    sender.send_producer_data(now=100)
    assert isinstance(future.exception(), DeliveryTimeoutError)
    assert "Expiring 1 record(s)" in str(future.exception())


@pytest.mark.spec("CLIENT-9")
def test_acks_0_completes_on_send_with_offset_minus_one():
    sender, client, accumulator, _ = setup(acks=0)
    futures = append(accumulator, TP0, 3)
    sender.send_producer_data(now=10)
    assert client.expect_response == [False]
    assert [f.result().offset for f in futures] == [-1, -1, -1]


@pytest.mark.spec("CLIENT-8")
def test_max_in_flight_1_keeps_one_batch_per_partition_in_flight():
    sender, client, accumulator, _ = setup(max_in_flight=1)
    append(accumulator, TP0)
    sender.send_producer_data(now=10)
    append(accumulator, TP0)
    sender.send_producer_data(now=20)
    assert len(client.sent) == 1  # muted until the first answer
    answer(client.sent[0], {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    sender.send_producer_data(now=30)
    assert len(client.sent) == 2
    first, second = (r.body.topic_data[0].partition_data[0].records for r in client.sent)
    assert first == second  # the retried batch goes before the one queued behind it


@pytest.mark.spec("CLIENT-7")
def test_a_partition_missing_from_the_answer_fails_its_batch():
    sender, client, accumulator, _ = setup()
    a, b = append(accumulator, TP0)[0], append(accumulator, TP1)[0]
    sender.send_producer_data(now=10)
    request = client.sent[0]
    request.body.topic_data[0].partition_data = request.body.topic_data[0].partition_data[:1]
    answer(request, {})
    assert sum(isinstance(f.exception(), KafkaError) for f in (a, b)) == 1

"""What a KRaft broker sends the active controller, and what it makes of the answers:
forwarded admin requests (Envelope), its own topics (CreateTopics), ISR changes
(AlterPartition v2) and producer id blocks (AllocateProducerIds). The channel is a fake that
writes down each request and lets the test answer it."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.frames import decode_request, encode_request, encode_response
from kafka_ref.protocol.messages import (
    AllocateProducerIdsResponse,
    AlterPartitionResponse,
    ApiKey,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    EnvelopeResponse,
)
from kafka_ref.replication.messages import AlterIsr
from kafka_ref.security.principal import deserialize_principal
from kafka_ref.server.alter_partition_manager import AlterPartitionManager
from kafka_ref.server.auto_topic_creation import AutoTopicCreationManager
from kafka_ref.server.forwarding_manager import ForwardingManager
from kafka_ref.server.node_to_controller import ControllerUnavailableError
from kafka_ref.server.producer_id_blocks import (
    ControllerProducerIdBlocks,
    ProducerIdBlockNotReadyError,
)
from kafka_ref.server.request_channel import Request
from kafka_ref.txn.producer_ids import ProducerIdManager


class Channel:
    """A NodeToControllerChannel that the test answers."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, object, object]] = []

    def send(self, api_key, version, body, on_response) -> None:
        self.sent.append((api_key, version, body, on_response))

    async def request(self, api_key, version, body):
        future = asyncio.get_running_loop().create_future()
        self.sent.append((api_key, version, body, future.set_result))
        answer = await future
        if isinstance(answer, Exception):
            raise answer
        return answer

    def answer(self, response, index: int = -1) -> None:
        self.sent[index][3](response)

    def close(self) -> None:
        pass


class Connection:
    name = "10.1.2.3:51234"
    principal = "User:alice"

    def __init__(self) -> None:
        self.closed_for: str | None = None

    def on_response_ready(self) -> None:
        pass

    def close(self, reason: str) -> None:
        self.closed_for = reason


def client_request(api_key: int, version: int, body, correlation_id: int = 77) -> Request:
    """A request as the network layer hands it over: decoded, with its frame."""
    frame = encode_request(api_key, version, correlation_id, "admin", body)[4:]
    header, decoded = decode_request(frame)
    return Request(Connection(), header, decoded, len(frame) + 4, bytearray(frame))


CREATE = CreateTopicsRequest(
    topics=[
        CreateTopicsRequest.CreatableTopic(
            name="t", num_partitions=3, replication_factor=3, assignments=[], configs=[]
        )
    ],
    timeout_ms=5000,
)


@pytest.mark.spec("KBROKER-11")
def test_a_forwarded_request_travels_whole_and_its_answer_comes_back_unchanged():
    channel, answers = Channel(), []
    request = client_request(ApiKey.CREATE_TOPICS, 7, CREATE)
    ForwardingManager(channel).forward(request, lambda r, result: answers.append(result))
    [(key, version, envelope, _)] = channel.sent
    assert (key, version) == (ApiKey.ENVELOPE, 0)
    assert bytes(envelope.request_data) == bytes(request.frame)  # header and body as sent
    assert deserialize_principal(bytes(envelope.request_principal)) == "User:alice"
    assert bytes(envelope.client_host_address) == bytes([10, 1, 2, 3])
    inner = CreateTopicsResponse(
        topics=[CreateTopicsResponse.CreatableTopicResult(name="t", error_code=0)]
    )
    frame = encode_response(ApiKey.CREATE_TOPICS, 7, 77, inner)  # the client's correlation id
    channel.answer(EnvelopeResponse(response_data=frame[4:], error_code=0))
    [response] = answers
    assert response.to_bytes() == frame  # handed back as the controller wrote it


@pytest.mark.spec("KBROKER-11")
def test_a_forwarded_request_without_a_controller_answers_its_own_error():
    answers = []
    for answer, error in (
        (ControllerUnavailableError("nobody"), ErrorCode.REQUEST_TIMED_OUT),
        (EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST), ErrorCode.UNKNOWN_SERVER_ERROR),
    ):
        channel = Channel()
        delete = DeleteTopicsRequest(topic_names=["a", "b"], timeout_ms=5000)
        request = client_request(ApiKey.DELETE_TOPICS, 5, delete)
        ForwardingManager(channel).forward(request, lambda r, result: answers.append(result))
        channel.answer(answer)
        response = answers.pop()
        assert [(r.name, r.error_code) for r in response.responses] == [("a", error), ("b", error)]
    # a version the controller does not speak: the client starts again
    channel = Channel()
    request = client_request(ApiKey.CREATE_TOPICS, 7, CREATE)
    ForwardingManager(channel).forward(request, lambda r, result: answers.append(result))
    channel.answer(EnvelopeResponse(error_code=ErrorCode.UNSUPPORTED_VERSION))
    assert request.connection.closed_for is not None


@pytest.mark.spec("KBROKER-12")
def test_a_topic_on_its_way_to_the_controller_is_not_sent_again():
    channel = Channel()
    creator = AutoTopicCreationManager(channel)
    creator.create_topic("t", 4, 3, {"retention.ms": "9"})
    creator.create_topic("t", 4, 3, {"retention.ms": "9"})  # a client asking again
    [(key, _, body, _)] = channel.sent
    [topic] = body.topics
    assert key == ApiKey.CREATE_TOPICS
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("t", 4, 3)
    assert [(c.name, c.value) for c in topic.configs] == [("retention.ms", "9")]
    channel.answer(ControllerUnavailableError("nobody"))  # the flight ends, even so
    creator.create_topic("t", 4, 3, {})
    assert len(channel.sent) == 2


@pytest.mark.spec("KBROKER-14")
def test_an_isr_change_goes_to_the_active_controller_by_topic_id():
    topic_id = uuid.uuid4()
    channel, results = Channel(), []
    manager = AlterPartitionManager(
        7, lambda: 42, channel, lambda t: topic_id if t == "t" else None
    )
    alter = AlterIsr("t", 0, 7, 3, (7, 8), 5)  # leader 7, leader epoch 3, partition epoch 5

    async def scenario() -> None:
        manager.submit(alter, (7, 8, 9), results.append)
        await asyncio.sleep(0)
        [(key, version, body, _)] = channel.sent
        assert (key, version, body.broker_id, body.broker_epoch) == (56, 3, 7, 42)
        [topic] = body.topics
        [partition] = topic.partitions
        assert topic.topic_id == topic_id
        # v3: each member with its broker epoch, ours known, the follower's not
        isr = [(b.broker_id, b.broker_epoch) for b in partition.new_isr_with_epochs]
        assert isr == [(7, 42), (8, -1)]
        assert (partition.leader_epoch, partition.partition_epoch) == (3, 5)
        answer = AlterPartitionResponse.PartitionData(
            partition_index=0, leader_id=7, leader_epoch=3, isr=[7, 8], partition_epoch=6
        )
        channel.answer(
            AlterPartitionResponse(
                topics=[AlterPartitionResponse.TopicData(topic_id=topic_id, partitions=[answer])]
            )
        )
        await asyncio.sleep(0)
        # no controller: the leader is told NETWORK_EXCEPTION and proposes again later
        manager.submit(alter, (7, 8, 9), results.append)
        await asyncio.sleep(0)
        channel.answer(ControllerUnavailableError("nobody"))
        await asyncio.sleep(0.2)
        manager.submit(AlterIsr("gone", 0, 7, 3, (7,), 5), (7,), results.append)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    ok, lost, gone = results
    assert ok.error == ErrorCode.NO_ERROR and (ok.state.isr, ok.state.version) == ((7, 8), 6)
    assert lost.error == ErrorCode.NETWORK_EXCEPTION
    assert gone.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # deleted meanwhile: not sent


@pytest.mark.spec("KBROKER-15")
def test_producer_ids_come_from_the_controller_one_block_ahead():
    channel = Channel()
    blocks = ControllerProducerIdBlocks(5, lambda: 11, channel)
    ids = ProducerIdManager(5, blocks, block_size=2)
    with pytest.raises(ProducerIdBlockNotReadyError) as refused:  # none yet: asked for one
        ids.generate_producer_id()
    assert isinstance(refused.value, KafkaError)
    assert refused.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    [(key, _, body, _)] = channel.sent
    assert (key, body.broker_id, body.broker_epoch) == (ApiKey.ALLOCATE_PRODUCER_IDS, 5, 11)
    with pytest.raises(ProducerIdBlockNotReadyError):  # still on its way: not asked twice
        ids.generate_producer_id()
    assert len(channel.sent) == 1
    channel.answer(AllocateProducerIdsResponse(producer_id_start=1000, producer_id_len=2))
    assert ids.generate_producer_id() == 1000
    assert len(channel.sent) == 2  # the next block asked for as this one is handed out
    channel.answer(AllocateProducerIdsResponse(producer_id_start=3000, producer_id_len=2))
    assert [ids.generate_producer_id() for _ in range(3)] == [1001, 3000, 3001]

"""The active controller of three kafka-ref controller processes, over Kafka's requests.

A broker's requests (BrokerRegistration, BrokerHeartbeat, AllocateProducerIds) and an
administrator's (CreateTopics, directly and forwarded in an Envelope) go to the quorum's
leader, which decides by appending records and answers once they are committed; the others
answer NOT_CONTROLLER. The records outlive the leader: a new active controller answers
from the log.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.metadata.batches import read_metadata_records
from kafka_ref.metadata.controller.features import BOOTSTRAP_FEATURES
from kafka_ref.protocol.frames import decode_response, encode_request
from kafka_ref.protocol.messages import APIS, ApiKey
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.security.principal import serialize_principal
from tests.cluster.test_kraft_quorum import WAIT_S, ControllerQuorum, _caught_up

M = {key: APIS[key].request for key in APIS}
# what a broker supports: at least every feature level a new cluster finalizes (KCTRL-2)
FEATURES = [(name, 0, level) for name, level in BOOTSTRAP_FEATURES.items()]


@pytest.fixture
def quorum(tmp_path):
    controllers = ControllerQuorum(str(tmp_path)).start()
    yield controllers
    controllers.stop()


def _active(quorum) -> int:
    """The node the quorum names as leader, once there is one."""
    _, (partition, _) = quorum.quorum()
    return partition.leader_id


def _ask(quorum, node: int, key: int, version: int, body):
    with Wire("127.0.0.1", quorum.ports[node]) as wire:
        return wire.request(key, version, body)


def _registration(broker_id: int):
    request = M[ApiKey.BROKER_REGISTRATION]
    return request(
        broker_id=broker_id,
        cluster_id="",
        incarnation_id=uuid.uuid4(),
        listeners=[
            request.Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)
        ],
        features=[
            request.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
            for n, lo, hi in FEATURES
        ],
        log_dirs=[uuid.uuid4()],
    )


def _register(quorum, broker_id: int) -> tuple[int, int]:
    """Register broker `broker_id` and heartbeat until it is unfenced: (node, broker epoch)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        node = _active(quorum)
        body = _registration(broker_id)
        body.cluster_id = quorum.cluster_id
        answer = _ask(quorum, node, ApiKey.BROKER_REGISTRATION, 4, body)
        if answer.error_code == ErrorCode.NO_ERROR:
            break
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    epoch = answer.broker_epoch
    assert epoch >= 0
    while True:
        heartbeat = M[ApiKey.BROKER_HEARTBEAT](
            broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=1 << 30
        )
        answer = _ask(quorum, node, ApiKey.BROKER_HEARTBEAT, 2, heartbeat)
        assert answer.error_code == ErrorCode.NO_ERROR, answer
        if not answer.is_fenced:
            return node, epoch
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)


def _create_topics(name: str, replication_factor: int = 1):
    request = M[ApiKey.CREATE_TOPICS]
    return request(
        topics=[
            request.CreatableTopic(
                name=name, num_partitions=2, replication_factor=replication_factor
            )
        ],
        timeout_ms=5000,
    )


@pytest.mark.spec("KCTRL-17")
def test_the_active_controller_registers_unfences_and_creates_topics(quorum):
    node, epoch = _register(quorum, 101)
    others = [n for n in quorum.ports if n != node]
    # only the active controller decides
    refused = _ask(quorum, others[0], ApiKey.CREATE_TOPICS, 7, _create_topics("t"))
    assert refused.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    created = _ask(quorum, node, ApiKey.CREATE_TOPICS, 7, _create_topics("t"))
    result = created.topics[0]
    assert result.error_code == ErrorCode.NO_ERROR, result
    assert result.num_partitions == 2 and result.topic_id != uuid.UUID(int=0)
    again = _ask(quorum, node, ApiKey.CREATE_TOPICS, 7, _create_topics("t"))
    assert again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    too_many = _ask(quorum, node, ApiKey.CREATE_TOPICS, 7, _create_topics("u", 2))
    assert too_many.topics[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR  # one broker
    block = _ask(
        quorum,
        node,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        0,
        M[ApiKey.ALLOCATE_PRODUCER_IDS](broker_id=101, broker_epoch=epoch),
    )
    assert block.error_code == ErrorCode.NO_ERROR and block.producer_id_len == 1000
    # the records are on every voter's log, as committed Kafka metadata
    _caught_up(quorum)
    names = [r.name for r in _metadata_records(quorum, others[1])]
    assert names.count("FeatureLevelRecord") >= 1
    assert "RegisterBrokerRecord" in names and "TopicRecord" in names
    assert names.count("PartitionRecord") == 2 and "ProducerIdsRecord" in names


@pytest.mark.spec("KCTRL-17")
def test_a_new_active_controller_decides_on_what_the_old_one_committed(quorum):
    node, epoch = _register(quorum, 101)
    created = _ask(quorum, node, ApiKey.CREATE_TOPICS, 7, _create_topics("kept"))
    topic_id = created.topics[0].topic_id
    quorum.processes[node].stop(signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            successor = _active(quorum)
            if successor != node:
                answer = _ask(quorum, successor, ApiKey.CREATE_TOPICS, 7, _create_topics("kept"))
                if answer.topics[0].error_code != ErrorCode.NOT_CONTROLLER:
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "no new active controller"
        time.sleep(0.1)
    assert answer.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    # the broker keeps its epoch with the new controller, which gives it a fresh session
    heartbeat = M[ApiKey.BROKER_HEARTBEAT](
        broker_id=101, broker_epoch=epoch, current_metadata_offset=1 << 30
    )
    assert _ask(quorum, successor, ApiKey.BROKER_HEARTBEAT, 2, heartbeat).error_code == 0
    deleted = _ask(
        quorum,
        successor,
        ApiKey.DELETE_TOPICS,
        6,
        M[ApiKey.DELETE_TOPICS](
            topics=[M[ApiKey.DELETE_TOPICS].DeleteTopicState(name=None, topic_id=topic_id)],
            timeout_ms=5000,
        ),
    )
    assert [(r.name, r.error_code) for r in deleted.responses] == [("kept", 0)]


@pytest.mark.spec("KCTRL-18")
def test_a_forwarded_request_is_answered_inside_the_envelope(quorum):
    node, _ = _register(quorum, 101)
    inner = encode_request(ApiKey.CREATE_TOPICS, 7, 4242, "admin-client", _create_topics("fwd"))
    envelope = M[ApiKey.ENVELOPE](
        request_data=inner[4:],
        request_principal=serialize_principal("User:alice"),
        client_host_address=bytes([127, 0, 0, 1]),
    )
    answer = _ask(quorum, node, ApiKey.ENVELOPE, 0, envelope)
    assert answer.error_code == ErrorCode.NO_ERROR
    # the inner answer, as the client that sent the inner request reads it
    header, body = decode_response(answer.response_data, ApiKey.CREATE_TOPICS, 7)
    assert header.correlation_id == 4242
    assert body.topics[0].name == "fwd" and body.topics[0].error_code == ErrorCode.NO_ERROR
    bad = M[ApiKey.ENVELOPE](
        request_data=inner[4:], request_principal=b"\xff", client_host_address=b"\x7f\0\0\1"
    )
    refused = _ask(quorum, node, ApiKey.ENVELOPE, 0, bad)
    assert refused.error_code == ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


def _metadata_records(quorum, node: int):
    """The metadata records of node `node`'s log segments, read from its files."""
    directory = os.path.dirname(quorum.processes[node].log_path)
    partition = os.path.join(directory, "data", f"{METADATA_TOPIC}-0")
    data = b""
    for name in sorted(os.listdir(partition)):
        if name.endswith(".log"):
            with open(os.path.join(partition, name), "rb") as segment:
                data += segment.read()
    return read_metadata_records(data)


@pytest.mark.spec("KCTRL-17")
def test_an_answer_waits_for_a_majority_of_the_quorum(quorum):
    node, _ = _register(quorum, 101)
    followers = [quorum.processes[n] for n in quorum.ports if n != node]
    for follower in followers:  # paused: the leader alone cannot commit
        os.kill(follower.pid, signal.SIGSTOP)
    try:
        with Wire("127.0.0.1", quorum.ports[node]) as wire:
            wire.send(ApiKey.CREATE_TOPICS, 7, _create_topics("waits"))
            wire.sock.settimeout(0.3)  # below the check-quorum timeout: the leader stays
            with pytest.raises(TimeoutError):
                wire.read_frame()  # appended, not committed: no answer yet
            for follower in followers:
                os.kill(follower.pid, signal.SIGCONT)
            wire.sock.settimeout(WAIT_S)
            _, answer = wire.receive_numbered()
    finally:
        for follower in followers:
            os.kill(follower.pid, signal.SIGCONT)
    # answered once committed, or refused if the pause cost the leader its leadership
    assert answer.topics[0].error_code in (ErrorCode.NO_ERROR, ErrorCode.NOT_CONTROLLER)

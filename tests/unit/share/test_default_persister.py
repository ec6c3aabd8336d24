"""`DefaultStatePersister` without a network (spec/share_groups.md SHARE-79): it finds the
coordinator before each attempt, retries the retriable coordinator errors and unreachable
coordinators with a backoff, and answers any other error at once."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import APIS, ApiKey
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError
from kafka_ref.share import default_persister
from kafka_ref.share.default_persister import DefaultStatePersister
from kafka_ref.share.persister import RecordState, SharePartitionKey, StateBatch

KEY = SharePartitionKey("g", uuid.UUID(int=5), 2)


class FakeCluster:
    """Coordinators that answer from a script: each entry an error code, or an exception."""

    def __init__(self, nodes: list, answers: list) -> None:
        self.nodes, self.answers = list(nodes), list(answers)
        self.sent: list[tuple[int, int, int]] = []  # (node, api key, version)

    def find(self, coordinator_key: str) -> int | None:
        assert coordinator_key == KEY.coordinator_key
        return self.nodes.pop(0) if len(self.nodes) > 1 else self.nodes[0]

    def send(self, node, api_key, version, body, on_response) -> None:
        self.sent.append((node, api_key, version))
        assert body.group_id == KEY.group_id and body.topics[0].topic_id == KEY.topic_id
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            on_response(answer)
            return
        response = APIS[api_key].response
        result = response.PartitionResult(partition=KEY.partition, error_code=answer)
        topic = next(f for f in response.fields if f.name == "Results").struct.cls
        on_response(response(results=[topic(topic_id=KEY.topic_id, partitions=[result])]))


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(default_persister, "RETRY_BACKOFF_S", 0.001)
    monkeypatch.setattr(default_persister, "MAX_BACKOFF_S", 0.002)


@pytest.mark.spec("SHARE-79")
def test_the_persister_follows_a_moving_coordinator_and_retries():
    cluster = FakeCluster(
        [None, 1, 2, 3],  # no coordinator yet, then 1, then 2 and 3
        [
            ErrorCode.NOT_COORDINATOR,
            BrokerUnavailableError("broker 2: gone"),
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.NO_ERROR,
        ],
    )
    persister = DefaultStatePersister(cluster.find, cluster.send)
    batches = (StateBatch(0, 3, RecordState.ACKNOWLEDGED, 1),)
    error = asyncio.run(persister.write_state(KEY, 0, 1, 0, batches))
    assert error == ErrorCode.NO_ERROR
    assert [s[0] for s in cluster.sent] == [1, 2, 3, 3]  # found again after each failure
    assert {s[1:] for s in cluster.sent} == {(ApiKey.WRITE_SHARE_GROUP_STATE, 1)}

    # a refusal that is not about the coordinator is the answer, without a retry
    cluster = FakeCluster([1], [ErrorCode.FENCED_LEADER_EPOCH])
    persister = DefaultStatePersister(cluster.find, cluster.send)
    assert asyncio.run(persister.write_state(KEY, 0, 1, 0, ())) == ErrorCode.FENCED_LEADER_EPOCH
    assert len(cluster.sent) == 1

    # attempts run out: the last retriable error
    cluster = FakeCluster([1], [ErrorCode.NOT_COORDINATOR] * default_persister.MAX_ATTEMPTS)
    persister = DefaultStatePersister(cluster.find, cluster.send)
    state = asyncio.run(persister.read_state(KEY, 1))
    assert state.error == ErrorCode.NOT_COORDINATOR
    assert len(cluster.sent) == default_persister.MAX_ATTEMPTS

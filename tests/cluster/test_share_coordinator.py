"""The share coordinator on three real brokers (spec/share_groups.md SHARE-81).

A share-partition's coordinator is the leader of its partition of `__share_group_state`
(SHARE-70), replicated on three brokers with acks=all. Killing that broker with SIGKILL
moves the leadership; the new leader loads the partition's records and answers with the
state the old one had committed, and keeps fencing the old leader epoch.
"""

from __future__ import annotations

import signal

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    FindCoordinatorRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    WriteShareGroupStateRequest,
)
from kafka_ref.share.persister import SharePartitionKey
from kafka_ref.share.share_coordinator import SHARE_GROUP_STATE_TOPIC, partition_for
from tests.cluster.conftest import BROKER_CONFIGS, wait_for
from tests.cluster.test_controller import create_topic

pytestmark = pytest.mark.timeout(180)

OK = ErrorCode.NO_ERROR
STATE_PARTITIONS = BROKER_CONFIGS["share.coordinator.state.topic.num.partitions"]


def coordinator(cluster, broker_id: int, key: SharePartitionKey) -> tuple[int, int]:
    body = FindCoordinatorRequest(key_type=2, coordinator_keys=[key.coordinator_key])
    answer = cluster.request(broker_id, ApiKey.FIND_COORDINATOR, body, version=6)
    return answer.coordinators[0].error_code, answer.coordinators[0].node_id


def initialize(cluster, node: int, key: SharePartitionKey) -> int:
    T = InitializeShareGroupStateRequest
    p = T.PartitionData(partition=key.partition, state_epoch=0, start_offset=0)
    body = T(
        group_id=key.group_id, topics=[T.InitializeStateData(topic_id=key.topic_id, partitions=[p])]
    )
    answer = cluster.request(node, ApiKey.INITIALIZE_SHARE_GROUP_STATE, body, version=0)
    return answer.results[0].partitions[0].error_code


def write(
    cluster, node: int, key: SharePartitionKey, leader_epoch: int, start: int, batches
) -> int:
    T = WriteShareGroupStateRequest
    p = T.PartitionData(
        partition=key.partition,
        state_epoch=0,
        leader_epoch=leader_epoch,
        start_offset=start,
        state_batches=[
            T.StateBatch(first_offset=f, last_offset=e, delivery_state=s, delivery_count=c)
            for f, e, s, c in batches
        ],
    )
    body = T(
        group_id=key.group_id, topics=[T.WriteStateData(topic_id=key.topic_id, partitions=[p])]
    )
    answer = cluster.request(node, ApiKey.WRITE_SHARE_GROUP_STATE, body, version=1)
    return answer.results[0].partitions[0].error_code


def read(cluster, node: int, key: SharePartitionKey, leader_epoch: int):
    T = ReadShareGroupStateRequest
    p = T.PartitionData(partition=key.partition, leader_epoch=leader_epoch)
    body = T(group_id=key.group_id, topics=[T.ReadStateData(topic_id=key.topic_id, partitions=[p])])
    r = cluster.request(node, ApiKey.READ_SHARE_GROUP_STATE, body, version=0)
    p = r.results[0].partitions[0]
    batches = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches
    ]
    return p.error_code, p.start_offset, batches


@pytest.mark.spec("SHARE-81")
def test_the_state_survives_the_coordinators_broker(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1)
    topic_id = cluster.metadata(cluster.live()[0], [topic_name]).topics[0].topic_id
    key = SharePartitionKey("failover-group", topic_id, 0)
    state_tp = (SHARE_GROUP_STATE_TOPIC, partition_for(key.coordinator_key, STATE_PARTITIONS))

    def found(broker_id: int, other_than: int | None = None) -> int | None:
        error, node = coordinator(cluster, broker_id, key)
        return node if error == OK and node != other_than else None

    def committed(node: int):
        answer = read(cluster, node, key, 1)
        return answer if answer[0] == OK else None

    first = wait_for(lambda: found(1), what="the share coordinator", timeout=30)
    wait_for(lambda: len(cluster.state(*state_tp).isr) == 3, what="a full ISR", timeout=30)
    assert wait_for(lambda: initialize(cluster, first, key) == OK, what="initialize") is True
    assert write(cluster, first, key, 1, 0, [(0, 9, 0, 1)]) == OK
    assert write(cluster, first, key, 1, 3, [(3, 5, 2, 1), (9, 9, 4, 1)]) == OK
    before = read(cluster, first, key, 1)
    assert before == (OK, 3, [(3, 5, 2, 1), (6, 8, 0, 1), (9, 9, 4, 1)])

    cluster.stop(first, signal.SIGKILL)
    other = next(i for i in cluster.live() if i != first)
    second = wait_for(lambda: found(other, first), what="a new share coordinator", timeout=60)
    after = wait_for(lambda: committed(second), what="the state on the new one", timeout=30)
    assert after == before
    assert write(cluster, second, key, 0, -1, []) == ErrorCode.FENCED_LEADER_EPOCH
    assert write(cluster, second, key, 2, 6, [(6, 8, 2, 1)]) == OK
    assert read(cluster, second, key, 2) == (OK, 6, [(6, 8, 2, 1), (9, 9, 4, 1)])

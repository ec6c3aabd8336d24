"""The share coordinator in a KRaft cluster (spec/share_groups.md SHARE-81): three combined
nodes in one event loop, their brokers' own `DefaultStatePersister`s. One broker's
persister initializes and writes a share-partition's state; the broker coordinating it
crashes; another broker's persister finds the new coordinator and reads the same state."""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.share.persister import RecordState, SharePartitionKey, StateBatch
from kafka_ref.share.share_coordinator import SHARE_GROUP_STATE_TOPIC
from tests.cluster.test_kraft_brokers import CombinedCluster, create, wait_for

pytestmark = pytest.mark.timeout(180)

OK = ErrorCode.NO_ERROR
ACK, AVAILABLE = RecordState.ACKNOWLEDGED, RecordState.AVAILABLE


@pytest.mark.spec("SHARE-81")
def test_another_brokers_persister_reads_the_state_after_the_coordinator_crashes(tmp_path):
    cluster = CombinedCluster(str(tmp_path)).start()
    try:
        run_scenario(cluster)
    finally:
        cluster.close()


def run_scenario(cluster: CombinedCluster) -> None:
    topic = f"queue-{uuid.uuid4().hex[:8]}"
    create(cluster.bootstrap, topic, 1, 3)
    brokers = cluster.brokers
    topic_id = wait_for(lambda: brokers[1].controller.topic(topic), "the topic").topic_id
    key = SharePartitionKey("kraft-group", topic_id, 0)
    writer = brokers[1].share_persister

    async def write() -> list[ErrorCode]:
        return [
            await writer.initialize(key, 0, 0),
            await writer.write_state(key, 0, 1, 0, (StateBatch(0, 9, AVAILABLE, 1),)),
            await writer.write_state(key, 0, 1, 4, (StateBatch(4, 6, ACK, 1),)),
        ]

    assert cluster.run(write()) == [OK, OK, OK]
    before = cluster.run(writer.read_state(key, 1))
    assert (before.error, before.start_offset) == (OK, 4)
    assert before.batches == (StateBatch(4, 6, ACK, 1), StateBatch(7, 9, AVAILABLE, 1))

    coordinator = brokers[1].shares.find_coordinator(key.coordinator_key)
    state_partition = brokers[1].shares.coordinator.partition_for(key)
    assert brokers[coordinator].shares.coordinator.shards.get(state_partition) is not None
    cluster.crash(coordinator)
    reader = brokers[next(n for n in brokers if n != coordinator)]

    def moved() -> int | None:
        leader = reader.controller.partition_state(SHARE_GROUP_STATE_TOPIC, state_partition)
        return leader.leader if leader is not None and leader.leader != coordinator else None

    wait_for(moved, "a new leader of the state partition")
    after = cluster.run(reader.share_persister.read_state(key, 1))
    assert (after.error, after.start_offset, after.batches) == (OK, 4, before.batches)
    fenced = cluster.run(reader.share_persister.write_state(key, 0, 0, -1, ()))
    assert fenced == ErrorCode.FENCED_LEADER_EPOCH

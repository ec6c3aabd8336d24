"""The share coordinator on a broker (spec/share_groups.md SHARE-70, SHARE-78, SHARE-79):
FindCoordinator key type 2, the state RPCs over the wire with the project's own codecs,
`__share_group_state` and its configs, a restart that keeps the state, and the broker's
`DefaultStatePersister`."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    CreateTopicsRequest,
    DeleteShareGroupStateRequest,
    FindCoordinatorRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from kafka_ref.share.persister import RecordState, SharePartitionKey, StateBatch
from kafka_ref.share.share_coordinator import SHARE_GROUP_STATE_TOPIC
from tests.unit.security.authz_fixtures import ports, start_acl_broker, user_wire
from tests.unit.server.conftest import Wire

pytestmark = pytest.mark.timeout(60)

OK = ErrorCode.NO_ERROR
GROUP = "queue-readers"
PROPS = {"share.coordinator.state.topic.num.partitions": 3}


def create_topic(wire: Wire, name: str, partitions: int = 2) -> uuid.UUID:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1
    )
    wire.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
    meta = wire.metadata([name], version=12)
    return meta.topics[0].topic_id


def find(wire: Wire, key: str, version: int = 6):
    body = FindCoordinatorRequest(key_type=2, coordinator_keys=[key])
    return wire.request(ApiKey.FIND_COORDINATOR, version, body).coordinators[0]


def initialize(wire: Wire, topic_id, partition=0, state_epoch=0, start=0, group=GROUP):
    P, T = InitializeShareGroupStateRequest.PartitionData, InitializeShareGroupStateRequest
    body = T(
        group_id=group,
        topics=[
            T.InitializeStateData(
                topic_id=topic_id,
                partitions=[P(partition=partition, state_epoch=state_epoch, start_offset=start)],
            )
        ],
    )
    answer = wire.request(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, body)
    return answer.results[0].partitions[0]


def write(wire: Wire, topic_id, batches, partition=0, leader_epoch=0, start=-1, version=1):
    T = WriteShareGroupStateRequest
    body = T(
        group_id=GROUP,
        topics=[
            T.WriteStateData(
                topic_id=topic_id,
                partitions=[
                    T.PartitionData(
                        partition=partition,
                        state_epoch=0,
                        leader_epoch=leader_epoch,
                        start_offset=start,
                        state_batches=[
                            T.StateBatch(
                                first_offset=f, last_offset=e, delivery_state=s, delivery_count=c
                            )
                            for f, e, s, c in batches
                        ],
                    )
                ],
            )
        ],
    )
    return wire.request(ApiKey.WRITE_SHARE_GROUP_STATE, version, body).results[0].partitions[0]


def read(wire: Wire, topic_id, partition=0, leader_epoch=0):
    T = ReadShareGroupStateRequest
    body = T(
        group_id=GROUP,
        topics=[
            T.ReadStateData(
                topic_id=topic_id,
                partitions=[T.PartitionData(partition=partition, leader_epoch=leader_epoch)],
            )
        ],
    )
    return wire.request(ApiKey.READ_SHARE_GROUP_STATE, 0, body).results[0].partitions[0]


def summary(wire: Wire, topic_id, partition=0):
    T = ReadShareGroupStateSummaryRequest
    body = T(
        group_id=GROUP,
        topics=[
            T.ReadStateSummaryData(
                topic_id=topic_id,
                partitions=[T.PartitionData(partition=partition, leader_epoch=0)],
            )
        ],
    )
    return wire.request(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, body).results[0].partitions[0]


def delete(wire: Wire, topic_id, partition=0):
    T = DeleteShareGroupStateRequest
    body = T(
        group_id=GROUP,
        topics=[
            T.DeleteStateData(topic_id=topic_id, partitions=[T.PartitionData(partition=partition)])
        ],
    )
    return wire.request(ApiKey.DELETE_SHARE_GROUP_STATE, 0, body).results[0].partitions[0]


def batches_of(result) -> list[tuple[int, int, int, int]]:
    return [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in result.state_batches
    ]


@pytest.mark.spec("SHARE-78")
def test_find_coordinator_creates_the_state_topic_with_kafkas_configs(make_broker):
    broker = make_broker(props=PROPS)
    wire = Wire(broker.port)
    try:
        topic_id = create_topic(wire, "jobs")
        key = SharePartitionKey(GROUP, topic_id, 1).coordinator_key
        answer = find(wire, key)
        assert (answer.key, answer.error_code, answer.node_id) == (key, OK, 0)
        assert answer.port == broker.port
        controller = broker.broker.controller
        meta = controller.topic(SHARE_GROUP_STATE_TOPIC)
        assert meta.partitions == 3
        configs = meta.configs
        assert configs["cleanup.policy"] == "delete" and configs["retention.ms"] == "-1"
        assert configs["min.insync.replicas"] == "1"  # 2, capped at the one broker
        assert configs["segment.bytes"] == "104857600"
        meta = wire.metadata([SHARE_GROUP_STATE_TOPIC], version=12)
        assert meta.topics[0].is_internal
        # before v4 one key; an unknown key type stays INVALID_REQUEST
        old = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=key, key_type=2))
        assert (old.error_code, old.node_id) == (OK, 0)
        bad = FindCoordinatorRequest(key_type=3, coordinator_keys=[key])
        assert wire.request(ApiKey.FIND_COORDINATOR, 6, bad).coordinators[0].error_code == (
            ErrorCode.INVALID_REQUEST
        )
    finally:
        wire.close()


@pytest.mark.spec("SHARE-79")
def test_state_rpcs_over_the_wire_and_a_restart_keeps_the_state(make_broker, tmp_path):
    data = tmp_path / "data"
    broker = make_broker(data_dir=data, props=PROPS)
    wire = Wire(broker.port)
    topic_id = create_topic(wire, "jobs")
    find(wire, SharePartitionKey(GROUP, topic_id, 0).coordinator_key)  # creates the topic
    assert read(wire, topic_id).error_code == ErrorCode.INVALID_REQUEST  # not initialized
    assert initialize(wire, topic_id, start=0).error_code == OK
    assert write(wire, topic_id, [(0, 9, 0, 1)], leader_epoch=1).error_code == OK
    answer = write(wire, topic_id, [(2, 4, 2, 1), (9, 9, 4, 1)], leader_epoch=1, start=2)
    assert answer.error_code == OK
    assert write(wire, topic_id, [], leader_epoch=0).error_code == ErrorCode.FENCED_LEADER_EPOCH
    state = read(wire, topic_id, leader_epoch=1)
    assert (state.error_code, state.state_epoch, state.start_offset) == (OK, 0, 2)
    assert batches_of(state) == [(2, 4, 2, 1), (5, 8, 0, 1), (9, 9, 4, 1)]
    s = summary(wire, topic_id)
    assert (s.error_code, s.start_offset, s.leader_epoch, s.state_epoch) == (OK, 2, 1, 0)
    # one request, two topics (one unknown): each partition answered alone, in order
    T = ReadShareGroupStateRequest
    two = T(
        group_id=GROUP,
        topics=[
            T.ReadStateData(topic_id=uuid.uuid4(), partitions=[T.PartitionData(partition=0)]),
            T.ReadStateData(
                topic_id=topic_id, partitions=[T.PartitionData(partition=0, leader_epoch=1)]
            ),
        ],
    )
    results = wire.request(ApiKey.READ_SHARE_GROUP_STATE, 0, two).results
    assert [r.partitions[0].error_code for r in results] == [ErrorCode.INVALID_REQUEST, OK]
    wire.close()
    broker.stop()

    broker = make_broker(data_dir=data, props=PROPS)
    wire = Wire(broker.port)
    try:
        state = read(wire, topic_id, leader_epoch=1)
        assert (state.error_code, state.start_offset) == (OK, 2)
        assert batches_of(state) == [(2, 4, 2, 1), (5, 8, 0, 1), (9, 9, 4, 1)]
        assert write(wire, topic_id, [], leader_epoch=0).error_code == (
            ErrorCode.FENCED_LEADER_EPOCH
        )
        assert delete(wire, topic_id).error_code == OK
        assert read(wire, topic_id, leader_epoch=1).error_code == ErrorCode.INVALID_REQUEST
        assert summary(wire, topic_id).start_offset == -1
    finally:
        wire.close()


@pytest.mark.spec("SHARE-79")
def test_the_brokers_persister_reaches_the_coordinator(make_broker):
    broker = make_broker(props=PROPS)
    wire = Wire(broker.port)
    topic_id = create_topic(wire, "jobs", partitions=3)
    wire.close()
    persister = broker.broker.share_persister
    keys = [SharePartitionKey(GROUP, topic_id, p) for p in range(3)]
    ACK = RecordState.ACKNOWLEDGED

    async def scenario():
        initialized = [await persister.initialize(k, 0, 10) for k in keys]
        written = [
            await persister.write_state(k, 0, 3, 12, (StateBatch(12, 15, ACK, 1),)) for k in keys
        ]
        states = [await persister.read_state(k, 3) for k in keys]
        fenced = await persister.write_state(keys[0], 0, 2, -1, ())
        summary = await persister.read_summary(keys[1], 3)
        deleted = await persister.delete_state(keys[2])
        gone = await persister.read_state(keys[2], 3)
        return initialized, written, states, fenced, summary, deleted, gone

    async def run():
        return await asyncio.wait_for(scenario(), 20)

    future = asyncio.run_coroutine_threadsafe(run(), broker.loop)
    initialized, written, states, fenced, summary, deleted, gone = future.result(30)
    assert initialized == written == [OK, OK, OK]
    assert [(s.error, s.start_offset, s.batches) for s in states] == [
        (OK, 12, (StateBatch(12, 15, ACK, 1),))
    ] * 3
    assert fenced == ErrorCode.FENCED_LEADER_EPOCH
    assert (summary.error, summary.start_offset, summary.leader_epoch) == (OK, 12, 3)
    assert deleted == OK and gone.error == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("SHARE-79")
def test_only_a_principal_with_cluster_action_may_use_the_state_apis(tmp_path):
    broker = start_acl_broker(tmp_path / "acl", **PROPS)
    admin, alice = Wire(ports(broker)["PLAINTEXT"]), user_wire(broker)  # a super user, a user
    try:
        topic_id = create_topic(admin, "jobs")
        key = SharePartitionKey(GROUP, topic_id, 0).coordinator_key
        assert find(alice, key).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        refused = initialize(alice, topic_id)
        assert (refused.partition, refused.error_code) == (
            0,
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        )
        assert read(alice, topic_id).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert find(admin, key).error_code == OK  # the broker's own principal may
        assert initialize(admin, topic_id).error_code == OK
    finally:
        admin.close()
        alice.close()
        broker.stop()

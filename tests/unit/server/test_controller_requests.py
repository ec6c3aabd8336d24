"""The controller's requests without ZooKeeper: the broker's epoch checks (`fence`), the
batch the controller builds after an event, and its per-broker sender against a real
broker that starts listening late."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kafka_ref.cluster.controller_channel import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.handlers.controller_requests import fence
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(60)


@pytest.mark.spec("CTRL-19")
def test_a_request_from_an_older_controller_is_refused():
    # fence(own broker epoch, newest controller epoch seen, request's broker epoch, its epoch)
    assert fence(100, 7, 100, 6) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert fence(100, 7, 100, 7) == ErrorCode.NO_ERROR  # the current controller
    assert fence(100, 7, 100, 8) == ErrorCode.NO_ERROR  # a successor: accepted, and known


@pytest.mark.spec("CTRL-20")
def test_a_request_for_an_earlier_registration_is_refused():
    assert fence(100, 7, 99, 7) == ErrorCode.STALE_BROKER_EPOCH
    assert fence(100, 7, 100, 7) == ErrorCode.NO_ERROR
    # newer: registered again, the controller read it before this broker's client returned
    assert fence(100, 7, 101, 7) == ErrorCode.NO_ERROR
    assert fence(100, 7, -1, 7) == ErrorCode.NO_ERROR  # not checked (before KIP-380)
    # both stale: the broker epoch is checked first, as in Kafka's KafkaApis
    assert fence(100, 7, 99, 6) == ErrorCode.STALE_BROKER_EPOCH


def endpoint(broker_id: int, port: int = 9092) -> BrokerEndpoint:
    return BrokerEndpoint(broker_id, "127.0.0.1", port)


STATE = PartitionState("t", 0, 1, 4, (1, 2, 3), (1, 2), controller_epoch=6, zk_version=9)


@pytest.mark.spec("CTRL-21")
def test_a_batch_is_leader_and_isr_then_update_metadata_then_stop_replica_to_live_brokers():
    batch = ControllerBrokerRequestBatch(controller_id=2, controller_epoch=7)
    batch.add_stop_replica(1, "gone", 0, 3)
    batch.add_update_metadata([1, 2, 3], [STATE])
    batch.add_leader_and_isr([1, 2, 3], STATE)
    live = {1: (endpoint(1), 101), 2: (endpoint(2), 102)}  # broker 3 is not live
    requests = batch.requests(live)
    assert [(b, key) for b, (key, _v, _body) in requests] == [
        (1, ApiKey.LEADER_AND_ISR),
        (2, ApiKey.LEADER_AND_ISR),
        (1, ApiKey.UPDATE_METADATA),
        (2, ApiKey.UPDATE_METADATA),
        (1, ApiKey.STOP_REPLICA),
    ]
    for broker, (_key, _version, body) in requests:
        assert (body.controller_id, body.controller_epoch) == (2, 7)
        assert body.broker_epoch == live[broker][1]  # each receiver's own epoch
    (p,) = requests[0][1][2].topic_states[0].partition_states
    assert (p.leader, p.leader_epoch, p.isr, p.zk_version, p.replicas) == (
        1,
        4,
        [1, 2],
        9,
        [1, 2, 3],
    )
    (p,) = requests[2][1][2].topic_states[0].partition_states
    assert p.offline_replicas == [3]
    assert sorted(b.id for b in requests[2][1][2].live_brokers) == [1, 2]
    (s,) = requests[4][1][2].topic_states[0].partition_states
    assert (s.partition_index, s.leader_epoch, s.delete_partition) == (0, 3, True)


@pytest.mark.spec("CTRL-23")
def test_requests_wait_for_a_broker_that_is_not_listening_yet_and_leave_in_order(
    make_broker, caplog
):
    """A one-broker kafka-ref is no ZooKeeper broker: it answers each request with
    INVALID_REQUEST, which the sender logs; the log shows what arrived, in which order."""
    port = free_port()
    batch = ControllerBrokerRequestBatch(controller_id=1, controller_epoch=3)
    batch.add_leader_and_isr([2], STATE)
    batch.add_update_metadata([2], [STATE])
    requests = batch.requests({2: (endpoint(2, port), 5)})

    async def run() -> None:
        loop = asyncio.get_running_loop()
        channel = ControllerChannelManager(loop, 1, InterBrokerSecurity())
        channel.add_broker(endpoint(2, port))
        await asyncio.sleep(0)
        for _broker, request in requests:
            channel.send(2, request, 3)
        await asyncio.sleep(1.0)  # nobody listens: the first request is tried again and again
        assert "refused" not in caplog.text
        props = {"listeners": f"PLAINTEXT://127.0.0.1:{port}"}
        await loop.run_in_executor(None, make_broker, None, props)
        for _ in range(200):
            if caplog.text.count("refused") == 2:
                break
            await asyncio.sleep(0.05)
        channel.shutdown()
        await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="kafka_ref.cluster.controller_channel"):
        asyncio.run(run())
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused == [
        "controller 1 (epoch 3): broker 2 refused LEADER_AND_ISR: INVALID_REQUEST",
        "controller 1 (epoch 3): broker 2 refused UPDATE_METADATA: INVALID_REQUEST",
    ]

"""The group coordinator's writes wait for the ISR, like an acks=all produce (BROKER-47).

`__consumer_offsets-0` is made leader of the replica set {0, 99} in a new epoch; broker 99
does not exist, the test plays it by fetching with replica_id=99. A coordinator append then
calls back only when "99" has fetched past the batch, or with REQUEST_TIMED_OUT after
`offsets.commit.timeout.ms`. On a single broker (ISR of one) it calls back at once.
"""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.replication.messages import LeaderAndIsr
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, ensure_offsets_topic
from tests.unit.server.conftest import Wire, batch, fetch_body, wait_until

FOLLOWER = 99
PROPS = {"offsets.topic.num.partitions": 1, "offsets.commit.timeout.ms": 300}


def offsets_partition(broker, replicated: bool):
    apis = broker.broker.apis
    assert broker.call(lambda: ensure_offsets_topic(apis.controller, apis.config)) == 0
    partition = broker.broker.replica_manager.get_partition(OFFSETS_TOPIC, 0)
    if replicated:
        state = LeaderAndIsr(OFFSETS_TOPIC, 0, 0, 1, (0, FOLLOWER), (0, FOLLOWER))
        broker.call(lambda: partition.make_leader(state))
    return partition


def append(broker) -> list[ErrorCode]:
    """One coordinator write; the list fills with its outcome when on_done runs."""
    done: list[ErrorCode] = []
    broker.call(lambda: broker.broker.groups.append(0, batch(1), done.append))
    return done


def follower_fetch(port: int, offset: int) -> int:
    body = fetch_body([(OFFSETS_TOPIC, 0, offset)])
    body.replica_id = FOLLOWER
    body.topics[0].partitions[0].current_leader_epoch = 1
    wire = Wire(port)
    try:
        return wire.request(ApiKey.FETCH, 10, body).responses[0].partitions[0].error_code
    finally:
        wire.close()


@pytest.mark.spec("BROKER-47")
def test_one_broker_completes_a_coordinator_write_at_once(make_broker):
    broker = make_broker(props=PROPS)
    offsets_partition(broker, replicated=False)
    assert append(broker) == [ErrorCode.NO_ERROR]


@pytest.mark.spec("BROKER-47")
def test_a_coordinator_write_completes_when_the_isr_has_it(make_broker):
    broker = make_broker(props=PROPS | {"offsets.commit.timeout.ms": 10_000})
    partition = offsets_partition(broker, replicated=True)
    done = append(broker)
    assert done == [] and partition.high_watermark < partition.log_end_offset
    assert follower_fetch(broker.port, partition.log_end_offset) == 0  # "99" has it all
    assert wait_until(lambda: done == [ErrorCode.NO_ERROR])


@pytest.mark.spec("BROKER-47")
def test_a_coordinator_write_times_out_without_the_isr(make_broker):
    broker = make_broker(props=PROPS)
    offsets_partition(broker, replicated=True)
    done = append(broker)
    assert done == []
    assert wait_until(lambda: done == [ErrorCode.REQUEST_TIMED_OUT], timeout=5)

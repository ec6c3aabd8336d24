"""Share groups on a running broker, seen through the broker's own parts (KIP-932).

`join` makes a member of a share group as a share consumer does, with ShareGroupHeartbeat:
the share group coordinator initializes the subscribed share-partitions at the share
coordinator, and a later heartbeat assigns them once they are. `read_state` asks the
broker's own persister (`DefaultStatePersister`, on the broker's event loop) for what the
share coordinator holds of a share-partition: ReadShareGroupState, the state a new leader
would start from. `wait_for_state` polls it until it is what a test expects.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, FindCoordinatorRequest, ShareGroupHeartbeatRequest
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.share.persister import SharePartitionKey, ShareState
from tests.unit.server.conftest import Wire

# the group coordinator is loading, or not found yet
NOT_READY = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
)


def wait_for_group_coordinator(wire: Wire, group: str) -> None:
    """FindCoordinator until `group` has one (it creates `__consumer_offsets` first)."""
    body = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
    for _ in range(100):
        if wire.request(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0].error_code == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"no group coordinator for {group}")


def heartbeat(wire: Wire, group: str, member: str, epoch: int, topics=None):
    """One ShareGroupHeartbeat (v1), once `group` has a coordinator ready."""
    body = ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
    )
    for _ in range(100):
        wait_for_group_coordinator(wire, group)
        answer = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
        if answer.error_code not in NOT_READY:
            return answer
        time.sleep(0.1)
    raise AssertionError(f"the group coordinator of {group} is not ready")


def assigned(answer) -> int | None:
    """How many partitions a heartbeat's answer assigns (None: no assignment in it)."""
    a = answer.assignment
    return None if a is None else sum(len(t.partitions) for t in a.topic_partitions)


def join(wire: Wire, group: str, member: str, topics: list[str], partitions: int = 1):
    """Join `group` subscribed to `topics` and heartbeat until `partitions` are assigned
    (they are once the share group coordinator has initialized them). The last answer."""
    answer = heartbeat(wire, group, member, 0, topics)
    return until_assigned(wire, group, member, answer, partitions)


def until_assigned(wire: Wire, group: str, member: str, answer, partitions: int):
    """Heartbeat on from `answer` until the member is assigned `partitions`."""
    for _ in range(100):
        assert answer.error_code == ErrorCode.NO_ERROR, answer
        if assigned(answer) == partitions:
            return answer
        time.sleep(0.05)
        answer = heartbeat(wire, group, member, answer.member_epoch)
    raise AssertionError(f"{member} of {group} was not assigned {partitions} partitions")


def read_state(
    broker: BrokerThread, group: str, topic_id: uuid.UUID, partition: int = 0, leader_epoch=0
) -> ShareState:
    """ReadShareGroupState through the broker's persister, run on its loop."""
    key = SharePartitionKey(group, topic_id, partition)
    read = broker.broker.share_persister.read_state(key, leader_epoch)
    return asyncio.run_coroutine_threadsafe(read, broker.loop).result(30)


def wait_for_state(
    broker: BrokerThread,
    group: str,
    topic_id: uuid.UUID,
    expected,
    partition: int = 0,
    timeout: float = 10.0,
) -> ShareState:
    """The state once `expected(state)` holds (a write done in the background), or the
    last one read after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    state = read_state(broker, group, topic_id, partition)
    while not expected(state) and time.monotonic() < deadline:
        time.sleep(0.05)
        state = read_state(broker, group, topic_id, partition)
    return state

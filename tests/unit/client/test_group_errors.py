"""The consumer's answers to coordinator errors, against a scripted fake broker.

The fake broker answers FindCoordinator with itself and plays a fixed list of JoinGroup
answers, so each error of CLIENT-31 meets the consumer exactly once, in a known order.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.client import Consumer, TopicPartition
from kafka_ref.client.assignors import Subscription
from kafka_ref.client.subscription_state import IllegalStateError
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import ApiKey, encode_response
from kafka_ref.protocol.consumer_protocol import encode_assignment, encode_subscription
from kafka_ref.protocol.messages import (
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from tests.unit.client.conftest import metadata_response

pytestmark = pytest.mark.timeout(30)

E = ErrorCode


def join_answer(error: ErrorCode, member_id: str = "", generation: int = -1) -> object:
    members = []
    if error == E.NO_ERROR:  # we are the leader: our own subscription comes back
        metadata = encode_subscription(Subscription(("t",)))
        members = [
            JoinGroupResponse.JoinGroupResponseMember(member_id=member_id, metadata=metadata)
        ]
    return JoinGroupResponse(
        error_code=error,
        generation_id=generation,
        protocol_name="range" if error == E.NO_ERROR else "",
        leader=member_id if error == E.NO_ERROR else "",
        member_id=member_id,
        members=members,
    )


@pytest.mark.spec("CLIENT-31")
def test_join_errors_rediscover_retry_and_reset_the_member_id(fake_broker):
    joins = [
        join_answer(E.NOT_COORDINATOR),  # -> FindCoordinator again
        join_answer(E.COORDINATOR_LOAD_IN_PROGRESS),  # -> the same JoinGroup after a backoff
        join_answer(E.MEMBER_ID_REQUIRED, "m1"),  # -> join again with "m1"
        join_answer(E.UNKNOWN_MEMBER_ID),  # -> forget "m1", join as new
        join_answer(E.REBALANCE_IN_PROGRESS),  # -> join again
        join_answer(E.MEMBER_ID_REQUIRED, "m2"),
        join_answer(E.NO_ERROR, "m2", generation=7),
    ]
    seen: list[tuple[str, object]] = []

    def handler(header, body):
        key, version = header.request_api_key, header.request_api_version
        if key == ApiKey.METADATA:
            answer = metadata_response({"t": [1, 1]}, brokers=[(1, "127.0.0.1", broker.port)])
        elif key == ApiKey.FIND_COORDINATOR:
            seen.append(("find", body.key))
            answer = FindCoordinatorResponse(
                error_code=0, node_id=1, host="127.0.0.1", port=broker.port
            )
        elif key == ApiKey.JOIN_GROUP:
            seen.append(("join", body.member_id))
            answer = joins.pop(0)
        elif key == ApiKey.SYNC_GROUP:
            seen.append(("sync", (body.generation_id, body.member_id, len(body.assignments))))
            assignment = encode_assignment([TopicPartition("t", 0), TopicPartition("t", 1)])
            answer = SyncGroupResponse(error_code=0, assignment=assignment)
        elif key == ApiKey.HEARTBEAT:
            answer = HeartbeatResponse(error_code=0)
        elif key == ApiKey.LEAVE_GROUP:
            seen.append(("leave", body.member_id))
            answer = LeaveGroupResponse(error_code=0)
        else:
            return []  # Fetch, ListOffsets, OffsetFetch...: no answer needed here
        return [encode_response(key, version, header.correlation_id, answer)]

    broker = fake_broker(handler)
    consumer = Consumer(
        f"127.0.0.1:{broker.port}", group_id="g", enable_auto_commit=False, request_timeout_ms=5000
    )
    consumer.subscribe(["t"])
    deadline = time.monotonic() + 10
    while not consumer.assignment():
        assert time.monotonic() < deadline, f"no assignment; requests: {seen}"
        consumer.poll(0.05)
    assert consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert seen[:9] == [
        ("find", "g"),
        ("join", ""),
        ("find", "g"),
        ("join", ""),
        ("join", ""),
        ("join", "m1"),
        ("join", ""),
        ("join", ""),
        ("join", "m2"),
    ]
    assert seen[9] == ("sync", (7, "m2", 1))  # the leader sends the assignment
    consumer.close()
    assert seen[-1] == ("leave", "m2")


@pytest.mark.spec("CLIENT-20")
def test_subscribe_needs_a_group_and_excludes_assign():
    no_group = Consumer("127.0.0.1:1")
    with pytest.raises(IllegalStateError):
        no_group.subscribe(["t"])
    consumer = Consumer("127.0.0.1:1", group_id="g")
    consumer.assign([TopicPartition("t", 0)])
    with pytest.raises(IllegalStateError):
        consumer.subscribe(["t"])
    consumer.unsubscribe()
    consumer.subscribe(["t"])
    with pytest.raises(IllegalStateError):
        consumer.assign([TopicPartition("t", 0)])
    assert consumer.subscription() == {"t"} and consumer.assignment() == set()
    no_group.close()
    consumer.close()

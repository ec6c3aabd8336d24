"""Apache Kafka's Java admin client against one kafka-ref broker: share groups (KIP-932).

describeShareGroups, listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets
and deleteShareGroups on a group the admin creates (altering the offsets of a group that
does not exist creates it empty), with a member joined by a raw ShareGroupHeartbeat in the
middle. The broker's persister keeps nothing (the share coordinator is another module's),
so the start offsets read back are -1 (no state).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import (
    ApiKey,
    FindCoordinatorRequest,
    ShareGroupHeartbeatRequest,
)
from tests.java_clients.harness import JavaError
from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(120)


def heartbeat(broker, group: str, member: str, epoch: int, topics=None):
    host, port = broker.bootstrap.rsplit(":", 1)
    with Wire(host, int(port)) as wire:
        body = ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
        )
        for _ in range(50):
            find = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
            wire.request(ApiKey.FIND_COORDINATOR, 4, find)
            answer = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
            if answer.error_code not in (14, 15, 16):
                return answer
            time.sleep(0.1)
    raise AssertionError("no coordinator")


@pytest.mark.spec("SHARE-49")
def test_the_java_admin_describes_lists_alters_and_deletes_a_share_group(java, broker):
    bootstrap, topic, group = broker.bootstrap, topic_name("shared"), topic_name("queue")
    create_topic(java, broker, topic, 2)
    assert (
        java.call(
            "alter-share-group-offsets", bootstrap=bootstrap, group=group, offsets={f"{topic}-0": 3}
        )
        == "ok"
    )
    described = java.call("describe-share-groups", bootstrap=bootstrap, groups=[group])[group]
    assert (described["state"], described["members"]) == ("Empty", [])
    offsets = java.call("list-share-group-offsets", bootstrap=bootstrap, group=group)
    assert set(offsets) == {f"{topic}-0"}  # the one share-partition it has a state for

    joined = heartbeat(broker, group, "member-1", 0, [topic])
    assert joined.error_code == 0
    heartbeat(broker, group, "member-1", joined.member_epoch)
    described = java.call("describe-share-groups", bootstrap=bootstrap, groups=[group])[group]
    assert described["state"] == "Stable"
    [member] = described["members"]
    assert member["member_id"] == "member-1"
    assert member["assignment"] == [f"{topic}-0", f"{topic}-1"]
    assert described["group_epoch"] == described["assignment_epoch"] > 0
    refused = java.call(
        "alter-share-group-offsets", bootstrap=bootstrap, group=group, offsets={f"{topic}-1": 0}
    )
    assert refused.startswith("GroupNotEmptyException")
    assert java.call("delete-share-groups", bootstrap=bootstrap, groups=[group]).startswith(
        "GroupNotEmptyException"
    )

    assert heartbeat(broker, group, "member-1", -1).error_code == 0
    deleted = java.call(
        "delete-share-group-offsets", bootstrap=bootstrap, group=group, topics=[topic]
    )
    assert deleted == "ok"
    assert java.call("delete-share-groups", bootstrap=bootstrap, groups=[group]) == "ok"
    with pytest.raises(JavaError) as gone:
        java.call("describe-share-groups", bootstrap=bootstrap, groups=[group])
    assert gone.value.error.endswith("GroupIdNotFoundException")

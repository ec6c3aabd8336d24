"""Apache Kafka's Java consumer with `group.protocol=consumer` (KIP-848) against kafka-ref.

The same scenario as test_consumer.py's classic group, on the consumer group protocol: the
broker's uniform assignor (CGRP-8) shares six partitions among one, three, then two members,
each member moving one heartbeat at a time (revoking, committing in its
`onPartitionsRevoked`, before another member gets the partition: CGRP-5), so every record
is read exactly once and the committed offsets end at the log end. The admin client
describes the group with ConsumerGroupDescribe: a Stable group of type CONSUMER.
"""

from __future__ import annotations

import uuid

import pytest

from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(240)


@pytest.mark.spec("CGRP-5", "CGRP-8")
def test_the_java_consumer_shares_partitions_under_the_consumer_protocol(java, broker):
    topic, group, partitions, records = topic_name("kip848"), f"k-{uuid.uuid4().hex[:6]}", 6, 600
    create_topic(java, broker, topic, partitions)
    seen = java.call(
        "group",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        partitions=partitions,
        records=records,
        wait_seconds=60,
        props={"group.protocol": "consumer"},
    )
    every = [f"{topic}-{p}" for p in range(partitions)]
    assert seen["alone"] == {"member-1": every}
    three = seen["three"]
    assert sorted(p for owned in three.values() for p in owned) == every
    assert sorted(len(owned) for owned in three.values()) == [2, 2, 2]  # balanced
    assert sorted(p for owned in seen["two"].values() for p in owned) == every

    read = [value for values in seen["read"].values() for value in values]
    assert sorted(read) == sorted(f"r{i}" for i in range(records))  # each record once
    assert seen["committed"] == seen["end_offsets"] == {p: records // partitions for p in every}

    description = seen["description"]
    assert description["state"] == "STABLE" and description["type"] == "CONSUMER"
    assert description["assignor"] == "uniform"
    members = description["members"]
    assert [m["client_id"] for m in members] == ["member-1", "member-2"]
    assert {m["client_id"]: m["assignment"] for m in members} == seen["two"]

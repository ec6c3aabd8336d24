"""Apache Kafka's Java consumer against kafka-ref: a classic group, and seeking.

Three members of one group (the classic protocol, Kafka's default assignors) share six
partitions, then two do after one leaves; each commits what it processed, so every record
is read exactly once and the group's committed offsets end at the log end. One consumer
seeks by offset and by time, commits with metadata, and a new member starts from there.
"""

from __future__ import annotations

import uuid

import pytest

from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(180)


ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


@pytest.mark.spec("JAVA-4")
@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
def test_a_classic_group_shares_partitions_and_reads_each_record_once(java, broker, assignor):
    """Eager rebalances (range: every member gives up everything, then gets its share) and
    cooperative ones (cooperative-sticky, KIP-429: only the partitions that move are revoked,
    in a second round)."""
    topic, group, partitions, records = topic_name("group"), f"g-{uuid.uuid4().hex[:6]}", 6, 600
    create_topic(java, broker, topic, partitions)
    seen = java.call(
        "group",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        partitions=partitions,
        records=records,
        props={"partition.assignment.strategy": ASSIGNORS[assignor]},
    )
    every = [f"{topic}-{p}" for p in range(partitions)]
    assert seen["alone"] == {"member-1": every}
    three = seen["three"]
    assert sorted(p for owned in three.values() for p in owned) == every
    assert sorted(len(owned) for owned in three.values()) == [2, 2, 2]  # balanced
    assert sorted(p for owned in seen["two"].values() for p in owned) == every
    assert set(seen["two"]) == {"member-1", "member-2"}

    read = [value for values in seen["read"].values() for value in values]
    assert sorted(read) == sorted(f"r{i}" for i in range(records))  # each record once
    assert seen["read"]["member-3"]  # the member that left had read its share first
    assert seen["committed"] == seen["end_offsets"] == {p: records // partitions for p in every}

    description = seen["description"]
    assert description["state"] == "STABLE" and description["type"] == "CLASSIC"
    assert description["assignor"] == assignor
    members = description["members"]
    assert [m["client_id"] for m in members] == ["member-1", "member-2"]
    assert sorted(p for m in members for p in m["assignment"]) == every
    assert {m["client_id"]: m["assignment"] for m in members} == seen["two"]


@pytest.mark.spec("JAVA-5")
def test_the_consumer_seeks_by_offset_and_time_and_resumes_from_a_commit(java, broker):
    topic, group = topic_name("seek"), f"seek-{uuid.uuid4().hex[:6]}"
    create_topic(java, broker, topic, 1)
    base = 1_700_000_000_000
    seen = java.call(
        "seek", bootstrap=broker.bootstrap, topic=topic, group=group, records=10, base=base
    )
    assert seen["after_seek_5"] == [5, "s5"]
    assert seen["beginning"] == 0 and seen["end"] == 10
    assert seen["for_time"] == [4, base + 4000]  # the first record at or after base + 3.5 s
    assert seen["committed"] == [7, "seven"]
    assert seen["new_member_position"] == 7

"""Committed offsets over time: expiry, group deletion, compaction of the offsets topic, and
what commit-before-processing means to a real consumer.

Expiry and compaction of `__consumer_offsets` are governed by broker-level configs
(`offsets.retention.check.interval.ms`, `offsets.topic.segment.bytes`) whose defaults are
minutes and 100 MiB, so those tests ask for a broker started with small values
(`configurable-broker`); the explicit retention time of OffsetCommit v2-v4 then makes
expiry observable in a second instead of a week.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.groups import (
    Member,
    commit,
    coordinator,
    delete_groups,
    fetch_offsets,
    two_members,
)
from kafka_ref.conformance.wire import Wire

NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 68, 69
QUICK_EXPIRY = {"offsets.retention.check.interval.ms": 200}
SEGMENT, ROUNDS = 1024 * 1024, 40  # the offsets topic's segment.bytes; rounds of commits


def committed(wire: Wire, group: str, parts: list[tuple[str, int]]) -> dict:
    return {k: v.committed_offset for k, v in fetch_offsets(wire, group, parts).items()}


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def quick(configured_broker):
    broker = configured_broker(QUICK_EXPIRY)
    broker.require("groups", "create-topics")
    return broker


@pytest.mark.spec("OFFSET-6")
def test_an_explicit_retention_expires_a_simple_groups_offset(quick):
    topic, group = quick.topic_name("expire"), quick.group_name("simple")
    with quick.wire() as w:
        assert w.create_topic(topic, 2) == 0
        _, port = coordinator(w, group)
    with Wire(quick.host, port) as w:
        assert commit(w, group, {(topic, 0): 7}, retention_ms=800) == {(topic, 0): 0}
        assert commit(w, group, {(topic, 1): 9}) == {(topic, 1): 0}  # the default: a week
        assert committed(w, group, [(topic, 0)]) == {(topic, 0): 7}
        wait_for(
            lambda: committed(w, group, [(topic, 0)]) == {(topic, 0): -1},
            10,
            "an offset past its explicit expiry is still served",
        )
        assert committed(w, group, [(topic, 1)]) == {(topic, 1): 9}


def join_alone(member: Member, attempts: int = 5) -> None:
    """A member id (KIP-394), then the join. Between the two the group is Empty with no
    offsets, which the offsets expiration (every 200 ms here) may remove, the pending
    member with it (Apache Kafka does): the join is then UNKNOWN_MEMBER_ID, and a client
    starts again without an id."""
    for _ in range(attempts):
        member.member_id = ""
        member.get_member_id()
        if member.join().error_code == 0:
            return
    raise AssertionError(f"no join in {attempts} attempts")


@pytest.mark.spec("OFFSET-6")
def test_offsets_do_not_expire_while_the_group_has_members(quick):
    topic, group = quick.topic_name("members"), quick.group_name("live")
    with quick.wire() as w:
        assert w.create_topic(topic, 1) == 0
        _, port = coordinator(w, group)
    member = Member(Wire(quick.host, port), group)
    try:
        join_alone(member)
        assert member.sync({member.member_id: b""}).error_code == 0
        codes = commit(
            member.wire,
            group,
            {(topic, 0): 3},
            generation=member.generation,
            member_id=member.member_id,
            retention_ms=300,
        )
        assert codes == {(topic, 0): 0}
        for _ in range(15):  # 1.5 s: five times the retention, heartbeating
            assert member.heartbeat() == 0
            time.sleep(0.1)
        assert committed(member.wire, group, [(topic, 0)]) == {(topic, 0): 3}
        assert member.leave() == 0  # Empty now: the expiry applies
        wait_for(
            lambda: committed(member.wire, group, [(topic, 0)]) == {(topic, 0): -1},
            10,
            "the offset did not expire once the group was Empty",
        )
    finally:
        member.wire.close()


@pytest.mark.spec("OFFSET-7")
def test_only_an_empty_group_is_deleted(target, connect, group, make_topic):
    topic = make_topic("delete", 1)
    w = connect()
    unknown = target.group_name("unknown")
    assert delete_groups(w, [unknown]) == {unknown: GROUP_ID_NOT_FOUND}
    leader, follower = two_members(connect, group)
    follower.send_sync()
    leader.sync({})
    follower.wire.receive()  # Stable: a member may commit
    assert commit(
        w, group, {(topic, 0): 5}, generation=leader.generation, member_id=leader.member_id
    ) == {(topic, 0): 0}
    assert delete_groups(w, [group]) == {group: NON_EMPTY_GROUP}
    assert committed(w, group, [(topic, 0)]) == {(topic, 0): 5}
    assert follower.leave() == 0 and leader.leave() == 0
    assert delete_groups(w, [group]) == {group: 0}
    assert committed(w, group, [(topic, 0)]) == {(topic, 0): -1}, "its offsets went with it"
    assert delete_groups(w, [group]) == {group: GROUP_ID_NOT_FOUND}, "and it is gone"


@pytest.mark.spec("OFFSET-5")
def test_committed_offsets_survive_compaction_of_the_offsets_topic(configured_broker):
    # 1 MiB segments, the least Apache Kafka 4 takes for a topic (the offsets topic gets
    # `segment.bytes` from offsets.topic.segment.bytes); commits of 16 partitions with 4 KB
    # of metadata each (offset.metadata.max.bytes allows 4096) fill one in 16 rounds
    broker = configured_broker(
        {"offsets.topic.num.partitions": 1, "offsets.topic.segment.bytes": SEGMENT}
    )
    broker.require("groups", "create-topics", "compaction", "restart")
    topic, group = broker.topic_name("c"), broker.group_name("compacted")
    parts = [(topic, p) for p in range(16)]
    latest: dict[tuple[str, int], int] = {}
    with broker.wire() as w:
        assert w.create_topic(topic, len(parts)) == 0
        coordinator(w, group)
        for i in range(ROUNDS):  # every round supersedes the last: most records are stale
            latest = {part: i for part in parts}
            errors = commit(w, group, latest, metadata=f"{i:04d}" + "m" * 4000)
            assert set(errors.values()) == {0}
        written = ROUNDS * len(parts)

        def compacted() -> bool:
            return len(w.read_all("__consumer_offsets")) < written - len(parts) * 16

        wait_for(compacted, 30, "__consumer_offsets was never compacted")
        values = [r.value for r in w.read_all("__consumer_offsets")]
        assert None not in values, "no tombstone for a live offset"
        assert committed(w, group, parts) == latest
    broker.restart()  # loading the compacted log gives the same offsets
    with broker.wire() as w:
        _, _port = coordinator(w, group)
        assert committed(w, group, parts) == latest


confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.mark.spec("DELIV-1")
def test_commit_before_processing_is_at_most_once(target, wire):
    target.require("groups", "create-topics")
    topic, group = target.topic_name("amo"), target.group_name("amo")
    assert wire.create_topic(topic, 1) == 0
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap})
    for i in range(20):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(20) == 0

    def consumer():
        c = confluent_kafka.Consumer(
            {
                "bootstrap.servers": target.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        c.subscribe([topic])
        return c

    processed: list[int] = []
    first, crashed_at = consumer(), None
    deadline = time.monotonic() + 30
    while crashed_at is None and time.monotonic() < deadline:
        msg = first.poll(0.2)
        if msg is None or msg.error():
            continue
        first.commit(message=msg, asynchronous=False)  # commit first: offset + 1
        if msg.offset() == 5:
            crashed_at = 5  # crash after the commit, before processing
            break
        processed.append(int(msg.value()))
    first.close()
    assert crashed_at == 5, f"the first consumer read only {processed}"
    second = consumer()
    deadline = time.monotonic() + 30
    while len(processed) < 19 and time.monotonic() < deadline:
        msg = second.poll(0.2)
        if msg is not None and not msg.error():
            processed.append(int(msg.value()))
    second.close()
    assert 5 not in processed, "the record committed before processing was processed"
    assert sorted(processed) == [i for i in range(20) if i != 5], "none twice, none else lost"

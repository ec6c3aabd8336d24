"""Consumer groups with real clients: librdkafka (confluent-kafka) and kafka-python.

The `group_broker` fixture (conftest.py) is a broker process with
`group.initial.rebalance.delay.ms=0` (Kafka's shipped server.properties does the same for
development) and `group.min.session.timeout.ms=1000`, so that the consumers can use a 2 s
session timeout and the tests that wait for a session to expire stay short. Each test uses
its own topic and group.

What a group promises, seen from the clients: the members of one generation share the
topic's partitions, disjoint and complete; when a member leaves (close) or dies (kill -9),
the others take its partitions, at once or after its session timeout; a group resumes from
its committed offsets after a broker restart; a second group reads everything again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.conftest import SESSION_TIMEOUT_MS, BrokerProcess

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 6


def make_topic(bootstrap: str, name: str, records: int = 0) -> list[tuple[int, bytes]]:
    """Create `name` with PARTITIONS partitions and produce `records` keyed records."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        future.result(30)
    produced = []
    if records:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(records):
            value = f"{name}-{i}".encode()
            producer.produce(name, value=value, key=str(i).encode(), partition=i % PARTITIONS)
            produced.append((i % PARTITIONS, value))
        assert producer.flush(30) == 0
    return produced


def group_consumer(bootstrap: str, group: str, **settings) -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 300,
    }
    config.update(settings)
    return Consumer(config)


def assigned(consumer: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


def poll_until(consumers: list[Consumer], done, timeout: float = 30.0, messages=None) -> None:
    """Poll every consumer in turn until `done()` holds; collect messages if asked."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            for m in c.consume(500, 0.05):
                if m.error():
                    raise KafkaException(m.error())
                if messages is not None:
                    messages.append(m)
        if done():
            return
    owners = [sorted(assigned(c)) for c in consumers]
    raise AssertionError(f"condition not met within {timeout}s; assignments: {owners}")


def disjoint_and_complete(consumers: list[Consumer], topic: str) -> bool:
    every = [assigned(c) for c in consumers]
    union = set().union(*every)
    return sum(map(len, every)) == PARTITIONS and union == {(topic, p) for p in range(PARTITIONS)}


@pytest.mark.spec("REBAL-1", "REBAL-2", "REBAL-12")
def test_three_members_share_six_partitions_and_a_closed_member_is_replaced(group_broker):
    bootstrap, topic = group_broker.bootstrap, "g-share"
    make_topic(bootstrap, topic)
    members = [group_consumer(bootstrap, "g-share") for _ in range(3)]
    for c in members:
        c.subscribe([topic])
    try:
        # range over 6 partitions and 3 members: 2 each (an earlier generation may have had
        # only some of the members, so wait for the one with all three)
        poll_until(
            members,
            lambda: (
                disjoint_and_complete(members, topic)
                and all(len(assigned(c)) == 2 for c in members)
            ),
        )

        leaving = members.pop()
        started = time.monotonic()
        leaving.close()  # LeaveGroup: the others rebalance at once, not after a timeout
        poll_until(
            members,
            lambda: (
                disjoint_and_complete(members, topic)
                and all(len(assigned(c)) == 3 for c in members)
            ),
        )
        assert time.monotonic() - started < SESSION_TIMEOUT_MS / 1000 + 5
    finally:
        for c in members:
            c.close()


MEMBER_SCRIPT = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer
    bootstrap, group, topic, session = sys.argv[1:5]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "session.timeout.ms": int(session), "heartbeat.interval.ms": 300})
    c.subscribe([topic])
    told = False
    while True:
        c.poll(0.1)
        if c.assignment() and not told:
            print("assigned", flush=True)
            told = True
    """
)


@pytest.mark.spec("REBAL-6")
def test_a_killed_member_is_replaced_after_its_session_timeout(group_broker):
    bootstrap, topic, group = group_broker.bootstrap, "g-kill", "g-kill"
    make_topic(bootstrap, topic)
    doomed = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SCRIPT, bootstrap, group, topic, str(SESSION_TIMEOUT_MS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    survivors = [group_consumer(bootstrap, group) for _ in range(2)]
    try:
        assert doomed.stdout.readline().strip() == "assigned"
        for c in survivors:
            c.subscribe([topic])
        poll_until(survivors, lambda: sum(len(assigned(c)) for c in survivors) == 4)

        os.kill(doomed.pid, signal.SIGKILL)  # no LeaveGroup: only the session timeout tells
        doomed.wait(10)
        killed_at = time.monotonic()
        poll_until(survivors, lambda: disjoint_and_complete(survivors, topic))
        waited = time.monotonic() - killed_at
        assert waited < SESSION_TIMEOUT_MS / 1000 + 5, waited
    finally:
        doomed.kill()
        doomed.wait()
        for c in survivors:
            c.close()


@pytest.mark.spec("OFFSET-4")
def test_committed_offsets_survive_a_broker_restart(group_broker: BrokerProcess):
    bootstrap, topic, group = group_broker.bootstrap, "g-restart", "g-restart"
    produced = make_topic(bootstrap, topic, records=600)
    first = group_consumer(bootstrap, group, **{"enable.auto.commit": False})
    first.subscribe([topic])
    seen: list = []
    try:
        poll_until([first], lambda: len(seen) >= 300, messages=seen)
        first.commit(asynchronous=False)  # commits the position of every assigned partition
        committed = {  # OFFSET_INVALID (-1001) for a partition not read yet: starts at 0
            tp.partition: max(tp.offset, 0)
            for tp in first.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        }
    finally:
        first.close()
    assert sum(committed.values()) == len(seen)

    group_broker.restart(signal.SIGKILL)  # even a crash keeps what was committed

    second = group_consumer(bootstrap, group)
    second.subscribe([topic])
    rest: list = []
    try:
        poll_until([second], lambda: len(rest) >= len(produced) - len(seen), messages=rest)
        starts = {}
        for m in rest:
            starts.setdefault(m.partition(), m.offset())
        assert all(starts[p] == committed[p] for p in starts)
        values = sorted(m.value() for m in seen + rest)
        assert values == sorted(v for _, v in produced)  # nothing lost, nothing twice
    finally:
        second.close()


def test_a_second_group_reads_everything_again(group_broker):
    """Broadcast versus unicast: within a group each record goes to one member; every group
    gets every record."""
    bootstrap, topic = group_broker.bootstrap, "g-broadcast"
    produced = make_topic(bootstrap, topic, records=300)
    for group in ("g-broadcast-a", "g-broadcast-b"):
        c = group_consumer(bootstrap, group)
        c.subscribe([topic])
        got: list = []
        try:
            poll_until([c], lambda got=got: len(got) >= len(produced), messages=got)
        finally:
            c.close()
        assert sorted(m.value() for m in got) == sorted(v for _, v in produced)


@pytest.mark.spec("REBAL-1")
def test_kafka_python_group_consumers_share_and_commit(group_broker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    bootstrap, topic, group = group_broker.bootstrap, "g-kafka-python", "g-kafka-python"
    produced = make_topic(bootstrap, topic, records=120)
    settings = dict(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=300,
    )
    a, b = KafkaConsumer(**settings), KafkaConsumer(**settings)
    a.subscribe([topic])
    b.subscribe([topic])
    got: list = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in (a, b):
                for records in c.poll(timeout_ms=100).values():
                    got.extend(records)
            owned = [c.assignment() for c in (a, b)]
            if len(got) >= len(produced) and all(owned) and not owned[0] & owned[1]:
                break
        # Every record read; some maybe twice: with no commit before the second member's
        # rebalance, a partition that moves is read again from the start (at least once).
        assert {r.value for r in got} == {v for _, v in produced}
        assert len(a.assignment() | b.assignment()) == PARTITIONS
        assert not a.assignment() & b.assignment()
        for c in (a, b):
            c.commit()
        committed = sum(a.committed(KTopicPartition(topic, p)) or 0 for p in range(PARTITIONS))
        assert committed == len(produced)
    finally:
        a.close()
        b.close()


def test_confluent_kafka_with_default_settings_closes_quickly(kafka_ref_broker):
    """A librdkafka consumer with nothing but a group id (auto-commit
    on) subscribes, reads, commits on close, and closes without waiting for a coordinator."""
    bootstrap, topic = kafka_ref_broker.bootstrap, "g-defaults"
    produced = make_topic(bootstrap, topic, records=60)
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "g-defaults", "auto.offset.reset": "earliest"}
    )
    c.subscribe([topic])
    got: list = []
    poll_until([c], lambda: len(got) >= len(produced), timeout=60, messages=got)
    started = time.monotonic()
    c.close()
    assert time.monotonic() - started < 5
    again = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-defaults"})
    try:
        committed = again.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        assert sum(tp.offset for tp in committed) == len(produced)  # auto-commit on close
    finally:
        again.close()


@pytest.mark.spec("REBAL-23", "OFFSET-10")
def test_librdkafka_sees_its_static_members_instance_id_and_keeps_its_leader_epoch(group_broker):
    """librdkafka negotiates DescribeGroups v4+ (instance ids), OffsetCommit v6+ and
    OffsetFetch v5+ (the leader epoch of a commit): what kafka-ref's v2 and v3 lost."""
    bootstrap, topic, group = group_broker.bootstrap, "static-describe", "static-describe"
    make_topic(bootstrap, topic, records=PARTITIONS)
    member = group_consumer(
        bootstrap, group, **{"group.instance.id": "static-1", "enable.auto.commit": False}
    )
    member.subscribe([topic])
    try:
        messages: list = []
        poll_until([member], lambda: len(messages) >= PARTITIONS, messages=messages)
        last = messages[-1]
        member.commit(message=last, asynchronous=False)
        (committed,) = member.committed([TopicPartition(topic, last.partition())], timeout=10)
        assert committed.offset == last.offset() + 1
        assert committed.leader_epoch == last.leader_epoch() >= 0
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert [m.group_instance_id for m in described.members] == ["static-1"]
    finally:
        member.close()

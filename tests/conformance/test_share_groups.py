"""Share groups (KIP-932) as a real client sees them: librdkafka's ShareConsumer.

Members of one share group read the same partitions at once; the broker hands each record to
one member under an acquisition lock and counts its deliveries. These tests judge what a
user of the queue relies on: every record reaches one member, an acknowledgement decides
its fate (ACCEPT done, RELEASE again with a higher delivery count, REJECT never again),
`group.share.delivery.count.limit` ends the retries, and a lock that expires hands the
record to the next member. The group starts reading at the earliest offset
(`share.auto.offset.reset`, a group config set with IncrementalAlterConfigs). Lock times are
the suite's broker configs (`group.share.record.lock.duration.ms`, 2 s).
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from kafka_ref.client.admin import Admin
from kafka_ref.common import TopicPartition

confluent_kafka = pytest.importorskip("confluent_kafka")
admin = pytest.importorskip("confluent_kafka.admin")

ACCEPT, RELEASE, REJECT = 1, 2, 3
DELIVERY_COUNT_LIMIT = 5  # Kafka's default group.share.delivery.count.limit
LOCK_SECONDS = 2.0  # the suite's group.share.record.lock.duration.ms


@pytest.fixture
def share_group(target):
    """A fresh share group that starts at the earliest offset."""
    target.require("share-groups")
    name = target.group_name()
    client = admin.AdminClient({"bootstrap.servers": target.bootstrap})
    resource = admin.ConfigResource(
        admin.ResourceType.GROUP,
        name,
        incremental_configs=[
            admin.ConfigEntry(
                "share.auto.offset.reset",
                "earliest",
                incremental_operation=admin.AlterConfigOpType.SET,
            )
        ],
    )
    client.incremental_alter_configs([resource])[resource].result(30)
    return name


def produce(target, topic: str, count: int, partitions: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0, "undelivered messages"


def member(target, group: str, topic: str, explicit: bool = False):
    consumer = confluent_kafka.ShareConsumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        }
    )
    consumer.subscribe([topic])
    return consumer


def records(consumer, seconds: float = 1.0) -> list:
    """One poll's records (errors fail the test)."""
    found = []
    for message in consumer.poll(seconds):
        assert message.error() is None, message.error()
        found.append(message)
    return found


def poll_until(consumer, done, timeout: float = 60.0, act=None) -> list:
    """Poll until `done(seen)`; `act(message)` acknowledges each in explicit mode."""
    seen: list = []
    deadline = time.monotonic() + timeout
    while not done(seen):
        assert time.monotonic() < deadline, f"after {timeout:g}s only {len(seen)} records"
        for message in records(consumer):
            seen.append(message)
            if act:
                act(message)
        if act and seen:
            consumer.commit_sync(30)
    return seen


@pytest.mark.spec("SHARE-2", "SHARE-90")
def test_every_record_reaches_exactly_one_member(target, share_group, make_topic):
    """Two members, implicit acknowledgement: each of 200 records is delivered once, to one
    of them, with delivery count 1 (no lock expired, nothing released)."""
    topic = make_topic("share-queue")
    produce(target, topic, 200, 2)
    members = [member(target, share_group, topic) for _ in range(2)]
    seen: dict[tuple[int, int], list[tuple[int, int]]] = {}
    deadline = time.monotonic() + 60
    try:
        while len(seen) < 200:
            assert time.monotonic() < deadline, f"only {len(seen)} of 200 records delivered"
            for index, consumer in enumerate(members):
                for m in records(consumer, 0.5):
                    seen.setdefault((m.partition(), m.offset()), []).append(
                        (index, m.delivery_count())
                    )
    finally:
        for consumer in members:
            consumer.close()
    assert sorted(seen) == sorted((p, o) for p in (0, 1) for o in range(100))
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, f"delivered more than once: {dict(list(twice.items())[:5])}"
    assert {count for deliveries in seen.values() for _, count in deliveries} == {1}


@pytest.mark.spec("SHARE-90")
def test_release_delivers_again_and_reject_never(target, share_group, make_topic):
    """Explicit acknowledgement of three records: ACCEPT offset 0, RELEASE offset 1, REJECT
    offset 2. Only offset 1 comes back, with delivery count 2."""
    topic = make_topic("share-ack", partitions=1)
    produce(target, topic, 3, 1)
    consumer = member(target, share_group, topic, explicit=True)
    verdict = {0: ACCEPT, 1: RELEASE, 2: REJECT}
    try:
        first = poll_until(
            consumer,
            lambda seen: len(seen) >= 3,
            act=lambda m: consumer.acknowledge(m, verdict.get(m.offset(), ACCEPT)),
        )
        assert [(m.offset(), m.delivery_count()) for m in first[:3]] == [(0, 1), (1, 1), (2, 1)]
        again = first[3:] or poll_until(
            consumer, lambda seen: len(seen) >= 1, act=lambda m: consumer.acknowledge(m, ACCEPT)
        )
        assert [(m.offset(), m.delivery_count()) for m in again] == [(1, 2)]
        assert records(consumer, LOCK_SECONDS + 1) == [], "a rejected or accepted record came back"
    finally:
        consumer.close()


@pytest.mark.spec("SHARE-5")
def test_the_delivery_count_limit_archives_a_record(target, share_group, make_topic):
    """A record released at every delivery comes back until its delivery count reaches
    group.share.delivery.count.limit (5 by default), then never again."""
    topic = make_topic("share-limit", partitions=1)
    produce(target, topic, 1, 1)
    consumer = member(target, share_group, topic, explicit=True)
    try:
        deliveries = poll_until(
            consumer,
            lambda seen: len(seen) >= DELIVERY_COUNT_LIMIT,
            act=lambda m: consumer.acknowledge(m, RELEASE),
        )
        assert [(m.offset(), m.delivery_count()) for m in deliveries] == [
            (0, n) for n in range(1, DELIVERY_COUNT_LIMIT + 1)
        ]
        assert records(consumer, LOCK_SECONDS + 1) == [], "delivered past the limit"
    finally:
        consumer.close()


@pytest.mark.spec("SHARE-6")
def test_an_expired_lock_hands_the_records_to_another_member(target, share_group, make_topic):
    """A member takes records and goes silent without acknowledging them: once their lock
    expires (group.share.record.lock.duration.ms) another member gets the same offsets,
    each with delivery count 2."""
    topic = make_topic("share-lock", partitions=1)
    produce(target, topic, 20, 1)
    silent = member(target, share_group, topic, explicit=True)
    other = None
    try:
        taken = poll_until(silent, lambda seen: len(seen) > 0)
        offsets = [m.offset() for m in taken]
        other = member(target, share_group, topic, explicit=True)
        rest = poll_until(
            other,
            lambda seen: {m.offset() for m in seen} >= set(range(20)),
            act=lambda m: other.acknowledge(m, ACCEPT),
        )
        counts = Counter()
        for m in rest:
            counts[m.delivery_count()] += 1
            expected = 2 if m.offset() in offsets else 1
            assert m.delivery_count() == expected, (m.offset(), m.delivery_count(), offsets)
        assert counts[2] == len(offsets), counts
    finally:
        silent.close()
        if other is not None:
            other.close()


@pytest.mark.spec("SHARE-91")
def test_members_killed_holding_records_lose_none(target, share_group, make_topic):
    """Three member processes read a topic while a producer writes 3,000 records; every 2 s
    the oldest member is killed with -9 (usually holding records) and a new one starts. The
    records a dead member held come back once their locks expire: none is lost, none is
    accepted twice (kafka_ref/conformance/share_workload.py)."""
    from kafka_ref.conformance.share_workload import check, run_workload

    topic = make_topic("share-kills", partitions=3)
    run = run_workload(
        target.bootstrap, topic, share_group, records=3000, kill_every=2.0, rate=200.0
    )
    verdict = check(run)
    print(f"share-group kills: {verdict}")
    assert verdict["valid"], verdict
    assert verdict["members_killed"] >= 3, verdict
    # The broker's own account: every record is done (acknowledged or archived), so each
    # share-partition's start offset passed the log's end. A broker that never gave back what
    # a killed member held would stop short, however the members' lines read. Kafka 4.4
    # persists the start offset as it stood before the acknowledgement it writes (one write
    # behind), so one more record per partition, accepted by a fresh member, carries the
    # start offset past the run's records on both brokers.
    with Admin(target.bootstrap) as client:
        ends = client.list_offsets({TopicPartition(topic, p): -1 for p in range(3)})
    run_ends = {tp: end for tp, (end, _) in ends.items()}
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap})
    for p in range(3):
        producer.produce(topic, value=b"sentinel", partition=p)
    assert producer.flush(30) == 0, "undelivered sentinels"
    last = member(target, share_group, topic, explicit=True)
    try:
        sentinels = poll_until(
            last,
            lambda seen: sum(m.value() == b"sentinel" for m in seen) == 3,
            act=lambda m: last.acknowledge(m, ACCEPT),
        )
    finally:
        last.close()
    assert all(m.value() == b"sentinel" for m in sentinels), "a run's record came back"
    with Admin(target.bootstrap) as client:
        starts = client.list_share_group_offsets(share_group)
    short = {tp: (starts.get(tp), end) for tp, end in run_ends.items() if starts.get(tp, -1) < end}
    assert not short, f"start offsets short of the run's end (start, end): {short}"

"""Lab 11 grader, end to end: librdkafka's ShareConsumer on a real kafka-ref broker whose
share-partitions run your functions.

One member acknowledges each record as it is told (ACCEPT, REJECT, or RELEASE every
time), and the broker must deliver exactly what the acknowledgements decide: an accepted
or rejected record never again, a released one again with its delivery count one higher
until `group.share.delivery.count.limit` (3 here), then never again. Another member
rejects two records and accepts the rest: once it has nothing left, the group's start
offset, which the admin reads from the share coordinator (DescribeShareGroupOffsets), must
be the log's end. Then two members read one partition at once, each holding what it was
given while the other fetches, under a lock of 15 s: every record must reach exactly one of
them, once.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.client.admin import Admin
from kafka_ref.common import TopicPartition

DELIVERY_COUNT_LIMIT = 3  # the broker's group.share.delivery.count.limit (conftest.py)

ACCEPT, RELEASE, REJECT = 1, 2, 3
RECORDS = 20
NAMES = {ACCEPT: "ACCEPT", RELEASE: "RELEASE", REJECT: "REJECT"}


def share_consumer(bootstrap: str, group: str, topic: str, explicit: bool, max_records=500):
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
            "max.poll.records": max_records,
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    return consumer


@pytest.fixture
def lab_broker(broker):
    """The module's broker, its record of what your code raised in it wiped: a test fails
    for its own errors, not for an earlier test's."""
    broker.errors.clear()
    return broker


def polled(broker, consumer, seconds: float) -> list:
    """One poll's records; what the broker raised running your code fails the test."""
    found = consumer.poll(seconds)
    broker.raise_if_failed()
    for message in found:
        assert message.error() is None, f"the consumer was answered {message.error()}"
    return found


def consume(
    broker, share_topic, verdict: dict[int, int], enough, waiting_for: str, until_quiet: bool
) -> tuple[list, int, int]:
    """One member reads a new topic of 20 records with explicit acknowledgement: it gives
    each offset the verdict `verdict` names (ACCEPT if none) at every delivery and commits
    after each poll, until `enough(deliveries)` (`waiting_for` says what that is), then 2 s
    more (`until_quiet`: until it is given nothing for 1.5 s). Returns
    (the deliveries in order as (offset, delivery count), the group's start offset then,
    the log's end offset)."""
    topic, group = share_topic(RECORDS)
    consumer = share_consumer(broker.bootstrap, group, topic, explicit=True)
    deliveries: list[tuple[int, int]] = []
    try:
        deadline, quiet_until = time.monotonic() + 20, None
        while quiet_until is None or time.monotonic() < quiet_until:
            if time.monotonic() >= deadline:
                what = "was still given records" if enough(deliveries) else "was not given"
                raise AssertionError(
                    f"after 20 s the member {what} {waiting_for}; it was given, as (offset, "
                    f"delivery count): {deliveries[:40]}"
                )
            given = polled(broker, consumer, 0.5)
            for message in given:
                deliveries.append((message.offset(), message.delivery_count()))
                consumer.acknowledge(message, verdict.get(message.offset(), ACCEPT))
            if given:
                consumer.commit_sync(30)
            if enough(deliveries) and (quiet_until is None or (given and until_quiet)):
                quiet_until = time.monotonic() + (1.5 if until_quiet else 2.0)
    finally:
        consumer.close()
    broker.raise_if_failed()
    with Admin(broker.bootstrap) as admin:
        partition = TopicPartition(topic, 0)
        start = admin.list_share_group_offsets(group)[partition]
        end, _ = admin.list_offsets({partition: -1})[partition]
    return deliveries, start, end


def counts_by_offset(deliveries: list[tuple[int, int]]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for offset, count in deliveries:
        found.setdefault(offset, []).append(count)
    return found


def shown(counts: list[int]) -> str:
    return str(counts) if len(counts) <= 8 else f"{counts[:8]}... ({len(counts)} deliveries)"


@pytest.mark.spec("SHARE-90", "SHARE-5")
def test_a_share_consumer_gets_what_its_acknowledgements_decide(lab_broker, share_topic):
    """REJECT offset 3, RELEASE offset 7 at every delivery, ACCEPT the others: every offset
    but 7 once, with delivery count 1; offset 7 with delivery counts 1, 2, 3, then never
    again: archived at the limit."""
    verdict = {3: REJECT, 7: RELEASE}

    def enough(deliveries):
        seen = counts_by_offset(deliveries)
        return len(seen) == RECORDS and len(seen[7]) >= DELIVERY_COUNT_LIMIT

    waiting_for = (
        f"every offset, and offset 7 {DELIVERY_COUNT_LIMIT} times (released at every "
        f"delivery, a record comes back until its last delivery)"
    )
    deliveries, _, _ = consume(
        lab_broker, share_topic, verdict, enough, waiting_for, until_quiet=False
    )
    by_offset = counts_by_offset(deliveries)
    told = ", ".join(f"{NAMES[v]} offset {o}" for o, v in verdict.items())
    story = (
        f"one member read {RECORDS} records ({told} at every delivery, ACCEPT the others; "
        f"group.share.delivery.count.limit {DELIVERY_COUNT_LIMIT})"
    )
    for offset in range(RECORDS):
        counts = by_offset.get(offset, [])
        if offset == 7:
            expected = list(range(1, DELIVERY_COUNT_LIMIT + 1))
            assert counts == expected, (
                f"{story}. Offset 7, released at every delivery, came with delivery counts "
                f"{shown(counts)}, not {expected}: a released record comes back one count "
                f"higher, and at the limit it is archived, never delivered again (SHARE-5)"
            )
        else:
            assert counts == [1], (
                f"{story}. Offset {offset}, given a {NAMES[verdict.get(offset, ACCEPT)]} at "
                f"its first delivery, came with delivery counts {shown(counts)}: an accepted "
                f"or rejected record is done, never delivered again (SHARE-90)"
            )


@pytest.mark.spec("SHARE-7")
def test_the_groups_start_offset_reaches_the_end_of_the_log(lab_broker, share_topic):
    """REJECT offsets 3 and 12, ACCEPT the others: once the member is given nothing more,
    every record is done and the group's start offset (the SPSO, read back from the share
    coordinator) is the log's end."""
    verdict = {3: REJECT, 12: REJECT}
    deliveries, start, end = consume(
        lab_broker,
        share_topic,
        verdict,
        lambda d: len(counts_by_offset(d)) == RECORDS,
        f"every one of the {RECORDS} offsets",
        until_quiet=True,
    )
    assert start == end, (
        f"one member read {RECORDS} records, REJECTed offsets 3 and 12 and ACCEPTed the "
        f"others, and was given nothing more: every record is done (ARCHIVED or ACKNOWLEDGED),"
        f" yet the group's start offset is {start}, not the log's end {end}: the SPSO moves "
        f"over every done record, ARCHIVED ones too (SHARE-7). The member was given, as "
        f"(offset, delivery count): {deliveries[:40]}"
    )


@pytest.mark.spec("SHARE-2", "SHARE-6")
def test_two_members_holding_records_each_get_their_own(lab_broker, share_topic):
    """Two members poll one partition in turn, ten records at a time, with implicit
    acknowledgement (a poll's records are accepted by the member's next poll), so each
    fetches while the other holds records under a 15 s lock: each of 100 records (in
    batches of 10) must reach one member, once, with delivery count 1."""
    topic, group = share_topic(100, batch=10)
    members = [
        share_consumer(lab_broker.bootstrap, group, topic, explicit=False, max_records=10)
        for _ in "ab"
    ]
    seen: dict[int, list[tuple[str, int]]] = {}
    try:
        deadline, rounds_after = time.monotonic() + 30, 2
        while rounds_after:  # until every record is seen, and two rounds more
            assert time.monotonic() < deadline, f"after 30 s only {len(seen)} of 100 records"
            for name, consumer in zip("ab", members, strict=True):
                for message in polled(lab_broker, consumer, 0.5):
                    given = (name, message.delivery_count())
                    seen.setdefault(message.offset(), []).append(given)
            rounds_after -= len(seen) == 100
    finally:
        for consumer in members:
            consumer.close()
    twice = {offset: given for offset, given in sorted(seen.items()) if len(given) > 1}
    assert not twice, (
        f"two members polled in turn, each holding its records under a 15 s lock while the "
        f"other fetched, and these offsets were given twice, as (member, delivery count): "
        f"{dict(list(twice.items())[:5])}: a record is held by one member at a time, and its "
        f"lock holds until its deadline (SHARE-2, SHARE-6)"
    )
    counts = {offset: given[0][1] for offset, given in seen.items() if given[0][1] != 1}
    assert not counts, f"no lock expired, yet these came with delivery counts above 1: {counts}"

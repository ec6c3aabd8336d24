"""A real client's view: confluent-kafka produces and consumes, the history checker judges.

An idempotent confluent-kafka producer sends unique values to three partitions and records
every acknowledged offset; a consumer in a group processes part of them, commits what it
processed, processes a few more and "crashes" (closes without committing); a second
consumer of the group takes over from the committed offsets and reads to the end. The
Jepsen-style checker (kafka_ref.conformance.history) then rebuilds each partition from
everything seen and looks for lost writes, duplicates, inconsistent offsets, skips and
backward polls; with the final read complete, nothing acknowledged may be unseen.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.history import History, check

confluent_kafka = pytest.importorskip("confluent_kafka")

N, PARTITIONS, FIRST_BATCH, UNCOMMITTED = 300, 3, 150, 10


def produce_all(target, topic: str, history: History) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": target.bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )

    def delivered(err, msg) -> None:
        offset = None if err else msg.offset()
        history.send("producer", (topic, msg.partition()), msg.value(), offset)

    for i in range(N):
        producer.produce(topic, key=b"k%d" % (i % 7), value=b"v%d" % i, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(30) == 0, "undelivered messages"


def consumer(target, group: str):
    return confluent_kafka.Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )


def poll_into(c, history: History, name: str, topic: str, stop, timeout: float = 30.0) -> list:
    got = []
    deadline = time.monotonic() + timeout
    while not stop(got) and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None or msg.error():
            continue
        got.append(msg)
        history.poll(name, {(topic, msg.partition()): [(msg.offset(), msg.value())]})
    return got


@pytest.mark.spec("DELIV-2", "BROKER-43", "LOG-4", "IDEM-2", "HIST-3")
def test_commit_after_processing_loses_nothing_and_the_history_is_clean(target, wire):
    target.require("groups", "idempotence", "create-topics")
    topic, group = target.topic_name("deliv"), target.group_name("deliv")
    assert wire.create_topic(topic, PARTITIONS) == 0
    history = History()
    produce_all(target, topic, history)

    first = consumer(target, group)
    first.subscribe([topic])
    done = poll_into(first, history, "c1", topic, lambda g: len(g) >= FIRST_BATCH)
    assert len(done) >= FIRST_BATCH, f"the first consumer read only {len(done)}"
    first.commit(asynchronous=False)  # commit after processing: offsets of what was read
    # "crash": process a few more, never commit them
    poll_into(first, history, "c1", topic, lambda g: len(g) >= UNCOMMITTED, timeout=10)
    first.close()

    second = consumer(target, group)
    second.subscribe([topic])
    read, everything = {m.value() for m in done}, {b"v%d" % i for i in range(N)}
    poll_into(second, history, "c2", topic, lambda g: read | {m.value() for m in g} >= everything)
    second.close()

    result = check(history)
    assert result.valid, str(result)
    # DELIV-2: with commit-after-processing, every record is processed at least once
    assert result.unseen == {}, f"acknowledged but never read: {result.unseen}"

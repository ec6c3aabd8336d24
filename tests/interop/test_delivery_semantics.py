"""At-most-once and at-least-once, shown by crashing a consumer at the worst moment.

A consumer process (librdkafka) reads a topic in a group, "processes" each record by
appending its value to a file, and commits the record's offset by hand, one record at a
time. The order of those two steps is the delivery guarantee (DELIV-1, DELIV-2):

- at-most-once commits first, then processes: a crash between the two loses the record;
- at-least-once processes first, then commits: a crash between the two processes the
  record again after the restart.

The process kills itself (`os._exit`, no close, no LeaveGroup) between the two steps of one
chosen record, and a second process in the same group finishes the topic. The file then
shows the gap or the duplicate. Exactly-once needs transactions (the offsets committed in
the same transaction as the output), which kafka-ref does not have yet.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.conftest import SESSION_TIMEOUT_MS

pytestmark = pytest.mark.timeout(180)

RECORDS = 50
CRASH_AT = 20  # the record during which the first process dies

WORKER = textwrap.dedent(
    """
    import os, sys
    from confluent_kafka import Consumer, TopicPartition
    bootstrap, group, topic, mode, out, crash_at, total, session = sys.argv[1:9]
    crash_at, total = int(crash_at), int(total)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": int(session), "heartbeat.interval.ms": 300})
    c.subscribe([topic])
    with open(out, "a") as sink:
        while True:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise SystemExit(str(m.error()))
            value = int(m.value())
            commit = [TopicPartition(m.topic(), m.partition(), m.offset() + 1)]
            if mode == "at-most-once":
                c.commit(offsets=commit, asynchronous=False)
                if value == crash_at:
                    os._exit(3)  # committed, never processed
            sink.write(f"{value}\\n")
            sink.flush()
            os.fsync(sink.fileno())
            if mode == "at-least-once":
                if value == crash_at:
                    os._exit(3)  # processed, never committed
                c.commit(offsets=commit, asynchronous=False)
            if value == total - 1:
                break
    c.close()
    """
)


def run_worker(bootstrap, group, topic, mode, out, crash_at) -> int:
    args = [
        bootstrap,
        group,
        topic,
        mode,
        str(out),
        str(crash_at),
        str(RECORDS),
        str(SESSION_TIMEOUT_MS),
    ]
    proc = subprocess.run([sys.executable, "-c", WORKER, *args], timeout=120)
    return proc.returncode


def produce_numbers(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, value=str(i).encode())
    assert producer.flush(30) == 0


def processed_after_crash_and_restart(broker, mode: str, tmp_path) -> list[int]:
    topic = group = f"delivery-{mode}"
    produce_numbers(broker.bootstrap, topic)
    out = tmp_path / f"{mode}.txt"
    assert run_worker(broker.bootstrap, group, topic, mode, out, CRASH_AT) == 3
    assert run_worker(broker.bootstrap, group, topic, mode, out, -1) == 0
    return [int(line) for line in out.read_text().split()]


@pytest.mark.spec("DELIV-1")
def test_at_most_once_loses_the_record_in_flight_and_never_repeats(group_broker, tmp_path):
    processed = processed_after_crash_and_restart(group_broker, "at-most-once", tmp_path)
    assert processed == [i for i in range(RECORDS) if i != CRASH_AT]


@pytest.mark.spec("DELIV-2")
def test_at_least_once_repeats_the_record_in_flight_and_never_loses(group_broker, tmp_path):
    processed = processed_after_crash_and_restart(group_broker, "at-least-once", tmp_path)
    assert processed == [*range(CRASH_AT + 1), *range(CRASH_AT, RECORDS)]

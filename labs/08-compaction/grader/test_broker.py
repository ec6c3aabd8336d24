"""Lab 08 grader, end to end: a compacted topic on a real broker.

Our producer writes ten keys twenty times each, then tombstones for two of them, to a topic
with `cleanup.policy=compact`, 2 KB segments, `min.cleanable.dirty.ratio` 0.01 and
`delete.retention.ms` 1000. It keeps writing one more key, so that segments roll and the
broker's cleaner (every 100 ms) has dirty data to clean. Then our consumer reads the topic
from its start, as any consumer would (COMPACT-11).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.client import Consumer
from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.record.batch import RecordBatch

TOPIC = "lab08-compacted"
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "2048",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
}
KEYS = [b"user-%d" % i for i in range(10)]
DELETED = KEYS[8:]
ROUNDS = 20


def ordered(pairs) -> list[tuple[bytes, bytes | None]]:
    """(key, value) pairs in a fixed order; a tombstone's None sorts first."""
    return sorted(pairs, key=lambda kv: (kv[0], kv[1] is not None, kv[1] or b""))


def log_contents(broker) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record in the broker's log, in offset order."""
    log = broker.broker.log_manager.get_log(TOPIC, 0)

    def read():
        out, offset = [], log.log_start_offset
        while offset < log.log_end_offset:
            info = log.read(offset, 1 << 20)
            data, position = info.read_bytes(), 0
            while position < len(data):
                batch = RecordBatch(data[position:])
                out += [(r.key, r.value) for r in batch.records()]
                position += batch.header.size
            offset = info.next_offset
        return out

    return broker.call(read)


def read_from_start(bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([(TOPIC, 0)])
        end = consumer.end_offsets([(TOPIC, 0)])
        end_offset = next(iter(end.values()))
        records, deadline = [], time.monotonic() + 30
        while time.monotonic() < deadline:
            records += consumer.poll(0.5)
            if records and records[-1].offset >= end_offset - 1:
                break
        return [(r.key, r.value) for r in records]
    finally:
        consumer.close()


@pytest.mark.spec("COMPACT-11", "COMPACT-1", "COMPACT-6")
def test_a_compacted_topic_keeps_each_keys_latest_value_and_forgets_deleted_keys(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1, CONFIGS)])
    expected = {key: b"%s=%d" % (key, ROUNDS - 1) for key in KEYS if key not in DELETED}
    # batch.size below segment.bytes: a batch larger than a segment is refused
    with Producer(broker.bootstrap, linger_ms=0, batch_size=1024) as producer:
        sent = [
            producer.send(TOPIC, b"%s=%d" % (key, n), key=key)
            for n in range(ROUNDS)
            for key in KEYS
        ]
        sent += [producer.send(TOPIC, None, key=key) for key in DELETED]
        for future in sent:
            future.result(30)
        deadline, seen = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            for _ in range(20):  # more dirty data, and segments that roll
                producer.send(TOPIC, b"x" * 40, key=b"filler")
            producer.flush()
            time.sleep(0.3)
            broker.raise_if_failed()  # the cleaner ran your rules and they raised
            seen = [(k, v) for k, v in log_contents(broker) if k != b"filler"]
            if ordered(seen) == ordered(expected.items()):
                break
    assert ordered(seen) == ordered(expected.items()), (
        f"after compaction the log should hold each live key once with its latest value, "
        f"and no deleted key; it holds {len(seen)} records: {seen[:12]}"
    )
    read = [(k, v) for k, v in read_from_start(broker.bootstrap) if k != b"filler"]
    assert ordered(read) == ordered(expected.items()), "what a consumer reads from the start"

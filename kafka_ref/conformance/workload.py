"""The fault campaign's workload: a producer, a consumer group, a final read, one history.

Jepsen's queue workload (jepsen `tests/kafka.clj`) sends unique values and records what
every client was told. This one is the workload that found a liveness bug in kafka-ref:

* one librdkafka producer (confluent-kafka: `enable.idempotence=true`, `acks=all`,
  `linger.ms=5`, `message.timeout.ms=300000`) sends 0, 1, 2, ... at a steady rate (2,000 a
  second by default), value i to partition i mod P. Each delivery report goes into the
  `History`: acknowledged at an offset, or of unknown outcome (an error: with idempotence
  the record may or may not be in the log). The time of every acknowledgement is kept for
  the liveness check;
* a consumer group of two confluent-kafka consumers (subscribe, read_uncommitted, manual
  asynchronous commits after each poll) records every poll, and every new assignment (a
  rebalance restarts the order a consumer reads in, HIST-4). A value polled twice by the
  group is a *re-delivery*: allowed (at-least-once), and counted;
* at the end, a final read: a fresh consumer assigned every partition from offset 0 reads
  up to each high watermark. Without it an acknowledged value nobody read could be a lost
  write or a consumer that lagged (Jepsen's "unseen").

The checker (history.py) then finds lost, duplicated and reordered writes.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from kafka_ref.conformance.history import FAILED, History

PRODUCER_CONFIG = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "message.timeout.ms": 300000,
    "log_level": 3,
}


class ProducerWorkload:
    """Sends numbered values at `rate` a second until `stop`; records them in `history`."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        rate: float,
        history: History,
        now: Callable[[], float],
    ) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.history, self.now = history, now
        self.acks: list[float] = []  # times of acknowledgements, in order
        self.sent = self.unknown = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self.fatal: list[str] = []  # the producer's fatal errors, with their times
        self.answered = 0  # delivery reports received
        self.unanswered = 0  # sends with no delivery report when the workload stopped
        self.first_send: float | None = None
        self.stop = threading.Event()
        self.process = "producer-1"
        self.thread = threading.Thread(target=self._run, name="producer", daemon=True)

    def start(self) -> ProducerWorkload:
        self.thread.start()
        return self

    def close(self, flush_s: float) -> None:
        self.flush_s = flush_s
        self.stop.set()
        self.thread.join(flush_s + 30)

    def _on_delivery(self, err, msg) -> None:
        value, key = int(msg.value()), msg.partition()
        self.answered += 1
        if err is None:
            self.acks.append(self.now())
            self.history.send(self.process, key, value, offset=msg.offset())
        else:
            self.unknown += 1
            self.errors[err.name()] += 1
            status = FAILED if err.code() == KafkaError.MSG_SIZE_TOO_LARGE else None
            self.history.send(self.process, key, value, offset=None, status=status)

    def _new_producer(self, old: Producer | None) -> Producer:
        """After a fatal error (an idempotent producer's sequence no longer matches the
        broker's log) librdkafka gives up: what it still held is reported as failed (here:
        unknown) and a new producer, a new process of the history, takes over."""
        if old is not None:
            with contextlib.suppress(KafkaException):
                old.purge()
            with contextlib.suppress(KafkaException):
                old.flush(10)
            self.process = f"producer-{int(self.process.split('-')[1]) + 1}"
        return Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_CONFIG})

    def _run(self) -> None:
        producer = self._new_producer(None)
        self.first_send = self.now()
        next_at, i = time.monotonic(), 0
        while not self.stop.is_set():
            now = time.monotonic()
            next_at = max(next_at, now - 1.0)  # after a stall, no burst to catch up
            try:
                while next_at <= now:
                    try:
                        producer.produce(
                            self.topic,
                            b"%d" % i,
                            partition=i % self.partitions,
                            on_delivery=self._on_delivery,
                        )
                    except BufferError:  # librdkafka's queue is full: the cluster lags behind
                        break
                    i, self.sent, next_at = i + 1, self.sent + 1, next_at + 1 / self.rate
                producer.poll(0.005)
            except KafkaException as err:
                if not err.args[0].fatal():
                    raise
                self.fatal.append(f"{self.now():.1f}s {err.args[0].str()}")
                producer = self._new_producer(producer)
        producer.flush(self.flush_s)
        self.unanswered = self.sent - self.answered


class GroupConsumer:
    """One member of the workload's consumer group, recording polls and assignments."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str, history: History) -> None:
        self.name, self.history, self.topic = name, history, topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_uncommitted",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
                "log_level": 3,
            }
        )
        self.rebalances = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> GroupConsumer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)

    def _assigned(self, _consumer, partitions) -> None:
        self.rebalances += 1
        self.history.assign(self.name, [tp.partition for tp in partitions])

    def _revoked(self, _consumer, _partitions) -> None:
        self.history.assign(self.name, [])

    def _run(self) -> None:
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked)
        while not self.stop.is_set():
            reads: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
            for msg in self.consumer.consume(500, 0.2):
                if msg.error() is None:
                    reads[msg.partition()].append((msg.offset(), int(msg.value())))
            if reads:
                self.history.poll(self.name, reads)
                # no offsets to commit, or no coordinator right now: the next poll commits
                with contextlib.suppress(KafkaException):
                    self.consumer.commit(asynchronous=True)
        self.consumer.close()


def final_read(
    bootstrap: str, topic: str, partitions: int, history: History, timeout: float = 180.0
) -> tuple[dict[int, int], bool]:
    """Read every partition from offset 0 to its high watermark as process "final";
    returns (partition -> high watermark, whether every end was reached in `timeout`)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-final-read",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    deadline = time.monotonic() + timeout
    try:
        ends = {}
        for p in range(partitions):
            end = _high_watermark(consumer, TopicPartition(topic, p), deadline)
            if end is None:  # no leader with a caught-up HW: the cluster never healed
                return ends, False
            ends[p] = end
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        history.assign("final", range(partitions))
        position = {p: 0 for p in range(partitions)}
        while any(position[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                return ends, False
            reads: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    reads[msg.partition()].append((msg.offset(), int(msg.value())))
                    position[msg.partition()] = msg.offset() + 1
            if reads:
                history.poll("final", reads)
        return ends, True
    finally:
        consumer.close()


def _high_watermark(consumer: Consumer, tp: TopicPartition, deadline: float) -> int | None:
    """The partition's high watermark, asked until `deadline`: a leader just elected answers
    OFFSET_NOT_AVAILABLE until its HW has caught up (KIP-207), which a healed cluster soon
    does and a broken one never does."""
    while True:
        try:
            return consumer.get_watermark_offsets(tp, 10)[1]
        except KafkaException:
            if time.monotonic() > deadline:
                return None
            time.sleep(1.0)

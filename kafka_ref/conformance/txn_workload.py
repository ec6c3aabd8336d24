"""A transactional workload: many transactions from one client library, read back by
read_committed consumers of another, recorded as one history.

Jepsen's Kafka workload (`jepsen.tests.kafka`, with `--txn`) sends unique values inside
transactions and records, besides every send, how each transaction ended. This one does
the same with the two client libraries kafka-ref is tested with:

* a transactional producer (confluent-kafka, i.e. librdkafka, or kafka-python) runs
  `count` transactions; transaction i writes 1 to 4 values `<tag>-<i>-<j>` to the
  partitions j mod P and then commits, or (about one in three, from a seeded random
  generator) aborts. Each acknowledged value goes into the `History` with its offset and
  its transaction; each transaction's end with its outcome: committed, aborted, or
  unknown when commit raised (it may or may not have committed);
* a read_committed consumer of the *other* library, assigned every partition from offset
  0, records each poll until it has read every committed value (or a deadline passes),
  and then polls a little longer, so that a record it must not read (an aborted one) has
  the chance to show up.

The history checker (history.py) then looks for aborted reads, torn transactions, lost
committed writes, duplicates and reordering (HIST-1..HIST-6, HIST-16..HIST-19).

`ring` is the consume-transform-produce form (Jepsen's transactions that both poll and
send): two confluent-kafka workers, each a read_committed consumer of the other's
partition and a transactional producer to its own; every transaction polls inside itself,
then writes, then commits or aborts. Each poll is recorded with its transaction, so the
checker sees who read whose writes and can look for G1c cycles (HIST-19).
"""

from __future__ import annotations

import collections
import random
import threading
import time
import uuid

from kafka_ref.conformance.history import ABORTED, COMMITTED, UNKNOWN, History

LIBRARIES = ("confluent-kafka", "kafka-python")


def plan(count: int, partitions: int, seed: int, tag: str) -> list[tuple[str, list, bool]]:
    """(transaction id, [(partition, value)], commit?) for each transaction, seeded."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        values = [(j % partitions, f"{tag}-{i}-{j}") for j in range(rng.randint(1, 4))]
        out.append((f"{tag}-T{i}", values, rng.random() >= 1 / 3))
    return out


def produce(library: str, bootstrap: str, topic: str, transactions: list, history: History) -> None:
    """Run `transactions` (from `plan`) with one transactional producer of `library`."""
    tid = f"workload-{uuid.uuid4().hex[:8]}"
    run = _produce_confluent if library == "confluent-kafka" else _produce_kafka_python
    run(bootstrap, topic, tid, transactions, history)


def _produce_confluent(bootstrap, topic, tid, transactions, history) -> None:
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 1, "log_level": 3}
    )
    producer.init_transactions(30)
    for txn, values, commit in transactions:
        acked: dict[str, tuple[int, int | None]] = {}

        def delivered(err, msg, acked=acked) -> None:
            offset = msg.offset() if err is None else None
            acked[msg.value().decode()] = (msg.partition(), offset)

        producer.begin_transaction()
        for partition, value in values:
            producer.produce(topic, value.encode(), partition=partition, on_delivery=delivered)
        producer.flush(30)
        outcome = _end(
            producer.commit_transaction if commit else producer.abort_transaction,
            commit,
            KafkaException,
        )
        _record(history, tid, txn, values, acked, outcome)
    producer.flush(30)


def _produce_kafka_python(bootstrap, topic, tid, transactions, history) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, linger_ms=1)
    producer.init_transactions()
    try:
        for txn, values, commit in transactions:
            producer.begin_transaction()
            futures = {
                value: producer.send(topic, value.encode(), partition=partition)
                for partition, value in values
            }
            producer.flush(30)
            outcome = _end(
                producer.commit_transaction if commit else producer.abort_transaction,
                commit,
                KafkaError,
            )
            acked = {}
            for value, future in futures.items():
                meta = future.value if future.succeeded() else None
                acked[value] = (meta.partition, meta.offset) if meta else (None, None)
            _record(history, tid, txn, values, acked, outcome)
    finally:
        producer.close(10)


def _end(finish, commit: bool, error: type[Exception]) -> str:
    """Commit or abort; an error leaves the outcome unknown (the decision may be logged)."""
    try:
        finish()
    except error:
        return UNKNOWN
    return COMMITTED if commit else ABORTED


def _record(history: History, process, txn, values, acked, outcome: str) -> None:
    for partition, value in values:
        offset = acked.get(value, (None, None))[1]
        history.send(process, partition, value, offset=offset, txn=txn)
    history.end_txn(process, txn, outcome)


def read_committed(
    library: str,
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: set[str],
    history: History,
    timeout: float = 60.0,
    linger: float = 1.0,
) -> set[str]:
    """Poll every partition from offset 0 with a read_committed consumer of `library` until
    `expected` (the committed values) has been read or `timeout` passed, then `linger`
    seconds more; every poll goes into `history`. Returns the values read."""
    reader = f"{library}-reader"
    poll = _confluent_poller if library == "confluent-kafka" else _kafka_python_poller
    poller, close = poll(bootstrap, topic, range(partitions))
    history.assign(reader, range(partitions))
    seen: set[str] = set()
    deadline, end = time.monotonic() + timeout, None
    try:
        while end is None or time.monotonic() < end:
            reads = poller()
            if reads:
                history.poll(reader, reads, read_committed=True)
                seen.update(v for pairs in reads.values() for _, v in pairs)
            if end is None and (expected <= seen or time.monotonic() > deadline):
                end = time.monotonic() + linger
    finally:
        close()
    return seen


def _confluent_poller(bootstrap, topic, partitions) -> tuple:
    """(poll() -> partition -> [(offset, value)], close) for a read_committed consumer
    assigned `partitions` from offset 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "log_level": 3,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])

    def poll() -> dict[int, list]:
        reads = collections.defaultdict(list)
        for msg in consumer.consume(500, 0.2):
            if msg.error() is None:
                reads[msg.partition()].append((msg.offset(), msg.value().decode()))
        return reads

    return poll, consumer.close


def _kafka_python_poller(bootstrap, topic, partitions):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)

    def poll() -> dict[int, list]:
        reads = collections.defaultdict(list)
        for tp, records in consumer.poll(timeout_ms=200, max_records=500).items():
            reads[tp.partition] += [(r.offset, r.value.decode()) for r in records]
        return reads

    return poll, consumer.close


def ring(bootstrap: str, topic: str, count: int, history: History, seed: int) -> None:
    """Two workers on partitions 0 and 1 of `topic`, each running `count` transactions
    that poll the other's partition (read_committed) and write to their own."""
    workers = [
        threading.Thread(
            target=_ring_worker,
            name=f"ring-{own}",
            args=(bootstrap, topic, own, count, history, seed + own),
        )
        for own in (0, 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)


def _ring_worker(bootstrap, topic, own, count, history, seed) -> None:
    from confluent_kafka import KafkaException, Producer

    rng, process = random.Random(seed), f"ring-{own}"
    poll, close = _confluent_poller(bootstrap, topic, [1 - own])
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 1,
            "log_level": 3,
            "transactional.id": f"ring-{own}-{uuid.uuid4().hex[:6]}",
        }
    )
    producer.init_transactions(30)
    try:
        for i in range(count):
            txn, commit = f"ring{own}-T{i}", rng.random() >= 1 / 4
            acked: dict[str, tuple[int, int | None]] = {}

            def delivered(err, msg, acked=acked) -> None:
                acked[msg.value().decode()] = (msg.partition(), None if err else msg.offset())

            producer.begin_transaction()
            reads = poll()
            if reads:
                history.poll(process, reads, read_committed=True, txn=txn)
            values = [(own, f"ring{own}-{i}-{j}") for j in range(rng.randint(1, 2))]
            for _, value in values:
                producer.produce(topic, value.encode(), partition=own, on_delivery=delivered)
            producer.flush(30)
            finish = producer.commit_transaction if commit else producer.abort_transaction
            _record(history, process, txn, values, acked, _end(finish, commit, KafkaException))
    finally:
        close()

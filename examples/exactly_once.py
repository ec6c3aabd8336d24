"""Exactly once, end to end: consume, transform, produce, all in one transaction.

    make run                                   # a broker on 127.0.0.1:9092 (another shell)
    .venv/bin/python examples/exactly_once.py --input words --output WORDS --client ours
    .venv/bin/python examples/exactly_once.py --input words --output WORDS --client confluent

Each loop reads a few records of `--input` (read_committed), writes each one's
transformation (its value in upper case, same key, same partition number) to `--output`,
and commits the input offsets of the consumer group `--group` *inside the same transaction*
(`send_offsets_to_transaction`). The output and the input position therefore commit
together, or not at all:

* killed (even with SIGKILL) in the middle of a transaction, the records it wrote are
  never seen by a read_committed reader: the restarted process's `init_transactions`, with
  the same `--transactional-id`, fences the dead one and aborts its transaction;
* the restarted process resumes from the group's committed offsets, which are those of the
  last committed transaction: every input record is transformed again exactly when its
  earlier transformation was aborted.

The process stops when it has caught up with the end of every input partition. The two
clients do the same thing: `ours` is kafka-ref's client, `confluent` is confluent-kafka
(librdkafka). Spec rule: TXN-47 (spec/transactions.md).
"""

from __future__ import annotations

import argparse
import sys


def transform(value: bytes) -> bytes:
    return value.upper()


def run_ours(args: argparse.Namespace) -> None:
    from kafka_ref.client import Admin, Consumer, Producer, TopicPartition

    with Admin(args.bootstrap_server) as admin:
        count = len(admin.describe_topics([args.input])[0].partitions)
    partitions = [TopicPartition(args.input, p) for p in range(count)]
    producer = Producer(args.bootstrap_server, transactional_id=args.transactional_id)
    producer.init_transactions()  # fences an older instance and aborts what it left open
    consumer = Consumer(args.bootstrap_server, group_id=args.group,
                        isolation_level="read_committed", auto_offset_reset="earliest",
                        enable_auto_commit=False,
                        max_poll_records=args.records_per_transaction)  # fmt: skip
    consumer.assign(partitions)  # positions start at the group's committed offsets
    print("ready", flush=True)
    while True:
        records = consumer.poll(0.5)
        if not records:
            ends = consumer.end_offsets(partitions)
            if all(consumer.position(tp) >= ends[tp] for tp in partitions):
                break
            continue
        producer.begin_transaction()
        offsets = {}
        for r in records:
            producer.send(args.output, transform(r.value), key=r.key, partition=r.partition)
            offsets[TopicPartition(r.topic, r.partition)] = r.offset + 1
        producer.send_offsets_to_transaction(offsets, args.group)
        producer.commit_transaction()
    consumer.close()
    producer.close()


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = {"bootstrap.servers": args.bootstrap_server}
    producer = Producer({**bootstrap, "transactional.id": args.transactional_id})
    producer.init_transactions(30)
    consumer = Consumer({
        **bootstrap, "group.id": args.group, "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
    })  # fmt: skip
    count = len(consumer.list_topics(args.input, 30).topics[args.input].partitions)
    partitions = [TopicPartition(args.input, p) for p in range(count)]
    consumer.assign(partitions)  # positions start at the group's committed offsets
    print("ready", flush=True)
    while True:
        messages = consumer.consume(args.records_per_transaction, 0.5)
        if not messages:
            # librdkafka knows no position for a partition it has not read from yet: the
            # group's committed offsets say how far the input is done
            done = consumer.committed(partitions, 10)
            marks = [consumer.get_watermark_offsets(tp, 10) for tp in partitions]
            if all(low == high or tp.offset >= high
                   for tp, (low, high) in zip(done, marks, strict=True)):  # fmt: skip
                break
            continue
        producer.begin_transaction()
        offsets = {}
        for m in messages:
            assert m.error() is None, m.error()
            producer.produce(args.output, transform(m.value()), key=m.key(),
                             partition=m.partition())  # fmt: skip
            offsets[m.partition()] = m.offset() + 1
        committed = [TopicPartition(args.input, p, o) for p, o in offsets.items()]
        producer.send_offsets_to_transaction(committed, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
    consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--input", required=True, help="the topic to read")
    parser.add_argument("--output", required=True, help="the topic to write")
    parser.add_argument("--group", default="exactly-once", help="the consumer group")
    parser.add_argument("--transactional-id", default="exactly-once-1")
    parser.add_argument("--client", choices=["ours", "confluent"], default="ours")
    parser.add_argument("--records-per-transaction", type=int, default=50)
    args = parser.parse_args(argv)
    (run_ours if args.client == "ours" else run_confluent)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

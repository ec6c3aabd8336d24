"""Print the records of a topic, like Kafka's kafka-console-consumer.sh.

    kafka-ref consume --bootstrap-server 127.0.0.1:9092 --topic clicks --from-beginning
    kafka-ref consume --bootstrap-server 127.0.0.1:9092 --topic clicks --partition 0 \\
        --offset 42 --max-messages 10 --property print.key=true --property print.offset=true

Without `--partition` every partition of the topic is read, assigned directly. With
`--group G` the consumer joins group G instead: it shares the partitions with the group's
other members, starts where the group committed (else per `--from-beginning`), and commits
what it printed when it stops, so the next run with the same group continues there
(kafka-console-consumer.sh does the same; `--group` excludes `--partition` and `--offset`).
Where to start otherwise: `--from-beginning`, `--offset` (`earliest`, `latest` or a number;
needs `--partition`), else the end of each partition, like Kafka.

Each record is one line in the format of Kafka's `DefaultMessageFormatter`:

    CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:42<TAB>user-1<TAB>home

with each part switched on by `print.timestamp`, `print.partition`, `print.offset`,
`print.headers`, `print.key` and `print.value` (only the value by default), separated by
`key.separator` (a tab) and ended by `line.separator` (a newline); a null key or value
prints as `null`. The consumer stops after `--max-messages` records, or when no record
arrived for `--timeout-ms`, and then reports `Processed a total of N messages` on stderr.

Spec rules: CLIENT-19 (spec/client.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from kafka_ref.cli import UsageError
from kafka_ref.client.consumer import Consumer
from kafka_ref.client.consumer_fetch import ConsumerRecord
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.record.batch import TimestampType
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.console_producer import check_required, parse_properties

PROPERTIES = {
    "print.timestamp": "false",
    "print.partition": "false",
    "print.offset": "false",
    "print.headers": "false",
    "print.key": "false",
    "print.value": "true",
    "key.separator": "\t",
    "line.separator": "\n",
    "headers.separator": ",",
    "null.literal": "null",
}
_FLAGS = ("timestamp", "partition", "offset", "headers", "key", "value")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="required")
    add_command_config(parser, "--consumer.config")
    parser.add_argument("--topic", metavar="TOPIC", help="required")
    parser.add_argument("--from-beginning", action="store_true", help="start at the earliest")
    parser.add_argument("--group", metavar="GROUP", help="join this consumer group")
    parser.add_argument("--partition", type=int, metavar="P", help="read only this partition")
    parser.add_argument("--offset", metavar="O", help="earliest, latest or an offset (--partition)")
    parser.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    parser.add_argument(
        "--timeout-ms", type=int, metavar="MS", help="stop when no record came for this long"
    )
    parser.add_argument(
        "--property",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="print.key, print.offset, print.timestamp, print.partition, key.separator, ...",
    )
    parser.add_argument(
        "--isolation-level",
        default="read_uncommitted",
        choices=["read_uncommitted", "read_committed"],
    )


class Formatter:
    """Kafka's DefaultMessageFormatter: the parts of a record a user asked for, as bytes."""

    def __init__(self, properties: dict[str, str]) -> None:
        self.show = {}
        for flag in _FLAGS:
            value = properties[f"print.{flag}"].strip().lower()
            if value not in ("true", "false"):
                raise UsageError(f"property print.{flag} must be true or false, not {value!r}")
            self.show[flag] = value == "true"
        self.separator = properties["key.separator"].encode()
        self.line_end = properties["line.separator"].encode()
        self.headers_separator = properties["headers.separator"].encode()
        self.null = properties["null.literal"].encode()

    def format(self, record: ConsumerRecord) -> bytes:
        parts = []
        if self.show["timestamp"]:
            kind = (
                "CreateTime"
                if record.timestamp_type == TimestampType.CREATE_TIME
                else "LogAppendTime"
            )
            parts.append(f"{kind}:{record.timestamp}".encode())
        if self.show["partition"]:
            parts.append(f"Partition:{record.partition}".encode())
        if self.show["offset"]:
            parts.append(f"Offset:{record.offset}".encode())
        if self.show["headers"]:
            parts.append(
                self.headers_separator.join(
                    k.encode() + b":" + (self.null if v is None else v) for k, v in record.headers
                )
                or b"NO_HEADERS"
            )
        if self.show["key"]:
            parts.append(self.null if record.key is None else record.key)
        if self.show["value"]:
            parts.append(self.null if record.value is None else record.value)
        return self.separator.join(parts) + self.line_end


def _start(consumer: Consumer, args: argparse.Namespace, partitions: list[TopicPartition]) -> None:
    if args.offset is None:
        if args.from_beginning:
            consumer.seek_to_beginning(partitions)
        else:
            consumer.seek_to_end(partitions)
    elif args.offset == "earliest":
        consumer.seek_to_beginning(partitions)
    elif args.offset == "latest":
        consumer.seek_to_end(partitions)
    else:
        consumer.seek(partitions[0], int(args.offset))


def _validate(args: argparse.Namespace) -> None:
    check_required(args)
    if args.group is not None:
        if args.partition is not None or args.offset is not None:
            raise UsageError("Options group and partition/offset cannot be specified together.")
        if not args.group:
            raise UsageError("--group must not be empty")
    if args.offset is not None:
        if args.partition is None:
            raise UsageError("The partition is required when offset is specified.")
        if args.from_beginning:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
        if args.offset not in ("earliest", "latest") and not (
            args.offset.isdigit() and int(args.offset) >= 0
        ):
            raise UsageError(f"--offset must be earliest, latest or an offset, not {args.offset!r}")
    for name in ("partition", "max_messages", "timeout_ms"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "partition" else 1):
            raise UsageError(f"--{name.replace('_', '-')} is out of range: {value}")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    formatter = Formatter(parse_properties(args.property, PROPERTIES))
    out = sys.stdout.buffer
    if args.group is not None:
        return _run_in_group(args, formatter, out)
    consumer = Consumer(
        args.bootstrap_server,
        isolation_level=args.isolation_level,
        security=command_security(args),
    )

    def consume() -> int | None:
        known = _await_partitions(consumer, args.topic, args.timeout_ms)
        if args.partition is not None and args.partition not in known:
            print(
                f"kafka-ref consume: topic {args.topic} has no partition {args.partition}",
                file=sys.stderr,
            )
            return None
        partitions = [
            TopicPartition(args.topic, p)
            for p in ([args.partition] if args.partition is not None else known)
        ]
        consumer.assign(partitions)
        _start(consumer, args, partitions)
        return _print_records(consumer, args, formatter, out, {})

    return _run_and_close(consumer, consume)


def _run_in_group(args: argparse.Namespace, formatter: Formatter, out) -> int:
    """Consume as a member of `--group`; commit exactly what was printed, on close."""
    consumer = Consumer(
        args.bootstrap_server,
        group_id=args.group,
        isolation_level=args.isolation_level,
        security=command_security(args),
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        enable_auto_commit=False,  # a manual commit of what was printed, not of what was read
    )

    def consume() -> int:
        printed: dict = {}
        consumer.subscribe([args.topic])
        count = _print_records(consumer, args, formatter, out, printed)
        # past the last printed record of each partition the member still owns: records
        # fetched but cut off by --max-messages are not committed
        owned = consumer.assignment()
        consumer.commit({tp: offset for tp, offset in printed.items() if tp in owned})
        return count

    return _run_and_close(consumer, consume)


def _run_and_close(consumer: Consumer, consume: Callable[[], int | None]) -> int:
    """Run `consume` (how many records it printed, None when it failed and said why), close
    the consumer whatever happens; the exit code."""
    try:
        count = consume()
    except KafkaError as err:
        print(f"kafka-ref consume: {err}", file=sys.stderr)
        return 1
    finally:
        consumer.close()
    if count is None:
        return 1
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def _print_records(
    consumer: Consumer,
    args: argparse.Namespace,
    formatter: Formatter,
    out,
    printed: dict[TopicPartition, int],
) -> int:
    """Poll and print until --max-messages, or until nothing came for --timeout-ms; `printed`
    gets, per partition, the offset after the last record printed."""
    count = 0
    last_record = time.monotonic()
    while args.max_messages is None or count < args.max_messages:
        records = consumer.poll(0.5)
        if records:
            last_record = time.monotonic()
        elif args.timeout_ms and (time.monotonic() - last_record) * 1000 >= args.timeout_ms:
            break
        if args.max_messages is not None:
            records = records[: args.max_messages - count]
        for record in records:
            out.write(formatter.format(record))
            printed[TopicPartition(record.topic, record.partition)] = record.offset + 1
            count += 1
        out.flush()
    return count


def _await_partitions(consumer: Consumer, topic: str, timeout_ms: int | None) -> list[int]:
    """The topic's partitions; a topic being created (auto-create) needs a second look."""
    deadline = time.monotonic() + (timeout_ms or 60_000) / 1000
    while True:
        remaining = max(deadline - time.monotonic(), 0.001)
        partitions = consumer.partitions_for_topic(topic, timeout=remaining)
        if partitions:
            return partitions
        if time.monotonic() >= deadline:
            raise KafkaError(f"topic {topic} not present in metadata")
        time.sleep(0.1)

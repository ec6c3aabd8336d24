"""Send the lines of stdin as records, like Kafka's kafka-console-producer.sh.

    echo "hello" | kafka-ref produce --bootstrap-server 127.0.0.1:9092 --topic clicks
    printf 'user-1:home\\nuser-2:cart\\n' | kafka-ref produce --bootstrap-server 127.0.0.1:9092 \\
        --topic clicks --property parse.key=true --property key.separator=:

Each line is one record (the line break is not part of the value). With
`parse.key=true` the text before the first `key.separator` (default a tab) is the key; a
line without the separator is an error (`No key separator found on line number N`), or,
with `ignore.error=true`, a record with a null key and the whole line as its value.
`--acks` (default all), `--compression-type`, `--linger-ms`, `--batch-size` set the
producer like Kafka's `acks`, `compression.type`, `linger.ms` and `batch.size`; `--sync`
waits for each record before reading the next line. The exit code is 0 when every record
was acknowledged, 1 otherwise (one line on stderr saying why), 2 for a bad argument.

Spec rules: CLIENT-19 (spec/client.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.producer import Producer, parse_acks
from kafka_ref.errors import KafkaError
from kafka_ref.record.compression import Compression
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.topics import check_bootstrap

PROPERTIES = {"parse.key": "false", "key.separator": "\t", "ignore.error": "false"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="required")
    add_command_config(parser, "--producer.config")
    parser.add_argument("--topic", metavar="TOPIC", help="required")
    parser.add_argument(
        "--property",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="parse.key=true|false, key.separator=SEP, ignore.error=true|false",
    )
    parser.add_argument(
        "--acks", "--request-required-acks", default="all", help="0, 1 or all (default all)"
    )
    parser.add_argument(
        "--compression-type",
        "--compression-codec",
        default="none",
        help="none, gzip, snappy, lz4 or zstd",
    )
    parser.add_argument("--linger-ms", "--timeout", type=int, default=5, metavar="MS")
    parser.add_argument("--batch-size", type=int, default=16_384, metavar="BYTES")
    parser.add_argument("--max-block-ms", type=int, default=60_000, metavar="MS")
    parser.add_argument("--request-timeout-ms", type=int, default=30_000, metavar="MS")
    parser.add_argument("--sync", action="store_true", help="wait for each record's ack")


def parse_properties(items: list[str], known: dict[str, str]) -> dict[str, str]:
    """`--property k=v` values over the defaults; an unknown key is a usage error."""
    properties = dict(known)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--property {item!r} is not KEY=VALUE")
        if key not in known:
            raise UsageError(f"unknown property {key!r} (known: {', '.join(sorted(known))})")
        properties[key] = value
    return properties


def _is_true(properties: dict[str, str], key: str) -> bool:
    value = properties[key].strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"property {key} must be true or false, not {properties[key]!r}")
    return value == "true"


def check_required(args: argparse.Namespace) -> None:
    """--bootstrap-server HOST:PORT and --topic are required (a UsageError, one line)."""
    check_bootstrap(args)
    if not args.topic:
        raise UsageError('Missing required argument "[topic]"')


def _producer(args: argparse.Namespace) -> Producer:
    try:
        acks = parse_acks(args.acks)
        Compression.from_name(args.compression_type)
    except (ValueError, KafkaError) as err:
        raise UsageError(str(err)) from None
    for name in ("linger_ms", "batch_size", "max_block_ms", "request_timeout_ms"):
        if getattr(args, name) < (0 if name == "linger_ms" else 1):
            raise UsageError(f"--{name.replace('_', '-')} is out of range: {getattr(args, name)}")
    return Producer(
        args.bootstrap_server,
        acks=acks,
        compression_type=args.compression_type,
        linger_ms=args.linger_ms,
        batch_size=args.batch_size,
        max_block_ms=args.max_block_ms,
        request_timeout_ms=args.request_timeout_ms,
        delivery_timeout_ms=max(120_000, args.linger_ms + args.request_timeout_ms),
        security=command_security(args),
    )


def run(args: argparse.Namespace) -> int:
    check_required(args)
    properties = parse_properties(args.property, PROPERTIES)
    parse_key = _is_true(properties, "parse.key")
    ignore_error = _is_true(properties, "ignore.error")
    separator = properties["key.separator"].encode()
    if parse_key and not separator:
        raise UsageError("key.separator must not be empty")
    producer = _producer(args)
    outcome = {"sent": 0, "failed": 0, "first_error": None}

    def on_delivery(_metadata, error) -> None:  # runs in the producer's sender thread
        if error is not None:
            outcome["failed"] += 1
            outcome["first_error"] = outcome["first_error"] or error

    try:
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            line = raw.rstrip(b"\n").removesuffix(b"\r")
            key = None
            if parse_key:
                key, sep, value = line.partition(separator)
                if not sep:
                    if not ignore_error:
                        print(
                            f"kafka-ref produce: No key separator found on line number {number}: "
                            f"{line.decode(errors='replace')!r}",
                            file=sys.stderr,
                        )
                        return 1
                    key, value = None, line
                line = value
            future = producer.send(args.topic, line, key=key, callback=on_delivery)
            outcome["sent"] += 1
            if args.sync or future.done():  # done at once: it failed before the network
                error = future.exception()
                if error is not None:
                    print(f"kafka-ref produce: {error}", file=sys.stderr)
                    return 1
    finally:
        producer.close()  # delivers everything still queued
    if outcome["failed"]:
        print(
            f"kafka-ref produce: {outcome['failed']} of {outcome['sent']} records failed; "
            f"first error: {outcome['first_error']}",
            file=sys.stderr,
        )
        return 1
    return 0

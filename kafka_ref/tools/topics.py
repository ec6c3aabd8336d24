"""Create, list, describe, alter and delete topics, like Kafka's kafka-topics.sh.

    kafka-ref topics --bootstrap-server 127.0.0.1:9092 --create --topic clicks \\
        --partitions 3 --replication-factor 1 --config retention.ms=86400000
    kafka-ref topics --bootstrap-server 127.0.0.1:9092 --list
    kafka-ref topics --bootstrap-server 127.0.0.1:9092 --describe --topic clicks
    kafka-ref topics --bootstrap-server 127.0.0.1:9092 --alter --topic clicks --partitions 6
    kafka-ref topics --bootstrap-server 127.0.0.1:9092 --delete --topic clicks

The output follows Kafka's `TopicCommand`: `Created topic clicks.`, one topic per line for
--list, and for --describe a summary line per topic (partition count, replication factor,
the configs set on the topic) and a line per partition with its leader, replicas and ISR.
A bad argument is one line and exit code 2; a failed operation one line and exit code 1.

Spec rules: CLIENT-18, CLIENT-19 (spec/client.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin, ConfigEntry, ConfigResource, NewTopic
from kafka_ref.client.connection import parse_bootstrap_servers
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.command_config import add_command_config, command_security

ACTIONS = ("create", "list", "describe", "alter", "delete")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    action = parser.add_mutually_exclusive_group()
    for name in ACTIONS:
        action.add_argument(f"--{name}", action="store_true", help=f"{name} topics")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic (required except --list)")
    parser.add_argument("--partitions", type=int, metavar="N", help="number of partitions")
    parser.add_argument(
        "--replication-factor", type=int, metavar="R", help="copies of each partition"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config override (--create); repeatable",
    )
    parser.add_argument(
        "--if-not-exists", action="store_true", help="--create: no error if the topic exists"
    )
    parser.add_argument(
        "--if-exists", action="store_true", help="--delete/--alter: no error if it is missing"
    )
    parser.add_argument(
        "--exclude-internal", action="store_true", help="--list/--describe: skip internal topics"
    )
    add_timeout_option(parser)


def parse_configs(items: list[str]) -> dict[str, str]:
    configs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item!r} is not KEY=VALUE")
        configs[key.strip()] = value.strip()
    return configs


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """--timeout-ms, for the tools that ask a cluster (topics, groups)."""
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=30_000,
        metavar="MS",
        help="give up on an unreachable cluster after this long (default 30000)",
    )


def check_timeout(args: argparse.Namespace) -> None:
    """--timeout-ms must be positive (UsageError)."""
    if args.timeout_ms <= 0:
        raise UsageError(f"--timeout-ms must be positive, not {args.timeout_ms}")


def check_bootstrap(args: argparse.Namespace) -> None:
    """--bootstrap-server is required and must be HOST:PORT[,HOST:PORT...] (UsageError)."""
    if not args.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    try:
        parse_bootstrap_servers(args.bootstrap_server)
    except ValueError as err:
        raise UsageError(f"--bootstrap-server: {err}") from None


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    if sum(bool(getattr(args, name)) for name in ACTIONS) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    if not args.list and not args.topic and not args.describe:
        raise UsageError('Missing required argument "[topic]"')
    if args.partitions is not None and args.partitions < 1:
        raise UsageError(f"--partitions must be at least 1, not {args.partitions}")
    if args.replication_factor is not None and args.replication_factor < 1:
        raise UsageError(f"--replication-factor must be at least 1, not {args.replication_factor}")
    if args.alter and args.partitions is None:
        raise UsageError("--alter needs --partitions (the new, larger count)")
    check_timeout(args)
    if args.config and not args.create:
        raise UsageError("--config works with --create only")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    configs = parse_configs(args.config)
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.create:
                return _create(admin, args, configs)
            if args.list:
                for name in admin.list_topics(internal=not args.exclude_internal):
                    print(name)
                return 0
            if args.describe:
                return _describe(admin, args)
            if args.alter:
                return _ignore_missing(
                    args, lambda: admin.create_partitions({args.topic: args.partitions})
                )
            return _ignore_missing(args, lambda: _delete(admin, args.topic))
    except KafkaError as err:
        print(f"kafka-ref topics: {err}", file=sys.stderr)
        return 1


def _create(admin: Admin, args: argparse.Namespace, configs: dict[str, str]) -> int:
    topic = NewTopic(
        args.topic,
        num_partitions=-1 if args.partitions is None else args.partitions,
        replication_factor=-1 if args.replication_factor is None else args.replication_factor,
        configs=configs,
    )
    try:
        admin.create_topics([topic])
    except KafkaError as err:
        if args.if_not_exists and err.code == ErrorCode.TOPIC_ALREADY_EXISTS:
            return 0
        raise
    print(f"Created topic {args.topic}.")
    return 0


def _delete(admin: Admin, topic: str) -> None:
    admin.delete_topics([topic])
    print(f"Deleted topic {topic}.")


def _ignore_missing(args: argparse.Namespace, operation) -> int:
    try:
        operation()
    except KafkaError as err:
        if not (args.if_exists and err.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            raise
    return 0


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    for topic in admin.describe_topics([args.topic] if args.topic else None):
        if topic.is_internal and args.exclude_internal:
            continue
        resource = ConfigResource(ConfigResource.TOPIC, topic.name)
        entries = admin.describe_configs([resource])[resource].values()
        overrides = ",".join(
            f"{e.name}={e.value}"
            for e in sorted(entries)
            if e.source == ConfigEntry.DYNAMIC_TOPIC_CONFIG
        )
        rf = len(topic.partitions[0].replicas) if topic.partitions else 0
        print(
            f"Topic: {topic.name}\tPartitionCount: {len(topic.partitions)}\t"
            f"ReplicationFactor: {rf}\tConfigs: {overrides}"
        )
        for p in topic.partitions:
            leader = p.leader if p.leader >= 0 else "none"
            print(
                f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
            )
    return 0

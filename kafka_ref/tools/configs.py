"""Describe and change a topic's configs while it runs, like Kafka's kafka-configs.sh.

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type topics \\
        --entity-name clicks --alter --add-config retention.ms=86400000,segment.ms=600000
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type topics \\
        --entity-name clicks --alter --add-config 'cleanup.policy=[compact,delete]'
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type topics \\
        --entity-name clicks --alter --delete-config retention.ms
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type topics \\
        --entity-name clicks --describe

`--alter` sends one IncrementalAlterConfigs request (KIP-339): `--add-config` sets each
`key=value` (a list value in square brackets, as kafka-configs.sh writes it),
`--delete-config` removes each named override, so the key falls back to the broker's
default. Every broker applies the change to the topic's live logs (CTRL-15) and prints
`Completed updating config for topic clicks.`. `--describe` prints the topic's overrides in
kafka-configs.sh's form: `Dynamic configs for topic clicks are:` then one line per override,
`  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}`.
kafka-ref has no dynamic broker configs. `--entity-type users` and `clients` set client
quotas instead (tools/client_quotas.py: `--add-config producer_byte_rate=1048576`,
`--entity-default`).
A bad argument is one line and exit code 2; a failed operation one line and exit code 1.

Spec rules: CONFIG-3 (spec/configs.md), QUOTA-11 (spec/quotas.md).
"""

from __future__ import annotations

import argparse
import re
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin, ConfigEntry, ConfigResource
from kafka_ref.errors import KafkaError
from kafka_ref.tools import client_quotas
from kafka_ref.tools.topics import check_bootstrap

SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
_ITEM = re.compile(r"\s*([^=,\s]+)\s*=\s*(\[[^\]]*\]|[^,]*)\s*(?:,|$)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    parser.add_argument(
        "--entity-type", action="append", choices=["topics", *client_quotas.ENTITY_TYPES],
        help="what to configure: topics, or users and/or clients (quotas)",
    )  # fmt: skip
    parser.add_argument(  # names in order, paired with the entity types
        "--entity-name", dest="entities", action="append", metavar="NAME", help="its name"
    )
    parser.add_argument(
        "--entity-default", dest="entities", action="append_const", const=None,
        help="the default user or client (quotas)",
    )  # fmt: skip
    parser.add_argument("--describe", action="store_true", help="show the topic's overrides")
    parser.add_argument("--alter", action="store_true", help="change the topic's overrides")
    parser.add_argument("--add-config", metavar="K=V,...", help="--alter: set these")
    parser.add_argument("--delete-config", metavar="K,...", help="--alter: remove these")
    parser.add_argument("--timeout-ms", type=int, default=30_000, metavar="MS", help="(30000)")


def parse_add_config(text: str) -> list[tuple[str, str]]:
    """`k1=v1,k2=[a,b]` -> [("k1", "v1"), ("k2", "a,b")], as kafka-configs.sh reads it."""
    pairs, pos = [], 0
    while pos < len(text):
        found = _ITEM.match(text, pos)
        if found is None or found.end() == pos:
            raise UsageError(f"--add-config {text!r} is not KEY=VALUE[,KEY=VALUE...]")
        key, value = found.group(1), found.group(2).strip()
        pairs.append((key, value[1:-1] if value.startswith("[") else value))
        pos = found.end()
    return pairs


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    if args.describe == args.alter:
        raise UsageError("Command must include exactly one action: --describe or --alter")
    if args.alter and not (args.add_config or args.delete_config):
        raise UsageError("--alter needs --add-config or --delete-config")
    if args.describe and (args.add_config or args.delete_config):
        raise UsageError("--add-config and --delete-config go with --alter")
    if args.timeout_ms <= 0:
        raise UsageError(f"--timeout-ms must be positive, not {args.timeout_ms}")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    if args.entity_type and "topics" not in args.entity_type:
        return client_quotas.run(args)
    if args.entity_type != ["topics"] or len(args.entities or []) != 1 or not args.entities[0]:
        raise UsageError("--entity-type topics and --entity-name are required")
    args.entity_name = args.entities[0]
    resource = ConfigResource(ConfigResource.TOPIC, args.entity_name)
    changes = [(k, v, SET) for k, v in parse_add_config(args.add_config or "")]
    changes += [(k.strip(), None, DELETE) for k in (args.delete_config or "").split(",") if k]
    try:
        with Admin(args.bootstrap_server, request_timeout_ms=args.timeout_ms) as admin:
            if args.alter:
                admin.incremental_alter_configs(resource, changes)
                print(f"Completed updating config for topic {args.entity_name}.")
                return 0
            entries = admin.describe_configs([resource])[resource]
    except KafkaError as err:
        print(f"kafka-ref configs: {err}", file=sys.stderr)
        return 1
    print(f"Dynamic configs for topic {args.entity_name} are:")
    for entry in entries.values():
        if entry.source == ConfigEntry.DYNAMIC_TOPIC_CONFIG:
            print(
                f"  {entry.name}={entry.value} sensitive={str(entry.is_sensitive).lower()} "
                f"synonyms={{DYNAMIC_TOPIC_CONFIG:{entry.name}={entry.value}}}"
            )
    return 0

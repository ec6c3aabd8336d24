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

Dynamic broker configs (KIP-226) the same way, for one broker or for the whole cluster:

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type brokers \
        --entity-name 1 --alter --add-config log.retention.ms=1000
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type brokers \
        --entity-default --alter --add-config log.segment.bytes=104857600
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type brokers \
        --entity-name 1 --describe

`--describe` prints `Dynamic configs for broker 1 are:` (or `Default configs for brokers in
the cluster are:`) and each config set at that level with every layer that defines it,
`  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=1000,
DEFAULT_CONFIG:log.retention.ms=604800000, ...}`.
A bad argument is one line and exit code 2; a failed operation one line and exit code 1.

A group's configs (KIP-848, KIP-932; config resource GROUP) the same way:

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type groups \
        --entity-name queue --alter --add-config share.auto.offset.reset=earliest
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type groups \
        --entity-name queue --describe

prints `Completed updating config for group queue.`, and `Dynamic configs for group queue
are:` with each config the group sets,
`  share.auto.offset.reset=earliest sensitive=false synonyms={GROUP_CONFIG:...=earliest}`.

Client quotas with `--entity-type users` and/or `clients` (tools/client_quotas.py):

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type clients \
        --entity-name app --alter --add-config producer_byte_rate=1048576

SCRAM credentials go to `--entity-type users` as in kafka-configs.sh, and are handed to
`kafka-ref users` (AlterUserScramCredentials; tools/users.py):

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --entity-type users \
        --entity-name alice --alter --add-config 'SCRAM-SHA-256=[password=alice-secret]'

Spec rules: CONFIG-3, CONFIG-7, CONFIG-15 (spec/configs.md), QUOTA-11 (spec/quotas.md), SEC-22.
"""

from __future__ import annotations

import argparse
import re
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin, ConfigResource
from kafka_ref.errors import KafkaError
from kafka_ref.tools import client_quotas, users
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.topics import check_bootstrap

SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    8: "GROUP_CONFIG",
}
_ITEM = re.compile(r"\s*([^=,\s]+)\s*=\s*(\[[^\]]*\]|[^,]*)\s*(?:,|$)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    parser.add_argument(  # users and clients may go together: a user's client (quotas)
        "--entity-type",
        action="append",
        help="what to configure",
        choices=["topics", "brokers", "groups", *client_quotas.ENTITY_TYPES],
    )
    parser.add_argument(  # names in order, each paired with an --entity-type
        "--entity-name",
        dest="entities",
        action="append",
        metavar="NAME",
        help="the topic, the broker id, the group id, the user or the client id",
    )
    parser.add_argument(
        "--entity-default",
        dest="entities",
        action="append_const",
        const=None,
        help="the cluster-wide default (brokers), the default user or client (quotas)",
    )
    parser.add_argument("--describe", action="store_true", help="show the entity's configs")
    parser.add_argument("--alter", action="store_true", help="change the entity's configs")
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


def _one_entity(args: argparse.Namespace) -> None:
    """Topics, brokers and groups take one --entity-type and its name (or
    --entity-default)."""
    types, names = args.entity_type or [], args.entities or []
    if len(types) > 1 or len(names) > 1:
        raise UsageError("one --entity-type and one --entity-name for topics, brokers, groups")
    args.entity_type = types[0] if types else None
    args.entity_name = names[0] if names else None
    args.entity_default = names == [None]


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    if args.entity_type is None:
        raise UsageError("--entity-type is required: topics, brokers, groups, users or clients")
    if args.entity_default and (args.entity_type != "brokers" or args.entity_name):
        raise UsageError("--entity-default goes with --entity-type brokers, without --entity-name")
    if not args.entity_name and not args.entity_default:
        raise UsageError("--entity-name (or, for brokers, --entity-default) is required")
    if args.entity_type == "brokers" and args.entity_name and not args.entity_name.isdigit():
        raise UsageError(f"--entity-name of a broker is its id, not {args.entity_name!r}")
    _check_action(args)


def _check_action(args: argparse.Namespace) -> None:
    if args.describe == args.alter:
        raise UsageError("Command must include exactly one action: --describe or --alter")
    if args.alter and not (args.add_config or args.delete_config):
        raise UsageError("--alter needs --add-config or --delete-config")
    if args.describe and (args.add_config or args.delete_config):
        raise UsageError("--add-config and --delete-config go with --alter")
    if args.timeout_ms <= 0:
        raise UsageError(f"--timeout-ms must be positive, not {args.timeout_ms}")


def _entity(args: argparse.Namespace) -> tuple[ConfigResource, int, str]:
    """The resource, the source its own layer has, and how kafka-configs.sh names it."""
    if args.entity_type == "topics":
        name = args.entity_name
        return ConfigResource(ConfigResource.TOPIC, name), 1, f"topic {name}"
    if args.entity_type == "groups":
        name = args.entity_name
        return ConfigResource(ConfigResource.GROUP, name), 8, f"group {name}"
    if args.entity_default:
        return ConfigResource(ConfigResource.BROKER, ""), 3, "brokers in the cluster"
    return ConfigResource(ConfigResource.BROKER, args.entity_name), 2, f"broker {args.entity_name}"


def _scram(args: argparse.Namespace) -> bool:
    """Does this --alter of one user change SCRAM credentials (and nothing else)?"""
    added = [k for k, _ in parse_add_config(args.add_config or "")]
    deleted = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    scram = [k.startswith("SCRAM-") for k in added + deleted]
    if any(scram) and not all(scram):
        raise UsageError("give SCRAM credentials and quotas in two commands")
    return args.alter and args.entity_type == ["users"] and any(scram)


def run(args: argparse.Namespace) -> int:
    if _scram(args):
        check_bootstrap(args)
        args.entity_name = (args.entities or [None])[0]
        args.zookeeper = args.data_dir = None
        return users.run(args)
    if set(args.entity_type or []) & set(client_quotas.ENTITY_TYPES):
        check_bootstrap(args)
        _check_action(args)
        return client_quotas.run(args)
    _one_entity(args)
    _validate(args)
    resource, own_source, what = _entity(args)
    changes = [(k, v, SET) for k, v in parse_add_config(args.add_config or "")]
    changes += [(k.strip(), None, DELETE) for k in (args.delete_config or "").split(",") if k]
    kind = "default config" if args.entity_default else "config"
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.alter:
                admin.incremental_alter_configs(resource, changes)
                print(f"Completed updating {kind} for {what}.")
                return 0
            entries = admin.describe_configs([resource], include_synonyms=True)[resource]
    except KafkaError as err:
        print(f"kafka-ref configs: {err}", file=sys.stderr)
        return 1
    print(f"{'Default' if args.entity_default else 'Dynamic'} configs for {what} are:")
    for entry in entries.values():
        if entry.source == own_source:
            shown = [
                s
                for s in entry.synonyms
                if resource.type == ConfigResource.BROKER or s[0] == own_source
            ]  # a topic's or a group's: its own value only (CONFIG-3, CONFIG-15)
            synonyms = ", ".join(f"{SOURCES[src]}:{n}={v}" for src, n, v in shown)
            print(
                f"  {entry.name}={entry.value} sensitive={str(entry.is_sensitive).lower()} "
                f"synonyms={{{synonyms}}}"
            )
    return 0

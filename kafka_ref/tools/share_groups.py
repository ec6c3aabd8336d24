"""List, describe, reset and delete share groups, like Kafka's kafka-share-groups.sh (KIP-932).

    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --list
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --describe --group jobs
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --describe --group jobs --members
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group jobs \\
        --topic orders --to-earliest              # a dry run: prints the plan
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group jobs \\
        --topic orders:0 --to-offset 42 --execute
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --delete-offsets --group jobs \\
        --topic orders
    kafka-ref share-groups --bootstrap-server 127.0.0.1:9092 --delete --group jobs

A share group commits no offsets: where it is in a partition is the share-partition start
offset (SPSO), below which every record is done. `--describe` (`--offsets`, the default)
prints one line per share-partition with its START-OFFSET and its LAG, the records below
the high watermark not yet acknowledged or archived (KIP-1226; `-` when the coordinator
cannot tell it, e.g. before the share-partition's first write); `--members` the members with
their assignments (a partition may be assigned to several); `--state` the group's state,
assignor and epochs.

`--reset-offsets` starts the share-partitions again at new offsets (`--to-earliest`,
`--to-latest`, `--to-offset N` kept within the log, `--to-datetime`), printing the plan and
doing it with `--execute` only; `--delete-offsets` deletes the state of whole topics, so the
next member starts from `share.auto.offset.reset`. Both, and `--delete`, need an empty group.

A bad argument is one line and exit code 2; a refused or failed operation one line and
exit code 1.

Spec rules: SHARE-49, SHARE-51 (spec/share_groups.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.groups import (
    TARGETS,
    check_reset_target,
    parse_topic,
    print_table,
    reset_plan,
    topic_partitions,
)
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout

ACTIONS = ("list", "describe", "reset_offsets", "delete", "delete_offsets")
VIEWS = ("members", "state", "offsets")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    parser.add_argument("--list", action="store_true", help="list all share groups")
    parser.add_argument("--describe", action="store_true", help="describe a share group")
    parser.add_argument(
        "--reset-offsets", action="store_true", help="reset a share group's start offsets"
    )
    parser.add_argument("--delete", action="store_true", help="delete an empty share group")
    parser.add_argument(
        "--delete-offsets", action="store_true", help="delete a share group's state of topics"
    )
    parser.add_argument("--group", metavar="GROUP", help="the share group")
    parser.add_argument("--members", action="store_true", help="--describe: the members")
    parser.add_argument("--state", action="store_true", help="--describe: the state")
    parser.add_argument(
        "--offsets", action="store_true", help="--describe: the start offsets (default)"
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P...]",
        help="--reset-offsets: a topic or some of its partitions; --delete-offsets: a topic",
    )
    parser.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    parser.add_argument("--to-latest", action="store_true", help="reset to the log end")
    parser.add_argument("--to-offset", metavar="N", help="reset to offset N")
    parser.add_argument(
        "--to-datetime", metavar="ISO8601", help="reset to the first offset at or after a time"
    )
    parser.add_argument("--execute", action="store_true", help="--reset-offsets: do it")
    parser.add_argument(
        "--dry-run", action="store_true", help="--reset-offsets: only print the plan (default)"
    )
    add_timeout_option(parser)


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --reset-offsets, "
            "--delete or --delete-offsets"
        )
    if not args.list and not args.group:
        raise UsageError(f'--{chosen[0].replace("_", "-")} needs "[group]": add --group GROUP')
    check_timeout(args)
    views = [v for v in VIEWS if getattr(args, v)]
    if views and not args.describe:
        raise UsageError("--members, --state and --offsets work with --describe only")
    if len(views) > 1:
        raise UsageError("--describe takes one of --members, --state, --offsets")
    if args.topic and not (args.reset_offsets or args.delete_offsets):
        raise UsageError("--topic works with --reset-offsets or --delete-offsets")
    if not args.reset_offsets and (
        args.execute or args.dry_run or any(getattr(args, t) not in (None, False) for t in TARGETS)
    ):
        raise UsageError("--to-*, --execute and --dry-run work with --reset-offsets")
    if args.delete_offsets:
        if not args.topic:
            raise UsageError("--delete-offsets needs --topic TOPIC")
        if any(parse_topic(spec)[1] is not None for spec in args.topic):
            raise UsageError("--delete-offsets deletes whole topics: --topic TOPIC, no partitions")
    if args.reset_offsets:
        if not args.topic:
            raise UsageError("--reset-offsets needs --topic TOPIC[:P,P...]")
        check_reset_target(args)


def run(args: argparse.Namespace) -> int:
    _validate(args)
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.list:
                for group in admin.list_share_groups():
                    print(group.group_id)
                return 0
            if args.describe:
                return _describe(admin, args)
            if args.reset_offsets:
                return _reset(admin, args)
            if args.delete_offsets:
                return _delete_offsets(admin, args)
            return _delete(admin, args.group)
    except KafkaError as err:
        print(f"kafka-ref share-groups: {err}", file=sys.stderr)
        return 1


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_share_groups([args.group])[args.group]
    if group.state == "Dead":
        print(
            f"kafka-ref share-groups: Share group '{args.group}' does not exist.", file=sys.stderr
        )
        return 1
    if args.state:
        node = group.coordinator
        print_table(
            [
                [
                    "GROUP",
                    "COORDINATOR (ID)",
                    "STATE",
                    "GROUP-EPOCH",
                    "ASSIGNMENT-EPOCH",
                    "#MEMBERS",
                ],
                [
                    group.group_id,
                    "-" if node is None else f"{node.host}:{node.port} ({node.node_id})",
                    group.state,
                    group.group_epoch,
                    group.assignment_epoch,
                    len(group.members),
                ],
            ]
        )
        return 0
    if args.members:
        rows = [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNMENT"]]
        for m in group.members:
            assigned = ",".join(map(str, m.assignment)) or "-"
            rows.append(
                [group.group_id, m.member_id, m.host, m.client_id, m.member_epoch, assigned]
            )
        print_table(rows)
        return 0
    offsets = admin.list_share_group_offsets_info(args.group)
    rows = [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]]
    for tp, info in offsets.items():
        start = "-" if info.start_offset < 0 else info.start_offset
        lag = "-" if info.lag is None else info.lag  # unknown: Kafka's tool prints "-" too
        rows.append([args.group, tp.topic, tp.partition, start, lag])
    print_table(rows)
    return 0


def _reset(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_share_groups([args.group])[args.group]
    if group.members:
        print(
            f"kafka-ref share-groups: Share group '{args.group}' is not empty: its start "
            "offsets can only be reset while it has no members.",
            file=sys.stderr,
        )
        return 1
    plan = reset_plan(admin, args, topic_partitions(admin, args.topic))
    rows = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    rows += [[args.group, tp.topic, tp.partition, offset] for tp, offset in plan.items()]
    print_table(rows)
    if args.execute:
        admin.alter_share_group_offsets(args.group, plan)
    else:
        print(
            "\nWARN: No action was performed: add --execute to reset the offsets.", file=sys.stderr
        )
    return 0


def _delete_offsets(admin: Admin, args: argparse.Namespace) -> int:
    topics = [parse_topic(spec)[0] for spec in args.topic]
    results = admin.delete_share_group_offsets(args.group, topics)
    rows = [["TOPIC", "STATUS"]]
    for topic in topics:
        error = results.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        rows.append(
            [topic, "Successful" if error == ErrorCode.NO_ERROR else f"Error: {error.name}"]
        )
    print_table(rows)
    return 0 if all(results.get(t) == ErrorCode.NO_ERROR for t in topics) else 1


def _delete(admin: Admin, group_id: str) -> int:
    described = admin.describe_share_groups([group_id])[group_id]
    if described.state == "Dead":
        print(f"kafka-ref share-groups: Share group '{group_id}' does not exist.", file=sys.stderr)
        return 1
    try:
        admin.delete_groups([group_id])
    except KafkaError as err:
        print(
            f"kafka-ref share-groups: Group '{group_id}' could not be deleted due to: "
            f"{err.code.name}",
            file=sys.stderr,
        )
        return 1
    print(f"Deletion of requested share groups ('{group_id}') was successful.")
    return 0

"""List, describe, reset and delete consumer groups, like Kafka's kafka-consumer-groups.sh.

    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --list
    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --describe --group billing
    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group billing \\
        --topic clicks --to-earliest            # a dry run: prints the plan
    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group billing \\
        --topic clicks:0,1 --to-datetime 2024-05-01T10:00:00 --execute
    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --delete --group billing
    kafka-ref groups --bootstrap-server 127.0.0.1:9092 --delete-offsets --group billing \
        --topic clicks:0,1

--describe prints the group (coordinator, assignor, state, members) and then, as Kafka's
`ConsumerGroupCommand`, one line per partition: the committed offset (CURRENT-OFFSET), the
log end offset, the LAG between them, and the member that owns the partition ("-" when
nobody does). `--members` or `--state` print only that part.

--reset-offsets moves the group's committed offsets: `--to-earliest`, `--to-latest`,
`--to-offset N` (kept within the log), or `--to-datetime` (the first offset at or after that
time; ISO 8601, local time unless it names a zone; the log end if nothing is that late).
Without `--execute` it only prints the plan. Resetting (and deleting) needs an *inactive*
group: while members consume, they own the offsets and would overwrite the reset.

--delete-offsets deletes the group's committed offsets of the partitions named with
`--topic TOPIC` (every partition) or `--topic TOPIC:P,P` (OffsetDelete, KIP-496). The
coordinator keeps those of topics a member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); as
Kafka's tool, it prints whether the request succeeded, then one line per partition.

A bad argument is one line and exit code 2; a refused or failed operation one line and
exit code 1.

Spec rules: TOOLS-7, TOOLS-8, TOOLS-9, TOOLS-10, TOOLS-35 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout

ACTIONS = ("list", "describe", "reset_offsets", "delete", "delete_offsets")
TARGETS = ("to_earliest", "to_latest", "to_offset", "to_datetime")
INACTIVE = ("Empty", "Dead")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    parser.add_argument("--list", action="store_true", help="list all consumer groups")
    parser.add_argument("--describe", action="store_true", help="describe a group")
    parser.add_argument(
        "--reset-offsets", action="store_true", help="reset a group's committed offsets"
    )
    parser.add_argument("--delete", action="store_true", help="delete a group and its offsets")
    parser.add_argument(
        "--delete-offsets",
        action="store_true",
        help="delete a group's offsets of some topics (those no member subscribes to)",
    )
    parser.add_argument("--group", metavar="GROUP", help="the consumer group")
    parser.add_argument("--members", action="store_true", help="--describe: only the members")
    parser.add_argument("--state", action="store_true", help="--describe: only the state")
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P...]",
        help="--reset-offsets, --delete-offsets: a topic, or some of its partitions; repeatable",
    )
    parser.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every topic of the group"
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


def parse_topic(spec: str) -> tuple[str, list[int] | None]:
    """'clicks' -> ('clicks', None); 'clicks:0,2' -> ('clicks', [0, 2])."""
    topic, sep, parts = spec.partition(":")
    if not topic.strip():
        raise UsageError(f"--topic {spec!r}: no topic name")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in parts.split(",")})
    except ValueError:
        raise UsageError(f"--topic {spec!r} is not TOPIC:PARTITION[,PARTITION...]") from None
    if not partitions or partitions[0] < 0:
        raise UsageError(f"--topic {spec!r}: partitions must be numbers >= 0")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """ISO 8601 -> epoch ms (local time when no zone is given, as Kafka)."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--to-datetime {text!r} is not ISO 8601 (e.g. 2024-05-01T10:00:00.000)"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


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
    if (args.members or args.state) and not args.describe:
        raise UsageError("--members and --state work with --describe only")
    if args.topic and not (args.reset_offsets or args.delete_offsets):
        raise UsageError("--topic works with --reset-offsets or --delete-offsets")
    reset_only = args.all_topics or args.execute or args.dry_run
    if not args.reset_offsets and (reset_only or any(getattr(args, t) for t in TARGETS)):
        raise UsageError("--all-topics, --to-*, --execute work with --reset-offsets")
    if args.delete_offsets:
        if not args.topic:
            raise UsageError("--delete-offsets needs --topic TOPIC[:P,P...]")
        for spec in args.topic:
            parse_topic(spec)
    if args.reset_offsets:
        if bool(args.topic) == args.all_topics:
            raise UsageError("--reset-offsets needs one scope: --topic TOPIC or --all-topics")
        check_reset_target(args)


def check_reset_target(args: argparse.Namespace) -> None:
    """--reset-offsets' target and mode (share_groups.py checks its own with it too)."""
    targets = [t for t in TARGETS if getattr(args, t) not in (None, False)]
    if len(targets) != 1:
        raise UsageError(
            "--reset-offsets needs exactly one of --to-earliest, --to-latest, "
            "--to-offset, --to-datetime"
        )
    if args.execute and args.dry_run:
        raise UsageError("--execute and --dry-run exclude each other")
    if args.to_offset is not None:
        if not args.to_offset.isdigit():
            raise UsageError(f"--to-offset must be an offset >= 0, not {args.to_offset!r}")
        args.to_offset = int(args.to_offset)
    for spec in args.topic:
        parse_topic(spec)
    if args.to_datetime is not None:
        parse_datetime(args.to_datetime)


def run(args: argparse.Namespace) -> int:
    _validate(args)
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.list:
                for group in admin.list_groups():
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
        print(f"kafka-ref groups: {err}", file=sys.stderr)
        return 1


def print_table(rows: list[list[object]]) -> None:
    widths = [max(len(str(row[i])) for row in rows) + 2 for i in range(len(rows[0]))]
    for row in rows:
        print("".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_groups([args.group])[args.group]
    if group.state == "Dead":
        print(f"kafka-ref groups: Consumer group '{args.group}' does not exist.", file=sys.stderr)
        return 1
    if not args.members:
        node = group.coordinator
        print_table(
            [
                ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                [
                    group.group_id,
                    f"{node.host}:{node.port} ({node.node_id})",
                    group.protocol or "-",
                    group.state,
                    len(group.members),
                ],
            ]
        )
    if args.state:
        return 0
    print()
    if args.members:
        rows = [["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]]
        for m in group.members:
            assigned = ",".join(map(str, m.assignment)) or "-"
            rows.append(
                [group.group_id, m.member_id, m.host, m.client_id, len(m.assignment), assigned]
            )
        print_table(rows)
        return 0
    if not group.members:
        print(f"Consumer group '{args.group}' has no active members.\n")
    committed = admin.list_consumer_group_offsets(args.group)
    owner = {tp: m for m in group.members for tp in m.assignment}
    partitions = sorted(set(committed) | set(owner))
    ends = admin.list_offsets(dict.fromkeys(partitions, -1)) if partitions else {}
    rows = [
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
    ]
    for tp in partitions:
        current = committed[tp].offset if tp in committed else None
        end = ends.get(tp, (None, None))[0]
        lag = end - current if current is not None and end is not None else "-"
        m = owner.get(tp)
        rows.append(
            [
                args.group,
                tp.topic,
                tp.partition,
                "-" if current is None else current,
                "-" if end is None else end,
                lag,
                m.member_id if m else "-",
                m.host if m else "-",
                m.client_id if m else "-",
            ]
        )
    print_table(rows)
    return 0


def _reset_partitions(admin: Admin, args: argparse.Namespace) -> list[TopicPartition]:
    if args.all_topics:
        return sorted(admin.list_consumer_group_offsets(args.group))
    return topic_partitions(admin, args.topic)


def topic_partitions(admin: Admin, specs: list[str]) -> list[TopicPartition]:
    """The partitions `--topic` names: a topic alone is all its partitions (share_groups.py
    resets with it too)."""
    wanted: list[TopicPartition] = []
    described = {t.name: t for t in admin.describe_topics({parse_topic(s)[0] for s in specs})}
    for spec in specs:
        topic, partitions = parse_topic(spec)
        existing = [p.partition for p in described[topic].partitions]
        for p in existing if partitions is None else partitions:
            if p not in existing:
                raise KafkaError(f"topic {topic} has no partition {p}")
            wanted.append(TopicPartition(topic, p))
    return sorted(set(wanted))


def _reset(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_groups([args.group])[args.group]
    if group.state not in INACTIVE:
        print(
            f"kafka-ref groups: Assignments can only be reset if the group '{args.group}' is "
            f"inactive, but the current state is {group.state}.",
            file=sys.stderr,
        )
        return 1
    partitions = _reset_partitions(admin, args)
    if not partitions:
        print(f"kafka-ref groups: group '{args.group}' has no offsets to reset", file=sys.stderr)
        return 1
    plan = reset_plan(admin, args, partitions)
    rows = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    rows += [[args.group, tp.topic, tp.partition, offset] for tp, offset in plan.items()]
    print_table(rows)
    if args.execute:
        admin.alter_consumer_group_offsets(args.group, plan)
    else:
        print(
            "\nWARN: No action was performed: add --execute to reset the offsets.", file=sys.stderr
        )
    return 0


def reset_plan(admin: Admin, args: argparse.Namespace, partitions: list[TopicPartition]) -> dict:
    """{tp: new offset} for the chosen --to-* target (share_groups.py resets with it too)."""
    earliest = {tp: o for tp, (o, _) in admin.list_offsets(dict.fromkeys(partitions, -2)).items()}
    latest = {tp: o for tp, (o, _) in admin.list_offsets(dict.fromkeys(partitions, -1)).items()}
    if args.to_earliest:
        return {tp: earliest[tp] for tp in partitions}
    if args.to_latest:
        return {tp: latest[tp] for tp in partitions}
    if args.to_offset is not None:  # Kafka keeps the offset within the log
        return {tp: min(max(args.to_offset, earliest[tp]), latest[tp]) for tp in partitions}
    when = parse_datetime(args.to_datetime)
    found = admin.list_offsets(dict.fromkeys(partitions, when))
    return {tp: found[tp][0] if found[tp][0] >= 0 else latest[tp] for tp in partitions}


def _delete(admin: Admin, group_id: str) -> int:
    try:
        admin.delete_groups([group_id])
    except KafkaError as err:
        print(
            f"kafka-ref groups: Group '{group_id}' could not be deleted due to: {err.code.name}",
            file=sys.stderr,
        )
        return 1
    print(f"Deletion of requested consumer groups ('{group_id}') was successful.")
    return 0


# Kafka `ConsumerGroupCommand.deleteOffsets`: what an error of the whole request says.
_DELETE_OFFSETS_REFUSED = {
    ErrorCode.INVALID_GROUP_ID: "'{group}' is not valid.",
    ErrorCode.GROUP_ID_NOT_FOUND: "'{group}' does not exist.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Access to '{group}' is not authorized.",
    ErrorCode.NON_EMPTY_GROUP: (
        "Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty."
    ),
}


def _delete_offsets(admin: Admin, args: argparse.Namespace) -> int:
    """OffsetDelete of the --topic partitions (a topic alone: all its partitions; one the
    cluster does not have: its partition is "Not Provided"), printed as Kafka's tool does."""
    wanted: list[TopicPartition] = []
    results: dict[TopicPartition, ErrorCode] = {}
    for spec in args.topic:
        topic, partitions = parse_topic(spec)
        if partitions is None:
            try:
                partitions = [p.partition for p in admin.describe_topics([topic])[0].partitions]
            except KafkaError as err:
                results[TopicPartition(topic, -1)] = err.code
                continue
        wanted += [TopicPartition(topic, p) for p in partitions]
    refused = None
    try:
        results.update(admin.delete_consumer_group_offsets(args.group, dict.fromkeys(wanted)))
    except KafkaError as err:
        refused = err.code
    succeeded = refused is None and all(e == ErrorCode.NO_ERROR for e in results.values())
    if succeeded:
        print(f"Request succeed for deleting offsets from group {args.group}.")
    elif refused is None:
        print(
            "Error: Encounter some partition level error, see the follow-up details:",
            file=sys.stderr,
        )
    else:
        unknown = f"Encounter some unknown error: {refused.name}"
        message = _DELETE_OFFSETS_REFUSED.get(refused, unknown)
        print(f"Error: {message.format(group=args.group)}", file=sys.stderr)
        return 1
    rows = [["TOPIC", "PARTITION", "STATUS"]]
    for tp in sorted(results):
        error = results[tp]
        status = "Successful" if error == ErrorCode.NO_ERROR else f"Error: {error.name}"
        rows.append([tp.topic, tp.partition if tp.partition >= 0 else "Not Provided", status])
    print()
    print_table(rows)
    return 0 if succeeded else 1

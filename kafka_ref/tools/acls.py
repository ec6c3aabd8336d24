"""Add, list and remove ACLs, like Kafka's kafka-acls.sh --bootstrap-server.

    kafka-ref acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice \\
        --operation Read --operation Describe --topic clicks
    kafka-ref acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice \\
        --operation Read --group billing --resource-pattern-type prefixed
    kafka-ref acls --bootstrap-server 127.0.0.1:9092 --add --deny-principal User:mallory \\
        --operation All --cluster
    kafka-ref acls --bootstrap-server 127.0.0.1:9092 --list [--topic clicks]
    kafka-ref acls --bootstrap-server 127.0.0.1:9092 --remove --allow-principal User:alice \\
        --operation Read --topic clicks

A resource is `--topic`, `--group`, `--transactional-id` or `--cluster`;
`--resource-pattern-type` is literal (the default), prefixed, or for --list and --remove also
any or match. Operations are Kafka's names (Read, Write, Create, Delete, Alter, Describe,
ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All; default All), hosts
default to `*`. --remove without principals removes every ACL of the resource. The broker
needs `authorizer.class.name`; the principal this tool connects as (`User:ANONYMOUS` on a
PLAINTEXT listener) needs ALTER on the cluster to change ACLs, DESCRIBE to list them, or
must be in `super.users`. A bad argument is one line and exit code 2; a refusal, exit 1.

Spec rules: SEC-18 (spec/security.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.errors import KafkaError
from kafka_ref.security.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout

_OPERATIONS = {o.name.replace("_", "").lower(): o for o in AclOperation if o > AclOperation.ANY}
_PATTERNS = {"literal", "prefixed", "any", "match"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs")
    for flag, what in (
        ("--topic", "topic"),
        ("--group", "consumer group"),
        ("--transactional-id", "transactional id"),
    ):
        parser.add_argument(flag, action="append", default=[], metavar="NAME", help=f"a {what}")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default="literal",
        metavar="TYPE",
        help="literal (default), prefixed; --list/--remove also any, match",
    )
    for kind in ("allow", "deny"):
        parser.add_argument(
            f"--{kind}-principal",
            action="append",
            default=[],
            metavar="TYPE:NAME",
            help=f"who is {kind}ed, e.g. User:alice",
        )
        parser.add_argument(
            f"--{kind}-host",
            action="append",
            default=[],
            metavar="IP",
            help=f"from where (default *) for --{kind}-principal",
        )
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        metavar="OP",
        help="Read, Write, Describe, ... (default All)",
    )
    parser.add_argument("--principal", metavar="TYPE:NAME", help="--list: only this principal")
    parser.add_argument("--force", action="store_true", help="accepted; nothing is asked")
    add_timeout_option(parser)


def _patterns(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    found = [(ResourceType.TOPIC, n) for n in args.topic]
    found += [(ResourceType.GROUP, n) for n in args.group]
    found += [(ResourceType.TRANSACTIONAL_ID, n) for n in args.transactional_id]
    if args.cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _entries(args: argparse.Namespace) -> list[AccessControlEntry]:
    try:
        operations = [_OPERATIONS[o.replace("_", "").lower()] for o in args.operation or ["All"]]
    except KeyError as err:
        raise UsageError(
            f"unknown --operation {err.args[0]}: use {', '.join(_OPERATIONS)}"
        ) from None
    entries = []
    for kind, permission in (("allow", AclPermissionType.ALLOW), ("deny", AclPermissionType.DENY)):
        for principal in getattr(args, f"{kind}_principal"):
            if ":" not in principal:
                raise UsageError(f"--{kind}-principal {principal}: not TYPE:NAME, e.g. User:alice")
            for host in getattr(args, f"{kind}_host") or ["*"]:
                entries += [
                    AccessControlEntry(principal, host, op, permission) for op in operations
                ]
    return entries


def _validate(args: argparse.Namespace) -> tuple[list, list, PatternType]:
    check_bootstrap(args)
    check_timeout(args)
    pattern = args.resource_pattern_type.lower()
    if pattern not in _PATTERNS or (args.add and pattern in ("any", "match")):
        raise UsageError(
            f"--resource-pattern-type {args.resource_pattern_type}: use "
            f"{'literal or prefixed' if args.add else ', '.join(sorted(_PATTERNS))}"
        )
    resources, entries = _patterns(args), _entries(args)
    if not args.list and not resources:
        raise UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
    if args.add and not entries:
        raise UsageError("--add needs --allow-principal or --deny-principal")
    return resources, entries, PatternType[pattern.upper()]


def _print(bindings: list[AclBinding]) -> None:
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    for p, entries in by_pattern.items():
        print(
            f"Current ACLs for resource `ResourcePattern(resourceType={p.resource_type.name}, "
            f"name={p.name}, patternType={p.pattern_type.name})`: "
        )
        for e in entries:
            print(
                f" \t(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
                f"permissionType={e.permission.name})"
            )
        print()


def run(args: argparse.Namespace) -> int:
    resources, entries, pattern_type = _validate(args)
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.add:
                admin.create_acls(
                    AclBinding(ResourcePattern(rtype, name, pattern_type), e)
                    for rtype, name in resources
                    for e in entries
                )
            elif args.remove:
                filters = [
                    AclBindingFilter(
                        rtype, name, pattern_type, e.principal, e.host, e.operation, e.permission
                    )
                    for rtype, name in resources
                    for e in entries
                ] or [AclBindingFilter(rtype, name, pattern_type) for rtype, name in resources]
                admin.delete_acls(filters)
            if args.list or args.add:  # kafka-acls.sh shows the resource's ACLs after --add
                selectors = [
                    AclBindingFilter(rtype, name, pattern_type, args.principal)
                    for rtype, name in resources
                ] or [AclBindingFilter(pattern_type=PatternType.ANY, principal=args.principal)]
                found = sorted({b for s in selectors for b in admin.describe_acls(s)})
                _print(found)
    except KafkaError as err:
        print(f"kafka-ref acls: {err}", file=sys.stderr)
        return 1
    return 0

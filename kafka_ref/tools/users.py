"""Add, change, delete and list SCRAM users, like Kafka's kafka-configs.sh --entity-type users.

    kafka-ref users --bootstrap-server 127.0.0.1:9092 --alter --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=a-secret],SCRAM-SHA-512=[password=p]'
    kafka-ref users --bootstrap-server 127.0.0.1:9092 --alter --entity-name alice \\
        --delete-config SCRAM-SHA-256
    kafka-ref users --bootstrap-server 127.0.0.1:9092 --describe [--entity-name alice]

Where the credentials go, as kafka-configs.sh chooses:

* `--bootstrap-server`: through a running broker, with AlterUserScramCredentials and
  DescribeUserScramCredentials (KIP-554). The password is salted and hashed here; the
  request carries the salt and the salted password, the broker stores the derived keys in
  its metadata (the metadata directory, or ZooKeeper's `/config/users` with a
  `/config/changes` notice that every broker follows). Needs ALTER (DESCRIBE to list) on
  the cluster when ACLs are on.
* `--zookeeper HOST:PORT[/chroot]`: straight into ZooKeeper's `/config/users/<name>`, as
  Kafka's `kafka-configs.sh --zookeeper` does: how the brokers' own SCRAM user is created
  before the brokers start, when their inter-broker listener needs it (SEC-21).
* `--data-dir DIR`: straight into a stopped (or running) embedded broker's
  `__scram_credentials.json`, on the broker's machine.

4096 iterations unless `iterations=` says more, at most 16384. `--describe` prints `SCRAM
credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192`, never a
password or key. A bad argument is one line and exit code 2; a refusal by the broker,
exit code 1. No password appears in any output or error.

Spec rules: SEC-11, SEC-20, SEC-22 (spec/security.md).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from kafka_ref.cli import UsageError
from kafka_ref.errors import KafkaError
from kafka_ref.security.credentials import CredentialStore, ZkCredentialStore
from kafka_ref.security.scram import HASHES, MAX_ITERATIONS, MIN_ITERATIONS, make_credential
from kafka_ref.tools.command_config import add_command_config, command_security

_ITEM = re.compile(r"\s*([A-Z0-9-]+)\s*=\s*\[([^\]]*)\]\s*(?:,|$)")
Added = dict[str, tuple[str, int]]  # mechanism -> (password, iterations)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT", help="through a broker")
    where.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="into ZooKeeper")
    where.add_argument("--data-dir", metavar="DIR", help="an embedded broker's log dir")
    add_command_config(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="add or delete credentials")
    action.add_argument("--describe", action="store_true", help="list users and mechanisms")
    parser.add_argument("--entity-name", metavar="USER", help="the user")
    parser.add_argument(
        "--add-config", metavar="'MECH=[password=...]'", help="SCRAM-SHA-256/512 credentials"
    )
    parser.add_argument("--delete-config", metavar="MECH,...", help="mechanisms to remove")
    parser.add_argument("--timeout-ms", type=int, default=30_000, help="per request (30000)")


def parse_add_config(text: str) -> Added:
    """`SCRAM-SHA-256=[iterations=8192,password=x],...` -> mechanism -> (password, iterations)."""
    added: Added = {}
    position = 0
    for match in _ITEM.finditer(text):
        if match.start() != position:
            break
        position = match.end()
        mechanism, options = (
            match.group(1),
            dict(o.split("=", 1) for o in match.group(2).split(",") if "=" in o),
        )
        if mechanism not in HASHES:
            raise UsageError(f"unknown mechanism {mechanism}: use {' or '.join(HASHES)}")
        if "password" not in options:
            raise UsageError(f"{mechanism} needs password=... (in the square brackets)")
        iterations = options.get("iterations", str(MIN_ITERATIONS))
        if not iterations.isdigit() or not MIN_ITERATIONS <= int(iterations) <= MAX_ITERATIONS:
            raise UsageError(f"{mechanism}: iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}")
        added[mechanism] = (options["password"], int(iterations))
    if position != len(text) or not added:
        raise UsageError("--add-config is not 'SCRAM-SHA-256=[iterations=N,password=P],...'")
    return added


def _print(described: dict[str, dict[str, int]], only: str | None) -> None:
    for user, mechanisms in described.items():
        if only in (None, user):
            listed = ",".join(f"{m}=iterations={n}" for m, n in sorted(mechanisms.items()))
            print(f"SCRAM credential configs for user-principal '{user}' are {listed}")


def _through_broker(args: argparse.Namespace, added: Added, deleted: tuple[str, ...]) -> None:
    from kafka_ref.client.admin import Admin

    with Admin(
        args.bootstrap_server,
        request_timeout_ms=args.timeout_ms,
        security=command_security(args),
    ) as admin:
        if args.describe:
            _print(admin.describe_user_scram_credentials(), args.entity_name)
            return
        admin.alter_user_scram_credentials(
            {args.entity_name: added} if added else {},
            {args.entity_name: list(deleted)} if deleted else {},
        )


def _into_store(
    store: CredentialStore | ZkCredentialStore,
    args: argparse.Namespace,
    added: Added,
    deleted: tuple[str, ...],
) -> None:
    if args.describe:
        _print(store.describe(), args.entity_name)
        return
    credentials = {m: make_credential(m, password, n) for m, (password, n) in added.items()}
    store.alter(args.entity_name, credentials, deleted)


def _into_zookeeper(args: argparse.Namespace, added: Added, deleted: tuple[str, ...]) -> None:
    from kafka_ref.cluster.zookeeper import KafkaZkClient

    zk = KafkaZkClient(args.zookeeper)
    zk.start()
    try:
        store = ZkCredentialStore(zk.zk)
        store.start()
        _into_store(store, args, added, deleted)
    finally:
        zk.close()


def run(args: argparse.Namespace) -> int:
    if args.data_dir is not None and not os.path.isdir(args.data_dir):
        raise UsageError(f"--data-dir {args.data_dir}: no such directory")
    if args.command_config is not None and args.bootstrap_server is None:
        raise UsageError(
            "--command-config is for --bootstrap-server: it says how to reach a broker"
        )
    added: Added = {}
    deleted: tuple[str, ...] = ()
    if args.alter:
        if not args.entity_name:
            raise UsageError("--alter needs --entity-name USER")
        if not args.add_config and not args.delete_config:
            raise UsageError("--alter needs --add-config or --delete-config")
        added = parse_add_config(args.add_config) if args.add_config else {}
        deleted = tuple(m.strip() for m in (args.delete_config or "").split(",") if m.strip())
    try:
        if args.bootstrap_server:
            _through_broker(args, added, deleted)
        elif args.zookeeper:
            _into_zookeeper(args, added, deleted)
        else:
            _into_store(CredentialStore(args.data_dir), args, added, deleted)
    except KafkaError as err:  # the broker's message: names the user, never the password
        print(f"kafka-ref users: {err}", file=sys.stderr)
        return 1
    if args.alter:
        print(f"Completed updating config for user {args.entity_name}.")
    return 0

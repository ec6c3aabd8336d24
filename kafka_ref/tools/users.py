"""Add, change, delete and list SCRAM users, like Kafka's kafka-configs.sh --entity-type users.

    kafka-ref users --data-dir /tmp/kafka-ref --alter --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=a-secret],SCRAM-SHA-512=[password=p]'
    kafka-ref users --data-dir /tmp/kafka-ref --alter --entity-name alice \\
        --delete-config SCRAM-SHA-256
    kafka-ref users --data-dir /tmp/kafka-ref --describe [--entity-name alice]

The password is salted and hashed here (4096 iterations unless `iterations=` says more, at
most 16384); only the salt, the two derived keys and the iteration count are written, to
`__scram_credentials.json` in the broker's metadata directory (its first log dir). A
running broker reads the file again when it changes: the next authentication uses the new
credential. `--describe` prints `SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192`, never a password or key. Kafka stores the same credentials
in ZooKeeper or its metadata log and changes them with AlterUserScramCredentials; here the
broker's directory is written directly, so run this on the broker's machine.
A bad argument is one line and exit code 2.

Spec rules: SEC-11 (spec/security.md).
"""

from __future__ import annotations

import argparse
import os
import re

from kafka_ref.cli import UsageError
from kafka_ref.security.credentials import CredentialStore
from kafka_ref.security.scram import HASHES, MIN_ITERATIONS, ScramCredential, make_credential

_ITEM = re.compile(r"\s*([A-Z0-9-]+)\s*=\s*\[([^\]]*)\]\s*(?:,|$)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True, metavar="DIR", help="the broker's log dir")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true", help="add or delete credentials")
    action.add_argument("--describe", action="store_true", help="list users and mechanisms")
    parser.add_argument("--entity-name", metavar="USER", help="the user")
    parser.add_argument(
        "--add-config", metavar="'MECH=[password=...]'", help="SCRAM-SHA-256/512 credentials"
    )
    parser.add_argument("--delete-config", metavar="MECH,...", help="mechanisms to remove")


def parse_add_config(text: str) -> dict[str, ScramCredential]:
    """`SCRAM-SHA-256=[iterations=8192,password=x],...` -> mechanism -> new credential."""
    credentials: dict[str, ScramCredential] = {}
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
        try:
            iterations = int(options.get("iterations", MIN_ITERATIONS))
            credentials[mechanism] = make_credential(mechanism, options["password"], iterations)
        except ValueError as err:  # the message names the rule, never the password
            raise UsageError(f"{mechanism}: {err}") from None
    if position != len(text) or not credentials:
        raise UsageError("--add-config is not 'SCRAM-SHA-256=[iterations=N,password=P],...'")
    return credentials


def run(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.data_dir):
        raise UsageError(f"--data-dir {args.data_dir}: no such directory")
    store = CredentialStore(args.data_dir)
    if args.describe:
        for user, mechanisms in store.describe().items():
            if args.entity_name in (None, user):
                listed = ",".join(f"{m}=iterations={n}" for m, n in sorted(mechanisms.items()))
                print(f"SCRAM credential configs for user-principal '{user}' are {listed}")
        return 0
    if not args.entity_name:
        raise UsageError("--alter needs --entity-name USER")
    if not args.add_config and not args.delete_config:
        raise UsageError("--alter needs --add-config or --delete-config")
    added = parse_add_config(args.add_config) if args.add_config else {}
    deleted = tuple(m.strip() for m in (args.delete_config or "").split(",") if m.strip())
    store.alter(args.entity_name, added, deleted)
    print(f"Completed updating config for user {args.entity_name}.")
    return 0

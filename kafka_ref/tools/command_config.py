"""`--command-config FILE`: the client properties a tool connects with, as Kafka's tools take them.

A tool pointed at a secured listener must speak its security protocol. Kafka's tools read
the client's security settings from a properties file (`kafka-topics.sh --command-config`,
`kafka-console-producer.sh --producer.config`, `kafka-console-consumer.sh
--consumer.config`); kafka-ref's tools do the same:

    # client.properties
    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="alice" password="alice-secret";
    ssl.truststore.location=/etc/kafka/ca.pem

    kafka-ref topics --bootstrap-server broker:9094 --command-config client.properties --list

Only the security properties (security.*, sasl.*, ssl.*) are read; any other key is named
on stderr as ignored, since a tool's own flags set the rest. A file that cannot be read or
a property that cannot work is a usage error (one line, exit 2) naming the key; a broker
that refuses the credentials ends the tool with one line naming mechanism and user, never
the password (exit 1).

Rules: TOOLS-28 (spec/tools.md); SEC-25 (spec/security.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.security.client_security import (
    PLAINTEXT,
    ClientSecurity,
    ClientSecurityError,
    is_security_key,
)
from kafka_ref.server.kafka_config import parse_properties


def add_command_config(parser: argparse.ArgumentParser, *aliases: str) -> None:
    """--command-config FILE (and the tool's Kafka aliases, e.g. --producer.config)."""
    parser.add_argument(
        "--command-config",
        *aliases,
        dest="command_config",
        metavar="FILE",
        help="client properties: security.protocol, sasl.*, ssl.* (Kafka's names)",
    )


def read_command_config(path: str) -> dict[str, str]:
    """The properties of a `--command-config` file; UsageError if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse_properties(f.read())
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or err
        raise UsageError(f"--command-config {path}: cannot read it: {reason}") from None


def command_security(args: argparse.Namespace) -> ClientSecurity:
    """The security settings of `--command-config` (PLAINTEXT without one); UsageError if
    the file cannot be read or its properties cannot work."""
    path = args.command_config
    if path is None:
        return PLAINTEXT
    props = read_command_config(path)
    ignored = sorted(key for key in props if not is_security_key(key))
    if ignored:
        print(
            f"kafka-ref: --command-config {path}: ignoring {', '.join(ignored)} "
            "(only security.*, sasl.* and ssl.* properties are read)",
            file=sys.stderr,
        )
    try:
        return ClientSecurity.from_properties(props)
    except ClientSecurityError as err:
        raise UsageError(f"--command-config {path}: {err}") from None

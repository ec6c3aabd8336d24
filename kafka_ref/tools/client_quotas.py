"""`kafka-ref configs --entity-type users|clients`: client quotas, as kafka-configs.sh sets them.

    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --alter \\
        --add-config producer_byte_rate=1048576 --entity-type clients --entity-name app
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --alter \\
        --add-config consumer_byte_rate=2097152,request_percentage=50 \\
        --entity-type users --entity-name alice --entity-type clients --entity-default
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --alter \\
        --delete-config producer_byte_rate --entity-type clients --entity-name app
    kafka-ref configs --bootstrap-server 127.0.0.1:9092 --describe --entity-type users

The entity is a user, a client id, or a user and a client id: one `--entity-type` each,
each followed by its `--entity-name` or by `--entity-default` (the `<default>` entity,
KIP-55). `--alter` sends one AlterClientQuotas request (KIP-546) and prints `Completed
updating config for user alice.` (`Completed updating default config for users in the
cluster.` for a default). `--describe` sends DescribeClientQuotas with a strict filter
(only entities of exactly those types; without a name, every entity of the type) and
prints one line per entity, `Quota configs for user-principal 'alice', client-id 'app' are
producer_byte_rate=1048576.0` (`the default client-id` for a default), as kafka-configs.sh
does. A bad argument is one line and exit code 2; a refused change one line and exit code 1.

Spec rules: QUOTA-11 (spec/quotas.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.client.admin_quotas import ANY, DEFAULT_NAME, EXACT
from kafka_ref.errors import KafkaError
from kafka_ref.quota.entity import CLIENT_ID, USER, QuotaEntity
from kafka_ref.tools.command_config import command_security

ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}
_SHOWN = {USER: "user-principal", CLIENT_ID: "client-id"}


def _entity_text(entity: QuotaEntity) -> str:
    return ", ".join(
        f"{_SHOWN[t]} '{n}'" if n is not None else f"the default {_SHOWN[t]}"
        for t, n in entity.components()
    )


def _pairs(args: argparse.Namespace) -> list[tuple[str, str | None, bool]]:
    """(entity type, name, named?) per --entity-type, with the name that follows it."""
    types, names = args.entity_type or [], args.entities or []
    if len(types) != len(set(types)) or not set(types) <= set(ENTITY_TYPES):
        raise UsageError("--entity-type: users, clients, or one of each")
    if args.alter and len(names) != len(types):
        raise UsageError("--alter needs an --entity-name or --entity-default per --entity-type")
    if len(names) > len(types):
        raise UsageError("more entity names than --entity-type options")
    padded = [*names, *[""] * (len(types) - len(names))]  # "": every entity of the type
    return [(ENTITY_TYPES[t], n, n != "") for t, n in zip(types, padded, strict=True)]


def _parse_values(text: str) -> dict[str, float]:
    out = {}
    for item in (i.strip() for i in text.split(",") if i.strip()):
        key, eq, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--add-config {item!r} is not KEY=NUMBER") from None
        if not eq or not key.strip():
            raise UsageError(f"--add-config {item!r} is not KEY=NUMBER")
    return out


def run(args: argparse.Namespace) -> int:
    pairs = _pairs(args)
    set_ = _parse_values(args.add_config or "")
    remove = tuple(k.strip() for k in (args.delete_config or "").split(",") if k.strip())
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.alter:
                entity = QuotaEntity.from_components([(t, n) for t, n, _ in pairs])
                admin.alter_client_quotas(entity, set_, remove)
                entity_type, name = args.entity_type[0], pairs[0][1]
                if name is None:
                    print(f"Completed updating default config for {entity_type} in the cluster.")
                else:
                    print(f"Completed updating config for {entity_type[:-1]} {name}.")
                return 0
            components = [
                (t, ANY, None)
                if not named
                else (t, DEFAULT_NAME, None)
                if n is None
                else (t, EXACT, n)
                for t, n, named in pairs
            ]
            found = admin.describe_client_quotas(components, strict=True)
    except KafkaError as err:
        print(f"kafka-ref configs: {err}", file=sys.stderr)
        return 1
    for entity, values in sorted(found.items(), key=lambda item: item[0].path):
        shown = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        print(f"Quota configs for {_entity_text(entity)} are {shown}")
    return 0

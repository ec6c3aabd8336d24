"""The socket server's bounds, by Kafka's names (Kafka: `SocketServerConfigs`).

What a client may cost the broker: the memory its requests hold (`queued.max.request.bytes`,
server/memory_pool.py), what it may send before it has authenticated
(`sasl.server.max.receive.size`), and how many connections it may open, how fast, and keep
idle (server/connection_quotas.py). `KafkaConfig` (server/kafka_config.py) merges these
definitions with the others and calls `validate_socket_server` with the parsed values.

Rules: BROKER-53, BROKER-55, BROKER-56, BROKER-57, BROKER-58, BROKER-59.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_ref.config import ConfigDef
from kafka_ref.server.connection_quotas import UNLIMITED, parse_ip_overrides

SOCKET_SERVER_DEFS = [
    ConfigDef(
        "queued.max.request.bytes",
        "long",
        -1,
        "Bytes of requests held before reading stops (KIP-72); -1: unbounded.",
    ),
    ConfigDef(
        "sasl.server.max.receive.size",
        "int",
        524288,
        "Largest frame before SASL authentication completes.",
        1,
    ),
    ConfigDef("max.connections", "int", UNLIMITED, "Open connections, in all (KIP-402).", 0),
    ConfigDef("max.connections.per.ip", "int", UNLIMITED, "Open connections per address.", 0),
    ConfigDef("max.connections.per.ip.overrides", "list", (), "host:count exceptions."),
    ConfigDef(
        "max.connection.creation.rate", "int", UNLIMITED, "New connections per second (KIP-612).", 0
    ),
    ConfigDef(
        "connections.max.idle.ms",
        "long",
        600000,
        "Close connections idle this long; -1: never.",
        -1,
    ),
]
# Keys that may also be given per listener, as listener.name.<listener>.<key> (Kafka:
# `SocketServer.ListenerReconfigurableConfigs`).
LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate"})


def validate_socket_server(values: Mapping[str, Any]) -> dict[str, int]:
    """Check the keys against each other as Kafka's `KafkaConfig` does; return the parsed
    per-address overrides. Raises ValueError with one readable line."""
    pool, largest = values["queued.max.request.bytes"], values["socket.request.max.bytes"]
    if 0 < pool < largest:  # the pool must hold the largest frame (SimpleMemoryPool)
        raise ValueError(
            f"queued.max.request.bytes ({pool}) must be -1 (unbounded) or at least "
            f"socket.request.max.bytes ({largest})"
        )
    overrides = parse_ip_overrides(values["max.connections.per.ip.overrides"])
    if values["max.connections.per.ip"] == 0 and not overrides:
        raise ValueError(
            "max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set."
        )
    return overrides

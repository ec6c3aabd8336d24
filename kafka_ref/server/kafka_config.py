"""Broker configuration by Kafka's names: `server.properties`, `--override`, defaults.

A Kafka broker is configured with a Java properties file (`config/server.properties`) plus
command-line overrides, every key a dotted name (`log.dirs`, `num.partitions`). Kafka's
class is `KafkaConfig`; it knows every key, its type, default and valid range, and refuses
to start on a bad value. kafka-ref keeps the same names, so a Kafka user's file works.

Every key, its type, default and range is a definition in one table (broker_configs.py);
this module reads a configuration against it: a properties file and overrides, layered
(later wins), each key looked up and each value parsed, then the values checked against
each other (listeners against advertised listeners, the socket server's bounds, the log
defaults and Kafka's coarser time aliases `log.retention.hours|minutes` and
`log.roll.hours`, where the finer unit wins). Keys of Kafka's stock server.properties that
mean nothing here are accepted and reported as unused; security keys may also be given
per listener, as `listener.name.<listener>.<key>` (SEC-1).

Any other key, or a value that does not parse or is out of range, is a `ConfigError` with
one readable line; the CLI turns it into exit code 2 (BROKER-40). Kafka itself only warns
about unknown keys; refusing them catches typos such as `num.partition=3`.

Rules: BROKER-40, BROKER-41, SEC-1.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_ref.config import ConfigDef, LogConfig
from kafka_ref.errors import InvalidConfigError
from kafka_ref.metrics.exporter import parse_metrics_listener
from kafka_ref.security.listeners import (
    EndPoint,
    ListenerError,
    parse_endpoints,
    parse_protocol_map,
)
from kafka_ref.server.broker_configs import (
    BROKER_CONFIGS,
    IGNORED_KEYS,
    LOG_DEFAULTS,
    PASSWORD_KEYS,
)
from kafka_ref.server.socket_server_configs import LISTENER_KEYS, validate_socket_server


class ConfigError(ValueError):
    """A broker configuration that cannot be used: one readable line."""


LISTENER_PREFIX = "listener.name."


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties: `k=v`, `k: v` or `k v`; `#`/`!` comments; `\\` continues."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    """The key ends at the first `=`, `:` or blank; one `=` or `:` after blanks is skipped."""
    i = 0
    while i < len(line) and line[i] not in "=:" and not line[i].isspace():
        i += 1
    key, rest = line[:i], line[i:].lstrip()
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip()
    return key, rest


def listener_key(key: str) -> tuple[str, str, ConfigDef]:
    """`listener.name.<listener>.<key>` -> (LISTENER, key, its definition); the key may
    carry a mechanism prefix (`plain.sasl.jaas.config`)."""
    listener, _, rest = key[len(LISTENER_PREFIX) :].partition(".")
    base = rest.split(".", 1)[1] if rest.endswith(".sasl.jaas.config") else rest
    if not listener or not (
        base.startswith(("ssl.", "sasl."))
        or base in LISTENER_KEYS
        or base == "connections.max.reauth.ms"
    ):
        raise ConfigError(f"unknown broker config {key!r}")
    if base not in BROKER_CONFIGS:
        raise ConfigError(f"unknown broker config {key!r}")
    return listener.upper(), rest, BROKER_CONFIGS[base]


@dataclasses.dataclass
class KafkaConfig:
    """The parsed broker configuration (Kafka: `KafkaConfig`)."""

    values: dict[str, Any]
    overrides: dict[str, str]  # the raw key=value pairs given, for DescribeConfigs
    ignored: list[str] = dataclasses.field(default_factory=list)
    controller_listener_names: tuple[str, ...] = ("CONTROLLER",)
    listener_overrides: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    originals: dict[str, str] = dataclasses.field(default_factory=dict)  # every raw key given

    @classmethod
    def from_props(cls, *layers: Mapping[str, Any]) -> KafkaConfig:
        """Merge layers (later wins), validate every key and value; raise ConfigError."""
        merged: dict[str, str] = {}
        for layer in layers:
            merged.update({str(k).strip(): str(v).strip() for k, v in layer.items()})
        values = {name: d.default for name, d in BROKER_CONFIGS.items()}
        ignored, per_listener = [], {}
        for key, raw in merged.items():
            if key in IGNORED_KEYS:
                ignored.append(key)
                continue
            if key.startswith(LISTENER_PREFIX):  # listener.name.<listener>.<key>
                listener, rest, definition = listener_key(key)
                per_listener.setdefault(listener, {})[rest] = parse_value(definition, raw)
                continue
            definition = BROKER_CONFIGS.get(key)
            if definition is None:
                raise ConfigError(f"unknown broker config {key!r}")
            values[key] = parse_value(definition, raw)
        overrides = {
            k: v
            for k, v in merged.items()
            if k not in IGNORED_KEYS and not k.startswith(LISTENER_PREFIX)
        }
        controllers = tuple(
            n.strip() for n in merged.get("controller.listener.names", "CONTROLLER").split(",")
        )
        config = cls(values, overrides, ignored, controllers, per_listener, merged)
        config.validate()
        return config

    @classmethod
    def from_file(cls, path: str | os.PathLike, *more: Mapping[str, Any]) -> KafkaConfig:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as err:
            raise ConfigError(f"cannot read {path}: {err.strerror}") from None
        return cls.from_props(parse_properties(text), *more)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def validate(self) -> None:
        if "broker" in self.roles or not self.roles:  # a controller alone has no client listener
            self.advertised_endpoints()  # parses listeners too, raising ConfigError
            self.inter_broker_listener  # noqa: B018
        self.log_config()
        self.metrics_address  # noqa: B018
        self.ip_overrides  # noqa: B018

    @property
    def ip_overrides(self) -> dict[str, int]:
        """`max.connections.per.ip.overrides` by address; the socket server's keys checked
        against each other (BROKER-53, BROKER-57)."""
        try:
            return validate_socket_server(self.values)
        except ValueError as err:
            raise ConfigError(str(err)) from None

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """`metrics.listener` as (host, port); None when metrics are not served (MET-7)."""
        try:
            return parse_metrics_listener(self["metrics.listener"])
        except ValueError as err:
            raise ConfigError(str(err)) from None

    # ------------------------------------------------------------------ derived values
    @property
    def roles(self) -> frozenset[str]:
        """KRaft's `process.roles` (broker, controller); empty when not set (ZooKeeper mode,
        or kafka-ref's single broker with embedded metadata)."""
        roles = self.originals.get("process.roles", "")
        return frozenset(r.strip() for r in roles.split(",") if r.strip())

    @property
    def broker_id(self) -> int:
        return self["node.id"] if self["node.id"] >= 0 else self["broker.id"]

    @property
    def log_dirs(self) -> tuple[str, ...]:
        return self["log.dirs"] or (self["log.dir"],)

    @property
    def data_dir(self) -> str:
        """The first log dir: it also holds the metadata (Kafka's metadata.log.dir default)."""
        return self.log_dirs[0]

    def endpoints(self, key: str = "listeners") -> list[EndPoint]:
        """The client listeners of `listeners` (or `advertised.listeners`), in order."""
        try:
            protocols = parse_protocol_map(self["listener.security.protocol.map"])
            return parse_endpoints(self[key], protocols, self.controller_listener_names)
        except ListenerError as err:
            raise ConfigError(str(err)) from None

    def advertised_endpoints(self) -> list[EndPoint]:
        """Per listener, where clients reach it: `advertised.listeners` by name, else the
        listener itself; a wildcard host advertises 127.0.0.1 (SEC-2)."""
        listening = self.endpoints()
        advertised = (
            {e.listener: e for e in self.endpoints("advertised.listeners")}
            if (self["advertised.listeners"])
            else {}
        )
        unknown = advertised.keys() - {e.listener for e in listening}
        if unknown:
            raise ConfigError(
                f"advertised.listeners names {', '.join(sorted(unknown))}, "
                f"which is not in listeners"
            )
        result = []
        for endpoint in listening:
            chosen = advertised.get(endpoint.listener, endpoint)
            if chosen.host in ("", "0.0.0.0", "::"):
                chosen = dataclasses.replace(chosen, host="127.0.0.1")
            result.append(chosen)
        return result

    @property
    def inter_broker_listener(self) -> str:
        """`inter.broker.listener.name`, else the listener named like
        `security.inter.broker.protocol` (PLAINTEXT). As in Kafka, it must be one of the
        listeners; brokers reach each other there with its security protocol (SEC-20)."""
        name = self["inter.broker.listener.name"] or self["security.inter.broker.protocol"]
        name = name.upper()
        if name not in {e.listener for e in self.endpoints()}:
            raise ConfigError(
                f"inter.broker.listener.name {name} is not among the listeners "
                f"{', '.join(self['listeners'])}"
            )
        return name

    def listener_get(self, listener: str, key: str) -> Any:
        """A security key for one listener: `listener.name.<listener>.<key>`, else `<key>`."""
        own = self.listener_overrides.get(listener.upper(), {})
        return own[key] if key in own else self.values.get(key)

    def log_config(self) -> LogConfig:
        """The broker's default LogConfig from the `log.*` keys (and the time aliases)."""
        props: dict[str, Any] = {}
        for key in self.overrides:
            if key in LOG_DEFAULTS:
                props[LOG_DEFAULTS[key]] = self.values[key]
        if "log.retention.ms" not in self.overrides:
            if "log.retention.minutes" in self.overrides:
                props["retention.ms"] = _scaled(self["log.retention.minutes"], 60_000)
            elif "log.retention.hours" in self.overrides:
                props["retention.ms"] = _scaled(self["log.retention.hours"], 3_600_000)
        if "log.roll.ms" not in self.overrides and "log.roll.hours" in self.overrides:
            props["segment.ms"] = self["log.roll.hours"] * 3_600_000
        if "log.roll.jitter.ms" not in self.overrides and "log.roll.jitter.hours" in self.overrides:
            props["segment.jitter.ms"] = self["log.roll.jitter.hours"] * 3_600_000
        try:
            return LogConfig.from_properties(props).validate_values()
        except InvalidConfigError as err:
            raise ConfigError(str(err.args[0] if err.args else err)) from None

    def describe(self) -> Iterable[tuple[str, Any, bool]]:
        """(name, value, is_default) of every broker config, for DescribeConfigs."""
        log_config = self.log_config().to_properties()
        for name in sorted(BROKER_CONFIGS):
            value = None if name in PASSWORD_KEYS else self.values[name]
            if name in LOG_DEFAULTS:
                value = log_config[LOG_DEFAULTS[name]]
            yield name, value, name not in self.overrides


def config_string(value: Any) -> str | None:
    """A value the way Kafka prints it: true/false, lists comma-separated."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_value(definition: ConfigDef, raw: str) -> Any:
    """A raw value of a broker config, parsed; ConfigError with one readable line."""
    try:
        return definition.parse(raw)
    except InvalidConfigError as err:  # a password key's value is never in the message
        message = str(err.args[0] if err.args else err)
        raise ConfigError(
            f"{definition.name}: bad value" if definition.name in PASSWORD_KEYS else message
        ) from None


def _scaled(value: int, unit_ms: int) -> int:
    return -1 if value < 0 else value * unit_ms

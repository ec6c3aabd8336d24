"""Broker configuration by Kafka's names: `server.properties`, `--override`, defaults.

A Kafka broker is configured with a Java properties file (`config/server.properties`) plus
command-line overrides, every key a dotted name (`log.dirs`, `num.partitions`). Kafka's
class is `KafkaConfig`; it knows every key, its type, default and valid range, and refuses
to start on a bad value. kafka-ref keeps the same names, so a Kafka user's file works:

* broker keys (`broker.id` / `node.id`, `listeners`, `advertised.listeners`, `log.dirs` /
  `log.dir`, `num.partitions`, `default.replication.factor`, `auto.create.topics.enable`,
  `delete.topic.enable`, `socket.request.max.bytes`, `num.io.threads`, ...);
* every topic config's broker default (`log.segment.bytes`, `log.retention.ms`,
  `message.max.bytes`, ...: `config.broker_name`), plus Kafka's coarser time aliases
  `log.retention.hours|minutes` and `log.roll.hours` (the finer unit wins, as in Kafka);
* the group coordinator's keys (`group.min.session.timeout.ms`, `group.max.session.timeout.ms`,
  `group.initial.rebalance.delay.ms`, `group.max.size`, `offsets.topic.num.partitions`,
  `offsets.topic.replication.factor` (capped at the live brokers when the topic is created),
  `offsets.topic.segment.bytes`, `offsets.commit.timeout.ms`, `offsets.retention.minutes`,
  `offsets.retention.check.interval.ms`, `offset.metadata.max.bytes`), with Kafka's defaults;
* the transaction coordinator's keys (`transaction.state.log.num.partitions`,
  `transaction.state.log.replication.factor` and `transaction.state.log.min.isr`, both
  capped when the topic is created, `transaction.max.timeout.ms`,
  `transaction.partition.verification.enable` for KIP-890's check, ...);
* ZooKeeper mode (cluster/zk_metadata.py): `zookeeper.connect` (`host:port[/chroot]`; empty,
  the default, means the single-broker embedded mode), `zookeeper.session.timeout.ms`
  (how long a dead broker stays registered), `broker.rack` (for rack-aware placement);
* listeners and security (security/): `listeners`, `advertised.listeners`,
  `listener.security.protocol.map`, `inter.broker.listener.name`, the `ssl.*` keys (PEM
  keystores), `sasl.enabled.mechanisms`, `sasl.jaas.config`, `connections.max.reauth.ms`,
  each also per listener as `listener.name.<listener>.<key>` (SEC-1), how brokers log in
  to each other (`sasl.mechanism.inter.broker.protocol`,
  `ssl.endpoint.identification.algorithm`, SEC-21), and authorization's
  `authorizer.class.name`, `super.users`, `allow.everyone.if.no.acl.found` (SEC-16). Password keys
  (`ssl.key.password`, `sasl.jaas.config`, ...) are never shown: DescribeConfigs answers
  them as sensitive, with no value;
* the socket server's bounds (server/socket_server_configs.py): `queued.max.request.bytes`,
  `sasl.server.max.receive.size`, `max.connections` and `max.connection.creation.rate` (also
  per listener), `max.connections.per.ip` and its overrides, `connections.max.idle.ms`;
* `metrics.listener` (kafka-ref's own): `http://HOST:PORT` where the broker serves its
  metrics for Prometheus, under the names the JMX exporter gives Kafka's MBeans
  (kafka_ref/metrics/); empty, the default, serves none;
* keys of Kafka's stock server.properties that mean nothing here (`process.roles`,
  `controller.quorum.voters`, ...) are accepted and reported as unused; `listeners` may
  also name KRaft's `CONTROLLER` listener (`controller.listener.names`), which is skipped.

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

from kafka_ref.config import TOPIC_CONFIGS, ConfigDef, LogConfig, broker_name
from kafka_ref.errors import InvalidConfigError
from kafka_ref.metrics.exporter import parse_metrics_listener
from kafka_ref.security.authorizer import AUTHORIZER_NAMES
from kafka_ref.security.listeners import (
    EndPoint,
    ListenerError,
    parse_endpoints,
    parse_protocol_map,
)
from kafka_ref.server.socket_server_configs import (
    LISTENER_KEYS,
    SOCKET_SERVER_DEFS,
    validate_socket_server,
)


class ConfigError(ValueError):
    """A broker configuration that cannot be used: one readable line."""


# Broker-level keys (Kafka: KafkaConfig / ServerConfigs / SocketServerConfigs ...).
_BROKER_DEFS = [
    ConfigDef("broker.id", "int", 0, "This broker's id (node.id in KRaft).", 0),
    ConfigDef("node.id", "int", -1, "KRaft name of broker.id; wins when set.", -1),
    ConfigDef("broker.rack", "string", None, "This broker's rack (rack-aware placement)."),
    ConfigDef("zookeeper.connect", "string", "", "host:port[/chroot]; empty: embedded mode."),
    ConfigDef("zookeeper.session.timeout.ms", "int", 18000, "ZooKeeper session timeout.", 1000),
    ConfigDef("listeners", "list", ("PLAINTEXT://127.0.0.1:9092",), "Where to listen."),
    ConfigDef("advertised.listeners", "list", (), "Where clients reach us (default listeners)."),
    ConfigDef(
        "listener.security.protocol.map",
        "list",
        ("PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"),
        "Listener name -> security protocol.",
    ),
    ConfigDef("inter.broker.listener.name", "string", None, "The brokers' own listener."),
    ConfigDef("security.inter.broker.protocol", "string", "PLAINTEXT", "Its default, by protocol."),
    ConfigDef("log.dirs", "list", (), "The data directories (overrides log.dir)."),
    ConfigDef("log.dir", "string", "/tmp/kafka-logs", "The data directory if log.dirs is unset."),
    ConfigDef("num.partitions", "int", 1, "Partitions of an auto-created topic.", 1),
    ConfigDef("default.replication.factor", "int", 1, "Replicas of an auto-created topic.", 1),
    ConfigDef("auto.create.topics.enable", "boolean", True, "Create topics on Metadata."),
    ConfigDef("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
    ConfigDef("socket.request.max.bytes", "int", 104857600, "Largest request frame.", 1),
    ConfigDef("num.io.threads", "int", 8, "Request handler workers.", 1),
    ConfigDef("queued.max.requests", "int", 500, "Requests queued for the handlers.", 1),
    ConfigDef("metrics.listener", "string", "", "http://HOST:PORT serving Prometheus metrics."),
    # Client quotas (Kafka's QuotaConfigs, KIP-13): the windows a client's rate is measured over.
    ConfigDef("quota.window.num", "int", 11, "Samples a quota's rate keeps.", 2),
    ConfigDef("quota.window.size.seconds", "int", 1, "Length of one quota sample.", 1),
    ConfigDef("log.retention.check.interval.ms", "long", 300000, "Retention check period.", 1),
    ConfigDef("log.cleaner.enable", "boolean", True, "Run the log cleaner (compaction)."),
    ConfigDef("log.cleaner.backoff.ms", "long", 15000, "Cleaner check period.", 0),
    ConfigDef("log.flush.scheduler.interval.ms", "long", 1000, "Flush check period.", 1),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", "int", 60000, "Checkpoint period.", 0),
    ConfigDef("log.retention.hours", "int", 168, "retention.ms in hours (ms wins).", -1),
    ConfigDef("log.retention.minutes", "int", None, "retention.ms in minutes (ms wins)."),
    ConfigDef("log.roll.hours", "int", 168, "segment.ms in hours (ms wins).", 1),
    ConfigDef("log.roll.jitter.hours", "int", 0, "segment.jitter.ms in hours.", 0),
    ConfigDef(
        "producer.id.expiration.ms", "int", 86400000, "Idle time before a PID is forgotten.", 1
    ),
    ConfigDef(
        "producer.id.expiration.check.interval.ms", "int", 600000, "PID expiration period.", 1
    ),
    # Replication (ZooKeeper mode; Kafka's ReplicationConfigs). replica.truncation is
    # kafka-ref's own: the pre-0.11 high-watermark rule is kept to show what it loses.
    ConfigDef("replica.lag.time.max.ms", "long", 30000, "Lag before leaving the ISR.", 1),
    ConfigDef("replica.fetch.wait.max.ms", "int", 500, "A follower fetch's max wait.", 0),
    ConfigDef("replica.fetch.min.bytes", "int", 1, "A follower fetch's min bytes.", 1),
    ConfigDef("replica.fetch.max.bytes", "int", 1048576, "Follower bytes per partition.", 0),
    ConfigDef("replica.fetch.response.max.bytes", "int", 10485760, "Follower bytes per fetch.", 0),
    ConfigDef("replica.fetch.backoff.ms", "int", 1000, "Follower wait after an error.", 0),
    ConfigDef("replica.socket.timeout.ms", "int", 30000, "Follower request timeout.", 1),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "HW checkpoints.", 1),
    ConfigDef("replica.truncation", "string", "leader-epoch", "leader-epoch or high-watermark."),
    # The controller's automatic preferred leader elections (Kafka: ReplicationConfigs).
    ConfigDef("auto.leader.rebalance.enable", "boolean", True, "Rebalance leaders by itself."),
    ConfigDef("leader.imbalance.check.interval.seconds", "long", 300, "Imbalance check period.", 1),
    ConfigDef(
        "leader.imbalance.per.broker.percentage", "int", 10, "Imbalance that triggers it.", 0
    ),
    # The group coordinator (Kafka: GroupCoordinatorConfig) and its __consumer_offsets topic.
    ConfigDef("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout.", 0),
    ConfigDef("group.max.session.timeout.ms", "int", 1800000, "Largest session timeout.", 0),
    ConfigDef(
        "group.initial.rebalance.delay.ms", "int", 3000, "Wait for more joins to an empty group.", 0
    ),
    ConfigDef("group.max.size", "int", 2**31 - 1, "Most members of one group.", 1),
    ConfigDef("offsets.topic.num.partitions", "int", 50, "Partitions of __consumer_offsets.", 1),
    ConfigDef("offsets.topic.replication.factor", "int", 3, "Replicas of __consumer_offsets.", 1),
    ConfigDef(
        "offsets.topic.segment.bytes", "int", 104857600, "segment.bytes of __consumer_offsets.", 1
    ),
    ConfigDef("offsets.commit.timeout.ms", "int", 5000, "A coordinator write's ISR wait.", 1),
    ConfigDef("offsets.retention.minutes", "int", 10080, "Keep offsets of empty groups.", 1),
    ConfigDef(
        "offsets.retention.check.interval.ms", "long", 600000, "Offset expiration period.", 1
    ),
    ConfigDef("offset.metadata.max.bytes", "int", 4096, "Longest commit metadata.", 0),
    # The transaction coordinator (Kafka: TransactionLogConfig, TransactionStateManagerConfig).
    ConfigDef(
        "transaction.state.log.num.partitions", "int", 50, "Partitions of __transaction_state.", 1
    ),
    ConfigDef(
        "transaction.state.log.replication.factor", "int", 3, "Replicas of __transaction_state.", 1
    ),
    ConfigDef(
        "transaction.state.log.segment.bytes", "int", 104857600, "__transaction_state segments.", 1
    ),
    ConfigDef(
        "transaction.state.log.min.isr", "int", 2, "min.insync.replicas of __transaction_state.", 1
    ),
    ConfigDef("transaction.max.timeout.ms", "int", 900000, "Longest transaction timeout.", 1),
    ConfigDef(
        "transaction.partition.verification.enable",
        "boolean",
        True,
        "Ask the coordinator before a transaction's first write to a partition (KIP-890).",
    ),
    ConfigDef(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "int",
        10000,
        "How often timed-out transactions are aborted.",
        1,
    ),
    ConfigDef(
        "transactional.id.expiration.ms",
        "int",
        604800000,
        "Idle time before the coordinator forgets a transactional id.",
        1,
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "int",
        3600000,
        "How often expired transactional ids are removed.",
        1,
    ),
    # Security (Kafka: SslConfigs, SaslConfigs, BrokerSecurityConfigs; security/).
    ConfigDef("ssl.keystore.type", "string", "PEM", "Only PEM (KIP-651).", choices=("PEM",)),
    ConfigDef("ssl.keystore.location", "string", None, "PEM file: private key + chain."),
    ConfigDef("ssl.keystore.key", "string", None, "Inline PEM private key."),
    ConfigDef("ssl.keystore.certificate.chain", "string", None, "Inline PEM certificates."),
    ConfigDef("ssl.keystore.password", "string", None, "Unused with PEM files."),
    ConfigDef("ssl.key.password", "string", None, "Password of an encrypted private key."),
    ConfigDef("ssl.truststore.type", "string", "PEM", "Only PEM (KIP-651).", choices=("PEM",)),
    ConfigDef("ssl.truststore.location", "string", None, "PEM file of CA certificates."),
    ConfigDef("ssl.truststore.certificates", "string", None, "Inline PEM CA certificates."),
    ConfigDef(
        "ssl.client.auth", "string", "none", "mTLS.", choices=("required", "requested", "none")
    ),
    ConfigDef(
        "ssl.endpoint.identification.algorithm",
        "string",
        "https",
        "Check the server's host name (https) or not (empty).",
        choices=("https", ""),
    ),
    ConfigDef("sasl.enabled.mechanisms", "list", ("GSSAPI",), "SASL mechanisms offered."),
    ConfigDef(
        "sasl.mechanism.inter.broker.protocol",
        "string",
        "GSSAPI",
        "Brokers authenticate to each other with it.",
    ),
    ConfigDef("sasl.jaas.config", "string", None, "JAAS login module and options."),
    ConfigDef("connections.max.reauth.ms", "long", 0, "SASL session lifetime (KIP-368).", 0),
    # Authorization (Kafka: AclAuthorizer's keys; security/authorizer.py).
    ConfigDef(
        "authorizer.class.name", "string", "", "ACLs on; empty: off.", choices=AUTHORIZER_NAMES
    ),
    ConfigDef("super.users", "string", "", "Principals allowed everything, ';'-separated."),
    ConfigDef("allow.everyone.if.no.acl.found", "boolean", False, "Resources without ACLs: open."),
    *SOCKET_SERVER_DEFS,
]
BROKER_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _BROKER_DEFS}
# Never shown (Kafka: type PASSWORD): DescribeConfigs answers them as sensitive, with no value.
PASSWORD_KEYS = frozenset(
    {"ssl.keystore.key", "ssl.keystore.password", "ssl.key.password", "sasl.jaas.config"}
)
LISTENER_PREFIX = "listener.name."
# topic config's broker name -> topic config name (log.segment.bytes -> segment.bytes)
LOG_DEFAULTS: dict[str, str] = {broker_name(name): name for name in TOPIC_CONFIGS}
for _name, _topic in LOG_DEFAULTS.items():
    _d = TOPIC_CONFIGS[_topic]
    BROKER_CONFIGS.setdefault(_name, dataclasses.replace(_d, name=_name))

# Keys of Kafka's stock server.properties that a single embedded broker does not use.
IGNORED_KEYS = frozenset(
    {
        "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
        "controller.listener.names", "num.network.threads", "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "zookeeper.connection.timeout.ms", "metadata.log.dir", "log.cleaner.threads",
        "num.replica.fetchers",
    }
)  # fmt: skip


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


def _listener_key(key: str) -> tuple[str, str, ConfigDef]:
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
                listener, rest, definition = _listener_key(key)
                per_listener.setdefault(listener, {})[rest] = parse_value(definition, raw)
                continue
            definition = BROKER_CONFIGS.get(key)
            if definition is None:
                raise ConfigError(f"unknown broker config {key!r}")
            values[key] = parse_value(definition, raw)
        overrides = {
            k: v for k, v in merged.items()
            if k not in IGNORED_KEYS and not k.startswith(LISTENER_PREFIX)
        }  # fmt: skip
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
        advertised = {e.listener: e for e in self.endpoints("advertised.listeners")} if (
            self["advertised.listeners"]
        ) else {}  # fmt: skip
        unknown = advertised.keys() - {e.listener for e in listening}
        if unknown:
            raise ConfigError(f"advertised.listeners names {', '.join(sorted(unknown))}, "
                              f"which is not in listeners")  # fmt: skip
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
            return LogConfig.from_properties(props)
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
        raise ConfigError(f"{definition.name}: bad value" if definition.name in PASSWORD_KEYS
                          else message) from None  # fmt: skip


def _scaled(value: int, unit_ms: int) -> int:
    return -1 if value < 0 else value * unit_ms

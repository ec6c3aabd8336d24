"""Dynamic broker configs: a running broker's configuration changed without a restart (KIP-226).

A broker reads `server.properties` once, at start. Some of its settings, though, an
operator wants to change on a live cluster: a retention default that fills the disks, the
number of request handlers. Kafka (KIP-226, `DynamicBrokerConfig`) lets an admin client
alter them with AlterConfigs or IncrementalAlterConfigs on resource type BROKER, at two
levels, stored where every broker finds them:

* **per broker**, resource name `"1"`: `/config/brokers/1` in ZooKeeper;
* **cluster default**, resource name `""`: `/config/brokers/<default>`.

A config's value in force is the first layer that sets it (CONFIG-4):

    per-broker dynamic  >  cluster-default dynamic  >  static (server.properties)  >  default

and DescribeConfigs names that layer as the entry's source (DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG), with the whole chain
as synonyms when asked. A layer that sets a key also hides that key's *synonyms* below it:
`log.retention.ms` set dynamically wins over a static `log.retention.hours` (Kafka:
`DynamicBrokerConfig.overrideProps`, `brokerConfigSynonyms`).

Which keys may be set, and where, is Kafka's decision, checked in Kafka's order
(`DynamicBrokerConfig.validateConfigs`; CONFIG-5, CONFIG-9):

1. a key Kafka knows as a broker config that is not dynamically updatable
   (`num.partitions`, `log.dirs`, ...) is INVALID_REQUEST "Cannot update these configs
   dynamically: [num.partitions]";
2. a keystore or truststore key without a listener prefix (`ssl.keystore.location`) is
   "These security configs can be dynamically updated only per-listener using the listener
   prefix: [...]": a store belongs to one listener, `listener.name.<listener>.ssl.*`;
3. a value of a key kafka-ref knows must parse as its type;
4. at the cluster default (resource name ""), the keys Kafka keeps per broker (listeners,
   `sasl.*`, `ssl.*`, `cordoned.log.dirs`, and every `listener.name.<l>.<key>` but the
   connection limits) are "Cannot update these configs at default cluster level, broker id
   must be specified: [...]".

Every other key is accepted and stored: Kafka's other dynamic keys (`AllDynamicConfigs`,
below as `KAFKA_DYNAMIC_CONFIGS`), every `listener.name.<listener>.<key>` (a listener's SASL
JAAS config `listener.name.sasl_plaintext.plain.sasl.jaas.config`, its keystore, its
`sasl.enabled.mechanisms`), and keys Kafka does not know, which Kafka stores too. kafka-ref
*applies* those it has (CONFIG-6, CONFIG-10):

* every topic config's broker default (`log.retention.ms`, `log.segment.bytes`,
  `min.insync.replicas`, `message.max.bytes`, ...; Kafka's `DynamicLogConfig`): every
  live log without a topic override takes the new default;
* `num.io.threads` (Kafka's `DynamicThreadPool`): request handlers are added or removed;
* `log.cleaner.backoff.ms` (Kafka's `LogCleaner` reconfigurable): the cleaner restarts with
  the new pause;
* `producer.id.expiration.ms` and `transaction.partition.verification.enable` (Kafka's
  `DynamicProducerStateManagerConfig`): read at their next use;
* a listener's security (Kafka's `DynamicListenerConfig` and the channel builders'
  reconfiguration): `sasl.enabled.mechanisms`, the SASL JAAS configs (PLAIN's users),
  `connections.max.reauth.ms` and the keystore and truststore of a listener, plain or
  under `listener.name.<listener>.`; new connections authenticate with the new settings,
  established ones keep theirs, as in Kafka. A change that would leave a listener unusable
  (a keystore that does not load, PLAIN without users) is INVALID_REQUEST and nothing
  changes;
* `cordoned.log.dirs` (KIP-1066): the log directories that take no new partition.

The other stored keys (`background.threads`, `num.network.threads`, the SSL cipher
settings, ...) are kept and described, but change nothing in kafka-ref.

`DynamicBrokerConfig` holds the layers and the broker's live `KafkaConfig`, which it
updates *in place* (Kafka: `KafkaConfig.updateCurrentConfig`), so that every part holding
the config reads the new values; parts that must act on a change (resize a pool, reopen
the logs' configs) register a *reconfigurable* for their keys. A stored layer that no
longer validates (a key kafka-ref cannot change, a bad value) is logged and skipped key by
key, as Kafka's `fromPersistentProps` does: a broker never fails to start over it.

Rules: CONFIG-4, CONFIG-5, CONFIG-6, CONFIG-9, CONFIG-10.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping

from kafka_ref.cluster.config_changes import DEFAULT_ENTITY
from kafka_ref.cluster.topic_requests import TopicAdministration
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.log_manager import LogManager
from kafka_ref.server.add_partitions_manager import AddPartitionsToTxnManager
from kafka_ref.server.broker_configs import (
    BROKER_CONFIGS,
    IGNORED_KEYS,
    LOG_DEFAULTS,
    PASSWORD_KEYS,
)
from kafka_ref.server.kafka_config import (
    LISTENER_PREFIX,
    ConfigError,
    KafkaConfig,
    config_string,
    listener_key,
    parse_value,
)
from kafka_ref.server.request_channel import RequestHandlerPool

logger = logging.getLogger("kafka_ref.server.dynamic_config")

# Kafka's ConfigEntry.ConfigSource, as DescribeConfigs numbers them.
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

# Kafka's dynamically updatable broker keys (`DynamicBrokerConfig.AllDynamicConfigs`,
# Kafka 4.4): the other keys Kafka knows are refused (CONFIG-5).
KAFKA_DYNAMIC_CONFIGS = frozenset(
    [
        "background.threads",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.type",
        "compression.zstd.level",
        "config.providers",
        "cordoned.log.dirs",
        "errors.deadletterqueue.auto.create.topics.enable",
        "errors.deadletterqueue.topic.name.prefix",
        "follower.fetch.last.tiered.offset.enable",
        "follower.replication.throttled.rate",
        "group.consumer.assignment.interval.ms",
        "group.consumer.assignor.offload.enable",
        "group.coordinator.cached.buffer.max.bytes",
        "group.share.assignment.interval.ms",
        "group.share.assignor.offload.enable",
        "group.streams.assignment.interval.ms",
        "group.streams.assignor.offload.enable",
        "leader.replication.throttled.rate",
        "listener.security.protocol.map",
        "listeners",
        "log.cleaner.backoff.ms",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.threads",
        "log.cleanup.policy",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.index.interval.bytes",
        "log.index.size.max.bytes",
        "log.local.retention.bytes",
        "log.local.retention.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.type",
        "log.preallocate",
        "log.remote.copy.lag.bytes",
        "log.remote.copy.lag.ms",
        "log.retention.bytes",
        "log.retention.ms",
        "log.roll.jitter.ms",
        "log.roll.ms",
        "log.segment.bytes",
        "log.segment.delete.delay.ms",
        "max.connection.creation.rate",
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "max.decompressed.message.bytes",
        "message.max.bytes",
        "metric.reporters",
        "min.insync.replicas",
        "num.io.threads",
        "num.network.threads",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "principal.builder.class",
        "producer.id.expiration.ms",
        "remote.fetch.max.wait.ms",
        "remote.list.offsets.request.timeout.ms",
        "remote.log.index.file.cache.total.size.bytes",
        "remote.log.manager.copier.thread.pool.size",
        "remote.log.manager.copy.max.bytes.per.second",
        "remote.log.manager.expiration.thread.pool.size",
        "remote.log.manager.fetch.max.bytes.per.second",
        "remote.log.manager.follower.thread.pool.size",
        "remote.log.reader.threads",
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.kerberos.service.name",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.mechanism.inter.broker.protocol",
        "share.coordinator.cached.buffer.max.bytes",
        "ssl.cipher.suites",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.engine.factory.class",
        "ssl.key.password",
        "ssl.keymanager.algorithm",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.protocol",
        "ssl.provider",
        "ssl.secure.random.implementation",
        "ssl.trustmanager.algorithm",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "transaction.partition.verification.enable",
        "unclean.leader.election.enable",
    ]
)
# A listener's stores: only ever per listener (Kafka: `DYNAMIC_SECURITY_CONFIGS`).
DYNAMIC_SECURITY_CONFIGS = frozenset(
    [
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    ]
)
# Never at the cluster default (Kafka: `PER_BROKER_CONFIGS`); every `listener.name.*` key
# too, but the connection limits (`CLUSTER_LEVEL_LISTENER_CONFIGS`).
PER_BROKER_CONFIGS = (
    DYNAMIC_SECURITY_CONFIGS
    | frozenset(
        [
            "cordoned.log.dirs",
            "listener.security.protocol.map",
            "listeners",
            "principal.builder.class",
            "ssl.cipher.suites",
            "ssl.client.auth",
            "ssl.enabled.protocols",
            "ssl.endpoint.identification.algorithm",
            "ssl.engine.factory.class",
            "ssl.keymanager.algorithm",
            "ssl.protocol",
            "ssl.provider",
            "ssl.secure.random.implementation",
            "ssl.trustmanager.algorithm",
        ]
    )
    | {k for k in KAFKA_DYNAMIC_CONFIGS if k.startswith("sasl.")}
)
CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(
    {"max.connection.creation.rate", "max.connections", "num.network.threads"}
)
# What kafka-ref applies live (CONFIG-6, CONFIG-10); a listener's security keys: below.
APPLIED_CONFIGS = frozenset(LOG_DEFAULTS) | {
    "num.io.threads",
    "log.cleaner.backoff.ms",
    "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
    "cordoned.log.dirs",
}
# Dynamic in Kafka, which adds and removes listeners; kafka-ref binds its listeners once, so
# it stores these but reads them only at start.
STORED_ONLY = frozenset({"listeners", "listener.security.protocol.map"})
# The keys of a listener's security, plain or per listener (rebuilt together).
LISTENER_SECURITY_KEYS = DYNAMIC_SECURITY_CONFIGS | {
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "ssl.client.auth",
    "connections.max.reauth.ms",
}
# Keys that name one setting in several units, most precise first (Kafka:
# `DynamicBrokerConfig.brokerConfigSynonyms`).
_SYNONYM_GROUPS = (
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
)
SYNONYMS: dict[str, tuple[str, ...]] = {name: group for group in _SYNONYM_GROUPS for name in group}
# Whatever changes a log's broker defaults (the time aliases included).
LOG_KEYS = frozenset(LOG_DEFAULTS) | frozenset(SYNONYMS)

Reconfigure = Callable[[KafkaConfig, KafkaConfig], None]


def synonyms(name: str) -> tuple[str, ...]:
    return SYNONYMS.get(name, (name,))


class DynamicConfigError(KafkaError):
    """A dynamic broker config change that cannot be made (Kafka: a ConfigException,
    answered as InvalidRequestException)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=ErrorCode.INVALID_REQUEST)


@dataclasses.dataclass(frozen=True)
class SourcedValue:
    """One layer's value of a config: a synonym in DescribeConfigs."""

    name: str
    value: str | None
    source: int


def _listener_base(key: str) -> str | None:
    """`listener.name.<listener>.<key>` -> `<key>` (Kafka's `LISTENER_CONFIG_REGEX`)."""
    if not key.startswith(LISTENER_PREFIX):
        return None
    _listener, dot, base = key[len(LISTENER_PREFIX) :].partition(".")
    return base if dot else None


def _listed(keys: Iterable[str]) -> str:
    return f"[{', '.join(sorted(keys))}]"  # Java's Set.toString


def check_dynamic(props: Mapping[str, str], per_broker: bool = True) -> None:
    """CONFIG-5, CONFIG-9: may these keys be set dynamically, for one broker (`per_broker`)
    or as the cluster default; raise ConfigError with Kafka's words if not."""
    known = set(BROKER_CONFIGS) | IGNORED_KEYS  # keys Kafka knows as broker configs
    fixed = [k for k in props if k in known and k not in KAFKA_DYNAMIC_CONFIGS]
    if fixed:
        raise ConfigError(f"Cannot update these configs dynamically: {_listed(fixed)}")
    stores = [k for k in props if k in DYNAMIC_SECURITY_CONFIGS]
    if stores:
        raise ConfigError(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {_listed(stores)}"
        )
    for key, value in props.items():
        name = _listener_base(key) or key
        if name in BROKER_CONFIGS:
            parse_value(BROKER_CONFIGS[name], value)
    if not per_broker:
        own = [
            k
            for k in props
            if k in PER_BROKER_CONFIGS
            or (_listener_base(k) or "") not in ("", *CLUSTER_LEVEL_LISTENER_CONFIGS)
        ]
        if own:
            raise ConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {_listed(own)}"
            )


def is_listener_security_key(key: str) -> bool:
    """A key whose change rebuilds the listeners' security (CONFIG-10): plain, or under
    `listener.name.<listener>.`, with a mechanism prefix for a JAAS config."""
    base = _listener_base(key) or key
    return base in LISTENER_SECURITY_KEYS or base.endswith(".sasl.jaas.config")


def understood(key: str) -> bool:
    """Whether kafka-ref's `KafkaConfig` reads this key; a stored key it does not read
    (Kafka's `background.threads`, an unknown key) is kept but changes nothing."""
    if key in STORED_ONLY:
        return False
    if key.startswith(LISTENER_PREFIX):
        try:
            listener_key(key)
        except ConfigError:
            return False
        return True
    return key in BROKER_CONFIGS


class DynamicBrokerConfig:
    """The layers of one broker's configuration and its live `KafkaConfig` (Kafka:
    `DynamicBrokerConfig`)."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config  # the broker's own object, updated in place
        self.static = dict(config.originals)  # server.properties and --override
        self.per_broker: dict[str, str] = {}
        self.default: dict[str, str] = {}
        self._reconfigurables: list[tuple[Callable[[str], bool], Reconfigure]] = []
        self._validators: list[Callable[[KafkaConfig], None]] = []

    def add_reconfigurable(
        self,
        keys: Iterable[str] | Callable[[str], bool],
        reconfigure: Reconfigure,
        validate: Callable[[KafkaConfig], None] | None = None,
    ) -> None:
        """Call `reconfigure(old, new)` after a change of any of `keys` (a set, or a test of
        a key), and `validate(new)` before any change is accepted: it raises ValueError for
        a configuration this part could not take (Kafka: `BrokerReconfigurable`,
        `validateReconfiguration`)."""
        matches = keys if callable(keys) else frozenset(keys).__contains__
        self._reconfigurables.append((matches, reconfigure))
        if validate is not None:
            self._validators.append(validate)

    def _build(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> KafkaConfig:
        """The configuration of the layers: each one's keys replace the lower layers' keys
        and their synonyms (Kafka: `overrideProps`); ConfigError if the whole is invalid."""
        merged = dict(self.static)
        for layer in (default, per_broker):
            for key, value in layer.items():
                if not understood(key):
                    continue
                for synonym in synonyms(key):
                    merged.pop(synonym, None)
                merged[key] = value
        return KafkaConfig.from_props(merged)

    def validate(self, entity: str, props: Mapping[str, str]) -> None:
        """Check a new set of dynamic configs for `entity` (a broker id or DEFAULT_ENTITY):
        the keys and values (CONFIG-5), then the whole configuration they make."""
        try:
            check_dynamic(props, per_broker=entity != DEFAULT_ENTITY)
            if entity == DEFAULT_ENTITY:
                new = self._build(props, self.per_broker)
            else:
                new = self._build(self.default, props)
            for check in self._validators:
                check(new)
        except (ConfigError, ValueError) as err:
            raise DynamicConfigError(str(err)) from None

    def _usable(self, entity: str, props: Mapping[str, str]) -> dict[str, str]:
        """A stored layer without the keys that do not validate, each logged (Kafka:
        `fromPersistentProps`): a broker starts whatever the store holds."""
        kept = {}
        for key, value in props.items():
            try:
                check_dynamic({key: value}, per_broker=entity != DEFAULT_ENTITY)
                kept[key] = value
            except ConfigError as err:
                logger.error("dynamic config of %s ignored: %s", entity, err)
        return kept

    def update(self, entity: str, props: Mapping[str, str]) -> None:
        """A stored layer changed (at start, by a request, or a notice from another broker):
        rebuild the live config and run the reconfigurables of the keys that changed."""
        layer = self._usable(entity, props)
        default = layer if entity == DEFAULT_ENTITY else self.default
        per_broker = self.per_broker if entity == DEFAULT_ENTITY else layer
        try:
            new = self._build(default, per_broker)
        except ConfigError as err:
            logger.error("dynamic configs of %s not applied: %s", entity, err)
            return
        self.default, self.per_broker = dict(default), dict(per_broker)
        old = dataclasses.replace(
            self.config,
            values=dict(self.config.values),
            overrides=dict(self.config.overrides),
            listener_overrides=dict(self.config.listener_overrides),
        )
        self.config.values, self.config.overrides = new.values, new.overrides
        self.config.listener_overrides = new.listener_overrides
        changed = {k for k in new.values if new.values[k] != old.values.get(k)}
        changed |= {
            f"{LISTENER_PREFIX}{listener.lower()}.{key}"
            for listener in {*new.listener_overrides, *old.listener_overrides}
            for key in {
                **new.listener_overrides.get(listener, {}),
                **old.listener_overrides.get(listener, {}),
            }
            if new.listener_overrides.get(listener, {}).get(key)
            != old.listener_overrides.get(listener, {}).get(key)
        }
        if changed:
            logger.info("dynamic broker configs changed: %s", ", ".join(sorted(changed)))
        for matches, reconfigure in self._reconfigurables:
            if any(matches(k) for k in changed):
                reconfigure(old, self.config)

    # ------------------------------------------------------------------ describing
    def chain(self, name: str, per_broker: bool = True) -> list[SourcedValue]:
        """Every layer that sets `name` or a synonym, most specific first (Kafka:
        `ZkAdminManager.configSynonyms`); for the default resource only its own layer.
        The first entry is the layer in force: its source is the config's source. As
        Kafka drops the leading synonyms that are not the key, the leading layers that
        only set a finer synonym are left out."""
        layers = [(DYNAMIC_DEFAULT_BROKER_CONFIG, self.default)]
        if per_broker:
            layers = [
                (DYNAMIC_BROKER_CONFIG, self.per_broker),
                *layers,
                (STATIC_BROKER_CONFIG, self.static),
            ]
        found = []
        for source, layer in layers:
            for synonym in synonyms(name):
                if synonym in layer:
                    value = None if synonym in PASSWORD_KEYS else layer[synonym]
                    found.append(SourcedValue(synonym, value, source))
        if per_broker:
            for synonym in synonyms(name):
                default = BROKER_CONFIGS[synonym].default
                if default is not None:
                    found.append(SourcedValue(synonym, config_string(default), DEFAULT_CONFIG))
        group = synonyms(name)
        while found and group.index(found[0].name) < group.index(name):
            found.pop(0)  # a finer synonym's layer (log.retention.ms) does not set this one
        return found


def follow_broker(
    dynamic: DynamicBrokerConfig,
    controller: TopicAdministration,
    log_manager: LogManager,
    handlers: RequestHandlerPool,
    add_partitions: AddPartitionsToTxnManager,
    restart_cleaner: Callable[[], None],
) -> None:
    """What each dynamic config changes in a running broker's parts (CONFIG-6; Kafka: the
    `BrokerReconfigurable`s of `DynamicBrokerConfig.addReconfigurables`), and the
    controller's store handing every change of a layer to `dynamic`."""

    def log_defaults(old: KafkaConfig, new: KafkaConfig) -> None:  # DynamicLogConfig
        defaults = new.log_config()
        if defaults != old.log_config():
            controller.log_defaults = defaults  # the topics' configs are over these now
            log_manager.reconfigure_default_config(defaults)

    def verification(_old: KafkaConfig, new: KafkaConfig) -> None:
        add_partitions.enabled = new["transaction.partition.verification.enable"]

    dynamic.add_reconfigurable(LOG_KEYS, log_defaults)
    dynamic.add_reconfigurable(
        ["num.io.threads"], lambda _old, new: handlers.resize(new["num.io.threads"])
    )
    dynamic.add_reconfigurable(["log.cleaner.backoff.ms"], lambda _old, _new: restart_cleaner())
    dynamic.add_reconfigurable(["transaction.partition.verification.enable"], verification)
    # producer.id.expiration.ms: BrokerTasks.expire_producer_ids reads it at every run
    controller.on_broker_config = dynamic.update

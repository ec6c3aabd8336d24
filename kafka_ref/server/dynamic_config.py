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

Only some keys may change while the broker runs: those Kafka marks dynamically updatable
(`DynamicBrokerConfig.AllDynamicConfigs`) *and* that kafka-ref applies live
(`DYNAMIC_CONFIGS` below); any other key is refused with INVALID_REQUEST, "Cannot update
these configs dynamically", as Kafka refuses its read-only keys (CONFIG-5):

* every topic config's broker default (`log.retention.ms`, `log.segment.bytes`,
  `min.insync.replicas`, `message.max.bytes`, ...; Kafka's `DynamicLogConfig`): every
  live log without a topic override takes the new default;
* `num.io.threads` (Kafka's `DynamicThreadPool`): request handlers are added or removed;
* `log.cleaner.backoff.ms` (Kafka's `LogCleaner` reconfigurable): the cleaner restarts with
  the new pause;
* `producer.id.expiration.ms` and `transaction.partition.verification.enable` (Kafka's
  `DynamicProducerStateManagerConfig`): read at their next use.

`DynamicBrokerConfig` holds the layers and the broker's live `KafkaConfig`, which it
updates *in place* (Kafka: `KafkaConfig.updateCurrentConfig`), so that every part holding
the config reads the new values; parts that must act on a change (resize a pool, reopen
the logs' configs) register a *reconfigurable* for their keys. A stored layer that no
longer validates (a key kafka-ref cannot change, a bad value) is logged and skipped key by
key, as Kafka's `fromPersistentProps` does: a broker never fails to start over it.

Rules: CONFIG-4, CONFIG-5, CONFIG-6.
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
from kafka_ref.server.broker_configs import BROKER_CONFIGS, LOG_DEFAULTS, PASSWORD_KEYS
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig, config_string, parse_value
from kafka_ref.server.request_channel import RequestHandlerPool

logger = logging.getLogger("kafka_ref.server.dynamic_config")

# Kafka's ConfigEntry.ConfigSource, as DescribeConfigs numbers them.
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

DYNAMIC_CONFIGS = frozenset(LOG_DEFAULTS) | {
    "num.io.threads",
    "log.cleaner.backoff.ms",
    "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
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


def check_dynamic(props: Mapping[str, str]) -> None:
    """CONFIG-5: every key dynamically updatable, every value of its type."""
    refused = sorted(k for k in props if k not in DYNAMIC_CONFIGS)
    if refused:
        raise ConfigError(f"Cannot update these configs dynamically: {', '.join(refused)}")
    for key, value in props.items():
        parse_value(BROKER_CONFIGS[key], value)


class DynamicBrokerConfig:
    """The layers of one broker's configuration and its live `KafkaConfig` (Kafka:
    `DynamicBrokerConfig`)."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config  # the broker's own object, updated in place
        self.static = dict(config.originals)  # server.properties and --override
        self.per_broker: dict[str, str] = {}
        self.default: dict[str, str] = {}
        self._reconfigurables: list[tuple[frozenset[str], Reconfigure]] = []

    def add_reconfigurable(self, keys: Iterable[str], reconfigure: Reconfigure) -> None:
        """Call `reconfigure(old, new)` after a change of any of `keys` (Kafka:
        `BrokerReconfigurable`)."""
        self._reconfigurables.append((frozenset(keys), reconfigure))

    def _build(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> KafkaConfig:
        """The configuration of the layers: each one's keys replace the lower layers' keys
        and their synonyms (Kafka: `overrideProps`); ConfigError if the whole is invalid."""
        merged = dict(self.static)
        for layer in (default, per_broker):
            for key, value in layer.items():
                for synonym in synonyms(key):
                    merged.pop(synonym, None)
                merged[key] = value
        return KafkaConfig.from_props(merged)

    def validate(self, entity: str, props: Mapping[str, str]) -> None:
        """Check a new set of dynamic configs for `entity` (a broker id or DEFAULT_ENTITY):
        the keys and values (CONFIG-5), then the whole configuration they make."""
        try:
            check_dynamic(props)
            if entity == DEFAULT_ENTITY:
                self._build(props, self.per_broker)
            else:
                self._build(self.default, props)
        except ConfigError as err:
            raise DynamicConfigError(str(err)) from None

    def _usable(self, entity: str, props: Mapping[str, str]) -> dict[str, str]:
        """A stored layer without the keys that do not validate, each logged (Kafka:
        `fromPersistentProps`): a broker starts whatever the store holds."""
        kept = {}
        for key, value in props.items():
            try:
                check_dynamic({key: value})
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
            self.config, values=dict(self.config.values), overrides=dict(self.config.overrides)
        )
        self.config.values, self.config.overrides = new.values, new.overrides
        changed = {k for k in new.values if new.values[k] != old.values.get(k)}
        if changed:
            logger.info("dynamic broker configs changed: %s", ", ".join(sorted(changed)))
        for keys, reconfigure in self._reconfigurables:
            if keys & changed:
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
            layers = [(DYNAMIC_BROKER_CONFIG, self.per_broker), *layers,
                      (STATIC_BROKER_CONFIG, self.static)]  # fmt: skip
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
    # producer.id.expiration.ms: Broker.expire_producer_ids reads it at every run
    controller.on_broker_config = dynamic.update

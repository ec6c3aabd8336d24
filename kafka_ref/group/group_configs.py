"""Group configs: settings an admin gives one consumer or share group (config resource GROUP).

Since KIP-848 and KIP-932 a group has configs of its own, as a topic has: DescribeConfigs,
IncrementalAlterConfigs and AlterConfigs take the config resource type GROUP (32), named
by the group id (Kafka: `GroupConfig`, `GroupConfigManager`). A share group relies on one
at once: it starts reading at the latest offset unless `share.auto.offset.reset` is
`earliest` on the group.

**The keys** (Kafka 4.4's `GroupConfig`, those about consumer and share groups). Each
key's default is the broker config it overrides, its *synonym*:

    consumer.session.timeout.ms       group.consumer.session.timeout.ms
    consumer.heartbeat.interval.ms    group.consumer.heartbeat.interval.ms
    share.session.timeout.ms          group.share.session.timeout.ms
    share.heartbeat.interval.ms       group.share.heartbeat.interval.ms
    share.record.lock.duration.ms     group.share.record.lock.duration.ms
    share.delivery.count.limit        group.share.delivery.count.limit
    share.partition.max.record.locks  group.share.partition.max.record.locks
    share.auto.offset.reset           (none: latest)
    share.isolation.level             (none: read_uncommitted)

Kafka 4.4 also has the streams groups' keys (`streams.*`), the assignment intervals, the
assignor offload switches, `share.renew.acknowledge.enable` and the dead-letter queue keys
(`errors.deadletterqueue.*`). kafka-ref does not apply any of those per group, so it does
not accept them: setting one is an unknown group config name.

**Validation** (Kafka: `GroupConfig.validate`), of the group's whole new set, in Kafka's
order and words, each failure INVALID_CONFIG: an unknown key ("Unknown group config name:
x"); a value that does not parse or is below the key's own floor ("Invalid value x for
configuration k: ..."); an integer outside the broker's bounds for it, such as
`group.share.min.record.lock.duration.ms` .. `group.share.max.record.lock.duration.ms`
("k must be in the range a to b inclusive."); a session timeout not above the heartbeat
interval, either one the group's or else the broker's ("consumer.session.timeout.ms must
be greater than consumer.heartbeat.interval.ms").

**Reading** (`GroupConfigs.for_group`): the group's value of every key, typed, with the
broker's value where the group sets none. The share-partition, the share group
coordinator and the consumer group coordinator read it when they need a value, so a
change takes effect at the next heartbeat, fetch or lock without a restart.

Rules: CONFIG-11 .. CONFIG-14.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_ref.config import INT_MAX, ConfigDef
from kafka_ref.errors import InvalidConfigError
from kafka_ref.share.share_partition_manager import (
    BY_DURATION,
    EARLIEST,
    LATEST,
    GroupShareConfig,
    parse_duration_ms,
)

GROUP_RESOURCE = 32  # Kafka's ConfigResource.Type.GROUP
GROUP_CONFIG_SOURCE = 8  # DescribeConfigsResponse.ConfigSource.GROUP_CONFIG

READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"


def _is_auto_offset_reset(value: str) -> bool:
    """latest, earliest or by_duration:<ISO 8601 duration, not negative>."""
    if value in (LATEST, EARLIEST):
        return True
    if not value.startswith(BY_DURATION):
        return False
    try:
        return parse_duration_ms(value.removeprefix(BY_DURATION)) >= 0
    except ValueError:
        return False


@dataclass(frozen=True)
class GroupConfigKey:
    """One group config: its definition (type, Kafka's default, its floor), the broker
    config it overrides, and the broker configs that bound it."""

    definition: ConfigDef
    synonym: str | None = None
    bounds: tuple[str, str] | None = None  # (minimum key, maximum key) of the broker


def _key(name, type_, default, doc, floor=None, synonym=None, bounds=None, choices=None):
    return GroupConfigKey(ConfigDef(name, type_, default, doc, floor, choices), synonym, bounds)


GROUP_CONFIGS: dict[str, GroupConfigKey] = {
    k.definition.name: k
    for k in [
        _key(
            "consumer.session.timeout.ms",
            "int",
            45000,
            "The timeout to detect client failures when using the consumer group protocol.",
            1,
            "group.consumer.session.timeout.ms",
            ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
        ),
        _key(
            "consumer.heartbeat.interval.ms",
            "int",
            5000,
            "The heartbeat interval given to the members of a consumer group.",
            1,
            "group.consumer.heartbeat.interval.ms",
            (
                "group.consumer.min.heartbeat.interval.ms",
                "group.consumer.max.heartbeat.interval.ms",
            ),
        ),
        _key(
            "share.session.timeout.ms",
            "int",
            45000,
            "The timeout to detect client failures when using the share group protocol.",
            1,
            "group.share.session.timeout.ms",
            ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
        ),
        _key(
            "share.heartbeat.interval.ms",
            "int",
            5000,
            "The heartbeat interval given to the members of a share group.",
            1,
            "group.share.heartbeat.interval.ms",
            ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
        ),
        _key(
            "share.record.lock.duration.ms",
            "int",
            30000,
            "The record acquisition lock duration in milliseconds for share groups.",
            1000,
            "group.share.record.lock.duration.ms",
            (
                "group.share.min.record.lock.duration.ms",
                "group.share.max.record.lock.duration.ms",
            ),
        ),
        _key(
            "share.delivery.count.limit",
            "int",
            5,
            "The maximum number of delivery attempts for a record delivered to a share group.",
            2,
            "group.share.delivery.count.limit",
            (
                "group.share.min.delivery.count.limit",
                "group.share.max.delivery.count.limit",
            ),
        ),
        _key(
            "share.partition.max.record.locks",
            "int",
            2000,
            "The maximum number of records a share-partition of the group may have in flight.",
            100,
            "group.share.partition.max.record.locks",
            (
                "group.share.min.partition.max.record.locks",
                "group.share.max.partition.max.record.locks",
            ),
        ),
        _key(
            "share.auto.offset.reset",
            "string",
            LATEST,
            "The strategy to initialize the share-partition start offset: earliest, latest, "
            "or by_duration:<duration> (ISO 8601, PnDTnHnMn.nS).",
        ),
        _key(
            "share.isolation.level",
            "string",
            READ_UNCOMMITTED,
            "Controls how to read records written transactionally: read_committed delivers "
            "only committed transactional records, read_uncommitted all of them.",
            choices=(READ_COMMITTED, READ_UNCOMMITTED),
        ),
    ]
}

# The broker's bounds of the group configs (Kafka: `GroupCoordinatorConfig`,
# `ShareGroupConfig`), with Kafka's defaults; server/broker_configs.py merges them.
GROUP_BOUND_DEFS = [
    ConfigDef(name, "int", default, f"The {kind} a group config {what} may be.", 1)
    for name, default, kind, what in [
        ("group.consumer.min.session.timeout.ms", 45000, "least", "consumer.session.timeout.ms"),
        ("group.consumer.max.session.timeout.ms", 60000, "most", "consumer.session.timeout.ms"),
        (
            "group.consumer.min.heartbeat.interval.ms",
            5000,
            "least",
            "consumer.heartbeat.interval.ms",
        ),
        (
            "group.consumer.max.heartbeat.interval.ms",
            15000,
            "most",
            "consumer.heartbeat.interval.ms",
        ),
        ("group.share.min.session.timeout.ms", 45000, "least", "share.session.timeout.ms"),
        ("group.share.max.session.timeout.ms", 60000, "most", "share.session.timeout.ms"),
        ("group.share.min.heartbeat.interval.ms", 5000, "least", "share.heartbeat.interval.ms"),
        ("group.share.max.heartbeat.interval.ms", 15000, "most", "share.heartbeat.interval.ms"),
        (
            "group.share.min.record.lock.duration.ms",
            15000,
            "least",
            "share.record.lock.duration.ms",
        ),
        (
            "group.share.max.record.lock.duration.ms",
            60000,
            "most",
            "share.record.lock.duration.ms",
        ),
        ("group.share.min.delivery.count.limit", 2, "least", "share.delivery.count.limit"),
        ("group.share.max.delivery.count.limit", 10, "most", "share.delivery.count.limit"),
        (
            "group.share.min.partition.max.record.locks",
            100,
            "least",
            "share.partition.max.record.locks",
        ),
        (
            "group.share.max.partition.max.record.locks",
            4000,
            "most",
            "share.partition.max.record.locks",
        ),
    ]
]

# Every broker config validation and defaults read: the synonyms and the bounds.
BROKER_KEYS = tuple(
    sorted(
        {k.synonym for k in GROUP_CONFIGS.values() if k.synonym}
        | {b for k in GROUP_CONFIGS.values() if k.bounds for b in k.bounds}
    )
)
# Kafka checks the session timeouts last, against the heartbeat intervals
_SESSION_EXCEEDS_HEARTBEAT = [
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
]

BrokerValues = Callable[[str], Any]  # a broker config's value by name (KafkaConfig[...])


def parse_group_value(name: str, raw: str) -> Any:
    """A group config's value, typed, in Kafka's words when it is not one (ConfigDef.parse)."""
    definition = GROUP_CONFIGS[name].definition
    if definition.type == "int":
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type INT"
            ) from None
        if not -(2**31) <= value <= INT_MAX:
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {name}: Not a number of type INT"
            )
        if definition.minimum is not None and value < definition.minimum:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: "
                f"Value must be at least {definition.minimum}"
            )
        return value
    value = str(raw).strip()
    if definition.choices is not None and value not in definition.choices:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: "
            f"String must be one of: {', '.join(definition.choices)}"
        )
    if name == "share.auto.offset.reset" and not _is_auto_offset_reset(value):
        # Kafka's ConfigException wraps its validator's own message
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
            f"configuration {name}. The value must be either 'earliest', 'latest' or of the "
            "format 'by_duration:<PnDTnHnMn.nS>'."
        )
    return value


def validate_group_configs(configs: Mapping[str, str], broker: BrokerValues) -> None:
    """Check a group's whole new set of configs against the keys, their types and the
    broker's bounds, in Kafka's order (`GroupConfig.validate`); InvalidConfigError."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise InvalidConfigError(f"Unknown group config name: {name}")
    values = {name: parse_group_value(name, raw) for name, raw in configs.items()}
    for name, key in GROUP_CONFIGS.items():
        if key.bounds is None or name not in values:
            continue
        low, high = broker(key.bounds[0]), broker(key.bounds[1])
        if not low <= values[name] <= high:
            raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")
    for session, heartbeat in _SESSION_EXCEEDS_HEARTBEAT:
        if session not in values and heartbeat not in values:
            continue
        session_ms = values.get(session, broker(GROUP_CONFIGS[session].synonym))
        heartbeat_ms = values.get(heartbeat, broker(GROUP_CONFIGS[heartbeat].synonym))
        if session_ms <= heartbeat_ms:
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")


def broker_value(name: str, broker: BrokerValues) -> Any:
    """A key's value where the group sets none: its broker synonym's, else Kafka's default."""
    key = GROUP_CONFIGS[name]
    return broker(key.synonym) if key.synonym else key.definition.default


class GroupConfigs:
    """Every group's configs as the broker applies them (Kafka: `GroupConfigManager`):
    `stored(group_id)` gives what the cluster's metadata holds for the group (the
    metadata file, a znode, or the KRaft image), `broker` the broker's values."""

    def __init__(self, stored: Callable[[str], Mapping[str, str]], broker: BrokerValues) -> None:
        self.stored, self.broker = stored, broker

    def for_group(self, group_id: str) -> dict[str, Any]:
        """Every key's value for `group_id`, typed: the group's own, else the broker's."""
        own = self.stored(group_id)
        values = {}
        for name in GROUP_CONFIGS:
            raw = own.get(name)
            values[name] = (
                parse_group_value(name, raw) if raw is not None else broker_value(name, self.broker)
            )
        return values

    def share_config(self, group_id: str) -> GroupShareConfig:
        """What the share-partitions of `group_id` read (SharePartitionManager's hook)."""
        values = self.for_group(group_id)
        return GroupShareConfig(
            auto_offset_reset=values["share.auto.offset.reset"],
            read_committed=values["share.isolation.level"] == READ_COMMITTED,
            record_lock_duration_ms=values["share.record.lock.duration.ms"],
            delivery_count_limit=values["share.delivery.count.limit"],
            max_record_locks=values["share.partition.max.record.locks"],
        )

"""Kafka's configuration names, defaults and validation, in one table.

Kafka is configured by dotted names (`segment.bytes`, `retention.ms`): a topic's configs
override the broker's `log.`-prefixed defaults (`log.segment.bytes`). kafka-ref keeps those
names so that a Kafka user's settings work unchanged. Each config is a `ConfigDef` with its
type, default, valid range and a one-line meaning; `LogConfig` is the typed view the log
reads, built with `LogConfig.from_properties({"segment.bytes": "1048576"})`.

The same table answers DescribeConfigs (value, default, source) once the broker exists.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from kafka_ref.errors import InvalidConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class ConfigDef:
    """One configuration key: its type, default and the values it accepts."""

    name: str
    type: str  # "int" | "long" | "double" | "string" | "boolean" | "list"
    default: Any
    doc: str
    minimum: float | None = None
    choices: tuple[str, ...] | None = None
    # what is wrong with a parsed value (None: nothing), beyond its type, range and choices
    validator: Callable[[Any], str | None] | None = None

    def parse(self, raw: Any) -> Any:
        """Turn a raw value (a string from a properties file, or a Python value) into its type."""
        try:
            value = _PARSERS[self.type](raw)
        except (TypeError, ValueError):
            raise InvalidConfigError(f"{self.name}: {raw!r} is not a valid {self.type}") from None
        if self.minimum is not None and value < self.minimum:
            raise InvalidConfigError(f"{self.name}: {value} is below the minimum {self.minimum}")
        if self.choices is not None:
            items = value if self.type == "list" else [value]
            for item in items:
                if item not in self.choices:
                    raise InvalidConfigError(
                        f"{self.name}: {item!r} is not one of {', '.join(self.choices)}"
                    )
        problem = self.validator(value) if self.validator is not None else None
        if problem is not None:
            raise InvalidConfigError(f"{self.name}: {problem}")
        return value


def _parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(raw)
    return text == "true"


def _parse_list(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, (list, tuple)):
        return tuple(str(x).strip() for x in raw)
    return tuple(part.strip() for part in str(raw).split(",") if part.strip())


def _throttled_replicas(replicas: tuple[str, ...]) -> str | None:
    """Kafka's ThrottledReplicaListValidator: the literal '*' alone, or partition:broker items."""
    if replicas == ("*",) or all(re.fullmatch(r"[0-9]+:[0-9]+", r) for r in replicas):
        return None
    return (
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "long": int,
    "double": float,
    "string": str,
    "boolean": _parse_bool,
    "list": _parse_list,
}

# Topic-level configs (Kafka's TopicConfig / LogConfig). The broker default of each is the
# same name with a `log.` prefix, except where BROKER_NAMES says otherwise.
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("segment.bytes", "int", 1073741824, "Size at which a segment rolls.", 14),
        ConfigDef("segment.ms", "long", 604800000, "Age at which a segment rolls.", 1),
        ConfigDef("segment.jitter.ms", "long", 0, "Random jitter subtracted from segment.ms.", 0),
        ConfigDef("segment.index.bytes", "int", 10485760, "Preallocated size of an index file.", 8),
        ConfigDef(
            "index.interval.bytes", "int", 4096, "Bytes appended between two index entries.", 0
        ),
        ConfigDef("retention.ms", "long", 604800000, "Age after which segments are deleted.", -1),
        ConfigDef("retention.bytes", "long", -1, "Size above which old segments are deleted."),
        ConfigDef(
            "cleanup.policy",
            "list",
            ("delete",),
            "delete, compact, or both.",
            choices=("delete", "compact"),
        ),
        ConfigDef(
            "delete.retention.ms", "long", 86400000, "How long tombstones survive compaction.", 0
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio",
            "double",
            0.5,
            "Dirty share of the log above which it is compacted.",
            0,
        ),
        ConfigDef(
            "min.compaction.lag.ms", "long", 0, "Minimum age before a record is compacted.", 0
        ),
        ConfigDef(
            "max.compaction.lag.ms",
            "long",
            LONG_MAX,
            "Maximum age of an uncompacted record: past it the log is compacted whatever "
            "its dirty ratio, and its active segment rolls (KIP-354).",
            1,
        ),
        ConfigDef("file.delete.delay.ms", "long", 60000, "Delay before a deleted file goes.", 0),
        ConfigDef("flush.messages", "long", LONG_MAX, "Messages between two fsyncs.", 1),
        ConfigDef("flush.ms", "long", LONG_MAX, "Milliseconds between two fsyncs.", 0),
        ConfigDef("max.message.bytes", "int", 1048588, "Largest batch the log accepts.", 0),
        ConfigDef(
            "message.timestamp.type",
            "string",
            "CreateTime",
            "CreateTime keeps the producer's timestamp; LogAppendTime stamps the broker's.",
            choices=("CreateTime", "LogAppendTime"),
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            "long",
            LONG_MAX,
            "How far in the past a CreateTime timestamp may be.",
            0,
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            "long",
            3_600_000,  # one hour since Kafka 4.0 (KIP-1030); unbounded before
            "How far in the future a CreateTime timestamp may be.",
            0,
        ),
        ConfigDef("min.insync.replicas", "int", 1, "Replicas that must ack acks=all.", 1),
        ConfigDef(
            "unclean.leader.election.enable",
            "boolean",
            False,
            "Allow an out-of-sync replica to become leader.",
        ),
        ConfigDef(
            "compression.type",
            "string",
            "producer",
            "Codec of stored batches; producer keeps the producer's.",
            choices=("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        ),
        ConfigDef("preallocate", "boolean", False, "Preallocate segment files."),
        # Replication quotas (KIP-73): which replicas the leader's and the followers'
        # throttle covers. kafka-ref knows them, so that Kafka's reassignment tool can set
        # and clear them (CONFIG-8), but it has no replication quotas: nothing is throttled.
        ConfigDef(
            "leader.replication.throttled.replicas",
            "list",
            (),
            "Replicas throttled on the leader side: '*' or partition:broker items.",
            validator=_throttled_replicas,
        ),
        ConfigDef(
            "follower.replication.throttled.replicas",
            "list",
            (),
            "Replicas throttled on the follower side: '*' or partition:broker items.",
            validator=_throttled_replicas,
        ),
    )
}
# Topic configs without a broker default (Kafka: LogConfig.CONFIGS_WITH_NO_SERVER_DEFAULTS):
# a topic's own override, else Kafka's default.
NO_SERVER_DEFAULT = frozenset(
    {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

# Broker-level names that do not follow the `log.` + topic name rule.
BROKER_NAMES: dict[str, str] = {
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.type": "compression.type",
    "max.message.bytes": "message.max.bytes",
}


def broker_name(topic_name: str) -> str | None:
    """The broker default's name of a topic config: `segment.bytes` -> `log.segment.bytes`;
    None for a config the broker has no default of."""
    if topic_name in NO_SERVER_DEFAULT:
        return None
    return BROKER_NAMES.get(topic_name, "log." + topic_name)


def _attr(name: str) -> str:
    return name.replace(".", "_")


def _default(name: str) -> Any:
    """A topic config's default, as its `LogConfig` field holds it."""
    definition = TOPIC_CONFIGS[name]
    return definition.parse(definition.default)


@dataclasses.dataclass(frozen=True)
class LogConfig:
    """The typed configuration of one partition's log (Kafka: `LogConfig`).

    Each field's default is its `ConfigDef`'s in `TOPIC_CONFIGS`, parsed: a default is
    written once, in the table (SRC-6)."""

    segment_bytes: int = _default("segment.bytes")
    segment_ms: int = _default("segment.ms")
    segment_jitter_ms: int = _default("segment.jitter.ms")
    segment_index_bytes: int = _default("segment.index.bytes")
    index_interval_bytes: int = _default("index.interval.bytes")
    retention_ms: int = _default("retention.ms")
    retention_bytes: int = _default("retention.bytes")
    cleanup_policy: tuple[str, ...] = _default("cleanup.policy")
    delete_retention_ms: int = _default("delete.retention.ms")
    min_cleanable_dirty_ratio: float = _default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = _default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = _default("max.compaction.lag.ms")
    file_delete_delay_ms: int = _default("file.delete.delay.ms")
    flush_messages: int = _default("flush.messages")
    flush_ms: int = _default("flush.ms")
    max_message_bytes: int = _default("max.message.bytes")
    message_timestamp_type: str = _default("message.timestamp.type")
    message_timestamp_before_max_ms: int = _default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = _default("message.timestamp.after.max.ms")
    min_insync_replicas: int = _default("min.insync.replicas")
    unclean_leader_election_enable: bool = _default("unclean.leader.election.enable")
    compression_type: str = _default("compression.type")
    preallocate: bool = _default("preallocate")
    leader_replication_throttled_replicas: tuple[str, ...] = _default(
        "leader.replication.throttled.replicas"
    )
    follower_replication_throttled_replicas: tuple[str, ...] = _default(
        "follower.replication.throttled.replicas"
    )

    @classmethod
    def from_properties(
        cls, props: Mapping[str, Any] | None = None, defaults: LogConfig | None = None
    ) -> LogConfig:
        """Build from Kafka-named properties over `defaults`; unknown names are an error."""
        base = defaults or cls()
        changes = {}
        for name, raw in (props or {}).items():
            definition = TOPIC_CONFIGS.get(name)
            if definition is None:
                raise InvalidConfigError(f"unknown topic config {name!r}")
            changes[_attr(name)] = definition.parse(raw)
        return dataclasses.replace(base, **changes)

    def validate_values(self) -> LogConfig:
        """Kafka's `LogConfig.validateValues`: the checks that involve two keys, run on a
        topic's configs over the broker's defaults when the topic is created or altered,
        and on the broker's defaults. Returns self; InvalidConfigError with Kafka's words."""
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                "conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})"
            )
        return self

    @property
    def max_segment_ms(self) -> int:
        """The age at which the active segment rolls (Kafka: `LogConfig.maxSegmentMs`): a
        compacted log's records must become cleanable within max.compaction.lag.ms, and
        the active segment never is (COMPACT-3), so it rolls by then (COMPACT-28)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def to_properties(self) -> dict[str, Any]:
        """The Kafka-named view: {"segment.bytes": 1073741824, ...}."""
        return {name: getattr(self, _attr(name)) for name in TOPIC_CONFIGS}

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


# Every ConfigDef default must equal the LogConfig field default: one truth, checked at import.
assert all(getattr(LogConfig(), _attr(n)) == d.default for n, d in TOPIC_CONFIGS.items()), (
    "TOPIC_CONFIGS and LogConfig disagree on a default"
)

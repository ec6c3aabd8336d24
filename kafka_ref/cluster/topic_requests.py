"""CreateTopics and CreatePartitions as a controller checks them: one plan for both modes.

Before a controller changes the topics it checks the request in Kafka's order and answers
with Kafka's error, so that a client sees the same words from a single embedded broker
and from a cluster on ZooKeeper (Kafka: `ZkAdminManager.createTopics` and
`ReplicationControlManager.createTopic`):

1. the name is legal, new, and does not collide with another name by `.` versus `_`
   (INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS; BROKER-30);
2. either an explicit replica assignment, numbered 0..n-1, or a partition count and a
   replication factor (-1: the broker's default), never both (INVALID_REQUEST);
3. every replica list is non-empty, names each broker once, and only live brokers
   (INVALID_REPLICA_ASSIGNMENT); counts and factors are in range (BROKER-31);
4. config overrides have values and parse as topic configs (INVALID_CONFIG).

AlterConfigs and IncrementalAlterConfigs end here too (`alter_topic_configs`): the new set
of overrides is checked the same way, then stored by the controller and applied to the
topic's live logs (CTRL-15).

A *plan* is the result: the topic's metadata and partition -> replicas. Without an explicit
assignment the replicas are placed by `assign_replicas_to_brokers` (assignment.py, CTRL-8).
The caller, `EmbeddedController` or `ZkClusterMetadata`, then makes the change durable its
own way (a metadata file, or znodes). With `validate_only` it makes none.

Rules: BROKER-30, BROKER-31, CTRL-8.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from kafka_ref.cluster.assignment import assign_replicas_to_brokers
from kafka_ref.cluster.metadata import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    InvalidTopicError,
    TopicExistsError,
    TopicMetadata,
    TopicsImage,
    UnknownTopicOrPartitionError,
    resolve_partitions,
    resolve_replication_factor,
    unify_collision_chars,
    validate_topic_name,
)
from kafka_ref.config import LogConfig

# partition -> replica broker ids, the first being the preferred leader
Assignment = dict[int, list[int]]
LiveBrokers = Sequence[tuple[int, str | None]]  # (broker id, rack or None)


def check_new_name(name: str, existing: Collection[str]) -> None:
    """A legal name that is neither taken nor colliding with a taken one (BROKER-30)."""
    validate_topic_name(name)
    if name in existing:
        raise TopicExistsError(f"Topic '{name}' already exists.")
    unified = unify_collision_chars(name)
    for other in existing:
        if unify_collision_chars(other) == unified:
            raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")


def check_replicas(replicas: Iterable[int], live: LiveBrokers, what: str) -> list[int]:
    """One partition's replica list: non-empty, no broker twice, only live brokers."""
    ids = list(replicas)
    if not ids or len(set(ids)) != len(ids):
        raise InvalidReplicaAssignmentError(f"{what}: empty or duplicate replica list")
    unknown = sorted(set(ids) - {broker_id for broker_id, _ in live})
    if unknown:
        raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {unknown}")
    return ids


def check_configs(configs: Mapping[str, str | None], defaults: LogConfig) -> dict[str, str]:
    """The overrides as strings, after checking they parse (InvalidConfigError if not)."""
    for key, value in configs.items():
        if value is None:
            raise InvalidRequestError(f"Null value not supported for topic config {key}")
    clean = {str(k): str(v) for k, v in configs.items()}
    LogConfig.from_properties(clean, defaults=defaults).validate_values()
    return clean


def plan_topic(
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: Mapping[str, str | None] | None,
    assignments: Mapping[int, Iterable[int]] | None,
    *,
    existing: Collection[str],
    live: LiveBrokers,
    default_partitions: int,
    default_replication_factor: int,
    log_defaults: LogConfig,
    rng: random.Random | None = None,
    topic_id: uuid.UUID | None = None,
) -> tuple[TopicMetadata, Assignment]:
    """Check a CreateTopics entry in Kafka's order; return the new topic and its replicas.

    `rng` places the replicas and `topic_id` names the topic (random ones by default): the
    KRaft controller passes its own so that its decisions replay the same way."""
    check_new_name(name, existing)
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise InvalidRequestError(
                "Both numPartitions or replicationFactor and replicasAssignments were set."
            )
        if sorted(assignments) != list(range(len(assignments))):
            raise InvalidReplicaAssignmentError("partitions must be numbered 0..n-1")
        placed = {p: check_replicas(r, live, name) for p, r in sorted(assignments.items())}
    else:
        partitions = resolve_partitions(num_partitions, default_partitions)
        factor = resolve_replication_factor(
            replication_factor, default_replication_factor, len(live)
        )
        placed = assign_replicas_to_brokers(live, partitions, factor, rng=rng)
    overrides = check_configs(configs or {}, log_defaults)
    meta = TopicMetadata(name, topic_id or uuid.uuid4(), len(placed), len(placed[0]), overrides)
    return meta, placed


def plan_partitions(
    meta: TopicMetadata,
    count: int,
    assignments: Sequence[Iterable[int]] | None,
    *,
    live: LiveBrokers,
    rng: random.Random | None = None,
) -> tuple[TopicMetadata, Assignment]:
    """Check a CreatePartitions entry; return the grown topic and the new partitions' replicas.

    Partitions never shrink: a key's partition is `hash(key) mod count`, and moving a key's
    old records is not something Kafka does."""
    if count < meta.partitions:
        raise InvalidPartitionsError(
            f"Topic currently has {meta.partitions} partitions, which is higher than the"
            f" requested {count}."
        )
    if count == meta.partitions:
        raise InvalidPartitionsError(f"Topic already has {meta.partitions} partitions.")
    resolve_partitions(count, count)  # the upper bound
    added = count - meta.partitions
    if assignments is not None:
        if len(assignments) != added:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {added} but {len(assignments)}"
                " assignments provided."
            )
        new = {
            meta.partitions + i: check_replicas(r, live, meta.name)
            for i, r in enumerate(assignments)
        }
    else:
        new = assign_replicas_to_brokers(
            live, added, meta.replication_factor, start_partition=meta.partitions, rng=rng
        )
    grown = TopicMetadata(
        meta.name, meta.topic_id, count, meta.replication_factor, meta.configs, meta.internal
    )
    return grown, new


class TopicAdministration:
    """What both controllers share: their topic settings, topic configs, and planning.

    `EmbeddedController` and `ZkClusterMetadata` set these attributes and list the live
    brokers; each then makes a plan durable in its own way. Both also keep the dynamic
    broker configs (CONFIG-6): per entity (a broker id, or `<default>` for the cluster)
    the stored set, handed to `on_broker_config` whenever it changes."""

    _topics: TopicsImage
    _broker_configs: dict[str, dict[str, str]]  # entity -> its dynamic broker configs
    _group_configs: dict[str, dict[str, str]]  # group id -> its group configs
    on_broker_config: Callable[[str, dict[str, str]], None]
    log_defaults: LogConfig
    num_partitions: int  # num.partitions
    default_replication_factor: int  # default.replication.factor

    def _live(self) -> list[tuple[int, str | None]]:
        raise NotImplementedError

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """The topic with this id (Kafka: `MetadataCache.getTopicName`), or None."""
        return self._topics.by_id.get(topic_id)

    def log_config(self, topic: str) -> LogConfig | None:
        """The topic's LogConfig: broker defaults with the topic's overrides on top."""
        meta = self._topics.get(topic)
        if meta is None or not meta.configs:
            return None
        return LogConfig.from_properties(meta.configs, defaults=self.log_defaults)

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        """Replace the topic's config overrides with `configs` (AlterConfigs and
        IncrementalAlterConfigs, after the handler has applied their operations; CTRL-15):
        every key must be a topic config and every value parse (INVALID_CONFIG), then the
        controller stores them its own way and the live logs take them."""
        if name not in self._topics:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        # raises when invalid
        LogConfig.from_properties(configs, defaults=self.log_defaults).validate_values()
        if not validate_only:
            self._store_topic_configs(name, dict(configs))

    def _store_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        raise NotImplementedError

    def broker_configs(self, entity: str) -> dict[str, str]:
        """The dynamic broker configs stored for `entity` (a broker id or `<default>`)."""
        return dict(self._broker_configs.get(entity, {}))

    def alter_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Store `entity`'s new set of dynamic broker configs (checked by the caller), and
        apply it here at once; other brokers learn it from the store (CONFIG-6)."""
        self._store_broker_configs(entity, dict(configs))
        self._broker_configs[entity] = dict(configs)
        self.on_broker_config(entity, dict(configs))

    def _store_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        raise NotImplementedError

    def group_configs(self, group_id: str) -> dict[str, str]:
        """The configs stored for the group (config resource GROUP, KIP-848, KIP-932)."""
        return dict(self._group_configs.get(group_id, {}))

    def alter_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Store the group's new set of configs (checked by the caller; an empty set
        deletes them), in force here at once; other brokers learn it from the store."""
        if configs:
            self._group_configs[group_id] = dict(configs)
        elif self._group_configs.pop(group_id, None) is None:
            return  # nothing stored, nothing to delete
        self._store_group_configs(group_id, dict(configs))

    def _store_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        raise NotImplementedError

    def _plan_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None] | None,
        assignments: Mapping[int, Iterable[int]] | None,
    ) -> tuple[TopicMetadata, Assignment]:
        return plan_topic(
            name,
            num_partitions,
            replication_factor,
            configs,
            assignments,
            existing=self._topics,
            live=self._live(),
            default_partitions=self.num_partitions,
            default_replication_factor=self.default_replication_factor,
            log_defaults=self.log_defaults,
        )

"""The embedded controller: a single broker that is its own controller, without ZooKeeper.

A Kafka cluster needs one authority over metadata: which topics exist, with how many
partitions and which configs, and who leads each partition. Old Kafka kept that in
ZooKeeper; KRaft (KIP-500) keeps it in a replicated metadata log owned by a controller
quorum, and a small deployment runs broker and controller in one process ("combined mode",
`process.roles=broker,controller`). kafka-ref's single broker is that combined mode with a
quorum of one: this module is the controller (Kafka: `QuorumController` plus the
`MetadataImage` it publishes), and the broker asks it to create, grow and delete topics.

**State and persistence.** The state is small: the cluster id, and per topic its id,
partition count, replication factor and config overrides. It lives in the data directory:

    <data-dir>/meta.properties            version=1, cluster.id=..., node.id=... (as Kafka)
    <data-dir>/__cluster_metadata.json    {"topics": {...}, "deleting": {...},
                                           "producer_ids": {"next_producer_id": ...},
                                           "broker_configs": {"<default>": {...}, "1": {...}},
                                           "group_configs": {"<group id>": {...}}}

Every change rewrites the JSON file atomically (write a temporary file, fsync, rename,
fsync the directory), so after a crash the file is either the old or the new state, never
a mix: topic metadata survives restarts and kill -9 (BROKER-36). KRaft writes metadata
*records* to the `__cluster_metadata` log instead; a whole-state file is the same idea
without log replay, and small enough for a teaching broker.

With several `log.dirs` the JSON file lives in the first (Kafka's `metadata.log.dir`
default) and every directory has its own `meta.properties`; they must agree on the node id
and the cluster id, or the broker refuses to start (DUR-13; Kafka's
`MetaPropertiesEnsemble.verify`).

**Publishing.** A change is persisted first and then published to listeners (Kafka:
`BrokerMetadataPublisher`): the ReplicaManager creates the new partitions' logs or deletes
a deleted topic's logs. A deletion is written as a "deleting" entry before the logs go and
cleared after, so a crash in between finishes the deletion at the next start instead of
resurrecting the topic. On this single broker every partition's leader, replicas and ISR
are this broker, with leader epoch 0, and the controller id is the broker id (BROKER-12).

**Producer ids.** The controller is also the authority for producer id blocks
(kafka_ref/txn/producer_ids.py): `allocate_producer_id_block` persists the start of the next
free block before it returns the claimed one, as KRaft's controller does with a
`ProducerIdsRecord`, so no id is handed out twice across restarts (IDEM-15).

**Dynamic broker configs** (KIP-226; server/dynamic_config.py) are kept here too, per
entity (this broker's id, or `<default>` for the cluster), as KRaft keeps them in
`ConfigRecord`s: persisted, then handed to the broker (CONFIG-6).

Rules: BROKER-12, BROKER-30..BROKER-36, CONFIG-6, DUR-13, IDEM-15.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kafka_ref.cluster.metadata import (
    BrokerEndpoint,
    InvalidTopicError,
    PartitionState,
    TopicDeletionDisabledError,
    TopicMetadata,
    TopicsImage,
    UnknownTopicOrPartitionError,
    validate_topic_name,
)
from kafka_ref.cluster.topic_requests import TopicAdministration, plan_partitions
from kafka_ref.config import LogConfig
from kafka_ref.files import write_atomically
from kafka_ref.metadata.directory_id import new_directory_id
from kafka_ref.server.broker_configs import BROKER_CONFIGS

logger = logging.getLogger("kafka_ref.cluster.embedded")

METADATA_FILE = "__cluster_metadata.json"
META_PROPERTIES = "meta.properties"


class MetadataLoadError(Exception):
    """The metadata in the data directory cannot be used (corrupt, or another node's)."""


class MetadataListener(Protocol):
    """What the broker does when metadata changes (Kafka: `BrokerMetadataPublisher`)."""

    def on_partitions_created(self, topic: str, partitions: range) -> None: ...

    def on_topic_deleted(self, topic: str, partitions: int) -> None: ...

    def on_topic_config(self, topic: str, config: LogConfig) -> None: ...


def new_cluster_id() -> str:
    """A cluster id as Kafka makes one (`Uuid.randomUuid`): a random UUID in URL-safe
    base64 without padding, never one that starts with "-", which a command line would
    take for an option (`kafka-storage.sh format --cluster-id -x...`)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def read_meta_properties(path: str, node_id: int) -> str | None:
    """The cluster id in a data directory's meta.properties (None: no file, or no id in it).

    A file written for another broker id is a `MetadataLoadError`: the directory belongs to
    another broker (Kafka's `MetaPropertiesEnsemble.verify`)."""
    if not os.path.exists(path):
        return None
    props = _read_properties(path)
    stored = props.get("node.id", props.get("broker.id"))
    if stored is not None and int(stored) != node_id:
        raise MetadataLoadError(
            f"{path}: stored node.id {stored} does not match the configured {node_id}"
        )
    return props.get("cluster.id") or None


def _read_properties(path: str) -> dict[str, str]:
    props = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "!")) and "=" in line:
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


def encode_directory_id(directory_id: uuid.UUID) -> str:
    """A directory id as `meta.properties` holds it: URL-safe base64, no padding (Kafka:
    `Uuid.toString`)."""
    return base64.urlsafe_b64encode(directory_id.bytes).rstrip(b"=").decode()


def ensure_directory_id(path: str) -> uuid.UUID:
    """The `directory.id` in the log directory's meta.properties at `path` (KIP-858). A
    file formatted without one gets a new id written into it, as Kafka's broker does for
    directories formatted before directory ids (`MetaPropertiesEnsemble.Copier`)."""
    props = _read_properties(path)
    stored = props.get("directory.id")
    if stored:
        try:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(stored + "=" * (-len(stored) % 4)))
        except ValueError as err:
            raise MetadataLoadError(f"{path}: directory.id {stored!r} is not a UUID") from err
    directory_id = new_directory_id()
    props["directory.id"] = encode_directory_id(directory_id)
    text = "".join(f"{k}={v}\n" for k, v in props.items())
    write_atomically(path, text.encode())
    return directory_id


class EmbeddedController(TopicAdministration):
    """The single broker's controller and metadata image (KRaft combined mode, quorum of 1)."""

    def __init__(
        self,
        data_dir: str | os.PathLike,
        endpoint: BrokerEndpoint,
        *,
        log_defaults: LogConfig | None = None,
        num_partitions: int = BROKER_CONFIGS["num.partitions"].default,
        default_replication_factor: int = BROKER_CONFIGS["default.replication.factor"].default,
        delete_topic_enable: bool = BROKER_CONFIGS["delete.topic.enable"].default,
        log_dirs: Iterable[str | os.PathLike] = (),
    ) -> None:
        self.data_dir = os.path.abspath(os.fspath(data_dir))
        # every log dir gets a meta.properties; by default data_dir is the only one
        self.log_dirs = tuple(os.path.abspath(os.fspath(d)) for d in log_dirs) or (self.data_dir,)
        self.endpoint = endpoint
        self.log_defaults = log_defaults or LogConfig()
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.delete_topic_enable = delete_topic_enable
        self.listeners: list[MetadataListener] = []
        self._topics = TopicsImage()
        self._deleting: dict[str, int] = {}  # topic -> partitions whose logs may remain
        self._next_producer_id = 0  # the first id of the next producer id block
        self._broker_configs: dict[str, dict[str, str]] = {}
        self._group_configs: dict[str, dict[str, str]] = {}  # group id -> its configs
        self.on_broker_config = lambda entity, configs: None  # the broker's DynamicBrokerConfig
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        self._load_topics()

    # ------------------------------------------------------------------ loading, persisting
    def _path(self, name: str) -> str:
        return os.path.join(self.data_dir, name)

    def _load_meta_properties(self) -> str:
        """The cluster id from the log dirs' meta.properties (a new one if none has it)."""
        node_id = self.endpoint.node_id
        paths = [os.path.join(d, META_PROPERTIES) for d in self.log_dirs]
        stored = {path: read_meta_properties(path, node_id) for path in paths}
        cluster_ids = sorted({c for c in stored.values() if c is not None})
        if len(cluster_ids) > 1:
            raise MetadataLoadError(
                f"the log dirs belong to different clusters ({', '.join(cluster_ids)}):"
                f" {', '.join(paths)}"
            )
        cluster_id = cluster_ids[0] if cluster_ids else new_cluster_id()
        text = f"#Written by kafka-ref\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
        for path, found in stored.items():
            if found is None:
                write_atomically(path, text.encode())
                logger.info("formatted %s: cluster id %s, node id %d", path, cluster_id, node_id)
        return cluster_id

    def _load_topics(self) -> None:
        path = self._path(METADATA_FILE)
        if not os.path.exists(path):
            return
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            self._topics = TopicsImage(
                {name: TopicMetadata.from_json(name, t) for name, t in data["topics"].items()}
            )
            self._deleting = {str(k): int(v) for k, v in data.get("deleting", {}).items()}
            self._next_producer_id = int(data.get("producer_ids", {}).get("next_producer_id", 0))
            self._broker_configs = {
                str(entity): {str(k): str(v) for k, v in configs.items()}
                for entity, configs in data.get("broker_configs", {}).items()
            }
            self._group_configs = {
                str(group): {str(k): str(v) for k, v in configs.items()}
                for group, configs in data.get("group_configs", {}).items()
            }
        except (OSError, ValueError, KeyError, TypeError, InvalidTopicError) as err:
            raise MetadataLoadError(f"cannot read topic metadata {path}: {err}") from err
        logger.info("loaded metadata of %d topics from %s", len(self._topics), path)

    def _persist(self) -> None:
        data = {
            "version": 1,
            "cluster_id": self.cluster_id,
            "topics": {name: t.to_json() for name, t in sorted(self._topics.items())},
            "deleting": dict(self._deleting),
            "producer_ids": {"next_producer_id": self._next_producer_id},
            "broker_configs": self._broker_configs,
            "group_configs": self._group_configs,
        }
        write_atomically(self._path(METADATA_FILE), json.dumps(data, indent=1).encode())

    # ------------------------------------------------------------------ reading
    @property
    def controller_id(self) -> int:
        return self.endpoint.node_id

    def brokers(self) -> list[BrokerEndpoint]:
        return [self.endpoint]

    def hold(self, resume: Callable[[], None]) -> bool:
        """Never: this broker is its own controller, its picture complete from the start."""
        return False

    def _live(self) -> list[tuple[int, str | None]]:
        return [(self.endpoint.node_id, self.endpoint.rack)]

    def topics(self) -> list[TopicMetadata]:
        return [self._topics[name] for name in sorted(self._topics)]

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def pending_deletions(self) -> dict[str, int]:
        return dict(self._deleting)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        meta = self._topics.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return None
        me = (self.endpoint.node_id,)
        return PartitionState(topic, partition, self.endpoint.node_id, 0, me, me)

    # ------------------------------------------------------------------ changing
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Create a topic after Kafka's checks, in Kafka's order; -1 means broker default."""
        meta, _ = self._plan_topic(name, num_partitions, replication_factor, configs, assignments)
        if validate_only:
            return meta
        self._topics[name] = meta
        self._persist()
        logger.info(
            "created topic %s with %d partition(s), replication factor %d%s",
            name,
            meta.partitions,
            meta.replication_factor,
            f", configs {meta.configs}" if meta.configs else "",
        )
        for listener in self.listeners:
            listener.on_partitions_created(name, range(meta.partitions))
        return meta

    def create_partitions(
        self,
        name: str,
        count: int,
        *,
        assignments: list[list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Grow a topic to `count` partitions (partitions never shrink)."""
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        grown, _ = plan_partitions(meta, count, assignments, live=self._live())
        if validate_only:
            return grown
        self._topics[name] = grown
        self._persist()
        logger.info("topic %s: partitions %d -> %d", name, meta.partitions, count)
        for listener in self.listeners:
            listener.on_partitions_created(name, range(meta.partitions, count))
        return grown

    def _store_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Persist the new overrides, then the logs take them (CTRL-15)."""
        meta = dataclasses.replace(self._topics[name], configs=configs)
        self._topics[name] = meta
        self._persist()
        logger.info("topic %s: config overrides now %s", name, configs)
        config = self.log_config(name) or self.log_defaults
        for listener in self.listeners:
            listener.on_topic_config(name, config)

    def _store_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        self._broker_configs[entity] = configs
        self._persist()
        logger.info("dynamic broker configs of %s now %s", entity, configs)

    def _store_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        self._persist()
        logger.info("group configs of %s now %s", group_id, configs)

    def delete_topic(self, name: str) -> None:
        """Delete a topic: persist its removal, delete its logs, then clear the tombstone."""
        if not self.delete_topic_enable:
            raise TopicDeletionDisabledError("Topic deletion is disabled.")
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
        del self._topics[name]
        self._deleting[name] = meta.partitions
        self._persist()
        self.finish_deletion(name)
        logger.info("deleted topic %s (%d partitions)", name, meta.partitions)

    def finish_deletion(self, name: str) -> None:
        """Delete the logs of a topic marked deleting (also after a crash), then forget it."""
        partitions = self._deleting.get(name)
        if partitions is None:
            return
        for listener in self.listeners:
            listener.on_topic_deleted(name, partitions)
        del self._deleting[name]
        self._persist()

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """Claim `size` producer ids for `broker_id`; persisted before returned (IDEM-15).

        Returns the first id of the block. The ids are burnt even if the caller never uses
        them: skipping ids is harmless, repeating one is not.
        """
        first = self._next_producer_id
        if size <= 0 or first > 2**63 - 1 - size:
            raise OverflowError(f"cannot claim {size} producer ids at {first}")
        self._next_producer_id = first + size
        self._persist()
        logger.debug("broker %d claimed producer ids [%d, %d)", broker_id, first, first + size)
        return first

    def adopt_topic(self, name: str, partitions: int) -> TopicMetadata:
        """Register a topic whose logs exist without metadata (e.g. written by another tool).

        The controller never deletes data it does not know about (DUR-10): it adopts it.
        """
        meta = TopicMetadata(validate_topic_name(name), uuid.uuid4(), partitions)
        self._topics[name] = meta
        self._persist()
        logger.warning("adopted topic %s (%d partitions) found on disk", name, partitions)
        return meta

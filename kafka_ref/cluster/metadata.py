"""Topics, partitions and the rules for naming them: the values of cluster metadata.

Every Kafka broker keeps a picture of the cluster (Kafka: `MetadataImage` in KRaft,
`MetadataCache` on every broker): the topics, each with a UUID (`topic_id`), a number of
partitions and its config overrides; for each partition a leader, its replicas and its
in-sync replicas (ISR), and a leader epoch that rises with every leader change. Clients
learn this picture through the Metadata API and send each request to a partition's leader.

This module holds those values and the checks every controller applies before it changes
them, with Kafka's error codes:

* a topic name is 1..249 characters of `[a-zA-Z0-9._-]` and not `.` or `..` (Kafka
  `Topic.validate`); 249 leaves room for `-<partition>` in a 255-byte directory name
  (INVALID_TOPIC_EXCEPTION, BROKER-30);
* names that differ only in `.` versus `_` collide, because metric names replace `.` with
  `_` (Kafka `Topic.hasCollision`, INVALID_TOPIC_EXCEPTION);
* partition counts and replication factors must be positive, or -1 for the broker default
  (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, BROKER-31).

The controller (embedded.py) owns the metadata and persists it; handlers only read it.
With ZooKeeper the owner is the cluster in ZooKeeper, and each broker's `ZkClusterMetadata`
(zk_metadata.py) is its view of it. Both offer `ClusterMetadataApi`, the one interface the
request handlers call (`apis.controller`), so no handler asks which mode it runs in.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafka_ref.config import LogConfig

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.security.listeners import EndPoint

MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS_PER_TOPIC = 10_000  # kafka-ref's guard against one request filling a disk
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidTopicError(KafkaError):
    code = ErrorCode.INVALID_TOPIC


class TopicExistsError(KafkaError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    code = ErrorCode.INVALID_REPLICATION_ASSIGNMENT


class UnknownTopicOrPartitionError(KafkaError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class InvalidRequestError(KafkaError):
    code = ErrorCode.INVALID_REQUEST


class TopicDeletionDisabledError(KafkaError):
    code = ErrorCode.TOPIC_DELETION_DISABLED


def validate_topic_name(name: Any) -> str:
    """Return `name` if it is a legal topic name, else raise InvalidTopicError (Kafka's words)."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters,"
            f" topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return name


def unify_collision_chars(name: str) -> str:
    """The name with `.` replaced by `_`: two topics with the same result collide."""
    return name.replace(".", "_")


def resolve_partitions(requested: int, default: int) -> int:
    """-1 means the broker's num.partitions; anything else must be 1..MAX (BROKER-31)."""
    count = default if requested == -1 else requested
    if count <= 0:
        raise InvalidPartitionsError(
            "Number of partitions was set to an invalid non-positive value."
        )
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitionsError(
            f"Number of partitions {count} exceeds kafka-ref's limit {MAX_PARTITIONS_PER_TOPIC}."
        )
    return count


def resolve_replication_factor(requested: int, default: int, live_brokers: int) -> int:
    """-1 means default.replication.factor; it must be 1..number of live brokers."""
    factor = default if requested == -1 else requested
    if factor <= 0:
        raise InvalidReplicationFactorError(
            "Replication factor must be larger than 0, or -1 to use the default value."
        )
    if factor > live_brokers:
        raise InvalidReplicationFactorError(
            f"Unable to replicate the partition {factor} time(s): The target replication factor"
            f" of {factor} cannot be reached because only {live_brokers} broker(s) are"
            " registered."
        )
    return factor


@dataclasses.dataclass(frozen=True)
class TopicMetadata:
    """One topic as the controller knows it (Kafka: `TopicImage`)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = dataclasses.field(default_factory=dict)  # overrides only
    internal: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "topic_id": str(self.topic_id),
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": dict(self.configs),
            "internal": self.internal,
        }

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> TopicMetadata:
        return cls(
            name=validate_topic_name(name),
            topic_id=uuid.UUID(data["topic_id"]),
            partitions=int(data["partitions"]),
            replication_factor=int(data.get("replication_factor", 1)),
            configs={str(k): str(v) for k, v in data.get("configs", {}).items()},
            internal=bool(data.get("internal", False)),
        )


class TopicsImage(dict[str, TopicMetadata]):
    """The topics by name, with an index by topic id (Kafka: `TopicsImage`, whose
    `topicsByName` and `topicsById` answer Metadata v12 and Fetch v13+ lookups by id).

    A dict of name -> TopicMetadata whose every write keeps the index in step."""

    def __init__(self, topics: Mapping[str, TopicMetadata] | None = None) -> None:
        super().__init__()
        self.by_id: dict[uuid.UUID, TopicMetadata] = {}
        for name, meta in (topics or {}).items():
            self[name] = meta

    def __setitem__(self, name: str, meta: TopicMetadata) -> None:
        assert name == meta.name, f"{meta.name} stored as {name}"
        old = self.get(name)
        if old is not None:
            del self.by_id[old.topic_id]
        super().__setitem__(name, meta)
        self.by_id[meta.topic_id] = meta

    def __delitem__(self, name: str) -> None:
        del self.by_id[self[name].topic_id]
        super().__delitem__(name)

    def pop(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name not in self:
            return default
        meta = self[name]
        del self[name]
        return meta


@dataclasses.dataclass(frozen=True)
class PartitionState:
    """Leader, replicas and ISR of one partition (Kafka: `PartitionRegistration`)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    controller_epoch: int = 0  # the epoch of the controller that wrote it (ZooKeeper mode)
    zk_version: int = 0  # the state znode's version: the partition epoch AlterPartition names
    elr: tuple[int, ...] = ()  # KRaft: eligible leader replicas (KIP-966, ELR-1)
    last_known_elr: tuple[int, ...] = ()  # KRaft: the ELR when the last member left it


@dataclasses.dataclass(frozen=True)
class BrokerEndpoint:
    """Where clients reach a broker: its id and advertised listener (Kafka: `Node`)."""

    node_id: int
    host: str  # the inter-broker listener's advertised address
    port: int
    rack: str | None = None
    endpoints: tuple[EndPoint, ...] = ()  # every listener's advertised address (SEC-2)

    @classmethod
    def reached_on(
        cls, node_id: int, endpoints: tuple[EndPoint, ...], rack: str | None, listener: str
    ) -> BrokerEndpoint:
        """A broker known by its listeners' endpoints (UpdateMetadata's live brokers), whose
        address for the other brokers is that of `listener`, the inter-broker listener every
        broker of a cluster shares (Kafka: `MetadataCache.getAliveBrokerNode(id,
        interBrokerListenerName)`); PLAINTEXT or its first listener if it has no such one."""
        own = [e for e in endpoints if e.listener == listener]
        plain = [e for e in endpoints if e.listener == "PLAINTEXT"]
        first = (own or plain or list(endpoints))[0]
        return cls(node_id, first.host, first.port, rack, endpoints)

    def address(self, listener: str | None) -> tuple[str, int] | None:
        """Where a client of `listener` reaches this broker; None if it has no such listener
        (a broker that registered no endpoints is reached at its one address)."""
        if listener is None or not self.endpoints:
            return self.host, self.port
        for endpoint in self.endpoints:
            if endpoint.listener == listener:
                return endpoint.host, endpoint.port
        return None


class ClusterMetadataApi(Protocol):
    """What the request handlers call on `apis.controller`, in either mode.

    Implemented by `EmbeddedController` (one broker, its own controller) and by
    `ZkClusterMetadata` (a broker of a cluster on ZooKeeper). Reads come from the broker's
    local picture (Kafka: `MetadataCache`); the changes are validated here with Kafka's
    errors and then made by the authority (the embedded controller itself, or ZooKeeper and
    the elected controller).
    """

    endpoint: BrokerEndpoint  # this broker
    cluster_id: str
    log_defaults: LogConfig

    @property
    def controller_id(self) -> int: ...

    def brokers(self) -> list[BrokerEndpoint]: ...

    def hold(self, resume: Callable[[], None]) -> bool:
        """Whether a request answered from the picture must wait until the picture is
        complete (CTRL-32); if so `resume` runs then."""
        ...

    def topics(self) -> list[TopicMetadata]: ...

    def topic(self, name: str) -> TopicMetadata | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """The topic with this id (Kafka: `MetadataCache.getTopicName`), or None."""
        ...

    def partition_state(self, topic: str, partition: int) -> PartitionState | None: ...

    def log_config(self, topic: str) -> LogConfig | None: ...

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str], *, validate_only: bool = False
    ) -> None: ...

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata: ...

    def create_partitions(
        self,
        name: str,
        count: int,
        *,
        assignments: list[list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata: ...

    def delete_topic(self, name: str) -> None: ...

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int: ...

    def broker_configs(self, entity: str) -> dict[str, str]: ...

    def alter_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None: ...

    def group_configs(self, group_id: str) -> dict[str, str]: ...

    def alter_group_configs(self, group_id: str, configs: Mapping[str, str]) -> None: ...

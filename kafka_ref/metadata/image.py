"""The metadata image: the cluster's state, the fold of the metadata log's records.

The metadata log is the cluster's history, one record per change. Every broker and
controller replays it into the same state, the *image* (Kafka: `MetadataImage`): which
features are on at what level, which brokers are registered, which topics exist with which
partitions, leaders and ISRs, the configs, the next producer id block, the ACLs, the SCRAM
credentials, the client quotas. An image is immutable: the records since it go into a
*delta* (Kafka: `MetadataDelta`), and `delta.apply()` is the next image. What a broker serves
(a Metadata response, a partition's leadership) is read from its current image.

    image0 --replay(r1, r2, ...)--> delta --apply()--> image1

Replaying is strict: a record that makes no sense given the state before it (a
PartitionRecord for a topic that does not exist, fencing a broker at another epoch, removing
an ACL nobody added) raises `MetadataReplayError` with one line that names it, as Kafka's
deltas throw. Such a record means the log is corrupt or was written by a faulty controller.

The other way round, `image.records()` writes the image as records that rebuild it (Kafka:
`MetadataImage.write`): the contents of a snapshot (snapshot.py). Replaying them from the
empty image gives the image back: that is what makes a snapshot a faithful cut of the log.

Metadata transactions (KIP-868): the records between a BeginTransactionRecord and its
EndTransactionRecord apply together, and an AbortTransactionRecord drops them (Kafka: the
`MetadataLoader` batches them); `load` does this. NoOpRecords (the leader's heartbeats in the
log) change nothing.

Rules: META-7 (replay builds the image), META-8 (a record that makes no sense is refused),
META-9 (an image written as records and replayed is the same image).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_ref.metadata import directory_id
from kafka_ref.metadata import records as r
from kafka_ref.metadata.serde import ApiMessageAndVersion

METADATA_VERSION = "metadata.version"
NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord: the leader did not change


class MetadataReplayError(RuntimeError):
    """A record that cannot follow the state before it (Kafka's deltas throw)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener of a broker or controller: name, host, port, security protocol."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker (Kafka: `BrokerRegistration`)."""

    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[tuple[str, int, int], ...]  # (name, min, max)
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID, ...] = ()
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """A registered controller (Kafka: `ControllerRegistration`)."""

    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition's replicas and leadership (Kafka: `PartitionRegistration`).

    The leader epoch changes when the leader does; the partition epoch with every change.
    The ELR (KIP-966) are replicas that left the ISR but may still be elected cleanly; the
    last known ELR, the ELR the partition had when it lost them all.
    """

    replicas: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def merge(self, change: Any) -> PartitionRegistration:
        """The partition after a PartitionChangeRecord (Kafka: `PartitionRegistration.merge`):
        each field the record sets replaces ours; a new leader bumps the leader epoch; every
        change bumps the partition epoch."""
        replicas = self.replicas if change.replicas is None else tuple(change.replicas)
        directories = self.directories if change.directories is None else change.directories
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if change.leader_recovery_state != -1:  # -1: unchanged
            recovery = change.leader_recovery_state
        return PartitionRegistration(
            replicas=replicas,
            directories=_directories(directories, len(replicas)),
            isr=self.isr if change.isr is None else tuple(change.isr),
            removing_replicas=_or(change.removing_replicas, self.removing_replicas),
            adding_replicas=_or(change.adding_replicas, self.adding_replicas),
            leader=leader,
            leader_recovery_state=recovery,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            elr=_or(change.eligible_leader_replicas, self.elr),
            last_known_elr=_or(change.last_known_elr, self.last_known_elr),
        )


def _or(new: list[int] | None, old: tuple[int, ...]) -> tuple[int, ...]:
    return old if new is None else tuple(new)


def _directories(directories: Iterable[uuid.UUID], replicas: int) -> tuple[uuid.UUID, ...]:
    """A directory per replica; none known (an old record) means MIGRATING for each
    (Kafka: `PartitionRegistration.defaultToMigrating`)."""
    directories = tuple(directories)
    return directories if len(directories) == replicas else (directory_id.MIGRATING,) * replicas


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, id and partitions (Kafka: `TopicImage`)."""

    name: str
    id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """An ACL as the authorizer keeps it (Kafka: `StandardAcl`)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class ScramCredentialData:
    """A user's SCRAM credential for one mechanism (Kafka: `ScramCredentialData`)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class DelegationTokenData:
    """A delegation token's details (Kafka: `DelegationTokenData`)."""

    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


QuotaEntity = tuple[tuple[str, str | None], ...]  # ((entity type, name or None), ...) sorted
ConfigResource = tuple[int, str]  # (resource type, resource name); type 2 topic, 4 broker


@dataclass(frozen=True)
class MetadataImage:
    """The cluster's metadata at one point of the log. Each field is one of Kafka's images."""

    features: Mapping[str, int] = field(default_factory=dict)  # FeaturesImage
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)  # ClusterImage
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=dict)
    topics: Mapping[uuid.UUID, TopicImage] = field(default_factory=dict)  # TopicsImage
    configs: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=dict)
    next_producer_id: int = -1  # ProducerIdsImage: the first id of the next block
    acls: Mapping[uuid.UUID, StandardAcl] = field(default_factory=dict)  # AclsImage
    scram: Mapping[tuple[int, str], ScramCredentialData] = field(default_factory=dict)
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    delegation_tokens: Mapping[str, DelegationTokenData] = field(default_factory=dict)

    def topic_by_name(self, name: str) -> TopicImage | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def records(self) -> list[ApiMessageAndVersion]:
        """The image as the records that rebuild it, for a snapshot (Kafka:
        `MetadataImage.write`): features first, metadata.version before any other."""
        return [ApiMessageAndVersion.of(message) for message in _image_messages(self)]


EMPTY = MetadataImage()


def _image_messages(image: MetadataImage) -> Iterable[Any]:
    # FeaturesImage.write: metadata.version first, so a reader knows the levels that follow.
    features = sorted(image.features.items(), key=lambda kv: (kv[0] != METADATA_VERSION, kv[0]))
    for name, level in features:
        yield r.FeatureLevelRecord(name=name, feature_level=level)
    for broker in image.brokers.values():
        yield r.RegisterBrokerRecord(
            broker_id=broker.id,
            is_migrating_zk_broker=broker.is_migrating_zk_broker,
            incarnation_id=broker.incarnation_id,
            broker_epoch=broker.epoch,
            end_points=[
                r.RegisterBrokerRecord.BrokerEndpoint(**_fields(e)) for e in broker.listeners
            ],
            features=[
                r.RegisterBrokerRecord.BrokerFeature(
                    name=name, min_supported_version=low, max_supported_version=high
                )
                for name, low, high in broker.supported_features
            ],
            rack=broker.rack,
            fenced=broker.fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown,
            log_dirs=list(broker.directories),
            cordoned_log_dirs=_list(broker.cordoned_log_dirs),
        )
    for controller in image.controllers.values():
        yield r.RegisterControllerRecord(
            controller_id=controller.id,
            incarnation_id=controller.incarnation_id,
            zk_migration_ready=controller.zk_migration_ready,
            end_points=[
                r.RegisterControllerRecord.ControllerEndpoint(**_fields(e))
                for e in controller.listeners
            ],
            features=[
                r.RegisterControllerRecord.ControllerFeature(
                    name=name, min_supported_version=low, max_supported_version=high
                )
                for name, low, high in controller.supported_features
            ],
        )
    for topic in image.topics.values():
        yield r.TopicRecord(name=topic.name, topic_id=topic.id)
        for index, p in sorted(topic.partitions.items()):
            yield r.PartitionRecord(
                partition_id=index,
                topic_id=topic.id,
                replicas=list(p.replicas),
                isr=list(p.isr),
                removing_replicas=list(p.removing_replicas),
                adding_replicas=list(p.adding_replicas),
                leader=p.leader,
                leader_recovery_state=p.leader_recovery_state,
                leader_epoch=p.leader_epoch,
                partition_epoch=p.partition_epoch,
                directories=list(p.directories),
                eligible_leader_replicas=list(p.elr) or None,  # written only when set
                last_known_elr=list(p.last_known_elr) or None,
            )
    for (resource_type, resource_name), entries in image.configs.items():
        for name, value in entries.items():
            yield r.ConfigRecord(
                resource_type=resource_type, resource_name=resource_name, name=name, value=value
            )
    for entity, quotas in image.client_quotas.items():
        for key, value in quotas.items():
            yield r.ClientQuotaRecord(
                entity=[
                    r.ClientQuotaRecord.EntityData(entity_type=kind, entity_name=name)
                    for kind, name in entity
                ],
                key=key,
                value=value,
                remove=False,
            )
    if image.next_producer_id >= 0:
        yield r.ProducerIdsRecord(
            broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id
        )
    for acl_id, acl in image.acls.items():
        yield r.AccessControlEntryRecord(id=acl_id, **_fields(acl))
    for (mechanism, name), credential in image.scram.items():
        yield r.UserScramCredentialRecord(name=name, mechanism=mechanism, **_fields(credential))
    for token_id, token in image.delegation_tokens.items():
        yield r.DelegationTokenRecord(
            token_id=token_id, **{**_fields(token), "renewers": list(token.renewers)}
        )


def _listeners(end_points: list[Any]) -> tuple[Endpoint, ...]:
    """Listeners by name: Kafka keeps them in a map, so their order in a record means nothing."""
    return tuple(
        sorted(
            (Endpoint(e.name, e.host, e.port, e.security_protocol) for e in end_points),
            key=lambda e: e.name,
        )
    )


def _features(features: list[Any]) -> tuple[tuple[str, int, int], ...]:
    """Supported feature ranges by name (a map in Kafka too)."""
    return tuple(
        sorted((f.name, f.min_supported_version, f.max_supported_version) for f in features)
    )


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def _list(values: tuple | None) -> list | None:
    return None if values is None else list(values)


class MetadataDelta:
    """The changes since an image (Kafka: `MetadataDelta`): `replay` records, then `apply`."""

    def __init__(self, image: MetadataImage = EMPTY):
        self.image = image
        # Working copies of the image's maps, shallow: entries are immutable and replaced.
        self.features = dict(image.features)
        self.brokers = dict(image.brokers)
        self.controllers = dict(image.controllers)
        self.topics = {tid: dict(t.partitions) for tid, t in image.topics.items()}
        self.topic_names = {tid: t.name for tid, t in image.topics.items()}
        self.configs = {resource: dict(entries) for resource, entries in image.configs.items()}
        self.next_producer_id = image.next_producer_id
        self.acls = dict(image.acls)
        self.scram = dict(image.scram)
        self.client_quotas = {entity: dict(q) for entity, q in image.client_quotas.items()}
        self.delegation_tokens = dict(image.delegation_tokens)

    def replay(self, entry: ApiMessageAndVersion) -> None:
        """Apply one record to the delta, or raise MetadataReplayError."""
        handler = getattr(self, f"_replay_{entry.name}", None)
        if handler is None:
            raise MetadataReplayError(f"no replay for {entry.name}")
        handler(entry.message)

    def apply(self) -> MetadataImage:
        """The image after every record replayed so far."""
        return MetadataImage(
            features=dict(self.features),
            brokers=dict(self.brokers),
            controllers=dict(self.controllers),
            topics={
                tid: TopicImage(self.topic_names[tid], tid, dict(partitions))
                for tid, partitions in self.topics.items()
            },
            configs={k: dict(v) for k, v in self.configs.items()},
            next_producer_id=self.next_producer_id,
            acls=dict(self.acls),
            scram=dict(self.scram),
            client_quotas={k: dict(v) for k, v in self.client_quotas.items()},
            delegation_tokens=dict(self.delegation_tokens),
        )

    # -- features -------------------------------------------------------------------------

    def _replay_FeatureLevelRecord(self, record: Any) -> None:
        # Level 0 turns a feature off; metadata.version is never off (FeaturesDelta.replay).
        if record.feature_level == 0 and record.name != METADATA_VERSION:
            self.features.pop(record.name, None)
        else:
            self.features[record.name] = record.feature_level

    # -- the cluster ----------------------------------------------------------------------

    def _replay_RegisterBrokerRecord(self, record: Any) -> None:
        self.brokers[record.broker_id] = BrokerRegistration(
            id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=record.incarnation_id,
            listeners=_listeners(record.end_points),
            supported_features=_features(record.features),
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            is_migrating_zk_broker=record.is_migrating_zk_broker,
            directories=tuple(record.log_dirs),
            cordoned_log_dirs=None
            if record.cordoned_log_dirs is None
            else tuple(record.cordoned_log_dirs),
        )

    def _replay_UnregisterBrokerRecord(self, record: Any) -> None:
        self.brokers.pop(record.broker_id, None)

    def _broker(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        """ClusterDelta.getBrokerOrThrow: the broker must be registered, at that epoch."""
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise MetadataReplayError(
                f"Tried to {action} broker {broker_id}, but that broker was not registered"
            )
        if broker.epoch != epoch:
            raise MetadataReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not "
                f"match the current broker epoch, {broker.epoch}"
            )
        return broker

    def _replay_FenceBrokerRecord(self, record: Any) -> None:
        broker = self._broker(record.id, record.epoch, "fence")
        self.brokers[record.id] = replace(broker, fenced=True)

    def _replay_UnfenceBrokerRecord(self, record: Any) -> None:
        broker = self._broker(record.id, record.epoch, "unfence")
        self.brokers[record.id] = replace(broker, fenced=False)

    def _replay_BrokerRegistrationChangeRecord(self, record: Any) -> None:
        broker = self._broker(record.broker_id, record.broker_epoch, "change")
        fenced = {-1: False, 0: broker.fenced, 1: True}.get(record.fenced)
        if fenced is None:
            raise MetadataReplayError(f"unknown value for fenced field: {record.fenced}")
        shutdown = {0: broker.in_controlled_shutdown, 1: True}.get(record.in_controlled_shutdown)
        if shutdown is None:
            raise MetadataReplayError(
                f"unknown value for inControlledShutdown field: {record.in_controlled_shutdown}"
            )
        directories = tuple(record.log_dirs) or broker.directories  # empty: unchanged
        cordoned = broker.cordoned_log_dirs
        if record.cordoned_log_dirs is not None:
            cordoned = tuple(record.cordoned_log_dirs)
        self.brokers[record.broker_id] = replace(
            broker,
            fenced=fenced,
            in_controlled_shutdown=shutdown,
            directories=directories,
            cordoned_log_dirs=cordoned,
        )

    def _replay_RegisterControllerRecord(self, record: Any) -> None:
        self.controllers[record.controller_id] = ControllerRegistration(
            id=record.controller_id,
            incarnation_id=record.incarnation_id,
            zk_migration_ready=record.zk_migration_ready,
            listeners=_listeners(record.end_points),
            supported_features=_features(record.features),
        )

    def _replay_UnregisterControllerRecord(self, record: Any) -> None:
        self.controllers.pop(record.controller_id, None)

    # -- topics ---------------------------------------------------------------------------

    def _replay_TopicRecord(self, record: Any) -> None:
        for tid, name in self.topic_names.items():
            if name == record.name and tid != record.topic_id:
                raise MetadataReplayError(
                    f"Topic {record.name} already exists with id {tid}, not {record.topic_id}"
                )
        self.topics[record.topic_id] = {}
        self.topic_names[record.topic_id] = record.name

    def _partitions(self, topic_id: uuid.UUID, record: Any) -> dict[int, PartitionRegistration]:
        partitions = self.topics.get(topic_id)
        if partitions is None:
            raise MetadataReplayError(
                f"{record._schema.name} for partition {record.partition_id} of unknown topic "
                f"id {topic_id}"
            )
        return partitions

    def _replay_PartitionRecord(self, record: Any) -> None:
        partitions = self._partitions(record.topic_id, record)
        partitions[record.partition_id] = PartitionRegistration(
            replicas=tuple(record.replicas),
            directories=_directories(record.directories, len(record.replicas)),
            isr=tuple(record.isr),
            removing_replicas=tuple(record.removing_replicas),
            adding_replicas=tuple(record.adding_replicas),
            leader=record.leader,
            leader_recovery_state=record.leader_recovery_state,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            elr=tuple(record.eligible_leader_replicas or ()),
            last_known_elr=tuple(record.last_known_elr or ()),
        )

    def _replay_PartitionChangeRecord(self, record: Any) -> None:
        partitions = self._partitions(record.topic_id, record)
        partition = partitions.get(record.partition_id)
        if partition is None:
            raise MetadataReplayError(
                f"Unable to find partition {self.topic_names[record.topic_id]}:"
                f"{record.partition_id} for a PartitionChangeRecord"
            )
        partitions[record.partition_id] = partition.merge(record)

    def _replay_ClearElrRecord(self, record: Any) -> None:
        # TopicsDelta.replay(ClearElrRecord): one topic by name, or every topic if empty.
        if record.topic_name:
            ids = [tid for tid, name in self.topic_names.items() if name == record.topic_name]
            if not ids:
                raise MetadataReplayError(
                    f"Unable to clear the ELR of unknown topic {record.topic_name}"
                )
        else:
            ids = list(self.topics)
        clear = r.PartitionChangeRecord(eligible_leader_replicas=[], last_known_elr=[])
        for tid in ids:
            partitions = self.topics[tid]
            for index, partition in partitions.items():
                if partition.elr or partition.last_known_elr:
                    partitions[index] = partition.merge(clear)

    def _replay_RemoveTopicRecord(self, record: Any) -> None:
        if record.topic_id not in self.topics:
            raise MetadataReplayError(
                f"Unable to delete topic with id {record.topic_id}: no such topic found"
            )
        del self.topics[record.topic_id]
        name = self.topic_names.pop(record.topic_id)
        self.configs.pop((2, name), None)  # a topic's configs go with it (TOPIC resource)

    # -- configs, producer ids ------------------------------------------------------------

    def _replay_ConfigRecord(self, record: Any) -> None:
        resource = (record.resource_type, record.resource_name)
        entries = self.configs.setdefault(resource, {})
        if record.value is None:  # null: the key is deleted
            entries.pop(record.name, None)
        else:
            entries[record.name] = record.value
        if not entries:
            del self.configs[resource]

    def _replay_ProducerIdsRecord(self, record: Any) -> None:
        self.next_producer_id = record.next_producer_id

    # -- security -------------------------------------------------------------------------

    def _replay_AccessControlEntryRecord(self, record: Any) -> None:
        self.acls[record.id] = StandardAcl(
            record.resource_type,
            record.resource_name,
            record.pattern_type,
            record.principal,
            record.host,
            record.operation,
            record.permission_type,
        )

    def _replay_RemoveAccessControlEntryRecord(self, record: Any) -> None:
        if self.acls.pop(record.id, None) is None:
            raise MetadataReplayError(f"Failed to find existing ACL with ID {record.id}")

    def _replay_UserScramCredentialRecord(self, record: Any) -> None:
        self.scram[(record.mechanism, record.name)] = ScramCredentialData(
            bytes(record.salt),
            bytes(record.stored_key),
            bytes(record.server_key),
            record.iterations,
        )

    def _replay_RemoveUserScramCredentialRecord(self, record: Any) -> None:
        self.scram.pop((record.mechanism, record.name), None)

    def _replay_DelegationTokenRecord(self, record: Any) -> None:
        self.delegation_tokens[record.token_id] = DelegationTokenData(
            record.owner,
            record.requester,
            tuple(record.renewers),
            record.issue_timestamp,
            record.max_timestamp,
            record.expiration_timestamp,
        )

    def _replay_RemoveDelegationTokenRecord(self, record: Any) -> None:
        self.delegation_tokens.pop(record.token_id, None)

    # -- client quotas --------------------------------------------------------------------

    def _replay_ClientQuotaRecord(self, record: Any) -> None:
        entity = tuple(sorted((e.entity_type, e.entity_name) for e in record.entity))
        quotas = self.client_quotas.setdefault(entity, {})
        if record.remove:
            quotas.pop(record.key, None)
        else:
            quotas[record.key] = record.value
        if not quotas:
            del self.client_quotas[entity]

    # -- records that change no state -----------------------------------------------------

    def _replay_NoOpRecord(self, record: Any) -> None:
        pass

    def _replay_ZkMigrationStateRecord(self, record: Any) -> None:
        pass  # a ZooKeeper migration finished under Kafka 3.x; Kafka 4 keeps no such state


TRANSACTION_RECORDS = ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")


def load(entries: Iterable[ApiMessageAndVersion], image: MetadataImage = EMPTY) -> MetadataImage:
    """Replay `entries` onto `image`, metadata transactions applied whole or not at all
    (Kafka: `MetadataLoader`); records of a transaction still open at the end are left out."""
    delta = MetadataDelta(image)
    pending: list[ApiMessageAndVersion] | None = None
    for entry in entries:
        if entry.name == "BeginTransactionRecord":
            if pending is not None:
                raise MetadataReplayError("BeginTransactionRecord inside an open transaction")
            pending = []
        elif entry.name in ("EndTransactionRecord", "AbortTransactionRecord"):
            if pending is None:
                raise MetadataReplayError(f"{entry.name} without a BeginTransactionRecord")
            if entry.name == "EndTransactionRecord":
                for held in pending:
                    delta.replay(held)
            pending = None
        elif pending is not None:
            pending.append(entry)
        else:
            delta.replay(entry)
    return delta.apply()

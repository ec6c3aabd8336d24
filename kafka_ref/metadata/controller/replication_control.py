"""Topics, partitions, ISRs and leaders in KRaft (Kafka: `ReplicationControlManager`).

The controller's decisions about replicas, each returning the records that make it:

* **CreateTopics**: checked as the ZooKeeper-mode controller checks it (BROKER-30,
  BROKER-31, kafka_ref/cluster/topic_requests.py), replicas placed on the active brokers
  (CTRL-8); a TopicRecord, a PartitionRecord per partition (leader the first replica that
  is active, ISR the active replicas, epochs 0) and a ConfigRecord per override. An explicit
  assignment may name any registered broker, but a partition needs one active replica.
* **DeleteTopics**: a RemoveTopicRecord (the topic's configs go with it on replay).
* **CreatePartitions**: PartitionRecords for the new partitions, placed like a new topic's.
* **AlterPartition**: the leader's new ISR, after Kafka's checks in Kafka's order
  (KCTRL-8): the leader epoch it names is current (FENCED_LEADER_EPOCH if older,
  NOT_CONTROLLER if newer: this controller is behind), it is the leader (INVALID_REQUEST),
  the partition epoch is current (INVALID_UPDATE_VERSION: the controller changed the
  partition since), the ISR is among the replicas and holds the leader (INVALID_REQUEST),
  and every member is registered, unfenced, not shutting down and at the broker epoch named
  (INELIGIBLE_REPLICA). The ELR follows from the new ISR (ELR-1).
* **AlterPartitionReassignments** (KCTRL-16): moving a partition to a target replica list
  (every broker registered, none twice: INVALID_REPLICA_ASSIGNMENT), completed by the
  AlterPartition that brings the last new replica into the ISR (NEW_LEADER_ELECTED to a
  leader that the completion replaced), or cancelled (NO_REASSIGNMENT_IN_PROGRESS if none
  is under way; INVALID_REPLICA_ASSIGNMENT if going back would need an unclean election).
* **Log directories** (KIP-858, KCTRL-21, KCTRL-22): each replica's directory, set by
  the broker's AssignReplicasToDirs; a replica whose directory its broker reported offline
  may neither lead nor be in an ISR, so a heartbeat naming a newly failed directory moves
  the leaderships of its replicas and takes them out of the ISRs and ELRs.
* **Elections** when a broker is fenced, shuts down or is unfenced (KCTRL-7), and
  **ElectLeaders** (KCTRL-9): preferred (the first replica, if active and in the ISR) or
  unclean (only for a partition without a leader).

Rules: KCTRL-6..KCTRL-9, KCTRL-16, KCTRL-21, KCTRL-22.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kafka_ref.cluster.metadata import (
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    TopicMetadata,
    UnknownTopicOrPartitionError,
)
from kafka_ref.cluster.topic_requests import plan_partitions, plan_topic
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata import directory_id
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller import partition_change
from kafka_ref.metadata.controller.cluster_control import active_brokers
from kafka_ref.metadata.controller.config_control import (
    TOPIC,
    min_insync_replicas,
    unclean_leader_election,
)
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)

PartitionRef = tuple[TopicImage, int, PartitionRegistration]


def partitions(image: MetadataImage) -> Iterator[PartitionRef]:
    for topic in image.topics.values():
        for index, partition in sorted(topic.partitions.items()):
            yield topic, index, partition


def has_leaderships(image: MetadataImage, broker_id: int) -> bool:
    return any(p.leader == broker_id for _, _, p in partitions(image))


# -- elections when brokers come and go ----------------------------------------------------


def _elect_all(
    image: MetadataImage,
    config: ControllerConfig,
    chosen: Sequence[PartitionRef],
    live: Collection[int],
    unclean_shutdown: Collection[int] = (),
) -> list[r.PartitionChangeRecord]:
    records = []
    for topic, index, partition in chosen:
        record = partition_change.elect(
            topic.id,
            index,
            partition,
            online_replicas(image, partition, live),
            min_insync_replicas(image, config, topic.name),
            unclean=unclean_leader_election(image, config, topic.name),
            unclean_shutdown=unclean_shutdown,
        )
        if record is not None:
            records.append(record)
    return records


def replica_online(image: MetadataImage, broker_id: int, directory: uuid.UUID) -> bool:
    """Whether the broker's replica in `directory` is in one of its online directories
    (KCTRL-21; Kafka: `BrokerRegistration.hasOnlineDir`)."""
    broker = image.brokers.get(broker_id)
    return broker is not None and directory_id.is_online(directory, broker.directories)


def online_replicas(
    image: MetadataImage, partition: PartitionRegistration, live: Collection[int]
) -> set[int]:
    """The replicas of `partition` that may lead or join its ISR: on a `live` broker and in
    an online directory of it (Kafka: `LeaderAcceptor`)."""
    return {
        b
        for b, d in zip(partition.replicas, partition.directories, strict=True)
        if b in live and replica_online(image, b, d)
    }


def broker_leaves(
    image: MetadataImage, config: ControllerConfig, broker_id: int
) -> list[r.PartitionChangeRecord]:
    """The broker is fenced, shuts down or unregisters: it leaves every ISR it is in, and
    the partitions it led elect a new leader without it (Kafka: `handleBrokerFenced`,
    `handleBrokerInControlledShutdown`; KCTRL-7)."""
    live = active_brokers(image) - {broker_id}
    chosen = [ref for ref in partitions(image) if broker_id in ref[2].isr]
    return _elect_all(image, config, chosen, live)


def broker_joins(
    image: MetadataImage, config: ControllerConfig, broker_id: int
) -> list[r.PartitionChangeRecord]:
    """The broker is unfenced: the partitions without a leader may elect it (Kafka:
    `handleBrokerUnfenced`)."""
    live = active_brokers(image) | {broker_id}
    chosen = [ref for ref in partitions(image) if ref[2].leader == NO_LEADER]
    return _elect_all(image, config, chosen, live)


def broker_restarted_uncleanly(
    image: MetadataImage, config: ControllerConfig, broker_id: int
) -> list[r.PartitionChangeRecord]:
    """The broker's previous incarnation did not shut down cleanly: it may have lost
    unflushed records, so it leaves every ISR and every ELR (ELR-4; Kafka:
    `handleBrokerUncleanShutdown`)."""
    live = active_brokers(image) - {broker_id}
    chosen = [
        ref for ref in partitions(image) if broker_id in ref[2].isr or broker_id in ref[2].elr
    ]
    return _elect_all(image, config, chosen, live, unclean_shutdown=(broker_id,))


def directories_offline(
    image: MetadataImage,
    config: ControllerConfig,
    broker_id: int,
    offline_dirs: Collection[uuid.UUID],
) -> list[object]:
    """A heartbeat reported `offline_dirs` (KCTRL-21; Kafka:
    `ReplicationControlManager.handleDirectoriesOffline`). For each that the broker's
    registration still lists online: the partitions whose replica on this broker it holds
    lose that replica from their ISR and ELR, and elect a new leader if it led; then a
    BrokerRegistrationChangeRecord lists the directories left online. A directory already
    known offline changes nothing, so every heartbeat may repeat the list."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return []
    newly_offline = set(broker.directories) & set(offline_dirs)
    if not newly_offline:
        return []
    still_online = [d for d in broker.directories if d not in newly_offline]
    live = active_brokers(image) - {broker_id}
    chosen = [
        ref
        for ref in partitions(image)
        if broker_id in ref[2].replicas
        and ref[2].directories[ref[2].replicas.index(broker_id)] in newly_offline
    ]
    records: list[object] = list(
        _elect_all(image, config, chosen, live, unclean_shutdown=(broker_id,))
    )
    if still_online:  # none: the broker stops (an empty LogDirs would mean "unchanged")
        records.append(
            r.BrokerRegistrationChangeRecord(
                broker_id=broker_id, broker_epoch=broker.epoch, log_dirs=still_online
            )
        )
    return records


# -- topics ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CreatableTopic:
    """One topic of a CreateTopics request."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatableTopicResult:
    name: str
    error: ApiError
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


def _directory(image: MetadataImage, broker_id: int) -> uuid.UUID:
    """A new replica's log directory: the broker's own if it has only one, else left for
    the broker to choose (Kafka: `ClusterDescriber.defaultDir`)."""
    broker = image.brokers.get(broker_id)
    if broker is not None and len(broker.directories) == 1:
        return broker.directories[0]
    return directory_id.UNASSIGNED


def partition_record(
    image: MetadataImage, topic_id: uuid.UUID, index: int, replicas: Sequence[int]
) -> r.PartitionRecord:
    """A new partition: ISR the active replicas, the first of them leads, epochs 0."""
    active = active_brokers(image)
    isr = [b for b in replicas if b in active]
    if not isr:
        raise InvalidReplicaAssignmentError(
            f"All brokers specified in the partition assignment for partition {index} are "
            "fenced or in controlled shutdown."
        )
    return r.PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=list(replicas),
        isr=isr,
        leader=isr[0],
        leader_recovery_state=partition_change.RECOVERED,
        leader_epoch=0,
        partition_epoch=0,
        directories=[_directory(image, b) for b in replicas],
    )


def _placement_brokers(image: MetadataImage, explicit: bool) -> list[tuple[int, str | None]]:
    """Brokers to place on: the active ones; for an explicit assignment, any registered."""
    active = active_brokers(image)
    return [
        (b.id, b.rack)
        for b in sorted(image.brokers.values(), key=lambda b: b.id)
        if explicit or b.id in active
    ]


def create_topics(
    image: MetadataImage,
    config: ControllerConfig,
    topics: Sequence[CreatableTopic],
    *,
    validate_only: bool = False,
    rng: random.Random,
    new_topic_id: Callable[[], uuid.UUID],
) -> ControllerResult[list[CreatableTopicResult]]:
    """CreateTopics (KCTRL-6). Each topic succeeds or fails alone."""
    existing = {t.name for t in image.topics.values()}
    names = [t.name for t in topics]
    records: list[object] = []
    results = []
    for topic in topics:
        if names.count(topic.name) > 1:
            error = ApiError(ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.")
            results.append(CreatableTopicResult(topic.name, error))
            continue
        try:
            meta, placed = plan_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                topic.configs,
                topic.assignments,
                existing=existing,
                live=_placement_brokers(image, bool(topic.assignments)),
                default_partitions=config.num_partitions,
                default_replication_factor=config.default_replication_factor,
                log_defaults=config.log_defaults,
                rng=rng,
                topic_id=new_topic_id(),
            )
            made = [r.TopicRecord(name=meta.name, topic_id=meta.topic_id)]
            made += [partition_record(image, meta.topic_id, p, rs) for p, rs in placed.items()]
        except KafkaError as e:
            results.append(CreatableTopicResult(topic.name, ApiError.of(e)))
            continue
        made += [
            r.ConfigRecord(resource_type=TOPIC, resource_name=meta.name, name=k, value=v)
            for k, v in sorted(meta.configs.items())
        ]
        existing.add(meta.name)
        records += made
        results.append(
            CreatableTopicResult(
                meta.name, NONE, meta.topic_id, meta.partitions, meta.replication_factor
            )
        )
    return ControllerResult.of([] if validate_only else records, results)


def delete_topics(
    image: MetadataImage, names: Sequence[str]
) -> ControllerResult[list[tuple[str, ApiError]]]:
    """DeleteTopics: a RemoveTopicRecord per existing topic (KCTRL-6)."""
    records = []
    results = []
    for name in dict.fromkeys(names):
        topic = image.topic_by_name(name)
        if topic is None:
            error = ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} not found.")
            results.append((name, error))
            continue
        records.append(r.RemoveTopicRecord(topic_id=topic.id))
        results.append((name, NONE))
    return ControllerResult.of(records, results)


@dataclass(frozen=True)
class CreatePartitionsTopic:
    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


def create_partitions(
    image: MetadataImage,
    topics: Sequence[CreatePartitionsTopic],
    *,
    validate_only: bool = False,
    rng: random.Random,
) -> ControllerResult[list[tuple[str, ApiError]]]:
    """CreatePartitions: PartitionRecords for the new partitions (KCTRL-6)."""
    records: list[object] = []
    results = []
    for request in topics:
        topic = image.topic_by_name(request.name)
        try:
            if topic is None:
                raise UnknownTopicOrPartitionError(f"The topic '{request.name}' does not exist.")
            first = topic.partitions[min(topic.partitions)]
            meta = TopicMetadata(topic.name, topic.id, len(topic.partitions), len(first.replicas))
            _, new = plan_partitions(
                meta,
                request.count,
                request.assignments,
                live=_placement_brokers(image, request.assignments is not None),
                rng=rng,
            )
            made = [partition_record(image, topic.id, p, rs) for p, rs in new.items()]
        except KafkaError as e:
            results.append((request.name, ApiError.of(e)))
            continue
        records += made
        results.append((request.name, NONE))
    return ControllerResult.of([] if validate_only else records, results)


# -- AlterPartition --------------------------------------------------------------------


@dataclass(frozen=True)
class AlterPartitionData:
    """One partition of an AlterPartition request: the leader's view and its new ISR."""

    partition_index: int
    leader_epoch: int
    partition_epoch: int
    new_isr: Sequence[tuple[int, int]]  # (broker id, broker epoch or -1)
    leader_recovery_state: int = partition_change.RECOVERED


@dataclass(frozen=True)
class AlterPartitionResult:
    partition_index: int
    error: ApiError
    leader_id: int = NO_LEADER
    isr: tuple[int, ...] = ()
    leader_epoch: int = -1
    partition_epoch: int = -1
    leader_recovery_state: int = partition_change.RECOVERED


def _alter_partition_error(
    image: MetadataImage,
    broker_id: int,
    partition: PartitionRegistration | None,
    data: AlterPartitionData,
) -> ErrorCode | None:
    """Why the request may not change the partition, in Kafka's order (Kafka:
    `validateAlterPartitionData`), or None."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (
        data.leader_epoch > partition.leader_epoch
        or data.partition_epoch > partition.partition_epoch
    ):
        return ErrorCode.NOT_CONTROLLER  # the leader knows a newer state than we do
    if data.leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return ErrorCode.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    new_isr = [b for b, _ in data.new_isr]
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(partition.replicas):
        return ErrorCode.INVALID_REQUEST
    if partition.leader not in new_isr:
        return ErrorCode.INVALID_REQUEST
    if data.leader_recovery_state == partition_change.RECOVERING and len(new_isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if (
        partition.leader_recovery_state == partition_change.RECOVERED
        and data.leader_recovery_state == partition_change.RECOVERING
    ):
        return ErrorCode.INVALID_REQUEST
    for member, epoch in data.new_isr:
        broker = image.brokers.get(member)
        if broker is None or broker.in_controlled_shutdown or broker.fenced:
            return ErrorCode.INELIGIBLE_REPLICA
        if epoch != -1 and epoch != broker.epoch:
            return ErrorCode.INELIGIBLE_REPLICA
    return None


def alter_partition(
    image: MetadataImage,
    config: ControllerConfig,
    broker_id: int,
    topics: Mapping[uuid.UUID, Sequence[AlterPartitionData]],
) -> ControllerResult[dict[uuid.UUID, list[AlterPartitionResult]]]:
    """AlterPartition from a partition leader (the caller checked its broker epoch)."""
    records = []
    response: dict[uuid.UUID, list[AlterPartitionResult]] = {}
    for topic_id, datas in topics.items():
        topic = image.topics.get(topic_id)
        results = response.setdefault(topic_id, [])
        for data in datas:
            if topic is None:
                error = ApiError(ErrorCode.UNKNOWN_TOPIC_ID)
                results.append(AlterPartitionResult(data.partition_index, error))
                continue
            partition = topic.partitions.get(data.partition_index)
            code = _alter_partition_error(image, broker_id, partition, data)
            if code is not None:
                results.append(AlterPartitionResult(data.partition_index, ApiError(code)))
                continue
            assert partition is not None
            record = partition_change.alter_isr(
                topic_id,
                data.partition_index,
                partition,
                [b for b, _ in data.new_isr],
                min_insync_replicas(image, config, topic.name),
                data.leader_recovery_state,
            )
            if record is not None:
                records.append(record)
                partition = partition.merge(record)
                if partition.leader != broker_id:
                    # The change completed a reassignment that moved the leadership away: the
                    # record stands, and the old leader learns it must step down.
                    error = ApiError(ErrorCode.NEW_LEADER_ELECTED)
                    results.append(AlterPartitionResult(data.partition_index, error))
                    continue
            results.append(
                AlterPartitionResult(
                    data.partition_index,
                    NONE,
                    partition.leader,
                    partition.isr,
                    partition.leader_epoch,
                    partition.partition_epoch,
                    partition.leader_recovery_state,
                )
            )
    return ControllerResult.of(records, response)


# -- AssignReplicasToDirs --------------------------------------------------------------

DirectoryAssignments = Mapping[uuid.UUID, Mapping[uuid.UUID, Sequence[int]]]  # dir->topic->parts


def assign_replicas_to_dirs(
    image: MetadataImage,
    config: ControllerConfig,
    broker_id: int,
    assignments: DirectoryAssignments,
) -> ControllerResult[dict[uuid.UUID, dict[uuid.UUID, dict[int, ErrorCode]]]]:
    """AssignReplicasToDirs from a broker at its current epoch (the caller checked it;
    KCTRL-22; Kafka: `ReplicationControlManager.handleAssignReplicasToDirs`): a
    PartitionChangeRecord setting the directory of the broker's replica of each partition
    named. A partition or topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION /
    UNKNOWN_TOPIC_ID, one without a replica on the broker NOT_LEADER_OR_FOLLOWER. A
    replica placed in a directory the broker no longer has online leaves the ISR and the
    leadership at once, as if that directory had just failed."""
    broker = image.brokers[broker_id]
    records: list[object] = []
    offline: list[PartitionRef] = []
    response: dict[uuid.UUID, dict[uuid.UUID, dict[int, ErrorCode]]] = {}
    for directory, topics in assignments.items():
        online = directory_id.is_online(directory, broker.directories)
        for topic_id, indexes in topics.items():
            topic = image.topics.get(topic_id)
            errors = response.setdefault(directory, {}).setdefault(topic_id, {})
            for index in indexes:
                partition = None if topic is None else topic.partitions.get(index)
                if topic is None:
                    errors[index] = ErrorCode.UNKNOWN_TOPIC_ID
                elif partition is None:
                    errors[index] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in partition.replicas:
                    errors[index] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    errors[index] = ErrorCode.NO_ERROR
                    record = partition_change.assign_directory(
                        topic_id, index, partition, broker_id, directory
                    )
                    if record is not None:
                        records.append(record)
                        partition = partition.merge(record)
                    if not online:
                        offline.append((topic, index, partition))
    if offline:
        live = active_brokers(image) - {broker_id}
        records += _elect_all(image, config, offline, live, unclean_shutdown=(broker_id,))
    return ControllerResult.of(records, response)


# -- ElectLeaders ----------------------------------------------------------------------

PREFERRED, UNCLEAN = 0, 1


def elect_leaders(
    image: MetadataImage,
    config: ControllerConfig,
    election_type: int,
    requested: Sequence[tuple[str, int]] | None,
) -> ControllerResult[dict[tuple[str, int], ApiError]]:
    """ElectLeaders (KCTRL-9): None asks for every partition, answering only those that
    changed (Kafka: `electLeaders` with null topics)."""
    if election_type not in (PREFERRED, UNCLEAN):
        raise InvalidRequestError(f"Unknown election type {election_type}")
    active = active_brokers(image)
    every = requested is None
    wanted = (
        [(t.name, i) for t, i, _ in partitions(image)] if requested is None else list(requested)
    )
    records = []
    results = {}
    for name, index in wanted:
        topic = image.topic_by_name(name)
        partition = None if topic is None else topic.partitions.get(index)
        if topic is None or partition is None:  # Kafka's words (`electLeader`)
            why = (
                f"No such topic as {name}"
                if topic is None
                else f"No such partition as {name}-{index}"
            )
            results[(name, index)] = ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, why)
            continue
        if election_type == PREFERRED:
            preferred = partition.replicas[0]
            if partition.leader == preferred:
                error = ApiError(ErrorCode.ELECTION_NOT_NEEDED)
                record = None
            elif (
                preferred in online_replicas(image, partition, active)
                and preferred in partition.isr
            ):
                record = partition_change.change_record(
                    topic.id,
                    index,
                    partition,
                    leader=preferred,
                    isr=partition.isr,
                    elr=partition.elr,
                    last_known_elr=partition.last_known_elr,
                )
                error = NONE
            else:
                error = ApiError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
                record = None
        elif partition.leader != NO_LEADER:
            error, record = ApiError(ErrorCode.ELECTION_NOT_NEEDED), None
        else:
            record = partition_change.elect(
                topic.id,
                index,
                partition,
                online_replicas(image, partition, active),
                min_insync_replicas(image, config, topic.name),
                unclean=True,
            )
            if record is None or record.leader in (NO_LEADER, NO_LEADER_CHANGE):
                error, record = ApiError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE), None
            else:
                error = NONE
        if record is not None:
            records.append(record)
        if not every or error.ok:
            results[(name, index)] = error
    return ControllerResult.of(records, results)


# -- AlterPartitionReassignments -----------------------------------------------------------


def alter_partition_reassignments(
    image: MetadataImage,
    config: ControllerConfig,
    reassignments: Mapping[tuple[str, int], Sequence[int] | None],
) -> ControllerResult[dict[tuple[str, int], ApiError]]:
    """Start (a target replica list) or cancel (None) partition reassignments (KCTRL-16;
    Kafka: `alterPartitionReassignments`, whose records are written atomically)."""
    records = []
    results = {}
    for (name, index), target in reassignments.items():
        topic = image.topic_by_name(name)
        partition = None if topic is None else topic.partitions.get(index)
        if topic is None or partition is None:
            results[(name, index)] = ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        min_isr = min_insync_replicas(image, config, name)
        if target is None:
            if not partition.removing_replicas and not partition.adding_replicas:
                results[(name, index)] = ApiError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
                continue
            if not set(partition.isr) - set(partition.adding_replicas):
                results[(name, index)] = ApiError(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"Unable to revert partition assignment for {name}:{index} because it "
                    "would require an unclean leader election.",
                )
                continue
            record = partition_change.revert(topic.id, index, partition, min_isr)
        else:
            error = _invalid_target(image, target)
            if error is not None:
                results[(name, index)] = error
                continue
            record = partition_change.reassign(topic.id, index, partition, target, min_isr)
        if record is not None:
            records.append(record)
        results[(name, index)] = NONE
    return ControllerResult.of(records, results, atomic=True)


def _invalid_target(image: MetadataImage, target: Sequence[int]) -> ApiError | None:
    """Kafka's `validateManualPartitionAssignment`: replicas, registered, each once."""
    if not target:
        why = "The manual partition assignment includes an empty replica list."
    elif len(set(target)) != len(target):
        why = "The manual partition assignment includes a broker more than once."
    elif not set(target) <= set(image.brokers):
        unknown = sorted(set(target) - set(image.brokers))
        why = (
            f"The manual partition assignment includes broker {unknown[0]}, but no such "
            "broker is registered."
        )
    else:
        return None
    return ApiError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, why)

"""A broker's view of a KRaft cluster: the metadata image it folds from the log, and what it
tells the broker's parts when the image changes.

A KRaft broker keeps no picture of its own making: it reads the cluster's metadata log,
`__cluster_metadata`, as every controller does, and folds the committed records into a
`MetadataImage` (kafka_ref/metadata/image.py). `KRaftClusterMetadata` is that image as the
request handlers see it, the same `ClusterMetadataApi` the embedded controller and the
ZooKeeper picture offer (Kafka: `KRaftMetadataCache`), and it is a `RaftListener`
(kafka_ref/raft/listener.py): the node's Raft client tells it each committed batch, in log
order, once (Kafka: `MetadataLoader`, then `BrokerMetadataPublisher`).

**Folding** (KBROKER-1). Each record value is deserialized (metadata/serde.py) and replayed
into the image. The records of a metadata transaction (KIP-868) apply together: a
transaction still open at the end of a batch waits for the batch that ends it. The broker
remembers the offset of the last record its image holds.

**Catching up** (KBROKER-2). A broker that starts reads the log from its beginning. It
publishes nothing until it has read up to the quorum's high watermark: the image it then
publishes is the cluster as it is, in one step, as Kafka's `MetadataLoader` waits until it
has caught up. A topic deleted and created again under the same name long ago is then one
topic, not a deletion of logs that belong to its successor.

**Reads** (KBROKER-3) come from the published image:

* the live brokers are the registered, unfenced ones (Kafka: `getAliveBrokers`), reached on
  the inter-broker listener's endpoint of their registration, clients on their own listener
  (SEC-2);
* the controller a Metadata or DescribeCluster answer names is a random live broker, not the
  active controller: clients cannot reach the controllers (KIP-590), and a broker forwards
  what they send it (Kafka: `KRaftMetadataCache.getRandomAliveBrokerId`);
* a partition's state is its `PartitionRegistration`: leader, leader epoch, replicas, ISR,
  the partition epoch AlterPartition names, and the eligible leader replicas (KIP-966);
* a topic's log config is the broker's defaults with the topic's ConfigRecords on top.

**Publishing** (KBROKER-4). After each batch the new image is compared with the one published
before, and the broker's parts are told what changed, in this order (Kafka:
`BrokerMetadataPublisher.onMetadataUpdate`, `ReplicaManager.applyDelta`): the topics deleted
(their logs go), the new config overrides of the topics that remain (their logs take them;
at the first publication, every topic's: the logs opened before it took the defaults),
then the state of every partition that changed and of which this broker is or was a
replica: the ReplicaManager leads, follows, or (a replica moved away) stops and deletes it,
and the coordinators load or resign their partitions. The dynamic broker configs of this
broker and of the cluster (`<default>`, an empty resource name in KRaft) go to
`on_broker_config`.

**Waiting for one's own registration** (KBROKER-5). Until the published image holds this
broker's registration by its current incarnation, a request answered from the picture
waits, as a ZooKeeper-mode broker waits for the controller's first UpdateMetadata (CTRL-32),
for at most `hold_timeout_s`.

**Changes** are not decided on a broker (KBROKER-8): the request handlers of the admin APIs
never reach them, since the broker forwards those requests to the active controller
(server/forwarding_manager.py). What the broker itself starts, the auto-creation of a topic
a Metadata request names and of the coordinators' internal topics, goes to
`topic_creator` (server/auto_topic_creation.py), and producer id blocks to
`producer_id_blocks`.

Rules: KBROKER-1..KBROKER-5, KBROKER-8.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kafka_ref.cluster.config_changes import DEFAULT_ENTITY
from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState, TopicMetadata, TopicsImage
from kafka_ref.cluster.zk_metadata import PartitionStateListener
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError, KafkaStorageError
from kafka_ref.group.group_configs import GROUP_RESOURCE
from kafka_ref.metadata.image import (
    EMPTY,
    TRANSACTION_RECORDS,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    load,
)
from kafka_ref.metadata.serde import ApiMessageAndVersion, deserialize
from kafka_ref.metadata.snapshot import OffsetAndEpoch as SnapshotId
from kafka_ref.metadata.snapshot import snapshot_image
from kafka_ref.raft.listener import CommittedBatch, LeaderAndEpoch, LoadedSnapshot
from kafka_ref.security.listeners import SECURITY_PROTOCOLS, EndPoint
from kafka_ref.server.broker_configs import BROKER_CONFIGS

logger = logging.getLogger("kafka_ref.cluster.kraft_metadata")

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
CLUSTER_DEFAULT = ""  # a KRaft ConfigRecord's resource name for the cluster-wide broker configs
NO_CONTROLLER = -1  # MetadataResponse.NO_CONTROLLER_ID


class TopicCreator(Protocol):
    """Where a KRaft broker sends the topics it creates itself (server/auto_topic_creation.py)."""

    def create_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> None: ...


class NotDecidedHereError(KafkaError):
    """A change only the active controller decides, asked of the broker by a request it does
    not forward (yet). INVALID_REQUEST, not NOT_CONTROLLER: an admin client would retry that
    until its timeout, at every broker in turn."""

    code = ErrorCode.INVALID_REQUEST


def partition_state(topic: str, index: int, p: PartitionRegistration) -> PartitionState:
    """The handlers' and the ReplicaManager's view of one `PartitionRegistration`."""
    return PartitionState(
        topic,
        index,
        p.leader,
        p.leader_epoch,
        p.replicas,
        p.isr,
        zk_version=p.partition_epoch,
        elr=p.elr,
        last_known_elr=p.last_known_elr,
    )


def broker_endpoint(broker: BrokerRegistration, listener: str) -> BrokerEndpoint:
    """A registered broker as the handlers see it: every listener of its registration, and
    `listener` (the inter-broker one) as its address for the other brokers."""
    endpoints = tuple(
        EndPoint(e.name, SECURITY_PROTOCOLS[e.security_protocol], e.host, e.port)
        for e in broker.listeners
    )
    return BrokerEndpoint.reached_on(broker.id, endpoints, broker.rack, listener)


def topic_metadata(topic: TopicImage, configs: Mapping[str, str]) -> TopicMetadata:
    first = topic.partitions.get(0)
    return TopicMetadata(
        topic.name,
        topic.id,
        len(topic.partitions),
        len(first.replicas) if first is not None else 0,
        dict(configs),
    )


class KRaftClusterMetadata:
    """This broker's metadata image (Kafka: `KRaftMetadataCache`, `BrokerMetadataPublisher`)."""

    def __init__(
        self,
        endpoint: BrokerEndpoint,
        cluster_id: str,
        incarnation_id: uuid.UUID,
        *,
        high_watermark: Callable[[], int],
        log_defaults: LogConfig | None = None,
        num_partitions: int = BROKER_CONFIGS["num.partitions"].default,
        default_replication_factor: int = BROKER_CONFIGS["default.replication.factor"].default,
        delete_topic_enable: bool = BROKER_CONFIGS["delete.topic.enable"].default,
        log_dirs: tuple[str, ...] = (),
        inter_broker_listener: str = "PLAINTEXT",
        hold_timeout_s: float = 60.0,
        rng: random.Random | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.cluster_id = cluster_id
        self.incarnation_id = incarnation_id
        self.high_watermark = high_watermark  # the quorum's, to know when we have caught up
        self.log_defaults = log_defaults or LogConfig()
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.delete_topic_enable = delete_topic_enable
        self.log_dirs = log_dirs
        self.inter_broker_listener = inter_broker_listener
        self.hold_timeout_s = hold_timeout_s
        self.rng = rng or random.Random()
        self.listeners: list[PartitionStateListener] = []
        self.on_broker_config: Callable[[str, dict[str, str]], None] = lambda entity, c: None
        self.on_published: list[Callable[[], None]] = []  # e.g. the lifecycle's heartbeat
        self.topic_creator: TopicCreator | None = None
        self.producer_id_blocks: Any = None  # server/producer_id_blocks.py, once wired
        # What the handlers read: the image last published, and views of it.
        self.image: MetadataImage = EMPTY
        self.published_offset = -1  # the offset of the last record the published image holds
        self._topics = TopicsImage()
        self._states: dict[tuple[str, int], PartitionState] = {}
        self._brokers: dict[int, BrokerEndpoint] = {}
        # What is folded but not yet published, while the broker catches up.
        self._loaded: MetadataImage = EMPTY
        self._loaded_offset = -1
        self._open: list[tuple[int, ApiMessageAndVersion]] = []  # an open metadata transaction
        # Requests waiting for this broker's own registration (KBROKER-5); None once released.
        self._held: list[Callable[[], None]] | None = []

    # ------------------------------------------------------------------ the raft listener
    def handle_commit(self, batch: CommittedBatch) -> None:
        """Fold one committed batch (KBROKER-1); publish once caught up (KBROKER-2)."""
        entries = [*self._open]
        entries += [(offset, deserialize(value)) for offset, value in batch.records if value]
        fold, self._open = _split_open_transaction(entries)
        if fold:
            self._loaded = load([entry for _, entry in fold], self._loaded)
        # the image holds nothing of a transaction still open: it ends before its Begin
        self._loaded_offset = self._open[0][0] - 1 if self._open else batch.last_offset
        caught_up = batch.last_offset + 1 >= self.high_watermark()
        if self.published_offset >= 0 or caught_up:
            self.publish()

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        """Rebuild the folded image from a snapshot (RAFT-24), then publish as a batch does."""
        snapshot_id = snapshot.snapshot_id
        self._loaded = snapshot_image(
            snapshot.data, SnapshotId(snapshot_id.offset, snapshot_id.epoch)
        )
        self._loaded_offset = snapshot.snapshot_id.offset - 1
        self._open = []
        if self.published_offset >= 0 or snapshot.snapshot_id.offset >= self.high_watermark():
            self.publish()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """Nothing to do: a request to the controller asks the Raft client who leads when it
        is sent (server/node_to_controller.py)."""

    # ------------------------------------------------------------------ publishing
    def publish(self) -> None:
        """Make the folded image the one read, and tell the listeners what changed (KBROKER-4)."""
        old, new = self.image, self._loaded
        self.image, self.published_offset = new, self._loaded_offset
        self._brokers = {  # one registered with no listener cannot be reached: left out
            b.id: broker_endpoint(b, self.inter_broker_listener)
            for b in new.brokers.values()
            if not b.fenced and b.listeners
        }
        me = self.endpoint.node_id
        first = old is EMPTY  # the logs opened before it took the broker's defaults
        deleted = [t for tid, t in old.topics.items() if tid not in new.topics]
        for topic in deleted:
            self._topics.pop(topic.name)
            for index in topic.partitions:
                self._states.pop((topic.name, index), None)
        reconfigured, changed = [], []
        for tid, topic in new.topics.items():
            before = old.topics.get(tid)
            configs = new.configs.get((TOPIC_RESOURCE, topic.name), {})
            known = before is not None or first
            new_configs = known and old.configs.get((TOPIC_RESOURCE, topic.name), {}) != configs
            if new_configs:
                reconfigured.append(topic.name)
            if before is None or new_configs or len(before.partitions) != len(topic.partitions):
                self._topics[topic.name] = topic_metadata(topic, configs)
            for index, partition in topic.partitions.items():
                previous = before.partitions.get(index) if before is not None else None
                if previous is partition or previous == partition:
                    continue
                state = partition_state(topic.name, index, partition)
                self._states[(topic.name, index)] = state
                if me in partition.replicas or (previous is not None and me in previous.replicas):
                    changed.append(state)
        for topic in deleted:
            logger.info("topic %s deleted", topic.name)
            for listener in self.listeners:
                listener.on_topic_deleted(topic.name, len(topic.partitions))
        for name in reconfigured:
            config = self.log_config(name) or self.log_defaults
            for listener in self.listeners:
                listener.on_topic_config(name, config)
        for state in changed:
            for listener in self.listeners:
                try:
                    listener.on_partition_state(state)
                except KafkaStorageError as err:
                    # its log is in a failed directory: offline here, the rest goes on
                    # (Kafka `ReplicaManager.applyDelta`); the controller hears of the
                    # directory from the next heartbeat (KBROKER-21)
                    logger.warning("%s-%d: offline here: %s", state.topic, state.partition, err)
        for entity in (CLUSTER_DEFAULT, str(me)):
            configs = new.configs.get((BROKER_RESOURCE, entity), {})
            if old.configs.get((BROKER_RESOURCE, entity), {}) != configs:
                self.on_broker_config(entity or DEFAULT_ENTITY, dict(configs))
        if self._held is not None and self.registered():
            self._release()
        for callback in list(self.on_published):
            callback()

    def registered(self) -> bool:
        """Whether the published image holds this broker's registration by this process."""
        broker = self.image.brokers.get(self.endpoint.node_id)
        return broker is not None and broker.incarnation_id == self.incarnation_id

    def hold(self, resume: Callable[[], None]) -> bool:
        """Whether a request answered from the picture must wait for this broker's own
        registration in the published image (KBROKER-5): if so `resume` runs when it is
        there, or once the first held request has waited `hold_timeout_s`."""
        if self._held is None:
            return False
        if not self._held:
            asyncio.get_running_loop().call_later(self.hold_timeout_s, self._release)
        self._held.append(resume)
        return True

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for resume in held:
            resume()

    # ------------------------------------------------------------------ reading
    @property
    def controller_id(self) -> int:
        """A random live broker: clients send it what is for the controller, and it
        forwards it (KBROKER-3; Kafka: `getRandomAliveBrokerId`)."""
        live = sorted(self._brokers)
        return self.rng.choice(live) if live else NO_CONTROLLER

    def brokers(self) -> list[BrokerEndpoint]:
        return [self._brokers[b] for b in sorted(self._brokers)]

    def topics(self) -> list[TopicMetadata]:
        return [self._topics[name] for name in sorted(self._topics)]

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._topics.by_id.get(topic_id)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        return self._states.get((topic, partition))

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        state = self._states.get((topic, partition))
        return state.replicas if state is not None else ()

    def log_config(self, topic: str) -> LogConfig | None:
        """The broker's defaults with the topic's overrides on top; None without overrides."""
        meta = self._topics.get(topic)
        if meta is None or not meta.configs:
            return None
        return LogConfig.from_properties(meta.configs, defaults=self.log_defaults)

    def broker_configs(self, entity: str) -> dict[str, str]:
        name = CLUSTER_DEFAULT if entity == DEFAULT_ENTITY else entity
        return dict(self.image.configs.get((BROKER_RESOURCE, name), {}))

    def group_configs(self, group_id: str) -> dict[str, str]:
        """The group's ConfigRecords (resource type GROUP) in the published image."""
        return dict(self.image.configs.get((GROUP_RESOURCE, group_id), {}))

    def pending_deletions(self) -> dict[str, int]:
        return {}  # the controller deletes; the publication removes the logs

    # ------------------------------------------------------------------ changes (KBROKER-8)
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Ask the active controller to create `name` (auto-creation, internal topics), with
        this broker's defaults for -1 (Kafka: `creatableTopic`); it exists once a later image
        holds it (KBROKER-12)."""
        if self.topic_creator is None or assignments or validate_only:
            raise NotDecidedHereError("topics are created by the active controller")
        partitions = self.num_partitions if num_partitions == -1 else num_partitions
        factor = self.default_replication_factor if replication_factor == -1 else replication_factor
        clean = {k: v for k, v in (configs or {}).items() if v is not None}
        self.topic_creator.create_topic(name, partitions, factor, clean)

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """A block of producer ids from the active controller (AllocateProducerIds)."""
        if self.producer_id_blocks is None:
            raise NotDecidedHereError("producer ids are allocated by the active controller")
        return self.producer_id_blocks.allocate_producer_id_block(broker_id, size)

    def _forwarded(self, *args: Any, **kwargs: Any) -> Any:
        raise NotDecidedHereError(
            "decided by the active controller: a KRaft broker forwards this request (KIP-590)"
        )

    delete_topic = create_partitions = alter_topic_configs = alter_broker_configs = _forwarded
    alter_group_configs = _forwarded


def _split_open_transaction(
    entries: list[tuple[int, ApiMessageAndVersion]],
) -> tuple[list[tuple[int, ApiMessageAndVersion]], list[tuple[int, ApiMessageAndVersion]]]:
    """(what may be folded now, a metadata transaction still open from its Begin on)."""
    begin, (start, end, abort) = None, TRANSACTION_RECORDS
    for i, (_, entry) in enumerate(entries):
        if entry.name == start:
            begin = i
        elif entry.name in (end, abort):
            begin = None
    if begin is None:
        return entries, []
    return entries[:begin], entries[begin:]

"""A broker in KRaft mode: what `Broker` adds when `process.roles` names `broker` and a
`RaftManager` is given (Kafka: `BrokerServer`).

The counterpart of ZooKeeper mode (server/zk_mode.py), at the same points of the broker's
startup (server/broker.py):

1. `connect`, instead of the embedded controller: check that every log dir was formatted
   for this cluster and node (`kafka-ref storage format`, RAFT-16), read each one's
   directory id (KIP-858), and build
   `KRaftClusterMetadata`, the broker's image of the metadata log
   (cluster/kraft_metadata.py);
2. `wire`, once the `ReplicaManager` and the group coordinator exist: the partition states
   the image publishes make this broker leader or follower of its replicas; followers fetch
   through the `ReplicaFetcherManager`; leaders send their ISR changes as AlterPartition to
   the active controller (KBROKER-14); the coordinators load and resign the partitions of
   their topics as this broker gains and loses their leadership (`CoordinatorLeadership`);
3. `join`, after the socket server is bound: the image starts hearing the metadata log
   (the broker's parts are all listening by then, so the first publication reaches every
   one of them), the `BrokerLifecycleManager` registers the broker with its bound
   addresses, its online log directories (and the epoch its last clean stop kept,
   KBROKER-20) and heartbeats, and
   `join` returns once the controller has unfenced it (KBROKER-9): only then does the
   broker accept clients. Each publication of the image puts its ACLs and client quotas
   in force; SASL logins look their SCRAM users up in it (kraft_publishers.py, KBROKER-19).

With several log directories (JBOD, KIP-858), each publication of the image sends the
controller the directory of every replica whose log it does not place yet
(assignments_manager.py), and a directory that fails (DUR-16) is named by the next
heartbeat, sent at once: the controller moves those replicas' leaderships and takes them
out of their ISRs, while the broker keeps serving the rest (KBROKER-21, KCTRL-21).

`leave` (at shutdown, right after the acceptor stops) is the controlled shutdown
(KBROKER-13): the controller moves this broker's leaderships away before it stops, then
the broker stops listening to the image, its requests to the controller and its fetchers.

The `RaftManager` is not this broker's: in combined mode (`process.roles=broker,controller`)
it is the node's controller's, a voter; on a broker-only node, an observer's. The broker
registers on it and never stops it.

Rules: KBROKER-9, KBROKER-13, KBROKER-14, KBROKER-19, KBROKER-20, KBROKER-21.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from typing import Any

from kafka_ref.cluster.embedded import (
    META_PROPERTIES,
    MetadataLoadError,
    ensure_directory_id,
    read_meta_properties,
)
from kafka_ref.cluster.kraft_metadata import KRaftClusterMetadata
from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.log.log_manager import LogManager
from kafka_ref.metadata.image import EMPTY, MetadataImage
from kafka_ref.quota.manager import QuotaManagers
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.server.alter_partition_manager import AlterPartitionManager
from kafka_ref.server.assignments_manager import AssignmentsManager
from kafka_ref.server.auto_topic_creation import AutoTopicCreationManager
from kafka_ref.server.broker_lifecycle import (
    BrokerLifecycleManager,
    BrokerState,
    registration_body,
)
from kafka_ref.server.follower_fetcher import ReplicaFetcherManager
from kafka_ref.server.forwarding_manager import ForwardingManager
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, GroupCoordinatorAdapter
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.kraft_publishers import ImageAclStore, ImageCredentialStore, ImagePublisher
from kafka_ref.server.node_to_controller import NodeToControllerChannel
from kafka_ref.server.producer_id_blocks import ControllerProducerIdBlocks
from kafka_ref.server.raft_manager import RaftManager
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.server.zk_mode import CoordinatorLeadership

logger = logging.getLogger("kafka_ref.server.kraft_mode")


class BrokerNotUnfencedError(RuntimeError):
    """The controller did not register and unfence the broker in time."""


class KRaftMode:
    """The metadata image, lifecycle, channels to the controller and fetchers of a broker."""

    def __init__(self, config: KafkaConfig, raft: RaftManager) -> None:
        self.config = config
        self.raft = raft
        self.incarnation_id = uuid.uuid4()  # this process: the controller tells restarts apart
        self.metadata: KRaftClusterMetadata | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.alter_partitions: AlterPartitionManager | None = None
        self.channels: list[NodeToControllerChannel] = []
        self.forwarding: ForwardingManager | None = None
        self.acl_authorizer: Authorizer | None = None  # the image's ACLs, if authorizing
        self.client_quotas: QuotaManagers | None = None  # the image's client quotas
        self.previous_broker_epoch = -1  # the last run's, if it shut down cleanly (KIP-966)
        self.directory_ids: dict[str, uuid.UUID] = {}  # log dir -> its directory.id (KIP-858)
        self.log_manager: LogManager | None = None
        self.assignments: AssignmentsManager | None = None

    def channel(self, purpose: str) -> NodeToControllerChannel:
        """A channel of its own to the active controller (server/node_to_controller.py)."""
        channel = NodeToControllerChannel(
            self._leader_id, self.raft.voters, f"broker-{self.config.broker_id}-{purpose}"
        )
        self.channels.append(channel)
        return channel

    def _leader_id(self) -> int:
        client = self.raft.client
        return client.quorum.leader_id if client is not None else -1

    def _high_watermark(self) -> int:
        client = self.raft.client
        return client.high_watermark if client is not None else 0

    async def connect(self, endpoint: BrokerEndpoint, **settings: Any) -> KRaftClusterMetadata:
        log_dirs = settings["log_dirs"]
        for log_dir in log_dirs:  # formatted for this cluster and node (RAFT-16)
            path = os.path.join(log_dir, META_PROPERTIES)
            stored = read_meta_properties(path, self.config.broker_id)
            if stored != self.raft.cluster_id:
                raise MetadataLoadError(
                    f"{path}: formatted for cluster {stored}, not {self.raft.cluster_id}: run "
                    "`kafka-ref storage format` (Kafka: kafka-storage.sh format)"
                )
            self.directory_ids[log_dir] = ensure_directory_id(path)
        self.metadata = KRaftClusterMetadata(
            endpoint,
            self.raft.cluster_id,
            self.incarnation_id,
            high_watermark=self._high_watermark,
            inter_broker_listener=self.config.inter_broker_listener,
            hold_timeout_s=self.config["initial.broker.registration.timeout.ms"] / 1000,
            **settings,
        )
        return self.metadata

    def _image(self) -> MetadataImage:
        return self.metadata.image if self.metadata is not None else EMPTY

    def credentials(self) -> ImageCredentialStore:
        """The SCRAM users of the published image (KBROKER-19)."""
        return ImageCredentialStore(self._image)

    def authorizer(self) -> Authorizer:
        """An authorizer of the published image's ACLs (KBROKER-19)."""
        self.acl_authorizer = Authorizer.from_config(self.config, ImageAclStore(self._image))
        return self.acl_authorizer

    def quotas(self, samples: int, window_s: int) -> QuotaManagers:
        """Client quotas that the published image puts in force (KBROKER-19)."""
        self.client_quotas = QuotaManagers(samples, window_s)
        return self.client_quotas

    def wire(self, replica_manager: ReplicaManager, groups: GroupCoordinatorAdapter) -> None:
        metadata = self.metadata
        assert metadata is not None

        def endpoint_of(broker_id: int) -> tuple[str, int] | None:
            for b in metadata.brokers():
                if b.node_id == broker_id:
                    return b.host, b.port
            return None

        self.log_manager = replica_manager.log_manager
        replica_manager.log_dir_failed = self._propagate_directory_failure
        self.fetchers = ReplicaFetcherManager(self.config.broker_id, self.config, endpoint_of)
        self.fetchers.storage_failed = replica_manager.storage_failed
        replica_manager.fetcher_manager = self.fetchers

        def topic_id(topic: str) -> uuid.UUID | None:
            meta = metadata.topic(topic)
            return meta.topic_id if meta is not None else None

        self.alter_partitions = AlterPartitionManager(
            self.config.broker_id, self.broker_epoch, self.channel("alter-partition"), topic_id
        )
        replica_manager.alter_partition = self.alter_partitions.submit
        metadata.listeners.append(replica_manager)
        self.follow_coordinator(OFFSETS_TOPIC, groups)

    def _online_directories(self) -> list[uuid.UUID]:
        offline = self.log_manager.offline_dirs if self.log_manager is not None else set()
        return [d for path, d in self.directory_ids.items() if path not in offline]

    def _offline_directories(self) -> list[uuid.UUID]:
        offline = self.log_manager.offline_dirs if self.log_manager is not None else set()
        return [d for path, d in self.directory_ids.items() if path in offline]

    def _propagate_directory_failure(self, log_dir: str) -> None:
        """A log directory failed (DUR-16): the next heartbeat, sent now, names it
        (KBROKER-21)."""
        if self.lifecycle is not None:
            self.lifecycle.propagate_directory_failure(self.directory_ids[log_dir])

    def broker_epoch(self) -> int:
        """This broker's epoch, -1 until registered (also kept in the clean-shutdown
        markers, KBROKER-20)."""
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def follow_coordinator(self, topic: str, coordinator: Any) -> None:
        """Load and resign `topic`'s partitions in `coordinator` as this broker gains and
        loses their leadership (after the ReplicaManager: the logs exist by then)."""
        assert self.metadata is not None
        listener = CoordinatorLeadership(topic, self.config.broker_id, coordinator)
        self.metadata.listeners.append(listener)

    async def join(self) -> None:
        """Hear the metadata log, register, and wait until the controller unfences us."""
        metadata, config = self.metadata, self.config
        assert metadata is not None
        metadata.topic_creator = AutoTopicCreationManager(self.channel("auto-topic-creation"))
        self.forwarding = ForwardingManager(self.channel("forwarding"))
        blocks = ControllerProducerIdBlocks(
            config.broker_id, self.broker_epoch, self.channel("producer-ids")
        )
        metadata.producer_id_blocks = blocks
        lifecycle = self.lifecycle = BrokerLifecycleManager(
            config.broker_id,
            metadata.cluster_id,
            self.incarnation_id,
            self.channel("heartbeat"),
            lambda: metadata.published_offset,
            metadata.registered,
            heartbeat_interval_ms=config["broker.heartbeat.interval.ms"],
            offline_dirs=self._offline_directories,
        )
        assert self.log_manager is not None
        assignments = self.assignments = AssignmentsManager(
            config.broker_id,
            self.broker_epoch,
            self.channel("directory-assignments"),
            self._image,
            self.log_manager,
            self.directory_ids,
        )

        def published() -> None:  # tell the controller at once that we have caught up
            if lifecycle.state in (BrokerState.STARTING, BrokerState.RECOVERY):
                lifecycle.wake()

        metadata.on_published.append(published)
        metadata.on_published.append(assignments.on_published)  # KBROKER-21
        if self.client_quotas is not None:  # ACLs and quotas as each image has them
            publisher = ImagePublisher(self._image, self.acl_authorizer, self.client_quotas)
            metadata.on_published.append(publisher.publish)
        self.raft.register(metadata)
        endpoint = metadata.endpoint
        lifecycle.start(
            registration_body(
                config.broker_id,
                metadata.cluster_id,
                self.incarnation_id,
                endpoint.endpoints,
                endpoint.rack,
                previous_broker_epoch=self.previous_broker_epoch,
                log_dirs=self._online_directories(),
            )
        )
        timeout_s = config["initial.broker.registration.timeout.ms"] / 1000
        try:
            await asyncio.wait_for(lifecycle.unfenced.wait(), timeout_s)
        except TimeoutError:
            raise BrokerNotUnfencedError(
                f"broker {config.broker_id} was not registered and unfenced within {timeout_s} s"
                f" ({lifecycle.state.name}, broker epoch {lifecycle.broker_epoch})"
            ) from None
        logger.info("broker %d unfenced, broker epoch %d", config.broker_id, lifecycle.broker_epoch)
        blocks.prefetch()  # the first InitProducerId finds a block ready (KBROKER-15)

    async def leave(self) -> None:
        """The controlled shutdown, then stop hearing the image and talking to the controller."""
        if self.lifecycle is not None:
            await self.lifecycle.controlled_shutdown(
                2 * self.config["broker.session.timeout.ms"] / 1000
            )
            await self.lifecycle.close()
        if self.metadata is not None:  # the quorum's listener stays: it no longer tells anyone
            self.metadata.listeners.clear()
            self.metadata.on_published.clear()
        if self.alter_partitions is not None:
            self.alter_partitions.close()
        if self.assignments is not None:
            self.assignments.close()
        for channel in self.channels:
            channel.close()
        if self.fetchers is not None:
            await self.fetchers.shutdown()

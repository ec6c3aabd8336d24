"""A broker in ZooKeeper mode: what `Broker` adds when `zookeeper.connect` is set (Kafka:
the ZooKeeper half of `KafkaServer.startup`).

Three steps, at fixed points of the broker's startup (server/broker.py):

1. `connect`, instead of the embedded controller: open the ZooKeeper session and build
   `ZkClusterMetadata`, the broker's picture of the cluster (no topics are adopted from
   the disk: ZooKeeper, not the disk, says which topics exist);
2. `wire`, once the `ReplicaManager` and the group coordinator exist: the partition states
   of the controller's LeaderAndIsr requests (handlers/controller_requests.py) make this
   broker leader or follower of each partition it replicates
   (`ReplicaManager.become_leader_or_follower`); followers fetch through the
   `ReplicaFetcherManager` (server/follower_fetcher.py), which finds the leader's address in
   the metadata; leaders send their ISR changes to the controller as AlterPartition
   requests (`AlterPartitionManager`, CTRL-22); the group coordinator loads or resigns the
   `__consumer_offsets` partitions it gains or loses, and (`follow_coordinator`, once it
   exists) the transaction coordinator those of `__transaction_state` (TXN-21); a log dir
   that fails is told to the controller as a log dir event notification (CTRL-30);
3. `join`, after the socket server is bound: register `/brokers/ids/<id>` with the bound
   address (its czxid is the broker epoch, KIP-380), start the watches, run for controller
   (`KafkaController`, which sends its requests through a `ControllerChannelManager`).

`leave` (at shutdown, right after the acceptor stops) resigns and closes the session, so
the controller moves leadership away at once instead of after the session timeout; then
the fetchers stop.

Rules: CTRL-1, CTRL-10, CTRL-22, CTRL-30, REPL-7, ISR-3, TXN-21.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.cluster.controller import KafkaController
from kafka_ref.cluster.controller_channel import ControllerChannelManager
from kafka_ref.cluster.leader_balance import LeaderBalanceConfig
from kafka_ref.cluster.log_dir_events import propagate_log_dir_event
from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.config import LogConfig
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.alter_partition_manager import (
    AlterPartitionManager,
    ZkControllerDestination,
)
from kafka_ref.server.follower_fetcher import ReplicaFetcherManager
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, GroupCoordinatorAdapter
from kafka_ref.server.replica_manager import ReplicaManager

logger = logging.getLogger("kafka_ref.server.zk_mode")


class CoordinatorLeadership:
    """A coordinator follows this broker's leadership of its internal topic's partitions
    (Kafka: `onLeadershipChange` -> `onElection` / `onResignation`, for the group
    coordinator and the transaction coordinator alike).

    Only a broker that *becomes* leader loads a partition. A new leader epoch of a
    partition it already leads (the controller shrank the ISR after a follower died, say)
    changes nothing here: the coordinator keeps its state and its coordinator epoch, as
    Kafka's `ReplicaManager.makeLeaders` passes on only the partitions whose
    `Partition.makeLeader` found a new leader (`isNewLeader`). Reloading would fail the
    decisions being written at that moment (NOT_COORDINATOR), and a producer whose EndTxn
    failed so retries into CONCURRENT_TRANSACTIONS until markers it may not be able to
    deliver yet are written (TXN-21). Leadership that moved away and back reaches this
    broker as a state that made it a follower first, and it resigns there: the
    controller's requests to a broker are sent in order, and a broker that missed some
    while its session was gone is sent the current states when it registers again, which
    can name it leader again only once it has fetched as a follower and rejoined the ISR
    (an unclean election aside, which Kafka does not guard here either)."""

    def __init__(self, topic: str, broker_id: int, coordinator: Any) -> None:
        self.topic, self.broker_id, self.coordinator = topic, broker_id, coordinator
        self.led: set[int] = set()  # the partitions loaded

    def on_partition_state(self, state: PartitionState) -> None:
        if state.topic != self.topic:
            return
        leads = state.leader == self.broker_id
        if state.partition in self.led and not leads:
            self.led.discard(state.partition)
            self.coordinator.resign(state.partition)
        elif leads and state.partition not in self.led:
            self.led.add(state.partition)
            self.coordinator.elect(state.partition)

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        """The coordinator reads its topic's config from the log: nothing to do here."""

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        if topic == self.topic:
            self.led.clear()
            self.coordinator.on_topic_deleted(topic, partitions)


class ZooKeeperMode:
    """The ZooKeeper session, metadata, controller and replica fetchers of one broker."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.zk = KafkaZkClient(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"])
        self.metadata: ZkClusterMetadata | None = None
        self.kafka_controller: KafkaController | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.alter_partitions: AlterPartitionManager | None = None

    async def connect(self, endpoint: BrokerEndpoint, **settings: Any) -> ZkClusterMetadata:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.zk.start, None)  # waits for ZooKeeper
            self.metadata = ZkClusterMetadata(
                self.zk,
                self.config.data_dir,
                endpoint,
                inter_broker_listener=self.config.inter_broker_listener,
                first_update_wait_s=self.config["zookeeper.session.timeout.ms"] / 1000,
                **settings,
            )
        except BaseException:
            await self.leave()
            raise
        return self.metadata

    def wire(self, replica_manager: ReplicaManager, groups: GroupCoordinatorAdapter) -> None:
        metadata = self.metadata
        assert metadata is not None

        def endpoint_of(broker_id: int) -> tuple[str, int] | None:
            for b in metadata.brokers():
                if b.node_id == broker_id:
                    return b.host, b.port
            return None

        self.fetchers = ReplicaFetcherManager(self.config.broker_id, self.config, endpoint_of)
        self.fetchers.storage_failed = replica_manager.storage_failed
        self.fetchers.high_watermark_moved = replica_manager.wake
        replica_manager.fetcher_manager = self.fetchers
        replica_manager.log_dir_failed = self._propagate_log_dir_event
        self.alter_partitions = AlterPartitionManager(
            self.config.broker_id,
            lambda: metadata.broker_epoch,
            ZkControllerDestination(metadata, InterBrokerSecurity.from_config(self.config)),
        )
        replica_manager.alter_partition = self.alter_partitions.submit
        metadata.listeners.append(replica_manager)
        self.follow_coordinator(OFFSETS_TOPIC, groups)

    def _propagate_log_dir_event(self, log_dir: str) -> None:
        """A log dir failed: tell the controller through ZooKeeper (CTRL-30), off the loop."""

        def write() -> None:
            try:
                path = propagate_log_dir_event(self.zk.zk, self.config.broker_id)
                logger.info("log dir %s failed: wrote %s for the controller", log_dir, path)
            except Exception:  # ZooKeeper unreachable: the controller learns at the next start
                logger.exception("cannot tell the controller that log dir %s failed", log_dir)

        asyncio.get_running_loop().run_in_executor(None, write)

    def follow_coordinator(self, topic: str, coordinator: Any) -> None:
        """Load and resign `topic`'s partitions in `coordinator` as this broker gains and
        loses their leadership. After the ReplicaManager's listener: the logs exist (and
        the partition is leader) when the coordinator loads them."""
        assert self.metadata is not None
        listener = CoordinatorLeadership(topic, self.config.broker_id, coordinator)
        self.metadata.listeners.append(listener)

    async def join(self) -> None:
        """Register in ZooKeeper, watch the cluster, run for controller."""
        loop = asyncio.get_running_loop()
        metadata = self.metadata
        assert metadata is not None

        def dispatch(fn: Callable[[], None]) -> None:  # from kazoo's threads onto the loop
            with contextlib.suppress(RuntimeError):  # the loop is closed: shutting down
                loop.call_soon_threadsafe(fn)

        metadata.dispatch = dispatch
        await loop.run_in_executor(None, metadata.register)
        defaults = metadata.log_defaults

        def unclean(topic: str, overrides: dict[str, str]) -> bool:
            config = LogConfig.from_properties(overrides, defaults=defaults)
            return config.unclean_leader_election_enable

        security = InterBrokerSecurity.from_config(self.config)
        channel = ControllerChannelManager(loop, self.config.broker_id, security)
        balance = LeaderBalanceConfig(
            self.config["auto.leader.rebalance.enable"],
            self.config["leader.imbalance.check.interval.seconds"],
            self.config["leader.imbalance.per.broker.percentage"],
        )
        self.kafka_controller = KafkaController(
            self.zk,
            self.config.broker_id,
            channel,
            unclean_leader_election=unclean,
            leader_balance=balance,
        )
        self.kafka_controller.startup()

    async def leave(self) -> None:
        """Resign and close the session (the ephemeral znodes go at once), stop fetching."""
        loop = asyncio.get_running_loop()
        if self.kafka_controller is not None:
            await loop.run_in_executor(None, self.kafka_controller.shutdown)
            self.kafka_controller = None
        if not self.zk.closing:
            await loop.run_in_executor(None, self.zk.close)
        if self.alter_partitions is not None:
            self.alter_partitions.close()
        if self.fetchers is not None:
            await self.fetchers.shutdown()

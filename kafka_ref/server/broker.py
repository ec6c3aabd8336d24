"""The broker: builds the layers, starts them in order, runs the periodic work, stops cleanly.

Kafka's `BrokerServer.startup` (KRaft; `KafkaServer` with ZooKeeper) is a long list of
"create X, start X": the metadata layer, the `LogManager` (which loads and, after a crash,
recovers every log), the `ReplicaManager`, the purgatories, `KafkaApis`, the request
handler pool and finally the `SocketServer`, so that no request arrives before the broker
can answer it. Shutdown runs the list backwards and ends with `LogManager.shutdown`,
which flushes every log, writes the checkpoints and the clean-shutdown marker: the next
start then skips recovery (DUR-6). A `kill -9` leaves no marker, and the next start
recovers every log from its recovery point (BROKER-39).

kafka-ref's `Broker` does the same on one asyncio loop:

1. `EmbeddedController` loads the topic metadata and cluster id from the data directory,
   and the dynamic broker configs (KIP-226, server/dynamic_config.py), which join the
   static configuration before anything reads it;
2. `LogManager` opens every partition log, with each topic's config from the controller;
3. reconciliation: a deletion interrupted by a crash is finished, logs without metadata
   are adopted as topics, and every partition of every topic gets its `Partition` (and
   its log, if missing) in the `ReplicaManager`;
4. the group coordinator (server/group_adapter.py): it appends to `__consumer_offsets`
   through the ReplicaManager, uses `loop.call_later` for its timers, and loads every
   partition of `__consumer_offsets` before any request arrives; the transaction
   coordinator (server/txn_adapter.py) does the same with `__transaction_state`, and the
   share coordinator (server/share_coordinator_adapter.py) with `__share_group_state`, in
   every mode; `share_persister` (share/default_persister.py) is where share-partitions
   keep their state, in the share coordinators;
5. `KafkaApis`, the `RequestChannel` and `num.io.threads` handler workers; the ACLs and
   the client quotas, from the metadata directory or ZooKeeper (QUOTA-4);
6. the `SocketServer` binds one port per listener (each with its security: TLS, SASL;
   security/listeners.py), and once the broker is ready (in ZooKeeper mode:
   registered and with its picture of the cluster loaded) listens and accepts (BROKER-48),
   so no client is ever answered by a broker that does not know the cluster yet;
7. the periodic work (server/broker_tasks.py, the jobs of Kafka's `KafkaScheduler`): the
   log flusher, the checkpoints, retention, the cleaner, and the expiration of idle
   producer ids and of committed offsets, on the loop between requests.

Once running, a change of a dynamic broker config (CONFIG-6) reaches the parts it
concerns: the logs take new broker log defaults, the request handlers grow or shrink
(`num.io.threads`), the cleaner restarts with its new pause (`log.cleaner.backoff.ms`).

Shutdown stops the group coordinator (answering its waiting joins) before the logs close.

**ZooKeeper mode** (`zookeeper.connect` set, Kafka's `KafkaServer`; server/zk_mode.py):
step 1 connects to ZooKeeper and builds `ZkClusterMetadata` (the broker's view of the
cluster) instead of the embedded controller; step 3 adopts nothing (ZooKeeper, not the
disk, says which topics exist) and wires replication: partition states from the
controller's LeaderAndIsr requests make this broker leader or follower of each partition
it replicates (`ReplicaManager.become_leader_or_follower`), followers fetch through the
replica fetchers (server/follower_fetcher.py), leaders send ISR changes to the controller
(AlterPartition); after the socket
server binds, the broker registers `/brokers/ids/<id>` with its bound address (after a
kill -9 and a quick restart, waiting for the old registration to expire), starts its
watches, and runs for controller (`KafkaController`); only then does it accept
connections. Two more periodic tasks matter to replication (broker_tasks.py): the ISR
expiration (`replica.lag.time.max.ms` / 2) and the HW checkpoint
(`replica.high.watermark.checkpoint.interval.ms`, also written at shutdown). On shutdown
the ZooKeeper session is closed right after the acceptor stops, so the controller moves
leadership away at once instead of after the session timeout; acks=all produces still
waiting answer REQUEST_TIMED_OUT.

**KRaft mode** (`process.roles` names `broker` and the node's `RaftManager` is given, the
controller's in combined mode; Kafka's `BrokerServer`; server/kraft_mode.py): step 1 builds
`KRaftClusterMetadata`, the broker's image of the metadata log; step 3 wires replication as
in ZooKeeper mode, but the partition states come from the image and the ISR changes go to
the active controller; after the socket server binds, the image starts hearing the log, the
broker registers and heartbeats, and it accepts connections once the controller has
unfenced it. The admin requests are forwarded to the controller (KBROKER-18); the ACLs,
SCRAM users and client quotas come from the image (KBROKER-19). At shutdown the controlled
shutdown moves its leaderships first (KBROKER-13), and the clean-shutdown markers keep the
broker epoch for the next registration (KBROKER-20).

**Every log dir failed** (DUR-16): a broker with no log directory left online cannot serve
anything, and stops as Kafka's does ("Shutdown broker because all log dirs in ... have
failed"): `all_log_dirs_failed` is set, `serve` (broker_process.py) stops the broker
(its session closes, so the controller moves its leaders at once) and the process exits
with status 1.

broker_process.py runs a broker: as the process `kafka-ref broker` (`serve`, which first
raises the limit of open files, BROKER-60) or on a thread of another program (`BrokerThread`).

Rules: BROKER-36, BROKER-39, BROKER-46, BROKER-48, BROKER-60, CONFIG-6, DUR-16, IDEM-14, ISR-3,
REPL-10, REPL-11, SEC-2.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging

from kafka_ref.clock import Clock, SystemClock
from kafka_ref.cluster.config_changes import DEFAULT_ENTITY
from kafka_ref.cluster.embedded import METADATA_FILE, EmbeddedController
from kafka_ref.cluster.kraft_metadata import KRaftClusterMetadata
from kafka_ref.cluster.metadata import BrokerEndpoint, ClusterMetadataApi
from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.group.group_configs import GroupConfigs
from kafka_ref.log.log_manager import LogManager, create_and_validate_log_dirs
from kafka_ref.metrics.exporter import MetricsExporter
from kafka_ref.quota.manager import QuotaManagers
from kafka_ref.quota.store import FileQuotaStore, ZkQuotaStore
from kafka_ref.replication.replica_selector import replica_selector
from kafka_ref.security.authorizer import Authorizer, FileAclStore, ZkAclStore
from kafka_ref.security.credentials import CredentialStore, ZkCredentialStore
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.listeners import (
    EndPoint,
    ListenerError,
    ListenerSecurity,
    build_listener_security,
)
from kafka_ref.security.ssl_config import SslConfigError
from kafka_ref.server.broker_tasks import BrokerTasks
from kafka_ref.server.connection_quotas import connection_quotas
from kafka_ref.server.dynamic_config import (
    DynamicBrokerConfig,
    follow_broker,
    is_listener_security_key,
)
from kafka_ref.server.group_adapter import GroupCoordinatorAdapter
from kafka_ref.server.handlers import KafkaApis
from kafka_ref.server.inter_broker_channel import InterBrokerChannel
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from kafka_ref.server.kraft_mode import KRaftMode
from kafka_ref.server.memory_pool import memory_pool
from kafka_ref.server.partition_metadata_client import PartitionMetadataClient
from kafka_ref.server.purgatory import DelayedOperationPurgatory
from kafka_ref.server.raft_manager import RaftManager
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.server.request_channel import RequestChannel, RequestHandlerPool
from kafka_ref.server.share_coordinator_adapter import ShareCoordinatorAdapter
from kafka_ref.server.socket_server import SocketServer
from kafka_ref.server.txn_adapter import TxnCoordinatorAdapter
from kafka_ref.server.zk_mode import ZooKeeperMode
from kafka_ref.share.default_persister import DefaultStatePersister
from kafka_ref.share.persister import Persister
from kafka_ref.share.share_coordinator import SHARE_GROUP_STATE_TOPIC
from kafka_ref.share.share_partition_configs import share_partition_config
from kafka_ref.share.share_partition_manager import SharePartitionManager
from kafka_ref.txn.transaction_log import TRANSACTION_STATE_TOPIC

logger = logging.getLogger("kafka_ref.server.broker")


@contextlib.contextmanager
def _quiet_about(name: str):
    """Drop LogManager's "not a partition log directory" warning for our metadata file.

    Workaround until `__cluster_metadata.json` is one of log_manager's known root files.
    """

    def keep(record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(str(a).endswith(name) for a in args)

    target = logging.getLogger("kafka_ref.log.log_manager")
    target.addFilter(keep)
    try:
        yield
    finally:
        target.removeFilter(keep)


class Broker:
    """One kafka-ref broker (Kafka: `BrokerServer` in combined mode, `KafkaServer` on ZK)."""

    def __init__(
        self, config: KafkaConfig, clock: Clock | None = None, raft: RaftManager | None = None
    ) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.controller: ClusterMetadataApi | None = None
        self.zk_mode: ZooKeeperMode | None = None
        # KRaft: the node's RaftManager, the controller's in combined mode (server/kraft_mode.py)
        self.kraft_mode = KRaftMode(config, raft) if raft and "broker" in config.roles else None
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.socket_server: SocketServer | None = None
        self.apis: KafkaApis | None = None
        self.groups: GroupCoordinatorAdapter | None = None
        self.txns: TxnCoordinatorAdapter | None = None
        self.shares: ShareCoordinatorAdapter | None = None  # the share coordinator (KIP-932)
        # where share-partitions keep their state: the share coordinators (KIP-932)
        self.share_persister: Persister | None = None
        self._share_channel: InterBrokerChannel | None = None
        self._offsets_channel: InterBrokerChannel | None = None
        self.share_partitions: SharePartitionManager | None = None  # this leader's
        self.credentials: CredentialStore | ZkCredentialStore | None = None  # SCRAM users
        self.metrics: MetricsExporter | None = None  # metrics.listener set: Prometheus's
        self.tasks: BrokerTasks | None = None  # the periodic work (server/broker_tasks.py)
        self.handler_pool: RequestHandlerPool | None = None  # num.io.threads handlers
        self.dynamic_config = DynamicBrokerConfig(config)  # KIP-226: the live config's layers
        self.started = False
        self.all_log_dirs_failed = asyncio.Event()  # DUR-16: serve() stops the broker
        self._persister_calls: set[asyncio.Task] = set()  # the share persister's, running

    @property
    def port(self) -> int:
        assert self.socket_server is not None, "broker not started"
        return self.socket_server.port

    # ------------------------------------------------------------------ startup
    async def start(self) -> None:
        config = self.config
        loop = asyncio.get_running_loop()
        if config["zookeeper.connect"]:  # not connected yet: the credentials need its client
            self.zk_mode = ZooKeeperMode(config)
        self.credentials = (
            ZkCredentialStore(self.zk_mode.zk.zk)
            if self.zk_mode
            else self.kraft_mode.credentials()  # the image's (KBROKER-19)
            if self.kraft_mode
            else CredentialStore(config.data_dir)
        )
        listeners = self._listeners()  # TLS contexts and SASL settings; ConfigError if bad
        advertised = config.advertised_endpoints()
        endpoint = _broker_endpoint(config, advertised)
        settings = dict(
            log_defaults=config.log_config(),
            num_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"],
            delete_topic_enable=config["delete.topic.enable"],
            log_dirs=create_and_validate_log_dirs(config.log_dirs),  # before anything writes
        )
        controller: EmbeddedController | ZkClusterMetadata | KRaftClusterMetadata
        if self.zk_mode is not None:
            controller = await self.zk_mode.connect(endpoint, **settings)
            self.credentials.start()  # loads /config/users, follows /config/changes (SEC-20)
        elif self.kraft_mode is not None:
            controller = await self.kraft_mode.connect(endpoint, **settings)
        else:
            controller = EmbeddedController(config.data_dir, endpoint, **settings)
        self.controller = controller
        for entity in (DEFAULT_ENTITY, str(config.broker_id)):  # before any log opens
            self.dynamic_config.update(entity, controller.broker_configs(entity))
        log_defaults = controller.log_defaults = config.log_config()
        with _quiet_about(METADATA_FILE):
            self.log_manager = LogManager(
                config.log_dirs, log_defaults, self.clock, topic_config=controller.log_config
            )
        self.log_manager.log_dir_failure_listeners.append(self._on_log_dir_failure)
        if self.kraft_mode is not None:  # a clean restart's epoch (KBROKER-20)
            self.kraft_mode.previous_broker_epoch = self.log_manager.previous_broker_epoch
        purgatory = DelayedOperationPurgatory("Fetch", loop.call_later)
        self.replica_manager = ReplicaManager(
            config.broker_id,
            self.log_manager,
            purgatory,
            clock=self.clock,
            produce_purgatory=DelayedOperationPurgatory("Produce", loop.call_later),
            replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
            defer=loop.call_soon,
            partition_known=lambda topic, index: (
                controller.partition_state(topic, index) is not None
            ),
            replica_selector=replica_selector(config["replica.selector.class"]),
            broker_racks=lambda listener: {  # live brokers reachable on `listener` (REPL-15)
                b.node_id: b.rack for b in controller.brokers() if b.address(listener) is not None
            },
        )
        self.groups = GroupCoordinatorAdapter(
            config,
            self.replica_manager,
            self.clock,
            loop.call_later,
            share_persister=lambda: self.share_persister,
            spawn=self._spawn,
        )
        mode = self.zk_mode or self.kraft_mode
        if mode is not None:
            mode.wire(self.replica_manager, self.groups)
        else:
            controller.listeners.append(self.replica_manager)
            self._reconcile()
            controller.listeners.append(self.groups)  # after the ReplicaManager: logs exist
        self.groups.start()
        self.apis = KafkaApis(
            config,
            controller,
            self.replica_manager,
            purgatory,
            self.clock,
            self.groups.coordinator,
            dynamic_config=self.dynamic_config,
        )
        self.txns = TxnCoordinatorAdapter(
            config,
            controller,
            self.replica_manager,
            self.clock,
            loop.call_later,
            self.apis.producer_ids.generate_producer_id,
            self.apis.loopback,
        )
        if mode is not None:  # loads the partitions the controller makes it lead
            mode.follow_coordinator(TRANSACTION_STATE_TOPIC, self.txns)
        else:
            controller.listeners.append(self.txns)
        self.txns.start()
        self.apis.txn = self.txns
        self._start_share_coordinator(mode)
        # every group's configs, as the group coordinator and the share-partitions read them
        self.group_configs = GroupConfigs(controller.group_configs, config.__getitem__)
        coordinator = self.groups.coordinator
        coordinator.consumer.group_configs = self.group_configs.for_group
        coordinator.share.group_configs = self.group_configs.for_group
        self.share_partitions = SharePartitionManager(
            self.replica_manager,
            self.share_persister,
            self.clock,
            loop.call_later,
            share_partition_config(config),
            config["group.share.max.share.sessions"],
            group_config=self.group_configs.share_config,
        )
        self.apis.share_partitions = self.share_partitions
        self.apis.authorizer = self._authorizer()
        self.apis.quotas = self._quotas(loop)
        self.apis.credentials = self.credentials
        channel = RequestChannel(config["queued.max.requests"])
        self.handler_pool = RequestHandlerPool(channel, self.apis.handle)
        self.handler_pool.resize(config["num.io.threads"])
        self.socket_server = SocketServer(
            channel,
            listeners,
            max_request_size=config["socket.request.max.bytes"],
            memory_pool=memory_pool(config["queued.max.request.bytes"]),
            quotas=connection_quotas(config, [listener.name for listener in listeners]),
            connections_max_idle_ms=config["connections.max.idle.ms"],
        )
        # a share session ends with the connection it was opened on (SHARE-25)
        self.socket_server.disconnect_listeners.append(self.share_partitions.connection_closed)
        try:
            bound = await self.socket_server.bind()
            if config.metrics_address is not None:
                self.metrics = MetricsExporter(self, config.metrics_address)
                self.metrics.start()
        except OSError:  # e.g. the port is taken: leave the logs as a clean stop would
            await self._abort_start()
            raise
        advertised = [  # port 0: the bound one
            dataclasses.replace(e, port=bound[e.listener]) if e.port == 0 else e for e in advertised
        ]
        controller.endpoint = _broker_endpoint(config, advertised)
        if self.zk_mode is not None:
            await self.zk_mode.join()
            self.apis.kafka_controller = self.zk_mode.kafka_controller  # AlterPartition's
        elif self.kraft_mode is not None:
            await self.kraft_mode.join()  # registered, caught up, unfenced
            self.apis.forwarding = self.kraft_mode.forwarding  # admin requests (KIP-590)
        await self.socket_server.enable_request_processing()  # ready: the cluster is known
        self.tasks = BrokerTasks(
            config,
            self.clock,
            self.log_manager,
            self.replica_manager,
            self.groups.run_offset_expiration,
        )
        self.tasks.start()
        follow_broker(  # what each dynamic config changes
            self.dynamic_config,
            controller,
            self.log_manager,
            self.handler_pool,
            self.apis.add_partitions,
            self.tasks.restart_cleaner,
        )
        self.dynamic_config.add_reconfigurable(
            is_listener_security_key,
            lambda _old, new: self._reconfigure_listeners(listeners, new),
            validate=self._build_listeners,
        )
        self.started = True
        logger.info(
            "broker %d started: cluster id %s, listeners %s, advertised as %s, "
            "log dirs %s, %d topics, %d partitions",
            config.broker_id,
            controller.cluster_id,
            ",".join(f"{e.listener}://{e.host}:{bound[e.listener]}" for e in config.endpoints()),
            ",".join(e.uri() for e in advertised),
            ",".join(config.log_dirs),
            len(controller.topics()),
            len(self.replica_manager.partitions),
        )
        # a KRaft node reads the quorum's keys (server/controller_node.py KRaftSettings)
        kraft = ("process.roles", "controller.", "metadata.log.dir") if config.roles else ()
        for key in config.ignored:
            if not key.startswith(kraft):
                logger.info("config %s is accepted but has no effect here", key)

    def _start_share_coordinator(self, mode: ZooKeeperMode | KRaftMode | None) -> None:
        """The share coordinator over `__share_group_state`, loaded like the other two
        coordinators, and the persister that reaches it (share/default_persister.py)."""
        assert self.controller is not None and self.replica_manager is not None
        assert self.apis is not None
        self.shares = ShareCoordinatorAdapter(
            self.config, self.controller, self.replica_manager, self.clock
        )
        if mode is not None:  # loads the partitions the metadata makes it lead
            mode.follow_coordinator(SHARE_GROUP_STATE_TOPIC, self.shares)
        else:
            self.controller.listeners.append(self.shares)
        self.shares.start()
        self.apis.share_coordinator = self.shares
        self._share_channel = InterBrokerChannel(
            self.controller,
            "share-persister",
            InterBrokerSecurity.from_config(self.config),
            loopback=self.apis.loopback,
        )
        self.share_persister = DefaultStatePersister(
            self.shares.find_coordinator, self._share_channel.send
        )
        # the share group lag's end offsets, from the partitions' leaders (SHARE-51)
        self._offsets_channel = InterBrokerChannel(
            self.controller,
            "partition-metadata-client",
            InterBrokerSecurity.from_config(self.config),
            loopback=self.apis.loopback,
        )
        offsets = PartitionMetadataClient(self.controller, self._offsets_channel)
        assert self.groups is not None
        self.groups.coordinator.share_admin.end_offsets = offsets.latest_offsets

    def _authorizer(self) -> Authorizer | None:
        """ACLs from the metadata directory, ZooKeeper's or the KRaft image's, kept current
        (SEC-19)."""
        if not self.config["authorizer.class.name"]:
            return None
        if self.kraft_mode is not None:  # the image's (KBROKER-19)
            return self.kraft_mode.authorizer()
        if self.zk_mode is None:
            return Authorizer.from_config(self.config, FileAclStore(self.config.data_dir))
        store = ZkAclStore(self.zk_mode.zk.zk)
        authorizer = Authorizer.from_config(self.config, store)
        store.watch(authorizer.reload)
        return authorizer

    def _spawn(self, coroutine) -> None:
        """Run a share persister call on the loop, off the request that started it."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._persister_calls.add(task)
        task.add_done_callback(self._persister_calls.discard)

    def _quotas(self, loop: asyncio.AbstractEventLoop) -> QuotaManagers:
        """Client quotas from the metadata directory, ZooKeeper's or the KRaft image's, kept
        current (QUOTA-4)."""
        config = self.config
        windows = config["quota.window.num"], config["quota.window.size.seconds"]
        if self.kraft_mode is not None:  # the image's (KBROKER-19)
            return self.kraft_mode.quotas(*windows)
        if self.zk_mode is None:
            return QuotaManagers(*windows, FileQuotaStore(config.data_dir))
        store = ZkQuotaStore(self.zk_mode.zk.zk)
        quotas = QuotaManagers(*windows, store)

        def reload() -> None:  # kazoo's thread reads; the loop puts them in force
            configs = store.load()
            loop.call_soon_threadsafe(quotas.replace, configs)

        store.watch(reload)
        return quotas

    def _listeners(self) -> list[ListenerSecurity]:
        """Each listener's security settings (Kafka: its ChannelBuilder)."""
        try:  # the inter-broker login's mistakes refuse the start too
            InterBrokerSecurity.from_config(self.config)
        except (ListenerError, SslConfigError) as err:
            raise ConfigError(str(err)) from None
        return self._build_listeners(self.config)

    def _build_listeners(self, config: KafkaConfig) -> list[ListenerSecurity]:
        """The listeners' security settings under `config`; ConfigError if one cannot work
        (at start, and to check a dynamic change before it is accepted: CONFIG-10)."""
        try:
            return [
                build_listener_security(
                    e, functools.partial(config.listener_get, e.listener), self.credentials
                )
                for e in config.endpoints()
            ]
        except (ListenerError, SslConfigError) as err:
            raise ConfigError(str(err)) from None

    def _reconfigure_listeners(
        self, listeners: list[ListenerSecurity], config: KafkaConfig
    ) -> None:
        """A listener's security keys changed: new connections use the rebuilt settings."""
        try:
            rebuilt = self._build_listeners(config)
        except ConfigError as err:  # checked before it was accepted; a stored one at start
            logger.error("listener security not reconfigured: %s", err)
            return
        by_name = {new.name: new for new in rebuilt}
        for running in listeners:
            running.take(by_name[running.name])

    async def _leave_cluster(self) -> None:
        mode = self.zk_mode or self.kraft_mode
        if mode is not None:
            await mode.leave()

    def _reconcile(self) -> None:
        """Bring logs and metadata into agreement after a restart (BROKER-36)."""
        controller, log_manager = self.controller, self.log_manager
        assert controller is not None and log_manager is not None
        assert self.replica_manager is not None
        for topic in controller.pending_deletions():
            logger.info("finishing the deletion of topic %s", topic)
            controller.finish_deletion(topic)
        orphans: dict[str, int] = {}
        for topic, partition in list(log_manager.logs):
            if controller.topic(topic) is None:
                orphans[topic] = max(orphans.get(topic, 0), partition + 1)
        for topic, partitions in sorted(orphans.items()):
            controller.adopt_topic(topic, partitions)
        for meta in controller.topics():
            for index in range(meta.partitions):
                self.replica_manager.make_leader(meta.name, index)

    async def _stop_metrics(self) -> None:
        if self.metrics is not None:  # off the loop: a scrape in progress reads on it
            await asyncio.get_running_loop().run_in_executor(None, self.metrics.stop)
            self.metrics = None

    async def _abort_start(self) -> None:
        if self.tasks is not None:
            await self.tasks.stop()
        if self.handler_pool is not None:
            await self.handler_pool.shutdown()
        await self.socket_server.stop_accepting()
        await self._stop_metrics()
        await self._leave_cluster()
        if self.groups is not None:
            self.groups.shutdown()
        assert self.log_manager is not None
        self.log_manager.close()

    # ------------------------------------------------------------------ shutdown
    def _on_log_dir_failure(self, _log_dir: str) -> None:
        assert self.log_manager is not None
        if self.log_manager.all_dirs_offline:  # Kafka: LogManager.handleLogDirFailure
            logger.error(
                "Shutdown broker because all log dirs in %s have failed",
                ", ".join(self.log_manager.log_dirs),
            )
            self.all_log_dirs_failed.set()

    async def stop(self) -> None:
        """Stop accepting, answer waiting fetches, close connections, close logs cleanly."""
        if not self.started:
            return
        self.started = False
        logger.info("broker %d shutting down", self.config.broker_id)
        assert self.socket_server is not None and self.replica_manager is not None
        await self.socket_server.stop_accepting()
        await self._stop_metrics()
        await self._leave_cluster()  # and stop the replica fetchers
        self.replica_manager.fetch_purgatory.shutdown()
        if self.share_partitions is not None:
            self.share_partitions.shutdown()  # the lock timers
        self.replica_manager.produce_purgatory.shutdown()  # REQUEST_TIMED_OUT: not on the ISR
        assert self.groups is not None
        self.groups.shutdown()  # waiting joins and syncs answer before the sockets close
        if self.txns is not None:
            await self.txns.shutdown()
        if self.shares is not None:
            self.shares.shutdown()  # what waits for a write hears NOT_COORDINATOR
        if self._share_channel is not None:
            self._share_channel.close()
        if self._offsets_channel is not None:
            self._offsets_channel.close()
        assert self.apis is not None and self.apis.add_partitions is not None
        self.apis.add_partitions.shutdown()
        await asyncio.sleep(0.05)  # let the answers of the waiting fetches go out
        if self.tasks is not None:
            await self.tasks.stop()
        assert self.handler_pool is not None
        await self.handler_pool.shutdown()
        await self.socket_server.stop()
        await asyncio.sleep(0.05)
        assert self.log_manager is not None
        self.replica_manager.checkpoint_high_watermarks()
        epoch = self.kraft_mode.broker_epoch() if self.kraft_mode is not None else -1
        self.log_manager.close(epoch)  # flush, checkpoints, clean-shutdown marker (KIP-966)
        logger.info("broker %d shut down cleanly", self.config.broker_id)


def _broker_endpoint(config: KafkaConfig, advertised: list[EndPoint]) -> BrokerEndpoint:
    """This broker as others see it: the inter-broker listener's address, and every
    listener's advertised endpoint (SEC-2)."""
    own = next(e for e in advertised if e.listener == config.inter_broker_listener)
    rack = config["broker.rack"]
    return BrokerEndpoint(config.broker_id, own.host, own.port, rack, tuple(advertised))

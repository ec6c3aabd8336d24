"""A broker's view of a ZooKeeper cluster: what the controller told it, and what it watches.

In ZooKeeper mode no broker owns the metadata: ZooKeeper does. Each broker keeps a local
picture (Kafka: `ZkMetadataCache`) of the live brokers, the controller, the topics with
their assignments and configs, and each partition's state (leader, leader epoch, ISR), and
answers Metadata from it. `ZkClusterMetadata` offers the same interface as the embedded
controller (`ClusterMetadataApi`), so the request handlers never ask which mode they run in.
Reads come from the picture; changes (CreateTopics, CreatePartitions, AlterConfigs,
DeleteTopics) are checked and written to ZooKeeper by its other half, zk_admin.py.

**Two sources.** The *controller* tells the broker who is alive and every partition's
state, in UpdateMetadata and LeaderAndIsr requests (handlers/controller_requests.py);
*watches* keep the rest current: the controller's id (`/controller`: every broker takes
part in the election), the topics (`/brokers/topics` children, each topic's znode) and
their configs (`/config/topics/<topic>`). No broker but the active controller watches
`/brokers/ids`, and none watches a partition state znode.

**Threads.** kazoo calls the watch callbacks on its own threads. The callbacks read
ZooKeeper there, then hand a small "apply" function to the broker's event loop (`dispatch`,
e.g. `loop.call_soon_threadsafe`), so the picture and the ReplicaManager only ever change on
the loop, between requests, and handlers read them without locks. Handlers call ZooKeeper
synchronously when they administer topics: a local ZooKeeper answers in about a
millisecond, and a blocked loop for that long is the price of simple code.

**Live brokers to the broker** (CTRL-31). UpdateMetadata lists every live broker with each
listener's endpoint and its rack (Kafka: `ZkMetadataCache.updateMetadata`); the picture
takes that list whole (`update_live_brokers`), and Metadata answers with the endpoints of
the listener a client came in on (SEC-2), the inter-broker channel and the replica fetchers
with those of the inter-broker listener. A broker that registers or leaves is seen here
only when the controller says so, which it does to every live broker at once.

**Partition state to the broker.** A LeaderAndIsr's states go to the listeners
(`on_partition_state`; the ReplicaManager becomes leader or follower, Kafka's
`becomeLeaderOrFollower`); UpdateMetadata's go to the picture (`update_metadata`), unless
*older* than the one it holds: a lower controller epoch or a lower leader epoch is ignored
(CTRL-5). Only the controller's requests bring states; the broker never reads one from
ZooKeeper, where a state may still name it leader of a partition the controller has not
yet given it (after a restart, say).

**The first UpdateMetadata** (CTRL-32). A broker that registers is sent, before anything
else, an UpdateMetadata with the live brokers and every partition's state (Kafka:
`KafkaController.onBrokerStartup`). Until it arrives the picture knows the topics but no
broker and no leader, so a request answered from it (Metadata, DescribeCluster,
FindCoordinator, CreateTopics, CreatePartitions) waits for it (`hold`): at most a ZooKeeper
session timeout, the time it takes to elect a new controller if there is none. Then the
request is answered with what the picture holds.

**Epochs.** `broker_epoch` is the czxid of this broker's registration (KIP-380), new at
every registration; `controller_epoch` the newest controller epoch a request brought. The
controller's requests are checked against both (CTRL-19, CTRL-20).

**Topic configs** (CTRL-15). The picture is first read whole, topics with their config
overrides, when the broker starts and before its log manager opens a log, so every log
opens with its topic's config; a watch on `/config/topics/<topic>` then follows the
overrides, and when they change the listeners apply the new config to the live logs.

**Dynamic broker configs** (CONFIG-6; cluster/config_changes.py). `/config/brokers/<default>`
and `/config/brokers/<id>` are read at start with the topics; the notices under
`/config/changes` then bring every change, handed to `on_broker_config` on the loop.
**Group configs** (CONFIG-13) likewise: every `/config/groups/<group>` at start, then the
notices.

**Lost connections.** A watch callback that reads ZooKeeper retries its reads until kazoo
has reconnected (`_retrying`): a ConnectionLoss in kazoo's thread never leaves the picture
stale (the topics, their configs) until the next change.

Rules: CONFIG-6, CTRL-1, CTRL-5, CTRL-10, CTRL-13, CTRL-15, CTRL-20, CTRL-21, CTRL-31,
CTRL-32.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from kafka_ref.cluster import zk_data as zkdata
from kafka_ref.cluster.config_changes import (
    DEFAULT_ENTITY,
    BrokerConfigChangeListener,
    read_broker_config,
    read_group_configs,
)
from kafka_ref.cluster.embedded import (
    META_PROPERTIES,
    MetadataLoadError,
    new_cluster_id,
    read_meta_properties,
)
from kafka_ref.cluster.metadata import (
    BrokerEndpoint,
    PartitionState,
    TopicMetadata,
    TopicsImage,
)
from kafka_ref.cluster.zk_admin import ZkTopicAdministration
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.config import LogConfig
from kafka_ref.files import write_atomically
from kafka_ref.security.listeners import EndPoint
from kafka_ref.server.broker_configs import BROKER_CONFIGS

logger = logging.getLogger("kafka_ref.cluster.zk_metadata")


class PartitionStateListener(Protocol):
    """What the broker does when a partition's state or a topic changes."""

    def on_partition_state(self, state: PartitionState) -> None: ...

    def on_topic_deleted(self, topic: str, partitions: int) -> None: ...

    def on_topic_config(self, topic: str, config: LogConfig) -> None: ...


def is_stale(current: PartitionState | None, incoming: PartitionState) -> bool:
    """A state from an older controller or an older leader epoch is ignored (CTRL-5)."""
    if current is None:
        return False
    return (
        incoming.controller_epoch < current.controller_epoch
        or incoming.leader_epoch < current.leader_epoch
    )


class ZkClusterMetadata(ZkTopicAdministration):
    """This broker's picture of the cluster in ZooKeeper (Kafka: `ZkMetadataCache`)."""

    def __init__(
        self,
        zk: KafkaZkClient,
        data_dir: str,
        endpoint: BrokerEndpoint,
        *,
        log_defaults: LogConfig | None = None,
        num_partitions: int = BROKER_CONFIGS["num.partitions"].default,
        default_replication_factor: int = BROKER_CONFIGS["default.replication.factor"].default,
        delete_topic_enable: bool = BROKER_CONFIGS["delete.topic.enable"].default,
        log_dirs: Iterable[str] = (),
        inter_broker_listener: str = "PLAINTEXT",
        first_update_wait_s: float = 18.0,
    ) -> None:
        self.zk = zk
        self.data_dir = os.path.abspath(data_dir)
        self.log_dirs = tuple(os.path.abspath(d) for d in log_dirs) or (self.data_dir,)
        self.endpoint = endpoint
        self.inter_broker_listener = inter_broker_listener  # where other brokers are reached
        self.log_defaults = log_defaults or LogConfig()
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.delete_topic_enable = delete_topic_enable
        self.listeners: list[PartitionStateListener] = []
        self.dispatch: Callable[[Callable[[], None]], None] = lambda fn: fn()
        self._brokers: dict[int, BrokerEndpoint] = {}
        self._controller_id = -1
        self._topics = TopicsImage()
        self._assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self._states: dict[tuple[str, int], PartitionState] = {}
        # Requests waiting for the controller's first UpdateMetadata (CTRL-32); None once
        # it came, or once the first of them waited `first_update_wait_s` for it.
        self._held: list[Callable[[], None]] | None = []
        self.first_update_wait_s = first_update_wait_s  # zookeeper.session.timeout.ms
        self.broker_epoch = -1  # the czxid of our registration, once registered (KIP-380)
        self.controller_epoch = 0  # the newest controller epoch seen in a request (CTRL-19)
        self._watched_topics: set[str] = set()
        self._lock = threading.Lock()  # guards the watch sets (kazoo threads)
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
        self.cluster_id = zk.get_or_create_cluster_id(new_cluster_id())
        self._check_meta_properties()
        self._load_topics()
        entities = (DEFAULT_ENTITY, str(endpoint.node_id))
        self.on_broker_config = lambda entity, configs: None  # the broker's DynamicBrokerConfig
        self._config_changes = BrokerConfigChangeListener(
            zk.zk,
            entities,
            self._on_broker_config_notice,
            self._retrying,
            self._on_group_config_notice,
        )
        self._broker_configs = {e: read_broker_config(zk.zk, e) for e in entities}
        self._group_configs = read_group_configs(zk.zk)  # CONFIG-13

    def _load_topics(self) -> None:
        """Every topic with its assignment and config overrides, read before the log manager
        opens a log (CTRL-15; Kafka's `LogManager.startup` fetches all topic configs first):
        a log opened at start gets its topic's overrides, not the broker's defaults."""
        for topic in self.zk.get_all_topics():
            found = self._read_topic(topic)
            if found is not None:
                self._apply_topic(*found)

    def _read_topic(self, topic: str) -> tuple[TopicMetadata, dict[int, tuple[int, ...]]] | None:
        found = self.zk.get_topic(topic)
        return None if found is None else self._topic_metadata(topic, *found)

    def _topic_metadata(
        self, topic: str, assignment: dict[int, tuple[int, ...]], topic_id: str | None
    ) -> tuple[TopicMetadata, dict[int, tuple[int, ...]]]:
        meta = TopicMetadata(
            topic,
            uuid.UUID(topic_id) if topic_id else uuid.uuid5(uuid.NAMESPACE_URL, topic),
            len(assignment),
            len(assignment.get(0, ())) or 1,
            self.zk.get_topic_config(topic),
        )
        return meta, assignment

    def _retrying(self, read: Callable[[], Any]) -> Any:
        """Run a watch callback's ZooKeeper reads until they succeed (kazoo's thread).

        A connection lost in the middle of a callback (ConnectionLoss) would otherwise kill
        the callback and leave this broker's picture stale until the next change; kazoo
        reconnects within the session, and the reads are tried again."""
        return KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0, deadline=60)(read)

    def _check_meta_properties(self) -> None:
        """meta.properties ties each data directory to one broker id and one cluster."""
        text = (
            f"#Written by kafka-ref\nversion=0\nbroker.id={self.endpoint.node_id}\n"
            f"cluster.id={self.cluster_id}\n"
        )
        for log_dir in self.log_dirs:
            path = os.path.join(log_dir, META_PROPERTIES)
            stored = read_meta_properties(path, self.endpoint.node_id)
            if stored not in (None, self.cluster_id):
                raise MetadataLoadError(
                    f"The Cluster ID {self.cluster_id} doesn't match stored clusterId"
                    f" {stored} in {path}"  # Kafka: InconsistentClusterIdException
                )
            write_atomically(path, text.encode())

    # ------------------------------------------------------------------ registration, watches
    def register(self, timeout: float = 60.0) -> None:
        """Register /brokers/ids/<id> (CTRL-1), then watch the cluster.

        After a kill -9 and a quick restart, the old session's znode lives until that
        session times out; wait for it rather than fail (Kafka fails and is restarted). A
        connection lost meanwhile, or a session expired while the process was paused, is
        waited out too: kazoo reconnects, with a new session if need be (CTRL-17).
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.broker_epoch = self._retrying(lambda: self.zk.register_broker(self.endpoint))
                break
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise
                logger.info("broker id %d is still registered; waiting", self.endpoint.node_id)
                time.sleep(0.5)
        logger.info(
            "registered broker %d at %s, broker epoch %d",
            self.endpoint.node_id,
            zkdata.BROKER_IDS,
            self.broker_epoch,
        )
        self.zk.zk.add_listener(self._on_session_state)
        DataWatch(self.zk.zk, zkdata.CONTROLLER, self._on_controller)
        ChildrenWatch(self.zk.zk, zkdata.TOPICS, self._on_topics)
        self._config_changes.start()

    def _on_broker_config_notice(self, entity: str, configs: dict[str, str]) -> None:
        def apply() -> None:
            if self._broker_configs.get(entity) != configs:
                self._broker_configs[entity] = configs
                self.on_broker_config(entity, dict(configs))

        self.dispatch(apply)

    def _on_group_config_notice(self, group_id: str, configs: dict[str, str]) -> None:
        def apply() -> None:
            if configs:
                self._group_configs[group_id] = configs
            else:
                self._group_configs.pop(group_id, None)

        self.dispatch(apply)

    def _on_session_state(self, state: str) -> None:
        if state == KazooState.LOST and not self.zk.closing:
            logger.warning("ZooKeeper session lost: broker %d left", self.endpoint.node_id)
        elif state == KazooState.CONNECTED:  # after a lost session, register again
            self.zk.zk.handler.spawn(self._reregister)

    def _reregister(self) -> None:
        """After an expired session ZooKeeper has deleted our znode: create it again (CTRL-13).
        A reconnection within the same session finds it and does nothing."""

        def register() -> None:
            if self.zk.get_broker(self.endpoint.node_id) is None:
                with contextlib.suppress(NodeExistsError):
                    self.broker_epoch = self.zk.register_broker(self.endpoint)
                    logger.info(
                        "registered broker %d again (new session), broker epoch %d",
                        self.endpoint.node_id,
                        self.broker_epoch,
                    )

        self._retrying(register)

    def _on_controller(self, data: bytes | None, _stat: object) -> None:
        controller = -1 if data is None else int(json.loads(data)["brokerid"])
        self.dispatch(lambda: setattr(self, "_controller_id", controller))

    def _on_topics(self, children: list[str]) -> None:
        with self._lock:
            new = [t for t in children if t not in self._watched_topics]
            self._watched_topics.update(new)
        for topic in new:
            DataWatch(self.zk.zk, zkdata.topic_path(topic), self._topic_watch(topic))
            DataWatch(self.zk.zk, f"{zkdata.CONFIG_TOPICS}/{topic}", self._config_watch(topic))

    def _config_watch(self, topic: str) -> Callable:
        """The topic's config overrides (`/config/topics/<topic>`), applied as they change."""

        def on_change(data: bytes | None, _stat: object) -> bool | None:
            with self._lock:
                if topic not in self._watched_topics:
                    return False  # the topic is gone: so is this watch
            configs = zkdata.decode_topic_config(data)

            def apply() -> None:
                meta = self._topics.get(topic)
                if meta is not None and meta.configs != configs:
                    changed = dataclasses.replace(meta, configs=configs)
                    self._apply_topic(changed, self._assignments[topic])

            self.dispatch(apply)
            return None

        return on_change

    def _topic_watch(self, topic: str) -> Callable:
        def on_change(data: bytes | None, _stat: object) -> bool | None:
            if data is None:
                with self._lock:
                    self._watched_topics.discard(topic)
                self.dispatch(lambda: self._remove_topic(topic))
                return False
            decoded = zkdata.decode_assignment(data)
            meta, assignment = self._retrying(lambda: self._topic_metadata(topic, *decoded))
            self.dispatch(lambda: self._apply_topic(meta, assignment))
            return None

        return on_change

    # ------------------------------------------------------------------ applying (the loop)
    def _apply_topic(self, meta: TopicMetadata, assignment: dict[int, tuple[int, ...]]) -> None:
        before = self._topics.get(meta.name)
        self._topics[meta.name] = meta
        self._assignments[meta.name] = assignment
        if before is not None and before.configs != meta.configs:  # live logs follow (CTRL-15)
            config = self.log_config(meta.name) or self.log_defaults
            for listener in self.listeners:
                listener.on_topic_config(meta.name, config)

    def learn_topic(self, topic: str) -> None:
        """A topic the controller names before this broker's watch brought it: read it now,
        so that its logs open with its config overrides (CTRL-15)."""
        if topic not in self._topics:
            found = self._read_topic(topic)
            if found is not None:
                self._apply_topic(*found)

    def update_metadata(
        self, states: Iterable[PartitionState], controller_id: int | None = None
    ) -> None:
        """The controller's partition states (UpdateMetadata, and LeaderAndIsr's for the
        replicas here), each unless older than the one held (CTRL-5, CTRL-12). UpdateMetadata
        also names the controller (Kafka's `ZkMetadataCache` takes it from there): a broker
        back from an expired session knows its successor before its /controller watch is
        set again."""
        if controller_id is not None:
            self._controller_id = controller_id
        for state in states:
            key = (state.topic, state.partition)
            if is_stale(self._states.get(key), state):
                logger.warning("ignoring stale state of %s-%d: %s", *key, state)
                continue
            self._states[key] = state

    def update_live_brokers(
        self, brokers: Iterable[tuple[int, tuple[EndPoint, ...], str | None]]
    ) -> None:
        """UpdateMetadata's live brokers, (id, every listener's endpoint, rack), replace the
        list this broker knows (CTRL-31; Kafka: `ZkMetadataCache.updateMetadata`). The
        first UpdateMetadata releases the requests that waited for it (CTRL-32)."""
        self._brokers = {
            node_id: BrokerEndpoint.reached_on(node_id, endpoints, rack, self.inter_broker_listener)
            for node_id, endpoints, rack in brokers
        }
        self._release()

    def hold(self, resume: Callable[[], None]) -> bool:
        """Whether a request answered from this picture must wait for the controller's first
        UpdateMetadata (CTRL-32): if so, `resume` runs when it has come, or once the first
        held request has waited `first_update_wait_s` (on the loop)."""
        if self._held is None:
            return False
        if not self._held:
            asyncio.get_running_loop().call_later(self.first_update_wait_s, self._release)
        self._held.append(resume)
        return True

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for resume in held:
            resume()

    def _remove_topic(self, topic: str) -> None:
        meta = self._topics.pop(topic, None)
        self._assignments.pop(topic, None)
        for key in [k for k in self._states if k[0] == topic]:
            del self._states[key]
        if meta is not None:
            for listener in self.listeners:
                listener.on_topic_deleted(topic, meta.partitions)
            logger.info("topic %s deleted", topic)

    # ------------------------------------------------------------------ reading
    @property
    def controller_id(self) -> int:
        return self._controller_id

    def brokers(self) -> list[BrokerEndpoint]:
        return [self._brokers[b] for b in sorted(self._brokers)]

    def topics(self) -> list[TopicMetadata]:
        return [self._topics[name] for name in sorted(self._topics)]

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def pending_deletions(self) -> dict[str, int]:
        return {}  # the controller deletes; nothing to finish locally

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The applied state; None while the controller has not elected a first leader."""
        return self._states.get((topic, partition))

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        return self._assignments.get(topic, {}).get(partition, ())

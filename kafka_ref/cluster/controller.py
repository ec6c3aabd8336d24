"""The controller: one broker of a ZooKeeper cluster that decides leaders and ISRs.

Every broker runs a `KafkaController`; at most one is *active*. It is the broker whose
ephemeral `/controller` znode exists, and it became so by creating that znode and
incrementing `/controller_epoch` in one ZooKeeper transaction (CTRL-2). The others watch
`/controller`: when it disappears (its broker died or closed its session) each tries to
create it, and ZooKeeper lets exactly one succeed, with the next epoch (CTRL-3).

The active controller (Kafka: `KafkaController`, ZooKeeper mode) reacts to three watches:

* **`/brokers/ids` children** (`BrokerChange`; broker_change.py): it tells every broker who
  is alive, and a new one every partition's state; it elects new leaders for the
  partitions whose leader left, from the live ISR (CTRL-6), with a new leader epoch
  (CTRL-7). The controller is the only broker that watches `/brokers/ids` (CTRL-31).
* **`/brokers/topics` children and each topic's data** (`TopicChange`,
  `PartitionModifications`). A new partition gets its first state: the first live assigned
  replica leads, the live replicas form the ISR, leader epoch 0 (Kafka: NewPartition ->
  OnlinePartition).
* **`/admin/delete_topics` children** (`TopicDeletion`): the topic's replicas are sent
  StopReplica (delete), and its znodes are removed.

Every write is fenced by the controller epoch (zookeeper.py, CTRL-4): a deposed controller's
write fails with `ControllerMovedError`, and it resigns.

**Events on one thread.** Watches fire on kazoo's threads; they only put an event on a
queue, and a single `controller-event-thread` handles events one at a time (Kafka:
`ControllerEventManager`). So the controller's state (live brokers, partition states and
their znode versions) needs no locks, and every decision sees a consistent picture.

**How brokers learn of a decision: over the wire, after ZooKeeper.** ZooKeeper keeps the
decisions; the brokers do not watch them. Once an event's writes are done, the controller
sends what it decided (controller_channel.py, Kafka's `ControllerBrokerRequestBatch`):
LeaderAndIsr to the live replicas of each changed partition, UpdateMetadata to every live
broker, StopReplica to the replicas of a deleted topic. Each request carries the controller
epoch and the receiver's *broker epoch*, the czxid of its `/brokers/ids/<id>` registration
(KIP-380), which this controller reads with the registration. A broker refuses a request
from an older controller epoch and one meant for an earlier registration of itself
(CTRL-19, CTRL-20). A broker that registers, or registers again (a restart or an expired
session: same id, a new epoch, Kafka's "bounced" brokers), is sent the live brokers and the
state of every partition before anything else (CTRL-21, CTRL-32); a new controller sends
every broker everything, so the brokers learn its epoch at once.

**ISR changes by leaders** come as AlterPartition requests (KIP-497, CTRL-22): the
controller checks the leader's broker epoch, leader epoch and partition epoch (the state
znode's version) and that the new ISR members are live replicas, writes the state (same
leader epoch) and answers with it; UpdateMetadata then tells every broker. So the
controller's cache of partition states follows every change, and no leader writes
ZooKeeper.

**A broker's failed log directory** (KIP-112, CTRL-30) comes as a log dir event
notification; the handling is in log_dir_events.py: the replicas in that directory count
as not live for their partitions only (`live_for`), so elections and AlterPartition
treat them as a dead broker's.

**Operators' requests** are mixins run on the same thread: reassignments (reassignment.py,
CTRL-24..26), elections on request and the automatic rebalance (leader_balance.py).

Rules: CTRL-2, CTRL-3, CTRL-4, CTRL-13, CTRL-16, CTRL-21, CTRL-22, CTRL-30, CTRL-31.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kafka_ref.cluster import zk_data as zkdata
from kafka_ref.cluster.broker_change import BrokerChangeHandling
from kafka_ref.cluster.controller_channel import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from kafka_ref.cluster.leader_balance import LeaderBalance, LeaderBalanceConfig
from kafka_ref.cluster.log_dir_events import LogDirFailureHandling
from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.cluster.reassignment import PartitionReassignment, Reassignment
from kafka_ref.cluster.zookeeper import ControllerMovedError, KafkaZkClient
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.cluster.controller")

AlterItem = tuple[str, int, int, tuple[int, ...], int]  # topic, partition, epoch, ISR, version
AlterReply = Callable[
    [ErrorCode, dict[TopicPartition, tuple[ErrorCode, PartitionState | None]]], None
]


class KafkaController(
    BrokerChangeHandling, PartitionReassignment, LeaderBalance, LogDirFailureHandling
):
    """This broker's controller role: elected through /controller, active on one broker."""

    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        channel: ControllerChannelManager,
        *,
        unclean_leader_election: Callable[[str, dict[str, str]], bool],
        leader_balance: LeaderBalanceConfig | None = None,
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.channel = channel
        self.unclean_for = unclean_leader_election  # (topic, its config overrides) -> bool
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.live: dict[int, tuple[BrokerEndpoint, int]] = {}  # id -> (endpoint, broker epoch)
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.states: dict[TopicPartition, tuple[PartitionState, int]] = {}  # and znode version
        self.reassignments: dict[TopicPartition, Reassignment] = {}  # reassignment.py
        self.leader_balance = leader_balance or LeaderBalanceConfig()  # leader_balance.py
        self._batch: ControllerBrokerRequestBatch | None = None  # this event's requests
        self._events: queue.Queue[tuple | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, name=f"controller-event-thread-{broker_id}", daemon=True
        )
        self._watched_topics: set[str] = set()
        self._watches_installed = False
        self._stopped = False
        self.election_timer = LatencyHistogram()  # Kafka: LeaderElectionRateAndTimeMs
        self.offline_replicas = {}  # broker -> its replicas in failed log dirs (CTRL-30)
        channel.on_response = self._on_broker_response

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        self._thread.start()
        self.zk.zk.add_listener(self._on_session_state)
        DataWatch(self.zk.zk, zkdata.CONTROLLER, self._on_controller_znode)
        self._start_auto_rebalance()

    def shutdown(self) -> None:
        self._stopped = True
        self._stop_auto_rebalance()
        self._events.put(None)
        self._thread.join(10)
        self.channel.shutdown()

    def _put(self, *event: object) -> None:
        if not self._stopped:
            self._events.put(event)

    def _on_session_state(self, state: str) -> None:
        if state == KazooState.LOST:  # our /controller died with the session (CTRL-13)
            self._put("resign")
        elif state == KazooState.CONNECTED:
            self._put("elect")

    def _on_controller_znode(self, data: bytes | None, _stat: object) -> None:
        self._put("elect" if data is None else "controller_change")
        return None if not self._stopped else False  # False: stop watching

    def _run(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            name, *args = event
            try:
                getattr(self, f"_handle_{name}")(*args)
                self._send_batch()
            except ControllerMovedError as err:
                logger.warning("broker %d: %s; resigning as controller", self.broker_id, err)
                self._handle_resign()
            except Exception:  # one failed event must not kill the controller thread
                logger.exception("controller event %s failed", name)
            self._batch = None

    # ------------------------------------------------------------------ requests to brokers
    @property
    def batch(self) -> ControllerBrokerRequestBatch:
        """The requests this event has decided so far (sent when it is handled)."""
        if self._batch is None:
            self._batch = ControllerBrokerRequestBatch(self.broker_id, self.epoch)
        return self._batch

    def _send_batch(self) -> None:
        """Kafka `sendRequestsToBrokers`: after the event's ZooKeeper writes, never before."""
        if self._batch is not None and self.active:
            for broker, request in self._batch.requests(self.live):
                self.channel.send(broker, request, self.epoch)

    def _current(self, tp: TopicPartition) -> PartitionState:
        state, version = self.states[tp]
        return dataclasses.replace(state, zk_version=version)

    def _announce(self, tp: TopicPartition) -> None:
        """A partition's new state: LeaderAndIsr to its live replicas, UpdateMetadata to all."""
        state = self._current(tp)
        self.batch.add_leader_and_isr([r for r in state.replicas if r in self.live], state)
        self.batch.add_update_metadata(self.live, [state])

    # ------------------------------------------------------------------ election (CTRL-2,3)
    def _handle_elect(self) -> None:
        if self.active or self._stopped:
            return
        try:
            self.epoch, self.epoch_zk_version = self.zk.register_controller_and_increment_epoch(
                self.broker_id
            )
        except NodeExistsError:
            logger.debug("broker %d: controller is %s", self.broker_id, self.zk.get_controller_id())
            return
        except BadVersionError:  # another broker bumped the epoch concurrently
            self._put("elect")
            return
        self.active = True
        logger.info("broker %d is the controller, epoch %d", self.broker_id, self.epoch)
        self._on_failover()

    def _handle_controller_change(self) -> None:
        if self.active and self.zk.get_controller_id() != self.broker_id:
            self._handle_resign()

    def _handle_resign(self) -> None:
        if self.active:
            logger.info("broker %d resigns as controller (epoch %d)", self.broker_id, self.epoch)
        self.active = False
        self.states.clear()
        self.reassignments.clear()
        self.live = {}
        self.offline_replicas.clear()
        self._batch = None
        self.channel.shutdown()  # Kafka: onControllerResignation stops the send threads

    def _on_failover(self) -> None:
        """Kafka `onControllerFailover`: read everything, watch, then repair what is stale.
        Every live broker counts as new: it gets every partition's state under this
        controller's epoch (CTRL-21)."""
        self.live = {}
        self.assignments.clear()
        self.states.clear()
        self.reassignments.clear()
        for topic in self.zk.get_all_topics():
            self._load_topic(topic)
        if not self._watches_installed:  # kazoo's watches persist; install them once
            self._watches_installed = True
            ChildrenWatch(self.zk.zk, zkdata.BROKER_IDS, lambda _c: self._put("broker_change"))
            ChildrenWatch(self.zk.zk, zkdata.TOPICS, lambda _c: self._put("topic_change"))
            ChildrenWatch(self.zk.zk, zkdata.DELETE_TOPICS, lambda _c: self._put("deletion"))
            self._watch_log_dir_events()
        self._handle_broker_change()
        self._handle_deletion()
        self._resume_reassignments()

    # ------------------------------------------------------------------ topics
    def _load_topic(self, topic: str) -> None:
        found = self.zk.get_topic(topic)
        if found is None:
            return
        assignment, _topic_id = found
        self.assignments[topic] = assignment
        self.configs[topic] = self.zk.get_topic_config(topic)
        for partition, replicas in assignment.items():
            current = self.zk.get_partition_state(topic, partition, replicas)
            if current is not None:
                self.states[(topic, partition)] = current
        self._load_moves(topic)
        if topic not in self._watched_topics:
            self._watched_topics.add(topic)
            DataWatch(self.zk.zk, zkdata.topic_path(topic), self._topic_watch(topic))

    def _topic_watch(self, topic: str) -> Callable:
        def on_change(data: bytes | None, _stat: object) -> bool | None:
            if data is None:
                self._watched_topics.discard(topic)
                return False  # deleted: a re-created topic gets a new watch
            self._put("partition_modifications", topic)
            return None

        return on_change

    def _handle_topic_change(self) -> None:
        if not self.active:
            return
        topics = set(self.zk.get_all_topics())
        for topic in sorted(topics - set(self.assignments)):
            self._load_topic(topic)
            self._initialize_partitions(topic)
        for topic in set(self.assignments) - topics:
            self._forget(topic)

    def _handle_partition_modifications(self, topic: str) -> None:
        if self.active and topic in self.assignments:
            self._load_topic(topic)
            self._initialize_partitions(topic)

    def _initialize_partitions(self, topic: str) -> None:
        """NewPartition -> OnlinePartition: first live replica leads, live replicas are the ISR."""
        for partition, replicas in sorted(self.assignments.get(topic, {}).items()):
            if (topic, partition) in self.states:
                continue
            live_replicas = tuple(r for r in replicas if r in self.live)
            if not live_replicas:  # stays new; retried when a replica's broker registers
                continue
            state = PartitionState(
                topic, partition, live_replicas[0], 0, replicas, live_replicas, self.epoch
            )
            try:
                self.zk.create_partition_state(state, self.epoch_zk_version)
                self.states[(topic, partition)] = (state, 0)
            except NodeExistsError:  # written by a previous controller: take it as it is
                current = self.zk.get_partition_state(topic, partition, replicas)
                if current is None:
                    continue
                self.states[(topic, partition)] = current
            self._announce((topic, partition))
        logger.info("controller %d: topic %s is online", self.broker_id, topic)

    def _handle_deletion(self) -> None:
        if not self.active:
            return
        for topic in self.zk.get_topic_deletions():
            logger.info("controller %d deletes topic %s", self.broker_id, topic)
            for (name, partition), (state, _) in sorted(self.states.items()):
                if name == topic:  # its replicas stop and delete their logs
                    for replica in state.replicas:
                        self.batch.add_stop_replica(replica, name, partition, state.leader_epoch)
            self.zk.delete_topic_znodes(topic)
            self._forget(topic)

    def _forget(self, topic: str) -> None:
        self.assignments.pop(topic, None)
        self.configs.pop(topic, None)
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]
            self.reassignments.pop(tp, None)

    # ------------------------------------------------------------------ AlterPartition (CTRL-22)
    def alter_partition(
        self, broker_id: int, broker_epoch: int, items: list[AlterItem], reply: AlterReply
    ) -> None:
        """A leader's AlterPartition, decided on the event thread; `reply` gets the answer."""
        self._put("alter_partition", broker_id, broker_epoch, items, reply)

    def _handle_alter_partition(
        self, broker_id: int, broker_epoch: int, items: list[AlterItem], reply: AlterReply
    ) -> None:
        """Kafka `KafkaController.processAlterPartition` (ZooKeeper mode)."""
        if not self.active:
            reply(ErrorCode.NOT_CONTROLLER, {})
            return
        if broker_id not in self.live or self.live[broker_id][1] != broker_epoch:
            reply(ErrorCode.STALE_BROKER_EPOCH, {})
            return
        results: dict[TopicPartition, tuple[ErrorCode, PartitionState | None]] = {}
        try:
            for topic, partition, leader_epoch, new_isr, partition_epoch in items:
                tp = TopicPartition(topic, partition)
                results[tp] = self._alter_isr(tp, broker_id, leader_epoch, new_isr, partition_epoch)
        except ControllerMovedError:
            reply(ErrorCode.NOT_CONTROLLER, {})
            raise
        reply(ErrorCode.NO_ERROR, results)
        for tp, (code, _) in results.items():
            if code == ErrorCode.NO_ERROR:  # a new ISR may complete a reassignment (CTRL-25)
                self._maybe_complete_reassignment(tp)

    def _alter_isr(
        self, tp: TopicPartition, leader: int, leader_epoch: int, isr: tuple[int, ...], version: int
    ) -> tuple[ErrorCode, PartitionState | None]:
        if tp not in self.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        state, current_version = self.states[tp]
        if state.leader != leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        if leader_epoch != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None
        if tuple(isr) == state.isr:  # a retry whose first answer was lost: done already
            return ErrorCode.NO_ERROR, self._current(tp)  # Kafka: equalsAllowStalePartitionEpoch
        if version != current_version:
            return ErrorCode.INVALID_UPDATE_VERSION, None
        live = self.live_for(tp)
        if leader not in isr or any(r not in live or r not in state.replicas for r in isr):
            return ErrorCode.OPERATION_NOT_ATTEMPTED, None  # INELIGIBLE_REPLICA from v2
        new = dataclasses.replace(state, isr=tuple(isr), controller_epoch=self.epoch)
        try:
            written = self.zk.update_partition_state(new, current_version, self.epoch_zk_version)
        except (BadVersionError, NoNodeError):  # cannot happen while this controller is alive
            return ErrorCode.INVALID_UPDATE_VERSION, None
        self.states[tp] = (new, written)
        self.batch.add_update_metadata(self.live, [self._current(tp)])
        logger.info(
            "controller %d: %s-%d isr %s (AlterPartition from %d)",
            self.broker_id,
            tp[0],
            tp[1],
            list(isr),
            leader,
        )
        return ErrorCode.NO_ERROR, self._current(tp)

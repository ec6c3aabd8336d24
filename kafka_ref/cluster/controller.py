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

**Operators' requests** run on the same thread: reassignments (reassignment.py,
CTRL-24..26), elections on request and the automatic rebalance (leader_balance.py).

**The parts.** `KafkaController` is the event loop, the election of the controller, the
topics' watches and AlterPartition; the rest is in parts it composes, each an object whose
constructor names what it uses:

* `ControllerContext` (controller_context.py): the data: the epoch, the live brokers, the
  partition states, the moves; every part reads and changes the cluster there;
* `PartitionStateMachine` (partition_states.py): ZooKeeper's partition states, the
  context, the event's batch, each topic's unclean election setting;
* `BrokerChangeHandler` (broker_change.py): ZooKeeper's registrations, the context, the
  channel's brokers, the state machine, the batch;
* `PartitionReassignment` (reassignment.py): ZooKeeper's topic znodes, the context, the
  state machine, the batch;
* `LeaderBalance` (leader_balance.py): the context, the state machine, the settings;
* `LogDirFailureHandler` (log_dir_events.py): the pending notifications, the context, the
  state machine, the batch.

The parts share the cluster's picture through the one `ControllerContext` and each event's
requests through the batch the controller hands them (`_current_batch`). The state machine
is the only part the others call, and none calls the controller but through what it was
handed (the broker change may send the batch at once). The controller calls into the parts
from its event handlers, and only while it is active.

Rules: CTRL-2, CTRL-3, CTRL-4, CTRL-13, CTRL-16, CTRL-21, CTRL-22, CTRL-30, CTRL-31.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kafka_ref.cluster import zk_data as zkdata
from kafka_ref.cluster.broker_change import BrokerChangeHandler
from kafka_ref.cluster.controller_channel import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from kafka_ref.cluster.controller_context import ControllerContext
from kafka_ref.cluster.leader_balance import (
    ElectionType,
    ElectReply,
    LeaderBalance,
    LeaderBalanceConfig,
)
from kafka_ref.cluster.log_dir_events import (
    LogDirFailureHandler,
    offline_replicas_in,
    take_log_dir_events,
    watch_log_dir_events,
)
from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.cluster.partition_states import PartitionStateMachine
from kafka_ref.cluster.reassignment import (
    ListReply,
    PartitionReassignment,
    ReassignItem,
    ReassignReply,
)
from kafka_ref.cluster.zookeeper import ControllerMovedError, KafkaZkClient
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.cluster.controller")

AlterItem = tuple[str, int, int, tuple[int, ...], int]  # topic, partition, epoch, ISR, version
AlterReply = Callable[
    [ErrorCode, dict[TopicPartition, tuple[ErrorCode, PartitionState | None]]], None
]


class KafkaController:
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
        self.active = False
        self.context = ControllerContext(broker_id)
        self.election_timer = LatencyHistogram()  # Kafka: LeaderElectionRateAndTimeMs
        self._batch: ControllerBrokerRequestBatch | None = None  # this event's requests
        self.partitions = PartitionStateMachine(
            zk,
            self.context,
            self._current_batch,
            unclean_for=unclean_leader_election,  # (topic, its config overrides) -> bool
            election_timer=self.election_timer,
        )
        self.broker_change = BrokerChangeHandler(
            zk, self.context, channel, self.partitions, self._current_batch, self._send_batch
        )
        self.reassignment = PartitionReassignment(
            zk, self.context, self.partitions, self._current_batch
        )
        self.leader_balance = LeaderBalance(
            self.context, self.partitions, leader_balance or LeaderBalanceConfig()
        )
        self.log_dirs = LogDirFailureHandler(
            lambda: take_log_dir_events(zk.zk), self.context, self.partitions, self._current_batch
        )
        self._events: queue.Queue[tuple | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, name=f"controller-event-thread-{broker_id}", daemon=True
        )
        self._rebalance_stop = threading.Event()
        self._watched_topics: set[str] = set()
        self._watches_installed = False
        self._stopped = False
        channel.on_response = self._on_broker_response

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        self._thread.start()
        self.zk.zk.add_listener(self._on_session_state)
        DataWatch(self.zk.zk, zkdata.CONTROLLER, self._on_controller_znode)
        self._start_auto_rebalance()

    def shutdown(self) -> None:
        self._stopped = True
        self._rebalance_stop.set()
        self._events.put(None)
        self._thread.join(10)
        self.channel.shutdown()

    def _start_auto_rebalance(self) -> None:
        """Every `leader.imbalance.check.interval.seconds`, a rebalance check (CTRL-28)."""
        config = self.leader_balance.config
        if not config.enable:
            return

        def tick() -> None:
            while not self._rebalance_stop.wait(config.check_interval_s):
                self._put("auto_rebalance")

        threading.Thread(target=tick, name="auto-leader-rebalance", daemon=True).start()

    # ------------------------------------------------------------------ events
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

    def _on_broker_response(self, broker: int, api_key: int, response: Any) -> None:
        """On the channel's loop: LeaderAndIsr answers with offline replicas become events."""
        offline = offline_replicas_in(api_key, response)
        if offline:
            self._put("offline_replicas", broker, offline)

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
    def _current_batch(self) -> ControllerBrokerRequestBatch:
        """The requests this event has decided so far (sent when it is handled)."""
        if self._batch is None:
            self._batch = ControllerBrokerRequestBatch(self.broker_id, self.context.epoch)
        return self._batch

    def _send_batch(self) -> None:
        """Kafka `sendRequestsToBrokers`: after the event's ZooKeeper writes, never before."""
        if self._batch is not None and self.active:
            for broker, request in self._batch.requests(self.context.live):
                self.channel.send(broker, request, self.context.epoch)
        self._batch = None

    # ------------------------------------------------------------------ election (CTRL-2,3)
    def _handle_elect(self) -> None:
        if self.active or self._stopped:
            return
        try:
            epoch, epoch_zk_version = self.zk.register_controller_and_increment_epoch(
                self.broker_id
            )
        except NodeExistsError:
            logger.debug("broker %d: controller is %s", self.broker_id, self.zk.get_controller_id())
            return
        except BadVersionError:  # another broker bumped the epoch concurrently
            self._put("elect")
            return
        self.context.new_epoch(epoch, epoch_zk_version)
        self.active = True
        logger.info("broker %d is the controller, epoch %d", self.broker_id, epoch)
        self._on_failover()

    def _handle_controller_change(self) -> None:
        if self.active and self.zk.get_controller_id() != self.broker_id:
            self._handle_resign()

    def _handle_resign(self) -> None:
        if self.active:
            logger.info(
                "broker %d resigns as controller (epoch %d)", self.broker_id, self.context.epoch
            )
        self.active = False
        self.context.clear()
        self._batch = None
        self.channel.shutdown()  # Kafka: onControllerResignation stops the send threads

    def _on_failover(self) -> None:
        """Kafka `onControllerFailover`: read everything, watch, then repair what is stale.
        Every live broker counts as new: it gets every partition's state under this
        controller's epoch (CTRL-21)."""
        self.context.clear()
        for topic in self.zk.get_all_topics():
            self._load_topic(topic)
        if not self._watches_installed:  # kazoo's watches persist; install them once
            self._watches_installed = True
            ChildrenWatch(self.zk.zk, zkdata.BROKER_IDS, lambda _c: self._put("broker_change"))
            ChildrenWatch(self.zk.zk, zkdata.TOPICS, lambda _c: self._put("topic_change"))
            ChildrenWatch(self.zk.zk, zkdata.DELETE_TOPICS, lambda _c: self._put("deletion"))
            watch_log_dir_events(self.zk.zk, lambda: self._put("log_dir_event"))
        self.broker_change.on_broker_change()
        self._handle_deletion()
        self.reassignment.resume()

    # ------------------------------------------------------------------ the parts' events
    def _handle_broker_change(self) -> None:
        if self.active:
            self.broker_change.on_broker_change()

    def _handle_log_dir_event(self) -> None:
        if self.active:
            self.log_dirs.on_log_dir_event()

    def _handle_offline_replicas(self, broker: int, offline: list[TopicPartition]) -> None:
        if self.active:
            self.log_dirs.on_offline_replicas(broker, offline)

    def _handle_auto_rebalance(self) -> None:
        if self.active:
            self.leader_balance.rebalance()

    # ------------------------------------------------------------------ operators' requests
    def alter_reassignments(
        self, items: list[ReassignItem], reply: ReassignReply, allow_rf_change: bool = True
    ) -> None:
        """AlterPartitionReassignments (CTRL-24..26, CTRL-33); `reply` gets the outcomes,
        None if this broker is not the controller."""
        self._put("alter_reassignments", items, reply, allow_rf_change)

    def _handle_alter_reassignments(
        self, items: list[ReassignItem], reply: ReassignReply, allow_rf_change: bool
    ) -> None:
        reply(self.reassignment.alter(items, allow_rf_change) if self.active else None)

    def list_reassignments(self, reply: ListReply) -> None:
        """ListPartitionReassignments; `reply` gets the moves, None if not the controller."""
        self._put("list_reassignments", reply)

    def _handle_list_reassignments(self, reply: ListReply) -> None:
        reply(self.reassignment.listing() if self.active else None)

    def elect_leaders(
        self, election: ElectionType, partitions: list[TopicPartition] | None, reply: ElectReply
    ) -> None:
        """ElectLeaders (CTRL-27); `reply` gets the outcomes, None if not the controller."""
        self._put("elect_leaders", election, partitions, reply)

    def _handle_elect_leaders(
        self,
        election: ElectionType,
        partitions: list[TopicPartition] | None,
        reply: ElectReply,
    ) -> None:
        reply(self.leader_balance.elect_leaders(election, partitions) if self.active else None)

    # ------------------------------------------------------------------ topics
    def _load_topic(self, topic: str) -> None:
        found = self.zk.get_topic(topic)
        if found is None:
            return
        assignment, _topic_id = found
        context = self.context
        context.assignments[topic] = assignment
        context.configs[topic] = self.zk.get_topic_config(topic)
        for partition, replicas in assignment.items():
            current = self.zk.get_partition_state(topic, partition, replicas)
            if current is not None:
                context.states[(topic, partition)] = current
        self.reassignment.load_moves(topic)
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
        known = set(self.context.assignments)
        for topic in sorted(topics - known):
            self._load_topic(topic)
            self.partitions.initialize_partitions(topic)
        for topic in known - topics:
            self.context.forget(topic)

    def _handle_partition_modifications(self, topic: str) -> None:
        if self.active and topic in self.context.assignments:
            self._load_topic(topic)
            self.partitions.initialize_partitions(topic)

    def _handle_deletion(self) -> None:
        if not self.active:
            return
        for topic in self.zk.get_topic_deletions():
            logger.info("controller %d deletes topic %s", self.broker_id, topic)
            for (name, partition), (state, _) in sorted(self.context.states.items()):
                if name == topic:  # its replicas stop and delete their logs
                    for replica in state.replicas:
                        self._current_batch().add_stop_replica(
                            replica, name, partition, state.leader_epoch
                        )
            self.zk.delete_topic_znodes(topic)
            self.context.forget(topic)

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
        live = self.context.live
        if broker_id not in live or live[broker_id][1] != broker_epoch:
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
                self.reassignment.maybe_complete(tp)

    def _alter_isr(
        self, tp: TopicPartition, leader: int, leader_epoch: int, isr: tuple[int, ...], version: int
    ) -> tuple[ErrorCode, PartitionState | None]:
        context = self.context
        if tp not in context.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        state, current_version = context.states[tp]
        if state.leader != leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        if leader_epoch != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None
        if tuple(isr) == state.isr:  # a retry whose first answer was lost: done already
            return ErrorCode.NO_ERROR, context.current(tp)  # Kafka: equalsAllowStalePartitionEpoch
        if version != current_version:
            return ErrorCode.INVALID_UPDATE_VERSION, None
        live = context.live_for(tp)
        if leader not in isr or any(r not in live or r not in state.replicas for r in isr):
            return ErrorCode.OPERATION_NOT_ATTEMPTED, None  # INELIGIBLE_REPLICA from v2
        new = dataclasses.replace(state, isr=tuple(isr), controller_epoch=context.epoch)
        try:
            written = self.zk.update_partition_state(new, current_version, context.epoch_zk_version)
        except (BadVersionError, NoNodeError):  # cannot happen while this controller is alive
            return ErrorCode.INVALID_UPDATE_VERSION, None
        context.states[tp] = (new, written)
        self._current_batch().add_update_metadata(context.live, [context.current(tp)])
        logger.info(
            "controller %d: %s-%d isr %s (AlterPartition from %d)",
            self.broker_id,
            tp[0],
            tp[1],
            list(isr),
            leader,
        )
        return ErrorCode.NO_ERROR, context.current(tp)

"""The controller: one broker of a ZooKeeper cluster that decides leaders and ISRs.

Every broker runs a `KafkaController`; at most one is *active*. It is the broker whose
ephemeral `/controller` znode exists, and it became so by creating that znode and
incrementing `/controller_epoch` in one ZooKeeper transaction (CTRL-2). The others watch
`/controller`: when it disappears (its broker died or closed its session) each tries to
create it, and ZooKeeper lets exactly one succeed, with the next epoch (CTRL-3).

The active controller (Kafka: `KafkaController`, ZooKeeper mode) reacts to three watches:

* **`/brokers/ids` children** (`BrokerChange`). For every partition whose leader left, it
  elects a new leader with `election.elect_leader` from the live ISR, or from any live
  replica when `unclean.leader.election.enable` is true for the topic (CTRL-6); partitions
  that keep their leader drop the dead brokers from their ISR. Every change writes a new
  `state` znode with `leader_epoch + 1` (CTRL-7; in ZooKeeper mode Kafka bumps the epoch on
  ISR shrinks too, `LeaderAndIsr.newLeaderAndIsr`). A partition with no live candidate goes
  *offline* (leader -1) and keeps its last ISR member, so that it comes back cleanly when
  that broker returns; a returning broker is therefore also a trigger.
* **`/brokers/topics` children and each topic's data** (`TopicChange`,
  `PartitionModifications`). A new partition gets its first state: the first live assigned
  replica leads, the live replicas form the ISR, leader epoch 0 (Kafka: NewPartition ->
  OnlinePartition).
* **`/admin/delete_topics` children** (`TopicDeletion`): the topic's znodes are removed.

Every write is fenced by the controller epoch (zookeeper.py, CTRL-4): a deposed controller's
write fails with `ControllerMovedError`, and it resigns.

**Events on one thread.** Watches fire on kazoo's threads; they only put an event on a
queue, and a single `controller-event-thread` handles events one at a time (Kafka:
`ControllerEventManager`). So the controller's state (live brokers, partition states and
their znode versions) needs no locks, and every decision sees a consistent picture.

**How brokers learn of a decision: znode watches, not LeaderAndIsr.** Kafka's controller
sends LeaderAndIsr and UpdateMetadata requests to every broker, over its own connections,
with retries, and brokers must discard reordered or repeated ones by epoch. kafka-ref's
brokers instead watch the `state` znodes themselves (zk_metadata.py). That is simpler here:
no controller-to-broker channel, no request queue, no retries, and no lost or reordered
messages, because ZooKeeper delivers changes of one znode in order and a broker always
reads the latest data. Kafka moved away from it (0.8) because watches on every partition of
a large cluster load ZooKeeper and delay failover ("herd effect"); for a teaching cluster of
a few brokers the clarity wins. The partition state itself carries the controller epoch, so a
broker still ignores a state older than one it applied (CTRL-5).

Rules: CTRL-2, CTRL-3, CTRL-4, CTRL-6, CTRL-7, CTRL-13.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from kafka_ref.cluster import zookeeper as zkdata
from kafka_ref.cluster.election import elect_leader
from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.cluster.zookeeper import ControllerMovedError, KafkaZkClient
from kafka_ref.common import TopicPartition
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.cluster.controller")

NO_LEADER = -1  # Kafka: LeaderAndIsr.NoLeader


def next_state(
    state: PartitionState, live: set[int], *, unclean: bool, controller_epoch: int
) -> PartitionState | None:
    """The partition's new state after the live brokers became `live`, or None if unchanged.

    The leader stays while alive, and the ISR loses the dead; otherwise a new leader is
    elected (CTRL-6). Any change bumps the leader epoch (CTRL-7).
    """
    if state.leader in live:
        leader, isr = state.leader, tuple(b for b in state.isr if b in live)
    else:
        election = elect_leader(state.replicas, state.isr, live, unclean_leader_election=unclean)
        leader = NO_LEADER if election.leader is None else election.leader
        isr = election.isr
        if election.unclean:
            logger.warning(
                "unclean leader election for %s-%d: broker %d leads without being in the ISR"
                " %s; acknowledged writes may be lost",
                state.topic, state.partition, leader, list(state.isr),
            )  # fmt: skip
    if leader == state.leader and isr == state.isr:
        return None
    return PartitionState(
        state.topic, state.partition, leader, state.leader_epoch + 1, state.replicas, isr,
        controller_epoch,
    )  # fmt: skip


class KafkaController:
    """This broker's controller role: elected through /controller, active on one broker."""

    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        *,
        unclean_leader_election: Callable[[str, dict[str, str]], bool],
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.unclean_for = unclean_leader_election  # (topic, its config overrides) -> bool
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.live: set[int] = set()
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.states: dict[TopicPartition, tuple[PartitionState, int]] = {}  # and znode version
        self._events: queue.Queue[tuple | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, name=f"controller-event-thread-{broker_id}", daemon=True
        )
        self._watched_topics: set[str] = set()
        self._watches_installed = False
        self._stopped = False
        self.election_timer = LatencyHistogram()  # Kafka: LeaderElectionRateAndTimeMs

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        self._thread.start()
        self.zk.zk.add_listener(self._on_session_state)
        DataWatch(self.zk.zk, zkdata.CONTROLLER, self._on_controller_znode)

    def shutdown(self) -> None:
        self._stopped = True
        self._events.put(None)
        self._thread.join(10)

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
            except ControllerMovedError as err:
                logger.warning("broker %d: %s; resigning as controller", self.broker_id, err)
                self._handle_resign()
            except Exception:  # one failed event must not kill the controller thread
                logger.exception("controller event %s failed", name)

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

    def _on_failover(self) -> None:
        """Kafka `onControllerFailover`: read everything, watch, then repair what is stale."""
        self.live = set(self.zk.get_broker_ids())
        self.assignments.clear()
        self.states.clear()
        for topic in self.zk.get_all_topics():
            self._load_topic(topic)
        if not self._watches_installed:  # kazoo's watches persist; install them once
            self._watches_installed = True
            ChildrenWatch(self.zk.zk, zkdata.BROKER_IDS, lambda _c: self._put("broker_change"))
            ChildrenWatch(self.zk.zk, zkdata.TOPICS, lambda _c: self._put("topic_change"))
            ChildrenWatch(self.zk.zk, zkdata.DELETE_TOPICS, lambda _c: self._put("deletion"))
        self._handle_broker_change()
        self._handle_deletion()

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
                if current is not None:
                    self.states[(topic, partition)] = current
        logger.info("controller %d: topic %s is online", self.broker_id, topic)

    def _handle_deletion(self) -> None:
        if not self.active:
            return
        for topic in self.zk.get_topic_deletions():
            logger.info("controller %d deletes topic %s", self.broker_id, topic)
            self.zk.delete_topic_znodes(topic)
            self._forget(topic)

    def _forget(self, topic: str) -> None:
        self.assignments.pop(topic, None)
        self.configs.pop(topic, None)
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]

    # ------------------------------------------------------------------ brokers (CTRL-6,7)
    def _handle_broker_change(self) -> None:
        if not self.active:
            return
        live = set(self.zk.get_broker_ids())
        gone, born = self.live - live, live - self.live
        self.live = live
        if gone or born:
            logger.info(
                "controller %d: brokers %s left, %s joined; live %s",
                self.broker_id, sorted(gone), sorted(born), sorted(live),
            )  # fmt: skip
        for topic in sorted(self.assignments):
            self._initialize_partitions(topic)  # partitions whose replicas were all away
        for tp in sorted(self.states):
            if gone & set(self.states[tp][0].replicas):
                self._refresh(tp)
            self._elect_if_needed(tp)

    def _refresh(self, tp: TopicPartition) -> None:
        """Re-read a partition's state before deciding on it (CTRL-16). Leaders write their
        ISR expansions and shrinks to ZooKeeper themselves, so the cached state may lack a
        replica that rejoined the ISR; deciding on it would leave a dead broker in the ISR
        (Kafka keeps its cache current with /isr_change_notification, and since KIP-497
        leaders ask the controller instead)."""
        state = self.states[tp][0]
        current = self.zk.get_partition_state(*tp, state.replicas)
        if current is not None:
            self.states[tp] = current

    def _elect_if_needed(self, tp: TopicPartition, retries: int = 3) -> None:
        started = time.monotonic_ns()
        state, version = self.states[tp]
        unclean = self.unclean_for(tp[0], self.configs.get(tp[0], {}))
        new = next_state(state, self.live, unclean=unclean, controller_epoch=self.epoch)
        if new is None:
            return
        try:
            version = self.zk.update_partition_state(new, version, self.epoch_zk_version)
        except BadVersionError:  # the state changed under us (e.g. the leader's ISR update)
            current = self.zk.get_partition_state(*tp, state.replicas)
            if current is None or retries == 0:
                return
            self.states[tp] = current
            self._elect_if_needed(tp, retries - 1)
            return
        except NoNodeError:  # the topic is being deleted
            return
        self.states[tp] = (new, version)
        if new.leader not in (state.leader, NO_LEADER):  # elected, not only an ISR trimmed
            self.election_timer.observe((time.monotonic_ns() - started) / 1e6)
        logger.info(
            "controller %d: %s-%d leader %d -> %d, leader epoch %d, isr %s",
            self.broker_id, tp[0], tp[1], state.leader, new.leader, new.leader_epoch,
            list(new.isr),
        )  # fmt: skip

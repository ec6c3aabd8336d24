"""How the controller changes a partition's state: write it to ZooKeeper, then tell brokers.

Every decision of the controller about a partition (its first leader, a new leader after a
failure, an ISR without a dead broker, a preferred or reassigned leader) ends the same
way, in Kafka's `ZkPartitionStateMachine`:

1. **Write** the new state znode `/brokers/topics/<t>/partitions/<p>/state`, conditional on
   the version the controller read (someone else may have changed it) and fenced by the
   controller epoch's znode version (CTRL-4, CTRL-9);
2. **Remember** it, with its new version, in the controller's context;
3. **Announce** it: LeaderAndIsr to the partition's live replicas and UpdateMetadata to every
   live broker, added to the event's batch, which leaves after the event's writes (CTRL-21).

Three transitions use that path:

* **New -> online** (`initialize_partitions`): the first live assigned replica leads, the
  live replicas form the ISR, leader epoch 0 (Kafka: NewPartition -> OnlinePartition). A
  partition none of whose replicas is live stays new until one registers.
* **Offline -> online, or a smaller ISR** (`elect_if_needed`): the election of election.py
  over the replicas live for the partition (CTRL-6), with leader epoch + 1 (CTRL-7);
  `unclean.leader.election.enable` is read per topic.
* **Any other new state** (`write`): reassignments and elections on request decide the
  state themselves and have it written and announced.

`PartitionStateMachine` is constructed with what it uses: the three partition-state calls
of ZooKeeper, the controller's context, the event's request batch, the topic's unclean
election setting, and the election timer of the metrics.

Rules: CTRL-6, CTRL-7, CTRL-21.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafka_ref.cluster.controller_channel import ControllerBrokerRequestBatch
from kafka_ref.cluster.controller_context import ControllerContext
from kafka_ref.cluster.election import NO_LEADER, next_state
from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.common import TopicPartition
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.cluster.controller")

UncleanFor = Callable[[str, dict[str, str]], bool]  # (topic, its config overrides) -> enabled


class PartitionStateStore(Protocol):
    """The partition-state znodes, fenced by the controller epoch (`KafkaZkClient`)."""

    def get_partition_state(
        self, topic: str, partition: int, replicas: tuple[int, ...] = ()
    ) -> tuple[PartitionState, int] | None: ...

    def create_partition_state(self, state: PartitionState, epoch_zk_version: int) -> None: ...

    def update_partition_state(
        self, state: PartitionState, expected_version: int, epoch_zk_version: int
    ) -> int: ...


class PartitionStateMachine:
    """Writes partition states and announces them (Kafka: `ZkPartitionStateMachine`)."""

    def __init__(
        self,
        zk: PartitionStateStore,
        context: ControllerContext,
        batch: Callable[[], ControllerBrokerRequestBatch],
        *,
        unclean_for: UncleanFor,
        election_timer: LatencyHistogram,
    ) -> None:
        self.zk = zk
        self.context = context
        self.batch = batch  # the requests of the event being handled
        self.unclean_for = unclean_for
        self.election_timer = election_timer  # Kafka: LeaderElectionRateAndTimeMs

    def announce(self, tp: TopicPartition) -> None:
        """A partition's new state: LeaderAndIsr to its live replicas, UpdateMetadata to all."""
        live = self.context.live
        state = self.context.current(tp)
        self.batch().add_leader_and_isr([r for r in state.replicas if r in live], state)
        self.batch().add_update_metadata(live, [state])

    def write(self, tp: TopicPartition, new: PartitionState) -> bool:
        """Write a partition's new state under the controller epoch and announce it; False
        if the partition was deleted or its state changed since it was read."""
        _, version = self.context.states[tp]
        try:
            version = self.zk.update_partition_state(new, version, self.context.epoch_zk_version)
        except (BadVersionError, NoNodeError):
            return False
        self.context.states[tp] = (new, version)
        self.announce(tp)
        return True

    def initialize_partitions(self, topic: str) -> None:
        """NewPartition -> OnlinePartition: first live replica leads, live replicas are the ISR."""
        context = self.context
        for partition, replicas in sorted(context.assignments.get(topic, {}).items()):
            if (topic, partition) in context.states:
                continue
            live_replicas = tuple(r for r in replicas if r in context.live)
            if not live_replicas:  # stays new; retried when a replica's broker registers
                continue
            state = PartitionState(
                topic, partition, live_replicas[0], 0, replicas, live_replicas, context.epoch
            )
            try:
                self.zk.create_partition_state(state, context.epoch_zk_version)
                context.states[(topic, partition)] = (state, 0)
            except NodeExistsError:  # written by a previous controller: take it as it is
                current = self.zk.get_partition_state(topic, partition, replicas)
                if current is None:
                    continue
                context.states[(topic, partition)] = current
            self.announce((topic, partition))
        logger.info("controller %d: topic %s is online", context.broker_id, topic)

    def elect_if_needed(self, tp: TopicPartition, retries: int = 3) -> None:
        """A new leader if the leader is not live for the partition, or an ISR without the
        replicas that are not (CTRL-6, CTRL-7); nothing if the state is right as it is."""
        context = self.context
        started = time.monotonic_ns()
        state, version = context.states[tp]
        unclean = self.unclean_for(tp[0], context.configs.get(tp[0], {}))
        new = next_state(
            state, context.live_for(tp), unclean=unclean, controller_epoch=context.epoch
        )
        if new is None:
            return
        try:
            version = self.zk.update_partition_state(new, version, context.epoch_zk_version)
        except BadVersionError:  # the state changed under us (e.g. the leader's ISR update)
            current = self.zk.get_partition_state(*tp, state.replicas)
            if current is None or retries == 0:
                return
            context.states[tp] = current
            self.elect_if_needed(tp, retries - 1)
            return
        except NoNodeError:  # the topic is being deleted
            return
        context.states[tp] = (new, version)
        self.announce(tp)
        if new.leader not in (state.leader, NO_LEADER):  # elected, not only an ISR trimmed
            self.election_timer.observe((time.monotonic_ns() - started) / 1e6)
        logger.info(
            "controller %d: %s-%d leader %d -> %d, leader epoch %d, isr %s",
            context.broker_id,
            tp[0],
            tp[1],
            state.leader,
            new.leader,
            new.leader_epoch,
            list(new.isr),
        )

"""Partition reassignment (KIP-455): moving a partition's replicas to other brokers.

An operator moves a partition from its *original replicas* (ORS, e.g. [1, 2]) to *target
replicas* (TRS, e.g. [2, 3]) without stopping writes: to drain a broker, to use a new one,
to change where the copies are. The data must reach the new brokers before the old copies
go, so the move has two phases (Kafka: `KafkaController.onPartitionReassignment`):

1. **Grow.** The replica set becomes RS = TRS + ORS (duplicates once), and the topic's
   znode `/brokers/topics/<t>` records it with `adding_replicas` (TRS - ORS) and
   `removing_replicas` (ORS - TRS). The state gets a new leader epoch, and LeaderAndIsr tells
   every replica of RS: the new ones create their log and fetch from the leader as
   followers (CTRL-24).
2. **Shrink**, once every replica of TRS is in the ISR (the leader added the new ones with
   AlterPartition, CTRL-22, when they caught up). If the leader is not in TRS, the first
   live TRS member of the ISR leads; the replicas become TRS, the ISR loses the removed
   ones, and the leader epoch rises again; the removed replicas get StopReplica with
   delete, and the znode is written with TRS and no moves (CTRL-25).

No write acknowledged with acks=all can be lost: the ISR only loses the removed replicas
when every target replica is in it, and so has every acknowledged write.

A null target *cancels* the partition's reassignment: the replicas go back to ORS (a
leader from ORS, as in phase 2), the added replicas are stopped and deleted (CTRL-26).
Because the moves are in ZooKeeper, a new controller reads them and carries on (it
restarts phase 1, which is idempotent, then waits for the ISR as before).

A target may hold more or fewer replicas than ORS: that changes the partition's replication
factor. Since KIP-860 a request (v1+) can forbid it: with `allow_replication_factor_change`
false such a target is INVALID_REPLICATION_FACTOR (CTRL-33).

Each move is a `Reassignment` (ORS and TRS; Kafka's `ReplicaAssignment`), kept in the
controller's context (controller_context.py) where every part sees which partitions move.
`PartitionReassignment` is a part of the controller, run on its event thread like the rest
and constructed with what it uses: the topic znode's calls of ZooKeeper, the controller's
context (where the moves in progress are kept, for the other parts to see), the partition
state machine that writes and announces each new state (partition_states.py), and the
event's request batch, for StopReplica. Elections are decided in election.py.

Rules: CTRL-24, CTRL-25, CTRL-26, CTRL-33.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from typing import Protocol

from kafka_ref.cluster.controller_channel import ControllerBrokerRequestBatch
from kafka_ref.cluster.controller_context import ControllerContext, Reassignment
from kafka_ref.cluster.election import NO_LEADER, reassignment_leader
from kafka_ref.cluster.partition_states import PartitionStateMachine
from kafka_ref.cluster.zk_data import Moves
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode

logger = logging.getLogger("kafka_ref.cluster.reassignment")

ReassignItem = tuple[str, int, tuple[int, ...] | None]  # topic, partition, target or None
ReassignResult = tuple[ErrorCode, str | None]
# The replies get None when this broker is no longer the controller (NOT_CONTROLLER).
ReassignReply = Callable[[dict[TopicPartition, ReassignResult] | None], None]
ListReply = Callable[[dict[TopicPartition, tuple[tuple[int, ...], ...]] | None], None]


def validate_target(target: tuple[int, ...], live: Collection[int]) -> str | None:
    """Why a target replica list cannot be used, or None (Kafka: `validateReplicas`)."""
    if not target:
        return "The target replica list is empty."
    if len(set(target)) != len(target):
        return f"Duplicate replicas in {list(target)}."
    unknown = sorted(set(target) - set(live))
    if unknown:
        return f"Brokers {unknown} are not registered."
    return None


def replication_factor_change(original: tuple[int, ...], target: tuple[int, ...]) -> str | None:
    """Why a target changes the replication factor, or None (Kafka:
    `ReplicationControlManager.validatePartitionReplicationFactorUnchanged`): its size
    against ORS, the replicas before any pending move (CTRL-33)."""
    if len(target) == len(original):
        return None
    return f"The replication factor is changed from {len(original)} to {len(target)}"


class TopicAssignments(Protocol):
    """A topic's znode, with its moves, fenced by the controller epoch (`KafkaZkClient`)."""

    def get_topic(self, topic: str) -> tuple[dict[int, tuple[int, ...]], str | None] | None: ...

    def get_topic_moves(self, topic: str) -> Moves: ...

    def set_reassignment(
        self,
        topic: str,
        topic_id: str,
        assignment: dict[int, list[int]],
        moves: Moves,
        epoch_zk_version: int,
    ) -> None: ...


class PartitionReassignment:
    """The controller's reassignments: started, completed, cancelled, resumed (KIP-455)."""

    def __init__(
        self,
        zk: TopicAssignments,
        context: ControllerContext,
        partitions: PartitionStateMachine,
        batch: Callable[[], ControllerBrokerRequestBatch],
    ) -> None:
        self.zk = zk
        self.context = context
        self.partitions = partitions
        self.batch = batch  # the requests of the event being handled

    # ------------------------------------------------------------------ loading
    def load_moves(self, topic: str) -> None:
        """Reassignments recorded in the topic's znode (a new controller resumes them). One
        this controller started is known already, with ORS in its order: kept as it is."""
        for partition, (adding, removing) in self.zk.get_topic_moves(topic).items():
            replicas = self.context.assignments.get(topic, {}).get(partition)
            if replicas is not None:
                move = Reassignment.from_znode(replicas, adding, removing)
                self.context.reassignments.setdefault(TopicPartition(topic, partition), move)

    def resume(self) -> None:
        """Kafka `initializePartitionReassignments`: restart each pending move's phase 1
        (a new leader epoch tells every replica of RS), then finish those that can."""
        for tp, move in sorted(self.context.reassignments.items()):
            if tp in self.context.states:
                self._grow(tp, move)
                self.maybe_complete(tp)

    # ------------------------------------------------------------------ writing
    def _write_assignment(self, topic: str) -> None:
        """The topic's znode: each partition's replicas (RS while moving) and the moves."""
        found = self.zk.get_topic(topic)
        if found is None:
            return
        _, topic_id = found
        moves = {
            p: (move.adding, move.removing)
            for (t, p), move in self.context.reassignments.items()
            if t == topic
        }
        assignment = {p: list(r) for p, r in self.context.assignments[topic].items()}
        self.zk.set_reassignment(
            topic, topic_id or "", assignment, moves, self.context.epoch_zk_version
        )

    # ------------------------------------------------------------------ AlterPartitionReassignments
    def alter(
        self, items: list[ReassignItem], allow_rf_change: bool
    ) -> dict[TopicPartition, ReassignResult]:
        """Each partition's new target (or None: cancel), and the outcome of each."""
        return {
            TopicPartition(topic, partition): self._reassign(
                TopicPartition(topic, partition), target, allow_rf_change
            )
            for topic, partition, target in items
        }

    def _reassign(
        self, tp: TopicPartition, target: tuple[int, ...] | None, allow_rf_change: bool
    ) -> ReassignResult:
        context = self.context
        if tp not in context.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}."
        pending = context.reassignments.get(tp)
        if target is None:  # cancel (CTRL-26)
            if pending is None:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress."
            self._finish(tp, pending, pending.original)
            return ErrorCode.NO_ERROR, None
        problem = validate_target(target, context.live)
        if problem is not None:
            return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, problem
        original = pending.original if pending else context.current(tp).replicas
        if not allow_rf_change and (problem := replication_factor_change(original, target)):
            return ErrorCode.INVALID_REPLICATION_FACTOR, problem
        if pending is None and target == original:
            return ErrorCode.NO_ERROR, None  # already there: nothing to move
        if pending is not None:  # a new target replaces the pending one (Kafka does so too)
            self._stop_replicas(tp, [r for r in pending.adding if r not in target])
        move = Reassignment(original, target)
        logger.info(
            "controller %d: reassigning %s-%d from %s to %s",
            context.broker_id,
            tp[0],
            tp[1],
            list(original),
            list(target),
        )
        self._grow(tp, move)
        self.maybe_complete(tp)
        return ErrorCode.NO_ERROR, None

    def _grow(self, tp: TopicPartition, move: Reassignment) -> None:
        """Phase 1 (CTRL-24): RS = TRS + ORS in ZooKeeper, then a new leader epoch with RS
        as replicas, sent to every replica of RS so that the new ones start fetching."""
        context = self.context
        context.reassignments[tp] = move
        context.assignments[tp[0]][tp[1]] = move.replicas
        self._write_assignment(tp[0])
        state = context.current(tp)
        self.partitions.write(
            tp,
            dataclasses.replace(
                state,
                leader_epoch=state.leader_epoch + 1,
                replicas=move.replicas,
                controller_epoch=context.epoch,
            ),
        )

    def maybe_complete(self, tp: TopicPartition) -> None:
        """Phase 2 (CTRL-25) once every target replica is in the ISR; called after each
        ISR change of a moving partition."""
        move = self.context.reassignments.get(tp)
        if move is None or tp not in self.context.states:
            return
        state = self.context.current(tp)
        if all(r in state.isr for r in move.target):
            self._finish(tp, move, move.target)

    def _finish(self, tp: TopicPartition, move: Reassignment, final: tuple[int, ...]) -> None:
        """The replicas become `final` (TRS, or ORS on a cancel): a leader from it, the ISR
        without the others, the others stopped and deleted, the znode without the move."""
        context = self.context
        state = context.current(tp)
        leader = reassignment_leader(state, final, context.live)
        isr = tuple(r for r in state.isr if r in final)
        new = dataclasses.replace(
            state,
            leader=NO_LEADER if leader is None else leader,
            leader_epoch=state.leader_epoch + 1,
            replicas=final,
            isr=isr,
            controller_epoch=context.epoch,
        )
        if not self.partitions.write(tp, new):
            return
        del context.reassignments[tp]
        context.assignments[tp[0]][tp[1]] = final
        self._write_assignment(tp[0])
        self._stop_replicas(tp, [r for r in move.replicas if r not in final])
        logger.info(
            "controller %d: %s-%d now on %s, leader %d, leader epoch %d",
            context.broker_id,
            tp[0],
            tp[1],
            list(final),
            new.leader,
            new.leader_epoch,
        )

    def _stop_replicas(self, tp: TopicPartition, brokers: list[int]) -> None:
        epoch = self.context.current(tp).leader_epoch
        for broker in brokers:
            if broker in self.context.live:
                self.batch().add_stop_replica(broker, tp[0], tp[1], epoch)

    # ------------------------------------------------------------------ ListPartitionReassignments
    def listing(self) -> dict[TopicPartition, tuple[tuple[int, ...], ...]]:
        """Every move in progress: (replicas, adding, removing)."""
        return {
            tp: (m.replicas, m.adding, m.removing) for tp, m in self.context.reassignments.items()
        }

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

This module is a part of the controller (a mixin of `KafkaController`): its methods run on
the controller's event thread like the rest. Elections are decided in election.py.

Rules: CTRL-24, CTRL-25, CTRL-26, CTRL-33.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from typing import NamedTuple

from kazoo.exceptions import BadVersionError, NoNodeError

from kafka_ref.cluster.election import NO_LEADER, reassignment_leader
from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode

logger = logging.getLogger("kafka_ref.cluster.reassignment")

ReassignItem = tuple[str, int, tuple[int, ...] | None]  # topic, partition, target or None
ReassignResult = tuple[ErrorCode, str | None]
# The replies get None when this broker is no longer the controller (NOT_CONTROLLER).
ReassignReply = Callable[[dict[TopicPartition, ReassignResult] | None], None]
ListReply = Callable[[dict[TopicPartition, tuple[tuple[int, ...], ...]] | None], None]


class Reassignment(NamedTuple):
    """One partition's move (Kafka: `ReplicaAssignment` with adding and removing)."""

    original: tuple[int, ...]  # ORS
    target: tuple[int, ...]  # TRS

    @property
    def replicas(self) -> tuple[int, ...]:
        """RS while it moves: the targets first, so the preferred replica is TRS's first."""
        return tuple(dict.fromkeys(self.target + self.original))

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(r for r in self.target if r not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(r for r in self.original if r not in self.target)

    @classmethod
    def from_znode(
        cls, replicas: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]
    ) -> Reassignment:
        original = tuple(r for r in replicas if r not in adding)
        target = tuple(r for r in replicas if r not in removing)
        return cls(original, target)


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


class PartitionReassignment:
    """The controller's reassignment events, mixed into `KafkaController`: they use its
    `zk`, `states`, `assignments`, `reassignments`, `live`, `batch` and `_announce`."""

    # ------------------------------------------------------------------ loading
    def _load_moves(self, topic: str) -> None:
        """Reassignments recorded in the topic's znode (a new controller resumes them). One
        this controller started is known already, with ORS in its order: kept as it is."""
        for partition, (adding, removing) in self.zk.get_topic_moves(topic).items():
            replicas = self.assignments.get(topic, {}).get(partition)
            if replicas is not None:
                move = Reassignment.from_znode(replicas, adding, removing)
                self.reassignments.setdefault(TopicPartition(topic, partition), move)

    def _resume_reassignments(self) -> None:
        """Kafka `initializePartitionReassignments`: restart each pending move's phase 1
        (a new leader epoch tells every replica of RS), then finish those that can."""
        for tp, move in sorted(self.reassignments.items()):
            if tp in self.states:
                self._grow(tp, move)
                self._maybe_complete_reassignment(tp)

    # ------------------------------------------------------------------ writing
    def _write_state(self, tp: TopicPartition, new: PartitionState) -> bool:
        """Write a partition's new state under the controller epoch and announce it."""
        _, version = self.states[tp]
        try:
            version = self.zk.update_partition_state(new, version, self.epoch_zk_version)
        except (BadVersionError, NoNodeError):  # deleted, or changed by another writer
            return False
        self.states[tp] = (new, version)
        self._announce(tp)
        return True

    def _write_assignment(self, topic: str) -> None:
        """The topic's znode: each partition's replicas (RS while moving) and the moves."""
        found = self.zk.get_topic(topic)
        if found is None:
            return
        _, topic_id = found
        moves = {
            p: (move.adding, move.removing)
            for (t, p), move in self.reassignments.items()
            if t == topic
        }
        assignment = {p: list(r) for p, r in self.assignments[topic].items()}
        self.zk.set_reassignment(topic, topic_id or "", assignment, moves, self.epoch_zk_version)

    # ------------------------------------------------------------------ AlterPartitionReassignments
    def alter_reassignments(
        self, items: list[ReassignItem], reply: ReassignReply, allow_rf_change: bool = True
    ) -> None:
        self._put("alter_reassignments", items, reply, allow_rf_change)

    def _handle_alter_reassignments(
        self, items: list[ReassignItem], reply: ReassignReply, allow_rf_change: bool
    ) -> None:
        if not self.active:
            reply(None)
            return
        results = {}
        for topic, partition, target in items:
            tp = TopicPartition(topic, partition)
            results[tp] = self._reassign(tp, target, allow_rf_change)
        reply(results)

    def _reassign(
        self, tp: TopicPartition, target: tuple[int, ...] | None, allow_rf_change: bool
    ) -> ReassignResult:
        if tp not in self.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}."
        pending = self.reassignments.get(tp)
        if target is None:  # cancel (CTRL-26)
            if pending is None:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress."
            self._finish(tp, pending, pending.original)
            return ErrorCode.NO_ERROR, None
        problem = validate_target(target, self.live)
        if problem is not None:
            return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, problem
        original = pending.original if pending else self._current(tp).replicas
        if not allow_rf_change and (problem := replication_factor_change(original, target)):
            return ErrorCode.INVALID_REPLICATION_FACTOR, problem
        if pending is None and target == original:
            return ErrorCode.NO_ERROR, None  # already there: nothing to move
        if pending is not None:  # a new target replaces the pending one (Kafka does so too)
            self._stop_replicas(tp, [r for r in pending.adding if r not in target])
        move = Reassignment(original, target)
        logger.info(
            "controller %d: reassigning %s-%d from %s to %s",
            self.broker_id,
            tp[0],
            tp[1],
            list(original),
            list(target),
        )
        self._grow(tp, move)
        self._maybe_complete_reassignment(tp)
        return ErrorCode.NO_ERROR, None

    def _grow(self, tp: TopicPartition, move: Reassignment) -> None:
        """Phase 1 (CTRL-24): RS = TRS + ORS in ZooKeeper, then a new leader epoch with RS
        as replicas, sent to every replica of RS so that the new ones start fetching."""
        self.reassignments[tp] = move
        self.assignments[tp[0]][tp[1]] = move.replicas
        self._write_assignment(tp[0])
        state = self._current(tp)
        self._write_state(
            tp,
            dataclasses.replace(
                state,
                leader_epoch=state.leader_epoch + 1,
                replicas=move.replicas,
                controller_epoch=self.epoch,
            ),
        )

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        """Phase 2 (CTRL-25) once every target replica is in the ISR; called after each
        ISR change of a moving partition."""
        move = self.reassignments.get(tp)
        if move is None or tp not in self.states:
            return
        state = self._current(tp)
        if all(r in state.isr for r in move.target):
            self._finish(tp, move, move.target)

    def _finish(self, tp: TopicPartition, move: Reassignment, final: tuple[int, ...]) -> None:
        """The replicas become `final` (TRS, or ORS on a cancel): a leader from it, the ISR
        without the others, the others stopped and deleted, the znode without the move."""
        state = self._current(tp)
        leader = reassignment_leader(state, final, self.live)
        isr = tuple(r for r in state.isr if r in final)
        new = dataclasses.replace(
            state,
            leader=NO_LEADER if leader is None else leader,
            leader_epoch=state.leader_epoch + 1,
            replicas=final,
            isr=isr,
            controller_epoch=self.epoch,
        )
        if not self._write_state(tp, new):
            return
        del self.reassignments[tp]
        self.assignments[tp[0]][tp[1]] = final
        self._write_assignment(tp[0])
        self._stop_replicas(tp, [r for r in move.replicas if r not in final])
        logger.info(
            "controller %d: %s-%d now on %s, leader %d, leader epoch %d",
            self.broker_id,
            tp[0],
            tp[1],
            list(final),
            new.leader,
            new.leader_epoch,
        )

    def _stop_replicas(self, tp: TopicPartition, brokers: list[int]) -> None:
        epoch = self._current(tp).leader_epoch
        for broker in brokers:
            if broker in self.live:
                self.batch.add_stop_replica(broker, tp[0], tp[1], epoch)

    # ------------------------------------------------------------------ ListPartitionReassignments
    def list_reassignments(self, reply: ListReply) -> None:
        self._put("list_reassignments", reply)

    def _handle_list_reassignments(self, reply: ListReply) -> None:
        reply(
            {tp: (m.replicas, m.adding, m.removing) for tp, m in self.reassignments.items()}
            if self.active
            else None
        )

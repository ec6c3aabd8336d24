"""Leader balance: preferred and unclean elections on request, and the automatic rebalance.

When a broker bounces, its partitions' leadership moves to other ISR members (CTRL-6) and
does not come back by itself: the returning broker rejoins the ISRs as a follower, and the
cluster's load piles up on the brokers that stayed. Each partition's *preferred replica*
is the first of its assignment, and the assignment spreads those over the brokers
(CTRL-8); a *preferred leader election* moves leadership back to it, if it is alive and
in the ISR (Kafka: `PreferredReplicaPartitionLeaderElectionStrategy`).

* **ElectLeaders** (KIP-460) asks the controller for one now: PREFERRED for the given
  partitions (or all), or UNCLEAN for leaderless partitions, which picks any live replica
  even outside the ISR, accepting the loss of acknowledged writes (CTRL-27).
* **The automatic rebalance** (`auto.leader.rebalance.enable`, default true): every
  `leader.imbalance.check.interval.seconds` the controller computes, per broker, the
  partitions it is preferred for and the share of them that another broker leads; above
  `leader.imbalance.per.broker.percentage` it runs preferred elections for them (Kafka:
  `KafkaController.checkAndTriggerAutoLeaderRebalance`, CTRL-28). Partitions being
  reassigned are left alone.

Each election writes the new state with leader epoch + 1 and announces it, as any
controller decision (CTRL-7, CTRL-21). `LeaderBalance` is a part of the controller, run on
its event thread, and constructed with what it uses: the controller's context, the partition
state machine that writes and announces (partition_states.py), and the rebalance's
settings. The controller's timer puts the periodic check on its event queue.

Rules: CTRL-27, CTRL-28.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

from kafka_ref.cluster.controller_context import ControllerContext
from kafka_ref.cluster.election import elect_leader, preferred_leader
from kafka_ref.cluster.partition_states import PartitionStateMachine
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode

logger = logging.getLogger("kafka_ref.cluster.leader_balance")

ElectResult = tuple[ErrorCode, str | None]
ElectReply = Callable[[dict[TopicPartition, ElectResult] | None], None]  # None: NOT_CONTROLLER


class ElectionType(IntEnum):
    """Kafka's `ElectionType` (KIP-460)."""

    PREFERRED = 0
    UNCLEAN = 1


class LeaderBalanceConfig(NamedTuple):
    """`auto.leader.rebalance.enable` and its two knobs (Kafka's defaults)."""

    enable: bool = True
    check_interval_s: float = 300.0
    per_broker_percentage: int = 10


def imbalanced_partitions(
    preferred_of: dict[TopicPartition, int],
    leader_of: dict[TopicPartition, int],
    percentage: int,
) -> list[TopicPartition]:
    """Kafka's imbalance check: per broker, the partitions it is preferred for but does not
    lead, returned for every broker whose share of those is above `percentage` (CTRL-28)."""
    chosen: list[TopicPartition] = []
    for broker in sorted(set(preferred_of.values())):
        mine = [tp for tp, b in preferred_of.items() if b == broker]
        not_led = [tp for tp in mine if leader_of.get(tp) != broker]
        if len(not_led) / len(mine) > percentage / 100:
            chosen.extend(sorted(not_led))
    return chosen


class LeaderBalance:
    """The controller's elections on request and its periodic rebalance."""

    def __init__(
        self,
        context: ControllerContext,
        partitions: PartitionStateMachine,
        config: LeaderBalanceConfig,
    ) -> None:
        self.context = context
        self.partitions = partitions
        self.config = config

    # ------------------------------------------------------------------ ElectLeaders (CTRL-27)
    def elect_leaders(
        self, election: ElectionType, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ElectResult]:
        """The given partitions' (None: every partition's) election, and each outcome."""
        wanted = sorted(self.context.states) if partitions is None else partitions
        return {tp: self._elect(tp, election) for tp in wanted}

    def _elect(self, tp: TopicPartition, election: ElectionType) -> ElectResult:
        context = self.context
        if tp not in context.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}."
        state = context.current(tp)
        if election == ElectionType.PREFERRED:
            if state.replicas and state.leader == state.replicas[0]:
                return ErrorCode.ELECTION_NOT_NEEDED, "The preferred replica leads already."
            leader = preferred_leader(state, context.live)
            if leader is None:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, (
                    f"Preferred replica {state.replicas[0]} is not alive and in the ISR."
                )
            isr = state.isr
        else:
            if state.leader in context.live:
                return ErrorCode.ELECTION_NOT_NEEDED, "The partition has a leader."
            chosen = elect_leader(
                state.replicas, state.isr, context.live, unclean_leader_election=True
            )
            if chosen.leader is None:
                return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No replica is alive."
            leader, isr = chosen.leader, chosen.isr
        new = dataclasses.replace(
            state,
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=context.epoch,
        )
        if not self.partitions.write(tp, new):
            return ErrorCode.NOT_CONTROLLER, "The partition state changed; retry."
        logger.info(
            "controller %d: %s election of %s-%d: leader %d -> %d, leader epoch %d",
            context.broker_id,
            election.name.lower(),
            tp[0],
            tp[1],
            state.leader,
            leader,
            new.leader_epoch,
        )
        return ErrorCode.NO_ERROR, None

    # ------------------------------------------------------------------ auto rebalance (CTRL-28)
    def rebalance(self) -> None:
        """Preferred elections for the brokers whose share of partitions led by another is
        above `leader.imbalance.per.broker.percentage`; moving partitions are left alone."""
        context = self.context
        candidates = {
            tp: s.replicas[0]
            for tp, (s, _) in context.states.items()
            if s.replicas and tp not in context.reassignments
        }
        leaders = {tp: context.states[tp][0].leader for tp in candidates}
        for tp in imbalanced_partitions(candidates, leaders, self.config.per_broker_percentage):
            if preferred_leader(context.current(tp), context.live) is not None:
                self._elect(tp, ElectionType.PREFERRED)

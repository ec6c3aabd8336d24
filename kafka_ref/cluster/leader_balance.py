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
controller decision (CTRL-7, CTRL-21). This module is a mixin of `KafkaController`; its
handlers run on the controller's event thread.

Rules: CTRL-27, CTRL-28.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

from kafka_ref.cluster.election import elect_leader, preferred_leader
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
    """The controller's elections on request and its periodic rebalance, mixed into
    `KafkaController` (its `states`, `live`, `leader_balance`, and `_write_state` from
    reassignment.py)."""

    def _start_auto_rebalance(self) -> None:
        if not self.leader_balance.enable:
            return
        self._rebalance_stop = threading.Event()

        def tick() -> None:
            while not self._rebalance_stop.wait(self.leader_balance.check_interval_s):
                self._put("auto_rebalance")

        threading.Thread(target=tick, name="auto-leader-rebalance", daemon=True).start()

    def _stop_auto_rebalance(self) -> None:
        if self.leader_balance.enable:
            self._rebalance_stop.set()

    # ------------------------------------------------------------------ ElectLeaders (CTRL-27)
    def elect_leaders(
        self, election: ElectionType, partitions: list[TopicPartition] | None, reply: ElectReply
    ) -> None:
        self._put("elect_leaders", election, partitions, reply)

    def _handle_elect_leaders(
        self,
        election: ElectionType,
        partitions: list[TopicPartition] | None,
        reply: ElectReply,
    ) -> None:
        if not self.active:
            reply(None)
            return
        wanted = sorted(self.states) if partitions is None else partitions
        reply({tp: self._elect(tp, election) for tp in wanted})

    def _elect(self, tp: TopicPartition, election: ElectionType) -> ElectResult:
        if tp not in self.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}."
        state = self._current(tp)
        if election == ElectionType.PREFERRED:
            if state.replicas and state.leader == state.replicas[0]:
                return ErrorCode.ELECTION_NOT_NEEDED, "The preferred replica leads already."
            leader = preferred_leader(state, self.live)
            if leader is None:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, (
                    f"Preferred replica {state.replicas[0]} is not alive and in the ISR."
                )
            isr = state.isr
        else:
            if state.leader in self.live:
                return ErrorCode.ELECTION_NOT_NEEDED, "The partition has a leader."
            chosen = elect_leader(
                state.replicas, state.isr, self.live, unclean_leader_election=True
            )
            if chosen.leader is None:
                return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No replica is alive."
            leader, isr = chosen.leader, chosen.isr
        new = dataclasses.replace(
            state,
            leader=leader,
            leader_epoch=state.leader_epoch + 1,
            isr=isr,
            controller_epoch=self.epoch,
        )
        if not self._write_state(tp, new):
            return ErrorCode.NOT_CONTROLLER, "The partition state changed; retry."
        logger.info(
            "controller %d: %s election of %s-%d: leader %d -> %d, leader epoch %d",
            self.broker_id,
            election.name.lower(),
            tp[0],
            tp[1],
            state.leader,
            leader,
            new.leader_epoch,
        )
        return ErrorCode.NO_ERROR, None

    # ------------------------------------------------------------------ auto rebalance (CTRL-28)
    def _handle_auto_rebalance(self) -> None:
        if not self.active:
            return
        candidates = {
            tp: s.replicas[0]
            for tp, (s, _) in self.states.items()
            if s.replicas and tp not in self.reassignments
        }
        leaders = {tp: self.states[tp][0].leader for tp in candidates}
        for tp in imbalanced_partitions(
            candidates, leaders, self.leader_balance.per_broker_percentage
        ):
            if preferred_leader(self._current(tp), self.live) is not None:
                self._elect(tp, ElectionType.PREFERRED)

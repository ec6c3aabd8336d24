"""The sticky assignors (Kafka `AbstractStickyAssignor`, `StickyAssignor`,
`CooperativeStickyAssignor`; protocol names "sticky" and "cooperative-sticky"; KIP-54, KIP-429).

Range and round-robin forget the past: when one member joins, almost every partition can
change hands, and each move costs the new owner a fresh fetch position and cold caches. The
sticky assignor has two goals, in this order:

1. balance: every member gets as many partitions as the others, give or take one (exact when
   all members subscribe to the same topics; as close as it can otherwise);
2. stickiness: keep as many partitions as possible where they already are.

Each member reports what it owns in its Subscription (`owned_partitions`, with the
`generation_id` it owned them in). Kafka's StickyAssignor can also carry this in `user_data`;
this implementation reads `owned_partitions` only. If two members claim one partition, the
claim from the higher generation wins; two claims from the same generation cancel out.

The algorithm here is a simple greedy, correct and minimal for identical subscriptions:

- quotas: with N partitions and M members, each member ends with q = N // M or q + 1, and
  exactly r = N % M members get q + 1;
- keep: each member keeps up to q of its owned partitions, and up to r members that own more
  keep one extra;
- fill: every other partition goes to the least-loaded member subscribed to its topic;
- balance (for different subscriptions): while some partition can move from a member to an
  eligible member with at least two fewer partitions, move it, preferring partitions its
  owner did not own before.

The cooperative variant (KIP-429) computes the same target, then withholds every partition
that would move from one live owner to another: in this round the owner only revokes it; the
owner rejoins at once, and the next round assigns it, now unowned, to its new member. So no
partition is ever owned by two members at once, and members keep consuming everything that
does not move.

Spec rules: ASSIGN-2, ASSIGN-3, ASSIGN-6, ASSIGN-7, ASSIGN-8.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.client.assignors.base import (
    Assignment,
    Cluster,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
    subscribed_partitions,
)
from kafka_ref.common import TopicPartition


def previous_owners(
    cluster: Cluster, subscriptions: Mapping[str, Subscription]
) -> dict[TopicPartition, str]:
    """Who owns each partition now, as far as the assignor may trust the claims.

    A claim counts only if the partition exists and the member still subscribes to its topic.
    Between claims on one partition the highest generation wins; a tie at the top discards
    the partition (Kafka logs an error and treats it as unowned).
    """
    best: dict[TopicPartition, tuple[int, str | None]] = {}
    for member_id in sorted(subscriptions):
        sub = subscriptions[member_id]
        for tp in sub.owned_partitions:
            tp = TopicPartition(*tp)
            if tp.topic not in sub.topics or not 0 <= tp.partition < cluster.get(tp.topic, 0):
                continue
            if tp not in best or sub.generation_id > best[tp][0]:
                best[tp] = (sub.generation_id, member_id)
            elif sub.generation_id == best[tp][0] and best[tp][1] != member_id:
                best[tp] = (sub.generation_id, None)
    return {tp: owner for tp, (_, owner) in best.items() if owner is not None}


def sticky_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Balanced assignment that keeps as many owned partitions in place as balance allows."""
    members = sorted(subscriptions)
    if not members:
        return {}
    partitions = subscribed_partitions(cluster, subscriptions)
    topics_of = {m: set(subscriptions[m].topics) for m in members}
    eligible = {
        t: [m for m in members if t in topics_of[m]] for t in {tp.topic for tp in partitions}
    }
    owners = previous_owners(cluster, subscriptions)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp, member_id in sorted(owners.items()):
        owned[member_id].append(tp)

    # Quotas: exact when all subscriptions are equal; otherwise an upper bound per member of
    # the partitions it could possibly get, and the balance step below evens things out.
    identical = len({frozenset(t) for t in topics_of.values()}) == 1
    quota, extra = divmod(len(partitions), len(members))
    assignment: Assignment = {m: [] for m in members}
    # Keep: up to quota each; the members that own the most get the r extra slots first.
    for member_id in sorted(members, key=lambda m: (-len(owned[m]), m)):
        keep = len(owned[member_id]) if not identical else quota
        if identical and extra > 0 and len(owned[member_id]) > quota:
            keep, extra = quota + 1, extra - 1
        assignment[member_id] = owned[member_id][:keep]
    taken = {tp for tps in assignment.values() for tp in tps}

    # Fill: the rest to the least-loaded eligible member (ties by member id).
    for tp in partitions:
        if tp not in taken:
            target = min(eligible[tp.topic], key=lambda m: (len(assignment[m]), m))
            assignment[target].append(tp)

    _balance(assignment, eligible, owners)
    return {m: sorted(tps) for m, tps in assignment.items()}


def _balance(
    assignment: Assignment,
    eligible: Mapping[str, list[str]],
    owners: Mapping[TopicPartition, str],
) -> None:
    """Move partitions from heavier to at-least-two-lighter eligible members until none can.

    Each move lowers the sum of squared loads, so this ends. With identical subscriptions the
    keep/fill steps are already balanced and nothing moves.
    """
    while True:
        for source in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
            # Prefer moving partitions the source did not own before this rebalance.
            movable = sorted(assignment[source], key=lambda tp: (owners.get(tp) == source, tp))
            move = None
            for tp in movable:
                lighter = [
                    m
                    for m in eligible[tp.topic]
                    if len(assignment[m]) <= len(assignment[source]) - 2
                ]
                if lighter:
                    move = tp, min(lighter, key=lambda m: (len(assignment[m]), m))
                    break
            if move is not None:
                tp, target = move
                assignment[source].remove(tp)
                assignment[target].append(tp)
                break
        else:
            return


def cooperative_sticky_assign(
    cluster: Cluster, subscriptions: Mapping[str, Subscription]
) -> Assignment:
    """The sticky target minus every partition that moves between two live owners this round.

    Kafka `CooperativeStickyAssignor.adjustAssignment`: a partition owned by member A and
    targeted at member B is left out of B's assignment; A, not finding it in its own, revokes
    it and rejoins, and the follow-up rebalance hands it to B.
    """
    target = sticky_assign(cluster, subscriptions)
    owners = previous_owners(cluster, subscriptions)
    return {
        member_id: [tp for tp in tps if owners.get(tp, member_id) == member_id]
        for member_id, tps in target.items()
    }


class StickyAssignor(ConsumerPartitionAssignor):
    """Kafka `StickyAssignor` (eager): balanced, and moves as few partitions as it can."""

    name = "sticky"

    def assign(self, cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
        return sticky_assign(cluster, subscriptions)


class CooperativeStickyAssignor(ConsumerPartitionAssignor):
    """Kafka `CooperativeStickyAssignor`: sticky, for incremental (KIP-429) rebalances."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(self, cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
        return cooperative_sticky_assign(cluster, subscriptions)

"""The round-robin assignor (Kafka `RoundRobinAssignor`, protocol name "roundrobin").

It lays out every subscribed topic-partition in order (by topic, then partition) and deals
them to the members in order (`member_order`) like cards, cycling. A member not subscribed to
a partition's topic is skipped, and the deal goes on from the next member. Example: t0 and t1
with 3 partitions each, members C0 and C1:

    C0: t0-0 t0-2 t1-1
    C1: t0-1 t1-0 t1-2

When every member subscribes to the same topics, the counts differ by at most one over all
topics (better than range). With different subscriptions it can be unbalanced: the skipping
pushes partitions of a topic few members want onto those few.

`roundrobin_assign` is a seam (kafka_ref/seams.py): lab 05 (labs/05-groups) replaces it with a
student's code; the assignor class calls it through this module, so the consumer group's leader
and the tests all run whichever implementation is in place.

Spec rules: ASSIGN-2, ASSIGN-3, ASSIGN-5.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.client.assignors.base import (
    Assignment,
    Cluster,
    ConsumerPartitionAssignor,
    Subscription,
    empty_assignment,
    member_order,
    subscribed_partitions,
)
from kafka_ref.seams import seam


@seam
def roundrobin_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Deal all sorted topic-partitions to the sorted members in turn, skipping non-subscribers."""
    assignment = empty_assignment(subscriptions)
    members = member_order(subscriptions)
    turn = 0  # index of the member whose turn it is; keeps cycling across topics
    for tp in subscribed_partitions(cluster, subscriptions):
        # Some member subscribes to tp.topic (subscribed_partitions saw to that): this ends.
        while tp.topic not in subscriptions[members[turn]].topics:
            turn = (turn + 1) % len(members)
        assignment[members[turn]].append(tp)
        turn = (turn + 1) % len(members)
    return assignment


class RoundRobinAssignor(ConsumerPartitionAssignor):
    """Kafka `RoundRobinAssignor`: deal partitions like cards, skipping non-subscribers."""

    name = "roundrobin"

    def assign(self, cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
        return roundrobin_assign(cluster, subscriptions)

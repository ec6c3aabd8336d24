"""The range assignor (Kafka `RangeAssignor`, protocol name "range"; Kafka's default until 3.x).

It works topic by topic. For one topic with n partitions and m subscribed members, it lays
out the partitions in order and the members in order (`member_order`: static members first),
gives each member a contiguous range of n // m partitions, and gives the first n % m members
one extra. Example: t0 and t1 with 3 partitions each, members C0 and C1:

    C0: t0-0 t0-1 t1-0 t1-1
    C1: t0-2 t1-2

Per topic the sizes differ by at most one, but over several topics the extras all land on
the first members, so C0 can end up with many more partitions than C1. Its strength: members
subscribed to co-partitioned topics get the same partition numbers of each (handy for joins).

`range_assign` is a seam (kafka_ref/seams.py): lab 05 (labs/05-groups) replaces it with a
student's code; the assignor class calls it through this module, so the consumer group's leader
and the tests all run whichever implementation is in place.

Spec rules: ASSIGN-2, ASSIGN-3, ASSIGN-4.
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
)
from kafka_ref.common import TopicPartition
from kafka_ref.seams import seam


@seam
def range_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Split each topic's partitions into contiguous ranges over its subscribed members."""
    assignment = empty_assignment(subscriptions)
    ordered = member_order(subscriptions)
    topics = sorted({t for sub in subscriptions.values() for t in sub.topics})
    for topic in topics:
        if topic not in cluster:
            continue
        members = [m for m in ordered if topic in subscriptions[m].topics]
        n, m = cluster[topic], len(members)
        per_member, extra = divmod(n, m)
        for i, member_id in enumerate(members):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            assignment[member_id].extend(
                TopicPartition(topic, p) for p in range(start, start + length)
            )
    return {member_id: sorted(tps) for member_id, tps in assignment.items()}


class RangeAssignor(ConsumerPartitionAssignor):
    """Kafka `RangeAssignor`: per topic, contiguous ranges, the first n % m get one extra."""

    name = "range"

    def assign(self, cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
        return range_assign(cluster, subscriptions)

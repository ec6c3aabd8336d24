"""Partition assignors: who in a consumer group reads which partition.

A consumer group shares the partitions of its topics among its members so that each
partition is read by exactly one member. The broker (the group coordinator) does not decide
who gets what. Kafka puts that decision on the client side: in JoinGroup every member sends
the names of the assignors it supports and a *subscription* (its topics, what it owns now,
assignor-specific user data); the coordinator picks an assignor name all members support and
elects one member leader; the leader runs that assignor over every member's subscription and
sends the result in SyncGroup; the coordinator hands each member its share. Because the
logic lives in the client, a new strategy needs no broker change, and every member must
compute the same answer from the same inputs: an assignor is a pure function.

Kafka's interface is `ConsumerPartitionAssignor`; the ones here:

| name (JoinGroup protocol) | Kafka class | idea |
|---|---|---|
| "range" | `RangeAssignor` | per topic, contiguous ranges |
| "roundrobin" | `RoundRobinAssignor` | deal all partitions like cards |
| "sticky" | `StickyAssignor` | balanced, and move as little as possible |
| "cooperative-sticky" | `CooperativeStickyAssignor` | sticky, for incremental rebalances |

Eager versus cooperative rebalancing. In the *eager* protocol (the original one) every member
revokes all its partitions before it rejoins: it commits, stops consuming, and waits for the
new assignment. The whole group stops for the whole rebalance, even if in the end only one
partition moves. In the *cooperative* protocol (KIP-429, "incremental cooperative
rebalancing") members keep their partitions and keep consuming them while they rejoin,
reporting them as `owned_partitions`. The leader's assignment never gives a member a partition
another member still owns; an owner that finds a partition missing from its new assignment
revokes just that one and rejoins at once, and a second, quick rebalance assigns the freed
partitions. Only the partitions that move stop, and only for a moment. Cooperative needs an
assignor that knows what is owned, hence "cooperative-sticky".

Plugging in your own assignor:

    from kafka_ref.client.assignors import ConsumerPartitionAssignor, register

    class EverythingToTheFirst(ConsumerPartitionAssignor):
        name = "first"  # the protocol name consumers send in JoinGroup

        def assign(self, cluster, subscriptions):
            # cluster: {topic: partition count}; subscriptions: {member_id: Subscription}
            ...  # return {member_id: [TopicPartition, ...]} for every member

    register(EverythingToTheFirst())

then configure a consumer with `partition.assignment.strategy` set to "first", and check it
with the properties in tests/unit/group/test_assignors.py (ASSIGN-2 and ASSIGN-3 hold for
every correct assignor).

The bytes these travel in (JoinGroup metadata, SyncGroup assignment) are in
`consumer_protocol.py`.

Spec: spec/group_assignors.md, rules ASSIGN-1 to ASSIGN-10.
"""

from __future__ import annotations

from kafka_ref.client.assignors.base import (
    Assignment,
    Cluster,
    ConsumerPartitionAssignor,
    RebalanceProtocol,
    Subscription,
)
from kafka_ref.client.assignors.range import RangeAssignor, range_assign
from kafka_ref.client.assignors.roundrobin import RoundRobinAssignor, roundrobin_assign
from kafka_ref.client.assignors.sticky import (
    CooperativeStickyAssignor,
    StickyAssignor,
    cooperative_sticky_assign,
    sticky_assign,
)
from kafka_ref.common import TopicPartition

__all__ = [
    "ASSIGNORS",
    "Assignment",
    "Cluster",
    "ConsumerPartitionAssignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "cooperative_sticky_assign",
    "get",
    "range_assign",
    "register",
    "roundrobin_assign",
    "sticky_assign",
]

ASSIGNORS: dict[str, ConsumerPartitionAssignor] = {}
"""The registry: protocol name -> assignor. The built-in ones are registered at import."""


def register(assignor: ConsumerPartitionAssignor, *, replace: bool = False) -> None:
    """Make `assignor` available under `assignor.name` (ASSIGN-1).

    Raises ValueError for an empty name, or a name already taken unless `replace` is set.
    """
    if not assignor.name:
        raise ValueError("an assignor needs a non-empty name")
    if assignor.name in ASSIGNORS and not replace:
        raise ValueError(f"an assignor named {assignor.name!r} is already registered")
    ASSIGNORS[assignor.name] = assignor


def get(name: str) -> ConsumerPartitionAssignor:
    """The assignor registered under `name`; KeyError names the known ones if there is none."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise KeyError(f"no assignor named {name!r}; known: {sorted(ASSIGNORS)}") from None


for _assignor in (
    RangeAssignor(),
    RoundRobinAssignor(),
    StickyAssignor(),
    CooperativeStickyAssignor(),
):
    register(_assignor)

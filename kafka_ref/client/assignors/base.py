"""The assignor interface: what a partition assignor receives and what it returns.

Kafka's name is `ConsumerPartitionAssignor` (org.apache.kafka.clients.consumer). The group
leader, a client, calls `assign` with the cluster's partition counts and every member's
`Subscription` (decoded from the member's JoinGroup metadata) and sends the result back in
SyncGroup. An assignor is a pure function of its inputs: the same inputs give the same
assignment on every client, which matters because any member may become leader.

Spec rules: ASSIGN-1, ASSIGN-2 (spec/group_assignors.md).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import ClassVar

from kafka_ref.common import TopicPartition
from kafka_ref.protocol.consumer_protocol import Subscription


class RebalanceProtocol(enum.IntEnum):
    """KIP-429: how members give partitions up during a rebalance.

    EAGER: every member revokes everything before rejoining. COOPERATIVE: members keep what
    they own and revoke only what the new assignment takes from them.
    """

    EAGER = 0
    COOPERATIVE = 1


Cluster = Mapping[str, int]
"""Topic name -> partition count: the only cluster metadata the assignors here need."""

Assignment = dict[str, list[TopicPartition]]
"""Member id -> its partitions, sorted."""


class ConsumerPartitionAssignor:
    """Base class of every assignor. Subclass it, set `name`, implement `assign`.

    `name` is the protocol name a consumer sends in JoinGroup (`partition.assignment.strategy`
    picks it); the coordinator chooses a name every member supports, and the leader runs that
    assignor. `supported_protocols` lists the rebalance protocols the assignor can drive.
    """

    name: ClassVar[str] = ""
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def assign(self, cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
        raise NotImplementedError


def member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Members as Kafka's `MemberInfo.compareTo` orders them.

    Static members (with a group.instance.id) first, by instance id; then dynamic members by
    member id. This keeps a restarted static member in the same place, so it gets the same
    partitions back.
    """

    def key(member_id: str) -> tuple[int, str, str]:
        instance = subscriptions[member_id].group_instance_id
        if instance is not None:
            return (0, instance, member_id)
        return (1, member_id, "")

    return sorted(subscriptions, key=key)


def subscribed_partitions(
    cluster: Cluster, subscriptions: Mapping[str, Subscription]
) -> list[TopicPartition]:
    """Every partition of every topic some member subscribes to and the cluster knows, sorted.

    A subscribed topic missing from `cluster` is skipped, as Kafka does (it logs and moves on).
    """
    topics = {t for sub in subscriptions.values() for t in sub.topics if t in cluster}
    return [TopicPartition(t, p) for t in sorted(topics) for p in range(cluster[t])]


def empty_assignment(subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Every member present, each with no partitions yet."""
    return {member_id: [] for member_id in subscriptions}

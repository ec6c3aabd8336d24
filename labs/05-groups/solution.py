"""Lab 05, consumer groups: your range and round-robin assignors, and two rebalance steps.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 05

Every function here takes the place of kafka-ref's own, of the same name, whenever
KAFKA_REF_SOLUTION names this file (the grader sets it for you): `range_assign` in
kafka_ref/client/assignors/range.py and `roundrobin_assign` in roundrobin.py, which our
consumer's group leader runs when the coordinator picks "range" or "roundrobin"; and
`select_protocol` and `elect_joined_leader` in kafka_ref/group/group_metadata.py, which the
broker's group coordinator runs every time a join round completes. The types below, and
`member_order`, are yours to use. From kafka_ref you may import anything but the modules
that hold these functions (beyond the names this file imports from them): `kafka-ref lab
check` refuses a solution that reaches kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_ref.client.assignors.base import (  # noqa: F401 - yours to use
    Assignment,
    Cluster,
    Subscription,
    TopicPartition,
    member_order,
)


def range_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Kafka's `RangeAssignor` (protocol "range", ASSIGN-1..ASSIGN-4).

    `cluster`: topic -> partition count. `subscriptions`: member id -> its `Subscription`
    (`.topics`, the topics it subscribes to; `.group_instance_id`, set for a static member).
    Return member id -> its sorted list of `TopicPartition(topic, partition)`, with *every*
    member of `subscriptions` present (an empty list if it gets nothing).

    Order the members as Kafka does (`member_order(subscriptions)`): static members first by
    group.instance.id, then dynamic members by member id. Then, for each topic some member
    subscribes to and the cluster knows (a topic missing from `cluster` is skipped): with n
    partitions and the m members subscribed to it, in that order, member i gets the
    contiguous range of n // m partitions, plus one more if i < n % m, the ranges laid out
    from partition 0 in member order. Only members subscribed to a topic get its partitions.

    Kafka's RangeAssignorTest: t0 and t1 with 3 partitions each, members C0 and C1 both
    subscribed to both: C0 gets t0-0, t0-1, t1-0, t1-1; C1 gets t0-2, t1-2.
    """
    raise NotImplementedError


def roundrobin_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    """Kafka's `RoundRobinAssignor` (protocol "roundrobin", ASSIGN-1..ASSIGN-3, ASSIGN-5).

    Same inputs and output as `range_assign`. Lay out every partition of every topic some
    member subscribes to and the cluster knows, sorted by topic then partition, and deal
    them like cards to the members in `member_order`, cycling: each partition goes to the
    member whose turn it is; a member not subscribed to the partition's topic is skipped
    (the turn passes to the next member, until one subscribed is found), and after a member
    takes a partition the turn passes to the member after it. The turn carries on across
    topics; it does not restart at the first member for each topic.

    Kafka's RoundRobinAssignorTest: t0 and t1 with 3 partitions each, members C0 and C1 both
    subscribed to both: C0 gets t0-0, t0-2, t1-1; C1 gets t0-1, t1-0, t1-2.
    """
    raise NotImplementedError


def select_protocol(preferences: Sequence[Sequence[str]]) -> str:
    """The protocol (for consumers: the assignor) of the new generation (REBAL-9).

    `preferences`: one list per member, in the members' join order, of the protocols it
    supports, most preferred first. The candidates are the protocols *every* member
    supports (there is at least one). Each member votes for the first protocol of its own
    list that is a candidate. Return the candidate with the most votes; of candidates with
    equally many votes, the one whose first vote came earliest.

    Example: [["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"]]
    -> "roundrobin" (two votes against one).
    """
    raise NotImplementedError


def elect_joined_leader(leader_id: str, joined: Sequence[str]) -> str | None:
    """The leader of the new generation (REBAL-9).

    `leader_id`: the previous generation's leader. `joined`: the members that joined this
    rebalance, in join order. The leader stays if it joined; otherwise the first member
    that joined leads; None if no member joined.
    """
    raise NotImplementedError

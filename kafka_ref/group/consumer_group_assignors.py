"""The server-side assignors of the consumer group protocol: `uniform` and `range`.

In the classic protocol the group's leader, a client, computes the assignment
(kafka_ref/client/assignors). Under KIP-848 the coordinator does, whenever the group epoch
moves past the target assignment's epoch (CGRP-4): it hands the assignor every member's
subscribed topics, the partitions of those topics and the current target, and stores what
comes back as the new target assignment. The broker config `group.consumer.assignors` names
the assignors it offers, the first being the default; a member may ask for another with its
heartbeat's `ServerAssignor` (UNSUPPORTED_ASSIGNOR for a name the broker does not offer).

* **uniform** (Kafka `UniformAssignor`, the default): every member gets as many partitions
  as the others, give or take one, and keeps as many of its current ones as that allows
  (sticky), so a rebalance moves as few partitions as it can. With subscriptions that
  differ, each partition left over goes to the least loaded member subscribed to its topic:
  balanced as far as a greedy choice gets, which Kafka's heterogeneous variant refines.
* **range** (Kafka `RangeAssignor`): per topic, the members subscribed to it in member-id
  order each get a contiguous range of partitions, the first `partitions % members` one more:
  members that subscribe to the same topics get the same partition numbers of each, which
  co-partitioned topics need. Kafka 4's range assignor also keeps partitions sticky where it
  can; this one recomputes the ranges.

Both are deterministic: the same input gives the same assignment (members and topics are
walked in sorted order).

Rules: CGRP-8, CGRP-9.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafka_ref.group.consumer_group import Assignment, assignment

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True)
class AssignmentSpec:
    """What an assignor sees (Kafka `GroupSpec` and `SubscribedTopicDescriber`)."""

    subscriptions: Mapping[str, frozenset[uuid.UUID]]  # member id -> subscribed topic ids
    partitions: Mapping[uuid.UUID, int]  # topic id -> number of partitions
    current: Mapping[str, Assignment]  # member id -> its current target assignment


Assignor = Callable[[AssignmentSpec], dict[str, Assignment]]


def uniform_assign(spec: AssignmentSpec) -> dict[str, Assignment]:
    """Balanced and sticky (CGRP-8)."""
    members = sorted(spec.subscriptions)
    if not members:
        return {}
    every = sorted(
        (t, p)
        for t in {t for topics in spec.subscriptions.values() for t in topics}
        if t in spec.partitions
        for p in range(spec.partitions[t])
    )
    floor, extra = divmod(len(every), len(members))
    chosen: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
    taken: set[tuple[uuid.UUID, int]] = set()
    # 1. stickiness: a member keeps up to `floor` of its current partitions it still reads,
    #    and the members that kept the most may keep one more while extra slots remain
    keepable = {
        m: sorted(
            (t, p)
            for t, parts in spec.current.get(m, {}).items()
            if t in spec.subscriptions[m] and t in spec.partitions
            for p in parts
            if p < spec.partitions[t]
        )
        for m in members
    }
    for m in members:
        chosen[m] = keepable[m][:floor]
    for m in sorted(members, key=lambda m: (-len(keepable[m]), m)):
        if extra and len(keepable[m]) > floor:
            chosen[m].append(keepable[m][floor])
            extra -= 1
    for parts in chosen.values():
        taken.update(parts)
    # 2. the rest, each to the least loaded member subscribed to its topic
    for tp in every:
        if tp in taken:
            continue
        eligible = [m for m in members if tp[0] in spec.subscriptions[m]]
        if eligible:
            least = min(eligible, key=lambda m: (len(chosen[m]), m))
            chosen[least].append(tp)
            taken.add(tp)
    return {m: assignment((t, [p]) for t, p in parts) for m, parts in chosen.items()}


def range_assign(spec: AssignmentSpec) -> dict[str, Assignment]:
    """Per topic, contiguous ranges in member-id order (CGRP-9)."""
    chosen: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in spec.subscriptions}
    topics = sorted({t for topics in spec.subscriptions.values() for t in topics})
    for topic_id in topics:
        if topic_id not in spec.partitions:
            continue
        subscribers = sorted(m for m, ts in spec.subscriptions.items() if topic_id in ts)
        size, extra = divmod(spec.partitions[topic_id], len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            count = size + (1 if i < extra else 0)
            chosen[member].extend((topic_id, p) for p in range(start, start + count))
            start += count
    return {m: assignment((t, [p]) for t, p in parts) for m, parts in chosen.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform_assign, RANGE: range_assign}

"""The share group's assignor: `simple` (KIP-932).

A consumer group's assignors give each partition to one member (consumer_group_assignors.py).
A share group's may give a partition to several: the share-partition hands each record to
one reader at a time, so more members than partitions is no waste, each partition being
read by several. Kafka 4.4's one share assignor, `simple` (Kafka `SimpleAssignor`), aims at:

1. **Coverage**: every partition of a subscribed topic is assigned while some member
   subscribes to it (SHARE-44).
2. **Sharing**: with members M and partitions P of a topic, each partition has
   `ceil(M / P)` readers among the topic's subscribers (one while M <= P), so no
   partition is crowded while another is short (Kafka's `desiredSharing`).
3. **Balance**: when every member subscribes to the same topics, the members' assignment
   sizes differ by at most one (SHARE-44). Balance comes before stickiness.
4. **Stickiness**: a member keeps what it had where the first three allow, so fewer
   share-partitions change readers (fewer acquired records to release).

kafka-ref's assignor is one greedy pass per topic and a final levelling step, rather than
Kafka's two builders (`SimpleHomogeneousAssignmentBuilder` for identical subscriptions and
`SimpleHeterogeneousAssignmentBuilder` for the rest):

* keep: each member keeps its current partitions of the topics it still subscribes to, as
  long as the partition has fewer readers than its sharing and the member fewer partitions
  than its quota (the ceiling of its fair share);
* fill: each reader slot left goes to the least loaded subscriber not reading that
  partition yet (ties by member id);
* level: while a member has two more partitions than another member that could read one
  of them, one moves; the number of readers per partition does not change.

It is deterministic: the same input gives the same assignment.

Rules: SHARE-44.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_ref.group.consumer_group import Assignment, assignment

SIMPLE = "simple"  # Kafka `SimpleAssignor.NAME`: `group.share.assignors`' only value

Slot = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class ShareAssignmentSpec:
    """What the assignor sees (Kafka `GroupSpec` and `SubscribedTopicDescriber`)."""

    subscriptions: Mapping[str, frozenset[uuid.UUID]]  # member id -> subscribed topic ids
    partitions: Mapping[uuid.UUID, frozenset[int]]  # topic id -> its assignable partitions
    current: Mapping[str, Assignment]  # member id -> its current target assignment


def desired_sharing(members: int, partitions: int) -> int:
    """How many members read each partition: ceil(M / P), 0 without partitions."""
    return -(-members // partitions) if partitions else 0


def simple_assign(spec: ShareAssignmentSpec) -> dict[str, Assignment]:
    """The target assignment of every member (SHARE-44)."""
    members = sorted(spec.subscriptions)
    chosen: dict[str, set[Slot]] = {m: set() for m in members}
    topics = sorted(
        t for t in {t for ts in spec.subscriptions.values() for t in ts} if spec.partitions.get(t)
    )
    sharing = {}
    for topic_id in topics:
        readers = [m for m in members if topic_id in spec.subscriptions[m]]
        sharing[topic_id] = desired_sharing(len(readers), len(spec.partitions[topic_id]))
    quota = {m: _quota(m, spec, sharing) for m in members}
    for topic_id in topics:
        _assign_topic(topic_id, spec, sharing[topic_id], quota, chosen)
    _level(spec, chosen)
    return {m: assignment((t, [p]) for t, p in slots) for m, slots in chosen.items()}


def _quota(member: str, spec: ShareAssignmentSpec, sharing: Mapping[uuid.UUID, int]) -> int:
    """The member's fair share, rounded up: of each topic it reads, the reader slots
    (partitions x sharing) divided among the topic's subscribers."""
    share = 0.0
    for topic_id in spec.subscriptions[member]:
        if topic_id in sharing:
            readers = sum(1 for ts in spec.subscriptions.values() if topic_id in ts)
            share += len(spec.partitions[topic_id]) * sharing[topic_id] / readers
    return math.ceil(share - 1e-9)


def _assign_topic(
    topic_id: uuid.UUID,
    spec: ShareAssignmentSpec,
    sharing: int,
    quota: Mapping[str, int],
    chosen: dict[str, set[Slot]],
) -> None:
    readers = sorted(m for m in chosen if topic_id in spec.subscriptions[m])
    partitions = sorted(spec.partitions[topic_id])
    holders: dict[int, list[str]] = {p: [] for p in partitions}
    # keep: current partitions, within the partition's sharing and the member's quota
    for member in readers:
        for p in sorted(spec.current.get(member, {}).get(topic_id, ())):
            if p in holders and len(holders[p]) < sharing and len(chosen[member]) < quota[member]:
                holders[p].append(member)
                chosen[member].add((topic_id, p))
    # fill: each slot left to the least loaded subscriber not reading the partition yet
    for p in partitions:
        while len(holders[p]) < sharing:
            free = [m for m in readers if m not in holders[p]]
            least = min(free, key=lambda m: (len(chosen[m]), m))
            holders[p].append(least)
            chosen[least].add((topic_id, p))


def _level(spec: ShareAssignmentSpec, chosen: dict[str, set[Slot]]) -> None:
    """Move partitions from the most to the least loaded members while they differ by two
    or more and the least loaded can take one it does not read yet (balance before
    stickiness). Every move lowers the sum of squared loads, so this ends."""
    while True:
        move = _next_move(spec, chosen)
        if move is None:
            return
        source, target, slot = move
        chosen[source].remove(slot)
        chosen[target].add(slot)


def _next_move(spec: ShareAssignmentSpec, chosen: dict[str, set[Slot]]):
    by_load = sorted(chosen, key=lambda m: (len(chosen[m]), m))
    for target in by_load:
        for source in reversed(by_load):
            if len(chosen[source]) - len(chosen[target]) < 2:
                break
            movable = sorted(
                slot
                for slot in chosen[source] - chosen[target]
                if slot[0] in spec.subscriptions[target]
            )
            if movable:
                return source, target, movable[-1]
    return None

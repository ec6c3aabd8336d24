"""Breaks a tie by the protocols' names (alphabetical) instead of by the earliest vote
(REBAL-9).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_ref.client.assignors.base import (
    Assignment,
    Cluster,
    Subscription,
    TopicPartition,
    member_order,
)


def range_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    members = member_order(subscriptions)
    assignment: Assignment = {m: [] for m in members}
    topics = sorted({t for s in subscriptions.values() for t in s.topics if t in cluster})
    for topic in topics:
        takers = [m for m in members if topic in subscriptions[m].topics]
        size, extra = divmod(cluster[topic], len(takers))
        first = 0
        for i, member in enumerate(takers):
            count = size + (1 if i < extra else 0)
            assignment[member] += [TopicPartition(topic, p) for p in range(first, first + count)]
            first += count
    return {m: sorted(tps) for m, tps in assignment.items()}


def roundrobin_assign(cluster: Cluster, subscriptions: Mapping[str, Subscription]) -> Assignment:
    members = member_order(subscriptions)
    assignment: Assignment = {m: [] for m in members}
    topics = sorted({t for s in subscriptions.values() for t in s.topics if t in cluster})
    turn = 0  # the index of the member whose turn it is, across all topics
    for topic in topics:
        for partition in range(cluster[topic]):
            while topic not in subscriptions[members[turn]].topics:
                turn = (turn + 1) % len(members)
            assignment[members[turn]].append(TopicPartition(topic, partition))
            turn = (turn + 1) % len(members)
    return assignment


def select_protocol(preferences: Sequence[Sequence[str]]) -> str:
    candidates = set(preferences[0]).intersection(*preferences[1:])
    votes: dict[str, int] = {}  # in the order of the first vote for each
    for protocols in preferences:
        choice = next(p for p in protocols if p in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    most = max(votes.values())
    return min(p for p, n in votes.items() if n == most)


def elect_joined_leader(leader_id: str, joined: Sequence[str]) -> str | None:
    if leader_id in joined:
        return leader_id
    return joined[0] if joined else None

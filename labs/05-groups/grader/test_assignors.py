"""Lab 05 grader, the assignors as functions: range (ASSIGN-4), round-robin (ASSIGN-5), and
what every assignor must do (ASSIGN-1..ASSIGN-3).

Your functions are called through kafka-ref's modules (kafka_ref/client/assignors/range.py and
roundrobin.py), where the seams put them. The oracles are not kafka-ref's code: the rules'
properties, kafka-python's assignors (which follow Kafka's), and examples worked out in
Kafka's RangeAssignorTest and RoundRobinAssignorTest.
"""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from kafka_ref.client.assignors import range as range_module
from kafka_ref.client.assignors import roundrobin as roundrobin_module
from kafka_ref.client.assignors.base import Subscription, TopicPartition

TOPICS = ["t0", "t1", "t2", "t3"]


def assign(name, cluster, subscriptions):
    """The assignor `name` as the seam has it now (yours under the grader)."""
    if name == "range":
        return range_module.range_assign(cluster, subscriptions)
    return roundrobin_module.roundrobin_assign(cluster, subscriptions)


@st.composite
def groups(draw, identical=False):
    """(cluster, subscriptions): up to 4 topics of 0-9 partitions, 1-6 members, some of
    them static; a subscription may name a topic the cluster does not know ("zz")."""
    cluster = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), min_size=1))
    members = draw(
        st.lists(st.text("abcxyz0123", min_size=1, max_size=4), min_size=1, max_size=6, unique=True)
    )
    topic_sets = st.lists(st.sampled_from([*TOPICS, "zz"]), min_size=1, unique=True)
    shared = draw(topic_sets)
    subscriptions = {}
    for m in members:
        topics = shared if identical else draw(topic_sets)
        static = draw(st.none() | st.just("i-" + m[::-1]))
        subscriptions[m] = Subscription(tuple(topics), group_instance_id=static)
    return cluster, subscriptions


def subscribed(cluster, subscriptions):
    topics = {t for s in subscriptions.values() for t in s.topics if t in cluster}
    return {TopicPartition(t, p) for t in topics for p in range(cluster[t])}


def kafka_order(subscriptions):
    """Kafka's MemberInfo order: static members by instance id, then the rest by member id."""
    static = sorted(
        (s.group_instance_id, m)
        for m, s in subscriptions.items()
        if s.group_instance_id is not None
    )
    dynamic = sorted(m for m, s in subscriptions.items() if s.group_instance_id is None)
    return [m for _, m in static] + dynamic


def normalised(assignment):
    return {m: sorted(TopicPartition(*tp) for tp in tps) for m, tps in assignment.items()}


ASSIGNOR_NAMES = ["range", "roundrobin"]


# ------------------------------------------------------------------ every assignor
@pytest.mark.spec("ASSIGN-2")
@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
@given(group=groups())
def test_every_subscribed_partition_is_assigned_exactly_once(name, group):
    cluster, subscriptions = group
    given_out = [tp for tps in assign(name, cluster, subscriptions).values() for tp in tps]
    twice = [tp for tp, n in Counter(given_out).items() if n > 1]
    assert not twice, f"given to more than one member: {twice}"
    assert set(given_out) == subscribed(cluster, subscriptions)


@pytest.mark.spec("ASSIGN-3")
@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
@given(group=groups())
def test_a_partition_goes_only_to_a_member_subscribed_to_its_topic(name, group):
    cluster, subscriptions = group
    for member, tps in assign(name, cluster, subscriptions).items():
        assert all(tp[0] in subscriptions[member].topics for tp in tps), (member, tps)


@pytest.mark.spec("ASSIGN-1")
@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
@given(group=groups(), seed=st.integers(0, 2**16))
def test_the_assignment_depends_only_on_the_inputs_not_their_order(name, group, seed):
    """Any member may be leader: members arriving in another order, topics listed in
    another order, must give the same assignment, with every member present."""
    cluster, subscriptions = group
    first = assign(name, cluster, subscriptions)
    assert set(first) == set(subscriptions), "every member appears in the assignment"
    rng = random.Random(seed)
    members = list(subscriptions.items())
    rng.shuffle(members)
    shuffled = {
        m: Subscription(
            tuple(rng.sample(list(s.topics), len(s.topics))), group_instance_id=s.group_instance_id
        )
        for m, s in members
    }
    topics = list(cluster.items())
    rng.shuffle(topics)
    assert normalised(assign(name, dict(topics), shuffled)) == normalised(first)


# ------------------------------------------------------------------ range
def kafka_python(assignor, cluster, subscriptions):
    """kafka-python's assignor on our inputs, its answer in our form."""
    metadata = SimpleNamespace(
        partitions_for_topic=lambda t: set(range(cluster[t])) if t in cluster else None
    )
    members = [
        SimpleNamespace(
            member_id=m,
            group_instance_id=s.group_instance_id,
            metadata=SimpleNamespace(topics=list(s.topics)),
        )
        for m, s in subscriptions.items()
    ]
    members.sort(key=lambda member: member.group_instance_id is None)  # it groups adjacently
    result = assignor.assign(metadata, members)
    return {
        m: sorted(TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps)
        for m, a in result.items()
    }


@pytest.mark.spec("ASSIGN-4")
@given(group=groups())
def test_range_gives_each_member_a_contiguous_range_the_first_get_one_extra(group):
    cluster, subscriptions = group
    got = normalised(range_module.range_assign(cluster, subscriptions))
    for topic, n in cluster.items():
        members = [m for m in kafka_order(subscriptions) if topic in subscriptions[m].topics]
        start = 0
        for i, member in enumerate(members):
            size = n // len(members) + (1 if i < n % len(members) else 0)
            mine = [tp.partition for tp in got[member] if tp.topic == topic]
            assert mine == list(range(start, start + size)), (topic, member, mine)
            start += size


@pytest.mark.spec("ASSIGN-4")
@given(group=groups())
def test_range_agrees_with_kafka_python(group):
    cluster, subscriptions = group
    got = normalised(range_module.range_assign(cluster, subscriptions))
    assert got == kafka_python(RangePartitionAssignor, cluster, subscriptions)


def tps(*names):
    """tps("t1-0", "t2-1") -> [TopicPartition("t1", 0), TopicPartition("t2", 1)]."""
    return [TopicPartition(n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])) for n in names]


# ------------------------------------------------------------------ round-robin
@pytest.mark.spec("ASSIGN-5")
@given(group=groups(identical=True))
def test_roundrobin_deals_in_turn_and_is_balanced_for_identical_subscriptions(group):
    cluster, subscriptions = group
    got = normalised(roundrobin_module.roundrobin_assign(cluster, subscriptions))
    order = kafka_order(subscriptions)
    for i, tp in enumerate(sorted(subscribed(cluster, subscriptions))):
        assert tp in got[order[i % len(order)]], f"{tp} is member {i % len(order)}'s card"
    counts = [len(v) for v in got.values()]
    assert max(counts) - min(counts) <= 1, counts


@pytest.mark.spec("ASSIGN-5")
@given(group=groups(identical=True))
def test_roundrobin_agrees_with_kafka_python(group):
    # Identical subscriptions only: kafka-python's round-robin fails when it must skip.
    cluster, subscriptions = group
    got = normalised(roundrobin_module.roundrobin_assign(cluster, subscriptions))
    assert got == kafka_python(RoundRobinPartitionAssignor, cluster, subscriptions)


def dealt(cluster, subscriptions):
    """ASSIGN-5 as the handout states it: the sorted cards dealt in Kafka's member order,
    the turn skipping members not subscribed, and passing to the member after the taker."""
    order = kafka_order(subscriptions)
    hands, turn = {m: [] for m in order}, 0
    for tp in sorted(subscribed(cluster, subscriptions)):
        while tp.topic not in subscriptions[order[turn % len(order)]].topics:
            turn += 1
        hands[order[turn % len(order)]].append(tp)
        turn += 1
    return hands


@pytest.mark.spec("ASSIGN-5")
@given(group=groups())
def test_roundrobin_skips_members_not_subscribed_and_the_turn_carries_on(group):
    cluster, subscriptions = group
    got = normalised(roundrobin_module.roundrobin_assign(cluster, subscriptions))
    assert got == dealt(cluster, subscriptions)


# ------------------------------------------------------------------ cases worked out by hand
def group_of(*members: str) -> dict[str, Subscription]:
    """group_of("c1: t1 t2", "z=a: t1"): members in this (arrival) order, with their topics;
    "z=a" is member z with group.instance.id a (a static member)."""
    subscriptions = {}
    for member in members:
        name, topics = member.split(":")
        member_id, _, instance = name.partition("=")
        subscriptions[member_id] = Subscription(
            tuple(topics.split()), group_instance_id=instance or None
        )
    return subscriptions


def described_group(cluster, subscriptions) -> str:
    topics = ", ".join(f"{t} {n}" for t, n in cluster.items()) or "none"
    members = []
    for member_id, s in subscriptions.items():
        static = f"={s.group_instance_id}" if s.group_instance_id is not None else ""
        members.append(f"{member_id}{static}: {' '.join(s.topics) or '-'}")
    return f"partitions {topics}; members {'; '.join(members)}"


def described_assignment(assignment) -> str:
    if not isinstance(assignment, dict):
        return repr(assignment)
    return "; ".join(
        f"{m}: {' '.join(f'{t}-{p}' for t, p in tps) or '-'}" for m, tps in assignment.items()
    )


class AssignCase(NamedTuple):
    why: str
    cluster: dict[str, int]
    subscriptions: dict[str, Subscription]
    expected: dict[str, str]  # member -> "t1-0 t1-1"


def check_assignment(name: str, case: AssignCase) -> None:
    inputs = described_group(case.cluster, case.subscriptions)
    try:
        got = normalised(assign(name, case.cluster, case.subscriptions))
    except Exception as e:  # the student's code raised: say on what, below
        error = f"{type(e).__name__}: {e}"
    else:
        expected = {m: tps(*t.split()) for m, t in case.expected.items()}
        assert got == expected, (
            f"{inputs}: {case.why}; expected {described_assignment(expected)}, "
            f"got {described_assignment(got)}"
        )
        return
    pytest.fail(f"{inputs}: raised {error}")


RANGE_CASES = {  # ASSIGN-4; Kafka's RangeAssignorTest first (consumer1 = c1, topic1 = t1)
    "kafka-two-members-two-partitions": AssignCase(
        "one partition each", {"t1": 2}, group_of("c1: t1", "c2: t1"), {"c1": "t1-0", "c2": "t1-1"}
    ),
    "kafka-mixed-subscriptions": AssignCase(
        "t2 is split among its only subscriber, c2",
        {"t1": 3, "t2": 2},
        group_of("c1: t1", "c2: t1 t2", "c3: t1"),
        {"c1": "t1-0", "c2": "t1-1 t2-0 t2-1", "c3": "t1-2"},
    ),
    "kafka-two-topics-the-extras-to-the-first": AssignCase(
        "the extra partition of each topic goes to the first member",
        {"t1": 3, "t2": 3},
        group_of("c1: t1 t2", "c2: t1 t2"),
        {"c1": "t1-0 t1-1 t2-0 t2-1", "c2": "t1-2 t2-2"},
    ),
    "remainder-to-the-first-members": AssignCase(
        "5 = 2 + 2 + 1, the extras to the first members",
        {"t": 5},
        group_of("c1: t", "c2: t", "c3: t"),
        {"c1": "t-0 t-1", "c2": "t-2 t-3", "c3": "t-4"},
    ),
    "sizes-are-n-over-m-plus-one": AssignCase(
        "4 = 2 + 1 + 1: n // m, one more for the first n % m",
        {"t": 4},
        group_of("c1: t", "c2: t", "c3: t"),
        {"c1": "t-0 t-1", "c2": "t-2", "c3": "t-3"},
    ),
    "fewer-partitions-than-members": AssignCase(
        "2 = 1 + 1 + 0",
        {"t": 2},
        group_of("c1: t", "c2: t", "c3: t"),
        {"c1": "t-0", "c2": "t-1", "c3": ""},
    ),
    "each-topic-among-its-own-subscribers": AssignCase(
        "each topic is split among the members subscribed to it",
        {"t1": 3, "t2": 3},
        group_of("c1: t1", "c2: t1 t2", "c3: t2"),
        {"c1": "t1-0 t1-1", "c2": "t1-2 t2-0 t2-1", "c3": "t2-2"},
    ),
    "extras-of-every-topic-pile-up": AssignCase(
        "per topic, the extras go to the first members, topic after topic",
        {"t1": 3, "t2": 3, "t3": 1},
        group_of("c1: t1 t2 t3", "c2: t1 t2 t3"),
        {"c1": "t1-0 t1-1 t2-0 t2-1 t3-0", "c2": "t1-2 t2-2"},
    ),
    "a-topic-without-partitions": AssignCase(
        "a topic with no partition gives nothing",
        {"t1": 0, "t2": 2},
        group_of("c1: t1 t2", "c2: t1 t2"),
        {"c1": "t2-0", "c2": "t2-1"},
    ),
}
ROUNDROBIN_CASES = {  # ASSIGN-5; Kafka's RoundRobinAssignorTest first
    "kafka-one-member": AssignCase(
        "all to the only member", {"t1": 3}, group_of("c1: t1"), {"c1": "t1-0 t1-1 t1-2"}
    ),
    "kafka-mixed-subscriptions": AssignCase(
        "the deal skips c3 and c1 for t2",
        {"t1": 3, "t2": 2},
        group_of("c1: t1", "c2: t1 t2", "c3: t1"),
        {"c1": "t1-0", "c2": "t1-1 t2-0 t2-1", "c3": "t1-2"},
    ),
    "kafka-two-topics-the-turn-carries-on": AssignCase(
        "t1-0 c1, t1-1 c2, t1-2 c1, then t2-0 to c2: the turn carries on",
        {"t1": 3, "t2": 3},
        group_of("c1: t1 t2", "c2: t1 t2"),
        {"c1": "t1-0 t1-2 t2-1", "c2": "t1-1 t2-0 t2-2"},
    ),
    "the-turn-carries-on-to-the-next-topic": AssignCase(
        "after t1-0 to c1 it is c2's turn: t2-0 to c2, not to c1",
        {"t1": 1, "t2": 3},
        group_of("c1: t1 t2", "c2: t2", "c3: t2"),
        {"c1": "t1-0 t2-2", "c2": "t2-0", "c3": "t2-1"},
    ),
    "after-a-skip-the-turn-passes-the-taker": AssignCase(
        "y-0: a is skipped, b takes it, and the turn passes to c (after b)",
        {"x": 3, "y": 3},
        group_of("a: x", "b: x y", "c: x y"),
        {"a": "x-0", "b": "x-1 y-0 y-2", "c": "x-2 y-1"},
    ),
    "sorted-by-topic-then-partition": AssignCase(
        "dealt in the order t1-0, t1-1, t2-0, whatever the cluster's order",
        {"t2": 1, "t1": 2},
        group_of("c1: t1 t2", "c2: t1 t2"),
        {"c1": "t1-0 t2-0", "c2": "t1-1"},
    ),
    "fewer-partitions-than-members": AssignCase(
        "one card for two members",
        {"t1": 1},
        group_of("c1: t1", "c2: t1"),
        {"c1": "t1-0", "c2": ""},
    ),
}
ORDER_CASES = {  # ASSIGN-1: (range's expected, round-robin's expected)
    "members-by-member-id-not-arrival": (
        "members are ordered by member id, not as they arrive",
        {"t": 3},
        group_of("c3: t", "c1: t", "c2: t"),
        {"c1": "t-0", "c2": "t-1", "c3": "t-2"},
        {"c1": "t-0", "c2": "t-1", "c3": "t-2"},
    ),
    "static-members-first-by-instance-id": (
        "static members first, by instance id (z=a, y=b), then dynamic ones by member id",
        {"t": 6},
        group_of("b: t", "z=a: t", "c: t", "y=b: t"),
        {"z": "t-0 t-1", "y": "t-2 t-3", "b": "t-4", "c": "t-5"},
        {"z": "t-0 t-4", "y": "t-1 t-5", "b": "t-2", "c": "t-3"},
    ),
    "every-member-appears": (
        "every member is in the assignment, even one that gets nothing",
        {"t1": 2},
        group_of("c1: t1", "c2: gone"),
        {"c1": "t1-0 t1-1", "c2": ""},
        {"c1": "t1-0 t1-1", "c2": ""},
    ),
}
SUBSCRIBER_CASES = {  # ASSIGN-3: (range's expected, round-robin's expected)
    "kafka-a-member-subscribed-to-nothing": (
        "a member subscribed to nothing gets nothing",
        {"t1": 3},
        group_of("c1:"),
        {"c1": ""},
        {"c1": ""},
    ),
    "kafka-a-topic-the-cluster-does-not-know": (
        "a topic the cluster does not know is skipped",
        {},
        group_of("c1: t1"),
        {"c1": ""},
        {"c1": ""},
    ),
    "kafka-a-topic-no-member-subscribes-to": (
        "only subscribed topics are assigned",
        {"t1": 3, "t2": 3},
        group_of("c1: t1"),
        {"c1": "t1-0 t1-1 t1-2"},
        {"c1": "t1-0 t1-1 t1-2"},
    ),
    "an-unknown-topic-beside-a-known-one": (
        "the unknown topic is skipped, the known one assigned",
        {"t1": 2},
        group_of("c1: gone t1", "c2: t1"),
        {"c1": "t1-0", "c2": "t1-1"},
        {"c1": "t1-0", "c2": "t1-1"},
    ),
    "only-to-subscribers": (
        "t2 goes only to c2, its one subscriber",
        {"t1": 2, "t2": 2},
        group_of("c1: t1", "c2: t1 t2"),
        {"c1": "t1-0", "c2": "t1-1 t2-0 t2-1"},
        {"c1": "t1-0", "c2": "t1-1 t2-0 t2-1"},
    ),
}


def both(cases: dict, which: int) -> dict[str, AssignCase]:
    """The cases of a table for both assignors, for range (which=0) or round-robin (1)."""
    return {
        k: AssignCase(why, c, s, expected[which]) for k, (why, c, s, *expected) in cases.items()
    }


@pytest.mark.spec("ASSIGN-4")
@pytest.mark.parametrize("case", RANGE_CASES.values(), ids=RANGE_CASES.keys())
def test_range_by_hand(case):
    check_assignment("range", case)


@pytest.mark.spec("ASSIGN-5")
@pytest.mark.parametrize("case", ROUNDROBIN_CASES.values(), ids=ROUNDROBIN_CASES.keys())
def test_roundrobin_by_hand(case):
    check_assignment("roundrobin", case)


@pytest.mark.spec("ASSIGN-1")
@pytest.mark.parametrize(
    "name, case",
    [
        (name, case)
        for which, name in enumerate(ASSIGNOR_NAMES)
        for case in both(ORDER_CASES, which).values()
    ],
    ids=[f"{name}-{key}" for name in ASSIGNOR_NAMES for key in ORDER_CASES],
)
def test_members_in_kafkas_order_every_one_present(name, case):
    check_assignment(name, case)


@pytest.mark.spec("ASSIGN-3")
@pytest.mark.parametrize(
    "name, case",
    [
        (name, case)
        for which, name in enumerate(ASSIGNOR_NAMES)
        for case in both(SUBSCRIBER_CASES, which).values()
    ],
    ids=[f"{name}-{key}" for name in ASSIGNOR_NAMES for key in SUBSCRIBER_CASES],
)
def test_only_subscribers_get_a_topic_and_unknown_topics_are_skipped(name, case):
    check_assignment(name, case)

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
    members = draw(st.lists(st.text("abcxyz0123", min_size=1, max_size=4), min_size=1,
                            max_size=6, unique=True))  # fmt: skip
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
    static = sorted((s.group_instance_id, m) for m, s in subscriptions.items()
                    if s.group_instance_id is not None)  # fmt: skip
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
    return {m: sorted(TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps)
            for m, a in result.items()}  # fmt: skip


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


def subs(**topics):
    return {m: Subscription(tuple(ts.split())) for m, ts in topics.items()}


KAFKA_RANGE_EXAMPLES = [  # Kafka's RangeAssignorTest (consumer1 = c1, topic1 = t1, ...)
    ({"t1": 3}, subs(c1=""), {"c1": []}),  # testOneConsumerNoTopic
    ({}, subs(c1="t1"), {"c1": []}),  # testOneConsumerNonexistentTopic
    ({"t1": 3, "t2": 3}, subs(c1="t1"), {"c1": tps("t1-0", "t1-1", "t1-2")}),
    ({"t1": 1}, subs(c1="t1", c2="t1"), {"c1": tps("t1-0"), "c2": []}),
    ({"t1": 2}, subs(c1="t1", c2="t1"), {"c1": tps("t1-0"), "c2": tps("t1-1")}),
    (  # testMultipleConsumersMixedTopicSubscriptions
        {"t1": 3, "t2": 2}, subs(c1="t1", c2="t1 t2", c3="t1"),
        {"c1": tps("t1-0"), "c2": tps("t1-1", "t2-0", "t2-1"), "c3": tps("t1-2")},
    ),
    (  # testTwoConsumersTwoTopicsSixPartitions
        {"t1": 3, "t2": 3}, subs(c1="t1 t2", c2="t1 t2"),
        {"c1": tps("t1-0", "t1-1", "t2-0", "t2-1"), "c2": tps("t1-2", "t2-2")},
    ),
]  # fmt: skip


@pytest.mark.spec("ASSIGN-4")
def test_range_matches_kafkas_examples():
    for cluster, subscriptions, expected in KAFKA_RANGE_EXAMPLES:
        got = normalised(range_module.range_assign(cluster, subscriptions))
        assert got == expected, f"cluster {cluster}, subscriptions {subscriptions}"


@pytest.mark.spec("ASSIGN-4", "ASSIGN-1")
def test_range_puts_static_members_first():
    """A static member (group.instance.id) comes before every dynamic one, whatever its
    member id: "z" with instance "a" is first, then "b" and "c" by member id."""
    subscriptions = {
        "b": Subscription(("t",)),
        "z": Subscription(("t",), group_instance_id="a"),
        "c": Subscription(("t",)),
    }
    got = normalised(range_module.range_assign({"t": 4}, subscriptions))
    assert got == {"z": tps("t-0", "t-1"), "b": tps("t-2"), "c": tps("t-3")}


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


KAFKA_ROUNDROBIN_EXAMPLES = [  # Kafka's RoundRobinAssignorTest
    ({"t1": 3}, subs(c1="t1"), {"c1": tps("t1-0", "t1-1", "t1-2")}),
    ({"t1": 1}, subs(c1="t1", c2="t1"), {"c1": tps("t1-0"), "c2": []}),
    (  # testMultipleConsumersMixedTopics: the deal skips c1 and c3 for t2
        {"t1": 3, "t2": 2}, subs(c1="t1", c2="t1 t2", c3="t1"),
        {"c1": tps("t1-0"), "c2": tps("t1-1", "t2-0", "t2-1"), "c3": tps("t1-2")},
    ),
    (  # testTwoConsumersTwoTopicsSixPartitions
        {"t1": 3, "t2": 3}, subs(c1="t1 t2", c2="t1 t2"),
        {"c1": tps("t1-0", "t1-2", "t2-1"), "c2": tps("t1-1", "t2-0", "t2-2")},
    ),
    (  # the turn carries on across topics: t2-0 goes to c2, whose turn it is after t1-0
        {"t1": 1, "t2": 3}, subs(c1="t1 t2", c2="t2", c3="t2"),
        {"c1": tps("t1-0", "t2-2"), "c2": tps("t2-0"), "c3": tps("t2-1")},
    ),
]  # fmt: skip


@pytest.mark.spec("ASSIGN-5")
def test_roundrobin_matches_kafkas_examples_with_skipping():
    for cluster, subscriptions, expected in KAFKA_ROUNDROBIN_EXAMPLES:
        got = normalised(roundrobin_module.roundrobin_assign(cluster, subscriptions))
        assert got == expected, f"cluster {cluster}, subscriptions {subscriptions}"

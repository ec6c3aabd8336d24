"""Properties of the partition assignors (spec/group_assignors.md, ASSIGN-1..9)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from kafka_ref.client import assignors
from kafka_ref.client.assignors import (
    ASSIGNORS,
    ConsumerPartitionAssignor,
    Subscription,
    TopicPartition,
    cooperative_sticky_assign,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)
from kafka_ref.client.assignors.sticky import previous_owners

TOPICS = ["a", "b", "c", "d"]
EAGER = [range_assign, roundrobin_assign, sticky_assign]
ALL = [*EAGER, cooperative_sticky_assign]

clusters = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), min_size=1)
member_ids = st.lists(
    st.text("mnopq0123456789-", min_size=1, max_size=6), min_size=1, max_size=6, unique=True
)


@st.composite
def groups(draw, identical=False, owned=False):
    """(cluster, subscriptions); optionally identical topics, optionally random ownership."""
    cluster = draw(clusters)
    members = draw(member_ids)
    # Subscriptions may name a topic the cluster does not know ("zz").
    topic_sets = st.lists(st.sampled_from([*TOPICS, "zz"]), min_size=1, unique=True)
    shared = draw(topic_sets)
    subs = {}
    for m in members:
        topics = shared if identical else draw(topic_sets)
        static = draw(st.one_of(st.none(), st.just("i-" + m)))
        subs[m] = Subscription(tuple(topics), group_instance_id=static)
    if owned:
        subs = with_random_ownership(draw, cluster, subs)
    return cluster, subs


def with_random_ownership(draw, cluster, subs):
    """Each partition owned by one member (or nobody), at random, in one generation."""
    owned = {m: [] for m in subs}
    for t, n in cluster.items():
        for p in range(n):
            owner = draw(st.sampled_from([None, *subs]))
            if owner is not None:
                owned[owner].append(TopicPartition(t, p))
    return {m: Subscription(s.topics, tuple(owned[m]), generation_id=1) for m, s in subs.items()}


def subscribed(cluster, subs):
    topics = {t for s in subs.values() for t in s.topics if t in cluster}
    return {TopicPartition(t, p) for t in topics for p in range(cluster[t])}


def owner_of(assignment):
    return {tp: m for m, tps in assignment.items() for tp in tps}


def counts(assignment):
    return [len(tps) for tps in assignment.values()]


def check_exactly_once(cluster, subs, assignment):
    given_out = Counter(tp for tps in assignment.values() for tp in tps)
    assert all(n == 1 for n in given_out.values()), "a partition was assigned twice"
    assert set(given_out) == subscribed(cluster, subs)


def with_owned(subs, assignment, generation=1):
    return {
        m: Subscription(s.topics, tuple(assignment.get(m, ())), generation_id=generation)
        for m, s in subs.items()
    }


@pytest.mark.spec("ASSIGN-1")
@pytest.mark.parametrize("assign", ALL)
@given(groups(owned=True), st.randoms(use_true_random=False))
def test_deterministic_whatever_the_input_order(assign, group, rnd):
    cluster, subs = group
    members = list(subs)
    rnd.shuffle(members)
    topics = list(cluster)
    rnd.shuffle(topics)
    shuffled = assign({t: cluster[t] for t in topics}, {m: subs[m] for m in members})
    assert shuffled == assign(cluster, subs)
    assert set(shuffled) == set(subs)


@pytest.mark.spec("ASSIGN-2")
@pytest.mark.parametrize("assign", EAGER)
@given(groups(owned=True))
def test_every_subscribed_partition_assigned_exactly_once(assign, group):
    cluster, subs = group
    check_exactly_once(cluster, subs, assign(cluster, subs))


@pytest.mark.spec("ASSIGN-3")
@pytest.mark.parametrize("assign", ALL)
@given(groups(owned=True))
def test_partitions_only_go_to_subscribers(assign, group):
    cluster, subs = group
    for m, tps in assign(cluster, subs).items():
        assert all(tp.topic in subs[m].topics for tp in tps)
        assert all(0 <= tp.partition < cluster[tp.topic] for tp in tps)
        assert tps == sorted(tps)


@pytest.mark.spec("ASSIGN-4")
@given(groups())
def test_range_is_contiguous_and_balanced_per_topic(group):
    cluster, subs = group
    assignment = range_assign(cluster, subs)
    for topic in {t for s in subs.values() for t in s.topics if t in cluster}:
        per_member = {
            m: [tp.partition for tp in tps if tp.topic == topic] for m, tps in assignment.items()
        }
        sizes = [len(ps) for m, ps in per_member.items() if topic in subs[m].topics]
        assert max(sizes) - min(sizes) <= 1
        for ps in per_member.values():
            assert ps == list(range(ps[0], ps[0] + len(ps))) if ps else True


@pytest.mark.spec("ASSIGN-4")
def test_range_example_from_kafka_docs():
    subs = {"C0": Subscription(("t0", "t1")), "C1": Subscription(("t0", "t1"))}
    tp = TopicPartition
    assert range_assign({"t0": 3, "t1": 3}, subs) == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
        "C1": [tp("t0", 2), tp("t1", 2)],
    }


@pytest.mark.spec("ASSIGN-5")
@given(groups(identical=True))
def test_roundrobin_balanced_for_identical_subscriptions(group):
    cluster, subs = group
    sizes = counts(roundrobin_assign(cluster, subs))
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.spec("ASSIGN-5")
def test_roundrobin_example_from_kafka_docs():
    tp = TopicPartition
    subs = {
        "C0": Subscription(("t0",)),
        "C1": Subscription(("t0", "t1")),
        "C2": Subscription(("t0", "t1", "t2")),
    }
    assert roundrobin_assign({"t0": 1, "t1": 2, "t2": 3}, subs) == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0)],
        "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


def kafka_python_assign(assignor, cluster, subs):
    """Run kafka-python's assignor on our inputs and convert its answer to ours."""
    stub = SimpleNamespace(
        partitions_for_topic=lambda t: set(range(cluster[t])) if t in cluster else None
    )
    members = [
        SimpleNamespace(
            member_id=m,
            group_instance_id=s.group_instance_id,
            metadata=SimpleNamespace(topics=list(s.topics)),
        )
        for m, s in subs.items()
    ]
    # kafka-python groups static/dynamic with itertools.groupby, which needs them adjacent.
    members.sort(key=lambda member: member.group_instance_id is None)
    result = assignor.assign(stub, members)
    return {
        m: sorted(TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps)
        for m, a in result.items()
    }


@pytest.mark.spec("ASSIGN-4")
@given(groups())
def test_range_agrees_with_kafka_python(group):
    cluster, subs = group
    assert range_assign(cluster, subs) == kafka_python_assign(RangePartitionAssignor, cluster, subs)


@pytest.mark.spec("ASSIGN-5")
@given(groups(identical=True))
def test_roundrobin_agrees_with_kafka_python(group):
    # Identical subscriptions only: kafka-python's RoundRobinPartitionAssignor crashes
    # (KeyError) when it must skip a member, so the skipping is checked by the example above.
    cluster, subs = group
    theirs = kafka_python_assign(RoundRobinPartitionAssignor, cluster, subs)
    assert roundrobin_assign(cluster, subs) == theirs


@pytest.mark.spec("ASSIGN-6")
@given(groups(identical=True, owned=True))
def test_sticky_balanced_for_identical_subscriptions(group):
    cluster, subs = group
    sizes = counts(sticky_assign(cluster, subs))
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.spec("ASSIGN-6")
@given(groups(owned=True))
def test_sticky_no_partition_could_move_to_a_much_lighter_member(group):
    cluster, subs = group
    assignment = sticky_assign(cluster, subs)
    for tps in assignment.values():
        for tp in tps:
            for other, theirs in assignment.items():
                if tp.topic in subs[other].topics:
                    assert len(theirs) >= len(tps) - 1


def minimum_moves(loads, total, members):
    """The fewest partitions a balanced assignment must take from current owners."""
    quota, extra = divmod(total, members)
    ordered = sorted(loads, reverse=True)
    return sum(max(0, load - quota - (1 if i < extra else 0)) for i, load in enumerate(ordered))


def moved_from_stayers(before, subs, after, partitions):
    """Partitions that a member still in the group owned, and now another member gets."""
    new_owner = owner_of(after)
    return sum(
        1
        for tp, m in owner_of(before).items()
        if m in subs and tp in partitions and new_owner.get(tp) != m
    )


def check_minimal(cluster, subs, before):
    after = sticky_assign(cluster, subs)
    partitions = subscribed(cluster, subs)
    loads = [len([tp for tp in before.get(m, ()) if tp in partitions]) for m in subs]
    moved = moved_from_stayers(before, subs, after, partitions)
    assert moved <= minimum_moves(loads, len(partitions), len(subs))
    sizes = counts(after)
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.spec("ASSIGN-7")
@given(groups(identical=True), st.data())
def test_sticky_member_leaves_minimal_moves(group, data):
    cluster, subs = group
    before = sticky_assign(cluster, subs)
    leaving = data.draw(st.sampled_from(sorted(subs)))
    stay = {m: s for m, s in with_owned(subs, before).items() if m != leaving}
    if stay:
        check_minimal(cluster, stay, before)


@pytest.mark.spec("ASSIGN-7")
@given(groups(identical=True))
def test_sticky_member_joins_minimal_moves(group):
    cluster, subs = group
    before = sticky_assign(cluster, subs)
    joined = with_owned(subs, before)
    joined["~new"] = Subscription(next(iter(subs.values())).topics)
    check_minimal(cluster, joined, before)


@pytest.mark.spec("ASSIGN-7")
@given(groups(identical=True, owned=True))
def test_sticky_minimal_moves_from_any_ownership(group):
    cluster, subs = group
    before = {m: list(s.owned_partitions) for m, s in subs.items()}
    check_minimal(cluster, subs, before)


@pytest.mark.spec("ASSIGN-7")
def test_conflicting_claims_higher_generation_wins_tie_discards():
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    subs = {
        "a": Subscription(("t",), (tp0, tp1), generation_id=3),
        "b": Subscription(("t",), (tp0,), generation_id=4),
        "c": Subscription(("t",), (tp1,), generation_id=3),
        "d": Subscription(
            ("u",), (TopicPartition("t", 2), TopicPartition("t", 9)), generation_id=9
        ),
    }
    assert previous_owners({"t": 3, "u": 1}, subs) == {tp0: "b"}


@pytest.mark.spec("ASSIGN-8", "ASSIGN-2")
@given(groups(owned=True))
def test_cooperative_never_takes_an_owned_partition_and_converges(group):
    cluster, subs = group
    owners = previous_owners(cluster, subs)
    first = cooperative_sticky_assign(cluster, subs)
    target = sticky_assign(cluster, subs)
    for m, tps in first.items():
        assert all(owners.get(tp, m) == m for tp in tps), "given while another owns it"
        # Nothing that stays put is revoked: first round = target minus the moving ones.
        assert tps == [tp for tp in target[m] if owners.get(tp, m) == m]
    # Follow-up rounds: owners have revoked what they lost, and the revoked partitions are
    # handed out. With identical subscriptions one follow-up is enough; with different ones
    # the greedy sticky target can shift once more (ASSIGN-8), so allow a second.
    current = first
    for generation in (2, 3):
        current_subs = with_owned(subs, current, generation=generation)
        owners = previous_owners(cluster, current_subs)
        current = cooperative_sticky_assign(cluster, current_subs)
        for m, tps in current.items():
            assert all(owners.get(tp, m) == m for tp in tps), "given while another owns it"
        if {tp for tps in current.values() for tp in tps} == subscribed(cluster, subs):
            break
    check_exactly_once(cluster, subs, current)


@pytest.mark.spec("ASSIGN-8")
def test_cooperative_converges_in_one_follow_up_with_identical_subscriptions():
    topics = ("t", "u")
    owned = {"a": [TopicPartition("t", p) for p in range(4)] + [TopicPartition("u", 0)]}
    subs = {m: Subscription(topics, tuple(owned.get(m, ())), generation_id=1) for m in "abc"}
    first = cooperative_sticky_assign({"t": 4, "u": 2}, subs)
    second = cooperative_sticky_assign({"t": 4, "u": 2}, with_owned(subs, first, generation=2))
    check_exactly_once({"t": 4, "u": 2}, subs, second)


@pytest.mark.spec("ASSIGN-9")
def test_registry_by_protocol_name_and_pluggable():
    assert {n: type(a).__name__ for n, a in ASSIGNORS.items()} == {
        "range": "RangeAssignor",
        "roundrobin": "RoundRobinAssignor",
        "sticky": "StickyAssignor",
        "cooperative-sticky": "CooperativeStickyAssignor",
    }

    class First(ConsumerPartitionAssignor):
        name = "test-first"

        def assign(self, cluster, subscriptions):
            first = min(subscriptions)
            out = {m: [] for m in subscriptions}
            out[first] = sorted(subscribed(cluster, subscriptions))
            return out

    try:
        assignors.register(First())
        assert assignors.get("test-first").assign({"t": 2}, {"x": Subscription(("t",))}) == {
            "x": [TopicPartition("t", 0), TopicPartition("t", 1)]
        }
        with pytest.raises(ValueError):
            assignors.register(First())
    finally:
        ASSIGNORS.pop("test-first", None)
    with pytest.raises(KeyError, match="range"):
        assignors.get("nope")

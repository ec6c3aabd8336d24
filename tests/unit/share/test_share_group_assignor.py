"""The share group's `simple` assignor (SHARE-44): coverage, sharing, balance, stickiness."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.group.consumer_group import partitions_of
from kafka_ref.share.share_group_assignor import (
    ShareAssignmentSpec,
    desired_sharing,
    simple_assign,
)

TOPICS = [uuid.UUID(int=i) for i in range(1, 4)]


def spec(members, partitions, subscriptions=None, current=None):
    subscriptions = subscriptions or {m: frozenset(partitions) for m in members}
    return ShareAssignmentSpec(
        subscriptions=subscriptions,
        partitions={t: frozenset(range(n)) for t, n in partitions.items()},
        current=current or {},
    )


def readers(result):
    return Counter(tp for a in result.values() for tp in partitions_of(a))


@pytest.mark.spec("SHARE-44")
def test_fewer_members_than_partitions_split_them_and_more_share_them():
    t = TOPICS[0]
    two = simple_assign(spec(["a", "b"], {t: 4}))
    assert sorted(len(partitions_of(a)) for a in two.values()) == [2, 2]
    assert set(readers(two).values()) == {1}  # each partition read by one member
    five = simple_assign(spec(["a", "b", "c", "d", "e"], {t: 2}))
    assert desired_sharing(5, 2) == 3
    assert set(readers(five).values()) == {3}  # ceil(5 / 2) readers each
    assert sorted(len(partitions_of(a)) for a in five.values()) == [1, 1, 1, 1, 2]


@pytest.mark.spec("SHARE-44")
def test_a_member_keeps_its_partitions_when_the_balance_allows():
    t = TOPICS[0]
    first = simple_assign(spec(["a", "b"], {t: 4}))
    again = simple_assign(spec(["a", "b", "c"], {t: 4}, current=first))
    for m in ("a", "b"):  # the newcomer takes from the others, they keep the rest
        kept = partitions_of(again[m]) & partitions_of(first[m])
        assert len(kept) >= len(partitions_of(again[m])) - 1
    assert simple_assign(spec(["a", "b"], {t: 4}, current=first)) == first


@st.composite
def groups(draw, homogeneous: bool):
    members = [f"m{i}" for i in range(draw(st.integers(1, 7)))]
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))
    partitions = {t: draw(st.integers(1, 6)) for t in topics}
    if homogeneous:
        subscriptions = {m: frozenset(topics) for m in members}
    else:
        subscriptions = {
            m: frozenset(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)))
            for m in members
        }
    current = {}
    for m in members:
        held = draw(st.lists(st.sampled_from(topics), max_size=3))
        current[m] = {
            t: frozenset(draw(st.lists(st.integers(0, 7), max_size=3))) for t in set(held)
        }
    return spec(members, partitions, subscriptions, current)


@pytest.mark.spec("SHARE-44")
@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=False))
def test_every_subscribed_partition_is_assigned_to_subscribers_only(s):
    result = simple_assign(s)
    assert set(result) == set(s.subscriptions)
    wanted = {
        (t, p) for ts in s.subscriptions.values() for t in ts for p in s.partitions.get(t, ())
    }
    assert set(readers(result)) == wanted  # coverage: every partition has a reader
    for m, a in result.items():
        assert set(a) <= s.subscriptions[m]
    assert simple_assign(s) == result  # deterministic


@pytest.mark.spec("SHARE-44")
@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_identical_subscriptions_are_balanced_and_evenly_shared(s):
    result = simple_assign(s)
    sizes = [len(partitions_of(a)) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1  # balance
    members = len(s.subscriptions)
    for (t, _), count in readers(result).items():
        assert count == desired_sharing(members, len(s.partitions[t]))

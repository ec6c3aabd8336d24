"""Lab 05 grader, the rebalance's steps: the protocol vote and the leader (REBAL-9).

When a join round completes, the coordinator picks the protocol of the new generation by
the members' vote (`select_protocol`) and keeps or replaces the group's leader
(`elect_joined_leader`). The properties below are Kafka's rules stated independently of any
implementation; the last test runs a real group whose members prefer different assignors.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.client.admin import Admin
from kafka_ref.group.group_metadata import elect_joined_leader, select_protocol

NAMES = ["range", "roundrobin", "sticky", "cooperative-sticky", "mine"]


@st.composite
def member_preferences(draw):
    """Each member's protocols in its order of preference, all sharing at least one."""
    common = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    members = []
    for _ in range(draw(st.integers(1, 6))):
        extra = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
        own = list(dict.fromkeys(common + extra))
        members.append(draw(st.permutations(own)))
    return members


@pytest.mark.spec("REBAL-9")
@given(member_preferences())
def test_the_protocol_is_the_most_voted_common_one_ties_to_the_first_vote(preferences):
    common = set.intersection(*(set(p) for p in preferences))
    votes = [next(name for name in p if name in common) for p in preferences]
    counts = Counter(votes)
    expected = next(v for v in votes if counts[v] == max(counts.values()))
    assert select_protocol(preferences) == expected


@pytest.mark.spec("REBAL-9")
def test_a_vote_by_example():
    preferences = [["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"]]
    assert select_protocol(preferences) == "roundrobin"  # two votes against one
    assert select_protocol([["a", "b"], ["b", "a"]]) == "a"  # a tie: the first vote wins
    assert select_protocol([["mine", "range"], ["range"]]) == "range"  # the only common one


@pytest.mark.spec("REBAL-9")
@given(st.lists(st.sampled_from("abcdef"), unique=True), st.sampled_from("abcdefg"))
def test_the_leader_stays_if_it_joined_else_the_first_joined_leads(joined, leader):
    expected = leader if leader in joined else (joined[0] if joined else None)
    assert elect_joined_leader(leader, joined) == expected


@pytest.mark.spec("REBAL-9")
def test_a_real_group_uses_the_protocol_most_members_prefer(broker, create_topics,
                                                            group_assignment):  # fmt: skip
    create_topics({"lab05-vote": 3})
    preferences = {
        "c0": ["range", "roundrobin"],
        "c1": ["roundrobin", "range"],
        "c2": ["roundrobin", "range"],
    }
    got = group_assignment("lab05-vote", preferences, ["lab05-vote"], list(preferences),
                           expected_partitions=3)  # fmt: skip
    owned = sorted(tp for tps in got.values() for tp in tps)
    assert owned == [("lab05-vote", p) for p in (0, 1, 2)]
    admin = Admin(broker.bootstrap)
    try:
        assert admin.describe_groups(["lab05-vote"])["lab05-vote"].protocol == "roundrobin"
    finally:
        admin.close()

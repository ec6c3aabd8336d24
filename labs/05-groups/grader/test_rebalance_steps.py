"""Lab 05 grader, the rebalance's steps: the protocol vote and the leader (REBAL-9).

When a join round completes, the coordinator picks the protocol of the new generation by
the members' vote (`select_protocol`) and keeps or replaces the group's leader
(`elect_joined_leader`). The properties below are Kafka's rules stated independently of any
implementation; the last test runs a real group whose members prefer different assignors.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

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


class VoteCase(NamedTuple):
    why: str
    preferences: list[list[str]]
    expected: str


RR, RANGE, STICKY = "roundrobin", "range", "sticky"
VOTE_CASES = {
    "most-votes-win": VoteCase(
        "two votes against one", [[RANGE, RR], [RR, RANGE], [RR, RANGE]], RR
    ),
    "one-member": VoteCase("its first choice", [["b", "a"]], "b"),
    "a-tie-goes-to-the-first-vote": VoteCase(
        "one vote each: the first vote", [["b", "a"], ["a", "b"]], "b"
    ),
    "a-tie-among-later-votes": VoteCase(
        "sticky and range tie at two votes: sticky was voted first",
        [
            [RR, RANGE, STICKY],
            [STICKY, RANGE, RR],
            [STICKY, RR, RANGE],
            [RANGE, RR, STICKY],
            [RANGE, STICKY, RR],
        ],
        STICKY,
    ),
    "only-what-every-member-supports": VoteCase(
        "only range is supported by every member", [["mine", RANGE], [RANGE]], RANGE
    ),
    "a-vote-skips-what-not-all-support": VoteCase(
        "the first member votes range, its first choice every member supports",
        [["mine", RANGE, RR], [RR, RANGE], [RANGE, RR]],
        RANGE,
    ),
}


@pytest.mark.spec("REBAL-9")
@pytest.mark.parametrize("case", VOTE_CASES.values(), ids=VOTE_CASES.keys())
def test_the_vote_by_hand(case):
    inputs = "members' protocols " + ", ".join(" ".join(p) for p in case.preferences)
    got = call(inputs, select_protocol, case.preferences)
    assert got == case.expected, f"{inputs}: {case.why}; expected {case.expected}, got {got}"


class LeaderCase(NamedTuple):
    why: str
    leader: str
    joined: list[str]
    expected: str | None


LEADER_CASES = {
    "the-leader-rejoined": LeaderCase("the leader stays", "c2", ["c1", "c2", "c3"], "c2"),
    "the-leader-rejoined-last": LeaderCase(
        "the leader stays, even if it joined last", "c3", ["c1", "c2", "c3"], "c3"
    ),
    "the-leader-alone": LeaderCase("the leader stays", "c1", ["c1"], "c1"),
    "the-leader-is-gone": LeaderCase(
        "the first member that joined leads", "c9", ["c2", "c3", "c1"], "c2"
    ),
    "nobody-joined": LeaderCase("no member joined: no leader", "c1", [], None),
}


@pytest.mark.spec("REBAL-9")
@pytest.mark.parametrize("case", LEADER_CASES.values(), ids=LEADER_CASES.keys())
def test_the_leader_by_hand(case):
    inputs = f"previous leader {case.leader}, joined in order {case.joined}"
    got = call(inputs, elect_joined_leader, case.leader, list(case.joined))
    assert got == case.expected, f"{inputs}: {case.why}; expected {case.expected}, got {got}"


@pytest.mark.spec("REBAL-9")
@given(st.lists(st.sampled_from("abcdef"), unique=True), st.sampled_from("abcdefg"))
def test_the_leader_stays_if_it_joined_else_the_first_joined_leads(joined, leader):
    expected = leader if leader in joined else (joined[0] if joined else None)
    assert elect_joined_leader(leader, joined) == expected


@pytest.mark.spec("REBAL-9")
def test_a_real_group_uses_the_protocol_most_members_prefer(
    broker, create_topics, group_assignment
):
    create_topics({"lab05-vote": 3})
    preferences = {
        "c0": ["range", "roundrobin"],
        "c1": ["roundrobin", "range"],
        "c2": ["roundrobin", "range"],
    }
    got = group_assignment("lab05-vote", preferences, ["lab05-vote"], list(preferences))
    owned = sorted(tp for tps in got.values() for tp in tps)
    assert owned == [("lab05-vote", p) for p in (0, 1, 2)]
    admin = Admin(broker.bootstrap)
    try:
        assert admin.describe_groups(["lab05-vote"])["lab05-vote"].protocol == "roundrobin"
    finally:
        admin.close()


def call(inputs: str, function, *args):
    """function(*args); an exception it raises fails the test, naming the inputs."""
    try:
        return function(*args)
    except Exception as e:  # the student's code raised: say on what, below
        error = e
    # Outside the `except`, so that the report's first line is this one, not the traceback.
    message = f": {error}" if str(error) else ""
    pytest.fail(f"{inputs}: raised {type(error).__name__}{message}")

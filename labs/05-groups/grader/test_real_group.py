"""Lab 05 grader, end to end: a real group of our consumers on a real broker.

Three consumers with static instance ids c0, c1, c2 (so their order is known: ASSIGN-1)
join a group subscribed to two topics; the group's leader runs your assignor inside its
poll() and sends the result through SyncGroup, and the coordinator hands each member its
share. The expected assignments are worked out by hand from the rules.
"""

from __future__ import annotations

import pytest

TOPICS = {"lab05-a": 5, "lab05-b": 3}


@pytest.mark.spec("ASSIGN-4")
def test_a_real_group_gets_the_range_assignment(create_topics, group_assignment):
    create_topics(TOPICS)
    got = group_assignment("lab05-range", "range", list(TOPICS), ["c0", "c1", "c2"])
    # lab05-a: 5 = 2 + 2 + 1; lab05-b: 3 = 1 + 1 + 1
    assert got == {
        "c0": [("lab05-a", 0), ("lab05-a", 1), ("lab05-b", 0)],
        "c1": [("lab05-a", 2), ("lab05-a", 3), ("lab05-b", 1)],
        "c2": [("lab05-a", 4), ("lab05-b", 2)],
    }


@pytest.mark.spec("ASSIGN-5")
def test_a_real_group_gets_the_roundrobin_assignment(create_topics, group_assignment):
    create_topics({"lab05-rr-a": 5, "lab05-rr-b": 3})
    got = group_assignment(
        "lab05-rr", "roundrobin", ["lab05-rr-a", "lab05-rr-b"], ["c0", "c1", "c2"]
    )
    # a-0 a-1 a-2 a-3 a-4 b-0 b-1 b-2 dealt to c0 c1 c2 c0 c1 c2 c0 c1
    assert got == {
        "c0": [("lab05-rr-a", 0), ("lab05-rr-a", 3), ("lab05-rr-b", 1)],
        "c1": [("lab05-rr-a", 1), ("lab05-rr-a", 4), ("lab05-rr-b", 2)],
        "c2": [("lab05-rr-a", 2), ("lab05-rr-b", 0)],
    }

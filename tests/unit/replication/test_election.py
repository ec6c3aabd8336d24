"""Leader election (kafka_ref/cluster/election.py): clean and unclean."""

from __future__ import annotations

import pytest

from kafka_ref.cluster.election import Election, elect_leader


@pytest.mark.spec("ISR-6")
def test_clean_election_picks_the_first_live_isr_member_in_assignment_order():
    assert elect_leader((2, 0, 1), {0, 1, 2}, {0, 1, 2}) == Election(2, (2, 0, 1))
    assert elect_leader((2, 0, 1), {0, 1}, {0, 1, 2}) == Election(0, (0, 1))
    assert elect_leader((2, 0, 1), {1, 2}, {0, 1}) == Election(1, (1,))


@pytest.mark.spec("ISR-6")
def test_no_live_isr_member_leaves_the_partition_offline_unless_unclean():
    assert elect_leader((0, 1, 2), {0}, {1, 2}) == Election(None, (0,))
    assert elect_leader((0, 1, 2), {0}, {1, 2}, unclean_leader_election=True) == Election(
        1, (1,), unclean=True
    )
    assert elect_leader((0, 1), {0}, set(), unclean_leader_election=True).leader is None

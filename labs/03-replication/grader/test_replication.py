"""Lab 03 grader: the high watermark and leader-epoch truncation (REPL-3, TRUNC-5..TRUNC-7).

Your two functions run inside kafka-ref's deterministic cluster simulator (kafka_ref/sim):
KIP-101's two scenarios and the KAFKA-6361 sequence, step by step, must keep every
acknowledged write and end with identical logs; then hypothesis drives a 3-broker cluster
through random produces, crashes, power losses and restarts, hunting for a lost
acknowledged write or two replicas that disagree. It is the same hunt that finds KIP-101's
loss in the old high-watermark rule within seconds.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kafka_ref.replication import partition, truncation
from kafka_ref.replication.leader_epoch import EpochEntry, LeaderEpochFileCache
from tests.sim.test_kip101 import (
    test_kafka_6361_unclean_leader_changes_converge_only_with_kip_279 as kafka_6361,
)
from tests.sim.test_kip101 import (
    test_kip101_scenario_1_hw_truncation_then_election_loses_an_acked_write as scenario_1,
)
from tests.sim.test_kip101 import (
    test_kip101_scenario_2_with_leader_epochs_the_follower_truncates_and_copies_the_leader as scenario_2,  # noqa: E501
)
from tests.sim.test_replication_stateful import make_machine


@pytest.mark.spec("REPL-3")
@given(st.integers(0, 100), st.lists(st.integers(-1, 100), max_size=4), st.integers(0, 100))
def test_the_hw_is_the_smallest_leo_over_the_isr_and_never_goes_down(leader, followers, hw):
    new = partition.leader_high_watermark(leader, followers, hw)
    assert new >= hw, "the HW went down"
    assert new == max(hw, min([leader, *followers]))


def cache(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, tuple(EpochEntry(*e) for e in entries))


@pytest.mark.spec("TRUNC-5", "TRUNC-6")
@pytest.mark.parametrize(
    ("entries", "leo", "hw", "answer", "expected"),
    [
        # both had epoch 2; it ends at 15 on the leader, at the LEO 18 here: cut to 15
        (((0, 0), (2, 10)), 18, 12, (2, 15), (15, True)),
        # the leader's epoch 2 goes on past our LEO: keep everything
        (((0, 0), (2, 10)), 18, 12, (2, 30), (18, True)),
        # we asked about our epoch 3; the leader's largest epoch <= 3 is 2, which we know:
        # it ends at 12 here (where our 3 starts), at 14 there: cut to 12, done
        (((0, 0), (2, 10), (3, 12)), 20, 11, (2, 14), (12, True)),
        # the leader's epoch 2 is unknown here: our largest below it, 0, ends at 12 where
        # our 3 starts; cut there and ask again about epoch 0 (KIP-279)
        (((0, 0), (3, 12)), 20, 11, (2, 14), (12, False)),
        # the leader knows no epoch at all (an old log): the HW
        (((0, 0), (2, 10)), 18, 12, (-1, -1), (12, True)),
        # our latest epoch is the leader's latest too, longer there: nothing to cut
        (((0, 0), (1, 4)), 9, 6, (1, 30), (9, True)),
    ],
)
def test_truncation_steps_of_kip_101_and_kip_279(entries, leo, hw, answer, expected):
    step = truncation.truncation_step(cache(*entries), leo, hw, *answer)
    assert tuple(step) == expected


@pytest.mark.spec("TRUNC-5", "TRUNC-2")
def test_kip101_scenario_1_keeps_the_acked_write():
    scenario_1("leader-epoch")


@pytest.mark.spec("TRUNC-5")
def test_kip101_scenario_2_the_follower_truncates_and_copies_the_leader():
    scenario_2()


@pytest.mark.spec("TRUNC-7", "TRUNC-6")
def test_kafka_6361_converges_with_kip_279():
    kafka_6361("leader-epoch")


@pytest.mark.spec("TRUNC-5", "TRUNC-6")
def test_hypothesis_finds_no_lost_write_and_no_divergence():
    run_state_machine_as_test(
        make_machine("leader-epoch"),
        settings=settings(
            max_examples=60, stateful_step_count=30, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )  # fmt: skip

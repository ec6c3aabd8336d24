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

# (leader's LEO, the ISR followers' LEOs, the HW so far, the new HW), worked out by hand
HW_CASES = [
    pytest.param(12, [12, -1], 5, 5, id="follower at LEO -1, leader at 12: the HW stays at 5"),
    pytest.param(20, [-1, -1], 9, 9, id="a new leader, every follower at LEO -1: stays at 9"),
    pytest.param(7, [-1], 0, 0, id="the only follower at LEO -1, HW 0: stays at 0"),
    pytest.param(12, [12, 12], 5, 12, id="every follower at the leader's LEO 12: moves to 12"),
    pytest.param(12, [12, 8], 5, 8, id="followers at 12 and 8: moves to the smallest, 8"),
    pytest.param(12, [12, 12, 8], 5, 8, id="followers at 12, 12 and 8: all, not a majority: 8"),
    pytest.param(12, [], 5, 12, id="no follower in the ISR: the leader's LEO 12"),
    pytest.param(12, [3], 5, 5, id="a follower at 3, below the HW 5: never goes down"),
    pytest.param(10, [14], 5, 10, id="a follower at 14 ahead of the leader at 10: 10"),
    pytest.param(5, [5, 5], 5, 5, id="every LEO at the HW 5: stays at 5"),
]


@pytest.mark.spec("REPL-3")
@pytest.mark.parametrize(("leader", "followers", "hw", "expected"), HW_CASES)
def test_the_hw_on_cases_worked_by_hand(leader, followers, hw, expected):
    got = partition.leader_high_watermark(leader, followers, hw)
    assert got == expected, (
        f"leader at LEO {leader}, ISR followers at LEOs {followers}, HW so far {hw}: "
        f"the HW must be {expected}, got {got}"
    )


@pytest.mark.spec("REPL-3")
def test_the_hw_reads_the_followers_leos_once():
    """`follower_log_end_offsets` is an Iterable: a generator can be read only once."""
    got = partition.leader_high_watermark(12, iter([12, 8]), 5)
    assert got == 8, (
        "leader at LEO 12, ISR followers at LEOs 12 and 8 given as an iterator (the contract "
        f"says Iterable: it can be read once), HW so far 5: the HW must be 8, got {got}"
    )


@pytest.mark.spec("REPL-3")
@given(st.integers(0, 100), st.lists(st.integers(-1, 100), max_size=4), st.integers(0, 100))
def test_the_hw_is_the_smallest_leo_over_the_isr_and_never_goes_down(leader, followers, hw):
    new = partition.leader_high_watermark(leader, followers, hw)
    where = f"leader at LEO {leader}, followers at {followers}, HW {hw}"
    assert new >= hw, f"{where}: the HW went down to {new}"
    assert new == max(hw, min([leader, *followers])), f"{where}: got {new}"


def cache(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, tuple(EpochEntry(*e) for e in entries))


# The follower's epochs (epoch, start offset), its LEO and HW, the leader's answer (its
# largest epoch <= the one asked about, and where that epoch ends on the leader), and the
# step expected (offset, done).
TRUNCATION_CASES = [
    # both have epoch 2; it ends at 15 on the leader, at the LEO 18 here: cut to 15
    pytest.param(((0, 0), (2, 10)), 18, 12, (2, 15), (15, True), id="same epoch, ends first there"),
    # the leader's epoch 2 goes on past our LEO: keep everything
    pytest.param(((0, 0), (2, 10)), 18, 12, (2, 30), (18, True), id="same epoch, longer there"),
    # asked about our epoch 3; the leader's largest <= 3 is 2, which we know: it ends at 12
    # here (where our 3 starts), at 14 there: cut to 12, done
    pytest.param(
        ((0, 0), (2, 10), (3, 12)), 20, 11, (2, 14), (12, True), id="older shared epoch ends here"
    ),
    # the leader's epoch 2 is unknown here: our largest below it, 0, ends at 12 where our 3
    # starts; cut there and ask again about epoch 0 (KIP-279)
    pytest.param(
        ((0, 0), (3, 12)), 20, 11, (2, 14), (12, False), id="epoch unknown here: ask again"
    ),
    # the same with epoch 1 known here, ending at 12 where our 3 starts
    pytest.param(
        ((0, 0), (1, 5), (3, 12)), 20, 11, (2, 14), (12, False), id="epoch 2 unknown, we know 1"
    ),
    # the leader knows no epoch at all (an old log): our HW
    pytest.param(((0, 0), (2, 10)), 18, 12, (-1, -1), (12, True), id="no epoch there: our HW"),
    pytest.param((), 7, 3, (-1, -1), (3, True), id="no epoch there nor here: our HW"),
    # an answer without an epoch but with an end offset: that offset, capped at our LEO
    pytest.param(((0, 0), (2, 10)), 18, 12, (-1, 14), (14, True), id="no epoch, ends at 14"),
    pytest.param(((0, 0), (2, 10)), 18, 12, (-1, 30), (18, True), id="no epoch, ends past our LEO"),
    # we know no epoch at all: the leader's end offset, capped at our LEO
    pytest.param((), 7, 3, (2, 5), (5, True), id="no epoch here, ends at 5 there"),
    pytest.param((), 7, 3, (2, 9), (7, True), id="no epoch here, ends past our LEO there"),
    # our latest epoch is the leader's latest too, longer there: nothing to cut
    pytest.param(((0, 0), (1, 4)), 9, 6, (1, 30), (9, True), id="our latest epoch, longer there"),
    # the leader's log begins with epoch 1 at offset 0: asked about our epoch 0, it answers
    # that epoch 0 ends at 0 there. 0 is an offset, not "no epoch" (-1): cut to 0, not the HW
    pytest.param(((0, 0),), 5, 3, (0, 0), (0, True), id="our epoch ends at 0 there: cut to 0"),
    # our cache ahead of our log (epoch 3 from 20, LEO 18): where our epoch 2 ends, 20, is
    # past the LEO; capped at the LEO whether the leader shares the epoch or never had it
    pytest.param(
        ((0, 0), (2, 10), (3, 20)), 18, 12, (2, 30), (18, True), id="shared epoch ends past LEO"
    ),
    pytest.param(
        ((0, 0), (1, 5), (3, 20)), 18, 11, (2, 14), (18, False), id="our epoch ends past LEO"
    ),
    # KIP-101 scenario 2: epoch 0 ends at 1 on the new leader; cut to 1, below our HW 2
    pytest.param(((0, 0),), 2, 2, (0, 1), (1, True), id="KIP-101 scenario 2: below our HW"),
    # every epoch we know (3, from 5) is newer than the leader's 2, which ends at 4 there:
    # our epoch 2 ended where our 3 starts, at 5; cut to 4
    pytest.param(((3, 5),), 9, 5, (2, 4), (4, True), id="all our epochs newer than its answer"),
]


@pytest.mark.spec("TRUNC-5", "TRUNC-6")
@pytest.mark.parametrize(
    ("entries", "leo", "hw", "answer", "expected"),
    TRUNCATION_CASES,
)
def test_truncation_steps_of_kip_101_and_kip_279(entries, leo, hw, answer, expected):
    step = truncation.truncation_step(cache(*entries), leo, hw, *answer)
    offset, done = expected
    assert tuple(step) == expected, (
        f"a follower with epochs {list(entries)} (epoch, start offset), LEO {leo}, HW {hw}; "
        f"the leader answered epoch {answer[0]} ending at {answer[1]}: truncate to {offset} "
        f"and {'stop (done=True)' if done else 'ask again (done=False)'}, got {tuple(step)}"
    )


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
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

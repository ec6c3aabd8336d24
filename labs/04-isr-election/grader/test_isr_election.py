"""Lab 04 grader: the ISR's two decisions and leader election (ISR-2, ISR-3, ISR-6, CTRL-6).

Each function is checked alone against an oracle written here, then inside kafka-ref's
deterministic cluster simulator (kafka_ref/sim), where every leader asks your ISR rules at
each fetch and every replica.lag.time.max.ms / 2, and the controller asks your election
whenever a leader is lost: a follower cut off from the leader must leave the ISR after the
lag time and come back once it caught up; clean election must never lose an acknowledged
write, and unclean election must bring the partition back, at that price. Last, hypothesis
drives a 3-broker cluster through random produces, crashes, restarts and network cuts,
hunting for a lost acknowledged write or diverging replicas.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kafka_ref.cluster import election
from kafka_ref.errors import ErrorCode
from kafka_ref.replication import isr
from kafka_ref.sim import SimCluster
from tests.sim.test_replication_stateful import make_machine

TP = ("t", 0)


@pytest.mark.spec("ISR-2")
@given(st.integers(-1, 50), st.integers(0, 50), st.integers(0, 50))
def test_a_follower_joins_at_the_hw_and_the_start_of_the_epoch(leo, hw, epoch_start):
    expected = leo >= hw and leo >= epoch_start
    assert isr.can_join_isr(leo, hw, epoch_start) is expected


@st.composite
def isrs(draw):
    members = draw(st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True))
    leader = draw(st.sampled_from(members))
    now = draw(st.integers(0, 10_000))
    caught_up = {r: draw(st.integers(0, now)) for r in members if r != leader}
    return leader, members, caught_up, now, draw(st.integers(0, 3_000))


@pytest.mark.spec("ISR-3")
@given(isrs())
def test_a_follower_leaves_after_more_than_the_lag_time(case):
    leader, members, caught_up, now, lag = case
    expected = {r for r, t in caught_up.items() if now - t > lag}
    assert set(isr.out_of_sync_replicas(leader, members, caught_up, now, lag)) == expected


@st.composite
def partitions(draw):
    assignment = draw(st.lists(st.integers(0, 5), min_size=1, max_size=5, unique=True))
    in_sync = draw(st.sets(st.sampled_from(assignment)))
    live = draw(st.sets(st.integers(0, 5)))
    return assignment, in_sync, live, draw(st.booleans())


@pytest.mark.spec("ISR-6", "CTRL-6")
@given(partitions())
def test_the_first_live_isr_member_leads_and_unclean_only_when_allowed(case):
    assignment, in_sync, live, unclean = case
    got = election.elect_leader(assignment, in_sync, live, unclean_leader_election=unclean)
    clean = [r for r in assignment if r in in_sync and r in live]
    if clean:
        assert tuple(got) == (clean[0], tuple(clean), False)
    elif unclean and any(r in live for r in assignment):
        first = next(r for r in assignment if r in live)
        assert tuple(got) == (first, (first,), True)
    else:
        assert got.leader is None and tuple(got.isr) == tuple(r for r in assignment
                                                              if r in in_sync)[:1]  # fmt: skip


def isr_now(cluster: SimCluster) -> tuple[int, ...]:
    return cluster.controller.state[TP].isr


@pytest.mark.spec("ISR-3", "ISR-2")
def test_a_cut_off_follower_leaves_the_isr_after_the_lag_time_and_returns():
    """replica.lag.time.max.ms is 1000 in the simulator; the leader checks every 500 ms."""
    with SimCluster(brokers=3, seed=4) as cluster:
        cluster.run(200)
        assert isr_now(cluster) == (0, 1, 2)
        cluster.isolate(2)
        for _ in range(5):
            cluster.produce(b"x", acks=1)
            cluster.run(100)
        assert 2 in isr_now(cluster), "left before the lag time"
        cluster.run(1_500)
        assert isr_now(cluster) == (0, 1), "still in the ISR long after the lag time"
        write = cluster.produce(b"y", acks="all")
        cluster.run(100)
        assert write.acked, "acks=all waits for a member that should have left"
        cluster.heal()
        cluster.run(1_000)
        assert isr_now(cluster) == (0, 1, 2), "caught up, but never back in the ISR"
        assert cluster.logs_identical()


@pytest.mark.spec("ISR-6", "CTRL-6")
def test_clean_election_waits_for_the_last_isr_member_and_loses_nothing():
    with SimCluster(brokers=3, seed=5) as cluster:
        cluster.stop(1)
        cluster.stop(2)
        cluster.run(200)
        assert isr_now(cluster) == (0,)
        write = cluster.produce(b"only-on-0", acks="all")
        cluster.run(100)
        assert write.acked
        cluster.crash(0)
        cluster.start(1)
        cluster.start(2)
        cluster.run(1_000)
        assert cluster.leader() is None, "a replica outside the ISR was elected cleanly"
        refused = cluster.produce(b"nobody", acks="all")
        cluster.run(1_000)
        assert refused.error == ErrorCode.LEADER_NOT_AVAILABLE
        cluster.start(0)
        cluster.run(1_000)
        assert cluster.leader() == 0 and cluster.lost_writes() == []


@pytest.mark.spec("ISR-6", "CTRL-6")
def test_unclean_election_is_available_at_once_and_loses_the_write():
    with SimCluster(brokers=3, seed=5, unclean_leader_election=True) as cluster:
        cluster.stop(1)
        cluster.stop(2)
        cluster.run(200)
        write = cluster.produce(b"only-on-0", acks="all")
        cluster.run(100)
        assert write.acked
        cluster.crash(0)
        cluster.start(1)
        cluster.start(2)
        cluster.run(1_000)
        assert cluster.leader() == 1, "no unclean election, or not the first live replica"
        assert [w.value for w in cluster.lost_writes()] == [b"only-on-0"]


@pytest.mark.spec("ISR-2", "ISR-3")
def test_hypothesis_finds_no_lost_write_and_no_divergence():
    run_state_machine_as_test(
        make_machine("leader-epoch"),
        settings=settings(
            max_examples=30, stateful_step_count=30, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )  # fmt: skip

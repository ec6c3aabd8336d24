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


# (follower's LEO, leader's HW, where the leader's epoch began, may it join?)
JOIN_CASES = [
    pytest.param(10, 10, 8, True, id="at the HW 10, past the epoch's start 8: joins"),
    pytest.param(9, 10, 8, False, id="one short of the HW 10: stays out"),
    pytest.param(15, 10, 8, True, id="at the leader's LEO 15, past the HW 10: joins"),
    pytest.param(10, 8, 10, True, id="at the epoch's start 10, past the HW 8: joins"),
    pytest.param(9, 8, 10, False, id="past the HW 8, one short of the epoch's start 10: out"),
    pytest.param(9, 10, 5, False, id="past the epoch's start 5, short of the HW 10: out"),
    pytest.param(10, 10, 10, True, id="at the HW and the epoch's start, both 10: joins"),
    pytest.param(-1, 0, 0, False, id="LEO -1 (no fetch yet), HW 0, epoch from 0: out"),
    pytest.param(-1, 5, 5, False, id="LEO -1 (no fetch yet), HW 5, epoch from 5: out"),
    pytest.param(0, 0, 0, True, id="an empty log, HW 0, epoch from 0: joins"),
]


@pytest.mark.spec("ISR-2")
@pytest.mark.parametrize(("leo", "hw", "epoch_start", "joins"), JOIN_CASES)
def test_who_joins_the_isr_on_cases_worked_by_hand(leo, hw, epoch_start, joins):
    got = isr.can_join_isr(leo, hw, epoch_start)
    assert got is joins, (
        f"a follower at LEO {leo}, the leader's HW {hw}, its epoch began at offset "
        f"{epoch_start}: the follower {'joins' if joins else 'stays out'} (it joins when its "
        f"LEO is at or past both), got {got!r}"
    )


@pytest.mark.spec("ISR-2")
@given(st.integers(-1, 50), st.integers(0, 50), st.integers(0, 50))
def test_a_follower_joins_at_the_hw_and_the_start_of_the_epoch(leo, hw, epoch_start):
    expected = leo >= hw and leo >= epoch_start
    got = isr.can_join_isr(leo, hw, epoch_start)
    assert got is expected, f"LEO {leo}, HW {hw}, epoch from {epoch_start}: got {got!r}"


# (leader, ISR, last caught-up time of each follower (ms), now, replica.lag.time.max.ms,
# who leaves); the leader has no caught-up time of its own, as in the broker
LEAVE_CASES = [
    pytest.param(
        0, [0, 1, 2], {1: 4000, 2: 5000}, 5000, 1000, set(), id="caught up exactly 1000 ms ago"
    ),
    pytest.param(
        0, [0, 1, 2], {1: 3999, 2: 5000}, 5000, 1000, {1}, id="caught up 1001 ms ago: leaves"
    ),
    pytest.param(0, [0, 1], {1: 5000}, 5000, 1000, set(), id="caught up just now: stays"),
    pytest.param(0, [0, 1], {1: 5000}, 9000, 1000, {1}, id="long ago: leaves"),
    pytest.param(
        2, [0, 1, 2], {0: 100, 1: 200}, 5000, 1000, {0, 1}, id="both followers of leader 2 leave"
    ),
    pytest.param(0, [0], {1: 0, 2: 0}, 5000, 1000, set(), id="the leader alone: nobody leaves"),
    pytest.param(
        0, [0, 1], {1: 5000, 2: 0}, 5000, 1000, set(), id="follower 2, out of the ISR: not named"
    ),
    pytest.param(0, [0, 1], {1: 4999}, 5000, 0, {1}, id="lag 0, caught up 1 ms ago: leaves"),
    pytest.param(0, [0, 1], {1: 5000}, 5000, 0, set(), id="lag 0, caught up now: stays"),
    pytest.param(
        1, [1, 0], {0: 30_000}, 30_500, 1000, set(), id="late in time, caught up 500 ms ago"
    ),
]


@pytest.mark.spec("ISR-3")
@pytest.mark.parametrize(("leader", "members", "caught_up", "now", "lag", "leaving"), LEAVE_CASES)
def test_who_leaves_the_isr_on_cases_worked_by_hand(leader, members, caught_up, now, lag, leaving):
    got = isr.out_of_sync_replicas(leader, members, caught_up, now, lag)
    assert set(got) == leaving, (
        f"leader {leader}, ISR {members}, followers last caught up at {caught_up} (ms), now "
        f"{now}, replica.lag.time.max.ms {lag}: {sorted(leaving) or 'nobody'} must leave "
        f"(caught up more than {lag} ms ago), got {sorted(got)}"
    )


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
    got = set(isr.out_of_sync_replicas(leader, members, caught_up, now, lag))
    assert got == expected, f"leader {leader}, caught up at {caught_up}, now {now}, lag {lag}"


# (assignment, ISR, live brokers, unclean election allowed, (leader, new ISR, unclean))
ELECTION_CASES = {
    "all live: the preferred replica leads, the ISR in assignment order": pytest.param(
        [3, 1, 2], [1, 2, 3], {1, 2, 3}, False, (3, (3, 1, 2), False)
    ),
    "the preferred replica died: the next live ISR member leads, the dead one is out": (
        pytest.param([1, 2, 3], [3, 2, 1], {2, 3}, False, (2, (2, 3), False))
    ),
    "the only ISR member is the last replica: it leads": pytest.param(
        [0, 1, 2], [2], {0, 1, 2}, False, (2, (2,), False)
    ),
    "unclean allowed but an ISR member is alive: clean election first": pytest.param(
        [0, 1, 2], [2], {0, 1, 2}, True, (2, (2,), False)
    ),
    "no live ISR member, unclean off: offline, the ISR keeps 1, first in assignment": (
        pytest.param([0, 1, 2], [2, 1], {0}, False, (None, (1,), False))
    ),
    "the last ISR member died, unclean off: offline, the ISR keeps it": pytest.param(
        [0, 1, 2], [0], {1, 2}, False, (None, (0,), False)
    ),
    "no live ISR member, unclean on: the first live replica in assignment order": (
        pytest.param([2, 1, 0], [2], {0, 1}, True, (1, (1,), True))
    ),
    "unclean on, broker 0 alive but not a replica: replica 4 leads": pytest.param(
        [3, 4], [3], {0, 4}, True, (4, (4,), True)
    ),
    "unclean on, no replica alive: offline, the ISR keeps its first member": pytest.param(
        [0, 1, 2], [1, 2], {5}, True, (None, (1,), False)
    ),
    "an empty ISR and nobody alive: offline, the ISR stays empty": pytest.param(
        [0, 1], [], set(), False, (None, (), False)
    ),
}


@pytest.mark.spec("ISR-6", "CTRL-6")
@pytest.mark.parametrize(
    ("assignment", "in_sync", "live", "unclean", "expected"),
    ELECTION_CASES.values(),
    ids=ELECTION_CASES,
)
def test_the_election_on_cases_worked_by_hand(assignment, in_sync, live, unclean, expected):
    got = election.elect_leader(assignment, in_sync, live, unclean_leader_election=unclean)
    leader, new_isr, was_unclean = expected
    assert (got.leader, tuple(got.isr), got.unclean) == expected, (
        f"assignment {assignment}, ISR {in_sync}, live brokers {sorted(live)}, unclean "
        f"election {'allowed' if unclean else 'off'}: expected Election(leader={leader}, "
        f"isr={new_isr}, unclean={was_unclean}), got {tuple(got)}"
    )


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
    got = (got.leader, tuple(got.isr), got.unclean)
    clean = [r for r in assignment if r in in_sync and r in live]
    if clean:
        expected = (clean[0], tuple(clean), False)
    elif unclean and any(r in live for r in assignment):
        first = next(r for r in assignment if r in live)
        expected = (first, (first,), True)
    else:
        expected = (None, tuple(r for r in assignment if r in in_sync)[:1], False)
    assert got == expected, f"{assignment=}, ISR {sorted(in_sync)}, live {sorted(live)}"


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
            max_examples=30,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

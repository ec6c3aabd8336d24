"""Eligible leader replicas (KIP-966): the notes' dilemma, answered.

The notes ask: when every ISR member is gone, wait for one (the partition is offline) or
elect any replica (and lose acknowledged writes)? The same history runs three times on the
simulator, with the broker's real replica manager and logs: a write acknowledged by two
replicas, the ISR shrinking to its leader, the leader lost for good.

* unclean election makes the replica that missed the write leader: the write is lost;
* clean election without ELR waits for the last ISR member, which never returns;
* with ELR the replica that left the ISR while it was below min.insync.replicas is
  eligible: it leads cleanly, and the write survives.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.cluster.election import change_with_elr
from kafka_ref.sim import SimCluster


def write(cluster: SimCluster, n: int, tag: str) -> list:
    writes = [cluster.produce(f"{tag}{i}".encode(), acks="all") for i in range(n)]
    cluster.run(200)
    assert all(w.done and w.error == 0 for w in writes), cluster.describe()
    return writes


def lose_the_leader(**options) -> SimCluster:
    """Three replicas, min.insync.replicas=2: `a` on all three, `b` acknowledged by 0 and 1
    after 2 stopped; then 1 stops cleanly (the ISR is {0}, below min ISR), leader 0 dies and
    never returns, and 2, which lacks `b`, comes back."""
    cluster = SimCluster(brokers=3, seed=21, min_insync_replicas=2, **options)
    assert cluster.leader() == 0
    write(cluster, 5, "a")
    cluster.stop(2)
    cluster.run(100)
    write(cluster, 5, "b")  # acknowledged by 0 and 1: min ISR 2 is met
    cluster.stop(1)
    cluster.run(100)
    cluster.crash(0)
    cluster.run(cluster.config.session_timeout_ms + 100)
    cluster.start(2)
    cluster.run(300)
    return cluster


@pytest.mark.spec("ELR-3")
def test_unclean_election_loses_the_acknowledged_write():
    with lose_the_leader(unclean_leader_election=True) as cluster:
        assert cluster.leader() == 2
        cluster.start(1)  # 1 comes back and truncates to the unclean leader's log
        cluster.run(500)
        lost = cluster.lost_writes()
        assert [w.value for w in lost] == [b"b%d" % i for i in range(5)], cluster.describe()


@pytest.mark.spec("ELR-2")
def test_clean_election_without_elr_waits_for_the_last_isr_member():
    with lose_the_leader() as cluster:
        assert cluster.leader() is None
        cluster.start(1)  # not in the ISR, whose last member (0) is dead: still offline
        cluster.run(500)
        assert cluster.leader() is None, cluster.describe()


@pytest.mark.spec("ELR-1", "ELR-2")
def test_eligible_leader_replicas_elect_the_replica_that_holds_the_write():
    with lose_the_leader(eligible_leader_replicas=True) as cluster:
        tp = (cluster.topic, 0)
        assert cluster.leader() is None  # 2 is not eligible: it left with the ISR at 2
        # 0 and 1 each left the ISR below min ISR; 0 would leave the ELR on an unclean return
        assert cluster.controller.elr[tp][0] == (0, 1), cluster.history[-20:]
        cluster.start(1)  # eligible: left the ISR while it was below min ISR
        cluster.run(500)
        assert cluster.leader() == 1, cluster.describe()
        assert cluster.lost_writes() == []
        values = [r.value for r in cluster.records(1)]
        assert values[-5:] == [b"b%d" % i for i in range(5)]


@pytest.mark.spec("ELR-4")
def test_a_replica_back_from_an_unclean_shutdown_is_no_longer_eligible():
    with SimCluster(
        brokers=3, seed=22, min_insync_replicas=2, eligible_leader_replicas=True
    ) as cluster:
        tp = (cluster.topic, 0)
        write(cluster, 3, "a")
        cluster.stop(2)
        cluster.run(100)
        cluster.crash(1)  # kill -9: its unflushed records may be gone
        cluster.run(cluster.config.session_timeout_ms + 100)
        assert cluster.controller.elr[tp][0] == (1,)
        cluster.start(1)
        cluster.run(100)
        assert 1 not in cluster.controller.elr[tp][0], cluster.history[-20:]


replica_sets = st.lists(st.integers(0, 4), min_size=1, max_size=5, unique=True)


@pytest.mark.spec("ELR-1", "ELR-2", "ELR-3", "ELR-4")
@given(
    replicas=replica_sets,
    data=st.data(),
    min_isr=st.integers(1, 3),
    unclean=st.booleans(),
)
def test_partition_changes_keep_the_elr_rules(replicas, data, min_isr, unclean):
    subset = st.lists(st.sampled_from(replicas), unique=True)
    isr = data.draw(subset, label="isr")
    elr = [r for r in data.draw(subset, label="elr") if r not in isr]
    live = data.draw(subset, label="live")
    leader = data.draw(st.sampled_from([None, *replicas]), label="leader")
    down_uncleanly = data.draw(subset, label="unclean shutdown")
    change = change_with_elr(
        replicas,
        leader,
        isr,
        elr,
        (),
        live,
        min_isr,
        unclean_leader_election=unclean,
        unclean_shutdown=down_uncleanly,
    )
    assert not set(change.isr) & set(change.elr)  # ELR-1: never both
    assert set(change.isr) <= set(live) | {change.leader}
    if len(change.isr) >= min_isr or change.unclean:
        assert change.elr == () and change.last_known_elr == ()
    assert not set(change.elr) & set(down_uncleanly)  # ELR-4
    assert set(change.elr) <= set(isr) | set(elr)  # only former ISR and ELR members
    if change.leader is not None:
        assert change.leader in live
        if not change.unclean:  # ELR-2: a clean leader held every committed record
            eligible = {r for r in isr if r in live} or {
                r for r in elr if r in live and r not in down_uncleanly
            }
            assert change.leader in eligible
        assert change.leader in change.isr
    if change.unclean:  # ELR-3: only when no ISR nor ELR member could lead
        assert unclean and not {r for r in isr if r in live}

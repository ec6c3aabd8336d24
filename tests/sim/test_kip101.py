"""KIP-101's two scenarios and the KAFKA-6361 sequence, step by step in the simulator.

Each runs under both truncation rules: `high-watermark` (pre-0.11) shows the failure the
KIP describes; `leader-epoch` (KIP-101 + KIP-279) ends with the write kept and identical
logs. The steps follow KIP-101's "Scenario 1" and "Scenario 2" and the report of
KAFKA-6361 that led to KIP-279.
"""

from __future__ import annotations

import pytest

from kafka_ref.sim import SimCluster

B, A = 0, 1  # the scenarios' names: broker 0 leads first (the preferred replica)
HW_CHECKPOINT = 5_000  # replica.high.watermark.checkpoint.interval.ms


def values(cluster: SimCluster, broker: int) -> list[bytes | None]:
    return [r.value for r in cluster.records(broker)]


@pytest.mark.spec("TRUNC-2", "TRUNC-1", "TRUNC-5", "REPL-10")
@pytest.mark.parametrize("rule", ["high-watermark", "leader-epoch"])
def test_kip101_scenario_1_hw_truncation_then_election_loses_an_acked_write(rule):
    """RF 2, B leads, acks=all. m2 is acked once A has it, but A's HW (in memory one fetch
    late, on disk in the last replication-offset-checkpoint) still says 1. A restarts and,
    under the HW rule, truncates m2; B dies before A fetches again; A is elected."""
    with SimCluster(brokers=2, seed=1, truncation=rule) as cluster:
        m1 = cluster.produce(b"m1", acks="all")
        cluster.run(HW_CHECKPOINT + 100)  # replicated, and both HW checkpoints say 1
        assert m1.acked and cluster.partition(A).high_watermark == 1
        m2 = cluster.produce(b"m2", acks="all")
        cluster.run(60)
        assert m2.acked and m2.offset == 1
        cluster.crash(A)  # kill -9: nothing is lost but the in-memory HW
        cluster.start(A)  # back before its ZooKeeper session expired: still in the ISR
        cluster.crash(B)  # B dies before A fetched again
        cluster.run(1_000)  # B's session expires; A is the only live ISR member
        assert cluster.leader() == A
        if rule == "high-watermark":
            assert values(cluster, A) == [b"m1"]
            assert cluster.lost_writes() == [m2], cluster.describe()
        else:
            assert values(cluster, A) == [b"m1", b"m2"]
            assert cluster.lost_writes() == []
        cluster.start(B)
        cluster.run(1_000)
        assert cluster.logs_identical(), cluster.describe()


def scenario_2(rule: str):
    """A leads, B follows. m2 is committed, flushed on A, not on B. Both lose power; B comes
    back first, is elected, writes m3 at offset 1; A comes back as follower with HW 2.
    Returns the cluster, still running, for the checks of each truncation rule."""
    a, b = 0, 1
    cluster = SimCluster(brokers=2, seed=2, truncation=rule)
    try:
        cluster.produce(b"m1", acks="all")
        cluster.run(100)
        for broker in (a, b):
            cluster.partition(broker).log.flush()
        cluster.produce(b"m2", acks="all")
        cluster.run(HW_CHECKPOINT + 100)  # both HW checkpoints say 2
        cluster.partition(a).log.flush()  # on A's disk; B's copy is in its page cache only
        assert cluster.partition(b).high_watermark == 2
        cluster.crash(a, lose_unflushed=True)
        cluster.crash(b, lose_unflushed=True)
        cluster.start(b)
        cluster.run(1_000)  # A's session expires: B, in the ISR, is elected
        assert cluster.leader() == b and values(cluster, b) == [b"m1"]
        m3 = cluster.produce(b"m3", acks=1)
        cluster.run(50)
        assert m3.done and m3.offset == 1
        cluster.start(a)
        cluster.run(1_000)
    except BaseException:
        cluster.close()
        raise
    return cluster


@pytest.mark.spec("TRUNC-3")
def test_kip101_scenario_2_under_the_hw_rule_replicas_diverge_after_two_power_losses():
    with scenario_2("high-watermark") as cluster:
        assert values(cluster, 0) == [b"m1", b"m2"]
        assert values(cluster, 1) == [b"m1", b"m3"]
        [divergence] = cluster.divergence()
        assert divergence.offset == 1, cluster.describe()


@pytest.mark.spec("TRUNC-5", "REPL-7")
def test_kip101_scenario_2_with_leader_epochs_the_follower_truncates_and_copies_the_leader():
    with scenario_2("leader-epoch") as cluster:
        assert values(cluster, 0) == values(cluster, 1) == [b"m1", b"m3"]
        assert cluster.divergence() == [] and cluster.logs_identical()


@pytest.mark.spec("TRUNC-7", "TRUNC-6", "REPL-9")
@pytest.mark.parametrize("rule", ["high-watermark", "leader-epoch"])
def test_kafka_6361_unclean_leader_changes_converge_only_with_kip_279(rule):
    """A leads epoch 0 with 0-9 on both and 10-20 on A only. B leads epoch 1 and writes
    10-15. A leads epoch 2 without truncating. B follows A: it must drop its epoch-1 batch.
    (KIP-101 alone asked for the end of epoch 1, got 21, kept 10-15: KAFKA-6361.)"""
    a, b = 0, 1
    with SimCluster(
        brokers=2, seed=3, truncation=rule, unclean_leader_election=True, min_insync_replicas=1
    ) as cluster:
        for i in range(10):
            cluster.produce(b"a%d" % i, acks=1)
        cluster.run(200)
        cluster.isolate(b)
        for i in range(10, 21):
            cluster.produce(b"a%d" % i, acks=1)
        cluster.run(50)
        assert cluster.partition(a).log_end_offset == 21
        assert cluster.partition(b).log_end_offset == 10
        cluster.crash(a)
        cluster.heal()
        cluster.run(1_000)
        assert cluster.leader() == b
        for i in range(10, 16):
            cluster.produce(b"b%d" % i, acks=1)
        cluster.run(50)
        cluster.stop(b)  # clean: its HW checkpoint says 16
        cluster.run(100)
        cluster.start(a)  # no ISR member is alive: an unclean election makes A leader
        cluster.run(100)
        assert cluster.leader() == a
        # epoch 1 was B's; the controller bumped to 2 when B left (no leader) and 3 for A
        assert [tuple(e) for e in cluster.partition(a).cache.entries] == [(0, 0), (3, 21)]
        cluster.start(b)
        cluster.run(1_000)
        if rule == "high-watermark":
            assert [d.offset for d in cluster.divergence()] == [10], cluster.describe()
        else:
            expected = [b"a%d" % i for i in range(21)]
            assert values(cluster, a) == values(cluster, b) == expected
            assert cluster.logs_identical(), cluster.describe()

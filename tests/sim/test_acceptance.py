"""Kafka's leader-epoch acceptance tests, ported to the simulator.

`EpochDrivenReplicationProtocolAcceptanceTest.scala` (core/src/test/scala/unit/kafka/
server/epoch/): bounces, chopped logs and unclean elections
back and forth, after which every replica's log must be the same, record for record and
epoch for epoch. Broker 0 plays Kafka's broker 100, broker 1 plays 101.
"""

from __future__ import annotations

import os

import pytest

from kafka_ref.log.log_manager import CLEAN_SHUTDOWN_FILE
from kafka_ref.record.batch import iter_batch_headers
from kafka_ref.sim import SimCluster


def epochs(cluster: SimCluster, broker: int) -> list[tuple[int, int]]:
    return [tuple(e) for e in cluster.partition(broker).cache.entries]


def chop(cluster: SimCluster, broker: int, keep: int) -> None:
    """A stopped broker's log loses everything from offset `keep` on, and its clean-shutdown
    marker: the next start must recover (the Scala test's "chop" and marker delete)."""
    directory = os.path.join(cluster.brokers[broker].data_dir, "t-0")
    marker = os.path.join(cluster.brokers[broker].data_dir, CLEAN_SHUTDOWN_FILE)
    if os.path.exists(marker):
        os.unlink(marker)
    segments = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    for name in segments:
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            data = f.read()
        for pos, header in iter_batch_headers(data):
            if header.last_offset >= keep:
                os.truncate(path, pos)
                break


def write(cluster: SimCluster, n: int, tag: str, acks="all") -> list:
    writes = [cluster.produce(f"{tag}{i}".encode(), acks=acks) for i in range(n)]
    cluster.run(200)
    assert all(w.done and w.error == 0 for w in writes), cluster.describe()
    return writes


@pytest.mark.spec("REPL-9", "TRUNC-4")
def test_should_follow_leader_epoch_basic_workflow():
    with SimCluster(brokers=2, seed=10) as cluster:
        leader, follower = 0, 1
        write(cluster, 1, "a")
        assert epochs(cluster, leader) == epochs(cluster, follower) == [(0, 0)]
        cluster.stop(follower)  # the controller drops it from the ISR: a new epoch
        cluster.run(50)
        cluster.start(follower)
        cluster.run(200)
        assert epochs(cluster, leader) == [(0, 0), (1, 1)]
        assert epochs(cluster, follower) == [(0, 0)]  # it learns epochs from batches
        write(cluster, 1, "b")
        assert epochs(cluster, leader) == epochs(cluster, follower) == [(0, 0), (1, 1)]
        assert cluster.records(follower)[-1].epoch == 1
        cluster.stop(leader)  # the follower takes over in epoch 2 at offset 2
        cluster.run(50)
        assert cluster.leader() == follower
        assert epochs(cluster, follower) == [(0, 0), (1, 1), (2, 2)]
        cluster.start(leader)
        write(cluster, 1, "c")
        assert cluster.logs_identical(), cluster.describe()


@pytest.mark.spec("TRUNC-5", "TRUNC-8")
def test_should_not_allow_divergent_logs():
    with SimCluster(brokers=2, seed=11) as cluster:
        write(cluster, 10, "a")
        cluster.stop(1)
        cluster.stop(0)
        chop(cluster, 0, keep=5)
        cluster.start(0)  # the last ISR member: clean election
        cluster.run(50)
        assert cluster.leader() == 0 and cluster.partition(0).log_end_offset == 5
        write(cluster, 9, "b", acks=1)
        cluster.start(1)
        cluster.run(500)
        assert cluster.logs_identical(), cluster.describe()
        assert cluster.partition(1).log_end_offset == 14


@pytest.mark.spec("TRUNC-5", "REPL-7")
def test_offsets_should_not_go_backwards():
    # Broker 1 was the last in the ISR, so broker 0 comes back through an unclean election.
    with SimCluster(brokers=2, seed=12, unclean_leader_election=True) as cluster:
        write(cluster, 20, "a")
        cluster.crash(0)
        cluster.crash(1)
        cluster.run(1_000)
        chop(cluster, 0, keep=10)
        cluster.start(0)
        cluster.run(50)
        write(cluster, 7, "b", acks=1)
        write(cluster, 7, "c", acks=1)
        cluster.start(1)
        cluster.run(500)
        cluster.stop(0)
        cluster.run(500)
        offsets = [r.offset for r in cluster.records(1)]
        assert offsets == list(range(24)), offsets  # strictly increasing, no gap
        cluster.start(0)
        cluster.run(500)
        assert cluster.logs_identical(), cluster.describe()


@pytest.mark.spec("REPL-8", "TRUNC-6")
def test_should_survive_fast_leader_change():
    with SimCluster(brokers=2, seed=13) as cluster:
        for round_ in range(5):
            write(cluster, 1, f"r{round_}-")
            leader = cluster.leader()
            follower = 1 - leader
            cluster.restart(follower)
            cluster.run(20)
            cluster.restart(leader)
            cluster.run(500)
        for broker in (0, 1):
            assert cluster.partition(broker).log_end_offset == 5, cluster.describe()
        assert cluster.logs_identical()


@pytest.mark.spec("TRUNC-6", "TRUNC-7")
def test_logs_should_not_diverge_on_unclean_leader_elections():
    with SimCluster(
        brokers=2, seed=14, unclean_leader_election=True, min_insync_replicas=1
    ) as cluster:
        write(cluster, 1, "a", acks=1)
        cluster.stop(0)
        cluster.run(50)
        write(cluster, 1, "b", acks=1)
        cluster.stop(1)
        cluster.start(0)
        cluster.run(50)
        write(cluster, 3, "c", acks=1)
        cluster.stop(0)
        cluster.start(1)
        cluster.run(50)
        write(cluster, 1, "d", acks=1)
        cluster.stop(1)
        cluster.start(0)
        cluster.run(50)
        write(cluster, 2, "e", acks=1)
        cluster.start(1)
        cluster.run(1_000)
        assert cluster.logs_identical(), cluster.describe()

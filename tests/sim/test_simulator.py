"""The simulator itself: replayable, and its faults do what they say."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.replication.follower_fetch_state import PartitionFetcher
from kafka_ref.replication.messages import AlterIsr
from kafka_ref.replication.partition import Partition
from kafka_ref.server.follower_fetcher import FetcherPartitions, Progress
from kafka_ref.server.replica_manager import DelayedProduce, ReplicaManager
from kafka_ref.sim import SimCluster


def scenario(seed: int) -> list[str]:
    with SimCluster(brokers=3, seed=seed, drop_rate=0.1) as cluster:
        for i in range(5):
            cluster.produce(b"v%d" % i)
        cluster.run(100)
        cluster.crash(cluster.leader())
        cluster.run(500)
        cluster.produce(b"after")
        cluster.run(300)
        return list(cluster.history)


@pytest.mark.spec("SIM-1")
def test_same_seed_same_history():
    assert scenario(7) == scenario(7)
    assert scenario(7) != scenario(8)  # the delays differ


@pytest.mark.spec("SIM-2")
def test_the_simulated_brokers_are_the_brokers_replication_classes():
    with SimCluster(brokers=3, seed=1) as cluster:
        cluster.produce(b"a", acks="all")
        cluster.run(100)
        leader = cluster.leader()
        for broker in cluster.brokers.values():
            assert type(broker.replica_manager) is ReplicaManager
            assert all(type(p) is Partition for p in broker.partitions.values())
            fetchers = broker.fetchers.fetchers
            if broker.broker_id == leader:
                assert fetchers == {}
                continue
            [source] = fetchers.values()
            assert type(source.partitions) is FetcherPartitions
            [fetcher] = source.partitions.partitions.values()
            assert type(fetcher) is PartitionFetcher
            assert fetcher.partition is broker.partitions[("t", 0)]


def _acks_all_without_isr(monkeypatch):
    """The broker's DelayedProduce completes at once, as if the leader were the ISR."""
    monkeypatch.setattr(DelayedProduce, "try_complete", lambda self: self.force_complete())


def _followers_drop_fetched_records(monkeypatch):
    """The follower fetcher takes its answers and does nothing with them."""
    monkeypatch.setattr(FetcherPartitions, "on_answers", lambda self, asked, answers: Progress())


@pytest.mark.spec("SIM-2")
@pytest.mark.parametrize("mutant", [_acks_all_without_isr, _followers_drop_fetched_records])
def test_a_change_to_the_brokers_replication_code_changes_the_simulation(mutant, monkeypatch):
    """Each change to the shipping classes breaks a simulated scenario that holds without it:
    an acks=all write acknowledged while both followers are cut off, or not replicated."""

    def scenario() -> tuple[bool, list[bytes | None]]:
        with SimCluster(brokers=3, seed=1) as cluster:
            cluster.produce(b"a", acks="all")
            cluster.run(100)
            replicated = [r.value for r in cluster.records(1)]
            cluster.isolate(1)
            cluster.isolate(2)
            write = cluster.produce(b"b", acks="all")
            cluster.run(100)  # shorter than replica.lag.time.max.ms: the ISR is still 3
            return write.done, replicated

    assert scenario() == (False, [b"a"])
    with monkeypatch.context() as patched:
        mutant(patched)
        assert scenario() != (False, [b"a"])


@pytest.mark.spec("ISR-5")
def test_the_controller_applies_an_isr_change_only_from_the_current_state_and_live_members():
    with SimCluster(brokers=3, seed=1) as cluster:
        cluster.run(100)
        controller = cluster.controller
        now = controller.state[("t", 0)]
        leader, epoch, version = now.leader, now.leader_epoch, now.version

        def alter(new_isr, *, epoch=epoch, version=version):
            return controller.alter_isr(AlterIsr("t", 0, leader, epoch, new_isr, version))

        assert alter((0, 1), version=version - 1).error == ErrorCode.FENCED_LEADER_EPOCH
        assert alter((0, 1), epoch=epoch - 1).error == ErrorCode.FENCED_LEADER_EPOCH
        assert controller.state[("t", 0)] == now  # refused: nothing written
        cluster.stop(2)  # its session closes: dead to the controller
        cluster.run(100)
        now = controller.state[("t", 0)]
        assert alter((0, 1, 2), epoch=now.leader_epoch, version=now.version).error == (
            ErrorCode.FENCED_LEADER_EPOCH
        )
        assert controller.state[("t", 0)] == now
        applied = alter((0,), epoch=now.leader_epoch, version=now.version)
        assert applied.error == ErrorCode.NO_ERROR
        assert applied.state.isr == (0,) and applied.state.version == now.version + 1
        assert controller.state[("t", 0)] == applied.state


@pytest.mark.spec("REPL-4", "REPL-1")
def test_acks_all_waits_for_the_isr_and_survives_leader_loss():
    with SimCluster(brokers=3, seed=1, request_timeout_ms=5_000) as cluster:
        cluster.isolate(2)
        write = cluster.produce(b"a", acks="all")
        cluster.run(100)
        assert not write.done  # broker 2 is in the ISR and cannot fetch
        cluster.run(1_500)  # replica.lag.time.max.ms: broker 2 leaves the ISR
        assert write.acked and cluster.controller.state[("t", 0)].isr == (0, 1)
        cluster.crash(0)
        cluster.run(1_000)
        assert cluster.leader() == 1 and cluster.lost_writes() == []
        cluster.heal()
        cluster.run(1_000)
        assert 2 in cluster.controller.state[("t", 0)].isr  # caught up and back in
        assert cluster.logs_identical()


@pytest.mark.spec("REPL-5")
def test_min_insync_replicas_refuses_acks_all():
    with SimCluster(brokers=3, seed=1, min_insync_replicas=2) as cluster:
        cluster.stop(1)
        cluster.stop(2)
        cluster.run(100)
        write = cluster.produce(b"a", acks="all")
        cluster.run(100)
        assert write.error == ErrorCode.NOT_ENOUGH_REPLICAS
        assert cluster.partition(0).log_end_offset == 0


@pytest.mark.spec("REPL-10")
def test_power_loss_loses_only_what_was_not_flushed():
    with SimCluster(brokers=1, seed=1) as cluster:
        cluster.produce(b"a", acks=1)
        cluster.run(50)
        cluster.partition(0).log.flush()
        cluster.produce(b"b", acks=1)
        cluster.run(50)
        cluster.crash(0, lose_unflushed=True)
        cluster.start(0)
        assert [r.value for r in cluster.records(0)] == [b"a"]
        cluster.produce(b"c", acks=1)
        cluster.run(50)
        cluster.restart(0)  # kill -9: the page cache survives
        assert [r.value for r in cluster.records(0)] == [b"a", b"c"]


@pytest.mark.spec("REPL-10")
def test_a_torn_tail_is_recovered():
    with SimCluster(brokers=1, seed=1) as cluster:
        for v in (b"a", b"b", b"c"):
            cluster.produce(v, acks=1)
        cluster.run(50)
        cluster.brokers[0].crash(lose_unflushed=True, torn_bytes=30)
        cluster.start(0)
        assert cluster.records(0) == []  # never flushed; the torn batch is cut by recovery

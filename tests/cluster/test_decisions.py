"""The pure decisions of ZooKeeper mode, without ZooKeeper: replica placement, the
controller's next partition state, and the broker's staleness check."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.cluster.assignment import assign_replicas_to_brokers, rack_alternated
from kafka_ref.cluster.controller_context import ControllerContext, Reassignment
from kafka_ref.cluster.election import next_state, preferred_leader, reassignment_leader
from kafka_ref.cluster.leader_balance import imbalanced_partitions
from kafka_ref.cluster.metadata import InvalidReplicationFactorError, PartitionState
from kafka_ref.cluster.reassignment import replication_factor_change, validate_target
from kafka_ref.cluster.zk_data import split_connect
from kafka_ref.cluster.zk_metadata import is_stale


def state(leader, epoch, isr, replicas=(1, 2, 3), controller_epoch=1) -> PartitionState:
    return PartitionState("t", 0, leader, epoch, tuple(replicas), tuple(isr), controller_epoch)


# ---------------------------------------------------------------------- placement
@pytest.mark.spec("CTRL-8")
def test_kafkas_worked_example_of_five_brokers():
    brokers = [(b, None) for b in range(5)]
    got = assign_replicas_to_brokers(brokers, 10, 3, start_index=0, replica_shift=0)
    # AdminUtils' scaladoc: p0 on 0,1,2 ... p5 (shift 1) on 0,2,3 ... p9 on 4,1,2
    assert got[0] == [0, 1, 2]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]
    assert got[9] == [4, 1, 2]


@pytest.mark.spec("CTRL-8")
@given(
    brokers=st.lists(st.integers(0, 50), min_size=1, max_size=8, unique=True),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_replicas_are_distinct_and_leaders_round_robin(brokers, partitions, data):
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 2**32))
    got = assign_replicas_to_brokers(
        [(b, None) for b in brokers], partitions, rf, rng=random.Random(seed)
    )
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= set(brokers)
    leaders = Counter(r[0] for r in got.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1


@pytest.mark.spec("CTRL-8")
def test_rack_aware_placement_uses_every_rack():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assert rack_alternated(racks) == [1, 3, 5, 2, 4, 6]
    got = assign_replicas_to_brokers(list(racks.items()), 12, 3, rng=random.Random(7))
    for replicas in got.values():
        assert {racks[b] for b in replicas} == {"a", "b", "c"}
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers(list(racks.items()), 1, 7)


# ---------------------------------------------------------------------- controller decisions
@pytest.mark.spec("CTRL-6", "CTRL-7")
def test_next_state_elects_from_the_isr_and_bumps_the_epoch():
    s = state(1, 4, (1, 2, 3))
    assert next_state(s, {1, 2, 3}, unclean=False, controller_epoch=2) is None
    new = next_state(s, {2, 3}, unclean=False, controller_epoch=2)
    assert (new.leader, new.leader_epoch, new.isr, new.controller_epoch) == (2, 5, (2, 3), 2)
    shrunk = next_state(s, {1, 3}, unclean=False, controller_epoch=2)
    assert (shrunk.leader, shrunk.leader_epoch, shrunk.isr) == (1, 5, (1, 3))


@pytest.mark.spec("CTRL-6")
def test_next_state_unclean_only_when_enabled():
    s = state(1, 4, (1,))
    offline = next_state(s, {2, 3}, unclean=False, controller_epoch=1)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (-1, (1,), 5)
    assert next_state(offline, {2, 3}, unclean=False, controller_epoch=1) is None
    unclean = next_state(s, {2, 3}, unclean=True, controller_epoch=1)
    assert (unclean.leader, unclean.isr) == (2, (2,))
    back = next_state(offline, {1, 2}, unclean=False, controller_epoch=1)
    assert (back.leader, back.isr, back.leader_epoch) == (1, (1,), 6)


@pytest.mark.spec("CTRL-5")
def test_brokers_ignore_older_controller_or_leader_epochs():
    applied = state(2, 5, (2, 3), controller_epoch=3)
    assert not is_stale(None, applied)
    assert is_stale(applied, state(1, 6, (1, 2), controller_epoch=2))  # an old controller
    assert is_stale(applied, state(1, 4, (1, 2), controller_epoch=3))  # an old leader epoch
    assert not is_stale(applied, state(2, 5, (2,), controller_epoch=3))  # same epoch: ISR change
    assert not is_stale(applied, state(3, 6, (3,), controller_epoch=4))


@pytest.mark.spec("CTRL-9")
def test_zookeeper_connect_with_chroot():
    assert split_connect("h1:2181,h2:2181/kafka/prod") == ("h1:2181,h2:2181", "/kafka/prod")
    assert split_connect("h:2181") == ("h:2181", "")
    assert split_connect("h:2181/") == ("h:2181", "")


# ---------------------------------------------------------------------- reassignment, balance
@pytest.mark.spec("CTRL-3")
def test_a_controllers_epoch_only_grows_across_resignations():
    context = ControllerContext(broker_id=1)
    context.new_epoch(4, epoch_zk_version=3)
    context.clear()  # it resigned: the cluster is forgotten, its epoch is not
    assert (context.epoch, context.epoch_zk_version) == (4, 3)
    for stale in (4, 3):  # elected again under an epoch it had, or an older one
        with pytest.raises(AssertionError, match="CTRL-3"):
            context.new_epoch(stale, epoch_zk_version=9)
    context.new_epoch(6, epoch_zk_version=5)
    assert (context.epoch, context.epoch_zk_version) == (6, 5)


@pytest.mark.spec("CTRL-24")
def test_a_moves_replica_set_puts_the_targets_first_and_round_trips_through_the_znode():
    move = Reassignment(original=(1, 2), target=(2, 3))
    assert move.replicas == (2, 3, 1)  # Kafka: (targetReplicas ++ originalReplicas).distinct
    assert (move.adding, move.removing) == ((3,), (1,))
    # The znode keeps RS, adding and removing: TRS's order survives, ORS's does not (Kafka:
    # `ReplicaAssignment.originReplicas` is RS minus adding, in RS's order).
    assert Reassignment.from_znode(move.replicas, move.adding, move.removing) == ((2, 1), (2, 3))


@pytest.mark.spec("CTRL-24")
def test_a_target_must_be_non_empty_distinct_registered_brokers():
    assert validate_target((2, 3), {1, 2, 3}) is None
    assert "empty" in validate_target((), {1, 2, 3})
    assert "Duplicate" in validate_target((2, 2), {1, 2, 3})
    assert "[4]" in validate_target((2, 4), {1, 2, 3})


@pytest.mark.spec("CTRL-25")
def test_the_reassignment_leader_stays_if_it_is_a_target_else_the_first_target_in_the_isr():
    s = state(1, 4, (1, 2, 3), replicas=(2, 3, 1))
    assert reassignment_leader(s, (1, 3), {1, 2, 3}) == 1
    assert reassignment_leader(s, (2, 3), {1, 2, 3}) == 2
    assert reassignment_leader(s, (2, 3), {1, 3}) == 3  # 2 is not alive
    assert reassignment_leader(state(1, 4, (1,)), (2, 3), {1, 2, 3}) is None


@pytest.mark.spec("CTRL-27")
def test_the_preferred_leader_is_the_first_replica_if_alive_and_in_the_isr():
    assert preferred_leader(state(2, 3, (1, 2, 3)), {1, 2, 3}) == 1
    assert preferred_leader(state(2, 3, (2, 3)), {1, 2, 3}) is None  # not in the ISR
    assert preferred_leader(state(2, 3, (1, 2, 3)), {2, 3}) is None  # not alive


@pytest.mark.spec("CTRL-28")
def test_the_imbalance_check_is_per_broker_and_above_the_percentage():
    tps = [("t", p) for p in range(10)]
    preferred = {tp: 1 for tp in tps} | {("u", 0): 2}
    leaders = {tp: 1 for tp in tps} | {("t", 0): 2, ("u", 0): 2}
    # broker 1: 1 of its 10 is led elsewhere, 10 %, not above 10 %: nothing to do
    assert imbalanced_partitions(preferred, leaders, 10) == []
    assert imbalanced_partitions(preferred, leaders, 9) == [("t", 0)]
    leaders[("t", 1)] = 3  # 20 % now
    assert imbalanced_partitions(preferred, leaders, 10) == [("t", 0), ("t", 1)]


@pytest.mark.spec("CTRL-33")
def test_a_target_of_another_size_changes_the_replication_factor():
    assert replication_factor_change((1, 2), (2, 3)) is None
    assert replication_factor_change((1, 2), (1, 2, 3)) == (
        "The replication factor is changed from 2 to 3"
    )

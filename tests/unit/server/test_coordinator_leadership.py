"""A coordinator follows its broker's leadership of its internal topic in ZooKeeper mode
(server/zk_mode.py `CoordinatorLeadership`): load on becoming leader, resign on losing it,
and neither reloads on a new leader epoch of a partition it still leads (TXN-21)."""

from __future__ import annotations

import pytest

from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.server.zk_mode import CoordinatorLeadership

TOPIC = "__transaction_state"
ME, OTHER = 1, 2


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def elect(self, partition: int) -> None:
        self.calls.append(("elect", partition))

    def resign(self, partition: int) -> None:
        self.calls.append(("resign", partition))

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        self.calls.append(("deleted", partitions))


def state(leader: int, epoch: int, topic: str = TOPIC, partition: int = 0) -> PartitionState:
    return PartitionState(topic, partition, leader, epoch, (ME, OTHER), (ME, OTHER))


@pytest.mark.spec("TXN-21")
def test_the_transaction_coordinator_loads_and_resigns_with_its_leadership():
    coordinator = Recorder()
    follow = CoordinatorLeadership(TOPIC, ME, coordinator)
    follow.on_partition_state(state(OTHER, 0))
    assert coordinator.calls == [], "not the leader: nothing to load"
    follow.on_partition_state(state(ME, 1))
    follow.on_partition_state(state(ME, 1, topic="other-topic"))
    assert coordinator.calls == [("elect", 0)]
    follow.on_partition_state(state(ME, 2))  # the controller shrank the ISR: still the leader
    assert coordinator.calls[1:] == [], "a new epoch of the same leader reloads nothing"
    follow.on_partition_state(state(OTHER, 3))
    assert coordinator.calls[1:] == [("resign", 0)]
    follow.on_partition_state(state(OTHER, 4))
    assert coordinator.calls[2:] == [], "resigned once"
    follow.on_partition_state(state(ME, 5))  # back: loads what the other leader wrote
    assert coordinator.calls[2:] == [("elect", 0)]


@pytest.mark.spec("TXN-21")
def test_the_group_coordinator_keeps_its_partition_across_leader_epochs():
    coordinator = Recorder()
    follow = CoordinatorLeadership("__consumer_offsets", ME, coordinator)
    follow.on_partition_state(state(ME, 1, topic="__consumer_offsets"))
    follow.on_partition_state(state(ME, 2, topic="__consumer_offsets"))  # an ISR shrink
    assert coordinator.calls == [("elect", 0)]
    follow.on_topic_deleted("__consumer_offsets", 3)
    assert coordinator.calls[1:] == [("deleted", 3)]

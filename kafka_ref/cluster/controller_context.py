"""What the active controller knows: its epoch, the live brokers, every partition's state.

Kafka's `ControllerContext` is the controller's cache of the cluster: read from ZooKeeper
when a broker becomes controller, kept up to date by every event the controller handles
(controller.py), and cleared when it resigns. Every part of the controller (broker_change.py,
reassignment.py, leader_balance.py, log_dir_events.py, partition_states.py) reads and
changes the cluster through one `ControllerContext`; none of them holds a copy. Only the
controller's event thread changes it, so it needs no lock (the metrics copy what they read).

* **The controller epoch** and the version of `/controller_epoch` that fences every write
  (CTRL-2, CTRL-4). The epoch only grows: each election increments it in ZooKeeper, and a
  broker that becomes controller again gets a higher one than any it had (CTRL-3).
* **The live brokers**: each registered broker's endpoint and broker epoch (KIP-380).
* **Topics**: each partition's assigned replicas, each topic's config overrides.
* **Partition states**: leader, leader epoch, ISR, with the version of the state znode,
  the partition epoch that AlterPartition checks (CTRL-22).
* **Reassignments** in progress, each a `Reassignment` from its original replicas (ORS) to
  its target replicas (TRS) (reassignment.py), and **replicas in failed log dirs**
  (log_dir_events.py), which count as not live for their partition only (CTRL-30).

Rules: CTRL-3, CTRL-30.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.common import TopicPartition


class Reassignment(NamedTuple):
    """One partition's move (Kafka: `ReplicaAssignment` with adding and removing)."""

    original: tuple[int, ...]  # ORS
    target: tuple[int, ...]  # TRS

    @property
    def replicas(self) -> tuple[int, ...]:
        """RS while it moves: the targets first, so the preferred replica is TRS's first."""
        return tuple(dict.fromkeys(self.target + self.original))

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(r for r in self.target if r not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(r for r in self.original if r not in self.target)

    @classmethod
    def from_znode(
        cls, replicas: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]
    ) -> Reassignment:
        original = tuple(r for r in replicas if r not in adding)
        target = tuple(r for r in replicas if r not in removing)
        return cls(original, target)


class ControllerContext:
    """The active controller's picture of the cluster (Kafka: `ControllerContext`)."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id  # the broker this controller runs on, for its log lines
        self.epoch = 0  # the controller epoch (CTRL-2)
        self.epoch_zk_version = -1  # /controller_epoch's version: the fence of writes (CTRL-4)
        self.live: dict[int, tuple[BrokerEndpoint, int]] = {}  # id -> (endpoint, broker epoch)
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.states: dict[TopicPartition, tuple[PartitionState, int]] = {}  # and znode version
        self.reassignments: dict[TopicPartition, Reassignment] = {}
        self.offline_replicas: dict[int, set[TopicPartition]] = {}  # broker -> in failed dirs

    def new_epoch(self, epoch: int, epoch_zk_version: int) -> None:
        """This broker won the election with `epoch` (CTRL-2): never one it had before."""
        assert epoch > self.epoch, f"controller epoch {epoch} after {self.epoch} (CTRL-3)"
        self.epoch, self.epoch_zk_version = epoch, epoch_zk_version

    def clear(self) -> None:
        """Forget the cluster: on resigning, and before reading it all again on failover."""
        self.live = {}
        self.assignments.clear()
        self.configs.clear()
        self.states.clear()
        self.reassignments.clear()
        self.offline_replicas.clear()

    def current(self, tp: TopicPartition) -> PartitionState:
        """The partition's state as sent to brokers: with its znode version."""
        state, version = self.states[tp]
        return dataclasses.replace(state, zk_version=version)

    def live_for(self, tp: TopicPartition) -> set[int]:
        """The live brokers whose replica of `tp` is not in a failed log dir (CTRL-30)."""
        return {b for b in self.live if tp not in self.offline_replicas.get(b, ())}

    def forget(self, topic: str) -> None:
        """A deleted topic: its assignment, configs, states and moves."""
        self.assignments.pop(topic, None)
        self.configs.pop(topic, None)
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]
            self.reassignments.pop(tp, None)

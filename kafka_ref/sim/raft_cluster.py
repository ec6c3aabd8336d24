"""A deterministic simulation of a KRaft quorum: the real core, a simulated world.

The voters are kafka-ref's `KafkaRaftClient`s, each with its `KafkaRaftLog` (a real
partition log on real files) and its `quorum-state` file; only time and the network are
simulated. **Observers** (RAFT-18), the brokers of a KRaft cluster, run the same client
with an id outside the voter set, and the voters as their bootstrap servers. Everything
comes from one seed: message delays, losses, duplicates and reordering (network.py's
`SimNetwork`), the crashes that strike while a node handles a message, the election
timeouts, the bootstrap servers observers ask. The same seed and the same schedule replay the same
history (SIM-1), which is how a counterexample found by hypothesis is read, shrunk and
fixed (as TigerBeetle's simulator runs its real replica, FoundationDB's its real code).

A **crash** is a power loss: the node's process and everything in flight to it are gone,
and its log keeps only what was fsynced (faults.py's `crash_log`); its `quorum-state`
file, written atomically, survives whole. The core fsyncs before it acknowledges, so a
crash loses nothing it counted. A **restart** recovers the log and reads the file again.

Each node's application (`ApplyingListener`) writes **snapshots** of what it applied when
the quorum config's `max_bytes_between_snapshots` says, and the nodes cut their logs behind
them by its retention (RAFT-21, RAFT-22): with small values a node that was away comes back
below its leader's log start and catches up by FetchSnapshot (RAFT-23, RAFT-24).

After every event a node handles, `RaftChecker` (raft_checks.py) checks election safety,
leader completeness and state machine safety, and that an observer never votes nor stands
for election; `check` adds log matching across the logs. `settle` is the liveness check:
once the network heals and every node is up, a leader is elected and the high watermark
covers a new entry on every voter and every observer within a bound.

Usage:

    sim = RaftSimulation(directory, voters=3, observers=2, seed=7)
    sim.run(2_000)                 # elect, replicate the workload
    sim.crash(sim.leader())        # power loss at the leader
    sim.run(1_000)                 # a new election
    sim.settle(5_000)              # heal, restart, and wait for progress
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, field

from kafka_ref.clock import ManualClock, ManualScheduler, TimerHandle
from kafka_ref.config import LogConfig
from kafka_ref.raft.election_state import FileQuorumStateStore
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC, KafkaRaftLog
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.messages import RaftMessage
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.raft.snapshot_generator import SnapshotGenerator
from kafka_ref.sim.faults import crash_log
from kafka_ref.sim.network import SimNetwork
from kafka_ref.sim.raft_checks import (
    ApplyingListener,
    RaftChecker,
    SafetyViolation,
    log_entries,
)

MEMORY_DIR = "/dev/shm"  # Linux's tmpfs


def scratch_directory() -> tempfile.TemporaryDirectory:
    """A temporary directory for a simulation's logs, in memory (tmpfs) where the machine
    has one. A simulated crash drops the unflushed data itself (faults.py), so a disk adds
    nothing to a simulation but the wall time of its fsyncs, most of a run's on a busy one."""
    memory = MEMORY_DIR if os.path.isdir(MEMORY_DIR) else None
    return tempfile.TemporaryDirectory(prefix="raft-sim-", dir=memory)


# Kafka's timeouts scaled down a hundredfold: elections in 100-200 ms of simulated time.
SIM_QUORUM_CONFIG = QuorumConfig(
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    election_backoff_max_ms=50,
    request_timeout_ms=50,
    fetch_max_bytes=1,  # one batch per fetch: replication in steps, where bugs hide
    fetch_backoff_ms=10,
)


@dataclass
class RaftSimConfig:
    """The world's faults: message delay, loss, duplication, reordering, and crashes."""

    min_delay_ms: int = 1
    max_delay_ms: int = 5
    drop_rate: float = 0.0
    duplicate_rate: float = 0.0
    reorder: bool = False
    crash_rate: float = 0.0  # chance that a node crashes right after handling a message
    restart_delay_ms: int = 100  # a crashed node comes back after up to this long
    workload_interval_ms: int = 25  # the application appends to the leader this often
    quorum: QuorumConfig = field(default_factory=lambda: SIM_QUORUM_CONFIG)


class RaftNode:
    """One voter or observer: its directory, and while it is up, its log, its client and its
    timer."""

    def __init__(self, node_id: int, directory: str) -> None:
        self.node_id = node_id
        self.dir = directory
        self.log: KafkaRaftLog | None = None
        self.client: KafkaRaftClient | None = None
        self.timer: TimerHandle | None = None
        self.application: ApplyingListener | None = None  # what its listener told it
        self.last_state: object = None  # the epoch state last recorded in the history

    @property
    def up(self) -> bool:
        return self.client is not None


class RaftSimulation:
    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        voters: int = 3,
        observers: int = 0,
        seed: int = 0,
        config: RaftSimConfig | None = None,
    ) -> None:
        self.config = config or RaftSimConfig()
        self.clock = ManualClock(0)
        self.scheduler = ManualScheduler(self.clock)
        self.rng = random.Random(seed)
        self.network = SimNetwork(
            self.scheduler,
            self.rng,
            min_delay_ms=self.config.min_delay_ms,
            max_delay_ms=self.config.max_delay_ms,
            drop_rate=self.config.drop_rate,
            duplicate_rate=self.config.duplicate_rate,
            fifo=not self.config.reorder,
        )
        self.voter_ids = tuple(range(voters))
        self.observer_ids = tuple(range(voters, voters + observers))  # ids past the voters'
        self.log_config = LogConfig(segment_bytes=64 * 1024, segment_index_bytes=4096)
        self.nodes = {
            i: RaftNode(i, os.path.join(os.fspath(directory), f"node-{i}", f"{METADATA_TOPIC}-0"))
            for i in self.voter_ids + self.observer_ids
        }
        self.checker = RaftChecker(observers=frozenset(self.observer_ids))
        self.history: list[str] = []
        self._values = 0
        for node_id in self.nodes:
            self.start(node_id)
        self._schedule_workload()

    # ------------------------------------------------------------------ nodes
    def record(self, what: str) -> None:
        self.history.append(f"{self.clock.milliseconds():>7} {what}")

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.up:
            return
        os.makedirs(node.dir, exist_ok=True)
        node.log = KafkaRaftLog.open(node.dir, self.log_config, self.clock)
        store = FileQuorumStateStore(node.dir)

        def send(dst: int, message: RaftMessage) -> None:
            self.network.send(node_id, dst, message)

        node.client = self._guarded(
            node_id,
            lambda: KafkaRaftClient(
                node_id,
                self.voter_ids,
                node.log,
                store,
                self.config.quorum,
                self.rng,
                send,
                self.clock.milliseconds(),
            ),
        )
        quorum = self.config.quorum
        generator = SnapshotGenerator(
            quorum.max_bytes_between_snapshots,
            quorum.max_snapshot_interval_ms,
            self.clock.milliseconds(),
        )
        node.application = ApplyingListener(
            node_id, self.checker, lambda: node.client, node.log, generator
        )
        node.client.register(node.application)
        self.checker.restarted(node_id)
        self.network.attach(node_id, lambda src, message: self._deliver(node_id, src, message))
        self.record(f"start {node_id}: {node.client.state!r}, log end {node.log.end_offset}")
        self._after(node)

    def crash(self, node_id: int | None) -> None:
        """Power loss: the node stops, its unflushed data is lost."""
        if node_id is None or not self.nodes[node_id].up:
            return
        node = self.nodes[node_id]
        self.network.detach(node_id)
        if node.timer is not None:
            node.timer.cancel()
        lost = crash_log(node.log.log, lose_unflushed=True)
        self.record(f"crash {node_id} ({lost} unflushed bytes lost)")
        node.client = node.log = node.timer = None

    def restart(self, node_id: int | None) -> None:
        if node_id is not None:
            self.crash(node_id)
            self.start(node_id)

    def resign(self, node_id: int | None) -> None:
        """A graceful shutdown's first half: the leader resigns (EndQuorumEpoch)."""
        node = self.nodes.get(node_id) if node_id is not None else None
        if node is not None and node.up:
            now = self.clock.milliseconds()
            self._guarded(node_id, lambda: node.client.resign(now))
            self._after(node)

    def isolate(self, node_id: int | None) -> None:
        if node_id is not None:
            for other in self.nodes:
                if other != node_id:
                    self.network.cut(node_id, other)
            self.record(f"isolate {node_id}")

    def heal(self) -> None:
        self.network.heal()
        self.record("heal")

    # ------------------------------------------------------------------ driving
    def _guarded(self, node_id: int, action):
        """Run the core; an exception it raises is a violation of what it asserts."""
        try:
            return action()
        except SafetyViolation:
            raise
        except Exception as err:  # the core's assertions: a broken invariant
            raise SafetyViolation("core invariant", f"node {node_id}: {err!r}") from err

    def _deliver(self, node_id: int, src: int, message: RaftMessage) -> None:
        node = self.nodes[node_id]
        now = self.clock.milliseconds()
        self._guarded(node_id, lambda: node.client.handle(src, message, now))
        self._after(node)
        if self.config.crash_rate and self.rng.random() < self.config.crash_rate:
            self.crash(node_id)
            delay = self.rng.randint(1, max(self.config.restart_delay_ms, 1))
            self.scheduler.schedule(delay / 1000, lambda: self.start(node_id))

    def _poll(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.up:
            return
        now = self.clock.milliseconds()
        self._guarded(node_id, lambda: node.client.poll(now))
        self._after(node)

    def _after(self, node: RaftNode) -> None:
        """Check what the node's event changed, and set its next poll."""
        client = node.client
        if client.state is not node.last_state:
            node.last_state = client.state
            self.record(f"node {node.node_id}: {client.state!r}")
        self.checker.observe(node.node_id, client, node.log)
        now = self.clock.milliseconds()
        self._guarded(node.node_id, lambda: node.application.maybe_snapshot(now))
        if node.timer is not None:
            node.timer.cancel()
        timeout = client.poll_timeout_ms(self.clock.milliseconds())
        node.timer = self.scheduler.schedule(timeout / 1000, lambda: self._poll(node.node_id))

    def _schedule_workload(self) -> None:
        interval = self.config.workload_interval_ms
        if interval > 0:
            self.scheduler.schedule(interval / 1000, self._workload)

    def _workload(self) -> None:
        self.append()
        self._schedule_workload()

    def append(self, count: int = 1) -> None:
        """The application appends `count` new values at every node that thinks it leads."""
        for node in self.nodes.values():
            if node.up and isinstance(node.client.state, LeaderState):
                values = []
                for _ in range(count):
                    self._values += 1
                    values.append(b"v%d" % self._values)
                now = self.clock.milliseconds()
                self._guarded(node.node_id, lambda n=node, v=values, t=now: n.client.append(v, t))
                self._after(node)

    def run(self, ms: int) -> None:
        self.scheduler.advance(ms)
        self.check()

    def check(self) -> None:
        """Log matching across the nodes that are up (the rest is checked per event)."""
        self.checker.check_logs((n.node_id, n.log) for n in self.nodes.values() if n.up)

    # ------------------------------------------------------------------ reading
    def leader(self) -> int | None:
        """The node leading the highest epoch, if any."""
        leaders = [
            (n.client.epoch, n.node_id)
            for n in self.nodes.values()
            if n.up and isinstance(n.client.state, LeaderState)
        ]
        return max(leaders)[1] if leaders else None

    def followers(self) -> list[int]:
        leader = self.leader()
        return [i for i in self.voter_ids if i != leader and self.nodes[i].up]

    def observers(self) -> list[int]:
        """The observers that are up."""
        return [i for i in self.observer_ids if self.nodes[i].up]

    def down(self) -> list[int]:
        return [i for i, node in self.nodes.items() if not node.up]

    def entries(self, node_id: int) -> list:
        return log_entries(self.nodes[node_id].log)

    def describe(self) -> str:
        lines = []
        for node in self.nodes.values():
            role = "observer" if node.node_id in self.observer_ids else "node"
            if not node.up:
                lines.append(f"{role} {node.node_id}: down")
                continue
            lines.append(
                f"{role} {node.node_id}: {node.client.state!r} log [{node.log.start_offset}, "
                f"{node.log.end_offset}) snapshot {node.log.latest_snapshot_id} "
                f"last epoch {node.log.last_fetched_epoch} hw {node.client.high_watermark}"
            )
        return "\n".join(lines)

    # ------------------------------------------------------------------ liveness
    def settle(self, bound_ms: int) -> int:
        """Heal everything and wait: within `bound_ms` a leader must be elected and commit a
        new entry on every voter, and every observer must have it too (RAFT-13). Returns
        the time it took."""
        self.network.heal()
        self.network.drop_rate = self.network.duplicate_rate = 0.0
        self.config.crash_rate = 0.0
        for node_id in self.down():
            self.start(node_id)
        start = self.clock.milliseconds()
        target = None
        while self.clock.milliseconds() - start < bound_ms:
            self.run(10)
            leader = self.leader()
            if leader is None:
                continue
            log = self.nodes[leader].log
            if target is None or self.nodes[leader].client.epoch != target[1]:
                target = (log.end_offset + 1, self.nodes[leader].client.epoch)
            if all(node.client.high_watermark >= target[0] for node in self.nodes.values()):
                return self.clock.milliseconds() - start
        raise SafetyViolation(
            "liveness", f"no progress within {bound_ms} ms after healing\n{self.describe()}"
        )

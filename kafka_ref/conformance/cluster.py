"""Several brokers for the replication rules: the suite's own cluster, or the target's brokers.

Most rules can be judged on one broker. The replication rules cannot: that a consumer never
sees past the high watermark (REPL-2), that acks=all waits for every in-sync replica
(REPL-4), that a follower refuses a produce (CTRL-10), that a new leader is elected when
the old one dies (CTRL-6) only mean something with followers. So the suite gets several
brokers in one of two ways:

* the target already has several (Metadata lists more than one broker: the probed
  capability `multi-broker`, e.g. `--target bootstrap=HOST:PORT` of a running cluster). The
  suite can talk to each broker, but it cannot kill one;
* the target can start a cluster of its own kind (the declared capability `cluster`). The
  kafka_ref targets start, once per pytest session, Debian's ZooKeeper and three kafka-ref
  brokers (`SuiteCluster`; for `kafka_ref:mutant=NAME` all three run the mutant) with a
  ZooKeeper session timeout of 3 s, so that a crashed broker leaves the ISR within seconds.
  The apache_kafka target starts three Apache Kafka brokers and one KRaft controller of
  their own (`ApacheKafkaCluster`), with a broker session of 3 s at the controller: the
  controller plays ZooKeeper's part, fencing a broker whose heartbeats stop. Tests may kill
  (SIGKILL: a crash), stop (SIGTERM) or pause (SIGSTOP: alive, but silent) brokers;
  `heal()` brings every broker back before the next test.

A test sees a `Brokers`: each broker's id and address (from Metadata, as a client learns
them), a `Wire` to any of them, a partition's leader, epoch and ISR as Metadata v7 reports
them, and, for the suite's own cluster, the processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from kafka_ref.conformance.wire import Wire
from kafka_ref.tools.cluster import BrokerProcess, ZooKeeperServer, zookeeper_installed
from kafka_ref.tools.server_process import ServerProcess

SIZE = 3
# zookeeper.session.timeout.ms: a killed or paused broker is dropped after 3 s (ZooKeeper's
# tickTime is 500 ms, so it allows sessions of 1-10 s).
SESSION_TIMEOUT_MS = 3000
# The same for Apache Kafka in KRaft: the controller fences a broker whose heartbeats
# (every 500 ms) stop for 3 s, and takes it out of every ISR (Kafka's
# ReplicationControlManager.handleBrokerFenced); a follower alive but 3 s behind leaves the
# ISR at its leader (replica.lag.time.max.ms, Kafka's Partition.maybeShrinkIsr).
KRAFT_SESSION_CONFIGS: dict[str, object] = {
    "broker.session.timeout.ms": SESSION_TIMEOUT_MS,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": SESSION_TIMEOUT_MS,
}
METADATA_VERSION = 7  # the first with leader epochs (KIP-320)


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """Poll `condition` until it returns something truthy; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what or condition}")
        time.sleep(0.1)


class Brokers:
    """The brokers of one cluster, as the suite sees them; `processes` when it started them."""

    def __init__(
        self, bootstrap: list[tuple[str, int]], processes: dict[int, ServerProcess] | None = None
    ) -> None:
        self.bootstrap_addresses = bootstrap
        self.processes = processes or {}
        self.paused: set[int] = set()

    @property
    def can_kill(self) -> bool:
        return bool(self.processes)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self._reachable())

    def _reachable(self) -> list[tuple[str, int]]:
        if self.processes:
            return [("127.0.0.1", b.port) for i, b in self.processes.items() if self.up(i)]
        return self.bootstrap_addresses

    def up(self, broker_id: int) -> bool:
        """Running and not paused (only known for the suite's own brokers)."""
        process = self.processes.get(broker_id)
        return process is None or (process.alive and broker_id not in self.paused)

    def any_wire(self) -> Wire:
        """A connection to the first broker that answers."""
        error: OSError | None = None
        for host, port in self._reachable():
            try:
                return Wire(host, port)
            except OSError as err:
                error = err
        raise error or OSError("no broker to connect to")

    def addresses(self) -> dict[int, tuple[str, int]]:
        """broker id -> (host, port): the suite's own, or those Metadata lists."""
        if self.processes:
            return {i: ("127.0.0.1", b.port) for i, b in self.processes.items()}
        with self.any_wire() as w:
            return {b.node_id: (b.host, b.port) for b in w.metadata([]).brokers}

    def ids(self) -> list[int]:
        return sorted(self.addresses())

    def wire(self, broker_id: int) -> Wire:
        host, port = self.addresses()[broker_id]
        return Wire(host, port)

    def metadata(self, topics: list[str] | None = None, via: int | None = None) -> Any:
        """Metadata v7 (leader epochs) from broker `via`, or from any broker."""
        with self.wire(via) if via is not None else self.any_wire() as w:
            return w.metadata(topics, version=METADATA_VERSION)

    def partition(self, topic: str, index: int, via: int | None = None) -> Any:
        """The partition's Metadata (leader_id, leader_epoch, replica_nodes, isr_nodes...);
        None from a broker that does not know it yet (one that has just started)."""
        (t,) = self.metadata([topic], via).topics
        return next((p for p in t.partitions if p.partition_index == index), None)

    def wait_leader(self, topic: str, index: int, not_on: tuple[int, ...] = ()) -> Any:
        """The partition once every reachable broker reports the same leader, not one of
        `not_on` (a broker just killed), so that a test can address it on any broker."""

        def agreed() -> Any:
            seen = [self.partition(topic, index, via=i) for i in self.ids() if self.up(i)]
            if None in seen:
                return None
            leaders = {(p.leader_id, p.leader_epoch) for p in seen}
            ok = len(leaders) == 1 and seen[0].leader_id >= 0 and seen[0].leader_id not in not_on
            return ok and seen[0]

        return wait_for(agreed, what=f"one leader of {topic}-{index} on every broker")

    def create_topic(self, name: str, partitions: int, replicas: int, **configs: str) -> int:
        """CreateTopics with a replication factor; waits until every broker knows the
        leaders. The error code (0 = created)."""
        with self.any_wire() as w:
            code = w.create_topic(name, partitions, replication_factor=replicas, **configs)
        if code == 0:
            for p in range(partitions):
                self.wait_leader(name, p)
        return code

    # -------------------------------------------------------------- the suite's own brokers
    def kill(self, broker_id: int) -> None:
        """SIGKILL: a crash. Its ZooKeeper session ends only after the session timeout."""
        self.processes[broker_id].stop(signal.SIGKILL)

    def stop(self, broker_id: int) -> None:
        """SIGTERM: a clean shutdown."""
        self.processes[broker_id].stop(signal.SIGTERM)

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped or killed broker again on its data."""
        self.processes[broker_id].start()

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the process keeps its sockets and its ZooKeeper session but does nothing."""
        os.kill(self.processes[broker_id].pid, signal.SIGSTOP)
        self.paused.add(broker_id)

    def resume(self, broker_id: int) -> None:
        os.kill(self.processes[broker_id].pid, signal.SIGCONT)
        self.paused.discard(broker_id)

    def heal(self) -> None:
        """Every broker running and registered, and every one seeing all of them.

        A broker paused past its session timeout has lost its registration; one that does
        not register again in time is killed and restarted."""
        for i in list(self.paused):
            self.resume(i)
        _each(_start, [b for b in self.processes.values() if not b.alive])
        try:
            self.wait_registered(timeout=15)
        except AssertionError:
            views = [self.registered(i) for i in self.ids()]
            lost = [i for i in self.ids() if sum(i not in v for v in views) * 2 > len(views)]
            for i in lost:
                self.kill(i)
            _each(_start, [self.processes[i] for i in lost])
            self.wait_registered()

    def registered(self, via: int) -> set[int]:
        """The brokers `via`'s Metadata lists (empty if it cannot be reached)."""
        try:
            return {b.node_id for b in self.metadata([], via).brokers}
        except OSError:
            return set()

    def wait_registered(self, timeout: float = 30.0) -> None:
        everyone = set(self.ids())

        def all_see_all() -> bool:
            return all(self.registered(i) == everyone for i in everyone) and (
                self.metadata([]).controller_id in everyone
            )

        wait_for(all_see_all, timeout, f"brokers {sorted(everyone)} to see each other")


def _start(process: ServerProcess) -> None:
    process.start()


def _stop(process: ServerProcess) -> None:
    process.stop()


def _each(action: Callable[[ServerProcess], object], processes: list[ServerProcess]) -> None:
    """Start or stop brokers side by side: each start waits for its port, each stop for
    the process to exit, so three in a row would cost three times as long."""
    errors: list[Exception] = []

    def run(process: ServerProcess) -> None:
        try:
            action(process)
        except Exception as err:  # reported below, in the caller's thread
            errors.append(err)

    threads = [threading.Thread(target=run, args=(p,)) for p in processes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


class SuiteCluster(Brokers):
    """Debian's ZooKeeper and SIZE kafka-ref brokers in a temporary directory."""

    def __init__(self, configs: dict[str, object], launcher: tuple[str, ...]) -> None:
        self.workdir = tempfile.mkdtemp(prefix="kafka-ref-conformance-cluster-")
        self.zookeeper = ZooKeeperServer(os.path.join(self.workdir, "zookeeper"))
        configs = {**configs, "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS}
        connect = self.zookeeper.connect
        processes = {
            i: BrokerProcess(
                i, os.path.join(self.workdir, f"broker-{i}"), connect, None, configs, launcher
            )
            for i in range(1, SIZE + 1)
        }
        super().__init__([], processes)

    def start(self) -> None:
        if not zookeeper_installed():
            raise RuntimeError("ZooKeeper is not installed: apt-get install zookeeper")
        self.zookeeper.start()
        _each(_start, list(self.processes.values()))
        self.wait_registered()

    def close(self) -> None:
        for i in list(self.paused):
            self.resume(i)
        _each(_stop, list(self.processes.values()))
        self.zookeeper.stop()
        if not os.environ.get("KAFKA_REF_CONFORMANCE_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)


class ApacheKafkaCluster(Brokers):
    """SIZE Apache Kafka brokers and one KRaft controller of their own, in a temporary
    directory. The controller is never killed: like the kafka-ref cluster's ZooKeeper, it
    outlives any broker, so a test may kill two brokers and still see the third's view."""

    def __init__(self, configs: dict[str, object]) -> None:
        from kafka_ref.apache.cluster import ApacheKafka

        self.workdir = tempfile.mkdtemp(prefix="apache-kafka-conformance-cluster-")
        self.kafka = ApacheKafka(
            brokers=SIZE,
            configs={**configs, **KRAFT_SESSION_CONFIGS},
            workdir=self.workdir,
            dedicated_controller=True,
        )
        super().__init__([], {node.node_id: node for node in self.kafka.nodes})

    def start(self) -> None:
        self.kafka.start()
        self.wait_registered()

    def close(self) -> None:
        for i in list(self.paused):
            self.resume(i)
        self.kafka.stop()
        if not os.environ.get("KAFKA_REF_CONFORMANCE_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

"""A real cluster for the whole session: a ZooKeeper (java) and 3 kafka-ref broker processes.

`cluster` starts Debian's ZooKeeper on a free port in a temp directory (tickTime 500 ms,
so short sessions are allowed) and brokers 1, 2, 3 with `zookeeper.session.timeout.ms`
3000, so that a kill -9 is noticed within about 3 s. Tests may stop or kill brokers; the
`cluster` fixture restarts whatever a test left stopped before the next test runs.

The test process has its own ZooKeeper client (`cluster.zk`, a `KafkaZkClient`) to read the
znodes as they are, and talks to single brokers with kafka-ref's blocking connection.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
from typing import Any

import kazoo.exceptions
import kazoo.protocol.connection
import kazoo.retry
import pytest

from kafka_ref.client.connection import BrokerConnection, NetworkError, RequestTimedOutError
from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.protocol.messages import ApiKey, MetadataRequest
from kafka_ref.tools.cluster import BrokerProcess, ZooKeeperServer, zookeeper_installed
from kafka_ref.tools.server_process import ServerProcess, free_port

# kazoo's connection thread draws its ping and reconnect jitter from the global `random`
# while this session's ZooKeeper client lives, that is, while every later test runs.
# Hypothesis flags any change of the global `random` during its draws as a strategy using
# `random` (HypothesisDeprecationWarning, an error in the future), so kazoo's two modules
# get a generator of their own: the same calls, their own state.
kazoo.protocol.connection.random = random.Random()
kazoo.retry.random = random.Random()

SESSION_TIMEOUT_MS = 3000
BROKER_CONFIGS = {
    "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "share.coordinator.state.topic.num.partitions": 3,
    "group.initial.rebalance.delay.ms": 0,
    # Kafka's default moves leaders back to their preferred replicas every 300 s (CTRL-28):
    # a session runs longer than that, and tests that bounce brokers expect the leaders they
    # saw elected. The automatic rebalance has its own cluster (test_reassignment.py).
    "auto.leader.rebalance.enable": "false",
}
_names = itertools.count()


class Cluster:
    def __init__(self, zookeeper: ZooKeeperServer, base: str) -> None:
        self.zookeeper = zookeeper
        self.metrics_ports = {i: free_port() for i in (1, 2, 3)}  # each serves its metrics
        self.brokers = {
            i: BrokerProcess(
                i,
                f"{base}/broker-{i}",
                zookeeper.connect,
                configs={
                    **BROKER_CONFIGS,
                    "metrics.listener": f"http://127.0.0.1:{self.metrics_ports[i]}",
                },
            )
            for i in (1, 2, 3)
        }
        self.zk = KafkaZkClient(zookeeper.connect)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.zk.start(timeout=60)  # generous: CI machines are busy
        for broker in self.brokers.values():
            broker.start()
        self.wait_registered()

    def wait_registered(self) -> None:
        """Every running broker registered, a controller elected, brokers see each other.
        If they do not, the error says how ZooKeeper and each broker were, with their logs'
        last lines: the next test fails for the same reason, and this one should say it."""
        running = sorted(i for i, b in self.brokers.items() if b.alive)
        try:
            wait_for(
                lambda: self._read(self.zk.get_broker_ids) == running, what=f"brokers {running}"
            )
            wait_for(lambda: self._read(self.zk.get_controller_id) in running, what="a controller")
            for i in running:
                wait_for(
                    lambda i=i: sorted(b.node_id for b in self._metadata_or_none(i)) == running,
                    what=f"broker {i} to see brokers {running}",
                )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.diagnosis()}") from None

    def _metadata_or_none(self, broker_id: int) -> list:
        """The brokers broker `broker_id` knows; none while it does not answer."""
        try:
            return self.metadata(broker_id).brokers
        except (OSError, NetworkError, RequestTimedOutError):
            return []

    def diagnosis(self) -> str:
        """ZooKeeper's and each broker's process state and last log lines."""
        parts = [
            f"ZooKeeper pid {self.zookeeper.pid} {process_state(self.zookeeper)}, "
            f"serving: {self.zookeeper.serving()}\n{self.zookeeper.tail(15)}"
        ]
        for i, broker in self.brokers.items():
            parts.append(f"broker {i} {process_state(broker)}\n{broker.tail(15)}")
        return "\n".join(parts)

    def _read(self, read: Any) -> Any:
        """A read of the test's own ZooKeeper client; None while that client reconnects (a
        test that pauses ZooKeeper past the session expires this client's session too, and a
        broker may be up before the client has its new session)."""
        try:
            return read()
        except (kazoo.exceptions.ConnectionLoss, kazoo.exceptions.SessionExpiredError):
            return None

    def ensure_running(self) -> None:
        """Thaw what a test left paused (a failed test may not reach its SIGCONT), restart
        what it left stopped, and wait until the cluster is whole again."""
        thawed = [p for p in (self.zookeeper, *self.brokers.values()) if is_paused(p)]
        for process in thawed:
            os.kill(process.pid, signal.SIGCONT)
        stopped = [b for b in self.brokers.values() if not b.alive]
        for broker in stopped:
            broker.start()
        if stopped or thawed:
            self.wait_registered()

    def stop(self, broker_id: int, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: clean (the session closes at once); SIGKILL: a crash (session timeout)."""
        self.brokers[broker_id].stop(sig)

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.stop()
        self.zk.close()

    # ------------------------------------------------------------------ reading
    def live(self) -> list[int]:
        return [i for i, b in self.brokers.items() if b.alive]

    def controller(self) -> tuple[int | None, int]:
        return self.zk.get_controller_id(), self.zk.get_controller_epoch()[0]

    def state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's state in ZooKeeper; None while the test's client reconnects."""
        found = self._read(lambda: self.zk.get_topic(topic))
        replicas = found[0].get(partition, ()) if found else ()
        current = self._read(lambda: self.zk.get_partition_state(topic, partition, replicas))
        return None if current is None else current[0]

    def connection(self, broker_id: int) -> BrokerConnection:
        broker = self.brokers[broker_id]
        return BrokerConnection("127.0.0.1", broker.port, node_id=broker_id).connect()

    def request(self, broker_id: int, api_key: int, body: Any, version: int | None = None) -> Any:
        """`body` to broker `broker_id`, at `version` (else the newest both sides speak)."""
        conn = self.connection(broker_id)
        try:
            return conn.wait(conn.send(api_key, body, version=version), 10)
        finally:
            conn.close()

    def metadata(self, broker_id: int, topics: list[str] | None = None) -> Any:
        body = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return self.request(broker_id, ApiKey.METADATA, body)

    def bootstrap(self) -> str:
        return ",".join(self.brokers[i].bootstrap for i in self.live())


def process_state(process: ServerProcess) -> str:
    """'running', 'paused' (SIGSTOP), or 'exited with N'."""
    if not process.alive:
        return f"exited with {process.proc.returncode if process.proc else None}"
    return "paused" if is_paused(process) else "running"


def is_paused(process: ServerProcess) -> bool:
    """Stopped by SIGSTOP: a thread's state letter in /proc/PID/task/*/stat is T."""
    if not process.alive:
        return False
    tasks = f"/proc/{process.pid}/task"
    try:
        for task in os.listdir(tasks):
            with open(f"{tasks}/{task}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    return True
    except OSError:
        pass
    return False


@pytest.fixture(scope="session")
def _cluster(tmp_path_factory):
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    base = tmp_path_factory.mktemp("cluster")
    zookeeper = ZooKeeperServer(str(base / "zookeeper")).start()
    cluster = Cluster(zookeeper, str(base))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        zookeeper.stop()


@pytest.fixture
def cluster(_cluster):
    """The session's cluster with all three brokers running."""
    _cluster.ensure_running()
    return _cluster


@pytest.fixture
def topic_name(request) -> str:
    return f"{request.node.name.replace('[', '-').replace(']', '')}-{next(_names)}"[:200]

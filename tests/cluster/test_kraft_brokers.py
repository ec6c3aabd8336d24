"""Three KRaft nodes in combined mode (`process.roles=broker,controller`), in one event loop:
each a ControllerServer (a voter of the quorum, and the active controller when it leads)
and a Broker that shares its RaftManager. A real client (confluent-kafka) creates a topic of
replication factor 3 through a broker, which forwards it to the active controller,
produces with acks=all and consumes; a broker that stops heartbeating is fenced and its
leaderships move; a broker that stops cleanly moves them first.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.conformance.wire import Wire
from kafka_ref.server.broker import Broker
from kafka_ref.server.controller_node import controller_server
from kafka_ref.server.controller_server import ControllerServer
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.tools.server_process import free_port
from kafka_ref.tools.storage import format_directories

pytestmark = pytest.mark.timeout(180)

SESSION_TIMEOUT_MS = 2000  # broker.session.timeout.ms: a silent broker is fenced after this
WAIT_S = 60.0


class CombinedCluster:
    """Nodes 1..3, each controller and broker, on one event loop in a daemon thread."""

    def __init__(
        self, directory: str, nodes: int = 3, overrides: dict[int, dict[str, str]] | None = None
    ) -> None:
        self.broker_ports = {n: free_port() for n in range(1, nodes + 1)}
        controller_ports = {n: free_port() for n in self.broker_ports}
        voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in controller_ports.items())
        cluster_id = new_cluster_id()
        self.configs: dict[int, KafkaConfig] = {}
        for node, port in self.broker_ports.items():
            config = KafkaConfig.from_props(
                {
                    "process.roles": "broker,controller",
                    "node.id": str(node),
                    "controller.quorum.voters": voters,
                    "listeners": (
                        f"PLAINTEXT://127.0.0.1:{port},"
                        f"CONTROLLER://127.0.0.1:{controller_ports[node]}"
                    ),
                    "controller.listener.names": "CONTROLLER",
                    "log.dirs": os.path.join(directory, f"node-{node}"),
                    "controller.quorum.election.timeout.ms": "300",
                    "controller.quorum.fetch.timeout.ms": "600",
                    "controller.quorum.request.timeout.ms": "500",
                    "controller.quorum.election.backoff.max.ms": "200",
                    "broker.heartbeat.interval.ms": "200",
                    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "offsets.topic.num.partitions": "3",
                    "transaction.state.log.num.partitions": "3",
                    "group.initial.rebalance.delay.ms": "0",
                    "replica.lag.time.max.ms": "2000",
                    **(overrides or {}).get(node, {}),  # e.g. a node's several log.dirs
                }
            )
            format_directories(config, cluster_id, ignore_formatted=False)
            self.configs[node] = config
        self.servers: dict[int, ControllerServer] = {}
        self.brokers: dict[int, Broker] = {}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine, timeout: float = WAIT_S):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def start(self) -> CombinedCluster:
        self._thread.start()

        async def start() -> None:
            for node, config in self.configs.items():
                server = self.servers[node] = controller_server(config)
                await server.bind()
                await server.start()
            for node, config in self.configs.items():
                self.brokers[node] = Broker(config, raft=self.servers[node].raft)
            await asyncio.gather(*(broker.start() for broker in self.brokers.values()))

        self.run(start())
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for n, p in self.broker_ports.items() if self.live(n))

    def live(self, node: int) -> bool:
        return self.brokers[node].started

    def crash(self, node: int) -> None:
        """The broker stops without a controlled shutdown: its heartbeats just end."""

        async def crash() -> None:
            broker = self.brokers[node]
            await broker.kraft_mode.lifecycle.close()
            await broker.stop()

        self.run(crash())

    def stop(self, node: int) -> None:
        self.run(self.brokers[node].stop())

    def restart(self, node: int) -> None:
        """A new broker process on the node's controller, as after a restart."""

        async def restart() -> None:
            broker = self.brokers[node] = Broker(self.configs[node], raft=self.servers[node].raft)
            await broker.start()

        self.run(restart())

    def close(self) -> None:
        async def close() -> None:
            for broker in self.brokers.values():
                await broker.stop()
            for server in self.servers.values():
                await server.stop()

        try:
            self.run(close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

    def metadata(self, via: int, topic: str):
        """A Metadata answer from broker `via`: {partition: (leader, isr)}, and its brokers."""
        with Wire("127.0.0.1", self.broker_ports[via]) as wire:
            answer = wire.metadata([topic], 9, False)
        [described] = answer.topics
        partitions = {
            p.partition_index: (p.leader_id, tuple(p.isr_nodes)) for p in described.partitions
        }
        return partitions, sorted(b.node_id for b in answer.brokers), answer.controller_id


def wait_for(check, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path):
    nodes = CombinedCluster(str(tmp_path)).start()
    yield nodes
    nodes.close()


def produce(bootstrap: str, topic: str, values: list[bytes], idempotent: bool = False) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "enable.idempotence": idempotent,  # a producer id from the controller's blocks
        }
    )
    failed = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _m: err and failed.append(err))
    assert producer.flush(30) == 0 and not failed, failed


def consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def create(
    bootstrap: str, topic: str, partitions: int, replicas: int, configs: dict | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, replicas, config=configs or {})
    [future] = admin.create_topics([new]).values()
    future.result(30)


@pytest.mark.spec("KBROKER-9", "KBROKER-11")
def test_a_topic_of_three_replicas_is_created_through_a_broker_written_and_read(cluster):
    # every broker serves: registered, caught up, unfenced; each sees the three
    for node in cluster.brokers:
        assert cluster.brokers[node].kraft_mode.lifecycle.unfenced.is_set()
    create(cluster.bootstrap, "events", 3, 3)  # forwarded to the active controller
    partitions, brokers, controller = wait_for(
        lambda: (
            (m := cluster.metadata(1, "events"))[0]
            and all(len(i) == 3 for _, i in m[0].values())
            and m
        ),
        "three in-sync replicas",
    )
    assert brokers == [1, 2, 3] and controller in brokers  # a broker, never a controller
    assert sorted(leader for leader, _ in partitions.values()) == [1, 2, 3]  # spread
    values = [b"v%d" % i for i in range(300)]
    produce(cluster.bootstrap, "events", values, idempotent=True)
    assert sorted(consume(cluster.bootstrap, "events", len(values))) == sorted(values)


@pytest.mark.spec("KBROKER-4", "KBROKER-13")
def test_a_broker_that_stops_cleanly_hands_its_leaderships_over_first(cluster):
    create(cluster.bootstrap, "orders", 3, 3)
    wait_for(lambda: all(len(i) == 3 for _, i in cluster.metadata(1, "orders")[0].values()), "ISRs")
    leaders = {leader for leader, _ in cluster.metadata(1, "orders")[0].values()}
    assert 3 in leaders
    cluster.stop(3)  # a controlled shutdown: the controller moves its leaderships away
    # at once, as the stop returns: before any session timeout could have fenced it
    partitions, brokers, _ = cluster.metadata(1, "orders")
    assert all(leader != 3 and 3 not in isr for leader, isr in partitions.values()), partitions
    assert brokers == [1, 2]
    produce(cluster.bootstrap, "orders", [b"after"])
    assert consume(cluster.bootstrap, "orders", 1) == [b"after"]


@pytest.mark.spec("KBROKER-3", "KBROKER-4")
def test_a_silent_broker_is_fenced_and_its_leaderships_move(cluster):
    create(cluster.bootstrap, "clicks", 3, 3)
    wait_for(lambda: all(len(i) == 3 for _, i in cluster.metadata(2, "clicks")[0].values()), "ISRs")
    produce(cluster.bootstrap, "clicks", [b"before-%d" % i for i in range(30)])
    led = [p for p, (leader, _) in cluster.metadata(2, "clicks")[0].items() if leader == 1]
    assert led
    crashed = time.monotonic()
    cluster.crash(1)
    partitions, brokers, _ = wait_for(
        lambda: (
            (m := cluster.metadata(2, "clicks"))[0]
            and all(leader not in (1, -1) for leader, _ in m[0].values())
            and m
        ),
        "new leaders",
    )
    moved = time.monotonic() - crashed
    # fenced once its session timed out, not before: nobody told the controller (its last
    # heartbeat was at most an interval before the crash)
    assert moved >= (SESSION_TIMEOUT_MS - 200) / 1000, moved
    assert brokers == [2, 3] and all(1 not in isr for _, isr in partitions.values())
    produce(cluster.bootstrap, "clicks", [b"after-%d" % i for i in range(30)])
    values = consume(cluster.bootstrap, "clicks", 60)
    assert len(values) == 60 and {v.split(b"-")[0] for v in values} == {b"before", b"after"}

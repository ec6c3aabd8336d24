"""A real Apache Kafka on loopback: one KRaft node, or three brokers with a controller quorum.

Kafka 4 keeps its metadata in a Raft quorum of controllers (KRaft, KIP-500/KIP-595); there is
no ZooKeeper. A node has `process.roles`: `broker`, `controller`, or both ("combined mode",
what Kafka's quickstart runs). kafka-ref starts Apache Kafka the way its documentation does:

1. every node gets a `server.properties`: its `node.id`, a client listener (PLAINTEXT) and a
   controller listener (CONTROLLER), `controller.quorum.voters` naming the voters (static
   quorum), `log.dirs`;
2. every node's log directory is formatted with the cluster's id, as `kafka-storage.sh format
   -t CLUSTER_ID -c server.properties` does (`kafka.tools.StorageTool`): it writes
   `meta.properties` and the bootstrap checkpoint of the metadata log;
3. every node runs `kafka.Kafka server.properties`; the cluster is ready when a Metadata
   request lists every broker.

One node is combined (broker and controller, `--standalone`: a quorum of one). Three nodes
are three combined nodes: three brokers, and a quorum of three controllers that survives the
loss of one. Replication factors of Kafka's internal topics follow the number of brokers.

`dedicated_controller=True` runs the quorum apart instead, as production clusters do: one
controller-only node (`process.roles=controller`, a static quorum of one) and broker-only
nodes. Then any number of brokers may be killed while the controller keeps fencing them and
electing leaders, as a ZooKeeper does for kafka-ref's brokers. `scram_users` are written at
format time (`kafka-storage.sh format --add-scram`, KIP-900): the first SCRAM users a
cluster that requires authentication can have, before any client can log in to add more.
`node_configs` adds configs to one node's `server.properties` only: each broker's own
`broker.rack`, for reads from a follower in the client's rack (KIP-392).

    kafka-ref reference-kafka --brokers 1          # bootstrap printed; Ctrl-C stops it
    kafka-ref reference-kafka --brokers 3 --config group.initial.rebalance.delay.ms=0
    kafka-ref reference-kafka --feature transaction.version=1   # a feature's level (KIP-584)

A stopped node restarts on its data (`node.restart()`, or `kill=True` for a crash). Each
node's output goes to `<workdir>/node-N.log`.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from kafka_ref.apache.classpath import LOG4J_CONFIG, jvm_command
from kafka_ref.tools.server_process import ServerProcess, free_port

READY_SECONDS = 60.0

# The JVM as kafka-server-start.sh sets it (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS), for
# benchmarks. Tests start many short-lived nodes on two shared cores: a smaller heap and the
# client compiler only (`quick`) start faster and cost less CPU, at some peak throughput.
JVM_OPTS = [
    "-Xmx1G",
    "-Xms1G",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
QUICK_JVM_OPTS = [
    "-Xmx512m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
]


def cluster_id() -> str:
    """A new cluster id as Kafka's `Uuid.randomUuid().toString()`: 16 random bytes, URL-safe
    base64 without padding, never starting with '-' (it would read as a command-line flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaNode(ServerProcess):
    """One Apache Kafka process (a combined broker and controller) and its files."""

    def __init__(
        self,
        node_id: int,
        workdir: str,
        jvm_opts: list[str],
        port: int | None = None,
        roles: str = "broker,controller",
    ) -> None:
        assert roles in ("broker,controller", "broker", "controller"), roles
        self.node_id = node_id
        self.roles = roles
        self.controller_port = free_port() if "controller" in roles else None
        self.dir = os.path.join(workdir, f"node-{node_id}")
        self.data_dir = os.path.join(self.dir, "data")
        self.properties = os.path.join(self.dir, "server.properties")
        self.jvm_opts = jvm_opts
        log_path = os.path.join(workdir, f"node-{node_id}.log")
        # A controller-only node has no client listener: it is up when its quorum port is.
        port = self.controller_port if roles == "controller" else (port or free_port())
        super().__init__(f"Apache Kafka node {node_id}", [], port, log_path)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    def java_command(self, main: str, *args: str) -> list[str]:
        return jvm_command(main, *args, jvm_opts=self.jvm_opts, log_config=LOG4J_CONFIG)

    def write_properties(self, configs: Mapping[str, object]) -> None:
        os.makedirs(self.dir, exist_ok=True)
        listeners = []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://127.0.0.1:{self.port}")
        if self.controller_port is not None:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        props: dict[str, object] = {
            "process.roles": self.roles,
            "node.id": self.node_id,
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.data_dir,
        }
        if self.is_broker:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.port}"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        props.update(configs)
        with open(self.properties, "w") as out:
            out.writelines(f"{key}={value}\n" for key, value in props.items())

    def format(
        self,
        cluster: str,
        standalone: bool,
        scram: tuple[str, ...] = (),
        features: Mapping[str, int] | None = None,
    ) -> subprocess.Popen:
        """kafka-storage.sh format, started (the caller waits): meta.properties and the
        bootstrap metadata in this node's log directory, with `scram` credentials
        (`SCRAM-SHA-256=[name=alice,password=...]`) in it and `features` finalized at the
        levels given (`--feature NAME=LEVEL`), the others at the release's defaults."""
        args = ["format", "-t", cluster, "-c", self.properties]
        if standalone:
            args.append("--standalone")
        for credential in scram:
            args += ["--add-scram", credential]
        for name, level in (features or {}).items():
            args += ["--feature", f"{name}={level}"]
        with open(self.log_path, "ab") as log:
            return subprocess.Popen(
                self.java_command("kafka.tools.StorageTool", *args),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def start(self, timeout: float = READY_SECONDS) -> None:
        self.cmd = self.java_command("kafka.Kafka", self.properties)
        super().start(timeout)

    def restart(self, kill: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL for a crash) and start again on the same data."""
        self.stop(signal.SIGKILL if kill else signal.SIGTERM)
        self.start()


class ApacheKafka:
    """`brokers` (1 or 3) Apache Kafka nodes in KRaft mode on loopback, fresh data."""

    def __init__(
        self,
        brokers: int = 1,
        configs: Mapping[str, object] | None = None,
        workdir: str | None = None,
        quick: bool = True,
        port: int | None = None,
        dedicated_controller: bool = False,
        scram_users: Mapping[str, str] | None = None,
        features: Mapping[str, int] | None = None,
        node_configs: Mapping[int, Mapping[str, object]] | None = None,
    ) -> None:
        if brokers not in (1, 3):
            raise ValueError(
                f"brokers must be 1 (combined) or 3 (a quorum of three), not {brokers}"
            )
        self.owns_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="apache-kafka-")
        os.makedirs(self.workdir, exist_ok=True)
        jvm_opts = QUICK_JVM_OPTS if quick else JVM_OPTS
        roles = "broker" if dedicated_controller else "broker,controller"
        # `port`, if given, is the first node's client port; the others take free ports.
        self.nodes = [
            KafkaNode(i, self.workdir, jvm_opts, port if i == 1 else None, roles)
            for i in range(1, brokers + 1)
        ]
        # The dedicated controller's id follows the brokers' (ids share one namespace).
        self.controllers = (
            [KafkaNode(brokers + 1, self.workdir, jvm_opts, roles="controller")]
            if dedicated_controller
            else []
        )
        self.scram = tuple(
            f"{mechanism}=[name={user},password={password}]"
            for user, password in (scram_users or {}).items()
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        )
        internal_rf = min(brokers, 3)
        self.configs: dict[str, object] = {
            "offsets.topic.replication.factor": internal_rf,
            "transaction.state.log.replication.factor": internal_rf,
            "transaction.state.log.min.isr": min(internal_rf, 2),
            "share.coordinator.state.topic.replication.factor": internal_rf,
            "share.coordinator.state.topic.min.isr": min(internal_rf, 2),
            **(configs or {}),
        }
        self.cluster_id = cluster_id()
        # Feature levels finalized when formatting, else the release's defaults (KIP-584):
        # e.g. transaction.version=1 keeps transactions v1 (Produce v12, KIP-890 part 2, off),
        # eligible.leader.replicas.version=0 keeps min.insync.replicas a topic's or broker's
        # config only (formatting with eligible leader replicas sets it as a dynamic cluster
        # default, KIP-966).
        self.features = dict(features or {})
        # Per node id, the configs that differ between nodes (e.g. each one's broker.rack)
        self.node_configs = {i: dict(c) for i, c in (node_configs or {}).items()}

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    def start(self) -> ApacheKafka:
        """Format every node (first start only), start them, wait until all are brokers."""
        # One combined node: a dynamic quorum it bootstraps alone (`format --standalone`, as
        # Kafka's quickstart does); otherwise a static quorum whose voters every node names.
        voters = self.controllers or self.nodes
        standalone = len(self.nodes) == 1 and not self.controllers
        if standalone:
            quorum = {
                "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.nodes[0].controller_port}"
            }
        else:
            names = (f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in voters)
            quorum = {"controller.quorum.voters": ",".join(names)}
        formatting = []
        for node in [*self.controllers, *self.nodes]:
            if not os.path.exists(os.path.join(node.data_dir, "meta.properties")):
                own = self.node_configs.get(node.node_id, {})
                node.write_properties({**quorum, **self.configs, **own})
                proc = node.format(self.cluster_id, standalone, self.scram, self.features)
                formatting.append((node, proc))
        for node, proc in formatting:
            if proc.wait(READY_SECONDS) != 0:
                raise RuntimeError(
                    f"formatting {node.label} failed; see {node.log_path}:\n{node.tail()}"
                )
        # All at once: a broker opens its listener only once the controller quorum has a
        # leader, and a quorum of three elects one only when two of its voters run.
        everyone = [*self.controllers, *self.nodes]
        with ThreadPoolExecutor(len(everyone)) as pool:
            for started in [pool.submit(node.start) for node in everyone]:
                started.result()
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Until a Metadata request to each node lists every broker (a registered, unfenced
        broker is in the metadata image every broker serves)."""
        from kafka_ref.conformance.wire import Wire

        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while True:
                try:
                    with Wire("127.0.0.1", node.port, timeout=5) as wire:
                        if len(wire.metadata([]).brokers) == len(self.nodes):
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{node.label} did not list {len(self.nodes)} brokers within "
                        f"{timeout:g}s; see {node.log_path}:\n{node.tail()}"
                    )
                time.sleep(0.2)

    def stop(self) -> None:
        for node in [*self.nodes, *self.controllers]:  # the brokers first: they deregister
            node.stop()
        if self.owns_workdir and not os.environ.get("KAFKA_REF_KEEP_APACHE_KAFKA"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

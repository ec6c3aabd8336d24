"""Run a local cluster, like Kafka's quickstart: KRaft by default, or on ZooKeeper.

    kafka-ref cluster                      # three KRaft nodes, each broker and controller
    kafka-ref cluster --brokers 5 --data-dir /tmp/krc
    kafka-ref cluster --zookeeper          # Debian's ZooKeeper and three brokers
    kafka-ref cluster --zookeeper 127.0.0.1:2181/kafka-ref

**KRaft** (Kafka 4's only mode): node i (1..N) gets `node.id=i`,
`process.roles=broker,controller` (Kafka's combined mode), a client port and a controller
port; every node is a voter of the metadata quorum. The directories are formatted first
with one new cluster id (`kafka-ref storage format`), each node's in `<data-dir>/node-i`
with its `server.properties`; its log goes to `<data-dir>/node-i.log`.

**ZooKeeper** (`--zookeeper`, the notes' cluster): without an address it starts a standalone
ZooKeeper from Debian's `zookeeper` package (`java ...
org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`, on a free port, data in
`<data-dir>/zookeeper`). Broker i (1..N) gets `broker.id=i`, a free port, and the data
directory `<data-dir>/broker-i`; its log goes to `<data-dir>/broker-i.log`.

The command prints the bootstrap address and waits; Ctrl-C or SIGTERM stops the nodes
(cleanly), then the ZooKeeper it started. `--config KEY=VALUE` passes a config to every
broker. Kill one (`kill -9 <pid>`, the pids are printed) and watch its partitions' leadership
move: `kafka-ref topics --bootstrap-server ... --describe`; on KRaft, `kafka-ref
metadata-quorum --bootstrap-controller ... describe --status` shows the quorum.

The classes are also the test fixtures' (tests/cluster/): `ZooKeeperServer`,
`BrokerProcess`, `KRaftNodeProcess`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from kafka_ref.tools.server_process import ServerProcess, free_port

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/*"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def zookeeper_installed() -> bool:
    return os.path.exists(ZOOKEEPER_JAR) and shutil.which("java") is not None


class ZooKeeperServer(ServerProcess):
    """A standalone ZooKeeper in a java subprocess (the real server, for tests and demos)."""

    def __init__(self, data_dir: str, port: int | None = None, tick_time_ms: int = 500) -> None:
        self.data_dir = os.path.abspath(data_dir)
        self.tick_time_ms = tick_time_ms  # sessions may last 2..20 ticks
        log_path = os.path.join(self.data_dir, "zookeeper.out")
        super().__init__("ZooKeeper", [], port or free_port(), log_path)

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        if not zookeeper_installed():
            raise RuntimeError(
                "ZooKeeper is not installed: apt-get install zookeeper (or pass --zookeeper)"
            )
        os.makedirs(self.data_dir, exist_ok=True)
        config = os.path.join(self.data_dir, "zoo.cfg")
        with open(config, "w") as f:
            f.write(
                f"tickTime={self.tick_time_ms}\ndataDir={self.data_dir}\n"
                f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                "admin.enableServer=false\nmaxClientCnxns=0\n"
            )
        # A small heap and the quick JIT tier: a test ZooKeeper starts fast on a busy machine.
        jvm = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        self.cmd = ["java", *jvm, "-cp", ZOOKEEPER_CLASSPATH, ZOOKEEPER_MAIN, config]
        super().start(timeout)
        deadline = time.monotonic() + timeout
        while not self.serving():  # the port opens before the server answers
            if time.monotonic() > deadline or not self.alive:
                raise RuntimeError(f"ZooKeeper on port {self.port} does not answer; see {config}")
            time.sleep(0.1)
        return self

    def serving(self) -> bool:
        """Ask the `srvr` four-letter command (allowed by default): is it up and serving?"""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(b"srvr")
                answer = s.recv(4096)
        except OSError:
            return False
        return b"Mode:" in answer


class BrokerProcess(ServerProcess):
    """`kafka-ref broker` in ZooKeeper mode in a subprocess. `stop(SIGKILL)` is a crash: its
    registration then waits for the ZooKeeper session to time out."""

    def __init__(
        self,
        broker_id: int,
        data_dir: str,
        zookeeper: str,
        port: int | None = None,
        configs: dict[str, object] | None = None,
        launcher: tuple[str, ...] = ("-m", "kafka_ref.cli"),
    ) -> None:
        self.broker_id = broker_id
        self.launcher = launcher  # the conformance suite's mutants run another module
        self.data_dir = os.path.abspath(data_dir)
        self.zookeeper = zookeeper
        self.configs = dict(configs or {})
        super().__init__(f"broker {broker_id}", [], port or free_port(), self.data_dir + ".log")

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        self.cmd = [
            sys.executable,
            *self.launcher,
            "broker",
            "--zookeeper",
            self.zookeeper,
            "--broker-id",
            str(self.broker_id),
        ]
        if "log.dirs" not in self.configs:  # else they name several directories (DUR-13)
            self.cmd += ["--data-dir", self.data_dir]
        if "listeners" not in self.configs:  # else they name 127.0.0.1:<port> themselves
            self.cmd += ["--listen", self.bootstrap]
        for key, value in self.configs.items():
            self.cmd += ["--config", f"{key}={value}"]
        super().start(timeout)
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        return super().stop(sig, timeout)


class KRaftNodeProcess(ServerProcess):
    """`kafka-ref broker server.properties` for a KRaft node in a subprocess: a broker and a
    controller in one process (`process.roles=broker,controller`, Kafka's combined mode),
    or either alone. Its directory is formatted (`kafka-ref storage format`) before its
    first start. `stop(SIGKILL)` is a crash: the active controller fences it once its
    heartbeats stop for `broker.session.timeout.ms`."""

    def __init__(
        self,
        node_id: int,
        data_dir: str,
        cluster_id: str,
        voters: dict[int, int],
        port: int | None = None,
        roles: str = "broker,controller",
        configs: dict[str, object] | None = None,
        launcher: tuple[str, ...] = ("-m", "kafka_ref.cli"),
        controller_port: int | None = None,
    ) -> None:
        self.node_id = node_id
        # where its controller listens: its voters entry, unless that is a proxy's port
        self._controller_port = controller_port
        self.data_dir = os.path.abspath(data_dir)
        self.cluster_id = cluster_id
        self.voters = dict(voters)  # node id -> controller listener port
        self.roles = roles
        self.configs = dict(configs or {})
        self.launcher = launcher
        self.config_path = os.path.join(self.data_dir, "server.properties")
        port = port or free_port()
        label = f"node {node_id}"
        super().__init__(label, [], port, self.data_dir + ".log")

    @property
    def controller_port(self) -> int:
        return self._controller_port or self.voters[self.node_id]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 45.0) -> int | None:
        """Longer than a broker's bound on its controlled shutdown (twice the 9 s session,
        KBROKER-13): a cluster stopping whole may lose its quorum before every broker's
        controlled shutdown is committed, and those wait out the bound."""
        return super().stop(sig, timeout)

    def properties(self) -> dict[str, object]:
        """The node's server.properties (Kafka's config/server.properties for KRaft)."""
        broker = "broker" in self.roles.split(",")
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"] if broker else []
        if self.node_id in self.voters:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in sorted(self.voters.items()))
        found: dict[str, object] = {
            "process.roles": self.roles,
            "node.id": self.node_id,
            "controller.quorum.voters": voters,
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": os.path.join(self.data_dir, "data"),
        }
        if broker:
            found["inter.broker.listener.name"] = "PLAINTEXT"
        found.update(self.configs)
        return found

    def start(self, timeout: float = 30.0) -> KRaftNodeProcess:
        """Start and wait until its broker listens: it has registered with the active
        controller and caught up, so a quorum must be running (see `launch`)."""
        self.launch()
        self.wait_listening(timeout)
        return self

    def launch(self) -> None:
        """Write its config, format its directories on the first start, start the process.
        Nodes that are to form the quorum are launched together, then waited for: each
        node's broker listens only once a quorum has elected an active controller."""
        os.makedirs(self.data_dir, exist_ok=True)
        with open(self.config_path, "w") as f:
            f.writelines(f"{key}={value}\n" for key, value in self.properties().items())
        meta = os.path.join(self.data_dir, "data", "meta.properties")
        if not os.path.exists(meta):
            _run_cli(
                self.launcher,
                "storage",
                "format",
                "--cluster-id",
                self.cluster_id,
                "--config",
                self.config_path,
            )
        self.cmd = [sys.executable, *self.launcher, "broker", self.config_path]
        super().launch()


def _run_cli(launcher: tuple[str, ...], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *launcher, *args], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"kafka-ref {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=3, metavar="N", help="how many (3)")
    parser.add_argument(
        "--zookeeper",
        nargs="?",
        const="",
        metavar="HOST:PORT[/chroot]",
        help="ZooKeeper mode: use this ZooKeeper, or start one when no address is given",
    )
    parser.add_argument("--data-dir", metavar="DIR", help="where everything goes (a temp dir)")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="for every broker"
    )


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    if args.brokers < 1:
        raise UsageError("--brokers must be at least 1")
    configs: dict[str, object] = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--config {item!r} is not KEY=VALUE")
        configs[key.strip()] = value
    zookeeper_mode = args.zookeeper is not None
    if zookeeper_mode and not args.zookeeper and not zookeeper_installed():
        raise UsageError(
            "no ZooKeeper: install Debian's zookeeper package (and java) or pass --zookeeper "
            "HOST:PORT"
        )
    base = os.path.abspath(args.data_dir or tempfile.mkdtemp(prefix="kafka-ref-cluster-"))
    os.makedirs(base, exist_ok=True)
    zookeeper, nodes = None, []
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops the cluster as Ctrl-C does
    try:
        if zookeeper_mode:
            configs = {"zookeeper.session.timeout.ms": 6000, **configs}
            if not args.zookeeper:
                zookeeper = ZooKeeperServer(os.path.join(base, "zookeeper")).start()
                print(f"zookeeper  {zookeeper.connect} (pid {zookeeper.proc.pid})", flush=True)
            connect = args.zookeeper or zookeeper.connect
            for i in range(1, args.brokers + 1):
                broker = BrokerProcess(
                    i, os.path.join(base, f"broker-{i}"), connect, configs=configs
                )
                nodes.append(broker.start())
                print(f"broker {i}   {broker.bootstrap} (pid {broker.proc.pid})", flush=True)
        else:
            nodes = _start_kraft(base, args.brokers, configs)
        bootstrap = ",".join(n.bootstrap for n in nodes)
        print(f"bootstrap  {bootstrap}", flush=True)
        kind = "broker" if zookeeper_mode else "node"
        print(f"logs       {base}/{kind}-*.log; Ctrl-C stops the cluster", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except RuntimeError as err:
        print(f"kafka-ref cluster: {err}", file=sys.stderr)
        return 1
    finally:
        if zookeeper_mode:  # one after the other, as before KRaft
            for node in nodes:
                node.stop()
        else:
            _stop_together(nodes)
        if zookeeper is not None:
            zookeeper.stop()
    return 0


def _stop_together(nodes: list[ServerProcess]) -> None:
    """SIGTERM to every node at once, then wait for each: every KRaft broker's controlled
    shutdown runs while the quorum of controllers is still there to commit it."""
    for node in nodes:
        if node.alive:
            node.proc.send_signal(signal.SIGTERM)
    for node in nodes:
        node.stop()


def _start_kraft(base: str, count: int, configs: dict[str, object]) -> list[KRaftNodeProcess]:
    """`count` combined nodes, every one a voter, formatted with one new cluster id."""
    from kafka_ref.cluster.embedded import new_cluster_id

    cluster_id = new_cluster_id()
    voters = {i: free_port() for i in range(1, count + 1)}
    nodes = [
        KRaftNodeProcess(i, os.path.join(base, f"node-{i}"), cluster_id, voters, configs=configs)
        for i in voters
    ]
    print(f"cluster    {cluster_id} (KRaft, {count} nodes, broker and controller)", flush=True)
    for node in nodes:  # a node's broker waits for a quorum to register with: start them all
        node.launch()
    for node in nodes:
        node.wait_listening(timeout=60)
        print(
            f"node {node.node_id}     {node.bootstrap} controller 127.0.0.1:{node.controller_port} "
            f"(pid {node.proc.pid})",
            flush=True,
        )
    return nodes


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt

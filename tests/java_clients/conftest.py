"""Apache Kafka's Java clients, tools and Streams against kafka-ref brokers.

`broker` is a kafka-ref broker process for one test module (no initial rebalance delay, short
sessions allowed); `java` one harness JVM for the module (harness.py), its clients' warnings
in a log beside the broker's; `cluster` a kafka-ref cluster for one module: ZooKeeper and
three brokers (tests/cluster's `Cluster`).
"""

from __future__ import annotations

import subprocess

import pytest

from kafka_ref.apache.tools import tool_command
from kafka_ref.tools.cluster import ZooKeeperServer, zookeeper_installed
from kafka_ref.tools.server_process import free_port
from tests.cluster.conftest import Cluster
from tests.interop.conftest import GROUP_BROKER_CONFIGS, BrokerProcess
from tests.java_clients.harness import JavaHarness, harness_jar


@pytest.fixture(scope="session")
def java_harness_jar() -> str:
    return harness_jar()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("java-clients")
    broker = BrokerProcess(str(base / "data"), free_port(), GROUP_BROKER_CONFIGS)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert zookeeper_installed(), "ZooKeeper is missing: `make test` installs it"
    base = tmp_path_factory.mktemp("java-cluster")
    zookeeper = ZooKeeperServer(str(base / "zookeeper")).start()
    cluster = Cluster(zookeeper, str(base))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        zookeeper.stop()


@pytest.fixture(scope="module")
def java(java_harness_jar, tmp_path_factory):
    harness = JavaHarness(str(tmp_path_factory.mktemp("java-harness") / "harness.log"))
    yield harness
    harness.close()


def run_tool(name: str, *args: str, stdin: str | None = None, timeout: float = 120):
    """Kafka's `bin/NAME.sh ARGS`, unmodified (kafka_ref.apache.tools): its exit code, stdout
    and stderr."""
    return subprocess.run(
        tool_command(name, *args), input=stdin, capture_output=True, text=True, timeout=timeout
    )

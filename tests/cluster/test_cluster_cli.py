"""`kafka-ref cluster`: three KRaft nodes, or a local ZooKeeper and brokers, stopped cleanly
on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from kafka_ref.tools import cluster as cluster_tool
from kafka_ref.tools.cluster import zookeeper_installed


def _cluster(tmp_path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kafka_ref.cli",
        "--log-level",
        "WARNING",
        "cluster",
        "--brokers",
        "2",
        "--data-dir",
        str(tmp_path),
        *args,
    ]


@pytest.mark.spec("KBROKER-16")
def test_cluster_command_starts_kraft_nodes_and_stops_them(tmp_path):
    proc = subprocess.Popen(
        _cluster(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("bootstrap"):
                break
        assert "KRaft" in lines[0], lines
        assert len(lines[-1].split()[1].split(",")) == 2
        config = (tmp_path / "node-1" / "server.properties").read_text()
        assert "process.roles=broker,controller" in config
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    for i in (1, 2):
        assert "shut down cleanly" in (tmp_path / f"node-{i}.log").read_text()


def test_cluster_command_starts_zookeeper_and_brokers_and_stops_them(tmp_path):
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    cmd = _cluster(tmp_path, "--zookeeper")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("bootstrap"):
                break
        assert any(line.startswith("zookeeper") for line in lines), lines
        assert len(lines[-1].split()[1].split(",")) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    for i in (1, 2):
        assert "shut down cleanly" in (tmp_path / f"broker-{i}.log").read_text()


def test_without_zookeeper_one_line_and_exit_code_2(monkeypatch, capsys):
    from kafka_ref.cli import main

    monkeypatch.setattr(cluster_tool, "zookeeper_installed", lambda: False)
    assert main(["cluster", "--brokers", "3", "--zookeeper"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "ZooKeeper" in err

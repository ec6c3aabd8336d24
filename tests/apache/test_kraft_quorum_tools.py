"""Apache Kafka's own tools read kafka-ref's KRaft quorum.

Three kafka-ref controller processes (tests/cluster/test_kraft_quorum.py's quorum) are
described by Kafka 4.4's `kafka-metadata-quorum.sh --bootstrap-controller`, which finds the
active controller with DescribeCluster and asks it DescribeQuorum, with and without an
observer following them, and its log segment is decoded by
`kafka-dump-log.sh --cluster-metadata-decoder`.
"""

from __future__ import annotations

import asyncio
import glob
import os
import subprocess

import pytest

from kafka_ref.apache.tools import tool_command
from kafka_ref.tools.metadata_quorum import replication_lines, status_lines
from tests.cluster.test_kraft_quorum import (
    OBSERVER_ID,
    ControllerQuorum,
    _caught_up,
    followed,
    running_observer,
)

pytestmark = pytest.mark.timeout(240)


def kafka_tool(*args: str) -> str:
    done = subprocess.run(tool_command(*args), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture
def quorum(tmp_path):
    controllers = ControllerQuorum(str(tmp_path)).start()
    yield controllers
    controllers.stop()


@pytest.mark.spec("RAFT-15")
def test_kafka_metadata_quorum_describes_kafka_refs_quorum_as_kafka_ref_does(quorum):
    cluster_id, (partition, nodes) = _caught_up(quorum)
    bootstrap = ("--bootstrap-controller", quorum.bootstrap(3))
    theirs = kafka_tool("kafka-metadata-quorum", *bootstrap, "describe", "--status").splitlines()
    ours = status_lines(cluster_id, partition, nodes)
    lag_time = 5  # MaxFollowerLagTimeMs: the followers fetched again between the two asks
    assert theirs[:lag_time] == ours[:lag_time]
    assert theirs[lag_time + 1 :] == ours[lag_time + 1 :]
    table = kafka_tool("kafka-metadata-quorum", *bootstrap, "describe", "--replication")
    assert columns(table.splitlines()) == columns(replication_lines(partition))


def columns(lines: list[str]) -> list[list[str]]:
    """--replication's NodeId, DirectoryId, LogEndOffset, Lag and Status: not the times."""
    return [[c.strip() for c in line.split("\t")[:4] + line.split("\t")[6:7]] for line in lines]


@pytest.mark.spec("RAFT-20")
def test_kafka_metadata_quorum_shows_kafka_refs_observer(quorum, tmp_path):
    bootstrap = ("--bootstrap-controller", quorum.bootstrap(1))

    async def run():
        servers = ",".join(quorum.bootstrap(n) for n in quorum.ports)
        async with running_observer(quorum, str(tmp_path / "observer"), servers) as raft:
            cluster_id, (partition, nodes) = await followed(quorum, raft)
            # Kafka's tool in a thread: the observer keeps fetching meanwhile
            tool = ("kafka-metadata-quorum", *bootstrap, "describe")
            status = await asyncio.to_thread(kafka_tool, *tool, "--status")
            table = await asyncio.to_thread(kafka_tool, *tool, "--replication")
            return cluster_id, partition, nodes, status, table

    cluster_id, partition, nodes, status, table = asyncio.run(run())
    theirs = table.splitlines()
    assert [row.split()[-1] for row in theirs[1:]] == ["Leader", "Follower", "Follower", "Observer"]
    assert columns(theirs) == columns(replication_lines(partition))
    observers = [line for line in status.splitlines() if line.startswith("CurrentObservers:")]
    assert observers == [status_lines(cluster_id, partition, nodes)[-1]]
    assert f'{{"id": {OBSERVER_ID}, "directoryId": "' in observers[0]


@pytest.mark.spec("RAFT-14")
def test_kafka_dump_log_decodes_the_leader_change_of_kafka_refs_quorum(quorum):
    _, (partition, _) = _caught_up(quorum)
    node_dir = os.path.dirname(quorum.processes[1].log_path)
    segment = glob.glob(os.path.join(node_dir, "data", "__cluster_metadata-0", "*.log"))[0]
    dump = kafka_tool("kafka-dump-log", "--cluster-metadata-decoder", "--files", segment)
    assert f'LeaderChange: {{"version":0,"leaderId":{partition.leader_id},' in dump
    assert "isControl: true" in dump and "isvalid: true" in dump

"""A KRaft controller quorum of three kafka-ref processes, over real sockets.

Each node is `kafka-ref broker controller.properties` with `process.roles=controller`,
formatted first with `kafka-ref storage format`; the quorum's requests travel on the
controller listeners; `kafka-ref metadata-quorum` reads the quorum as
kafka-metadata-quorum.sh does. The nodes are killed with SIGKILL, as a power loss would.

An observer (a broker following the metadata log, RAFT-18) runs in the test process: a
`RaftManager` whose node id is not among the voters, on this process's event loop, finding
the leader through `controller.quorum.bootstrap.servers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from kafka_ref.clock import SystemClock
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.errors import KafkaError
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.raft_manager import RaftManager, parse_bootstrap_servers
from kafka_ref.sim.raft_checks import log_entries
from kafka_ref.tools.metadata_quorum import describe, replication_lines, status_lines
from kafka_ref.tools.server_process import ServerProcess, free_port

ELECTION_TIMEOUT_MS = 300
WAIT_S = 30.0


class ControllerQuorum:
    """Three controller-only kafka-ref nodes on loopback."""

    def __init__(self, directory: str, nodes: int = 3) -> None:
        self.ports = {node: free_port() for node in range(1, nodes + 1)}
        voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in self.ports.items())
        self.cluster_id = _cli("storage", "random-uuid").strip()
        self.processes: dict[int, ServerProcess] = {}
        for node, port in self.ports.items():
            node_dir = os.path.join(directory, f"controller-{node}")
            os.makedirs(node_dir)
            config = os.path.join(node_dir, "controller.properties")
            with open(config, "w") as f:
                f.write(
                    "process.roles=controller\n"
                    f"node.id={node}\n"
                    f"controller.quorum.voters={voters}\n"
                    f"listeners=CONTROLLER://127.0.0.1:{port}\n"
                    "controller.listener.names=CONTROLLER\n"
                    f"log.dirs={os.path.join(node_dir, 'data')}\n"
                    f"controller.quorum.election.timeout.ms={ELECTION_TIMEOUT_MS}\n"
                    "controller.quorum.fetch.timeout.ms=600\n"
                    "controller.quorum.request.timeout.ms=500\n"
                    "controller.quorum.election.backoff.max.ms=200\n"
                )
            _cli("storage", "format", "--cluster-id", self.cluster_id, "--config", config)
            command = [sys.executable, "-m", "kafka_ref.cli", "broker", config]
            log = os.path.join(node_dir, "controller.log")
            self.processes[node] = ServerProcess(f"controller {node}", command, port, log)

    def start(self) -> ControllerQuorum:
        for process in self.processes.values():
            process.start()
        return self

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop()

    def bootstrap(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    def quorum(self, via: int | None = None, timeout: float = WAIT_S) -> tuple[str, object]:
        """DescribeQuorum's answer once there is a leader (asked through node `via`, or any
        node that is up)."""
        deadline = time.monotonic() + timeout
        while True:
            nodes = [via] if via is not None else [n for n, p in self.processes.items() if p.alive]
            for node in nodes:
                try:
                    return describe(self.bootstrap(node))
                except (KafkaError, OSError):
                    pass
            if time.monotonic() > deadline:
                logs = "\n".join(p.tail() for p in self.processes.values())
                raise AssertionError(f"no leader within {timeout} s\n{logs}")
            time.sleep(0.1)


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def quorum(tmp_path):
    controllers = ControllerQuorum(str(tmp_path)).start()
    yield controllers
    controllers.stop()


def _caught_up(quorum: ControllerQuorum, via: int | None = None) -> tuple[str, object]:
    """The quorum once every voter has fetched up to the leader's end offset."""
    deadline = time.monotonic() + WAIT_S
    while True:
        cluster_id, (partition, nodes) = quorum.quorum(via)
        ends = {v.log_end_offset for v in partition.current_voters}
        if len(ends) == 1 and partition.high_watermark == ends.pop():
            return cluster_id, (partition, nodes)
        if time.monotonic() > deadline:
            logs = "\n".join(p.tail() for p in quorum.processes.values())
            raise AssertionError("\n".join([*replication_lines(partition), logs]))
        time.sleep(0.1)


@pytest.mark.spec("RAFT-14", "RAFT-15", "RAFT-16")
def test_three_controllers_elect_one_leader_and_replicate_its_epoch(quorum):
    cluster_id, (partition, nodes) = _caught_up(quorum)
    assert cluster_id == quorum.cluster_id
    assert partition.leader_id in quorum.ports and partition.leader_epoch >= 1
    assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]
    # every voter fetched, and caught up with the leader's end (DescribeQuorum v1's times)
    assert all(v.last_fetch_timestamp > 0 for v in partition.current_voters)
    assert all(v.last_caught_up_timestamp > 0 for v in partition.current_voters)
    # every voter asked names the same leader and epoch (DescribeCluster's active controller)
    for node in quorum.ports:
        _, (seen, _) = quorum.quorum(via=node)
        assert (seen.leader_id, seen.leader_epoch) == (partition.leader_id, partition.leader_epoch)
    status = status_lines(cluster_id, partition, nodes)
    assert status[0].split() == ["ClusterId:", quorum.cluster_id]
    assert status[1].split() == ["LeaderId:", str(partition.leader_id)]
    assert "MaxFollowerLag:         0" in status
    assert f'"CONTROLLER://127.0.0.1:{quorum.ports[1]}"' in status[6]
    table = replication_lines(partition)
    assert table[0].split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    assert [row.split()[-1] for row in table[1:]] == ["Leader", "Follower", "Follower"]


@pytest.mark.spec("RAFT-14", "RAFT-3")
def test_a_killed_leader_is_replaced_in_a_later_epoch_and_rejoins_as_follower(quorum):
    _, (before, _) = _caught_up(quorum)
    old_leader = before.leader_id
    quorum.processes[old_leader].stop(signal.SIGKILL)
    started = time.monotonic()
    while True:
        _, (after, _) = quorum.quorum()
        # a new leader in a later epoch, whose LeaderChange record the two survivors
        # committed: the high watermark passes the old end
        if (
            after.leader_id != old_leader
            and after.leader_epoch > before.leader_epoch
            and after.high_watermark > before.high_watermark
        ):
            break
        assert time.monotonic() - started < WAIT_S, f"no new leader: {after}"
        time.sleep(0.05)
    quorum.processes[old_leader].start()  # recovers its log and its quorum-state file
    _, (healed, _) = _caught_up(quorum)
    assert healed.leader_epoch >= after.leader_epoch
    assert {v.replica_id for v in healed.current_voters} == {1, 2, 3}
    ends = {v.replica_id: v.log_end_offset for v in healed.current_voters}
    assert ends[old_leader] == healed.high_watermark


OBSERVER_ID = 7  # a broker's node id, outside the voters 1, 2, 3


@contextlib.asynccontextmanager
async def running_observer(
    quorum: ControllerQuorum, directory: str, bootstrap: str
) -> AsyncIterator[RaftManager]:
    """An observer of `quorum` on this event loop, its metadata log in `directory`, asking
    `bootstrap` (controller.quorum.bootstrap.servers) for the leader."""
    voters = {node: ("127.0.0.1", port) for node, port in quorum.ports.items()}
    raft = RaftManager(
        OBSERVER_ID,
        voters,
        os.path.join(directory, f"{METADATA_TOPIC}-0"),
        quorum.cluster_id,
        SystemClock(),
        InterBrokerSecurity("PLAINTEXT", None),
        QuorumConfig(
            election_timeout_ms=ELECTION_TIMEOUT_MS,
            fetch_timeout_ms=600,
            request_timeout_ms=500,
            election_backoff_max_ms=200,
        ),
        bootstrap_servers=parse_bootstrap_servers(bootstrap),
        directory_id=uuid.uuid4(),
    )
    raft.start()
    try:
        yield raft
    finally:
        await raft.shutdown()


async def followed(
    quorum: ControllerQuorum, raft: RaftManager, after_epoch: int = 0
) -> tuple[str, object]:
    """The quorum, once the observer follows its leader in an epoch past `after_epoch` and
    holds the leader's log up to the high watermark, as every live voter does, and the
    leader describes it so."""
    deadline = time.monotonic() + WAIT_S
    while True:
        # the blocking tool in a thread: the observer keeps fetching on this loop meanwhile
        cluster_id, (partition, nodes) = await asyncio.to_thread(quorum.quorum)
        state = raft.client.state
        described = {o.replica_id: o for o in partition.observers}.get(OBSERVER_ID)
        if (
            isinstance(state, FollowerState)
            and (state.leader_id, state.epoch) == (partition.leader_id, partition.leader_epoch)
            and state.epoch > after_epoch
            and raft.log.end_offset == raft.client.high_watermark == partition.high_watermark
            and described is not None
            and described.log_end_offset == raft.log.end_offset
            and all(
                v.log_end_offset == raft.log.end_offset
                for v in partition.current_voters
                if quorum.processes[v.replica_id].alive
            )
        ):
            return cluster_id, (partition, nodes)
        assert time.monotonic() < deadline, (state, replication_lines(partition))
        await asyncio.sleep(0.1)


@pytest.mark.spec("RAFT-20", "RAFT-18")
def test_an_observer_follows_the_quorum_and_is_described_as_an_observer(quorum, tmp_path):
    _, (stable, _) = _caught_up(quorum)
    # its one bootstrap server is a follower: the follower's answer names the leader, and
    # after the leader dies, the new one
    follower = min(n for n in quorum.ports if n != stable.leader_id)

    async def run():
        directory = str(tmp_path / "observer")
        async with running_observer(quorum, directory, quorum.bootstrap(follower)) as raft:
            _, (partition, _) = await followed(quorum, raft)
            first = partition
            entries = log_entries(raft.log)
            killed = partition.leader_id  # the observer follows the next leader too
            quorum.processes[killed].stop(signal.SIGKILL)
            _, (partition, _) = await followed(quorum, raft, after_epoch=first.leader_epoch)
            return raft.directory_id, first, entries, killed, partition

    directory_id, first, entries, killed, after = asyncio.run(run())
    # the observer holds every committed entry: the LeaderChange records and the active
    # controller's metadata records (the bootstrap features)
    offsets = [e[0] for e in entries]
    assert offsets[: first.high_watermark] == list(range(first.high_watermark))
    assert entries[0][2] and not all(e[2] for e in entries)
    [observer] = first.observers
    assert observer.replica_id == OBSERVER_ID and observer.replica_directory_id == directory_id
    assert observer.last_fetch_timestamp > 0 and observer.last_caught_up_timestamp > 0
    assert sorted(v.replica_id for v in first.current_voters) == [1, 2, 3]  # not a voter
    table = replication_lines(first)
    assert [row.split()[0] for row in table[1:]][-1] == str(OBSERVER_ID)
    assert [row.split()[-1] for row in table[1:]] == ["Leader", "Follower", "Follower", "Observer"]
    assert after.leader_id != killed and after.leader_epoch > first.leader_epoch
    assert [o.replica_id for o in after.observers] == [OBSERVER_ID]


@pytest.mark.spec("RAFT-16")
def test_format_refuses_a_formatted_directory_and_a_node_refuses_an_unformatted_one(tmp_path):
    config = tmp_path / "controller.properties"
    port = free_port()
    config.write_text(
        "process.roles=controller\nnode.id=1\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    run = [sys.executable, "-m", "kafka_ref.cli"]
    unformatted = subprocess.run(
        [*run, "broker", str(config)], capture_output=True, text=True, timeout=60
    )
    assert unformatted.returncode == 2
    assert "is not formatted" in unformatted.stderr
    cluster_id = _cli("storage", "random-uuid").strip()
    first = _cli("storage", "format", "-t", cluster_id, "-c", str(config))
    assert f"cluster id {cluster_id}" in first
    again = subprocess.run(
        [*run, "storage", "format", "-t", cluster_id, "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 1 and "already formatted" in again.stdout
    ignored = _cli("storage", "format", "-t", cluster_id, "-c", str(config), "-g")
    assert ignored == ""
    bad = subprocess.run(
        [*run, "storage", "format", "-t", "not-a-uuid", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "not a base64 UUID" in bad.stderr


@pytest.mark.spec("RAFT-16")
def test_a_new_cluster_id_never_reads_as_an_option():
    # one id in 64 would start with "-" (Kafka's Uuid.randomUuid draws again)
    ids = [new_cluster_id() for _ in range(2_000)]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)


@pytest.mark.spec("RAFT-14")
def test_a_controller_listener_with_another_protocol_is_refused(tmp_path):
    config = tmp_path / "controller.properties"
    port = free_port()
    config.write_text(
        "process.roles=controller\nnode.id=1\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:SSL\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", "broker", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "supports PLAINTEXT only" in done.stderr


@pytest.mark.spec("RAFT-20")
def test_bootstrap_servers_are_peers_minus_two_and_down_and_a_bad_one_is_refused(tmp_path):
    assert parse_bootstrap_servers("") == []
    assert parse_bootstrap_servers("h1:9093, [::1]:9095") == [("h1", 9093), ("::1", 9095)]
    with pytest.raises(ValueError, match="'h1' is not of the form host:port"):
        parse_bootstrap_servers("h1")
    raft = RaftManager(
        OBSERVER_ID,
        {1: ("a", 1)},
        str(tmp_path / "observer"),
        "",
        SystemClock(),
        InterBrokerSecurity("PLAINTEXT", None),
        bootstrap_servers=[("b", 2), ("c", 3)],
    )
    assert raft.is_observer and raft.bootstrap_ids == (-2, -3)
    assert raft.addresses == {1: ("a", 1), -2: ("b", 2), -3: ("c", 3)}
    config = tmp_path / "controller.properties"
    port = free_port()
    config.write_text(
        "process.roles=controller\nnode.id=1\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\n"
        "controller.quorum.bootstrap.servers=127.0.0.1\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", "broker", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "controller.quorum.bootstrap.servers entry '127.0.0.1' is not of the form host:port"
    )

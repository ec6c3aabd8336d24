"""Kafka's ZooKeeper client: the znodes a cluster keeps its metadata in, read and written.

Before KRaft, a Kafka cluster kept every fact that must survive a broker in ZooKeeper, a
small replicated tree of *znodes*. Each znode holds a few bytes (here JSON) and a *version*
that rises with every write; a write may name the version it expects (`setData(path, data,
version)`) and fails with BadVersion if someone wrote in between: a compare-and-set. An
*ephemeral* znode lives as long as the session of the client that created it, so it is
deleted when that broker dies (after the session timeout) or closes its session. A *watch*
is a one-shot notification that a znode changed. Those three primitives are all that
broker liveness, controller election and metadata propagation need.

The paths and the JSON in them, as Kafka's `kafka.zk.ZkData` writes them, are zk_data.py.

**Fencing.** Every write of the controller is a ZooKeeper *multi* (a transaction) that
also checks the version of `/controller_epoch` it saw when it became controller (Kafka:
`KafkaZkClient.multiRequest` with `CheckOp(ControllerEpochZNode.path,
controllerEpochZkVersion)`, KAFKA-6082). A controller that lost its role without noticing
(a long GC pause, a network partition) finds the epoch's version moved on: its write fails
with `ControllerMovedError` and changes nothing (CTRL-4). Partition state is written with
its own version check too, so two writers never silently overwrite each other.

`KafkaZkClient` is the adapter: kazoo in, Kafka's paths and JSON out. It holds no policy;
the controller (controller.py) and the broker's view (zk_metadata.py) decide.

Rules: CTRL-1, CTRL-2, CTRL-4, CTRL-9.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.cluster.zk_data import (
    BROKER_IDS,
    CLUSTER_ID,
    CONFIG_CHANGES,
    CONFIG_TOPICS,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DELETE_TOPICS,
    PERSISTENT_PATHS,
    PRODUCER_ID_BLOCK,
    TOPICS,
    Moves,
    broker_path,
    decode_assignment,
    decode_broker,
    decode_moves,
    decode_partition_state,
    decode_topic_config,
    encode_assignment,
    encode_broker,
    encode_partition_state,
    encode_topic_config,
    json_bytes,
    partition_state_path,
    split_connect,
    topic_path,
)

logger = logging.getLogger("kafka_ref.cluster.zookeeper")


class ControllerMovedError(Exception):
    """A controller write was fenced: /controller_epoch moved on (Kafka:
    `ControllerMovedException`). The writer is no longer the controller."""


# ---------------------------------------------------------------------- the client
class KafkaZkClient:
    """Kafka's ZooKeeper client (Kafka: `KafkaZkClient`), on kazoo."""

    def __init__(self, connect: str, session_timeout_ms: int = 18000) -> None:
        self.connect_string = connect
        self.hosts, self.chroot = split_connect(connect)
        self.zk = KazooClient(hosts=self.hosts, timeout=session_timeout_ms / 1000)
        self.closing = False  # set by close(): the session ends on purpose

    def start(self, timeout: float | None = 30.0) -> None:
        """Connect, create the chroot if missing (as Kafka does), then the top-level paths.

        With `timeout` None, wait for ZooKeeper for as long as it takes, until `close`: a
        broker that starts while ZooKeeper is down or frozen comes up when it is back
        (CTRL-17; Kafka gives up after `zookeeper.connection.timeout.ms` and leaves the restart
        to a supervisor)."""
        if timeout is not None:
            self.zk.start(timeout=timeout)
        else:
            self._wait_for_connection()
        if self.chroot:
            self.zk.ensure_path(self.chroot)
            self.zk.chroot = self.chroot  # from now on every path is below the chroot
        for path in PERSISTENT_PATHS:
            self.zk.ensure_path(path)

    def _wait_for_connection(self) -> None:
        connected, waited = self.zk.start_async(), 0
        while not connected.wait(1.0):
            if self.closing:
                raise ConnectionError(f"closed while waiting for ZooKeeper at {self.hosts}")
            waited += 1
            if waited % 10 == 0:
                logger.warning(
                    "ZooKeeper at %s has not answered for %d s; waiting", self.hosts, waited
                )

    def close(self) -> None:
        """Close the session: ZooKeeper deletes our ephemeral znodes at once."""
        self.closing = True
        try:
            self.zk.stop()
        finally:
            self.zk.close()

    # ------------------------------------------------------------------ cluster id
    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The first broker of a cluster writes /cluster/id; everyone else reads it."""
        try:
            self.zk.create(CLUSTER_ID, json_bytes({"version": "1", "id": proposed}))
            return proposed
        except NodeExistsError:
            data, _ = self.zk.get(CLUSTER_ID)
            return json.loads(data)["id"]

    # ------------------------------------------------------------------ brokers (CTRL-1)
    def register_broker(self, endpoint: BrokerEndpoint) -> int:
        """Create the ephemeral /brokers/ids/<id> and return the broker epoch: the znode's
        czxid, the ZooKeeper transaction id that created it (KIP-380), higher for every new
        registration. NodeExistsError: another session holds it.

        A create retried after a lost connection may find the znode its first try made: it
        is ours when its ephemeral owner is this session (Kafka's `checkedEphemeralCreate`)."""
        path = broker_path(endpoint.node_id)
        with contextlib.suppress(NodeExistsError):
            self.zk.create(path, encode_broker(endpoint), ephemeral=True)
        stat = self.zk.exists(path)
        if stat is None or stat.ephemeralOwner != self.zk.client_id[0]:
            raise NodeExistsError(path)
        return stat.czxid

    def get_broker_and_epoch(self, broker_id: int) -> tuple[BrokerEndpoint, int] | None:
        """The registration of a live broker and its broker epoch (czxid), or None."""
        try:
            data, stat = self.zk.get(broker_path(broker_id))
        except NoNodeError:
            return None
        return decode_broker(broker_id, data), stat.czxid

    def get_broker(self, broker_id: int) -> BrokerEndpoint | None:
        try:
            data, _ = self.zk.get(broker_path(broker_id))
        except NoNodeError:
            return None
        return decode_broker(broker_id, data)

    def get_broker_ids(self) -> list[int]:
        return sorted(int(child) for child in self.zk.get_children(BROKER_IDS))

    # ------------------------------------------------------------------ controller (CTRL-2)
    def get_controller_id(self) -> int | None:
        try:
            data, _ = self.zk.get(CONTROLLER)
        except NoNodeError:
            return None
        return int(json.loads(data)["brokerid"])

    def get_controller_epoch(self) -> tuple[int, int]:
        """(epoch, znode version); (0, -1) before the first controller ever."""
        try:
            data, stat = self.zk.get(CONTROLLER_EPOCH)
        except NoNodeError:
            return 0, -1
        return int(data), stat.version

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Become controller: create /controller and bump /controller_epoch in one multi.

        Returns (new epoch, its znode version). NodeExistsError: another broker is
        controller. A concurrent bump shows as BadVersionError: try again. (Kafka:
        `registerControllerAndIncrementControllerEpoch`.)
        """
        epoch, version = self.get_controller_epoch()
        if version == -1:  # the very first controller creates the epoch znode
            with contextlib.suppress(NodeExistsError):
                self.zk.create(CONTROLLER_EPOCH, b"0")
            epoch, version = self.get_controller_epoch()
        payload = {"version": 1, "brokerid": broker_id, "timestamp": str(int(time.time() * 1000))}
        txn = self.zk.transaction()
        txn.create(CONTROLLER, json_bytes(payload), ephemeral=True)
        txn.set_data(CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version)
        results = txn.commit()
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result
        return epoch + 1, version + 1

    def _fenced_commit(self, txn: Any, epoch_zk_version: int) -> list[Any]:
        """Commit a controller transaction; raise ControllerMovedError if fenced."""
        results = txn.commit()
        if isinstance(results[0], BadVersionError):
            raise ControllerMovedError(
                f"/controller_epoch is no longer at version {epoch_zk_version}"
            )
        for result in results[1:]:
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result
        return results[1:]

    # ------------------------------------------------------------------ topics
    def get_all_topics(self) -> list[str]:
        return sorted(self.zk.get_children(TOPICS))

    def get_topic(self, topic: str) -> tuple[dict[int, tuple[int, ...]], str | None] | None:
        try:
            data, _ = self.zk.get(topic_path(topic))
        except NoNodeError:
            return None
        return decode_assignment(data)

    def get_topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self.zk.get(f"{CONFIG_TOPICS}/{topic}")
        except NoNodeError:
            return {}
        return decode_topic_config(data)

    def create_topic(
        self, topic: str, topic_id: str, assignment: dict[int, list[int]], configs: dict[str, str]
    ) -> None:
        """Write the config, then the assignment (Kafka: `AdminZkClient.createTopicWithAssignment`:
        the config first, so the controller never sees a topic without its config)."""
        txn = self.zk.transaction()
        txn.create(f"{CONFIG_TOPICS}/{topic}", encode_topic_config(configs))
        txn.create(topic_path(topic), encode_assignment(assignment, topic_id))
        for result in txn.commit():
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result

    def set_topic_config(self, topic: str, configs: dict[str, str]) -> None:
        """New overrides for a topic (Kafka: `AdminZkClient.changeTopicConfig`): the config
        znode, and in the same transaction a sequential notification under /config/changes
        naming it, as Kafka's brokers expect (kafka-ref's brokers watch the znode itself)."""
        txn = self.zk.transaction()
        txn.set_data(f"{CONFIG_TOPICS}/{topic}", encode_topic_config(configs))
        notice = json_bytes({"version": 2, "entity_path": f"topics/{topic}"})
        txn.create(f"{CONFIG_CHANGES}/config_change_", notice, sequence=True)
        for result in txn.commit():
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result

    def set_topic_assignment(
        self, topic: str, topic_id: str, assignment: dict[int, list[int]]
    ) -> None:
        """Replace the assignment (CreatePartitions adds partitions; none are removed)."""
        self.zk.set(topic_path(topic), encode_assignment(assignment, topic_id))

    def get_topic_moves(self, topic: str) -> Moves:
        try:
            data, _ = self.zk.get(topic_path(topic))
        except NoNodeError:
            return {}
        return decode_moves(data)

    def set_reassignment(
        self,
        topic: str,
        topic_id: str,
        assignment: dict[int, list[int]],
        moves: Moves,
        epoch_zk_version: int,
    ) -> None:
        """The controller's write of a topic's replicas during a reassignment, fenced by its
        epoch (CTRL-4): RS with the adding and removing replicas, or the final TRS."""
        txn = self.zk.transaction()
        txn.check(CONTROLLER_EPOCH, epoch_zk_version)
        txn.set_data(topic_path(topic), encode_assignment(assignment, topic_id, moves))
        self._fenced_commit(txn, epoch_zk_version)

    def request_topic_deletion(self, topic: str) -> None:
        """Ask the controller to delete `topic` (Kafka: `createDeleteTopicPath`)."""
        with contextlib.suppress(NodeExistsError):  # already requested
            self.zk.create(f"{DELETE_TOPICS}/{topic}", b"")

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.zk.get_children(DELETE_TOPICS))

    def delete_topic_znodes(self, topic: str) -> None:
        """The controller removes a deleted topic: its state, assignment, config, request."""
        self.zk.delete(topic_path(topic), recursive=True)
        self.zk.delete(f"{CONFIG_TOPICS}/{topic}", recursive=True)
        with contextlib.suppress(NoNodeError):
            self.zk.delete(f"{DELETE_TOPICS}/{topic}")

    # ------------------------------------------------------------------ partition state
    def get_partition_state(
        self, topic: str, partition: int, replicas: tuple[int, ...] = ()
    ) -> tuple[PartitionState, int] | None:
        """(state, znode version) of one partition, or None before the controller wrote it."""
        try:
            data, stat = self.zk.get(partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return decode_partition_state(topic, partition, data, replicas), stat.version

    def create_partition_state(self, state: PartitionState, epoch_zk_version: int) -> None:
        """First state of a new partition, fenced by the controller epoch (CTRL-4)."""
        path = partition_state_path(state.topic, state.partition)
        parent = path.rsplit("/", 1)[0]
        self.zk.ensure_path(parent)
        txn = self.zk.transaction()
        txn.check(CONTROLLER_EPOCH, epoch_zk_version)
        txn.create(path, encode_partition_state(state))
        self._fenced_commit(txn, epoch_zk_version)

    def update_partition_state(
        self, state: PartitionState, expected_version: int, epoch_zk_version: int
    ) -> int:
        """Conditional set of a partition's state (CTRL-4, CTRL-9). Returns the new version;
        BadVersionError if the state changed since it was read."""
        path = partition_state_path(state.topic, state.partition)
        txn = self.zk.transaction()
        txn.check(CONTROLLER_EPOCH, epoch_zk_version)
        txn.set_data(path, encode_partition_state(state), version=expected_version)
        (stat,) = self._fenced_commit(txn, epoch_zk_version)
        return stat.version

    # ------------------------------------------------------------------ producer ids
    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """Claim the next block of producer ids with a compare-and-set retry loop (Kafka:
        `ZkProducerIdManager.getNewProducerIdBlock` on /latest_producer_id_block)."""
        self.zk.ensure_path(PRODUCER_ID_BLOCK)
        while True:
            data, stat = self.zk.get(PRODUCER_ID_BLOCK)
            first = int(json.loads(data)["block_end"]) + 1 if data else 0
            if first > 2**63 - 1 - size:
                raise OverflowError(f"cannot claim {size} producer ids at {first}")
            block = {
                "version": 1,
                "broker": broker_id,
                "block_start": str(first),
                "block_end": str(first + size - 1),
            }
            try:
                self.zk.set(PRODUCER_ID_BLOCK, json_bytes(block), version=stat.version)
                return first
            except BadVersionError:
                continue  # another broker claimed a block in between: read again

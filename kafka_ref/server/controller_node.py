"""A node with `process.roles=controller`: a voter of the KRaft quorum, as its own process
(Kafka: `KafkaRaftServer` with only the `ControllerServer`).

Its configuration is Kafka's (`config/controller.properties`):

    process.roles=controller
    node.id=1
    controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097
    listeners=CONTROLLER://127.0.0.1:9093
    controller.listener.names=CONTROLLER
    log.dirs=/tmp/kraft-controller-logs          # metadata.log.dir defaults to the first

Before the first start the directory is formatted (`kafka-ref storage format`, Kafka's
`kafka-storage.sh format`): `meta.properties` names the cluster and the node, so a node
never joins another cluster's quorum nor takes another node's log (RAFT-16). The metadata
log lives in `<metadata.log.dir>/__cluster_metadata-0`, with the `quorum-state` file.

`serve_controller` runs the node until SIGTERM or SIGINT, then resigns if it leads (so
the others elect at once) and stops.

Rules: RAFT-16.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal

from kafka_ref.clock import SystemClock
from kafka_ref.cluster.embedded import META_PROPERTIES, read_meta_properties
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.listeners import EndPoint, ListenerSecurity
from kafka_ref.server.controller_server import ControllerServer
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from kafka_ref.server.raft_manager import Address, RaftManager, parse_quorum_voters

logger = logging.getLogger("kafka_ref.server.controller_node")


@dataclasses.dataclass(frozen=True)
class KRaftSettings:
    """The KRaft keys of a node's config (Kafka: `KafkaConfig`'s `process.roles`, ...)."""

    roles: frozenset[str]
    node_id: int
    voters: dict[int, Address]
    controller_listener: EndPoint | None
    metadata_log_dir: str
    quorum: QuorumConfig

    @classmethod
    def from_config(cls, config: KafkaConfig) -> KRaftSettings:
        """Read and check them; ConfigError with Kafka's words for what cannot work."""
        raw = config.originals
        roles = config.roles
        unknown = roles - {"broker", "controller"}
        if unknown:
            raise ConfigError(f"process.roles: unknown role {', '.join(sorted(unknown))}")
        try:
            voters = parse_quorum_voters(raw.get("controller.quorum.voters", ""))
        except ValueError as err:
            raise ConfigError(str(err)) from None
        node_id = config.broker_id
        names = [n.strip().upper() for n in raw.get("controller.listener.names", "").split(",")]
        names = [n for n in names if n]
        listener = None
        if "controller" in roles:
            if not names:
                raise ConfigError("controller.listener.names must be set on a controller")
            if node_id not in voters:
                raise ConfigError(
                    f"node.id {node_id} is a controller but not in controller.quorum.voters"
                )
            listener = _listener_endpoint(raw.get("listeners", ""), names[0])
        return cls(
            roles,
            node_id,
            voters,
            listener,
            raw.get("metadata.log.dir") or config.data_dir,
            QuorumConfig(
                election_timeout_ms=int(raw.get("controller.quorum.election.timeout.ms", 1000)),
                fetch_timeout_ms=int(raw.get("controller.quorum.fetch.timeout.ms", 2000)),
                election_backoff_max_ms=int(
                    raw.get("controller.quorum.election.backoff.max.ms", 1000)
                ),
                request_timeout_ms=int(raw.get("controller.quorum.request.timeout.ms", 2000)),
            ),
        )

    @property
    def partition_dir(self) -> str:
        return os.path.join(self.metadata_log_dir, f"{METADATA_TOPIC}-0")


def is_controller_only(config: KafkaConfig) -> bool:
    return config.roles == {"controller"}


def _listener_endpoint(listeners: str, name: str) -> EndPoint:
    for item in (i.strip() for i in listeners.split(",") if i.strip()):
        listener, sep, address = item.rpartition("://")
        if sep and listener.upper() == name:
            host, _, port = address.rpartition(":")
            if not port.isdigit():
                raise ConfigError(f"listener {item!r} is not NAME://HOST:PORT")
            return EndPoint(name, "PLAINTEXT", host.strip("[]"), int(port))
    raise ConfigError(f"controller.listener.names names {name}, which is not in listeners")


def cluster_id_of(settings: KRaftSettings) -> str:
    """The cluster id `kafka-ref storage format` wrote; ConfigError if it was not run."""
    path = os.path.join(settings.metadata_log_dir, META_PROPERTIES)
    cluster_id = read_meta_properties(path, settings.node_id)
    if cluster_id is None:
        raise ConfigError(
            f"{settings.metadata_log_dir} is not formatted: run `kafka-ref storage format "
            f"--cluster-id <id> --config <file>` first (Kafka: kafka-storage.sh format)"
        )
    return cluster_id


def controller_server(config: KafkaConfig) -> ControllerServer:
    """The controller node `config` describes, not started."""
    settings = KRaftSettings.from_config(config)
    cluster_id = cluster_id_of(settings)
    os.makedirs(settings.partition_dir, exist_ok=True)
    raft = RaftManager(
        settings.node_id,
        settings.voters,
        settings.partition_dir,
        cluster_id,
        SystemClock(),
        InterBrokerSecurity("PLAINTEXT", None),
        settings.quorum,
    )
    assert settings.controller_listener is not None
    return ControllerServer(raft, ListenerSecurity(settings.controller_listener), cluster_id)


async def serve_controller(config: KafkaConfig) -> int:
    """Run a controller node until SIGTERM or SIGINT."""
    server = controller_server(config)
    port = await server.bind()
    await server.start()
    logger.info("controller %d started on port %d", server.raft.node_id, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0

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
from kafka_ref.group.group_configs import BROKER_KEYS
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.listeners import (
    EndPoint,
    ListenerError,
    ListenerSecurity,
    parse_endpoints,
    parse_protocol_map,
)
from kafka_ref.server.active_controller import ActiveController
from kafka_ref.server.controller_server import ControllerServer
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from kafka_ref.server.kraft_publishers import ImageAclStore
from kafka_ref.server.metadata_snapshots import MetadataSnapshotter
from kafka_ref.server.raft_manager import (
    Address,
    RaftManager,
    parse_bootstrap_servers,
    parse_quorum_voters,
)

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
    bootstrap_servers: tuple[Address, ...] = ()  # where an observer looks for the leader

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
            bootstrap = parse_bootstrap_servers(raw.get("controller.quorum.bootstrap.servers", ""))
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
            listener = _listener_endpoint(config, names[0])
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
                **_snapshot_settings(raw),
            ),
            tuple(bootstrap),
        )

    @property
    def partition_dir(self) -> str:
        return os.path.join(self.metadata_log_dir, f"{METADATA_TOPIC}-0")


def _snapshot_settings(raw: dict) -> dict[str, int]:
    """The snapshot and metadata retention settings present in `raw` (RAFT-21, RAFT-22),
    as `QuorumConfig`'s fields; Kafka's defaults for the others."""
    names = {
        "metadata.log.max.record.bytes.between.snapshots": "max_bytes_between_snapshots",
        "metadata.log.max.snapshot.interval.ms": "max_snapshot_interval_ms",
        "metadata.max.retention.bytes": "max_retention_bytes",
        "metadata.max.retention.ms": "max_retention_ms",
    }
    return {field: int(raw[key]) for key, field in names.items() if key in raw}


def is_controller_only(config: KafkaConfig) -> bool:
    return config.roles == {"controller"}


def _listener_endpoint(config: KafkaConfig, name: str) -> EndPoint:
    """The controller listener `name` of `listeners`, with its security protocol from
    `listener.security.protocol.map` (PLAINTEXT when the map does not name it, as Kafka
    maps a controller listener by default). kafka-ref's controller listener speaks
    PLAINTEXT only so far: any other protocol is refused rather than ignored."""
    listeners = [i.strip() for i in config.originals.get("listeners", "").split(",") if i.strip()]
    others = [i.rpartition("://")[0].upper() for i in listeners if i.rpartition("://")[0]]
    try:
        protocols = {
            name: "PLAINTEXT",
            **parse_protocol_map(config["listener.security.protocol.map"]),
        }
        found = parse_endpoints(listeners, protocols, skip=[o for o in others if o != name])
    except ListenerError as err:
        raise ConfigError(str(err)) from None
    endpoint = next((e for e in found if e.listener == name), None)
    if endpoint is None:
        raise ConfigError(f"controller.listener.names names {name}, which is not in listeners")
    if endpoint.protocol != "PLAINTEXT":
        raise ConfigError(
            f"controller listener {name} is {endpoint.protocol}: kafka-ref's controller "
            f"listener supports PLAINTEXT only"
        )
    return endpoint


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
    active = ActiveController(raft, cluster_id, controller_config(config))
    MetadataSnapshotter(raft, raft.clock)  # every node snapshots its metadata (RAFT-21)
    authorizer = (  # the committed image's ACLs (KCTRL-20)
        Authorizer.from_config(config, ImageAclStore(lambda: active.committed_image))
        if config["authorizer.class.name"]
        else None
    )
    return ControllerServer(
        raft, ListenerSecurity(settings.controller_listener), cluster_id, active, authorizer
    )


def observer_raft(config: KafkaConfig) -> RaftManager:
    """A broker-only node's quorum client: an observer of the metadata log (RAFT-18), which
    reaches the quorum through `controller.quorum.bootstrap.servers` (or the voters), not
    started (KBROKER-17)."""
    settings = KRaftSettings.from_config(config)
    cluster_id = cluster_id_of(settings)
    assert settings.node_id not in settings.voters, "a voter is not an observer"
    os.makedirs(settings.partition_dir, exist_ok=True)
    raft = RaftManager(
        settings.node_id,
        settings.voters,
        settings.partition_dir,
        cluster_id,
        SystemClock(),
        InterBrokerSecurity("PLAINTEXT", None),
        settings.quorum,
        bootstrap_servers=settings.bootstrap_servers,
    )
    MetadataSnapshotter(raft, raft.clock)  # every node snapshots its metadata (RAFT-21)
    return raft


def controller_config(config: KafkaConfig) -> ControllerConfig:
    """What the active controller decides with, from the node's config."""
    return ControllerConfig(
        session_timeout_ms=config["broker.session.timeout.ms"],
        num_partitions=config["num.partitions"],
        default_replication_factor=config["default.replication.factor"],
        log_defaults=config.log_config(),
        group_broker_values={key: config[key] for key in BROKER_KEYS},
    )


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

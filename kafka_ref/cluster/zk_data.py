"""What each znode of a ZooKeeper-mode cluster holds (Kafka: `kafka.zk.ZkData`).

A Kafka cluster on ZooKeeper keeps every fact that must outlive a broker in a tree of
znodes, each a few bytes of JSON. Other Kafka tools read the same tree, so the paths and
the JSON are Kafka's own, field for field:

    /cluster/id                              {"version":"1","id":"<cluster id>"}
    /controller          (ephemeral)         {"version":1,"brokerid":1,"timestamp":"..."}
    /controller_epoch                        "3"   (a bare integer)
    /brokers/ids/<id>    (ephemeral)         {"version":5,"host":"h","port":9092,
                                              "endpoints":["PLAINTEXT://h:9092"],"rack":"r1",
                                              "jmx_port":-1,"timestamp":"...",
                                              "listener_security_protocol_map":{...},
                                              "features":{}}
    /brokers/topics/<t>                      {"version":2,"partitions":{"0":[1,2,3]},
                                              "topic_id":"...","adding_replicas":{},
                                              "removing_replicas":{}}
    /brokers/topics/<t>/partitions/<p>/state {"version":1,"leader":1,"leader_epoch":0,
                                              "isr":[1,2,3],"controller_epoch":3}
    /config/topics/<t>                       {"version":1,"config":{"retention.ms":"..."}}
    /admin/delete_topics/<t>                 (empty: a deletion request for the controller)
    /latest_producer_id_block                {"version":1,"broker":1,
                                              "block_start":"0","block_end":"999"}

This module is the layout alone: the paths and, for each kind of znode, its `encode` and
`decode` (Kafka's `BrokerIdZNode`, `TopicZNode`, `TopicPartitionStateZNode`,
`ConfigEntityZNode`). Reading and writing them, with the controller's fencing, is
zookeeper.py's `KafkaZkClient`.

Rules: CTRL-1, CTRL-9, SEC-2, CTRL-24.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.security.listeners import EndPoint, parse_endpoints

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"  # Kafka's change notifications: config_change_<seq>
DELETE_TOPICS = "/admin/delete_topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
# Created at start, as Kafka's `KafkaZkClient.createTopLevelPaths` does.
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, CONFIG_CHANGES, DELETE_TOPICS, "/cluster")


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def split_connect(connect: str) -> tuple[str, str]:
    """`host:port[,host:port]/chroot` -> ("host:port,...", "/chroot" or "")."""
    hosts, slash, chroot = connect.partition("/")
    chroot = ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""
    return hosts, chroot


def json_bytes(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


# ---------------------------------------------------------------------- codecs (ZkData)
def encode_broker(endpoint: BrokerEndpoint) -> bytes:
    """BrokerIdZNode.encode, JSON version 5: every listener's advertised endpoint and its
    security protocol (SEC-2); `host`/`port` are the inter-broker (PLAINTEXT) listener's."""
    endpoints = endpoint.endpoints or (
        EndPoint("PLAINTEXT", "PLAINTEXT", endpoint.host, endpoint.port),
    )
    data: dict[str, Any] = {
        "version": 5,
        "host": endpoint.host,
        "port": endpoint.port,
        "endpoints": [e.uri() for e in endpoints],
        "listener_security_protocol_map": {e.listener: e.protocol for e in endpoints},
        "jmx_port": -1,
        "timestamp": str(int(time.time() * 1000)),
        "features": {},
    }
    if endpoint.rack is not None:
        data["rack"] = endpoint.rack
    return json_bytes(data)


def decode_broker(broker_id: int, raw: bytes) -> BrokerEndpoint:
    data = json.loads(raw)
    protocols = data.get("listener_security_protocol_map") or {"PLAINTEXT": "PLAINTEXT"}
    listed = data.get("endpoints") or []
    endpoints = tuple(parse_endpoints(listed, protocols)) if listed else ()
    host, port = data.get("host"), data.get("port", -1)
    if host is None:  # no top-level address: the PLAINTEXT listener's, as in Kafka
        plain = [e for e in endpoints if e.listener == "PLAINTEXT"] or list(endpoints)
        host, port = plain[0].host, plain[0].port
    return BrokerEndpoint(broker_id, host.strip("[]"), int(port), data.get("rack"), endpoints)


Moves = dict[int, tuple[tuple[int, ...], tuple[int, ...]]]  # partition -> (adding, removing)


def encode_assignment(
    assignment: dict[int, list[int]], topic_id: str, moves: Moves | None = None
) -> bytes:
    """TopicZNode.encode: version 2, replicas per partition, the topic id, and the replicas
    a reassignment is adding and removing (KIP-455)."""
    moves = moves or {}
    return json_bytes(
        {
            "version": 2,
            "partitions": {str(p): list(r) for p, r in sorted(assignment.items())},
            "topic_id": topic_id,
            "adding_replicas": {str(p): list(a) for p, (a, _) in sorted(moves.items()) if a},
            "removing_replicas": {str(p): list(r) for p, (_, r) in sorted(moves.items()) if r},
        }
    )


def decode_moves(raw: bytes) -> Moves:
    """The partitions being reassigned: (adding, removing) replicas of each (KIP-455)."""
    data = json.loads(raw)
    adding = {int(p): tuple(r) for p, r in (data.get("adding_replicas") or {}).items()}
    removing = {int(p): tuple(r) for p, r in (data.get("removing_replicas") or {}).items()}
    return {p: (adding.get(p, ()), removing.get(p, ())) for p in adding.keys() | removing.keys()}


def decode_assignment(raw: bytes) -> tuple[dict[int, tuple[int, ...]], str | None]:
    data = json.loads(raw)
    partitions = {int(p): tuple(int(b) for b in r) for p, r in data["partitions"].items()}
    return partitions, data.get("topic_id")


def encode_partition_state(state: PartitionState) -> bytes:
    """TopicPartitionStateZNode.encode (Kafka: `LeaderIsrAndControllerEpoch`)."""
    return json_bytes(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(
    topic: str, partition: int, raw: bytes, replicas: tuple[int, ...]
) -> PartitionState:
    data = json.loads(raw)
    return PartitionState(
        topic,
        partition,
        leader=int(data["leader"]),
        leader_epoch=int(data["leader_epoch"]),
        replicas=replicas,
        isr=tuple(int(b) for b in data["isr"]),
        controller_epoch=int(data["controller_epoch"]),
    )


def encode_topic_config(configs: dict[str, str]) -> bytes:
    return json_bytes({"version": 1, "config": dict(configs)})


def decode_topic_config(raw: bytes | None) -> dict[str, str]:
    if not raw:
        return {}
    return {str(k): str(v) for k, v in json.loads(raw).get("config", {}).items()}

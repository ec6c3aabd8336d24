"""Describe the KRaft quorum, as Kafka's kafka-metadata-quorum.sh does.

    kafka-ref metadata-quorum --bootstrap-controller 127.0.0.1:9093 describe --status
    kafka-ref metadata-quorum --bootstrap-controller 127.0.0.1:9093 describe --replication

`--status` prints the cluster id, the leader and its epoch, the high watermark, how far
the slowest voter is behind (in offsets and in time) and the voters; `--replication` one
line per voter and observer: its log end offset, its lag behind the leader, when it last
fetched and when it last caught up. The output is Kafka's, line for line, so a reader of
Kafka's documentation reads it the same way.

The tool asks the controller it is given for the controllers and the active one
(DescribeCluster to the controller listener, KIP-919), then the active one for the quorum
(DescribeQuorum, KIP-595). A controller that cannot be reached, or a quorum without a
leader, is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import base64
import sys
import uuid
from typing import Any

from kafka_ref.client.connection import BrokerConnection
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    ApiKey,
    DescribeClusterRequest,
    DescribeQuorumRequest,
)
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.server.controller_server import CONTROLLER_ENDPOINT_TYPE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-controller",
        required=True,
        metavar="HOST:PORT",
        help="a controller's controller listener",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    describe = sub.add_parser("describe", help="describe the quorum")
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="the leader, epoch, HW and voters")
    what.add_argument("--replication", action="store_true", help="one line per replica")


def _connect(address: str) -> BrokerConnection:
    from kafka_ref.cli import UsageError

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--bootstrap-controller {address!r} is not HOST:PORT")
    return BrokerConnection(host, int(port), client_id="kafka-ref-metadata-quorum").connect()


def describe(address: str) -> tuple[str, Any]:
    """(cluster id, the DescribeQuorum partition of the metadata log) from the leader."""
    connection = _connect(address)
    try:
        cluster = connection.request(
            ApiKey.DESCRIBE_CLUSTER,
            DescribeClusterRequest(endpoint_type=CONTROLLER_ENDPOINT_TYPE),
        )
        if cluster.error_code != ErrorCode.NO_ERROR:
            raise KafkaError(f"DescribeCluster: {cluster.error_message}", code=cluster.error_code)
        leader = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
        if leader is None:
            raise KafkaError("the quorum has no leader now", code=ErrorCode.NOT_CONTROLLER)
    finally:
        connection.close()
    connection = BrokerConnection(leader.host, leader.port, client_id="kafka-ref-metadata-quorum")
    connection.connect()
    try:
        answer = connection.request(
            ApiKey.DESCRIBE_QUORUM,
            DescribeQuorumRequest(
                topics=[
                    DescribeQuorumRequest.TopicData(
                        topic_name=METADATA_TOPIC,
                        partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)],
                    )
                ]
            ),
        )
    finally:
        connection.close()
    partition = answer.topics[0].partitions[0]
    if answer.error_code or partition.error_code:
        code = answer.error_code or partition.error_code
        raise KafkaError(f"DescribeQuorum: {ErrorCode(code).name}", code=code)
    return cluster.cluster_id, (partition, answer.nodes)


def _directory_id(value: uuid.UUID | None) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 of the 16 bytes, no padding."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _node(replica: Any, nodes: list) -> str:
    """One voter as Kafka 4.4 prints it: {"id": 1, "endpoints": ["CONTROLLER://h:p"]}, with a
    "directoryId" only when the voter has one (KIP-853)."""
    directory = replica.replica_directory_id
    text = f'{{"id": {replica.replica_id}'
    if directory and directory.int != 0:
        text += f', "directoryId": "{_directory_id(directory)}"'
    node = next((n for n in nodes or () if n.node_id == replica.replica_id), None)
    if node is not None and node.listeners:
        endpoints = ", ".join(f'"{x.name}://{x.host}:{x.port}"' for x in node.listeners)
        text += f', "endpoints": [{endpoints}]'
    return text + "}"


def status_lines(cluster_id: str, partition: Any, nodes: list) -> list[str]:
    """kafka-metadata-quorum.sh describe --status."""
    voters = partition.current_voters
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    slowest = min(voters, key=lambda v: v.log_end_offset)
    if slowest is leader:
        lag_ms = 0
    elif leader.last_caught_up_timestamp >= 0 and slowest.last_caught_up_timestamp >= 0:
        lag_ms = leader.last_caught_up_timestamp - slowest.last_caught_up_timestamp
    else:
        lag_ms = -1

    def listing(replicas: list) -> str:
        return "[" + ", ".join(_node(r, nodes) for r in replicas) + "]"

    return [
        f"ClusterId:              {cluster_id}",
        f"LeaderId:               {partition.leader_id}",
        f"LeaderEpoch:            {partition.leader_epoch}",
        f"HighWatermark:          {partition.high_watermark}",
        f"MaxFollowerLag:         {leader.log_end_offset - slowest.log_end_offset}",
        f"MaxFollowerLagTimeMs:   {lag_ms}",
        f"CurrentVoters:          {listing(voters)}",
        f"CurrentObservers:       {listing(partition.observers)}",
    ]


def replication_lines(partition: Any) -> list[str]:
    """kafka-metadata-quorum.sh describe --replication: a table, tab-separated columns."""
    voters = partition.current_voters
    leader = next(v for v in voters if v.replica_id == partition.leader_id)
    ordered = [(leader, "Leader")]
    ordered += [(v, "Follower") for v in voters if v is not leader]
    ordered += [(o, "Observer") for o in partition.observers]
    headers = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    rows = [
        [
            str(r.replica_id),
            _directory_id(r.replica_directory_id),
            str(r.log_end_offset),
            str(leader.log_end_offset - r.log_end_offset),
            str(r.last_fetch_timestamp),
            str(r.last_caught_up_timestamp),
            status,
        ]
        for r, status in ordered
    ]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return [
        "".join(f"{value:<{width}}\t" for value, width in zip(row, widths, strict=True))
        for row in [headers, *rows]
    ]


def run(args: argparse.Namespace) -> int:
    try:
        cluster_id, (partition, nodes) = describe(args.bootstrap_controller)
    except (KafkaError, OSError) as err:
        print(f"kafka-ref metadata-quorum: {err}", file=sys.stderr)
        return 1
    lines = (
        status_lines(cluster_id, partition, nodes) if args.status else replication_lines(partition)
    )
    print("\n".join(lines))
    return 0

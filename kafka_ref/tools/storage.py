"""Format a KRaft node's directories, as Kafka's kafka-storage.sh does.

    kafka-ref storage random-uuid
    kafka-ref storage format --cluster-id $(kafka-ref storage random-uuid) \
        --config controller.properties
    kafka-ref storage format -t <id> -c server.properties --ignore-formatted

A KRaft node does not invent its cluster: every node of one cluster is formatted with the
same cluster id before its first start, and `format` writes it, with the node's id and a
directory id of its own, to `meta.properties` in every log directory and in
`metadata.log.dir` (Kafka: `StorageTool`, `MetaProperties` version 1). A node started on
directories formatted for another cluster or another node id refuses to start (RAFT-16).

`format` refuses a directory already formatted (exit code 1), unless `--ignore-formatted`,
which leaves it as it is; a cluster id that is not 16 bytes of URL-safe base64 is refused
with exit code 2.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os

from kafka_ref.cluster.embedded import META_PROPERTIES, encode_directory_id, new_cluster_id
from kafka_ref.files import write_atomically
from kafka_ref.metadata.directory_id import new_directory_id
from kafka_ref.server.controller_node import KRaftSettings
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("random-uuid", help="print a new cluster id")
    fmt = sub.add_parser("format", help="write meta.properties in the node's directories")
    fmt.add_argument("-t", "--cluster-id", required=True, help="the cluster's id")
    fmt.add_argument("-c", "--config", required=True, help="the node's properties file")
    fmt.add_argument(
        "-g",
        "--ignore-formatted",
        action="store_true",
        help="leave a directory that is already formatted as it is",
    )


def check_cluster_id(cluster_id: str) -> str:
    """A cluster id is a UUID in URL-safe base64 without padding (Kafka: `Uuid.fromString`)."""
    try:
        raw = base64.urlsafe_b64decode(cluster_id + "=" * (-len(cluster_id) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise ValueError(f"cluster id {cluster_id!r} is not a base64 UUID (16 bytes)")
    return cluster_id


def meta_properties(cluster_id: str, node_id: int) -> str:
    directory_id = encode_directory_id(new_directory_id())
    return (
        "#Written by kafka-ref storage format\n"
        f"node.id={node_id}\ndirectory.id={directory_id}\nversion=1\ncluster.id={cluster_id}\n"
    )


def format_directories(config: KafkaConfig, cluster_id: str, ignore_formatted: bool) -> list[str]:
    """Write meta.properties in each of the node's directories; the ones written.
    FileExistsError names a directory already formatted (unless `ignore_formatted`)."""
    settings = KRaftSettings.from_config(config)
    directories = list(dict.fromkeys([*config.log_dirs, settings.metadata_log_dir]))
    formatted = [d for d in directories if os.path.exists(os.path.join(d, META_PROPERTIES))]
    if formatted and not ignore_formatted:
        raise FileExistsError(
            f"{formatted[0]} is already formatted: use --ignore-formatted to leave it as it is"
        )
    written = []
    for directory in directories:
        if directory in formatted:
            continue
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, META_PROPERTIES)
        write_atomically(path, meta_properties(cluster_id, settings.node_id).encode())
        written.append(directory)
    return written


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    if args.action == "random-uuid":
        print(new_cluster_id())
        return 0
    try:
        cluster_id = check_cluster_id(args.cluster_id)
        config = KafkaConfig.from_file(args.config, {}, {})
        written = format_directories(config, cluster_id, args.ignore_formatted)
    except (ValueError, ConfigError, FileNotFoundError) as err:
        raise UsageError(str(err)) from None
    except FileExistsError as err:
        print(f"kafka-ref storage: {err}")
        return 1
    for directory in written:
        print(f"Formatting {directory} with cluster id {cluster_id}")
    return 0

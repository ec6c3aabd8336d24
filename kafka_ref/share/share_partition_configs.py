"""The broker configs of the share-partition (Kafka: `ShareGroupConfig`, KIP-932).

Kafka 4.4's defaults, each with the bounds Kafka checks: a share-partition locks at most
`group.share.partition.max.record.locks` records in flight (2000), a record is delivered at
most `group.share.delivery.count.limit` times (5), an acquisition lock lasts
`group.share.record.lock.duration.ms` (30 s), and a broker keeps at most
`group.share.max.share.sessions` share sessions (2000). `server/broker_configs.py` merges
these definitions with the broker's others.

Rules: SHARE-18.
"""

from __future__ import annotations

from kafka_ref.config import ConfigDef
from kafka_ref.share.share_partition import SharePartitionConfig

SHARE_PARTITION_DEFS = [
    ConfigDef(
        "group.share.delivery.count.limit",
        "int",
        5,
        "Deliveries of a share group's record before it is archived.",
        2,
    ),
    ConfigDef(
        "group.share.record.lock.duration.ms",
        "int",
        30000,
        "How long a share group's member holds an acquired record.",
        1000,
    ),
    ConfigDef(
        "group.share.partition.max.record.locks",
        "int",
        2000,
        "Records in flight in one share-partition.",
        100,
    ),
    ConfigDef(
        "group.share.max.share.sessions",
        "int",
        2000,
        "Share sessions one broker keeps.",
        1,
    ),
]


def share_partition_config(config) -> SharePartitionConfig:
    """The share-partitions' limits from a broker's config (`KafkaConfig`)."""
    return SharePartitionConfig(
        delivery_count_limit=config["group.share.delivery.count.limit"],
        record_lock_duration_ms=config["group.share.record.lock.duration.ms"],
        max_record_locks=config["group.share.partition.max.record.locks"],
    )

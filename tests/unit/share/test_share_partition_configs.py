"""The share-partition's broker configs: Kafka 4.4's defaults and lower bounds."""

from __future__ import annotations

import pytest

from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from kafka_ref.share.share_partition_configs import share_partition_config

# Kafka 4.4's ShareGroupConfig: (key, default, the least value it accepts)
KAFKA_4_4 = [
    ("group.share.delivery.count.limit", 5, 2),
    ("group.share.record.lock.duration.ms", 30000, 1000),
    ("group.share.partition.max.record.locks", 2000, 100),
    ("group.share.max.share.sessions", 2000, 1),
]


@pytest.mark.spec("SHARE-18")
def test_defaults_and_bounds_are_kafkas():
    config = KafkaConfig.from_props({})
    for key, default, least in KAFKA_4_4:
        assert config[key] == default, key
        assert KafkaConfig.from_props({key: str(least)})[key] == least
        with pytest.raises(ConfigError, match=key):
            KafkaConfig.from_props({key: str(least - 1)})
    limits = share_partition_config(
        KafkaConfig.from_props({"group.share.delivery.count.limit": "3"})
    )
    assert (limits.delivery_count_limit, limits.record_lock_duration_ms) == (3, 30000)
    assert limits.max_record_locks == 2000

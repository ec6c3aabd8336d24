"""The settings the active controller decides with (Kafka: `QuorumController.Builder`,
fed from `KafkaConfig`): the broker session timeout, the defaults for new topics, and the
static topic-config defaults (`min.insync.replicas`, `unclean.leader.election.enable`, and
every other one a new topic's configs are checked against), and the broker configs a
group's configs are checked against (their bounds and defaults, group/group_configs.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_ref.config import LogConfig
from kafka_ref.group.group_configs import BROKER_KEYS
from kafka_ref.server.broker_configs import BROKER_CONFIGS


def _default(name: str):
    return field(default=BROKER_CONFIGS[name].default)


@dataclass(frozen=True)
class ControllerConfig:
    session_timeout_ms: int = _default("broker.session.timeout.ms")
    num_partitions: int = _default("num.partitions")
    default_replication_factor: int = _default("default.replication.factor")
    log_defaults: LogConfig = field(default_factory=LogConfig)
    group_broker_values: dict[str, int] = field(
        default_factory=lambda: {k: BROKER_CONFIGS[k].default for k in BROKER_KEYS}
    )

"""A KRaft controller under test: a QuorumController whose results are committed at once.

Every record a decision returns goes through the metadata serde (written as bytes and read
back, META-2) before it is replayed, so a decision that writes a record Kafka could not
read fails here too.
"""

from __future__ import annotations

import random
import uuid

from kafka_ref.metadata.controller.cluster_control import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.metadata.controller.features import BOOTSTRAP_FEATURES
from kafka_ref.metadata.controller.quorum_controller import QuorumController
from kafka_ref.metadata.controller.replication_control import CreatableTopic
from kafka_ref.metadata.controller.result import ControllerResult
from kafka_ref.metadata.image import PartitionRegistration
from kafka_ref.metadata.serde import deserialize, serialize

CLUSTER_ID = "kafka-ref-kraft-test"
SUPPORTED = {name: (0, level) for name, level in BOOTSTRAP_FEATURES.items()}


class Harness:
    CONFIG = ControllerConfig()

    def __init__(self, brokers: int = 3, *, seed: int = 0, config: ControllerConfig | None = None):
        self.rng = random.Random(seed)
        self.qc = QuorumController(CLUSTER_ID, config or self.CONFIG, rng=random.Random(seed))
        self.now = 0
        self.log: list = []  # every committed record, in order
        self.commit(self.qc.bootstrap())
        self.epochs: dict[int, int] = {}
        self.incarnations: dict[int, uuid.UUID] = {}
        for broker_id in range(brokers):
            self.register(broker_id)
            self.heartbeat(broker_id)

    @property
    def image(self):
        return self.qc.image

    def commit(self, result: ControllerResult):
        records = [deserialize(serialize(entry)) for entry in result.records]
        self.qc.replay(records)
        self.log += records
        return result.response

    def registration(
        self, broker_id: int, *, new: bool = True, previous_epoch: int = -1, log_dirs=()
    ):
        if new or broker_id not in self.incarnations:
            self.incarnations[broker_id] = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        return BrokerRegistrationRequest(
            broker_id,
            CLUSTER_ID,
            self.incarnations[broker_id],
            features=SUPPORTED,
            log_dirs=tuple(log_dirs),
            previous_broker_epoch=previous_epoch,
        )

    def register(self, broker_id: int, now_ms: int = 0, **kwargs):
        reply = self.commit(self.qc.register_broker(self.registration(broker_id, **kwargs), now_ms))
        if reply.error.ok:
            self.epochs[broker_id] = reply.broker_epoch
        return reply

    def heartbeat(self, broker_id: int, now_ms: int = 0, *, offset: int | None = None, **kwargs):
        """A heartbeat from a broker that has replayed the whole log (or up to `offset`)."""
        offset = self.qc.next_offset - 1 if offset is None else offset
        request = BrokerHeartbeatRequest(broker_id, self.epochs[broker_id], offset, **kwargs)
        return self.commit(self.qc.broker_heartbeat(request, now_ms))

    def create(self, name: str, partitions: int = 1, rf: int = 3, **configs: str):
        topic = CreatableTopic(name, partitions, rf, configs=configs)
        [result] = self.commit(self.qc.create_topics([topic]))
        assert result.error.ok, result.error
        return result.topic_id

    def create_assigned(self, name: str, assignments: dict[int, list[int]], **configs: str):
        topic = CreatableTopic(name, assignments=assignments, configs=configs)
        [result] = self.commit(self.qc.create_topics([topic]))
        assert result.error.ok, result.error
        return result.topic_id

    def partition(self, name: str, index: int = 0) -> PartitionRegistration:
        topic = self.image.topic_by_name(name)
        assert topic is not None
        return topic.partitions[index]

    def fence(self, broker_id: int, now_ms: int = 100_000) -> None:
        """Let every other broker heartbeat at `now_ms` and fence `broker_id`, silent since."""
        for other in self.image.brokers:
            if other != broker_id and not self.image.brokers[other].fenced:
                self.heartbeat(other, now_ms)
        fenced = self.commit(self.qc.fence_stale_broker(now_ms))
        assert fenced == broker_id, fenced

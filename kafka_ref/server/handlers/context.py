"""What a request handler may use: the broker's core objects and a way to answer.

Every handler is a function `handler(apis, request)`. Its first argument is an `ApiContext`:
the objects a handler translates a request into calls on (the `ReplicaManager`, the
controller, the group and transaction coordinators, the authorizer...) and `send`, to answer
a request later (a fetch that waited in the purgatory); every answer passes the client
quotas there (server/throttling.py). Kafka's `KafkaApis` holds the same
objects as constructor arguments; kafka-ref gives them their own class so that a handler
module depends on what it uses and not on the dispatcher (`KafkaApis` in `__init__.py`), which
depends on every handler.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.clock import Clock
from kafka_ref.cluster.embedded import EmbeddedController
from kafka_ref.group.coordinator import GroupCoordinator
from kafka_ref.quota.manager import QuotaManagers
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.security.credentials import CredentialStore, ZkCredentialStore
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.add_partitions_manager import AddPartitionsToTxnManager
from kafka_ref.server.dynamic_config import DynamicBrokerConfig
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.loopback import Loopback
from kafka_ref.server.purgatory import DelayedOperationPurgatory
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response, encode_response
from kafka_ref.server.throttling import apply_quotas
from kafka_ref.server.txn_adapter import TxnCoordinatorAdapter
from kafka_ref.txn.producer_ids import ProducerIdManager

logger = logging.getLogger("kafka_ref.server.handlers")


@dataclass
class ApiContext:
    """The broker's core objects, as every handler sees them."""

    config: KafkaConfig
    controller: EmbeddedController
    replica_manager: ReplicaManager
    fetch_purgatory: DelayedOperationPurgatory
    clock: Clock
    group_coordinator: GroupCoordinator
    producer_ids: ProducerIdManager | None = None  # default: blocks from the controller
    txn: TxnCoordinatorAdapter | None = None  # the transaction coordinator, once wired
    share_coordinator: Any = None  # the ShareCoordinatorAdapter (KIP-932), once wired
    add_partitions: AddPartitionsToTxnManager | None = None  # default: from the config
    authorizer: Authorizer | None = None  # None: authorization off (SEC-17)
    credentials: CredentialStore | ZkCredentialStore | None = None  # SCRAM users (SEC-22)
    dynamic_config: DynamicBrokerConfig = None  # type: ignore[assignment]  # default: own
    quotas: QuotaManagers = field(default_factory=QuotaManagers)  # client quotas (QUOTA-6)
    kafka_controller: Any = None  # ZooKeeper mode: this broker's KafkaController
    forwarding: Any = None  # KRaft: the ForwardingManager, to the active controller (KIP-590)
    loopback: Loopback | None = None  # requests to this broker itself (TXN-24)
    share_partitions: Any = None  # the SharePartitionManager (share groups, KIP-932)

    def __post_init__(self) -> None:
        if self.dynamic_config is None:  # the broker passes the one its parts reconfigure by
            self.dynamic_config = DynamicBrokerConfig(self.config)
        if self.producer_ids is None:
            self.producer_ids = ProducerIdManager(self.controller.endpoint.node_id, self.controller)
        if self.add_partitions is None:
            self.add_partitions = AddPartitionsToTxnManager(
                self.controller,
                self.config["transaction.state.log.num.partitions"],
                self.config["transaction.partition.verification.enable"],
                InterBrokerSecurity.from_config(self.config),
                self.loopback,
            )

    @property
    def broker_id(self) -> int:
        return self.controller.endpoint.node_id

    def send(self, request: Request, result: Any) -> None:
        """Encode `result` (a body, a Response, or None for no response) and complete."""
        if request.done:
            return  # already answered, e.g. by closing the connection
        if self.quotas.enabled:  # throttle time in the answer, the connection muted
            result = apply_quotas(self.quotas, self.clock, request, result)
        if result is None or isinstance(result, Response):
            request.complete(result)
            return
        try:
            response = encode_response(
                request.api_key, request.api_version, request.correlation_id, result
            )
        except Exception as err:  # a bug: never leave the connection waiting forever
            logger.exception("cannot encode the response to %r", request)
            request.close_connection(f"cannot encode the response: {err}")
            return
        request.complete(response)

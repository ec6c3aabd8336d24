"""KafkaApis: the request handlers, one thin module per API family.

Kafka's `KafkaApis.handle` is a big `match` on the request's API key that calls
`handleProduceRequest`, `handleFetchRequest`, ... Each handler translates: it takes the
decoded request, calls the broker's core objects (`ReplicaManager`, the controller, the
log), and turns their results and typed errors into the response message. It contains no
storage logic of its own. kafka-ref keeps the same split, with one module per family:

    metadata.py   ApiVersions (18), Metadata (3)
    produce.py    Produce (0)
    fetch.py      Fetch (1) and its DelayedFetch
    follower_fetch.py  followers' Fetch (replica_id >= 0), OffsetsForLeaderEpoch (23)
    offsets.py    ListOffsets (2), DeleteRecords (21)
    admin.py      CreateTopics (19), DeleteTopics (20), CreatePartitions (37)
    configs.py    DescribeConfigs (32)
    txn.py        InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25),
                  EndTxn (26), WriteTxnMarkers (27), TxnOffsetCommit (28): transactions
    txn_admin.py  DescribeProducers (61), DescribeTransactions (65), ListTransactions (66)
    sasl.py       SaslHandshake (17), SaslAuthenticate (36) on listeners without SASL
    acls.py       DescribeAcls (29), CreateAcls (30), DeleteAcls (31); authz.py: the
                  one call each handler makes to the authorizer
    groups.py     FindCoordinator (10), JoinGroup (11), SyncGroup (14), Heartbeat (12),
                  LeaveGroup (13), OffsetCommit (8), OffsetFetch (9), DescribeGroups (15),
                  ListGroups (16), DeleteGroups (42): the group coordinator's APIs

A handler is a function `handler(apis, request)` that returns the response body (a
message value), a ready `Response`, `None` for "no response" (acks=0), or `DEFERRED` when
it has arranged to answer later (a fetch waiting in the purgatory calls `apis.send`).
Errors a client can act on travel as error codes inside the response (per partition or
per topic, from each `KafkaError.code`); anything else closes the connection, as Kafka
does with a request it cannot answer.

Rules: BROKER-6 (with metadata.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_ref.clock import Clock
from kafka_ref.cluster.embedded import EmbeddedController
from kafka_ref.group.coordinator import GroupCoordinator
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.server.add_partitions_manager import AddPartitionsToTxnManager
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.loopback import Loopback
from kafka_ref.server.purgatory import DelayedOperationPurgatory
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED, Response, encode_response
from kafka_ref.server.txn_adapter import TxnCoordinatorAdapter
from kafka_ref.txn.producer_ids import ProducerIdManager

logger = logging.getLogger("kafka_ref.server.handlers")


Handler = Callable[["KafkaApis", Request], Any]


@dataclass
class KafkaApis:
    """Dispatches each request to its handler (Kafka: `KafkaApis`)."""

    config: KafkaConfig
    controller: EmbeddedController
    replica_manager: ReplicaManager
    fetch_purgatory: DelayedOperationPurgatory
    clock: Clock
    group_coordinator: GroupCoordinator
    producer_ids: ProducerIdManager | None = None  # default: blocks from the controller
    txn: TxnCoordinatorAdapter | None = None  # the transaction coordinator, once wired
    add_partitions: AddPartitionsToTxnManager | None = None  # default: from the config
    authorizer: Authorizer | None = None  # None: authorization off (SEC-17)

    def __post_init__(self) -> None:
        from kafka_ref.server.handlers import (
            acls,
            admin,
            alter_configs,
            configs,
            fetch,
            follower_fetch,
            groups,
            metadata,
            offsets,
            produce,
            sasl,
            txn,
            txn_admin,
        )

        if self.producer_ids is None:
            self.producer_ids = ProducerIdManager(self.controller.endpoint.node_id, self.controller)
        # the coordinators' requests to this very broker skip the socket (server/loopback.py)
        self.loopback = Loopback(self.broker_id, self.controller.endpoint.host, self.handle)
        if self.add_partitions is None:
            self.add_partitions = AddPartitionsToTxnManager(
                self.controller, self.config["transaction.state.log.num.partitions"],
                self.config["transaction.partition.verification.enable"], self.loopback,
            )  # fmt: skip

        self.handlers: dict[int, Handler] = {
            ApiKey.PRODUCE: produce.handle_produce,
            ApiKey.FETCH: fetch.handle_fetch,
            ApiKey.LIST_OFFSETS: offsets.handle_list_offsets,
            ApiKey.METADATA: metadata.handle_metadata,
            ApiKey.API_VERSIONS: metadata.handle_api_versions,
            ApiKey.DESCRIBE_CLUSTER: metadata.handle_describe_cluster,
            ApiKey.CREATE_TOPICS: admin.handle_create_topics,
            ApiKey.DELETE_TOPICS: admin.handle_delete_topics,
            ApiKey.DELETE_RECORDS: offsets.handle_delete_records,
            ApiKey.INIT_PRODUCER_ID: txn.handle_init_producer_id,
            ApiKey.ADD_PARTITIONS_TO_TXN: txn.handle_add_partitions_to_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: txn.handle_add_offsets_to_txn,
            ApiKey.END_TXN: txn.handle_end_txn,
            ApiKey.WRITE_TXN_MARKERS: txn.handle_write_txn_markers,
            ApiKey.TXN_OFFSET_COMMIT: txn.handle_txn_offset_commit,
            ApiKey.DESCRIBE_PRODUCERS: txn_admin.handle_describe_producers,
            ApiKey.DESCRIBE_TRANSACTIONS: txn_admin.handle_describe_transactions,
            ApiKey.LIST_TRANSACTIONS: txn_admin.handle_list_transactions,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: follower_fetch.handle_offsets_for_leader_epoch,
            ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
            ApiKey.ALTER_CONFIGS: alter_configs.handle_alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs.handle_incremental_alter_configs,
            ApiKey.CREATE_PARTITIONS: admin.handle_create_partitions,
            ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
            ApiKey.JOIN_GROUP: groups.handle_join_group,
            ApiKey.SYNC_GROUP: groups.handle_sync_group,
            ApiKey.HEARTBEAT: groups.handle_heartbeat,
            ApiKey.LEAVE_GROUP: groups.handle_leave_group,
            ApiKey.OFFSET_COMMIT: groups.handle_offset_commit,
            ApiKey.OFFSET_FETCH: groups.handle_offset_fetch,
            ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
            ApiKey.LIST_GROUPS: groups.handle_list_groups,
            ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
            ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
            ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
            ApiKey.CREATE_ACLS: acls.handle_create_acls,
            ApiKey.DELETE_ACLS: acls.handle_delete_acls,
        }

    @property
    def broker_id(self) -> int:
        return self.controller.endpoint.node_id

    def handle(self, request: Request) -> None:
        """Run the request's handler and hand its answer to the connection."""
        handler = self.handlers.get(request.api_key)
        if handler is None:  # declared in the protocol registry but not served: a bug
            request.close_connection(f"no handler for api key {request.api_key}")
            return
        request.dequeued_ns = time.monotonic_ns()  # the request metrics' stages
        try:
            result = handler(self, request)
        except Exception as err:
            logger.exception("error handling %r", request)
            request.close_connection(f"error handling request: {err}")
            return
        request.local_done_ns = time.monotonic_ns()
        if result is not DEFERRED:
            self.send(request, result)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "handled %s v%d corr=%d from %s (%s) in %.2f ms%s",
                ApiKey(request.api_key).name, request.api_version, request.correlation_id,
                request.connection.name, request.client_id,
                (request.local_done_ns - request.dequeued_ns) / 1e6,
                " (delayed)" if result is DEFERRED else "",
            )  # fmt: skip

    def send(self, request: Request, result: Any) -> None:
        """Encode `result` (a body, a Response, or None for no response) and complete."""
        if request.done:
            return  # already answered, e.g. by closing the connection
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

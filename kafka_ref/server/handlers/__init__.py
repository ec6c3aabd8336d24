"""KafkaApis: the request handlers, one thin module per API family.

Kafka's `KafkaApis.handle` is a big `match` on the request's API key that calls
`handleProduceRequest`, `handleFetchRequest`, ... Each handler translates: it takes the
decoded request, calls the broker's core objects (`ReplicaManager`, the controller, the
log), and turns their results and typed errors into the response message. It contains no
storage logic of its own. kafka-ref keeps the same split, with one module per family:

    metadata.py   ApiVersions (18), Metadata (3), DescribeCluster (60)
    describe_topic_partitions.py  DescribeTopicPartitions (75): Metadata's partitions, paged
    controller_requests.py  LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6) from the
                  controller, AlterPartition (56) to it: ZooKeeper mode's inter-broker APIs
    produce.py    Produce (0)
    fetch.py      Fetch (1) and its DelayedFetch; fetch_partitions.py: what a Fetch asks
                  for across its versions (topic ids, ReplicaState) and its answer
    follower_fetch.py  followers' Fetch (replica_id >= 0), OffsetsForLeaderEpoch (23)
    leader_hints.py  where a partition's leader is now, in Produce and Fetch errors (KIP-951)
    offsets.py    ListOffsets (2), DeleteRecords (21)
    admin.py      CreateTopics (19), DeleteTopics (20), CreatePartitions (37)
    configs.py    DescribeConfigs (32)
    txn.py        InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25),
                  EndTxn (26), WriteTxnMarkers (27), TxnOffsetCommit (28): transactions
    txn_admin.py  DescribeProducers (61), DescribeTransactions (65), ListTransactions (66)
    sasl.py       SaslHandshake (17), SaslAuthenticate (36) on listeners without SASL
    client_quotas.py  DescribeClientQuotas (48), AlterClientQuotas (49); every answer
                  passes the client quotas on its way out (context.py, server/throttling.py)
    scram_users.py  DescribeUserScramCredentials (50), AlterUserScramCredentials (51)
    acls.py       DescribeAcls (29), CreateAcls (30), DeleteAcls (31); authz.py: the
                  one call each handler makes to the authorizer
    groups.py     FindCoordinator (10), JoinGroup (11), SyncGroup (14), Heartbeat (12),
                  LeaveGroup (13), DescribeGroups (15), ListGroups (16), DeleteGroups (42):
                  the group coordinator's APIs
    group_offsets.py  OffsetCommit (8), OffsetFetch (9), OffsetDelete (47): committed offsets
    consumer_groups.py  ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69): the
                  consumer group protocol (KIP-848)
    share_fetch.py  ShareFetch (78), ShareAcknowledge (79): share groups' records (KIP-932)
    share_state.py  InitializeShareGroupState (83), ReadShareGroupState (84),
                  WriteShareGroupState (85), DeleteShareGroupState (86),
                  ReadShareGroupStateSummary (87): the share coordinator (KIP-932)
    share_groups.py  ShareGroupHeartbeat (76), ShareGroupDescribe (77),
                  DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
                  DeleteShareGroupOffsets (92): share groups (KIP-932)

A handler is a function `handler(apis, request)`, where `apis` is the `ApiContext`
(context.py: the broker's core objects, what a handler may use), that returns the response body (a
message value), a ready `Response`, `None` for "no response" (acks=0), or `DEFERRED` when
it has arranged to answer later (a fetch waiting in the purgatory calls `apis.send`).
Errors a client can act on travel as error codes inside the response (per partition or
per topic, from each `KafkaError.code`); anything else closes the connection, as Kafka
does with a request it cannot answer.

A KRaft broker forwards the requests only its active controller decides (`FORWARDED`:
the topics', configs', ACLs', SCRAM users', client quotas', reassignments' and elections'
changes) in an Envelope, and hands its answer back (server/forwarding_manager.py,
KBROKER-11, KBROKER-18).

A request answered from the broker's picture of the cluster (`FROM_THE_PICTURE`: Metadata,
DescribeCluster, FindCoordinator, and CreateTopics and CreatePartitions, which place
replicas on the live brokers) waits, on a broker of a ZooKeeper cluster that has just
registered, until the controller's first UpdateMetadata has told it the live brokers and
the partition states (cluster/zk_metadata.py, CTRL-32).

Rules: BROKER-6 (with metadata.py), CTRL-32, KBROKER-11.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_ref.protocol.messages import ApiKey
from kafka_ref.server.forwarding_manager import FORWARDED
from kafka_ref.server.handlers import (
    acls,
    admin,
    alter_configs,
    client_quotas,
    configs,
    consumer_groups,
    controller_requests,
    describe_topic_partitions,
    fetch,
    follower_fetch,
    group_offsets,
    groups,
    log_dirs,
    metadata,
    offsets,
    produce,
    reassignments,
    sasl,
    scram_users,
    share_fetch,
    share_groups,
    share_state,
    txn,
    txn_admin,
)
from kafka_ref.server.handlers.context import ApiContext
from kafka_ref.server.loopback import Loopback
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED

logger = logging.getLogger("kafka_ref.server.handlers")


Handler = Callable[[ApiContext, Request], Any]

# Answered from the picture of the cluster: held until it is complete (CTRL-32).
FROM_THE_PICTURE = frozenset(
    {
        ApiKey.METADATA,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.FIND_COORDINATOR,
        ApiKey.CREATE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    }
)


@dataclass
class KafkaApis(ApiContext):
    """Dispatches each request to its handler (Kafka: `KafkaApis`)."""

    def __post_init__(self) -> None:
        # the coordinators' requests to this very broker skip the socket (server/loopback.py)
        self.loopback = Loopback(
            self.controller.endpoint.node_id, self.controller.endpoint.host, self.handle
        )
        super().__post_init__()
        self.handlers: dict[int, Handler] = {
            ApiKey.PRODUCE: produce.handle_produce,
            ApiKey.FETCH: fetch.handle_fetch,
            ApiKey.LIST_OFFSETS: offsets.handle_list_offsets,
            ApiKey.METADATA: metadata.handle_metadata,
            ApiKey.LEADER_AND_ISR: controller_requests.handle_leader_and_isr,
            ApiKey.STOP_REPLICA: controller_requests.handle_stop_replica,
            ApiKey.UPDATE_METADATA: controller_requests.handle_update_metadata,
            ApiKey.ALTER_PARTITION: controller_requests.handle_alter_partition,
            ApiKey.API_VERSIONS: metadata.handle_api_versions,
            ApiKey.DESCRIBE_CLUSTER: metadata.handle_describe_cluster,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: (
                describe_topic_partitions.handle_describe_topic_partitions
            ),
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
            ApiKey.OFFSET_COMMIT: group_offsets.handle_offset_commit,
            ApiKey.OFFSET_FETCH: group_offsets.handle_offset_fetch,
            ApiKey.OFFSET_DELETE: group_offsets.handle_offset_delete,
            ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
            ApiKey.LIST_GROUPS: groups.handle_list_groups,
            ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.handle_consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.handle_consumer_group_describe,
            ApiKey.SHARE_GROUP_HEARTBEAT: share_groups.handle_share_group_heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: share_groups.handle_share_group_describe,
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: share_groups.handle_describe_share_group_offsets,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: share_groups.handle_alter_share_group_offsets,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: share_groups.handle_delete_share_group_offsets,
            ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
            ApiKey.DESCRIBE_ACLS: acls.handle_describe_acls,
            ApiKey.CREATE_ACLS: acls.handle_create_acls,
            ApiKey.DELETE_ACLS: acls.handle_delete_acls,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (
                scram_users.handle_describe_user_scram_credentials
            ),
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram_users.handle_alter_user_scram_credentials,
            ApiKey.DESCRIBE_LOG_DIRS: log_dirs.handle_describe_log_dirs,
            ApiKey.ELECT_LEADERS: reassignments.handle_elect_leaders,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
                reassignments.handle_alter_partition_reassignments
            ),
            ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignments.handle_list_partition_reassignments,
            ApiKey.SHARE_FETCH: share_fetch.handle_share_fetch,
            ApiKey.SHARE_ACKNOWLEDGE: share_fetch.handle_share_acknowledge,
            ApiKey.DESCRIBE_CLIENT_QUOTAS: client_quotas.handle_describe_client_quotas,
            ApiKey.ALTER_CLIENT_QUOTAS: client_quotas.handle_alter_client_quotas,
            ApiKey.INITIALIZE_SHARE_GROUP_STATE: share_state.handle_initialize_share_group_state,
            ApiKey.READ_SHARE_GROUP_STATE: share_state.handle_read_share_group_state,
            ApiKey.WRITE_SHARE_GROUP_STATE: share_state.handle_write_share_group_state,
            ApiKey.DELETE_SHARE_GROUP_STATE: share_state.handle_delete_share_group_state,
            ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (
                share_state.handle_read_share_group_state_summary
            ),
        }

    def handle(self, request: Request) -> None:
        """Run the request's handler and hand its answer to the connection."""
        handler = self.handlers.get(request.api_key)
        if handler is None:  # declared in the protocol registry but not served: a bug
            request.close_connection(f"no handler for api key {request.api_key}")
            return
        if getattr(request.connection, "muted", False):  # throttled: after the throttle
            request.connection.hold(request)  # (QUOTA-8, server/network.py)
            return
        if self.forwarding is not None and request.api_key in FORWARDED:
            request.dequeued_ns = time.monotonic_ns()  # KRaft: the controller answers it
            if request.api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
                alter_configs.forward(self, request)  # the broker's checks first (KBROKER-18)
            else:
                self.forwarding.forward(request, self.send)  # (KBROKER-11)
            return
        if request.api_key in FROM_THE_PICTURE and self.controller.hold(
            lambda: self.handle(request)
        ):  # a broker that just registered, until the controller told it the cluster (CTRL-32)
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
                ApiKey(request.api_key).name,
                request.api_version,
                request.correlation_id,
                request.connection.name,
                request.client_id,
                (request.local_done_ns - request.dequeued_ns) / 1e6,
                " (delayed)" if result is DEFERRED else "",
            )

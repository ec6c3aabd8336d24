"""The API registry: every request kafka-ref understands, by API key.

Each Kafka request starts with a 16-bit *API key* that says what it is (0 Produce, 1 Fetch,
3 Metadata, 18 ApiVersions...; api_keys.py) and a 16-bit *API version*. The pair decides
the schema of the rest of the request and of its response. This module maps
`api_key -> Api(name, request, response, min_version, max_version)`; the version range is
exactly what the broker advertises in its ApiVersions response, so declaring a wider range
in a message module is all it takes to offer a new version (PROTO-11).

The ranges follow one rule: the floor is Kafka 4.x's floor (KIP-896 removed the older
versions), the ceiling the smallest maximum among the common clients, so that librdkafka,
kafka-python, aiokafka and KafkaJS all pick the same versions and every version a client
may send is declared. The group and transaction APIs go as high as Kafka 4.4, each version
with its semantics, except the versions of transactions v2 (KIP-890 part 2: EndTxn v5,
TxnOffsetCommit v5-v6), which clients send only to a Kafka whose `transaction.version` is 2:

    ApiVersions 0-3   Metadata 0-7   Produce 0-7 (0-2 answered UNSUPPORTED_VERSION)
    Fetch 4-10   ListOffsets 1-3   CreateTopics 2-4   DeleteTopics 1-3
    DeleteRecords 0-1   InitProducerId 0-5   OffsetForLeaderEpoch 2-3 (followers)
    transactions: AddPartitionsToTxn 0-5   AddOffsetsToTxn 0-4   EndTxn 0-4
    WriteTxnMarkers 1-2 (brokers)
    from the controller (ZooKeeper mode): LeaderAndIsr 4   StopReplica 3   UpdateMetadata 6;
    to it: AlterPartition 0   TxnOffsetCommit 0-4   DescribeProducers 0
    DescribeTransactions 0   ListTransactions 0-2
    DescribeConfigs 1-2   CreatePartitions 0-1   DescribeLogDirs 1-4
    security: SaslHandshake 0-1   SaslAuthenticate 0-2
    SCRAM users: DescribeUserScramCredentials 0   AlterUserScramCredentials 0 (KIP-554)
    ACLs: DescribeAcls 1   CreateAcls 1   DeleteAcls 1
    client quotas: DescribeClientQuotas 0-1   AlterClientQuotas 0-1
    replicas (to the controller): ElectLeaders 0-2   AlterPartitionReassignments 0
    ListPartitionReassignments 0
    consumer groups: FindCoordinator 0-6   JoinGroup 0-9   SyncGroup 0-5   Heartbeat 0-4
    LeaveGroup 0-5   OffsetCommit 2-10   OffsetFetch 1-10   DescribeGroups 0-6
    ListGroups 0-5   DeleteGroups 0-3   OffsetDelete 0

One module per API, named by key (`api_00_produce.py`), declares its request and response and
explains what the API is for. Other APIs join by adding a module and one line below.
Advertising an API changes what clients do: with FindCoordinator, librdkafka and
kafka-python turn on their group coordinator logic, so an API joins only with its handler.
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_ref.protocol.api_keys import ApiKey  # re-exported: most callers import it here
from kafka_ref.protocol.messages.api_00_produce import ProduceRequest, ProduceResponse
from kafka_ref.protocol.messages.api_01_fetch import FetchRequest, FetchResponse
from kafka_ref.protocol.messages.api_02_list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka_ref.protocol.messages.api_03_metadata import MetadataRequest, MetadataResponse
from kafka_ref.protocol.messages.api_04_leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
)
from kafka_ref.protocol.messages.api_05_stop_replica import StopReplicaRequest, StopReplicaResponse
from kafka_ref.protocol.messages.api_06_update_metadata import (
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from kafka_ref.protocol.messages.api_08_offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
)
from kafka_ref.protocol.messages.api_09_offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafka_ref.protocol.messages.api_10_find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafka_ref.protocol.messages.api_11_join_group import JoinGroupRequest, JoinGroupResponse
from kafka_ref.protocol.messages.api_12_heartbeat import HeartbeatRequest, HeartbeatResponse
from kafka_ref.protocol.messages.api_13_leave_group import LeaveGroupRequest, LeaveGroupResponse
from kafka_ref.protocol.messages.api_14_sync_group import SyncGroupRequest, SyncGroupResponse
from kafka_ref.protocol.messages.api_15_describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from kafka_ref.protocol.messages.api_16_list_groups import ListGroupsRequest, ListGroupsResponse
from kafka_ref.protocol.messages.api_17_sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_ref.protocol.messages.api_18_api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from kafka_ref.protocol.messages.api_19_create_topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from kafka_ref.protocol.messages.api_20_delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka_ref.protocol.messages.api_21_delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)
from kafka_ref.protocol.messages.api_22_init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from kafka_ref.protocol.messages.api_23_offsets_for_leader_epoch import (
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from kafka_ref.protocol.messages.api_24_add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)
from kafka_ref.protocol.messages.api_25_add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from kafka_ref.protocol.messages.api_26_end_txn import EndTxnRequest, EndTxnResponse
from kafka_ref.protocol.messages.api_27_write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka_ref.protocol.messages.api_28_txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka_ref.protocol.messages.api_29_describe_acls import (
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kafka_ref.protocol.messages.api_30_create_acls import CreateAclsRequest, CreateAclsResponse
from kafka_ref.protocol.messages.api_31_delete_acls import DeleteAclsRequest, DeleteAclsResponse
from kafka_ref.protocol.messages.api_32_describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from kafka_ref.protocol.messages.api_33_alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka_ref.protocol.messages.api_35_describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafka_ref.protocol.messages.api_36_sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from kafka_ref.protocol.messages.api_37_create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)
from kafka_ref.protocol.messages.api_42_delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from kafka_ref.protocol.messages.api_43_elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
)
from kafka_ref.protocol.messages.api_45_alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from kafka_ref.protocol.messages.api_46_list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka_ref.protocol.messages.api_47_offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
)
from kafka_ref.protocol.messages.api_48_describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka_ref.protocol.messages.api_49_alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
)
from kafka_ref.protocol.messages.api_50_describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka_ref.protocol.messages.api_51_alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from kafka_ref.protocol.messages.api_56_alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
)
from kafka_ref.protocol.messages.api_60_describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from kafka_ref.protocol.messages.api_61_describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from kafka_ref.protocol.messages.api_65_describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from kafka_ref.protocol.messages.api_66_list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka_ref.protocol.schema import Message


class Api(NamedTuple):
    """One API: its name, its two schemas and the versions the broker advertises."""

    name: str
    request: Message
    response: Message
    min_version: int
    max_version: int

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)


def _api(name: str, request: Message, response: Message) -> Api:
    # One source of truth: the range is the one the message modules declare, and a request
    # and its response must agree on it.
    if request.valid_versions != response.valid_versions or request.api_key != response.api_key:
        raise ValueError(f"{name}: request and response disagree on api key or versions")
    versions = request.valid_versions
    return Api(name, request, response, versions.start, versions.stop - 1)


APIS: dict[int, Api] = {
    api.request.api_key: api
    for api in (
        _api("Produce", ProduceRequest, ProduceResponse),
        _api("Fetch", FetchRequest, FetchResponse),
        _api("ListOffsets", ListOffsetsRequest, ListOffsetsResponse),
        _api("Metadata", MetadataRequest, MetadataResponse),
        _api("LeaderAndIsr", LeaderAndIsrRequest, LeaderAndIsrResponse),
        _api("StopReplica", StopReplicaRequest, StopReplicaResponse),
        _api("UpdateMetadata", UpdateMetadataRequest, UpdateMetadataResponse),
        _api("OffsetCommit", OffsetCommitRequest, OffsetCommitResponse),
        _api("OffsetFetch", OffsetFetchRequest, OffsetFetchResponse),
        _api("FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse),
        _api("JoinGroup", JoinGroupRequest, JoinGroupResponse),
        _api("Heartbeat", HeartbeatRequest, HeartbeatResponse),
        _api("LeaveGroup", LeaveGroupRequest, LeaveGroupResponse),
        _api("SyncGroup", SyncGroupRequest, SyncGroupResponse),
        _api("DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse),
        _api("ListGroups", ListGroupsRequest, ListGroupsResponse),
        _api("SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse),
        _api("ApiVersions", ApiVersionsRequest, ApiVersionsResponse),
        _api("CreateTopics", CreateTopicsRequest, CreateTopicsResponse),
        _api("DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse),
        _api("DeleteRecords", DeleteRecordsRequest, DeleteRecordsResponse),
        _api("InitProducerId", InitProducerIdRequest, InitProducerIdResponse),
        _api("OffsetForLeaderEpoch", OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse),
        _api("AddPartitionsToTxn", AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
        _api("AddOffsetsToTxn", AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
        _api("EndTxn", EndTxnRequest, EndTxnResponse),
        _api("WriteTxnMarkers", WriteTxnMarkersRequest, WriteTxnMarkersResponse),
        _api("TxnOffsetCommit", TxnOffsetCommitRequest, TxnOffsetCommitResponse),
        _api("DescribeAcls", DescribeAclsRequest, DescribeAclsResponse),
        _api("CreateAcls", CreateAclsRequest, CreateAclsResponse),
        _api("DeleteAcls", DeleteAclsRequest, DeleteAclsResponse),
        _api("DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse),
        _api("AlterConfigs", AlterConfigsRequest, AlterConfigsResponse),
        _api("DescribeLogDirs", DescribeLogDirsRequest, DescribeLogDirsResponse),
        _api("SaslAuthenticate", SaslAuthenticateRequest, SaslAuthenticateResponse),
        _api("CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse),
        _api("DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse),
        _api(
            "IncrementalAlterConfigs",
            IncrementalAlterConfigsRequest,
            IncrementalAlterConfigsResponse,
        ),
        _api("ElectLeaders", ElectLeadersRequest, ElectLeadersResponse),
        _api(
            "AlterPartitionReassignments",
            AlterPartitionReassignmentsRequest,
            AlterPartitionReassignmentsResponse,
        ),
        _api(
            "ListPartitionReassignments",
            ListPartitionReassignmentsRequest,
            ListPartitionReassignmentsResponse,
        ),
        _api("OffsetDelete", OffsetDeleteRequest, OffsetDeleteResponse),
        _api("DescribeClientQuotas", DescribeClientQuotasRequest, DescribeClientQuotasResponse),
        _api("AlterClientQuotas", AlterClientQuotasRequest, AlterClientQuotasResponse),
        _api(
            "DescribeUserScramCredentials",
            DescribeUserScramCredentialsRequest,
            DescribeUserScramCredentialsResponse,
        ),
        _api(
            "AlterUserScramCredentials",
            AlterUserScramCredentialsRequest,
            AlterUserScramCredentialsResponse,
        ),
        _api("AlterPartition", AlterPartitionRequest, AlterPartitionResponse),
        _api("DescribeCluster", DescribeClusterRequest, DescribeClusterResponse),
        _api("DescribeProducers", DescribeProducersRequest, DescribeProducersResponse),
        _api("DescribeTransactions", DescribeTransactionsRequest, DescribeTransactionsResponse),
        _api("ListTransactions", ListTransactionsRequest, ListTransactionsResponse),
    )
}


def supported_api_versions() -> list[tuple[int, int, int]]:
    """(api_key, min_version, max_version) for every API, sorted: the ApiVersions answer."""
    return [(key, api.min_version, api.max_version) for key, api in sorted(APIS.items())]


__all__ = [
    "APIS",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "Api",
    "ApiKey",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResponse",
    "DescribeClientQuotasRequest",
    "DescribeClientQuotasResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "DescribeProducersRequest",
    "DescribeProducersResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListPartitionReassignmentsRequest",
    "ListPartitionReassignmentsResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetsForLeaderEpochRequest",
    "OffsetsForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
    "supported_api_versions",
]

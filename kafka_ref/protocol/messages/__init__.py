"""The API registry: every request kafka-ref understands, by API key.

Each Kafka request starts with a 16-bit *API key* that says what it is (0 Produce, 1 Fetch,
3 Metadata, 18 ApiVersions...; api_keys.py) and a 16-bit *API version*. The pair decides
the schema of the rest of the request and of its response. This module maps
`api_key -> Api(name, request, response, min_version, max_version)`; the version range is
exactly what the broker advertises in its ApiVersions response, so declaring a wider range
in a message module is all it takes to offer a new version (PROTO-11).

The ranges follow one rule: every version Apache Kafka 4.4 serves of each API kafka-ref
implements, with its meaning (PROTO-19), so that a client negotiates what it would with
Kafka. The exceptions, each with its reason, are one table in spec/protocol.md that the
tests read: ZooKeeper mode's controller APIs, which Kafka 4 no longer has, and the versions
that name topics by id only (Produce v13, TxnOffsetCommit v6):

    ApiVersions 0-5   Metadata 0-13   DescribeTopicPartitions 0
    Produce 0-12 (0-2 answered UNSUPPORTED_VERSION)   Fetch 4-18   ListOffsets 1-11
    OffsetForLeaderEpoch 2-4   CreateTopics 2-7   DeleteTopics 1-6
    DeleteRecords 0-2   InitProducerId 0-5
    transactions: AddPartitionsToTxn 0-5   AddOffsetsToTxn 0-4   EndTxn 0-5
    TxnOffsetCommit 0-5   WriteTxnMarkers 1-2 (brokers)   DescribeProducers 0
    DescribeTransactions 0   ListTransactions 0-2
    from the controller (ZooKeeper mode): LeaderAndIsr 4   StopReplica 3   UpdateMetadata 6;
    to it: AlterPartition 0
    DescribeConfigs 1-4   CreatePartitions 0-3   DescribeLogDirs 1-5
    security: SaslHandshake 0-1   SaslAuthenticate 0-2
    SCRAM users: DescribeUserScramCredentials 0   AlterUserScramCredentials 0 (KIP-554)
    ACLs: DescribeAcls 1-3   CreateAcls 1-3   DeleteAcls 1-3   DescribeCluster 0-2
    client quotas: DescribeClientQuotas 0-1   AlterClientQuotas 0-1
    replicas (to the controller): ElectLeaders 0-2   AlterPartitionReassignments 0-1
    ListPartitionReassignments 0
    consumer groups: FindCoordinator 0-6   JoinGroup 0-9   SyncGroup 0-5   Heartbeat 0-4
    LeaveGroup 0-5   OffsetCommit 2-10   OffsetFetch 1-10   DescribeGroups 0-6
    ListGroups 0-5   DeleteGroups 0-3   OffsetDelete 0
    the consumer group protocol (KIP-848): ConsumerGroupHeartbeat 0-1   ConsumerGroupDescribe 0-1
    share groups (KIP-932): ShareFetch 1-2   ShareAcknowledge 1-2
    the share coordinator (KIP-932): InitializeShareGroupState 0   ReadShareGroupState 0
    WriteShareGroupState 0-1   DeleteShareGroupState 0   ReadShareGroupStateSummary 0-1
    share groups (KIP-932): ShareGroupHeartbeat 1   ShareGroupDescribe 1
    DescribeShareGroupOffsets 0-1   AlterShareGroupOffsets 0   DeleteShareGroupOffsets 0

Each API also says on which listeners it is served (`Api.listeners`, Kafka's `"listeners"`).
A broker's ApiVersions lists the APIs of the broker listener only, and a broker reads no
request of another (PROTO-21). KRaft's APIs are the controller listener's, at Kafka 4.4's
full ranges; no broker advertises them:

    the Raft quorum (KIP-595): Vote 0-2   BeginQuorumEpoch 0-1   EndQuorumEpoch 0-1
    DescribeQuorum 0-2   FetchSnapshot 0-1 (KIP-630)
    the brokers and controllers (KIP-631, KIP-919): BrokerRegistration 0-4
    BrokerHeartbeat 0-2   UnregisterBroker 0   ControllerRegistration 0
    AllocateProducerIds 0 (KIP-730)   AssignReplicasToDirs 0 (KIP-858)
    Envelope 0 (KIP-590: a broker forwards a client's request)
    the voter set (KIP-853): AddRaftVoter 0-1   RemoveRaftVoter 0   UpdateRaftVoter 0

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
from kafka_ref.protocol.messages.api_52_vote import VoteRequest, VoteResponse
from kafka_ref.protocol.messages.api_53_begin_quorum_epoch import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
)
from kafka_ref.protocol.messages.api_54_end_quorum_epoch import (
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
)
from kafka_ref.protocol.messages.api_55_describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)
from kafka_ref.protocol.messages.api_56_alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
)
from kafka_ref.protocol.messages.api_58_envelope import (
    DefaultPrincipalData,
    EnvelopeRequest,
    EnvelopeResponse,
)
from kafka_ref.protocol.messages.api_59_fetch_snapshot import (
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from kafka_ref.protocol.messages.api_60_describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from kafka_ref.protocol.messages.api_61_describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from kafka_ref.protocol.messages.api_62_broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from kafka_ref.protocol.messages.api_63_broker_heartbeat import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
)
from kafka_ref.protocol.messages.api_64_unregister_broker import (
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from kafka_ref.protocol.messages.api_65_describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from kafka_ref.protocol.messages.api_66_list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka_ref.protocol.messages.api_67_allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from kafka_ref.protocol.messages.api_68_consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kafka_ref.protocol.messages.api_69_consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from kafka_ref.protocol.messages.api_70_controller_registration import (
    ControllerRegistrationRequest,
    ControllerRegistrationResponse,
)
from kafka_ref.protocol.messages.api_73_assign_replicas_to_dirs import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)
from kafka_ref.protocol.messages.api_75_describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka_ref.protocol.messages.api_76_share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_ref.protocol.messages.api_77_share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from kafka_ref.protocol.messages.api_78_share_fetch import (
    ShareFetchRequest,
    ShareFetchResponse,
)
from kafka_ref.protocol.messages.api_79_share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
)
from kafka_ref.protocol.messages.api_80_add_raft_voter import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
)
from kafka_ref.protocol.messages.api_81_remove_raft_voter import (
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
)
from kafka_ref.protocol.messages.api_82_update_raft_voter import (
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from kafka_ref.protocol.messages.api_83_initialize_share_group_state import (
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
)
from kafka_ref.protocol.messages.api_84_read_share_group_state import (
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
)
from kafka_ref.protocol.messages.api_85_write_share_group_state import (
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from kafka_ref.protocol.messages.api_86_delete_share_group_state import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
)
from kafka_ref.protocol.messages.api_87_read_share_group_state_summary import (
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
)
from kafka_ref.protocol.messages.api_90_describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from kafka_ref.protocol.messages.api_91_alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)
from kafka_ref.protocol.messages.api_92_delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)
from kafka_ref.protocol.schema import Message


class Api(NamedTuple):
    """One API: its name, its two schemas, its versions and the listeners that serve it."""

    name: str
    request: Message
    response: Message
    min_version: int
    max_version: int
    listeners: tuple[str, ...]

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)


def _api(name: str, request: Message, response: Message) -> Api:
    # One source of truth: the range is the one the message modules declare, and a request
    # and its response must agree on it.
    if request.valid_versions != response.valid_versions or request.api_key != response.api_key:
        raise ValueError(f"{name}: request and response disagree on api key or versions")
    versions = request.valid_versions
    return Api(name, request, response, versions.start, versions.stop - 1, request.listeners)


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
        _api(
            "DescribeTopicPartitions",
            DescribeTopicPartitionsRequest,
            DescribeTopicPartitionsResponse,
        ),
        _api(
            "ConsumerGroupHeartbeat",
            ConsumerGroupHeartbeatRequest,
            ConsumerGroupHeartbeatResponse,
        ),
        _api(
            "ConsumerGroupDescribe",
            ConsumerGroupDescribeRequest,
            ConsumerGroupDescribeResponse,
        ),
        # share groups (KIP-932)
        _api("ShareFetch", ShareFetchRequest, ShareFetchResponse),
        _api("ShareAcknowledge", ShareAcknowledgeRequest, ShareAcknowledgeResponse),
        # the share coordinator's state APIs (KIP-932, from share-partition leaders)
        _api(
            "InitializeShareGroupState",
            InitializeShareGroupStateRequest,
            InitializeShareGroupStateResponse,
        ),
        _api("ReadShareGroupState", ReadShareGroupStateRequest, ReadShareGroupStateResponse),
        _api("WriteShareGroupState", WriteShareGroupStateRequest, WriteShareGroupStateResponse),
        _api("DeleteShareGroupState", DeleteShareGroupStateRequest, DeleteShareGroupStateResponse),
        _api(
            "ReadShareGroupStateSummary",
            ReadShareGroupStateSummaryRequest,
            ReadShareGroupStateSummaryResponse,
        ),
        _api("ShareGroupHeartbeat", ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse),
        _api("ShareGroupDescribe", ShareGroupDescribeRequest, ShareGroupDescribeResponse),
        _api(
            "DescribeShareGroupOffsets",
            DescribeShareGroupOffsetsRequest,
            DescribeShareGroupOffsetsResponse,
        ),
        _api(
            "AlterShareGroupOffsets", AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse
        ),
        _api(
            "DeleteShareGroupOffsets",
            DeleteShareGroupOffsetsRequest,
            DeleteShareGroupOffsetsResponse,
        ),
        # KRaft (the controller listener's, PROTO-21)
        _api("Vote", VoteRequest, VoteResponse),
        _api("BeginQuorumEpoch", BeginQuorumEpochRequest, BeginQuorumEpochResponse),
        _api("EndQuorumEpoch", EndQuorumEpochRequest, EndQuorumEpochResponse),
        _api("DescribeQuorum", DescribeQuorumRequest, DescribeQuorumResponse),
        _api("FetchSnapshot", FetchSnapshotRequest, FetchSnapshotResponse),
        _api("BrokerRegistration", BrokerRegistrationRequest, BrokerRegistrationResponse),
        _api("BrokerHeartbeat", BrokerHeartbeatRequest, BrokerHeartbeatResponse),
        _api("UnregisterBroker", UnregisterBrokerRequest, UnregisterBrokerResponse),
        _api("Envelope", EnvelopeRequest, EnvelopeResponse),
        _api("AllocateProducerIds", AllocateProducerIdsRequest, AllocateProducerIdsResponse),
        _api(
            "ControllerRegistration",
            ControllerRegistrationRequest,
            ControllerRegistrationResponse,
        ),
        _api("AssignReplicasToDirs", AssignReplicasToDirsRequest, AssignReplicasToDirsResponse),
        _api("AddRaftVoter", AddRaftVoterRequest, AddRaftVoterResponse),
        _api("RemoveRaftVoter", RemoveRaftVoterRequest, RemoveRaftVoterResponse),
        _api("UpdateRaftVoter", UpdateRaftVoterRequest, UpdateRaftVoterResponse),
    )
}


def apis_for_listener(listener: str) -> dict[int, Api]:
    """The APIs served on a kind of listener (Kafka's `ApiKeys.apisForListener`)."""
    return {key: api for key, api in APIS.items() if listener in api.listeners}


def supported_api_versions(listener: str = "broker") -> list[tuple[int, int, int]]:
    """(api_key, min_version, max_version) of every API a listener serves, sorted: its
    ApiVersions answer."""
    served = apis_for_listener(listener)
    return [(key, api.min_version, api.max_version) for key, api in sorted(served.items())]


__all__ = [
    "APIS",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AddRaftVoterRequest",
    "AddRaftVoterResponse",
    "AllocateProducerIdsRequest",
    "AllocateProducerIdsResponse",
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "Api",
    "ApiKey",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ControllerRegistrationRequest",
    "ControllerRegistrationResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DefaultPrincipalData",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DeleteShareGroupStateRequest",
    "DeleteShareGroupStateResponse",
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
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "DescribeTopicPartitionsRequest",
    "DescribeTopicPartitionsResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "EnvelopeRequest",
    "EnvelopeResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "InitializeShareGroupStateRequest",
    "InitializeShareGroupStateResponse",
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
    "ReadShareGroupStateRequest",
    "ReadShareGroupStateResponse",
    "ReadShareGroupStateSummaryRequest",
    "ReadShareGroupStateSummaryResponse",
    "RemoveRaftVoterRequest",
    "RemoveRaftVoterResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "ShareGroupHeartbeatRequest",
    "ShareGroupHeartbeatResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "UnregisterBrokerRequest",
    "UnregisterBrokerResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "UpdateRaftVoterRequest",
    "UpdateRaftVoterResponse",
    "VoteRequest",
    "VoteResponse",
    "WriteShareGroupStateRequest",
    "WriteShareGroupStateResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
    "apis_for_listener",
    "supported_api_versions",
]

"""The records of the cluster metadata log, `__cluster_metadata` (KIP-500, KIP-631).

In KRaft mode the cluster's metadata is not kept in ZooKeeper's znodes: it is a *log*.
Every change the controller decides (a broker registers, a topic is created, a leader moves,
an ACL is added) is one record appended to the single partition `__cluster_metadata-0`,
replicated by the controllers' Raft quorum, and replayed by every broker and controller to
build the same state (image.py). A record is a small message declared like a request in
Kafka's JSON (`metadata/src/main/resources/common/metadata/TopicRecord.json`): an *API key*
that names its type (Kafka: `MetadataRecordType`), a version range, and fields. Every
metadata record is flexible from version 0 (KIP-482), so new optional fields arrive as
tagged fields without a version bump (the ELR of KIP-966 did bump PartitionRecord to v2, its
fields tagged so that older readers skip them).

Here each record is a `Message` of kafka_ref's schema (kafka_ref/protocol/schema.py), with
Kafka's names and the version ranges of Apache Kafka 4.4. They are declared by concept:

    features      FeatureLevelRecord (12)
    the cluster   RegisterBrokerRecord (0), UnregisterBrokerRecord (1),
                  BrokerRegistrationChangeRecord (17), FenceBrokerRecord (7),
                  UnfenceBrokerRecord (8), RegisterControllerRecord (27),
                  UnregisterControllerRecord (29)
    topics        TopicRecord (2), PartitionRecord (3), PartitionChangeRecord (5),
                  RemoveTopicRecord (9), ClearElrRecord (28)
    configs       ConfigRecord (4)
    producer ids  ProducerIdsRecord (15)
    security      AccessControlEntryRecord (18), RemoveAccessControlEntryRecord (19),
                  UserScramCredentialRecord (11), RemoveUserScramCredentialRecord (22),
                  DelegationTokenRecord (10), RemoveDelegationTokenRecord (26)
    quotas        ClientQuotaRecord (14)
    the log       BeginTransactionRecord (23), EndTransactionRecord (24),
                  AbortTransactionRecord (25), NoOpRecord (20), ZkMigrationStateRecord (21)

Version history (Kafka's JSON comments): RegisterBrokerRecord v1 InControlledShutdown, v2
IsMigratingZkBroker, v3 LogDirs (KIP-858), v4 CordonedLogDirs; BrokerRegistrationChangeRecord
v1 InControlledShutdown, v2 LogDirs, v3 CordonedLogDirs; PartitionRecord and
PartitionChangeRecord v1 Directories (KIP-858), v2 EligibleLeaderReplicas and LastKnownElr
(KIP-966). A writer uses the newest version (`ApiMessageAndVersion` carries the version with
the message, serde.py); the others are read.

A PartitionChangeRecord says only what changed: a null list, leader -2 or recovery state -1
mean "unchanged", and its tagged fields are written only when set, so a change of ISR costs
a few bytes. Rules: META-1 (the declarations), META-2 (the frame, serde.py).
"""

from __future__ import annotations

from kafka_ref.protocol.schema import Field, Message

# -- features (KIP-584): the finalized level of each feature, metadata.version first --------

FeatureLevelRecord = Message(
    "FeatureLevelRecord",
    api_key=12,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Name", "string", "0+", about="The feature name."),
        Field(
            "FeatureLevel",
            "int16",
            "0+",
            about=(
                "The current finalized feature level of this feature for the cluster, a value of 0"
                " means feature not supported."
            ),
        ),
    ],
)

# -- the cluster: brokers and controllers, their registrations and fencing --------------

RegisterBrokerRecord = Message(
    "RegisterBrokerRecord",
    api_key=0,
    valid_versions="0-4",
    flexible_versions="0+",
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker id."),
        Field(
            "IsMigratingZkBroker",
            "bool",
            "2+",
            default=False,
            about="True if the broker is a ZK broker in migration mode. Otherwise, false",
        ),
        Field("IncarnationId", "uuid", "0+", about="The incarnation ID of the broker process"),
        Field("BrokerEpoch", "int64", "0+", about="The broker epoch assigned by the controller."),
        Field(
            "EndPoints",
            "[]BrokerEndpoint",
            "0+",
            about="The endpoints that can be used to communicate with this broker.",
            fields=[
                Field("Name", "string", "0+", about="The name of the endpoint."),
                Field("Host", "string", "0+", about="The hostname."),
                Field("Port", "uint16", "0+", about="The port."),
                Field("SecurityProtocol", "int16", "0+", about="The security protocol."),
            ],
        ),
        Field(
            "Features",
            "[]BrokerFeature",
            "0+",
            about="The features on this broker",
            fields=[
                Field("Name", "string", "0+", about="The feature name."),
                Field(
                    "MinSupportedVersion",
                    "int16",
                    "0+",
                    about="The minimum supported feature level.",
                ),
                Field(
                    "MaxSupportedVersion",
                    "int16",
                    "0+",
                    about="The maximum supported feature level.",
                ),
            ],
        ),
        Field("Rack", "string", "0+", nullable_versions="0+", about="The broker rack."),
        Field("Fenced", "bool", "0+", default=True, about="True if the broker is fenced."),
        Field(
            "InControlledShutdown",
            "bool",
            "1+",
            default=False,
            about="True if the broker is in controlled shutdown.",
        ),
        Field(
            "LogDirs",
            "[]uuid",
            "3+",
            tagged_versions="3+",
            tag=0,
            about="Log directories configured in this broker which are available.",
        ),
        Field(
            "CordonedLogDirs",
            "[]uuid",
            "4+",
            nullable_versions="4+",
            default=None,
            tagged_versions="4+",
            tag=1,
            about=(
                "Log directories that are cordoned. This is initially null before the broker "
                "starts sending the value via its heartbeats."
            ),
        ),
    ],
)

UnregisterBrokerRecord = Message(
    "UnregisterBrokerRecord",
    api_key=1,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker id."),
        Field("BrokerEpoch", "int64", "0+", about="The broker epoch."),
    ],
)

BrokerRegistrationChangeRecord = Message(
    "BrokerRegistrationChangeRecord",
    api_key=17,
    valid_versions="0-3",
    flexible_versions="0+",
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker id."),
        Field("BrokerEpoch", "int64", "0+", about="The broker epoch assigned by the controller."),
        Field(
            "Fenced",
            "int8",
            "0+",
            tagged_versions="0+",
            tag=0,
            about=(
                "-1 if the broker has been unfenced, 0 if no change, 1 if the broker has been "
                "fenced."
            ),
        ),
        Field(
            "InControlledShutdown",
            "int8",
            "1+",
            tagged_versions="1+",
            tag=1,
            about="0 if no change, 1 if the broker is in controlled shutdown.",
        ),
        Field(
            "LogDirs",
            "[]uuid",
            "2+",
            tagged_versions="2+",
            tag=2,
            about="Log directories configured in this broker which are available.",
        ),
        Field(
            "CordonedLogDirs",
            "[]uuid",
            "3+",
            nullable_versions="3+",
            default=None,
            tagged_versions="3+",
            tag=3,
            about="Log directories that are cordoned or null if no change.",
        ),
    ],
)

FenceBrokerRecord = Message(
    "FenceBrokerRecord",
    api_key=7,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Id", "int32", "0+", about="The broker ID to fence. It will be removed from all ISRs."
        ),
        Field("Epoch", "int64", "0+", about="The epoch of the broker to fence."),
    ],
)

UnfenceBrokerRecord = Message(
    "UnfenceBrokerRecord",
    api_key=8,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Id", "int32", "0+", about="The broker ID to unfence."),
        Field("Epoch", "int64", "0+", about="The epoch of the broker to unfence."),
    ],
)

RegisterControllerRecord = Message(
    "RegisterControllerRecord",
    api_key=27,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ControllerId", "int32", "0+", about="The controller id."),
        Field("IncarnationId", "uuid", "0+", about="The incarnation ID of the controller process"),
        Field(
            "ZkMigrationReady",
            "bool",
            "0+",
            about="Set if the required configurations for ZK migration are present.",
        ),
        Field(
            "EndPoints",
            "[]ControllerEndpoint",
            "0+",
            about="The endpoints that can be used to communicate with this controller.",
            fields=[
                Field("Name", "string", "0+", about="The name of the endpoint."),
                Field("Host", "string", "0+", about="The hostname."),
                Field("Port", "uint16", "0+", about="The port."),
                Field("SecurityProtocol", "int16", "0+", about="The security protocol."),
            ],
        ),
        Field(
            "Features",
            "[]ControllerFeature",
            "0+",
            about="The features on this controller",
            fields=[
                Field("Name", "string", "0+", about="The feature name."),
                Field(
                    "MinSupportedVersion",
                    "int16",
                    "0+",
                    about="The minimum supported feature level.",
                ),
                Field(
                    "MaxSupportedVersion",
                    "int16",
                    "0+",
                    about="The maximum supported feature level.",
                ),
            ],
        ),
    ],
)

UnregisterControllerRecord = Message(
    "UnregisterControllerRecord",
    api_key=29,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ControllerId", "int32", "0+", about="The controller id."),
    ],
)

# -- topics and their partitions -------------------------------------------------------

TopicRecord = Message(
    "TopicRecord",
    api_key=2,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Name", "string", "0+", about="The topic name."),
        Field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
    ],
)

PartitionRecord = Message(
    "PartitionRecord",
    api_key=3,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("PartitionId", "int32", "0+", default=-1, about="The partition id."),
        Field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
        Field(
            "Replicas",
            "[]int32",
            "0+",
            about="The replicas of this partition, sorted by preferred order.",
        ),
        Field("Isr", "[]int32", "0+", about="The in-sync replicas of this partition"),
        Field(
            "RemovingReplicas",
            "[]int32",
            "0+",
            about="The replicas that we are in the process of removing.",
        ),
        Field(
            "AddingReplicas",
            "[]int32",
            "0+",
            about="The replicas that we are in the process of adding.",
        ),
        Field(
            "Leader",
            "int32",
            "0+",
            default=-1,
            about="The lead replica, or -1 if there is no leader.",
        ),
        Field(
            "LeaderRecoveryState",
            "int8",
            "0+",
            default=0,
            tagged_versions="0+",
            tag=0,
            about="1 if the partition is recovering from an unclean leader election; 0 otherwise.",
        ),
        Field("LeaderEpoch", "int32", "0+", default=-1, about="The epoch of the partition leader."),
        Field(
            "PartitionEpoch",
            "int32",
            "0+",
            default=-1,
            about="An epoch that gets incremented each time we change anything in the partition.",
        ),
        Field(
            "Directories",
            "[]uuid",
            "1+",
            about=(
                "The log directory hosting each replica, sorted in the same exact order as the "
                "Replicas field."
            ),
        ),
        Field(
            "EligibleLeaderReplicas",
            "[]int32",
            "2+",
            nullable_versions="2+",
            default=None,
            tagged_versions="2+",
            tag=1,
            about="The eligible leader replicas of this partition.",
        ),
        Field(
            "LastKnownElr",
            "[]int32",
            "2+",
            nullable_versions="2+",
            default=None,
            tagged_versions="2+",
            tag=2,
            about="The last known eligible leader replicas of this partition.",
        ),
    ],
)

PartitionChangeRecord = Message(
    "PartitionChangeRecord",
    api_key=5,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("PartitionId", "int32", "0+", default=-1, about="The partition id."),
        Field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
        Field(
            "Isr",
            "[]int32",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=0,
            about="null if the ISR didn't change; the new in-sync replicas otherwise.",
        ),
        Field(
            "Leader",
            "int32",
            "0+",
            default=-2,
            tagged_versions="0+",
            tag=1,
            about=(
                "-1 if there is now no leader; -2 if the leader didn't change; the new leader "
                "otherwise."
            ),
        ),
        Field(
            "Replicas",
            "[]int32",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=2,
            about="null if the replicas didn't change; the new replicas otherwise.",
        ),
        Field(
            "RemovingReplicas",
            "[]int32",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=3,
            about=(
                "null if the removing replicas didn't change; the new removing replicas otherwise."
            ),
        ),
        Field(
            "AddingReplicas",
            "[]int32",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=4,
            about="null if the adding replicas didn't change; the new adding replicas otherwise.",
        ),
        Field(
            "LeaderRecoveryState",
            "int8",
            "0+",
            default=-1,
            tagged_versions="0+",
            tag=5,
            about=(
                "-1 if it didn't change; 0 if the leader was elected from the ISR or recovered "
                "from an unclean election; 1 if the leader that was elected using unclean leader "
                "election and it is still recovering."
            ),
        ),
        Field(
            "Directories",
            "[]uuid",
            "1+",
            nullable_versions="1+",
            default=None,
            tagged_versions="1+",
            tag=8,
            about=(
                "null if the log dirs didn't change; the new log directory for each replica "
                "otherwise."
            ),
        ),
        Field(
            "EligibleLeaderReplicas",
            "[]int32",
            "2+",
            nullable_versions="2+",
            default=None,
            tagged_versions="2+",
            tag=6,
            about="null if the ELR didn't change; the new eligible leader replicas otherwise.",
        ),
        Field(
            "LastKnownElr",
            "[]int32",
            "2+",
            nullable_versions="2+",
            default=None,
            tagged_versions="2+",
            tag=7,
            about=(
                "null if the LastKnownElr didn't change; the last known eligible leader replicas "
                "otherwise."
            ),
        ),
    ],
)

RemoveTopicRecord = Message(
    "RemoveTopicRecord",
    api_key=9,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "TopicId",
            "uuid",
            "0+",
            about="The topic to remove. All associated partitions will be removed as well.",
        ),
    ],
)

ClearElrRecord = Message(
    "ClearElrRecord",
    api_key=28,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "TopicName",
            "string",
            "0+",
            about=(
                "The name of the topic to clear ELRs for, or empty if all ELRs should be cleared."
            ),
        ),
    ],
)

# -- configs, producer ids ---------------------------------------------------------------

ConfigRecord = Message(
    "ConfigRecord",
    api_key=4,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ResourceType",
            "int8",
            "0+",
            about="The type of resource this configuration applies to.",
        ),
        Field(
            "ResourceName",
            "string",
            "0+",
            about="The name of the resource this configuration applies to.",
        ),
        Field("Name", "string", "0+", about="The name of the configuration key."),
        Field(
            "Value",
            "string",
            "0+",
            nullable_versions="0+",
            about="The value of the configuration, or null if the it should be deleted.",
        ),
    ],
)

ProducerIdsRecord = Message(
    "ProducerIdsRecord",
    api_key=15,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("BrokerId", "int32", "0+", about="The ID of the requesting broker"),
        Field("BrokerEpoch", "int64", "0+", default=-1, about="The epoch of the requesting broker"),
        Field(
            "NextProducerId",
            "int64",
            "0+",
            about=(
                "The next producerId that will be assigned (i.e. the first producerId in the next "
                "assigned block)"
            ),
        ),
    ],
)

# -- security: ACLs, SCRAM credentials, delegation tokens --------------------------------

AccessControlEntryRecord = Message(
    "AccessControlEntryRecord",
    api_key=18,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Id", "uuid", "0+", about="The unique ID of this ACL."),
        Field("ResourceType", "int8", "0+", about="The resource type."),
        Field("ResourceName", "string", "0+", about="The resource name."),
        Field("PatternType", "int8", "0+", about="The resource name pattern type."),
        Field("Principal", "string", "0+", about="The principal name."),
        Field("Host", "string", "0+", about="The host name."),
        Field("Operation", "int8", "0+", about="The AclOperation."),
        Field("PermissionType", "int8", "0+", about="The AclPermissionType."),
    ],
)

RemoveAccessControlEntryRecord = Message(
    "RemoveAccessControlEntryRecord",
    api_key=19,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Id", "uuid", "0+", about="The ID of the AccessControlEntry to remove."),
    ],
)

UserScramCredentialRecord = Message(
    "UserScramCredentialRecord",
    api_key=11,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Name", "string", "0+", about="The user name."),
        Field("Mechanism", "int8", "0+", about="The SCRAM mechanism."),
        Field("Salt", "bytes", "0+", about="A random salt generated by the client."),
        Field(
            "StoredKey", "bytes", "0+", about="The key the Server uses to authenticate the Client."
        ),
        Field(
            "ServerKey",
            "bytes",
            "0+",
            about="The key the Client uses to validate the Servers identity.",
        ),
        Field(
            "Iterations",
            "int32",
            "0+",
            about="The number of iterations used in the SCRAM credential.",
        ),
    ],
)

RemoveUserScramCredentialRecord = Message(
    "RemoveUserScramCredentialRecord",
    api_key=22,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Name", "string", "0+", about="The user name."),
        Field("Mechanism", "int8", "0+", about="The SCRAM mechanism."),
    ],
)

DelegationTokenRecord = Message(
    "DelegationTokenRecord",
    api_key=10,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Owner", "string", "0+", about="The delegation token owner."),
        Field("Requester", "string", "0+", about="The delegation token requester."),
        Field("Renewers", "[]string", "0+", about="The principals which can renew this token."),
        Field(
            "IssueTimestamp", "int64", "0+", about="The time at which this timestamp was issued."
        ),
        Field(
            "MaxTimestamp",
            "int64",
            "0+",
            about="The time at which this token cannot be renewed any more.",
        ),
        Field(
            "ExpirationTimestamp",
            "int64",
            "0+",
            about="The next time at which this token must be renewed.",
        ),
        Field("TokenId", "string", "0+", about="The token id."),
    ],
)

RemoveDelegationTokenRecord = Message(
    "RemoveDelegationTokenRecord",
    api_key=26,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("TokenId", "string", "0+", about="The tokenID to remove."),
    ],
)

# -- client quotas -----------------------------------------------------------------------

ClientQuotaRecord = Message(
    "ClientQuotaRecord",
    api_key=14,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Entity",
            "[]EntityData",
            "0+",
            about="The quota entity to alter.",
            fields=[
                Field("EntityType", "string", "0+", about="The entity type."),
                Field(
                    "EntityName",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    about="The name of the entity, or null if the default.",
                ),
            ],
        ),
        Field("Key", "string", "0+", about="The quota configuration key."),
        Field(
            "Value",
            "float64",
            "0+",
            about="The value to set, otherwise ignored if the value is to be removed.",
        ),
        Field(
            "Remove",
            "bool",
            "0+",
            about="Whether the quota configuration value should be removed, otherwise set.",
        ),
    ],
)

# -- the log itself: metadata transactions (KIP-868), no-ops, the finished ZK migration ---

BeginTransactionRecord = Message(
    "BeginTransactionRecord",
    api_key=23,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Name",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=0,
            about="An optional textual description of this transaction.",
        ),
    ],
)

EndTransactionRecord = Message(
    "EndTransactionRecord",
    api_key=24,
    valid_versions="0",
    flexible_versions="0+",
    fields=[],
)

AbortTransactionRecord = Message(
    "AbortTransactionRecord",
    api_key=25,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Reason",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=0,
            about="An optional textual description of why the transaction was aborted.",
        ),
    ],
)

NoOpRecord = Message(
    "NoOpRecord",
    api_key=20,
    valid_versions="0",
    flexible_versions="0+",
    fields=[],
)

ZkMigrationStateRecord = Message(
    "ZkMigrationStateRecord",
    api_key=21,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ZkMigrationState", "int8", "0+", about="One of the possible migration states."),
    ],
)

METADATA_RECORDS: dict[int, Message] = {
    message.api_key: message
    for message in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        RemoveTopicRecord,
        DelegationTokenRecord,
        UserScramCredentialRecord,
        FeatureLevelRecord,
        ClientQuotaRecord,
        ProducerIdsRecord,
        BrokerRegistrationChangeRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        NoOpRecord,
        ZkMigrationStateRecord,
        RemoveUserScramCredentialRecord,
        BeginTransactionRecord,
        EndTransactionRecord,
        AbortTransactionRecord,
        RemoveDelegationTokenRecord,
        RegisterControllerRecord,
        ClearElrRecord,
        UnregisterControllerRecord,
    )
}
"""Every metadata record by API key (Kafka: `MetadataRecordType`); Kafka 4.4 uses no record
with key 6, 13 or 16."""


def latest_version(message: Message) -> int:
    """The version a writer uses: the newest this Kafka declares."""
    return message.valid_versions.stop - 1

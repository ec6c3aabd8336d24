"""ShareFetch (API key 78): a share group's member fetches records it may process (KIP-932).

A member of a share group reads a partition together with the other members; the leader
of the partition decides, record by record, who gets what (kafka_ref/share/). ShareFetch
names the group, the member, its share session epoch (0 opens a session, -1 closes it, each
request steps it: kafka_ref/share/share_session.py), and per partition the records it
acknowledges (piggybacked `AcknowledgementBatches`). The answer carries, per partition, the
record batches read and the `AcquiredRecords`: the offset ranges handed to this member with
their delivery counts, locked for `AcquisitionLockTimeoutMs`. Only those records are the
member's to process; the batches may hold others, which the client skips.

Like Fetch it is a long poll (`MaxWaitMs`, `MinBytes`, `MaxBytes`), bounded in records too
(`MaxRecords`, `BatchSize`). A partition whose leader moved is answered
NOT_LEADER_OR_FOLLOWER with its `CurrentLeader`, and the leaders' `NodeEndpoints` (as Fetch
v16+ does, KIP-951).

Errors: GROUP_AUTHORIZATION_FAILED (30), TOPIC_AUTHORIZATION_FAILED (29),
SHARE_SESSION_NOT_FOUND (122), INVALID_SHARE_SESSION_EPOCH (123),
SHARE_SESSION_LIMIT_REACHED (133), UNKNOWN_TOPIC_OR_PARTITION (3), NOT_LEADER_OR_FOLLOWER
(6), UNKNOWN_TOPIC_ID (100), INVALID_RECORD_STATE (121, acknowledgements only),
INVALID_REQUEST (42).

Version history (Kafka's JSON comments): v0 was KIP-932's early access (Kafka 4.0), removed
in 4.1; v1 is the first stable version; v2 adds `ShareAcquireMode` (KIP-1206: 1 = never more
than MaxRecords) and RENEW acknowledgements (KIP-1222). kafka-ref declares 1-2, as Kafka 4.4.

Kafka's definitions: ShareFetchRequest.json, ShareFetchResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message, StructSchema

ACKNOWLEDGEMENT_BATCH = StructSchema(
    "AcknowledgementBatch",
    [
        Field("FirstOffset", "int64", "0+", about="The first offset acknowledged."),
        Field("LastOffset", "int64", "0+", about="The last offset acknowledged (inclusive)."),
        Field(
            "AcknowledgeTypes",
            "[]int8",
            "0+",
            about="0 Gap, 1 Accept, 2 Release, 3 Reject, 4 Renew: one, or one per offset.",
        ),
    ],
)

LEADER_ID_AND_EPOCH = StructSchema(
    "LeaderIdAndEpoch",
    [
        Field("LeaderId", "int32", "0+", about="The current leader's id, or -1."),
        Field("LeaderEpoch", "int32", "0+", about="The latest known leader epoch."),
    ],
)

NODE_ENDPOINT = StructSchema(
    "NodeEndpoint",
    [
        Field("NodeId", "int32", "0+", about="The node's id."),
        Field("Host", "string", "0+", about="The node's hostname."),
        Field("Port", "int32", "0+", about="The node's port."),
        Field(
            "Rack",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The node's rack, or null.",
        ),
    ],
)

ShareFetchRequest = Message(
    "ShareFetchRequest",
    api_key=78,
    valid_versions="1-2",
    flexible_versions="0+",
    fields=[
        Field(
            "GroupId",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The share group.",
        ),
        Field("MemberId", "string", "0+", nullable_versions="0+", about="The member id."),
        Field(
            "ShareSessionEpoch",
            "int32",
            "0+",
            about="0 opens a share session, -1 closes it, otherwise the session's next epoch.",
        ),
        Field("MaxWaitMs", "int32", "0+", about="The longest the broker may wait, in ms."),
        Field("MinBytes", "int32", "0+", about="The bytes to accumulate before answering."),
        Field("MaxBytes", "int32", "0+", default=0x7FFFFFFF, about="The most bytes (KIP-74)."),
        Field("MaxRecords", "int32", "1+", about="The most records to acquire."),
        Field("BatchSize", "int32", "1+", about="The preferred records per acquired batch."),
        Field(
            "ShareAcquireMode",
            "int8",
            "2+",
            default=0,
            about="0 batch-optimized, 1 record-limit (KIP-1206).",
        ),
        Field(
            "IsRenewAck",
            "bool",
            "2+",
            default=False,
            about="Whether the acknowledgements hold RENEW (KIP-1222).",
        ),
        Field(
            "Topics",
            "[]FetchTopic",
            "0+",
            about="The topics to fetch (added to the share session).",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]FetchPartition",
                    "0+",
                    about="The partitions to fetch.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "PartitionMaxBytes",
                            "int32",
                            "0",
                            about="The most bytes from this partition (v0 only).",
                        ),
                        Field(
                            "AcknowledgementBatches",
                            "[]AcknowledgementBatch",
                            "0+",
                            about="The records acknowledged.",
                            fields=ACKNOWLEDGEMENT_BATCH,
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "ForgottenTopicsData",
            "[]ForgottenTopic",
            "0+",
            about="The partitions to remove from the share session.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field("Partitions", "[]int32", "0+", about="The partitions to forget."),
            ],
        ),
    ],
)

ShareFetchResponse = Message(
    "ShareFetchResponse",
    api_key=78,
    valid_versions="1-2",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The top-level error message, or null.",
        ),
        Field(
            "AcquisitionLockTimeoutMs",
            "int32",
            "1+",
            about="How long the acquired records are locked, in ms.",
        ),
        Field(
            "Responses",
            "[]ShareFetchableTopicResponse",
            "0+",
            about="The topics.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The fetch error, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The fetch error message, or null.",
                        ),
                        Field(
                            "AcknowledgeErrorCode",
                            "int16",
                            "0+",
                            about="The acknowledgement error, or 0.",
                        ),
                        Field(
                            "AcknowledgeErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The acknowledgement error message, or null.",
                        ),
                        Field(
                            "CurrentLeader",
                            "LeaderIdAndEpoch",
                            "0+",
                            about="The partition's current leader.",
                            fields=LEADER_ID_AND_EPOCH,
                        ),
                        Field(
                            "Records",
                            "records",
                            "0+",
                            nullable_versions="0",
                            about="The record data.",
                        ),
                        Field(
                            "AcquiredRecords",
                            "[]AcquiredRecords",
                            "0+",
                            about="The offsets handed to this member.",
                            fields=[
                                Field("FirstOffset", "int64", "0+", about="The first offset."),
                                Field("LastOffset", "int64", "0+", about="The last offset."),
                                Field("DeliveryCount", "int16", "0+", about="The delivery count."),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "0+",
            about="The endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers.",
            fields=NODE_ENDPOINT,
        ),
    ],
)

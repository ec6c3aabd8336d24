"""InitializeShareGroupState (API key 83): start a share-partition's state (KIP-932).

Sent by the share group coordinator to the share coordinator of a `SharePartitionKey`
(FindCoordinator key type 2, `group:topicId:partition`) when a share group first reads a
partition, or when it resets the share-partition (its start offset altered, its state
deleted): a new state epoch and start offset (SPSO, -1 to let the share-partition apply
`share.auto.offset.reset` when it first reads), no batches. Broker-to-broker only; it is
served on the broker listener and a client may send it too (Kafka answers it from any
client when no authorizer is set; with one, CLUSTER_ACTION on the cluster).

Errors: per partition NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), FENCED_STATE_EPOCH (124), INVALID_REQUEST (42),
UNKNOWN_TOPIC_OR_PARTITION (3).

Version history: v0 the first version (KIP-932). kafka-ref declares 0, as Kafka 4.4.

Kafka's definitions: InitializeShareGroupStateRequest.json, ...Response.json.
"""

from kafka_ref.protocol.schema import Field, Message

InitializeShareGroupStateRequest = Message(
    "InitializeShareGroupStateRequest",
    api_key=83,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group identifier."),
        Field(
            "Topics",
            "[]InitializeStateData",
            "0+",
            about="The data for the topics.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic identifier."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The data for the partitions.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field("StateEpoch", "int32", "0+", about="The state epoch."),
                        Field("StartOffset", "int64", "0+", about="The SPSO, or -1."),
                    ],
                ),
            ],
        ),
    ],
)

InitializeShareGroupStateResponse = Message(
    "InitializeShareGroupStateResponse",
    api_key=83,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Results",
            "[]InitializeStateResult",
            "0+",
            about="The initialization results.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic identifier."),
                Field(
                    "Partitions",
                    "[]PartitionResult",
                    "0+",
                    about="The results for the partitions.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The error message, or null.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

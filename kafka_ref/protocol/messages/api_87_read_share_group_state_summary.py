"""ReadShareGroupStateSummary (API key 87): a share-partition's start offset (KIP-932).

The share group coordinator asks it to describe a share group's offsets (the admin's
`listShareGroupOffsets`, `kafka-share-groups --describe --offsets`): the state epoch, the
leader epoch and the share-partition start offset, without the state batches. It reads the
committed state and writes nothing; a share-partition never initialized answers -1.

Errors: per partition NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69), UNKNOWN_TOPIC_OR_PARTITION (3),
FENCED_LEADER_EPOCH (74), INVALID_REQUEST (42).

Version history: v0 the first version (KIP-932); v1 `DeliveryCompleteCount` in the answer
(KIP-1226). kafka-ref declares 0-1, as Kafka 4.4.

Kafka's definitions: ReadShareGroupStateSummaryRequest.json, ...Response.json.
"""

from kafka_ref.protocol.schema import Field, Message

ReadShareGroupStateSummaryRequest = Message(
    "ReadShareGroupStateSummaryRequest",
    api_key=87,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group identifier."),
        Field(
            "Topics",
            "[]ReadStateSummaryData",
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
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                    ],
                ),
            ],
        ),
    ],
)

ReadShareGroupStateSummaryResponse = Message(
    "ReadShareGroupStateSummaryResponse",
    api_key=87,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field(
            "Results",
            "[]ReadStateSummaryResult",
            "0+",
            about="The read results.",
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
                        Field("StateEpoch", "int32", "0+", about="The state epoch."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field("StartOffset", "int64", "0+", about="The SPSO."),
                        Field(
                            "DeliveryCompleteCount",
                            "int32",
                            "1+",
                            default=-1,
                            about="Offsets at or above the SPSO whose delivery is complete.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

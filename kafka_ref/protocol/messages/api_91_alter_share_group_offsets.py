"""AlterShareGroupOffsets (API key 91): move an empty share group in its partitions (KIP-932).

The share group's OffsetCommit from outside: `kafka-share-groups.sh --reset-offsets
--execute` (the Java admin's `alterShareGroupOffsets`) sets new share-partition start
offsets. The group coordinator starts each share-partition again at its new offset, under a
new state epoch, through InitializeShareGroupState: the records it had acquired or
acknowledged are forgotten. Only an empty group may be altered.

Errors: top level GROUP_AUTHORIZATION_FAILED (30), NOT_COORDINATOR (16),
COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69)
for a group of another type, NON_EMPTY_GROUP (68); per partition TOPIC_AUTHORIZATION_FAILED
(29), UNKNOWN_TOPIC_OR_PARTITION (3).

Version history: v0 the first version (KIP-932), as Kafka 4.4.

Kafka's definitions: AlterShareGroupOffsetsRequest.json, AlterShareGroupOffsetsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AlterShareGroupOffsetsRequest = Message(
    "AlterShareGroupOffsetsRequest",
    api_key=91,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group id."),
        Field(
            "Topics",
            "[]AlterShareGroupOffsetsRequestTopic",
            "0+",
            about="The topics to alter offsets for.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]AlterShareGroupOffsetsRequestPartition",
                    "0+",
                    about="Each partition to alter offsets for.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition."),
                        Field("StartOffset", "int64", "0+", about="The new start offset."),
                    ],
                ),
            ],
        ),
    ],
)

AlterShareGroupOffsetsResponse = Message(
    "AlterShareGroupOffsetsResponse",
    api_key=91,
    valid_versions="0",
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
            "Responses",
            "[]AlterShareGroupOffsetsResponseTopic",
            "0+",
            about="The results for each topic.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]AlterShareGroupOffsetsResponsePartition",
                    "0+",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition."),
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

"""DescribeShareGroupOffsets (API key 90): where a share group is in its partitions (KIP-932).

A consumer group's position is its committed offsets (OffsetFetch). A share group commits
none: its position in a partition is the share-partition start offset (SPSO), below which
every record is done, kept by the share coordinator. The group coordinator reads it for the
admin (`kafka-share-groups.sh --describe --offsets`, the Java admin's
`listShareGroupOffsets`) through ReadShareGroupStateSummary. Topics null: every partition
the group has a state for. A partition without one answers start offset -1.

Errors: per group GROUP_AUTHORIZATION_FAILED (30), NOT_COORDINATOR (16),
COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69);
per partition TOPIC_AUTHORIZATION_FAILED (29), UNKNOWN_TOPIC_OR_PARTITION (3).

Version history (Kafka's JSON comments): v0 the first version (KIP-932); v1 adds each
partition's `Lag` (KIP-1226). kafka-ref declares 0-1, as Kafka 4.4.

Kafka's definitions: DescribeShareGroupOffsetsRequest.json, DescribeShareGroupOffsetsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeShareGroupOffsetsRequest = Message(
    "DescribeShareGroupOffsetsRequest",
    api_key=90,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field(
            "Groups",
            "[]DescribeShareGroupOffsetsRequestGroup",
            "0+",
            about="The groups to describe offsets for.",
            fields=[
                Field("GroupId", "string", "0+", about="The group id."),
                Field(
                    "Topics",
                    "[]DescribeShareGroupOffsetsRequestTopic",
                    "0+",
                    nullable_versions="0+",
                    about="The topics, or null for every partition the group has a state for.",
                    fields=[
                        Field("TopicName", "string", "0+", about="The topic name."),
                        Field("Partitions", "[]int32", "0+", about="The partitions."),
                    ],
                ),
            ],
        )
    ],
)

DescribeShareGroupOffsetsResponse = Message(
    "DescribeShareGroupOffsetsResponse",
    api_key=90,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Groups",
            "[]DescribeShareGroupOffsetsResponseGroup",
            "0+",
            about="The results for each group.",
            fields=[
                Field("GroupId", "string", "0+", about="The group id."),
                Field(
                    "Topics",
                    "[]DescribeShareGroupOffsetsResponseTopic",
                    "0+",
                    about="The results for each topic.",
                    fields=[
                        Field("TopicName", "string", "0+", about="The topic name."),
                        Field("TopicId", "uuid", "0+", about="The topic id."),
                        Field(
                            "Partitions",
                            "[]DescribeShareGroupOffsetsResponsePartition",
                            "0+",
                            fields=[
                                Field("PartitionIndex", "int32", "0+", about="The partition."),
                                Field(
                                    "StartOffset", "int64", "0+", about="The share-partition SPSO."
                                ),
                                Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                                Field(
                                    "Lag",
                                    "int64",
                                    "1+",
                                    default=-1,
                                    about="The share-partition lag, or -1 (v1+).",
                                ),
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
                Field("ErrorCode", "int16", "0+", about="The group's error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The group's error message, or null.",
                ),
            ],
        ),
    ],
)

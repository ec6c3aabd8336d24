"""OffsetFetch (API key 9): a consumer group reads back its committed offsets.

When a consumer is assigned a partition it asks the group coordinator where the group left
off: the last offset committed with OffsetCommit, and its metadata. A partition the group
never committed answers offset -1 with empty metadata and no error; the consumer then
applies its `auto.offset.reset` policy (earliest or latest, through ListOffsets). Admin
tools (`kafka-consumer-groups.sh --describe`) use the same API, from v2 with a null topic
list meaning "every partition the group has committed".

Errors: NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS
(14), GROUP_AUTHORIZATION_FAILED (30); v1 can only report them per partition, v2+ also has
a top-level error code. UNSTABLE_OFFSET_COMMIT (88, v7+) with `require_stable` while a
transactional commit is pending.

Version history (Kafka's JSON comments): v0 read offsets from ZooKeeper; v1 from
`__consumer_offsets`; v2 a top-level error code and null topics = all; v3 throttle time;
v4 = v3; v5 the committed leader epoch; v6 flexible; v7 `require_stable`; v8 several groups
per request; v9 the KIP-848 member id and epoch; v10 topic ids. Version 0 was removed in
Kafka 4.0. kafka-ref declares 1-10, as Kafka 4.4: v7's `require_stable` is what read_committed
consumers send (KIP-447, TXN-84); v8 answers each group alone (OFFSET-14); v9's member id
and epoch are not checked for a classic group, as in Kafka; v10 names topics by id
(OFFSET-13).

Kafka's definitions: OffsetFetchRequest.json, OffsetFetchResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

OffsetFetchRequest = Message(
    "OffsetFetchRequest",
    api_key=9,
    valid_versions="1-10",
    flexible_versions="6+",
    fields=[
        Field("GroupId", "string", "0-7", about="The group to fetch offsets for."),
        Field(
            "Topics",
            "[]OffsetFetchRequestTopic",
            "0-7",
            nullable_versions="2-7",
            about="The topics to fetch offsets for, or null (v2+) for all committed ones.",
            fields=[
                Field("Name", "string", "0-7", about="The topic name."),
                Field("PartitionIndexes", "[]int32", "0-7", about="The partition indexes."),
            ],
        ),
        Field(
            "Groups",
            "[]OffsetFetchRequestGroup",
            "8+",
            about="Each group to fetch offsets for (v8+).",
            fields=[
                Field("GroupId", "string", "8+", about="The group id."),
                Field(
                    "MemberId",
                    "string",
                    "9+",
                    nullable_versions="9+",
                    default=None,
                    about="The member id (KIP-848 consumer protocol), or null.",
                ),
                Field(
                    "MemberEpoch",
                    "int32",
                    "9+",
                    default=-1,
                    about="The member epoch (KIP-848 consumer protocol), or -1.",
                ),
                Field(
                    "Topics",
                    "[]OffsetFetchRequestTopics",
                    "8+",
                    nullable_versions="8+",
                    about="The topics to fetch offsets for, or null for all.",
                    fields=[
                        Field("Name", "string", "8-9", about="The topic name."),
                        Field("TopicId", "uuid", "10+", about="The topic id."),
                        Field("PartitionIndexes", "[]int32", "8+", about="The partition indexes."),
                    ],
                ),
            ],
        ),
        Field(
            "RequireStable",
            "bool",
            "7+",
            default=False,
            about="Whether to answer UNSTABLE_OFFSET_COMMIT while a transactional commit is open.",
        ),
    ],
)

OffsetFetchResponse = Message(
    "OffsetFetchResponse",
    api_key=9,
    valid_versions="1-10",
    flexible_versions="6+",
    fields=[
        Field("ThrottleTimeMs", "int32", "3+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]OffsetFetchResponseTopic",
            "0-7",
            about="The responses per topic.",
            fields=[
                Field("Name", "string", "0-7", about="The topic name."),
                Field(
                    "Partitions",
                    "[]OffsetFetchResponsePartition",
                    "0-7",
                    about="The responses per partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0-7", about="The partition index."),
                        Field(
                            "CommittedOffset",
                            "int64",
                            "0-7",
                            about="The committed offset, or -1 if none.",
                        ),
                        Field(
                            "CommittedLeaderEpoch",
                            "int32",
                            "5-7",
                            default=-1,
                            about="The committed leader epoch, or -1.",
                        ),
                        Field(
                            "Metadata",
                            "string",
                            "0-7",
                            nullable_versions="0-7",
                            about="The committed metadata.",
                        ),
                        Field("ErrorCode", "int16", "0-7", about="The error code, or 0."),
                    ],
                ),
            ],
        ),
        Field(
            "ErrorCode",
            "int16",
            "2-7",
            default=0,
            about="The top-level error code, or 0 (v2+).",
        ),
        Field(
            "Groups",
            "[]OffsetFetchResponseGroup",
            "8+",
            about="The responses per group (v8+).",
            fields=[
                Field("GroupId", "string", "8+", about="The group id."),
                Field(
                    "Topics",
                    "[]OffsetFetchResponseTopics",
                    "8+",
                    about="The responses per topic.",
                    fields=[
                        Field("Name", "string", "8-9", about="The topic name."),
                        Field("TopicId", "uuid", "10+", about="The topic id."),
                        Field(
                            "Partitions",
                            "[]OffsetFetchResponsePartitions",
                            "8+",
                            about="The responses per partition.",
                            fields=[
                                Field(
                                    "PartitionIndex", "int32", "8+", about="The partition index."
                                ),
                                Field(
                                    "CommittedOffset",
                                    "int64",
                                    "8+",
                                    about="The committed offset, or -1 if none.",
                                ),
                                Field(
                                    "CommittedLeaderEpoch",
                                    "int32",
                                    "8+",
                                    default=-1,
                                    about="The committed leader epoch, or -1.",
                                ),
                                Field(
                                    "Metadata",
                                    "string",
                                    "8+",
                                    nullable_versions="8+",
                                    about="The committed metadata.",
                                ),
                                Field("ErrorCode", "int16", "8+", about="The error code, or 0."),
                            ],
                        ),
                    ],
                ),
                Field("ErrorCode", "int16", "8+", default=0, about="The group's error code."),
            ],
        ),
    ],
)

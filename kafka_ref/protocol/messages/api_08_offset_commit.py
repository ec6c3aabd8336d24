"""OffsetCommit (API key 8): a consumer group stores how far it has read.

A consumer's *position* in a partition lives only in its memory. To survive a restart, or to
hand a partition to another member after a rebalance, the group *commits* offsets to its
group coordinator: "group G has processed topic T partition P up to offset O" (the offset of
the next record to read), with an optional metadata string. The coordinator writes the
commit as a record of the compacted topic `__consumer_offsets` (key: group, topic,
partition) and answers when it is durable; OffsetFetch reads it back.

A member of a group sends its `member_id` and `generation_id`, and the coordinator refuses a
commit from a member that is no longer in the group (UNKNOWN_MEMBER_ID) or from an older
generation (ILLEGAL_GENERATION), or while a rebalance is running (REBALANCE_IN_PROGRESS): its
partitions may already belong to somebody else. A commit with generation -1 and an empty
member id comes from outside any group (admin tools, consumers with manual assignment) and
is allowed only while the group has no members.

Errors, per partition: NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25),
REBALANCE_IN_PROGRESS (27), INVALID_GROUP_ID (24), OFFSET_METADATA_TOO_LARGE (12, the
metadata is longer than `offset.metadata.max.bytes`), INVALID_COMMIT_OFFSET_SIZE (28),
FENCED_INSTANCE_ID (82, v7+).

Version history (Kafka's JSON comments): v1 generation, member id and a per-partition commit
timestamp; v2 `retention_time_ms` instead of the timestamp; v3 throttle time in the
response; v4 = v3; v5 drops the retention time, now only the broker's
`offsets.retention.minutes` (KIP-211); v6 the committed leader epoch; v7
`group_instance_id` (KIP-345); v8 flexible; v9 the KIP-848 consumer protocol; v10 topic
ids instead of names. Versions 0-1 were removed in Kafka 4.0. kafka-ref declares 2-10, as
Kafka 4.4: v6's leader epoch is kept and returned by OffsetFetch v5+ (OFFSET-10), v7's
instance id is checked (OFFSET-12), v9 answers GROUP_ID_NOT_FOUND where older versions
answer ILLEGAL_GENERATION (OFFSET-11), v10's topic ids are resolved to names (OFFSET-13).

Kafka's definitions: OffsetCommitRequest.json, OffsetCommitResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

OffsetCommitRequest = Message(
    "OffsetCommitRequest",
    api_key=8,
    valid_versions="2-10",
    flexible_versions="8+",
    fields=[
        Field("GroupId", "string", "0+", about="The unique group identifier."),
        Field(
            "GenerationIdOrMemberEpoch",
            "int32",
            "1+",
            default=-1,
            about="The generation of the group (classic protocol), or -1 from outside the group.",
        ),
        Field("MemberId", "string", "1+", about="The member id assigned by the coordinator."),
        Field(
            "GroupInstanceId",
            "string",
            "7+",
            nullable_versions="7+",
            default=None,
            about="The static member's group.instance.id, or null.",
        ),
        Field(
            "RetentionTimeMs",
            "int64",
            "2-4",
            default=-1,
            about="How long to keep the offsets in ms, or -1 for the broker's default.",
        ),
        Field(
            "Topics",
            "[]OffsetCommitRequestTopic",
            "0+",
            about="The topics to commit offsets for.",
            fields=[
                Field("Name", "string", "0-9", about="The topic name."),
                Field("TopicId", "uuid", "10+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]OffsetCommitRequestPartition",
                    "0+",
                    about="Each partition to commit offsets for.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "CommittedOffset",
                            "int64",
                            "0+",
                            about="The offset to commit: the next record the group will read.",
                        ),
                        Field(
                            "CommittedLeaderEpoch",
                            "int32",
                            "6+",
                            default=-1,
                            about="The leader epoch of the last consumed record, or -1.",
                        ),
                        Field(
                            "CommitTimestamp",
                            "int64",
                            "1",
                            default=-1,
                            about="The commit timestamp (v1 only), or -1 for the broker's time.",
                        ),
                        Field(
                            "CommittedMetadata",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="Any metadata the client wants to keep with the offset.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

OffsetCommitResponse = Message(
    "OffsetCommitResponse",
    api_key=8,
    valid_versions="2-10",
    flexible_versions="8+",
    fields=[
        Field("ThrottleTimeMs", "int32", "3+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]OffsetCommitResponseTopic",
            "0+",
            about="The responses for each topic.",
            fields=[
                Field("Name", "string", "0-9", about="The topic name."),
                Field("TopicId", "uuid", "10+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]OffsetCommitResponsePartition",
                    "0+",
                    about="The responses for each partition of the topic.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                    ],
                ),
            ],
        ),
    ],
)

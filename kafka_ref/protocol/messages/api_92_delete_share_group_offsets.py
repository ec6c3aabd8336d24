"""DeleteShareGroupOffsets (API key 92): forget where an empty share group is in some topics
(KIP-932).

The share group's OffsetDelete: `kafka-share-groups.sh --delete-offsets` (the Java admin's
`deleteShareGroupOffsets`) deletes the share-partitions' state of whole topics through
DeleteShareGroupState; a member that subscribes to them again starts from
`share.auto.offset.reset`. Only an empty group's offsets may be deleted.

Errors: top level GROUP_AUTHORIZATION_FAILED (30), NOT_COORDINATOR (16),
COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69),
NON_EMPTY_GROUP (68); per topic TOPIC_AUTHORIZATION_FAILED (29),
UNKNOWN_TOPIC_OR_PARTITION (3).

Version history: v0 the first version (KIP-932), as Kafka 4.4.

Kafka's definitions: DeleteShareGroupOffsetsRequest.json, DeleteShareGroupOffsetsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteShareGroupOffsetsRequest = Message(
    "DeleteShareGroupOffsetsRequest",
    api_key=92,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group id."),
        Field(
            "Topics",
            "[]DeleteShareGroupOffsetsRequestTopic",
            "0+",
            about="The topics to delete offsets for.",
            fields=[Field("TopicName", "string", "0+", about="The topic name.")],
        ),
    ],
)

DeleteShareGroupOffsetsResponse = Message(
    "DeleteShareGroupOffsetsResponse",
    api_key=92,
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
            "[]DeleteShareGroupOffsetsResponseTopic",
            "0+",
            about="The results for each topic.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field("ErrorCode", "int16", "0+", about="The topic's error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The topic's error message, or null.",
                ),
            ],
        ),
    ],
)

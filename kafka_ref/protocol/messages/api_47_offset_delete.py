"""OffsetDelete (API key 47): remove a group's committed offsets for some partitions (KIP-496).

A group that stops reading a topic keeps its committed offsets for it: while the group has
members they never expire (OFFSET-6 counts from when the group became Empty, KIP-211). So an
operator who wants them gone, because the group will never read that topic again or should
start it over from `auto.offset.reset`, deletes them (`kafka-consumer-groups.sh
--delete-offsets --group G --topic T`). The coordinator writes a tombstone to
`__consumer_offsets` for each partition the group has an offset for, and forgets it.

Offsets of a topic a member of the group is subscribed to cannot be deleted: the member would
commit them again, or worse, lose its position while it reads. Those partitions answer
GROUP_SUBSCRIBED_TO_TOPIC (86). A group with members whose protocol is not the consumer
protocol (the coordinator cannot tell what they read) cannot delete any: NON_EMPTY_GROUP
(68), at the top level.

Errors: top level GROUP_ID_NOT_FOUND (69), NON_EMPTY_GROUP (68), INVALID_GROUP_ID (24),
NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14),
GROUP_AUTHORIZATION_FAILED (30); per partition GROUP_SUBSCRIBED_TO_TOPIC (86),
UNKNOWN_TOPIC_OR_PARTITION (3), TOPIC_AUTHORIZATION_FAILED (29).

Version history (Kafka's JSON comments): v0 only, not flexible. kafka-ref declares 0.

Kafka's definitions: OffsetDeleteRequest.json, OffsetDeleteResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

OffsetDeleteRequest = Message(
    "OffsetDeleteRequest",
    api_key=47,
    valid_versions="0",
    flexible_versions="none",
    fields=[
        Field("GroupId", "string", "0+", about="The unique group identifier."),
        Field(
            "Topics",
            "[]OffsetDeleteRequestTopic",
            "0+",
            about="The topics to delete offsets for.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]OffsetDeleteRequestPartition",
                    "0+",
                    about="Each partition to delete offsets for.",
                    fields=[Field("PartitionIndex", "int32", "0+", about="The partition index.")],
                ),
            ],
        ),
    ],
)

OffsetDeleteResponse = Message(
    "OffsetDeleteResponse",
    api_key=47,
    valid_versions="0",
    flexible_versions="none",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]OffsetDeleteResponseTopic",
            "0+",
            about="The responses for each topic.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]OffsetDeleteResponsePartition",
                    "0+",
                    about="The responses for each partition in the topic.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                    ],
                ),
            ],
        ),
    ],
)

"""DeleteShareGroupState (API key 86): forget a share-partition's state (KIP-932).

Sent by the share group coordinator when a share group is deleted, or its offsets for a
topic are (`kafka-share-groups --delete`, `--delete-offsets`): the share coordinator writes
a tombstone for the share-partition, and a later read finds it uninitialized. Deleting a
share-partition that has no state is not an error.

Errors: per partition NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69), UNKNOWN_TOPIC_OR_PARTITION (3),
FENCED_STATE_EPOCH (124), INVALID_REQUEST (42).

Version history: v0 the first version (KIP-932). kafka-ref declares 0, as Kafka 4.4.

Kafka's definitions: DeleteShareGroupStateRequest.json, DeleteShareGroupStateResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteShareGroupStateRequest = Message(
    "DeleteShareGroupStateRequest",
    api_key=86,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group identifier."),
        Field(
            "Topics",
            "[]DeleteStateData",
            "0+",
            about="The data for the topics.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic identifier."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The data for the partitions.",
                    fields=[Field("Partition", "int32", "0+", about="The partition index.")],
                ),
            ],
        ),
    ],
)

DeleteShareGroupStateResponse = Message(
    "DeleteShareGroupStateResponse",
    api_key=86,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Results",
            "[]DeleteStateResult",
            "0+",
            about="The delete results.",
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
